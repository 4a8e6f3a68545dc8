"""Text boxes from the detector's probability map, as rapidocr finds them.

rapidocr-onnxruntime 1.4.4 turns PP-OCRv4's probability map into boxes with
OpenCV, shapely and pyclipper (``DBPostProcess`` with thresh 0.3, box_thresh
0.5, max_candidates 1000, unclip_ratio 1.6, dilation, score_mode "fast"; then
``TextDetector.filter_tag_det_res`` and ``RapidOCR.sorted_boxes``). None of
those exist inside a component, so ``detect_boxes`` does the same steps itself,
in Python with the serial loops in C (the app's module ``_boxes``,
``ext/_boxes.c``), each library call reproduced closely enough that the integer
boxes come out identical (tests/test_ocr_boxes.py compares with rapidocr itself):

1. every border of the mask, in OpenCV's order (``_boxes.find_contours``, C);
2. ``mini_box``: its minimum-area rectangle (``rotated.min_area_rect``), corners
   ordered as ``get_mini_boxes`` orders them; borders shorter than 3 are dropped;
3. ``box_score``: the mean probability over the rectangle as ``cv2.fillPoly``
   fills it (``polygons.fill_poly_spans``, summed by ``_boxes.span_sum``, C);
   below ``box_thresh``, dropped;
4. ``unclip``: the rectangle grown by area * 1.6 / perimeter
   (``polygons.offset_round``), and the minimum-area rectangle of that;
5. scaled to the source image and rounded as numpy does it in float32, then
   ``order_points_clockwise``, ``clip_det_res``, the 3-pixel filter and
   ``sorted_boxes``.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from typing import NamedTuple

from _boxes import find_contours, span_sum
from polygons import fill_poly_spans, offset_round
from rotated import IntPoint, Point, box_points, f32, min_area_rect


class Box(NamedTuple):
    """One text box: ``points`` clockwise from the top-left corner, in source-image
    pixels (whole numbers, as floats), and the mean probability inside it.

    Example::

        Box([(10.0, 5.0), (110.0, 5.0), (110.0, 35.0), (10.0, 35.0)], 0.93)
    """

    points: list[Point]
    score: float


def detect_boxes(
    prob: array[float],
    mask: bytes,
    h: int,
    w: int,
    src_h: int,
    src_w: int,
    *,
    box_thresh: float = 0.5,
    unclip_ratio: float = 1.6,
    max_candidates: int = 1000,
) -> list[Box]:
    """rapidocr's text boxes for one probability map, in reading order.

    ``prob`` is the detector's map (``h * w`` float32 values, row-major, as an
    ``array('f')``); ``mask`` is ``prob > 0.3`` dilated
    with a 2x2 kernel as ``cv2.dilate`` does (``h * w`` bytes, 0 or 1); the map was
    computed from an image of ``src_h`` x ``src_w`` pixels.

    Example::

        boxes = detect_boxes(prob, mask, 736, 1280, 900, 1600)
        [(b.points[0], round(b.score, 2)) for b in boxes]   # [((52.0, 40.0), 0.91), ...]
    """
    found: list[tuple[list[Point], float]] = []
    for contour in find_contours(mask, h, w, max_candidates):
        box, short_side = mini_box(contour)
        if short_side < 3:
            continue
        score = box_score(prob, h, w, box)
        if box_thresh > score:
            continue
        grown, short_side = mini_box(unclip(box, unclip_ratio))
        if short_side < 5:
            continue
        # DBPostProcess's int32 box in source pixels, then filter_tag_det_res:
        # order_points_clockwise, clip_det_res and the 3-pixel filter.
        scaled = [(_scale(x, w, src_w), _scale(y, h, src_h)) for x, y in grown]
        corners: list[Point] = [
            (float(min(max(x, 0), src_w - 1)), float(min(max(y, 0), src_h - 1)))
            for x, y in order_points_clockwise(scaled)
        ]
        if _norm_at_most_3(corners[0], corners[1]) or _norm_at_most_3(corners[0], corners[3]):
            continue
        found.append((corners, score))
    return [Box(points, score) for points, score in sorted_boxes(found)]


def _scale(value: float, size: int, dest: int) -> int:
    """``np.clip(np.round(v / size * dest), 0, dest)`` on a float32 value."""
    scaled = round(f32(f32(value / size) * dest))  # round(): half to even, as np.round
    return min(max(scaled, 0), dest)


def _norm_at_most_3(a: Point, b: Point) -> bool:
    """``int(np.linalg.norm(a - b)) <= 3`` for whole-number points: the squared
    length is an exact integer, and float32 sqrt reaches 4.0 only from 16 up."""
    dx = int(a[0] - b[0])
    dy = int(a[1] - b[1])
    return dx * dx + dy * dy < 16


def mini_box(points: Sequence[IntPoint]) -> tuple[list[Point], float]:
    """rapidocr's ``get_mini_boxes``: the minimum-area rectangle's corners (left
    pair then right pair, each ordered by y as rapidocr picks them) and its
    shorter side.

    Example::

        mini_box([(0, 0), (10, 0), (10, 5), (0, 5)])
        # ([(1.5e-16, 0.0), (10.0, 0.0), (10.0, 5.0), (-1.5e-16, 5.0)], 5.0)
    """
    if not points:
        return [(0.0, 0.0)] * 4, 0.0
    rect = min_area_rect(points)
    corners = sorted(box_points(rect), key=lambda p: p[0])
    first, fourth = (0, 1) if corners[1][1] > corners[0][1] else (1, 0)
    second, third = (2, 3) if corners[3][1] > corners[2][1] else (3, 2)
    box = [corners[first], corners[second], corners[third], corners[fourth]]
    return box, min(rect.size)


def box_score(prob: array[float], h: int, w: int, box: Sequence[Point]) -> float:
    """rapidocr's ``box_score_fast``: the mean of ``prob`` (h x w, row-major) over
    the pixels ``cv2.fillPoly`` sets for ``box`` (float32 corners truncated to
    whole pixels inside the box's bounding rectangle).

    Example::

        box_score(array("f", [1.0] * 100), 10, 10, [(2.0, 2.0), (6.0, 2.0), (6.0, 5.0), (2.0, 5.0)])
        # 1.0
    """
    xs = [p[0] for p in box]
    ys = [p[1] for p in box]
    xmin = min(max(math.floor(min(xs)), 0), w - 1)
    xmax = min(max(math.ceil(max(xs)), 0), w - 1)
    ymin = min(max(math.floor(min(ys)), 0), h - 1)
    ymax = min(max(math.ceil(max(ys)), 0), h - 1)
    width = xmax - xmin + 1
    height = ymax - ymin + 1
    vertices = [(int(x - xmin), int(y - ymin)) for x, y in box]
    total, count = span_sum(prob, w, xmin, ymin, fill_poly_spans(vertices, width, height))
    return total / count if count else 0.0


def unclip(box: Sequence[Point], ratio: float) -> list[IntPoint]:
    """rapidocr's ``unclip``: ``box`` grown by shapely's area * ``ratio`` / length
    with pyclipper's round-joined offset, as the points Clipper returns.

    Example::

        unclip([(0.0, 0.0), (10.0, 0.0), (10.0, 5.0), (0.0, 5.0)], 1.6)
        # [(12, -2), (13, 0), (13, 5), (12, 7), (10, 8), (0, 8), (-2, 7), (-3, 5), (-3, 0), ...]
    """
    distance = _shapely_area(box) * ratio / _shapely_length(box)
    path = [(int(x), int(y)) for x, y in box]  # pyclipper truncates coordinates
    return offset_round(path, distance)


def _shapely_area(box: Sequence[Point]) -> float:
    """GEOS's ring area (shoelace relative to the first x), as shapely computes it."""
    ring = list(box) + [box[0]]
    x0 = ring[0][0]
    total = 0.0
    for i in range(1, len(ring) - 1):
        total += (ring[i][0] - x0) * (ring[i - 1][1] - ring[i + 1][1])
    return abs(total / 2.0)


def _shapely_length(box: Sequence[Point]) -> float:
    """GEOS's ring length: the closed ring's segment lengths added in order."""
    ring = list(box) + [box[0]]
    total = 0.0
    for (x0, y0), (x1, y1) in zip(ring, ring[1:], strict=False):
        dx, dy = x1 - x0, y1 - y0
        total += math.sqrt(dx * dx + dy * dy)
    return total


def order_points_clockwise(points: Sequence[IntPoint]) -> list[IntPoint]:
    """rapidocr's ``order_points_clockwise``: the two leftmost points (a stable
    sort by x, as ``np.argsort`` gives for 4 values) top then bottom, likewise
    the two rightmost; returned top-left, top-right, bottom-right, bottom-left.

    Example::

        order_points_clockwise([(9, 1), (1, 5), (1, 1), (9, 5)])
        # [(1, 1), (9, 1), (9, 5), (1, 5)]
    """
    by_x = sorted(points, key=lambda p: p[0])
    tl, bl = sorted(by_x[:2], key=lambda p: p[1])
    tr, br = sorted(by_x[2:], key=lambda p: p[1])
    return [tl, tr, br, bl]


def sorted_boxes(found: list[tuple[list[Point], float]]) -> list[tuple[list[Point], float]]:
    """rapidocr's ``sorted_boxes``: by the top-left corner's y then x, then one
    pass that moves a box left of its predecessor ahead of it when their tops
    are less than 10 pixels apart.

    Example::

        sorted_boxes([([(50.0, 12.0)] * 4, 0.9), ([(5.0, 15.0)] * 4, 0.8)])[0][1]   # 0.8
    """
    boxes = sorted(found, key=lambda b: (b[0][0][1], b[0][0][0]))
    for i in range(len(boxes) - 1):
        for j in range(i, -1, -1):
            a, b = boxes[j][0][0], boxes[j + 1][0][0]
            if abs(b[1] - a[1]) < 10 and b[0] < a[0]:
                boxes[j], boxes[j + 1] = boxes[j + 1], boxes[j]
            else:
                break
    return boxes
