"""numpy's own test suite inside a component: the guest half of
``./build.sh conformance numpy`` (tools/numpy_conformance.py).

    numpy_conformance_app run TESTS OUT SKIP FILE...   pytest on FILE... (npconf_driver.py)
    numpy_conformance_app imports                      what failed to import at build time

componentize-py keeps only what was imported when it pre-initialised the
component, and at run time the guest has no standard library or site folder
to import more from. So this imports, at build time, every module of numpy
(the site folder of build.txt, extension modules of numpy's own tests such as
``numpy._core._multiarray_tests`` included), of pytest, hypothesis and their
dependencies, and of the standard library: a test that imports something
lazily finds it in ``sys.modules``. Only the test files themselves (pure
Python) are read at run time, from the folder mapped at TESTS.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys

# Importing these has effects beyond the import (a browser, a printed poem, a
# GUI) or cannot work in the guest at all.
_NEVER = {
    "antigravity",
    "this",
    "idlelib",
    "tkinter",
    "turtle",
    "turtledemo",
    "__phello__",
    "lib2to3",
}
BUILD_TIME_FAILURES: dict[str, str] = {}


def _import(name: str) -> None:
    if name.split(".")[0] in _NEVER or ".tests" in name or name == "numpy.conftest":
        return
    try:
        importlib.import_module(name)
    except BaseException as e:  # noqa: BLE001 (SystemExit from a module that exits on import, too)
        BUILD_TIME_FAILURES[name] = f"{type(e).__name__}: {e}"[:200]


def _import_tree(top: str) -> None:
    _import(top)
    package = sys.modules.get(top)
    path = getattr(package, "__path__", None)
    if path is None:
        return
    for info in pkgutil.walk_packages(path, top + ".", onerror=lambda name: None):
        _import(info.name)


for _name in sorted(sys.stdlib_module_names):
    _import_tree(_name)
for _top in (
    "numpy",
    "pytest",
    "_pytest",
    "pluggy",
    "iniconfig",
    "packaging",
    "pygments",
    "hypothesis",
    "_hypothesis_pytestplugin",
    "_hypothesis_globals",
    "sortedcontainers",
):
    _import_tree(_top)

import npconf_driver  # noqa: E402
from wit_world import exports  # noqa: E402

from wasinn import print_line, run_command  # noqa: E402


def main(argv: list[str]) -> int:
    if argv[:1] == ["imports"]:
        for name, error in sorted(BUILD_TIME_FAILURES.items()):
            print_line(f"{name}: {error}")
        return 0
    if argv[:1] == ["run"] and len(argv) >= 5:
        os.environ.setdefault("TMPDIR", "/tmp")
        # There is no /dev in the guest; pytest's logging plugin opens os.devnull.
        os.devnull = "/tmp/devnull"
        return npconf_driver.run(argv[1], argv[2], argv[3], argv[4:]) and 0
    raise ValueError("usage: numpy_conformance_app run TESTS OUT SKIP FILE... | imports")


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="numpy_conformance_app")
