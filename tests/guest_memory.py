"""Peak memory of one component run: the wasmtime process's peak RSS and the
size of the guest's linear memory, which never shrinks, so that its size at
the end of a run is its peak.

Both are read from ``/proc/PID`` while the app waits: the app's last argument
is a FIFO, which it opens (and blocks on) after it has printed a line for
each file before it. The peak RSS is ``VmHWM`` of wasmtime's own address
space (``wait4``'s ``ru_maxrss`` would also count the parent's resident set
at the fork). wasmtime reserves a few GiB of
address space for a 32-bit memory and makes the part in use accessible from
its start, so the memory in use is the run of accessible mappings just below
the largest inaccessible one. Used by tests/test_image_app.py and
bench/image_bench.py.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Measured:
    lines: list[str]  # what the app printed for each file before the FIFO
    peak_rss_mb: float  # the wasmtime process's peak resident set
    linear_mb: float | None  # the guest's linear memory (None: not found in smaps)


def run_measured(
    build_sh: Path, app: Path, files: list[str], cwd: Path, options: tuple[str, ...] = ()
) -> Measured:
    """``./build.sh run APP OPTIONS... FILES... FIFO`` from ``cwd`` (the app's
    folder built first); the app must print one line per file, then open FIFO."""
    fifo = cwd / "hold.fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
    proc = subprocess.Popen(
        [str(build_sh), "run", str(app), *options, *files, fifo.name],
        cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env={**os.environ, "RUN_EXEC": "1"},  # build.sh becomes wasmtime: this pid
    )  # fmt: skip
    assert proc.stdout is not None
    lines = [proc.stdout.readline() for _ in files]
    linear = _linear_memory_mb(proc.pid) if all(lines) else None
    with open(f"/proc/{proc.pid}/status") as f:
        peak = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    if not _release(fifo, proc):
        raise RuntimeError(f"{app.name} ended before it opened {fifo.name}: {lines}")
    proc.stdout.read()
    proc.wait()
    return Measured(lines, peak / 1024, linear)


def _linear_memory_mb(pid: int) -> float | None:
    maps: list[tuple[int, int, str]] = []
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 5 and "-" in fields[0] and ":" not in fields[0]:
                start, end = (int(x, 16) for x in fields[0].split("-"))
                maps.append((start, end, fields[1]))
    reserved = [i for i, (s, e, perms) in enumerate(maps) if perms == "---p" and e - s >= 1 << 30]
    if not reserved:
        return None
    i = max(reserved, key=lambda i: maps[i][1] - maps[i][0])
    size = 0
    while i > 0 and maps[i - 1][1] == maps[i][0] and maps[i - 1][2] != "---p":
        i -= 1
        size += maps[i][1] - maps[i][0]
    return size / (1 << 20) if size else None


def _release(fifo: Path, proc: subprocess.Popen[str]) -> bool:
    """Let the app past the FIFO (it reads nothing) once it has opened it;
    False if it ended first."""
    while proc.poll() is None:
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            return True
        except OSError:  # ENXIO: the app has not opened it yet
            time.sleep(0.01)
    return False
