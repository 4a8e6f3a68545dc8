"""The graph of ``wasinn.ops.topk``: a stable top-k from ONNX nodes.

WebNN has no top-k, so this is no builder operation: it records ONNX nodes
directly with the builder's ``_emit``, as the operation families in this
package do, and ``wasinn.ops`` calls ``stable_top_k`` as the graph layer's
one entry for it.
"""

from __future__ import annotations

from .._formats.onnx_write import ONNX_TYPES
from .core import Operand, Shape
from .operations import GraphOperations


def stable_top_k(b: GraphOperations, x: Operand, k: int) -> tuple[Operand, Operand]:
    """The top ``k`` along the last axis of ``x``: values, and i64 indices with
    ties in index order, on any engine.

    ONNX TopK leaves the order of equal values to the engine, and OpenVINO
    indeed returns them in no fixed order (onnxruntime keeps index order).
    Only TopK's *values* are trusted: the k-th largest value ``t`` decides
    which elements are in (all above ``t``, and the first ones equal to it),
    a second TopK over keys unique by construction (a reversed running count
    of the chosen elements) gives their indices in increasing order, a third
    sorts their values, and a fourth puts equal values back in index order
    (keys: run of equal values * k + place in index order, unique too).
    Memory stays linear in the axis and in ``k`` (no k x k comparisons).
    """
    lead = x.shape[:-1]
    wide = x
    if x.dtype in ("u8", "f16", "bf16"):
        # Types onnxruntime's TopK lacks; the widened values are exact.
        wide = b.cast(x, "i32" if x.dtype == "u8" else "f32")
    if k == 1:
        # ArgMax keeps the first of equal values on both engines.
        first = b._emit(
            "ArgMax", [wide], {"axis": -1, "keepdims": 1, "select_last_index": 0},
            shape=(*lead, 1), dtype="i64",
        )  # fmt: skip
        return _take(b, x, first), first
    kk = b._ints([k])
    top, _ = b._emit_many(
        "TopK", [wide, kk], {"axis": -1, "largest": 1, "sorted": 1},
        [((*lead, k), wide.dtype), ((*lead, k), "i64")],
    )  # fmt: skip
    kth = b._emit("Slice", [top, b._ints([k - 1]), b._ints([k]), b._ints([-1])],
                  shape=(*lead, 1), dtype=wide.dtype)  # fmt: skip
    above = _bool(b, "Greater", wide, kth, x.shape)
    equal = _bool(b, "Equal", wide, kth, x.shape)
    n_above = _count(b, above)
    room = b._emit("Sub", [b._scalar(k, "f32", "topk"), n_above], shape=(*lead, 1), dtype="f32")
    room = b._emit("Cast", [room], {"to": ONNX_TYPES["i32"]}, shape=room.shape, dtype="i32")
    last_axis = b._scalar(-1, "i64", "topk")
    seen = b._emit("CumSum", [_i32(b, equal), last_axis], shape=x.shape, dtype="i32")
    early = _bool(b, "LessOrEqual", seen, room, x.shape)
    chosen = _bool(b, "Or", above, _bool(b, "And", equal, early, x.shape), x.shape)
    chosen_i32 = _i32(b, chosen)
    countdown = b._emit(
        "CumSum", [chosen_i32, last_axis], {"reverse": 1}, shape=x.shape, dtype="i32"
    )
    keys = b._emit("Mul", [chosen_i32, countdown], shape=x.shape, dtype="i32")
    _, ascending = b._emit_many(
        "TopK", [keys, kk], {"axis": -1, "largest": 1, "sorted": 1},
        [((*lead, k), "i32"), ((*lead, k), "i64")],
    )  # fmt: skip
    picked = _take(b, wide, ascending)
    # Sort those largest first; TopK may shuffle equal values, so number the
    # runs of equal values along the sorted ones (0, 0, 1, 2, 2, ...) and sort
    # again by run, then by place in index order: keys unique by construction.
    by_value, place = b._emit_many(
        "TopK", [picked, kk], {"axis": -1, "largest": 1, "sorted": 1},
        [((*lead, k), wide.dtype), ((*lead, k), "i64")],
    )  # fmt: skip
    pairs = (*lead, k - 1)
    later = b._emit("Slice", [by_value, b._ints([1]), b._ints([k]), b._ints([-1])],
                    shape=pairs, dtype=wide.dtype)  # fmt: skip
    earlier = b._emit("Slice", [by_value, b._ints([0]), b._ints([k - 1]), b._ints([-1])],
                      shape=pairs, dtype=wide.dtype)  # fmt: skip
    same = _bool(b, "Equal", later, earlier, pairs)
    steps = _i32(b, b._emit("Not", [same], shape=pairs, dtype="bool"))
    pads = b._ints([0] * len(lead) + [1] + [0] * (len(lead) + 1))  # one 0 in front of the last axis
    steps = b._emit("Pad", [steps, pads], shape=(*lead, k), dtype="i32")
    run = b._emit("CumSum", [steps, last_axis], shape=(*lead, k), dtype="i32")
    place32 = b._emit("Cast", [place], {"to": ONNX_TYPES["i32"]}, shape=place.shape, dtype="i32")
    spread = b._emit("Mul", [run, b._scalar(k, "i32", "topk")], shape=run.shape, dtype="i32")
    order_keys = b._emit("Add", [spread, place32], shape=run.shape, dtype="i32")
    _, order = b._emit_many(
        "TopK", [order_keys, kk], {"axis": -1, "largest": 0, "sorted": 1},
        [((*lead, k), "i32"), ((*lead, k), "i64")],
    )  # fmt: skip
    indices = _take(b, ascending, _take(b, place, order))
    return _take(b, x, indices), indices


def _count(b: GraphOperations, flags: Operand) -> Operand:
    """How many of ``flags`` (bool) are true along the last axis, as f32.

    Counted in f32 (exact up to 2**24): OpenVINO 2026.4's CPU plugin gets
    integer ReduceSum and ReduceMax over the last axis wrong when an
    element-wise operation follows (half the rows of a [10, 5, 7] input came
    out 0; onnxruntime was right), and the counts feed a Sub or a Cast.
    """
    ones = b._emit("Cast", [flags], {"to": ONNX_TYPES["f32"]}, shape=flags.shape, dtype="f32")
    shape = (*flags.shape[:-1], 1)
    return b._emit("ReduceSum", [ones, b._ints([-1])], {"keepdims": 1}, shape=shape, dtype="f32")


def _take(b: GraphOperations, x: Operand, indices: Operand) -> Operand:
    """``x`` at ``indices`` along the last axis (indices valid by construction)."""
    shape = (*x.shape[:-1], indices.shape[-1])
    return b._emit("GatherElements", [x, indices], {"axis": -1}, shape=shape, dtype=x.dtype)


def _bool(b: GraphOperations, onnx_op: str, p: Operand, q: Operand, shape: Shape) -> Operand:
    return b._emit(onnx_op, [p, q], shape=shape, dtype="bool")


def _i32(b: GraphOperations, flags: Operand) -> Operand:
    return b._emit("Cast", [flags], {"to": ONNX_TYPES["i32"]}, shape=flags.shape, dtype="i32")
