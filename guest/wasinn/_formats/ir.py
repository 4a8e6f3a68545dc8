"""Reading inputs and outputs from an OpenVINO IR ``.xml``.

OpenVINO orders a model's inputs by the document order of its Parameter
layers and its outputs by the document order of its Result layers (not by
layer id); the host's outputs "0", "1", ... follow that order. A port's
``names`` attribute holds the tensor names, sorted and comma-separated; the
first is the one OpenVINO's ``get_any_name()`` returns and the one the host
accepts for ``set_tensor``.

``IRInfo.metadata`` is what OpenVINO's ``core.read_model(xml).get_rt_info()``
gives, flattened into one dict of strings: a nested entry's key is its path
joined with "/", so ``get_rt_info(["model_info", "mean_values"])`` is
``metadata["model_info/mean_values"]``. It is read as OpenVINO reads it:

* the first ``<rt_info>`` child of ``<net>``; each element in it is an entry
  named by its ``name`` attribute, or else by its tag (``save_model`` writes
  ``<info name="..."/>`` for keys that are not XML names); one with a
  ``value`` attribute is a string, any other a section of entries (a legacy
  ``<unset unset_cli_parameters="..."/>`` inside a section is a string too);
* without ``<rt_info>``, the legacy sections of older IR: ``<meta_data>``
  (its ``<cli_parameters>`` becomes ``conversion_parameters``) and
  ``<quantization_parameters>`` (which becomes ``optimization``);
* a key given twice keeps its last value, a section replacing a string (and
  vice versa); an empty section has no entries;
* ``version``, the IR version from ``<net version="11">``, which OpenVINO's
  reader adds (replacing any entry of that name).

All of OpenVINO's own entries stay (``OpenVINO Runtime``, ``MO_version``,
``conversion_parameters/...``): a user of OpenVINO's API sees them too. A key
that itself contains "/" reads like a nested path; if both exist, the later
one wins. A ``config`` under ``quantization_parameters`` (POT, before NNCF)
is the XML text of that element, re-printed the way OpenVINO does (but a
CDATA section in it comes out as escaped text: ElementTree does not keep
CDATA apart).

ModelFormatError, where OpenVINO refuses the document too: a ``<meta_data>``
entry that is neither ``<cli_parameters>`` nor has a ``value``. And where
OpenVINO would not, for memory's sake: metadata whose flat keys (or re-printed
POT config) would exceed 16 MiB plus the document's size, which takes
sections nested thousands deep or with enormous names.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Union

from .._errors import ModelFormatError
from .._spec import Dim, TensorSpec

# IR element types and port precisions, by the names OpenVINO's Python API
# gives them (wasi-nn's types among them); other names are kept lowercased.
_TYPES = {
    "fp16": "f16", "fp32": "f32", "fp64": "f64",
    "bool": "boolean", "bin": "u1", "unspecified": "dynamic", "undefined": "dynamic",
}  # fmt: skip


# A section of rt_info as OpenVINO holds it: strings and nested sections.
_Section = dict[str, Union[str, "_Section"]]

#: The deepest element nesting an IR document may have. OpenVINO writes 4-7
#: levels (net, layers, layer, data or port, dim) and rt_info sections a few
#: more, but wasinn reads rt_info of any reasonable depth. Freeing an element
#: tree recurses in C without CPython's stack guard: a million levels trap a
#: component (100,000 were measured to free fine with tools/wasmtime.flags'
#: stack), so deeper documents are refused while they are parsed.
MAX_XML_DEPTH = 50_000


class _ShallowTreeBuilder(ET.TreeBuilder):
    """ElementTree's builder, refusing elements nested deeper than MAX_XML_DEPTH."""

    def __init__(self, where: str) -> None:
        super().__init__()
        self._where = where
        self._depth = 0

    def start(self, tag: str, attrs: dict[str, str]) -> ET.Element:
        self._depth += 1
        if self._depth > MAX_XML_DEPTH:
            raise ModelFormatError(
                f"{self._where} nests XML elements more than {MAX_XML_DEPTH} deep; "
                "OpenVINO IR needs a handful of levels"
            )
        return super().start(tag, attrs)

    def end(self, tag: str) -> ET.Element:
        self._depth -= 1
        return super().end(tag)


class IRInfo:
    """What the IR says: inputs, outputs, weight bytes read, rt_info, and the
    ids of its state variables (``ReadValue`` layers: a stateful model, such
    as a decoder keeping its KV cache in the infer request).

    >>> info = read(b'<net version="11"><layers/><rt_info>'
    ...             b'<model_info><mean_values value="1,2,3"/></model_info>'
    ...             b'</rt_info></net>')
    >>> info.metadata
    {'model_info/mean_values': '1,2,3', 'version': '11'}
    """

    def __init__(
        self,
        inputs: list[TensorSpec],
        outputs: list[TensorSpec],
        weights_needed: int,
        metadata: dict[str, str] | None = None,
        states: list[str] | None = None,
    ):
        self.inputs = inputs
        self.outputs = outputs
        self.weights_needed = weights_needed
        self.metadata: dict[str, str] = {} if metadata is None else metadata
        self.states: list[str] = [] if states is None else states


def looks_like_ir(head: bytes) -> bool:
    """True when the bytes start like an IR document."""
    text = head[:512].lstrip(b"\xef\xbb\xbf \t\r\n")
    return text.startswith(b"<?xml") or text.startswith(b"<net")


def read(xml: bytes, where: str = "the model") -> IRInfo:
    """Parse IR XML; raise ModelFormatError if it is not a readable IR.

    >>> [str(s) for s in read(open("digits.xml", "rb").read()).outputs]  # doctest: +SKIP
    ['logits: f32[?, 10]', 'probs: f32[?, 10]']
    """
    parser = ET.XMLParser(target=_ShallowTreeBuilder(where))
    try:
        parser.feed(xml)
        root = parser.close()
    except ModelFormatError:
        raise
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
    states: list[str] = []
    weights_needed = 0
    # Top-level layers only: a Loop's or TensorIterator's body has layers of its own.
    for layer in layers.findall("layer"):
        kind = layer.get("type")
        lid = layer.get("id", "")
        output = layer.find("output")
        for port in output if output is not None else ():
            out_ports[(lid, port.get("id", ""))] = port
        data = layer.find("data")
        if kind == "Parameter":
            first = output[0] if output is not None and len(output) else None
            inputs.append(_param_spec(layer, data, first, where))
            params[lid] = inputs[-1]
        elif kind == "Result":
            results.append(layer)
        elif kind == "ReadValue":
            states.append(data.get("variable_id", "") if data is not None else "")
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
    budget = _Budget(where, _FLAT_LIMIT + len(xml))
    return IRInfo(inputs, outputs, weights_needed, _metadata(root, budget), states)


def _param_spec(
    layer: ET.Element, data: ET.Element | None, port: ET.Element | None, where: str
) -> TensorSpec:
    fallback: str = layer.get("name", "")  # typed apart: after `or`, mypy infers str | None
    names = _first_name(port.get("names") if port is not None else None) or fallback
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
    fallback: str = layer.get("name", "")
    name = (
        _first_name(layer.get("output_names"))
        or _first_name(src_port.get("names") if src_port is not None else None)
        or fallback
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


# Flat keys repeat their sections' names, and a POT config is re-printed with
# one tab per level: both can grow quadratically with nesting. Past this many
# characters (plus the document's length) a document is refused instead.
_FLAT_LIMIT = 1 << 24


class _Budget:
    """Characters the flattened metadata may still take."""

    def __init__(self, where: str, left: int):
        self.where, self.left = where, left

    def spend(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise ModelFormatError(
                f"{self.where}: its rt_info metadata, flattened, would take more than "
                f"{_FLAT_LIMIT >> 20} MiB plus the document's size (sections nested very "
                "deeply or with very long names); wasinn refuses it rather than run out of memory"
            )


def _metadata(root: ET.Element, budget: _Budget) -> dict[str, str]:
    """The model's rt_info as OpenVINO reads it, flattened (see the module docstring)."""
    where = budget.where
    tree: _Section = {}
    section = root.find("rt_info")
    if section is not None:
        for node in _nodes(section):
            if isinstance(node, str):
                tree[""] = {}  # OpenVINO reads a text node as an empty section named ""
            elif node.get("value") is not None:
                tree[_key(node)] = node.get("value", "")
            else:
                tree[_key(node)] = _section(node, budget)
    else:
        # OpenVINO fills "optimization" first, so a <meta_data> entry of that name wins.
        quant = root.find("quantization_parameters")
        tree["optimization"] = _section(quant, budget) if quant is not None else {}
        legacy = root.find("meta_data")
        for node in _nodes(legacy) if legacy is not None else ():
            if isinstance(node, str):
                what = f"text {node.strip()[:40]!r}"
            elif node.tag == "cli_parameters":
                tree["conversion_parameters"] = _section(node, budget)
                continue
            elif node.get("value") is not None:
                tree[node.tag] = node.get("value", "")
                continue
            else:
                what = f"<{node.tag}>"
            raise ModelFormatError(
                f"{where} is not valid OpenVINO IR: its <meta_data> holds {what}, which "
                'OpenVINO cannot read (it reads only <NAME value="..."/> and <cli_parameters>)'
            )
    # Read as OpenVINO reads it (C++ `stream >> int64_t`, whole string, >= 0);
    # it refuses documents whose version does not read so.
    version = re.fullmatch(r"[ \t\n\r\f\v]*\+?([0-9]+)", root.get("version", ""))
    if version and int(version[1]) < 1 << 63:
        tree["version"] = str(int(version[1]))
    flat: dict[str, str] = {}
    _flatten(tree, flat, budget)
    return flat


def _nodes(element: ET.Element) -> list[ET.Element | str]:
    """The children OpenVINO's XML parser (pugixml) sees: elements, and text
    that is not only whitespace, in document order."""
    nodes: list[ET.Element | str] = []
    if element.text and not element.text.isspace():
        nodes.append(element.text)
    for child in element:
        nodes.append(child)
        if child.tail and not child.tail.isspace():
            nodes.append(child.tail)
    return nodes


def _key(node: ET.Element) -> str:
    name = node.get("name")
    return node.tag if name is None else name


def _section(element: ET.Element, budget: _Budget) -> _Section:
    """A section's entries, nested as OpenVINO nests them. Iterative, not
    recursive: a document may nest deeper than Python's recursion limit."""
    top: _Section = {}
    todo = [(element, top)]
    while todo:
        parent, section = todo.pop()
        pot = _key(parent) == "quantization_parameters"
        for node in _nodes(parent):
            if isinstance(node, str):
                section[""] = {}
            elif pot and _key(node) == "config":
                section["config"] = _pot_config(node, budget)
            elif node.get("value") is not None:
                section[_key(node)] = node.get("value", "")
            elif node.tag == "unset" and node.get("unset_cli_parameters") is not None:
                section[_key(node)] = node.get("unset_cli_parameters", "")
            else:
                # Placed now, filled later: a repeated key must keep its place in order.
                child: _Section = {}
                section[_key(node)] = child
                todo.append((node, child))
    return top


def _flatten(section: _Section, out: dict[str, str], budget: _Budget) -> None:
    """Add ``section``'s strings to ``out`` under "/"-joined paths, depth first.

    The path is joined only at its strings: a prefix string per level would
    hold memory quadratic in the depth."""
    path: list[str] = []
    stack = [iter(section.items())]
    while stack:
        for key, value in stack[-1]:
            if isinstance(value, str):
                flat = "/".join([*path, key])
                budget.spend(len(flat))
                out[flat] = value
            else:
                path.append(key)
                stack.append(iter(value.items()))
                break
        else:
            stack.pop()
            if path:
                path.pop()


def _pot_config(element: ET.Element, budget: _Budget) -> str:
    """A legacy POT ``config`` element as OpenVINO stores it: the element
    printed by pugixml (tab-indented), then ``<config>``, ``</config>`` and
    newlines removed and runs of spaces made one."""
    text = _pugi_print(element, budget).replace("<config>", "").replace("</config>", "")
    return re.sub(" +", " ", text.replace("\n", ""))


# pugixml's escapes: text escapes &, < and >; attribute values &, < (not >),
# the quote, and the whitespace that attribute-value normalisation would lose.
_TEXT_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_ATTR_ESCAPES = str.maketrans(
    {"&": "&amp;", "<": "&lt;", '"': "&quot;", "\t": "&#09;", "\n": "&#10;", "\r": "&#13;"}
)


def _pugi_print(element: ET.Element, budget: _Budget) -> str:
    """``element`` as pugixml's default format prints it: each element on a new
    line indented by tabs, except right after text, where it follows on."""
    out: list[str] = []
    newline = False  # the first line is not preceded by one
    open_: list[tuple[ET.Element, Iterator[ET.Element | str]]] = []
    node: ET.Element | str | None = element
    while True:
        if isinstance(node, str):
            out.append(node.translate(_TEXT_ESCAPES))
            newline = False
        elif node is not None:
            if newline:
                budget.spend(len(open_))
                out.append("\n" + "\t" * len(open_))
            attrs = "".join(f' {k}="{v.translate(_ATTR_ESCAPES)}"' for k, v in node.attrib.items())
            out.append(f"<{node.tag}{attrs}")
            children = _nodes(node)
            out.append(">" if children else " />")
            if children:
                open_.append((node, iter(children)))
            newline = True
        while open_:  # the next node, closing the elements that have none left
            node = next(open_[-1][1], None)
            if node is not None:
                break
            closed, _ = open_.pop()
            if newline:
                budget.spend(len(open_))
                out.append("\n" + "\t" * len(open_))
            out.append(f"</{closed.tag}>")
            newline = True
        else:
            return "".join(out)
