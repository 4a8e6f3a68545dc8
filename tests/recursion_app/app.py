"""A test-only app: nests data ever deeper through each recursive construct
(recursion.py) and reports how deep it got, for tests/test_recursion.py.

    recursion_app CONSTRUCT [DEPTH ...]

prints one line per depth (``ok DEPTH``, or ``raised DEPTH TYPE: MESSAGE`` and
stop), each flushed before the next attempt: when the component traps
instead, the last line says how deep it got. ``recursion_app list`` prints the
constructs.
"""

from __future__ import annotations

import sys

from recursion import CONSTRUCTS, attempt
from wit_world import exports


def main(args: list[str]) -> None:
    if args == ["list"]:
        print(" ".join(CONSTRUCTS))
        return
    for line in attempt(args[0], [int(a) for a in args[1:]]):
        print(line, flush=True)


class Run(exports.Run):
    def run(self) -> None:
        main(sys.argv[1:])
