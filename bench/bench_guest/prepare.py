"""Put the benchmark guest's models in BUILD/models (once): PP-OCRv4's text
detector for the pre-processing case, MediaPipe's selfie segmentation and a
frame for the fused-IR case.

Run by build.sh before building the benchmark guest: `python prepare.py BUILD/models`,
with wasinn's tools/ on PYTHONPATH (for wheels.py and convert.py). The models come
from wheels on PyPI and are not committed.

The detector comes from the rapidocr-onnxruntime 1.4.4 wheel. It imports ONNX
opset 12; wasinn splices pre-processing (written for opset 18) only into models
whose operators mean the same, so the benchmark uses a copy upgraded to opset 18
with onnx's version converter (outputs unchanged on OpenVINO: max difference 0).

Selfie segmentation is ``selfie_segmentation.tflite`` of the mediapipe 0.10.14
wheel (its ``mediapipe/modules/`` go to BUILD/models/mediapipe-0.10.14, where
tests/test_convert_mediapipe.py looks for them too), converted to IR with
tools/convert.py (which translates its ``Convolution2DTransposeBias`` custom op):
the host reads TFLite only from a file, and wasinn fuses processing into IR. Its
frame is matplotlib's ``grace_hopper.jpg`` sample (a person, so the mask is not
empty) scaled to 480 rows and centred on grey 640x480, as raw RGB bytes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib.cbook  # build time only, from .venv
import numpy as np
import onnx
from convert import convert  # wasinn's tools/, on PYTHONPATH when build.sh runs this
from onnx import version_converter
from PIL import Image
from wheels import extract

MEMBER = "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx"
MEDIAPIPE = "mediapipe==0.10.14"
SELFIE = "selfie_segmentation/selfie_segmentation.tflite"
FRAME_H, FRAME_W = 480, 640  # bench_guest/fused_bench.py's FRAME_H, FRAME_W


def detector(models: Path) -> None:
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


def selfie(models: Path) -> None:
    tflite = models / "mediapipe-0.10.14" / SELFIE
    if not tflite.exists():
        extract(MEDIAPIPE, "mediapipe/modules/", tflite.parent.parent)
        print("prepare: took MediaPipe's models from the mediapipe 0.10.14 wheel", file=sys.stderr)
    xml = models / "bench" / "selfie_segmentation.xml"
    if not xml.exists() or xml.stat().st_mtime < tflite.stat().st_mtime:
        convert(tflite, xml)
        print("prepare: converted selfie segmentation (mediapipe 0.10.14) to IR", file=sys.stderr)
    frame = models / "bench" / f"selfie_frame_{FRAME_H}x{FRAME_W}.rgb"
    if not frame.exists():
        photo = Image.open(matplotlib.cbook.get_sample_data("grace_hopper.jpg", asfileobj=False))
        width = round(photo.width * FRAME_H / photo.height)
        canvas = Image.new("RGB", (FRAME_W, FRAME_H), (128, 128, 128))
        canvas.paste(photo.convert("RGB").resize((width, FRAME_H), Image.Resampling.BILINEAR),
                     ((FRAME_W - width) // 2, 0))  # fmt: skip
        partial = frame.with_suffix(".part")
        partial.parent.mkdir(parents=True, exist_ok=True)
        partial.write_bytes(np.asarray(canvas, np.uint8).tobytes())
        partial.replace(frame)
        print(f"prepare: wrote {frame.name}", file=sys.stderr)


def main(models: Path) -> None:
    detector(models)
    selfie(models)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
