"""Fuzz: wasinn's ONNX reader (``wasinn._formats.onnx_read.read``), which walks the protobuf itself.

On mutated real models (byte-level, and protobuf-structure-aware: fields
dropped, duplicated, moved, renumbered, retyped, lengths that lie): metadata or
``ModelFormatError``, quickly. On models built from random specs with the
``onnx`` package: the same metadata as test_onnx_meta.py's oracle reads. See
fuzzing.py for budgets and limits.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import onnx
import pytest
from fuzzing import (
    BYTE_OPS,
    FUZZ,
    ROOT,
    TOKENS,
    Corpus,
    Ops,
    Seeds,
    mutate,
    ran,
    read_meta,
    time_limit,
)
from hypothesis import example, given
from hypothesis import strategies as st
from test_onnx_meta import onnx_meta  # the ONNX oracle the shipped models are checked with
from toy_models import varint as toy_varint

from wasinn import ModelFormatError, TensorSpec
from wasinn._formats import onnx_read as _onnx

pytestmark = pytest.mark.fuzz

SILERO = ROOT / "build" / "models" / "silero" / "silero_vad_openvino_16k.onnx"
ONNX_DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"

# Small models of onnx's backend test data with sequences, strings, initializers and
# symbolic dims between them.
ONNX_PICKS = (
    "simple/test_sequence_model1/model.onnx",
    "simple/test_sequence_model3/model.onnx",
    "simple/test_strnorm_model_monday_insensintive_upper_twodim/model.onnx",
    "simple/test_expand_shape_model4/model.onnx",
    "simple/test_gradient_of_add_and_mul/model.onnx",
    "pytorch-operator/test_operator_params/model.onnx",
    "pytorch-operator/test_operator_non_float_params/model.onnx",
    "light/light_zfnet512.onnx",
    "light/light_squeezenet.onnx",
)


def read_onnx(data: bytes) -> Any:
    """ONNX metadata, or None for ModelFormatError."""
    info = read_meta(_onnx.read, data, "fuzzed.onnx")
    if info is not None:
        assert info.opset is None or type(info.opset) is int
        assert info.ir_version is None or type(info.ir_version) is int
        assert info.unknown_rank <= {s.name for s in info.inputs + info.outputs}
    return info


@pytest.fixture(scope="module")
def onnx_small(model_dir: Path) -> Seeds:
    """add_mul.onnx and a few of onnx's own backend test models."""
    picks = [ONNX_DATA / p for p in ONNX_PICKS if (ONNX_DATA / p).exists()]
    paths = [model_dir / "add_mul.onnx", *picks]
    assert len(paths) >= 6, f"onnx's backend test data is missing from {ONNX_DATA}"
    return Corpus(p.read_bytes() for p in paths)


@pytest.fixture(scope="module", params=["silero", "small"])
def onnx_corpus(request: pytest.FixtureRequest, onnx_small: Seeds) -> Seeds:
    if request.param == "small":
        return onnx_small
    if not SILERO.exists():
        pytest.skip(
            f"{SILERO.relative_to(ROOT)} is absent (./build.sh prepares it when building apps/vad)"
        )
    return Corpus((SILERO.read_bytes(),))


@FUZZ
@given(st.integers(0, 99), st.lists(BYTE_OPS, min_size=1, max_size=8))
def test_onnx_reader_survives_byte_mutations(onnx_corpus: Seeds, seed: int, ops: Ops) -> None:
    data = mutate(onnx_corpus[seed % len(onnx_corpus)], ops, onnx_corpus)
    ran("metadata" if read_onnx(data) is not None else "refused")


# A protobuf message as a list of [field, wire type, value, length lie] nodes; a value is
# an int (varint), bytes, or a node list for the sub-messages the ONNX reader descends into.
SUBMESSAGES = {
    "model": {7: "graph", 8: "opset"},
    "graph": {5: "tensor", 11: "value", 12: "value", 15: "sparse"},
    "sparse": {1: "tensor"},
    "value": {2: "type"},
    "type": {1: "tensor_type"},
    "tensor_type": {2: "shape"},
    "shape": {1: "dim"},
}


def _varint_at(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ValueError("bad varint")
        byte = buf[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        shift += 7
        if byte < 0x80:
            return value, pos


def pb_parse(buf: bytes, kind: str) -> list[list[Any]] | None:
    """Parse one message (None if these bytes are not one)."""
    nodes: list[list[Any]] = []
    pos = 0
    try:
        while pos < len(buf):
            key, pos = _varint_at(buf, pos)
            field, wire = key >> 3, key & 7
            if wire == 0:
                value, pos = _varint_at(buf, pos)
            elif wire in (1, 5):
                size = 8 if wire == 1 else 4
                value, pos = buf[pos : pos + size], pos + size
            elif wire == 2:
                size, pos = _varint_at(buf, pos)
                value, pos = buf[pos : pos + size], pos + size
                sub = SUBMESSAGES.get(kind, {}).get(field)
                if sub is not None and (parsed := pb_parse(value, sub)) is not None:
                    value = parsed
            else:
                return None
            if pos > len(buf):
                return None
            nodes.append([field, wire, value, 0])
    except ValueError:
        return None
    return nodes


def varint(n: int) -> bytes:
    """Negatives as two's complement; values past 64 bits stay long."""
    return toy_varint(n, bits=80)


def pb_write(nodes: list[list[Any]]) -> bytes:
    out = bytearray()
    for field, wire, value, lie in nodes:
        out += varint((field << 3) | wire)
        if isinstance(value, list):
            value = pb_write(value)
        if wire == 0:
            out += varint(value if isinstance(value, int) else len(value))
        elif wire == 2:
            payload = varint(value) if isinstance(value, int) else value
            out += varint(max(0, len(payload) + lie)) + payload
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if isinstance(value, int):
                value = (value % (1 << (8 * size))).to_bytes(size, "little")
            raw = value
            out += (raw + bytes(size))[:size]
    return bytes(out)


def pb_copy(nodes: list[list[Any]]) -> list[list[Any]]:
    return [[f, w, pb_copy(v) if isinstance(v, list) else v, lie] for f, w, v, lie in nodes]


def pb_places(nodes: list[list[Any]]) -> list[tuple[list[list[Any]], int]]:
    """Every (message, index) in a tree, outermost first."""
    out = [(nodes, i) for i in range(len(nodes))]
    for node in nodes:
        if isinstance(node[2], list):
            out += pb_places(node[2])
    return out


VARINTS = st.one_of(
    st.sampled_from((0, 1, 2**31 - 1, 2**31, 2**32, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**70, -1)),
    st.integers(0, 2**64),
)
PB_FIELDS = st.sampled_from((0, 1, 2, 5, 7, 8, 11, 12, 15, 2**29 - 1, 2**29, 2**32))
PB_BYTES = st.one_of(
    st.binary(max_size=16), st.sampled_from(TOKENS), st.text(max_size=8).map(str.encode)
)
PB_OPS = st.one_of(
    st.tuples(st.just("drop"), st.integers(0, 10**6)),
    st.tuples(st.just("dup"), st.integers(0, 10**6)),
    st.tuples(st.just("swap"), st.integers(0, 10**6)),
    st.tuples(st.just("move"), st.integers(0, 10**6), st.integers(0, 10**6)),
    st.tuples(st.just("field"), st.integers(0, 10**6), PB_FIELDS | st.integers(1, 20)),
    st.tuples(st.just("wire"), st.integers(0, 10**6), st.integers(0, 7)),
    st.tuples(st.just("int"), st.integers(0, 10**6), VARINTS),
    st.tuples(st.just("bytes"), st.integers(0, 10**6), PB_BYTES),
    st.tuples(st.just("lie"), st.integers(0, 10**6), st.sampled_from((-3, -1, 1, 2, 1000, 2**40))),
    st.tuples(
        st.just("insert"), st.integers(0, 10**6), st.integers(0, 20), st.integers(0, 7),
        VARINTS | st.binary(max_size=8),
    ),
)  # fmt: skip


def mutate_pb(tree: list[list[Any]], ops: Ops) -> bytes:
    tree = pb_copy(tree)
    for op in ops:
        places = pb_places(tree)
        if not places:
            tree.append([op[1] % 16, 0, 0, 0])
            continue
        msg, i = places[op[1] % len(places)]
        node, kind = msg[i], op[0]
        if kind == "drop":
            del msg[i]
        elif kind == "dup":
            msg.insert(i, pb_copy([node])[0])
        elif kind == "swap" and i + 1 < len(msg):
            msg[i], msg[i + 1] = msg[i + 1], msg[i]
        elif kind == "move":
            targets = [m[j][2] for m, j in places if isinstance(m[j][2], list) and m[j] is not node]
            if targets:
                del msg[i]
                targets[op[2] % len(targets)].append(node)
        elif kind == "field":
            node[0] = op[2]
        elif kind == "wire":
            node[1] = op[2]
        elif kind == "int":
            node[2] = op[2]
        elif kind == "bytes":
            node[2] = op[2]
        elif kind == "lie":
            node[3] = op[2]
        elif kind == "insert":
            msg.insert(i, [op[2], op[3], op[4], 0])
    return pb_write(tree)


@pytest.fixture(scope="module")
def onnx_trees(onnx_corpus: Seeds) -> tuple[list[list[Any]], ...]:
    trees = Corpus(pb_parse(data, "model") for data in onnx_corpus)
    # the mutator's own round trip is exact
    for data, tree in zip(onnx_corpus, trees, strict=True):
        assert tree is not None and pb_write(tree) == data
    return trees


@FUZZ
@given(st.integers(0, 99), st.lists(PB_OPS, min_size=1, max_size=6))
def test_onnx_reader_survives_structured_mutations(
    onnx_trees: tuple[list[list[Any]], ...], seed: int, ops: Ops
) -> None:
    data = mutate_pb(onnx_trees[seed % len(onnx_trees)], ops)
    ran("metadata" if read_onnx(data) is not None else "refused")


# ---- ONNX models built from random specs, read back by wasinn and by onnx itself

NAMES = st.text(st.characters(exclude_categories=("Cs",)), max_size=6)
DIMS = st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(-2, 9), NAMES, st.none())
ELEM_TYPES = st.none() | st.integers(0, 30) | st.integers(-(2**31), 2**31 - 1)
OTHER_KINDS = ("none", "empty", "sequence", "map", "optional", "sparse", "opaque")
TYPES = st.one_of(
    st.tuples(st.just("tensor"), ELEM_TYPES, st.none() | st.lists(DIMS, max_size=4)),
    st.tuples(st.sampled_from(OTHER_KINDS)),
)


def fill_type(tp: onnx.TypeProto, spec: tuple[Any, ...]) -> None:
    kind = spec[0]
    if kind == "tensor":
        tt = tp.tensor_type
        tt.SetInParent()
        if spec[1] is not None:
            tt.elem_type = spec[1]
        if spec[2] is not None:
            tt.shape.SetInParent()  # present but possibly empty: rank 0
            for d in spec[2]:
                dim = tt.shape.dim.add()
                if isinstance(d, int):
                    dim.dim_value = d
                elif isinstance(d, str):
                    dim.dim_param = d
    elif kind == "empty":
        tp.SetInParent()
    elif kind == "sequence":
        tp.sequence_type.elem_type.tensor_type.elem_type = 1
    elif kind == "map":
        tp.map_type.key_type = 7
        tp.map_type.value_type.tensor_type.elem_type = 1
    elif kind == "optional":
        tp.optional_type.elem_type.tensor_type.elem_type = 2
    elif kind == "sparse":
        tp.sparse_tensor_type.elem_type = 1
    elif kind == "opaque":
        tp.opaque_type.domain = "x"


@st.composite
def onnx_models(draw: Any) -> bytes:
    """One or two (concatenated, so protobuf merges them) models with random graph I/O."""
    pool = draw(st.lists(NAMES, unique=True, max_size=14))
    parts = []
    for _ in range(draw(st.integers(1, 2))):
        m = onnx.ModelProto()
        if draw(st.booleans()):
            m.ir_version = draw(st.integers(-(2**63), 2**63 - 1))
        for domain, version in draw(st.lists(st.tuples(
            st.sampled_from(("", "ai.onnx", "ai.onnx.ml", "com.microsoft", "AI.ONNX", "ai.onnx "))
            | NAMES,
            st.none() | st.integers(-(2**63), 2**63 - 1),
        ), max_size=3)):  # fmt: skip
            o = m.opset_import.add()
            o.domain = domain
            if version is not None:
                o.version = version
        if draw(st.integers(0, 9)):  # usually a graph
            g = m.graph
            g.SetInParent()
            for where in (g.input, g.output):
                for _ in range(draw(st.integers(0, 3))):
                    if not pool:  # names stay unique, so "unknown rank" means one value
                        break
                    vi = where.add()
                    vi.name = pool.pop()
                    spec = draw(TYPES)
                    if spec[0] != "none":
                        fill_type(vi.type, spec)
            for vi in list(g.input):  # some inputs are initializers too (IR 3 style)
                if draw(st.integers(0, 3)) == 0:
                    if draw(st.booleans()):
                        g.initializer.add(name=vi.name, data_type=1)
                    else:
                        g.sparse_initializer.add().values.name = vi.name
            if pool and draw(st.booleans()):  # a weight that is not an input
                g.initializer.add(name=pool.pop(), data_type=1, raw_data=b"\0" * 4)
            g.node.add(op_type="Identity", input=["a"], output=["b"])
        parts.append(m.SerializeToString())
    return b"".join(parts)


@FUZZ
@given(onnx_models())
def test_onnx_reader_agrees_with_onnx_on_generated_models(data: bytes) -> None:
    model = onnx.ModelProto.FromString(data)
    if not model.HasField("graph"):
        ran("no graph")
        with time_limit(), pytest.raises(ModelFormatError, match="no graph" if data else "empty"):
            _onnx.read(data)
        return
    ran("graph")
    info = read_onnx(data)

    def ours(s: TensorSpec) -> tuple[Any, ...]:
        return (s.name, s.shape, s.dtype, s.name in info.unknown_rank)

    inputs, outputs = [ours(s) for s in info.inputs], [ours(s) for s in info.outputs]
    # The oracle is the one test_onnx_meta.py checks the shipped models with.
    assert (inputs, outputs, info.opset, info.ir_version) == onnx_meta(model)


@FUZZ
@example(dims=[2, 2])
@given(dims=st.lists(st.integers(0, 9), max_size=4))
def test_onnx_unknown_rank_only_names_shapeless_values(dims: list[int]) -> None:
    from onnx import TensorProto, helper

    ran()
    graph = helper.make_graph(
        [],
        "constant_output",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],  # IR 3 style weight input
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
        initializer=[helper.make_tensor("x", TensorProto.FLOAT, [1], [0.0])],
    )
    info = read_onnx(helper.make_model(graph).SerializeToString())
    assert [(s.name, s.shape) for s in info.outputs] == [("x", tuple(dims))]
    assert info.unknown_rank == frozenset()


def test_harness_protobuf_mutator_round_trips(onnx_small: Seeds) -> None:
    for data in onnx_small:
        tree = pb_parse(data, "model")
        assert tree is not None and pb_write(tree) == data
        assert mutate_pb(tree, []) == data
        assert mutate_pb(tree, [("drop", 0)]) == data[len(pb_write(tree[:1])) :]
    assert varint(300) == b"\xac\x02" and _varint_at(b"\xac\x02", 0) == (300, 2)
