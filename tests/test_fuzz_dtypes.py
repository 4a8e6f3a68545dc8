"""Fuzz: converting tensors between element types (astype, and typed buffers given a dtype).

Every conversion agrees with numpy's (ml_dtypes for bf16, rounded to f32 first as
wasinn documents); values an integer dtype cannot hold are refused with
``ValidationError``. See fuzzing.py for budgets and limits.
"""

from __future__ import annotations

import array
import math
from typing import Any

import numpy as np
import pytest
from fuzzing import (
    ALIASES,
    DTYPES,
    FLOATS,
    FUZZ,
    INT_RANGE,
    INTS,
    NP,
    SHAPES,
    Shape,
    as_python,
    assert_same_elements,
    element,
    flatten,
    numpy_store,
    ran,
    same,
    time_limit,
)
from hypothesis import example, given
from hypothesis import strategies as st

from wasinn import Tensor, ValidationError

pytestmark = pytest.mark.fuzz


@st.composite
def astype_cases(draw: Any) -> tuple[str, str, Shape, list[Any]]:
    src, dst = draw(st.sampled_from(DTYPES)), draw(st.sampled_from(DTYPES))
    if src in FLOATS:  # whole numbers too, so conversions to ints succeed as often as they fail
        whole = (2.0**31, -(2.0**31), 2.0**63, -(2.0**63), 255.0, 256.0, -1.0, -0.0, 65504.0)
        elem = st.one_of(element(src), st.integers(-300, 300).map(float), st.sampled_from(whole))
    else:
        elem = element(src)
    shape = draw(SHAPES)
    n = math.prod(shape)
    return src, dst, shape, draw(st.lists(elem, min_size=n, max_size=n))


@FUZZ
@given(astype_cases())
def test_astype_converts_like_numpy(case: tuple[str, str, Shape, list[Any]]) -> None:
    src, dst, shape, values = case
    t = Tensor(values, shape=shape, dtype=src)
    decoded = flatten(t.tolist()) if t.size else []
    ran(f"to {'float' if dst in FLOATS else 'int'}")
    if src == dst:
        assert t.astype(dst) is t
        return
    source = np.frombuffer(t.tobytes(), dtype=NP[src])
    if dst in FLOATS:
        with np.errstate(all="ignore"):
            mid = source.astype(np.float32) if dst == "bf16" else source
            want = mid.astype(NP[dst]).reshape(shape)
    else:
        lo, hi = INT_RANGE[dst]
        fits = all(
            (not isinstance(v, float) or (math.isfinite(v) and v.is_integer())) and lo <= v <= hi
            for v in decoded
        )
        if not fits:
            with time_limit(), pytest.raises(ValidationError):
                t.astype(dst)
            return
        want = np.array([int(v) for v in decoded], dtype=NP[dst]).reshape(shape)
    with time_limit():
        r = t.astype(dst)
    assert (r.shape, r.dtype) == (shape, dst)
    assert_same_elements(r.tobytes(), want, dst)
    assert same(r.tolist(), as_python(want, dst))
    for alias in ALIASES[dst]:
        assert t.astype(alias) == r


@FUZZ
@given(
    st.sampled_from(INTS), st.integers(1, 2**70), st.booleans(),
    st.lists(st.integers(0, 9), max_size=5), st.data(),
)  # fmt: skip
def test_out_of_range_ints_are_refused(
    dtype: str, beyond: int, low: bool, others: list[int], data: st.DataObject
) -> None:
    lo, hi = INT_RANGE[dtype]
    bad: Any = lo - beyond if low else hi + beyond
    if data.draw(st.booleans(), label="as float") and not lo <= int(float(bad)) <= hi:
        bad = float(bad)
    values = others + [bad]
    values.insert(data.draw(st.integers(0, len(others)), label="where"), values.pop())
    ran(dtype)
    with time_limit():
        with pytest.raises(ValidationError):
            Tensor(values, dtype=dtype)
        if isinstance(bad, int) and -(2**63) <= bad < 2**63:
            with pytest.raises(ValidationError):  # converting a wider tensor
                Tensor(values, dtype="i64").astype(dtype)


@FUZZ
@given(
    st.sampled_from(INTS),
    st.floats().filter(lambda f: not (math.isfinite(f) and f.is_integer())),
    st.lists(st.integers(0, 9), max_size=5),
    st.sampled_from(("f16", "bf16", "f32", "f64")),
)
def test_fractional_floats_for_int_dtypes_are_refused(
    dtype: str, bad: float, others: list[int], src: str
) -> None:
    ran(dtype)
    with time_limit():
        with pytest.raises(ValidationError):
            Tensor(others + [bad], dtype=dtype)
        with pytest.raises(ValidationError):
            Tensor(bad, dtype=dtype)
        source = Tensor(others + [bad], dtype=src)  # the float after rounding to src
        if not all(math.isfinite(v) and v.is_integer() for v in source.tolist()):
            with pytest.raises(ValidationError):
                source.astype(dtype)


@FUZZ
@given(st.sampled_from(FLOATS), st.integers(1024, 5000), st.booleans())
def test_ints_beyond_float64_are_refused(dtype: str, bits: int, negative: bool) -> None:
    ran(dtype)
    big = -(2**bits) if negative else 2**bits
    with time_limit(), pytest.raises(ValidationError):
        Tensor([1.0, big], dtype=dtype)


# ---------------------------------------------------------------- former KNOWN BUGs (a12bb1f)


def f16_big_int(values: list[Any]) -> bool:
    """A Python int past the f16 range (a float of that size would be inf)."""
    return any(type(v) is int and abs(v) >= 65520 for v in values)


@st.composite
def f16_nan_beside_overflow(draw: Any) -> list[Any]:
    values = draw(st.lists(element("f16"), max_size=5))
    values.insert(draw(st.integers(0, len(values))), draw(st.sampled_from((math.nan, -math.nan))))
    big = draw(st.floats(min_value=65520.0, max_value=1e308) | st.integers(65520, 2**64))
    values.insert(draw(st.integers(0, len(values))), -big if draw(st.booleans()) else big)
    return values


@FUZZ
@example(values=[70000.0, math.nan])
@given(values=f16_nan_beside_overflow())
def test_f16_nan_survives_overflow_to_inf(values: list[Any]) -> None:
    ran()
    for t in (Tensor(values, dtype="f16"), Tensor(values, dtype="f64").astype("f16")):
        assert same(t.tolist(), as_python(numpy_store(values, "f16"), "f16"))


@FUZZ
@example(values=[65520], via="list")
@example(values=[70000], via="astype")
@given(
    values=st.lists(st.integers(-(2**64), 2**64), min_size=1, max_size=6).filter(f16_big_int),
    via=st.sampled_from(("list", "astype")),
)
def test_f16_big_ints_become_inf(values: list[int], via: str) -> None:
    ran()
    if via == "astype":
        values = [max(-(2**63), min(2**63 - 1, v)) for v in values]
        t = Tensor(values, dtype="i64").astype("f16")
    else:
        t = Tensor(values, dtype="f16")
    assert same(t.tolist(), as_python(numpy_store(values, "f16"), "f16"))


@FUZZ
@example(values=[2**60 + 2**36 + 1], dst="f32")
@given(
    values=st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=8),
    dst=st.sampled_from(("f32", "bf16")),
)
def test_i64_to_f32_rounds_once_like_numpy(values: list[int], dst: str) -> None:
    ran()
    source = np.array(values, dtype=np.int64)
    want = source.astype(np.float32)
    if dst == "bf16":
        want = want.astype(NP["bf16"])
    assert_same_elements(Tensor(values, dtype="i64").astype(dst).tobytes(), want, dst)
    assert_same_elements(Tensor(source, dtype=dst).tobytes(), want, dst)


@FUZZ
@example(values=[2.0], src="f64", dst="i32")
@given(
    values=st.lists(st.integers(-100, 100).map(float), min_size=1, max_size=6),
    src=st.sampled_from(("f32", "f64")),
    dst=st.sampled_from(INTS),
)
def test_typed_float_buffer_converts_to_ints_like_astype(
    values: list[float], src: str, dst: str
) -> None:
    ran("refused" if dst == "u8" and min(values) < 0 else "converted")
    buffer = array.array("f" if src == "f32" else "d", values)
    try:
        want = Tensor(buffer).astype(dst)
    except ValidationError:  # a negative value for u8
        with time_limit(), pytest.raises(ValidationError):
            Tensor(buffer, dtype=dst)
        return
    with time_limit():
        assert Tensor(buffer, dtype=dst) == want
