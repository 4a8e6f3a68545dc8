"""The speak app's text handling (apps/speak/speech.py, wav_writer.py) natively, and
its command line in a real component: sentences, chunks of at most
MAX_TOKENS, the WAV format, and every bad input a clear message, never a trap.
"""

from __future__ import annotations

import io
import sys
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ROOT, build_app, run_component

SPEAK = ROOT / "apps" / "speak"
MODELS = ROOT / "build" / "models"


@pytest.fixture(scope="module")
def speech() -> Any:
    build_app(SPEAK)
    sys.path.insert(0, str(SPEAK))
    import speech

    return speech


@pytest.fixture(scope="module")
def speaker(speech: Any) -> Any:
    """Reading only: the model is never loaded by these tests."""
    return speech.Speaker(str(MODELS / "speak"), str(MODELS / "openjtalk" / "naist-jdic"))


def test_sentences_are_cut_after_their_ends(speech: Any) -> None:
    want = ["はい。", "そう？", "ええ！", "ok!", "つぎ"]
    assert speech.sentences("はい。そう？ええ！ok!\nつぎ") == want
    assert speech.sentences(" \n。 ") == ["。"]
    assert speech.sentences("") == []


def test_chunks_are_at_most_the_limit_and_lose_nothing(speech: Any) -> None:
    words = [f"w{i:03d}" + "a" * (i % 7) for i in range(400)]
    text = " ".join(w + ("," if i % 13 == 12 else "") for i, w in enumerate(words))
    pieces = speech.chunks(text)
    assert len(pieces) > 1 and all(0 < len(p) <= speech.MAX_TOKENS for p in pieces)
    assert " ".join(pieces).split() == text.split()  # every word, in order, none cut
    assert speech.chunks("a" * 1200, limit=500) == ["a" * 500, "a" * 500, "a" * 200]
    assert speech.chunks("") == []


def test_a_long_sentence_becomes_chunks_the_model_takes(speaker: Any, speech: Any) -> None:
    sentence = "、".join(["東京から大阪まで新幹線で行きます"] * 40) + "。"
    planned = speaker.plan(sentence)
    assert len(planned) >= 3
    assert all(len(speaker.tokens(c)) <= speech.MAX_TOKENS for c in planned)


class ShortRunsOnly:
    """A runner that refuses runs over ``limit`` tokens as OpenVINO refuses too
    long an audio (RuntimeError), and otherwise makes a second per token."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.runs: list[int] = []

    def run_numpy(self, inputs: Any) -> dict[str, Any]:
        tokens = inputs["tokens"].shape[1] - 2  # without the two padding tokens
        if tokens > self.limit:
            raise RuntimeError("[CPU] Multiply node ... Check 'input_shape[j] == 1' failed")
        self.runs.append(tokens)
        return {"audio": np.full(tokens * 24_000, 0.5, np.float32)}


def test_a_run_the_host_refuses_as_too_long_is_said_in_halves(speech: Any) -> None:
    """Issue 34: OpenVINO makes at most ~1 million samples in a run; the piece is
    cut as chunks() cuts, each part said with the usual pause between them."""
    runner = ShortRunsOnly(limit=100)
    speaker = speech.Speaker(
        str(MODELS / "speak"), str(MODELS / "openjtalk" / "naist-jdic"), runner=runner
    )
    piece = speaker.plan("あいうえお" * 60)[0]
    audio = speaker.synthesize(piece, "jf_alpha", 1.0)
    tokens = len(speaker.tokens(piece))
    cuts = len(runner.runs) - 1
    # Every token is said but the spaces the cuts fall on (chunks() drops those).
    assert tokens > 200 and max(runner.runs) <= 100 and sum(runner.runs) == tokens - cuts
    pause = int(speech.PAUSE_SECONDS * speech.SAMPLE_RATE)
    assert len(audio) == sum(runner.runs) * 24_000 + cuts * pause
    # A short run that fails is not about its length: the error is the caller's.
    # Slower speech is longer: at speed 0.5 pieces over RUN_TOKENS / 2 are cut
    # before the host is asked (it would refuse the longest of them).
    speaker._model = runner = ShortRunsOnly(limit=10_000)
    speaker.synthesize(piece, "jf_alpha", 0.5)
    assert len(runner.runs) >= 2 and max(runner.runs) <= speech.RUN_TOKENS * 0.5, runner.runs
    speaker._model = ShortRunsOnly(limit=10)
    short = speaker.plan("あいうえおかきくけこ")[0]
    assert len(speaker.tokens(short)) < speech.MIN_SPLIT
    with pytest.raises(RuntimeError, match="input_shape"):
        speaker.synthesize(short, "jf_alpha", 1.0)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("😀です", "'😀' (U+1F600 GRINNING FACE)"),
        ("한국어", "'한' (U+D55C HANGUL SYLLABLE HAN)"),
        ("今日は♪", "'♪' (U+266A EIGHTH NOTE)"),
        ("straße", "'ß' (U+00DF LATIN SMALL LETTER SHARP S)"),
        ("。・。", "nothing to say"),
        ("はい\ud800", "U+D800 is half of a UTF-16 pair"),
    ],
)
def test_text_without_a_reading_names_the_character(
    speaker: Any, speech: Any, text: str, words: str
) -> None:
    with pytest.raises(speech.UnreadableText) as raised:
        speaker.plan(text)
    assert words in str(raised.value)


def test_symbols_with_a_reading_are_read_and_ascii_marks_may_be_silent(speaker: Any) -> None:
    assert speaker.phonemize("αとβ") == "aɾɯɸa to beːta"
    assert "ʔto" in speaker.phonemize("a@b")  # ＠ アット
    assert speaker.phonemize("03-1234") == speaker.phonemize("03 1234")


@pytest.mark.parametrize(
    ("text", "read", "not_read"),
    [
        ("それは何ですか。", "naɴ desɨ", "naɲi"),  # 何 before d: なん
        ("何の本ですか。", "nanno hoɴ", "naɲi"),
        ("何をしているんですか。", "naɲi o", "naɴ o"),  # before o: なに
        ("何もありません。", "naɲi mo", "naɴ"),
        ("何になりたいですか。", "naɲi ɲi", "naɴ"),  # before に too
        ("4月1日です。", "ʦɨitaʨi", "iʨiɲiʨi"),  # the first of the month: ついたち
        ("一日中雨が降っていた。", "iʨiɲiʨiʥɨː", "ʦɨitaʨi"),  # a whole day: いちにち
    ],
)
def test_readings_that_depend_on_the_next_or_previous_word(
    speaker: Any, text: str, read: str, not_read: str
) -> None:
    phonemes = speaker.phonemize(text)
    assert read in phonemes and not_read not in phonemes, phonemes


def test_a_sentence_over_openjtalks_limit_is_refused(speaker: Any, speech: Any) -> None:
    with pytest.raises(speech.SentenceTooLong, match="end sentences with 。"):
        speaker.phonemize("あ" * 3000)


def test_bad_voice_and_speed_are_refused(speech: Any) -> None:
    with pytest.raises(ValueError, match="unknown voice 'x'; the voices are jf_alpha"):
        speech.check_voice("x")
    for speed in (0.49, 2.01, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="speed must be from 0.5 to 2.0"):
            speech.check_speed(speed)


def test_wav_header_and_samples_read_back(speech: Any) -> None:
    sys.path.insert(0, str(SPEAK))
    import wav_writer

    audio = np.array([0.0, 0.25, -0.5, 1.5, -2.0], np.float32)
    data = wav_writer.pcm16(audio)
    with wave.open(io.BytesIO(wav_writer.header(24_000, len(data)) + data)) as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate()) == (1, 2, 24_000)
        got = np.frombuffer(w.readframes(w.getnframes()), "<i2")
    assert got.tolist() == [0, 8191, -16383, 32767, -32767]
    streamed = bytearray(wav_writer.header(24_000, None) + data)
    for offset, value in wav_writer.sizes_at(len(data)):
        streamed[offset : offset + len(value)] = value
    assert bytes(streamed) == wav_writer.header(24_000, len(data)) + data


@pytest.mark.integration
def test_the_command_writes_speech_and_refuses_bad_input(tmp_path: Path) -> None:
    (tmp_path / "text.txt").write_text("はい、そうです。\nいいえ。", encoding="utf-8")
    done = run_component(SPEAK, "--text", "text.txt", "-o", "a.wav", cwd=tmp_path, timeout=600)
    assert done.code == 0, done.stderr
    with wave.open(str(tmp_path / "a.wav")) as w:
        assert w.getframerate() == 24_000 and 1.0 < w.getnframes() / 24_000 < 5.0
    bad = run_component(SPEAK, "今日は😀です。", "-o", "b.wav", cwd=tmp_path)
    bad.assert_no_trap()
    assert bad.code == 1 and "U+1F600 GRINNING FACE" in bad.stderr
    assert not (tmp_path / "b.wav").exists()  # read whole before the file is made
    usage = run_component(SPEAK, "はい", "--voice", "nobody", cwd=tmp_path)
    assert usage.code == 1 and "unknown voice 'nobody'" in usage.stderr
    (tmp_path / "lines.txt").write_text("はい\n♪\nいいえ\n", encoding="utf-8")
    lines = run_component(SPEAK, "--phonemes", "lines.txt", cwd=tmp_path)
    assert lines.code == 1 and lines.stdout.splitlines() == ["hai", "", "iːe"]
    assert "lines.txt:2:" in lines.stderr and "U+266A" in lines.stderr


def test_audio_that_is_not_finite_raises(speech: Any) -> None:
    """A model that answers NaN (a rewrite of Kokoro tried for speed did, on
    some sentences) must not become a WAV of garbage."""

    class NaNModel:
        def run_numpy(self, inputs: Any) -> dict[str, np.ndarray]:
            return {"audio": np.full(2400, np.nan, np.float32)}

    dictionary = MODELS / "openjtalk" / "naist-jdic"
    speaker = speech.Speaker(str(MODELS / "speak"), str(dictionary), runner=NaNModel())
    with pytest.raises(RuntimeError, match="is not finite"):
        speaker.synthesize("hai", "jf_alpha")
