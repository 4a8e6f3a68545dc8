"""Numbers read aloud in Japanese, in hiragana: 1980 -> せんきゅうひゃくはちじゅう.

The readings are those Kokoro's phoneme style was made with (misaki 0.7):
digits by their common readings (4 よん, 7 なな, 9 きゅう), the sound
changes of 300 さんびゃく, 600 ろっぴゃく, 800 はっぴゃく, 3000 さんぜん and
8000 はっせん, 1000 read せん alone but いっせん inside a larger number
(11000 いちまんいっせん), groups of 万 (10^4) and 億 (10^8). Numbers of ten
digits or more are read digit by digit.

>>> reading("0"), reading("1050"), reading("120000"), reading("300000000")
('ゼロ', 'せんごじゅう', 'じゅうにまん', 'さんおく')
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
