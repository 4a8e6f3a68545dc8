"""Running a command-line component without traps: wasinn's helpers for apps.

An exception that escapes a component's ``wasi:cli/run`` export traps the
component (a Rust panic and a backtrace on stderr), and under wasmtime a
single write of more than 64 KiB to stdout is cut short without an error.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from ._errors import WasiNNError

try:
    from componentize_py_types import Err as _Err
except ImportError:  # plain CPython: exit like a normal program
    _Err = None


def run_command(main: Callable[[list[str]], int | None], *, name: str) -> None:
    """Run ``main(sys.argv[1:])`` as the body of a ``wasi:cli/run`` export.

    A non-zero return, or an exception, makes the component exit with status 1
    after one line on stderr: ``NAME: error: cannot read PATH: REASON`` for
    an OSError, ``NAME: error: MESSAGE`` for wasinn's errors and ValueError
    (the usual way to report bad input), ``NAME: internal error: ...`` for
    anything else. Nothing traps.

    Example::

        class Run(exports.Run):
            def run(self) -> None:
                run_command(main, name="digits")
    """
    try:
        code = main(sys.argv[1:])
    except OSError as exc:
        where = exc.filename if exc.filename is not None else "a file"
        print(f"{name}: error: cannot read {where}: {exc.strerror or exc}", file=sys.stderr)
        code = 1
    except (WasiNNError, ValueError) as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        code = 1
    except Exception as exc:  # a bug: still a clean exit, never a trap
        print(f"{name}: internal error: {exc!r}", file=sys.stderr)
        code = 70
    if code:
        if _Err is None:
            raise SystemExit(code)
        raise _Err(None)


def print_line(text: str) -> None:
    """Print ``text`` and a newline to stdout in 4 KiB writes.

    Use it for long lines (JSON of a large tensor): wasmtime cuts a single
    write of more than 64 KiB short without reporting an error.
    """
    for start in range(0, len(text), 4096):
        sys.stdout.write(text[start : start + 4096])
        sys.stdout.flush()
    sys.stdout.write("\n")
    sys.stdout.flush()
