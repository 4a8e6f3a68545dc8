"""The graph builder's element-wise operations: ONNX checker, onnxruntime vs numpy,
OpenVINO vs onnxruntime, and the same graphs in a real component (see builder_check)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from builder_app import cases_elementwise
from builder_check import Reference

from wasinn import GraphBuilder, ValidationError

_erf = np.vectorize(math.erf)


def _f(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float32)


def _clamp_host_limits(
    k: np.ndarray, q: np.ndarray, h: np.ndarray, x: np.ndarray
) -> dict[str, np.ndarray]:
    near = k + np.array(cases_elementwise.NEAR_LIMITS, np.int32)
    qnear = q + np.array(cases_elementwise.NEAR_LIMITS, np.int64)
    h_special = np.array(cases_elementwise.SPECIALS, np.float16)
    x_special = np.array(cases_elementwise.SPECIALS, np.float32)
    # np.clip keeps NaN, as WebNN's clamp does.
    return {
        "i32_both": np.clip(near, -(2**31) + 3, 2**31 - 3),
        "i32_low": np.maximum(near, 2**31 - 4).astype(np.int32),
        "i32_high": np.minimum(near, -(2**31) + 2).astype(np.int32),
        "i32_f32_exact": np.clip(near, -(2**24) + 2, 2**24 - 2),
        "i32_near_2_24": np.clip(near, -3, 2**24 + 3),
        "i64_both": np.clip(qnear, -(2**31) + 3, 2**31 - 3),
        "i64_low": np.maximum(qnear, 2**31 - 4),
        "i32_relu": np.maximum(near, 0),
        "i64_relu": np.maximum(qnear, 0),
        "f16_low": np.maximum(h_special, np.float16(-2)),
        "f16_high": np.minimum(h_special, np.float16(3)),
        "f16_both": np.clip(h_special, np.float16(-1), np.float16(0.5)),
        "f32_low": np.maximum(x_special, np.float32(-2)),
        "f32_both": np.clip(x_special, np.float32(-1), np.float32(0.5)),
    }


REFERENCE: dict[str, Reference] = {
    "binary_f32_broadcast": lambda x, y: {
        "add": x + y,
        "sub": x - y,
        "mul": x * y,
        "div": x / (np.abs(y) + 1),
        "max": np.maximum(x, y),
        "min": np.minimum(x, y),
        "pow": _f(np.power(np.abs(x) + 0.5, y)),
    },
    "binary_i32": lambda x, y: {
        "add": x + y,
        "sub": x - y,
        "mul": x * y,
        "max": np.maximum(x, y),
        "min": np.minimum(x, y),
    },
    "binary_u8": lambda x, y: {"add": x + y, "max": np.maximum(x, y), "min": np.minimum(x, y)},
    "binary_f16_and_f64": lambda h, d: {"h2": h * h + np.float16(1), "d2": d / 3.0 - d},
    "operators_and_numbers": lambda x: {
        "y": _f((1 - x) * 2 / (np.abs(x) + 1) + (-x)),
        "z": _f(3 / (np.abs(x) + 1)),
    },
    "comparisons": lambda x, y, k: {
        "eq": (np.round(x) == np.round(y)).astype(np.uint8),
        "ne": (k != 0).astype(np.uint8),
        "gt": (x > y).astype(np.uint8),
        "ge": (k >= 1).astype(np.uint8),
        "lt": (x < 0).astype(np.uint8),
        "le": (x <= y).astype(np.uint8),
    },
    "logic": lambda x: {
        "and": ((x > 0) & (x < 1)).astype(np.uint8),
        "or": ((x > 0) | (x < 1)).astype(np.uint8),
        "xor": ((x > 0) ^ (x < 1)).astype(np.uint8),
        "not": (~(x > 0)).astype(np.uint8),
    },
    "unary_math": lambda x: {
        "abs": np.abs(x),
        "ceil": np.ceil(x),
        "floor": np.floor(x),
        "round": np.round(x * 2),
        "exp": np.exp(x),
        "log": np.log(np.abs(x) + 0.25),
        "neg": -x,
        "reciprocal": 1 / (np.abs(x) + 0.25),
        "sqrt": np.sqrt(np.abs(x) + 0.25),
        "sin": np.sin(x),
        "cos": np.cos(x),
        "tan": np.tan(x * 0.5),
        "erf": _f(_erf(x)),
        "sign": np.sign(x),
        "identity": x,
    },
    "unary_ints": lambda k: {
        "abs": np.abs(k),
        "neg": -k,
        "sign": np.sign(k),
        "relu": np.maximum(k, 0),
    },
    "activations": lambda x: {
        "relu": np.maximum(x, 0),
        "sigmoid": 1 / (1 + np.exp(-x)),
        "tanh": np.tanh(x),
        "softplus": np.log1p(np.exp(x)),
        "softsign": x / (1 + np.abs(x)),
        "elu": np.where(x > 0, x, 0.5 * (np.exp(x) - 1)),
        "leaky": np.where(x > 0, x, 0.01 * x),
        "hsig": np.clip(0.3 * x + 0.4, 0, 1),
        "hswish": 3 * x * np.clip(3 * x + 3, 0, 6) / 6,
        "gelu": _f(0.5 * x * (1 + _erf(x / math.sqrt(2)))),
        "linear": 2 * x - 1,
        "prelu": np.where(x > 0, x, np.float32(0.1) * x),
    },
    "clamp_cast_where": lambda x, k: {
        "clamp": np.clip(x, -0.5, 0.5),
        "low": np.maximum(x, 0),
        "kclamp": np.minimum(k, 4),
        "to_i32": (x * 10).astype(np.int32),
        "to_f32": k.astype(np.float32),
        "to_u8": np.maximum(x * 100, 0).astype(np.uint8),
        "where": np.abs(x),
        "where_n": np.where(k > 4, np.float32(1), x),
    },
    "clamp_exact_integers": lambda q, k: {
        "i64_edges": q,
        "i64_high": np.maximum(q, -1),
        "i32_edges": k,
        "i32_whole_float": np.clip(k, -2, 3),
    },
    "clamp_host_limits": lambda k, q, h, x: _clamp_host_limits(k, q, h, x),
    "nan_and_infinity": lambda x: {
        "nan": np.array([1, 0, 0, 0, 0, 0], np.uint8),
        "inf": np.array([0, 1, 1, 0, 0, 0], np.uint8),
    },
}
CASES = list(cases_elementwise.CASES)


MISUSE = {
    "mixed dtypes": (
        lambda b, x, k: b.add(x, k),
        "add: the inputs are f32 and i32; they must have the same data type",
    ),
    "not broadcastable": (
        lambda b, x, k: b.add(x, b.input("z", shape=[4], dtype="f32")),
        r"add: shapes [2, 3] and [4] cannot be broadcast (dimension -1 is 3 against 4",
    ),
    "float op on ints": (
        lambda b, x, k: b.exp(k),
        "exp: the input is i32, but exp takes f32, f16, bf16, f64",
    ),
    "logic on floats": (
        lambda b, x, k: b.logical_not(x),
        "logical_not: the input is f32, but logical_not takes u8",
    ),
    "fraction for ints": (
        lambda b, x, k: k + 0.5,
        "add: 0.5 is not a whole number, but the operand is i32",
    ),
    "out of range": (
        lambda b, x, k: b.clamp(b.cast(x, "u8"), min_value=-1),
        "clamp: min_value -1 is out of the range of u8 (0 to 255)",
    ),
    "i64 bound out of range": (
        lambda b, x, k: b.clamp(b.cast(k, "i64"), max_value=2**63),
        "clamp: max_value 9223372036854775808 is out of the range of i64 "
        "(-9223372036854775808 to 9223372036854775807)",
    ),
    "u8 bound below zero": (
        lambda b, x, k: b.clamp(b.cast(k, "u8"), min_value=-1, max_value=3),
        "clamp: min_value -1 is out of the range of u8 (0 to 255)",
    ),
    "clamp u32": (
        lambda b, x, k: b.clamp(b.cast(k, "u32"), min_value=1),
        "clamp: the input is u32, which this host cannot compute exactly (onnxruntime has no "
        "kernel for it and OpenVINO's CPU plugin holds it in 32-bit signed integers); cast it "
        "to i32 or i64 first",
    ),
    "clamp u64": (
        lambda b, x, k: b.clamp(b.cast(k, "u64"), max_value=2**40),
        "clamp: the input is u64, which this host cannot compute exactly",
    ),
    "clamp i64 beyond i32": (
        lambda b, x, k: b.clamp(b.cast(k, "i64"), min_value=-2, max_value=2**31),
        "clamp: max_value 2147483648 is outside the i32 range (-2147483648 to 2147483647), "
        "which this host cannot compute exactly for an i64 input (OpenVINO's CPU plugin "
        "computes i64 in 32 bits)",
    ),
    "clamp i64 below i32": (
        lambda b, x, k: b.clamp(b.cast(k, "i64"), min_value=-(2**31) - 1),
        "clamp: min_value -2147483649 is outside the i32 range",
    ),
    "fractional integer bound": (
        lambda b, x, k: b.clamp(k, min_value=0.5),
        "clamp: min_value must be a whole number for the i32 input, not 0.5",
    ),
    "min above max": (
        lambda b, x, k: b.clamp(x, min_value=2, max_value=1),
        "clamp: min_value 2.0 is greater than max_value 1.0",
    ),
    "four-bit arithmetic": (
        lambda b, x, k: b.add(b.cast(x, "int4"), b.constant([1, 2, 3], dtype="int4")),
        "add: the first input is int4, which only cast, reshape, transpose, "
        "dequantize_linear, quantize_linear take (ONNX has no other operations on 4-bit "
        "types); cast it to i8 or u8 first",
    ),
    "four-bit relu": (
        lambda b, x, k: b.relu(b.constant([1, 2], dtype="i4")),
        "relu: the input is int4, which only cast, reshape, transpose",
    ),
    "four-bit constant range": (
        lambda b, x, k: b.constant([1, 16], dtype="uint4"),
        "constant: 16 is out of the range of uint4 (0 to 15)",
    ),
    "unknown dtype": (
        lambda b, x, k: b.cast(x, "complex64"),
        "cast: unknown data type 'complex64'",
    ),
    "not an operand": (
        lambda b, x, k: b.relu([1.0, 2.0]),
        "relu: the input must be an Operand of this builder, not list",
    ),
    "other builder": (
        lambda b, x, k: b.relu(GraphBuilder().input("q", shape=[1])),
        "relu: the input belongs to another GraphBuilder",
    ),
    "where types": (
        lambda b, x, k: b.where(b.greater(x, 0.0), x, k),
        "where: true_value is f32 and false_value i32",
    ),
    "unknown option": (lambda b, x, k: b.elu(x, beta=1.0), "unexpected keyword argument 'beta'"),
}


@pytest.mark.parametrize("name", MISUSE)
def test_misuse_is_refused_when_the_operation_is_added(name: str) -> None:
    make, message = MISUSE[name]
    b = GraphBuilder()
    x = b.input("x", shape=[2, 3], dtype="f32")
    k = b.input("k", shape=[2, 3], dtype="i32")
    error = TypeError if name == "unknown option" else ValidationError
    with pytest.raises(error) as info:
        make(b, x, k)
    assert message in str(info.value)


def test_integer_numbers_stay_exact() -> None:
    """WebNN's MLNumber: a bound, fill value or operand of an integer type is
    written as that type's bytes from the Python int, never through a float."""
    import onnx
    from onnx import numpy_helper

    b = GraphBuilder()
    q = b.input("q", shape=[2], dtype="i64")
    u = b.cast(q, "u64")
    outputs = {
        "raised": b.max(q, -(2**63) + 1),
        "cut": b.min(q, 2**63 - 2),
        "padded": b.pad(q, [1], [0], value=2**62 + 1),
        "added": q + (2**53 + 1),
        "unsigned": b.cast(b.min(u, 2**64 - 1), "i64"),
        "filled": b.constant([2**63 - 1], dtype="int64"),
    }
    graph = onnx.load_from_string(b.to_onnx(outputs)).graph
    values = {int(v) for t in graph.initializer for v in numpy_helper.to_array(t).ravel()}
    assert {-(2**63) + 1, 2**63 - 2, 2**62 + 1, 2**53 + 1, 2**64 - 1, 2**63 - 1} <= values


def test_operands_have_no_truth_value() -> None:
    x = GraphBuilder().input("x", shape=[1])
    with pytest.raises(TypeError, match="no truth value"):
        bool(x > 0 if False else x)
