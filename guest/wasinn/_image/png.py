"""PNG decoding and encoding, by libspng (``ext/_png_codec.c``).

The result is 8 bits per sample. What Pillow does, and so what this does:
16-bit samples keep their high byte; 1, 2 and 4-bit gray levels are scaled to
0..255 (x255, x85, x17); palette images become RGB, or RGBA when the file has a
``tRNS`` chunk (indices past the palette read as opaque black). A ``tRNS``
colour key on a gray or RGB image is not applied (Pillow keeps it aside in
``info["transparency"]`` too); gray+alpha stays two channels. Every colour
type, bit depth and Adam7 interlacing decodes.

Strictness: every chunk's CRC is checked (ancillary chunks' too), and a file
must reach its ``IEND`` chunk; what follows ``IEND`` is ignored, and so is
image data beyond the rows the header implies (it is never inflated). Pillow
checks the CRCs before the image data only and reads files that stop after
it; both refuse the rest.

Memory: the pixels are written straight into the result, a scanline at a
time, so a decode needs its pixels plus a few scanlines, zlib's window and
at most 4 MB of ancillary chunks (text, ICC profile, EXIF), however well the
data compresses.
"""

from __future__ import annotations

from .. import _png_codec
from .._errors import ImageError
from . import exif
from .core import ImageInfo, check_size

SIGNATURE = b"\x89PNG\r\n\x1a\n"

Info = dict[str, object]


def probe_png(data: bytes, name: str) -> ImageInfo:
    """What the header of PNG ``data`` says, reading chunk headers up to the
    first IDAT (no CRC but IHDR's, no inflating).

    >>> probe_png(open("a.png", "rb").read(), "a.png")
    ImageInfo(format='png', width=640, height=480, channels=3)
    """
    try:
        width, height, channels = _png_codec.probe(data)
    except ValueError as exc:
        raise ImageError(f"{name} {exc}") from None
    return ImageInfo("png", width, height, channels)


def decode_png(data: bytes, name: str, max_pixels: int) -> tuple[int, int, int, bytes, Info]:
    """Decode PNG ``data`` to (width, height, channels, 8-bit interleaved pixels, info).

    The header is checked against ``max_pixels`` (``ImageTooLargeError``)
    before any pixel memory is allocated.

    >>> w, h, ch, pixels, info = decode_png(open("a.png", "rb").read(), "a.png", 1 << 26)
    >>> info
    {'format': 'png', 'orientation': None}
    """
    info = probe_png(data, name)
    check_size(name, info.width, info.height, max_pixels)
    try:
        width, height, channels, pixels = _png_codec.decode(data, max_pixels)
    except ValueError as exc:
        raise ImageError(f"{name} {exc}") from None
    return (
        width,
        height,
        channels,
        pixels,
        {
            "format": "png",
            "orientation": orientation_png(data),
        },
    )


def orientation_png(data: bytes) -> int | None:
    """The EXIF orientation (1-8) in the ``eXIf`` chunk of PNG ``data``, or
    None: a walk over chunk headers, nothing decoded.

    >>> orientation_png(open("a.png", "rb").read())
    6
    """
    return exif.chunk_orientation(_exif_chunk(data))


def _exif_chunk(data: bytes) -> bytes | None:
    """The payload of the ``eXIf`` chunk of a PNG the codec decoded, or None.

    Walks the chunk headers (lengths, types) up to the first IDAT: the PNG
    specification (third edition) puts eXIf before the image data, and
    stopping there keeps the walk short whatever a file's chunk count.
    """
    pos = len(SIGNATURE)
    while pos + 8 <= len(data):
        length = int.from_bytes(data[pos : pos + 4], "big")
        kind = data[pos + 4 : pos + 8]
        if kind == b"eXIf":
            return data[pos + 8 : pos + 8 + length]
        if kind in (b"IDAT", b"IEND"):
            return None
        pos += 12 + length
    return None


def encode_png(pixels: bytes, width: int, height: int, channels: int, compress_level: int) -> bytes:
    """An 8-bit PNG of ``height`` rows of ``width`` pixels of ``channels``
    (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA), at zlib level ``compress_level``
    (0-9, as Pillow's ``compress_level``); the caller has checked the arguments.

    >>> data = encode_png(bytes([0, 255] * 8), 4, 2, 2, 6)
    >>> decode_png(data, "x.png", 100)[:3]
    (4, 2, 2)
    """
    try:
        return _png_codec.encode(pixels, width, height, channels, compress_level)
    except ValueError as exc:
        raise ImageError(f"the {width}x{height} image of {channels} channels {exc}") from None
