"""vad: streaming voice-activity detection with silero VAD through wasinn.

    vad FILE.wav            speech segments (start and end in seconds)
    vad FILE.wav --probs    the speech probability of every 32 ms chunk
    add --json for machine-readable output

FILE.wav must be 16 kHz, mono, 16-bit PCM (convert with e.g.
`sox in.wav -r 16000 -c 1 -b 16 out.wav`). The model is read from
/models/silero (prepared by build.sh from the silero-vad wheel).
"""

from __future__ import annotations

import json
import sys

import numpy as np
import numpy.typing as npt
from segments import CHUNK, speech_segments
from wav import RATE, read_wav
from wit_world import exports

from wasinn import Model, print_line, run_command

MODEL = "/models/silero/silero_vad_openvino_16k.onnx"
CONTEXT = 64  # samples of the previous chunk the model sees before each new one


def windows(samples: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """The model's inputs, one row per CHUNK samples (zero-padded at the end): the
    chunk after the last CONTEXT samples of the chunk before it (zeros for the first)."""
    chunks = np.pad(samples, (0, -len(samples) % CHUNK)).reshape(-1, CHUNK)
    context = np.zeros_like(chunks[:, :CONTEXT])
    context[1:] = chunks[:-1, -CONTEXT:]
    return np.concatenate([context, chunks], axis=1)


def chunk_probs(model: Model, samples: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """One speech probability per CHUNK samples; the recurrent state flows through."""
    vad = model.stateful({"stateN": "state"})
    rows = windows(samples)
    probs = np.empty(len(rows), np.float32)
    for i in range(len(rows)):
        probs[i] = vad.run_numpy({"input": rows[i : i + 1]}, outputs=["output"])["output"].item()
    return probs


def main(args: list[str]) -> int:
    as_json = "--json" in args
    show_probs = "--probs" in args
    files = [a for a in args if a not in ("--json", "--probs")]
    if len(files) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    # Bad files raise OSError or AudioError; run_command reports them.
    samples = read_wav(files[0])
    with Model.load(MODEL) as model:
        probs = chunk_probs(model, samples)
    if show_probs:
        if as_json:
            print_line(json.dumps({"chunk": CHUNK, "probs": probs.tolist()}))
        for i, p in enumerate(probs.tolist() if not as_json else []):
            print(f"{i * CHUNK / RATE:7.3f}s  {p:.4f}")
        return 0
    segments = speech_segments(probs, len(samples))
    if as_json:
        print_line(json.dumps({"samples": len(samples), "segments": segments}))
    elif not segments:
        print("no speech found")
    for start, end in segments if not as_json else []:
        print(f"speech {start / RATE:7.3f}s - {end / RATE:7.3f}s")
    return 0


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="vad")
