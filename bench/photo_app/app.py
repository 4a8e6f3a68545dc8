"""photo_app: face detection on photos (BlazeFace short range), timed stage by stage.

    photo_app [--repeat N] [--dump DIR] FILE...

For each file, one JSON line: ``{"file", "width", "height" (of the decoded
picture), "reduce" (the factor it was decoded smaller by), "crc32" (of the
decoded RGB pixels), "faces": [{"score", "box": [x0, y0, x1, y1]}, ...]
(the file's pixels), "top": {"anchor", "score"} (the best anchor, face or not),
"ms" (the best of N runs, from the file's bytes to the faces), "stages":
{"decode", "pre", "model", "post"} (that run's split, ms), "first_ms" (the
first run, which pays for compiling the host's pre-processing graph)}``.
The model is loaded once. Stages:

- decode: ``wasinn.image.decode(data, mode="RGB", min_size=(128, 128))`` (C
  codecs in the guest): at 1/2, 1/4 or 1/8 of the size when that is still at
  least the model's 128x128 (a 4000x3000 photo at 500x375), so the host's
  resize is given an eighth of the rows and columns; a JPEG is decoded at that
  scale by libjpeg-turbo (Pillow's ``draft``), a PNG decoded whole and
  box-averaged (Pillow's ``reduce``);
- pre: resize (bilinear, half-pixel, as cv2's INTER_LINEAR) to fit 128x128
  keeping the aspect, and scale to [-1, 1], in one host call
  (``wasinn.ops.resize_normalize``); then the letterbox padding (zeros) in the guest;
- model: BlazeFace on the host (``Model.run``);
- post: scores (sigmoid of the logits above 0), boxes from the anchors,
  non-maximum suppression, back to picture pixels, in the guest.

``--dump DIR`` writes each file's model input (f32 bytes) to
``DIR/BASENAME.input.f32``, outside the timing, for the benchmark's comparison
with the native pipeline.
"""

from __future__ import annotations

import json
import math
import os
import time
import zlib
from array import array

from blazeface import CLIP, MEAN, SIDE, STD, decode_box, letterbox, suppress, to_image
from wit_world import exports

from wasinn import Model, Tensor, image, ops, print_line, run_command

MODEL = "/models/photo_app/blazeface.xml"
STAGES = ("decode", "pre", "model", "post")


def preprocess(pixels: Tensor) -> Tensor:
    """The model's [1, 128, 128, 3] input: the picture letterboxed, in [-1, 1]."""
    height, width = pixels.shape[0], pixels.shape[1]
    rh, rw, top, left, _ = letterbox(width, height)
    small = ops.resize_normalize(pixels, (rh, rw), mean=MEAN, std=STD, out_layout="hwc")
    raw = small.tobytes()
    row = SIDE * 3 * 4
    if rw == SIDE:
        data = bytes(top * row) + raw + bytes((SIDE - rh - top) * row)
    else:
        lpad, rpad, width_bytes = bytes(left * 12), bytes((SIDE - rw - left) * 12), rw * 12
        body = b"".join(lpad + raw[i * width_bytes : (i + 1) * width_bytes] + rpad
                        for i in range(rh))  # fmt: skip
        data = bytes(top * row) + body + bytes((SIDE - rh - top) * row)
    return Tensor(data, shape=(1, SIDE, SIDE, 3), dtype="f32")


def sigmoid(logit: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-CLIP, min(CLIP, logit))))


def postprocess(
    outputs: dict[str, Tensor], width: int, height: int, reduce: int
) -> tuple[list[dict[str, object]], dict[str, object]]:
    """Faces (score, box in the file's pixels: the decoded picture's, times
    ``reduce``) and the best anchor."""
    logits = array("f")
    logits.frombytes(outputs["classificators"].tobytes())
    regs = memoryview(outputs["regressors"].tobytes()).cast("f")
    _, _, top, left, scale = letterbox(width, height)
    found = []
    for i, logit in enumerate(logits):
        if logit > 0.0:  # score > MIN_SCORE = 0.5
            box = decode_box(list(regs[i * 16 : i * 16 + 4]), i)
            found.append((sigmoid(logit), to_image(box, top, left, scale / reduce)))
    faces: list[dict[str, object]] = [
        {"score": s, "box": b} for s, b in suppress(found)
    ]
    best = max(range(len(logits)), key=logits.__getitem__)
    return faces, {"anchor": best, "score": sigmoid(logits[best])}


def detect(model: Model, path: str, repeat: int, dump: str | None) -> dict[str, object]:
    with open(path, "rb") as f:
        data = f.read()
    runs: list[dict[str, float]] = []
    out: dict[str, object] = {}
    pixels: Tensor | None = None
    for _ in range(repeat):
        pixels = None  # the last run's pixels go first: no decode pays for two pictures
        t0 = time.perf_counter()
        pixels, info = image.decode_with_info(data, mode="RGB", name=path, min_size=(SIDE, SIDE))
        reduce = info["reduce"]
        assert isinstance(reduce, int)
        t1 = time.perf_counter()
        x = preprocess(pixels)
        t2 = time.perf_counter()
        if dump is not None:
            kept = x.tobytes()
        outputs = model.run({"input": x})
        t3 = time.perf_counter()
        faces, best = postprocess(outputs, pixels.shape[1], pixels.shape[0], reduce)
        t4 = time.perf_counter()
        runs.append({"decode": t1 - t0, "pre": t2 - t1, "model": t3 - t2, "post": t4 - t3})
        out = {"file": path, "width": pixels.shape[1], "height": pixels.shape[0],
               "reduce": reduce, "faces": faces, "top": best}  # fmt: skip
    assert pixels is not None
    out["crc32"] = zlib.crc32(pixels.tobytes())
    if dump is not None:
        with open(os.path.join(dump, os.path.basename(path) + ".input.f32"), "wb") as f:
            f.write(kept)
    best_run = min(runs, key=lambda r: sum(r.values()))
    out["ms"] = sum(best_run.values()) * 1000
    out["stages"] = {k: best_run[k] * 1000 for k in STAGES}
    out["first_ms"] = sum(runs[0].values()) * 1000
    return out


def main(args: list[str]) -> int:
    repeat = 1
    dump: str | None = None
    files: list[str] = []
    it = iter(args)
    for arg in it:
        if arg == "--repeat":
            repeat = max(1, int(next(it)))
        elif arg == "--dump":
            dump = next(it)
        elif arg in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        else:
            files.append(arg)
    if not files:
        print(__doc__.strip())
        return 2
    with Model.load(MODEL) as model:
        for path in files:
            print_line(json.dumps(detect(model, path, repeat, dump)))
    return 0


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="photo_app")
