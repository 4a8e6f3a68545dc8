"""POST /v1/completions (apps/serve/completions.py) under `./build.sh serve serve
--reuse N --preload gemma3-fast`: OpenAI's completions shape, whole or as
Server-Sent Events, from the generate app's fast Gemma 3 variant.

The oracle for the text is OpenVINO's own Python API running the same IR
natively, greedily, one infer request per generation (apps/generate/
export_check.py), decoded by transformers' tokenizer for the GGUF.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import ROOT, app_module
from serve_host import Server, request

GEMMA3 = ROOT / "build" / "models" / "gemma3"
PATH = "/v1/completions"
JSON = {"content-type": "application/json"}
PROMPTS = [
    "The three primary colours are",
    "def fibonacci(n):\n",
    "東京は日本の",
]


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """One reusing server with the model preloaded; an hour's idle timeout so
    that no instance (and its 1.5 s model load) is dropped between tests."""
    options = ("--preload", "gemma3-fast")
    with Server(reuse=100_000, flags="--idle-instance-timeout 3600s", options=options) as s:
        yield s
    assert "panicked" not in s.stderr() and "wasm trap" not in s.stderr(), s.stderr()[-3000:]


@pytest.fixture(scope="module")
def hf_tokenizer() -> Any:
    os.environ["HF_HUB_OFFLINE"] = "1"
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(GEMMA3 / "hf-tokenizer")


def complete(server: Server, **fields: object) -> tuple[int, Any]:
    status, doc, _ = request(server.port, "POST", PATH, json.dumps(fields).encode(), JSON, 300)
    return status, doc


def events(server: Server, **fields: object) -> tuple[list[Any], float, float]:
    """The streamed answer's events (``[DONE]`` as the string), the seconds to
    the first event and to the end."""
    body = json.dumps({**fields, "stream": True}).encode()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=300)
    try:
        start = time.perf_counter()
        conn.request("POST", PATH, body=body, headers=JSON)
        response = conn.getresponse()
        assert response.status == 200, response.read()
        assert response.getheader("content-type") == "text/event-stream"
        assert response.getheader("x-accel-buffering") == "no"
        data, first = b"", None
        while piece := response.read1(1 << 16):
            data += piece
            if first is None and b"\n\n" in data:
                first = time.perf_counter() - start
        total = time.perf_counter() - start
    finally:
        conn.close()
    assert data.endswith(b"\n\n") and first is not None
    parsed = []
    for event in data.decode().split("\n\n")[:-1]:
        assert event.startswith("data: "), event
        text = event.removeprefix("data: ")
        parsed.append(text if text == "[DONE]" else json.loads(text))
    return parsed, first, total


def test_greedy_completions_equal_openvino_natively(server: Server, hf_tokenizer: Any) -> None:
    export_check = app_module("generate", "export_check")
    compiled = export_check.compile_ir(GEMMA3 / "gemma3-fast" / "model.xml")
    for prompt in PROMPTS:
        ids = hf_tokenizer(prompt).input_ids
        native = export_check.greedy_tokens(compiled, ids, 32)
        if hf_tokenizer.eos_token_id in native:
            native = native[: native.index(hf_tokenizer.eos_token_id)]
        status, doc = complete(server, prompt=prompt, max_tokens=32, temperature=0)
        assert status == 200, doc
        assert doc["object"] == "text_completion" and doc["model"] == "gemma-3-270m"
        assert doc["id"].startswith("cmpl-") and isinstance(doc["created"], int)
        (choice,) = doc["choices"]
        assert choice["text"] == hf_tokenizer.decode(native), prompt
        assert choice["finish_reason"] == ("length" if len(native) == 32 else "stop")
        assert doc["usage"] == {
            "prompt_tokens": len(ids),
            "completion_tokens": len(native),
            "total_tokens": len(ids) + len(native),
        }


def test_streaming_sends_each_piece_as_it_is_made(server: Server) -> None:
    fields = {"prompt": "Once upon a time", "max_tokens": 96, "temperature": 0.9, "seed": 11}
    status, whole = complete(server, **fields)
    assert status == 200, whole
    got, first_s, total_s = events(server, **fields, stream_options={"include_usage": True})
    assert got[-1] == "[DONE]"
    *pieces, last, usage = got[:-1]
    assert len({e["id"] for e in got[:-1]}) == 1
    assert all(e["choices"][0]["finish_reason"] is None for e in pieces)
    finish = whole["choices"][0]["finish_reason"]
    assert last["choices"][0] == {"index": 0, "text": "", "logprobs": None, "finish_reason": finish}
    # The same seed gives the same text, whole or streamed.
    assert "".join(e["choices"][0]["text"] for e in pieces) == whole["choices"][0]["text"]
    assert usage["choices"] == [] and usage["usage"] == whole["usage"]
    assert len(pieces) > 10
    # The first piece leaves as soon as its token is chosen, not with the rest:
    # the ~95 tokens after it take over a second to make (~60 a second). (The
    # time to the first piece itself may include a new instance's model load.)
    assert total_s - first_s > 0.5, (first_s, total_s)


def test_seed_stop_and_finish_reason(server: Server) -> None:
    fields = {"prompt": "My favourite animals are", "max_tokens": 48, "temperature": 1.0}
    a = complete(server, **fields, seed=7)[1]["choices"][0]["text"]
    b = complete(server, **fields, seed=7)[1]["choices"][0]["text"]
    others = {complete(server, **fields, seed=s)[1]["choices"][0]["text"] for s in (8, 9, 10)}
    assert a == b and len(others | {a}) > 1
    # OpenAI's fields at their neutral values, as some clients send them, are taken.
    neutral: dict[str, object] = {
        "presence_penalty": 0, "frequency_penalty": 0.0, "best_of": 1, "echo": False,
        "logprobs": None, "suffix": None, "logit_bias": {}, "user": None, "n": 1,
    }  # fmt: skip
    status, doc = complete(server, prompt="Hi", max_tokens=2, **neutral)
    assert status == 200, doc
    # A stop string ends the text before it.
    whole = complete(server, prompt="1, 2, 3, 4,", max_tokens=24, temperature=0)[1]
    assert " 7," in whole["choices"][0]["text"]
    cut = complete(server, prompt="1, 2, 3, 4,", max_tokens=24, temperature=0, stop=[" 7,"])[1]
    text = whole["choices"][0]["text"]
    assert cut["choices"][0] == {
        "index": 0, "text": text[: text.index(" 7,")], "logprobs": None, "finish_reason": "stop"
    }  # fmt: skip


BAD = [
    (b"{}", 400, '"prompt" must be a non-empty string'),
    (b'{"prompt": ""}', 400, '"prompt" must be a non-empty string'),
    (b'{"prompt": ["a", "b"]}', 400, "one prompt per request"),
    (b'{"prompt": [2, 651]}', 400, "token ids are not taken here"),
    (b'{"prompt": "a\\ud800b"}', 400, "half of a UTF-16 surrogate pair at character 1"),
    (b'{"prompt": "a", "max_tokens": 513}', 400,
     '"max_tokens" must be a whole number from 1 to 512, not 513'),
    (b'{"prompt": "a", "max_tokens": 0}', 400, '"max_tokens" must be a whole number from 1 to 512'),
    (b'{"prompt": "a", "max_tokens": 2.5}', 400, '"max_tokens" must be a whole number'),
    (b'{"prompt": "a", "max_tokens": 1' + b"0" * 400 + b"}", 400, "not 10000000000000000000"),
    (b'{"prompt": "a", "temperature": "hot"}', 400, '"temperature" must be a number'),
    (b'{"prompt": "a", "temperature": 1' + b"0" * 400 + b"}", 400,
     '"temperature" must be a number of sensible size'),
    (b'{"prompt": "a", "temperature": 1e999}', 400, '"temperature" must be a finite number'),
    (b'{"prompt": "a", "top_p": 0}', 400, "top_p must be a number above 0"),
    (b'{"prompt": "a", "top_k": 0}', 400, '"top_k" must be a whole number from 1 to 1024, not 0'),
    (b'{"prompt": "a", "seed": -1}', 400, '"seed" must be a whole number from 0 to 1844'),
    (b'{"prompt": "a", "stream_options": {"include_usage": true}}', 400,
     '"stream_options" is only for "stream": true'),
    (b'{"prompt": "a", "stop": ["1", "2", "3", "4", "5"]}', 400, "at most 4"),
    (b'{"prompt": "a", "stop": ["' + b"x" * 65 + b'"]}', 400, "1 to 64 characters, not 65"),
    (b'{"prompt": "a", "stream": "yes"}', 400, '"stream" must be true or false'),
    (b'{"prompt": "a", "n": 2}', 400, '"n" must be 1'),
    (b'{"prompt": "a", "frequency_penalty": 1}', 400,
     '"frequency_penalty" is not supported here: leave it out, or give 0'),
    (b'{"prompt": "a", "logit_bias": {"5": 1}}', 400, '"logit_bias" is not supported here'),
    (b'{"prompt": "a", "foo": 1}', 400, 'unknown field "foo"'),
    (b'{"prompt": "a", "model": "gpt-4"}', 404, '"model" "gpt-4" is not served here'),
    (b'"a"', 400, "must be a JSON object"),
    (b"{", 400, "JSON"),
    (json.dumps({"prompt": "a" * 16_001}).encode(), 413, "16,001 characters; the limit is 16,000"),
    # 3,000 private-use characters, a token each: refused after counting.
    (json.dumps({"prompt": "\ue000" * 3000}).encode(), 413, "3,001 tokens; the limit is 1,024"),
]  # fmt: skip


@pytest.mark.parametrize("case", BAD, ids=[f"{c[1]}-{i}" for i, c in enumerate(BAD)])
def test_bad_requests_get_a_json_error_before_any_work(
    server: Server, case: tuple[bytes, int, str]
) -> None:
    body, want, words = case
    start = time.perf_counter()
    status, doc, _ = request(server.port, "POST", PATH, body, JSON)
    assert status == want, doc
    assert isinstance(doc, dict) and list(doc) == ["error"] and words in doc["error"], doc
    # No token was generated: a refusal costs milliseconds (the 413s tokenize).
    assert time.perf_counter() - start < 5


def test_a_client_that_leaves_stops_the_generation(server: Server) -> None:
    body = json.dumps({"prompt": "1, 2, 3,", "max_tokens": 512, "temperature": 0,
                       "stream": True}).encode()  # fmt: skip
    with socket.create_connection(("127.0.0.1", server.port), timeout=120) as sock:
        sock.sendall(
            b"POST /v1/completions HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        data = b""
        while b"data:" not in data:
            data += sock.recv(4096)
    # Gone after the first event: the next write fails and the loop stops there.
    deadline = time.monotonic() + 60
    while "the client left" not in server.stderr() and time.monotonic() < deadline:
        time.sleep(0.2)
    line = next(x for x in server.stderr().splitlines() if "the client left" in x)
    made = int(line.split("(")[1].split(" tokens")[0])
    assert made < 100, line
    status, doc = complete(server, prompt="Hello", max_tokens=4, temperature=0)
    assert status == 200 and doc["usage"]["completion_tokens"] >= 1
