"""Graph-builder cases for the element-wise operations (see builder_cases.py)."""

from __future__ import annotations

from collections.abc import Callable

from wasinn import GraphBuilder, Operand

CASES: dict[str, Callable[[GraphBuilder], dict[str, Operand]]] = {}


def case(
    fn: Callable[[GraphBuilder], dict[str, Operand]],
) -> Callable[[GraphBuilder], dict[str, Operand]]:
    CASES[fn.__name__] = fn
    return fn


@case
def binary_f32_broadcast(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[2, 3, 4], dtype="f32")
    y = b.input("y", shape=[3, 1], dtype="f32")
    return {
        "add": b.add(x, y),
        "sub": b.sub(x, y),
        "mul": b.mul(x, y),
        "div": b.div(x, b.abs(y) + 1.0),
        "max": b.max(x, y),
        "min": b.min(x, y),
        "pow": b.pow(b.abs(x) + 0.5, y),
    }


@case
def binary_i32(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[4, 5], dtype="i32")
    y = b.input("y", shape=[5], dtype="i32")
    return {"add": b.add(x, y), "sub": x - y, "mul": x * y, "max": b.max(x, y), "min": b.min(x, y)}


@case
def binary_u8(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[3, 4], dtype="u8")
    y = b.input("y", shape=[1, 4], dtype="u8")
    return {"add": x + y, "max": b.max(x, y), "min": b.min(x, y)}


@case
def binary_f16_and_f64(b: GraphBuilder) -> dict[str, Operand]:
    h = b.input("h", shape=[2, 3], dtype="f16")
    d = b.input("d", shape=[2, 3], dtype="f64")
    return {"h2": h * h + 1.0, "d2": d / 3.0 - d}


@case
def operators_and_numbers(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[None, 3], dtype="f32")
    return {"y": (1.0 - x) * 2.0 / (b.abs(x) + 1.0) + (-x), "z": 3.0 / (b.abs(x) + 1.0)}


@case
def comparisons(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[4, 3], dtype="f32")
    y = b.input("y", shape=[3], dtype="f32")
    k = b.input("k", shape=[4, 3], dtype="i32")
    return {
        "eq": b.equal(b.round_even(x), b.round_even(y)),
        "ne": b.not_equal(k, 0),
        "gt": b.greater(x, y),
        "ge": b.greater_or_equal(k, 1),
        "lt": b.lesser(x, 0.0),
        "le": b.lesser_or_equal(x, y),
    }


@case
def logic(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[4, 3], dtype="f32")
    p, q = b.greater(x, 0.0), b.lesser(x, 1.0)
    return {
        "and": b.logical_and(p, q),
        "or": b.logical_or(p, q),
        "xor": b.logical_xor(p, q),
        "not": b.logical_not(p),
    }


@case
def unary_math(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[3, 5], dtype="f32")
    positive = b.abs(x) + 0.25
    return {
        "abs": b.abs(x),
        "ceil": b.ceil(x),
        "floor": b.floor(x),
        "round": b.round_even(x * 2.0),
        "exp": b.exp(x),
        "log": b.log(positive),
        "neg": b.neg(x),
        "reciprocal": b.reciprocal(positive),
        "sqrt": b.sqrt(positive),
        "sin": b.sin(x),
        "cos": b.cos(x),
        "tan": b.tan(x * 0.5),
        "erf": b.erf(x),
        "sign": b.sign(x),
        "identity": b.identity(x),
    }


@case
def unary_ints(b: GraphBuilder) -> dict[str, Operand]:
    k = b.input("k", shape=[6], dtype="i64")
    return {"abs": b.abs(k), "neg": -k, "sign": b.sign(k), "relu": b.relu(k)}


@case
def activations(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[2, 8], dtype="f32")
    return {
        "relu": b.relu(x),
        "sigmoid": b.sigmoid(x),
        "tanh": b.tanh(x),
        "softplus": b.softplus(x),
        "softsign": b.softsign(x),
        "elu": b.elu(x, alpha=0.5),
        "leaky": b.leaky_relu(x),
        "hsig": b.hard_sigmoid(x, alpha=0.3, beta=0.4),
        "hswish": b.hard_swish(x * 3.0),
        "gelu": b.gelu(x),
        "linear": b.linear(x, alpha=2.0, beta=-1.0),
        "prelu": b.prelu(x, b.constant([0.1] * 8, dtype="f32")),
    }


@case
def clamp_cast_where(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[3, 4], dtype="f32")
    k = b.input("k", shape=[3, 4], dtype="u8")
    return {
        "clamp": b.clamp(x, min_value=-0.5, max_value=0.5),
        "low": b.clamp(x, min_value=0),
        "kclamp": b.clamp(k, max_value=4),
        "to_i32": b.cast(x * 10.0, "int32"),
        "to_f32": b.cast(k, "float32"),
        "to_u8": b.cast(b.clamp(x * 100.0, min_value=0), "u8"),
        "where": b.where(b.greater(x, 0.0), x, b.neg(x)),
        "where_n": b.where(b.greater(k, 4), 1.0, x),
    }


@case
def clamp_exact_integers(b: GraphBuilder) -> dict[str, Operand]:
    """Integer bounds stay exact: 2**63 - 1 is no float (as WebNN's MLNumber)."""
    q = b.input("q", shape=[3, 4], dtype="i64")
    k = b.input("k", shape=[3, 4], dtype="i32")
    return {
        "i64_edges": b.clamp(q, min_value=-(2**63), max_value=2**63 - 1),
        "i64_high": b.clamp(q, min_value=-1, max_value=2**63 - 1),
        "i32_edges": b.clamp(k, min_value=-(2**31), max_value=2**31 - 1),
        "i32_whole_float": b.clamp(k, min_value=-2.0, max_value=3),
    }


#: Values near the ends of i32 and near 2**24 (where f32 stops being exact),
#: moved by the random input in [-5, 5] so that every one stays in range.
NEAR_LIMITS = [2**31 - 6, -(2**31) + 5, 2**24 - 1, -(2**24) + 1, 2**24 + 6, 7, -7, 0] * 2
#: Floats a clamp must keep: NaN, both infinities, f16's largest finite values.
SPECIALS = [float("nan"), float("inf"), -float("inf"), 65504.0, -65504.0, -2.0, 1.0, 0.0]


@case
def clamp_host_limits(b: GraphBuilder) -> dict[str, Operand]:
    """Integer clamps and relu near 2**31 and 2**24, where the host's f32
    comparisons go wrong; NaN and infinities through one- and two-sided clamps."""
    k = b.input("k", shape=[16], dtype="i32")
    q = b.input("q", shape=[16], dtype="i64")
    h = b.input("h", shape=[8], dtype="f16")
    x = b.input("x", shape=[8], dtype="f32")
    near = k + b.constant(NEAR_LIMITS, dtype="int32")
    qnear = q + b.constant(NEAR_LIMITS, dtype="int64")
    h_special = b.constant(SPECIALS, dtype="float16") + h * 0.0
    x_special = b.constant(SPECIALS, dtype="float32") + x * 0.0
    return {
        "i32_both": b.clamp(near, min_value=-(2**31) + 3, max_value=2**31 - 3),
        "i32_low": b.clamp(near, min_value=2**31 - 4),
        "i32_high": b.clamp(near, max_value=-(2**31) + 2),
        "i32_f32_exact": b.clamp(near, min_value=-(2**24) + 2, max_value=2**24 - 2),
        "i32_near_2_24": b.clamp(near, min_value=-3, max_value=2**24 + 3),
        "i64_both": b.clamp(qnear, min_value=-(2**31) + 3, max_value=2**31 - 3),
        "i64_low": b.clamp(qnear, min_value=2**31 - 4, max_value=2**63 - 1),
        "i32_relu": b.relu(near),
        "i64_relu": b.relu(qnear),
        "f16_low": b.clamp(h_special, min_value=-2),
        "f16_high": b.clamp(h_special, max_value=3),
        "f16_both": b.clamp(h_special, min_value=-1, max_value=0.5),
        "f32_low": b.clamp(x_special, min_value=-2),
        "f32_both": b.clamp(x_special, min_value=-1, max_value=0.5),
    }


@case
def nan_and_infinity(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[6], dtype="f32")
    specials = b.constant([float("nan"), float("inf"), -float("inf"), 0.0, 1.0, 2.0], dtype="f32")
    mixed = specials + x * 0.0
    return {"nan": b.is_nan(mixed), "inf": b.is_infinite(mixed)}
