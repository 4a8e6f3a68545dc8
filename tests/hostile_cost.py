"""The hostile suite's cost dimension (issue 34): for every route of apps/serve,
a search over cheap, well-formed inputs for the most server CPU time and
memory one request can buy, measured against the route's budget.

    .venv/bin/python tests/hostile_cost.py [--quick] [--route PATH ...] [--out FILE]
    ./build.sh hostile --cost [--quick]      # the same, after setup

The server is `./build.sh serve serve --reuse --preload gemma3-fast`, one worker, its models loaded
by a warm-up request per route, so that each request pays only for itself.
For each request the worker's CPU time (user + system, all threads, from
/proc/PID/stat) and its peak resident memory above what it held before
(VmHWM after resetting it through /proc/PID/clear_refs, less VmRSS before)
are read. Requests run one at a time.

Each route has families of inputs that cost little to send and may cost much
to serve: long runs of one character, quotes and escapes, thin and huge
images, many small items, one giant item, characters outside ASCII, NUL. A
family is tried at sizes growing by a factor up to what the route takes; the
worst of every family, by CPU seconds and by megabytes, is what the README's
table quotes. ``--quick`` tries the fixed sample ``QUICK`` (the worst inputs
the full run found, a few per route) that tests/test_hostile_cost.py holds to
the budgets in ``./build.sh test``.

A route's budget (``BUDGETS``, docs/serving.md "Budgets") is a ceiling with
room for a slower machine, not a speed target: what it catches is work that
grows faster than the input (a quadratic scan, padding to gigabytes), which
overshoots it by orders of magnitude.
"""

from __future__ import annotations

import argparse
import http.client
import io
import json
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from PIL import Image, ImageDraw

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "tests") not in sys.path:  # run as a script
    sys.path.insert(0, str(ROOT / "tests"))

import serve_host  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "hostile_cost.md"
SEED = 34  # the number: any fixed value makes runs repeatable
#: apps/serve's input limits (app.py, speech.py), which the families stay within.
MAX_BODY = 1 << 20
MAX_SPEAK_CHARS = 500
MAX_TEXTCLASS_ITEMS = 64
#: apps/serve/completions.py's limits.
MAX_PROMPT_CHARS = 16_000
MAX_COMPLETION_TOKENS = 512
#: One request is given this long before it counts as over any budget.
REQUEST_TIMEOUT_S = 300.0
#: The pause before each request (``measure``), and how many times a request
#: that met a cold instance is sent again.
SETTLE_S = 0.5
ATTEMPTS = 4


@dataclass(frozen=True)
class Budget:
    """What one request to a route may cost at most: CPU seconds of the worker,
    megabytes of its peak memory above its size before the request, and the
    input limits that enforce them (in the route's own units)."""

    cpu_s: float
    memory_mb: float
    inputs: str


BUDGETS = {
    "/health": Budget(0.1, 16, "no body"),
    "/digits": Budget(0.5, 64, "body 1 MiB; 512 x 512 pixels (digits.MAX_PIXELS)"),
    "/textclass": Budget(
        10.0, 256,
        "body 1 MiB; JSON 64 levels deep; 64 texts and labels; 128 tokens each (the rest of a "
        "text is not read)",
    ),
    "/ocr": Budget(
        30.0, 2048,
        "body 16 MiB; 16 megapixels declared; 4.36 megapixels at the detector "
        "(pipeline.MAX_DETECTOR_PIXELS; both from the header); 200,000 columns of text to read "
        "(MAX_OCR_COLUMNS)",
    ),
    "/speak": Budget(
        60.0, 1536,
        "body 1 MiB; 500 characters; 1,500 phonemes (phonemes / speed + 10 a model run, "
        "MAX_SPEAK_PHONEMES); 8,192 bytes a sentence; a run's audio at most ~1 million samples",
    ),
    "/v1/completions": Budget(
        45.0, 512,
        "body 1 MiB; prompt 16,000 characters and 1,024 tokens; max_tokens 512; 4 stop "
        "strings of 64 characters; top_k 1 to 1,024",
    ),
}  # fmt: skip


@dataclass(frozen=True)
class Case:
    """One request: its route, family, size (in the family's unit) and body."""

    route: str
    family: str
    size: int
    unit: str
    content_type: str | None
    body: bytes

    @property
    def name(self) -> str:
        return f"{self.route} {self.family} {self.size:,} {self.unit}"


@dataclass(frozen=True)
class Cost:
    """What serving one case cost the worker, and what the client got."""

    case: Case
    status: int
    error: str
    cpu_s: float
    memory_mb: float
    wall_s: float
    #: The worker's own peak during the request (VmHWM), MB.
    worker_mb: float

    @property
    def within_budget(self) -> bool:
        budget = BUDGETS[self.case.route]
        return self.cpu_s <= budget.cpu_s and self.memory_mb <= budget.memory_mb

    @property
    def answered_well(self) -> bool:
        """A 2xx, or a 4xx with a JSON error that says what is wrong."""
        return 200 <= self.status < 300 or (400 <= self.status < 500 and bool(self.error))


# ---------------------------------------------------------------- families

Maker = Callable[[int], bytes]


@dataclass(frozen=True)
class Family:
    """Inputs of one shape at growing sizes: ``make(size)`` is the body."""

    route: str
    name: str
    unit: str
    content_type: str | None
    make: Maker
    sizes: tuple[int, ...]

    def cases(self) -> list[Case]:
        return [
            Case(self.route, self.name, n, self.unit, self.content_type, self.make(n))
            for n in self.sizes
        ]


def _json(doc: object) -> bytes:
    return json.dumps(doc, ensure_ascii=False).encode()


def _textclass(texts: list[str], labels: Sequence[str] = ("news",)) -> bytes:
    return _json({"texts": texts, "labels": list(labels)})


def _fill(unit: str, chars: int) -> str:
    return (unit * (chars // len(unit) + 1))[:chars]


def _words(count: int, length: int, rng: random.Random) -> str:
    """``count`` distinct words of ``length`` letters (none in the word cache)."""
    return " ".join(
        "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(length)) for _ in range(count)
    )


def _speak(text: str, speed: float = 1.0) -> bytes:
    return _json({"text": text, "speed": speed})


def _complete(prompt: str, max_tokens: int = MAX_COMPLETION_TOKENS, **more: object) -> bytes:
    return _json({"prompt": prompt, "max_tokens": max_tokens, **more})


#: A prompt that the fast variant continues for 512 tokens without <eos> (greedy).
COUNTING = ", ".join(str(i) for i in range(1, 40)) + ","


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, "PNG", optimize=False)
    return out.getvalue()


def _jpeg(image: Image.Image, quality: int = 90) -> bytes:
    out = io.BytesIO()
    image.save(out, "JPEG", quality=quality)
    return out.getvalue()


def _dashes(side: int, step: int) -> Image.Image:
    """A white square with a short black dash every ``step`` pixels: as many
    small text-like blobs as the detector can find (it keeps 1,000)."""
    image = Image.new("L", (side, side), 255)
    draw = ImageDraw.Draw(image)
    for y in range(step // 2, side, step):
        for x in range(step // 2, side, step):
            draw.rectangle((x, y, x + step // 2, y + step // 4), fill=0)
    return image.convert("RGB")


def _noise(width: int, height: int, seed: int) -> Image.Image:
    return Image.frombytes(
        "RGB", (width, height), random.Random(seed).randbytes(width * height * 3)
    )


def _text_image(width: int, height: int, lines: int) -> Image.Image:
    """Rows of short printed words: what a dense page of text looks like."""
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    rng = random.Random(SEED)
    step = max(height // lines, 12)
    for y in range(4, height - step, step):
        draw.text((6, y), _words(width // 40, 5, rng), fill="black")
    return image


BODY_KIB = (1, 16, 256, 1023)  # body sizes, KiB (the last just under the 1 MiB limit)
SPEAK_CHARS = (10, 100, MAX_SPEAK_CHARS)


def families() -> list[Family]:
    rng = random.Random(SEED)
    kib = tuple(k * 1024 for k in BODY_KIB)
    json_type = "application/json"
    one_text = {
        # Long runs of one character: all one word, or all words, or all dropped.
        "run of 'a'": "a",
        "run of '.'": ".",
        "run of 'a.'": "a.",
        "run of '中' (CJK: a word each)": "中",
        "run of emoji": "\U0001f600",
        "run of spaces": " ",
        "run of NUL (dropped)": "\x00",
        "run of U+0301 (accents, dropped)": "\u0301",
        "run of '\"' (escaped)": '"',
        "run of '\\\\' (escaped)": "\\",
    }
    out = [
        Family("/textclass", name, "bytes", json_type,
               lambda n, u=unit: _textclass([_fill(u, n // max(1, len(_json(u)) - 2))]), kib)
        for name, unit in one_text.items()
    ]  # fmt: skip
    out += [
        Family("/textclass", "words of 100 letters", "bytes", json_type,
               lambda n: _textclass([_words(n // 101, 100, rng)]), kib),
        Family("/textclass", "words of 99 letters (just under the [UNK] length)", "bytes",
               json_type, lambda n: _textclass([_words(n // 100, 99, rng)]), kib),
        Family("/textclass", "64 items of 100-letter words", "bytes", json_type,
               lambda n: _textclass([_words(n // 64 // 101, 100, rng) for _ in range(63)]),
               kib),
        Family("/textclass", "64 items, each a run of '中'", "bytes", json_type,
               lambda n: _textclass([_fill("中", n // 64 // 3)] * 63), kib),
        # The JSON pre-scan's old worst case and other bracket-heavy bodies (400s).
        Family("/textclass", "65 '[' then '\\\"' pairs (pre-scan)", "bytes", json_type,
               lambda n: b"[" * 65 + b'\\"' * ((n - 66) // 2) + b"x", kib),
        Family("/textclass", "'[' nested", "bytes", json_type, lambda n: b"[" * n, kib),
        Family("/textclass", "'[\"' repeated", "bytes", json_type,
               lambda n: b'["' * (n // 2), kib),
        Family("/textclass", "many small strings in one list", "bytes", json_type,
               lambda n: _textclass(["a"] * (n // 4)), kib),
        Family("/textclass", "many keys", "bytes", json_type,
               lambda n: _json({f"k{i}": 0 for i in range(n // 14)}), kib),
    ]  # fmt: skip
    speak_texts = {
        "run of 'あ'": "あ",
        "run of '一' (kanji)": "一",
        "run of '9' (a number)": "9",
        "run of '1 ' (numbers)": "1 ",
        "run of 'a' (Latin letters)": "a",
        "run of 'ABC' (spelled out)": "ABC",
        "run of '。' (empty sentences)": "。",
        "run of 'あ。' (short sentences)": "あ。",
        "run of 'ー' (long vowels)": "ー",
        "run of '承' (long readings)": "承",
        "NUL after a word": "あ\x00",
        "Arabic-Indic digits": "\u0663",
    }
    out += [
        Family("/speak", name, "chars", json_type, lambda n, t=text: _speak(_fill(t, n)),
               SPEAK_CHARS)
        for name, text in speak_texts.items()
    ]  # fmt: skip
    out += [
        Family("/speak", "kana at speed 0.5 (longest audio)", "chars", json_type,
               lambda n: _speak(_fill("あいうえお", n), 0.5), SPEAK_CHARS),
        Family("/speak", "one sentence of kana, no 。", "chars", json_type,
               lambda n: _speak(_fill("かきくけこ", n)), SPEAK_CHARS),
        Family("/speak", "over the character limit", "chars", json_type,
               lambda n: _speak(_fill("あ", n)), (MAX_SPEAK_CHARS + 1, MAX_BODY // 4)),
    ]  # fmt: skip
    out += [
        Family("/ocr", "white PNG, W x 8 (thin)", "px wide", "image/png",
               lambda w: _png(Image.new("RGB", (w, 8), "white")), (100, 500, 1000, 1999)),
        Family("/ocr", "white PNG, 1 x H (thin, tall)", "px high", "image/png",
               lambda h: _png(Image.new("RGB", (1, h), "white")), (100, 1000, 4096)),
        Family("/ocr", "white PNG, W x 29", "px wide", "image/png",
               lambda w: _png(Image.new("RGB", (w, 29), "white")), (1000, 4000, 16000)),
        Family("/ocr", "white PNG, side x side", "px a side", "image/png",
               lambda s: _png(Image.new("RGB", (s, s), "white")), (1000, 2000, 4096)),
        Family("/ocr", "noise JPEG, side x side", "px a side", "image/jpeg",
               lambda s: _jpeg(_noise(s, s, SEED), 75), (500, 2000, 4096)),
        Family("/ocr", "dashes every 12 px (many boxes)", "px a side", "image/png",
               lambda s: _png(_dashes(s, 12)), (400, 1000, 2000)),
        Family("/ocr", "rows of small words", "px a side", "image/png",
               lambda s: _png(_text_image(s, s, s // 14)), (500, 1000, 2000)),
    ]  # fmt: skip
    out += [
        Family("/digits", "noise PNG, side x side", "px a side", "image/png",
               lambda s: _png(_noise(s, s, SEED)), (8, 128, 512, 513)),
        Family("/digits", "white PNG, side x side", "px a side", "image/png",
               lambda s: _png(Image.new("RGB", (s, s), "white")), (8, 512, 4096)),
        Family("/health", "GET", "bytes", None, lambda n: b"", (0,)),
    ]  # fmt: skip
    prompt_chars = (100, 1000, 4000, MAX_PROMPT_CHARS)
    prompts = {
        # A token a character: past 1,024 refused by the token count, after tokenizing.
        "prompt of private-use characters": "\ue000",
        "prompt run of 'a' (8 letters a token)": "a",
        "prompt of random words": "",
        "prompt run of '中'": "中",
    }
    out += [
        Family("/v1/completions", name, "chars", json_type,
               lambda n, u=unit: _complete(_words(n // 8, 7, rng) if not u else _fill(u, n),
                                           temperature=0),
               prompt_chars)
        for name, unit in prompts.items()
    ]  # fmt: skip
    out += [
        Family("/v1/completions", "counting, greedy, max_tokens", "tokens", json_type,
               lambda n: _complete(COUNTING, n, temperature=0), (16, 128, MAX_COMPLETION_TOKENS)),
        Family("/v1/completions", "counting, streamed, max_tokens", "tokens", json_type,
               lambda n: _complete(COUNTING, n, temperature=0, stream=True),
               (128, MAX_COMPLETION_TOKENS)),
        Family("/v1/completions", "1,000-token prompt, then max_tokens", "tokens", json_type,
               lambda n: _complete(_fill("a", 6_800) + " " + COUNTING, n, temperature=0),
               (1, MAX_COMPLETION_TOKENS)),
        Family("/v1/completions", "top_k 1024, temperature 2, max_tokens", "tokens", json_type,
               lambda n: _complete(COUNTING, n, temperature=2, top_k=1024, top_p=1, seed=1),
               (MAX_COMPLETION_TOKENS,)),
        Family("/v1/completions", "4 stop strings of 64 never found, max_tokens", "tokens",
               json_type,
               lambda n: _complete(COUNTING, n, temperature=0, stop=["x" * 63 + str(i)
                                                                     for i in range(4)]),
               (MAX_COMPLETION_TOKENS,)),
        Family("/v1/completions", "repetition penalty 10 on a 1,000-token prompt", "tokens",
               json_type,
               lambda n: _complete(_words(500, 3, rng), n, repetition_penalty=10, seed=1),
               (MAX_COMPLETION_TOKENS,)),
    ]  # fmt: skip
    return out


#: The quick sample: the most expensive cases of the full run, a few per route
#: (names as ``Case.name`` gives them), held to the budgets by the test run.
QUICK = (
    "/health GET 0 bytes",
    "/digits noise PNG, side x side 512 px a side",
    "/textclass 65 '[' then '\\\"' pairs (pre-scan) 1,047,552 bytes",
    "/textclass words of 100 letters 1,047,552 bytes",
    "/textclass 64 items of 100-letter words 1,047,552 bytes",
    "/ocr white PNG, W x 8 (thin) 1,999 px wide",
    "/ocr white PNG, side x side 4,096 px a side",
    "/ocr rows of small words 2,000 px a side",
    "/speak run of 'あ' 100 chars",
    "/speak run of 'あ。' (short sentences) 500 chars",
    "/speak NUL after a word 10 chars",
    "/speak Arabic-Indic digits 10 chars",
    "/v1/completions 1,000-token prompt, then max_tokens 512 tokens",
    "/v1/completions prompt of private-use characters 16,000 chars",
)


def all_cases(routes: Sequence[str] | None = None, quick: bool = False) -> list[Case]:
    cases = [c for f in families() for c in f.cases() if routes is None or f.route in routes]
    if quick:
        cases = [c for c in cases if c.name in QUICK]
        missing = set(QUICK) - {c.name for c in cases} if routes is None else set()
        if missing:
            raise ValueError(f"QUICK names cases that no family makes: {sorted(missing)}")
    return cases


# ---------------------------------------------------------------- measuring


def measure_once(server: serve_host.Server, case: Case) -> tuple[Cost, str]:
    """Send ``case`` and read what it cost the worker; with the instance that answered."""
    # wasmtime gives a request that comes while the last one's instance is still
    # finishing up to another instance: let it settle first.
    time.sleep(SETTLE_S)
    pid = server.pid
    before = serve_host.status_kib(pid, "VmRSS")
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
    cpu = serve_host.cpu_seconds(pid)
    start = time.perf_counter()
    method = "GET" if case.content_type is None else "POST"
    headers = {"content-type": case.content_type} if case.content_type else {}
    answered: dict[str, str] = {}
    try:
        status, doc, answered = serve_host.request(
            server.port, method, case.route, case.body or None, headers, REQUEST_TIMEOUT_S
        )
    except (OSError, http.client.HTTPException) as e:  # no answer, or a broken one
        status, doc = 0, {"error": f"no whole answer: {type(e).__name__}: {e}"}
    wall = time.perf_counter() - start
    time.sleep(0.05)  # the worker's last writes and frees land in /proc
    used = serve_host.cpu_seconds(pid) - cpu
    high = serve_host.status_kib(pid, "VmHWM")
    peak = max(0, high - before) / 1024
    error = str(doc.get("error", "")) if isinstance(doc, dict) else ""
    return Cost(case, status, error, used, peak, wall, high / 1024), answered.get("x-instance", "")


def measure(server: serve_host.Server, case: Case, warm: set[tuple[str, str]]) -> Cost:
    """What ``case`` costs a warm instance. With reuse wasmtime keeps several
    instances, and an instance's first request to a route also loads that
    route's model (seconds, and up to a gigabyte for /speak): such a request
    is sent again, up to ``ATTEMPTS`` times, until an instance that had
    already served the route (``warm``, instance and route) answers it."""
    for _ in range(ATTEMPTS):
        cost, instance = measure_once(server, case)
        if (instance, case.route) in warm or not instance:
            return cost
        warm.add((instance, case.route))
    return cost


def warm_up(server: serve_host.Server) -> set[tuple[str, str]]:
    """One ordinary request per route, so that model loads are not counted; the
    instances that served them, with their routes."""
    digit = (ROOT / "apps" / "digits" / "samples" / "digit3_002.png").read_bytes()
    receipt = (ROOT / "apps" / "ocr" / "samples" / "receipt.png").read_bytes()
    warm = set()
    for path, body, kind in (
        ("/health", b"", None),
        ("/digits", digit, "image/png"),
        ("/textclass", _textclass(["warm up"]), "application/json"),
        ("/ocr", receipt, "image/png"),
        ("/speak", _speak("こんにちは。"), "application/json"),
        ("/v1/completions", _complete("Hello", 4), "application/json"),
    ):
        headers = {"content-type": kind} if kind else {}
        status, doc, answered = serve_host.request(
            server.port, "POST" if kind else "GET", path, body or None, headers, REQUEST_TIMEOUT_S
        )
        if status != 200:
            raise RuntimeError(f"warm-up {path} answered {status}: {doc}")
        warm.add((answered.get("x-instance", ""), path))
    return warm


@dataclass(frozen=True)
class Search:
    """What ``run`` measured: each case's cost, and the worker's resident memory
    once warm (every model loaded), in MB."""

    costs: list[Cost]
    warm_mb: float


def run(cases: Sequence[Case], verbose: bool = False) -> Search:
    """Every case against one warm, reusing server (``verbose``: print each cost
    as it comes, and the end of the server's log)."""
    # A long idle timeout: a dropped instance would make the next request reload models.
    flags = "--idle-instance-timeout 3600s"
    options = ("--preload", "gemma3-fast")  # /v1/completions' model
    with serve_host.Server(reuse=1_000_000, flags=flags, options=options) as server:
        warm = warm_up(server)
        warm_mb = serve_host.rss_kib(server.pid) / 1024
        costs = []
        for case in cases:
            costs.append(measure(server, case, warm))
            if verbose:
                c = costs[-1]
                print(f"{c.case.name}: {c.status}, {c.cpu_s:.2f} s, {c.memory_mb:.0f} MB")
        if verbose:
            print(server.stderr()[-3000:])
        return Search(costs, warm_mb)


# ---------------------------------------------------------------- reporting


def worst(costs: Sequence[Cost], route: str, key: Callable[[Cost], float]) -> Cost:
    return max((c for c in costs if c.case.route == route), key=key)


def _mb(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def table(costs: Sequence[Cost]) -> str:
    """Per route: its budget, and the worst input found by CPU and by memory."""
    lines = [
        "| route | budget: CPU s, MB | inputs | most CPU: input, status | CPU s | MB | "
        "most memory: input, status | CPU s | MB | within budget |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for route, budget in BUDGETS.items():
        if not any(c.case.route == route for c in costs):
            continue
        by_cpu = worst(costs, route, lambda c: c.cpu_s)
        by_mem = worst(costs, route, lambda c: c.memory_mb)
        ok = all(c.within_budget for c in costs if c.case.route == route)
        lines.append(
            f"| `{route}` | {budget.cpu_s:g}, {budget.memory_mb:,.0f} | {budget.inputs} | "
            f"{by_cpu.case.family} ({by_cpu.case.size:,} {by_cpu.case.unit}, "
            f"{len(by_cpu.case.body):,} B), {by_cpu.status} | {by_cpu.cpu_s:.2f} | "
            f"{_mb(by_cpu.memory_mb)} | {by_mem.case.family} ({by_mem.case.size:,} "
            f"{by_mem.case.unit}, {len(by_mem.case.body):,} B), {by_mem.status} | "
            f"{by_mem.cpu_s:.2f} | {_mb(by_mem.memory_mb)} | {'yes' if ok else '**no**'} |"
        )
    return "\n".join(lines)


def detail(costs: Sequence[Cost]) -> str:
    """Every case: status, CPU, memory, wall time and the error it got."""
    lines = [
        "| case | body bytes | status | CPU s | MB | wall s | error |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in costs:
        lines.append(
            f"| {c.case.name} | {len(c.case.body):,} | {c.status} | {c.cpu_s:.2f} | "
            f"{_mb(c.memory_mb)} | {c.wall_s:.2f} | {c.error[:120]} |"
        )
    return "\n".join(lines)


def problems(costs: Sequence[Cost]) -> list[str]:
    """Every case over its route's budget or answered badly (a 5xx, no answer, a
    4xx without a JSON error)."""
    out = []
    for c in costs:
        budget = BUDGETS[c.case.route]
        if not c.within_budget:
            out.append(
                f"{c.case.name}: {c.cpu_s:.2f} CPU s, {c.memory_mb:.0f} MB over the budget of "
                f"{budget.cpu_s:g} s, {budget.memory_mb:g} MB"
            )
        if not c.answered_well:
            out.append(f"{c.case.name}: answered {c.status} {c.error[:200]!r}")
    return out


def markdown(search: Search, command: str, seconds: float) -> str:
    costs = search.costs
    when = datetime.now(UTC).strftime("%Y-%m-%d")
    return f"""# Hostile input: the most one request can cost

`{command}` (tests/hostile_cost.py), {when}; {len(costs)} requests in {seconds:.0f} s against
one warm `./build.sh serve serve --reuse` worker. CPU s: the worker's user + system time for
the request (all threads: the guest and OpenVINO); MB: its peak resident memory above what it
held before the request.

{table(costs)}

The worker held {search.warm_mb:,.0f} MB after its warm-up (every model loaded) and at most
{max(c.worker_mb for c in costs):,.0f} MB during the search. A request's MB is what it added to
what the worker held before it; models keep buffers per input shape, and an instance keeps its
linear memory's high-water mark, so a later request of a shape seen before adds less.

## Every case

{detail(costs)}
"""


#: The pages that quote the full run's table (between ``<!-- hostile-cost:start -->``
#: and ``<!-- hostile-cost:end -->``).
DOCS = (ROOT / "README.md", ROOT / "docs" / "serving.md")


def replace_between_markers(path: Path, name: str, text: str) -> None:
    """Put ``text`` between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` in ``path``."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    page = path.read_text()
    if start not in page or end not in page:
        raise ValueError(f"{path} has no {start} ... {end} to put the table between")
    head, rest = page.split(start, 1)
    path.write_text(f"{head}{start}\n{text}\n{end}{rest.split(end, 1)[1]}")


def main(argv: list[str]) -> int:
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # progress as it comes
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the sample ./build.sh test runs")
    parser.add_argument("--route", action="append", choices=list(BUDGETS), help="only these")
    parser.add_argument(
        "--out", type=Path, help=f"markdown (full run: {RESULTS.relative_to(ROOT)})"
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    search = run(all_cases(args.route, args.quick), verbose=True)
    costs = search.costs
    print(table(costs))
    found = problems(costs)
    for line in found:
        print(f"over budget or answered badly: {line}")
    command = "./build.sh hostile --cost" + (" --quick" if args.quick else "")
    out = args.out or (RESULTS if not args.quick and not args.route else None)
    if out is not None:
        out.write_text(markdown(search, command, time.monotonic() - started))
        print(f"hostile_cost: wrote {out}")
    if out == RESULTS:
        when = datetime.now(UTC).strftime("%Y-%m-%d")
        quoted = f"From `{command}`, {when} (bench/results/hostile_cost.md):\n\n{table(costs)}"
        for doc in DOCS:
            replace_between_markers(doc, "hostile-cost", quoted)
            print(f"hostile_cost: updated {doc.relative_to(ROOT)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
