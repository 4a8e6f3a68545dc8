"""run_command and print_line, natively and in a real component (where errors end in Err)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ROOT, Completed, run_component

import wasinn
from wasinn import _command, print_line, run_command

Main = Callable[[list[str]], int | None]


@dataclass
class Ran:
    code: object  # the exit status: 0 when run_command returned
    out: str
    err: str


def run(
    main: Main, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...] = ("prog", "a")
) -> Ran:
    """run_command(main) natively: its exit status (0 when it returns), stdout and stderr."""
    old = sys.argv
    sys.argv = list(argv)
    code: object = 0
    try:
        run_command(main, name="demo")
    except SystemExit as exc:
        code = exc.code
    finally:
        sys.argv = old
    out, err = capsys.readouterr()
    return Ran(code, out, err)


def raising(exc: BaseException) -> Main:
    def main(args: list[str]) -> None:
        raise exc

    return main


def test_success_and_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[list[str]] = []
    ran = run(lambda args: seen.append(args), capsys)
    assert ran.code == 0 and seen == [["a"]] and ran.err == ""


@pytest.mark.parametrize(
    "exc,expected,status",
    [
        (FileNotFoundError(2, "No such file or directory", "x.png"),
         "demo: error: cannot open x.png: No such file or directory", 1),
        (PermissionError(13, "Permission denied", "out/result.json"),
         "demo: error: cannot open out/result.json: Permission denied", 1),
        # No file name: a failed write (here a full disk) is not "cannot read a file".
        (OSError(errno.ENOSPC, "No space left on device"),
         "demo: error: No space left on device", 1),
        (FileNotFoundError("model file not found: m.xml"),
         "demo: error: model file not found: m.xml", 1),
        (wasinn.ValidationError("input 'x' must be f32"), "demo: error: input 'x' must be f32", 1),
        (ValueError("bad.wav is truncated"), "demo: error: bad.wav is truncated", 1),
        (KeyError("oops"), "demo: internal error: KeyError('oops')", 70),
    ],
)  # fmt: skip
def test_exceptions_become_one_line(
    capsys: pytest.CaptureFixture[str], exc: BaseException, expected: str, status: int
) -> None:
    ran = run(raising(exc), capsys)
    assert ran.code == status
    assert ran.err.strip() == expected
    assert "cannot read" not in ran.err


def test_nonzero_return_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(lambda args: 2, capsys).code == 2


def test_print_line_writes_everything(capsys: pytest.CaptureFixture[str]) -> None:
    text = "x" * 100_000
    print_line(text)
    assert capsys.readouterr().out == text + "\n"


class ClosedPipe:
    """A stdout whose reader has gone: every write fails with EPIPE."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    def flush(self) -> None:
        pass


def test_closed_stdout_ends_quietly_with_status_0(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[str] = []

    def main(args: list[str]) -> None:
        monkeypatch.setattr(sys, "stdout", ClosedPipe())
        print("first")
        written.append("after print")  # never reached: print raised

    ran = run(main, capsys)
    assert (ran.code, ran.err, written) == (0, "", [])
    ran = run(lambda args: print_line("y" * 10_000), capsys)
    assert (ran.code, ran.err) == (0, "")


def test_closed_stderr_still_exits_1(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", ClosedPipe())
    with pytest.raises(SystemExit) as exited:
        run_command(raising(FileNotFoundError(2, "No such file or directory", "x")), name="demo")
    assert exited.value.code == 1


@pytest.mark.parametrize(
    "exc,hint",
    [
        (FileNotFoundError(2, "No such file or directory", "/nonexistent/x.png"), True),
        (PermissionError(errno.EPERM, "Operation not permitted", "no-such-dir/x"), True),
        (FileNotFoundError("model file not found: /elsewhere/m.xml"), True),
        # The directory is there: the file itself is missing, no note needed.
        (FileNotFoundError(2, "No such file or directory", "missing.png"), False),
        (FileNotFoundError(2, "No such file or directory", "sub/missing.png"), False),
        # Not about where the path is.
        (IsADirectoryError(errno.EISDIR, "Is a directory", "/nonexistent"), False),
        (OSError(errno.EIO, "Input/output error"), False),
    ],
)  # fmt: skip
def test_component_names_what_it_can_see(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    exc: OSError,
    hint: bool,
) -> None:
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_command, "_SANDBOXED", True)
    ran = run(raising(exc), capsys)
    assert ran.code == 1 and len(ran.err.splitlines()) == 1
    note = (
        "; a component sees only the directories its host maps into it (wasmtime run --dir "
        "HOST::GUEST; ./build.sh run maps the app folder as /app, build/models as /models and "
        "the current directory as .)"
    )
    assert ran.err.rstrip("\n").endswith(note) is hint, ran.err
    # Natively (not in a component) the note would not be true: never there.
    monkeypatch.setattr(_command, "_SANDBOXED", False)
    assert "a component sees" not in run(raising(exc), capsys).err


NATIVE_SCRIPT = """
import sys
from wasinn import run_command

def main(args):
    for i in range(int(args[0])):
        print(f"line {i}")

run_command(main, name="lines")
"""


def native_lines(tmp_path: Path, count: int, read: int) -> tuple[int, str, list[str]]:
    """Run NATIVE_SCRIPT natively, read ``read`` lines of its stdout, then close the pipe."""
    script = tmp_path / "lines.py"
    script.write_text(textwrap.dedent(NATIVE_SCRIPT))
    proc = subprocess.Popen(
        [sys.executable, str(script), str(count)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT / "guest")}, text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    got = [proc.stdout.readline() for _ in range(read)]
    proc.stdout.close()
    err = proc.stderr.read()
    return proc.wait(timeout=60), err, got


def test_native_program_under_head_exits_0_quietly(tmp_path: Path) -> None:
    # 200,000 lines overflow the pipe's buffer: writes fail once the reader is gone.
    code, err, got = native_lines(tmp_path, 200_000, read=1)
    assert (code, err, got) == (0, "", ["line 0\n"])
    code, err, _ = native_lines(tmp_path, 200_000, read=0)
    assert (code, err) == (0, "")


# ---------------------------------------------------------------- in a real component

SAMPLES = sorted((ROOT / "apps" / "digits" / "samples").glob("*.png"))


def run_piped(app: Path, args: list[str], cwd: Path, read: int) -> Completed:
    """``./build.sh run APP ARGS | head -READ``: read that many lines, then close the pipe."""
    proc = subprocess.Popen(
        [str(ROOT / "build.sh"), "run", str(app), *args], cwd=cwd,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    lines = [proc.stdout.readline() for _ in range(read)]
    proc.stdout.close()
    err = proc.stderr.read()
    return Completed(proc.wait(timeout=300), "".join(lines), err)


@pytest.mark.integration
@pytest.mark.parametrize("read", [0, 1])
def test_component_under_head_exits_0_quietly(built: dict[str, Path], read: int) -> None:
    # 40 images a line each: with read=1 the pipe closes after the first line,
    # with read=0 before the first write; either way later writes hit EPIPE.
    args = [str(p.relative_to(ROOT)) for p in SAMPLES] * 4
    done = run_piped(built["digits"], args, cwd=ROOT, read=read)
    done.assert_no_trap()
    assert done.code == 0, done.stderr
    # build.sh may say what it builds ("build.sh: ..."); the app says nothing.
    assert not [line for line in done.stderr.splitlines() if not line.startswith("build.sh:")]
    assert "Broken pipe" not in done.stderr
    if read:
        assert done.stdout.startswith(f"{args[0]}: ") and done.stdout.count("\n") == 1


@pytest.mark.integration
def test_component_path_errors_name_what_it_can_see(built: dict[str, Path], tmp_path: Path) -> None:
    note = "a component sees only the directories its host maps into it"
    (tmp_path / "here").mkdir()
    for path, reason, hint in [
        ("/nonexistent/x.png", "No such file or directory", True),
        ("../outside.png", "Operation not permitted", True),  # escapes every mapped directory
        ("here/missing.png", "No such file or directory", False),
        ("missing.png", "No such file or directory", False),
    ]:
        done = run_component(built["digits"], path, cwd=tmp_path)
        done.assert_no_trap()
        assert done.code == 1
        line = done.stderr.strip()
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert line.startswith(f"digits: error: cannot open {path}: {reason}"), line
        assert (note in line) is hint, line
