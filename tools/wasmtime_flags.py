"""The wasmtime settings of every wasinn component, from tools/wasmtime.flags,
and those HTTP components add, from tools/wasmtime-serve.flags.

build.sh gets them for `wasmtime compile`, `run` and `serve` by running this
file (one word per line; ``--serve`` for the HTTP ones); Python that starts
wasmtime itself (the bench, the serving tests) uses ``FLAGS`` and ``SERVE_FLAGS``::

    argv = [wasmtime, "run", *wasmtime_flags.FLAGS, "-S", "nn", component]
    argv = [wasmtime, "serve", *wasmtime_flags.FLAGS, *wasmtime_flags.SERVE_FLAGS, ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

FILE = Path(__file__).with_name("wasmtime.flags")
SERVE_FILE = Path(__file__).with_name("wasmtime-serve.flags")


def read(path: Path = FILE) -> list[list[str]]:
    """The settings in ``path``: the words of each line that is not blank or a comment."""
    lines = (line.split() for line in path.read_text().splitlines())
    return [words for words in lines if words and not words[0].startswith("#")]


#: Each setting as its words, e.g. ``["-W", "max-wasm-stack=67108864"]``.
SETTINGS = read()
#: All of them, for a command line.
FLAGS = [word for setting in SETTINGS for word in setting]
#: What an HTTP component is compiled and served with, besides FLAGS.
SERVE_FLAGS = [word for setting in read(SERVE_FILE) for word in setting]


if __name__ == "__main__":
    print("\n".join(SERVE_FLAGS if sys.argv[1:] == ["--serve"] else FLAGS))
