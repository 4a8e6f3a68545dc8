"""``Model.load`` in two steps, ``prepare`` (no host) then ``load`` on a ``Host``
handed in, with each model's bytes parsed once; and the one ``ModelCache``."""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
import toy_models
from builder_app import fused_cases
from fake_host import FakeHost
from onnx import TensorProto, helper

from wasinn import GraphBuilder, Model, Tensor, WasiNNError
from wasinn._formats import ir, onnx_read
from wasinn._host import host as host_module
from wasinn._host.host import Host
from wasinn._model.cache import ModelCache
from wasinn._model.model import load
from wasinn._model.prepare import prepare


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often model bytes are parsed: ONNX readers made, IR documents read."""
    counts = {"onnx": 0, "ir": 0}
    reader_init = onnx_read._Reader.__init__
    ir_read = ir.read

    def counted_reader(self: Any, *args: Any) -> None:
        counts["onnx"] += 1
        reader_init(self, *args)

    def counted_ir(*args: Any, **kwargs: Any) -> Any:
        counts["ir"] += 1
        return ir_read(*args, **kwargs)

    monkeypatch.setattr(onnx_read._Reader, "__init__", counted_reader)
    monkeypatch.setattr(ir, "read", counted_ir)
    return counts


@pytest.fixture
def no_default_host() -> Iterator[None]:
    """No host to fall back on: anything that needs one and was not handed one fails."""
    previous = host_module.use_default(None)
    try:
        yield
    finally:
        host_module.use_default(previous)


def classifier(opset: int = 18) -> bytes:
    """x: f32[N, 3, 4, 4] -> probs: f32[N, 5]."""
    w = np.random.default_rng(0).normal(size=(48, 5)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Flatten", ["x"], ["flat"], axis=1),
         helper.make_node("MatMul", ["flat", "W"], ["logits"]),
         helper.make_node("Softmax", ["logits"], ["probs"], axis=1)],
        "classifier",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4, 4])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 5])],
        [helper.make_tensor("W", TensorProto.FLOAT, w.shape, w.reshape(-1).tolist())],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    return model.SerializeToString()


def scalar_onnx() -> bytes:
    """y: f32[1] = s * 3 for a rank-0 input s: the host needs a rewrite."""
    graph = helper.make_graph(
        [helper.make_node("Mul", ["s", "three"], ["m"]),
         helper.make_node("Reshape", ["m", "one"], ["y"])],
        "scalar",
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        [helper.make_tensor("three", TensorProto.FLOAT, [], [3.0]),
         helper.make_tensor("one", TensorProto.INT64, [1], [1])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    onnx.checker.check_model(model)
    return model.SerializeToString()


# ---------------------------------------------------------------- one parse per load


def test_onnx_bytes_are_parsed_once(ov_host: Any, parses: dict[str, int]) -> None:
    Model.load(classifier()).close()
    assert parses == {"onnx": 1, "ir": 0}


def test_onnx_with_processing_is_parsed_once(ov_host: Any, parses: dict[str, int]) -> None:
    image = np.random.default_rng(1).integers(0, 256, (4, 4, 3)).astype(np.uint8)
    pre, post = fused_cases.preprocess, fused_cases.postprocess
    with Model.load(classifier(), preprocess=pre, postprocess=post) as model:
        assert parses == {"onnx": 1, "ir": 0}
        # The specs that spared the second parse are those a parse gives.
        fused = onnx_read.read(prepare(classifier(), None, pre, post).parts[0])
        assert [str(s) for s in model.inputs] == [str(s) for s in fused.inputs]
        assert [str(s) for s in model.outputs] == [str(s) for s in fused.outputs]
        out = model.run({"image": Tensor(image.tobytes(), shape=image.shape, dtype="u8")})
    assert out["best"].shape == (1, 1) and 0 <= out["top"].item() <= 1


def test_ir_is_read_once(
    ov_host: Any, parses: dict[str, int], toy_dir: Path, tmp_path: Path
) -> None:
    Model.load(toy_dir / "two.xml").close()
    assert parses == {"onnx": 0, "ir": 1}
    # An .xml with no .bin beside it is read to learn it needs no weights: once.
    (tmp_path / "alone.xml").write_bytes((toy_dir / "passthrough.xml").read_bytes())
    Model.load(tmp_path / "alone.xml").close()
    assert parses == {"onnx": 0, "ir": 2}


def test_a_built_graph_is_not_parsed_back(ov_host: Any, parses: dict[str, int]) -> None:
    b = GraphBuilder()
    x = b.input("x", shape=[None, 3], dtype="f32")
    outputs = {"y": b.relu(x - 1.0), "total": b.reduce_sum(x, axes=[1], keep_dimensions=True)}
    model = b.build(outputs)
    assert parses == {"onnx": 0, "ir": 0}
    # The specs the builder handed over are those a parse of its bytes gives.
    written = onnx_read.read(b.to_onnx(outputs))
    assert [str(s) for s in model.inputs or []] == [str(s) for s in written.inputs]
    assert [str(s) for s in model.outputs or []] == [str(s) for s in written.outputs]


def test_a_rewritten_model_is_parsed_once(ov_host: Any, parses: dict[str, int]) -> None:
    with Model.load(scalar_onnx()) as model:
        assert parses == {"onnx": 1, "ir": 0}
        assert model.run({"s": 2.0})["y"].tolist() == [6.0]


# ---------------------------------------------------------------- prepare, then load


def test_prepare_needs_no_host(no_default_host: None) -> None:
    prepared = prepare(scalar_onnx())
    assert prepared.encoding == "onnx" and prepared.label == "the model bytes"
    assert [str(s) for s in prepared.inputs or []] == ["s: f32[]"]
    assert prepared.plan.scalar_inputs == {"s"}, "the rewrite is planned without a host"
    with pytest.raises(WasiNNError, match="only reachable inside a WebAssembly component"):
        Model.load(scalar_onnx())


def test_a_host_handed_in_is_the_only_one_used(no_default_host: None) -> None:
    toy = toy_models.add_mul()
    fake = FakeHost()
    a, b = Tensor([[1.0, 2.0], [3.0, 4.0]]), Tensor([[1.0] * 2] * 2)
    with load(prepare(toy.files[toy.filename]), Host(fake)) as model:
        out = model.run({"a": a, "b": b})
        assert out["total"].tolist() == [[2.0, 3.0], [4.0, 5.0]]
        assert out["scaled"].tolist() == [[3.0, 6.0], [9.0, 12.0]]
        assert model.encoding == "openvino", "the fake, like wasmtime, has no ONNX backend"
    assert not fake.live and fake.released == ["context", "graph"]


def test_what_a_host_learns_stays_with_that_host(no_default_host: None) -> None:
    toy = toy_models.add_mul()
    host = Host(FakeHost())
    load(prepare(toy.files[toy.filename]), host).close()
    assert host.onnx_native is False
    load(prepare(toy.files[toy.filename]), host).close()
    tried = [c[1] for c in host.layer.calls if c[0] == "load"]
    assert tried == ["onnx", "openvino", "openvino"], "ONNX is asked for once per host"
    assert Host(FakeHost()).onnx_native is None


# ---------------------------------------------------------------- the model cache


def _models(host: Host, count: int) -> list[Model]:
    toy = toy_models.add_mul()
    return [load(prepare(toy.files[toy.filename]), host) for _ in range(count)]


def test_the_cache_releases_what_it_evicts(no_default_host: None) -> None:
    fake = FakeHost()
    cache = ModelCache(2)
    first, second, third = _models(Host(fake), 3)
    gone = weakref.ref(second)
    cache.put("first", first)
    cache.put("second", second)
    assert cache.get("first") is first  # now the most recent: "second" goes next
    del second
    cache.put("third", third)
    assert cache.keys() == ["first", "third"]
    assert gone() is None and fake.released == ["context", "graph"]


def test_the_cache_never_closes_a_model_the_app_holds(no_default_host: None) -> None:
    fake = FakeHost()
    cache = ModelCache(1)
    kept, newer = _models(Host(fake), 2)
    cache.put("kept", kept)
    cache.put("newer", newer)  # evicts "kept", which the app still holds
    assert cache.keys() == ["newer"] and not kept.closed and not fake.released
    kept.close()
    cache.clear()
    assert fake.released == ["context", "graph"]
    newer_ref = weakref.ref(newer)
    del newer
    assert newer_ref() is None and not fake.live


def test_a_closed_model_is_not_handed_out_again(no_default_host: None) -> None:
    cache = ModelCache(4)
    (model,) = _models(Host(FakeHost()), 1)
    cache.put("m", model)
    model.close()
    assert cache.get("m") is None and len(cache) == 0
