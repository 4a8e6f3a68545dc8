"""The wasmtime settings of every wasinn component, from tools/wasmtime.flags.

build.sh gets them for `wasmtime compile`, `run` and `serve` by running this
file (one word per line); Python that starts wasmtime itself (the bench, the
serving tests) uses ``FLAGS``::

    argv = [wasmtime, "run", *wasmtime_flags.FLAGS, "-S", "nn", component]
"""

from __future__ import annotations

from pathlib import Path

FILE = Path(__file__).with_name("wasmtime.flags")


def read(path: Path = FILE) -> list[list[str]]:
    """The settings in ``path``: the words of each line that is not blank or a comment."""
    lines = (line.split() for line in path.read_text().splitlines())
    return [words for words in lines if words and not words[0].startswith("#")]


#: Each setting as its words, e.g. ``["-W", "max-wasm-stack=67108864"]``.
SETTINGS = read()
#: All of them, for a command line.
FLAGS = [word for setting in SETTINGS for word in setting]


if __name__ == "__main__":
    print("\n".join(FLAGS))
