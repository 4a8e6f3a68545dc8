"""The native reference for the OCR app: rapidocr itself, on onnxruntime or OpenVINO f32.

rapidocr-onnxruntime 1.4.4's own package is imported from where
apps/ocr/prepare.py extracted it (build/models/ocr/rapidocr_onnxruntime; this
module runs prepare.py first when it is missing). It is not pip-installed: it
asks for opencv-python, which clashes with the pinned opencv-python-headless.
Nothing in it is edited; the OpenVINO engine and the timings wrap its objects.

- ``rapidocr_lines(path, engine)``: rapidocr's ``RapidOCR()`` pipeline with its
  default settings; ``engine="onnxruntime"`` is rapidocr as shipped,
  ``"openvino"`` the same pipeline with its three inference sessions replaced by
  OpenVINO's CPU plugin at f32 (the same ONNX files), i.e. "native rapidocr +
  OpenVINO f32".
- ``rapidocr_timed(path, engine)``: the same, with the wall time split into
  decode / pre-processing / models / post-processing.
- ``native_model(name, x)``: one model (``"det"``, ``"cls"``, ``"rec"``) on
  OpenVINO f32, for checking the component's model outputs.

Example::

    from ocr_oracle import rapidocr_lines, truth

    for line in rapidocr_lines("tests/data/ocr/receipt.png"):
        print(line["text"], round(line["score"], 3), line["box"][0])
    assert truth()["receipt.png"][1] == "12/11/2025 14:07 Till 3"
"""

from __future__ import annotations

import copy
import functools
import importlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import openvino as ov

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "build" / "models" / "ocr"
PACKAGE = MODELS / "rapidocr_onnxruntime"
DATA = ROOT / "tests" / "data" / "ocr"
#: The files the component loads (opset 18 copies of rapidocr's models).
CONVERTED = {"det": MODELS / "det.onnx", "cls": MODELS / "cls.onnx", "rec": MODELS / "rec.onnx"}
#: rapidocr's own files, which both engines of ``rapidocr_lines`` run.
ORIGINAL = {
    "det": PACKAGE / "models" / "ch_PP-OCRv4_det_infer.onnx",
    "cls": PACKAGE / "models" / "ch_ppocr_mobile_v2.0_cls_infer.onnx",
    "rec": PACKAGE / "models" / "ch_PP-OCRv4_rec_infer.onnx",
}
# OpenVINO's CPU plugin computes in bf16 on CPUs that have it unless told
# otherwise; the component's host is configured for f32 the same way.
F32 = {"INFERENCE_PRECISION_HINT": "f32"}

Engine = Literal["onnxruntime", "openvino"]
ModelName = Literal["det", "cls", "rec"]


def prepare() -> None:
    """Run apps/ocr/prepare.py into build/models if anything it writes is missing.

    Example::

        prepare()  # then build/models/ocr/{det,cls,rec}.onnx and the package exist
    """
    wanted = [*CONVERTED.values(), *ORIGINAL.values(), PACKAGE / "main.py"]
    if all(p.exists() for p in wanted):
        return
    env = dict(os.environ, PYTHONPATH=str(ROOT / "tools"))
    script = ROOT / "apps" / "ocr" / "prepare.py"
    subprocess.run(
        [sys.executable, str(script), str(ROOT / "build" / "models")], env=env, check=True
    )


def truth() -> dict[str, list[str]]:
    """tests/data/ocr/truth.json: file name -> the text of each box, in reading order.

    Example::

        assert truth()["line_bold48.png"] == ["SALE 50% OFF!"]
    """
    data: dict[str, list[str]] = json.loads((DATA / "truth.json").read_text())
    return data


def images() -> list[Path]:
    """The rendered test images, sorted by name.

    Example::

        assert images()[0].name == "document_large_q95_444.jpg"
    """
    return [DATA / name for name in sorted(truth())]


@functools.cache
def _core() -> Any:
    return ov.Core()


@functools.cache
def _compiled(path: Path) -> Any:
    return _core().compile_model(str(path), "CPU", F32)


def native_model(name: ModelName, x: np.ndarray, *, original: bool = False) -> np.ndarray:
    """The output of model ``name`` for input ``x`` (f32 NCHW), on OpenVINO's CPU plugin at f32.

    By default the opset-18 file the component loads (build/models/ocr/NAME.onnx);
    ``original=True`` runs rapidocr's own file (its outputs are equal). Shapes:
    det (1, 3, H, W) with H and W multiples of 32; cls (N, 3, 48, 192); rec
    (N, 3, 48, W) for any W.

    Example::

        probs = native_model("cls", np.zeros((1, 3, 48, 192), np.float32))
        assert probs.shape == (1, 2)
    """
    prepare()
    compiled = _compiled((ORIGINAL if original else CONVERTED)[name])
    return np.array(compiled([np.ascontiguousarray(x, dtype=np.float32)])[0])


class OpenVINOSession:
    """Stands in for rapidocr's ``OrtInferSession`` once it is built: rapidocr calls
    it with one input array and takes item 0 of the list of outputs it returns.

    Example::

        ocr.text_cls.infer = OpenVINOSession(ORIGINAL["cls"])
    """

    def __init__(self, path: Path) -> None:
        self.compiled = _core().compile_model(str(path), "CPU", F32)
        self.request = self.compiled.create_infer_request()
        self.outputs = len(self.compiled.outputs)

    def __call__(self, x: np.ndarray) -> list[np.ndarray]:
        self.request.infer([x])
        # Copies: the request reuses its output buffers on the next call.
        return [np.array(self.request.get_output_tensor(i).data) for i in range(self.outputs)]


STAGES = ("decode", "pre", "models", "post")


@dataclass
class Clock:
    """Seconds spent in each stage during the current call.

    Example::

        clock = Clock()
        clock.reset()
        load = clock.wrap("decode", load)  # load's time now adds to clock.spent["decode"]
    """

    spent: dict[str, float] = field(default_factory=dict)

    def reset(self) -> None:
        self.spent = dict.fromkeys(STAGES, 0.0)

    def wrap(self, stage: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                self.spent[stage] += time.perf_counter() - start

        return timed


@dataclass
class Reader:
    """A ``RapidOCR`` (models loaded) with each of its stages wrapped by ``clock``.

    Example::

        r = reader("onnxruntime")
        r.clock.reset()
        r.ocr("tests/data/ocr/receipt.png")
        print(r.clock.spent["models"])
    """

    ocr: Any
    clock: Clock


def _rapidocr_class() -> Any:
    prepare()
    # rapidocr's modules import each other as ``rapidocr_onnxruntime.…``, so its
    # parent folder goes on the path rather than loading main.py by file name.
    if str(MODELS) not in sys.path:
        sys.path.insert(0, str(MODELS))
    module = importlib.import_module("rapidocr_onnxruntime")
    if Path(module.__file__ or "").resolve().parent != PACKAGE.resolve():
        raise RuntimeError(f"rapidocr_onnxruntime came from {module.__file__}, not {PACKAGE}")
    return module.RapidOCR


def reader(engine: Engine = "onnxruntime") -> Reader:
    """The cached ``RapidOCR()`` for ``engine``, its stages timed (see ``rapidocr_timed``).

    Example::

        ocr = reader("openvino").ocr  # rapidocr's own object: ocr(path) -> (lines, times)
    """
    if engine not in ("onnxruntime", "openvino"):
        raise ValueError(f"engine must be 'onnxruntime' or 'openvino', not {engine!r}")
    # One key per engine: functools.cache on reader itself would key reader()
    # and reader("onnxruntime") apart and load the models twice.
    return _reader(engine)


@functools.cache
def _reader(engine: Engine) -> Reader:
    ocr = _rapidocr_class()()  # default settings: rapidocr's own config.yaml
    if engine == "openvino":
        # The recogniser read its character list from the ONNX metadata when it
        # was built; from here on its session is only called with arrays.
        ocr.text_det.infer = OpenVINOSession(ORIGINAL["det"])
        ocr.text_cls.infer = OpenVINOSession(ORIGINAL["cls"])
        ocr.text_rec.session = OpenVINOSession(ORIGINAL["rec"])
    clock = Clock()
    clock.reset()
    # Instance attributes shadow the methods, so rapidocr's own calls
    # (self.preprocess(...), self.text_det.infer(...)) go through the clock.
    ocr.load_img = clock.wrap("decode", ocr.load_img)
    for name in ("preprocess", "maybe_add_letterbox", "get_crop_img_list"):
        setattr(ocr, name, clock.wrap("pre", getattr(ocr, name)))
    det, cls, rec = ocr.text_det, ocr.text_cls, ocr.text_rec
    # TextDetector builds its resize + normalise step per image from get_preprocess.
    make_det_pre = det.get_preprocess
    det.get_preprocess = lambda max_wh: clock.wrap("pre", make_det_pre(max_wh))
    cls.resize_norm_img = clock.wrap("pre", cls.resize_norm_img)
    rec.resize_norm_img = clock.wrap("pre", rec.resize_norm_img)
    det.infer = clock.wrap("models", det.infer)
    cls.infer = clock.wrap("models", cls.infer)
    rec.session = clock.wrap("models", rec.session)
    return Reader(ocr, clock)


def _lines(result: Any) -> list[dict[str, Any]]:
    # RapidOCR returns (None, None) when it finds no text, else
    # ([[box, text, score], ...], [det_s, cls_s, rec_s]).
    found = result[0] or []
    return [
        {"box": [[float(x), float(y)] for x, y in box], "text": text, "score": float(score)}
        for box, text, score in found
    ]


def rapidocr_lines(path: str | Path, engine: Engine = "onnxruntime") -> list[dict[str, Any]]:
    """rapidocr's lines for one image file, in its order (top to bottom, left to right).

    Each line is ``{"box": [[x, y] * 4] (clockwise from top-left, pixels of the
    file), "text": str, "score": float}``. Answers are kept for the test run
    (several test modules read the same images), keyed by the file's path,
    size and modification time; each call returns a fresh copy.

    Example::

        lines = rapidocr_lines("tests/data/ocr/line_sans12_small.png", "openvino")
        assert lines[0]["text"] == "Total: $1,234.56 (incl. 8% tax)"
    """
    if engine not in ("onnxruntime", "openvino"):
        raise ValueError(f"engine must be 'onnxruntime' or 'openvino', not {engine!r}")
    resolved = Path(path).resolve()
    stat = resolved.stat()
    found = _cached_lines(str(resolved), stat.st_size, stat.st_mtime_ns, engine)
    return copy.deepcopy(found)


@functools.cache
def _cached_lines(path: str, size: int, mtime_ns: int, engine: Engine) -> list[dict[str, Any]]:
    # size and mtime_ns only key the cache: a file rewritten since is read again.
    return _lines(reader(engine).ocr(path))


def rapidocr_timed(path: str | Path, engine: Engine = "onnxruntime") -> dict[str, Any]:
    """``rapidocr_lines`` with the wall time of the call, in seconds, split by stage.

    Returns ``{"lines": [...], "total": s, "decode": s, "pre": s, "models": s, "post": s}``
    (models loaded beforehand; the four stages add up to ``total``):

    - decode: rapidocr's ``LoadImage`` (Pillow reads the file; to BGR with cv2);
    - pre: the side-length limits and letterbox, detection's resize + normalise,
      the perspective crops, the classifier's and recogniser's resize + normalise;
    - models: the det / cls / rec inference calls;
    - post: everything else: DB post-processing (threshold, dilation, contours,
      boxes, unclip), box filtering and ordering, applying the classifier's
      verdict, CTC decoding, mapping boxes back, and rapidocr's glue (batch
      concatenation, the classifier's copy of the crops).

    Example::

        t = rapidocr_timed("tests/data/ocr/receipt.png", "openvino")
        print(f"{t['total'] * 1000:.0f} ms, {t['models'] / t['total']:.0%} in the models")
    """
    r = reader(engine)
    r.clock.reset()
    start = time.perf_counter()
    result = r.ocr(str(path))
    total = time.perf_counter() - start
    spent = dict(r.clock.spent)
    spent["post"] = total - spent["decode"] - spent["pre"] - spent["models"]
    return {"lines": _lines(result), "total": total, **spent}


def _squeeze(text: str) -> str:
    return "".join(text.split())


def found_lines(expected: list[str], texts: list[str], *, spaces: bool = False) -> list[bool]:
    """For each expected line, whether the reader's ``texts`` contain it.

    A line counts as found when it equals one text, or a run of consecutive
    texts joined (the detector may box the words of one line apart). Unless
    ``spaces``, whitespace is ignored: PP-OCRv4's recogniser often drops the
    spaces of English text ("Callus:+1(555)"), which says nothing about whether
    the image is legible.

    Example::

        assert found_lines(["SALE 50% OFF!", "Q3"], ["SALE", "50%", "OFF!"]) == [True, False]
    """
    norm = (lambda t: t) if spaces else _squeeze
    got = [norm(t) for t in texts]
    joiner = " " if spaces else ""
    runs = {joiner.join(got[i:j]) for i in range(len(got)) for j in range(i + 1, len(got) + 1)}
    return [norm(line) in runs for line in expected]


def _main() -> None:
    """Print both engines' text on the test set, agreement and median timings."""
    paths = images()
    engines: tuple[Engine, Engine] = ("onnxruntime", "openvino")
    for engine in engines:
        reader(engine)
        rapidocr_timed(paths[0], engine)  # warm-up: first-call allocations
    stats: dict[str, list[dict[str, Any]]] = {"onnxruntime": [], "openvino": []}
    expected = truth()
    counts: dict[str, float] = dict.fromkeys(
        ("truth", "found", "exact", "lines", "same_text", "box_px", "score"), 0
    )
    for path in paths:
        for engine in engines:
            stats[engine].append(rapidocr_timed(path, engine))
        a, b = (stats[e][-1]["lines"] for e in ("onnxruntime", "openvino"))
        texts = [x["text"] for x in a]
        found = found_lines(expected[path.name], texts)
        exact = found_lines(expected[path.name], texts, spaces=True)
        counts["truth"] += len(found)
        counts["found"] += sum(found)
        counts["exact"] += sum(exact)
        counts["lines"] += len(a)
        counts["same_text"] += sum(x["text"] == y["text"] for x, y in zip(a, b, strict=False))
        if len(a) == len(b) and a:
            box = np.abs(np.array([x["box"] for x in a]) - np.array([y["box"] for y in b]))
            counts["box_px"] = max(counts["box_px"], float(box.max()))
            score = max(abs(x["score"] - y["score"]) for x, y in zip(a, b, strict=True))
            counts["score"] = max(counts["score"], score)
        same = texts == [x["text"] for x in b]
        print(
            f"{path.name:28} {len(a):3} lines, truth {sum(found)}/{len(found)}"
            f" (exact {sum(exact)}), ort vs ov text {'equal' if same else 'DIFFERS'}"
        )
        for line, ok in zip(expected[path.name], found, strict=True):
            if not ok:
                print(f"    missing {line!r}; rapidocr read {texts}")
        if not same:
            print(f"    onnxruntime {texts}\n    openvino    {[x['text'] for x in b]}")
    print(counts)
    # Timing pass: the machine is shared, so each image's best of three runs,
    # then the median over the set.
    for name in engines:
        best = [
            min((rapidocr_timed(path, name) for _ in range(3)), key=lambda t: float(t["total"]))
            for path in paths
        ]
        median = {k: float(np.median([t[k] for t in best])) * 1000 for k in ("total", *STAGES)}
        print(name, " ".join(f"{k} {v:.1f} ms" for k, v in median.items()))
        for path, t in zip(paths, best, strict=True):
            split = " ".join(f"{k} {t[k] * 1000:.1f}" for k in STAGES)
            print(f"    {path.name:28} {t['total'] * 1000:7.1f} ms ({split})")

if __name__ == "__main__":
    _main()
