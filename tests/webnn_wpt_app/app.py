"""The guest half of ``tests/webnn_wpt.py``: WebNN's WPT conformance cases
built with ``GraphBuilder.build`` and run on the host.

    webnn_wpt_app CASES.json [FIRST]

CASES is a JSON list of WPT cases (the objects of
``tests/data/webnn-wpt/cases/*.json``), in the current directory. From case
number FIRST (0 by default) on, each is translated by ``wpt_graph``, built,
and run on its inputs. One JSON line is printed when a case starts
(``{"start": NAME, "index": I}``, so that the harness can resume after a
trap) and one when it ends: ``{"case": NAME, "outputs": {NAME: {"dtype",
"shape", "hex"}}}``, ``{"case": NAME, "error": CLASS, "message": M}`` for a
``WasiNNError`` or an operation the builder lacks (``"missing": true``), and
the same with ``"bug": true`` for any other exception: wasinn should never
raise one.
"""

from __future__ import annotations

import json
import math
from typing import Any

import wpt_graph
from wit_world import exports

from wasinn import GraphBuilder, WasiNNError, print_line, run_command


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    builder = GraphBuilder()
    built = wpt_graph.build(builder, case)
    feeds = {name: feed.tensor() for name, feed in built.feeds.items()}
    with builder.build(built.outputs) as model:
        result = model.run(feeds)
    outputs = {}
    for name, tensor in result.items():
        data = tensor.tobytes()
        limit = built.limits[name]
        count = math.prod(tensor.shape)
        if limit is not None and count > limit:  # a one-number expectation: its head is compared
            data = data[: limit * (len(data) // count)]
        outputs[name] = {"dtype": tensor.dtype, "shape": list(tensor.shape), "hex": data.hex()}
    return {"outputs": outputs}


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
        except wpt_graph.MissingOperation as exc:
            line = {"error": type(exc).__name__, "message": str(exc), "missing": True}
        except Exception as exc:  # noqa: BLE001 - reported as a bug, not a trap
            line = {"error": type(exc).__name__, "message": str(exc), "bug": True}
        print_line(json.dumps({"case": case["name"], **line}))
    return 0


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="webnn_wpt_app")
