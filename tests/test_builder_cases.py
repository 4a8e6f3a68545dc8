"""Every graph-builder case (tests/builder_app/cases_*.py), checked as builder_check describes:
natively (onnx.checker, onnxruntime against the family's numpy reference, OpenVINO against
onnxruntime) and in one real component under wasmtime + OpenVINO. The references live with
each family's other tests (REFERENCE in test_builder_<family>.py)."""

from __future__ import annotations

from typing import Any

import pytest
import test_builder_elementwise
import test_builder_nn
import test_builder_recurrent
import test_builder_reduce
import test_builder_shape
from builder_app import builder_cases
from builder_check import Reference, check_in_component, check_native, run_component
from conftest import run_component as run_app

FAMILIES = (
    test_builder_elementwise,
    test_builder_shape,
    test_builder_reduce,
    test_builder_nn,
    test_builder_recurrent,
)
REFERENCE: dict[str, Reference] = {k: v for f in FAMILIES for k, v in f.REFERENCE.items()}
CASES = list(builder_cases.CASES)


def test_every_case_has_one_reference() -> None:
    assert sum(len(f.REFERENCE) for f in FAMILIES) == len(REFERENCE), "a case named twice"
    assert sorted(REFERENCE) == sorted(CASES)


@pytest.mark.parametrize("case", CASES)
def test_native(case: str) -> None:
    check_native(case, REFERENCE[case])


@pytest.fixture(scope="module")
def component_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_component(run_app, CASES, tmp_path_factory.mktemp("builder_cases"))


@pytest.mark.integration
@pytest.mark.parametrize("case", CASES)
def test_in_component(component_results: dict[str, Any], case: str) -> None:
    check_in_component(component_results[case], case, REFERENCE[case])
