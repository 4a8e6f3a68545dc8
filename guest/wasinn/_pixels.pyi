"""wasinn's compiled per-pixel loops over decoded images (C: ``ext/_pixels.c``).

``data`` is interleaved u8 samples, row-major, ``channels`` per pixel (1 gray,
2 gray+alpha, 3 RGB, 4 RGBA), as ``wasinn.image.decode`` returns them. Bytes
that are not whole pixels, or a bad argument, raise ValueError.

Example::

    >>> convert(bytes([10, 20, 30]), 3, 1)          # luma, as Pillow's convert("L")
    b'\\x12'
    >>> orient(bytes([1, 2, 3, 4, 5, 6]), 3, 2, 1, 6)   # 3x2 turned 90 degrees clockwise
    b'\\x04\\x01\\x05\\x02\\x06\\x03'
    >>> reduce(bytes([0, 1, 2, 3, 9]), 5, 1, 1, 2)      # boxes [0, 1], [2, 3], [9]
    b'\\x01\\x03\\t'
"""

def convert(data: bytes, channels: int, want: int, /) -> bytes:
    """The pixels with ``want`` channels (1, 3 or 4), as Pillow's ``Image.convert``
    to "L" (ITU-R 601-2 luma in its fixed point; gray+alpha drops alpha), "RGB"
    (gray repeated, alpha dropped) or "RGBA" (alpha kept, else 255)."""

def orient(data: bytes, width: int, height: int, channels: int, orientation: int, /) -> bytes:
    """The pixels turned upright for EXIF ``orientation`` 1-8, as Pillow's
    ``ImageOps.exif_transpose``; orientations 5-8 swap width and height."""

def reduce(data: bytes, width: int, height: int, channels: int, factor: int, /) -> bytes:
    """The pixels box-averaged by ``factor`` (1-8), byte for byte Pillow's
    ``Image.reduce(factor)``: ``ceil(width / factor) x ceil(height / factor)``
    pixels, each the rounded mean of its box (the last row's and column's
    boxes hold what is left); with alpha (2 or 4 channels) the colours are
    averaged premultiplied, as Pillow does."""
