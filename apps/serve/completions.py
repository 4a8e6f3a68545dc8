"""POST /v1/completions: Gemma 3 270M continuing a prompt, in the shape of
OpenAI's completions API (the generate app's model and token loop).

A request is a JSON object; every field but ``prompt`` is optional:

    {"prompt": "The capital of France is", "max_tokens": 16, "temperature": 0.8,
     "top_p": 0.95, "top_k": 40, "repetition_penalty": 1.0, "seed": 7,
     "stop": ["\\n"], "stream": true, "stream_options": {"include_usage": true},
     "model": "gemma-3-270m", "n": 1, "user": "..."}

The defaults are OpenAI's for ``max_tokens`` (16) and the generate app's
(llama.cpp's) for sampling: temperature 0.8, top-k 40, top-p 0.95;
``temperature: 0`` is greedy. ``top_k`` and ``repetition_penalty`` are not
OpenAI's. OpenAI's ``presence_penalty``, ``frequency_penalty``, ``best_of``,
``echo``, ``logprobs``, ``suffix`` and ``logit_bias`` are taken only at their
neutral values, which some clients send by default. The answer:

    {"id": "cmpl-...", "object": "text_completion", "created": 1796000000,
     "model": "gemma-3-270m",
     "choices": [{"index": 0, "text": " Paris.", "logprobs": null,
                  "finish_reason": "stop"}],
     "usage": {"prompt_tokens": 6, "completion_tokens": 2, "total_tokens": 8}}

With ``"stream": true`` the same comes as Server-Sent Events, one ``data:``
event per piece of text as soon as its token is chosen (the first before the
second token is computed), then an event with ``finish_reason``, one with
``usage`` when ``stream_options.include_usage`` is true, and ``data: [DONE]``.

Everything is checked before any work (the prompt is tokenized to count it:
tens of milliseconds for the longest allowed), so a refused request costs next
to nothing. A client that goes away mid-stream stops the generation within a
few tokens: the first write after it left may still succeed, and a token whose
text is held back (a partial character, a possible stop string) writes nothing.
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
#: The most tokens one request may ask for: 512 cost the worker ~15 s of CPU,
#: ~8 s of wall clock (tests/hostile_cost.py; docs/serving.md, "Budgets").
MAX_COMPLETION_TOKENS = 512
#: The longest prompt, in tokens. The cost search (tests/hostile_cost.py) found
#: 2,048 prompt tokens plus 512 new ones costing ~34 s of CPU: too close to the
#: 60 s a request may run once two share the cores (and streamed answers are not
#: held to --concurrency: docs/serving.md, "Budgets"). 1,024 tokens and 512 new
#: ones cost ~21 s of CPU, the prefill ~3.5 s of it.
MAX_PROMPT_TOKENS = 1024
#: ... and in characters, checked before tokenizing it (the tokenizer takes
#: 20-80 ms for this many, whatever they are).
MAX_PROMPT_CHARS = 16_000
#: As OpenAI: at most 4 stop strings; each is looked for in the text after
#: every token, so their length is bounded too.
MAX_STOPS = 4
MAX_STOP_CHARS = 64
DEFAULT_MAX_TOKENS = 16
DEFAULTS = Sampling()

#: OpenAI's fields this server does not implement, taken only at their neutral
#: values (which some clients send by default); any other value is refused.
NEUTRAL: dict[str, tuple[object, ...]] = {
    "presence_penalty": (0, 0.0), "frequency_penalty": (0, 0.0), "best_of": (1,),
    "echo": (False,), "logprobs": (None,), "suffix": (None,), "logit_bias": ({},),
}  # fmt: skip
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


def _shown(value: object) -> str:
    """``value`` as JSON, cut short: an error never echoes a huge number or string."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _whole(
    doc: dict[str, object], key: str, default: int | None, low: int, high: int
) -> int | None:
    """The whole number ``doc[key]`` (``default`` when absent or null), from low to high."""
    value = doc.get(key)
    if value is None:  # OpenAI's clients send null for "not given"
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BadRequest(
            400, f'"{key}" must be a whole number from {low} to {high}, not {_shown(value)}'
        )
    return value


def _number(doc: dict[str, object], key: str, default: float) -> float:
    value = doc.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadRequest(400, f'"{key}" must be a number, not {_shown(value)}')
    if isinstance(value, float) and not math.isfinite(value):  # 1e999 reads as inf
        raise BadRequest(400, f'"{key}" must be a finite number, not {_shown(value)}')
    if abs(value) > 1e300:  # an integer too large for a float (1 and 400 zeros)
        raise BadRequest(400, f'"{key}" must be a number of sensible size, not {_shown(value)}')
    return float(value)


def _flag(value: object, name: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise BadRequest(400, f'"{name}" must be true or false, not {_shown(value)}')
    return value


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
    return tuple(stops)


def _prompt(value: object) -> str:
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
        value = value[0]  # OpenAI's batch of one prompt
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        raise BadRequest(400, '"prompt" must be text; token ids are not taken here')
    if isinstance(value, list):
        raise BadRequest(400, '"prompt" must be one string: one prompt per request')
    if not isinstance(value, str) or not value:
        raise BadRequest(400, '"prompt" must be a non-empty string')
    if len(value) > MAX_PROMPT_CHARS:
        raise BadRequest(
            413, f'"prompt" has {len(value):,} characters; the limit is {MAX_PROMPT_CHARS:,}'
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:  # JSON may carry half of a UTF-16 pair ("\ud800")
        raise BadRequest(
            400, f'"prompt" has half of a UTF-16 surrogate pair at character {e.start}: not text'
        ) from None
    return value


def parse(doc: object) -> Request:
    """The request in ``doc`` (parsed JSON), checked; ``BadRequest`` says what is wrong."""
    if not isinstance(doc, dict):
        raise BadRequest(400, 'the body must be a JSON object {"prompt": "...", ...}')
    unknown = sorted(set(doc) - set(FIELDS) - set(NEUTRAL))
    if unknown:
        raise BadRequest(
            400, f"unknown field {_shown(unknown[0])}; the fields are {', '.join(FIELDS)}"
        )
    for key, neutral in NEUTRAL.items():
        if key in doc and doc[key] not in neutral:
            raise BadRequest(
                400, f'"{key}" is not supported here: leave it out, or give {_shown(neutral[0])}'
            )
    prompt = _prompt(doc.get("prompt"))
    max_tokens = _whole(doc, "max_tokens", DEFAULT_MAX_TOKENS, 1, MAX_COMPLETION_TOKENS)
    assert max_tokens is not None
    model = doc.get("model")
    if model not in (None, MODEL_ID):
        raise BadRequest(404, f'"model" {_shown(model)} is not served here; only {MODEL_ID}')
    if _whole(doc, "n", 1, 0, 2**31) != 1:
        raise BadRequest(400, '"n" must be 1: one completion per request')
    if not isinstance(doc.get("user") or "", str):
        raise BadRequest(400, '"user" must be a string')
    stream = _flag(doc.get("stream"), "stream")
    options = doc.get("stream_options")
    if options is not None and not stream:
        raise BadRequest(400, '"stream_options" is only for "stream": true')
    options = {} if options is None else options
    if not isinstance(options, dict) or set(options) - {"include_usage"}:
        raise BadRequest(400, '"stream_options" must be an object {"include_usage": true|false}')
    include_usage = _flag(options.get("include_usage"), "stream_options.include_usage")
    # top_k 0 (off) would make every step return all 262,144 logits (1 MiB).
    top_k = _whole(doc, "top_k", DEFAULTS.top_k, 1, MAX_TOP_K)
    assert top_k is not None
    try:
        sampling = Sampling(
            temperature=_number(doc, "temperature", DEFAULTS.temperature),
            top_k=top_k,
            top_p=_number(doc, "top_p", DEFAULTS.top_p),
            repetition_penalty=_number(doc, "repetition_penalty", DEFAULTS.repetition_penalty),
            seed=_whole(doc, "seed", None, 0, 2**64 - 1),
        )
    except ValueError as e:  # out of range: Sampling names the field and the range
        raise BadRequest(400, str(e)) from None
    return Request(prompt, max_tokens, sampling, _stops(doc.get("stop")), stream, include_usage)


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

    def _chunk(self, text: str, finish_reason: str | None) -> bytes:
        # With include_usage, OpenAI's chunks carry "usage": null until the last.
        more = {"usage": None} if self.request.include_usage else {}
        return _event(self._object([self._choice(text, finish_reason)], **more))

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
        made = 0
        try:
            for text in self._texts():
                made += 1
                yield self._chunk(text, None)
            yield self._chunk("", self.generator.stats.finish_reason)
            if self.request.include_usage:
                yield _event(self._object([], usage=self._usage()))
            yield b"data: [DONE]\n\n"
        except GeneratorExit:
            tokens = self.generator.stats.generated_tokens
            print(
                f"serve: /v1/completions {self.id}: the client left; {made} events made "
                f"({tokens} tokens of at most {self.request.max_tokens}); generation stopped",
                file=sys.stderr,
            )
            raise


def _event(payload: dict[str, object]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"
