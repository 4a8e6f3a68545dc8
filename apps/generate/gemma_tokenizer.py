"""Gemma 3's tokenizer in pure Python, token for token the one transformers builds from the GGUF.

The reference is ``AutoTokenizer.from_pretrained(folder, gguf_file="model.gguf")``: a
``tokenizers`` BPE model whose pipeline, for this vocabulary, is

1. **Added tokens** cut out of the raw text first, leftmost-longest: the control tokens
   (``<bos>``, ``<start_of_turn>``, ``<unused5>``, ...; "special": ``decode`` can skip
   them) and the user-defined ones (``\\n`` .. 31 newlines, ``\\t`` .. 31 tabs, ``<b>``,
   ``</table>``, ``[multimodal]``, ...). So ``"<start_of_turn>"`` typed in a prompt is one
   id, and so is ``"<bos>"``. Runs of spaces are *not* among them (vocabulary.py).
2. **Normalization** of the rest: only " " becomes "▁" (U+2581). No NFKC, no dummy prefix;
   tabs, newlines and every other character stay as they are.
3. **BPE** over each such piece of text, starting from its characters; a character that is
   not a token becomes its UTF-8 bytes, as the tokens ``<0x00>`` .. ``<0xFF>`` (byte
   fallback). transformers derives the merges from the vocabulary (the GGUF has none):
   every split of a token into two tokens is a merge, ranked by the merged token's id
   (lower first), then by the longer left part. The lowest ranked pair present is merged,
   the leftmost of equal ones, until none is left. The GGUF's SentencePiece scores fall
   with the id too, except for the 30 tokens of 2..31 spaces (all scored -1000): ranked
   by id they merge pairwise first, so 40 spaces are 16 + 24 spaces here, where
   SentencePiece with those scores makes 31 + 9. (The tie-break by the left part's length
   changed no result in our tests: it only matters when two splits of one token compete.)
4. ``<bos>`` in front.

Decoding turns "▁" back into " ", joins each run of byte tokens and reads it as UTF-8 -
all of the run, or, if it is not valid UTF-8, one U+FFFD per byte (tokenizers'
ByteFallback decoder, not Python's errors="replace") - and keeps control tokens unless
``skip_special``. Ids past the vocabulary are dropped, as tokenizers does.

Speed: step 3's text has no pre-tokenizer splitting it, but no token holds a "▁" after
another character except a few listed at load (``>▁</``), so no merge can cross the start
of a space-led word: each word (``▁*[^▁]+``) is merged on its own, and remembered.

Stdlib only, so it runs inside the component. Example::

    tok = Tokenizer.load("/models/gemma3/tokenizer/tokenizer.bin")
    ids = tok.encode("<start_of_turn>user\\nHi!<end_of_turn>\\n")  # [2, 105, 2364, 107, ...]
    tok.decode(ids, skip_special=True)                           # 'user\\nHi!\\n'
    stream = tok.decoder()
    print("".join(stream.add(i) for i in ids) + stream.flush())   # == tok.decode(ids)
"""

from __future__ import annotations

import heapq
import re
import struct
import sys
from array import array
from collections.abc import Iterable, Iterator

MAGIC = b"WNVOCAB\0"  # the format vocabulary.py writes (its docstring describes it)
VERSION = 1
_HEADER = struct.Struct("<8sII4iII")

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
_ADD_BOS, _ADD_EOS = 1, 2
SPACE = "\u2581"

# A word for the merge step: spaces ("▁") and the characters up to the next space.
_WORDS = re.compile(f"{SPACE}*[^{SPACE}]+|{SPACE}+")
# A token that spans the start of such a word, found at load: a "▁" after something else.
# The "▁" comes first in the pattern so that re skips ahead to it at C speed (3 ms over the
# 262,144 pieces, where "[^▁]▁" takes 36 ms).
_BRIDGE = re.compile(f"{SPACE}(?<=[^\0{SPACE}]{SPACE})")
# Merge ranks: (merged id << _RANK_SHIFT) - len(left part). The longest token is 31
# characters, so the left part of a merge is shorter than 64 and ranks of different merged
# tokens never interleave.
_RANK_SHIFT = 6
_NO_MERGE = 1 << 62
# Words up to this long are merged by rescanning a list of ranks (C-speed min/index), longer
# ones with a heap, which costs O(log n) rather than O(n) per merge.
_HEAP_FROM = 128
_CACHE_WORDS = 100_000  # the word cache's bound: input text is arbitrary


class Tokenizer:
    """Gemma 3's tokenizer over the vocabulary file apps/generate/vocabulary.py writes."""

    def __init__(
        self,
        pieces: list[str],
        types: bytes,
        scores: array[float] | None = None,
        special_ids: tuple[int, int, int, int] = (-1, -1, -1, -1),
        add_bos: bool = True,
        add_eos: bool = False,
        joined: str | None = None,
    ) -> None:
        """A tokenizer over ``pieces`` (spelled as transformers spells them, so runs of
        spaces as "▁▁"...) and their GGUF ``types``; ``special_ids`` are bos, eos, unk, pad.
        ``joined`` is "\\0".join(pieces) if the caller has it (the file holds it)."""
        if len(pieces) != len(types):
            raise ValueError(f"{len(pieces)} pieces but {len(types)} types")
        self.pieces = pieces
        self.types = types
        self.scores = scores
        self.vocab: dict[str, int] = dict(zip(pieces, range(len(pieces)), strict=True))
        self.bos_id, self.eos_id, self.unk_id, self.pad_id = special_ids
        self.add_bos = add_bos
        self.add_eos = add_eos
        # The byte tokens, by byte value, for byte fallback, and their values for decoding.
        self._byte_ids = [-1] * 256
        self._byte_of: dict[int, int] = {}
        for i in _positions(types, BYTE):
            value = int(pieces[i][3:5], 16)
            self._byte_ids[value] = i
            self._byte_of[i] = value
        self._byte_pieces = [pieces[i] if i >= 0 else "" for i in self._byte_ids]
        # Added tokens (control and user-defined), matched whole in the raw text: for each
        # first character, the lengths to try, longest first.
        self.special_ids = frozenset(_positions(types, CONTROL))
        self._added: dict[str, int] = {}
        for i in sorted(self.special_ids.union(_positions(types, USER_DEFINED))):
            self._added[pieces[i]] = i
        lengths: dict[str, set[int]] = {}
        for piece in self._added:
            lengths.setdefault(piece[0], set()).add(len(piece))
        self._added_lengths = {c: sorted(ls, reverse=True) for c, ls in lengths.items()}
        starts = "".join(sorted(self._added_lengths))
        self._added_start = re.compile(f"[{re.escape(starts)}]") if starts else None
        self._bridges = _bridging("\0".join(pieces) if joined is None else joined)
        self._cache: dict[str, list[int]] = {}

    @classmethod
    def load(cls, path: str) -> Tokenizer:
        """Read the file vocabulary.py's ``write_vocabulary`` wrote."""
        with open(path, "rb") as f:
            return cls.from_bytes(f.read())

    @classmethod
    def from_bytes(cls, data: bytes) -> Tokenizer:
        """Parse a vocabulary file's contents."""
        if len(data) < _HEADER.size:
            raise ValueError("not a vocabulary file: too short")
        magic, version, n, bos, eos, unk, pad, flags, text_size = _HEADER.unpack_from(data)
        if magic != MAGIC or version != VERSION:
            raise ValueError(f"not a version {VERSION} vocabulary file (magic {magic!r})")
        start = _HEADER.size
        end = start + text_size + 5 * n
        if len(data) != end:
            raise ValueError(f"vocabulary file is {len(data)} bytes, its header says {end}")
        joined = data[start : start + text_size].decode("utf-8")
        pieces = joined.split("\0")
        if len(pieces) != n:
            raise ValueError(f"vocabulary file holds {len(pieces)} pieces, its header says {n}")
        scores = array("f")
        scores.frombytes(data[start + text_size : start + text_size + 4 * n])
        if sys.byteorder != "little":
            scores.byteswap()
        types = data[start + text_size + 4 * n :]
        return cls(
            pieces, types, scores, (bos, eos, unk, pad),
            add_bos=bool(flags & _ADD_BOS), add_eos=bool(flags & _ADD_EOS), joined=joined,
        )  # fmt: skip

    def __len__(self) -> int:
        return len(self.pieces)

    def token_id(self, piece: str) -> int:
        """The id of a token by its spelling, e.g. ``token_id("<end_of_turn>")`` is 106.

        Raises KeyError for a string that is not one token."""
        return self.vocab[piece]

    def encode(self, text: str, add_bos: bool = True) -> list[int]:
        """The token ids of ``text``, with ``<bos>`` first unless ``add_bos`` is False.

        transformers' ``tokenizer(text)["input_ids"]`` (``add_special_tokens=False`` for
        ``add_bos=False``): Gemma's GGUF asks for <bos> (``self.add_bos``) and no <eos>.
        A string holding a lone surrogate raises UnicodeEncodeError if it must fall back
        to bytes (transformers refuses such a string outright)."""
        ids: list[int] = [self.bos_id] if add_bos else []
        for text_part, added in self._split_added(text):
            if added >= 0:
                ids.append(added)
            elif text_part:
                self._encode_plain(text_part, ids)
        return ids

    def _split_added(self, text: str) -> Iterator[tuple[str, int]]:
        """``text`` as pieces: (plain text, -1) and (added token, its id), in order.

        Leftmost-longest, as tokenizers' Aho-Corasick matcher: scan the places where an
        added token could start, try the lengths of those starting with that character,
        longest first; the first hit wins and the scan resumes after it."""
        if self._added_start is None:
            yield text, -1
            return
        added, lengths = self._added, self._added_lengths
        done = 0  # text[:done] has been yielded
        search = self._added_start.search
        found = search(text)
        while found is not None:
            at = found.start()
            for length in lengths[text[at]]:
                token = added.get(text[at : at + length])
                if token is not None:
                    if at > done:
                        yield text[done:at], -1
                    yield "", token
                    done = at + length
                    break
            found = search(text, max(done, at + 1))
        if done < len(text):
            yield text[done:], -1

    def _encode_plain(self, text: str, ids: list[int]) -> None:
        """Append the ids of text that holds no added token."""
        text = text.replace(" ", SPACE)
        words: Iterable[str] = _WORDS.findall(text)
        if self._bridges and any(b in text for b in self._bridges):
            words = self._bridged_words(text)
        cache = self._cache
        for word in words:
            word_ids = cache.get(word)
            if word_ids is None:
                word_ids = self._merge(word)
                if len(cache) >= _CACHE_WORDS:
                    cache.clear()
                cache[word] = word_ids
            ids += word_ids

    def _bridged_words(self, text: str) -> list[str]:
        """_WORDS' words, but never cut inside a token that spans a word's start."""
        keep: set[int] = set()  # cuts that would split such a token
        for bridge in self._bridges:
            at = text.find(bridge)
            while at >= 0:
                keep.update(range(at + 1, at + len(bridge)))
                at = text.find(bridge, at + 1)
        words: list[str] = []
        for found in _WORDS.finditer(text):
            if words and found.start() in keep:
                words[-1] += found.group()
            else:
                words.append(found.group())
        return words

    def _symbols(self, word: str) -> list[str]:
        """The word's characters as tokens, each unknown one as its byte tokens."""
        vocab = self.vocab
        if all(c in vocab for c in word):
            return list(word)
        symbols: list[str] = []
        for c in word:
            if c in vocab:
                symbols.append(c)
            else:
                symbols += (self._byte_pieces[b] for b in c.encode("utf-8"))
        return symbols

    def _merge(self, word: str) -> list[int]:
        """BPE over one word: merge the best-ranked pair (leftmost of equals) until none."""
        symbols = self._symbols(word)
        if len(symbols) >= _HEAP_FROM:
            return self._merge_heap(symbols)
        vocab = self.vocab
        ranks = []
        for left, right in zip(symbols, symbols[1:], strict=False):
            merged = vocab.get(left + right)
            ranks.append(_NO_MERGE if merged is None else (merged << _RANK_SHIFT) - len(left))
        while ranks:
            best = min(ranks)
            if best == _NO_MERGE:
                break
            i = ranks.index(best)  # the leftmost: equal ranks are the same pair
            symbols[i] += symbols.pop(i + 1)
            del ranks[i]
            if i > 0:
                left = symbols[i - 1]
                merged = vocab.get(left + symbols[i])
                ranks[i - 1] = (
                    _NO_MERGE if merged is None else (merged << _RANK_SHIFT) - len(left)
                )
            if i < len(ranks):
                left = symbols[i]
                merged = vocab.get(left + symbols[i + 1])
                ranks[i] = _NO_MERGE if merged is None else (merged << _RANK_SHIFT) - len(left)
        return [vocab[s] for s in symbols]

    def _merge_heap(self, symbols: list[str]) -> list[int]:
        """The same merges for a long word: a heap of candidate pairs and a linked list.

        A heap entry is (rank << 32 | position). One goes stale when either symbol of its
        pair has grown since; the pair then spans more text, so it is another string and
        its rank (looked up again) no longer matches, and the entry is dropped. A merged
        away symbol becomes "" (no token is empty)."""
        vocab = self.vocab
        n = len(symbols)
        if n >= 1 << 32:
            raise ValueError("text too long")
        after = list(range(1, n + 1))
        before = list(range(-1, n - 1))
        heap = []
        for i in range(n - 1):
            left = symbols[i]
            merged = vocab.get(left + symbols[i + 1])
            if merged is not None:
                heap.append((((merged << _RANK_SHIFT) - len(left)) << 32) | i)
        heapq.heapify(heap)
        pop, push = heapq.heappop, heapq.heappush
        while heap:
            entry = pop(heap)
            i = entry & 0xFFFFFFFF
            left = symbols[i]
            j = after[i]
            if not left or j >= n:
                continue
            new = left + symbols[j]
            merged = vocab.get(new)
            if merged is None or ((merged << _RANK_SHIFT) - len(left)) != entry >> 32:
                continue  # stale
            symbols[i] = new
            symbols[j] = ""
            k = after[j]
            after[i] = k
            if k < n:
                before[k] = i
                merged = vocab.get(new + symbols[k])
                if merged is not None:
                    push(heap, (((merged << _RANK_SHIFT) - len(new)) << 32) | i)
            h = before[i]
            if h >= 0:
                prev = symbols[h]
                merged = vocab.get(prev + new)
                if merged is not None:
                    push(heap, (((merged << _RANK_SHIFT) - len(prev)) << 32) | h)
        return [vocab[s] for s in symbols if s]

    def decode(self, ids: Iterable[int], skip_special: bool = False) -> str:
        """The text of ``ids``: "▁" as spaces, byte tokens as UTF-8 (see the module
        docstring), control tokens kept unless ``skip_special``."""
        stream = Detokenizer(self, skip_special)
        return "".join([stream.add(i) for i in ids]) + stream.flush()

    def decoder(self, skip_special: bool = False) -> Detokenizer:
        """An incremental decoder: feed it one id at a time (see Detokenizer)."""
        return Detokenizer(self, skip_special)

    def decode_stream(self, ids: Iterable[int], skip_special: bool = False) -> Iterator[str]:
        """The text of ``ids`` piece by piece, as soon as it is final; the pieces join to
        ``decode(ids, skip_special)``. Empty pieces are not yielded."""
        stream = Detokenizer(self, skip_special)
        for i in ids:
            text = stream.add(i)
            if text:
                yield text
        text = stream.flush()
        if text:
            yield text


class Detokenizer:
    """Text for one token id at a time, for streaming what a model generates.

    What ``add`` returns for each id, then ``flush`` at the end, joins to exactly
    ``Tokenizer.decode`` of all the ids. A token's text is final at once, except for byte
    tokens: a run of them is held back until a token that is not a byte (or ``flush``) ends
    it. Not only its incomplete UTF-8 tail, all of it: tokenizers decodes a run with any
    invalid byte as one U+FFFD per byte, so a byte still to come can change how the run's
    complete characters read. (A skipped control token does not end a run, as in
    ``decode``.) A run is a character or two that the vocabulary lacks, so this holds them
    back by about one token.

    Example::

        stream = tokenizer.decoder()
        for token in generated:
            print(stream.add(token), end="", flush=True)
        print(stream.flush())
    """

    def __init__(self, tokenizer: Tokenizer, skip_special: bool = False) -> None:
        self.tokenizer = tokenizer
        self.skip_special = skip_special
        self._run = bytearray()  # the byte tokens' bytes held back

    def add(self, token: int) -> str:
        """The text that ``token`` makes final (often its own; "" while held back)."""
        tok = self.tokenizer
        if token < 0:
            raise ValueError(f"token ids are not negative, got {token}")
        if token >= len(tok.pieces):
            return ""  # tokenizers drops ids it does not know
        kind = tok.types[token]
        if kind == BYTE:
            self._run.append(tok._byte_of[token])
            return ""
        if kind == CONTROL and self.skip_special:
            return ""
        text = tok.pieces[token].replace(SPACE, " ")
        return self.flush() + text if self._run else text

    def flush(self) -> str:
        """The text held back (a run of byte tokens), at the end of the ids."""
        run = self._run
        if not run:
            return ""
        try:
            text = run.decode("utf-8")
        except UnicodeDecodeError:
            text = "\ufffd" * len(run)
        run.clear()
        return text


def _positions(data: bytes, value: int) -> Iterator[int]:
    """The indices where ``data`` holds the byte ``value`` (bytes.find runs at C speed)."""
    at = data.find(value)
    while at >= 0:
        yield at
        at = data.find(value, at + 1)


def _bridging(joined: str) -> tuple[str, ...]:
    """The pieces (of "\\0"-joined ones) in which "▁" follows another character: the only
    tokens a merge could build across the start of a word that begins with spaces."""
    found = []
    for hit in _BRIDGE.finditer(joined):
        start = joined.rfind("\0", 0, hit.start()) + 1
        end = joined.find("\0", hit.end())
        found.append(joined[start : end if end >= 0 else len(joined)])
    return tuple(dict.fromkeys(found))
