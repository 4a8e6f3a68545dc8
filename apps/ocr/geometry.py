"""Small geometry for the OCR pipeline: where each text box is cut from, with
rapidocr's numpy arithmetic.

rapidocr cuts a box with ``cv2.getPerspectiveTransform`` (box corners onto a
``width`` x ``height`` rectangle) and ``cv2.warpPerspective``; a crop at least
1.5 times as tall as wide is then turned a quarter turn (``np.rot90``). Here
the same mapping is solved the other way round (crop pixel to image
position) and the quarter turn folded in, for ``graphs.crop_graph``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float64]


class Cut(NamedTuple):
    """Where one crop comes from: ``warp`` (3x3) maps crop pixel (x, y, 1) to
    grid_sample's [-1, 1] image coordinates; the crop is ``height`` x ``width``
    after any quarter turn."""

    warp: Matrix
    height: int
    width: int


def crop_size(box: npt.ArrayLike) -> tuple[int, int]:
    """(height, width) of the crop rapidocr cuts for ``box`` (corners clockwise
    from top-left): the longer of each pair of opposite sides, truncated, the
    lengths computed in float32 as rapidocr computes them."""
    p = np.asarray(box, np.float32)
    width = int(max(np.linalg.norm(p[0] - p[1]), np.linalg.norm(p[2] - p[3])))
    height = int(max(np.linalg.norm(p[0] - p[3]), np.linalg.norm(p[1] - p[2])))
    return height, width


def cut(box: npt.ArrayLike, image_height: int, image_width: int) -> Cut:
    """The ``Cut`` for ``box`` in an image of the given size.

    Example::

        c = cut([(10, 5), (110, 5), (110, 35), (10, 35)], 480, 640)
        (c.height, c.width)     # (30, 100)
    """
    height, width = crop_size(box)
    corners = [(0, 0), (width, 0), (width, height), (0, height)]
    to_image = perspective(corners, box)
    if height >= 1.5 * width:
        # np.rot90: output (x, y) shows crop pixel (width - 1 - y, x).
        to_image = to_image @ [[0.0, -1.0, width - 1.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
        height, width = width, height
    # Scale pixel positions to [-1, 1] (centres of the first and last pixels);
    # affine, so it folds into the projective rows: x' = sx * x - 1 = (sx * r0 - r2) . p / r2 . p
    sx = 2.0 / max(image_width - 1, 1)
    sy = 2.0 / max(image_height - 1, 1)
    r0, r1, r2 = to_image
    return Cut(np.stack([sx * r0 - r2, sy * r1 - r2, r2]), height, width)


def perspective(source: npt.ArrayLike, target: npt.ArrayLike) -> Matrix:
    """The 3x3 homography (last entry 1) taking the 4 ``source`` points onto the
    4 ``target`` points, as ``cv2.getPerspectiveTransform`` solves it.

    Example::

        m = perspective([(0, 0), (1, 0), (1, 1), (0, 1)], [(0, 0), (2, 0), (2, 2), (0, 2)])
        m[0, 0]     # 2.0
    """
    (x, y), (u, v) = np.asarray(source, np.float64).T, np.asarray(target, np.float64).T
    one, zero = np.ones(4), np.zeros(4)
    a = np.empty((8, 8))
    a[0::2] = np.stack([x, y, one, zero, zero, zero, -x * u, -y * u], axis=1)
    a[1::2] = np.stack([zero, zero, zero, x, y, one, -x * v, -y * v], axis=1)
    b = np.stack([u, v], axis=1).ravel()
    try:
        h = np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        raise ValueError("the box's corners do not span a quadrilateral") from None
    return np.append(h, 1.0).reshape(3, 3)
