"""A fixed sample of the ONNX backend node tests through a real component.

``./build.sh conformance`` runs all ~1,400 cases (tests/conformance.py) and
writes docs/conformance.md; this runs ``conformance.SAMPLE``, ordinary
operators plus cases of every model rewrite, so that a regression fails the
test run. The harness's own comparison is checked first, without a host.
"""

from __future__ import annotations

from pathlib import Path

import conformance
import numpy as np
import pytest


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[conformance.Case]]:
    work = tmp_path_factory.mktemp("conformance")
    cases, total = conformance.generate(work, conformance.SAMPLE)
    assert total > 1000, "the onnx package generated fewer node tests than it should"
    return work, cases


def test_the_sample_covers_every_rewrite(sample: tuple[Path, list[conformance.Case]]) -> None:
    _, cases = sample
    assert sorted(c.name for c in cases) == sorted(conformance.SAMPLE)
    kinds = {kind for c in cases for kind in conformance.rewrites(c)}
    assert kinds == {
        "rank-0 inputs", "rank-0 outputs", "zero-size inputs", "renamed or dropped inputs"
    }  # fmt: skip


def test_the_comparison_is_onnxs(sample: tuple[Path, list[conformance.Case]]) -> None:
    _, cases = sample
    case = next(c for c in cases if c.name == "test_add")
    right = [e.copy() for e in case.expected]
    assert conformance.compare(case, right).status == "pass"
    off = [right[0] + np.float32(0.01) * np.abs(right[0]) + np.float32(1e-3)]
    assert conformance.compare(case, off).status == "wrong"
    assert "shape" in conformance.compare(case, [right[0][:1]]).detail
    assert "f64" in conformance.compare(case, [right[0].astype(np.float64)]).detail
    assert "outputs" in conformance.compare(case, []).detail


@pytest.mark.integration
def test_the_sample_passes_in_a_component(sample: tuple[Path, list[conformance.Case]]) -> None:
    work, cases = sample
    guest = conformance.run_guest(cases, work)
    failed = {n: f"{o.status}: {o.error} {o.detail}" for n, o in guest.outcomes.items()
              if o.status != "pass"}  # fmt: skip
    assert not failed
    assert len(guest.outcomes) == len(cases)
