"""The WebAssembly binary format's framing, for the tools that rewrite built
components (``free_import_bytes.py``, ``sjlj_splice.py``): LEB128 numbers
and the sections of a module or component.

Example::

    >>> u32(624485).hex()
    'e58e26'
    >>> read_u32(bytes.fromhex("e58e26"), 0)
    (624485, 3)
    >>> module = b"\\0asm\\x01\\0\\0\\0" + bytes([0, 2]) + b"\\x01x"
    >>> split_sections(module)
    [(0, b'\\x01x')]
    >>> join_sections(module[:8], split_sections(module)) == module
    True
"""

from __future__ import annotations

from collections.abc import Sequence

MAGIC = b"\0asm"

#: A section: its id and its payload.
Section = tuple[int, bytes]


class BinaryError(Exception):
    """The bytes are not well-formed WebAssembly framing; the message says where."""


def read_u32(data: bytes, pos: int) -> tuple[int, int]:
    """The unsigned LEB128 number at ``pos``: (value, position after it)."""
    value = shift = 0
    while True:
        if pos >= len(data):
            raise BinaryError("truncated LEB128 number")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos
        if shift > 35:
            raise BinaryError("LEB128 number too long")


def u32(value: int) -> bytes:
    """``value`` as unsigned LEB128."""
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | 0x80 if value else low)
        if not value:
            return bytes(out)


def split_sections(binary: bytes) -> list[Section]:
    """A module's or component's sections, after its 8-byte header."""
    if binary[:4] != MAGIC:
        raise BinaryError("not a WebAssembly binary")
    sections = []
    pos = 8
    while pos < len(binary):
        section_id = binary[pos]
        size, pos = read_u32(binary, pos + 1)
        if pos + size > len(binary):
            raise BinaryError("a section runs past the end of the binary")
        sections.append((section_id, binary[pos : pos + size]))
        pos += size
    return sections


def join_sections(header: bytes, sections: Sequence[Section]) -> bytes:
    """A module or component from its 8-byte header and sections (sizes re-encoded)."""
    return header + b"".join(bytes([sid]) + u32(len(body)) + body for sid, body in sections)
