"""Fuzz: checking what ``run`` is given against a model's inputs (``wasinn._spec.feeds``).

For random input declarations (wasi-nn dtypes and others, static, dynamic and
unknown dimensions, any rank, scalars) and random feeds: a mapping of tensors is
accepted exactly when an independent oracle says it fits, and then passed on
unchanged in the model's order; any other form of input (numbers, nested lists,
bytes, positional lists) gives tensors that fit, or ``ValidationError``, never
another exception. See fuzzing.py for budgets and limits.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from fuzzing import DTYPES, FUZZ, ITEMSIZE, nest, ran, time_limit
from hypothesis import given
from hypothesis import strategies as st

from wasinn import Tensor, TensorSpec, ValidationError
from wasinn._spec import feeds

pytestmark = pytest.mark.fuzz

# wasi-nn dtypes three times as often as the others
SPEC_DTYPES = (*DTYPES, *DTYPES, *DTYPES, "boolean", "i8", "string")
SPEC_DIMS = st.none() | st.integers(0, 3)


@st.composite
def input_specs(draw: Any) -> list[TensorSpec]:
    names = draw(st.lists(st.text(min_size=1, max_size=3), min_size=1, max_size=3, unique=True))
    return [
        TensorSpec(
            name,
            draw(st.none() | st.lists(SPEC_DIMS, max_size=3).map(tuple)),
            draw(st.sampled_from(SPEC_DTYPES)),
        )
        for name in names
    ]


@st.composite
def tensor_near(draw: Any, spec: TensorSpec) -> Tensor:
    """A tensor that usually fits ``spec`` and sometimes misses it by one detail."""
    if spec.shape is None:
        shape = draw(st.lists(st.integers(0, 3), max_size=3))
    else:
        shape = [draw(st.integers(0, 3)) if d is None else d for d in spec.shape]
    dtype = spec.dtype if spec.dtype in DTYPES else draw(st.sampled_from(DTYPES))
    miss = draw(st.sampled_from(("none", "none", "dtype", "dim", "rank")))
    if miss == "dtype":
        dtype = draw(st.sampled_from(DTYPES))
    elif miss == "dim" and shape:
        i = draw(st.integers(0, len(shape) - 1))
        shape[i] = draw(st.integers(0, 4))
    elif miss == "rank":
        if shape and draw(st.booleans()):
            shape.pop()
        else:
            shape.append(draw(st.integers(1, 2)))
    return Tensor(bytes(math.prod(shape) * ITEMSIZE[dtype]), shape=shape, dtype=dtype)


def fits(spec: TensorSpec, t: Tensor) -> bool:
    """The oracle: what wasinn must accept for ``spec``, written from its documentation."""
    if spec.dtype not in DTYPES or spec.shape == () or t.shape == () or t.dtype != spec.dtype:
        return False
    if spec.shape is None:
        return True
    return len(t.shape) == len(spec.shape) and all(
        d is None or d == n for d, n in zip(spec.shape, t.shape, strict=True)
    )


@FUZZ
@given(input_specs(), st.data())
def test_a_mapping_of_tensors_is_accepted_exactly_when_it_fits(
    specs: list[TensorSpec], data: st.DataObject
) -> None:
    given_inputs: dict[str, Tensor] = {}
    for spec in specs:
        if data.draw(st.integers(0, 9), label="leave out") or len(specs) == 1:
            given_inputs[spec.name] = data.draw(tensor_near(spec), label=spec.name)
    if data.draw(st.integers(0, 9), label="extra") == 0:
        extra = data.draw(st.text(min_size=1, max_size=3), label="extra name")
        given_inputs.setdefault(extra, Tensor([1.0]))
    if data.draw(st.booleans(), label="shuffle"):
        given_inputs = dict(reversed(list(given_inputs.items())))
    names_match = set(given_inputs) == {s.name for s in specs}
    ok = names_match and all(fits(s, given_inputs[s.name]) for s in specs)
    ran("accepted" if ok else "names" if not names_match else "refused")
    with time_limit():
        if not ok:
            with pytest.raises(ValidationError):
                feeds(given_inputs, specs)
            return
        got = feeds(given_inputs, specs)
    assert [n for n, _ in got] == [s.name for s in specs]
    assert all(t is given_inputs[n] for n, t in got), "a fitting tensor is passed on as it is"


TENSOR_LIKES = st.one_of(
    st.floats(allow_nan=False, width=32),
    st.integers(-(2**40), 2**40),
    st.lists(st.floats(allow_nan=False, width=32) | st.integers(-9, 9), max_size=6),
    st.lists(st.lists(st.integers(0, 5), min_size=2, max_size=2), max_size=3),
    st.binary(max_size=24),
    st.just("not a tensor"),
    st.none(),
)


@st.composite
def value_for(draw: Any, spec: TensorSpec) -> Any:
    """A tensor-like that may fit ``spec``: nested lists, a flat list or raw bytes."""
    if spec.shape is None:
        shape = draw(st.lists(st.integers(1, 2), min_size=1, max_size=3))
    else:
        shape = [draw(st.integers(1, 2)) if d is None else d for d in spec.shape]
    n = math.prod(shape)
    whole = st.integers(0, 3) | st.integers(0, 3).map(float)
    number = whole if spec.dtype in ("u8", "i32", "i64") else whole | st.floats(0, 3)
    numbers = draw(st.lists(number, min_size=n, max_size=n))
    how = draw(st.sampled_from(("nested", "flat", "bytes")))
    if how == "bytes":
        return bytes(n * ITEMSIZE.get(spec.dtype, 4))
    if how == "flat" or not shape:
        return numbers if shape else (numbers[0] if numbers else 0)
    return nest(numbers, tuple(shape))


def maybe_fitting(spec: TensorSpec) -> st.SearchStrategy[Any]:
    """Mostly ``value_for(spec)``, sometimes anything."""
    return st.integers(0, 4).flatmap(lambda k: TENSOR_LIKES if k == 0 else value_for(spec))


@FUZZ
@given(input_specs(), st.data())
def test_any_form_of_input_gives_fitting_tensors_or_validation_error(
    specs: list[TensorSpec], data: st.DataObject
) -> None:
    form = data.draw(st.sampled_from(("mapping", "positional", "bare")), label="form")
    inputs: Any
    if form == "mapping":
        inputs = {s.name: data.draw(maybe_fitting(s), label=s.name) for s in specs}
    elif form == "positional":
        inputs = [data.draw(maybe_fitting(s), label=s.name) for s in specs]
        if data.draw(st.integers(0, 4), label="miscount") == 0:
            inputs.append(1.0)
    else:
        inputs = data.draw(maybe_fitting(specs[0]), label="input")
    with time_limit():
        try:
            got = feeds(inputs, specs)
        except ValidationError:
            ran(f"{form}: refused")
            return
    ran(f"{form}: accepted")
    assert [n for n, _ in got] == [s.name for s in specs]
    assert all(fits(s, t) for s, (_, t) in zip(specs, got, strict=True)), got
