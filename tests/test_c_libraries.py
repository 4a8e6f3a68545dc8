"""tools/c_libraries.py: how a library of tools/c_libraries.toml is unpacked,
patched and compiled (unit tests on small made-up libraries; the real ones are
built by every ./build.sh setup)."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import c_libraries  # noqa: E402

GIT_PATCH = """\
wasinn: a patch in git's format (a "diff --git" header), as git diff writes them.

diff --git a/src/hello.c b/src/hello.c
--- a/src/hello.c
+++ b/src/hello.c
@@ -1 +1 @@
-int hello(void) { return 1; }
+int hello(void) { return 2; }
"""


def _library(
    tmp: Path, more: dict[str, bytes] | None = None, **fields: object
) -> tuple[c_libraries.Library, dict[str, Path]]:
    """A library "demo" whose original tarball holds src/hello.c (and ``more``)."""
    tarball = tmp / "demo_1.0.orig.tar.gz"
    members = {"src/hello.c": b"int hello(void) { return 1; }\n", **(more or {})}
    with tarfile.open(tarball, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(f"demo-1.0/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    entry: dict[str, object] = dict(
        name="demo", version="1.0-1", pool="d/demo", root="demo-1.0",
        files={tarball.name: "0"}, sources=("src/*.c", "src/*.cpp"), include=("src",), defines=(),
        requires=(),
    )  # fmt: skip
    entry.update(fields)
    return c_libraries.Library(**entry), {tarball.name: tarball}  # type: ignore[arg-type]


def test_a_git_style_patch_applies_inside_a_git_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """build/ext lies inside the clone. There git apply took the paths of a patch
    with "diff --git" headers as relative to the clone's top, skipped them and
    exited 0: a patch silently not applied (Debian's libwebp patch
    EncodeAlphaInternal-clear-result-bw-on-error was, and wasinn's open-jtalk ones)."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    patches = tmp_path / "patches"
    (patches / "demo").mkdir(parents=True)
    (patches / "demo" / "two.patch").write_text(GIT_PATCH)
    monkeypatch.setattr(c_libraries, "CONFIG_HEADERS", patches)
    library, files = _library(tmp_path, patches=("two.patch",))
    root = c_libraries.unpack(library, files, tmp_path / "build" / "src")
    assert (root / "src" / "hello.c").read_text() == "int hello(void) { return 2; }\n"


def _build(
    tmp: Path,
    monkeypatch: pytest.MonkeyPatch,
    more: dict[str, bytes] | None = None,
    target: str = "native",
    **fields: object,
) -> c_libraries.Built:
    """The made-up library built for ``target`` (fetch() gives the local tarball)."""
    clang = Path("/usr/bin/clang-19")
    if not clang.exists():
        pytest.skip("Debian's clang-19 is not installed")
    library, files = _library(tmp, more, **fields)
    monkeypatch.setattr(c_libraries, "fetch", lambda library, cache_dir: files)
    return c_libraries.build(library, {"demo": library}, target, (), clang, "clang 19",
                             tmp / "cache")  # fmt: skip


#: Compiles only as C++17 or later.
TWICE = (
    b'static_assert(__cplusplus >= 201703L, "C++17");\n'
    b'extern "C" int twice(int x) { return 2 * x; }\n'
)


def test_cpp_sources_compile_with_clangxx_at_the_named_standard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A .cpp source goes to clang++ at the entry's ``cxx`` standard; the build says
    it has C++ (a module linking it then links the C++ runtime). Its C stays C."""
    built = _build(tmp_path, monkeypatch, {"src/twice.cpp": TWICE}, cxx="c++17")
    assert built.cxx
    assert sorted(p.name for p in built.objects) == ["src_hello.c.o", "src_twice.cpp.o"]
    symbols = subprocess.run(["nm", str(built.objects[1])], capture_output=True, text=True)
    assert " T twice" in symbols.stdout
    (tmp_path / "cache").rename(tmp_path / "old")
    with pytest.raises(c_libraries.LibraryError, match="could not compile demo's src/twice.cpp"):
        _build(tmp_path, monkeypatch, {"src/twice.cpp": TWICE}, cxx="c++14")


def test_cpp_sources_need_a_standard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(
        c_libraries.LibraryError, match="C\\+\\+ sources but names no C\\+\\+ standard"
    ):
        _build(tmp_path, monkeypatch, {"src/twice.cpp": TWICE})


def test_a_library_for_some_targets_refuses_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(c_libraries.LibraryError, match="built for guest only, not for native"):
        _build(tmp_path, monkeypatch, targets=("guest",))


def test_unpack_takes_only_the_paths_named(tmp_path: Path) -> None:
    more = {"big/data.csv": b"x" * 1000, "configure.ac": b"AC_INIT\n", "src/extra.h": b""}
    library, files = _library(tmp_path, more, unpack=("src", "configure.ac"))
    root = c_libraries.unpack(library, files, tmp_path / "out")
    found = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert found == ["configure.ac", "src/extra.h", "src/hello.c"]


def test_an_archive_library_links_as_one_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module's link reads the archive (it takes only the objects it needs)."""
    built = _build(tmp_path, monkeypatch, {"src/twice.cpp": TWICE}, cxx="c++17", archive=True)
    archive = built.objects[0].parent.parent / "lib.a"
    assert built.link_file.read_text().split() == [str(archive)]
    members = subprocess.run(["ar", "t", str(archive)], capture_output=True, text=True)
    assert members.stdout.split() == ["src_hello.c.o", "src_twice.cpp.o"]


def _deb(path: Path, members: dict[str, bytes]) -> Path:
    """A Debian binary package (an ar archive) whose data.tar.xz holds ``members`` as ./NAME."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:xz") as tar:
        for name, body in members.items():
            info = tarfile.TarInfo(f"./{name}")
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    blob = b"!<arch>\n"
    for name, body in (("debian-binary", b"2.0\n"), ("control.tar.xz", b"x"),
                       ("data.tar.xz", data.getvalue())):  # fmt: skip
        header = f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(body):<10}`\n".encode()
        blob += header + body + (b"\n" if len(body) % 2 else b"")
    path.write_bytes(blob)
    return path


def test_a_header_only_library_from_a_binary_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIMDe: a .deb's files unpacked as installed, only those named; no sources, so
    nothing is compiled and a module's link reads nothing of it."""
    clang = Path("/usr/bin/clang-19")
    if not clang.exists():
        pytest.skip("Debian's clang-19 is not installed")
    members = {"usr/include/hdr/hdr.h": b"#define HDR 1\n", "usr/share/doc/hdr/README": b"doc\n"}
    deb = _deb(tmp_path / "libhdr-dev_1.0-1_all.deb", members)
    library = c_libraries.Library(
        name="hdr", version="1.0-1", pool="h/hdr", root="usr/include", files={deb.name: "0"},
        sources=(), include=(".",), defines=(), requires=(), unpack=("hdr",),
    )  # fmt: skip
    monkeypatch.setattr(c_libraries, "fetch", lambda library, cache_dir: {deb.name: deb})
    built = c_libraries.build(library, {"hdr": library}, "native", (), clang, "clang 19",
                              tmp_path / "cache")  # fmt: skip
    assert built.objects == ()
    assert built.link_file.read_text() == ""
    (include,) = built.include
    found = sorted(p.relative_to(include.parent.parent).as_posix() for p in
                   include.parent.parent.rglob("*") if p.is_file())  # fmt: skip
    assert found == ["usr/include/hdr/hdr.h"]


def test_target_defines_reach_only_their_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """libwebp's __SSE2__ & co. are the guest's alone: the native build must not see them."""
    probe = {"src/probe.c": b"#ifdef ONLY_GUEST\n#error not native\n#endif\nint probe;\n"}
    built = _build(tmp_path, monkeypatch, probe, target_defines={"guest": ("ONLY_GUEST",)})
    assert [p.name for p in built.objects] == ["src_hello.c.o", "src_probe.c.o"]
    (tmp_path / "cache").rename(tmp_path / "old")
    with pytest.raises(c_libraries.LibraryError, match="not native"):
        _build(tmp_path, monkeypatch, probe, target_defines={"native": ("ONLY_GUEST",)})


def test_the_catalogue_names_the_guest_cpp_runtime() -> None:
    """Every C++ library's guest modules link libcxx: it is in the catalogue, for
    the guest only, as an archive, and open-jtalk is C++."""
    catalogue = c_libraries.load_catalogue()
    runtime = catalogue[c_libraries.GUEST_CXX_RUNTIME]
    assert runtime.targets == ("guest",) and runtime.archive and runtime.cxx
    assert catalogue["open-jtalk"].cxx == "c++11"


def test_every_patch_of_ours_says_why_before_its_diff() -> None:
    for library in c_libraries.load_catalogue().values():
        for name in library.patches:
            text = (c_libraries.CONFIG_HEADERS / library.name / name).read_text()
            why = text.split("\n--- a/")[0].split("\ndiff --git")[0]
            assert len(why.split()) >= 30 and "wasinn" in why.splitlines()[0], name


def test_file_names_in_objects_are_under_the_library_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """__FILE__ (MeCab puts it in its error messages) is the path under the
    library's root, not the temporary folder the build ran in: the same objects
    from every build, and messages that name the library's own file."""
    where = b"const char *where(void) { return __FILE__; }\n"
    built = _build(tmp_path, monkeypatch, {"src/where.c": where})
    data = next(p for p in built.objects if p.name == "src_where.c.o").read_bytes()
    assert b"src/where.c\0" in data and str(tmp_path).encode() not in data
