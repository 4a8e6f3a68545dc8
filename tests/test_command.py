"""run_command and print_line, natively (inside a component they end in Err, not SystemExit)."""

from __future__ import annotations

import sys

import pytest

import wasinn
from wasinn import print_line, run_command


def run(main, capsys, argv=("prog", "a")):  # type: ignore[no-untyped-def]
    old = sys.argv
    sys.argv = list(argv)
    try:
        try:
            run_command(main, name="demo")
            code = 0
        except SystemExit as exc:
            code = exc.code
    finally:
        sys.argv = old
    return code, capsys.readouterr()


def test_success_and_arguments(capsys) -> None:  # type: ignore[no-untyped-def]
    seen = []
    code, out = run(lambda args: seen.append(args), capsys)
    assert code == 0 and seen == [["a"]] and out.err == ""


@pytest.mark.parametrize(
    "exc,expected,status",
    [
        (FileNotFoundError(2, "No such file or directory", "x.png"), "demo: error: cannot read x.png: No such file or directory", 1),
        (wasinn.ValidationError("input 'x' must be f32"), "demo: error: input 'x' must be f32", 1),
        (ValueError("bad.wav is truncated"), "demo: error: bad.wav is truncated", 1),
        (KeyError("oops"), "demo: internal error: KeyError('oops')", 70),
    ],
)
def test_exceptions_become_one_line(capsys, exc, expected, status) -> None:  # type: ignore[no-untyped-def]
    def main(args):  # type: ignore[no-untyped-def]
        raise exc

    code, out = run(main, capsys)
    assert code == status
    assert out.err.strip() == expected


def test_nonzero_return_fails(capsys) -> None:  # type: ignore[no-untyped-def]
    code, _ = run(lambda args: 2, capsys)
    assert code == 2


def test_print_line_writes_everything(capsys) -> None:  # type: ignore[no-untyped-def]
    text = "x" * 100_000
    print_line(text)
    assert capsys.readouterr().out == text + "\n"
