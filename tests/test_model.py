"""Model/Session logic natively, against the dependency-free fake host.

These check library logic only: which calls reach the host, in what form,
and what the user gets back. They need nothing but pytest (fake_host.py runs
the pure-Python models of toy_models.py). test_model_openvino.py runs the
same models on OpenVINO; test_guest_api.py runs real components.
"""

from __future__ import annotations

import array
import contextlib
import gc
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_host import FakeHost
from toy_models import MATRIX, all_models

import wasinn
from wasinn import ClosedError, Model, Tensor, ValidationError
from wasinn._host import host as host_module

X_ROWS = [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
X = Tensor(X_ROWS)
Y = Tensor([[1.0] * 3] * 2)
X_PLUS_Y = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
X_TIMES_M = [
    [sum(X_ROWS[r][i] * MATRIX[i][c] for i in range(3)) for c in range(4)] for r in range(2)
]


def loads(host: FakeHost, since: int = 0) -> list[tuple[str, str, int]]:
    """(encoding, target, number of builders) of each load call."""
    return [c[1:] for c in host.calls[since:] if c[0] == "load"]


@contextlib.contextmanager
def using(host: FakeHost | None) -> Iterator[None]:
    """Point wasinn at ``host`` inside the block."""
    previous = host_module.use_default(host)
    try:
        yield
    finally:
        host_module.use_default(previous)


# ---------------------------------------------------------------- running


def test_outputs_come_back_under_their_real_names(fake_host: FakeHost, toy_dir: Path) -> None:
    with Model.load(toy_dir / "two.xml") as model:
        out = model.run({"x": X, "y": Y})
        assert list(out) == ["prod", "sum"]
        assert out["prod"].tolist() == X_TIMES_M
        assert out["sum"].tolist() == X_PLUS_Y
        only = model.run({"x": X, "y": Y}, outputs=["sum"])
        assert list(only) == ["sum"]
        assert list(model.run({"x": X, "y": Y}, outputs="sum")) == ["sum"]
        reordered = model.run({"x": X, "y": Y}, outputs=["sum", "prod"])
        assert list(reordered) == ["sum", "prod"]
        # Positional inputs follow the model's input order: y, then x.
        assert model.run([Y, X])["prod"].tolist() == X_TIMES_M
        ones_times_m = [sum(MATRIX[i][c] for i in range(3)) for c in range(4)]
        assert model.run([X, Y])["prod"].tolist() == [ones_times_m] * 2
    host_inputs = [c[2] for c in fake_host.calls if c[0] == "compute"]
    assert host_inputs[0] == [("y", (2, 3), "f32"), ("x", (2, 3), "f32")], "sent in model order"


def test_metadata_and_defaults(fake_host: FakeHost, toy_dir: Path) -> None:
    model = Model.load(str(toy_dir / "two.xml"))
    assert [s.name for s in model.inputs] == ["y", "x"]
    assert [str(s) for s in model.outputs] == ["prod: f32[2, 4]", "sum: f32[2, 3]"]
    assert (model.target, model.encoding, model.skipped_targets) == ("cpu", "openvino", [])
    assert model.name == "two.xml" and not model.closed
    assert repr(model) == "<wasinn.Model 'two.xml' encoding='openvino' target='cpu'>"
    model.inputs.clear()  # a copy: the model's own metadata is untouched
    assert len(model.inputs) == 2
    model.close()
    assert repr(model) == "<wasinn.Model 'two.xml' encoding='openvino' closed>"


def test_validation_happens_before_any_host_call(fake_host: FakeHost, toy_dir: Path) -> None:
    model = Model.load(toy_dir / "two.xml")
    before = list(fake_host.calls)
    cases = [
        ({"x": X, "y": Y, "z": X}, "unknown input 'z'; the model's inputs are: 'y', 'x'"),
        ({"x": X}, "missing input 'y'; the model needs all of: 'y', 'x'"),
        (
            {"x": X.astype("f64"), "y": Y},
            "input 'x' must be f32, got f64; convert it with tensor.astype",
        ),
        (
            {"x": X.reshape(3, 2), "y": Y},
            r"input 'x' has shape \[3, 2\], but the model wants \[2, 3\]",
        ),
        ({"x": Tensor(X_ROWS[0]), "y": Y}, r"input 'x' has shape \[3\]"),
        ({"x": bytes(20), "y": Y}, "20 bytes of data do not fill shape"),
        ({"x": Tensor(1.0), "y": Y}, "is a scalar"),
        ({"x": [[1.5, "a", 0.0], [0.0, 0.0, 0.0]], "y": Y}, "input 'x': "),
        ([X], "1 inputs given by position, but the model has 2"),
        (X, "a single tensor was given, but the model has 2 inputs"),
    ]
    for feed, message in cases:
        with pytest.raises(ValidationError, match=message):
            model.run(feed)
    with pytest.raises(
        ValidationError, match="unknown output 'nope'; the model's outputs are: 'prod', 'sum'"
    ):
        model.run({"x": X, "y": Y}, outputs=["nope"])
    assert fake_host.calls == before


def test_models_that_cannot_run_here_say_so_before_the_host(
    fake_host: FakeHost, toy_dir: Path
) -> None:
    # (Scalar inputs now run: wasinn rewrites the model, see test_rewrite.py.)
    # A model with an input of any rank: OpenVINO's CPU plugin cannot compile it.
    with pytest.raises(wasinn.BackendRuntimeError, match="loading any_rank.xml on cpu failed"):
        Model.load(toy_dir / "any_rank.xml")
    assert not fake_host.live


def test_tensor_likes_are_converted_to_the_model_dtype(fake_host: FakeHost, toy_dir: Path) -> None:
    model = Model.load(toy_dir / "two.xml")
    flat = array.array("d", range(6))  # f64 values, flat: converted and reshaped
    out = model.run({"x": flat, "y": X.tobytes()})
    assert out["sum"].tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]
    nested = model.run({"x": X_ROWS, "y": [[1, 1, 1], [1, 1, 1]]})
    assert nested["sum"].tolist() == X_PLUS_Y
    with pytest.raises(ValidationError, match="input 'x' must be f32, got i64"):
        model.run({"x": Tensor([[0, 1, 2], [3, 4, 5]]), "y": Y})  # a Tensor is never converted


def test_dynamic_shapes_accept_any_size(fake_host: FakeHost, toy_dir: Path) -> None:
    model = Model.load(toy_dir / "dynamic.xml")
    assert model.inputs[0].shape == (None, 4)
    for rows in (1, 5):
        out = model.run(Tensor([[1.0] * 4] * rows))
        assert out["scaled"].shape == (rows, 4)
        assert out["scaled"].tolist() == [[2.0] * 4] * rows
    with pytest.raises(ValidationError, match="raw bytes cannot fill the dynamic shape"):
        model.run(bytes(16))
    with pytest.raises(ValidationError, match=r"has shape \[2, 3\], but the model wants \[\?, 4\]"):
        model.run(Tensor([[1.0] * 3] * 2))


def test_same_tensor_can_be_passed_many_times(fake_host: FakeHost, toy_dir: Path) -> None:
    model = Model.load(toy_dir / "two.xml")
    results = [model.run({"x": X, "y": X})["sum"].tolist() for _ in range(3)]
    assert results == [[[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]] * 3
    assert X.tolist() == X_ROWS, "the host must not consume the caller's tensor"


# ---------------------------------------------------------------- lifetimes


def test_close_twice_and_use_after_close(fake_host: FakeHost, toy_dir: Path) -> None:
    model = Model.load(toy_dir / "two.xml")
    session = model.session()
    model.close()
    model.close()
    assert model.closed and session.closed
    assert not fake_host.live, "graph and contexts must all be released"
    assert sorted(fake_host.released) == ["context", "context", "graph"]
    assert fake_host.released[-1] == "graph", "contexts go before their graph"
    with pytest.raises(ClosedError, match="model is closed"):
        model.run({"x": X, "y": Y})
    with pytest.raises(ClosedError, match="session is closed"):
        session.run({"x": X, "y": Y})
    with pytest.raises(ClosedError):
        model.session()
    with pytest.raises(ClosedError):
        model.stateful({"hN": "h"})
    with pytest.raises(ClosedError):
        with model:
            pass
    session.close()
    with Model.load(toy_dir / "two.xml") as m:
        with m.session() as s:
            s.run({"x": X, "y": Y})
        assert s.closed and not m.closed
    assert m.closed and not fake_host.live


def test_reference_counting_alone_releases_contexts_then_the_graph(
    fake_host: FakeHost, toy_dir: Path
) -> None:
    gc.disable()  # prove that no reference cycle needs the collector
    try:
        model = Model.load(toy_dir / "two.xml")
        model.run({"x": X, "y": Y})
        del model
        assert not fake_host.live, "del model must release its context and graph at once"
        assert fake_host.released == ["context", "graph"]

        # A session the user keeps outlives the model object, and keeps its graph.
        model = Model.load(toy_dir / "two.xml")
        session = model.session()
        del model
        assert sorted(h.kind for h in fake_host.live) == ["context", "graph"]
        assert session.run({"x": X, "y": Y})["sum"].tolist() == X_PLUS_Y
        fake_host.released.clear()
        del session
        assert not fake_host.live
        assert fake_host.released == ["context", "graph"], "a context goes before its graph"

        # The usual one-liner for a stream: the stateful session keeps the model's graph.
        acc = Model.load(toy_dir / "acc.xml").stateful({"hN": "h"})
        assert acc.run({"x": [[1.0, 2.0]]})["total"].tolist() == [[1.0, 2.0]]
        fake_host.released.clear()
        del acc
        assert not fake_host.live
        assert fake_host.released == ["context", "graph"]
    finally:
        gc.enable()


def test_sessions_are_independent_contexts(fake_host: FakeHost, toy_dir: Path) -> None:
    model = Model.load(toy_dir / "two.xml")
    a, b = model.session(), model.session()
    assert a.run({"x": X, "y": Y})["sum"].tolist() == X_PLUS_Y
    assert b.run({"x": Y, "y": Y})["sum"].tolist() == [[2.0] * 3] * 2
    assert model.run({"x": X, "y": Y})["sum"].tolist() == X_PLUS_Y
    assert sum(1 for c in fake_host.calls if c[0] == "init_context") == 3
    contexts = [c[1] for c in fake_host.calls if c[0] == "compute"]
    assert len(set(contexts)) == 3, "each session computes on its own context"
    a.close()
    assert a.closed and not b.closed
    assert model.run({"x": X, "y": Y})["sum"].tolist() == X_PLUS_Y
    assert b.run({"x": X, "y": Y})["sum"].tolist() == X_PLUS_Y
    model.close()
    assert b.closed and not fake_host.live


def test_host_failures_release_what_was_created(fake_host: FakeHost, toy_dir: Path) -> None:
    fake_host.fail_next["context"] = ("runtime-error", "Failed while accessing backend")
    with pytest.raises(wasinn.BackendRuntimeError, match="starting a session for two.xml"):
        Model.load(toy_dir / "two.xml")
    assert not fake_host.live and fake_host.released == ["graph"]
    model = Model.load(toy_dir / "two.xml")
    fake_host.fail_next["compute"] = ("too-large", "tensor too large")
    with pytest.raises(wasinn.TooLargeError, match="running two.xml failed"):
        model.run({"x": X, "y": Y})
    assert model.run({"x": X, "y": Y})["sum"].tolist() == X_PLUS_Y, (
        "a failed run leaves the model usable"
    )


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        ("invalid-argument", wasinn.InvalidArgumentError),
        ("timeout", wasinn.OperationTimeoutError),
        ("unsupported-operation", wasinn.UnsupportedOperationError),
        ("security", wasinn.SecurityError),
        ("unknown", wasinn.UnknownError),
    ],
)
def test_host_error_codes_reach_the_user_as_their_classes(
    fake_host: FakeHost, toy_dir: Path, code: str, cls: type[wasinn.WasiNNError]
) -> None:
    fake_host.fail_next["load"] = (code, "the host's own words")
    with pytest.raises(cls) as info:
        Model.load(toy_dir / "two.xml")
    assert info.value.code == code and info.value.host_message == "the host's own words"
    assert "loading two.xml on cpu failed" in str(info.value)
    model = Model.load(toy_dir / "two.xml")
    fake_host.fail_next["compute"] = (code, "again")
    with pytest.raises(cls, match="running two.xml failed"):
        model.run({"x": X, "y": Y})


def test_no_host_outside_a_component(toy_dir: Path) -> None:
    with using(None):
        with pytest.raises(
            wasinn.WasiNNError, match="only reachable inside a WebAssembly component"
        ):
            Model.load(toy_dir / "two.xml")
        with pytest.raises(
            wasinn.WasiNNError, match="only reachable inside a WebAssembly component"
        ):
            Model.load_by_name("two")
    with pytest.raises(TypeError, match="Model.load"):
        Model()


# ---------------------------------------------------------------- targets, encodings, sources


def test_target_fallback_and_tpu_never_reaches_the_host(fake_host: FakeHost, toy_dir: Path) -> None:
    model = Model.load(toy_dir / "two.xml", target=["tpu", "gpu", "cpu"])
    assert model.target == "cpu"
    assert [t for t, _ in model.skipped_targets] == ["tpu", "gpu"]
    assert "aborts the host process" in model.skipped_targets[0][1]
    assert "runtime-error" in model.skipped_targets[1][1]
    assert [c[1] for c in loads(fake_host)] == ["gpu", "cpu"]
    assert Model.load(toy_dir / "two.xml", target="CPU").target == "cpu"
    before = len(fake_host.calls)
    with pytest.raises(ValidationError, match="'tpu' cannot be used with OpenVINO"):
        Model.load(toy_dir / "two.xml", target="tpu")
    with pytest.raises(wasinn.BackendRuntimeError, match="loading two.xml on gpu failed"):
        Model.load(toy_dir / "two.xml", target="gpu")
    with pytest.raises(wasinn.BackendRuntimeError, match="no target could load two.xml") as info:
        Model.load(toy_dir / "two.xml", target=["tpu", "gpu"])
    assert "tpu: skipped" in str(info.value) and "gpu: loading two.xml on gpu failed" in str(
        info.value
    )
    for bad, message in (("npu", "unknown target 'npu'"), ([], "target list is empty"),
                         (["cpu", 3], "unknown target 3")):  # fmt: skip
        with pytest.raises(ValidationError, match=message):
            Model.load(toy_dir / "two.xml", target=bad)
    assert [c[1] for c in loads(fake_host, before)] == ["gpu", "gpu"], "only gpu reached the host"
    assert not [h for h in fake_host.live if h.kind == "graph" and h.model.name != "two"]


def test_onnx_is_retried_through_openvino(fake_host: FakeHost, toy_dir: Path) -> None:
    model = Model.load(toy_dir / "add_mul.onnx")
    assert loads(fake_host) == [("onnx", "cpu", 1), ("openvino", "cpu", 2)]
    assert model.encoding == "openvino"
    assert [str(s) for s in model.inputs] == ["a: f32[2, 2]", "b: f32[2, 2]"]
    assert [s.name for s in model.outputs] == ["total", "scaled"]
    a = Tensor([[1.0, 2.0], [3.0, 4.0]])
    out = model.run({"a": a, "b": a})
    assert list(out) == ["total", "scaled"]
    assert [t.tolist() for t in out.values()] == [
        [[2.0, 4.0], [6.0, 8.0]],
        [[3.0, 6.0], [9.0, 12.0]],
    ]
    # The host's lack of an ONNX backend is remembered: no second failing call.
    before = len(fake_host.calls)
    again = Model.load((toy_dir / "add_mul.onnx").read_bytes())
    assert loads(fake_host, before) == [("openvino", "cpu", 2)]
    assert again.encoding == "openvino"
    # Asked for explicitly, ONNX goes the same way.
    assert (
        Model.load((toy_dir / "add_mul.onnx").read_bytes(), encoding="onnx").encoding == "openvino"
    )


def test_a_new_host_is_asked_about_onnx_again(toy_dir: Path) -> None:
    for _ in range(2):
        host = FakeHost()
        with using(host):
            Model.load(toy_dir / "add_mul.onnx")
        assert [c[0] for c in loads(host)] == ["onnx", "openvino"]


def test_sources_and_encodings(fake_host: FakeHost, toy_dir: Path, tmp_path: Path) -> None:
    before = len(fake_host.calls)
    xml = (toy_dir / "two.xml").read_bytes()
    weights = (toy_dir / "two.bin").read_bytes()
    assert Model.load([xml, weights]).outputs[0].name == "prod"
    assert Model.load((bytearray(xml), memoryview(weights))).name == "the model parts"
    with pytest.raises(wasinn.ModelFormatError, match="the .bin is truncated"):
        Model.load([xml, weights[:10]])
    with pytest.raises(wasinn.ModelFormatError, match="cannot tell what kind of model"):
        Model.load(b"hello")
    onnx_bytes = (toy_dir / "add_mul.onnx").read_bytes()
    with pytest.raises(wasinn.ModelFormatError, match="truncated"):
        Model.load(onnx_bytes[:-7])
    with pytest.raises(wasinn.ModelFormatError, match="is empty"):
        Model.load(b"", encoding="onnx")
    with pytest.raises(ValidationError, match="unknown encoding 'caffe'"):
        Model.load(xml, encoding="caffe")
    with pytest.raises(wasinn.InvalidEncodingError, match="unable to find a backend"):
        Model.load(xml, encoding="tensorflow")
    with pytest.raises(FileNotFoundError, match="model file not found"):
        Model.load(tmp_path / "missing.xml")
    (tmp_path / "lonely.xml").write_bytes(xml)
    with pytest.raises(FileNotFoundError, match="needs 48 bytes of weights from lonely.bin"):
        Model.load(tmp_path / "lonely.xml")
    with pytest.raises(ValidationError, match="cannot load a model from int"):
        Model.load(42)  # type: ignore[arg-type]
    assert [c[0] for c in loads(fake_host, before)] == ["openvino", "openvino", "tensorflow"], (
        "bad models must not reach the host"
    )


def test_load_by_name_has_no_metadata(toy_dir: Path) -> None:
    host = FakeHost(registry={"two": all_models()["two"]})
    with using(host):
        model = Model.load_by_name("two")
        assert model.inputs is None and model.outputs is None and model.target is None
        assert (model.encoding, model.name, model.metadata) == ("by-name", "two", {})
        out = model.run({"x": X, "y": Y})
        assert list(out) == ["0", "1"]
        assert out["1"].tolist() == X_PLUS_Y
        assert list(model.run({"x": X, "y": Y}, outputs=["1"])) == ["1"]
        with pytest.raises(
            ValidationError, match="unknown output '2'; the model produced: '0', '1'"
        ):
            model.run({"x": X, "y": Y}, outputs=["2"])
        with pytest.raises(ValidationError, match="pass inputs as a mapping"):
            model.run([X, Y])
        # Without metadata nothing is checked in the guest: the host's opaque error it is.
        with pytest.raises(wasinn.BackendRuntimeError, match="running two failed"):
            model.run({"x": X, "y": Y, "z": X})
        with pytest.raises(wasinn.BackendRuntimeError, match="running two failed"):
            model.run({"x": X.astype("f64"), "y": Y})
        with pytest.raises(wasinn.NotFoundError, match="model 'nope'"):
            Model.load_by_name("nope")
        for bad in ("", None, 3):
            with pytest.raises(ValidationError, match="needs a non-empty model name"):
                Model.load_by_name(bad)  # type: ignore[arg-type]
    assert [c for c in host.calls if c[0] == "load_by_name"] == [
        ("load_by_name", "two"),
        ("load_by_name", "nope"),
    ]


# ---------------------------------------------------------------- stateful sessions


def test_stateful_session_feeds_outputs_back(fake_host: FakeHost, toy_dir: Path) -> None:
    model = Model.load(toy_dir / "acc.xml")
    acc = model.stateful({"hN": "h"})
    assert acc.state["h"].tolist() == [[0.0, 0.0]]
    totals = [acc.run({"x": [[1.0, 2.0]]})["total"].tolist() for _ in range(3)]
    assert totals == [[[1.0, 2.0]], [[2.0, 4.0]], [[3.0, 6.0]]]
    assert list(acc.run({"x": [[0.0, 0.0]]}, outputs=["total"])) == ["total"]
    acc.reset()
    assert acc.run({"x": [[5.0, 5.0]]})["total"].tolist() == [[5.0, 5.0]]
    start = model.stateful({"hN": "h"}, initial={"h": Tensor([[10.0, 10.0]])})
    assert start.run({"x": [[1.0, 1.0]]})["total"].tolist() == [[11.0, 11.0]]
    listed = model.stateful({"hN": "h"}, initial={"h": [[1.0, 1.0]]})
    assert listed.run({"x": [[1.0, 1.0]]})["total"].tolist() == [[2.0, 2.0]]
    with pytest.raises(ValidationError, match="is fed from the model's own output"):
        acc.run({"x": [[1.0, 1.0]], "h": [[0.0, 0.0]]})
    with pytest.raises(ValidationError, match="takes its inputs as a mapping"):
        acc.run([[1.0, 1.0]])
    with pytest.raises(ValidationError, match="'nope' is not an output"):
        model.stateful({"nope": "h"})
    with pytest.raises(ValidationError, match="'q' is not an input"):
        model.stateful({"hN": "q"})
    with pytest.raises(ValidationError, match="needs at least one output -> input pair"):
        model.stateful({})
    state = acc.state["h"].tolist()
    with pytest.raises(ValidationError, match="input 'x'"):
        acc.run({"x": [[1.0, 2.0, 3.0]]})
    assert acc.state["h"].tolist() == state, "a failed run leaves the state alone"
    model.close()
    assert acc.closed and start.closed and not fake_host.live


def test_stateful_without_metadata_checks_feedback_before_touching_state(toy_dir: Path) -> None:
    host = FakeHost(registry={"acc": all_models()["acc"]})
    with using(host):
        model = Model.load_by_name("acc")
        with pytest.raises(ValidationError, match="give an initial value for 'h'"):
            model.stateful({"1": "h"})
        wrong = model.stateful({"wrong": "h"}, initial={"h": [[3.0, 4.0]]})
        before = wrong.state
        with pytest.raises(ValidationError) as info:
            wrong.run({"x": [[1.0, 2.0]]})
        assert str(info.value) == (
            "stateful(): the model produced no output 'wrong' to feed back; its outputs are: "
            "'0', '1' (the state is unchanged)"
        )
        assert {k: v.tolist() for k, v in wrong.state.items()} == {
            k: v.tolist() for k, v in before.items()
        }
        right = model.stateful({"1": "h"}, initial={"h": [[0.0, 0.0]]})
        right.run({"x": [[1.0, 2.0]]})
        assert right.run({"x": [[1.0, 2.0]]})["0"].tolist() == [[2.0, 4.0]]
        model.close()
    assert not host.live


# ---------------------------------------------------------------- the hostcall limit


def test_inputs_over_the_hostcall_limit_are_refused(
    fake_host: FakeHost, toy_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wasinn import _limits

    model = Model.load(toy_dir / "passthrough.xml")
    monkeypatch.setattr(_limits, "DEFAULT_HOSTCALL_FUEL", 1024)
    before = len(fake_host.calls)
    with pytest.raises(wasinn.TooLargeError, match=r"input 'x' is 0.0 MiB, more than the 0 MiB"):
        model.run(Tensor.zeros((512,)))
    assert len(fake_host.calls) == before, "nothing may reach the host"
    assert model.run(Tensor.zeros((256,)))["x"].shape == (256,), "1024 bytes is within the limit"
    monkeypatch.setenv("WASINN_HOSTCALL_FUEL", "4096")
    assert model.run(Tensor.zeros((512,)))["x"].shape == (512,)
    monkeypatch.setenv("WASINN_HOSTCALL_FUEL", "lots")
    with pytest.raises(ValidationError, match="is not a number of bytes"):
        model.run(Tensor.zeros((512,)))
    monkeypatch.delenv("WASINN_HOSTCALL_FUEL")
    before = len(fake_host.calls)
    with pytest.raises(wasinn.TooLargeError, match="two.xml is"):
        Model.load(toy_dir / "two.xml")
    assert len(fake_host.calls) == before, "nor may the model"
