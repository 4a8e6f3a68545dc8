"""Pre/post-processing spliced into an ONNX model (``Model.load(..., preprocess=, postprocess=)``).

Oracle: onnxruntime running the original model, with the same processing done
in numpy before and after. Natively through the OpenVINO-backed fake host;
``test_fuse_in_component`` runs the same fused models in a real component.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from builder_app import fused_cases
from builder_check import run_onnxruntime
from onnx import TensorProto, helper

from wasinn import FusionError, Model, Tensor, ValidationError

MEAN = np.array(fused_cases.MEAN, np.float32)
STD = np.array(fused_cases.STD, np.float32)
preprocess, postprocess = fused_cases.preprocess, fused_cases.postprocess
W = np.random.default_rng(0).normal(size=(3 * 4 * 4, 5)).astype(np.float32)


def classifier(path: Path, opset: int = 18) -> None:
    """x: f32[N, 3, 4, 4] -> probs: f32[N, 5] = softmax(flatten(x) @ W)."""
    nodes = [
        helper.make_node("Flatten", ["x"], ["flat"], axis=1),
        helper.make_node("MatMul", ["flat", "W"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=1),
    ]
    graph = helper.make_graph(
        nodes, "classifier",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4, 4])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 5])],
        [helper.make_tensor("W", TensorProto.FLOAT, W.shape, W.reshape(-1).tolist())],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    onnx.save(model, str(path))


def numpy_pipeline(model: Path, image: np.ndarray) -> dict[str, np.ndarray]:
    x = ((image.astype(np.float32) / 255 - MEAN) / STD).transpose(2, 0, 1)[None]
    probs = run_onnxruntime(model.read_bytes(), {"x": x.astype(np.float32)})["probs"]
    return {"best": probs.argmax(1)[:, None].astype(np.int32), "top": probs.max(1, keepdims=True)}


IMAGE = np.random.default_rng(1).integers(0, 256, (4, 4, 3)).astype(np.uint8)


def test_fused_model_equals_numpy_processing_around_onnxruntime(
    ov_host: Any, tmp_path: Path
) -> None:
    path = tmp_path / "classifier.onnx"
    classifier(path)
    with Model.load(path, preprocess=preprocess, postprocess=postprocess) as model:
        assert [str(s) for s in model.inputs] == ["image: u8[4, 4, 3]"]
        # The model declares its batch as a symbol: the outputs keep it dynamic.
        assert [str(s) for s in model.outputs] == ["best: i32[?, 1]", "top: f32[?, 1]"]
        out = model.run({"image": Tensor(IMAGE.tobytes(), shape=IMAGE.shape, dtype="u8")})
    want = numpy_pipeline(path, IMAGE)
    assert out["best"].tolist() == want["best"].tolist()
    np.testing.assert_allclose(out["top"].tolist(), want["top"], rtol=1e-5)
    # One graph: the processing is part of the model, not graphs of its own
    # (a first "onnx" attempt is refused by the host, as wasmtime's is).
    assert [c[1] for c in ov_host.calls if c[0] == "load"][-1:] == ["openvino"]
    assert sum(1 for c in ov_host.calls if c[0] == "load" and c[1] == "openvino") == 1


def test_only_pre_or_only_post(ov_host: Any, tmp_path: Path) -> None:
    path = tmp_path / "classifier.onnx"
    classifier(path)
    feed = Tensor(IMAGE.tobytes(), shape=IMAGE.shape, dtype="u8")
    with Model.load(path, preprocess=preprocess) as pre_only:
        assert [s.name for s in pre_only.outputs] == ["probs"]
        probs = np.array(pre_only.run({"image": feed})["probs"].tolist(), np.float32)
    with Model.load(path, postprocess=postprocess) as post_only:
        assert [s.name for s in post_only.inputs] == ["x"]
        x = (
            ((IMAGE.astype(np.float32) / 255 - MEAN) / STD)
            .transpose(2, 0, 1)[None]
            .astype(np.float32)
        )
        best = post_only.run({"x": Tensor(x.tobytes(), shape=x.shape, dtype="f32")})["best"]
    assert best.tolist() == [[int(probs.argmax())]]


def test_an_older_opset_is_refused_with_the_operators_that_differ(
    ov_host: Any, tmp_path: Path
) -> None:
    path = tmp_path / "old.onnx"
    classifier(path, opset=12)
    with pytest.raises(FusionError) as info:
        Model.load(path, preprocess=preprocess)
    message = str(info.value)
    assert "old.onnx imports ONNX opset 12, where" in message
    assert "Cast" in message and "Div" in message and "Transpose" in message
    assert "run it as a separate GraphBuilder model" in message


def test_ir_is_not_spliced(ov_host: Any, model_dir: Path) -> None:
    with pytest.raises(FusionError, match="spliced into ONNX models only, and two.xml is openvino"):
        Model.load(model_dir / "two.xml", preprocess=preprocess)


MISUSE = {
    "unknown input": (
        lambda b: {"nope": b.input("i", shape=[1], dtype="f32")},
        "preprocess feeds 'nope', which is not an input",
    ),
    "wrong dtype": (
        lambda b: {"x": b.input("i", shape=[1, 3, 4, 4], dtype="f64")},
        "preprocess gives 'x' as f64, but classifier.onnx takes f32",
    ),
    "wrong shape": (
        lambda b: {"x": b.input("i", shape=[1, 3, 4, 5], dtype="f32")},
        "preprocess gives 'x' the shape [1, 3, 4, 5], but classifier.onnx takes [?, 3, 4, 4]",
    ),
    "same name": (
        lambda b: {"x": b.input("x", shape=[1, 3, 4, 4], dtype="f32") * 2.0},
        "preprocess input 'x' has the name of a model input",
    ),
    "not a mapping": (
        lambda b: None,
        "preprocess must return a mapping of model input name to Operand",
    ),
}


@pytest.mark.parametrize("name", MISUSE)
def test_preprocess_misuse(ov_host: Any, tmp_path: Path, name: str) -> None:
    path = tmp_path / "classifier.onnx"
    classifier(path)
    pre, message = MISUSE[name]
    with pytest.raises(ValidationError) as info:
        Model.load(path, preprocess=pre)
    assert message in str(info.value)
    assert not any(c[0] == "load" for c in ov_host.calls), "nothing reaches the host"


def test_postprocess_output_names_must_be_new(ov_host: Any, tmp_path: Path) -> None:
    path = tmp_path / "classifier.onnx"
    classifier(path)
    with pytest.raises(
        ValidationError, match="postprocess output 'probs' has the name of one of the model's"
    ):
        Model.load(path, postprocess=lambda b, outs: {"probs": b.relu(outs["probs"])})


@pytest.mark.integration
def test_fused_model_in_a_component(tmp_path: Path) -> None:
    """The same fused model under wasmtime + OpenVINO equals numpy around onnxruntime."""
    import json

    from builder_check import APP, decode
    from conftest import run_component

    classifier(tmp_path / "classifier.onnx")
    images = [
        np.random.default_rng(i).integers(0, 256, (4, 4, 3)).astype(np.uint8) for i in range(3)
    ]
    script = [
        {
            "fused": "classifier.onnx",
            "inputs": {"image": {"dtype": "u8", "shape": [4, 4, 3], "hex": im.tobytes().hex()}},
        }
        for im in images
    ]
    (tmp_path / "fused.json").write_text(json.dumps(script))
    done = run_component(APP, "fused.json", cwd=tmp_path, timeout=600)
    done.assert_no_trap()
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == len(images), done.stderr[-2000:]
    for line, image in zip(lines, images, strict=True):
        assert "ok" in line, line
        want = numpy_pipeline(tmp_path / "classifier.onnx", image)
        assert decode(line["ok"]["best"]).tolist() == want["best"].tolist()
        np.testing.assert_allclose(decode(line["ok"]["top"]), want["top"], rtol=1e-5)
