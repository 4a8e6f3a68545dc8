"""Build Python packages with compiled code (numpy, pyclipper) for the guest.

componentize-py 0.25.1 links every wasm extension module it finds in its
``-p`` folders into the component, so a package such as numpy runs inside one
once its C (and C++, and Cython) is compiled for wasm32-wasi against the guest
CPython's full C API. ``tools/guest_packages.toml`` pins what can be built
this way; an app asks for it in its ``requirements.txt`` (``numpy==2.4.6``)
and ``tools/app_deps.py`` calls :func:`site` instead of pip.

    guest_packages.py NAME [--variant V] [--print-site]
        # build (or find) NAME (as its catalogue variant V); exit 3: toolchain missing

What a build uses, all from the one toolchain of ``tools/build_ext.py``:

- the package's sdist from PyPI's file host, checked against its pinned SHA-256;
  our patches (``tools/guest_packages/NAME/*.patch``, each saying why at its
  top) applied with ``git apply``;
- Debian bookworm's clang 19 for wasm32-wasi, its C++ library headers
  (``libc++-19-dev-wasm32``) and compiler-rt builtins (128-bit ``long double``
  is software there, and the guest's ``libc.so`` does not export them);
- CPython 3.14's headers from Debian (``[python-headers]`` in the catalogue)
  with a ``pyconfig.h`` written from the guest CPython's own build settings,
  which ``build_ext.guest_abi`` reads from a probe component;
- a "python" whose ``sysconfig`` is the guest's (suffix
  ``.cpython-314-wasm32-wasi.so``, CPython's headers above) and a compiler
  wrapper (C and C++) that links a shared module as componentize-py wants;
  the package's own build runs with them: ``build = "meson"`` (numpy's meson,
  in a cross build) or ``build = "setuptools"`` (``setup.py build_py build_ext``,
  Cython included, e.g. pyclipper).

Cached outside the clone (``$XDG_CACHE_HOME/wasinn/guest-packages``, or
``WASINN_CACHE``), in a folder named after the SHA-256 of everything the
build depends on: the catalogue's entry, the patches, the toolchain's
versions, the flags, the guest's ABI and this file. A fresh clone, CI and
every app reuse one build; a change anywhere builds into a new folder.

A guest whose CPython is not the one the headers describe (a new
componentize-py), or an app pinning a version the catalogue does not, stops
the build with a message saying what to change.

Example::

    >>> path = site("numpy", "2.4.6")          # doctest: +SKIP
    >>> sorted(p.name for p in path.iterdir())  # doctest: +SKIP
    ['numpy']
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import build_ext
import build_stamp
import c_libraries
import sjlj_splice
import wasm_binary

TOOLS = Path(__file__).resolve().parent
CATALOGUE = TOOLS / "guest_packages.toml"
PATCHES = TOOLS / "guest_packages"
#: Linked into every module of a package (hidden): see the file.
CXX_RUNTIME = TOOLS / "wasm32-wasi" / "cxx_runtime.c"
#: <pthread.h> for CPython's headers (see the file).
PTHREAD_SHIM = TOOLS / "wasm32-wasi" / "pthread"
#: The exception tag C++ throws and catches (see the file).
EXCEPTION_TAG = TOOLS / "wasm32-wasi" / "cpp_exception_tag.S"
#: How LLVM's libc++abi and libunwind are compiled for the guest: WebAssembly
#: exceptions, every symbol hidden (each module has its own runtime, as it has
#: its own copy of numpy's npymath), no threads (the guest has none).
CXX_RUNTIME_FLAGS = (
    "-O2", "-DNDEBUG", "-fPIC", "-fwasm-exceptions", "-fvisibility=hidden",
    "-D_LIBUNWIND_HIDE_SYMBOLS", "-D_LIBCXXABI_DISABLE_VISIBILITY_ANNOTATIONS",
    "-D_LIBCXXABI_BUILDING_LIBRARY", "-D_LIBCPP_BUILDING_LIBRARY",
    "-DLIBCXXABI_USE_LLVM_UNWINDER", "-D_LIBCXXABI_HAS_NO_THREADS",
)  # fmt: skip
#: A package's C++ is compiled with WebAssembly exceptions: files a package builds
#: with -fexceptions then really throw and catch (pocketfft's std::bad_alloc
#: becomes MemoryError); those built with -fno-exceptions are unchanged.
CXX_FLAGS = ("-fwasm-exceptions",)
CYTHON_VERSION_OF = "cython"
#: What a package's variant may replace (``[NAME.variants.VARIANT]``).
VARIANT_FIELDS = ("options", "patches")
#: The build systems a catalogue entry can name (``build = ...``).
BUILDS = ("meson", "setuptools")
#: Compiler flags of every C and C++ file of every build: position-independent
#: (a shared module), and CPython's headers find <pthread.h> in the shim.
COMPILE_FLAGS = ("-fPIC", "-Wno-unused-command-line-argument", "-isystem", str(PTHREAD_SHIM))

LLVM_AR = build_ext.LLVM_BIN / "llvm-ar"
NINJA = Path("/usr/bin/ninja")
#: Debian bookworm packages a package build needs beyond build_ext's, each with
#: a file only it installs.
PACKAGES = {
    "llvm-19": LLVM_AR,
    "libc++-19-dev-wasm32": Path("/usr/lib/wasm32-wasi/libc++.a"),
    "libc++abi-19-dev-wasm32": Path("/usr/lib/wasm32-wasi/libc++abi.a"),
    "libclang-rt-19-dev-wasm32":
        Path("/usr/lib/llvm-19/lib/clang/19/lib/wasi/libclang_rt.builtins-wasm32.a"),
    "ninja-build": NINJA,
}  # fmt: skip


class PackageError(Exception):
    """A package cannot be built for the guest; the message says why and what to do."""


@dataclass(frozen=True)
class Headers:
    """CPython's headers for the guest: one Debian binary package."""

    python: str
    package: str
    version: str
    pool: str
    file: str
    sha256: str


@dataclass(frozen=True)
class CxxRuntime:
    """LLVM's C++ exception runtime: one Debian source tarball, the files to compile."""

    version: str
    pool: str
    file: str
    sha256: str
    root: str
    c: tuple[str, ...]
    cxx: tuple[str, ...]
    folders: tuple[str, ...]


@dataclass(frozen=True)
class Package:
    """One package of the catalogue."""

    name: str
    version: str
    sdist: str
    sha256: str
    build: str
    options: tuple[str, ...]
    patches: tuple[str, ...]
    drop: tuple[str, ...]
    #: Other builds of the same sdist, by name: each replaces ``options`` and
    #: ``patches`` (the benchmark's numpy without SIMD128, its "before" column).
    variants: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)

    def entry(self) -> str:
        """The entry as canonical JSON: part of the build key (a variant's own
        options are, through the variant's entry; editing one leaves the main
        build's key alone)."""
        fields = {k: v for k, v in self.__dict__.items() if k != "variants"}
        return json.dumps(fields, sort_keys=True)

    def variant(self, name: str) -> Package:
        """This package built as its variant ``name``."""
        if name not in self.variants:
            known = ", ".join(sorted(self.variants)) or "none"
            raise PackageError(f"{self.name} has no variant {name!r} in {CATALOGUE.name} "
                               f"(its variants: {known})")  # fmt: skip
        changes = self.variants[name]
        return dataclasses.replace(
            self, options=changes.get("options", self.options),
            patches=changes.get("patches", self.patches), variants={},
        )  # fmt: skip


@dataclass(frozen=True)
class Catalogue:
    """What ``guest_packages.toml`` says."""

    headers: Headers
    cxx_runtime: CxxRuntime
    packages: dict[str, Package]


def _variant(package: str, variant: str, changes: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """A ``[NAME.variants.VARIANT]`` table, checked: only lists of strings, of the
    fields a variant may replace."""
    if unknown := set(changes) - set(VARIANT_FIELDS):
        raise PackageError(f"{CATALOGUE.name}: {package}'s variant {variant} sets "
                           f"{', '.join(sorted(unknown))}; a variant replaces only "
                           f"{' and '.join(VARIANT_FIELDS)}")  # fmt: skip
    for key, value in changes.items():
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise PackageError(f"{CATALOGUE.name}: {package}'s variant {variant}: {key} "
                               f"must be a list of strings, not {value!r}")  # fmt: skip
    return {key: tuple(value) for key, value in changes.items()}


def load_catalogue(path: Path = CATALOGUE) -> Catalogue:
    """The headers' and the C++ runtime's entries, and every package by name."""
    raw = tomllib.loads(path.read_text())
    try:
        headers = Headers(**raw.pop("python-headers"))
        runtime = raw.pop("cxx-runtime")
        cxx_runtime = CxxRuntime(
            version=runtime["version"], pool=runtime["pool"], file=runtime["file"],
            sha256=runtime["sha256"], root=runtime["root"], c=tuple(runtime["c"]),
            cxx=tuple(runtime["cxx"]), folders=tuple(runtime["folders"]),
        )  # fmt: skip
        packages = {
            name: Package(
                name=name, version=entry["version"], sdist=entry["sdist"],
                sha256=entry["sha256"], build=entry["build"],
                options=tuple(entry.get("options", ())), patches=tuple(entry.get("patches", ())),
                drop=tuple(entry.get("drop", ())),
                variants={variant: _variant(name, variant, changes)
                          for variant, changes in entry.get("variants", {}).items()},
            )  # fmt: skip
            for name, entry in raw.items()
        }
    except (KeyError, TypeError) as exc:
        raise PackageError(f"{path.name}: an entry lacks or mistypes {exc}") from None
    for package in packages.values():
        if package.build not in BUILDS:
            raise PackageError(f"{path.name}: {package.name}: unknown build {package.build!r}")
    return Catalogue(headers, cxx_runtime, packages)


def cache_root() -> Path:
    """Where builds are kept: ``$WASINN_CACHE`` or ``$XDG_CACHE_HOME/wasinn`` (``~/.cache``)."""
    explicit = os.environ.get("WASINN_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "wasinn"


def missing_packages() -> list[str]:
    """The Debian packages a package build needs that are not installed (with
    Node.js: binaryen's wasm-opt translates modules with C++ exceptions)."""
    missing = build_ext.missing_packages(sjlj=True)
    return missing + [name for name, path in PACKAGES.items() if not path.exists()]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------- the guest's CPython


def _fetch_headers(headers: Headers, cache: Path) -> tuple[Path, str]:
    """The unpacked Debian package of CPython's headers, and its version.

    The pinned file comes from the Debian pool; once sid has moved on and the
    pool no longer has it, sid's current package of the same CPython is
    downloaded with a private apt configuration (the machine's own sources are
    not touched), and the build says so.
    """
    folder = cache / "python-headers" / headers.file.removesuffix(".deb")
    if (folder / ".complete").is_file():
        return folder, headers.version
    url = f"{c_libraries.POOL}/{headers.pool}/{headers.file}"
    deb = cache / "sources" / headers.file
    version = headers.version
    try:
        c_libraries.download(url, headers.sha256, deb, f"{headers.package} ({CATALOGUE.name})")
    except c_libraries.LibraryError as exc:
        print(f"guest_packages: {exc}; asking Debian sid for its current {headers.package}",
              file=sys.stderr)  # fmt: skip
        deb, version = _download_from_sid(headers, cache)
        folder = cache / "python-headers" / deb.name.removesuffix(".deb")
    tmp = Path(tempfile.mkdtemp(prefix=".headers-", dir=cache))
    try:
        done = subprocess.run(
            ["dpkg-deb", "-x", str(deb), str(tmp)], capture_output=True, text=True
        )
        if done.returncode:
            raise PackageError(f"could not unpack {deb}: {done.stderr.strip()}")
        (tmp / ".complete").write_text(version + "\n")
        shutil.rmtree(folder, ignore_errors=True)
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp.rename(folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder, version


def _download_from_sid(headers: Headers, cache: Path) -> tuple[Path, str]:
    config = cache / "apt-sid"
    (config / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (config / "sid.sources").write_text(
        "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: sid\nComponents: main\n"
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
    )
    options = ["-o", "Dir::Etc::SourceList=/dev/null", "-o", f"Dir::Etc::SourceParts={config}",
               "-o", f"Dir::State::Lists={config / 'lists'}"]  # fmt: skip
    for argv in (["apt-get", *options, "update", "-qq"],
                 ["apt-get", *options, "download", headers.package]):  # fmt: skip
        done = subprocess.run(argv, cwd=config, capture_output=True, text=True)
        if done.returncode:
            raise PackageError(
                f"could not download {headers.package} from Debian sid ({' '.join(argv[-2:])}): "
                f"{done.stderr.strip()[-1000:]}. Pin a version the Debian pool has in "
                f"tools/{CATALOGUE.name} [python-headers]."
            )
    debs = sorted(config.glob(f"{headers.package}_*.deb"))
    version = debs[-1].name.split("_")[1]
    if not version.startswith(headers.python + "."):
        raise PackageError(f"Debian sid's {headers.package} is {version}, not {headers.python}.x")
    print(f"guest_packages: using {debs[-1].name}; pin it in tools/{CATALOGUE.name}",
          file=sys.stderr)  # fmt: skip
    return debs[-1], version


def check_guest(abi: Mapping[str, Any], headers: Headers) -> None:
    """Refuse a guest CPython other than the one the pinned headers describe.

    Example::

        >>> h = Headers("3.14", "libpython3.14-dev", "3.14.10-1", "p", "f.deb", "0")
        >>> check_guest({"version": [3, 15, 0], "componentize-py": "0.26.0"}, h)
        Traceback (most recent call last):
        ...
        guest_packages.PackageError: componentize-py 0.26.0 runs CPython 3.15.0, ...
    """
    major, minor, micro = abi["version"]
    if f"{major}.{minor}" != headers.python:
        raise PackageError(
            f"componentize-py {abi.get('componentize-py', '?')} runs CPython "
            f"{major}.{minor}.{micro}, but packages are built for the guest against CPython "
            f"{headers.python}'s headers ({headers.package} in tools/{CATALOGUE.name}). A module "
            f"built for another minor version would not load. Pin that CPython's headers "
            f"there (and check the patches against the new guest)."
        )


_DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)(?:\s+(.*?))?\s*$")
_UNDEF = re.compile(r"^\s*/\*\s*#\s*undef\s+(\w+)\s*\*/\s*$")


def pyconfig_h(template: str, guest: Mapping[str, Any]) -> str:
    """Debian's ``pyconfig.h`` (written for x86-64 Linux) with every value the
    guest CPython's build had: a name the guest sets to 0 is undefined, any
    other takes the guest's value. Names its sysconfig does not list (the
    feature-test macros such as ``_GNU_SOURCE``, which it does not parse) stay
    as Debian wrote them.

    Example::

        >>> pyconfig_h("#define SIZEOF_LONG 8\\n/* #undef HAVE_X */\\n# define _GNU_SOURCE 1\\n",
        ...            {"SIZEOF_LONG": 4, "HAVE_X": 1})
        '#define SIZEOF_LONG 4\\n#define HAVE_X 1\\n# define _GNU_SOURCE 1\\n'
    """
    lines = []
    for line in template.splitlines():
        match = _DEFINE.match(line) or _UNDEF.match(line)
        name = match.group(1) if match else ""
        if name not in guest:  # also what sysconfig never parses: `# define _GNU_SOURCE 1`
            lines.append(line)
            continue
        value = guest[name]
        lines.append(f"/* #undef {name} */" if value in (0, "") else f"#define {name} {value}")
    return "\n".join(lines) + "\n"


def guest_include(headers_root: Path, guest: Mapping[str, Any], into: Path) -> Path:
    """CPython's headers with the guest's ``pyconfig.h``, in ``into``."""
    version = guest["VERSION"]
    source = headers_root / "usr" / "include" / f"python{version}"
    template = (
        headers_root / "usr" / "include" / "x86_64-linux-gnu" / f"python{version}" / "pyconfig.h"
    )
    if not (source / "Python.h").is_file() or not template.is_file():
        raise PackageError(f"{headers_root} has no CPython {version} headers")
    shutil.copytree(source, into)
    (into / "pyconfig.h").write_text(pyconfig_h(template.read_text(), guest))
    return into


def sysconfig_module(guest: Mapping[str, Any], include: Path, into: Path) -> str:
    """Write the guest's build settings as a ``_sysconfigdata`` module in ``into``
    (headers: ``include``); return the module's name. With it, a host Python
    answers sysconfig questions as the guest would (extension suffix, no
    libpython to link), which is what meson asks."""
    settings = dict(guest)
    settings.update(INCLUDEPY=str(include), CONFINCLUDEPY=str(include), LIBPYTHON="", LDLIBRARY="")
    name = "_sysconfigdata__wasi_wasm32-wasi"
    into.mkdir(parents=True, exist_ok=True)
    (into / f"{name}.py").write_text(f"build_time_vars = {settings!r}\n")
    return name


# ---------------------------------------------------------------- the toolchain


def compiler_wrapper(path: Path, tool: str, runtime: Sequence[Path]) -> None:
    """A compiler for meson and setuptools: clang for wasm32-wasi; ``-shared`` links
    a module the way componentize-py wants it (build_ext's flags) with ``runtime``
    (objects and archives) and compiler-rt's builtins inside. wasm-ld has no
    ``--start-group``/``--end-group`` (meson adds them; lld needs none): dropped."""
    builtins = PACKAGES["libclang-rt-19-dev-wasm32"]
    target = shlex.join(build_ext.GUEST_TARGET_FLAGS)
    link = shlex.join([*build_ext.GUEST_FLAGS, *map(str, runtime), str(builtins)])
    path.write_text(f"""#!/usr/bin/env bash
# Written by tools/guest_packages.py: {tool} for wasm32-wasi (see its compiler_wrapper).
args=(); shared=
for a in "$@"; do
  case "$a" in
    -Wl,--start-group | -Wl,--end-group) ;;
    -shared) shared=1 ;;
    *) args+=("$a") ;;
  esac
done
if [ -n "$shared" ]; then exec {tool} "${{args[@]}}" {link}; fi
exec {tool} {target} "${{args[@]}}"
""")
    path.chmod(0o755)


def cross_file(path: Path, cc: Path, cxx: Path, python: Path, cython: Path) -> None:
    """meson's description of the guest machine and of the tools that build for it."""
    flags = ", ".join(repr(f) for f in COMPILE_FLAGS)
    cxx_flags = ", ".join(repr(f) for f in (*COMPILE_FLAGS, *CXX_FLAGS))
    path.write_text(f"""[binaries]
c = '{cc}'
cpp = '{cxx}'
ar = '{LLVM_AR}'
strip = '{build_ext.LLVM_BIN / "llvm-strip"}'
python = '{python}'
cython = '{cython}'
pkg-config = 'false'

[host_machine]
system = 'wasi'
cpu_family = 'wasm32'
cpu = 'wasm32'
endian = 'little'

[properties]
needs_exe_wrapper = true
longdouble_format = 'IEEE_QUAD_LE'

[built-in options]
c_args = [{flags}]
cpp_args = [{cxx_flags}]
""")


@dataclass(frozen=True)
class Toolchain:
    """What a build runs, and the versions that go into its key."""

    clang: str
    cython: str
    ninja: str
    wasm_opt: Path
    wasm_opt_version: str
    guest: Mapping[str, Any]
    catalogue: Catalogue

    def key_parts(self) -> list[str]:
        """Everything of the toolchain a build's output depends on."""
        return [self.clang, self.cython, self.ninja, self.wasm_opt_version,
                json.dumps(dict(self.guest), sort_keys=True),
                json.dumps(self.catalogue.headers.__dict__, sort_keys=True),
                json.dumps(self.catalogue.cxx_runtime.__dict__, sort_keys=True),
                shlex.join([*build_ext.GUEST_FLAGS, *CXX_FLAGS, *CXX_RUNTIME_FLAGS,
                            *build_ext.WASM_OPT_FLAGS])]  # fmt: skip


def toolchain(cache: Path, catalogue: Catalogue) -> Toolchain:
    """Check the toolchain and the guest; raise ToolchainMissingError for missing packages."""
    missing = missing_packages()
    if missing:
        raise build_ext.ToolchainMissingError(missing)
    ext_cache = build_ext.DEFAULT_CACHE
    abi = build_ext.guest_abi(ext_cache)
    check_guest(abi, catalogue.headers)
    try:
        cython = build_stamp.installed_version("cython")
    except build_stamp.NotInstalledError:
        raise PackageError("Cython is not installed in .venv; run ./build.sh setup.") from None
    ninja = subprocess.run([str(NINJA), "--version"], capture_output=True, text=True).stdout.strip()
    wasm_opt = build_ext.install_binaryen()
    return Toolchain(clang=build_ext.tool_version(build_ext.CLANG, ext_cache), cython=cython,
                     ninja=ninja, wasm_opt=wasm_opt,
                     wasm_opt_version=build_ext.tool_version(wasm_opt, ext_cache),
                     guest=abi["config_vars"], catalogue=catalogue)  # fmt: skip


# ---------------------------------------------------------------- C++ exceptions


def cxx_exception_runtime(tools: Toolchain, cache: Path, log: Path) -> Path:
    """LLVM's libc++abi and libunwind compiled for the guest with WebAssembly
    exceptions, as one static archive (built once per key, kept in ``cache``).

    Linked into every module after its own objects, it gives C++ a working
    ``throw``: unwinding runs destructors and numpy's ``catch`` blocks turn
    ``std::bad_alloc`` into MemoryError as natively, where a throw used to trap.
    An archive: a module without C++ pulls nothing from it.
    """
    runtime = tools.catalogue.cxx_runtime
    digest = hashlib.sha256()
    for part in (json.dumps(runtime.__dict__, sort_keys=True), tools.clang,
                 shlex.join(CXX_RUNTIME_FLAGS), _sha256(EXCEPTION_TAG)):  # fmt: skip
        digest.update(part.encode() + b"\0")
    archive = cache / "cxx-runtime" / f"libcxx_eh-{digest.hexdigest()[:16]}.a"
    if archive.is_file():
        return archive
    tarball = c_libraries.download(
        f"{c_libraries.POOL}/{runtime.pool}/{runtime.file}", runtime.sha256,
        cache / "sources" / runtime.file, f"llvm-toolchain-19 {runtime.version} ({CATALOGUE.name})",
    )  # fmt: skip
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=archive.parent) as tmp_name:
        tmp = Path(tmp_name)
        wanted = tuple(f"{runtime.root}/{folder}/" for folder in runtime.folders)
        with tarfile.open(tarball) as tar:  # one pass: the archive is 164 MB of xz
            for member in tar:
                if member.name.startswith(wanted):
                    tar.extract(member, tmp, filter="data")
        root = tmp / runtime.root
        headers = ("libcxxabi/include", "libunwind/include", "libcxx/src")
        include = [f"-I{root / d}" for d in headers]
        base = [*build_ext.GUEST_TARGET_FLAGS, *CXX_RUNTIME_FLAGS, *include]
        objects = []
        for source, compiler, std in (
            *((c, build_ext.CLANG, "-std=c11") for c in runtime.c),
            *((c, build_ext.LLVM_BIN / "clang++", "-std=c++20") for c in runtime.cxx),
        ):
            obj = tmp / (Path(source).stem + ".o")
            _run([str(compiler), *base, std, "-c", str(root / source), "-o", str(obj)],
                 f"compiling LLVM's {source} for the guest", log)  # fmt: skip
            objects.append(obj)
        tag = tmp / "cpp_exception_tag.o"
        _run([str(build_ext.CLANG), *build_ext.GUEST_TARGET_FLAGS, "-fPIC", "-mexception-handling",
              "-c", str(EXCEPTION_TAG), "-o", str(tag)],
             "assembling the exception tag", log)  # fmt: skip
        partial = tmp / "libcxx_eh.a"
        _run([str(LLVM_AR), "rcsD", str(partial), *map(str, objects), str(tag)],
             "archiving the C++ exception runtime", log)  # fmt: skip
        partial.replace(archive)
    return archive


def _has_exception_handling(module: bytes) -> bool:
    for section_id, payload in wasm_binary.split_sections(module):
        if section_id == 10:  # code
            return any(sjlj_splice.uses_eh(b) for b in sjlj_splice.code_bodies(payload))
    return False


def split_exception_modules(site_dir: Path, suffix: str, wasm_opt: Path, log: Path) -> list[str]:
    """Ready every module with C++ exceptions for componentize-py 0.25.1.

    LLVM 19 writes WebAssembly exceptions in their legacy form; wasmtime 49 runs
    the standard one (exnref), and componentize-py pre-initialises components in
    a wasmtime without exceptions at all. So, as for build_ext's setjmp/longjmp
    modules: the real module (translated by wasm-opt) goes beside it as
    ``NAME.sjlj.wasm``, and the module itself becomes a stub that does the same
    without exception handling (``sjlj_splice.make_stub(strip=True)``; numpy's
    static constructors and an app's top-level numpy calls run in it at build
    time). build.sh's sjlj_splice step puts the real code into the component.
    Returns the modules split.
    """
    split = []
    for module in sorted(site_dir.rglob(f"*{suffix}")):
        if not _has_exception_handling(module.read_bytes()):
            continue
        real_path = module.with_name(module.name[: -len(suffix)] + sjlj_splice.REAL_SUFFIX)
        _run(["node", str(wasm_opt), *build_ext.WASM_OPT_FLAGS, str(module), "-o", str(real_path)],
             f"translating {module.name}'s exceptions (wasm-opt)", log)  # fmt: skip
        module.write_bytes(sjlj_splice.make_stub(real_path.read_bytes(), strip=True).binary)
        split.append(module.relative_to(site_dir).as_posix())
    return split


# ---------------------------------------------------------------- building


def build_key(package: Package, tools: Toolchain) -> str:
    """The SHA-256 of everything a build of ``package`` depends on."""
    digest = hashlib.sha256()
    files = (Path(__file__), CXX_RUNTIME, PTHREAD_SHIM / "pthread.h", EXCEPTION_TAG,
             Path(sjlj_splice.__file__), Path(wasm_binary.__file__))
    for part in (package.entry(), *tools.key_parts(), *(_sha256(f) for f in files)):
        digest.update(part.encode() + b"\0")
    for name in package.patches:
        digest.update(name.encode() + b"\0" + (PATCHES / package.name / name).read_bytes())
    return digest.hexdigest()


def _run(argv: Sequence[str], what: str, log: Path, **kwargs: Any) -> None:
    with log.open("a") as out:
        out.write(f"$ {shlex.join(argv)}\n")
        out.flush()
        done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, **kwargs)
    if done.returncode:
        tail = log.read_text(errors="replace")[-3000:]
        raise PackageError(f"{what} failed (exit {done.returncode}); the end of {log}:\n{tail}")


def _unpack_sdist(package: Package, sdist: Path, into: Path) -> Path:
    with tarfile.open(sdist) as tar:
        tar.extractall(into, filter="data")
    root = into / f"{package.name}-{package.version}"
    if not root.is_dir():
        raise PackageError(f"{sdist.name} has no folder {root.name}")
    for name in package.patches:
        done = subprocess.run(
            ["git", "apply", "-p1", "--whitespace=nowarn", str(PATCHES / package.name / name)],
            cwd=root, capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode:
            raise PackageError(
                f"wasinn's patch {name} does not apply to {package.name} {package.version}: "
                f"{done.stderr.strip()}"
            )
    return root


@dataclass(frozen=True)
class GuestTools:
    """What a package's own build runs to build for the guest (see :func:`guest_tools`)."""

    cc: Path
    cxx: Path
    python: Path
    cython: Path
    env: Mapping[str, str]


def guest_tools(work: Path, tools: Toolchain, log: Path) -> GuestTools:
    """Write the tools every build kind shares into ``work``: the guest's CPython
    headers, its sysconfig as a module, the C++ runtime object, the C and C++
    compiler wrappers and a "python" answering sysconfig questions as the guest."""
    headers_root, _ = _fetch_headers(tools.catalogue.headers, cache_root())
    include = guest_include(headers_root, tools.guest, work / "include")
    data = sysconfig_module(tools.guest, include, work / "sysconfig")
    errno_hook = work / "cxx_runtime.o"
    _run([str(build_ext.CLANG), *build_ext.GUEST_TARGET_FLAGS, "-O2", "-fPIC", "-c",
          str(CXX_RUNTIME), "-o", str(errno_hook)], "compiling the C++ runtime", log)  # fmt: skip
    runtime = (errno_hook, cxx_exception_runtime(tools, cache_root(), log))
    bin_dir = work / "bin"
    bin_dir.mkdir()
    cc, cxx = bin_dir / "cc", bin_dir / "c++"
    compiler_wrapper(cc, str(build_ext.CLANG), runtime)
    compiler_wrapper(cxx, str(build_ext.LLVM_BIN / "clang++"), runtime)
    venv_bin = Path(sys.executable).parent
    python = bin_dir / "python3-guest"
    python.write_text(f"""#!/bin/sh
# Written by tools/guest_packages.py: this Python, answering sysconfig questions as the guest.
_PYTHON_SYSCONFIGDATA_NAME={data} _PYTHON_HOST_PLATFORM=wasi-wasm32 \\
PYTHONPATH={shlex.quote(str(work / "sysconfig"))}${{PYTHONPATH:+:$PYTHONPATH}} \\
exec {shlex.quote(sys.executable)} "$@"
""")  # fmt: skip
    python.chmod(0o755)
    env = {**os.environ, "PATH": f"{venv_bin}:{os.environ['PATH']}"}
    return GuestTools(cc=cc, cxx=cxx, python=python, cython=venv_bin / "cython", env=env)


def _meson_build(package: Package, source: Path, work: Path, guest: GuestTools,
                 log: Path) -> Path:  # fmt: skip
    """Configure, compile and install with the package's own meson; return the
    folder (a ``site-packages``) holding the installed package."""
    cross = work / "guest.cross"
    cross_file(cross, guest.cc, guest.cxx, guest.python, guest.cython)
    meson = [sys.executable, str(source / "vendored-meson" / "meson" / "meson.py")]
    if not Path(meson[1]).is_file():
        raise PackageError(f"{package.name} {package.version} has no vendored meson")
    build_dir = work / "build"
    _run([*meson, "setup", str(build_dir), str(source), "--cross-file", str(cross),
          "--prefix=/", "--buildtype=release", "-Db_ndebug=if-release", "-Db_lundef=false",
          "-Db_asneeded=false", "-Db_pie=false", "-Dpython.install_env=auto", *package.options],
         f"configuring {package.name} (meson setup)", log, env=guest.env)  # fmt: skip
    _run([str(NINJA), "-C", str(build_dir), f"-j{os.cpu_count() or 2}"],
         f"compiling {package.name} (ninja)", log, env=guest.env)  # fmt: skip
    installed = work / "installed"
    _run([*meson, "install", "-C", str(build_dir), "--destdir", str(installed), "--quiet",
          "--skip-subprojects"],
         f"installing {package.name} (meson install)", log, env=guest.env)  # fmt: skip
    found = sorted(installed.rglob(f"*-packages/{package.name}/__init__.py"))
    if not found:
        raise PackageError(f"meson installed no {package.name} package under {installed}")
    return found[0].parent.parent


def _setuptools_build(package: Package, source: Path, work: Path, guest: GuestTools,
                      log: Path) -> Path:  # fmt: skip
    """Run the package's ``setup.py build_py build_ext`` with the guest's "python"
    (so the modules get the guest's suffix and headers, and Cython's C runs through
    the guest's C API) and the compiler wrappers (distutils takes CC, CXX,
    LDSHARED, LDCXXSHARED and CFLAGS from the environment over sysconfig's, which
    name the wasi-sdk of componentize-py's CI); return the build's lib folder.
    ``options`` go after ``build_ext``."""
    if not (source / "setup.py").is_file():
        raise PackageError(f"{package.name} {package.version}'s sdist has no setup.py")
    lib, temp = work / "lib", work / "temp"
    # distutils compiles C++ sources with CC and CFLAGS too: the C++ flags go in both.
    flags = shlex.join(["-O3", "-DNDEBUG", *COMPILE_FLAGS, *CXX_FLAGS])
    env = {**guest.env, "CC": str(guest.cc), "CXX": str(guest.cxx),
           "LDSHARED": f"{guest.cc} -shared", "LDCXXSHARED": f"{guest.cxx} -shared",
           "CFLAGS": flags, "CXXFLAGS": flags, "CPPFLAGS": "", "LDFLAGS": "",
           "AR": str(LLVM_AR), "ARFLAGS": "rcs"}  # fmt: skip
    _run([str(guest.python), "setup.py", "build_py", "--build-lib", str(lib),
          "build_ext", "--build-lib", str(lib), "--build-temp", str(temp),
          f"--parallel={os.cpu_count() or 2}", *package.options],
         f"building {package.name} (setup.py build_ext)", log, cwd=source, env=env)  # fmt: skip
    if not (lib / package.name / "__init__.py").is_file():
        raise PackageError(f"setup.py built no {package.name} package under {lib}")
    return lib


def _trim(folder: Path, drop: Sequence[str]) -> None:
    """Delete what the guest never imports (``drop`` globs, relative to ``folder``)."""
    for pattern in drop:
        for path in sorted(folder.glob(pattern), reverse=True):
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()


def _write_metadata(package: Package, source: Path, site_dir: Path) -> None:
    """The distribution's metadata (the sdist's own ``PKG-INFO``: name, version,
    ``Requires-Dist``), so that ``importlib.metadata.version`` answers in the guest
    and app_deps.py sees which version it bundles and what it depends on."""
    pkg_info = source / "PKG-INFO"
    metadata = pkg_info.read_text(encoding="utf-8") if pkg_info.is_file() else ""
    headers = metadata.split("\n\n", 1)[0].splitlines()
    if f"Version: {package.version}" not in headers:
        raise PackageError(f"{package.name}'s sdist has no PKG-INFO of version {package.version}")
    info = site_dir / f"{package.name}-{package.version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(metadata, encoding="utf-8")
    (info / "INSTALLER").write_text("wasinn tools/guest_packages.py\n")


def download_sdist(package: Package, cache: Path) -> Path:
    """``package``'s sdist, downloaded once into ``cache``/sources and checked
    against its pinned SHA-256 (the guest build's source; numpy's conformance
    run takes its test files from it too)."""
    return c_libraries.download(
        package.sdist, package.sha256, cache / "sources" / package.sdist.rsplit("/", 1)[-1],
        f"{package.name} {package.version}'s sdist ({CATALOGUE.name})",
    )


def build(package: Package, tools: Toolchain, cache: Path) -> Path:
    """Build ``package`` for the guest unless its build is cached; return its site folder."""
    key = build_key(package, tools)
    folder = cache / "guest-packages" / f"{package.name}-{package.version}-{key[:16]}"
    site_dir = folder / "site"
    if (folder / "built.json").is_file():
        return site_dir
    sdist = download_sdist(package, cache)
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{package.name}-", dir=folder.parent))
    log = work / "build.log"
    started = time.monotonic()
    print(f"guest_packages: building {package.name} {package.version} for the guest "
          f"(a few minutes, once; log: {log})", file=sys.stderr)  # fmt: skip
    try:
        source = _unpack_sdist(package, sdist, work / "src")
        builder = _meson_build if package.build == "meson" else _setuptools_build
        built = builder(package, source, work, guest_tools(work, tools, log), log)
        result = work / "result"
        shutil.copytree(built / package.name, result / "site" / package.name, symlinks=True)
        _trim(result / "site" / package.name, package.drop)
        _write_metadata(package, source, result / "site")
        suffix = tools.guest["EXT_SUFFIX"]
        split = split_exception_modules(result / "site", suffix, tools.wasm_opt, log)
        seconds = time.monotonic() - started
        modules = sorted(p.relative_to(result / "site").as_posix()
                         for p in (result / "site").rglob(f"*{suffix}"))  # fmt: skip
        (result / "built.json").write_text(json.dumps(
            {"package": package.name, "version": package.version, "key": key,
             "seconds": round(seconds, 1), "modules": modules,
             "with_cxx_exceptions": split}, indent=1) + "\n")  # fmt: skip
        shutil.copyfile(log, result / "build.log")
        shutil.rmtree(folder, ignore_errors=True)
        result.rename(folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"guest_packages: built {package.name} {package.version} in {seconds:.0f} s "
          f"({len(modules)} extension modules) into {folder}", file=sys.stderr)  # fmt: skip
    return site_dir


def site(name: str, version: str, cache: Path | None = None, variant: str | None = None) -> Path:
    """The site folder holding package ``name`` at ``version`` built for the guest
    (as its catalogue ``variant``, if given).

    Raises PackageError for a package or version the catalogue does not pin,
    ToolchainMissingError (from build_ext) when Debian packages are missing.
    """
    catalogue = load_catalogue()
    packages = catalogue.packages
    if name not in packages:
        raise PackageError(
            f"{name} is not built for the guest by wasinn (tools/{CATALOGUE.name} knows "
            f"{', '.join(sorted(packages))})"
        )
    package = packages[name]
    if version != package.version:
        raise PackageError(
            f"{name}=={version} cannot go into a component: wasinn builds {name} "
            f"{package.version} for the guest (tools/{CATALOGUE.name}), the version its patches "
            f"and tests were checked against. Pin {name}=={package.version}, or add the new "
            f"version to the catalogue and check its patches."
        )
    if variant is not None:
        package = package.variant(variant)
    cache = cache or cache_root()
    return build(package, toolchain(cache, catalogue), cache)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build a package of the catalogue for the guest.")
    parser.add_argument("name")
    parser.add_argument("--version", help="the version to build (default: the catalogue's)")
    parser.add_argument("--variant", help="build the catalogue's variant of that name")
    parser.add_argument("--print-site", action="store_true", help="print the site folder")
    args = parser.parse_args(argv)
    try:
        packages = load_catalogue().packages
        version = args.version or (packages[args.name].version if args.name in packages else "")
        path = site(args.name, version, variant=args.variant)
    except build_ext.ToolchainMissingError as exc:
        print(" ".join(exc.packages))
        print(f"guest_packages: {exc}", file=sys.stderr)
        return 3
    except (PackageError, build_ext.ExtError, c_libraries.LibraryError) as exc:
        print(f"guest_packages: {exc}", file=sys.stderr)
        return 1
    if args.print_site:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
