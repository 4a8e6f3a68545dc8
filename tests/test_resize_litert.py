"""``resample2d``'s modes against TensorFlow's resize rules, as LiteRT runs them.

TFLite's ``RESIZE_BILINEAR`` and ``RESIZE_NEAREST_NEIGHBOR`` have two flags,
``align_corners`` (TF1) and ``half_pixel_centers`` (TF2), which converted
TensorFlow and MediaPipe models carry. For each flag a one-operator TFLite
model is written here with LiteRT's own flatbuffer schema (``ai_edge_litert``
ships it) and run by LiteRT's interpreter; the builder's ``resample2d`` with
the matching ``coordinate_mode`` / ``nearest_mode`` runs natively on
OpenVINO (the OpenVINO-backed host) on the same input:

=================================  =========================================
TFLite                              resample2d
=================================  =========================================
bilinear, no flag                   linear, ``asymmetric``
bilinear, ``align_corners``         linear, ``align_corners``
bilinear, ``half_pixel_centers``    linear, ``half_pixel`` (the default)
nearest, no flag                    nearest, ``asymmetric`` + ``floor``
nearest, ``align_corners``          nearest, ``align_corners`` + ``round_prefer_ceil``
nearest, ``half_pixel_centers``     nearest, ``half_pixel`` + ``round_prefer_ceil``
=================================  =========================================

(TF's nearest rounds with ``floor(x + 0.5)``: halves up, ``round_prefer_ceil``.)
"""

from __future__ import annotations

from typing import Any

import flatbuffers
import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as tfl
from ai_edge_litert.interpreter import Interpreter

from wasinn import GraphBuilder

X = np.random.default_rng(11).normal(size=(1, 6, 8, 2)).astype(np.float32)  # NHWC, as TFLite
# Up and down by whole and other factors; halving puts nearest's samples on ties.
SIZES = [(9, 13), (3, 4), (12, 16), (4, 5), (6, 8)]
FLAGS = {"none": (False, False), "align_corners": (True, False), "half_pixel": (False, True)}
MATCH: dict[tuple[str, str], dict[str, Any]] = {
    ("bilinear", "none"): {"mode": "linear", "coordinate_mode": "asymmetric"},
    ("bilinear", "align_corners"): {"mode": "linear", "coordinate_mode": "align_corners"},
    ("bilinear", "half_pixel"): {"mode": "linear", "coordinate_mode": "half_pixel"},
    ("nearest", "none"): {"coordinate_mode": "asymmetric", "nearest_mode": "floor"},
    ("nearest", "align_corners"): {
        "coordinate_mode": "align_corners", "nearest_mode": "round_prefer_ceil",
    },
    ("nearest", "half_pixel"): {
        "coordinate_mode": "half_pixel", "nearest_mode": "round_prefer_ceil",
    },
}  # fmt: skip


def tflite_resize(kind: str, flags: tuple[bool, bool], size: tuple[int, int]) -> bytes:
    """A TFLite model: f32 [1, 6, 8, 2] -> one resize operator -> [1, *size, 2]."""
    corners, half = flags
    if kind == "bilinear":
        code, options_type = (
            tfl.BuiltinOperator.RESIZE_BILINEAR,
            tfl.BuiltinOptions.ResizeBilinearOptions,
        )
        options: Any = tfl.ResizeBilinearOptionsT()
    else:
        code = tfl.BuiltinOperator.RESIZE_NEAREST_NEIGHBOR
        options_type = tfl.BuiltinOptions.ResizeNearestNeighborOptions
        options = tfl.ResizeNearestNeighborOptionsT()
    options.alignCorners, options.halfPixelCenters = corners, half

    def tensor(name: str, shape: list[int], kind: int, buffer: int) -> Any:
        t = tfl.TensorT()
        t.name, t.shape, t.type, t.buffer = name.encode(), shape, kind, buffer
        return t

    empty, sizes = tfl.BufferT(), tfl.BufferT()
    sizes.data = list(np.array(size, np.int32).tobytes())
    operator = tfl.OperatorT()
    operator.opcodeIndex, operator.inputs, operator.outputs = 0, [0, 1], [2]
    operator.builtinOptionsType, operator.builtinOptions = options_type, options
    graph = tfl.SubGraphT()
    graph.tensors = [
        tensor("x", list(X.shape), tfl.TensorType.FLOAT32, 0),
        tensor("size", [2], tfl.TensorType.INT32, 1),
        tensor("y", [1, *size, X.shape[3]], tfl.TensorType.FLOAT32, 0),
    ]
    graph.inputs, graph.outputs, graph.operators = [0], [2], [operator]
    opcode = tfl.OperatorCodeT()
    opcode.builtinCode, opcode.deprecatedBuiltinCode, opcode.version = code, code, 1
    model = tfl.ModelT()
    model.version, model.operatorCodes, model.subgraphs = 3, [opcode], [graph]
    model.buffers = [empty, sizes]
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def litert(model: bytes) -> np.ndarray:
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], X)
    interpreter.invoke()
    return np.asarray(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]))


def resample(size: tuple[int, int], options: dict[str, Any]) -> np.ndarray:
    b = GraphBuilder()
    x = b.input("x", shape=list(X.shape), dtype="f32")
    model = b.build({"y": b.resample2d(x, sizes=list(size), axes=[1, 2], **options)})
    return model.run_numpy({"x": X})["y"]


@pytest.mark.parametrize("size", SIZES, ids=str)
@pytest.mark.parametrize("case", list(MATCH), ids="-".join)
def test_resample2d_equals_tflite(
    ov_host: Any, case: tuple[str, str], size: tuple[int, int]
) -> None:
    kind, flag = case
    want = litert(tflite_resize(kind, FLAGS[flag], size))
    got = resample(size, MATCH[case])
    assert got.shape == want.shape
    if kind == "nearest":
        np.testing.assert_array_equal(got, want)  # the same elements picked
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_the_flags_matter(ov_host: Any) -> None:
    """The oracle tells the modes apart: half-pixel differs from the others."""
    size = (9, 13)
    corners = litert(tflite_resize("bilinear", FLAGS["align_corners"], size))
    half = litert(tflite_resize("bilinear", FLAGS["half_pixel"], size))
    plain = litert(tflite_resize("bilinear", FLAGS["none"], size))
    assert np.abs(corners - half).max() > 0.05 and np.abs(plain - half).max() > 0.05
