"""The HTTP app (apps/serve) under the real `wasmtime serve`, on loopback.

Each endpoint's answer is compared with the command-line app's for the same
input; each error case must answer its status with a JSON body, and the next
good request must still succeed; a deployment missing a model answers 500 for
that endpoint only. Two servers behind Debian's nginx share the load and survive
one of them stopping. Every loop is bounded in count, every wait in time.
"""

from __future__ import annotations

import io
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_component
from serve_host import UNLIMITED_RATE, Nginx, Server, hey, nginx_binary, stream

pytestmark = pytest.mark.integration

DIGITS = ROOT / "apps" / "digits"
SAMPLES = sorted((DIGITS / "samples").glob("*.png"))
TEXTCLASS = ROOT / "apps" / "textclass"
GOOD_PNG = (DIGITS / "samples" / "digit3_002.png").read_bytes()
TEXTS = [
    "The striker scored twice and the team won the cup.",
    "Parliament passed the new budget after a long debate.",
    "Simmer the onions in butter, then add garlic.",
]
LABELS = ["sports", "politics", "cooking"]
LIMIT = 1 << 20  # apps/serve/app.py MAX_BODY_BYTES
OCR = ROOT / "apps" / "ocr"
OCR_IMAGES = ["receipt.png", "paragraph_q90_444.jpg", "line_upside_down.png"]


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """One server in reuse mode for the whole module (models stay loaded). Idle
    instances are kept for an hour: with wasmtime's 1 s default a loaded machine
    dropped them between requests, and /health kept meeting new instances that
    had loaded nothing (a fresh-clone run failed so)."""
    with Server(reuse=100_000, flags="--idle-instance-timeout 3600s") as s:
        yield s
    assert "panicked" not in s.stderr() and "wasm trap" not in s.stderr(), s.stderr()[-3000:]


def cli_top3(names: list[str]) -> dict[str, list[tuple[int, float]]]:
    """The digits command's answer per file: its order (text output) with its
    probabilities (--json output)."""
    text = run_component(DIGITS, *names, cwd=DIGITS)
    as_json = run_component(DIGITS, "--json", *names, cwd=DIGITS)
    assert text.code == 0 and as_json.code == 0, text.stderr + as_json.stderr
    probs = {line["file"]: line["probs"] for line in as_json.lines}
    answer = {}
    for line in text.stdout.splitlines():
        name, ranked = line.split(": ", 1)
        digits = [int(part.split(" ")[0]) for part in ranked.split("  ")]
        answer[name] = [(d, probs[name][d]) for d in digits]
    return answer


def test_digits_answers_like_the_command(server: Server) -> None:
    names = [f"samples/{p.name}" for p in SAMPLES]
    expected = cli_top3(names)
    for path, name in zip(SAMPLES, names, strict=True):
        status, doc = server.request("POST", "/digits", path.read_bytes(), "image/png")
        assert status == 200, doc
        got = [(d["digit"], d["probability"]) for d in doc["top3"]]
        assert got == expected[name], name
        assert got[0][0] == int(path.name[5]), "the file name carries the true label"


def test_textclass_answers_like_the_command(server: Server, tmp_path: Path) -> None:
    (tmp_path / "texts.txt").write_text("\n".join(TEXTS) + "\n")
    (tmp_path / "labels.txt").write_text("\n".join(LABELS) + "\n")
    done = run_component(TEXTCLASS, "texts.txt", "--labels", "labels.txt", "--json", cwd=tmp_path)
    assert done.code == 0, done.stderr
    body = json.dumps({"texts": TEXTS, "labels": LABELS}).encode()
    status, doc = server.request("POST", "/textclass", body, "application/json; charset=utf-8")
    assert status == 200, doc
    assert len(doc["results"]) == len(TEXTS)
    for got, want in zip(doc["results"], done.lines, strict=True):
        assert got["text"] == want["text"]
        assert [label for label, _ in got["ranking"]] == [label for label, _ in want["ranking"]]
        for (_, a), (_, b) in zip(got["ranking"], want["ranking"], strict=True):
            assert a == pytest.approx(b, abs=1e-9)
    assert [r["ranking"][0][0] for r in doc["results"]] == LABELS


def test_ocr_answers_like_the_command(server: Server) -> None:
    data = ROOT / "tests" / "data" / "ocr"
    done = run_component(OCR, "--json", *OCR_IMAGES, cwd=data, timeout=600)
    assert done.code == 0, done.stderr
    for name, want in zip(OCR_IMAGES, done.lines, strict=True):
        kind = "image/jpeg" if name.endswith(".jpg") else "image/png"
        status, doc = server.request("POST", "/ocr", (data / name).read_bytes(), kind)
        assert status == 200, doc
        assert doc["lines"] == want["lines"], name
        assert doc["lines"] and set(doc["stages"]) >= {"decode", "detect", "recognise"}
    status, doc = server.request("POST", "/ocr", b"\x89PNG\r\n\x1a\nbroken", "image/png")
    assert status == 400 and "the request body" in doc["error"], doc


def test_health_reports_models_uptime_and_requests(server: Server) -> None:
    # A reusing server keeps several instances and any of them may answer, so
    # each property is looked for over a bounded number of tries.
    for _ in range(20):
        server.request("POST", "/digits", GOOD_PNG, "image/png")
        status, health = server.request("GET", "/health")
        assert status == 200 and health["status"] == "ok"
        assert set(health["models"]) == {"digits", "textclass", "ocr", "speak", "completions"}
        assert health["uptime_s"] >= 0
        if health["models"]["digits"]:
            break
    else:
        pytest.fail("no instance that answered /health had the digits model loaded")
    # Consecutive requests may alternate between instances (one is still being
    # handed back when the next request comes), so follow each instance's answers.
    last: dict[str, dict[str, Any]] = {}
    repeated = 0
    for _ in range(40):
        health = server.request("GET", "/health")[1]
        before = last.get(health["instance"])
        if before is not None:
            assert health["requests"] > before["requests"]
            assert health["uptime_s"] >= before["uptime_s"]
            repeated += 1
        last[health["instance"]] = health
    assert repeated >= 20, f"40 /health requests reached {len(last)} instances"


def png(width: int, height: int) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("L", (width, height), 128).save(out, format="PNG")
    return out.getvalue()


JSON = "application/json"


def _speak(**fields: object) -> bytes:
    """A /speak body (NaN as JSON's NaN, which json.loads takes)."""
    return json.dumps(fields).encode()


ERRORS = [
    # method, path, body, content type, status, words in the message
    ("GET", "/nope", None, None, 404, "no endpoint /nope"),
    ("GET", "/", None, None, 404, "/digits, /health, /ocr, /speak, /textclass"),
    ("GET", "/digits", None, None, 405, "/digits takes POST, not GET"),
    ("PUT", "/digits", GOOD_PNG, "image/png", 405, "takes POST, not PUT"),
    ("POST", "/health", b"", JSON, 405, "/health takes GET, not POST"),
    ("POST", "/digits", GOOD_PNG, None, 415, "not no Content-Type"),
    ("POST", "/digits", GOOD_PNG, "text/plain", 415, "image/png or image/jpeg, not text/plain"),
    ("POST", "/textclass", b"{}", "image/png", 415, "takes application/json"),
    ("POST", "/digits", b"garbage", "image/png", 400, "not a PNG, JPEG"),
    ("POST", "/digits", b"", "image/png", 400, "the request body"),
    ("POST", "/digits", GOOD_PNG[:40], "image/png", 400, "the request body"),
    ("POST", "/digits", png(16, 16), "image/png", 400, "16x16; the digits model reads 8x8"),
    ("POST", "/textclass", b"{not json", JSON, 400, "not JSON"),
    ("POST", "/textclass", b"\xff\xfe", JSON, 400, "not JSON"),
    ("POST", "/textclass", b"[1, 2]", JSON, 400, "must be a JSON object"),
    ("POST", "/textclass", b'{"texts": [], "labels": ["a"]}', JSON, 400, '"texts" must be'),
    ("POST", "/textclass", b'{"texts": ["a"], "labels": [1]}', JSON, 400, '"labels" must be'),
    ("POST", "/textclass", b'{"texts": ["a"]}', JSON, 400, '"labels" must be'),
    ("POST", "/textclass", json.dumps({"texts": ["a"] * 60, "labels": ["b"] * 5}).encode(), JSON,
     400, "at most 64 texts and labels"),
    ("POST", "/digits", b"\0" * (LIMIT + 1), "image/png", 413, f"the limit is {LIMIT}"),
    # Hostile bodies: nesting refused before parsing, image sizes from the header.
    ("POST", "/textclass", b"[" * 2000 + b"]" * 2000, JSON, 400,
     "nests 2000 levels deep; at most 64"),
    ("POST", "/textclass", b'{"texts": ' + b"[" * 100_000 + b'"a"' + b"]" * 100_000 + b"}", JSON,
     400, "nests 100001 levels deep"),
    ("POST", "/digits", png(1024, 1024), "image/png", 413, "1024x1024 = 1048576 pixels, more than"),
    ("POST", "/ocr", png(5000, 4000), "image/png", 413, "5000x4000 = 20000000 pixels, more than"),
    # /speak: every error before the first byte of audio.
    ("POST", "/speak", b'{"text": "  "}', JSON, 400, '"text" must be a non-empty string'),
    ("POST", "/speak", b'{"voice": "jf_alpha"}', JSON, 400, '"text" must be a non-empty string'),
    ("POST", "/speak", _speak(text="はい", voice="af_heart"), JSON, 400,
     "unknown voice 'af_heart'; the voices are jf_alpha, jf_gongitsune"),
    ("POST", "/speak", _speak(text="はい", speed=3), JSON, 400,
     "speed must be from 0.5 to 2.0, not 3"),
    ("POST", "/speak", _speak(text="はい", speed=True), JSON, 400, '"speed" must be a number'),
    ("POST", "/speak", _speak(text="はい", speed=float("nan")), JSON, 400, "not nan"),
    ("POST", "/speak", _speak(text="あ" * 501), JSON, 413,
     '"text" has 501 characters; the limit is 500'),
    ("POST", "/speak", _speak(text="はい♪"), JSON, 422,
     "no reading for '♪' (U+266A EIGHTH NOTE)"),
    ("POST", "/speak", b'"text"', JSON, 400, "must be a JSON object"),
    ("POST", "/speak", b'{"text": "\\ud800"}', JSON, 422, "half of a UTF-16 pair"),
    ("POST", "/speak", b'{"text": "a"}', "text/plain", 415, "takes application/json"),
    # Issue 34: client mistakes that were 500s, and work refused from the header.
    ("POST", "/speak", b'{"text": "a\\u0000"}', JSON, 422, "U+0000 (NUL)"),
    ("POST", "/speak", _speak(text="\u0663時"), JSON, 422,
     "no reading for '\u0663' (U+0663 ARABIC-INDIC DIGIT THREE)"),
    ("POST", "/ocr", png(1999, 8), "image/png", 413,
     "a 1999x8 image is too thin to read: rapidocr's rules would run the detector on 7488x1856"),
    ("POST", "/textclass", b"[" * 65 + b'\\"' * 16_000 + b"x", JSON, 400, "nests 65 levels deep"),
    ("POST", "/speak", _speak(text="あ。" * 200), JSON, 413,
     '"text" is too much to say at once: 400 phonemes at speed 1.0 in 200 runs of the model'),
    ("POST", "/speak", _speak(text="W" * 400), JSON, 413, "the limit is 1500: send less text"),
    # Issue 36: a server started without `--preload gemma3-fast` has no language model.
    ("POST", "/v1/completions", b'{"prompt": "Hi"}', JSON, 503, "--reuse N --preload gemma3-fast"),
]  # fmt: skip


@pytest.mark.parametrize("case", ERRORS, ids=[f"{c[4]}-{c[0]}-{c[1]}" for c in ERRORS])
def test_each_error_answers_json_and_the_next_request_succeeds(
    server: Server, case: tuple[str, str, bytes | None, str | None, int, str]
) -> None:
    method, path, body, content_type, want, words = case
    status, doc = server.request(method, path, body, content_type)
    assert status == want, doc
    assert isinstance(doc, dict) and list(doc) == ["error"] and words in doc["error"], doc
    status, doc = server.request("POST", "/digits", GOOD_PNG, "image/png")
    assert status == 200 and doc["top3"][0]["digit"] == 3


SPEAK = ROOT / "apps" / "speak"
# Four sentences, the first the shortest: its audio is on the wire while the
# other three are still being made.
SPEECH = (
    "はい。3時に駅で会いましょう。新幹線は東京から大阪まで約2時間半で着きます。"
    "明日の会議は午前10時からです。"
)


def test_speak_streams_the_commands_audio_sentence_by_sentence(
    server: Server, tmp_path: Path
) -> None:
    """/speak answers the speak command's samples for the same text (after a
    header with the streaming sizes), sent as each sentence is made: the first
    sentence's audio arrives long before the last byte."""
    cli = run_component(SPEAK, SPEECH, "-o", "speech.wav", cwd=tmp_path, timeout=600)
    assert cli.code == 0, cli.stderr
    want = (tmp_path / "speech.wav").read_bytes()
    body = json.dumps({"text": SPEECH, "voice": "jf_alpha", "speed": 1.0}).encode()
    got = stream(server.port, "/speak", body, JSON, skip=44)
    assert got.status == 200 and got.headers["content-type"] == "audio/wav"
    assert "content-length" not in got.headers and got.headers["transfer-encoding"] == "chunked"
    data = got.data
    assert data[:4] == b"RIFF" and data[4:8] == b"\xff\xff\xff\xff" and data[36:44] == (
        b"data\xff\xff\xff\xff"
    )
    assert data[8:36] == want[8:36] and data[44:] == want[44:]
    # From the headers on (they come after the model is loaded and the text read).
    first, total = got.first_s - got.header_s, got.total_s - got.header_s
    assert first < 0.5 * total, (first, total)


@pytest.mark.skipif(nginx_binary() is None, reason="needs nginx (./build.sh test installs it)")
def test_speak_streams_through_deploys_nginx() -> None:
    """Behind `./build.sh deploy`'s nginx (which buffers proxied answers) the
    stream still flows: nginx passes each full buffer on, so the first audio
    arrives before half of the answer's time, as without nginx. The second
    request, on a warm instance."""
    body = json.dumps({"text": SPEECH, "voice": "jf_alpha", "speed": 1.0}).encode()
    with Server(reuse=100, workers=1) as service:
        stream(service.port, "/speak", body, JSON, skip=44)  # loads the model
        got = stream(service.port, "/speak", body, JSON, skip=44)
    assert got.status == 200 and got.headers["server"].startswith("nginx")
    assert got.headers["transfer-encoding"] == "chunked" and len(got.data) > 44 + 24_000 * 2
    first, total = got.first_s - got.header_s, got.total_s - got.header_s
    assert first < 0.5 * total, (first, total)


def test_405_names_the_allowed_method(server: Server) -> None:
    from serve_host import request

    status, _, headers = request(server.port, "GET", "/textclass")
    assert status == 405 and headers["allow"] == "POST"


def test_a_huge_streamed_body_is_cut_off_at_the_limit(server: Server) -> None:
    """A chunked body without Content-Length: the server stops reading after
    the limit and answers 413; the client never finishes sending 64 MiB."""
    chunk = b"\0" * (64 << 10)
    sent = 0
    answer = b""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(
            b"POST /digits HTTP/1.1\r\nHost: localhost\r\nContent-Type: image/png\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        deadline = time.monotonic() + 60
        sock.setblocking(False)
        for _ in range(1024):  # at most 64 MiB
            if time.monotonic() > deadline:
                break
            try:
                answer += sock.recv(65536)
                if answer:
                    break
            except BlockingIOError:
                pass
            try:
                sock.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                sent += len(chunk)
            except BlockingIOError:
                time.sleep(0.01)
            except OSError:
                break
        sock.setblocking(True)
        sock.settimeout(30)
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            more = sock.recv(65536)
            if not more:
                break
            answer += more
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b'"error": "the body is over the limit of 1048576 bytes"' in answer
    assert sent < 32 << 20, "the server read far past its limit"
    status, doc = server.request("POST", "/digits", GOOD_PNG, "image/png")
    assert status == 200


def test_a_missing_model_answers_500_and_the_rest_still_works(tmp_path: Path) -> None:
    """A deployment without /models: /textclass fails with 500 and JSON, every
    time (a failed load is retried, not kept), and /digits is unaffected."""
    dirs = {"/app": ROOT / "apps" / "serve", "/apps/digits": DIGITS}
    # wasmtime drops an instance idle for 1 s by default; on a loaded machine the
    # gap between two requests can exceed that, and the instance that loaded
    # digits is gone before /health can ask it.
    with Server(reuse=1000, dirs=dirs, flags="--idle-instance-timeout 3600s") as s:
        body = json.dumps({"texts": ["a"], "labels": ["b"]}).encode()
        for _ in range(2):
            status, doc = s.request("POST", "/textclass", body, JSON)
            assert status == 500 and "minilm" in doc["error"], doc
            status, doc = s.request("POST", "/digits", GOOD_PNG, "image/png")
            assert status == 200 and doc["top3"][0]["digit"] == 3
        # Any of the server's instances may answer; each has tried textclass or
        # not, none may have kept it. Bounded: an instance that has digits shows up.
        for _ in range(20):
            s.request("POST", "/digits", GOOD_PNG, "image/png")
            models = s.request("GET", "/health")[1]["models"]
            assert models["textclass"] is False
            if models["digits"]:
                break
        else:
            pytest.fail("no instance reported the digits model loaded")
        assert "wasm trap" not in s.stderr() and "panicked" not in s.stderr()


def test_fresh_instances_answer_alike_and_keep_nothing() -> None:
    """Without --reuse each request gets a new instance: same answers, nothing kept."""
    seen: set[str] = set()
    with Server() as s:
        for _ in range(3):
            status, doc = s.request("POST", "/digits", GOOD_PNG, "image/png")
            assert status == 200 and doc["top3"][0]["digit"] == 3
            status, health = s.request("GET", "/health")
            assert health["requests"] == 1 and health["models"]["digits"] is False
            seen.add(health["instance"])
        assert len(seen) == 3, "every request got its own instance"


@pytest.mark.skipif(nginx_binary() is None, reason="needs nginx (./build.sh test installs it)")
def test_nginx_balances_two_servers_and_survives_one_stopping() -> None:
    with (
        Server(reuse=100_000) as a,
        Server(reuse=100_000) as b,
        Nginx([a.port, b.port], UNLIMITED_RATE) as lb,
    ):
        result = hey(lb.url("/digits"), requests=400, concurrency=8, body=GOOD_PNG,
                     content_type="image/png", timeout=300)  # fmt: skip
        assert result.statuses == {200: 400}, result
        counts = lb.upstream_counts()
        served = [counts.get(f"127.0.0.1:{s.port}", 0) for s in (a, b)]
        assert sum(served) >= 400 and min(served) >= 100, counts
        a.stop()
        result = hey(lb.url("/digits"), requests=200, concurrency=8, body=GOOD_PNG,
                     content_type="image/png", timeout=300)  # fmt: skip
        assert result.statuses == {200: 200}, result
