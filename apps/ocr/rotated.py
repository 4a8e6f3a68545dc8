"""``cv2.minAreaRect`` and ``cv2.boxPoints`` (OpenCV 5.0) in pure Python.

``min_area_rect`` takes the convex hull as ``cv2.convexHull`` gives it
(Sklansky's algorithm, counter-clockwise, starting at the vertex OpenCV starts
at) and runs OpenCV's rotating calipers on it in float32, operation for
operation, so that the rectangle comes out with the same float32 bits and even
ties between equal areas fall the same way. The float32 steps use ``f32`` (a
round trip through ``struct``) or ``_f32s`` (through ``array('f')``): a float32
sum, product or quotient is the exact result rounded once to float32, which is
what rounding the double result gives.

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
from array import array
from collections.abc import Sequence
from typing import NamedTuple

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

    Example::

        convex_hull([(0, 0), (4, 0), (2, 1), (4, 3), (0, 3)])   # [(0, 3), (4, 3), (4, 0), (0, 0)]
    """
    total = len(points)
    if total == 0:
        return []
    order = _hull_order(points)
    if order is None:
        order = sorted(range(total), key=lambda i: (points[i][0], points[i][1], i))
    total = len(order)
    pts = [points[i] for i in order]
    miny = maxy = 0
    for i in range(1, total):
        y = pts[i][1]
        if pts[miny][1] > y:
            miny = i
        if pts[maxy][1] < y:
            maxy = i
    if pts[0] == pts[-1]:
        return [points[order[0]]]
    hull: list[int] = []
    tl = _sklansky(pts, 0, maxy, -1, 1)
    tr = _sklansky(pts, total - 1, maxy, -1, -1)
    if not clockwise:
        tl, tr = tr, tl
    hull += [order[k] for k in tl[:-1]]
    hull += [order[k] for k in reversed(tr[1:])]
    stop = tr[1] if len(tr) > 2 else tl[-2] if len(tl) > 2 else -1
    bl = _sklansky(pts, 0, miny, 1, -1)
    br = _sklansky(pts, total - 1, miny, 1, 1)
    if clockwise:
        bl, br = br, bl
    if stop >= 0:
        check = bl[1] if len(bl) > 2 else br[2 - len(bl)] if len(bl) + len(br) > 2 else -1
        if check == stop or (check >= 0 and pts[check] == pts[stop]):
            # all points on one line: the lower chain mirrors the upper one
            bl = bl[:2]
            br = br[:2]
    hull += [order[k] for k in bl[:-1]]
    hull += [order[k] for k in reversed(br[1:])]
    hull = _ascending_rotation(hull)
    return [points[i] for i in hull]


def _hull_order(points: Sequence[IntPoint]) -> list[int] | None:
    """The points Sklansky's chains run over, in x order: per x only the first
    point with the lowest y and the first with the highest y (the bucket sort
    of recent OpenCV versions for integer points, used when the x range is at
    most 4 times the point count and at most 100,000); None for a full sort.
    Of repeated points this keeps the first copy, which matched cv2 5.0 more
    often than any other rule tried (see the module docstring)."""
    total = len(points)
    xs = [p[0] for p in points]
    lo_x = min(xs)
    span = max(xs) - lo_x + 1
    if span > 4 * total or span > 100000:
        return None
    low: list[int] = [-1] * span
    high: list[int] = [-1] * span
    for i, (x, y) in enumerate(points):
        b = x - lo_x
        if low[b] < 0 or y < points[low[b]][1]:
            low[b] = i
        if high[b] < 0 or y > points[high[b]][1]:
            high[b] = i
    order: list[int] = []
    for a, b in zip(low, high, strict=True):
        if a >= 0:
            order.append(a)
            if b != a:
                order.append(b)
    return order


def _sklansky(pts: Sequence[IntPoint], start: int, end: int, nsign: int, sign2: int) -> list[int]:
    """One monotone chain of OpenCV's ``Sklansky_`` (integer version): the stack
    of indices into ``pts`` (sorted by x, then y) from ``start`` to ``end``."""
    incr = 1 if end > start else -1
    if start == end or pts[start] == pts[end]:
        return [start]
    pprev, pcur, pnext = start, start + incr, start + 2 * incr
    stack = [pprev, pcur, pnext]
    end += incr
    while pnext != end:
        if pts[pcur] == pts[pnext]:
            pnext += incr
            stack[-1] = pnext
            continue
        cx, cy = pts[pcur]
        nx, ny = pts[pnext]
        by = ny - cy
        if (by > 0) - (by < 0) != nsign:
            px, py = pts[pprev]
            ax, ay = cx - px, cy - py
            bx = nx - cx
            convexity = ay * bx - ax * by
            if (convexity > 0) - (convexity < 0) == sign2 and (ax != 0 or ay != 0):
                pprev, pcur = pcur, pnext
                pnext += incr
                stack.append(pnext)
            elif pprev == start:
                pcur = pnext
                stack[1] = pcur
                pnext += incr
                stack[2] = pnext
            else:
                stack[-2] = pnext
                pcur = pprev
                pprev = stack[-4] if len(stack) >= 4 else -1
                stack.pop()
        else:
            pnext += incr
            stack[-1] = pnext
    stack.pop()
    return stack


def _ascending_rotation(hull: list[int]) -> list[int]:
    """OpenCV's last step of convexHull: when the vertices' input indices
    increase (or decrease) around the hull, start at the smallest (largest)."""
    n = len(hull)
    if n < 3:
        return hull
    lo = hi = lt = 0
    for i in range(1, n):
        idx = hull[i]
        lt += hull[i - 1] < idx
        if 1 < lt <= i - 2:
            break
        if idx < hull[lo]:
            lo = i
        if idx > hull[hi]:
            hi = i
    dist = abs(hi - lo)
    if (dist == 1 or dist == n - 1) and (lt <= 1 or lt >= n - 2):
        ascending = (hi + 1) % n == lo
        first = lo if ascending else hi
        if first > 0:
            rotated = hull[first:] + hull[:first]
            if all(ascending == (a < b) for a, b in zip(rotated, rotated[1:], strict=False)):
                return rotated
    return hull


def min_area_rect(points: Sequence[IntPoint]) -> RotatedRect:
    """``cv2.minAreaRect`` of integer points (OpenCV 5): rotating calipers over
    the counter-clockwise ``convex_hull``, in float32 as OpenCV computes it, the
    angle then brought into [-90, 0) degrees (swapping width and height).

    Example::

        min_area_rect([(0, 0), (10, 0), (10, 5), (0, 5)])
        # RotatedRect(center=(5.0, 2.5), size=(5.0, 10.0), angle=-90.0)
    """
    hull = [(float(x), float(y)) for x, y in convex_hull(points, clockwise=False)]
    n = len(hull)
    if n > 2:
        (px, py), (ax, ay), (bx, by) = _calipers(hull)
        center = (f32(px + f32(f32(ax + bx) * 0.5)), f32(py + f32(f32(ay + by) * 0.5)))
        width, height = f32(math.sqrt(ax * ax + ay * ay)), f32(math.sqrt(bx * bx + by * by))
        angle = math.atan2(ay, ax)
    elif n == 2:
        (x0, y0), (x1, y1) = hull
        center = (f32(f32(x0 + x1) * 0.5), f32(f32(y0 + y1) * 0.5))
        dx, dy = f32(x1 - x0), f32(y1 - y0)
        width, height = f32(math.sqrt(dx * dx + dy * dy)), 0.0
        angle = math.atan2(dy, dx)
    else:
        center = hull[0] if n else (0.0, 0.0)
        width = height = angle = 0.0
    # Found by comparison with cv2 5.0 (its source was not at hand): the angle
    # stays in double precision and is turned by quarter turns into [-90, 0).
    while angle >= 0:
        angle -= math.pi / 2
        width, height = height, width
    while angle < -math.pi / 2:
        angle += math.pi / 2
        width, height = height, width
    return RotatedRect(center, (width, height), f32(angle * 180 / math.pi))


def _f32s(values: list[float]) -> list[float]:
    """Each value rounded to float32 (one C loop for the whole list)."""
    return array("f", values).tolist()


def _calipers(hull: list[Point]) -> tuple[Point, Point, Point]:
    """OpenCV's ``rotatingCalipers`` (CALIPERS_MINAREARECT): a corner and the two
    side vectors of the smallest rectangle; a later rectangle of equal area wins.

    Which edge each step turns to depends only on the edge vectors, so the
    steps are found first and the float32 sizes of all candidate rectangles
    are then computed a list at a time."""
    n = len(hull)
    xs = [p[0] for p in hull]
    ys = [p[1] for p in hull]
    vx = _f32s([xs[i + 1 if i + 1 < n else 0] - xs[i] for i in range(n)])
    vy = _f32s([ys[i + 1 if i + 1 < n else 0] - ys[i] for i in range(n)])
    inv = _f32s([1.0 / math.sqrt(dx * dx + dy * dy) for dx, dy in zip(vx, vy, strict=True)])
    orientation = 0.0
    ax, ay = vx[n - 1], vy[n - 1]
    for bx, by in zip(vx, vy, strict=True):
        convexity = ax * by - ay * bx
        if convexity != 0:
            orientation = 1.0 if convexity > 0 else -1.0
            break
        ax, ay = bx, by
    if orientation == 0:
        raise ValueError("the hull has no area")
    # bottom, right, top, left: the first vertex with the extreme coordinate
    seq = [ys.index(min(ys)), xs.index(max(xs)), ys.index(max(ys)), xs.index(min(xs))]
    exact = max(map(abs, vx + vy)) < 4096  # products below 2**24: float32 is exact
    steps: list[tuple[int, int, int, int, int, int]] = []
    for _ in range(n):
        # The caliper side that turns least before meeting its next edge: the
        # four edge vectors rotated into one frame, compared by cross product
        # (OpenCV's firstVecIsRight, in float32).
        k0, k1, k2, k3 = seq
        cand = (
            (vx[k0], vy[k0]),
            (vy[k1], -vx[k1]),
            (-vx[k2], -vy[k2]),
            (-vy[k3], vx[k3]),
        )
        main = 0
        bx, by = cand[0]
        for i in (1, 2, 3):
            px, py = cand[i]
            if exact:
                right = py * bx - px * by < 0
            else:
                right = f32(f32(py * bx) + f32(-px * by)) < 0
            if right:
                main, bx, by = i, px, py
        k = seq[main]
        seq[main] = k + 1 if k + 1 < n else 0
        steps.append((main, k, seq[0], seq[1], seq[2], seq[3]))
    lead_x = _f32s([vx[k] * inv[k] for _, k, *_ in steps])
    lead_y = _f32s([vy[k] * inv[k] for _, k, *_ in steps])
    base_a: list[float] = []
    base_b: list[float] = []
    for (main, *_), lx, ly in zip(steps, lead_x, lead_y, strict=True):
        if main == 0:
            a, b = lx, ly
        elif main == 1:
            a, b = ly, -lx
        elif main == 2:
            a, b = -lx, -ly
        else:
            a, b = -ly, lx
        base_a.append(a)
        base_b.append(b)
    wx = _f32s([xs[s[3]] - xs[s[5]] for s in steps])  # seq[1] - seq[3]: left to right
    wy = _f32s([ys[s[3]] - ys[s[5]] for s in steps])
    hx = _f32s([xs[s[4]] - xs[s[2]] for s in steps])  # seq[2] - seq[0]: bottom to top
    hy = _f32s([ys[s[4]] - ys[s[2]] for s in steps])
    width = _f32s(
        [
            a + b
            for a, b in zip(
                _f32s([x * a for x, a in zip(wx, base_a, strict=True)]),
                _f32s([y * b for y, b in zip(wy, base_b, strict=True)]),
                strict=True,
            )
        ]
    )
    height = _f32s(
        [
            a + b
            for a, b in zip(
                _f32s([-x * b for x, b in zip(hx, base_b, strict=True)]),
                _f32s([y * a for y, a in zip(hy, base_a, strict=True)]),
                strict=True,
            )
        ]
    )
    area = _f32s([a * b for a, b in zip(width, height, strict=True)])
    smallest = min(area)
    best = max(k for k in range(n) if area[k] <= smallest)  # `area <= minarea`: the last wins
    left_i, bottom_i = steps[best][5], steps[best][2]
    a1, b1, wd, ht = base_a[best], base_b[best], width[best], height[best]
    a2, b2 = -b1, a1
    c1 = f32(f32(a1 * xs[left_i]) + f32(ys[left_i] * b1))
    c2 = f32(f32(a2 * xs[bottom_i]) + f32(ys[bottom_i] * b2))
    idet = f32(1.0 / f32(f32(a1 * b2) - f32(a2 * b1)))
    px = f32(f32(f32(c1 * b2) - f32(c2 * b1)) * idet)
    py = f32(f32(f32(a1 * c2) - f32(a2 * c1)) * idet)
    return (px, py), (f32(a1 * wd), f32(b1 * wd)), (f32(a2 * ht), f32(b2 * ht))


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
