"""Text boxes from the detector's probability map, as rapidocr finds them.

rapidocr-onnxruntime 1.4.4 turns PP-OCRv4's probability map into boxes with
OpenCV, shapely and pyclipper (``DBPostProcess`` with thresh 0.3, box_thresh
0.5, max_candidates 1000, unclip_ratio 1.6, dilation, score_mode "fast"; then
``TextDetector.filter_tag_det_res`` and ``RapidOCR.sorted_boxes``). Of those
only numpy exists inside a component, so ``detect_boxes`` is rapidocr's numpy
code with each OpenCV, shapely and pyclipper call reproduced closely enough
that the integer boxes come out identical (tests/test_ocr_boxes.py compares
with rapidocr itself):

1. every border of the mask, in OpenCV's order (``_boxes.find_contours``, C);
2. ``mini_box``: its minimum-area rectangle (``rotated.min_area_rect``, C), corners
   ordered as ``get_mini_boxes`` orders them; borders shorter than 3 are dropped;
3. ``box_score``: the mean probability over the rectangle as ``cv2.fillPoly``
   fills it (``polygons.fill_poly``); below ``box_thresh``, dropped;
4. ``unclip``: the rectangle grown by area * 1.6 / perimeter
   (``polygons.offset_round``), and the minimum-area rectangle of that;
5. scaled to the source image and rounded in float32, then
   ``order_points_clockwise``, ``clip_det_res``, the 3-pixel filter and
   ``sorted_boxes``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
from _boxes import find_contours
from polygons import fill_poly, offset_round
from rotated import IntPoint, Point, box_points, min_area_rect

Corners = npt.NDArray[np.float32]  # (4, 2): x, y per corner


class Box(NamedTuple):
    """One text box: ``points`` clockwise from the top-left corner, in source-image
    pixels (whole numbers, as floats), and the mean probability inside it.

    Example::

        Box([(10.0, 5.0), (110.0, 5.0), (110.0, 35.0), (10.0, 35.0)], 0.93)
    """

    points: list[Point]
    score: float


def detect_boxes(
    prob: npt.NDArray[np.float32],
    mask: npt.NDArray[np.uint8],
    src_h: int,
    src_w: int,
    *,
    box_thresh: float = 0.5,
    unclip_ratio: float = 1.6,
    max_candidates: int = 1000,
) -> list[Box]:
    """rapidocr's text boxes for one probability map, in reading order.

    ``prob`` is the detector's map (float32, h x w); ``mask`` is ``prob > 0.3``
    dilated with a 2x2 kernel as ``cv2.dilate`` does (uint8 0 or 1, h x w); the map
    was computed from an image of ``src_h`` x ``src_w`` pixels.

    Example::

        boxes = detect_boxes(prob, mask, 900, 1600)
        [(b.points[0], round(b.score, 2)) for b in boxes]   # [((52.0, 40.0), 0.91), ...]
    """
    h, w = prob.shape
    found: list[tuple[list[Point], float]] = []
    for contour in find_contours(np.ascontiguousarray(mask), h, w, max_candidates):
        box, short_side = mini_box(contour)
        if short_side < 3:
            continue
        score = box_score(prob, box)
        if box_thresh > score:
            continue
        grown, short_side = mini_box(unclip(box, unclip_ratio))
        if short_side < 5:
            continue
        # DBPostProcess's int32 box in source pixels, then filter_tag_det_res:
        # order_points_clockwise, clip_det_res and the 3-pixel filter.
        grown[:, 0] = np.clip(np.round(grown[:, 0] / w * src_w), 0, src_w)
        grown[:, 1] = np.clip(np.round(grown[:, 1] / h * src_h), 0, src_h)
        corners = order_points_clockwise(grown.astype(np.int32))
        corners = np.minimum(np.maximum(corners, 0), [src_w - 1, src_h - 1])
        if (
            np.linalg.norm(corners[0] - corners[1]) < 4
            or np.linalg.norm(corners[0] - corners[3]) < 4
        ):
            continue
        found.append(([(float(x), float(y)) for x, y in corners.tolist()], score))
    return [Box(points, score) for points, score in sorted_boxes(found)]


def mini_box(points: Sequence[IntPoint]) -> tuple[Corners, float]:
    """rapidocr's ``get_mini_boxes``: the minimum-area rectangle's corners (left
    pair then right pair, each ordered by y as rapidocr picks them) and its
    shorter side.

    Example::

        mini_box([(0, 0), (10, 0), (10, 5), (0, 5)])
        # ([[1.5e-16, 0.0], [10.0, 0.0], [10.0, 5.0], [-1.5e-16, 5.0]], 5.0)
    """
    if not points:
        return np.zeros((4, 2), np.float32), 0.0
    rect = min_area_rect(points)
    corners = box_points(rect)
    corners = corners[np.argsort(corners[:, 0], kind="stable")]
    first, fourth = (0, 1) if corners[1, 1] > corners[0, 1] else (1, 0)
    second, third = (2, 3) if corners[3, 1] > corners[2, 1] else (3, 2)
    return corners[[first, second, third, fourth]], min(rect.size)


def box_score(prob: npt.NDArray[np.float32], box: Corners) -> float:
    """rapidocr's ``box_score_fast``: the mean of ``prob`` (h x w) over the pixels
    ``cv2.fillPoly`` sets for ``box`` (float32 corners truncated to whole pixels
    inside the box's bounding rectangle).

    Example::

        corners = np.array([[2, 2], [6, 2], [6, 5], [2, 5]], np.float32)
        box_score(np.ones((10, 10), np.float32), corners)   # 1.0
    """
    h, w = prob.shape
    xmin, ymin = np.clip(np.floor(box.min(axis=0)).astype(np.int32), 0, [w - 1, h - 1]).tolist()
    xmax, ymax = np.clip(np.ceil(box.max(axis=0)).astype(np.int32), 0, [w - 1, h - 1]).tolist()
    vertices = (box - [xmin, ymin]).astype(np.int32)
    inside = fill_poly(vertices, xmax - xmin + 1, ymax - ymin + 1)
    values = prob[ymin : ymax + 1, xmin : xmax + 1][inside]
    return float(values.mean(dtype=np.float64)) if values.size else 0.0


def unclip(box: Corners, ratio: float) -> list[IntPoint]:
    """rapidocr's ``unclip``: ``box`` grown by shapely's area * ``ratio`` / length
    with pyclipper's round-joined offset, as the points Clipper returns.

    Example::

        unclip(np.array([[0, 0], [10, 0], [10, 5], [0, 5]], np.float32), 1.6)
        # [(12, -2), (13, 0), (13, 5), (12, 7), (10, 8), (0, 8), (-2, 7), (-3, 5), (-3, 0), ...]
    """
    x, y = box.astype(np.float64).T
    area = 0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))
    length = np.hypot(*(np.roll(box, -1, axis=0) - box).astype(np.float64).T).sum()
    path = [(int(px), int(py)) for px, py in box.astype(np.int64).tolist()]  # pyclipper truncates
    return offset_round(path, float(area * ratio / length))


def order_points_clockwise(points: npt.NDArray[np.int32]) -> npt.NDArray[np.int32]:
    """rapidocr's ``order_points_clockwise``: the two leftmost points top then
    bottom, likewise the two rightmost; returned top-left, top-right,
    bottom-right, bottom-left.

    Example::

        order_points_clockwise(np.array([(9, 1), (1, 5), (1, 1), (9, 5)]))
        # [[1, 1], [9, 1], [9, 5], [1, 5]]
    """
    by_x = points[np.argsort(points[:, 0], kind="stable")]
    left, right = by_x[:2], by_x[2:]
    tl, bl = left[np.argsort(left[:, 1], kind="stable")]
    tr, br = right[np.argsort(right[:, 1], kind="stable")]
    return np.array([tl, tr, br, bl])


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
