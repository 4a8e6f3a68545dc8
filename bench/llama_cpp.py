"""llama.cpp (llama-cpp-python 0.3.36, built from its sdist) for the
generation benchmark: the baseline the generate component is compared with.

Only the benchmark uses it: it is never a test dependency and never goes into
``.venv``. ``ensure_llama_cpp()`` returns the Python of a venv of its own, in
a cache folder outside the clone named after everything the build depends on::

    ${WASINN_CACHE:-~/.cache/wasinn}/llama-cpp-python/<version>-<key>/
        wheel/llama_cpp_python-0.3.36-....whl   the build (8.3 minutes here)
        venv/                                   the wheel + pinned dependencies
        build.log, settings.json, .complete     .complete is written last

The key (16 hex digits of a SHA-256) covers the version, the sdist's hash,
CMAKE_ARGS, the pinned build and run-time packages, the Python, cmake's and
the compilers' versions and the CPU's flags: ``-DGGML_NATIVE=ON`` compiles for
this CPU, so a cache shared with another machine must not hand it a library
with instructions its CPU lacks. The wheel is kept apart from the venv so that a
broken venv is remade in seconds without building again.

Why not ``tests/oracle_venv.ensure``: it keeps its venvs in ``build/`` (a
clean of the checkout would throw away minutes of compiling), keys them by
a requirements file alone (not the compiler or the CPU) and installs the
sdist's build without keeping the wheel. The cache root is
``guest_packages.cache_root()``, the one the guest packages use.

The build is ``pip wheel --no-deps --no-binary :all: --no-build-isolation``
of the sdist checked against its SHA-256, with scikit-build-core and its two
dependencies pinned in the venv (build isolation would fetch whatever
scikit-build-core is newest), the machine's cmake and ninja, ``nice -n 19``
and two build jobs: the machine has two cores shared with others.

    python bench/llama_cpp.py            # build if needed, print the venv's python
    python bench/llama_cpp.py --measure  # and time /tmp/g/model.gguf on two prompts
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from guest_packages import cache_root  # noqa: E402  (tools/: the one cache of wasinn)

VERSION = "0.3.36"
#: The sdist on PyPI (``pip download --no-binary :all: llama-cpp-python==0.3.36``).
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
#: llama.cpp's own default, spelled out so that it is part of the key.
CMAKE_ARGS = "-DGGML_NATIVE=ON"
#: scikit-build-core and what it needs on Python 3.11 (its METADATA).
BUILD_REQUIREMENTS = ("scikit-build-core==1.1.0", "packaging==26.3", "pathspec==1.1.1")
#: llama-cpp-python's METADATA: typing-extensions, numpy, diskcache, jinja2
#: (and jinja2's MarkupSafe); the versions .venv has, where it has them.
RUNTIME_REQUIREMENTS = (
    "numpy==2.4.6",
    "typing-extensions==4.16.0",
    "diskcache==5.6.3",
    "Jinja2==3.1.6",
    "MarkupSafe==3.0.4",
)
#: Bumped by hand when the way of building changes in a way the settings
#: below do not show (this file is not hashed: editing the runner or a
#: docstring must not cost a rebuild).
SCHEME = 1
BUILD_JOBS = 2
#: Where apps/generate/prepare.py puts the GGUF (``gguf/``), or the folder
#: above it, where the brief for this benchmark expected it: the first that
#: exists, else prepare.py's.
_GGUFS = (ROOT / "build" / "models" / "gemma3" / "gguf" / "model.gguf",
          ROOT / "build" / "models" / "gemma3" / "model.gguf")  # fmt: skip
DEFAULT_GGUF = next((path for path in _GGUFS if path.is_file()), _GGUFS[0])
RUNNER = Path(__file__).resolve().parent / "llama_cpp_runner.py"


class Unavailable(Exception):
    """llama-cpp-python could not be built or installed (pip's last words)."""


def _version_line(command: Sequence[str]) -> str:
    """The first line ``command --version`` prints, or why there is none."""
    try:
        done = subprocess.run([*command, "--version"], capture_output=True, text=True)
    except OSError as exc:
        return f"missing: {exc}"
    return (done.stdout or done.stderr).strip().split("\n", 1)[0]


def _cpu_flags() -> str:
    """The CPU's feature flags (what ``-march=native`` compiles for)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return " ".join(sorted(line.split(":", 1)[1].split()))
    except OSError:
        pass
    return platform.processor() or platform.machine()


def settings() -> dict[str, Any]:
    """Everything the build depends on: its SHA-256 names the cache folder."""
    return {
        "scheme": SCHEME,
        "version": VERSION,
        "sdist_sha256": SDIST_SHA256,
        "cmake_args": CMAKE_ARGS,
        "build_requirements": list(BUILD_REQUIREMENTS),
        "runtime_requirements": list(RUNTIME_REQUIREMENTS),
        "python": f"{platform.python_implementation()} {platform.python_version()} "
        f"{sys.platform} {platform.machine()}",
        "cmake": _version_line(["cmake"]),
        "cc": _version_line([os.environ.get("CC", "cc")]),
        "cxx": _version_line([os.environ.get("CXX", "c++")]),
        "cpu_flags": _cpu_flags(),
    }


def cache_dir() -> Path:
    """``<cache>/llama-cpp-python/<version>-<key>``."""
    digest = hashlib.sha256(json.dumps(settings(), sort_keys=True).encode()).hexdigest()
    return cache_root() / "llama-cpp-python" / f"{VERSION}-{digest[:16]}"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path``: two benchmarks started at once
    must not build into one folder together (the second waits and reuses)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _step(what: str, command: Sequence[str], log: Path, env: dict[str, str] | None = None) -> None:
    """Run one step, its output appended to ``log``; Unavailable if it fails."""
    with log.open("a") as out:
        out.write(f"\n$ {' '.join(command)}\n")
        out.flush()
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    if done.returncode:
        tail = log.read_text(errors="replace")[-2000:]
        raise Unavailable(f"{what} failed (exit {done.returncode}; {log}):\n{tail}")


def _build_wheel(python: Path, folder: Path, log: Path) -> Path:
    """Compile llama-cpp-python's sdist into ``folder/wheel`` (the slow part)."""
    requirement = folder / "sdist-requirement.txt"  # pip checks hashes only from a file
    requirement.write_text(f"llama-cpp-python=={VERSION} --hash=sha256:{SDIST_SHA256}\n")
    scratch = Path(tempfile.mkdtemp(prefix=".wheel-", dir=folder))
    env = dict(os.environ, CMAKE_ARGS=CMAKE_ARGS, CMAKE_BUILD_PARALLEL_LEVEL=str(BUILD_JOBS))
    try:
        _step(
            "pip wheel llama-cpp-python (from its sdist)",
            ["nice", "-n", "19", str(python), "-m", "pip", "wheel", "--no-deps",
             "--no-binary", ":all:", "--no-build-isolation", "--disable-pip-version-check",
             "--require-hashes", "-r", str(requirement), "-w", str(scratch)],
            log, env,
        )  # fmt: skip
        wheels = list(scratch.glob("llama_cpp_python-*.whl"))
        if len(wheels) != 1:
            raise Unavailable(f"pip wheel left {[w.name for w in wheels]} in {scratch}")
        shutil.rmtree(folder / "wheel", ignore_errors=True)
        scratch.chmod(0o755)  # mkdtemp's 0700 would hide a shared cache's wheel
        scratch.rename(folder / "wheel")  # whole or not at all
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return next((folder / "wheel").glob("llama_cpp_python-*.whl"))


def ensure_llama_cpp(*, quiet: bool = False) -> Path:
    """The Python of a venv with llama-cpp-python 0.3.36 built from its sdist
    for this machine, building it first if the cache lacks it (8-13 minutes
    on two shared cores; the wheel is kept, so later venvs take seconds).
    Raises ``Unavailable`` with pip's last words when that fails."""
    folder = cache_dir()
    python = folder / "venv" / "bin" / "python"
    complete = folder / ".complete"
    if complete.is_file() and python.exists():
        return python
    with _locked(folder.parent / f"{folder.name}.lock"):
        if complete.is_file() and python.exists():  # built while we waited
            return python
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "settings.json").write_text(json.dumps(settings(), indent=1) + "\n")
        log = folder / "build.log"
        shutil.rmtree(folder / "venv", ignore_errors=True)
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
               "--no-deps"]  # fmt: skip
        _step("python -m venv", [sys.executable, "-m", "venv", str(folder / "venv")], log)
        _step("pip install the pinned packages",
              [*pip, *BUILD_REQUIREMENTS, *RUNTIME_REQUIREMENTS], log)  # fmt: skip
        wheels = sorted((folder / "wheel").glob("llama_cpp_python-*.whl"))
        if not wheels:
            if not quiet:
                print(f"llama_cpp: building llama-cpp-python {VERSION} from its sdist "
                      f"({CMAKE_ARGS}) into {folder}; about 10 minutes on two cores, log in {log}",
                      file=sys.stderr)  # fmt: skip
            start = time.monotonic()
            wheels = [_build_wheel(python, folder, log)]
            minutes = (time.monotonic() - start) / 60
            with log.open("a") as out:
                out.write(f"\nbuilt in {minutes:.1f} minutes\n")
            if not quiet:
                print(f"llama_cpp: built in {minutes:.1f} minutes", file=sys.stderr)
        _step("pip install the wheel", [*pip, str(wheels[0])], log)
        _step("import llama_cpp",
              [str(python), "-I", "-c", "import llama_cpp; print(llama_cpp.__version__)"],
              log)  # fmt: skip
        complete.write_text(wheels[0].name + "\n")
    return python


def measure(
    prompts: Sequence[Sequence[int]],
    *,
    threads: int,
    new_tokens: int = 64,
    warmup: Sequence[int] | None = None,
    gguf: Path = DEFAULT_GGUF,
    python: Path | None = None,
) -> dict[str, Any]:
    """Time llama.cpp on ``prompts`` (token ids, so that every engine sees
    the same tokens), each once after an untimed ``warmup``, in a fresh
    process of the venv's Python, so that its peak RSS is this setting's
    alone. Returns the runner's JSON (see llama_cpp_runner.py)."""
    python = python or ensure_llama_cpp()
    if not gguf.is_file():
        raise FileNotFoundError(f"no GGUF at {gguf} (apps/generate/prepare.py puts it there)")
    job = {"model": str(gguf), "threads": threads, "new_tokens": new_tokens,
           "warmup": list(warmup) if warmup else None,
           "prompts": [list(p) for p in prompts]}  # fmt: skip
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(job, handle)
    try:
        # -I: bench/ is not put on the path (its llama_cpp.py, this file,
        # would shadow the package of the same name).
        done = subprocess.run([str(python), "-I", str(RUNNER), handle.name],
                              capture_output=True, text=True, timeout=3600)  # fmt: skip
    finally:
        os.unlink(handle.name)
    if done.returncode:
        raise RuntimeError(f"llama_cpp_runner.py failed (exit {done.returncode}):\n"
                           f"{done.stderr[-3000:]}")  # fmt: skip
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--measure", action="store_true",
                        help="time the GGUF on two prompts at 1 and 2 threads")  # fmt: skip
    parser.add_argument("--gguf", type=Path, default=Path("/tmp/g/model.gguf"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    python = ensure_llama_cpp()
    print(python)
    if not args.measure:
        return
    # Ids without a tokenizer: BOS (2) then ordinary text pieces; only the
    # count matters for timing. The real benchmark tokenizes real prompts.
    short = [2, *range(1000, 1008)]
    long = [2, *(1000 + (i * 7919) % 50000 for i in range(999))]
    for _ in range(args.rounds):  # rounds: drift hits both settings alike
        for threads in (1, 2):
            result = measure([short, long], threads=threads, warmup=short, gguf=args.gguf,
                             python=python)  # fmt: skip
            del result["system_info"]
            for row in result["prompts"]:
                del row["tokens"]
            print(json.dumps(result))

if __name__ == "__main__":
    main()
