"""The served completions benchmark: apps/serve's ``POST /v1/completions``
(Gemma 3 270M, the generate app's fast variant, preloaded by the host) as
Server-Sent Events, under one worker and behind nginx, side by side:

- serve: ``WASMTIME_FLAGS="--idle-instance-timeout 3600s" ./build.sh serve
  serve --reuse 100000 --preload gemma3-fast`` (one worker);
- deploy: the same with ``./build.sh deploy ... --workers 2`` (nginx in
  front of two workers; its default per-client rate and burst).

Both run build.sh's default ``--concurrency 2``. Figures, per server:

- time to first token (the arrival of the first event that carries text,
  from sending the request) for a short prompt ("1, 2, 3, 4,", 12 tokens
  with ``<bos>``) and a long one (~500 tokens: whole lines from the start of
  CPython's LICENSE.txt, as bench/generate_bench.py takes its long prompt),
  cold and warm. Cold: the first request to fresh worker processes (every
  worker is stopped and tools/deploy.py starts it again; nothing is sent to
  it before), so it includes making the instance, the host's load of the
  259 MiB model into it and the app's tokenizer load; each prompt gets fresh
  workers of its own. The same once more with ``GET /health`` sent first
  splits the host's load from the app's, and a second request sent beside a
  busy one shows a new instance made under load. Warm: the median of 5
  requests, one at a time, every instance having answered before;
- decode tokens/s with 1 and 4 concurrent streaming clients: temperature 0,
  ``max_tokens`` 128, counting prompts (which do not reach ``<eos>`` within
  128 tokens: the table says if one did), the tokens counted from the usage
  event (``stream_options.include_usage``). Per client: tokens after the
  first / the time from the first text event to the finish event;
  aggregate: all tokens / the time from the first request sent to the last
  finish. Time to first token and to the response headers per client, and
  how many instances (the ``x-instance`` header) answered;
- each worker's peak RSS (``VmHWM``) with one instance, two, and warm at
  the end, and its RSS then.

    ./build.sh bench --only completions      # results/completions.{md,json}
    .venv/bin/python bench/completions_bench.py [--quick] [--out DIR]

Not part of ``./build.sh bench`` or ``--quick`` (it needs apps/generate's
model, and each server loads it several times over): only ``--only
completions`` runs it. About 3 minutes.
"""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _folder in ("tests", "tools", "bench"):
    if str(ROOT / _folder) not in sys.path:
        sys.path.insert(0, str(ROOT / _folder))
import deploy  # noqa: E402  (tools/: whether a port accepts connections)
import generate_bench  # noqa: E402  (bench/: the long prompt, the same way)
import serve_host  # type: ignore[import-not-found, unused-ignore]  # noqa: E402  (tests/)

PATH = "/v1/completions"
JSON = {"content-type": "application/json"}
TOKENIZER = ROOT / "build" / "models" / "gemma3" / "tokenizer" / "tokenizer.bin"
REUSE = 100_000
FLAGS = "--idle-instance-timeout 3600s"
PRELOAD = ("--preload", "gemma3-fast")
WORKERS = 2
SHORT_PROMPT = "1, 2, 3, 4,"
LONG_TOKENS = 500
#: The decode runs' prompts, one per client: greedy counting, which goes on
#: past 128 tokens without an ``<eos>``.
COUNTING = ("1, 2, 3, 4,", "10, 11, 12, 13,", "2, 4, 6, 8,", "100, 101, 102, 103,")
NEW_TOKENS = 128
#: A pause before a request meant for the instance that has just answered:
#: sent at once, it sometimes got a new instance (wasmtime had not yet taken
#: the idle one back; seen on the busy 2-core machine, see the report).
SETTLE_S = 0.25
#: Tokens of each whole (not streamed) answer of the concurrency check.
WHOLE_TOKENS = 48
#: Tokens asked for where only the time to the first one counts.
TTFT_TOKENS = 4
WARM = 5
CLIENTS = (1, 4)
#: Rounds of each decode run (1 client, then 4 at once).
ROUNDS = {1: 3, 4: 2}
QUICK_WARM = 3
QUICK_ROUNDS = {1: 1, 4: 1}
#: Lines of a server's log that say something went wrong.
BAD_WORDS = ("panicked", "wasm trap", "Traceback", "error", "Error")

COMMANDS = {
    "serve": f'WASMTIME_FLAGS="{FLAGS}" ./build.sh serve serve --reuse {REUSE} '
    f"--preload {PRELOAD[1]}",
    "deploy": f'WASMTIME_FLAGS="{FLAGS}" ./build.sh deploy serve --reuse {REUSE} '
    f"--preload {PRELOAD[1]} --workers {WORKERS}",
}


# ---------------------------------------------------------------- one request


def sse(port: int, prompt: str, max_tokens: int, timeout: float = 300.0) -> dict[str, Any]:
    """One streamed completion (greedy, usage included), read event by event:
    seconds from sending to the first text event (``first_s``) and to the
    finish event (``finish_s``), the usage, and how the events arrived
    (``events`` in ``reads`` reads: nginx batching them would show as far
    fewer reads than events and a late first event)."""
    fields = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True,
              "stream_options": {"include_usage": True}}  # fmt: skip
    body = json.dumps(fields).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    start = time.perf_counter()
    first = finish = None
    usage: dict[str, int] = {}
    reason = None
    events = reads = 0
    done = False
    try:
        conn.request("POST", PATH, body=body, headers=JSON)
        response = conn.getresponse()
        header = time.perf_counter() - start
        instance = response.getheader("x-instance")
        if response.status != 200:
            raise RuntimeError(f"{PATH} answered {response.status}: {response.read()[:300]!r}")
        buffer = b""
        while piece := response.read1(1 << 16):
            now = time.perf_counter() - start
            reads += 1
            buffer += piece
            *complete, buffer = buffer.split(b"\n\n")
            for raw in complete:
                events += 1
                text = raw.decode().removeprefix("data: ")
                if text == "[DONE]":
                    done = True
                    continue
                event = json.loads(text)
                if event.get("usage"):
                    usage = event["usage"]
                for choice in event["choices"]:
                    if choice["text"] and first is None:
                        first = now
                    if choice["finish_reason"] is not None:
                        finish, reason = now, choice["finish_reason"]
        total = time.perf_counter() - start
    finally:
        conn.close()
    if not done or first is None or finish is None or not usage:
        raise RuntimeError(f"{PATH}: an incomplete stream ({events} events, [DONE]: {done})")
    tokens = usage["completion_tokens"]
    decode = (tokens - 1) / (finish - first) if tokens > 1 and finish > first else None
    return {"start": start, "header_s": header, "instance": instance, "first_s": first,
            "finish_s": finish, "total_s": total, "prompt_tokens": usage["prompt_tokens"],
            "tokens": tokens,
            "finish_reason": reason, "decode_tok_s": decode, "events": events,
            "reads": reads}  # fmt: skip


def whole(port: int, prompt: str, max_tokens: int) -> dict[str, Any]:
    """One completion answered whole (not streamed): seconds to the end and
    the instance that answered."""
    fields = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0}
    start = time.perf_counter()
    status, doc, headers = serve_host.request(
        port, "POST", PATH, json.dumps(fields).encode(), JSON, timeout=300
    )
    if status != 200:
        raise RuntimeError(f"{PATH} answered {status}: {doc}")
    return {"start": start, "total_s": time.perf_counter() - start,
            "instance": headers.get("x-instance"),
            "tokens": doc["usage"]["completion_tokens"]}  # fmt: skip


def health(port: int) -> dict[str, Any]:
    """Seconds ``GET /health`` takes (on a fresh worker: a new instance, the
    host's model load included) and the instance that answered."""
    start = time.perf_counter()
    status, doc, headers = serve_host.request(port, "GET", "/health", timeout=120)
    if status != 200:
        raise RuntimeError(f"/health answered {status}: {doc}")
    return {"seconds": time.perf_counter() - start, "instance": headers.get("x-instance")}


def at_once(work: list[Callable[[], dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each of ``work`` in a thread of its own, all released together."""
    results: list[dict[str, Any] | BaseException | None] = [None] * len(work)
    gate = threading.Barrier(len(work))

    def run(i: int) -> None:
        gate.wait()
        try:
            results[i] = work[i]()
        except BaseException as exc:  # re-raised below, in the caller's thread
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(work))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out = []
    for r in results:
        if not isinstance(r, dict):
            raise RuntimeError(f"a concurrent request failed: {r!r}")
        out.append(r)
    return out


# ---------------------------------------------------------------- the workers


def worker_ports(server: Any) -> dict[int, int]:
    """Each worker's pid -> the port it listens on (its ``--addr``)."""
    ports = {}
    for pid in server.worker_pids():
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        ports[pid] = int(argv[argv.index("--addr") + 1].rsplit(":", 1)[1])
    return ports


def age_s(pid: int) -> float:
    """How long a process has been running, from /proc."""
    start_ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    return uptime - start_ticks / os.sysconf("SC_CLK_TCK")


def restart_workers(server: Any) -> dict[int, int]:
    """Stop every worker; tools/deploy.py starts each again. Returns the new
    ones (pid -> port) once they accept connections, nothing sent to them.
    A worker is stopped only once it has lived ``deploy.HEALTHY_AFTER_S``, so
    that deploy.py starts it again at once, as after a crash in service,
    rather than after the pause it leaves a worker that dies at start-up."""
    old = worker_ports(server)
    youngest = min(age_s(pid) for pid in old)
    time.sleep(max(0.0, deploy.HEALTHY_AFTER_S + 0.2 - youngest))
    for pid in old:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            new = worker_ports(server)
        except (OSError, ValueError):  # a worker between exec and its argv
            new = {}
        if (len(new) == len(old) and not set(new) & set(old)
                and all(deploy.listening(p) for p in new.values())):  # fmt: skip
            return new
        time.sleep(0.05)
    raise TimeoutError(f"the workers did not come back:\n{server.stderr()[-3000:]}")


def memory(server: Any) -> list[dict[str, float]]:
    """Each worker's peak RSS and RSS now, in MiB."""
    return [{"pid": pid, "peak_rss_mb": serve_host.status_kib(pid, "VmHWM") / 1024,
             "rss_mb": serve_host.status_kib(pid, "VmRSS") / 1024}
            for pid in sorted(worker_ports(server))]  # fmt: skip


def log_problems(log: str) -> list[str]:
    """The lines of a server's log that look like trouble (the deliberate
    restarts are counted apart)."""
    return [line for line in log.splitlines()
            if any(w in line for w in BAD_WORDS) and "killed by signal" not in line]  # fmt: skip


# ---------------------------------------------------------------- one server


def one_server(name: str, long_prompt: str, warm: int, rounds: dict[int, int]) -> dict[str, Any]:
    """Every figure for one way of serving (``name``: serve or deploy)."""
    workers = WORKERS if name == "deploy" else None
    say = f"bench: completions: {name}:"
    started = time.perf_counter()
    with serve_host.Server(reuse=REUSE, flags=FLAGS, options=PRELOAD, workers=workers) as server:
        up_s = time.perf_counter() - started
        built_from = source()  # the build (if any) happened just now
        print(f"{say} up in {up_s:.1f} s", file=sys.stderr)
        front = server.port  # nginx under deploy, the worker itself under serve
        # Cold: the first request to fresh workers, one fresh set per prompt.
        cold: dict[str, Any] = {}
        for label, prompt in (("short", SHORT_PROMPT), ("long", long_prompt)):
            restart_workers(server)
            cold[label] = sse(front, prompt, TTFT_TOKENS)
            print(f"{say} cold {label}: first token {cold[label]['first_s'] * 1000:.0f} ms",
                  file=sys.stderr)  # fmt: skip
        # The same with GET /health first, on one worker directly: the
        # instance and the host's model load apart from the app's own.
        port = next(iter(restart_workers(server).values()))
        split: dict[str, Any] = {"health": health(port)}
        time.sleep(SETTLE_S)
        split["then_short"] = sse(port, SHORT_PROMPT, TTFT_TOKENS)
        print(f"{say} fresh worker: /health {split['health']['seconds'] * 1000:.0f} ms, then first "
              f"token {split['then_short']['first_s'] * 1000:.0f} ms", file=sys.stderr)  # fmt: skip
        after_cold = memory(server)
        # Every worker (directly) one request alone, then two at once: the
        # second of the pair gets a new instance beside the busy first.
        beside = []
        known = {split["health"]["instance"], split["then_short"]["instance"]}
        # Requests sent one after the other to a worker with an idle instance
        # that got a new one all the same (the instances they got).
        surplus = [] if len(known) == 1 else [split["then_short"]["instance"]]
        for p in worker_ports(server).values():
            time.sleep(SETTLE_S)
            alone = sse(p, SHORT_PROMPT, TTFT_TOKENS)["instance"]
            if p == port and alone not in known:
                surplus.append(alone)
            known.add(alone)
            time.sleep(SETTLE_S)
            pair = at_once([partial(sse, p, SHORT_PROMPT, 24) for _ in range(2)])
            fresh = [r for r in pair if r["instance"] not in known]
            # None: the worker had an idle instance already (made earlier).
            beside.append(fresh[0] if len(fresh) == 1 else None)
            known.update(r["instance"] for r in pair)
        after_pairs = memory(server)
        # Warm-up for the decode runs, untimed: as many clients at once as the
        # most of them, twice, through the front (streamed answers are not
        # held to --concurrency, see the report: each needs an instance).
        for _ in range(2):
            at_once([partial(sse, front, COUNTING[i % len(COUNTING)], 24)
                     for i in range(max(CLIENTS))])  # fmt: skip
        warm_runs: dict[str, list[dict[str, Any]]] = {}
        for label, prompt in (("short", SHORT_PROMPT), ("long", long_prompt)):
            warm_runs[label] = [sse(front, prompt, TTFT_TOKENS) for _ in range(warm)]
            ms = statistics.median(r["first_s"] for r in warm_runs[label]) * 1000
            print(f"{say} warm {label}: first token {ms:.0f} ms (median of {warm})",
                  file=sys.stderr)  # fmt: skip
        decode: dict[int, list[list[dict[str, Any]]]] = {}
        for clients in CLIENTS:
            decode[clients] = []
            for number in range(rounds[clients]):
                runs = at_once([partial(sse, front, COUNTING[i % len(COUNTING)], NEW_TOKENS)
                                for i in range(clients)])  # fmt: skip
                decode[clients].append(runs)
                print(f"{say} {clients} client(s), round {number + 1}: aggregate "
                      f"{aggregate(runs):.1f} tok/s, per client "
                      + ", ".join(f"{r['decode_tok_s'] or 0:.1f}" for r in runs),
                      file=sys.stderr)  # fmt: skip
        # The same clients with whole answers, for --concurrency's sake.
        whole_runs = at_once([partial(whole, front, COUNTING[i % len(COUNTING)], WHOLE_TOKENS)
                              for i in range(max(CLIENTS))])  # fmt: skip
        warm_memory = memory(server)
    log = server.stderr()
    return {"command": COMMANDS[name], "workers": workers or 1, "up_s": up_s,
            "source": built_from,
            "cold": cold, "fresh_worker_split": split, "beside_busy": beside,
            "whole_at_once": whole_runs, "new_instance_though_idle": surplus,
            "warm": warm_runs, "decode": {str(c): r for c, r in decode.items()},
            "memory_after_cold": after_cold, "memory_after_pairs": after_pairs,
            "memory_warm": warm_memory,
            "restarts": log.count("killed by signal"), "log_problems": log_problems(log)[:20],
            "log_tail": log[-3000:]}  # fmt: skip


def source() -> dict[str, Any]:
    """What the served component was built from: the commit, and the files of
    apps/ that differ from it (the build takes the working tree)."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout

    changed = [line[3:] for line in git("status", "--porcelain", "--", "apps").splitlines()]
    return {"commit": git("rev-parse", "--short", "HEAD").strip(), "changed": changed}


def aggregate(runs: list[dict[str, Any]]) -> float:
    """All tokens of runs made together / from the first sent to the last finish."""
    begin = min(r["start"] for r in runs)
    end = max(r["start"] + r["finish_s"] for r in runs)
    return float(sum(r["tokens"] for r in runs) / (end - begin))


def encoder() -> Callable[[str], list[int]]:
    """The app's own tokenizer (apps/generate/gemma_tokenizer.py, natively),
    the same ids the server counts."""
    spec = importlib.util.spec_from_file_location(
        "generate_gemma_tokenizer", ROOT / "apps" / "generate" / "gemma_tokenizer.py"
    )
    if spec is None or spec.loader is None or not TOKENIZER.is_file():
        raise SystemExit(f"bench: completions: no {TOKENIZER}: build apps/generate first "
                         "(./build.sh build generate)")  # fmt: skip
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    tokenizer = module.Tokenizer.load(str(TOKENIZER))

    def encode(text: str) -> list[int]:
        return [int(i) for i in tokenizer.encode(text)]

    return encode


def measure(quick: bool) -> dict[str, Any]:
    """Both servers, one after the other (each alone on the machine)."""
    warm = QUICK_WARM if quick else WARM
    rounds = QUICK_ROUNDS if quick else ROUNDS
    long_prompt = generate_bench.long_text(encoder(), LONG_TOKENS)
    load_before = os.getloadavg()
    servers = {name: one_server(name, long_prompt, warm, rounds) for name in COMMANDS}
    return {"quick": quick, "warm_requests": warm, "rounds": {str(c): n for c, n in rounds.items()},
            "new_tokens": NEW_TOKENS, "ttft_tokens": TTFT_TOKENS, "prompts": {
                "short": SHORT_PROMPT, "long": long_prompt, "counting": list(COUNTING)},
            "load_average": {"before": load_before, "after": os.getloadavg()},
            "cores": os.cpu_count(), "servers": servers}  # fmt: skip


# ---------------------------------------------------------------- the report


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f}"


def report(data: dict[str, Any]) -> list[str]:
    """The benchmark's markdown section."""
    servers = data["servers"]
    any_server = next(iter(servers.values()))
    tokens = {label: any_server["warm"][label][0]["prompt_tokens"] for label in ("short", "long")}
    before, after = (", ".join(f"{x:.1f}" for x in data["load_average"][when])
                     for when in ("before", "after"))  # fmt: skip
    lines = ["", "## Served completions: apps/serve `POST /v1/completions`, streamed", "",
             "Gemma 3 270M (the generate app's fast variant, preloaded by the host), greedy, "
             "Server-Sent Events. One run on a noisy machine of "
             f"{data['cores']} cores (compare figures side by side only); "
             f"load average (1, 5, 15 min) before: {before}; after: {after}. The two servers "
             "ran one after the other. Commands (plus `--port` with a free port; "
             "`bench/completions_bench.py` starts them through tests/serve_host.py):", "",
             *[f"- {name}: `{s['command']}`" for name, s in servers.items()], "",
             "Both run `--concurrency 2` (build.sh's default). Times are the client's, "
             "from sending the request; first token = the first event that carries text.", "",
             *[f"- {name}: started in {s['up_s']:.1f} s (to the first answer of `/health`; "
               "minutes when `./build.sh` rebuilt the component), the component built from "
               f"commit {s['source']['commit']}"
               + (f" with uncommitted changes to {', '.join(s['source']['changed'])}."
                  if s["source"]["changed"] else ".") for name, s in servers.items()],
             "",
             "### Time to first token (ms)", "",
             f"Prompts: short `{data['prompts']['short']}` ({tokens['short']} tokens with "
             f"`<bos>`), long: the opening lines of CPython's LICENSE.txt ({tokens['long']} "
             "tokens). Cold: the first request to fresh worker processes (every worker "
             "stopped and started again by tools/deploy.py, nothing sent to it before), so it "
             "includes the new instance, the host's load of the model into it and the app's "
             f"tokenizer load; one fresh start per prompt. Warm: median (min-max) of "
             f"{data['warm_requests']} requests one at a time, every instance warm.", "",
             "| server | prompt (tokens) | cold | warm | cold - warm |",
             "|---|---|---|---|---|"]  # fmt: skip
    for name, s in servers.items():
        for label in ("short", "long"):
            seen = [r["first_s"] for r in s["warm"][label]]
            med = statistics.median(seen)
            cold = s["cold"][label]["first_s"]
            lines.append(f"| {name} | {label} ({tokens[label]}) | {ms(cold)} | {ms(med)} "
                         f"({ms(min(seen))}-{ms(max(seen))}) | {ms(cold - med)} |")  # fmt: skip
    lines += ["", "Where a cold start goes: (a) a fresh worker sent `GET /health` first, which "
              "makes the instance (the host loads the model into it), (b) then, "
              f"{SETTLE_S:g} s after its answer, the short prompt, whose first token waits for "
              "the app's tokenizer and generator; (c) a warm worker (one instance idle) sent "
              "two requests at once: the second gets a new instance beside "
              "the busy one, its loads competing with the first request's decoding for the 2 "
              "cores. (a)-(c) go to a worker directly, also under deploy.", "",
              "| server | (a) GET /health, fresh worker | (b) then first token, short | "
              "(c) first token on a new instance beside a busy one, per worker |",
              "|---|---|---|---|"]  # fmt: skip
    for name, s in servers.items():
        split = s["fresh_worker_split"]
        then = ms(split["then_short"]["first_s"])
        if split["then_short"]["instance"] != split["health"]["instance"]:
            then += (f" (a second new instance, not the one /health made, though (b) was sent "
                     f"{SETTLE_S:g} s after /health's answer)")  # fmt: skip
        beside = " / ".join("no new instance" if r is None else ms(r["first_s"])
                            for r in s["beside_busy"])  # fmt: skip
        lines.append(f"| {name} | {ms(split['health']['seconds'])} | {then} | {beside} |")
    surplus = {name: len(s["new_instance_though_idle"]) for name, s in servers.items()}
    if any(surplus.values()):
        lines += ["", "A request sent one at a time, a moment after the answer before it, to a "
                  "worker whose instance was idle, sometimes got a new instance all the same "
                  "(paying the host's model load and the app's loads again): "
                  + ", ".join(f"{name} {n} of 2" for name, n in surplus.items())
                  + f" such requests here, each sent {SETTLE_S:g} s after the previous "
                  "answer. (c) then finds an idle instance: \"no new instance\"."]  # fmt: skip
    counting = ", ".join(f"`{p}`" for p in data["prompts"]["counting"])
    rounds = ", ".join(f"{c} client(s): {n}" for c, n in data["rounds"].items())
    lines += ["", f"### Decode, {data['new_tokens']} greedy tokens per client", "",
              f"Each client streams a counting prompt ({counting}, in turn). Decode per "
              "client: tokens after the first / the time from the first text event to the "
              "finish event, median (min-max) over all clients of all rounds; aggregate: all "
              "tokens / from the first request sent to the last finish (prefill and any "
              f"waiting included), median over rounds ({rounds}). First token and time to "
              "the response headers per client, sorted, from the median round. Instances: how "
              "many distinct ones (`x-instance`) answered in that round. The instances were "
              "warmed first by the same number of clients at once.", "",
              "| server | clients | decode tok/s per client | aggregate tok/s | first token "
              "per client (ms) | headers per client (ms) | instances | tokens / finish |",
              "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, s in servers.items():
        for clients, made_rounds in s["decode"].items():
            per_client = [r["decode_tok_s"] for runs in made_rounds for r in runs
                          if r["decode_tok_s"] is not None]  # fmt: skip
            aggs = [aggregate(runs) for runs in made_rounds]
            order = sorted(range(len(made_rounds)), key=lambda i: aggs[i])
            middle = made_rounds[order[len(made_rounds) // 2]]
            firsts = " / ".join(ms(f) for f in sorted(r["first_s"] for r in middle))
            heads = " / ".join(ms(f) for f in sorted(r["header_s"] for r in middle))
            instances = len({r["instance"] for r in middle})
            made = {(r["tokens"], r["finish_reason"]) for runs in made_rounds for r in runs}
            made_text = ", ".join(f"{t} / {f}" for t, f in sorted(made))
            lines.append(f"| {name} | {clients} | {statistics.median(per_client):.1f} "
                         f"({min(per_client):.1f}-{max(per_client):.1f}) | "
                         f"{statistics.median(aggs):.1f} | {firsts} | {heads} | {instances} | "
                         f"{made_text} |")  # fmt: skip
    for name, s in servers.items():
        for clients, made_rounds in s["decode"].items():
            most = max(len({r["instance"] for r in runs}) for runs in made_rounds)
            if most <= 2 * s["workers"]:  # --concurrency 2 per worker
                continue
            # Per round: the clients whose answer had started before the
            # first one finished (each round's clients were sent together).
            together = [sum(r["header_s"] < min(q["finish_s"] for q in runs) for r in runs)
                        for runs in made_rounds]  # fmt: skip
            totals = sorted(r["total_s"] for r in s["whole_at_once"])
            ends = " / ".join(ms(t) for t in totals)
            held = len(totals) > 2 and totals[1] < 0.8 * totals[2]
            verdict = ("two, then the others: the limit holds for them" if held else
                       "no two-at-a-time pattern in them either")  # fmt: skip
            lines += ["", f"**{name}, {clients} clients: {most} instances answered in one "
                      f"round, on {s['workers']} worker(s) with `--concurrency 2`.** Streamed "
                      "answers are not reliably held to `--max-concurrent-requests`: clients "
                      "whose answer had started (response headers in) before the first client "
                      "finished, per round: " + ", ".join(map(str, together)) + f" of {clients} "
                      "(a client that waits past that waited for a whole generation). Whole "
                      f"(not streamed) answers to the same clients at once, {WHOLE_TOKENS} "
                      f"tokens each, finished after {ends} ms ({verdict}). Each streamed answer "
                      "running at once takes an instance of its own, the model loaded into "
                      "each (memory below)."]  # fmt: skip
    lines += ["", "### Memory of the workers", "",
              "Peak RSS (`VmHWM`, MiB) of each `wasmtime serve` worker: after the cold "
              "requests (one instance), after the pair of (c) (two), and at the end (warm: "
              "every instance the runs above made, the model loaded into each), with its RSS "
              "then and the distinct instances that answered since the last restart.", "",
              "| server | worker | peak, 1 instance | peak, 2 instances | peak, warm | "
              "RSS, warm | instances seen |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, s in servers.items():
        seen_instances = len({r["instance"] for r in answered(s)})
        for i, (c, p, w) in enumerate(zip(s["memory_after_cold"], s["memory_after_pairs"],
                                          s["memory_warm"], strict=False)):  # fmt: skip
            count = f"{seen_instances} (all workers)" if i == 0 else '"'
            lines.append(f"| {name} | {i + 1} | {c['peak_rss_mb']:.0f} | {p['peak_rss_mb']:.0f} "
                         f"| {w['peak_rss_mb']:.0f} | {w['rss_mb']:.0f} | {count} |")  # fmt: skip
    lines += ["", "### How the events arrived, and the logs", ""]
    for name, s in servers.items():
        every = [r for made_rounds in s["decode"].values() for runs in made_rounds for r in runs]
        events = sum(r["events"] for r in every)
        reads = sum(r["reads"] for r in every)
        lines.append(f"- {name}: {events} events in {reads} reads over the decode runs "
                     f"({events / reads:.2f} events per read: "
                     f"{'not batched' if events / reads < 1.5 else 'batched'}); worker "
                     f"restarts in the log: {s['restarts']} (the cold starts' own); other "
                     f"lines that look like trouble: {len(s['log_problems'])}.")  # fmt: skip
        lines += [f"  - `{line.strip()[:200]}`" for line in s["log_problems"][:5]]
    return lines


def answered(server: dict[str, Any]) -> list[dict[str, Any]]:
    """Every request a server answered after its last restart."""
    return [*[r for r in server["beside_busy"] if r is not None],
            *server["warm"]["short"], *server["warm"]["long"],
            *[r for made_rounds in server["decode"].values() for runs in made_rounds
              for r in runs]]  # fmt: skip


def write(data: dict[str, Any], out_dir: Path) -> None:
    """``out_dir/completions.{json,md}``, dated, the figures first."""
    generate_bench.write_named("completions", data, out_dir, report)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()
    data = measure(args.quick)
    write(data, args.out)
    print("\n".join(report(data)))


if __name__ == "__main__":
    main()
