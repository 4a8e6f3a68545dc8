"""``wasinn.ops`` against the pure-Python equivalent, inside the component.

In the component (through app.py)::

    bench_guest wasinn ops:helpers REPS PYREPS   each helper vs pure Python
    bench_guest wasinn ops:overhead N            the cost of a cached call itself

Each prints one JSON object. ``helpers`` times, per case, the pure-Python
way (``PYREPS`` runs: written for speed with the standard library, the way
an app without the helpers would; for argmax and topk, ``Tensor.argmax`` and
``Tensor.topk``, which run wasinn's compiled kernels) and the helper: its
first call (graph built, serialised and compiled with dynamic dimensions),
``REPS`` calls on that dynamic model, the call that compiles a model for the
exact shape, and ``REPS`` calls on it (timed for every helper; ``specialized``
says whether the helper switches to it by itself). Both ways see the same input bytes,
and how far their outputs differ is reported with the times.

Example (native CPython, for the pure-Python side only)::

    image = noise_image(48, 64)
    small = resize_python(image, 48, 64, 3, 24, 32)
"""

from __future__ import annotations

import array
import math
import random
import time
from collections.abc import Callable
from typing import Any

from wasinn import GraphBuilder, Model, Tensor, ops
from wasinn._graph import ranking

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
# A recogniser's output: PP-OCR's CTC head gives [lines, steps, 6625 classes].
LOGITS = (6, 40, 6625)
TOP = 5

#: case -> the helper it times.
HELPER = {
    "resize": "resize", "resize_hd": "resize", "normalize": "normalize",
    "resize_normalize": "resize_normalize", "softmax": "softmax", "argmax": "argmax",
    "topk": "topk",
}  # fmt: skip
#: case -> what it does, for the report.
CASES = {
    "resize": "resize u8 [480, 640, 3] -> [240, 320, 3], linear",
    "resize_hd": "resize u8 [1080, 1920, 3] -> [736, 736, 3], linear",
    "normalize": "normalize u8 [736, 736, 3] -> f32 [3, 736, 736]",
    "resize_normalize": "resize_normalize u8 [1080, 1920, 3] -> f32 [3, 736, 736]",
    "softmax": "softmax f32 [6, 40, 6625], last axis",
    "argmax": "argmax f32 [6, 40, 6625], last axis",
    "topk": "topk k=5 f32 [6, 40, 6625], last axis",
}


# ---------------------------------------------------------------- inputs


def noise_image(height: int, width: int, seed: int = 5) -> Tensor:
    """A u8 HWC RGB image of seeded noise.

    >>> noise_image(2, 3).shape
    (2, 3, 3)
    """
    data = random.Random(seed).randbytes(height * width * 3)
    return Tensor(data, shape=(height, width, 3), dtype="u8")


def logits(shape: tuple[int, ...] = LOGITS, seed: int = 7) -> Tensor:
    """f32 values in [-8, 8) on a grid of 1/4096 (65,536 levels: few ties)."""
    n = math.prod(shape)
    steps = array.array("h", random.Random(seed).randbytes(2 * n))
    return Tensor(array.array("f", [v * (1 / 4096) for v in steps]), shape=shape)


# ---------------------------------------------------------------- pure Python


def _taps(size: int, target: int) -> tuple[list[int], list[int], list[float]]:
    """For each output position: the two input positions it blends and the
    weight of the second (half-pixel centres, clamped at the edges)."""
    scale = size / target
    low, high, weight = [], [], []
    for o in range(target):
        src = max((o + 0.5) * scale - 0.5, 0.0)
        i = min(int(src), size - 1)
        low.append(i)
        high.append(min(i + 1, size - 1))
        weight.append(src - i if i < size - 1 else 0.0)
    return low, high, weight


def resize_python(
    data: Tensor, height: int, width: int, channels: int, out_h: int, out_w: int
) -> bytes:
    """Bilinear u8 HWC resize as ``ops.resize`` defines it, in pure Python:
    each needed input row is blended horizontally once, then rows vertically;
    results round to nearest, halves up."""
    raw = data.tobytes()
    x0, x1, wx = _taps(width, out_w)
    # Per output value (column, channel): offsets in a row and weights.
    first = [x * channels + c for x in x0 for c in range(channels)]
    second = [x * channels + c for x in x1 for c in range(channels)]
    right = [w for w in wx for _ in range(channels)]
    left = [1.0 - w for w in right]
    taps = list(zip(first, second, left, right, strict=True))
    stride = width * channels
    rows: dict[int, list[float]] = {}

    def blended(y: int) -> list[float]:
        row = rows.get(y)
        if row is None:
            line = raw[y * stride : (y + 1) * stride]
            row = rows[y] = [line[a] * p + line[b] * q for a, b, p, q in taps]
        return row

    y0, y1, wy = _taps(height, out_h)
    out = bytearray()
    for top, bottom, q in zip(y0, y1, wy, strict=True):
        upper, lower, p = blended(top), blended(bottom), 1.0 - q
        out += bytes([int(u * p + v * q + 0.5) for u, v in zip(upper, lower, strict=True)])
    return bytes(out)


def normalize_python(data: Tensor, channels: int) -> bytes:
    """u8 HWC to f32 CHW ``(x / 255 - mean) / std``, channel by channel."""
    raw = data.tobytes()
    out = array.array("f")
    for c in range(channels):
        gain, offset = 1 / 255 / STD[c], -MEAN[c] / STD[c]
        out.extend([v * gain + offset for v in raw[c::channels]])
    return out.tobytes()


def softmax_python(data: Tensor) -> bytes:
    """Softmax along the last axis of an f32 tensor, row by row."""
    n = data.shape[-1]
    view = data.data.cast("f")
    out = array.array("f")
    exp = math.exp
    for start in range(0, len(view), n):
        row = view[start : start + n].tolist()
        top = max(row)
        e = [exp(v - top) for v in row]
        inverse = 1.0 / math.fsum(e)
        out.extend([v * inverse for v in e])
    return out.tobytes()


def topk_python(data: Tensor, k: int) -> list[list[tuple[int, float | int]]]:
    """``Tensor.topk`` of each row along the last axis."""
    n = data.shape[-1]
    raw = data.tobytes()
    size = 4 * n
    return [Tensor(raw[i : i + size], dtype=data.dtype).topk(k) for i in range(0, len(raw), size)]


# ---------------------------------------------------------------- comparing


def _max_diff(a: bytes, b: bytes, code: str) -> float:
    """The largest difference between two buffers of ``code`` items (inf if lengths differ)."""
    x, y = array.array(code, a), array.array(code, b)
    if len(x) != len(y):
        return math.inf
    return max((abs(p - q) for p, q in zip(x, y, strict=True)), default=0.0)


def _argmax_mismatches(python: list[list[int]], host: Tensor) -> int:
    flat_python = [i for block in python for i in block]
    flat_host = array.array("i", host.tobytes()).tolist()
    if len(flat_python) != len(flat_host):
        return max(len(flat_python), len(flat_host))
    return sum(p != q for p, q in zip(flat_python, flat_host, strict=True))


def _topk_mismatches(python: list[list[tuple[int, Any]]], host: tuple[Tensor, Tensor]) -> int:
    indices = array.array("i", host[1].tobytes()).tolist()
    values = array.array("f", host[0].tobytes()).tolist()
    mine = [(i, v) for row in python for i, v in row]
    if len(mine) != len(indices):
        return max(len(mine), len(indices))
    return sum((i, v) != pair for i, v, pair in zip(indices, values, mine, strict=True))


# ---------------------------------------------------------------- timing


def _median(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[len(ordered) // 2]


def _clock(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def _forget() -> None:
    """Drop every model ``ops`` holds, so that the next call compiles anew."""
    for model in ops._models.values():
        model.close()
    ops._models.clear()
    ops._uses.clear()


def _case(name: str) -> tuple[Callable[[], Any], Callable[[], Any], Callable[[Any, Any], float]]:
    """(pure Python, helper, difference of their results) for one case."""
    if name in ("resize", "resize_hd"):
        h, w, oh, ow = (480, 640, 240, 320) if name == "resize" else (1080, 1920, 736, 736)
        image = noise_image(h, w)
        return (
            lambda: resize_python(image, h, w, 3, oh, ow),
            lambda: ops.resize(image, (oh, ow)),
            lambda p, o: _max_diff(p, o.tobytes(), "B"),
        )
    if name == "normalize":
        image = noise_image(736, 736)
        return (
            lambda: normalize_python(image, 3),
            lambda: ops.normalize(image, MEAN, STD),
            lambda p, o: _max_diff(p, o.tobytes(), "f"),
        )
    if name == "resize_normalize":
        image = noise_image(1080, 1920)

        def python() -> bytes:
            small = resize_python(image, 1080, 1920, 3, 736, 736)
            return normalize_python(Tensor(small, shape=(736, 736, 3), dtype="u8"), 3)

        return (
            python,
            lambda: ops.resize_normalize(image, (736, 736), MEAN, STD),
            lambda p, o: _max_diff(p, o.tobytes(), "f"),
        )
    scores = logits()
    if name == "softmax":
        return (
            lambda: softmax_python(scores),
            lambda: ops.softmax(scores),
            lambda p, o: _max_diff(p, o.tobytes(), "f"),
        )
    if name == "argmax":
        return (
            lambda: scores.argmax(axis=-1),
            lambda: ops.argmax(scores),
            lambda p, o: float(_argmax_mismatches(p, o)),
        )
    if name == "topk":
        return (
            lambda: topk_python(scores, TOP),
            lambda: ops.topk(scores, TOP),
            lambda p, o: float(_topk_mismatches(p, o)),
        )
    raise SystemExit(f"unknown ops case {name!r}")


def helpers(reps: int, python_reps: int) -> dict[str, Any]:
    """Every case of ``CASES``: pure Python against the helper's first,
    dynamic-model and exact-shape-model calls (seconds are medians)."""
    # The very first model of a process also starts OpenVINO's CPU plugin.
    _forget()
    start, _ = _clock(lambda: ops.softmax(Tensor([[1.0, 2.0]])))
    _forget()
    results: dict[str, Any] = {}
    static_after, specialized = ops._STATIC_AFTER, ops._SPECIALIZED
    # Every helper gets its exact-shape model timed, used or not (see ops._SPECIALIZED).
    ops._SPECIALIZED = frozenset(HELPER.values())
    try:
        for name in CASES:
            python, helper, diff = _case(name)
            samples = []
            for _ in range(python_reps):
                seconds, python_out = _clock(python)
                samples.append(seconds)
            row: dict[str, Any] = {"python_s": _median(samples)}
            _forget()
            ops._STATIC_AFTER = 1 << 30  # stay on the dynamic model
            row["first_s"], out = _clock(helper)
            row["dynamic_s"] = _median([_clock(helper)[0] for _ in range(reps)])
            ops._STATIC_AFTER = 1  # the next call compiles the exact shape's model
            row["static_first_s"], _ = _clock(helper)
            row["static_s"] = _median([_clock(helper)[0] for _ in range(reps)])
            row["difference"] = diff(python_out, out)
            row["specialized"] = HELPER[name] in specialized
            _forget()
            results[name] = row
    finally:
        ops._STATIC_AFTER, ops._SPECIALIZED = static_after, specialized
    return {"helpers": results, "first_in_process_s": start, "static_after": static_after}


def overhead(n: int) -> dict[str, Any]:
    """Microseconds of one cached call on a tiny tensor (softmax of f32
    [1, 16]): the helper against running its model directly, and against
    building the graph anew each call and finding it in ``GraphBuilder.build``'s
    cache (what a helper without its own cache would pay). Then a first
    call's parts for the largest graph (topk k=5): building it in Python with
    ``to_onnx``, and ``Model.load`` of the bytes (metadata read + host compile)."""
    x = logits((1, 16))
    _forget()
    ops.softmax(x)
    (model,) = ops._models.values()
    feed = {"x": x}

    def rebuild() -> Any:
        b = GraphBuilder()
        v = b.input("x", shape=[None, None], dtype="f32")
        return b.build({"y": b.softmax(v, axis=1)}).run(feed)

    rebuild()
    steps = {
        "ops.softmax (cached)": lambda: ops.softmax(x),
        "Model.run on the same model": lambda: model.run(feed),
        "GraphBuilder + build cache hit + run": rebuild,
    }
    times: dict[str, list[float]] = {k: [] for k in steps}
    names = list(steps)
    for i in range(n):
        for name in names if i % 2 else names[::-1]:
            seconds, _ = _clock(steps[name])
            times[name].append(seconds)
    _forget()

    def topk_graph() -> bytes:
        b = GraphBuilder()
        values, indices = ranking.stable_top_k(b, b.input("x", [None] * 3, "f32"), TOP)
        return b.to_onnx({"values": values, "indices": b.cast(indices, "i32")})

    parts: dict[str, list[float]] = {"build graph + to_onnx": [], "Model.load": []}
    for _ in range(5):
        t0 = time.perf_counter()
        data = topk_graph()
        t1 = time.perf_counter()
        Model.load(data, encoding="onnx").close()
        parts["build graph + to_onnx"].append(t1 - t0)
        parts["Model.load"].append(time.perf_counter() - t1)
    return {
        "overhead_us": {k: 1e6 * _median(v) for k, v in times.items()},
        "first_call_ms": {k: 1e3 * _median(v) for k, v in parts.items()},
        "topk_onnx_bytes": len(topk_graph()),
    }


def run(kind: str, args: list[str]) -> dict[str, Any]:
    """Dispatch ``ops:KIND`` from app.py; see the module docstring."""
    if kind == "helpers":
        return helpers(int(args[0]), int(args[1]))
    if kind == "overhead":
        return overhead(int(args[0]))
    raise SystemExit(f"unknown ops benchmark {kind!r}")
