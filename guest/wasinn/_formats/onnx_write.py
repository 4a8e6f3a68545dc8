"""Writing ONNX models: the protobuf encoding of the subset the graph builder emits.

The reader (``onnx_read``) and this writer share nothing but the wire format:
reading must survive any bytes, writing only ever sees what the builder made.
Field numbers are those of ``onnx.proto`` (ModelProto, GraphProto, NodeProto,
AttributeProto, TensorProto, ValueInfoProto, TypeProto, TensorShapeProto).

Example::

    >>> node = Node("Add", ["a", "b"], ["c"])
    >>> graph = Graph("g", [node], [Value("a", "f32", (2,)), Value("b", "f32", (2,))],
    ...               [Value("c", "f32", (2,))], [])
    >>> model_bytes(graph, opset=18)[:2]
    b'\\x08\\x08'
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

#: ONNX TensorProto.DataType numbers by the builder's dtype names.
ONNX_TYPES = {
    "f32": 1, "u8": 2, "i8": 3, "i32": 6, "i64": 7, "bool": 9, "f16": 10, "f64": 11,
    "u32": 12, "u64": 13, "bf16": 16, "uint4": 21, "int4": 22,
}  # fmt: skip
#: Types whose tensors pack two values to a byte, the first in the low nibble.
_NIBBLE_TYPES = ("int4", "uint4")

#: What an attribute may hold: a number, a string, or a list of numbers.
AttrValue = int | float | str | bytes | Sequence[int] | Sequence[float]

_IR_VERSION = 8  # ONNX 1.10+: understood by every reader the project uses
# From this opset on (4-bit types), the IR version that has INT4 and UINT4.
_OPSET_FOR_IR_10 = 21


@dataclass
class Node:
    """One operator: ONNX ``op_type`` from ``inputs`` to ``outputs`` (value
    names; ``""`` for an omitted optional input)."""

    op_type: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, AttrValue] = field(default_factory=dict)


@dataclass
class Value:
    """A graph input or output: name, dtype and shape (``None`` = dynamic,
    written as a named symbolic dimension; a ``shape`` of ``None``: rank
    unknown, no shape written)."""

    name: str
    dtype: str
    shape: tuple[int | None, ...] | None


@dataclass
class Initializer:
    """A constant tensor: little-endian ``data`` of ``dtype`` and ``shape``
    (int4 and uint4: one value to a byte; ``tensor_bytes`` packs them)."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    data: bytes


@dataclass
class Graph:
    """A whole graph, nodes in an order where every input is defined first."""

    name: str
    nodes: list[Node]
    inputs: list[Value]
    outputs: list[Value]
    initializers: list[Initializer]


def model_bytes(graph: Graph, *, opset: int, producer: str = "wasinn") -> bytes:
    """The serialized ONNX ModelProto of ``graph`` with the default-domain
    ``opset`` (IR version 8, or 10 from opset 21, which 4-bit types need)."""
    opset_id = _int_field(2, opset)  # OperatorSetIdProto.version; domain "" is the default
    ir_version = 10 if opset >= _OPSET_FOR_IR_10 else _IR_VERSION
    return b"".join(
        (
            _int_field(1, ir_version),
            bytes_field(2, producer.encode()),
            bytes_field(7, _graph(graph)),
            bytes_field(8, opset_id),
        )
    )


def _graph(graph: Graph) -> bytes:
    parts = [bytes_field(1, node_bytes(n)) for n in graph.nodes]
    parts.append(bytes_field(2, graph.name.encode()))
    parts += [bytes_field(5, tensor_bytes(t)) for t in graph.initializers]
    parts += [bytes_field(11, value_bytes(v, f"{v.name}_")) for v in graph.inputs]
    parts += [bytes_field(12, value_bytes(v, f"{v.name}_")) for v in graph.outputs]
    return b"".join(parts)


def node_bytes(node: Node) -> bytes:
    """A NodeProto."""
    parts = [bytes_field(1, name.encode()) for name in node.inputs]
    parts += [bytes_field(2, name.encode()) for name in node.outputs]
    parts.append(bytes_field(4, node.op_type.encode()))
    parts += [bytes_field(5, _attribute(k, v)) for k, v in node.attrs.items()]
    return b"".join(parts)


def _attribute(name: str, value: AttrValue) -> bytes:
    head = bytes_field(1, name.encode())
    # AttributeProto.type: FLOAT 1, INT 2, STRING 3, FLOATS 6, INTS 7.
    if isinstance(value, bool) or isinstance(value, int):
        return head + _int_field(3, int(value)) + _int_field(20, 2)
    if isinstance(value, float):
        return head + _float_field(2, value) + _int_field(20, 1)
    if isinstance(value, str):
        value = value.encode()
    if isinstance(value, bytes):
        return head + bytes_field(4, value) + _int_field(20, 3)
    items = list(value)
    if all(isinstance(v, int) for v in items):
        packed = b"".join(_varint(int(v)) for v in items)
        return head + bytes_field(8, packed) + _int_field(20, 7)
    packed = b"".join(struct.pack("<f", float(v)) for v in items)
    return head + bytes_field(7, packed) + _int_field(20, 6)


def tensor_bytes(t: Initializer) -> bytes:
    """A TensorProto holding its data as raw_data (4-bit values packed in pairs)."""
    dims = bytes_field(1, b"".join(_varint(d) for d in t.shape)) if t.shape else b""
    data = _nibbles(t.data) if t.dtype in _NIBBLE_TYPES else t.data
    return b"".join(
        (
            dims,
            _int_field(2, ONNX_TYPES[t.dtype]),
            bytes_field(8, t.name.encode()),
            bytes_field(9, data),
        )
    )


def _nibbles(values: bytes) -> bytes:
    """4-bit values held one to a byte, packed two to a byte as ONNX stores
    INT4 and UINT4: element 2k in the low nibble of byte k, 2k+1 in the high
    one (an odd count leaves the last high nibble 0)."""
    low = values[0::2]
    high = values[1::2] + bytes(len(low) - len(values[1::2]))
    return bytes((a & 0x0F) | (b & 0x0F) << 4 for a, b in zip(low, high, strict=True))


def value_bytes(v: Value, symbol_prefix: str) -> bytes:
    """A ValueInfoProto (a graph input or output); dynamic dimensions are named
    ``symbol_prefix`` + their position."""
    tensor_type = _int_field(1, ONNX_TYPES[v.dtype])
    if v.shape is not None:
        dims = []
        for i, d in enumerate(v.shape):
            # Dimension: dim_value (1) or dim_param (2), a name for a dynamic size.
            symbol = f"{symbol_prefix}{i}".encode()
            dim = _int_field(1, d) if d is not None else bytes_field(2, symbol)
            dims.append(bytes_field(1, dim))
        tensor_type += bytes_field(2, b"".join(dims))
    type_proto = bytes_field(1, tensor_type)
    return bytes_field(1, v.name.encode()) + bytes_field(2, type_proto)


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int64 values are written as two's complement
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _int_field(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _float_field(number: int, value: float) -> bytes:
    return _varint(number << 3 | 5) + struct.pack("<f", value)


def bytes_field(number: int, data: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(data)) + data
