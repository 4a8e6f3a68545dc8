"""Unit tests of ``wasinn._formats.source``: what ``Model.load`` makes of its ``source``.

``resolve`` reads files, infers the encoding, checks the parts and reads the
metadata, raising before anything reaches the host. The models are the
pure-Python ones of toy_models.py: no host, no OpenVINO.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from toy_models import all_models

from wasinn import ModelFormatError, TensorSpec, ValidationError
from wasinn._formats.source import ENCODINGS, Resolved, resolve

TOYS = all_models()
TWO_XML, TWO_BIN = TOYS["two"].builders
ONNX = TOYS["add_mul"].builders[0]
PASS_XML = TOYS["passthrough"].builders[0]  # reads no weights


def specs(resolved: Resolved) -> tuple[Any, Any]:
    return (
        [str(s) for s in resolved.inputs] if resolved.inputs is not None else None,
        [str(s) for s in resolved.outputs] if resolved.outputs is not None else None,
    )


TWO_SPECS = (["y: f32[2, 3]", "x: f32[2, 3]"], ["prod: f32[2, 4]", "sum: f32[2, 3]"])
ONNX_SPECS = (["a: f32[2, 2]", "b: f32[2, 2]"], ["total: f32[2, 2]", "scaled: f32[2, 2]"])


# ---------------------------------------------------------------- from paths


def test_ir_path_reads_the_bin_beside_it(toy_dir: Path) -> None:
    for source in (toy_dir / "two.xml", str(toy_dir / "two.xml")):
        r = resolve(source, None)
        assert (r.parts, r.encoding, r.label) == ([TWO_XML, TWO_BIN], "openvino", "two.xml")
        assert specs(r) == TWO_SPECS
        assert all(type(p) is bytes for p in r.parts)
    assert isinstance(r.inputs[0], TensorSpec)


def test_onnx_path_is_one_part_with_metadata(toy_dir: Path) -> None:
    r = resolve(toy_dir / "add_mul.onnx", None)
    assert (r.parts, r.encoding, r.label) == ([ONNX], "onnx", "add_mul.onnx")
    assert specs(r) == ONNX_SPECS


def test_the_file_ending_decides_before_the_bytes(tmp_path: Path) -> None:
    (tmp_path / "upper.XML").write_bytes(PASS_XML)
    assert resolve(tmp_path / "upper.XML", None).encoding == "openvino"
    (tmp_path / "model.ONNX").write_bytes(ONNX)
    assert resolve(tmp_path / "model.ONNX", None).encoding == "onnx"
    # Any other ending: the bytes say what it is.
    (tmp_path / "model.txt").write_bytes(PASS_XML)
    (tmp_path / "model.pb").write_bytes(ONNX)
    assert resolve(tmp_path / "model.txt", None).encoding == "openvino"
    r = resolve(tmp_path / "model.pb", None)
    assert (r.encoding, specs(r)) == ("onnx", ONNX_SPECS)
    (tmp_path / "model.bin").write_bytes(b"\x00\x01garbage")
    with pytest.raises(
        ModelFormatError, match=r"^cannot tell what kind of model model.bin is: .*encoding="
    ):
        resolve(tmp_path / "model.bin", None)
    assert resolve(tmp_path / "model.bin", "ggml").parts == [b"\x00\x01garbage"]


def test_ir_weights_rules(tmp_path: Path) -> None:
    (tmp_path / "lonely.xml").write_bytes(TWO_XML)
    with pytest.raises(
        FileNotFoundError,
        match=r"^lonely.xml needs 48 bytes of weights from lonely.bin, which is not beside it "
        r"\(.*lonely.bin\); an IR model is an .xml and a .bin with the same stem$",
    ):
        resolve(tmp_path / "lonely.xml", None)
    # A model that reads no weights needs no .bin.
    (tmp_path / "pass.xml").write_bytes(PASS_XML)
    assert resolve(tmp_path / "pass.xml", None).parts == [PASS_XML, b""]
    # A .bin too short for the offsets the XML reads is the wrong .bin.
    (tmp_path / "lonely.bin").write_bytes(TWO_BIN[:40])
    with pytest.raises(
        ModelFormatError,
        match=r"^lonely.xml reads 48 bytes of weights, but the weights are 40 bytes: "
        r"the .bin is truncated",
    ):
        resolve(tmp_path / "lonely.xml", None)
    (tmp_path / "lonely.bin").write_bytes(TWO_BIN + b"more")
    assert resolve(tmp_path / "lonely.xml", None).parts == [TWO_XML, TWO_BIN + b"more"]


def test_missing_files_and_directories(tmp_path: Path) -> None:
    missing = tmp_path / "missing.onnx"
    with pytest.raises(FileNotFoundError, match=f"^model file not found: {missing}$"):
        resolve(missing, None)
    with pytest.raises(
        ValidationError, match=f"^model file {tmp_path} is a directory, not a file$"
    ):
        resolve(tmp_path, None)
    (tmp_path / "dir.xml").write_bytes(TWO_XML)
    (tmp_path / "dir.bin").mkdir()
    with pytest.raises(ValidationError, match="weights file .*dir.bin is a directory"):
        resolve(tmp_path / "dir.xml", None)


def test_an_explicit_encoding_is_sent_as_given(toy_dir: Path) -> None:
    r = resolve(toy_dir / "two.xml", "TensorFlow")
    assert (r.encoding, r.parts, r.inputs) == ("tensorflow", [TWO_XML], None)
    # ONNX bytes as "openvino": OpenVINO reads them from the first of two parts.
    r = resolve(toy_dir / "add_mul.onnx", "openvino")
    assert (r.encoding, r.parts) == ("openvino", [ONNX, b""])


def test_unknown_encodings_are_refused() -> None:
    for bad in ("caffe", "", 3, None.__class__):
        with pytest.raises(
            ValidationError, match=r"^unknown encoding .*; wasi-nn names: openvino, onnx, "
        ):
            resolve(TWO_XML, bad)  # type: ignore[arg-type]
    assert "autodetect" in ENCODINGS and len(ENCODINGS) == 7


# ---------------------------------------------------------------- from bytes and parts


def test_bytes_are_sniffed() -> None:
    for form in (ONNX, bytearray(ONNX), memoryview(ONNX)):
        r = resolve(form, None)
        assert (r.parts, r.encoding, r.label, specs(r)) == (
            [ONNX],
            "onnx",
            "the model bytes",
            ONNX_SPECS,
        )
        assert type(r.parts[0]) is bytes
    for prefix in (b"", b"\xef\xbb\xbf"):
        assert resolve(prefix + PASS_XML, None).encoding == "openvino"
    bare = PASS_XML[PASS_XML.index(b"<net") :]
    assert specs(resolve(b"\n  \t" + bare, None)) == specs(resolve(PASS_XML, None))
    # XML allows nothing before its declaration: IR, but not readable.
    with pytest.raises(
        ModelFormatError, match="not valid OpenVINO IR XML: XML or text declaration"
    ):
        resolve(b"\n" + PASS_XML, None)
    for junk in (b"", b"hello", b"\x0a\x08", b"{}"):
        with pytest.raises(
            ModelFormatError, match="cannot tell what kind of model the model bytes is"
        ):
            resolve(junk, None)


def test_ir_bytes_alone_must_not_need_weights() -> None:
    assert resolve(PASS_XML, None).parts == [PASS_XML, b""]
    with pytest.raises(
        ModelFormatError,
        match="^the model bytes reads 48 bytes of weights, but the weights are 0 bytes",
    ):
        resolve(TWO_XML, None)


def test_parts() -> None:
    for form in ([TWO_XML, TWO_BIN], (TWO_XML, TWO_BIN), [bytearray(TWO_XML), memoryview(TWO_BIN)]):
        r = resolve(form, None)
        assert (r.parts, r.encoding, r.label, specs(r)) == (
            [TWO_XML, TWO_BIN], "openvino", "the model parts", TWO_SPECS,
        )  # fmt: skip
        assert all(type(p) is bytes for p in r.parts)
    assert resolve([PASS_XML], None).parts == [PASS_XML, b""]
    with pytest.raises(
        ValidationError,
        match=r"^an OpenVINO IR model is 2 parts, \[xml, weights\]; the model parts has 3$",
    ):
        resolve([TWO_XML, TWO_BIN, b""], None)
    with pytest.raises(ModelFormatError, match="the .bin is truncated or belongs to another model"):
        resolve([TWO_XML, TWO_BIN[:-1]], None)
    with pytest.raises(ValidationError, match=r"^an ONNX model is 1 part; the model parts has 2$"):
        resolve([ONNX, b""], None)
    with pytest.raises(
        ValidationError, match=r"^an empty list of model parts; pass \[xml_bytes, weights_bytes\]$"
    ):
        resolve([], None)
    # Other encodings go to the host as they are.
    assert resolve([b"a", b"b", b"c"], "ggml").parts == [b"a", b"b", b"c"]


def test_broken_models_are_refused_before_the_host() -> None:
    with pytest.raises(ModelFormatError, match="^the model bytes is empty"):
        resolve(b"", "onnx")
    with pytest.raises(
        ModelFormatError, match="^the model bytes is not a readable ONNX model: .*truncated"
    ):
        resolve(ONNX[:-7], None)
    with pytest.raises(
        ModelFormatError, match="XML but not OpenVINO IR: its root element is <model>"
    ):
        resolve(b'<?xml version="1.0"?><model/>', None)
    with pytest.raises(ModelFormatError, match="not valid OpenVINO IR XML"):
        resolve(PASS_XML[:-20], None)


@pytest.mark.parametrize(
    "source", [42, None, 1.5, {"xml": TWO_XML}, ["model.xml"], [TWO_XML, "x"], iter([TWO_XML])]
)
def test_other_sources_are_refused(source: Any) -> None:
    with pytest.raises(
        ValidationError,
        match=r"^cannot load a model from \w+; pass a path \(.xml or .onnx\), bytes",
    ):
        resolve(source, None)


def test_path_like_objects(toy_dir: Path) -> None:
    class Where(os.PathLike):  # type: ignore[type-arg]
        def __fspath__(self) -> str:
            return str(toy_dir / "add_mul.onnx")

    assert resolve(Where(), None).label == "add_mul.onnx"
