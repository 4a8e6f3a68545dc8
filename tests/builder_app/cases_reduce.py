"""Graph-builder cases for the reduce operations (see builder_cases.py): the
reduce_* family, arg_max/arg_min, softmax, cumulative_sum and quantization."""

from __future__ import annotations

from collections.abc import Callable

from wasinn import GraphBuilder, Operand

Case = Callable[[GraphBuilder], dict[str, Operand]]
CASES: dict[str, Case] = {}

REDUCTIONS = (
    "reduce_l1", "reduce_l2", "reduce_log_sum", "reduce_log_sum_exp", "reduce_max",
    "reduce_mean", "reduce_min", "reduce_product", "reduce_sum", "reduce_sum_square",
)  # fmt: skip
INT_REDUCTIONS = (
    "reduce_l1", "reduce_max", "reduce_min", "reduce_product", "reduce_sum", "reduce_sum_square",
)  # fmt: skip


def case(fn: Case) -> Case:
    CASES[fn.__name__] = fn
    return fn


def _every_reduction(b: GraphBuilder, x: Operand, **options: object) -> dict[str, Operand]:
    """Each float reduction of ``x``, named by its operation; log-sum gets a
    positive input so that every random input is valid (made in f32 for bf16,
    which onnxruntime's Abs and Add do not take)."""
    if x.dtype == "bf16":
        positive = b.cast(b.abs(b.cast(x, "f32")) + 0.5, "bf16")
    else:
        positive = b.abs(x) + 0.5
    out = {}
    for name in REDUCTIONS:
        source = positive if name == "reduce_log_sum" else x
        out[name] = getattr(b, name)(source, **options)
    return out


@case
def reduce_f32_one_axis(b: GraphBuilder) -> dict[str, Operand]:
    return _every_reduction(b, b.input("x", shape=[2, 3, 4], dtype="f32"), axes=[1])


@case
def reduce_f32_keep_two_axes(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[2, 3, 4], dtype="f32")
    return _every_reduction(b, x, axes=[2, 0], keep_dimensions=True)


@case
def reduce_f32_all_axes_kept(b: GraphBuilder) -> dict[str, Operand]:
    return _every_reduction(b, b.input("x", shape=[2, 3, 4], dtype="f32"), keep_dimensions=True)


@case
def reduce_f32_no_axes(b: GraphBuilder) -> dict[str, Operand]:
    # axes=[] reduces nothing: each function applied to single values.
    return _every_reduction(b, b.input("x", shape=[2, 3], dtype="f32"), axes=[])


@case
def reduce_to_scalar_inside(b: GraphBuilder) -> dict[str, Operand]:
    # Rank-0 results cannot leave the graph, but broadcast inside it.
    x = b.input("x", shape=[3, 4], dtype="f32")
    scalar = b.constant(2.5)
    return {
        "centred": x - b.reduce_mean(x), "scaled": x / (b.reduce_max(b.abs(x)) + 1.0),
        "of_scalar": x + b.reduce_sum(scalar) + b.reduce_l1(scalar, axes=[]),
    }  # fmt: skip


@case
def reduce_dynamic(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[None, 4], dtype="f32")
    return {
        "sum0": b.reduce_sum(x, axes=[0]), "mean1": b.reduce_mean(x, axes=[1]),
        "max_kept": b.reduce_max(x, axes=[0], keep_dimensions=True),
        "l2_all": b.reduce_l2(x, keep_dimensions=True),
    }  # fmt: skip


def _int_reductions(b: GraphBuilder, k: Operand) -> dict[str, Operand]:
    out = {name: getattr(b, name)(k, axes=[1]) for name in INT_REDUCTIONS}
    out["sum_all"] = b.reduce_sum(k, keep_dimensions=True)
    out["product_none"] = b.reduce_product(k, axes=[])
    return out


@case
def reduce_i32(b: GraphBuilder) -> dict[str, Operand]:
    return _int_reductions(b, b.input("k", shape=[3, 4], dtype="i32"))


@case
def reduce_i64(b: GraphBuilder) -> dict[str, Operand]:
    return _int_reductions(b, b.input("k", shape=[2, 3, 2], dtype="i64"))


@case
def reduce_u8(b: GraphBuilder) -> dict[str, Operand]:
    k = b.input("k", shape=[3, 5], dtype="u8")
    return {
        "max": b.reduce_max(k, axes=[1]),
        "min": b.reduce_min(k, axes=[0], keep_dimensions=True),
    }


@case
def reduce_f16(b: GraphBuilder) -> dict[str, Operand]:
    return _every_reduction(b, b.input("h", shape=[3, 4], dtype="f16"), axes=[1])


def _bf16(b: GraphBuilder, name: str, shape: list[int | None]) -> Operand:
    """A bf16 operand from an f32 input: onnxruntime's Python API, the native
    oracle, can neither take nor give bf16 arrays (outputs go back through f32)."""
    return b.cast(b.input(name, shape=shape, dtype="f32"), "bf16")


def _f32(b: GraphBuilder, outputs: dict[str, Operand]) -> dict[str, Operand]:
    return {name: b.cast(y, "f32") if y.dtype == "bf16" else y for name, y in outputs.items()}


@case
def reduce_bf16(b: GraphBuilder) -> dict[str, Operand]:
    return _f32(b, _every_reduction(b, _bf16(b, "x", [3, 4]), axes=[0]))


@case
def reduce_f64(b: GraphBuilder) -> dict[str, Operand]:
    return _every_reduction(b, b.input("d", shape=[3, 4], dtype="f64"), axes=[1])


@case
def arg_f32(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[3, 4, 5], dtype="f32")
    return {
        "max0": b.arg_max(x, 0), "max2": b.arg_max(x, axis=2),
        "max1_kept": b.arg_max(x, 1, keep_dimensions=True),
        "min1_i64": b.arg_min(x, 1, output_data_type="int64"),
        "min2_kept_i64": b.arg_min(x, 2, keep_dimensions=True, output_data_type="i64"),
    }  # fmt: skip


@case
def arg_ties(b: GraphBuilder) -> dict[str, Operand]:
    # Random small integers tie often; the first index must win.
    k = b.input("k", shape=[4, 6], dtype="i32")
    u = b.input("u", shape=[5, 3], dtype="u8")
    return {
        "kmax1": b.arg_max(k, 1), "kmin1": b.arg_min(k, 1), "kmax0": b.arg_max(k, 0),
        "umax0": b.arg_max(u, 0), "umin1": b.arg_min(u, 1, keep_dimensions=True),
    }  # fmt: skip


@case
def arg_all_equal(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[2, 4], dtype="f32")
    flat = x * 0.0 + 1.0
    return {"max": b.arg_max(flat, 1), "min": b.arg_min(flat, 0)}


@case
def arg_other_types(b: GraphBuilder) -> dict[str, Operand]:
    h = b.input("h", shape=[3, 4], dtype="f16")
    r = _bf16(b, "r", [3, 4])
    d = b.input("d", shape=[3, 4], dtype="f64")
    q = b.input("q", shape=[3, 4], dtype="i64")
    return {
        "f16": b.arg_max(h, 1), "bf16": b.arg_min(r, 0), "f64": b.arg_max(d, 0),
        "i64": b.arg_min(q, 1, output_data_type="int64"),
    }  # fmt: skip


@case
def arg_dynamic(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[None, 5], dtype="f32")
    return {"over_dynamic": b.arg_max(x, 0), "per_row": b.arg_min(x, 1, keep_dimensions=True)}


@case
def softmax_f32(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[2, 3, 4], dtype="f32")
    return {"a0": b.softmax(x, 0), "a1": b.softmax(x, axis=1), "a2": b.softmax(x * 10.0, 2)}


@case
def softmax_other_types(b: GraphBuilder) -> dict[str, Operand]:
    h = b.input("h", shape=[3, 4], dtype="f16")
    r = _bf16(b, "r", [3, 4])
    d = b.input("d", shape=[None, 4], dtype="f64")
    return _f32(b, {"f16": b.softmax(h, 1), "bf16": b.softmax(r, 0), "f64": b.softmax(d, 0)})


@case
def large_exponents(b: GraphBuilder) -> dict[str, Operand]:
    # exp(120) overflows f32 and exp(16) f16: both engines must subtract the maximum first.
    x = b.input("x", shape=[2, 3], dtype="f32")
    h = b.input("h", shape=[2, 3], dtype="f16")
    return {
        "lse": b.reduce_log_sum_exp(x * 60.0, axes=[1]), "softmax": b.softmax(x * 60.0, 1),
        "lse_f16": b.reduce_log_sum_exp(h * 8.0, axes=[1]), "softmax_f16": b.softmax(h * 8.0, 0),
    }  # fmt: skip


@case
def cumulative_sum_f32(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[3, 5], dtype="f32")
    return {
        "plain": b.cumulative_sum(x, 1), "exclusive": b.cumulative_sum(x, 1, exclusive=True),
        "reversed": b.cumulative_sum(x, 0, reversed=True),
        "both": b.cumulative_sum(x, 1, exclusive=True, reversed=True),
    }  # fmt: skip


@case
def cumulative_sum_other_types(b: GraphBuilder) -> dict[str, Operand]:
    k = b.input("k", shape=[2, 5], dtype="i32")
    q = b.input("q", shape=[4, 2], dtype="i64")
    h = b.input("h", shape=[2, 5], dtype="f16")
    r = _bf16(b, "r", [2, 5])
    d = b.input("d", shape=[None, 3], dtype="f64")
    out = {
        "i32": b.cumulative_sum(k, 1, exclusive=True), "i64": b.cumulative_sum(q, 0, reversed=True),
        "f16": b.cumulative_sum(h, 1), "bf16": b.cumulative_sum(r, 1),
        "f64": b.cumulative_sum(d, 0),
    }  # fmt: skip
    return _f32(b, out)


@case
def quantize_per_tensor_and_axis(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[3, 4], dtype="f32")
    one_scale = b.constant([[0.02]], dtype="f32")
    scales = b.constant([[0.01, 0.02, 0.05, 0.1]], dtype="f32")
    signed = b.quantize_linear(x, one_scale, b.constant([[3]], dtype="int8"))
    return {
        "u8": b.quantize_linear(x, one_scale, b.constant([[128]], dtype="uint8")),
        "i8": b.cast(signed, "int32"),
        "per_axis": b.quantize_linear(x, scales, b.constant([[100, 128, 0, 250]], dtype="u8")),
        "per_axis_1d": b.quantize_linear(
            x, b.constant([0.01, 0.02, 0.05, 0.1]), b.constant([100, 128, 0, 250], dtype="u8")
        ),
    }  # fmt: skip


@case
def quantize_blockwise_and_f16(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[4, 6], dtype="f32")
    h = b.input("h", shape=[None, 4], dtype="f16")
    scale = b.constant([[0.01, 0.02, 0.04], [0.03, 0.05, 0.07]], dtype="f32")
    zero = b.constant([[128, 120, 10], [0, 255, 60]], dtype="u8")
    return {
        "blocks": b.quantize_linear(x, scale, zero),
        "f16": b.quantize_linear(
            h, b.constant([[0.05, 0.1, 0.2, 0.4]], dtype="f16"),
            b.constant([[128, 128, 0, 10]], dtype="u8"),
        ),
    }  # fmt: skip


@case
def quantize_halves(b: GraphBuilder) -> dict[str, Operand]:
    # Exact halves round to even; the clamp saturates at both ends.
    x = b.input("x", shape=[8], dtype="f32")
    halves = b.constant([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 300.0, -300.0], dtype="f32") + x * 0.0
    one = b.constant([1.0], dtype="f32")
    return {
        "u8": b.quantize_linear(halves, one, b.constant([0], dtype="u8")),
        "i8": b.cast(b.quantize_linear(halves, one, b.constant([0], dtype="i8")), "i32"),
    }  # fmt: skip


#: quantize_i32's inputs (before the random x is added), scales and zero
#: points (scales are powers of two, so that the host dividing by
#: multiplying with the reciprocal gives the same quotients): quotients above
#: 2**24 and odd sums, sums that wrap past either end of i32, and
#: quotients beyond i32 brought back by the zero point.
QUANT_I32_INPUT = [
    [7391418.92, -22405.5, 2.0**31 - 256, -(2.0**31) + 256, 3e9, -3e9],
    [3e9, 2.5, -0.5, 16777217.0, -2.5e9, 100.0],
]
QUANT_I32_SCALE = [[0.25, 2.0, 1.0, 1.0, 1.0, 0.5]]
QUANT_I32_ZERO = [[-2445235, 32345, 1000, -1000, -(2**31) + 5, 2**31 - 1]]


@case
def quantize_i32(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[2, 6], dtype="f32")
    h = b.input("h", shape=[4], dtype="f16")
    values = b.constant(QUANT_I32_INPUT, dtype="f32") + x
    scale = b.constant(QUANT_I32_SCALE, dtype="f32")
    zero = b.constant(QUANT_I32_ZERO, dtype="int32")
    return {
        "i32": b.quantize_linear(values, scale, zero),
        "f16": b.quantize_linear(
            h * 1000.0, b.constant([0.5], dtype="f16"), b.constant([2**31 - 3000], dtype="int32")
        ),
    }


#: onnxruntime 1.2x has no opset-21 Reshape or Transpose for 4-bit types.
OV_ONLY = ["four_bit"]
#: four_bit's constants: an even and an odd count (the last byte half full),
#: and both ends of each type.
INT4_VALUES = [[-8, -1, 0, 3, 7, 5], [1, 2, -3, -4, 6, -7]]
UINT4_VALUES = [0, 15, 7, 8, 3]
INT4_ZERO = [[1, -2, 0]]
UINT4_ZERO = [[8, 0, 15]]


@case
def four_bit(b: GraphBuilder) -> dict[str, Operand]:
    """int4 and uint4 constants (written at opset 21, nibble-packed), each
    result cast to a type wasi-nn carries."""
    x = b.input("x", shape=[2, 6], dtype="f32")
    q = b.constant(INT4_VALUES, dtype="int4")
    u = b.constant(UINT4_VALUES, dtype="uint4")
    zero = b.constant(INT4_ZERO, dtype="int4")
    scale = b.constant([[0.5, 0.25, 2.0]], dtype="f32")
    return {
        "deq_int4": b.dequantize_linear(q, scale, zero),
        "deq_uint4": b.dequantize_linear(
            u, b.constant([0.5], dtype="f32"), b.constant([3], dtype="uint4")
        ),
        "q_int4": b.cast(b.quantize_linear(x, scale, zero), "int32"),
        "q_uint4": b.cast(
            b.quantize_linear(x, scale, b.constant(UINT4_ZERO, dtype="uint4")), "int32"
        ),
        "cast_int4": b.cast(b.cast(x * 3.0, "int4"), "float32"),
        "cast_uint4": b.cast(b.cast(b.abs(x) * 7.0, "uint4"), "int32"),
        "moved": b.cast(b.transpose(b.reshape(q, [3, 4])), "int32"),
    }


@case
def dequantize(b: GraphBuilder) -> dict[str, Operand]:
    u = b.input("u", shape=[3, 4], dtype="u8")
    k = b.input("k", shape=[4, 6], dtype="i32")
    small = b.cast(b.input("s", shape=[None, 4], dtype="i32"), "int8")
    scales = b.constant([[0.1, 0.2, 0.3, 0.4]])
    block_scale = b.constant([[0.5, 0.25], [2.0, 1.0]], dtype="f32")
    block_zero = b.constant([[0, 1], [-1, 2]], dtype="i32")
    half = b.constant([[0.5]], dtype="f16")
    return {
        "u8": b.dequantize_linear(u, scales, b.constant([[1, 2, 3, 4]], dtype="u8")),
        "i32_blocks": b.dequantize_linear(k, block_scale, block_zero),
        "i8_f16": b.dequantize_linear(small, half, b.constant([[-2]], dtype="i8")),
    }


@case
def quantize_round_trip(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[2, 3, 4], dtype="f32")
    scale = b.constant([[[0.02], [0.05], [0.1]]], dtype="f32")
    zero = b.constant([[[128], [100], [30]]], dtype="u8")
    return {"back": b.dequantize_linear(b.quantize_linear(x, scale, zero), scale, zero)}
