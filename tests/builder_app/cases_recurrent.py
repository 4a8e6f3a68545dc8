"""Graph-builder cases for the recurrent operations (see builder_cases.py):
lstm, gru, lstm_cell and gru_cell, through both of their lowerings (one
ONNX LSTM/GRU node, or unrolled cells for peepholes and other activations)."""

from __future__ import annotations

from collections.abc import Callable

from wasinn import GraphBuilder, Operand

Case = Callable[[GraphBuilder], dict[str, Operand]]
CASES: dict[str, Case] = {}


def case(fn: Case) -> Case:
    CASES[fn.__name__] = fn
    return fn


def _named(prefix: str, operands: list[Operand]) -> dict[str, Operand]:
    return {f"{prefix}{i}": o for i, o in enumerate(operands)}


@case
def lstm_forward_states(b: GraphBuilder) -> dict[str, Operand]:
    """One ONNX LSTM node: biases, initial states, the sequence, a dynamic batch."""
    x = b.input("x", shape=[4, None, 3], dtype="f32")
    w = b.input("w", shape=[1, 8, 3], dtype="f32")
    r = b.input("r", shape=[1, 8, 2], dtype="f32")
    bias = b.input("bias", shape=[1, 8], dtype="f32")
    rbias = b.input("rbias", shape=[1, 8], dtype="f32")
    h0 = b.input("h0", shape=[1, 3, 2], dtype="f32")
    c0 = b.input("c0", shape=[1, 3, 2], dtype="f32")
    out = b.lstm(
        x, w, r, 4, 2, bias=bias, recurrent_bias=rbias, initial_hidden_state=h0,
        initial_cell_state=c0, return_sequence=True,
    )  # fmt: skip
    plain = b.lstm(x, w, r, 4, 2, initial_cell_state=c0)
    return {**_named("y", out), **_named("plain", plain)}


@case
def lstm_layouts_directions(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[3, 2, 3], dtype="f32")
    w = b.input("w", shape=[2, 8, 3], dtype="f32")
    r = b.input("r", shape=[2, 8, 2], dtype="f32")
    bias = b.input("bias", shape=[2, 8], dtype="f32")
    back = b.lstm(
        x, b.slice(w, [1, 0, 0], [1, 8, 3]), b.slice(r, [1, 0, 0], [1, 8, 2]), 3, 2,
        bias=b.slice(bias, [1, 0], [1, 8]), direction="backward", layout="ifgo",
        return_sequence=True,
    )  # fmt: skip
    both = b.lstm(x, w, r, 3, 2, recurrent_bias=bias, direction="both", return_sequence=True)
    return {**_named("back", back), **_named("both", both)}


@case
def lstm_unrolled(b: GraphBuilder) -> dict[str, Operand]:
    """Peepholes and other activations: unrolled lstm_cell steps."""
    x = b.input("x", shape=[3, 2, 3], dtype="f32")
    w = b.input("w", shape=[2, 8, 3], dtype="f32")
    r = b.input("r", shape=[2, 8, 2], dtype="f32")
    bias = b.input("bias", shape=[2, 8], dtype="f32")
    peep = b.input("peep", shape=[2, 6], dtype="f32")
    h0 = b.input("h0", shape=[2, 2, 2], dtype="f32")
    peeped = b.lstm(
        x, w, r, 3, 2, bias=bias, peephole_weight=peep, initial_hidden_state=h0,
        direction="both", layout="ifgo", return_sequence=True,
    )  # fmt: skip
    relu = b.lstm(
        b.slice(x, [0, 0, 0], [2, 2, 3]), b.slice(w, [0, 0, 0], [1, 8, 3]) * 0.25,
        b.slice(r, [0, 0, 0], [1, 8, 2]) * 0.25, 2, 2, direction="backward",
        activations=["sigmoid", "relu", "tanh"], return_sequence=True,
    )  # fmt: skip
    return {**_named("peeped", peeped), **_named("relu", relu)}


@case
def lstm_f16(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[2, 2, 3], dtype="f16")
    w = b.input("w", shape=[1, 8, 3], dtype="f16")
    r = b.input("r", shape=[1, 8, 2], dtype="f16")
    bias = b.input("bias", shape=[1, 8], dtype="f16")
    return _named("y", b.lstm(x, w, r, 2, 2, bias=bias, return_sequence=True))


@case
def gru_reset_and_layouts(b: GraphBuilder) -> dict[str, Operand]:
    """One ONNX GRU node: reset after and before, both layouts and directions."""
    x = b.input("x", shape=[3, None, 3], dtype="f32")
    w = b.input("w", shape=[2, 6, 3], dtype="f32")
    r = b.input("r", shape=[2, 6, 2], dtype="f32")
    bias = b.input("bias", shape=[2, 6], dtype="f32")
    rbias = b.input("rbias", shape=[2, 6], dtype="f32")
    h0 = b.input("h0", shape=[2, 3, 2], dtype="f32")
    after = b.gru(
        x, w, r, 3, 2, bias=bias, recurrent_bias=rbias, initial_hidden_state=h0,
        direction="both", return_sequence=True,
    )  # fmt: skip
    before = b.gru(
        x, b.slice(w, [0, 0, 0], [1, 6, 3]), b.slice(r, [0, 0, 0], [1, 6, 2]), 3, 2,
        recurrent_bias=b.slice(rbias, [0, 0], [1, 6]), reset_after=False, layout="rzn",
        direction="backward", return_sequence=True,
    )  # fmt: skip
    return {**_named("after", after), **_named("before", before)}


@case
def gru_unrolled(b: GraphBuilder) -> dict[str, Operand]:
    """Other activations than sigmoid and tanh: unrolled gru_cell steps."""
    x = b.input("x", shape=[3, 2, 3], dtype="f32")
    w = b.input("w", shape=[2, 6, 3], dtype="f32")
    r = b.input("r", shape=[2, 6, 2], dtype="f32")
    bias = b.input("bias", shape=[2, 6], dtype="f32")
    after = b.gru(
        x, w * 0.25, r * 0.25, 3, 2, bias=bias, activations=["sigmoid", "relu"],
        direction="both", return_sequence=True, layout="rzn",
    )  # fmt: skip
    before = b.gru(
        x, b.slice(w, [1, 0, 0], [1, 6, 3]), b.slice(r, [1, 0, 0], [1, 6, 2]), 3, 2,
        recurrent_bias=b.slice(bias, [1, 0], [1, 6]), activations=["tanh", "sigmoid"],
        reset_after=False,
    )  # fmt: skip
    return {**_named("after", after), **_named("before", before)}


@case
def lstm_cell_options(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[None, 3], dtype="f32")
    w = b.input("w", shape=[8, 3], dtype="f32")
    r = b.input("r", shape=[8, 2], dtype="f32")
    h = b.input("h", shape=[3, 2], dtype="f32")
    c = b.input("c", shape=[3, 2], dtype="f32")
    bias = b.input("bias", shape=[8], dtype="f32")
    peep = b.input("peep", shape=[6], dtype="f32")
    plain = b.lstm_cell(x, w, r, h, c, 2)
    full = b.lstm_cell(
        x, w, r, h, c, 2, bias=bias, recurrent_bias=bias, peephole_weight=peep, layout="ifgo",
        activations=["sigmoid", "relu", "tanh"],
    )  # fmt: skip
    return {**_named("plain", plain), **_named("full", full)}


@case
def gru_cell_options(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[3, 3], dtype="f32")
    w = b.input("w", shape=[6, 3], dtype="f32")
    r = b.input("r", shape=[6, 2], dtype="f32")
    h = b.input("h", shape=[3, 2], dtype="f32")
    bias = b.input("bias", shape=[6], dtype="f32")
    half = b.input("half", shape=[3, 3], dtype="f16")
    return {
        "after": b.gru_cell(x, w, r, h, 2, bias=bias, recurrent_bias=bias),
        "before": b.gru_cell(
            x,
            w,
            r,
            h,
            2,
            recurrent_bias=bias,
            reset_after=False,
            layout="rzn",
            activations=["tanh", "relu"],
        ),  # fmt: skip
        "f16": b.gru_cell(
            half, b.cast(w, "f16"), b.cast(r, "f16"), b.cast(h, "f16"), 2, reset_after=False
        ),
    }
