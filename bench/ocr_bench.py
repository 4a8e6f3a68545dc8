"""The OCR benchmark: the ocr component against rapidocr natively, per image, models loaded.

Each image of tests/data/ocr (a subset with ``quick``) is read REPEAT times by
the component in one run (``ocr --json --repeat``, the median run reported)
and REPEAT times by rapidocr natively with onnxruntime and with OpenVINO f32
(``tests/ocr_oracle.py``; the median run). The split:

- guest: decode (wasinn.image), prepare (size limits, letterbox), detect
  (resize + normalise + DBNet + mask on the host), boxes (contours and box
  geometry from the mask, in the guest), crop (perspective warps on the
  host), classify and recognise (resize, normalise and pad on the host, fused
  with the models; CTC decoding in Python);
- rapidocr: decode, pre-processing, models, post-processing (see
  ``ocr_oracle.rapidocr_timed``).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "ocr"
sys.path.insert(0, str(ROOT / "tests"))
import ocr_oracle  # noqa: E402  (tests/ is put on the path above)
from component_lines import json_lines  # noqa: E402  (bench/, beside this file)

REPEAT = 3
QUICK_IMAGES = ("receipt.png", "paragraph_q90_444.jpg", "line_sans24.png", "form.png")
GUEST_STAGES = ("decode", "prepare", "detect", "boxes", "crop", "classify", "recognise")
#: Goal of issue 11: guest per-image time / native rapidocr + OpenVINO f32.
TARGET_RATIO = 1.3


def guest_times(files: list[str]) -> dict[str, dict[str, Any]]:
    """The component's median run per image: {"ms", "stages", "lines"}."""
    records = json_lines("ocr", ["--json", "--repeat", str(REPEAT), *files], DATA)
    return {r["file"]: r for r in records}


def native_times(files: list[str], engine: ocr_oracle.Engine) -> dict[str, dict[str, Any]]:
    """rapidocr's median run per image, in ms: {"ms", "stages", "lines"}."""
    ocr_oracle.rapidocr_timed(DATA / files[0], engine)  # warm-up: first-call allocations
    out = {}
    for name in files:
        runs = sorted(
            (ocr_oracle.rapidocr_timed(DATA / name, engine) for _ in range(REPEAT)),
            key=lambda r: r["total"],
        )
        median = runs[len(runs) // 2]
        stages = {s: median[s] * 1000 for s in ocr_oracle.STAGES}
        out[name] = {"ms": median["total"] * 1000, "stages": stages, "lines": median["lines"]}
    return out


def run(quick: bool) -> dict[str, Any]:
    """Per-image times of the three ways, and the split of each."""
    files = list(QUICK_IMAGES) if quick else [p.name for p in ocr_oracle.images()]
    guest = guest_times(files)
    onnxruntime = native_times(files, "onnxruntime")
    openvino = native_times(files, "openvino")
    rows = []
    for name in files:
        rows.append({
            "image": name, "lines": len(guest[name]["lines"]),
            "guest_ms": guest[name]["ms"], "onnxruntime_ms": onnxruntime[name]["ms"],
            "openvino_ms": openvino[name]["ms"],
            "guest_stages": guest[name]["stages"],
            "onnxruntime_stages": onnxruntime[name]["stages"],
            "openvino_stages": openvino[name]["stages"],
        })  # fmt: skip
    ratios = [r["guest_ms"] / r["openvino_ms"] for r in rows]
    return {"rows": rows, "ratio_median": statistics.median(ratios), "repeat": REPEAT}


def report(data: dict[str, Any]) -> list[str]:
    """The benchmark's markdown section."""
    rows = data["rows"]
    lines = ["", "## OCR: PP-OCRv4 per image, models loaded (ms, median of "
             f"{data['repeat']} runs)", "",
             "| image | lines | guest (wasinn) | rapidocr + onnxruntime | rapidocr + OpenVINO f32 "
             "| guest / OpenVINO |", "|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        lines.append(
            f"| {r['image']} | {r['lines']} | {r['guest_ms']:.0f} | {r['onnxruntime_ms']:.0f} "
            f"| {r['openvino_ms']:.0f} | {r['guest_ms'] / r['openvino_ms']:.2f} |"
        )
    med = {k: statistics.median(r[k] for r in rows)
           for k in ("guest_ms", "onnxruntime_ms", "openvino_ms")}  # fmt: skip
    lines.append(f"| **median** | | **{med['guest_ms']:.0f}** | **{med['onnxruntime_ms']:.0f}** "
                 f"| **{med['openvino_ms']:.0f}** | **{data['ratio_median']:.2f}** |")  # fmt: skip
    lines += ["", "Where the time goes (median over the images, ms):", "",
              "| guest stage | ms | | rapidocr stage | onnxruntime | OpenVINO f32 |",
              "|---|---|---|---|---|---|"]  # fmt: skip
    native_stages = list(ocr_oracle.STAGES)
    for i in range(max(len(GUEST_STAGES), len(native_stages))):
        g = GUEST_STAGES[i] if i < len(GUEST_STAGES) else ""
        n = native_stages[i] if i < len(native_stages) else ""
        gms = f"{statistics.median(r['guest_stages'].get(g, 0.0) for r in rows):.1f}" if g else ""
        ort = f"{statistics.median(r['onnxruntime_stages'][n] for r in rows):.1f}" if n else ""
        ov = f"{statistics.median(r['openvino_stages'][n] for r in rows):.1f}" if n else ""
        lines.append(f"| {g} | {gms} | | {n} | {ort} | {ov} |")
    lines += ["", "The guest's detect, classify and recognise include the pre- and "
              "post-processing fused into the models; rapidocr's pre/post columns are "
              "numpy and OpenCV outside them. See bench/ocr_bench.py."]  # fmt: skip
    return lines


def target(data: dict[str, Any]) -> tuple[str, float, float, str]:
    """The goal row for the targets table."""
    return ("OCR guest / native rapidocr + OpenVINO f32 per image <= 1.3", TARGET_RATIO,
            data["ratio_median"], "lower")  # fmt: skip
