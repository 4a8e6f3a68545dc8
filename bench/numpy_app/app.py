"""numpy_app: the numpy benchmark's cases (``npcases.py``) timed inside a component.

    numpy_app [--budget SECONDS] [CASE ...]

Prints one JSON line: ``{"numpy": version, "cases": {name: {"median_us",
"reps", "check"}}}``, each case timed inside the component (a warm-up call,
then calls until ``--budget`` seconds, 0.3 by default, and at least 5 calls;
the median). ``bench/numpy_bench.py`` runs the same module natively.
"""

from __future__ import annotations

import json

import npcases
import numpy as np
from wit_world import exports

from wasinn import print_line, run_command


def main(args: list[str]) -> int:
    budget = 0.3
    names: list[str] = []
    it = iter(args)
    for arg in it:
        if arg == "--budget":
            budget = float(next(it))
        elif arg in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        elif arg in npcases.CASES:
            names.append(arg)
        else:
            raise ValueError(f"unknown case {arg!r}; the cases: {', '.join(npcases.CASES)}")
    cases = npcases.run_all(np, budget, names or None)
    print_line(json.dumps({"numpy": np.__version__, "cases": cases}))
    return 0


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="numpy_app")
