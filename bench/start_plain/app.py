"""start_plain: a trivial wasinn app without numpy, for the numpy benchmark's
size and start-up rows (``bench/numpy_bench.py``); ``bench/start_numpy`` is the
same app with numpy imported.

    start_plain              prints "ok"
"""

from __future__ import annotations

from wit_world import exports

from wasinn import print_line, run_command


def main(args: list[str]) -> int:
    print_line("ok")
    return 0


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="start_plain")
