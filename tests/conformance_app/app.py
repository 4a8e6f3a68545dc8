"""The guest half of ``./build.sh conformance``: ONNX node test cases through wasinn.

    conformance_app MANIFEST.json [FIRST]

MANIFEST lists cases as ``{"name", "dir", "inputs": [{"name", "dtype",
"shape", "file"}]}`` (paths relative to the current directory). From case
number FIRST (0 by default) on, each case's ``DIR/model.onnx`` is loaded with
``Model.load``, run on its inputs, and its outputs are written as
``DIR/outK.bin``. One JSON line is printed when a case starts and one when it
ends: ``{"case": NAME, "outputs": [{"dtype", "shape", "file"}]}`` or
``{"case": NAME, "error": CLASS, "message": M}``. An exception that is not a
``WasiNNError`` is reported with ``"bug": true``: wasinn should never raise
one. The ``start`` lines let the harness resume after a trap.
"""

from __future__ import annotations

import json
from typing import Any

from wit_world import exports

from wasinn import Model, Tensor, WasiNNError, print_line, run_command


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    folder = case["dir"]
    inputs = {}
    for spec in case["inputs"]:
        with open(f"{folder}/{spec['file']}", "rb") as f:
            data = f.read()
        inputs[spec["name"]] = Tensor(data, shape=spec["shape"], dtype=spec["dtype"])
    with Model.load(f"{folder}/model.onnx") as model:
        result = model.run(inputs)
    described = []
    for k, tensor in enumerate(result.values()):
        name = f"out{k}.bin"
        with open(f"{folder}/{name}", "wb") as f:
            f.write(tensor.tobytes())
        described.append({"dtype": tensor.dtype, "shape": list(tensor.shape), "file": name})
    return {"outputs": described}


def main(args: list[str]) -> int:
    with open(args[0]) as f:
        cases = json.load(f)
    first = int(args[1]) if len(args) > 1 else 0
    for index in range(first, len(cases)):
        case = cases[index]
        print_line(json.dumps({"start": case["name"], "index": index}))
        try:
            line = run_case(case)
        except WasiNNError as exc:
            line = {"error": type(exc).__name__, "message": str(exc)}
        except Exception as exc:  # noqa: BLE001 - reported as a wasinn bug, not a trap
            line = {"error": type(exc).__name__, "message": str(exc), "bug": True}
        print_line(json.dumps({"case": case["name"], **line}))
    return 0


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="conformance_app")
