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


def _library(tmp: Path, **fields: object) -> tuple[c_libraries.Library, dict[str, Path]]:
    """A library "demo" whose original tarball holds src/hello.c."""
    tarball = tmp / "demo_1.0.orig.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        data = b"int hello(void) { return 1; }\n"
        info = tarfile.TarInfo("demo-1.0/src/hello.c")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    entry: dict[str, object] = dict(
        name="demo", version="1.0-1", pool="d/demo", root="demo-1.0",
        files={tarball.name: "0"}, sources=("src/*.c",), include=("src",), defines=(),
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
