"""JPEG files: decoded and encoded by libjpeg-turbo (``ext/_jpeg_codec.c``).

``decode_jpeg(data, name)`` returns ``(width, height, channels, pixels,
info)``: ``channels`` is 1 (gray) or 3 (RGB), ``pixels`` the samples row by
row, interleaved, and ``info`` is ``{"orientation": EXIF orientation 1-8 or
None}``. The pixels are Pillow's, byte for byte: both run libjpeg-turbo with
its defaults (islow IDCT, fancy upsampling).

``reduce=2``, ``4`` or ``8`` decodes at that scale with libjpeg-turbo's
reduced IDCTs (``scale_denom``), which is what Pillow's ``draft`` asks
for: the same pixels, ``ceil(width / reduce) x ceil(height / reduce)``. The
entropy-coded data is read whole either way, so ``max_pixels`` limits the
header's size, not the reduced one.

Decoded: baseline, extended and progressive, Huffman or arithmetic coded,
any chroma sampling, restart markers. Refused with ``ImageError``: lossless
and hierarchical files, 12-bit samples, CMYK/YCCK (Pillow gives CMYK, which
would pass for RGBA here: convert it to RGB first), other component counts,
and a height given by a DNL marker.

Hostile input: the header is checked against ``max_pixels`` (default
``MAX_PIXELS``, 8192 x 8192) before libjpeg allocates anything for the
pixels; libjpeg may then allocate a progressive file's coefficients (2 bytes
a sample: a third to two thirds of the decoded pixels' bytes, by chroma
sampling) and some megabytes of tables and rows, no more. A file cut short,
or whose entropy-coded data is corrupt (libjpeg would paint the rest gray),
is refused, as Pillow refuses it (a progressive file cut between two scans
too), and so is a file with more than 32 scans of one component (each scan
costs a pass over the component however few bytes it has; encoders write
at most about 6). A file that only lacks its EOI marker decodes (Pillow
says "truncated"), and so does one with bytes after EOI. No other exception
escapes.
"""

from __future__ import annotations

from .. import _jpeg_codec
from .._errors import ImageError
from . import exif
from .core import MAX_PIXELS, ImageInfo, check_size

__all__ = ["decode_jpeg", "encode_jpeg", "probe_jpeg", "probe_jpeg_orientation"]


def decode_jpeg(
    data: bytes, name: str, max_pixels: int | None = MAX_PIXELS, reduce: int = 1
) -> tuple[int, int, int, bytes, dict[str, object]]:
    """Decode a JPEG file into (width, height, channels, pixels, info), at
    scale ``1/reduce`` (1, 2, 4 or 8: libjpeg-turbo's DCT scaling, the pixels
    of Pillow's ``draft``; the size is the header's divided by ``reduce``,
    rounded up). ``max_pixels`` limits the header's size: every coefficient
    is entropy-decoded whatever the scale.

    Example::

        >>> w, h, ch, pixels, info = decode_jpeg(open("cat.jpg", "rb").read(), "cat.jpg")
        >>> (w, h, ch, len(pixels) == w * h * ch, info)
        (640, 480, 3, True, {'orientation': None})
        >>> decode_jpeg(open("cat.jpg", "rb").read(), "cat.jpg", reduce=8)[:3]
        (80, 60, 3)
    """

    def check(width: int, height: int, channels: int) -> None:
        check_size(name, width, height, max_pixels)

    try:
        width, height, channels, pixels, app1 = _jpeg_codec.decode(data, check, reduce)
    except _jpeg_codec.Error as exc:
        raise ImageError(f"{name} is {exc}") from None
    return width, height, channels, pixels, {"orientation": exif.orientation(app1)}


def probe_jpeg(data: bytes, name: str) -> ImageInfo:
    """What the header of JPEG ``data`` says, reading the segments up to its
    first scan (no entropy-coded data).

    Example::

        >>> probe_jpeg(open("cat.jpg", "rb").read(), "cat.jpg")
        ImageInfo(format='jpeg', width=640, height=480, channels=3)
    """
    return _probe(data, name)[0]


def probe_jpeg_orientation(data: bytes, name: str) -> tuple[ImageInfo, int | None]:
    """``probe_jpeg``'s header and the EXIF orientation (1-8 or None), from
    the same read.

    Example::

        >>> probe_jpeg_orientation(open("phone.jpg", "rb").read(), "phone.jpg")
        (ImageInfo(format='jpeg', width=4032, height=3024, channels=3), 6)
    """
    info, app1 = _probe(data, name)
    return info, exif.orientation(app1)


def _probe(data: bytes, name: str) -> tuple[ImageInfo, bytes | None]:
    """The header and the EXIF segment (APP1) as the codec reads them."""
    try:
        width, height, channels, app1 = _jpeg_codec.probe(data)
    except _jpeg_codec.Error as exc:
        raise ImageError(f"{name} is {exc}") from None
    return ImageInfo("jpeg", width, height, channels), app1


def encode_jpeg(pixels: bytes, width: int, height: int, channels: int, quality: int) -> bytes:
    """A baseline JPEG of gray (1 channel) or RGB (3) ``pixels`` at ``quality``
    (1-95): Pillow's ``save(f, "JPEG", quality=quality)``, byte for byte (YCbCr
    4:2:0 for colour, libjpeg's standard Huffman tables, a JFIF header).

    Example::

        >>> data = encode_jpeg(bytes(48), 4, 4, 3, 75)
        >>> decode_jpeg(data, "black.jpg")[:3]
        (4, 4, 3)
    """
    try:
        return _jpeg_codec.encode(pixels, width, height, channels, quality)
    except _jpeg_codec.Error as exc:
        raise ImageError(f"the pixels are {exc}") from None
