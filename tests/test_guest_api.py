"""The public API inside a real component, under the real wasmtime CLI with OpenVINO.

Every test runs tests/guest_app as a component (built by ./build.sh) on the
tiny models from tests/models.py, and compares with numpy or with OpenVINO's
Python API run natively on the same input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import openvino as ov
import pytest
from models import DTYPES, MATRIX

pytestmark = pytest.mark.integration

NP = {
    "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64,
    "u8": np.uint8, "i32": np.int32, "i64": np.int64,
}  # fmt: skip
X = np.arange(6, dtype=np.float32).reshape(2, 3) / 3.0
Y = np.full((2, 3), 0.5, np.float32)


def tensor(a: np.ndarray, dtype: str = "f32") -> dict[str, Any]:
    return {"dtype": dtype, "shape": list(a.shape), "hex": a.tobytes().hex()}


def array_of(out: dict[str, Any]) -> np.ndarray:
    return np.frombuffer(bytes.fromhex(out["hex"]), NP[out["dtype"]]).reshape(out["shape"])


def native(path: Path, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The oracle: OpenVINO's Python API, same model, same input."""
    compiled = ov.Core().compile_model(str(path), "CPU")
    result = compiled(feed)
    return {o.get_any_name(): result[o] for o in compiled.outputs}


def test_real_output_names_values_and_selection(guest, model_dir: Path) -> None:
    done = guest({
        "load": {"path": "two.xml"},
        "steps": [
            {"describe": True},
            {"run": {"x": tensor(X), "y": tensor(Y)}},
            {"run": {"x": tensor(X), "y": tensor(Y)}, "outputs": ["sum"]},
        ],
    })
    assert done.code == 0, done.stdout + done.stderr
    loaded, meta, full, selected = done.lines
    assert [i["name"] for i in meta["ok"]["inputs"]] == ["y", "x"]
    assert [o["name"] for o in meta["ok"]["outputs"]] == ["prod", "sum"]
    assert list(full["ok"]) == ["prod", "sum"]
    oracle = native(model_dir / "two.xml", {"x": X, "y": Y})
    for name in ("prod", "sum"):
        np.testing.assert_array_equal(array_of(full["ok"][name]), oracle[name])
    np.testing.assert_allclose(array_of(full["ok"]["prod"]), X @ MATRIX, rtol=1e-6)
    assert list(selected["ok"]) == ["sum"]


def test_metadata_in_the_guest_matches_openvino(guest, model_dir: Path) -> None:
    done = guest({"load": {"path": "dynamic.xml"}, "steps": []})
    meta = done.lines[0]["ok"]
    model = ov.Core().read_model(model_dir / "dynamic.xml")
    assert meta["inputs"] == [{"name": "v", "shape": [None, 4], "dtype": "f32"}]
    assert [o["name"] for o in meta["outputs"]] == [o.get_any_name() for o in model.outputs]


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_crosses_the_boundary_byte_exact(guest, model_dir: Path, dtype: str) -> None:
    rng = np.random.default_rng(7)
    if dtype in ("u8", "i32", "i64"):
        info = np.iinfo(NP[dtype])
        values = rng.integers(info.min, info.max, size=(2, 3), dtype=NP[dtype], endpoint=True)
    else:
        values = rng.normal(0, 1000, size=(2, 3)).astype(NP[dtype])
    step = {"run": {"inp": tensor(values, dtype)}}
    done = guest({"load": {"path": f"ident_{dtype}.xml"}, "steps": [step]})
    assert done.code == 0, done.stdout + done.stderr
    (out,) = done.lines[1]["ok"].values()
    assert out["dtype"] == dtype and out["shape"] == [2, 3]
    assert out["hex"] == values.tobytes().hex()
    # Through an op, the guest must agree with native OpenVINO bit for bit.
    done = guest({"load": {"path": f"concat_{dtype}.xml"}, "steps": [step]})
    assert done.code == 0, done.stdout + done.stderr
    oracle = native(model_dir / f"concat_{dtype}.xml", {"inp": values})["out"]
    assert done.lines[1]["ok"]["out"]["hex"] == oracle.tobytes().hex()


def test_gpu_falls_back_to_cpu(guest) -> None:
    done = guest({"load": {"path": "two.xml", "target": ["gpu", "cpu"]},
                  "steps": [{"run": {"x": tensor(X), "y": tensor(Y)}, "outputs": ["sum"]}]})
    assert done.code == 0, done.stdout + done.stderr
    meta = done.lines[0]["ok"]
    assert meta["target"] == "cpu"
    assert [t for t, _ in meta["skipped_targets"]] == ["gpu"]
    assert "runtime-error" in meta["skipped_targets"][0][1]
    np.testing.assert_array_equal(array_of(done.lines[1]["ok"]["sum"]), X + Y)


def test_gpu_alone_fails_cleanly(guest) -> None:
    done = guest({"load": {"path": "two.xml", "target": "gpu"}})
    assert done.code == 1
    err = done.lines[0]
    assert err["error"] == "BackendRuntimeError" and err["code"] == "runtime-error"
    assert "loading two.xml on gpu failed" in err["message"]
    assert "no such device" in err["message"]


def test_tpu_alone_raises_and_the_host_survives(guest) -> None:
    done = guest({"load": {"path": "two.xml", "target": "tpu"}})
    assert done.code == 1  # a normal exit: the host did not abort
    assert done.lines[0]["error"] == "ValidationError"
    assert "'tpu' cannot be used with OpenVINO" in done.lines[0]["message"]


def test_tpu_in_a_list_is_skipped(guest) -> None:
    done = guest({"load": {"path": "two.xml", "target": ["tpu", "cpu"]},
                  "steps": [{"run": {"x": tensor(X), "y": tensor(Y)}}]})
    assert done.code == 0, done.stdout + done.stderr
    meta = done.lines[0]["ok"]
    assert meta["target"] == "cpu" and meta["skipped_targets"][0][0] == "tpu"


VALIDATION_CASES = {
    "unknown input": ({"x": tensor(X), "y": tensor(Y), "z": tensor(X)}, None,
                      "unknown input 'z'; the model's inputs are: 'y', 'x'"),
    "missing input": ({"x": tensor(X)}, None, "missing input 'y'"),
    "wrong dtype": ({"x": tensor(X.astype(np.float64), "f64"), "y": tensor(Y)}, None,
                    "input 'x' must be f32, got f64"),
    "wrong shape": ({"x": tensor(X.reshape(3, 2)), "y": tensor(Y)}, None,
                    "input 'x' has shape [3, 2], but the model wants [2, 3]"),
    "byte length": ({"x": {"raw_hex": "00" * 20}, "y": tensor(Y)}, None,
                    "20 bytes of data do not fill shape [2, 3] of f32"),
    "unknown output": ({"x": tensor(X), "y": tensor(Y)}, ["nope"],
                       "unknown output 'nope'; the model's outputs are: 'prod', 'sum'"),
    "scalar tensor": (
        {"x": {"dtype": "f32", "shape": [], "values": [1.0]}, "y": tensor(Y)},
        None,
        "input 'x' is a scalar (shape ()), but the wasmtime host cannot pass rank-0 tensors",
    ),
}


@pytest.mark.parametrize("case", list(VALIDATION_CASES))
def test_validation_errors_are_clean_messages(guest, case: str) -> None:
    feed, outputs, message = VALIDATION_CASES[case]
    step: dict[str, Any] = {"run": feed}
    if outputs:
        step["outputs"] = outputs
    done = guest({"load": {"path": "two.xml"}, "steps": [step]})
    assert done.code == 1
    err = done.lines[1]
    assert err["error"] == "ValidationError", err
    assert message in err["message"]


def test_scalar_model_input_is_explained(guest) -> None:
    done = guest({"load": {"path": "scalar.xml"},
                  "steps": [{"run": {"s": tensor(np.ones(1, np.float32))}},
                            {"run": {"s": tensor(np.float32(2.0))}}]})
    assert done.code == 1
    assert "but the model wants a scalar (shape [])" in done.lines[1]["message"]
    assert done.lines[2]["ok"]["tripled"]["shape"] == []


def test_same_tensor_twice_and_sessions(guest) -> None:
    done = guest({
        "load": {"path": "two.xml"},
        "steps": [
            {"let": "x", "tensor": tensor(X)},
            {"run": {"x": "$x", "y": "$x"}, "outputs": ["sum"]},
            {"run": {"x": "$x", "y": "$x"}, "outputs": ["sum"]},
            {"session": 1},
            {"run": {"x": "$x", "y": tensor(Y)}, "outputs": ["sum"], "session": 1},
            {"run": {"x": "$x", "y": "$x"}, "outputs": ["sum"]},
        ],
    })
    assert done.code == 0, done.stdout + done.stderr
    sums = [
        array_of(line["ok"]["sum"])
        for line in done.lines
        if isinstance(line.get("ok"), dict) and "sum" in line["ok"]
    ]
    assert len(sums) == 4
    np.testing.assert_array_equal(sums[0], X + X)
    np.testing.assert_array_equal(sums[1], X + X)
    np.testing.assert_array_equal(sums[2], X + Y)
    np.testing.assert_array_equal(sums[3], X + X)


def test_close_twice_then_use_after_close(guest) -> None:
    done = guest({
        "load": {"path": "two.xml"},
        "steps": [
            {"session": 1},
            {"close": True},
            {"close": True},
            {"run": {"x": tensor(X), "y": tensor(Y)}},
            {"run": {"x": tensor(X), "y": tensor(Y)}, "session": 1},
        ],
    })
    assert done.code == 1
    lines = done.lines
    assert lines[2]["ok"] == "closed" and lines[3]["ok"] == "closed"
    assert lines[4]["error"] == "ClosedError" and "model is closed" in lines[4]["message"]
    assert lines[5]["error"] == "ClosedError" and "session is closed" in lines[5]["message"]


def test_load_by_name_gives_positional_names(guest, model_dir: Path) -> None:
    flags = f"-S nn-graph=openvino::{model_dir / 'byname'}"
    done = guest({"load": {"name": "byname"}, "steps": [{"run": {"x": tensor(X), "y": tensor(Y)}}]},
                 wasmtime_flags=flags)
    assert done.code == 0, done.stdout + done.stderr
    assert done.lines[0]["ok"]["inputs"] is None
    out = done.lines[1]["ok"]
    assert list(out) == ["0", "1"]
    np.testing.assert_array_equal(array_of(out["1"]), X + Y)
    missing = guest({"load": {"name": "nothing"}}, wasmtime_flags=flags)
    assert missing.code == 1 and missing.lines[0]["error"] == "NotFoundError"
    assert "loading the host's model 'nothing' failed [not-found]" in missing.lines[0]["message"]


def test_onnx_loads_through_openvino(guest, model_dir: Path) -> None:
    a = np.array([[1, 2], [3, 4]], np.float32)
    b = np.array([[0.5, 0.5], [0.5, 0.5]], np.float32)
    done = guest({"load": {"path": "add_mul.onnx"},
                  "steps": [{"run": {"a": tensor(a), "b": tensor(b)}}]})
    assert done.code == 0, done.stdout + done.stderr
    meta = done.lines[0]["ok"]
    assert meta["encoding"] == "openvino"
    assert meta["inputs"] == [{"name": n, "shape": [2, 2], "dtype": "f32"} for n in ("a", "b")]
    out = done.lines[1]["ok"]
    assert list(out) == ["total", "scaled"]
    oracle = native(model_dir / "add_mul.onnx", {"a": a, "b": b})
    np.testing.assert_array_equal(array_of(out["total"]), oracle["total"])
    np.testing.assert_array_equal(array_of(out["scaled"]), oracle["scaled"])


def test_corrupt_onnx_is_refused_before_the_host(guest, model_dir: Path) -> None:
    data = (model_dir / "add_mul.onnx").read_bytes()
    (model_dir / "cut.onnx").write_bytes(data[: len(data) // 2])
    done = guest({"load": {"path": "cut.onnx"}})
    assert done.code == 1
    assert done.lines[0]["error"] == "ModelFormatError"
    assert "cut.onnx" in done.lines[0]["message"] and "truncated" in done.lines[0]["message"]


def _mislabelled(path: Path, node: Any, declared: int) -> None:
    """A one-node ONNX model whose declared output (f32 or int32, [2, 3]) is wrong."""
    from onnx import TensorProto, helper, save

    graph = helper.make_graph(
        [node], "mislabelled",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", declared, [2, 3])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    save(model, str(path))


def test_outputs_are_what_the_host_computed_not_what_the_model_declares(
    guest, model_dir: Path
) -> None:
    """A stale declaration (right byte count, wrong shape or type) must not relabel
    the host's answer."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    _mislabelled(model_dir / "transpose_mislabelled.onnx",
                 helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0]), TensorProto.FLOAT)
    _mislabelled(model_dir / "cast_mislabelled.onnx",
                 helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT32), TensorProto.FLOAT)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    cases = {
        "transpose_mislabelled.onnx": ("f32", [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]),
        "cast_mislabelled.onnx": ("i32", [[0, 1, 2], [3, 4, 5]]),
    }
    for name, (dtype, values) in cases.items():
        done = guest({"load": {"path": name}, "steps": [{"run": {"x": tensor(x)}}]})
        assert done.code == 0, done.stdout + done.stderr
        assert done.lines[0]["ok"]["outputs"] == [{"name": "y", "shape": [2, 3], "dtype": "f32"}]
        out = done.lines[1]["ok"]["y"]
        assert out["dtype"] == dtype
        got = array_of(out)
        assert got.tolist() == values
        # The oracles agree: native OpenVINO, and onnxruntime where it accepts
        # the model (it refuses the cast's declared type, and only warns about
        # the transpose's shape).
        oracles = [native(model_dir / name, {"x": x})["y"]]
        if name.startswith("transpose"):
            oracles.append(ort.InferenceSession(str(model_dir / name)).run(None, {"x": x})[0])
        for oracle in oracles:
            assert got.shape == oracle.shape and got.dtype == oracle.dtype
            np.testing.assert_array_equal(got, oracle)


def test_model_metadata_in_the_guest_matches_the_native_apis(guest, model_dir: Path) -> None:
    """``model.metadata``: ONNX metadata_props as onnxruntime reads them, IR rt_info as
    OpenVINO's ``get_rt_info`` gives them (nested keys joined with "/")."""
    import onnxruntime as ort

    done = guest({"load": {"path": "metadata.onnx"}, "steps": []})
    assert done.code == 0, done.stdout + done.stderr
    session = ort.InferenceSession(str(model_dir / "metadata.onnx"))
    assert done.lines[0]["ok"]["metadata"] == session.get_modelmeta().custom_metadata_map

    done = guest({"load": {"path": "rt_info.xml"}, "steps": []})
    assert done.code == 0, done.stdout + done.stderr
    meta = done.lines[0]["ok"]["metadata"]
    rt_info = ov.Core().read_model(model_dir / "rt_info.xml").get_rt_info()
    mean_values = rt_info["model_info"]["mean_values"].astype(str)
    assert meta["model_info/mean_values"] == mean_values == "1,2,3"
    assert meta["a/c/d"] == "deep" and meta["escaped"] == 'needs <escaping> & "quotes"\n\ttoo'
    assert meta["naïve key"] == "ünïcode ✓"

    done = guest({"load": {"path": "two.xml"}, "steps": []})
    assert "model_info/mean_values" not in done.lines[0]["ok"]["metadata"]
