"""Speech segments from per-chunk speech probabilities.

The same rules as silero-vad's reference post-processing
(``get_speech_timestamps`` with its default parameters and no maximum segment
length): hysteresis between ``threshold`` and ``threshold - 0.15``, silences
shorter than ``min_silence_ms`` bridged, segments shorter than
``min_speech_ms`` dropped, then ``speech_pad_ms`` of padding on each side
(split evenly when two segments are closer than twice the padding).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

CHUNK = 512  # samples per model call at 16 kHz


def speech_segments(
    probs: Sequence[float] | npt.NDArray[np.float32],
    n_samples: int,
    sampling_rate: int = 16000,
    threshold: float = 0.5,
    min_speech_ms: int = 250,
    min_silence_ms: int = 100,
    speech_pad_ms: int = 30,
) -> list[tuple[int, int]]:
    """[(start, end)] in samples for ``probs``, one probability per CHUNK samples."""
    min_speech = sampling_rate * min_speech_ms / 1000
    min_silence = sampling_rate * min_silence_ms / 1000
    pad = sampling_rate * speech_pad_ms / 1000
    low = max(threshold - 0.15, 0.01)

    found: list[tuple[int, int]] = []
    start: int | None = None
    silence_from = 0  # where the current run of low probabilities began (0: none)
    for i, p in enumerate(np.asarray(probs, np.float64).tolist()):
        here = CHUNK * i
        if p >= threshold:
            silence_from = 0
            if start is None:
                start = here
            continue
        if start is None or p >= low:
            continue
        if not silence_from:
            silence_from = here
        if here - silence_from < min_silence:
            continue
        if silence_from - start > min_speech:
            found.append((start, silence_from))
        start, silence_from = None, 0
    if start is not None and n_samples - start > min_speech:
        found.append((start, n_samples))
    if not found:
        return []

    # Padding: each gap between segments is shared out (half to each side when
    # shorter than 2 * pad), the outer ends are padded within the recording.
    starts, ends = np.array(found, np.int64).T
    gaps = starts[1:] - ends[:-1]
    close = gaps < 2 * pad
    ends[:-1] = np.where(close, ends[:-1] + gaps // 2, np.minimum(ends[:-1] + pad, n_samples))
    starts[1:] = np.maximum(starts[1:] - np.where(close, gaps // 2, pad), 0)
    starts[0] = max(starts[0] - pad, 0)
    ends[-1] = min(ends[-1] + pad, n_samples)
    return list(zip(starts.tolist(), ends.tolist(), strict=True))
