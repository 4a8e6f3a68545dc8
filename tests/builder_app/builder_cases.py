"""The graph-builder cases every op family registers: shared by the test
component (``app.py``) and the native tests (``tests/test_builder_*.py``).

A case is a function that declares its inputs on the builder it is given
(static shapes, wasi-nn dtypes) and returns the outputs to build. Each
family's cases live in ``cases_<family>.py`` and are collected here, so the
component and the native oracle always build the very same graphs.
"""

from __future__ import annotations

from collections.abc import Callable

import cases_elementwise
import cases_nn
import cases_recurrent
import cases_reduce
import cases_shape

from wasinn import GraphBuilder, Operand

Case = Callable[[GraphBuilder], dict[str, Operand]]

CASES: dict[str, Case] = {}
#: Cases onnxruntime cannot run (it lacks kernels for some dtypes): checked
#: against numpy alone, natively through OpenVINO and in the component.
OV_ONLY: set[str] = set()
for module in (cases_elementwise, cases_shape, cases_reduce, cases_nn, cases_recurrent):
    OV_ONLY.update(getattr(module, "OV_ONLY", ()))
    for name, case in module.CASES.items():
        if name in CASES:
            raise ValueError(f"builder case {name!r} is defined twice")
        CASES[name] = case
