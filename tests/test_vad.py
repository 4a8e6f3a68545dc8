"""The VAD app as a real component, against OpenVINO and silero-vad's own reference, natively."""

from __future__ import annotations

import shutil
import subprocess
import sys
import wave
from collections.abc import Callable
from pathlib import Path

import numpy as np
import openvino as ov
import pytest
from conftest import ROOT, run_component

pytestmark = pytest.mark.integration

APP = ROOT / "apps" / "vad"
MODEL = ROOT / "build" / "models" / "silero" / "silero_vad_openvino_16k.onnx"
RATE, CHUNK, CONTEXT = 16000, 512, 64
PHRASES = ["Voice activity detection finds the parts of a recording where someone speaks.",
           "Everything else is silence."]  # fmt: skip
SILENCES = [1.0, 1.5, 1.0]  # seconds before, between and after the phrases

Built = dict[str, Path]  # the `built` fixture: app name -> app folder
Speech = tuple[Path, list[tuple[float, float]]]  # the `speech` fixture
RecordProperty = Callable[[str, object], None]

sys.path.insert(0, str(APP))
from segments import speech_segments  # type: ignore[import-not-found]  # noqa: E402
from wav import AudioError, decode_wav  # type: ignore[import-not-found]  # noqa: E402


def write_wav(path: Path, samples: np.ndarray, rate: int = RATE, channels: int = 1) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.astype("<i2").tobytes())


def read_wav(path: Path) -> np.ndarray:
    with wave.open(str(path), "rb") as w:
        return np.frombuffer(w.readframes(w.getnframes()), "<i2")


@pytest.fixture(scope="session")
def speech(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[float, float]]]:
    """Real synthetic speech (espeak-ng), 16 kHz mono, padded with known silences.

    Returns the file and where each phrase really is, in seconds.
    """
    if not (shutil.which("espeak-ng") and shutil.which("sox")):
        pytest.fail("espeak-ng and sox are needed; ./build.sh test installs them")
    tmp = tmp_path_factory.mktemp("speech")
    parts, truth, t = [np.zeros(int(SILENCES[0] * RATE), np.int16)], [], SILENCES[0]
    for i, phrase in enumerate(PHRASES):
        raw, wav = tmp / f"p{i}.wav", tmp / f"p{i}_16k.wav"
        subprocess.run(
            ["espeak-ng", "-v", "en-us", "-s", "150", "-w", str(raw), phrase], check=True
        )
        subprocess.run(
            ["sox", str(raw), "-r", "16000", "-c", "1", "-b", "16", str(wav)], check=True
        )
        voice = read_wav(wav)
        parts += [voice, np.zeros(int(SILENCES[i + 1] * RATE), np.int16)]
        truth.append((t, t + len(voice) / RATE))
        t += len(voice) / RATE + SILENCES[i + 1]
    path = tmp / "speech.wav"
    write_wav(path, np.concatenate(parts))
    return path, truth


class NativeVAD:
    """silero's model interface (``model(chunk, sr)``, ``reset_states()``), natively on OpenVINO."""

    def __init__(self) -> None:
        self.request = ov.Core().compile_model(str(MODEL), "CPU").create_infer_request()
        self.reset_states()

    def reset_states(self) -> None:
        self.state = np.zeros((2, 1, 128), np.float32)
        self.context = np.zeros((1, CONTEXT), np.float32)

    def __call__(self, chunk, sr: int):  # type: ignore[no-untyped-def]
        import torch

        x = np.concatenate([self.context, np.asarray(chunk, np.float32).reshape(1, -1)], axis=1)
        result = self.request.infer({"input": x, "state": self.state})
        self.state = result["stateN"].copy()
        self.context = x[:, -CONTEXT:]
        return torch.tensor(result["output"].copy())


def native_probs(samples: np.ndarray) -> list[float]:
    vad = NativeVAD()
    audio = samples.astype(np.float32) / 32768.0
    audio = np.pad(audio, (0, -len(audio) % CHUNK))
    return [vad(audio[i : i + CHUNK], RATE).item() for i in range(0, len(audio), CHUNK)]


def test_probabilities_match_native_openvino(
    built: Built, speech: Speech, record_property: RecordProperty
) -> None:
    path, _ = speech
    done = run_component(built["vad"], str(path.name), "--probs", "--json", cwd=path.parent)
    assert done.code == 0, done.stderr
    guest = done.lines[0]["probs"]
    native = native_probs(read_wav(path))
    assert len(guest) == len(native) > 100
    worst = float(np.max(np.abs(np.array(guest) - np.array(native))))
    record_property("vad_worst_prob_diff", worst)
    print(f"\nVAD: {len(guest)} chunks, worst |guest - native| = {worst:.2e}")
    assert worst <= 1e-4


def test_segments_match_silero_reference(
    built: Built, speech: Speech, record_property: RecordProperty
) -> None:
    import torch
    from silero_vad import get_speech_timestamps  # type: ignore[import-untyped]

    path, truth = speech
    done = run_component(built["vad"], str(path.name), "--json", cwd=path.parent)
    assert done.code == 0, done.stderr
    guest = [tuple(s) for s in done.lines[0]["segments"]]
    samples = read_wav(path)
    audio = torch.tensor(samples.astype(np.float32) / 32768.0)
    reference = [(s["start"], s["end"]) for s in get_speech_timestamps(audio, NativeVAD())]
    print(f"\nVAD segments (samples): guest {guest}\n                       silero {reference}")
    assert len(guest) == len(reference) >= len(PHRASES)
    for (gs, ge), (rs, re_) in zip(guest, reference, strict=True):
        assert abs(gs - rs) <= CHUNK and abs(ge - re_) <= CHUNK
    record_property("vad_segments", len(guest))
    # And the speech found is where the phrases really are (espeak leaves short pauses
    # inside a phrase, so a phrase may be more than one segment).
    for start, end in guest:
        inside = [a - 0.3 <= start / RATE and end / RATE <= b + 0.3 for a, b in truth]
        assert any(inside), (start, end, truth)


def test_post_processing_matches_silero_on_made_up_probabilities() -> None:
    from silero_vad.utils_vad import (  # type: ignore[import-untyped]
        get_speech_timestamps_from_probs,
    )

    rng = np.random.default_rng(3)
    for trial in range(200):
        # Runs of speech-like and silence-like probabilities of random lengths.
        probs: list[float] = []
        while len(probs) < 300:
            level = rng.choice([0.05, 0.4, 0.45, 0.55, 0.9])
            probs += list(np.clip(rng.normal(level, 0.1, rng.integers(1, 40)), 0, 1))
        n = len(probs) * CHUNK - int(rng.integers(0, CHUNK))
        ours = speech_segments([float(p) for p in probs], n)
        theirs = [
            (s["start"], s["end"])
            for s in get_speech_timestamps_from_probs(probs, audio_length_samples=n)
        ]
        assert ours == theirs, trial


def test_human_output_lists_segments(built: Built, speech: Speech) -> None:
    path, _ = speech
    done = run_component(built["vad"], path.name, cwd=path.parent)
    assert done.code == 0, done.stderr
    # The same segments as --json gives (held to silero's above), in seconds.
    as_json = run_component(built["vad"], path.name, "--json", cwd=path.parent)
    segments = as_json.lines[0]["segments"]
    assert len(segments) >= len(PHRASES)
    want = [f"speech {start / RATE:7.3f}s - {end / RATE:7.3f}s" for start, end in segments]
    assert done.stdout.splitlines() == want


@pytest.mark.parametrize("kind", ["rate", "stereo", "truncated", "not wav", "missing"])
def test_bad_audio_gives_one_line_errors(
    built: Built, speech: Speech, tmp_path: Path, kind: str
) -> None:
    path, _ = speech
    samples = read_wav(path)[:RATE]
    target = tmp_path / "bad.wav"
    if kind == "rate":
        write_wav(target, samples, rate=8000)
        expect = "bad.wav is 8000 Hz, 1 channel(s), 16-bit; the VAD needs 16000 Hz mono 16-bit PCM"
    elif kind == "stereo":
        write_wav(target, np.repeat(samples, 2), channels=2)
        expect = "2 channel(s)"
    elif kind == "truncated":
        write_wav(target, samples)
        target.write_bytes(target.read_bytes()[:5000])
        expect = "is truncated"
    elif kind == "not wav":
        target.write_bytes(b"RIFX not a wave file at all")
        expect = "is not a readable WAV file"
    else:
        expect = "cannot open bad.wav: No such file or directory"
    done = run_component(built["vad"], target.name, cwd=tmp_path)
    done.assert_no_trap()
    assert done.code == 1
    assert expect in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    if kind != "not wav":  # a readable WAV of the wrong kind is not "not readable"
        assert "not a readable WAV file" not in done.stderr, done.stderr


# Files as sox writes them (its own WAV writer, not Python's): what the VAD
# says about each, and the conversion it suggests must then work.
SOX_FORMATS = {
    "8k": (["-r", "8000", "-b", "16", "-c", "1"], "8000 Hz, 1 channel(s), 16-bit"),
    "44k-stereo": (["-r", "44100", "-b", "16", "-c", "2"], "44100 Hz, 2 channel(s), 16-bit"),
    "8-bit": (["-r", "16000", "-b", "8", "-c", "1"], "16000 Hz, 1 channel(s), 8-bit"),
}


def sox_tone(path: Path, options: list[str]) -> None:
    if not shutil.which("sox"):
        pytest.fail("sox is needed; ./build.sh test installs it")
    subprocess.run(["sox", "-n", *options, str(path), "synth", "0.5", "sine", "440"], check=True)


@pytest.mark.parametrize("name", SOX_FORMATS)
def test_wrong_format_names_rate_found_and_needed_natively(tmp_path: Path, name: str) -> None:
    options, found = SOX_FORMATS[name]
    sox_tone(tmp_path / "x.wav", options)
    with pytest.raises(AudioError) as raised:
        decode_wav((tmp_path / "x.wav").read_bytes(), "x.wav")
    message = str(raised.value)
    assert message == (
        f"x.wav is {found}; the VAD needs 16000 Hz mono 16-bit PCM "
        "(e.g. sox x.wav -r 16000 -c 1 -b 16 out.wav)"
    )
    # The advice works: sox's output of that command is accepted, 0.5 s of it.
    advice = message[message.index("(e.g. ") + 6 : -1].split()
    subprocess.run(advice, cwd=tmp_path, check=True, capture_output=True)
    converted = decode_wav((tmp_path / "out.wav").read_bytes(), "out.wav")
    assert len(converted) == RATE // 2
    assert max(converted) > 0.3  # the tone, not silence


def test_unreadable_wav_still_says_what_is_needed() -> None:
    with pytest.raises(AudioError) as raised:
        decode_wav(b"RIFF\x04\x00\x00\x00WAVE", "cut.wav")
    message = str(raised.value)
    assert message.startswith("cut.wav is not a readable WAV file: ")
    assert message.endswith(
        "; the VAD needs 16000 Hz mono 16-bit PCM (e.g. sox cut.wav -r 16000 -c 1 -b 16 out.wav)"
    )


@pytest.mark.parametrize("name", ["8k", "44k-stereo"])
def test_wrong_format_in_the_component(built: Built, tmp_path: Path, name: str) -> None:
    options, found = SOX_FORMATS[name]
    sox_tone(tmp_path / "x.wav", options)
    done = run_component(built["vad"], "x.wav", cwd=tmp_path)
    done.assert_no_trap()
    assert done.code == 1
    assert done.stderr.strip() == (
        f"vad: error: x.wav is {found}; the VAD needs 16000 Hz mono 16-bit PCM "
        "(e.g. sox x.wav -r 16000 -c 1 -b 16 out.wav)"
    )


def test_long_recording_output_is_complete(built: Built, speech: Speech, tmp_path: Path) -> None:
    """Over 64 KiB of JSON on one line: wasmtime cuts single large writes short."""
    path, _ = speech
    samples = np.tile(read_wav(path), 12)  # about two minutes
    write_wav(tmp_path / "long.wav", samples)
    done = run_component(built["vad"], "long.wav", "--probs", "--json", cwd=tmp_path)
    assert done.code == 0, done.stderr
    assert len(done.stdout) > 65536
    probs = done.lines[0]["probs"]
    assert len(probs) == -(-len(samples) // CHUNK)
