"""Run numpy's own tests with pytest and record every test's outcome: one
driver for both sides of ``./build.sh conformance numpy`` (tools/numpy_conformance.py).

    npconf_driver.py TESTS OUT SKIP FILE...

* TESTS is a folder holding numpy's test files as the sdist has them
  (``pytest.ini``, ``numpy/conftest.py``, ``numpy/_core/tests/...``), plus empty
  ``__init__.py`` files for the packages above them. Its package folders are put
  *first* on the ``__path__`` of the numpy packages already imported, so that
  ``numpy._core.tests.test_umath`` (and the tests' own ``from numpy._core.tests
  import ...``) come from TESTS while numpy itself stays the installed one.
* OUT gets one JSON line per event, flushed at once, so that what happened
  before a trap survives it: ``{"start": NODEID}`` when a test starts,
  ``{"test": NODEID, "outcome": ..., "message": ...}`` when it ends (outcome
  pass, fail, error, skip, xfail, xpass), ``{"collect": PATH, "message": ...}``
  for a file that cannot be collected, ``{"finished": STATUS}`` at the end.
* SKIP is a file of node ids (one a line; may be empty or missing) to
  deselect: tests that already reported, or that trapped, in an earlier run.

Natively this runs as a script (the host's numpy); in the guest
``tests/numpy_conformance_app/app.py`` calls :func:`run`. pytest's fd capture,
faulthandler and cache are off on both sides (the guest has no dup2, no
signals, and its test folder is scratch).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
import types
from typing import IO, Any

import pytest

# The numpy packages whose tests run, and so whose __path__ gets TESTS's folder.
PACKAGES = [
    "numpy",
    "numpy._core",
    "numpy.linalg",
    "numpy.fft",
    "numpy.random",
    "numpy.lib",
    "numpy.ma",
]


def add_tests_folder(tests: str) -> None:
    """Put TESTS's package folders first on numpy's packages' ``__path__``."""
    # All of them first: once numpy's __path__ starts with TESTS, importing
    # numpy.random would find TESTS's empty numpy/random/__init__.py instead.
    packages = [importlib.import_module(name) for name in PACKAGES]
    for name, package in zip(PACKAGES, packages, strict=True):
        folder = os.path.join(tests, *name.split("."))
        if folder not in package.__path__:
            package.__path__.insert(0, folder)


def stub_missing(names: tuple[str, ...] = ("ctypes", "mmap")) -> None:
    """Where ``import ctypes`` or ``import mmap`` fails (the guest's CPython has
    neither), put a stub module in its place, so that the test modules that
    import one at the top (test_dtype, test_multiarray, ...) still run: only
    the tests that use it fail ("ctypes is a stub here")."""
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            stub = types.ModuleType(name, f"a stub: this CPython has no {name}")

            def missing(attribute: str, name: str = name) -> Any:
                raise AttributeError(
                    f"{name} is a stub here (not in this CPython): {name}.{attribute}"
                )

            stub.__getattr__ = missing  # type: ignore[method-assign]
            sys.modules[name] = stub


def _message(report: Any) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        text = str(crash.message)
    elif isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        text = str(report.longrepr[2])  # a skip: (file, line, reason)
    else:
        text = str(report.longreprtext).strip().splitlines()[-1:][0] if report.longreprtext else ""
    return text[:600]


class Recorder:
    """A pytest plugin writing each test's outcome to OUT as it happens."""

    def __init__(self, out: IO[str], skip: set[str]) -> None:
        self.out = out
        self.skip = skip
        self.done: dict[str, dict[str, str]] = {}

    def _write(self, record: dict[str, Any]) -> None:
        self.out.write(json.dumps(record) + "\n")
        self.out.flush()

    def pytest_collection_modifyitems(self, config: Any, items: list[Any]) -> None:
        if not self.skip:
            return
        keep = [item for item in items if item.nodeid not in self.skip]
        gone = [item for item in items if item.nodeid in self.skip]
        if gone:
            config.hook.pytest_deselected(items=gone)
            items[:] = keep

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self._write({"collect": report.nodeid, "message": _message(report)})

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self._write({"start": nodeid})

    def pytest_runtest_logreport(self, report: Any) -> None:
        nodeid = report.nodeid
        previous = self.done.get(nodeid)
        outcome = ""
        if hasattr(report, "wasxfail"):
            outcome = "xfail" if report.skipped else "xpass"
        elif report.skipped:
            outcome = "skip"
        elif report.failed:
            outcome = "fail" if report.when == "call" else "error"
        elif report.when == "call":
            outcome = "pass"
        if outcome and (previous is None or previous["outcome"] in ("pass", "xpass")):
            self.done[nodeid] = {
                "outcome": outcome,
                "message": "" if outcome == "pass" else _message(report),
            }
        if report.when == "teardown" and nodeid in self.done:
            self._write({"test": nodeid, **self.done[nodeid]})

    def pytest_sessionfinish(self, session: Any, exitstatus: int) -> None:
        self._write({"finished": int(exitstatus)})


def run(tests: str, out: str, skip: str, files: list[str]) -> int:
    """pytest on FILES (relative to TESTS) with TESTS's pytest.ini."""
    add_tests_folder(tests)
    stub_missing()
    os.chdir(tests)
    skipped: set[str] = set()
    if skip and os.path.exists(skip):
        with open(skip) as f:
            skipped = {line.strip() for line in f if line.strip()}
    args = [
        "-c", os.path.join(tests, "pytest.ini"), "--rootdir", tests,
        "-p", "no:cacheprovider", "-p", "no:faulthandler", "--capture=sys",
        # Plugins are named, not found through entry points (the guest has no
        # installed distributions to find them in; the runner sets
        # PYTEST_DISABLE_PLUGIN_AUTOLOAD natively): hypothesis's only.
        "-p", "_hypothesis_pytestplugin",
        # ...which the guest imported at build time, too early for assertion rewriting.
        "-W", "ignore::pytest.PytestAssertRewriteWarning",
        # pytest names its default temporary folder after os.getuid(), which the guest lacks.
        "--basetemp", os.path.join(tempfile.gettempdir(), "pytest-basetemp"),
        "-q", "--tb=no", "-o", "console_output_style=classic",
        # numpy 2.4.6's parametrize calls predate pytest 9's deprecation of iterators,
        # which its pytest.ini's `filterwarnings = error` turns into collection errors.
        "-W", "ignore::pytest.PytestRemovedIn10Warning",
        *files,
    ]  # fmt: skip
    with open(out, "a") as f:
        return int(pytest.main(args, plugins=[Recorder(f, skipped)]))


if __name__ == "__main__":
    sys.exit(run(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]))
