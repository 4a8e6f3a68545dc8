"""Turning what ``Model.load`` is given into the host's builder parts."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Union

from . import _ir, _onnx
from ._errors import ModelFormatError, ValidationError
from ._spec import TensorSpec

Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, Sequence[bytes]]

#: Encodings the wasi-nn WIT names.
ENCODINGS = ("openvino", "onnx", "tensorflow", "pytorch", "tensorflowlite", "ggml", "autodetect")


@dataclass
class Resolved:
    """A model ready for the host: parts, encoding and what it declares.

    ``metadata`` holds the model's own key/value strings: ONNX
    ``metadata_props`` or IR ``rt_info`` (see ``_onnx`` and ``_ir``); it is
    empty for formats wasinn does not read.

    >>> resolve("model.onnx", None).metadata  # doctest: +SKIP
    {'character': "'\\n疗\\n绚..."}
    """

    parts: list[bytes]
    encoding: str
    label: str
    inputs: list[TensorSpec] | None = None
    outputs: list[TensorSpec] | None = None
    metadata: dict[str, str] = field(default_factory=dict)


def resolve(source: Source, encoding: str | None) -> Resolved:
    """Read files, infer the encoding, and read metadata where wasinn can."""
    if encoding is not None:
        if not isinstance(encoding, str) or encoding.lower() not in ENCODINGS:
            raise ValidationError(
                f"unknown encoding {encoding!r}; wasi-nn names: {', '.join(ENCODINGS)}"
            )
        encoding = encoding.lower()
    if isinstance(source, (str, os.PathLike)):
        return _from_path(os.fspath(source), encoding)
    if isinstance(source, (bytes, bytearray, memoryview)):
        parts = [bytes(source)]
        label = "the model bytes"
    elif isinstance(source, (list, tuple)) and all(
        isinstance(p, (bytes, bytearray, memoryview)) for p in source
    ):
        if not source:
            raise ValidationError("an empty list of model parts; pass [xml_bytes, weights_bytes]")
        parts = [p if isinstance(p, bytes) else bytes(p) for p in source]
        label = "the model parts"
    else:
        raise ValidationError(
            f"cannot load a model from {type(source).__name__}; pass a path (.xml or .onnx), "
            "bytes, or a list of byte parts such as [xml_bytes, weights_bytes]"
        )
    return _from_parts(parts, encoding or _sniff(parts[0], label), label)


def _from_path(path: str, encoding: str | None) -> Resolved:
    stem, ext = os.path.splitext(path)
    model = _read(path, "model file")
    label = os.path.basename(path)
    if encoding is None:
        encoding = {".xml": "openvino", ".onnx": "onnx"}.get(ext.lower()) or _sniff(model, label)
    parts = [model]
    if encoding == "openvino" and _ir.looks_like_ir(model):
        weights = stem + ".bin"
        if os.path.exists(weights):
            parts.append(_read(weights, "weights file"))
        else:
            info = _ir.read(model, label)
            if info.weights_needed:
                raise FileNotFoundError(
                    f"{label} needs {info.weights_needed} bytes of weights from "
                    f"{os.path.basename(weights)}, which is not beside it ({weights}); "
                    "an IR model is an .xml and a .bin with the same stem"
                )
            parts.append(b"")
    return _from_parts(parts, encoding, label)


def _read(path: str, kind: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise FileNotFoundError(f"{kind} not found: {path}") from None
    except IsADirectoryError:
        raise ValidationError(f"{kind} {path} is a directory, not a file") from None


def _sniff(head: bytes, label: str) -> str:
    if _ir.looks_like_ir(head):
        return "openvino"
    # An ONNX ModelProto starts with field 1 (ir_version, varint): byte 0x08.
    if head[:1] == b"\x08":
        return "onnx"
    raise ModelFormatError(
        f"cannot tell what kind of model {label} is: it is neither OpenVINO IR XML nor "
        "ONNX; pass encoding='openvino' or 'onnx' (or another wasi-nn encoding) explicitly"
    )


def _from_parts(parts: list[bytes], encoding: str, label: str) -> Resolved:
    resolved = Resolved(parts, encoding, label)
    if encoding == "openvino" and _ir.looks_like_ir(parts[0]):
        if len(parts) == 1:
            parts.append(b"")
        if len(parts) != 2:
            raise ValidationError(
                f"an OpenVINO IR model is 2 parts, [xml, weights]; {label} has {len(parts)}"
            )
        info = _ir.read(parts[0], label)
        if info.weights_needed > len(parts[1]):
            raise ModelFormatError(
                f"{label} reads {info.weights_needed} bytes of weights, but the weights are "
                f"{len(parts[1])} bytes: the .bin is truncated or belongs to another model"
            )
        resolved.inputs, resolved.outputs = info.inputs, info.outputs
        resolved.metadata = info.metadata
    elif encoding == "openvino" and len(parts) == 1:
        # Not IR: OpenVINO reads other formats (ONNX) from the first part alone.
        parts.append(b"")
    elif encoding == "onnx":
        if len(parts) != 1:
            raise ValidationError(f"an ONNX model is 1 part; {label} has {len(parts)}")
        if not parts[0]:
            raise ModelFormatError(f"{label} is empty, not an ONNX model")
        onnx = _onnx.read(parts[0], label)
        resolved.inputs, resolved.outputs = onnx.inputs, onnx.outputs
        resolved.metadata = onnx.metadata
    return resolved
