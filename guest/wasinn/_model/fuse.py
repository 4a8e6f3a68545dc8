"""Pre- and post-processing spliced into an ONNX model's own graph.

``Model.load(path, preprocess=..., postprocess=...)`` lands here. The two
functions describe the processing with a ``GraphOperations`` (every
``GraphBuilder`` operation, without ``build``); their nodes go into
the model's ``GraphProto`` in front of and behind the model's own nodes, so
the host compiles one graph and the tensors in between never cross the
guest/host boundary. The model's bytes are not decoded: its fields are copied
as they are, except the input and output entries the processing replaces.

The builder writes its nodes for ONNX opset 18. In a model that imports
another opset a node means that opset's version of its operator, so the
splice is made only when every operator the processing uses means the same
there (``_formats.onnx_opsets``); otherwise ``FusionError`` says which operators differ.
OpenVINO IR is not spliced (its XML would need layers, not ONNX nodes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .._errors import FusionError, ValidationError
from .._formats import onnx_read
from .._formats.onnx_opsets import same_as_opset_18
from .._formats.onnx_write import Node, bytes_field, node_bytes, tensor_bytes, value_bytes
from .._graph.core import Operand, check_operand, external, lower, node_count, shape_text
from .._graph.operations import GraphOperations
from .._spec import TensorSpec

#: ``preprocess(builder)`` declares new inputs and returns, by model input
#: name, the operands that feed those inputs.
Preprocess = Callable[[Any], Mapping[str, Operand]]
#: ``postprocess(builder, outputs)`` gets the model's outputs as operands, by
#: name, and returns the new outputs by name.
Postprocess = Callable[[Any, dict[str, Operand]], Mapping[str, Operand]]


class Fused:
    """An ONNX model with its processing spliced in: the bytes, and what they
    declare (known from the parts, so nothing reads the bytes again)."""

    def __init__(self, data: bytes, inputs: list[TensorSpec], outputs: list[TensorSpec]) -> None:
        self.data, self.inputs, self.outputs = data, inputs, outputs


def splice(
    data: bytes,
    info: onnx_read.OnnxInfo,
    label: str,
    preprocess: Preprocess | None,
    postprocess: Postprocess | None,
) -> Fused:
    """The ONNX model ``data`` (parsed as ``info``) with the processing spliced into its graph.

    Example (inside ``Model.load``)::

        def pre(b):
            image = b.input("image", shape=[480, 640, 3], dtype="u8")
            x = b.transpose(b.cast(image, "f32") / 255.0, permutation=[2, 0, 1])
            return {"x": b.reshape(x, [1, 3, 480, 640])}

        fused = splice(onnx_bytes, onnx_read.read(onnx_bytes), "det.onnx", pre, None)
    """
    builder = GraphOperations()
    inputs = {s.name: s for s in info.inputs}
    feeds = _feeds(builder, preprocess, inputs, label) if preprocess else {}
    split = node_count(builder)  # nodes made from here on are post-processing
    new: Mapping[str, Operand] | None = None
    if postprocess is not None:
        model_outputs = {s.name: _external(builder, s, label) for s in info.outputs}
        new = postprocess(builder, dict(model_outputs))
        if not isinstance(new, Mapping) or not new:
            raise ValidationError(
                "postprocess must return a mapping of new output name to Operand, e.g. "
                "{'mask': b.greater(outputs['probs'], 0.5)}"
            )
        taken = [n for n in new if n in model_outputs or n in inputs]
        if taken:
            raise ValidationError(
                f"postprocess output {', '.join(map(repr, taken))} has the name of one of the "
                f"model's inputs or outputs; name new outputs differently"
            )
    lowered = lower(builder, new, feeds=feeds)
    clash = [v.name for v in lowered.inputs if v.name in inputs]
    if clash:
        raise ValidationError(
            f"preprocess input {', '.join(map(repr, clash))} has the name of a model input; "
            "give the new input another name (e.g. 'image' for the raw image feeding 'x')"
        )
    before = [n for i, n in lowered.steps if i < split] + lowered.feeds
    after = [n for i, n in lowered.steps if i >= split] + lowered.finals
    _check_opset(before + after, info.opset, label)
    if info.graph_count != 1:
        raise FusionError(
            f"{label} has its graph in {info.graph_count} pieces; cannot splice into it"
        )
    kept: list[bytes] = []
    for field in info.graph_fields:
        if field.number == 11 and field.wire == 2 and info.value_name(field) in feeds:
            continue  # now computed by the pre-processing
        if field.number == 12 and postprocess is not None:
            continue  # replaced by the post-processing's outputs
        kept.append(bytes(data[field.head : field.end]))
    graph = b"".join(
        [bytes_field(1, node_bytes(n)) for n in before]
        + kept
        + [bytes_field(1, node_bytes(n)) for n in after]
        + [bytes_field(5, tensor_bytes(t)) for t in lowered.initializers]
        + [bytes_field(11, value_bytes(v, f"{v.name}_")) for v in lowered.inputs]
        + [bytes_field(12, value_bytes(v, f"{v.name}_")) for v in lowered.outputs]
    )
    out = bytearray()
    for field in info.model_fields:
        out += bytes_field(7, graph) if field.number == 7 else data[field.head : field.end]
    # The fused graph's inputs are the model's not fed (in place) and then the
    # new ones (appended); its outputs, the new ones or else the model's.
    new_inputs = [s for s in info.inputs if s.name not in feeds] + lowered.input_specs
    new_outputs = lowered.output_specs if postprocess is not None else list(info.outputs)
    return Fused(bytes(out), new_inputs, new_outputs)


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
