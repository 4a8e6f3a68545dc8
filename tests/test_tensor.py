"""Tensor construction and codecs, natively, with numpy and ml_dtypes as the oracle."""

from __future__ import annotations

import array
import math
import struct

import ml_dtypes
import numpy as np
import pytest

from wasinn import DTYPES, Tensor, ValidationError

NP = {
    "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64,
    "u8": np.uint8, "i32": np.int32, "i64": np.int64,
}  # fmt: skip
FLOAT_VALUES = [0.0, -0.0, 1.0, -2.5, 3.14159, 1e-3, 6.1e-5, 5.9e-8, 65504.0, 65519.0,
                1e5, -1e5, 3.0e38, float("inf"), float("-inf"), 1.0 / 3.0, 0.1, 255.75]  # fmt: skip
INT_VALUES = {"u8": [0, 1, 127, 128, 255], "i32": [0, -1, 2**31 - 1, -(2**31), 12345],
              "i64": [0, -1, 2**63 - 1, -(2**63), 2**40]}  # fmt: skip


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32", "f64"])
def test_float_encoding_matches_numpy(dtype: str) -> None:
    values = FLOAT_VALUES + [float(v) for v in np.random.default_rng(0).normal(0, 100, 500)]
    with np.errstate(over="ignore"):
        expected = (
            np.array(values, dtype=np.float64).astype(np.float32).astype(NP[dtype])
            if dtype == "bf16"
            else np.array(values, dtype=np.float64).astype(NP[dtype])
        )
    t = Tensor(values, dtype=dtype)
    assert t.tobytes() == expected.tobytes()
    assert t.tolist() == expected.astype(np.float64).tolist()


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_half_decoding_matches_numpy_for_every_bit_pattern(dtype: str) -> None:
    every = np.arange(2**16, dtype=np.uint16)
    decoded = Tensor(every.tobytes(), dtype=dtype).tolist()
    with np.errstate(invalid="ignore"):
        expected = every.view(NP[dtype]).astype(np.float64)
    nan = np.isnan(expected)
    assert all(math.isnan(v) for v, n in zip(decoded, nan, strict=True) if n)
    assert [v for v, n in zip(decoded, nan, strict=True) if not n] == expected[~nan].tolist()


def test_nan_survives_half_encodings() -> None:
    for dtype in ("f16", "bf16", "f32", "f64"):
        assert math.isnan(Tensor([float("nan")], dtype=dtype).item())


@pytest.mark.parametrize("dtype", ["u8", "i32", "i64"])
def test_int_round_trip(dtype: str) -> None:
    values = INT_VALUES[dtype]
    t = Tensor(values, dtype=dtype)
    assert t.tobytes() == np.array(values, dtype=NP[dtype]).tobytes()
    assert t.tolist() == values


@pytest.mark.parametrize("dtype,bad", [("u8", 256), ("u8", -1), ("i32", 2**31), ("i64", 2**63)])
def test_int_overflow_is_refused(dtype: str, bad: int) -> None:
    with pytest.raises(ValidationError, match=f"does not fit in {dtype}"):
        Tensor([bad], dtype=dtype)


def test_fractional_value_for_int_dtype_is_refused() -> None:
    with pytest.raises(ValidationError, match="not a whole number"):
        Tensor([1.5], dtype="i32")
    assert Tensor([2.0], dtype="i32").tolist() == [2]


def test_bytes_are_kept_without_copy_and_reinterpreted() -> None:
    raw = struct.pack("<4f", 1, 2, 3, 4)
    t = Tensor(raw, shape=(2, 2), dtype="f32")
    assert t.tobytes() is raw
    assert t.data.obj is raw and t.data.readonly
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert Tensor(raw).dtype == "u8" and Tensor(raw).shape == (16,)


def test_byte_length_must_match_shape_and_dtype() -> None:
    with pytest.raises(
        ValidationError,
        match=r"15 bytes of data do not fill shape \[2, 2\] of f32: that needs 4 x 4 = 16",
    ):
        Tensor(bytes(15), shape=(2, 2), dtype="f32")
    with pytest.raises(ValidationError, match="not a whole number of f32 elements"):
        Tensor(bytes(6), dtype="f32")


def test_array_and_numpy_buffers_keep_their_dtype_and_shape() -> None:
    assert Tensor(array.array("f", [1, 2])).dtype == "f32"
    assert Tensor(array.array("d", [1, 2])).dtype == "f64"
    assert Tensor(array.array("q", [1, 2])).dtype == "i64"
    assert Tensor(array.array("B", [1, 2])).dtype == "u8"
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = Tensor(a)
    assert (t.shape, t.dtype, t.tolist()) == ((2, 3), "i32", a.tolist())
    # A typed buffer with another dtype is converted by value.
    assert Tensor(array.array("f", [1.5, 2.5]), dtype="f16").tolist() == [1.5, 2.5]
    with pytest.raises(ValidationError, match="buffer format 'h' has no wasi-nn dtype"):
        Tensor(array.array("h", [1]))


def test_nested_lists_infer_shape_and_default_dtype() -> None:
    assert Tensor([[1, 2], [3, 4]]).dtype == "i64"
    assert Tensor([[1, 2.0]]).dtype == "f32"
    assert Tensor([[[1.0]] * 3] * 2).shape == (2, 3, 1)
    assert Tensor(7).shape == () and Tensor(7).item() == 7
    with pytest.raises(ValidationError, match="ragged"):
        Tensor([[1, 2], [3]])
    with pytest.raises(ValidationError, match="tensor needs numbers"):
        Tensor([1, "2"])


def test_dtype_aliases_and_unknown_dtype() -> None:
    assert Tensor([1], dtype="float32").dtype == "f32"
    assert Tensor([1], dtype=np.dtype("int32")).dtype == "i32"
    assert Tensor([1], dtype="bfloat16").dtype == "bf16"
    with pytest.raises(
        ValidationError, match="wasi-nn carries only f16, bf16, f32, f64, u8, i32, i64"
    ):
        Tensor([1], dtype="int8")
    assert DTYPES == ("f16", "bf16", "f32", "f64", "u8", "i32", "i64")


def test_shape_checks() -> None:
    with pytest.raises(ValidationError, match="every dimension must be an integer"):
        Tensor([1.0], shape=(-1,))
    with pytest.raises(ValidationError, match="every dimension must be an integer"):
        Tensor(b"", shape=(2**32,), dtype="u8")


def test_argmax_topk_item_reshape_astype() -> None:
    t = Tensor([[0.1, 0.7, 0.2], [0.5, 0.1, 0.4]])
    assert t.argmax() == 1
    assert t.argmax(axis=-1) == [1, 0]
    assert [i for i, _ in t.topk(3)] == [1, 3, 5]
    assert t.topk(0) == []
    assert t.reshape(3, 2).shape == (3, 2) and t.reshape((6,)).tobytes() is t.tobytes()
    with pytest.raises(ValidationError):
        t.reshape(4, 2)
    with pytest.raises(ValidationError, match="exactly one element"):
        t.item()
    assert t.astype("f16").dtype == "f16"
    assert Tensor([[1.0, 2.0]]).astype("i32").tolist() == [[1, 2]]
    assert Tensor.zeros((2, 3), "i64").tolist() == [[0] * 3] * 2


def test_tolist_of_empty_and_zero_sized_axes() -> None:
    assert Tensor.zeros((2, 0)).tolist() == [[], []]
    assert Tensor([]).shape == (0,)


@pytest.mark.parametrize("dtype", DTYPES)
def test_repr_and_equality(dtype: str) -> None:
    a = Tensor([1, 2], dtype=dtype)
    assert a == Tensor([1, 2], dtype=dtype)
    assert a != Tensor([1, 3], dtype=dtype)
    assert dtype in repr(a)


# ---------------------------------------------------------------- argmax and topk on the raw bytes


def _numpy(t: Tensor) -> np.ndarray:
    """The tensor as numpy sees its bytes; halves widened to f64 (exactly) for numpy's ops."""
    arr = np.frombuffer(t.tobytes(), dtype=NP[t.dtype]).reshape(t.shape)
    return arr.astype(np.float64) if t.dtype in ("f16", "bf16") else arr


def _tensor_of(values: np.ndarray, dtype: str) -> Tensor:
    with np.errstate(over="ignore", invalid="ignore"):
        arr = (
            values.astype(np.float32).astype(NP[dtype])
            if dtype == "bf16"
            else values.astype(NP[dtype])
        )
    return Tensor(arr.tobytes(), shape=arr.shape, dtype=dtype)


# Few distinct values, so that ties are everywhere: +0.0 and -0.0 (equal), infinities.
FLOAT_POOL = np.array([0.0, -0.0, 1.5, -1.5, 3.0, np.inf, -np.inf, 1e4])
INT_POOL = {"u8": [0, 7, 200, 255], "i32": [-(2**31), -1, 0, 5, 2**31 - 1],
            "i64": [-(2**63), -1, 0, 5, 2**40, 2**63 - 1]}  # fmt: skip
# Lines (along the axis) shorter than 64 elements go through small lists, the
# longer ones through memoryviews; both as rows and as strided columns.
ARGMAX_SHAPES = [
    (7,),
    (200,),
    (3, 5),
    (4, 70),
    (70, 3),
    (2, 3, 4),
    (3, 66, 5),
    (5, 2, 80),
    (2, 1, 3),
]


def _pool_values(dtype: str, shape: tuple[int, ...], seed: int, nan: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype in INT_POOL:
        return rng.choice(np.array(INT_POOL[dtype], dtype=np.int64), shape)
    values = rng.choice(FLOAT_POOL, shape)
    if nan:
        flat = values.reshape(-1)
        flat[rng.choice(flat.size, max(1, flat.size // 7), replace=False)] = np.nan
    return values


@pytest.mark.parametrize(
    "dtype,nan",
    [(d, False) for d in DTYPES] + [(d, True) for d in DTYPES if d not in INT_POOL],
    ids=lambda v: {False: "ties", True: "nan"}.get(v, v),
)
@pytest.mark.parametrize("shape", ARGMAX_SHAPES, ids=str)
def test_argmax_every_axis_matches_numpy(dtype: str, nan: bool, shape: tuple[int, ...]) -> None:
    for seed in range(3):
        t = _tensor_of(_pool_values(dtype, shape, seed, nan), dtype)
        arr = _numpy(t)
        assert t.argmax() == int(np.argmax(arr))
        for axis in range(-len(shape), len(shape)):
            expected = np.argmax(arr, axis=axis)
            got = t.argmax(axis=axis)
            assert got == (expected.tolist() if expected.ndim else int(expected)), (seed, axis)


def test_argmax_nan_rules_like_numpy() -> None:
    nan, inf = float("nan"), float("inf")
    rows = [
        [1.0, nan, 5.0, nan],
        [inf, 2.0, inf, -inf],
        [-0.0, 0.0, -1.0, -0.0],
        [nan, 1.0, 2.0, 3.0],
    ]
    for dtype in ("f16", "bf16", "f32", "f64"):
        t = Tensor(rows, dtype=dtype)
        assert t.argmax(axis=-1) == [1, 0, 0, 0] == np.argmax(np.array(rows), axis=-1).tolist()
        assert t.argmax(axis=0) == np.argmax(np.array(rows), axis=0).tolist() == [3, 0, 1, 0]
        assert t.argmax() == 1
    # The first NaN wins even when it comes after inf and inf + -inf made a NaN sum before.
    long_row = [0.0] * 100 + [inf, -inf] + [0.0] * 30 + [nan] + [inf] * 20
    assert Tensor(long_row).argmax() == 132 == int(np.argmax(np.array(long_row, np.float32)))
    assert Tensor([long_row] * 2).argmax(axis=1) == [132, 132]


def test_argmax_axis_errors() -> None:
    t = Tensor([[1.0, 2.0]])
    for bad in (2, -3, True, 1.0):
        with pytest.raises(ValidationError, match=r"integer from -2 to 1 for shape \[1, 2\]"):
            t.argmax(axis=bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="integer from 0 to -1"):
        Tensor(3.0).argmax(axis=0)
    assert Tensor(3.0).argmax() == 0
    for empty in (Tensor([]), Tensor.zeros((3, 0))):
        with pytest.raises(ValidationError, match="argmax\\(\\) of an empty tensor"):
            empty.argmax(axis=-1)


def _numpy_topk(arr: np.ndarray, k: int) -> list[int]:
    """Indices of the k largest, ties to the lower index (stable descending sort)."""
    flat = arr.reshape(-1)
    backwards = np.argsort(flat[::-1], kind="stable")  # equal values: higher original index first
    ranked: list[int] = (flat.size - 1 - backwards)[::-1][:k].tolist()
    return ranked


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["normal", "ties", "zeros"])
def test_topk_matches_numpy(dtype: str, kind: str) -> None:
    rng = np.random.default_rng(5)
    for n in (1, 9, 3000, 60000):
        if kind == "zeros":
            values = rng.choice(np.array([0.0, -0.0]), n)
        elif kind == "ties" or dtype in INT_POOL:
            values = _pool_values(dtype, (n,), n, nan=False)
        else:
            values = rng.normal(0, 1000, n)
        t = _tensor_of(values, dtype)
        arr = _numpy(t)
        for k in sorted({0, 1, 3, 10, 29, n // 2, n, n + 5}):
            top = t.topk(k)
            expected = _numpy_topk(arr, k)
            assert [i for i, _ in top] == expected, (n, k)
            assert [v for _, v in top] == [arr.reshape(-1)[i].item() for i in expected]
            assert all(type(v) is (int if dtype in INT_POOL else float) for _, v in top)


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32", "f64"])
def test_topk_ranks_nan_first_like_argmax(dtype: str) -> None:
    """NaN ranks above every number (documented), in index order, as argmax's first NaN."""
    values = [0.5, float("nan"), 2.0, -float("nan"), -1.0, 2.0] * 2000
    t = Tensor(values, dtype=dtype)
    nans = [i for i, v in enumerate(values) if v != v]
    rest = sorted((i for i, v in enumerate(values) if v == v), key=lambda i: (-values[i], i))
    for k in (1, 4, 50, len(values)):
        top = t.topk(k)
        assert [i for i, _ in top] == (nans + rest)[:k]
        assert all(v != v for _, v in top[: len(nans)])
    assert t.topk(1)[0][0] == t.argmax() == 1
    with pytest.raises(ValidationError, match="k >= 0"):
        t.topk(-1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_argmax_and_topk_never_decode_the_whole_tensor(
    dtype: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compiled kernels read the bytes in place: the list decoder is never called."""
    import tracemalloc

    from wasinn import _dtypes

    values = np.random.default_rng(1).random((2, 40, 6625)) * 100
    t = _tensor_of(values, dtype)
    arr = _numpy(t)

    def refuse(*args: object) -> None:
        raise AssertionError("decoded the whole tensor")

    monkeypatch.setattr(_dtypes, "decode", refuse)
    tracemalloc.start()
    try:
        got = (t.argmax(), t.argmax(axis=-1), t.topk(5))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got[0] == int(np.argmax(arr))
    assert got[1] == np.argmax(arr, axis=-1).tolist()
    assert [i for i, _ in got[2]] == _numpy_topk(arr, 5)
    # Decoding would take 32 bytes a value (a list of floats); the kernels
    # allocate only their answers.
    assert peak < 16_384, peak


def _softmax_rows(rng: np.random.Generator, rows: int, width: int) -> np.ndarray:
    logits = rng.normal(0, 1, (rows, width))
    logits[np.arange(rows), rng.integers(0, width, rows)] += 12  # one likely class a row
    logits[0, :2] = logits[0].max() + 1  # row 0: two equal winners, the first must win
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    rows_sum_to_one: np.ndarray = p / p.sum(axis=1, keepdims=True)
    return rows_sum_to_one


def _few_near_zero(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    values = -rng.integers(2**40, 2**62, shape)
    values[np.arange(shape[0]), rng.integers(0, shape[1], shape[0])] = -5  # top byte 0xFF
    return values


OUTPUT_LIKE_CASES = {
    # name: (values, dtype): what model outputs look like, and the awkward cases
    "softmax": (_softmax_rows(np.random.default_rng(3), 12, 500), "f32"),
    "softmax f16": (_softmax_rows(np.random.default_rng(4), 12, 500), "f16"),
    "softmax bf16": (_softmax_rows(np.random.default_rng(5), 12, 500), "bf16"),
    "uniform": (np.random.default_rng(6).random((12, 500)), "f64"),
    "all negative": (-np.random.default_rng(7).random((12, 500)) - 1, "f32"),
    "signed zeros": (np.random.default_rng(8).choice([0.0, -0.0, 1e-39], (12, 500)), "f32"),
    "negative ints": (_few_near_zero(np.random.default_rng(9), (12, 500)), "i64"),
    "mixed i32": (np.random.default_rng(10).integers(-(2**31), 2**31, (12, 500)), "i32"),
    "u8 with many 255": (np.random.default_rng(11).choice([1, 9, 255], (12, 500)), "u8"),
}


@pytest.mark.parametrize("name", OUTPUT_LIKE_CASES)
def test_argmax_and_topk_of_output_like_values_match_numpy(name: str) -> None:
    values, dtype = OUTPUT_LIKE_CASES[name]
    t = _tensor_of(values, dtype)
    arr = _numpy(t)
    assert t.argmax() == int(np.argmax(arr))
    assert t.argmax(axis=-1) == np.argmax(arr, axis=-1).tolist()
    assert t.argmax(axis=0) == np.argmax(arr, axis=0).tolist()
    for k in (1, 5, 12, 200):
        top = t.topk(k)
        assert [i for i, _ in top] == _numpy_topk(arr, k)
        assert [v for _, v in top] == [arr.reshape(-1)[i].item() for i in _numpy_topk(arr, k)]
