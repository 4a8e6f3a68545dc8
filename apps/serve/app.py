"""serve: the sample models as an HTTP service, a wasi:http component for `wasmtime serve`.

    POST /digits     an 8x8 PNG or JPEG
                     -> {"top3": [{"digit": 3, "probability": 0.99}, ...]}
    POST /textclass  {"texts": [...], "labels": [...]}
                     -> {"results": [{"text": ..., "ranking": [[label, score], ...]}, ...]}
    POST /ocr        a PNG or JPEG (up to MAX_IMAGE_BYTES)
                     -> {"lines": [{"box": [[x, y] x 4], "text": ..., "score": ...}],
                         "ms": ..., "stages": {...}}   (the ocr app's --json, per image)
    POST /speak      {"text": "...", "voice": "jf_alpha", "speed": 1.0} (voice and speed
                     optional) -> audio/wav, 24 kHz mono 16-bit, streamed: each
                     sentence's audio is sent as soon as it is made (the speak app)
    POST /v1/completions  {"prompt": "...", "max_tokens": 16, "temperature": 0.8, ...,
                     "stream": false} -> OpenAI's completions answer, or with "stream":
                     true Server-Sent Events token by token (completions.py); only on
                     a server started with `--preload gemma3-fast` (503 otherwise)
    GET  /health     -> {"status": "ok", "models": {"digits": true, "textclass": false, ...},
                         "uptime_s": 12.5, "requests": 1234, "instance": "9f2c01ab"}

Errors are JSON {"error": "..."}: 400 bad body (including JSON nested deeper than
jsonbody.MAX_DEPTH; for /speak empty text, an unknown voice, a speed outside
speech.MIN_SPEED..MAX_SPEED), 404 unknown path, 405 wrong method, 413 body over
MAX_BODY_BYTES (MAX_IMAGE_BYTES for /ocr), an image declaring more pixels than
its endpoint takes (for /ocr also one so thin that the detector would run on
more than pipeline.MAX_DETECTOR_PIXELS) or text over MAX_SPEAK_CHARS, 415 wrong
Content-Type, 422 text with a character that has no reading (named in the
error), 500 anything unexpected, 503 /v1/completions on a server that has not
preloaded its model (/v1/completions' own checks: completions.py). Each
route's budget (input size, CPU seconds, memory) is in docs/serving.md,
"Budgets". /speak reads the whole text before the answer starts, so every such
error comes before the first byte of audio; a failure after that can only end
the stream early (and is logged).
Run it with `./build.sh serve serve [--port P] [--reuse N]` (docs/serving.md).

Models load on the first request that needs them and stay loaded for every later
request this instance serves (with --reuse N, up to N requests; /speak's model
takes seconds to load, so serve it with --reuse). Adding an endpoint is a
function from the body to a JSON-able dict (or to a ``Stream``), plus a line in
ROUTES.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

import completions
import digits
import jsonbody
import pipeline
import speech
import textclass
import wav_writer
from componentize_py_types import Err, Ok
from generation import Generator, NotPreloadedError
from tokenizer import WordPiece
from wit_world import exports
from wit_world.imports import streams, types

from wasinn import Model, TooLargeError, image, start_instance

# A request body larger than this is refused with 413 as soon as the Content-Length
# header or the bytes read so far exceed it; the rest of it is read and dropped
# (up to DRAIN_MAX_BYTES), never kept.
MAX_BODY_BYTES = 1 << 20
# Photos and scans for /ocr.
MAX_IMAGE_BYTES = 16 << 20
# The most pixels an /ocr image may declare (a 16-megapixel photo), refused with 413
# from its header before anything is decoded (decoding alone needs about 3 bytes
# per pixel and channel: ~150 MB here). The detector's own size is bounded too,
# also from the header (pipeline.MAX_DETECTOR_PIXELS): a thin image is refused,
# not padded. What a whole request costs is measured in docs/serving.md, "Budgets".
# (/digits takes at most digits.MAX_PIXELS, 512 x 512.)
MAX_OCR_PIXELS = 4096 * 4096
# Columns of text one /ocr request has read (pipeline.columns: each box's
# width at the models' 48-pixel height, plus the direction classifier's 192):
# ~50 us of the host's time each, so about 10 s. The receipt sample needs about
# 7,000 (12 lines), a page of small print, 140 lines of 2,000 pixels, a million (40 s).
MAX_OCR_COLUMNS = 200_000
# Texts plus labels per /textclass request: each is one MiniLM run (~20 ms) of at
# most textclass.MAX_TOKENS tokens, and only as much of each text is read as
# those tokens need (the tokenizer stops there), so this bounds a request's time.
MAX_TEXTCLASS_ITEMS = 64
READ_CHUNK = 64 << 10
# How much of a refused body is still read (and dropped) before the 413 goes out.
# Answering with the body unread makes the connection's close a reset, and a
# sender still writing it (a proxy, curl) sees the reset instead of the 413:
# nginx counted that as the worker failing and, after two such requests, took
# every worker out of service for seconds. nginx passes on at most 17 MiB
# (tools/deploy.py's MAX_BODY), read here in ~10 ms; a larger body, possible
# only without nginx, is not worth reading.
DRAIN_MAX_BYTES = 32 << 20
# wasi:io's blocking-write-and-flush takes at most 4096 bytes per call.
WRITE_CHUNK = 4096
# The longest /speak text, in characters: about a minute and a half of speech,
# which takes the host tens of seconds to make.
MAX_SPEAK_CHARS = 500
# What /speak makes at most, in phonemes: the model's work grows with the audio,
# and a character can read as several phonemes (a Latin letter is spelled out:
# "W" is ダブリュー) or a slow speed stretch them. So a text counts its phonemes
# divided by the speed, plus SPEAK_RUN_PHONEMES for each model run (a sentence,
# or a piece of a long one): however short, a run costs the host about as much
# as ten phonemes (0.33 s of CPU against 0.036 s; docs/serving.md, "Budgets").
# Counted after the text is read (milliseconds), before any audio is made.
# Everyday text of 500 characters counts about 1,200.
MAX_SPEAK_PHONEMES = 1500
SPEAK_RUN_PHONEMES = 10

# The used apps' folders are mapped to /apps/NAME (build.txt, `./build.sh serve`).
DIGITS_MODEL = "/apps/digits/model/digits.xml"

T = TypeVar("T", covariant=True)


class HttpError(Exception):
    """An answer other than 200: the status and the message of the JSON error body."""

    NO_HEADERS: tuple[tuple[str, bytes], ...] = ()

    def __init__(self, status: int, message: str, headers: tuple[tuple[str, bytes], ...] = ()):
        super().__init__(message)
        self.status = status
        self.headers = headers


class Lazy(Generic[T]):
    """A model loaded on first use and kept by this instance. A failed load is not
    kept, so the next request tries again (after a fix to a missing file, say)."""

    def __init__(self, load: Callable[[], T]) -> None:
        self._load = load
        self._value: T | None = None

    @property
    def loaded(self) -> bool:
        return self._value is not None

    def get(self) -> T:
        if self._value is None:
            self._value = self._load()
        return self._value


def _load_textclass() -> tuple[Model, WordPiece]:
    return Model.load(textclass.MODEL), WordPiece.from_file(textclass.VOCAB)


DIGITS = Lazy(lambda: Model.load(DIGITS_MODEL))
TEXTCLASS = Lazy(_load_textclass)
OCR = Lazy(lambda: pipeline.Reader(pipeline.MODELS))
SPEAKER = Lazy(speech.Speaker)
# The host loads Gemma (too large for one call) when the instance starts, only
# if the server was started with `--preload gemma3-fast` (apps/serve/build.txt);
# this takes the host's copy and reads the tokenizer.
GENERATOR = Lazy(lambda: Generator.load("fast"))
# What /health reports.
MODELS: dict[str, Lazy[object]] = {
    "digits": DIGITS, "textclass": TEXTCLASS, "ocr": OCR, "speak": SPEAKER,
    "completions": GENERATOR,
}  # fmt: skip


@dataclass(frozen=True)
class Stream:
    """An answer sent piece by piece as it is made: its Content-Type, the pieces
    and any more headers."""

    content_type: str
    pieces: Iterator[bytes]
    headers: tuple[tuple[str, bytes], ...] = ()


class Stats:
    """Counters of this instance. componentize-py runs module code at build time,
    so the clock starts at the instance's first request, not at import."""

    started: float | None = None
    requests = 0
    # Tells instances apart in /health answers (a reused server keeps several).
    instance = ""


def answer_digits(body: bytes) -> dict[str, object]:
    try:
        x = digits.pixels(body, "the request body")
    except image.ImageTooLargeError as e:  # its header, before any pixel is decoded
        raise HttpError(413, str(e)) from None
    except image.ImageError as e:
        raise HttpError(400, str(e)) from None
    ranked = digits.top3(DIGITS.get(), x)
    return {"top3": [{"digit": d, "probability": p} for d, p in ranked]}


def _strings(doc: dict[str, object], key: str) -> list[str]:
    value = doc.get(key)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise HttpError(400, f'"{key}" must be a non-empty list of strings')
    return [str(v) for v in value]


def answer_textclass(body: bytes) -> dict[str, object]:
    try:
        doc = jsonbody.parse(body)
    except jsonbody.BadJSON as e:
        raise HttpError(400, str(e)) from None
    if not isinstance(doc, dict):
        raise HttpError(400, 'the body must be a JSON object {"texts": [...], "labels": [...]}')
    texts, labels = _strings(doc, "texts"), _strings(doc, "labels")
    if len(texts) + len(labels) > MAX_TEXTCLASS_ITEMS:
        raise HttpError(400, f"at most {MAX_TEXTCLASS_ITEMS} texts and labels together")
    model, vocab = TEXTCLASS.get()
    label_vectors = [textclass.embed(model, vocab, label) for label in labels]
    results: list[object] = []
    for text in texts:
        ranking = textclass.rank(textclass.embed(model, vocab, text), labels, label_vectors)
        results.append({"text": text, "ranking": ranking})
    return {"results": results}


def answer_ocr(body: bytes) -> dict[str, object]:
    start = time.perf_counter()
    try:
        # The header alone says what reading it would cost: refuse before decoding.
        info = image.probe(body, name="the request body")
        pipeline.check_size(info.height, info.width)
        pixels = pipeline.rgb_pixels(body, "the request body", max_pixels=MAX_OCR_PIXELS)
    except image.ImageTooLargeError as e:
        raise HttpError(413, str(e)) from None
    except image.ImageError as e:
        raise HttpError(400, str(e)) from None
    except pipeline.UnreadableImage as e:  # thinner than the detector's limit allows
        raise HttpError(413, str(e)) from None
    decoded = time.perf_counter()
    reader = OCR.get()  # a failure here is the server's (500), not the request's
    try:
        reading = reader.read(pixels, max_columns=MAX_OCR_COLUMNS)
    except pipeline.UnreadableImage as e:
        raise HttpError(400, str(e)) from None
    except pipeline.TooMuchText as e:
        raise HttpError(413, str(e)) from None
    except TooLargeError as e:  # more than the host takes in one call
        raise HttpError(413, str(e)) from None
    ms = (time.perf_counter() - start) * 1000
    stages = {"decode": (decoded - start) * 1000, **reading.ms}
    return {"lines": reading.json_lines(), "ms": ms, "stages": stages}


def answer_speak(body: bytes) -> Stream:
    try:
        doc = jsonbody.parse(body)
    except jsonbody.BadJSON as e:
        raise HttpError(400, str(e)) from None
    if not isinstance(doc, dict):
        raise HttpError(
            400, 'the body must be a JSON object {"text": "...", "voice": ..., "speed": ...}'
        )
    text, voice = doc.get("text"), doc.get("voice", speech.DEFAULT_VOICE)
    speed = doc.get("speed", 1.0)
    if not isinstance(text, str) or not text.strip():
        raise HttpError(400, '"text" must be a non-empty string')
    if len(text) > MAX_SPEAK_CHARS:
        raise HttpError(413, f'"text" has {len(text)} characters; the limit is {MAX_SPEAK_CHARS}')
    if not isinstance(voice, str):
        raise HttpError(400, f'"voice" must be a string, one of {", ".join(speech.VOICES)}')
    if isinstance(speed, bool) or not isinstance(speed, int | float):
        raise HttpError(
            400, f'"speed" must be a number from {speech.MIN_SPEED} to {speech.MAX_SPEED}'
        )
    try:
        speech.check_voice(voice)
        speech.check_speed(speed)
    except ValueError as e:
        raise HttpError(400, str(e)) from None
    speaker = SPEAKER.get()  # a failure here is the server's (500), not the request's
    try:
        planned = speaker.plan(text)
    except speech.UnreadableText as e:
        raise HttpError(422, str(e)) from None
    except speech.SentenceTooLong as e:
        raise HttpError(413, str(e)) from None
    phonemes = sum(len(speaker.tokens(chunk)) for chunk in planned)
    counted = phonemes / speed + SPEAK_RUN_PHONEMES * len(planned)
    if counted > MAX_SPEAK_PHONEMES:
        raise HttpError(
            413,
            f'"text" is too much to say at once: {phonemes} phonemes at speed {speed} in '
            f"{len(planned)} runs of the model count as {counted:.0f} (phonemes / speed + "
            f"{SPEAK_RUN_PHONEMES} a run); the limit is {MAX_SPEAK_PHONEMES}: send less text, "
            "in fewer sentences",
        )
    speaker.model  # noqa: B018 - loaded before the answer starts: a failure is still a 500

    def pieces() -> Iterator[bytes]:
        yield wav_writer.header(speech.SAMPLE_RATE, None)
        for audio in speaker.speak_chunks(planned, voice, float(speed)):
            yield wav_writer.pcm16(audio)

    return Stream("audio/wav", pieces())


def _generator() -> Generator:
    try:
        return GENERATOR.get()
    except NotPreloadedError:
        raise HttpError(
            503,
            "this server has not loaded the language model: start it with `./build.sh serve "
            "serve --reuse N --preload gemma3-fast` (the host loads the model into every "
            "instance, ~1.5 s each, so reuse them)",
        ) from None


def answer_completions(body: bytes) -> dict[str, object] | Stream:
    try:
        request = completions.parse(jsonbody.parse(body))
        # Counting the prompt's tokens needs the tokenizer, which comes with the model.
        generator = _generator()
        ids = completions.prompt_ids(generator, request)
    except jsonbody.BadJSON as e:
        raise HttpError(400, str(e)) from None
    except completions.BadRequest as e:
        raise HttpError(e.status, str(e)) from None
    completion = completions.Completion(generator, request, ids)
    if request.stream:
        # nginx (`./build.sh deploy`) would hold small events until its buffer
        # fills: X-Accel-Buffering tells it to pass each one on at once.
        sse = (("cache-control", b"no-cache"), ("x-accel-buffering", b"no"))
        return Stream("text/event-stream", completion.events(), sse)
    return completion.answer()


def answer_health(body: bytes) -> dict[str, object]:
    started = Stats.started if Stats.started is not None else time.monotonic()
    return {
        "status": "ok",
        "models": {name: lazy.loaded for name, lazy in MODELS.items()},
        "uptime_s": round(time.monotonic() - started, 3),
        "requests": Stats.requests,
        "instance": Stats.instance,
    }


@dataclass(frozen=True)
class Route:
    """An endpoint: its method, the Content-Types it takes (none: no body is
    read) and the function from the body to the JSON answer."""

    method: str
    content_types: tuple[str, ...]
    answer: Callable[[bytes], dict[str, object] | Stream]
    limit: int = MAX_BODY_BYTES


ROUTES = {
    "/digits": Route("POST", ("image/png", "image/jpeg"), answer_digits),
    "/textclass": Route("POST", ("application/json",), answer_textclass),
    "/ocr": Route("POST", ("image/png", "image/jpeg"), answer_ocr, MAX_IMAGE_BYTES),
    "/speak": Route("POST", ("application/json",), answer_speak),
    "/v1/completions": Route("POST", ("application/json",), answer_completions),
    "/health": Route("GET", (), answer_health),
}


def _method(request: types.IncomingRequest) -> str:
    method = request.method()
    if isinstance(method, types.Method_Other):
        return method.value.upper()
    return type(method).__name__.removeprefix("Method_").upper()


def _header(request: types.IncomingRequest, name: str) -> str | None:
    with request.headers() as headers:
        values = headers.get(name)
    return values[0].decode("latin-1").strip() if values else None


def read_body(request: types.IncomingRequest, limit: int) -> bytes:
    """The request body, read in chunks so that a body over ``limit`` is refused
    (413) with at most ``limit`` bytes of it kept, whatever Content-Length claims."""
    length = _header(request, "content-length")
    if length is not None and not length.isdigit():
        raise HttpError(400, f"bad Content-Length {length!r}")
    declared = int(length) if length is not None else None
    parts: list[bytes] = []
    size = 0
    with request.consume() as body, body.stream() as stream:
        if declared is not None and declared > limit:
            if declared <= DRAIN_MAX_BYTES:
                _drain(stream, DRAIN_MAX_BYTES)
            raise HttpError(413, f"the body is {declared} bytes; the limit is {limit}")
        while (chunk := _read_chunk(stream)) is not None:
            size += len(chunk)
            if size > limit:
                _drain(stream, DRAIN_MAX_BYTES - size)
                raise HttpError(413, f"the body is over the limit of {limit} bytes")
            parts.append(chunk)
    return b"".join(parts)


def _read_chunk(stream: streams.InputStream) -> bytes | None:
    """The body's next bytes, or None at its end."""
    try:
        return stream.blocking_read(READ_CHUNK)
    except Err as e:
        if isinstance(e.value, streams.StreamError_Closed):
            return None
        raise HttpError(400, "the request body could not be read") from None


def _drain(stream: streams.InputStream, budget: int) -> None:
    """Read and drop the rest of a refused body, at most ``budget`` bytes of it
    (why: DRAIN_MAX_BYTES); a body that fails to arrive is left as it is."""
    while budget > 0:
        try:
            chunk = _read_chunk(stream)
        except HttpError:
            return
        if chunk is None:
            return
        budget -= len(chunk)


def dispatch(request: types.IncomingRequest) -> dict[str, object] | Stream:
    path = (request.path_with_query() or "/").split("?", 1)[0]
    route = ROUTES.get(path)
    if route is None:
        raise HttpError(404, f"no endpoint {path}; there are {', '.join(sorted(ROUTES))}")
    method = _method(request)
    if method != route.method:
        allow = (("allow", route.method.encode()),)
        raise HttpError(405, f"{path} takes {route.method}, not {method}", allow)
    body = b""
    if route.content_types:
        given = (_header(request, "content-type") or "").split(";", 1)[0].strip().lower()
        if given not in route.content_types:
            wanted = " or ".join(route.content_types)
            raise HttpError(415, f"{path} takes {wanted}, not {given or 'no Content-Type'}")
        body = read_body(request, route.limit)
    return route.answer(body)


def respond(
    out: types.ResponseOutparam,
    status: int,
    payload: dict[str, object] | Stream,
    extra: tuple[tuple[str, bytes], ...] = (),
) -> None:
    """Send the answer: JSON whole, with its length; a Stream piece by piece, each
    flushed to the client as soon as it is made (no length: chunked on the wire)."""
    if isinstance(payload, Stream):
        fields = [("content-type", payload.content_type.encode()), *payload.headers]
        pieces = payload.pieces
    else:
        data = json.dumps(payload).encode()
        fields = [("content-type", b"application/json"), ("content-length", b"%d" % len(data))]
        pieces = iter([data])
    response = types.OutgoingResponse(types.Fields.from_list([*fields, *extra]))
    response.set_status_code(status)
    body = response.body()
    types.ResponseOutparam.set(out, Ok(response))
    # A piece that fails to come (the host failing mid-speech) raises out of here
    # before finish: the body is then dropped unfinished, which wasmtime passes on
    # as a broken response instead of a short one that looks complete.
    try:
        with body.write() as stream:
            for piece in pieces:
                for start in range(0, len(piece), WRITE_CHUNK):
                    stream.blocking_write_and_flush(piece[start : start + WRITE_CHUNK])
    finally:
        # A client gone mid-stream fails the write: stop making what nobody reads
        # (a generator's close ends its work there, e.g. /v1/completions' token loop).
        close = getattr(pieces, "close", None)
        if close is not None:
            close()
    types.OutgoingBody.finish(body, None)


class IncomingHandler(exports.IncomingHandler):
    def handle(self, request: types.IncomingRequest, response_out: types.ResponseOutparam) -> None:
        # Every exception becomes a JSON answer: an uncaught one would trap the
        # instance, and the client would get a bare 500 from wasmtime.
        start_instance()
        if Stats.started is None:
            Stats.started = time.monotonic()
            Stats.instance = os.urandom(4).hex()
        Stats.requests += 1
        status, extra = 200, HttpError.NO_HEADERS
        try:
            payload = dispatch(request)
        except HttpError as e:
            status, payload, extra = e.status, {"error": str(e)}, e.headers
        except Exception as e:  # noqa: BLE001 - the last line of defence
            print(f"serve: 500: {type(e).__name__}: {e}", file=sys.stderr)
            status, payload = 500, {"error": f"{type(e).__name__}: {e}"}
        # Which instance answered (as /health's "instance"): an instance's first
        # request to a route also loads its model, which tells the two apart.
        extra = (*extra, ("x-instance", Stats.instance.encode()))
        try:
            respond(response_out, status, payload, extra)
        except Exception as e:  # noqa: BLE001 - the client is gone or the host refused
            print(f"serve: could not send the answer: {type(e).__name__}: {e}", file=sys.stderr)
