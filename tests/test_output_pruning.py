"""``Model.load(..., outputs=[...])``: outputs not asked for are removed
before the host compiles the model, so the work only they need is not done.

The model has a cheap head (a sum) and a costly one (a chain of 24 matmuls);
loading it for the cheap head alone must leave no MatMul in what OpenVINO
compiled, give the same values as the whole model, and take less time (the
figures are printed for the notes; no test asserts a timing). ONNX and IR,
with and without post-processing, natively through the OpenVINO-backed host.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import pytest

from wasinn import GraphBuilder, Model, ValidationError

X = np.random.default_rng(3).uniform(-1, 1, (64, 256)).astype(np.float32)


def two_heads(folder: Path, kind: str) -> Path:
    """x: f32[64, 256] -> cheap: sum over rows, costly: 24 matmuls deep."""
    b = GraphBuilder()
    x = b.input("x", shape=[64, 256], dtype="f32")
    w = b.constant(np.random.default_rng(4).normal(0, 0.06, (256, 256)).astype(np.float32))
    y = x
    for _ in range(24):
        y = b.matmul(y, w)
    outputs = {"cheap": b.reduce_sum(x, axes=[1], keep_dimensions=True), "costly": y}
    path = folder / "heads.onnx"
    path.write_bytes(b.to_onnx(outputs))
    if kind == "onnx":
        return path
    xml = folder / "heads.xml"
    ov.save_model(ov.convert_model(path), xml, compress_to_fp16=False)
    return xml


def compiled_ops(ov_host: Any) -> set[str]:
    """The layer types the CPU plugin runs for the model the host compiled last."""
    handle = [h for h in ov_host.live if h.kind == "graph"][-1]
    ops = handle.value.get_runtime_model().get_ops()
    return {op.get_rt_info()["layerType"].astype(str) for op in ops}


def median_ms(model: Model) -> float:
    times = []
    for _ in range(15):
        start = time.perf_counter()
        model.run_numpy({"x": X})
        times.append(time.perf_counter() - start)
    return float(np.median(times) * 1000)


@pytest.mark.parametrize("kind", ["onnx", "ir"])
def test_only_the_outputs_asked_for_are_computed(ov_host: Any, tmp_path: Path, kind: str) -> None:
    path = two_heads(tmp_path, kind)
    with Model.load(path) as whole:
        full = whole.run_numpy({"x": X})
        assert {"MatMul", "FullyConnected"} & compiled_ops(ov_host)
        whole_ms = median_ms(whole)
    with Model.load(path, outputs=["cheap"]) as cheap:
        assert [s.name for s in cheap.outputs] == ["cheap"]
        ops = compiled_ops(ov_host)
        assert not {"MatMul", "FullyConnected"} & ops, ops
        got = cheap.run_numpy({"x": X})
        cheap_ms = median_ms(cheap)
    assert list(got) == ["cheap"]
    np.testing.assert_array_equal(got["cheap"], full["cheap"])
    print(f"\n{kind}: whole model {whole_ms:.3f} ms, outputs=['cheap'] {cheap_ms:.3f} ms")


@pytest.mark.parametrize("kind", ["onnx", "ir"])
def test_outputs_choose_among_the_post_processing(ov_host: Any, tmp_path: Path, kind: str) -> None:
    path = two_heads(tmp_path, kind)

    def post(b: Any, outs: dict[str, Any]) -> dict[str, Any]:
        return {"half": outs["cheap"] * 0.5, "top": b.reduce_max(outs["costly"], axes=[1])}

    with Model.load(path, postprocess=post, outputs=["half"]) as model:
        assert [s.name for s in model.outputs] == ["half"]
        assert not {"MatMul", "FullyConnected"} & compiled_ops(ov_host)
        half = model.run_numpy({"x": X})["half"]
    np.testing.assert_allclose(half, X.sum(1, keepdims=True) * 0.5, rtol=1e-5)


@pytest.mark.parametrize(
    ("outputs", "message"),
    [
        (["nope"], "outputs= names 'nope', which heads.onnx does not compute; its outputs are: "
                   "cheap, costly"),
        ([], "outputs= is empty; name at least one output of heads.onnx"),
    ],
)  # fmt: skip
def test_outputs_that_do_not_exist_are_refused(
    ov_host: Any, tmp_path: Path, outputs: list[str], message: str
) -> None:
    path = two_heads(tmp_path, "onnx")
    with pytest.raises(ValidationError) as info:
        Model.load(path, outputs=outputs)
    assert message in str(info.value)
    assert not any(c[0] == "load" for c in ov_host.calls), "nothing reaches the host"
