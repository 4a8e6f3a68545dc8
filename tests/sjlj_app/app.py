"""A test app whose C extension module uses setjmp/longjmp (``ext/_sjlj.c``).

    sjlj_app ROUNDS

Prints one JSON line: the summary of :func:`sjlj_cases.run` (ROUNDS rounds of
four jumps out of deep call chains, each followed by a call that must still
work). ``/* build_ext: sjlj */`` in the C makes ``./build.sh build`` compile
it for the guest with WebAssembly exception handling (README: "C extension
modules").
"""

from __future__ import annotations

import json

import sjlj_cases
from wit_world import exports

from wasinn import print_line, run_command


def main(args: list[str]) -> int:
    if len(args) != 1 or not args[0].isdigit():
        raise ValueError("usage: sjlj_app ROUNDS")
    print_line(json.dumps(sjlj_cases.run(int(args[0]))))
    return 0


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="sjlj_app")
