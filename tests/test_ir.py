"""IR metadata read by wasinn agrees with OpenVINO's own reading of the same files."""

from __future__ import annotations

from pathlib import Path

import openvino as ov
import pytest

from wasinn import ModelFormatError, _ir

ROOT = Path(__file__).resolve().parent.parent
OV_TYPE = {"f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64", "u8": "u8", "i32": "i32", "i64": "i64"}


def ov_specs(ports: list[ov.Output]) -> list[tuple[str, tuple[int | None, ...] | None, str]]:
    out = []
    for p in ports:
        partial = p.get_partial_shape()
        shape = None if partial.rank.is_dynamic else tuple(None if d.is_dynamic else d.get_length() for d in partial)
        out.append((p.get_any_name(), shape, p.get_element_type().get_type_name()))
    return out


def ir_paths(model_dir: Path) -> list[Path]:
    return sorted(model_dir.glob("*.xml")) + [ROOT / "apps/digits/model/digits.xml"]


def test_metadata_matches_openvino_read_model(model_dir: Path) -> None:
    core = ov.Core()
    paths = ir_paths(model_dir)
    assert len(paths) >= 10 and any(p.name == "any_rank.xml" for p in paths)
    for path in paths:
        info = _ir.read(path.read_bytes(), path.name)
        model = core.read_model(path)
        ours_in = [(s.name, s.shape, s.dtype) for s in info.inputs]
        ours_out = [(s.name, s.shape, s.dtype) for s in info.outputs]
        assert ours_in == ov_specs(model.inputs), path.name
        assert ours_out == ov_specs(model.outputs), path.name


def test_output_order_follows_document_order_not_ids(model_dir: Path, tmp_path: Path) -> None:
    """Moving Result layers in the file reorders OpenVINO's outputs; wasinn must follow."""
    xml = (model_dir / "two.xml").read_text()
    a, b, end = xml.index('<layer id="5"'), xml.index('<layer id="6"'), xml.index("</layers>")
    moved = xml[:a] + xml[b:end].rstrip() + "\n\t\t" + xml[a:b].strip() + "\n\t" + xml[end:]
    (tmp_path / "moved.xml").write_text(moved)
    (tmp_path / "moved.bin").write_bytes((model_dir / "two.bin").read_bytes())
    ov_order = [o.get_any_name() for o in ov.Core().read_model(tmp_path / "moved.xml").outputs]
    ours = [s.name for s in _ir.read(moved.encode()).outputs]
    assert ov_order == ["sum", "prod"] and ours == ov_order


def test_digits_metadata() -> None:
    info = _ir.read((ROOT / "apps/digits/model/digits.xml").read_bytes())
    assert [str(s) for s in info.inputs] == ["image: f32[?, 1, 8, 8]"]
    assert [str(s) for s in info.outputs] == ["logits: f32[?, 10]", "probs: f32[?, 10]"]
    assert info.weights_needed == (ROOT / "apps/digits/model/digits.bin").stat().st_size


@pytest.mark.parametrize(
    "xml,message",
    [
        (b"<net><layers>", "not valid OpenVINO IR XML"),
        (b"<?xml version='1.0'?><html/>", "root element is <html>"),
        (b"<net name='x'/>", "has no <layers>"),
        (b"", "not valid OpenVINO IR XML"),
    ],
)
def test_broken_ir_raises_model_format_error(xml: bytes, message: str) -> None:
    with pytest.raises(ModelFormatError, match=message):
        _ir.read(xml)


def test_escaped_comma_in_names() -> None:
    assert _ir._first_name("a\\,b,c") == "a,b"
    assert _ir._first_name("alpha,zeta") == "alpha"
