"""The only module that touches the generated wasi-nn bindings.

Everything above this layer deals in plain Python values (names, shapes,
dtype strings, ``bytes``, wasinn Tensors) so that it imports and unit-tests in
normal CPython, where the fakes in ``tests/`` stand in for this module
(``api.HostLayer`` is the interface both sides implement). Every value
reaching a binding here has been checked already: a wrong Python type passed
to a binding aborts the whole component.

Host errors leave through ``_errors.from_host`` and nowhere else.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NoReturn

from componentize_py_types import Err

from .. import _dtypes, _errors
from .._bindings.imports import errors as _errors_binding
from .._bindings.imports import graph as _graph
from .._bindings.imports import tensor as _tensor
from .._tensor import Tensor
from .api import Handle, HostOutput

_DTYPE_TO_WIT = {
    "f16": _tensor.TensorType.FP16,
    "bf16": _tensor.TensorType.BF16,
    "f32": _tensor.TensorType.FP32,
    "f64": _tensor.TensorType.FP64,
    "u8": _tensor.TensorType.U8,
    "i32": _tensor.TensorType.I32,
    "i64": _tensor.TensorType.I64,
}
_WIT_TO_DTYPE = {v: k for k, v in _DTYPE_TO_WIT.items()}
_ENCODINGS = {e.name.lower(): e for e in _graph.GraphEncoding}
_TARGETS = {t.name.lower(): t for t in _graph.ExecutionTarget}

_WitTensor = _tensor.Tensor
_ITEMSIZE = _dtypes.ITEMSIZE
_new_tuple = tuple.__new__


def _raise(err: Err[_errors_binding.Error], action: str, what: str) -> NoReturn:
    error = err.value
    try:
        code = error.code().name.lower().replace("_", "-")
        message = error.data()
    finally:
        error.__exit__(None, None, None)
    # The binding's Err stays referenced after the call (the garbage collector
    # does not free it), and its traceback holds the frames of the failed call
    # and, through them, every caller's locals: without this, Model.load's
    # first try of the "onnx" encoding, deep inside an image decode, kept that
    # decoder's coefficients and pixels alive for good.
    err.with_traceback(None)
    raise _errors.from_host(code, message, action, what) from None


def load(builders: list[bytes], encoding: str, target: str, what: str) -> Handle:
    """Load a graph from its parts. ``encoding``/``target`` are WIT case names."""
    try:
        return _graph.load(builders, _ENCODINGS[encoding], _TARGETS[target])
    except Err as err:
        _raise(err, "load" if target == "cpu" else "load-device", what)


def load_by_name(name: str, what: str) -> Handle:
    """Fetch a graph the host registered under ``name``."""
    try:
        return _graph.load_by_name(name)
    except Err as err:
        _raise(err, "load", what)


def init_context(graph: Handle, what: str) -> Handle:
    """A new execution context for ``graph``."""
    try:
        return graph.init_execution_context()
    except Err as err:
        _raise(err, "context", what)


def compute(ctx: Handle, inputs: Sequence[tuple[str, Tensor]], what: str) -> list[HostOutput]:
    """Run once on checked ``(name, Tensor)`` inputs; return every output as
    the host describes it.

    Fresh host tensors are made for every call because the host takes
    ownership of (and drops) each tensor it is given. Each output's shape and
    type are asked of the host every time: a model's declared output can
    disagree with what it computes (stale ONNX value_info), and the two extra
    calls cost about 5 µs per VAD step (two outputs).
    """
    named = [
        (name, _WitTensor(list(t._shape), _DTYPE_TO_WIT[t._dtype], t._data)) for name, t in inputs
    ]
    try:
        results = ctx.compute(named)
    except Err as err:
        _raise(err, "compute", what)
    out: list[HostOutput] = []
    try:
        for name, t in results:
            shape = tuple(t.dimensions())
            dtype = _WIT_TO_DTYPE[t.ty()]
            data = t.data()
            if len(data) != math.prod(shape) * _ITEMSIZE[dtype]:
                raise _errors.BackendRuntimeError(
                    f"{what}: the host returned output {name!r} as {dtype}{list(shape)}, which is "
                    f"{math.prod(shape) * _ITEMSIZE[dtype]} bytes, but sent {len(data)} bytes"
                )
            # tuple.__new__ skips the NamedTuple's Python-level constructor (a
            # measurable cost per output inside a component).
            out.append(_new_tuple(HostOutput, (name, shape, dtype, data)))
    finally:
        for _, t in results:
            t.__exit__(None, None, None)
    return out


def release(resource: Handle) -> None:
    """Drop a graph or execution context now rather than at garbage collection."""
    resource.__exit__(None, None, None)
