"""How the graph-builder tests check an operation, shared by ``test_builder_*.py``.

Every case in ``builder_app/builder_cases.py`` is checked three ways on the
same random inputs:

1. natively, the builder's ONNX passes ``onnx.checker`` (full check) and
   onnxruntime's result matches the family's numpy reference;
2. natively, OpenVINO's Python API agrees with onnxruntime (the host's engine);
3. in a real component (``tests/builder_app`` under wasmtime + OpenVINO), the
   graph built by ``GraphBuilder.build`` gives what onnxruntime gives.

Inputs are random and seeded by the case name: floats in [-2, 2), signed
integers in [-5, 5], unsigned ones in [0, 9]. A case must be valid for every
such input (e.g. ``b.log(b.abs(x) + 0.5)``).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "tests" / "builder_app"
sys.path.insert(0, str(APP))

from builder_cases import CASES, OV_ONLY  # noqa: E402  (the app folder is put on the path above)

from wasinn import GraphBuilder  # noqa: E402

NP = {
    "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64,
    "u8": np.uint8, "i32": np.int32, "i64": np.int64,
}  # fmt: skip
Reference = Callable[..., dict[str, np.ndarray]]


def onnx_of(case: str) -> tuple[bytes, GraphBuilder]:
    builder = GraphBuilder()
    return builder.to_onnx(CASES[case](builder)), builder


def inputs_of(case: str) -> dict[str, np.ndarray]:
    """The case's random inputs, by the names and types its graph declares."""
    data, builder = onnx_of(case)
    rng = np.random.default_rng(
        int.from_bytes(hashlib.sha256(case.encode()).digest()[:8], "little")
    )
    out = {}
    for name, value in builder._inputs.items():
        shape = tuple(d if d is not None else 3 for d in value.shape)
        dtype = NP[value.dtype]
        if value.dtype in ("u8",):
            arr = rng.integers(0, 10, shape).astype(dtype)
        elif value.dtype in ("i32", "i64"):
            arr = rng.integers(-5, 6, shape).astype(dtype)
        else:
            arr = rng.uniform(-2, 2, shape).astype(dtype)
        out[name] = arr
    return out


def run_onnxruntime(data: bytes, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, inputs), strict=True))


def run_openvino(data: bytes, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import onnx
    import openvino as ov

    core = ov.Core()
    compiled = core.compile_model(core.read_model(data, ov.Tensor(np.zeros(0, np.uint8))), "CPU")
    result = compiled(inputs)
    # By position: OpenVINO folds the final Identity nodes, so an output's
    # "any name" can be the name of the value feeding it.
    outputs = onnx.load_from_string(data).graph.output
    got = {}
    for declared, o in zip(outputs, compiled.outputs, strict=True):
        value = np.asarray(result[o])
        if declared.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16:
            # OpenVINO's Python API hands bf16 back as float16 holding the raw bits.
            value = value.view(np.uint16).view(ml_dtypes.bfloat16)
        got[declared.name] = value
    return got


def tolerance(dtype: Any) -> dict[str, float]:
    """Comparison tolerance by element type: exact for integers."""
    if np.dtype(dtype).kind in "iub":
        return {"rtol": 0, "atol": 0}
    if np.dtype(dtype) in (np.float16, np.dtype(ml_dtypes.bfloat16)):
        return {"rtol": 1e-2, "atol": 1e-2}
    return {"rtol": 1e-5, "atol": 1e-5}


def assert_close(got: dict[str, np.ndarray], want: dict[str, np.ndarray], what: str) -> None:
    assert list(got) == list(want), f"{what}: outputs {list(got)} != {list(want)}"
    for name, expected in want.items():
        actual = np.asarray(got[name])
        expected = np.asarray(expected)
        assert actual.shape == expected.shape, (
            f"{what} {name}: shape {actual.shape} != {expected.shape}"
        )
        assert actual.dtype == expected.dtype, (
            f"{what} {name}: dtype {actual.dtype} != {expected.dtype}"
        )
        np.testing.assert_allclose(
            actual.astype(np.float64),
            expected.astype(np.float64),
            err_msg=f"{what} {name}",
            **tolerance(expected.dtype),
        )


def check_native(case: str, reference: Reference) -> None:
    """onnx.checker, then onnxruntime against numpy, then OpenVINO against onnxruntime
    (OpenVINO against numpy for the cases onnxruntime cannot run)."""
    import onnx

    data, _ = onnx_of(case)
    onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
    inputs = inputs_of(case)
    if case in OV_ONLY:
        assert_close(run_openvino(data, inputs), reference(**inputs), f"{case}: OpenVINO vs numpy")
        return
    ort_out = run_onnxruntime(data, inputs)
    assert_close(ort_out, reference(**inputs), f"{case}: onnxruntime vs numpy")
    assert_close(run_openvino(data, inputs), ort_out, f"{case}: OpenVINO vs onnxruntime")


def component_script(cases: list[str]) -> list[dict[str, Any]]:
    """The builder_app script running ``cases`` on their inputs."""
    script = []
    for case in cases:
        tensors = {
            k: {"dtype": _dtype_name(v.dtype), "shape": list(v.shape), "hex": v.tobytes().hex()}
            for k, v in inputs_of(case).items()
        }
        script.append({"case": case, "inputs": tensors})
    return script


def _dtype_name(dtype: Any) -> str:
    return next(name for name, np_type in NP.items() if np.dtype(np_type) == dtype)


def decode(tensor: dict[str, Any]) -> np.ndarray:
    return np.frombuffer(bytes.fromhex(tensor["hex"]), NP[tensor["dtype"]]).reshape(tensor["shape"])


def run_component(run: Callable[..., Any], cases: list[str], workdir: Path) -> dict[str, Any]:
    """Run ``cases`` in one builder_app component; case name -> its JSON line."""
    script = workdir / "builder_script.json"
    script.write_text(json.dumps(component_script(cases)))
    done = run(APP, script.name, cwd=workdir, timeout=900)
    done.assert_no_trap()
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [line["case"] for line in lines] == cases, done.stderr[-2000:]
    return {line["case"]: line for line in lines}


def check_in_component(line: dict[str, Any], case: str, reference: Reference) -> None:
    """The component's outputs equal onnxruntime's on the same graph and inputs
    (numpy's, for the cases onnxruntime cannot run)."""
    assert "ok" in line, f"{case}: {line.get('error')}: {line.get('message')}"
    got = {k: decode(v) for k, v in line["ok"].items()}
    inputs = inputs_of(case)
    if case in OV_ONLY:
        assert_close(got, reference(**inputs), f"{case}: component vs numpy")
        return
    data, _ = onnx_of(case)
    assert_close(got, run_onnxruntime(data, inputs), f"{case}: component vs onnxruntime")
