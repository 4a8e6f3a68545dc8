"""What tests/kernels_app computes, importable natively too (no ``wit_world``):
tests/test_ext.py runs the same functions in CPython and compares."""

from __future__ import annotations

import array
import random
import time
from collections.abc import Callable
from typing import Any

from wasinn import Tensor, ValidationError


def results(case: dict[str, Any]) -> dict[str, Any]:
    """What the Tensor methods backed by the kernels give for one case."""
    try:
        t = Tensor(bytes.fromhex(case["hex"]), shape=case["shape"], dtype=case["dtype"])
        return {
            "argmax": t.argmax() if t.size else None,
            "along": [t.argmax(axis=a) for a in range(t.ndim)] if t.size else [],
            "topk": [list(pair) for pair in t.topk(case["k"])],
            "tolist": t.tolist(),
            "as_bf16": t.astype("bf16").tobytes().hex(),
        }
    except ValidationError as exc:
        return {"error": type(exc).__name__, "message": str(exc)}


def best_ms(fn: Callable[[], object], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1000


def timings(megabytes: float) -> list[dict[str, Any]]:
    """The kernels on seeded random f32 data (what bench/bench_guest measures too)."""
    rng = random.Random(7)
    n = int(megabytes * (1 << 20)) // 4
    values = [rng.random() for _ in range(n)]
    t = Tensor(array.array("f", values).tobytes(), dtype="f32")
    half = t.astype("bf16")
    rows: list[tuple[str, Callable[[], object]]] = [
        ("Tensor.argmax() f32", t.argmax),
        ("Tensor.topk(5) f32", lambda: t.topk(5)),
        ("Tensor(list, bf16) encode", lambda: Tensor(values, dtype="bf16")),
        ("Tensor.tolist() bf16", half.tolist),
    ]
    if n >= 6 * 40 * 6625:  # an OCR recogniser's output: one class per time step
        ocr = Tensor(t.tobytes()[: 6 * 40 * 6625 * 4], shape=(6, 40, 6625), dtype="f32")
        rows.append(("Tensor.argmax(axis=-1) f32 [6, 40, 6625]", lambda: ocr.argmax(axis=-1)))
    return [{"what": what, "ms": best_ms(fn), "mb": megabytes} for what, fn in rows]
