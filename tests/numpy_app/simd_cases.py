"""numpy's SIMD kernels on the inputs where SIMD backends differ: NaN, signed
zeros, infinities, subnormals, integer extremes, lengths that leave a partial
vector, and every integer divisor kind.

The guest's numpy runs its universal intrinsics on our WebAssembly SIMD128
backend (tools/guest_packages/numpy/wasm-simd128-backend.patch), which follows
numpy's x86 choices wherever the intrinsics leave the result open (which
operand max/min return for NaN or zeros of either sign, the order of a
horizontal sum). ``check()`` gives a digest per result; tests/test_numpy_guest.py
compares the component's digests with native numpy's on the project's x86-64
machines (numpy on an ARM host may return the other zero of max(-0.0, 0.0),
which numpy leaves open). Used by ``app.py`` inside a component.

Two things are normalised because they are not numpy's promise: the sign and
payload of a NaN (the hardware's, and wasm's arithmetic NaNs are
nondeterministic), and the width of integer results (``np.intp`` is 32-bit in
wasm32: argmax returns int32).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import numpy as np

FLOAT_SPECIALS = [np.nan, 0.0, -0.0, np.inf, -np.inf, 1.5, -2.5, 3.0, 1e-40, -1e-310, 7.25]
#: Two-operand float ufuncs, each also against a scalar 0 and a scalar NaN.
FLOAT_BINARY: dict[str, Callable[..., Any]] = {
    "maximum": np.maximum, "minimum": np.minimum, "fmax": np.fmax, "fmin": np.fmin,
    "add": np.add, "multiply": np.multiply, "divide": np.divide, "greater": np.greater,
    "less_equal": np.less_equal, "equal": np.equal, "not_equal": np.not_equal,
}  # fmt: skip
FLOAT_UNARY: dict[str, Callable[..., Any]] = {
    "sqrt": np.sqrt, "abs": np.abs, "square": np.square, "reciprocal": np.reciprocal,
    "floor": np.floor, "ceil": np.ceil, "rint": np.rint, "trunc": np.trunc,
    "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "signbit": np.signbit,
    "negative": np.negative, "sign": np.sign, "logical_not": np.logical_not,
}  # fmt: skip
INT_BINARY: dict[str, Callable[..., Any]] = {
    "maximum": np.maximum, "minimum": np.minimum, "greater": np.greater, "less": np.less,
    "equal": np.equal, "add": np.add, "subtract": np.subtract, "multiply": np.multiply,
    "bitwise_and": np.bitwise_and,
}  # fmt: skip
INT_TYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


def digest(result: Any) -> str:
    """The result's bytes and type, NaNs made one NaN and integers 64-bit."""
    a = np.asarray(result)
    if a.dtype.kind == "i":
        a = a.astype(np.int64)
    elif a.dtype.kind == "u":
        a = a.astype(np.uint64)
    elif a.dtype.kind == "f":
        a = np.where(np.isnan(a), a.dtype.type(np.nan), a)
    data = np.ascontiguousarray(a).tobytes() + a.dtype.str.encode()
    return hashlib.sha256(data).hexdigest()[:16]


def _floats(out: dict[str, str]) -> None:
    for dtype in (np.float32, np.float64):
        rng = np.random.default_rng(1)
        # 3 x 11 specials then 41 random: every lane position, and a partial last vector
        a = np.concatenate([np.array(FLOAT_SPECIALS * 3, dtype), rng.standard_normal(41)])
        a = a.astype(dtype)
        b = np.roll(a[::-1].copy(), 5)
        name = dtype.__name__
        with np.errstate(all="ignore"):
            for op, f in FLOAT_BINARY.items():
                out[f"{op}_{name}"] = digest(f(a, b))
                out[f"{op}_{name}_zero"] = digest(f(a, dtype(0.0)))
                out[f"{op}_{name}_nan"] = digest(f(a, dtype(np.nan)))
            for op, f in FLOAT_UNARY.items():
                out[f"{op}_{name}"] = digest(f(a))
        # reductions over every start offset: NaN and zeros at each lane
        for start in range(0, len(a), 3):
            part = a[start:]
            out[f"max_{name}_{start}"] = digest(part.max())
            out[f"min_{name}_{start}"] = digest(part.min())
            out[f"argmax_{name}_{start}"] = digest(part.argmax())
            out[f"argmin_{name}_{start}"] = digest(part.argmin())
            if not np.isnan(part).all():
                out[f"nanmax_{name}_{start}"] = digest(np.nanmax(part))
                out[f"nanmin_{name}_{start}"] = digest(np.nanmin(part))
        finite = a[np.isfinite(a)]
        out[f"finite_max_{name}"] = digest([finite[i:].max() for i in range(len(finite))])
        out[f"finite_argmax_{name}"] = digest([finite[i:].argmax() for i in range(len(finite))])
        out[f"clip_{name}"] = digest(np.clip(a, -1, 1))
        out[f"sum_{name}"] = digest(finite.sum())
        out[f"strided_{name}"] = digest(np.maximum(a[::3], b[::3]) + a[::-3])


def _integers(out: dict[str, str]) -> None:
    for dtype in INT_TYPES:
        info = np.iinfo(dtype)
        a = np.random.default_rng(2).integers(info.min, info.max, 77, dtype=dtype, endpoint=True)
        a[:4] = [info.min, info.max, 0, 1]
        b = np.roll(a, 3)
        name = dtype.__name__
        with np.errstate(all="ignore"):
            # by a scalar: numpy's SIMD division by a precomputed divisor
            for d in (1, 2, 3, 7, 10, 127, int(info.max), -1, -3, -128, int(info.min)):
                if info.min <= d != 0:
                    out[f"floor_divide_{name}_{d}"] = digest(a // dtype(d))
                    out[f"remainder_{name}_{d}"] = digest(a % dtype(d))
            for op, f in INT_BINARY.items():
                out[f"{op}_{name}"] = digest(f(a, b))
            shift = (b % (8 * a.itemsize)).astype(dtype)
            out[f"left_shift_{name}"] = digest(np.left_shift(a, shift))
            out[f"right_shift_{name}"] = digest(np.right_shift(a, shift))
            out[f"abs_{name}"] = digest(np.abs(a))
        for start in range(0, 77, 5):
            part = a[start:]
            out[f"max_{name}_{start}"] = digest(part.max())
            out[f"min_{name}_{start}"] = digest(part.min())
            out[f"argmax_{name}_{start}"] = digest(part.argmax())
            out[f"argmin_{name}_{start}"] = digest(part.argmin())
        out[f"to_float32_{name}"] = digest(a.astype(np.float32))
        out[f"to_float64_{name}"] = digest(a.astype(np.float64))
        out[f"any_{name}"] = digest([a[i : i + 9].any() for i in range(70)])
        out[f"count_nonzero_{name}"] = digest(np.count_nonzero(a))


def _other(out: dict[str, str]) -> None:
    x = np.random.default_rng(3).random(1003) > 0.5
    out["logical_and_bool"] = digest(np.logical_and(x, x[::-1]))
    out["any_all_bool"] = digest([x.any(), x.all(), x[:1].all()])
    f = np.random.default_rng(4).standard_normal(1003).astype(np.float32) * 1000
    out["float32_to_int32"] = digest(f.astype(np.int32))
    out["float32_to_uint8"] = digest(np.clip(f, 0, 255).astype(np.uint8))
    out["float64_to_int64"] = digest(f.astype(np.float64).astype(np.int64))
    m = np.random.default_rng(5).random((61, 67), dtype=np.float32)
    out["threshold"] = digest((m > 0.5).astype(np.uint8) * 255)


def check() -> dict[str, str]:
    """A digest per SIMD-kernel result; must equal native numpy's."""
    out: dict[str, str] = {}
    _floats(out)
    _integers(out)
    _other(out)
    return out
