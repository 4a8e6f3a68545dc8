"""The calls tests/sjlj_app makes, for the component and natively (tests/test_ext.py).

:func:`run` makes ``rounds`` rounds of calls into ``_sjlj``: in each, every
way of jumping (directly or from a qsort comparator, past a frame with its
own setjmp or not) from a depth that changes from round to round, and after
each jump a call that does not jump, whose sum must be right. It returns a
summary that is the same wherever the C runs.
"""

from __future__ import annotations

import zlib

import _sjlj


def run(rounds: int) -> dict[str, object]:
    """Summary of ``rounds`` rounds: counts, the first outcomes and a CRC-32 of all of them."""
    outcomes: list[str] = []
    raised = wrong = 0
    for r in range(rounds):
        depth = 1 + (r * 37) % 2000
        fail_at = (r * 13) % (depth + 2)  # depth + 1: never reached, no jump
        for by_qsort in (False, True):
            for nested in (False, True):
                code = (r + by_qsort * 2 + nested) % 5  # 0 comes back as 1, as in C
                try:
                    outcomes.append(str(_sjlj.dive(depth, fail_at, code, by_qsort, nested)))
                except ValueError as exc:
                    raised += 1
                    outcomes.append(str(exc))
                if _sjlj.dive(depth, -1, code, by_qsort, nested) != depth * (depth + 1) // 2:
                    wrong += 1
    return {
        "rounds": rounds,
        "raised": raised,
        "wrong_sums": wrong,
        "first": outcomes[:6],
        "crc32": zlib.crc32("\n".join(outcomes).encode()),
    }
