"""One WebNN conformance case of web-platform-tests as GraphBuilder calls.

Shared by the host harness (``tests/webnn_wpt.py``, natively) and the
component (``app.py``), so it needs only the stdlib and wasinn. A case is the
JSON of ``tests/data/webnn-wpt/cases/*.json`` (see the README there):
``build(builder, case)`` declares its inputs and constants, adds its
operators with WebNN's camelCase names and options turned into the
builder's snake_case ones, and returns the operands to output and the
inputs to feed.

Where wasi-nn cannot carry a WebNN type or shape, the graph does what WPT's
own harness does for a backend lacking an input type (``castedType``): the
value travels as a wider type and is cast inside the graph, and a rank-0
tensor travels as shape ``[1]``. The operand the case's operators made keeps
its own shape and type in ``Built.declared``, which is what is compared with
the expected descriptor.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from wasinn import GraphBuilder, Operand, Tensor

#: WebNN's data type names -> wasinn's; int4 and uint4 keep WebNN's name so
#: the builder itself decides whether it has them.
DTYPES = {
    "float32": "f32", "float16": "f16", "int8": "i8", "uint8": "u8", "int32": "i32",
    "uint32": "u32", "int64": "i64", "uint64": "u64", "int4": "int4", "uint4": "uint4",
}  # fmt: skip

#: Types wasi-nn cannot carry in or out of a graph -> the type that carries them.
CARRIERS = {"i8": "i32", "u32": "i64", "u64": "i64", "int4": "i32", "uint4": "i32"}

#: Where the builder's keyword is not the snake_case of WebNN's option name.
RENAMED_OPTIONS = {"roundingType": "output_shape_rounding"}

#: A one-number expectation is compared on its first elements only (WPT's
#: kMaximumIndexToValidate), so no more of such an output needs to travel.
FILL_LIMIT = 1000


class MissingOperation(Exception):
    """The builder has no method for one of the case's operators."""


@dataclass
class Step:
    """One operator as added: what the null-tolerance rule needs to know."""

    op: str
    shapes: list[tuple[int | None, ...]]  # of the operand arguments, in order
    options: dict[str, Any]  # WebNN's names; positional plain values too (softmax's axis)


@dataclass
class Feed:
    """A graph input's value as the host will be given it."""

    dtype: str
    shape: list[int]
    values: list[Any]  # one value when ``fill``
    fill: bool = False

    def tensor(self) -> Tensor:
        """The wasinn tensor (a fill is packed once and repeated, not listed)."""
        count = math.prod(self.shape)
        if self.fill:
            one = Tensor(self.values[:1], shape=[1], dtype=self.dtype).tobytes()
            return Tensor(one * count, shape=self.shape, dtype=self.dtype)
        return Tensor(self.values, shape=self.shape, dtype=self.dtype)


@dataclass
class Built:
    """A case's graph: the outputs to build, the inputs to feed, and each
    output's shape and type as the operators made it."""

    outputs: dict[str, Operand] = field(default_factory=dict)
    feeds: dict[str, Feed] = field(default_factory=dict)
    declared: dict[str, tuple[tuple[int | None, ...], str]] = field(default_factory=dict)
    limits: dict[str, int | None] = field(default_factory=dict)  # elements worth returning
    steps: list[Step] = field(default_factory=list)


def snake(name: str) -> str:
    """``gatherND`` -> ``gather_nd``, ``isNaN`` -> ``is_nan``, ``reduceL1`` -> ``reduce_l1``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def number(value: Any) -> Any:
    """A JSON element as a Python number: WPT writes NaN, the infinities, -0
    and 64-bit integers (``"123n"`` or plain digits) as strings."""
    if not isinstance(value, str):
        return value
    special = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf, "-0": -0.0}
    if value in special:
        return special[value]
    text = value[:-1] if value.endswith("n") else value
    try:
        return int(text)
    except ValueError:
        return float(text)


def values(data: Any, shape: list[int]) -> tuple[list[Any], bool]:
    """(elements, fill?): one number standing for a larger shape fills it."""
    if isinstance(data, list):
        return [number(v) for v in data], False
    return [number(data)], math.prod(shape) > 1


def _wrap(items: list[Any], dtype: str) -> list[Any]:
    """uint64 values past int64 travel in i64 as their two's complement bits."""
    if dtype != "u64":
        return items
    return [v - 2**64 if isinstance(v, int) and v >= 2**63 else v for v in items]


def _operand(builder: GraphBuilder, name: str, spec: dict[str, Any], built: Built) -> Operand:
    shape = list(spec["descriptor"]["shape"])
    dtype = DTYPES.get(spec["descriptor"]["dataType"], spec["descriptor"]["dataType"])
    items, fill = values(spec["data"], shape)
    if spec.get("constant"):
        full = items * math.prod(shape) if fill else items
        return builder.constant(full, shape=shape, dtype=dtype)
    carrier = CARRIERS.get(dtype, dtype)
    travel = shape or [1]  # the host passes no rank-0 tensors
    built.feeds[name] = Feed(carrier, travel, _wrap(items, dtype), fill)
    x = builder.input(name, shape=travel, dtype=carrier)
    if carrier != dtype:
        x = builder.cast(x, dtype)
    if not shape:
        x = builder.reshape(x, [])
    return x


def _resolve(value: Any, operands: dict[str, Operand]) -> Any:
    """An argument: an operand's name becomes the operand, lists item by item,
    WPT's special number strings become numbers."""
    if isinstance(value, str):
        if value in operands:
            return operands[value]
        if value in ("NaN", "Infinity", "-Infinity", "-0") or re.fullmatch(r"-?\d+n?", value):
            return number(value)
        return value  # an enum value: "nchw", "linear", ...
    if isinstance(value, list):
        return [_resolve(v, operands) for v in value]
    return value


def _call(builder: GraphBuilder, op: dict[str, Any], operands: dict[str, Operand]) -> Any:
    method = getattr(builder, snake(op["name"]), None)
    if method is None:
        raise MissingOperation(f"GraphBuilder has no {snake(op['name'])} (WebNN {op['name']})")
    positional: list[Any] = []
    options: dict[str, Any] = {}
    for argument in op["arguments"]:
        for key, value in (argument or {}).items():  # WPT leaves some slots null
            if key == "options":
                for option, v in value.items():
                    if option != "label":  # a name for error messages only
                        options[RENAMED_OPTIONS.get(option, snake(option))] = _resolve(v, operands)
            else:
                positional.append(_resolve(value, operands))
    if op["name"] == "softmax" and len(positional) == 1:
        # WPT's oldest softmax cases give no axis: WebNN then took 2-D inputs
        # along axis 1 (what WPT's own tolerance for them assumes too).
        positional.append(1)
    return method(*positional, **options)


def build(builder: GraphBuilder, case: dict[str, Any]) -> Built:
    """Add the case's inputs and operators to ``builder``."""
    graph = case["graph"]
    built = Built()
    operands: dict[str, Operand] = {}
    for name, spec in graph["inputs"].items():
        operands[name] = _operand(builder, name, spec, built)
    for op in graph["operators"]:
        result = _call(builder, op, operands)
        names = op["outputs"] if isinstance(op["outputs"], list) else [op["outputs"]]
        results = result if isinstance(result, (list, tuple)) else [result]
        if len(results) != len(names):
            raise ValueError(f"{op['name']} gave {len(results)} outputs, the case names {names}")
        operands.update(zip(names, results, strict=True))
        built.steps.append(_step(op, operands))
    for name, spec in graph["expectedOutputs"].items():
        y = operands[name]
        built.declared[name] = (tuple(y.shape), y.dtype)
        built.limits[name] = None if isinstance(spec["data"], list) else FILL_LIMIT
        if y.rank == 0:
            y = builder.reshape(y, [1])
        if y.dtype in CARRIERS:
            y = builder.cast(y, CARRIERS[y.dtype])
        built.outputs[name] = y
    return built


def _step(op: dict[str, Any], operands: dict[str, Operand]) -> Step:
    shapes = []
    options: dict[str, Any] = {}
    for argument in op["arguments"]:
        for key, value in (argument or {}).items():
            if key == "options":
                options = dict(value)
            elif isinstance(value, str) and value in operands:
                shapes.append(tuple(operands[value].shape))
            else:
                options[key] = value
    return Step(op["name"], shapes, options)
