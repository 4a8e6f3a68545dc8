"""``wasinn.ops``: each helper against numpy, natively on the OpenVINO-backed
fake host and in a real component (``tests/ops_app``), plus the per-signature
model cache and the misuse errors.

Resize is checked against a numpy implementation of WebNN's ``resample2d``
(ONNX ``half_pixel`` sampling, no antialiasing), and linear f32 also against
OpenCV's ``cv2.resize`` (``INTER_LINEAR``), which samples the same way.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from conftest import run_component

import wasinn
from wasinn import Tensor, ValidationError, ops

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "tests" / "ops_app"
NP = {
    "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64,
    "u8": np.uint8, "i32": np.int32, "i64": np.int64,
}  # fmt: skip
WEBNN_INDEX = {"int32": "i32", "int64": "i64"}
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
Arr = np.ndarray


# ---------------------------------------------------------------- numpy references


def taps(size: int, target: int) -> tuple[Arr, Arr, Arr]:
    """Linear half-pixel sampling: the two source indices and the second's weight."""
    src = np.maximum((np.arange(target) + 0.5) * (size / target) - 0.5, 0.0)
    low = np.minimum(np.floor(src).astype(int), size - 1)
    high = np.minimum(low + 1, size - 1)
    return low, high, np.where(low < size - 1, src - low, 0.0)


def nearest(size: int, target: int) -> Arr:
    """Nearest half-pixel sampling, halves rounding down (round_prefer_floor)."""
    src = (np.arange(target) + 0.5) * (size / target) - 0.5
    picked: Arr = np.clip(np.ceil(src - 0.5).astype(int), 0, size - 1)
    return picked


def resize_ref(x: Arr, size: list[int], mode: str = "linear", layout: str = "hwc") -> Arr:
    """WebNN resample2d on the height and width axes of ``layout``, in float64;
    u8 rounds to nearest, halves up."""
    hw = [layout.index("h"), layout.index("w")]
    y = x.astype(np.float64)
    for axis, target in zip(hw, size, strict=True):
        if mode == "linear":
            low, high, weight = taps(x.shape[axis], target)
            shape = [1] * x.ndim
            shape[axis] = target
            w = weight.reshape(shape)
            y = np.take(y, low, axis) * (1 - w) + np.take(y, high, axis) * w
        else:
            y = np.take(y, nearest(x.shape[axis], target), axis)
    if x.dtype == np.uint8:
        return np.floor(y + 0.5).astype(np.uint8)
    return y.astype(x.dtype)


def normalize_ref(
    x: Arr,
    mean: Any,
    std: Any,
    scale: float | None = None,
    layout: str = "hwc",
    out_layout: str = "chw",
    dtype: str = "f32",
) -> Arr:
    if scale is None:
        scale = 1 / 255 if x.dtype == np.uint8 else 1.0
    channel = layout.index("c")
    shape = [1] * x.ndim
    shape[channel] = -1
    m = np.broadcast_to(np.asarray(mean, np.float64), (x.shape[channel],)).reshape(shape)
    s = np.broadcast_to(np.asarray(std, np.float64), (x.shape[channel],)).reshape(shape)
    y = (x.astype(np.float64) * scale - m) / s
    src = layout if len(layout) == 4 else "n" + layout
    if len(layout) == 3:
        y = y[None]
    y = np.transpose(
        y, [src.index(a) for a in (out_layout if len(out_layout) == 4 else "n" + out_layout)]
    )
    if len(out_layout) == 3:
        y = y[0]
    return y.astype(NP[dtype])


def softmax_ref(x: Arr, axis: int = -1) -> Arr:
    wide = x.astype(np.float64)
    e = np.exp(wide - wide.max(axis=axis, keepdims=True))
    probs: Arr = (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)
    return probs


def argmax_ref(
    x: Arr, axis: int | None = -1, keepdims: bool = False, index_dtype: str = "i32"
) -> Arr:
    return np.asarray(np.argmax(x, axis=axis, keepdims=keepdims)).astype(
        NP[WEBNN_INDEX.get(index_dtype, index_dtype)]
    )


def topk_ref(x: Arr, k: int, axis: int | None = -1, index_dtype: str = "i32") -> list[Arr]:
    if axis is None:
        x, axis = x.reshape(-1), 0
    k = min(k, x.shape[axis])
    # A stable sort of the negated values: equal values keep index order.
    order = np.argsort(-x.astype(np.float64), axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    return [
        np.take_along_axis(x, idx, axis),
        idx.astype(NP[WEBNN_INDEX.get(index_dtype, index_dtype)]),
    ]


# ---------------------------------------------------------------- cases


def ints_as(
    dtype: str, low: int, high: int
) -> Callable[[np.random.Generator, tuple[int, ...]], Arr]:
    """Whole numbers in [low, high) as ``dtype``: many ties."""
    return lambda rng, shape: rng.integers(low, high, shape).astype(NP[dtype])


def floats_as(dtype: str) -> Callable[[np.random.Generator, tuple[int, ...]], Arr]:
    return lambda rng, shape: rng.uniform(-4, 4, shape).astype(NP[dtype])


U8 = ints_as("u8", 0, 256)
# id -> (helper, input maker, input shape, keyword arguments, reference)
CASES: dict[str, tuple[str, Any, tuple[int, ...], dict[str, Any], Callable[..., Any]]] = {
    "resize_u8_down": ("resize", U8, (37, 53, 3), {"size": [20, 31]}, resize_ref),
    "resize_u8_up": ("resize", U8, (9, 7, 3), {"size": [20, 15]}, resize_ref),
    "resize_u8_half": ("resize", U8, (48, 64, 3), {"size": [24, 32]}, resize_ref),
    "resize_f32_chw": (
        "resize", floats_as("f32"), (3, 11, 13), {"size": [7, 20], "layout": "chw"}, resize_ref,
    ),
    "resize_f16_nhwc_batch": (
        "resize", floats_as("f16"), (2, 10, 12, 1), {"size": [5, 6], "layout": "nhwc"},
        resize_ref,
    ),
    "resize_nearest_nchw": (
        "resize", U8, (1, 2, 9, 10),
        {"size": [4, 5], "mode": "nearest-neighbor", "layout": "nchw"}, resize_ref,
    ),
    "resize_nearest_alias": (
        "resize", U8, (8, 8, 3), {"size": [4, 12], "mode": "nearest"},
        lambda x, size, mode: resize_ref(x, size, "nearest-neighbor"),
    ),
    "resize_same_size": ("resize", U8, (5, 6, 3), {"size": [5, 6]}, resize_ref),
    "normalize_default": (
        "normalize", U8, (20, 30, 3), {"mean": MEAN, "std": STD}, normalize_ref,
    ),
    "normalize_nchw_f16": (
        "normalize", U8, (20, 30, 3),
        {"mean": MEAN, "std": STD, "out_layout": "nchw", "dtype": "f16"}, normalize_ref,
    ),
    "normalize_float_scalar": (
        "normalize", floats_as("f32"), (2, 3, 8, 9),
        {"mean": 0.5, "std": 0.25, "layout": "nchw", "out_layout": "nhwc"}, normalize_ref,
    ),
    "normalize_scale_squeeze": (
        "normalize", U8, (1, 6, 7, 3),
        {"mean": [127.5] * 3, "std": [127.5] * 3, "scale": 1, "layout": "nhwc"},
        normalize_ref,
    ),
    "normalize_identity": (
        "normalize", floats_as("f32"), (4, 5, 3), {"mean": 0, "std": 1, "out_layout": "hwc"},
        normalize_ref,
    ),
    "normalize_one_channel_hwc_out": (
        "normalize", ints_as("i32", -9, 9), (1, 5, 4), {"mean": [1], "std": [2], "layout": "chw",
                                                       "out_layout": "hwc"},
        normalize_ref,
    ),
    "resize_normalize": (
        "resize_normalize", U8, (40, 60, 3),
        {"size": [32, 32], "mean": MEAN, "std": STD, "out_layout": "nchw"},
        lambda x, size, **kw: normalize_ref(resize_ref(x, size), **kw),
    ),
    "resize_normalize_nearest_chw": (
        "resize_normalize", U8, (3, 17, 19),
        {"size": [8, 8], "mean": 0.5, "std": 0.5, "mode": "nearest", "layout": "chw",
         "out_layout": "hwc"},
        lambda x, size, mode, layout, **kw: normalize_ref(
            resize_ref(x, size, "nearest-neighbor", layout), layout=layout, **kw
        ),
    ),
    "softmax_last": ("softmax", floats_as("f32"), (4, 5, 17), {}, softmax_ref),
    "softmax_axis0": ("softmax", floats_as("f32"), (6, 3), {"axis": 0}, softmax_ref),
    "softmax_f16": ("softmax", floats_as("f16"), (3, 10), {"axis": -1}, softmax_ref),
    "softmax_1d": ("softmax", floats_as("f32"), (7,), {}, softmax_ref),
    "softmax_f64": ("softmax", floats_as("f64"), (2, 9), {}, softmax_ref),
    "argmax_last": ("argmax", ints_as("f32", 0, 4), (4, 5, 9), {}, argmax_ref),
    "argmax_axis1_keep": (
        "argmax", ints_as("i32", -3, 3), (3, 6, 4), {"axis": 1, "keepdims": True}, argmax_ref,
    ),
    "argmax_none": ("argmax", floats_as("f32"), (4, 6), {"axis": None}, argmax_ref),
    "argmax_none_keep": (
        "argmax", floats_as("f32"), (4, 6), {"axis": None, "keepdims": True}, argmax_ref,
    ),
    "argmax_1d_i64": ("argmax", U8, (10,), {"index_dtype": "i64"}, argmax_ref),
    "topk_ties": ("topk", ints_as("f32", 0, 4), (6, 40), {"k": 5}, topk_ref),
    "topk_axis0": ("topk", ints_as("i32", -3, 3), (12, 3), {"k": 4, "axis": 0}, topk_ref),
    "topk_u8": ("topk", ints_as("u8", 0, 5), (5, 30), {"k": 7}, topk_ref),
    "topk_f16": ("topk", ints_as("f16", 0, 3), (3, 20), {"k": 3}, topk_ref),
    "topk_k1": ("topk", ints_as("f32", 0, 2), (8, 10), {"k": 1}, topk_ref),
    "topk_k_all": ("topk", ints_as("f32", 0, 3), (4, 6), {"k": 10}, topk_ref),
    "topk_none_i64": (
        "topk", ints_as("f32", 0, 5), (3, 4, 5), {"k": 6, "axis": None, "index_dtype": "i64"},
        topk_ref,
    ),
    "topk_middle_axis": ("topk", ints_as("f32", 0, 3), (2, 9, 3), {"k": 3, "axis": 1}, topk_ref),
    "topk_i64": ("topk", ints_as("i64", -4, 4), (4, 8), {"k": 3}, topk_ref),
    "topk_f64": ("topk", ints_as("f64", -4, 4), (4, 8), {"k": 3, "index_dtype": "int64"}, topk_ref),
    "topk_distinct_wide": ("topk", floats_as("f32"), (2, 3, 6625), {"k": 5}, topk_ref),
}  # fmt: skip
# Types the OpenVINO-backed fake host cannot feed (numpy has no bf16 of its own):
# checked in the component only.
COMPONENT_ONLY: dict[str, tuple[str, Any, tuple[int, ...], dict[str, Any], Callable[..., Any]]] = {
    "softmax_bf16": ("softmax", floats_as("bf16"), (3, 8), {}, softmax_ref),
    "topk_bf16": ("topk", ints_as("bf16", 0, 3), (3, 12), {"k": 4}, topk_ref),
    "argmax_bf16": ("argmax", ints_as("bf16", 0, 3), (3, 12), {}, argmax_ref),
}  # fmt: skip
ALL = {**CASES, **COMPONENT_ONLY}


def case_input(case: str) -> Arr:
    _, make, shape, _, _ = ALL[case]
    rng = np.random.default_rng(
        int.from_bytes(hashlib.sha256(case.encode()).digest()[:8], "little")
    )
    return np.asarray(make(rng, shape))


def to_tensor(a: Arr) -> Tensor:
    dtype = next(name for name, np_type in NP.items() if np.dtype(np_type) == a.dtype)
    return Tensor(np.ascontiguousarray(a).tobytes(), shape=a.shape, dtype=dtype)


def to_array(t: Tensor) -> Arr:
    return np.frombuffer(t.tobytes(), NP[t.dtype]).reshape(t.shape)


def expected(case: str) -> list[Arr]:
    op, _, _, kwargs, reference = ALL[case]
    want = reference(case_input(case), **kwargs)
    return want if isinstance(want, list) else [want]


def assert_matches(case: str, got: list[Arr]) -> None:
    """Outputs equal numpy's: integers exactly (u8 resize may differ by 1 where
    the exact value is within 2**-9 of a half), floats to their precision."""
    want = expected(case)
    assert len(got) == len(want), case
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.shape == w.shape and g.dtype == w.dtype, (
            case,
            i,
            g.shape,
            w.shape,
            g.dtype,
            w.dtype,
        )
        if ALL[case][0] in ("resize", "resize_normalize") and case_input(case).dtype == np.uint8:
            exact = resize_exact(case)
            if ALL[case][0] == "resize":
                near_half = np.abs(exact - np.floor(exact) - 0.5) < 2**-9
                off = g.astype(int) != w.astype(int)
                assert np.abs(g.astype(int) - w.astype(int)).max() <= 1, case
                assert not (off & ~near_half).any(), f"{case}: differs away from halves"
                continue
        if w.dtype.kind in "iu":
            np.testing.assert_array_equal(g, w, err_msg=case)
        else:
            tol = 1e-2 if w.dtype in (np.float16, np.dtype(ml_dtypes.bfloat16)) else 2e-5
            if ALL[case][0] == "resize_normalize":
                # A resized pixel one off (at a half) moves the result by 1/255/std.
                tol = 1 / 255 / min(STD) + 1e-4
            np.testing.assert_allclose(
                g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol, err_msg=case
            )


def resize_exact(case: str) -> Arr:
    """The resize before rounding, in float64 (to tell halves apart)."""
    op, _, _, kwargs, _ = ALL[case]
    x = case_input(case).astype(np.float64)
    mode = kwargs.get("mode", "linear")
    return resize_ref(
        x,
        kwargs["size"],
        "nearest-neighbor" if mode == "nearest" else mode,
        kwargs.get("layout", "hwc"),
    )


def call(case: str) -> list[Tensor]:
    op, _, _, kwargs, _ = ALL[case]
    out = getattr(ops, op)(to_tensor(case_input(case)), **kwargs)
    return list(out) if isinstance(out, tuple) else [out]


@pytest.fixture
def fresh_ops() -> Iterator[None]:
    """An empty model cache before and after (models belong to one test's host)."""
    forget()
    yield
    forget()


def forget() -> None:
    for model in ops._models.values():
        model.close()
    ops._models.clear()
    ops._uses.clear()


# ---------------------------------------------------------------- the module


def test_the_module_is_public_and_documented() -> None:
    assert "ops" in wasinn.__all__ and wasinn.ops is ops
    assert "Example::" in (ops.__doc__ or "")
    own = sorted(
        name
        for name, value in vars(ops).items()
        if inspect.isfunction(value) and value.__module__ == ops.__name__
        and not name.startswith("_")
    )  # fmt: skip
    assert own == sorted(ops.__all__)
    for name in ops.__all__:
        doc = inspect.getdoc(getattr(ops, name)) or ""
        assert "Example::" in doc or ">>>" in doc, f"ops.{name} shows no example"


# ---------------------------------------------------------------- native


@pytest.mark.parametrize("case", list(CASES))
def test_native(case: str, ov_host: Any, fresh_ops: None) -> None:
    assert_matches(case, [to_array(t) for t in call(case)])


def test_linear_resize_is_opencvs(ov_host: Any, fresh_ops: None) -> None:
    """f32 linear resize samples like cv2.resize(INTER_LINEAR), up and down."""
    cv2 = pytest.importorskip("cv2")
    x = np.random.default_rng(3).uniform(0, 255, (31, 45, 3)).astype(np.float32)
    for size in ([15, 22], [64, 90], [31, 17]):
        got = to_array(ops.resize(to_tensor(x), size))
        want = cv2.resize(x, (size[1], size[0]), interpolation=cv2.INTER_LINEAR)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-3, err_msg=str(size))


def test_pillow_bilinear_is_not_the_same(ov_host: Any, fresh_ops: None) -> None:
    """Pillow's BILINEAR filters when shrinking: the docstring says so; this shows why."""
    image = pytest.importorskip("PIL.Image")
    x = np.random.default_rng(4).integers(0, 256, (40, 40, 3), dtype=np.uint8)
    ours = to_array(ops.resize(to_tensor(x), [10, 10])).astype(int)
    pillow = np.asarray(image.fromarray(x).resize((10, 10), image.BILINEAR)).astype(int)
    assert np.abs(ours - resize_ref(x, [10, 10]).astype(int)).max() <= 1
    assert np.abs(ours - pillow).max() > 10


def test_argmax_and_topk_agree_with_tensor_methods(ov_host: Any, fresh_ops: None) -> None:
    """Where they overlap, the helpers give Tensor.argmax / Tensor.topk's answers."""
    x = np.random.default_rng(5).integers(0, 6, (7, 50)).astype(np.float32)
    t = to_tensor(x)
    assert ops.argmax(t).tolist() == t.argmax(axis=-1)
    assert ops.argmax(t, axis=0).tolist() == t.argmax(axis=0)
    assert ops.argmax(t, axis=None).tolist() == t.argmax()
    values, indices = ops.topk(t, 9, axis=None)
    assert list(zip(indices.tolist(), values.tolist(), strict=True)) == t.topk(9)
    values, indices = ops.topk(t, 4)
    for row in range(7):
        pairs = to_tensor(x[row]).topk(4)
        assert list(zip(indices.tolist()[row], values.tolist()[row], strict=True)) == pairs


def test_topk_and_argmax_on_random_shapes(ov_host: Any, fresh_ops: None) -> None:
    """Many shapes, axes, k and dtypes, with ties everywhere; some called three
    times so that the exact-shape model runs too. (OpenVINO once got a tie
    order wrong only for some batch sizes: a spread of shapes is what finds it.)"""
    rng = np.random.default_rng(11)
    for trial in range(80):
        rank = int(rng.integers(1, 4))
        shape = tuple(int(d) for d in rng.integers(1, 12, rank))
        axis = int(rng.integers(-rank, rank))
        k = int(rng.integers(1, shape[axis] + 2))
        dtype = str(rng.choice(["f32", "i32", "u8", "f16", "i64"]))
        x = rng.integers(0, 4, shape).astype(NP[dtype])
        for _ in range(3 if trial % 4 == 0 else 1):
            values, indices = ops.topk(to_tensor(x), k, axis)
            want = topk_ref(x, k, axis)
            what = f"topk {dtype}{list(shape)} k={k} axis={axis}"
            np.testing.assert_array_equal(to_array(indices), want[1], err_msg=what)
            np.testing.assert_array_equal(to_array(values), want[0], err_msg=what)
            got = to_array(ops.argmax(to_tensor(x), axis))
            np.testing.assert_array_equal(got, argmax_ref(x, axis), err_msg=f"arg{what}")


def test_nan_is_skipped_by_argmax(ov_host: Any, fresh_ops: None) -> None:
    """As documented: the host skips NaN, Tensor.argmax (like numpy) takes the first NaN."""
    t = Tensor([[1.0, float("nan"), 3.0, 2.0]])
    assert ops.argmax(t).tolist() == [2]
    assert t.argmax(axis=-1) == [1]


def test_topk_zero_and_scalar_results(ov_host: Any, fresh_ops: None) -> None:
    values, indices = ops.topk(Tensor([[1.0, 2.0], [3.0, 4.0]]), 0)
    assert values.shape == indices.shape == (2, 0)
    assert (values.dtype, indices.dtype) == ("f32", "i32")
    assert not ov_host.calls, "k=0 needs no host"
    assert ops.argmax(Tensor([1.0, 5.0, 2.0])).shape == ()
    assert ops.argmax(Tensor([1.0, 5.0, 2.0])).item() == 1
    assert ops.argmax(Tensor(7.0), axis=None).item() == 0


# ---------------------------------------------------------------- the model cache


def loads(host: Any) -> int:
    """Models the host compiled (an ONNX model is first offered as "onnx", which
    the wasmtime host refuses, then as "openvino")."""
    return sum(1 for c in host.calls if c[:2] == ("load", "openvino"))


def test_one_dynamic_model_serves_every_size(ov_host: Any, fresh_ops: None) -> None:
    for h, w in ((10, 12), (30, 8), (7, 7)):
        image = to_tensor(np.zeros((h, w, 3), np.uint8))
        assert ops.resize(image, (5, 5)).shape == (5, 5, 3)
    assert loads(ov_host) == 1
    # Another signature (size, dtype, rank or option) is another model.
    ops.resize(to_tensor(np.zeros((10, 12, 3), np.uint8)), (6, 5))
    ops.resize(to_tensor(np.zeros((10, 12, 3), np.float32)), (5, 5))
    ops.resize(to_tensor(np.zeros((10, 12, 3), np.uint8)), (5, 5), mode="nearest")
    assert loads(ov_host) == 4


def test_an_image_shape_used_often_gets_its_own_model(ov_host: Any, fresh_ops: None) -> None:
    x = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)
    want = normalize_ref(x, MEAN, STD)
    for call_number in range(1, 7):
        got = to_array(ops.normalize(to_tensor(x), MEAN, STD))
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        # Call 1 compiles the dynamic model, call _STATIC_AFTER the exact one.
        assert loads(ov_host) == (1 if call_number < ops._STATIC_AFTER else 2)
    (dynamic, static) = ops._models.values()
    assert dynamic.inputs is not None and dynamic.inputs[0].shape == (None,) * 4
    assert static.inputs is not None and static.inputs[0].shape == (1, 4, 6, 3)
    # Another size still runs on the dynamic model, and is counted on its own.
    ops.normalize(to_tensor(x[:2]), MEAN, STD)
    assert loads(ov_host) == 2


def test_softmax_argmax_topk_stay_dynamic(ov_host: Any, fresh_ops: None) -> None:
    """Their exact-shape models ran no faster (topk's slower): one model each."""
    x = Tensor([[1.0, 2.0, 3.0]])
    for _ in range(ops._STATIC_AFTER + 2):
        ops.softmax(x)
        ops.argmax(x)
        ops.topk(x, 2)
    assert loads(ov_host) == 3
    assert all(m.inputs is not None and m.inputs[0].shape == (None, None)
               for m in ops._models.values())  # fmt: skip
    assert not ops._uses


def test_the_cache_closes_the_least_recently_used(
    ov_host: Any, fresh_ops: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ops._models, "size", 2)
    x = Tensor([[1.0, 2.0]])
    ops.softmax(x)
    first = ops._models.get(("softmax", 1, "f32", 2))
    ops.argmax(x)
    # Weakly: a model the app holds is not closed by eviction (see ModelCache).
    second = weakref.ref(ops._models.get(("argmax", 1, False, "i32", "f32", 2)))
    ops.softmax(x)  # used again: now the most recent
    ops.topk(x, 1)  # evicts argmax's model
    assert ops._models.keys() == [("softmax", 1, "f32", 2), ("topk", 1, 1, "i32", "f32", 2)]
    assert second() is None and first is not None and not first.closed
    assert ov_host.released == ["context", "graph"]


def test_shape_counts_are_bounded(
    ov_host: Any, fresh_ops: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ops, "_MAX_COUNTED", 3)
    for n in range(1, 8):
        ops.softmax(to_tensor(np.zeros((1, n), np.float32)))
    assert len(ops._uses) <= 3
    assert loads(ov_host) == 1


# ---------------------------------------------------------------- misuse


IMAGE = Tensor(bytes(2 * 3 * 3), shape=(2, 3, 3), dtype="u8")
LOGITS = Tensor([[1.0, 2.0, 3.0]])
MISUSE: dict[str, tuple[Callable[[], Any], str]] = {
    "resize dtype": (
        lambda: ops.resize(IMAGE.astype("i32"), (2, 2)),
        "ops.resize: the image is i32, but resize takes u8, f16, f32",
    ),
    "resize layout": (
        lambda: ops.resize(IMAGE, (2, 2), layout="whc"),
        "ops.resize: layout must be one of hwc, chw, nhwc, nchw, not 'whc'",
    ),
    "resize rank": (
        lambda: ops.resize(IMAGE, (2, 2), layout="nhwc"),
        "ops.resize: layout 'nhwc' needs a 4-D image, but its shape is [2, 3, 3]",
    ),
    "resize size": (
        lambda: ops.resize(IMAGE, (0, 2)),
        "ops.resize: size must be (height, width), two positive whole numbers, not (0, 2)",
    ),
    "resize size length": (
        lambda: ops.resize(IMAGE, [4]),
        "ops.resize: size must be (height, width)",
    ),
    "resize mode": (
        lambda: ops.resize(IMAGE, (2, 2), mode="area"),
        "ops.resize: mode must be 'linear', 'cubic' or 'nearest-neighbor' ('nearest'), not 'area'",
    ),
    "resize empty": (
        lambda: ops.resize(Tensor(b"", shape=(0, 3, 3), dtype="u8"), (2, 2)),
        "ops.resize: the image is empty (shape [0, 3, 3])",
    ),
    "resize not a tensor": (
        lambda: ops.resize("image.png", (2, 2)),
        "ops.resize: the image is not a tensor",
    ),
    "normalize mean length": (
        lambda: ops.normalize(IMAGE, [0.5, 0.5], 0.2),
        "ops.normalize: mean must be a number or 3 numbers (one per channel), not [0.5, 0.5]",
    ),
    "normalize std zero": (
        lambda: ops.normalize(IMAGE, 0.5, [0.2, 0.0, 0.2]),
        "ops.normalize: std must not be 0",
    ),
    "normalize std nan": (
        lambda: ops.normalize(IMAGE, 0.5, float("nan")),
        "ops.normalize: std must be finite",
    ),
    "normalize mean text": (
        lambda: ops.normalize(IMAGE, ["a", "b", "c"], 1),  # type: ignore[list-item]
        "ops.normalize: mean must hold numbers",
    ),
    "normalize dtype": (
        lambda: ops.normalize(IMAGE, 0.5, 0.5, dtype="u8"),
        "ops.normalize: dtype must be 'f32' or 'f16', not 'u8'",
    ),
    "normalize out_layout": (
        lambda: ops.normalize(IMAGE, 0.5, 0.5, out_layout="cwh"),
        "ops.normalize: out_layout must be one of hwc, chw, nhwc, nchw, not 'cwh'",
    ),
    "normalize batch squeeze": (
        lambda: ops.normalize(IMAGE.reshape(2, 1, 3, 3), 0.5, 0.5, layout="nhwc"),
        "ops.normalize: out_layout 'chw' has no batch axis, but the batch holds 2 images; "
        "use 'nchw'",
    ),
    "resize_normalize dtype": (
        lambda: ops.resize_normalize(IMAGE.astype("i64"), (2, 2), 0.5, 0.5),
        "ops.resize_normalize: the image is i64, but resize takes u8, f16, f32",
    ),
    "softmax dtype": (
        lambda: ops.softmax(Tensor([[1, 2]], dtype="i32")),
        "ops.softmax: the tensor is i32, but softmax takes f16, bf16, f32, f64",
    ),
    "softmax axis": (
        lambda: ops.softmax(LOGITS, axis=2),
        "ops.softmax: axis must be an integer from -2 to 1 for shape [1, 3], not 2",
    ),
    "softmax scalar": (
        lambda: ops.softmax(Tensor(1.0)),
        "ops.softmax: axis must be an integer (none: the tensor is a scalar) for shape []",
    ),
    "softmax empty": (
        lambda: ops.softmax(Tensor(b"", shape=(2, 0), dtype="f32")),
        "ops.softmax: the tensor is empty (shape [2, 0])",
    ),
    "argmax axis type": (
        lambda: ops.argmax(LOGITS, axis=1.0),  # type: ignore[arg-type]
        "ops.argmax: axis must be an integer from -2 to 1 for shape [1, 3], not 1.0",
    ),
    "argmax index dtype": (
        lambda: ops.argmax(LOGITS, index_dtype="u8"),
        "ops.argmax: index_dtype must be 'i32' or 'i64', not 'u8'",
    ),
    "argmax keepdims": (
        lambda: ops.argmax(LOGITS, keepdims=1),  # type: ignore[arg-type]
        "ops.argmax: keepdims must be True or False, not 1",
    ),
    "argmax empty": (
        lambda: ops.argmax(Tensor(b"", shape=(0,), dtype="f32")),
        "ops.argmax: the tensor is empty (shape [0])",
    ),
    "topk negative k": (
        lambda: ops.topk(LOGITS, -1),
        "ops.topk: k must be a whole number >= 0, not -1",
    ),
    "topk k type": (
        lambda: ops.topk(LOGITS, 2.0),  # type: ignore[arg-type]
        "ops.topk: k must be a whole number >= 0, not 2.0",
    ),
    "topk axis": (
        lambda: ops.topk(LOGITS, 1, axis=-3),
        "ops.topk: axis must be an integer from -2 to 1 for shape [1, 3], not -3",
    ),
}


@pytest.mark.parametrize("name", list(MISUSE))
def test_misuse(name: str, fake_host: Any, fresh_ops: None) -> None:
    fn, message = MISUSE[name]
    with pytest.raises(ValidationError) as info:
        fn()
    assert str(info.value).startswith(message), str(info.value)
    assert not fake_host.calls, "misuse must be caught before the host"


# ---------------------------------------------------------------- in a component

# Called 3 times in the component: for the image helpers (the first two) the
# third call runs on an exact-shape model.
REPEATED = ("resize_u8_down", "normalize_default", "softmax_last", "topk_ties")


@pytest.fixture(scope="module")
def component_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    workdir = tmp_path_factory.mktemp("ops_app")
    script = []
    for case in ALL:
        op, _, _, kwargs, _ = ALL[case]
        a = case_input(case)
        t = to_tensor(a)
        entry: dict[str, Any] = {
            "id": case, "op": op, "kwargs": kwargs,
            "input": {"dtype": t.dtype, "shape": list(t.shape), "hex": t.tobytes().hex()},
        }  # fmt: skip
        if case in REPEATED:
            entry["repeat"] = 3
        script.append(entry)
    (workdir / "ops_script.json").write_text(json.dumps(script))
    done = run_component(APP, "ops_script.json", cwd=workdir, timeout=900)
    done.assert_no_trap()
    lines = {line["id"]: line for line in done.lines}
    assert list(lines) == list(ALL), done.stderr[-2000:]
    return lines


@pytest.mark.integration
@pytest.mark.parametrize("case", list(ALL))
def test_in_component(component_results: dict[str, Any], case: str) -> None:
    line = component_results[case]
    assert "ok" in line, f"{case}: {line.get('error')}: {line.get('message')}"
    assert len(line["ok"]) == (3 if case in REPEATED else 1)
    for outputs in line["ok"]:
        got = [
            np.frombuffer(bytes.fromhex(t["hex"]), NP[t["dtype"]]).reshape(t["shape"])
            for t in outputs
        ]
        assert_matches(case, got)


@pytest.mark.integration
def test_component_cache_grows_per_signature(component_results: dict[str, Any]) -> None:
    """A repeated image case adds two models (dynamic, then its exact shape's),
    any other at most one; the count never passes the cap."""
    counts = [component_results[c]["models"] for c in ALL]
    assert max(counts) == ops._CACHE_SIZE
    for i, case in enumerate(ALL):
        before = counts[i - 1] if i else 0
        if case in REPEATED[:2] and before + 2 <= ops._CACHE_SIZE:
            assert counts[i] == before + 2, case
        elif before < ops._CACHE_SIZE:
            assert counts[i] - before in (0, 1), case
