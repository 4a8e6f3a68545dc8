"""A test-only app for tests/test_convert.py: runs a converted model on raw inputs.

    convert_app MODEL.xml     reads each input NAME from ./NAME.in (raw bytes in the
                              model's declared shape and dtype), writes each output
                              to ./NAME.out, and prints one JSON line describing them
"""

from __future__ import annotations

import json

from wit_world import exports

from wasinn import Model, Tensor, print_line, run_command


def main(args: list[str]) -> None:
    (path,) = args
    with Model.load(path) as model:
        feed = {}
        for spec in model.inputs or []:
            # The test's models are static; a dynamic dimension would read as 1.
            shape = [d if d is not None else 1 for d in spec.shape or ()]
            with open(f"{spec.name}.in", "rb") as f:
                feed[spec.name] = Tensor(f.read(), shape=shape, dtype=spec.dtype)
        outputs = model.run(feed)
        for name, tensor in outputs.items():
            with open(f"{name}.out", "wb") as f:
                f.write(tensor.tobytes())
        print_line(json.dumps({
            "inputs": [str(s) for s in model.inputs or []],
            "outputs": {n: [list(t.shape), t.dtype] for n, t in outputs.items()},
        }))  # fmt: skip


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="convert_app")
