"""Small geometry for the OCR pipeline, in pure Python: where each text box is
cut from, and sizes computed the way rapidocr's numpy code computes them.

rapidocr cuts a box with ``cv2.getPerspectiveTransform`` (box corners onto a
``width`` x ``height`` rectangle) and ``cv2.warpPerspective``; a crop at least
1.5 times as tall as wide is then turned a quarter turn (``np.rot90``). Here
the same mapping is solved the other way round (crop pixel to image
position) and the quarter turn folded in, for ``graphs.crop_graph``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from rotated import Point, f32

Matrix = list[list[float]]


class Cut(NamedTuple):
    """Where one crop comes from: ``warp`` (row-major 3x3) maps crop pixel
    (x, y, 1) to grid_sample's [-1, 1] image coordinates; the crop is
    ``height`` x ``width`` after any quarter turn."""

    warp: list[float]
    height: int
    width: int


def crop_size(box: Sequence[Point]) -> tuple[int, int]:
    """(height, width) of the crop rapidocr cuts for ``box`` (corners clockwise
    from top-left): the longer of each pair of opposite sides, truncated, the
    lengths computed in float32 as ``np.linalg.norm`` of float32 points does."""

    def side(a: Point, b: Point) -> float:
        return f32(math.sqrt(f32((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2)))

    width = int(max(side(box[0], box[1]), side(box[2], box[3])))
    height = int(max(side(box[0], box[3]), side(box[1], box[2])))
    return height, width


def cut(box: Sequence[Point], image_height: int, image_width: int) -> Cut:
    """The ``Cut`` for ``box`` in an image of the given size.

    Example::

        c = cut([(10, 5), (110, 5), (110, 35), (10, 35)], 480, 640)
        (c.height, c.width)     # (30, 100)
    """
    height, width = crop_size(box)
    corners = [(0.0, 0.0), (float(width), 0.0), (float(width), float(height)), (0.0, float(height))]
    to_image = perspective(corners, [(float(x), float(y)) for x, y in box])
    if height >= 1.5 * width:
        # np.rot90: output (x, y) shows crop pixel (width - 1 - y, x).
        turn = [[0.0, -1.0, width - 1.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
        to_image = _times(to_image, turn)
        height, width = width, height
    # Scale pixel positions to [-1, 1] (centres of the first and last pixels);
    # affine, so it folds into the projective rows: x' = sx * x - 1 = (sx * r0 - r2) . p / r2 . p
    sx = 2.0 / max(image_width - 1, 1)
    sy = 2.0 / max(image_height - 1, 1)
    r0, r1, r2 = to_image
    warp = [sx * a - c for a, c in zip(r0, r2, strict=True)]
    warp += [sy * b - c for b, c in zip(r1, r2, strict=True)]
    warp += r2
    return Cut(warp, height, width)


def perspective(source: Sequence[Point], target: Sequence[Point]) -> Matrix:
    """The 3x3 homography (last entry 1) taking the 4 ``source`` points onto the
    4 ``target`` points, as ``cv2.getPerspectiveTransform`` solves it.

    Example::

        m = perspective([(0, 0), (1, 0), (1, 1), (0, 1)], [(0, 0), (2, 0), (2, 2), (0, 2)])
        m[0][0]     # 2.0
    """
    rows: list[list[float]] = []
    for (x, y), (u, v) in zip(source, target, strict=True):
        rows.append([x, y, 1.0, 0.0, 0.0, 0.0, -x * u, -y * u, u])
        rows.append([0.0, 0.0, 0.0, x, y, 1.0, -x * v, -y * v, v])
    h = _solve(rows)
    return [h[0:3], h[3:6], [h[6], h[7], 1.0]]


def _solve(augmented: list[list[float]]) -> list[float]:
    """Gaussian elimination with partial pivoting on an n x (n + 1) system."""
    n = len(augmented)
    a = [row[:] for row in augmented]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        if abs(a[pivot][col]) < 1e-12:
            raise ValueError("the box's corners do not span a quadrilateral")
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(n):
            if r != col and a[r][col] != 0.0:
                factor = a[r][col] / a[col][col]
                a[r] = [p - factor * q for p, q in zip(a[r], a[col], strict=True)]
    return [a[r][n] / a[r][r] for r in range(n)]


def _times(p: Matrix, q: Matrix) -> Matrix:
    return [[sum(p[i][k] * q[k][j] for k in range(3)) for j in range(3)] for i in range(3)]
