"""Pre- and post-processing spliced into a model's own graph.

``Model.load(path, preprocess=..., postprocess=...)`` lands here. The two
functions describe the processing with a ``GraphOperations`` (every
``GraphBuilder`` operation, without ``build``), checked against the model's
inputs and outputs (names, dtypes, shapes) and lowered once; then it goes
into the model in front of and behind the model's own graph, so the host
compiles one graph and the tensors in between never cross the guest/host
boundary.

* **ONNX** (``splice``): the processing's nodes go into the model's
  ``GraphProto``. The model's bytes are not decoded: its fields are copied as
  they are, except the input and output entries the processing replaces. The
  builder writes its nodes for ONNX opset 18; in a model that imports another
  opset a node means that opset's version of its operator, so the splice is
  made only when every operator the processing uses means the same there
  (``_formats.onnx_opsets``); otherwise ``FusionError`` says which differ.
* **OpenVINO IR** (``splice_ir``), converted models included: the nodes are
  written as the IR layers OpenVINO's ONNX reader would make of them
  (``_formats.ir_write``) and wired to the model's layers in place of the
  Parameters fed and the Results replaced.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._errors import FusionError, ValidationError
from .._formats import ir, ir_edit, ir_write, onnx_read
from .._formats.onnx_opsets import same_as_opset_18
from .._formats.onnx_write import Node, bytes_field, node_bytes, tensor_bytes, value_bytes
from .._graph import core
from .._graph.core import Lowered, Operand, check_operand, external, lower, shape_text
from .._graph.operations import GraphOperations
from .._spec import TensorSpec

#: ``preprocess(builder)`` declares new inputs and returns, by model input
#: name, the operands that feed those inputs.
Preprocess = Callable[[Any], Mapping[str, Operand]]
#: ``postprocess(builder, outputs)`` gets the model's outputs as operands, by
#: name, and returns the new outputs by name.
Postprocess = Callable[[Any, dict[str, Operand]], Mapping[str, Operand]]


class Fused:
    """A model with its processing spliced in: its parts (ONNX bytes, or IR
    XML and weights), and what they declare (known from the parts, so nothing
    reads the bytes again)."""

    def __init__(
        self, parts: list[bytes], inputs: list[TensorSpec], outputs: list[TensorSpec]
    ) -> None:
        self.parts, self.inputs, self.outputs = parts, inputs, outputs


@dataclass
class _Processing:
    """The processing lowered for splicing: nodes ``before`` the model (ending
    with the Identity nodes that name the model inputs they ``feed``) and
    ``after`` it (ending with the Identity nodes naming the new outputs), and
    whether post-processing replaces the model's outputs."""

    lowered: Lowered
    feeds: dict[str, Operand]
    before: list[Node]
    after: list[Node]
    postprocessed: bool
    kept: Sequence[str] | None  # the outputs asked for; None: all


def _process(
    inputs: list[TensorSpec],
    outputs: list[TensorSpec],
    label: str,
    preprocess: Preprocess | None,
    postprocess: Postprocess | None,
    kept: Sequence[str] | None = None,
) -> _Processing:
    """The processing for a model with ``inputs`` and ``outputs``, built and
    checked against them (names, dtypes and shapes). ``kept`` names the
    outputs to compute (of the post-processing, else of the model); ``None``:
    all of them."""
    builder = GraphOperations()
    by_name = {s.name: s for s in inputs}
    feeds = _feeds(builder, preprocess, by_name, label) if preprocess else {}
    split = core.node_count(builder)  # nodes made from here on are post-processing
    new: Mapping[str, Operand] | None = None
    if postprocess is not None:
        model_outputs = {s.name: _external(builder, s, label) for s in outputs}
        new = postprocess(builder, dict(model_outputs))
        if not isinstance(new, Mapping) or not new:
            raise ValidationError(
                "postprocess must return a mapping of new output name to Operand, e.g. "
                "{'mask': b.greater(outputs['probs'], 0.5)}"
            )
        taken = [n for n in new if n in model_outputs or n in by_name]
        if taken:
            raise ValidationError(
                f"postprocess output {', '.join(map(repr, taken))} has the name of one of the "
                f"model's inputs or outputs; name new outputs differently"
            )
    if kept is not None:
        names = list(new) if new is not None else [s.name for s in outputs]
        _check_kept(kept, names, label, new is not None)
        if new is not None:
            new = {name: value for name, value in new.items() if name in kept}
    lowered = lower(builder, new, feeds=feeds)
    clash = [v.name for v in lowered.inputs if v.name in by_name]
    if clash:
        raise ValidationError(
            f"preprocess input {', '.join(map(repr, clash))} has the name of a model input; "
            "give the new input another name (e.g. 'image' for the raw image feeding 'x')"
        )
    before = [n for i, n in lowered.steps if i < split] + lowered.feeds
    after = [n for i, n in lowered.steps if i >= split] + lowered.finals
    return _Processing(lowered, feeds, before, after, postprocess is not None, kept)


def _specs(
    processing: _Processing, inputs: list[TensorSpec], outputs: list[TensorSpec]
) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """The fused model's inputs, the model's not fed (in place) and then the
    new ones (appended), and its outputs, the new ones or else the model's."""
    lowered = processing.lowered
    new_inputs = [s for s in inputs if s.name not in processing.feeds] + lowered.input_specs
    if processing.postprocessed:
        return new_inputs, lowered.output_specs
    return new_inputs, [s for s in outputs if _kept(processing, s.name)]


def _check_kept(kept: Sequence[str], names: list[str], label: str, processed: bool) -> None:
    """``outputs=`` names outputs that exist: the post-processing's, or the model's."""
    whose = f"{label} with its post-processing" if processed else label
    if not kept:
        raise ValidationError(
            f"outputs= is empty; name at least one output of {whose}: {', '.join(names)}"
        )
    unknown = [name for name in kept if name not in names]
    if unknown:
        raise ValidationError(
            f"outputs= names {', '.join(map(repr, unknown))}, which {whose} does not compute; "
            f"its outputs are: {', '.join(names)}"
        )


def _kept(processing: _Processing, output: str) -> bool:
    """Whether the model's own ``output`` stays an output of the fused model."""
    return not processing.postprocessed and (processing.kept is None or output in processing.kept)


def splice(
    data: bytes,
    info: onnx_read.OnnxInfo,
    label: str,
    preprocess: Preprocess | None,
    postprocess: Postprocess | None,
    kept: Sequence[str] | None = None,
) -> Fused:
    """The ONNX model ``data`` (parsed as ``info``) with the processing spliced
    into its graph, computing only the outputs ``kept`` (all if ``None``).

    Example (inside ``Model.load``)::

        def pre(b):
            image = b.input("image", shape=[480, 640, 3], dtype="u8")
            x = b.transpose(b.cast(image, "f32") / 255.0, permutation=[2, 0, 1])
            return {"x": b.reshape(x, [1, 3, 480, 640])}

        fused = splice(onnx_bytes, onnx_read.read(onnx_bytes), "det.onnx", pre, None)
    """
    processing = _process(info.inputs, info.outputs, label, preprocess, postprocess, kept)
    lowered, before, after = processing.lowered, processing.before, processing.after
    _check_opset(before + after, info.opset, label)
    if info.graph_count != 1:
        raise FusionError(
            f"{label} has its graph in {info.graph_count} pieces; cannot splice into it"
        )
    fields: list[bytes] = []  # the model's graph fields that stay
    for field in info.graph_fields:
        if field.number == 11 and field.wire == 2 and info.value_name(field) in processing.feeds:
            continue  # now computed by the pre-processing
        if field.number == 12 and not _kept(processing, info.value_name(field)):
            continue  # replaced by the post-processing's outputs, or not asked for
        fields.append(bytes(data[field.head : field.end]))
    graph = b"".join(
        [bytes_field(1, node_bytes(n)) for n in before]
        + fields
        + [bytes_field(1, node_bytes(n)) for n in after]
        + [bytes_field(5, tensor_bytes(t)) for t in lowered.initializers]
        + [bytes_field(11, value_bytes(v, f"{v.name}_")) for v in lowered.inputs]
        + [bytes_field(12, value_bytes(v, f"{v.name}_")) for v in lowered.outputs]
    )
    out = bytearray()
    for field in info.model_fields:
        out += bytes_field(7, graph) if field.number == 7 else data[field.head : field.end]
    return Fused([bytes(out)], *_specs(processing, info.inputs, info.outputs))


def splice_ir(
    xml: bytes,
    weights: bytes,
    info: ir.IRInfo,
    label: str,
    preprocess: Preprocess | None,
    postprocess: Postprocess | None,
    kept: Sequence[str] | None = None,
) -> Fused:
    """The OpenVINO IR ``xml`` + ``weights`` (read as ``info``) with the
    processing written into it as IR layers (``_formats.ir_write``),
    computing only the outputs ``kept`` (all if ``None``).

    A Parameter the pre-processing feeds is removed and its consumers read
    the pre-processing's value instead; the new inputs' Parameters come after
    the model's own, so inputs keep the order ``Model.inputs`` shows. With
    post-processing, the model's Results are removed and the new outputs'
    Results added; a model output ``kept`` leaves out keeps no Result either.
    The processing's constants are appended to the weights.
    """
    processing = _process(info.inputs, info.outputs, label, preprocess, postprocess, kept)
    lowered = processing.lowered
    root = ET.fromstring(xml)  # ir.read parsed these bytes already: no error here
    graph = ir_edit.editable(root, xml, weights)
    if graph is None:
        raise FusionError(f"{label} has no layers to splice the processing into")
    writer = ir_write.LayerWriter(graph, lowered.types, lowered.initializers)
    parameters = [layer for layer in graph.layers if layer.get("type") == "Parameter"]
    results = [layer for layer in graph.layers if layer.get("type") == "Result"]
    for value in lowered.inputs:
        assert value.shape is not None, "builder inputs have a rank"
        writer.bind(value.name, writer.parameter(value.name, value.shape, value.dtype))
    for node in processing.before[: len(processing.before) - len(lowered.feeds)]:
        writer.write(node)
    for feed, layer in _fed(processing, info, parameters, label):
        _rewire(graph, layer, writer.port(feed.inputs[0]))
        graph.layers.remove(layer)
    if len(results) != len(info.outputs):
        raise FusionError(
            f"{label} has {len(results)} Result layers for {len(info.outputs)} outputs; "
            "cannot splice into it"
        )
    for spec, layer in zip(info.outputs, results, strict=True):
        if _kept(processing, spec.name):
            continue
        writer.bind(spec.name, _source(graph, layer, spec.name, label), named=True)
        _drop_edges_into(graph, layer)
        graph.layers.remove(layer)
    if processing.postprocessed:
        for node in processing.after[: len(processing.after) - len(lowered.finals)]:
            writer.write(node)
        for final in lowered.finals:
            writer.result(final.inputs[0], final.outputs[0])
    parts = [ET.tostring(root, encoding="utf-8"), weights + bytes(graph.extra)]
    return Fused(parts, *_specs(processing, info.inputs, info.outputs))


def _feeds(
    builder: GraphOperations, preprocess: Preprocess, inputs: dict[str, TensorSpec], label: str
) -> dict[str, Operand]:
    feeds = preprocess(builder)
    if not isinstance(feeds, Mapping) or not feeds:
        raise ValidationError(
            "preprocess must return a mapping of model input name to Operand, e.g. {'x': x}"
        )
    out: dict[str, Operand] = {}
    for name, operand in feeds.items():
        spec = inputs.get(name)
        if spec is None:
            raise ValidationError(
                f"preprocess feeds {name!r}, which is not an input of {label}; its inputs are: "
                f"{', '.join(map(repr, inputs))}"
            )
        operand = check_operand(builder, operand, "preprocess", f"value for {name!r}")
        if operand.dtype != spec.dtype:
            raise ValidationError(
                f"preprocess gives {name!r} as {operand.dtype}, but {label} takes {spec.dtype}; "
                f"cast it (b.cast(x, {spec.dtype!r}))"
            )
        if spec.shape is not None and not _fits(operand.shape, spec.shape):
            raise ValidationError(
                f"preprocess gives {name!r} the shape {shape_text(operand.shape)}, but {label} "
                f"takes {shape_text(spec.shape)}"
            )
        out[name] = operand
    return out


def _fits(given: tuple[int | None, ...], wanted: tuple[int | None, ...]) -> bool:
    if len(given) != len(wanted):
        return False
    return all(g is None or w is None or g == w for g, w in zip(given, wanted, strict=True))


def _external(builder: GraphOperations, spec: TensorSpec, label: str) -> Operand:
    if spec.shape is None:
        raise FusionError(
            f"{label} does not declare the rank of its output {spec.name!r}; post-processing "
            "needs it"
        )
    return external(builder, spec.name, spec.shape, spec.dtype)


def _check_opset(nodes: list[Node], opset: int | None, label: str) -> None:
    if opset is None:
        raise FusionError(f"{label} imports no default ONNX opset; cannot splice into it")
    differ = sorted({n.op_type for n in nodes if not same_as_opset_18(n.op_type, opset)})
    if differ:
        raise FusionError(
            f"{label} imports ONNX opset {opset}, where {', '.join(differ)} mean something other "
            "than at opset 18, for which wasinn writes the processing; run it as a separate "
            "GraphBuilder model before or after this one instead"
        )


def _fed(
    processing: _Processing, info: ir.IRInfo, parameters: list[ET.Element], label: str
) -> list[tuple[Node, ET.Element]]:
    """Each feed node with the Parameter layer of the model input it feeds."""
    if len(parameters) != len(info.inputs):
        raise FusionError(
            f"{label} has {len(parameters)} Parameter layers for {len(info.inputs)} inputs; "
            "cannot splice into it"
        )
    layers = {spec.name: layer for spec, layer in zip(info.inputs, parameters, strict=True)}
    return [(feed, layers[feed.outputs[0]]) for feed in processing.lowered.feeds]


def _rewire(graph: ir_edit.IRGraph, layer: ET.Element, port: ir_write.Port) -> None:
    """Every edge out of ``layer`` leaves from ``port`` instead."""
    lid = layer.get("id")
    for edge in graph.edges:
        if edge.get("from-layer") == lid:
            edge.set("from-layer", port[0])
            edge.set("from-port", port[1])


def _source(graph: ir_edit.IRGraph, result: ET.Element, name: str, label: str) -> ir_write.Port:
    """The output port feeding Result layer ``result`` (model output ``name``)."""
    lid = result.get("id")
    for edge in graph.edges:
        if edge.get("to-layer") == lid:
            return (edge.get("from-layer", ""), edge.get("from-port", ""))
    raise FusionError(f"{label}'s output {name!r} has no edge into its Result; cannot splice")


def _drop_edges_into(graph: ir_edit.IRGraph, layer: ET.Element) -> None:
    lid = layer.get("id")
    for edge in [e for e in graph.edges if e.get("to-layer") == lid]:
        graph.edges.remove(edge)
