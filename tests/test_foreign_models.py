"""Unit tests: ``Model.load`` of TFLite, TensorFlow and PyTorch files says how to convert them.

The wasmtime host's OpenVINO backend reads IR and ONNX from memory only; the
other frameworks' files fail there opaquely. wasinn recognises them (by their
bytes where those tell, else by the file ending) and raises ModelFormatError
naming tools/convert.py, before any host call. Runs on the fake host.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_host import FakeHost

import wasinn
from wasinn import Model, ModelFormatError

# A flatbuffer's root offset, then TFLite's file identifier at bytes 4..8.
TFLITE = b"\x1c\x00\x00\x00TFL3" + bytes(40)
# A frozen GraphDef: field 1 (node), a NodeDef whose name is "x".
GRAPHDEF = b"\x0a\x05\x0a\x01x\x12\x00"
# A SavedModel: schema version 1, then field 2 (meta_graphs).
SAVED_MODEL = b"\x08\x01\x12\x04\x0a\x02\x08\x01"
HOST_ADVICE = "the host's OpenVINO backend reads only OpenVINO IR and ONNX from memory"


def test_tflite_by_bytes_whatever_the_ending(fake_host: FakeHost, tmp_path: Path) -> None:
    for name in ("face.tflite", "face.bin", "face"):
        (tmp_path / name).write_bytes(TFLITE)
        stem = name.split(".")[0]
        with pytest.raises(ModelFormatError) as err:
            Model.load(tmp_path / name)
        assert str(err.value) == (
            f"cannot load {name}, a TFLite model: {HOST_ADVICE}. Convert it to IR when the "
            "app is built, with wasinn's tools/convert.py (in the app's prepare.py: "
            f'convert("{name}", models / "{stem}.xml")), and load the .xml'
        )
    # A .tflite ending alone is enough: the file may be damaged, it is still not IR.
    (tmp_path / "odd.tflite").write_bytes(b"<?xml")
    with pytest.raises(ModelFormatError, match=r"^cannot load odd.tflite, a TFLite model"):
        Model.load(tmp_path / "odd.tflite")
    assert fake_host.calls == []


def test_tflite_bytes(fake_host: FakeHost) -> None:
    for form in (TFLITE, bytearray(TFLITE), [TFLITE]):
        with pytest.raises(
            ModelFormatError,
            match=r"^cannot load the model (bytes|parts), a TFLite model: "
            r'.*convert\("model.tflite"',
        ):
            Model.load(form)
    # Sent as "openvino" it could only fail in the host, opaquely: refused here too.
    with pytest.raises(ModelFormatError, match="a TFLite model"):
        Model.load(TFLITE, encoding="openvino")
    assert fake_host.calls == []
    # Another wasi-nn encoding is the caller's choice, for hosts that have that backend.
    with pytest.raises(wasinn.InvalidEncodingError):
        Model.load(TFLITE, encoding="tensorflowlite")
    assert [c[0] for c in fake_host.calls] == ["load"]


def test_tensorflow_files(fake_host: FakeHost, tmp_path: Path) -> None:
    (tmp_path / "frozen.pb").write_bytes(GRAPHDEF)
    with pytest.raises(ModelFormatError) as err:
        Model.load(tmp_path / "frozen.pb")
    assert str(err.value).startswith(f"cannot load frozen.pb, a TensorFlow model: {HOST_ADVICE}.")
    assert 'convert("frozen.pb", models / "frozen.xml")' in str(err.value)
    # A SavedModel folder, its saved_model.pb, or the same bytes.
    saved = tmp_path / "detector"
    saved.mkdir()
    (saved / "saved_model.pb").write_bytes(SAVED_MODEL)
    for source, label in (
        (saved, "detector"),
        (str(saved) + "/", str(saved) + "/"),
        (saved / "saved_model.pb", "saved_model.pb"),
        (SAVED_MODEL, "the model bytes"),
    ):
        with pytest.raises(
            ModelFormatError, match=f"^cannot load {label}, a TensorFlow SavedModel: "
        ):
            Model.load(source)
    assert fake_host.calls == []


def test_onnx_in_a_pb_file_still_loads(fake_host: FakeHost, toy_dir: Path, tmp_path: Path) -> None:
    # ONNX's own test data and some exporters name ONNX files .pb; the bytes decide.
    (tmp_path / "model.pb").write_bytes((toy_dir / "add_mul.onnx").read_bytes())
    model = Model.load(tmp_path / "model.pb")
    assert [s.name for s in model.inputs or []] == ["a", "b"]


def test_pytorch_files(fake_host: FakeHost, tmp_path: Path) -> None:
    for name in ("net.pt", "net.pth"):
        (tmp_path / name).write_bytes(b"PK\x03\x04" + bytes(20))
        with pytest.raises(ModelFormatError) as err:
            Model.load(tmp_path / name)
        assert str(err.value).startswith(f"cannot load {name}, a PyTorch file: {HOST_ADVICE}.")
        assert 'convert(module, models / "net.xml", example_inputs=(...))' in str(err.value)
    assert fake_host.calls == []


def test_unknown_files_point_at_the_converter_not_at_other_encodings(
    fake_host: FakeHost, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("not a model\n")
    with pytest.raises(ModelFormatError) as err:
        Model.load(tmp_path / "notes.txt")
    message = str(err.value)
    assert message.startswith("cannot tell what kind of model notes.txt is: it is neither")
    assert "tools/convert.py" in message and "another wasi-nn encoding" not in message
    assert fake_host.calls == []
