"""Soak: long runs in one component, watching the host process's memory.

The default test run does a short version (1,000 VAD steps, 50 load-run-close
cycles); `./build.sh soak` sets WASINN_SOAK=full for 100,000 steps and 1,000
cycles. The host's RSS is read from /proc each time the component reports
progress.

Every soak runs twice: through wasinn and through the raw generated bindings
(the baseline). componentize-py 0.25.1 never frees the copy it makes of each
``bytes`` argument passed to an import (runtime/src/lib.rs, maybe_pop_list
allocates and does not defer the deallocation), so the guest's memory grows
by the size of every tensor and model handed to the host, with or without
wasinn. What wasinn controls is tested strictly: it adds no growth of its own
beyond the baseline, and it releases every host resource (wasmtime traps a
component at 100,000 live handles; the full VAD soak creates 400,000). The
absolute target (growth under 5 %) is kept as a strict xfail until the
toolchain is fixed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import BUILD_SH, ROOT

pytestmark = pytest.mark.integration

FULL = os.environ.get("WASINN_SOAK") == "full"
VAD_STEPS, VAD_EVERY = (100_000, 10_000) if FULL else (1_000, 100)
CYCLES, CYCLE_EVERY = (1_000, 100) if FULL else (50, 5)
TOLERANCE = 0.05 if FULL else 0.15  # wasinn's growth over the raw baseline's
VAD = "/models/silero/silero_vad_openvino_16k.onnx"
LEAK = "componentize-py 0.25.1 leaks a copy of every bytes argument to an import (see module docstring)"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    raise AssertionError("no VmRSS")


def soak(built, directory: Path, spec: dict) -> list[tuple[int, float]]:
    """Run one soak; return (iteration, host RSS in MB) at each progress report."""
    script = directory / f"soak_{spec['kind']}.json"
    script.write_text(json.dumps({"load": {"path": "digits.xml"}, "steps": [{"soak": spec}]}))
    proc = subprocess.Popen([str(BUILD_SH), "run", str(built["guest_app"]), script.name], cwd=directory,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    samples = []
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith('{"progress"'):
            samples.append((json.loads(line)["progress"], rss_mb(proc.pid)))
    stderr = proc.stderr.read() if proc.stderr else ""
    assert proc.wait() == 0, stderr[-2000:]
    return samples


def growth(samples: list[tuple[int, float]]) -> float:
    """MB gained from the first report (after warm-up) to the last."""
    return samples[-1][1] - samples[0][1]


def typical_step(samples: list[tuple[int, float]]) -> float:
    """The median MB gained between two reports: robust to when each was read."""
    steps = sorted(b[1] - a[1] for a, b in zip(samples, samples[1:]))
    return steps[len(steps) // 2]


@pytest.fixture(scope="module")
def soaked(built, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[int, float]]]:
    directory = tmp_path_factory.mktemp("soak")
    for part in ("digits.xml", "digits.bin"):
        shutil.copy(ROOT / "apps" / "digits" / "model" / part, directory / part)
    runs = {}
    for kind, path, count, every in (("vad", VAD, VAD_STEPS, VAD_EVERY), ("vad-raw", VAD, VAD_STEPS, VAD_EVERY),
                                     ("cycles", "digits.xml", CYCLES, CYCLE_EVERY),
                                     ("cycles-raw", "digits.xml", CYCLES, CYCLE_EVERY)):
        runs[kind] = soak(built, directory, {"kind": kind, "path": path, "count": count, "every": every})
        assert [i for i, _ in runs[kind]] == list(range(every, count + 1, every))
    for kind, samples in runs.items():
        first, last = samples[0][1], samples[-1][1]
        print(f"\nsoak {kind}: host RSS {first:.1f} -> {last:.1f} MB over {samples[-1][0]} iterations "
              f"({100 * (last - first) / first:+.1f} %): {[round(r) for _, r in samples]}")
    return runs


@pytest.mark.parametrize("kind", ["vad", "cycles"])
def test_wasinn_adds_no_growth_of_its_own(soaked, kind: str, record_property) -> None:
    """Between two reports, wasinn's host grows no more than the raw baseline's
    (within TOLERANCE, plus half a megabyte for page granularity)."""
    ours, baseline = typical_step(soaked[kind]), typical_step(soaked[f"{kind}-raw"])
    record_property(f"{kind}_growth_per_report_mb", ours)
    record_property(f"{kind}_raw_growth_per_report_mb", baseline)
    print(f"\nsoak {kind}: {ours:.2f} MB per report interval, raw bindings {baseline:.2f} MB")
    assert ours <= baseline * (1 + TOLERANCE) + 0.5, (soaked[kind], soaked[f"{kind}-raw"])


@pytest.mark.xfail(strict=True, reason=LEAK)
@pytest.mark.parametrize("kind", ["vad", "cycles"])
def test_memory_stays_flat(soaked, kind: str) -> None:
    if not FULL:
        pytest.xfail("the absolute bound is checked by ./build.sh soak")
    samples = soaked[kind]
    assert growth(samples) < 0.05 * samples[0][1], samples
