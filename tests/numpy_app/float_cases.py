"""Floating-point errors numpy finds itself and ones only the hardware sees, as
cases run in a component (app.py floats) and natively (tests/test_numpy_guest.py)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np


def outcome(call: Callable[[], Any]) -> dict[str, Any]:
    """What ``call()`` did: the exception it raised, or its value and the warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = call()
        except Exception as exc:
            return {"raised": type(exc).__name__, "message": str(exc)}
    return {"value": np.asarray(value).tolist(),
            "warnings": [f"{w.category.__name__}: {w.message}" for w in caught]}  # fmt: skip


def _raising(call: Callable[[], Any]) -> Any:
    with np.errstate(all="raise"):
        return call()


SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])
INTS = np.array([7, 8], dtype=np.int64)

CASES: dict[str, Callable[[], Any]] = {
    "inv_singular": lambda: np.linalg.inv(SINGULAR),
    "int_floor_divide_by_zero": lambda: INTS // np.zeros(2, np.int64),
    "int_floor_divide_by_zero_raise": lambda: _raising(lambda: INTS // np.zeros(2, np.int64)),
    "float_divide_by_zero": lambda: np.ones(2) / np.zeros(2),
    "float_divide_by_zero_raise": lambda: _raising(lambda: np.ones(2) / np.zeros(2)),
    "float_overflow": lambda: np.full(2, 1e308) * 10,
    "sqrt_negative": lambda: np.sqrt(np.array([-1.0])),
}
