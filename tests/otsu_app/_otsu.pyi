"""Otsu's threshold for 8-bit gray pixels (C: ``ext/_otsu.c``).

Example::

    >>> t = threshold(bytes([10, 12, 200, 210]))
    >>> t, binarize(bytes([10, 12, 200, 210]), t)
    (12, b'\\x00\\x00\\xff\\xff')
"""

def threshold(gray: bytes, /) -> int:
    """The level that best splits ``gray`` (one byte a pixel) into dark (<= it) and light."""

def binarize(gray: bytes, threshold: int, /) -> bytes:
    """One byte a pixel: 255 where ``gray`` is above ``threshold``, 0 elsewhere."""
