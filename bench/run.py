"""wasinn's benchmark: guest vs native, wasinn vs raw bindings, measured side by side.

Run through ``./build.sh bench [--quick]``, which builds the apps and the
benchmark guest first. Writes ``bench/results/latest.md``, ``latest.json`` and
``latest.png`` (or into ``--out DIR``). Every latency is timed inside the
process doing the work (time.perf_counter in the component and in native
Python); process start and model load are reported on their own.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import openvino.opset13 as ops

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
sys.path.insert(0, str(ROOT / "bench" / "bench_guest"))
sys.path.insert(0, str(ROOT / "tools"))
import cases  # noqa: E402  (the same inputs the guest builds)
import completions_bench  # noqa: E402
import generate_bench  # noqa: E402
import image_bench  # noqa: E402  (bench/, beside this file)
import numpy_bench  # noqa: E402
import ocr_bench  # noqa: E402
import photo_bench  # noqa: E402
import request_costs  # noqa: E402
import speech_bench  # noqa: E402
import wasmtime_flags  # noqa: E402  (tools/, the settings of every component)
from serve_bench import serve_bench, serve_report  # noqa: E402

SITE = Path(sysconfig.get_path("purelib"))
WASMTIME = SITE / "wasmtime_cli" / "wasmtime"
OV_LIBS = SITE / "openvino" / "libs"
NP_TYPES = {"f32": np.float32, "i64": np.int64}
SIZES = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20]
TARGETS = {
    "overhead_vad": 1.05,
    "guest_native_vad": 1.4,
    "guest_native_minilm": 1.1,
    "transfer_gbs": 2.0,
    "precompiled_start_ms": 60.0,
}


# ---------------------------------------------------------------- helpers


def native_path(guest_path: str) -> Path:
    if guest_path.startswith("/repo/"):
        return ROOT / guest_path[len("/repo/") :]
    return BUILD / "models" / guest_path[len("/models/") :]


def summary(times: list[float]) -> dict[str, float]:
    ms = np.array(times) * 1000.0
    return {"median_ms": float(np.median(ms)), "p90_ms": float(np.percentile(ms, 90)), "n": len(ms)}


def wasmtime(*args: str) -> list[str]:
    return [str(WASMTIME), "run", *wasmtime_flags.FLAGS, "-S", "nn", *args]


def host_env() -> dict[str, str]:
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = f"{OV_LIBS}:{env.get('LD_LIBRARY_PATH', '')}"
    env["WASMTIME_LOG"] = "off"
    return env


def guest(mode: str, case: str, *args: str) -> dict[str, Any]:
    cmd = wasmtime(
        "--allow-precompiled", "--dir", f"{ROOT}::/repo", "--dir", f"{BUILD / 'models'}::/models",
        str(BUILD / "bench_guest.cwasm"), mode, case, *args,
    )
    proc = subprocess.run(cmd, capture_output=True, text=True, env=host_env(), timeout=1800)
    if proc.returncode:
        raise SystemExit(
            f"bench: guest {mode} {case} failed:\n{proc.stdout}\n{proc.stderr[-3000:]}"
        )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def digest(arrays: list[np.ndarray]) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


# ---------------------------------------------------------------- native


def native_openvino(case: str, n: int, warmup: int) -> dict[str, Any]:
    path, inputs, feedback = cases.case_inputs(case)
    t0 = time.perf_counter()
    compiled = ov.Core().compile_model(str(native_path(path)), "CPU")
    load = time.perf_counter() - t0
    request = compiled.create_infer_request()
    feed = {
        name: np.frombuffer(data, NP_TYPES[dt]).reshape(dims) for name, dims, dt, data in inputs
    }
    names = [o.get_any_name() for o in compiled.outputs]
    times, outs = [], []
    for i in range(warmup + n):
        t = time.perf_counter()
        result = request.infer(feed)
        outs = [result[o] for o in compiled.outputs]
        for out_name, into in feedback.items():
            feed[into] = outs[names.index(out_name)]
        if i >= warmup:
            times.append(time.perf_counter() - t)
    return {"times": times, "load": load, "digest": digest(outs)}


def native_onnxruntime(case: str, n: int, warmup: int) -> dict[str, Any] | None:
    path, inputs, feedback = cases.case_inputs(case)
    if not path.endswith(".onnx"):
        return None
    import onnxruntime as ort

    t0 = time.perf_counter()
    session = ort.InferenceSession(str(native_path(path)), providers=["CPUExecutionProvider"])
    load = time.perf_counter() - t0
    feed = {
        name: np.frombuffer(data, NP_TYPES[dt]).reshape(dims) for name, dims, dt, data in inputs
    }
    names = [o.name for o in session.get_outputs()]
    times, outs = [], []
    for i in range(warmup + n):
        t = time.perf_counter()
        outs = session.run(None, feed)
        for out_name, into in feedback.items():
            feed[into] = outs[names.index(out_name)]
        if i >= warmup:
            times.append(time.perf_counter() - t)
    return {"times": times, "load": load, "digest": digest(outs)}


# ---------------------------------------------------------------- cases


def latency(quick: bool) -> list[dict[str, Any]]:
    reps = {"vad": 3000, "digits1": 2000, "digits64": 500, "minilm128": 200}
    rows = []
    for case in cases.LATENCY_CASES:
        n = max(20, reps[case] // (10 if quick else 1))
        warmup = max(5, n // 10)
        row: dict[str, Any] = {"case": case}
        both = guest("both", case, str(n), str(warmup))
        results = {
            "native_openvino": native_openvino(case, n, warmup),
            "native_onnxruntime": native_onnxruntime(case, n, warmup),
            "guest_raw": both["raw"],
            "guest_wasinn": both["wasinn"],
        }
        for way, result in results.items():
            if result is not None:
                row[way] = {
                    **summary(result["times"]),
                    "load_s": result["load"],
                    "digest": result["digest"],
                }
        row["same_outputs"] = row["guest_raw"]["digest"] == row["guest_wasinn"]["digest"]
        row["wasinn_over_raw"] = row["guest_wasinn"]["median_ms"] / row["guest_raw"]["median_ms"]
        row["wasinn_over_native"] = (
            row["guest_wasinn"]["median_ms"] / row["native_openvino"]["median_ms"]
        )
        print(f"bench: {case}: wasinn/raw {row['wasinn_over_raw']:.3f}, "
              f"wasinn/native {row['wasinn_over_native']:.3f}", file=sys.stderr)
        rows.append(row)
    return rows


def ident_model() -> None:
    """A pass-through f32[?] model: what goes in comes back out."""
    target = BUILD / "models" / "bench" / "ident.xml"
    if target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    x = ops.parameter([-1], np.float32, name="x")
    ov.save_model(ov.Model([ops.result(x)], [x], "ident"), target)


def transfer(quick: bool) -> list[dict[str, Any]]:
    ident_model()
    rows = []
    for size in SIZES[:4] if quick else SIZES:
        n = 5 if size >= 16 << 20 else 30
        n = max(3, n // 3) if quick else n
        buf = bytearray(size)
        copies = []
        for _ in range(n):
            t = time.perf_counter()
            bytes(buf)
            copies.append(time.perf_counter() - t)
        row: dict[str, Any] = {"bytes": size, "memcpy_gbs": size / statistics.median(copies) / 1e9}
        both = guest("both", f"transfer:{size}", str(n), "2")
        for mode in ("raw", "wasinn"):
            row[f"{mode}_gbs"] = size / statistics.median(both[mode]["times"]) / 1e9
        rows.append(row)
        print(f"bench: transfer {size} B: wasinn {row['wasinn_gbs']:.2f} GB/s", file=sys.stderr)
    return rows


def first_output(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Seconds from spawn to the first line of output, and peak RSS in MB."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=ROOT / "apps" / "digits",
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    first = time.perf_counter() - t0
    proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status or not line:
        raise SystemExit(f"bench: {' '.join(cmd)} failed (status {status})")
    return first, usage.ru_maxrss / 1024.0


def startup(quick: bool) -> list[dict[str, Any]]:
    sample = "samples/digit3_002.png"
    digits = ROOT / "apps" / "digits"
    common = ["--dir", f"{digits}::/app", "--dir", ".::."]
    reps = 1 if quick else 3
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for state in ("cold", "cached", "precompiled"):
            samples = []
            for rep in range(reps):
                if state == "cold":  # a cache nobody has used: wasmtime compiles the .wasm
                    config = Path(tmp) / f"cache{rep}.toml"
                    config.write_text(f'[cache]\ndirectory = "{Path(tmp) / f"c{rep}"}"\n')
                elif state == "cached":
                    config = Path(tmp) / "cache0.toml"
                if state == "precompiled":
                    cmd = wasmtime(
                        "--allow-precompiled", *common, str(BUILD / "digits.cwasm"), sample
                    )
                else:
                    cmd = wasmtime(
                        "-C", f"cache-config={config}", *common, str(BUILD / "digits.wasm"), sample
                    )
                samples.append(first_output(cmd, host_env()))
            rows.append(
                {
                    "state": state,
                    "first_output_ms": 1000 * statistics.median(s[0] for s in samples),
                    "peak_rss_mb": max(s[1] for s in samples),
                }
            )
        native = (
            "import openvino as ov, numpy as np; c = ov.Core().compile_model("
            f"'{digits / 'model' / 'digits.xml'}', 'CPU'); "
            "print(c(np.zeros((1, 1, 8, 8), np.float32))[c.output('probs')].argmax())"
        )
        samples = [
            first_output([sys.executable, "-c", native], dict(os.environ)) for _ in range(reps)
        ]
        rows.append(
            {
                "state": "native Python + import openvino + compile",
                "first_output_ms": 1000 * statistics.median(s[0] for s in samples),
                "peak_rss_mb": max(s[1] for s in samples),
            }
        )
    for row in rows:
        print(f"bench: start-up {row['state']}: {row['first_output_ms']:.0f} ms", file=sys.stderr)
    return rows


# ---------------------------------------------------------------- GraphBuilder (issue 10)

BUILDER_TARGETS = {"pre_vs_cv2": 3.0, "fused_vs_native": 1.2}


def builder_bench(quick: bool) -> dict[str, Any]:
    """GraphBuilder: build and cache costs, per-op overhead, the pre-processing
    case, processing fused into a converted IR model."""
    sys.path.insert(0, str(ROOT / "guest"))  # the builder writes the same ONNX natively
    import builder_bench as bb

    return {"build": builder_build(bb, quick), "ops": builder_ops(bb, quick),
            "pre": builder_pre(bb, quick), "fused_ir": builder_fused_ir(quick)}


def ov_compile(data: bytes) -> tuple[Any, float]:
    """Native OpenVINO compiling ONNX bytes; the compiled model and seconds taken."""
    t0 = time.perf_counter()
    core = ov.Core()
    compiled = core.compile_model(core.read_model(data), "CPU")
    return compiled, time.perf_counter() - t0


def np_feed(feeds: list[tuple[str, list[int], str, bytes]]) -> dict[str, np.ndarray]:
    types = {"f32": np.float32, "u8": np.uint8}
    return {name: np.frombuffer(b, types[dt]).reshape(shape) for name, shape, dt, b in feeds}


def builder_build(bb: Any, quick: bool) -> dict[str, Any]:
    """The guest's build costs, with native OpenVINO compiling the same bytes."""
    reps = 3 if quick else 10
    result = guest("wasinn", "builder:build", str(reps))
    for name, row in result["build"].items():
        b, outputs, feeds = bb.graph(name)
        data = b.to_onnx(outputs)
        row["same_onnx"] = bb.digest([data]) == row["onnx_digest"]
        compiles = []
        for _ in range(reps):
            compiled, seconds = ov_compile(data)
            compiles.append(seconds)
        out = compiled.create_infer_request().infer(np_feed(feeds))
        row["native_compile_ms"] = 1000 * statistics.median(compiles)
        row["same_outputs"] = digest([out[o] for o in compiled.outputs]) == row["digest"]
        print(f"bench: builder build {name}: first {row['build_ms']:.1f} ms, cached "
              f"{row['cached_build_ms']:.2f} ms, run {row['run_ms']:.3f} ms", file=sys.stderr)
    return result


def builder_ops(bb: Any, quick: bool) -> dict[str, Any]:
    """Tiny single-op graphs, built once and run many times: the guest's
    ``model.run`` against native OpenVINO and onnxruntime on the same ONNX bytes."""
    import onnxruntime as ort

    n = 300 if quick else 3000
    rows: dict[str, Any] = guest("wasinn", "builder:ops", str(n))["ops"]
    runs: dict[str, dict[str, Any]] = {}
    for name in rows:
        b, outputs, feeds = bb.graph(name)
        data, feed = b.to_onnx(outputs), np_feed(feeds)
        compiled, _ = ov_compile(data)
        request, bound = compiled.create_infer_request(), compiled.create_infer_request()
        for key, value in feed.items():  # OpenVINO's floor: inputs set once, shared
            bound.set_tensor(key, ov.Tensor(np.array(value), shared_memory=True))
        session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
        count = len(compiled.outputs)
        runs[name] = {
            "openvino": lambda r=request, f=feed, c=compiled: [r.infer(f)[o] for o in c.outputs],
            "openvino_bound": lambda r=bound, n=count: (
                r.infer(), [r.get_output_tensor(i).data.copy() for i in range(n)])[1],
            "onnxruntime": lambda s=session, f=feed: s.run(None, f),
        }
    times: dict[tuple[str, str], list[float]] = {}
    last: dict[tuple[str, str], list[np.ndarray]] = {}
    warmup = max(5, n // 10)
    for i in range(warmup + n):  # every graph and engine in turn, like the guest
        for name, engines in runs.items():
            for engine, fn in engines.items():
                t = time.perf_counter()
                last[name, engine] = fn()
                if i >= warmup:
                    times.setdefault((name, engine), []).append(time.perf_counter() - t)
    for name, row in rows.items():
        for engine in ("openvino", "openvino_bound", "onnxruntime"):
            us = 1e6 * np.array(times[name, engine])
            row[f"native_{engine}"] = {"median_us": float(np.median(us)),
                                       "p90_us": float(np.percentile(us, 90))}
        row["same_outputs"] = digest(last[name, "openvino"]) == row["digest"]
        row["over_native"] = row["median_us"] / row["native_openvino_bound"]["median_us"]
        print(f"bench: builder op {name}: guest {row['median_us']:.1f} µs, native OpenVINO "
              f"{row['native_openvino']['median_us']:.1f} µs", file=sys.stderr)
    return rows


def builder_pre(bb: Any, quick: bool) -> dict[str, Any]:
    """1920x1080 RGB u8 -> normalised 736x736 CHW f32: (a) pure Python and
    (b) the builder graph in the guest, (c) fused into PP-OCRv4's detector,
    (d) cv2 + numpy natively, plus the same graph and pure Python natively."""
    import cv2

    reps, py_reps = (5, 1) if quick else (30, 3)
    result = guest("wasinn", "builder:pre", str(reps), str(py_reps))
    image = np.frombuffer(bb.image_bytes(), np.uint8).reshape(bb.IMAGE_H, bb.IMAGE_W, 3)
    mean, std = np.array(bb.MEAN, np.float32), np.array(bb.STD, np.float32)
    size = (bb.TARGET, bb.TARGET)

    def cv2_numpy() -> np.ndarray:
        resized = cv2.resize(image, size, interpolation=cv2.INTER_LINEAR)
        chw = ((resized.astype(np.float32) / 255.0 - mean) / std).transpose(2, 0, 1)
        return np.ascontiguousarray(chw)[None]

    b, outputs, _ = bb.graph("ocr")
    compiled, _ = ov_compile(b.to_onnx(outputs))
    request = compiled.create_infer_request()
    frame = bb.image_bytes()

    def graph_openvino() -> np.ndarray:
        feed = np.frombuffer(frame, np.uint8).reshape(1, bb.IMAGE_H, bb.IMAGE_W, 3)
        out: np.ndarray = request.infer({"image": feed}, share_inputs=True)[compiled.outputs[0]]
        return out

    ways = {"cv2": cv2_numpy, "graph_openvino": graph_openvino}
    times: dict[str, list[float]] = {k: [] for k in ways}
    last: dict[str, np.ndarray] = {}
    for i in range(reps + 1):
        for name, fn in ways.items():
            t = time.perf_counter()
            last[name] = fn()
            if i:
                times[name].append(time.perf_counter() - t)
    for name in ways:
        result[name] = summary(times[name])
    py_times = []
    for _ in range(py_reps):
        t = time.perf_counter()
        bb.preprocess_python(frame)
        py_times.append(time.perf_counter() - t)
    result["python_native"] = summary(py_times)
    shape = (1, 3, bb.TARGET, bb.TARGET)

    def saved(kind: str) -> np.ndarray:
        path = BUILD / "models" / "bench" / bb.PRE_FILES[kind]
        return np.fromfile(path, np.float32).reshape(shape)

    reference = last["cv2"]
    diff = {"graph_vs_cv2": float(np.abs(saved("graph") - reference).max()),
            "graph_vs_native_graph": float(np.abs(saved("graph") - last["graph_openvino"]).max())}
    if "python" in result:
        diff["python_vs_cv2"] = float(np.abs(saved("python") - reference).max())
        diff["python_vs_graph"] = float(np.abs(saved("python") - saved("graph")).max())
    result["max_abs_diff"] = diff
    result["pre_vs_cv2"] = result["graph"]["median_ms"] / result["cv2"]["median_ms"]
    if result["fused"].get("measured"):
        result["fused"].update(builder_fused_native(bb, cv2_numpy, reps, saved("graph")))
        detector_out = result["fused"].pop("output")
        on_graph = result["fused"].pop("output_on_graph")
        fused_out = np.fromfile(BUILD / "models" / "bench" / bb.PRE_FILES["fused"], np.float32)
        result["fused"]["max_abs_diff_vs_native"] = float(
            np.abs(fused_out - detector_out.ravel()).max())
        result["fused"]["max_abs_diff_vs_graph_tensor"] = float(
            np.abs(fused_out - on_graph.ravel()).max())
        result["fused"]["fused_vs_native"] = (
            result["fused"]["fused"]["median_ms"] / result["fused"]["native"]["median_ms"])
    print(f"bench: builder pre-processing: graph {result['graph']['median_ms']:.1f} ms, "
          f"cv2 {result['cv2']['median_ms']:.1f} ms", file=sys.stderr)
    return result


def builder_fused_native(
    bb: Any, pre: Any, reps: int, graph_tensor: np.ndarray
) -> dict[str, Any]:
    """Native baseline for the fused case: cv2 + numpy, then OpenVINO running
    the detector (the same opset-18 file the guest fuses into), and the
    detector alone; plus its output on the guest graph's tensor, to tell
    differences from fusing apart from those of cv2's rounding."""
    path = BUILD / "models" / "ppocr" / Path(bb.DETECTOR).name
    compiled = ov.Core().compile_model(str(path), "CPU")
    request = compiled.create_infer_request()
    tensor = pre()
    out_port = compiled.outputs[0]
    ways: dict[str, Any] = {
        "native": lambda: request.infer({"x": pre()}, share_inputs=True)[out_port],
        "detector_alone": lambda: request.infer({"x": tensor}, share_inputs=True)[out_port],
    }
    times: dict[str, list[float]] = {k: [] for k in ways}
    out = None
    for i in range(reps + 1):
        for name, fn in ways.items():
            t = time.perf_counter()
            result = fn()
            if name == "native":
                out = result
            if i:
                times[name].append(time.perf_counter() - t)
    on_graph = request.infer({"x": graph_tensor})[out_port]
    return {**{k: summary(v) for k, v in times.items()}, "output": out, "output_on_graph": on_graph}


def builder_fused_ir(quick: bool) -> dict[str, Any]:
    """MediaPipe's selfie segmentation (IR converted from TFLite) on a 640x480
    frame: pre-processing graph, model and post-processing graph as three
    calls in the guest against the same fused into the model
    (``bench_guest/fused_bench.py``), then natively the same three ways on
    OpenVINO's Python API, the fused IR being the very XML wasinn writes
    (``prepare`` run natively), to tell the boundary's share from OpenVINO's."""
    sys.path.insert(0, str(ROOT / "guest"))  # the graphs and the splice, natively
    import fused_bench as fb

    reps = 20 if quick else 200
    result = guest("wasinn", "fused:selfie", str(reps))
    if not result.get("measured"):
        print(f"bench: fused IR: not measured: {result.get('why')}", file=sys.stderr)
        return result
    native, masks = fused_ir_native(fb, reps)
    result["native"] = native
    guest_mask = np.fromfile(native_path(fb.MASK), np.uint8).reshape(fb.FRAME_H, fb.FRAME_W)
    result["native_pixels_differing"] = {
        way: int((mask != guest_mask).sum()) for way, mask in masks.items()}
    print(f"bench: fused IR: three calls {result['three_calls']['median_ms']:.2f} ms, fused "
          f"{result['fused']['median_ms']:.2f} ms ({result['fused_over_three_calls']:.2f}), "
          f"native IR alone {native['model_alone']['median_ms']:.2f} ms", file=sys.stderr)
    return result


def fused_ir_native(fb: Any, reps: int) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Native OpenVINO, interleaved: the three calls, the fused IR wasinn
    writes, and the model alone on the pre-processed tensor; medians, and
    each way's mask."""
    from wasinn._model.prepare import prepare

    xml = native_path(fb.MODEL)
    frame = np.fromfile(native_path(fb.FRAME), np.uint8).reshape(fb.FRAME_H, fb.FRAME_W, 3)
    core = ov.Core()
    xml_text, weights = prepare(str(xml), None, fb.pre, fb.post).parts
    fused_model = core.read_model(xml_text.decode(), ov.Tensor(np.frombuffer(weights, np.uint8)))
    (pre_b, pre_out), (post_b, post_out) = fb.pre_graph(), fb.post_graph()
    compiled = {
        "pre": core.compile_model(core.read_model(pre_b.to_onnx(pre_out)), "CPU"),
        "model": core.compile_model(str(xml), "CPU"),
        "post": core.compile_model(core.read_model(post_b.to_onnx(post_out)), "CPU"),
        "fused": core.compile_model(fused_model, "CPU"),
    }
    req = {k: c.create_infer_request() for k, c in compiled.items()}
    port = {k: c.outputs[0] for k, c in compiled.items()}

    def run(step: str, name: str, value: np.ndarray) -> np.ndarray:
        out: np.ndarray = req[step].infer({name: value}, share_inputs=True)[port[step]]
        return out

    def three_calls() -> np.ndarray:
        probs = run("model", fb.INPUT, run("pre", "image", frame))
        return run("post", fb.OUTPUT, probs)

    tensor = run("pre", "image", frame)
    ways: dict[str, Callable[[], np.ndarray]] = {
        "three_calls": three_calls,
        "fused": lambda: run("fused", "image", frame),
        "model_alone": lambda: run("model", fb.INPUT, tensor),
    }
    times: dict[str, list[float]] = {k: [] for k in ways}
    last: dict[str, np.ndarray] = {}
    for i in range(reps + 1):  # round 0 warms up
        for name in ways if i % 2 else list(ways)[::-1]:
            t = time.perf_counter()
            last[name] = ways[name]()
            if i:
                times[name].append(time.perf_counter() - t)
    masks = {"three_calls": last["three_calls"], "fused": last["fused"]}
    return {k: summary(v) for k, v in times.items()}, masks


def fused_ir_report(r: dict[str, Any]) -> list[str]:
    """The fused-IR section of latest.md (and of fused_ir.md alone)."""
    lines = ["", "## GraphBuilder: pre/post-processing fused into an IR model, MediaPipe selfie "
             "segmentation, 640x480 RGB u8 -> u8 mask (ms, median / p90)", ""]
    if not r.get("measured"):
        return lines + [f"Not measured: the fused model did not load in the guest: {r.get('why')}"]
    three = r["three_calls"]["median_ms"]
    st, nat = r["stages"], r["native"]
    lines += ["| way | ms | / three calls in the guest |", "|---|---|---|"]
    for label, cell in (
        ("three calls, guest: pre-processing graph, IR model, post-processing graph",
         r["three_calls"]),
        ("&nbsp;&nbsp;pre-processing graph: u8 [480, 640, 3] -> f32 [1, 256, 256, 3]",
         st["pre"]),
        ("&nbsp;&nbsp;the IR model alone", st["model"]),
        ("&nbsp;&nbsp;post-processing graph: f32 [1, 256, 256, 1] -> u8 [480, 640]", st["post"]),
        ("**fused, guest: `Model.load(xml, preprocess=pre, postprocess=post)`, one run**",
         r["fused"]),
        ("three calls, native OpenVINO (the same ONNX and IR)", nat["three_calls"]),
        ("fused, native OpenVINO (the IR wasinn writes)", nat["fused"]),
        ("the IR model alone, native OpenVINO", nat["model_alone"]),
    ):  # fmt: skip
        lines.append(f"| {label} | {fmt(cell)} | {cell['median_ms'] / three:.2f} |")
    load = r["load_ms"]
    differ = r["native_pixels_differing"]
    lines += ["", f"Fused / three calls in the guest: **{r['fused_over_three_calls']:.2f}** "
              "(ratio of the medians; both timed from the frame's bytes to the mask's bytes, "
              f"interleaved, {r['fused']['n']} runs each). Loading: fused "
              f"{load['fused']:.0f} ms; separate {load['model']:.0f} ms (IR) + "
              f"{load['pre_build']:.0f} + {load['post_build']:.0f} ms (building the two "
              "graphs). Largest absolute difference, fused vs three calls: mask "
              f"{r['mask_max_abs_diff']} ({r['mask_pixels_differing']} pixels differ), the "
              "model's probabilities with only the pre-processing fused "
              f"{r['probs_max_abs_diff']:.2g}. The fused mask covers "
              f"{100 * r['mask_fraction']:.1f} % of the frame; it differs from native "
              f"OpenVINO's in {differ['fused']} pixels (fused) and {differ['three_calls']} "
              "(three calls)."]
    if "date" in r:
        lines[-1] += (f" Measured on {r['date']} on its own (`./build.sh bench --only "
                      "fused_ir`).")
    return lines


def builder_report(data: dict[str, Any]) -> list[str]:
    """The GraphBuilder sections of latest.md (none for results without them)."""
    if "builder" not in data:
        return []
    bd = data["builder"]
    build = bd["build"]
    lines = ["", "## GraphBuilder: first build and cache hit (guest, ms, median)", "",
             "| graph | ONNX nodes | ONNX KB | construct | to_onnx | first build | "
             "cached build | structural key (prototype) | first run | later runs | "
             "native OpenVINO compile | same ONNX and outputs natively |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in build["build"].items():
        same = "yes" if r["same_onnx"] and r["same_outputs"] else "NO"
        lines.append(
            f"| {DESCRIPTIONS_BUILDER.get(name, name)} | {r['onnx_nodes']} "
            f"| {r['onnx_bytes'] / 1024:.1f} | {r['construct_ms']:.3f} | {r['to_onnx_ms']:.3f} "
            f"| {r['build_ms']:.1f} | {r['cached_build_ms']:.3f} | {r['key_ms']:.3f} "
            f"| {r['first_run_ms']:.3f} | {r['run_ms']:.3f} | {r['native_compile_ms']:.1f} "
            f"| {same} |"
        )
    lines += ["", f"The first build in the process also starts OpenVINO's CPU plugin: "
              f"{build['first_in_process_ms']:.1f} ms. First build = `to_onnx` + host compile; "
              "cached build = `to_onnx` again (its bytes are the cache key) + the lookup.",
              "", "## GraphBuilder: per-op overhead on tiny tensors (µs, median / p90)", "",
              "| graph | guest, wasinn `model.run` | native OpenVINO `infer(feed)` | "
              "native OpenVINO, inputs bound once | native onnxruntime | "
              "guest / OpenVINO bound | same outputs as native OpenVINO |",
              "|---|---|---|---|---|---|---|"]
    for name, r in bd["ops"].items():
        cells = " | ".join(
            f"{r[k]['median_us']:.1f} / {r[k]['p90_us']:.1f}"
            for k in ("native_openvino", "native_openvino_bound", "native_onnxruntime")
        )
        lines.append(
            f"| {DESCRIPTIONS_BUILDER.get(name, name)} | {r['median_us']:.1f} / {r['p90_us']:.1f} "
            f"| {cells} | {r['over_native']:.2f} | {'yes' if r['same_outputs'] else 'NO'} |"
        )
    pre = bd["pre"]
    cv2_ms = pre["cv2"]["median_ms"]
    lines += ["", "## GraphBuilder: image pre-processing, 1920x1080 RGB u8 -> 736x736 CHW f32 "
              "(ms, median / p90)", "",
              "| way | ms | / cv2 + numpy |", "|---|---|---|"]
    rows = [("(a) pure Python, guest", pre.get("python")),
            ("(a) pure Python, native CPython (same code)", pre.get("python_native")),
            ("(b) builder graph, guest (frame bytes in, tensor bytes out)", pre["graph"]),
            ("(b) the same ONNX on native OpenVINO", pre["graph_openvino"]),
            ("(d) cv2 + numpy, native", pre["cv2"])]
    for label, cell in rows:
        if cell is not None:
            lines.append(f"| {label} | {fmt(cell)} | {cell['median_ms'] / cv2_ms:.2f} |")
    fused = pre["fused"]
    if not fused.get("measured"):
        lines.append(f"| (c) fused into a model | not measured yet ({fused.get('why', '')}) | |")
    d = pre["max_abs_diff"]
    lines += ["", "Largest absolute difference of the tensors: (b) vs (d) "
              f"{d['graph_vs_cv2']:.4f}, (a) vs (d) {d.get('python_vs_cv2', float('nan')):.4f} "
              "(cv2 interpolates u8 in fixed point and rounds to u8 before normalising: up to "
              "1 / 255 / std = 0.0175), (a) vs (b) "
              f"{d.get('python_vs_graph', float('nan')):.2g} (the graph computes sample positions "
              f"in f32, pure Python in double), (b) guest "
              f"vs native OpenVINO {d['graph_vs_native_graph']:.2g}. Building (b) took "
              f"{pre['graph']['build_ms']:.0f} ms, its first run "
              f"{pre['graph']['first_run_ms']:.0f} ms."]
    if fused.get("measured"):
        native_ms = fused["native"]["median_ms"]
        lines += ["",
                  "## GraphBuilder: pre-processing + PP-OCRv4 text detection (ms, median / p90)",
                  "", "| way | ms | / native |", "|---|---|---|"]
        for label, cell in (
            ("(c) fused into the model (`Model.load(det, preprocess=...)`), guest, one run",
             fused["fused"]),
            ("(b) then the model, guest, two runs", fused["separate"]),
            ("cv2 + numpy, then OpenVINO, native", fused["native"]),
            ("the detector alone on native OpenVINO (for scale)", fused["detector_alone"]),
        ):
            lines.append(f"| {label} | {fmt(cell)} | {cell['median_ms'] / native_ms:.2f} |")
        lines += ["", f"Loading the fused model took {fused['load_ms']:.0f} ms. Largest absolute "
                  "difference of the detector's output (probabilities), fused (guest) vs "
                  f"native: {fused['max_abs_diff_vs_native']:.2g}; vs native OpenVINO running "
                  f"the detector on (b)'s tensor: {fused['max_abs_diff_vs_graph_tensor']:.2g}; "
                  "fused vs two runs in the guest: "
                  f"{'identical' if fused['same_outputs'] else 'not byte-identical'}."]
    if "fused_ir" in bd:
        lines += fused_ir_report(bd["fused_ir"])
    return lines


DESCRIPTIONS_BUILDER = {
    "small": "small: x * 2 + 1, f32 [1, 16]",
    "ocr": "medium: OCR pre-processing (cast, resample2d, transpose, mul, add)",
    "cnn": "medium: CNN of 26 ops, f32 [1, 3, 64, 64] -> [1, 10]",
    "add": "add, f32 [1, 16] + [1, 16]",
    "softmax": "softmax, f32 [1, 16]",
    "transpose": "transpose, f32 [2, 3, 4]",
    "conv2d": "conv2d, f32 [1, 1, 8, 8] * [4, 1, 3, 3]",
}


def builder_targets(data: dict[str, Any]) -> list[tuple[str, float, float, str]]:
    if "builder" not in data:
        return []
    pre = data["builder"]["pre"]
    rows = [("builder pre-processing (b) in the guest / cv2 + numpy (d) <= 3",
             BUILDER_TARGETS["pre_vs_cv2"], pre["pre_vs_cv2"], "lower")]
    if pre["fused"].get("measured"):
        rows.append(("fused pre-processing + detector / native cv2 + OpenVINO <= 1.2",
                     BUILDER_TARGETS["fused_vs_native"], pre["fused"]["fused_vs_native"], "lower"))
    return rows


def builder_blocks(table: str) -> list[str]:
    """The GraphBuilder sections of a report, for the README's tables."""
    if "## GraphBuilder" not in table:
        return []
    part = table[table.index("## GraphBuilder") : table.index("## Targets")]
    # One block per section: update_readme demotes the first heading of each.
    return ["## " + block.strip() for block in part.split("## ")[1:]]


# ---------------------------------------------------------------- wasinn.ops (issue 10, section 4)


def ops_bench(quick: bool) -> dict[str, Any]:
    """wasinn.ops helpers against pure Python inside the guest (bench_guest/ops_bench.py),
    with numpy / OpenCV doing the same natively for scale."""
    sys.path.insert(0, str(ROOT / "guest"))  # ops_bench imports wasinn for its case list
    import ops_bench as ob

    reps, py_reps = (5, 1) if quick else (20, 3)
    result = guest("wasinn", "ops:helpers", str(reps), str(py_reps))
    result.update(guest("wasinn", "ops:overhead", "300" if quick else "3000"))
    result["cases"] = ob.CASES
    for name, seconds in ops_native(ob, reps).items():
        result["helpers"][name]["native_s"] = seconds
    for name, row in result["helpers"].items():
        row["used_s"] = row["static_s"] if row["specialized"] else row["dynamic_s"]
        print(f"bench: ops {name}: pure Python {1000 * row['python_s']:.1f} ms, "
              f"ops {1000 * row['used_s']:.2f} ms", file=sys.stderr)
    return result


def ops_native(ob: Any, reps: int) -> dict[str, float]:
    """Median seconds of numpy / cv2 doing each ops case natively."""
    import cv2

    rng = np.random.default_rng(0)
    small = rng.integers(0, 256, (480, 640, 3), dtype=np.uint8)
    hd = rng.integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
    mid = rng.integers(0, 256, (736, 736, 3), dtype=np.uint8)
    logits = rng.uniform(-8, 8, ob.LOGITS).astype(np.float32)
    mean, std = np.array(ob.MEAN, np.float32), np.array(ob.STD, np.float32)

    def normalize(image: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(((image / np.float32(255) - mean) / std).transpose(2, 0, 1))

    def softmax(x: np.ndarray) -> np.ndarray:
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def topk(x: np.ndarray) -> np.ndarray:
        part = np.argpartition(-x, ob.TOP, axis=-1)[..., : ob.TOP]
        order = np.argsort(-np.take_along_axis(x, part, -1), axis=-1, kind="stable")
        return np.take_along_axis(part, order, -1)

    ways = {
        "resize": lambda: cv2.resize(small, (320, 240), interpolation=cv2.INTER_LINEAR),
        "resize_hd": lambda: cv2.resize(hd, (736, 736), interpolation=cv2.INTER_LINEAR),
        "normalize": lambda: normalize(mid),
        "resize_normalize": lambda: normalize(
            cv2.resize(hd, (736, 736), interpolation=cv2.INTER_LINEAR)
        ),
        "softmax": lambda: softmax(logits),
        "argmax": lambda: logits.argmax(axis=-1),
        "topk": lambda: topk(logits),
    }
    out = {}
    for name, fn in ways.items():
        fn()
        samples = []
        for _ in range(reps):
            t = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - t)
        out[name] = statistics.median(samples)
    return out


def ops_report(data: dict[str, Any]) -> list[str]:
    """The wasinn.ops section of latest.md (none for results without it)."""
    if "ops" not in data:
        return []
    result = data["ops"]
    lines = ["", "## wasinn.ops helpers vs pure Python in the guest (ms, median)", "",
             "| case | pure Python, guest | ops: first call | ops: dynamic model "
             "| ops: exact-shape model (its compile) | pure Python / ops "
             "| numpy or cv2, native | largest difference |",
             "|---|---|---|---|---|---|---|---|"]
    for name, r in result["helpers"].items():
        dyn, static = f"{1000 * r['dynamic_s']:.2f}", f"{1000 * r['static_s']:.2f}"
        if r["specialized"]:
            static = f"**{static}**"
        else:
            dyn = f"**{dyn}**"
        lines.append(
            f"| {result['cases'][name]} | {1000 * r['python_s']:.1f} | {1000 * r['first_s']:.1f} "
            f"| {dyn} | {static} ({1000 * r['static_first_s']:.0f}) "
            f"| {r['python_s'] / r['used_s']:.0f}x | {1000 * r['native_s']:.2f} "
            f"| {r['difference']:.3g} |"
        )
    over = result["overhead_us"]
    lines += ["", "Bold: the model the helper uses once warm (image helpers switch to an "
              f"exact-shape model on call number {result['static_after']} with one shape; the "
              "others stay dynamic). First call = graph built, serialised, compiled with "
              "dynamic dimensions, and run. The first model of a process also starts "
              f"OpenVINO's CPU plugin: {1000 * result['first_in_process_s']:.0f} ms, excluded. "
              "Pure Python: resize blends rows then columns with list comprehensions, "
              "normalise works channel by channel, softmax row by row with math.exp; argmax "
              "and topk are wasinn's own `Tensor.argmax(axis=-1)` and `Tensor.topk` per row. "
              "Differences: resize in u8 levels (1 = a value at a half rounded the other way), "
              "argmax and topk in mismatched entries.",
              "", "A cached call on a tiny tensor (softmax f32 [1, 16], µs, median): "
              + ", ".join(f"{k} {v:.1f}" for k, v in over.items()) + ". A first call's parts "
              f"for the largest graph (topk, {result['topk_onnx_bytes']} bytes of ONNX, ms): "
              + ", ".join(f"{k} {v:.1f}" for k, v in result["first_call_ms"].items()) + "."]
    return lines


# ---------------------------------------------------------------- report


def machine() -> dict[str, str]:
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    flags = Path("/proc/cpuinfo").read_text()
    return {
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "bf16": "yes" if "avx512_bf16" in flags else "no",
        "python": platform.python_version(),
        "openvino": ov.__version__.split("-")[0],
        "precision": os.environ.get("WASINN_PRECISION", "f32"),
        "date": time.strftime("%Y-%m-%d"),
    }


def machine_text(m: dict[str, str]) -> str:
    """When and on what a run was measured (``machine()``), for the reports' first line."""
    return (f"{m['date']}: {m['cpu']}, {m['cores']} cores, bf16 support: {m['bf16']}; "
            f"Python {m['python']}, OpenVINO {m['openvino']}, inference precision "
            f"{m['precision']}.")  # fmt: skip


def fmt(cell: dict[str, Any] | None) -> str:
    return "n/a" if cell is None else f"{cell['median_ms']:.3f} / {cell['p90_ms']:.3f}"


def report(data: dict[str, Any]) -> str:
    m = data["machine"]
    run = "Quick run (smaller budgets; not for quoting)" if data["quick"] else "Full run"
    lines = [
        "# wasinn benchmark results",
        "",
        f"{run} on {machine_text(m)}",
        "",
        "## Per-inference latency (ms, median / p90)",
        "",
        "| model | native OpenVINO | native onnxruntime | guest, raw bindings | guest, wasinn | "
        "wasinn / raw | wasinn / native OpenVINO | same outputs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    names = {"vad": "silero VAD step [1,576] + state", "digits1": "digits CNN, batch 1",
             "digits64": "digits CNN, batch 64", "minilm128": "MiniLM, sequence 128"}
    for row in data["latency"]:
        lines.append(
            f"| {names[row['case']]} | {fmt(row.get('native_openvino'))} "
            f"| {fmt(row.get('native_onnxruntime'))} | {fmt(row['guest_raw'])} "
            f"| {fmt(row['guest_wasinn'])} | {row['wasinn_over_raw']:.3f} "
            f"| {row['wasinn_over_native']:.3f} | {'yes' if row['same_outputs'] else 'NO'} |"
        )
    loads = "; ".join(
        f"{names[r['case']]}: native {r['native_openvino']['load_s']:.3f}, "
        f"wasinn {r['guest_wasinn']['load_s']:.3f}"
        for r in data["latency"]
    )
    lines += ["", "Model load (s): " + loads]
    lines += [
        "",
        "## Tensor transfer (guest bytes -> host tensor -> guest bytes, f32 pass-through model)",
        "",
        "| size | raw bindings GB/s | wasinn GB/s | native memcpy GB/s |",
        "|---|---|---|---|",
    ]
    for row in data["transfer"]:
        size = row["bytes"]
        label = f"{size >> 20} MB" if size >= 1 << 20 else f"{size >> 10} KB"
        lines.append(
            f"| {label} | {row['raw_gbs']:.2f} | {row['wasinn_gbs']:.2f} "
            f"| {row['memcpy_gbs']:.2f} |"
        )
    lines += ["", "GB/s = tensor bytes / round-trip time (the bytes cross the boundary twice).", "",
              "## Start-up to first output (digits app, one image)", "",
              "| state | first output (ms) | peak RSS (MB) |", "|---|---|---|"]
    for row in data["startup"]:
        lines.append(
            f"| {row['state']} | {row['first_output_ms']:.0f} | {row['peak_rss_mb']:.0f} |"
        )
    lines += ["", "## Library-side costs inside the guest", "",
              "| operation | ms | MB handled | ms per MB |", "|---|---|---|---|"]
    for name, cost in data["libcosts"].items():
        ms = cost["seconds"] * 1000
        lines.append(f"| {name} | {ms:.3f} | {cost['mb']:.3f} | {ms / cost['mb']:.3f} |")
    lines += ["", "## Where wasinn's time goes on the VAD step (guest, median µs, interleaved)", "",
              "| layer | µs |", "|---|---|"]
    for name, us in data["profile"].items():
        lines.append(f"| {name} | {us:.1f} |")
    lines += ops_report(data)
    lines += builder_report(data)
    lines += image_bench.report(data["image"])
    lines += ocr_bench.report(data["ocr"])
    lines += photo_bench.report(data["photo"])
    lines += numpy_bench.report(data["numpy"])
    if "speech" in data:
        lines += speech_bench.report(data["speech"])
    lines += serve_report(data["serve"])
    if "request_costs" in data:
        lines += request_costs.report(data["request_costs"])
    lines += ["", "## Targets", "", "| target | measured | met |", "|---|---|---|"]
    for name, goal, value, better in targets(data) + builder_targets(data):
        met = value <= goal if better == "lower" else value >= goal
        lines.append(f"| {name} | {value:.3f} | {'yes' if met else 'no'} |")
    return "\n".join(lines) + "\n"


def targets(data: dict[str, Any]) -> list[tuple[str, float, float, str]]:
    by_case = {r["case"]: r for r in data["latency"]}
    big = [r for r in data["transfer"] if r["bytes"] >= 1 << 20]
    precompiled = next(r for r in data["startup"] if r["state"] == "precompiled")
    return [
        ("wasinn / raw on the VAD step <= 1.05", TARGETS["overhead_vad"],
         by_case["vad"]["wasinn_over_raw"], "lower"),
        ("guest / native OpenVINO on the VAD step <= 1.4", TARGETS["guest_native_vad"],
         by_case["vad"]["wasinn_over_native"], "lower"),
        ("guest / native OpenVINO on MiniLM <= 1.1", TARGETS["guest_native_minilm"],
         by_case["minilm128"]["wasinn_over_native"], "lower"),
        ("slowest wasinn transfer 1 MB and up >= 2 GB/s", TARGETS["transfer_gbs"],
         min(r["wasinn_gbs"] for r in big), "higher"),
        ("precompiled start to first output <= 60 ms", TARGETS["precompiled_start_ms"],
         precompiled["first_output_ms"], "lower"),
        *image_bench.targets(data["image"]),
        ocr_bench.target(data["ocr"]),
        *photo_bench.targets(data["photo"]),
        *numpy_bench.targets(data["numpy"]),
        *([speech_bench.target(data["speech"])] if "speech" in data else []),
    ]


def chart(data: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8))
    ways = [("native_openvino", "native OpenVINO"), ("native_onnxruntime", "native onnxruntime"),
            ("guest_raw", "guest, raw bindings"), ("guest_wasinn", "guest, wasinn")]
    rows = data["latency"]
    width = 0.2
    for k, (key, label) in enumerate(ways):
        xs = [i + (k - 1.5) * width for i in range(len(rows))]
        ys = [r[key]["median_ms"] if key in r else 0 for r in rows]
        left.bar(xs, ys, width, label=label)
    left.set_xticks(range(len(rows)), [r["case"] for r in rows])
    left.set_yscale("log")
    left.set_ylabel("median latency (ms, log scale)")
    left.set_title("Per-inference latency")
    left.legend(fontsize=8)
    sizes = [r["bytes"] / (1 << 20) for r in data["transfer"]]
    for key, label in (
        ("raw_gbs", "raw bindings"), ("wasinn_gbs", "wasinn"), ("memcpy_gbs", "native memcpy")
    ):
        right.plot(sizes, [r[key] for r in data["transfer"]], marker="o", label=label)
    right.axhline(TARGETS["transfer_gbs"], color="grey", linestyle="--", label="target 2 GB/s")
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("tensor size (MB)")
    right.set_ylabel("GB/s")
    right.set_title("Guest -> host -> guest transfer")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small budgets (about a minute)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--only", choices=sorted(ALONE), help="run one case alone: writes "
                        "NAME.json and NAME.md (and, full into bench/results, its README table)")
    args = parser.parse_args()
    if args.only:
        run_alone(args.only, args.quick, args.out)
        return
    data: dict[str, Any] = {"quick": args.quick, "machine": machine()}
    data["latency"] = latency(args.quick)
    data["transfer"] = transfer(args.quick)
    data["startup"] = startup(args.quick)
    data["libcosts"] = guest("wasinn", "libcosts", "3" if args.quick else "9")["costs"]
    data["profile"] = guest("wasinn", "profile:vad", "300" if args.quick else "3000")["profile"]
    data["builder"] = builder_bench(args.quick)
    data["ops"] = ops_bench(args.quick)
    data["image"] = image_bench.rows(args.quick)
    data["ocr"] = ocr_bench.run(args.quick)
    data["photo"] = photo_bench.rows(args.quick)
    data["numpy"] = numpy_bench.run(args.quick)
    data["speech"] = speech_bench.run(args.quick)
    data["serve"] = serve_bench(args.quick)
    data["request_costs"] = request_costs.run(args.quick)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "latest.json").write_text(json.dumps(data, indent=1))
    (args.out / "latest.md").write_text(report(data))
    chart(data, args.out / "latest.png")
    print(f"bench: wrote {args.out / 'latest.md'} and {args.out / 'latest.png'}", file=sys.stderr)
    if not args.quick and args.out.resolve() == (ROOT / "bench" / "results").resolve():
        update_readme(data)


#: Cases ``--only`` runs alone: (measure(quick), report(result), where a full
#: run keeps the result in its data). Each is also part of a full run, except
#: generate: its first run builds llama.cpp (about 10 minutes) and it needs
#: apps/generate's model, so only ``--only generate`` runs it; and
#: completions (apps/serve's /v1/completions, served two ways: about 3
#: minutes, apps/generate's model too), only ``--only completions``.
ALONE: dict[str, tuple[Any, Any, tuple[str, ...]]] = {
    "fused_ir": (builder_fused_ir, fused_ir_report, ("builder", "fused_ir")),
    "speech": (speech_bench.run, speech_bench.report, ("speech",)),
    "request_costs": (request_costs.run, request_costs.report, ("request_costs",)),
    "generate": (generate_bench.measure, generate_bench.report, ("generate",)),
    "completions": (completions_bench.measure, completions_bench.report, ("completions",)),
}


#: Cases whose table the README quotes from elsewhere (request_costs: from
#: tests/hostile_cost.py's own run, in the hostile input section), or not
#: yet (generate, completions: results/NAME.md alone until their figures are
#: settled).
QUOTED_ELSEWHERE = {"request_costs", "generate", "completions"}


def run_alone(name: str, quick: bool, out: Path) -> None:
    """One case of the benchmark on its own (quick to repeat while working on
    it): OUT/NAME.json and OUT/NAME.md; a full run into bench/results/ also
    replaces the case's table in README.md, the other tables staying those of
    their own run."""
    measure, section, keys = ALONE[name]
    result = measure(quick)
    result["date"] = time.strftime("%Y-%m-%d")
    m = machine()
    data: dict[str, Any] = {"quick": quick, "machine": m}
    place = data
    for key in keys[:-1]:  # the same place as in latest.json
        place = place.setdefault(key, {})
    place[keys[-1]] = result
    out.mkdir(parents=True, exist_ok=True)
    # The figures first: a fault in the report below must not lose a long run's numbers.
    (out / f"{name}.json").write_text(json.dumps(data, indent=1))
    run = "Quick run (smaller budgets; not for quoting)" if quick else "Full run"
    lines = [f"# wasinn benchmark: {name} alone", "",
             f"{run} on {machine_text(m)}", *section(result)]  # fmt: skip
    (out / f"{name}.md").write_text("\n".join(lines) + "\n")
    print(f"bench: wrote {out / f'{name}.md'}", file=sys.stderr)
    if name in QUOTED_ELSEWHERE:
        return
    if not quick and out.resolve() == (ROOT / "bench" / "results").resolve():
        alone = measured_on(m, f"`./build.sh bench --only {name}`")
        update_readme_block("\n".join([*section(result), "", alone]))


def update_readme_block(block: str) -> None:
    """Put one section (``## heading`` and its text) into README.md's tables:
    in place of the section with the same heading, or else after the last
    GraphBuilder section, where a full run puts it."""
    readme = ROOT / "README.md"
    text = readme.read_text()
    start, end = "<!-- bench:start -->", "<!-- bench:end -->"
    if start not in text or end not in text:
        return
    head, rest = text.split(start, 1)
    body, tail = rest.split(end, 1)
    block = block.strip().replace("## ", "#### ", 1)
    heading = block.split("\n", 1)[0]
    preface, *sections = body.split("#### ")
    blocks = ["#### " + b.strip() for b in sections]
    same = [i for i, b in enumerate(blocks) if b.split("\n", 1)[0] == heading]
    if same:
        blocks[same[0]] = block
    else:
        builder = [i for i, b in enumerate(blocks) if b.startswith("#### GraphBuilder")]
        blocks.insert(builder[-1] + 1 if builder else len(blocks) - 1, block)
    first = [preface.strip()] if preface.strip() else []
    readme.write_text(f"{head}{start}\n" + "\n\n".join(first + blocks) + f"\n{end}{tail}")
    print("bench: updated the table in README.md", file=sys.stderr)


def measured_on(m: dict[str, str], how: str) -> str:
    """The README's line saying when, where and how its tables were measured."""
    return f"Measured by {how} on {machine_text(m)}"


def update_readme(data: dict[str, Any]) -> None:
    """Put a full run's latency and target tables into README.md between markers."""
    readme = ROOT / "README.md"
    text = readme.read_text()
    start, end = "<!-- bench:start -->", "<!-- bench:end -->"
    if start not in text or end not in text:
        return
    table = report(data)
    keep = [table[table.index("## Per-inference latency") :table.index("Model load (s)")].strip(),
            table[table.index("## Targets") :].strip()]
    # Sections the README quotes from their own runs (QUOTED_ELSEWHERE) stay out.
    quoted = "## What one request can cost"
    keep[1:1] = [b for b in builder_blocks(table) if not b.startswith(quoted)]
    body = "\n\n".join(block.replace("## ", "#### ", 1) for block in keep)
    body = f"{measured_on(data['machine'], 'a full `./build.sh bench`')}\n\n{body}"
    head, rest = text.split(start, 1)
    readme.write_text(f"{head}{start}\n{body}\n{end}{rest.split(end, 1)[1]}")
    print("bench: updated the tables in README.md", file=sys.stderr)


if __name__ == "__main__":
    main()
