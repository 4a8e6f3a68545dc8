"""Install an app's pinned pure-Python requirements for its component.

An app folder may carry a ``requirements.txt`` of ``NAME==VERSION`` lines.
build.sh runs this before componentize-py, which then bundles what the app
imports from TARGET (passed as one more ``-p``):

    app_deps.py APP_DIR/requirements.txt TARGET

A package with compiled code runs inside a component only when it is built
for the guest: a pin of a package that ``tools/guest_packages.toml`` lists
(``numpy==2.4.6``) takes that build (``guest_packages.py``, cached outside the
clone), and must name the version the catalogue pins. Everything else comes
from pip, which is asked for packages that work on any platform with the
guest's Python (``py3-none-any`` wheels; no source builds), and the result is
checked for compiled files anyway. Every installed distribution,
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
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import build_ext
import c_libraries
import guest_packages
from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
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


def check_installed(
    pins: dict[str, Version], target: Path, source: str, built: frozenset[str] = frozenset()
) -> None:
    """Raise RequirementsError unless ``target`` holds exactly the pinned
    versions and no compiled code outside the packages ``built`` for the guest."""
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
        and canonicalize_name(p.relative_to(target).parts[0]) not in built
    )
    if compiled:
        raise RequirementsError(
            f"{source}: {', '.join(compiled[:3])} is compiled code, which cannot run inside a "
            "component; only pure-Python packages can be bundled"
        )


def fingerprint(text: str, built: dict[str, Path] | None = None) -> str:
    """What MARKER records: the requirements, how they were installed, and
    which builds of packages with compiled code (their folders) went in."""
    built_text = json.dumps({name: str(path) for name, path in (built or {}).items()})
    return hashlib.sha256(
        f"guest-python={GUEST_PYTHON}\n{text}\n{built_text}".encode()
    ).hexdigest()


def guest_builds(pins: dict[str, Version]) -> dict[str, Path]:
    """The site folder of each pinned package that is built for the guest."""
    known = guest_packages.load_catalogue().packages
    return {name: guest_packages.site(name, str(version))
            for name, version in pins.items() if name in known}  # fmt: skip


def _guest_markers() -> dict[str, str]:
    """Environment markers as the guest's Python would evaluate them."""
    env = {key: str(value) for key, value in default_environment().items()}
    env.update(python_version=GUEST_PYTHON, python_full_version=f"{GUEST_PYTHON}.0",
               sys_platform="wasi", platform_system="", platform_machine="wasm32",
               os_name="posix", implementation_name="cpython",
               platform_python_implementation="CPython")  # fmt: skip
    return env


def check_dependencies(pins: dict[str, Version], target: Path, source: str) -> None:
    """Raise RequirementsError unless every dependency of what ``target`` holds is pinned.

    pip installs without resolving dependencies when some pins are built for the
    guest (pip knows no wheel of those), so the check it would make is made here.
    """
    env = _guest_markers()
    missing = []
    for info in sorted(target.glob("*.dist-info")):
        metadata = (info / "METADATA").read_text(encoding="utf-8")
        for line in metadata.splitlines():
            if not line.strip():
                break
            key, _, value = line.partition(":")
            if key.strip().lower() != "requires-dist":
                continue
            try:
                requirement = Requirement(value.strip())
            except InvalidRequirement:
                continue
            if requirement.marker and not requirement.marker.evaluate({**env, "extra": ""}):
                continue
            name = canonicalize_name(requirement.name)
            if name not in pins:
                missing.append(f"{requirement} (for {info.name.split('-')[0]})")
            elif not requirement.specifier.contains(pins[name], prereleases=True):
                raise RequirementsError(
                    f"{source}: {info.name.split('-')[0]} needs {requirement}, but "
                    f"{name}=={pins[name]} is pinned"
                )
    if missing:
        raise RequirementsError(
            f"{source} does not pin every package the component needs: add a pin for "
            f"{', '.join(missing)}"
        )


def install(requirements: Path, target: Path) -> bool:
    """Make ``target`` hold the pinned packages; False if it already did.

    Installs into a temporary folder beside ``target`` and renames it into
    place, so that a failed install leaves the last good one (and a running
    build never sees half a folder).
    """
    text = requirements.read_text(encoding="utf-8")
    source = str(requirements)
    pins = parse_pins(text, source)
    built = guest_builds(pins)
    stamp = fingerprint(text, built)
    marker = target / MARKER
    if marker.is_file() and marker.read_text(encoding="utf-8").strip() == stamp:
        return False
    from_pip = {name: version for name, version in pins.items() if name not in built}
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        for folder in built.values():
            shutil.copytree(folder, tmp, dirs_exist_ok=True)
        if from_pip:
            # --python-version/--implementation/--abi/--platform describe the guest:
            # pip then accepts only wheels that run there (pure Python), and never
            # builds a source distribution for the host by mistake.
            guest = ["--python-version", GUEST_PYTHON, "--implementation", "py"]
            guest += ["--abi", "none", "--platform", "any", "--only-binary=:all:"]
            if built:  # pip knows no wheel of these: their dependents are checked below
                guest.append("--no-deps")
            pip = subprocess.run(
                [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
                + ["--no-compile", "--target", str(tmp), *guest]
                + [f"{name}=={version}" for name, version in from_pip.items()],
                capture_output=True,
                text=True,
            )
            if pip.returncode:
                sys.stderr.write(pip.stderr)
                raise RequirementsError(
                    f"pip could not install {source} for the component (its message is above). "
                    "Each package needs a pure-Python wheel (py3-none-any) on the package index "
                    "for Python " + GUEST_PYTHON + "; of packages with compiled code, only "
                    "those of tools/guest_packages.toml (built for the guest) can go in"
                )
        check_installed(pins, tmp, source, frozenset(built))
        if built:
            check_dependencies(pins, tmp, source)
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
    except build_ext.ToolchainMissingError as exc:
        print(" ".join(exc.packages))  # for build.sh, which installs them
        print(f"build.sh: {exc}", file=sys.stderr)
        return 3
    except (RequirementsError, guest_packages.PackageError, build_ext.ExtError,
            c_libraries.LibraryError) as exc:  # fmt: skip
        print(f"build.sh: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"build.sh: could not install {args.requirements}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
