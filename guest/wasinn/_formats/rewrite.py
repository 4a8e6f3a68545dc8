"""Rewriting a model, before the host sees it, around what the host cannot carry.

The wasmtime host cannot pass a rank-0 tensor in either direction (OpenVINO's
C API refuses a 0-dim shape, and a [1] tensor for a [] input), and OpenVINO's
ONNX reader drops static zero-size inputs and renames a few others. wasinn
edits the model so that none of this shows:

* **rank-0 inputs** cross as shape [1]: the graph input becomes a [1] input
  under a new name, followed by a Squeeze to the rank-0 value the model's
  nodes read under the old name. The guest reshapes the user's scalar to [1].
* **rank-0 outputs** (and outputs of undeclared rank, which may be scalars)
  cross with one more leading axis: an Unsqueeze on axis 0 feeds the graph
  output. The guest removes that axis again, so whatever the host computed,
  the shape given back is exact.
* **static zero-size inputs** become empty constants inside the graph (their
  value is fully known: no elements), so the feed no longer depends on how a
  backend prunes them. They may still be passed (and are checked), or left out.
  In ONNX (opset 9 on) the constant is a ConstantOfShape: OpenVINO reads an
  empty Constant or initializer as a scalar.
* **renamed inputs**: an input that an inference-mode Dropout passes straight
  to a graph output is known to OpenVINO by that output's name; the guest
  feeds it under that name. Dropout's ``ratio`` input, when it is a graph
  input used by nothing else, has no effect on the outputs (Dropout computes
  the identity outside training), and OpenVINO drops it from a model read
  from memory: it becomes a constant like a zero-size input.

``model.inputs`` and ``model.outputs`` keep the model's own declarations;
``Plan`` records what the guest must do on each call. Models whose operator
set is unknown are left as they are (rank-0 tensors then fail with a clear
error). IR models get the same rank-0 and zero-size rewrites on their XML.

Example::

    >>> data, plan = onnx_model(onnx_read.read(model_bytes))  # doctest: +SKIP
    >>> plan.scalar_inputs, plan.unsqueezed  # doctest: +SKIP
    (frozenset({'limit'}), frozenset({0}))
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field, replace

from .. import _dtypes
from .._errors import BackendRuntimeError
from .._host.api import HostOutput
from .._spec import TensorSpec
from .._tensor import Tensor
from . import ir, onnx_read, onnx_write
from .ir_edit import IRGraph, Names, add_edge, add_layer, add_port, editable, first_port


@dataclass(frozen=True)
class Plan:
    """What the guest does on each call of a rewritten model.

    ``host_names``: model input name -> the name the host knows it by (only
    where they differ). ``scalar_inputs``: inputs fed as [1] instead of [].
    ``folded``: inputs now inside the graph, never sent. ``unsqueezed``:
    indices of outputs that come back with an extra leading axis of 1.
    ``notes``: what was rewritten, in words (for error messages).
    """

    host_names: dict[str, str] = field(default_factory=dict)
    scalar_inputs: frozenset[str] = frozenset()
    folded: frozenset[str] = frozenset()
    unsqueezed: frozenset[int] = frozenset()
    notes: tuple[str, ...] = ()
    #: What the model still has that the host cannot carry (named in compute errors).
    limits: tuple[str, ...] = ()

    @property
    def rank0_inputs(self) -> frozenset[str]:
        """Inputs that take rank-0 tensors: the rewritten scalars, and folded
        inputs (never sent, so any declared shape will do)."""
        return self.scalar_inputs | self.folded

    def host_feeds(self, feeds: list[tuple[str, Tensor]]) -> list[tuple[str, Tensor]]:
        """Checked ``(name, Tensor)`` feeds as the rewritten model takes them:
        folded inputs left out, scalars as [1], names as the host knows them."""
        out = []
        for name, t in feeds:
            if name in self.folded:
                continue
            if name in self.scalar_inputs:
                t = Tensor._wrap(t._data, (1,), t._dtype)
            out.append((self.host_names.get(name, name), t))
        return out

    def model_outputs(self, raw: list[HostOutput], what: str) -> list[HostOutput]:
        """The host's outputs with the axis each Unsqueeze added taken off again."""
        out = list(raw)
        for i in self.unsqueezed:
            if i >= len(out):
                continue
            name, shape, dtype, data = out[i]
            if not shape or shape[0] != 1:
                raise BackendRuntimeError(
                    f"{what}: the host returned output {i} as {dtype}{list(shape)}, but the model "
                    "was rewritten to return it with a leading axis of 1 (a wasinn bug: please "
                    "report it with the model)"
                )
            out[i] = HostOutput(name, shape[1:], dtype, data)
        return out


NOTHING = Plan()

# wasi-nn dtypes the ONNX writer can also express (bf16 included).
_WRITABLE = frozenset(_dtypes.ITEMSIZE) & frozenset(onnx_write.ONNX_TYPES)


def _zero_size(spec: TensorSpec) -> bool:
    static = spec.static_shape
    return bool(static) and static is not None and math.prod(static) == 0


def _plan(
    outputs: list[TensorSpec],
    host_names: dict[str, str],
    scalars: Collection[str],
    folded: Collection[str],
    unsqueezed: Collection[int],
) -> Plan:
    """The plan of a rewritten model (ONNX or IR), with its notes in words."""
    notes = [f"rank-0 input {n!r} is passed as shape [1]" for n in scalars]
    # An output of undeclared rank is unsqueezed too, but may not be a scalar.
    notes += [f"rank-0 output {outputs[i].name!r} is returned as shape [1]"
              for i in sorted(unsqueezed) if outputs[i].shape == ()]  # fmt: skip
    notes += [f"input {n!r} is folded into the model as a constant" for n in folded]
    # The scalars' host names are said above; these are only renamed (Dropout).
    notes += [f"input {n!r} is fed under the host's name {t!r}"
              for n, t in host_names.items() if n not in scalars]  # fmt: skip
    return Plan(
        host_names=host_names,
        scalar_inputs=frozenset(scalars),
        folded=frozenset(folded),
        unsqueezed=frozenset(unsqueezed),
        notes=tuple(notes),
    )


# ---------------------------------------------------------------- ONNX


def onnx_model(info: onnx_read.OnnxInfo) -> tuple[bytes, Plan]:
    """The model ``info`` was read from, rewritten for the host (see the module
    docstring), and its plan. Returns the model's own bytes and ``NOTHING``
    when there is nothing to do.
    """
    data = info.data
    changes = _onnx_changes(info)
    if changes is None:
        return data, NOTHING
    edits = _onnx_edits(info, changes, Names(data))
    graph = _onnx_graph(info, data, changes, edits)
    model_fields = [f for f in info.model_fields if f.number != 7]  # copied as they are
    out = [bytes(data[f.head : f.end]) for f in model_fields]
    out.append(onnx_write.bytes_field(7, graph))
    host_names = {**changes.renamed, **edits.host_names}
    plan = _plan(info.outputs, host_names, changes.scalars, changes.folded, changes.unsqueezed)
    return b"".join(out), plan


@dataclass(frozen=True)
class _OnnxChanges:
    """What an ONNX rewrite changes, decided before any bytes are written.

    ``scalars``: rank-0 inputs to feed as [1]; ``folded``: inputs to make
    constants (both name -> spec, in the model's order); ``unsqueezed``:
    indices of outputs to give a leading axis; ``renamed``: inputs the host
    knows by a Dropout output's name. ``opset``: the model's (known) opset.
    """

    opset: int
    scalars: dict[str, TensorSpec]
    folded: dict[str, TensorSpec]
    unsqueezed: list[int]
    renamed: dict[str, str]


def _onnx_changes(info: onnx_read.OnnxInfo) -> _OnnxChanges | None:
    """What the host cannot take in the model as it is (see the module
    docstring), or ``None`` when that is nothing or the opset is unknown."""
    scalar_in = [s for s in info.inputs if s.shape == () and s.dtype in _WRITABLE]
    zero_in = [s for s in info.inputs if _zero_size(s) and s.dtype in _WRITABLE]
    out_idx = [
        i
        for i, s in enumerate(info.outputs)
        if (s.shape is None or s.shape == ()) and s.dtype in _dtypes.ITEMSIZE
    ]
    if info.opset is None or not (scalar_in or zero_in or out_idx or info.uses_op("Dropout")):
        return None
    nodes = info.nodes()
    graph_inputs = {s.name for s in info.inputs}
    graph_outputs = [s.name for s in info.outputs]
    renamed: dict[str, str] = {}
    folded = {s.name: s for s in zero_in} if info.opset >= 9 else {}
    scalars = {s.name: s for s in scalar_in if s.name not in folded}
    for name, target in _dropout_passthrough(nodes, graph_inputs, graph_outputs).items():
        if name not in scalars:
            renamed[name] = target
    for name in _unused_ratios(nodes, graph_inputs, graph_outputs):
        spec = next(s for s in info.inputs if s.name == name)
        if spec.static_shape is not None and spec.dtype in _WRITABLE:
            folded[name] = spec
            scalars.pop(name, None)
    if not (scalars or folded or out_idx or renamed):
        return None
    return _OnnxChanges(info.opset, scalars, folded, out_idx, renamed)


@dataclass(frozen=True)
class _OnnxEdits:
    """The serialized parts an ONNX rewrite adds: NodeProtos before (``head``)
    and after (``tail``) the graph's own, the ValueInfoProtos that replace
    graph inputs (by name) and outputs (by index), and the fresh names the
    scalar inputs take on the host (``host_names``)."""

    head: list[bytes]
    tail: list[bytes]
    inputs: dict[str, bytes]
    outputs: dict[int, bytes]
    host_names: dict[str, str]


def _onnx_edits(info: onnx_read.OnnxInfo, changes: _OnnxChanges, taken: Names) -> _OnnxEdits:
    """The nodes, inputs and outputs that carry out ``changes``: a Squeeze
    after each [1] input, the folded inputs' constants, and an Unsqueeze
    before each unsqueezed output."""
    opset = changes.opset
    head_nodes: list[bytes] = []
    tail_nodes: list[bytes] = []
    axes_name = ""
    if opset >= 13 and (changes.scalars or changes.unsqueezed):
        axes_name = taken.fresh("wasinn_axes0")
        head_nodes.append(_constant(axes_name, "i64", (1,), b"\0" * 8))
    host_names: dict[str, str] = {}
    new_inputs: dict[str, bytes] = {}
    for name, spec in changes.scalars.items():
        host = taken.fresh(f"{name}__wasinn_1d")
        host_names[name] = host
        new_inputs[name] = onnx_write.value_bytes(onnx_write.Value(host, spec.dtype, (1,)), "")
        head_nodes.append(_axis_node("Squeeze", host, name, axes_name, opset))
    for name, spec in changes.folded.items():
        head_nodes += _folded_nodes(name, spec, taken)
    new_outputs: dict[int, bytes] = {}
    for i in changes.unsqueezed:
        spec = info.outputs[i]
        host = taken.fresh(f"{spec.name}__wasinn_1d")
        tail_nodes.append(_axis_node("Unsqueeze", spec.name, host, axes_name, opset))
        new_outputs[i] = _output_info(host, spec)
    return _OnnxEdits(head_nodes, tail_nodes, new_inputs, new_outputs, host_names)


def _folded_nodes(name: str, spec: TensorSpec, taken: Names) -> list[bytes]:
    """The nodes that compute folded input ``name``: zeros of its static shape."""
    # OpenVINO reads an empty Constant (or initializer) as a scalar, so the
    # value is made by ConstantOfShape instead; a non-empty one (a Dropout
    # ratio) is a plain Constant.
    shape = spec.static_shape or ()
    size = math.prod(shape) * _dtypes.ITEMSIZE[spec.dtype]
    if size:
        return [_constant(name, spec.dtype, shape, b"\0" * size)]
    dims = taken.fresh(f"{name}__wasinn_shape")
    packed = b"".join(d.to_bytes(8, "little") for d in shape)
    nodes = [_constant(dims, "i64", (len(shape),), packed)]
    zero = onnx_write.Initializer("", spec.dtype, (1,), b"\0" * _dtypes.ITEMSIZE[spec.dtype])
    attr = _tensor_attr(onnx_write.tensor_bytes(zero))
    nodes.append(_node_bytes([dims], [name], "ConstantOfShape", [attr]))
    return nodes


def _onnx_graph(
    info: onnx_read.OnnxInfo, data: bytes, changes: _OnnxChanges, edits: _OnnxEdits
) -> bytes:
    """The rewritten GraphProto: the head nodes, the graph's own fields (with
    folded inputs left out and the edited inputs and outputs replaced), then
    the tail nodes."""
    parts = [onnx_write.bytes_field(1, n) for n in edits.head]
    out_pos = 0
    for graph_field in info.graph_fields:
        number, wire, head, _, b = graph_field
        if number == 11 and wire == 2:
            name = info.value_name(graph_field)
            if name in changes.folded:
                continue
            if name in edits.inputs:
                parts.append(onnx_write.bytes_field(11, edits.inputs[name]))
                continue
        elif number == 12 and wire == 2:
            pos, out_pos = out_pos, out_pos + 1
            if pos in edits.outputs:
                parts.append(onnx_write.bytes_field(12, edits.outputs[pos]))
                continue
        parts.append(bytes(data[head:b]))
    parts += [onnx_write.bytes_field(1, n) for n in edits.tail]
    return b"".join(parts)


def _is_dropout(node: onnx_read.Node) -> bool:
    # Without a training_mode input, Dropout is the identity (every opset).
    plain = len(node.inputs) < 3 or node.inputs[2] == ""
    return node.op_type == "Dropout" and node.domain in ("", "ai.onnx") and plain


def _dropout_passthrough(
    nodes: list[onnx_read.Node], inputs: set[str], outputs: list[str]
) -> dict[str, str]:
    """Graph inputs an identity Dropout turns straight into a graph output:
    OpenVINO's reader gives the input that output's name."""
    found: dict[str, str] = {}
    for node in nodes:
        if (
            _is_dropout(node)
            and node.inputs
            and node.inputs[0] in inputs
            and node.inputs[0] not in outputs
            and node.outputs
            and node.outputs[0] in outputs
        ):
            found.setdefault(node.inputs[0], node.outputs[0])
    return found


def _unused_ratios(nodes: list[onnx_read.Node], inputs: set[str], outputs: list[str]) -> list[str]:
    """Graph inputs used only as an identity Dropout's ratio (no effect on anything)."""
    uses: dict[str, int] = {}
    ratio_uses: dict[str, int] = {}
    for node in nodes:
        for k, name in enumerate(node.inputs):
            uses[name] = uses.get(name, 0) + 1
            if k == 1 and _is_dropout(node):
                ratio_uses[name] = ratio_uses.get(name, 0) + 1
    return [n for n, k in ratio_uses.items() if n in inputs and n not in outputs and uses[n] == k]


def _constant(name: str, dtype: str, shape: tuple[int, ...], raw: bytes) -> bytes:
    """A Constant node (opset 1 on) whose ``value`` is the given tensor."""
    tensor = onnx_write.tensor_bytes(onnx_write.Initializer("", dtype, shape, raw))
    return _node_bytes([], [name], "Constant", [_tensor_attr(tensor)])


def _tensor_attr(tensor: bytes) -> bytes:
    """The ``value`` attribute holding a TensorProto."""
    # AttributeProto: name (1), t (5), type (20) = TENSOR (4).
    head = onnx_write.bytes_field(1, b"value")
    return head + onnx_write.bytes_field(5, tensor) + b"\xa0\x01\x04"


def _axis_node(op: str, src: str, dst: str, axes_name: str, opset: int) -> bytes:
    """Squeeze or Unsqueeze on axis 0: axes as an input from opset 13, an attribute before."""
    if opset >= 13:
        return _node_bytes([src, axes_name], [dst], op, [])
    # AttributeProto: name (1), ints (8, packed), type (20) = INTS (7).
    attr = onnx_write.bytes_field(1, b"axes") + onnx_write.bytes_field(8, b"\0") + b"\xa0\x01\x07"
    return _node_bytes([src], [dst], op, [attr])


def _node_bytes(
    inputs: Iterable[str], outputs: Iterable[str], op: str, attrs: list[bytes]
) -> bytes:
    parts = [onnx_write.bytes_field(1, n.encode()) for n in inputs]
    parts += [onnx_write.bytes_field(2, n.encode()) for n in outputs]
    parts.append(onnx_write.bytes_field(4, op.encode()))
    parts += [onnx_write.bytes_field(5, a) for a in attrs]
    return b"".join(parts)


def _output_info(name: str, spec: TensorSpec) -> bytes:
    """The ValueInfoProto of an unsqueezed output: [1, *shape], or no shape."""
    shape = None if spec.shape is None else (1, *spec.shape)
    return onnx_write.value_bytes(onnx_write.Value(name, spec.dtype, shape), f"{name}_")


# ---------------------------------------------------------------- OpenVINO IR


def ir_model(
    xml: bytes, weights: bytes, info: ir.IRInfo, where: str = "the model"
) -> tuple[bytes, bytes, Plan]:
    """The IR rewritten for the host (rank-0 inputs and outputs, zero-size
    inputs; see the module docstring), and its plan.

    A rank-0 Parameter becomes a [1] Parameter under a new name followed by a
    Squeeze that carries the old name; a rank-0 Result gets an Unsqueeze on
    axis 0 (its axis is 8 bytes appended to the weights); a zero-size
    Parameter becomes an empty Const. Returns the inputs themselves and
    ``NOTHING`` when there is nothing to do.
    """
    scalar_in = {s.name for s in info.inputs if s.shape == () and s.dtype in _dtypes.ITEMSIZE}
    zero_in = {s.name for s in info.inputs if _zero_size(s)}
    out_idx = [i for i, s in enumerate(info.outputs) if s.shape == ()]
    if not (scalar_in or zero_in or out_idx):
        return xml, weights, NOTHING
    root = ET.fromstring(xml)  # ir.read parsed these bytes already: no error here
    graph = editable(root, xml, weights)
    if graph is None:
        return xml, weights, NOTHING
    host_names, scalars, folded = _ir_inputs(graph, info.inputs, scalar_in, zero_in)
    unsqueezed = _ir_outputs(graph, out_idx)
    if not (scalars or folded or unsqueezed):
        return xml, weights, NOTHING
    plan = _plan(info.outputs, host_names, scalars, folded, unsqueezed)
    return ET.tostring(root, encoding="utf-8"), weights + bytes(graph.extra), plan


def _ir_inputs(
    graph: IRGraph, inputs: list[TensorSpec], scalar_in: set[str], zero_in: set[str]
) -> tuple[dict[str, str], list[str], list[str]]:
    """Folds the zero-size Parameters and gives the rank-0 ones a Squeeze;
    returns the host names of the scalars, the scalars, and the folded inputs
    (in the model's order, so that error messages name them in a fixed order)."""
    host_names: dict[str, str] = {}
    scalars: list[str] = []
    folded: list[str] = []
    params = [layer for layer in graph.layers if layer.get("type") == "Parameter"]
    for layer, spec in zip(params, inputs, strict=False):
        port = first_port(layer, "output")
        data = layer.find("data")
        if port is None or data is None:
            continue
        if spec.name in zero_in:
            _ir_fold(graph, layer, data)
            folded.append(spec.name)
        elif spec.name in scalar_in:
            host_names[spec.name] = _ir_squeeze(graph, layer, port, data, spec.name)
            scalars.append(spec.name)
    return host_names, scalars, folded


def _ir_fold(graph: IRGraph, layer: ET.Element, data: ET.Element) -> None:
    """Makes zero-size Parameter ``layer`` (``data`` its data) an empty Const."""
    offset = graph.offset()
    layer.set("type", "Const")
    layer.set("version", "opset1")
    shape = data.get("shape", "")
    element = data.get("element_type", "")
    data.attrib.clear()
    data.attrib.update(
        {"element_type": element, "shape": shape, "offset": str(offset), "size": "0"}
    )


def _ir_squeeze(
    graph: IRGraph, layer: ET.Element, port: ET.Element, data: ET.Element, name: str
) -> str:
    """Makes rank-0 Parameter ``layer`` (output ``port``, ``data`` its data)
    a [1] Parameter under a fresh name, followed by a Squeeze that takes over
    its names and its edges; returns the fresh name."""
    lid, pid = layer.get("id", ""), port.get("id", "")
    host = graph.taken.fresh(f"{name}__wasinn_1d")
    sid = graph.new_id()
    names = port.get("names")
    data.set("shape", "1")
    ET.SubElement(port, "dim").text = "1"
    port.set("names", host.replace(",", "\\,"))
    squeeze = add_layer(graph.layers, sid, f"{layer.get('name', '')}/wasinn_squeeze", "Squeeze")
    add_port(squeeze, "input", "0", port.get("precision"), [1])
    out = add_port(squeeze, "output", "1", port.get("precision"), [])
    if names is not None:
        out.set("names", names)
    for edge in graph.edges:
        if edge.get("from-layer") == lid and edge.get("from-port") == pid:
            edge.set("from-layer", sid)
            edge.set("from-port", "1")
    add_edge(graph.edges, lid, pid, sid, "0")
    return host


def _ir_outputs(graph: IRGraph, out_idx: list[int]) -> set[int]:
    """Gives the rank-0 Results at ``out_idx`` an Unsqueeze where the IR lets
    it (the Result has an input port and an edge into it); returns their indices."""
    unsqueezed: set[int] = set()
    results = [layer for layer in graph.layers if layer.get("type") == "Result"]
    producers = {(e.get("to-layer"), e.get("to-port")): e for e in graph.edges}
    out_ports = {
        (layer.get("id"), p.get("id")): p
        for layer in graph.layers
        for p in layer.iterfind("output/port")
    }
    for i in out_idx:
        if i >= len(results):
            continue
        result = results[i]
        rport = first_port(result, "input")
        if rport is None:
            continue
        feed = producers.get((result.get("id"), rport.get("id")))
        if feed is None:
            continue
        src = out_ports.get((feed.get("from-layer"), feed.get("from-port")))
        precision = (src if src is not None else rport).get("precision")
        _ir_unsqueeze(graph, result, rport, feed, precision)
        unsqueezed.add(i)
    return unsqueezed


def _ir_unsqueeze(
    graph: IRGraph, result: ET.Element, rport: ET.Element, feed: ET.Element, precision: str | None
) -> None:
    """Inserts an Unsqueeze on axis 0 into ``feed``, the edge into ``result``'s
    input ``rport``; the axis is a Const read from the end of the weights."""
    cid, uid = graph.new_id(), graph.new_id()
    offset = graph.offset()
    graph.extra += bytes(8)  # the axis, 0, as one i64
    const = add_layer(graph.layers, cid, f"{result.get('name', '')}/wasinn_axis", "Const")
    ET.SubElement(
        const, "data",
        {"element_type": "i64", "shape": "1", "offset": str(offset), "size": "8"},
    )  # fmt: skip
    add_port(const, "output", "0", "I64", [1])
    unsq = add_layer(graph.layers, uid, f"{result.get('name', '')}/wasinn_unsqueeze", "Unsqueeze")
    add_port(unsq, "input", "0", precision, [])
    add_port(unsq, "input", "1", "I64", [1])
    add_port(unsq, "output", "2", precision, [1])
    ET.SubElement(rport, "dim").text = "1"
    feed.set("to-layer", uid)
    feed.set("to-port", "0")
    add_edge(graph.edges, cid, "0", uid, "1")
    add_edge(graph.edges, uid, "2", result.get("id", ""), rport.get("id", ""))


# ---------------------------------------------------------------- entry


def for_host(
    parts: list[bytes],
    encoding: str,
    inputs: list[TensorSpec] | None,
    outputs: list[TensorSpec] | None,
    where: str,
    *,
    onnx: onnx_read.OnnxInfo | None = None,
    has_dropout: bool | None = None,
) -> tuple[list[bytes], Plan]:
    """The model parts the host should get, and the plan for each call.

    Only models whose inputs and outputs wasinn read (ONNX, IR) are touched.
    For ONNX, ``onnx`` is the parse of ``parts[0]`` when the caller has it;
    without it, ``has_dropout`` says whether the model has a Dropout node
    (when known, e.g. for a graph wasinn wrote), and the bytes are read here
    only if a rewrite is needed.
    """
    if inputs is None or outputs is None:
        return parts, NOTHING
    new_parts, plan = _rewrite(parts, encoding, inputs, outputs, where, onnx, has_dropout)
    limits = _limits(outputs, plan)
    return new_parts, replace(plan, limits=limits) if limits else plan


def unrewritten(outputs: list[TensorSpec] | None) -> Plan:
    """The plan of a model the host loaded as it is (by name): nothing to do
    on each call, but what it cannot return is named when compute fails."""
    limits = _limits(outputs or [], NOTHING)
    return Plan(limits=limits) if limits else NOTHING


def _limits(outputs: list[TensorSpec], plan: Plan) -> tuple[str, ...]:
    """What the host still cannot return, in words, for compute errors."""
    found = []
    for i, spec in enumerate(outputs):
        if spec.dtype not in _dtypes.ITEMSIZE:
            found.append(f"output {spec.name!r} is {spec.dtype}, which wasi-nn cannot carry")
        elif spec.shape == () and i not in plan.unsqueezed:
            found.append(f"output {spec.name!r} is rank 0, which the host cannot return")
        elif spec.shape is None and i not in plan.unsqueezed:
            found.append(
                f"output {spec.name!r} has no declared rank; if it is a scalar, "
                "the host cannot return it"
            )
    return tuple(found)


def _rewrite(
    parts: list[bytes],
    encoding: str,
    inputs: list[TensorSpec],
    outputs: list[TensorSpec],
    where: str,
    onnx: onnx_read.OnnxInfo | None,
    has_dropout: bool | None,
) -> tuple[list[bytes], Plan]:
    if encoding == "onnx" and len(parts) == 1:
        maybe = any(s.shape == () or _zero_size(s) for s in inputs) or any(
            s.shape is None or s.shape == () for s in outputs
        )
        if not maybe:
            if onnx is None and has_dropout is None:
                onnx = onnx_read.read(parts[0], where)
            if not (onnx.uses_op("Dropout") if onnx is not None else has_dropout):
                return parts, NOTHING  # the common case
        info = onnx if onnx is not None else onnx_read.read(parts[0], where)
        data, plan = onnx_model(info)
        return [data], plan
    if encoding == "openvino" and len(parts) == 2 and ir.looks_like_ir(parts[0]):
        info_ir = ir.IRInfo(inputs, outputs, 0)
        xml, weights, plan = ir_model(parts[0], parts[1], info_ir, where)
        return [xml, weights], plan
    return parts, NOTHING
