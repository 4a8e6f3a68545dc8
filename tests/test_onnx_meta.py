"""ONNX metadata read by wasinn agrees with the onnx package's own reading.

Comparison rule (see wasinn._formats.onnx_read): each input or output is compared as
``(name, shape, dtype, unknown_rank)``. onnx's side: a ``dim`` with a
non-negative ``dim_value`` is that int, any other ``dim`` is None; a tensor
type without a ``shape`` field is ``shape=None`` with ``unknown_rank=True``;
a non-tensor type is ``shape=()`` with the kind's name as dtype. Graph
inputs that name an initializer (dense or sparse) are left out.

The onnx wheel ships only ~150 model files under backend/test/data (the
node tests' files are not in the wheel), so the node and model test cases
are also generated with onnx's own generator and compared from memory.
"""

from __future__ import annotations

import random
import subprocess
import sys
import tempfile
import time
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from wasinn import ModelFormatError
from wasinn._formats import onnx_read as _onnx
from wasinn._formats import source as _source

ROOT = Path(__file__).resolve().parent.parent
ONNX_DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"

# onnx's TensorProto.DataType names -> the dtype wasinn reports.
EXPECTED_DTYPE = {
    "UNDEFINED": "undefined", "FLOAT": "f32", "UINT8": "u8", "INT8": "i8", "UINT16": "u16",
    "INT16": "i16", "INT32": "i32", "INT64": "i64", "STRING": "string", "BOOL": "boolean",
    "FLOAT16": "f16", "DOUBLE": "f64", "UINT32": "u32", "UINT64": "u64",
    "COMPLEX64": "complex64", "COMPLEX128": "complex128", "BFLOAT16": "bf16",
    "FLOAT8E4M3FN": "f8e4m3fn", "FLOAT8E4M3FNUZ": "f8e4m3fnuz", "FLOAT8E5M2": "f8e5m2",
    "FLOAT8E5M2FNUZ": "f8e5m2fnuz", "UINT4": "u4", "INT4": "i4", "FLOAT4E2M1": "f4e2m1",
    "FLOAT8E8M0": "f8e8m0", "UINT2": "u2", "INT2": "i2", "FLOAT6E2M3": "f6e2m3",
    "FLOAT6E3M2": "f6e3m2",
}  # fmt: skip
EXPECTED_KIND = {
    "sequence_type": "sequence", "map_type": "map", "optional_type": "optional",
    "sparse_tensor_type": "sparse-tensor", "opaque_type": "opaque", None: "undefined",
}  # fmt: skip

Spec = tuple[str, tuple[Any, ...] | None, str, bool]
Meta = tuple[list[Spec], list[Spec], Any, Any]


def onnx_spec(vi: onnx.ValueInfoProto) -> Spec:
    kind = vi.type.WhichOneof("value")
    if kind != "tensor_type":
        return (vi.name, (), EXPECTED_KIND[kind], False)
    tt = vi.type.tensor_type
    if tt.elem_type in TensorProto.DataType.values():
        dtype = EXPECTED_DTYPE[TensorProto.DataType.Name(tt.elem_type)]
    else:
        dtype = f"onnx-type-{tt.elem_type}"
    if not tt.HasField("shape"):
        return (vi.name, None, dtype, True)
    dims = tuple(
        d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else None for d in tt.shape.dim
    )
    return (vi.name, dims, dtype, False)


def onnx_meta(model: onnx.ModelProto) -> Meta:
    g = model.graph
    weights = {t.name for t in g.initializer} | {s.values.name for s in g.sparse_initializer}
    opset = None
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            opset = o.version if o.HasField("version") else None
    return (
        [onnx_spec(vi) for vi in g.input if vi.name not in weights],
        [onnx_spec(vi) for vi in g.output],
        opset,
        model.ir_version if model.HasField("ir_version") else None,
    )


def wasinn_meta(data: bytes, where: str = "the model") -> Meta:
    info = _onnx.read(data, where)

    def spec(s: Any) -> Spec:
        return (s.name, s.shape, s.dtype, s.name in info.unknown_rank)

    inputs, outputs = [spec(s) for s in info.inputs], [spec(s) for s in info.outputs]
    return inputs, outputs, info.opset, info.ir_version


def shipped_models() -> list[Path]:
    """Every model file in the installed onnx package's backend test data."""
    return sorted(ONNX_DATA.rglob("model.onnx")) + sorted(ONNX_DATA.rglob("light_*.onnx"))


@pytest.fixture(scope="module")
def generated_models() -> list[tuple[str, bytes]]:
    """onnx's node and model test cases, built by onnx's own generator (~4 s)."""
    from onnx.backend.test.case import model as model_cases
    from onnx.backend.test.case import node as node_cases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node_cases.collect_testcases() + model_cases.collect_testcases()
    return [(c.name, c.model.SerializeToString()) for c in cases if c.model is not None]


# Models where wasinn and onnx may disagree, with the reason. Empty: all agree.
KNOWN_DISAGREEMENTS: dict[str, str] = {}


def test_agrees_with_onnx_on_its_backend_test_models(
    generated_models: list[tuple[str, bytes]], record_property: Callable[[str, Any], None]
) -> None:
    shipped = shipped_models()
    assert len(shipped) >= 100, f"only {len(shipped)} model files under {ONNX_DATA}"
    corpus = [(str(p.relative_to(ONNX_DATA)), p.read_bytes()) for p in shipped] + generated_models
    compared, agreed, differ = 0, 0, []
    for name, data in corpus:
        model = onnx.ModelProto.FromString(data)
        compared += 1
        if wasinn_meta(data, name) == onnx_meta(model):
            agreed += 1
        elif name not in KNOWN_DISAGREEMENTS:
            differ.append(name)
    summary = (
        f"{compared} onnx models compared ({len(shipped)} shipped files, "
        f"{len(generated_models)} generated), {agreed} agree"
    )
    record_property("onnx_models", summary)
    print(summary)
    assert not differ, f"{len(differ)} disagree, e.g. {differ[:10]}"
    assert compared >= 300


def test_agrees_on_this_repos_models(model_dir: Path) -> None:
    paths = [model_dir / "add_mul.onnx", *sorted((ROOT / "build" / "models").rglob("*.onnx"))]
    for path in paths:
        data = path.read_bytes()
        assert wasinn_meta(data, path.name) == onnx_meta(onnx.load(path, load_external_data=False))
    info = _onnx.read((model_dir / "add_mul.onnx").read_bytes())
    assert [str(s) for s in info.inputs] == ["a: f32[2, 2]", "b: f32[2, 2]"]
    assert [str(s) for s in info.outputs] == ["total: f32[2, 2]", "scaled: f32[2, 2]"]
    assert (info.opset, info.ir_version, info.unknown_rank) == (13, 8, frozenset())


def test_every_onnx_type_has_a_name() -> None:
    assert set(TensorProto.DataType.keys()) <= set(EXPECTED_DTYPE)


def _odd_model() -> onnx.ModelProto:
    """Types and shapes the test corpus barely has: each kind of value, odd dims."""
    seq = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    map_t = helper.make_map_type_proto(
        TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, [1])
    )
    opt = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.INT8, [2]))
    sparse = helper.make_sparse_tensor_type_proto(TensorProto.FLOAT, [3, 3])
    opaque = onnx.TypeProto()
    opaque.opaque_type.domain = "x"
    odd_dims = helper.make_tensor_type_proto(TensorProto.FLOAT, [0, -1, "batch", None])
    bad_elem = helper.make_tensor_type_proto(TensorProto.FLOAT, [1])
    bad_elem.tensor_type.elem_type = 999
    sparse_init = helper.make_sparse_tensor(
        helper.make_tensor("sw", TensorProto.FLOAT, [1], [1.0]),
        helper.make_tensor("sw_i", TensorProto.INT64, [1], [0]),
        [4],
    )
    graph = helper.make_graph(
        [],
        "odd",
        [
            helper.make_tensor_value_info("unranked", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("scalar", TensorProto.DOUBLE, []),
            helper.make_value_info("seq", seq),
            helper.make_value_info("map", map_t),
            helper.make_value_info("opt", opt),
            helper.make_value_info("sparse", sparse),
            helper.make_value_info("opaque", opaque),
            helper.make_value_info("odd_dims", odd_dims),
            helper.make_value_info("bad_elem", bad_elem),
            onnx.ValueInfoProto(name="untyped"),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("sw", TensorProto.FLOAT, [4]),
            helper.make_tensor_value_info("naïve ✓", TensorProto.FLOAT8E4M3FN, [1]),
        ],
        [helper.make_tensor_value_info("unranked", TensorProto.FLOAT, None)],
        initializer=[helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0])],
        sparse_initializer=[sparse_init],
    )
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("ai.onnx.ml", 3), helper.make_opsetid("ai.onnx", 21)],
    )


def test_odd_types_and_shapes() -> None:
    model = _odd_model()
    data = model.SerializeToString()
    assert wasinn_meta(data) == onnx_meta(model)
    info = _onnx.read(data)
    by_name = {s.name: s for s in info.inputs}
    assert "w" not in by_name and "sw" not in by_name
    assert by_name["unranked"].shape is None and by_name["scalar"].shape == ()
    assert info.unknown_rank == {"unranked"}
    assert by_name["odd_dims"].shape == (0, None, None, None)
    assert [by_name[k].dtype for k in ("seq", "map", "opt", "sparse", "opaque", "untyped")] == [
        "sequence", "map", "optional", "sparse-tensor", "opaque", "undefined",
    ]  # fmt: skip
    assert by_name["bad_elem"].dtype == "onnx-type-999"
    assert by_name["naïve ✓"].dtype == "f8e4m3fn"
    assert info.opset == 21


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append(n & 0x7F | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _ld(field: int, payload: bytes) -> bytes:
    return _key(field, 2) + _varint(len(payload)) + payload


def test_repeated_singular_fields_merge_like_protobuf() -> None:
    """Concatenated messages merge: scalars keep the last value, oneofs the last member."""
    a = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "n"]).SerializeToString()
    b = helper.make_tensor_value_info("y", TensorProto.INT64, [5]).SerializeToString()
    seq = helper.make_value_info(
        "z", helper.make_sequence_type_proto(helper.make_tensor_type_proto(1, [1]))
    ).SerializeToString()
    # One input whose ValueInfoProto is a+b (tensor types merge: dims append)
    # and one whose is a+seq+b (the sequence member clears the first tensor type).
    graph = _ld(11, a + b) + _ld(11, a + seq + b) + _ld(12, b)
    head = helper.make_model(helper.make_graph([], "g", [], [])).SerializeToString()
    data = head + _ld(7, graph) + _key(1, 0) + _varint(7)
    assert wasinn_meta(data) == onnx_meta(onnx.ModelProto.FromString(data))
    info = _onnx.read(data)
    assert [str(s) for s in info.inputs] == ["y: i64[1, ?, 5]", "y: i64[5]"]
    assert info.ir_version == 7


def _check(data: bytes, budget: float = 2.0) -> None:
    """Reading gives metadata or ModelFormatError, nothing else, and quickly."""
    start = time.perf_counter()
    try:
        info = _onnx.read(data, "the test model")
        assert isinstance(info, _onnx.OnnxInfo)
    except ModelFormatError as exc:
        assert "the test model" in str(exc)
    assert time.perf_counter() - start < budget


def _bigger_models() -> list[bytes]:
    paths = sorted(ONNX_DATA.rglob("*.onnx"), key=lambda p: p.stat().st_size)
    biggest, middling = paths[-1].read_bytes(), paths[len(paths) // 2].read_bytes()
    return [biggest, middling, _odd_model().SerializeToString()]


def test_every_prefix_is_metadata_or_model_format_error(model_dir: Path) -> None:
    small = (model_dir / "add_mul.onnx").read_bytes()
    for n in range(len(small)):
        _check(small[:n])
    with pytest.raises(ModelFormatError, match="truncated"):
        _onnx.read(small[:-3])
    rng = random.Random(1234)
    for data in _bigger_models():
        for n in rng.sample(range(len(data)), min(300, len(data))):
            _check(data[:n])


def test_random_byte_flips(model_dir: Path) -> None:
    rng = random.Random(5678)
    for data in [(model_dir / "add_mul.onnx").read_bytes(), *_bigger_models()]:
        for _ in range(300):
            corrupt = bytearray(data)
            for _ in range(rng.randint(1, 4)):
                corrupt[rng.randrange(len(corrupt))] = rng.randrange(256)
            _check(bytes(corrupt))


def test_not_onnx_at_all() -> None:
    rng = random.Random(42)
    xml = b'<?xml version="1.0"?>\n<net name="m" version="11"><layers/></net>\n'
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x08\x00\x00\x00\x08\x08\x02\x00\x00\x00"
    noise = [rng.randbytes(n) for n in (1, 7, 100, 5000) for _ in range(50)]
    for data in [xml, png, b"\x00", b"\xff" * 20, b"hello world", *noise]:
        _check(data)
    with pytest.raises(ModelFormatError, match="empty"):
        _onnx.read(b"", "empty.onnx")
    with pytest.raises(ModelFormatError, match="look like XML"):
        _onnx.read(xml)
    with pytest.raises(ModelFormatError):
        _onnx.read(png)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (onnx.ModelProto(ir_version=8).SerializeToString(), "no graph"),
        (_key(1, 0) + b"\xff" * 10 + b"\x01", "longer than 10 bytes"),
        (_key(7, 2) + _varint(1 << 60) + b"x", "truncated"),  # an absurd length
        (_key(9, 3) + _key(9, 4), "wire type 3"),
        (_key(7, 0) + b"\x01", "wire type 0, not 2"),
        (_key(0, 0) + b"\x01", "field numbered 0"),
        (_ld(7, _ld(11, _ld(1, b"\xff\xfe"))), "not valid UTF-8"),
        (
            _ld(7, _ld(5, b"\x0a\x05ab")) + _key(1, 0) + b"\x08",
            "corrupt: a length-delimited field of TensorProto runs past the end of its enclosing",
        ),
    ],
    ids=["no-graph", "long-varint", "absurd-length", "group", "wrong-wire-type", "field-0",
         "bad-utf8", "inner-overrun"],
)
def test_corrupt_models_are_explained(data: bytes, message: str) -> None:
    with pytest.raises(ModelFormatError, match=message) as err:
        _onnx.read(data, "bad.onnx")
    assert str(err.value).startswith("bad.onnx ")


def test_bytes_like_inputs(model_dir: Path) -> None:
    data = (model_dir / "add_mul.onnx").read_bytes()
    want = wasinn_meta(data)
    assert wasinn_meta(bytearray(data)) == want  # type: ignore[arg-type]
    assert wasinn_meta(memoryview(data)) == want  # type: ignore[arg-type]


def test_big_model_weights_are_skipped_not_inputs() -> None:
    """A ~50 MB initializer, also listed as a graph input as IR 3 exporters did."""
    weights = numpy_helper.from_array(np.zeros((3200, 4096), dtype=np.float32), "weights")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "weights"], ["y"])],
        "big",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3200]),
            helper.make_tensor_value_info("weights", TensorProto.FLOAT, [3200, 4096]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4096])],
        initializer=[weights],
    )
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
    del weights, graph
    assert len(data) > 50_000_000
    info = _onnx.read(data)
    assert [str(s) for s in info.inputs] == ["x: f32[?, 3200]"]
    assert [str(s) for s in info.outputs] == ["y: f32[?, 4096]"]
    assert info.opset == 13


# ---------------------------------------------------------------- metadata_props


def ort_metadata(data: bytes) -> dict[str, str]:
    """onnxruntime's reading of a model's metadata_props (the oracle)."""
    import onnxruntime

    session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    return dict(session.get_modelmeta().custom_metadata_map)


def _meta_model(entries: list[tuple[str, str]]) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    for key, value in entries:
        model.metadata_props.add(key=key, value=value)
    return model


def test_metadata_props_match_onnxruntime(model_dir: Path) -> None:
    data = (model_dir / "metadata.onnx").read_bytes()
    meta = _onnx.read(data).metadata
    assert meta == ort_metadata(data)
    assert meta["dup"] == "second"  # a repeated key: the last one wins
    assert meta[""] == "empty key" and meta["empty value"] == ""
    assert meta["ünï/κλειδί"] == "✓値\n\t\x00end"
    assert meta["characters"].split("\n") == [chr(0x4E00 + i) for i in range(3000)]
    entries = onnx.load(model_dir / "metadata.onnx").metadata_props
    assert len(entries) == 7 and len(meta) == 6 == len({e.key for e in entries})
    # OpenVINO's reader files them under "framework" and keeps the first of a repeated
    # key: the _onnx docstring says so, this keeps it honest.
    ov = pytest.importorskip("openvino")
    framework = ov.Core().read_model(model_dir / "metadata.onnx").get_rt_info()["framework"]
    assert framework["dup"].astype(str) == "first"
    assert framework["characters"].astype(str) == meta["characters"]
    # Through Model.load's source resolution, from a path and from bytes.
    assert _source.resolve(model_dir / "metadata.onnx", None).metadata == meta
    assert _source.resolve(data, None).metadata == meta


def test_no_metadata_props_is_an_empty_dict(model_dir: Path) -> None:
    data = (model_dir / "add_mul.onnx").read_bytes()
    assert _onnx.read(data).metadata == {} == ort_metadata(data)
    assert _source.resolve(data, "onnx").metadata == {}


def test_metadata_entries_missing_repeated_or_split_fields() -> None:
    """Protobuf rules, as onnxruntime applies them: an absent key or value is "",
    a field repeated inside one entry keeps its last value, and entries may sit
    before the graph or between other fields."""
    entry = onnx.StringStringEntryProto
    head = _meta_model([]).SerializeToString()
    data = (
        _ld(14, entry(value="no key").SerializeToString())
        + head
        + _ld(14, entry(key="no value").SerializeToString())
        + _ld(14, _ld(1, b"k1") + _ld(2, b"v1") + _ld(1, b"k2") + _ld(2, b"v2"))
        + _ld(14, b"")
        + _ld(14, _ld(1, b"extra fields") + _key(3, 0) + b"\x05" + _ld(9, b"x") + _ld(2, b"ok"))
    )
    meta = _onnx.read(data).metadata
    assert meta == ort_metadata(data)
    assert meta == {"": "", "no value": "", "k2": "v2", "extra fields": "ok"}


def test_many_entries_agree_with_onnxruntime() -> None:
    rng = random.Random(99)
    alphabet = "ab/ü✓\n\t \"'<&\x00" + "".join(chr(c) for c in range(0x4E00, 0x4E10))

    def text(most: int) -> str:
        return "".join(rng.choices(alphabet, k=rng.randrange(most)))

    entries = [(text(4), text(50)) for _ in range(300)]
    data = _meta_model(entries).SerializeToString()
    meta = _onnx.read(data).metadata
    assert meta == ort_metadata(data) and len(meta) > 100
    assert meta == {k: v for k, v in entries}


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (_ld(1, b"k\xff") + _ld(2, b"v"), "a metadata_props key is not valid UTF-8"),
        (_ld(1, b"chars") + _ld(2, b"\xe4\xb8"),
         "the metadata_props value of 'chars' is not valid UTF-8"),
        (_ld(1, b"x" * 50) + _ld(2, b"\xc0\x80"), r"value of 'x{37}\.\.\.' is not valid UTF-8"),
        (_key(1, 0) + b"\x01", "StringStringEntryProto field 1 has wire type 0, not 2"),
        (_ld(1, b"k") + _key(2, 2) + b"\x09ab",
         "corrupt: a length-delimited field of StringStringEntryProto"),
        (_ld(1, b"k") + _key(2, 2) + b"\xff",
         "corrupt: a number in StringStringEntryProto is cut off"),
        (_key(4, 3), "StringStringEntryProto field 4 has wire type 3"),
    ],
    ids=["key-not-utf8", "value-not-utf8", "long-key-shortened", "wire-type", "overrun",
         "cut-varint", "group"],
)  # fmt: skip
def test_broken_metadata_entries_are_model_format_errors(entry: bytes, message: str) -> None:
    # A field after the entry: an overrun runs past the entry, not the data.
    data = _meta_model([]).SerializeToString() + _ld(14, entry) + _key(1, 0) + b"\x08"
    with pytest.raises(ModelFormatError, match=message) as err:
        _onnx.read(data, "meta.onnx")
    assert str(err.value).startswith("meta.onnx is not a readable ONNX model: ")


def test_metadata_field_with_the_wrong_wire_type() -> None:
    data = _meta_model([]).SerializeToString() + _key(14, 0) + b"\x07"
    with pytest.raises(ModelFormatError, match="ModelProto field 14 has wire type 0, not 2"):
        _onnx.read(data)


def test_truncated_or_mutated_metadata_is_a_model_format_error(model_dir: Path) -> None:
    """The fuzzing expectation, aimed at metadata_props: every cut inside them and
    random bytes written into them give metadata or ModelFormatError, nothing else."""
    data = (model_dir / "metadata.onnx").read_bytes()
    bare = onnx.ModelProto.FromString(data)
    del bare.metadata_props[:]
    start = len(bare.SerializeToString())  # onnx writes field 14 after the fields before it
    assert data[:start] == bare.SerializeToString() and len(data) - start > 9000
    for n in range(start + 1, len(data), 97):
        with pytest.raises(ModelFormatError, match="truncated"):
            _onnx.read(data[:n], "the test model")
    rng = random.Random(2468)
    for _ in range(400):
        corrupt = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            corrupt[rng.randrange(start, len(corrupt))] = rng.randrange(256)
        _check(bytes(corrupt))


# The real PP-OCRv4 recognition model, whose character list is in its metadata_props.
RAPIDOCR = "rapidocr-onnxruntime==1.4.4"
OCR_REC = "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx"


@pytest.fixture(scope="module")
def ocr_rec_model() -> bytes:
    """The recognition model, from the rapidocr wheel on PyPI (cached under build/)."""
    cached = ROOT / "build" / "test-models" / "ch_PP-OCRv4_rec_infer.onnx"
    if not cached.exists():
        with tempfile.TemporaryDirectory() as tmp:
            pip = subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-deps", RAPIDOCR, "-d", tmp],
                capture_output=True,
                text=True,
            )
            assert pip.returncode == 0, f"pip download {RAPIDOCR} failed:\n{pip.stderr}"
            (wheel,) = Path(tmp).glob("*.whl")
            with zipfile.ZipFile(wheel) as zf:
                data = zf.read(OCR_REC)
        cached.parent.mkdir(parents=True, exist_ok=True)
        part = cached.with_name(cached.name + ".part")
        part.write_bytes(data)
        part.rename(cached)
    return cached.read_bytes()


def test_ocr_character_list_matches_onnxruntime(ocr_rec_model: bytes) -> None:
    meta = _onnx.read(ocr_rec_model, "ch_PP-OCRv4_rec_infer.onnx").metadata
    assert meta == ort_metadata(ocr_rec_model)
    assert list(meta) == ["character"]
    characters = meta["character"].split("\n")
    # 6,623 characters; with CTC's blank and the space, the model's 6,625 classes.
    assert len(meta["character"]) > 6000 and len(characters) == 6623
    assert len(set(characters)) == len(characters)
    info = _onnx.read(ocr_rec_model)
    assert [s.shape[-1] for s in info.outputs if s.shape] == [len(characters) + 2]
