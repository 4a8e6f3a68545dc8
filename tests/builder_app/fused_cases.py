"""Pre/post-processing for the fusion tests (``tests/test_fuse.py``,
``tests/test_mediapipe_pipeline.py``), run in the component by ``app.py`` and
natively by the tests: stdlib only."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from wasinn import GraphBuilder, Operand

Preprocess = Callable[[Any], dict[str, Operand]]
Postprocess = Callable[[Any, dict[str, Operand]], dict[str, Operand]]

MEAN = [0.5, 0.4, 0.3]
STD = [0.2, 0.25, 0.3]


def preprocess(b: GraphBuilder) -> dict[str, Operand]:
    """u8 HWC image [4, 4, 3] -> f32 [1, 3, 4, 4], (x/255 - mean) / std."""
    image = b.input("image", shape=[4, 4, 3], dtype="u8")
    scaled = b.cast(image, "f32") / 255.0
    normal = (scaled - b.constant(MEAN)) / b.constant(STD)
    chw = b.transpose(normal, permutation=[2, 0, 1])
    return {"x": b.reshape(chw, [1, 3, 4, 4])}


def postprocess(b: GraphBuilder, outputs: dict[str, Operand]) -> dict[str, Operand]:
    """The best class and its probability, per row of the model's 'probs'."""
    probs = outputs["probs"]
    return {
        "best": b.arg_max(probs, 1, keep_dimensions=True),
        "top": b.reduce_max(probs, axes=[1], keep_dimensions=True),
    }


def processing(spec: dict[str, Any] | None) -> tuple[Preprocess, Postprocess]:
    """What a ``{"fused": PATH, "processing": SPEC}`` entry of app.py's script
    splices in: ``None``, the classifier's above; ``{"selfie": [H, W]}``,
    MediaPipe's selfie segmentation's for an H x W image."""
    if spec is None:
        return preprocess, postprocess
    height, width = spec["selfie"]
    return selfie(height, width)


SIDE = 256  # selfie_segmentation.tflite's input: [1, 256, 256, 3] (NHWC, RGB in [0, 1])
SELFIE_OUTPUT = "activation_10"  # its output, [1, 256, 256, 1], already a sigmoid


def selfie(
    height: int,
    width: int,
    *,
    sampling: str = "asymmetric",
    rounded: bool = True,
    zero_border: bool = True,
) -> tuple[Preprocess, Postprocess]:
    """MediaPipe 0.10.14's processing around ``selfie_segmentation.tflite``
    (converted to IR) for an RGB u8 image of ``height`` x ``width``: input
    ``image`` u8[H, W, 3], output ``mask`` f32[H, W], as the
    ``segmentation_mask`` of ``mediapipe.solutions.selfie_segmentation``
    (``tests/mediapipe_oracle.py`` says what MediaPipe does). The keywords
    make it wrong on purpose, to show that the test would notice."""

    def pre(b: GraphBuilder) -> dict[str, Operand]:
        image = b.input("image", shape=[height, width, 3], dtype="u8")
        x = b.reshape(image, [1, height, width, 3])
        # cv::warpPerspective samples input x * W / 256 (ONNX "asymmetric").
        # Below 256 pixels the last samples fall past the edge and blend with
        # its zero border, where resample2d would clamp: append zero rows
        # (columns), p = n / gcd(n, 256) of them, and resample to
        # 256 + 256 / gcd(n, 256), which keeps the ratio n / 256 exactly; then
        # keep the first 256.
        pads, sizes = [0, 0], [SIDE, SIDE]
        for i, n in enumerate((height, width)):
            if zero_border and n < SIDE:
                g = math.gcd(n, SIDE)
                pads[i], sizes[i] = n // g, SIDE + SIDE // g
        if any(pads):
            x = b.pad(x, [0, 0, 0, 0], [0, pads[0], pads[1], 0])
        if not rounded:
            x = b.cast(x, "f32")
        # On u8 the builder interpolates in f32 and rounds halves up, as
        # OpenCV's fixed-point warp rounds to u8.
        x = b.resample2d(x, mode="linear", sizes=sizes, axes=[1, 2], coordinate_mode=sampling)
        if sizes != [SIDE, SIDE]:
            x = x[:, :SIDE, :SIDE, :]
        # ImageToTensorCalculator's output_tensor_float_range [0, 1].
        return {"input_1": b.cast(x, "f32") * (1 / 255)}

    def post(b: GraphBuilder, outputs: dict[str, Operand]) -> dict[str, Operand]:
        # TensorsToSegmentationCalculator, activation NONE: cv::resize to the
        # image's size, INTER_LINEAR (half-pixel centres, resample2d's default).
        mask = b.resample2d(
            outputs[SELFIE_OUTPUT], mode="linear", sizes=[height, width], axes=[1, 2]
        )
        return {"mask": b.reshape(mask, [height, width])}

    return pre, post
