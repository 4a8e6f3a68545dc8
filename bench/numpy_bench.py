"""The numpy benchmark: numpy in a component against native numpy, per operation.

Issue 20's goal: elementwise work and reductions within 1.5x native numpy, a
256x256 matmul within 5x (with a BLAS compiled for the guest; today the guest
has none).

The cases (``numpy_app/npcases.py``) are what pre- and post-processing code
does with numpy (normalise and transpose an image, soft-max, argmax and top-k,
NMS on 1,000 boxes, a mask threshold, sort, matmul, frombuffer) and a few
generic rows (elementwise, reductions, indexing). One module, three processes
on the same inputs:

- guest: ``bench/numpy_app`` (numpy 2.4.6 built for wasm32-wasi by
  ``tools/guest_packages.py``), run with ``./build.sh run``;
- native: the venv's numpy 2.4.6 (its wheel: CPU dispatch up to AVX-512,
  OpenBLAS), one BLAS thread (``OPENBLAS_NUM_THREADS=1``: the guest has
  one thread, and issue 20's matmul goal is single-threaded);
- native baseline: the same with ``NPY_DISABLE_CPU_FEATURES`` naming every
  dispatched feature this CPU has (numpy's ``__cpu_dispatch__`` that
  ``__cpu_features__`` reports), so only the baseline SIMD (x86-64-v2: SSE to
  SSE4.2) runs. It tells the cost of wasm from
  that of missing AVX2/AVX-512 kernels.

The operation grid (``npcases.GRID_LIST``, issue 35's goal table) times
each elementwise operation and reduction at float32 and float64 and at 1e3,
1e5 and 1e6 elements. A full run adds a fourth process, **before**: the same
app with the guest's numpy as it was built before SIMD128 (the catalogue's
``scalar`` variant of numpy, ``tools/guest_packages.toml``; built once and
cached, like the app's own), so that every row has its before and after
column from one run.

Each process times every case itself (``time.perf_counter``: a warm-up call,
then calls for ``BUDGET`` seconds, at least 5; the median), so component start
is not in the figures; the least time is kept too (on a loaded machine it
is the steadier figure). ``ROUNDS`` rounds run the three processes in turn and a
case keeps its lowest median per side (this 2-core machine is shared). The
result checksums of the guest and native runs are compared (``agree``).

Then size and start: a trivial app (``bench/start_plain``, prints "ok") and the
same app importing numpy (``bench/start_numpy``): ``.wasm`` and ``.cwasm``
sizes, and spawn-to-exit of ``wasmtime run`` on the ``.cwasm`` (median of
``START_REPS``), so that apps without numpy are seen to keep their size and
start time.

``run(quick)`` measures; ``report(data)`` gives the markdown; ``targets(data)``
the goals as (name, goal, measured, "lower").
``python bench/numpy_bench.py [--quick]`` prints the table.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
APP = ROOT / "bench" / "numpy_app"
START_APPS = (ROOT / "bench" / "start_plain", ROOT / "bench" / "start_numpy")
sys.path.insert(0, str(APP))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tools"))
import npcases  # noqa: E402  (bench/numpy_app, put on the path above)
import wasmtime_flags  # noqa: E402  (tools/)
from component_lines import json_lines  # noqa: E402

BUDGET, QUICK_BUDGET = 0.4, 0.08
ROUNDS, QUICK_ROUNDS = 3, 1
START_REPS, QUICK_START_REPS = 10, 3
#: Issue 20's goals, guest / native.
GOALS = {npcases.ELEMENTWISE: 1.5, npcases.REDUCTION: 1.5, npcases.MATMUL: 5.0}
#: Checksums of the guest and native results agree within this (relative):
#: f32 sums in another order, exp and friends within a few ULP.
CHECK_TOL = 1e-4
SIDES = ("guest", "native", "baseline")
#: The catalogue's numpy variant that the "before" column runs (see the module's text).
BEFORE_VARIANT = "scalar"
BEFORE_APP = BUILD / "numpy_bench_before"
#: Issue 35's goal for the grid, guest / native, at these sizes and above.
GRID_GOAL, GRID_GOAL_FROM = 1.5, 100_000


def build() -> None:
    built = subprocess.run([str(ROOT / "build.sh"), "build", str(APP), *map(str, START_APPS)],
                           capture_output=True, text=True)  # fmt: skip
    if built.returncode:
        raise SystemExit(f"bench: building the numpy apps failed:\n{built.stderr}")


def build_before() -> None:
    """``BEFORE_APP``: bench/numpy_app's code with the catalogue's scalar numpy
    (a ``uses`` line naming its site folder) instead of the app's own."""
    import guest_packages

    numpy = guest_packages.load_catalogue().packages["numpy"]
    site = guest_packages.site("numpy", numpy.version, variant=BEFORE_VARIANT)
    BEFORE_APP.mkdir(parents=True, exist_ok=True)
    for name in ("app.py", "npcases.py"):
        shutil.copyfile(APP / name, BEFORE_APP / name)
    # Beside the app's folder, not in it: componentize-py links every module under
    # an app's folder, and a `uses` folder inside it would be linked twice.
    link = BUILD / f"{BEFORE_APP.name}_site"
    link.unlink(missing_ok=True)
    link.symlink_to(site, target_is_directory=True)
    (BEFORE_APP / "build.txt").write_text(
        "# Written by bench/numpy_bench.py: bench/numpy_app with the guest's numpy as it was\n"
        f"# before SIMD128 (tools/guest_packages.toml, numpy's variant {BEFORE_VARIANT}).\n"
        f"uses ../{link.name}\n"
    )
    built = subprocess.run([str(ROOT / "build.sh"), "build", str(BEFORE_APP)],
                           capture_output=True, text=True)  # fmt: skip
    if built.returncode:
        raise SystemExit(f"bench: building {BEFORE_APP.name} failed:\n{built.stderr}")


def dispatched_features() -> list[str]:
    """numpy's dispatched CPU features that this CPU has (what the baseline run disables)."""
    umath: Any = importlib.import_module("numpy._core._multiarray_umath")
    return [f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f)]


def native(budget: float, baseline: bool, names: list[str]) -> dict[str, Any]:
    """The cases in a fresh native Python (this file's ``--worker``)."""
    env = dict(os.environ)
    for key in ("NPY_DISABLE_CPU_FEATURES", "NPY_ENABLE_CPU_FEATURES", "OPENBLAS_NUM_THREADS"):
        env.pop(key, None)
    env["OPENBLAS_NUM_THREADS"] = "1"  # the guest has one thread
    if baseline:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(dispatched_features())
    done = subprocess.run([sys.executable, __file__, "--worker", str(budget), *names], env=env,
                          capture_output=True, text=True, timeout=1800)  # fmt: skip
    if done.returncode:
        raise SystemExit(f"bench: the native numpy run failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def worker(budget: float, names: list[str]) -> None:
    import numpy as np

    cases = npcases.run_all(np, budget, names)
    print(json.dumps({"numpy": np.__version__, "features": dispatched_features(),
                      "cases": cases}))  # fmt: skip


def guest(budget: float, names: list[str], app: Path = APP) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        return json_lines(app, ["--budget", str(budget), *names], Path(tmp))[-1]


def start_rows(reps: int) -> list[dict[str, Any]]:
    """Size and spawn-to-exit of the trivial app without and with numpy."""
    wasmtime = Path(sysconfig.get_path("purelib")) / "wasmtime_cli" / "wasmtime"
    rows = []
    for app in START_APPS:
        name = app.name
        cmd = [str(wasmtime), "run", *wasmtime_flags.FLAGS, "-S", "nn", "--allow-precompiled",
               str(BUILD / f"{name}.cwasm")]  # fmt: skip
        libs = wasmtime.parent.parent / "openvino" / "libs"
        env = {**os.environ, "WASMTIME_LOG": "off",
               "LD_LIBRARY_PATH": f"{libs}:{os.environ.get('LD_LIBRARY_PATH', '')}"}
        times = []
        for _ in range(reps + 1):  # the first run warms the page cache: dropped
            t = time.perf_counter()
            done = subprocess.run(cmd, capture_output=True, text=True, env=env)
            times.append(time.perf_counter() - t)
            if done.returncode or not done.stdout.startswith("ok"):
                raise SystemExit(f"bench: {name} failed:\n{done.stderr}")
        rows.append({"app": name, "numpy": name == "start_numpy",
                     "wasm_mb": (BUILD / f"{name}.wasm").stat().st_size / 1e6,
                     "cwasm_mb": (BUILD / f"{name}.cwasm").stat().st_size / 1e6,
                     "start_ms": 1000 * statistics.median(times[1:]),
                     "start_min_ms": 1000 * min(times[1:])})  # fmt: skip
        print(f"bench: numpy start {name}: {rows[-1]['start_ms']:.0f} ms", file=sys.stderr)
    return rows


def run(quick: bool = False) -> dict[str, Any]:
    """Every case on the three sides, the lowest median of the rounds, and the start rows."""
    build()
    if not quick:
        build_before()
    budget = QUICK_BUDGET if quick else BUDGET
    names = npcases.quick_names() if quick else list(npcases.CASES)
    sides = SIDES if quick else (*SIDES, "before")
    best: dict[str, dict[str, dict[str, Any]]] = {side: {} for side in sides}
    meta: dict[str, Any] = {}
    for _ in range(QUICK_ROUNDS if quick else ROUNDS):
        results = {"guest": guest(budget, names), "native": native(budget, False, names),
                   "baseline": native(budget, True, names)}  # fmt: skip
        if not quick:
            results["before"] = guest(budget, names, BEFORE_APP)
        meta = {"guest_numpy": results["guest"]["numpy"],
                "native_numpy": results["native"]["numpy"],
                "native_features": results["native"]["features"],
                "baseline_features": results["baseline"]["features"],
                "disabled": dispatched_features()}  # fmt: skip
        for side, result in results.items():
            for name, row in result["cases"].items():
                kept = best[side].get(name)
                if kept is None or row["median_us"] < kept["median_us"]:
                    best[side][name] = {**row, "min_us": min(row["min_us"], kept["min_us"])
                                        if kept else row["min_us"]}  # fmt: skip
                else:
                    kept["min_us"] = min(row["min_us"], kept["min_us"])
    rows, grid = [], []
    for name in names:
        case = npcases.CASES[name]
        g, n, b = (best[side][name] for side in SIDES)
        before = best["before"][name]["median_us"] if "before" in best else None
        checks = [best[side][name]["check"] for side in ("guest", "before") if side in best]
        agree = all(abs(c - n["check"]) <= CHECK_TOL * max(1.0, abs(n["check"])) for c in checks)
        row = {"case": name, "what": case.what, "kind": case.kind,
               "guest_us": g["median_us"], "native_us": n["median_us"],
               "baseline_us": b["median_us"], "before_us": before,
               "ratio": g["median_us"] / n["median_us"],
               "ratio_before": None if before is None else before / n["median_us"],
               "ratio_baseline": g["median_us"] / b["median_us"],
               "ratio_min": g["min_us"] / n["min_us"],
               "reps": [g["reps"], n["reps"], b["reps"]], "agree": agree}  # fmt: skip
        if case.grid is None:
            rows.append(row)
        else:
            op, dtype, size = case.grid
            grid.append({**row, "op": op, "dtype": dtype, "size": size})
        print(f"bench: numpy {name}: guest / native {row['ratio']:.2f}, "
              f"/ baseline {row['ratio_baseline']:.2f}", file=sys.stderr)
    start = start_rows(QUICK_START_REPS if quick else START_REPS)
    return {"budget_s": budget, "rounds": QUICK_ROUNDS if quick else ROUNDS, **meta,
            "rows": rows, "grid": grid, "start": start}  # fmt: skip


def _us(us: float) -> str:
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.1f} µs"


def _size(n: int) -> str:
    """1e3, 1e5, 1e6 (Python's own format writes 1e+05)."""
    return f"{n:.0e}".replace("e+0", "e")


def _ratio(ratio: float | None) -> str:
    return "" if ratio is None else f"{ratio:.2f}"


def grid_report(data: dict[str, Any]) -> list[str]:
    """The operation grid: one line per operation and dtype, before and after at each size."""
    grid = data.get("grid", [])
    if not grid:
        return []
    sizes = sorted({r["size"] for r in grid})
    heads = " | ".join(f"{_size(s)} before | {_size(s)} after" for s in sizes)
    lines = [
        "", "## The operation grid: guest / native, before and after SIMD128", "",
        "Each cell is the guest's median time over native numpy's for the same operation "
        "on the same arrays (uniform in [0.5, 1.5)). before: the guest's numpy built without "
        f"SIMD128 (numpy's `{BEFORE_VARIANT}` variant in tools/guest_packages.toml); after: the "
        f"guest's numpy of today. Goal: <= {GRID_GOAL:g}x at {_size(GRID_GOAL_FROM)} elements and "
        "above (✓/✗ on the after cells it applies to). The 1e3 column is mostly per-call cost "
        "(see the overhead note below the table). Native times are in the JSON.", "",
        f"| operation | dtype | {heads} |",
        "|---|---|" + "---|---|" * len(sizes),
    ]  # fmt: skip
    cells: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
    for r in grid:
        cells.setdefault((r["op"], r["dtype"]), {})[r["size"]] = r
    for (op, dtype), by_size in cells.items():
        parts = []
        for size in sizes:
            r = by_size.get(size)
            if r is None:
                parts.append(" | ")
                continue
            mark = ""
            if size >= GRID_GOAL_FROM:
                mark = " ✓" if r["ratio"] <= GRID_GOAL else " ✗"
            agree = "" if r["agree"] else " (results differ)"
            parts.append(f"{_ratio(r['ratio_before'])} | **{r['ratio']:.2f}**{mark}{agree}")
        lines.append(f"| `{op}` | {dtype} | {' | '.join(parts)} |")
    lines += ["", overhead_note(data)]
    return lines


def overhead_note(data: dict[str, Any]) -> str:
    """Where the 1e3 column's time goes: a call's fixed cost against the interpreter's speed."""
    rows = {r["case"]: r for r in data["rows"]}
    call, python = rows.get("ufunc_call"), rows.get("python_calls")
    if call is None or python is None:
        return ""
    return (
        f"Per-call cost: one ufunc call on one element takes {_us(call['guest_us'])} in the "
        f"guest against {_us(call['native_us'])} natively ({call['ratio']:.1f}x), and 1,000 "
        f"calls of an empty Python function {_us(python['guest_us'])} against "
        f"{_us(python['native_us'])} ({python['ratio']:.1f}x): at 1e3 elements a call is mostly "
        "this fixed cost (argument parsing, type resolution, the output's allocation: CPython "
        "and numpy's C compiled to wasm, where every memory access is bounds-checked), which "
        "SIMD does not touch."
    )


def report(data: dict[str, Any]) -> list[str]:
    """The markdown section."""
    lines = [
        "", "## numpy in the guest vs native numpy (per operation)", "",
        f"Median time of each operation inside its own process (a warm-up call, then calls for "
        f"{data['budget_s']:g} s, at least 5; the lowest median of {data['rounds']} round(s)); "
        "component start is not included. guest: numpy "
        f"{data['guest_numpy']} built for wasm32-wasi (`-O3 -msimd128`, baseline "
        "WASM_SIMD128, no CPU dispatch, no BLAS). native: the venv's numpy "
        f"{data['native_numpy']} (dispatch: "
        f"{', '.join(data['native_features']) or 'none'}; OpenBLAS, `OPENBLAS_NUM_THREADS=1`). "
        "baseline: native with `NPY_DISABLE_CPU_FEATURES=\""
        f"{' '.join(data['disabled'])}\"` (x86-64-v2 SIMD only). \"min\": the ratio of the "
        "least times (steadier when other work shares the CPU). "
        "Goals: elementwise and reductions <= 1.5x native, matmul <= 5x. agree: the guest's "
        f"result checksum (and the before column's) equals native's within {CHECK_TOL:g}.", "",
        "| operation | kind | guest | native | baseline | guest / native | min | guest / baseline "
        "| before / native | agree |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for r in data["rows"]:
        goal = GOALS.get(r["kind"])
        mark = "" if goal is None else (" ✓" if r["ratio"] <= goal else " ✗")
        lines.append(
            f"| {r['what']} | {r['kind']} | {_us(r['guest_us'])} | {_us(r['native_us'])} "
            f"| {_us(r['baseline_us'])} | **{r['ratio']:.2f}**{mark} | {r['ratio_min']:.2f} "
            f"| {r['ratio_baseline']:.2f} | {_ratio(r['ratio_before'])} "
            f"| {'yes' if r['agree'] else 'NO'} |"
        )
    lines += grid_report(data)
    lines += [
        "", "Size and start: a trivial app (prints \"ok\") without numpy and the same app "
        "importing numpy; start = spawn to exit of `wasmtime run --allow-precompiled` on the "
        ".cwasm (median of the runs after a first, dropped one).", "",
        "| app | numpy | .wasm MB | .cwasm MB | start ms (median) | start ms (min) |",
        "|---|---|---|---|---|---|",
    ]  # fmt: skip
    for r in data["start"]:
        lines.append(f"| `bench/{r['app']}` | {'yes' if r['numpy'] else 'no'} | "
                     f"{r['wasm_mb']:.1f} | {r['cwasm_mb']:.1f} | {r['start_ms']:.0f} "
                     f"| {r['start_min_ms']:.0f} |")  # fmt: skip
    return lines


def targets(data: dict[str, Any]) -> list[tuple[str, float, float, str]]:
    """The goals, worst row of each kind: (name, goal, measured, "lower")."""
    out = []
    for kind in (npcases.ELEMENTWISE, npcases.REDUCTION):
        cells = [r for r in data.get("grid", [])
                 if r["kind"] == kind and r["size"] >= GRID_GOAL_FROM]  # fmt: skip
        if cells:
            worst = max(cells, key=lambda r: r["ratio"])
            out.append((f"numpy grid guest / native, {kind}, >= {_size(GRID_GOAL_FROM)}, worst "
                        f"({worst['op']}, {worst['dtype']}, {_size(worst['size'])}) "
                        f"<= {GRID_GOAL:g}", GRID_GOAL, worst["ratio"], "lower"))  # fmt: skip
    for kind, goal in GOALS.items():
        rows = [r for r in data["rows"] if r["kind"] == kind]
        if rows:
            worst = max(rows, key=lambda r: r["ratio"])
            out.append((f"numpy guest / native, {kind}, worst ({worst['case']}) <= {goal:g}",
                        goal, worst["ratio"], "lower"))  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description="numpy in the guest vs native (issue 20)")
    parser.add_argument("--quick", action="store_true", help="short budgets, one round")
    parser.add_argument("--worker", type=float, metavar="BUDGET", help=argparse.SUPPRESS)
    parser.add_argument("cases", nargs="*", help=argparse.SUPPRESS)  # the worker's
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    args = parser.parse_args()
    if args.cases and args.worker is None:
        parser.error("cases are named only to the worker (--worker); a run measures them all")
    if args.worker is not None:
        worker(args.worker, args.cases)
        return
    data = run(args.quick)
    if args.json:
        args.json.write_text(json.dumps(data, indent=1))
    print("\n".join(report(data)))
    for name, goal, measured, _ in targets(data):
        print(f"- {name}: {measured:.2f} ({'met' if measured <= goal else 'missed'})")


if __name__ == "__main__":
    main()
