"""Choosing the next token from the model's candidates, in the component (numpy).

The model (prepare.py's IR) hands back only the ``top_k`` best logits of the
last position and their token ids, with the repetition penalty already applied
on the host. That is enough to sample exactly as Hugging Face's ``generate``
does over the whole vocabulary, because its warpers run in this order:
temperature, top-k, top-p, and top-k throws away everything outside the k best
(top-p then renormalises over those k). Only a disabled top-k (``top_k=0``)
needs every logit: the candidates are then the whole vocabulary.

The draw itself uses numpy's PCG64 seeded by ``seed`` (one uniform number per
token, inverse CDF over the candidates in descending order), so a seed gives
the same text on every run, natively and in the component.

Example::

    settings = Sampling(temperature=0.8, top_k=40, top_p=0.95, seed=7)
    sampler = Sampler(settings)
    token = sampler.choose(top_logits, top_ids)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

#: The most candidates a step may ask for when top-k is on. Beyond it, asking
#: for the whole vocabulary (top_k=0) costs the same order of bytes anyway.
MAX_TOP_K = 1024


@dataclass(frozen=True)
class Sampling:
    """How the next token is chosen. ``temperature=0`` is greedy (the most likely
    token; the other settings but ``repetition_penalty`` are then ignored).

    - ``temperature`` > 0 divides the logits (lower: more predictable);
    - ``top_k``: sample among the k most likely tokens (1..1024), 0 = all;
    - ``top_p``: then among the smallest set whose probability reaches p (0 < p <= 1);
    - ``repetition_penalty``: >= 1; divides the positive logits (multiplies the
      negative ones) of every token already in the prompt or the output, as
      Hugging Face's ``repetition_penalty`` does (1 = off);
    - ``seed``: the same seed gives the same text; ``None`` = a fresh one each time.

    The defaults are llama.cpp's: temperature 0.8, top-k 40, top-p 0.95.
    """

    temperature: float = 0.8
    top_k: int = 40
    top_p: float = 0.95
    repetition_penalty: float = 1.0
    seed: int | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.temperature, (int, float)) and 0 <= self.temperature <= 100):
            raise ValueError(
                f"temperature must be a number from 0 (greedy) to 100, not {self.temperature!r}"
            )
        if (
            isinstance(self.top_k, bool)
            or not isinstance(self.top_k, int)
            or not 0 <= self.top_k <= MAX_TOP_K
        ):
            raise ValueError(
                f"top_k must be a whole number from 0 (off) to {MAX_TOP_K}, not {self.top_k!r}"
            )
        if not (isinstance(self.top_p, (int, float)) and 0 < self.top_p <= 1):
            raise ValueError(f"top_p must be a number above 0 and at most 1, not {self.top_p!r}")
        if not (
            isinstance(self.repetition_penalty, (int, float)) and 1 <= self.repetition_penalty <= 10
        ):
            raise ValueError(
                "repetition_penalty must be a number from 1 (off) to 10, "
                f"not {self.repetition_penalty!r}"
            )
        if self.seed is not None and (
            isinstance(self.seed, bool)
            or not isinstance(self.seed, int)
            or not 0 <= self.seed < 2**64
        ):
            raise ValueError(f"seed must be a whole number from 0 to 2**64-1, not {self.seed!r}")
        for name in ("temperature", "top_p", "repetition_penalty"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"{name} must be finite, not {getattr(self, name)!r}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def candidates(self, vocabulary: int) -> int:
        """How many of the best logits the model must return for one step."""
        if self.greedy:
            return 1
        return self.top_k if self.top_k else vocabulary


def probabilities(top_logits: NDArray[np.float32], settings: Sampling) -> NDArray[np.float32]:
    """The sampling distribution over the candidates (``top_logits`` sorted from
    the best down, penalised already): temperature, then top-p renormalised over
    the candidates (which top-k has already limited), as Hugging Face computes it
    in float32: a token is dropped when the probability of the tokens below it,
    itself included, is at most ``1 - top_p``; the best one always stays."""
    scores = top_logits.astype(np.float32) / np.float32(settings.temperature)
    probs = _softmax(scores)
    if settings.top_p < 1:
        rising = np.cumsum(probs[::-1], dtype=np.float32)
        dropped = (rising <= np.float32(1 - settings.top_p))[::-1].copy()
        dropped[0] = False
        scores = np.where(dropped, np.float32(-np.inf), scores)
        probs = _softmax(scores)
    return probs


def _softmax(scores: NDArray[np.float32]) -> NDArray[np.float32]:
    shifted: NDArray[np.float32] = np.exp(scores - scores.max(), dtype=np.float32)
    total = np.float32(shifted.sum(dtype=np.float32))
    return np.divide(shifted, total, dtype=np.float32)


class Sampler:
    """Draws tokens with one seeded generator for a whole generation."""

    def __init__(self, settings: Sampling) -> None:
        self.settings = settings
        self._rng = np.random.Generator(np.random.PCG64(settings.seed))

    def choose(self, top_logits: NDArray[np.float32], top_ids: NDArray[np.int64]) -> int:
        """The next token from one step's candidates (best first). The host may
        return equal logits in any order; they are put in id order here, so
        that the draw does not depend on that order. (Which of several equal
        logits at the k-th place make it into the candidates is the host's
        choice.)"""
        if self.settings.greedy:
            return int(top_ids[0])
        order = np.lexsort((top_ids, -top_logits))
        top_logits, top_ids = top_logits[order], top_ids[order]
        probs = probabilities(top_logits, self.settings)
        return int(top_ids[pick(probs, self._rng.random())])


def pick(probs: NDArray[np.float32], u: float) -> int:
    """The index where the cumulative probability first exceeds ``u`` (0 <= u < 1)
    of the total: inverse-CDF sampling. Rounding can leave the total a little
    under 1, so ``u`` is scaled by it; never an index of probability 0."""
    cumulative = np.cumsum(probs, dtype=np.float64)
    index = int(np.searchsorted(cumulative, u * cumulative[-1], side="right"))
    index = min(index, len(probs) - 1)
    while probs[index] == 0 and index > 0:  # only past the last kept token, by rounding
        index -= 1
    return index
