"""``cv2.minAreaRect`` and ``cv2.boxPoints`` (OpenCV 5.0).

``min_area_rect`` takes the convex hull as ``cv2.convexHull`` gives it
(Sklansky's algorithm, counter-clockwise, starting at the vertex OpenCV starts
at) and runs OpenCV's rotating calipers on it in float32, operation for
operation, so that the rectangle comes out with the same float32 bits and even
ties between equal areas fall the same way. Both run in C (``ext/_boxes.c``:
in pure Python they were a third of the guest's box finding); each float32
step there is the double result rounded to float32, as ``f32`` rounds here: a
float32 sum, product or quotient is the exact result rounded once to float32,
which is what rounding the double result gives.

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
import struct
from collections.abc import Sequence
from typing import NamedTuple

import _boxes

Point = tuple[float, float]
IntPoint = tuple[int, int]

_F32 = struct.Struct("f")


def f32(value: float) -> float:
    """``value`` rounded to the nearest float32 (what a C ``float`` would hold).

    Example::

        f32(0.1)    # 0.10000000149011612
    """
    result: float = _F32.unpack(_F32.pack(value))[0]
    return result


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


def box_points(rect: RotatedRect) -> list[Point]:
    """``cv2.boxPoints(rect)``: the four corners, in float32 (OpenCV 5 computes
    each corner from the centre; older versions mirrored two of them).

    Example::

        box_points(RotatedRect((5.0, 2.5), (5.0, 10.0), -90.0))
        # [(10.0, 5.0), (-1.5e-16, 5.0), (1.5e-16, 0.0), (10.0, 0.0)]: cos(-90 degrees) is not 0
    """
    (cx, cy), (width, height), angle = rect
    radians = angle * math.pi / 180.0
    b = f32(f32(math.cos(radians)) * 0.5)
    a = f32(f32(math.sin(radians)) * 0.5)
    ah, bw, bh, aw = f32(a * height), f32(b * width), f32(b * height), f32(a * width)
    p0 = (f32(f32(cx - ah) - bw), f32(f32(cy + bh) - aw))
    p1 = (f32(f32(cx + ah) - bw), f32(f32(cy - bh) - aw))
    p2 = (f32(f32(cx + ah) + bw), f32(f32(cy - bh) + aw))
    p3 = (f32(f32(cx - ah) + bw), f32(f32(cy + bh) + aw))
    return [p0, p1, p2, p3]
