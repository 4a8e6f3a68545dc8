"""An OpenVINO-backed stand-in for ``wasinn._host.wasi``, for numeric unit tests.

OpenVINO's Python API does the inference, and the host copies the wasmtime
host's habits that wasinn must cope with: only the ``openvino`` encoding,
exactly two builders, outputs named "0", "1", ..., every OpenVINO failure
reported as "Failed while accessing backend", no GPU. Where the real host
would abort or trap (a ``tpu`` target, a handle used after release) it raises
AssertionError so the test fails loudly. Logic tests use the dependency-free
``fake_host.FakeHost``; integration tests use the real wasmtime CLI.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import openvino as ov
from fake_host import OPAQUE, refuse_like_wasmtime

from wasinn import _errors
from wasinn._host.api import Handle, HostOutput
from wasinn._tensor import Tensor

NP_DTYPES = {
    "f16": np.float16, "f32": np.float32, "f64": np.float64, "u8": np.uint8,
    "i32": np.int32, "i64": np.int64,
}  # fmt: skip
OV_TO_DTYPE = {
    "f16": "f16",
    "bf16": "bf16",
    "f32": "f32",
    "f64": "f64",
    "u8": "u8",
    "i32": "i32",
    "i64": "i64",
}


class OVHandle:
    """A graph (a compiled model) or a context (an infer request)."""

    def __init__(self, host: OVHost, kind: str, value: Any) -> None:
        self.host, self.kind, self.value, self.released = host, kind, value, False
        host.live.add(self)

    def get(self) -> Any:
        assert not self.released, f"{self.kind} used after release: the real host would trap"
        return self.value


def _handle(handle: Handle) -> OVHandle:
    assert isinstance(handle, OVHandle), f"not a handle of this host: {handle!r}"
    return handle


class OVHost:
    """Implements ``wasinn._host.api.HostLayer`` on OpenVINO's CPU plugin."""

    def __init__(self, registry: dict[str, tuple[bytes, bytes]] | None = None) -> None:
        self.core = ov.Core()
        self.calls: list[tuple[Any, ...]] = []
        self.live: set[OVHandle] = set()
        #: The kind ("graph" or "context") of each handle released, in order.
        self.released: list[str] = []
        self.registry = registry or {}

    def load(self, builders: list[bytes], encoding: str, target: str, what: str) -> Handle:
        assert all(type(b) is bytes for b in builders), "the binding takes bytes only"
        self.calls.append(("load", encoding, target, len(builders)))
        assert target != "tpu", "target tpu reached an OpenVINO host: the real host would abort"
        refuse_like_wasmtime(builders, encoding, target, what)
        try:
            weights = (
                ov.Tensor(np.frombuffer(builders[1], np.uint8).copy())
                if builders[1]
                else ov.Tensor(np.zeros(0, np.uint8))
            )
            model = self.core.read_model(builders[0], weights)
            compiled = self.core.compile_model(model, "CPU")
        except Exception:
            raise _errors.from_host("runtime-error", OPAQUE, "load", what) from None
        return OVHandle(self, "graph", compiled)

    def load_by_name(self, name: str, what: str) -> Handle:
        self.calls.append(("load_by_name", name))
        if name not in self.registry:
            raise _errors.from_host("not-found", f"graph not found: {name}", "load", what)
        return self.load(list(self.registry[name]), "openvino", "cpu", what)

    def init_context(self, graph: Handle, what: str) -> Handle:
        self.calls.append(("init_context",))
        return OVHandle(self, "context", _handle(graph).get().create_infer_request())

    def compute(
        self, ctx: Handle, inputs: Sequence[tuple[str, Tensor]], what: str
    ) -> list[HostOutput]:
        self.calls.append(("compute", [(n, t.shape, t.dtype) for n, t in inputs]))
        for _, t in inputs:
            assert type(t.tobytes()) is bytes, "the binding takes bytes only"
            assert all(0 <= d < 2**32 for d in t.shape), "dims are u32"
            assert t.shape, "the real host cannot build rank-0 tensors"
        request = _handle(ctx).get()
        try:
            for name, t in inputs:
                arr = np.frombuffer(t.tobytes(), NP_DTYPES[t.dtype]).reshape(t.shape)
                request.set_tensor(name, ov.Tensor(arr.copy()))
            request.infer()
        except Exception:
            raise _errors.from_host("runtime-error", OPAQUE, "compute", what) from None
        out = []
        for i in range(len(request.model_outputs)):
            t = request.get_output_tensor(i)
            dtype = OV_TO_DTYPE[t.element_type.get_type_name()]
            out.append(HostOutput(str(i), tuple(t.shape), dtype, t.data.tobytes()))
        return out

    def release(self, resource: Handle) -> None:
        handle = _handle(resource)
        assert not handle.released, f"{handle.kind} released twice: the real host would trap"
        handle.released = True
        self.live.discard(handle)
        self.released.append(handle.kind)
