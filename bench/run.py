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
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import openvino.opset13 as ops

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
sys.path.insert(0, str(ROOT / "bench" / "bench_guest"))
import cases  # noqa: E402  (the same inputs the guest builds)

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
    return [str(WASMTIME), "run", "-S", "nn", *args]


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


def fmt(cell: dict[str, Any] | None) -> str:
    return "n/a" if cell is None else f"{cell['median_ms']:.3f} / {cell['p90_ms']:.3f}"


def report(data: dict[str, Any]) -> str:
    m = data["machine"]
    run = "Quick run (smaller budgets; not for quoting)" if data["quick"] else "Full run"
    lines = [
        "# wasinn benchmark results",
        "",
        f"{run} on {m['date']}: {m['cpu']}, {m['cores']} cores, bf16 support: {m['bf16']}; "
        f"Python {m['python']}, OpenVINO {m['openvino']}, inference precision {m['precision']}.",
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
    lines += ["", "## Targets", "", "| target | measured | met |", "|---|---|---|"]
    for name, goal, value, better in targets(data):
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
    args = parser.parse_args()
    data: dict[str, Any] = {"quick": args.quick, "machine": machine()}
    data["latency"] = latency(args.quick)
    data["transfer"] = transfer(args.quick)
    data["startup"] = startup(args.quick)
    data["libcosts"] = guest("wasinn", "libcosts", "3" if args.quick else "9")["costs"]
    data["profile"] = guest("wasinn", "profile:vad", "300" if args.quick else "3000")["profile"]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "latest.json").write_text(json.dumps(data, indent=1))
    (args.out / "latest.md").write_text(report(data))
    chart(data, args.out / "latest.png")
    print(f"bench: wrote {args.out / 'latest.md'} and {args.out / 'latest.png'}", file=sys.stderr)
    if not args.quick and args.out.resolve() == (ROOT / "bench" / "results").resolve():
        update_readme(data)


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
    body = "\n\n".join(block.replace("## ", "#### ", 1) for block in keep)
    head, rest = text.split(start, 1)
    readme.write_text(f"{head}{start}\n{body}\n{end}{rest.split(end, 1)[1]}")
    print("bench: updated the tables in README.md", file=sys.stderr)


if __name__ == "__main__":
    main()
