"""Processing written as OpenVINO IR (``wasinn._formats.ir_write``) computes
what the same graph computes as ONNX on OpenVINO.

Every graph-builder case (``builder_app/builder_cases.py``) is lowered once,
written both ways, and run natively on OpenVINO's CPU plugin on the case's
random inputs: the IR must give the ONNX model's outputs (names, shapes,
dtypes) and values, equal within builder_check's tolerance (exact for
integers). The few operators the writer cannot put into IR must be refused
with FusionError naming them, and only those.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import openvino as ov
import pytest
from builder_check import CASES, assert_close, inputs_of, onnx_of, run_openvino

from wasinn import FusionError, GraphBuilder, ValidationError
from wasinn._formats import ir_write
from wasinn._graph.core import lower

#: Cases whose graphs use an operator the writer refuses, and that operator.
REFUSED: dict[str, str] = {
    "lstm_forward": "LSTM", "lstm_layouts": "LSTM", "lstm_f16": "LSTM", "gru_reset": "GRU",
}  # fmt: skip
#: Cases holding 4-bit values, which fusion refuses before any IR is written
#: (they need ONNX opset 21; the writer has no 4-bit constants).
FOUR_BIT = ("four_bit",)


def ir_of(case: str) -> tuple[bytes, bytes, list[str]]:
    """The case's graph as IR, and its output names in order."""
    builder = GraphBuilder()
    lowered = lower(builder, CASES[case](builder))
    xml, weights = ir_write.graph_ir(
        [node for _, node in lowered.steps],
        [(v.name, v.shape, v.dtype) for v in lowered.inputs],
        [(final.inputs[0], final.outputs[0]) for final in lowered.finals],
        lowered.initializers,
        lowered.types,
    )
    return xml, weights, [v.name for v in lowered.outputs]


def run_ir(
    xml: bytes, weights: bytes, names: list[str], inputs: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    core = ov.Core()
    model = core.read_model(xml, ov.Tensor(np.frombuffer(weights or b"\0", np.uint8)))
    compiled = core.compile_model(model, "CPU")
    result = compiled(inputs)
    got = {}
    for name, port in zip(names, compiled.outputs, strict=True):
        assert name in port.get_names(), f"output {name!r} is called {port.get_names()}"
        value = np.asarray(result[port])
        if port.get_element_type() == ov.Type.bf16:
            value = value.view(np.uint16).view(ml_dtypes.bfloat16)
        got[name] = value
    return got


@pytest.mark.parametrize("case", sorted(CASES))
def test_ir_equals_onnx_on_openvino(case: str) -> None:
    if case in FOUR_BIT:
        builder = GraphBuilder()
        outputs = CASES[case](builder)
        with pytest.raises(ValidationError, match="processing fused into a model cannot hold"):
            lower(builder, outputs, feeds={})
        return
    refused = next((op for prefix, op in REFUSED.items() if case.startswith(prefix)), None)
    if refused is not None:
        with pytest.raises(FusionError, match=rf"ONNX {refused}\b"):
            ir_of(case)
        return
    xml, weights, names = ir_of(case)
    inputs = inputs_of(case)
    data, _ = onnx_of(case)
    assert_close(
        run_ir(xml, weights, names, inputs), run_openvino(data, inputs), f"{case}: IR vs ONNX"
    )
