"""Serving soak: 100,000 good requests to apps/serve in reuse mode at concurrency 8
(Debian's `hey`), in batches; every answer must be 2xx and the server's RSS,
read from /proc after each batch, must stay within 5 % of its size after warm-up.

    .venv/bin/python tests/serve_soak.py [--requests N] [--concurrency C]

Prints one line per batch and a JSON summary; exit status 1 when a check fails.
The requests are POST /digits (image decode in the guest, one inference), with a
GET /health between batches and one POST /textclass at the end. With reuse, wasmtime
keeps about one instance per concurrent request, each holding its own copy of
every model it loaded: the warm-up creates them, so later growth is a leak.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_host import ROOT, Server, hey, rss_kib  # noqa: E402

PNG = (ROOT / "apps" / "digits" / "samples" / "digit3_002.png").read_bytes()
TEXTCLASS = json.dumps({"texts": ["The team won the cup."], "labels": ["sports", "cooking"]})
WARMUP = 2_000
BATCHES = 10
MAX_GROWTH = 0.05


def soak(requests: int = 100_000, concurrency: int = 8) -> dict[str, Any]:
    """Run the soak; returns the figures and ``ok``."""
    per_batch = max(1, requests // BATCHES)
    rss: list[int] = []
    non_2xx = 0
    started = time.monotonic()
    with Server(reuse=10 * requests) as server:
        warm = hey(server.url("/digits"), requests=WARMUP, concurrency=concurrency, body=PNG,
                   content_type="image/png")  # fmt: skip
        non_2xx += warm.non_2xx
        rss.append(rss_kib(server.pid))
        print(f"warm-up: {WARMUP} requests, {warm.rps:.0f} req/s, RSS {rss[0]} KiB", flush=True)
        for i in range(BATCHES):
            r = hey(server.url("/digits"), requests=per_batch, concurrency=concurrency, body=PNG,
                    content_type="image/png")  # fmt: skip
            non_2xx += r.non_2xx
            rss.append(rss_kib(server.pid))
            status, _ = server.request("GET", "/health")
            non_2xx += not 200 <= status < 300
            print(f"batch {i + 1}/{BATCHES}: {per_batch} requests, {r.rps:.0f} req/s, "
                  f"p99 {r.p99_ms:.1f} ms, non-2xx {r.non_2xx}, RSS {rss[-1]} KiB")  # fmt: skip
        # Last, after the final RSS reading: the instance that answers it loads
        # MiniLM (~90 MB), which would read as growth.
        status, _ = server.request("POST", "/textclass", TEXTCLASS.encode(), "application/json")
        non_2xx += not 200 <= status < 300
        trapped = "wasm trap" in server.stderr() or "panicked" in server.stderr()
    growth = (rss[-1] - rss[0]) / rss[0]
    peak_growth = (max(rss) - rss[0]) / rss[0]
    ok = non_2xx == 0 and growth <= MAX_GROWTH and not trapped
    return {
        "requests": WARMUP + per_batch * BATCHES + BATCHES + 1,
        "concurrency": concurrency,
        "non_2xx": non_2xx,
        "rss_kib": rss,
        "rss_growth": round(growth, 4),
        "rss_peak_growth": round(peak_growth, 4),
        "trapped": trapped,
        "seconds": round(time.monotonic() - started, 1),
        "ok": ok,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    result = soak(args.requests, args.concurrency)
    print(json.dumps(result))
    if not result["ok"]:
        print(f"serve soak failed: {result['non_2xx']} non-2xx answers, RSS growth "
              f"{100 * result['rss_growth']:.1f} % (limit {100 * MAX_GROWTH:.0f} %)",
              file=sys.stderr)  # fmt: skip
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
