"""``Model.load_by_name(name, metadata=...)``: a preloaded model described by a local copy.

Natively against the fake host (whose registry stands for the CLI's
``-S nn-graph=openvino::DIR``), plus one run of a real component under wasmtime
with the digits model preloaded.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT, run_component
from fake_host import FakeHost
from test_model import X_PLUS_Y, X_TIMES_M, X, Y
from toy_models import all_models

import wasinn
from wasinn import Model, ModelFormatError, Tensor, ValidationError
from wasinn._host import host as host_module


@contextlib.contextmanager
def registry(**models: str) -> Iterator[FakeHost]:
    """A fake host that preloaded toy models: registered name -> toy model name."""
    toys = all_models()
    host = FakeHost(registry={name: toys[toy] for name, toy in models.items()})
    previous = host_module.use_default(host)
    try:
        yield host
    finally:
        host_module.use_default(previous)


def test_an_ir_copy_gives_real_names_shapes_and_metadata(toy_dir: Path) -> None:
    with registry(two="two") as host:
        described = Model.load_by_name("two", metadata=toy_dir / "two.xml")
        with Model.load(toy_dir / "two.xml") as loaded:
            assert described.inputs == loaded.inputs
            assert described.outputs == loaded.outputs
            assert described.metadata == loaded.metadata
        assert [s.name for s in described.inputs or []] == ["y", "x"]
        assert (described.encoding, described.name, described.target) == ("by-name", "two", None)
        out = described.run({"x": X, "y": Y})
        assert list(out) == ["prod", "sum"]
        assert out["sum"].tolist() == X_PLUS_Y and out["prod"].tolist() == X_TIMES_M
        assert list(described.run([Y, X], outputs=["sum"])) == ["sum"], "positional works too"
        assert described.states == []
        assert Model.load_by_name("two").states is None, "without a description: unknown"
        described.close()
    assert ("load_by_name", "two") in host.calls


def test_a_description_names_the_state_variables(model_dir: Path) -> None:
    """An IR with ReadValue layers (written by OpenVINO) describes a stateful model."""
    with registry(two="two"):
        model = Model.load_by_name("two", metadata=model_dir / "counter.xml")
        assert model.states == ["sum"]
        assert [s.name for s in model.inputs or []] == ["x"]


def test_bytes_parts_and_a_lone_xml_describe_alike(toy_dir: Path, tmp_path: Path) -> None:
    xml = (toy_dir / "two.xml").read_bytes()
    # The weights are not needed: an .xml without its .bin describes the model.
    shutil.copy(toy_dir / "two.xml", tmp_path / "two.xml")
    with registry(two="two"):
        specs = []
        lone = tmp_path / "two.xml"
        for source in (xml, bytearray(xml), [xml, b""], lone, str(lone)):
            with Model.load_by_name("two", metadata=source) as model:
                specs.append((model.inputs, model.outputs))
                assert model.run({"x": X, "y": Y})["sum"].tolist() == X_PLUS_Y
        assert all(s == specs[0] for s in specs) and specs[0][0] is not None


def test_an_onnx_copy_describes_an_onnx_model(toy_dir: Path) -> None:
    with registry(am="add_mul"):
        model = Model.load_by_name("am", metadata=toy_dir / "add_mul.onnx")
        assert [s.name for s in model.outputs or []] == ["total", "scaled"]
        a = Tensor([[1.0, 2.0], [3.0, 4.0]])
        out = model.run({"a": a, "b": a})
        assert out["total"].tolist() == [[2.0, 4.0], [6.0, 8.0]]
        assert out["scaled"].tolist() == [[3.0, 6.0], [9.0, 12.0]]


def test_inputs_are_checked_before_the_host_is_called(toy_dir: Path) -> None:
    with registry(two="two") as host:
        model = Model.load_by_name("two", metadata=toy_dir / "two.xml")
        before = len(host.calls)
        with pytest.raises(ValidationError, match="'z'"):
            model.run({"x": X, "y": Y, "z": X})
        with pytest.raises(ValidationError, match="missing"):
            model.run({"x": X})
        with pytest.raises(ValidationError, match="must be f32, got f64"):
            model.run({"x": X.astype("f64"), "y": Y})
        with pytest.raises(ValidationError, match="unknown output"):
            model.run({"x": X, "y": Y}, outputs=["0"])
        assert not [c for c in host.calls[before:] if c[0] == "compute"]
        # Without a description the same mistakes reach the host.
        bare = Model.load_by_name("two")
        with pytest.raises(wasinn.BackendRuntimeError):
            bare.run({"x": X, "y": Y, "z": X})


def test_a_bad_description_fails_before_the_host_loads(toy_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "junk.xml").write_bytes(b"not a model at all")
    with registry(two="two") as host:
        with pytest.raises(FileNotFoundError, match="model description not found"):
            Model.load_by_name("two", metadata=tmp_path / "missing.xml")
        with pytest.raises(ModelFormatError, match="cannot tell what kind of model"):
            Model.load_by_name("two", metadata=tmp_path / "junk.xml")
        with pytest.raises(ModelFormatError):
            Model.load_by_name("two", metadata=b"\x08\x07\x12\xff\xff")
        for bad in (42, [], ["x"]):
            with pytest.raises(ValidationError, match="cannot read a model description"):
                Model.load_by_name("two", metadata=bad)  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="non-empty model name"):
            Model.load_by_name("", metadata=toy_dir / "two.xml")
    assert not [c for c in host.calls if c[0] == "load_by_name"]


@pytest.mark.integration
def test_a_preloaded_digits_model_runs_with_its_real_names(tmp_path: Path) -> None:
    """The real host: -S nn-graph preloads the digits IR; the app describes it
    from a copy of the .xml and gets 'probs' back, equal to Model.load's answer."""
    preload = tmp_path / "digits"
    preload.mkdir()
    for ext in ("xml", "bin"):
        shutil.copy(ROOT / "apps" / "digits" / "model" / f"digits.{ext}", preload / f"model.{ext}")
    flags = f"-S nn-graph=openvino::{preload} --dir {preload}::/digits"
    done = run_component(ROOT / "tests" / "byname_app", cwd=tmp_path, wasmtime_flags=flags)
    assert done.code == 0, done.stderr
    by_name, loaded = done.lines
    assert by_name["outputs"] == ["logits", "probs"]
    assert by_name["inputs"] == [{"name": "image", "shape": [None, 1, 8, 8], "dtype": "f32"}]
    assert by_name["probs"] == loaded["probs"]
    assert by_name["checked"].startswith("ValidationError") and "'pixels'" in by_name["checked"]
