"""Fuzz: building, reading and refusing tensors (wasinn's Tensor).

Values and raw bytes round-trip exactly as numpy stores them (ml_dtypes for
bf16, rounded to f32 first as wasinn documents); nested lists infer their shape
and dtype; every malformed input is refused with ``ValidationError`` and never
with another exception. Conversions between dtypes: test_fuzz_dtypes.py.
See fuzzing.py for budgets and limits.
"""

from __future__ import annotations

import array
import math
from decimal import Decimal
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from fuzzing import (
    ALIASES,
    DTYPES,
    FLOATS,
    FUZZ,
    ITEMSIZE,
    KNOWN_DTYPE_NAMES,
    NP,
    SHAPES,
    ByteCase,
    Shape,
    ValueCase,
    as_python,
    assert_same_elements,
    byte_cases,
    flatten,
    nest,
    numpy_store,
    ran,
    same,
    shapes_of_size,
    time_limit,
    value_cases,
)
from hypothesis import assume, example, given
from hypothesis import strategies as st

from wasinn import Tensor, ValidationError

pytestmark = pytest.mark.fuzz

# ---------------------------------------------------------------- round trips


@FUZZ
@given(value_cases())
def test_values_round_trip_like_numpy(case: ValueCase) -> None:
    dtype, shape, values = case
    ran(dtype)
    want = numpy_store(values, dtype).reshape(shape)
    with time_limit():
        t = Tensor(values, shape=shape, dtype=dtype)
    assert (t.shape, t.dtype, t.size, t.ndim, t.nbytes) == (
        shape, dtype, want.size, len(shape), want.nbytes,
    )  # fmt: skip
    assert_same_elements(t.tobytes(), want, dtype)
    assert same(t.tolist(), as_python(want, dtype)), (t.tolist(), as_python(want, dtype))
    assert Tensor(t.tobytes(), shape=t.shape, dtype=t.dtype) == t
    if not shape:
        assert Tensor(values[0], dtype=dtype) == t
    elif 0 not in shape[:-1]:  # a shape nested lists can spell
        assert Tensor(nest(values, shape), dtype=dtype) == t
        assert Tensor(nest(values, shape, tuple), dtype=dtype) == t
    for alias in ALIASES[dtype]:
        assert Tensor(values, shape=shape, dtype=alias) == t


@FUZZ
@given(byte_cases())
def test_bytes_round_trip_like_numpy(case: ByteCase) -> None:
    dtype, shape, raw = case
    ran(dtype)
    with time_limit():
        t = Tensor(raw, shape=shape, dtype=dtype)
    assert t.tobytes() is raw and bytes(t.data) == raw and t.data.readonly
    assert (t.shape, t.dtype, t.nbytes) == (shape, dtype, len(raw))
    want = np.frombuffer(raw, dtype=NP[dtype]).reshape(shape)
    decoded = t.tolist()
    assert same(decoded, as_python(want, dtype)), (decoded, as_python(want, dtype))
    assert Tensor(t.tobytes(), shape=t.shape, dtype=t.dtype) == t
    assert Tensor(bytearray(raw), shape=shape, dtype=dtype) == t
    assert Tensor(memoryview(raw), shape=shape, dtype=dtype) == t
    assert Tensor(raw, dtype=dtype).shape == (t.size,)
    assert Tensor(raw, dtype=dtype).reshape(shape) == t
    assert t.astype(dtype) is t
    # Encoding the decoded values gives the same bits (NaN payloads may differ).
    again = Tensor(flatten(decoded), shape=shape, dtype=dtype)
    assert_same_elements(again.tobytes(), want, dtype)
    if t.size == 1:
        assert same(t.item(), flatten(decoded)[0])
    else:
        with pytest.raises(ValidationError):
            t.item()
    assert dtype in repr(t)


@st.composite
def nested_cases(draw: Any) -> tuple[Shape, str, list[Any], type]:
    shape = tuple(draw(st.lists(st.integers(1, 3), max_size=4)))
    if shape and draw(st.booleans()):
        shape = shape[:-1] + (0,)  # an empty innermost axis: [[], []]
    n = math.prod(shape)
    kind = draw(st.sampled_from(("int", "float", "too big") if n else ("int", "float")))
    if kind == "int":
        ints = st.integers(-(2**63), 2**63 - 1) | st.booleans()
        values = draw(st.lists(ints, min_size=n, max_size=n))
    elif kind == "float":  # ints of any size beside floats: all become f32
        mixed = st.one_of(st.floats(), st.integers(-(2**70), 2**70), st.booleans())
        values = draw(st.lists(mixed, min_size=n, max_size=n))
        if n:  # at least one float makes it f32
            values[draw(st.integers(0, n - 1))] = draw(st.floats())
    else:  # only ints, one of them past i64: no dtype can hold them
        ints = st.integers(-(2**63), 2**63 - 1) | st.booleans()
        values = draw(st.lists(ints, min_size=n, max_size=n))
        big = st.integers(2**63, 2**70) | st.integers(-(2**70), -(2**63) - 1)
        values[draw(st.integers(0, n - 1))] = draw(big)
    return shape, kind, values, draw(st.sampled_from((list, tuple)))


@FUZZ
@given(nested_cases())
def test_nested_lists_infer_shape_and_dtype(case: tuple[Shape, str, list[Any], type]) -> None:
    shape, kind, values, container = case
    ran(kind)
    data = nest(values, shape, container)
    if kind == "too big":
        with time_limit(), pytest.raises(ValidationError, match="does not fit in i64"):
            Tensor(data)
        return
    with time_limit():
        t = Tensor(data)
    want_dtype = "i64" if kind == "int" and values else "f32"
    assert (t.shape, t.dtype) == (shape, want_dtype)
    assert same(t.tolist(), as_python(numpy_store(values, want_dtype).reshape(shape), want_dtype))


@FUZZ
@given(byte_cases(), st.data())
def test_reshape_keeps_the_bytes(case: ByteCase, data: st.DataObject) -> None:
    dtype, shape, raw = case
    t = Tensor(raw, shape=shape, dtype=dtype)
    if data.draw(st.booleans(), label="same size"):
        ran("same size")
        dims = data.draw(shapes_of_size(t.size), label="dims")
        with time_limit():
            results = [t.reshape(*dims), t.reshape(dims), t.reshape(list(dims))]
        for r in results:
            assert (r.shape, r.dtype) == (dims, dtype) and r.tobytes() is raw
            assert same(flatten(r.tolist()), flatten(t.tolist()))
            assert r.reshape(shape) == t
    else:
        ran("other size")
        dims = data.draw(
            st.lists(st.integers(-3, 6), max_size=4)
            .map(tuple)
            .filter(lambda d: any(x < 0 for x in d) or math.prod(d) != t.size),
            label="dims",
        )
        with time_limit(), pytest.raises(ValidationError):
            t.reshape(dims)


@st.composite
def numpy_arrays(draw: Any) -> tuple[str, np.ndarray]:
    dtype = draw(st.sampled_from(("f16", "f32", "f64", "u8", "i32", "i64")))
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
    k = ITEMSIZE[dtype]
    raw = draw(st.binary(min_size=math.prod(shape) * k, max_size=math.prod(shape) * k))
    arr = np.frombuffer(raw, dtype=NP[dtype]).reshape(shape)
    layout = draw(st.sampled_from(("contiguous", "transposed", "strided", "big-endian")))
    if layout == "transposed":
        arr = arr.T
    elif layout == "strided":
        arr = arr[..., ::2]
    elif layout == "big-endian":
        arr = arr.astype(arr.dtype.newbyteorder(">"))
    return dtype, arr


@FUZZ
@given(numpy_arrays(), st.sampled_from((None,) + DTYPES))
def test_typed_buffers_keep_dtype_and_shape(
    case: tuple[str, np.ndarray], target: str | None
) -> None:
    # Any layout is read (in C order); big-endian data only converts by value,
    # to a dtype given (test_numpy_interop.py checks the messages).
    dtype, arr = case
    big = arr.dtype.byteorder == ">"
    ran("big-endian" if big else "contiguous" if arr.flags.c_contiguous else "strided")
    if big and target is None:
        with time_limit(), pytest.raises(ValidationError, match="big-endian"):
            Tensor(arr)
        return
    native = arr.astype(arr.dtype.newbyteorder("=")) if big else arr
    with time_limit():
        t = Tensor(native)
    assert (t.shape, t.dtype, t.tobytes()) == (arr.shape, dtype, native.tobytes())
    if target is None or target == dtype:
        assert Tensor(arr, dtype=target) == t
        return
    try:
        want = t.astype(target)
    except ValidationError:
        with pytest.raises(ValidationError):
            Tensor(arr, dtype=target)
        return
    with time_limit():
        got = Tensor(arr, dtype=target)
    # numpy converts (in C) what astype converts by value: the same bits, but
    # for NaN payloads (numpy keeps them; Python's float of an f16 NaN may not).
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    assert_same_elements(got.tobytes(), np.asarray(want), target)


@FUZZ
@given(byte_cases(), st.integers(-2, 90))
def test_argmax_and_topk_agree_with_numpy(case: ByteCase, k: int) -> None:
    dtype, shape, raw = case
    t = Tensor(raw, shape=shape, dtype=dtype)
    arr = np.frombuffer(raw, dtype=NP[dtype]).reshape(shape)
    with np.errstate(all="ignore"):
        wide = arr.astype(np.float64) if dtype in FLOATS else arr
    flat = wide.ravel().tolist()
    has_nan = any(v != v for v in flat)
    ran("with NaN" if has_nan else "without NaN")
    with time_limit():
        if not flat:
            with pytest.raises(ValidationError):
                t.argmax()
        else:
            assert t.argmax() == int(np.argmax(wide))  # the first NaN, if any, like numpy
            if shape and shape[-1]:
                assert t.argmax(axis=-1) == np.argmax(wide, axis=-1).tolist()
        if k < 0:
            with pytest.raises(ValidationError):
                t.topk(k)
            return
        top = t.topk(k)
    # NaN ranks above every number (documented), like argmax's first NaN.
    nan_first = [(0, 0.0, i) if v != v else (1, -v, i) for i, v in enumerate(flat)]
    order = [i for _, _, i in sorted(nan_first)][:k]
    assert [i for i, _ in top] == order
    assert same([v for _, v in top], [flat[i] for i in order])


def test_zeros_match_bytes() -> None:
    """Tensor.zeros against zero bytes, for every dtype and a few shapes (not random)."""
    for dtype in DTYPES:
        for shape in [(), (0,), (3,), (2, 0, 4), (1, 2, 3)]:
            z = Tensor.zeros(shape, dtype)
            assert z == Tensor(bytes(math.prod(shape) * ITEMSIZE[dtype]), shape=shape, dtype=dtype)


# ---------------------------------------------------------------- tensor refusals


@FUZZ
@given(
    st.sampled_from(DTYPES), SHAPES, st.integers(0, 700),
    st.sampled_from((bytes, bytearray, memoryview)),
)  # fmt: skip
def test_byte_length_mismatch_is_refused(dtype: str, shape: Shape, length: int, kind: type) -> None:
    k = ITEMSIZE[dtype]
    fits_shape = length == math.prod(shape) * k
    assume(not fits_shape or length % k)
    ran()
    data = kind(bytes(length))
    with time_limit():
        if not fits_shape:
            with pytest.raises(ValidationError):
                Tensor(data, shape=shape, dtype=dtype)
        if length % k:
            with pytest.raises(ValidationError):
                Tensor(data, dtype=dtype)


BAD_DIMS = st.one_of(
    st.integers(max_value=-1),
    st.integers(min_value=2**32),
    st.floats(),
    st.sampled_from(("1", "", None, True, False, b"\x01", 1j, Decimal(2), Fraction(2, 1), [1])),
)
NOT_A_SHAPE = st.sampled_from((5, 2.0, 1j, object(), "12", Decimal(1), {2.0}))


@FUZZ
@given(
    st.sampled_from(DTYPES), st.lists(st.integers(0, 3), max_size=3), BAD_DIMS, st.integers(0, 3),
    NOT_A_SHAPE, st.booleans(),
)  # fmt: skip
def test_bad_shapes_are_refused(
    dtype: str, dims: list[int], bad: Any, at: int, junk: Any, whole: bool
) -> None:
    shape: Any = junk if whole else tuple(dims[:at] + [bad] + dims[at:])
    ran("not a sequence" if whole else "bad dimension")
    with time_limit():
        for make in (
            lambda: Tensor(b"", shape=shape, dtype=dtype),
            lambda: Tensor(bytes(ITEMSIZE[dtype] * 6), shape=shape, dtype=dtype),
            lambda: Tensor([0] * 6, shape=shape, dtype=dtype),
            lambda: Tensor.zeros(shape, dtype),
            lambda: Tensor.zeros((6,), dtype).reshape(shape),
        ):
            with pytest.raises(ValidationError):
                make()


@st.composite
def ragged_lists(draw: Any) -> Any:
    """A nested list made ragged at one place, with a sibling to disagree with."""
    shape = list(draw(st.lists(st.integers(1, 3), min_size=1, max_size=4)))
    if max(shape) < 2:
        shape[draw(st.integers(0, len(shape) - 1))] = 2
    n = math.prod(shape)
    numbers = st.integers(-5, 5) | st.floats(-9, 9)
    data = nest(draw(st.lists(numbers, min_size=n, max_size=n)), tuple(shape))
    places: list[tuple[list[Any], int]] = []

    def walk(node: Any) -> None:
        if isinstance(node, list):
            if len(node) >= 2:
                places.extend((node, i) for i in range(len(node)))
            for child in node:
                walk(child)

    walk(data)
    parent, i = draw(st.sampled_from(places))
    child = parent[i]
    if isinstance(child, list):
        how = draw(st.sampled_from(("shorter", "longer", "number", "empty")))
        if how == "shorter":
            parent[i] = child[:-1]
        elif how == "longer":
            parent[i] = child + [child[0]]
        elif how == "number":
            parent[i] = 1.0
        else:
            parent[i] = []
    else:
        parent[i] = draw(st.sampled_from(([child], [[child]], [child, child])))
    if draw(st.booleans()):
        return data

    def to_tuples(node: Any) -> Any:
        return tuple(to_tuples(c) for c in node) if isinstance(node, list) else node

    return to_tuples(data)


@FUZZ
@given(ragged_lists(), st.sampled_from((None,) + DTYPES))
def test_ragged_lists_are_refused(data: Any, dtype: str | None) -> None:
    ran()
    with time_limit(), pytest.raises(ValidationError):
        Tensor(data, dtype=dtype)


# Not numbers. (Decimal and Fraction elements are read as floats since the list fast
# path of 5b7d8e5 lets array() convert them; see test_number_like_elements_...)
JUNK = st.sampled_from((
    "1", "", b"\x01", bytearray(b"x"), None, 1j, complex(1, 0), {}, {1: 2}, set(),
    frozenset({1}), object(), range(3), Ellipsis, float, memoryview(b"ab"), array.array("f", [1.0]),
))  # fmt: skip
TOP_LEVEL_JUNK = st.sampled_from((
    "1.0", "", None, 1j, Decimal("1.5"), Fraction(1, 2), {}, {1: 2.0}, {1.0}, frozenset(), object(),
    range(3), iter([1.0]), Ellipsis, float, int, type, print,
))  # fmt: skip


@FUZZ
@given(
    st.lists(st.integers(1, 3), min_size=1, max_size=3),
    st.data(),
    JUNK,
    TOP_LEVEL_JUNK,
    st.sampled_from((None,) + DTYPES),
)
def test_non_numbers_are_refused(
    shape: list[int], data: st.DataObject, junk: Any, top: Any, dtype: str | None
) -> None:
    n = math.prod(shape)
    flat: list[Any] = list(range(n))
    flat[data.draw(st.integers(0, n - 1), label="where")] = junk
    ran()
    with time_limit():
        with pytest.raises(ValidationError):
            Tensor(nest(flat, tuple(shape)), dtype=dtype)
        with pytest.raises(ValidationError):
            Tensor(top, dtype=dtype)


@FUZZ
@given(
    st.one_of(
        st.text(max_size=12).filter(lambda s: s.strip().lower() not in KNOWN_DTYPE_NAMES),
        st.sampled_from((
            "int8", "uint16", "bool", "float8", "complex64", "string", "f8e4m3fn", "i8", "u32",
            np.dtype(np.int8), np.dtype(np.bool_), np.dtype(np.complex64), 1, 1.5, object(), float,
        )),
    )
)  # fmt: skip
def test_unsupported_dtypes_are_refused(dtype: Any) -> None:
    ran()
    with time_limit():
        for make in (
            lambda: Tensor([1, 2], dtype=dtype),
            lambda: Tensor(b"\x00" * 8, dtype=dtype),
            lambda: Tensor.zeros((2,), dtype),
            lambda: Tensor([1.0]).astype(dtype),
        ):
            with pytest.raises(ValidationError):
                make()


# ---------------------------------------------------------------- former KNOWN BUGs (a12bb1f)


@FUZZ
@example(values=[2**63, 1.5])
@given(
    values=st.tuples(
        st.lists(st.integers(-(2**70), 2**70), max_size=3),
        st.integers(2**63, 2**70) | st.integers(-(2**70), -(2**63) - 1),
        st.lists(st.integers(-9, 9), max_size=2),
        st.floats(allow_nan=False, allow_infinity=False, width=32),
        st.lists(st.integers(-(2**70), 2**70) | st.floats(width=32), max_size=3),
    ).map(lambda p: p[0] + [p[1]] + p[2] + [p[3]] + p[4])
)
def test_list_dtype_inference_ignores_order(values: list[Any]) -> None:
    ran()
    t = Tensor(values)
    assert t.dtype == "f32"
    assert same(t.tolist(), as_python(numpy_store(values, "f32"), "f32"))


@FUZZ
@example(value=Decimal("sNaN"), dtype=None)
@given(
    value=st.one_of(
        st.decimals(allow_nan=True, allow_infinity=True, places=None),
        st.sampled_from(
            (Decimal("sNaN"), Decimal("-sNaN"), Decimal("1e400"), Fraction(10**400, 3))
        ),
        st.fractions(),
    ),
    dtype=st.sampled_from((None,) + DTYPES),
)
def test_number_like_elements_are_read_or_refused(value: Any, dtype: str | None) -> None:
    ran()
    with time_limit():
        try:
            Tensor([1.0, value], dtype=dtype)
        except ValidationError:
            pass


@FUZZ
@example(depth=3000, cyclic=False)
@example(depth=1, cyclic=True)
@given(depth=st.integers(1, 4000), cyclic=st.booleans())
def test_deep_or_cyclic_lists_are_refused_or_read(depth: int, cyclic: bool) -> None:
    ran()
    with time_limit():
        try:
            from_bytes = Tensor(bytes(4), shape=(1,) * depth, dtype="f32")
        except ValidationError:
            pass
        else:
            assert flatten(from_bytes.tolist()) == [0.0]
    data: Any = [1.0]
    if cyclic:
        data.append(data)
    else:
        for _ in range(depth - 1):
            data = [data]
    with time_limit():
        try:
            t = Tensor(data)
        except ValidationError:
            return
        assert not cyclic and t.shape == (1,) * depth
        assert flatten(t.tolist()) == [1.0]


@FUZZ
@example(shape=(2**32 - 1,) * 3, dtype="u8")
@given(
    # three or more dims of at least 2**22: more than 2**63 bytes
    shape=st.lists(st.integers(2**22, 2**32 - 1), min_size=3, max_size=5).map(tuple),
    dtype=st.sampled_from(DTYPES),
)
def test_zeros_of_impossible_size_are_refused(shape: tuple[int, ...], dtype: str) -> None:
    ran()
    with time_limit(), pytest.raises(ValidationError):
        Tensor.zeros(shape, dtype)


@FUZZ
@example(kind="bfloat16", given_dtype=None)
@given(
    kind=st.sampled_from((
        "bfloat16", "float8_e4m3fn", "datetime64[s]", "timedelta64[ms]", "bool", "int8", "int16",
        "uint16", "uint32", "uint64", "complex64", "object", "S3", "U2", "float16", "int32",
    )),
    given_dtype=st.sampled_from((None,) + DTYPES),
)  # fmt: skip
def test_any_numpy_array_is_read_or_refused(kind: str, given_dtype: str | None) -> None:
    ran()
    ml = {"bfloat16": ml_dtypes.bfloat16, "float8_e4m3fn": ml_dtypes.float8_e4m3fn}
    dt = np.dtype(ml.get(kind, kind))
    arr = np.zeros((2, 2), dtype=dt)
    with time_limit():
        try:
            Tensor(arr, dtype=given_dtype)
        except ValidationError:
            pass
