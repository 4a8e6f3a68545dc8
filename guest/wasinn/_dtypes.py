"""Element types and their pure-Python codecs (wasinn never needs numpy).

Tensor bytes are little-endian, row-major, as wasi-nn defines them; so are
wasm32 and the x86/ARM hosts the native tests run on, so ``array`` items are
used as they are. f16 goes
through ``struct``'s IEEE half format; bf16 is the top half of an f32,
rounded to nearest-even, by compiled code (``ext/_kernels.c``).
"""

from __future__ import annotations

import array
import struct
from collections.abc import Sequence

from . import _kernels
from ._errors import ValidationError

#: The seven element types wasi-nn carries, by wasinn's names.
DTYPES: tuple[str, ...] = ("f16", "bf16", "f32", "f64", "u8", "i32", "i64")

ITEMSIZE = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "u8": 1, "i32": 4, "i64": 8}

# Other spellings users bring from numpy, torch, OpenVINO and ONNX.
_ALIASES = {
    "float16": "f16", "half": "f16", "fp16": "f16",
    "bfloat16": "bf16",
    "float32": "f32", "float": "f32", "fp32": "f32",
    "float64": "f64", "double": "f64", "fp64": "f64",
    "uint8": "u8",
    "int32": "i32",
    "int64": "i64", "long": "i64",
}  # fmt: skip

# array.array type codes with the right item size on this platform.
ARRAY_CODE = {"f32": "f", "f64": "d", "u8": "B"}
for _code in "il":
    if array.array(_code).itemsize == 4:
        ARRAY_CODE.setdefault("i32", _code)
for _code in "lq":
    if array.array(_code).itemsize == 8:
        ARRAY_CODE.setdefault("i64", _code)

FLOATS = frozenset({"f16", "bf16", "f32", "f64"})


def canonical(dtype: object) -> str:
    """Return wasinn's name for ``dtype`` (``"float32"`` -> ``"f32"``).

    Raises ValidationError for a type wasi-nn cannot carry.
    """
    if isinstance(dtype, str):
        name = dtype.strip().lower()
        name = _ALIASES.get(name, name)
        if name in ITEMSIZE:
            return name
    else:
        # numpy dtypes and similar objects print as their name.
        name = str(getattr(dtype, "name", dtype)).lower()
        if name in _ALIASES or name in ITEMSIZE:
            return canonical(name)
    raise ValidationError(f"unsupported dtype {dtype!r}; wasi-nn carries only {', '.join(DTYPES)}")


def dtype_of_format(fmt: str, itemsize: int) -> str | None:
    """The dtype of a buffer-protocol format string, or None if it has none."""
    if fmt[:1] in "<=@":
        fmt = fmt[1:]
    elif fmt[:1] in ">!":
        return None  # big-endian data would need swapping: refuse it
    if fmt == "e":
        return "f16"
    if fmt == "f":
        return "f32"
    if fmt == "d":
        return "f64"
    if fmt == "B":
        return "u8"
    if fmt in ("i", "l", "q", "n") and itemsize in (4, 8):
        return "i32" if itemsize == 4 else "i64"
    return None


def encode(values: Sequence[float | int], dtype: str) -> bytes:
    """Pack a flat sequence of Python numbers as ``dtype`` bytes."""
    try:
        if dtype == "f16":
            return _encode_f16(values)
        if dtype == "bf16":
            return _encode_bf16(values)
        arr = array.array(ARRAY_CODE[dtype], values)
    except OverflowError as exc:
        if dtype in FLOATS:
            raise ValidationError(f"a value does not fit in {dtype}: {exc}") from None
        low, high = int_range(dtype)
        raise ValidationError(
            f"a value does not fit in {dtype} (range {low}..{high}): {exc}"
        ) from None
    except (TypeError, ValueError) as exc:
        kind = "integers" if dtype not in FLOATS else "numbers"
        raise ValidationError(f"a {dtype} tensor needs {kind}: {exc}") from None
    return arr.tobytes()


def decode(data: bytes | memoryview, dtype: str) -> list[float] | list[int]:
    """Unpack ``dtype`` bytes into a flat list of Python numbers."""
    if dtype == "f16":
        return list(struct.unpack(f"<{len(data) // 2}e", data))
    if dtype == "bf16":
        # bf16 -> f32 is exact: the bf16 bits become the high half of the f32.
        return _typed(_kernels.f32_from_bf16(bytes(data)), "f").tolist()
    return _typed(data, ARRAY_CODE[dtype]).tolist()


def int_range(dtype: str) -> tuple[int, int]:
    """The smallest and largest value of an integer dtype."""
    bits = ITEMSIZE[dtype] * 8
    if dtype == "u8":
        return 0, 255
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _typed(data: bytes | memoryview, code: str) -> array.array:  # type: ignore[type-arg]
    arr = array.array(code)
    arr.frombytes(data)
    return arr


def _encode_f16(values: Sequence[float | int]) -> bytes:
    try:
        return struct.pack(f"<{len(values)}e", *values)
    except (OverflowError, struct.error):
        pass
    # struct refuses values past the f16 range (OverflowError for floats,
    # struct.error for ints); IEEE rounding (and numpy) makes them infinite.
    # 65520 is where rounding reaches infinity; NaN stays NaN.
    clamped = [_clamp_f16(v) for v in values]
    try:
        return struct.pack(f"<{len(clamped)}e", *clamped)
    except struct.error as exc:
        raise TypeError(str(exc)) from None


def _clamp_f16(v: float | int) -> float | int:
    if not isinstance(v, (int, float)):
        return v  # struct names the bad element
    f = float(v)  # an int beyond even f64 raises OverflowError, as in numpy
    if f >= 65520.0:
        return float("inf")
    if f <= -65520.0:
        return float("-inf")
    return f


def _encode_bf16(values: Sequence[float | int]) -> bytes:
    # Values are first rounded to f32 (as torch and OpenVINO hold them), then
    # to bf16; only f64 inputs that sit exactly between two bf16 values after
    # the first rounding could differ from a direct f64 -> bf16 rounding.
    return _kernels.bf16_from_f32(array.array("f", values).tobytes())


def round_int(value: int, bits: int) -> float:
    """``value`` rounded (to nearest, ties to even) to ``bits`` significant bits.

    Python turns ints into f64 exactly only up to 2**53; beyond that, going
    through f64 and then to a narrower float rounds twice. Rounding once,
    here, to the narrow type's precision gives numpy's result.
    """
    magnitude = abs(value)
    shift = magnitude.bit_length() - bits
    if shift <= 0:
        return float(value)
    q, r = divmod(magnitude, 1 << shift)
    half = 1 << (shift - 1)
    if r > half or (r == half and q & 1):
        q += 1
    try:
        f = float(q << shift)
    except OverflowError:
        f = float("inf")
    return f if value >= 0 else -f


#: Significant bits of each float dtype, for round_int.
SIGNIFICAND = {"f16": 11, "bf16": 8, "f32": 24, "f64": 53}
