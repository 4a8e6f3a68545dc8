"""How far apart two renderings of the same utterance sound: log-mel spectra aligned by DTW.

Two TTS runs of one sentence (onnxruntime vs OpenVINO, int8 vs float weights)
never match sample for sample: the model predicts each phoneme's duration and
a small numeric difference moves a frame boundary, shifting everything after
it. So waveforms are compared as log-mel spectrograms (what the ear roughly
resolves) and the frames of one are matched to the other's by dynamic time
warping, which absorbs duration changes; what remains is the difference in
timbre and pitch.

``aligned_distance`` is in dB: the mean, over the warping path's steps and the
80 mel bands, of |dB(a) - dB(b)|. 0 for identical audio. Numpy only (the
project's tests and bench run it without scipy or librosa).

>>> rate = 24000
>>> t = np.arange(rate) / rate
>>> tone = (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
>>> aligned_distance(tone, tone)
0.0
>>> log_mel(tone).shape  # 1 + 24000 // 256 frames, 80 bands
(94, 80)
>>> other = (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
>>> aligned_distance(tone, other) > 5  # mostly empty bands: a per-band mean
True
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

N_FFT = 1024
HOP = 256
N_MELS = 80
F_MAX = 12000.0
# Power floor, -80 dB re unit power (about a full-scale sine's): silence in either
# signal then costs at most ~80 dB per band, instead of the unbounded log of
# a float's rounding noise, which would let inaudible hiss dominate.
FLOOR_DB = -80.0

Array = npt.NDArray[np.float64]


def _hz_to_mel(hz: Array) -> Array:
    """HTK's mel scale (2595 log10(1 + f/700)); any mel scale would do for a distance."""
    return 2595.0 * np.log10(1.0 + hz / 700.0)


def _mel_to_hz(mel: Array) -> Array:
    return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)


def mel_filters(
    rate: int = 24000, n_fft: int = N_FFT, n_mels: int = N_MELS, f_max: float = F_MAX
) -> Array:
    """Triangular mel filters [n_mels, n_fft // 2 + 1], 0 Hz .. ``f_max``, peak 1."""
    freqs = np.arange(n_fft // 2 + 1) * rate / n_fft
    edges = _mel_to_hz(np.linspace(0.0, float(_hz_to_mel(np.array(f_max))), n_mels + 2))
    lower, centre, upper = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    rising = (freqs - lower) / (centre - lower)
    falling = (upper - freqs) / (upper - centre)
    return np.maximum(0.0, np.minimum(rising, falling))


def log_mel(audio: npt.NDArray[np.floating], rate: int = 24000) -> Array:
    """Log-mel spectrogram in dB, [frames, 80]: 1024-sample Hann STFT, hop 256.

    Frames are centred (the signal is reflect-padded by half a window, so
    there are ``1 + len // 256`` frames, at least 1 even for very short audio).
    Power is scaled so a band holding a sine of amplitude A reads about its
    mean power A**2 / 2 (-3 dB for a full-scale sine); values are floored at
    ``FLOOR_DB``.
    """
    x = np.asarray(audio, dtype=np.float64).ravel()
    pad = N_FFT // 2
    x = np.pad(x, pad, mode="reflect") if len(x) > pad else np.pad(x, pad)
    count = 1 + (len(x) - N_FFT) // HOP
    index = np.arange(N_FFT)[None, :] + HOP * np.arange(count)[:, None]
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)  # periodic Hann
    # Parseval: scaled so a frame's bins sum to its mean power (a sine of amplitude A: A**2 / 2).
    magnitude = np.abs(np.fft.rfft(x[index] * window, axis=1))
    spectrum = magnitude**2 * 2.0 / (N_FFT * np.sum(window**2))
    power = spectrum @ mel_filters(rate).T
    return np.maximum(10.0 * np.log10(np.maximum(power, 1e-30)), FLOOR_DB)


def dtw_mean_cost(a: Array, b: Array, band: float = 0.25) -> float:
    """Mean frame cost along the cheapest monotone path from (0, 0) to (n-1, m-1).

    Frame cost is the mean |a[i] - b[j]| over bands. The path takes diagonal,
    horizontal and vertical steps; its cost is divided by its number of cells,
    so the result is a per-frame average in the input's units, comparable
    across utterance lengths. Cells farther than ``band`` (a fraction of the
    utterance) from the proportional diagonal are not considered: renderings
    of one text never drift that far, and it bounds the work. Computed one
    anti-diagonal at a time (each cell depends on the two previous ones), so
    numpy vectorises the recursion.
    """
    n, m = len(a), len(b)
    inf = np.inf
    # Cost and path length of the best path to each cell of the previous two anti-diagonals,
    # indexed by row i (column is k - i).
    prev2_cost = np.full(n, inf)
    prev_cost = np.full(n, inf)
    prev2_len = np.zeros(n)
    prev_len = np.zeros(n)
    rows = np.arange(n)
    for k in range(n + m - 1):
        i = rows[max(0, k - m + 1) : min(n, k + 1)]
        j = k - i
        inside = np.abs(i / max(n - 1, 1) - j / max(m - 1, 1)) <= band
        i, j = i[inside], j[inside]
        cost = np.full(n, inf)
        length = np.zeros(n)
        if len(i):
            step = np.mean(np.abs(a[i] - b[j]), axis=1)
            if k == 0:
                cost[0], length[0] = step[0], 1.0
            else:
                # Predecessors: (i-1, j) and (i, j-1) on diagonal k-1, (i-1, j-1) on k-2.
                up = np.where(i > 0, prev_cost[np.maximum(i - 1, 0)], inf)
                left = prev_cost[i]
                diag = np.where(i > 0, prev2_cost[np.maximum(i - 1, 0)], inf)
                choice = np.argmin(np.stack([diag, up, left]), axis=0)
                best = np.choose(choice, [diag, up, left])
                above = np.maximum(i - 1, 0)
                lens = np.choose(choice, [prev2_len[above], prev_len[above], prev_len[i]])
                cost[i] = best + step
                length[i] = lens + 1.0
        prev2_cost, prev_cost = prev_cost, cost
        prev2_len, prev_len = prev_len, length
    total = prev_cost[n - 1]
    if not np.isfinite(total):
        raise ValueError("no warping path inside the band: widen it")
    return float(total / prev_len[n - 1])


def aligned_distance(
    a: npt.NDArray[np.floating], b: npt.NDArray[np.floating], rate: int = 24000, band: float = 0.25
) -> float:
    """Mean absolute log-mel difference in dB between ``a`` and ``b`` after DTW alignment.

    Symmetric up to ties in the path search; 0 for identical audio. As a
    guide (Kokoro-82M sentences, measured when this was written): 0.6-0.8 dB
    for 100 ms of silence inserted, a -1 dB gain change or -40 dB of white
    noise; 1.2-1.5 dB resampled by 1 %, 2.0-2.3 dB by 3 %; 2.2-3.1 dB
    between onnxruntime's and OpenVINO's rendering of the same int8 model
    (the noise floor for model rewrites); 5-8 dB for a different sentence.
    """
    return dtw_mean_cost(log_mel(a, rate), log_mel(b, rate), band)
