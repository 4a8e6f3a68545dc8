"""docs/builder.md: every GraphBuilder operation with its WebNN name, generated from the code.

``python tests/test_builder_doc.py`` rewrites the file; the test fails when it
is out of date, when an operation lacks a docstring, or when an operation of
WebNN's MLGraphBuilder is neither provided nor listed as left out with a reason.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

from wasinn import GraphBuilder
from wasinn._graph import elementwise, network, pooling, recurrent, reduce, shape

DOC = Path(__file__).resolve().parent.parent / "docs" / "builder.md"
FAMILIES = [
    ("Element-wise", elementwise, elementwise.ElementwiseFamily),
    ("Shapes and indexing", shape, shape.ShapeFamily),
    ("Reductions", reduce, reduce.ReductionFamily),
    ("Networks", network, network.NetworkFamily),
    ("Pooling and resampling", pooling, pooling.PoolingFamily),
    ("Recurrent networks", recurrent, recurrent.RecurrentFamily),
]
CORE = ("input", "constant", "build", "to_onnx")
# WebNN's spelling where it is not plain camelCase of wasinn's name.
WEBNN_SPELLING = {"gather_nd": "gatherND", "scatter_nd": "scatterND", "is_nan": "isNaN"}
# The operations of WebNN's MLGraphBuilder (webmachinelearning/webnn index.bs, 2026-11).
WEBNN_OPS = """
abs add argMax argMin averagePool2d batchNormalization cast ceil clamp concat conv2d
convTranspose2d cos cumulativeSum dequantizeLinear div elu equal erf exp expand floor gather
gatherElements gatherND gelu gemm greater greaterOrEqual gru gruCell hardSigmoid hardSwish
identity instanceNormalization isInfinite isNaN l2Pool2d layerNormalization leakyRelu lesser
lesserOrEqual linear log logicalAnd logicalNot logicalOr logicalXor lstm lstmCell matmul max
maxPool2d min mul neg notEqual pad pow prelu quantizeLinear reciprocal reduceL1 reduceL2
reduceLogSum reduceLogSumExp reduceMax reduceMean reduceMin reduceProduct reduceSum
reduceSumSquare relu resample2d reshape reverse roundEven scatterElements scatterND sigmoid
sign sin slice softmax softplus softsign split sqrt sub tan tanh tile transpose triangular
where
""".split()
# Operations wasinn adds that WebNN does not have.
OWN = ("grid_sample",)
LEFT_OUT: dict[str, str] = {}


def webnn_name(name: str) -> str:
    head, *rest = name.split("_")
    return WEBNN_SPELLING.get(name, head + "".join(part[:1].upper() + part[1:] for part in rest))


def operations(cls: type) -> list[str]:
    return [n for n, v in vars(cls).items() if not n.startswith("_") and callable(v)]


def summary(fn: object) -> str:
    doc = inspect.getdoc(fn) or ""
    return doc.split("\n\n")[0].replace("\n", " ").replace("|", "\\|")


def render_doc() -> str:
    lines = [
        "# GraphBuilder operations",
        "",
        "Generated from the code (`python tests/test_builder_doc.py`); `./build.sh test` fails",
        "when it is out of date. Every operation follows WebNN's `MLGraphBuilder`: the same",
        "operation in snake_case, the same arguments, options as snake_case keywords with",
        "WebNN's defaults, the same shape and data-type rules, checked when the operation is",
        "added. Each family's notes below say where wasinn differs from WebNN and why.",
        "",
        "Common to all operations:",
        "",
        "- Data types are wasinn's names (`f32`, `u8`, ...) or WebNN's (`float32`, `uint8`,",
        "  ...); `f64` and `bf16` are accepted too (not WebNN types). Graph inputs and outputs",
        "  are limited to what wasi-nn carries (`f16 bf16 f32 f64 u8 i32 i64`); `i8`, `u32` and",
        "  `u64` live inside a graph only.",
        "- Input shapes may have dynamic dimensions (`None`), unlike WebNN; each operation infers",
        "  what it can and checks the rest when the host runs the graph.",
        "- Outputs cannot be scalars (the host cannot pass rank-0 tensors): keep dimensions or",
        "  reshape to `[1]`.",
        "- WebNN's 4-bit types (`int4`, `uint4`) are constants only: `cast`, `reshape`,",
        "  `transpose`, `dequantize_linear` and `quantize_linear` take them (ONNX has nothing",
        "  else for them), and wasi-nn cannot carry them, so a 4-bit output must be cast to a",
        "  wider type first. A graph holding them is written at ONNX opset 21 (IR version 10),",
        "  the first with 4-bit types, and cannot be fused into a model.",
        "- Python ints given for integer operands (`clamp` bounds, `pad` values, constants,",
        "  numbers in arithmetic) are written exactly, as WebNN's `MLNumber` (`2**63 - 1` stays",
        "  itself for `i64`); a value outside the operand's type is refused, where WebNN would",
        "  saturate it.",
        "- The host (OpenVINO's CPU plugin) computes `i64` in 32 bits and holds `u32`/`u64` as",
        "  `i32`: integer values past 2**31 come out wrong, although onnxruntime gets them right.",
        "  It also compares `i32` in `f32` (past 2**24 the comparison rounds) and computes",
        "  `i32` `Relu` in `f32`: `clamp` and `relu` are lowered around that (see them), and",
        "  `clamp` refuses `u32`/`u64` and `i64` bounds past the `i32` range.",
        "- The graph is written as ONNX opset 18 and loaded like any ONNX model; an identical",
        "  graph built again in one component reuses the loaded model.",
        "- Operands take Python's operators: `+ - * /`, unary `-` and `abs()`; `< <= > >=` give",
        "  u8 masks (`==` and `!=` compare the operands as objects, so they stay usable in sets",
        "  and dicts: use `equal`); indexing is numpy's basic indexing (`x[0]`, `x[:, 1:3]`,",
        "  `x[..., ::-1]`, `None` for a new axis), lowered to one Slice and a Squeeze/Unsqueeze.",
        "- `Model.load(..., preprocess=, postprocess=)` splices the same operations into an",
        "  ONNX or OpenVINO IR model; into IR they are written as the layers OpenVINO's ONNX",
        "  reader makes of them.",
        "",
        "## The builder",
        "",
        "| wasinn | WebNN | what it does |",
        "|---|---|---|",
    ]
    for name in CORE:
        fn = getattr(GraphBuilder, name)
        webnn = "— (wasinn's own)" if name == "to_onnx" else f"`{webnn_name(name)}`"
        lines.append(f"| `{name}` | {webnn} | {summary(fn)} |")
    for title, module, cls in FAMILIES:
        lines += ["", f"## {title}", ""]
        notes = (inspect.getdoc(module) or "").split("\n\n")[1:]
        lines += [*"\n\n".join(notes).splitlines(), ""] if notes else []
        lines += ["| wasinn | WebNN | what it does |", "|---|---|---|"]
        for name in operations(cls):
            webnn = "— (wasinn's own)" if name in OWN else f"`{webnn_name(name)}`"
            lines.append(f"| `{name}` | {webnn} | {summary(getattr(cls, name))} |")
    if LEFT_OUT:
        lines += ["", "## Left out", "", "| WebNN | why |", "|---|---|"]
        lines += [f"| `{op}` | {why} |" for op, why in LEFT_OUT.items()]
    return "\n".join(lines) + "\n"


def test_every_operation_has_a_docstring() -> None:
    for _, _, cls in FAMILIES:
        for name in operations(cls):
            assert summary(getattr(cls, name)), f"GraphBuilder.{name} has no docstring"


def test_every_webnn_operation_is_provided_or_left_out_with_a_reason() -> None:
    provided = {webnn_name(n) for _, _, cls in FAMILIES for n in operations(cls)}
    missing = [op for op in WEBNN_OPS if op not in provided and op not in LEFT_OUT]
    assert not missing, f"WebNN operations neither provided nor listed in LEFT_OUT: {missing}"
    extra = sorted(provided - set(WEBNN_OPS) - {webnn_name(n) for n in OWN})
    assert not extra, f"operations with no WebNN counterpart (check WEBNN_SPELLING): {extra}"


def test_builder_doc_is_current() -> None:
    assert DOC.exists() and DOC.read_text() == render_doc(), (
        "docs/builder.md is out of date: run `.venv/bin/python tests/test_builder_doc.py`"
    )


if __name__ == "__main__":
    DOC.write_text(render_doc())
    print(f"wrote {DOC}", file=sys.stderr)
