"""BlazeFace short-range: its input size, anchors and output decoding (stdlib only).

Shared by the component (``app.py``) and the native pipeline of
``bench/photo_bench.py``, so both decode the model's outputs with the same
anchors and thresholds. The model takes a [1, 128, 128, 3] f32 picture in
[-1, 1] and returns ``regressors`` [1, 896, 16] (box centre offset, size and
six key points, in input pixels relative to an anchor) and
``classificators`` [1, 896, 1] (a logit per anchor). The anchors are
MediaPipe's SSD anchors for this model (strides 8, 16, 16, 16; two anchors
per cell on the 16x16 grid, six on the 8x8 one; centres only, size fixed 1).
"""

from __future__ import annotations

SIDE = 128
#: MediaPipe's face_detection_short_range settings.
MIN_SCORE = 0.5
NMS_IOU = 0.3
#: Scores are computed from logits clipped to +-CLIP (MediaPipe's score_clipping_thresh).
CLIP = 100.0
MEAN = 0.5
STD = 0.5


def anchors() -> list[tuple[float, float]]:
    """The 896 anchor centres (x, y) in [0, 1], in the model's output order."""
    out: list[tuple[float, float]] = []
    for grid, per_cell in ((16, 2), (8, 6)):
        for y in range(grid):
            for x in range(grid):
                out.extend([((x + 0.5) / grid, (y + 0.5) / grid)] * per_cell)
    return out


ANCHORS = anchors()


def letterbox(width: int, height: int) -> tuple[int, int, int, int, float]:
    """How a width x height picture fits into SIDE x SIDE keeping its aspect:
    (resized height, resized width, top padding, left padding, scale)."""
    scale = min(SIDE / width, SIDE / height)
    rh, rw = max(1, round(height * scale)), max(1, round(width * scale))
    return rh, rw, (SIDE - rh) // 2, (SIDE - rw) // 2, scale


def iou(a: list[float], b: list[float]) -> float:
    """Intersection over union of two [x0, y0, x1, y1] boxes."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def suppress(found: list[tuple[float, list[float]]]) -> list[tuple[float, list[float]]]:
    """Greedy non-maximum suppression of (score, box) pairs, best first."""
    kept: list[tuple[float, list[float]]] = []
    for score, box in sorted(found, key=lambda f: -f[0]):
        if all(iou(box, k[1]) <= NMS_IOU for k in kept):
            kept.append((score, box))
    return kept


def to_image(box: list[float], top: int, left: int, scale: float) -> list[float]:
    """A box in the model's [0, 1] input coordinates, in the picture's pixels."""
    return [(box[0] * SIDE - left) / scale, (box[1] * SIDE - top) / scale,
            (box[2] * SIDE - left) / scale, (box[3] * SIDE - top) / scale]  # fmt: skip


def decode_box(reg: list[float], anchor: int) -> list[float]:
    """Anchor ``anchor``'s box [x0, y0, x1, y1] in [0, 1] input coordinates
    from its first four regressor values (centre offset, width, height)."""
    ax, ay = ANCHORS[anchor]
    cx, cy = reg[0] / SIDE + ax, reg[1] / SIDE + ay
    w, h = reg[2] / SIDE, reg[3] / SIDE
    return [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]
