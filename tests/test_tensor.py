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
        expected = np.array(values, dtype=np.float64).astype(np.float32).astype(NP[dtype]) \
            if dtype == "bf16" else np.array(values, dtype=np.float64).astype(NP[dtype])
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
    assert all(math.isnan(v) for v, n in zip(decoded, nan) if n)
    assert [v for v, n in zip(decoded, nan) if not n] == expected[~nan].tolist()


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
    with pytest.raises(ValidationError, match=r"15 bytes of data do not fill shape \[2, 2\] of f32: that needs 4 x 4 = 16"):
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
    with pytest.raises(ValidationError, match="wasi-nn carries only f16, bf16, f32, f64, u8, i32, i64"):
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
