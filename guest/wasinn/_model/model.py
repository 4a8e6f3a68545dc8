"""``Model`` and ``Session``: loading graphs, running them, releasing them."""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .. import _dtypes, _errors, _limits, _numpy, _spec
from .._errors import BackendRuntimeError, ClosedError, ValidationError
from .._formats import describe, rewrite
from .._formats.source import Source
from .._host.api import Handle, HostLayer
from .._host.host import Host, default_host, targets
from .._spec import Feeds, TensorLike, TensorSpec
from .._tensor import Tensor
from . import fuse
from .prepare import Prepared, prepare

if TYPE_CHECKING:
    from typing import Self

    from numpy.typing import NDArray


class _Graph:
    """A loaded graph and what is known about it, shared by a model and its sessions.

    Every session holds its graph, and nothing here points back at a model or
    a session (sessions are tracked weakly), so plain reference counting
    frees things in the right order: the last session's context first, then
    the graph. ``Model.close()`` releases everything at once instead.
    """

    __slots__ = (
        "__weakref__", "handle", "layer", "name", "inputs", "outputs", "metadata", "rename",
        "what_run", "sessions", "plan", "states",
    )  # fmt: skip

    def __init__(
        self,
        handle: Handle,
        layer: HostLayer,
        name: str,
        inputs: list[TensorSpec] | None,
        outputs: list[TensorSpec] | None,
        metadata: dict[str, str],
        plan: rewrite.Plan,
        states: list[str] | None = None,
    ) -> None:
        self.handle: Handle | None = handle
        # The calls of the host that made the handle: they run the graph and
        # release it, even if tests swap the default host.
        self.layer = layer
        self.name = name
        self.inputs = inputs
        self.outputs = outputs
        self.metadata = metadata
        # The host names outputs "0", "1", ... in the model's output order.
        self.rename = {str(i): s.name for i, s in enumerate(outputs or ())}
        self.what_run = f"running {name}"
        self.sessions: weakref.WeakSet[Session] = weakref.WeakSet()
        # How the model was rewritten for the host (see _formats.rewrite), and so how
        # each call's inputs and outputs are adapted.
        self.plan = plan
        self.states = states

    def close(self) -> None:
        """Release every session's context, then the graph."""
        for session in list(self.sessions):
            session.close()
        handle, self.handle = self.handle, None
        if handle is not None:
            self.layer.release(handle)

    def __del__(self) -> None:
        # Only reached once no session holds the graph: their contexts are gone.
        handle, self.handle = self.handle, None
        if handle is not None:
            try:
                self.layer.release(handle)
            except Exception:
                pass


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

    def __enter__(self) -> Self:
        self._check_open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Session(_Resource):
    """An independent execution context of a model: its own inference state.

    Sessions of one model can be used in turn (interleaved streams, or a
    stateful model per stream) without disturbing each other. Create them
    with ``model.session()``. ``model.close()`` closes them all; otherwise a
    session lives as long as you keep it, even after the model object itself
    is gone, and its context is released when the last reference goes.

    Example::

        with Model.load("model.xml") as model:
            a, b = model.session(), model.session()
            ya = a.run({"x": xa})
            yb = b.run({"x": xb})
    """

    _kind = "session"
    _ctx: Handle | None = None

    def __init__(self, model: Model) -> None:
        model._check_open()
        graph = model._graph
        self._graph = graph
        what = f"starting a session for {graph.name}"
        self._ctx = graph.layer.init_context(graph.handle, what)
        self._closed = False
        graph.sessions.add(self)

    def run(self, inputs: Feeds, *, outputs: Sequence[str] | None = None) -> dict[str, Tensor]:
        """Run the model once; see ``Model.run``."""
        graph = self._graph
        if self._closed:
            self._check_open()
        plan = graph.plan
        if plan is rewrite.NOTHING:
            feeds = _spec.feeds(inputs, graph.inputs)
        else:
            feeds = plan.host_feeds(
                _spec.feeds(inputs, graph.inputs, scalars=plan.rank0_inputs, optional=plan.folded)
            )
        for name, t in feeds:
            if len(t._data) > _limits.DEFAULT_HOSTCALL_FUEL:
                _limits.check(len(t._data), f"input {name!r}")
        wanted = _spec.select(outputs, graph.outputs) if outputs is not None else None
        try:
            raw = graph.layer.compute(self._ctx, feeds, graph.what_run)
        except BackendRuntimeError as exc:
            if (not plan.limits and not plan.notes) or exc.host_message is None:
                raise
            raise _errors.at_host_limit(exc, graph.what_run, plan.limits, plan.notes) from None
        if plan.unsqueezed:
            raw = plan.model_outputs(raw, graph.what_run)
        rename = graph.rename
        wrap = Tensor._wrap
        # Unpacking is cheaper than the NamedTuple's attribute access, per output.
        result = {
            rename.get(name, name): wrap(data, shape, dtype) for name, shape, dtype, data in raw
        }
        return result if wanted is None else _pick(result, wanted)

    def run_numpy(
        self, inputs: Feeds, *, outputs: Sequence[str] | None = None
    ) -> dict[str, NDArray[Any]]:
        """``run``, with the outputs as numpy arrays; see ``Model.run_numpy``."""
        _numpy.module("run_numpy")  # before the run: a stateful session keeps its state
        return {name: t.numpy() for name, t in self.run(inputs, outputs=outputs).items()}

    def close(self) -> None:
        """Release the execution context. Safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        ctx, self._ctx = self._ctx, None
        self._graph.layer.release(ctx)

    def __del__(self) -> None:
        # Runs before this session lets go of its graph, so the context is
        # always released before the graph it belongs to.
        try:
            self.close()
        except Exception:
            pass


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
        self,
        model: Model,
        feedback: Mapping[str, str],
        initial: Mapping[str, TensorLike] | None = None,
    ) -> None:
        self._feedback = dict(feedback)
        if not self._feedback:
            raise ValidationError("stateful() needs at least one output -> input pair")
        graph = model._graph
        specs = {s.name: s for s in graph.inputs} if graph.inputs is not None else None
        out_names = [s.name for s in graph.outputs] if graph.outputs is not None else None
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
            spec = specs.get(in_name) if specs is not None else None
            static = spec.static_shape if spec is not None else None
            if given is not None:
                self._initial[in_name] = given if isinstance(given, Tensor) else Tensor(given)
            elif spec is not None and static is not None and spec.dtype in _dtypes.ITEMSIZE:
                self._initial[in_name] = Tensor.zeros(static, spec.dtype)
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

    def run(self, inputs: Feeds, *, outputs: Sequence[str] | None = None) -> dict[str, Tensor]:
        """Run with the kept state added to ``inputs`` (a mapping); update the state.

        The state changes only when the run succeeds and produced every
        output named in ``feedback``; otherwise it is left as it was.
        """
        if type(inputs) is not dict and not isinstance(inputs, Mapping):
            raise ValidationError(
                "a stateful session takes its inputs as a mapping of name to tensor"
            )
        state = self._state
        if not state.keys().isdisjoint(inputs):
            fed = [name for name in inputs if name in state]
            raise ValidationError(
                f"input {', '.join(repr(n) for n in fed)} is fed from the model's own output; "
                "do not pass it (use reset() or a new stateful session to change it)"
            )
        result = super().run({**inputs, **state})
        feedback = self._feedback
        if not feedback.keys() <= result.keys():
            # Only possible without output metadata (a model loaded by name).
            missing = [name for name in feedback if name not in result]
            raise ValidationError(
                f"stateful(): the model produced no output {', '.join(repr(m) for m in missing)} "
                f"to feed back; its outputs are: {', '.join(repr(k) for k in result)} (the state "
                "is unchanged)"
            )
        for out_name, in_name in feedback.items():
            state[in_name] = result[out_name]
        if outputs is None:
            return result
        return _pick(result, _spec.select(outputs, self._graph.outputs) or [])


class Model(_Resource):
    """A model loaded into the host, ready to run.

    ``close()`` (or ``with``) releases the graph and every session at once;
    without it they are released when the last reference to the model and
    its sessions goes.

    Example::

        from wasinn import Model

        with Model.load("/app/model/digits.xml") as model:
            print(model.inputs)  # [TensorSpec(name='image', shape=(None, 1, 8, 8), ...)]
            out = model.run({"image": pixels})
            print(out["probs"].topk(3))  # [(7, 0.98), (1, 0.01), (9, 0.004)]
    """

    _kind = "model"
    _graph: _Graph
    _default: Session
    name: str
    encoding: str
    target: str | None
    skipped_targets: list[tuple[str, str]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("create models with Model.load(...) or Model.load_by_name(...)")

    @classmethod
    def _create(
        cls,
        host: Host,
        handle: Handle,
        name: str,
        encoding: str,
        target: str | None,
        skipped: list[tuple[str, str]],
        inputs: list[TensorSpec] | None,
        outputs: list[TensorSpec] | None,
        metadata: dict[str, str],
        plan: rewrite.Plan = rewrite.NOTHING,
        states: list[str] | None = None,
    ) -> Model:
        self = object.__new__(cls)
        self._graph = _Graph(handle, host.layer, name, inputs, outputs, metadata, plan, states)
        self._closed = False
        self.name = name
        self.encoding = encoding
        self.target = target
        self.skipped_targets = skipped
        try:
            self._default = Session(self)
        except BaseException:
            self.close()
            raise
        return self

    @classmethod
    def load(
        cls,
        source: Source,
        *,
        encoding: str | None = None,
        target: str | Sequence[str] = "cpu",
        preprocess: fuse.Preprocess | None = None,
        postprocess: fuse.Postprocess | None = None,
        outputs: Sequence[str] | None = None,
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

        ``preprocess`` and ``postprocess`` splice array math into an ONNX
        or OpenVINO IR model, so that the host runs it with the model and the
        tensors in between never come back to the guest. ``preprocess(b)``
        gets a builder (every ``GraphBuilder`` operation; no ``build``, which
        is ``Model.load``'s job here), declares the new inputs and returns, by
        model input name, what feeds them; ``postprocess(b, outputs)`` gets
        the model's outputs as operands and returns the new outputs.
        ``model.inputs`` and ``model.outputs`` then describe the new
        signature. The processing is written as ONNX opset 18 (into IR, as
        the layers OpenVINO makes of it); an ONNX model importing an opset
        where its operators differ raises ``FusionError``::

            def pre(b):
                image = b.input("image", shape=[480, 640, 3], dtype="u8")
                x = b.transpose(b.cast(image, "f32") / 255.0, permutation=[2, 0, 1])
                return {"x": b.reshape(x, [1, 3, 480, 640])}

            model = Model.load("det.onnx", preprocess=pre)
            model.run({"image": Tensor(pixels, shape=(480, 640, 3), dtype="u8")})

        ``outputs`` names the outputs to keep (of the post-processing, if
        any, else of the model; ONNX and IR only): the others are removed
        before the host compiles the model, so the work only they need is
        never done. ``run(outputs=...)`` only picks among the outputs the
        host computed: wasi-nn's compute runs the whole graph::

            mask_only = Model.load("selfie.xml", outputs=["segment"])

        Example::

            model = Model.load("/app/model/digits.xml", target=["gpu", "cpu"])
            model.target           # 'cpu' on a machine without a GPU
            model.skipped_targets  # [('gpu', 'loading digits.xml on gpu failed [...]: ...')]
        """
        prepared = prepare(source, encoding, preprocess, postprocess, outputs)
        return load(prepared, default_host(), target)

    @classmethod
    def load_by_name(cls, name: str, *, metadata: Source | None = None) -> Model:
        """Load a model the host registered under ``name``.

        With the wasmtime CLI, ``-S nn-graph=openvino::DIR`` registers
        ``DIR/model.xml`` and ``DIR/model.bin`` under the name
        ``basename(DIR)``. The host reveals nothing about such a model, so
        without ``metadata`` ``inputs`` and ``outputs`` are ``None``: pass
        inputs as a mapping and expect outputs named "0", "1", ...

        ``metadata`` describes the model from a local copy: the path of its IR
        ``.xml`` (the ``.bin`` is not read) or ``.onnx``, or those bytes. The
        model then has real ``inputs``, ``outputs`` and ``metadata``, its
        outputs come back under their real names and its inputs are checked,
        as with ``Model.load``. The copy must describe the model the host
        loaded: the host cannot be asked, so wasinn cannot tell.

        Preloading pays off when a long-lived instance loads the model once
        (``wasmtime run``, or ``wasmtime serve`` with instance reuse) and the
        host, not the guest, should hold the model file. ``wasmtime serve``
        loads and compiles every preloaded model again for each new instance,
        even for requests that never use it (with a fresh instance per request,
        every request); there ``Model.load`` on first use is cheaper.

        Example::

            model = Model.load_by_name("digits", metadata="/app/model/digits.xml")
            out = model.run({"image": pixels})["probs"]
        """
        if not isinstance(name, str) or not name:
            raise ValidationError(f"load_by_name needs a non-empty model name, not {name!r}")
        described = describe.describe(metadata) if metadata is not None else None
        host = default_host()
        graph = host.load_by_name(name, f"loading the host's model {name!r}")
        if described is None:
            return cls._create(host, graph, name, "by-name", None, [], None, None, {})
        return cls._create(
            host,
            graph,
            name,
            "by-name",
            None,
            [],
            described.inputs,
            described.outputs,
            described.metadata,
            rewrite.unrewritten(described.outputs),
            described.states,
        )

    # ------------------------------------------------------------ metadata

    @property
    def inputs(self) -> list[TensorSpec] | None:
        """The model's inputs in order (``None`` when the model came by name)."""
        inputs = self._graph.inputs
        return list(inputs) if inputs is not None else None

    @property
    def outputs(self) -> list[TensorSpec] | None:
        """The model's outputs in order, as the model declares them (``None``
        when the model came by name).

        A declaration can be wrong (an ONNX file with stale shapes): the
        tensors ``run`` returns always carry the shape and dtype the host
        computed, whatever is declared here.
        """
        outputs = self._graph.outputs
        return list(outputs) if outputs is not None else None

    @property
    def metadata(self) -> dict[str, str]:
        """The model's own key-value metadata: ONNX ``metadata_props`` or
        OpenVINO IR ``rt_info``; empty when it has none or came by name.

        Example::

            model = Model.load("/models/rec.onnx")
            characters = model.metadata["character"].splitlines()
        """
        return dict(self._graph.metadata)

    @property
    def states(self) -> list[str] | None:
        """The ids of the model's state variables: an OpenVINO IR's ``ReadValue``
        layers, such as a decoder's KV cache kept in the infer request. ``[]``
        for a stateless model, ``None`` when unknown (a model by name without
        ``metadata``, or a format wasinn does not read).

        The host keeps a stateful model's state in each execution context: every
        ``session()`` starts from the model's initial state, and each ``run`` of
        that session continues from where the last one left it (the model's own
        ``run`` uses its default session, so it accumulates too). A model's
        state cannot be read or reset through wasi-nn; start a new session.

        Example::

            llm = Model.load_by_name("gemma3-fast", metadata="/models/gemma3/gemma3-fast/model.xml")
            assert llm.states, "the KV cache must live in the host's state"
            with llm.session() as generation:
                first = generation.run({"input_ids": prompt_ids, ...})
        """
        states = self._graph.states
        return list(states) if states is not None else None

    # ------------------------------------------------------------ running

    def run(self, inputs: Feeds, *, outputs: Sequence[str] | None = None) -> dict[str, Tensor]:
        """Run the model once and return its outputs by their real names.

        ``inputs`` is a mapping of input name to tensor-like, a list with one
        tensor-like per input in model order, or a single tensor-like for a
        model with one input. A tensor-like is a ``Tensor``, raw ``bytes``
        (taken as the input's dtype and static shape), an ``array.array``,
        nested lists, a number or a numpy array; all but ``Tensor`` are
        converted to the input's dtype (a numpy array in C, and an integer
        input refuses fractions and out-of-range values), and flat data fills
        a static shape of the same size. Names, dtypes and shapes are checked
        before the host is called. ``run_numpy`` returns numpy arrays.

        ``outputs`` selects outputs by name (all by default); the result keeps
        that order. The same ``Tensor`` may be passed any number of times.

        Example::

            out = model.run({"x": Tensor([[1.0, 2.0]])}, outputs=["y"])
            out["y"].tolist()
        """
        self._check_open()
        return self._default.run(inputs, outputs=outputs)

    def run_numpy(
        self, inputs: Feeds, *, outputs: Sequence[str] | None = None
    ) -> dict[str, NDArray[Any]]:
        """``run``, with each output as a numpy array, for numpy code.

        Inputs are those of ``run`` (numpy arrays, Tensors, ...). Each output
        is a zero-copy, read-only view of the bytes the host returned (copy
        one with ``a.copy()`` or ``np.array(a)`` to write into it); a bf16
        output raises ValidationError unless the app imported ml_dtypes.
        numpy is imported on first use (ImportError saying what to do if it
        is missing); wasinn works without it.

        Why a method and not a keyword of ``run``: like onnxruntime, whose
        ``InferenceSession.run`` gives numpy arrays and
        ``run_with_ort_values`` its own values, the kind of result is the
        method's name, and each has one return type. The result is still a
        dict by output name (onnxruntime's is a list in output order:
        ``list(model.run_numpy(x).values())``). ``run``'s Tensors convert
        too, zero-copy: ``np.asarray(out["probs"])``.

        Example::

            import numpy as np

            probs = model.run_numpy({"image": batch})["probs"]   # float32 (n, 10)
            labels = probs.argmax(axis=1)
        """
        self._check_open()
        return self._default.run_numpy(inputs, outputs=outputs)

    def session(self) -> Session:
        """A new independent execution context (see ``Session``)."""
        self._check_open()
        return Session(self)

    def stateful(
        self, feedback: Mapping[str, str], initial: Mapping[str, TensorLike] | None = None
    ) -> StatefulSession:
        """A new session that feeds outputs back into inputs (see ``StatefulSession``)."""
        self._check_open()
        return StatefulSession(self, feedback, initial)

    def close(self) -> None:
        """Release the graph and every session now. Safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        self._graph.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"target={self.target!r}"
        return f"<wasinn.Model {self.name!r} encoding={self.encoding!r} {state}>"


def load(prepared: Prepared, host: Host, target: str | Sequence[str] = "cpu") -> Model:
    """Load a prepared model on ``host`` (see ``Model.load`` for ``target``).

    Example (a unit test, with a fake host handed in)::

        model = load(prepare(onnx_bytes), Host(FakeHost()))
    """
    loaded = host.load(prepared.parts, prepared.encoding, targets(target), prepared.label)
    return Model._create(
        host, loaded.handle, prepared.label, loaded.encoding, loaded.target, loaded.skipped,
        prepared.inputs, prepared.outputs, prepared.metadata, prepared.plan, prepared.states,
    )  # fmt: skip


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
