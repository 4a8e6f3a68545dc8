"""The project's own hostile suite (issue 24, section 4): generated hostile input
for every surface a user can reach, and a count of how each case ended.

    .venv/bin/python tests/hostile.py [--quick] [--surface NAME ...] [--out FILE]
    ./build.sh hostile [--quick]        # the same, after setup and installing nginx and hey

The surfaces, and the clean end each one promises:

- ``json``: bodies to POST /textclass of apps/serve (nesting up to 10^6 levels,
  huge numbers, wrong types, strings at and over the 1 MiB limit, invalid UTF-8,
  BOMs, truncations, duplicate keys, control characters, seeded mutations).
  Clean: a 4xx with a JSON ``{"error": ...}`` body.
- ``framing``: raw bytes on a socket to nginx in front of the workers (bad,
  conflicting and lying Content-Length and chunked framing, huge header lines,
  paths and header counts, bad methods and versions, garbage, slow senders).
  Clean: a 4xx (any body) or the connection closed by the server within twice
  nginx's client timeout.
- ``images``: PNG and JPEG bodies to POST /digits and POST /ocr (truncations,
  bit flips, chunk and marker surgery with repaired CRCs, decompression and
  dimension bombs, other formats, random bytes). Clean: a 4xx JSON error.
- ``models``: model files given to ``wasinn.Model.load`` inside a component
  (tests/hostile_app): truncated, mutated and lying ONNX and IR, messages and
  elements nested thousands deep, entity expansion, a short ``.bin``.
  Clean: a wasinn exception.

The HTTP surfaces run against ``./build.sh deploy serve --workers 2 --reuse
1000`` (tests/serve_host.Server), the deployment users run. Each case ends as
one of ``OUTCOMES``; the last four are failures:

    clean     the refusal the surface promises
    accepted  served (2xx) or loaded, where the input is legitimately valid
    unclean   an answer of the wrong kind: a 500 where a 4xx belongs, another
              5xx, a 2xx to an invalid request, an exception that is not wasinn's
    trap      the component trapped: wasmtime's bare HTML 500, or exit 134
    crash     a host process died: a worker restart in tools/deploy.py's log,
              or wasmtime killed by a signal
    timeout   no answer within the bound

Every case has a name, so a failure says which input did it. Random cases
come from a fixed seed: a run is repeatable. ``--quick`` runs a fixed small
subset (about a minute) that tests/test_hostile.py asserts on in ``./build.sh
test``; the full run (thousands of cases, a few minutes) writes
bench/results/hostile.md for the README to quote.
"""

from __future__ import annotations

import argparse
import http.client
import io
import json
import os
import random
import re
import select
import socket
import struct
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import zlib
from collections import Counter, deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, TypeVar

from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, only tests/ is on the path; the toy model writers need wasinn.
for _folder in (ROOT / "guest", ROOT / "tests", ROOT / "tools"):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

import deploy  # noqa: E402  (tools/: nginx's client timeout)
import serve_host  # noqa: E402
import wasmtime_flags  # noqa: E402
from toy_models import (  # noqa: E402
    IRWriter,
    Port,
    add_mul,
    onnx_model,
    onnx_value_info,
    pb_bytes,
    pb_int,
    varint,
)

SEED = 24  # the number: any fixed value makes runs repeatable
RESULTS = ROOT / "bench" / "results" / "hostile.md"
HOSTILE_APP = ROOT / "tests" / "hostile_app"

Outcome = Literal["clean", "accepted", "unclean", "trap", "crash", "timeout"]
OUTCOMES: tuple[Outcome, ...] = ("clean", "accepted", "unclean", "trap", "crash", "timeout")
FAILURES: tuple[Outcome, ...] = ("unclean", "trap", "crash", "timeout")
SURFACES = ("json", "framing", "images", "models")

# Requests: concurrent enough to keep both workers busy, few enough that a slow
# /ocr answer is not mistaken for a hang.
CONCURRENCY = 4
HTTP_TIMEOUT_S = 60.0
# Raw-socket cases: nginx must have answered or closed within twice its timeout.
FRAMING_LIMIT_S = 2.0 * deploy.CLIENT_TIMEOUT_S
# A model file's load gets this long before the component counts as hung
# (a real load takes well under a second here) ...
MODEL_TIMEOUT_S = 30.0
# ... and the host this much memory: a hostile model that sends OpenVINO into
# an endless loop can allocate gigabytes a second, enough to bring the
# machine's out-of-memory killer onto other processes.
MODEL_RSS_LIMIT_KIB = 2 << 20

# apps/serve's documented limits (app.py MAX_BODY_BYTES, MAX_TEXTCLASS_ITEMS).
MAX_BODY = 1 << 20
MAX_TEXTCLASS_ITEMS = 64


@dataclass(frozen=True)
class Result:
    """How one case ended. ``surface`` is the table row: the surface's name,
    with the endpoint for images ("images /ocr")."""

    surface: str
    case: str
    outcome: Outcome
    detail: str = ""

    @property
    def key(self) -> str:
        """The surface's name alone, as ``--surface`` takes it."""
        return self.surface.split()[0]


# ---------------------------------------------------------------- mutations shared by all surfaces

# Bytes that sit at parser boundaries: limits of signed and unsigned fields,
# and the structural characters of JSON, protobuf varints and markers.
INTERESTING_BYTES = b'\x00\x01\x7f\x80\xfe\xff[]{}",:\\'


def mutate(data: bytes, rng: random.Random, alphabet: bytes = INTERESTING_BYTES) -> bytes:
    """``data`` with one to eight random edits: bit flips, bytes set to boundary
    values, insertions from ``alphabet``, deletions, duplicated and repeated
    ranges (which grow lengths past what a header declares)."""
    buf = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 3, 8))):
        pos = rng.randrange(len(buf) + 1)
        op = rng.randrange(6) if buf else 2
        pos = min(pos, len(buf) - 1) if op in (0, 1) else pos
        end = min(len(buf), pos + rng.randrange(1, 64))
        if op == 0:
            buf[pos] ^= 1 << rng.randrange(8)
        elif op == 1:
            buf[pos] = rng.choice(INTERESTING_BYTES)
        elif op == 2:
            buf[pos:pos] = bytes(rng.choice(alphabet) for _ in range(rng.randrange(1, 5)))
        elif op == 3:
            del buf[pos:end]
        elif op == 4:
            at = rng.randrange(len(buf) + 1)
            buf[at:at] = buf[pos:end]
        else:
            buf[pos:pos] = bytes(buf[pos:end]) * rng.randrange(2, 1000)
    return bytes(buf)


def cut_points(size: int, rng: random.Random, count: int) -> list[int]:
    """Lengths to truncate a file of ``size`` bytes at: every length of a small
    file, else the first 32 (headers) and ``count`` more spread at random."""
    if size <= count + 32:
        return list(range(size))
    return sorted(set(range(32)) | set(rng.sample(range(32, size), count)))


def nest(depth: int, inner: bytes, level: Callable[[int], tuple[bytes, bytes]]) -> bytes:
    """``depth`` levels of ``level`` around ``inner`` in linear time.

    ``level(size)`` gives the bytes that go before and after a payload of
    ``size`` bytes (a length prefix depends on the size inside it). Wrapping a
    growing ``bytes`` level by level would copy it ``depth`` times: a million
    levels would take minutes."""
    before: list[bytes] = []
    after: list[bytes] = []
    size = len(inner)
    for _ in range(depth):
        head, tail = level(size)
        before.append(head)
        after.append(tail)
        size += len(head) + len(tail)
    return b"".join(reversed(before)) + inner + b"".join(after)


# ---------------------------------------------------------------- surface 1: JSON bodies


@dataclass(frozen=True)
class HttpCase:
    """One request to an endpoint of apps/serve. ``may_accept``: the request is
    valid, so a 2xx is the right answer (a 4xx still counts as clean)."""

    name: str
    path: str
    body: bytes
    content_type: str | None
    may_accept: bool
    quick: bool = False


def textclass_valid(body: bytes, content_type: str | None) -> bool:
    """Whether POST /textclass must serve this request, by its documented API:
    a UTF-8 JSON object whose "texts" and "labels" are non-empty lists of
    strings, at most 64 of them together, in at most 1 MiB. (Python's json
    module, like the app's, takes NaN and Infinity and lone surrogates.)"""
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if kind != "application/json" or len(body) > MAX_BODY:
        return False
    try:
        doc = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    if not isinstance(doc, dict):
        return False
    lists = [doc.get("texts"), doc.get("labels")]
    for value in lists:
        if not isinstance(value, list) or not value or not all(isinstance(s, str) for s in value):
            return False
    return sum(len(v) for v in lists if isinstance(v, list)) <= MAX_TEXTCLASS_ITEMS


class JsonCases:
    """Collects named /textclass cases; the oracle decides which are valid."""

    def __init__(self) -> None:
        self.cases: list[HttpCase] = []

    def add(
        self,
        name: str,
        body: bytes,
        quick: bool = False,
        content_type: str | None = "application/json",
    ) -> None:
        valid = textclass_valid(body, content_type)
        self.cases.append(HttpCase(f"json/{name}", "/textclass", body, content_type, valid, quick))


VALID_DOC: dict[str, object] = {
    "texts": ["the match ended in a draw"],
    "labels": ["sports", "cooking"],
}
VALID_JSON = json.dumps(VALID_DOC).encode()
NEST_DEPTHS = (2, 63, 64, 65, 100, 1_000, 2_000, 10_000, 100_000, 1_000_000)
QUICK_DEPTHS = (2_000, 1_000_000)


def _with(texts: bytes = b'["a"]', labels: bytes = b'["b"]', extra: bytes = b"") -> bytes:
    """A /textclass body from raw JSON for each member (``extra``: more members)."""
    return b'{"texts":' + texts + b',"labels":' + labels + extra + b"}"


def _nesting_cases(out: JsonCases) -> None:
    for d in NEST_DEPTHS:
        quick = d in QUICK_DEPTHS
        lists = b"[" * d + b"]" * d
        around_string = b"[" * d + b'"x"' + b"]" * d
        bodies = {
            "lists": lists,
            "objects": b'{"a":' * d + b"1" + b"}" * d,
            "mixed": b'[{"a":' * (d // 2) + b"1" + b"}]" * (d // 2),
            "unclosed": b"[" * d,
            "closers-only": b"]" * d,
            "in-texts": _with(texts=around_string),
            "in-labels": _with(labels=around_string),
            "in-extra-key": _with(extra=b',"x":' + lists),
            "in-string": _with(texts=b'["' + b"[" * d + b'"]'),
            "after-escaped-quote": _with(texts=b'["\\"' + b"{" * d + b'"]'),
        }
        for kind, body in bodies.items():
            out.add(f"nest-{kind}-{d}", body, quick and kind in ("lists", "objects", "in-texts"))


NUMBERS = {
    "int-100k-digits": b"1" * 100_000,
    "int-4300-digits": b"9" * 4300,
    "int-4301-digits": b"9" * 4301,
    "negative-int-100k-digits": b"-" + b"1" * 100_000,
    "1e999999": b"1e999999",
    "-1e999999": b"-1e999999",
    "1e-999999": b"1e-999999",
    "NaN": b"NaN",
    "Infinity": b"Infinity",
    "-Infinity": b"-Infinity",
    "fraction-100k-digits": b"0." + b"1" * 100_000,
    "exponent-100k-digits": b"1e" + b"9" * 100_000,
    "leading-zero": b"0123",
    "hex": b"0x1F",
    "plus": b"+1",
    "trailing-dot": b"1.",
    "leading-dot": b".5",
    "minus-zero": b"-0",
}

WRONG_TYPES = {
    "int": b"1",
    "float": b"1.5",
    "string": b'"a"',
    "object": b'{"a":"b"}',
    "empty-object": b"{}",
    "null": b"null",
    "true": b"true",
    "empty-list": b"[]",
    "list-of-int": b"[1]",
    "list-of-null": b"[null]",
    "list-of-list": b'[["a"]]',
    "list-of-object": b'[{"a":1}]',
    "mixed-list": b'["a",1]',
    "empty-string": b'[""]',
    "1000-items": json.dumps(["x"] * 1000).encode(),
    "63-items": json.dumps([f"text {i}" for i in range(63)]).encode(),
    "64-items": json.dumps([f"text {i}" for i in range(64)]).encode(),
}


def _number_and_type_cases(out: JsonCases) -> None:
    for name, number in NUMBERS.items():
        quick = name in ("int-100k-digits", "1e999999", "NaN")
        out.add(f"number-{name}-top-level", number)
        out.add(f"number-{name}-as-text", _with(texts=b"[" + number + b"]"), quick)
        out.add(f"number-{name}-as-label", _with(labels=b"[" + number + b"]"))
        out.add(f"number-{name}-as-texts", _with(texts=number))
        out.add(f"number-{name}-extra-key", _with(extra=b',"n":' + number))
    for name, value in WRONG_TYPES.items():
        quick = name in ("int", "object", "null", "list-of-list", "1000-items")
        out.add(f"type-texts-{name}", _with(texts=value), quick)
        out.add(f"type-labels-{name}", _with(labels=value), name == "empty-list")
    others = {
        "no-labels": b'{"texts":["a"]}',
        "no-texts": b'{"labels":["a"]}',
        "empty-object": b"{}",
        "top-level-list": b"[]",
        "top-level-string": b'"texts"',
        "top-level-null": b"null",
        "list-of-valid-doc": b"[" + VALID_JSON + b"]",
        "key-capitalised": b'{"Texts":["a"],"labels":["b"]}',
        "key-with-space": b'{"texts ":["a"],"labels":["b"]}',
        "key-escaped": b'{"\\u0074exts":["a"],"labels":["b"]}',
    }
    for name, body in others.items():
        out.add(f"shape-{name}", body, name in ("no-labels", "top-level-list"))


def _filling(unit: bytes, room: int) -> bytes:
    """As many copies of ``unit`` as fit in ``room`` bytes."""
    return unit * (room // len(unit))


def _string_cases(out: JsonCases) -> None:
    room = MAX_BODY - len(_with(texts=b'[""]'))
    fills = {
        "text-fills-limit": b"a",
        "escaped-nul": b"\\u0000",
        "escaped-backslash": b"\\\\",
        "lone-surrogate": b"\\ud800",
        "emoji": "\N{GRINNING FACE}".encode(),
        "zero-width-space": "\u200b".encode(),
        "combining-accents": "\u0301".encode(),
        "spaces": b" ",
        "brackets": b"[",
    }
    for name, unit in fills.items():
        body = _with(texts=b'["' + _filling(unit, room) + b'"]')
        out.add(f"string-{name}", body, name in ("text-fills-limit", "lone-surrogate"))
    out.add("string-label-fills-limit", _with(labels=b'["' + b"b" * room + b'"]'))
    out.add("string-key-fills-limit", _with(extra=b',"' + b"k" * (room - 8) + b'":1'))
    over = _with(texts=b'["' + b"a" * (room + 1) + b'"]')
    out.add("string-1-byte-over-limit", over, True)
    out.add("string-2-mib", _with(texts=b'["' + b"a" * (2 << 20) + b'"]'))
    out.add("string-over-proxy-limit-18-mb", _with(texts=b'["' + b"a" * (18 << 20) + b'"]'))
    out.add("string-100k-small-texts", _with(texts=json.dumps(["a"] * 100_000).encode()))
    many = json.dumps(["w" * (16 << 10)] * 60).encode()
    out.add("string-60-texts-of-16-kb", _with(texts=many))
    out.add("string-empty-text", _with(texts=b'[""]'))


BAD_UTF8 = {
    "ff": b"\xff",
    "overlong-slash": b"\xc0\xaf",
    "overlong-nul": b"\xc0\x80",
    "lone-continuation": b"\x80",
    "truncated-3-byte": b"\xe2\x82",
    "cesu-surrogate": b"\xed\xa0\x80",
    "above-10ffff": b"\xf4\x90\x80\x80",
    "5-byte-form": b"\xf8\x88\x80\x80\x80",
}


def _encoding_cases(out: JsonCases) -> None:
    for name, raw in BAD_UTF8.items():
        out.add(f"utf8-{name}-in-text", _with(texts=b'["a' + raw + b'"]'), name == "ff")
        out.add(f"utf8-{name}-in-key", _with(extra=b',"' + raw + b'":1'))
        out.add(f"utf8-{name}-between-tokens", _with(extra=b"," + raw))
        out.add(f"utf8-{name}-at-end", VALID_JSON + raw)
    text = VALID_JSON.decode()
    encodings = {
        "utf-16-le-bom": b"\xff\xfe" + text.encode("utf-16-le"),
        "utf-16-be-bom": b"\xfe\xff" + text.encode("utf-16-be"),
        "utf-16-le-no-bom": text.encode("utf-16-le"),
        "utf-32-le-bom": b"\xff\xfe\x00\x00" + text.encode("utf-32-le"),
        "latin-1": _with(texts='["caf\u00e9"]'.encode("latin-1")),
        "utf-8-bom": b"\xef\xbb\xbf" + VALID_JSON,
        "utf-8-bom-twice": b"\xef\xbb\xbf" * 2 + VALID_JSON,
        "utf-8-bom-after-space": b" \xef\xbb\xbf" + VALID_JSON,
        "utf-8-bom-in-text": _with(texts=b'["\xef\xbb\xbfa"]'),
        "utf-8-bom-between-tokens": _with(extra=b",\xef\xbb\xbf"),
    }
    for name, body in encodings.items():
        out.add(f"encoding-{name}", body, name in ("utf-16-le-bom", "utf-8-bom"))


def _syntax_cases(out: JsonCases, rng: random.Random) -> None:
    for n in range(len(VALID_JSON)):
        out.add(f"truncated-at-{n:03d}", VALID_JSON[:n], n in (1, len(VALID_JSON) // 2))
    duplicates = {
        "texts-then-invalid-texts": b'{"texts":["a"],"labels":["b"],"texts":1}',
        "invalid-texts-then-texts": b'{"texts":1,"labels":["b"],"texts":["a"]}',
        "labels-1000-times": b'{"texts":["a"],' + b'"labels":["b"],' * 1000 + b'"labels":["c"]}',
        "100k-same-key": _with(extra=b',"k":1' * 100_000),
        "100k-distinct-keys": _with(extra=b"".join(b',"k%d":1' % i for i in range(100_000))),
    }
    for name, body in duplicates.items():
        out.add(f"duplicate-{name}", body, name == "texts-then-invalid-texts")
    for c in range(32):
        out.add(f"control-{c:02x}-in-text", _with(texts=b'["a' + bytes([c]) + b'b"]'), c == 0)
    for c in (0x00, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1F, 0x7F):
        out.add(f"control-{c:02x}-between-tokens", _with(extra=b"," + bytes([c]) + b'"k":1'))
    out.add("control-7f-in-text", _with(texts=b'["a\x7fb"]'))
    out.add("control-escaped-nul", _with(texts=b'["a\\u0000b"]'))
    syntax = {
        "empty-body": b"",
        "whitespace-only": b" \t\r\n" * 1000,
        "1-mib-of-spaces": b" " * MAX_BODY,
        "trailing-garbage": VALID_JSON + b"x",
        "two-documents": VALID_JSON + VALID_JSON,
        "trailing-comma-list": _with(texts=b'["a",]'),
        "trailing-comma-object": VALID_JSON[:-1] + b",}",
        "line-comment": b"// c\n" + VALID_JSON,
        "block-comment": b"/* c */" + VALID_JSON,
        "single-quotes": b"{'texts':['a'],'labels':['b']}",
        "unquoted-keys": b'{texts:["a"],labels:["b"]}',
        "python-literals": _with(extra=b',"k":True'),
        "undefined": _with(extra=b',"k":undefined'),
        "unterminated-string": b'{"texts":["a',
        "unterminated-escape": b'{"texts":["a\\',
        "bad-escape": _with(texts=b'["\\x41"]'),
        "short-unicode-escape": _with(texts=b'["\\u12"]'),
        "non-hex-unicode-escape": _with(texts=b'["\\uZZZZ"]'),
    }
    for name, body in syntax.items():
        out.add(f"syntax-{name}", body, name in ("empty-body", "trailing-garbage", "single-quotes"))
    content_types = {
        "missing": None,
        "text-plain": "text/plain",
        "charset-utf-16": "application/json; charset=utf-16",
        "upper-case": "APPLICATION/JSON",
        "json-seq": "application/json-seq",
        "form": "application/x-www-form-urlencoded",
        "multipart": "multipart/form-data; boundary=x",
        "1-kb-long": "application/json;" + "x" * 1024,
    }
    for name, kind in content_types.items():
        out.add(f"content-type-{name}", VALID_JSON, name == "missing", content_type=kind)
    out.add("valid-request", VALID_JSON, True)
    for i in range(900):
        out.add(
            f"mutated-{i:04d}", mutate(VALID_JSON, rng, b'[]{}",:\\0123456789eE+-.tfnu '), i < 6
        )
    for i in range(300):
        doc = {"texts": _random_value(rng, 4), "labels": _random_value(rng, 4)}
        if rng.random() < 0.3:
            doc[_random_string(rng)] = _random_value(rng, 6)
        out.add(f"random-document-{i:03d}", json.dumps(doc).encode(), i < 4)


def _random_string(rng: random.Random) -> str:
    """Up to 40 code points from the whole range, lone surrogates included."""
    return "".join(
        chr(rng.choice((rng.randrange(0x80), rng.randrange(0x110000))))
        for _ in range(rng.randrange(40))
    )


def _random_value(rng: random.Random, depth: int) -> object:
    """A random JSON value of at most ``depth`` levels; strings and lists of
    strings (the valid shape) are the likeliest."""
    kind = rng.randrange(10 if depth > 0 else 6)
    if kind == 0:
        return rng.choice((None, True, False))
    if kind == 1:
        return rng.choice((0, -1, 2**63, -(2**64), 10**300, rng.randrange(-1000, 1000)))
    if kind == 2:
        return rng.choice((0.5, -0.0, 1e308, float("nan"), float("inf"), float("-inf")))
    if kind in (3, 4, 5):
        return _random_string(rng)
    if kind in (6, 7, 8):
        return [_random_value(rng, depth - 1) for _ in range(rng.randrange(5))]
    return {_random_string(rng): _random_value(rng, depth - 1) for _ in range(rng.randrange(4))}


def json_cases(rng: random.Random) -> list[HttpCase]:
    """Every /textclass case, in a fixed order."""
    out = JsonCases()
    _nesting_cases(out)
    _number_and_type_cases(out)
    _string_cases(out)
    _encoding_cases(out)
    _syntax_cases(out, rng)
    return out.cases


# ---------------------------------------------------------------- surface 3: images

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_chunk(kind: bytes, body: bytes, crc: int | None = None) -> bytes:
    """One PNG chunk; ``crc`` overrides the right one."""
    good = zlib.crc32(kind + body)
    return (
        struct.pack(">I", len(body)) + kind + body + struct.pack(">I", good if crc is None else crc)
    )


def png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """The (type, body) chunks of a well-formed PNG file."""
    chunks: list[tuple[bytes, bytes]] = []
    pos = len(PNG_SIGNATURE)
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        chunks.append((kind, data[pos + 8 : pos + 8 + length]))
        pos += 12 + length
    return chunks


def png_join(chunks: Sequence[tuple[bytes, bytes]]) -> bytes:
    return PNG_SIGNATURE + b"".join(png_chunk(k, b) for k, b in chunks)


def png_image(width: int, height: int, idat: bytes, depth: int = 8, colour: int = 0) -> bytes:
    """A PNG with this header and one IDAT chunk of ``idat`` (already compressed)."""
    header = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, 0)
    return png_join([(b"IHDR", header), (b"IDAT", idat), (b"IEND", b"")])


def zlib_zeros(n: int) -> bytes:
    """A zlib stream of ``n`` zero bytes, a decompression bomb, built in
    milliseconds: after a full flush each MiB of zeros compresses to the same
    bytes, so one compressed MiB is repeated; the Adler-32 of n zeros is
    ``(n mod 65521) << 16 | 1``."""
    mib = 1 << 20
    whole, rest = divmod(n, mib)
    if whole < 2:
        return zlib.compress(bytes(n), 9)
    packer = zlib.compressobj(9)
    first = packer.compress(bytes(mib)) + packer.flush(zlib.Z_FULL_FLUSH)
    again = packer.compress(bytes(mib)) + packer.flush(zlib.Z_FULL_FLUSH)
    tail = packer.compress(bytes(rest)) + packer.flush()
    return first + again * (whole - 1) + tail[:-4] + struct.pack(">I", (n % 65521) << 16 | 1)


def _pillow(image: Image.Image, fmt: str, **options: object) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def image_seeds() -> dict[str, bytes]:
    """Valid images to mutate: the digits samples (8x8 gray) in several PNG and
    JPEG encodings, and a 64x24 crop of an OCR test line as PNG and JPEG, small
    enough that /ocr answers in a second or two."""
    digit = Image.open(ROOT / "apps" / "digits" / "samples" / "digit3_002.png")
    line = Image.open(ROOT / "tests" / "data" / "ocr" / "line_sans12_small.png").convert("RGB")
    line = line.crop((0, 0, 128, 48)).resize((64, 24))
    return {
        "digit-png": (ROOT / "apps" / "digits" / "samples" / "digit3_002.png").read_bytes(),
        "digit-png-1-bit": _pillow(digit.convert("1"), "PNG"),
        "digit-png-16-bit": _pillow(digit.convert("I;16"), "PNG"),
        "digit-png-palette": _pillow(digit.convert("P"), "PNG"),
        "digit-png-rgba": _pillow(digit.convert("RGBA"), "PNG"),
        "digit-jpeg": _pillow(digit, "JPEG", quality=90),
        "digit-jpeg-rgb-420": _pillow(digit.convert("RGB"), "JPEG", quality=90, subsampling=2),
        "digit-jpeg-progressive": _pillow(digit.convert("RGB"), "JPEG", progressive=True),
        "line-png": _pillow(line, "PNG"),
        "line-jpeg": _pillow(line, "JPEG", quality=80),
        "line-jpeg-progressive": _pillow(line, "JPEG", quality=80, progressive=True),
    }


def _ihdr_cases(seed: bytes) -> dict[str, bytes]:
    """Every IHDR field set to values out of range or inconsistent, CRC repaired
    so the decoder gets past the checksum to the field itself."""
    chunks = png_chunks(seed)
    width, height, depth, colour, *rest = struct.unpack(">IIBBBBB", chunks[0][1])
    out: dict[str, bytes] = {}

    def with_header(name: str, *fields: int) -> None:
        out[f"ihdr-{name}"] = png_join([(b"IHDR", struct.pack(">IIBBBBB", *fields)), *chunks[1:]])

    for size in (0, 1, 7, 9, 8193, 65535, 100_000, 2**31 - 1, 2**31, 2**32 - 1):
        with_header(f"width-{size}", size, height, depth, colour, *rest)
        with_header(f"height-{size}", width, size, depth, colour, *rest)
    for bits in (0, 2, 3, 7, 9, 16, 32, 255):
        with_header(f"depth-{bits}", width, height, bits, colour, *rest)
    for kind in (1, 2, 3, 4, 5, 6, 7, 255):
        with_header(f"colour-{kind}", width, height, depth, kind, *rest)
    with_header("palette-16-bit", width, height, 16, 3, *rest)
    with_header("rgb-1-bit", width, height, 1, 2, *rest)
    with_header("compression-1", width, height, depth, colour, 1, 0, 0)
    with_header("filter-method-1", width, height, depth, colour, 0, 1, 0)
    with_header("interlace-1", width, height, depth, colour, 0, 0, 1)
    with_header("interlace-2", width, height, depth, colour, 0, 0, 2)
    return out


def _png_structure_cases(seed: bytes) -> dict[str, bytes]:
    """Chunk order, counts, lengths, CRCs and the zlib stream inside IDAT."""
    chunks = png_chunks(seed)
    ihdr, idat, iend = (
        chunks[0],
        (b"IDAT", b"".join(b for k, b in chunks if k == b"IDAT")),
        chunks[-1],
    )
    height = struct.unpack(">I", ihdr[1][4:8])[0]
    raw = zlib.decompress(idat[1])
    stream = idat[1]
    out = {
        "bad-crc-ihdr": PNG_SIGNATURE
        + png_chunk(*ihdr, crc=0)
        + png_chunk(*idat)
        + png_chunk(*iend),
        "bad-crc-idat": PNG_SIGNATURE
        + png_chunk(*ihdr)
        + png_chunk(*idat, crc=1)
        + png_chunk(*iend),
        "bad-crc-iend": PNG_SIGNATURE
        + png_chunk(*ihdr)
        + png_chunk(*idat)
        + png_chunk(*iend, crc=2),
        "idat-before-ihdr": png_join([idat, ihdr, iend]),
        "two-ihdr": png_join([ihdr, ihdr, idat, iend]),
        "no-ihdr": png_join([idat, iend]),
        "no-idat": png_join([ihdr, iend]),
        "no-iend": png_join([ihdr, idat]),
        "only-signature": PNG_SIGNATURE,
        "data-after-iend": png_join([ihdr, idat, iend]) + bytes(range(256)),
        "plte-empty": png_join([ihdr, (b"PLTE", b""), idat, iend]),
        "plte-769-bytes": png_join([ihdr, (b"PLTE", bytes(769)), idat, iend]),
        "plte-5-bytes": png_join([ihdr, (b"PLTE", bytes(5)), idat, iend]),
        "plte-after-idat": png_join([ihdr, idat, (b"PLTE", bytes(6)), iend]),
        "trns-1000-bytes": png_join([ihdr, (b"tRNS", bytes(1000)), idat, iend]),
        "idat-split-into-bytes": png_join([ihdr, *((b"IDAT", bytes([b])) for b in stream), iend]),
        "10000-empty-idat": png_join([ihdr, *[(b"IDAT", b"")] * 10_000, idat, iend]),
        "1000-text-chunks": png_join([ihdr, *[(b"tEXt", b"k\x00v" * 10)] * 1000, idat, iend]),
        "unknown-critical-chunk": png_join([ihdr, (b"ABCD", b"x"), idat, iend]),
        "unknown-ancillary-chunk": png_join([ihdr, (b"abCd", b"x"), idat, iend]),
        "chunk-name-nul": png_join([ihdr, (b"\x00\x00\x00\x00", b"x"), idat, iend]),
        "idat-empty": png_join([ihdr, (b"IDAT", b""), iend]),
        "idat-garbage": png_join([ihdr, (b"IDAT", bytes(range(256)) * 4), iend]),
        "zlib-bad-header": png_join([ihdr, (b"IDAT", b"\x78\x00" + stream[2:]), iend]),
        "zlib-window-too-big": png_join([ihdr, (b"IDAT", b"\x88\x98" + stream[2:]), iend]),
        "zlib-preset-dictionary": png_join([ihdr, (b"IDAT", b"\x78\xbb" + stream[2:]), iend]),
        "zlib-bad-adler": png_join([ihdr, (b"IDAT", stream[:-4] + b"\x00\x00\x00\x00"), iend]),
        "zlib-truncated": png_join([ihdr, (b"IDAT", stream[: len(stream) // 2]), iend]),
        "zlib-trailing-data": png_join([ihdr, (b"IDAT", stream + b"\x00" * 100), iend]),
        "zlib-raw-deflate": png_join([ihdr, (b"IDAT", stream[2:-4]), iend]),
        "zlib-twice-the-rows": png_join([ihdr, (b"IDAT", zlib.compress(raw * 2)), iend]),
        "zlib-half-the-rows": png_join(
            [ihdr, (b"IDAT", zlib.compress(raw[: len(raw) // 2])), iend]
        ),
        "zlib-stored-block-lying": png_join(
            [ihdr, (b"IDAT", b"\x78\x01\x01\xff\x7f\x00\x80" + raw), iend]
        ),
        "zlib-bomb-512-mib-for-8x8": png_join([ihdr, (b"IDAT", zlib_zeros(512 << 20)), iend]),
        "chunk-length-7fffffff": PNG_SIGNATURE
        + png_chunk(*ihdr)
        + b"\x7f\xff\xff\xffIDAT"
        + stream,
        "chunk-length-80000000": PNG_SIGNATURE
        + png_chunk(*ihdr)
        + b"\x80\x00\x00\x00IDAT"
        + stream,
        "chunk-length-ffffffff": PNG_SIGNATURE
        + png_chunk(*ihdr)
        + b"\xff\xff\xff\xffIDAT"
        + stream,
    }
    stride = len(raw) // height
    for kind in (5, 127, 255):
        rows = b"".join(
            bytes([kind]) + raw[r * stride + 1 : (r + 1) * stride] for r in range(height)
        )
        out[f"row-filter-{kind}"] = png_join([ihdr, (b"IDAT", zlib.compress(rows)), iend])
    return out


def bomb_cases() -> dict[str, bytes]:
    """Sizes no endpoint should inflate: declared dimensions with a tiny IDAT,
    and real 8192x8192 and 16384x16384 images whose zeros compress to a few
    hundred kilobytes."""
    tiny = zlib.compress(bytes(1000))
    return {
        "bomb-png-8192x8192-rgb-zeros": png_image(
            8192, 8192, zlib_zeros(8192 * (8192 * 3 + 1)), colour=2
        ),
        "bomb-png-8192x8192-tiny-idat": png_image(8192, 8192, tiny, colour=2),
        "bomb-png-16384x16384-gray-zeros": png_image(16384, 16384, zlib_zeros(16384 * 16385)),
        "bomb-png-8192x8192-rgba16-tiny-idat": png_image(8192, 8192, tiny, depth=16, colour=6),
        "bomb-png-100000x100000": png_image(100_000, 100_000, tiny, colour=2),
        "bomb-png-65535x65535": png_image(65535, 65535, tiny),
        "bomb-png-2147483647x1": png_image(2**31 - 1, 1, tiny),
        "bomb-png-1x2147483647": png_image(1, 2**31 - 1, tiny),
    }


JpegSegment = tuple[int, bytes]  # marker (0xC0 for SOF0), payload without the length


def jpeg_segments(data: bytes) -> tuple[list[JpegSegment], bytes]:
    """The marker segments of a JPEG file up to and including the first SOS,
    and the bytes after it (entropy-coded data, later scans, EOI)."""
    segments: list[JpegSegment] = []
    pos = 2
    while pos + 4 <= len(data):
        marker = data[pos + 1]
        length = struct.unpack(">H", data[pos + 2 : pos + 4])[0]
        segments.append((marker, data[pos + 4 : pos + 2 + length]))
        pos += 2 + length
        if marker == 0xDA:
            break
    return segments, data[pos:]


def jpeg_join(segments: Sequence[JpegSegment], rest: bytes, soi: bytes = b"\xff\xd8") -> bytes:
    return (
        soi
        + b"".join(b"\xff" + bytes([m]) + struct.pack(">H", len(p) + 2) + p for m, p in segments)
        + rest
    )


def _jpeg_structure_cases(seed: bytes) -> dict[str, bytes]:
    """Header fields of SOF, DQT, DHT, SOS and DRI set out of range, segment
    lengths that lie, unsupported coding processes, EXIF that points nowhere,
    and entropy-coded data replaced."""
    segments, rest = jpeg_segments(seed)
    sof = next(i for i, (m, _) in enumerate(segments) if m in (0xC0, 0xC1, 0xC2))
    sos = len(segments) - 1
    out: dict[str, bytes] = {}

    def edit(name: str, index: int, payload: bytes, marker: int | None = None) -> None:
        changed = list(segments)
        changed[index] = (segments[index][0] if marker is None else marker, payload)
        out[name] = jpeg_join(changed, rest)

    frame = segments[sof][1]
    for h, w in ((65535, 65535), (0, 0), (0, 8), (1, 65535), (65535, 1)):
        edit(f"sof-{w}x{h}", sof, frame[:1] + struct.pack(">HH", h, w) + frame[5:])
    edit("sof-0-components", sof, frame[:5] + b"\x00")
    edit("sof-255-components", sof, frame[:5] + b"\xff" + frame[6:])
    edit("sof-sampling-0", sof, frame[:7] + b"\x00" + frame[8:])
    edit("sof-sampling-15x15", sof, frame[:7] + b"\xff" + frame[8:])
    edit("sof-quant-table-15", sof, frame[:8] + b"\x0f" + frame[9:])
    edit("sof-precision-12", sof, b"\x0c" + frame[1:])
    edit("sof-precision-16", sof, b"\x10" + frame[1:])
    for marker, name in (
        (0xC3, "lossless"),
        (0xC5, "hierarchical"),
        (0xC9, "arithmetic"),
        (0xF7, "jpeg-ls"),
    ):
        edit(f"sof-{name}", sof, frame, marker)
    for i, (marker, payload) in enumerate(segments):
        if marker == 0xDB:
            edit(f"dqt{i}-table-15", i, bytes([payload[0] | 0x0F]) + payload[1:])
            edit(f"dqt{i}-16-bit-short", i, bytes([payload[0] | 0x10]) + payload[1:])
            edit(f"dqt{i}-all-zero", i, payload[:1] + bytes(len(payload) - 1))
        if marker == 0xC4:
            edit(f"dht{i}-overfull-counts", i, payload[:1] + b"\xff" * 16 + payload[17:])
            edit(f"dht{i}-class-5", i, bytes([0x50 | payload[0] & 0x0F]) + payload[1:])
            edit(f"dht{i}-table-9", i, bytes([payload[0] & 0xF0 | 9]) + payload[1:])
            edit(f"dht{i}-no-codes", i, payload[:1] + bytes(16))
    scan = segments[sos][1]
    edit("sos-unknown-component", sos, scan[:1] + b"\x63" + scan[2:])
    edit("sos-0-components", sos, b"\x00" + scan[-3:])
    edit("sos-10-components", sos, b"\x0a" + scan[1:])
    edit("sos-table-9", sos, scan[:2] + b"\x99" + scan[3:])
    edit("sos-spectral-63-0", sos, scan[:-3] + b"\x3f\x00\x00")
    edit("sos-approximation-15-15", sos, scan[:-1] + b"\xff")
    without = [s for i, s in enumerate(segments) if i != sof]
    out["no-sof"] = jpeg_join(without, rest)
    out["two-sofs"] = jpeg_join([*segments[:sof], segments[sof], *segments[sof:]], rest)
    out["no-dqt"] = jpeg_join([s for s in segments if s[0] != 0xDB], rest)
    out["no-dht"] = jpeg_join([s for s in segments if s[0] != 0xC4], rest)
    for interval in (1, 65535):
        dri = (0xDD, struct.pack(">H", interval))
        out[f"dri-{interval}-without-markers"] = jpeg_join(
            [*segments[:sos], dri, segments[sos]], rest
        )
    whole = jpeg_join(segments, rest)
    for length in (0, 1, 2, 0xFFFF):  # the first segment's length field (bytes 4 and 5)
        out[f"segment-length-{length}"] = whole[:4] + struct.pack(">H", length) + whole[6:]
    out["eoi-after-soi"] = b"\xff\xd8\xff\xd9" + seed[2:]
    out["soi-twice"] = b"\xff\xd8" + seed
    out["no-soi"] = seed[2:]
    out["no-eoi"] = seed[:-2]
    out["only-soi"] = b"\xff\xd8"
    out["tem-marker"] = b"\xff\xd8\xff\x01" + seed[2:]
    out["reserved-marker"] = jpeg_join([(0x02, b"xx"), *segments], rest)
    out["100k-fill-bytes"] = jpeg_join(segments[:sos], b"\xff" * 100_000) + jpeg_join(
        segments[sos:], rest, b""
    )
    big_app = [(0xE1, b"x" * 65533)] * 16
    out["16-app1-segments-of-64-kb"] = jpeg_join([*big_app, *segments], rest)
    tiff = b"MM\x00\x2a\x00\x00\x00\x08"
    exif = {
        "exif-ifd-offset-out-of-file": b"MM\x00\x2a\xff\xff\xff\xf0",
        "exif-65535-entries": tiff
        + b"\xff\xff"
        + b"\x01\x12\x00\x03\x00\x00\x00\x01\x00\x06\x00\x00" * 4,
        "exif-ifd-loop": tiff
        + b"\x00\x01"
        + b"\x01\x12\x00\x03\x00\x00\x00\x01\x00\x06\x00\x00"
        + b"\x00\x00\x00\x08",
        "exif-orientation-9": tiff
        + b"\x00\x01"
        + b"\x01\x12\x00\x03\x00\x00\x00\x01\x00\x09\x00\x00"
        + b"\x00\x00\x00\x00",
        "exif-value-count-huge": tiff
        + b"\x00\x01"
        + b"\x01\x12\x00\x03\xff\xff\xff\xff\x00\x06\x00\x00"
        + b"\x00\x00\x00\x00",
    }
    for name, body in exif.items():
        out[name] = jpeg_join([(0xE1, b"Exif\x00\x00" + body), *segments], rest)
    out["scan-zeros"] = jpeg_join(segments, bytes(len(rest) - 2) + b"\xff\xd9")
    out["scan-stuffed-ff"] = jpeg_join(segments, b"\xff\x00" * (len(rest) // 2) + b"\xff\xd9")
    out["scan-restart-markers"] = jpeg_join(
        segments, bytes(range(0xD0, 0xD8)).join([b"\xff"] * 9) + rest
    )
    out["scan-empty"] = jpeg_join(segments, b"\xff\xd9")
    return out


def other_format_cases() -> dict[str, bytes]:
    """Real files of other formats (written by Pillow; of them the endpoints take WebP),
    bare signatures of more, and binary PGM/PPM (which wasinn.image reads)
    with hostile headers."""
    digit = Image.open(ROOT / "apps" / "digits" / "samples" / "digit3_002.png").convert("RGB")
    out = {
        f"format-{fmt.lower()}": _pillow(digit, fmt)
        for fmt in ("GIF", "BMP", "WEBP", "TIFF", "ICO", "PCX", "TGA")
    }
    signatures = {
        "gif89a": b"GIF89a\x08\x00\x08\x00",
        "tiff-big-endian": b"MM\x00\x2a\x00\x00\x00\x08",
        "psd": b"8BPS\x00\x01",
        "jpeg-2000": b"\x00\x00\x00\x0cjP  \r\n\x87\n",
        "jpeg-xl": b"\xff\x0a",
        "avif": b"\x00\x00\x00\x1cftypavif",
        "heic": b"\x00\x00\x00\x18ftypheic",
        "pdf": b"%PDF-1.7\n",
        "svg": b'<svg xmlns="http://www.w3.org/2000/svg"/>',
        "zip": b"PK\x03\x04",
        "gzip": b"\x1f\x8b\x08\x00",
    }
    out.update({f"signature-{name}": sig + bytes(64) for name, sig in signatures.items()})
    pgm = {
        "gray-8x8": b"P5 8 8 255\n" + bytes(range(64)),
        "rgb-8x8": b"P6 8 8 255\n" + bytes(192),
        "gray-16-bit": b"P5 8 8 65535\n" + bytes(128),
        "100000x100000": b"P5 100000 100000 255\n" + bytes(10),
        "maxval-0": b"P5 8 8 0\n" + bytes(64),
        "maxval-65536": b"P5 8 8 65536\n" + bytes(128),
        "negative-width": b"P5 -8 8 255\n" + bytes(64),
        "20-digit-width": b"P5 99999999999999999999 8 255\n" + bytes(64),
        "100k-comment": b"P5\n#" + b"c" * 100_000 + b"\n8 8 255\n" + bytes(64),
        "100k-comment-lines": b"P5\n" + b"#\n" * 100_000 + b"8 8 255\n" + bytes(64),
        "no-data": b"P5 8 8 255\n",
        "ascii-p2": b"P2 8 8 255\n" + b"0 " * 64,
        "bitmap-p4": b"P4 8 8\n" + bytes(8),
        "pam-p7": b"P7\nWIDTH 8\nHEIGHT 8\nDEPTH 1\nMAXVAL 255\nENDHDR\n" + bytes(64),
    }
    out.update({f"pnm-{name}": body for name, body in pgm.items()})
    return out


def _random_bytes_cases(rng: random.Random) -> dict[str, bytes]:
    out: dict[str, bytes] = {"empty-body": b""}
    for size in (1, 2, 7, 8, 9, 64, 1000, 65536, MAX_BODY, MAX_BODY + 1):
        out[f"random-{size}-bytes"] = rng.randbytes(size)
    for size in (1, 100, 10_000):
        out[f"png-signature-then-{size}-random"] = PNG_SIGNATURE + rng.randbytes(size)
        out[f"jpeg-soi-then-{size}-random"] = b"\xff\xd8\xff" + rng.randbytes(size)
    return out


def _content_type_of(name: str, body: bytes) -> str:
    """What a client would most likely send: image/jpeg for JPEG bytes, image/png otherwise."""
    return "image/jpeg" if body.startswith(b"\xff\xd8") or "jpeg" in name else "image/png"


def image_cases(rng: random.Random) -> list[HttpCase]:
    """Every /digits and /ocr case, in a fixed order. Most go to /digits, whose
    decode of any image up to 512x512 costs milliseconds; /ocr gets the bombs,
    the header surgery on its own seeds, other formats and a few mutations,
    because an image that still decodes costs it one to three seconds of OCR."""
    seeds = image_seeds()
    cases: list[HttpCase] = []

    def add(path: str, name: str, body: bytes, may_accept: bool, quick: bool = False) -> None:
        ctype = _content_type_of(name, body)
        cases.append(HttpCase(f"{path.strip('/')}/{name}", path, body, ctype, may_accept, quick))

    # name: (body, may_accept). Surgery on a valid seed may leave it valid (data
    # after IEND, IDAT split in bytes, ancillary chunks): a 2xx is then right.
    fixed: dict[str, tuple[bytes, bool]] = {}
    fixed.update((name, (body, False)) for name, body in bomb_cases().items())
    for seed_name in ("digit-png", "digit-png-palette", "line-png"):
        png = seeds[seed_name]
        for name, body in {**_ihdr_cases(png), **_png_structure_cases(png)}.items():
            fixed[f"{seed_name}-{name}"] = (body, True)
    for seed_name in ("digit-jpeg", "digit-jpeg-progressive", "line-jpeg"):
        for name, body in _jpeg_structure_cases(seeds[seed_name]).items():
            fixed[f"{seed_name}-{name}"] = (body, True)
    # Valid PGM/PPM (comments are part of their header) and WebP (which
    # wasinn.image decodes since libwebp came in) are served.
    served = ("pnm-gray-8x8", "pnm-rgb-8x8", "pnm-gray-16-bit", "pnm-100k-comment", "format-webp")
    fixed.update(
        (name, (body, name.startswith(served))) for name, body in other_format_cases().items()
    )
    fixed.update((name, (body, False)) for name, body in _random_bytes_cases(rng).items())
    fixed.update((f"seed-{name}", (body, True)) for name, body in seeds.items())
    quick = {
        "bomb-png-8192x8192-tiny-idat",
        "bomb-png-100000x100000",
        "digit-jpeg-sof-65535x65535",
        "digit-png-zlib-bomb-512-mib-for-8x8",
        "digit-png-bad-crc-idat",
        "format-gif",
        "format-webp",
        "empty-body",
        "random-1000-bytes",
        "seed-digit-png",
        "pnm-100000x100000",
        "digit-png-ihdr-interlace-1",
        "digit-jpeg-dht1-overfull-counts",
    }
    for name, (body, ok) in fixed.items():
        add("/digits", name, body, ok, name in quick)
    ocr = ("bomb-", "format-", "signature-", "random-", "empty", "line-", "seed-line", "pnm-100000")
    for name, (body, ok) in fixed.items():
        if name.startswith(ocr):
            add("/ocr", name, body, ok, name in quick or name == "seed-line-png")

    for seed_name, seed in seeds.items():
        # A progressive JPEG cut after a complete scan is a coarser picture, which
        # decoders (and browsers) show: serving it is fine. Other cuts are broken files.
        partial_ok = "progressive" in seed_name
        for n in cut_points(len(seed), rng, 40):
            add(
                "/digits",
                f"{seed_name}-truncated-at-{n:05d}",
                seed[:n],
                partial_ok,
                n == len(seed) // 2,
            )
        for i in range(30):
            add("/digits", f"{seed_name}-mutated-{i:02d}", mutate(seed, rng), True, i == 0)
        is_png = seed.startswith(PNG_SIGNATURE)
        where = "chunk" if is_png else "header"
        for i in range(20):
            body = _mutate_png_chunk(seed, rng) if is_png else _mutate_jpeg_header(seed, rng)
            add("/digits", f"{seed_name}-{where}-mutated-{i:02d}", body, True, i == 0)
    for seed_name in ("line-png", "line-jpeg", "line-jpeg-progressive"):
        seed = seeds[seed_name]
        partial_ok = "progressive" in seed_name
        for n in sorted(rng.sample(range(len(seed)), 10)):
            add("/ocr", f"{seed_name}-truncated-at-{n:05d}", seed[:n], partial_ok)
        for i in range(6):
            first = i == 0 and seed_name == "line-png"
            add("/ocr", f"{seed_name}-mutated-{i:02d}", mutate(seed, rng), True, first)
    return cases  # fmt: skip


def _mutate_png_chunk(seed: bytes, rng: random.Random) -> bytes:
    """A mutation inside one chunk's body with the CRC repaired, so that it
    reaches the header, palette or zlib code instead of the checksum."""
    chunks = png_chunks(seed)
    i = rng.randrange(len(chunks) - 1)  # not IEND
    kind, body = chunks[i]
    chunks[i] = (kind, mutate(body, rng) if body else body)
    return png_join(chunks)


def _mutate_jpeg_header(seed: bytes, rng: random.Random) -> bytes:
    """A mutation in the marker segments before the scan (tables, frame,
    scan header), where a decoder trusts counts and sizes."""
    segments, rest = jpeg_segments(seed)
    head = jpeg_join(segments, b"")
    return mutate(head, rng) + rest


# ---------------------------------------------------------------- requests for surfaces 1 and 3

# nginx's answer when a worker died under the request (tools/deploy.py's @no_worker).
NO_WORKER_STATUSES = (502, 503)


def send(port: int, case: HttpCase) -> Result:
    """Send one case, judge the answer. A request that got no answer at all is
    returned as a (suspected) crash, for ``attribute_restarts`` to confirm."""
    surface = "json" if case.path == "/textclass" else f"images {case.path}"
    headers = {"content-type": case.content_type} if case.content_type else {}
    try:
        status, doc, _ = serve_host.request(
            port, "POST", case.path, case.body, headers, HTTP_TIMEOUT_S
        )
    except TimeoutError:
        return Result(surface, case.name, "timeout", f"no answer in {HTTP_TIMEOUT_S:.0f} s")
    except (OSError, http.client.HTTPException) as e:
        return Result(surface, case.name, "crash", f"no answer: {type(e).__name__}: {e}")
    return Result(surface, case.name, *judge_answer(case.may_accept, status, doc))


def judge_answer(may_accept: bool, status: int, doc: object) -> tuple[Outcome, str]:
    """Clean is a 4xx with a JSON error; a bare (non-JSON) 500 is wasmtime's
    answer to a trap; 502/503 is nginx's when the worker died."""
    error = doc.get("error") if isinstance(doc, dict) else None
    said = f"{status} {str(error or doc)[:160]}"
    refusal = 400 <= status < 500
    if refusal and not isinstance(error, str):
        return "unclean", f"{said} (not a JSON error)"
    return judge_status(status, said, may_accept, refusal, bare_500=doc is None)


def judge_status(
    status: int, said: str, may_accept: bool, refusal: bool, bare_500: bool
) -> tuple[Outcome, str]:
    """An answer's outcome, for the app's and nginx's answers alike: ``refusal``
    says it is the refusal the surface promises; ``bare_500`` that a 500 is
    wasmtime's own page (a trap), not the app's JSON; 502/503 are nginx's
    when the worker died under the request."""
    if refusal:
        return "clean", said
    if 200 <= status < 300:
        return (
            ("accepted", said) if may_accept else ("unclean", f"{said} (an invalid request served)")
        )
    if status == 500 and bare_500:
        return "trap", f"{said}: wasmtime's bare 500"
    if status in NO_WORKER_STATUSES:
        return "crash", said
    return "unclean", said


# ---------------------------------------------------------------- surface 2: HTTP framing


@dataclass(frozen=True)
class FramingCase:
    """Raw bytes on one connection: ``sends`` are (seconds to wait first, bytes);
    ``trickle`` (interval, bytes) keeps sending after them until the limit.
    ``also_clean``: statuses beyond 4xx that are the right refusal (505 for an
    HTTP version the server does not speak, 501 for an unknown transfer coding)."""

    name: str
    sends: tuple[tuple[float, bytes], ...]
    trickle: tuple[float, bytes] | None = None
    may_accept: bool = False
    also_clean: tuple[int, ...] = ()
    quick: bool = False


H = b"Host: hostile\r\n"
JSON_HEAD = b"POST /textclass HTTP/1.1\r\n" + H + b"Content-Type: application/json\r\n"


def _post(headers: bytes, body: bytes) -> bytes:
    return JSON_HEAD + headers + b"\r\n" + body


def _chunked(*chunks: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"


def framing_cases(rng: random.Random) -> list[FramingCase]:
    """Every framing case: Content-Length and chunked framing that lies or
    conflicts, oversized request parts, bad methods and versions, garbage and
    slow senders. Sent to nginx, which must refuse them or time them out."""
    body = VALID_JSON
    n = len(body)
    te = b"Transfer-Encoding: chunked\r\n"
    get = b"GET /health HTTP/1.1\r\n" + H

    def cl(value: bytes) -> bytes:
        return b"Content-Length: " + value + b"\r\n"

    def line(request_line: bytes) -> bytes:
        """A request of this request line and a Host header."""
        return request_line + b"\r\n" + H + b"\r\n"

    # Valid, or invalid only where nginx documents that it ignores the part:
    # serving them (2xx) is right.
    servable = {
        "valid-request": _post(cl(b"%d" % n), body),
        "chunked-valid": _post(te, _chunked(body)),
        "chunked-one-byte-chunks": _post(te, _chunked(*(body[i : i + 1] for i in range(n)))),
        "chunked-garbage-trailer": _post(te, _chunked(body)[:-2] + b"\x00\x01\x02\r\n\r\n"),
        "header-without-colon": get + b"NoColonHere\r\n\r\n",  # ignore_invalid_headers
        "bare-lf-line-ends": get.replace(b"\r\n", b"\n") + b"\n",
        "path-absolute-form": line(b"GET http://hostile/health HTTP/1.1"),
        "query-8-kb": line(b"GET /health?" + b"q" * 8000 + b" HTTP/1.1"),
        "version-1.2": line(b"GET /health HTTP/1.2"),
        "version-0.9": b"GET /health\r\n",
        "version-missing": line(b"GET /health "),  # read as HTTP/0.9
        "pipelined-valid-then-garbage": get + b"\r\n" + bytes(range(256)),
    }
    refused = {
        "content-length-smaller-than-body": _post(cl(b"5"), body),
        "content-length-0-with-body": _post(cl(b"0"), body),
        "content-length-negative": _post(cl(b"-5"), body),
        "content-length-non-numeric": _post(cl(b"abc"), body),
        "content-length-hex": _post(cl(b"0x%x" % n), body),
        "content-length-plus-sign": _post(cl(b"+%d" % n), body),
        "content-length-space-inside": _post(cl(b"1 0"), body),
        "content-length-20-digits": _post(cl(b"9" * 20), body),
        "content-length-empty": _post(cl(b""), body),
        "content-length-two-different": _post(cl(b"%d" % n) + cl(b"5"), body),
        "content-length-two-same": _post(cl(b"%d" % n) * 2, body),
        "content-length-list": _post(cl(b"%d, %d" % (n, n)), body),
        "content-length-over-proxy-limit": _post(cl(b"%d" % (18 << 20)), b""),
        "chunked-bad-size": _post(te, b"zz\r\nabc\r\n0\r\n\r\n"),
        "chunked-huge-size": _post(te, b"f" * 18 + b"\r\nabc\r\n0\r\n\r\n"),
        "chunked-negative-size": _post(te, b"-5\r\nabc\r\n0\r\n\r\n"),
        "chunked-size-100k-zeros": _post(te, b"0" * 100_000 + b"1\r\na\r\n0\r\n\r\n"),
        "chunked-size-too-small": _post(te, b"2\r\n" + body + b"\r\n0\r\n\r\n"),
        "chunked-and-content-length": _post(te + cl(b"%d" % n), _chunked(body)),
        "transfer-encoding-gzip-chunked": _post(b"Transfer-Encoding: gzip, chunked\r\n", body),
        "transfer-encoding-unknown": _post(b"Transfer-Encoding: xchunked\r\n", body),
        "transfer-encoding-chunked-twice": _post(te + te, _chunked(body)),
        "header-line-100-kb": get + b"X-Big: " + b"a" * 100_000 + b"\r\n\r\n",
        "10000-headers": get + b"".join(b"X-H%d: v\r\n" % i for i in range(10_000)) + b"\r\n",
        "header-name-with-space": get + b"Bad Name: v\r\n\r\n",
        "header-with-nul": get + b"X-A: a\x00b\r\n\r\n",
        "header-folded": get + b"X-A: a\r\n b\r\n\r\n",
        "bare-cr-line-ends": get.replace(b"\r\n", b"\r") + b"\r",
        "no-host-header": b"GET /health HTTP/1.1\r\n\r\n",
        "two-host-headers": get + H + b"\r\n",
        "path-100-kb": line(b"GET /" + b"a" * 100_000 + b" HTTP/1.1"),
        "path-with-nul": line(b"GET /health\x00x HTTP/1.1"),
        "path-percent-nul": line(b"GET /health%00 HTTP/1.1"),
        "path-bad-percent": line(b"GET /%zz HTTP/1.1"),
        "path-dot-dot": line(b"GET /../../../etc/passwd HTTP/1.1"),
        "path-asterisk": line(b"GET * HTTP/1.1"),
        "path-no-slash": line(b"GET health HTTP/1.1"),
        "method-unknown": line(b"FOO /health HTTP/1.1"),
        "method-lower-case": line(b"get /health HTTP/1.1"),
        "method-with-nul": line(b"G\x00T /health HTTP/1.1"),
        "method-100-kb": line(b"G" * 100_000 + b" /health HTTP/1.1"),
        "method-connect": line(b"CONNECT hostile:443 HTTP/1.1"),
        "method-trace": line(b"TRACE /health HTTP/1.1"),
        "method-delete": line(b"DELETE /textclass HTTP/1.1"),
        "version-2.0": line(b"GET /health HTTP/2.0"),
        "version-3.1": line(b"GET /health HTTP/3.1"),
        "version-lower-case": line(b"GET /health http/1.1"),
        "version-huge": line(b"GET /health HTTP/99999999999.1"),
        "version-garbage": line(b"GET /health HTTX/1.1"),
        "http2-preface": b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        "tls-client-hello": bytes.fromhex("160301002a010000260303" + "00" * 32 + "00000213010100"),
        "ssh-banner": b"SSH-2.0-OpenSSH_9.6\r\n",
        "garbage-every-byte": bytes(range(256)) * 4,
        "garbage-random-64-kb": rng.randbytes(65536),
        "nul-bytes": bytes(1000),
    }
    # Sent at once, then nothing: nginx must give up within its client timeout.
    stalled = {
        "content-length-larger-than-body": _post(cl(b"%d" % (n + 1000)), body),
        "content-length-larger-by-1": _post(cl(b"%d" % (n + 1)), body),
        "content-length-16-mib-for-ocr": b"POST /ocr HTTP/1.1\r\n" + H
        + b"Content-Type: image/png\r\n" + cl(b"%d" % (16 << 20)) + b"\r\n",
        "chunked-no-last-chunk": _post(te, b"%x\r\n%s\r\n" % (n, body)),
        "chunked-size-larger-than-data": _post(te, b"ffff\r\n" + body),
        "expect-100-continue-no-body": _post(b"Expect: 100-continue\r\n" + cl(b"1000"), b""),
        "headers-unfinished": get,
        "request-line-unfinished": b"GET /hea",
        "connection-silent": b"",
        "crlf-flood": b"\r\n" * 10_000,
    }  # fmt: skip

    def also_clean(name: str) -> tuple[int, ...]:
        if name.startswith(("version", "http2")):
            return (505,)  # HTTP Version Not Supported
        return (501,) if name.startswith("transfer-encoding") else ()  # Not Implemented

    cases = [FramingCase(k, ((0.0, v),), may_accept=True) for k, v in servable.items()]
    cases += [FramingCase(k, ((0.0, v),), also_clean=also_clean(k)) for k, v in refused.items()]
    cases += [FramingCase(k, ((0.0, v),)) for k, v in stalled.items()]
    cases += [
        FramingCase("headers-trickled-1-byte-per-2-s", ((0.0, b"GET /health HTTP/1.1\r\n"),),
                    (2.0, b"X")),
        FramingCase("body-trickled-1-byte-per-3-s", ((0.0, _post(cl(b"100000"), b"")),),
                    (3.0, b" ")),
        FramingCase("body-after-9-s", ((0.0, _post(cl(b"%d" % n), b"")), (9.0, body)),
                    may_accept=True),
    ]  # fmt: skip
    quick = {
        "valid-request", "content-length-smaller-than-body", "content-length-negative",
        "content-length-two-different", "chunked-bad-size", "chunked-and-content-length",
        "header-line-100-kb", "10000-headers", "path-100-kb", "method-unknown", "version-2.0",
        "garbage-every-byte", "content-length-larger-than-body", "headers-unfinished",
    }  # fmt: skip
    return [replace(c, name=f"framing/{c.name}", quick=c.name in quick) for c in cases]


def _response_done(data: bytes) -> tuple[int | None, bool]:
    """The status of the first final (non-1xx) response in ``data``, and
    whether that response is complete (Content-Length or chunked end)."""
    pos = 0
    while True:
        end = data.find(b"\r\n\r\n", pos)
        if end < 0:
            return None, False
        head = data[pos:end].decode("latin-1")
        match = re.match(r"HTTP/\d\.\d (\d{3})", head)
        if match is None:
            return None, False
        status = int(match.group(1))
        if status >= 200 or status == 101:
            break
        pos = end + 4
    length = re.search(r"(?im)^content-length:\s*(\d+)", head)
    if length is not None:
        return status, len(data) - end - 4 >= int(length.group(1))
    if re.search(r"(?im)^transfer-encoding:\s*chunked", head):
        return status, data.endswith(b"0\r\n\r\n")
    return status, False


def exchange(port: int, case: FramingCase, limit: float = FRAMING_LIMIT_S) -> Result:
    """Play one framing case on a fresh connection and judge what came back:
    an answer, the server closing, or neither within ``limit`` seconds."""
    start = time.monotonic()
    deadline = start + limit
    plan: deque[tuple[float, bytes]] = deque()
    at = start
    for wait, data in case.sends:
        at += wait
        plan.append((at, data))
    if case.trickle is not None:
        interval, data = case.trickle
        while at + interval < deadline:
            at += interval
            plan.append((at, data))
    received = bytearray()
    closed = False
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    except OSError as e:  # nginx itself is gone
        return Result("framing", case.name, "crash", f"could not connect: {e}")
    with sock:
        while not closed and time.monotonic() < deadline:
            _, complete = _response_done(bytes(received))
            if complete:
                break
            wake = min(plan[0][0] if plan else deadline, deadline)
            readable, _, _ = select.select([sock], [], [], max(0.0, wake - time.monotonic()))
            if readable:
                try:
                    chunk = sock.recv(65536)
                except OSError:
                    chunk = b""
                closed = not chunk
                received += chunk
            elif plan and time.monotonic() >= plan[0][0]:
                data = plan.popleft()[1]
                try:
                    sock.settimeout(max(0.1, deadline - time.monotonic()))
                    sock.sendall(data)
                except OSError:
                    plan.clear()  # the server stopped reading: see what it said
    took = time.monotonic() - start
    return Result("framing", case.name, *judge_framing(case, bytes(received), closed, took))


def judge_framing(
    case: FramingCase, received: bytes, closed: bool, took: float
) -> tuple[Outcome, str]:
    status, _ = _response_done(received)
    first = received.split(b"\r\n", 1)[0][:80].decode("latin-1")
    if received and not received.startswith(b"HTTP/"):
        # An HTTP/0.9 answer (the body alone) or something else entirely.
        return (
            ("accepted", "a body without a status line (HTTP/0.9)")
            if case.may_accept
            else ("unclean", f"not an HTTP answer: {received[:80]!r}")
        )
    if status is None:
        if closed:
            return "clean", f"closed after {took:.1f} s" + (
                f" after a partial answer {first!r}" if received else ""
            )
        return "timeout", f"still open after {took:.1f} s, {len(received)} bytes received"
    refusal = 400 <= status < 500 or status in case.also_clean
    said = f"{first} after {took:.1f} s"
    return judge_status(status, said, case.may_accept, refusal, bare_500=b"wasmtime" in received)


# ---------------------------------------------------------------- restarts and traps in the log


@dataclass(frozen=True)
class LogCounts:
    traps: int
    restarts: int


def log_counts(server: serve_host.Server) -> LogCounts:
    """What tools/deploy.py and the workers logged: "wasm trap" lines and worker
    restarts (a worker that exited or was killed by a signal)."""
    log = server.stderr()
    return LogCounts(log.count("wasm trap"), len(re.findall(r"\(restart \d+\)", log)))


def wait_until_serving(server: serve_host.Server, timeout: float = 120.0) -> None:
    """Both workers up again (deploy.py restarts a dead one after a pause)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if len(server.worker_pids()) == 2 and server.request("GET", "/health")[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise TimeoutError(
        f"the workers did not come back in {timeout:.0f} s:\n{server.stderr()[-3000:]}"
    )


Case = TypeVar("Case", HttpCase, FramingCase)


def run_batch(
    server: serve_host.Server,
    cases: Sequence[Case],
    play: Callable[[Case], Result],
    concurrency: int,
) -> tuple[list[Result], LogCounts]:
    """Run ``cases`` concurrently, then pin every worker restart on a case.

    A worker that dies takes every request it was serving with it, so the
    cases that got no answer are only suspects: each is sent again alone, and
    it is the crash if a worker restarts then. A restart that no suspect
    repeats (or one with no suspect at all) is reported on its own line, with
    the log: sending every case again alone would take too long."""
    before = log_counts(server)
    with ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(play, cases))
    after = log_counts(server)
    if after.restarts == before.restarts and not any(r.outcome == "crash" for r in results):
        return results, LogCounts(after.traps - before.traps, 0)
    suspects = [i for i, r in enumerate(results) if r.outcome == "crash"]
    pinned = False
    for i in suspects:
        wait_until_serving(server)
        restarts = log_counts(server).restarts
        again = play(cases[i])
        time.sleep(2 * deploy.POLL_S + 0.3)  # deploy.py notices a death within its poll
        if log_counts(server).restarts > restarts:
            pinned = True
            log = "\n".join(line for line in server.stderr().splitlines() if "restart" in line)
            results[i] = replace(
                again, outcome="crash", detail=f"{again.detail}; {log.splitlines()[-1]}"
            )
        elif results[i].outcome == "crash":
            note = "alone, no worker restarted"
            outcome = again.outcome if again.outcome != "crash" else "unclean"
            results[i] = replace(again, outcome=outcome, detail=f"{again.detail} ({note})")
    final = log_counts(server)
    if after.restarts > before.restarts and not pinned:
        surface = results[0].surface if results else "?"
        results.append(
            Result(surface, "(a worker restart no case repeats)", "crash", server.stderr()[-1500:])
        )
    wait_until_serving(server)
    return results, LogCounts(final.traps - before.traps, final.restarts - before.restarts)


# ---------------------------------------------------------------- surface 4: model files


@dataclass(frozen=True)
class ModelCase:
    """One model file for ``Model.load``: ``main`` is the .onnx or .xml, and an
    .xml gets ``weights`` as the .bin beside it. ``may_load``: the file is a
    model OpenVINO may legitimately read (a mutation that kept it valid)."""

    name: str
    suffix: str
    main: bytes
    weights: bytes = b""
    may_load: bool = True
    quick: bool = False

    @property
    def filename(self) -> str:
        return self.name.replace("/", "-") + self.suffix


def proto_fields(
    data: bytes, start: int = 0, end: int | None = None
) -> list[tuple[int, int, int, int]] | None:
    """The fields of a protobuf message as (field number, wire type, offset of
    the payload, end), or None when the bytes do not parse as a message. For a
    length-delimited field the payload starts after its length varint."""
    end = len(data) if end is None else end
    fields: list[tuple[int, int, int, int]] = []
    pos = start

    def read_varint() -> int | None:
        nonlocal pos
        value = shift = 0
        while pos < end and shift < 70:
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7
        return None

    while pos < end:
        tag = read_varint()
        if tag is None or tag >> 3 == 0:
            return None
        wire = tag & 7
        if wire == 0:
            if read_varint() is None:
                return None
            fields.append((tag >> 3, wire, pos, pos))
            continue
        size = {1: 8, 5: 4}.get(wire)
        if wire == 2:
            size = read_varint()
        if size is None or pos + size > end:
            return None
        fields.append((tag >> 3, wire, pos, pos + size))
        pos += size
    return fields


def length_prefixes(
    data: bytes, start: int = 0, end: int | None = None, depth: int = 0
) -> list[tuple[int, int]]:
    """(offset, size) of the payload of every length-delimited field, in every
    sub-message that parses as one, down to four levels: where a lying length
    can be written."""
    found: list[tuple[int, int]] = []
    for _, wire, payload, stop in proto_fields(data, start, end) or []:
        if wire == 2:
            found.append((payload, stop - payload))
            if depth < 4 and stop > payload:
                found += length_prefixes(data, payload, stop, depth + 1)
    return found


def with_length(data: bytes, payload: int, size: int, declared: int) -> bytes:
    """``data`` with the length varint before ``payload`` (of ``size``) replaced."""
    old = len(varint(size))
    return data[: payload - old] + varint(declared) + data[payload:]


def with_graph_fields(model: bytes, extra: bytes) -> bytes:
    """A ModelProto with ``extra`` appended inside its graph (field 7, whose tag
    is the one byte 0x3a)."""
    for number, _, payload, stop in proto_fields(model) or []:
        if number == 7:
            start = payload - len(varint(stop - payload)) - 1
            return model[:start] + pb_bytes(7, model[payload:stop] + extra) + model[stop:]
    raise ValueError("no graph in the model")


def _if_level(size: int) -> tuple[bytes, bytes]:
    """One level of graph nesting: a graph whose only node is an If whose
    then_branch attribute holds the next graph (``size`` bytes)."""
    attr_head = pb_bytes(1, "then_branch") + pb_int(20, 5) + varint(6 << 3 | 2) + varint(size)
    attr_size = len(attr_head) + size
    node_head = (
        pb_bytes(1, "c")
        + pb_bytes(2, "y")
        + pb_bytes(4, "If")
        + varint(5 << 3 | 2)
        + varint(attr_size)
    )
    node_size = len(node_head) + attr_size
    return varint(1 << 3 | 2) + varint(node_size) + node_head + attr_head, pb_bytes(2, "g")


def _sequence_level(size: int) -> tuple[bytes, bytes]:
    """One level of type nesting: TypeProto{sequence_type: {elem_type: next}}."""
    sequence = varint(1 << 3 | 2) + varint(size)
    return varint(4 << 3 | 2) + varint(len(sequence) + size) + sequence, b""


def _onnx(graph: bytes, opset: int = 13, ir_version: int = 8) -> bytes:
    return (
        pb_int(1, ir_version) + pb_bytes(7, graph) + pb_bytes(8, pb_bytes(1, "") + pb_int(2, opset))
    )


def _tensor(name: str, dims: Sequence[int], dtype: int = 1, raw: bytes | None = bytes(4)) -> bytes:
    """A TensorProto (an initializer): dims, data type, name and raw data (none: no field)."""
    fields = b"".join(pb_int(1, d) for d in dims) + pb_int(2, dtype) + pb_bytes(8, name)
    return fields + (b"" if raw is None else pb_bytes(9, raw))


F32 = "f32"


def _one_node(
    op: str, inputs: Sequence[str] = ("a",), opset: int = 13, ir_version: int = 8
) -> bytes:
    """A model of one ``op`` node from input "a" to output "y" (both f32[1])."""
    ports = [Port("a", (1,), F32)], [Port("y", (1,), F32)]
    return onnx_model(
        "one", *ports, [(op, list(inputs), ["y"])], opset=opset, ir_version=ir_version
    )


def onnx_structure_cases() -> dict[str, tuple[bytes, bool]]:
    """ONNX files built field by field: nesting thousands deep, lying lengths,
    tensors and shapes that claim more than exists, data outside the sandbox."""
    base = add_mul().files["add_mul.onnx"]
    io_ports = pb_bytes(11, onnx_value_info(Port("c", (1,), F32))) + pb_bytes(
        12, onnx_value_info(Port("y", (1,), F32))
    )
    out: dict[str, tuple[bytes, bool]] = {}
    for depth in (10, 100, 1_000, 10_000, 100_000):
        out[f"nested-graphs-{depth}"] = (_onnx(nest(depth, b"", _if_level) + io_ports), depth <= 10)
        innermost = pb_bytes(1, pb_int(1, 1))  # TypeProto{tensor_type: {elem_type: float}}
        value_info = pb_bytes(1, "x") + pb_bytes(2, nest(depth, innermost, _sequence_level))
        out[f"nested-sequence-types-{depth}"] = (_onnx(pb_bytes(11, value_info) + io_ports), False)
        groups = nest(depth, b"", lambda _: (varint(99 << 3 | 3), varint(99 << 3 | 4)))
        out[f"nested-groups-{depth}"] = (base + groups, True)
        unknown = nest(depth, b"", lambda size: (varint(99 << 3 | 2) + varint(size), b""))
        out[f"nested-unknown-fields-{depth}"] = (base + unknown, True)
    mul = _one_node("Mul", ["a", "w"])

    def with_weight(tensor: bytes) -> bytes:
        return with_graph_fields(mul, pb_bytes(5, tensor))

    out["weight-valid"] = (with_weight(_tensor("w", [1])), True)
    out["weight-dims-2^31x2^31-4-bytes"] = (with_weight(_tensor("w", [2**31, 2**31])), False)
    out["weight-dims-2^62-4-bytes"] = (with_weight(_tensor("w", [2**62])), False)
    out["weight-dims-negative"] = (with_weight(_tensor("w", [-1])), False)
    out["weight-1-byte-for-f32"] = (with_weight(_tensor("w", [1], raw=b"\x00")), False)
    out["weight-data-type-999"] = (with_weight(_tensor("w", [1], dtype=999)), False)
    out["weight-data-type-0"] = (with_weight(_tensor("w", [1], dtype=0)), False)
    out["weight-1000-dims"] = (with_weight(_tensor("w", [1] * 1000)), True)
    # TensorProto.external_data (13) and data_location EXTERNAL (14): weights read
    # from a file the host resolves, outside what the component may see.
    places = {
        "etc-passwd": "/etc/passwd",
        "dot-dot-etc-passwd": "../../../../../../etc/passwd",
        "proc-self-mem": "/proc/self/mem",
        "itself": "w.onnx",
    }
    for label, where in places.items():
        external = pb_bytes(13, pb_bytes(1, "location") + pb_bytes(2, where)) + pb_int(14, 1)
        out[f"external-data-{label}"] = (with_weight(_tensor("w", [1], raw=None) + external), False)
    huge = {
        "input-1x2^40": (1, 2**40),
        "input-2^62x2^62": (2**62, 2**62),
        "input-rank-1000": (1,) * 1000,
        "input-rank-100000": (1,) * 100_000,
    }
    for name, shape in huge.items():  # declared, never allocated: loading may succeed
        port = Port("a", shape, F32)
        out[name] = (
            onnx_model(name, [port], [replace(port, name="y")], [("Identity", ["a"], ["y"])]),
            True,
        )
    for length in (1_000, 10_000, 100_000):
        nodes = [("Identity", [f"t{i}"], [f"t{i + 1}"]) for i in range(length)]
        ports = ([Port("t0", (1,), F32)], [Port(f"t{length}", (1,), F32)])
        out[f"identity-chain-{length}"] = (onnx_model("chain", *ports, nodes), True)
    ports = [Port("a", (1,), F32)], [Port("y", (1,), F32)]
    cycle = [("Add", ["a", "z"], ["y"]), ("Identity", ["y"], ["z"])]
    out["node-cycle"] = (onnx_model("cycle", *ports, cycle), False)
    out["node-reads-its-output"] = (_one_node("Add", ["a", "y"]), False)
    out["op-unknown"] = (_one_node("NoSuchOp"), False)
    out["op-empty-name"] = (_one_node(""), False)
    out["opset-9999"] = (_one_node("Identity", opset=9999), True)  # OpenVINO takes its newest
    out["opset-0"] = (_one_node("Identity", opset=0), False)
    out["ir-version-2^62"] = (_one_node("Identity", ir_version=2**62), False)
    out["node-100000-inputs"] = (_one_node("Sum", ["a"] * 100_000), True)
    out["graph-field-twice"] = (base + pb_bytes(7, pb_bytes(2, "second")), True)
    out["empty-file"] = (b"", False)
    out["one-byte"] = (b"\x08", False)
    out["text-not-protobuf"] = (b"hello, this is not a model\n", False)
    out["ir-xml-named-onnx"] = (
        (ROOT / "apps" / "digits" / "model" / "digits.xml").read_bytes(),
        False,
    )
    for _, wire, payload, stop in proto_fields(base) or []:
        for declared in (0, 2**31, 2**63 - 1, 2**64 - 1) if wire == 2 else ():
            out[f"top-field-at-{payload}-declares-{declared}"] = (
                with_length(base, payload, stop - payload, declared),
                False,
            )
    return out


def ir_structure_cases(xml: bytes, weights: bytes) -> dict[str, tuple[bytes, bytes, bool]]:
    """IR files edited as text: elements nested deep, entity expansion, external
    entities, huge attributes, lying Const offsets, a short .bin, broken edges."""
    text = xml.decode()
    out: dict[str, tuple[bytes, bytes, bool]] = {}

    def edit(name: str, old: str, new: str, may_load: bool = False) -> None:
        assert old in text, old
        out[name] = (text.replace(old, new, 1).encode(), weights, may_load)

    for depth in (1_000, 100_000, 1_000_000):
        deep = "<deep>" * depth + "</deep>" * depth
        edit(f"nested-elements-in-rt-info-{depth}", "<rt_info>", "<rt_info>" + deep, True)
        edit(
            f"nested-elements-in-layer-data-{depth}",
            'element_type="f32" />',
            f'element_type="f32">{deep}</data>',
            True,  # unknown elements are ignored
        )
        edit(f"nested-elements-under-net-{depth}", "<layers>", deep + "<layers>", True)
    for depth in (100, 1_000, 10_000):
        body = (
            '<layer id="0" name="ti" type="TensorIterator" version="opset1"><body><layers>' * depth
        )
        body += "</layers></body></layer>" * depth
        edit(f"nested-tensor-iterators-{depth}", "<layers>", "<layers>" + body, True)
    laughs = "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10))
    doctype = f'<!DOCTYPE net [<!ENTITY l0 "lol">{laughs}]>'
    edit("billion-laughs", '<net name="Model0"', doctype + '\n<net name="&l9;"')
    quadratic = f'<!DOCTYPE net [<!ENTITY q "{"q" * 50_000}">]>'
    edit(
        "quadratic-blowup", '<net name="Model0"', quadratic + '\n<net name="' + "&q;" * 50_000 + '"'
    )
    external = '<!DOCTYPE net [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
    edit("external-entity", '<net name="Model0"', external + '\n<net name="&x;"')
    edit(
        "external-dtd",
        '<net name="Model0"',
        '<!DOCTYPE net SYSTEM "http://127.0.0.1:9/x.dtd">\n<net name="Model0"',
        True,  # neither expat nor pugixml fetches it
    )
    parameter = '<!DOCTYPE net [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]>'
    edit("parameter-entity", '<net name="Model0"', parameter + '\n<net name="Model0"', True)
    edit("attribute-16-mb-name", 'name="Model0"', f'name="{"n" * (16 << 20)}"', True)
    edit("attribute-16-mb-rt-info-value", 'value="pytorch"', f'value="{"v" * (16 << 20)}"', True)
    edit(
        "shape-rank-1000000", 'shape="?,1,8,8"', 'shape="' + ",".join(["1"] * 1_000_000) + '"', True
    )
    edit("shape-huge-dim", 'shape="?,1,8,8"', 'shape="?,1,99999999999,8"', True)
    edit("dim-2^62", "<dim>8</dim>", f"<dim>{2**62}</dim>", True)
    edit("dim-negative", "<dim>8</dim>", "<dim>-5</dim>", True)
    edit("dim-not-a-number", "<dim>8</dim>", "<dim>eight</dim>", True)
    edit("const-offset-2^64-1", 'offset="0" size="576"', f'offset="{2**64 - 1}" size="576"')
    edit("const-offset-negative", 'offset="0" size="576"', 'offset="-576" size="576"')
    edit("const-size-2^63", 'offset="0" size="576"', f'offset="0" size="{2**63}"')
    edit("const-size-past-bin", 'offset="0" size="576"', f'offset="0" size="{len(weights) + 4}"')
    edit("const-size-0", 'offset="0" size="576"', 'offset="0" size="0"')
    for name, cut in (
        ("bin-empty", 0),
        ("bin-half", len(weights) // 2),
        ("bin-1-byte-short", len(weights) - 1),
    ):
        out[name] = (xml, weights[:cut], False)
    edit("layer-id-duplicate", '<layer id="3"', '<layer id="2"')
    edit("edge-to-missing-layer", 'to-layer="25"', 'to-layer="999"')
    edit("edge-from-negative-layer", 'from-layer="23"', 'from-layer="-1"')
    edit(
        "edge-self-loop",
        '<edge from-layer="4" from-port="2" to-layer="5"',
        '<edge from-layer="5" from-port="1" to-layer="5"',
    )
    edit(
        "edge-cycle",
        '<edge from-layer="2" from-port="2" to-layer="4"',
        '<edge from-layer="5" from-port="1" to-layer="4"',
    )
    edit("op-unknown", 'type="ReLU"', 'type="NoSuchOp"')
    edit("opset-999", 'version="opset1">', 'version="opset999">')
    edit("element-type-bogus", 'element_type="f32"', 'element_type="f1024"')
    edit("precision-bogus", 'precision="FP32"', 'precision="FP1024"')
    edit("ir-version-1", 'version="11"', 'version="1"')
    edit("ir-version-99", 'version="11"', 'version="99"')
    out["edges-removed"] = (re.sub(rb"<edge [^>]*/>", b"", xml), weights, False)
    out["no-layers"] = (re.sub(rb"<layer .*?</layer>", b"", xml, flags=re.S), weights, True)
    out["empty-file"] = (b"", weights, False)
    out["binary-junk"] = (bytes(range(256)) * 8, weights, False)
    out["utf-16"] = (
        text.replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-16"?>').encode(
            "utf-16"
        ),
        weights,
        True,
    )
    out["bom-utf-8"] = (b"\xef\xbb\xbf" + xml, weights, True)
    for length in (1_000, 10_000):  # a valid model whose compile time grows steeply
        chain = IRWriter("chain")
        value = chain.parameter(Port("x", (1, 4), F32))
        for i in range(length):
            value = chain.op("ReLU", [value], f"r{i}", (1, 4))
        chain.result(value)
        out[f"layer-chain-{length}"] = (chain.xml(), bytes(chain.weights), True)
    return out


_ATTRIBUTE = re.compile(rb'="[^"]*"|<dim>[^<]*</dim>')
ODD_VALUES = (
    b"",
    b"-1",
    b"0",
    b"4294967296",
    b"18446744073709551616",
    b"-9223372036854775808",
    b"nan",
    b"inf",
    b"1e308",
    b"abc",
    b"?",
    b"...",
    b",",
    b"1," * 1000,
    b"\xc3\xbf",
    b"u1",
    b"string",
    b"dynamic",
    b"-1,-1,-1,-1",
    b"&amp;",
)


def _mutate_ir_value(xml: bytes, rng: random.Random) -> bytes:
    """One to three attribute values or dims of the IR set to odd values: the
    XML stays well-formed, so the mutation reaches OpenVINO's IR reader."""
    spots = list(_ATTRIBUTE.finditer(xml))
    for _ in range(rng.randrange(1, 4)):
        spot = rng.choice(spots)
        odd = rng.choice(ODD_VALUES)
        new = b'="' + odd + b'"' if spot.group().startswith(b"=") else b"<dim>" + odd + b"</dim>"
        xml = xml[: spot.start()] + new + xml[spot.end() :]
        spots = list(_ATTRIBUTE.finditer(xml))
    return xml


def model_cases(rng: random.Random) -> list[ModelCase]:
    """Every model-file case, in a fixed order: the structural ones above, then
    truncations and seeded mutations of a toy ONNX model, a real one (silero
    VAD, when the build has fetched it) and the digits IR."""
    quick = {
        "nested-graphs-100000", "nested-sequence-types-100000", "nested-groups-100000",
        "weight-dims-2^31x2^31-4-bytes", "external-data-etc-passwd", "input-2^62x2^62",
        "node-cycle", "identity-chain-1000", "billion-laughs", "external-entity",
        "nested-elements-in-rt-info-100000", "nested-elements-under-net-1000000", "bin-half",
        "const-size-past-bin", "edge-cycle", "nested-tensor-iterators-1000",
    }  # fmt: skip
    cases = [ModelCase(f"onnx/{name}", ".onnx", data, may_load=ok, quick=name in quick)
             for name, (data, ok) in onnx_structure_cases().items()]  # fmt: skip
    xml = (ROOT / "apps" / "digits" / "model" / "digits.xml").read_bytes()
    weights = (ROOT / "apps" / "digits" / "model" / "digits.bin").read_bytes()
    for name, (data, bin_, ok) in ir_structure_cases(xml, weights).items():
        cases.append(ModelCase(f"ir/{name}", ".xml", data, bin_, ok, quick=name in quick))

    def onnx(name: str, data: bytes, first: bool) -> None:
        cases.append(ModelCase(f"onnx/{name}", ".onnx", data, quick=first))

    def ir(name: str, data: bytes, bin_: bytes, first: bool) -> None:
        cases.append(ModelCase(f"ir/digits-{name}", ".xml", data, bin_, quick=first))

    for n in cut_points(len(xml), rng, 40):
        ir(f"xml-truncated-at-{n:05d}", xml[:n], weights, n == len(xml) // 2)
    for i in range(200):
        ir(f"value-mutated-{i:03d}", _mutate_ir_value(xml, rng), weights, i == 0)
    for i in range(80):
        ir(f"bytes-mutated-{i:03d}", mutate(xml, rng), weights, i == 0)
    for i in range(20):
        ir(f"bin-mutated-{i:02d}", xml, mutate(weights, rng), i == 0)
    # silero last: where the build has not fetched it, the other cases stay the same.
    seeds = {"toy": add_mul().files["add_mul.onnx"]}
    silero = ROOT / "build" / "models" / "silero" / "silero_vad_openvino_16k.onnx"
    if silero.exists():
        seeds["silero"] = silero.read_bytes()
    for seed_name, seed in seeds.items():
        # A cut at a field boundary leaves a valid, smaller model: loading it is fine.
        for n in cut_points(len(seed), rng, 60):
            onnx(f"{seed_name}-truncated-at-{n:07d}", seed[:n], n == len(seed) // 3)
        for i in range(150 if seed_name == "toy" else 60):
            onnx(f"{seed_name}-mutated-{i:03d}", mutate(seed, rng), i == 0)
        spots = length_prefixes(seed)
        for i, (payload, size) in enumerate(rng.sample(spots, min(40, len(spots)))):
            declared = rng.choice((0, size - 1, size + 1, 2**31, 2**63, 2**64 - 1))
            lie = with_length(seed, payload, size, declared)
            onnx(f"{seed_name}-length-lie-{i:02d}", lie, i == 0)
    return cases


def wasmtime_run_argv(folder: Path, after: str | None) -> list[str]:
    """The hostile app under `wasmtime run` with the project's flags, ``folder``
    mapped as /cases."""
    wasmtime = Path(sysconfig.get_path("purelib")) / "wasmtime_cli" / "wasmtime"
    argv = [
        str(wasmtime),
        "run",
        *wasmtime_flags.FLAGS,
        "-S",
        "nn",
        "--allow-precompiled",
        "--dir",
        f"{folder}::/cases",
        str(ROOT / "build" / "hostile_app.cwasm"),
        "/cases",
    ]
    return argv + ([after] if after else [])


def run_model_folder(folder: Path, cases: dict[str, ModelCase]) -> list[Result]:
    """Load every file of ``folder`` in the hostile app, restarting it after the
    file that trapped it, killed it, hung or ran away with memory."""
    order = sorted(cases)
    results: dict[str, Result] = {}
    env = dict(os.environ, LD_LIBRARY_PATH=str(serve_host.openvino_libs()), WASMTIME_LOG="off")
    after: str | None = None
    while True:
        with tempfile.TemporaryFile() as stderr:
            proc = subprocess.Popen(
                wasmtime_run_argv(folder, after),
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=env,
                text=True,
            )
            assert proc.stdout is not None
            stopped = _read_lines(proc, cases, results)
            code = proc.wait()
            stderr.seek(0)
            err = stderr.read().decode(errors="replace")
        left = [f for f in order if f not in results and (after is None or f > after)]
        if not left:
            break
        culprit = left[0]
        outcome: Outcome
        if stopped:
            outcome, detail = "timeout", stopped
        elif code < 0:
            outcome, detail = "crash", f"wasmtime {deploy.describe_exit(code)}"
        elif "wasm trap" in err:
            outcome, detail = "trap", f"exit {code}: " + _trap_line(err)
        else:
            outcome, detail = "crash", f"exit {code}: {err.strip()[-300:]}"
        results[culprit] = Result("models", cases[culprit].name, outcome, detail)
        after = culprit
    return [results[f] for f in order]


def _trap_line(stderr: str) -> str:
    """wasmtime's reason and the innermost wasm frame, from its (long) report."""
    lines = stderr.splitlines()
    reason = next((x.strip() for x in lines if "wasm trap" in x or "panicked" in x), "")
    reason = re.sub(r"^\d+: ", "", reason)  # its place in wasmtime's "Caused by" list
    frame = next((x.split(" - ", 1)[1] for x in lines if re.match(r" +0: 0x[0-9a-f]+ - ", x)), "")
    return f"{reason} (in {frame})" if frame else reason or stderr.strip()[-200:]


def _read_lines(
    proc: subprocess.Popen[str], cases: dict[str, ModelCase], results: dict[str, Result]
) -> str:
    """Judge each line the app prints. Kill it (our own child) when a file takes
    longer than MODEL_TIMEOUT_S or the host's memory passes MODEL_RSS_LIMIT_KIB,
    and return why; "" when it ended by itself."""
    lines: deque[str] = deque()
    done = threading.Event()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
        done.set()

    threading.Thread(target=pump, daemon=True).start()
    last = time.monotonic()
    why = ""
    while not why and not (done.is_set() and not lines):
        if lines:
            results.update(_judge_model_line(lines.popleft(), cases))
            last = time.monotonic()
            continue
        try:
            rss = serve_host.rss_kib(proc.pid)
        except (OSError, RuntimeError):  # it has just exited
            rss = 0
        if rss > MODEL_RSS_LIMIT_KIB:
            why = f"stopped by the suite: the host's memory passed {rss >> 20} GB and kept growing"
        elif time.monotonic() - last > MODEL_TIMEOUT_S:
            why = f"no answer in {MODEL_TIMEOUT_S:.0f} s"
        else:
            done.wait(0.05)
    if why:
        proc.kill()
        done.wait(10)
        while lines:  # what it printed before it hung still counts
            results.update(_judge_model_line(lines.popleft(), cases))
    return why


def _judge_model_line(line: str, cases: dict[str, ModelCase]) -> dict[str, Result]:
    try:
        doc = json.loads(line)
    except ValueError:
        return {}
    case = cases.get(doc.get("file", ""))
    if case is None:
        return {}
    if doc["outcome"] == "loaded":
        outcome: Outcome = "accepted" if case.may_load else "unclean"
        return {
            case.filename: Result(
                "models",
                case.name,
                outcome,
                "loaded" if case.may_load else "loaded a file that must be refused",
            )
        }
    said = f"{doc['type']}: {doc['message'][:200]}"
    return {
        case.filename: Result("models", case.name, "clean" if doc["wasinn"] else "unclean", said)
    }


def run_models(cases: Sequence[ModelCase], parallel: int = 2) -> list[Result]:
    """Write the files and load them in ``parallel`` components at once."""
    built = subprocess.run(
        [str(ROOT / "build.sh"), "build", str(HOSTILE_APP)], capture_output=True, text=True
    )
    if built.returncode:
        raise RuntimeError(f"building {HOSTILE_APP} failed:\n{built.stdout}\n{built.stderr}")
    with tempfile.TemporaryDirectory(prefix="wasinn-hostile-models-") as tmp:
        parts: list[dict[str, ModelCase]] = [{} for _ in range(parallel)]
        for i, case in enumerate(cases):
            folder = Path(tmp) / f"part{i % parallel}"
            folder.mkdir(exist_ok=True)
            (folder / case.filename).write_bytes(case.main)
            if case.suffix == ".xml":
                (folder / case.filename).with_suffix(".bin").write_bytes(case.weights)
            parts[i % parallel][case.filename] = case
        with ThreadPoolExecutor(parallel) as pool:
            done = pool.map(
                lambda k: run_model_folder(Path(tmp) / f"part{k}", parts[k]), range(parallel)
            )
            return [r for part in done for r in part]


# ---------------------------------------------------------------- the whole suite and its table


@dataclass
class Report:
    results: list[Result]
    logs: dict[str, LogCounts]  # per surface row: what the server log says
    seconds: dict[str, float]  # per surface
    quick: bool

    def rows(self) -> list[str]:
        return list(dict.fromkeys(r.surface for r in self.results))


def rng_for(surface: str) -> random.Random:
    """Each surface's own seeded generator: its cases do not change when
    another surface gains one."""
    return random.Random(f"{SEED}-{surface}")


def case_names(surface: str, quick: bool = False) -> list[str]:
    """The names of a surface's cases (``quick``: of its quick subset)."""
    generators: dict[str, Callable[[random.Random], Sequence[HttpCase | FramingCase | ModelCase]]]
    generators = {"json": json_cases, "images": image_cases, "framing": framing_cases,
                  "models": model_cases}  # fmt: skip
    generated = generators[surface](rng_for(surface))
    return [c.name for c in generated if c.quick or not quick]


def run_suite(quick: bool, surfaces: Sequence[str] = SURFACES) -> Report:
    """Generate every selected surface's cases (``quick``: the fixed subset), run
    them, and count. The HTTP surfaces share one `./build.sh deploy` service."""
    report = Report([], {}, {}, quick)

    def pick(cases: Sequence[Case]) -> list[Case]:
        return [c for c in cases if c.quick or not quick]

    if "models" in surfaces:
        started = time.monotonic()
        model_list = [c for c in model_cases(rng_for("models")) if c.quick or not quick]
        report.results += run_models(model_list)
        report.seconds["models"] = time.monotonic() - started
    http = [s for s in surfaces if s in ("json", "framing", "images")]
    if not http:
        return report
    unlimited = serve_host.ONE_CLIENT_UNLIMITED
    with serve_host.Server(reuse=1000, workers=2, options=unlimited) as server:
        for surface in http:
            started = time.monotonic()
            rng = rng_for(surface)
            if surface == "framing":
                framing = pick(framing_cases(rng))
                results, logs = run_batch(
                    server, framing, lambda c: exchange(server.port, c), len(framing)
                )
                report.logs["framing"] = logs
                report.results += results
            else:
                app_cases = pick(json_cases(rng) if surface == "json" else image_cases(rng))
                for path in dict.fromkeys(c.path for c in app_cases):
                    batch = [c for c in app_cases if c.path == path]
                    results, logs = run_batch(
                        server, batch, lambda c: send(server.port, c), CONCURRENCY
                    )
                    report.results += results
                    report.logs[results[0].surface] = logs
            report.seconds[surface] = time.monotonic() - started
    return report


def table(report: Report) -> str:
    """The markdown table: one row per surface and a total."""
    columns = ["surface", "tried", "clean", "accepted", "unclean", "traps", "host crashes",
               "timeouts", "server log: wasm traps, restarts"]  # fmt: skip
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    totals: Counter[str] = Counter()
    for row in report.rows():
        counts = Counter(r.outcome for r in report.results if r.surface == row)
        tried = sum(counts.values())
        totals.update(counts)
        log = report.logs.get(row)
        said = f"{log.traps}, {log.restarts}" if log else "n/a (a component per run)"
        lines.append(
            f"| {row} | {tried:,} | "
            + " | ".join(f"{counts[o]:,}" for o in OUTCOMES)
            + f" | {said} |"
        )
    lines.append(
        f"| **total** | **{sum(totals.values()):,}** | "
        + " | ".join(f"**{totals[o]:,}**" for o in OUTCOMES)
        + " | |"
    )
    return "\n".join(lines)


def failures(report: Report, limit: int = 40) -> str:
    """The failed cases by name, with what happened (at most ``limit`` per surface)."""
    out: list[str] = []
    for row in report.rows():
        bad = sorted(
            (r for r in report.results if r.surface == row and r.outcome in FAILURES),
            key=lambda r: r.case,
        )
        for r in bad[:limit]:
            out.append(f"- {r.outcome}: `{r.case}`: {r.detail[:300]}")
        if len(bad) > limit:
            out.append(f"- ... and {len(bad) - limit} more in {row}")
    return "\n".join(out) if out else "None: every case ended cleanly or was legitimately served."


NOTES = """What each surface gets (every case is named; `tests/hostile.py --list` prints them):
**models**: ONNX and IR files for `Model.load` in a component: truncations and seeded mutations
of a toy ONNX model, silero VAD and the digits IR; lengths that lie; graphs, types and unknown
fields nested up to 100,000 deep and XML elements up to a million; entity expansion, external
entities and external tensor data; tensors and shapes claiming more than exists; cycles; chains
of 1,000 to 100,000 nodes. **json**: POST /textclass bodies nested up to a million levels,
numbers of 100,000 digits and 1e999999, wrong types, strings at and over the 1 MiB limit,
invalid UTF-8 and BOMs, every truncation, duplicate keys, control characters, seeded mutations
and random documents. **framing**: raw bytes to nginx in front of two workers: Content-Length
and chunked framing that lies or conflicts, 100 KB header lines, paths and methods, 10,000
headers, bad versions, TLS and SSH bytes, stalled and trickled senders (all at once, each on
its own connection). **images**: /digits and /ocr bodies: decompression and dimension bombs,
IHDR, chunk, zlib, SOF, DQT, DHT, SOS, DRI and EXIF surgery (CRCs repaired), every truncation,
seeded mutations of PNG and JPEG seeds, other formats, PGM/PPM headers, random bytes."""


def markdown(report: Report, command: str) -> str:
    took = ", ".join(f"{s} {t:.0f} s" for s, t in report.seconds.items())
    when = datetime.now(UTC).strftime("%Y-%m-%d")
    return f"""# Hostile input: what every surface does with it

`{command}` (tests/hostile.py, seed {SEED}), {when}; {took}.

{table(report)}

{NOTES}

Outcomes: **clean** is the refusal the surface promises (a 4xx JSON error from the
app; a 4xx or a closed connection from nginx, including 505 for an HTTP version
and 501 for a transfer coding it does not speak; a wasinn exception from
`Model.load`). **accepted**: served (2xx) or loaded, where the input is
legitimately valid (a mutation that kept an image or model valid, a request
framed in an unusual but correct way). **unclean**: an answer of the wrong kind
(a 500 where a 4xx belongs, another 5xx, a 2xx to an invalid request, an
exception that is not wasinn's). **traps**: wasmtime's bare 500, or the
component exiting with a trap. **host crashes**: a worker restart in
tools/deploy.py's log, or `wasmtime run` killed by a signal. **timeouts**: no
answer within {HTTP_TIMEOUT_S:.0f} s (requests), {FRAMING_LIMIT_S:.0f} s (raw
connections: twice nginx's client timeout) or {MODEL_TIMEOUT_S:.0f} s per model file.

## Cases that did not end cleanly

{failures(report)}
"""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="the fixed small subset ./build.sh test runs"
    )
    parser.add_argument(
        "--surface", action="append", choices=SURFACES, help="only these (repeatable)"
    )
    parser.add_argument(
        "--out", type=Path, help=f"write the markdown here (full run: {RESULTS.relative_to(ROOT)})"
    )
    parser.add_argument("--list", action="store_true", help="print the cases' names, run nothing")
    args = parser.parse_args(argv)
    if args.list:
        for surface in args.surface or SURFACES:
            for name in case_names(surface, args.quick):
                print(name)
        return 0
    started = time.monotonic()
    report = run_suite(args.quick, args.surface or SURFACES)
    command = "./build.sh hostile" + (" --quick" if args.quick else "")
    text = markdown(report, command)
    print(table(report))
    print()
    print(failures(report))
    print(f"\nhostile: {len(report.results):,} cases in {time.monotonic() - started:.0f} s")
    out = args.out or (RESULTS if not args.quick and not args.surface else None)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        print(f"hostile: wrote {out}")
    return 1 if any(r.outcome in FAILURES for r in report.results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
