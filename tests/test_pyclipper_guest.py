"""pyclipper inside a component: tests/pyclipper_app under the real wasmtime CLI,
compared with pyclipper natively (the host's wheel) on the same cases.

pyclipper is the second package tools/guest_packages.py builds for the guest
(setuptools + Cython + C++, against the first: numpy's meson). The app pins
pyclipper==1.4.0, so its build takes that build (about 20 s the first time on a
machine). Its patch makes bad input raise before Clipper's C++ can throw (a C++
throw traps a component; natively it aborts the process).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pyclipper
import pytest
from conftest import ROOT, json_app

sys.path.insert(0, str(ROOT / "tests" / "pyclipper_app"))
import clipper_cases  # noqa: E402

pytestmark = pytest.mark.integration

APP = ROOT / "tests" / "pyclipper_app"


@pytest.fixture(scope="module")
def pyclipper_app() -> Any:
    return json_app(APP, cwd=APP)


def _native(name: str) -> list[dict[str, Any]]:
    return [json.loads(json.dumps(clipper_cases.outcome(pyclipper, case)))
            for case in clipper_cases.CASES[name]()]  # fmt: skip


def test_ocr_unclip_and_clipping_equal_native(pyclipper_app: Any) -> None:
    """rapidocr's unclip (PyclipperOffset, JT_ROUND, ET_CLOSEDPOLYGON) of text boxes
    and curved text, clipping to the image, merging: the same integers as natively."""
    guest = pyclipper_app("ocr")
    assert guest == _native("ocr")
    assert not any("raised" in r for r in guest)


def _rings(value: Any) -> Any:
    """Each ring started at its smallest point, rings sorted: the same polygons."""
    if isinstance(value, dict):
        return {key: _rings(item) for key, item in value.items()}
    rings = []
    for ring in value:
        start = ring.index(min(ring))
        rings.append(ring[start:] + ring[:start])
    return sorted(rings)


def _area(value: dict[str, Any]) -> float:
    return sum(abs(pyclipper.Area(ring)) for rings in value.values() for ring in rings)


def test_random_polygons_equal_native(pyclipper_app: Any) -> None:
    cases = clipper_cases.CASES["random"]()
    guest, native = pyclipper_app("random"), _native("random")
    assert len(guest) == len(native) == len(cases)
    moved = []
    for case, got, expected in zip(cases, guest, native, strict=True):
        if case["op"] != "minkowski":
            assert got == expected, case
            continue
        # MinkowskiSum unions many quads whose edges tie in Clipper's std::sort:
        # libc++ (guest) and libstdc++ (the wheel) order ties differently, so a
        # ring may start elsewhere, and rarely an intersection rounds to the
        # next integer.
        if _rings(got["result"]) != _rings(expected["result"]):
            moved.append(case)
            assert _area(got["result"]) == pytest.approx(_area(expected["result"]), rel=0.05)
    assert len(moved) <= 2, moved


def test_hostile_input_raises_cleanly_in_the_guest(pyclipper_app: Any) -> None:
    outcomes = pyclipper_app("hostile")
    assert [o.get("raised") for o in outcomes] == [
        "ClipperException", "ClipperException", "OverflowError", "ClipperException",
        "ClipperException", "ClipperException", "ClipperException", "ValueError", "ValueError",
        "MemoryError", "ClipperException", "ClipperException", "ClipperException",
        "ClipperException",
    ]  # fmt: skip
    messages = {o["message"] for o in outcomes if o["raised"] == "ClipperException"}
    assert messages == {"Coordinate outside allowed range", "AddPath: Open paths must be subject.",
                        "Error: PolyTree struct is needed for open path clipping."}  # fmt: skip


def test_native_pyclipper_aborts_on_the_same_input() -> None:
    """Why the patch: the unpatched wheel ends the whole process (std::terminate)."""
    code = ("import pyclipper; pyclipper.Pyclipper().AddPath("
            f"[[0, 0], [{clipper_cases.HI_RANGE + 1}, 0], [0, 1]], pyclipper.PT_SUBJECT)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode < 0 and "Coordinate outside allowed range" in done.stderr
