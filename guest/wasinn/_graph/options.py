"""What the network, pooling and recurrent families share: checks of the
input operand and of list and choice options, the layout transposes, new
dimensions of 1, constants filled with one value, and the sliding-window size.

``NetworkFamily`` (``network``), ``PoolingFamily`` (``pooling``) and
``RecurrentFamily`` (``recurrent``) derive from ``NetworkBase``; it adds no
operation of its own.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from .._errors import ValidationError
from .._tensor import Tensor
from .core import BuilderCore, Operand, shape_text

FLOATS = ("f32", "f16")
LAYOUTS = ("nchw", "nhwc")
TO_NCHW = (0, 3, 1, 2)
TO_NHWC = (0, 2, 3, 1)


def dims_fit(a: int | None, b: int | None) -> bool:
    """Whether two dimensions can be equal (a dynamic one may be anything)."""
    return a is None or b is None or a == b


def window_size(
    size: int | None, window: int, dilation: int, begin: int, end: int, stride: int
) -> tuple[int | None, int | None]:
    """A sliding window's output size, rounded down and up (``None`` if dynamic).

    >>> window_size(8, 3, 1, 1, 1, 2)   # 8 wide, window 3, padding 1 and 1, stride 2
    (4, 5)
    """
    if size is None:
        return None, None
    span = size - ((window - 1) * dilation + 1) + begin + end
    return span // stride + 1, -(-span // stride) + 1


class NetworkBase(BuilderCore):
    """The helpers of the module docstring; a base of ``NetworkFamily`` and ``PoolingFamily``."""

    def _nn_like(
        self, op: str, ref: Operand, value: Any, role: str, ref_role: str = "input"
    ) -> Operand:
        """``value`` as an operand of ``ref``'s data type."""
        operand = self._own(op, value, role)
        if operand.dtype != ref.dtype:
            raise ValidationError(
                f"{op}: the {role} is {operand.dtype}, but the {ref_role} is {ref.dtype}; "
                "they must have the same data type"
            )
        return operand

    def _nn_input(self, op: str, value: Any, rank: int | None, dtypes: Iterable[str]) -> Operand:
        x = self._own(op, value)
        self._check_dtype(op, x, dtypes)
        if rank is not None and x.rank != rank:
            raise ValidationError(
                f"{op}: the input must be {rank}-D, not {x.rank}-D {shape_text(x.shape)}"
            )
        return x

    def _nn_ints(self, op: str, name: str, value: Any, length: int, minimum: int) -> list[int]:
        items = None
        if not isinstance(value, (str, bytes)) and isinstance(value, Iterable):
            items = list(value)
        ok = items is not None and len(items) == length
        ok = ok and all(
            isinstance(v, int) and not isinstance(v, bool) and minimum <= v < 2**32
            for v in items or ()
        )
        if not ok or items is None:
            raise ValidationError(
                f"{op}: {name} must be a list of {length} integers of at least {minimum}, "
                f"not {value!r}"
            )
        return items

    def _nn_choice(self, op: str, name: str, value: Any, allowed: Iterable[str]) -> str:
        allowed = tuple(allowed)
        if value not in allowed:
            raise ValidationError(
                f"{op}: {name} must be one of {', '.join(repr(a) for a in allowed)}, not {value!r}"
            )
        return str(value)

    def _nn_transpose(self, x: Operand, perm: Sequence[int] | None) -> Operand:
        if perm is None:
            return x
        shape = tuple(x.shape[p] for p in perm)
        return self._emit("Transpose", [x], {"perm": list(perm)}, shape=shape, dtype=x.dtype)

    def _nn_unsqueeze(self, x: Operand, axes: Sequence[int]) -> Operand:
        """``x`` with dimensions of 1 inserted at ``axes`` (positions in the result)."""
        if not axes:
            return x
        dims = iter(x.shape)
        rank = x.rank + len(axes)
        shape = tuple(1 if i in axes else next(dims) for i in range(rank))
        return self._emit("Unsqueeze", [x, self._ints(list(axes))], shape=shape, dtype=x.dtype)

    def _nn_filled(self, value: float, dtype: str, shape: Sequence[int]) -> Operand:
        """A constant of ``shape`` with every element ``value`` (default scale and bias)."""
        count = math.prod(shape)
        return self._const(dtype, tuple(shape), Tensor([value] * count, dtype=dtype).tobytes())
