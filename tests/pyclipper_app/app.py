"""A test-only guest with pyclipper (built for the guest from its sdist by
tools/guest_packages.py): polygon offsetting and clipping inside a component.

    pyclipper_app ocr|random|hostile     run clipper_cases.CASES[NAME], one JSON line each

Each line is ``{"result": ...}`` or ``{"raised": NAME, "message": TEXT}``;
tests/test_pyclipper_guest.py runs it under the real wasmtime CLI and compares
with pyclipper natively on the same cases.
"""

from __future__ import annotations

import json
import sys

import clipper_cases
import pyclipper
from wit_world import exports

from wasinn import print_line, run_command


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in clipper_cases.CASES:
        print(f"usage: pyclipper_app {'|'.join(clipper_cases.CASES)}", file=sys.stderr)
        return 2
    for case in clipper_cases.CASES[argv[0]]():
        print_line(json.dumps(clipper_cases.outcome(pyclipper, case)))
    return 0


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="pyclipper_app")
