"""Graph-builder cases for the shape operations (see builder_cases.py).

Index inputs are random (i32/i64 in [-5, 5]): the builder clamps them into
range, and the references in test_builder_shape.py clamp the same way.
Scatter cases with computed indices write one element per row, so repeated
indices (whose winner ONNX leaves undefined) cannot occur.
"""

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
def reshape_and_transpose(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[2, 3, 4], dtype="f32")
    corner = b.slice(x, [1, 2, 3], [1, 1, 1])
    return {
        "flat": b.reshape(x, [24]), "r46": b.reshape(x, [4, 6]), "left": b.reshape(x, [6, None]),
        "t": b.transpose(x), "t102": b.transpose(x, permutation=[1, 0, 2]),
        "same": b.transpose(x, permutation=[0, 1, 2]),
        "scalar": b.reshape(b.reshape(corner, []) * 2.0, [1]),
    }  # fmt: skip


@case
def reshape_dynamic(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[None, 3, 4], dtype="f32")
    return {
        "rows": b.reshape(x, [None, 12]), "split": b.reshape(x, [None, 2, 6]),
        "fixed": b.reshape(x, [9, 4]), "t": b.transpose(x, permutation=[2, 0, 1]),
    }  # fmt: skip


@case
def expand_shapes(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[3, 1], dtype="f32")
    d = b.input("d", shape=[None, 1], dtype="i32")
    return {
        "lead": b.expand(x, [2, 3, 4]), "same": b.expand(x, [3, 1]),
        "keep": b.expand(d, [None, 5]), "new": b.expand(d, [2, None, 5]),
        "grow": b.expand(d, [3, 4]),
    }  # fmt: skip


@case
def slices(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[5, 6], dtype="f32")
    d = b.input("d", shape=[None, 6], dtype="u8")
    return {
        "block": b.slice(x, [1, 2], [3, 4]), "strided": b.slice(x, [0, 1], [5, 5], strides=[2, 3]),
        "all": b.slice(x, [0, 0], [5, 6]), "last": b.slice(x, [4, 5], [1, 1]),
        "dyn": b.slice(d, [0, 1], [2, 4], strides=[1, 2]),
    }  # fmt: skip


@case
def reshape_sizes(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[None, 4, 6], dtype="f32")
    y = b.input("y", shape=[None, None, 2], dtype="f32")
    return {
        "x83": b.reshape(x, [x.size(0), None, 3]), "y_flat": b.reshape(y, [y.size(0), None]),
        "y_split": b.reshape(y, [y.size(0), y.size(1), 1, 2]),
        "by_other": b.reshape(y, [x.size(0), None]), "static": b.reshape(x, [x.size(2), None]),
    }  # fmt: skip


@case
def indexing(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[4, 5, 6], dtype="f32")
    d = b.input("d", shape=[None, 5, 6], dtype="i32")
    return {
        "row": x[0], "last": x[-1, :, -1], "block": x[:, 1:3], "every2": x[..., ::2],
        "back": x[::-1, None, -2:], "mixed": x[1:-1:2, ..., None], "whole": x[...],
        "down": x[3:0:-2, 4], "past": x[2:99, -99:2], "d_first": d[0], "d_tail": d[-2:, ::-1],
        "d_new": d[None, ..., 1], "d_abs": abs(d[:, 0]), "neg": -x[0, 0],
    }  # fmt: skip


@case
def split_and_concat(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[4, 6], dtype="f32")
    d = b.input("d", shape=[None, 6], dtype="i64")
    top, bottom = b.split(x, 2)
    p, q, r = b.split(x, [1, 2, 3], axis=1)
    (whole,) = b.split(d, 1)
    d1, d2 = b.split(d, [2, 4], axis=1)
    return {
        "top": top, "bottom": bottom, "p": p, "q": q, "r": r,
        "swapped": b.concat([bottom, top], 0), "rejoined": b.concat([r, p, q], 1),
        "one": b.concat([x], 1), "whole": whole, "d2": d2,
        "dyn": b.concat([d2, d1, d], 1), "stack": b.concat([d, d], 0),
    }  # fmt: skip


@case
def dynamic_split(b: GraphBuilder) -> dict[str, Operand]:
    d = b.input("d", shape=[2, None], dtype="f32")
    parts = b.split(d, 3, axis=1)
    return {f"part{i}": part for i, part in enumerate(parts)}


@case
def pads(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[2, 3], dtype="f32")
    k = b.input("k", shape=[3, 4], dtype="u8")
    d = b.input("d", shape=[None, 3], dtype="f32")
    return {
        "zeros": b.pad(x, [1, 2], [1, 2]), "value": b.pad(x, [0, 1], [2, 0], value=-1.5),
        "edge": b.pad(x, [1, 2], [1, 2], mode="edge"),
        "reflect": b.pad(x, [1, 2], [1, 2], mode="reflection"),
        "u8": b.pad(k, [1, 0], [0, 2], value=7), "none": b.pad(x, [0, 0], [0, 0]),
        "dyn_edge": b.pad(d, [2, 1], [1, 0], mode="edge"),
        "dyn_reflect": b.pad(d, [0, 2], [0, 2], mode="reflection"),
    }  # fmt: skip


@case
def tile_and_reverse(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[2, 3], dtype="f32")
    d = b.input("d", shape=[None, 1, 4], dtype="i32")
    return {
        "rows": b.tile(x, [2, 1]), "both": b.tile(x, [3, 2]), "once": b.tile(x, [1, 1]),
        "dyn_tile": b.tile(d, [1, 2, 2]), "rev": b.reverse(x), "rev1": b.reverse(x, axes=[1]),
        "rev_none": b.reverse(x, axes=[]), "dyn_rev": b.reverse(d),
        "dyn_rev0": b.reverse(d, axes=[0, 1]),
    }  # fmt: skip


@case
def triangles(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[3, 4], dtype="f32")
    batch = b.input("batch", shape=[2, 3, 3], dtype="f32")
    d = b.input("d", shape=[None, 4, None], dtype="f32")
    return {
        "upper": b.triangular(x), "upper1": b.triangular(x, diagonal=1),
        "upper_m1": b.triangular(x, diagonal=-1), "lower": b.triangular(x, upper=False),
        "lower2": b.triangular(x, upper=False, diagonal=2),
        "lower_m1": b.triangular(x, upper=False, diagonal=-1),
        "batched": b.triangular(batch, upper=False), "dyn": b.triangular(d, diagonal=1),
    }  # fmt: skip


@case
def gathers(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[5, 4], dtype="f32")
    k = b.input("k", shape=[2, 3], dtype="i32")
    w = b.input("w", shape=[6], dtype="i64")
    d = b.input("d", shape=[None, 4], dtype="f32")
    fixed = b.constant([3, -1, 0, -5], dtype="int32")
    return {
        "rows": b.gather(x, k), "cols": b.gather(x, w, axis=1),
        "unsigned": b.gather(x, b.cast(b.abs(k), "uint32"), axis=1),
        "fixed": b.gather(x, fixed), "u32_fixed": b.gather(x, b.constant([3, 0], dtype="uint32")),
        "one": b.gather(x, b.constant(2, dtype="int64"), axis=1),
        "dyn": b.gather(d, k),
        "dyn_fixed": b.gather(d, b.constant([3, -1, 0, -4], dtype="int32"), axis=1),
        # Constant indices out of range are clamped, as computed ones are.
        "fixed_out": b.gather(x, b.constant([7, -9, 4, -6], dtype="int32")),
        "u32_out": b.gather(x, b.constant([9, 1], dtype="uint32"), axis=1),
    }  # fmt: skip


@case
def gather_elements_cases(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[4, 3], dtype="f32")
    k = b.input("k", shape=[2, 3], dtype="i32")
    w = b.input("w", shape=[4, 5], dtype="i64")
    d = b.input("d", shape=[None, 3], dtype="u8")
    fixed = b.constant([[3, 1, 1], [2, 0, -1]], dtype="int64")
    return {
        "axis0": b.gather_elements(x, k), "axis1": b.gather_elements(x, w, axis=1),
        "fixed": b.gather_elements(x, fixed), "dyn": b.gather_elements(d, k),
        "fixed_out": b.gather_elements(
            x, b.constant([[3, 9], [-7, 0], [1, -1], [2, -4]], dtype="int32"), axis=1
        ),
    }  # fmt: skip


@case
def gather_nd_cases(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[4, 5, 6], dtype="f32")
    pairs = b.input("pairs", shape=[2, 2], dtype="i64")
    singles = b.input("singles", shape=[3, 1], dtype="i32")
    triples = b.input("triples", shape=[2, 3], dtype="i32")
    d = b.input("d", shape=[None, 5], dtype="f32")
    return {
        "rows": b.gather_nd(x, pairs), "blocks": b.gather_nd(x, singles),
        "points": b.gather_nd(x, triples),
        "fixed": b.gather_nd(x, b.constant([[0, -1], [3, 2]], dtype="int32")),
        "fixed_out": b.gather_nd(x, b.constant([[9, -9], [3, 6]], dtype="int64")),
        "dyn": b.gather_nd(d, pairs),
    }  # fmt: skip


@case
def scatter_elements_cases(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[3, 4], dtype="f32")
    k = b.input("k", shape=[3, 1], dtype="i32")
    u = b.input("u", shape=[3, 1], dtype="f32")
    d = b.input("d", shape=[None, 4], dtype="f32")
    fixed = b.constant([[0, 1, 2, -1], [2, 0, 1, 0]], dtype="int64")
    new = b.constant([[10.0, 11.0, 12.0, 13.0], [20.0, 21.0, 22.0, 23.0]], dtype="f32")
    return {
        "rows": b.scatter_elements(x, k, u, axis=1), "fixed": b.scatter_elements(x, fixed, new),
        "dyn": b.scatter_elements(d, b.constant([[1, 3, 0, -1]], dtype="int32"),
                                  b.constant([[5.0, 6.0, 7.0, 8.0]], dtype="f32")),
    }  # fmt: skip


@case
def scatter_nd_cases(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[4, 3], dtype="f32")
    at = b.input("at", shape=[1, 2], dtype="i64")
    row = b.input("row", shape=[1, 1], dtype="i32")
    v = b.input("v", shape=[1], dtype="f32")
    r = b.input("r", shape=[1, 3], dtype="f32")
    d = b.input("d", shape=[None, 3], dtype="f32")
    rows = b.constant([[1], [-1]], dtype="int32")
    new_rows = b.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype="f32")
    return {
        "point": b.scatter_nd(x, at, v), "one_row": b.scatter_nd(x, row, r),
        "fixed": b.scatter_nd(x, rows, new_rows), "dyn": b.scatter_nd(d, rows, new_rows),
    }  # fmt: skip


@case
def dtypes_moved(b: GraphBuilder) -> dict[str, Operand]:
    out: dict[str, Operand] = {}
    inputs = {dt: b.input(dt, shape=[3, 4], dtype=dt) for dt in ("f16", "f64", "u8", "i32", "i64")}
    for dt, x in inputs.items():
        out[f"{dt}_t"] = b.transpose(x)
        out[f"{dt}_cat"] = b.concat([b.slice(x, [1, 0], [2, 4]), b.reverse(x, axes=[0])], 0)
        out[f"{dt}_g"] = b.gather(b.tile(x, [1, 2]), b.constant([7, 0, -2], dtype="int32"), axis=1)
        out[f"{dt}_pad"] = b.pad(b.reshape(x, [2, 6]), [1, 0], [0, 1], mode="edge")
        if dt != "u8":  # onnxruntime has no Trilu for u8: see ov_only_dtypes
            out[f"{dt}_tri"] = b.triangular(b.expand(x, [2, 3, 4]), upper=False)
    small = b.cast(inputs["i32"], "int8")
    picked = b.gather_nd(small, b.constant([[2], [0]], dtype="int32"))
    out["i8_moved"] = b.cast(b.transpose(picked), "i32")
    return out


# Cases whose ONNX operators onnxruntime's CPU provider lacks (bf16 data
# movement, Trilu on u8): test_builder_shape.py checks OpenVINO, natively and
# in the component, against numpy instead.
OV_ONLY = ["ov_only_dtypes"]


@case
def ov_only_dtypes(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[3, 4], dtype="bf16")
    k = b.input("k", shape=[3, 4], dtype="u8")
    return {
        "t": b.transpose(x), "cat": b.concat([x, b.reverse(x)], 1),
        "g": b.gather(x, b.constant([2, -3], dtype="int64")),
        "pad": b.pad(x, [1, 1], [0, 0], value=2.5),
        "tile": b.tile(x, [1, 2]), "tri": b.triangular(x, diagonal=1),
        "u8_tri": b.triangular(k, upper=False, diagonal=-1),
    }  # fmt: skip
