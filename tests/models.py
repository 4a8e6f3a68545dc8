"""Tiny models the tests build with OpenVINO's opset API (and one ONNX file)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as ops

DTYPES = ("f16", "bf16", "f32", "f64", "u8", "i32", "i64")
OV_TYPES = {
    "f16": ov.Type.f16, "bf16": ov.Type.bf16, "f32": ov.Type.f32, "f64": ov.Type.f64,
    "u8": ov.Type.u8, "i32": ov.Type.i32, "i64": ov.Type.i64,
}  # fmt: skip
MATRIX = np.arange(12, dtype=np.float32).reshape(3, 4) / 4.0


def _named(node: ov.Node, name: str) -> ov.Node:
    node.output(0).get_tensor().set_names({name})
    return node


def two_outputs(path: Path) -> None:
    """Inputs y, x (f32[2,3]); outputs 'prod' = x @ MATRIX and 'sum' = x + y.

    The outputs are deliberately not in alphabetical order and the inputs are
    declared y before x, so positional mistakes show.
    """
    x = ops.parameter([2, 3], np.float32, name="x")
    y = ops.parameter([2, 3], np.float32, name="y")
    total = _named(ops.add(x, y), "sum")
    prod = _named(ops.matmul(x, ops.constant(MATRIX), False, False), "prod")
    model = ov.Model([ops.result(prod), ops.result(total)], [y, x], "two_outputs")
    ov.save_model(model, path, compress_to_fp16=False)


def identity(path: Path, dtype: str, through_op: bool) -> None:
    """'out' = 'inp' (f32[2, 3] of one dtype).

    Without an op the Parameter feeds the Result directly, so the bytes must
    come back unchanged. With ``through_op`` a Concat copies the values on the
    CPU plugin, which computes f64 in f32: the guest must then agree with
    OpenVINO run natively, not with the input.
    """
    inp = ops.parameter([2, 3], OV_TYPES[dtype], name="inp")
    if through_op:
        inp.output(0).get_tensor().set_names({"inp"})
        out = ops.result(_named(ops.concat([inp], 0), "out"))
    else:
        out = ops.result(inp)
    ov.save_model(ov.Model([out], [inp], f"identity_{dtype}"), path, compress_to_fp16=False)


def passthrough(path: Path) -> None:
    """'x' comes back unchanged (f32[?]): for sizes and transfers."""
    x = ops.parameter([-1], np.float32, name="x")
    ov.save_model(ov.Model([ops.result(x)], [x], "passthrough"), path, compress_to_fp16=False)


def dynamic(path: Path) -> None:
    """'scaled' = 2 * 'v' for v: f32[?, 4]."""
    v = ops.parameter([-1, 4], np.float32, name="v")
    out = _named(ops.multiply(v, ops.constant(np.float32(2.0))), "scaled")
    ov.save_model(ov.Model([ops.result(out)], [v], "dynamic"), path, compress_to_fp16=False)


def accumulator(path: Path) -> None:
    """A recurrent toy: 'total' = 'hN' = 'x' + 'h', with x, h: f32[1, 2]."""
    x = ops.parameter([1, 2], np.float32, name="x")
    h = ops.parameter([1, 2], np.float32, name="h")
    total = _named(ops.add(x, h), "total")
    state = _named(ops.multiply(total, ops.constant(np.float32(1.0))), "hN")
    model = ov.Model([ops.result(total), ops.result(state)], [x, h], "acc")
    ov.save_model(model, path, compress_to_fp16=False)


def counter(path: Path) -> None:
    """A stateful toy: 'total' = the sum of every 'x' (f32[1, 2]) this infer request
    has seen, kept in the state variable 'sum' (ReadValue/Assign), as an LLM keeps
    its KV cache."""
    x = ops.parameter([1, 2], np.float32, name="x")
    previous = ops.read_value(ops.constant(np.zeros((1, 2), np.float32)), "sum", np.float32, [1, 2])
    total = _named(ops.add(previous, x), "total")
    assign = ops.assign(total, "sum")
    model = ov.Model([ops.result(total)], [assign], [x], "counter")
    ov.save_model(model, path, compress_to_fp16=False)


def any_rank_and_bool(path: Path) -> None:
    """An input of dynamic rank ('x') and a boolean one ('b'): metadata edge cases."""
    x = ops.parameter(ov.PartialShape.dynamic(), np.float32, name="x")
    b = ops.parameter([2], np.bool_, name="b")
    y = _named(ops.relu(x), "y")
    nb = _named(ops.logical_not(b), "nb")
    model = ov.Model([ops.result(y), ops.result(nb)], [x, b], "any_rank")
    ov.save_model(model, path, compress_to_fp16=False)


def scalar_input(path: Path) -> None:
    """A model whose input is rank 0, which the wasmtime host cannot feed."""
    s = ops.parameter([], np.float32, name="s")
    out = _named(ops.multiply(s, ops.constant(np.float32(3.0))), "tripled")
    ov.save_model(ov.Model([ops.result(out)], [s], "scalar"), path, compress_to_fp16=False)


# rt_info entries for rt_info_model: (value, path) as set_rt_info takes them.
RT_INFO = [
    ("1,2,3", ["model_info", "mean_values"]),
    ("v", ["a", "b"]),
    ("deep", ["a", "c", "d"]),
    ('needs <escaping> & "quotes"\n\ttoo', "escaped"),
    ("ünïcode ✓", "naïve key"),
    ("", "empty"),
    (7, "number"),
    ([1, 2, 3], "list"),
]


def rt_info_model(path: Path) -> None:
    """'y' = relu('x') (f32[1, 2]), with the RT_INFO entries in its rt_info."""
    x = ops.parameter([1, 2], np.float32, name="x")
    model = ov.Model([ops.result(_named(ops.relu(x), "y"))], [x], "rt_info")
    for value, key in RT_INFO:
        model.set_rt_info(value, key)
    ov.save_model(model, path, compress_to_fp16=False)


# metadata_props for onnx_metadata, in file order: a repeated key, an empty
# key and value, non-ASCII text and a long value with newlines (like an OCR
# model's character list).
ONNX_METADATA = [
    ("dup", "first"),
    ("author", "wasinn tests"),
    ("", "empty key"),
    ("empty value", ""),
    ("ünï/κλειδί", "✓値\n\t\x00end"),
    ("characters", "\n".join(chr(0x4E00 + i) for i in range(3000))),
    ("dup", "second"),
]


def onnx_metadata(path: Path) -> None:
    """ONNX: 'y' = Identity('x') (f32[2]), with ONNX_METADATA as metadata_props."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "meta",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    for key, value in ONNX_METADATA:
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.save(model, path)


def onnx_add_mul(path: Path) -> None:
    """ONNX: 'total' = a + b and 'scaled' = a * 3, with a, b f32[2, 2]."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [
            helper.make_node("Add", ["a", "b"], ["total"]),
            helper.make_node("Mul", ["a", "three"], ["scaled"]),
        ],
        "add_mul",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 2]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 2]),
        ],
        [
            helper.make_tensor_value_info("total", TensorProto.FLOAT, [2, 2]),
            helper.make_tensor_value_info("scaled", TensorProto.FLOAT, [2, 2]),
        ],
        initializer=[helper.make_tensor("three", TensorProto.FLOAT, [], [3.0])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)


def build_all(directory: Path) -> Path:
    """Write every test model into ``directory``; return it."""
    directory.mkdir(parents=True, exist_ok=True)
    two_outputs(directory / "two.xml")
    for dtype in DTYPES:
        identity(directory / f"ident_{dtype}.xml", dtype, through_op=False)
        identity(directory / f"concat_{dtype}.xml", dtype, through_op=True)
    dynamic(directory / "dynamic.xml")
    passthrough(directory / "passthrough.xml")
    accumulator(directory / "acc.xml")
    counter(directory / "counter.xml")
    scalar_input(directory / "scalar.xml")
    any_rank_and_bool(directory / "any_rank.xml")
    onnx_add_mul(directory / "add_mul.onnx")
    rt_info_model(directory / "rt_info.xml")
    onnx_metadata(directory / "metadata.onnx")
    # A directory the host can preload: -S nn-graph=openvino::<dir>/byname
    (directory / "byname").mkdir(exist_ok=True)
    two_outputs(directory / "byname" / "model.xml")
    return directory
