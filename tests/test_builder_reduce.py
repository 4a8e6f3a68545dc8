"""The graph builder's reductions, arg_max/arg_min, softmax, cumulative_sum and
quantization: ONNX checker, onnxruntime vs numpy, OpenVINO vs onnxruntime, and
the same graphs in a real component (see builder_check)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from builder_app import cases_reduce
from builder_check import Reference, onnx_of

from wasinn import GraphBuilder, ValidationError

Axes = tuple[int, ...] | None


def _reductions(axes: Axes, keep: bool = False) -> Callable[[np.ndarray], dict[str, np.ndarray]]:
    """numpy's result of each reduction, in the input's type (float math in f64)."""

    def run(x: np.ndarray) -> dict[str, np.ndarray]:
        wide = x.astype(np.float64)
        over = {"axis": axes, "keepdims": keep}
        out = {
            "reduce_l1": np.sum(np.abs(wide), **over),
            "reduce_l2": np.sqrt(np.sum(wide**2, **over)),
            "reduce_log_sum": np.log(np.sum(np.abs(wide) + 0.5, **over)),
            "reduce_log_sum_exp": np.log(np.sum(np.exp(wide), **over)),
            "reduce_max": np.max(wide, **over), "reduce_mean": np.mean(wide, **over),
            "reduce_min": np.min(wide, **over), "reduce_product": np.prod(wide, **over),
            "reduce_sum": np.sum(wide, **over), "reduce_sum_square": np.sum(wide**2, **over),
        }  # fmt: skip
        return {k: np.asarray(v).astype(x.dtype) for k, v in out.items()}

    return run


def _no_axes(x: np.ndarray) -> dict[str, np.ndarray]:
    return {
        "reduce_l1": np.abs(x), "reduce_l2": np.abs(x), "reduce_log_sum": np.log(np.abs(x) + 0.5),
        "reduce_log_sum_exp": x, "reduce_max": x, "reduce_mean": x, "reduce_min": x,
        "reduce_product": x, "reduce_sum": x, "reduce_sum_square": x * x,
    }  # fmt: skip


def _int_reductions(k: np.ndarray) -> dict[str, np.ndarray]:
    out = {
        "reduce_l1": np.sum(np.abs(k), axis=1), "reduce_max": np.max(k, axis=1),
        "reduce_min": np.min(k, axis=1), "reduce_product": np.prod(k, axis=1),
        "reduce_sum": np.sum(k, axis=1), "reduce_sum_square": np.sum(k * k, axis=1),
        "sum_all": np.sum(k, keepdims=True), "product_none": k,
    }  # fmt: skip
    return {name: v.astype(k.dtype) for name, v in out.items()}


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    wide = x.astype(np.float64)
    e = np.exp(wide - wide.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)


def _cumsum(x: np.ndarray, axis: int, exclusive: bool = False, reverse: bool = False) -> np.ndarray:
    wide = x.astype(np.float64) if x.dtype.kind == "f" or x.dtype == ml_dtypes.bfloat16 else x
    if reverse:
        wide = np.flip(wide, axis)
    out = np.cumsum(wide, axis=axis)
    if exclusive:
        out = out - wide
    if reverse:
        out = np.flip(out, axis)
    return out.astype(x.dtype)


def _bf16(x: np.ndarray) -> np.ndarray:
    return x.astype(ml_dtypes.bfloat16)


def _as_f32(outputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """bf16 results as the cases return them (through f32: see cases_reduce._bf16)."""
    return {name: v.astype(np.float32) for name, v in outputs.items()}


def _i32(a: np.ndarray) -> np.ndarray:
    return a.astype(np.int32)


def _quantize(x: np.ndarray, scale: Any, zero: Any, low: int, high: int, dtype: Any) -> np.ndarray:
    # Same arithmetic as the graph (x / scale in the input's type), then round half to even.
    steps = np.rint(x / np.asarray(scale, x.dtype)) + np.asarray(zero, x.dtype)
    return np.clip(steps, low, high).astype(dtype)


def _quantize_i32(x: np.ndarray, scale: Any, zero: Any) -> np.ndarray:
    """quantize_linear with an i32 zero point: the sum exact and saturated while
    the quotient is within i32's f32 values, WebNN's f32 sum (saturated) beyond them."""
    steps = np.rint(x / np.asarray(scale, x.dtype)).astype(np.float32)
    zero = np.asarray(zero, np.int32)
    limit = np.float32(2**31 - 128)
    inside = np.abs(steps) < limit
    exact = np.clip(np.where(inside, steps, 0).astype(np.int64) + zero, -(2**31), 2**31 - 1)
    summed = (steps + zero.astype(np.float32)).astype(np.float64)
    rounded = np.clip(summed, -(2**31), 2**31 - 1)
    return np.where(inside, exact, rounded.astype(np.int64)).astype(np.int32)


def _blocks(a: list[list[float]], reps: tuple[int, int]) -> np.ndarray:
    return np.repeat(np.repeat(np.asarray(a), reps[0], axis=0), reps[1], axis=1)


_BLOCK_SCALE = _blocks([[0.01, 0.02, 0.04], [0.03, 0.05, 0.07]], (2, 2)).astype(np.float32)
_BLOCK_ZERO = _blocks([[128, 120, 10], [0, 255, 60]], (2, 2))
_TRIP_SCALE = np.array([[[0.02], [0.05], [0.1]]], np.float32)
_TRIP_ZERO = np.array([[[128], [100], [30]]], np.float32)
_HALVES = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 300.0, -300.0], np.float32)

REFERENCE: dict[str, Reference] = {
    "reduce_f32_one_axis": lambda x: _reductions((1,))(x),
    "reduce_f32_keep_two_axes": lambda x: _reductions((0, 2), keep=True)(x),
    "reduce_f32_all_axes_kept": lambda x: _reductions(None, keep=True)(x),
    "reduce_f32_no_axes": _no_axes,
    "reduce_to_scalar_inside": lambda x: {
        "centred": x - x.mean(), "scaled": x / (np.abs(x).max() + np.float32(1)),
        "of_scalar": x + np.float32(5.0),
    },
    "reduce_dynamic": lambda x: {
        "sum0": x.sum(0), "mean1": x.mean(1), "max_kept": x.max(0, keepdims=True),
        "l2_all": np.sqrt((x.astype(np.float64) ** 2).sum(keepdims=True)).astype(np.float32),
    },
    "reduce_i32": _int_reductions,
    "reduce_i64": _int_reductions,
    "reduce_u8": lambda k: {"max": k.max(1), "min": k.min(0, keepdims=True)},
    "reduce_f16": lambda h: _reductions((1,))(h),
    "reduce_bf16": lambda x: _as_f32(_reductions((0,))(_bf16(x))),
    "reduce_f64": lambda d: _reductions((1,))(d),
    "arg_f32": lambda x: {
        "max0": _i32(x.argmax(0)), "max2": _i32(x.argmax(2)),
        "max1_kept": _i32(x.argmax(1, keepdims=True)), "min1_i64": x.argmin(1),
        "min2_kept_i64": x.argmin(2, keepdims=True),
    },
    "arg_ties": lambda k, u: {
        "kmax1": _i32(k.argmax(1)), "kmin1": _i32(k.argmin(1)), "kmax0": _i32(k.argmax(0)),
        "umax0": _i32(u.argmax(0)), "umin1": _i32(u.argmin(1, keepdims=True)),
    },
    "arg_all_equal": lambda x: {"max": np.zeros(2, np.int32), "min": np.zeros(4, np.int32)},
    "arg_other_types": lambda h, r, d, q: {
        "f16": _i32(h.argmax(1)), "bf16": _i32(_bf16(r).astype(np.float32).argmin(0)),
        "f64": _i32(d.argmax(0)), "i64": q.argmin(1),
    },
    "arg_dynamic": lambda x: {
        "over_dynamic": _i32(x.argmax(0)), "per_row": _i32(x.argmin(1, keepdims=True)),
    },
    "softmax_f32": lambda x: {
        "a0": _softmax(x, 0), "a1": _softmax(x, 1), "a2": _softmax(x * 10, 2),
    },
    "softmax_other_types": lambda h, r, d: {
        "f16": _softmax(h, 1), "bf16": _softmax(_bf16(r), 0).astype(np.float32),
        "f64": _softmax(d, 0),
    },
    "large_exponents": lambda x, h: {
        "lse": _reductions((1,))(x * np.float32(60))["reduce_log_sum_exp"],
        "softmax": _softmax(x * np.float32(60), 1),
        "lse_f16": _reductions((1,))(h * np.float16(8))["reduce_log_sum_exp"],
        "softmax_f16": _softmax(h * np.float16(8), 0),
    },
    "cumulative_sum_f32": lambda x: {
        "plain": _cumsum(x, 1), "exclusive": _cumsum(x, 1, exclusive=True),
        "reversed": _cumsum(x, 0, reverse=True),
        "both": _cumsum(x, 1, exclusive=True, reverse=True),
    },
    "cumulative_sum_other_types": lambda k, q, h, r, d: {
        "i32": _cumsum(k, 1, exclusive=True), "i64": _cumsum(q, 0, reverse=True),
        "f16": _cumsum(h, 1), "bf16": _cumsum(_bf16(r), 1).astype(np.float32), "f64": _cumsum(d, 0),
    },
    "quantize_per_tensor_and_axis": lambda x: {
        "u8": _quantize(x, 0.02, 128, 0, 255, np.uint8),
        "i8": _quantize(x, 0.02, 3, -128, 127, np.int8).astype(np.int32),
        "per_axis": _quantize(x, [[0.01, 0.02, 0.05, 0.1]], [[100, 128, 0, 250]], 0, 255, np.uint8),
        "per_axis_1d": _quantize(x, [0.01, 0.02, 0.05, 0.1], [100, 128, 0, 250], 0, 255, np.uint8),
    },
    "quantize_blockwise_and_f16": lambda x, h: {
        "blocks": _quantize(x, _BLOCK_SCALE, _BLOCK_ZERO, 0, 255, np.uint8),
        "f16": _quantize(h, [[0.05, 0.1, 0.2, 0.4]], [[128, 128, 0, 10]], 0, 255, np.uint8),
    },
    "quantize_halves": lambda x: {
        "u8": np.array([0, 2, 2, 0, 0, 0, 255, 0], np.uint8),
        "i8": np.array([0, 2, 2, 0, -2, -2, 127, -128], np.int32),
    },
    "quantize_i32": lambda x, h: {
        "i32": _quantize_i32(
            np.float32(cases_reduce.QUANT_I32_INPUT) + x,
            cases_reduce.QUANT_I32_SCALE,
            cases_reduce.QUANT_I32_ZERO,
        ),
        "f16": _quantize_i32(h * np.float16(1000), [np.float16(0.5)], [2**31 - 3000]),
    },
    "four_bit": lambda x: {
        "deq_int4": (
            np.float32(cases_reduce.INT4_VALUES)
            - _blocks(cases_reduce.INT4_ZERO, (2, 2)).astype(np.float32)
        )
        * _blocks([[0.5, 0.25, 2.0]], (2, 2)).astype(np.float32),
        "deq_uint4": (np.float32(cases_reduce.UINT4_VALUES) - np.float32(3)) * np.float32(0.5),
        "q_int4": _quantize(
            x, _blocks([[0.5, 0.25, 2.0]], (2, 2)), _blocks(cases_reduce.INT4_ZERO, (2, 2)), -8, 7,
            np.int32,
        ),
        "q_uint4": _quantize(
            x, _blocks([[0.5, 0.25, 2.0]], (2, 2)), _blocks(cases_reduce.UINT4_ZERO, (2, 2)), 0,
            15, np.int32,
        ),
        "cast_int4": np.trunc(x * np.float32(3)),
        "cast_uint4": np.trunc(np.abs(x) * np.float32(7)).astype(np.int32),
        "moved": np.int32(cases_reduce.INT4_VALUES).reshape(3, 4).T,
    },
    "dequantize": lambda u, k, s: {
        "u8": (u.astype(np.float32) - np.float32([[1, 2, 3, 4]]))
        * np.float32([[0.1, 0.2, 0.3, 0.4]]),
        "i32_blocks": (
            (k.astype(np.float32) - _blocks([[0, 1], [-1, 2]], (2, 3)).astype(np.float32))
            * _blocks([[0.5, 0.25], [2.0, 1.0]], (2, 3)).astype(np.float32)
        ),
        "i8_f16": ((s.astype(np.float16) + np.float16(2)) * np.float16(0.5)),
    },
    "quantize_round_trip": lambda x: {
        "back": (_quantize(x, _TRIP_SCALE, _TRIP_ZERO, 0, 255, np.uint8) - _TRIP_ZERO)
        * _TRIP_SCALE,
    },
}  # fmt: skip
CASES = list(cases_reduce.CASES)


def test_the_halves_case_really_has_halves() -> None:
    """quantize_halves checks round-half-to-even only if its constants are exact halves."""
    assert np.all(np.abs(_HALVES[:6] * 2) % 2 == 1)


# ------------------------------------------------------------ shapes and lowering


def test_result_shapes_follow_webnn() -> None:
    b = GraphBuilder()
    x = b.input("x", shape=[2, None, 4], dtype="f32")
    assert b.reduce_sum(x).shape == ()
    assert b.reduce_sum(x, keep_dimensions=True).shape == (1, 1, 1)
    assert b.reduce_mean(x, axes=[1]).shape == (2, 4)
    assert b.reduce_max(x, axes=(2, 0), keep_dimensions=True).shape == (1, None, 1)
    assert b.reduce_l1(x, axes=[]).shape == (2, None, 4)
    assert b.arg_max(x, 1).shape == (2, 4)
    assert b.arg_min(x, 2, keep_dimensions=True).shape == (2, None, 1)
    assert b.arg_max(x, 0).dtype == "i32"
    assert b.arg_max(x, 0, output_data_type="int64").dtype == "i64"
    assert b.softmax(x, 2).shape == (2, None, 4)
    assert b.cumulative_sum(b.cast(x, "i32"), 1).dtype == "i32"
    u8 = b.quantize_linear(x, b.constant([[[0.1]]]), b.constant([[[0]]], dtype="u8"))
    assert (u8.shape, u8.dtype) == ((2, None, 4), "u8")


def _ops(case: Callable[[GraphBuilder], Any]) -> list[str]:
    import onnx

    b = GraphBuilder()
    data = b.to_onnx(case(b))
    return [node.op_type for node in onnx.load_from_string(data).graph.node]


def test_arg_max_asks_for_the_first_index_on_ties() -> None:
    import onnx

    b = GraphBuilder()
    data = b.to_onnx({"i": b.arg_max(b.input("x", shape=[3, 4]), 1)})
    (node,) = [n for n in onnx.load_from_string(data).graph.node if n.op_type == "ArgMax"]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    assert attrs == {"axis": 1, "keepdims": 0, "select_last_index": 0}


def test_bf16_is_computed_in_f32() -> None:
    ops = _ops(lambda b: {"y": b.reduce_sum(b.input("x", shape=[2, 3], dtype="bf16"), axes=[1])})
    assert ops == ["Cast", "ReduceSum", "Cast", "Identity"]


def test_empty_axes_apply_the_function_to_each_value() -> None:
    # ONNX's noop_with_empty_axes would return the input unchanged; WebNN squares it.
    ops = _ops(lambda b: {"y": b.reduce_sum_square(b.input("x", shape=[2, 3]), axes=[])})
    assert ops == ["Mul", "Identity"]


def test_a_scalar_result_cannot_be_an_output() -> None:
    b = GraphBuilder()
    total = b.reduce_sum(b.input("x", shape=[2, 3]))
    with pytest.raises(ValidationError, match=r"output 'total' is a scalar \(shape \[\]\)"):
        b.build({"total": total})
    kept = b.reduce_sum(b.input("y", shape=[2, 3]), keep_dimensions=True)
    assert b.to_onnx({"total": kept})


# ------------------------------------------------------------ misuse

MISUSE: dict[str, tuple[Callable[[GraphBuilder, Any, Any], Any], str]] = {
    "bad axis": (
        lambda b, x, k: b.reduce_sum(x, axes=[2]),
        "reduce_sum: every axis must be an integer from 0 to 1 for an input of rank 2, not 2",
    ),
    "negative axis": (
        lambda b, x, k: b.reduce_mean(x, axes=[-1]),
        "reduce_mean: every axis must be an integer from 0 to 1",
    ),
    "repeated axis": (
        lambda b, x, k: b.reduce_max(x, axes=[1, 1]),
        "reduce_max: axes [1, 1] repeat an axis",
    ),
    "axes not a list": (
        lambda b, x, k: b.reduce_min(x, axes=1),
        "reduce_min: axes must be a list of integers, not 1",
    ),
    "keep not a bool": (
        lambda b, x, k: b.reduce_sum(x, keep_dimensions=1),
        "reduce_sum: keep_dimensions must be True or False, not 1",
    ),
    "mean of ints": (
        lambda b, x, k: b.reduce_mean(k),
        "reduce_mean: the input is i32, but reduce_mean takes f32, f16, bf16, f64",
    ),
    "l2 of ints": (
        lambda b, x, k: b.reduce_l2(k),
        "reduce_l2: the input is i32, but reduce_l2 takes f32, f16, bf16, f64",
    ),
    "sum of u8": (
        lambda b, x, k: b.reduce_sum(b.cast(k, "u8")),
        "reduce_sum: the input is u8, but reduce_sum takes f32, f16, bf16, f64, i32, i64",
    ),
    "sum of u32": (
        lambda b, x, k: b.reduce_sum(b.cast(k, "uint32")),
        "reduce_sum: the input is u32, which this host cannot compute exactly",
    ),
    "arg of u64": (
        lambda b, x, k: b.arg_max(b.cast(k, "u64"), 0),
        "arg_max: the input is u64, which this host cannot compute exactly",
    ),
    "arg axis": (
        lambda b, x, k: b.arg_max(x, 2),
        "arg_max: axis must be an integer from 0 to 1 for an input of rank 2, not 2",
    ),
    "arg axis missing": (
        lambda b, x, k: b.arg_min(x),
        "missing 1 required positional argument: 'axis'",
    ),
    "arg output type": (
        lambda b, x, k: b.arg_min(x, 0, output_data_type="float32"),
        "arg_min: output_data_type must be int32 or int64 (i32, i64), not f32",
    ),
    "arg unknown type": (
        lambda b, x, k: b.arg_min(x, 0, output_data_type="int4"),
        "arg_min: output_data_type must be int32 or int64 (i32, i64), not int4",
    ),
    "arg of a scalar": (
        lambda b, x, k: b.arg_max(b.reduce_sum(x), 0),
        "arg_max: the input is a scalar (shape []), but arg_max needs rank 1 or more",
    ),
    "arg too long for i32": (
        lambda b, x, k: b.arg_max(b.input("w", shape=[2**31]), 0),
        "arg_max: dimension 0 has 2147483648 elements, more than int32 can index; "
        "use output_data_type='int64'",
    ),
    "softmax axis missing": (
        lambda b, x, k: b.softmax(x),
        "missing 1 required positional argument: 'axis'",
    ),
    "softmax axis": (
        lambda b, x, k: b.softmax(x, 5),
        "softmax: axis must be an integer from 0 to 1 for an input of rank 2, not 5",
    ),
    "softmax of ints": (
        lambda b, x, k: b.softmax(k, 1),
        "softmax: the input is i32, but softmax takes f32, f16, bf16, f64",
    ),
    "cumulative_sum flag": (
        lambda b, x, k: b.cumulative_sum(x, 0, reversed="yes"),
        "cumulative_sum: reversed must be True or False, not 'yes'",
    ),
    "cumulative_sum of u8": (
        lambda b, x, k: b.cumulative_sum(b.cast(k, "u8"), 0),
        "cumulative_sum: the input is u8, but cumulative_sum takes f32, f16, bf16, f64, i32, i64",
    ),
    "cumulative_sum of a scalar": (
        lambda b, x, k: b.cumulative_sum(b.constant(1.0), 0),
        "cumulative_sum: the input is a scalar",
    ),
    "axes of a scalar": (
        lambda b, x, k: b.reduce_sum(b.constant(1.0), axes=[0]),
        "reduce_sum: the input is a scalar (shape []), so axes must be empty or None, not [0]",
    ),
    "not an operand": (
        lambda b, x, k: b.reduce_sum([1.0, 2.0]),
        "reduce_sum: the input must be an Operand of this builder, not list",
    ),
    "other builder": (
        lambda b, x, k: b.softmax(GraphBuilder().input("q", shape=[1]), 0),
        "softmax: the input belongs to another GraphBuilder",
    ),
    "unknown option": (
        lambda b, x, k: b.reduce_sum(x, keepDimensions=True),
        "unexpected keyword argument 'keepDimensions'",
    ),
    "quantize rank": (
        lambda b, x, k: b.quantize_linear(
            x, b.constant([[[0.1]]]), b.constant([[[0]]], dtype="u8")
        ),
        "quantize_linear: the scale has rank 3, more than the input's 2",
    ),
    "quantize shapes differ": (
        lambda b, x, k: b.quantize_linear(
            x, b.constant([[0.1, 0.2, 0.3]]), b.constant([[0]], dtype="u8")
        ),
        "quantize_linear: the scale's shape [1, 3] and the zero_point's [1, 1] must be the same",
    ),
    "quantize not blockwise": (
        lambda b, x, k: b.quantize_linear(
            x, b.constant([[0.1, 0.2]]), b.constant([[0, 0]], dtype="u8")
        ),
        "quantize_linear: the scale's shape [1, 2] is not blockwise broadcastable to the "
        "input's [2, 3] (dimension 1: 2 does not divide 3)",
    ),
    "quantize scale type": (
        lambda b, x, k: b.quantize_linear(
            x, b.constant([[0.1]], dtype="f16"), b.constant([[0]], dtype="u8")
        ),
        "quantize_linear: the scale is f16, the input f32; they must match",
    ),
    "quantize zero type": (
        lambda b, x, k: b.quantize_linear(x, b.constant([[0.1]]), b.constant([[0]], dtype="f32")),
        "quantize_linear: the zero_point is f32, but quantize_linear takes i8, u8, i32",
    ),
    "quantize u32 zero": (
        lambda b, x, k: b.quantize_linear(
            x, b.constant([[0.1]]), b.constant([[0]], dtype="uint32")
        ),
        "quantize_linear: the zero_point is u32, which this host cannot compute exactly",
    ),
    "quantize ints": (
        lambda b, x, k: b.quantize_linear(k, b.constant([[0.1]]), b.constant([[0]], dtype="u8")),
        "quantize_linear: the input is i32, but quantize_linear takes f32, f16",
    ),
    "quantize dynamic block": (
        lambda b, x, k: b.quantize_linear(
            b.input("z", shape=[None, 3]),
            b.constant([[0.1], [0.2]]),
            b.constant([[0], [0]], dtype="u8"),
        ),
        "quantize_linear: dimension 0 of the input is dynamic, so a scale of size 2 there "
        "cannot be checked",
    ),
    "dequantize zero type": (
        lambda b, x, k: b.dequantize_linear(k, b.constant([[0.1]]), b.constant([[0]], dtype="u8")),
        "dequantize_linear: the zero_point is u8, the input i32; they must match",
    ),
    "dequantize floats": (
        lambda b, x, k: b.dequantize_linear(x, b.constant([[0.1]]), b.constant([[0.0]])),
        "dequantize_linear: the input is f32, but dequantize_linear takes i8, u8, i32",
    ),
    "dequantize scale type": (
        lambda b, x, k: b.dequantize_linear(
            k, b.constant([[1]], dtype="i32"), b.constant([[0]], dtype="i32")
        ),
        "dequantize_linear: the scale is i32, but dequantize_linear takes f32, f16",
    ),
}


@pytest.mark.parametrize("name", MISUSE)
def test_misuse_is_refused_when_the_operation_is_added(name: str) -> None:
    make, message = MISUSE[name]
    b = GraphBuilder()
    x = b.input("x", shape=[2, 3], dtype="f32")
    k = b.input("k", shape=[2, 3], dtype="i32")
    error = (
        TypeError if "unexpected keyword" in message or "missing 1" in message else ValidationError
    )
    with pytest.raises(error) as info:
        make(b, x, k)
    assert message in str(info.value)


def test_every_case_builds_valid_onnx_offline() -> None:
    """The cases also build with nothing but wasinn (as they do in the component)."""
    for case in CASES:
        data, _ = onnx_of(case)
        assert data.startswith(b"\x08")


@pytest.mark.parametrize("dtype", ["i32", "i64"])
def test_integer_reductions_survive_openvinos_fusion_with_the_next_operation(dtype: str) -> None:
    """OpenVINO 2026.4 fuses `reduce(int) + constant` into a wrong kernel (25 of 50
    values of the graph below were wrong before the Max(r, r) guard)."""
    from builder_check import run_openvino

    np_type = {"i32": np.int32, "i64": np.int64}[dtype]
    x = np.random.default_rng(0).integers(0, 4, (16, 3, 5)).astype(np_type)
    for op, ref in (("reduce_sum", np.sum), ("reduce_max", np.max), ("reduce_min", np.min)):
        b = GraphBuilder()
        v = b.input("x", shape=[16, 3, 5], dtype=dtype)
        y = getattr(b, op)(v, axes=[2], keep_dimensions=True) + 1
        got = run_openvino(b.to_onnx({"y": y}), {"x": x})["y"]
        np.testing.assert_array_equal(got, ref(x, axis=2, keepdims=True) + 1, err_msg=op)
