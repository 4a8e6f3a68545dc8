"""``ops.warp_affine`` and ``ops.warp_perspective`` against OpenCV's
``cv2.warpAffine`` and ``cv2.warpPerspective`` on the same image, natively on
OpenVINO (the OpenVINO-backed fake host): within 1 level on a u8 photo-like
image for linear and cubic sampling, borders constant and replicate.

OpenCV works out sampling positions in fixed point (1/32 pixel) and wasinn in
f32, so on sharp edges (noise) the two differ by more; the test image is
smooth, as photos are between edges.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from conftest import run_component

from wasinn import GraphBuilder, Tensor, ValidationError, ops

ROOT = Path(__file__).resolve().parent.parent

RNG = np.random.default_rng(11)
# A smooth 48x64 colour image: upscaled noise, as a photo is between its edges.
IMAGE = cv2.resize(RNG.integers(0, 256, (6, 8, 3)).astype(np.uint8), (64, 48),
                   interpolation=cv2.INTER_CUBIC)  # fmt: skip
AFFINE = np.array([[0.9, -0.3, 12.5], [0.25, 1.1, -4.25]])
PERSPECTIVE = np.array([[1.1, 0.2, -5.0], [-0.1, 0.95, 3.0], [0.0015, -0.001, 1.0]])
FLAGS = {"linear": cv2.INTER_LINEAR, "cubic": cv2.INTER_CUBIC}
BORDERS = {"constant": cv2.BORDER_CONSTANT, "replicate": cv2.BORDER_REPLICATE}


@pytest.fixture(autouse=True)
def fresh_ops() -> Iterator[None]:
    ops._models.clear()
    yield
    ops._models.clear()


def pixels(t: Tensor) -> np.ndarray:
    return np.frombuffer(t.tobytes(), np.uint8).reshape(t.shape)


def image() -> Tensor:
    return Tensor(IMAGE.tobytes(), shape=IMAGE.shape, dtype="u8")


@pytest.mark.parametrize("border", ["constant", "replicate"])
@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("size", [(48, 64), (30, 70)])
def test_warp_affine_equals_opencv(ov_host: Any, mode: str, border: str, size: tuple) -> None:
    got = pixels(ops.warp_affine(image(), AFFINE.tolist(), size, mode=mode, border=border))
    want = cv2.warpAffine(IMAGE, AFFINE, size[::-1], flags=FLAGS[mode], borderMode=BORDERS[border])
    assert got.shape == want.shape
    assert np.abs(got.astype(int) - want).max() <= 1


@pytest.mark.parametrize("border", ["constant", "replicate"])
@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_warp_perspective_equals_opencv(ov_host: Any, mode: str, border: str) -> None:
    got = pixels(ops.warp_perspective(image(), PERSPECTIVE, (48, 64), mode=mode, border=border))
    want = cv2.warpPerspective(IMAGE, PERSPECTIVE, (64, 48), flags=FLAGS[mode],
                               borderMode=BORDERS[border])  # fmt: skip
    assert np.abs(got.astype(int) - want).max() <= 1


def test_border_value_and_float_images(ov_host: Any) -> None:
    got = pixels(ops.warp_affine(image(), AFFINE, (48, 64), border_value=200))
    want = cv2.warpAffine(IMAGE, AFFINE, (64, 48), borderValue=(200, 200, 200))
    assert np.abs(got.astype(int) - want).max() <= 1
    x = IMAGE.astype(np.float32) / 255
    out = ops.warp_affine(Tensor(x.tobytes(), shape=x.shape, dtype="f32"), AFFINE, (48, 64))
    got_f = np.frombuffer(out.tobytes(), np.float32).reshape(out.shape)
    want_f = cv2.warpAffine(x, AFFINE, (64, 48))
    assert np.abs(got_f - want_f).max() <= 1.5 / 255


def test_nearest_takes_the_same_pixels_almost_everywhere(ov_host: Any) -> None:
    got = pixels(ops.warp_affine(image(), AFFINE, (48, 64), mode="nearest"))
    want = cv2.warpAffine(IMAGE, AFFINE, (64, 48), flags=cv2.INTER_NEAREST)
    # OpenCV rounds its fixed-point positions; a position within 1/64 pixel of
    # halfway may round the other way.
    assert (got != want).any(axis=2).mean() < 0.01


def test_one_compiled_model_serves_every_matrix(ov_host: Any) -> None:
    ops.warp_affine(image(), AFFINE, (48, 64))
    loads = sum(1 for c in ov_host.calls if c[0] == "load")
    turned = cv2.getRotationMatrix2D((32, 24), 30, 0.8)
    got = pixels(ops.warp_affine(image(), turned, (48, 64)))
    assert sum(1 for c in ov_host.calls if c[0] == "load") == loads
    assert np.abs(got.astype(int) - cv2.warpAffine(IMAGE, turned, (64, 48))).max() <= 1


@pytest.mark.parametrize("corners", [False, True])
@pytest.mark.parametrize("padding", ["zeros", "border"])
@pytest.mark.parametrize(
    ("mode", "torch_mode"),
    [("linear", "bilinear"), ("cubic", "bicubic"), ("nearest-neighbor", "nearest")],
)
def test_grid_sample_equals_torch(
    ov_host: Any, mode: str, torch_mode: str, padding: str, corners: bool
) -> None:
    """The builder operation under the warps, against torch's F.grid_sample."""
    import torch
    import torch.nn.functional as F  # noqa: N812 (torch's own spelling)

    x = RNG.normal(size=(2, 3, 5, 6)).astype(np.float32)
    # Positions inside, on and outside the edges, none exactly halfway between pixels.
    grid = RNG.uniform(-1.3, 1.3, size=(2, 4, 7, 2)).astype(np.float32)
    b = GraphBuilder()
    v, g = b.input("x", shape=list(x.shape), dtype="f32"), b.input("g", shape=list(grid.shape))
    model = b.build({"y": b.grid_sample(v, g, mode=mode, padding_mode=padding,
                                        align_corners=corners)})  # fmt: skip
    out = model.run({"x": Tensor(x.tobytes(), shape=x.shape, dtype="f32"),
                     "g": Tensor(grid.tobytes(), shape=grid.shape, dtype="f32")})["y"]  # fmt: skip
    got = np.frombuffer(out.tobytes(), np.float32).reshape(out.shape)
    want = F.grid_sample(torch.from_numpy(x), torch.from_numpy(grid), mode=torch_mode,
                         padding_mode=padding, align_corners=corners).numpy()  # fmt: skip
    np.testing.assert_allclose(got, want, atol=2e-5)


def test_misuse_says_what_would_be_right(ov_host: Any) -> None:
    with pytest.raises(ValidationError, match="matrix must be 2x3 numbers"):
        ops.warp_affine(image(), [[1, 0], [0, 1]], (4, 4))
    with pytest.raises(ValidationError, match="singular"):
        ops.warp_perspective(image(), [[1, 2, 3], [2, 4, 6], [0, 0, 1]], (4, 4))
    with pytest.raises(ValidationError, match="border must be 'constant' or 'replicate'"):
        ops.warp_affine(image(), AFFINE, (4, 4), border="reflect")
    with pytest.raises(ValidationError, match="mode must be 'linear', 'cubic' or 'nearest'"):
        ops.warp_affine(image(), AFFINE, (4, 4), mode="area")
    with pytest.raises(ValidationError, match="border_value applies to border='constant'"):
        ops.warp_affine(image(), AFFINE, (4, 4), border="replicate", border_value=3)


# ---------------------------------------------------------------- in a component

CASES: dict[str, tuple[str, dict[str, Any], np.ndarray]] = {
    "affine-linear-constant": ("warp_affine", {"mode": "linear", "border": "constant"},
                               cv2.warpAffine(IMAGE, AFFINE, (64, 48))),
    "affine-cubic-replicate": ("warp_affine", {"mode": "cubic", "border": "replicate"},
                               cv2.warpAffine(IMAGE, AFFINE, (64, 48), flags=cv2.INTER_CUBIC,
                                              borderMode=cv2.BORDER_REPLICATE)),
    "perspective-linear-replicate": ("warp_perspective",
                                     {"mode": "linear", "border": "replicate"},
                                     cv2.warpPerspective(IMAGE, PERSPECTIVE, (64, 48),
                                                         borderMode=cv2.BORDER_REPLICATE)),
    "perspective-cubic-constant": ("warp_perspective", {"mode": "cubic"},
                                   cv2.warpPerspective(IMAGE, PERSPECTIVE, (64, 48),
                                                       flags=cv2.INTER_CUBIC)),
}  # fmt: skip


@pytest.mark.integration
def test_in_component(tmp_path: Path) -> None:
    script = []
    for case, (op, options, _) in CASES.items():
        matrix = (AFFINE if op == "warp_affine" else PERSPECTIVE).tolist()
        script.append({
            "id": case, "op": op, "kwargs": {"matrix": matrix, "size": [48, 64], **options},
            "input": {"dtype": "u8", "shape": list(IMAGE.shape), "hex": IMAGE.tobytes().hex()},
        })  # fmt: skip
    (tmp_path / "script.json").write_text(json.dumps(script))
    done = run_component(ROOT / "tests" / "ops_app", "script.json", cwd=tmp_path, timeout=900)
    done.assert_no_trap()
    lines = {line["id"]: line for line in done.lines}
    for case, (_, _, want) in CASES.items():
        assert "ok" in lines[case], lines[case]
        (out,) = lines[case]["ok"][0]
        got = np.frombuffer(bytes.fromhex(out["hex"]), np.uint8).reshape(out["shape"])
        assert np.abs(got.astype(int) - want).max() <= 1, case
