"""pyclipper cases, written to run unchanged natively and in a component.

``CASES[name]()`` is a list of cases (plain JSON-able dicts); ``outcome(pyclipper,
case)`` runs one and returns its result, or the exception it raised, as JSON-able
data. tests/pyclipper_app runs them inside a component and
tests/test_pyclipper_guest.py natively, with the host's pyclipper, and compares.
Standard library only: random cases come from a seeded ``random.Random``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

Point = list[float]
#: Clipper's largest coordinate (clipper.hpp's hiRange): beyond it the C++ throws.
HI_RANGE = 0x3FFFFFFFFFFFFFFF


def _rotated_box(cx: float, cy: float, w: float, h: float, degrees: float) -> list[Point]:
    """A text box's corners as cv2.boxPoints gives them: floats, clockwise."""
    a = math.radians(degrees)
    c, s = math.cos(a), math.sin(a)
    corners = ((-w / 2, -h / 2), (w / 2, -h / 2), (w / 2, h / 2), (-w / 2, h / 2))
    return [[cx + c * x - s * y, cy + s * x + c * y] for x, y in corners]


def unclip_distance(box: list[Point], ratio: float = 1.6) -> float:
    """rapidocr's unclip distance: area * ratio / perimeter (shapely's, here by hand)."""
    n = len(box)
    area = abs(sum(box[i][0] * box[(i + 1) % n][1] - box[(i + 1) % n][0] * box[i][1]
                   for i in range(n))) / 2  # fmt: skip
    length = sum(math.dist(box[i], box[(i + 1) % n]) for i in range(n))
    return area * ratio / length


def ocr() -> list[dict[str, Any]]:
    """Text boxes and curved text polygons grown the way rapidocr's unclip does it,
    then clipped to the image and merged."""
    rng = random.Random(20)
    cases: list[dict[str, Any]] = []
    boxes = []
    for _ in range(40):
        box = _rotated_box(rng.uniform(0, 960), rng.uniform(0, 720), rng.uniform(12, 400),
                           rng.uniform(8, 60), rng.uniform(-30, 30))  # fmt: skip
        boxes.append(box)
        cases.append({"op": "offset", "paths": [box], "delta": unclip_distance(box),
                      "join": "JT_ROUND", "end": "ET_CLOSEDPOLYGON"})  # fmt: skip
    for _ in range(10):  # curved text: two arcs of 8 points each
        r, cx, cy, span = rng.uniform(100, 400), rng.uniform(0, 960), rng.uniform(0, 720), 0.8
        arc = [rng.uniform(-1.5, 1.5) + span * i / 7 for i in range(8)]
        outer = [[cx + r * math.cos(t), cy + r * math.sin(t)] for t in arc]
        inner = [[cx + (r - 30) * math.cos(t), cy + (r - 30) * math.sin(t)] for t in reversed(arc)]
        poly = outer + inner
        cases.append({"op": "offset", "paths": [poly], "delta": unclip_distance(poly),
                      "join": "JT_ROUND", "end": "ET_CLOSEDPOLYGON"})  # fmt: skip
    image = [[0, 0], [960, 0], [960, 720], [0, 720]]
    for box in boxes[:10]:
        cases.append({"op": "clip", "subject": [box], "clip": [image],
                      "type": "CT_INTERSECTION", "fill": "PFT_NONZERO"})  # fmt: skip
    cases.append({"op": "clip", "subject": boxes, "clip": [], "type": "CT_UNION",
                  "fill": "PFT_NONZERO"})  # fmt: skip
    cases.append({"op": "clip", "subject": boxes[:20], "clip": boxes[20:], "type": "CT_DIFFERENCE",
                  "fill": "PFT_NONZERO"})  # fmt: skip
    cases.append({"op": "clip2", "subject": [[[0, 0], [100, 0], [100, 100], [0, 100]],
                                             [[20, 20], [20, 80], [80, 80], [80, 20]],
                                             [[40, 40], [60, 40], [60, 60], [40, 60]]],
                  "clip": [], "type": "CT_UNION", "fill": "PFT_EVENODD"})  # fmt: skip
    cases.append({"op": "clip_open", "subject": [[-10, 50], [50, 60], [110, 40]],
                  "clip": [image[:]], "type": "CT_INTERSECTION"})  # fmt: skip
    cases.append({"op": "scale", "paths": boxes[:5]})
    return cases


def _random_polygon(rng: random.Random, scale: int) -> list[list[int]]:
    return [[rng.randint(-scale, scale), rng.randint(-scale, scale)]
            for _ in range(rng.randint(3, 12))]  # fmt: skip


def randomized() -> list[dict[str, Any]]:
    """Random (often self-intersecting) polygons through every operation."""
    rng = random.Random(7)
    joins, ends = ["JT_ROUND", "JT_SQUARE", "JT_MITER"], ["ET_CLOSEDPOLYGON", "ET_CLOSEDLINE",
                                                          "ET_OPENBUTT", "ET_OPENSQUARE",
                                                          "ET_OPENROUND"]  # fmt: skip
    types = ["CT_INTERSECTION", "CT_UNION", "CT_DIFFERENCE", "CT_XOR"]
    fills = ["PFT_EVENODD", "PFT_NONZERO", "PFT_POSITIVE", "PFT_NEGATIVE"]
    cases: list[dict[str, Any]] = []
    for _ in range(60):
        scale = rng.choice([10, 1000, 10**6, 2**40])
        a, b = _random_polygon(rng, scale), _random_polygon(rng, scale)
        cases.append({"op": "clip", "subject": [a], "clip": [b], "type": rng.choice(types),
                      "fill": rng.choice(fills)})  # fmt: skip
        cases.append({"op": "offset", "paths": [a], "delta": rng.uniform(-scale / 4, scale / 4),
                      "join": rng.choice(joins), "end": rng.choice(ends),
                      "arc_tolerance": max(0.25, scale / 10000)})  # fmt: skip
        cases.append({"op": "measure", "path": a, "point": b[0]})
        cases.append({"op": "simplify", "paths": [a, b]})
        cases.append({"op": "minkowski", "pattern": b[:4], "path": a})
    return cases


def hostile() -> list[dict[str, Any]]:
    """Input Clipper's C++ rejects with a throw (natively: the process aborts)."""
    big = [[0, 0], [HI_RANGE + 1, 0], [0, 100]]
    half = [[0, 0], [HI_RANGE // 2 + 1, 0], [0, HI_RANGE // 2 + 1]]
    tri = [[0, 0], [100, 0], [0, 100]]
    return [
        {"op": "clip", "subject": [big], "clip": [], "type": "CT_UNION", "fill": "PFT_NONZERO"},
        {"op": "clip", "subject": [tri], "clip": [[[-HI_RANGE - 1, 0], [0, 5], [5, 5]]],
         "type": "CT_UNION", "fill": "PFT_NONZERO"},
        {"op": "clip", "subject": [[[0, 0], [2**64, 0], [0, 1]]], "clip": [], "type": "CT_UNION",
         "fill": "PFT_NONZERO"},
        {"op": "clip_open_as_clip", "subject": [tri], "clip": [[0, 0], [10, 10]]},
        {"op": "execute_open", "subject": [[0, 0], [10, 10], [20, 0]]},
        {"op": "offset", "paths": [half], "delta": float(HI_RANGE // 2), "join": "JT_ROUND",
         "end": "ET_CLOSEDPOLYGON"},
        {"op": "offset", "paths": [big], "delta": 0.0, "join": "JT_SQUARE",
         "end": "ET_CLOSEDPOLYGON"},
        {"op": "offset", "paths": [tri], "delta": math.inf, "join": "JT_ROUND",
         "end": "ET_CLOSEDPOLYGON"},
        {"op": "offset", "paths": [tri], "delta": math.nan, "join": "JT_ROUND",
         "end": "ET_CLOSEDPOLYGON"},
        {"op": "offset", "paths": [tri], "delta": 1e9, "join": "JT_ROUND",
         "end": "ET_CLOSEDPOLYGON", "arc_tolerance": 1e-300},
        {"op": "offset2", "paths": [half], "delta": -float(HI_RANGE // 2), "join": "JT_MITER",
         "end": "ET_CLOSEDPOLYGON"},
        {"op": "simplify", "paths": [big]},
        {"op": "minkowski", "pattern": half, "path": half},
        {"op": "minkowski_diff", "pattern": half, "path": [[-v for v in p] for p in half]},
    ]


CASES: dict[str, Callable[[], list[dict[str, Any]]]] = {
    "ocr": ocr, "random": randomized, "hostile": hostile,
}  # fmt: skip


def _tree(node: Any) -> dict[str, Any]:
    return {"contour": node.Contour, "hole": node.IsHole, "open": node.IsOpen,
            "children": [_tree(child) for child in node.Childs]}  # fmt: skip


def run(pc: Any, case: dict[str, Any]) -> Any:
    """Run one case with the pyclipper module ``pc``; return its JSON-able result."""
    op = case["op"]
    if op in ("offset", "offset2"):
        offset = pc.PyclipperOffset(arc_tolerance=case.get("arc_tolerance", 0.25))
        offset.AddPaths(case["paths"], getattr(pc, case["join"]), getattr(pc, case["end"]))
        if op == "offset2":
            return _tree(offset.Execute2(case["delta"]))
        return offset.Execute(case["delta"])
    if op in ("clip", "clip2"):
        clipper = pc.Pyclipper()
        clipper.AddPaths(case["subject"], pc.PT_SUBJECT, True)
        if case["clip"]:
            clipper.AddPaths(case["clip"], pc.PT_CLIP, True)
        fill = getattr(pc, case["fill"])
        if op == "clip2":
            return _tree(clipper.Execute2(getattr(pc, case["type"]), fill, fill))
        return clipper.Execute(getattr(pc, case["type"]), fill, fill)
    if op == "clip_open":
        clipper = pc.Pyclipper()
        clipper.AddPath(case["subject"], pc.PT_SUBJECT, False)
        clipper.AddPaths(case["clip"], pc.PT_CLIP, True)
        tree = clipper.Execute2(getattr(pc, case["type"]))
        return {"open": pc.OpenPathsFromPolyTree(tree), "closed": pc.ClosedPathsFromPolyTree(tree)}
    if op == "clip_open_as_clip":
        clipper = pc.Pyclipper()
        clipper.AddPaths(case["subject"], pc.PT_SUBJECT, True)
        return clipper.AddPath(case["clip"], pc.PT_CLIP, False)
    if op == "execute_open":
        clipper = pc.Pyclipper()
        clipper.AddPath(case["subject"], pc.PT_SUBJECT, False)
        return clipper.Execute(pc.CT_UNION)
    if op == "measure":
        path = case["path"]
        return {"area": pc.Area(path), "orientation": pc.Orientation(path),
                "inside": pc.PointInPolygon(case["point"], path),
                "reversed": pc.ReversePath(path), "clean": pc.CleanPolygon(path)}  # fmt: skip
    if op == "simplify":
        return {"one": pc.SimplifyPolygon(case["paths"][0]),
                "all": pc.SimplifyPolygons(case["paths"], pc.PFT_NONZERO)}  # fmt: skip
    if op == "minkowski":
        return {"sum": pc.MinkowskiSum(case["pattern"], case["path"], True),
                "sum2": pc.MinkowskiSum2(case["pattern"], [case["path"]], False)}  # fmt: skip
    if op == "minkowski_diff":
        return pc.MinkowskiDiff(case["pattern"], case["path"])
    if op == "scale":
        scaled = pc.scale_to_clipper(case["paths"])
        clipper = pc.Pyclipper()
        clipper.AddPaths(scaled, pc.PT_SUBJECT, True)
        merged = clipper.Execute(pc.CT_UNION, pc.PFT_NONZERO, pc.PFT_NONZERO)
        return {"scaled": scaled, "merged": pc.scale_from_clipper(merged)}
    raise ValueError(f"unknown op {op!r}")


def outcome(pc: Any, case: dict[str, Any]) -> dict[str, Any]:
    """``{"result": ...}``, or ``{"raised": name, "message": text}``."""
    try:
        return {"result": run(pc, case)}
    except Exception as exc:
        return {"raised": type(exc).__name__, "message": str(exc)}
