"""MediaPipe's own selfie segmentation pipeline, the oracle of test_mediapipe_pipeline.py.

mediapipe 0.10.14 needs numpy<2 and protobuf<5, which clash with .venv, so it
runs in a venv of its own, ``build/venv-mediapipe``, made on first use from
PyPI with the pinned list ``tests/mediapipe_oracle_requirements.txt``
(``--no-deps``; the list says what is left out and why) and kept until that
list changes. This module is imported by the tests (in .venv) and also run as
a script with the venv's Python, where it imports mediapipe::

    build/venv-mediapipe/bin/python tests/mediapipe_oracle.py IMAGES.npz MASKS.npz

reads RGB u8 [H, W, 3] images from ``IMAGES.npz`` and writes, under the same
names, ``mediapipe.solutions.selfie_segmentation.SelfieSegmentation(
model_selection=0).process(image).segmentation_mask`` (f32 [H, W]).

What that pipeline does (``mediapipe/modules/selfie_segmentation/
selfie_segmentation_cpu.binarypb`` in the wheel, and the calculators' source
at v0.10.14; the OpenCV is 3.4.20, linked into mediapipe's extension module):

1. ``ImageToTensorCalculator`` (256 x 256, ``keep_aspect_ratio: false``,
   ``output_tensor_float_range {min: 0 max: 1}``, ``border_mode: BORDER_ZERO``),
   on the CPU its OpenCV converter: the whole image as the region,
   ``cv::warpPerspective`` onto 256 x 256 with ``INTER_LINEAR`` and a zero
   border. That maps output pixel ``x`` to input ``x * W / 256`` (no half-pixel
   offset: ONNX's ``asymmetric``), interpolates in fixed point (positions in
   1/32 pixel) and rounds to u8; then ``convertTo`` scales by 1/255. The aspect
   ratio is not kept: the image is stretched to the square.
2. ``InferenceCalculator`` with the XNNPACK delegate: the TFLite model, whose
   output [1, 256, 256, 1] is already a sigmoid.
3. ``TensorsToSegmentationCalculator`` (``activation: NONE``): the tensor as
   it is, resized to the image's size by ``cv::resize`` with its default
   ``INTER_LINEAR`` (half-pixel centres, edges clamped), in f32.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "tests" / "mediapipe_oracle_requirements.txt"


def ensure_venv() -> Path:
    """The mediapipe venv's Python (made on first use; ``oracle_venv``, which
    raises ``oracle_venv.Unavailable`` when it cannot be made)."""
    import oracle_venv  # not in the script's own run, in the venv: it is not needed there

    return oracle_venv.ensure(
        "mediapipe", REQUIREMENTS, "import mediapipe.python.solutions.selfie_segmentation"
    )


def masks(images: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """MediaPipe's segmentation mask of each RGB u8 [H, W, 3] image, by name."""
    python = ensure_venv()
    with tempfile.TemporaryDirectory() as tmp:
        given, written = Path(tmp) / "images.npz", Path(tmp) / "masks.npz"
        np.savez(given, **images)
        import oracle_venv

        oracle_venv.run(python, __file__, str(given), str(written))
        with np.load(written) as result:
            return {name: result[name] for name in result.files}


def main(argv: list[str]) -> int:
    """Run in the mediapipe venv: IMAGES.npz -> MASKS.npz."""
    import mediapipe as mp  # the venv's, not .venv's

    selfie = mp.solutions.selfie_segmentation
    out = {}
    with np.load(argv[0]) as images:
        for name in images.files:
            image = np.ascontiguousarray(images[name])
            assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
            # A new graph for each image: nothing carries over between them.
            with selfie.SelfieSegmentation(model_selection=0) as graph:
                mask = graph.process(image).segmentation_mask
            out[name] = np.asarray(mask, np.float32)
    np.savez(argv[1], **out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
