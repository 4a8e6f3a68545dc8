"""GraphBuilder benchmarks: build and cache costs, per-op overhead, image pre-processing.

In the component (through app.py)::

    bench_guest wasinn builder:build REPS       first build, cache hit, first run
    bench_guest wasinn builder:ops N           tiny single-op graphs, N runs each
    bench_guest wasinn builder:pre REPS PYREPS 1920x1080 u8 image -> 736x736 CHW f32

Each prints one JSON object. The graphs, their inputs and the pure-Python
pre-processing use only the standard library and wasinn, so ``bench/run.py``
imports this module natively to write the very same ONNX bytes for native
OpenVINO and onnxruntime, and the same image bytes for OpenCV.

Example (native CPython)::

    builder, outputs, feeds = graph("small")
    onnx_bytes = builder.to_onnx(outputs)
"""

from __future__ import annotations

import array
import hashlib
import math
import random
import time
from collections.abc import Callable
from functools import cache, partial
from typing import Any, TypeVar

from wasinn import GraphBuilder, Model, Operand, Tensor, WasiNNError

#: (name, shape, dtype, bytes): one input of a benchmark graph.
Feed = tuple[str, list[int], str, bytes]
Graph = tuple[GraphBuilder, dict[str, Operand], list[Feed]]
T = TypeVar("T")

# The pre-processing case: a full-HD RGB frame to the 736x736 input of a text
# detector (PP-OCR's), normalised with ImageNet's mean and std.
IMAGE_H, IMAGE_W, TARGET = 1080, 1920, 736
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
# Where the guest leaves its pre-processed tensors for the host to compare
# (`build/models` is /models in the component).
OUT_DIR = "/models/bench"
PRE_FILES = {
    "graph": "builder_pre_graph.f32", "python": "builder_pre_python.f32",
    "fused": "builder_pre_fused.f32",
}  # fmt: skip
# PP-OCRv4's text detector (input "x" [?, 3, ?, ?]), which prepare.py puts there.
DETECTOR = "/models/ppocr/det_opset18.onnx"

BUILD_GRAPHS = ("small", "ocr", "cnn")
OP_GRAPHS = ("add", "softmax", "transpose", "conv2d")


@cache
def floats(n: int, seed: int, scale: float = 1.0, offset: float = 0.0) -> bytes:
    """``n`` f32 values uniform in [offset - scale, offset + scale), the same on
    every Python; made once, so that timing a graph's construction does not
    time the random numbers for its weights.

    >>> len(floats(4, seed=1))
    16
    """
    rng = random.Random(seed)
    return array.array("f", [offset + rng.uniform(-scale, scale) for _ in range(n)]).tobytes()


@cache
def image_bytes() -> bytes:
    """The benchmark's 1920x1080 RGB frame (HWC, u8): seeded noise, same bytes everywhere."""
    return random.Random(11).randbytes(IMAGE_H * IMAGE_W * 3)


# ---------------------------------------------------------------- graphs


def _small(b: GraphBuilder) -> tuple[dict[str, Operand], list[Feed]]:
    x = b.input("x", [1, 16], "f32")
    return {"y": x * 2.0 + 1.0}, [("x", [1, 16], "f32", floats(16, 1))]


def _ocr(b: GraphBuilder) -> tuple[dict[str, Operand], list[Feed]]:
    image = b.input("image", [1, IMAGE_H, IMAGE_W, 3], "u8")
    x = b.cast(image, "f32")
    x = b.resample2d(x, mode="linear", sizes=[TARGET, TARGET], axes=[1, 2])
    x = b.transpose(x, permutation=[0, 3, 1, 2])
    # (x / 255 - mean) / std as one multiply and one add per channel (after the
    # transpose: OpenVINO was 10-30 % faster that way round than before it).
    scale = b.constant(array.array("f", [1.0 / (255.0 * s) for s in STD]), shape=[1, 3, 1, 1])
    shift = [-m / s for m, s in zip(MEAN, STD, strict=True)]
    chw = x * scale + b.constant(array.array("f", shift), shape=[1, 3, 1, 1])
    return {"tensor": chw}, [("image", [1, IMAGE_H, IMAGE_W, 3], "u8", image_bytes())]


def _cnn(b: GraphBuilder) -> tuple[dict[str, Operand], list[Feed]]:
    x = b.input("x", [1, 3, 64, 64], "f32")
    seed = 100

    def const(*shape: int, scale: float = 0.3, offset: float = 0.0) -> Operand:
        nonlocal seed
        seed += 1
        return b.constant(floats(math.prod(shape), seed, scale, offset), list(shape), "f32")

    h = (x - const(1, 3, 1, 1)) / const(1, 3, 1, 1, scale=0.1, offset=1.0)
    channels = 3
    for width in (8, 16, 32):
        for _ in range(2):
            h = b.conv2d(h, const(width, channels, 3, 3), padding=[1, 1, 1, 1], bias=const(width))
            h = b.batch_normalization(
                h, const(width), const(width, scale=0.2, offset=1.0),
                scale=const(width, scale=0.2, offset=1.0), bias=const(width),
            )  # fmt: skip
            h = b.relu(h)
            channels = width
        h = b.max_pool2d(h, window_dimensions=[2, 2], strides=[2, 2])
    h = b.reduce_mean(h, axes=[2, 3])
    h = b.gemm(h, const(10, channels), c=const(10), b_transpose=True)
    return {"probs": b.softmax(h, axis=1)}, [("x", [1, 3, 64, 64], "f32", floats(3 * 64 * 64, 2))]


def _add(b: GraphBuilder) -> tuple[dict[str, Operand], list[Feed]]:
    x, y = b.input("a", [1, 16], "f32"), b.input("b", [1, 16], "f32")
    feeds = [("a", [1, 16], "f32", floats(16, 3)), ("b", [1, 16], "f32", floats(16, 4))]
    return {"y": b.add(x, y)}, feeds


def _softmax(b: GraphBuilder) -> tuple[dict[str, Operand], list[Feed]]:
    x = b.input("x", [1, 16], "f32")
    return {"y": b.softmax(x, axis=1)}, [("x", [1, 16], "f32", floats(16, 5, 4.0))]


def _transpose(b: GraphBuilder) -> tuple[dict[str, Operand], list[Feed]]:
    x = b.input("x", [2, 3, 4], "f32")
    y = b.transpose(x, permutation=[2, 0, 1])
    return {"y": y}, [("x", [2, 3, 4], "f32", floats(24, 6))]


def _conv2d(b: GraphBuilder) -> tuple[dict[str, Operand], list[Feed]]:
    x = b.input("x", [1, 1, 8, 8], "f32")
    w = b.constant(floats(36, 7), shape=[4, 1, 3, 3], dtype="f32")
    y = b.conv2d(x, w, padding=[1, 1, 1, 1])
    return {"y": y}, [("x", [1, 1, 8, 8], "f32", floats(64, 8))]


GRAPHS: dict[str, Callable[[GraphBuilder], tuple[dict[str, Operand], list[Feed]]]] = {
    "small": _small, "ocr": _ocr, "cnn": _cnn,
    "add": _add, "softmax": _softmax, "transpose": _transpose, "conv2d": _conv2d,
}  # fmt: skip


def graph(name: str) -> Graph:
    """A fresh builder holding graph ``name``, its outputs, and its inputs' bytes.

    >>> builder, outputs, feeds = graph("add")
    >>> sorted(outputs), [f[0] for f in feeds]
    (['y'], ['a', 'b'])
    """
    b = GraphBuilder()
    outputs, feeds = GRAPHS[name](b)
    return b, outputs, feeds


def tensors(feeds: list[Feed]) -> dict[str, Tensor]:
    return {name: Tensor(data, shape=shape, dtype=dt) for name, shape, dt, data in feeds}


def digest(outputs: list[bytes]) -> str:
    """First 16 hex digits of SHA-256 over the outputs' bytes, in order."""
    h = hashlib.sha256()
    for data in outputs:
        h.update(data)
    return h.hexdigest()[:16]


def median(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[len(ordered) // 2]


def p90(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, (len(ordered) * 9) // 10)]


def clock(fn: Callable[[], T]) -> tuple[float, T]:
    """Seconds ``fn()`` took, and what it returned."""
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


# ---------------------------------------------------------------- build costs


def build_costs(reps: int) -> dict[str, Any]:
    """Per graph: constructing it in Python, ``to_onnx``, a first ``build``
    (serialise + host compile), an identical ``build`` again (the cache hit,
    which serialises again to find its key), the first ``run`` and later runs.

    Cold builds are repeated by closing the model first, which makes the cache
    load it anew. The very first build in the process also starts OpenVINO's
    CPU plugin; it is reported on its own (``first_in_process_ms``).
    """
    results: dict[str, Any] = {}
    first: list[float] = []
    for name in BUILD_GRAPHS:
        samples: dict[str, list[float]] = {}
        graph(name)  # makes its weights and input bytes outside the timing
        for _ in range(reps):
            facts = _build_round(name, samples)
        first.append(samples["build"][0])
        results[name] = {**{f"{k}_ms": 1000 * median(v) for k, v in samples.items()}, **facts}
    return {"build": results, "first_in_process_ms": 1000 * first[0]}


def _build_round(name: str, samples: dict[str, list[float]]) -> dict[str, Any]:
    """One cold build of graph ``name`` and what follows it, timings added to
    ``samples``; returns the sizes and digests of what was built and run."""

    def note(what: str, since: float) -> None:
        samples.setdefault(what, []).append(time.perf_counter() - since)

    t0 = time.perf_counter()
    b, outputs, feeds = graph(name)
    note("construct", t0)
    t0 = time.perf_counter()
    data = b.to_onnx(outputs)
    note("to_onnx", t0)
    t0 = time.perf_counter()
    model = b.build(outputs)
    note("build", t0)
    for _ in range(5):
        t0 = time.perf_counter()
        again = b.build(outputs)
        note("cached_build", t0)
        assert again is model, "an identical build must come from the cache"
        t0 = time.perf_counter()
        structural_key(b, outputs)
        note("key", t0)
    feed = tensors(feeds)
    t0 = time.perf_counter()
    out = model.run(feed)
    note("first_run", t0)
    for _ in range(5):
        t0 = time.perf_counter()
        out = model.run(feed)
        note("run", t0)
    model.close()  # the next round's build loads and compiles it again
    return {
        "onnx_bytes": len(data),
        "onnx_digest": digest([data]),
        "onnx_nodes": len(b._nodes),
        "digest": digest([t.tobytes() for t in out.values()]),
    }


def structural_key(b: GraphBuilder, outputs: dict[str, Operand]) -> int:
    """A prototype of a cheaper cache key than the ONNX bytes: a hash of the
    graph as the builder holds it (nodes, inputs, constants, outputs), timed
    beside the cache hit to tell whether skipping serialisation would pay.
    Constants enter by their ``bytes``, whose hash Python keeps once computed
    (weights kept in one object across rebuilds hash once).

    Unlike the ONNX bytes it also covers nodes the outputs do not use.

    >>> (b1, out1, _), (b2, out2, _) = graph("cnn"), graph("cnn")
    >>> structural_key(b1, out1) == structural_key(b2, out2)
    True
    """
    nodes = tuple(
        (n.op_type, tuple(n.inputs), tuple(n.outputs),
         tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in n.attrs.items()))
        for n in b._nodes
    )  # fmt: skip
    constants = tuple((c.name, c.dtype, c.shape, c.data) for c in b._initializers.values())
    inputs = tuple((v.name, v.dtype, v.shape) for v in b._inputs.values())
    named = tuple((k, o._name, o.dtype, o.shape) for k, o in outputs.items())
    return hash((nodes, constants, inputs, named))


# ---------------------------------------------------------------- per-op overhead


def op_overhead(n: int) -> dict[str, Any]:
    """Median and p90 microseconds of ``model.run`` on each tiny graph, built
    once; the graphs take turns within one loop so that drift hits all alike."""
    runs: dict[str, Callable[[], dict[str, Tensor]]] = {}
    for name in OP_GRAPHS:
        b, outputs, feeds = graph(name)
        runs[name] = partial(b.build(outputs).run, tensors(feeds))
    times: dict[str, list[float]] = {name: [] for name in runs}
    last: dict[str, dict[str, Tensor]] = {}
    warmup = max(5, n // 10)
    for i in range(warmup + n):
        for name, fn in runs.items():
            t0 = time.perf_counter()
            last[name] = fn()
            elapsed = time.perf_counter() - t0
            if i >= warmup:
                times[name].append(elapsed)
    return {
        "ops": {
            name: {
                "median_us": 1e6 * median(v),
                "p90_us": 1e6 * p90(v),
                "digest": digest([t.tobytes() for t in last[name].values()]),
            }
            for name, v in times.items()
        }
    }


# ---------------------------------------------------------------- pre-processing


def _taps(size: int, target: int) -> tuple[list[int], list[int], list[float]]:
    """Bilinear taps along one axis, sampling at pixel centres (half-pixel):
    the lower and upper source index and the upper one's weight, per output."""
    scale = size / target
    lows, highs, weights = [], [], []
    for i in range(target):
        src = max((i + 0.5) * scale - 0.5, 0.0)
        low = min(int(src), size - 1)
        lows.append(low)
        highs.append(min(low + 1, size - 1))
        weights.append(src - low)
    return lows, highs, weights


def preprocess_python(
    image: bytes, height: int = IMAGE_H, width: int = IMAGE_W, target: int = TARGET
) -> array.array[float]:
    """HWC u8 RGB -> resized (bilinear, half-pixel), normalised CHW f32, in pure Python.

    Works channel by channel: ``image[c::3]`` takes a plane out at C speed,
    each source row is interpolated horizontally once (kept while the next
    output row still needs it), and the vertical blend is fused with the
    normalisation into one multiply-add per element.

    >>> len(preprocess_python(bytes(4 * 6 * 3), 4, 6, 2))
    12
    """
    xs0, xs1, wx = _taps(width, target)
    ys0, ys1, wy = _taps(height, target)
    out = array.array("f")
    for c in range(3):
        plane = image[c::3]
        scale = 1.0 / (255.0 * STD[c])
        shift = -MEAN[c] / STD[c]
        rows: dict[int, list[float]] = {}
        for y0, y1, fy in zip(ys0, ys1, wy, strict=True):
            for r in (y0, y1):
                if r not in rows:
                    px = plane[r * width : (r + 1) * width]
                    rows[r] = [
                        px[a] + (px[b] - px[a]) * f for a, b, f in zip(xs0, xs1, wx, strict=True)
                    ]
                    if len(rows) > 3:
                        del rows[min(rows)]
            ka, kb = (1.0 - fy) * scale, fy * scale
            out.extend([t * ka + u * kb + shift for t, u in zip(rows[y0], rows[y1], strict=True)])
    return out


def _save(kind: str, data: bytes) -> None:
    with open(f"{OUT_DIR}/{PRE_FILES[kind]}", "wb") as f:
        f.write(data)


def preprocess(reps: int, python_reps: int) -> dict[str, Any]:
    """(a) pure Python and (b) the builder graph on the 1920x1080 frame; the
    last output of each is written to ``OUT_DIR`` for the host to compare.

    (b) is timed from the frame's bytes to the output tensor's bytes:
    wrapping them in a ``Tensor``, ``model.run``, and taking the result.
    """
    image = image_bytes()
    result: dict[str, Any] = {"image_bytes": len(image)}
    b, outputs, _ = graph("ocr")
    build_s, model = clock(lambda: b.build(outputs))

    def run_graph() -> bytes:
        feed = Tensor(image, shape=[1, IMAGE_H, IMAGE_W, 3], dtype="u8")
        return model.run({"image": feed})["tensor"].tobytes()

    first_s, out = clock(run_graph)
    samples = []
    for _ in range(reps):
        seconds, out = clock(run_graph)
        samples.append(seconds)
    _save("graph", out)
    result["graph"] = {"build_ms": 1000 * build_s, "first_run_ms": 1000 * first_s, **stats(samples)}
    if python_reps:
        samples = []
        for _ in range(python_reps):
            seconds, values = clock(lambda: preprocess_python(image))
            samples.append(seconds)
        _save("python", values.tobytes())
        result["python"] = stats(samples)
    result["fused"] = fused(reps, model)
    return result


def stats(samples: list[float]) -> dict[str, Any]:
    return {"median_ms": 1000 * median(samples), "p90_ms": 1000 * p90(samples), "n": len(samples)}


def fused(reps: int, pre_model: Model) -> dict[str, Any]:
    """(c) The pre-processing fused into the detector it feeds
    (``Model.load(path, preprocess=...)``: one graph, one host call), against
    the same two steps as separate models (``pre_model``, then the detector:
    the 736x736 tensor crosses the boundary twice). Both are timed from the
    frame's bytes to the detector's output bytes, interleaved."""
    load: Any = Model.load  # preprocess= is newer than some checkouts' Model.load
    code = load.__code__
    if "preprocess" not in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]:
        return {"measured": False, "why": "Model.load has no preprocess= yet"}

    def pre(b: GraphBuilder) -> dict[str, Operand]:
        return {"x": _ocr(b)[0]["tensor"]}

    try:
        t0 = time.perf_counter()
        fused_model: Model = load(DETECTOR, preprocess=pre)
        load_s = time.perf_counter() - t0
        detector = Model.load(DETECTOR)
    except WasiNNError as exc:
        return {"measured": False, "why": f"{type(exc).__name__}: {exc}"}
    image = image_bytes()
    out_name = (fused_model.outputs or detector.outputs or [])[0].name

    def run_fused() -> bytes:
        feed = Tensor(image, shape=[1, IMAGE_H, IMAGE_W, 3], dtype="u8")
        return fused_model.run({"image": feed})[out_name].tobytes()

    def run_separate() -> bytes:
        feed = Tensor(image, shape=[1, IMAGE_H, IMAGE_W, 3], dtype="u8")
        tensor = pre_model.run({"image": feed})["tensor"]
        return detector.run({"x": tensor})[out_name].tobytes()

    ways = {"fused": run_fused, "separate": run_separate}
    times: dict[str, list[float]] = {k: [] for k in ways}
    last: dict[str, bytes] = {}
    for i in range(reps + 1):  # the first round warms both up
        for name in ways if i % 2 else list(ways)[::-1]:
            seconds, last[name] = clock(ways[name])
            if i:
                times[name].append(seconds)
    _save("fused", last["fused"])
    return {
        "measured": True,
        "load_ms": 1000 * load_s,
        "fused": stats(times["fused"]),
        "separate": stats(times["separate"]),
        "same_outputs": last["fused"] == last["separate"],
    }


# ---------------------------------------------------------------- entry point


def run(kind: str, args: list[str]) -> dict[str, Any]:
    """Dispatch ``builder:KIND`` from app.py; see the module docstring."""
    if kind == "build":
        return build_costs(int(args[0]))
    if kind == "ops":
        return op_overhead(int(args[0]))
    if kind == "pre":
        return preprocess(int(args[0]), int(args[1]))
    raise SystemExit(f"unknown builder benchmark {kind!r}")
