"""Tensor <-> numpy, natively with the real numpy (issue 20, section 3).

The checks themselves are in ``numpy_app/numpy_checks.py``, plain functions
that take the numpy module, so that a component can run the same ones once
numpy is built for the guest. Here they run on the fake host (library
logic), on OpenVINO (models written by OpenVINO, and ``wasinn.ops``), and
wasinn is shown to import and work without numpy.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fake_host import FakeHost
from toy_models import MATRIX

from wasinn import Model, Tensor, ValidationError

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "numpy_app"))

import numpy_checks  # noqa: E402  (the app folder is put on the path above)


@pytest.mark.parametrize("name", sorted(numpy_checks.CHECKS))
def test_check(name: str) -> None:
    numpy_checks.CHECKS[name](np)


def test_bf16_without_ml_dtypes(monkeypatch: pytest.MonkeyPatch) -> None:
    """As inside a component, where ml_dtypes does not exist."""
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)
    numpy_checks.check_bf16(np)


def test_bf16_with_ml_dtypes() -> None:
    pytest.importorskip("ml_dtypes")
    numpy_checks.check_bf16(np)


def test_run_with_arrays_on_the_fake_host(fake_host: FakeHost, toy_dir: Path) -> None:
    with Model.load(toy_dir / "two.xml") as model:
        numpy_checks.check_run_with_arrays(np, model, MATRIX)


def test_inputs_reach_the_host_as_the_arrays_bytes(fake_host: FakeHost, toy_dir: Path) -> None:
    """In the model's dtype and C order; a tensor's own array as the tensor's bytes."""
    with Model.load(toy_dir / "two.xml") as model:
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        seen: list[dict[str, Tensor]] = []
        real = fake_host.compute

        def spy(ctx: Any, feeds: list[tuple[str, Tensor]], what: str) -> Any:
            seen.append(dict(feeds))
            return real(ctx, feeds, what)

        fake_host.compute = spy  # type: ignore[method-assign]
        model.run({"x": x, "y": x.T.copy().T.astype(np.float64)})
        assert seen[0]["x"].tobytes() == x.tobytes() and seen[0]["y"].tobytes() == x.tobytes()
        sent = Tensor(x)
        model.run({"x": np.asarray(sent), "y": x})
        assert seen[1]["x"].tobytes() is sent.tobytes()  # a tensor's array goes back uncopied


def test_stateful_with_arrays_on_the_fake_host(fake_host: FakeHost, toy_dir: Path) -> None:
    with Model.load(toy_dir / "acc.xml") as model:
        numpy_checks.check_stateful_with_arrays(np, model)


def test_one_input_model_takes_a_list_of_one_array(fake_host: FakeHost, toy_dir: Path) -> None:
    with Model.load(toy_dir / "dynamic.xml") as model:
        v = np.ones((2, 4), np.float32)
        assert model.run_numpy([v])["scaled"].tolist() == (2 * v).tolist()
        assert model.run_numpy(v)["scaled"].tolist() == (2 * v).tolist()


def test_run_numpy_after_close_is_a_closed_error(fake_host: FakeHost, toy_dir: Path) -> None:
    model = Model.load(toy_dir / "dynamic.xml")
    model.close()
    with pytest.raises(ValueError, match="closed"):
        model.run_numpy(np.ones((1, 4), np.float32))


def test_run_with_arrays_on_openvino(ov_host: Any, model_dir: Path) -> None:
    with Model.load(model_dir / "two.xml") as model:
        numpy_checks.check_run_with_arrays(np, model, MATRIX)
    with Model.load(model_dir / "acc.xml") as model:
        numpy_checks.check_stateful_with_arrays(np, model)


@pytest.mark.parametrize("dtype", sorted(numpy_checks.NUMPY_NAMES))
def test_every_dtype_crosses_openvino_as_an_array(
    ov_host: Any, model_dir: Path, dtype: str
) -> None:
    with Model.load(model_dir / f"ident_{dtype}.xml") as model:
        sent = np.array(numpy_checks.VALUES, dtype=numpy_checks.NUMPY_NAMES[dtype])
        back = next(iter(model.run_numpy(sent).values()))
        assert back.dtype == sent.dtype and back.tobytes() == sent.tobytes()


def test_ops_on_openvino(ov_host: Any) -> None:
    from test_ops import forget

    forget()
    try:
        numpy_checks.check_ops(np)
    finally:
        forget()


def test_run_numpy_on_the_stateful_session_keeps_state_when_numpy_is_missing(
    fake_host: FakeHost, toy_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Model.load(toy_dir / "acc.xml") as model:
        acc = model.stateful({"hN": "h"})
        monkeypatch.setitem(sys.modules, "numpy", None)
        with pytest.raises(ImportError, match="run_numpy needs numpy"):
            acc.run_numpy({"x": Tensor([[1.0, 2.0]])})
        assert acc.state["h"].tolist() == [[0.0, 0.0]]
        with pytest.raises(ImportError, match="pip install numpy"):
            Tensor([1.0]).numpy()


WITHOUT_NUMPY = """
import sys
sys.modules["numpy"] = None  # any `import numpy` now fails, as in a component without it
import wasinn
from wasinn import Tensor, image
t = Tensor([[1.0, 2.0]], dtype="f16")
assert t.astype("f32").tolist() == [[1.0, 2.0]] and t.argmax() == 1
assert image.decode(image.encode(Tensor(bytes(12), shape=(2, 2, 3)))).shape == (2, 2, 3)
try:
    t.numpy()
except ImportError as exc:
    print(exc)
"""


def test_wasinn_never_imports_numpy_and_says_so_when_asked_for_it() -> None:
    """wasinn stays stdlib-only: importing and using it loads no numpy."""
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, wasinn; print('numpy' in sys.modules)"],
        capture_output=True, text=True, check=True, cwd=ROOT / "guest",
    )  # fmt: skip
    assert loaded.stdout.strip() == "False"
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_NUMPY],
        capture_output=True, text=True, check=True, cwd=ROOT / "guest",
    )  # fmt: skip
    message = done.stdout
    assert "converting a Tensor to a numpy array needs numpy" in message
    assert "pip install numpy" in message and "top of app.py" in message
    assert "tolist()" in message


def test_what_tensor_cannot_take_names_numpy_arrays_among_what_it_can() -> None:
    with pytest.raises(ValidationError, match="a numpy array, nested lists"):
        Tensor(object())
