"""The benchmark keeps working: a --quick run produces its table and chart.

No figure is checked here: timings belong in the report, not in a test that
fails on a slow machine.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import BUILD_SH

pytestmark = pytest.mark.integration


def test_quick_benchmark_writes_table_and_chart(tmp_path: Path) -> None:
    done = subprocess.run([str(BUILD_SH), "bench", "--quick", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    table = (tmp_path / "latest.md").read_text()
    for heading in ("Per-inference latency", "Tensor transfer", "Start-up to first output",
                    "Library-side costs", "Where wasinn's time goes", "Targets"):
        assert f"## {heading}" in table
    data = json.loads((tmp_path / "latest.json").read_text())
    assert [row["case"] for row in data["latency"]] == ["vad", "digits1", "digits64", "minilm128"]
    assert all(row["same_outputs"] for row in data["latency"]), (
        "raw and wasinn must compute the same"
    )
    assert (tmp_path / "latest.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for heading in ("first build and cache hit", "per-op overhead on tiny tensors",
                    "image pre-processing", "pre/post-processing fused into an IR model"):
        assert f"## GraphBuilder: {heading}" in table
    builder = data["builder"]
    assert list(builder["build"]["build"]) == ["small", "ocr", "cnn"]
    built = builder["build"]["build"].values()
    assert all(r["same_onnx"] and r["same_outputs"] for r in built), (
        "the guest must write the ONNX native CPython writes and compute what native OpenVINO does"
    )
    assert all(r["same_outputs"] for r in builder["ops"].values())
    fused_ir = builder["fused_ir"]
    assert fused_ir["measured"], fused_ir["why"]
    # The same processing around the same IR, fused or in three calls, in the guest or natively:
    # the same f32 arithmetic, so the same mask (a few pixels of slack for a probability within
    # rounding of the 0.5 threshold, should OpenVINO order a fused sum differently).
    assert fused_ir["mask_pixels_differing"] <= 10, fused_ir
    assert fused_ir["probs_max_abs_diff"] < 1e-4, fused_ir
    assert max(fused_ir["native_pixels_differing"].values()) <= 10, fused_ir
    assert 0.1 < fused_ir["mask_fraction"] < 0.9, "the frame shows a person: the mask is not empty"
    diff = builder["pre"]["max_abs_diff"]
    # cv2 rounds to u8 after resizing (up to 1 / 255 / std = 0.0175 off); the rest is exact
    # arithmetic in f32 or double.
    assert diff["graph_vs_cv2"] < 0.02 and diff["python_vs_cv2"] < 0.02, diff
    assert diff["python_vs_graph"] < 1e-3 and diff["graph_vs_native_graph"] < 1e-5, diff
    rows = data["ops"]["helpers"]
    assert list(rows) == [
        "resize", "resize_hd", "normalize", "resize_normalize", "softmax", "argmax", "topk",
    ]  # fmt: skip
    # argmax and topk compare with Tensor.argmax/topk, compiled C in the guest
    # (wasinn._kernels), which may well beat a host call: only the rows whose
    # other way is pure Python must be slower than the helper.
    python_ways = ("resize", "resize_hd", "normalize", "resize_normalize", "softmax")
    assert all(rows[k]["python_s"] > rows[k]["used_s"] for k in python_ways), rows
    assert rows["argmax"]["difference"] == 0 and rows["topk"]["difference"] == 0, rows
    assert rows["resize"]["difference"] <= 1, rows
