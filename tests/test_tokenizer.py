"""apps/textclass/tokenizer.py (pure Python) against Hugging Face `tokenizers` on MiniLM's files.

The reference is `tokenizers.Tokenizer.from_file(build/models/minilm/tokenizer.json)`, with
padding switched off and truncation set to the same max_length; every text must give the same
ids, attention mask and tokens. The model files come from ./build.sh (apps/textclass/prepare.py).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import Encoding as HFEncoding  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MINILM = ROOT / "build" / "models" / "minilm"
CORPUS = ROOT / "tests" / "data" / "tokenizer_corpus.txt"
sys.path.insert(0, str(ROOT / "apps" / "textclass"))
import tokenizer  # noqa: E402  (the app's own, run natively)
from tokenizer import SPECIAL_TOKENS, WordPiece  # noqa: E402

if not all((MINILM / name).is_file() for name in ("vocab.txt", "tokenizer.json")):
    pytest.skip(
        f"MiniLM tokenizer files not found in {MINILM} (./build.sh puts them there)",
        allow_module_level=True,
    )

MAX_LENGTH = 128  # what apps/textclass/app.py uses

# Texts that a line-per-sentence file cannot hold, or that are built rather than written.
SPECIAL_TEXTS = [
    "",
    " ",
    "     ",
    "\t",
    "\n",
    "\r\n",
    " \t\n\r\x0b\x0c ",
    "\u00a0\u2003\u2009\u3000\u202f",
    "\u2028\u2029\u1680\x85",
    "\x00\x01\x1f\x7f\ufffd\u200b\ufeff",
    "tab\tseparated\tvalues\t1\t2",
    "line one\nline two\r\nline three\rline four\n",
    "para\u2028graph\u2029break and next\x85line",
    "nul\x00byte in\x00the middle",
    "bell\x07 and escape\x1b[31m red\x1b[0m text",
    "del\x7fete and backspace\x08",
    "unit\x1fseparators\x1e\x1d\x1c are control characters, not spaces",
    "form\x0cfeed and vertical\x0btab",
    "private\ue000use\U000f0000 and\U0010fffd planes",
    "replacement\ufffdcharacter",
    "no\u00a0break and narrow\u202fno-break spaces",
    "em\u2003space thin\u2009space hair\u200aspace figure\u2007space",
    "ogham\u1680space mark",
    "\u0301\u0302 leading combining marks",
    "e\u0301 versus \u00e9 versus E\u0301",
    "A\u030a versus \u00c5 versus \u212b",
    "\u03a3\u039f\u03a3 \u039f\u0394\u039f\u03a3. \u03c3\u03bf\u03c2",
    "\u0130stanbul \u0131\u0130iI",
    "\u00df \u1e9e STRASSE Stra\u00dfe",
    "x" * 100 + " " + "x" * 101,
    "\u00e9" * 100,
    "\u00e9" * 101,
    "e\u0301" * 100,  # 200 characters raw, 100 once the accents are stripped
    "\U0002b81f \U0002b820 \U0002b91f \U0002b920",  # around HF's CJK range bounds
    "\u0378 \U000e0001 unassigned and tag characters",
    "\u061d \u0890 \U00011938 x\u166dy \u1734 newer Unicode: HF keeps, splits or drops them",
    "\U0001d16d\U0001d165 out-of-order combining marks",
    "[MASK]",
    "[CLS][SEP][PAD][UNK][MASK]",
    "[MASK][MASK [MASK]] [[MASK]]",
    " ".join(["word"] * 1000),
    "supercalifragilistic " * 200,
    "a" * 5000,
    "\u3002".join(["\u4e2d\u6587"] * 300),
    "The quick brown fox jumps over the lazy dog. " * 40,
    "Caf\u00e9 na\u00efve \u00c5ngstr\u00f6m \u0394\u03b5\u03bb\u03c6\u03bf\u03af " * 60,
]

# A deterministic mix of vocabulary words and awkward characters, for breadth.
POOL = list(" .,;:!?'\"-_()[]{}<>/\\@#$%^&*+=|~`\t\n\u00a0\u200b\u00ad\u0301\u0308\u0316")
POOL += ["\U0001f600", "\u2764\ufe0f", "\u4e2d", "\u3042", "\uac00", "\u0e01\u0e31", "\u0627\u064b"]
POOL += ["\u03a3", "\u0130", "\u00c5", "\u212b", "\ufb01", "[MASK]", "##", "\u0378", "\ue000"]


def random_texts(vocab: list[str], count: int, seed: int = 20240601) -> list[str]:
    """Seeded random texts: vocabulary words, random code points and POOL, often unspaced."""
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 60)):
            roll = rng.random()
            if roll < 0.5:
                parts.append(rng.choice(vocab).removeprefix("##"))
            elif roll < 0.6:
                parts.append(chr(rng.randint(0x20, 0x2FFFF)))
            else:
                parts.append(rng.choice(POOL))
            if rng.random() < 0.6:
                parts.append(" ")
        texts.append("".join(c for c in "".join(parts) if not 0xD800 <= ord(c) <= 0xDFFF))
    return texts


@pytest.fixture(scope="module")
def wordpiece() -> WordPiece:
    return WordPiece.from_file(str(MINILM / "vocab.txt"))


@pytest.fixture(scope="module")
def hf() -> Tokenizer:
    return Tokenizer.from_file(str(MINILM / "tokenizer.json"))


@pytest.fixture(scope="module")
def corpus(wordpiece: WordPiece) -> list[str]:
    lines = CORPUS.read_text(encoding="utf-8").split("\n")  # not splitlines(): keep U+2028
    written = [line for line in lines if line and not line.startswith("#:")]
    assert len(written) >= 200
    vocab = sorted(t for t in wordpiece.vocab if not t.startswith("["))
    return written + SPECIAL_TEXTS + random_texts(vocab, 100)


def reference(
    hf: Tokenizer, texts: list[str], max_length: int | None
) -> list[HFEncoding]:
    """HF's encodings without padding (tokenizer.json pads to 128) and with our truncation."""
    hf.no_padding()
    if max_length is None:
        hf.no_truncation()
    else:
        hf.enable_truncation(max_length)
    return hf.encode_batch(texts)


def mismatches(
    wordpiece: WordPiece, hf: Tokenizer, texts: list[str], max_length: int | None
) -> list[str]:
    """A readable line for every text whose ids, mask or tokens differ from HF's."""
    found = []
    for text, ref in zip(texts, reference(hf, texts, max_length), strict=True):
        ours = wordpiece.encode(text, max_length=max_length)
        theirs = (ref.ids, ref.attention_mask, ref.tokens)
        if (ours.ids, ours.attention_mask, ours.tokens) != theirs:
            found.append(f"{text[:80]!r}\n  hf:   {ref.tokens[:30]}\n  ours: {ours.tokens[:30]}")
    return found


def test_corpus_matches_hf(
    wordpiece: WordPiece, hf: Tokenizer, corpus: list[str]
) -> None:
    bad = mismatches(wordpiece, hf, corpus, MAX_LENGTH)
    assert not bad, f"{len(bad)} of {len(corpus)} texts differ:\n" + "\n".join(bad[:20])
    assert len(corpus) >= 350
    print(f"{len(corpus)} texts tokenized identically to tokenizers {tokenizers.__version__}")


def test_corpus_covers_truncation(wordpiece: WordPiece, corpus: list[str]) -> None:
    lengths = [len(wordpiece.encode(t, max_length=None)) for t in corpus]
    assert sum(n > MAX_LENGTH for n in lengths) >= 5
    assert min(lengths) == 2  # the empty and whitespace-only texts: just [CLS] [SEP]


@pytest.mark.parametrize("max_length", [None, 2, 3, 5, 16, 127, 512])
def test_other_max_lengths(
    wordpiece: WordPiece, hf: Tokenizer, corpus: list[str], max_length: int | None
) -> None:
    bad = mismatches(wordpiece, hf, corpus, max_length)
    assert not bad, f"{len(bad)} of {len(corpus)} texts differ:\n" + "\n".join(bad[:20])


def test_every_code_point(wordpiece: WordPiece, hf: Tokenizer) -> None:
    """Each character between two letters: dropped, kept, split off or decomposed like HF.

    This checks the Unicode tables the running Python brings against HF's; a Python with a
    newer Unicode than 16.0 may need tokenizer.py's list of characters HF does not know."""
    points = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]
    blocks = [points[i : i + 256] for i in range(0, len(points), 256)]
    texts = [" ".join(f"a{chr(cp)}b" for cp in block) for block in blocks]
    bad = mismatches(wordpiece, hf, texts, None)
    assert not bad, f"{len(bad)} blocks of 256 code points differ:\n" + "\n".join(bad[:10])


def test_padding(wordpiece: WordPiece, hf: Tokenizer, corpus: list[str]) -> None:
    texts = corpus[:40] + SPECIAL_TEXTS[:5]
    hf.enable_truncation(MAX_LENGTH)
    hf.enable_padding(pad_id=wordpiece.pad_id, pad_token="[PAD]")  # to the longest in the batch
    try:
        expected = hf.encode_batch(texts)
    finally:
        hf.no_padding()
    ours = wordpiece.encode_batch(texts, MAX_LENGTH)
    assert [e.ids for e in ours] == [e.ids for e in expected]
    assert [e.attention_mask for e in ours] == [e.attention_mask for e in expected]
    assert [e.tokens for e in ours] == [e.tokens for e in expected]
    assert len({len(e) for e in ours}) == 1
    fixed = wordpiece.encode("hello world", max_length=MAX_LENGTH, pad_to=MAX_LENGTH)
    hf.enable_padding(length=MAX_LENGTH, pad_id=wordpiece.pad_id, pad_token="[PAD]")
    try:
        ref = hf.encode("hello world")
    finally:
        hf.no_padding()
    assert (fixed.ids, fixed.attention_mask) == (ref.ids, ref.attention_mask)
    assert sum(fixed.attention_mask) == 4 and len(fixed) == MAX_LENGTH
    unpadded = wordpiece.encode_batch(["a", "b c d"], MAX_LENGTH, pad=False)
    assert [len(e) for e in unpadded] == [3, 5]
    assert wordpiece.encode_batch([]) == []


def test_vocabulary_and_settings_match_tokenizer_json(wordpiece: WordPiece) -> None:
    spec = json.loads((MINILM / "tokenizer.json").read_text(encoding="utf-8"))
    assert wordpiece.vocab == spec["model"]["vocab"]
    assert wordpiece.max_input_chars_per_word == spec["model"]["max_input_chars_per_word"]
    assert spec["model"]["continuing_subword_prefix"] == "##"
    assert spec["normalizer"] == {
        "type": "BertNormalizer",
        "clean_text": True,
        "handle_chinese_chars": True,
        "strip_accents": None,
        "lowercase": True,
    }
    assert spec["pre_tokenizer"] == {"type": "BertPreTokenizer"}
    specials = {t["content"]: t["id"] for t in spec["added_tokens"]}
    assert specials == {t: wordpiece.vocab[t] for t in SPECIAL_TOKENS}
    ids = (wordpiece.cls_id, wordpiece.sep_id, wordpiece.unk_id, wordpiece.pad_id)
    assert ids == (101, 102, 100, 0)


def test_from_text_and_bad_max_length(wordpiece: WordPiece) -> None:
    text = (MINILM / "vocab.txt").read_text(encoding="utf-8")
    assert WordPiece(text.replace("\n", "\r\n")).vocab == wordpiece.vocab
    with pytest.raises(ValueError, match="max_length"):
        wordpiece.encode("hello", max_length=1)


def test_long_texts_read_in_pieces_match_hf(
    wordpiece: WordPiece, hf: Tokenizer, corpus: list[str]
) -> None:
    """Texts many pieces long (tokenizer.PIECE_CHARS), joined by every kind of space or
    none: the same tokens as HF's, whole and truncated."""
    rng = random.Random(34)
    joins = (" ", "\n", "\t", "\r\n", "", "\u3000", "\x00", " \u0301")
    texts = [join.join(rng.sample(corpus, 80)) for join in joins]
    assert min(map(len, texts)) > 3 * tokenizer.PIECE_CHARS
    for max_length in (None, MAX_LENGTH):
        bad = mismatches(wordpiece, hf, texts, max_length)
        assert not bad, f"max_length {max_length}: {len(bad)} texts differ:\n" + "\n".join(bad)


def test_a_limit_reads_only_as_much_text_as_it_needs(
    wordpiece: WordPiece, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A megabyte of text costs what its first tokens cost (issue 34: /textclass read
    all of it, 21 s and 1.5 GB, before keeping 128 tokens)."""
    text = "hello world, " * 100_000
    expected = wordpiece.text_ids(text[:2000])[:126]
    normalized: list[int] = []
    normalize = WordPiece.normalize
    monkeypatch.setattr(
        WordPiece, "normalize", staticmethod(lambda t: normalized.append(len(t)) or normalize(t))
    )
    assert wordpiece.text_ids(text, limit=126) == expected
    assert sum(normalized) < 2 * tokenizer.PIECE_CHARS, normalized
