"""Put PP-OCRv4's text detector in BUILD/models/ppocr for the pre-processing benchmark (once).

Run by build.sh before building the benchmark guest: `python prepare.py BUILD/models`,
with wasinn's tools/ on PYTHONPATH (for wheels.py). The model comes from the
rapidocr-onnxruntime 1.4.4 wheel on PyPI and is not committed. It imports ONNX
opset 12; wasinn splices pre-processing (written for opset 18) only into models
whose operators mean the same, so the benchmark uses a copy upgraded to opset 18
with onnx's version converter (outputs unchanged on OpenVINO: max difference 0).
"""

from __future__ import annotations

import sys
from pathlib import Path

import onnx  # build time only, from .venv
from onnx import version_converter
from wheels import extract  # wasinn's tools/, on PYTHONPATH when build.sh runs this

MEMBER = "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx"


def main(models: Path) -> None:
    original = models / "ppocr" / "det.onnx"
    upgraded = models / "ppocr" / "det_opset18.onnx"
    if not original.exists():
        extract("rapidocr-onnxruntime==1.4.4", MEMBER, original)
        print(
            "prepare: took PP-OCRv4 detection from the rapidocr-onnxruntime wheel", file=sys.stderr
        )
    if not upgraded.exists():
        model = version_converter.convert_version(onnx.load(str(original)), 18)
        onnx.checker.check_model(model)
        partial = upgraded.with_suffix(".part")
        onnx.save(model, str(partial))
        partial.replace(upgraded)
        print(f"prepare: wrote {upgraded.name} (opset 18)", file=sys.stderr)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
