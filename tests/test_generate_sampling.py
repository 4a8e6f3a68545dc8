"""apps/generate/sampling.py against Hugging Face's logits processors on the same logits.

The model gives the sampler only its ``top_k`` best (penalised) logits; the
reference is transformers' RepetitionPenalty, Temperature, TopK and TopP
processors over every logit, as ``generate(do_sample=True)`` chains them. The
distributions must agree on the candidates and leave nothing outside them, and
one uniform number must pick the same token from both.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from conftest import app_module
from transformers.generation.logits_process import (
    LogitsProcessorList,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

sampling = app_module("generate", "sampling")
VOCAB = 3000
SEEN = [5, 17, 17, 2999, 1200]  # the prompt and output so far, with a repeat


def _logits(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # Peaked like a language model's: a few large logits over a broad base.
    logits = rng.normal(0, 2, VOCAB).astype(np.float32)
    logits[rng.choice(VOCAB, 8, replace=False)] += rng.uniform(4, 10, 8).astype(np.float32)
    logits[SEEN[:3]] += 6  # make the penalty matter
    return logits


def _graph(logits: np.ndarray, penalty: float, k: int) -> tuple[np.ndarray, np.ndarray]:
    """What the model's graph returns: penalised logits, then the k best, best first."""
    out = logits.copy()
    ids = np.unique(SEEN)
    picked = out[ids]
    out[ids] = np.where(picked > 0, picked / np.float32(penalty), picked * np.float32(penalty))
    order = np.argsort(-out, kind="stable")[:k]
    return out[order], order.astype(np.int64)


def _reference(logits: np.ndarray, settings: object) -> np.ndarray:
    s = settings
    processors = LogitsProcessorList()
    if s.repetition_penalty != 1:
        processors.append(RepetitionPenaltyLogitsProcessor(s.repetition_penalty))
    processors.append(TemperatureLogitsWarper(s.temperature))
    if s.top_k:
        processors.append(TopKLogitsWarper(s.top_k))
    if s.top_p < 1:
        processors.append(TopPLogitsWarper(s.top_p))
    scores = processors(torch.tensor([SEEN]), torch.from_numpy(logits.copy())[None])
    return scores.softmax(-1)[0].numpy()


GRID = list(itertools.product((0.5, 1.0, 1.7), (1, 5, 40, 0), (1.0, 0.9, 0.5), (1.0, 1.3)))


@pytest.mark.parametrize(("temperature", "top_k", "top_p", "penalty"), GRID)
def test_candidates_give_transformers_distribution(
    temperature: float, top_k: int, top_p: float, penalty: float
) -> None:
    settings = sampling.Sampling(temperature, top_k, top_p, penalty, seed=1)
    for seed in range(3):
        logits = _logits(seed)
        top_logits, top_ids = _graph(logits, penalty, settings.candidates(VOCAB))
        ours = sampling.probabilities(top_logits, settings)
        want = _reference(logits, settings)
        np.testing.assert_allclose(ours, want[top_ids], rtol=1e-5, atol=1e-7)
        outside = np.delete(want, top_ids).sum()
        assert outside < 1e-6, f"transformers gives {outside} to tokens the model did not return"
        for u in (0.0, 0.1, 0.37, 0.5, 0.8, 0.99, 0.999999):
            ref_order = np.cumsum(want[top_ids], dtype=np.float64)
            ref = min(
                int(np.searchsorted(ref_order, u * ref_order[-1], side="right")), len(ours) - 1
            )
            assert sampling.pick(ours, u) == ref


def test_greedy_takes_the_best_penalised_token() -> None:
    settings = sampling.Sampling(temperature=0, repetition_penalty=1.3)
    assert settings.candidates(VOCAB) == 1
    logits = _logits(4)
    top_logits, top_ids = _graph(logits, 1.3, 1)
    want = int(np.argmax(_reference(logits, sampling.Sampling(1e-3, 0, 1.0, 1.3))))
    assert sampling.Sampler(settings).choose(top_logits, top_ids) == want


def test_a_seed_repeats_and_another_seed_differs() -> None:
    settings = sampling.Sampling(temperature=1.5, top_k=0, top_p=1.0, seed=7)
    top_logits, top_ids = _graph(_logits(5), 1.0, VOCAB)

    def draws(s: object) -> list[int]:
        sampler = sampling.Sampler(s)
        return [sampler.choose(top_logits, top_ids) for _ in range(50)]

    assert draws(settings) == draws(settings)
    assert draws(settings) != draws(sampling.Sampling(1.5, 0, 1.0, seed=8))
    # Frequencies follow the distribution (50,000 draws; loose: a fixed seed).
    sampler = sampling.Sampler(settings)
    counts = np.bincount(
        [sampler.choose(top_logits, top_ids) for _ in range(50_000)], minlength=VOCAB
    )
    want = _reference(_logits(5), settings)
    assert np.abs(counts / 50_000 - want).max() < 0.01


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("temperature", -0.1, "temperature must be"),
        ("temperature", float("nan"), "temperature must be"),
        ("top_k", 2000, "top_k must be"),
        ("top_k", 1.5, "top_k must be"),
        ("top_p", 0.0, "top_p must be"),
        ("top_p", 1.2, "top_p must be"),
        ("repetition_penalty", 0.5, "repetition_penalty must be"),
        ("seed", -1, "seed must be"),
        ("seed", True, "seed must be"),
    ],
)
def test_settings_out_of_range_are_refused(field: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        sampling.Sampling(**{field: value})  # type: ignore[arg-type]
