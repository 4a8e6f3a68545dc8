"""The numpy benchmark's cases: the same code runs in the component (``app.py``)
and natively (``bench/numpy_bench.py``), on the same inputs.

Each case is the numpy a user writes for pre- and post-processing, or a generic
operation (elementwise, reductions, indexing). Inputs come from
``np.random.default_rng(seed)`` (PCG64, the same stream on every platform) and
are made outside the timing. :func:`measure` runs one case: a warm-up call,
then timed calls (``time.perf_counter``) until both ``min_reps`` calls and
``budget`` seconds are spent (at most ``max_reps``); it returns the median and
the least time and a checksum of the result, which the bench compares between the two sides.

Example::

    >>> import numpy as np
    >>> row = measure(np, CASES["softmax"], budget=0.01)
    >>> sorted(row)
    ['check', 'median_us', 'min_us', 'reps']
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Kinds of row, for the goals: elementwise and reduction <= 1.5x native,
#: matmul <= 5x (with a BLAS).
ELEMENTWISE, REDUCTION, MATMUL, OTHER = "elementwise", "reduction", "matmul", "pre/post"

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class Case:
    """``setup(np)`` makes the inputs once; ``run(np, inputs)`` is timed. A case
    of the operation grid names its ``grid`` cell: (operation, dtype, size)."""

    name: str
    what: str
    kind: str
    setup: Callable[[Any], Any]
    run: Callable[[Any, Any], Any]
    grid: tuple[str, str, int] | None = None


def nms(np: Any, boxes: Any, scores: Any, iou: float = 0.5) -> Any:
    """Non-maximum suppression as users write it (the classic ``py_cpu_nms``):
    indices of the kept boxes, best first. ``boxes`` is [N, 4] x0, y0, x1, y1."""
    x1, y1, x2, y2 = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
    areas = (x2 - x1) * (y2 - y1)
    order = scores.argsort()[::-1]
    keep = []
    while order.size > 0:
        i = order[0]
        keep.append(i)
        rest = order[1:]
        xx1 = np.maximum(x1[i], x1[rest])
        yy1 = np.maximum(y1[i], y1[rest])
        xx2 = np.minimum(x2[i], x2[rest])
        yy2 = np.minimum(y2[i], y2[rest])
        inter = np.maximum(0.0, xx2 - xx1) * np.maximum(0.0, yy2 - yy1)
        overlap = inter / (areas[i] + areas[rest] - inter)
        order = rest[np.where(overlap <= iou)[0]]
    return np.array(keep)


def _image(np: Any) -> Any:
    rng = np.random.default_rng(1)
    return (rng.integers(0, 256, (480, 640, 3), dtype=np.uint8),
            np.array(MEAN, np.float32) * 255, np.array(STD, np.float32) * 255)  # fmt: skip


def _normalise(np: Any, x: Any) -> Any:
    img, mean, std = x
    return np.ascontiguousarray(((img.astype(np.float32) - mean) / std).transpose(2, 0, 1))


def _logits(np: Any) -> Any:
    return np.random.default_rng(2).normal(0.0, 3.0, (32, 1000)).astype(np.float32)


def _softmax(np: Any, x: Any) -> Any:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _topk(np: Any, x: Any) -> Any:
    best = x.argmax(axis=1)
    part = np.argpartition(x, -5, axis=1)[:, -5:]
    order = np.argsort(-np.take_along_axis(x, part, axis=1), axis=1)
    return best, np.take_along_axis(part, order, axis=1)


def _boxes(np: Any) -> Any:
    """1,000 detections as a detector gives them: 100 objects, 10 jittered boxes each."""
    rng = np.random.default_rng(3)
    xy = np.repeat(rng.uniform(0, 600, (100, 2)), 10, axis=0)
    wh = np.repeat(rng.uniform(16, 160, (100, 2)), 10, axis=0)
    xy = xy + rng.normal(0, 4, xy.shape)
    wh = wh * rng.uniform(0.85, 1.15, wh.shape)
    boxes = np.concatenate([xy, xy + wh], axis=1).astype(np.float32)
    return boxes, rng.random(1000, dtype=np.float32)


def _mask(np: Any) -> Any:
    return np.random.default_rng(4).random((512, 512), dtype=np.float32)


def _threshold(np: Any, m: Any) -> Any:
    binary = (m > 0.5).astype(np.uint8) * 255
    return binary, int(np.count_nonzero(binary))


def _vector(dtype: str, seed: int, n: int = 1_000_000) -> Callable[[Any], Any]:
    return lambda np: np.random.default_rng(seed).random(n, dtype=getattr(np, dtype))


def _three(np: Any) -> Any:
    rng = np.random.default_rng(5)
    return tuple(rng.random(1_000_000, dtype=np.float32) for _ in range(3))


def _square(np: Any) -> Any:
    rng = np.random.default_rng(6)
    return rng.random((256, 256), dtype=np.float32), rng.random((256, 256), dtype=np.float32)


def _bytes(np: Any) -> Any:
    return np.random.default_rng(7).integers(0, 256, 1_000_000, dtype=np.uint8).tobytes()


def _gather(np: Any) -> Any:
    rng = np.random.default_rng(8)
    return rng.random(1_000_000, dtype=np.float32), rng.integers(0, 1_000_000, 100_000)


def _reductions(np: Any, a: Any) -> Any:
    return float(a.sum()), float(a.mean()), float(a.max()), int(a.argmax())


def _ones(np: Any) -> Any:
    return np.ones(1), np.ones(1)


def _nothing() -> None:
    return None


def _python_calls(np: Any, x: Any) -> Any:
    for _ in range(1000):
        _nothing()
    return 0


CASE_LIST = [
    Case("normalise", "normalise + transpose 480x640x3 u8 HWC -> CHW f32 (mean/std)", OTHER,
         _image, _normalise),
    Case("softmax", "soft-max f32 [32, 1000] (max, exp, sum, divide)", OTHER, _logits, _softmax),
    Case("topk", "argmax + top-5 (argpartition + argsort) f32 [32, 1000]", OTHER, _logits, _topk),
    Case("nms", "NMS of 1,000 boxes, 100 objects (IoU 0.5, a Python loop of numpy calls)",
         OTHER, _boxes, lambda np, x: nms(np, *x)),
    Case("threshold", "threshold a 512x512 f32 mask -> u8 0/255 + count", OTHER, _mask, _threshold),
    Case("sort_f32", "sort 1e6 f32", OTHER, _vector("float32", 9), lambda np, a: np.sort(a)),
    Case("sort_f64", "sort 1e6 f64", OTHER, _vector("float64", 10), lambda np, a: np.sort(a)),
    Case("matmul", "matmul 256x256 f32", MATMUL, _square, lambda np, x: x[0] @ x[1]),
    Case("frombuffer", "frombuffer 1e6 bytes (u8) -> f32", ELEMENTWISE, _bytes,
         lambda np, b: np.frombuffer(b, np.uint8).astype(np.float32)),
    Case("axpy", "elementwise a * b + c, 1e6 f32", ELEMENTWISE, _three,
         lambda np, x: x[0] * x[1] + x[2]),
    Case("scale", "elementwise a * 2 + 1, 1e6 f64", ELEMENTWISE, _vector("float64", 11),
         lambda np, a: a * 2.0 + 1.0),
    Case("exp", "elementwise exp, 1e6 f32", ELEMENTWISE, _vector("float32", 12),
         lambda np, a: np.exp(a)),
    Case("sqrt", "elementwise sqrt, 1e6 f64", ELEMENTWISE, _vector("float64", 13),
         lambda np, a: np.sqrt(a)),
    Case("compare", "elementwise a > 0.5, 1e6 f32", ELEMENTWISE, _vector("float32", 14),
         lambda np, a: a > 0.5),
    Case("reduce_f32", "reductions sum, mean, max, argmax, 1e6 f32", REDUCTION,
         _vector("float32", 15), _reductions),
    Case("reduce_f64", "reductions sum, mean, max, argmax, 1e6 f64", REDUCTION,
         _vector("float64", 16), _reductions),
    Case("std", "std, 1e6 f64", REDUCTION, _vector("float64", 17), lambda np, a: float(a.std())),
    Case("fancy", "fancy index a[idx], 1e5 of 1e6 f32", OTHER, _gather,
         lambda np, x: x[0][x[1]]),
    Case("boolmask", "boolean mask a[a > 0.5], 1e6 f32", OTHER, _vector("float32", 18),
         lambda np, a: a[a > 0.5]),
    # What a call costs whatever its size (the grid's 1e3 column is mostly this):
    # numpy's ufunc machinery on one element, and the interpreter itself.
    Case("ufunc_call", "one ufunc call: a + b on 1-element f64 arrays", OTHER, _ones,
         lambda np, x: x[0] + x[1]),
    Case("python_calls", "1,000 calls of an empty Python function (the interpreter)", OTHER,
         lambda np: None, _python_calls),
]  # fmt: skip

#: The operation grid (issue 35's goal table): each operation at each dtype and
#: size, on two arrays of uniform values in [0.5, 1.5) (positive: log and sqrt
#: stay finite; about half of each side of 1.0, the comparisons' threshold).
GRID_SIZES = (1_000, 100_000, 1_000_000)
GRID_DTYPES = ("float32", "float64")
GRID_OPS: list[tuple[str, str, str, Callable[[Any, Any], Any]]] = [
    ("add", "a + b", ELEMENTWISE, lambda np, x: x[0] + x[1]),
    ("multiply", "a * b", ELEMENTWISE, lambda np, x: x[0] * x[1]),
    ("divide", "a / b", ELEMENTWISE, lambda np, x: x[0] / x[1]),
    ("greater", "a > b", ELEMENTWISE, lambda np, x: x[0] > x[1]),
    ("where", "where(a > 1, a, b)", ELEMENTWISE, lambda np, x: np.where(x[0] > 1.0, x[0], x[1])),
    ("clip", "clip(a, 0.75, 1.25)", ELEMENTWISE, lambda np, x: np.clip(x[0], 0.75, 1.25)),
    ("abs", "abs(a - 1)", ELEMENTWISE, lambda np, x: np.abs(x[2])),
    ("sqrt", "sqrt(a)", ELEMENTWISE, lambda np, x: np.sqrt(x[0])),
    ("exp", "exp(a)", ELEMENTWISE, lambda np, x: np.exp(x[0])),
    ("log", "log(a)", ELEMENTWISE, lambda np, x: np.log(x[0])),
    ("max", "max(a)", REDUCTION, lambda np, x: x[0].max()),
    ("argmax", "argmax(a)", REDUCTION, lambda np, x: x[0].argmax()),
    ("sum", "sum(a)", REDUCTION, lambda np, x: x[0].sum()),
    ("mean", "mean(a)", REDUCTION, lambda np, x: x[0].mean()),
]  # fmt: skip


def _pair(dtype: str, size: int) -> Callable[[Any], Any]:
    """a and b in [0.5, 1.5), and a - 1 (half negative, for abs), made outside the timing."""

    def setup(np: Any) -> Any:
        rng = np.random.default_rng(size)
        a, b = (rng.random(size, dtype=getattr(np, dtype)) + 0.5 for _ in range(2))
        return a, b, a - 1

    return setup


GRID_LIST = [
    Case(f"grid_{key}_{dtype}_{size:.0e}".replace("+0", ""),
         f"{op}, {size:.0e} {dtype}".replace("+0", ""), kind,
         _pair(dtype, size), run, grid=(op, dtype, size))
    for key, op, kind, run in GRID_OPS
    for dtype in GRID_DTYPES
    for size in GRID_SIZES
]  # fmt: skip
CASES = {c.name: c for c in [*CASE_LIST, *GRID_LIST]}


def checksum(np: Any, out: Any) -> float:
    """One float summarising a result (arrays summed in f64, tuples added)."""
    if isinstance(out, tuple):
        return sum(checksum(np, part) for part in out)
    if isinstance(out, int | float):
        return float(out)
    a = np.asarray(out)
    return float(a.astype(np.float64).sum()) + float(a.size)


def measure(np: Any, case: Case, budget: float, min_reps: int = 5,
            max_reps: int = 2000) -> dict[str, float]:  # fmt: skip
    """Median (and least) µs of ``case.run`` after a warm-up call, with its checksum."""
    inputs = case.setup(np)
    out = case.run(np, inputs)
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < max_reps and (len(times) < min_reps or time.perf_counter() - start < budget):
        t = time.perf_counter()
        case.run(np, inputs)
        times.append(time.perf_counter() - t)
    times.sort()
    return {"median_us": times[len(times) // 2] * 1e6, "min_us": times[0] * 1e6,
            "reps": len(times), "check": checksum(np, out)}  # fmt: skip


def run_all(np: Any, budget: float, names: list[str] | None = None) -> dict[str, Any]:
    """Every case (or ``names``): {name: measure(...)}."""
    return {name: measure(np, CASES[name], budget) for name in (names or list(CASES))}


def quick_names() -> list[str]:
    """What a quick run measures: every case, the grid at its middle size only."""
    return [c.name for c in CASES.values() if c.grid is None or c.grid[2] == GRID_SIZES[1]]
