"""WebNN's conformance cases from web-platform-tests, through wasinn's GraphBuilder.

    python tests/webnn_wpt.py [--sample] [--cases NAME,...] [--report PATH]

``tests/data/webnn-wpt/`` holds WPT's 2,060 data-driven WebNN cases as JSON
(its README gives the format). Each case is built with ``GraphBuilder`` by
``webnn_wpt_app/wpt_graph.py`` (WebNN's camelCase operations and options
become the builder's snake_case ones) and run two ways:

* **native**: ``GraphBuilder.to_onnx`` on the host, compiled by OpenVINO's
  Python API for the CPU with ``INFERENCE_PRECISION_HINT`` f32;
* **component**: ``tests/webnn_wpt_app`` builds the same graph with
  ``GraphBuilder.build`` in a component under the wasmtime CLI with its
  OpenVINO backend, and runs it.

Outputs are compared by WPT's rules (``compare``). Each case ends as
``pass``; ``wrong`` (it ran, the answer is outside the tolerance or has the
wrong shape or type); ``refused`` (the builder raised a ``WasiNNError`` or
lacks the operation, or the host refused the graph: a ``WasiNNError`` in the
component, OpenVINO's exception natively); or ``error`` (anything else: a bug
in wasinn or in this harness, a trap, a hang). All cases run natively; the
component runs all of them, or ``sample(cases)`` with ``--sample``. A full
run writes ``docs/webnn-conformance.md``, a partial one
``build/webnn-wpt/partial.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import component_cases
import numpy as np
from conformance import openvino_reason

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "tests" / "webnn_wpt_app"
DATA = ROOT / "tests" / "data" / "webnn-wpt"
WORK = ROOT / "build" / "webnn-wpt"
REPORT = ROOT / "docs" / "webnn-conformance.md"
# The app folder for wpt_graph; guest/ for wasinn when run as a script
# (pytest puts it on the path itself).
sys.path.insert(0, str(APP))
if str(ROOT / "guest") not in sys.path:
    sys.path.insert(1, str(ROOT / "guest"))

import wpt_graph  # noqa: E402  (the app folder is put on the path above)

from wasinn import GraphBuilder, WasiNNError  # noqa: E402

NP_TYPES: dict[str, Any] = {
    "f32": np.float32, "f16": np.float16, "u8": np.uint8, "i32": np.int32, "i64": np.int64,
}  # fmt: skip
INTEGERS = ("int4", "uint4", "int8", "uint8", "int32", "uint32", "int64", "uint64")

# Seconds the component may spend on one case before it counts as hung, and
# before its first one (build.sh run rebuilds it first if wasinn changed).
CASE_TIMEOUT = 60.0
START_TIMEOUT = 900.0

# How many cases of each operator the sample takes in file order, and how many
# more it takes of the rest by the SHA-256 of their names: a stable choice
# that changes only when the data does.
SAMPLE_FIRST = 2
SAMPLE_HASHED = 30
# Cases the sample leaves out, with why (the full run has them).
SAMPLE_SKIP = {
    "add float32 large inputs": "three 36-million-element tensors: too big for a quick test",
    "add float16 large inputs": "three 36-million-element tensors: too big for a quick test",
}
# Cases the sample takes besides, so that it sees what does not pass: host
# limits and builder checks (test_webnn_wpt.py's KNOWN lists them, with why).
SAMPLE_EXTRA = (
    "argMax uint32 4D tensor, axis=1, all options",
    "batchNormalization float32 2D constant tensors default options",
)


# Cases whose answer is outside WPT's tolerance because of the engines'
# float arithmetic, not wasinn's lowering (each checked natively on OpenVINO
# and onnxruntime with the same ONNX): a documented host limit, never a looser
# tolerance. The report gives the reason; main() and the test accept only these.
HOST_PRECISION = {
    "batchNormalization float32 2D constant tensors default options": (
        "with every operand constant, OpenVINO and onnxruntime alike fold BatchNormalization into "
        "x * a + b when compiling: both 12 ULP off where WPT allows 6 (a fed input passes)"
    ),
    "batchNormalization options.axis=0 + gelu": (
        "the engines' erf: OpenVINO 55 ULP and onnxruntime 38 ULP off where WPT's sum allows 24"
    ),
    "dequantizeLinear as an intermediate node": (
        "OpenVINO's dequantization rounds once more than WPT's (x - zero_point) * scale: 2 ULP "
        "where WPT allows 1 (onnxruntime passes)"
    ),
    "quantized element-wise binary sub": (
        "OpenVINO folds the quantize/dequantize pairs around the subtraction into its own "
        "arithmetic: 8 ULP where WPT allows 0 (onnxruntime passes)"
    ),
}


@dataclass
class Case:
    """One WPT case: its name, the operator it is counted under, its JSON."""

    name: str
    operator: str
    data: dict[str, Any]


@dataclass
class Outcome:
    """``status`` is pass, wrong, refused or error; ``detail`` says why."""

    status: str
    detail: str = ""


@dataclass
class Run:
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    seconds: float = 0.0


# ---------------------------------------------------------------- cases


def load(data: Path = DATA) -> list[Case]:
    """Every case, in the order of the files and of the cases in them."""
    cases = []
    for path in sorted((data / "cases").glob("*.json")):
        for case in json.loads(path.read_text())["cases"]:
            ops = [op["name"] for op in case["graph"]["operators"]]
            # A case of one operator counts under it; a graph of several under
            # its file (subgraph, qdq_subgraph, ...).
            operator = ops[0] if len(ops) == 1 else path.stem
            cases.append(Case(case["name"], operator, case))
    return cases


def sample(cases: list[Case]) -> list[Case]:
    """``SAMPLE_FIRST`` cases of every operator, then ``SAMPLE_HASHED`` of the
    rest, lowest SHA-256 of the name first, and ``SAMPLE_EXTRA``; in the
    cases' own order."""
    taken: set[str] = set(SAMPLE_EXTRA)
    per: Counter[str] = Counter()
    for c in cases:
        if c.name not in SAMPLE_SKIP and per[c.operator] < SAMPLE_FIRST:
            per[c.operator] += 1
            taken.add(c.name)
    rest = [c.name for c in cases if c.name not in taken and c.name not in SAMPLE_SKIP]
    rest.sort(key=lambda n: hashlib.sha256(n.encode()).hexdigest())
    taken.update(rest[:SAMPLE_HASHED])
    return [c for c in cases if c.name in taken]


# ---------------------------------------------------------------- tolerance


def tolerance(case: dict[str, Any], built: wpt_graph.Built) -> tuple[str, float]:
    """(metric, value): the case's own, or for the 11 multi-operator cases
    whose WPT tolerance is null, the sum of each operator's own ULP tolerance
    (``step_ulp``), as WPT's ``getPrecisionTolerance`` sums a graph's."""
    given = case.get("tolerance")
    if given is not None:
        return str(given["metricType"]), float(given["value"])
    return "ULP", float(sum(step_ulp(step) for step in built.steps))


# Operators whose own ULP tolerance is a constant (WPT's per-operator files
# and its table of element-wise operations); data movement is exact.
CONSTANT_ULP = {
    "batchNormalization": 6, "relu": 0, "reshape": 0, "maxPool2d": 0, "clamp": 0,
    "quantizeLinear": 1, "dequantizeLinear": 1, "add": 1, "sub": 1, "mul": 1,
}  # fmt: skip


def step_ulp(step: wpt_graph.Step) -> int:
    """One operator's ULP tolerance from its operands' shapes, as its own file
    gives it: a dot product over K terms may be off 2 ULP per term (conv2d,
    gemm), softmax 3 per element summed plus 3, an average 1 per window
    element plus 2; quantize and dequantize 1 (their files' value).

    WPT's own sum counts only the operators in its table (conv2d, gemm,
    softmax and the element-wise ones) and gives the others 0; taking each
    operator's own file value instead loosens the qdq graphs by 1 ULP per
    quantize or dequantize and the pooled ones by the window, the error
    those operators are allowed alone."""
    o = step.options
    if step.op in ("conv2d", "convTranspose2d"):
        x, w = step.shapes[0], step.shapes[1]
        nhwc = o.get("inputLayout") == "nhwc"
        channels = x[3] if nhwc else x[1]
        layout = o.get("filterLayout", "oihw" if step.op == "conv2d" else "iohw")
        hw = {"oihw": (2, 3), "iohw": (2, 3), "hwio": (0, 1), "hwoi": (0, 1),
              "ohwi": (1, 2), "ihwo": (1, 2)}[layout]  # fmt: skip
        kernel = (w[hw[0]] or 1) * (w[hw[1]] or 1)
        return int(2 * kernel * (channels or 1) // int(o.get("groups", 1)))
    if step.op == "gemm":
        a = step.shapes[0]
        k = (a[0] if o.get("aTranspose") else a[1]) or 1
        extra = int(o.get("alpha", 1.0) != 1.0)
        if o.get("c") is not None and o.get("beta", 1.0) != 0.0:
            extra += 1 + int(o.get("beta", 1.0) != 1.0)
        return 2 * k + extra
    if step.op == "softmax":
        axis = int(o.get("axis", 1))
        return 3 * (step.shapes[0][axis] or 1) + 3
    if step.op in ("averagePool2d", "l2Pool2d"):
        x = step.shapes[0]
        window = o.get("windowDimensions") or (x[1:3] if o.get("layout") == "nhwc" else x[2:4])
        return int(math.prod(d or 1 for d in window)) + 2
    return CONSTANT_ULP.get(step.op, 0)


# ---------------------------------------------------------------- comparing


def expected_values(spec: dict[str, Any]) -> tuple[list[Any], bool]:
    """(elements to compare, one-number expectation?): a one number standing
    for a larger shape is compared on the first 1,000 elements only."""
    shape = list(spec["descriptor"]["shape"])
    items, fill = wpt_graph.values(spec["data"], shape)
    if fill:
        return items * min(wpt_graph.FILL_LIMIT, math.prod(shape)), True
    return items, False


def f32_ulp_keys(x: np.ndarray) -> np.ndarray:
    """float32 values as integers one apart per ULP: the bit pattern of |v|,
    negated for negative v, so +0 and -0 are both 0 and the ends of the
    range meet at zero; every NaN reads as the canonical quiet NaN."""
    v = np.asarray(x, np.float64).astype(np.float32)
    bits = v.view(np.uint32).astype(np.int64)
    magnitude = bits & 0x7FFFFFFF
    keys = np.where(bits >> 31 == 1, -magnitude, magnitude)
    return np.where(np.isnan(v), 0x7FC00000, keys)


def f16_ulp_keys(raw: np.ndarray) -> np.ndarray:
    """float16 bit patterns (raw, unsigned) as integers; both zeros are 0 and
    every NaN the canonical quiet NaN, so that -0 matches 0 and NaN matches NaN."""
    bits = np.asarray(raw, np.uint16).astype(np.int64)
    keys = np.where(bits & 0x7FFF == 0, 0, bits)
    is_nan = ((bits & 0x7C00) == 0x7C00) & ((bits & 0x03FF) != 0)
    return np.where(is_nan, 0x7E00, keys)


def compare(actual: np.ndarray, spec: dict[str, Any], metric: str, value: float) -> str | None:
    """None when ``actual`` (the output's elements, flat) meets the expected
    ``spec`` under WPT's rules, else why not.

    - float32, ULP: ``f32_ulp_keys`` of both differ by at most ``value``;
    - float16, ULP: the output's raw bits against the expected value rounded
      to float32 and then to float16, as WPT does (to nearest, ties to even
      here, where WPT's conversion rounds ties up: the expected float16
      values are all exact halves, so no tie arises);
    - ATOL: ``|actual - expected| <= value``; NaN never passes;
    - integers: ``|actual - expected| <= value`` (0 when the file gives none),
      computed on Python integers so that int64 is exact.
    """
    want, fill = expected_values(spec)
    got = np.asarray(actual).reshape(-1)
    if fill:
        got = got[: len(want)]
    if got.size != len(want):
        return f"{got.size} elements, expected {len(want)}"
    dtype = spec["descriptor"]["dataType"]
    if dtype in INTEGERS:
        a_int = [int(v) for v in got.tolist()]
        d_int = [abs(a - int(e)) for a, e in zip(a_int, want, strict=True)]
        return _verdict(d_int, a_int, want, value, "")
    if metric == "ATOL":
        a = got.astype(np.float64)
        e = np.asarray(want, np.float64)
        with np.errstate(invalid="ignore"):
            d = np.abs(a - e)
        d = np.where(np.isnan(d), np.inf, d)
        return _verdict(d.tolist(), a.tolist(), want, value, " (ATOL)")
    if dtype == "float16":
        a_keys = f16_ulp_keys(got.astype(np.float16).view(np.uint16))
        halves = np.asarray(want, np.float64).astype(np.float32).astype(np.float16)
        e_keys = f16_ulp_keys(halves.view(np.uint16))
    else:
        a_keys = f32_ulp_keys(got)
        e_keys = f32_ulp_keys(np.asarray(want, np.float64))
    return _verdict(np.abs(a_keys - e_keys).tolist(), got.tolist(), want, value, " ULP")


def _verdict(
    distance: list[Any], got: list[Any], want: list[Any], value: float, unit: str
) -> str | None:
    bad = [i for i, d in enumerate(distance) if not d <= value]
    if not bad:
        return None
    worst = max(bad, key=lambda i: distance[i])
    return (
        f"{len(bad)} of {len(distance)} elements off; worst [{worst}]: {got[worst]!r}, "
        f"expected {want[worst]!r}, {distance[worst]}{unit} > {value:g}"
    )


def judge(case: Case, built: wpt_graph.Built, got: dict[str, np.ndarray]) -> Outcome:
    """A ran case: each output's shape and type as built, then its values."""
    metric, value = tolerance(case.data, built)
    for name, spec in case.data["graph"]["expectedOutputs"].items():
        shape, dtype = built.declared[name]
        want_type = wpt_graph.DTYPES.get(spec["descriptor"]["dataType"])
        if list(shape) != list(spec["descriptor"]["shape"]) or dtype != want_type:
            return Outcome(
                "wrong",
                f"{name} is {dtype} {list(shape)}, expected {want_type} "
                f"{spec['descriptor']['shape']}",
            )
        arr = got[name]
        if want_type == "u64":  # carried in i64 as the same bits
            arr = arr.astype(np.int64).view(np.uint64)
        why = compare(arr, spec, metric, value)
        if why is not None:
            return Outcome("wrong", f"{name}: {why}")
    return Outcome("pass")


# ---------------------------------------------------------------- native


def feed_array(feed: wpt_graph.Feed) -> np.ndarray:
    count = math.prod(feed.shape)
    items = feed.values * count if feed.fill else feed.values
    return (
        np.asarray(items, np.float64 if feed.dtype in ("f32", "f16") else object)
        .astype(NP_TYPES[feed.dtype])
        .reshape(feed.shape)
    )


def run_native(cases: list[Case]) -> Run:
    """Each case's ONNX through OpenVINO's Python API, compiled in f32."""
    import openvino as ov

    core = ov.Core()
    run = Run()
    start = time.perf_counter()
    for case in cases:
        run.outcomes[case.name] = _native_case(ov, core, case)
    run.seconds = time.perf_counter() - start
    return run


def _native_case(ov: Any, core: Any, case: Case) -> Outcome:
    builder = GraphBuilder()
    try:
        built = wpt_graph.build(builder, case.data)
        data = builder.to_onnx(built.outputs)
    except (WasiNNError, wpt_graph.MissingOperation) as exc:
        return Outcome("refused", f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # noqa: BLE001 - a bug of wasinn or of this harness
        return Outcome("error", f"{type(exc).__name__}: {exc}")
    try:
        model = core.read_model(data, ov.Tensor(np.zeros(0, np.uint8)))
        compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        result = compiled({name: feed_array(f) for name, f in built.feeds.items()})
        # By position: OpenVINO may name an output after the value feeding it.
        got = {
            name: np.asarray(result[port])
            for name, port in zip(built.outputs, compiled.outputs, strict=True)
        }
    except Exception as exc:  # noqa: BLE001 - the host's refusal, in its words
        return Outcome("refused", f"OpenVINO: {openvino_reason(exc)}")
    return judge(case, built, got)


# ---------------------------------------------------------------- component


def run_component(cases: list[Case], work: Path = WORK) -> Run:
    """Every case through one component; restarted after a trap or a hang."""
    work.mkdir(parents=True, exist_ok=True)
    path = work / "cases.json"
    path.write_text(json.dumps([c.data for c in cases]))
    by_name = {c.name: c for c in cases}
    run = Run()
    start = time.perf_counter()

    def answered(msg: dict[str, Any]) -> None:
        run.outcomes[msg["case"]] = _component_outcome(by_name[msg["case"]], msg)

    def lost(index: int, kind: str, detail: str) -> None:
        run.outcomes[cases[index].name] = Outcome("error", f"{kind}: {detail}")

    component_cases.run(APP, path, len(cases), answered, lost, CASE_TIMEOUT, START_TIMEOUT)
    run.seconds = time.perf_counter() - start
    return run


def _component_outcome(case: Case, msg: dict[str, Any]) -> Outcome:
    if "error" in msg:
        status = "error" if msg.get("bug") else "refused"
        return Outcome(status, f"{msg['error']}: {msg['message']}")
    # The graph is built again natively for what the comparison needs to know
    # (declared shapes, the null-tolerance rule): the same code made it.
    built = wpt_graph.build(GraphBuilder(), case.data)
    got = {}
    for name, out in msg["outputs"].items():
        got[name] = np.frombuffer(bytes.fromhex(out["hex"]), NP_TYPES[out["dtype"]])
        count = math.prod(out["shape"])
        if got[name].size == count:
            got[name] = got[name].reshape(out["shape"])
    return judge(case, built, got)


# ---------------------------------------------------------------- report


STATUSES = ("pass", "wrong", "refused", "error")


def counts(run: Run, names: list[str]) -> Counter[str]:
    return Counter(run.outcomes[n].status for n in names if n in run.outcomes)


def write_report(cases: list[Case], native: Run, component: Run, path: Path) -> str:
    """The markdown report; returns the summary line."""
    import openvino

    names = [c.name for c in cases]
    ran = [n for n in names if n in component.outcomes]
    nat, com = counts(native, names), counts(component, names)
    summary = (
        "webnn-wpt: native " + ", ".join(f"{nat[s]} {s}" for s in STATUSES) + f" of {len(names)}"
        "; component " + ", ".join(f"{com[s]} {s}" for s in STATUSES) + f" of {len(ran)}"
    )
    commit = json.loads((DATA / "index.json").read_text())["wpt_commit"]
    lines = [
        "# WebNN conformance: web-platform-tests' cases through GraphBuilder",
        "",
        "Generated by `python tests/webnn_wpt.py` (`./build.sh conformance webnn`); do not "
        f"edit. WPT {commit[:12]}, OpenVINO {openvino.__version__.split('-')[0]}.",
        "",
        f"Each of WPT's {len(names)} data-driven WebNN cases (`tests/data/webnn-wpt/`) is built "
        "with `GraphBuilder` and run natively (`to_onnx`, OpenVINO's Python API on the CPU, "
        "`INFERENCE_PRECISION_HINT` f32) and in a wasinn component (`GraphBuilder.build` under "
        "the wasmtime CLI with its OpenVINO backend), then compared by WPT's rules (ULP on "
        "float32/float16 bit patterns, ATOL, exact integers). *refused*: the builder or the "
        "host said clearly that it cannot (a missing operation, type or option); *wrong*: it "
        "ran and the answer is outside the tolerance; *error*: anything else.",
        "",
        "| path | cases | pass | wrong | refused | error | seconds |",
        "|---|---|---|---|---|---|---|",
        f"| native: OpenVINO Python API, f32 | {len(names)} | "
        + " | ".join(str(nat[s]) for s in STATUSES)
        + f" | {native.seconds:.0f} |",
        f"| component: wasmtime + OpenVINO | {len(ran)} | "
        + " | ".join(str(com[s]) for s in STATUSES)
        + f" | {component.seconds:.0f} |",
        "",
        "## By operator",
        "",
        "A case of one operator counts under it, a graph of several under its file.",
        "",
        "| operator | cases | native pass | wrong | refused | error | "
        "component cases | pass | wrong | refused | error |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    operators = sorted({c.operator for c in cases}, key=str.lower)
    for op in operators:
        of = [c.name for c in cases if c.operator == op]
        n, m = counts(native, of), counts(component, of)
        lines.append(
            f"| `{op}` | {len(of)} | "
            + " | ".join(str(n[s]) for s in STATUSES)
            + f" | {sum(m.values())} | "
            + " | ".join(str(m[s]) for s in STATUSES)
            + " |"
        )
    lines += ["", "## Every case that does not pass", ""]
    for c in cases:
        outcomes = [("native", native.outcomes.get(c.name)),
                    ("component", component.outcomes.get(c.name))]  # fmt: skip
        failed = [(where, o) for where, o in outcomes if o is not None and o.status != "pass"]
        if not failed:
            continue
        if len(failed) == 2 and failed[0][1] == failed[1][1]:
            failed = [("native and component", failed[0][1])]
        said = "; ".join(f"{where} {o.status}: {_md(o.detail)}" for where, o in failed)
        if c.name in HOST_PRECISION:
            said += f". Host precision: {HOST_PRECISION[c.name]}"
        lines.append(f"- `{c.name}` ({c.operator}): {said}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return summary


def _md(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")[:400]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sample", action="store_true", help="the component runs SAMPLE only")
    parser.add_argument("--cases", help="comma-separated case names (both paths)")
    parser.add_argument("--report", type=Path, help="where to write the report")
    args = parser.parse_args(argv)
    cases = load()
    if args.cases:
        wanted = set(args.cases.split(","))
        cases = [c for c in cases if c.name in wanted]
    full = not args.sample and not args.cases
    report = args.report or (REPORT if full else WORK / "partial.md")
    native = run_native(cases)
    component = run_component(sample(cases) if args.sample else cases)
    summary = write_report(cases, native, component, report)
    print(f"{summary}; report: {report}", file=sys.stderr)
    # Exit 1 on a wrong answer or an error that is not a documented host limit.
    outcomes = [(name, o) for r in (native, component) for name, o in r.outcomes.items()]
    bad = [
        n
        for n, o in outcomes
        if o.status == "error" or (o.status == "wrong" and n not in HOST_PRECISION)
    ]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
