"""Tensor <-> ``numpy.ndarray``, for apps that use numpy; wasinn never needs it.

numpy is never imported at module level: wasinn stays stdlib-only for apps
that do not want numpy's size. An ndarray can only reach wasinn if the app
imported numpy, so recognising one looks in ``sys.modules`` and imports
nothing. Only ``Tensor.numpy()`` and ``run_numpy`` import numpy on their own,
and say what to do when it is missing.

Layout: a Tensor's data is immutable little-endian row-major ``bytes``, which
numpy reads in place (``__array_interface__`` with the ``bytes`` object as its
buffer): tensor -> array never copies, and the array is read-only. The other
way a ``bytes`` object cannot wrap numpy's memory, so array -> tensor copies
once, in C (``ndarray.tobytes``), except for an array that is a whole view of
a ``bytes`` object already (one that came from a Tensor, or
``np.frombuffer(data, ...)``): its bytes are reused.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from . import _dtypes, _kernels
from ._errors import ValidationError

if TYPE_CHECKING:
    import numpy
    from numpy.typing import NDArray

#: numpy's type string of each wasinn dtype but bf16, which numpy lacks.
TYPESTR = {"f16": "<f2", "f32": "<f4", "f64": "<f8", "u8": "|u1", "i32": "<i4", "i64": "<i8"}
_BY_TYPESTR = {v: k for k, v in TYPESTR.items()}
_NAMES = {"f16": "float16", "f32": "float32", "f64": "float64", "u8": "uint8", "i32": "int32",
          "i64": "int64"}  # fmt: skip

_MISSING = (
    "{what} needs numpy, which cannot be imported here ({exc}). Natively: pip install numpy. "
    "Inside a component numpy exists only if it was built into it and the app imports it "
    "at the top of app.py (componentize-py keeps only modules imported at build time). "
    "Without numpy, use tensor.tolist(), tensor.tobytes() or the tensor.data memoryview."
)

BF16_HINT = (
    "numpy has no bfloat16 dtype: convert first with tensor.astype('f32') (exact: every bf16 "
    "value is an f32), or import ml_dtypes in the app to get ml_dtypes.bfloat16 arrays"
)


def module(what: str) -> Any:
    """The numpy module, imported on first use; a clear ImportError without it."""
    np = sys.modules.get("numpy")
    if np is not None:
        return np
    try:
        import numpy as np
    except ImportError as exc:
        raise ImportError(_MISSING.format(what=what, exc=exc)) from exc
    return np


def is_array(obj: object) -> bool:
    """True for a numpy array or numpy scalar, without importing numpy."""
    np = sys.modules.get("numpy")
    return np is not None and isinstance(obj, (np.ndarray, np.generic))


def _bf16_type() -> Any:
    """``ml_dtypes.bfloat16`` if the app imported ml_dtypes, else None."""
    ml_dtypes = sys.modules.get("ml_dtypes")
    return getattr(ml_dtypes, "bfloat16", None)


def dtype_of(np_dtype: Any) -> str | None:
    """wasinn's dtype for a numpy dtype, or None when wasi-nn cannot carry it."""
    if np_dtype.name == "bfloat16" and np_dtype.itemsize == 2:
        return "bf16"  # ml_dtypes' bfloat16 (its type string is only "<V2")
    return _BY_TYPESTR.get(np_dtype.str)


def array_interface(data: bytes, shape: tuple[int, ...], dtype: str) -> dict[str, Any]:
    """``__array_interface__`` of a tensor: numpy reads ``data`` in place, read-only."""
    typestr = TYPESTR.get(dtype)
    if typestr is None:
        # AttributeError makes numpy fall back to __array__, which explains.
        raise AttributeError(f"a bf16 tensor has no __array_interface__: {BF16_HINT}")
    return {"version": 3, "shape": shape, "typestr": typestr, "data": data, "strides": None}


def to_array(
    data: bytes, shape: tuple[int, ...], dtype: str, np_dtype: Any = None, copy: bool | None = None
) -> NDArray[Any]:
    """The tensor as an ndarray: a read-only view of ``data`` unless a copy is
    needed (another ``np_dtype``) or asked for (``copy=True``); numpy 2's
    ``__array__`` rules, so ``copy=False`` refuses to convert."""
    np = module("converting a Tensor to a numpy array")
    if dtype == "bf16":
        bf16 = _bf16_type()
        if bf16 is not None:
            arr = np.ndarray(shape, bf16, buffer=data)
        elif np_dtype is None:
            raise ValidationError(f"cannot convert a bf16 tensor to a numpy array: {BF16_HINT}")
        else:  # the caller names the dtype it wants: go through f32, exactly
            arr = np.frombuffer(_kernels.f32_from_bf16(data), dtype="<f4").reshape(shape)
            if copy is False:
                raise ValueError(
                    f"a bf16 tensor cannot be viewed as {np.dtype(np_dtype)} without a copy"
                )
            return arr.astype(np_dtype, copy=False)  # type: ignore[no-any-return]
    else:
        arr = np.ndarray(shape, TYPESTR[dtype], buffer=data)  # its .base is ``data``
    if np_dtype is not None and np.dtype(np_dtype) != arr.dtype:
        if copy is False:
            raise ValueError(
                f"a {dtype} tensor cannot be viewed as {np.dtype(np_dtype)} without a copy; "
                "drop copy=False, or convert with tensor.astype(...) first"
            )
        return arr.astype(np_dtype)  # type: ignore[no-any-return]
    return arr.copy() if copy else arr  # type: ignore[no-any-return]


def ingest(arr: Any, want: str | None) -> tuple[bytes, tuple[int, ...], str]:
    """An ndarray (or numpy scalar) as (bytes, shape, dtype); ``want`` converts by value.

    Any layout is taken (non-contiguous, negative strides: ``tobytes`` writes
    C order). Values are converted only to a ``want`` given by the caller,
    and as ``Tensor`` converts lists: floats round to nearest, and an integer
    target refuses fractions and values out of its range instead of
    truncating or wrapping as ``ndarray.astype`` would.
    """
    np = sys.modules["numpy"]
    if not isinstance(arr, np.ndarray):
        arr = np.asarray(arr)  # a numpy scalar: a 0-d array
    shape = tuple(arr.shape)
    own = dtype_of(arr.dtype)
    if own is not None and (want is None or want == own):
        return _bytes_of(np, arr), shape, own
    if want is None:
        raise ValidationError(_unsupported(arr.dtype))
    if arr.dtype.kind not in "biuf" and own is None:
        raise ValidationError(
            f"cannot convert a numpy {arr.dtype} array to {want}: only booleans, integers and "
            "floats convert by value"
        )
    if own == "bf16":  # ml_dtypes' bfloat16: widen exactly, then as f32
        arr = np.frombuffer(_kernels.f32_from_bf16(arr.tobytes()), "<f4").reshape(shape)
    if want not in _dtypes.FLOATS and not np.can_cast(arr.dtype, TYPESTR[want], "safe"):
        _check_integers(np, arr, want)
    with np.errstate(all="ignore"):  # float overflow gives inf, as for lists
        out = arr.astype("<f4" if want == "bf16" else TYPESTR[want])
    raw = out.tobytes()
    if want == "bf16":
        raw = _kernels.bf16_from_f32(raw)
    return raw, shape, want


def _check_integers(np: Any, arr: Any, want: str) -> None:
    """Refuse values ``want`` cannot hold exactly (astype would truncate or wrap)."""
    low, high = _dtypes.int_range(want)
    with np.errstate(all="ignore"):  # NaN and inf are answers here, not accidents
        fits = _fits(np, arr, low, high)
    if not fits.all():
        bad = arr[~fits].flat[0].item()
        raise ValidationError(
            f"{bad!r} cannot be stored as {want}: integer tensors take whole numbers from "
            f"{low} to {high}; round or clip the array first, or use a float dtype"
        )


def _fits(np: Any, arr: Any, low: int, high: int) -> Any:
    if arr.dtype.kind == "f":
        # In f64 (exact for f16 and f32, whose range cannot hold 2**31), high + 1
        # is a power of two and exact; NaN fails all three.
        wide = arr.astype(np.float64) if arr.dtype.itemsize < 8 else arr
        return (wide >= low) & (wide < high + 1) & (np.trunc(wide) == wide)
    return (arr >= low) & (arr <= high)


def _bytes_of(np: Any, arr: Any) -> bytes:
    """The array's bytes in C order; the ``bytes`` it views, when it views all of one."""
    base = arr.base
    while isinstance(base, np.ndarray):
        base = base.base
    # A C-contiguous view as long as its buffer must start at its start.
    if type(base) is bytes and len(base) == arr.nbytes and arr.flags.c_contiguous:
        return base
    return arr.tobytes()  # type: ignore[no-any-return]


def _unsupported(np_dtype: numpy.dtype[Any]) -> str:
    carried = ", ".join(f"{_NAMES[d]} ({d})" for d in TYPESTR) + ", ml_dtypes' bfloat16 (bf16)"
    if np_dtype.kind not in "biuf":
        return (
            f"numpy dtype {np_dtype} has no wasi-nn dtype (wasi-nn carries {carried}), and only "
            "booleans, integers and floats convert by value"
        )
    if np_dtype.byteorder == ">":
        why = f"numpy dtype {np_dtype.str} is big-endian; wasi-nn tensors are little-endian"
        fix = "a.astype(a.dtype.newbyteorder('<'))"
    else:
        why = f"numpy dtype {np_dtype} has no wasi-nn dtype"
        fix = {"b": "a.astype(np.uint8)", "f": "a.astype(np.float32)"}.get(
            np_dtype.kind, "a.astype(np.int64)" if np_dtype.itemsize == 8 else "a.astype(np.int32)"
        )
    return (
        f"{why} (wasi-nn carries {carried}); convert it first, e.g. {fix}, or pass dtype=... "
        "(e.g. dtype='f32') to convert by value"
    )
