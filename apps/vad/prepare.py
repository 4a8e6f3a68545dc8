"""Put silero VAD's OpenVINO-friendly ONNX model in BUILD/models/silero (once).

Run by build.sh before building this app: `python prepare.py BUILD/models`.
The model comes from the silero-vad 6.2.3 wheel on PyPI; it is not committed.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEEL = "silero-vad==6.2.3"
MEMBER = "silero_vad/data/silero_vad_openvino_16k.onnx"


def main(models: Path) -> None:
    target = models / "silero" / Path(MEMBER).name
    if target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", WHEEL, "-d", tmp],
            check=True,
        )
        (wheel,) = Path(tmp).glob("silero_vad-*.whl")
        with zipfile.ZipFile(wheel) as zf:
            data = zf.read(MEMBER)
    part = target.with_suffix(".part")
    part.write_bytes(data)
    part.rename(target)
    print(f"prepare: wrote {target}", file=sys.stderr)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
