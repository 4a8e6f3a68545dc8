"""WebNN's WPT conformance cases through GraphBuilder: the comparison, then a sample.

``python tests/webnn_wpt.py`` runs all 2,060 cases natively and in a component
and writes docs/webnn-conformance.md; this checks the harness's own
comparison without a host, then runs ``webnn_wpt.sample`` (every operator at
least once) natively and in a real component. Every case must pass, except
those ``KNOWN`` lists with the outcome they have and why.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import webnn_wpt

# Sample cases that do not pass, with their outcome and why. Each must keep its
# outcome: a new wrong answer or refusal fails the test, and so does a listed
# case that starts to pass (it then leaves this list).
KNOWN: dict[str, tuple[str, str]] = {
    "argMax uint32 4D tensor, axis=1, all options": (
        "refused",
        "host limit: OpenVINO's CPU plugin holds uint32 in int32, so the builder refuses "
        "arg_max of u32 rather than answer wrong",
    ),
    "batchNormalization float32 2D constant tensors default options": (
        "wrong",
        webnn_wpt.HOST_PRECISION["batchNormalization float32 2D constant tensors default options"],
    ),
}


def spec(data: Any, shape: list[int], dtype: str) -> dict[str, Any]:
    return {"data": data, "descriptor": {"shape": shape, "dataType": dtype}}


def ok(actual: Any, expected: dict[str, Any], metric: str, value: float) -> bool:
    return webnn_wpt.compare(np.asarray(actual), expected, metric, value) is None


def f32(*values: float) -> np.ndarray:
    return np.array(values, np.float32)


def test_f32_ulp_counts_bit_patterns_and_zeros_meet() -> None:
    next_up = np.nextafter(np.float32(1), np.float32(2), dtype=np.float32)
    two_up = np.nextafter(next_up, np.float32(2), dtype=np.float32)
    one = spec([1.0], [1], "float32")
    assert ok(f32(two_up), one, "ULP", 2)
    assert not ok(f32(two_up), one, "ULP", 1)
    # +0 and -0 are 0 apart; the smallest subnormals either side of zero are 2.
    assert ok(f32(-0.0), spec([0.0], [1], "float32"), "ULP", 0)
    tiny = float(np.float32(1e-45))
    assert ok(f32(-tiny), spec([tiny], [1], "float32"), "ULP", 2)
    assert not ok(f32(-tiny), spec([tiny], [1], "float32"), "ULP", 1)
    # Opposite signs away from zero are far apart.
    assert not ok(f32(-1.0), one, "ULP", 1000)


def test_f32_nan_matches_only_nan_and_specials_decode() -> None:
    want = spec(["NaN", "Infinity", "-Infinity", "-0"], [4], "float32")
    assert ok(f32(math.nan, math.inf, -math.inf, 0.0), want, "ULP", 0)
    wrong = f32(0.0, math.inf, -math.inf, 0.0)
    assert "worst [0]" in str(webnn_wpt.compare(wrong, want, "ULP", 10**6))
    assert not ok(f32(1.0), spec(["NaN"], [1], "float32"), "ULP", 10**6)


def test_f16_ulp_is_on_half_bits() -> None:
    want = spec([1.0, -2.0, 0.0], [3], "float16")
    three_up = np.array([1.0, -2.0, -0.0], np.float16)
    three_up.view(np.uint16)[0] += 3  # three float16 steps above 1.0
    assert ok(three_up, want, "ULP", 3)
    assert not ok(three_up, want, "ULP", 2)
    # float16's step at 1.0 is 2**-10: one ULP, where float32 would count 8192.
    near = np.array([1.0 + 2**-10, -2.0, 0.0], np.float16)
    assert ok(near, want, "ULP", 1)
    assert not ok(near, want, "ULP", 0)


def test_atol_and_nan_never_within_it() -> None:
    want = spec([0.5, 1.0], [2], "float32")
    assert ok(f32(0.5009, 0.9991), want, "ATOL", 1 / 1024)
    assert not ok(f32(0.502, 1.0), want, "ATOL", 1 / 1024)
    assert not ok(f32(math.nan), spec(["NaN"], [1], "float32"), "ATOL", 1.0)


def test_integers_are_exact_in_64_bits() -> None:
    big = 2**62 + 1
    want = spec([f"{big}n", "-5"], [2], "int64")
    assert ok(np.array([big, -5], np.int64), want, "ULP", 0)
    # One apart at 2**62: a float64 comparison could not tell.
    assert not ok(np.array([big - 1, -5], np.int64), want, "ULP", 0)
    assert ok(np.array([big - 1, -5], np.int64), want, "ULP", 1)
    assert not ok(np.array([1, 2, 3], np.int32), spec([1, 2], [2], "int32"), "ULP", 0)


def test_one_number_expectations_compare_the_first_thousand() -> None:
    want = spec(3.0, [40, 50], "float32")
    out = np.full(2000, 3.0, np.float32)
    out[1500] = 7.0  # past the first 1,000 elements: not compared
    assert ok(out, want, "ULP", 0)
    out[999] = 7.0
    assert "worst [999]" in str(webnn_wpt.compare(out, want, "ULP", 0))
    # One number for a one-element shape is that element.
    assert ok(f32(3.0), spec(3.0, [1], "float32"), "ULP", 0)


def test_a_new_wrong_answer_error_or_refusal_fails_and_so_does_a_known_case_passing() -> None:
    known = next(iter(KNOWN))
    status = KNOWN[known][0]
    names = ["ok", "wrong", "error", "refused", known]
    run = webnn_wpt.Run({n: webnn_wpt.Outcome(n if n != known else status) for n in names})
    run.outcomes["ok"] = webnn_wpt.Outcome("pass")
    cases = [webnn_wpt.Case(n, "op", {}) for n in [*names, "missing"]]
    assert sorted(failures(run, cases)) == ["error", "missing", "refused", "wrong"]
    run.outcomes[known] = webnn_wpt.Outcome("pass")
    assert known in failures(run, cases)


@pytest.fixture(scope="module")
def cases() -> list[webnn_wpt.Case]:
    every = webnn_wpt.load()
    assert len(every) == 2060
    chosen = webnn_wpt.sample(every)
    assert len(chosen) >= 200
    assert {c.operator for c in chosen} == {c.operator for c in every}
    return chosen


def failures(run: webnn_wpt.Run, cases: list[webnn_wpt.Case]) -> dict[str, str]:
    """The outcomes the test does not accept, by case: anything but a pass, unless
    KNOWN expects exactly it, and a pass that KNOWN does not expect."""
    bad = {}
    for c in cases:
        o = run.outcomes.get(c.name, webnn_wpt.Outcome("error", "no outcome"))
        expected = KNOWN[c.name][0] if c.name in KNOWN else "pass"
        if o.status != expected:
            bad[c.name] = f"{o.status} (expected {expected}): {o.detail}"
    return bad


def test_the_sample_passes_natively(cases: list[webnn_wpt.Case]) -> None:
    run = webnn_wpt.run_native(cases)
    assert failures(run, cases) == {}


@pytest.mark.integration
def test_the_sample_passes_in_a_component(cases: list[webnn_wpt.Case]) -> None:
    run = webnn_wpt.run_component(cases)
    assert failures(run, cases) == {}
    assert len(run.outcomes) == len(cases)
