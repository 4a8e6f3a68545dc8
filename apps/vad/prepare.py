"""Put silero VAD's OpenVINO-friendly ONNX model in BUILD/models/silero (once).

Run by build.sh before building this app: `python prepare.py BUILD/models`,
with wasinn's tools/ on PYTHONPATH (for wheels.py).
The model comes from the silero-vad 6.2.3 wheel on PyPI; it is not committed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from wheels import extract  # wasinn's tools/, on PYTHONPATH when build.sh runs this

MEMBER = "silero_vad/data/silero_vad_openvino_16k.onnx"


def main(models: Path) -> None:
    target = models / "silero" / Path(MEMBER).name
    if not target.exists():
        extract("silero-vad==6.2.3", MEMBER, target)
        print(f"prepare: took {target.name} from the silero-vad 6.2.3 wheel", file=sys.stderr)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
