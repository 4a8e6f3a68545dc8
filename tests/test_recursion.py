"""Deep recursion inside a component raises a Python exception instead of trapping.

CPython's guard against deep C recursion watches the guest's stack in linear
memory (about 1 MiB); wasmtime's own limit on the wasm call stack (512 KiB by
default) was reached first, so ``json.loads`` of 2,000 nested lists trapped
the component. tools/wasmtime.flags raises that limit to 64 MiB for every
component (docs/limits.md has the measured depths). These tests run each
construct of tests/recursion_app/recursion.py ever deeper under ``wasmtime
run`` and ``wasmtime serve`` and check that it raised, with no trap.
"""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import ROOT, build_app, run_component
from serve_host import Server

sys.path.insert(0, str(ROOT / "tools"))
import wasmtime_flags  # noqa: E402

pytestmark = pytest.mark.integration

APP = ROOT / "tests" / "recursion_app"
SERVE_APP = ROOT / "tests" / "recursion_serve_app"
DEPTHS = [100, 1_000, 10_000, 100_000, 1_000_000]
# What each construct raises once it is nested too deep. regex-match does not
# recurse at all (re's matcher keeps its own stack on the heap): it must finish.
RAISES = {
    "python": "RecursionError",  # Python frames: sys.getrecursionlimit()
    "python-through-c": "RecursionError",
    "json-lists": "RecursionError",
    "json-objects": "RecursionError",
    "json-dumps": "RecursionError",
    "repr": "RecursionError",
    "compare": "RecursionError",
    "pickle": "RecursionError",
    "deepcopy": "RecursionError",
    "eval": "MemoryError",  # the parser's own limit: "Parser stack overflowed"
    "literal-eval": "MemoryError",
    "compile": "RecursionError",
    "regex": "RecursionError",
    "xml": "RecursionError",
    "regex-match": "",
}
# CPython has no guard in these: nested a million deep they exhaust the wasm
# stack whatever its size (natively, hashing such a tuple crashes CPython).
UNGUARDED = ("tuple-hash", "isinstance")
# tools/wasmtime.flags' stack settings.
STACK_SETTINGS = ("max-wasm-stack=", "async-stack-size=")


def check_last_line(construct: str, lines: list[str]) -> None:
    assert lines, f"{construct}: no output"
    last = lines[-1]
    if RAISES[construct]:
        assert last.startswith("raised ") and f" {RAISES[construct]}: " in last, lines
    else:
        assert last == f"ok {DEPTHS[-1]}", lines


@pytest.fixture(scope="module")
def app() -> Path:
    build_app(APP)
    return APP


def test_every_construct_is_tested() -> None:
    sys.path.insert(0, str(APP))
    try:
        import recursion
    finally:
        sys.path.remove(str(APP))
    assert set(recursion.CONSTRUCTS) == set(RAISES) | set(UNGUARDED)


@pytest.mark.parametrize("construct", sorted(RAISES))
def test_deep_nesting_raises_under_wasmtime_run(
    app: Path, construct: str, tmp_path: Path
) -> None:
    done = run_component(app, construct, *map(str, DEPTHS), cwd=tmp_path)
    done.assert_no_trap()
    check_last_line(construct, done.stdout.splitlines())


def test_the_default_wasm_stack_traps_where_the_project_flags_raise(
    app: Path, tmp_path: Path
) -> None:
    """Why tools/wasmtime.flags sets the stack: with wasmtime's default the same
    component traps on 10,000 nested JSON lists. (A .cwasm holds no stack size:
    only the run's flags differ.)"""
    site = Path(sysconfig.get_path("purelib"))
    kept = [s for s in wasmtime_flags.SETTINGS if not s[-1].startswith(STACK_SETTINGS)]
    flags = [word for setting in kept for word in setting]
    argv = [str(site / "wasmtime_cli" / "wasmtime"), "run", *flags, "-S", "nn",
            "--allow-precompiled", str(ROOT / "build" / "recursion_app.cwasm"),
            "json-lists", "100", "10000"]  # fmt: skip
    assert len(flags) < len(wasmtime_flags.FLAGS), "the stack settings left tools/wasmtime.flags"
    env = dict(os.environ, LD_LIBRARY_PATH=str(site / "openvino" / "libs"), WASMTIME_LOG="off")
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode != 0 and "call stack exhausted" in done.stderr, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["ok 100"]


@pytest.mark.parametrize("construct", UNGUARDED)
def test_unguarded_recursion_traps_cleanly(app: Path, construct: str, tmp_path: Path) -> None:
    """The limit that remains: no exception, but a clean trap of the component
    (exit 134 with wasmtime's message), not a crash of the host."""
    done = run_component(app, construct, "100", "1000000", cwd=tmp_path)
    assert done.code == 134 and "call stack exhausted" in done.stderr, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["ok 100"]


def test_deep_nesting_raises_under_wasmtime_serve() -> None:
    build_app(SERVE_APP)
    depths = ",".join(map(str, DEPTHS))
    with Server(reuse=1000, app=SERVE_APP) as server:
        for construct in sorted(RAISES):
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
            try:
                conn.request("GET", f"/recurse/{construct}?{depths}")
                response = conn.getresponse()
                text = response.read().decode()
            finally:
                conn.close()
            assert response.status == 200, (construct, text)
            check_last_line(construct, text.splitlines())
