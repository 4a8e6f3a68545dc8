"""What one request can cost apps/serve (issue 34), for `./build.sh bench`:
the worst cheap input per route that tests/hostile_cost.py finds (server CPU
seconds and peak memory against the route's budget), and the JSON pre-scan
alone on its worst bodies at growing sizes (natively: nanoseconds per byte,
which stay flat when the scan is linear).

    ./build.sh bench --only request_costs      # bench/results/request_costs.md
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _folder in ("tests", "apps/serve"):
    if str(ROOT / _folder) not in sys.path:
        sys.path.insert(0, str(ROOT / _folder))
import hostile_cost  # noqa: E402
import jsonbody  # noqa: E402  (apps/serve's, natively)

#: The pre-scan's worst bodies: all quotes, escapes and brackets.
SCAN_BODIES = {
    "65 '[' then '\\\"' pairs": lambda n: b"[" * 65 + b'\\"' * (n // 2),
    "quotes and backslashes": lambda n: b'"\\' * (n // 2),
    "short strings in brackets": lambda n: b'["a\\"b"]' * (n // 8),
    "'[' only": lambda n: b"[" * n,
}
SCAN_SIZES = (1 << 16, 1 << 20, 1 << 22)


def json_scan(rounds: int = 3) -> list[dict[str, Any]]:
    """``jsonbody.nesting_depth`` on each body at each size: best of ``rounds``."""
    rows = []
    for name, make in SCAN_BODIES.items():
        for size in SCAN_SIZES:
            body = make(size)
            best = float("inf")
            for _ in range(rounds):
                start = time.perf_counter()
                jsonbody.nesting_depth(body)
                best = min(best, time.perf_counter() - start)
            rows.append({"body": name, "bytes": len(body), "ms": best * 1e3,
                         "ns_per_byte": best * 1e9 / len(body)})  # fmt: skip
    return rows


def run(quick: bool = False) -> dict[str, Any]:
    """The full search, or with ``quick`` its sample's cheap routes (the test run
    holds the whole sample to the budgets: tests/test_hostile_cost.py)."""
    routes = ["/health", "/digits", "/textclass"] if quick else None
    search = hostile_cost.run(hostile_cost.all_cases(routes, quick=quick))
    costs = search.costs
    return {
        "costs": [
            {"route": c.case.route, "case": c.case.name, "bytes": len(c.case.body),
             "status": c.status, "cpu_s": c.cpu_s, "memory_mb": c.memory_mb,
             "within_budget": c.within_budget}
            for c in costs
        ],  # fmt: skip
        "table": hostile_cost.table(costs),
        "warm_mb": search.warm_mb,
        "json_scan": json_scan(1 if quick else 3),
        "quick": quick,
    }


def report(result: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "## What one request can cost (tests/hostile_cost.py)",
        "",
        "The worst input found per route, one warm `./build.sh serve serve --reuse` worker, "
        "one request at a time: the worker's CPU seconds (all threads) and its peak memory "
        "above what it held before.",
        "",
        result["table"],
        "",
        "JSON pre-scan (`apps/serve/jsonbody.py`, natively; a linear scan keeps ns/byte flat):",
        "",
        "| body | bytes | ms | ns/byte |",
        "|---|---|---|---|",
    ]
    for r in result["json_scan"]:
        lines.append(f"| {r['body']} | {r['bytes']:,} | {r['ms']:.1f} | {r['ns_per_byte']:.1f} |")
    return lines
