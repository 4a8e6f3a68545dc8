"""start_numpy: ``bench/start_plain`` with numpy imported (numpy==2.4.6 in its
requirements.txt), for the numpy benchmark's size and start-up rows
(``bench/numpy_bench.py``).

    start_numpy              prints "ok" and numpy's version
"""

from __future__ import annotations

import numpy as np
from wit_world import exports

from wasinn import print_line, run_command


def main(args: list[str]) -> int:
    print_line(f"ok {np.__version__}")
    return 0


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="start_numpy")
