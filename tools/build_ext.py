"""Compile C extension modules for the guest (wasm32-wasi) and for this Python.

build.sh runs this in ``setup`` for wasinn's own modules (``guest/wasinn/ext``)
and in ``build`` for an app folder's (``APP/ext``), before componentize-py runs.

    build_ext.py FOLDER [FOLDER ...] [--targets guest,native] [--cache DIR]

Every ``FOLDER/ext/NAME.c`` is one extension module, ``NAME``, compiled with
the headers of ``FOLDER/ext`` on the include path, twice from the same C.
A module may link C libraries of ``tools/c_libraries.toml`` (Debian source
packages at pinned versions, built by ``c_libraries.py``) by naming them in
its source: ``/* build_ext: link libspng */``. Their headers are then on the
include path and their objects are linked into the module, each module with
its own hidden copy. A module linking a C++ library (``cxx`` in the catalogue,
e.g. open-jtalk's MeCab) also links the target's C++ runtime: natively the
system's libstdc++; in the guest the catalogue's ``libcxx`` (LLVM 19's libc++
and libc++abi, hidden in the module) and ``tools/wasm32-wasi/cxx_runtime.c``.

- ``FOLDER/NAME.cpython-314-wasm32-wasi.so`` for the guest: wasm32-wasi,
  CPython's stable ABI (``Py_LIMITED_API`` 3.11, Debian's 3.11 headers with
  ``tools/wasm32-wasi/pyconfig.h``), linked as componentize-py's recipe for
  dynamic libraries wants. componentize-py links every wasm file with that
  suffix in its ``-p`` folders into the component.
- ``FOLDER/NAME.abi3.so`` for the CPython that runs this tool (``.venv``'s),
  so that native unit tests run the code the component runs.

Why beside the sources' folder rather than under ``build/``: the module must
be importable by the same name in both worlds. wasinn's is ``wasinn._kernels``
and can only live in the package's folder (which also ships it); an app's is
a top-level module that ``app.py`` imports, and the app folder is already on
the guest's path (``-p APP``) and on the native tests'. The two names never
collide: native CPython does not look for ``.cpython-314-wasm32-wasi.so``
files, and componentize-py skips ``.so`` files that are not wasm. Both names
are in ``.gitignore``.

One toolchain, Debian bookworm's clang 19, compiles for both targets (the host
compiler may be missing on a CI machine; this one is installed by setup):
``clang-19``, ``lld-19`` (``wasm-ld``, ``ld.lld``), ``wasi-libc`` (the
guest's C headers; libc itself comes from componentize-py at link time) and
``python3.11-dev``. When some are missing, this tool prints their names on
stdout and exits with status 3 (``./build.sh setup`` then installs them).

Freshness: each output has a manifest (in ``DIR/stamps``) of the SHA-256 of its
C source and of every header the compiler read (from its ``-MD`` dependency
list), the compiler's and linker's ``--version``, every flag (including
``WASINN_EXT_CFLAGS``), this tool's own hash, the guest's ABI or the native
Python's version, and the output's hash. Any difference rebuilds; nothing else
does. Modules whose C file was deleted, or failed to compile, lose their
outputs: nothing stale runs.

The guest's ABI is read from the guest itself: a probe component, built once
per componentize-py version (about 10 s, cached in ``DIR/guest-abi.json``),
records its ``sysconfig``. A guest other than the one this build was checked
for (``GUEST_SOABI``) stops the build with a message saying what to check.

Exit status 0: every output is fresh; 1: a compile failed (clang's message is
above) or the guest is not what this tool knows (the message says what to
do); 2: bad arguments; 3: toolchain packages are missing (named on stdout).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import build_stamp
import c_libraries
import sjlj_splice
import wasm_binary

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parent
DEFAULT_CACHE = ROOT / "build" / "ext"

#: The guest ABI the flags, headers and pyconfig.h below were checked for:
#: componentize-py 0.25.1's CPython 3.14.
GUEST_SOABI = "cpython-314-wasm32-wasi"
#: The stable ABI level both targets are compiled for (the newest that
#: Debian bookworm's CPython headers, 3.11, describe).
LIMITED_API = (3, 11)

CLANG = Path("/usr/bin/clang-19")
LLVM_BIN = Path("/usr/lib/llvm-19/bin")
#: Debian's wasi-libc installs under /usr/include/wasm32-wasi and /usr/lib/wasm32-wasi.
WASI_SYSROOT = Path("/usr")
GUEST_PY_HEADERS = Path("/usr/include/python3.11")
PYCONFIG = TOOLS / "wasm32-wasi" / "pyconfig.h"

#: Debian bookworm packages of the toolchain, each with a file that only it installs.
PACKAGES = {
    "clang-19": CLANG,
    "lld-19": LLVM_BIN / "wasm-ld",
    "wasi-libc": WASI_SYSROOT / "include" / "wasm32-wasi" / "stdlib.h",
    "python3.11-dev": GUEST_PY_HEADERS / "Python.h",
}
#: What a guest build of a module linking a C++ library needs as well: libc++'s
#: headers for wasm32 and llvm-ar (the C++ runtime is linked as an archive).
CXX_PACKAGES = {
    "libc++-19-dev-wasm32": Path("/usr/lib/llvm-19/include/wasm32-wasi/c++/v1/string"),
    "llvm-19": LLVM_BIN / "llvm-ar",
}
#: Linked, hidden, into a guest module with C++: the hook Debian's wasi-libc's
#: thread_local errno needs in C++ (the one tools/guest_packages.py links too).
CXX_GUEST_RUNTIME = TOOLS / "wasm32-wasi" / "cxx_runtime.c"
#: What a native module with C++ links: the C++ library of the system's compilers.
CXX_NATIVE_LINK = ("-lstdc++",)
#: What a guest build of a ``/* build_ext: sjlj */`` module needs as well: Debian
#: packages by the command each provides (found on PATH: any Node.js will do).
SJLJ_PACKAGES = {"nodejs": "node", "npm": "npm"}

# setjmp/longjmp for the guest (``/* build_ext: sjlj */``): clang lowers them to
# WebAssembly exception handling; our <setjmp.h> and runtime stand in for the
# wasi-libc's missing ones; binaryen's wasm-opt (pinned in tools/node, installed
# with npm into build/node) turns LLVM 19's legacy EH into the standard exnref
# form wasmtime 49 runs; sjlj_splice.py hides it from componentize-py's pre-init.
SJLJ_DIR = TOOLS / "wasm32-wasi" / "sjlj"
SJLJ_HEADER = SJLJ_DIR / "setjmp.h"
SJLJ_RUNTIME = (SJLJ_DIR / "wasm_sjlj_rt.c", SJLJ_DIR / "wasm_sjlj_tag.S")
#: The module's own file: setjmp/longjmp calls lowered, our <setjmp.h> first.
SJLJ_CFLAGS = ("-mllvm", "-wasm-enable-sjlj", f"-I{SJLJ_DIR}")
#: The runtime: it throws the tag. -fPIC (in CFLAGS) or clang 19 crashes
#: ("undefined tag symbol cannot be weak").
SJLJ_RUNTIME_FLAGS = ("-mexception-handling",)
#: Exactly the features clang's output uses, not ``-all``: that also turns on
#: binaryen's compact import encoding, which wasmtime 49 refuses.
WASM_OPT_FLAGS = (
    "--enable-exception-handling", "--enable-reference-types", "--enable-multivalue",
    "--enable-mutable-globals", "--enable-sign-ext", "--enable-nontrapping-float-to-int",
    "--enable-bulk-memory", "--translate-to-exnref", "-g",
)  # fmt: skip
NODE_PACKAGE = TOOLS / "node"
NODE_PREFIX = ROOT / "build" / "node"
REAL_SUFFIX = sjlj_splice.REAL_SUFFIX

# -ffp-contract=off: no fused multiply-adds on either target, so floating-point
# results are the same natively and in the guest.
CFLAGS = ("-std=c11", "-O2", "-fPIC", "-ffp-contract=off", "-Wall", "-Wextra", "-DNDEBUG")
#: What makes clang compile for the guest (all the C libraries a module links need).
# -msimd128: WebAssembly's 128-bit SIMD (on by default in wasmtime), for
# clang's vectoriser; integer results and, with -ffp-contract=off, floating
# point are as without it.
GUEST_TARGET_FLAGS = ("--target=wasm32-wasi", f"--sysroot={WASI_SYSROOT}", "-msimd128")
GUEST_FLAGS = (
    *GUEST_TARGET_FLAGS,
    # A dynamic library for componentize-py's linker: libc, libm and CPython's
    # symbols are resolved against the libraries it bundles, at its link time.
    "-shared",
    "-nostdlib",
    "-Wl,--experimental-pic",
    "-Wl,--no-entry",
    "-Wl,--unresolved-symbols=import-dynamic",
    "-Wl,--strip-debug",
)
NATIVE_FLAGS = ("-shared", "-fuse-ld=lld", "-Wl,--strip-debug")
NATIVE_SUFFIX = ".abi3.so"
EXTRA_FLAGS_ENV = "WASINN_EXT_CFLAGS"

# The probe component: its top-level code runs inside componentize-py's guest
# at build time, where its own folder is writable, and records the guest's ABI.
_PROBE_WIT = "package wasinn:probe;\nworld probe {}\n"
_PROBE_APP = """\
import importlib.machinery, json, os, sys, sysconfig

abi = {
    "version": list(sys.version_info[:3]),
    "soabi": sysconfig.get_config_var("SOABI"),
    "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX"),
    "suffixes": importlib.machinery.EXTENSION_SUFFIXES,
    "gil_disabled": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
    "sizes": {k: v for k, v in sysconfig.get_config_vars().items() if k.startswith("SIZEOF_")},
    # Every build-time setting, for guest_packages.py (a pyconfig.h and sysconfig
    # data for packages built against the full C API).
    "config_vars": {k: v for k, v in sysconfig.get_config_vars().items()
                    if isinstance(v, (int, str))},
}
with open(os.path.join(os.path.dirname(__file__), "abi.json"), "w") as f:
    json.dump(abi, f)
"""


class ExtError(Exception):
    """The build cannot go on; the message says why and what to do."""


class ToolchainMissingError(ExtError):
    """Debian packages of the toolchain are not installed (``.packages``)."""

    def __init__(self, packages: list[str]) -> None:
        super().__init__(
            f"the toolchain for C extension modules is missing (Debian packages: "
            f"{' '.join(packages)}); ./build.sh setup installs it (by hand: apt-get "
            f"install --no-install-recommends {' '.join(packages)})."
        )
        self.packages = packages


# ---------------------------------------------------------------- toolchain


def missing_packages(sjlj: bool = False, cxx: bool = False) -> list[str]:
    """The Debian packages of the toolchain that are not installed (with
    ``sjlj``: also those of a guest build of a ``/* build_ext: sjlj */`` module;
    with ``cxx``: those of a guest build of a module linking a C++ library).

    Example::

        >>> missing_packages(sjlj=True)   # doctest: +SKIP
        ['wasi-libc', 'nodejs', 'npm']
    """
    missing = [name for name, path in PACKAGES.items() if not path.exists()]
    if sjlj:
        missing += [name for name, command in SJLJ_PACKAGES.items() if not shutil.which(command)]
    if cxx:
        missing += [name for name, path in CXX_PACKAGES.items() if not path.exists()]
    return missing


def _require_toolchain(sjlj: bool = False, cxx: bool = False) -> None:
    missing = missing_packages(sjlj, cxx)
    if missing:
        raise ToolchainMissingError(missing)


def tool_version(tool: Path, cache_dir: Path) -> str:
    """The first line of ``tool --version``: recorded in every manifest.

    Remembered in ``cache_dir`` for as long as the tool's file stays the same
    one (a package upgrade replaces it): running three LLVM tools costs about
    0.1 s, and build.sh checks freshness before every command.
    """
    real = tool.resolve()
    info = real.stat()
    identity = [info.st_ino, info.st_size, info.st_mtime_ns]
    path = cache_dir / "tool-versions.json"
    try:
        known: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        known = {}
    # Keyed by the name it is called by: wasm-ld and ld.lld are one file, lld,
    # that answers as the name it was started by.
    entry = known.get(str(tool))
    if isinstance(entry, dict) and entry.get("file") == identity:
        return str(entry["version"])
    done = subprocess.run([str(tool), "--version"], capture_output=True, text=True)
    if done.returncode or not done.stdout.strip():
        raise ExtError(f"{tool} --version failed: {done.stderr.strip()}")
    version = done.stdout.strip().splitlines()[0]
    known[str(tool)] = {"file": identity, "version": version}
    _write_atomic(path, json.dumps(known, indent=1, sort_keys=True) + "\n")
    return version


def limited_api(version: tuple[int, int]) -> str:
    """The ``Py_LIMITED_API`` value for a CPython: the stable ABI of 3.11, or of
    the Python itself when it is older (its headers describe no later one).

    Example::

        >>> limited_api((3, 14)), limited_api((3, 10))
        ('0x030b0000', '0x030a0000')
    """
    major, minor = min(version, LIMITED_API)
    return f"0x{major:02x}{minor:02x}0000"


# ---------------------------------------------------------------- the guest's ABI


def probe_guest(componentize_py: Path) -> dict[str, Any]:
    """Build a probe component and return what its guest CPython says about its ABI."""
    with tempfile.TemporaryDirectory(prefix="wasinn-abi-probe-") as tmp:
        folder = Path(tmp)
        (folder / "probe.wit").write_text(_PROBE_WIT)
        (folder / "app.py").write_text(_PROBE_APP)
        done = subprocess.run(
            [str(componentize_py), "-d", str(folder / "probe.wit"), "-w", "probe",
             "componentize", "-p", str(folder), "app", "-o", str(folder / "probe.wasm")],
            capture_output=True, text=True,
        )  # fmt: skip
        try:
            found: dict[str, Any] = json.loads((folder / "abi.json").read_text())
        except (OSError, ValueError):
            raise ExtError(
                f"could not probe the guest's CPython ABI with {componentize_py} "
                f"(exit {done.returncode}): {(done.stdout + done.stderr).strip()[-2000:]}"
            ) from None
    return found


def guest_abi(cache_dir: Path) -> dict[str, Any]:
    """The guest's ABI, probed once per componentize-py version and cached."""
    try:
        version = build_stamp.installed_version("componentize-py")
    except build_stamp.NotInstalledError:
        raise ExtError(
            f"componentize-py is not installed for {sys.executable}; run ./build.sh setup."
        ) from None
    path = cache_dir / "guest-abi.json"
    try:
        cached: dict[str, Any] = json.loads(path.read_text())
        if cached.get("componentize-py") == version and "config_vars" in cached:
            return cached
    except (OSError, ValueError):
        pass
    print(f"build_ext: probing componentize-py {version}'s guest CPython", file=sys.stderr)
    abi = probe_guest(Path(sys.executable).parent / "componentize-py")
    abi["componentize-py"] = version
    _write_atomic(path, json.dumps(abi, indent=1, sort_keys=True) + "\n")
    return abi


def check_guest_abi(abi: dict[str, Any], pyconfig: Path = PYCONFIG) -> None:
    """Refuse a guest other than the one this build was checked for.

    Example::

        >>> check_guest_abi({"soabi": "cpython-315-wasm32-wasi", "componentize-py": "0.26.0",
        ...                  "ext_suffix": ".cpython-315-wasm32-wasi.so"})
        Traceback (most recent call last):
        ...
        build_ext.ExtError: componentize-py 0.26.0's guest CPython has SOABI cpython-315-... ...
    """
    soabi, suffix = abi.get("soabi"), abi.get("ext_suffix")
    who = f"componentize-py {abi.get('componentize-py', '?')}'s guest CPython"
    if soabi != GUEST_SOABI:
        raise ExtError(
            f"{who} has SOABI {soabi} (extension suffix {suffix}), but C extension modules are "
            f"built and checked for {GUEST_SOABI}: the file names componentize-py links, "
            f"CPython {LIMITED_API[0]}.{LIMITED_API[1]}'s stable ABI and {_shown(pyconfig)} "
            f"may no longer fit. Check them against the new guest (see "
            f"recipes/native-extensions), then set GUEST_SOABI in tools/build_ext.py. "
            f"(Extension modules built for {GUEST_SOABI} would not load in this guest.)"
        )
    suffixes = abi.get("suffixes", [])
    if suffix not in suffixes or ".abi3.so" not in suffixes or abi.get("gil_disabled"):
        raise ExtError(
            f"{who} does not load stable-ABI extension modules named *{suffix} "
            f"(its suffixes: {suffixes}; free-threaded: {abi.get('gil_disabled')})."
        )
    ours = {
        m.group(1): int(m.group(2))
        for m in re.finditer(r"^#define (SIZEOF_\w+) (\d+)$", pyconfig.read_text(), re.M)
    }
    wrong = {k: (v, abi["sizes"].get(k)) for k, v in ours.items() if abi["sizes"].get(k) != v}
    if wrong:
        said = ", ".join(f"{k} {mine} (guest: {theirs})" for k, (mine, theirs) in wrong.items())
        raise ExtError(f"{_shown(pyconfig)} does not describe {who}: {said}.")


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


# ---------------------------------------------------------------- targets


@dataclass(frozen=True)
class Target:
    """One way to compile: flags, output suffix and what the output depends on."""

    name: str
    label: str
    suffix: str
    flags: tuple[str, ...]
    settings: dict[str, str] = field(default_factory=dict)
    #: The flags that choose the target, for compiling the C libraries a module links.
    library_flags: tuple[str, ...] = ()
    #: How ``/* build_ext: sjlj */`` modules are built (the guest; None: as any other).
    sjlj: Sjlj | None = None
    #: What a module linking a C++ library links last (besides the guest's C++ runtime).
    cxx_link: tuple[str, ...] = ()


@dataclass(frozen=True)
class Sjlj:
    """The guest's setjmp/longjmp build: wasm-opt and what the outputs depend on."""

    wasm_opt: Path
    settings: tuple[tuple[str, str], ...]
    files: tuple[tuple[str, Path], ...]


def _extra_flags() -> tuple[str, ...]:
    return tuple(shlex.split(os.environ.get(EXTRA_FLAGS_ENV, "")))


def guest_target(cache_dir: Path, sjlj: bool = False) -> Target:
    """The wasm32-wasi target, after checking the guest's ABI (with ``sjlj``:
    ready for ``/* build_ext: sjlj */`` modules, binaryen installed)."""
    abi = guest_abi(cache_dir)
    check_guest_abi(abi)
    include = _guest_headers(cache_dir)
    flags = (*CFLAGS, f"-DPy_LIMITED_API={limited_api(LIMITED_API)}", f"-I{include}",
             *GUEST_FLAGS, *_extra_flags())  # fmt: skip
    return Target("guest", "wasm32-wasi", abi["ext_suffix"], flags, {
        "compiler": tool_version(CLANG, cache_dir),
        "linker": tool_version(LLVM_BIN / "wasm-ld", cache_dir),
        "guest": f"{abi['soabi']} (componentize-py {abi['componentize-py']})",
    }, library_flags=GUEST_TARGET_FLAGS,
       sjlj=sjlj_toolchain(cache_dir) if sjlj else None)  # fmt: skip


def install_binaryen() -> Path:
    """binaryen's wasm-opt as ``tools/node/package-lock.json`` pins it, installed
    with ``npm ci`` (from the npm registry, about 2 s, 100 MB) into
    ``build/node/KEY`` once per lockfile; returns the wasm-opt script."""
    lock = (NODE_PACKAGE / "package-lock.json").read_bytes()
    key = hashlib.sha256((NODE_PACKAGE / "package.json").read_bytes() + lock).hexdigest()[:16]
    home = NODE_PREFIX / key
    wasm_opt = home / "node_modules" / "binaryen" / "bin" / "wasm-opt"
    if wasm_opt.is_file():
        return wasm_opt
    print(f"build_ext: installing binaryen ({_shown(NODE_PACKAGE)}) with npm ci", file=sys.stderr)
    NODE_PREFIX.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=NODE_PREFIX))
    try:
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(NODE_PACKAGE / name, tmp / name)
        argv = ["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"]
        done = subprocess.run(argv, cwd=tmp, capture_output=True, text=True)
        if done.returncode:
            raise ExtError(
                f"npm ci could not install binaryen from {_shown(NODE_PACKAGE)} (is the npm "
                f"registry reachable?): {(done.stdout + done.stderr).strip()[-2000:]}"
            )
        try:
            tmp.rename(home)
        except OSError:  # another build installed it meanwhile
            if not wasm_opt.is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return wasm_opt


def sjlj_toolchain(cache_dir: Path) -> Sjlj:
    """wasm-opt (installed when missing) and what a setjmp/longjmp module depends on."""
    wasm_opt = install_binaryen()
    return Sjlj(wasm_opt, settings=(
        ("sjlj wasm-opt", tool_version(wasm_opt, cache_dir)),
        ("sjlj flags", shlex.join([*SJLJ_CFLAGS, "|", *SJLJ_RUNTIME_FLAGS, "|", *WASM_OPT_FLAGS])),
    ), files=(
        *((f"sjlj {p.name}", p) for p in (SJLJ_HEADER, *SJLJ_RUNTIME)),
        (f"tool {TOOLS.name}/sjlj_splice.py", Path(sjlj_splice.__file__)),
        (f"tool {TOOLS.name}/wasm_binary.py", Path(wasm_binary.__file__)),
        ("sjlj package-lock.json", NODE_PACKAGE / "package-lock.json"),
    ))  # fmt: skip


def native_target(cache_dir: Path) -> Target:
    """The target of the CPython running this tool."""
    include = Path(sysconfig.get_path("include"))
    if not (include / "Python.h").is_file():
        raise ExtError(
            f"{sys.executable} has no C headers in {include} (on Debian: apt-get install "
            f"python{sys.version_info[0]}.{sys.version_info[1]}-dev)."
        )
    api = limited_api((sys.version_info[0], sys.version_info[1]))
    flags = (*CFLAGS, f"-DPy_LIMITED_API={api}", f"-I{include}", *NATIVE_FLAGS, *_extra_flags())
    label = f"native CPython {sys.version_info[0]}.{sys.version_info[1]}"
    return Target("native", label, NATIVE_SUFFIX, flags, {
        "compiler": tool_version(CLANG, cache_dir),
        "linker": tool_version(LLVM_BIN / "ld.lld", cache_dir),
        "python": f"{sys.version} ({sysconfig.get_config_var('EXT_SUFFIX')})",
        "libc": os.confstr("CS_GNU_LIBC_VERSION") or "unknown",
    }, cxx_link=CXX_NATIVE_LINK)  # fmt: skip


def _guest_headers(cache_dir: Path) -> Path:
    """Debian's CPython 3.11 headers with pyconfig.h for wasm32-wasi, copied
    into the cache (their own pyconfig.h only knows Linux targets, and
    Python.h includes it from its own folder). Copied again when either changes."""
    target = cache_dir / "include" / "python3.11-wasm32-wasi"
    listing = sorted(
        (p.relative_to(GUEST_PY_HEADERS).as_posix(), p.stat().st_size, p.stat().st_mtime_ns)
        for p in GUEST_PY_HEADERS.rglob("*")
        if p.is_file()
    )
    signature = json.dumps([listing, hashlib.sha256(PYCONFIG.read_bytes()).hexdigest()])
    marker = target / ".copied-from"
    if marker.is_file() and marker.read_text() == signature:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".headers-", dir=target.parent))
    shutil.copytree(GUEST_PY_HEADERS, tmp, dirs_exist_ok=True)
    shutil.copyfile(PYCONFIG, tmp / "pyconfig.h")
    (tmp / ".copied-from").write_text(signature)
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    return target


# ---------------------------------------------------------------- building


def modules(folder: Path) -> dict[str, Path]:
    """The extension modules of ``folder``: each ``ext/NAME.c`` by NAME."""
    ext = folder / "ext"
    return {p.stem: p for p in sorted(ext.glob("*.c"))} if ext.is_dir() else {}


#: What a module's source may ask of this build, in ``/* build_ext: WORD ... */``.
DIRECTIVES = {"link": "link C libraries of tools/c_libraries.toml", "sjlj": "use setjmp/longjmp"}
_DIRECTIVE = re.compile(r"/\*\s*build_ext:\s*(\S+)([^*]*?)\s*\*/")


def directives(source: Path) -> dict[str, list[str]]:
    """The ``/* build_ext: WORD ARGS */`` comments of a module's source, as
    {WORD: ARGS}; an unknown WORD (a typo would otherwise be ignored) or
    arguments to ``sjlj`` raise ExtError.

    Example::

        >>> import pathlib, tempfile
        >>> src = pathlib.Path(tempfile.mkdtemp()) / "_png.c"
        >>> _ = src.write_text("/* build_ext: link libspng zlib */ /* build_ext: sjlj */")
        >>> directives(src)
        {'link': ['libspng', 'zlib'], 'sjlj': []}
    """
    found: dict[str, list[str]] = {}
    for m in _DIRECTIVE.finditer(source.read_text()):
        word, args = m.group(1), m.group(2).split()
        if word not in DIRECTIVES:
            known = "; ".join(f"{k}: {v}" for k, v in DIRECTIVES.items())
            raise ExtError(f"{_shown(source)}: unknown /* build_ext: {word} */ (known: {known})")
        if word == "sjlj" and args:
            raise ExtError(f"{_shown(source)}: /* build_ext: sjlj */ takes nothing, not {args}")
        found.setdefault(word, []).extend(args)
    return found


def linked_libraries(source: Path) -> list[str]:
    """The C libraries a module's source names in ``/* build_ext: link NAME ... */``."""
    return directives(source).get("link", [])


def uses_sjlj(source: Path) -> bool:
    """Whether a module's source opts into setjmp/longjmp with ``/* build_ext: sjlj */``."""
    return "sjlj" in directives(source)


def _asks_cxx(source: Path) -> bool:
    """Whether a module links a C++ library (False where its comments or the
    catalogue are bad: building the module reports that)."""
    try:
        catalogue = c_libraries.load_catalogue()
        return any(lib.cxx for lib in c_libraries.closure(linked_libraries(source), catalogue))
    except (ExtError, c_libraries.LibraryError):
        return False


def _asks_sjlj(source: Path) -> bool:
    """``uses_sjlj``, False where the comments are bad: the toolchain is chosen
    before the modules are built, and building that module then reports them
    and removes its outputs, as for any module that fails."""
    try:
        return uses_sjlj(source)
    except ExtError:
        return False


@dataclass(frozen=True)
class Linked:
    """The C libraries one module links for one target, built."""

    settings: tuple[tuple[str, str], ...]
    include: tuple[Path, ...]
    #: clang's ``@FILE`` lists of each library's objects (the C++ runtime's last).
    link_files: tuple[Path, ...]
    #: Whether a library has C++: the module links the target's C++ runtime.
    cxx: bool = False
    #: Files of ours the link depends on beyond the libraries (the guest's C++ hook).
    files: tuple[tuple[str, Path], ...] = ()


def link_libraries(source: Path, target: Target, cache_dir: Path) -> Linked:
    """Build (when not built yet) the libraries ``source`` names, with those they require."""
    names = linked_libraries(source)
    if not names:
        return Linked((), (), ())

    def build(lib: c_libraries.Library) -> c_libraries.Built:
        return c_libraries.build(lib, catalogue, target.name, target.library_flags, CLANG,
                                 target.settings["compiler"], cache_dir)  # fmt: skip

    try:
        catalogue = c_libraries.load_catalogue()
        built = [(lib, build(lib)) for lib in c_libraries.closure(names, catalogue)]
        cxx = any(b.cxx for _, b in built)
        runtime = []
        if cxx and target.name == "guest":
            # Its headers are not the module's: only its objects are linked, after the rest.
            runtime = [(lib, build(lib)) for lib in
                       c_libraries.closure([c_libraries.GUEST_CXX_RUNTIME], catalogue)]  # fmt: skip
    except c_libraries.LibraryError as exc:
        raise ExtError(f"{_shown(source)}: {exc}") from None
    settings = [(f"library {lib.name} {lib.version}", b.key) for lib, b in built + runtime]
    files: list[tuple[str, Path]] = []
    if cxx:
        settings.append(("c++ link", shlex.join(target.cxx_link)))
        if target.name == "guest":
            files.append((f"c++ runtime {CXX_GUEST_RUNTIME.name}", CXX_GUEST_RUNTIME))
    return Linked(
        settings=tuple(settings),
        include=tuple(d for _, b in built for d in b.include),
        link_files=tuple(b.link_file for _, b in built + runtime),
        cxx=cxx,
        files=tuple(files),
    )


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _manifest(
    source: Path, headers: Iterable[str], target: Target, linked: Linked, sjlj: Sjlj | None
) -> dict[str, str]:
    """Everything an output depends on (build_stamp's format). OSError if a file is gone.

    A linked library stands in it by its build key, which covers its sources,
    headers and flags: its headers are left out of the header list. A
    setjmp/longjmp build (``sjlj``) adds its runtime's sources, header, the
    splice tool that makes the stub, wasm-opt's version and every flag.
    """
    extra_files = [*linked.files, *(sjlj.files if sjlj else ())]
    extra_settings = list(sjlj.settings) if sjlj else []
    entries = build_stamp.manifest(
        files=[(f"source {source.name}", source), (f"tool {TOOLS.name}/build_ext.py",
               Path(__file__))] + [(f"header {h}", Path(h)) for h in headers] + extra_files,
        settings=[*target.settings.items(), ("target", target.name),
                  ("flags", shlex.join(target.flags)), *linked.settings, *extra_settings],
    )  # fmt: skip
    # The CPU does not change what clang writes (no -march=native).
    entries.pop("setting host-cpu", None)
    return entries


def _depfile_headers(depfile: Path, source: Path) -> list[str]:
    """The files a ``-MD`` dependency list names, except the source itself."""
    text = depfile.read_text().replace("\\\n", " ")
    _, _, deps = text.partition(": ")
    names = [n.replace("\\ ", " ") for n in re.findall(r"(?:\\ |\S)+", deps)]
    return sorted({str(Path(n).resolve()) for n in names} - {str(source.resolve())})


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def _stamp_path(cache_dir: Path, folder: Path) -> Path:
    key = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:12]
    return cache_dir / "stamps" / f"{folder.name}-{key}.json"


def _run(argv: Sequence[str], source: Path, target: Target, what: str) -> None:
    if subprocess.run(argv).returncode:
        raise ExtError(
            f"could not {what} {_shown(source)} for {target.label} (the message is above; "
            f"the command: {shlex.join(argv)})"
        )


def _module_sjlj(source: Path, target: Target) -> Sjlj | None:
    """How ``source`` is built for ``target`` with setjmp/longjmp (None: as usual)."""
    if target.name != "guest" or not uses_sjlj(source):
        return None  # natively, glibc has setjmp/longjmp
    if target.sjlj is None:
        raise ExtError(f"{_shown(source)} wants setjmp/longjmp, but the guest target has no sjlj")
    return target.sjlj


def _install(data: bytes | Path, out: Path) -> None:
    """Write ``out`` (bytes, or a copy of a file) beside itself, then rename it
    into place: no reader sees half a file."""
    partial = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        if isinstance(data, Path):
            shutil.copy2(data, partial)
        else:
            partial.write_bytes(data)
        partial.replace(out)
    finally:
        partial.unlink(missing_ok=True)


def compile_module(
    name: str, source: Path, folder: Path, target: Target, linked: Linked, why: str
) -> dict[str, Any]:
    """Compile one module for one target into ``folder``; return its stamp entry.

    A ``/* build_ext: sjlj */`` module's guest build writes two files: the
    stub under the guest's suffix (what componentize-py links) and the real
    module as ``NAME.sjlj.wasm`` (see sjlj_splice.py).
    """
    out = folder / f"{name}{target.suffix}"
    real_out = folder / f"{name}{REAL_SUFFIX}"
    sjlj = _module_sjlj(source, target)
    print(f"build_ext: compiling {_shown(source)} for {target.label}"
          f"{' with setjmp/longjmp' if sjlj else ''} ({why})", file=sys.stderr)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="wasinn-ext-") as tmp:
        depfile = Path(tmp) / f"{name}.d"
        # The linker writes the output's file name into it: the final name
        # keeps the build reproducible. It is then copied beside the final
        # file and renamed over it, so that no reader sees half a file.
        built = Path(tmp) / out.name
        runtime: list[str] = []
        sjlj_flags: tuple[str, ...] = ()
        if linked.cxx and target.name == "guest":
            obj = Path(tmp) / "cxx_runtime.o"
            _run([str(CLANG), *CFLAGS, *GUEST_TARGET_FLAGS, "-c", str(CXX_GUEST_RUNTIME), "-o",
                  str(obj)], source, target, "compile the C++ runtime hook for")  # fmt: skip
            runtime.append(str(obj))
        if sjlj:
            sjlj_flags = SJLJ_CFLAGS
            for i, src in enumerate(SJLJ_RUNTIME):
                obj = Path(tmp) / f"sjlj{i}.o"
                _run([str(CLANG), *CFLAGS, *GUEST_TARGET_FLAGS, *SJLJ_RUNTIME_FLAGS, "-c",
                      str(src), "-o", str(obj)], source, target, "compile the sjlj runtime for")
                runtime.append(str(obj))
        argv = [str(CLANG), *target.flags, *sjlj_flags, f"-I{source.parent}",
                *(f"-I{d}" for d in linked.include), "-MD", "-MF", str(depfile),
                str(source.resolve()), *runtime, *(f"@{f}" for f in linked.link_files),
                *(target.cxx_link if linked.cxx else ()), "-o", str(built)]  # fmt: skip
        _run(argv, source, target, "compile")
        roots = tuple(f"{d.resolve()}/" for d in linked.include)
        headers = [h for h in _depfile_headers(depfile, source) if not h.startswith(roots)]
        entry: dict[str, Any] = {"file": out.name, "headers": headers}
        if sjlj:
            # LLVM 19's legacy EH -> the standard exnref EH that wasmtime 49 runs.
            exnref = Path(tmp) / f"{name}.exnref.wasm"
            _run(["node", str(sjlj.wasm_opt), *WASM_OPT_FLAGS, str(built), "-o", str(exnref)],
                 source, target, "translate (wasm-opt)")  # fmt: skip
            real = exnref.read_bytes()
            try:
                stub = sjlj_splice.make_stub(real).binary
            except sjlj_splice.SpliceError as exc:
                raise ExtError(
                    f"{_shown(source)} has /* build_ext: sjlj */, but no stub can be made for "
                    f"componentize-py ({exc}); a module that calls neither setjmp nor longjmp "
                    f"needs no such comment."
                ) from None
            _install(real, real_out)
            _install(stub, out)
            entry.update(real=real_out.name, real_output=_sha256(real_out))
        else:
            _install(built, out)
            if target.name == "guest":
                real_out.unlink(missing_ok=True)  # no longer a setjmp/longjmp module
    entry.update(manifest=_manifest(source, headers, target, linked, sjlj), output=_sha256(out))
    return entry


def _fresh(
    entry: dict[str, Any] | None, out: Path, source: Path, target: Target, linked: Linked
) -> str | None:
    """None when the stamp entry matches the output(s) and every input; else why not."""
    if not entry or entry.get("file") != out.name:
        return "not built yet"
    try:
        if _sha256(out) != entry.get("output"):
            return f"{out.name} is missing or was changed"
        if "real" in entry and _sha256(out.parent / entry["real"]) != entry.get("real_output"):
            return f"{entry['real']} is missing or was changed"
        new = _manifest(source, entry.get("headers", []), target, linked,
                        _module_sjlj(source, target))  # fmt: skip
    except OSError as exc:
        return f"{exc.filename} is gone"
    old = entry.get("manifest", {})
    return None if old == new else build_stamp.changes(old, new)


def build_folder(folder: Path, targets: Sequence[Target], cache_dir: Path) -> list[Path]:
    """Bring every module of ``folder`` up to date for ``targets``; return what was compiled."""
    stamp_path = _stamp_path(cache_dir, folder)
    try:
        stamp: dict[str, Any] = json.loads(stamp_path.read_text())
    except (OSError, ValueError):
        stamp = {}
    found = modules(folder)
    built: list[Path] = []

    def forget(name: str) -> None:
        """Remove every output of a module: none may run once its source is gone or broken."""
        for entry in stamp.pop(name, {}).values():
            for key in ("file", "real"):
                if key in entry:
                    (folder / entry[key]).unlink(missing_ok=True)
        for target in targets:
            (folder / f"{name}{target.suffix}").unlink(missing_ok=True)
        (folder / f"{name}{REAL_SUFFIX}").unlink(missing_ok=True)

    for name in sorted(set(stamp) - set(found)):
        forget(name)
    try:
        for name, source in found.items():
            entries = stamp.setdefault(name, {})
            for target in targets:
                out = folder / f"{name}{target.suffix}"
                try:
                    linked = link_libraries(source, target, cache_dir)
                    why = _fresh(entries.get(target.name), out, source, target, linked)
                    if why is not None:
                        entries[target.name] = compile_module(
                            name, source, folder, target, linked, why
                        )
                        built.append(out)
                except ExtError:
                    forget(name)
                    raise
    finally:
        if stamp or stamp_path.exists():
            _write_atomic(stamp_path, json.dumps(stamp, indent=1, sort_keys=True) + "\n")
    return built


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Compile FOLDER/ext/NAME.c into FOLDER/NAME.<guest suffix> and "
        "FOLDER/NAME.abi3.so when an input changed."
    )
    parser.add_argument("folders", nargs="+", type=Path, metavar="FOLDER")
    parser.add_argument("--targets", default="guest,native", help="guest, native or both (default)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="stamps and probe cache")
    args = parser.parse_args(argv)
    wanted = [t for t in args.targets.split(",") if t]
    if not wanted or set(wanted) - {"guest", "native"}:
        parser.error(f"--targets takes guest, native or both, not {args.targets!r}")
    try:
        targets: list[Target] = []
        sources = [src for f in args.folders for src in modules(f).values()]
        if sources:
            sjlj = "guest" in wanted and any(_asks_sjlj(src) for src in sources)
            cxx = "guest" in wanted and any(_asks_cxx(src) for src in sources)
            _require_toolchain(sjlj, cxx)
            for name in wanted:
                targets.append(guest_target(args.cache, sjlj) if name == "guest"
                               else native_target(args.cache))  # fmt: skip
        for folder in args.folders:
            build_folder(folder, targets, args.cache)
    except ToolchainMissingError as exc:
        print(" ".join(exc.packages))
        print(f"build_ext: {exc}", file=sys.stderr)
        return 3
    except ExtError as exc:
        print(f"build_ext: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
