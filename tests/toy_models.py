"""Tiny models written in pure Python, with what each one computes.

Each ``ToyModel`` is real model bytes (OpenVINO IR XML and weights, or an
ONNX protobuf) built here without OpenVINO, numpy or onnx, plus a Python
function computing its outputs from wasinn Tensors. The dependency-free fake
host (``fake_host.py``) runs that function when wasinn hands it the bytes; the
numeric tests (``test_model_openvino.py``) load the same bytes into OpenVINO
and check that it computes the same, so the fake's models are the real ones.

The IR is written the way ``openvino.save_model`` writes it (IR version 11:
Parameters, Consts with weight offsets, operations, Results, edges), and the
ONNX as the ``onnx`` package serializes a ModelProto (IR version 8, opset 13).
"""

from __future__ import annotations

import array
import math
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import quoteattr

from wasinn import Tensor

Dim = int | None
Shape = tuple[Dim, ...] | None  # None: any rank


@dataclass(frozen=True)
class Port:
    """An input or output as the model declares it."""

    name: str
    shape: Shape
    dtype: str


Compute = Callable[[Mapping[str, Tensor]], list[Tensor]]


@dataclass(frozen=True)
class ToyModel:
    """Model files, their declared inputs and outputs, and what the model computes."""

    name: str
    filename: str  # the file Model.load is given: NAME.xml or NAME.onnx
    files: dict[str, bytes]  # every file of the model, by name
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]
    compute: Compute = field(repr=False)

    @property
    def is_ir(self) -> bool:
        return self.filename.endswith(".xml")

    @property
    def builders(self) -> list[bytes]:
        """What the wasmtime host's OpenVINO backend is given: [xml, weights] or [onnx, b""]."""
        if self.is_ir:
            return [self.files[self.filename], self.files[self.filename[:-4] + ".bin"]]
        return [self.files[self.filename], b""]

    def write(self, directory: Path) -> Path:
        """Write the model's files into ``directory``; return the path to load."""
        for name, data in self.files.items():
            (directory / name).write_bytes(data)
        return directory / self.filename


# ---------------------------------------------------------------- arithmetic on f32 tensors


def floats(t: Tensor) -> list[float]:
    """The values of an f32 tensor, flat (read with the stdlib, not with wasinn)."""
    assert t.dtype == "f32", t.dtype
    return array.array("f", t.tobytes()).tolist()


def f32(values: Sequence[float], shape: tuple[int, ...]) -> Tensor:
    """An f32 tensor of ``values`` (each rounded to f32 once, as OpenVINO stores it)."""
    return Tensor(array.array("f", values).tobytes(), shape=shape, dtype="f32")


def _add(a: Tensor, b: Tensor) -> Tensor:
    assert a.shape == b.shape, (a.shape, b.shape)
    return f32([x + y for x, y in zip(floats(a), floats(b), strict=False)], a.shape)


def _scale(a: Tensor, k: float) -> Tensor:
    return f32([x * k for x in floats(a)], a.shape)


def _matmul(a: Tensor, b: list[list[float]]) -> Tensor:
    rows, inner = a.shape
    cols = len(b[0])
    x = floats(a)
    out = [
        math.fsum(x[r * inner + i] * b[i][c] for i in range(inner))
        for r in range(rows)
        for c in range(cols)
    ]
    return f32(out, (rows, cols))


# ---------------------------------------------------------------- OpenVINO IR, by hand

_PRECISION = {
    "f16": "FP16", "bf16": "BF16", "f32": "FP32", "f64": "FP64", "u8": "U8", "i32": "I32",
    "i64": "I64", "boolean": "BOOL",
}  # fmt: skip


@dataclass
class _Out:
    layer: int
    port: int
    dtype: str
    shape: Shape


class IRWriter:
    """Builds one IR document: add layers in order, then ``xml()`` and ``weights``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.layers: list[str] = []
        self.edges: list[tuple[int, int, int, int]] = []
        self.weights = bytearray()

    @staticmethod
    def _dims(shape: Shape) -> str:
        return "".join(f"<dim>{-1 if d is None else d}</dim>" for d in shape or ())

    @staticmethod
    def _shape_attr(shape: Shape) -> str:
        if shape is None:
            return "..."
        return ",".join("?" if d is None else str(d) for d in shape)

    def _port(self, pid: int, dtype: str, shape: Shape, names: str | None = None) -> str:
        named = f" names={quoteattr(names)}" if names else ""
        return f'<port id="{pid}" precision="{_PRECISION[dtype]}"{named}>{self._dims(shape)}</port>'

    def _layer(self, kind: str, name: str, data: str, inputs: Sequence[_Out], outputs: str) -> int:
        lid = len(self.layers)
        ins = ""
        if inputs:
            ports = "".join(self._port(i, src.dtype, src.shape) for i, src in enumerate(inputs))
            ins = f"<input>{ports}</input>"
            for i, src in enumerate(inputs):
                self.edges.append((src.layer, src.port, lid, i))
        outs = f"<output>{outputs}</output>" if outputs else ""
        data_el = f"<data {data}/>" if data else ""
        self.layers.append(
            f'<layer id="{lid}" name={quoteattr(name)} type="{kind}" version="opset1">'
            f"{data_el}{ins}{outs}</layer>"
        )
        return lid

    def parameter(self, port: Port) -> _Out:
        data = f'shape="{self._shape_attr(port.shape)}" element_type="{port.dtype}"'
        lid = self._layer(
            "Parameter", port.name, data, (), self._port(0, port.dtype, port.shape, port.name)
        )
        return _Out(lid, 0, port.dtype, port.shape)

    def const(self, values: Sequence[float], shape: tuple[int, ...]) -> _Out:
        """An f32 constant stored in the weights."""
        assert len(values) == math.prod(shape)
        raw = struct.pack(f"<{len(values)}f", *values)
        data = (
            f'element_type="f32" shape="{self._shape_attr(shape)}" '
            f'offset="{len(self.weights)}" size="{len(raw)}"'
        )
        self.weights += raw
        lid = self._layer(
            "Const", f"const{len(self.layers)}", data, (), self._port(0, "f32", shape)
        )
        return _Out(lid, 0, "f32", shape)

    def op(
        self, kind: str, inputs: Sequence[_Out], name: str, shape: Shape, data: str = ""
    ) -> _Out:
        """An operation with one f32 output, whose tensor is named ``name``."""
        pid = len(inputs)
        lid = self._layer(kind, name, data, inputs, self._port(pid, "f32", shape, name))
        return _Out(lid, pid, "f32", shape)

    def result(self, source: _Out) -> None:
        self._layer("Result", f"result{len(self.layers)}", "", (source,), "")

    def xml(self) -> bytes:
        edges = "".join(
            f'<edge from-layer="{a}" from-port="{b}" to-layer="{c}" to-port="{d}"/>'
            for a, b, c, d in self.edges
        )
        return (
            f'<?xml version="1.0"?>\n<net name={quoteattr(self.name)} version="11">'
            f"<layers>{''.join(self.layers)}</layers><edges>{edges}</edges><rt_info/></net>\n"
        ).encode()


def _ir_model(
    name: str, writer: IRWriter, inputs: Sequence[Port], outputs: Sequence[Port], compute: Compute
) -> ToyModel:
    files = {f"{name}.xml": writer.xml(), f"{name}.bin": bytes(writer.weights)}
    return ToyModel(name, f"{name}.xml", files, tuple(inputs), tuple(outputs), compute)


# ---------------------------------------------------------------- ONNX, by hand

_ONNX_TYPES = {
    "f32": 1,
    "u8": 2,
    "i32": 6,
    "i64": 7,
    "boolean": 9,
    "f16": 10,
    "f64": 11,
    "bf16": 16,
}


def varint(n: int, bits: int = 64) -> bytes:
    """Protobuf's base-128 varint (negatives as ``bits``-bit two's complement;
    the fuzz tests write wider ones than protobuf allows)."""
    n &= (1 << bits) - 1
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def pb_int(num: int, value: int) -> bytes:
    """A varint field."""
    return varint(num << 3) + varint(value)


def pb_bytes(num: int, payload: bytes | str) -> bytes:
    """A length-delimited field (a string, bytes or an embedded message)."""
    data = payload.encode() if isinstance(payload, str) else payload
    return varint(num << 3 | 2) + varint(len(data)) + data


def onnx_value_info(port: Port) -> bytes:
    """A ValueInfoProto: name and tensor type (no shape field for any rank)."""
    tensor = pb_int(1, _ONNX_TYPES[port.dtype])
    if port.shape is not None:
        dims = b"".join(
            pb_bytes(1, pb_bytes(2, "N") if d is None else pb_int(1, d)) for d in port.shape
        )
        tensor += pb_bytes(2, dims)
    return pb_bytes(1, port.name) + pb_bytes(2, pb_bytes(1, tensor))


def onnx_model(
    name: str,
    inputs: Sequence[Port],
    outputs: Sequence[Port],
    nodes: Sequence[tuple[str, Sequence[str], Sequence[str]]],
    initializers: Sequence[tuple[str, tuple[int, ...], Sequence[float]]] = (),
    *,
    ir_version: int = 8,
    opset: int = 13,
) -> bytes:
    """A ModelProto: ``nodes`` are (op_type, inputs, outputs); initializers are f32."""
    graph = b"".join(
        pb_bytes(1, b"".join(pb_bytes(1, i) for i in ins) + b"".join(pb_bytes(2, o) for o in outs)
                 + pb_bytes(3, f"{op}{k}") + pb_bytes(4, op))
        for k, (op, ins, outs) in enumerate(nodes)
    )  # fmt: skip
    graph += pb_bytes(2, name)
    for init, dims, values in initializers:
        raw = struct.pack(f"<{len(values)}f", *values)
        tensor = b"".join(pb_int(1, d) for d in dims) + pb_int(2, 1) + pb_bytes(8, init)
        graph += pb_bytes(5, tensor + pb_bytes(9, raw))
    graph += b"".join(pb_bytes(11, onnx_value_info(p)) for p in inputs)
    graph += b"".join(pb_bytes(12, onnx_value_info(p)) for p in outputs)
    opset_id = pb_bytes(1, "") + pb_int(2, opset)
    return pb_int(1, ir_version) + pb_bytes(7, graph) + pb_bytes(8, opset_id)


# ---------------------------------------------------------------- the models

#: The constant ``two``'s product multiplies by: [[0, 0.25, 0.5, 0.75], [1, ...], [2, ...]].
MATRIX = [[(4 * r + c) / 4 for c in range(4)] for r in range(3)]


def two() -> ToyModel:
    """Inputs y, x (f32[2, 3]); outputs 'prod' = x @ MATRIX and 'sum' = x + y.

    The outputs are not in alphabetical order and the inputs are declared y
    before x, so positional mistakes show.
    """
    y, x = Port("y", (2, 3), "f32"), Port("x", (2, 3), "f32")
    ir = IRWriter("two_outputs")
    py, px = ir.parameter(y), ir.parameter(x)
    weights = ir.const([v for row in MATRIX for v in row], (3, 4))
    prod = ir.op("MatMul", [px, weights], "prod", (2, 4), 'transpose_a="false" transpose_b="false"')
    total = ir.op("Add", [px, py], "sum", (2, 3), 'auto_broadcast="numpy"')
    ir.result(prod)
    ir.result(total)

    def compute(t: Mapping[str, Tensor]) -> list[Tensor]:
        return [_matmul(t["x"], MATRIX), _add(t["x"], t["y"])]

    outputs = [Port("prod", (2, 4), "f32"), Port("sum", (2, 3), "f32")]
    return _ir_model("two", ir, [y, x], outputs, compute)


def dynamic() -> ToyModel:
    """'scaled' = 2 * 'v' for v: f32[?, 4]."""
    v = Port("v", (None, 4), "f32")
    ir = IRWriter("dynamic")
    pv = ir.parameter(v)
    out = ir.op(
        "Multiply", [pv, ir.const([2.0], ())], "scaled", (None, 4), 'auto_broadcast="numpy"'
    )
    ir.result(out)
    return _ir_model(
        "dynamic", ir, [v], [Port("scaled", (None, 4), "f32")], lambda t: [_scale(t["v"], 2.0)]
    )


def passthrough() -> ToyModel:
    """'x' comes back unchanged (f32[?]): the Parameter feeds the Result directly."""
    x = Port("x", (None,), "f32")
    ir = IRWriter("passthrough")
    ir.result(ir.parameter(x))
    return _ir_model("passthrough", ir, [x], [x], lambda t: [t["x"]])


def accumulator() -> ToyModel:
    """A recurrent toy: 'total' = 'hN' = 'x' + 'h', with x, h: f32[1, 2]."""
    x, h = Port("x", (1, 2), "f32"), Port("h", (1, 2), "f32")
    ir = IRWriter("acc")
    px, ph = ir.parameter(x), ir.parameter(h)
    total = ir.op("Add", [px, ph], "total", (1, 2), 'auto_broadcast="numpy"')
    state = ir.op("Multiply", [total, ir.const([1.0], ())], "hN", (1, 2), 'auto_broadcast="numpy"')
    ir.result(total)
    ir.result(state)

    def compute(t: Mapping[str, Tensor]) -> list[Tensor]:
        s = _add(t["x"], t["h"])
        return [s, s]

    outputs = [Port("total", (1, 2), "f32"), Port("hN", (1, 2), "f32")]
    return _ir_model("acc", ir, [x, h], outputs, compute)


def scalar() -> ToyModel:
    """'tripled' = 3 * 's' with s of rank 0, which the wasmtime host cannot feed."""
    s = Port("s", (), "f32")
    ir = IRWriter("scalar")
    out = ir.op("Multiply", [ir.parameter(s), ir.const([3.0], ())], "tripled", (),
                'auto_broadcast="numpy"')  # fmt: skip
    ir.result(out)
    return _ir_model(
        "scalar", ir, [s], [Port("tripled", (), "f32")], lambda t: [_scale(t["s"], 3.0)]
    )


def any_rank() -> ToyModel:
    """'y' = 'x' * 0.5 for x: f32 of any rank (the IR's shape="...").

    OpenVINO reads it, but its CPU plugin refuses to compile a Parameter of
    dynamic rank, so loading it fails on the wasmtime host (and the fakes).
    """
    x = Port("x", None, "f32")
    ir = IRWriter("any_rank")
    out = ir.op("Multiply", [ir.parameter(x), ir.const([0.5], ())], "y", None,
                'auto_broadcast="numpy"')  # fmt: skip
    ir.result(out)
    return _ir_model("any_rank", ir, [x], [Port("y", None, "f32")], lambda t: [_scale(t["x"], 0.5)])


def add_mul() -> ToyModel:
    """ONNX: 'total' = a + b and 'scaled' = a * 3, with a, b f32[2, 2] (3 is an initializer)."""
    a, b = Port("a", (2, 2), "f32"), Port("b", (2, 2), "f32")
    outputs = [Port("total", (2, 2), "f32"), Port("scaled", (2, 2), "f32")]
    data = onnx_model(
        "add_mul", [a, b], outputs,
        [("Add", ["a", "b"], ["total"]), ("Mul", ["a", "three"], ["scaled"])],
        [("three", (), [3.0])],
    )  # fmt: skip

    def compute(t: Mapping[str, Tensor]) -> list[Tensor]:
        return [_add(t["a"], t["b"]), _scale(t["a"], 3.0)]

    return ToyModel(
        "add_mul", "add_mul.onnx", {"add_mul.onnx": data}, (a, b), tuple(outputs), compute
    )


def all_models() -> dict[str, ToyModel]:
    """Every toy model, by name."""
    return {m.name: m for m in (two(), dynamic(), passthrough(), accumulator(), scalar(),
                                any_rank(), add_mul())}  # fmt: skip


def write_all(directory: Path) -> Path:
    """Write every toy model's files into ``directory``; return it."""
    directory.mkdir(parents=True, exist_ok=True)
    for model in all_models().values():
        model.write(directory)
    return directory
