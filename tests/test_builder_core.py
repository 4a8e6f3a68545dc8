"""The graph builder's core: inputs, constants, outputs, pruning, ONNX validity and the build cache.

The operations have their own test files (test_builder_<family>.py); these
check what every graph shares. Natively, with onnx's checker, onnxruntime,
and the OpenVINO-backed fake host for ``build``.
"""

from __future__ import annotations

import array
from typing import Any

import numpy as np
import onnx
import pytest
from builder_check import run_onnxruntime

from wasinn import GraphBuilder, Tensor, ValidationError, _builder


def checked(data: bytes) -> onnx.ModelProto:
    model = onnx.load_from_string(data)
    onnx.checker.check_model(model, full_check=True)
    return model


def test_inputs_constants_and_outputs_become_a_valid_onnx_model() -> None:
    b = GraphBuilder()
    x = b.input("x", shape=[None, 2], dtype="float32")  # WebNN's name for f32
    w = b.constant([1.0, 2.0])
    model = checked(b.to_onnx({"y": x * w + 1.0}))
    assert [i.name for i in model.graph.input] == ["x"]
    assert [o.name for o in model.graph.output] == ["y"]
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param and dims[1].dim_value == 2
    feed = np.arange(6, dtype=np.float32).reshape(3, 2)
    out = run_onnxruntime(b.to_onnx({"y": x * w + 1.0}), {"x": feed})
    np.testing.assert_array_equal(out["y"], feed * np.array([1, 2], np.float32) + 1)


def test_constants_from_every_kind_of_value() -> None:
    b = GraphBuilder()
    cases: list[tuple[Any, dict[str, Any], np.ndarray]] = [
        (Tensor([1.5, 2.5]), {}, np.array([1.5, 2.5], np.float32)),
        (3, {"dtype": "i32"}, np.array(3, np.int32)),
        (2.0, {}, np.array(2.0, np.float32)),
        ([[1, 2], [3, 4]], {"dtype": "u8"}, np.array([[1, 2], [3, 4]], np.uint8)),
        (
            bytes(np.array([1, 2], np.float64)),
            {"shape": [2], "dtype": "f64"},
            np.array([1, 2], np.float64),
        ),
        (array.array("q", [5, 6]), {}, np.array([5, 6], np.int64)),
        ([-1, 2], {"dtype": "int8"}, np.array([-1, 2], np.int8)),
        ([7, 2**32 - 1], {"dtype": "uint32"}, np.array([7, 2**32 - 1], np.uint32)),
        ([2**64 - 1], {"dtype": "u64"}, np.array([2**64 - 1], np.uint64)),
    ]
    outputs, feed = {}, {}
    for i, (value, kwargs, want) in enumerate(cases):
        c = b.constant(value, **kwargs)
        assert c.shape == want.shape and c.dtype == _dtype(want.dtype)
        # Carried out as i64 or f64 (types the boundary takes), at least [1] (no scalars).
        wide = "f64" if want.dtype.kind == "f" else "i64"
        zero = b.input(f"zero{i}", shape=[1], dtype=wide)
        outputs[f"c{i}"] = b.cast(c, wide) + zero
        feed[f"zero{i}"] = np.zeros(1, np.float64 if wide == "f64" else np.int64)
    got = run_onnxruntime(b.to_onnx(outputs), feed)
    for i, (_, _, want) in enumerate(cases):
        if want.dtype == np.uint64:  # past i64: compare the bits
            assert got[f"c{i}"].view(np.uint64).tolist() == want.reshape(-1).tolist()
        else:
            assert got[f"c{i}"].reshape(-1).tolist() == want.reshape(-1).tolist(), i


def _dtype(dt: np.dtype) -> str:  # type: ignore[type-arg]
    return {"f": "f", "i": "i", "u": "u"}[dt.kind] + str(dt.itemsize * 8)


def test_unused_inputs_and_nodes_are_left_out() -> None:
    b = GraphBuilder()
    x = b.input("x", shape=[2], dtype="f32")
    unused = b.input("unused", shape=[2], dtype="f32")
    b.exp(unused)
    model = checked(b.to_onnx({"y": x + 1.0}))
    assert [i.name for i in model.graph.input] == ["x"]
    assert [n.op_type for n in model.graph.node] == ["Add", "Identity"]


INPUT_MISUSE = {
    "empty name": (("", [2], "f32"), "an input needs a non-empty name"),
    "reserved name": (("#1", [2], "f32"), "not starting with '#'"),
    "zero dimension": (("x", [0, 2], "f32"), "dimensions must be positive integers or None, not 0"),
    "not a shape": (("x", 3, "f32"), "a shape is a list of dimensions, not 3"),
    "not a wasi-nn type": (
        ("x", [2], "u32"),
        "input 'x' cannot be u32: the host feeds graph inputs",
    ),
    "unknown type": (("x", [2], "float128"), "unknown data type 'float128'"),
    "four-bit type": (("x", [2], "int4"), "input 'x' cannot be int4: the host feeds graph inputs"),
}


@pytest.mark.parametrize("name", INPUT_MISUSE)
def test_input_misuse(name: str) -> None:
    args, message = INPUT_MISUSE[name]
    with pytest.raises(ValidationError, match=None) as info:
        GraphBuilder().input(*args)
    assert message in str(info.value)


def test_an_input_name_is_used_once() -> None:
    b = GraphBuilder()
    b.input("x", shape=[1])
    with pytest.raises(ValidationError, match="input 'x' is defined twice"):
        b.input("x", shape=[1])


def test_outputs_must_cross_the_boundary() -> None:
    b = GraphBuilder()
    x = b.input("x", shape=[2], dtype="f32")
    with pytest.raises(ValidationError, match="output 'x' has the name of an input"):
        b.to_onnx({"x": x + 1.0})
    with pytest.raises(ValidationError, match="output 'y' is u32, which wasi-nn cannot carry"):
        b.to_onnx({"y": b.cast(x, "uint32")})
    with pytest.raises(ValidationError, match="output 'q' is uint4, which wasi-nn cannot carry"):
        b.to_onnx({"q": b.cast(x, "uint4")})
    scalar = b.constant(1.0)
    with pytest.raises(ValidationError, match="output 's' is a scalar"):
        b.to_onnx({"s": scalar})
    with pytest.raises(ValidationError, match="build needs a mapping of output name to Operand"):
        b.to_onnx({})
    with pytest.raises(ValidationError, match="must be an Operand of this builder, not float"):
        b.to_onnx({"y": 1.0})  # type: ignore[dict-item]


def test_four_bit_graphs_are_written_at_opset_21() -> None:
    """A graph holding int4 or uint4 is ONNX opset 21 and IR version 10, its
    constants packed two values a byte (low nibble first); GridSample takes
    the mode names opset 20 gave it. Other graphs stay at opset 18, IR 8."""
    from onnx import numpy_helper

    b = GraphBuilder()
    x = b.input("x", shape=[1, 1, 2, 2], dtype="f32")
    grid = b.constant([[[[0.0, 0.0]]]])
    sampled = b.grid_sample(x, grid, mode="linear")
    plain = onnx.load_from_string(b.to_onnx({"s": sampled}))
    assert (plain.ir_version, plain.opset_import[0].version) == (8, 18)
    assert plain.graph.node[0].attribute[0].s == b"bilinear"
    q = b.constant([-8, 7, 1], dtype="int4")
    model = onnx.load_from_string(b.to_onnx({"s": sampled, "q": b.cast(q, "int32")}))
    assert (model.ir_version, model.opset_import[0].version) == (10, 21)
    modes = [a.s for n in model.graph.node for a in n.attribute if a.name == "mode"]
    assert modes == [b"linear"]
    (packed,) = [t for t in model.graph.initializer if t.data_type == onnx.TensorProto.INT4]
    assert packed.raw_data == bytes([0x78, 0x01])
    assert numpy_helper.to_array(packed).tolist() == [-8, 7, 1]
    onnx.checker.check_model(model, full_check=True)


def test_four_bit_values_are_not_fused_into_a_model() -> None:
    from wasinn._graph.core import lower

    b = GraphBuilder()
    x = b.input("x", shape=[4], dtype="f32")
    y = b.dequantize_linear(b.constant([1, 2, 3, 4], dtype="uint4"), b.constant([0.5]),
                            b.constant([0], dtype="uint4")) + x  # fmt: skip
    assert lower(b, {"y": y}).four_bit
    with pytest.raises(ValidationError, match="processing fused into a model cannot hold 4-bit"):
        lower(b, {"y": y}, feeds={})


def test_identical_constants_are_stored_once() -> None:
    b = GraphBuilder()
    assert b.constant([1.0, 2.0]) is b.constant([1.0, 2.0])
    assert b.constant([1.0, 2.0]) is not b.constant([1.0, 2.0], dtype="f64")


def test_build_loads_once_per_identical_graph(ov_host: Any) -> None:
    _builder._built.clear()

    def make() -> Any:
        b = GraphBuilder()
        x = b.input("x", shape=[None, 3], dtype="f32")
        return b.build({"y": b.sigmoid(x)})

    first = make()
    loads = sum(1 for c in ov_host.calls if c[0] == "load")
    second = make()
    assert second is first
    assert sum(1 for c in ov_host.calls if c[0] == "load") == loads, "no second host load"
    out = first.run({"x": Tensor([[0.0, 0.0, 0.0]])})["y"]
    assert out.tolist() == [[0.5, 0.5, 0.5]]
    first.close()
    third = make()
    assert third is not first and not third.closed, "a closed model is loaded again"
    # Different graphs are different models.
    b = GraphBuilder()
    other = b.build({"y": b.tanh(b.input("x", shape=[None, 3], dtype="f32"))})
    assert other is not third
    _builder._built.clear()


def test_cache_is_bounded(ov_host: Any) -> None:
    _builder._built.clear()
    for i in range(_builder._built.size + 5):
        b = GraphBuilder()
        b.build({"y": b.input("x", shape=[i + 1], dtype="f32") + 1.0})
    assert len(_builder._built) == _builder._built.size
    _builder._built.clear()


def test_ordering_operators_give_masks_as_the_comparison_operations(ov_host: Any) -> None:
    b = GraphBuilder()
    x = b.input("x", shape=[4], dtype="f32")
    y = b.input("y", shape=[4], dtype="f32")
    masks = {"gt": x > 0.5, "rgt": 0.5 < x, "ge": x >= y, "lt": x < y, "le": x <= 0.25}
    assert all((m.dtype, m.shape) == ("u8", (4,)) for m in masks.values())
    model = b.build(masks)
    out = model.run({"x": Tensor([0.25, 0.5, 0.75, 1.0]), "y": Tensor([0.5, 0.5, 0.5, 0.5])})
    assert {k: t.tolist() for k, t in out.items()} == {
        "gt": [0, 0, 1, 1], "rgt": [0, 0, 1, 1], "ge": [0, 1, 1, 1], "lt": [1, 0, 0, 0],
        "le": [1, 0, 0, 0],
    }  # fmt: skip
    # == and != keep their identity meaning: operands stay usable as dict keys.
    assert x == x and x != y and len({x: 1, y: 2}) == 2
