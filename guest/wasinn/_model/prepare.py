"""``prepare``: a model made ready for the host, without the host.

Everything ``Model.load`` does before it calls the host happens here, as a
pure function of what it is given: read the source, fuse the processing in,
rewrite the model around what the host cannot carry, check its size. The
result, ``Prepared``, holds the parts to send and all that is known about
them, so loading (``model.load``) only talks to the host, and each model's
bytes are parsed once: the ONNX parse made while resolving the source is the
one fusion and the rewrite use, and a graph the builder wrote is not parsed
(unless a rank-0 input needs the host rewrite, which reads it once).

>>> prepared = prepare(onnx_bytes)  # doctest: +SKIP
>>> [str(s) for s in prepared.inputs]  # doctest: +SKIP
['x: f32[?, 4]']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .. import _limits
from .._errors import FusionError
from .._formats import onnx_read, rewrite, source
from .._graph.core import Lowered
from .._spec import TensorSpec
from . import fuse


@dataclass
class Prepared:
    """A model ready to load: the ``parts`` to send with their ``encoding``,
    what the model declares, and the ``plan`` each call follows (see
    ``_formats.rewrite``). ``inputs`` and ``outputs`` are ``None`` for formats
    wasinn does not read."""

    parts: list[bytes]
    encoding: str
    label: str
    inputs: list[TensorSpec] | None
    outputs: list[TensorSpec] | None
    metadata: dict[str, str] = field(default_factory=dict)
    plan: rewrite.Plan = rewrite.NOTHING
    #: The model's state variables (``Model.states``); ``None`` when unknown.
    states: list[str] | None = None


def prepare(
    model: source.Source,
    encoding: str | None = None,
    preprocess: fuse.Preprocess | None = None,
    postprocess: fuse.Postprocess | None = None,
    outputs: Sequence[str] | None = None,
) -> Prepared:
    """``model`` (a path, bytes or parts; see ``Model.load``) made ready for
    the host, computing only ``outputs`` when they are named."""
    resolved = source.resolve(model, encoding)
    if preprocess is None and postprocess is None and outputs is None:
        return _for_host(
            resolved.parts, resolved.encoding, resolved.label, resolved.inputs,
            resolved.outputs, resolved.metadata, resolved.onnx, states=resolved.states,
        )  # fmt: skip
    kept = [outputs] if isinstance(outputs, str) else None if outputs is None else list(outputs)
    processed = preprocess is not None or postprocess is not None
    label = f"{resolved.label} with its processing" if processed else resolved.label
    if resolved.encoding == "openvino" and resolved.ir is not None:
        xml, weights = resolved.parts
        fused = fuse.splice_ir(
            xml, weights, resolved.ir, resolved.label, preprocess, postprocess, kept
        )
        return _for_host(
            fused.parts, "openvino", label, fused.inputs, fused.outputs, resolved.metadata, None,
            states=resolved.states,
        )  # fmt: skip
    if resolved.encoding != "onnx" or resolved.onnx is None:
        what = "preprocess and postprocess are spliced into" if processed else "outputs= prunes"
        raise FusionError(
            f"{what} ONNX and OpenVINO IR models, and {resolved.label} is "
            f"{resolved.encoding}; build the processing as its own GraphBuilder model and run "
            "it before or after this one, or pick outputs with run(outputs=...)"
        )
    info = resolved.onnx
    fused = fuse.splice(resolved.parts[0], info, resolved.label, preprocess, postprocess, kept)
    return _for_host(
        fused.parts, "onnx", label, fused.inputs, fused.outputs, resolved.metadata, None,
        has_dropout=info.uses_op("Dropout"), states=[],
    )  # fmt: skip


def prepare_graph(lowered: Lowered, data: bytes) -> Prepared:
    """A graph the builder lowered (``data`` is ``lowered.onnx()``) made ready
    for the host; its specs come from the builder, so the bytes are read only
    if the host needs a rewrite (a rank-0 input)."""
    return _for_host(
        [data], "onnx", "the model bytes", lowered.input_specs, lowered.output_specs, {}, None,
        has_dropout=False, states=[],
    )  # fmt: skip


def _for_host(
    parts: list[bytes],
    encoding: str,
    label: str,
    inputs: list[TensorSpec] | None,
    outputs: list[TensorSpec] | None,
    metadata: dict[str, str],
    onnx: onnx_read.OnnxInfo | None,
    *,
    has_dropout: bool | None = None,
    states: list[str] | None = None,
) -> Prepared:
    parts, plan = rewrite.for_host(
        parts, encoding, inputs, outputs, label, onnx=onnx, has_dropout=has_dropout
    )
    _limits.check(sum(len(p) for p in parts), label)
    return Prepared(parts, encoding, label, inputs, outputs, metadata, plan, states)
