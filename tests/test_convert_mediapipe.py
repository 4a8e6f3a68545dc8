"""tools/convert.py on every TFLite model of the mediapipe 0.10.14 wheel,
against the LiteRT interpreter (its default XNNPACK kernels) on the same input.

Thirteen of the fourteen convert; the selfie segmentation models only through
wasinn's translation of MediaPipe's ``Convolution2DTransposeBias`` custom op
(``tools/tflite_custom_ops.py``), which is also checked on its own output.
``face_landmark_with_attention`` uses three custom ops that LiteRT cannot run
either ("Encountered unresolved custom op"); its refusal names them.
"""

from __future__ import annotations

import collections
import struct
import sys
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import pytest
from ai_edge_litert.interpreter import Interpreter
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import tflite_file  # noqa: E402
from convert import ConversionError, convert  # noqa: E402
from wheels import extract  # noqa: E402

WHEEL = "mediapipe==0.10.14"
MODELS = ROOT / "build" / "models" / "mediapipe-0.10.14"
CONVERTIBLE = [
    "face_detection/face_detection_full_range_sparse", "face_detection/face_detection_short_range",
    "face_landmark/face_landmark", "hand_landmark/hand_landmark_full",
    "hand_landmark/hand_landmark_lite", "holistic_landmark/hand_recrop",
    "iris_landmark/iris_landmark", "palm_detection/palm_detection_full",
    "palm_detection/palm_detection_lite", "pose_detection/pose_detection",
    "pose_landmark/pose_landmark_full", "selfie_segmentation/selfie_segmentation",
    "selfie_segmentation/selfie_segmentation_landscape",
]  # fmt: skip
SELFIES = {"selfie_segmentation": "segment", "selfie_segmentation_landscape": "conv2d_transpose"}


@pytest.fixture(scope="module")
def models() -> Path:
    """The wheel's .tflite files (downloaded from PyPI once, kept in build/models)."""
    if not (MODELS / "selfie_segmentation" / "selfie_segmentation.tflite").exists():
        extract(WHEEL, "mediapipe/modules/", MODELS)
    return MODELS


def litert(path: Path, x: np.ndarray) -> dict[str, np.ndarray]:
    interpreter = Interpreter(model_path=str(path))
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    return {d["name"]: interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()}


def openvino(xml: Path, x: np.ndarray) -> dict[str, np.ndarray]:
    compiled = ov.Core().compile_model(xml, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled({compiled.inputs[0]: x})
    return {o.get_any_name(): result[o] for o in compiled.outputs}


def random_input(path: Path) -> np.ndarray:
    interpreter = Interpreter(model_path=str(path))
    shape = interpreter.get_input_details()[0]["shape"]
    return np.random.default_rng(0).uniform(0, 1, shape).astype(np.float32)


@pytest.mark.parametrize("name", CONVERTIBLE)
def test_converts_and_agrees_with_litert(models: Path, tmp_path: Path, name: str) -> None:
    path = models / f"{name}.tflite"
    xml = convert(path, tmp_path / "model.xml")
    x = random_input(path)
    want, got = litert(path, x), openvino(xml, x)
    assert got.keys() == want.keys()
    for output, expected in want.items():
        # Float rounding only: one output of pose_landmark_full, up to 1.4e3,
        # differs by 0.46, and LiteRT's own kernels disagree with it by 0.35.
        scale = max(1.0, float(np.abs(expected).max()))
        assert np.abs(got[output] - expected).max() <= 1e-3 * scale, output


def with_output(data: bytes, tensor: str) -> bytes:
    """The model with its first output replaced by the tensor named ``tensor``
    (a 4-byte edit of the subgraph's outputs vector)."""
    graph = tflite_file._table_vector(data, tflite_file._u32(data, 0), 2)[0]
    tensors = tflite_file._table_vector(data, graph, 0)
    index = next(i for i, t in enumerate(tensors) if tflite_file._string(data, t, 3) == tensor)
    first, _ = tflite_file._vector(data, graph, 2)
    return data[:first] + struct.pack("<i", index) + data[first + 4 :]


@pytest.mark.parametrize("name", list(SELFIES))
def test_the_transposed_convolution_equals_litert(models: Path, tmp_path: Path, name: str) -> None:
    """The custom op's own output (the logits before the sigmoid, up to ~10^3):
    the models' masks are near 0 for random input, too weak a check alone."""
    path = tmp_path / "logits.tflite"
    path.write_bytes(with_output((models / "selfie_segmentation" / f"{name}.tflite").read_bytes(),
                                 SELFIES[name]))  # fmt: skip
    xml = convert(path, tmp_path / "logits.xml")
    for low in (0.0, -1.0):
        x = np.random.default_rng(1).uniform(low, 1, random_input(path).shape).astype(np.float32)
        (want,) = litert(path, x).values()
        (got,) = openvino(xml, x).values()
        assert got.shape == want.shape and np.abs(want).max() > 100
        assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


def test_a_translation_gets_each_occurrences_options(models: Path, tmp_path: Path) -> None:
    from tflite_custom_ops import convolution_2d_transpose_bias

    seen: list[bytes] = []

    def recording(context: Any, options: bytes) -> list[Any]:
        seen.append(options)
        return convolution_2d_transpose_bias(context, options)

    path = models / "selfie_segmentation" / "selfie_segmentation.tflite"
    convert(path, tmp_path / "m.xml", custom_ops={"Convolution2DTransposeBias": recording})
    # TfLiteTransposeConvParams: padding SAME (1), stride 2 x 2.
    assert seen == [struct.pack("<3i", 1, 2, 2)]
    assert [op.name for op in tflite_file.custom_ops(path.read_bytes())] == [
        "Convolution2DTransposeBias"
    ]


def test_untranslated_custom_ops_are_named_with_what_to_do(models: Path, tmp_path: Path) -> None:
    path = models / "face_landmark" / "face_landmark_with_attention.tflite"
    with pytest.raises(ConversionError) as caught:
        convert(path, tmp_path / "m.xml")
    message = str(caught.value)
    assert "No translator found for Landmarks2TransformMatrix node" in message
    assert "custom operators without a translation here: Landmarks2TransformMatrix, " \
           "TransformLandmarks, TransformTensorBilinear" in message  # fmt: skip
    assert "custom_ops={name: translate}" in message
    # A translation's own error comes back as itself, not wrapped in OpenVINO's.

    def broken(context: Any, options: bytes) -> list[Any]:
        raise ValueError("options are not what this translation reads")

    selfie = models / "selfie_segmentation" / "selfie_segmentation.tflite"
    with pytest.raises(ConversionError) as caught:
        convert(selfie, tmp_path / "b.xml", custom_ops={"Convolution2DTransposeBias": broken})
    assert str(caught.value) == (
        "selfie_segmentation.tflite: options are not what this translation reads"
    )
    with pytest.raises(ConversionError, match="No translator found for Convolution2DTransposeBias"):
        convert(selfie, tmp_path / "s.xml", custom_ops={"Convolution2DTransposeBias": None})
    with pytest.raises(ConversionError, match="custom_ops is for TFLite models"):
        convert(tmp_path, tmp_path / "d.xml", custom_ops={"Convolution2DTransposeBias": broken})


def test_the_flatbuffer_reader_survives_corrupt_bytes(models: Path) -> None:
    """Bytes changed anywhere (offsets, lengths, indices) give a TFLiteError or
    a reading, never another exception: the reader only follows offsets."""
    data = (models / "selfie_segmentation" / "selfie_segmentation.tflite").read_bytes()
    rng = np.random.default_rng(5)
    outcomes = collections.Counter()
    for _ in range(300):
        mutated = bytearray(data)
        for at in rng.integers(0, 4096, size=4):  # the tables and offsets come first
            mutated[at] = int(rng.integers(0, 256))
        try:
            tflite_file.tensor_names(bytes(mutated))
            tflite_file.custom_ops(bytes(mutated))
            outcomes["read"] += 1
        except tflite_file.TFLiteError:
            outcomes["refused"] += 1
    # Another exception would have failed the test already; both outcomes occur.
    assert outcomes["read"] > 0 and outcomes["refused"] > 0, outcomes
