"""The interface between wasinn's logic and whatever reaches wasi-nn.

Inside a component ``wasi`` implements it over the generated bindings; in
native unit tests a fake does (``tests/fake_host.py`` without any dependency,
``tests/ov_host.py`` backed by OpenVINO's Python API). Everything that crosses
this interface is a plain Python value or an opaque handle, so the logic
above it never imports the bindings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol

from .._tensor import Tensor

#: A graph or execution-context resource of the host. Only the host layer
#: looks inside; everything else passes it back unchanged. (``Any`` rather
#: than ``object`` so that the host layer calls the bindings' methods on it
#: without a cast per call.)
Handle = Any


class HostOutput(NamedTuple):
    """One output of a compute call, exactly as the host returned it.

    ``name`` is the host's name for it (``"0"``, ``"1"``, ... on wasmtime),
    ``shape`` and ``dtype`` come from the host's own tensor (never from the
    model's declaration, which can be wrong), ``data`` is its bytes.
    """

    name: str
    shape: tuple[int, ...]
    dtype: str
    data: bytes


class HostLayer(Protocol):
    """What ``Model`` and ``Session`` need from a wasi-nn host.

    ``what`` arguments are phrases such as ``"loading digits.xml on cpu"``
    that errors quote. Every method raises a ``WasiNNError`` subclass for a
    host error (built by ``_errors.from_host``), never anything else.
    """

    def load(self, builders: list[bytes], encoding: str, target: str, what: str) -> Handle:
        """Load a graph; ``encoding`` and ``target`` are wasi-nn case names."""
        ...

    def load_by_name(self, name: str, what: str) -> Handle:
        """The graph the host registered under ``name``."""
        ...

    def init_context(self, graph: Handle, what: str) -> Handle:
        """A new execution context of ``graph``."""
        ...

    def compute(
        self, ctx: Handle, inputs: Sequence[tuple[str, Tensor]], what: str
    ) -> list[HostOutput]:
        """Run once on checked inputs; every output in the host's order."""
        ...

    def release(self, resource: Handle) -> None:
        """Drop a graph or context now. Each handle is released exactly once."""
        ...
