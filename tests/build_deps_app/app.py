"""A test-only app for tests/test_build.py: a third-party pure-Python package
(humanize, pinned in requirements.txt) bundled into the component by build.sh.

    build_deps_app           prints humanize's renderings of two numbers
"""

from __future__ import annotations

import humanize
from wit_world import exports


class Run(exports.Run):
    def run(self) -> None:
        print(f"{humanize.intcomma(1234567)} {humanize.naturalsize(3_000_000)}")
