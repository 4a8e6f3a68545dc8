"""``cv2.minAreaRect`` and ``cv2.boxPoints`` (OpenCV 5.0).

``min_area_rect`` takes the convex hull as ``cv2.convexHull`` gives it
(Sklansky's algorithm, counter-clockwise, starting at the vertex OpenCV starts
at) and runs OpenCV's rotating calipers on it in float32, operation for
operation, so that the rectangle comes out with the same float32 bits and even
ties between equal areas fall the same way. Both run in C (``ext/_boxes.c``:
in pure Python they were a third of the guest's box finding); each float32
step there is the double result rounded to float32: a float32 sum, product or
quotient is the exact result rounded once to float32, which is what rounding
the double result gives (and what numpy's float32 arithmetic gives here).

Two details come from comparing with cv2 5.0 rather than from its source,
which was not at hand: the angle is turned by quarter turns into [-90, 0)
degrees in double precision (swapping width and height), and ``box_points``
computes every corner from the centre. Known difference: when a point occurs
more than once in the input, OpenCV 5 sometimes starts the hull at another
vertex (the vertex set is the same); only exact ties between rectangles of
equal area can then differ (8 in 20,000 random point sets, none on text).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import _boxes
import numpy as np
import numpy.typing as npt

Point = tuple[float, float]
IntPoint = tuple[int, int]


class RotatedRect(NamedTuple):
    """``cv2.minAreaRect``'s answer: centre, (width, height) and angle in degrees."""

    center: Point
    size: Point
    angle: float


def convex_hull(points: Sequence[IntPoint], clockwise: bool = True) -> list[IntPoint]:
    """``cv2.convexHull(points, clockwise=clockwise)`` for integer points: the
    hull's vertices (no collinear ones), starting where OpenCV starts (for
    points that occur more than once, not always: see the module docstring).
    Sklansky's chains in C (``_boxes.convex_hull``).

    Example::

        convex_hull([(0, 0), (4, 0), (2, 1), (4, 3), (0, 3)])   # [(0, 3), (4, 3), (4, 0), (0, 0)]
    """
    return _boxes.convex_hull(points, clockwise)


def min_area_rect(points: Sequence[IntPoint]) -> RotatedRect:
    """``cv2.minAreaRect`` of integer points (OpenCV 5): rotating calipers over
    the counter-clockwise ``convex_hull``, in float32 as OpenCV computes it, the
    angle then brought into [-90, 0) degrees (swapping width and height). In C
    (``_boxes.min_area_rect``); ``ValueError`` for a hull of three or more
    vertices and no area.

    Example::

        min_area_rect([(0, 0), (10, 0), (10, 5), (0, 5)])
        # RotatedRect(center=(5.0, 2.5), size=(5.0, 10.0), angle=-90.0)
    """
    center, size, angle = _boxes.min_area_rect(points)
    return RotatedRect(center, size, angle)


def box_points(rect: RotatedRect) -> npt.NDArray[np.float32]:
    """``cv2.boxPoints(rect)``: the four corners (4 x 2), in float32 (OpenCV 5
    computes each corner from the centre; older versions mirrored two of them).

    Example::

        box_points(RotatedRect((5.0, 2.5), (5.0, 10.0), -90.0))
        # [[10, 5], [-1.5e-16, 5], [1.5e-16, 0], [10, 0]]: cos(-90 degrees) is not 0
    """
    (cx, cy), (width, height), angle = rect
    radians = angle * math.pi / 180.0
    half = np.float32(0.5)
    b = np.float32(math.cos(radians)) * half
    a = np.float32(math.sin(radians)) * half
    # Corner k is (cx + s_k * a * h + t_k * b * w, cy - s_k * b * h + t_k * a * w), in float32.
    s = np.array([-1, 1, 1, -1], np.float32)
    t = np.array([-1, -1, 1, 1], np.float32)
    x = (np.float32(cx) + s * (a * np.float32(height))) + t * (b * np.float32(width))
    y = (np.float32(cy) - s * (b * np.float32(height))) + t * (a * np.float32(width))
    return np.stack([x, y], axis=1)
