"""WebP decoding and encoding (libwebp 1.2.4, in C: ``_webp_codec``).

Decoding gives what Pillow gives: RGB for an opaque file, RGBA when the file
has alpha (a lossy file with an ``ALPH`` chunk, or a lossless one whose header
says alpha is used), byte for byte Pillow's pixels for lossy and lossless
files alike (libwebp's lossy decoding is exact integer arithmetic, the same
in every version). Animated WebPs are refused: an animation is a sequence of
frames composited on a canvas, not one image.

Memory: the headers' size is checked against ``max_pixels`` before anything
is allocated; libwebp then writes the pixels into the result, allocated once
at its final size, and needs at most 4 bytes a pixel of its own while it
works (a lossless file's ARGB image; a lossy one needs a few rows, plus its
alpha plane), well within wasinn.image's three times the pixels.

Encoding writes RGB or RGBA; gray and gray+alpha are widened to RGB and RGBA
first (WebP has no gray). An RGBA image whose alpha is all 255 is written
without alpha, and so decodes as RGB. Lossy files use Pillow's defaults at
the given quality; lossless ones use ``quality`` as the effort, as Pillow
does, and keep the colour of fully transparent pixels, so that they decode
to exactly the pixels encoded.
"""

from __future__ import annotations

from .. import _webp_codec
from .._errors import ImageError
from . import exif
from .core import ImageInfo, check_size

Info = dict[str, object]


def is_webp(data: bytes) -> bool:
    """A RIFF container of form type WEBP."""
    return data[:4] == b"RIFF" and data[8:12] == b"WEBP"


def _headers(data: bytes, name: str, max_pixels: int | None) -> tuple[int, int, int, bool]:
    """(width, height, channels decode gives, lossless) of a still WebP, or ImageError."""
    try:
        width, height, alpha, animated, lossless = _webp_codec.probe(data)
    except ValueError as exc:
        raise ImageError(f"{name} {exc}") from None
    if animated:
        raise ImageError(
            f"{name} is an animated WebP, which is not supported (only still images are)"
        )
    check_size(name, width, height, max_pixels)
    return width, height, 4 if alpha else 3, lossless


def probe_webp(data: bytes, name: str) -> ImageInfo:
    """What the headers of WebP ``data`` say (RIFF, VP8X and the frame header).

    >>> probe_webp(open("a.webp", "rb").read(), "a.webp")
    ImageInfo(format='webp', width=640, height=480, channels=3)
    """
    width, height, channels, _ = _headers(data, name, None)
    return ImageInfo("webp", width, height, channels)


def decode_webp(data: bytes, name: str, max_pixels: int) -> tuple[int, int, int, bytes, Info]:
    """Decode WebP ``data`` to (width, height, channels, 8-bit interleaved
    pixels, info); ``info`` is ``{"format": "webp", "lossless": bool,
    "orientation": the EXIF orientation 1-8 or None}``.

    >>> w, h, ch, pixels, info = decode_webp(open("a.webp", "rb").read(), "a.webp", 1 << 26)
    >>> ch, info
    (3, {'format': 'webp', 'lossless': False, 'orientation': None})
    """
    width, height, channels, lossless = _headers(data, name, max_pixels)
    try:
        pixels = _webp_codec.decode(data, channels)
    except ValueError as exc:
        raise ImageError(f"{name} {exc}") from None
    orientation = orientation_webp(data)
    return (
        width,
        height,
        channels,
        pixels,
        {
            "format": "webp",
            "lossless": lossless,
            "orientation": orientation,
        },
    )


#: RIFF chunks ``_exif_chunk`` looks at before it gives up.
_MAX_CHUNKS = 64


def orientation_webp(data: bytes) -> int | None:
    """The EXIF orientation (1-8) in the ``EXIF`` chunk of WebP ``data``, or
    None: a walk over chunk headers, nothing decoded.

    >>> orientation_webp(open("a.webp", "rb").read())
    6
    """
    return exif.chunk_orientation(_exif_chunk(data))


def _exif_chunk(data: bytes) -> bytes | None:
    """The payload of the ``EXIF`` chunk of a WebP's RIFF container, or None.

    RIFF chunks: a FourCC, a little-endian 32-bit size and the payload, padded
    to an even length; the container's own header is the first 12 bytes. A
    still image has a handful (VP8X, ICCP, ALPH, VP8/VP8L, EXIF, XMP): the
    walk gives up after ``_MAX_CHUNKS``, so a file of tiny unknown chunks
    costs no more.
    """
    pos = 12
    for _ in range(_MAX_CHUNKS):
        if pos + 8 > len(data):
            break
        size = int.from_bytes(data[pos + 4 : pos + 8], "little")
        if data[pos : pos + 4] == b"EXIF":
            return data[pos + 8 : pos + 8 + size]
        pos += 8 + size + (size & 1)
    return None


def encode_webp(
    pixels: bytes, width: int, height: int, channels: int, quality: int, lossless: bool
) -> bytes:
    """A WebP file of ``pixels`` (``channels`` 1-4, validated by
    ``wasinn.image.encode``): lossy at ``quality`` 0-100, or lossless with
    ``quality`` as the effort; gray is written as RGB.

    >>> data = encode_webp(bytes(12), 2, 2, 3, 80, False)
    >>> decode_webp(data, "x.webp", 1 << 26)[:3]
    (2, 2, 3)
    """
    try:
        return _webp_codec.encode(pixels, width, height, channels, quality, lossless)
    except ValueError as exc:
        raise ImageError(f"cannot encode a {width}x{height} WebP: {exc}") from None
