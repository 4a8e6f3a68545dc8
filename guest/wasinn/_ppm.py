"""Binary PGM (P5) and PPM (P6) decoding.

Samples are scaled to 0..255 as Pillow scales them: ``min(255, round(v /
maxval * 255))`` with Python's ``round`` (halves to even); a maxval above 255
means two big-endian bytes per sample.
"""

from __future__ import annotations

from ._imagecore import ImageError, check_size

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


def decode_ppm(data: bytes, name: str, max_pixels: int) -> tuple[int, int, int, bytes, Info]:
    """Decode P5/P6 ``data`` to (width, height, channels 1 or 3, 8-bit pixels, info).

    >>> decode_ppm(b"P5 2 1 255 \\x00\\xff", "a.pgm", 1 << 26)[:4]
    (2, 1, 1, b'\\x00\\xff')
    """
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
    pos += 1
    width, height, maxval = fields
    check_size(name, width, height, max_pixels)
    if not 0 < maxval < 65536:
        raise ImageError(f"{name} is corrupt: maxval {maxval} is not in 1..65535")
    wide = maxval > 255
    count = width * height * channels
    body = data[pos : pos + count * (2 if wide else 1)]
    if len(body) < count * (2 if wide else 1):
        raise ImageError(
            f"{name} is truncated: {len(body)} bytes of pixels, the header implies "
            f"{count * (2 if wide else 1)}"
        )
    if not wide:
        if maxval != 255:
            body = body.translate(bytes(min(255, round(v / maxval * 255)) for v in range(256)))
        return width, height, channels, body, {"format": "ppm"}
    scale = [min(255, round(v / maxval * 255)) for v in range(maxval + 1)]
    top = 255  # samples above maxval clip, as in Pillow
    pixels = bytes(
        [
            scale[v] if v <= maxval else top
            for v in map(int.__add__, [h << 8 for h in body[0::2]], body[1::2])
        ]
    )
    return width, height, channels, pixels, {"format": "ppm"}
