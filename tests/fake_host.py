"""A native stand-in for ``wasinn._host``, for unit tests of library logic only.

OpenVINO's Python API does the inference, and the fake copies the wasmtime
host's habits that wasinn must cope with: only the ``openvino`` encoding,
exactly two builders, outputs named "0", "1", ..., every OpenVINO failure
reported as "Failed while accessing backend", no GPU. Where the real host
would abort or trap (a ``tpu`` target, a handle used after release) the fake
raises AssertionError so the test fails loudly. Integration tests use the real
wasmtime CLI instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import openvino as ov

from wasinn import _errors

OPAQUE = "Failed while accessing backend"
NP_DTYPES = {
    "f16": np.float16, "f32": np.float32, "f64": np.float64, "u8": np.uint8,
    "i32": np.int32, "i64": np.int64,
}  # fmt: skip
OV_TO_DTYPE = {"f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64", "u8": "u8", "i32": "i32", "i64": "i64"}


class Handle:
    def __init__(self, host: FakeHost, kind: str, value: Any) -> None:
        self.host, self.kind, self.value, self.released = host, kind, value, False
        host.live.add(self)

    def get(self) -> Any:
        assert not self.released, f"{self.kind} used after release: the real host would trap"
        return self.value


class FakeHost:
    def __init__(self, registry: dict[str, tuple[bytes, bytes]] | None = None) -> None:
        self.core = ov.Core()
        self.calls: list[tuple[Any, ...]] = []
        self.live: set[Handle] = set()
        self.registry = registry or {}
        #: action -> (code, message): make the next such call fail once.
        self.fail_next: dict[str, tuple[str, str]] = {}

    def _maybe_fail(self, action: str, what: str) -> None:
        if action in self.fail_next:
            code, message = self.fail_next.pop(action)
            raise _errors.from_host(code, message, action, what)

    def load(self, builders: list[bytes], encoding: str, target: str, what: str) -> Handle:
        assert all(type(b) is bytes for b in builders), "the binding takes bytes only"
        self.calls.append(("load", encoding, target, len(builders)))
        assert target != "tpu", "target tpu reached an OpenVINO host: the real host would abort"
        self._maybe_fail("load", what)
        if encoding != "openvino":
            raise _errors.from_host("invalid-encoding", "unable to find a backend for this encoding", "load", what)
        if len(builders) != 2:
            raise _errors.from_host("runtime-error", f"The backend expects 2 buffers, passed {len(builders)}", "load", what)
        if target == "gpu":
            raise _errors.from_host("runtime-error", OPAQUE, "load-device", what)
        try:
            weights = ov.Tensor(np.frombuffer(builders[1], np.uint8).copy()) if builders[1] else ov.Tensor(np.zeros(0, np.uint8))
            model = self.core.read_model(builders[0], weights)
            compiled = self.core.compile_model(model, "CPU")
        except Exception:
            raise _errors.from_host("runtime-error", OPAQUE, "load", what) from None
        return Handle(self, "graph", compiled)

    def load_by_name(self, name: str, what: str) -> Handle:
        self.calls.append(("load_by_name", name))
        if name not in self.registry:
            raise _errors.from_host("not-found", f"graph not found: {name}", "load", what)
        return self.load(list(self.registry[name]), "openvino", "cpu", what)

    def init_context(self, graph: Handle, what: str) -> Handle:
        self.calls.append(("init_context",))
        self._maybe_fail("context", what)
        return Handle(self, "context", graph.get().create_infer_request())

    def compute(self, ctx: Handle, feeds: list[tuple[str, Any]], what: str, expected: list) -> list[tuple[str, list[int], str, bytes]]:  # type: ignore[type-arg]
        inputs = [(name, list(t.shape), t.dtype, t.tobytes()) for name, t in feeds]
        self.calls.append(("compute", [(n, list(d), t) for n, d, t, _ in inputs]))
        for name, dims, dtype, data in inputs:
            assert type(data) is bytes, "the binding takes bytes only"
            assert all(isinstance(d, int) and 0 <= d < 2**32 for d in dims), "dims are u32"
            assert dims, "the real host cannot build rank-0 tensors"
        self._maybe_fail("compute", what)
        request = ctx.get()
        try:
            for name, dims, dtype, data in inputs:
                arr = np.frombuffer(data, NP_DTYPES[dtype]).reshape(dims)
                request.set_tensor(name, ov.Tensor(arr.copy()))
            request.infer()
        except Exception:
            raise _errors.from_host("runtime-error", OPAQUE, "compute", what) from None
        out = []
        for i in range(len(request.model_outputs)):
            t = request.get_output_tensor(i)
            dims, dtype, data = list(t.shape), OV_TO_DTYPE[t.element_type.get_type_name()], t.data.tobytes()
            # The real host layer trusts declarations the byte count agrees with:
            # they must then be exactly what OpenVINO produced.
            known = expected[i] if i < len(expected) else None
            if known is not None:
                shape, declared, nbytes = known
                if nbytes is not None and len(data) == nbytes:
                    assert list(shape) == dims, (known, dims)
                if declared is not None and len(data) == int(np.prod(dims)) * np.dtype(NP_DTYPES.get(declared, np.uint16)).itemsize:
                    assert declared == dtype, (known, dtype)
            out.append((str(i), dims, dtype, data))
        return out

    def release(self, handle: Handle) -> None:
        assert not handle.released, f"{handle.kind} released twice: the real host would trap"
        handle.released = True
        self.live.discard(handle)
