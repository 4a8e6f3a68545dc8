"""tools/free_import_bytes.py: the fix for componentize-py 0.25.1's leak of bytes arguments.

Its effect on a real component is measured by test_soak (flat with the fix, growing
by what it sends without). Here: what the rewrite does to a module, run under the
real wasmtime on a hand-made stand-in for the runtime, and how it refuses what it
does not recognise.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import free_import_bytes as fib  # noqa: E402

I32 = fib.I32
FUNC = 0x60


def section(sid: int, payload: bytes) -> bytes:
    return bytes([sid]) + fib.u32(len(payload)) + payload


def vector(items: list[bytes]) -> bytes:
    return fib.u32(len(items)) + b"".join(items)


def functype(params: tuple[int, ...], results: tuple[int, ...]) -> bytes:
    return bytes([FUNC]) + vector([bytes([p]) for p in params]) + vector([bytes([r]) for r in results])


def i32_const(value: int) -> bytes:
    """``i32.const value`` (signed LEB128, non-negative values only)."""
    out = bytearray([0x41])
    while True:
        byte, value = value & 0x7F, value >> 7
        if value == 0 and not byte & 0x40:
            return bytes(out + bytes([byte]))
        out.append(byte | 0x80)


def body(code: bytes) -> bytes:
    inner = fib.u32(0) + code + b"\x0b"
    return fib.u32(len(inner)) + inner


def runtime_module(pop_list_type: tuple = fib.POP_LIST_TYPE, imported: int = 1) -> bytes:
    """A stand-in for componentize-py's runtime module.

    ``wit_dylib_pop_list(cx, ty, out)`` stores ``ty`` at ``out`` as the list's
    pointer (0 means "lowered element by element") and returns ``cx + 100`` as
    its length. ``wit_dylib_dealloc_bytes`` traps exactly when it is asked to
    defer freeing that pointer with that length, alignment 1: a trap is how a
    test sees the right call. ``imported`` unused function imports shift the
    indices, as the real module's imports do.
    """
    types = vector([functype(*pop_list_type), functype(*fib.DEALLOC_TYPE), functype((), ())])
    imports = vector([fib.name("env") + fib.name(f"f{i}") + b"\x00" + fib.u32(2) for i in range(imported)]
                     + [fib.name("env") + fib.name("memory") + b"\x02\x00\x01"])
    functions = vector([fib.u32(0), fib.u32(1)])
    pop, dealloc = imported, imported + 1
    exports = vector([fib.name(fib.POP_LIST) + b"\x00" + fib.u32(pop),
                      fib.name(fib.DEALLOC) + b"\x00" + fib.u32(dealloc),
                      fib.name("memory") + b"\x02\x00"])
    pop_code = (b"\x20\x02\x20\x01\x36\x02\x00"  # i32.store(out, ty)
                b"\x20\x00" + i32_const(100) + b"\x6a")  # cx + 100
    # if cx == 7 && ptr == 5 && size == 107 && align == 1 && defer == 1: unreachable
    checks = b"".join(b"\x20" + bytes([i]) + i32_const(v) + b"\x46" for i, v in enumerate((7, 5, 107, 1, 1)))
    dealloc_code = checks + b"\x71" * 4 + b"\x04\x40\x00\x0b"
    code = vector([body(pop_code), body(dealloc_code)])
    return (b"\0asm\x01\x00\x00\x00" + section(1, types) + section(2, imports) + section(3, functions)
            + section(7, exports) + section(10, code))


def component(*modules: bytes) -> bytes:
    return b"\0asm\x0d\x00\x01\x00" + b"".join(section(1, m) for m in modules)


def module_of(component_bytes: bytes, index: int) -> bytes:
    return [p for sid, p in fib.split_sections(component_bytes) if sid == 1][index]


def invoke(module: bytes, tmp_path: Path, *args: int) -> subprocess.CompletedProcess[str]:
    """Call the module's ``wit_dylib_pop_list`` under the real wasmtime CLI.

    Nothing would provide the stand-in's ``env`` imports there, so its memory
    becomes a definition first.
    """
    path = tmp_path / "m.wasm"
    path.write_bytes(define_memory(module))
    wasmtime = Path(sysconfig.get_paths()["purelib"]) / "wasmtime_cli" / "wasmtime"
    if not wasmtime.exists():
        pytest.skip("wasmtime CLI not installed (run ./build.sh setup)")
    return subprocess.run([str(wasmtime), "run", "--invoke", fib.POP_LIST, str(path), *map(str, args)],
                          capture_output=True, text=True, timeout=60)


def define_memory(module: bytes) -> bytes:
    """Drop the ``env`` imports (functions and memory) in favour of a defined memory.

    Only valid for ``runtime_module(imported=0)``, whose code calls no import.
    """
    sections = fib.split_sections(module)
    out = []
    for sid, payload in sections:
        if sid == 2:
            continue
        if sid == 7:
            out.append((5, vector([b"\x00\x01"])))  # memory section: one page
        out.append((sid, payload))
    return fib.join_sections(module[:8], out)


def test_wrapper_defers_freeing_a_copied_list(tmp_path: Path) -> None:
    patched, changed = fib.patch_component(component(runtime_module(imported=0)))
    assert changed
    # ty 5 plays a copied byte buffer at address 5: the wrapper must queue it
    # (cx 7, ptr 5, size 107, align 1, defer 1), which the stand-in turns into a trap.
    queued = invoke(module_of(patched, 0), tmp_path, 7, 5, 16)
    assert queued.returncode != 0 and "unreachable" in queued.stderr, queued
    # ty 0: the element-by-element path, nothing to queue; the length comes back.
    plain = invoke(module_of(patched, 0), tmp_path, 7, 0, 16)
    assert plain.returncode == 0 and plain.stdout.strip() == "107", plain
    # The unpatched stand-in never queues anything: the trap above is the wrapper's doing.
    before = invoke(runtime_module(imported=0), tmp_path, 7, 5, 16)
    assert before.returncode == 0 and before.stdout.strip() == "107", before


def test_rewrite_adds_one_function_and_repoints_one_export() -> None:
    original = runtime_module(imported=3)
    patched, changed = fib.patch_component(component(b"\0asm\x01\x00\x00\x00", original))
    assert changed
    assert module_of(patched, 0) == b"\0asm\x01\x00\x00\x00"
    new = module_of(patched, 1)
    assert fib.is_patched(new) and not fib.is_patched(original)
    by_name = {e.name: e.index for e in fib.exports(dict(fib.split_sections(new))[7])}
    assert by_name == {fib.POP_LIST: 5, fib.DEALLOC: 4, "memory": 0}  # 3 imports + 2 defined, then the wrapper


def test_patching_twice_changes_nothing() -> None:
    once, _ = fib.patch_component(component(runtime_module()))
    twice, changed = fib.patch_component(once)
    assert not changed and twice == once


@pytest.mark.parametrize(
    ("binary", "message"),
    [
        (b"not wasm at all", "not a WebAssembly binary"),
        (runtime_module(), "not a component"),
        (component(), "found 0"),
        (component(runtime_module(), runtime_module()), "found 2"),
        (component(runtime_module(pop_list_type=((I32, I32), (I32,)))), "unexpected signatures"),
        (component(runtime_module())[:-3], "runs past the end"),
        (component(b"\0asm\x01\x00\x00\x00" + section(7, b"\x01\x00")), "malformed binary"),  # export, no kind
    ],
    ids=["not-wasm", "core-module", "no-runtime", "two-runtimes", "wrong-signature", "truncated",
         "export-cut-short"],
)
def test_refuses_what_it_does_not_recognise(binary: bytes, message: str) -> None:
    with pytest.raises(fib.PatchError, match=message):
        fib.patch_component(binary)


def test_only_known_leaky_versions_are_patched(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "app.wasm"
    src.write_bytes(component(runtime_module()))
    assert fib.main([str(src), "-o", str(tmp_path / "out.wasm"), "--componentize-py", "0.26.0"]) == 0
    assert (tmp_path / "out.wasm").read_bytes() == src.read_bytes()
    assert "not a known leaky version" in capsys.readouterr().err
    assert fib.main([str(src), "--componentize-py", "0.25.1"]) == 0
    assert fib.is_patched(module_of(src.read_bytes(), 0))


def test_cli_reports_what_it_cannot_patch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "app.wasm"
    src.write_bytes(component())
    assert fib.main([str(src), "--componentize-py", "0.25.1"]) == 1
    assert "cannot patch" in capsys.readouterr().err


@pytest.mark.integration
def test_built_components_carry_the_fix(built: dict[str, Path]) -> None:
    for name in built:
        wasm = (ROOT / "build" / f"{name}.wasm").read_bytes()
        runtimes = [p for sid, p in fib.split_sections(wasm) if sid == 1 and fib.is_patched(p)]
        assert len(runtimes) == 1, name
