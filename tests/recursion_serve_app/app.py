"""A test-only HTTP app for tests/test_recursion.py and tests/test_serve_traps.py.

    GET  /recurse/CONSTRUCT?DEPTH,DEPTH,...   recursion.attempt's lines, as text
    POST /digits                              the digits model's best digit for an 8x8 PNG
    GET  /trap                                traps the instance on purpose
    GET  /spin?SECONDS                        a pure-Python loop that long (a runaway request)
    GET  /health                              "ok" (the test harness waits for it)

``/trap`` stands for any bug that still traps a guest: it nests tuples a
million deep and hashes them (CPython has no guard there; natively the same
code crashes the interpreter), so the instance runs out of wasm stack.
"""

from __future__ import annotations

import time

import digits
from componentize_py_types import Err, Ok
from recursion import CONSTRUCTS, attempt
from wit_world import exports
from wit_world.imports import streams, types

from wasinn import Model

DIGITS_MODEL = "/apps/digits/model/digits.xml"


def read_body(request: types.IncomingRequest) -> bytes:
    parts: list[bytes] = []
    with request.consume() as body, body.stream() as stream:
        while True:
            try:
                parts.append(stream.blocking_read(65536))
            except Err as e:
                if isinstance(e.value, streams.StreamError_Closed):
                    return b"".join(parts)
                raise


def trap() -> None:
    nested: tuple[object, ...] = ()
    for _ in range(1_000_000):
        nested = (nested,)
    hash(nested)


def answer(request: types.IncomingRequest) -> tuple[int, str]:
    path, _, query = (request.path_with_query() or "/").partition("?")
    if path.startswith("/recurse/") and path[len("/recurse/") :] in CONSTRUCTS:
        depths = [int(d) for d in query.split(",") if d]
        return 200, "\n".join(attempt(path[len("/recurse/") :], depths))
    if path == "/digits":
        with Model.load(DIGITS_MODEL) as model:
            best = digits.top3(model, digits.pixels(read_body(request), "body"))[0][0]
        return 200, str(best)
    if path == "/health":
        return 200, "ok"
    if path == "/spin":
        until = time.monotonic() + float(query or "1")
        while time.monotonic() < until:
            pass
        return 200, "spun"
    if path == "/trap":
        trap()
        return 500, "the trap did not happen"
    return 404, f"no endpoint {path}"


class IncomingHandler(exports.IncomingHandler):
    def handle(self, request: types.IncomingRequest, response_out: types.ResponseOutparam) -> None:
        try:
            status, text = answer(request)
        except Exception as e:  # noqa: BLE001 - the test reads what was raised
            status, text = 500, f"{type(e).__name__}: {e}"
        data = text.encode()
        response = types.OutgoingResponse(types.Fields.from_list([("content-type", b"text/plain")]))
        response.set_status_code(status)
        body = response.body()
        types.ResponseOutparam.set(response_out, Ok(response))
        with body.write() as stream:
            for start in range(0, len(data), 4096):
                stream.blocking_write_and_flush(data[start : start + 4096])
        types.OutgoingBody.finish(body, None)
