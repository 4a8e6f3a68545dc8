"""The hostile suite's quick subset as a test (issue 24, section 4).

tests/hostile.py generates hostile input for every surface a user reaches
(JSON bodies and HTTP framing through `./build.sh deploy`'s nginx, images to
/digits and /ocr, model files given to ``Model.load`` in a component);
``./build.sh hostile`` runs all of it. Here its fixed quick subset runs once
(about a minute) and every case must end cleanly: no trap, no host
crash, no timeout, no answer of the wrong kind. Bugs the suite found that are
not fixed yet are listed in KNOWN_BUGS and expected to fail, strictly: when a
fix lands, its test starts passing, xfail(strict) fails it, and the entry goes.
"""

from __future__ import annotations

import hashlib

import hostile
import pytest
from serve_host import nginx_binary

pytestmark = pytest.mark.integration

#: Quick cases that do not end cleanly today: case -> what happens (details in
#: bench/results/hostile.md).
KNOWN_BUGS = {
    "onnx/node-cycle": (
        "two ONNX nodes feeding each other: OpenVINO's in-memory ONNX reader loops, allocating "
        "gigabytes (natively too); wasinn passes the graph on without checking its order"
    ),
}


@pytest.fixture(scope="module")
def report() -> hostile.Report:
    if nginx_binary() is None:
        pytest.skip("needs nginx (./build.sh test installs it)")
    return hostile.run_suite(quick=True)


def describe(results: list[hostile.Result]) -> str:
    return "\n".join(f"{r.outcome}: {r.case}: {r.detail[:400]}" for r in results)


@pytest.mark.parametrize("surface", hostile.SURFACES)
def test_every_quick_case_ends_cleanly(report: hostile.Report, surface: str) -> None:
    results = [r for r in report.results if r.key == surface]
    assert len(results) >= 5, f"only {len(results)} quick cases for {surface}"
    bad = [r for r in results if r.outcome in hostile.FAILURES and r.case not in KNOWN_BUGS]
    assert not bad, describe(bad)


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=why))
        for c, why in KNOWN_BUGS.items()
    ],
)
def test_known_bug_is_still_there(report: hostile.Report, case: str) -> None:
    """Fails while the bug is there (xfail); passes, and so fails strictly, once fixed."""
    found = [r for r in report.results if r.case == case]
    assert found[0].outcome not in hostile.FAILURES, describe(found)


def test_every_known_bug_is_in_the_quick_subset(report: hostile.Report) -> None:
    """Outside the xfail above: a known bug whose case left the subset would
    otherwise still pass there as an expected failure (an IndexError)."""
    cases = {r.case for r in report.results}
    assert set(KNOWN_BUGS) <= cases, sorted(set(KNOWN_BUGS) - cases)


def test_the_server_log_agrees_with_the_answers(report: hostile.Report) -> None:
    """A trap the client saw as a 500 is in wasmtime's log, and no worker died:
    counted from the log, not only from the answers."""
    for row, log in report.logs.items():
        traps = sum(r.outcome == "trap" for r in report.results if r.surface == row)
        assert (log.traps, log.restarts) == (traps, 0), row


def fingerprint() -> dict[str, str]:
    """Every generated case's name and a hash of its bytes (case names carry
    their surface: "json/...", "digits/...", "framing/...", "onnx/...")."""
    made: dict[str, list[str]] = {}
    http = [*hostile.json_cases(hostile.rng_for("json")),
            *hostile.image_cases(hostile.rng_for("images"))]  # fmt: skip
    for case in http:
        made.setdefault(case.name, []).append(hashlib.sha256(case.body).hexdigest())
    for frame in hostile.framing_cases(hostile.rng_for("framing")):
        sent = b"".join(data for _, data in frame.sends)
        made.setdefault(frame.name, []).append(hashlib.sha256(sent).hexdigest())
    for model in hostile.model_cases(hostile.rng_for("models")):
        both = hashlib.sha256(model.main + b"|" + model.weights).hexdigest()
        made.setdefault(model.filename, []).append(both)
    twice = [name for name, hashes in made.items() if len(hashes) > 1]
    assert not twice, f"cases named twice (one result would hide the other): {twice[:10]}"
    return {name: hashes[0] for name, hashes in made.items()}


def test_cases_are_repeatable_and_named_once() -> None:
    """A case's name finds the same bytes on every run (fixed seed), and no two
    cases share a name."""
    first = fingerprint()
    assert first == fingerprint()
    assert len(first) > 4000, len(first)
