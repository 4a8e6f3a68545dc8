"""The textclass app's sentence embedding (C: ``ext/_pool.c``).

Example::

    >>> embedding(array("f", [3.0, 0.0, 0.0, 4.0]).tobytes(), 2, 2, [1, 1])
    [0.6, 0.8]
"""

from collections.abc import Sequence

def embedding(hidden: bytes, n: int, width: int, mask: Sequence[int], /) -> list[float]:
    """The mean of ``n`` token vectors of ``width`` float32 values (``hidden``,
    row-major) weighted by the attention ``mask``, scaled to unit length (a zero
    vector stays zero): each sum added as CPython 3.12+'s ``sum()`` adds floats.
    ``ValueError`` for the wrong number of bytes or mask values,
    ``ZeroDivisionError`` for an all-zero mask."""
