"""Binary PGM (P5) and PPM (P6) decoding.

Samples are scaled to 0..255 as Pillow scales them: ``min(255, round(v /
maxval * 255))`` with Python's ``round`` (halves to even); a maxval above 255
means two big-endian bytes per sample.
"""

from __future__ import annotations

import array
import sys

from .._errors import ImageError
from .core import Canvas, ImageInfo, check_size

_WHITESPACE = b" \t\n\r\x0b\x0c"
_KINDS = {b"P5": 1, b"P6": 3}
_OTHER = {
    b"P1": "ASCII bitmap",
    b"P2": "ASCII graymap",
    b"P3": "ASCII pixmap",
    b"P4": "bitmap",
    b"P7": "PAM",
}

Info = dict[str, object]


def is_pnm(data: bytes) -> bool:
    """True when ``data`` starts like a Netpbm file (P1 to P7 then whitespace)."""
    return len(data) >= 3 and data[:1] == b"P" and data[1] in b"1234567" and data[2] in _WHITESPACE


def probe_ppm(data: bytes, name: str) -> ImageInfo:
    """What the header of P5/P6 ``data`` says.

    >>> probe_ppm(b"P6 2 1 255 " + bytes(6), "a.ppm")
    ImageInfo(format='ppm', width=2, height=1, channels=3)
    """
    channels, width, height, _, _ = _header(data, name, None)
    return ImageInfo("ppm", width, height, channels)


def decode_ppm(data: bytes, name: str, max_pixels: int) -> tuple[int, int, int, bytes, Info]:
    """Decode P5/P6 ``data`` to (width, height, channels 1 or 3, 8-bit pixels, info).

    >>> decode_ppm(b"P5 2 1 255 \\x00\\xff", "a.pgm", 1 << 26)[:4]
    (2, 1, 1, b'\\x00\\xff')
    """
    channels, width, height, maxval, pos = _header(data, name, max_pixels)
    wide = maxval > 255
    count = width * height * channels
    size = count * (2 if wide else 1)
    if len(data) - pos < size:
        raise ImageError(
            f"{name} is truncated: {max(0, len(data) - pos)} bytes of pixels, the header implies "
            f"{size}"
        )
    if maxval == 255:
        return width, height, channels, data[pos : pos + count], {"format": "ppm"}
    # A table from each sample value to its 8-bit one; values above maxval
    # clip to 255, as in Pillow.
    table = bytes(min(255, round(v / maxval * 255)) for v in range(maxval + 1))
    table += b"\xff" * ((65536 if wide else 256) - len(table))
    canvas = Canvas(count)
    view = memoryview(data)
    for start in range(0, count, _BAND):
        stop = min(count, start + _BAND)
        if not wide:
            canvas.view[start:stop] = data[pos + start : pos + stop].translate(table)
            continue
        samples = array.array("H")
        samples.frombytes(view[pos + 2 * start : pos + 2 * stop])
        if sys.byteorder == "little":
            samples.byteswap()  # PGM/PPM samples are big-endian
        canvas.view[start:stop] = bytes(map(table.__getitem__, samples))
    return width, height, channels, canvas.finish(), {"format": "ppm"}


# Samples converted at a time: the memory a decode needs beyond its pixels.
_BAND = 1 << 20


def _header(data: bytes, name: str, max_pixels: int | None) -> tuple[int, int, int, int, int]:
    """(channels, width, height, maxval, where the pixels start), or ImageError."""
    magic = data[:2]
    if magic in _OTHER:
        raise ImageError(
            f"{name} is a Netpbm {_OTHER[magic]} file ({magic.decode()}); "
            "only binary PGM (P5) and PPM (P6) are supported"
        )
    if magic not in _KINDS:
        raise ImageError(f"{name} is not a PGM/PPM file (no P5 or P6 signature)")
    channels = _KINDS[magic]
    pos = 2
    fields: list[int] = []
    while len(fields) < 3:
        # whitespace and comments (from '#' to the end of the line) separate the fields
        while pos < len(data) and (data[pos] in _WHITESPACE or data[pos] == 0x23):
            if data[pos] == 0x23:
                end = data.find(b"\n", pos)
                pos = len(data) if end < 0 else end
            pos += 1
        start = pos
        while pos < len(data) and 0x30 <= data[pos] <= 0x39 and pos - start < 10:
            pos += 1
        if pos == start:
            what = "truncated in" if pos >= len(data) else "corrupt:"
            raise ImageError(f"{name} is {what} its header (expected a number)")
        fields.append(int(data[start:pos]))
    if pos >= len(data) or data[pos] not in _WHITESPACE:
        raise ImageError(f"{name} is corrupt: its header does not end with whitespace")
    width, height, maxval = fields
    check_size(name, width, height, max_pixels)
    if not 0 < maxval < 65536:
        raise ImageError(f"{name} is corrupt: maxval {maxval} is not in 1..65535")
    return channels, width, height, maxval, pos + 1
