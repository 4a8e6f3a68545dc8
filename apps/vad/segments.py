"""Speech segments from per-chunk speech probabilities.

The same rules as silero-vad's reference post-processing
(``get_speech_timestamps`` with its default parameters and no maximum segment
length): hysteresis between ``threshold`` and ``threshold - 0.15``, silences
shorter than ``min_silence_ms`` bridged, segments shorter than
``min_speech_ms`` dropped, then ``speech_pad_ms`` of padding on each side
(split evenly when two segments are closer than twice the padding).
"""

from __future__ import annotations

CHUNK = 512  # samples per model call at 16 kHz


def speech_segments(
    probs: list[float],
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

    found: list[list[int]] = []
    start: int | None = None
    silence_from = 0  # where the current run of low probabilities began (0: none)
    for i, p in enumerate(probs):
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
            found.append([start, silence_from])
        start, silence_from = None, 0
    if start is not None and n_samples - start > min_speech:
        found.append([start, n_samples])

    for i, seg in enumerate(found):
        if i == 0:
            seg[0] = int(max(0, seg[0] - pad))
        if i + 1 < len(found):
            following = found[i + 1]
            gap = following[0] - seg[1]
            if gap < 2 * pad:
                seg[1] += int(gap // 2)
                following[0] = int(max(0, following[0] - gap // 2))
            else:
                seg[1] = int(min(n_samples, seg[1] + pad))
                following[0] = int(max(0, following[0] - pad))
        else:
            seg[1] = int(min(n_samples, seg[1] + pad))
    return [(s, e) for s, e in found]
