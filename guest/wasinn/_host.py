"""The only module that touches the generated wasi-nn bindings.

Everything above this layer deals in plain Python values (names, shapes,
dtype strings, ``bytes``, wasinn Tensors) so that it imports and unit-tests in
normal CPython, where ``tests/fake_host.py`` stands in for this module. Every value
reaching a binding here has been checked already: a wrong Python type passed
to a binding aborts the whole component.

Host errors leave through ``_errors.from_host`` and nowhere else.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from componentize_py_types import Err

from . import _dtypes, _errors
from ._bindings.imports import graph as _graph
from ._bindings.imports import tensor as _tensor
from ._tensor import Tensor

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

def _raise(err: Err, action: str, what: str) -> None:  # type: ignore[type-arg]
    error = err.value
    try:
        code = error.code().name.lower().replace("_", "-")
        message = error.data()
    finally:
        error.__exit__(None, None, None)
    raise _errors.from_host(code, message, action, what) from None


def load(builders: list[bytes], encoding: str, target: str, what: str) -> Any:
    """Load a graph from its parts. ``encoding``/``target`` are WIT case names."""
    try:
        return _graph.load(builders, _ENCODINGS[encoding], _TARGETS[target])
    except Err as err:
        _raise(err, "load" if target == "cpu" else "load-device", what)


def load_by_name(name: str, what: str) -> Any:
    """Fetch a graph the host registered under ``name``."""
    try:
        return _graph.load_by_name(name)
    except Err as err:
        _raise(err, "load", what)


def init_context(graph: Any, what: str) -> Any:
    """A new execution context for ``graph``."""
    try:
        return graph.init_execution_context()
    except Err as err:
        _raise(err, "context", what)


def compute(
    ctx: Any,
    inputs: Sequence[tuple[str, Tensor]],
    what: str,
    expected: Sequence[tuple[Sequence[int] | None, str | None, int | None] | None],
) -> list[tuple[str, Sequence[int], str, bytes]]:
    """Run once on checked ``(name, Tensor)`` inputs; return every output as
    (host name, dims, dtype, bytes).

    Fresh host tensors are made for every call because the host takes
    ownership of (and drops) each tensor it is given. ``expected`` is what
    the model declares per output position (see
    ``_spec.expected_outputs``): dims and type are fetched from the host only
    where the declaration does not settle them, checked by the byte count.
    """
    named = [(name, _tensor.Tensor(list(t._shape), _DTYPE_TO_WIT[t._dtype], t._data)) for name, t in inputs]
    try:
        results = ctx.compute(named)
    except Err as err:
        _raise(err, "compute", what)
    out: list[tuple[str, Sequence[int], str, bytes]] = []
    if len(expected) != len(results):
        expected = [None] * len(results)
    for (name, t), known in zip(results, expected):
        try:
            data = t.data()
            if known is None:
                out.append((name, t.dimensions(), _WIT_TO_DTYPE[t.ty()], data))
                continue
            shape, dtype, nbytes = known
            if nbytes is None or len(data) != nbytes:
                shape = t.dimensions()
                if dtype is None or len(data) != math.prod(shape) * _dtypes.ITEMSIZE[dtype]:
                    dtype = _WIT_TO_DTYPE[t.ty()]
            out.append((name, shape, dtype, data))  # type: ignore[arg-type]
        finally:
            t.__exit__(None, None, None)
    return out


def release(resource: Any) -> None:
    """Drop a graph or execution context now rather than at garbage collection."""
    resource.__exit__(None, None, None)
