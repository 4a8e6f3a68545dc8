"""The graph builder's recurrent operations (lstm, gru, lstm_cell, gru_cell):
ONNX checker, onnxruntime vs numpy, OpenVINO vs onnxruntime, and the same
graphs in a real component (see builder_check).

The numpy references follow WebNN's definitions step by step (its emulation
in the specification: gate order by layout, peepholes on the previous cell
state, backward steps stored at their own time position), not ONNX's, so
they check the lowering too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from builder_app import cases_recurrent
from builder_check import Reference

from wasinn import GraphBuilder, ValidationError

F64 = np.float64
Arr = np.ndarray
ACTIVATIONS: dict[str, Callable[[Arr], Arr]] = {
    "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
    "tanh": np.tanh,
    "relu": lambda v: np.maximum(v, 0),
}


# ---------------------------------------------------------------- references


def _blocks(a: Arr, layout: str, size: int, axis: int = -1) -> dict[str, Arr]:
    """The gate blocks of ``a`` along ``axis`` (the last; the first for weights)."""
    return {g: np.take(a, range(i * size, (i + 1) * size), axis=axis) for i, g in enumerate(layout)}


def lstm_cell(
    x: Arr, w: Arr, r: Arr, h: Arr, c: Arr, size: int, bias: Arr | None = None,
    rbias: Arr | None = None, peep: Arr | None = None, layout: str = "iofg",
    acts: Sequence[str] = ("sigmoid", "tanh", "tanh"),
) -> tuple[Arr, Arr]:  # fmt: skip
    gate, cell, out = (ACTIVATIONS[a] for a in acts)
    pre = x.astype(F64) @ w.astype(F64).T + h.astype(F64) @ r.astype(F64).T
    pre = pre + (0 if bias is None else bias) + (0 if rbias is None else rbias)
    p = _blocks(pre, layout, size)
    peeps = _blocks(peep.astype(F64), "iof", size) if peep is not None else {}
    i, f, o = (gate(p[g] + peeps.get(g, 0) * c) for g in "ifo")  # the previous cell state
    new_c = f * c + i * cell(p["g"])
    return o * out(new_c), new_c


def gru_cell(
    x: Arr, w: Arr, r: Arr, h: Arr, size: int, bias: Arr | None = None,
    rbias: Arr | None = None, reset_after: bool = True, layout: str = "zrn",
    acts: Sequence[str] = ("sigmoid", "tanh"),
) -> Arr:  # fmt: skip
    gate, new = (ACTIVATIONS[a] for a in acts)
    x, h = x.astype(F64), h.astype(F64)
    zero = np.zeros(3 * size)
    b = _blocks(zero if bias is None else bias.astype(F64), layout, size)
    rb = _blocks(zero if rbias is None else rbias.astype(F64), layout, size)
    ws, rs = (_blocks(m.astype(F64), layout, size, axis=0) for m in (w, r))
    z, reset = (gate(x @ ws[g].T + h @ rs[g].T + b[g] + rb[g]) for g in "zr")
    if reset_after:
        n = new(x @ ws["n"].T + b["n"] + reset * (h @ rs["n"].T + rb["n"]))
    else:
        n = new(x @ ws["n"].T + b["n"] + rb["n"] + (reset * h) @ rs["n"].T)
    return z * h + (1 - z) * n


def recurrent(
    kind: str, x: Arr, w: Arr, r: Arr, size: int, *, bias: Arr | None = None,
    rbias: Arr | None = None, peep: Arr | None = None, h0: Arr | None = None,
    c0: Arr | None = None, sequence: bool = False, direction: str = "forward", **cell: Any,
) -> list[Arr]:  # fmt: skip
    """WebNN's lstm or gru: the cell run over the steps in each direction."""
    steps, batch = x.shape[:2]
    finals: list[list[Arr]] = [[], []]
    sequences = []
    for d in range(2 if direction == "both" else 1):
        h = np.zeros((batch, size)) if h0 is None else h0[d].astype(F64)
        c = np.zeros((batch, size)) if c0 is None else c0[d].astype(F64)
        pick = {
            "bias": None if bias is None else bias[d],
            "rbias": None if rbias is None else rbias[d],
        }
        outs: list[Arr] = [np.zeros(0)] * steps
        for s in range(steps):
            t = steps - 1 - s if d == 1 or direction == "backward" else s
            if kind == "lstm":
                p = None if peep is None else peep[d]
                h, c = lstm_cell(x[t], w[d], r[d], h, c, size, peep=p, **pick, **cell)
            else:
                h = gru_cell(x[t], w[d], r[d], h, size, **pick, **cell)
            outs[t] = h
        finals[0].append(h)
        finals[1].append(c)
        sequences.append(np.stack(outs))
    result = [np.stack(finals[0])] + ([np.stack(finals[1])] if kind == "lstm" else [])
    result += [np.stack(sequences, axis=1)] if sequence else []
    return [v.astype(x.dtype) for v in result]


def _named(prefix: str, values: Sequence[Arr]) -> dict[str, Arr]:
    return {f"{prefix}{i}": np.asarray(v) for i, v in enumerate(values)}


def _lstm_forward_states(**t: Arr) -> dict[str, Arr]:
    x, w, r = t["x"], t["w"], t["r"]
    full = recurrent(
        "lstm", x, w, r, 2, bias=t["bias"], rbias=t["rbias"], h0=t["h0"], c0=t["c0"],
        sequence=True,
    )  # fmt: skip
    return {**_named("y", full), **_named("plain", recurrent("lstm", x, w, r, 2, c0=t["c0"]))}


def _lstm_layouts(x: Arr, w: Arr, r: Arr, bias: Arr) -> dict[str, Arr]:
    back = recurrent(
        "lstm", x, w[1:], r[1:], 2, bias=bias[1:], direction="backward", layout="ifgo",
        sequence=True,
    )  # fmt: skip
    both = recurrent("lstm", x, w, r, 2, rbias=bias, direction="both", sequence=True)
    return {**_named("back", back), **_named("both", both)}


def _lstm_unrolled(x: Arr, w: Arr, r: Arr, bias: Arr, peep: Arr, h0: Arr) -> dict[str, Arr]:
    peeped = recurrent(
        "lstm", x, w, r, 2, bias=bias, peep=peep, h0=h0, direction="both", layout="ifgo",
        sequence=True,
    )  # fmt: skip
    relu = recurrent(
        "lstm", x[:2], w[:1] * 0.25, r[:1] * 0.25, 2, direction="backward", sequence=True,
        acts=("sigmoid", "relu", "tanh"),
    )  # fmt: skip
    return {**_named("peeped", peeped), **_named("relu", relu)}


def _gru_reset(**t: Arr) -> dict[str, Arr]:
    x, w, r, rbias = t["x"], t["w"], t["r"], t["rbias"]
    after = recurrent(
        "gru", x, w, r, 2, bias=t["bias"], rbias=rbias, h0=t["h0"], direction="both",
        sequence=True,
    )  # fmt: skip
    before = recurrent(
        "gru", x, w[:1], r[:1], 2, rbias=rbias[:1], reset_after=False, layout="rzn",
        direction="backward", sequence=True,
    )  # fmt: skip
    return {**_named("after", after), **_named("before", before)}


def _gru_unrolled(x: Arr, w: Arr, r: Arr, bias: Arr) -> dict[str, Arr]:
    after = recurrent(
        "gru", x, w * 0.25, r * 0.25, 2, bias=bias, acts=("sigmoid", "relu"), direction="both",
        sequence=True, layout="rzn",
    )  # fmt: skip
    before = recurrent(
        "gru", x, w[1:], r[1:], 2, rbias=bias[1:], acts=("tanh", "sigmoid"), reset_after=False
    )
    return {**_named("after", after), **_named("before", before)}


def _lstm_cell(**t: Arr) -> dict[str, Arr]:
    x, w, r, h, c, bias = t["x"], t["w"], t["r"], t["h"], t["c"], t["bias"]
    full = lstm_cell(x, w, r, h, c, 2, bias, bias, t["peep"], "ifgo", ("sigmoid", "relu", "tanh"))
    return {
        **_named("plain", [v.astype(np.float32) for v in lstm_cell(x, w, r, h, c, 2)]),
        **_named("full", [v.astype(np.float32) for v in full]),
    }


def _gru_cell(x: Arr, w: Arr, r: Arr, h: Arr, bias: Arr, half: Arr) -> dict[str, Arr]:
    before = gru_cell(x, w, r, h, 2, rbias=bias, reset_after=False, layout="rzn",
                      acts=("tanh", "relu"))  # fmt: skip
    w16, r16, h16 = (v.astype(np.float16) for v in (w, r, h))
    return {
        "after": gru_cell(x, w, r, h, 2, bias, bias).astype(np.float32),
        "before": before.astype(np.float32),
        "f16": gru_cell(half, w16, r16, h16, 2, reset_after=False).astype(np.float16),
    }


REFERENCE: dict[str, Reference] = {
    "lstm_forward_states": _lstm_forward_states,
    "lstm_layouts_directions": _lstm_layouts,
    "lstm_unrolled": _lstm_unrolled,
    "lstm_f16": lambda x, w, r, bias: _named(
        "y", recurrent("lstm", x, w, r, 2, bias=bias, sequence=True)
    ),
    "gru_reset_and_layouts": _gru_reset,
    "gru_unrolled": _gru_unrolled,
    "lstm_cell_options": _lstm_cell,
    "gru_cell_options": _gru_cell,
}
CASES = list(cases_recurrent.CASES)


# ---------------------------------------------------------------- misuse


def _operands(b: GraphBuilder) -> dict[str, Any]:
    return {
        "x": b.input("x", shape=[3, 2, 4], dtype="f32"),
        "w": b.input("w", shape=[1, 8, 4], dtype="f32"),
        "r": b.input("r", shape=[1, 8, 2], dtype="f32"),
        "gw": b.input("gw", shape=[1, 6, 4], dtype="f32"),
        "gr": b.input("gr", shape=[1, 6, 2], dtype="f32"),
        "cx": b.input("cx", shape=[2, 4], dtype="f32"),
        "cw": b.input("cw", shape=[8, 4], dtype="f32"),
        "cr": b.input("cr", shape=[8, 2], dtype="f32"),
        "ch": b.input("ch", shape=[2, 2], dtype="f32"),
        "h": b.input("h", shape=[3, 2, 4], dtype="f16"),
    }


Misuse = Callable[[GraphBuilder, dict[str, Any]], Any]
MISUSE: dict[str, tuple[Misuse, str]] = {
    "lstm steps": (
        lambda b, o: b.lstm(o["x"], o["w"], o["r"], 2, 2),
        "lstm: the input's first dimension must be steps (2), not 3",
    ),
    "lstm dynamic steps": (
        lambda b, o: b.lstm(b.input("d", shape=[None, 2, 4]), o["w"], o["r"], 3, 2),
        "lstm: the input's first dimension must be steps (3), not dynamic",
    ),
    "lstm steps zero": (
        lambda b, o: b.lstm(o["x"], o["w"], o["r"], 0, 2),
        "lstm: steps must be a positive integer, not 0",
    ),
    "lstm hidden size": (
        lambda b, o: b.lstm(o["x"], o["w"], o["r"], 3, 2**30),
        "lstm: hidden_size 1073741824 is too large (8 * hidden_size must be below 2**32)",
    ),
    "lstm weight": (
        lambda b, o: b.lstm(o["x"], o["gw"], o["r"], 3, 2),
        "lstm: the weight must have shape [1, 8, 4] ([num_directions, 4 * hidden_size, "
        "input_size]), not [1, 6, 4]",
    ),
    "lstm both directions": (
        lambda b, o: b.lstm(o["x"], o["w"], o["r"], 3, 2, direction="both"),
        "lstm: the weight must have shape [2, 8, 4]",
    ),
    "lstm recurrent weight": (
        lambda b, o: b.lstm(o["x"], o["w"], o["w"], 3, 2),
        "lstm: the recurrent_weight must have shape [1, 8, 2]",
    ),
    "lstm peephole": (
        lambda b, o: b.lstm(o["x"], o["w"], o["r"], 3, 2, peephole_weight=b.input("p", [1, 8])),
        "lstm: the peephole_weight must have shape [1, 6] ([num_directions, 3 * hidden_size])",
    ),
    "lstm initial state": (
        lambda b, o: b.lstm(o["x"], o["w"], o["r"], 3, 2, initial_cell_state=o["ch"]),
        "lstm: the initial_cell_state must have shape [1, 2, 2] ([num_directions, batch, "
        "hidden_size]), not [2, 2]",
    ),
    "lstm dtype": (
        lambda b, o: b.lstm(o["h"], o["w"], o["r"], 3, 2),
        "lstm: the weight is f32, but the input is f16; they must have the same data type",
    ),
    "lstm ints": (
        lambda b, o: b.lstm(b.input("k", [3, 2, 4], "i32"), o["w"], o["r"], 3, 2),
        "lstm: the input is i32, but lstm takes f32, f16",
    ),
    "lstm rank": (
        lambda b, o: b.lstm(o["cx"], o["w"], o["r"], 3, 2),
        "lstm: the input must be 3-D, not 2-D [2, 4]",
    ),
    "lstm direction": (
        lambda b, o: b.lstm(o["x"], o["w"], o["r"], 3, 2, direction="reverse"),
        "lstm: direction must be one of 'forward', 'backward', 'both', not 'reverse'",
    ),
    "lstm layout": (
        lambda b, o: b.lstm(o["x"], o["w"], o["r"], 3, 2, layout="zrn"),
        "lstm: layout must be one of 'iofg', 'ifgo', not 'zrn'",
    ),
    "lstm activations": (
        lambda b, o: b.lstm(o["x"], o["w"], o["r"], 3, 2, activations=["relu", "tanh"]),
        "lstm: activations must be a list of 3 of 'relu', 'sigmoid', 'tanh' (default "
        "['sigmoid', 'tanh', 'tanh']), not ['relu', 'tanh']",
    ),
    "lstm activation name": (
        lambda b, o: b.lstm(o["x"], o["w"], o["r"], 3, 2, activations=["gelu"] * 3),
        "lstm: activations must be a list of 3 of 'relu', 'sigmoid', 'tanh'",
    ),
    "lstm flag": (
        lambda b, o: b.lstm(o["x"], o["w"], o["r"], 3, 2, return_sequence=1),
        "lstm: return_sequence must be True or False, not 1",
    ),
    "gru weight": (
        lambda b, o: b.gru(o["x"], o["w"], o["gr"], 3, 2),
        "gru: the weight must have shape [1, 6, 4] ([num_directions, 3 * hidden_size, "
        "input_size]), not [1, 8, 4]",
    ),
    "gru bias": (
        lambda b, o: b.gru(o["x"], o["gw"], o["gr"], 3, 2, bias=b.input("gb", [6])),
        "gru: the bias must have shape [1, 6] ([num_directions, 3 * hidden_size]), not [6]",
    ),
    "gru layout": (
        lambda b, o: b.gru(o["x"], o["gw"], o["gr"], 3, 2, layout="iofg"),
        "gru: layout must be one of 'zrn', 'rzn', not 'iofg'",
    ),
    "gru reset": (
        lambda b, o: b.gru(o["x"], o["gw"], o["gr"], 3, 2, reset_after="yes"),
        "gru: reset_after must be True or False, not 'yes'",
    ),
    "gru activations": (
        lambda b, o: b.gru(o["x"], o["gw"], o["gr"], 3, 2, activations=["tanh"] * 3),
        "gru: activations must be a list of 2 of 'relu', 'sigmoid', 'tanh'",
    ),
    "lstm_cell state": (
        lambda b, o: b.lstm_cell(o["cx"], o["cw"], o["cr"], o["ch"], b.input("c", [3, 2]), 2),
        "lstm_cell: the cell_state must have shape [2, 2] ([batch, hidden_size]), not [3, 2]",
    ),
    "lstm_cell rank": (
        lambda b, o: b.lstm_cell(o["x"], o["cw"], o["cr"], o["ch"], o["ch"], 2),
        "lstm_cell: the input must be 2-D, not 3-D [3, 2, 4]",
    ),
    "lstm_cell bias": (
        lambda b, o: b.lstm_cell(o["cx"], o["cw"], o["cr"], o["ch"], o["ch"], 2, bias=o["ch"]),
        "lstm_cell: the bias must have shape [8] ([4 * hidden_size]), not [2, 2]",
    ),
    "lstm_cell list": (
        lambda b, o: b.lstm_cell(o["cx"], o["cw"], o["cr"], [[0.0] * 2] * 2, o["ch"], 2),
        "lstm_cell: the hidden_state must be an Operand of this builder, not list",
    ),
    "gru_cell weight": (
        lambda b, o: b.gru_cell(o["cx"], o["cw"], o["cr"], o["ch"], 2),
        "gru_cell: the weight must have shape [6, 4] ([3 * hidden_size, input_size]), not [8, 4]",
    ),
    "gru_cell hidden size": (
        lambda b, o: b.gru_cell(o["cx"], o["cw"], o["cr"], o["ch"], 2.0),
        "gru_cell: hidden_size must be a positive integer, not 2.0",
    ),
    "unknown option": (
        lambda b, o: b.gru(o["x"], o["gw"], o["gr"], 3, 2, linear_before_reset=True),
        "unexpected keyword argument 'linear_before_reset'",
    ),
}


@pytest.mark.parametrize("name", MISUSE)
def test_misuse_is_refused_when_the_operation_is_added(name: str) -> None:
    make, message = MISUSE[name]
    b = GraphBuilder()
    error = TypeError if name == "unknown option" else ValidationError
    with pytest.raises(error) as info:
        make(b, _operands(b))
    assert message in str(info.value)


# ---------------------------------------------------------------- shapes and lowering


def _node_types(outputs: dict[str, Any], b: GraphBuilder) -> list[str]:
    import onnx

    return [n.op_type for n in onnx.load_from_string(b.to_onnx(outputs)).graph.node]


def test_outputs_are_lists_with_webnn_shapes() -> None:
    b = GraphBuilder()
    x = b.input("x", shape=[5, None, 3], dtype="f32")
    w, r = b.input("w", [2, 8, 3]), b.input("r", [2, 8, 2])
    hidden, cell, sequence = b.lstm(x, w, r, 5, 2, direction="both", return_sequence=True)
    assert (hidden.shape, cell.shape, sequence.shape) == (
        (2, None, 2),
        (2, None, 2),
        (5, 2, None, 2),
    )
    assert len(b.lstm(x, b.input("w1", [1, 8, 3]), b.input("r1", [1, 8, 2]), 5, 2)) == 2
    gw, gr = b.input("gw", [1, 6, 3]), b.input("gr", [1, 6, 2])
    assert [o.shape for o in b.gru(x, gw, gr, 5, 2)] == [(1, None, 2)]
    assert [o.shape for o in b.gru(x, gw, gr, 5, 2, return_sequence=True)][1] == (5, 1, None, 2)
    c = b.input("c", [4, 3])
    h = b.input("h", [4, 2])
    cell_outputs = b.lstm_cell(c, b.input("cw", [8, 3]), b.input("cr", [8, 2]), h, h, 2)
    assert [o.shape for o in cell_outputs] == [(4, 2), (4, 2)]
    assert b.gru_cell(c, b.input("gcw", [6, 3]), b.input("gcr", [6, 2]), h, 2).shape == (4, 2)


def test_default_activations_become_one_onnx_node_and_the_rest_is_unrolled() -> None:
    b = GraphBuilder()
    x = b.input("x", shape=[3, 2, 4], dtype="f32")
    w, r = b.input("w", [1, 8, 4]), b.input("r", [1, 8, 2])
    assert _node_types({"h": b.lstm(x, w, r, 3, 2)[0]}, b) == ["LSTM", "Identity"]
    reordered = _node_types({"h": b.lstm(x, w, r, 3, 2, layout="ifgo")[0]}, b)
    assert reordered.count("Split") == 2 and "LSTM" in reordered
    peep = b.input("p", [1, 6])
    unrolled = _node_types({"h": b.lstm(x, w, r, 3, 2, peephole_weight=peep)[0]}, b)
    assert "LSTM" not in unrolled and unrolled.count("Gemm") == 6  # two per step
    gw, gr = b.input("gw", [1, 6, 4]), b.input("gr", [1, 6, 2])
    assert _node_types({"h": b.gru(x, gw, gr, 3, 2)[0]}, b) == ["GRU", "Identity"]
    relu = _node_types({"h": b.gru(x, gw, gr, 3, 2, activations=["sigmoid", "relu"])[0]}, b)
    assert "GRU" not in relu and relu.count("Relu") == 3


def test_gru_reset_after_is_onnx_linear_before_reset() -> None:
    import onnx

    b = GraphBuilder()
    x = b.input("x", shape=[3, 2, 4], dtype="f32")
    gw, gr = b.input("gw", [1, 6, 4]), b.input("gr", [1, 6, 2])
    for after in (True, False):
        graph = onnx.load_from_string(
            b.to_onnx({"h": b.gru(x, gw, gr, 3, 2, reset_after=after)[0]})
        )
        node = next(n for n in graph.graph.node if n.op_type == "GRU")
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        assert attrs["linear_before_reset"] == int(after)
