"""The OCR app's box finding loops (C: ``ext/_boxes.c``).

Example::

    >>> find_contours(bytes([0, 0, 0, 0, 1, 1, 0, 1, 1]), 3, 3)
    [[(1, 1), (1, 2), (2, 2), (2, 1)]]
"""

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

def find_contours(
    mask: bytes | npt.NDArray[np.uint8], h: int, w: int, limit: int | None = None, /
) -> list[list[tuple[int, int]]]:
    """``cv2.findContours(mask, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)[0]`` as
    lists of (x, y), for ``mask`` of ``h`` x ``w`` bytes (any buffer: bytes, a
    C-ordered uint8 array; any nonzero byte set): every outer border and every
    hole border, each from the pixel where OpenCV's raster scan meets it, the
    last one met first. With ``limit``, only the first ``limit`` of them are
    followed. ``ValueError`` when ``mask`` is not ``h * w`` bytes."""

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
