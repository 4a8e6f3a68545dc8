"""Finding the largest values of a tensor's raw bytes: ``argmax`` and ``topk``.

Decoding a whole tensor into Python numbers costs more than the search
itself inside a component (0.2-0.5 s for a [6, 40, 6625] recogniser output),
so these functions read the bytes through ``memoryview.cast`` and use the
top byte of each element to skip the values that cannot win. Only the
candidates ever become Python numbers.
"""

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


def argmax(data: bytes, dtype: str) -> int:
    """Index of the largest element of non-empty ``data`` (the first NaN
    wins, ties go to the first index)."""
    buf, view = _flat_view(data, dtype)
    return _first_max(buf, view, 0, len(view), _may_be_nan(buf, view, 0, len(view)))


def argmax_along(data: bytes, dtype: str, length: int, inner: int) -> list[int]:
    """argmax along one axis of non-empty ``data``: ``length`` is that axis's
    size and ``inner`` the product of the dimensions after it; one index per
    position of the other axes, in row-major order."""
    buf, view = _flat_view(data, dtype)
    special = _may_be_nan(buf, view, 0, len(view))
    return _argmax_lines(buf, view, length, inner, special)


def topk(data: bytes, dtype: str, k: int) -> list[tuple[int, float | int]]:
    """The ``k`` (>= 0) largest elements as ``(index, value)``, largest first,
    ties by lower index."""
    buf, view = _flat_view(data, dtype)
    n = len(view)
    k = min(k, n)
    if k == 0:
        return []
    if _may_be_nan(buf, view, 0, n) and any(map(math.isnan, view)):
        # NaN breaks the ordering that the chunked search relies on; rank
        # exactly as before (heapq.nlargest, stable like sorted).
        flat = _dtypes.decode(data, dtype)
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
