"""Numeric checks natively: wasinn on the OpenVINO-backed host (ov_host.py).

The logic tests (test_model.py) trust the pure-Python models of
toy_models.py and the fake host that runs them. Here OpenVINO reads the same
bytes and computes: the models must be what they claim, and the fake must
answer the same misuse the way OpenVINO does. Then models written by
OpenVINO itself (models.py) run through wasinn with numpy as the oracle.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("openvino", reason="the numeric tests run models on OpenVINO")

import numpy as np  # noqa: E402
from fake_host import FakeHost  # noqa: E402
from models import MATRIX  # noqa: E402
from ov_host import OVHost  # noqa: E402
from toy_models import ToyModel, all_models  # noqa: E402

import wasinn  # noqa: E402
from wasinn import Model, Tensor, _errors  # noqa: E402
from wasinn._host import host as host_module  # noqa: E402

# Inputs for each toy model: small quarters, so f32 arithmetic is exact in any order.
TOY_INPUTS = {
    "two": {"x": [[0.25, -1.0, 2.0], [3.5, 4.0, -5.0]], "y": [[1.0, 0.5, -0.25], [8.0, 0.0, 2.0]]},
    "dynamic": {"v": [[1.0, -2.5, 3.0, 0.0]] * 3},
    "passthrough": {"x": [0.5, -0.0, 7.0, 1e30]},
    "acc": {"x": [[1.5, -2.0]], "h": [[0.25, 4.0]]},
    "add_mul": {"a": [[1.0, 2.0], [-3.0, 0.5]], "b": [[0.25, 0.5], [1.0, -1.0]]},
}


@pytest.mark.parametrize("name", sorted(TOY_INPUTS))
def test_toy_models_compute_on_openvino_what_the_fake_computes(
    ov_host: OVHost, toy_dir: Path, name: str
) -> None:
    toy = all_models()[name]
    feeds = {k: Tensor(v, dtype="f32") for k, v in TOY_INPUTS[name].items()}
    with Model.load(toy_dir / toy.filename) as model:
        assert [(s.name, s.shape, s.dtype) for s in model.inputs] == [
            (p.name, p.shape, p.dtype) for p in toy.inputs
        ]
        got = model.run(feeds)
    want = toy.compute(feeds)
    assert list(got) == [p.name for p in toy.outputs]
    for (out_name, tensor), expected in zip(got.items(), want, strict=False):
        assert (tensor.shape, tensor.dtype) == (expected.shape, expected.dtype), out_name
        assert tensor.tolist() == expected.tolist(), out_name


def test_toy_models_that_cannot_run_fail_on_openvino_too(ov_host: OVHost, toy_dir: Path) -> None:
    with pytest.raises(wasinn.BackendRuntimeError, match="loading any_rank.xml on cpu failed"):
        Model.load(toy_dir / "any_rank.xml")
    scalar = Model.load(toy_dir / "scalar.xml")  # rewritten to take its scalar as [1]
    assert scalar.run(2.0)["tripled"].tolist() == 6.0
    with pytest.raises(wasinn.ValidationError, match="wants a scalar"):
        scalar.run(Tensor([1.0]))
    scalar.close()
    assert not ov_host.live


def _host_error(host: object, call: str, *args: object) -> tuple[type[Exception], str | None]:
    try:
        handle = getattr(host, call)(*args, "doing it")
    except _errors.WasiNNError as exc:
        return type(exc), exc.host_message
    if call == "load":
        host.release(handle)  # type: ignore[attr-defined]
    return type(None), None  # type: ignore[return-value]


def _misuse(toy: ToyModel) -> list[tuple[str, tuple[object, ...]]]:
    xml, weights = toy.builders
    return [
        ("load", ([xml, weights], "onnx", "cpu")),
        ("load", ([xml, weights], "autodetect", "cpu")),
        ("load", ([xml], "openvino", "cpu")),
        ("load", ([xml, weights, b""], "openvino", "cpu")),
        ("load", ([xml, weights], "openvino", "gpu")),
        ("load", ([b"<net/>", b""], "openvino", "cpu")),
        ("load", ([xml, weights[:-4]], "openvino", "cpu")),
        ("load", ([xml, weights], "openvino", "cpu")),
    ]


def test_the_fake_host_fails_where_openvino_fails() -> None:
    toy = all_models()["two"]
    fake, real = FakeHost(), OVHost()
    for call, args in _misuse(toy):
        assert _host_error(fake, call, *args) == _host_error(real, call, *args), (call, args)
    # compute: wrong names, dtypes or shapes reach the host only without metadata.
    # An input left out keeps its value from the context's previous call.
    good = {"x": Tensor([[1.0] * 3] * 2), "y": Tensor([[2.0] * 3] * 2)}
    feeds_cases = [
        list(good.items()),
        [("x", good["y"])],
        [("x", good["x"]), ("y", good["y"]), ("z", good["y"])],
        [("x", good["x"].astype("f64")), ("y", good["y"])],
        [("x", good["x"].reshape(3, 2)), ("y", good["y"])],
    ]
    results = []
    for host in (fake, real):
        graph = host.load(toy.builders, "openvino", "cpu", "loading")
        ctx = host.init_context(graph, "starting")
        outcome = []
        for feeds in feeds_cases:
            try:
                outs = host.compute(ctx, feeds, "running")
            except _errors.WasiNNError as exc:
                outcome.append((type(exc), exc.host_message))
            else:
                outcome.append([(o.name, o.shape, o.dtype, o.data) for o in outs])
        results.append(outcome)
        host.release(ctx)
        host.release(graph)
        assert not host.live
    assert results[0] == results[1]
    assert [isinstance(r, list) for r in results[0]] == [True, True, False, False, False]


# ---------------------------------------------------------------- models written by OpenVINO

X = np.arange(6, dtype=np.float32).reshape(2, 3) / 4 - 0.5
Y = np.ones((2, 3), np.float32)


def test_openvino_written_ir_runs_under_its_real_output_names(
    ov_host: OVHost, model_dir: Path
) -> None:
    with Model.load(model_dir / "two.xml") as model:
        out = model.run({"x": X, "y": Y})
        assert list(out) == ["prod", "sum"]
        np.testing.assert_allclose(out["prod"].tolist(), X @ MATRIX, rtol=1e-6)
        assert out["sum"].tolist() == (X + Y).tolist()
        assert model.run([Y, X])["sum"].tolist() == (X + Y).tolist()


def test_openvino_reads_onnx_sent_as_openvino(ov_host: OVHost, model_dir: Path) -> None:
    model = Model.load(model_dir / "add_mul.onnx")
    assert model.encoding == "openvino"
    a = np.array([[1.5, -2.0], [3.0, 0.125]], np.float32)
    out = model.run({"a": a, "b": a})
    assert out["total"].tolist() == (a + a).tolist() and out["scaled"].tolist() == (a * 3).tolist()


def test_stateful_session_on_openvino(ov_host: OVHost, model_dir: Path) -> None:
    acc = Model.load(model_dir / "acc.xml").stateful({"hN": "h"})
    totals = [
        acc.run({"x": np.array([[1.0, 2.0]], np.float32)})["total"].tolist() for _ in range(3)
    ]
    assert totals == [[[1.0, 2.0]], [[2.0, 4.0]], [[3.0, 6.0]]]
    acc.close()


def test_a_stateful_model_keeps_its_state_per_session(ov_host: OVHost, model_dir: Path) -> None:
    """``Model.states`` names the IR's state variables; each session is one infer
    request: it accumulates, and a new one starts from the initial state."""
    one = np.ones((1, 2), np.float32)
    with Model.load(model_dir / "counter.xml") as model:
        assert model.states == ["sum"]
        first = model.session()
        assert [first.run({"x": one})["total"].tolist() for _ in range(3)] == [
            [[1.0, 1.0]], [[2.0, 2.0]], [[3.0, 3.0]]
        ]
        second = model.session()
        assert second.run({"x": one * 5})["total"].tolist() == [[5.0, 5.0]]
        assert first.run({"x": one})["total"].tolist() == [[4.0, 4.0]]
    assert Model.load(model_dir / "acc.xml").states == []
    assert Model.load(model_dir / "add_mul.onnx").states == []


@pytest.mark.parametrize("dtype", ["f16", "f32", "f64", "u8", "i32", "i64"])
def test_dtypes_cross_openvino_byte_exact(ov_host: OVHost, model_dir: Path, dtype: str) -> None:
    with Model.load(model_dir / f"ident_{dtype}.xml") as model:
        data = bytes(range(7, 7 + 6 * Tensor.zeros((1,), dtype).nbytes))
        if dtype.startswith("f"):  # no NaN payloads: OpenVINO may quiet them
            data = Tensor([[0.5, -1.0, 2.0], [3.0, 65504.0, -0.0]], dtype=dtype).tobytes()
        sent = Tensor(data, shape=(2, 3), dtype=dtype)
        back = next(iter(model.run(sent).values()))
        assert back == sent


def test_no_handle_outlives_its_model(ov_host: OVHost, model_dir: Path) -> None:
    model = Model.load(model_dir / "two.xml")
    model.session().run({"x": X, "y": Y})
    model.close()
    assert not ov_host.live and ov_host.released[-1] == "graph"
    assert host_module.use_default(ov_host) is ov_host  # the fixture's host is the one in use
