"""POST /v1/completions: Gemma 3 270M continuing a prompt, in the shape of
OpenAI's completions API (the generate app's model and token loop).

A request is a JSON object; every field but ``prompt`` is optional:

    {"prompt": "The capital of France is", "max_tokens": 16, "temperature": 0.8,
     "top_p": 0.95, "top_k": 40, "repetition_penalty": 1.0, "seed": 7,
     "stop": ["\\n"], "stream": false, "stream_options": {"include_usage": true},
     "model": "gemma-3-270m", "n": 1, "user": "..."}

The defaults are OpenAI's for ``max_tokens`` (16) and the generate app's
(llama.cpp's) for sampling: temperature 0.8, top-k 40, top-p 0.95;
``temperature: 0`` is greedy. ``top_k`` and ``repetition_penalty`` are not
OpenAI's (llama.cpp's server takes them too). The answer:

    {"id": "cmpl-...", "object": "text_completion", "created": 1796000000,
     "model": "gemma-3-270m",
     "choices": [{"index": 0, "text": " Paris.", "logprobs": null,
                  "finish_reason": "stop"}],
     "usage": {"prompt_tokens": 6, "completion_tokens": 2, "total_tokens": 8}}

With ``"stream": true`` the same comes as Server-Sent Events, one ``data:``
event per piece of text as soon as its token is chosen (the first before the
second token is computed), then an event with ``finish_reason``, one with
``usage`` when ``stream_options.include_usage`` is true, and ``data: [DONE]``.

Everything is checked before any work (the prompt is tokenized to count it,
~25 ms for the longest allowed), so a refused request costs nothing; a client
that goes away mid-stream stops the generation at its next token.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

from generation import CONTEXT, Generator
from sampling import MAX_TOP_K, Sampling

#: What the answers call the model (the base model; the served variant is the
#: generate app's "fast" one: int8 weights, f16 KV cache).
MODEL_ID = "gemma-3-270m"
#: The most tokens one request may ask for: ~10 s of the host's time at the
#: fast variant's ~50 tokens/s (docs/serving.md, "Budgets").
MAX_COMPLETION_TOKENS = 512
#: The longest prompt, in tokens. The cost search (tests/hostile_cost.py) found
#: 2,048 prompt tokens plus 512 new ones costing ~33 s of CPU: too close to the
#: 60 s a request may run once two share the cores. 1,024 costs ~6 s of prefill.
MAX_PROMPT_TOKENS = 1024
#: ... and in characters, checked before tokenizing it (the tokenizer takes
#: ~25 ms for this many, whatever they are).
MAX_PROMPT_CHARS = 16_000
#: As OpenAI: at most 4 stop strings; each is looked for in the text after
#: every token, so their length is bounded too.
MAX_STOPS = 4
MAX_STOP_CHARS = 64
DEFAULT_MAX_TOKENS = 16
DEFAULTS = Sampling()

#: The fields a request may have; any other is refused, as OpenAI does.
FIELDS = (
    "prompt", "max_tokens", "temperature", "top_p", "top_k", "repetition_penalty",
    "seed", "stop", "stream", "stream_options", "model", "n", "user",
)  # fmt: skip


class BadRequest(ValueError):
    """A request that cannot be served as it is: the HTTP status and why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Request:
    """A checked completions request."""

    prompt: str
    max_tokens: int
    sampling: Sampling
    stop: tuple[str, ...]
    stream: bool
    include_usage: bool


def _whole(doc: dict[str, object], key: str, default: int | None) -> int | None:
    value = doc.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(400, f'"{key}" must be a whole number, not {json.dumps(value)[:40]}')
    return value


def _number(doc: dict[str, object], key: str, default: float) -> float:
    value = doc.get(key, default)
    if value is None:  # OpenAI's clients send null for "not given"
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise BadRequest(400, f'"{key}" must be a number, not {json.dumps(value)[:40]}')
    return float(value)


def _stops(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    stops = [value] if isinstance(value, str) else value
    if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
        raise BadRequest(400, '"stop" must be a string or a list of strings')
    if len(stops) > MAX_STOPS:
        raise BadRequest(400, f'"stop" has {len(stops)} strings; at most {MAX_STOPS}')
    for s in stops:
        if not s or len(s) > MAX_STOP_CHARS:
            raise BadRequest(
                400, f'each "stop" string must have 1 to {MAX_STOP_CHARS} characters, not {len(s)}'
            )
    return tuple(str(s) for s in stops)


def parse(doc: object) -> Request:
    """The request in ``doc`` (parsed JSON), checked; ``BadRequest`` says what is wrong."""
    if not isinstance(doc, dict):
        raise BadRequest(400, 'the body must be a JSON object {"prompt": "...", ...}')
    unknown = sorted(set(doc) - set(FIELDS))
    if unknown:
        raise BadRequest(
            400, f"unknown field {json.dumps(unknown[0])[:80]}; the fields are {', '.join(FIELDS)}"
        )
    prompt = doc.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1:  # OpenAI's one-prompt batch
        prompt = prompt[0]
    if not isinstance(prompt, str) or not prompt:
        raise BadRequest(400, '"prompt" must be a non-empty string (one prompt per request)')
    if len(prompt) > MAX_PROMPT_CHARS:
        raise BadRequest(
            413, f'"prompt" has {len(prompt):,} characters; the limit is {MAX_PROMPT_CHARS:,}'
        )
    max_tokens = _whole(doc, "max_tokens", DEFAULT_MAX_TOKENS)
    max_tokens = DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens
    if not 1 <= max_tokens <= MAX_COMPLETION_TOKENS:
        raise BadRequest(
            400,
            f'"max_tokens" must be from 1 to {MAX_COMPLETION_TOKENS}, not {max_tokens}',
        )
    model = doc.get("model", MODEL_ID)
    if model not in (None, MODEL_ID):
        raise BadRequest(
            404, f'"model" {json.dumps(model)[:80]} is not served here; only {MODEL_ID}'
        )
    if _whole(doc, "n", 1) not in (None, 1):
        raise BadRequest(400, '"n" must be 1: one completion per request')
    if not isinstance(doc.get("user", ""), str):
        raise BadRequest(400, '"user" must be a string')
    stream = doc.get("stream", False)
    if not isinstance(stream, bool | None):
        raise BadRequest(400, '"stream" must be true or false')
    options = doc.get("stream_options") or {}
    if not isinstance(options, dict) or set(options) - {"include_usage"}:
        raise BadRequest(400, '"stream_options" must be an object {"include_usage": true|false}')
    include_usage = options.get("include_usage", False)
    if not isinstance(include_usage, bool):
        raise BadRequest(400, '"stream_options.include_usage" must be true or false')
    top_k = _whole(doc, "top_k", DEFAULTS.top_k)
    try:
        sampling = Sampling(
            temperature=_number(doc, "temperature", DEFAULTS.temperature),
            top_k=DEFAULTS.top_k if top_k is None else top_k,
            top_p=_number(doc, "top_p", DEFAULTS.top_p),
            repetition_penalty=_number(doc, "repetition_penalty", DEFAULTS.repetition_penalty),
            seed=_whole(doc, "seed", None),
        )
    except ValueError as e:  # out of range: Sampling names the field and the range
        raise BadRequest(400, str(e)) from None
    if top_k is not None and not 0 < top_k <= MAX_TOP_K:
        # top_k 0 (off) makes every step return all 262,144 logits (1 MiB).
        raise BadRequest(400, f'"top_k" must be from 1 to {MAX_TOP_K} here, not {top_k}')
    return Request(prompt, max_tokens, sampling, _stops(doc.get("stop")), bool(stream),
                   include_usage)  # fmt: skip


def prompt_ids(generator: Generator, request: Request) -> list[int]:
    """The prompt's token ids, refused (413) when over MAX_PROMPT_TOKENS."""
    ids = generator.encode(request.prompt)
    if len(ids) > MAX_PROMPT_TOKENS:
        raise BadRequest(
            413, f'"prompt" is {len(ids):,} tokens; the limit is {MAX_PROMPT_TOKENS:,}'
        )
    assert MAX_PROMPT_TOKENS + MAX_COMPLETION_TOKENS <= CONTEXT
    return ids


class Completion:
    """One request's answer, whole (``answer``) or as events (``events``)."""

    def __init__(self, generator: Generator, request: Request, ids: list[int]) -> None:
        self.generator = generator
        self.request = request
        self.ids = ids
        self.id = "cmpl-" + os.urandom(12).hex()
        self.created = int(time.time())

    def _texts(self) -> Iterator[str]:
        return self.generator.stream(
            self.ids, self.request.max_tokens, self.request.sampling, self.request.stop
        )

    def _usage(self) -> dict[str, int]:
        stats = self.generator.stats
        return {
            "prompt_tokens": stats.prompt_tokens,
            "completion_tokens": stats.generated_tokens,
            "total_tokens": stats.prompt_tokens + stats.generated_tokens,
        }

    def _object(self, choices: list[object], **more: object) -> dict[str, object]:
        return {"id": self.id, "object": "text_completion", "created": self.created,
                "model": MODEL_ID, "choices": choices, **more}  # fmt: skip

    @staticmethod
    def _choice(text: str, finish_reason: str | None) -> dict[str, object]:
        return {"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason}

    def answer(self) -> dict[str, object]:
        text = "".join(self._texts())
        finish = self.generator.stats.finish_reason
        return self._object([self._choice(text, finish)], usage=self._usage())

    def events(self) -> Iterator[bytes]:
        """The Server-Sent Events. When the client goes away, the write of the
        next event fails and the server closes this generator: the token loop
        (and its session on the host) ends there, which is logged."""
        sent = 0
        try:
            for text in self._texts():
                sent += 1
                yield _event(self._object([self._choice(text, None)]))
            finish = self.generator.stats.finish_reason
            yield _event(self._object([self._choice("", finish)]))
            if self.request.include_usage:
                yield _event(self._object([], usage=self._usage()))
            yield b"data: [DONE]\n\n"
        except GeneratorExit:
            made = self.generator.stats.generated_tokens
            print(
                f"serve: /v1/completions {self.id}: the client left after {sent} events "
                f"({made} tokens of at most {self.request.max_tokens}); generation stopped",
                file=sys.stderr,
            )
            raise


def _event(payload: dict[str, object]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"
