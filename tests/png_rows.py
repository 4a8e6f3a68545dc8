"""PNG files whose every row uses one filter type: the slow (Average, Paeth)
and fast (None, Sub, Up) paths of a decoder, at any size, from pixels
(``png_with_filter``, numpy) or of zeros (``zero_png``: the "bombs" of issue
24, kilobytes that inflate to megapixels). Used by tests/test_image.py,
tests/test_image_app.py and bench/image_bench.py."""

from __future__ import annotations

import struct
import zlib

import numpy as np

#: Samples per pixel of each PNG colour type.
SAMPLES = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
# The PNG specification's Adam7 tile: the pass (1-7) of each pixel of every 8x8 block.
_TILE = ("16462646", "77777777", "56565656", "77777777",
         "36463646", "77777777", "56565656", "77777777")  # fmt: skip


def _adam7() -> tuple[tuple[int, int, int, int], ...]:
    passes = []
    for p in "1234567":
        xs = sorted({x for row in _TILE for x, q in enumerate(row) if q == p})
        ys = sorted({y for y, row in enumerate(_TILE) if p in row})
        passes.append((xs[0], ys[0], 8 // len(xs), 8 // len(ys)))
    return tuple(passes)


#: Adam7 passes, from the tile: first column, first row, column step, row step.
ADAM7 = _adam7()


def png_with_filter(pixels: np.ndarray, kind: int) -> bytes:
    """An RGB PNG whose every row uses filter type ``kind`` (0-4)."""
    h, w, _ = pixels.shape
    x = pixels.reshape(h, w * 3).astype(np.int32)
    a = np.zeros_like(x)
    a[:, 3:] = x[:, :-3]
    b = np.zeros_like(x)
    b[1:] = x[:-1]
    c = np.zeros_like(x)
    c[1:, 3:] = x[:-1, :-3]
    if kind == 0:
        pred = np.zeros_like(x)
    elif kind == 1:
        pred = a
    elif kind == 2:
        pred = b
    elif kind == 3:
        pred = (a + b) >> 1
    else:
        p = a + b - c
        pa, pb, pc = np.abs(p - a), np.abs(p - b), np.abs(p - c)
        pred = np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))
    rows = np.concatenate([np.full((h, 1), kind), (x - pred) & 255], axis=1).astype(np.uint8)
    return _png(w, h, 8, 2, 0, b"", zlib.compress(rows.tobytes(), 6))


def zero_png(
    width: int, height: int, kind: int, colour: int = 2, depth: int = 8, interlace: bool = False
) -> bytes:
    """A valid PNG of zeros whose every row uses filter type ``kind``, compressed
    a row at a time: 50-60 KB for 4096x4096 RGB. A palette file's one colour
    is (16, 32, 48)."""
    passes = [(width, height)]
    if interlace:
        passes = [(-(-(width - x0) // dx), -(-(height - y0) // dy)) for x0, y0, dx, dy in ADAM7]
    z = zlib.compressobj(9)
    parts = []
    for pw, ph in passes:
        if pw > 0 and ph > 0:
            row = bytes([kind]) + bytes((pw * SAMPLES[colour] * depth + 7) // 8)
            parts += [z.compress(row) for _ in range(ph)]
    parts.append(z.flush())
    plte = _chunk(b"PLTE", b"\x10\x20\x30") if colour == 3 else b""
    return _png(width, height, depth, colour, int(interlace), plte, b"".join(parts))


def _png(
    width: int, height: int, depth: int, colour: int, interlace: int, extra: bytes, idat: bytes
) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, interlace)
    return (
        b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + extra + _chunk(b"IDAT", idat)
        + _chunk(b"IEND", b"")
    )  # fmt: skip


def _chunk(kind: bytes, body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + kind + body + zlib.crc32(kind + body).to_bytes(4, "big")
