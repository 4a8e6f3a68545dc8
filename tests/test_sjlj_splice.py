"""tools/sjlj_splice.py: the stub componentize-py links in place of a setjmp/longjmp
module, and putting the real code back, with every case it must refuse.

The real module is tests/sjlj_app's ``_sjlj`` built for the guest (by
build_ext into a folder of the test's own); the components are small ones
made here around it, with the layout of a component (section 1: a core module).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import build_ext  # noqa: E402
import sjlj_splice  # noqa: E402
import wasm_binary  # noqa: E402

TOOL = ROOT / "tools" / "sjlj_splice.py"
COMPONENT_HEADER = b"\0asm\x0d\x00\x01\x00"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with _sjlj's real module and stub, as build_ext writes them."""
    folder = tmp_path_factory.mktemp("sjlj") / "app"
    shutil.copytree(ROOT / "tests" / "sjlj_app" / "ext", folder / "ext")
    cache = folder.parent / "cache"
    cache.mkdir()
    shutil.copy(build_ext.DEFAULT_CACHE / "guest-abi.json", cache / "guest-abi.json")
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "build_ext.py"), str(folder), "--targets", "guest",
         "--cache", str(cache)], capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return folder


def real_of(folder: Path) -> Path:
    return folder / "_sjlj.sjlj.wasm"


def stub_of(folder: Path) -> Path:
    return folder / ("_sjlj" + sjlj_splice.STUB_SUFFIX)


def component(*modules: bytes) -> bytes:
    """A component holding ``modules`` (core module sections), as componentize-py's does."""
    return wasm_binary.join_sections(COMPONENT_HEADER, [(1, m) for m in modules])


def with_section(module: bytes, sid: int, payload: bytes) -> bytes:
    parts = [(s, payload if s == sid else p) for s, p in wasm_binary.split_sections(module)]
    return wasm_binary.join_sections(module[:8], parts)


def test_the_stub_suffix_is_the_guests() -> None:
    assert sjlj_splice.STUB_SUFFIX == f".{build_ext.GUEST_SOABI}.so"
    assert build_ext.REAL_SUFFIX == sjlj_splice.REAL_SUFFIX


def test_the_stub_hides_exactly_the_exception_handling(built: Path) -> None:
    real, stub = real_of(built).read_bytes(), stub_of(built).read_bytes()
    made = sjlj_splice.make_stub(real)
    assert made.binary == stub
    real_secs, stub_secs = wasm_binary.split_sections(real), wasm_binary.split_sections(stub)
    assert [s for s, _ in real_secs if s != 13] == [s for s, _ in stub_secs]
    assert 13 in dict(real_secs) and 13 not in dict(stub_secs)
    bodies = sjlj_splice.code_bodies(dict(real_secs)[10])
    stub_bodies = sjlj_splice.code_bodies(dict(stub_secs)[10])
    assert [k for k, b in enumerate(bodies) if sjlj_splice.uses_eh(b)] == list(made.stubbed)
    # dive (setjmp), guard (setjmp) and __wasm_longjmp (throw); nothing else, and no PyInit.
    assert len(made.stubbed) == 3
    for k, (body, hidden) in enumerate(zip(bodies, stub_bodies, strict=True)):
        assert hidden == (sjlj_splice.STUB_BODY if k in made.stubbed else body)
    assert not any(sjlj_splice.uses_eh(b) for b in stub_bodies)


def test_splicing_gives_back_the_real_module(built: Path) -> None:
    real, stub = real_of(built).read_bytes(), stub_of(built).read_bytes()
    other = ROOT / "guest" / "wasinn" / ("_kernels" + sjlj_splice.STUB_SUFFIX)
    pairs = sjlj_splice.find_pairs([built])
    spliced = sjlj_splice.splice_component(component(other.read_bytes(), stub), pairs)
    assert spliced == component(other.read_bytes(), real)


def test_the_cli_splices_in_place_and_leaves_a_component_without_sjlj_alone(
    built: Path, tmp_path: Path
) -> None:
    path = tmp_path / "app.wasm"
    path.write_bytes(component(stub_of(built).read_bytes()))
    done = subprocess.run([sys.executable, str(TOOL), str(path), str(built.parent)],
                          capture_output=True, text=True)  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "sjlj_splice: put _sjlj.sjlj.wasm back into "
                                              "app.wasm\n")  # fmt: skip
    assert path.read_bytes() == component(real_of(built).read_bytes())
    # Spliced already: refused, the file left as it is.
    again = subprocess.run([sys.executable, str(TOOL), str(path), str(built)],
                           capture_output=True, text=True)  # fmt: skip
    assert again.returncode == 1
    assert "_sjlj.sjlj.wasm's real code is in the component already (spliced before?)" in (
        again.stderr
    )
    assert path.read_bytes() == component(real_of(built).read_bytes())
    # No *.sjlj.wasm in the folders: nothing to do, the file is not even rewritten.
    before = path.stat().st_mtime_ns
    none = subprocess.run([sys.executable, str(TOOL), str(path), str(ROOT / "tests" / "otsu_app")],
                          capture_output=True, text=True)  # fmt: skip
    assert (none.returncode, none.stderr) == (0, "")
    assert path.stat().st_mtime_ns == before
    assert not list(tmp_path.glob(".*splice"))


@pytest.mark.parametrize("section, name", [(1, "Type"), (2, "Import"), (3, "Function")])
def test_a_module_componentize_py_changed_is_refused(
    built: Path, section: int, name: str
) -> None:
    stub = stub_of(built).read_bytes()
    payload = dict(wasm_binary.split_sections(stub))[section]
    changed = with_section(stub, section, payload + b"\0")
    with pytest.raises(sjlj_splice.SpliceError, match=f"componentize-py changed the {name} "
                       "section of _sjlj.sjlj.wasm's stub module"):  # fmt: skip
        sjlj_splice.splice_component(component(changed), sjlj_splice.find_pairs([built]))


def test_a_stub_not_linked_unchanged_or_linked_twice_is_refused(built: Path) -> None:
    stub = stub_of(built).read_bytes()
    pairs = sjlj_splice.find_pairs([built])
    bodies = sjlj_splice.code_bodies(dict(wasm_binary.split_sections(stub))[10])
    rewritten = with_section(stub, 10, sjlj_splice.code_payload([*bodies, sjlj_splice.STUB_BODY]))
    for comp, times in ((component(rewritten), 0), (component(stub, stub), 2)):
        with pytest.raises(sjlj_splice.SpliceError, match=f"found it {times} times"):
            sjlj_splice.splice_component(comp, pairs)


def test_a_missing_or_foreign_stub_is_refused(built: Path, tmp_path: Path) -> None:
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    shutil.copy(real_of(built), lonely)
    with pytest.raises(sjlj_splice.SpliceError, match=r"_sjlj\.sjlj\.wasm has no stub "
                       r"_sjlj\.cpython-314-wasm32-wasi\.so beside it"):  # fmt: skip
        sjlj_splice.find_pairs([tmp_path])
    # A stub from another build of the module (or of another module) is not its stub.
    shutil.copy(ROOT / "guest" / "wasinn" / ("_kernels" + sjlj_splice.STUB_SUFFIX),
                stub_of(lonely))  # fmt: skip
    with pytest.raises(sjlj_splice.SpliceError, match="is not the stub of _sjlj.sjlj.wasm"):
        sjlj_splice.find_pairs([tmp_path])
    path = tmp_path / "app.wasm"
    path.write_bytes(component(stub_of(built).read_bytes()))
    done = subprocess.run([sys.executable, str(TOOL), str(path), str(tmp_path)],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 1 and "is not the stub of" in done.stderr
    assert path.read_bytes() == component(stub_of(built).read_bytes())


def test_what_is_not_a_module_or_has_no_eh_is_refused() -> None:
    plain = (ROOT / "guest" / "wasinn" / ("_kernels" + sjlj_splice.STUB_SUFFIX)).read_bytes()
    with pytest.raises(sjlj_splice.SpliceError, match="no exception-handling code"):
        sjlj_splice.make_stub(plain)
    with pytest.raises(sjlj_splice.SpliceError, match="not a WebAssembly core module"):
        sjlj_splice.make_stub(component(plain))
    with pytest.raises(sjlj_splice.SpliceError, match="not a WebAssembly component"):
        sjlj_splice.splice_component(plain, [])
    with pytest.raises(sjlj_splice.SpliceError, match="unknown instruction 0xff"):
        sjlj_splice.uses_eh(bytes([0, 0xFF, 0x0B]))
