"""tools/free_import_bytes.py: the fix for componentize-py 0.25.1's leak of lowered byte lists.

Its effect on the sample apps' imports is measured by test_soak (flat with the fix,
growing by what they send without). Here: what the rewrite does to a module, run
under the real wasmtime on a hand-made stand-in for the runtime; how the tool
recognises the componentize-py that built a component and refuses what it does
not know; and, on real components, that exports returning ``list<u8>`` and
``list<list<u8>>`` (sync and async) stay correct and flat when patched, while the
unpatched runtime leaks there too.
"""

from __future__ import annotations

import hashlib
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
LEAKY_VERSION = "0.25.1"
WASMTIME = Path(sysconfig.get_paths()["purelib"]) / "wasmtime_cli" / "wasmtime"
COMPONENTIZE_PY = Path(sysconfig.get_paths()["scripts"]) / "componentize-py"
APP = ROOT / "tests" / "leakpatch_export_app"


def section(sid: int, payload: bytes) -> bytes:
    return bytes([sid]) + fib.u32(len(payload)) + payload


def vector(items: list[bytes]) -> bytes:
    return fib.u32(len(items)) + b"".join(items)


def functype(params: tuple[int, ...], results: tuple[int, ...]) -> bytes:
    return (bytes([FUNC]) + vector([bytes([p]) for p in params])
            + vector([bytes([r]) for r in results]))


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


def runtime_module(
    pop_list_type: tuple[tuple[int, ...], tuple[int, ...]] = fib.POP_LIST_TYPE, imported: int = 1
) -> bytes:
    """A stand-in for componentize-py's runtime module.

    ``wit_dylib_pop_list(cx, ty, out)`` stores ``ty`` at ``out`` as the list's
    pointer (0 means "lowered element by element") and returns ``cx + 100`` as
    its length. ``wit_dylib_dealloc_bytes`` traps exactly when it is asked to
    defer freeing that pointer with that length, alignment 1: a trap is how a
    test sees the right call. ``imported`` unused function imports shift the
    indices, as the real module's imports do. Its hash is no known release's.
    """
    types = vector([functype(*pop_list_type), functype(*fib.DEALLOC_TYPE), functype((), ())])
    imports = vector(
        [fib.name("env") + fib.name(f"f{i}") + b"\x00" + fib.u32(2) for i in range(imported)]
        + [fib.name("env") + fib.name("memory") + b"\x02\x00\x01"])
    functions = vector([fib.u32(0), fib.u32(1)])
    pop, dealloc = imported, imported + 1
    exports = vector([fib.name(fib.POP_LIST) + b"\x00" + fib.u32(pop),
                      fib.name(fib.DEALLOC) + b"\x00" + fib.u32(dealloc),
                      fib.name("memory") + b"\x02\x00"])
    pop_code = (b"\x20\x02\x20\x01\x36\x02\x00"  # i32.store(out, ty)
                b"\x20\x00" + i32_const(100) + b"\x6a")  # cx + 100
    # if cx == 7 && ptr == 5 && size == 107 && align == 1 && defer == 1: unreachable
    checks = b"".join(b"\x20" + bytes([i]) + i32_const(v) + b"\x46"
                      for i, v in enumerate((7, 5, 107, 1, 1)))
    dealloc_code = checks + b"\x71" * 4 + b"\x04\x40\x00\x0b"
    code = vector([body(pop_code), body(dealloc_code)])
    return (b"\0asm\x01\x00\x00\x00" + section(1, types) + section(2, imports)
            + section(3, functions) + section(7, exports) + section(10, code))


def producers_payload(*entries: tuple[str, str, str]) -> bytes:
    """The payload of a producers custom section with these (field, name, version) entries."""
    fields: dict[str, list[bytes]] = {}
    for field, tool, version in entries:
        fields.setdefault(field, []).append(fib.name(tool) + fib.name(version))
    return fib.name("producers") + vector(
        [fib.name(field) + vector(values) for field, values in fields.items()])


def producers(*entries: tuple[str, str, str]) -> bytes:
    """A producers custom section with these (field, name, version) entries."""
    return section(0, producers_payload(*entries))


def component(*modules: bytes, custom: bytes = b"") -> bytes:
    return b"\0asm\x0d\x00\x01\x00" + b"".join(section(1, m) for m in modules) + custom


def module_of(component_bytes: bytes, index: int) -> bytes:
    return [p for sid, p in fib.split_sections(component_bytes) if sid == 1][index]


def invoke(module: bytes, tmp_path: Path, *args: int) -> subprocess.CompletedProcess[str]:
    """Call the module's ``wit_dylib_pop_list`` under the real wasmtime CLI.

    Nothing would provide the stand-in's ``env`` imports there, so its memory
    becomes a definition first.
    """
    path = tmp_path / "m.wasm"
    path.write_bytes(define_memory(module))
    if not WASMTIME.exists():
        pytest.skip("wasmtime CLI not installed (run ./build.sh setup)")
    return subprocess.run(
        [str(WASMTIME), "run", "--invoke", fib.POP_LIST, str(path), *map(str, args)],
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


# ------------------------------------------------------------ the rewrite


def test_wrapper_defers_freeing_a_copied_list(tmp_path: Path) -> None:
    patched, changed = fib.patch_component(component(runtime_module(imported=0)), LEAKY_VERSION)
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
    patched, changed = fib.patch_component(component(b"\0asm\x01\x00\x00\x00", original),
                                           LEAKY_VERSION)
    assert changed
    assert module_of(patched, 0) == b"\0asm\x01\x00\x00\x00"
    new = module_of(patched, 1)
    assert fib.is_patched(new) and not fib.is_patched(original)
    by_name = {e.name: e.index for e in fib.exports(dict(fib.split_sections(new))[7])}
    # 3 imports + 2 defined functions, then the wrapper
    assert by_name == {fib.POP_LIST: 5, fib.DEALLOC: 4, "memory": 0}


def test_patching_twice_changes_nothing() -> None:
    once, _ = fib.patch_component(component(runtime_module()), LEAKY_VERSION)
    twice, changed = fib.patch_component(once)  # no version needed: the mark says it all
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
        # an export section cut short after its count
        (component(b"\0asm\x01\x00\x00\x00" + section(7, b"\x01\x00")), "malformed binary"),
        (component(runtime_module(), custom=section(0, producers_payload(("sdk", "x", "1"))[:-1])),
         "truncated name"),
    ],
    ids=["not-wasm", "core-module", "no-runtime", "two-runtimes", "wrong-signature", "truncated",
         "export-cut-short", "producers-cut-short"],
)
def test_refuses_what_it_does_not_recognise(binary: bytes, message: str) -> None:
    with pytest.raises(fib.PatchError, match=message):
        fib.patch_component(binary, LEAKY_VERSION)


# ------------------------------------------------------------ which componentize-py


def test_unknown_runtime_is_refused_with_the_way_out() -> None:
    binary = component(runtime_module(), custom=producers(("processed-by", "wit-component", "9.9")))
    found = fib.identify(binary)
    assert found.version is None and not found.patched
    assert found.sha256 == hashlib.sha256(runtime_module()).hexdigest()
    with pytest.raises(fib.PatchError) as refused:
        fib.patch_component(binary)
    message = str(refused.value)
    assert "does not say which componentize-py built it" in message
    assert found.sha256 in message and "wit-component 9.9" in message
    assert "--assume-version" in message


def test_runtime_hash_names_the_release(monkeypatch: pytest.MonkeyPatch) -> None:
    sha256 = hashlib.sha256(runtime_module()).hexdigest()
    monkeypatch.setitem(fib.KNOWN_RUNTIMES, sha256, LEAKY_VERSION)
    found = fib.identify(component(runtime_module()))
    assert (found.version, found.evidence) == (LEAKY_VERSION, "its runtime module's sha256")
    patched, changed = fib.patch_component(component(runtime_module()))
    assert changed and fib.is_patched(module_of(patched, 0))
    # A release that is known but fixed is left alone.
    monkeypatch.setitem(fib.KNOWN_RUNTIMES, sha256, "0.26.0")
    with pytest.raises(fib.NotLeaky, match=r"0\.26\.0 \(according to its runtime module's"):
        fib.patch_component(component(runtime_module()))


@pytest.mark.parametrize("where", ["component", "runtime module"])
def test_producers_section_names_the_release(where: str) -> None:
    def built_by(version: str) -> bytes:
        entry = producers(("processed-by", "wit-component", "0.245.1"),
                          ("processed-by", "componentize-py", version))
        if where == "component":
            return component(runtime_module(), custom=entry)
        return component(runtime_module() + entry)

    assert fib.identify(built_by("0.26.0")).evidence == "its producers section"
    with pytest.raises(fib.NotLeaky, match=r"componentize-py 0\.26\.0"):
        fib.patch_component(built_by("0.26.0"))
    patched, changed = fib.patch_component(built_by(LEAKY_VERSION))
    assert changed and fib.is_patched(module_of(patched, 0))


def test_read_producers() -> None:
    entries = (("language", "Python", "3.14"),
               ("processed-by", "a", "1"), ("processed-by", "b", "2"))
    payload = producers_payload(*entries)
    assert fib.read_producers(payload) == list(entries)
    with pytest.raises(fib.PatchError, match="trailing bytes"):
        fib.read_producers(payload + b"\x00")


def test_cli_patches_only_known_leaky_versions(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "app.wasm"
    src.write_bytes(component(runtime_module()))
    out = tmp_path / "out.wasm"
    assert fib.main([str(src), "-o", str(out), "--assume-version", "0.26.0"]) == 0
    assert out.read_bytes() == src.read_bytes()
    assert "0.26.0 (as assumed) is not a known leaky version" in capsys.readouterr().err
    assert fib.main([str(src), "--assume-version", LEAKY_VERSION]) == 0
    assert fib.is_patched(module_of(src.read_bytes(), 0))
    assert fib.main([str(src)]) == 0
    assert "already patched" in capsys.readouterr().err


def test_cli_reports_what_it_cannot_patch(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    src, out = tmp_path / "app.wasm", tmp_path / "out.wasm"
    src.write_bytes(component())
    assert fib.main([str(src), "-o", str(out), "--assume-version", LEAKY_VERSION]) == 1
    assert "cannot patch" in capsys.readouterr().err
    src.write_bytes(component(runtime_module()))  # a runtime no release is known to ship
    assert fib.main([str(src), "-o", str(out)]) == 1
    assert "pass --assume-version" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.integration
def test_built_components_carry_the_fix(built: dict[str, Path]) -> None:
    for name in built:
        wasm = (ROOT / "build" / f"{name}.wasm").read_bytes()
        runtimes = [p for sid, p in fib.split_sections(wasm) if sid == 1 and fib.is_patched(p)]
        assert len(runtimes) == 1, name


# ------------------------------------------------------------ real components
#
# tests/leakpatch_export_app has servers whose exports take a list<u8> (crc) or
# return a list<u8> (fill) or list<list<u8>> (pieces), and clients that call
# them over and over and check every answer (a mismatch traps). Both are built
# with --stub-wasi, so they import nothing, and composed into one component
# (compose() below): the wasmtime CLI invokes one export per process, and this
# way the client calls the server's exports as often as it likes. Every linear
# memory is capped with `-W max-memory-size`: a leak shows as a trap.

CALLS, SIZE = 400, 256 * 1024
CAP = 24 * 2**20  # each component starts with 12.3 MiB; a leak adds 256-512 KiB a call
# The runtime componentize-py links in: sync, or async when the world has async
# functions. Per variant: server world, client world, the interface between them,
# and the wasmtime flags it needs.
VARIANTS = {
    "sync": ("server", "client", "leakpatch:app/codec", []),
    "async": ("async-server", "async-client", "leakpatch:app/codec-async",
              ["-W", "component-model-async=y"]),
}


def expected_soak(calls: int, send: int, receive: int) -> str:
    """What the client's soak returns, as wasmtime prints it: the bytes it sent
    (sized as checks.payload sizes them) and received (fill's and pieces')."""
    def size(seed: int, n: int) -> int:
        return 0 if seed % 4 == 3 or n == 0 else n - seed % 3

    sent = sum(size(seed, send) for seed in range(calls))
    received = sum(2 * size(seed, receive) for seed in range(calls))
    return f"({sent}, {received})"


def compose(server: bytes, client: bytes, interface: str) -> bytes:
    """One component that instantiates ``server``, hands its ``interface``
    export to ``client``, and exports the client's ``soak``."""
    instance_sort, func_sort = 0x05, 0x01
    instantiate = b"\x00"  # instance section: instantiate component N with args
    alias_export = b"\x00"  # alias section: an export of instance N
    return (b"\0asm\x0d\x00\x01\x00"
            + section(4, server) + section(4, client)  # components 0 and 1
            + section(5, vector([instantiate + fib.u32(0) + vector([])]))  # instance 0: server
            + section(6, vector([bytes([instance_sort]) + alias_export + fib.u32(0)
                                 + fib.name(interface)]))  # instance 1: its interface
            + section(5, vector([instantiate + fib.u32(1) + vector(
                [fib.name(interface) + bytes([instance_sort]) + fib.u32(1)])]))  # 2: the client
            + section(6, vector([bytes([func_sort]) + alias_export + fib.u32(2)
                                 + fib.name("soak")]))  # func 0: the client's soak
            + section(11, vector([b"\x00" + fib.name("soak") + bytes([func_sort]) + fib.u32(0)
                                  + b"\x00"])))  # export it, no type ascription


class Pair:
    """A variant's server and client as componentize-py built them, and runners."""

    def __init__(self, variant: str, directory: Path) -> None:
        server_world, client_world, self.interface, self.flags = VARIANTS[variant]
        self.directory = directory
        self.raw = {"server": self.build(server_world), "client": self.build(client_world)}

    def build(self, world: str) -> Path:
        out = self.directory / f"{world}.wasm"
        module = world.replace("-", "_") + "_app"
        subprocess.run([str(COMPONENTIZE_PY), "-d", str(APP / "wit"), "-w",
                        f"leakpatch:app/{world}", "componentize", "--stub-wasi", "-p", str(APP),
                        module, "-o", str(out)],
                       check=True, capture_output=True, text=True, timeout=600)
        return out

    def patched(self, role: str) -> Path:
        """The tool's output for the server or the client, as build.sh runs it."""
        fixed = self.directory / f"{role}.patched.wasm"
        assert fib.main([str(self.raw[role]), "-o", str(fixed)]) == 0, role
        return fixed

    def composed(self, server: Path, client: Path) -> Path:
        """The composition, precompiled. Winch, wasmtime's baseline compiler,
        compiles the two 18 MB components in a third of Cranelift's time; what
        is tested here is the guest's memory management, not the code quality."""
        wasm = self.directory / f"{server.stem}+{client.stem}.wasm"
        wasm.write_bytes(compose(server.read_bytes(), client.read_bytes(), self.interface))
        cwasm = wasm.with_suffix(".cwasm")
        subprocess.run([str(WASMTIME), "compile", "-C", "compiler=winch", *self.flags, str(wasm),
                        "-o", str(cwasm)], check=True, capture_output=True, text=True, timeout=600)
        return cwasm

    def soak(self, cwasm: Path, send: int, receive: int,
             cap: int | None = CAP) -> subprocess.CompletedProcess[str]:
        limit = ["-W", f"max-memory-size={cap}"] if cap else []
        return subprocess.run(
            [str(WASMTIME), "run", "-C", "compiler=winch", *self.flags, "--allow-precompiled",
             *limit, "--invoke", f"soak({CALLS}, {send}, {receive})", str(cwasm)],
            capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module", params=sorted(VARIANTS))
def pair(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Pair:
    if not WASMTIME.exists() or not COMPONENTIZE_PY.exists():
        pytest.skip("componentize-py or the wasmtime CLI not installed (run ./build.sh setup)")
    variant: str = request.param
    return Pair(variant, tmp_path_factory.mktemp(f"leakpatch_{variant}"))


@pytest.mark.integration
def test_pinned_componentize_py_runtimes_are_known(pair: Pair) -> None:
    """Fails when the pinned componentize-py ships another runtime: then
    test_unpatched_runtime_leaks_what_it_lowers says whether it still leaks
    (README, "Toolchain fix")."""
    for role, raw in pair.raw.items():
        found = fib.identify(raw.read_bytes())
        assert (found.version, found.evidence) == (LEAKY_VERSION, "its runtime module's sha256"), (
            role, found.describe())
        # What the tool falls back on says nothing here: the hash is all there is.
        assert not any(tool == "componentize-py" for _, tool, _ in found.producers)


@pytest.mark.integration
def test_patched_runtime_stays_correct_and_flat(pair: Pair) -> None:
    """Lists lowered as import arguments and as export results, nested too,
    empty ones included, 400 times each: every answer right, within the cap."""
    cwasm = pair.composed(pair.patched("server"), pair.patched("client"))
    done = pair.soak(cwasm, SIZE, SIZE)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == expected_soak(CALLS, SIZE, SIZE)


@pytest.mark.integration
def test_unpatched_runtime_leaks_what_it_lowers(pair: Pair) -> None:
    """Unpatched, the same calls outgrow the cap, through the client's import
    arguments alone and through the server's export results alone, and succeed
    without the cap: the patch is what keeps the test above within it.

    Needs no patching: after a componentize-py upgrade, this failing (no trap)
    means the new runtime frees the copy itself and the tool can go."""
    cwasm = pair.composed(pair.raw["server"], pair.raw["client"])
    for send, receive in ((SIZE, 0), (0, SIZE)):
        capped = pair.soak(cwasm, send, receive)
        assert capped.returncode != 0 and "wasm trap" in capped.stderr, (
            send, receive, capped.stdout, capped.stderr[-3000:])
    free = pair.soak(cwasm, SIZE, SIZE, cap=None)
    assert free.returncode == 0, free.stderr[-3000:]
    assert free.stdout.strip() == expected_soak(CALLS, SIZE, SIZE)
