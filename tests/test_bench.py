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
