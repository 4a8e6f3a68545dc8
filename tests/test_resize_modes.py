"""Resampling where other libraries sample: ``resample2d``'s and ``ops.resize``'s
``coordinate_mode`` and ``nearest_mode``.

Each mode is compared, natively on OpenVINO (the OpenVINO-backed fake host),
with the library it comes from: torch's ``F.interpolate`` (bilinear with and
without ``align_corners``, ``"nearest"``, ``"nearest-exact"``), OpenCV's
``cv2.resize`` (``INTER_LINEAR``, ``INTER_NEAREST``, ``INTER_NEAREST_EXACT``),
and, for the combinations no library names, onnxruntime running the same
ONNX Resize (the reference implementation of ONNX's definitions).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812 (torch's own spelling)
from builder_check import run_onnxruntime
from conftest import run_component

from wasinn import GraphBuilder, Tensor, ValidationError, ops
from wasinn._builder import _built

ROOT = Path(__file__).resolve().parent.parent
RNG = np.random.default_rng(7)
X = RNG.normal(size=(1, 2, 5, 7)).astype(np.float32)
# Up and down, odd and even, and a size of 1 (where pytorch_half_pixel differs).
SIZES = [(9, 13), (3, 4), (5, 7), (1, 3), (10, 14)]


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    _built.clear()
    yield
    _built.clear()


def resample(x: np.ndarray, size: tuple[int, int], **options: Any) -> np.ndarray:
    """``resample2d`` of ``x`` (NCHW f32) to ``size``, built and run on the host."""
    b = GraphBuilder()
    v = b.input("x", shape=list(x.shape), dtype="f32")
    model = b.build({"y": b.resample2d(v, sizes=list(size), **options)})
    y = model.run({"x": Tensor(x.tobytes(), shape=x.shape, dtype="f32")})["y"]
    return np.frombuffer(y.tobytes(), np.float32).reshape(y.shape)


def reference(x: np.ndarray, size: tuple[int, int], **options: Any) -> np.ndarray:
    """The same ONNX Resize, run by onnxruntime."""
    b = GraphBuilder()
    v = b.input("x", shape=list(x.shape), dtype="f32")
    data = b.to_onnx({"y": b.resample2d(v, sizes=list(size), **options)})
    return run_onnxruntime(data, {"x": x})["y"]


def torch_resize(x: np.ndarray, size: tuple[int, int], **options: Any) -> np.ndarray:
    out: np.ndarray = F.interpolate(torch.from_numpy(x), size=size, **options).numpy()
    return out


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize(
    ("options", "torch_options"),
    [
        ({"mode": "linear"}, {"mode": "bilinear", "align_corners": False}),
        ({"mode": "linear", "coordinate_mode": "pytorch_half_pixel"},
         {"mode": "bilinear", "align_corners": False}),
        ({"mode": "linear", "coordinate_mode": "align_corners"},
         {"mode": "bilinear", "align_corners": True}),
        ({"mode": "nearest-neighbor", "coordinate_mode": "asymmetric", "nearest_mode": "floor"},
         {"mode": "nearest"}),
        ({"mode": "nearest-neighbor", "nearest_mode": "round_prefer_ceil"},
         {"mode": "nearest-exact"}),
    ],
    ids=["half_pixel", "pytorch_half_pixel", "align_corners", "nearest-floor", "nearest-exact"],
)  # fmt: skip
def test_modes_torch_has_equal_torch(
    ov_host: Any, size: tuple[int, int], options: dict[str, Any], torch_options: dict[str, Any]
) -> None:
    if options.get("coordinate_mode") == "pytorch_half_pixel" and size[0] == 1:
        # ONNX defines the mode from torch 1.x; torch 2 samples a size of 1 at
        # its centre, as half_pixel does (checked with the half_pixel case).
        pytest.skip("ONNX's pytorch_half_pixel samples a size of 1 at 0, torch 2 at the centre")
    got = resample(X, size, **options)
    np.testing.assert_allclose(got, torch_resize(X, size, **torch_options), atol=2e-6)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("coordinate_mode", ["half_pixel", "pytorch_half_pixel",
                                             "align_corners", "asymmetric"])
@pytest.mark.parametrize("mode", ["linear", "round_prefer_floor", "round_prefer_ceil",
                                  "floor", "ceil"])  # fmt: skip
def test_every_combination_equals_onnxruntime(
    ov_host: Any, size: tuple[int, int], coordinate_mode: str, mode: str
) -> None:
    options: dict[str, Any] = {"coordinate_mode": coordinate_mode}
    if mode == "linear":
        options["mode"] = "linear"
    else:
        options.update(mode="nearest-neighbor", nearest_mode=mode)
    got = resample(X, size, **options)
    np.testing.assert_allclose(got, reference(X, size, **options), atol=2e-6)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize(("coordinate_mode", "corners"),
                         [("half_pixel", False), ("align_corners", True)])  # fmt: skip
def test_cubic_equals_torch_bicubic(
    ov_host: Any, size: tuple[int, int], coordinate_mode: str, corners: bool
) -> None:
    got = resample(X, size, mode="cubic", coordinate_mode=coordinate_mode)
    want = torch_resize(X, size, mode="bicubic", align_corners=corners)
    np.testing.assert_allclose(got, want, atol=5e-6)


@pytest.mark.parametrize("coordinate_mode", ["pytorch_half_pixel", "asymmetric"])
def test_cubic_in_the_other_modes_equals_onnxruntime(ov_host: Any, coordinate_mode: str) -> None:
    for size in SIZES:
        options = {"mode": "cubic", "coordinate_mode": coordinate_mode}
        np.testing.assert_allclose(resample(X, size, **options), reference(X, size, **options),
                                   atol=5e-6)  # fmt: skip


IMAGE = RNG.integers(0, 256, (6, 10, 3)).astype(np.uint8)


@pytest.mark.parametrize("size", [(18, 30), (4, 7)])
def test_ops_resize_cubic_like_opencv(ov_host: Any, size: tuple[int, int]) -> None:
    """Within 1 of cv2.INTER_CUBIC, which also saturates: a hard 0/255 edge
    overshoots past 255 and below 0 between the samples."""
    height, width = size
    smooth = cv2.resize(IMAGE, (20, 12), interpolation=cv2.INTER_CUBIC)
    edges = np.where(np.indices((12, 20)).sum(axis=0)[..., None] % 4 < 2, 255, 0)
    for source in (smooth, np.repeat(edges, 3, axis=2).astype(np.uint8)):
        t = Tensor(source.tobytes(), shape=source.shape, dtype="u8")
        got = np.frombuffer(ops.resize(t, size, mode="cubic").tobytes(), np.uint8)
        want = cv2.resize(source, (width, height), interpolation=cv2.INTER_CUBIC)
        assert np.abs(got.reshape(want.shape).astype(int) - want).max() <= 1


def resize_image(size: tuple[int, int], **options: Any) -> np.ndarray:
    y = ops.resize(Tensor(IMAGE.tobytes(), shape=IMAGE.shape, dtype="u8"), size, **options)
    return np.frombuffer(y.tobytes(), np.uint8).reshape(y.shape)


@pytest.mark.parametrize("size", [(12, 20), (3, 5), (9, 7)])
def test_ops_resize_nearest_like_opencv_and_torch(ov_host: Any, size: tuple[int, int]) -> None:
    height, width = size
    floor = resize_image(size, mode="nearest", coordinate_mode="asymmetric", nearest_mode="floor")
    cv = cv2.resize(IMAGE, (width, height), interpolation=cv2.INTER_NEAREST)
    assert np.array_equal(floor, cv)
    exact = resize_image(size, mode="nearest", nearest_mode="round_prefer_ceil")
    chw = torch.from_numpy(IMAGE.transpose(2, 0, 1)[None].copy())
    want = F.interpolate(chw, size=size, mode="nearest-exact")[0].numpy().transpose(1, 2, 0)
    assert np.array_equal(exact, want)
    # OpenCV's INTER_NEAREST_EXACT rounds a sample lying exactly halfway its own
    # way (6 -> 9 rows: row 4 samples 2.5, which it takes as 2): elsewhere it agrees.
    cv = cv2.resize(IMAGE, (width, height), interpolation=cv2.INTER_NEAREST_EXACT)
    assert (exact != cv).any(axis=2).sum() <= (exact.shape[1] if size == (9, 7) else 0)


@pytest.mark.parametrize("size", [(12, 20), (3, 5), (9, 7)])
def test_ops_resize_align_corners_like_torch(ov_host: Any, size: tuple[int, int]) -> None:
    got = resize_image(size, coordinate_mode="align_corners")
    chw = IMAGE.transpose(2, 0, 1)[None].astype(np.float32)
    want = torch_resize(chw, size, mode="bilinear", align_corners=True)[0].transpose(1, 2, 0)
    assert np.abs(got.astype(np.int16) - np.floor(want + 0.5).astype(np.int16)).max() == 0


def test_the_default_is_unchanged(ov_host: Any) -> None:
    linear = cv2.resize(IMAGE, (20, 12), interpolation=cv2.INTER_LINEAR)
    assert np.abs(resize_image((12, 20)).astype(int) - linear).max() <= 1


def test_misuse_says_what_would_be_right(ov_host: Any) -> None:
    image = Tensor(IMAGE.tobytes(), shape=IMAGE.shape, dtype="u8")
    with pytest.raises(ValidationError, match="coordinate_mode must be one of 'half_pixel'"):
        ops.resize(image, (3, 3), coordinate_mode="corners")
    with pytest.raises(ValidationError, match="nearest_mode applies to nearest-neighbor sampling"):
        ops.resize(image, (3, 3), nearest_mode="floor")
    with pytest.raises(ValidationError, match="nearest_mode applies to nearest-neighbor"):
        ops.resize(image, (3, 3), mode="cubic", nearest_mode="floor")
    with pytest.raises(ValidationError, match="nearest_mode must be one of"):
        ops.resize(image, (3, 3), mode="nearest", nearest_mode="round")
    b = GraphBuilder()
    x = b.input("x", shape=[1, 1, 4, 4], dtype="f32")
    with pytest.raises(ValidationError, match="resample2d: coordinate_mode must be one of"):
        b.resample2d(x, sizes=[2, 2], coordinate_mode="tf_crop_and_resize")
    with pytest.raises(ValidationError, match="resample2d: nearest_mode applies to nearest"):
        b.resample2d(x, mode="linear", sizes=[2, 2], nearest_mode="floor")


# ---------------------------------------------------------------- in a component

COMPONENT_CASES: dict[str, tuple[dict[str, Any], np.ndarray]] = {
    "nearest-floor": (
        {"size": [9, 17], "mode": "nearest", "coordinate_mode": "asymmetric",
         "nearest_mode": "floor"},
        cv2.resize(IMAGE, (17, 9), interpolation=cv2.INTER_NEAREST)),
    "nearest-exact": (
        {"size": [9, 17], "mode": "nearest", "nearest_mode": "round_prefer_ceil"},
        F.interpolate(torch.from_numpy(IMAGE.transpose(2, 0, 1)[None].copy()), size=(9, 17),
                      mode="nearest-exact")[0].numpy().transpose(1, 2, 0)),
    "align-corners": (
        {"size": [9, 17], "coordinate_mode": "align_corners"},
        np.floor(torch_resize(IMAGE.transpose(2, 0, 1)[None].astype(np.float32), (9, 17),
                              mode="bilinear", align_corners=True)[0].transpose(1, 2, 0)
                 + 0.5).astype(np.uint8)),
}  # fmt: skip


@pytest.mark.integration
def test_in_component(tmp_path: Path) -> None:
    script = [
        {"id": case, "op": "resize", "kwargs": kwargs,
         "input": {"dtype": "u8", "shape": list(IMAGE.shape), "hex": IMAGE.tobytes().hex()}}
        for case, (kwargs, _) in COMPONENT_CASES.items()
    ]  # fmt: skip
    (tmp_path / "script.json").write_text(json.dumps(script))
    done = run_component(ROOT / "tests" / "ops_app", "script.json", cwd=tmp_path, timeout=900)
    done.assert_no_trap()
    lines = {line["id"]: line for line in done.lines}
    for case, (_, want) in COMPONENT_CASES.items():
        assert "ok" in lines[case], lines[case]
        (out,) = lines[case]["ok"][0]
        got = np.frombuffer(bytes.fromhex(out["hex"]), np.uint8).reshape(out["shape"])
        assert np.array_equal(got, want), case
