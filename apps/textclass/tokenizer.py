"""A pure-Python BERT WordPiece tokenizer (uncased), matching Hugging Face `tokenizers`.

It reproduces the pipeline that all-MiniLM-L6-v2's tokenizer.json describes: special tokens
split out of the raw text, BertNormalizer (clean text, pad CJK ideographs with spaces, strip
accents, lowercase), BertPreTokenizer (split on whitespace and punctuation), WordPiece with
"##" continuations, then ``[CLS] ... [SEP]``. Stdlib only, so it runs inside the component.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

# HF drops every "Other" character except unassigned ones (Cn): format chars such as the
# zero-width space and soft hyphen vanish, private-use ones too, but e.g. U+0378 survives.
_CONTROL_CATEGORIES = frozenset(("Cc", "Cf", "Co", "Cs"))
# The CJK blocks BERT pads with spaces. The sixth range starts at U+2B920, not U+2B820 (the
# start of Extension E): that is what HF's Rust code checks, so we copy it faithfully.
_CJK_RANGES = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)
# HF's character tables (categories, NFD) are from an old Unicode version, while the guest's
# unicodedata is Unicode 16. Newer marks, format characters and punctuation are plain letters
# to HF: never dropped, stripped, split off or decomposed. These ranges (measured against
# tokenizers 0.23.3 for every code point under Unicode 14 to 16) list them; gaps of plain
# letters or unassigned code points between them are folded in, as they pass through anyway.
_LITERAL_RANGES = (
    "61D 7FD 890-8E2 9FD-9FE A76 AFA-AFF B55 C04-C3C C77 C84 D00 D3B-D3C D81 EBA ECE "
    "180F-1886 1ABF-1ACE 1B4E-1B4F 1B7D-1B7F 1DF6-1DFB 2E43-2E5D A82C A8C5 A8FF A9BD "
    "105C9-105E4 10D24-10D27 10D69-10D6E 10EAB-10F89 11070-11074 110C2-110CD 111CF "
    "1123E-11241 1133B 11383-113CE 113D0-1145E 11660-1166C 116B9 1182F-1183B 11938-1193C "
    "1193E-11F40 11F42-11FFF 12FF1-1612F 16D68-16D6F 16E97-16E9A 16F4F 16FE2-16FE4 "
    "1CF00-1CF46 1E000-1E02A 1E08F-1E5FF 1E944-1E95F"
)
_LITERAL_SET = "".join(
    "-".join(chr(int(h, 16)) for h in item.split("-")) for item in _LITERAL_RANGES.split()
)
_LITERAL_CLASS = f"[{_LITERAL_SET}]"
_is_literal = re.compile(_LITERAL_CLASS).fullmatch
_LITERAL_RUNS = re.compile(f"({_LITERAL_CLASS}+)")
# The few characters whose category changed since HF's tables: punctuation or a nonspacing
# mark there (Canadian chi sign, Sharada sandhi mark; Hanunoo pamudpod, Ahom medial ra).
_OLD_PUNCTUATION = frozenset("\u166d\U000111c9")
_OLD_MARKS = frozenset("\u1734\U0001171e")


def _clean(ch: str) -> str:
    """BertNormalizer's clean_text and CJK padding for one raw character."""
    if ch in _OLD_PUNCTUATION or _is_literal(ch):
        return ch
    if ch in "\t\n\r":  # control characters that BERT treats as whitespace
        return " "
    if ch in "\x00\ufffd" or unicodedata.category(ch) in _CONTROL_CATEGORIES:
        return ""
    if ch.isspace():  # now exactly Rust's char::is_whitespace: U+001C..U+001F are gone
        return " "
    if any(lo <= ord(ch) <= hi for lo, hi in _CJK_RANGES):
        return f" {ch} "
    return ch


def _fold(ch: str) -> str:
    """Accent stripping (after NFD) and lowercasing for one character."""
    if ch in _OLD_PUNCTUATION or _is_literal(ch):
        return ch
    if ch in _OLD_MARKS or unicodedata.category(ch) == "Mn":
        return ""
    # One character at a time, as Rust does: str.lower() on a whole word would turn a
    # word-final capital sigma into "ς" where HF gives "σ".
    return ch.lower()


class _CharMap(dict[int, str]):
    """A str.translate table that computes each character's mapping once, on first use."""

    def __init__(self, func: Callable[[str], str]) -> None:
        super().__init__()
        self.func = func

    def __missing__(self, cp: int) -> str:
        self[cp] = out = self.func(chr(cp))
        return out


_CLEAN = _CharMap(_clean)
_FOLD = _CharMap(_fold)


def _is_punctuation(ch: str) -> bool:
    # ASCII symbols such as $ + < ^ ` | ~ are Unicode "S*", but BERT splits on them too.
    if ch.isascii():
        return "!" <= ch <= "~" and not ch.isalnum()
    if ch in _OLD_PUNCTUATION:
        return True
    return unicodedata.category(ch).startswith("P") and not _is_literal(ch)


#: About how many characters of a text are normalized at a time (``_pieces``).
PIECE_CHARS = 1024
# Characters that BertNormalizer always turns into a space: a text cut right
# after one of them reads the same in pieces as whole (NFD never reorders across
# a space, and no word spans one).
_CUT = re.compile("[ \t\n\r]")


def _pieces(text: str, size: int = PIECE_CHARS) -> Iterator[str]:
    """``text`` in consecutive pieces of at least ``size`` characters, each cut
    after a space, tab or line break (a run without one stays whole)."""
    start = 0
    while start < len(text):
        found = _CUT.search(text, start + size)
        end = found.end() if found else len(text)
        yield text[start:end]
        start = end


def _words(normalized: str) -> Iterator[str]:
    """BertPreTokenizer's words, one at a time (``WordPiece.pre_tokenize``)."""
    for chunk in normalized.split():  # after normalize() only " " is left as whitespace
        if chunk.isalnum():  # letters and digits are never punctuation
            yield chunk
            continue
        start = 0
        for i, ch in enumerate(chunk):
            if _is_punctuation(ch):
                if i > start:
                    yield chunk[start:i]
                yield ch
                start = i + 1
        if start < len(chunk):
            yield chunk[start:]


class Encoding:
    """One tokenized text: ids and tokens of ``[CLS] ... [SEP]`` (plus padding), and its mask."""

    __slots__ = ("attention_mask", "ids", "tokens")

    def __init__(self, ids: list[int], attention_mask: list[int], tokens: list[str]) -> None:
        self.ids = ids
        self.attention_mask = attention_mask
        self.tokens = tokens

    def __len__(self) -> int:
        return len(self.ids)

    def pad(self, length: int, pad_id: int, pad_token: str) -> None:
        """Pad on the right up to ``length`` with masked-out ``pad_token``; never truncates."""
        extra = length - len(self.ids)
        if extra > 0:
            self.ids += [pad_id] * extra
            self.attention_mask += [0] * extra
            self.tokens += [pad_token] * extra


class WordPiece:
    """An uncased BERT tokenizer over a vocab.txt vocabulary (one token per line, id = line)."""

    def __init__(self, vocab: str, max_input_chars_per_word: int = 100) -> None:
        """Build from the text of vocab.txt (as HF does, a repeated token keeps its last id)."""
        lines = vocab.replace("\r\n", "\n").split("\n")
        self.vocab: dict[str, int] = {token: i for i, token in enumerate(lines) if token}
        self.id_to_token = {i: t for t, i in self.vocab.items()}
        self.max_input_chars_per_word = max_input_chars_per_word
        self.unk_id = self.vocab["[UNK]"]
        self.cls_id = self.vocab["[CLS]"]
        self.sep_id = self.vocab["[SEP]"]
        self.pad_id = self.vocab["[PAD]"]
        # HF matches these literally in the raw text (case-sensitive, before normalization),
        # so "[MASK]" typed by a user is one token; longest first gives leftmost-longest.
        specials = sorted((t for t in SPECIAL_TOKENS if t in self.vocab), key=len, reverse=True)
        self._special_re = re.compile("(" + "|".join(map(re.escape, specials)) + ")")
        self._word_cache: dict[str, list[int]] = {}
        self._longest_piece = max(len(t.removeprefix("##")) for t in self.vocab)

    @classmethod
    def from_file(cls, path: str, max_input_chars_per_word: int = 100) -> WordPiece:
        """Load a vocab.txt file (UTF-8)."""
        with open(path, encoding="utf-8") as f:
            return cls(f.read(), max_input_chars_per_word)

    @staticmethod
    def normalize(text: str) -> str:
        """BertNormalizer: clean, pad CJK, NFD and drop nonspacing marks, then lowercase.

        HF strips accents before lowercasing (Python's original BERT did the reverse)."""
        pieces = _LITERAL_RUNS.split(text.translate(_CLEAN))
        # Odd pieces are runs of characters HF's older tables do not know: NFD leaves them
        # alone there, and as they count as starters they also bound canonical reordering.
        nfd = [p if i % 2 else unicodedata.normalize("NFD", p) for i, p in enumerate(pieces)]
        return "".join(nfd).translate(_FOLD)

    @staticmethod
    def pre_tokenize(normalized: str) -> list[str]:
        """BertPreTokenizer: split on whitespace, then isolate every punctuation character."""
        return list(_words(normalized))

    def word_ids(self, word: str) -> list[int]:
        """Greedy longest-match-first; a word with any part left unmatched is one [UNK]."""
        cached = self._word_cache.get(word)
        if cached is not None:
            return cached
        ids: list[int] = []
        # An over-long word skips matching and so ends up as [UNK] below.
        start = 0 if len(word) <= self.max_input_chars_per_word else len(word)
        while start < len(word):
            # No piece is longer than the vocabulary's longest token: trying only
            # those lengths gives the same match for a fraction of the lookups
            # (a word of 100 letters took 5,050 of them, now at most ~1,800).
            longest = min(len(word), start + self._longest_piece)
            for end in range(longest, start, -1):
                found = self.vocab.get(word[start:end] if start == 0 else "##" + word[start:end])
                if found is not None:
                    break
            else:
                ids = []
                break
            ids.append(found)
            start = end
        ids = ids or [self.unk_id]  # no match, or longer than max_input_chars_per_word
        if len(self._word_cache) < 50_000:  # bounded: texts can be arbitrary user input
            self._word_cache[word] = ids
        return ids

    def text_ids(self, text: str, limit: int | None = None) -> list[int]:
        """Token ids of ``text`` without [CLS]/[SEP] or padding: all of them, or
        the first ``limit``. With a limit the text is read only as far as its
        first ``limit`` tokens need (a piece of ``PIECE_CHARS`` or so at a time),
        so a long text costs what its first tokens cost.

        Example::

            vocab.text_ids("word " * 1_000_000, limit=126)   # 126 ids, from the first piece
        """
        ids: list[int] = []
        # With a capturing group, odd-indexed parts are the special tokens themselves.
        for i, part in enumerate(self._special_re.split(text)):
            if i % 2:
                ids.append(self.vocab[part])
            else:
                for piece in _pieces(part):
                    for word in _words(self.normalize(piece)):
                        ids += self.word_ids(word)
                        if limit is not None and len(ids) >= limit:
                            return ids[:limit]
            if limit is not None and len(ids) >= limit:
                return ids[:limit]
        return ids

    def encode(
        self, text: str, max_length: int | None = 128, pad_to: int | None = None
    ) -> Encoding:
        """``[CLS] text [SEP]``, word pieces cut so the whole fits ``max_length`` (None: no
        limit), then padded with [PAD] (attention 0) up to ``pad_to`` if given."""
        if max_length is not None and max_length < 2:
            raise ValueError(f"max_length must leave room for [CLS] and [SEP], got {max_length}")
        body = self.text_ids(text, None if max_length is None else max_length - 2)
        ids = [self.cls_id, *body, self.sep_id]
        enc = Encoding(ids, [1] * len(ids), [self.id_to_token[i] for i in ids])
        if pad_to is not None:
            enc.pad(pad_to, self.pad_id, self.id_to_token[self.pad_id])
        return enc

    def encode_batch(
        self, texts: list[str], max_length: int | None = 128, pad: bool = True
    ) -> list[Encoding]:
        """Encode each text; with ``pad``, pad all of them to the longest in the batch."""
        encodings = [self.encode(t, max_length) for t in texts]
        if pad and encodings:
            longest = max(len(e) for e in encodings)
            for e in encodings:
                e.pad(longest, self.pad_id, self.id_to_token[self.pad_id])
        return encodings
