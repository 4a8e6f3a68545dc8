"""``Tensor``: a shape, a dtype and immutable little-endian bytes."""

from __future__ import annotations

import array
import heapq
import math
import operator
import struct
import sys
from collections.abc import Iterable, Sequence
from itertools import compress, count, repeat
from typing import Any

from . import _dtypes
from ._errors import ValidationError

Shape = tuple[int, ...]

# wasi-nn dimensions are u32, and tensor data a list<u8> (u32 length).
_MAX_DIM = (1 << 32) - 1
_MAX_BYTES = (1 << 32) - 1
# The most axes a tensor may have (numpy's limit too); also bounds recursion.
MAX_RANK = 64


class Tensor:
    """An n-dimensional array of one of wasi-nn's seven element types.

    ``data`` may be:

    - ``bytes``, ``bytearray`` or a byte ``memoryview``: the raw element bytes
      (little-endian, row-major). ``dtype`` defaults to ``"u8"``; ``shape``
      defaults to one axis. ``bytes`` are kept as they are, never copied.
    - ``array.array`` or any typed buffer (a numpy array natively): its items,
      dtype and shape are taken from the buffer unless given.
    - nested lists or tuples of numbers, or a single number: floats default to
      ``"f32"``, integers and bools to ``"i64"``.
    - another ``Tensor`` (reshaped or converted if ``shape``/``dtype`` differ).

    ``dtype`` is one of ``"f16"``, ``"bf16"``, ``"f32"``, ``"f64"``, ``"u8"``,
    ``"i32"``, ``"i64"`` (numpy spellings such as ``"float32"`` work too).
    Values are converted when ``dtype`` differs from the data's own type;
    raw bytes are never converted, only reinterpreted.

    Example::

        >>> t = Tensor([[1, 2, 3], [4, 5, 6]], dtype="f32")
        >>> t.shape, t.dtype
        ((2, 3), 'f32')
        >>> t.argmax(), t.topk(2)
        (5, [(5, 6.0), (4, 5.0)])
        >>> Tensor(t.tobytes(), shape=(3, 2), dtype="f32").tolist()
        [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    """

    __slots__ = ("_data", "_shape", "_dtype")

    def __init__(
        self,
        data: Any,
        shape: Iterable[int] | None = None,
        dtype: Any = None,
    ) -> None:
        want = _dtypes.canonical(dtype) if dtype is not None else None
        given_shape = _check_shape(shape) if shape is not None else None
        raw, own_shape, own_dtype = _ingest(data, want)
        dt = want or own_dtype
        if raw is None:  # data came as numbers: pack them now
            values, own_shape = own_shape
            raw = _encode_numbers(values, dt)
        elif want is not None and own_dtype not in (want, None):
            # A typed buffer of another dtype: convert by value.
            raw = _convert(raw, own_dtype, want)
        itemsize = _dtypes.ITEMSIZE[dt]
        if given_shape is None:
            if own_shape is None:
                if len(raw) % itemsize:
                    raise ValidationError(
                        f"{len(raw)} bytes is not a whole number of {dt} elements "
                        f"({itemsize} bytes each)"
                    )
                own_shape = (len(raw) // itemsize,)
            given_shape = own_shape
        need = math.prod(given_shape) * itemsize
        if len(raw) != need:
            raise ValidationError(
                f"{len(raw)} bytes of data do not fill shape {list(given_shape)} of {dt}: "
                f"that needs {math.prod(given_shape)} x {itemsize} = {need} bytes"
            )
        self._data: bytes = raw
        self._shape: Shape = given_shape
        self._dtype: str = dt

    @classmethod
    def _wrap(cls, data: bytes, shape: Sequence[int], dtype: str) -> Tensor:
        """Adopt trusted host bytes without copying or re-checking them."""
        self = cls.__new__(cls)
        self._data = data
        self._shape = tuple(shape)
        self._dtype = dtype
        return self

    @classmethod
    def zeros(cls, shape: Iterable[int], dtype: Any = "f32") -> Tensor:
        """A tensor of zeros, e.g. the first recurrent state of a model.

        >>> Tensor.zeros((2, 1, 128)).shape
        (2, 1, 128)
        """
        dims = _check_shape(shape)
        dt = _dtypes.canonical(dtype)
        nbytes = math.prod(dims) * _dtypes.ITEMSIZE[dt]
        if nbytes > _MAX_BYTES:
            raise ValidationError(
                f"shape {list(dims)} of {dt} is {nbytes} bytes; a wasi-nn tensor holds at most "
                f"{_MAX_BYTES} (4 GiB - 1)"
            )
        try:
            return cls._wrap(bytes(nbytes), dims, dt)
        except MemoryError:
            raise ValidationError(f"not enough memory for {nbytes} bytes of zeros") from None

    # ------------------------------------------------------------ properties

    @property
    def shape(self) -> Shape:
        """The dimensions, outermost first, e.g. ``(1, 10)``."""
        return self._shape

    @property
    def dtype(self) -> str:
        """The element type, e.g. ``"f32"``."""
        return self._dtype

    @property
    def ndim(self) -> int:
        """The number of axes (0 for a scalar)."""
        return len(self._shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        return math.prod(self._shape)

    @property
    def nbytes(self) -> int:
        """The length of the element bytes."""
        return len(self._data)

    @property
    def data(self) -> memoryview:
        """A read-only, zero-copy view of the element bytes."""
        return memoryview(self._data)

    def tobytes(self) -> bytes:
        """The element bytes (the tensor's own ``bytes`` object, not a copy)."""
        return self._data

    # ------------------------------------------------------------ values

    def tolist(self) -> Any:
        """The values as (nested) Python lists; a number for a scalar.

        >>> Tensor([1.5, 2.5], dtype="f16").tolist()
        [1.5, 2.5]
        """
        flat = _dtypes.decode(self._data, self._dtype)
        if not self._shape:
            return flat[0]
        return _nest(flat, self._shape)

    def item(self) -> float | int:
        """The single value of a one-element tensor.

        >>> Tensor([[0.25]]).item()
        0.25
        """
        if self.size != 1:
            raise ValidationError(
                f"item() needs a tensor with exactly one element; this one has shape "
                f"{list(self._shape)} ({self.size} elements)"
            )
        return _dtypes.decode(self._data, self._dtype)[0]

    def argmax(self, axis: int | None = None) -> Any:
        """Index of the largest value (of the first NaN, if any, as numpy does).

        With ``axis=None`` the index is into the flattened tensor. With an axis
        the result has one index per position of the other axes, as a nested
        list (a number for a 1-D tensor): ``axis=-1`` gives one class per row
        of a batch. Ties go to the first index. Works on the raw bytes, at
        most a few thousand values at a time as Python numbers.

        >>> Tensor([[0.1, 0.9], [0.8, 0.2]]).argmax(axis=-1)
        [1, 0]
        >>> Tensor([[0.1, 0.9], [0.8, 0.2]]).argmax(axis=0)
        [1, 0]
        """
        if not self._data:
            raise ValidationError("argmax() of an empty tensor")
        buf, view = _flat_view(self._data, self._dtype)
        special = _may_be_nan(buf, view, 0, len(view))
        if axis is None:
            return _first_max(buf, view, 0, len(view), special)
        ndim = self.ndim
        if isinstance(axis, bool) or not isinstance(axis, int) or not -ndim <= axis < ndim:
            raise ValidationError(
                f"argmax axis must be None or an integer from {-ndim} to {ndim - 1} "
                f"for shape {list(self._shape)}, not {axis!r}"
            )
        axis %= ndim
        inner = math.prod(self._shape[axis + 1 :])
        best = _argmax_lines(buf, view, self._shape[axis], inner, special)
        rest = self._shape[:axis] + self._shape[axis + 1 :]
        return _nest(best, rest) if rest else best[0]

    def topk(self, k: int) -> list[tuple[int, float | int]]:
        """The ``k`` largest values of the flattened tensor as ``(index, value)``.

        Sorted from largest to smallest; ties keep the lower index first.
        NaN values are not ordered: leave them out before ranking if present.
        Works on the raw bytes: for a small ``k`` only the values that can
        make the top ``k`` are ever turned into Python numbers.

        >>> Tensor([0.1, 0.7, 0.2]).topk(2)
        [(1, 0.699999988079071), (2, 0.20000000298023224)]
        """
        if k < 0:
            raise ValidationError(f"topk needs k >= 0, not {k}")
        buf, view = _flat_view(self._data, self._dtype)
        n = len(view)
        k = min(k, n)
        if k == 0:
            return []
        if _may_be_nan(buf, view, 0, n) and any(map(math.isnan, view)):
            # NaN breaks the ordering that the chunked search relies on; rank
            # exactly as before (heapq.nlargest, stable like sorted).
            flat = _dtypes.decode(self._data, self._dtype)
            ranked = heapq.nlargest(k, range(n), key=flat.__getitem__)
            return [(i, flat[i]) for i in ranked]
        candidates = _top_candidates(buf, view, 0, n, k, n // 64)
        if candidates is not None:
            # (value, -index): sorts by value, then the lower index first.
            best = sorted(((view[i], -i) for i in candidates), reverse=True)[:k]
            return [(-negative, value) for value, negative in best]
        if 2 * k * _TOPK_CHUNK > n:
            # Most of the tensor could be in the answer: one stable sort.
            ranked = sorted(range(n), key=view.__getitem__, reverse=True)
            return [(i, view[i]) for i in ranked[:k]]
        return _topk_chunked(view, k)

    def reshape(self, *shape: int | Iterable[int]) -> Tensor:
        """The same bytes under another shape with as many elements.

        >>> Tensor(bytes(8), dtype="u8").reshape(2, 4).shape
        (2, 4)
        """
        dims: Any = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return Tensor(self._data, shape=dims, dtype=self._dtype)

    def astype(self, dtype: Any) -> Tensor:
        """A copy converted value by value to another dtype.

        >>> Tensor([1.5, -2.0]).astype("bf16").tolist()
        [1.5, -2.0]
        """
        dt = _dtypes.canonical(dtype)
        if dt == self._dtype:
            return self
        return Tensor._wrap(_convert(self._data, self._dtype, dt), self._shape, dt)

    # ------------------------------------------------------------ dunder

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a scalar tensor")
        return self._shape[0]

    def __repr__(self) -> str:
        if self.size <= 8:
            body = repr(self.tolist())
        else:
            body = f"{self.nbytes} bytes"
        return f"Tensor({body}, shape={self._shape}, dtype={self._dtype!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tensor):
            return NotImplemented
        return (self._shape, self._dtype, self._data) == (other._shape, other._dtype, other._data)

    __hash__ = None  # type: ignore[assignment]


# ---------------------------------------------------------------- helpers


def _check_shape(shape: Iterable[int]) -> Shape:
    try:
        dims = tuple(shape)
    except TypeError:
        raise ValidationError(f"shape must be a sequence of integers, not {shape!r}") from None
    if len(dims) > MAX_RANK:
        raise ValidationError(f"a tensor may have at most {MAX_RANK} axes, not {len(dims)}")
    for d in dims:
        if not isinstance(d, int) or isinstance(d, bool) or not 0 <= d <= _MAX_DIM:
            raise ValidationError(
                f"shape {list(dims)} is not valid: every dimension must be an integer "
                f"from 0 to {_MAX_DIM}"
            )
    return dims


def _ingest(data: Any, want: str | None) -> tuple[bytes | None, Any, str]:
    """Classify ``data``: (raw bytes, shape or None, dtype).

    For numbers the first item is None and the second is ``(values, shape)``.
    """
    if isinstance(data, Tensor):
        return data._data, data._shape, data._dtype
    if isinstance(data, (bytes, bytearray)) or (
        isinstance(data, memoryview) and data.format in ("B", "b", "c") and data.ndim == 1
    ):
        # Plain bytes: reinterpreted as ``want``, never converted. The host
        # binding takes only ``bytes``, so other byte buffers are copied once.
        return data if isinstance(data, bytes) else bytes(data), None, want or "u8"
    if isinstance(data, array.array) or _has_buffer(data):
        view = memoryview(data)
        if not view.c_contiguous:
            raise ValidationError("the buffer is not C-contiguous; pass a contiguous copy")
        fmt_dtype = _dtypes.dtype_of_format(view.format, view.itemsize)
        raw = view.tobytes()
        if fmt_dtype is None:
            raise ValidationError(
                f"buffer format {view.format!r} has no wasi-nn dtype; supported: "
                f"{', '.join(_dtypes.DTYPES)}"
            )
        return raw, tuple(view.shape or ()) if view.ndim != 1 else None, fmt_dtype
    if isinstance(data, (int, float)):
        dtype = want or ("f32" if isinstance(data, float) else "i64")
        return None, ([data], ()), dtype
    if isinstance(data, (list, tuple)):
        flat: list[Any] = []
        shape = _flatten(data, flat, 1)
        if want is not None:
            return None, (flat, shape), want
        if not flat:
            return None, ([], shape), "f32"
        # All integers (or bools) make i64, anything with a float f32. Letting
        # array() find out keeps this at C speed on large lists.
        try:
            return array.array(_dtypes.ARRAY_CODE["i64"], flat).tobytes(), shape, "i64"
        except (TypeError, ValueError):
            return None, (flat, shape), "f32"
        except OverflowError:
            if any(isinstance(v, float) for v in flat):
                return None, (flat, shape), "f32"
            raise ValidationError(
                "an integer does not fit in i64; pass dtype='f64' or smaller values"
            ) from None
    raise ValidationError(
        f"cannot make a tensor from {type(data).__name__}; pass bytes, array.array, "
        "nested lists of numbers, a number or a Tensor"
    )


def _has_buffer(obj: Any) -> bool:
    try:
        memoryview(obj)
    except TypeError:
        return False
    except (ValueError, BufferError) as exc:  # e.g. numpy dtypes with no buffer format
        raise ValidationError(f"cannot read the buffer of {type(obj).__name__}: {exc}") from None
    return True


def _flatten(data: Sequence[Any], out: list[Any], depth: int) -> Shape:
    """Append the items of a nested list to ``out``; return its shape.

    The innermost items are not checked here: packing them (``_encode_numbers``)
    rejects anything that is not a number.
    """
    if depth > MAX_RANK:
        raise ValidationError(
            f"nested lists deeper than {MAX_RANK} levels (or a list that contains itself)"
        )
    if not data:
        return (0,)
    if isinstance(data[0], (list, tuple)):
        inner = _flatten(data[0], out, depth + 1)
        for row in data[1:]:
            if not isinstance(row, (list, tuple)) or _flatten(row, out, depth + 1) != inner:
                raise ValidationError(
                    "nested lists are ragged: every row at one depth must have the same length"
                )
        return (len(data), *inner)
    out.extend(data)
    return (len(data),)


def _encode_numbers(values: list[Any], dtype: str) -> bytes:
    """Pack numbers; whole floats are accepted for integer dtypes."""
    try:
        return _dtypes.encode(values, dtype)
    except ValidationError:
        if dtype in _dtypes.FLOATS or not any(isinstance(v, float) for v in values):
            raise
    return _dtypes.encode([_float_to_int(v, dtype) for v in values], dtype)


def _convert(raw: bytes, src: str, dst: str) -> bytes:
    """``src`` bytes as ``dst`` bytes, value by value, rounding like numpy."""
    values = _dtypes.decode(raw, src)
    if dst in _dtypes.FLOATS and src in ("i32", "i64"):
        bits = _dtypes.SIGNIFICAND[dst]
        limit = 1 << bits
        if values and (max(values) > limit or min(values) < -limit):
            values = [_dtypes.round_int(v, bits) for v in values]  # type: ignore[arg-type]
        return _dtypes.encode(values, dst)
    return _encode_numbers(values, dst)


def _float_to_int(value: float | int, dtype: str) -> int:
    if isinstance(value, float):
        if not value.is_integer():
            raise ValidationError(
                f"{value!r} is not a whole number and cannot be stored as {dtype}; "
                "round it first or use a float dtype"
            )
        return int(value)
    return value


def _nest(flat: list[Any], shape: Shape) -> Any:
    if len(shape) <= 1:
        return flat
    step = math.prod(shape[1:])
    return [_nest(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]


# memoryview formats of the dtypes whose bytes can be viewed as they are
# (little-endian, like wasm32 and the x86/ARM hosts; see _dtypes).
_VIEW_FORMAT = {dt: _dtypes.ARRAY_CODE[dt] for dt in ("f32", "f64", "u8", "i32", "i64")}
# memoryview reads IEEE halves ("e") from Python 3.12; the guest's CPython has it.
if sys.version_info >= (3, 12):
    _VIEW_FORMAT["f16"] = "e"

# NaN (and inf) has every exponent bit set, and the top byte of a float holds
# the sign and the exponent's high bits (7 of the 8 or 11 of f32, bf16 and
# f64; all 5 of f16's): elements whose top bytes are none of these hold no NaN.
_NAN_TOP_BYTES = {
    "e": [b for b in range(256) if b & 0x7C == 0x7C],
    "f": [0x7F, 0xFF],
    "d": [0x7F, 0xFF],
}

# Top bytes in the order of the values they begin, largest first, as far as
# the top byte alone orders values. Floats: only positive ones (a negative
# float's bits run backwards, and 0x00 begins +0.0, which equals -0.0 under
# 0x80). Integers: all, negatives (two's complement) after non-negatives.
_POSITIVE_FLOAT_TOPS = bytes(range(0x7F, 0, -1))
_SIGNED_TOPS = bytes(range(0x7F, -1, -1)) + bytes(range(0xFF, 0x7F, -1))
_ORDERED_TOPS = {"e": _POSITIVE_FLOAT_TOPS, "f": _POSITIVE_FLOAT_TOPS, "d": _POSITIVE_FLOAT_TOPS}
_ORDERED_TOPS.update({code: _SIGNED_TOPS for code in ("i", "l", "q")})
_ORDERED_TOPS["B"] = bytes(range(0xFF, -1, -1))
# The top bytes that are not in that order: they never hold a candidate.
_UNORDERED_TOPS = {
    fmt: bytes(sorted(set(range(256)) - set(order))) for fmt, order in _ORDERED_TOPS.items()
}

# topk looks for its candidates chunk by chunk when top bytes cannot narrow
# them down; see _topk_chunked.
_TOPK_CHUNK = 1024
# argmax along an axis: lines shorter than this cost less as small lists of
# at most _SCRATCH values (a few at a time) than as one memoryview each.
_SHORT_LINE = 64
_SCRATCH = 8192


def _flat_view(data: bytes, dtype: str) -> tuple[bytes | bytearray, memoryview[Any]]:
    """The elements as a flat memoryview, and the contiguous bytes under it.

    Values read through the view are exactly those ``_dtypes.decode`` gives.
    bf16 (which has no buffer format) and f16 before Python 3.12 are widened
    to f32, which holds every one of their values exactly.
    """
    fmt = _VIEW_FORMAT.get(dtype)
    if fmt is not None:
        return data, _cast(data, fmt)
    if dtype == "bf16":
        # A bf16 is the top half of an f32: zero low halves give the same values.
        wide = bytearray(2 * len(data))
        wide[2::4] = data[0::2]
        wide[3::4] = data[1::2]
        return wide, _cast(wide, "f")
    # f16 before Python 3.12: struct reads halves, a bounded piece at a time.
    widened = array.array("f")
    for start in range(0, len(data), 2 * _SCRATCH):
        piece = data[start : start + 2 * _SCRATCH]
        widened.extend(struct.unpack(f"<{len(piece) // 2}e", piece))
    halves = widened.tobytes()
    return halves, _cast(halves, "f")


def _cast(data: bytes | bytearray, fmt: str) -> memoryview[Any]:
    # typeshed spells out only some format letters (not "e") as literals.
    view: memoryview[Any] = memoryview(data).cast(fmt)  # type: ignore[call-overload]
    return view


def _may_be_nan(buf: bytes | bytearray, view: memoryview[Any], start: int, stop: int) -> bool:
    """False when elements ``start:stop`` certainly hold no NaN (cheap, on the bytes)."""
    top_bytes = _NAN_TOP_BYTES.get(view.format)
    if top_bytes is None:
        return False  # an integer dtype
    size = view.itemsize
    tops = buf[start * size + size - 1 : stop * size : size]
    return any(byte in tops for byte in top_bytes)


def _first_max(
    buf: bytes | bytearray, view: memoryview[Any], start: int, stop: int, special: bool
) -> int:
    """Index, from ``start``, of the first NaN or else the first largest in ``start:stop``.

    ``special`` says whether the tensor may hold NaN anywhere (``_may_be_nan``).
    """
    row = view[start:stop]
    if special and _may_be_nan(buf, view, start, stop):
        nan = next(compress(count(), map(math.isnan, row)), None)
        if nan is not None:
            return nan  # numpy's rule: the first NaN is the maximum
    size = view.itemsize
    # Usually the largest value's top byte is rare (one class of a softmax):
    # then only the few elements that share it are read as numbers.
    candidates = _top_candidates(buf, view, start, stop, 1, max(8, (stop - start) // 32))
    if candidates is not None:
        if len(candidates) == 1:
            return candidates[0]
        values = [view[start + i] for i in candidates]
        return candidates[values.index(max(values))]
    # max() returns the first of equal largest values, so the first element
    # with its exact bytes is that element (for -0.0 and 0.0 too). bytes.find
    # looks for them at C speed; a match straddling two elements is skipped.
    pattern = struct.pack(view.format, max(row))
    end = stop * size
    pos = buf.find(pattern, start * size, end)
    while pos % size and pos >= 0:
        pos = buf.find(pattern, pos - pos % size + size, end)
    assert pos >= 0, "max() returned a value the row does not hold"
    return pos // size - start


def _top_candidates(
    buf: bytes | bytearray, view: memoryview[Any], start: int, stop: int, k: int, limit: int
) -> list[int] | None:
    """Where the ``k`` largest of elements ``start:stop`` are, judged by top bytes alone.

    The indices (from ``start``, ascending) of the elements whose top bytes
    are the fewest largest ones that ``k`` elements have: every other element
    is smaller than each of these. None when that is more than ``limit``
    elements, or when top bytes cannot tell (floats at zero or below). The
    elements must hold no NaN. Works at C speed on the bytes: one
    ``bytes.translate`` and a few ``bytes.count`` over the top bytes.
    """
    order = _ORDERED_TOPS[view.format]
    size = view.itemsize
    tops = buf[start * size + size - 1 : stop * size : size]
    # The largest of a sample is a first guess at the largest top byte; one
    # pass keeps only the top bytes above it, usually none or a few.
    guess = struct.pack(view.format, max(view[start : stop : max(1, (stop - start) // 256)]))[-1]
    at = order.find(guess)
    if at < 0:  # a float at zero or below: no guess
        at = len(order)
    above = tops.translate(None, order[at:] + _UNORDERED_TOPS[view.format])
    if above:
        at = next(i for i, top in enumerate(order) if top in above)
    elif at == len(order):
        return None
    if size == 1:
        # A u8's top byte is its value: the first k found, value by value, are it.
        first: list[int] = []
        for top in order[at:]:
            index = tops.find(top)
            while index >= 0 and len(first) < k:
                first.append(index)
                index = tops.find(top, index + 1)
            if len(first) == k:
                break
        return sorted(first)
    held = tops.count(order[at])
    end = at + 1
    while held < k:  # take the next top bytes down, a few at most
        if end == len(order) or end - at > 16:
            return None
        held += tops.count(order[end])
        end += 1
    if held > limit:
        return None
    found: list[int] = []
    for top in order[at:end]:
        index = tops.find(top)
        while index >= 0:
            found.append(index)
            index = tops.find(top, index + 1)
    found.sort()
    return found


def _argmax_lines(
    buf: bytes | bytearray, view: memoryview[Any], length: int, inner: int, special: bool
) -> list[int]:
    """``_first_max`` of every line of ``length`` elements ``inner`` apart, in order.

    The tensor is seen as [outer, length, inner]; lines run along the middle.
    """
    n = len(view)
    best: list[int] = []
    if inner == 1 and length >= _SHORT_LINE:  # contiguous rows
        for start in range(0, n, length):
            best.append(_first_max(buf, view, start, start + length, special))
    elif inner == 1:
        step = max(1, _SCRATCH // length) * length
        for block in range(0, n, step):
            values = view[block : block + step].tolist()
            rows = (values[i : i + length] for i in range(0, len(values), length))
            _first_max_of_lines(rows, special, best)
    elif length >= _SHORT_LINE:
        for base in range(0, n, length * inner):
            for column in range(base, base + inner):
                # The line is strided in the tensor; its own copy is contiguous.
                line = view[column : base + length * inner : inner].tobytes()
                best.append(_first_max(line, _cast(line, view.format), 0, length, special))
    else:
        # Short strided lines: read a few columns of every row as lists and
        # zip them into lines.
        width = max(1, _SCRATCH // length)
        for base in range(0, n, length * inner):
            for first in range(base, base + inner, width):
                last = min(first + width, base + inner)
                pieces = [
                    view[first + j * inner : last + j * inner].tolist() for j in range(length)
                ]
                _first_max_of_lines(zip(*pieces, strict=True), special, best)
    return best


def _first_max_of_lines(lines: Iterable[Sequence[Any]], special: bool, out: list[int]) -> None:
    """Append ``_first_max`` of each line, given as a list or tuple of values."""
    for line in lines:
        if special:
            nan = next(compress(count(), map(math.isnan, line)), None)
            if nan is not None:
                out.append(nan)
                continue
        # index() finds the first value equal to the first largest: that one.
        out.append(line.index(max(line)))


def _topk_chunked(view: memoryview[Any], k: int) -> list[tuple[int, float | int]]:
    """``topk`` for a tensor with no NaN and ``k`` well below its size.

    Every one of the top ``k`` values is at least the k-th largest of the
    chunk maxima (call it T), since those k maxima are k values >= T. So only
    chunks whose maximum reaches T hold candidates: all of those whose maximum
    exceeds T (fewer than k), and, for the values equal to T (ties go to the
    lower index), chunks whose maximum is T in index order until enough are
    found. Only candidates become Python numbers.
    """
    n = len(view)
    starts = range(0, n, _TOPK_CHUNK)
    maxima = [max(view[s : s + _TOPK_CHUNK]) for s in starts]
    threshold = heapq.nlargest(k, maxima)[-1]
    found: list[tuple[Any, int]] = []  # (value, -index): sorts by value, then lower index
    above = 0  # how many found values exceed the threshold
    for start, top in zip(starts, maxima, strict=True):
        if top > threshold:
            chunk = view[start : start + _TOPK_CHUNK]
            at_least = map(operator.le, repeat(threshold), chunk)
            keep = compress(range(start, start + len(chunk)), at_least)
            for i in keep:
                found.append((view[i], -i))
                above += view[i] > threshold
    tied = 0
    for start, top in zip(starts, maxima, strict=True):
        if tied >= k - above:
            break
        if top == threshold:
            chunk = view[start : start + _TOPK_CHUNK]
            equal = map(operator.eq, repeat(threshold), chunk)
            keep = compress(range(start, start + len(chunk)), equal)
            for i in keep:
                found.append((view[i], -i))
                tied += 1
    found.sort(reverse=True)
    return [(-negative, value) for value, negative in found[:k]]
