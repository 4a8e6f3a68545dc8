"""Two local rewrites of Kokoro's float ONNX graph (after ``dequantize``) for OpenVINO.

- ``guard_atan2``: Kokoro's generator takes the phase of its harmonic source's
  STFT as ``Atan(Div(imag, real))`` plus Where fix-ups for the quadrants. A
  bin that is exactly 0+0j (it happens: 29 bins of one real sentence) makes
  0/0 = NaN, which the generator's convolutions spread over the whole audio.
  onnxruntime's int8 model hides it (its DynamicQuantizeLinear turns NaN into
  a number); a float model does not. The denominator becomes ``Where(real ==
  0, 1e-37, real)``: atan2(0, 0) is then 0 (torch's atan2(0, +0); for -0 it
  gives pi, inaudible in one bin), and for y != 0, y/1e-37 is so large (or
  +-inf) that its Atan rounds to the +-pi/2 the fix-ups expect.
- ``polynomial_sine``: the Snake activations (``x + sin(a x)^2 / a``) call Sin
  48 times at audio rate (3 more Sins are not Snakes), and OpenVINO's CPU
  plugin runs Sin with a scalar reference kernel (0.75 s of a 3-sentence run).
  Where a Sin's only use is an even power (the Snake's Pow 2), it becomes
  elementwise arithmetic the plugin vectorizes:
  ``r = y - k*pi`` with ``k = floor(y/pi + 1/2)`` (pi split in two parts so
  that k*pi is exact enough, the Cody-Waite reduction), then an odd
  polynomial in r on [-pi/2, pi/2]. sin(y) = (-1)^k sin(r), and the square
  drops the sign. The polynomial is within 3e-8 of sin on that interval;
  computed in float32, sin^2 is within 4e-7 of the exact value for |y| <= 200.

>>> import onnx
>>> from onnx import TensorProto, helper
>>> x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
>>> y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
>>> nodes = [helper.make_node("Sin", ["x"], ["s"], name="sin"),
...          helper.make_node("Pow", ["s", "two"], ["y"], name="square")]
>>> two = onnx.numpy_helper.from_array(np.array(2, np.float32), "two")
>>> model = helper.make_model(helper.make_graph(nodes, "g", [x], [y], [two]))
>>> polynomial_sine(model)
1
>>> sorted({n.op_type for n in model.graph.node})
['Add', 'Floor', 'Mul', 'Pow', 'Sub']
"""

from __future__ import annotations

import numpy as np
import onnx
from dequantize import GraphIndex
from onnx import helper

#: pi = PI_HIGH + PI_LOW, PI_HIGH with few mantissa bits (k * PI_HIGH is exact
#: for the k of a Snake's arguments), PI_LOW the rest.
PI_HIGH = 3.140625
PI_LOW = float(np.pi - PI_HIGH)
#: sin(r) = r * (C0 + C1 r^2 + ... + C5 r^10) on [-pi/2, pi/2] (minimax fit).
SINE_COEFFICIENTS = (
    1.0,
    -1.6666666641626524e-01,
    8.333329385889463e-03,
    -1.9840874255e-04,
    2.7523971e-06,
    -2.3889859e-08,
)


def _scalar(g: GraphIndex, name: str, value: float) -> str:
    """``name``, a float32 scalar initializer (added once)."""
    return g.constant(name, np.array(value, np.float32))


class _Steps:
    """Appends one node per call to ``nodes``, named ``BASE/OUT`` (its output too)."""

    def __init__(self, nodes: list[onnx.NodeProto], base: str) -> None:
        self.nodes, self.base = nodes, base

    def __call__(self, op: str, inputs: list[str], out: str) -> str:
        name = f"{self.base}/{out}"
        self.nodes.append(helper.make_node(op, inputs, [name], name=name))
        return name


def guard_atan2(model: onnx.ModelProto) -> int:
    """Give every ``Div`` that feeds an ``Atan`` a denominator that is never 0
    (see the module doc), in place; returns how many."""
    g = GraphIndex(model.graph)
    zero, tiny = _scalar(g, "atan2_zero", 0.0), _scalar(g, "atan2_tiny", 1e-37)
    atan_inputs = {n.input[0] for n in model.graph.node if n.op_type == "Atan"}
    nodes: list[onnx.NodeProto] = []
    guarded = 0
    for node in model.graph.node:
        if node.op_type == "Div" and node.output[0] in atan_inputs:
            real, name = node.input[1], node.name
            if real in g.inits:
                raise ValueError(f"{name}: a constant denominator, not atan2's real part")
            is_zero, nonzero = f"{name}/is_zero", f"{name}/nonzero"
            nodes.append(helper.make_node("Equal", [real, zero], [is_zero], name=is_zero))
            nodes.append(helper.make_node("Where", [is_zero, tiny, real], [nonzero], name=nonzero))
            node.input[1] = nonzero
            guarded += 1
        nodes.append(node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return guarded


def _only_squared(g: GraphIndex, value: str, outputs: set[str]) -> bool:
    """Whether ``value`` is used only as the base of a Pow by a constant even
    integer (so its sign does not matter), and is not a graph output."""
    users = g.consumers[value]
    if not users or value in outputs:
        return False
    for user in users:
        if user.op_type != "Pow" or user.input[0] != value or user.input[1] not in g.inits:
            return False
        exponent = g.array(user.input[1])
        if exponent.size != 1 or float(exponent) % 2 != 0:
            return False
    return True


def polynomial_sine(model: onnx.ModelProto) -> int:
    """Replace each ``Sin`` used only as the base of an even power (the
    Snake's square) by the reduction and polynomial of the module doc, in
    place; returns how many."""
    g = GraphIndex(model.graph)
    inverse_pi = _scalar(g, "sine_inverse_pi", 1 / np.pi)
    half = _scalar(g, "sine_half", 0.5)
    pi_high, pi_low = _scalar(g, "sine_pi_high", PI_HIGH), _scalar(g, "sine_pi_low", PI_LOW)
    c = [_scalar(g, f"sine_c{i}", v) for i, v in enumerate(SINE_COEFFICIENTS)]
    outputs = {o.name for o in model.graph.output}
    nodes: list[onnx.NodeProto] = []
    replaced = 0
    for node in model.graph.node:
        if node.op_type != "Sin" or not _only_squared(g, node.output[0], outputs):
            nodes.append(node)
            continue
        step = _Steps(nodes, node.name)
        y = node.input[0]
        turns = step("Add", [step("Mul", [y, inverse_pi], "turns"), half], "rounding")
        k = step("Floor", [turns], "k")
        r = step("Sub", [y, step("Mul", [k, pi_high], "k_pi_high")], "r_high")
        r = step("Sub", [r, step("Mul", [k, pi_low], "k_pi_low")], "r")
        r2 = step("Mul", [r, r], "r2")
        acc = step("Mul", [r2, c[5]], "h5")
        for i in (4, 3, 2, 1):  # Horner: ((c5 r2 + c4) r2 + c3) ... + c0
            acc = step("Mul", [step("Add", [acc, c[i]], f"a{i}"), r2], f"h{i}")
        acc = step("Add", [acc, c[0]], "a0")
        nodes.append(helper.make_node("Mul", [acc, r], list(node.output), name=f"{node.name}/sine"))
        replaced += 1
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return replaced
