"""MediaPipe's selfie segmentation, its whole pipeline, against the same in wasinn.

Oracle: ``mediapipe.solutions.selfie_segmentation.SelfieSegmentation(
model_selection=0).process(image).segmentation_mask`` from the mediapipe
0.10.14 wheel (its general 256 x 256 model), run natively in a venv of its own
(``mediapipe_oracle.py``, which also says what the pipeline does step by step).

wasinn: ``selfie_segmentation.tflite`` from the same wheel converted to IR by
``tools/convert.py`` and loaded with ``Model.load(xml, preprocess=...,
postprocess=...)``: MediaPipe's pre- and post-processing, written with the
builder (``builder_app/fused_cases.selfie``), spliced into the IR, so the
host runs image in, mask out. Natively,
on OpenVINO's CPU plugin at f32 (the ``ov_host`` fixture).

The photographs are scikit-image's sample data, taken out of its wheel:
``astronaut`` (NASA, public domain), ``camera`` (CC0, Lav Varshney),
``coffee`` (CC0, Rachel Michetti) and ``chelsea`` (CC0, Stefan van der
Walt), plus a portrait crop and a small copy of ``astronaut`` made here.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import mediapipe_oracle
import numpy as np
import oracle_venv
import pytest
from builder_app.fused_cases import selfie
from conftest import ROOT

from wasinn import Model

sys.path.insert(0, str(ROOT / "tools"))
from convert import convert  # noqa: E402
from wheels import extract  # noqa: E402

MODEL = ROOT / "build" / "models" / "mediapipe-0.10.14" / "selfie_segmentation"
PHOTOS = ROOT / "build" / "models" / "scikit-image-0.24.0"

# How far wasinn's mask may be from MediaPipe's, per image: max |difference|,
# mean |difference|, and the least IoU of the masks > 0.5. Measured (OpenVINO
# 2026.4.1, f32, on an x86-64 CPU with AVX-512) in the comment after each.
#
# OpenCV's warp rounds each sampling position x * W / 256 to 1/32 pixel. When
# both sides of the image are multiples of 8 those positions are already
# multiples of 1/32, the model's 256 x 256 input is the same on both sides to
# the bit, and what is left is XNNPACK's arithmetic against OpenVINO's (the
# model alone, on one input, differs by at most 1e-4). Otherwise the rounded
# positions move some input values by 1 or 2 (of 255), and the network turns
# that into differences up to ~0.2 at a few pixels on the mask's edges.
LIMITS: dict[str, tuple[float, float, float]] = {
    "astronaut": (1e-3, 1e-5, 0.9999),  # 512x512: 5.7e-5, 8.3e-8, 1.0
    "camera": (1e-3, 1e-5, 0.9999),  # 512x512 (grey): 1.8e-5, 6.7e-8, 1.0
    "coffee": (1e-3, 1e-5, 0.9999),  # 400x600, no person: 4.5e-5, 3.1e-7, 1.0
    "astronaut_crop": (1e-3, 1e-5, 0.9999),  # 512x360: 6.3e-5, 5.0e-7, 1.0
    "chelsea": (0.25, 3e-3, 0.997),  # 300x451, a cat: 0.177, 1.5e-3, 0.99847
    "astronaut_small": (0.08, 1e-3, 0.9995),  # 171x128, upsampled: 0.033, 2.7e-4, 0.99983
}
PEOPLE = {"astronaut", "camera", "astronaut_crop", "astronaut_small"}


def photos() -> dict[str, np.ndarray]:
    """The test images, RGB u8 [H, W, 3], by name (the PNGs are taken out of
    the scikit-image wheel once and kept in build/models)."""
    from PIL import Image

    if not (PHOTOS / "astronaut.png").exists():
        extract("scikit-image==0.24.0", "skimage/data/", PHOTOS)

    def read(name: str) -> np.ndarray:
        with Image.open(PHOTOS / f"{name}.png") as image:
            return np.asarray(image.convert("RGB"))

    astronaut = read("astronaut")
    return {
        "astronaut": astronaut,
        "camera": read("camera"),
        "coffee": read("coffee"),
        "astronaut_crop": np.ascontiguousarray(astronaut[:, 60:420]),
        "chelsea": read("chelsea"),
        "astronaut_small": np.ascontiguousarray(astronaut[::3, ::4]),
    }


@pytest.fixture(scope="module")
def images() -> dict[str, np.ndarray]:
    return photos()


@pytest.fixture(scope="module")
def oracle(images: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """MediaPipe's masks, by image name."""
    try:
        mediapipe_oracle.ensure_venv()
    except oracle_venv.Unavailable as exc:
        pytest.fail(f"the mediapipe 0.10.14 venv (build/venv-mediapipe) cannot be made: {exc}")
    return mediapipe_oracle.masks(images)


@pytest.fixture(scope="module")
def xml(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tflite = MODEL / "selfie_segmentation.tflite"
    if not tflite.exists():
        extract("mediapipe==0.10.14", "mediapipe/modules/", MODEL.parent)
    return convert(tflite, tmp_path_factory.mktemp("selfie") / "selfie_segmentation.xml")


def wasinn_mask(ov_host: Any, xml: Path, image: np.ndarray, **wrong: Any) -> np.ndarray:
    # The component's host computes in f32; so does this one, whatever the CPU.
    ov_host.core.set_property("CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    height, width, _ = image.shape
    preprocess, postprocess = selfie(height, width, **wrong)
    with Model.load(xml, preprocess=preprocess, postprocess=postprocess) as model:
        assert [str(s) for s in model.inputs] == [f"image: u8[{height}, {width}, 3]"]
        assert [str(s) for s in model.outputs] == [f"mask: f32[{height}, {width}]"]
        mask: np.ndarray = model.run_numpy({"image": image})["mask"]
    return mask


def agreement(got: np.ndarray, want: np.ndarray) -> tuple[float, float, float]:
    """max |difference|, mean |difference|, IoU of the masks > 0.5."""
    diff = np.abs(got.astype(np.float64) - want)
    a, b = got > 0.5, want > 0.5
    return float(diff.max()), float(diff.mean()), float((a & b).sum() / (a | b).sum())


@pytest.mark.parametrize("name", list(LIMITS))
def test_the_fused_model_gives_mediapipes_mask(
    ov_host: Any, xml: Path, images: dict[str, np.ndarray], oracle: dict[str, np.ndarray],
    name: str,
) -> None:  # fmt: skip
    image, want = images[name], oracle[name]
    assert want.shape == image.shape[:2] and want.dtype == np.float32
    if name in PEOPLE:  # the oracle segments: a person covers part of the photo
        assert 0.2 < (want > 0.5).mean() < 0.8
    got = wasinn_mask(ov_host, xml, image)
    assert got.shape == want.shape and got.dtype == np.float32
    worst, mean, iou = agreement(got, want)
    print(f"{name} {image.shape[0]}x{image.shape[1]}: max |diff| {worst:.3g}, "
          f"mean {mean:.3g}, IoU(>0.5) {iou:.5f}")  # fmt: skip
    max_limit, mean_limit, iou_limit = LIMITS[name]
    assert worst <= max_limit and mean <= mean_limit and iou >= iou_limit, (worst, mean, iou)


@pytest.mark.parametrize(
    ("name", "wrong"),
    [
        # Half-pixel sampling (cv::resize's, WebNN's): measured 0.60, 7.5e-3, 0.9922.
        ("astronaut", {"sampling": "half_pixel"}),
        # Interpolating without rounding to u8: measured 0.12, 1.1e-3, 0.9958.
        ("coffee", {"rounded": False}),
        # Clamping at the edge instead of OpenCV's zero border: measured 0.19, 1.4e-3, 0.9978.
        ("astronaut_small", {"zero_border": False}),
    ],
)
def test_each_step_of_the_emulation_matters(
    ov_host: Any, xml: Path, images: dict[str, np.ndarray], oracle: dict[str, np.ndarray],
    name: str, wrong: dict[str, Any],
) -> None:  # fmt: skip
    """The limits above are tight enough to catch a plausible mistake in each
    part of MediaPipe's pre-processing."""
    worst, mean, iou = agreement(wasinn_mask(ov_host, xml, images[name], **wrong), oracle[name])
    max_limit, mean_limit, iou_limit = LIMITS[name]
    assert worst > max_limit or mean > mean_limit or iou < iou_limit, (worst, mean, iou)
    assert worst > 0.1, (worst, mean, iou)


@pytest.mark.integration
def test_the_fused_model_in_a_component(
    ov_host: Any, xml: Path, images: dict[str, np.ndarray], oracle: dict[str, np.ndarray],
    tmp_path: Path,
) -> None:  # fmt: skip
    """The same fused model under wasmtime + OpenVINO (tests/builder_app) gives
    the native run's mask, so MediaPipe's too."""
    from builder_check import APP, decode
    from conftest import run_component

    for part in (xml, xml.with_suffix(".bin")):
        (tmp_path / part.name).write_bytes(part.read_bytes())
    names = ["astronaut", "astronaut_small"]  # with and without the zero border
    script = [
        {
            "fused": xml.name,
            "processing": {"selfie": list(images[name].shape[:2])},
            "inputs": {"image": {"dtype": "u8", "shape": list(images[name].shape),
                                 "hex": images[name].tobytes().hex()}},
        }
        for name in names
    ]  # fmt: skip
    (tmp_path / "selfie.json").write_text(json.dumps(script))
    done = run_component(APP, "selfie.json", cwd=tmp_path, timeout=600)
    done.assert_no_trap()
    lines = done.lines
    assert len(lines) == len(names), done.stderr[-2000:]
    for name, line in zip(names, lines, strict=True):
        assert "ok" in line, line
        got = decode(line["ok"]["mask"])
        native = wasinn_mask(ov_host, xml, images[name])
        assert got.shape == native.shape and got.dtype == np.float32
        assert np.abs(got - native).max() <= 1e-5  # measured: identical
        worst, mean, iou = agreement(got, oracle[name])
        max_limit, mean_limit, iou_limit = LIMITS[name]
        assert worst <= max_limit and mean <= mean_limit and iou >= iou_limit, (worst, mean, iou)
