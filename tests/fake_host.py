"""A dependency-free stand-in for ``wasinn._host.wasi``, for unit tests of library logic.

Pure Python: no numpy, no OpenVINO. The host knows the models of
``toy_models.py`` by their bytes and runs each one's Python function (the
numeric tests check those functions against OpenVINO). It behaves the way the
wasmtime CLI with its OpenVINO backend does where wasinn must cope with it:

* only the ``openvino`` encoding (``onnx`` and the rest: ``invalid-encoding``),
  exactly two builders, ONNX read from ``[onnx_bytes, b""]``;
* no GPU (``runtime-error`` on load), a model with an input of dynamic rank
  fails to compile on the CPU, unknown bytes fail to read;
* inputs must be the model's, in its dtypes and declared shapes, else the
  opaque "Failed while accessing backend"; an input left out keeps the value
  it had in the context's previous call (OpenVINO's infer request keeps it;
  in a fresh context OpenVINO reads uninitialised memory, where the fake
  raises AssertionError);
* outputs come back named "0", "1", ... in the model's output order.

Where the real host would abort or trap (a ``tpu`` target, a rank-0 tensor, a
handle used after release or released twice) the fake raises AssertionError,
so the test fails loudly. It records every call in ``calls``, keeps the
handles not yet released in ``live`` and the kind of each release, in order,
in ``released``; ``fail_next`` makes the next call of one kind fail.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

from toy_models import Port, ToyModel, all_models

from wasinn import _errors
from wasinn._host.api import Handle, HostOutput
from wasinn._tensor import Tensor

OPAQUE = "Failed while accessing backend"


def refuse_like_wasmtime(builders: list[bytes], encoding: str, target: str, what: str) -> None:
    """Fail a load as the wasmtime CLI's OpenVINO backend does before reading
    the model: only the ``openvino`` encoding, exactly two parts, no GPU."""
    if encoding != "openvino":
        raise _errors.from_host(
            "invalid-encoding", "unable to find a backend for this encoding", "load", what
        )
    if len(builders) != 2:
        raise _errors.from_host(
            "runtime-error", f"The backend expects 2 buffers, passed {len(builders)}", "load", what
        )
    if target == "gpu":
        raise _errors.from_host("runtime-error", OPAQUE, "load-device", what)


class FakeHandle:
    """A graph or an execution context of the fake host."""

    def __init__(self, host: FakeHost, kind: str, model: ToyModel) -> None:
        self.kind, self.model, self.released = kind, model, False
        #: A context's inputs as last set, by name.
        self.inputs: dict[str, Tensor] = {}
        self.serial = next(host._serials)
        host.live.add(self)

    def __repr__(self) -> str:
        return f"<fake {self.kind} #{self.serial} of {self.model.name}>"


def _fits(port: Port, t: Tensor) -> bool:
    if t.dtype != port.dtype:
        return False
    if port.shape is None:
        return True
    return len(t.shape) == len(port.shape) and all(
        want is None or want == got for want, got in zip(port.shape, t.shape, strict=False)
    )


class FakeHost:
    """Implements ``wasinn._host.api.HostLayer`` over ``toy_models``.

    ``models`` are the models it can load (all toys by default);
    ``registry`` maps names to models for ``load_by_name`` (the CLI's
    ``-S nn-graph=openvino::DIR``).
    """

    def __init__(
        self, models: Iterable[ToyModel] | None = None, registry: dict[str, ToyModel] | None = None
    ) -> None:
        known = list(models) if models is not None else list(all_models().values())
        self._by_bytes = {m.builders[0]: m for m in known}
        self.registry = dict(registry or {})
        self.calls: list[tuple[Any, ...]] = []
        self.live: set[FakeHandle] = set()
        #: The kind ("graph" or "context") of each handle released, in order.
        self.released: list[str] = []
        #: action ("load", "context" or "compute") -> (code, message): the next such call fails.
        self.fail_next: dict[str, tuple[str, str]] = {}
        self._serials = itertools.count()

    def _maybe_fail(self, action: str, what: str) -> None:
        if action in self.fail_next:
            code, message = self.fail_next.pop(action)
            raise _errors.from_host(code, message, action, what)

    @staticmethod
    def _get(handle: Handle, kind: str) -> FakeHandle:
        assert isinstance(handle, FakeHandle), f"not a handle of this host: {handle!r}"
        assert handle.kind == kind, f"a {handle.kind} was passed where the host wants a {kind}"
        assert not handle.released, f"{handle!r} used after release: the real host would trap"
        return handle

    # ------------------------------------------------------------ HostLayer

    def load(self, builders: list[bytes], encoding: str, target: str, what: str) -> Handle:
        assert type(builders) is list and all(type(b) is bytes for b in builders), (
            "the binding takes a list of bytes only"
        )
        self.calls.append(("load", encoding, target, len(builders)))
        assert target != "tpu", "target tpu reached an OpenVINO host: the real host would abort"
        self._maybe_fail("load", what)
        refuse_like_wasmtime(builders, encoding, target, what)
        model = self._by_bytes.get(builders[0])
        readable = model is not None and model.builders[1] == builders[1]
        if model is None or not readable or any(p.shape is None for p in model.inputs):
            raise _errors.from_host("runtime-error", OPAQUE, "load", what)
        return FakeHandle(self, "graph", model)

    def load_by_name(self, name: str, what: str) -> Handle:
        self.calls.append(("load_by_name", name))
        if name not in self.registry:
            raise _errors.from_host("not-found", f"graph not found: {name}", "load", what)
        return self.load(list(self.registry[name].builders), "openvino", "cpu", what)

    def init_context(self, graph: Handle, what: str) -> Handle:
        model = self._get(graph, "graph").model
        self.calls.append(("init_context",))
        self._maybe_fail("context", what)
        return FakeHandle(self, "context", model)

    def compute(
        self, ctx: Handle, inputs: Sequence[tuple[str, Tensor]], what: str
    ) -> list[HostOutput]:
        context = self._get(ctx, "context")
        self.calls.append(("compute", context.serial, [(n, t.shape, t.dtype) for n, t in inputs]))
        for name, t in inputs:
            assert type(name) is str and type(t) is Tensor, (name, t)
            assert type(t.tobytes()) is bytes, "the binding takes bytes only"
            assert t.shape, "the real host cannot build rank-0 tensors"
            assert all(type(d) is int and 0 <= d < 2**32 for d in t.shape), "dims are u32"
        self._maybe_fail("compute", what)
        model = context.model
        given = dict(inputs)
        ports = {p.name: p for p in model.inputs}
        if not given.keys() <= ports.keys() or not all(
            _fits(ports[n], t) for n, t in given.items()
        ):
            raise _errors.from_host("runtime-error", OPAQUE, "compute", what)
        context.inputs.update(given)
        unset = [name for name in ports if name not in context.inputs]
        assert not unset, (
            f"input {unset} never set: the real host would compute on uninitialised memory"
        )
        given = {name: context.inputs[name] for name in ports}
        results = model.compute(given)
        assert len(results) == len(model.outputs), f"{model.name} computed the wrong outputs"
        return [HostOutput(str(i), t.shape, t.dtype, t.tobytes()) for i, t in enumerate(results)]

    def release(self, resource: Handle) -> None:
        assert isinstance(resource, FakeHandle), f"not a handle of this host: {resource!r}"
        assert not resource.released, f"{resource!r} released twice: the real host would trap"
        resource.released = True
        self.live.discard(resource)
        self.released.append(resource.kind)
