"""A test-only guest for wasinn's compiled kernels (``wasinn/ext/_kernels.c``).

    kernels_app CASES.json      one JSON line of results per case
    kernels_app --time MB       the kernels on MB megabytes of f32, timed

A case is ``{"dtype": D, "shape": [...], "hex": DATA, "k": K}``; its line is
``{"argmax": I, "along": [one argmax(axis=a) per axis], "topk": [[I, V], ...],
"tolist": [...], "as_bf16": HEX}`` (or ``{"error": CLASS, "message": M}``), from the public
Tensor methods, which the component runs on the compiled kernels.
tests/test_ext.py compares the lines with numpy and with the same calls made
natively. ``--time`` prints ``{"what": ..., "ms": BEST}`` lines.
"""

from __future__ import annotations

import json

from kernels_cases import results, timings
from wit_world import exports

from wasinn import print_line, run_command


def main(args: list[str]) -> int:
    if args[:1] == ["--time"] and len(args) == 2:
        for row in timings(float(args[1])):
            print_line(json.dumps(row))
        return 0
    if len(args) != 1:
        raise ValueError("usage: kernels_app CASES.json | kernels_app --time MB")
    with open(args[0]) as f:
        cases = json.load(f)
    for case in cases:
        print_line(json.dumps(results(case)))
    return 0


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="kernels_app")
