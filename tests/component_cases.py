"""Run a list of test cases through one component, going on after a trap or a hang.

The conformance harnesses (tests/conformance.py: ONNX's node tests,
tests/webnn_wpt.py: WebNN's WPT cases) run hundreds of cases in one
component, since starting one per case would take longer than the cases. The
component app takes the cases file and the index to start at, and prints a JSON
line ``{"start": NAME, "index": I}`` before each case and one with ``"case": NAME``
after it. A case that traps or hangs ends the component in the middle of a case:
that case is reported lost and the component is started again after it.

Example::

    run(ROOT / "tests" / "conformance_app", work / "cases.json", len(cases),
        answered=lambda msg: ..., lost=lambda index, kind, detail: ...)
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent

#: ``answered(message)``: a case's JSON line (the one with ``"case"``).
Answered = Callable[[dict[str, Any]], None]
#: ``lost(index, kind, detail)``: case ``index`` ended the component
#: (``kind`` "trap") or gave no answer in time ("hang").
Lost = Callable[[int, str, str], None]


def run(
    app: Path,
    cases_file: Path,
    count: int,
    answered: Answered,
    lost: Lost,
    case_timeout: float,
    start_timeout: float,
    root: Path = ROOT,
) -> None:
    """Run the ``count`` cases of ``cases_file`` through ``app`` (built first by
    ``root``'s build.sh, and run in the file's folder) until every case has
    answered or been lost."""
    build = [str(root / "build.sh"), "build", str(app)]
    done = subprocess.run(build, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"building {app} failed:\n{done.stdout}\n{done.stderr}")
    first = 0
    while first < count:
        first = _one_pass(
            app, cases_file, first, count, answered, lost, case_timeout, start_timeout, root
        )


def _one_pass(
    app: Path,
    cases_file: Path,
    first: int,
    count: int,
    answered: Answered,
    lost: Lost,
    case_timeout: float,
    start_timeout: float,
    root: Path,
) -> int:
    """Run the component from case ``first``; return where the next pass starts."""
    proc = subprocess.Popen(
        [str(root / "build.sh"), "run", str(app), cases_file.name, str(first)],
        cwd=cases_file.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a hung component is stopped with its whole group
    )
    lines: queue.Queue[str | None] = queue.Queue()
    errors: list[str] = []

    def pump_stdout(stream: IO[str]) -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)  # the end, so that a component that exits is not taken for hung

    def pump_stderr(stream: IO[str]) -> None:
        errors.extend(stream)

    assert proc.stdout is not None and proc.stderr is not None
    readers = [
        threading.Thread(target=pump_stdout, args=(proc.stdout,), daemon=True),
        threading.Thread(target=pump_stderr, args=(proc.stderr,), daemon=True),
    ]
    for reader in readers:
        reader.start()
    current: int | None = None
    started = False
    while True:
        try:
            line = lines.get(timeout=case_timeout if started else start_timeout)
        except queue.Empty:
            try:
                os.killpg(proc.pid, 9)
            except ProcessLookupError:
                pass
            proc.wait()
            if not started:
                raise RuntimeError(f"{app.name} did not start: " + "".join(errors)) from None
            index = current if current is not None else first
            lost(index, "hang", f"no answer within {case_timeout:.0f} s")
            return index + 1
        if line is None:
            break
        if not line.startswith("{"):
            continue
        message = json.loads(line)
        started = True
        if "start" in message:
            current = message["index"]
            continue
        current = None
        answered(message)
    code = proc.wait()
    for reader in readers:
        reader.join()
    if current is not None:  # it ended in the middle of a case: a trap or a crash
        tail = " ".join("".join(errors).split())[-300:]
        lost(current, "trap", f"exit {code}: {tail}")
        return current + 1
    if code != 0:
        raise RuntimeError(f"{app.name} failed (exit {code}): {''.join(errors)}")
    return count
