"""Gemma 3's vocabulary, out of the GGUF into a file the component reads fast (build time).

A GGUF keeps the vocabulary as metadata: 262,144 strings, scores and token types under
llama.cpp's keys. Reading them back with the ``gguf`` package takes seconds (it builds a
numpy view per string) and needs numpy; the component has neither the time nor the
package, so ``write_vocabulary`` writes them once in a layout that CPython takes apart with
a handful of C-speed calls (one ``bytes.decode``, one ``str.split``, two ``array`` copies)::

    offset  size  field (little-endian)
    0       8     magic b"WNVOCAB\\0"
    8       4     u32 format version (1)
    12      4     u32 n, the number of tokens
    16      16    4 x i32: bos, eos, unk and pad ids (-1: the GGUF names none)
    32      4     u32 flags: bit 0 add <bos> when encoding, bit 1 add <eos>
    36      4     u32 b, the size of the pieces' text in bytes
    40      b     the n pieces in id order, UTF-8, separated by NUL (no piece holds one)
    40+b    4n    n x f32 scores (SentencePiece's; the encoder does not need them)
    40+b+4n n     n x u8 token types (GGUF's codes: 1 normal, 2 unknown, 3 control,
                  4 user-defined, 5 unused, 6 byte)

The pieces and types are not copied verbatim: they are what transformers' tokenizer built
from the same GGUF uses (``transformers.integrations.gguf.gguf_tokenizer_mapping``,
``gemma_tokenizer`` and ``add_gguf_special_tokens``), because that tokenizer is the one
apps/generate/gemma_tokenizer.py must agree with, token for token:

- Gemma's GGUF stores its 30 tokens for runs of 2..31 spaces as real spaces ("  "), while
  the text is matched with spaces already turned into "▁". transformers respells them
  "▁▁"..., and so do we: they are ordinary pieces that merges build and that decode to
  spaces again.
- Such a respelled token, though marked user-defined in the GGUF, is not an added token in
  transformers (it looks the old spelling up in the respelled vocabulary and finds none),
  so it is not matched whole in the text: its type becomes 1 (normal) here. Every other
  user-defined token ("\\n", "\\t\\t", "<b>", ...) is matched whole but never skipped;
  control tokens ("<bos>", "<start_of_turn>", "<unused5>", ...) are matched whole and
  skipped by ``decode(skip_special=True)``.

Example::

    write_vocabulary("/tmp/g/model.gguf", "build/models/gemma3/tokenizer/tokenizer.bin")
"""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import Any

from gguf import GGUFReader  # build time only: the component never imports this module

MAGIC = b"WNVOCAB\0"
VERSION = 1
HEADER = struct.Struct("<8sII4iII")  # magic, version, n, bos/eos/unk/pad, flags, text bytes

# GGUF token types (llama.cpp's llama_token_type).
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
ADD_BOS, ADD_EOS = 1, 2

# What tokenizers' ByteFallback decoder reads as one byte. Its check is loose (any 6-char
# "<0x..>" that Rust's u8::from_str_radix parses as hex), so we check that exactly the
# byte-typed tokens look like this, and that they are spelled "<0xNN>" in upper case, which
# is what its byte-fallback encoder looks up.
_BYTE_PIECE = re.compile("<0x[0-9A-F]{2}>")


def _field(reader: Any, key: str) -> Any:
    field = reader.fields.get(key)
    return None if field is None else field.contents()


def _respell(piece: str) -> str:
    """transformers' spelling of a GGUF piece: a run of spaces becomes a run of "▁".

    Its test, copied as is, is "holds a space and nothing but whitespace", so " \n" would
    become "▁▁" too; Gemma has no such piece (and a clash would fail the check for repeats)."""
    return "\u2581" * len(piece) if " " in piece and not piece.strip() else piece


def vocabulary_bytes(
    pieces: list[str],
    scores: list[float],
    types: list[int],
    special_ids: tuple[int, int, int, int],
    add_bos: bool,
    add_eos: bool,
) -> bytes:
    """The file's bytes for a GGUF vocabulary (``pieces`` as the GGUF spells them).

    ``special_ids`` are bos, eos, unk and pad (-1 for none). Raises ValueError when the
    vocabulary breaks an assumption the guest's tokenizer relies on."""
    n = len(pieces)
    if not n == len(scores) == len(types):
        raise ValueError(f"{n} tokens but {len(scores)} scores and {len(types)} types")
    respelled = [_respell(p) for p in pieces]
    out_types = bytearray(types)
    for i, (old, new) in enumerate(zip(pieces, respelled, strict=True)):
        if old != new and types[i] == USER_DEFINED:
            out_types[i] = NORMAL  # see the module docstring: transformers never adds it
    if len(set(respelled)) != n:
        # transformers' vocabulary is a dict: a repeated piece would lose an id.
        raise ValueError("the vocabulary repeats a piece (after respelling runs of spaces)")
    if any("\0" in p for p in respelled):
        raise ValueError("a piece holds NUL, which this format uses to separate pieces")
    if any(not p or len(p) >= 64 for p in respelled):
        # gemma_tokenizer.py packs a merge's rank as (merged id << 6) - len(left part).
        raise ValueError("a piece is empty or 64 characters or longer")
    for i, piece in enumerate(respelled):
        if (out_types[i] == BYTE) != bool(_BYTE_PIECE.fullmatch(piece)):
            raise ValueError(f"token {i} {piece!r}: type {out_types[i]} vs. its byte spelling")
        if out_types[i] != BYTE and len(piece) == 6 and piece.startswith("<0x") and piece[5] == ">":
            raise ValueError(f"token {i} {piece!r} would decode as a byte in transformers")
    if sum(t == BYTE for t in out_types) != 256:
        raise ValueError("byte fallback (which the tokenizer always uses) needs 256 byte tokens")
    # The encoder never merges a byte token with a neighbour: that holds while no piece
    # starts or ends with a byte token's spelling (other than the byte tokens themselves).
    for piece in respelled:
        if len(piece) > 6 and (_BYTE_PIECE.match(piece) or _BYTE_PIECE.fullmatch(piece[-6:])):
            raise ValueError(f"piece {piece!r} would let byte tokens merge")
    text = "\0".join(respelled).encode("utf-8")
    flags = (ADD_BOS if add_bos else 0) | (ADD_EOS if add_eos else 0)
    header = HEADER.pack(MAGIC, VERSION, n, *special_ids, flags, len(text))
    return b"".join((header, text, struct.pack(f"<{n}f", *scores), bytes(out_types)))


def write_vocabulary(gguf_path: str | Path, out_path: str | Path) -> None:
    """Write the vocabulary of a SentencePiece ("llama") GGUF to ``out_path``.

    Takes ~15 s for Gemma 3 (GGUFReader's parsing of 262,144 strings), once per build."""
    reader = GGUFReader(str(gguf_path))
    model = _field(reader, "tokenizer.ggml.model")
    if model != "llama":
        raise ValueError(f"{gguf_path}: tokenizer.ggml.model is {model!r}, not 'llama'")
    pieces = _field(reader, "tokenizer.ggml.tokens")
    scores = _field(reader, "tokenizer.ggml.scores")
    types = _field(reader, "tokenizer.ggml.token_type")
    if _field(reader, "tokenizer.ggml.merges") is not None:
        raise ValueError(f"{gguf_path}: has merges; the tokenizer derives them from the pieces")
    if _field(reader, "tokenizer.ggml.add_space_prefix"):
        raise ValueError(f"{gguf_path}: adds a space prefix, which gemma_tokenizer.py does not")
    ids = []
    for name in ("bos", "eos", "unknown", "padding"):
        value = _field(reader, f"tokenizer.ggml.{name}_token_id")
        ids.append(-1 if value is None else int(value))
    # llama.cpp adds <bos> to a SentencePiece vocabulary that does not say otherwise, and
    # transformers follows it (get_gguf_tokenizer).
    add_bos = _field(reader, "tokenizer.ggml.add_bos_token")
    add_eos = _field(reader, "tokenizer.ggml.add_eos_token")
    data = vocabulary_bytes(
        pieces, scores, types, (ids[0], ids[1], ids[2], ids[3]),
        add_bos=True if add_bos is None else bool(add_bos), add_eos=bool(add_eos),
    )  # fmt: skip
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(out)  # never a half-written file where the component looks
