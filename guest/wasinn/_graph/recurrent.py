"""Graph builder operations: recurrent networks (lstm, gru) and their single
steps (lstm_cell, gru_cell).

Names, arguments and defaults follow WebNN's ``MLGraphBuilder`` in snake_case;
the layers return lists of operands as WebNN does (``lstm``: hidden state,
cell state and, with ``return_sequence=True``, every step's hidden state;
``gru``: hidden state and the sequence). WebNN's weight layouts are ONNX's
by default (``"iofg"`` for LSTM, ``"zrn"`` for GRU); the other ones
(``"ifgo"``, ``"rzn"``) are lowered to ``Split`` and ``Concat`` nodes that
reorder the gates, which the host's engine folds for constants.

With the default activations (sigmoid and tanh), ``lstm`` and ``gru``
become one ONNX ``LSTM`` or ``GRU`` node, which computes exactly WebNN's
steps. Two cases are unrolled instead into ``steps`` copies of the cell per
direction, as WebNN's own emulation does: other activations (ONNX names them
in a list of strings, which wasinn's ONNX writer does not write), and LSTM
peepholes (ONNX, and onnxruntime, feed the output gate's peephole the new
cell state where WebNN feeds it the previous one, and OpenVINO agrees with
neither). The cells are plain matrix products (Gemm) and element-wise
operations.

Data types are WebNN's: f32 and f16. ``steps`` must equal the input's first
dimension, which therefore has to be static; the batch and input sizes may
be dynamic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._errors import ValidationError
from .._formats.onnx_write import AttrValue
from .core import Operand, shape_text
from .options import FLOATS, NetworkBase, dims_fit

_DIRECTIONS = {"forward": "forward", "backward": "reverse", "both": "bidirectional"}
_ACTIVATIONS = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh"}
#: The gate order ONNX's LSTM and GRU take (WebNN's default layouts).
_LSTM_ONNX, _GRU_ONNX = "iofg", "zrn"
_LSTM_DEFAULTS = ("sigmoid", "tanh", "tanh")
_GRU_DEFAULTS = ("sigmoid", "tanh")


class RecurrentFamily(NetworkBase):
    """See the module docstring; mixed into ``GraphOperations`` (and so ``GraphBuilder``)."""

    # ------------------------------------------------------------ checks

    def _rnn_operand(
        self, op: str, ref: Operand, value: Any, role: str, want: Sequence[int | None], what: str
    ) -> Operand:
        """``value`` as an operand of ``ref``'s data type and the shape ``want``."""
        operand = self._nn_like(op, ref, value, role)
        if operand.rank != len(want) or not all(map(dims_fit, operand.shape, want)):
            raise ValidationError(
                f"{op}: the {role} must have shape {shape_text(want)} ({what}), not "
                f"{shape_text(operand.shape)}"
            )
        return operand

    def _rnn_option(
        self, op: str, ref: Operand, value: Any, role: str, want: Sequence[int | None], what: str
    ) -> Operand | None:
        """An optional operand (``None`` stays ``None``), checked as ``_rnn_operand``."""
        return None if value is None else self._rnn_operand(op, ref, value, role, want, what)

    def _rnn_weights(
        self,
        op: str,
        x: Operand,
        gates: int,
        hidden: int,
        dirs: int | None,
        weight: Any,
        recurrent_weight: Any,
        bias: Any,
        recurrent_bias: Any,
    ) -> tuple[Operand, Operand, Operand | None, Operand | None]:
        """The weights and biases of ``gates`` gates, checked: with a leading
        ``dirs`` axis for a sequence operation, without for a cell (``None``)."""
        lead, named = ((), "") if dirs is None else ((dirs,), "num_directions, ")
        rows, what = gates * hidden, f"{gates} * hidden_size"
        w = self._rnn_operand(
            op, x, weight, "weight", (*lead, rows, x.shape[-1]), f"[{named}{what}, input_size]"
        )
        r = self._rnn_operand(
            op, x, recurrent_weight, "recurrent_weight", (*lead, rows, hidden),
            f"[{named}{what}, hidden_size]",
        )  # fmt: skip
        vector = f"[{named}{what}]"
        b = self._rnn_option(op, x, bias, "bias", (*lead, rows), vector)
        rb = self._rnn_option(op, x, recurrent_bias, "recurrent_bias", (*lead, rows), vector)
        return w, r, b, rb

    def _rnn_size(self, op: str, name: str, value: Any, gates: int) -> int:
        """``hidden_size`` or ``steps``: a positive integer (``gates`` times it, the
        size of both biases together, must still be a valid dimension)."""
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValidationError(f"{op}: {name} must be a positive integer, not {value!r}")
        if value * gates >= 2**32:
            raise ValidationError(
                f"{op}: {name} {value} is too large ({gates} * {name} must be below 2**32)"
            )
        return value

    def _rnn_activations(self, op: str, value: Any, defaults: tuple[str, ...]) -> list[str]:
        if value is None:
            return list(defaults)
        items = list(value) if isinstance(value, (list, tuple)) else None
        if (
            items is None
            or len(items) != len(defaults)
            or any(a not in _ACTIVATIONS for a in items)
        ):
            raise ValidationError(
                f"{op}: activations must be a list of {len(defaults)} of 'relu', 'sigmoid', "
                f"'tanh' (default {list(defaults)}), not {value!r}"
            )
        return [str(a) for a in items]

    def _rnn_flag(self, op: str, name: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise ValidationError(f"{op}: {name} must be True or False, not {value!r}")
        return value

    def _rnn_sequence_input(
        self, op: str, input: Any, steps: Any, hidden_size: Any, gates: int
    ) -> tuple[Operand, int, int]:
        x = self._nn_input(op, input, 3, FLOATS)
        steps = self._rnn_size(op, "steps", steps, 1)
        hidden = self._rnn_size(op, "hidden_size", hidden_size, 2 * gates)
        if x.shape[0] != steps:
            raise ValidationError(
                f"{op}: the input's first dimension must be steps ({steps}), not "
                f"{'dynamic' if x.shape[0] is None else x.shape[0]} (input {shape_text(x.shape)}, "
                "[steps, batch_size, input_size])"
            )
        return x, steps, hidden

    # ------------------------------------------------------------ small lowerings

    def _rnn_pick(self, x: Operand, index: int) -> Operand:
        """``x[index]`` along the first dimension, which it drops."""
        where = self._scalar(index, "i64", "pick")
        return self._emit("Gather", [x, where], {"axis": 0}, shape=x.shape[1:], dtype=x.dtype)

    def _rnn_directions(self, x: Operand | None, dirs: int) -> list[Operand | None]:
        """``x[d]`` for each direction ``d`` (all ``None`` when ``x`` is)."""
        return [None if x is None else self._rnn_pick(x, d) for d in range(dirs)]

    def _rnn_split(self, x: Operand, axis: int, parts: int, size: int) -> list[Operand]:
        """``x`` cut along ``axis`` into ``parts`` pieces of ``size``."""
        shape = tuple(size if i == axis else d for i, d in enumerate(x.shape))
        split = self._ints([size] * parts)
        return self._emit_many("Split", [x, split], {"axis": axis}, [(shape, x.dtype)] * parts)

    def _rnn_reorder(self, x: Operand, axis: int, have: str, want: str, size: int) -> Operand:
        """``x`` with its gate blocks (``size`` each, along ``axis``) reordered from
        the layout ``have`` to ``want`` (letters naming the gates)."""
        if have == want:
            return x
        blocks = dict(zip(have, self._rnn_split(x, axis, len(have), size), strict=True))
        return self._emit(
            "Concat", [blocks[g] for g in want], {"axis": axis}, shape=x.shape, dtype=x.dtype
        )

    def _rnn_gates(self, x: Operand, layout: str, size: int) -> dict[str, Operand]:
        """The gate blocks of ``x`` along its last dimension, by gate letter."""
        parts = self._rnn_split(x, x.rank - 1, len(layout), size)
        return dict(zip(layout, parts, strict=True))

    def _rnn_dense(self, op: str, x: Operand, w: Operand, bias: Operand | None) -> Operand:
        """``x @ w.T (+ bias)`` for 2-D ``x`` and ``w`` (ONNX Gemm)."""
        inputs = [x, w] + ([bias] if bias is not None else [])
        shape = (x.shape[0], w.shape[0])
        return self._emit("Gemm", inputs, {"transB": 1}, shape=shape, dtype=x.dtype)

    def _rnn_act(self, name: str, x: Operand) -> Operand:
        return self._emit(_ACTIVATIONS[name], [x], shape=x.shape, dtype=x.dtype)

    def _rnn_biases(
        self,
        bias: Operand | None,
        recurrent_bias: Operand | None,
        layout: str,
        onnx_layout: str,
        dirs: int,
        size: int,
        dtype: str,
    ) -> Operand | None:
        """ONNX's ``B``: both biases, in its gate order, side by side (zeros for one left out)."""
        if bias is None and recurrent_bias is None:
            return None
        width = len(layout) * size
        parts = [
            self._rnn_reorder(b, 1, layout, onnx_layout, size)
            if b is not None
            else self._nn_filled(0.0, dtype, (dirs, width))
            for b in (bias, recurrent_bias)
        ]
        return self._emit("Concat", parts, {"axis": 1}, shape=(dirs, 2 * width), dtype=dtype)

    def _rnn_unroll(
        self,
        x: Operand,
        steps: int,
        direction: str,
        hidden: int,
        initial: list[Operand | None],
        step: Callable[[int, Operand, list[Operand]], list[Operand]],
        sequence: bool,
    ) -> list[Operand]:
        """A recurrent layer as ``steps`` copies of its cell per direction, as
        WebNN's emulation does: the final states (hidden first), then the
        sequence of hidden states when asked for. ``step(direction, x_t,
        states)`` gives the next states; a state left out starts at zeros."""
        dirs = 2 if direction == "both" else 1
        finals: list[list[Operand]] = [[] for _ in initial]
        sequences = []
        for d in range(dirs):
            states = [
                self._rnn_pick(s, d)
                if s is not None
                else self._nn_filled(0.0, x.dtype, (1, hidden))
                for s in initial
            ]
            outs: dict[int, Operand] = {}
            backward = d == 1 or direction == "backward"
            for s in range(steps):
                t = steps - 1 - s if backward else s
                # The zero states are [1, hidden]; the first step broadcasts them to the batch.
                states = step(d, self._rnn_pick(x, t), states)
                outs[t] = self._nn_unsqueeze(states[0], [0, 1])
            for kept, state in zip(finals, states, strict=True):
                kept.append(self._nn_unsqueeze(state, [0]))
            if sequence:
                sequences.append(self._rnn_concat([outs[t] for t in range(steps)], 0))
        result = [self._rnn_concat(kept, 0) for kept in finals]
        return result + ([self._rnn_concat(sequences, 1)] if sequence else [])

    def _rnn_concat(self, parts: list[Operand], axis: int) -> Operand:
        if len(parts) == 1:
            return parts[0]
        shape = list(parts[0].shape)
        sizes = [p.shape[axis] for p in parts]
        shape[axis] = None if None in sizes else sum(s for s in sizes if s is not None)
        return self._emit("Concat", parts, {"axis": axis}, shape=tuple(shape), dtype=parts[0].dtype)

    # ------------------------------------------------------------ lstm

    def _lstm_step(
        self,
        op: str,
        x: Operand,
        w: Operand,
        r: Operand,
        h: Operand,
        c: Operand,
        size: int,
        bias: Operand | None,
        recurrent_bias: Operand | None,
        peephole: Operand | None,
        layout: str,
        acts: Sequence[str],
    ) -> tuple[Operand, Operand]:
        """One LSTM step as WebNN defines it: the new hidden and cell states."""
        gate, cell, out = acts
        pre = self._binary(
            op, "Add", self._rnn_dense(op, x, w, bias), self._rnn_dense(op, h, r, recurrent_bias)
        )
        p = self._rnn_gates(pre, layout, size)
        if peephole is not None:
            # WebNN's peepholes (packed i, o, f) all see the previous cell state.
            for name, weight in self._rnn_gates(peephole, "iof", size).items():
                p[name] = self._binary(op, "Add", p[name], self._binary(op, "Mul", c, weight))
        i, f, o = (self._rnn_act(gate, p[name]) for name in "ifo")
        g = self._rnn_act(cell, p["g"])
        new_c = self._binary(
            op, "Add", self._binary(op, "Mul", f, c), self._binary(op, "Mul", i, g)
        )
        new_h = self._binary(op, "Mul", o, self._rnn_act(out, new_c))
        return new_h, new_c

    def lstm(
        self,
        input: Operand,
        weight: Operand,
        recurrent_weight: Operand,
        steps: int,
        hidden_size: int,
        *,
        bias: Operand | None = None,
        recurrent_bias: Operand | None = None,
        peephole_weight: Operand | None = None,
        initial_hidden_state: Operand | None = None,
        initial_cell_state: Operand | None = None,
        return_sequence: bool = False,
        direction: str = "forward",
        layout: str = "iofg",
        activations: Sequence[str] | None = None,
    ) -> list[Operand]:
        """A Long Short-Term Memory layer over ``steps`` time steps: ``[hidden, cell]``
        (each ``[num_directions, batch, hidden_size]``), plus every step's hidden state
        (``[steps, num_directions, batch, hidden_size]``) with ``return_sequence=True``.

        ``input`` is ``[steps, batch, input_size]``; ``weight`` is
        ``[num_directions, 4 * hidden_size, input_size]`` and ``recurrent_weight``
        ``[num_directions, 4 * hidden_size, hidden_size]``, gates in ``layout``
        order (``"iofg"`` or ``"ifgo"``); ``bias`` and ``recurrent_bias`` are
        ``[num_directions, 4 * hidden_size]``, ``peephole_weight``
        ``[num_directions, 3 * hidden_size]`` (gates i, o, f), the initial states
        ``[num_directions, batch, hidden_size]`` (zeros by default).
        ``direction`` is ``"forward"``, ``"backward"`` or ``"both"`` (two
        directions); ``activations`` are three of ``"relu"``, ``"sigmoid"``,
        ``"tanh"`` (gates, cell candidate, output; default sigmoid, tanh, tanh).

        >>> hidden, cell, sequence = b.lstm(x, w, r, 5, 16, bias=bias, return_sequence=True)
        """
        op = "lstm"
        x, steps, hidden = self._rnn_sequence_input(op, input, steps, hidden_size, 4)
        direction = self._nn_choice(op, "direction", direction, _DIRECTIONS)
        layout = self._nn_choice(op, "layout", layout, ("iofg", "ifgo"))
        acts = self._rnn_activations(op, activations, _LSTM_DEFAULTS)
        sequence = self._rnn_flag(op, "return_sequence", return_sequence)
        dirs = 2 if direction == "both" else 1
        batch = x.shape[1]
        w, r, b, rb = self._rnn_weights(
            op, x, 4, hidden, dirs, weight, recurrent_weight, bias, recurrent_bias
        )
        peep = self._rnn_option(
            op, x, peephole_weight, "peephole_weight", (dirs, 3 * hidden),
            "[num_directions, 3 * hidden_size]",
        )  # fmt: skip
        state, what = (dirs, batch, hidden), "[num_directions, batch, hidden_size]"
        h0 = self._rnn_option(op, x, initial_hidden_state, "initial_hidden_state", state, what)
        c0 = self._rnn_option(op, x, initial_cell_state, "initial_cell_state", state, what)
        if peep is None and acts == list(_LSTM_DEFAULTS):
            inputs = [
                x,
                self._rnn_reorder(w, 1, layout, _LSTM_ONNX, hidden),
                self._rnn_reorder(r, 1, layout, _LSTM_ONNX, hidden),
                self._rnn_biases(b, rb, layout, _LSTM_ONNX, dirs, hidden, x.dtype),
                None,
                h0,
                c0,
            ]
            attrs: dict[str, AttrValue] = {
                "hidden_size": hidden, "direction": _DIRECTIONS[direction],
            }  # fmt: skip
            results = [((steps, *state), x.dtype), (state, x.dtype), (state, x.dtype)]
            seq, last_h, last_c = self._emit_many("LSTM", inputs, attrs, results)
            return [last_h, last_c] + ([seq] if sequence else [])

        # Each direction's weights, picked once for all its steps.
        ws, rs = ([self._rnn_pick(v, d) for d in range(dirs)] for v in (w, r))
        bs, rbs, peeps = (self._rnn_directions(v, dirs) for v in (b, rb, peep))

        def step(d: int, x_t: Operand, states: list[Operand]) -> list[Operand]:
            h, c = states
            weights = (ws[d], rs[d], h, c, hidden, bs[d], rbs[d], peeps[d])
            return list(self._lstm_step(op, x_t, *weights, layout, acts))

        return self._rnn_unroll(x, steps, direction, hidden, [h0, c0], step, sequence)

    def lstm_cell(
        self,
        input: Operand,
        weight: Operand,
        recurrent_weight: Operand,
        hidden_state: Operand,
        cell_state: Operand,
        hidden_size: int,
        *,
        bias: Operand | None = None,
        recurrent_bias: Operand | None = None,
        peephole_weight: Operand | None = None,
        layout: str = "iofg",
        activations: Sequence[str] | None = None,
    ) -> list[Operand]:
        """One LSTM time step: ``[hidden, cell]``, the new states (``[batch, hidden_size]``).

        ``input`` is ``[batch, input_size]``, ``weight`` ``[4 * hidden_size,
        input_size]``, ``recurrent_weight`` ``[4 * hidden_size, hidden_size]``
        (gates in ``layout`` order), the states ``[batch, hidden_size]``,
        ``bias`` and ``recurrent_bias`` ``[4 * hidden_size]``,
        ``peephole_weight`` ``[3 * hidden_size]``; options as for ``lstm``.
        Lowered to Gemm, Split and element-wise nodes.

        >>> h, c = b.lstm_cell(x, w, r, h, c, 16, bias=bias)
        """
        op = "lstm_cell"
        x = self._nn_input(op, input, 2, FLOATS)
        hidden = self._rnn_size(op, "hidden_size", hidden_size, 8)
        layout = self._nn_choice(op, "layout", layout, ("iofg", "ifgo"))
        acts = self._rnn_activations(op, activations, _LSTM_DEFAULTS)
        batch = x.shape[0]
        w, r, b, rb = self._rnn_weights(
            op, x, 4, hidden, None, weight, recurrent_weight, bias, recurrent_bias
        )
        h = self._rnn_operand(
            op, x, hidden_state, "hidden_state", (batch, hidden), "[batch, hidden_size]"
        )
        c = self._rnn_operand(
            op, x, cell_state, "cell_state", (batch, hidden), "[batch, hidden_size]"
        )
        peep = self._rnn_option(
            op, x, peephole_weight, "peephole_weight", (3 * hidden,), "[3 * hidden_size]"
        )
        return list(self._lstm_step(op, x, w, r, h, c, hidden, b, rb, peep, layout, acts))

    # ------------------------------------------------------------ gru

    def gru(
        self,
        input: Operand,
        weight: Operand,
        recurrent_weight: Operand,
        steps: int,
        hidden_size: int,
        *,
        bias: Operand | None = None,
        recurrent_bias: Operand | None = None,
        initial_hidden_state: Operand | None = None,
        reset_after: bool = True,
        return_sequence: bool = False,
        direction: str = "forward",
        layout: str = "zrn",
        activations: Sequence[str] | None = None,
    ) -> list[Operand]:
        """A Gated Recurrent Unit layer over ``steps`` time steps: ``[hidden]``
        (``[num_directions, batch, hidden_size]``), plus every step's hidden state
        (``[steps, num_directions, batch, hidden_size]``) with ``return_sequence=True``.

        Shapes as for ``lstm`` with 3 gates instead of 4, in ``layout`` order
        (``"zrn"`` or ``"rzn"``: update, reset, new); ``reset_after`` applies
        the reset gate after the recurrent matrix product (ONNX
        ``linear_before_reset``); ``activations`` are two of ``"relu"``,
        ``"sigmoid"``, ``"tanh"`` (gates, new gate; default sigmoid, tanh).
        Lowered to one ONNX GRU node.

        >>> (hidden,) = b.gru(x, w, r, 5, 16, bias=bias, direction="both")
        """
        op = "gru"
        x, steps, hidden = self._rnn_sequence_input(op, input, steps, hidden_size, 3)
        direction = self._nn_choice(op, "direction", direction, _DIRECTIONS)
        layout = self._nn_choice(op, "layout", layout, ("zrn", "rzn"))
        acts = self._rnn_activations(op, activations, _GRU_DEFAULTS)
        after = self._rnn_flag(op, "reset_after", reset_after)
        sequence = self._rnn_flag(op, "return_sequence", return_sequence)
        dirs = 2 if direction == "both" else 1
        state = (dirs, x.shape[1], hidden)
        w, r, b, rb = self._rnn_weights(
            op, x, 3, hidden, dirs, weight, recurrent_weight, bias, recurrent_bias
        )
        h0 = self._rnn_option(
            op, x, initial_hidden_state, "initial_hidden_state", state,
            "[num_directions, batch, hidden_size]",
        )  # fmt: skip
        if acts == list(_GRU_DEFAULTS):
            inputs = [
                x,
                self._rnn_reorder(w, 1, layout, _GRU_ONNX, hidden),
                self._rnn_reorder(r, 1, layout, _GRU_ONNX, hidden),
                self._rnn_biases(b, rb, layout, _GRU_ONNX, dirs, hidden, x.dtype),
                None,
                h0,
            ]
            attrs: dict[str, AttrValue] = {
                "hidden_size": hidden, "direction": _DIRECTIONS[direction],
                "linear_before_reset": int(after),
            }  # fmt: skip
            results = [((steps, *state), x.dtype), (state, x.dtype)]
            seq, last = self._emit_many("GRU", inputs, attrs, results)
            return [last] + ([seq] if sequence else [])

        ws, rs = ([self._rnn_pick(v, d) for d in range(dirs)] for v in (w, r))
        bs, rbs = (self._rnn_directions(v, dirs) for v in (b, rb))

        def step(d: int, x_t: Operand, states: list[Operand]) -> list[Operand]:
            weights = (ws[d], rs[d], states[0], hidden, bs[d], rbs[d])
            return [self._gru_step(op, x_t, *weights, after, layout, acts)]

        return self._rnn_unroll(x, steps, direction, hidden, [h0], step, sequence)

    def gru_cell(
        self,
        input: Operand,
        weight: Operand,
        recurrent_weight: Operand,
        hidden_state: Operand,
        hidden_size: int,
        *,
        bias: Operand | None = None,
        recurrent_bias: Operand | None = None,
        reset_after: bool = True,
        layout: str = "zrn",
        activations: Sequence[str] | None = None,
    ) -> Operand:
        """One GRU time step: the new hidden state (``[batch, hidden_size]``).

        ``input`` is ``[batch, input_size]``, ``weight`` ``[3 * hidden_size,
        input_size]``, ``recurrent_weight`` ``[3 * hidden_size, hidden_size]``
        (gates in ``layout`` order), ``hidden_state`` ``[batch, hidden_size]``,
        ``bias`` and ``recurrent_bias`` ``[3 * hidden_size]``; options as for
        ``gru``. Lowered to Gemm, Split and element-wise nodes.

        >>> h = b.gru_cell(x, w, r, h, 16, bias=bias, reset_after=False)
        """
        op = "gru_cell"
        x = self._nn_input(op, input, 2, FLOATS)
        hidden = self._rnn_size(op, "hidden_size", hidden_size, 6)
        layout = self._nn_choice(op, "layout", layout, ("zrn", "rzn"))
        acts = self._rnn_activations(op, activations, _GRU_DEFAULTS)
        after = self._rnn_flag(op, "reset_after", reset_after)
        w, r, b, rb = self._rnn_weights(
            op, x, 3, hidden, None, weight, recurrent_weight, bias, recurrent_bias
        )
        h = self._rnn_operand(
            op, x, hidden_state, "hidden_state", (x.shape[0], hidden), "[batch, hidden_size]"
        )
        return self._gru_step(op, x, w, r, h, hidden, b, rb, after, layout, acts)

    def _gru_step(
        self,
        op: str,
        x: Operand,
        w: Operand,
        r: Operand,
        h: Operand,
        size: int,
        bias: Operand | None,
        recurrent_bias: Operand | None,
        after: bool,
        layout: str,
        acts: Sequence[str],
    ) -> Operand:
        """One GRU step as WebNN defines it: the new hidden state."""
        gate, new = acts
        xs = self._rnn_gates(self._rnn_dense(op, x, w, bias), layout, size)
        if after:
            hs = self._rnn_gates(self._rnn_dense(op, h, r, recurrent_bias), layout, size)
            z, reset = (self._rnn_act(gate, self._binary(op, "Add", xs[g], hs[g])) for g in "zr")
            n = self._binary(op, "Add", xs["n"], self._binary(op, "Mul", reset, hs["n"]))
        else:
            # The reset gate scales the hidden state before the new gate's product.
            rs = dict(zip(layout, self._rnn_split(r, 0, 3, size), strict=True))
            rbs = {} if recurrent_bias is None else self._rnn_gates(recurrent_bias, layout, size)
            z, reset = (
                self._rnn_act(
                    gate, self._binary(op, "Add", xs[g], self._rnn_dense(op, h, rs[g], rbs.get(g)))
                )
                for g in "zr"
            )
            scaled = self._binary(op, "Mul", reset, h)
            n = self._binary(op, "Add", xs["n"], self._rnn_dense(op, scaled, rs["n"], rbs.get("n")))
        n = self._rnn_act(new, n)
        kept = self._binary(op, "Mul", z, h)
        return self._binary(
            op, "Add", kept, self._binary(op, "Mul", self._binary(op, "Sub", 1.0, z), n)
        )
