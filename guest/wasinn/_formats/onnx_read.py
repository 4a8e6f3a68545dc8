"""Reading inputs and outputs from ONNX model bytes, without protobuf.

An ``.onnx`` file is one protobuf ``ModelProto``. This module walks the
protobuf wire format itself and reads only these fields (numbers as in
onnx.proto):

* ModelProto: ir_version (1), graph (7), opset_import (8; domain 1, version 2),
  metadata_props (14; StringStringEntryProto: key 1, value 2)
* GraphProto: initializer (5), input (11), output (12), sparse_initializer (15)
* TensorProto: name (8); SparseTensorProto: values (1), a TensorProto
* ValueInfoProto: name (1), type (2)
* TypeProto: tensor_type (1), sequence_type (4), map_type (5), opaque_type (7),
  sparse_tensor_type (8), optional_type (9)
* TypeProto.Tensor: elem_type (1), shape (2); TensorShapeProto: dim (1);
  TensorShapeProto.Dimension: dim_value (1), dim_param (2)

Everything else (nodes, weights, docs) is stepped over by offset: nothing is
copied or decoded, so a large model costs one pass over its field headers.
That pass also records where every field of the ModelProto and of its graph
lies (``OnnxInfo.model_fields``, ``graph_fields``), so fusion and the host
rewrites edit the model from this one parse; they read NodeProto's input (1),
output (2), op_type (4) and domain (7) on demand (``nodes()``, ``uses_op()``).
As in protobuf, a singular message field that occurs twice is the merge of
both occurrences, and a scalar that occurs twice keeps its last value.

Shapes: ``dim_value`` gives an int; ``dim_param``, a negative value or no
value gives ``None``. A tensor of rank 0 (a ``shape`` with no dims) gets
``shape=()``; one of unknown rank (no ``shape`` at all) gets ``shape=None``,
and its name is listed in ``OnnxInfo.unknown_rank`` too. Values that are not plain tensors get
``shape=()`` and the dtype ``"sequence"``, ``"map"``, ``"optional"``,
``"sparse-tensor"``, ``"opaque"``, or ``"undefined"`` when no type is given.

``metadata_props`` become ``OnnxInfo.metadata``, a dict of strings, as
onnxruntime's ``get_modelmeta().custom_metadata_map`` gives them: a key
given twice keeps its last value, and an entry without a key or a value has
"" there. A key or value that is not UTF-8 is a ModelFormatError (onnx
declares them ``string``; onnxruntime fails on them too, when asked for
the map). OpenVINO's own reader files these entries under
``rt_info["framework"]`` instead, and keeps the first of a repeated key.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple, NoReturn

from .._errors import ModelFormatError
from .._spec import Dim, TensorSpec

# TensorProto.DataType numbers to wasinn dtype names (wasi-nn's own where it has one).
_DTYPES = {
    0: "undefined", 1: "f32", 2: "u8", 3: "i8", 4: "u16", 5: "i16", 6: "i32", 7: "i64",
    8: "string", 9: "boolean", 10: "f16", 11: "f64", 12: "u32", 13: "u64",
    14: "complex64", 15: "complex128", 16: "bf16", 17: "f8e4m3fn", 18: "f8e4m3fnuz",
    19: "f8e5m2", 20: "f8e5m2fnuz", 21: "u4", 22: "i4", 23: "f4e2m1", 24: "f8e8m0",
    25: "u2", 26: "i2", 27: "f6e2m3", 28: "f6e3m2",
}  # fmt: skip

# TypeProto's oneof members that are not plain tensors, by field number.
_OTHER_KINDS = {4: "sequence", 5: "map", 7: "opaque", 8: "sparse-tensor", 9: "optional"}

# Wire types: 0 varint, 1 fixed 8 bytes, 2 length-delimited, 5 fixed 4 bytes.
_VARINT, _LEN = 0, 2
# The wire type each field we read must have, per message.
_MODEL = {1: _VARINT, 7: _LEN, 8: _LEN, 14: _LEN}
_OPSET = {1: _LEN, 2: _VARINT}
_ENTRY = {1: _LEN, 2: _LEN}
_GRAPH = {5: _LEN, 11: _LEN, 12: _LEN, 15: _LEN}
_TENSOR = {8: _LEN}
_SPARSE = {1: _LEN}
_VALUE_INFO = {1: _LEN, 2: _LEN}
_TYPE = {1: _LEN, 4: _LEN, 5: _LEN, 7: _LEN, 8: _LEN, 9: _LEN}
_TENSOR_TYPE = {1: _VARINT, 2: _LEN}
_SHAPE = {1: _LEN}
_DIM = {1: _VARINT, 2: _LEN}
_NODE = {1: _LEN, 2: _LEN, 4: _LEN, 7: _LEN}  # input, output, op_type, domain

_U64 = (1 << 64) - 1
# One message as the byte ranges of all its occurrences (merged in order).
Spans = list[tuple[int, int]]
Buffer = bytes | memoryview


class Field(NamedTuple):
    """One protobuf field where it lies in the model's bytes: its ``number``,
    wire type, ``head`` (where its key starts) and its value's ``start:end``.
    ``data[head:end]`` is the whole field, to copy as it is."""

    number: int
    wire: int
    head: int
    start: int
    end: int


# A walk step as a Field without a Python-level constructor call: a model has
# a field per node, and this runs for each while the model is read.
_as_field = tuple.__new__


@dataclass
class Node:
    """One NodeProto of the main graph: what it computes from what."""

    op_type: str
    domain: str
    inputs: list[str]
    outputs: list[str]


class OnnxInfo:
    """One ONNX model, parsed once: what it declares and where its fields lie.

    ``opset`` is the version of the default ("" or "ai.onnx") operator set,
    or ``None`` when the model does not import it; ``ir_version`` is ``None``
    when absent. ``unknown_rank`` holds the names of inputs and outputs whose
    tensor type has no shape at all (their ``shape`` is ``None``).
    ``metadata`` holds the model's ``metadata_props`` (empty when it has none).

    For the code that edits a model without decoding it (pre/post-processing
    fusion, the host rewrites), ``model_fields`` and ``graph_fields`` locate
    every field of the ModelProto and of its main graph, ``value_name`` names
    an input or output field, and ``nodes()`` and ``uses_op()`` read the
    nodes on demand, from the same parse.

    >>> info = read(open("rec.onnx", "rb").read())  # doctest: +SKIP
    >>> info.metadata["character"].splitlines()[:3]  # doctest: +SKIP
    ["'", '疗', '绚']
    """

    def __init__(
        self,
        inputs: list[TensorSpec],
        outputs: list[TensorSpec],
        opset: int | None,
        ir_version: int | None,
        unknown_rank: frozenset[str] = frozenset(),
        metadata: dict[str, str] | None = None,
    ):
        self.inputs, self.outputs, self.unknown_rank = inputs, outputs, unknown_rank
        self.opset, self.ir_version = opset, ir_version
        self.metadata: dict[str, str] = {} if metadata is None else metadata
        self.model_fields: list[Field] = []
        self.graph_fields: list[Field] = []
        self._names: dict[int, str] = {}
        self._reader: _Reader | None = None

    @property
    def data(self) -> bytes:
        """The model's bytes, as parsed."""
        return bytes(self._require_reader().buf)

    @property
    def graph_count(self) -> int:
        """How many times the ModelProto carries its graph field (protobuf merges them)."""
        return sum(1 for f in self.model_fields if f.number == 7)

    def value_name(self, field: Field) -> str:
        """The name of a graph input (11) or output (12) field."""
        return self._names[field.head]

    def nodes(self) -> list[Node]:
        """The main graph's nodes, in order."""
        reader = self._require_reader()
        return [
            reader.node(f.start, f.end) for f in self.graph_fields if f.number == 1 and f.wire == 2
        ]

    def uses_op(self, op_type: str) -> bool:
        """Whether a node of the main graph has this ``op_type``: one step per
        node (its attributes and weights are not read)."""
        reader = self._require_reader()
        wanted = op_type.encode()
        for f in self.graph_fields:
            if f.number != 1 or f.wire != 2:
                continue
            # op_type (4) is written before a node's attributes, where a Constant
            # node keeps its weights: stop there rather than step over them.
            for key, wire, _, x, y in reader.walk([(f.start, f.end)], "NodeProto"):
                if key == 4 and wire == 2:
                    if reader.buf[x:y] == wanted:
                        return True
                    break
        return False

    def _require_reader(self) -> _Reader:
        if self._reader is None:
            raise ValueError("this OnnxInfo was not read from model bytes")
        return self._reader


def read(data: bytes, where: str = "the model") -> OnnxInfo:
    """Read an ONNX model's graph inputs (minus initializers), outputs and metadata.

    Raises ModelFormatError, naming ``where``, for bytes that are empty,
    truncated, corrupt or not ONNX. ``data`` may be any bytes-like object.
    """
    buf: Buffer = data if isinstance(data, bytes) else memoryview(data).cast("B")
    if not len(buf):
        raise ModelFormatError(f"{where} is empty (0 bytes), not an ONNX model")
    return _Reader(buf, where).model()


def _signed(value: int, bits: int) -> int:
    """Protobuf int32/int64 from a decoded varint (negatives are two's complement)."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


class _Reader:
    """One pass over one model's bytes; every error names ``where``."""

    def __init__(self, buf: Buffer, where: str):
        self.buf = buf
        self.where = where

    def fail(self, what: str) -> NoReturn:
        hint = ""
        if bytes(self.buf[:64]).lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<"):
            hint = " (the bytes look like XML, not ONNX protobuf)"
        raise ModelFormatError(f"{self.where} is not a readable ONNX model: {what}{hint}")

    def varint(self, pos: int, end: int, msg: str) -> tuple[int, int]:
        """Decode the varint at ``pos``; return it (as uint64) and the position after it."""
        buf = self.buf
        result = shift = 0
        while True:
            if pos >= end:
                self.truncated(end, f"a number in {msg} is cut off by the end")
            byte = buf[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                return result & _U64, pos
            shift += 7
            if shift >= 70:  # 10 bytes hold 64 bits; longer is corruption, not a number
                self.fail(f"a number in {msg} is longer than 10 bytes")

    def truncated(self, end: int, what: str) -> NoReturn:
        # Running past the end of the data is truncation; past a field's end, corruption.
        if end == len(self.buf):
            self.fail(f"the bytes are truncated: {what} of the data")
        self.fail(f"the bytes are corrupt: {what} of its enclosing field")

    def walk(self, spans: Spans, msg: str) -> Iterator[tuple[int, int, int, int, int]]:
        """Yield ``(field, wire, head, a, b)`` for every field of the message.

        ``head`` is where the field's key starts; a varint field gives its
        value as ``a``, a length-delimited one its byte range ``a:b``, a
        fixed-size one its range too. Every step moves forward, so this ends
        within ``len(data)`` steps whatever the bytes are.
        """
        for pos, end in spans:
            while pos < end:
                head = pos
                key, pos = self.varint(pos, end, msg)
                field, wire = key >> 3, key & 7
                if not 0 < field < 1 << 29:
                    self.fail(f"{msg} has a field numbered {field}, which protobuf does not allow")
                if wire == 0:
                    start, pos = self.varint(pos, end, msg)
                elif wire == 2:
                    size, pos = self.varint(pos, end, msg)
                    if size > end - pos:
                        self.truncated(end, f"a length-delimited field of {msg} runs past the end")
                    start, pos = pos, pos + size
                elif wire in (1, 5):
                    start, pos = pos, pos + (8 if wire == 1 else 4)
                    if pos > end:
                        self.truncated(end, f"a fixed-size field of {msg} runs past the end")
                else:  # 3/4 are protobuf groups, never used by ONNX; 6/7 do not exist
                    self.fail(f"{msg} field {field} has wire type {wire}, which ONNX never uses")
                yield field, wire, head, start, pos

    def fields(
        self, spans: Spans, msg: str, wanted: dict[int, int]
    ) -> Iterator[tuple[int, int, int]]:
        """Yield ``(field, a, b)`` for the fields in ``wanted``, skipping the rest
        (see ``walk``); a wanted length or varint field must have the wire type given."""
        for field, wire, _, start, pos in self.walk(spans, msg):
            if self.wanted(field, wire, msg, wanted):
                yield field, start, pos

    def wanted(self, field: int, wire: int, msg: str, wanted: dict[int, int]) -> bool:
        """Whether a field is one wasinn reads; one with the wrong wire type fails."""
        expect = wanted.get(field)
        if expect is None or wire in (1, 5):  # no field wasinn reads is fixed-size
            return False
        if wire != expect:
            self.fail(f"{msg} field {field} has wire type {wire}, not {expect}")
        return True

    def text(self, a: int, b: int, what: str) -> str:
        try:
            return str(self.buf[a:b], "utf-8")
        except UnicodeDecodeError:
            self.fail(f"{what} is not valid UTF-8")

    def model(self) -> OnnxInfo:
        ir_version: int | None = None
        opset: int | None = None
        graph: Spans = []
        metadata: dict[str, str] = {}
        model_fields: list[Field] = []
        for step in self.walk([(0, len(self.buf))], "ModelProto"):
            model_fields.append(_as_field(Field, step))
            field, wire, _, a, b = step
            if not self.wanted(field, wire, "ModelProto", _MODEL):
                continue
            if field == 1:
                ir_version = _signed(a, 64)
            elif field == 7:
                graph.append((a, b))
            elif field == 14:
                key, value = self.entry(a, b)
                metadata[key] = value  # a repeated key: the last one wins, as in onnxruntime
            else:
                domain, version = b"", None
                for f, x, y in self.fields([(a, b)], "OperatorSetIdProto", _OPSET):
                    if f == 1:  # only the short names of the default domain matter
                        domain = bytes(self.buf[x:y]) if y - x <= 7 else b"?"
                    else:
                        version = _signed(x, 64)
                if domain in (b"", b"ai.onnx"):
                    opset = version
        if not graph:
            self.fail("it has no graph (ModelProto field 7)")
        graph_fields: list[Field] = []
        names: dict[int, str] = {}
        inputs, outputs = self.graph(graph, graph_fields, names)
        unknown = frozenset(s.name for s in inputs + outputs if s.shape is None)
        info = OnnxInfo(inputs, outputs, opset, ir_version, unknown, metadata)
        info.model_fields, info.graph_fields, info._names = model_fields, graph_fields, names
        info._reader = self
        return info

    def entry(self, a: int, b: int) -> tuple[str, str]:
        """One StringStringEntryProto of metadata_props, as (key, value)."""
        key: tuple[int, int] = (a, a)
        value: tuple[int, int] = (a, a)
        for field, x, y in self.fields([(a, b)], "StringStringEntryProto", _ENTRY):
            if field == 1:
                key = (x, y)
            else:
                value = (x, y)
        name = self.text(*key, "a metadata_props key")
        # Naming the key (shortened) says which entry of a long list is broken.
        shown = name if len(name) <= 40 else name[:37] + "..."
        return name, self.text(*value, f"the metadata_props value of {shown!r}")

    def graph(
        self, spans: Spans, every: list[Field], names: dict[int, str]
    ) -> tuple[list[TensorSpec], list[TensorSpec]]:
        """The graph's inputs and outputs; ``every`` gets each of its fields and
        ``names`` the name of each input and output field, by its head."""
        initializers: set[str] = set()
        inputs: list[TensorSpec] = []
        outputs: list[TensorSpec] = []
        for step in self.walk(spans, "GraphProto"):
            every.append(_as_field(Field, step))
            field, wire, head, a, b = step
            if not self.wanted(field, wire, "GraphProto", _GRAPH):
                continue
            if field == 5:
                initializers.add(self.tensor_name([(a, b)]))
            elif field == 15:
                values = [(x, y) for _, x, y in self.fields([(a, b)], "SparseTensorProto", _SPARSE)]
                initializers.add(self.tensor_name(values))
            else:
                spec = self.value_info(a, b)
                names[head] = spec.name
                (inputs if field == 11 else outputs).append(spec)
        # Initializers may be listed as inputs too (to allow overriding); they are weights.
        return [s for s in inputs if s.name not in initializers], outputs

    def node(self, a: int, b: int) -> Node:
        """The NodeProto at ``a:b``: op_type, domain, inputs and outputs."""
        node = Node("", "", [], [])
        for number, x, y in self.fields([(a, b)], "NodeProto", _NODE):
            text = self.text(x, y, "a node field")
            if number == 1:
                node.inputs.append(text)
            elif number == 2:
                node.outputs.append(text)
            elif number == 4:
                node.op_type = text
            else:
                node.domain = text
        return node

    def tensor_name(self, spans: Spans) -> str:
        name = ""
        for _, a, b in self.fields(spans, "TensorProto", _TENSOR):
            name = self.text(a, b, "an initializer name")
        return name

    def value_info(self, a: int, b: int) -> TensorSpec:
        name = ""
        type_spans: Spans = []
        for field, x, y in self.fields([(a, b)], "ValueInfoProto", _VALUE_INFO):
            if field == 1:
                name = self.text(x, y, "an input or output name")
            else:
                type_spans.append((x, y))
        # TypeProto's members form a oneof: a different member clears the previous one.
        kind = 0
        inner: Spans = []
        for field, x, y in self.fields(type_spans, "TypeProto", _TYPE):
            if field != kind:
                kind, inner = field, []
            inner.append((x, y))
        if kind != 1:
            return TensorSpec(name, (), _OTHER_KINDS.get(kind, "undefined"))
        elem = 0
        shape: Spans = []
        for field, x, y in self.fields(inner, "TypeProto.Tensor", _TENSOR_TYPE):
            if field == 1:
                elem = _signed(x, 32)
            else:
                shape.append((x, y))
        dtype = _DTYPES.get(elem, f"onnx-type-{elem}")
        if not shape:  # no shape field at all, not an empty one: rank unknown
            return TensorSpec(name, None, dtype)
        dims = [self.dim(x, y) for _, x, y in self.fields(shape, "TensorShapeProto", _SHAPE)]
        return TensorSpec(name, tuple(dims), dtype)

    def dim(self, a: int, b: int) -> Dim:
        value: Dim = None
        for field, x, _ in self.fields([(a, b)], "TensorShapeProto.Dimension", _DIM):
            # dim_value and dim_param are a oneof: the last one given wins.
            value = _signed(x, 64) if field == 1 else None
        return value if value is not None and value >= 0 else None
