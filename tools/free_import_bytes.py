"""Stop a componentize-py 0.25.1 component from leaking the bytes it passes to imports.

Why: when guest Python passes a ``bytes`` object where an import takes
``list<u8>`` (every tensor's data, every model part given to ``graph.load``),
componentize-py's runtime copies it into a fresh allocation and hands that to
the host, but never frees it. A long-running component therefore grows by the
size of every input it ever sent: about 3.3 KB per silero-vad step, 165 KB per
load of the digits model. The runtime already has the right mechanism for every
other list: ``wit_dylib_dealloc_bytes(cx, ptr, size, align, defer=1)`` queues a
buffer that is freed when the import call is over. The copy of a ``bytes``
argument simply never gets queued.

What: this tool rewrites the runtime's core module inside a built component.
It adds one function and points the runtime's ``wit_dylib_pop_list`` export at
it. The new function calls the original, and when that returned a copied byte
buffer (a non-null pointer), queues the buffer with the runtime's own
``wit_dylib_dealloc_bytes(..., defer=1)``. Nothing else changes: no existing
function body, no memory contents, no index of anything already present.

Element-by-element lists (the other branch of ``wit_dylib_pop_list``) report a
null pointer there, and the adapter queues those itself, so they are never
queued twice.

Only the componentize-py versions listed in ``LEAKY`` are patched: a fixed
release would free the buffer itself, and queueing it as well would free it
twice. ``./build.sh`` runs this on every component it builds; to patch a
component built some other way::

    python tools/free_import_bytes.py app.wasm          # rewrites app.wasm
    python tools/free_import_bytes.py app.wasm -o fixed.wasm

A component that was already patched is left as it is.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

# componentize-py releases whose runtime leaks bytes arguments to imports.
LEAKY = {"0.25.1"}

POP_LIST = "wit_dylib_pop_list"
DEALLOC = "wit_dylib_dealloc_bytes"
# Custom section that marks a runtime module this tool has already rewritten.
MARK = "wasinn:free-import-bytes"

I32 = 0x7F
POP_LIST_TYPE = ((I32, I32, I32), (I32,))  # (cx, list type, out ptr) -> length
DEALLOC_TYPE = ((I32,) * 5, ())  # (cx, ptr, size, align, defer)


class PatchError(Exception):
    """The component is not shaped the way this tool expects."""


# ------------------------------------------------------------ binary encoding


def read_u32(data: bytes, pos: int) -> tuple[int, int]:
    """Decode an unsigned LEB128 number at ``pos``; return (value, next pos)."""
    value = shift = 0
    while True:
        if pos >= len(data):
            raise PatchError("truncated LEB128 number")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos
        if shift > 35:
            raise PatchError("LEB128 number too long")


def u32(value: int) -> bytes:
    """Encode ``value`` as unsigned LEB128."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def read_name(data: bytes, pos: int) -> tuple[str, int]:
    size, pos = read_u32(data, pos)
    return data[pos : pos + size].decode("utf-8"), pos + size


def name(text: str) -> bytes:
    raw = text.encode("utf-8")
    return u32(len(raw)) + raw


def split_sections(binary: bytes) -> list[tuple[int, bytes]]:
    """A module's or component's sections, after its 8-byte header, as (id, payload)."""
    if binary[:4] != b"\0asm":
        raise PatchError("not a WebAssembly binary")
    sections = []
    pos = 8
    while pos < len(binary):
        section_id = binary[pos]
        size, pos = read_u32(binary, pos + 1)
        sections.append((section_id, binary[pos : pos + size]))
        pos += size
    if pos != len(binary):
        raise PatchError("a section runs past the end of the binary")
    return sections


def join_sections(header: bytes, sections: list[tuple[int, bytes]]) -> bytes:
    return header + b"".join(bytes([sid]) + u32(len(body)) + body for sid, body in sections)


def read_vector(payload: bytes) -> tuple[int, int]:
    """(number of entries, position of the first) of a section that is one vector."""
    return read_u32(payload, 0)


# ------------------------------------------------------------ module structure

SECTION_CUSTOM, SECTION_TYPE, SECTION_IMPORT, SECTION_FUNCTION = 0, 1, 2, 3
SECTION_EXPORT, SECTION_CODE = 7, 10
COMPONENT_CORE_MODULE = 1


def custom_name(payload: bytes) -> str:
    return read_name(payload, 0)[0]


def function_types(payload: bytes) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Every entry of a type section, as (params, results) of value-type bytes."""
    count, pos = read_vector(payload)
    types = []
    for _ in range(count):
        if payload[pos] != 0x60:
            # A GC rec group or subtype: its entries would change the numbering,
            # and the runtime module has none. Refuse rather than guess.
            raise PatchError(f"unsupported type-section form 0x{payload[pos]:02x}")
        pos += 1
        sig = []
        for _ in range(2):
            n, pos = read_u32(payload, pos)
            sig.append(tuple(payload[pos : pos + n]))
            pos += n
        types.append((sig[0], sig[1]))
    return types


def count_imported_functions(payload: bytes) -> int:
    count, pos = read_vector(payload)
    functions = 0
    for _ in range(count):
        _, pos = read_name(payload, pos)
        _, pos = read_name(payload, pos)
        kind = payload[pos]
        pos += 1
        if kind == 0x00:  # function: type index
            functions += 1
            _, pos = read_u32(payload, pos)
        elif kind == 0x01:  # table: reference type, limits
            pos = _skip_limits(payload, pos + 1)
        elif kind == 0x02:  # memory: limits
            pos = _skip_limits(payload, pos)
        elif kind == 0x03:  # global: value type, mutability
            if payload[pos] in (0x63, 0x64):
                raise PatchError("unsupported typed-reference global import")
            pos += 2
        elif kind == 0x04:  # tag: attribute, type index
            _, pos = read_u32(payload, pos + 1)
        else:
            raise PatchError(f"unknown import kind 0x{kind:02x}")
    return functions


def _skip_limits(payload: bytes, pos: int) -> int:
    flags = payload[pos]
    _, pos = read_u32(payload, pos + 1)
    if flags & 0x01:
        _, pos = read_u32(payload, pos)
    return pos


@dataclass
class Export:
    name: str
    kind: int
    index: int


def exports(payload: bytes) -> list[Export]:
    count, pos = read_vector(payload)
    out = []
    for _ in range(count):
        export_name, pos = read_name(payload, pos)
        kind = payload[pos]
        index, pos = read_u32(payload, pos + 1)
        out.append(Export(export_name, kind, index))
    return out


def encode_exports(items: list[Export]) -> bytes:
    return u32(len(items)) + b"".join(name(e.name) + bytes([e.kind]) + u32(e.index) for e in items)


def append_to_vector(payload: bytes, entry: bytes) -> bytes:
    count, pos = read_vector(payload)
    return u32(count + 1) + payload[pos:] + entry


# ------------------------------------------------------------ the patch


def wrapper_body(pop_list: int, dealloc: int) -> bytes:
    """Code of ``len = pop_list(cx, ty, out); if *out: dealloc(cx, *out, len, 1, 1); return len``.

    Parameters 0..2 are cx, ty, out; locals 3 and 4 hold the length and the pointer.
    """
    local_get, local_set, local_tee, call = 0x20, 0x21, 0x22, 0x10
    code = bytes(
        [local_get, 0, local_get, 1, local_get, 2, call]
    ) + u32(pop_list) + bytes(
        [
            local_set, 3,
            local_get, 2,
            0x28, 0x02, 0x00,  # i32.load align=4 offset=0 (memory 0)
            local_tee, 4,
            0x04, 0x40,  # if (no result): the original copied the bytes
            local_get, 0,
            local_get, 4,
            local_get, 3,
            0x41, 1,  # align 1, as the runtime allocated it
            0x41, 1,  # defer: free when this import call is over
            call,
        ]
    ) + u32(dealloc) + bytes(
        [
            0x0B,  # end if
            local_get, 3,
            0x0B,  # end function
        ]
    )
    locals_decl = u32(1) + u32(2) + bytes([I32])  # one group: two i32 locals
    body = locals_decl + code
    return u32(len(body)) + body


def patch_module(module: bytes) -> bytes | None:
    """The runtime module with the wrapper added, or None if ``module`` is not
    componentize-py's runtime. Raises PatchError if it is the runtime but not
    shaped as expected. It would wrap a wrapped module again: callers check
    ``is_patched`` first.
    """
    sections = split_sections(module)
    by_id = {}
    for i, (sid, payload) in enumerate(sections):
        if sid != SECTION_CUSTOM:
            by_id[sid] = i
    if SECTION_EXPORT not in by_id:
        return None
    export_list = exports(sections[by_id[SECTION_EXPORT]][1])
    named = {e.name: e for e in export_list}
    if POP_LIST not in named or DEALLOC not in named:
        return None
    for required in (SECTION_TYPE, SECTION_IMPORT, SECTION_FUNCTION, SECTION_CODE):
        if required not in by_id:
            raise PatchError(f"the runtime module has no section {required}")

    types = function_types(sections[by_id[SECTION_TYPE]][1])
    imported = count_imported_functions(sections[by_id[SECTION_IMPORT]][1])
    function_payload = sections[by_id[SECTION_FUNCTION]][1]
    defined, pos = read_vector(function_payload)
    type_of = []
    for _ in range(defined):
        type_index, pos = read_u32(function_payload, pos)
        type_of.append(type_index)

    def signature(export: Export) -> tuple[int, tuple[tuple[int, ...], tuple[int, ...]]]:
        if export.kind != 0x00 or export.index < imported:
            raise PatchError(f"{export.name} is not a function the runtime defines")
        type_index = type_of[export.index - imported]
        return type_index, types[type_index]

    pop_type_index, pop_sig = signature(named[POP_LIST])
    _, dealloc_sig = signature(named[DEALLOC])
    if pop_sig != POP_LIST_TYPE or dealloc_sig != DEALLOC_TYPE:
        raise PatchError(f"unexpected signatures: {POP_LIST} {pop_sig}, {DEALLOC} {dealloc_sig}")

    wrapper = imported + defined  # appended last, so no existing index moves
    body = wrapper_body(named[POP_LIST].index, named[DEALLOC].index)
    for export in export_list:
        if export.name == POP_LIST:
            export.index = wrapper

    out = list(sections)
    out[by_id[SECTION_FUNCTION]] = (SECTION_FUNCTION, append_to_vector(function_payload, u32(pop_type_index)))
    out[by_id[SECTION_CODE]] = (SECTION_CODE, append_to_vector(sections[by_id[SECTION_CODE]][1], body))
    out[by_id[SECTION_EXPORT]] = (SECTION_EXPORT, encode_exports(export_list))
    out.append((SECTION_CUSTOM, name(MARK)))
    return join_sections(module[:8], out)


def is_patched(module: bytes) -> bool:
    return any(sid == SECTION_CUSTOM and custom_name(p) == MARK for sid, p in split_sections(module))


def patch_component(component: bytes) -> tuple[bytes, bool]:
    """Return (component, changed). Exactly one top-level core module must be
    componentize-py's runtime; it gets the wrapper unless it already has it.
    Raises PatchError for anything else, including malformed binaries.
    """
    try:
        return _patch_component(component)
    except (IndexError, UnicodeDecodeError) as err:
        raise PatchError(f"malformed binary ({err})") from err


def _patch_component(component: bytes) -> tuple[bytes, bool]:
    sections = split_sections(component)
    if component[4:8] != b"\x0d\x00\x01\x00":
        raise PatchError("not a component (a core module was given?)")
    runtime = []
    for i, (sid, payload) in enumerate(sections):
        if sid != COMPONENT_CORE_MODULE:
            continue
        if is_patched(payload):
            return component, False
        patched = patch_module(payload)
        if patched is not None:
            runtime.append((i, patched))
    if len(runtime) != 1:
        raise PatchError(
            f"expected one componentize-py runtime module exporting {POP_LIST}, found {len(runtime)}"
        )
    index, patched = runtime[0]
    sections[index] = (COMPONENT_CORE_MODULE, patched)
    return join_sections(component[:8], sections), True


def installed_componentize_py() -> str | None:
    try:
        return metadata.version("componentize-py")
    except metadata.PackageNotFoundError:
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("component", type=Path)
    parser.add_argument("-o", "--output", type=Path, help="where to write (default: in place)")
    parser.add_argument(
        "--componentize-py",
        dest="version",
        default=installed_componentize_py(),
        help="version that built the component (default: the installed one)",
    )
    args = parser.parse_args(argv)
    output = args.output or args.component
    if args.version is None:
        print("free_import_bytes: componentize-py is not installed; pass --componentize-py VERSION",
              file=sys.stderr)
        return 1
    if args.version not in LEAKY:
        # A fixed runtime frees the copy itself; adding a second free would corrupt the heap.
        print(
            f"free_import_bytes: componentize-py {args.version} is not a known leaky version "
            f"({', '.join(sorted(LEAKY))}); left {args.component} unchanged",
            file=sys.stderr,
        )
        if output != args.component:
            output.write_bytes(args.component.read_bytes())
        return 0
    try:
        data, changed = patch_component(args.component.read_bytes())
    except PatchError as err:
        print(f"free_import_bytes: cannot patch {args.component}: {err}", file=sys.stderr)
        return 1
    tmp = output.with_name(output.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(output)
    if not changed:
        print(f"free_import_bytes: {args.component} was already patched", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
