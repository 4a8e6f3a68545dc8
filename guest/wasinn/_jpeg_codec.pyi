"""wasinn's JPEG codec, libjpeg-turbo 2.1.5 (C: ``ext/_jpeg_codec.c``).

Built by ``tools/build_ext.py`` for the guest and for the native CPython.
Pixels are interleaved u8 samples, row-major: 1 (gray) or 3 (RGB) per
pixel. Decoding uses libjpeg's defaults, which are Pillow's (the same pixels);
encoding too (the same bytes as Pillow's ``save`` at equal quality). A file
that cannot be decoded raises ``Error``, whose message follows the file's
name: ``f"{name} is {exc}"`` reads "photo.jpg is truncated: it ends inside
its image data". Misuse (bad channels or sizes) raises ValueError.

Example::

    >>> data = encode(bytes(range(48)), 4, 4, 3, 90)
    >>> probe(data)
    (4, 4, 3, None)
    >>> width, height, channels, pixels, exif = decode(data, lambda w, h, c: None)
    >>> len(pixels)
    48
"""

from collections.abc import Callable

class Error(ValueError):
    """The bytes are not a JPEG this codec decodes (truncated, corrupt,
    unsupported, or too many scans)."""

def probe(data: bytes, /) -> tuple[int, int, int, bytes | None]:
    """``(width, height, channels, exif)`` from the header (the segments up to
    the first scan): ``exif`` is the body of the first APP1 segment that
    starts ``b"Exif\\0\\0"``, else None. Raises Error for the kinds ``decode``
    refuses."""

def decode(
    data: bytes, check: Callable[[int, int, int], object], reduce: int = 1, /
) -> tuple[int, int, int, bytes, bytes | None]:
    """``(width, height, channels, pixels, exif)``, decoded at scale
    ``1/reduce`` (1, 2, 4 or 8; libjpeg-turbo's DCT scaling, as Pillow's
    ``draft``), so ``width`` and ``height`` are the header's divided by
    ``reduce``, rounded up; another ``reduce`` raises ValueError.
    ``check(width, height, channels)`` is called with the header's size once
    it is read, before any memory is allocated for the pixels; an exception
    it raises propagates (a size limit). Truncated or corrupt entropy-coded
    data, more than 32 scans of one component and a progressive component
    without a DC scan raise Error."""

def encode(
    pixels: bytes,
    width: int,
    height: int,
    channels: int,
    quality: int,
    /,
    *,
    progressive: bool = False,
    arithmetic: bool = False,
) -> bytes:
    """A JPEG file of ``pixels`` (1 or 3 channels) at ``quality`` 1-100 with
    libjpeg's defaults, as Pillow writes it (YCbCr 4:2:0 for colour).
    ``progressive`` and ``arithmetic`` (which Pillow cannot write) make test
    files of those kinds."""
