"""A test-only guest: builds graph-builder cases and runs them on given inputs.

    builder_app SCRIPT.json

The script is a list of ``{"case": NAME, "inputs": {NAME: TENSOR}}`` with
TENSOR ``{"dtype": D, "shape": S, "hex": H}``; ``{"fused": PATH, "inputs": ...}``
loads the model file (ONNX or IR .xml) at PATH with ``fused_cases``' pre/post-processing instead
(``"processing": SPEC`` picks which: see ``fused_cases.processing``).
For each entry it builds the case's graph with ``GraphBuilder.build`` (in
this component, on the host) and prints one JSON line: ``{"case": NAME, "ok": {OUTPUT: TENSOR}}`` or
``{"case": NAME, "error": CLASS, "message": M}``. The native tests compare the
outputs with onnxruntime running the same graph's ONNX.
"""

from __future__ import annotations

import json
from typing import Any

import fused_cases
from builder_cases import CASES
from wit_world import exports

from wasinn import GraphBuilder, Model, Tensor, WasiNNError, print_line, run_command


def run_case(entry: dict[str, Any]) -> dict[str, Any]:
    name = entry.get("case") or entry["fused"]
    try:
        if "fused" in entry:  # a model file with fused_cases' processing spliced in
            pre, post = fused_cases.processing(entry.get("processing"))
            model = Model.load(entry["fused"], preprocess=pre, postprocess=post)
        else:
            builder = GraphBuilder()
            model = builder.build(CASES[name](builder))
        feed = {
            k: Tensor(bytes.fromhex(v["hex"]), shape=v["shape"], dtype=v["dtype"])
            for k, v in entry["inputs"].items()
        }
        out = model.run(feed)
    except (WasiNNError, ValueError) as exc:
        return {"case": name, "error": type(exc).__name__, "message": str(exc)}
    tensors = {
        k: {"dtype": t.dtype, "shape": list(t.shape), "hex": t.tobytes().hex()}
        for k, t in out.items()
    }
    return {"case": name, "ok": tensors}


def main(args: list[str]) -> int:
    with open(args[0]) as f:
        script = json.load(f)
    for entry in script:
        print_line(json.dumps(run_case(entry)))
    return 0


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="builder_app")
