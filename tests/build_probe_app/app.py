"""A test-only app for tests/test_build.py, which copies it and edits MESSAGE.

    build_probe_app          prints MESSAGE
    build_probe_app late     calls a function that imports a module nothing
                             imports at top level, and prints what happened
"""

from __future__ import annotations

import sys

from wit_world import exports

MESSAGE = "build probe v1"


def late_import() -> str:
    # Deliberately inside a function: the build warns, and at run time it fails.
    import csv

    return csv.__name__


class Run(exports.Run):
    def run(self) -> None:
        if sys.argv[1:] == ["late"]:
            try:
                print(f"late import worked: {late_import()}")
            except ModuleNotFoundError as exc:
                print(f"late import failed: {exc}")
        else:
            print(MESSAGE)
