"""The fuzz harness itself (fuzzing.py): the per-example limit and the byte mutator."""

from __future__ import annotations

import time

import pytest
from fuzzing import Hang, mutate, ran, summary, time_limit

pytestmark = pytest.mark.fuzz


def test_time_limit_interrupts_a_busy_loop_but_not_a_pause() -> None:
    with pytest.raises(Hang):
        with time_limit(0.2):
            while True:
                pass
    with time_limit(0.2):
        time.sleep(0.5)  # a stalled machine, not a hang


def test_byte_mutations_do_what_they_say() -> None:
    seed = bytes(range(10))
    corpus = (seed, b"abcdef")
    assert mutate(seed, [], corpus) == seed
    assert mutate(seed, [("flip", 0, 0)], corpus) == b"\x01" + seed[1:]
    assert mutate(seed, [("set", -1, 255)], corpus) == seed[:-1] + b"\xff"
    assert mutate(seed, [("insert", 2, b"xy")], corpus) == seed[:2] + b"xy" + seed[2:]
    assert mutate(seed, [("delete", 1, 3)], corpus) == seed[:1] + seed[4:]
    assert mutate(seed, [("truncate", 4)], corpus) == seed[:4]
    assert mutate(seed, [("splice", 3, 1, 2)], corpus) == seed[:3] + b"cdef"
    assert mutate(seed, [("repeat", 0, 2, 3)], corpus) == seed[:2] * 4 + seed[2:]


def test_the_summary_counts_examples() -> None:
    ran("kind")
    ran("kind")
    line = next(x for x in summary() if "test_the_summary_counts_examples" in x)
    assert line.split()[0] == "2" and "kind: 2" in line
