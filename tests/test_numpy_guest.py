"""numpy inside a component: tests/numpy_app under the real wasmtime CLI, compared
with numpy natively on the same input.

The app pins numpy==2.4.6 in its requirements.txt, so its build takes numpy
built for the guest by tools/guest_packages.py (the first build on a machine
compiles it: a few minutes).
"""

from __future__ import annotations

import io
import math
import platform
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ROOT, json_app

sys.path.insert(0, str(ROOT / "tests" / "numpy_app"))
import cxx_cases  # noqa: E402
import float_cases  # noqa: E402
import simd_cases  # noqa: E402

pytestmark = pytest.mark.integration

APP = ROOT / "tests" / "numpy_app"


@pytest.fixture(scope="module")
def numpy_app(model_dir: Path) -> Any:
    return json_app(APP, cwd=model_dir)


def test_wasinn_and_numpy_convert_inside_a_component(numpy_app: Any) -> None:
    results = numpy_app("checks")
    failed = [r for r in results if not r["ok"]]
    assert not failed, "\n".join(f"{r['check']}:\n{r['error']}" for r in failed)
    # The same checks as tests/test_numpy_interop.py runs natively, models included.
    assert {r["check"] for r in results} >= {"dtypes_map_both_ways", "run_with_arrays",
                                             "stateful_with_arrays", "ops"}  # fmt: skip


def test_global_random_generator_differs_per_run_and_seeds_reproducibly(numpy_app: Any) -> None:
    first, first_seeded = numpy_app("random")
    second, second_seeded = numpy_app("random")
    # Without wasinn.start_instance every run repeats the numbers drawn from the
    # state numpy's import left when the component was built.
    assert first["global_draws"] != second["global_draws"]
    assert first["generator_draws"] != second["generator_draws"]
    np.random.seed(7)
    expected = np.random.rand(3).tolist()
    assert first_seeded["seeded_draws"] == second_seeded["seeded_draws"] == expected


def test_errors_numpy_finds_itself_are_reported_as_natively(numpy_app: Any) -> None:
    """A singular matrix and integer division by zero: numpy's own checks, whose
    status the software-fp-status patch keeps (without it inv returned NaNs)."""
    cases = {r.pop("case"): r for r in numpy_app("floats")}
    for name in ("inv_singular", "int_floor_divide_by_zero", "int_floor_divide_by_zero_raise"):
        assert cases[name] == float_cases.outcome(float_cases.CASES[name]), name
    assert cases["inv_singular"] == {"raised": "LinAlgError", "message": "Singular matrix"}


def test_hardware_float_events_give_the_right_values_without_a_warning(numpy_app: Any) -> None:
    """WebAssembly has no floating-point exception flags: 1.0/0.0 is inf as natively,
    but numpy cannot see that it happened (docs/numpy-differences.md)."""
    cases = {r.pop("case"): r for r in numpy_app("floats")}
    for name in ("float_divide_by_zero", "float_overflow"):
        native = float_cases.outcome(float_cases.CASES[name])
        assert native["warnings"][0].startswith("RuntimeWarning")  # natively numpy warns ...
        assert cases[name]["warnings"] == []  # ... the guest cannot
        assert cases[name]["value"] == native["value"] == [float("inf")] * 2
    root = cases["sqrt_negative"]
    assert math.isnan(root["value"][0]) and root["warnings"] == []
    # errstate(all="raise") cannot raise for them either; it still does for numpy's own checks.
    assert "value" in cases["float_divide_by_zero_raise"]


def test_lazily_imported_parts_of_numpy_work(numpy_app: Any) -> None:
    """Also calls that trapped on a C function of the wrong type (function-signatures.patch)."""
    (got,) = numpy_app("lazy")
    buffer = io.BytesIO()
    np.savez(buffer, a=np.arange(3))
    buffer.seek(0)
    expected = {
        "unique": np.unique(np.array([3, 1, 3, 2])).tolist(),
        "savez_load": np.load(buffer)["a"].tolist(),
        "loadtxt_gzip": [[1.0, 2.0], [3.0, 4.0]],
        "polyfit": np.round(np.polynomial.polynomial.polyfit([0, 1, 2], [1, 3, 5], 1), 6).tolist(),
        "masked_mean": float(np.ma.masked_array([1.0, 100.0, 3.0], mask=[0, 1, 0]).mean()),
        "rfft": np.round(np.abs(np.fft.rfft(np.arange(8.0))), 6).tolist(),
        "strings_upper": np.strings.upper(np.array(["ab", "c"])).tolist(),
        "solve": np.round(np.linalg.solve([[2.0, 0.0], [0.0, 4.0]], [2.0, 8.0]), 6).tolist(),
        "copy_scalar": 1.5,
        "deepcopy_array": [0, 1, 2],
    }
    assert got == expected


def test_cxx_inside_numpy_gives_native_results(numpy_app: Any) -> None:
    (got,) = numpy_app("cxx_check")
    assert got == cxx_cases.check()


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the digests are x86-64 numpy's: "
                    "numpy leaves max/min of signed zeros open, and an ARM host may differ")
def test_simd_kernels_give_native_results(numpy_app: Any) -> None:
    """The guest's numpy runs its SIMD kernels on our WebAssembly SIMD128 backend
    (wasm-simd128-backend.patch): NaN, signed zeros, integer extremes and division
    by each kind of divisor give native numpy's results, bit for bit."""
    (got,) = numpy_app("simd_check")
    # Built with SIMD128 as its baseline (not the scalar build, which would pass the rest too).
    assert got.pop("cpu_baseline") == ["WASM_SIMD128"]
    expected = simd_cases.check()
    assert got.keys() == expected.keys()
    differ = sorted(k for k in expected if got[k] != expected[k])
    assert not differ, f"{len(differ)} of {len(expected)} results differ: {differ[:40]}"


def test_cxx_throws_become_python_exceptions(numpy_app: Any) -> None:
    """pocketfft's std::bad_alloc (a prime-length FFT past wasm32's 4 GiB) trapped the
    component; with C++ exceptions it is MemoryError, as natively, and numpy goes on."""
    rows = numpy_app("hostile")
    assert [r["case"] for r in rows] == [name for name, _, _ in cxx_cases.HOSTILE]
    for row in rows:
        assert row["outcome"].startswith("MemoryError"), row
        assert row["still_works"], row
