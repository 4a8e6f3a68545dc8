"""Fuzz: wasinn's OpenVINO IR reader (``wasinn._formats.ir.read``).

On mutated real models (byte-level and XML-structure-aware mutations, any XML
encoding declaration): metadata or ``ModelFormatError``, quickly. On IR that
OpenVINO writes from random specs: the same inputs and outputs (names, shapes,
element types) as ``openvino.Core.read_model`` reads. See fuzzing.py for budgets
and limits.
"""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from fuzzing import BYTE_OPS, FUZZ, ROOT, Corpus, Ops, Seeds, mutate, ran, read_meta
from hypothesis import example, given
from hypothesis import strategies as st

from wasinn._formats import ir as _ir

pytestmark = pytest.mark.fuzz

DIGITS_XML = ROOT / "apps" / "digits" / "model" / "digits.xml"


def read_ir(xml: bytes) -> Any:
    """IR metadata, or None for ModelFormatError."""
    info = read_meta(_ir.read, xml, "fuzzed.xml")
    if info is not None:
        assert type(info.weights_needed) is int and info.weights_needed >= 0
    return info


@pytest.fixture(scope="module")
def ir_corpus(model_dir: Path) -> Seeds:
    """digits.xml and the tests' tiny IR models, as bytes."""
    paths = [DIGITS_XML, *sorted(model_dir.glob("*.xml")), *sorted(model_dir.glob("*/*.xml"))]
    corpus = Corpus(p.read_bytes() for p in paths)
    assert len(corpus) >= 10 and all(read_ir(x) is not None for x in corpus)
    return corpus


@FUZZ
@given(st.integers(0, 99), st.lists(BYTE_OPS, min_size=1, max_size=8))
def test_ir_reader_survives_byte_mutations(ir_corpus: Seeds, seed: int, ops: Ops) -> None:
    data = mutate(ir_corpus[seed % len(ir_corpus)], ops, ir_corpus)
    ran("metadata" if read_ir(data) is not None else "refused")


IR_TAGS = (
    "net", "layers", "layer", "edges", "edge", "data", "input", "output", "port", "dim", "rt_info",
)  # fmt: skip
XML_NAMES = st.from_regex(r"[a-z_][a-z0-9_.-]{0,8}", fullmatch=True)
IR_ATTRS = (
    "id", "name", "type", "version", "shape", "element_type", "offset", "size", "precision",
    "names", "from-layer", "from-port", "to-layer", "to-port", "output_names",
)  # fmt: skip
XML_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
GARBAGE = st.one_of(
    st.sampled_from((
        "", " ", "-1", "?", "..", "1..4", "-3", "0", "4294967296", "9" * 5000, "1e3", "0x10", " 7 ",
        "+5", "\u0661\u0662", "1_000", "nan", ",", "\\", "\\,", "a\\,b,c", ",,", "f32", "FP16",
        "boolean", "Parameter", "Result", "Const", "\t", "\U0001f600", "?,?", "1,,2", "-1,?,3",
        "1..", "..2", "0,-5", "3,4", "1" * 400,
    )),
    XML_TEXT,
)  # fmt: skip
XML_OPS = st.one_of(
    st.tuples(st.just("drop"), st.integers(0, 10**4)),
    st.tuples(st.just("dup"), st.integers(0, 10**4)),
    st.tuples(st.just("move"), st.integers(0, 10**4), st.integers(0, 10**4)),
    st.tuples(st.just("swap"), st.integers(0, 10**4)),
    st.tuples(st.just("retag"), st.integers(0, 10**4), st.sampled_from(IR_TAGS) | XML_NAMES),
    st.tuples(st.just("drop-attr"), st.integers(0, 10**4), st.integers(0, 20)),
    st.tuples(
        st.just("rename-attr"), st.integers(0, 10**4), st.integers(0, 20), st.sampled_from(IR_ATTRS)
    ),
    st.tuples(st.just("set-attr"), st.integers(0, 10**4), st.sampled_from(IR_ATTRS), GARBAGE),
    st.tuples(st.just("garbage"), st.integers(0, 10**4), GARBAGE),
    st.tuples(st.just("text"), st.integers(0, 10**4), GARBAGE),
)  # fmt: skip


def mutate_xml(xml: bytes, ops: Ops) -> bytes:
    """Apply element/attribute-level ``ops`` (from XML_OPS) to an IR document."""
    root = ET.fromstring(xml)
    for op in ops:
        elements = list(root.iter())
        parent = {child: p for p in elements for child in p}
        node = elements[op[1] % len(elements)]
        kind = op[0]
        if kind in ("drop", "dup", "swap") and node in parent:
            siblings = parent[node]
            i = list(siblings).index(node)
            if kind == "drop":
                siblings.remove(node)
            elif kind == "dup":
                siblings.insert(i, copy.deepcopy(node))
            elif i + 1 < len(siblings):
                siblings.remove(node)
                siblings.insert(i + 1, node)
        elif kind == "move" and node in parent:
            target = elements[op[2] % len(elements)]
            if node not in list(target.iter()) and target is not parent[node]:
                parent[node].remove(node)
                target.append(node)
        elif kind == "retag":
            node.tag = op[2]
        elif kind in ("drop-attr", "rename-attr") and node.attrib:
            name = sorted(node.attrib)[op[2] % len(node.attrib)]
            value = node.attrib.pop(name)
            if kind == "rename-attr":
                node.set(op[3], value)
        elif kind == "set-attr":
            node.set(op[2], op[3])
        elif kind == "garbage":  # the values the reader parses: dims, offsets, sizes, names, types
            targets = [(e, a) for e in elements for a in e.attrib if a in IR_ATTRS]
            targets += [(e, None) for e in elements if e.tag == "dim"]
            if targets:
                e, a = targets[op[1] % len(targets)]
                if a is None:
                    e.text = op[2]
                else:
                    e.set(a, op[2])
        elif kind == "text":
            node.text = op[2]
    return b'<?xml version="1.0"?>\n' + ET.tostring(root, encoding="unicode").encode("utf-8")


@FUZZ
@given(
    st.integers(0, 99), st.lists(XML_OPS, min_size=1, max_size=6), st.lists(BYTE_OPS, max_size=2)
)
def test_ir_reader_survives_structured_mutations(
    ir_corpus: Seeds, seed: int, ops: Ops, then: Ops
) -> None:
    data = mutate(mutate_xml(ir_corpus[seed % len(ir_corpus)], ops), then, ir_corpus)
    ran("metadata" if read_ir(data) is not None else "refused")


XML_ENCODINGS = st.one_of(
    st.sampled_from((
        "utf-8", "UTF-8", "latin-1", "ascii", "utf-16", "utf-32", "utf-7", "big5", "shift_jis",
        "cp037", "koi8-r", "rot13", "base64", "undefined", "idna", "punycode", "mbcs", "bogus",
    )),
    st.from_regex(r"[A-Za-z][A-Za-z0-9._-]{0,15}", fullmatch=True),
)  # fmt: skip


@FUZZ
@example(seed=0, encoding="bogus")
@example(seed=0, encoding="utf-16")
@given(seed=st.integers(0, 99), encoding=XML_ENCODINGS)
def test_ir_reader_survives_any_xml_encoding_declaration(
    ir_corpus: Seeds, seed: int, encoding: str
) -> None:
    ran()
    body = ir_corpus[seed % len(ir_corpus)]
    if body.startswith(b"<?xml"):
        body = body[body.index(b"?>") + 2 :]
    read_ir(f'<?xml version="1.0" encoding="{encoding}"?>'.encode("ascii") + body)


# ---- IR written by OpenVINO from random specs, read back by wasinn and by OpenVINO itself

# Every OpenVINO element type a Parameter can have.
OV_TYPES = (
    "bf16", "f16", "f32", "f64", "u8", "i32", "i64", "i8", "i16", "u16", "u32", "u64", "i4", "u4",
    "u2", "u3", "u6", "nf4", "f8e4m3", "f8e5m2", "f8e8m0", "f4e2m1", "string", "boolean", "u1",
    "dynamic",
)  # fmt: skip
# Tensor names: no backslash and no surrounding spaces (test_ir_tensor_names_... has those).
PLAIN_NAMES = st.text(
    st.characters(exclude_categories=("Cs", "Cc"), exclude_characters="\\"), min_size=1, max_size=6
).filter(lambda n: n == n.strip())
ODD_NAMES = st.text(
    st.characters(exclude_categories=("Cs", "Cc")) | st.sampled_from("\\, "), min_size=1, max_size=6
)
IR_DIMS = st.one_of(
    st.integers(0, 6),
    st.just(-1),
    st.tuples(st.integers(0, 4), st.integers(0, 9)).map(lambda t: (min(t), max(t))),
    st.tuples(st.integers(0, 4), st.just(-1)),
)


@st.composite
def ov_model_specs(
    draw: Any, types: tuple[str, ...] = OV_TYPES, names: Any = PLAIN_NAMES, any_rank: bool = False
) -> Any:
    """([(element type, dims or None for any rank, tensor names)], [(param, via an op, names)])."""
    pool = draw(st.lists(names, min_size=12, max_size=12, unique=True))
    params = []
    for _ in range(draw(st.integers(1, 3))):
        dims = None if any_rank and draw(st.booleans()) else draw(st.lists(IR_DIMS, max_size=4))
        tensor_names = tuple(pool.pop() for _ in range(draw(st.integers(1, 2))))
        params.append((draw(st.sampled_from(types)), dims, tensor_names))
    results = [
        (draw(st.integers(0, len(params) - 1)), draw(st.booleans()), (pool.pop(),))
        for _ in range(draw(st.integers(1, 3)))
    ]
    return params, results


def build_ov_model(spec: Any) -> Any:
    import openvino as ov
    import openvino.opset13 as ops

    params, results = [], []
    for i, (type_name, dims, names) in enumerate(spec[0]):
        shape = (
            ov.PartialShape.dynamic()
            if dims is None
            else ov.PartialShape([ov.Dimension(*d) if isinstance(d, tuple) else d for d in dims])
        )
        p = ops.parameter(shape, getattr(ov.Type, type_name), name=f"p{i}")
        p.output(0).get_tensor().set_names(set(names))
        params.append(p)
    for which, via_op, names in spec[1]:
        source = params[which]
        if via_op and spec[0][which][1]:  # Concat needs rank >= 1
            node = ops.concat([source], 0)
            node.output(0).get_tensor().set_names(set(names))
            source = node
        results.append(ops.result(source))
    return ov.Model(results, params, "fuzz")


@pytest.fixture(scope="module")
def ov_io(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    import openvino as ov

    return ov.Core(), tmp_path_factory.mktemp("fuzz_ir") / "model.xml"


def ir_both_ways(ov_io: tuple[Any, Path], spec: Any) -> tuple[Any, Any]:
    """(what wasinn reads, what OpenVINO reads) from the IR OpenVINO writes for ``spec``."""
    import openvino as ov

    core, path = ov_io
    ov.save_model(build_ov_model(spec), path, compress_to_fp16=False)
    back = core.read_model(path)

    def theirs(port: Any) -> tuple[Any, ...]:
        ps = port.get_partial_shape()
        if ps.rank.is_dynamic:
            return (port.get_any_name(), None, port.get_element_type().get_type_name())
        shape = tuple(None if d.is_dynamic else d.get_length() for d in ps)
        return (port.get_any_name(), shape, port.get_element_type().get_type_name())

    info = read_ir(path.read_bytes())
    assert info is not None, "wasinn refused the IR OpenVINO wrote"
    ours = tuple(
        [(s.name, s.shape, s.dtype) for s in specs] for specs in (info.inputs, info.outputs)
    )
    return ours, ([theirs(p) for p in back.inputs], [theirs(p) for p in back.outputs])


@FUZZ
@given(spec=ov_model_specs())
def test_ir_reader_agrees_with_openvino_on_generated_models(
    ov_io: tuple[Any, Path], spec: Any
) -> None:
    ran()
    ours, theirs = ir_both_ways(ov_io, spec)
    assert ours == theirs


@FUZZ
@example(spec=([("f32", [1], ("a\\x",))], [(0, False, ("y",))]))
@given(spec=ov_model_specs(names=ODD_NAMES))
def test_ir_tensor_names_with_backslashes_and_spaces_match_openvino(
    ov_io: tuple[Any, Path], spec: Any
) -> None:
    ran()
    ours, theirs = ir_both_ways(ov_io, spec)
    assert ours == theirs


@FUZZ
@example(spec=([("f32", [], ("a",)), ("f32", None, ("b",))], [(0, False, ("y",))]))
@given(spec=ov_model_specs(any_rank=True))
def test_ir_dynamic_rank_reads_as_any_rank(ov_io: tuple[Any, Path], spec: Any) -> None:
    ran()
    ours, theirs = ir_both_ways(ov_io, spec)
    assert ours == theirs


@FUZZ  # was a KNOWN BUG ('bool', 'bin', 'unspecified'), fixed in 1f439fa
@example(spec=([("boolean", [2], ("x",))], [(0, True, ("y",))]))
@given(spec=ov_model_specs(types=("boolean", "u1", "dynamic")))
def test_ir_output_dtypes_are_named_like_openvino(ov_io: tuple[Any, Path], spec: Any) -> None:
    ran()
    ours, theirs = ir_both_ways(ov_io, spec)
    assert ours == theirs


def test_harness_mutators_change_and_keep_bytes(ir_corpus: Seeds) -> None:
    seed = ir_corpus[0]
    assert mutate(seed, [], ir_corpus) == seed
    assert mutate(seed, [("truncate", 10)], ir_corpus) == seed[:10]
    assert mutate(seed, [("insert", 0, b"<")], ir_corpus) == b"<" + seed
    assert mutate(seed, [("delete", 0, 5)], ir_corpus) == seed[5:]
    assert _ir.read(mutate_xml(seed, [])).inputs == _ir.read(seed).inputs
    assert mutate_xml(seed, [("retag", 0, "nut")]).startswith(b'<?xml version="1.0"?>\n<nut')
