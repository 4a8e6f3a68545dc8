"""The graph builder's shape operations: ONNX checker, onnxruntime vs numpy,
OpenVINO vs onnxruntime, and the same graphs in a real component (see builder_check)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from builder_app import cases_shape
from builder_check import (
    Reference,
    run_openvino,
)

from wasinn import GraphBuilder, ValidationError


def _fit(indices: np.ndarray, size: int) -> np.ndarray:
    """Indices as the builder makes them: clamped into [-size, size), then from the end."""
    clamped = np.clip(indices.astype(np.int64), -size, size - 1)
    return np.where(clamped < 0, clamped + size, clamped)


def _gather_nd(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    k = idx.shape[-1]
    fitted = np.stack([_fit(idx[..., j], x.shape[j]) for j in range(k)], axis=-1)
    return np.stack([x[tuple(c)] for c in fitted.reshape(-1, k)]).reshape(
        idx.shape[:-1] + x.shape[k:]
    )


def _scatter_nd(x: np.ndarray, idx: np.ndarray, updates: np.ndarray) -> np.ndarray:
    k = idx.shape[-1]
    out = x.copy()
    fitted = np.stack([_fit(idx[..., j], x.shape[j]) for j in range(k)], axis=-1).reshape(-1, k)
    for c, u in zip(fitted, updates.reshape((-1,) + x.shape[k:]), strict=True):
        out[tuple(c)] = u
    return out


def _scatter_elements(x: np.ndarray, idx: np.ndarray, updates: np.ndarray, axis: int) -> np.ndarray:
    out = x.copy()
    np.put_along_axis(out, _fit(idx, x.shape[axis]), updates, axis=axis)
    return out


def _reshape_and_transpose(x: np.ndarray) -> dict[str, np.ndarray]:
    return {
        "flat": x.reshape(24), "r46": x.reshape(4, 6), "left": x.reshape(6, 4),
        "t": x.transpose(), "t102": x.transpose(1, 0, 2), "same": x,
        "scalar": x[1, 2, 3:4] * np.float32(2),
    }  # fmt: skip


def _split_and_concat(x: np.ndarray, d: np.ndarray) -> dict[str, np.ndarray]:
    top, bottom = x[:2], x[2:]
    p, q, r = x[:, :1], x[:, 1:3], x[:, 3:]
    return {
        "top": top, "bottom": bottom, "p": p, "q": q, "r": r,
        "swapped": np.concatenate([bottom, top]), "rejoined": np.concatenate([r, p, q], 1),
        "one": x, "whole": d, "d2": d[:, 2:],
        "dyn": np.concatenate([d[:, 2:], d[:, :2], d], 1), "stack": np.concatenate([d, d]),
    }  # fmt: skip


def _pads(x: np.ndarray, k: np.ndarray, d: np.ndarray) -> dict[str, np.ndarray]:
    return {
        "zeros": np.pad(x, [(1, 1), (2, 2)]),
        "value": np.pad(x, [(0, 2), (1, 0)], constant_values=-1.5),
        "edge": np.pad(x, [(1, 1), (2, 2)], mode="edge"),
        "reflect": np.pad(x, [(1, 1), (2, 2)], mode="reflect"),
        "u8": np.pad(k, [(1, 0), (0, 2)], constant_values=7), "none": x,
        "dyn_edge": np.pad(d, [(2, 1), (1, 0)], mode="edge"),
        "dyn_reflect": np.pad(d, [(0, 0), (2, 2)], mode="reflect"),
    }  # fmt: skip


def _triangles(x: np.ndarray, batch: np.ndarray, d: np.ndarray) -> dict[str, np.ndarray]:
    return {
        "upper": np.triu(x), "upper1": np.triu(x, 1), "upper_m1": np.triu(x, -1),
        "lower": np.tril(x), "lower2": np.tril(x, 2), "lower_m1": np.tril(x, -1),
        "batched": np.tril(batch), "dyn": np.triu(d, 1),
    }  # fmt: skip


def _gathers(x: np.ndarray, k: np.ndarray, w: np.ndarray, d: np.ndarray) -> dict[str, np.ndarray]:
    fixed = np.array([3, -1, 0, -5])
    return {
        "rows": x[_fit(k, 5)], "cols": x[:, _fit(w, 4)],
        "unsigned": x[:, np.minimum(np.abs(k), 3)], "fixed": x[fixed],
        "u32_fixed": x[[3, 0]], "one": x[:, 2], "dyn": d[_fit(k, 3)],
        "dyn_fixed": d[:, _fit(fixed, 4)],
        "fixed_out": x[[4, 0, 4, 0]], "u32_out": x[:, [3, 1]],
    }  # fmt: skip


def _gather_elements(
    x: np.ndarray, k: np.ndarray, w: np.ndarray, d: np.ndarray
) -> dict[str, np.ndarray]:
    fixed = np.array([[3, 1, 1], [2, 0, -1]])
    return {
        "axis0": np.take_along_axis(x, _fit(k, 4), 0),
        "axis1": np.take_along_axis(x, _fit(w, 3), 1),
        "fixed": np.take_along_axis(x, _fit(fixed, 4), 0),
        "dyn": np.take_along_axis(d, _fit(k, 3), 0),
        "fixed_out": np.take_along_axis(x, np.array([[2, 2], [0, 0], [1, 2], [2, 0]]), 1),
    }  # fmt: skip


def _dtypes_moved(**inputs: np.ndarray) -> dict[str, np.ndarray]:
    out = {}
    for dt, x in inputs.items():
        out[f"{dt}_t"] = x.T
        out[f"{dt}_cat"] = np.concatenate([x[1:3], x[::-1]])
        out[f"{dt}_g"] = np.tile(x, (1, 2))[:, [7, 0, 6]]
        out[f"{dt}_pad"] = np.pad(x.reshape(2, 6), [(1, 0), (0, 1)], mode="edge")
        if dt != "u8":
            out[f"{dt}_tri"] = np.tril(np.broadcast_to(x, (2, 3, 4)))
    out["i8_moved"] = inputs["i32"].astype(np.int8)[[2, 0]].T.astype(np.int32)
    return out


_NEW_ROWS = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
REFERENCE: dict[str, Reference] = {
    "reshape_sizes": lambda x, y: {
        "x83": x.reshape(x.shape[0], -1, 3), "y_flat": y.reshape(y.shape[0], -1),
        "y_split": y.reshape(y.shape[0], y.shape[1], 1, 2), "by_other": y.reshape(x.shape[0], -1),
        "static": x.reshape(6, -1),
    },
    "indexing": lambda x, d: {
        "row": x[0], "last": x[-1, :, -1], "block": x[:, 1:3], "every2": x[..., ::2],
        "back": x[::-1, None, -2:], "mixed": x[1:-1:2, ..., None], "whole": x[...],
        "down": x[3:0:-2, 4], "past": x[2:99, -99:2], "d_first": d[0], "d_tail": d[-2:, ::-1],
        "d_new": d[None, ..., 1], "d_abs": np.abs(d[:, 0]), "neg": -x[0, 0],
    },
    "reshape_and_transpose": _reshape_and_transpose,
    "reshape_dynamic": lambda x: {
        "rows": x.reshape(-1, 12), "split": x.reshape(-1, 2, 6), "fixed": x.reshape(9, 4),
        "t": x.transpose(2, 0, 1),
    },
    "expand_shapes": lambda x, d: {
        "lead": np.broadcast_to(x, (2, 3, 4)), "same": x, "keep": np.broadcast_to(d, (3, 5)),
        "new": np.broadcast_to(d, (2, 3, 5)), "grow": np.broadcast_to(d, (3, 4)),
    },
    "slices": lambda x, d: {
        "block": x[1:4, 2:6], "strided": x[0:5:2, 1:6:3], "all": x, "last": x[4:5, 5:6],
        "dyn": d[0:2, 1:5:2],
    },
    "split_and_concat": _split_and_concat,
    "dynamic_split": lambda d: {"part0": d[:, :1], "part1": d[:, 1:2], "part2": d[:, 2:]},
    "pads": _pads,
    "tile_and_reverse": lambda x, d: {
        "rows": np.tile(x, (2, 1)), "both": np.tile(x, (3, 2)), "once": x,
        "dyn_tile": np.tile(d, (1, 2, 2)), "rev": x[::-1, ::-1], "rev1": x[:, ::-1], "rev_none": x,
        "dyn_rev": d[::-1, :, ::-1], "dyn_rev0": d[::-1],
    },
    "triangles": _triangles,
    "gathers": _gathers,
    "gather_elements_cases": _gather_elements,
    "gather_nd_cases": lambda x, pairs, singles, triples, d: {
        "rows": _gather_nd(x, pairs), "blocks": _gather_nd(x, singles),
        "points": _gather_nd(x, triples), "fixed": _gather_nd(x, np.array([[0, -1], [3, 2]])),
        "fixed_out": x[[3, 3], [0, 4]],
        "dyn": _gather_nd(d, pairs),
    },
    "scatter_elements_cases": lambda x, k, u, d: {
        "rows": _scatter_elements(x, k, u, 1),
        "fixed": _scatter_elements(
            x, np.array([[0, 1, 2, -1], [2, 0, 1, 0]]),
            np.array([[10, 11, 12, 13], [20, 21, 22, 23]], np.float32), 0,
        ),
        "dyn": _scatter_elements(
            d, np.array([[1, 3, 0, -1]]), np.array([[5, 6, 7, 8]], np.float32), 0
        ),
    },
    "scatter_nd_cases": lambda x, at, row, v, r, d: {
        "point": _scatter_nd(x, at, v), "one_row": _scatter_nd(x, row, r),
        "fixed": _scatter_nd(x, np.array([[1], [-1]]), _NEW_ROWS),
        "dyn": _scatter_nd(d, np.array([[1], [-1]]), _NEW_ROWS),
    },
    "dtypes_moved": _dtypes_moved,
    "ov_only_dtypes": lambda x, k: {
        "t": x.T, "cat": np.concatenate([x, x[::-1, ::-1]], 1), "g": x[[2, 0]],
        "pad": np.pad(x, [(1, 0), (1, 0)], constant_values=2.5), "tile": np.tile(x, (1, 2)),
        "tri": np.triu(x, 1), "u8_tri": np.tril(k, -1),
    },
}  # fmt: skip
CASES = list(cases_shape.CASES)


MISUSE = {
    "reshape count": (
        lambda b, x, k, d: b.reshape(x, [4, 2]),
        "reshape: new_shape [4, 2] has 8 elements, but the input [2, 3] has 6",
    ),
    "reshape two None": (
        lambda b, x, k, d: b.reshape(d, [None, None]),
        "reshape: new_shape [?, ?] has more than one None",
    ),
    "reshape indivisible": (
        lambda b, x, k, d: b.reshape(x, [None, 4]),
        "reshape: the input [2, 3] has 6 elements, which new_shape [?, 4] cannot hold",
    ),
    "reshape dynamic": (
        lambda b, x, k, d: b.reshape(d, [4, 2]),
        "reshape: new_shape [4, 2] has 8 elements, which is not a multiple of the 3",
    ),
    "reshape zero": (
        lambda b, x, k, d: b.reshape(x, [0, 6]),
        "reshape: new_shape: dimensions must be positive integers or None, not 0",
    ),
    "expand mismatch": (
        lambda b, x, k, d: b.expand(x, [2, 4]),
        "expand: the input [2, 3] cannot be expanded to [2, 4] (dimension 1 is 3; it "
        "must be 1 or 4)",
    ),
    "expand fewer": (
        lambda b, x, k, d: b.expand(x, [3]),
        "expand: new_shape [3] has fewer dimensions than the input [2, 3]",
    ),
    "expand new None": (
        lambda b, x, k, d: b.expand(x, [None, 2, 3]),
        "expand: new_shape [?, 2, 3] has None at a new leading dimension",
    ),
    "transpose repeat": (
        lambda b, x, k, d: b.transpose(x, permutation=[0, 0]),
        "transpose: permutation must list each axis from 0 to 1 once, not [0, 0]",
    ),
    "transpose length": (
        lambda b, x, k, d: b.transpose(x, permutation=[0]),
        "transpose: permutation must have 2 values, one per dimension of the input (rank 2), not 1",
    ),
    "slice past end": (
        lambda b, x, k, d: b.slice(x, [1, 1], [2, 2]),
        "slice: dimension 0 has size 2, but starts[0] + sizes[0] = 1 + 2 = 3 goes past it",
    ),
    "slice size 0": (
        lambda b, x, k, d: b.slice(x, [0, 0], [0, 2]),
        "slice: every value of sizes must be an integer of at least 1, not 0",
    ),
    "slice length": (
        lambda b, x, k, d: b.slice(x, [0], [1]),
        "slice: starts must have 2 values",
    ),
    "slice stride 0": (
        lambda b, x, k, d: b.slice(x, [0, 0], [1, 1], strides=[1, 0]),
        "slice: every value of strides must be an integer of at least 1, not 0",
    ),
    "split uneven": (
        lambda b, x, k, d: b.split(x, 2, axis=1),
        "split: dimension 1 has size 3, which 2 parts cannot divide evenly",
    ),
    "split sum": (
        lambda b, x, k, d: b.split(x, [1, 1], axis=1),
        "split: the sizes [1, 1] add up to 2, but dimension 1 has size 3",
    ),
    "split axis": (
        lambda b, x, k, d: b.split(x, 2, axis=2),
        "split: axis must be an integer from 0 to 1 for an input of rank 2, not 2",
    ),
    "split none": (
        lambda b, x, k, d: b.split(x, 0),
        "split: splits must be from 1 to 8192 parts, not 0",
    ),
    "concat dtypes": (
        lambda b, x, k, d: b.concat([x, k], 0),
        "concat: input 1 is i32 and input 0 f32; all inputs must have the same data type",
    ),
    "concat ranks": (
        lambda b, x, k, d: b.concat([x, b.reshape(x, [6])], 0),
        "concat: input 1 has rank 1 and input 0 rank 2",
    ),
    "concat shapes": (
        lambda b, x, k, d: b.concat([x, b.transpose(x)], 0),
        "concat: input 1 [3, 2] does not match input 0 [2, 3] in dimension 1; only "
        "dimension 0 (the axis) may differ",
    ),
    "concat nothing": (
        lambda b, x, k, d: b.concat([], 0),
        "concat: inputs must hold from 1 to 8192 operands, not 0",
    ),
    "concat one operand": (
        lambda b, x, k, d: b.concat(x, 0),
        "concat: inputs must be a list of Operands, not Operand",
    ),
    "concat dynamic": (
        lambda b, x, k, d: b.concat([d, b.input("e", shape=[None, 4])], 0),
        "concat: input 1 [?, 4] does not match input 0 [?, 3] in dimension 1",
    ),
    "pad ONNX mode name": (
        lambda b, x, k, d: b.pad(x, [0, 0], [0, 0], mode="reflect"),
        "pad: mode must be 'constant', 'edge' or 'reflection', not 'reflect'",
    ),
    "pad reflection too wide": (
        lambda b, x, k, d: b.pad(x, [0, 3], [0, 0], mode="reflection"),
        "pad: reflection can add at most 2 elements on each side of dimension 1 (size 3), not 3",
    ),
    "pad length": (
        lambda b, x, k, d: b.pad(x, [1], [1]),
        "pad: beginning_padding must have 2 values",
    ),
    "pad negative": (
        lambda b, x, k, d: b.pad(x, [0, 0], [1, -1]),
        "pad: every value of ending_padding must be an integer of at least 0, not -1",
    ),
    "pad value type": (
        lambda b, x, k, d: b.pad(x, [1, 1], [0, 0], value="0"),
        "pad: value must be a number, not '0'",
    ),
    "pad fraction for ints": (
        lambda b, x, k, d: b.pad(k, [1, 1], [0, 0], value=0.5),
        "pad: 0.5 is not a whole number, but the operand is i32",
    ),
    "tile zero": (
        lambda b, x, k, d: b.tile(x, [1, 0]),
        "tile: every value of repetitions must be an integer of at least 1, not 0",
    ),
    "tile length": (
        lambda b, x, k, d: b.tile(x, [2]),
        "tile: repetitions must have 2 values",
    ),
    "reverse axis": (
        lambda b, x, k, d: b.reverse(x, axes=[2]),
        "reverse: every axis must be an integer from 0 to 1 for an input of rank 2, not 2",
    ),
    "reverse repeat": (
        lambda b, x, k, d: b.reverse(x, axes=[1, 1]),
        "reverse: axes [1, 1] repeat an axis",
    ),
    "triangular rank": (
        lambda b, x, k, d: b.triangular(b.reshape(x, [6])),
        "triangular: the input must have rank 2 or more, not 1 (shape [6])",
    ),
    "triangular upper": (
        lambda b, x, k, d: b.triangular(x, upper=1),
        "triangular: upper must be True or False, not 1",
    ),
    "triangular diagonal": (
        lambda b, x, k, d: b.triangular(x, diagonal=0.5),
        "triangular: diagonal must be an integer",
    ),
    "gather float indices": (
        lambda b, x, k, d: b.gather(x, x),
        "gather: the indices are f32; use i32, u32 or i64",
    ),
    "gather axis": (
        lambda b, x, k, d: b.gather(x, k, axis=2),
        "gather: axis must be an integer from 0 to 1 for an input of rank 2, not 2",
    ),
    "gather scalar input": (
        lambda b, x, k, d: b.gather(b.reshape(b.slice(x, [0, 0], [1, 1]), []), k),
        "gather: the input must have rank 1 or more, not 0 (shape [])",
    ),
    "gather_elements rank": (
        lambda b, x, k, d: b.gather_elements(x, b.reshape(k, [6])),
        "gather_elements: the indices have rank 1 but the input rank 2",
    ),
    "gather_elements shape": (
        lambda b, x, k, d: b.gather_elements(x, b.constant([[0, 1]], dtype="int32")),
        "gather_elements: the indices [1, 2] must have the input's shape [2, 3] except "
        "along axis 0 (dimension 1 differs)",
    ),
    "gather_nd coordinate too long": (
        lambda b, x, k, d: b.gather_nd(x, b.constant([[0, 1, 0]], dtype="int32")),
        "gather_nd: coordinates of 3 values (the last dimension of the indices [1, 3]) "
        "are more than the input's rank 2",
    ),
    "gather_nd dynamic coordinate": (
        lambda b, x, k, d: b.gather_nd(x, b.input("q", shape=[2, None], dtype="i32")),
        "gather_nd: the last dimension of the indices [2, ?] (the length of each "
        "coordinate) must be static",
    ),
    "scatter_elements updates dtype": (
        lambda b, x, k, d: b.scatter_elements(x, k, k),
        "scatter_elements: the updates are i32 and the input f32; they must have the "
        "same data type",
    ),
    "scatter_elements updates shape": (
        lambda b, x, k, d: b.scatter_elements(
            x, b.constant([[0, 1, 0]], dtype="int32"), b.constant([[1.0, 2.0]])
        ),
        "scatter_elements: the updates [1, 2] must have the shape of the indices [1, 3]",
    ),
    "scatter_nd updates shape": (
        lambda b, x, k, d: b.scatter_nd(
            x, b.constant([[1]], dtype="int32"), b.constant([1.0, 2.0])
        ),
        "scatter_nd: the updates [2] must have the shape [1, 3]",
    ),
    "not an operand": (
        lambda b, x, k, d: b.transpose([[1.0]]),
        "transpose: the input must be an Operand of this builder, not list",
    ),
    "other builder": (
        lambda b, x, k, d: b.concat([x, GraphBuilder().input("q", shape=[2, 3])], 0),
        "concat: the input 1 belongs to another GraphBuilder",
    ),
    "unknown option": (
        lambda b, x, k, d: b.transpose(x, perm=[1, 0]),
        "unexpected keyword argument 'perm'",
    ),
    "positional option": (
        lambda b, x, k, d: b.gather(x, k, 1),
        "takes 3 positional arguments but 4 were given",
    ),
}


@pytest.mark.parametrize("name", MISUSE)
def test_misuse_is_refused_when_the_operation_is_added(name: str) -> None:
    make, message = MISUSE[name]
    b = GraphBuilder()
    x = b.input("x", shape=[2, 3], dtype="f32")
    k = b.input("k", shape=[2, 3], dtype="i32")
    d = b.input("d", shape=[None, 3], dtype="f32")
    error = TypeError if name in ("unknown option", "positional option") else ValidationError
    with pytest.raises(error) as info:
        make(b, x, k, d)
    assert message in str(info.value)


SHAPES = {
    "reshape keeps a dynamic dimension": (
        lambda b, d: b.reshape(d, [None, 2, 6]),
        (None, 2, 6),
    ),
    "reshape resolves None when it can": (
        lambda b, d: b.reshape(b.slice(d, [0, 0, 0], [1, 3, 4]), [None, 6]),
        (2, 6),
    ),
    "reshape to a scalar": (
        lambda b, d: b.reshape(b.slice(d, [0, 0, 0], [1, 1, 1]), []),
        (),
    ),
    "expand keeps a dynamic dimension": (
        lambda b, d: b.expand(d, [2, None, 3, 4]),
        (2, None, 3, 4),
    ),
    "transpose moves a dynamic dimension": (
        lambda b, d: b.transpose(d),
        (4, 3, None),
    ),
    "slice of a dynamic dimension": (
        lambda b, d: b.slice(d, [1, 0, 1], [5, 3, 3], strides=[2, 1, 2]),
        (3, 3, 2),
    ),
    "split of a dynamic dimension": (
        lambda b, d: b.split(d, 2)[1],
        (None, 3, 4),
    ),
    "concat along a dynamic dimension": (
        lambda b, d: b.concat([d, d], 0),
        (None, 3, 4),
    ),
    "concat fills in a known size": (
        lambda b, d: b.concat([d, b.input("e", shape=[2, None, 4])], 2),
        (2, 3, 8),
    ),
    "pad of a dynamic dimension": (
        lambda b, d: b.pad(d, [1, 1, 0], [1, 0, 2]),
        (None, 4, 6),
    ),
    "tile of a dynamic dimension": (
        lambda b, d: b.tile(d, [2, 2, 1]),
        (None, 6, 4),
    ),
    "gather with scalar indices": (
        lambda b, d: b.gather(d, b.constant(1, dtype="int32"), axis=1),
        (None, 4),
    ),
    "gather_nd on a dynamic input": (
        lambda b, d: b.gather_nd(d, b.constant([[0, 1]], dtype="int32")),
        (1, 4),
    ),
}


@pytest.mark.parametrize("name", SHAPES)
def test_shapes_are_inferred_when_the_operation_is_added(name: str) -> None:
    make, shape = SHAPES[name]
    b = GraphBuilder()
    assert make(b, b.input("d", shape=[None, 3, 4], dtype="f32")).shape == shape


def _op_types(b: GraphBuilder) -> list[str]:
    return [node.op_type for node in b._nodes]


def test_constant_indices_in_range_need_no_clamp_but_computed_ones_are_clamped() -> None:
    b = GraphBuilder()
    x = b.input("x", shape=[4, 3], dtype="f32")
    b.gather(x, b.constant([3, -4], dtype="int64"))
    assert _op_types(b) == ["Gather"]
    b.gather(x, b.input("k", shape=[2], dtype="i64"))
    assert _op_types(b)[1:] == ["Max", "Min", "Gather"]
    # Against a dynamic dimension, even constant indices are clamped, by its run-time size.
    b.gather(b.input("d", shape=[None, 3], dtype="f32"), b.constant([3], dtype="uint32"))
    assert _op_types(b)[4:] == ["Cast", "Shape", "Reshape", "Neg", "Sub", "Min", "Gather"]


def test_split_returns_one_operand_per_part() -> None:
    b = GraphBuilder()
    parts = b.split(b.input("x", shape=[2, 9], dtype="f32"), 3, axis=1)
    assert [p.shape for p in parts] == [(2, 3)] * 3
    assert len({p._name for p in parts}) == 3


def test_expanding_a_dynamic_dimension_to_1_checks_it_at_run_time() -> None:
    """WebNN's expand broadcasts one way, ONNX's Expand both ways: a dynamic
    dimension expanded to 1 must turn out to be 1, not pass through as 3."""
    import onnxruntime as ort

    b = GraphBuilder()
    y = b.expand(b.input("d", shape=[None, 2], dtype="f32"), [2, 1, 2])
    assert y.shape == (2, 1, 2)
    session = ort.InferenceSession(b.to_onnx({"y": y}), providers=["CPUExecutionProvider"])
    (out,) = session.run(None, {"d": np.ones((1, 2), np.float32)})
    assert out.shape == (2, 1, 2)
    with pytest.raises(Exception, match="(?i)reshape"):
        session.run(None, {"d": np.ones((3, 2), np.float32)})
    data = b.to_onnx({"y": y})
    assert run_openvino(data, {"d": np.ones((1, 2), np.float32)})["y"].shape == (2, 1, 2)
    with pytest.raises(Exception, match="(?i)reshape"):
        run_openvino(data, {"d": np.ones((3, 2), np.float32)})


@pytest.mark.parametrize(
    ("key", "error", "message"),
    [
        ((0, 0, 0, 0), IndexError, "too many indices: <wasinn.Operand f32[4, 5, 6]> has 3"),
        (4, IndexError, "index 4 is out of bounds for dimension 0 with size 4"),
        ((slice(None), -6), IndexError, "index -6 is out of bounds for dimension 1 with size 5"),
        ((..., ...), IndexError, "a single ellipsis"),
        (slice(None, None, 0), ValueError, "slice step must be a non-zero integer"),
        (slice("a", None), TypeError, "slice bounds must be integers or None"),
        ([0, 1], TypeError, "not list; pick elements by an index operand with builder.gather"),
        (True, TypeError, "not bool"),
    ],
)
def test_indexing_misuse(key: Any, error: type[Exception], message: str) -> None:
    x = GraphBuilder().input("x", shape=[4, 5, 6], dtype="f32")
    with pytest.raises(error) as info:
        x[key]
    assert message in str(info.value)


def test_indexing_keeps_dynamic_dimensions_unknown_and_numpy_integers() -> None:
    x = GraphBuilder().input("x", shape=[None, 5], dtype="f32")
    assert x[1:].shape == (None, 5)
    assert x[np.int64(1)].shape == (5,)
    assert x[:, np.int32(-1)].shape == (None,)
    assert x[None, ..., ::2].shape == (1, None, 3)


def test_reshape_sizes_misuse() -> None:
    b = GraphBuilder()
    x = b.input("x", shape=[None, 4, 6], dtype="f32")
    with pytest.raises(ValidationError, match="axis must be an integer from -3 to 2"):
        x.size(3)
    with pytest.raises(ValidationError, match="a size of an operand of another GraphBuilder"):
        b.reshape(x, [GraphBuilder().input("o", shape=[None], dtype="f32").size(0), None])
    with pytest.raises(ValidationError, match="more than one None"):
        b.reshape(x, [None, None, x.size(0)])
    static = b.input("s", shape=[5, 6], dtype="f32")
    with pytest.raises(ValidationError, match="has 30 elements, which new_shape's fixed"):
        b.reshape(static, [x.size(0), 4])
    assert x.size(-1) == 6 and repr(x.size(0)).startswith("<wasinn.Size of dimension 0")
