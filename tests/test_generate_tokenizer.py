"""apps/generate/gemma_tokenizer.py (pure Python) against transformers' Gemma 3 tokenizer.

The reference is the tokenizer transformers builds from the GGUF
(``AutoTokenizer.from_pretrained(folder, gguf_file="model.gguf")``), as prepare.py saves
it (``save_pretrained``) in GEMMA3/hf-tokenizer; ours reads GEMMA3/tokenizer/tokenizer.bin, which
vocabulary.py writes from the same GGUF. Over a few thousand texts, built deterministically
from fragments (prose, code, CJK, emoji, whitespace runs, characters the vocabulary lacks,
special-token strings) plus fixed cases, ours must give the same ids, the same decoded
text (with and without special tokens), and the same text when streamed token by token.
"""

from __future__ import annotations

import random
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import app_module, build_app

ROOT = Path(__file__).resolve().parent.parent
# TODO(generate): ROOT / "build" / "models" / "gemma3" once prepare.py writes it there.
GEMMA3 = ROOT / "build" / "models" / "gemma3"


vocabulary = app_module("generate", "vocabulary")
_tokenizer = app_module("generate", "gemma_tokenizer")
Tokenizer = _tokenizer.Tokenizer
BYTE, CONTROL, SPACE = _tokenizer.BYTE, _tokenizer.CONTROL, _tokenizer.SPACE


@pytest.fixture(scope="module", autouse=True)
def prepared() -> None:
    """The build writes both files (apps/generate/prepare.py); a no-op when current."""
    build_app(ROOT / "apps" / "generate")


@pytest.fixture(scope="module")
def tok() -> Any:
    path = GEMMA3 / "tokenizer" / "tokenizer.bin"
    assert path.is_file(), f"{path} is missing: apps/generate/prepare.py writes it"
    return Tokenizer.load(str(path))


@pytest.fixture(scope="module")
def hf() -> Any:
    folder = GEMMA3 / "hf-tokenizer"
    assert (folder / "tokenizer.json").is_file(), f"{folder} is missing: prepare.py saves it"
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(folder))


# ---------------------------------------------------------------------------------------
# The texts.

PROSE = [
    "The quick brown fox jumps over the lazy dog.",
    "It was the best of times, it was the worst of times.",
    "Call me Ishmael. Some years ago - never mind how long precisely - I went to sea.",
    "In 2024, the company's revenue grew 12.5% to $3.4 billion (see Table 2).",
    "She said, \"Don't worry; we'll be fine!\" and left at 5:30 p.m.",
    "Mr. O'Neil's dog-friendly café re-opened on Jan. 3rd, 1999.",
    "E-mail: jane.doe+test@example.com, web: https://example.org/a?b=c&d=e#f",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "A naïve coöperation between façade and résumé: déjà vu, über, señor, Ærøskøbing.",
    "The capital of France is",
    "Once upon a time, in a land far, far away, there lived a dragon.",
    "Q: What is 2+2? A: 4. Q: And 17*23? A: 391.",
    "I can't believe it's not butter!!! Really?!?",
    "Supercalifragilisticexpialidocious antidisestablishmentarianism",
    "ALL CAPS SENTENCE WITH NUMBERS 1234567890 AND SYMBOLS ~!@#$%^&*()_+",
    "Москва — столица России. Привет, мир!",
    "Η γρήγορη καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο.",
    "مرحبا بالعالم، هذه جملة عربية.",
    "שלום עולם, זה משפט בעברית.",
    "नमस्ते दुनिया, यह एक हिंदी वाक्य है।",
    "สวัสดีชาวโลก นี่คือประโยคภาษาไทย",
    "Xin chào thế giới, đây là một câu tiếng Việt.",
    "Zażółć gęślą jaźń. Příliš žluťoučký kůň úpěl ďábelské ódy.",
    "Türkçe: İstanbul'da ılık bir gün. Ğğ Şş Çç Öö Üü",
]
CJK = [
    "日本語のテキストです。東京は日本の首都です。",
    "吾輩は猫である。名前はまだ無い。",
    "ひらがなとカタカナと漢字が混ざった文章。ｶﾀｶﾅ半角も。",
    "中文文本测试。北京是中国的首都。",
    "繁體中文：臺灣的首都是臺北。",
    "我爱自然语言处理，也喜欢机器学习！",
    "한국어 텍스트입니다. 서울은 한국의 수도입니다.",
    "안녕하세요, 세계! 반갑습니다.",
    "「こんにちは」と彼は言った。『本当に？』",
    "全角スペース　と全角数字１２３、記号！？",
]
CODE = [
    "def f(x):\n    return x * 2  # double\n",
    "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}\n",
    'if __name__ == "__main__":\n    main(sys.argv[1:])\n',
    "const add = (a, b) => a + b;\nconsole.log(add(1, 2));",
    '<html><body><div class="x"><b>bold</b> <i>it</i></div></body></html>',
    "<table><tr><td>1</td><td>2</td></tr></table>",
    '{"key": [1, 2.5, true, null], "nested": {"a": "b"}}',
    "SELECT id, name FROM users WHERE age > 21 ORDER BY name DESC;",
    '#include <stdio.h>\nint main(void) { printf("%d\\n", 42); return 0; }',
    "x = [i**2 for i in range(10) if i % 2 == 0]",
    "        indented = True\n            deeper = False\n",
    "\t\tdef tabbed():\n\t\t\tpass\n",
    "a>b && c<d || e>=f; x<<=2; y>>>=1; z->w; p::q",
    "$ ls -la | grep '^d' > /dev/null 2>&1",
    "| col1 | col2 |\n|------|------|\n| a    | b    |",
    "```python\nprint('hi')\n```",
    "// comment\n/* block */ /** doc */ # hash -- dash ;; semi",
    "matrix[0][1] = {{1, 2}, {3, 4}};",
    "<start_of_turn>user\nWrite a haiku.<end_of_turn>\n<start_of_turn>model\n",
]
EMOJI = [
    "😀",
    "👍🏽",
    "👨‍👩‍👧‍👦",
    "🏳️‍🌈",
    "🇯🇵",
    "🇺🇸🇬🇧",
    "❤️",
    "❤️‍🔥",
    "🧑🏿‍🚀",
    "1️⃣",
    "#️⃣",
    "👩🏻‍❤️‍💋‍👨🏼",
    "🐈‍⬛",
    "😶‍🌫️",
    "🫠",
    "🪿",
    "🙂‍↔️",
    "©️",
    "™",
    "☕",
    "🏴󠁧󠁢󠁳󠁣󠁴󠁿",
]
WHITESPACE = [
    " ",
    "  ",
    "   ",
    " " * 8,
    " " * 31,
    " " * 32,
    " " * 45,
    "\t",
    "\t\t",
    "\t" * 31,
    "\t" * 33,
    "\n",
    "\n\n",
    "\n" * 31,
    "\n" * 32,
    "\n" * 70,
    "\r\n",
    "\r\n\r\n",
    "\r",
    " \n",
    "\n ",
    " \t \n",
    "\t \t",
    "\x0b",
    "\x0c",
    "\u00a0",
    "\u3000",
    "\u2003",
    "\u200b",
    "\u2028",
    "\u2029",
    "\x85",
    "\ufeff",
    "\u200d",
    "\t\n\t\n",
    "  \n\n  \n",
]
# Characters the vocabulary lacks, so they fall back to bytes (and a few it has).
RARE = [
    "\x00",
    "\x01",
    "\x07",
    "\x1b",
    "\x1f",
    "\x7f",
    "\x80",
    "\x9f",
    "\ue000",
    "\uf8ff",
    "\U000f0000",
    "\U0010fffd",
    "\U0010ffff",
    "\uffff",
    "\ufffe",
    "\ufffd",
    "\u0378",
    "\U0002a6d6",
    "\U0002b820",
    "\U00030000",
    "\U000313a0",
    "\U0002ebe0",
    "\U0001d11e",
    "\U00013000",
    "\U0001f8ff",
    "\U000e0001",
    "e\u0301",
    "\u0301\u0302\u0303",
    "ﬁ",
    "Ａ",
]
SPECIAL = [
    "<bos>",
    "<eos>",
    "<pad>",
    "<unk>",
    "<mask>",
    "<start_of_turn>",
    "<end_of_turn>",
    "<start_of_image>",
    "<end_of_image>",
    "<image_soft_token>",
    "[multimodal]",
    "<unused0>",
    "<unused99>",
    "<unused6241>",
    "<unused6242>",
    "<b>",
    "</b>",
    "<h1>",
    "</footer>",
    "<blockquote>",
    "<start_of_turn",
    "start_of_turn>",
    "<<bos>>",
    "<bos<eos>>",
    "<0x41>",
    "<0xE3><0x81><0x82>",
    "<0x0A>",
    ">▁</",
    "> </",
    "></",
    "▁",
    "▁▁",
    "▁x",
    "x▁",
    "<",
    ">",
    "<>",
    "[",
    "[multimodal",
    "<b",
    "</",
    "<unused",
    "<Bos>",
]
NUMBERS = ["0", "7", "42", "3.14159", "-1e-9", "1,000,000", "2024-06-01", "12:34:56", "0xFF"]
WORDS = (
    "the of and to in is you that it he was for on are as with his they I at be this have "
    "from or one had by word but not what all were we when your can said there use an each "
    "which she do how their if will up other about out many then them these so some her "
    "would make like him into time has look two more write go see number no way could people "
    "tokenizer merge vocabulary sentencepiece transformers WebAssembly component Gemma"
).split()
FRAGMENTS = [PROSE, CJK, CODE, EMOJI, WHITESPACE, RARE, SPECIAL, NUMBERS, WORDS]
# A random character from these code point ranges (surrogates excepted), now and then.
RANGES = [
    (0x20, 0x7E),
    (0x00, 0x1F),
    (0xA0, 0x24F),
    (0x300, 0x36F),
    (0x370, 0x52F),
    (0x590, 0x6FF),
    (0x900, 0xDFF),
    (0xE00, 0xEFF),
    (0x1100, 0x11FF),
    (0x2000, 0x2BFF),
    (0x3000, 0x30FF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7A3),
    (0xE000, 0xF8FF),
    (0xF900, 0xFFFF),
    (0x10000, 0x1FFFF),
    (0x1F300, 0x1FAFF),
    (0x20000, 0x3134F),
    (0xE0000, 0x10FFFF),
]
SEPARATORS = ["", "", " ", " ", " ", "  ", "\n", "\n\n", "\t", ", ", ". ", " \n"]

FIXED = [
    "",
    " ",
    "a",
    "Hello world",
    "hello world",
    " Hello",
    "Hello ",
    "  lead",
    "trail  ",
    "x   y",
    "a b c d e f g",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "ab" * 100,
    "=" * 80,
    "-" * 150,
    "." * 1000,
    "0123456789" * 30,
    "日本" * 500,
    "😀" * 200,
    "\U0002a6d6" * 100,
    " " * 100,
    "\n" * 100,
    "\t" * 100,
    " \n" * 100,
    "\r\n" * 50,
    "<bos>" * 10,
    "<bos><bos>hi<eos>",
    "\n<start_of_turn>model\n",
    "<b><i>x</i></b>",
    "> </ >  </ >\t</",
    "a▁b",
    "▁" * 40,
    "<unused5>text<unused5>",
    "The Project Gutenberg EBook " * 300,  # a long text of one repeated word pattern
    " ".join(WORDS) * 20,
]


def _random_char(rng: random.Random) -> str:
    lo, hi = rng.choice(RANGES)
    cp = rng.randint(lo, hi)
    return chr(cp) if not 0xD800 <= cp <= 0xDFFF else "?"


def random_texts(count: int, seed: int) -> list[str]:
    """Seeded compositions of fragments, joined by separators, with random characters."""
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        parts = []
        for _ in range(rng.choice((1, 2, 3, 5, 8, 13, 30))):
            roll = rng.random()
            if roll < 0.12:
                parts.append("".join(_random_char(rng) for _ in range(rng.randint(1, 6))))
            else:
                parts.append(rng.choice(rng.choice(FRAGMENTS)))
            parts.append(rng.choice(SEPARATORS))
        text = "".join(parts)
        if rng.random() < 0.1:  # a cut anywhere, even inside a special token or a ZWJ sequence
            text = text[rng.randint(0, len(text)) :]
        texts.append(text)
    return texts


def long_texts(seed: int) -> list[str]:
    """A few texts of 5-20 kB."""
    rng = random.Random(seed)
    return ["".join(random_texts(rng.randint(40, 120), rng.randint(0, 10**6))) for _ in range(6)]


CORPUS = FIXED + PROSE + CJK + CODE + EMOJI + WHITESPACE + RARE + SPECIAL + NUMBERS
CORPUS += random_texts(2100, seed=20250601) + long_texts(seed=7)


# ---------------------------------------------------------------------------------------
# The tests.


def _hf_ids(hf: Any, texts: list[str], add_bos: bool = True) -> list[list[int]]:
    out = hf(texts, add_special_tokens=add_bos)
    return [list(ids) for ids in out["input_ids"]]


@pytest.fixture(scope="module")
def encoded(tok: Any) -> list[list[int]]:
    return [tok.encode(text) for text in CORPUS]


def test_corpus_is_varied() -> None:
    assert len(CORPUS) >= 2000
    assert len(set(CORPUS)) > 0.95 * len(CORPUS)
    assert max(map(len, CORPUS)) > 5000
    assert "" in CORPUS


def test_encode_matches_hf(tok: Any, hf: Any, encoded: list[list[int]]) -> None:
    expected = _hf_ids(hf, CORPUS)
    bad = [
        f"{text[:60]!r}\n  hf:   {theirs[:24]}\n  ours: {ours[:24]}"
        for text, ours, theirs in zip(CORPUS, encoded, expected, strict=True)
        if ours != theirs
    ]
    assert not bad, f"{len(bad)} of {len(CORPUS)} texts differ:\n" + "\n".join(bad[:10])
    # Without <bos> too, and with an empty word cache.
    tok._cache.clear()
    plain = [tok.encode(text, add_bos=False) for text in CORPUS[:300]]
    assert plain == _hf_ids(hf, CORPUS[:300], add_bos=False)


def test_decode_matches_hf(tok: Any, hf: Any, encoded: list[list[int]]) -> None:
    for skip in (False, True):
        expected = hf.batch_decode(encoded, skip_special_tokens=skip)
        ours = [tok.decode(ids, skip_special=skip) for ids in encoded]
        bad = [(t, o) for t, o in zip(expected, ours, strict=True) if t != o]
        assert not bad, f"skip_special={skip}: {len(bad)} differ, first {bad[0]!r}"


def test_round_trip(tok: Any, hf: Any) -> None:
    """decode(encode(s)) == s wherever transformers' round trip holds; it fails only for
    texts with a literal "▁" (U+2581), which encodes as a space does."""
    ours = [tok.decode(tok.encode(text, add_bos=False)) for text in CORPUS]
    theirs = hf.batch_decode(_hf_ids(hf, CORPUS, add_bos=False))
    for text, mine, ref in zip(CORPUS, ours, theirs, strict=True):
        assert (mine == text) == (ref == text), repr(text[:80])
        if mine != text:
            assert SPACE in text and mine == text.replace(SPACE, " "), repr(text[:80])
    assert sum(o == t for o, t in zip(ours, CORPUS, strict=True)) > 0.9 * len(CORPUS)


def _streamed(tok: Any, ids: list[int], skip: bool) -> Iterator[str]:
    stream = tok.decoder(skip)
    for i in ids:
        yield stream.add(i)
    yield stream.flush()


def test_streaming_equals_whole_decode(tok: Any, encoded: list[list[int]]) -> None:
    for ids in encoded:
        for skip in (False, True):
            whole = tok.decode(ids, skip_special=skip)
            assert "".join(_streamed(tok, ids, skip)) == whole
            assert "".join(tok.decode_stream(ids, skip)) == whole


def _random_ids(tok: Any, rng: random.Random) -> list[int]:
    """Ids as a model might sample them, and worse: runs of byte tokens (valid UTF-8 or
    not), control tokens amid them, "▁" pieces, ids past the vocabulary."""
    byte0 = tok.token_id("<0x00>")
    ids: list[int] = []
    for _ in range(rng.randint(0, 40)):
        roll = rng.random()
        if roll < 0.3:
            ids += [byte0 + b for b in _random_char(rng).encode("utf-8")]
        elif roll < 0.45:
            ids.append(byte0 + rng.randrange(256))
        elif roll < 0.55:
            ids.append(rng.choice((0, 1, 2, 3, 4, 5, 105, 106, 107, 138, 255999, 262143)))
        elif roll < 0.57:
            ids.append(len(tok) + rng.randrange(100))
        else:
            ids.append(rng.randrange(len(tok)))
    return ids


def test_decode_random_ids_matches_hf(tok: Any, hf: Any) -> None:
    rng = random.Random(99)
    batch = [_random_ids(tok, rng) for _ in range(1500)]
    for skip in (False, True):
        expected = hf.batch_decode(batch, skip_special_tokens=skip)
        for ids, ref in zip(batch, expected, strict=True):
            assert tok.decode(ids, skip_special=skip) == ref, ids
            assert "".join(_streamed(tok, ids, skip)) == ref, ids


def test_documented_cases(tok: Any) -> None:
    """What tokenizer.py's docstring promises (each also checked against HF above)."""
    ids = tok.encode("<start_of_turn>user\nHi!<end_of_turn>\n")
    assert ids == [2, 105, 2364, 107, 10979, 236888, 106, 107]
    assert tok.decode(ids, skip_special=True) == "user\nHi!\n"
    assert tok.encode("<bos>", add_bos=False) == [tok.bos_id]  # control tokens typed in text
    assert tok.encode("\n" * 40, add_bos=False) == [137, 115]  # 31 + 9 newlines: added tokens
    # Runs of spaces are merged, smallest first: 16 + 24, not SentencePiece's 31 + 9.
    spaces = tok.encode(" " * 40, add_bos=False)
    assert spaces == [tok.token_id(SPACE * 16), tok.token_id(SPACE * 24)]
    assert tok.encode("<0x41>", add_bos=False) != [tok.token_id("<0x41>")]  # no byte token


def test_byte_runs_are_held_back_until_they_end(tok: Any) -> None:
    byte0 = tok.token_id("<0x00>")
    a = [byte0 + b for b in "あ".encode()]
    stream = tok.decoder()
    assert [stream.add(i) for i in a] == ["", "", ""]
    assert stream.add(tok.token_id("▁x")) == "あ x"
    # One invalid byte makes the whole run U+FFFD, byte for byte, as tokenizers does.
    assert tok.decode([*a, byte0 + 0xFF]) == "\ufffd" * 4
    assert tok.decode([*a, 1, byte0 + 0xFF]) == "あ<eos>\ufffd"
    assert tok.decode([a[0], tok.bos_id, *a[1:]], skip_special=True) == "あ"
    with pytest.raises(ValueError, match="negative"):
        tok.decode([-1])


def test_vocabulary_matches_hf(tok: Any, hf: Any) -> None:
    vocab = hf.get_vocab()
    assert len(tok) == len(vocab) == 262_144
    assert tok.vocab == vocab
    special = set(hf.all_special_ids)
    assert tok.special_ids == {i for i in range(len(tok)) if tok.types[i] == CONTROL}
    assert special <= tok.special_ids
    added = hf.added_tokens_decoder
    assert set(tok._added.values()) == set(added)
    assert {i for i in added if added[i].special} == tok.special_ids
    assert (tok.bos_id, tok.eos_id, tok.unk_id, tok.pad_id) == (2, 1, 3, 0)
    assert sum(t == BYTE for t in tok.types) == 256
    assert tok.token_id("<end_of_turn>") == 106 and tok.token_id("<start_of_turn>") == 105
    assert tok._bridges == (">▁</",)
    with pytest.raises(KeyError):
        tok.token_id("<no such token>")


def test_speed(tok: Any) -> None:
    """Generous bounds (natively; the component is some 3-10x slower): load < 1 s,
    10 kB of new text < 0.5 s."""
    start = time.perf_counter()
    Tokenizer.load(str(GEMMA3 / "tokenizer" / "tokenizer.bin"))
    assert time.perf_counter() - start < 1.0
    text = "".join(random_texts(60, seed=5))[:10_000]
    tok._cache.clear()
    start = time.perf_counter()
    tok.encode(text)
    assert time.perf_counter() - start < 0.5


def test_write_vocabulary(tmp_path: Path) -> None:
    """A tiny GGUF through write_vocabulary: respelled space runs, types, header."""
    from gguf import GGUFWriter, TokenType

    pieces = ["<pad>", "<eos>", "<bos>", "<unk>", "\n", "  ", "   "]
    pieces += [f"<0x{b:02X}>" for b in range(256)] + ["a", "b", "ab", "▁", "▁a", "<b>"]
    types = [TokenType.CONTROL] * 4 + [TokenType.USER_DEFINED] * 3 + [TokenType.BYTE] * 256
    types += [TokenType.NORMAL] * 5 + [TokenType.USER_DEFINED]
    scores = [-1000.0] * 7 + [0.0] * 256 + [-float(i) for i in range(6)]
    gguf_path = tmp_path / "tiny.gguf"
    writer = GGUFWriter(str(gguf_path), "gemma3")
    writer.add_tokenizer_model("llama")
    writer.add_token_list(pieces)
    writer.add_token_scores(scores)
    writer.add_token_types([int(t) for t in types])
    writer.add_bos_token_id(2)
    writer.add_eos_token_id(1)
    writer.add_unk_token_id(3)
    writer.add_pad_token_id(0)
    writer.add_add_bos_token(True)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    out = tmp_path / "out" / "tokenizer.bin"
    vocabulary.write_vocabulary(gguf_path, out)
    tiny = Tokenizer.load(str(out))
    assert tiny.pieces[5:7] == ["▁▁", "▁▁▁"] and list(tiny.types[4:7]) == [4, 1, 1]
    assert (tiny.bos_id, tiny.eos_id, tiny.add_bos, tiny.add_eos) == (2, 1, True, False)
    assert tiny.scores is not None and list(tiny.scores[-6:]) == [-0.0, -1, -2, -3, -4, -5]
    assert tiny.encode("ab a<b>\n\n  ") == [2, 265, 267, 268, 4, 4, 5]
    assert tiny.encode("é") == [2, 7 + 0xC3, 7 + 0xA9]
    assert tiny.decode(tiny.encode("ab a<b>\n\n  é")) == "<bos>ab a<b>\n\n  é"
    data = out.read_bytes()
    with pytest.raises(ValueError, match="version"):
        Tokenizer.from_bytes(b"XXXXXXXX" + data[8:])
    with pytest.raises(ValueError, match="bytes"):
        Tokenizer.from_bytes(data[:-1])
    assert struct.unpack_from("<I", data, 12)[0] == len(pieces)
    with pytest.raises(ValueError, match="repeats"):
        vocabulary.vocabulary_bytes(["▁▁", "  "], [0, 0], [1, 4], (-1, -1, -1, -1), True, False)
