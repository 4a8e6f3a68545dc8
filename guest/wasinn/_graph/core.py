"""The graph layer's core: operands, inputs, constants, shape rules and lowering.

The operations themselves live in this package's other modules, one family
each, as mixins of ``BuilderCore``; ``operations.GraphOperations`` puts them
together. An operation checks its operands the way the WebNN specification
says (raising ``ValidationError`` that names the operation), works out the
result's shape and dtype, and records ONNX nodes with ``_emit``.

``lower(builder, outputs)`` is what the layers above take from here: a ``Lowered`` graph (its
nodes, inputs, outputs and constants, with their specs), which the public
``GraphBuilder.build`` loads as a model and fusion splices into one. Nothing
here knows of models or hosts.
"""

from __future__ import annotations

import array
import math
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import _dtypes
from .._errors import ValidationError
from .._formats.onnx_write import AttrValue, Graph, Initializer, Node, Value, model_bytes
from .._spec import TensorSpec
from .._tensor import Tensor, _flatten

Shape = tuple[int | None, ...]

#: The ONNX opset the builder writes (OpenVINO 2026 and onnxruntime read it).
OPSET = 18
#: The opset of a graph holding 4-bit values: the first with ONNX's INT4 and
#: UINT4 (OpenVINO reads them there). Other graphs stay at ``OPSET``.
FOUR_BIT_OPSET = 21

#: Element types an operand can have: wasinn's names, plus the integer types
#: WebNN has and wasi-nn does not (they may appear inside a graph only).
DTYPES = (
    "f32", "f16", "bf16", "f64", "i8", "u8", "i32", "u32", "i64", "u64", "int4", "uint4",
)  # fmt: skip
FLOAT_DTYPES = frozenset({"f32", "f16", "bf16", "f64"})
INT_DTYPES = frozenset({"i8", "u8", "i32", "u32", "i64", "u64", "int4", "uint4"})
#: WebNN's 4-bit integers (named as WebNN names them; ``"i4"`` and ``"u4"``
#: are accepted too): constants only, taken by a few operations
#: (``FOUR_BIT_OPS``; ONNX has no arithmetic on them).
FOUR_BIT = frozenset({"int4", "uint4"})
FOUR_BIT_OPS = ("cast", "reshape", "transpose", "dequantize_linear", "quantize_linear")
SIGNED_DTYPES = FLOAT_DTYPES | {"i8", "i32", "i64"}
_WEBNN_NAMES = {
    "float32": "f32", "float16": "f16", "float64": "f64", "bfloat16": "bf16", "int8": "i8",
    "uint8": "u8", "int32": "i32", "uint32": "u32", "int64": "i64", "uint64": "u64",
    "i4": "int4", "u4": "uint4",
}  # fmt: skip
# struct formats for constants of the types wasinn's Tensor does not have; a
# 4-bit value takes a byte until the ONNX writer packs two to a byte.
_EXTRA_FORMATS = {"i8": "b", "u32": "I", "u64": "Q", "int4": "b", "uint4": "B"}
#: The range of each integer dtype, lowest and highest value.
INT_RANGES = {
    "i8": (-(2**7), 2**7 - 1), "u8": (0, 2**8 - 1), "i32": (-(2**31), 2**31 - 1),
    "u32": (0, 2**32 - 1), "i64": (-(2**63), 2**63 - 1), "u64": (0, 2**64 - 1),
    "int4": (-8, 7), "uint4": (0, 15),
}  # fmt: skip
_MAX_RANK = 8
#: Integer types OpenVINO's CPU plugin holds in 32-bit signed integers, so
#: that values of 2**31 and more come out wrong; see ``wide_unsigned_error``.
WIDE_UNSIGNED = frozenset({"u32", "u64"})


def wide_unsigned_error(op: str, role: str, dtype: str) -> ValidationError:
    """The refusal of a u32 or u64 operand by an operation the host cannot compute exactly."""
    return ValidationError(
        f"{op}: the {role} is {dtype}, which this host cannot compute exactly "
        "(onnxruntime has no kernel for it and OpenVINO's CPU plugin holds it in 32-bit "
        "signed integers); cast it to i32 or i64 first"
    )


def dtype_name(value: Any, what: str) -> str:
    """wasinn's name for a dtype given as wasinn's (``"f32"``) or WebNN's (``"float32"``)."""
    if isinstance(value, str):
        name = _WEBNN_NAMES.get(value, value)
        if name in DTYPES:
            return name
    raise ValidationError(
        f"{what}: unknown data type {value!r}; use one of {', '.join(DTYPES)} "
        f"(or WebNN's names: {', '.join(_WEBNN_NAMES)})"
    )


def shape_text(shape: Sequence[int | None]) -> str:
    """``[2, ?, 3]``: a shape as errors show it, ``?`` for a dynamic dimension."""
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


@dataclass(frozen=True)
class Lowered:
    """A graph as the layers above take it: what ``lower`` returns.

    ``steps`` are the nodes the requested values need, each with its position
    among every node the builder recorded (fusion splits them there),
    ``finals`` the Identity nodes naming the outputs and ``feeds`` those
    naming values meant for another graph (a model's inputs, when fusing).
    ``inputs`` and ``initializers`` are those the nodes use; ``outputs``
    describes the finals, checked as wasi-nn can return them.

    >>> b = GraphBuilder()
    >>> lowered = lower(b, {"y": b.input("x", shape=[2], dtype="f32") * 2.0})
    >>> [str(s) for s in lowered.input_specs], [str(s) for s in lowered.output_specs]
    (['x: f32[2]'], ['y: f32[2]'])
    """

    steps: list[tuple[int, Node]]
    finals: list[Node]
    feeds: list[Node]
    inputs: list[Value]
    outputs: list[Value]
    initializers: list[Initializer]
    #: The shape and dtype of every value the builder made, by name: what a
    #: writer for another format needs where ONNX infers it (OpenVINO IR).
    types: Mapping[str, tuple[Shape, str]]

    @property
    def input_specs(self) -> list[TensorSpec]:
        """The graph's inputs, as ``Model.inputs`` describes them."""
        return [TensorSpec(v.name, v.shape, v.dtype) for v in self.inputs]

    @property
    def output_specs(self) -> list[TensorSpec]:
        """The graph's outputs, as ``Model.outputs`` describes them."""
        return [TensorSpec(v.name, v.shape, v.dtype) for v in self.outputs]

    @property
    def four_bit(self) -> bool:
        """Whether the graph holds 4-bit values (constants, or what nodes make)."""
        return any(t.dtype in FOUR_BIT for t in self.initializers) or any(
            self.types[name][1] in FOUR_BIT for _, node in self.steps for name in node.outputs
        )

    def onnx(self) -> bytes:
        """The graph as an ONNX model: opset ``OPSET``, or ``FOUR_BIT_OPSET``
        (IR version 10) if it holds 4-bit values."""
        nodes = [node for _, node in self.steps] + self.feeds + self.finals
        opset = OPSET
        if self.four_bit:
            opset = FOUR_BIT_OPSET
            nodes = [_at_opset_20(node) for node in nodes]
        graph = Graph("wasinn_graph", nodes, self.inputs, self.outputs, self.initializers)
        return model_bytes(graph, opset=opset)


#: GridSample's modes as opset 20 renamed them; nothing else the builder
#: writes changed meaning from opset 18 to 21 (new types and attributes only).
_GRID_MODES_20 = {"bilinear": "linear", "bicubic": "cubic"}


def _at_opset_20(node: Node) -> Node:
    """``node`` as opset 20 and later spell it."""
    mode = node.attrs.get("mode")
    if node.op_type != "GridSample" or not isinstance(mode, str):
        return node
    attrs = {**node.attrs, "mode": _GRID_MODES_20.get(mode, mode)}
    return Node(node.op_type, node.inputs, node.outputs, attrs)


class Size:
    """A dynamic dimension of an operand (``operand.size(axis)``), for
    ``reshape`` targets: the graph reads it from the operand's shape.

    >>> x = b.input("x", shape=[None, 4, 6], dtype="f32")
    >>> x.size(0)
    <wasinn.Size of dimension 0 of <wasinn.Operand f32[?, 4, 6]>>
    >>> b.reshape(x, [x.size(0), 24]).shape
    (None, 24)
    """

    __slots__ = ("operand", "axis")

    def __init__(self, operand: Operand, axis: int) -> None:
        self.operand, self.axis = operand, axis

    def __repr__(self) -> str:
        return f"<wasinn.Size of dimension {self.axis} of {self.operand!r}>"


def external(builder: BuilderCore, name: str, shape: Shape, dtype: str) -> Operand:
    """An operand for a value computed outside ``builder`` (a model's output,
    when fusing post-processing): neither an input nor made by a node here."""
    builder._types[name] = (shape, dtype)
    return Operand(builder, name, shape, dtype)


def check_operand(builder: BuilderCore, value: Any, op: str, role: str = "input") -> Operand:
    """``value`` as an operand of ``builder``, or a ValidationError naming ``op``."""
    if not isinstance(value, Operand):
        raise ValidationError(
            f"{op}: the {role} must be an Operand of this builder, not {type(value).__name__} "
            "(make constants with builder.constant(...))"
        )
    if value._builder is not builder:
        raise ValidationError(f"{op}: the {role} belongs to another GraphBuilder")
    # "build" checks its outputs itself: no 4-bit one can leave through wasi-nn.
    if value.dtype in FOUR_BIT and op not in (*FOUR_BIT_OPS, "build"):
        raise ValidationError(
            f"{op}: the {role} is {value.dtype}, which only {', '.join(FOUR_BIT_OPS)} take "
            "(ONNX has no other operations on 4-bit types); cast it to i8 or u8 first"
        )
    return value


def lower(
    builder: BuilderCore,
    outputs: Mapping[str, Operand] | None,
    *,
    feeds: Mapping[str, Operand] | None = None,
) -> Lowered:
    """What computes ``outputs`` of ``builder`` (name -> operand, checked as
    graph outputs) and ``feeds`` (name -> operand, for another graph's inputs,
    as they are): only the nodes, inputs and constants they need. The builder
    stays usable. This is the graph layer's product for the layers above
    (``GraphBuilder.build``, fusion), kept off the public builder.
    """
    values, finals = builder._finals(outputs) if outputs is not None else ([], [])
    feed_nodes = [Node("Identity", [op._name], [name]) for name, op in (feeds or {}).items()]
    steps, used = builder._needed([n.inputs[0] for n in feed_nodes + finals])
    lowered = Lowered(
        steps,
        finals,
        feed_nodes,
        [v for name, v in builder._inputs.items() if name in used],
        values,
        [t for name, t in builder._initializers.items() if name in used],
        builder._types,
    )
    if feeds is not None and lowered.four_bit:
        raise ValidationError(
            "processing fused into a model cannot hold 4-bit values (int4, uint4): they need ONNX "
            f"opset {FOUR_BIT_OPSET}, the model keeps its own opset, and wasinn's OpenVINO IR "
            "writer has no 4-bit constants; make those constants i8 or u8"
        )
    return lowered


def node_count(builder: BuilderCore) -> int:
    """How many nodes ``builder`` has recorded so far (the positions in ``Lowered.steps``)."""
    return len(builder._nodes)


class Operand:
    """A value in a graph being built: its ``shape`` (``None`` for a dynamic
    dimension) and ``dtype``, known as soon as the operation is added.

    ``+ - * /``, unary ``-`` and ``abs()`` add the matching operation,
    ``> >= < <=`` the matching comparison (a u8 mask, as ``builder.greater``
    gives); Python numbers become constants of the other operand's dtype.
    ``==`` compares operands as objects: use ``builder.equal`` element-wise.
    Indexing takes what numpy's basic indexing takes (integers, slices with
    any step, ``...`` and ``None``), e.g. ``x[0]``, ``x[:, 1:3]``,
    ``x[..., ::-1]``; arrays of indices go through ``builder.gather``.

    Example::

        b = GraphBuilder()
        x = b.input("x", shape=[None, 3], dtype="f32")
        y = (x - 0.5) * 2.0
        y.shape, y.dtype      # ((None, 3), 'f32')
    """

    __slots__ = ("_builder", "_name", "shape", "dtype")

    def __init__(self, builder: BuilderCore, name: str, shape: Shape, dtype: str) -> None:
        self._builder = builder
        self._name = name
        self.shape: Shape = shape
        self.dtype: str = dtype

    @property
    def rank(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    def size(self, axis: int) -> int | Size:
        """Dimension ``axis``: its size when it is static, else a ``Size``
        that ``reshape`` reads from the graph when the model runs.

        >>> x = b.input("x", shape=[None, 4, 6], dtype="f32")
        >>> b.reshape(x, [x.size(0), None, 3]).shape    # [N, 4, 6] -> [N, 8, 3]
        (None, 8, 3)
        """
        in_range = isinstance(axis, int) and -self.rank <= axis < self.rank
        if isinstance(axis, bool) or not in_range:
            raise ValidationError(
                f"size: axis must be an integer from {-self.rank} to {self.rank - 1} for "
                f"{self!r}, not {axis!r}"
            )
        axis %= self.rank
        dim = self.shape[axis]
        return dim if dim is not None else Size(self, axis)

    def __repr__(self) -> str:
        return f"<wasinn.Operand {self.dtype}{shape_text(self.shape)}>"

    def __bool__(self) -> bool:
        raise TypeError(
            "an Operand has no truth value while the graph is being built; compare with "
            "builder.equal(...) or builder.greater(...) and select with builder.where(...)"
        )

    def __add__(self, other: Operand | float) -> Operand:
        return self._builder._binary("add", "Add", self, other)

    def __radd__(self, other: float) -> Operand:
        return self._builder._binary("add", "Add", other, self)

    def __sub__(self, other: Operand | float) -> Operand:
        return self._builder._binary("sub", "Sub", self, other)

    def __rsub__(self, other: float) -> Operand:
        return self._builder._binary("sub", "Sub", other, self)

    def __mul__(self, other: Operand | float) -> Operand:
        return self._builder._binary("mul", "Mul", self, other)

    def __rmul__(self, other: float) -> Operand:
        return self._builder._binary("mul", "Mul", other, self)

    def __truediv__(self, other: Operand | float) -> Operand:
        return self._builder._binary("div", "Div", self, other)

    def __rtruediv__(self, other: float) -> Operand:
        return self._builder._binary("div", "Div", other, self)

    def __neg__(self) -> Operand:
        return self._builder._unary("neg", "Neg", self, SIGNED_DTYPES)

    def __abs__(self) -> Operand:
        return self._builder._unary("abs", "Abs", self, SIGNED_DTYPES)

    def __getitem__(self, key: Any) -> Operand:
        return self._builder._index(self, key)

    # Ordering comparisons give u8 masks, as builder.greater(...) and the rest
    # do (a number on the left is reflected: 0.5 < x is x > 0.5). == and !=
    # keep their identity meaning, which dicts and sets rely on: use
    # builder.equal and builder.not_equal for the element-wise ones.
    def __gt__(self, other: Operand | float) -> Operand:
        return self._builder._compare("greater", "Greater", self, other)

    def __ge__(self, other: Operand | float) -> Operand:
        return self._builder._compare("greater_or_equal", "GreaterOrEqual", self, other)

    def __lt__(self, other: Operand | float) -> Operand:
        return self._builder._compare("lesser", "Less", self, other)

    def __le__(self, other: Operand | float) -> Operand:
        return self._builder._compare("lesser_or_equal", "LessOrEqual", self, other)


class BuilderCore:
    """State and shared checks of a graph builder; see ``_builder.GraphBuilder``."""

    def __init__(self) -> None:
        self._nodes: list[Node] = []
        self._producer: dict[str, int] = {}  # value name -> index of the node making it
        self._inputs: dict[str, Value] = {}
        self._initializers: dict[str, Initializer] = {}
        self._constants: dict[tuple[str, tuple[int, ...], bytes], Operand] = {}
        self._types: dict[str, tuple[Shape, str]] = {}  # every value's shape and dtype, by name
        self._count = 0

    # ------------------------------------------------------------ graph inputs

    def input(self, name: str, shape: Iterable[int | None], dtype: Any = "f32") -> Operand:
        """A graph input, fed by name when the built model runs.

        ``shape`` lists the dimensions, ``None`` for one that may change from
        run to run; ``dtype`` is a wasi-nn type (the host feeds inputs).

        >>> x = GraphBuilder().input("image", shape=[None, None, 3], dtype="u8")
        >>> x.shape, x.dtype
        ((None, None, 3), 'u8')
        """
        what = f"input {name!r}"
        if not isinstance(name, str) or not name or name.startswith("#"):
            raise ValidationError(
                f"an input needs a non-empty name not starting with '#', not {name!r}"
            )
        if name in self._inputs:
            raise ValidationError(f"{what} is defined twice; every input needs its own name")
        dims = self._check_shape(shape, what, allow_dynamic=True)
        dt = dtype_name(dtype, what)
        if dt not in _dtypes.ITEMSIZE:
            raise ValidationError(
                f"{what} cannot be {dt}: the host feeds graph inputs, and wasi-nn carries only "
                f"{', '.join(_dtypes.DTYPES)}; take one of those and cast inside the graph"
            )
        self._inputs[name] = Value(name, dt, dims)
        self._types[name] = (dims, dt)
        return Operand(self, name, dims, dt)

    def constant(
        self, value: Any, shape: Iterable[int] | None = None, dtype: Any = None
    ) -> Operand:
        """A constant: a ``Tensor``, a number, nested lists, bytes or an ``array.array``.

        ``shape`` and ``dtype`` work as for ``Tensor(value, shape, dtype)``; a
        bare number is a scalar (shape ``()``), f32 unless ``dtype`` says.

        >>> GraphBuilder().constant([[1, 2], [3, 4]], dtype="float32").shape
        (2, 2)
        """
        dt = dtype_name(dtype, "constant") if dtype is not None else None
        if dt in _EXTRA_FORMATS:
            return self._extra_constant(value, shape, dt)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and shape is None:
            tensor = Tensor([value], dtype=dt or "f32").reshape(())
        else:
            tensor = value if isinstance(value, Tensor) and dt is None else Tensor(value, shape, dt)
        return self._const(tensor.dtype, tensor.shape, tensor.tobytes())

    def _extra_constant(self, value: Any, shape: Iterable[int] | None, dtype: str) -> Operand:
        """A constant of a type wasinn's Tensor lacks (i8, u32, u64), from numbers,
        nested lists, an ``array.array`` or raw little-endian bytes."""
        size = struct.calcsize(_EXTRA_FORMATS[dtype])
        if isinstance(value, (bytes, bytearray, memoryview)):
            data = bytes(value)
            dims = tuple(shape) if shape is not None else (len(data) // size,)
            if len(data) != math.prod(dims) * size:
                raise ValidationError(
                    f"constant: {len(data)} bytes do not fill shape {list(dims)} of {dtype}"
                )
            return self._const(dtype, dims, data)
        values: list[Any] = []
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            values, dims = [value], ()
        elif isinstance(value, (list, tuple)):
            dims = _flatten(value, values, 0)
        elif isinstance(value, array.array):
            values, dims = value.tolist(), (len(value),)
        else:
            raise ValidationError(
                f"constant: cannot make {dtype} from {type(value).__name__}; give numbers, nested "
                "lists, an array.array or bytes"
            )
        if any(isinstance(v, bool) or not isinstance(v, int) for v in values):
            raise ValidationError(f"constant: {dtype} takes whole numbers (Python ints) only")
        if shape is not None:
            wanted = tuple(shape)
            if math.prod(wanted) != len(values):
                raise ValidationError(
                    f"constant: {len(values)} values do not fill shape {list(wanted)}"
                )
            dims = wanted
        return self._const(dtype, dims, self._pack_ints(values, dtype, "constant"))

    # ------------------------------------------------------------ for operations

    def _fresh(self, hint: str) -> str:
        self._count += 1
        return f"#{self._count}.{hint}"

    def _emit(
        self,
        op_type: str,
        inputs: Sequence[Operand | str | None],
        attrs: Mapping[str, AttrValue] | None = None,
        *,
        shape: Shape,
        dtype: str,
    ) -> Operand:
        """Record one ONNX node with one output and return that output."""
        (out,) = self._emit_many(op_type, inputs, attrs, [(shape, dtype)])
        return out

    def _emit_many(
        self,
        op_type: str,
        inputs: Sequence[Operand | str | None],
        attrs: Mapping[str, AttrValue] | None,
        results: Sequence[tuple[Shape, str]],
    ) -> list[Operand]:
        """Record one ONNX node with several outputs (Split, TopK)."""
        names = ["" if x is None else x if isinstance(x, str) else x._name for x in inputs]
        outs = [Operand(self, self._fresh(op_type.lower()), s, d) for s, d in results]
        self._producer.update((o._name, len(self._nodes)) for o in outs)
        self._types.update((o._name, (o.shape, o.dtype)) for o in outs)
        self._nodes.append(Node(op_type, names, [o._name for o in outs], dict(attrs or {})))
        return outs

    def _const(self, dtype: str, shape: Sequence[int], data: bytes) -> Operand:
        """A constant (an ONNX initializer); identical constants are stored once."""
        key = (dtype, tuple(shape), data)
        known = self._constants.get(key)
        if known is not None:
            return known
        name = self._fresh("const")
        self._initializers[name] = Initializer(name, dtype, tuple(shape), data)
        self._types[name] = (tuple(shape), dtype)
        operand = Operand(self, name, tuple(shape), dtype)
        self._constants[key] = operand
        return operand

    def _ints(self, values: Sequence[int]) -> Operand:
        """A 1-D i64 constant, as ONNX takes shapes, axes and sizes."""
        return self._const("i64", (len(values),), struct.pack(f"<{len(values)}q", *values))

    def _scalar(self, value: float, dtype: str, op: str) -> Operand:
        """A rank-0 constant of ``dtype``, for a Python number in an operation."""
        if dtype in INT_DTYPES:
            if isinstance(value, float) and not value.is_integer():
                raise ValidationError(
                    f"{op}: {value!r} is not a whole number, but the operand is {dtype}"
                )
            return self._const(dtype, (), self._pack_ints([int(value)], dtype, op))
        if dtype in _dtypes.ITEMSIZE:
            return self._const(dtype, (), Tensor([float(value)], dtype=dtype).tobytes())
        raise ValidationError(f"{op}: no constant of type {dtype}")

    def _pack_ints(self, values: list[int], dtype: str, op: str) -> bytes:
        low, high = INT_RANGES[dtype]
        bad = [v for v in values if not low <= v <= high]
        if bad:
            raise ValidationError(
                f"{op}: {bad[0]} is out of the range of {dtype} ({low} to {high})"
            )
        if dtype in _EXTRA_FORMATS:
            return struct.pack(f"<{len(values)}{_EXTRA_FORMATS[dtype]}", *values)
        return Tensor(values, dtype=dtype).tobytes()

    def _own(self, op: str, value: Any, role: str = "input") -> Operand:
        """``value`` as an operand of this builder, or a clear error."""
        return check_operand(self, value, op, role)

    def _check_dtype(
        self, op: str, x: Operand, allowed: Iterable[str], role: str = "input"
    ) -> None:
        allowed = tuple(d for d in DTYPES if d in set(allowed))
        if x.dtype not in allowed:
            raise ValidationError(
                f"{op}: the {role} is {x.dtype}, but {op} takes {', '.join(allowed)}"
            )

    def _check_axis(self, op: str, axis: Any, rank: int, role: str = "axis") -> int:
        if isinstance(axis, bool) or not isinstance(axis, int) or not 0 <= axis < rank:
            raise ValidationError(
                f"{op}: {role} must be an integer from 0 to {rank - 1} for an input of rank "
                f"{rank}, not {axis!r}"
            )
        return axis

    def _check_axes(self, op: str, axes: Any, rank: int) -> list[int]:
        if isinstance(axes, (str, bytes)) or not isinstance(axes, Iterable):
            raise ValidationError(f"{op}: axes must be a list of integers, not {axes!r}")
        out = [self._check_axis(op, a, rank, "every axis") for a in axes]
        if len(set(out)) != len(out):
            raise ValidationError(f"{op}: axes {out} repeat an axis")
        return out

    def _check_shape(self, shape: Any, what: str, *, allow_dynamic: bool = False) -> Shape:
        if isinstance(shape, (str, bytes)) or not isinstance(shape, Iterable):
            raise ValidationError(f"{what}: a shape is a list of dimensions, not {shape!r}")
        dims = tuple(shape)
        for d in dims:
            ok = d is None and allow_dynamic
            ok = ok or (isinstance(d, int) and not isinstance(d, bool) and 0 < d < 2**32)
            if not ok:
                kinds = "positive integers or None" if allow_dynamic else "positive integers"
                raise ValidationError(
                    f"{what}: dimensions must be {kinds}, not {d!r} in {list(dims)}"
                )
        if len(dims) > _MAX_RANK:
            raise ValidationError(
                f"{what}: rank {len(dims)} is more than the {_MAX_RANK} supported"
            )
        return dims

    def _broadcast(self, op: str, a: Shape, b: Shape) -> Shape:
        """The shape numpy-style (bidirectional) broadcasting gives, as WebNN does."""
        out: list[int | None] = []
        for i in range(1, max(len(a), len(b)) + 1):
            da = a[-i] if i <= len(a) else 1
            db = b[-i] if i <= len(b) else 1
            if da == db or db == 1:
                out.append(da)
            elif da == 1:
                out.append(db)
            elif da is None or db is None:
                # Known only at run time; the host checks that it is 1 or matches.
                out.append(db if da is None else da)
            else:
                raise ValidationError(
                    f"{op}: shapes {shape_text(a)} and {shape_text(b)} cannot be broadcast "
                    f"(dimension {-i} is {da} against {db}; each must match or be 1)"
                )
        return tuple(reversed(out))

    def _binary(
        self,
        op: str,
        onnx_op: str,
        a: Operand | float,
        b: Operand | float,
        *,
        allowed: Iterable[str] = DTYPES,
        result_dtype: str | None = None,
    ) -> Operand:
        """An element-wise operation of two operands (or one and a number) with broadcasting."""
        if not isinstance(a, Operand) and not isinstance(b, Operand):
            raise ValidationError(f"{op}: at least one argument must be an Operand")
        if isinstance(a, Operand):
            a = self._own(op, a, "first input")
        if isinstance(b, Operand):
            b = self._own(op, b, "second input")
        if not isinstance(a, Operand):
            a = self._number(op, a, b.dtype)  # type: ignore[union-attr]
        if not isinstance(b, Operand):
            b = self._number(op, b, a.dtype)
        if a.dtype != b.dtype:
            raise ValidationError(
                f"{op}: the inputs are {a.dtype} and {b.dtype}; they must have the same data type "
                "(convert one with builder.cast)"
            )
        self._check_dtype(op, a, allowed)
        shape = self._broadcast(op, a.shape, b.shape)
        return self._emit(onnx_op, [a, b], shape=shape, dtype=result_dtype or a.dtype)

    def _compare(self, op: str, onnx_op: str, a: Operand | float, b: Operand | float) -> Operand:
        """A comparison: 1 (u8, as WebNN gives it) where it holds, else 0."""
        result = self._binary(op, onnx_op, a, b, result_dtype="bool")
        return self._emit("Cast", [result], {"to": 2}, shape=result.shape, dtype="u8")

    def _number(self, op: str, value: Any, dtype: str) -> Operand:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValidationError(
                f"{op}: an argument must be an Operand or a number, not {type(value).__name__}"
            )
        return self._scalar(value, dtype, op)

    def _runtime_dims(self, op: str, dims: Sequence[int | Size]) -> Operand:
        """An i64 vector of ``dims`` for the host to read when the model
        runs: the ``Size`` entries come from their operands' shapes."""
        parts = []
        for i, d in enumerate(dims):
            if not isinstance(d, Size):
                parts.append(self._ints([d]))
                continue
            if d.operand._builder is not self:
                raise ValidationError(
                    f"{op}: entry {i} is a size of an operand of another GraphBuilder"
                )
            parts.append(self._emit(
                "Shape", [d.operand], {"start": d.axis, "end": d.axis + 1}, shape=(1,), dtype="i64"
            ))  # fmt: skip
        return self._emit("Concat", parts, {"axis": 0}, shape=(len(dims),), dtype="i64")

    def _index(self, x: Operand, key: Any) -> Operand:
        """``x[key]``; the shape operations (``ShapeFamily``) give it."""
        raise NotImplementedError("indexing needs the shape operations")

    def _unary(self, op: str, onnx_op: str, x: Any, allowed: Iterable[str] = DTYPES) -> Operand:
        """An element-wise operation of one operand: same shape and dtype."""
        x = self._own(op, x)
        self._check_dtype(op, x, allowed)
        return self._emit(onnx_op, [x], shape=x.shape, dtype=x.dtype)

    # ------------------------------------------------------------ lowering

    def to_onnx(self, outputs: Mapping[str, Operand]) -> bytes:
        """The graph computing ``outputs`` (name -> operand) as an ONNX model.

        Only what the outputs need is kept: inputs they do not use are left
        out. The builder itself stays usable.

        >>> b = GraphBuilder()
        >>> x = b.input("x", shape=[2], dtype="f32")
        >>> onnx_bytes = b.to_onnx({"y": x * 2.0})
        """
        return lower(self, outputs).onnx()

    def _finals(self, outputs: Mapping[str, Operand]) -> tuple[list[Value], list[Node]]:
        """Checked graph outputs: their descriptions and the Identity nodes naming them."""
        if not isinstance(outputs, Mapping) or not outputs:
            raise ValidationError("build needs a mapping of output name to Operand, e.g. {'y': y}")
        values: list[Value] = []
        finals: list[Node] = []
        for name, operand in outputs.items():
            what = f"output {name!r}"
            if not isinstance(name, str) or not name or name.startswith("#"):
                raise ValidationError(
                    f"an output needs a non-empty name not starting with '#', not {name!r}"
                )
            if name in self._inputs:
                raise ValidationError(f"{what} has the name of an input; give it another name")
            operand = self._own("build", operand, what)
            if operand.dtype not in _dtypes.ITEMSIZE:
                raise ValidationError(
                    f"{what} is {operand.dtype}, which wasi-nn cannot carry back to the guest; "
                    f"cast it to one of {', '.join(_dtypes.DTYPES)} (builder.cast)"
                )
            if not operand.shape:
                raise ValidationError(
                    f"{what} is a scalar (shape []), and the wasmtime host cannot pass rank-0 "
                    "tensors; reshape it to [1] (builder.reshape(y, [1])) or keep the reduced "
                    "dimensions (keep_dimensions=True)"
                )
            values.append(Value(name, operand.dtype, operand.shape))
            finals.append(Node("Identity", [operand._name], [name]))
        return values, finals

    def _needed(self, wanted: list[str]) -> tuple[list[tuple[int, Node]], set[str]]:
        """The nodes the ``wanted`` values depend on, in order with their
        positions, and every value they use."""
        used: set[str] = set()
        keep: set[int] = set()
        stack = list(wanted)
        while stack:
            name = stack.pop()
            if name in used or not name:
                continue
            used.add(name)
            index = self._producer.get(name)
            if index is not None and index not in keep:
                keep.add(index)
                stack.extend(self._nodes[index].inputs)
        return [(i, self._nodes[i]) for i in sorted(keep)], used


def element_count(shape: Shape) -> int | None:
    """The number of elements, or ``None`` when a dimension is dynamic."""
    if any(d is None for d in shape):
        return None
    return math.prod(d for d in shape if d is not None)
