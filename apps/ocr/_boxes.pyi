"""The OCR app's box finding loops (C: ``ext/_boxes.c``).

Example::

    >>> find_contours(bytes([0, 0, 0, 0, 1, 1, 0, 1, 1]), 3, 3)
    [[(1, 1), (1, 2), (2, 2), (2, 1)]]
    >>> span_sum(array("f", [0.5] * 9), 3, 0, 1, [[(0, 1)], [(2, 2)]])
    (1.5, 3)
"""

from array import array
from collections.abc import Sequence

def find_contours(
    mask: bytes, h: int, w: int, limit: int | None = None, /
) -> list[list[tuple[int, int]]]:
    """``cv2.findContours(mask, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)[0]`` as
    lists of (x, y), for ``mask`` of ``h`` x ``w`` bytes (any nonzero byte set):
    every outer border and every hole border, each from the pixel where
    OpenCV's raster scan meets it, the last one met first. With ``limit``,
    only the first ``limit`` of them are followed. ``ValueError`` when
    ``mask`` is not ``h * w`` bytes."""

def span_sum(
    prob: array[float], w: int, xmin: int, ymin: int, spans: list[list[tuple[int, int]]], /
) -> tuple[float, int]:
    """The sum of ``prob`` (float32, rows of ``w``) over inclusive (x1, x2) spans,
    one list of spans per row from row ``ymin``, x counted from ``xmin``; and
    how many values that is. Each span is added as Python's ``sum()`` adds
    floats (compensated, CPython 3.12+), so the result is what
    ``sum(prob[a:b])`` per span gave in the guest."""

def convex_hull(
    points: Sequence[tuple[int, int]], clockwise: bool = True, /
) -> list[tuple[int, int]]:
    """``cv2.convexHull(points, clockwise=clockwise)`` for integer points (Sklansky's
    chains as OpenCV runs them, starting where OpenCV starts)."""

def min_area_rect(
    points: Sequence[tuple[int, int]], /
) -> tuple[tuple[float, float], tuple[float, float], float]:
    """``cv2.minAreaRect`` of integer points: ((cx, cy), (width, height), angle in
    [-90, 0) degrees), float32 values; ``ValueError`` for a hull with no area."""
