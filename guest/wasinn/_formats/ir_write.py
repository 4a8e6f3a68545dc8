"""ONNX nodes written as OpenVINO IR layers.

Processing built with the graph builder is recorded as ONNX nodes (opset 18).
To splice it into an OpenVINO IR model (``_model.fuse``), each node becomes
the IR layers OpenVINO's own ONNX reader would make of it: mostly one layer of
the same meaning (``Sub`` is ``Subtract``, ``Resize`` is ``Interpolate``),
sometimes a few (``Gemm`` is ``MatMul``, ``Multiply`` and ``Add``). So the
spliced model computes what the processing computes as its own ONNX model on
the same host, and ``tests/test_ir_write.py`` checks that, case by case, for
every graph-builder operation.

``Pad``, ``CumSum`` and ``TopK`` whose sizes are computed in the graph
rather than constant have no IR form here (the builder makes them constant),
nor ``LpPool`` with a dynamic channel count: ``FusionError`` says so.

The layers get no port shapes or precisions: OpenVINO infers those for every
layer but Parameter and Const, which carry theirs in ``<data>``.

Example (``graph`` from ``ir_edit.editable``)::

    writer = LayerWriter(graph, lowered.types, lowered.initializers)
    writer.bind("x", writer.parameter("x", (1, 3), "f32"))
    for _, node in lowered.steps:
        writer.write(node)
    writer.result("#7.relu", "y")
"""

from __future__ import annotations

import math
import struct
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Mapping, Sequence

from .._errors import FusionError
from .ir_edit import IRGraph, add_edge, add_layer, add_port, editable
from .onnx_write import ONNX_TYPES, AttrValue, Initializer, Node

#: An output port: (layer id, port id).
Port = tuple[str, str]
#: A value's shape (``None`` for a dynamic dimension) and dtype.
ValueType = tuple[tuple[int | None, ...], str]

_DTYPE_OF_ONNX = {number: dtype for dtype, number in ONNX_TYPES.items()}
_PACK = {
    "f32": "f", "f64": "d", "f16": "e", "u8": "B", "i8": "b", "i32": "i", "i64": "q",
    "u32": "I", "u64": "Q", "bool": "?",
}  # fmt: skip


def element_type(dtype: str) -> str:
    """The IR ``element_type`` of a builder dtype."""
    return "boolean" if dtype == "bool" else dtype


def precision(dtype: str) -> str:
    """The IR port ``precision`` of a builder dtype (OpenVINO's reader wants
    one on every output port, though it infers the type of all but Parameter
    and Const layers)."""
    return {"bool": "BOOL", "bf16": "BF16"}.get(dtype) or dtype.upper().replace("F", "FP")


class LayerWriter:
    """Writes ONNX nodes into ``graph`` as IR layers, keeping the output port
    of every value it has written or been told of (``bind``).

    ``types`` gives every value's shape and dtype (ONNX infers them; some IR
    layers need them written out), ``initializers`` the constants, which
    become Const layers (their bytes appended to the weights) when first used.
    """

    def __init__(
        self, graph: IRGraph, types: Mapping[str, ValueType], initializers: Iterable[Initializer]
    ) -> None:
        self.graph = graph
        self.types = types
        self.constants = {t.name: t for t in initializers}
        self.ports: dict[str, Port] = {}
        self._named: set[Port] = set()  # ports that carry a tensor name already
        self._port_elements: dict[Port, ET.Element] = {}
        self._prefix = graph.taken.fresh("wasinn_processing")
        self._dtype = "f32"  # the dtype of the first output of the node being written

    # ------------------------------------------------------------ values

    def bind(self, name: str, port: Port, *, named: bool = False) -> None:
        """Value ``name`` is computed at ``port`` (``named``: the port already
        has a tensor name, e.g. a layer of the model)."""
        self.ports[name] = port
        if named:
            self._named.add(port)

    def port(self, name: str) -> Port:
        """The port computing value ``name``; a constant gets its Const layer."""
        known = self.ports.get(name)
        if known is not None:
            return known
        constant = self.constants.get(name)
        if constant is None:
            raise FusionError(f"the processing uses {name!r}, which nothing computes")
        port = self.const(constant.dtype, constant.shape, constant.data)
        self.ports[name] = port
        return port

    def type_of(self, name: str) -> ValueType:
        """The shape and dtype of value ``name``."""
        return self.types[name]

    def ints_of(self, name: str) -> list[int] | None:
        """The elements of integer constant ``name``, or ``None`` if it is
        computed in the graph."""
        constant = self.constants.get(name)
        if constant is None or constant.dtype not in ("i64", "i32"):
            return None
        code = "q" if constant.dtype == "i64" else "i"
        return list(struct.unpack(f"<{len(constant.data) // struct.calcsize(code)}{code}",
                                  constant.data))  # fmt: skip

    # ------------------------------------------------------------ layers

    def layer(
        self,
        kind: str,
        inputs: Sequence[Port],
        attrs: Mapping[str, object] | None = None,
        *,
        dtypes: Sequence[str] | None = None,
        version: str = "opset1",
    ) -> list[Port]:
        """A new layer ``kind`` reading ``inputs``; its output ports, one per
        dtype in ``dtypes`` (by default one, of the dtype of the node being
        written: what nearly every layer of a translation computes)."""
        if dtypes is None:
            dtypes = [self._dtype]
        lid = self.graph.new_id()
        layer = add_layer(self.graph.layers, lid, f"{self._prefix}/{kind}_{lid}", kind, version)
        if attrs:
            ET.SubElement(layer, "data", {k: _text(v) for k, v in attrs.items()})
        for i, (src, src_port) in enumerate(inputs):
            add_port(layer, "input", str(i), None, [])
            add_edge(self.graph.edges, src, src_port, lid, str(i))
        ports = []
        for j, dtype in enumerate(dtypes):
            pid = str(len(inputs) + j)
            self._port_elements[(lid, pid)] = add_port(layer, "output", pid, precision(dtype), [])
            ports.append((lid, pid))
        return ports

    def one(
        self, kind: str, inputs: Sequence[Port], attrs: Mapping[str, object] | None = None,
        *, dtype: str | None = None, version: str = "opset1",
    ) -> Port:  # fmt: skip
        """A new layer with one output (of ``dtype``, by default the node's);
        its output port."""
        dtypes = None if dtype is None else [dtype]
        return self.layer(kind, inputs, attrs, dtypes=dtypes, version=version)[0]

    def const(self, dtype: str, shape: Sequence[int], data: bytes) -> Port:
        """A Const layer holding ``data``, appended to the weights."""
        self.graph.extra += bytes(-len(self.graph.extra) % 8)  # keep every constant aligned
        offset = self.graph.offset()
        self.graph.extra += data
        lid = self.graph.new_id()
        layer = add_layer(self.graph.layers, lid, f"{self._prefix}/Const_{lid}", "Const")
        ET.SubElement(layer, "data", {
            "element_type": element_type(dtype), "shape": _text(list(shape)),
            "offset": str(offset), "size": str(len(data)),
        })  # fmt: skip
        add_port(layer, "output", "0", precision(dtype), list(shape))
        return (lid, "0")

    def ints(self, values: Sequence[int], *, scalar: bool = False) -> Port:
        """An i64 constant: a vector of ``values``, or one ``scalar``."""
        shape: list[int] = [] if scalar else [len(values)]
        return self.const("i64", shape, struct.pack(f"<{len(values)}q", *values))

    def number(self, value: float, dtype: str) -> Port:
        """A scalar constant of ``dtype``."""
        return self.filled(value, dtype, [])

    def filled(self, value: float, dtype: str, shape: Sequence[int]) -> Port:
        """A constant of ``dtype`` and ``shape`` with every element ``value``."""
        if dtype == "bf16":
            one = struct.pack("<f", value)[2:]
        else:
            one = struct.pack(f"<{_PACK[dtype]}", value)
        return self.const(dtype, shape, one * math.prod(shape))

    def parameter(self, name: str, shape: Sequence[int | None], dtype: str) -> Port:
        """A Parameter layer: a graph input called ``name``."""
        lid = self.graph.new_id()
        layer = add_layer(self.graph.layers, lid, name, "Parameter")
        text = ",".join("?" if d is None else str(d) for d in shape)
        ET.SubElement(layer, "data", {"shape": text, "element_type": element_type(dtype)})
        dims = [-1 if d is None else d for d in shape]
        port = add_port(layer, "output", "0", precision(dtype), dims)
        port.set("names", _escape(name))
        self._named.add((lid, "0"))
        return (lid, "0")

    def result(self, value: str, name: str) -> None:
        """A Result layer making value ``value`` a graph output called ``name``."""
        port = self.port(value)
        element = self._port_elements.get(port)
        if element is None or port in self._named:
            # The tensor has a name already (an input, a model's value, another
            # output): a Convert to its own type makes a tensor to name.
            _, dtype = self.type_of(value)
            port = self.one(
                "Convert", [port], {"destination_type": element_type(dtype)}, dtype=dtype
            )
            element = self._port_elements[port]
        element.set("names", _escape(name))
        self._named.add(port)
        lid = self.graph.new_id()
        sink = add_layer(self.graph.layers, lid, f"{name}/sink_port_0", "Result")
        add_port(sink, "input", "0", None, [])
        add_edge(self.graph.edges, port[0], port[1], lid, "0")

    # ------------------------------------------------------------ nodes

    def write(self, node: Node) -> None:
        """The layers computing ``node``; its outputs are bound to their ports."""
        translate = _TRANSLATIONS.get(node.op_type)
        if translate is None:
            raise FusionError(
                f"the processing uses ONNX {node.op_type}, which wasinn does not write into "
                "OpenVINO IR; run the processing as its own GraphBuilder model before or "
                "after this one"
            )
        self._dtype = self.types[node.outputs[0]][1]
        ports = translate(self, node)
        for name, port in zip(node.outputs, ports, strict=False):
            if name:
                self.ports[name] = port

    def inputs(self, node: Node) -> list[Port]:
        """The ports of ``node``'s given inputs (omitted optional ones skipped)."""
        return [self.port(name) for name in node.inputs if name]

    def rank(self, name: str) -> int:
        return len(self.type_of(name)[0])


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ", ".join(_text(v) for v in value)
    return str(value)


def _escape(name: str) -> str:
    return name.replace(",", "\\,")


def _attr(node: Node, name: str, default: AttrValue) -> AttrValue:
    return node.attrs.get(name, default)


def _int_attr(node: Node, name: str, default: int) -> int:
    value = node.attrs.get(name, default)
    assert isinstance(value, int)
    return value


def _ints_attr(node: Node, name: str) -> list[int]:
    value = node.attrs[name]
    assert isinstance(value, (list, tuple))
    return [int(v) for v in value]


def _float_attr(node: Node, name: str, default: float) -> float:
    value = node.attrs.get(name, default)
    assert isinstance(value, (int, float))
    return float(value)


def _constant_ints(w: LayerWriter, node: Node, index: int) -> list[int]:
    """The elements of ``node``'s constant integer input ``index``."""
    values = w.ints_of(node.inputs[index])
    if values is None:
        raise FusionError(
            f"the processing's ONNX {node.op_type} takes a size computed in the graph, which "
            "wasinn does not write into OpenVINO IR; run the processing as its own model"
        )
    return values


# ---------------------------------------------------------------- translations

_Translate = Callable[[LayerWriter, Node], list[Port]]


def _same(kind: str, version: str = "opset1", **attrs: object) -> _Translate:
    """One layer ``kind`` with the node's inputs and fixed ``attrs``."""

    def translate(w: LayerWriter, node: Node) -> list[Port]:
        return [w.one(kind, w.inputs(node), attrs, version=version)]

    return translate


def _binary(kind: str, version: str = "opset1") -> _Translate:
    return _same(kind, version, auto_broadcast="numpy")


def _identity(w: LayerWriter, node: Node) -> list[Port]:
    return [w.port(node.inputs[0])]


def _cast(w: LayerWriter, node: Node) -> list[Port]:
    dtype = _DTYPE_OF_ONNX[_int_attr(node, "to", 1)]
    return [w.one("Convert", w.inputs(node), {"destination_type": element_type(dtype)})]


def _clip(w: LayerWriter, node: Node) -> list[Port]:
    x = w.port(node.inputs[0])
    bounds = [*node.inputs[1:], "", ""][:2]
    if bounds[0]:
        x = w.one("Maximum", [x, w.port(bounds[0])], {"auto_broadcast": "numpy"})
    if bounds[1]:
        x = w.one("Minimum", [x, w.port(bounds[1])], {"auto_broadcast": "numpy"})
    return [x]


def _leaky_relu(w: LayerWriter, node: Node) -> list[Port]:
    _, dtype = w.type_of(node.inputs[0])
    slope = w.number(_float_attr(node, "alpha", 0.01), dtype)
    return [w.one("PReLU", [w.port(node.inputs[0]), slope])]


def _hard_sigmoid(w: LayerWriter, node: Node) -> list[Port]:
    _, dtype = w.type_of(node.inputs[0])
    alpha = w.number(_float_attr(node, "alpha", 0.2), dtype)
    beta = w.number(_float_attr(node, "beta", 0.5), dtype)
    return [w.one("HardSigmoid", [w.port(node.inputs[0]), alpha, beta])]


def _reciprocal(w: LayerWriter, node: Node) -> list[Port]:
    _, dtype = w.type_of(node.inputs[0])
    one = w.number(1.0, dtype)
    return [w.one("Divide", [one, w.port(node.inputs[0])], {"auto_broadcast": "numpy"})]


def _is_inf(w: LayerWriter, node: Node) -> list[Port]:
    attrs = {
        "detect_negative": bool(_int_attr(node, "detect_negative", 1)),
        "detect_positive": bool(_int_attr(node, "detect_positive", 1)),
    }
    return [w.one("IsInf", w.inputs(node), attrs, version="opset10")]


def _transpose(w: LayerWriter, node: Node) -> list[Port]:
    rank = w.rank(node.inputs[0])
    perm = _ints_attr(node, "perm") if "perm" in node.attrs else list(range(rank))[::-1]
    return [w.one("Transpose", [w.port(node.inputs[0]), w.ints(perm)])]


def _slice(w: LayerWriter, node: Node) -> list[Port]:
    names = [*node.inputs, "", ""][:5]
    data, starts, ends, axes, steps = (w.port(n) if n else None for n in names)
    assert data is not None and starts is not None and ends is not None
    if steps is None:
        (count,), _ = w.type_of(names[1])
        assert count is not None
        steps = w.ints([1] * count)
    inputs = [data, starts, ends, steps] + ([axes] if axes is not None else [])
    return [w.one("Slice", inputs, version="opset8")]


def _gather(w: LayerWriter, node: Node) -> list[Port]:
    axis = w.ints([_int_attr(node, "axis", 0)], scalar=True)
    return [w.one("Gather", [*w.inputs(node), axis], {"batch_dims": 0}, version="opset8")]


def _scatter_elements(w: LayerWriter, node: Node) -> list[Port]:
    axis = w.ints([_int_attr(node, "axis", 0)], scalar=True)
    attrs = {"reduction": "none", "use_init_val": True}
    return [w.one("ScatterElementsUpdate", [*w.inputs(node), axis], attrs, version="opset12")]


def _pad(w: LayerWriter, node: Node) -> list[Port]:
    pads = _constant_ints(w, node, 1)
    half = len(pads) // 2
    inputs = [w.port(node.inputs[0]), w.ints(pads[:half]), w.ints(pads[half:])]
    if len(node.inputs) > 2 and node.inputs[2]:
        inputs.append(w.port(node.inputs[2]))
    mode = str(_attr(node, "mode", "constant"))
    return [w.one("Pad", inputs, {"pad_mode": mode}, version="opset12")]


def _split(w: LayerWriter, node: Node) -> list[Port]:
    inputs = [w.port(node.inputs[0]), w.ints([_int_attr(node, "axis", 0)], scalar=True)]
    dtypes = [w.type_of(out)[1] for out in node.outputs]
    if len(node.inputs) < 2 or not node.inputs[1]:  # equal parts
        attrs = {"num_splits": len(node.outputs)}
        return w.layer("Split", inputs, attrs, dtypes=dtypes)
    inputs.append(w.port(node.inputs[1]))
    return w.layer("VariadicSplit", inputs, dtypes=dtypes)


def _shape(w: LayerWriter, node: Node) -> list[Port]:
    shape = w.one("ShapeOf", w.inputs(node), {"output_type": "i64"}, version="opset3")
    if "start" not in node.attrs and "end" not in node.attrs:
        return [shape]
    start, end = _int_attr(node, "start", 0), _int_attr(node, "end", w.rank(node.inputs[0]))
    cut = [shape, w.ints([start]), w.ints([end]), w.ints([1]), w.ints([0])]
    return [w.one("Slice", cut, version="opset8")]


def _cum_sum(w: LayerWriter, node: Node) -> list[Port]:
    (axis,) = _constant_ints(w, node, 1)
    attrs = {
        "exclusive": bool(_int_attr(node, "exclusive", 0)),
        "reverse": bool(_int_attr(node, "reverse", 0)),
    }
    inputs = [w.port(node.inputs[0]), w.ints([axis], scalar=True)]
    return [w.one("CumSum", inputs, attrs, version="opset3")]


_RESIZE_MODES = {"nearest": "nearest", "linear": "linear_onnx", "cubic": "cubic"}


def _resize(w: LayerWriter, node: Node) -> list[Port]:
    x, sizes = w.port(node.inputs[0]), w.port(node.inputs[3])
    rank = w.rank(node.inputs[0])
    axes = _ints_attr(node, "axes") if "axes" in node.attrs else list(range(rank))
    attrs = {
        "mode": _RESIZE_MODES[str(_attr(node, "mode", "nearest"))],
        "shape_calculation_mode": "sizes",
        "coordinate_transformation_mode": str(
            _attr(node, "coordinate_transformation_mode", "half_pixel")
        ),
        "nearest_mode": str(_attr(node, "nearest_mode", "round_prefer_floor")),
        "antialias": False,
        "pads_begin": [0] * rank,
        "pads_end": [0] * rank,
        "cube_coeff": _float_attr(node, "cubic_coeff_a", -0.75),
    }
    axes_port = w.ints([a % rank for a in axes])
    return [w.one("Interpolate", [x, sizes, axes_port], attrs, version="opset11")]


def _scalar_k(w: LayerWriter, node: Node) -> Port:
    (k,) = _constant_ints(w, node, 1)
    return w.ints([k], scalar=True)


def _top_k(w: LayerWriter, node: Node) -> list[Port]:
    attrs = {
        "axis": _int_attr(node, "axis", -1),
        "mode": "max" if _int_attr(node, "largest", 1) else "min",
        "sort": "value" if _int_attr(node, "sorted", 1) else "none",
        "index_element_type": "i64",
        "stable": bool(_int_attr(node, "sorted", 1)),
    }
    inputs = [w.port(node.inputs[0]), _scalar_k(w, node)]
    _, dtype = w.type_of(node.inputs[0])
    return w.layer("TopK", inputs, attrs, dtypes=[dtype, "i64"], version="opset11")


def _arg(mode: str) -> _Translate:
    def translate(w: LayerWriter, node: Node) -> list[Port]:
        if _int_attr(node, "select_last_index", 0):
            raise FusionError(f"{node.op_type} with select_last_index is not written into IR")
        axis = _int_attr(node, "axis", 0)
        attrs = {
            "axis": axis, "mode": mode, "sort": "value", "index_element_type": "i64",
            "stable": True,
        }  # fmt: skip
        inputs = [w.port(node.inputs[0]), w.ints([1], scalar=True)]
        _, dtype = w.type_of(node.inputs[0])
        _, index = w.layer("TopK", inputs, attrs, dtypes=[dtype, "i64"], version="opset11")
        if _int_attr(node, "keepdims", 1):
            return [index]
        return [w.one("Squeeze", [index, w.ints([axis])])]

    return translate


def _log_sum_exp(w: LayerWriter, node: Node) -> list[Port]:
    """log(sum(exp(x))) computed as max + log(sum(exp(x - max))), which
    cannot overflow, as OpenVINO's ONNX reader computes it."""
    x = w.port(node.inputs[0])
    axes = _reduce_axes(w, node)
    keep = bool(_int_attr(node, "keepdims", 1))
    numpy = {"auto_broadcast": "numpy"}
    top = w.one("ReduceMax", [x, axes], {"keep_dims": True})
    shifted = w.one("Exp", [w.one("Subtract", [x, top], numpy)])
    total = w.one("Log", [w.one("ReduceSum", [shifted, axes], {"keep_dims": keep})])
    if not keep:
        top = w.one("ReduceMax", [x, axes], {"keep_dims": False})
    return [w.one("Add", [total, top], numpy)]


def _reduce_axes(w: LayerWriter, node: Node) -> Port:
    if len(node.inputs) > 1 and node.inputs[1]:
        return w.port(node.inputs[1])
    return w.ints(list(range(w.rank(node.inputs[0]))))


def _reduce(
    kind: str, before: str | None = None, after: str | None = None, version: str = "opset1"
) -> _Translate:
    """``kind`` over the node's axes, after an elementwise ``before`` (or
    squaring: "Square") and followed by an elementwise ``after``."""

    def translate(w: LayerWriter, node: Node) -> list[Port]:
        x = w.port(node.inputs[0])
        if before == "Square":
            x = w.one("Multiply", [x, x], {"auto_broadcast": "numpy"})
        elif before is not None:
            x = w.one(before, [x])
        keep = bool(_int_attr(node, "keepdims", 1))
        y = w.one(kind, [x, _reduce_axes(w, node)], {"keep_dims": keep}, version=version)
        return [w.one(after, [y]) if after is not None else y]

    return translate


def _mat_mul(w: LayerWriter, node: Node) -> list[Port]:
    return [w.one("MatMul", w.inputs(node), {"transpose_a": False, "transpose_b": False})]


def _gemm(w: LayerWriter, node: Node) -> list[Port]:
    a, b = w.port(node.inputs[0]), w.port(node.inputs[1])
    _, dtype = w.type_of(node.inputs[0])
    attrs = {
        "transpose_a": bool(_int_attr(node, "transA", 0)),
        "transpose_b": bool(_int_attr(node, "transB", 0)),
    }
    y = w.one("MatMul", [a, b], attrs)
    alpha, beta = _float_attr(node, "alpha", 1.0), _float_attr(node, "beta", 1.0)
    numpy = {"auto_broadcast": "numpy"}
    if alpha != 1.0:
        y = w.one("Multiply", [y, w.number(alpha, dtype)], numpy)
    if len(node.inputs) > 2 and node.inputs[2]:
        c = w.port(node.inputs[2])
        if beta != 1.0:
            c = w.one("Multiply", [c, w.number(beta, dtype)], numpy)
        y = w.one("Add", [y, c], numpy)
    return [y]


def _window(node: Node, spatial: int) -> dict[str, object]:
    pads = _ints_attr(node, "pads") if "pads" in node.attrs else [0] * (2 * spatial)
    return {
        "strides": _ints_attr(node, "strides") if "strides" in node.attrs else [1] * spatial,
        "pads_begin": pads[:spatial],
        "pads_end": pads[spatial:],
        "auto_pad": "explicit",
    }


def _add_bias(w: LayerWriter, node: Node, y: Port) -> Port:
    """``y`` plus the conv's bias (third input), broadcast along channels."""
    if len(node.inputs) < 3 or not node.inputs[2]:
        return y
    spatial = w.rank(node.inputs[0]) - 2
    bias = w.one("Unsqueeze", [w.port(node.inputs[2]), w.ints(list(range(1, spatial + 1)))])
    return w.one("Add", [y, bias], {"auto_broadcast": "numpy"})


def _grouped(w: LayerWriter, weights: str, groups: int) -> Port:
    """Conv weights split into ``groups`` on a new leading axis, as
    GroupConvolution and its backprop form take them: [C_out, C_in/G, k...]
    becomes [G, C_out/G, C_in/G, k...] (transposed: [C_in, C_out/G, k...]
    becomes [G, C_in/G, C_out/G, k...])."""
    shape, _ = w.type_of(weights)
    dims = [int(d) for d in shape if d is not None]
    assert len(dims) == len(shape), "conv weights have static shapes"
    target = [groups, dims[0] // groups, *dims[1:]]
    return w.one("Reshape", [w.port(weights), w.ints(target)], {"special_zero": False})


def _conv(transposed: bool) -> _Translate:
    def translate(w: LayerWriter, node: Node) -> list[Port]:
        spatial = w.rank(node.inputs[0]) - 2
        groups = _int_attr(node, "group", 1)
        attrs = _window(node, spatial)
        attrs["dilations"] = (
            _ints_attr(node, "dilations") if "dilations" in node.attrs else [1] * spatial
        )
        if transposed:
            extra = node.attrs.get("output_padding")
            attrs["output_padding"] = _ints_attr(node, "output_padding") if extra else [0] * spatial
        x = w.port(node.inputs[0])
        if groups == 1:
            kind = "ConvolutionBackpropData" if transposed else "Convolution"
            weights = w.port(node.inputs[1])
        else:
            kind = "GroupConvolutionBackpropData" if transposed else "GroupConvolution"
            weights = _grouped(w, node.inputs[1], groups)
        return [_add_bias(w, node, w.one(kind, [x, weights], attrs))]

    return translate


def _max_pool(w: LayerWriter, node: Node) -> list[Port]:
    spatial = w.rank(node.inputs[0]) - 2
    attrs = _window(node, spatial)
    attrs.update({
        "kernel": _ints_attr(node, "kernel_shape"),
        "dilations": _ints_attr(node, "dilations") if "dilations" in node.attrs else [1] * spatial,
        "rounding_type": "ceil" if _int_attr(node, "ceil_mode", 0) else "floor",
        "index_element_type": "i64",
        "axis": 0,
    })  # fmt: skip
    dtypes = [w.type_of(node.inputs[0])[1], "i64"]
    return w.layer("MaxPool", w.inputs(node), attrs, dtypes=dtypes, version="opset8")[:1]


def _average_pool(w: LayerWriter, node: Node) -> list[Port]:
    spatial = w.rank(node.inputs[0]) - 2
    attrs = _window(node, spatial)
    attrs.update({
        "kernel": _ints_attr(node, "kernel_shape"),
        "exclude-pad": not _int_attr(node, "count_include_pad", 0),
        "rounding_type": "ceil" if _int_attr(node, "ceil_mode", 0) else "floor",
    })  # fmt: skip
    return [w.one("AvgPool", w.inputs(node), attrs)]


def _lp_pool(w: LayerWriter, node: Node) -> list[Port]:
    """The p-norm of each window: a depthwise convolution with ones summing
    |x|^p, then the p-th root (the builder pads the input itself)."""
    shape, dtype = w.type_of(node.inputs[0])
    channels, p = shape[1], _int_attr(node, "p", 2)
    if channels is None:
        raise FusionError("LpPool with a dynamic channel count is not written into OpenVINO IR")
    kernel = _ints_attr(node, "kernel_shape")
    x = w.one("Abs", w.inputs(node))
    numpy = {"auto_broadcast": "numpy"}
    x = (
        w.one("Multiply", [x, x], numpy)
        if p == 2
        else w.one("Power", [x, w.number(p, dtype)], numpy)
    )
    ones = w.filled(1.0, dtype, [channels, 1, 1, *kernel])
    attrs = _window(node, len(kernel))
    attrs["dilations"] = (
        _ints_attr(node, "dilations") if "dilations" in node.attrs else [1] * len(kernel)
    )
    total = w.one("GroupConvolution", [x, ones], attrs)
    if p == 2:
        return [w.one("Sqrt", [total])]
    return [w.one("Power", [total, w.number(1.0 / p, dtype)], numpy)]


def _batch_norm(w: LayerWriter, node: Node) -> list[Port]:
    attrs = {"epsilon": _float_attr(node, "epsilon", 1e-5)}
    return [w.one("BatchNormInference", w.inputs(node), attrs, version="opset5")]


def _normalized(w: LayerWriter, node: Node, axes: list[int]) -> Port:
    attrs = {
        "eps": _float_attr(node, "epsilon", 1e-5),
        "normalize_variance": True,
        "eps_mode": "inside_sqrt",
    }
    return w.one("MVN", [w.port(node.inputs[0]), w.ints(axes)], attrs, version="opset6")


def _instance_norm(w: LayerWriter, node: Node) -> list[Port]:
    rank = w.rank(node.inputs[0])
    y = _normalized(w, node, list(range(2, rank)))
    trailing = w.ints(list(range(1, rank - 1)))  # [C] -> [C, 1, ...] broadcasts on channels
    scale = w.one("Unsqueeze", [w.port(node.inputs[1]), trailing])
    bias = w.one("Unsqueeze", [w.port(node.inputs[2]), trailing])
    y = w.one("Multiply", [y, scale], {"auto_broadcast": "numpy"})
    return [w.one("Add", [y, bias], {"auto_broadcast": "numpy"})]


def _layer_norm(w: LayerWriter, node: Node) -> list[Port]:
    rank = w.rank(node.inputs[0])
    axis = _int_attr(node, "axis", -1) % rank
    y = _normalized(w, node, list(range(axis, rank)))
    y = w.one("Multiply", [y, w.port(node.inputs[1])], {"auto_broadcast": "numpy"})
    if len(node.inputs) > 2 and node.inputs[2]:
        y = w.one("Add", [y, w.port(node.inputs[2])], {"auto_broadcast": "numpy"})
    return [y]


def _grid_sample(w: LayerWriter, node: Node) -> list[Port]:
    attrs = {
        "align_corners": bool(_int_attr(node, "align_corners", 0)),
        "mode": str(_attr(node, "mode", "bilinear")),
        "padding_mode": str(_attr(node, "padding_mode", "zeros")),
    }
    return [w.one("GridSample", w.inputs(node), attrs, version="opset9")]


def _triangular(w: LayerWriter, node: Node) -> list[Port]:
    """Trilu as a select with a mask made in the graph: element (i, j) of
    each matrix is kept where j - i >= k (upper) or <= k (lower)."""
    _, dtype = w.type_of(node.inputs[0])
    x = w.port(node.inputs[0])
    shape = w.one("ShapeOf", [x], {"output_type": "i64"}, dtype="i64", version="opset3")
    axis = w.ints([0], scalar=True)

    def count(which: int) -> Port:
        size = w.one("Gather", [shape, w.ints([which], scalar=True), axis], {"batch_dims": 0},
                     dtype="i64", version="opset8")  # fmt: skip
        start, step = w.ints([0], scalar=True), w.ints([1], scalar=True)
        return w.one("Range", [start, size, step], {"output_type": "i64"}, dtype="i64",
                     version="opset4")  # fmt: skip

    rows = w.one("Unsqueeze", [count(-2), w.ints([1])], dtype="i64")
    numpy = {"auto_broadcast": "numpy"}
    offset = w.one("Subtract", [count(-1), rows], numpy, dtype="i64")  # j - i, [M, N]
    has_k = len(node.inputs) > 1 and node.inputs[1]
    k = w.port(node.inputs[1]) if has_k else w.ints([0], scalar=True)
    compare = "GreaterEqual" if _int_attr(node, "upper", 1) else "LessEqual"
    keep = w.one(compare, [offset, k], numpy, dtype="bool")
    zero = w.number(0, dtype) if dtype != "bool" else w.const("bool", [], b"\0")
    return [w.one("Select", [keep, x, zero], numpy)]


_TRANSLATIONS: dict[str, _Translate] = {
    "Identity": _identity,
    "Cast": _cast,
    # elementwise, one input
    "Abs": _same("Abs"), "Neg": _same("Negative"), "Ceil": _same("Ceiling"),
    "Floor": _same("Floor"), "Exp": _same("Exp"), "Log": _same("Log"), "Sqrt": _same("Sqrt"),
    "Erf": _same("Erf"), "Sin": _same("Sin"), "Cos": _same("Cos"), "Tan": _same("Tan"),
    "Tanh": _same("Tanh"), "Sigmoid": _same("Sigmoid"), "Relu": _same("ReLU"),
    "Sign": _same("Sign"), "Not": _same("LogicalNot"),
    "Softsign": _same("SoftSign", "opset9"), "Softplus": _same("SoftPlus", "opset4"),
    "HardSwish": _same("HSwish", "opset4"), "IsNaN": _same("IsNaN", "opset10"),
    "IsInf": _is_inf, "Round": _same("Round", "opset5", mode="half_to_even"),
    "Reciprocal": _reciprocal, "Elu": lambda w, n: [
        w.one("Elu", w.inputs(n), {"alpha": _float_attr(n, "alpha", 1.0)})
    ],
    "LeakyRelu": _leaky_relu, "PRelu": _same("PReLU"), "HardSigmoid": _hard_sigmoid,
    "Clip": _clip,
    # elementwise, two or three inputs
    "Add": _binary("Add"), "Sub": _binary("Subtract"), "Mul": _binary("Multiply"),
    "Div": _same("Divide", auto_broadcast="numpy", m_pythondiv=True),
    "Pow": _binary("Power"), "Max": _binary("Maximum"), "Min": _binary("Minimum"),
    "Equal": _binary("Equal"), "Greater": _binary("Greater"),
    "GreaterOrEqual": _binary("GreaterEqual"), "Less": _binary("Less"),
    "LessOrEqual": _binary("LessEqual"), "And": _binary("LogicalAnd"),
    "Or": _binary("LogicalOr"), "Xor": _binary("LogicalXor"), "Where": _binary("Select"),
    # shapes and data movement
    "Reshape": _same("Reshape", special_zero=True), "Transpose": _transpose,
    "Concat": lambda w, n: [w.one("Concat", w.inputs(n), {"axis": _int_attr(n, "axis", 0)})],
    "Slice": _slice, "Gather": _gather,
    "GatherElements": lambda w, n: [
        w.one("GatherElements", w.inputs(n), {"axis": _int_attr(n, "axis", 0)}, version="opset6")
    ],
    "GatherND": _same("GatherND", "opset8", batch_dims=0),
    "ScatterElements": _scatter_elements,
    "ScatterND": _same("ScatterNDUpdate", "opset15", reduction="none"),
    "Expand": _same("Broadcast", "opset3", mode="bidirectional"), "Tile": _same("Tile"),
    "Pad": _pad, "Unsqueeze": _same("Unsqueeze"), "Squeeze": _same("Squeeze"),
    "Split": _split, "Shape": _shape,
    "Trilu": _triangular, "Resize": _resize, "GridSample": _grid_sample,
    # reductions and ranking
    "CumSum": _cum_sum, "TopK": _top_k, "ArgMax": _arg("max"), "ArgMin": _arg("min"),
    "ReduceSum": _reduce("ReduceSum"), "ReduceMean": _reduce("ReduceMean"),
    "ReduceMax": _reduce("ReduceMax"), "ReduceMin": _reduce("ReduceMin"),
    "ReduceProd": _reduce("ReduceProd"),
    "ReduceSumSquare": _reduce("ReduceSum", before="Square"),
    "ReduceLogSum": _reduce("ReduceSum", after="Log"),
    "ReduceLogSumExp": _log_sum_exp,
    "ReduceL1": _reduce("ReduceL1", version="opset4"),
    "ReduceL2": _reduce("ReduceL2", version="opset4"),
    "Softmax": lambda w, n: [
        w.one("SoftMax", w.inputs(n), {"axis": _int_attr(n, "axis", -1)}, version="opset8")
    ],
    # networks
    "MatMul": _mat_mul, "Gemm": _gemm, "Conv": _conv(False), "ConvTranspose": _conv(True),
    "MaxPool": _max_pool, "AveragePool": _average_pool, "LpPool": _lp_pool,
    "BatchNormalization": _batch_norm,
    "InstanceNormalization": _instance_norm, "LayerNormalization": _layer_norm,
}  # fmt: skip

#: The ONNX operators ``LayerWriter`` writes into IR.
WRITTEN = frozenset(_TRANSLATIONS)


def graph_ir(
    nodes: Iterable[Node],
    inputs: Iterable[tuple[str, tuple[int | None, ...], str]],
    outputs: Iterable[tuple[str, str]],
    initializers: Iterable[Initializer],
    types: Mapping[str, ValueType],
) -> tuple[bytes, bytes]:
    """A graph as an IR of its own: ``(xml, weights)``. ``inputs`` are
    (name, shape, dtype), ``outputs`` (value, output name).

    >>> xml, weights = graph_ir(lowered_nodes, [("x", (2,), "f32")], [("#1.relu", "y")],
    ...                         [], types)  # doctest: +SKIP
    """
    root = ET.Element("net", {"name": "wasinn_graph", "version": "11"})
    ET.SubElement(root, "layers")
    ET.SubElement(root, "edges")
    graph = editable(root, b"", b"")
    assert graph is not None
    writer = LayerWriter(graph, types, initializers)
    for name, shape, dtype in inputs:
        writer.bind(name, writer.parameter(name, shape, dtype))
    for node in nodes:
        writer.write(node)
    for value, name in outputs:
        writer.result(value, name)
    return ET.tostring(root, encoding="utf-8"), bytes(graph.extra)
