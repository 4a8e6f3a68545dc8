"""Stop a componentize-py 0.25.1 component from leaking every byte list it lowers.

Why: whenever guest Python hands a ``bytes`` object to the canonical ABI as a
``list<u8>``, componentize-py 0.25.1's runtime (``maybe_pop_list`` in its
``runtime/src/lib.rs``) copies it into a fresh allocation and never frees the
copy. Every tensor's data and model part given to an import, and every
``bytes`` an export returns, stays in the component's memory for good: about
3.3 KB per silero-vad step, 165 KB per load of the digits model. The runtime
has the right mechanism for every other list: ``wit_dylib_dealloc_bytes(cx,
ptr, size, align, defer=1)`` queues a buffer that is freed when the call is
over. The byte copy simply never gets queued.

What: this tool rewrites the runtime's core module inside a built component.
It adds one function and points the runtime's ``wit_dylib_pop_list`` export at
it. The new function calls the original, and when that returned a copied byte
buffer (a non-null pointer), queues the buffer with the runtime's own
``wit_dylib_dealloc_bytes(..., defer=1)``. Nothing else changes: no existing
function body, no memory contents, no index of anything already present.

Who calls ``wit_dylib_pop_list``, and why queueing there is safe everywhere:
only the glue code wit-dylib 0.245 generates (``FunctionCompiler::lower``, for
any list, also one nested in a record, tuple, variant, option, result or other
list). The glue lowers into a fresh call context (the runtime's ``MyCall``) in
four places:

1. the arguments of an import call (``call_import``): the context is dropped
   when the import has returned, or for an async import that is still pending,
   when its promise completes;
2. the result of a sync export: the context is dropped by ``export_finish`` in
   the export's post-return, which the host calls after it copied the result;
3. the result of an async export (``call_task_return``): dropped after
   ``task.return``, which copies the result;
4. elements of stream and future writes (``lower_payload``): dropped when the
   write is over.

Dropping the context frees what was queued on it, and in the canonical ABI the
other side always copies a list out of this memory before that point; it never
takes ownership. The glue's other branch (element by element, for lists the
runtime does not copy in one piece) already queues its ``cabi_realloc`` buffer
on the same context the same way (``defer_deallocate_lowered_list``), so the
byte copy now lives exactly as long as every other lowered list: no
use-after-free. And no double free: in 0.25.1 nothing else frees the copy (the
glue keeps a non-null pointer as it is, and the context frees only what was
queued), while for the element-by-element branch the runtime reports a null
pointer (``raw_pop_list``), for which the wrapper queues nothing. An empty
``bytes`` gets a real (minimal) allocation, which the wrapper frees too.
tests/test_free_import_bytes.py passes ``list<u8>`` to an import and gets
``list<u8>`` and ``list<list<u8>>`` back from exports, 400 times each, sync and
async, empty lists included: every answer is right, and memory stays under a
cap that the unpatched runtime exceeds on either path alone.

Which components: componentize-py 0.25.1 records its own name nowhere in a
component (the producers sections say only ``wit-component 0.245.1`` and
``component-init-transform 0.2.0``), but it embeds its runtime module
unchanged, byte for byte, in every component it builds. So the runtime module's
SHA-256 identifies the release: ``KNOWN_RUNTIMES`` lists the runtimes known to
leak (the sync and the async variant, from the Linux x86_64 wheel). A
``componentize-py`` entry in a producers section, should a release write one,
is used when the hash is unknown. Anything else is refused: a fixed release
frees the buffer itself, and queueing it as well would free it twice. If you
have checked that your componentize-py build has the leak (another platform's
wheel builds its own runtime, so its hash differs), say so with
``--assume-version``. ``./build.sh`` runs this on every component it builds; to
patch a component built some other way::

    python tools/free_import_bytes.py app.wasm          # rewrites app.wasm
    python tools/free_import_bytes.py app.wasm -o fixed.wasm
    python tools/free_import_bytes.py app.wasm --assume-version 0.25.1

A component that was already patched is left as it is.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from dataclasses import dataclass, field
from pathlib import Path

from wasm_binary import BinaryError, join_sections, read_u32, split_sections, u32

# componentize-py releases whose runtime leaks the byte lists it lowers.
LEAKY = {"0.25.1"}

# SHA-256 of componentize-py's runtime core module as a release embeds it in
# every component (the sync runtime, and the async one for worlds with async
# functions) -> that release. tests/test_free_import_bytes.py builds both with
# the pinned componentize-py and checks they are listed here.
KNOWN_RUNTIMES = {
    "d6d1faffc282de30f35fc38cda9fd558f3a22a2df24f0868104847f22bddf4dd": "0.25.1",
    "31f563ff6a0d1daefe66c7ea769f48afefc597eba2ff1ec78f5e60444eb2fe8f": "0.25.1",
}

POP_LIST = "wit_dylib_pop_list"
DEALLOC = "wit_dylib_dealloc_bytes"
# Custom section that marks a runtime module this tool has already rewritten.
MARK = "wasinn:free-import-bytes"
PRODUCERS = "producers"

I32 = 0x7F
POP_LIST_TYPE = ((I32, I32, I32), (I32,))  # (cx, list type, out ptr) -> length
DEALLOC_TYPE = ((I32,) * 5, ())  # (cx, ptr, size, align, defer)


class PatchError(Exception):
    """The component cannot be patched safely: not shaped the way this tool
    expects, or built by a componentize-py it does not know.

    >>> try:
    ...     patch_component(b"not wasm at all")
    ... except PatchError as err:
    ...     print(err)
    malformed binary (not a WebAssembly binary)
    """


class NotLeaky(Exception):
    """The component was built by a componentize-py that does not leak: there
    is nothing to fix, and patching would free the copy twice.

    >>> try:
    ...     patch_component(Path("app.wasm").read_bytes(), assume_version="0.26.0")
    ... except NotLeaky as why:
    ...     print(why)  # doctest: +SKIP
    componentize-py 0.26.0 (as assumed) is not a known leaky version (0.25.1)
    """


# ------------------------------------------------------------ binary encoding


def read_name(data: bytes, pos: int) -> tuple[str, int]:
    size, pos = read_u32(data, pos)
    if pos + size > len(data):
        raise PatchError("truncated name")
    return data[pos : pos + size].decode("utf-8"), pos + size


def name(text: str) -> bytes:
    raw = text.encode("utf-8")
    return u32(len(raw)) + raw


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
    for i, (sid, _) in enumerate(sections):
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
    code_payload = sections[by_id[SECTION_CODE]][1]
    out[by_id[SECTION_FUNCTION]] = (SECTION_FUNCTION,
                                    append_to_vector(function_payload, u32(pop_type_index)))
    out[by_id[SECTION_CODE]] = (SECTION_CODE, append_to_vector(code_payload, body))
    out[by_id[SECTION_EXPORT]] = (SECTION_EXPORT, encode_exports(export_list))
    out.append((SECTION_CUSTOM, name(MARK)))
    return join_sections(module[:8], out)


def is_patched(module: bytes) -> bool:
    """Whether ``module`` carries this tool's mark (it was rewritten already).

    >>> is_patched(b"\\0asm\\x01\\x00\\x00\\x00")
    False
    """
    return any(sid == SECTION_CUSTOM and custom_name(p) == MARK
               for sid, p in split_sections(module))


# ------------------------------------------------------------ which componentize-py


def read_producers(payload: bytes) -> list[tuple[str, str, str]]:
    """The entries of a ``producers`` custom section as (field, name, version).

    The section (tool-conventions' ProducersSection.md) is a vector of fields
    (``language``, ``processed-by``, ``sdk``), each a vector of (name, version).

    >>> section = name("producers") + u32(1) + name("sdk") + u32(1) + name("x") + name("1.0")
    >>> read_producers(section)
    [('sdk', 'x', '1.0')]
    """
    _, pos = read_name(payload, 0)
    fields, pos = read_u32(payload, pos)
    entries = []
    for _ in range(fields):
        field_name, pos = read_name(payload, pos)
        count, pos = read_u32(payload, pos)
        for _ in range(count):
            tool, pos = read_name(payload, pos)
            version, pos = read_name(payload, pos)
            entries.append((field_name, tool, version))
    if pos != len(payload):
        raise PatchError("the producers section has trailing bytes")
    return entries


def producers_of(binary: bytes) -> list[tuple[str, str, str]]:
    """Every producers entry among the top-level sections of a module or component."""
    entries = []
    for sid, payload in split_sections(binary):
        if sid == SECTION_CUSTOM and custom_name(payload) == PRODUCERS:
            entries.extend(read_producers(payload))
    return entries


@dataclass
class Identity:
    """What a component says about the componentize-py that built it.

    ``version`` is that release, or None when neither the runtime module's
    hash nor a producers section names one; ``evidence`` says which.

    >>> Identity(0, "d6d1...", "0.25.1", "its runtime module's sha256", False).describe()
    'runtime module sha256 d6d1...; producers: none'
    """

    index: int  # the runtime module's position among the component's sections
    sha256: str
    version: str | None
    evidence: str
    patched: bool
    producers: list[tuple[str, str, str]] = field(default_factory=list)

    def describe(self) -> str:
        """The evidence for messages: the runtime module's hash and every producer named."""
        tools = ", ".join(f"{tool} {version}" for _, tool, version in self.producers) or "none"
        return f"runtime module sha256 {self.sha256}; producers: {tools}"


def _runtime_sections(component: bytes) -> tuple[list[tuple[int, bytes]], list[int]]:
    """The component's sections and the indices of those that are the runtime
    (a top-level core module exporting ``wit_dylib_pop_list``, patched or not)."""
    sections = split_sections(component)
    if component[4:8] != b"\x0d\x00\x01\x00":
        raise PatchError("not a component (a core module was given?)")
    found = []
    for i, (sid, payload) in enumerate(sections):
        if sid != COMPONENT_CORE_MODULE:
            continue
        export_sections = [p for s, p in split_sections(payload) if s == SECTION_EXPORT]
        if any(e.name == POP_LIST for p in export_sections for e in exports(p)):
            found.append(i)
    if len(found) != 1:
        raise PatchError(
            f"expected one componentize-py runtime module exporting {POP_LIST}, found {len(found)}"
        )
    return sections, found


def identify(component: bytes) -> Identity:
    """Find the componentize-py runtime in ``component`` and the release that built it.

    Raises PatchError for malformed binaries and for components without
    exactly one runtime module.

    >>> identify(Path("build/digits.wasm").read_bytes()).version  # doctest: +SKIP
    '0.25.1'
    """
    try:
        return _identify(component)
    except (IndexError, UnicodeDecodeError, BinaryError) as err:
        raise PatchError(f"malformed binary ({err})") from err


def _identify(component: bytes) -> Identity:
    sections, (index,) = _runtime_sections(component)
    module = sections[index][1]
    sha256 = hashlib.sha256(module).hexdigest()
    entries = producers_of(component) + producers_of(module)
    patched = is_patched(module)
    if sha256 in KNOWN_RUNTIMES:
        return Identity(index, sha256, KNOWN_RUNTIMES[sha256], "its runtime module's sha256",
                        patched, entries)
    named = sorted({version for _, tool, version in entries if tool == "componentize-py"})
    if len(named) == 1:
        return Identity(index, sha256, named[0], "its producers section", patched, entries)
    return Identity(index, sha256, None, "nothing", patched, entries)


def patch_component(component: bytes, assume_version: str | None = None) -> tuple[bytes, bool]:
    """Return (component, changed): the component with its runtime's byte copies
    freed, or unchanged (changed False) if it was patched already.

    The componentize-py release is taken from ``assume_version`` when given,
    else from ``identify``. Raises NotLeaky when that release does not leak,
    PatchError when it is unknown or the binary is not what this tool expects.

    >>> fixed, changed = patch_component(Path("app.wasm").read_bytes())  # doctest: +SKIP
    """
    try:
        return _patch_component(component, assume_version)
    except (IndexError, UnicodeDecodeError, BinaryError) as err:
        raise PatchError(f"malformed binary ({err})") from err


def _patch_component(component: bytes, assume_version: str | None) -> tuple[bytes, bool]:
    found = _identify(component)
    if found.patched:
        return component, False
    version = assume_version or found.version
    if version is None:
        raise PatchError(
            f"the component does not say which componentize-py built it ({found.describe()}); "
            f"this tool knows only the runtimes of componentize-py {', '.join(sorted(LEAKY))}. "
            f"A newer release may free the copy itself, and patching it would free it twice. "
            f"If you checked that yours leaks (its runtime's maybe_pop_list never queues the "
            f"copy it returns), pass --assume-version VERSION"
        )
    if version not in LEAKY:
        source = "as assumed" if assume_version else f"according to {found.evidence}"
        raise NotLeaky(
            f"componentize-py {version} ({source}) is not a known leaky version "
            f"({', '.join(sorted(LEAKY))})"
        )
    sections = split_sections(component)
    patched = patch_module(sections[found.index][1])
    if patched is None:  # _identify found its export; patch_module looks for the same one
        raise PatchError(f"the runtime module lost its {POP_LIST} or {DEALLOC} export")
    sections[found.index] = (COMPONENT_CORE_MODULE, patched)
    return join_sections(component[:8], sections), True


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit status (0 also when there was nothing to fix).

    >>> main(["app.wasm", "-o", "fixed.wasm"])  # doctest: +SKIP
    0
    """
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("component", type=Path)
    parser.add_argument("-o", "--output", type=Path, help="where to write (default: in place)")
    parser.add_argument(
        "--assume-version",
        metavar="VERSION",
        help="the componentize-py release that built the component, when the component does "
        "not identify it (patched only if VERSION is known to leak)",
    )
    args = parser.parse_args(argv)
    output: Path = args.output or args.component
    source = args.component.read_bytes()
    try:
        data, changed = patch_component(source, args.assume_version)
    except NotLeaky as why:
        print(f"free_import_bytes: {why}; left {args.component} unchanged", file=sys.stderr)
        data, changed = source, False
    except PatchError as err:
        print(f"free_import_bytes: cannot patch {args.component}: {err}", file=sys.stderr)
        return 1
    else:
        if not changed:
            print(f"free_import_bytes: {args.component} was already patched", file=sys.stderr)
    if changed or output != args.component:
        tmp = output.with_name(output.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
