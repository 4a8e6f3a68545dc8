"""The three PP-OCRv4 models in a real component equal native OpenVINO f32 on the same inputs.

The OCR app loads opset-18 copies of rapidocr's models (build/models/ocr,
written by apps/ocr/prepare.py); this runs each one, and each original, on
inputs made the way rapidocr makes them from a rendered line of text,
through the test guest (tests/guest_app) and through OpenVINO's Python API
with f32 precision, and compares the outputs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ROOT

pytestmark = pytest.mark.integration

MODELS = ROOT / "build" / "models" / "ocr"
ORIGINALS = MODELS / "rapidocr_onnxruntime" / "models"
FILES = {
    "det": ("det.onnx", "ch_PP-OCRv4_det_infer.onnx"),
    "cls": ("cls.onnx", "ch_ppocr_mobile_v2.0_cls_infer.onnx"),
    "rec": ("rec.onnx", "ch_PP-OCRv4_rec_infer.onnx"),
}


@pytest.fixture(scope="module")
def prepared() -> Path:
    """The models, prepared as `./build.sh build apps/ocr` prepares them."""
    if not all((MODELS / f).exists() for f, _ in FILES.values()):
        subprocess.run(
            [sys.executable, str(ROOT / "apps/ocr/prepare.py"), str(ROOT / "build/models")],
            env={**os.environ, "PYTHONPATH": str(ROOT / "tools")},
            check=True,
        )
    return MODELS


def text_image(height: int, width: int) -> np.ndarray:
    """A line of dark text on a light background, u8 BGR, as rapidocr's models see images."""
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", (width, height), (245, 240, 230))
    font = ImageFont.load_default(size=max(10, height * 2 // 3))  # Pillow's own scalable font
    ImageDraw.Draw(img).text((4, 2), "Total 42.50 EUR", fill=(20, 20, 60), font=font)
    return np.asarray(img)[:, :, ::-1].copy()


def normalized(bgr: np.ndarray) -> np.ndarray:
    """rapidocr's normalisation: (v / 255 - 0.5) / 0.5, NCHW f32."""
    x = (bgr.astype(np.float32) / 255.0 - 0.5) / 0.5
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None])


INPUTS = {
    "det": lambda: normalized(text_image(96, 160)),
    "cls": lambda: np.concatenate(
        [normalized(text_image(48, 192)), normalized(text_image(48, 192)[::-1, ::-1])]
    ),
    "rec": lambda: normalized(text_image(48, 320)),
}


def native(path: Path, x: np.ndarray) -> np.ndarray:
    import openvino as ov

    core = ov.Core()
    compiled = core.compile_model(str(path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    return np.asarray(compiled({"x": x})[compiled.outputs[0]])


def in_guest(guest: Any, paths: list[Path], x: np.ndarray) -> list[np.ndarray]:
    """``x`` through each model in ``paths``, one component run (later models replace earlier)."""
    tensor = {"dtype": "f32", "shape": list(x.shape), "hex": x.tobytes().hex()}
    steps: list[dict[str, Any]] = []
    for i, path in enumerate(paths):
        if i:
            steps.append({"load_model": {"path": f"/models/ocr/{path.relative_to(MODELS)}"}})
        steps.append({"run": {"x": tensor}})
    first = f"/models/ocr/{paths[0].relative_to(MODELS)}"
    done = guest({"load": {"path": first}, "steps": steps})
    done.assert_no_trap()
    assert done.code == 0, done.stderr
    results = []
    for line in done.stdout.splitlines()[1:]:
        outputs = json.loads(line)["ok"]
        if "inputs" in outputs:  # a load_model step describes the model it loaded
            continue
        (only,) = outputs.values()
        results.append(np.frombuffer(bytes.fromhex(only["hex"]), np.float32).reshape(only["shape"]))
    return results


@pytest.mark.parametrize("model", sorted(FILES))
def test_model_outputs_equal_native_openvino(guest: Any, prepared: Path, model: str) -> None:
    """The app's opset-18 copy and rapidocr's original, each against native OpenVINO f32."""
    converted, original = FILES[model]
    paths = [prepared / converted, ORIGINALS / original]
    x = INPUTS[model]()
    got = in_guest(guest, paths, x)
    assert len(got) == 2
    for path, out in zip(paths, got, strict=True):
        want = native(path, x)
        assert out.shape == want.shape
        worst = float(np.abs(out - want).max())
        assert worst <= 1e-5, f"{path.name} differs from native OpenVINO by {worst}"
    if model == "det":
        assert native(paths[0], x).max() > 0.3, "the rendered text should be detected"
