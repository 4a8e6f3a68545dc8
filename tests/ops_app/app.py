"""A test-only guest: calls ``wasinn.ops`` helpers on given tensors.

    ops_app SCRIPT.json

The script is a list of ``{"id": ID, "op": NAME, "input": TENSOR, "kwargs":
{...}, "repeat": N}`` with TENSOR ``{"dtype": D, "shape": S, "hex": H}``.
For each entry it calls ``ops.NAME(tensor, **kwargs)`` N times (default 1:
the third call of one shape runs on a model compiled for that shape) and
prints one JSON line: ``{"id": ID, "ok": [[TENSOR, ...] per call], "models":
M}`` (a helper's outputs: one tensor, or values and indices; M = models
``ops`` holds afterwards) or ``{"id": ID, "error": CLASS, "message": TEXT}``.
The native tests compare the outputs with numpy.
"""

from __future__ import annotations

import json
from typing import Any

from wit_world import exports

from wasinn import Tensor, WasiNNError, ops, print_line, run_command


def encode(t: Tensor) -> dict[str, Any]:
    return {"dtype": t.dtype, "shape": list(t.shape), "hex": t.tobytes().hex()}


def run_entry(entry: dict[str, Any]) -> dict[str, Any]:
    spec = entry["input"]
    tensor = Tensor(bytes.fromhex(spec["hex"]), shape=spec["shape"], dtype=spec["dtype"])
    helper = getattr(ops, entry["op"])
    calls = []
    try:
        for _ in range(entry.get("repeat", 1)):
            out = helper(tensor, **entry["kwargs"])
            calls.append([encode(t) for t in (out if isinstance(out, tuple) else (out,))])
    except (WasiNNError, ValueError) as exc:
        return {"id": entry["id"], "error": type(exc).__name__, "message": str(exc)}
    return {"id": entry["id"], "ok": calls, "models": len(ops._models)}


def main(args: list[str]) -> int:
    with open(args[0]) as f:
        script = json.load(f)
    for entry in script:
        print_line(json.dumps(run_entry(entry)))
    return 0


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="ops_app")
