"""The speak app's rewrite of Kokoro for OpenVINO, piece by piece, on small graphs
(apps/speak/dequantize.py, kokoro_graph.py): each rewritten graph against the
original on onnxruntime, or against numpy. The whole rewrite on the real model
is judged by its audio (tests/test_speak_audio.py) and its speed (the bench).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from conftest import ROOT
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(ROOT / "apps" / "speak"))
from dequantize import dequantize  # noqa: E402  (apps/speak, put on the path above)
from kokoro_graph import guard_atan2, polynomial_sine  # noqa: E402

RNG = np.random.default_rng(7)


def run(model: onnx.ModelProto, **feed: np.ndarray) -> list[Any]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feed)


def _model(nodes: list[onnx.NodeProto], inputs: dict[str, list[int]], outputs: list[str],
           constants: dict[str, np.ndarray], input_type: int = TensorProto.FLOAT,
           ) -> onnx.ModelProto:  # fmt: skip
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, input_type, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(v, n) for n, v in constants.items()],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def _quantized(model: onnx.ModelProto, folder: Path, op_types: list[str]) -> onnx.ModelProto:
    """``model`` through onnxruntime's own dynamic quantizer (int8 weights), as
    Kokoro's export was made."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    onnx.save(model, folder / "float.onnx")
    quantize_dynamic(folder / "float.onnx", folder / "int8.onnx", weight_type=QuantType.QInt8,
                     op_types_to_quantize=op_types)  # fmt: skip
    return onnx.load(folder / "int8.onnx")


def test_dequantize_undoes_onnxruntimes_dynamic_quantization(tmp_path: Path) -> None:
    """A MatMul and a Conv with bias, quantized by onnxruntime's own dynamic
    quantizer (as Kokoro's export was): the rewrite has no integer op left and
    computes the float model's values, closer to them than the int8 model."""
    weights = {
        "w": RNG.normal(size=(16, 8)).astype(np.float32),
        "k": RNG.normal(size=(4, 1, 3)).astype(np.float32),
        "b": RNG.normal(size=(4,)).astype(np.float32),
    }
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul"),
        helper.make_node("Conv", ["s", "k", "b"], ["z"], name="conv", pads=[1, 1]),
    ]
    float_model = _model(nodes, {"x": [2, 16], "s": [1, 1, 32]}, ["y", "z"], weights)
    int8 = _quantized(float_model, tmp_path, ["MatMul", "Conv"])
    assert {"MatMulInteger", "ConvInteger"} <= {n.op_type for n in int8.graph.node}
    rewritten = dequantize(int8)
    kinds = {n.op_type for n in rewritten.graph.node}
    assert kinds.isdisjoint({"MatMulInteger", "ConvInteger", "DynamicQuantizeLinear"}), kinds
    feed = {"x": RNG.normal(size=(2, 16)).astype(np.float32),
            "s": RNG.normal(size=(1, 1, 32)).astype(np.float32)}  # fmt: skip
    want, got, quantized = run(float_model, **feed), run(rewritten, **feed), run(int8, **feed)
    for w, g, q in zip(want, got, quantized, strict=True):
        # Only the weights' 8-bit rounding is left: a few hundredths of a unit.
        assert np.abs(g - w).max() < 0.1
        assert np.abs(g - w).mean() < np.abs(q - w).mean()


def test_a_graph_that_is_not_the_quantizers_pattern_is_refused() -> None:
    """A MatMulInteger fed by anything but a DynamicQuantizeLinear: ValueError, not a guess."""
    constants = {"a": np.ones((2, 2), np.uint8), "b": np.ones((2, 2), np.uint8)}
    node = helper.make_node("MatMulInteger", ["a", "b"], ["y"], name="mm")
    with pytest.raises(ValueError, match="expected a DynamicQuantizeLinear output"):
        dequantize(_model([node], {}, ["y"], constants))


def test_nodes_that_share_a_name_are_refused() -> None:
    """The rewrite finds nodes by name: two with one name (even beside an
    unnamed one, which gets a fresh name) stop it."""
    nodes = [helper.make_node("Neg", ["x"], ["a"], name="n"),
             helper.make_node("Neg", ["a"], ["b"], name="n"),
             helper.make_node("Neg", ["b"], ["y"])]  # fmt: skip
    with pytest.raises(ValueError, match="two nodes share a name"):
        dequantize(_model(nodes, {"x": [1]}, ["y"], {}))


def test_guarded_atan2_is_finite_where_both_parts_are_zero() -> None:
    """Atan(imag / real) with a 0/0 bin: NaN before the guard; after it the
    guarded division gives atan 0 there and the unchanged value elsewhere,
    and y/0 becomes y/1e-37, whose Atan is still +-pi/2."""
    nodes = [helper.make_node("Div", ["imag", "real"], ["q"], name="div"),
             helper.make_node("Atan", ["q"], ["phase"], name="atan")]  # fmt: skip
    model = _model(nodes, {"imag": [5], "real": [5]}, ["phase"], {})
    imag = np.array([0.0, 1.0, -2.0, 0.5, 0.0], np.float32)
    real = np.array([0.0, 0.0, 0.0, 2.0, -3.0], np.float32)
    assert np.isnan(run(model, imag=imag, real=real)[0][0])
    assert guard_atan2(model) == 1
    (phase,) = run(model, imag=imag, real=real)
    want = np.array([0.0, np.pi / 2, -np.pi / 2, np.arctan(0.25), 0.0], np.float32)
    np.testing.assert_allclose(phase, want, atol=1e-6)


def test_polynomial_sine_squares_like_sin_and_leaves_other_sines() -> None:
    """Sin -> Pow 2 (a Snake) is replaced and agrees with numpy's sin^2 to
    4e-7 over |y| <= 200; a Sin used otherwise, or raised to an odd power
    (where its sign matters), is kept."""
    nodes = [
        helper.make_node("Sin", ["y"], ["s"], name="snake_sin"),
        helper.make_node("Pow", ["s", "two"], ["squared"], name="square"),
        helper.make_node("Sin", ["y"], ["plain"], name="other_sin"),
        helper.make_node("Sin", ["y"], ["c"], name="cubed_sin"),
        helper.make_node("Pow", ["c", "three"], ["cubed"], name="cube"),
    ]
    constants = {"two": np.array(2, np.float32), "three": np.array(3, np.float32)}
    model = _model(nodes, {"y": [None]}, ["squared", "plain", "cubed"], constants)
    assert polynomial_sine(model) == 1
    kept = [n.name for n in model.graph.node if n.op_type == "Sin"]
    assert kept == ["other_sin", "cubed_sin"]
    y = np.linspace(-200, 200, 400_001, dtype=np.float32)
    squared, plain, cubed = run(model, y=y)
    exact = np.sin(y.astype(np.float64))
    assert np.abs(squared - exact**2).max() < 4e-7
    np.testing.assert_allclose(plain, np.sin(y), atol=1e-6)
    np.testing.assert_allclose(cubed, np.sin(y) ** 3, atol=1e-6)


def test_dequantize_turns_quantized_lstm_and_embedding_into_float(tmp_path: Path) -> None:
    """Kokoro's other two quantized patterns: an embedding (Gather of an int8
    table, then DequantizeLinear) and com.microsoft.DynamicQuantizeLSTM, made
    by onnxruntime's quantizer; the rewrite is plain Gather and LSTM, closer
    to the float model than the int8 one."""
    hidden, width = 8, 6
    constants = {
        "table": RNG.normal(size=(20, width)).astype(np.float32),
        "W": RNG.normal(size=(2, 4 * hidden, width)).astype(np.float32) * 0.3,
        "R": RNG.normal(size=(2, 4 * hidden, hidden)).astype(np.float32) * 0.3,
    }
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["embedded"], name="embed"),
        helper.make_node("LSTM", ["embedded", "W", "R"], ["y"], name="lstm",
                         hidden_size=hidden, direction="bidirectional"),
    ]  # fmt: skip
    float_model = _model(nodes, {"ids": [5, 1]}, ["y"], constants, TensorProto.INT64)
    int8 = _quantized(float_model, tmp_path, ["LSTM", "Gather"])
    assert "DynamicQuantizeLSTM" in {n.op_type for n in int8.graph.node}
    rewritten = dequantize(int8)
    kinds = {n.op_type for n in rewritten.graph.node}
    assert {"LSTM", "Gather"} <= kinds and "DynamicQuantizeLSTM" not in kinds, kinds
    ids = RNG.integers(0, 20, size=(5, 1)).astype(np.int64)
    (want,), (got,), (quantized,) = (run(m, ids=ids) for m in (float_model, rewritten, int8))
    assert np.abs(got - want).max() < 0.05
    assert np.abs(got - want).mean() < np.abs(quantized - want).mean()
