"""Editing an OpenVINO IR document: new layers, ports, edges and weights.

The rewrite for the host (``rewrite``) and the processing spliced into an IR
(``ir_write``) both add layers to a parsed IR. ``IRGraph`` holds what such
edits share: the ``<layers>`` and ``<edges>`` elements, fresh layer ids and
names, and the bytes appended to the weights (a new Const layer points past
the end of the model's ``.bin``, so the model's own bytes are never moved).

>>> root = ET.fromstring(b'<net version="11"><layers/></net>')
>>> graph = editable(root, b"", b"")
>>> add_layer(graph.layers, graph.new_id(), "y", "Relu").get("id")
'0'
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field


class Names:
    """Fresh names: never a substring of the model's bytes, so never taken."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.made: set[str] = set()

    def fresh(self, base: str) -> str:
        """``base``, with ``_`` appended until no name in the model has it."""
        name = base
        while name.encode() in self.data or name in self.made:
            name += "_"
        self.made.add(name)
        return name


@dataclass
class IRGraph:
    """An IR's layers and edges as they are being edited, with what new
    layers take: fresh layer ids (``next_id``), fresh names (``taken``), and
    the bytes appended to the ``weights_size`` bytes of weights (``extra``)."""

    layers: ET.Element
    edges: ET.Element
    next_id: Iterator[int]
    taken: Names
    weights_size: int
    extra: bytearray = field(default_factory=bytearray)

    def new_id(self) -> str:
        """A layer id no layer has."""
        return str(next(self.next_id))

    def offset(self) -> int:
        """Where the next bytes appended to the weights start."""
        return self.weights_size + len(self.extra)


def editable(root: ET.Element, xml: bytes, weights: bytes) -> IRGraph | None:
    """The IR of ``root`` (parsed from ``xml``) ready for edits, or ``None``
    when it has no layers."""
    layers = root.find("layers")
    edges = root.find("edges")
    if layers is None:
        return None
    if edges is None:
        edges = ET.SubElement(root, "edges")
    ids = [int(x) for x in (layer.get("id", "") for layer in layers) if x.isdigit()]
    next_id = iter(range(max(ids, default=-1) + 1, 1 << 62))
    return IRGraph(layers, edges, next_id, Names(xml), len(weights))


def first_port(layer: ET.Element, kind: str) -> ET.Element | None:
    """The first ``input`` or ``output`` port of ``layer``, if it has one."""
    ports = layer.find(kind)
    return ports[0] if ports is not None and len(ports) else None


def add_layer(
    layers: ET.Element, lid: str, name: str, kind: str, version: str = "opset1"
) -> ET.Element:
    """A new layer ``kind`` (of opset ``version``) at the end of ``layers``."""
    attrs = {"id": lid, "name": name, "type": kind, "version": version}
    return ET.SubElement(layers, "layer", attrs)


def add_port(
    layer: ET.Element, kind: str, pid: str, precision: str | None, dims: list[int]
) -> ET.Element:
    """A new ``input`` or ``output`` port of ``layer``. OpenVINO infers the
    types and shapes of all but Parameter and Const layers, so ``precision``
    and ``dims`` may be left out (``None``, ``[]``) for the others."""
    ports = layer.find(kind)
    if ports is None:
        ports = ET.SubElement(layer, kind)
    port = ET.SubElement(ports, "port", {"id": pid})
    if precision:
        port.set("precision", precision)
    for d in dims:
        ET.SubElement(port, "dim").text = str(d)
    return port


def add_edge(edges: ET.Element, src: str, src_port: str, dst: str, dst_port: str) -> None:
    """An edge from output ``src_port`` of layer ``src`` to input ``dst_port`` of ``dst``."""
    ET.SubElement(
        edges, "edge",
        {"from-layer": src, "from-port": src_port, "to-layer": dst, "to-port": dst_port},
    )  # fmt: skip
