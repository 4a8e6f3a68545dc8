"""`./build.sh deploy`'s bounds on clients and workers, for real (issue 34):
nginx's per-client rate, its per-worker concurrency, the real client address
from a trusted proxy, JSON for every error nginx writes itself and no version
in its answers; workers that run unprivileged and are given only the folders
their routes read.

Unit checks of the configuration itself are in tests/test_serve_limits.py.
"""

from __future__ import annotations

import json
import os
import pwd
import socket
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from serve_host import ONE_CLIENT_UNLIMITED, Server, hey, nginx_binary, request

sys.path.insert(0, str(ROOT / "tools"))
import deploy  # noqa: E402

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(nginx_binary() is None, reason="needs nginx (./build.sh test installs it)"),
]

JSON = "application/json"


def raw(port: int, data: bytes) -> tuple[bytes, dict[str, str], Any]:
    """Send ``data`` as it is; the status line, headers and JSON body of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(data)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    return lines[0].encode(), {k.lower(): v for k, v in headers.items()}, json.loads(body)


@pytest.fixture(scope="module")
def service() -> Any:
    """The deployment with its default limits: one worker, reusing instances."""
    with Server(reuse=1000, workers=1) as s:
        yield s


def test_nginx_says_no_version_and_answers_its_own_errors_in_json(service: Server) -> None:
    status, _, headers = request(service.port, "GET", "/health")
    assert status == 200 and headers["server"] == "nginx"
    cases = [
        (b"GARBAGE\r\n\r\n", b"HTTP/1.1 400", "not valid HTTP/1.1"),
        (b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", b"HTTP/1.1 414", "too long"),
        (b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 20_000 + b"\r\n\r\n", b"HTTP/1.1 431",
         "headers are too large"),
    ]  # fmt: skip
    for data, status_line, words in cases:
        line, headers, doc = raw(service.port, data)
        assert line.startswith(status_line), line
        assert headers["content-type"] == JSON and words in doc["error"], doc
        assert headers["server"] == "nginx"


def test_a_client_over_its_rate_gets_json_429s(service: Server) -> None:
    """50 requests a second with bursts of 100 (tools/deploy.py): 400 requests sent
    as fast as four connections go are mostly refused, each with a JSON 429."""
    result = hey(service.url("/health"), requests=400, concurrency=4, timeout=120)
    assert set(result.statuses) == {200, 429}, result
    # The burst and whatever the rate adds while hey runs pass; the rest is refused.
    assert result.statuses[200] >= 80 and result.statuses[429] >= 50, result
    # One client's requests one after another, far faster than 50 a second: within
    # a bounded number, one is refused, with nginx's JSON naming the limit.
    for _ in range(300):
        status, doc, headers = request(service.port, "GET", "/health")
        if status == 429:
            break
    assert status == 429 and headers["content-type"] == "application/json", (status, doc)
    assert "at most 50 a second (bursts of 100)" in doc["error"], doc


def test_bodies_over_an_endpoints_limit_get_413_and_leave_the_workers_in_service() -> None:
    """A worker that answered 413 with a big body unread reset the connection: nginx,
    still sending, answered 503 and took the worker out of service for everyone
    (the hostile suite's json/nest-objects-1000000 found it)."""
    body = b"[" * 6_000_000  # /textclass takes 1 MiB; nginx passes up to 17
    headers = {"content-type": JSON}
    with Server(reuse=1000, workers=2, options=ONE_CLIENT_UNLIMITED) as s:
        with ThreadPoolExecutor(4) as pool:
            answers = list(
                pool.map(lambda _: request(s.port, "POST", "/textclass", body, headers), range(20))
            )
        assert [a[0] for a in answers] == [413] * 20, [a[:2] for a in answers if a[0] != 413]
        assert "the limit is 1048576" in answers[0][1]["error"]
        assert request(s.port, "GET", "/health")[0] == 200


def test_workers_run_unprivileged_and_see_only_what_their_routes_read(service: Server) -> None:
    (pid,) = service.worker_pids()
    argv = [a for a in Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0") if a]
    uid = int(Path(f"/proc/{pid}/status").read_text().split("Uid:")[1].split()[0])
    if os.geteuid() == 0:
        # As nobody when nobody can read what the worker is given; else as root, said so.
        blocked = deploy.unreadable_by_others(deploy.files_read(argv))
        if blocked is None:
            assert uid == pwd.getpwnam("nobody").pw_uid
        else:
            assert uid == 0 and f"nobody cannot read {blocked}" in service.stderr()
    mapped = sorted(argv[i + 1].split("::")[1] for i, a in enumerate(argv) if a == "--dir")
    assert mapped == ["/apps/digits/model", "/models/gemma3/gemma3-fast",
                      "/models/gemma3/tokenizer", "/models/minilm", "/models/ocr",
                      "/models/openjtalk", "/models/speak"]  # fmt: skip
    assert argv[argv.index("--max-concurrent-requests") + 1] == "2"


def test_a_full_worker_answers_503_with_retry_after() -> None:
    """One request at a time per worker, none waiting (--concurrency 1 --queue 1):
    while /speak is speaking, the others get nginx's JSON 503 at once."""
    text = json.dumps({"text": "今日はいい天気ですね。" * 8}).encode()
    with Server(reuse=100, workers=1, options=("--concurrency", "1", "--queue", "1")) as s:
        assert request(s.port, "POST", "/speak", text, {"content-type": JSON}, 300)[0] == 200

        def speak(_: int) -> tuple[int, Any, dict[str, str]]:
            return request(s.port, "POST", "/speak", text, {"content-type": JSON}, 300)

        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(speak, range(4)))
    statuses = sorted(a[0] for a in answers)
    assert statuses[0] == 200 and 503 in statuses, statuses
    for status, doc, headers in answers:
        if status == 503:
            assert headers["retry-after"] == "1" and "no worker could take" in doc["error"]


def test_a_trusted_proxy_names_the_client_the_limits_count() -> None:
    """Behind a proxy every client comes from its address; with --trusted-proxy,
    X-Forwarded-For names the client, and each client has its own rate."""
    options = ("--rate", "1", "--burst", "0", "--trusted-proxy", "127.0.0.1")
    with Server(reuse=100, workers=1, options=options) as s:

        def health(client: str) -> int:
            return request(s.port, "GET", "/health", None, {"x-forwarded-for": client})[0]

        assert [health("203.0.113.7"), health("203.0.113.7"), health("198.51.100.9")] == [
            200, 429, 200,
        ]  # fmt: skip
