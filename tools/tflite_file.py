"""Reading a TFLite model's flatbuffer without TensorFlow: tensor names and custom operators.

``tools/convert.py`` uses it to name a converted model's inputs and outputs as
LiteRT does, and to hand each custom operator's own options to its
translation (OpenVINO's TFLite reader passes a custom operator's options only
when they are a FlexBuffer map; MediaPipe's, for one, are a raw C struct).

Fields read, numbered as in TensorFlow Lite's ``schema.fbs``: Model
``operator_codes`` (1) and ``subgraphs`` (2); OperatorCode ``custom_code`` (1);
SubGraph ``tensors`` (0), ``inputs`` (1), ``outputs`` (2), ``operators`` (3);
Tensor ``name`` (3); Operator ``opcode_index`` (0), ``inputs`` (1),
``outputs`` (2), ``custom_options`` (5).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


class TFLiteError(Exception):
    """The bytes are not a readable TFLite model."""


@dataclass(frozen=True)
class CustomOp:
    """One custom operator in a model: its ``name`` (``custom_code``), its
    ``options`` bytes as written, and the names of its input and output tensors."""

    name: str
    options: bytes
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


def tensor_names(data: bytes, label: str = "the model") -> tuple[list[str], list[str]]:
    """The input and output tensor names of the first subgraph (those LiteRT's
    interpreter reports).

    Example::

        tensor_names(Path("blazeface.tflite").read_bytes())
        # (['input'], ['regressors', 'classificators'])
    """
    graph = _subgraphs(data, label)[0]
    with _readable(label):
        tensors = _table_vector(data, graph, 0)
        return _names(data, tensors, graph, 1), _names(data, tensors, graph, 2)


def custom_ops(data: bytes, label: str = "the model") -> list[CustomOp]:
    """Every custom operator of every subgraph, in order.

    Example::

        [op.name for op in custom_ops(Path("selfie_segmentation.tflite").read_bytes())]
        # ['Convolution2DTransposeBias']
    """
    subgraphs = _subgraphs(data, label)
    found = []
    with _readable(label):
        codes = [_string(data, code, 1) for code in _table_vector(data, _u32(data, 0), 1)]
        for graph in subgraphs:
            tensors = _table_vector(data, graph, 0)
            for op in _table_vector(data, graph, 3):
                at = _field(data, op, 0)
                name = codes[_u32(data, at) if at is not None else 0]
                if name:
                    first, count = _vector(data, op, 5)
                    inputs = tuple(_names(data, tensors, op, 1))
                    outputs = tuple(_names(data, tensors, op, 2))
                    found.append(CustomOp(name, data[first : first + count], inputs, outputs))
    return found


def _subgraphs(data: bytes, label: str) -> list[int]:
    if data[4:8] != b"TFL3":
        raise TFLiteError(f"{label} is not a TFLite model (no TFL3 identifier)")
    with _readable(label):
        subgraphs = _table_vector(data, _u32(data, 0), 2)
    if not subgraphs:
        raise TFLiteError(f"{label} has no subgraph")
    return subgraphs


@contextmanager
def _readable(label: str) -> Iterator[None]:
    """Offsets that lead outside the bytes: a TFLiteError naming ``label``."""
    try:
        yield
    except (struct.error, IndexError) as exc:
        raise TFLiteError(f"{label} is not a readable TFLite model: {exc}") from None


def _names(data: bytes, tensors: list[int], table: int, field: int) -> list[str]:
    """The names of the tensors an int vector field of ``table`` indexes
    (a subgraph's inputs or outputs, an operator's); -1, an operator's
    optional input left out, names none."""
    return [_string(data, tensors[i], 3) for i in _int_vector(data, table, field) if i >= 0]


def _u32(data: bytes, at: int) -> int:
    return int(struct.unpack_from("<I", data, at)[0])


def _field(data: bytes, table: int, index: int) -> int | None:
    """Where field ``index`` of the flatbuffer table at ``table`` is, if present."""
    vtable = table - int(struct.unpack_from("<i", data, table)[0])
    size = int(struct.unpack_from("<H", data, vtable)[0])
    if 4 + 2 * index >= size:
        return None
    offset = int(struct.unpack_from("<H", data, vtable + 4 + 2 * index)[0])
    return table + offset if offset else None


def _vector(data: bytes, table: int, index: int) -> tuple[int, int]:
    """Where the elements of vector field ``index`` start, and how many there are."""
    at = _field(data, table, index)
    if at is None:
        return 0, 0
    start = at + _u32(data, at)
    return start + 4, _u32(data, start)


def _table_vector(data: bytes, table: int, index: int) -> list[int]:
    first, count = _vector(data, table, index)
    return [first + 4 * i + _u32(data, first + 4 * i) for i in range(count)]


def _int_vector(data: bytes, table: int, index: int) -> list[int]:
    first, count = _vector(data, table, index)
    return list(struct.unpack_from(f"<{count}i", data, first))


def _string(data: bytes, table: int, index: int) -> str:
    at = _field(data, table, index)
    if at is None:
        return ""
    start = at + _u32(data, at)
    return data[start + 4 : start + 4 + _u32(data, start)].decode("utf-8", "replace")
