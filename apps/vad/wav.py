"""Reading the VAD's input: 16 kHz mono 16-bit PCM WAV, with the stdlib ``wave`` module."""

from __future__ import annotations

import io
import struct
import wave

import numpy as np
import numpy.typing as npt

RATE = 16000


class AudioError(ValueError):
    """The WAV file cannot be used; the message says why and what would work.

    >>> try:
    ...     decode_wav(b"RIFX", "x.wav")
    ... except AudioError as exc:
    ...     print(str(exc)[:32])
    x.wav is not a readable WAV file
    """


def read_wav(path: str) -> npt.NDArray[np.float32]:
    """The samples of the WAV file at ``path``; see ``decode_wav``.

    >>> samples = read_wav("samples/speech.wav")  # doctest: +SKIP
    """
    with open(path, "rb") as f:
        return decode_wav(f.read(), path)


def decode_wav(data: bytes, path: str = "the audio") -> npt.NDArray[np.float32]:
    """16 kHz mono 16-bit PCM samples as f32 in [-1, 1); AudioError for anything else.

    >>> samples = decode_wav(Path("speech.wav").read_bytes(), "speech.wav")  # doctest: +SKIP
    """
    convert = f"sox {path} -r {RATE} -c 1 -b 16 out.wav"
    try:
        with wave.open(io.BytesIO(data), "rb") as w:
            channels, width, rate = w.getnchannels(), w.getsampwidth(), w.getframerate()
            frames = w.getnframes()
            raw = w.readframes(frames) if (channels, width, rate) == (1, 2, RATE) else b""
    except (wave.Error, EOFError, RuntimeError, ValueError, OverflowError, struct.error) as exc:
        # wave reports a malformed file through all of these (RuntimeError
        # from its chunk reader when a chunk runs past the end of the RIFF).
        raise AudioError(
            f"{path} is not a readable WAV file: {exc}; the VAD needs {RATE} Hz mono 16-bit "
            f"PCM (e.g. {convert})"
        ) from None
    # Checked outside the try: an AudioError is a ValueError, which the except
    # above would re-wrap as "not a readable WAV file".
    if (channels, width, rate) != (1, 2, RATE):
        raise AudioError(
            f"{path} is {rate} Hz, {channels} channel(s), {8 * width}-bit; the VAD needs "
            f"{RATE} Hz mono 16-bit PCM (e.g. {convert})"
        )
    if len(raw) != frames * 2:
        raise AudioError(
            f"{path} is truncated: its header promises {frames} samples, it holds {len(raw) // 2}"
        )
    return np.frombuffer(raw, "<i2").astype(np.float32) / np.float32(32768)
