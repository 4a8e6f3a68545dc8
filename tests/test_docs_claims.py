"""The claims in README.md and docs/ that a test can check (issue 37, section 3):
the minimum Python, the build.sh commands the README names, and every link and
repository path the pages name.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: Top-level folders and files a page may name a path under (build/ and .venv/
#: are made by the build, so their paths are not in a fresh clone).
TOP = {p.name for p in ROOT.iterdir()} - {"build", ".venv", ".git"}


def test_the_minimum_python_is_the_same_everywhere_and_is_the_one_tested() -> None:
    readme = (ROOT / "README.md").read_text()
    claimed = re.findall(r"Python (3\.\d+)\+", readme)
    assert claimed, "README.md no longer says which Python it needs"
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    required = pyproject["project"]["requires-python"]
    assert set(claimed) == {required.removeprefix(">=")}, (claimed, required)
    # tools/ use tomllib (3.11); the test run is the proof that the minimum works.
    assert sys.version_info[:2] >= tuple(int(n) for n in required.removeprefix(">=").split("."))


def test_every_build_sh_command_the_readme_names_exists() -> None:
    listed = subprocess.run(
        [str(ROOT / "build.sh"), "help"], capture_output=True, text=True, check=True
    ).stdout
    commands = set(re.findall(r"^  ([a-z]+) ", listed, re.MULTILINE))
    named = set(re.findall(r"\./build\.sh ([a-z]+)", (ROOT / "README.md").read_text()))
    assert len(commands) > 10 and named <= commands, sorted(named - commands)


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_link_and_named_path_exists(page: Path) -> None:
    text = page.read_text()
    missing = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        target = target.split("#")[0]
        if target and not re.match(r"[a-z]+:", target) and not (page.parent / target).exists():
            missing.append(f"link {target}")
    # `apps/serve/completions.py`-like paths in code spans, relative to the
    # repository; placeholders (NAME, APP) and globs are not paths.
    for path in re.findall(r"`([A-Za-z0-9_.\-]+/[A-Za-z0-9_./\-]*)`", text):
        if path.split("/")[0] in TOP and not re.search(r"[A-Z]{3,}|\*", path):
            if not (ROOT / path).exists():
                missing.append(f"path {path}")
    assert not missing, missing


def test_the_layout_names_every_tool_and_page() -> None:
    """README's Layout section lists what is in tools/ and docs/ (a new file is named there)."""
    readme = (ROOT / "README.md").read_text()
    layout = readme[readme.index("## Layout") :]
    entries = [p for p in (ROOT / "tools").iterdir() if p.name != "__pycache__"]
    entries += list((ROOT / "docs").iterdir())
    unnamed = [
        f"{p.parent.name}/{p.name}" for p in entries if p.name.removesuffix(".toml") not in layout
    ]
    assert not unnamed, f"README.md's Layout does not name {unnamed}"


def test_builds_demo_usage_names_every_app_the_demo_runs() -> None:
    script = (ROOT / "build.sh").read_text()
    demo = script[script.index("\ndemo() {") : script.index("\n}\n", script.index("\ndemo() {"))]
    ran = set(re.findall(r'run_app "\$ROOT/apps/([a-z]+)"', demo))
    listed = subprocess.run(
        [str(ROOT / "build.sh"), "help"], capture_output=True, text=True, check=True
    ).stdout
    usage = listed[listed.index("  demo ") : listed.index("  test ")]
    assert len(ran) >= 5 and all(f"{app} (" in usage for app in ran), (sorted(ran), usage)
