"""Install an app's pinned pure-Python requirements for its component.

An app folder may carry a ``requirements.txt`` of ``NAME==VERSION`` lines.
build.sh runs this before componentize-py, which then bundles what the app
imports from TARGET (passed as one more ``-p``):

    app_deps.py APP_DIR/requirements.txt TARGET

Only pure-Python wheels can run inside a component (there is no way to load a
compiled extension), so pip is asked for packages that work on any platform
with the guest's Python (``py3-none-any`` wheels; no source builds), and the
result is checked for compiled files anyway. Every installed distribution,
dependencies included, must be pinned in the file, so that a build is
reproducible and the build stamp (which hashes TARGET) sees every change.
TARGET is rebuilt only when the requirements file changed.

Exit status 0 on success (TARGET up to date or installed), 1 with a message on
stderr otherwise.

Example::

    $ python tools/app_deps.py apps/myapp/requirements.txt build/myapp.deps
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.machinery
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

# componentize-py 0.25.1 runs CPython 3.14 in the guest: pip resolves
# requirements and environment markers for that interpreter, not for the host's.
GUEST_PYTHON = "3.14"
# Recorded in TARGET: a change to the requirements or to how they are
# installed reinstalls them.
MARKER = ".wasinn-requirements"
_PIN = re.compile(
    r"^(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*==\s*(?P<version>[A-Za-z0-9.+!_-]+)\s*$"
)
_COMPILED = (*importlib.machinery.EXTENSION_SUFFIXES, ".so", ".pyd", ".dylib", ".dll")


class RequirementsError(Exception):
    """The requirements file cannot be installed into a component; the message says why."""


def parse_pins(text: str, source: str = "requirements.txt") -> dict[str, Version]:
    """The ``NAME==VERSION`` pins in ``text``, by canonical name.

    Comments and blank lines are skipped; anything else (ranges, URLs, pip
    options, environment markers) is refused with the line number.

    Example::

        >>> parse_pins("humanize==4.17.0  # numbers for humans\\n")
        {'humanize': <Version('4.17.0')>}
    """
    pins: dict[str, Version] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = _PIN.match(line)
        version = None
        if match:
            try:
                version = Version(match["version"])
            except InvalidVersion:
                version = None
        if match is None or version is None:
            raise RequirementsError(
                f"{source}:{number}: {line!r} is not an exact pin; write NAME==VERSION "
                "(one package per line, e.g. humanize==4.17.0), so that every build "
                "of the component bundles the same code"
            )
        name = canonicalize_name(match["name"])
        if name in pins:
            raise RequirementsError(f"{source}:{number}: {match['name']} is pinned twice")
        pins[name] = version
    return pins


def installed(target: Path) -> dict[str, Version]:
    """The distributions pip installed in ``target``: canonical name to version."""
    found: dict[str, Version] = {}
    for info in sorted(target.glob("*.dist-info")):
        fields: dict[str, str] = {}
        for line in (info / "METADATA").read_text(encoding="utf-8").splitlines():
            if not line.strip():
                break  # the headers end at the first blank line
            key, sep, value = line.partition(":")
            if sep:
                fields.setdefault(key.strip().lower(), value.strip())
        found[canonicalize_name(fields["name"])] = Version(fields["version"])
    return found


def check_installed(pins: dict[str, Version], target: Path, source: str) -> None:
    """Raise RequirementsError unless ``target`` holds exactly the pinned
    versions and no compiled code."""
    unpinned = []
    for name, version in sorted(installed(target).items()):
        if name not in pins:
            unpinned.append(f"{name}=={version}")
        elif pins[name] != version:
            raise RequirementsError(f"{source}: pip installed {name} {version}, not {pins[name]}")
    if unpinned:
        raise RequirementsError(
            f"{source} does not pin every package the component needs: add "
            f"{', '.join(unpinned)} (dependencies must be pinned too)"
        )
    compiled = sorted(
        p.relative_to(target).as_posix()
        for p in target.rglob("*")
        if p.is_file() and p.name.endswith(_COMPILED)
    )
    if compiled:
        raise RequirementsError(
            f"{source}: {', '.join(compiled[:3])} is compiled code, which cannot run inside a "
            "component; only pure-Python packages can be bundled"
        )


def fingerprint(text: str) -> str:
    """What MARKER records: the requirements and how they were installed."""
    return hashlib.sha256(f"guest-python={GUEST_PYTHON}\n{text}".encode()).hexdigest()


def install(requirements: Path, target: Path) -> bool:
    """Make ``target`` hold the pinned packages; False if it already did.

    Installs into a temporary folder beside ``target`` and renames it into
    place, so that a failed install leaves the last good one (and a running
    build never sees half a folder).
    """
    text = requirements.read_text(encoding="utf-8")
    source = str(requirements)
    stamp = fingerprint(text)
    marker = target / MARKER
    if marker.is_file() and marker.read_text(encoding="utf-8").strip() == stamp:
        return False
    pins = parse_pins(text, source)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        if pins:
            # --python-version/--implementation/--abi/--platform describe the guest:
            # pip then accepts only wheels that run there (pure Python), and never
            # builds a source distribution for the host by mistake.
            guest = ["--python-version", GUEST_PYTHON, "--implementation", "py"]
            guest += ["--abi", "none", "--platform", "any", "--only-binary=:all:"]
            pip = subprocess.run(
                [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
                + ["--no-compile", "--target", str(tmp), *guest]
                + [f"{name}=={version}" for name, version in pins.items()],
                capture_output=True,
                text=True,
            )
            if pip.returncode:
                sys.stderr.write(pip.stderr)
                raise RequirementsError(
                    f"pip could not install {source} for the component (its message is above). "
                    "Each package needs a pure-Python wheel (py3-none-any) on the package index "
                    "for Python " + GUEST_PYTHON + "; packages with compiled code, such as "
                    "numpy, cannot run inside a component"
                )
        else:
            tmp.mkdir(parents=True)
        check_installed(pins, tmp, source)
        (tmp / MARKER).write_text(stamp + "\n", encoding="utf-8")
        shutil.rmtree(target, ignore_errors=True)
        tmp.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Install an app's pinned pure-Python requirements for its component."
    )
    parser.add_argument("requirements", type=Path)
    parser.add_argument("target", type=Path)
    args = parser.parse_args(argv)
    try:
        if install(args.requirements, args.target):
            print(f"build.sh: installed {args.requirements} into {args.target}", file=sys.stderr)
    except RequirementsError as exc:
        print(f"build.sh: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"build.sh: could not install {args.requirements}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
