"""``Host``: the wasi-nn host a model is loaded on, as an object.

A ``Host`` wraps the calls that reach wasi-nn (a ``HostLayer``: the bindings
in ``wasi`` inside a component, a fake in tests) and keeps what wasinn
learned about that host, such as whether it reads ONNX natively. It also
owns the choice of target: which to try, which never to send, and how the
failures add up into one error. Every loaded model keeps the calls of the
``Host`` that loaded it, so a test that hands a model a fake host never
touches any other.

The host a plain ``Model.load`` uses is ``default_host()``: the component's
own wasi-nn imports, or, in native tests, whatever ``use_default`` installed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .._errors import InvalidEncodingError, ValidationError, WasiNNError
from .api import Handle, HostLayer

try:
    from . import wasi as _wasi

    _COMPONENT: HostLayer | None = _wasi
except ImportError:  # plain CPython: no componentize-py runtime, no wasi-nn
    _COMPONENT = None

TARGETS = ("cpu", "gpu", "tpu")
# Encodings that end up in OpenVINO on the wasmtime host. OpenVINO has no TPU
# device and wasmtime aborts the whole process when asked for one.
_OPENVINO_PATH = frozenset({"openvino", "onnx", "autodetect"})
_TPU_REASON = (
    "skipped: OpenVINO has no TPU device, and asking the host for one aborts the host process"
)


@dataclass
class Loaded:
    """A graph the host loaded: its handle, the encoding that was sent in the
    end, the target that took it, and the targets skipped or failed before it."""

    handle: Handle
    encoding: str
    target: str
    skipped: list[tuple[str, str]] = field(default_factory=list)


class Host:
    """One wasi-nn host: its ``layer`` (the calls), and what wasinn learned about it.

    A loaded model keeps only the ``layer`` (``init_context``, ``compute``,
    ``release``): a run pays no extra Python frame or lookup for this object.

    Example (a test handing in a fake)::

        host = Host(FakeHost())
        model = load(prepare("model.onnx"), host, "cpu")
    """

    def __init__(self, layer: HostLayer) -> None:
        self.layer = layer
        #: Whether the host reads ONNX itself; learnt from its first ONNX load.
        self.onnx_native: bool | None = None

    def load(self, parts: list[bytes], encoding: str, targets: list[str], label: str) -> Loaded:
        """Load on the first of ``targets`` that takes the model.

        ``"tpu"`` is never sent where the model ends in OpenVINO (the host
        would abort). ONNX goes to a host without an ONNX backend as
        ``encoding="openvino"`` with ``[onnx_bytes, b""]``, which OpenVINO reads.
        """
        skipped: list[tuple[str, str]] = []
        failure: WasiNNError | None = None
        for target in targets:
            if target == "tpu" and encoding in _OPENVINO_PATH:
                skipped.append((target, _TPU_REASON))
                continue
            try:
                handle, sent = self._load_on(
                    parts, encoding, target, f"loading {label} on {target}"
                )
            except WasiNNError as exc:
                skipped.append((target, str(exc)))
                failure = exc
                continue
            return Loaded(handle, sent, target, skipped)
        if failure is None:
            raise ValidationError(
                "no usable target: 'tpu' cannot be used with OpenVINO (the host process would "
                "abort); use target='cpu', or a list such as ['gpu', 'cpu']"
            )
        if len(skipped) > 1:
            tried = "; ".join(f"{t}: {why}" for t, why in skipped)
            raise type(failure)(
                f"no target could load {label} ({tried})", host_message=failure.host_message
            ) from failure
        raise failure

    def _load_on(
        self, parts: list[bytes], encoding: str, target: str, what: str
    ) -> tuple[Handle, str]:
        if encoding != "onnx":
            return self.layer.load(parts, encoding, target, what), encoding
        if self.onnx_native is not False:
            try:
                handle = self.layer.load(parts, "onnx", target, what)
                self.onnx_native = True
                return handle, "onnx"
            except InvalidEncodingError:
                self.onnx_native = False
        return self.layer.load([parts[0], b""], "openvino", target, what), "openvino"

    def load_by_name(self, name: str, what: str) -> Handle:
        """The graph the host registered under ``name``."""
        return self.layer.load_by_name(name, what)


def targets(target: str | Sequence[str]) -> list[str]:
    """``target`` (a name or a list) as checked, lower-case target names."""
    items = [target] if isinstance(target, str) else list(target)
    if not items:
        raise ValidationError("target list is empty; use 'cpu', 'gpu', 'tpu' or a list of them")
    for t in items:
        if not isinstance(t, str) or t.lower() not in TARGETS:
            raise ValidationError(f"unknown target {t!r}; choose from {', '.join(TARGETS)}")
    return [t.lower() for t in items]


_default: Host | None = Host(_COMPONENT) if _COMPONENT is not None else None


def default_host() -> Host:
    """The host ``Model.load`` uses: the component's wasi-nn imports."""
    if _default is None:
        raise WasiNNError(
            "wasi-nn is only reachable inside a WebAssembly component: build the app with "
            "componentize-py (./build.sh build APP_DIR) and run it under wasmtime with -S nn"
        )
    return _default


def use_default(layer: HostLayer | None) -> HostLayer | None:
    """Make ``layer`` (a fake, in native tests) the default host's calls; returns
    the previous one's. Models already loaded keep the host that loaded them."""
    global _default
    previous = _default.layer if _default is not None else None
    _default = Host(layer) if layer is not None else None
    return previous
