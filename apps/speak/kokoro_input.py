"""What one run of Kokoro-82M is fed, from token ids, a voice and a speed.

Shared by ``speech.py`` (every run) and ``openvino_model.py`` (its
calibration runs), so that calibration sees exactly what the app sends.

>>> styles = np.zeros((510, 256), np.float32)
>>> feed = model_input([50, 60], styles, 1.0)
>>> feed["tokens"].tolist(), feed["style"].shape, feed["speed"].tolist()
([[0, 50, 60, 0]], (1, 256), [1.0])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt


def model_input(
    tokens: Sequence[int], styles: npt.NDArray[np.float32], speed: float
) -> dict[str, npt.NDArray[np.generic]]:
    """The model's three inputs: ``tokens`` between two 0 pads (int64 [1, n+2]),
    the voice's style vector for that many tokens (``styles`` has one row per
    token count, 510 of them), and ``speed`` (float32 [1])."""
    return {
        "tokens": np.array([[0, *tokens, 0]], np.int64),
        "style": styles[min(len(tokens), len(styles)) - 1].reshape(1, 256),
        "speed": np.array([speed], np.float32),
    }
