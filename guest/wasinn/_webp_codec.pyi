"""WebP files read and written by libwebp 1.2.4 (C: ``ext/_webp_codec.c``).

Built by ``tools/build_ext.py`` for the guest and for the native CPython
(``./build.sh setup``), with Debian's libwebp linked in. ``wasinn._image.webp``
is its only user: a file libwebp refuses raises ValueError whose message
follows the file's name (``"is truncated: ..."``, ``"is corrupt: ..."``),
which ``_image.webp`` turns into ``ImageError``; libwebp running out of memory
raises MemoryError.

Example::

    >>> width, height, alpha, animated, lossless = probe(data)
    >>> pixels = decode(data, 4 if alpha else 3)
    >>> len(pixels) == width * height * (4 if alpha else 3)
    True
    >>> webp = encode(pixels, width, height, 4 if alpha else 3, 80, False)
"""

def probe(data: bytes, /) -> tuple[int, int, bool, bool, bool]:
    """``(width, height, has_alpha, animated, lossless)`` from the headers
    alone (the canvas of a VP8X file; ``lossless`` is False for an animation)."""

def decode(data: bytes, channels: int, /) -> bytes:
    """The pixels, RGB (``channels`` 3) or RGBA (4), in a bytes object
    allocated once at its final size; an animated file is refused."""

def encode(
    pixels: bytes, width: int, height: int, channels: int, quality: int, lossless: bool, /
) -> bytes:
    """A WebP file of 8-bit ``pixels`` (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA
    interleaved; gray is widened to RGB first): lossy at ``quality`` 0-100,
    or lossless with ``quality`` as the effort, keeping the colour of fully
    transparent pixels. Pillow's defaults otherwise (method 4)."""
