"""Get extension modules that use WebAssembly exception handling past componentize-py.

A C extension module that opts into setjmp/longjmp (``/* build_ext: sjlj */``,
see ``build_ext.py``) is compiled into WebAssembly exception handling (EH):
its setjmp-calling functions hold ``try_table`` blocks, ``__wasm_longjmp``
holds a ``throw``, and the module defines a tag, ``__c_longjmp``. wasmtime 49
runs that by default, but componentize-py 0.25.1 pre-initialises the linked
component at build time in an embedded wasmtime whose configuration leaves
the exceptions proposal off, and refuses any module with a tag or an EH
instruction ("exceptions proposal not enabled").

So build_ext writes two files per such module:

- ``NAME.cpython-314-wasm32-wasi.so``, the *stub* componentize-py links
  (:func:`make_stub`): the real module with every function body that holds an
  EH instruction replaced by ``unreachable`` and the tag section left out;
  everything else byte for byte the same. Those functions must not run at
  import time (pre-init); a module's ``PyInit`` must not call setjmp. A
  *stripped* stub (``make_stub(strip=True)``, used for numpy's C++ built with
  -fwasm-exceptions, tools/guest_packages.py) keeps those functions
  running instead: their code without EH (:func:`strip_eh`), exnref made i32 in
  the Type section too; the splice then puts the real Type section back.
- ``NAME.sjlj.wasm``, the real module, which componentize-py ignores (it
  links only files named with the guest's extension suffix).

After componentize-py, this tool finds each stub's core module inside the
component by its Code section, checks that componentize-py left the parts
that must match alone (types, imports, functions, the Code section itself),
and puts the real Code section and the Tag section back
(:func:`splice_component`). It refuses, naming the module, when a stub is
missing, was not made from its real module, or when componentize-py changed
the module. Drop this step once a componentize-py pre-initialises with
exceptions enabled (then link the real module under the suffix directly).

    sjlj_splice.py COMPONENT FOLDER [FOLDER ...]

Rewrites COMPONENT in place (a rename: no reader sees half a file) with every
``*.sjlj.wasm`` found under the FOLDERs (componentize-py's ``-p`` folders)
spliced back; with none found, it leaves COMPONENT alone. Exit status 0: done;
1: refused (the message says why).

Only the binary layout of modules and components is used; no external tool.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from wasm_binary import MAGIC, BinaryError, Section, join_sections, read_u32, split_sections, u32

#: What build_ext calls the real module beside its stub ``NAME<suffix>``.
REAL_SUFFIX = ".sjlj.wasm"
#: The guest's extension suffix (build_ext.GUEST_SOABI): the stub's name.
STUB_SUFFIX = ".cpython-314-wasm32-wasi.so"

_MODULE_VERSION = b"\x01\x00\x00\x00"
_TYPE, _IMPORT, _FUNCTION, _CODE, _TAG = 1, 2, 3, 10, 13
#: Module sections the Tag section comes before (the binary format's order:
#: type import function table memory tag global export start element ...).
_AFTER_TAG = frozenset({6, 7, 8, 9, 10, 11, 12})
#: Component sections: a core module, a nested component.
_CORE_MODULE, _COMPONENT = 1, 4
#: A function body with no locals: ``unreachable end``.
STUB_BODY = b"\x00\x00\x0b"


class SpliceError(BinaryError):
    """The component cannot be spliced; the message says why."""


# ---------------------------------------------------------------- the binary format


def _skip_leb(data: bytes, i: int) -> int:
    """The index after the LEB128 number (signed or not) at ``data[i:]``."""
    while data[i] & 0x80:
        i += 1
    return i + 1


def _is_module(binary: bytes) -> bool:
    return binary[:4] == MAGIC and binary[4:8] == _MODULE_VERSION


def code_bodies(payload: bytes) -> list[bytes]:
    """The function bodies of a Code section's payload (locals and instructions)."""
    count, i = read_u32(payload, 0)
    bodies = []
    for _ in range(count):
        size, i = read_u32(payload, i)
        bodies.append(payload[i : i + size])
        i += size
    if i != len(payload):
        raise SpliceError("the Code section has bytes after its last body")
    return bodies


def code_payload(bodies: Sequence[bytes]) -> bytes:
    """A Code section's payload from function bodies."""
    return u32(len(bodies)) + b"".join(u32(len(b)) + b for b in bodies)


# ---------------------------------------------------------------- finding EH instructions

#: Opcodes of exception handling, legacy and exnref: try catch throw rethrow
#: throw_ref delegate catch_all try_table.
EH_OPCODES = frozenset({0x06, 0x07, 0x08, 0x09, 0x0A, 0x18, 0x19, 0x1F})
_NO_IMMEDIATE = frozenset({0x00, 0x01, 0x05, 0x0A, 0x0B, 0x0F, 0x19, 0x1A, 0x1B, 0xD1, 0xD3, 0xD4})
_ONE_INDEX = frozenset({0x07, 0x08, 0x09, 0x0C, 0x0D, 0x10, 0x12, 0x18, 0x20, 0x21, 0x22, 0x23,
                        0x24, 0x25, 0x26, 0xD2, 0xD5, 0xD6})  # fmt: skip
#: 0xFD (SIMD) sub-opcodes with a memarg; with a memarg and a lane; with a lane.
_SIMD_MEMARG = frozenset(range(0, 12)) | {92, 93}
_SIMD_MEMARG_LANE = frozenset(range(84, 92))
_SIMD_LANE = frozenset(range(21, 35))


def _blocktype(body: bytes, i: int) -> int:
    """The index after a block type: empty (0x40), a value type, or a type index."""
    if body[i] in (0x63, 0x64):  # (ref null? heaptype)
        return _skip_leb(body, i + 1)
    if body[i] & 0xC0 == 0x40:  # 0x40 or a one-byte value type (i32 ... exnref)
        return i + 1
    return _skip_leb(body, i)  # a type index (a non-negative s33)


def uses_eh(body: bytes) -> bool:
    """Whether a function body holds an exception-handling instruction.

    Decodes every instruction (MVP, sign-ext, saturating conversions, bulk
    memory, reference types, multi-value, SIMD, legacy and exnref EH): an
    opcode byte found by scanning could be an immediate. Raises SpliceError
    on an instruction it does not know rather than guess.

    Example::

        >>> uses_eh(bytes([0, 0x41, 0x08, 0x1A, 0x0B]))   # i32.const 8; drop; end
        False
        >>> uses_eh(bytes([0, 0x41, 0, 0x08, 0x00, 0x0B]))  # i32.const 0; throw 0; end
        True
    """
    count, i = read_u32(body, 0)
    for _ in range(count):
        i = _skip_leb(body, i) + 1  # how many locals, and their type
    found = False
    while i < len(body):
        op = body[i]
        i += 1
        found = found or op in EH_OPCODES
        if op in (0x02, 0x03, 0x04, 0x06):  # block loop if try
            i = _blocktype(body, i)
        elif op == 0x1F:  # try_table blocktype vec(catch)
            i = _blocktype(body, i)
            n, i = read_u32(body, i)
            for _ in range(n):
                kind = body[i]
                i += 1
                if kind in (0, 1):  # catch / catch_ref: a tag
                    i = _skip_leb(body, i)
                i = _skip_leb(body, i)  # the label
        elif op in _NO_IMMEDIATE or 0x45 <= op <= 0xC4:
            pass
        elif op in _ONE_INDEX or op in (0x41, 0x42):
            i = _skip_leb(body, i)
        elif op == 0x0E:  # br_table
            n, i = read_u32(body, i)
            for _ in range(n + 1):
                i = _skip_leb(body, i)
        elif op in (0x11, 0x13):  # call_indirect, return_call_indirect: type, table
            i = _skip_leb(body, _skip_leb(body, i))
        elif op == 0x1C:  # select with types
            n, i = read_u32(body, i)
            i += n
        elif op == 0xD0:  # ref.null heaptype
            i = _skip_leb(body, i)
        elif 0x28 <= op <= 0x3E:  # loads and stores: memarg
            i = _skip_leb(body, _skip_leb(body, i))
        elif op in (0x3F, 0x40):  # memory.size, memory.grow
            i = _skip_leb(body, i)
        elif op == 0x43:
            i += 4
        elif op == 0x44:
            i += 8
        elif op == 0xFC:
            i = _prefixed_fc(body, i)
        elif op == 0xFD:
            i = _prefixed_fd(body, i)
        else:
            raise SpliceError(f"unknown instruction 0x{op:02x} at byte {i - 1} of a function body")
    return found


def _prefixed_fc(body: bytes, i: int) -> int:
    sub, i = read_u32(body, i)
    if sub <= 7:  # saturating conversions
        return i
    if sub in (8, 12, 14):  # memory.init, table.init, table.copy: two indices
        return _skip_leb(body, _skip_leb(body, i))
    if sub in (9, 11, 13, 15, 16, 17):  # data.drop memory.fill elem.drop table.grow/size/fill
        return _skip_leb(body, i)
    if sub == 10:  # memory.copy
        return _skip_leb(body, _skip_leb(body, i))
    raise SpliceError(f"unknown instruction 0xfc {sub} in a function body")


def _prefixed_fd(body: bytes, i: int) -> int:
    sub, i = read_u32(body, i)
    if sub in _SIMD_MEMARG:
        return _skip_leb(body, _skip_leb(body, i))
    if sub in _SIMD_MEMARG_LANE:
        return _skip_leb(body, _skip_leb(body, i)) + 1
    if sub in (12, 13):  # v128.const, i8x16.shuffle: 16 bytes
        return i + 16
    if sub in _SIMD_LANE:
        return i + 1
    return i  # every other SIMD instruction has no immediate


# ---------------------------------------------------------------- stripping EH

#: exnref's value type, the exn and noexn heap types, and i32, which stands in
#: for them in a stripped stub.
_EXNREF, _NOEXN, _I32 = 0x69, 0x74, 0x7F
_REF_PREFIXES = (0x63, 0x64)  # (ref null ht), (ref ht)
#: Instructions on references whose i32 stand-in would differ: refused.
_REF_OPS = frozenset({0xD1, 0xD3, 0xD4, 0xD5, 0xD6})
#: Legacy EH (try catch rethrow delegate catch_all): wasm-opt translated it away.
_LEGACY_EH = frozenset({0x06, 0x07, 0x09, 0x18, 0x19})


def _valtype(data: bytes, i: int) -> tuple[bytes, int]:
    """The value type at ``data[i:]`` with exnref made i32, and the index after it."""
    if data[i] in _REF_PREFIXES and data[i + 1] in (_EXNREF, _NOEXN):
        return bytes([_I32]), i + 2
    if data[i] in _REF_PREFIXES:
        end = _skip_leb(data, i + 1)
        return data[i:end], end
    return bytes([_I32 if data[i] == _EXNREF else data[i]]), i + 1


def _stripped_blocktype(body: bytes, i: int) -> tuple[bytes, int]:
    if body[i] == 0x40 or body[i] == _EXNREF or body[i] in _REF_PREFIXES:
        return _valtype(body, i) if body[i] != 0x40 else (b"\x40", i + 1)
    end = _blocktype(body, i)
    return body[i:end], end


def strip_eh(body: bytes) -> bytes:
    """A function body that does what ``body`` does as long as nothing is thrown,
    with no exception handling: ``try_table`` becomes ``block`` (its catch
    clauses go), ``throw`` and ``throw_ref`` become ``unreachable``, exnref
    becomes i32 (in locals, block types, typed ``select``, ``ref.null``). For
    componentize-py's pre-init, which runs such a module without the exceptions
    proposal (a throw there traps, as an uncaught exception would).

    SpliceError on legacy EH (translate it with wasm-opt first) or on an
    instruction on references whose i32 stand-in would not validate.

    Example::

        >>> # try_table (catch_all 0) i32.const 1 drop end; throw_ref; end
        >>> strip_eh(bytes([0, 0x1F, 0x40, 1, 2, 0, 0x41, 1, 0x1A, 0x0B, 0x0A, 0x0B])).hex()
        '00024041011a0b000b'
    """
    out = bytearray()
    count, i = read_u32(body, 0)
    out += u32(count)
    for _ in range(count):
        j = _skip_leb(body, i)
        out += body[i:j]
        vt, i = _valtype(body, j)
        out += vt
    while i < len(body):
        op = body[i]
        start = i
        i += 1
        if op in _LEGACY_EH:
            raise SpliceError(f"legacy exception handling (0x{op:02x}) in a body to strip")
        if op in _REF_OPS:
            raise SpliceError(f"reference instruction 0x{op:02x} in a body to strip")
        if op in (0x02, 0x03, 0x04):  # block loop if
            bt, i = _stripped_blocktype(body, i)
            out.append(op)
            out += bt
        elif op == 0x1F:  # try_table blocktype vec(catch) -> block blocktype
            bt, i = _stripped_blocktype(body, i)
            n, i = read_u32(body, i)
            for _ in range(n):
                kind = body[i]
                i += 1
                if kind in (0, 1):
                    i = _skip_leb(body, i)
                i = _skip_leb(body, i)
            out.append(0x02)
            out += bt
        elif op == 0x08:  # throw tag -> unreachable
            i = _skip_leb(body, i)
            out.append(0x00)
        elif op == 0x0A:  # throw_ref -> unreachable
            out.append(0x00)
        elif op == 0x1C:  # select with types
            n, i = read_u32(body, i)
            out.append(op)
            out += u32(n)
            for _ in range(n):
                vt, i = _valtype(body, i)
                out += vt
        elif op == 0xD0:  # ref.null heaptype
            end = _skip_leb(body, i)
            if body[i] in (_EXNREF, _NOEXN):
                out += b"\x41\x00"  # i32.const 0
            else:
                out += body[start:end]
            i = end
        else:
            # every other instruction is copied as it is: find its end the way
            # uses_eh does, on a one-instruction body
            i = _instruction_end(body, start)
            out += body[start:i]
    return bytes(out)


def _instruction_end(body: bytes, i: int) -> int:
    """The index after the (non-EH, non-block) instruction at ``body[i:]``."""
    op = body[i]
    i += 1
    if op in _NO_IMMEDIATE or 0x45 <= op <= 0xC4:
        return i
    if op in _ONE_INDEX or op in (0x41, 0x42):
        return _skip_leb(body, i)
    if op == 0x0E:
        n, i = read_u32(body, i)
        for _ in range(n + 1):
            i = _skip_leb(body, i)
        return i
    if op in (0x11, 0x13):
        return _skip_leb(body, _skip_leb(body, i))
    if 0x28 <= op <= 0x3E:
        return _skip_leb(body, _skip_leb(body, i))
    if op in (0x3F, 0x40):
        return _skip_leb(body, i)
    if op == 0x43:
        return i + 4
    if op == 0x44:
        return i + 8
    if op == 0xFC:
        return _prefixed_fc(body, i)
    if op == 0xFD:
        return _prefixed_fd(body, i)
    raise SpliceError(f"unknown instruction 0x{op:02x} at byte {i - 1} of a function body")


def _strip_types(payload: bytes) -> bytes:
    """A Type section's payload with exnref made i32 (function types only)."""
    count, i = read_u32(payload, 0)
    out = bytearray(u32(count))
    for _ in range(count):
        if payload[i] != 0x60:
            raise SpliceError(f"type form 0x{payload[i]:02x} is not a function type")
        out.append(0x60)
        i += 1
        for _ in range(2):  # params, results
            n, i = read_u32(payload, i)
            out += u32(n)
            for _ in range(n):
                vt, i = _valtype(payload, i)
                out += vt
    if i != len(payload):
        raise SpliceError("the Type section has bytes after its last type")
    return bytes(out)


# ---------------------------------------------------------------- the stub


@dataclass(frozen=True)
class Stub:
    """A stub module and which defined functions (by index in the Code section) it stubs."""

    binary: bytes
    stubbed: tuple[int, ...]


def make_stub(real: bytes, strip: bool = False) -> Stub:
    """The module componentize-py links in place of ``real``: every function
    body with an EH instruction becomes ``unreachable`` (with ``strip``: the
    same code without EH, :func:`strip_eh`, and exnref made i32 in the Type
    section too, so that it runs at pre-init), the Tag section goes; all else
    is byte for byte ``real``'s. SpliceError when ``real`` is not a core module
    or has no EH code."""
    if not _is_module(real):
        raise SpliceError("not a WebAssembly core module")
    out: list[Section] = []
    stubbed: list[int] = []
    for sid, payload in split_sections(real):
        if sid == _TAG:
            continue
        if sid == _TYPE and strip:
            payload = _strip_types(payload)
        if sid == _CODE:
            bodies = code_bodies(payload)
            stubbed = [k for k, body in enumerate(bodies) if uses_eh(body)]
            payload = code_payload([(strip_eh(b) if strip else STUB_BODY) if k in stubbed else b
                                    for k, b in enumerate(bodies)])  # fmt: skip
        out.append((sid, payload))
    if not stubbed:
        raise SpliceError("the module has no exception-handling code to hide")
    return Stub(join_sections(real[:8], out), tuple(stubbed))


# ---------------------------------------------------------------- splicing


@dataclass(frozen=True)
class Pair:
    """A real module and the stub componentize-py linked in its place."""

    name: str
    real: bytes
    stub: bytes


def find_pairs(folders: Sequence[Path]) -> list[Pair]:
    """Every ``NAME.sjlj.wasm`` under ``folders`` with its stub ``NAME<STUB_SUFFIX>``.

    SpliceError when a stub is missing or is not the stub of its real module
    (built from another version of it)."""
    seen: set[Path] = set()
    pairs: list[Pair] = []
    for folder in folders:
        for real_path in sorted(folder.rglob(f"*{REAL_SUFFIX}")):
            real_path = real_path.resolve()
            if real_path in seen:
                continue
            seen.add(real_path)
            stub_path = real_path.with_name(real_path.name[: -len(REAL_SUFFIX)] + STUB_SUFFIX)
            if not stub_path.is_file():
                raise SpliceError(
                    f"{real_path} has no stub {stub_path.name} beside it, so componentize-py "
                    f"linked no module to put it in; rebuild it (./build.sh setup or build)."
                )
            real, stub = real_path.read_bytes(), stub_path.read_bytes()
            try:
                # build_ext's sjlj modules have unreachable stubs; C++ modules
                # built with -fwasm-exceptions (tools/guest_packages/numpy) stripped ones
                expected = (make_stub(real).binary, make_stub(real, strip=True).binary)
            except BinaryError as exc:
                raise SpliceError(f"{real_path}: {exc}") from None
            if stub not in expected:
                raise SpliceError(
                    f"{stub_path} is not the stub of {real_path.name} (one of them is from "
                    f"another build); rebuild them (./build.sh setup or build)."
                )
            pairs.append(Pair(str(real_path), real, stub))
    return pairs


def splice_component(component: bytes, pairs: Sequence[Pair]) -> bytes:
    """``component`` with each pair's stub module replaced by its real code.

    A stub's module is found by its Code section; it must be found exactly
    once, with the Type, Import and Function sections of the stub and no Tag
    section (else componentize-py changed the module and SpliceError says so).
    """
    parsed = []
    for pair in pairs:
        stub, real = dict(split_sections(pair.stub)), dict(split_sections(pair.real))
        parsed.append((pair, stub, real))
    hits = [0] * len(parsed)

    def fix_module(module: bytes) -> bytes:
        if not _is_module(module):
            return module
        parts = split_sections(module)
        mine = dict(parts)
        for k, (pair, stub, real) in enumerate(parsed):
            if mine.get(_CODE) != stub[_CODE]:
                continue
            for sid, what in ((_TYPE, "Type"), (_IMPORT, "Import"), (_FUNCTION, "Function")):
                if mine.get(sid) != stub.get(sid):
                    raise SpliceError(
                        f"componentize-py changed the {what} section of {Path(pair.name).name}'s "
                        f"stub module, so its real code may no longer fit; refusing to splice "
                        f"(check tools/sjlj_splice.py against this componentize-py)."
                    )
            if _TAG in mine:
                raise SpliceError(f"{Path(pair.name).name}'s stub module has a Tag section")
            hits[k] += 1
            out: list[Section] = []
            for sid, payload in parts:
                if sid in _AFTER_TAG and _TAG in real and all(s != _TAG for s, _ in out):
                    out.append((_TAG, real[_TAG]))
                out.append((sid, real[sid] if sid in (_CODE, _TYPE) else payload))
            return join_sections(module[:8], out)
        return module

    def walk(binary: bytes) -> bytes:
        out: list[Section] = []
        for sid, payload in split_sections(binary):
            if sid == _CORE_MODULE:
                payload = fix_module(payload)
            elif sid == _COMPONENT:
                payload = walk(payload)
            out.append((sid, payload))
        return join_sections(binary[:8], out)

    if component[:4] != MAGIC or _is_module(component):
        raise SpliceError("not a WebAssembly component")
    spliced = walk(component)
    for (pair, _, real), count in zip(parsed, hits, strict=True):
        if count == 0 and real[_CODE] in component:
            raise SpliceError(
                f"{Path(pair.name).name}'s real code is in the component already (spliced "
                f"before?), and its stub module is not; refusing to splice."
            )
        if count != 1:
            raise SpliceError(
                f"expected {Path(pair.name).name}'s stub module once in the component, found it "
                f"{count} times: componentize-py did not link it unchanged (or linked it twice); "
                f"refusing to splice."
            )
    return spliced


def splice_file(component: Path, folders: Sequence[Path]) -> list[Pair]:
    """Splice every real module under ``folders`` into ``component`` (in place)."""
    pairs = find_pairs(folders)
    if not pairs:
        return []
    spliced = splice_component(component.read_bytes(), pairs)
    tmp = component.with_name(f".{component.name}.{os.getpid()}.splice")
    try:
        tmp.write_bytes(spliced)
        tmp.replace(component)
    finally:
        tmp.unlink(missing_ok=True)
    return pairs


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Put the real code of setjmp/longjmp extension modules (*.sjlj.wasm under "
        "the FOLDERs) back into a component componentize-py built from their stubs."
    )
    parser.add_argument("component", type=Path)
    parser.add_argument("folders", nargs="+", type=Path, metavar="FOLDER")
    args = parser.parse_args(argv)
    try:
        done = splice_file(args.component, args.folders)
    except (BinaryError, OSError) as exc:
        print(f"sjlj_splice: {args.component}: {exc}", file=sys.stderr)
        return 1
    for pair in done:
        print(f"sjlj_splice: put {Path(pair.name).name} back into {args.component.name}",
              file=sys.stderr)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
