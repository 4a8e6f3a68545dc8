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
on the dictionary the test gives, the one wasinn's module reads.
Imported by the tests (in .venv) and run as a script with the venv's Python::

    build/venv-pyopenjtalk/bin/python tests/pyopenjtalk_oracle.py DICT TEXTS.json OUT.json

pyopenjtalk converts text into a fixed 8,192-byte buffer without checking its
size (text2mecab writes up to three bytes per input byte): a text that could
overflow it is not given to it (its outcome is ``None``).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "tests" / "pyopenjtalk_oracle_requirements.txt"
#: pyopenjtalk's buffer for text2mecab's output (openjtalk.pyx: ``char buff[8192]``).
BUFFER = 8192


def ensure_venv() -> Path:
    """The pyopenjtalk venv's Python (made on first use by ``oracle_venv``,
    which raises ``oracle_venv.Unavailable`` when it cannot be made)."""
    import oracle_venv  # not needed in the script's own run, in the venv

    return oracle_venv.ensure(
        "pyopenjtalk", REQUIREMENTS, "import pyopenjtalk.openjtalk", from_source="pyopenjtalk"
    )


def frontend(dictionary: Path, texts: list[str]) -> list[list[dict[str, Any]] | None]:
    """pyopenjtalk's run_frontend of each text on ``dictionary`` (None: a text
    that could overflow its buffer)."""
    python = ensure_venv()
    with tempfile.TemporaryDirectory() as tmp:
        given, written = Path(tmp) / "texts.json", Path(tmp) / "out.json"
        given.write_text(json.dumps(texts))
        import oracle_venv

        oracle_venv.run(python, __file__, str(dictionary), str(given), str(written))
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
