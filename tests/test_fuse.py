"""Pre/post-processing spliced into a model (``Model.load(..., preprocess=, postprocess=)``),
ONNX or OpenVINO IR.

Oracle: onnxruntime running the original model, with the same processing done
in numpy before and after. Natively through the OpenVINO-backed fake host;
``test_fused_model_in_a_component`` runs the same fused models in a real
component. The IR model is the ONNX classifier converted by OpenVINO itself.
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


def classifier_ir(folder: Path) -> Path:
    """The classifier as OpenVINO IR (.xml + .bin), converted by OpenVINO."""
    import openvino as ov

    classifier(folder / "classifier.onnx")
    xml = folder / "classifier.xml"
    ov.save_model(ov.convert_model(folder / "classifier.onnx"), xml, compress_to_fp16=False)
    return xml


def model_file(folder: Path, kind: str) -> Path:
    """The classifier saved as ``kind`` ("onnx" or "ir") in ``folder``."""
    if kind == "ir":
        return classifier_ir(folder)
    classifier(folder / "classifier.onnx")
    return folder / "classifier.onnx"


def numpy_pipeline(model: Path, image: np.ndarray) -> dict[str, np.ndarray]:
    x = ((image.astype(np.float32) / 255 - MEAN) / STD).transpose(2, 0, 1)[None]
    probs = run_onnxruntime(model.read_bytes(), {"x": x.astype(np.float32)})["probs"]
    return {"best": probs.argmax(1)[:, None].astype(np.int32), "top": probs.max(1, keepdims=True)}


IMAGE = np.random.default_rng(1).integers(0, 256, (4, 4, 3)).astype(np.uint8)


@pytest.mark.parametrize("kind", ["onnx", "ir"])
def test_fused_model_equals_numpy_processing_around_onnxruntime(
    ov_host: Any, tmp_path: Path, kind: str
) -> None:
    path = model_file(tmp_path, kind)
    with Model.load(path, preprocess=preprocess, postprocess=postprocess) as model:
        assert [str(s) for s in model.inputs] == ["image: u8[4, 4, 3]"]
        # The model declares its batch as a symbol: the outputs keep it dynamic.
        assert [str(s) for s in model.outputs] == ["best: i32[?, 1]", "top: f32[?, 1]"]
        out = model.run({"image": Tensor(IMAGE.tobytes(), shape=IMAGE.shape, dtype="u8")})
    want = numpy_pipeline(tmp_path / "classifier.onnx", IMAGE)
    assert out["best"].tolist() == want["best"].tolist()
    np.testing.assert_allclose(out["top"].tolist(), want["top"], rtol=1e-5)
    # One graph: the processing is part of the model, not graphs of its own
    # (a first "onnx" attempt is refused by the host, as wasmtime's is).
    assert [c[1] for c in ov_host.calls if c[0] == "load"][-1:] == ["openvino"]
    assert sum(1 for c in ov_host.calls if c[0] == "load" and c[1] == "openvino") == 1


@pytest.mark.parametrize("kind", ["onnx", "ir"])
def test_only_pre_or_only_post(ov_host: Any, tmp_path: Path, kind: str) -> None:
    path = model_file(tmp_path, kind)
    feed = Tensor(IMAGE.tobytes(), shape=IMAGE.shape, dtype="u8")
    with Model.load(path, preprocess=preprocess) as pre_only:
        assert [s.name for s in pre_only.outputs] == ["probs"]
        probs = np.array(pre_only.run({"image": feed})["probs"].tolist(), np.float32)
    # The preprocessing done in numpy, fed to the model without any fusion: the
    # fused pre step must give the same probabilities (a pre step that dropped
    # the division by STD, say, would change them, if not their argmax).
    x = ((IMAGE.astype(np.float32) / 255 - MEAN) / STD).transpose(2, 0, 1)[None]
    x_tensor = Tensor(x.astype(np.float32).tobytes(), shape=x.shape, dtype="f32")
    with Model.load(path) as plain:
        want = np.array(plain.run({"x": x_tensor})["probs"].tolist(), np.float32)
    np.testing.assert_allclose(probs, want, rtol=1e-5, atol=1e-6)
    with Model.load(path, postprocess=postprocess) as post_only:
        assert [s.name for s in post_only.inputs] == ["x"]
        best = post_only.run({"x": x_tensor})["best"]
    assert best.tolist() == [[int(want.argmax())]]


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


def test_ir_fusion_equals_the_parts_run_one_after_another(ov_host: Any, tmp_path: Path) -> None:
    """The fused IR gives exactly what the processing (built as its own models)
    and the IR model give when run one after another."""
    from wasinn import GraphBuilder

    path = classifier_ir(tmp_path)
    images = np.random.default_rng(5).integers(0, 256, (6, 4, 4, 3)).astype(np.uint8)
    with Model.load(path, preprocess=preprocess, postprocess=postprocess) as fused:
        together = [fused.run_numpy({"image": image}) for image in images]
    pre_builder = GraphBuilder()
    pre = pre_builder.build(preprocess(pre_builder))
    post_builder = GraphBuilder()
    probs = post_builder.input("probs", shape=[1, 5], dtype="f32")
    post = post_builder.build(postprocess(post_builder, {"probs": probs}))
    with Model.load(path) as model:
        for image, joined in zip(images, together, strict=True):
            x = pre.run_numpy({"image": image})["x"]
            apart = post.run_numpy({"probs": model.run_numpy({"x": x})["probs"]})
            assert joined["best"].tolist() == apart["best"].tolist()
            np.testing.assert_array_equal(joined["top"], apart["top"])


def test_ir_processing_that_passes_values_straight_through(ov_host: Any, tmp_path: Path) -> None:
    """A new input fed to the model as it is, and a model output returned
    as it is under a new name (besides a computed one): the IR writer gives
    the passed-through output a tensor of its own to name."""
    path = classifier_ir(tmp_path)
    x = np.random.default_rng(2).normal(size=(1, 3, 4, 4)).astype(np.float32)

    def pre(b: Any) -> dict[str, Any]:
        return {"x": b.input("pixels", shape=[1, 3, 4, 4], dtype="f32")}

    def post(b: Any, outs: dict[str, Any]) -> dict[str, Any]:
        return {"same": outs["probs"], "twice": outs["probs"] * 2.0}

    with Model.load(path, preprocess=pre, postprocess=post) as fused:
        assert [str(s) for s in fused.inputs] == ["pixels: f32[1, 3, 4, 4]"]
        assert [s.name for s in fused.outputs] == ["same", "twice"]
        out = fused.run_numpy({"pixels": x})
    with Model.load(path) as model:
        probs = model.run_numpy({"x": x})["probs"]
    np.testing.assert_array_equal(out["same"], probs)
    np.testing.assert_array_equal(out["twice"], probs * 2)


def test_processing_that_has_no_ir_form_is_refused_before_the_host(
    ov_host: Any, tmp_path: Path
) -> None:
    """An L2 pool over a dynamic number of channels has no IR form here (the
    writer sums windows with a per-channel convolution): FusionError names it."""
    path = classifier_ir(tmp_path)

    def pooled(b: Any) -> dict[str, Any]:
        x = b.input("planes", shape=[1, None, 4, 4], dtype="f32")
        return {"x": b.l2_pool2d(x, window_dimensions=[1, 1])}

    with pytest.raises(FusionError, match="LpPool with a dynamic channel count"):
        Model.load(path, preprocess=pooled)
    assert not any(c[0] == "load" for c in ov_host.calls), "nothing reaches the host"


def test_a_format_that_is_not_spliced(ov_host: Any, tmp_path: Path) -> None:
    """ONNX bytes loaded as encoding='openvino' are neither read as ONNX nor as IR."""
    classifier(tmp_path / "classifier.onnx")
    data = (tmp_path / "classifier.onnx").read_bytes()
    with pytest.raises(FusionError, match="spliced into ONNX and OpenVINO IR models, and"):
        Model.load(data, encoding="openvino", preprocess=preprocess)


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


@pytest.mark.parametrize("kind", ["onnx", "ir"])
@pytest.mark.parametrize("name", MISUSE)
def test_preprocess_misuse(ov_host: Any, tmp_path: Path, name: str, kind: str) -> None:
    path = model_file(tmp_path, kind)
    pre, message = MISUSE[name]
    with pytest.raises(ValidationError) as info:
        Model.load(path, preprocess=pre)
    assert message.replace("classifier.onnx", path.name) in str(info.value)
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
    """The same fused models, ONNX and IR, under wasmtime + OpenVINO equal
    numpy around onnxruntime."""
    import json

    from builder_check import APP, decode
    from conftest import run_component

    classifier_ir(tmp_path)  # writes classifier.onnx too
    images = [
        np.random.default_rng(i).integers(0, 256, (4, 4, 3)).astype(np.uint8) for i in range(3)
    ]
    script = [
        {
            "fused": name,
            "inputs": {"image": {"dtype": "u8", "shape": [4, 4, 3], "hex": im.tobytes().hex()}},
        }
        for name in ("classifier.onnx", "classifier.xml")
        for im in images
    ]
    (tmp_path / "fused.json").write_text(json.dumps(script))
    done = run_component(APP, "fused.json", cwd=tmp_path, timeout=600)
    done.assert_no_trap()
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == len(script), done.stderr[-2000:]
    for line, image in zip(lines, images + images, strict=True):
        assert "ok" in line, line
        want = numpy_pipeline(tmp_path / "classifier.onnx", image)
        assert decode(line["ok"]["best"]).tolist() == want["best"].tolist()
        np.testing.assert_allclose(decode(line["ok"]["top"]), want["top"], rtol=1e-5)
