"""``sum()`` of floats as the guest's CPython adds them, for native tests of C
that must give the guest's bits (apps' extension modules replacing Python).

CPython 3.12 changed ``sum()`` of floats: the first value, then Neumaier's
compensated addition. The guest runs 3.14; the native tests may run an older
Python, whose ``sum()`` adds plainly.

Example::

    >>> guest_sum([1e100, 1.0, -1e100])
    1.0
"""

from __future__ import annotations

import math


def guest_sum(values: list[float]) -> float:
    """``sum(values)`` as CPython 3.12+ adds floats."""
    if not values:
        return 0.0
    total, c = values[0], 0.0
    for x in values[1:]:
        t = total + x
        c += (total - t) + x if abs(total) >= abs(x) else (x - t) + total
        total = t
    return total + c if c and math.isfinite(c) else total
