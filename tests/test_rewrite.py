"""Rewriting models for the host (``wasinn._formats.rewrite``): rank-0 inputs and
outputs, static zero-size inputs, Dropout's renamed and dropped inputs.

The ONNX rewrites are checked against onnx itself: the rewritten model passes
``onnx.checker`` and onnx's reference evaluator computes, from the inputs as
the plan feeds them, what it computes on the original model. Whole models are
run natively through ``ov_host`` (OpenVINO reading from memory, as the
wasmtime host does); ``test_conformance.py`` runs them in a real component.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import wasinn
from wasinn import Model, Tensor, ValidationError, _errors
from wasinn._formats import onnx_read as _onnx
from wasinn._formats import rewrite as _rewrite
from wasinn._model.prepare import prepare
from wasinn._spec import TensorSpec, feeds

F32 = TensorProto.FLOAT


def _model(
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    opset: int = 18,
) -> bytes:
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    data: bytes = model.SerializeToString()
    return data


def _scalar_model(opset: int) -> bytes:
    """y = x * s (s rank 0), total = sum(x) (rank 0), n = size(e) with e of shape [0, 2]."""
    return _model(
        [
            helper.make_node("Mul", ["x", "s"], ["y"]),
            helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
            helper.make_node("Size", ["e"], ["n"]),
        ],
        [
            helper.make_tensor_value_info("x", F32, [3]),
            helper.make_tensor_value_info("s", F32, []),
            helper.make_tensor_value_info("e", F32, [0, 2]),
        ],
        [
            helper.make_tensor_value_info("y", F32, [3]),
            helper.make_tensor_value_info("total", F32, []),
            helper.make_tensor_value_info("n", TensorProto.INT64, []),
        ],
        opset,
    )


def _evaluate(data: bytes, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    from onnx.reference import ReferenceEvaluator

    return [np.asarray(a) for a in ReferenceEvaluator(onnx.load_from_string(data)).run(None, feed)]


def _through_plan(data: bytes, feed: dict[str, np.ndarray]) -> tuple[list[np.ndarray], Any]:
    """Rewrite, feed as the plan says, evaluate, and undo the output axes."""
    new, plan = _rewrite.onnx_model(_onnx.read(data))
    if all(o.type.tensor_type.HasField("shape") for o in onnx.load_from_string(data).graph.output):
        # (the checker refuses graph outputs without a shape, which ONNX allows)
        onnx.checker.check_model(onnx.load_from_string(new), full_check=True)
    host_feed = {}
    for name, value in feed.items():
        if name in plan.folded:
            continue
        # (A Dropout's renamed input keeps its name in the model: only
        # OpenVINO knows it by another, so onnx is fed the model's name.)
        if name in plan.scalar_inputs:
            host_feed[plan.host_names[name]] = value.reshape(1)
        else:
            host_feed[name] = value
    got = _evaluate(new, host_feed)
    for i in plan.unsqueezed:
        assert got[i].shape[0] == 1
        got[i] = got[i].reshape(got[i].shape[1:])
    return got, plan


@pytest.mark.parametrize("opset", [11, 13, 18])
def test_onnx_scalars_and_empty_inputs_compute_as_before(opset: int) -> None:
    data = _scalar_model(opset)
    feed = {
        "x": np.array([1, 2, 3], np.float32),
        "s": np.array(2.5, np.float32),
        "e": np.zeros((0, 2), np.float32),
    }
    got, plan = _through_plan(data, feed)
    want = _evaluate(data, feed)
    assert [g.shape for g in got] == [(3,), (), ()]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    assert plan.scalar_inputs == {"s"} and plan.folded == {"e"} and plan.unsqueezed == {1, 2}
    assert plan.host_names["s"] != "s"
    # The model as the host gets it: no rank-0 or zero-size boundary left.
    new_info = _onnx.read(_rewrite.onnx_model(_onnx.read(data))[0])
    assert [(s.name == plan.host_names["s"], s.shape) for s in new_info.inputs] == [
        (False, (3,)),
        (True, (1,)),
    ]
    assert [s.shape for s in new_info.outputs] == [(3,), (1,), (1,)]


def test_outputs_of_undeclared_rank_get_their_axis_back() -> None:
    data = _model(
        [helper.make_node("ReduceMax", ["x"], ["m"], keepdims=0)],
        [helper.make_tensor_value_info("x", F32, [2, 2])],
        [helper.make_tensor_value_info("m", F32, None)],
    )
    got, plan = _through_plan(data, {"x": np.array([[1, 5], [3, 2]], np.float32)})
    assert plan.unsqueezed == {0}
    assert got[0].shape == () and got[0] == 5


def test_models_without_anything_to_do_are_left_alone() -> None:
    data = _model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", F32, [2])],
        [helper.make_tensor_value_info("y", F32, [2])],
    )
    new, plan = _rewrite.onnx_model(_onnx.read(data))
    assert new is data and plan is _rewrite.NOTHING
    parts, plan = _rewrite.for_host([data], "onnx", *_specs(data), "m.onnx")
    assert parts[0] is data and plan is _rewrite.NOTHING


def _specs(data: bytes) -> tuple[list[TensorSpec], list[TensorSpec]]:
    info = _onnx.read(data)
    return info.inputs, info.outputs


def test_dropout_passthrough_and_unused_ratio() -> None:
    data = _model(
        [helper.make_node("Dropout", ["x", "r"], ["y"])],
        [helper.make_tensor_value_info("x", F32, [2]), helper.make_tensor_value_info("r", F32, [])],
        [helper.make_tensor_value_info("y", F32, [2])],
        opset=13,
    )
    got, plan = _through_plan(data, {"x": np.array([1, 2], np.float32), "r": np.array(0.5)})
    np.testing.assert_array_equal(got[0], [1, 2])
    assert plan.host_names == {"x": "y"} and plan.folded == {"r"}


def test_names_added_never_collide_with_the_models() -> None:
    data = _model(
        [helper.make_node("Mul", ["s", "s__wasinn_1d"], ["y"])],
        [
            helper.make_tensor_value_info("s", F32, []),
            helper.make_tensor_value_info("s__wasinn_1d", F32, []),
        ],
        [helper.make_tensor_value_info("y", F32, [])],
    )
    got, plan = _through_plan(data, {"s": np.array(3, np.float32),
                                     "s__wasinn_1d": np.array(4, np.float32)})  # fmt: skip
    assert got[0] == 12
    assert len(set(plan.host_names.values()) | {"s", "s__wasinn_1d"}) == 4


def test_model_format_errors_stay_model_format_errors() -> None:
    data = _scalar_model(18)
    with pytest.raises(wasinn.ModelFormatError):
        prepare(data[:-7])  # read once, before any rewrite, and refused there


# ---------------------------------------------------------------- feeds


def test_only_rewritten_scalars_accept_rank_0() -> None:
    specs = [TensorSpec("s", (), "f32"), TensorSpec("any", None, "f32")]
    got = feeds({"s": 2.0, "any": Tensor([1.0])}, specs, scalars=frozenset({"s"}))
    assert got[0][1].shape == () and got[0][1].item() == 2.0
    with pytest.raises(ValidationError, match="declared as a scalar"):
        feeds({"s": 2.0, "any": Tensor([1.0])}, specs)
    with pytest.raises(ValidationError, match="is a scalar"):
        feeds({"s": 2.0, "any": Tensor(1.0)}, specs, scalars=frozenset({"s"}))
    with pytest.raises(ValidationError, match=r"has shape \[1\], but the model wants a scalar"):
        feeds({"s": Tensor([2.0]), "any": Tensor([1.0])}, specs, scalars=frozenset({"s"}))


def test_folded_inputs_may_be_left_out_but_are_checked_when_given() -> None:
    specs = [TensorSpec("x", (2,), "f32"), TensorSpec("e", (0, 2), "f32")]
    folded = frozenset({"e"})
    assert [n for n, _ in feeds({"x": [1.0, 2.0]}, specs, optional=folded)] == ["x"]
    given = feeds({"x": [1.0, 2.0], "e": Tensor.zeros((0, 2))}, specs, optional=folded)
    assert [n for n, _ in given] == ["x", "e"]
    with pytest.raises(ValidationError, match=r"input 'e' has shape \[0, 3\]"):
        feeds({"x": [1.0, 2.0], "e": Tensor.zeros((0, 3))}, specs, optional=folded)
    with pytest.raises(ValidationError, match="missing input 'e'"):
        feeds({"x": [1.0, 2.0]}, specs)


def test_rank_0_tensors() -> None:
    t = Tensor(3.0)
    assert t.shape == () and t.ndim == 0 and t.size == 1
    assert t.item() == 3.0 and t.tolist() == 3.0
    assert Tensor(7, dtype="i32").tolist() == 7
    assert Tensor([2.5]).reshape(()).item() == 2.5


# ---------------------------------------------------------------- whole models


def test_onnx_model_runs_with_scalars_on_openvino(ov_host: Any, tmp_path: Path) -> None:
    path = tmp_path / "s.onnx"
    path.write_bytes(_scalar_model(18))
    with Model.load(path) as model:
        assert [str(s) for s in model.inputs or ()] == ["x: f32[3]", "s: f32[]", "e: f32[0, 2]"]
        assert [str(s) for s in model.outputs or ()] == ["y: f32[3]", "total: f32[]", "n: i64[]"]
        out = model.run({"x": [1.0, 2.0, 3.0], "s": 2.0})
        assert out["y"].tolist() == [2.0, 4.0, 6.0]
        assert out["total"].shape == () and out["total"].item() == 6.0
        assert out["n"].shape == () and out["n"].item() == 0
        again = model.run([Tensor([1.0, 1.0, 1.0]), Tensor(0.5), Tensor.zeros((0, 2))])
        assert again["y"].tolist() == [0.5, 0.5, 0.5]
    sent = [c for c in ov_host.calls if c[0] == "compute"][-1][1]
    assert [(shape, dtype) for _, shape, dtype in sent] == [((3,), "f32"), ((1,), "f32")]


def _ir_model(directory: Path) -> Path:
    import openvino as ov
    from openvino import opset13 as ops

    s = ops.parameter([], ov.Type.f32, name="s")
    x = ops.parameter([2], ov.Type.f32, name="x")
    e = ops.parameter([0, 3], ov.Type.f32, name="e")
    for p, n in ((s, "s"), (x, "x"), (e, "e")):
        p.output(0).set_names({n})
    y = ops.multiply(x, s)
    y.output(0).set_names({"y"})
    total = ops.reduce_sum(x, ops.constant(np.array([0], np.int64)), False)
    total.output(0).set_names({"total"})
    esum = ops.reduce_sum(e, ops.constant(np.array([0], np.int64)), False)
    esum.output(0).set_names({"esum"})
    results = [ops.result(y), ops.result(total), ops.result(s), ops.result(esum)]
    path = directory / "scalars.xml"
    ov.save_model(ov.Model(results, [s, x, e], "scalars"), path, compress_to_fp16=False)
    return path


def test_ir_model_runs_with_scalars_on_openvino(ov_host: Any, tmp_path: Path) -> None:
    with Model.load(_ir_model(tmp_path)) as model:
        assert [str(s) for s in model.inputs or ()] == ["s: f32[]", "x: f32[2]", "e: f32[0, 3]"]
        assert [str(s) for s in model.outputs or ()] == [
            "y: f32[2]", "total: f32[]", "s: f32[]", "esum: f32[3]"
        ]  # fmt: skip
        out = model.run({"s": Tensor(2.0), "x": [1.0, 3.0]})
    assert {k: (v.shape, v.tolist()) for k, v in out.items()} == {
        "y": ((2,), [2.0, 6.0]),
        "total": ((), 4.0),
        "s": ((), 2.0),
        "esum": ((3,), [0.0, 0.0, 0.0]),
    }


def test_compute_failure_names_the_host_limit(ov_host: Any, tmp_path: Path) -> None:
    """A model with an output wasi-nn cannot carry: the error says so, not 'the inputs'."""
    path = tmp_path / "b.onnx"
    path.write_bytes(
        _model(
            [helper.make_node("Greater", ["x", "x"], ["b"])],
            [helper.make_tensor_value_info("x", F32, [2])],
            [helper.make_tensor_value_info("b", TensorProto.BOOL, [2])],
        )
    )

    def fail(*args: Any) -> Any:
        raise _errors.from_host("runtime-error", "Failed while accessing backend", "compute",
                                "running b.onnx")  # fmt: skip

    with Model.load(path) as model:
        ov_host.compute = fail
        with pytest.raises(wasinn.BackendRuntimeError) as caught:
            model.run({"x": [1.0, 2.0]})
    message = str(caught.value)
    assert "output 'b' is boolean, which wasi-nn cannot carry" in message
    assert "Usual causes: an input tensor" not in message
    assert caught.value.host_message == "Failed while accessing backend"


@pytest.mark.integration
def test_rewritten_models_in_a_component(guest: Any, model_dir: Path) -> None:
    """On the real host: IR and ONNX models with scalar inputs and outputs and
    a zero-size input, fed a rank-0 tensor and a plain number."""
    _ir_model(model_dir)
    (model_dir / "scalars.onnx").write_bytes(_scalar_model(13))
    scalar = {"dtype": "f32", "shape": [], "values": [2.0]}
    done = guest({"load": {"path": "scalars.xml"},
                  "steps": [{"run": {"s": scalar, "x": {"dtype": "f32", "shape": [2],
                                                        "values": [1.0, 3.0]}}}]})  # fmt: skip
    out = done.lines[1]["ok"]
    assert {k: (v["dtype"], v["shape"]) for k, v in out.items()} == {
        "y": ("f32", [2]), "total": ("f32", []), "s": ("f32", []), "esum": ("f32", [3])
    }  # fmt: skip
    assert np.frombuffer(bytes.fromhex(out["total"]["hex"]), np.float32).tolist() == [4.0]
    assert np.frombuffer(bytes.fromhex(out["y"]["hex"]), np.float32).tolist() == [2.0, 6.0]
    done = guest({"load": {"path": "scalars.onnx"},
                  "steps": [{"run": [{"dtype": "f32", "shape": [3], "values": [1.0, 2.0, 3.0]},
                                     scalar, {"dtype": "f32", "zeros": [0, 2]}]}]})  # fmt: skip
    out = done.lines[1]["ok"]
    assert {k: (v["dtype"], v["shape"]) for k, v in out.items()} == {
        "y": ("f32", [3]), "total": ("f32", []), "n": ("i64", [])
    }  # fmt: skip
    assert np.frombuffer(bytes.fromhex(out["total"]["hex"]), np.float32).tolist() == [6.0]
    assert np.frombuffer(bytes.fromhex(out["n"]["hex"]), np.int64).tolist() == [0]


def test_dropout_inputs_on_openvino(ov_host: Any, tmp_path: Path) -> None:
    """x is known to OpenVINO as 'y'; the ratio r may be passed (rank 0) or left out."""
    path = tmp_path / "d.onnx"
    path.write_bytes(
        _model(
            [helper.make_node("Dropout", ["x", "r"], ["y"])],
            [helper.make_tensor_value_info("x", F32, [2]),
             helper.make_tensor_value_info("r", F32, [])],
            [helper.make_tensor_value_info("y", F32, [2])],
            opset=13,
        )
    )  # fmt: skip
    with Model.load(path) as model:
        assert model.run({"x": [1.0, 2.0], "r": 0.25})["y"].tolist() == [1.0, 2.0]
        assert model.run({"x": [3.0, 4.0]})["y"].tolist() == [3.0, 4.0]
        with pytest.raises(ValidationError, match="input 'r' must be f32"):
            model.run({"x": [3.0, 4.0], "r": Tensor(1, dtype="i32")})
    sent = [c for c in ov_host.calls if c[0] == "compute"]
    assert [[name for name, _, _ in c[1]] for c in sent] == [["y"], ["y"]]


def test_compute_failure_of_a_rewritten_model_says_what_was_rewritten(
    ov_host: Any, tmp_path: Path
) -> None:
    path = tmp_path / "s.onnx"
    path.write_bytes(_scalar_model(18))

    def fail(*args: Any) -> Any:
        raise _errors.from_host("runtime-error", "Failed while accessing backend", "compute",
                                "running s.onnx")  # fmt: skip

    with Model.load(path) as model:
        ov_host.compute = fail
        with pytest.raises(wasinn.BackendRuntimeError) as caught:
            model.run({"x": [1.0, 2.0, 3.0], "s": 2.0})
    message = str(caught.value)
    assert message.startswith("running s.onnx failed [runtime-error]: Failed while accessing")
    assert "wasinn rewrote the model for this host: rank-0 input 's' is passed as shape [1]" in (
        message
    )
    assert "input 'e' is folded into the model as a constant" in message


def test_models_loaded_by_name_are_not_rewritten(ov_host: Any, tmp_path: Path) -> None:
    """The host loaded the model itself: a scalar input is refused before the host,
    and a rank-0 output is named as a host limit when compute fails."""
    path = _ir_model(tmp_path)
    ov_host.registry["scalars"] = (path.read_bytes(), path.with_suffix(".bin").read_bytes())
    with Model.load_by_name("scalars", metadata=path) as model:
        with pytest.raises(ValidationError, match="declared as a scalar .*loaded by name"):
            model.run({"s": 2.0, "x": [1.0, 3.0], "e": Tensor.zeros((0, 3))})
    plan = _rewrite.unrewritten(model.outputs)
    assert plan.limits == (
        "output 'total' is rank 0, which the host cannot return",
        "output 's' is rank 0, which the host cannot return",
    )
    assert _rewrite.unrewritten(None) is _rewrite.NOTHING
