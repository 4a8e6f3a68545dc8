"""Reading inputs and outputs from an OpenVINO IR ``.xml``.

OpenVINO orders a model's inputs by the document order of its Parameter
layers and its outputs by the document order of its Result layers (not by
layer id); the host's outputs "0", "1", ... follow that order. A port's
``names`` attribute holds the tensor names, sorted and comma-separated; the
first is the one OpenVINO's ``get_any_name()`` returns and the one the host
accepts for ``set_tensor``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ._errors import ModelFormatError
from ._spec import Dim, TensorSpec

# IR element types and port precisions, by the names OpenVINO's Python API
# gives them (wasi-nn's types among them); other names are kept lowercased.
_TYPES = {
    "fp16": "f16", "fp32": "f32", "fp64": "f64",
    "bool": "boolean", "bin": "u1", "unspecified": "dynamic", "undefined": "dynamic",
}  # fmt: skip


class IRInfo:
    """What the IR says: inputs, outputs and how many weight bytes it reads."""

    def __init__(self, inputs: list[TensorSpec], outputs: list[TensorSpec], weights_needed: int):
        self.inputs = inputs
        self.outputs = outputs
        self.weights_needed = weights_needed


def looks_like_ir(head: bytes) -> bool:
    """True when the bytes start like an IR document."""
    text = head[:512].lstrip(b"\xef\xbb\xbf \t\r\n")
    return text.startswith(b"<?xml") or text.startswith(b"<net")


def read(xml: bytes, where: str = "the model") -> IRInfo:
    """Parse IR XML; raise ModelFormatError if it is not a readable IR."""
    try:
        root = ET.fromstring(xml)
    except (ET.ParseError, LookupError, ValueError, UnicodeError) as exc:
        # The last three come from an XML declaration naming an encoding
        # expat cannot read.
        raise ModelFormatError(f"{where} is not valid OpenVINO IR XML: {exc}") from None
    if root.tag != "net":
        raise ModelFormatError(
            f"{where} is XML but not OpenVINO IR: its root element is <{root.tag}>, not <net>"
        )
    layers = root.find("layers")
    if layers is None:
        raise ModelFormatError(f"{where} is not valid OpenVINO IR: it has no <layers>")
    # Which output port feeds each (layer, port): Result names can live there.
    producer: dict[tuple[str, str], tuple[str, str]] = {}
    edges = root.find("edges")
    for edge in edges if edges is not None else ():
        producer[(edge.get("to-layer", ""), edge.get("to-port", ""))] = (
            edge.get("from-layer", ""),
            edge.get("from-port", ""),
        )
    out_ports: dict[tuple[str, str], ET.Element] = {}
    inputs: list[TensorSpec] = []
    params: dict[str, TensorSpec] = {}  # by layer id
    results: list[ET.Element] = []
    weights_needed = 0
    for layer in layers.iter("layer"):
        kind = layer.get("type")
        lid = layer.get("id", "")
        output = layer.find("output")
        for port in output if output is not None else ():
            out_ports[(lid, port.get("id", ""))] = port
        data = layer.find("data")
        if kind == "Parameter":
            port = output[0] if output is not None and len(output) else None
            inputs.append(_param_spec(layer, data, port, where))
            params[lid] = inputs[-1]
        elif kind == "Result":
            results.append(layer)
        if data is not None and data.get("offset") is not None and data.get("size") is not None:
            try:
                end = int(data.get("offset", "0")) + int(data.get("size", "0"))
            except ValueError:
                raise ModelFormatError(
                    f"{where}: layer {layer.get('name')!r} has a non-numeric weight offset or size"
                ) from None
            weights_needed = max(weights_needed, end)
    # A port without <dim> is rank 0, or of dynamic rank: only a Parameter
    # says which (shape="..."). A Result fed by a Parameter takes its shape;
    # other Results are read as of unknown rank when any input is, and as
    # scalars otherwise.
    any_rank = any(spec.shape is None for spec in inputs)
    outputs = [_result_spec(r, producer, out_ports, params, where, any_rank) for r in results]
    return IRInfo(inputs, outputs, weights_needed)


def _param_spec(
    layer: ET.Element, data: ET.Element | None, port: ET.Element | None, where: str
) -> TensorSpec:
    names = _first_name(port.get("names") if port is not None else None) or layer.get("name", "")
    if data is not None and data.get("element_type"):
        dtype = _dtype(data.get("element_type", ""))
    else:
        dtype = _dtype(port.get("precision", "") if port is not None else "")
    text = data.get("shape", "").strip() if data is not None else ""
    shape: tuple[Dim, ...] | None
    if text == "...":
        shape = None  # dynamic rank
    elif port is not None and port.find("dim") is not None:
        shape = tuple(_dim(d.text or "", where) for d in port.findall("dim"))
    else:
        shape = tuple(_dim(d, where) for d in text.split(",")) if text else ()
    return TensorSpec(names, shape, dtype)


def _result_spec(
    layer: ET.Element,
    producer: dict[tuple[str, str], tuple[str, str]],
    out_ports: dict[tuple[str, str], ET.Element],
    params: dict[str, TensorSpec],
    where: str,
    any_rank: bool,
) -> TensorSpec:
    inp = layer.find("input")
    port = inp[0] if inp is not None and len(inp) else None
    source = producer.get((layer.get("id", ""), port.get("id", "") if port is not None else ""))
    src_port = out_ports.get(source) if source else None
    name = (
        _first_name(layer.get("output_names"))
        or _first_name(src_port.get("names") if src_port is not None else None)
        or layer.get("name", "")
    )
    ref = port if port is not None else src_port
    dtype = _dtype(ref.get("precision", "") if ref is not None else "")
    dims = ref.findall("dim") if ref is not None else []
    shape: tuple[Dim, ...] | None
    if dims:
        shape = tuple(_dim(d.text or "", where) for d in dims)
    elif source is not None and source[0] in params:
        shape = params[source[0]].shape
    else:
        shape = None if any_rank else ()
    return TensorSpec(name, shape, dtype)


def _first_name(names: str | None) -> str | None:
    """The first of OpenVINO's comma-separated names.

    ``\\,`` is a comma inside a name; any other backslash, and spaces, are
    part of the name, as OpenVINO reads them.
    """
    if not names:
        return None
    out, i = [], 0
    while i < len(names):
        if names.startswith("\\,", i):
            out.append(",")
            i += 2
            continue
        if names[i] == ",":
            break
        out.append(names[i])
        i += 1
    return "".join(out) or None


def _dtype(name: str) -> str:
    key = name.strip().lower()
    return _TYPES.get(key, key or "unknown")


def _dim(text: str, where: str) -> Dim:
    text = text.strip()
    if text in ("-1", "?", "") or ".." in text:
        return None
    try:
        value = int(text)
    except ValueError:
        raise ModelFormatError(f"{where}: dimension {text!r} is not a number") from None
    return None if value < 0 else value
