"""Running a command-line component without traps: wasinn's helpers for apps.

An exception that escapes a component's ``wasi:cli/run`` export traps the
component (a Rust panic and a backtrace on stderr), and under wasmtime a
single write of more than 64 KiB to stdout is cut short without an error.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable

from ._errors import WasiNNError
from ._instance import start_instance

try:
    from componentize_py_types import Err
except ImportError:  # plain CPython: exit like a normal program
    _IN_COMPONENT = False
else:
    _IN_COMPONENT = True

# A WASI program sees no file system of its own, only the directories its host
# maps into it ("preopens"). The guest cannot list them (CPython has no API
# for the preopen table, and the app's world does not import
# wasi:filesystem/preopens), so the hint says how they are made instead.
_SANDBOXED = sys.platform == "wasi"
_WHAT_IS_VISIBLE = (
    "a component sees only the directories its host maps into it (wasmtime run --dir "
    "HOST::GUEST; ./build.sh run maps the app folder as /app, build/models as /models and "
    "the current directory as .)"
)
# Errors of a path that may lie outside every mapped directory. wasi-libc
# reports a path that escapes them (such as ../x) as EPERM or ENOTCAPABLE.
_NOT_VISIBLE_ERRNOS = frozenset(
    code
    for code in (
        errno.ENOENT,
        errno.ENOTDIR,
        errno.EACCES,
        errno.EPERM,
        getattr(errno, "ENOTCAPABLE", None),
    )
    if code is not None
)


def run_command(main: Callable[[list[str]], int | None], *, name: str) -> None:
    """Run ``main(sys.argv[1:])`` as the body of a ``wasi:cli/run`` export.

    A non-zero return, or an exception, makes the component exit with status 1
    after one line on stderr: ``NAME: error: cannot open PATH: REASON`` for
    an OSError about a file (``NAME: error: REASON`` for one without a file
    name), ``NAME: error: MESSAGE`` for wasinn's errors and ValueError (the
    usual way to report bad input), ``NAME: internal error: ...`` (status 70)
    for anything else. Inside a component, a file that is missing from a
    directory the component cannot see also gets a note on which directories
    it can see. Nothing traps. Per-run state (numpy's global random
    generator) is renewed first: see ``start_instance``.

    When whoever reads stdout goes away (``app | head -1``), the write raises
    BrokenPipeError; that ends the command quietly with status 0, as it ends
    ``cat`` or ``ls``.

    Example::

        class Run(exports.Run):
            def run(self) -> None:
                run_command(main, name="digits")
    """
    try:
        start_instance()
        code = main(sys.argv[1:])
    except BrokenPipeError:
        _discard_stdout()
        code = 0
    except OSError as exc:
        _report(f"{name}: error: {_describe_os_error(exc)}")
        code = 1
    except (WasiNNError, ValueError) as exc:
        _report(f"{name}: error: {exc}")
        code = 1
    except Exception as exc:  # a bug: still a clean exit, never a trap
        _report(f"{name}: internal error: {exc!r}")
        code = 70
    if code:
        if not _IN_COMPONENT:
            raise SystemExit(code)
        raise Err(None)


def print_line(text: str) -> None:
    """Print ``text`` and a newline to stdout in 4 KiB writes.

    Use it for long lines (JSON of a large tensor): wasmtime cuts a single
    write of more than 64 KiB short without reporting an error. Under
    ``run_command``, a reader that has gone away ends the command quietly.

    >>> print_line('{"probs": [0.25, 0.75]}')
    {"probs": [0.25, 0.75]}
    """
    for start in range(0, len(text), 4096):
        sys.stdout.write(text[start : start + 4096])
        sys.stdout.flush()
    sys.stdout.write("\n")
    sys.stdout.flush()


def _describe_os_error(exc: OSError) -> str:
    """What failed, for an OSError: the path if there is one, the reason, and a hint."""
    reason = exc.strerror or str(exc)
    if exc.filename is None:
        # e.g. wasinn's own "model file not found: PATH", or a failed write.
        hidden = isinstance(exc, FileNotFoundError)
        text = reason
    else:
        # A file name comes with errors from opening or looking up a path
        # (open, listdir, stat); whether it was to read or to write is not
        # recorded, so the message names only the step it knows.
        path = exc.filename
        path = os.fsdecode(path) if isinstance(path, (str, bytes)) else str(path)
        directory = os.path.dirname(path) or "."
        hidden = exc.errno in _NOT_VISIBLE_ERRNOS and not os.path.isdir(directory)
        text = f"cannot open {path}: {reason}"
    if hidden and _SANDBOXED:
        text += f"; {_WHAT_IS_VISIBLE}"
    return text


def _discard_stdout() -> None:
    """Stop the interpreter from flushing stdout into a closed pipe at exit.

    Natively the unflushed rest would raise again at shutdown ("Exception
    ignored ... BrokenPipeError", status 120): point stdout at /dev/null, as
    Python's documentation advises. A component has no dup2 and writes stdout
    through at once, so it has nothing left to flush.
    """
    stream = sys.__stdout__
    if stream is None or sys.stdout is not stream or not hasattr(os, "dup2"):
        return  # stdout replaced (e.g. captured by a test): not ours to touch
    try:
        fd = stream.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
    except (OSError, ValueError):
        return
    os.dup2(devnull, fd)
    os.close(devnull)


def _report(line: str) -> None:
    """Write one line to stderr; if stderr is gone too, the exit status still tells."""
    try:
        print(line, file=sys.stderr)
    except OSError:
        pass
