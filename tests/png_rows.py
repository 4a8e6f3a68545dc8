"""PNG files whose every row uses one filter type, written with numpy: the slow
(Average, Paeth) and fast (None, Sub, Up) paths of a decoder, at any size.
Used by tests/test_image_app.py and bench/image_bench.py."""

from __future__ import annotations

import zlib

import numpy as np


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

    def chunk(kind_: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind_ + body).to_bytes(4, "big")
        return len(body).to_bytes(4, "big") + kind_ + body + crc

    ihdr = w.to_bytes(4, "big") + h.to_bytes(4, "big") + bytes([8, 2, 0, 0, 0])
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + chunk(b"IEND", b"")
    )  # fmt: skip
