"""A small pure-Python PNG reader (zlib only): 8-bit grayscale or colour images."""

from __future__ import annotations

import struct
import zlib

SIGNATURE = b"\x89PNG\r\n\x1a\n"
# colour type -> channels; palette (3) images are refused.
_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}
_COLOUR_NAMES = {0: "grayscale", 2: "RGB", 3: "palette", 4: "grayscale+alpha", 6: "RGBA"}


class PNGError(ValueError):
    """The file is not a PNG this reader can decode; the message says why."""


def read_gray(data: bytes, name: str = "image") -> tuple[int, int, list[int]]:
    """Decode a PNG to (width, height, gray pixels 0..255 row by row).

    Colour images are reduced to luma (ITU-R BT.601 weights); alpha is ignored.

    >>> w, h, pixels = read_gray(open("samples/digit3_001.png", "rb").read())
    """
    if not data.startswith(SIGNATURE):
        raise PNGError(f"{name} is not a PNG file (no PNG signature)")
    pos = len(SIGNATURE)
    header: tuple[int, ...] | None = None
    idat: list[bytes] = []
    while True:
        if pos + 8 > len(data):
            raise PNGError(f"{name} is truncated: it ends before its IEND chunk")
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        crc = data[pos + 8 + length : pos + 12 + length]
        if len(body) != length or len(crc) != 4:
            raise PNGError(f"{name} is truncated inside its {kind.decode('latin-1')} chunk")
        if struct.unpack(">I", crc)[0] != zlib.crc32(kind + body):
            raise PNGError(
                f"{name} is corrupt: the {kind.decode('latin-1')} chunk fails its CRC check"
            )
        pos += 12 + length
        if kind == b"IHDR":
            if length != 13:
                raise PNGError(f"{name} is corrupt: IHDR is {length} bytes, not 13")
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    if header is None:
        raise PNGError(f"{name} is corrupt: it has no IHDR chunk")
    width, height, depth, colour, _compression, _filter, interlace = header
    if colour not in _CHANNELS:
        raise PNGError(
            f"{name} is a {_COLOUR_NAMES.get(colour, f'colour type {colour}')} PNG; "
            "save it as 8-bit grayscale, RGB or RGBA"
        )
    if depth != 8:
        raise PNGError(f"{name} has {depth}-bit samples; save it with 8 bits per sample")
    if interlace:
        raise PNGError(f"{name} is interlaced; save it without interlacing")
    channels = _CHANNELS[colour]
    try:
        raw = zlib.decompress(b"".join(idat))
    except zlib.error as exc:
        raise PNGError(f"{name} is corrupt: its image data does not decompress ({exc})") from None
    stride = width * channels
    if len(raw) != height * (stride + 1):
        raise PNGError(
            f"{name} is corrupt: {len(raw)} bytes of image data for {width}x{height} "
            f"{_COLOUR_NAMES[colour]}, expected {height * (stride + 1)}"
        )
    rows = _unfilter(raw, height, stride, channels, name)
    if channels <= 2:
        gray = [row[x * channels] for row in rows for x in range(width)]
    else:
        gray = [
            (
                299 * row[x * channels]
                + 587 * row[x * channels + 1]
                + 114 * row[x * channels + 2]
                + 500
            )
            // 1000
            for row in rows
            for x in range(width)
        ]
    return width, height, gray


def _unfilter(raw: bytes, height: int, stride: int, bpp: int, name: str) -> list[bytearray]:
    rows: list[bytearray] = []
    prev = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind = raw[start]
        line = bytearray(raw[start + 1 : start + 1 + stride])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif kind == 2:
            for i in range(stride):
                line[i] = (line[i] + prev[i]) & 0xFF
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        elif kind != 0:
            raise PNGError(f"{name} is corrupt: row {y} has unknown filter type {kind}")
        rows.append(line)
        prev = line
    return rows
