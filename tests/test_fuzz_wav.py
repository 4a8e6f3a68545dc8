"""Fuzz: the VAD app's WAV reader (``apps/vad/wav.py``, ``wav.decode_wav``).

Files the stdlib ``wave`` module writes decode to exactly their samples (16 kHz
mono 16-bit) or are refused with ``AudioError`` (any other format); mutated
files (RIFF-chunk level, byte level) give samples in range or ``AudioError``,
quickly. See fuzzing.py for budgets and limits.
"""

from __future__ import annotations

import io
import re
import struct
import wave
from typing import Any

import numpy as np
import pytest
from conftest import app_module
from fuzzing import BYTE_OPS, FUZZ, ROOT, Ops, edit_chunks, mutate, ran, time_limit
from hypothesis import example, given
from hypothesis import strategies as st

pytestmark = pytest.mark.fuzz

SPEECH_WAV = ROOT / "apps" / "vad" / "samples" / "speech.wav"
# The app's reader (stdlib only; app.py itself needs componentize-py's runtime). A
# rename or a missing module fails every test here: it is not a reason to skip.
wav = app_module("vad", "wav")


def wav_file(channels: int, width: int, rate: int, frames: bytes) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(frames)
    return out.getvalue()


def read_audio(data: bytes) -> Any:
    """The samples, or None for AudioError; any other exception fails the example."""
    with time_limit():
        try:
            samples = wav.decode_wav(data, "fuzzed.wav")
        except wav.AudioError as exc:
            assert "fuzzed.wav" in str(exc), exc
            return None
    assert isinstance(samples, np.ndarray) and samples.dtype == np.float32
    assert samples.ndim == 1 and bool(np.all((samples >= -1.0) & (samples < 1.0)))
    return samples


WAV_FORMATS = st.one_of(
    st.just((1, 2, 16000)),  # what the VAD reads
    # (the byte rate, rate x channels x width, must fit the header's 32 bits)
    st.tuples(
        st.integers(1, 3),
        st.integers(1, 4),
        st.sampled_from((16000, 8000, 44100, 1)) | st.integers(1, 2**28),
    ),
)


@FUZZ
@given(WAV_FORMATS, st.integers(0, 300), st.data())
def test_wav_generated_files_decode_exactly(
    fmt: tuple[int, int, int], frames: int, data: st.DataObject
) -> None:
    channels, width, rate = fmt
    size = frames * channels * width
    raw = data.draw(st.binary(min_size=size, max_size=size), label="frames")
    usable = (channels, width, rate) == (1, 2, wav.RATE)
    ran("16 kHz mono 16-bit" if usable else "other format")
    samples = read_audio(wav_file(channels, width, rate, raw))
    if not usable:
        assert samples is None
        return
    want = [v / 32768.0 for v in struct.unpack(f"<{frames}h", raw)]
    assert samples is not None and samples.tolist() == want


def riff_chunks(data: bytes) -> list[list[Any]]:
    out, pos = [], 12
    while pos + 8 <= len(data):
        cid, size = data[pos : pos + 4], struct.unpack("<I", data[pos + 4 : pos + 8])[0]
        out.append([cid, data[pos + 8 : pos + 8 + size], None])
        pos += 8 + size + (size & 1)
    return out


def _seed_wavs() -> tuple[bytes, ...]:
    seeds = [wav_file(1, 2, 16000, bytes(range(256)) * 2), wav_file(2, 1, 8000, bytes(64))]
    if SPEECH_WAV.exists():  # the app's sample, cut to 0.05 s so each example stays cheap
        with wave.open(str(SPEECH_WAV), "rb") as w:
            params = (w.getnchannels(), w.getsampwidth(), w.getframerate())
            seeds.append(wav_file(*params, w.readframes(800)))
    base = seeds[0]
    chunks = riff_chunks(base)
    odd = b"".join(c[0] + struct.pack("<I", len(c[1])) + c[1] for c in chunks[:1])
    odd += (
        b"LIST"
        + struct.pack("<I", 3)
        + b"abc\0"
        + b"".join(c[0] + struct.pack("<I", len(c[1])) + c[1] for c in chunks[1:])
    )
    # and one with an odd-sized chunk (and its pad byte)
    seeds.append(b"RIFF" + struct.pack("<I", 4 + len(odd)) + b"WAVE" + odd)
    return tuple(seeds)


WAV_SEEDS = _seed_wavs()
FMT_FIELDS = ((0, "<H"), (2, "<H"), (4, "<I"), (8, "<I"), (12, "<H"), (14, "<H"))
FMT_VALUES = st.sampled_from((0, 1, 2, 3, 8, 16, 24, 0xFFFE, 8000, 16000, 2**16 - 1, 2**32 - 1))
SIZE_VALUES = st.sampled_from((0, 1, 3, 4, 15, 16, 17, 1000, 2**31, 2**32 - 1))
WAV_CHUNKS = st.sampled_from((b"fmt ", b"data", b"LIST", b"fact", b"\0\0\0\0"))
WAV_OPS = st.one_of(
    st.tuples(st.just("fmt"), st.integers(0, 5), FMT_VALUES | st.integers(0, 2**32 - 1)),
    st.tuples(st.just("size"), st.integers(-1, 99), SIZE_VALUES | st.integers(0, 2**32 - 1)),
    st.tuples(st.just("drop"), st.integers(0, 99)),
    st.tuples(st.just("dup"), st.integers(0, 99)),
    st.tuples(st.just("swap"), st.integers(0, 99)),
    st.tuples(st.just("insert"), st.integers(0, 99), WAV_CHUNKS, st.binary(max_size=20)),
    st.tuples(st.just("body"), st.integers(0, 99), BYTE_OPS),
)  # fmt: skip


def mutate_wav(data: bytes, ops: Ops) -> bytes:
    """RIFF-chunk-level ``ops`` (from WAV_OPS); sizes are recomputed unless an op sets one."""
    chunks = riff_chunks(data)
    riff_size = None
    for op in ops:
        kind = op[0]
        if kind == "size" and op[1] == -1:
            riff_size = op[2]
            continue
        if kind == "insert":
            chunks.insert(op[1] % (len(chunks) + 1), [op[2], op[3], None])
            continue
        if not chunks:
            continue
        i = op[1] % len(chunks)
        if kind == "fmt":
            for c in chunks:
                if c[0] == b"fmt " and len(c[1]) >= 16:
                    offset, fmt = FMT_FIELDS[op[1]]
                    value = op[2] % (1 << (8 * struct.calcsize(fmt)))
                    end = offset + struct.calcsize(fmt)
                    c[1] = c[1][:offset] + struct.pack(fmt, value) + c[1][end:]
                    break
        elif kind == "size":
            chunks[i][2] = op[2]
        else:
            edit_chunks(chunks, op, i)
    body = b"WAVE" + b"".join(
        cid + struct.pack("<I", len(b) if size is None else size) + b + b"\0" * (len(b) & 1)
        for cid, b, size in chunks
    )
    return b"RIFF" + struct.pack("<I", len(body) if riff_size is None else riff_size) + body


@FUZZ
@given(st.integers(0, 99), st.lists(WAV_OPS, max_size=5), st.lists(BYTE_OPS, max_size=3))
def test_wav_reader_survives_mutations(seed: int, ops: Ops, then: Ops) -> None:
    data = mutate(mutate_wav(WAV_SEEDS[seed % len(WAV_SEEDS)], ops), then, WAV_SEEDS)
    ran("decoded" if read_audio(data) is not None else "refused")


@FUZZ
@example(seed=0, ops=[("insert", 1, b"LIST", b"abcd"), ("size", 1, 1000)])
@given(seed=st.integers(0, 99), ops=st.lists(WAV_OPS, max_size=5))
def test_wav_reader_survives_chunks_that_overrun_the_riff(seed: int, ops: Ops) -> None:
    ran()
    read_audio(mutate_wav(WAV_SEEDS[seed % len(WAV_SEEDS)], ops))


def test_harness_wav_mutator_keeps_unmutated_files() -> None:
    assert all(mutate_wav(w, []) == w for w in WAV_SEEDS if len(w) % 2 == 0)
    assert re.match(rb"RIFF....WAVE", WAV_SEEDS[0], re.S)
    assert mutate_wav(WAV_SEEDS[0], [("size", -1, 7)])[4:8] == struct.pack("<I", 7)
