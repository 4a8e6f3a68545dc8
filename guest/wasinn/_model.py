"""``Model`` and ``Session``: loading graphs, running them, releasing them."""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

from . import _dtypes, _limits, _source, _spec
from ._errors import ClosedError, InvalidEncodingError, ValidationError, WasiNNError
from ._spec import TensorSpec
from ._tensor import Tensor

try:
    from . import _host as _component_host
except ImportError:  # plain CPython: no componentize-py runtime, no wasi-nn
    _component_host = None

_active_host: Any = _component_host

TARGETS = ("cpu", "gpu", "tpu")
# Encodings that end up in OpenVINO on the wasmtime host. OpenVINO has no TPU
# device and wasmtime aborts the whole process when asked for one.
_OPENVINO_PATH = frozenset({"openvino", "onnx", "autodetect"})
_TPU_REASON = "skipped: OpenVINO has no TPU device, and asking the host for one aborts the host process"

# Whether the host has a native ONNX backend; learnt from the first ONNX load.
_onnx_native: bool | None = None


def _host() -> Any:
    if _active_host is None:
        raise WasiNNError(
            "wasi-nn is only reachable inside a WebAssembly component: build the app with "
            "componentize-py (./build.sh build APP_DIR) and run it under wasmtime with -S nn"
        )
    return _active_host


def _use_host(host: Any) -> Any:
    """Swap the host layer (tests use a fake); returns the previous one."""
    global _active_host, _onnx_native
    previous, _active_host, _onnx_native = _active_host, host, None
    return previous


class _Resource:
    """close() twice is fine; use after close raises ClosedError; ``with`` closes."""

    _closed = True
    _kind = "resource"

    @property
    def closed(self) -> bool:
        """True once ``close()`` has run."""
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError(f"this {self._kind} is closed; load the model again to use it")

    def close(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def __enter__(self) -> Any:
        self._check_open()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class Session(_Resource):
    """An independent execution context of a model: its own inference state.

    Sessions of one model can be used in turn (interleaved streams, or a
    stateful model per stream) without disturbing each other. Create them
    with ``model.session()``; they close with the model.

    Example::

        with Model.load("model.xml") as model:
            a, b = model.session(), model.session()
            ya = a.run({"x": xa})
            yb = b.run({"x": xb})
    """

    _kind = "session"

    def __init__(self, model: Model) -> None:
        model._check_open()
        self._model = model
        self._ctx = _host().init_context(model._graph, f"starting a session for {model.name}")
        self._closed = False
        model._sessions.add(self)

    def run(self, inputs: Any, *, outputs: Sequence[str] | None = None) -> dict[str, Tensor]:
        """Run the model once; see ``Model.run``."""
        model = self._model
        if self._closed or model._closed:
            self._check_open()
            model._check_open()
        feeds = _spec.feeds(inputs, model._inputs)
        for name, t in feeds:
            if len(t._data) > _limits.DEFAULT_HOSTCALL_FUEL:
                _limits.check(len(t._data), f"input {name!r}")
        wanted = _spec.select(outputs, model._outputs) if outputs is not None else None
        # A session only exists while a host does, so the host is used directly.
        raw = _active_host.compute(self._ctx, feeds, model._what_run, model._expected)
        rename = model._rename
        wrap = Tensor._wrap
        result = {rename.get(host_name, host_name): wrap(data, dims, dtype) for host_name, dims, dtype, data in raw}
        return result if wanted is None else _pick(result, wanted)

    def close(self) -> None:
        """Release the execution context. Safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        _host().release(self._ctx)
        self._ctx = None


class StatefulSession(Session):
    """A session that feeds some of the model's outputs back into its inputs.

    Recurrent models (streaming VAD, RNNs, decoders with a cache) return a
    state that the next call must receive. ``feedback`` maps each such output
    name to the input it feeds; the session keeps the state between calls,
    starting from ``initial`` (zeros of each input's declared shape and dtype
    by default), and ``reset()`` starts over. Pass only the other inputs.

    Example::

        vad = model.stateful({"stateN": "state"})
        for chunk in chunks:                      # f32[1, 576] each
            prob = vad.run({"input": chunk})["output"].item()
        vad.reset()                               # next stream
    """

    def __init__(
        self, model: Model, feedback: Mapping[str, str], initial: Mapping[str, Any] | None = None
    ) -> None:
        self._feedback = dict(feedback)
        if not self._feedback:
            raise ValidationError("stateful() needs at least one output -> input pair")
        specs = {s.name: s for s in model._inputs} if model._inputs is not None else None
        out_names = [s.name for s in model._outputs] if model._outputs is not None else None
        for out_name, in_name in self._feedback.items():
            if out_names is not None and out_name not in out_names:
                raise ValidationError(
                    f"stateful(): {out_name!r} is not an output; the model's outputs are: "
                    f"{', '.join(repr(n) for n in out_names)}"
                )
            if specs is not None and in_name not in specs:
                raise ValidationError(
                    f"stateful(): {in_name!r} is not an input; the model's inputs are: "
                    f"{', '.join(repr(n) for n in specs)}"
                )
        self._initial: dict[str, Tensor] = {}
        for in_name in self._feedback.values():
            given = (initial or {}).get(in_name)
            if given is not None:
                self._initial[in_name] = given if isinstance(given, Tensor) else Tensor(given)
            elif specs is not None and specs[in_name].is_static and specs[in_name].dtype in _dtypes.ITEMSIZE:
                spec = specs[in_name]
                self._initial[in_name] = Tensor.zeros(spec.shape, spec.dtype)  # type: ignore[arg-type]
            else:
                raise ValidationError(
                    f"stateful(): give an initial value for {in_name!r}: its shape or dtype "
                    "is not known from the model"
                )
        super().__init__(model)
        self._state = dict(self._initial)

    @property
    def state(self) -> dict[str, Tensor]:
        """The state the next ``run`` will feed, by input name."""
        return dict(self._state)

    def reset(self) -> None:
        """Start again from the initial state."""
        self._state = dict(self._initial)

    def run(self, inputs: Any, *, outputs: Sequence[str] | None = None) -> dict[str, Tensor]:
        """Run with the kept state added to ``inputs`` (a mapping); update the state."""
        if type(inputs) is not dict and not isinstance(inputs, Mapping):
            raise ValidationError("a stateful session takes its inputs as a mapping of name to tensor")
        state = self._state
        if not state.keys().isdisjoint(inputs):
            fed = [name for name in inputs if name in state]
            raise ValidationError(
                f"input {', '.join(repr(n) for n in fed)} is fed from the model's own output; "
                "do not pass it (use reset() or a new stateful session to change it)"
            )
        result = super().run({**inputs, **state})
        for out_name, in_name in self._feedback.items():
            state[in_name] = result[out_name]
        if outputs is None:
            return result
        return _pick(result, _spec.select(outputs, self._model._outputs) or [])


class Model(_Resource):
    """A model loaded into the host, ready to run.

    Example::

        from wasinn import Model

        with Model.load("/app/model/digits.xml") as model:
            print(model.inputs)          # [TensorSpec(name='image', shape=(None, 1, 8, 8), dtype='f32')]
            out = model.run({"image": pixels})
            print(out["probs"].topk(3))  # [(7, 0.98), (1, 0.01), (9, 0.004)]
    """

    _kind = "model"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("create models with Model.load(...) or Model.load_by_name(...)")

    @classmethod
    def _create(
        cls,
        graph: Any,
        name: str,
        encoding: str,
        target: str | None,
        skipped: list[tuple[str, str]],
        inputs: list[TensorSpec] | None,
        outputs: list[TensorSpec] | None,
    ) -> Model:
        self = object.__new__(cls)
        self._graph = graph
        self._closed = False
        self.name = name
        self.encoding = encoding
        self.target = target
        self.skipped_targets = skipped
        self._inputs = inputs
        self._outputs = outputs
        # The host names outputs "0", "1", ... in the model's output order.
        self._rename = {str(i): s.name for i, s in enumerate(outputs or ())}
        self._expected = _spec.expected_outputs(outputs)
        self._what_run = f"running {name}"
        self._sessions: weakref.WeakSet[Session] = weakref.WeakSet()
        try:
            self._default = Session(self)
        except BaseException:
            self.close()
            raise
        return self

    @classmethod
    def load(
        cls,
        source: _source.Source,
        *,
        encoding: str | None = None,
        target: str | Sequence[str] = "cpu",
    ) -> Model:
        """Load a model into the host.

        ``source`` is a path to an OpenVINO IR ``.xml`` (its ``.bin`` is read
        from beside it), a path to an ``.onnx``, the model as ``bytes``, or a
        list of byte parts (``[xml_bytes, bin_bytes]`` for IR).

        ``encoding`` is inferred from the file ending or the bytes when
        ``None``; pass ``"openvino"``, ``"onnx"``, ... to choose. The wasmtime
        CLI has only an OpenVINO backend, which answers ``invalid-encoding``
        to ``"onnx"``; wasinn then loads the ONNX bytes with encoding
        ``"openvino"`` as ``[onnx_bytes, b""]``, which OpenVINO reads. The
        model's ``encoding`` says what was sent in the end.

        ``target`` is ``"cpu"``, ``"gpu"``, ``"tpu"`` or a list tried in
        order; the first that loads wins and ``model.target`` names it.
        ``"tpu"`` is never sent to OpenVINO (the host would abort): in a list
        it is skipped, alone it raises ValidationError. Targets that were
        skipped or failed are listed in ``model.skipped_targets`` with why.

        Example::

            model = Model.load("/app/model/digits.xml", target=["gpu", "cpu"])
            model.target           # 'cpu' on a machine without a GPU
            model.skipped_targets  # [('gpu', 'loading digits.xml on gpu failed [runtime-error]: ...')]
        """
        global _onnx_native
        resolved = _source.resolve(source, encoding)
        _limits.check(sum(len(p) for p in resolved.parts), resolved.label)
        host = _host()
        skipped: list[tuple[str, str]] = []
        failure: WasiNNError | None = None
        for tgt in _targets(target):
            if tgt == "tpu" and resolved.encoding in _OPENVINO_PATH:
                skipped.append((tgt, _TPU_REASON))
                continue
            what = f"loading {resolved.label} on {tgt}"
            sent = resolved.encoding
            try:
                if sent == "onnx" and _onnx_native is not False:
                    try:
                        graph = host.load(resolved.parts, "onnx", tgt, what)
                        _onnx_native = True
                    except InvalidEncodingError:
                        _onnx_native = False
                if sent == "onnx" and _onnx_native is False:
                    sent = "openvino"
                    graph = host.load([resolved.parts[0], b""], sent, tgt, what)
                elif sent != "onnx":
                    graph = host.load(resolved.parts, sent, tgt, what)
            except WasiNNError as exc:
                skipped.append((tgt, str(exc)))
                failure = exc
                continue
            return cls._create(
                graph, resolved.label, sent, tgt, skipped, resolved.inputs, resolved.outputs
            )
        if failure is None:
            raise ValidationError(
                "no usable target: 'tpu' cannot be used with OpenVINO (the host process would "
                "abort); use target='cpu', or a list such as ['gpu', 'cpu']"
            )
        if len(skipped) > 1:
            tried = "; ".join(f"{t}: {why}" for t, why in skipped)
            raise type(failure)(
                f"no target could load {resolved.label} ({tried})",
                host_message=failure.host_message,
            ) from failure
        raise failure

    @classmethod
    def load_by_name(cls, name: str) -> Model:
        """Load a model the host registered under ``name``.

        With the wasmtime CLI, ``-S nn-graph=openvino::DIR`` registers
        ``DIR/model.xml`` and ``DIR/model.bin`` under the name
        ``basename(DIR)``. The host reveals nothing about such a model, so
        ``inputs`` and ``outputs`` are ``None``: pass inputs as a mapping
        and expect outputs named "0", "1", ...

        Example::

            model = Model.load_by_name("digits")
            out = model.run({"image": pixels})["0"]
        """
        if not isinstance(name, str) or not name:
            raise ValidationError(f"load_by_name needs a non-empty model name, not {name!r}")
        graph = _host().load_by_name(name, f"loading the host's model {name!r}")
        return cls._create(graph, name, "by-name", None, [], None, None)

    # ------------------------------------------------------------ metadata

    @property
    def inputs(self) -> list[TensorSpec] | None:
        """The model's inputs in order (``None`` when the model came by name)."""
        return list(self._inputs) if self._inputs is not None else None

    @property
    def outputs(self) -> list[TensorSpec] | None:
        """The model's outputs in order (``None`` when the model came by name)."""
        return list(self._outputs) if self._outputs is not None else None

    # ------------------------------------------------------------ running

    def run(self, inputs: Any, *, outputs: Sequence[str] | None = None) -> dict[str, Tensor]:
        """Run the model once and return its outputs by their real names.

        ``inputs`` is a mapping of input name to tensor-like, a list with one
        tensor-like per input in model order, or a single tensor-like for a
        model with one input. A tensor-like is a ``Tensor``, raw ``bytes``
        (taken as the input's dtype and static shape), an ``array.array``,
        nested lists or a number; all but ``Tensor`` are converted to the
        input's dtype, and flat data fills a static shape of the same size.
        Names, dtypes and shapes are checked before the host is called.

        ``outputs`` selects outputs by name (all by default); the result keeps
        that order. The same ``Tensor`` may be passed any number of times.

        Example::

            out = model.run({"x": Tensor([[1.0, 2.0]])}, outputs=["y"])
            out["y"].tolist()
        """
        self._check_open()
        return self._default.run(inputs, outputs=outputs)

    def session(self) -> Session:
        """A new independent execution context (see ``Session``)."""
        self._check_open()
        return Session(self)

    def stateful(
        self, feedback: Mapping[str, str], initial: Mapping[str, Any] | None = None
    ) -> StatefulSession:
        """A new session that feeds outputs back into inputs (see ``StatefulSession``)."""
        self._check_open()
        return StatefulSession(self, feedback, initial)

    def close(self) -> None:
        """Release the graph and every session now. Safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        for session in list(self._sessions):
            session.close()
        _host().release(self._graph)
        self._graph = None

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"target={self.target!r}"
        return f"<wasinn.Model {self.name!r} encoding={self.encoding!r} {state}>"


def _pick(result: dict[str, Tensor], wanted: list[str]) -> dict[str, Tensor]:
    """The ``wanted`` outputs in that order. Names were checked against the
    metadata already; without metadata they are checked here, after the run."""
    missing = [w for w in wanted if w not in result]
    if missing:
        raise ValidationError(
            f"unknown output {', '.join(repr(m) for m in missing)}; the model produced: "
            f"{', '.join(repr(k) for k in result)}"
        )
    return {w: result[w] for w in wanted}


def _targets(target: str | Sequence[str]) -> list[str]:
    items = [target] if isinstance(target, str) else list(target)
    if not items:
        raise ValidationError("target list is empty; use 'cpu', 'gpu', 'tpu' or a list of them")
    for t in items:
        if not isinstance(t, str) or t.lower() not in TARGETS:
            raise ValidationError(f"unknown target {t!r}; choose from {', '.join(TARGETS)}")
    return [t.lower() for t in items]
