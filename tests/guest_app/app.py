"""A test-only guest: runs a JSON script of wasinn calls and prints what happened.

    guest_app SCRIPT.json

The script is ``{"load": LOAD, "steps": [STEP, ...]}``:

- LOAD: ``{"path": P, "encoding": E, "target": T}`` (only path is required) or
  ``{"name": N}`` for ``Model.load_by_name``.
- STEP, one of:
  ``{"let": NAME, "tensor": TENSOR}`` keeps a Tensor for later steps;
  ``{"run": {INPUT: TENSOR or "$NAME"}, "outputs": [...], "session": K}`` runs
  (on session K when given; ``run`` may also be a list, for positional inputs);
  ``{"session": K}`` opens session K; ``{"close": true}`` closes the model;
  ``{"close_session": K}``; ``{"describe": true}`` prints metadata;
  ``{"decode_image": HEX, "max_pixels": N}`` decodes image bytes (``max_pixels``
  optional) and reports the pixels' dtype and shape.
- TENSOR: ``{"dtype": D, "shape": S, "values": [...]}`` or ``{"dtype", "shape", "hex"}``
  for exact bytes, ``{"dtype", "zeros": S}`` for a tensor of zeros, or ``{"raw_hex": H}``
  for raw bytes handed to run as they are.
- more STEPs: ``{"load_model": LOAD}`` loads another model in place of the
  current one (the current one stays if it fails); ``{"repeat": K, "step": STEP}``
  runs a step K times and reports the last result; ``{"soak": SOAK}`` runs a
  leak check (see ``soak``). A run step with
  ``"summary": true`` reports only each output's dtype, shape and byte count.

Each step prints one JSON line: ``{"ok": ...}`` or ``{"error": CLASS, "message": M}``.
The process exits 1 if any step (or the load) raised.
"""

from __future__ import annotations

import gc
import json
import sys
from typing import Any

from componentize_py_types import Err
from wit_world import exports

from wasinn import Model, Session, Tensor, WasiNNError, image, print_line


def make_tensor(spec: Any, lets: dict[str, Tensor]) -> Any:
    if isinstance(spec, str) and spec.startswith("$"):
        return lets[spec[1:]]
    if "raw_hex" in spec:
        return bytes.fromhex(spec["raw_hex"])
    if "zeros" in spec:
        return Tensor.zeros(spec["zeros"], spec.get("dtype", "f32"))
    if "hex" in spec:
        return Tensor(bytes.fromhex(spec["hex"]), shape=spec["shape"], dtype=spec["dtype"])
    if "shape" in spec:
        return Tensor(spec["values"], shape=spec["shape"], dtype=spec.get("dtype"))
    return spec["values"]


def describe(model: Model) -> dict[str, Any]:
    def specs(items: Any) -> Any:
        if items is None:
            return None
        return [{"name": s.name, "shape": list(s.shape), "dtype": s.dtype} for s in items]

    return {
        "inputs": specs(model.inputs),
        "outputs": specs(model.outputs),
        "target": model.target,
        "encoding": model.encoding,
        "skipped_targets": model.skipped_targets,
        "metadata": model.metadata,
    }


def load(spec: dict[str, Any]) -> Model:
    if "name" in spec:
        return Model.load_by_name(spec["name"])
    kwargs = {k: spec[k] for k in ("encoding", "target") if k in spec}
    source: Any = spec["path"]
    if spec.get("as_bytes"):
        with open(source, "rb") as f:
            source = f.read()
    return Model.load(source, **kwargs)


def soak(spec: dict[str, Any]) -> str:
    """Long runs for leak checks; prints {"progress": i} every ``every`` iterations
    so that the host can sample its memory at known points."""
    count, every = spec["count"], spec["every"]
    if spec["kind"].endswith("-raw"):
        return soak_raw(spec)
    if spec["kind"] == "vad":  # one model, one recurrent session, ``count`` steps
        model = Model.load(spec["path"])
        vad = model.stateful({"stateN": "state"})
        chunk = Tensor.zeros((1, 576))
        for i in range(1, count + 1):
            vad.run({"input": chunk}, outputs=["output"])
            if i % every == 0:
                print(json.dumps({"progress": i}), flush=True)
        model.close()
    elif spec["kind"] == "cycles-del":  # load -> run -> del, never close(), no collector
        image = Tensor.zeros((1, 1, 8, 8))
        gc.disable()  # only reference counting may release the graph and its context
        try:
            for i in range(1, count + 1):
                model = Model.load(spec["path"])
                model.run({"image": image})
                del model
                if i % every == 0:
                    print(json.dumps({"progress": i}), flush=True)
        finally:
            gc.enable()
    else:  # ``count`` cycles of load -> run -> close
        image = Tensor.zeros((1, 1, 8, 8))
        for i in range(1, count + 1):
            with Model.load(spec["path"]) as model:
                model.run({"image": image})
            if i % every == 0:
                print(json.dumps({"progress": i}), flush=True)
    return "done"


def soak_raw(spec: dict[str, Any]) -> str:
    """The same soaks through the generated bindings directly, as the baseline."""
    from wasinn._bindings.imports import graph, tensor

    count, every = spec["count"], spec["every"]
    fp32 = tensor.TensorType.FP32
    with open(spec["path"], "rb") as f:
        parts = [f.read(), b""]
    if spec["path"].endswith(".xml"):
        with open(spec["path"][:-4] + ".bin", "rb") as f:
            parts[1] = f.read()

    def load() -> Any:
        return graph.load(parts, graph.GraphEncoding.OPENVINO, graph.ExecutionTarget.CPU)

    if spec["kind"] == "vad-raw":
        g = load()
        ctx = g.init_execution_context()
        chunk, state = bytes(4 * 576), bytes(4 * 256)
        for i in range(1, count + 1):
            named = [
                ("input", tensor.Tensor([1, 576], fp32, chunk)),
                ("state", tensor.Tensor([2, 1, 128], fp32, state)),
            ]
            for name, t in ctx.compute(named):
                data = t.data()
                if name == "1":
                    state = data
                t.__exit__(None, None, None)
            if i % every == 0:
                print(json.dumps({"progress": i}), flush=True)
        ctx.__exit__(None, None, None)
        g.__exit__(None, None, None)
    else:
        image = bytes(4 * 64)
        for i in range(1, count + 1):
            g = load()
            ctx = g.init_execution_context()
            for _, t in ctx.compute([("image", tensor.Tensor([1, 1, 8, 8], fp32, image))]):
                t.data()
                t.__exit__(None, None, None)
            ctx.__exit__(None, None, None)
            g.__exit__(None, None, None)
            if i % every == 0:
                print(json.dumps({"progress": i}), flush=True)
    return "done"


def step(
    model: Model, st: dict[str, Any], lets: dict[str, Tensor], sessions: dict[str, Session]
) -> Any:
    if "soak" in st:
        return soak(st["soak"])
    if "repeat" in st:
        result = None
        for _ in range(st["repeat"]):
            result = step(model, st["step"], lets, sessions)
        return result
    if "let" in st:
        lets[st["let"]] = make_tensor(st["tensor"], lets)
        return st["let"]
    if "run" in st:
        target: Any = sessions[str(st["session"])] if "session" in st else model
        inputs = st["run"]
        if isinstance(inputs, dict) and not {"dtype", "values", "hex", "raw_hex"} & inputs.keys():
            feed: Any = {k: make_tensor(v, lets) for k, v in inputs.items()}
        elif isinstance(inputs, list):
            feed = [make_tensor(v, lets) for v in inputs]
        else:
            feed = make_tensor(inputs, lets)
        out = target.run(feed, outputs=st.get("outputs"))
        if st.get("summary"):
            return {
                name: {"dtype": t.dtype, "shape": list(t.shape), "nbytes": t.nbytes}
                for name, t in out.items()
            }
        return {
            name: {"dtype": t.dtype, "shape": list(t.shape), "hex": t.tobytes().hex()}
            for name, t in out.items()
        }
    if "close_session" in st:
        sessions[str(st["close_session"])].close()
        return "closed"
    if "session" in st:
        sessions[str(st["session"])] = model.session()
        return "opened"
    if "close" in st:
        model.close()
        return "closed"
    if "describe" in st:
        return describe(model)
    if "decode_image" in st:
        limit = {"max_pixels": st["max_pixels"]} if "max_pixels" in st else {}
        pixels = image.decode(bytes.fromhex(st["decode_image"]), **limit)
        return {"dtype": pixels.dtype, "shape": list(pixels.shape)}
    raise ValueError(f"unknown step {st!r}")


def report(exc: Exception) -> None:
    code = getattr(exc, "code", None)
    print(json.dumps({"error": type(exc).__name__, "message": str(exc), "code": code}))


def main(args: list[str]) -> int:
    with open(args[0]) as f:
        script = json.load(f)
    try:
        model = load(script["load"])
    except (WasiNNError, OSError) as exc:
        report(exc)
        return 1
    print(json.dumps({"ok": describe(model)}))
    failed = False
    lets: dict[str, Tensor] = {}
    sessions: dict[str, Session] = {}
    for st in script.get("steps", []):
        try:
            if "load_model" in st:
                replacement = load(st["load_model"])
                model.close()
                model = replacement
                print(json.dumps({"ok": describe(model)}))
                continue
            # print_line: one write over 64 KiB would be cut (a big output's hex).
            print_line(json.dumps({"ok": step(model, st, lets, sessions)}))
        except (WasiNNError, OSError) as exc:
            report(exc)
            failed = True
    model.close()
    return 1 if failed else 0


class Run(exports.Run):
    def run(self) -> None:
        try:
            code = main(sys.argv[1:])
        except Exception as exc:  # an unexpected exception must not trap the component
            print(json.dumps({"error": "Unexpected", "message": repr(exc)}))
            code = 70
        if code:
            raise Err(None)
