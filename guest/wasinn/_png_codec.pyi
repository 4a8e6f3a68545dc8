"""PNG decoding and encoding by libspng (C: ``ext/_png_codec.c``).

Built by ``tools/build_ext.py`` for the guest and for the native CPython
(``./build.sh setup``). ``wasinn._image.png`` is the Python side. Decoded pixels are
8 bits per sample, interleaved, row-major (``wasinn.image``'s layout). A file
that is not a PNG this can decode raises ValueError whose message says what
the file is, to follow its name (``"is truncated inside its IDAT chunk"``).

Example::

    >>> width, height, channels = probe(data)
    >>> width, height, channels, pixels = decode(data, 8192 * 8192)
    >>> decode(encode(pixels, width, height, channels, 6), 1 << 26)[3] == pixels
    True
"""

def probe(data: bytes, /) -> tuple[int, int, int]:
    """(width, height, channels ``decode`` gives) from the chunks before the
    image data; IHDR's CRC is the only one checked, nothing is inflated."""

def decode(data: bytes, max_pixels: int, /) -> tuple[int, int, int, bytes]:
    """(width, height, channels, pixels) of a whole file, every CRC checked,
    up to its IEND chunk; more than ``max_pixels`` pixels is refused before
    any pixel memory is allocated."""

def encode(pixels: bytes, width: int, height: int, channels: int, level: int, /) -> bytes:
    """An 8-bit PNG of ``channels`` 1 (gray), 2 (gray+alpha), 3 (RGB) or 4
    (RGBA), not interlaced, compressed at zlib ``level`` 0-9."""
