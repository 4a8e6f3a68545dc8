"""wasinn's compiled per-pixel loops over decoded images (C: ``ext/_pixels.c``).

``data`` is interleaved u8 samples, row-major, ``channels`` per pixel (1 gray,
2 gray+alpha, 3 RGB, 4 RGBA), as ``wasinn.image.decode`` returns them. Bytes
that are not whole pixels, or a bad argument, raise ValueError.

Example::

    >>> convert(bytes([10, 20, 30]), 3, 1)          # luma, as Pillow's convert("L")
    b'\\x12'
    >>> orient(bytes([1, 2, 3, 4, 5, 6]), 3, 2, 1, 6)   # 3x2 turned 90 degrees clockwise
    b'\\x04\\x01\\x05\\x02\\x06\\x03'
"""

def convert(data: bytes, channels: int, want: int, /) -> bytes:
    """The pixels with ``want`` channels (1, 3 or 4), as Pillow's ``Image.convert``
    to "L" (ITU-R 601-2 luma in its fixed point; gray+alpha drops alpha), "RGB"
    (gray repeated, alpha dropped) or "RGBA" (alpha kept, else 255)."""

def orient(data: bytes, width: int, height: int, channels: int, orientation: int, /) -> bytes:
    """The pixels turned upright for EXIF ``orientation`` 1-8, as Pillow's
    ``ImageOps.exif_transpose``; orientations 5-8 swap width and height."""
