"""``cv2.findContours(mask, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)`` in pure Python.

OpenCV (5.0, like 4.x) finds borders with Suzuki and Abe's algorithm: a raster
scan meets each border once, follows it pixel by pixel, and RETR_LIST returns
the borders last met first. Scanning a 736 x 1280 map pixel by pixel is far too
slow in Python, so this module splits the work:

- where the scan would meet each border is read from runs of set pixels, found
  with ``bytes.find`` (memchr): an outer border starts at the first pixel of
  each 8-connected component of ones, a hole border just left of the first
  pixel of each 4-connected component of zeros that does not reach the frame;
- only border pixels are then followed, with OpenCV's neighbour order, and a
  straight horizontal stretch of border is crossed in one ``bytes.find``.

The result is the same point lists in the same order (checked against cv2 on
thousands of random masks in tests/test_ocr_boxes.py).
"""

from __future__ import annotations

from rotated import IntPoint

_ONES = bytes([0] + [1] * 255)  # any nonzero mask byte counts as set, as in findContours

# Chain code directions as OpenCV numbers them (y grows downwards): 0 right,
# 1 up-right, 2 up, ... 7 down-right.
_DX = (1, 1, 0, -1, -1, -1, 0, 1)
_DY = (0, -1, -1, -1, 0, 1, 1, 1)


def find_contours(mask: bytes, h: int, w: int, limit: int | None = None) -> list[list[IntPoint]]:
    """``cv2.findContours(mask, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)[0]`` as
    lists of (x, y): every outer border and every hole border, each from the
    pixel where OpenCV's raster scan meets it, the last one met first. With
    ``limit``, only the first ``limit`` of them are followed.

    Example::

        find_contours(bytes([0, 0, 0, 0, 1, 1, 0, 1, 1]), 3, 3)
        # [[(1, 1), (1, 2), (2, 2), (2, 1)]]
    """
    if h < 0 or w < 0 or len(mask) != h * w:
        raise ValueError(f"the mask has {len(mask)} bytes, not {h} x {w}")
    if h == 0 or w == 0:
        return []
    stride = w + 2
    image = _padded(mask.translate(_ONES), h, w)
    starts = _border_starts(image, h, stride)[::-1][:limit]
    deltas = tuple(dx + dy * stride for dx, dy in zip(_DX, _DY, strict=True)) * 2
    contours: list[list[IntPoint]] = []
    for start, hole in starts:
        flat = _follow(image, stride, deltas, start, hole)
        contours.append([(i % stride - 1, i // stride - 1) for i in flat])
    return contours


def _padded(mask: bytes, h: int, w: int) -> bytes:
    """The mask with a frame of zeros, as findContours pads it: borders never
    leave the image, and no run of ones crosses from one row into the next."""
    stride = w + 2
    out = bytearray(stride * (h + 2))
    for r in range(h):
        at = (r + 1) * stride + 1
        out[at : at + w] = mask[r * w : (r + 1) * w]
    return bytes(out)


def _border_starts(image: bytes, h: int, stride: int) -> list[tuple[int, bool]]:
    """(first pixel, is_hole) of every border in raster-scan order.

    OpenCV's Suzuki-Abe scan starts an outer border at the first pixel of each
    8-connected component of ones (its top row's leftmost pixel) and a hole
    border where it first meets each 4-connected component of zeros that does
    not reach the frame (the one pixel left of that component's top-left zero).
    Both are found here from runs instead of a pixel-by-pixel scan.
    """
    rows: list[list[tuple[int, int]]] = [[] for _ in range(h + 2)]
    # Runs of ones with bytes.find (memchr, C speed; a regex is ten times
    # slower on a mostly empty map). The zero frame ends each run in its row.
    find = image.find
    a = find(b"\x01")
    while a >= 0:
        b = find(b"\x00", a)
        rows[a // stride].append((a, b))
        a = find(b"\x01", b)

    # 8-connected components of runs: union-find over run numbers.
    parent: list[int] = []
    run_start: list[int] = []

    above: list[tuple[int, int]] = []
    above_ids: list[int] = []
    interior_gaps = False
    for r in range(h + 2):
        here = rows[r]
        here_ids = list(range(len(parent), len(parent) + len(here)))
        for a, _ in here:
            parent.append(len(parent))
            run_start.append(a)
        if len(here) > 1:
            interior_gaps = True
        i = j = 0
        while i < len(above) and j < len(here):
            a0, a1 = above[i]
            b0, b1 = here[j]
            a0 += stride
            a1 += stride
            if a0 <= b1 and b0 <= a1:  # overlapping or touching diagonally
                _join(parent, above_ids[i], here_ids[j])
            if a1 < b1:
                i += 1
            else:
                j += 1
        above, above_ids = here, here_ids

    starts: list[tuple[int, bool]] = []
    seen: set[int] = set()
    for k in range(len(parent)):
        top = _root(parent, k)
        if top not in seen:
            seen.add(top)
            starts.append((run_start[k], False))
    if interior_gaps:  # holes need two runs in one row
        starts += _hole_starts(rows, h, stride)
        # A hole is met at its first zero, one pixel after its start pixel: on
        # a tie with an outer border starting there, (pixel, False) comes first.
        starts.sort()
    return starts


def _hole_starts(rows: list[list[tuple[int, int]]], h: int, stride: int) -> list[tuple[int, bool]]:
    """(pixel left of the first zero, True) for each 4-connected component of
    zeros enclosed by ones. Only the gaps between two runs of one row can be
    part of a hole; gaps reaching the frame, and whatever they touch, are not."""
    parent = [0]  # node 0: everything connected to the frame

    gap_start: list[int] = [-1]
    above: list[tuple[int, int, int]] = [(0, stride, 0)]  # (first col, end col, node)
    for r in range(1, h + 2):
        base = r * stride
        here = rows[r]
        gaps: list[tuple[int, int, int]] = []
        if not here:
            gaps.append((0, stride, 0))
        else:
            gaps.append((0, here[0][0] - base, 0))
            for (_, b1), (a0, _) in zip(here, here[1:], strict=False):
                parent.append(len(parent))
                gap_start.append(b1)
                gaps.append((b1 - base, a0 - base, len(parent) - 1))
            gaps.append((here[-1][1] - base, stride, 0))
        i = j = 0
        while i < len(above) and j < len(gaps):
            a0, a1, na = above[i]
            b0, b1, nb = gaps[j]
            if a0 < b1 and b0 < a1:  # sharing a column: 4-connected
                _join(parent, na, nb)
            if a1 < b1:
                i += 1
            else:
                j += 1
        above = gaps
    starts: list[tuple[int, bool]] = []
    seen: set[int] = {0}
    for k in range(1, len(parent)):
        top = _root(parent, k)
        if top not in seen:
            seen.add(top)
            starts.append((gap_start[k] - 1, True))
    return starts


def _follow(image: bytes, stride: int, deltas: tuple[int, ...], i0: int, hole: bool) -> list[int]:
    """The CHAIN_APPROX_SIMPLE points (flat indices) of the border through
    ``i0``, followed as OpenCV's ``icvFetchContourEx`` does: search the
    neighbours clockwise for where the border came from, then repeatedly
    counter-clockwise (in y-down terms) for where it goes, keeping each pixel
    where the direction changes, until the first step comes round again."""
    s_end = 0 if hole else 4
    s = s_end
    while True:
        s = (s - 1) & 7
        i1 = i0 + deltas[s]
        if image[i1] or s == s_end:
            break
    if s == s_end:
        return [i0]  # a lone pixel
    points: list[int] = []
    append = points.append
    find = image.find
    rfind = image.rfind
    i3 = i0
    prev_s = s ^ 4
    while True:
        s += 1
        i4 = i3 + deltas[s]
        while not image[i4]:
            s += 1
            i4 = i3 + deltas[s]
        s &= 7
        if s != prev_s:
            append(i3)
            prev_s = s
        elif i4 != i0 or i3 != i1:
            # The same direction again: no point kept. Along a row more such
            # steps follow: moving right (0), with the pixels below known to be
            # zero, while the pixel ahead is set and the one below it is not;
            # moving left (4) likewise with the row above. Skip to the last of
            # them with bytes.find, stopping short of the start pixel (where
            # following may end: on the step from i1, found first, back to i0).
            if s == 0:
                end = find(b"\x00", i4 + 1)
                below = find(b"\x01", i4 + stride + 1, end + stride)
                stop = (below - stride if below >= 0 else end) - 1
                if i4 < i0 <= stop:
                    stop = i0 - 1
                i4 = stop
            elif s == 4:
                end = rfind(b"\x00", 0, i4)
                above = rfind(b"\x01", end - stride, i4 - stride)
                stop = (above + stride if above >= 0 else end) + 1
                if stop <= i0 < i4:
                    stop = i0 + 1
                i4 = stop
            i3 = i4
            s = (s + 4) & 7
            continue
        if i4 == i0 and i3 == i1:
            break
        i3 = i4
        s = (s + 4) & 7
    return points


def _root(parent: list[int], i: int) -> int:
    """The representative of ``i``'s set (union-find, halving the path as it goes)."""
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def _join(parent: list[int], a: int, b: int) -> None:
    """Merge the sets of ``a`` and ``b``; the smaller representative stays, so a
    set's representative is its first member (the order border starts come in)."""
    ra, rb = _root(parent, a), _root(parent, b)
    if ra < rb:
        parent[rb] = ra
    elif rb < ra:
        parent[ra] = rb
