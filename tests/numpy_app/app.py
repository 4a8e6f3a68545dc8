"""A test-only guest with numpy: wasinn and numpy together inside a component.

    numpy_app checks                 every check of numpy_checks.py (models: two.xml, acc.xml in .)
    numpy_app random                 np.random's global generator and a fresh Generator, as JSON
    numpy_app floats                 what numpy reports for errors numpy and the hardware find
    numpy_app lazy                   functions that import numpy's submodules on first use
    numpy_app cxx_check              FFT and unique results (C++ inside numpy), as digests
    numpy_app simd_check             results of numpy's SIMD kernels on edge cases, as digests
    numpy_app hostile                numpy's C++ throw sites provoked: each a Python exception

Each prints JSON lines (one per check or result); the process exits 1 if a check failed.
tests/test_numpy_guest.py runs it under the real wasmtime CLI and compares with numpy natively.
"""

from __future__ import annotations

import copy
import importlib
import io
import json
import sys
import traceback
from typing import Any

import cxx_cases
import float_cases
import numpy as np
import numpy_checks
import simd_cases
from wit_world import exports

from wasinn import Model, print_line, run_command

# tests/models.py's MATRIX (the weights of two.xml's matmul): models.py needs OpenVINO.
MATRIX = (np.arange(12, dtype=np.float32).reshape(3, 4) / 4.0).tolist()


def emit(**fields: Any) -> None:
    print_line(json.dumps(fields))


def checks() -> int:
    failed = 0
    named = {**numpy_checks.CHECKS, "ops": numpy_checks.check_ops}
    calls = [(name, lambda c=check: c(np)) for name, check in named.items()]
    calls.append(("run_with_arrays",
                  lambda: numpy_checks.check_run_with_arrays(np, Model.load("two.xml"), MATRIX)))
    calls.append(("stateful_with_arrays",
                  lambda: numpy_checks.check_stateful_with_arrays(np, Model.load("acc.xml"))))
    for name, call in calls:
        try:
            call()
        except Exception:
            failed += 1
            emit(check=name, ok=False, error=traceback.format_exc())
        else:
            emit(check=name, ok=True)
    return 1 if failed else 0


def random() -> int:
    emit(global_draws=np.random.rand(3).tolist(),
         generator_draws=np.random.default_rng().random(3).tolist())
    np.random.seed(7)
    emit(seeded_draws=np.random.rand(3).tolist())
    return 0


def floats() -> int:
    for name, call in float_cases.CASES.items():
        emit(case=name, **float_cases.outcome(call))
    return 0


def lazy() -> int:
    buffer = io.BytesIO()
    np.savez(buffer, a=np.arange(3))
    buffer.seek(0)
    np.savetxt("numpy_app_lazy.txt.gz", [[1, 2], [3, 4]])  # a .gz name: numpy uses gzip
    results = {
        "unique": np.unique(np.array([3, 1, 3, 2])).tolist(),
        "savez_load": np.load(buffer)["a"].tolist(),
        "loadtxt_gzip": np.loadtxt("numpy_app_lazy.txt.gz").tolist(),
        "polyfit": np.round(np.polynomial.polynomial.polyfit([0, 1, 2], [1, 3, 5], 1), 6).tolist(),
        "masked_mean": float(np.ma.masked_array([1.0, 100.0, 3.0], mask=[0, 1, 0]).mean()),
        "rfft": np.round(np.abs(np.fft.rfft(np.arange(8.0))), 6).tolist(),
        "strings_upper": np.strings.upper(np.array(["ab", "c"])).tolist(),
        "solve": np.round(np.linalg.solve([[2.0, 0.0], [0.0, 4.0]], [2.0, 8.0]), 6).tolist(),
        # numpy's __copy__ of a scalar had the wrong C type: an indirect call that trapped.
        "copy_scalar": float(copy.copy(np.float64(1.5))),
        "deepcopy_array": copy.deepcopy(np.arange(3)).tolist(),
    }
    emit(**results)
    return 0


def cxx_check() -> int:
    emit(**cxx_cases.check())
    return 0


def simd_check() -> int:
    # The features numpy was built for: that its SIMD kernels are the ones that ran.
    umath: Any = importlib.import_module("numpy._core._multiarray_umath")
    baseline = list(umath.__cpu_baseline__)
    emit(cpu_baseline=baseline, **simd_cases.check())
    return 0


def hostile() -> int:
    for row in cxx_cases.hostile([]):
        emit(**row)
    return 0


def main(argv: list[str]) -> int:
    modes = {"checks": checks, "random": random, "floats": floats, "lazy": lazy,
             "cxx_check": cxx_check, "simd_check": simd_check,
             "hostile": hostile}  # fmt: skip
    if not argv or argv[0] not in modes:
        print(f"usage: numpy_app {'|'.join(modes)}", file=sys.stderr)
        return 2
    return modes[argv[0]]()


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="numpy_app")
