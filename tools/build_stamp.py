"""Decide whether a component is fresh: a manifest of everything that goes into it.

build.sh runs this before every build of an app (so on every ``./build.sh run``
too). The manifest lists the sha256 of every input file, the versions of the
tools that turn them into a component, and the settings that change the output;
the component is rebuilt when the new manifest differs from the one stored
beside it. Content hashes rather than file times: an edit is always seen, and
touching a file, checking it out again or copying the folder is not a change.

    build_stamp.py --out NEW [--previous OLD] [--tree LABEL=DIR ...]
                   [--file LABEL=PATH ...] [--setting KEY=VALUE ...] [--version-of DIST ...]

Writes the manifest to NEW. Exit status 0: NEW equals OLD (nothing changed);
10: it differs, and stdout says what changed; 2: bad arguments or unreadable input.

Example::

    python tools/build_stamp.py --out build/digits.stamp.new --previous build/digits.stamp \\
        --tree app=apps/digits --tree wasinn=guest/wasinn --version-of componentize-py
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

FRESH = 0
STALE = 10
ERROR = 2

# Caches that Python, mypy, ruff and pytest write beside the sources: outputs,
# never inputs of a component (and rewritten by every import or lint run).
_SKIP_DIRS = frozenset({"__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"})
_SKIP_SUFFIXES = (".pyc",)


def _files(root: Path) -> Iterator[Path]:
    """Every file under ``root`` except Python caches, in a stable order."""
    for here, dirs, names in os.walk(root, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(names):
            if not name.endswith(_SKIP_SUFFIXES):
                yield Path(here) / name


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _host_cpu() -> str:
    """The CPU features a precompiled .cwasm was built for (wasmtime compiles
    for the native CPU and refuses a .cwasm made for another)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return hashlib.sha256(line.encode()).hexdigest()[:16]
    except OSError:
        pass
    return "unknown"


class NotInstalledError(LookupError):
    """A tool whose version the manifest records is not installed."""


def installed_version(dist: str) -> str:
    """The version of distribution ``dist`` installed for this Python.

    Read from the name of its ``.dist-info`` folder: importlib.metadata would
    cost a third of this script's run time, and this runs on every
    ``./build.sh run``.

    Example::

        >>> installed_version("componentize-py")   # doctest: +SKIP
        '0.25.1'
    """
    wanted = re.sub(r"[-_.]+", "_", dist).lower()
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            stem, dot, ext = name.rpartition(".")
            project, dash, version = stem.partition("-")
            if ext == "dist-info" and dash and re.sub(r"[-_.]+", "_", project).lower() == wanted:
                return version
    raise NotInstalledError(dist)


def manifest(
    trees: Iterable[tuple[str, Path]] = (),
    files: Iterable[tuple[str, Path]] = (),
    settings: Iterable[tuple[str, str]] = (),
    versions_of: Iterable[str] = (),
) -> dict[str, str]:
    """Map each input's key to its fingerprint.

    Keys are ``LABEL/relative/path`` for files (so the manifest does not depend
    on where the checkout lives), ``setting KEY`` and ``version DIST``.

    Example::

        >>> m = manifest(settings=[("free-import-bytes", "1")])
        >>> m["setting free-import-bytes"]
        '1'
    """
    out: dict[str, str] = {}
    for label, root in trees:
        if not root.is_dir():
            raise FileNotFoundError(f"{root} is not a folder")
        for path in _files(root):
            out[f"{label}/{path.relative_to(root).as_posix()}"] = _sha256(path)
    for label, path in files:
        out[label] = _sha256(path)
    for key, value in settings:
        out[f"setting {key}"] = value
    for dist in versions_of:
        out[f"version {dist}"] = installed_version(dist)
    out["setting host-cpu"] = _host_cpu()
    return out


def render(entries: dict[str, str]) -> str:
    """The manifest as text: a JSON object, one input per line, sorted."""
    return json.dumps(entries, indent=0, sort_keys=True) + "\n"


def parse(text: str) -> dict[str, str] | None:
    """Read back what :func:`render` wrote; None if it is not a manifest."""
    try:
        entries = json.loads(text)
    except ValueError:
        return None
    if not isinstance(entries, dict):
        return None
    return {str(k): str(v) for k, v in entries.items()}


def changes(old: dict[str, str], new: dict[str, str], limit: int = 3) -> str:
    """What differs between two manifests, briefly, for the build log.

    Example::

        >>> changes({"app/app.py": "1"}, {"app/app.py": "2", "app/x.py": "3"})
        'app/app.py changed, app/x.py added'
    """
    said = []
    for key in sorted(old.keys() | new.keys()):
        if key not in old:
            said.append(f"{key} added")
        elif key not in new:
            said.append(f"{key} removed")
        elif old[key] != new[key]:
            if key.startswith(("setting ", "version ")):
                said.append(f"{key} {old[key]} -> {new[key]}")
            else:
                said.append(f"{key} changed")
    if len(said) > limit:
        return ", ".join(said[:limit]) + f" and {len(said) - limit} more"
    return ", ".join(said)


def _pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Write a build manifest and compare it with the last build's."
    )
    parser.add_argument("--out", type=Path, required=True, help="where to write the new manifest")
    parser.add_argument("--previous", type=Path, help="the manifest of the last build, if any")
    parser.add_argument("--tree", type=_pair, action="append", default=[], metavar="LABEL=DIR")
    parser.add_argument("--file", type=_pair, action="append", default=[], metavar="LABEL=PATH")
    parser.add_argument("--setting", type=_pair, action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--version-of", action="append", default=[], metavar="DIST")
    args = parser.parse_args(argv)
    try:
        new = manifest(
            trees=[(label, Path(p)) for label, p in args.tree],
            files=[(label, Path(p)) for label, p in args.file],
            settings=args.setting,
            versions_of=args.version_of,
        )
    except NotInstalledError as exc:
        print(f"build_stamp: {exc} is not installed for {sys.executable}", file=sys.stderr)
        return ERROR
    except OSError as exc:
        print(f"build_stamp: cannot read an input: {exc}", file=sys.stderr)
        return ERROR
    args.out.write_text(render(new), encoding="utf-8")
    try:
        old = parse(args.previous.read_text(encoding="utf-8")) if args.previous else None
    except FileNotFoundError:
        old = None
    if old is None:
        print("no earlier build")
        return STALE
    if old != new:
        print(changes(old, new))
        return STALE
    return FRESH


if __name__ == "__main__":
    sys.exit(main())
