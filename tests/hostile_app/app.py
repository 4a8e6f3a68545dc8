"""A test-only app: loads every model file of a folder with ``wasinn.Model.load``
and reports what happened to each, for the model-file surface of tests/hostile.py.

    hostile_app DIR [AFTER]

Tries each ``.onnx`` and ``.xml`` file of DIR in sorted order (an ``.xml``
takes the ``.bin`` beside it, as ``Model.load`` does), only those sorting after
AFTER when given, and prints one JSON line per file:

    {"file": "x.onnx", "outcome": "loaded"}
    {"file": "y.xml", "outcome": "raised", "type": "ModelFormatError", "wasinn": true,
     "message": "..."}

Each line is flushed before the next file is tried: when a file traps the
component (or kills wasmtime), the runner knows that the next file of the
sorted list did it, and starts the app again with AFTER set to that file.
An exception that escaped ``run`` would trap too, so every one is reported.
"""

from __future__ import annotations

import json
import os

from wit_world import exports

from wasinn import Model, WasiNNError, run_command

SUFFIXES = (".onnx", ".xml")
# Messages may quote a hostile file's bytes (a 1 MB attribute): a line is for a
# table, not for reproducing the file.
MAX_MESSAGE = 400


def candidates(folder: str, after: str | None) -> list[str]:
    """The model files to try, in the order the runner expects them."""
    names = sorted(n for n in os.listdir(folder) if n.endswith(SUFFIXES))
    return [n for n in names if after is None or n > after]


def attempt(path: str) -> dict[str, object]:
    """The outcome of loading one file: loaded, or the exception it raised."""
    try:
        with Model.load(path):
            return {"outcome": "loaded"}
    except Exception as e:  # noqa: BLE001 - reporting any exception is the point
        return {
            "outcome": "raised",
            "type": type(e).__name__,
            "wasinn": isinstance(e, WasiNNError),
            "message": str(e)[:MAX_MESSAGE],
        }


def main(args: list[str]) -> None:
    folder, after = args[0], (args[1] if len(args) > 1 else None)
    for name in candidates(folder, after):
        line = {"file": name, **attempt(os.path.join(folder, name))}
        print(json.dumps(line), flush=True)


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="hostile_app")  # a bad command line: exit 1, no trap
