"""Model/Session logic natively, against the fake host (tests/fake_host.py).

These check library logic only: which calls reach the host, in what form,
and what the user gets back. The real host is exercised in test_guest_api.py.
"""

from __future__ import annotations

import array
from pathlib import Path

import numpy as np
import pytest

import wasinn
from fake_host import FakeHost
from models import MATRIX
from wasinn import ClosedError, Model, Tensor, ValidationError

X = np.arange(6, dtype=np.float32).reshape(2, 3)
Y = np.ones((2, 3), np.float32)


def test_outputs_come_back_under_their_real_names(fake_host: FakeHost, model_dir: Path) -> None:
    with Model.load(model_dir / "two.xml") as model:
        out = model.run({"x": X, "y": Y})
        assert list(out) == ["prod", "sum"]
        np.testing.assert_allclose(out["prod"].tolist(), X @ MATRIX, rtol=1e-6)
        assert out["sum"].tolist() == (X + Y).tolist()
        only = model.run({"x": X, "y": Y}, outputs=["sum"])
        assert list(only) == ["sum"]
        # Positional inputs follow the model's input order: y, then x.
        assert model.run([Y, X])["sum"].tolist() == (X + Y).tolist()


def test_metadata_and_defaults(fake_host: FakeHost, model_dir: Path) -> None:
    model = Model.load(str(model_dir / "two.xml"))
    assert [s.name for s in model.inputs] == ["y", "x"]
    assert [str(s) for s in model.outputs] == ["prod: f32[2, 4]", "sum: f32[2, 3]"]
    assert (model.target, model.encoding, model.skipped_targets) == ("cpu", "openvino", [])
    model.close()


def test_validation_happens_before_any_host_call(fake_host: FakeHost, model_dir: Path) -> None:
    model = Model.load(model_dir / "two.xml")
    before = list(fake_host.calls)
    cases = [
        ({"x": X, "y": Y, "z": X}, "unknown input 'z'; the model's inputs are: 'y', 'x'"),
        ({"x": X}, "missing input 'y'; the model needs all of: 'y', 'x'"),
        ({"x": Tensor(X.astype(np.float64)), "y": Y}, "input 'x' must be f32, got f64; convert it with tensor.astype"),
        ({"x": X.reshape(3, 2), "y": Y}, r"input 'x' has shape \[3, 2\], but the model wants \[2, 3\]"),
        ({"x": X[0], "y": Y}, r"input 'x' has shape \[3\]"),
        ({"x": bytes(20), "y": Y}, "20 bytes of data do not fill shape"),
        ({"x": Tensor(1.0), "y": Y}, "is a scalar"),
        ([X], "1 inputs given by position, but the model has 2"),
        (X, "a single tensor was given, but the model has 2 inputs"),
    ]
    for feed, message in cases:
        with pytest.raises(ValidationError, match=message):
            model.run(feed)
    with pytest.raises(ValidationError, match="unknown output 'nope'; the model's outputs are: 'prod', 'sum'"):
        model.run({"x": X, "y": Y}, outputs=["nope"])
    assert fake_host.calls == before


def test_tensor_likes_are_converted_to_the_model_dtype(fake_host: FakeHost, model_dir: Path) -> None:
    model = Model.load(model_dir / "two.xml")
    flat = array.array("d", range(6))  # f64 values, flat: converted and reshaped
    out = model.run({"x": flat, "y": X.tobytes()})
    assert out["sum"].tolist() == (X + X).tolist()
    nested = model.run({"x": X.tolist(), "y": [[1, 1, 1], [1, 1, 1]]})
    assert nested["sum"].tolist() == (X + Y).tolist()


def test_dynamic_shapes_accept_any_size(fake_host: FakeHost, model_dir: Path) -> None:
    model = Model.load(model_dir / "dynamic.xml")
    assert model.inputs[0].shape == (None, 4)
    for rows in (1, 5):
        out = model.run(Tensor([[1.0] * 4] * rows))
        assert out["scaled"].shape == (rows, 4)
    with pytest.raises(ValidationError, match="raw bytes cannot fill the dynamic shape"):
        model.run(bytes(16))


def test_same_tensor_can_be_passed_many_times(fake_host: FakeHost, model_dir: Path) -> None:
    model = Model.load(model_dir / "two.xml")
    x = Tensor(X)
    results = [model.run({"x": x, "y": x})["sum"].tolist() for _ in range(3)]
    assert results == [(X + X).tolist()] * 3


def test_close_twice_and_use_after_close(fake_host: FakeHost, model_dir: Path) -> None:
    model = Model.load(model_dir / "two.xml")
    session = model.session()
    model.close()
    model.close()
    assert model.closed and session.closed
    assert not fake_host.live, "graph and contexts must all be released"
    with pytest.raises(ClosedError, match="model is closed"):
        model.run({"x": X, "y": Y})
    with pytest.raises(ClosedError, match="session is closed"):
        session.run({"x": X, "y": Y})
    with pytest.raises(ClosedError):
        model.session()
    with Model.load(model_dir / "two.xml") as m:
        pass
    assert m.closed and not fake_host.live


def test_sessions_are_independent_contexts(fake_host: FakeHost, model_dir: Path) -> None:
    model = Model.load(model_dir / "two.xml")
    a, b = model.session(), model.session()
    assert a.run({"x": X, "y": Y})["sum"].tolist() == (X + Y).tolist()
    assert b.run({"x": Y, "y": Y})["sum"].tolist() == (Y + Y).tolist()
    assert sum(1 for c in fake_host.calls if c[0] == "init_context") == 3
    a.close()
    assert model.run({"x": X, "y": Y})["sum"].tolist() == (X + Y).tolist()
    model.close()


def test_target_fallback_and_tpu_never_reaches_the_host(fake_host: FakeHost, model_dir: Path) -> None:
    model = Model.load(model_dir / "two.xml", target=["tpu", "gpu", "cpu"])
    assert model.target == "cpu"
    assert [t for t, _ in model.skipped_targets] == ["tpu", "gpu"]
    assert "aborts the host process" in model.skipped_targets[0][1]
    assert "runtime-error" in model.skipped_targets[1][1]
    assert [c[2] for c in fake_host.calls if c[0] == "load"] == ["gpu", "cpu"]
    with pytest.raises(ValidationError, match="'tpu' cannot be used with OpenVINO"):
        Model.load(model_dir / "two.xml", target="tpu")
    with pytest.raises(wasinn.BackendRuntimeError, match="loading two.xml on gpu failed"):
        Model.load(model_dir / "two.xml", target="gpu")
    with pytest.raises(wasinn.BackendRuntimeError, match="no target could load two.xml"):
        Model.load(model_dir / "two.xml", target=["tpu", "gpu"])
    with pytest.raises(ValidationError, match="unknown target 'npu'"):
        Model.load(model_dir / "two.xml", target="npu")


def test_onnx_is_retried_through_openvino(fake_host: FakeHost, model_dir: Path) -> None:
    model = Model.load(model_dir / "add_mul.onnx")
    loads = [c for c in fake_host.calls if c[0] == "load"]
    assert loads == [("load", "onnx", "cpu", 1), ("load", "openvino", "cpu", 2)]
    assert model.encoding == "openvino"
    assert [str(s) for s in model.inputs] == ["a: f32[2, 2]", "b: f32[2, 2]"]
    assert [s.name for s in model.outputs] == ["total", "scaled"]
    a = Tensor([[1.0, 2.0], [3.0, 4.0]])
    out = model.run({"a": a, "b": a})
    assert list(out) == ["total", "scaled"]
    assert [t.tolist() for t in out.values()] == [[[2.0, 4.0], [6.0, 8.0]], [[3.0, 6.0], [9.0, 12.0]]]
    # The host's lack of an ONNX backend is remembered: no second failing call.
    Model.load((model_dir / "add_mul.onnx").read_bytes())
    assert [c[1] for c in fake_host.calls if c[0] == "load"][-1:] == ["openvino"]


def test_sources_and_encodings(fake_host: FakeHost, model_dir: Path, tmp_path: Path) -> None:
    before = len(fake_host.calls)
    xml = (model_dir / "two.xml").read_bytes()
    weights = (model_dir / "two.bin").read_bytes()
    assert Model.load([xml, weights]).outputs[0].name == "prod"
    with pytest.raises(wasinn.ModelFormatError, match="the .bin is truncated"):
        Model.load([xml, weights[:10]])
    with pytest.raises(wasinn.ModelFormatError, match="cannot tell what kind of model"):
        Model.load(b"hello")
    onnx_bytes = (model_dir / "add_mul.onnx").read_bytes()
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
    loads = [c for c in fake_host.calls[before:] if c[0] == "load"]
    assert [c[1] for c in loads] == ["openvino", "tensorflow"], "bad models must not reach the host"


def test_load_by_name_has_no_metadata(model_dir: Path) -> None:
    host = FakeHost({"two": ((model_dir / "two.xml").read_bytes(), (model_dir / "two.bin").read_bytes())})
    previous = wasinn._model._use_host(host)
    try:
        model = Model.load_by_name("two")
        assert model.inputs is None and model.outputs is None and model.target is None
        out = model.run({"x": X, "y": Y})
        assert list(out) == ["0", "1"]
        assert out["1"].tolist() == (X + Y).tolist()
        with pytest.raises(ValidationError, match="pass inputs as a mapping"):
            model.run([X, Y])
        with pytest.raises(wasinn.NotFoundError, match="model 'nope'"):
            Model.load_by_name("nope")
    finally:
        wasinn._model._use_host(previous)


def test_host_failures_release_what_was_created(fake_host: FakeHost, model_dir: Path) -> None:
    fake_host.fail_next["context"] = ("runtime-error", "Failed while accessing backend")
    with pytest.raises(wasinn.BackendRuntimeError, match="starting a session"):
        Model.load(model_dir / "two.xml")
    assert not fake_host.live
    model = Model.load(model_dir / "two.xml")
    fake_host.fail_next["compute"] = ("too-large", "tensor too large")
    with pytest.raises(wasinn.TooLargeError):
        model.run({"x": X, "y": Y})
    assert model.run({"x": X, "y": Y})["sum"].tolist() == (X + Y).tolist()


def test_no_host_outside_a_component(model_dir: Path) -> None:
    previous = wasinn._model._use_host(None)
    try:
        with pytest.raises(wasinn.WasiNNError, match="only reachable inside a WebAssembly component"):
            Model.load(model_dir / "two.xml")
    finally:
        wasinn._model._use_host(previous)
    with pytest.raises(TypeError, match="Model.load"):
        Model()


def test_stateful_session_feeds_outputs_back(fake_host: FakeHost, model_dir: Path) -> None:
    model = Model.load(model_dir / "acc.xml")
    acc = model.stateful({"hN": "h"})
    assert acc.state["h"].tolist() == [[0.0, 0.0]]
    totals = [acc.run({"x": [[1.0, 2.0]]})["total"].tolist() for _ in range(3)]
    assert totals == [[[1.0, 2.0]], [[2.0, 4.0]], [[3.0, 6.0]]]
    assert list(acc.run({"x": [[0.0, 0.0]]}, outputs=["total"])) == ["total"]
    acc.reset()
    assert acc.run({"x": [[5.0, 5.0]]})["total"].tolist() == [[5.0, 5.0]]
    start = model.stateful({"hN": "h"}, initial={"h": Tensor([[10.0, 10.0]])})
    assert start.run({"x": [[1.0, 1.0]]})["total"].tolist() == [[11.0, 11.0]]
    with pytest.raises(ValidationError, match="is fed from the model's own output"):
        acc.run({"x": [[1.0, 1.0]], "h": [[0.0, 0.0]]})
    with pytest.raises(ValidationError, match="'nope' is not an output"):
        model.stateful({"nope": "h"})
    with pytest.raises(ValidationError, match="'q' is not an input"):
        model.stateful({"hN": "q"})
    model.close()
    assert acc.closed and not fake_host.live


def test_inputs_over_the_hostcall_limit_are_refused(fake_host: FakeHost, model_dir: Path, monkeypatch) -> None:
    from wasinn import _limits

    model = Model.load(model_dir / "passthrough.xml")
    monkeypatch.setattr(_limits, "DEFAULT_HOSTCALL_FUEL", 1024)
    before = len(fake_host.calls)
    with pytest.raises(wasinn.TooLargeError, match=r"input 'x' is 0.0 MiB, more than the 0 MiB"):
        model.run(Tensor.zeros((512,)))
    assert len(fake_host.calls) == before, "nothing may reach the host"
    monkeypatch.setenv("WASINN_HOSTCALL_FUEL", "4096")
    assert model.run(Tensor.zeros((512,)))["x"].shape == (512,)
    monkeypatch.setenv("WASINN_HOSTCALL_FUEL", "lots")
    with pytest.raises(ValidationError, match="is not a number of bytes"):
        model.run(Tensor.zeros((512,)))
    monkeypatch.delenv("WASINN_HOSTCALL_FUEL")
    with pytest.raises(wasinn.TooLargeError, match="two.xml is"):
        Model.load(model_dir / "two.xml")
