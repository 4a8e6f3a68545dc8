"""pyopenjtalk's run_frontend, the oracle of test_openjtalk.py.

pyopenjtalk 0.4.1 (the original, r9y9's; PyPI has its sdist only) wraps its own
copy of OpenJTalk 1.11 (r9y9's fork: the same front end, `register` keywords
removed, a modern C++ comparator) in Cython. It runs in a venv of its own,
``build/venv-pyopenjtalk``, made on first use from the pinned list
``tests/pyopenjtalk_oracle_requirements.txt`` (its build tools included:
``--no-deps --no-build-isolation``, so nothing unpinned is fetched; building
takes about a minute) and kept until that list changes. Its dictionary
download (from GitHub, at first use of the module-level functions) is never
triggered: the oracle builds ``pyopenjtalk.openjtalk.OpenJTalk(dn_mecab=...)``
on the dictionary the test gives, Debian's, the one wasinn's module reads.
Imported by the tests (in .venv) and run as a script with the venv's Python::

    build/venv-pyopenjtalk/bin/python tests/pyopenjtalk_oracle.py DICT TEXTS.json OUT.json

pyopenjtalk converts text into a fixed 8,192-byte buffer without checking its
size (text2mecab writes up to three bytes per input byte): a text that could
overflow it is not given to it (its outcome is ``None``).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "tests" / "pyopenjtalk_oracle_requirements.txt"
VENV = ROOT / "build" / "venv-pyopenjtalk"
#: Written into the venv last, with the hash of the requirements it was made from.
STAMP = VENV / "wasinn-requirements.sha256"
#: pyopenjtalk's buffer for text2mecab's output (openjtalk.pyx: ``char buff[8192]``).
BUFFER = 8192


class Unavailable(Exception):
    """The venv could not be made (no network, no compiler, ...)."""


def _python() -> Path:
    return VENV / "bin" / "python"


def ensure_venv() -> Path:
    """The venv's Python, making the venv first when it is missing or was made
    from another requirements list. Raises ``Unavailable`` with pip's words."""
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text().strip() == digest and _python().exists():
        return _python()
    shutil.rmtree(VENV, ignore_errors=True)
    VENV.parent.mkdir(parents=True, exist_ok=True)
    pip = [str(_python()), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
           "--no-deps"]  # fmt: skip
    wanted = [line.split("#")[0].strip() for line in REQUIREMENTS.read_text().splitlines()]
    pyopenjtalk = [w for w in wanted if w.startswith("pyopenjtalk==")]
    tools = [w for w in wanted if w and not w.startswith("pyopenjtalk==")]
    steps = {
        "python -m venv": [sys.executable, "-m", "venv", str(VENV)],
        "pip install (build tools, numpy, tqdm)": [*pip, *tools],
        "pip install pyopenjtalk (built from its sdist)": [*pip, "--no-build-isolation",
                                                            *pyopenjtalk],
        "import pyopenjtalk.openjtalk": [str(_python()), "-I", "-c",
                                         "import pyopenjtalk.openjtalk"],
    }  # fmt: skip
    for what, step in steps.items():
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode:
            shutil.rmtree(VENV, ignore_errors=True)
            raise Unavailable(
                f"{what} failed (exit {done.returncode}): "
                f"{(done.stderr or done.stdout).strip()[-1500:]}"
            )
    STAMP.write_text(digest + "\n")
    return _python()


def frontend(dictionary: Path, texts: list[str]) -> list[list[dict[str, Any]] | None]:
    """pyopenjtalk's run_frontend of each text on ``dictionary`` (None: a text
    that could overflow its buffer)."""
    python = ensure_venv()
    with tempfile.TemporaryDirectory() as tmp:
        given, written = Path(tmp) / "texts.json", Path(tmp) / "out.json"
        given.write_text(json.dumps(texts))
        done = subprocess.run(
            # -I: tests/ is not put on the path (its modules would shadow others').
            [str(python), "-I", __file__, str(dictionary), str(given), str(written)],
            capture_output=True,
            text=True,
        )
        if done.returncode:
            raise RuntimeError(f"pyopenjtalk_oracle.py failed:\n{done.stderr[-3000:]}")
        result: list[list[dict[str, Any]] | None] = json.loads(written.read_text())
        return result


def main(argv: list[str]) -> int:
    """Run in the pyopenjtalk venv: DICT TEXTS.json -> OUT.json."""
    from pyopenjtalk.openjtalk import OpenJTalk  # the venv's; never downloads

    jtalk = OpenJTalk(dn_mecab=argv[0].encode())
    out: list[list[dict[str, Any]] | None] = []
    for text in json.loads(Path(argv[1]).read_text()):
        fits = 3 * len(text.encode()) < BUFFER
        out.append(jtalk.run_frontend(text) if fits else None)
    Path(argv[2]).write_text(json.dumps(out, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
