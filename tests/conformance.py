"""The ONNX backend node tests through wasinn, and natively through OpenVINO.

    python tests/conformance.py [--sample] [--cases NAME,...] [--report PATH]

Generates the installed ``onnx`` package's node test cases with its own
generator, keeps those whose inputs and outputs are all wasi-nn dtypes with
static shapes, and runs every case two ways:

* **guest**: one wasinn component (``tests/conformance_app``) under the
  wasmtime CLI with its OpenVINO backend loads each ``model.onnx`` with
  ``Model.load(path)``, runs it and writes the outputs back;
* **native**: OpenVINO's Python API reads the same file and compiles it for
  the CPU with ``INFERENCE_PRECISION_HINT`` f32.

Both are compared with the case's expected outputs as onnx's own backend
runner compares them (same shape, same dtype, ``assert_allclose`` with the
case's ``rtol``/``atol``). Every case the guest does not pass gets a cause,
and the full run writes ``docs/conformance.md``. ``--sample`` runs
``SAMPLE``, the fixed set ``tests/test_conformance.py`` checks.

A component that traps or hangs is restarted on the cases after the one it
was running, which is recorded as a trap or hang: none may remain.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import component_cases
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "tests" / "conformance_app"
WORK = ROOT / "build" / "conformance"
REPORT = ROOT / "docs" / "conformance.md"

# ONNX TensorProto element types wasi-nn carries, by wasinn's names.
ONNX_TO_DTYPE = {1: "f32", 2: "u8", 6: "i32", 7: "i64", 10: "f16", 11: "f64", 16: "bf16"}
NP_DTYPES: dict[str, Any] = {
    "f32": np.float32, "u8": np.uint8, "i32": np.int32, "i64": np.int64,
    "f16": np.float16, "f64": np.float64,
}  # fmt: skip

# Seconds a component may spend on one case before it counts as hung, and
# before its first case (build.sh run rebuilds it first if wasinn changed).
CASE_TIMEOUT = 60.0
START_TIMEOUT = 900.0

# A fixed sample for tests/test_conformance.py: a spread of ordinary operators
# and every case kind the guest-side rewrites exist for.
SAMPLE = [
    # ordinary operators
    "test_add", "test_matmul_2d", "test_conv_with_strides_padding", "test_relu",
    "test_softmax_axis_1", "test_gather_0", "test_transpose_default",
    "test_slice_start_out_of_bounds",  # a zero-size output
    # rank-0 inputs
    "test_clip", "test_range_float_type_positive_delta", "test_range_int32_type_negative_delta",
    "test_onehot_with_axis",
    # rank-0 outputs
    "test_size_example", "test_matmul_1d_1d", "test_einsum_inner_prod",
    # zero-size inputs
    "test_reduce_sum_empty_axes_input_noop", "test_reduce_sum_empty_set",
    "test_reduce_sum_default_axes_keepdims_random",
    # a renamed input, a dropped input
    "test_dropout_default", "test_dropout_default_ratio",
]  # fmt: skip


@dataclass
class Case:
    """One node test case: its model file, inputs and expected outputs."""

    name: str
    directory: Path
    inputs: list[tuple[str, np.ndarray]]
    expected: list[np.ndarray]
    rtol: float
    atol: float


@dataclass
class Outcome:
    """What one path made of one case: ``status`` is "pass", "wrong",
    "load", "run" (an error loading or running), "trap" or "hang"."""

    status: str
    detail: str = ""
    error: str = ""  # the exception class, for errors


@dataclass
class Run:
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    seconds: float = 0.0


# ---------------------------------------------------------------- cases


def _dtype_of(value_info: Any) -> tuple[str | None, bool]:
    """(wasinn dtype or None, static shape?) of an ONNX ValueInfoProto."""
    tt = value_info.type.tensor_type
    if not value_info.type.HasField("tensor_type"):
        return None, False
    static = tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim)
    return ONNX_TO_DTYPE.get(tt.elem_type), static


def _array_dtype(a: np.ndarray) -> str | None:
    if a.dtype.name == "bfloat16":
        return "bf16"
    for name, np_type in NP_DTYPES.items():
        if a.dtype == np.dtype(np_type):
            return name
    return None


def generate(work: Path = WORK, names: list[str] | None = None) -> tuple[list[Case], int]:
    """Write the eligible node test cases under ``work``; return them and how
    many node cases there were in all."""
    from onnx.backend.test.case import node as node_cases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        every = node_cases.collect_testcases()
    wanted = set(names) if names is not None else None
    cases = []
    for c in every:
        if wanted is not None and c.name not in wanted:
            continue
        if c.model is None or not c.data_sets:
            continue
        graph = c.model.graph
        inits = {i.name for i in graph.initializer}
        ins = [vi for vi in graph.input if vi.name not in inits]
        declared = [_dtype_of(vi) for vi in [*ins, *graph.output]]
        if not declared or any(d is None or not s for d, s in declared):
            continue
        values, expected = c.data_sets[0]
        if len(values) != len(ins) or len(expected) != len(graph.output):
            continue
        if any(_array_dtype(np.asarray(a)) is None for a in [*values, *expected]):
            continue
        directory = work / "cases" / c.name
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "model.onnx").write_bytes(c.model.SerializeToString())
        inputs = [(vi.name, np.asarray(a)) for vi, a in zip(ins, values, strict=True)]
        for k, (_, a) in enumerate(inputs):
            (directory / f"in{k}.bin").write_bytes(np.ascontiguousarray(a).tobytes())
        cases.append(
            Case(c.name, directory, inputs, [np.asarray(e) for e in expected], c.rtol, c.atol)
        )
    return cases, len(every)


def manifest(cases: list[Case], work: Path = WORK) -> Path:
    """The guest's list of cases (paths relative to ``work``, its current directory)."""
    entries = [
        {
            "name": c.name,
            "dir": str(c.directory.relative_to(work)),
            "inputs": [
                {"name": n, "dtype": _array_dtype(a), "shape": list(a.shape), "file": f"in{k}.bin"}
                for k, (n, a) in enumerate(c.inputs)
            ],
        }
        for c in cases
    ]
    path = work / "manifest.json"
    path.write_text(json.dumps(entries))
    return path


# ---------------------------------------------------------------- comparing


def compare(case: Case, got: list[np.ndarray]) -> Outcome:
    """onnx's own backend comparison: count, shape, dtype, then allclose."""
    if len(got) != len(case.expected):
        return Outcome("wrong", f"{len(got)} outputs, expected {len(case.expected)}")
    for i, (out, ref) in enumerate(zip(got, case.expected, strict=True)):
        if out.shape != ref.shape:
            return Outcome("wrong", f"output {i} has shape {list(out.shape)}, "
                                    f"expected {list(ref.shape)}")  # fmt: skip
        if _array_dtype(out) != _array_dtype(ref):
            return Outcome("wrong", f"output {i} is {_array_dtype(out)}, "
                                    f"expected {_array_dtype(ref)}")  # fmt: skip
        rtol = case.rtol
        if ref.dtype.name == "bfloat16":
            rtol = max(rtol, 2**-6)
            out, ref = out.astype(np.float32), ref.astype(np.float32)
        try:
            np.testing.assert_allclose(out, ref, rtol=rtol, atol=case.atol)
        except AssertionError as exc:
            lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
            shown = [line for line in lines if "Max " in line] or lines[1:3]
            return Outcome("wrong", f"output {i} differs: {'; '.join(shown)}")
    return Outcome("pass")


def _from_bytes(data: bytes, dtype: str, shape: list[int]) -> np.ndarray:
    if dtype == "bf16":
        import ml_dtypes

        return np.frombuffer(data, ml_dtypes.bfloat16).reshape(shape)
    return np.frombuffer(data, NP_DTYPES[dtype]).reshape(shape)


# ---------------------------------------------------------------- native


def run_native(cases: list[Case]) -> Run:
    """Each case through OpenVINO's Python API, read from its file, compiled in f32."""
    import openvino as ov

    core = ov.Core()
    run = Run()
    start = time.perf_counter()
    for case in cases:
        try:
            model = core.read_model(str(case.directory / "model.onnx"))
            compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        except Exception as exc:
            run.outcomes[case.name] = Outcome("load", openvino_reason(exc), type(exc).__name__)
            continue
        try:
            request = compiled.create_infer_request()
            given = dict(case.inputs)
            # OpenVINO may drop inputs (zero-size ones) or rename one (Dropout's):
            # feed what it has, by name, else the inputs left over in order.
            named = [next((n for n in p.get_names() if n in given), None) for p in compiled.inputs]
            left = iter(n for n in given if n not in named)
            # Kept until the outputs are read: a Result fed straight by a
            # Parameter reads the tensor it was given.
            tensors = []
            for port, name in zip(compiled.inputs, named, strict=True):
                name = name if name is not None else next(left, None)
                if name is not None:
                    tensors.append(_ov_tensor(ov, given[name]))
                    request.set_tensor(port, tensors[-1])
            request.infer()
            got = [_np_array(request.get_output_tensor(i)) for i in range(len(compiled.outputs))]
            del tensors
        except Exception as exc:
            run.outcomes[case.name] = Outcome("run", openvino_reason(exc), type(exc).__name__)
            continue
        run.outcomes[case.name] = compare(case, got)
    run.seconds = time.perf_counter() - start
    return run


def _ov_tensor(ov: Any, a: np.ndarray) -> Any:
    """An OpenVINO tensor of exactly ``a``'s shape (rank 0 too) and type (bf16 too)."""
    kind = {"bf16": ov.Type.bf16}.get(_array_dtype(a) or "", None)
    if kind is None:
        kind = ov.Type(a.dtype)
    t = ov.Tensor(kind, ov.Shape(list(a.shape)))
    if a.size:
        view = t.data.view(np.uint16) if kind == ov.Type.bf16 else t.data
        view[...] = a.view(np.uint16) if kind == ov.Type.bf16 else a
    return t


def _np_array(t: Any) -> np.ndarray:
    if t.element_type.get_type_name() == "bf16":
        import ml_dtypes

        return np.array(t.data).view(np.uint16).view(ml_dtypes.bfloat16)
    return np.array(t.data)


def openvino_reason(exc: BaseException) -> str:
    """OpenVINO's reason: its summary line, else the last line that is not a location."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    summary = [line[3:] for line in lines if line.startswith("-- ")]
    useful = [
        line for line in lines
        if not line.startswith("Exception from") and not re.match(r"Check '.*' failed at", line)
    ]  # fmt: skip
    best = summary or useful or lines or [type(exc).__name__]
    return best[-1][:300]


# ---------------------------------------------------------------- guest


def run_guest(cases: list[Case], work: Path = WORK, root: Path = ROOT) -> Run:
    """Every case through one component; restarted after a trap or a hang.

    ``root`` is the checkout whose ``build.sh`` (and so whose wasinn) builds
    and runs ``tests/conformance_app``.
    """
    path = manifest(cases, work)
    by_name = {c.name: c for c in cases}
    run = Run()
    start = time.perf_counter()

    def answered(msg: dict[str, Any]) -> None:
        case = by_name[msg["case"]]
        if "error" in msg:
            kind = "bug" if msg.get("bug") else "run"
            run.outcomes[case.name] = Outcome(kind, msg["message"], msg["error"])
            return
        got = [
            _from_bytes((case.directory / o["file"]).read_bytes(), o["dtype"], o["shape"])
            for o in msg["outputs"]
        ]
        run.outcomes[case.name] = compare(case, got)

    def lost(index: int, kind: str, detail: str) -> None:
        run.outcomes[cases[index].name] = Outcome(kind, detail)

    app = root / "tests" / "conformance_app"
    component_cases.run(app, path, len(cases), answered, lost, CASE_TIMEOUT, START_TIMEOUT, root)
    run.seconds = time.perf_counter() - start
    return run


# ---------------------------------------------------------------- report


def rewrites(case: Case) -> list[str]:
    """Which of wasinn's model rewrites apply to the case (worked out natively)."""
    sys.path.insert(0, str(ROOT / "guest"))
    from wasinn._formats import onnx_read as _onnx
    from wasinn._formats import rewrite as _rewrite

    data = (case.directory / "model.onnx").read_bytes()
    _, plan = _rewrite.onnx_model(_onnx.read(data))
    kinds = []
    if plan.scalar_inputs:
        kinds.append("rank-0 inputs")
    declared = _onnx.read(data).outputs
    if any(declared[i].shape == () for i in plan.unsqueezed):
        kinds.append("rank-0 outputs")
    zero = [n for n in plan.folded if any(s.name == n and 0 in (s.shape or ()) for s in
                                          _onnx.read(data).inputs)]  # fmt: skip
    if zero:
        kinds.append("zero-size inputs")
    if set(plan.host_names) - plan.scalar_inputs or set(plan.folded) - set(zero):
        kinds.append("renamed or dropped inputs")
    return kinds


def cause(name: str, guest: Outcome, native: Outcome) -> tuple[str, str]:
    """(category, explanation) of a case the guest does not pass."""
    if guest.status in ("trap", "hang", "bug"):
        return "wasinn", f"{guest.status}: {guest.detail}"
    if guest.status == "wrong" and native.status == "pass":
        return "wasinn", f"WRONG ANSWER where native OpenVINO f32 is right: {guest.detail}"
    if native.status in ("load", "run"):
        where = "read or compile" if native.status == "load" else "run"
        return "unsupported by OpenVINO", f"native OpenVINO cannot {where} it either: " + (
            native.detail
        )
    if native.status == "wrong":
        same = guest.status == "wrong" and guest.detail == native.detail
        how = "the same answer" if same else f"{guest.status}: {guest.detail}"
        return "precision or semantics of OpenVINO", (
            f"native OpenVINO f32 differs from onnx's expected output too ({native.detail}); "
            f"guest: {how}"
        )
    reason = HOST_LIMITS.get(name)
    if reason is not None:
        return "host limit", f"{reason} (guest: {guest.error}: {guest.detail})"
    return "wasinn", f"{guest.error or guest.status}: {guest.detail}"


# Cases native OpenVINO f32 passes that the wasmtime host cannot run, with why.
HOST_LIMITS: dict[str, str] = {}


def write_report(
    cases: list[Case], total: int, native: Run, guest: Run, path: Path = REPORT
) -> dict[str, int]:
    """docs/conformance.md from one run; returns the headline counts."""
    import onnx
    import openvino

    names = [c.name for c in cases]
    g_pass = sum(guest.outcomes[n].status == "pass" for n in names)
    n_pass = sum(native.outcomes[n].status == "pass" for n in names)
    both = sum(
        guest.outcomes[n].status == "pass" and native.outcomes[n].status == "pass" for n in names
    )
    failing = [
        (n, *cause(n, guest.outcomes[n], native.outcomes[n]))
        for n in names
        if guest.outcomes[n].status != "pass"
    ]
    by_cause = Counter(c for _, c, _ in failing)
    recovered: Counter[str] = Counter()
    for c in cases:
        if guest.outcomes[c.name].status == "pass":
            recovered.update(rewrites(c))
    statuses = Counter(guest.outcomes[n].status for n in names)
    counts = {
        "cases": len(names),
        "guest": g_pass,
        "native": n_pass,
        "native_only": n_pass - both,
        "guest_only": g_pass - both,
        "traps": statuses["trap"] + statuses["hang"] + statuses["bug"],
        "wrong": sum(1 for _, _, why in failing if why.startswith("WRONG")),
        "wasinn": by_cause["wasinn"],
    }

    def pct(k: int) -> str:
        return f"{100 * k / len(names):.1f} %"

    lines = [
        "# ONNX conformance: the backend node tests through wasinn",
        "",
        "Generated by `./build.sh conformance` (`tests/conformance.py`); do not edit. "
        f"onnx {onnx.__version__}, OpenVINO {openvino.__version__.split('-')[0]}.",
        "",
        f"Of the {total} node test cases the installed onnx package generates, {len(names)} have "
        "only wasi-nn dtypes (f16, bf16, f32, f64, u8, i32, i64) and static shapes in their "
        "inputs and outputs. Each runs in one wasinn component on the wasmtime CLI's OpenVINO "
        "backend (`Model.load(path)`, `run`), and natively through OpenVINO's Python API "
        "compiled with `INFERENCE_PRECISION_HINT` f32. Outputs are compared as onnx's backend "
        "runner compares them: shape, dtype, then `assert_allclose` with the case's tolerances.",
        "",
        "| path | pass | of |",
        "|---|---|---|",
        f"| guest: wasinn in a component, wasmtime + OpenVINO | {g_pass} ({pct(g_pass)}) | "
        f"{len(names)} |",
        f"| native: OpenVINO Python API, f32 | {n_pass} ({pct(n_pass)}) | {len(names)} |",
        f"| native passes, guest does not | {n_pass - both} | |",
        f"| guest passes, native does not | {g_pass - both} | |",
        f"| traps, hangs, non-wasinn exceptions in the guest | {counts['traps']} | |",
        f"| wrong answers in the guest where native is right | {counts['wrong']} | |",
        "",
        f"Guest run: {guest.seconds:.0f} s; native run: {native.seconds:.0f} s.",
        "",
        "## Cases passing in the guest thanks to wasinn's model rewrites",
        "",
        "The wasmtime host cannot carry these cases as the model declares them; wasinn rewrites "
        "the model before loading it (see `guest/wasinn/_formats/rewrite.py`). "
        "A case may need several.",
        "",
        "| rewrite | passing cases it applies to |",
        "|---|---|",
    ]
    for kind in ("rank-0 inputs", "rank-0 outputs", "zero-size inputs",
                 "renamed or dropped inputs"):  # fmt: skip
        lines.append(f"| {kind} | {recovered[kind]} |")
    lines += [
        "",
        "## Cases the guest does not pass, by cause",
        "",
        "| cause | cases |",
        "|---|---|",
    ]
    for kind, k in sorted(by_cause.items(), key=lambda kv: -kv[1]):
        lines.append(f"| {kind} | {k} |")
    lines += ["", "| case | cause | detail |", "|---|---|---|"]
    for n, kind, why in failing:
        text = why.replace("|", "\\|").replace("\n", " ")
        lines.append(f"| `{n}` | {kind} | {text[:400]} |")
    guest_only = [n for n in names if guest.outcomes[n].status == "pass"
                  and native.outcomes[n].status != "pass"]  # fmt: skip
    if guest_only:
        lines += [
            "", "## Cases the guest passes and native OpenVINO does not", "",
            "The native path reads each model from its file; the wasmtime host reads it from "
            "memory, and OpenVINO's two ONNX readers differ on a few models.", "",
        ]  # fmt: skip
        lines += [
            f"- `{n}`: native {native.outcomes[n].status}: {native.outcomes[n].detail[:200]}"
            for n in guest_only
        ]
    path.write_text("\n".join(lines) + "\n")
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", action="store_true", help="only the fixed SAMPLE")
    parser.add_argument("--cases", help="comma-separated case names")
    parser.add_argument(
        "--report", type=Path, help="where to write the report (docs/conformance.md for a full run)"
    )
    args = parser.parse_args(argv)
    names = SAMPLE if args.sample else args.cases.split(",") if args.cases else None
    report = args.report or (REPORT if names is None else WORK / "partial.md")
    cases, total = generate(WORK, names)
    print(f"conformance: {len(cases)} of {total} node test cases", file=sys.stderr)
    native = run_native(cases)
    guest = run_guest(cases)
    counts = write_report(cases, total, native, guest, report)
    print(
        f"conformance: guest {counts['guest']}, native f32 {counts['native']} of "
        f"{counts['cases']}; native-only {counts['native_only']}, traps {counts['traps']}, "
        f"wrong {counts['wrong']}; report: {report}",
        file=sys.stderr,
    )
    bad = counts["traps"] or counts["wrong"] or counts["wasinn"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
