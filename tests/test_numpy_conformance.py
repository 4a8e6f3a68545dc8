"""numpy's own test suite in a component: a sample of it against docs/numpy.md.

``./build.sh conformance numpy`` runs all of numpy's ``_core``, ``linalg``,
``fft``, ``random``, ``lib`` and ``ma`` test modules in the guest and natively
(tools/numpy_conformance.py) and lists in docs/numpy.md every test that
passes natively but not in the guest. This runs ``numpy_conformance.SAMPLE``
(a few minutes) and fails on any such test docs/numpy.md does not list, so a
regression (a new failure, trap or hang) fails the test run. Tests pytest
generates natively only (other platform dtypes, SIMD targets) are counted per
module in docs/numpy.md, not listed, and not checked here. The harness's
own bookkeeping is checked first, without a component.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import numpy_conformance as nc  # noqa: E402


def test_causes_come_from_the_messages() -> None:
    trap = "exit 134: wasm: C++ exception thrown, but this build has no unwinding; aborting"
    assert nc.cause_of("trap", trap) == "C++ throw traps the component"
    assert nc.cause_of("trap", "exit 1: 2: wasm trap: indirect call type mismatch").startswith(
        "C function called through a pointer"
    )
    assert nc.cause_of("fail", "AssertionError: FloatingPointError not raised by exp") == (
        "no FP exception flags"
    )
    assert nc.cause_of("error", "E   ModuleNotFoundError: No module named 'ctypes'") == (
        "no ctypes in the guest's CPython"
    )
    assert nc.cause_of("fail", "something new") == nc.OTHER


def test_regressions_are_tests_passing_natively_only() -> None:
    guest = {
        "m.py": nc.Result(
            tests={"m.py::a": ("pass", ""), "m.py::b": ("fail", "x"), "m.py::c": ("trap", "y")}
        ),
        "n.py": nc.Result(
            collect_errors=["n.py: E   ModuleNotFoundError: No module named 'ctypes'"]
        ),
    }
    native = {
        "m.py": nc.Result(
            tests={
                "m.py::a": ("pass", ""),
                "m.py::b": ("pass", ""),
                "m.py::c": ("fail", "z"),
                "m.py::d": ("pass", ""),
            }
        ),  # fmt: skip
        "n.py": nc.Result(tests={"n.py::e": ("pass", ""), "n.py::f": ("skip", "")}),
    }
    rows = {test: (outcome, cause) for test, outcome, _, cause in nc.regressions(guest, native)}
    assert rows == {
        "m.py::b": ("fail", nc.OTHER),
        "m.py::d": ("not run", "parametrised differently in the guest (platform dtypes)"),
        "n.py::e": ("error", "no ctypes in the guest's CPython"),
    }


def test_the_report_lists_what_it_documents(tmp_path: Path) -> None:
    guest = {"m.py": nc.Result(tests={"m.py::b": ("fail", "FloatingPointError not raised")})}
    native = {"m.py": nc.Result(tests={"m.py::b": ("pass", "")})}
    report = tmp_path / "numpy.md"
    nc.write_report(report, "2.4.6", Path("/site"), guest, native, 60.0)
    assert nc.documented(report) == {"m.py::b"}
    assert "| no FP exception flags | 1 |" in report.read_text()


@pytest.mark.integration
def test_the_sample_fails_only_where_documented(tmp_path: Path) -> None:
    try:
        site = nc.default_site()  # the project's numpy build, cached (built when missing)
        guest, native, _ = nc.run_all(nc.SAMPLE, site, work=tmp_path, progress=False)
    except SystemExit as e:  # no sdist or no numpy build: the check cannot run, so it fails
        pytest.fail(str(e))
    assert sorted(guest) == sorted(nc.SAMPLE)
    assert all(sum(r.counts().values()) > 0 for r in native.values())
    known = nc.documented()
    new = [f"{test}: {outcome} [{cause}] {message[:200]}"
           for test, outcome, message, cause in nc.regressions(guest, native)
           if test not in known and outcome != "not run"]  # fmt: skip
    assert not new, "fail in the guest, pass natively, not in docs/numpy.md:\n" + "\n".join(new)
