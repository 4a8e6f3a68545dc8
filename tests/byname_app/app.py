"""Test app for Model.load_by_name(name, metadata=...) under the real host.

Run with the digits IR preloaded as "digits" (-S nn-graph=openvino::DIR); prints
two JSON lines: the preloaded model described by a copy of its .xml (/digits)
(inputs, output names, probs, and what a wrong input name raises), then the
probs of the same image through Model.load, for comparison.
"""

from __future__ import annotations

import json

from wit_world import exports

from wasinn import Model, Tensor, ValidationError, run_command

PIXELS = Tensor([(i % 17) / 16.0 for i in range(64)], shape=(1, 1, 8, 8), dtype="f32")


def main(args: list[str]) -> int:
    del args
    with Model.load_by_name("digits", metadata="/digits/model.xml") as model:
        try:
            model.run({"pixels": PIXELS})
            checked = "nothing raised"
        except ValidationError as e:
            checked = f"ValidationError: {e}"
        out = model.run({"image": PIXELS})
        print(json.dumps({
            "inputs": [{"name": s.name, "shape": list(s.shape or ()), "dtype": s.dtype}
                       for s in model.inputs or []],
            "outputs": list(out),
            "probs": out["probs"].tolist(),
            "checked": checked,
        }))
    with Model.load("/digits/model.xml") as model:
        print(json.dumps({"probs": model.run({"image": PIXELS})["probs"].tolist()}))
    return 0


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="byname_app")
