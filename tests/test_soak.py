"""Soak: long runs in one component, watching the host process's memory.

The default test run does a short version (1,000 VAD steps, 50 load-run-close
cycles, 200 load-run-del cycles); `./build.sh soak` sets WASINN_SOAK=full for
100,000 steps, 1,000 cycles and 10,000 load-run-del cycles. The load-run-del
cycles never call close() and turn the cyclic collector off: reference
counting alone must release each graph and its context. The host's RSS is
read from /proc each time the component reports progress.

Every soak runs twice: through wasinn and through the raw generated bindings
(the baseline). Both must stay flat: growth from the first report (after
warm-up) to the last under 5 %, and, because a short run is too short for a
percentage to catch anything, under a quarter of what leaking the bytes handed
to the host would cost. That second bound is the one that matters: the pinned
componentize-py never frees its copy of a ``bytes`` argument to an import (nor
of a list an export returns: tests/test_free_import_bytes.py covers that
path), and ./build.sh patches every component it builds so that the copy is
freed (tools/free_import_bytes.py); an unpatched component grows by every
tensor and model it sends. The soaks also show every host resource is released:
wasmtime traps a component at 100,000 live handles, and the full VAD soak
creates 400,000.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import BUILD_SH, ROOT

pytestmark = pytest.mark.integration

FULL = os.environ.get("WASINN_SOAK") == "full"
VAD_STEPS, VAD_EVERY = (100_000, 10_000) if FULL else (1_000, 100)
CYCLES, CYCLE_EVERY = (1_000, 100) if FULL else (50, 5)
# Load -> run -> del without close() or the cyclic collector: reference counting alone.
DEL_CYCLES, DEL_EVERY = (10_000, 1_000) if FULL else (200, 20)
TOLERANCE = 0.05 if FULL else 0.15  # wasinn's growth over the raw baseline's
VAD = "/models/silero/silero_vad_openvino_16k.onnx"
# Bytes each iteration hands to the host as `bytes` arguments: a VAD step's
# two inputs (576 + 2*128 float32 values); a cycle's model files and 8x8 image.
SENT = {
    "vad": 4 * (576 + 2 * 128),
    "cycles": 4 * 64 + sum((ROOT / "apps" / "digits" / "model" / f"digits.{x}").stat().st_size
                           for x in ("xml", "bin")),
}


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    raise AssertionError("no VmRSS")


def soak(
    app: Path, directory: Path, spec: dict[str, Any], env: dict[str, str] | None = None
) -> list[tuple[int, float]]:
    """Run one soak in ``app``; return (iteration, host RSS in MB) at each progress report."""
    script = directory / f"soak_{spec['kind']}.json"
    script.write_text(json.dumps({"load": {"path": "digits.xml"}, "steps": [{"soak": spec}]}))
    proc = subprocess.Popen([str(BUILD_SH), "run", str(app), script.name], cwd=directory, env=env,
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
    """MB gained from the first report (after warm-up) to the highest later one.

    The highest rather than the last: the component goes on (closing its model)
    while the last report is being read, so that sample can come out low.
    """
    return max(rss for _, rss in samples[1:]) - samples[0][1]


def typical_step(samples: list[tuple[int, float]]) -> float:
    """The median MB gained between two reports: robust to when each was read."""
    steps = sorted(b[1] - a[1] for a, b in zip(samples, samples[1:], strict=False))
    return steps[len(steps) // 2]


@pytest.fixture(scope="module")
def soaked(
    built, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, list[tuple[int, float]]]:
    directory = tmp_path_factory.mktemp("soak")
    for part in ("digits.xml", "digits.bin"):
        shutil.copy(ROOT / "apps" / "digits" / "model" / part, directory / part)
    runs = {}
    for kind, path, count, every in (
        ("vad", VAD, VAD_STEPS, VAD_EVERY),
        ("vad-raw", VAD, VAD_STEPS, VAD_EVERY),
        ("cycles", "digits.xml", CYCLES, CYCLE_EVERY),
        ("cycles-raw", "digits.xml", CYCLES, CYCLE_EVERY),
        ("cycles-del", "digits.xml", DEL_CYCLES, DEL_EVERY),
    ):
        spec = {"kind": kind, "path": path, "count": count, "every": every}
        runs[kind] = soak(built["guest_app"], directory, spec)
        assert [i for i, _ in runs[kind]] == list(range(every, count + 1, every))
    # The same guest as componentize-py builds it, without build.sh's fix.
    leaky = tmp_path_factory.mktemp("leaky") / "leaky_guest"
    shutil.copytree(ROOT / "tests" / "guest_app", leaky)
    # `run` rebuilds whenever the setting differs from the last build, so it gets it too.
    unpatched = {**os.environ, "WASINN_FREE_IMPORT_BYTES": "0"}
    subprocess.run(
        [str(BUILD_SH), "build", str(leaky)], check=True, capture_output=True, env=unpatched
    )
    # 5,000 steps: the first thousand or so fill free heap the host has already touched.
    runs["vad-unpatched"] = soak(
        leaky, directory, {"kind": "vad", "path": VAD, "count": 5_000, "every": 500}, env=unpatched
    )
    for kind, samples in runs.items():
        first, last = samples[0][1], samples[-1][1]
        print(
            f"\nsoak {kind}: host RSS {first:.1f} -> {last:.1f} MB "
            f"over {samples[-1][0]} iterations "
            f"({100 * (last - first) / first:+.1f} %): {[round(r) for _, r in samples]}"
        )
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


def test_unpatched_component_leaks_what_it_sends(soaked) -> None:
    """Without tools/free_import_bytes.py the host grows by (at least half of)
    every byte the VAD steps hand over, so the flatness checks below can fail,
    and the fix is what makes them pass. If this fails after a componentize-py
    upgrade, the new version frees the copy itself: drop the fix."""
    samples = soaked["vad-unpatched"][:-1]  # the last may be read after the model closed
    iterations = samples[-1][0] - samples[0][0]
    would_leak = SENT["vad"] * iterations / 2**20
    gained = samples[-1][1] - samples[0][1]
    print(
        f"\nsoak vad, unpatched: {gained:+.2f} MB over {iterations} iterations "
        f"(sent {would_leak:.1f} MB)"
    )
    assert gained > 0.5 * would_leak, samples


@pytest.mark.parametrize("kind", ["vad", "cycles", "cycles-del", "vad-raw", "cycles-raw"])
def test_memory_stays_flat(soaked, kind: str, record_property) -> None:
    """Host RSS after warm-up grows less than 5 %, and less than a quarter of
    what keeping every byte sent to the host would add."""
    samples = soaked[kind]
    gained = growth(samples)
    iterations = samples[-1][0] - samples[0][0]
    would_leak = SENT[kind.split("-")[0]] * iterations / 2**20
    record_property(f"{kind}_growth_mb", gained)
    print(f"\nsoak {kind}: {gained:+.2f} MB over {iterations} iterations "
          f"(leaking what it sent would be {would_leak:.1f} MB)")
    assert gained < 0.05 * samples[0][1], samples
    assert gained < 0.25 * would_leak, samples
