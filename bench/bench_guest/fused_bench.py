"""Processing fused into a converted OpenVINO IR model, against three separate calls.

In the component (through app.py)::

    bench_guest wasinn fused:selfie REPS

MediaPipe's selfie segmentation (``selfie_segmentation.tflite`` of the
mediapipe 0.10.14 wheel, converted to IR by prepare.py: input ``input_1`` f32
[1, 256, 256, 3] NHWC in [0, 1], output ``activation_10`` f32 [1, 256, 256, 1],
the person's probability per pixel) on a 640x480 RGB frame, two ways, from the
frame's bytes to the mask's bytes:

* three calls: the pre-processing as its own GraphBuilder model (u8 HWC ->
  bilinear to 256x256 -> f32 in [0, 1], as MediaPipe's ImageToTensorCalculator
  with ``output_tensor_float_range`` 0..1 does), the IR model, the
  post-processing as its own GraphBuilder model (the mask bilinear back to
  480x640, ``> 0.5``, u8), each ``run`` in turn: two tensors cross the
  guest/host boundary twice more;
* fused: ``Model.load(xml, preprocess=pre, postprocess=post)``, one ``run``.

They take turns within one loop (order alternating), so that the machine's
drift hits both alike. Prints one JSON object: medians, each of the three
calls on its own, load times and how far the two ways' outputs differ; the
fused mask is written to ``OUT_DIR`` for the host to compare with native
OpenVINO. The graphs use only wasinn's builder, so ``bench/run.py`` imports
this module natively for the same processing on OpenVINO's Python API.
"""

from __future__ import annotations

import array
import time
from collections.abc import Callable
from typing import Any, TypeVar

from wasinn import GraphBuilder, Model, Operand, Tensor, WasiNNError

#: Where prepare.py leaves the converted model and the frame (build/models/bench).
MODEL = "/models/bench/selfie_segmentation.xml"
FRAME = "/models/bench/selfie_frame_480x640.rgb"
#: Where the guest leaves the fused mask (u8 [480, 640]) for the host to compare.
MASK = "/models/bench/selfie_mask_fused.u8"
FRAME_H, FRAME_W = 480, 640
SIZE = 256  # the model's input is [1, SIZE, SIZE, 3], NHWC
INPUT, OUTPUT = "input_1", "activation_10"
THRESHOLD = 0.5
T = TypeVar("T")


def pre(b: Any) -> dict[str, Operand]:
    """The frame (u8 [480, 640, 3], HWC RGB) as the model's input (f32
    [1, 256, 256, 3] in [0, 1]): bilinear, half-pixel, no aspect kept
    (MediaPipe's ``keep_aspect_ratio: false`` for this model). Resampled as
    f32 after the cast, not as u8: u8 linear resampling rounds to whole
    levels, which MediaPipe's float conversion does not."""
    image = b.input("image", [FRAME_H, FRAME_W, 3], "u8")
    x = b.reshape(b.cast(image, "f32"), [1, FRAME_H, FRAME_W, 3])
    x = b.resample2d(x, mode="linear", sizes=[SIZE, SIZE], axes=[1, 2])
    return {INPUT: x * (1.0 / 255.0)}


def post(b: Any, outputs: dict[str, Operand]) -> dict[str, Operand]:
    """The model's probabilities (f32 [1, 256, 256, 1]) as the frame's mask:
    bilinear back to 480x640, 1 (u8) where the person's probability is above
    one half, else 0."""
    x = b.resample2d(outputs[OUTPUT], mode="linear", sizes=[FRAME_H, FRAME_W], axes=[1, 2])
    return {"mask": b.greater(b.reshape(x, [FRAME_H, FRAME_W]), THRESHOLD)}


def pre_graph() -> tuple[GraphBuilder, dict[str, Operand]]:
    """``pre`` as a model of its own (output ``input_1``)."""
    b = GraphBuilder()
    return b, pre(b)


def post_graph() -> tuple[GraphBuilder, dict[str, Operand]]:
    """``post`` as a model of its own (input ``activation_10``, output ``mask``)."""
    b = GraphBuilder()
    return b, post(b, {OUTPUT: b.input(OUTPUT, [1, SIZE, SIZE, 1], "f32")})


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _ms(samples: list[float]) -> dict[str, Any]:
    ordered = sorted(samples)
    n = len(ordered)
    return {"median_ms": 1000 * ordered[n // 2], "p90_ms": 1000 * ordered[min(n - 1, n * 9 // 10)],
            "n": n}  # fmt: skip


def _timed(fn: Callable[[], T]) -> tuple[float, T]:
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def selfie(reps: int) -> dict[str, Any]:
    """Three calls against the fused model, ``reps`` rounds after one warm-up
    round; see the module docstring."""
    frame = read(FRAME)
    pre_b, pre_out = pre_graph()
    post_b, post_out = post_graph()
    loads: dict[str, float] = {}
    loads["pre_build"], pre_model = _timed(lambda: pre_b.build(pre_out))
    loads["model"], model = _timed(lambda: Model.load(MODEL))
    loads["post_build"], post_model = _timed(lambda: post_b.build(post_out))
    try:
        loads["fused"], fused = _timed(lambda: Model.load(MODEL, preprocess=pre, postprocess=post))
    except WasiNNError as exc:  # reported, not worked around: see bench/run.py
        return {"measured": False, "why": f"{type(exc).__name__}: {exc}",
                "load_ms": {k: 1000 * v for k, v in loads.items()}}  # fmt: skip
    stages: dict[str, list[float]] = {"pre": [], "model": [], "post": []}

    def feed() -> dict[str, Tensor]:
        return {"image": Tensor(frame, shape=[FRAME_H, FRAME_W, 3], dtype="u8")}

    def three_calls() -> tuple[bytes, Tensor]:
        t0 = time.perf_counter()
        tensor = pre_model.run(feed())[INPUT]
        t1 = time.perf_counter()
        probs = model.run({INPUT: tensor})[OUTPUT]
        t2 = time.perf_counter()
        mask = post_model.run({OUTPUT: probs})["mask"].tobytes()
        t3 = time.perf_counter()
        for name, seconds in (("pre", t1 - t0), ("model", t2 - t1), ("post", t3 - t2)):
            stages[name].append(seconds)
        return mask, probs

    def one_call() -> bytes:
        return fused.run(feed())["mask"].tobytes()

    times: dict[str, list[float]] = {"three_calls": [], "fused": []}
    separate, together = b"", b""
    probs: Tensor | None = None
    for i in range(reps + 1):  # round 0 warms both up
        order = ("fused", "three_calls") if i % 2 else ("three_calls", "fused")
        for name in order:
            if name == "fused":
                seconds, together = _timed(one_call)
            else:
                seconds, (separate, probs) = _timed(three_calls)
            if i:
                times[name].append(seconds)
    with open(MASK, "wb") as f:
        f.write(together)
    assert probs is not None
    return {
        "measured": True,
        "three_calls": _ms(times["three_calls"]),
        "fused": _ms(times["fused"]),
        "stages": {k: _ms(v[1:]) for k, v in stages.items()},  # v[0] is the warm-up round
        "load_ms": {k: 1000 * v for k, v in loads.items()},
        "fused_over_three_calls": median(times["fused"]) / median(times["three_calls"]),
        **compare(separate, together, probs, frame),
    }


def median(samples: list[float]) -> float:
    return sorted(samples)[len(samples) // 2]


def compare(separate: bytes, together: bytes, probs: Tensor, frame: bytes) -> dict[str, Any]:
    """How far the two ways' outputs are apart: the masks (u8, so the largest
    difference is 0 or 1; and how many pixels differ), and, to see what the
    threshold hides, the model's probabilities with only the pre-processing
    fused against those of the separate calls."""
    differ = sum(a != b for a, b in zip(separate, together, strict=True))
    fused_pre = Model.load(MODEL, preprocess=pre)
    feed = Tensor(frame, shape=[FRAME_H, FRAME_W, 3], dtype="u8")
    got = array.array("f", fused_pre.run({"image": feed})[OUTPUT].tobytes())
    want = array.array("f", probs.tobytes())
    fused_pre.close()
    return {
        "mask_max_abs_diff": max(abs(a - b) for a, b in zip(separate, together, strict=True)),
        "mask_pixels_differing": differ,
        "mask_fraction": sum(together) / len(together),
        "probs_max_abs_diff": max(abs(a - b) for a, b in zip(want, got, strict=True)),
    }


def run(kind: str, args: list[str]) -> dict[str, Any]:
    """Dispatch ``fused:KIND`` from app.py; see the module docstring."""
    if kind == "selfie":
        return selfie(int(args[0]))
    raise SystemExit(f"unknown fused benchmark {kind!r}")
