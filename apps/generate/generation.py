"""The token loop: Gemma 3 270M generating text through wasinn, in the component.

One generation is one wasinn session (one execution context on the host, so one
OpenVINO infer request): the model keeps its KV cache in that request's state,
so each step sends only the new token ids and receives only the candidates for
the next token (``top_k`` logits and ids, not the 1 MiB of a whole vocabulary).
The model's interface (prepare.py, gemma_export.py) is:

- inputs ``input_ids`` i64[1, n] (the prompt at first, then one token per step),
  ``penalized_ids`` i64[m] and ``penalty`` f32[1] (the repetition penalty, applied
  on the host to the last position's logits), ``top_k`` i64[1];
- outputs ``top_logits`` f32[top_k] (best first) and ``top_ids`` i64[top_k].

Example::

    generator = Generator.load("fast")
    for text in generator.stream("The capital of France is", max_tokens=16):
        print(text, end="", flush=True)
    print(generator.stats)
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from gemma_tokenizer import Tokenizer
from sampling import Sampler, Sampling

from wasinn import Model, NotFoundError

MODELS = "/models/gemma3"
TOKENIZER = f"{MODELS}/tokenizer/tokenizer.bin"
#: The model variants prepare.py builds, by the name the app's --precision uses.
#: Each is preloaded by the host (apps/generate/build.txt) under its folder's name.
VARIANTS = {"fast": "gemma3-fast", "exact": "gemma3-exact"}
#: Prompt plus generated tokens, at most. The model was trained to 32,768; the
#: state (every layer's keys and values, f32) takes 36 KiB per token, so 4,096
#: tokens hold 144 MiB on the host per generation.
CONTEXT = 4096
VOCABULARY = 262_144


class NotPreloadedError(ValueError):
    """The host has not loaded the variant asked for (no ``-S nn-graph`` for it)."""


@dataclass
class Stats:
    """What one generation took: token counts, the time to the first new token
    (prefill included) and the rate of the tokens after it."""

    prompt_tokens: int = 0
    generated_tokens: int = 0
    first_token_s: float = 0.0
    total_s: float = 0.0
    finish_reason: str = ""

    @property
    def decode_tokens_per_s(self) -> float:
        rest = self.total_s - self.first_token_s
        return (self.generated_tokens - 1) / rest if self.generated_tokens > 1 and rest > 0 else 0.0

    @property
    def prefill_tokens_per_s(self) -> float:
        return self.prompt_tokens / self.first_token_s if self.first_token_s > 0 else 0.0

    def __str__(self) -> str:
        return (
            f"prompt {self.prompt_tokens} tokens, generated {self.generated_tokens} "
            f"({self.finish_reason}); first token after {self.first_token_s * 1000:.0f} ms "
            f"({self.prefill_tokens_per_s:.0f} prompt tokens/s); "
            f"{self.decode_tokens_per_s:.1f} tokens/s after it"
        )


class Generator:
    """A loaded model variant and its tokenizer; ``stream`` generates."""

    def __init__(self, model: Model, tokenizer: Tokenizer) -> None:
        if not model.states:
            # A stateless model would forget the prompt after the first step and
            # generate plausible-looking nonsense: refuse it.
            raise ValueError(
                f"{model.name} keeps no state; the generator needs the KV cache in the "
                "host's state (an IR with ReadValue/Assign, as prepare.py writes it)"
            )
        self.model = model
        self.tokenizer = tokenizer
        self.stats = Stats()
        #: The ids the last generation produced (``<eos>`` not included).
        self.generated: list[int] = []

    @classmethod
    def load(cls, precision: str = "fast") -> Generator:
        """The variant the host preloaded (``fast`` or ``exact``), described by
        its local IR copy, with the tokenizer. ``NotPreloadedError`` when the
        host has not loaded it."""
        if precision not in VARIANTS:
            raise ValueError(f"precision must be one of {', '.join(VARIANTS)}, not {precision!r}")
        name = VARIANTS[precision]
        try:
            model = Model.load_by_name(name, metadata=f"{MODELS}/{name}/model.xml")
        except NotFoundError:
            raise NotPreloadedError(
                f"the host has not loaded the {precision} variant ({name}): `./build.sh run "
                f"generate` preloads it (for exact: when --precision exact is given); with "
                f"wasmtime itself pass -S nn-graph=openvino::BUILD/models/gemma3/{name}"
            ) from None
        return cls(model, Tokenizer.load(TOKENIZER))

    def encode(self, prompt: str | Sequence[int]) -> list[int]:
        """The prompt's token ids (``<bos>`` first); ids pass through, checked."""
        if isinstance(prompt, str):
            ids = self.tokenizer.encode(prompt)
        else:
            ids = [int(i) for i in prompt]
            bad = [i for i in ids if not 0 <= i < VOCABULARY]
            if bad:
                raise ValueError(f"token ids must be in 0..{VOCABULARY - 1}; got {bad[:5]}")
        if len(ids) < 1 or (isinstance(prompt, str) and not prompt):
            raise ValueError("the prompt is empty: give some text to continue")
        return ids

    def check_budget(self, prompt_tokens: int, max_tokens: int) -> None:
        """Refuse a request that cannot fit the context, before any work."""
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a whole number of at least 1, not {max_tokens!r}")
        if prompt_tokens + max_tokens > CONTEXT:
            raise ValueError(
                f"the prompt is {prompt_tokens} tokens and max_tokens is {max_tokens}: together "
                f"at most {CONTEXT} (the context this app gives the model); shorten one"
            )

    def tokens(
        self, prompt_ids: Sequence[int], max_tokens: int, sampling: Sampling
    ) -> Iterator[int]:
        """The new token ids, one per step, until ``<eos>`` (not yielded) or
        ``max_tokens``. Updates ``stats``."""
        self.check_budget(len(prompt_ids), max_tokens)
        stats = self.stats = Stats(prompt_tokens=len(prompt_ids))
        generated = self.generated = []
        sampler = Sampler(sampling)
        k = np.array([sampling.candidates(VOCABULARY)], np.int64)
        penalty = np.array([sampling.repetition_penalty], np.float32)
        penalizing = sampling.repetition_penalty != 1
        seen = sorted(set(prompt_ids)) if penalizing else [0]
        seen_set = set(seen)
        eos = self.tokenizer.eos_id
        start = time.perf_counter()
        feed = np.array([prompt_ids], np.int64)
        stats.finish_reason = "length"
        with self.model.session() as session:  # a fresh infer request: an empty cache
            for step in range(max_tokens):
                out = session.run_numpy({
                    "input_ids": feed,
                    "penalized_ids": np.array(seen, np.int64),
                    "penalty": penalty,
                    "top_k": k,
                })  # fmt: skip
                token = sampler.choose(out["top_logits"], out["top_ids"])
                now = time.perf_counter()
                if step == 0:
                    stats.first_token_s = now - start
                stats.total_s = now - start
                if token == eos:
                    stats.finish_reason = "stop"
                    return
                stats.generated_tokens += 1
                generated.append(token)
                yield token
                if penalizing and token not in seen_set:
                    seen_set.add(token)
                    seen.append(token)
                feed = np.array([[token]], np.int64)

    def stream(
        self,
        prompt: str | Sequence[int],
        max_tokens: int = 64,
        sampling: Sampling | None = None,
        stop: Sequence[str] = (),
    ) -> Iterator[str]:
        """The continuation of ``prompt`` as text, piece by piece as it is made.

        Stops at ``<eos>``, after ``max_tokens`` tokens, or before the first of the
        ``stop`` strings (which is not yielded; ``stats.finish_reason`` is then
        "stop"). Text that could be the start of a stop string is held back until
        it is not.
        """
        sampling = sampling if sampling is not None else Sampling()
        stops = [s for s in stop if s]
        ids = self.encode(prompt)
        decoder = self.tokenizer.decoder()
        pending = ""
        for token in self.tokens(ids, max_tokens, sampling):
            pending += decoder.add(token)
            if not stops:
                if pending:
                    yield pending
                    pending = ""
                continue
            cut = min((i for i in (pending.find(s) for s in stops) if i >= 0), default=-1)
            if cut >= 0:
                if cut:
                    yield pending[:cut]
                self.stats.finish_reason = "stop"
                return
            keep = _held_back(pending, stops)
            if len(pending) > keep:
                yield pending[: len(pending) - keep]
                pending = pending[len(pending) - keep :]
        pending += decoder.flush()
        if stops:
            cut = min((i for i in (pending.find(s) for s in stops) if i >= 0), default=-1)
            if cut >= 0:
                pending = pending[:cut]
                self.stats.finish_reason = "stop"
        if pending:
            yield pending


def _held_back(text: str, stops: Sequence[str]) -> int:
    """How many characters at the end of ``text`` could begin a stop string."""
    longest = 0
    for s in stops:
        for n in range(min(len(s) - 1, len(text)), longest, -1):
            if text.endswith(s[:n]):
                longest = n
                break
    return longest
