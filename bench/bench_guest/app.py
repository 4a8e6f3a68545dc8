"""The benchmark's guest: times inference inside the component, two ways.

    bench_guest both CASE N WARMUP
    bench_guest wasinn libcosts REPS
    bench_guest wasinn profile:CASE N
    bench_guest wasinn builder:KIND ARGS...   (GraphBuilder; see builder_bench.py)
    bench_guest wasinn ops:KIND ARGS...       (wasinn.ops helpers; see ops_bench.py)
    bench_guest wasinn fused:KIND ARGS...     (processing fused into IR; see fused_bench.py)

Each iteration runs one step through the generated wasi-nn bindings directly
("raw": fresh host tensors every call, outputs read and dropped, recurrent
state fed back by hand) and one step through wasinn's public API, in
alternating order, on two graphs of the same model. CASE is one of ``vad``,
``digits1``, ``digits64``, ``minilm128`` or ``transfer:BYTES``. Timings come
from time.perf_counter inside the component and are printed as one JSON
object: per-iteration seconds after warm-up, the load times, and digests of
the last outputs so the host can check that both ways computed the same.
"""

from __future__ import annotations

import array
import hashlib
import json
import sys
import time
from typing import Any

import builder_bench
import fused_bench
import ops_bench
from cases import DIGITS, MINILM, VAD, Inputs, case_inputs, floats
from componentize_py_types import Err
from wit_world import exports

from wasinn import Model, Tensor, _spec, print_line
from wasinn._bindings.imports import graph, tensor
from wasinn._formats import ir as _ir
from wasinn._formats import onnx_read as _onnx
from wasinn._host import wasi as _host

WIT_TYPES = {"f32": tensor.TensorType.FP32, "i64": tensor.TensorType.I64}
# Where the raw host puts each fed-back output (silero: output, stateN).
RAW_POSITIONS = {"stateN": "1"}


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def raw_step(
    path: str, inputs: Inputs, feedback: dict[str, str], shared: Any = None
) -> tuple[float, Any]:
    """Load with the raw bindings; return the load time and a step function.

    With ``shared`` (an execution context) the steps run on it instead of the
    raw graph's own, so that raw and wasinn steps differ only in the guest
    code: two compiled copies of one model can differ by 10-20 % on their own.
    Every step passes all inputs, so the context holds no state between steps.
    """
    start = time.perf_counter()
    builders = [read(path), read(path[:-4] + ".bin") if path.endswith(".xml") else b""]
    g = graph.load(builders, graph.GraphEncoding.OPENVINO, graph.ExecutionTarget.CPU)
    ctx = g.init_execution_context()
    load = time.perf_counter() - start
    if shared is not None:
        ctx = shared
    current = {name: data for name, _, _, data in inputs}
    fed = {RAW_POSITIONS[out]: into for out, into in feedback.items()}
    specs = [(name, dims, WIT_TYPES[dt]) for name, dims, dt, _ in inputs]

    def step() -> list[bytes]:
        named = [(name, tensor.Tensor(dims, ty, current[name])) for name, dims, ty in specs]
        outputs = {}
        for name, t in ctx.compute(named):
            outputs[name] = t.data()
            t.__exit__(None, None, None)
        for position, into in fed.items():
            current[into] = outputs[position]
        return list(outputs.values())

    return load, step


def wasinn_step(path: str, inputs: Inputs, feedback: dict[str, str]) -> tuple[float, Any, Any]:
    """Load with wasinn; return the load time, a step function and its context."""
    start = time.perf_counter()
    model = Model.load(path)
    load = time.perf_counter() - start
    feeds = {name: Tensor(data, shape=dims, dtype=dt) for name, dims, dt, data in inputs}
    session: Any = model
    if feedback:
        session = model.stateful(feedback)
        for name in feedback.values():
            del feeds[name]

    def step() -> list[bytes]:
        return [t.tobytes() for t in session.run(feeds).values()]

    return load, step, (session._default if session is model else session)._ctx


def run_both(case: str, n: int, warmup: int) -> dict[str, Any]:
    """Raw and wasinn steps interleaved in one loop, so that the machine's
    drift hits both alike; the order alternates every iteration."""
    path, inputs, feedback = case_inputs(case)
    lib_load, lib, ctx = wasinn_step(path, inputs, feedback)
    raw_load, raw = raw_step(path, inputs, feedback, shared=ctx)
    times: dict[str, list[float]] = {"raw": [], "wasinn": []}
    last: dict[str, list[bytes]] = {}
    for i in range(warmup + n):
        order = (("raw", raw), ("wasinn", lib)) if i % 2 else (("wasinn", lib), ("raw", raw))
        for name, fn in order:
            t0 = time.perf_counter()
            last[name] = fn()
            elapsed = time.perf_counter() - t0
            if i >= warmup:
                times[name].append(elapsed)
    return {
        "raw": {"times": times["raw"], "load": raw_load, "digest": digest(last["raw"])},
        "wasinn": {"times": times["wasinn"], "load": lib_load, "digest": digest(last["wasinn"])},
    }


def profile(case: str, n: int) -> dict[str, Any]:
    """Median microseconds of each layer of a wasinn step against the raw step,
    all interleaved in one loop: where wasinn's overhead goes."""
    path, inputs, feedback = case_inputs(case)
    model = Model.load(path)
    feeds = {name: Tensor(data, shape=dims, dtype=dt) for name, dims, dt, data in inputs}
    plain = model.session()
    ctx = plain._ctx
    _, raw = raw_step(path, inputs, feedback, shared=ctx)
    wit = [(name, list(t.shape), WIT_TYPES[t.dtype], t.tobytes()) for name, t in feeds.items()]
    items = list(feeds.items())

    def raw_with_queries() -> None:
        named = [(name, tensor.Tensor(dims, ty, data)) for name, dims, ty, data in wit]
        for _, t in ctx.compute(named):
            t.dimensions()
            t.ty()
            t.data()
            t.__exit__(None, None, None)

    steps = {
        "raw bindings step": raw,
        "raw step + dimensions() and ty() per output": raw_with_queries,
        "wasinn host layer (_host.compute)": lambda: _host.compute(ctx, items, "bench"),
        "wasinn input checks (_spec.feeds)": lambda: _spec.feeds(feeds, model._graph.inputs),
        "wasinn Session.run (all inputs given)": lambda: plain.run(feeds),
    }
    if feedback:
        stateful = model.stateful(feedback)
        stateful._ctx = ctx  # the same context as every other row
        own = {k: v for k, v in feeds.items() if k not in feedback.values()}
        steps["wasinn StatefulSession.run"] = lambda: stateful.run(own)
    times: dict[str, list[float]] = {k: [] for k in steps}
    names = list(steps)
    for i in range(n):
        for name in names if i % 2 else names[::-1]:
            t0 = time.perf_counter()
            steps[name]()
            times[name].append(time.perf_counter() - t0)
    return {
        "profile": {k: 1e6 * sorted(v[n // 10 :])[len(v[n // 10 :]) // 2] for k, v in times.items()}
    }


def digest(outputs: list[bytes]) -> str:
    h = hashlib.sha256()
    for data in outputs:
        h.update(data)
    return h.hexdigest()[:16]


def timed(fn: Any, reps: int) -> float:
    """Median seconds of ``fn()`` over ``reps`` calls."""
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    samples.sort()
    return samples[len(samples) // 2]


def lib_costs(reps: int) -> dict[str, Any]:
    """Library-side costs inside the guest, with the size each one handled."""
    mb = 1 << 20
    n = mb // 4
    values = list(array.array("f", floats(n, 4)))
    arr = array.array("f", values)
    raw = arr.tobytes()
    t = Tensor(raw, dtype="f32")
    results: dict[str, Any] = {}

    def put(name: str, seconds: float, nbytes: int) -> None:
        results[name] = {"seconds": seconds, "mb": nbytes / mb}

    put("Tensor(list of floats, f32)", timed(lambda: Tensor(values, dtype="f32"), reps), len(raw))
    put("Tensor(array.array('f'))", timed(lambda: Tensor(arr), reps), len(raw))
    put("Tensor(bytes, dtype='f32')", timed(lambda: Tensor(raw, dtype="f32"), reps), len(raw))
    put("Tensor.tolist() f32", timed(t.tolist, reps), len(raw))
    put("Tensor.topk(5) f32", timed(lambda: t.topk(5), reps), len(raw))
    put("Tensor.argmax() f32", timed(t.argmax, reps), len(raw))
    put(
        "Tensor(list, f16) encode",
        timed(lambda: Tensor(values[: n // 4], dtype="f16"), reps),
        len(raw) // 8,
    )
    put(
        "Tensor(list, bf16) encode",
        timed(lambda: Tensor(values[: n // 4], dtype="bf16"), reps),
        len(raw) // 8,
    )
    loads = max(3, reps // 4)
    for label, path in (("IR digits", DIGITS), ("IR MiniLM", MINILM)):
        xml = read(path)
        put(f"metadata: {label} .xml", timed(lambda xml=xml: _ir.read(xml), reps), len(xml))
        put(
            f"Model.load: {label}",
            timed(lambda path=path: Model.load(path).close(), loads),
            len(xml) + len(read(path[:-4] + ".bin")),
        )
    onnx = read(VAD)
    put("metadata: ONNX silero", timed(lambda: _onnx.read(onnx), reps), len(onnx))
    put("Model.load: ONNX silero", timed(lambda: Model.load(VAD).close(), loads), len(onnx))
    return {"costs": results}


def main(args: list[str]) -> int:
    # args[0] ("both" or "wasinn", see the usage above) only labels the call: CASE picks the work.
    case = args[1]
    if case == "libcosts":
        print_line(json.dumps(lib_costs(int(args[2]))))
        return 0
    if case.startswith("builder:"):
        print_line(json.dumps(builder_bench.run(case.split(":", 1)[1], args[2:])))
        return 0
    if case.startswith("fused:"):
        print_line(json.dumps(fused_bench.run(case.split(":", 1)[1], args[2:])))
        return 0
    if case.startswith("ops:"):
        print_line(json.dumps(ops_bench.run(case.split(":", 1)[1], args[2:])))
        return 0
    if case.startswith("profile:"):
        print_line(json.dumps(profile(case.split(":", 1)[1], int(args[2]))))
        return 0
    n, warmup = int(args[2]), int(args[3])
    print_line(json.dumps(run_both(case, n, warmup)))
    return 0


class Run(exports.Run):
    def run(self) -> None:
        try:
            code = main(sys.argv[1:])
        except Exception as exc:  # report, do not trap
            print_line(json.dumps({"error": repr(exc)}))
            code = 1
        if code:
            raise Err(None)
