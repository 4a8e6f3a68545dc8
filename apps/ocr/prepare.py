"""Put PP-OCRv4 (detection, direction classifier, recognition) in BUILD/models/ocr (once).

Run by build.sh before building this app: `python prepare.py BUILD/models`,
with wasinn's tools/ on PYTHONPATH (for wheels.py). Everything comes from the
rapidocr-onnxruntime 1.4.4 wheel on PyPI and is not committed:

- ``ocr/rapidocr_onnxruntime/``: the wheel's whole package, models included. The
  tests and the benchmark import rapidocr's own pipeline from it as the native
  reference (installing the wheel would pull in opencv-python, which clashes
  with the pinned opencv-python-headless).
- ``ocr/det.onnx``, ``ocr/cls.onnx``, ``ocr/rec.onnx``: the three models upgraded
  from opsets 11/12 to 18 with onnx's version converter, because wasinn splices
  pre- and post-processing (written for opset 18) only into models whose
  operators mean the same. The recognition model keeps its ``metadata_props``
  (the ``character`` list the app decodes with). Each copy is written only after
  its outputs on OpenVINO f32 equal the original's for a fixed random input
  (max difference 0 for all three).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import onnx  # build time only, from .venv
import openvino as ov
from onnx import version_converter
from wheels import extract  # wasinn's tools/, on PYTHONPATH when build.sh runs this

REQUIREMENT = "rapidocr-onnxruntime==1.4.4"
PACKAGE = "rapidocr_onnxruntime"
MODELS = {
    "det": ("ch_PP-OCRv4_det_infer.onnx", (1, 3, 96, 160)),
    "cls": ("ch_ppocr_mobile_v2.0_cls_infer.onnx", (2, 3, 48, 192)),
    "rec": ("ch_PP-OCRv4_rec_infer.onnx", (2, 3, 48, 320)),
}
# Upgrading only renames operators' versions; anything above float noise means
# the converter changed what a node computes.
TOLERANCE = 1e-5


def extract_package(ocr: Path) -> Path:
    """The wheel's package folder, extracted whole or not at all."""
    package = ocr / PACKAGE
    if package.exists():
        return package
    # A folder of many files cannot be renamed into place file by file; build it
    # under a temporary name, so an interrupted run never leaves half a package.
    partial = ocr / (PACKAGE + ".part")
    if partial.exists():
        shutil.rmtree(partial)
    extract(REQUIREMENT, PACKAGE + "/", partial)
    partial.rename(package)
    print(f"prepare: took {PACKAGE}/ from the {REQUIREMENT} wheel", file=sys.stderr)
    return package


def outputs_f32(core: ov.Core, model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    """The model's first output on OpenVINO's CPU plugin at f32 (it would pick bf16)."""
    compiled = core.compile_model(
        core.read_model(model.SerializeToString(), ov.Tensor(np.zeros(0, np.uint8))),
        "CPU",
        {"INFERENCE_PRECISION_HINT": "f32"},
    )
    return np.asarray(compiled([x])[0])


def annotate_softmax_ranks(core: ov.Core, model: onnx.ModelProto, original: Path) -> list[str]:
    """Declare the rank of every softmax's input; returns the names annotated.

    Softmax before opset 13 flattens its input to 2-D at ``axis``; the converter
    keeps that meaning with Shape + Flatten + Softmax + Reshape unless it knows
    the input's rank and sees that ``axis`` is the last one (as in all of
    PP-OCR's softmaxes), which onnx's shape inference cannot tell for the
    recogniser. OpenVINO can. The detour costs nodes, and OpenVINO's softmax over
    the flattened shape rounds differently (up to 7e-7 on rec's output).
    """
    ranks = {}
    for op in core.read_model(str(original)).get_ops():
        for out in op.outputs():
            if out.get_partial_shape().rank.is_static:
                for name in out.get_names():
                    ranks[name] = out.get_partial_shape().rank.get_length()
    softmax_inputs = [
        n.input[0] for n in model.graph.node if n.op_type in ("Softmax", "LogSoftmax", "Hardmax")
    ]
    for name in softmax_inputs:
        if name in ranks:
            model.graph.value_info.append(
                onnx.helper.make_tensor_value_info(
                    name, onnx.TensorProto.FLOAT, [None] * ranks[name]
                )
            )
    return softmax_inputs


def upgrade(core: ov.Core, original: Path, target: Path, shape: tuple[int, ...]) -> float:
    """Write ``target``, ``original`` at opset 18; returns the largest output difference."""
    source = onnx.load(str(original))
    hinted = onnx.ModelProto()
    hinted.CopyFrom(source)
    annotated = set(annotate_softmax_ranks(core, hinted, original))
    model = version_converter.convert_version(hinted, 18)
    # The hints were for the converter only: the upgraded model declares what the original did.
    kept = [v for v in model.graph.value_info if v.name not in annotated]
    del model.graph.value_info[:]
    model.graph.value_info.extend(kept)
    if not model.metadata_props:
        model.metadata_props.extend(source.metadata_props)
    onnx.checker.check_model(model)
    x = np.random.default_rng(11).uniform(-1.0, 1.0, shape).astype(np.float32)
    diff = float(np.max(np.abs(outputs_f32(core, model, x) - outputs_f32(core, source, x))))
    if diff > TOLERANCE:
        raise SystemExit(
            f"prepare: {target.name} at opset 18 differs from {original.name}"
            f" by {diff:g} on OpenVINO"
        )
    partial = target.with_name(target.name + ".part")
    onnx.save(model, str(partial))
    partial.replace(target)
    return diff


def main(models: Path) -> None:
    ocr = models / "ocr"
    ocr.mkdir(parents=True, exist_ok=True)
    package = extract_package(ocr)
    core = ov.Core()
    for name, (member, shape) in MODELS.items():
        target = ocr / f"{name}.onnx"
        if not target.exists():
            diff = upgrade(core, package / "models" / member, target, shape)
            print(
                f"prepare: wrote {target.name} (opset 18; max difference on OpenVINO {diff:g})",
                file=sys.stderr,
            )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
