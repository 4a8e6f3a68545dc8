"""apps/ocr/boxes.py (and its C module _boxes, rotated.py, polygons.py) against what they
reproduce: rapidocr's DB post-processing run natively (its own ``DBPostProcess``,
``filter_tag_det_res`` and ``sorted_boxes`` on OpenCV 5, shapely and pyclipper)
and each OpenCV call they stand in for.

rapidocr's package comes from build/models/ocr/rapidocr_onnxruntime, which
apps/ocr/prepare.py extracts from the rapidocr-onnxruntime 1.4.4 wheel (run
here when missing). The detector maps come from its own PP-OCRv4 model on
onnxruntime, over pages rendered with Pillow and the DejaVu fonts.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import onnxruntime as ort  # type: ignore[import-untyped]
import pytest

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "apps" / "ocr"
MODELS = ROOT / "build" / "models" / "ocr"
PACKAGE = MODELS / "rapidocr_onnxruntime"
DET_MODEL = PACKAGE / "models" / "ch_PP-OCRv4_det_infer.onnx"
FONTS = Path("/usr/share/fonts/truetype/dejavu")

# The app's C module (ext/_boxes.c) for this Python; a no-op when it is fresh.
subprocess.run(
    [sys.executable, str(ROOT / "tools" / "build_ext.py"), str(APP), "--targets", "native"],
    check=True,
)
sys.path.insert(0, str(APP))
import _boxes  # type: ignore[import-not-found, unused-ignore]  # noqa: E402
import boxes  # type: ignore[import-not-found, unused-ignore]  # noqa: E402
import polygons  # type: ignore[import-not-found, unused-ignore]  # noqa: E402
import rotated  # type: ignore[import-not-found, unused-ignore]  # noqa: E402

Found = list[tuple[list[tuple[float, float]], float]]  # (corners, score) per box, in order
RecordProperty = Callable[[str, object], None]


# ---------------------------------------------------------------- reference


class Rapid:
    """rapidocr's own post-processing objects, with its default settings."""

    def __init__(self) -> None:
        if not (PACKAGE / "main.py").exists() or not DET_MODEL.exists():
            env = dict(os.environ, PYTHONPATH=str(ROOT / "tools"))
            prepare = [sys.executable, str(APP / "prepare.py"), str(ROOT / "build" / "models")]
            subprocess.run(prepare, env=env, check=True)
        sys.path.insert(0, str(MODELS))
        from rapidocr_onnxruntime.ch_ppocr_det.text_detect import (  # type: ignore[import-not-found]
            TextDetector,
        )
        from rapidocr_onnxruntime.ch_ppocr_det.utils import (  # type: ignore[import-not-found]
            DBPostProcess,
            DetPreProcess,
        )
        from rapidocr_onnxruntime.main import RapidOCR  # type: ignore[import-not-found]

        self.post = DBPostProcess(
            thresh=0.3,
            box_thresh=0.5,
            max_candidates=1000,
            unclip_ratio=1.6,
            score_mode="fast",
            use_dilation=True,
        )
        self.detector = TextDetector.__new__(TextDetector)  # only its box methods are used
        self.sorted_boxes = RapidOCR.sorted_boxes
        self.pre = DetPreProcess(736, "min", [0.5, 0.5, 0.5], [0.5, 0.5, 0.5])

    def boxes(self, prob: np.ndarray, src_h: int, src_w: int, max_candidates: int = 1000) -> Found:
        """TextDetector's boxes after filter_tag_det_res and sorted_boxes, each
        with its DBPostProcess score (the filter drops scores; an extra row
        carries each box's index through it and the sort)."""
        self.post.max_candidates = max_candidates
        found, scores = self.post(prob[None, None], (src_h, src_w))
        kept = []
        for i, box in enumerate(found):
            b = self.detector.order_points_clockwise(box)
            b = self.detector.clip_det_res(b, src_h, src_w)
            if int(np.linalg.norm(b[0] - b[1])) <= 3 or int(np.linalg.norm(b[0] - b[3])) <= 3:
                continue
            kept.append(np.vstack([b, [[i, 0]]]))
        if not kept:
            return []
        ordered = self.sorted_boxes(np.array(kept))
        return [
            ([(float(x), float(y)) for x, y in b[:4]], float(scores[int(b[4][0])])) for b in ordered
        ]


@pytest.fixture(scope="module")
def rapid() -> Rapid:
    return Rapid()


def mask_of(prob: np.ndarray) -> np.ndarray:
    """What the host hands over: prob > 0.3 dilated with DBPostProcess's 2x2 kernel."""
    kernel = np.array([[1, 1], [1, 1]], np.uint8)
    return cv2.dilate((prob > 0.3).astype(np.uint8), kernel)


def ours(prob: np.ndarray, src_h: int, src_w: int, max_candidates: int = 1000) -> Found:
    found = boxes.detect_boxes(
        prob.astype(np.float32), mask_of(prob), src_h, src_w, max_candidates=max_candidates
    )
    return [(b.points, b.score) for b in found]


def assert_same(reference: Found, got: Found, where: str = "") -> float:
    """Identical boxes in the same order; returns the largest score difference."""
    assert [b for b, _ in got] == [b for b, _ in reference], where
    worst = max((abs(a - b) for (_, a), (_, b) in zip(reference, got, strict=True)), default=0.0)
    assert worst <= 1e-5, where
    return worst


# ------------------------------------------------------ real detector maps

WORDS = (
    "the quick brown fox jumps over a lazy dog invoice total amount due 2026 receipt "
    "OCR wasinn detection page line 42.50 EUR Tel. +33 (0)1 23 45 67 89 #A-17 name@mail.org"
).split()


def render_page(seed: int) -> np.ndarray:
    """A BGR page of text lines: DejaVu fonts at several sizes and colours, some
    pages turned by up to 5 degrees, Gaussian noise, some blurred."""
    from PIL import Image, ImageDraw, ImageFilter, ImageFont

    rng = np.random.default_rng(seed)
    width, height = 560 + 140 * (seed % 4), 500 + 160 * (seed % 5)
    paper = tuple(int(v) for v in rng.integers(205, 256, 3))
    page = Image.new("RGB", (width, height), paper)
    draw = ImageDraw.Draw(page)
    faces = ["DejaVuSans.ttf", "DejaVuSerif.ttf", "DejaVuSansMono.ttf", "DejaVuSans-Bold.ttf"]
    y = int(rng.integers(8, 30))
    while y < height - 40:
        size = int(rng.integers(12, 42))
        font = ImageFont.truetype(str(FONTS / faces[int(rng.integers(0, len(faces)))]), size)
        text = " ".join(str(w) for w in rng.choice(WORDS, int(rng.integers(1, 8))))
        ink = tuple(int(v) for v in rng.integers(0, 100, 3))
        draw.text((int(rng.integers(4, width // 3)), y), text, fill=ink, font=font)
        y += size + int(rng.integers(2, 28))
    if seed % 2:
        page = page.rotate(float(rng.uniform(-5, 5)), expand=False, fillcolor=paper)
    if seed % 3 == 2:
        page = page.filter(ImageFilter.GaussianBlur(float(rng.uniform(0.5, 1.2))))
    pixels = np.asarray(page).astype(np.float32)
    pixels += rng.normal(0.0, float(rng.uniform(0, 10)), pixels.shape)
    return np.ascontiguousarray(np.clip(pixels, 0, 255).astype(np.uint8)[:, :, ::-1])


@pytest.fixture(scope="module")
def detector_maps(rapid: Rapid) -> list[tuple[np.ndarray, int, int]]:
    """(probability map, source height, source width) for 8 rendered pages."""
    assert FONTS.exists(), "no DejaVu fonts: ./build.sh test installs fonts-dejavu-core"
    session = ort.InferenceSession(str(DET_MODEL), providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    maps = []
    for seed in range(8):
        page = render_page(seed)
        prob = session.run(None, {name: rapid.pre(page)})[0][0, 0]
        maps.append((prob, page.shape[0], page.shape[1]))
    return maps


def test_real_detector_maps_give_rapidocrs_boxes(
    rapid: Rapid, detector_maps: list[tuple[np.ndarray, int, int]], record_property: RecordProperty
) -> None:
    total = 0
    worst = 0.0
    for prob, src_h, src_w in detector_maps:
        reference = rapid.boxes(prob, src_h, src_w)
        worst = max(worst, assert_same(reference, ours(prob, src_h, src_w)))
        total += len(reference)
    record_property("boxes", total)
    record_property("worst_score_difference", worst)
    assert total >= 80  # the pages really have text lines


# ------------------------------------------------------------ synthetic maps


def synthetic_map(seed: int) -> tuple[np.ndarray, int, int]:
    """A probability map of shapes whose mean probability sits near box_thresh
    (0.5): bars (text lines), ellipses and rings with holes, 1-pixel lines and
    diagonals, single pixels, shapes cut by the image border; a few maps are
    all set or all empty."""
    rng = np.random.default_rng(seed)
    h, w = int(rng.integers(6, 110)), int(rng.integers(6, 150))
    canvas = np.zeros((h, w), np.float32)
    kind = seed % 6
    for _ in range(int(rng.integers(1, 9))):
        level = float(rng.uniform(0.55, 0.85))
        c = (int(rng.integers(-6, w + 6)), int(rng.integers(-6, h + 6)))
        if kind in (0, 1):
            size = (float(rng.uniform(3, w)), float(rng.uniform(3, 18)))
            corners = cv2.boxPoints((c, size, float(rng.uniform(-8, 8)))).astype(np.int32)
            cv2.fillPoly(canvas, [corners], level)
        elif kind == 2:
            axes = (int(rng.integers(2, 30)), int(rng.integers(2, 16)))
            thick = int(rng.choice([-1, 1, 2, 3]))
            cv2.ellipse(canvas, c, axes, float(rng.uniform(0, 180)), 0, 360, level, thick)
        elif kind == 3:  # rings, often nested
            for r in range(int(rng.integers(3, 9)), int(rng.integers(10, 40)), 5):
                cv2.circle(canvas, c, r, level, int(rng.integers(1, 3)))
        elif kind == 4:  # 1-pixel lines, diagonals among them
            end = (int(rng.integers(0, w)), int(rng.integers(0, h)))
            cv2.line(canvas, c, end, level, 1)
        else:  # single pixels and tiny squares
            y, x = min(max(c[1], 0), h - 1), min(max(c[0], 0), w - 1)
            side = int(rng.integers(1, 4))
            canvas[y : y + side, x : x + side] = level
    background = rng.random((h, w)).astype(np.float32) * 0.3
    noise = (rng.random((h, w)).astype(np.float32) - 0.5) * float(rng.uniform(0, 0.3))
    prob = np.where(canvas > 0, np.clip(canvas + noise, 0, 1), background).astype(np.float32)
    if seed % 23 == 0:
        prob = np.full((h, w), 0.8, np.float32)
    elif seed % 29 == 0:
        prob = np.zeros((h, w), np.float32)
    src_h = max(1, int(h * rng.uniform(0.4, 3.0)))
    src_w = max(1, int(w * rng.uniform(0.4, 3.0)))
    return prob, src_h, src_w


def test_synthetic_maps_give_rapidocrs_boxes(rapid: Rapid, record_property: RecordProperty) -> None:
    total = 0
    near = 0
    for seed in range(600):
        prob, src_h, src_w = synthetic_map(seed)
        reference = rapid.boxes(prob, src_h, src_w)
        assert_same(reference, ours(prob, src_h, src_w), f"seed {seed}")
        total += len(reference)
        near += sum(1 for _, score in reference if score < 0.53)
    record_property("boxes", total)
    assert total >= 300
    assert near >= 40  # boxes kept by a hair: the score threshold is exercised


def test_all_set_and_empty_maps(rapid: Rapid) -> None:
    full = np.full((40, 64), 0.9, np.float32)
    reference = rapid.boxes(full, 80, 128)
    assert len(reference) == 1
    assert_same(reference, ours(full, 80, 128))
    assert ours(np.zeros((40, 64), np.float32), 80, 128) == []


def test_max_candidates_keeps_the_contours_opencv_lists_first(rapid: Rapid) -> None:
    rng = np.random.default_rng(7)
    prob = (rng.random((60, 90)) * 0.2).astype(np.float32)
    for y in range(4, 56, 8):
        for x in range(4, 86, 12):
            prob[y : y + 4, x : x + 7] = 0.9
    for limit in (1, 5, 17, 1000):
        assert_same(rapid.boxes(prob, 60, 90, limit), ours(prob, 60, 90, limit))


# ------------------------------------------------- the OpenCV calls, one by one


def random_mask(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    h, w = int(rng.integers(1, 70)), int(rng.integers(1, 70))
    kind = seed % 4
    if kind == 0:
        return (rng.random((h, w)) < rng.uniform(0.1, 0.9)).astype(np.uint8)
    if kind == 1:
        smooth = cv2.GaussianBlur(rng.random((h, w)).astype(np.float32), (0, 0), 2)
        return (smooth > 0.5).astype(np.uint8)
    if kind == 2:
        dots = (rng.random((h, w)) < 0.3).astype(np.uint8)
        return cv2.dilate(dots, np.ones((2, 2), np.uint8))
    mask = np.zeros((h, w), np.uint8)
    for _ in range(6):
        centre = (int(rng.integers(0, w)), int(rng.integers(0, h)))
        cv2.circle(mask, centre, int(rng.integers(1, 12)), 1, int(rng.integers(1, 3)))
    return mask


def test_find_contours_equals_opencv() -> None:
    for seed in range(800):
        mask = random_mask(seed)
        h, w = mask.shape
        found = cv2.findContours(mask * 255, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)[0]
        expected = [[(int(x), int(y)) for x, y in c.reshape(-1, 2)] for c in found]
        assert _boxes.find_contours(mask.tobytes(), h, w) == expected, f"seed {seed}"


def test_find_contours_edge_cases() -> None:
    assert _boxes.find_contours(b"", 0, 5) == []
    assert _boxes.find_contours(bytes(12), 3, 4) == []
    assert _boxes.find_contours(b"\xff" * 6, 2, 3) == [[(0, 0), (0, 1), (2, 1), (2, 0)]]
    assert _boxes.find_contours(bytes([0, 0, 0, 0, 7, 0, 0, 0, 0]), 3, 3) == [[(1, 1)]]
    with pytest.raises(ValueError, match="not 3 x 4"):
        _boxes.find_contours(bytes(11), 3, 4)


def random_points(seed: int) -> list[tuple[int, int]]:
    rng = np.random.default_rng(seed)
    kind = seed % 4
    pts: Any
    if kind == 0:
        pts = rng.integers(-60, 60, (int(rng.integers(1, 40)), 2))
    elif kind == 1:  # a small grid: repeats and collinear points
        pts = rng.integers(0, 6, (int(rng.integers(1, 14)), 2))
    elif kind == 2:
        centre = rng.uniform(-50, 400, 2)
        size = rng.uniform(1, 300, 2)
        corners = cv2.boxPoints((tuple(centre), tuple(size), float(rng.uniform(-90, 90))))
        pts = np.round(corners).astype(np.int64)
    else:
        found = cv2.findContours(random_mask(seed), cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)[0]
        if not found:
            return [(3, 4)]
        pts = found[int(rng.integers(0, len(found)))].reshape(-1, 2)
    return [(int(x), int(y)) for x, y in pts]


def test_min_area_rect_and_box_points_equal_opencv(record_property: RecordProperty) -> None:
    differ = 0
    for seed in range(4000):
        points = random_points(seed)
        expected = cv2.minAreaRect(np.array(points, np.int32).reshape(-1, 1, 2))
        corners = cv2.boxPoints(expected).tolist()
        rect = rotated.min_area_rect(points)
        hull = cv2.convexHull(np.array(points, np.int32).reshape(-1, 1, 2), clockwise=False)
        if [tuple(p) for p in hull.reshape(-1, 2).tolist()] != rotated.convex_hull(points, False):
            # Where a point repeats, OpenCV 5 may start its hull at another
            # vertex (the vertex set is the same), and calipers then break
            # ties between equal areas differently: only the set is checked.
            assert set(rotated.convex_hull(points, False)) == {
                tuple(p) for p in hull.reshape(-1, 2)
            }
            assert len(set(points)) < len(points), f"seed {seed}"
            differ += 1
            continue
        assert (rect.center, rect.size, rect.angle) == expected, f"seed {seed}"
        assert rotated.box_points(rect).tolist() == corners, f"seed {seed}"
    record_property("hull_start_differs", differ)
    assert differ < 120  # only with repeated points: mostly the small-grid cases


def test_fill_poly_equals_opencv() -> None:
    for seed in range(3000):
        rng = np.random.default_rng(seed)
        w, h = int(rng.integers(1, 40)), int(rng.integers(1, 40))
        if seed % 2:
            size = tuple(rng.uniform(1, 50, 2))
            angle = float(rng.uniform(-90, 90))
            vertices = cv2.boxPoints((tuple(rng.uniform(-5, 45, 2)), size, angle)).astype(np.int32)
        else:  # corners outside the image: OpenCV clips lines and edges
            vertices = rng.integers(-15, 55, (4, 2)).astype(np.int32)
        expected = np.zeros((h, w), np.uint8)
        cv2.fillPoly(expected, [vertices.reshape(-1, 2)], 1)
        got = polygons.fill_poly(vertices, w, h)
        assert np.array_equal(got, expected.astype(bool)), f"seed {seed}"


def test_box_score_and_unclip_equal_rapidocr(rapid: Rapid) -> None:
    rng = np.random.default_rng(3)
    prob = rng.random((50, 70)).astype(np.float32)
    for seed in range(2000):
        r = np.random.default_rng(seed)
        centre, size = tuple(r.uniform(-5, 75, 2)), tuple(r.uniform(1, 60, 2))
        box = cv2.boxPoints((centre, size, float(r.uniform(-90, 90))))
        expected = rapid.post.box_score_fast(prob, box.copy())
        assert boxes.box_score(prob, box) == pytest.approx(expected, abs=1e-9)
        grown = rapid.post.unclip(box).reshape(-1, 2).tolist()
        assert [list(p) for p in boxes.unclip(box, 1.6)] == grown, f"seed {seed}"
        points = [(int(x), int(y)) for x, y in r.integers(-20, 90, (int(r.integers(3, 30)), 2))]
        want, short = rapid.post.get_mini_boxes(np.array(points, np.int32).reshape(-1, 1, 2))
        got, got_short = boxes.mini_box(points)
        assert (got.tolist(), got_short) == (want.tolist(), float(short))


def test_sorted_boxes_and_order_match_rapidocr(rapid: Rapid) -> None:
    rng = np.random.default_rng(11)
    for _ in range(300):
        found = [
            ([(float(x), float(y)) for x, y in rng.integers(0, 40, (4, 2))], float(i))
            for i in range(int(rng.integers(1, 12)))
        ]
        carried = np.array([np.vstack([b, [[s, 0]]]) for b, s in found])
        expected = [float(b[4][0]) for b in rapid.sorted_boxes(carried)]
        assert [s for _, s in boxes.sorted_boxes(found)] == expected
        quad = rng.integers(0, 6, (4, 2)).astype(np.int32)
        want = rapid.detector.order_points_clockwise(quad.copy()).tolist()
        assert boxes.order_points_clockwise(quad).tolist() == want


# ------------------------------------------------------------------- timing


def full_page() -> np.ndarray:
    """One 1280 x 736 page (portrait, as rapidocr sizes a page for its detector)
    with about 30 lines of text, through the detector."""
    from PIL import Image, ImageDraw, ImageFont

    rng = np.random.default_rng(5)
    page = Image.new("RGB", (736, 1280), (250, 250, 245))
    draw = ImageDraw.Draw(page)
    font = ImageFont.truetype(str(FONTS / "DejaVuSerif.ttf"), 22)
    for line in range(30):
        text = " ".join(str(w) for w in rng.choice(WORDS, int(rng.integers(4, 9))))
        draw.text((40, 30 + 41 * line), text, fill=(20, 20, 20), font=font)
    return np.ascontiguousarray(np.asarray(page)[:, :, ::-1])


def test_full_page_speed(rapid: Rapid, record_property: RecordProperty) -> None:
    """Records our time and rapidocr's post-processing time (CPU time, best of
    5) for a full page; asserts only a loose bound, as the machine is shared."""
    assert FONTS.exists(), "no DejaVu fonts: ./build.sh test installs fonts-dejavu-core"
    session = ort.InferenceSession(str(DET_MODEL), providers=["CPUExecutionProvider"])
    page = full_page()
    src_h, src_w = page.shape[:2]
    prob = session.run(None, {session.get_inputs()[0].name: rapid.pre(page)})[0][0, 0]
    h, w = prob.shape
    mask = mask_of(prob)

    def best(run: Callable[[], Any]) -> float:
        times = []
        for _ in range(5):
            start = time.process_time()
            run()
            times.append(time.process_time() - start)
        return 1000 * min(times)

    ms = best(lambda: boxes.detect_boxes(prob, mask, src_h, src_w))
    rapid.post.max_candidates = 1000
    reference_ms = best(lambda: rapid.post(prob[None, None], (src_h, src_w)))
    count = len(boxes.detect_boxes(prob, mask, src_h, src_w))
    record_property("map", f"{h}x{w}")
    record_property("boxes", count)
    record_property("ms", round(ms, 1))
    record_property("rapidocr_ms", round(reference_ms, 1))
    print(f"\n{h}x{w} map, {count} boxes: {ms:.1f} ms (rapidocr {reference_ms:.1f} ms)")
    assert count >= 25
    assert ms < 150
