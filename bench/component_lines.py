"""Run a component with ``./build.sh run`` and read its JSON lines: what the
image, OCR and photo benchmarks do with their apps.

Example::

    >>> lines = json_lines("tests/image_app", ["--repeat", "3", "a.png"], cwd=tmp)  # doctest: +SKIP
    >>> lines[0]["seconds"]                                                     # doctest: +SKIP
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def json_lines(app: str | Path, args: list[str], cwd: Path) -> list[dict[str, Any]]:
    """The JSON object of each line ``./build.sh run APP ARGS...`` prints in
    ``cwd``; SystemExit with its stderr when it fails."""
    done = subprocess.run(
        [str(ROOT / "build.sh"), "run", str(app), *args],
        cwd=cwd, capture_output=True, text=True, timeout=3600,
    )  # fmt: skip
    if done.returncode:
        raise SystemExit(f"bench: the {Path(app).name} component failed:\n{done.stderr}")
    return [json.loads(line) for line in done.stdout.splitlines()]
