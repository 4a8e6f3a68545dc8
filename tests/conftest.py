"""Shared fixtures: test models, the fake hosts, and running real components.

Nothing here imports OpenVINO or numpy at module level: the logic tests
(test_model.py, test_spec.py, test_source.py, ...) run with only pytest
installed. Fixtures that need OpenVINO import it when first used.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest
import toy_models
from fake_host import FakeHost

from wasinn._host import host as host_module

if TYPE_CHECKING:
    from ov_host import OVHost

ROOT = Path(__file__).resolve().parent.parent
BUILD_SH = ROOT / "build.sh"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "fuzz: property-based tests (tests/test_fuzz_*.py; budget WASINN_FUZZ_EXAMPLES)"
    )


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """After fuzz tests ran: how many examples each property ran (fuzzing.py counts them)."""
    fuzzing = sys.modules.get("fuzzing")
    if fuzzing is not None:
        for line in fuzzing.summary():
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def toy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pure-Python test models of toy_models.py, as files (no OpenVINO needed)."""
    return toy_models.write_all(tmp_path_factory.mktemp("toys"))


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny test models of models.py, written by OpenVINO, built once per test run."""
    pytest.importorskip("openvino", reason="models.py builds its models with OpenVINO")
    import models

    return models.build_all(tmp_path_factory.mktemp("models"))


@pytest.fixture
def fake_host() -> Iterator[FakeHost]:
    """Point wasinn at the dependency-free fake host for the duration of a test."""
    host = FakeHost()
    previous = host_module.use_default(host)
    try:
        yield host
    finally:
        host_module.use_default(previous)


@pytest.fixture
def ov_host() -> Iterator[OVHost]:
    """Point wasinn at the OpenVINO-backed host (numeric tests) for the duration of a test."""
    pytest.importorskip("openvino", reason="the numeric tests run models on OpenVINO")
    from ov_host import OVHost

    host = OVHost()
    previous = host_module.use_default(host)
    try:
        yield host
    finally:
        host_module.use_default(previous)


@dataclass
class Completed:
    code: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.startswith("{")]

    def assert_no_trap(self) -> None:
        """The component ended by returning, not by a trap or a host crash."""
        assert self.code in (0, 1), f"exit {self.code}: {self.stderr[-2000:]}"
        assert "panicked" not in self.stderr, self.stderr[-2000:]
        assert "wasm trap" not in self.stderr, self.stderr[-2000:]
        assert "Unexpected" not in self.stdout, self.stdout


def app_module(app: str, name: str) -> ModuleType:
    """apps/APP/NAME.py imported natively as ``APP_NAME``: apps share module names
    (textclass and generate each have their own tokenizer), so the app's name
    keeps each one apart in ``sys.modules``."""
    spec = importlib.util.spec_from_file_location(
        f"{app}_{name}", ROOT / "apps" / app / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def build_app(app: Path) -> Path:
    """``./build.sh build APP`` (a no-op when nothing changed); a failed build fails
    the test with the build's output."""
    done = subprocess.run([str(BUILD_SH), "build", str(app)], capture_output=True, text=True)
    if done.returncode:
        pytest.fail(f"building {app} failed:\n{done.stdout}\n{done.stderr}")
    return app


@pytest.fixture(scope="session")
def built() -> dict[str, Path]:
    """Build the digits app and the test guest into real components (once)."""
    apps = {name: ROOT / "apps" / name for name in ("digits", "vad", "textclass")}
    apps["guest_app"] = ROOT / "tests" / "guest_app"
    for app in apps.values():
        build_app(app)
    return apps


def json_app(app: Path, cwd: Path) -> Callable[[str], list[dict[str, Any]]]:
    """Build a test app whose modes print JSON lines; return ``run(mode)``, which
    runs it from ``cwd`` and returns the lines, failing the test on a trap or a
    non-zero exit."""
    build_app(app)

    def run(mode: str) -> list[dict[str, Any]]:
        done = run_component(app, mode, cwd=cwd)
        done.assert_no_trap()
        assert done.code == 0, done.stdout + done.stderr
        return [json.loads(line) for line in done.stdout.splitlines()]

    return run


def run_component(
    app: str | Path, *args: str, cwd: Path, wasmtime_flags: str = "", timeout: float = 120
) -> Completed:
    """``./build.sh run APP ARGS`` from ``cwd`` (mapped into the guest as '.')."""
    env = dict(os.environ)
    if wasmtime_flags:
        env["WASMTIME_FLAGS"] = wasmtime_flags
    proc = subprocess.run(
        [str(BUILD_SH), "run", str(app), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Completed(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def guest(built: dict[str, Path], model_dir: Path, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Run a JSON script through the test guest component; see tests/guest_app/app.py.

    The component sees ``model_dir`` as its current directory, so paths in
    scripts are relative to it.
    """
    counter = iter(range(1000))

    def run(script: dict[str, Any], wasmtime_flags: str = "") -> Completed:
        name = f"script_{request.node.name}_{next(counter)}.json"
        name = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
        (model_dir / name).write_text(json.dumps(script))
        done = run_component(built["guest_app"], name, cwd=model_dir, wasmtime_flags=wasmtime_flags)
        done.assert_no_trap()
        return done

    return run
