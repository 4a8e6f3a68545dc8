"""Fetch and compile the C and C++ libraries that extension modules link.

``tools/c_libraries.toml`` names each library: a Debian bookworm source
package at a pinned version, and which of its C (and C++) files to compile. This module
downloads the package's files from the Debian archive's pool (once; they are
kept in ``build/ext/sources``), checks them against the pinned SHA-256,
unpacks the original tarball, applies Debian's patches (``git apply``, in the
order of ``debian/patches/series``), then wasinn's own (``patches`` in the
catalogue, files in ``tools/c_libraries/NAME``) and compiles the listed sources into
object files, once per target, with the flags the extension modules use plus
``-fvisibility=hidden``: a library's symbols stay inside the module that
links it, so two modules may link the same library without a clash, in the
guest's component as in a native process that already has, say, zlib.

C++: a library whose entry names a C++ standard (``cxx = "c++11"``) has its
``.cpp``/``.cc``/``.cxx`` sources compiled with ``clang++`` at that standard,
without exceptions, with the same optimisation, visibility and floating-point
flags as C. A module that links one links the target's C++ runtime too
(``build_ext.py`` does): natively the system's libstdc++; in the guest the
catalogue's ``libcxx`` (LLVM's own libc++ and libc++abi, compiled by this module
like any other library, into a static archive whose symbols stay hidden in
the module), because Debian's wasm32 libc++ is not position-independent and
componentize-py's (another LLVM's, under libc++'s unstable ABI 2) is not
the one whose headers the library was compiled against.

A library of headers only (SIMDe) lists no sources: nothing is compiled,
its folders go on the include path of what requires it. It may come as a
Debian binary package (a ``.deb`` in ``files``, unpacked as installed) where
the pool no longer serves the source package's tarballs. ``target_defines``
gives one target more defines (libwebp's SSE code in the guest).

Freshness: a build's folder is named after the SHA-256 of everything it
depends on (the catalogue's entry, the downloaded files, the configuration
headers under ``tools/c_libraries/NAME``, the target's flags and compiler,
this file). A change anywhere builds into a new folder; nothing stale links.

    >>> libs = load_catalogue()
    >>> sorted(libs)            # doctest: +SKIP
    ['libjpeg-turbo', 'libspng', 'libwebp', 'zlib']
    >>> built = build(libs["libspng"], libs, "guest", flags, compiler, cache)  # doctest: +SKIP
    >>> built.objects[:1], built.include[:1]      # doctest: +SKIP
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
CATALOGUE = TOOLS / "c_libraries.toml"
CONFIG_HEADERS = TOOLS / "c_libraries"
POOL = "http://deb.debian.org/debian/pool/main"
#: Warnings of someone else's code are not ours to fix: -w. -O3: its loops
#: vectorise (with the guest's -msimd128): libjpeg-turbo encodes twice as fast
#: in the guest and decodes progressive files a quarter faster than with -O2.
LIBRARY_FLAGS = ("-std=gnu11", "-O3", "-fPIC", "-ffp-contract=off", "-fvisibility=hidden",
                 "-DNDEBUG", "-w")  # fmt: skip
#: The same for C++ sources (``-std=`` is the library's ``cxx``); no exceptions:
#: nothing in the guest could catch them (a throw aborts the component).
LIBRARY_CXX_FLAGS = ("-O3", "-fPIC", "-ffp-contract=off", "-fvisibility=hidden", "-fno-exceptions",
                     "-DNDEBUG", "-w")  # fmt: skip
#: The file suffixes compiled as C++.
CXX_SUFFIXES = (".cpp", ".cc", ".cxx")
#: The catalogue's entry that every guest module linking a C++ library links too.
GUEST_CXX_RUNTIME = "libcxx"


class LibraryError(Exception):
    """A library cannot be fetched or built; the message says why."""


@dataclass(frozen=True)
class Library:
    """One entry of the catalogue."""

    name: str
    version: str
    pool: str
    root: str
    files: Mapping[str, str]
    sources: tuple[str, ...]
    include: tuple[str, ...]
    defines: tuple[str, ...]
    requires: tuple[str, ...]
    #: wasinn's own patches (files in tools/c_libraries/NAME), applied after Debian's.
    patches: tuple[str, ...] = ()
    #: The C++ standard its C++ sources are compiled at ("" = it has none).
    cxx: str = ""
    #: More compiler flags for its sources (both languages, every target).
    flags: tuple[str, ...] = ()
    #: The targets it is built for (empty: every target).
    targets: tuple[str, ...] = ()
    #: The only files and folders of its original tarball to unpack (empty: all).
    unpack: tuple[str, ...] = ()
    #: Linked as a static archive (only the objects a module needs) rather than
    #: object by object.
    archive: bool = False
    #: More defines for one target only (target -> defines), after ``defines``.
    target_defines: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def entry(self) -> str:
        """The entry as canonical JSON: part of every build key."""
        return json.dumps(self.__dict__, sort_keys=True, default=dict)


@dataclass(frozen=True)
class Built:
    """A library compiled for one target: its objects and its header folders.

    ``link_file`` lists the objects for the linker (clang's ``@FILE``), which
    keeps a module's link command readable.
    """

    key: str
    objects: tuple[Path, ...]
    include: tuple[Path, ...]
    #: What a module's link reads (clang's @FILE): the objects, the archive of
    #: them, or nothing (a library of headers only).
    link_file: Path
    #: Whether it has C++ objects (a module linking it needs the C++ runtime).
    cxx: bool = False


def load_catalogue(path: Path = CATALOGUE) -> dict[str, Library]:
    """Every library of the catalogue, by name."""
    raw = tomllib.loads(path.read_text())
    libraries = {}
    for name, entry in raw.items():
        try:
            libraries[name] = Library(
                name=name, version=entry["version"], pool=entry["pool"], root=entry["root"],
                files=dict(entry["files"]), sources=tuple(entry["sources"]),
                include=tuple(entry["include"]), defines=tuple(entry.get("defines", ())),
                requires=tuple(entry.get("requires", ())),
                patches=tuple(entry.get("patches", ())),
                cxx=str(entry.get("cxx", "")), flags=tuple(entry.get("flags", ())),
                targets=tuple(entry.get("targets", ())), unpack=tuple(entry.get("unpack", ())),
                archive=bool(entry.get("archive", False)),
                target_defines={target: tuple(defines) for target, defines
                                in entry.get("target_defines", {}).items()},
            )  # fmt: skip
        except (KeyError, TypeError) as exc:
            raise LibraryError(f"{path.name}: library {name!r} lacks or mistypes {exc}") from None
    for library in libraries.values():
        unknown = set(library.requires) - set(libraries)
        if unknown:
            raise LibraryError(f"{path.name}: {library.name} requires unknown {sorted(unknown)}")
    return libraries


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download(url: str, sha256: str, path: Path, what: str) -> Path:
    """``path``, downloaded from ``url`` unless it is there with the pinned SHA-256.

    Written under a temporary name and renamed, so that an interrupted
    download leaves nothing a later build could take for the file.
    """
    if path.is_file() and _sha256(path) == sha256:
        return path
    print(f"downloading {url}", file=sys.stderr)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        with urllib.request.urlopen(url, timeout=120) as answer, partial.open("wb") as f:
            shutil.copyfileobj(answer, f)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise LibraryError(f"could not download {what} from {url}: {exc}") from None
    got = _sha256(partial)
    if got != sha256:
        partial.unlink()
        raise LibraryError(f"{url} has SHA-256 {got}, not the pinned {sha256} ({what})")
    partial.replace(path)
    return path


def fetch(library: Library, cache_dir: Path) -> dict[str, Path]:
    """The library's pinned files, downloaded into ``cache_dir/sources`` once and checked."""
    what = f"{library.name} {library.version} ({CATALOGUE.name})"
    return {
        file_name: download(f"{POOL}/{library.pool}/{file_name}", expected,
                            cache_dir / "sources" / file_name, what)
        for file_name, expected in library.files.items()
    }  # fmt: skip


def _deb_data(path: Path) -> bytes:
    """The files' tarball (``data.tar.*``) of a Debian binary package.

    A .deb is an ar archive: an 8-byte magic, then members, each a 60-byte
    header (name, ..., decimal size at bytes 48-57) and its data padded to an
    even length.
    """
    blob = path.read_bytes()
    if not blob.startswith(b"!<arch>\n"):
        raise LibraryError(f"{path.name} is not a Debian binary package (no ar archive)")
    at = 8
    while at + 60 <= len(blob):
        name = blob[at : at + 16].decode("ascii", "replace").strip().rstrip("/")
        size = int(blob[at + 48 : at + 58].decode("ascii").strip())
        if name.startswith("data.tar"):
            return blob[at + 60 : at + 60 + size]
        at += 60 + size + (size & 1)
    raise LibraryError(f"{path.name} holds no data.tar member")


def _extract(tar: tarfile.TarFile, into: Path, only: tuple[str, ...]) -> None:
    """Extract ``tar`` into ``into``, only the files and folders ``only`` (empty: all)."""
    if not only:
        tar.extractall(into, filter="data")
        return
    folders = tuple(f"{path}/" for path in only)
    for member in tar:
        # A binary package's tarball names its files ./usr/...
        member.name = member.name.removeprefix("./")
        if member.name in only or member.name.startswith(folders):
            tar.extract(member, into, filter="data")


def unpack(library: Library, files: Mapping[str, Path], into: Path) -> Path:
    """Unpack the original tarball and Debian's folder, apply Debian's patches; return the root.

    With ``library.unpack``, only those files and folders of the original
    tarball are unpacked (LLVM's is 164 MB), in one pass. A Debian binary
    package (``.deb``, for a library of headers only) has its files unpacked
    as installed (``root`` is then a folder such as ``usr/include``); Debian's
    patches are already applied in it.
    """
    only = tuple(f"{library.root}/{path}" for path in library.unpack)
    for file_name, path in files.items():
        if file_name.endswith(".deb"):
            with tarfile.open(fileobj=io.BytesIO(_deb_data(path))) as tar:
                _extract(tar, into, only)
        elif ".orig." in file_name:
            with tarfile.open(path) as tar:
                _extract(tar, into, only)
        elif ".debian." in file_name:
            with tarfile.open(path) as tar:
                _extract(tar, into, ())
    root = into / library.root
    if not root.is_dir():
        raise LibraryError(f"{library.name}'s tarball has no folder {library.root}")
    series = into / "debian" / "patches" / "series"
    names = series.read_text().split() if series.is_file() else []
    debian = [(f"Debian's patch {n}", series.parent / n) for n in names if not n.startswith("#")]
    ours = [(f"wasinn's patch {n}", CONFIG_HEADERS / library.name / n) for n in library.patches]
    # Inside a git repository (build/ext is in the clone), git apply takes the paths
    # of a patch with "diff --git" headers as relative to the repository's top and
    # skips them, exit status 0 ("Skipped patch"): git must not find the clone.
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(root.parent)}
    for what, patch in debian + ours:
        done = subprocess.run(
            ["git", "apply", "-p1", "--whitespace=nowarn", str(patch)],
            cwd=root, capture_output=True, text=True, env=env,
        )  # fmt: skip
        if done.returncode:
            raise LibraryError(f"{what} does not apply to {library.name}: {done.stderr.strip()}")
    return root


def _config_files(library: Library) -> list[Path]:
    folder = CONFIG_HEADERS / library.name
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []


def build_key(
    library: Library, libraries: Mapping[str, Library], flags: Sequence[str], compiler: str
) -> str:
    """The SHA-256 of everything a build of ``library`` for these flags depends on."""
    digest = hashlib.sha256()
    for part in (library.entry(), shlex.join(flags), compiler, _sha256(Path(__file__))):
        digest.update(part.encode() + b"\0")
    for name in (library.name, *library.requires):
        for path in _config_files(libraries[name]):
            digest.update(f"{path.relative_to(CONFIG_HEADERS)}\0".encode())
            digest.update(path.read_bytes())
        digest.update(libraries[name].entry().encode())
    return digest.hexdigest()


def _include_dirs(library: Library, root: Path) -> tuple[Path, ...]:
    return tuple(
        CONFIG_HEADERS / library.name if folder == "config" else root / folder
        for folder in library.include
    )


def _is_cxx(source: Path) -> bool:
    return source.suffix in CXX_SUFFIXES


def build(
    library: Library,
    libraries: Mapping[str, Library],
    target: str,
    flags: Sequence[str],
    clang: Path,
    compiler: str,
    cache_dir: Path,
) -> Built:
    """``library`` compiled for ``target`` (its libraries' too), building what is not built yet.

    ``flags`` are the target's compile flags (``--target``, ``--sysroot``...);
    ``compiler`` is the compiler's ``--version``, part of the key. C++ sources
    are compiled by the ``clang++`` beside ``clang``; an ``archive`` library is
    archived by the ``llvm-ar`` of clang's LLVM.
    """
    if library.targets and target not in library.targets:
        raise LibraryError(
            f"{library.name} is built for {', '.join(library.targets)} only, not for {target}"
        )
    required = [build(libraries[name], libraries, target, flags, clang, compiler, cache_dir)
                for name in library.requires]  # fmt: skip
    key = build_key(library, libraries, flags, compiler)
    folder = cache_dir / "lib" / target / f"{library.name}-{key[:16]}"
    listing = folder / "built.json"
    if listing.is_file():
        known = json.loads(listing.read_text())
        return Built(key, tuple(Path(p) for p in known["objects"]),
                     tuple(Path(p) for p in known["include"]), folder / "objects.rsp",
                     bool(known.get("cxx")))  # fmt: skip
    files = fetch(library, cache_dir)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{library.name}-", dir=folder.parent))
    try:
        root = unpack(library, files, tmp / "src")
        include = _include_dirs(library, root)
        sources = sorted({p for pattern in library.sources for p in root.glob(pattern)})
        # No sources listed: a library of headers only (SIMDe), nothing to compile.
        if library.sources and not sources:
            raise LibraryError(f"{library.name}: no file matches {library.sources}")
        if any(_is_cxx(s) for s in sources) and not library.cxx:
            raise LibraryError(f"{library.name} has C++ sources but names no C++ standard (cxx)")
        # __FILE__ (in MeCab's error messages) as the path under the library's root,
        # not the temporary folder's: the same objects from every build.
        defines = (*library.defines, *library.target_defines.get(target, ()))
        common = [f"-ffile-prefix-map={root}/=", *(f"-D{d}" for d in defines),
                  *library.flags,
                  *(f"-I{d}" for d in include),
                  *(f"-I{d}" for lib in required for d in lib.include)]  # fmt: skip
        argv = [str(clang), *flags, *LIBRARY_FLAGS, *common]
        argv_cxx = [str(clangxx(clang)), *flags, f"-std={library.cxx}", *LIBRARY_CXX_FLAGS,
                    *common]  # fmt: skip
        objects_dir = tmp / "obj"
        objects_dir.mkdir()
        if sources:
            print(f"c_libraries: compiling {library.name} {library.version} for {target} "
                  f"({len(sources)} files)", file=sys.stderr)  # fmt: skip

        def compile_one(source: Path) -> Path:
            obj = objects_dir / (source.relative_to(root).as_posix().replace("/", "_") + ".o")
            done = subprocess.run([*(argv_cxx if _is_cxx(source) else argv), "-c", str(source),
                                   "-o", str(obj)], capture_output=True, text=True)  # fmt: skip
            if done.returncode:
                raise LibraryError(
                    f"could not compile {library.name}'s {source.relative_to(root)} for "
                    f"{target}: {done.stderr.strip()[-2000:]}"
                )
            return obj

        with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
            compiled = list(pool.map(compile_one, sources))
        if library.archive:
            ar = clang.parent / clang.name.replace("clang", "llvm-ar", 1)
            # D: no timestamps, owners or modes in the archive: the same bytes each time.
            done = subprocess.run([str(ar), "rcsD", str(tmp / "lib.a"), *map(str, compiled)],
                                  capture_output=True, text=True)  # fmt: skip
            if done.returncode:
                raise LibraryError(f"could not archive {library.name} for {target} with {ar}: "
                                   f"{done.stderr.strip()[-2000:]}")  # fmt: skip
        # The unpacked tree stays beside the objects: modules compile against its headers.
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    root = folder / "src" / library.root
    include = _include_dirs(library, root)
    objects = tuple(sorted((folder / "obj").glob("*.o")))
    # What a module's link reads (clang's @FILE): the objects, or the archive of them.
    linked = [folder / "lib.a"] if library.archive else objects
    (folder / "objects.rsp").write_text("".join(f"{shlex.quote(str(p))}\n" for p in linked))
    cxx = bool(library.cxx)
    known = {"objects": [str(p) for p in objects], "include": [str(p) for p in include],
             "cxx": cxx}  # fmt: skip
    listing.write_text(json.dumps(known, indent=1) + "\n")
    return Built(key, objects, include, folder / "objects.rsp", cxx)


def clangxx(clang: Path) -> Path:
    """The C++ driver beside ``clang`` (``/usr/bin/clang-19`` -> ``/usr/bin/clang++-19``)."""
    return clang.parent / clang.name.replace("clang", "clang++", 1)


def closure(names: Sequence[str], libraries: Mapping[str, Library]) -> list[Library]:
    """``names`` and every library they require, each once, requirements first."""
    order: list[Library] = []

    def visit(name: str) -> None:
        if name not in libraries:
            raise LibraryError(
                f"unknown C library {name!r} (the known: {', '.join(sorted(libraries))}; "
                f"add it to tools/{CATALOGUE.name})"
            )
        library = libraries[name]
        for required in library.requires:
            visit(required)
        if library not in order:
            order.append(library)

    for name in names:
        visit(name)
    return order
