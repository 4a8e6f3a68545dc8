"""A hostile test app: numpy's C++ throw sites, provoked inside a component.

    numpy_hostile_app hostile [CASE ...]   one JSON line per case (numpy_cases.HOSTILE)
    numpy_hostile_app check                FFT and unique results (= numpy_cases.py check natively)
    numpy_hostile_app bench                median milliseconds of a few FFTs and np.unique

Each hostile case must end in a Python exception (MemoryError) and leave
numpy working; before the fix in tools/guest_packages/numpy/ each one trapped
the component. Expected outputs: expected.md.
"""

from __future__ import annotations

import json

import numpy_cases
from wit_world import exports

from wasinn import print_line, run_command


def main(args: list[str]) -> int:
    mode, rest = (args[0], args[1:]) if args else ("check", [])
    if mode == "hostile":
        for row in numpy_cases.hostile(rest):
            print_line(json.dumps(row))
    elif mode == "check":
        print_line(json.dumps(numpy_cases.check()))
    elif mode == "bench":
        print_line(json.dumps(numpy_cases.bench()))
    else:
        raise ValueError("usage: numpy_hostile_app hostile [CASE ...] | check | bench")
    return 0


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="numpy_hostile_app")
