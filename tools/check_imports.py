"""Warn about imports inside functions that will fail inside the component.

componentize-py runs the app's top-level imports once at build time and keeps
the result; the component has no module files to import from later. So
``import csv`` inside a function raises ModuleNotFoundError at run time unless
some module that goes into the component imported ``csv`` at top level. This
script finds such imports in an app's modules before componentize-py runs:

    check_imports.py APP_DIR [--path DIR ...] [--package NAME ...]

``--path`` adds folders the component imports from (wasinn's parent, an app's
installed requirements); ``--package`` names packages that go in whole
(componentize-py imports wasinn itself). One warning per line on stderr; the
exit status is 0 unless the arguments are wrong.

The check is deliberately conservative: it does not follow the standard
library's own imports, so it also flags a module that something else happens
to load first (``re``, which ``json`` imports). Such an import works only as
long as that other import stays; moving it to the top is the fix either way.
Modules compiled into the guest's CPython (``math``, ``zlib``, ``array``, ...)
need no bundling and are never flagged.

Example::

    $ python tools/check_imports.py apps/digits --path guest --package wasinn
    build.sh: warning: app.py:12 imports json inside a function; componentize-py bundles ...
"""

from __future__ import annotations

import argparse
import ast
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

# Generated into every component by componentize-py, whatever the app imports.
_GENERATED = frozenset(
    {
        "wit_world",
        "componentize_py_types",
        "componentize_py_runtime",
        "componentize_py_async_support",
        "poll_loop",
    }
)
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError"})


@dataclass(frozen=True)
class LateImport:
    """An import statement that runs only when its function is called."""

    file: Path
    line: int
    module: str

    def message(self, app_dir: Path) -> str:
        """The build's warning line for this import.

        Example::

            >>> LateImport(Path("/a/app.py"), 12, "json").message(Path("/a"))[:49]
            'build.sh: warning: app.py:12 imports json inside'
        """
        where = self.file.relative_to(app_dir).as_posix()
        return (
            f"build.sh: warning: {where}:{self.line} imports {self.module} inside a function; "
            "componentize-py bundles only modules imported at top level, so this fails at "
            "run time with ModuleNotFoundError. Move the import to the top of the file."
        )


@dataclass
class _Module:
    name: str
    path: Path
    is_package: bool


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _catches_import_error(node: ast.Try | ast.TryStar) -> bool:
    for handler in node.handlers:
        kinds = handler.type
        names = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds] if kinds else []
        if any(isinstance(n, ast.Name) and n.id in _IMPORT_ERRORS for n in names):
            return True
    return False


def _imports(
    body: Iterable[ast.stmt], in_function: bool, guarded: bool
) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
    """Every import statement under ``body``, with whether it runs only inside
    a function and whether an ``except ImportError`` around it handles failure.
    Imports under ``if TYPE_CHECKING:`` never run and are left out."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, in_function, guarded
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from _imports(node.body, True, False)
        elif isinstance(node, ast.ClassDef):
            yield from _imports(node.body, in_function, guarded)
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _imports(node.body, in_function, guarded)
            yield from _imports(node.orelse, in_function, guarded)
        elif isinstance(node, ast.Try) or (
            sys.version_info >= (3, 11) and isinstance(node, ast.TryStar)
        ):
            yield from _imports(node.body, in_function, guarded or _catches_import_error(node))
            for handler in node.handlers:
                yield from _imports(handler.body, in_function, guarded)
            yield from _imports(node.orelse, in_function, guarded)
            yield from _imports(node.finalbody, in_function, guarded)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            yield from _imports(node.body, in_function, guarded)
            yield from _imports(node.orelse, in_function, guarded)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            yield from _imports(node.body, in_function, guarded)
        elif isinstance(node, ast.Match):
            for case in node.cases:
                yield from _imports(case.body, in_function, guarded)


def _absolute(module: _Module, node: ast.ImportFrom) -> str:
    """The absolute module name of a ``from ... import`` (relative ones resolved)."""
    if not node.level:
        return node.module or ""
    parts = module.name.split(".")
    package = parts if module.is_package else parts[:-1]
    base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
    return ".".join([*base, *([node.module] if node.module else [])])


def _with_parents(name: str) -> Iterator[str]:
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        yield ".".join(parts[:i])


def _compiled_in(name: str) -> bool:
    """Whether ``name`` is a C module of the standard library.

    The guest's CPython links every C module it has into the interpreter, so
    these import at run time without being bundled. Judged by the host's
    Python (whose C modules are the same set, as shared libraries).
    """
    if "." in name:
        return False
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    if spec is None or spec.origin is None:
        return False
    if spec.origin == "built-in":
        return True
    # The folder of os.py, which holds lib-dynload too (also from inside a venv).
    stdlib = Path(os.__file__).resolve().parent
    origin = Path(spec.origin).resolve()
    return origin.name.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)) and (
        stdlib in origin.parents
    )


class _Finder:
    """Resolves module names to source files in the folders that go into the component."""

    def __init__(self, roots: Sequence[Path]) -> None:
        self.roots = roots

    def find(self, name: str) -> _Module | None:
        rel = Path(*name.split("."))
        for root in self.roots:
            package = root / rel / "__init__.py"
            if package.is_file():
                return _Module(name, package, True)
            plain = root / rel.with_name(rel.name + ".py")
            if plain.is_file():
                return _Module(name, plain, False)
        return None


def late_imports(
    app_dir: Path, paths: Sequence[Path] = (), packages: Sequence[str] = ()
) -> list[LateImport]:
    """The function-level imports in the app's own modules that nothing bundles.

    Starts from ``app`` (the app's ``app.py``) and the ``packages``, follows
    top-level imports through every module found in ``app_dir`` or ``paths``,
    and collects what those modules import at top level: that is what the
    component holds. Only modules inside ``app_dir`` are checked (a library's
    own lazy imports are not the app's to fix); build-time scripts such as
    prepare.py are not imported by the app and so not checked.

    Example::

        >>> late_imports(Path("apps/digits"), [Path("guest")], ["wasinn"])
        []
    """
    app_dir = app_dir.resolve()
    finder = _Finder([app_dir, *[p.resolve() for p in paths]])
    bundled: set[str] = set()
    candidates: list[LateImport] = []
    queue = [m for m in (finder.find(n) for n in ["app", *packages]) if m is not None]
    seen: set[Path] = set()
    while queue:
        module = queue.pop()
        if module.path in seen:
            continue
        seen.add(module.path)
        bundled.update(_with_parents(module.name))
        try:
            tree = ast.parse(module.path.read_bytes(), str(module.path))
        except (SyntaxError, ValueError, OSError):
            continue  # componentize-py reports it better
        ours = app_dir in module.path.parents
        for node, in_function, guarded in _imports(tree.body, False, False):
            if isinstance(node, ast.Import):
                needed = [alias.name for alias in node.names]
                # `from pkg import name` also loads pkg.name when that is a module.
                maybe: list[str] = []
            else:
                base = _absolute(module, node)
                needed = [base] if base else []
                maybe = [f"{base}.{a.name}" if base else a.name for a in node.names]
            if not in_function:
                for name in [*needed, *maybe]:
                    bundled.update(_with_parents(name))
                    queue.extend(m for m in map(finder.find, _with_parents(name)) if m)
            elif ours and not guarded:
                names = [*needed, *(n for n in maybe if finder.find(n) is not None)]
                candidates.extend(LateImport(module.path, node.lineno, n) for n in names)
    late = [
        item
        for item in candidates
        if item.module not in bundled
        and item.module.split(".")[0] not in _GENERATED
        and not _compiled_in(item.module)
    ]
    return sorted(late, key=lambda i: (str(i.file), i.line, i.module))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Warn about imports inside functions that componentize-py will not bundle."
    )
    parser.add_argument("app_dir", type=Path)
    parser.add_argument("--path", type=Path, action="append", default=[], metavar="DIR")
    parser.add_argument("--package", action="append", default=[], metavar="NAME")
    args = parser.parse_args(argv)
    app_dir = args.app_dir.resolve()
    for item in late_imports(app_dir, args.path, args.package):
        print(item.message(app_dir), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
