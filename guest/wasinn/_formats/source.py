"""Turning what ``Model.load`` is given into the host's builder parts."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Union

from .._errors import ModelFormatError, ValidationError
from .._spec import TensorSpec
from . import ir, onnx_read

Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, Sequence[bytes]]

#: Encodings the wasi-nn WIT names.
ENCODINGS = ("openvino", "onnx", "tensorflow", "pytorch", "tensorflowlite", "ggml", "autodetect")


@dataclass
class Resolved:
    """A model ready for the host: parts, encoding and what it declares.

    ``metadata`` holds the model's own key/value strings: ONNX
    ``metadata_props`` or IR ``rt_info`` (see ``onnx_read`` and ``ir``); it is
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
    #: The parse of an ONNX model's bytes, kept so that nothing reads them again.
    onnx: onnx_read.OnnxInfo | None = None
    #: What an IR model's XML declares (fusion reads the XML again to edit it).
    ir: ir.IRInfo | None = None
    #: The ids of the model's state variables (``[]``: stateless), ``None`` when
    #: wasinn does not read the format.
    states: list[str] | None = None


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
    return _from_parts(parts, encoding or sniff(parts[0], label), label)


def _from_path(path: str, encoding: str | None) -> Resolved:
    stem, ext = os.path.splitext(path)
    label = os.path.basename(path)
    if os.path.isfile(os.path.join(path, "saved_model.pb")):
        raise _foreign("TensorFlow SavedModel", label or path, label or "saved_model")
    model = read_file(path, "model file")
    if encoding is None:
        encoding = {".xml": "openvino", ".onnx": "onnx"}.get(ext.lower())
    if encoding is None:
        kind = _foreign_kind(model, ext.lower())
        if kind is not None:
            raise _foreign(kind, label, label)
        encoding = sniff(model, label)
    parts = [model]
    info: ir.IRInfo | None = None
    if encoding == "openvino" and ir.looks_like_ir(model):
        weights = stem + ".bin"
        if os.path.exists(weights):
            parts.append(read_file(weights, "weights file"))
        else:
            info = ir.read(model, label)
            if info.weights_needed:
                raise FileNotFoundError(
                    f"{label} needs {info.weights_needed} bytes of weights from "
                    f"{os.path.basename(weights)}, which is not beside it ({weights}); "
                    "an IR model is an .xml and a .bin with the same stem"
                )
            parts.append(b"")
    return _from_parts(parts, encoding, label, info)


def read_file(path: str, kind: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise FileNotFoundError(f"{kind} not found: {path}") from None
    except IsADirectoryError:
        raise ValidationError(f"{kind} {path} is a directory, not a file") from None


#: Formats the host cannot read and wasinn's tools/convert.py can convert: by file
#: ending, and the name the advice uses for a model given as bytes.
_FOREIGN_ENDINGS = {
    ".tflite": "TFLite model",
    ".pb": "TensorFlow model",
    ".pt": "PyTorch file",
    ".pth": "PyTorch file",
}
_FOREIGN_NAMES = {"TFLite model": "model.tflite", "TensorFlow SavedModel": "saved_model"}


def _foreign_kind(head: bytes, ext: str) -> str | None:
    """What other framework's model ``head`` is, if it is one: by the bytes
    where they tell, else by the file ending ``ext`` ("" for bytes)."""
    # A TFLite flatbuffer carries its file identifier at bytes 4..8.
    if head[4:8] == b"TFL3":
        return "TFLite model"
    if head[:1] == b"\x08":
        # ONNX (ir_version) and a TF SavedModel (schema version) both start with
        # field 1 as a varint, then field 2; SavedModel's is 1, an ONNX IR version
        # from before ONNX 1.0 (which shipped IR 3).
        return "TensorFlow SavedModel" if head[:3] == b"\x08\x01\x12" else None
    return _FOREIGN_ENDINGS.get(ext)


def _foreign(kind: str, label: str, name: str) -> ModelFormatError:
    stem = os.path.splitext(name)[0] or "model"
    if kind == "PyTorch file":
        how = f'convert(module, models / "{stem}.xml", example_inputs=(...))'
    else:
        how = f'convert("{name}", models / "{stem}.xml")'
    return ModelFormatError(
        f"cannot load {label}, a {kind}: the host's OpenVINO backend reads only OpenVINO IR "
        "and ONNX from memory. Convert it to IR when the app is built, with wasinn's "
        f"tools/convert.py (in the app's prepare.py: {how}), and load the .xml"
    )


def sniff(head: bytes, label: str) -> str:
    if ir.looks_like_ir(head):
        return "openvino"
    kind = _foreign_kind(head, "")
    if kind is not None:
        raise _foreign(kind, label, _FOREIGN_NAMES[kind])
    # An ONNX ModelProto starts with field 1 (ir_version, varint): byte 0x08.
    if head[:1] == b"\x08":
        return "onnx"
    raise ModelFormatError(
        f"cannot tell what kind of model {label} is: it is neither OpenVINO IR XML nor "
        "ONNX, the formats the host reads. A TFLite, TensorFlow or PyTorch model must be "
        "converted to IR when the app is built, with wasinn's tools/convert.py; for IR or "
        "ONNX that wasinn does not recognise, pass encoding='openvino' or 'onnx'"
    )


def _from_parts(
    parts: list[bytes], encoding: str, label: str, known: ir.IRInfo | None = None
) -> Resolved:
    """The parts resolved: ``known`` is the IR already read from ``parts[0]``, if it was."""
    resolved = Resolved(parts, encoding, label)
    if encoding == "openvino" and parts[0][4:8] == b"TFL3":
        # OpenVINO reads TFLite from a file, never from the memory wasi-nn passes.
        raise _foreign("TFLite model", label, _FOREIGN_NAMES["TFLite model"])
    if encoding == "openvino" and ir.looks_like_ir(parts[0]):
        if len(parts) == 1:
            parts.append(b"")
        if len(parts) != 2:
            raise ValidationError(
                f"an OpenVINO IR model is 2 parts, [xml, weights]; {label} has {len(parts)}"
            )
        info = known if known is not None else ir.read(parts[0], label)
        if info.weights_needed > len(parts[1]):
            raise ModelFormatError(
                f"{label} reads {info.weights_needed} bytes of weights, but the weights are "
                f"{len(parts[1])} bytes: the .bin is truncated or belongs to another model"
            )
        resolved.inputs, resolved.outputs = info.inputs, info.outputs
        resolved.metadata = info.metadata
        resolved.ir = info
        resolved.states = info.states
    elif encoding == "openvino" and len(parts) == 1:
        # Not IR: OpenVINO reads other formats (ONNX) from the first part alone.
        parts.append(b"")
    elif encoding == "onnx":
        if len(parts) != 1:
            raise ValidationError(f"an ONNX model is 1 part; {label} has {len(parts)}")
        if not parts[0]:
            raise ModelFormatError(f"{label} is empty, not an ONNX model")
        onnx = onnx_read.read(parts[0], label)
        resolved.states = []  # ONNX has no state variables
        resolved.inputs, resolved.outputs = onnx.inputs, onnx.outputs
        resolved.metadata = onnx.metadata
        resolved.onnx = onnx
    return resolved
