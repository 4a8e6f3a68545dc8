"""Shared machinery of the property-based fuzz tests (tests/test_fuzz_*.py).

The properties live in one file per subject: ``test_fuzz_tensor.py`` (building,
reading and refusing tensors), ``test_fuzz_dtypes.py`` (conversions between
element types), ``test_fuzz_spec.py`` (checking feeds against a model),
``test_fuzz_ir.py`` and ``test_fuzz_onnx.py`` (the metadata readers),
``test_fuzz_image.py`` and ``test_fuzz_jpeg.py`` (the image decoders of
``wasinn.image``), ``test_fuzz_wav.py`` (the VAD app's WAV reader), and
``test_fuzz_harness.py`` (this module's own checks). Every one is marked
``fuzz``.

Budget: ``WASINN_FUZZ_EXAMPLES=N`` gives every property N examples (unset: the
hypothesis default, 100). The long run is ``./build.sh fuzz``, i.e.
``WASINN_FUZZ_EXAMPLES=10000 pytest tests/test_fuzz_*.py -q``; the examples each
property actually ran are printed at the end of the run (conftest.py asks
``summary()``). Runs are reproducible: derandomized, no example database. Each
example gets ``EXAMPLE_SECONDS`` of CPU time (a SIGPROF timer and a clock check),
so a hang fails the test instead of stalling it. CPU time, not wall time: the
code under test only computes, so a hang burns CPU, while a pause of a busy
machine must not fail a test. The cyclic garbage collector is off during the
example for the same reason.

A bug found here becomes a strict xfail (``known_bug``) whose reason starts with
"KNOWN BUG", with its smallest failing input as an explicit ``@example``, so it
fails on every run; once the bug is fixed the mark must go, and so must any
filter or narrowed strategy that kept the bug's inputs away from other properties.
"""

from __future__ import annotations

import contextlib
import gc
import math
import os
import signal
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from wasinn import DTYPES, ModelFormatError, TensorSpec

Shape = tuple[int, ...]
ValueCase = tuple[str, Shape, list[Any]]  # dtype, shape, Python numbers
ByteCase = tuple[str, Shape, bytes]  # dtype, shape, element bytes
Ops = list[tuple[Any, ...]]  # mutation operations
Seeds = tuple[bytes, ...]

ROOT = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------- budget and bookkeeping

_BUDGET = os.environ.get("WASINN_FUZZ_EXAMPLES", "").strip()
settings.register_profile(
    "wasinn-fuzz",
    database=None,
    derandomize=True,
    deadline=None,
    print_blob=False,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
    **({"max_examples": int(_BUDGET)} if _BUDGET else {}),
)
FUZZ = settings.get_profile("wasinn-fuzz")

#: CPU time one example may take (one call of the code under test).
EXAMPLE_SECONDS = 2.0

RUNS: Counter[str] = Counter()
DETAIL: defaultdict[str, Counter[str]] = defaultdict(Counter)
SPAN: dict[str, list[float]] = {}


def ran(detail: str | None = None) -> None:
    """Count one example of the calling property (and, optionally, what kind it was)."""
    code = sys._getframe(1).f_code
    name = f"{Path(code.co_filename).stem}::{code.co_name}"
    RUNS[name] += 1
    now = time.perf_counter()
    SPAN.setdefault(name, [now, now])[1] = now
    if detail is not None:
        DETAIL[name][detail] += 1


def summary() -> list[str]:
    """What ran: examples per property, the time between its first and last, kinds."""
    if not RUNS:
        return []
    budget = _BUDGET or "unset, hypothesis default 100"
    lines = ["", f"wasinn fuzz: examples run per property (WASINN_FUZZ_EXAMPLES={budget})"]
    for name in sorted(RUNS):
        first, last = SPAN[name]
        detail = ", ".join(f"{k}: {v}" for k, v in sorted(DETAIL[name].items()))
        tail = f"  [{detail}]" if detail else ""
        lines.append(f"  {RUNS[name]:>7}  {name}  ({last - first:.1f} s){tail}")
    return lines


class Hang(Exception):
    """An example ran past EXAMPLE_SECONDS."""


@contextlib.contextmanager
def time_limit(seconds: float = EXAMPLE_SECONDS) -> Iterator[None]:
    """Fail the example if the block uses more than ``seconds`` of CPU (interrupting a hang)."""
    timer = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    if timer:

        def on_alarm(signum: int, frame: Any) -> None:
            raise Hang(f"the example used more than {seconds} s of CPU")

        previous = signal.signal(signal.SIGPROF, on_alarm)
        signal.setitimer(signal.ITIMER_PROF, seconds)
    # The cyclic collector stays off inside the block: a full collection of the
    # heap the whole module has built up can take seconds (a fresh-clone run hit
    # 3.0 s at the same example twice; that example alone takes milliseconds), and
    # that is the test run's debt, not the time of the code under test.
    collecting = gc.isenabled()
    gc.disable()
    start = time.thread_time()  # this thread only: OpenVINO's worker threads may still be busy
    try:
        yield
    finally:
        if timer:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGPROF, previous)
        if collecting:
            gc.enable()
    elapsed = time.thread_time() - start
    assert elapsed < seconds, f"the example used {elapsed:.2f} s of CPU (limit {seconds} s)"


class Corpus(tuple):  # type: ignore[type-arg]
    """Seed files; repr is short, since a falsifying example prints its fixtures too."""

    def __repr__(self) -> str:
        return f"<{len(self)} seed files>"


def known_bug(reason: str) -> pytest.MarkDecorator:
    """Mark a property that fails on a bug not fixed yet (see the module docstring)."""
    return pytest.mark.xfail(strict=True, reason=f"KNOWN BUG: {reason}")


# ---------------------------------------------------------------- tensor oracles

FLOATS = ("f16", "bf16", "f32", "f64")
INTS = ("u8", "i32", "i64")
NP = {
    "f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16), "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64), "u8": np.dtype(np.uint8), "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
}  # fmt: skip
ITEMSIZE = {d: NP[d].itemsize for d in NP}
INT_RANGE = {"u8": (0, 255), "i32": (-(2**31), 2**31 - 1), "i64": (-(2**63), 2**63 - 1)}
UINT_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
# Other spellings of each dtype that wasinn documents (numpy, torch, OpenVINO names).
ALIASES = {
    "f16": ("float16", "half", "fp16", " F16 ", np.dtype(np.float16)),
    "bf16": ("bfloat16", "BF16"),
    "f32": ("float32", "float", "fp32", np.dtype(np.float32)),
    "f64": ("float64", "double", "fp64", np.dtype(np.float64)),
    "u8": ("uint8", np.dtype(np.uint8)),
    "i32": ("int32", np.dtype(np.int32)),
    "i64": ("int64", "long", np.dtype(np.int64)),
}
KNOWN_DTYPE_NAMES = frozenset(DTYPES) | {
    a for names in ALIASES.values() for a in names if isinstance(a, str) and a == a.strip().lower()
}


def numpy_store(values: list[Any], dtype: str) -> np.ndarray:
    """A flat array of ``values`` as numpy stores them in ``dtype``.

    Floats go through float64 (how Python hands numbers over); bf16 is rounded to
    float32 first, then to bfloat16, as wasinn documents.
    """
    with np.errstate(all="ignore"):
        if dtype in FLOATS:
            wide = np.array([float(v) for v in values], dtype=np.float64)
            if dtype == "bf16":
                return wide.astype(np.float32).astype(NP["bf16"])
            return wide.astype(NP[dtype])
        return np.array([int(v) for v in values], dtype=NP[dtype])


def as_python(arr: np.ndarray, dtype: str) -> Any:
    """numpy's ``tolist`` with every float dtype widened to Python floats."""
    with np.errstate(all="ignore"):
        return arr.astype(np.float64).tolist() if dtype in FLOATS else arr.tolist()


def same(a: Any, b: Any) -> bool:
    """Equal values and structure; NaN equals NaN, 0.0 differs from -0.0, 1 from True."""
    if isinstance(a, list) or isinstance(b, list):
        return (
            isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
            and all(same(x, y) for x, y in zip(a, b, strict=True))
        )  # fmt: skip
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return type(a) is type(b) and a == b


def assert_same_elements(raw: bytes, want: np.ndarray, dtype: str) -> None:
    """``raw`` holds ``want``'s element bits exactly (NaN: any NaN)."""
    got = np.frombuffer(raw, dtype=NP[dtype])
    want = want.ravel()
    assert got.size == want.size, f"{got.size} elements, numpy has {want.size}"
    if dtype in FLOATS:
        with np.errstate(all="ignore"):
            nan = np.isnan(want.astype(np.float64))
            got_nan = np.isnan(got.astype(np.float64))
        uint = UINT_OF_SIZE[ITEMSIZE[dtype]]
        bad = np.flatnonzero((nan & ~got_nan) | (~nan & (got.view(uint) != want.view(uint))))
    else:
        bad = np.flatnonzero(got != want)
    if bad.size:
        i = int(bad[0])
        raise AssertionError(
            f"element {i} of {dtype}: wasinn stores {got[i]!r} "
            f"({got[i : i + 1].tobytes().hex()}), "
            f"numpy {want[i]!r} ({want[i : i + 1].tobytes().hex()})"
        )


def nest(flat: list[Any], shape: tuple[int, ...], container: type = list) -> Any:
    """``flat`` as nested ``container``s of ``shape`` (a bare value for shape ())."""
    if not shape:
        return flat[0]
    if len(shape) == 1:
        return container(flat)
    step = math.prod(shape[1:])
    return container(
        nest(flat[i * step : (i + 1) * step], shape[1:], container) for i in range(shape[0])
    )


def flatten(x: Any) -> list[Any]:
    """The numbers of a nested list, in order (iterative: any depth)."""
    out, stack = [], [x]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
        else:
            out.append(item)
    return out


# ---------------------------------------------------------------- tensor strategies

EDGE_FLOATS = (
    0.0, -0.0, 1.0, -1.0, 0.5, 1 / 3, 0.1, 255.75, 65504.0, 65519.99, -65519.99, 65520.0,
    6.103515625e-05, 5.960464477539063e-08, 2.9802322387695312e-08, 2.98023223876953e-08,
    3.4028234663852886e38, 3.4028235677973366e38, 1.401298464324817e-45, 7.006492321624085e-46,
    1.00390625, 1.01171875, 1.0078125, -1.00390625, 1e-40, 1e300, -1e300, 5e-324,
    float("inf"), float("-inf"), float("nan"), -float("nan"),
)  # fmt: skip


def element(dtype: str) -> st.SearchStrategy[Any]:
    """Python numbers that fit ``dtype`` (floats: any float, numpy rounds them)."""
    if dtype in FLOATS:
        return st.one_of(
            st.floats(),
            st.floats(width=32),
            st.floats(width=16),
            st.sampled_from(EDGE_FLOATS),
            st.integers(-(2**64), 2**64),
            st.booleans(),
        )
    lo, hi = INT_RANGE[dtype]
    return st.one_of(
        st.integers(lo, hi),
        st.sampled_from((lo, hi, 0, 1)),
        st.booleans(),
        # whole floats are accepted (i64's top end is no float: 2**63 - 1 rounds up)
        st.integers(lo, hi).map(float).filter(lambda f: lo <= f <= hi),
    )


SHAPES = st.one_of(
    st.lists(st.integers(0, 3), max_size=4),  # any rank to 4, zero-sized axes included
    st.lists(st.integers(1, 40), min_size=1, max_size=1),  # longer vectors
).map(tuple)


@st.composite
def value_cases(draw: Any, dtypes: tuple[str, ...] = DTYPES) -> ValueCase:
    dtype = draw(st.sampled_from(dtypes))
    shape = draw(SHAPES)
    n = math.prod(shape)
    return dtype, shape, draw(st.lists(element(dtype), min_size=n, max_size=n))


def special_elements(dtype: str) -> list[bytes]:
    """Bit patterns at the edges of ``dtype``: zeros, infinities, NaNs, subnormals, extremes."""
    k = ITEMSIZE[dtype]
    if dtype in INTS:
        lo, hi = INT_RANGE[dtype]
        mask = (1 << (8 * k)) - 1
        patterns = [0, 1, hi, lo & mask, mask, hi - 1]
    else:
        e, m = {"f16": (5, 10), "bf16": (8, 7), "f32": (8, 23), "f64": (11, 52)}[dtype]
        sign, exp, quiet = 1 << (e + m), ((1 << e) - 1) << m, 1 << (m - 1)
        patterns = [
            0, sign, exp, sign | exp, exp | quiet, sign | exp | quiet, exp | 1, sign | exp | 1,
            exp | (quiet - 1 or 1), 1, sign | 1, (1 << m) - 1, 1 << m, exp - 1, sign | (exp - 1),
        ]  # fmt: skip
    return [p.to_bytes(k, "little") for p in patterns]


SPECIALS = {d: special_elements(d) for d in DTYPES}


@st.composite
def byte_cases(draw: Any, dtypes: tuple[str, ...] = DTYPES) -> ByteCase:
    """Random element bytes, some overwritten with SPECIALS (one draw per tensor: cheap)."""
    dtype = draw(st.sampled_from(dtypes))
    shape = draw(SHAPES)
    k, n = ITEMSIZE[dtype], math.prod(shape)
    raw = bytearray(draw(st.binary(min_size=n * k, max_size=n * k)))
    if n:
        spots = st.tuples(st.integers(0, n - 1), st.sampled_from(SPECIALS[dtype]))
        for i, pattern in draw(st.lists(spots, max_size=min(n, 6))):
            raw[i * k : (i + 1) * k] = pattern
    return dtype, shape, bytes(raw)


def prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out + ([n] if n > 1 else [])


@st.composite
def shapes_of_size(draw: Any, n: int) -> tuple[int, ...]:
    """A random shape with exactly ``n`` elements."""
    if n == 0:
        dims = draw(st.lists(st.integers(0, 4), max_size=3))
        dims.insert(draw(st.integers(0, len(dims))), 0)
        return tuple(dims)
    factors = draw(st.permutations(prime_factors(n)))
    dims = [1] * draw(st.integers(1 if factors else 0, max(1, len(factors))))
    for f in factors:
        dims[draw(st.integers(0, len(dims) - 1))] *= f
    for _ in range(draw(st.integers(0, 2))):
        dims.insert(draw(st.integers(0, len(dims))), 1)
    return tuple(dims)


# ---------------------------------------------------------------- byte-level mutation

# Bytes that mean something to one of the formats fuzzed here.
TOKENS = (
    b"<", b">", b"/>", b'"', b"'", b"&", b"&amp;", b"&#0;", b"&#x110000;", b"<!--", b"-->",
    b"<![CDATA[", b"]]>", b"<!DOCTYPE net [<!ENTITY e 'x'>]>", b"&e;", b"<layer>", b"</layer>",
    b"<port>", b"<dim>", b"</dim>", b"-1", b"?", b"..", b",", b"\\,", b"\xef\xbb\xbf", b"\x00",
    b"\xff\xfe", b"\xc3\x28", b"\x08", b"\x3a", b"\x42", b"\x5a", b"\x62", b"\x0a\x00",
    b"\xff" * 10, b"\x80" * 11, b"\x7f", b"\x0b", b"\x0c", b"\x0e", b"\x3a\xff\xff\xff\xff\x0f",
    b"IHDR", b"IDAT", b"IEND", b"\x00\x00\x00\x00", b"\xff\xff\xff\xff", b"RIFF", b"WAVE",
    b"fmt ", b"data", b"LIST",
)  # fmt: skip
# Where to mutate: near the start, near the end (where ONNX keeps a graph's inputs
# and outputs), or anywhere.
POSITIONS = st.one_of(st.integers(0, 400), st.integers(-4000, -1), st.integers(0, 2**22))
BYTE_OPS = st.one_of(
    st.tuples(st.just("flip"), POSITIONS, st.integers(0, 7)),
    st.tuples(st.just("set"), POSITIONS, st.integers(0, 255)),
    st.tuples(st.just("insert"), POSITIONS, st.binary(max_size=12) | st.sampled_from(TOKENS)),
    st.tuples(st.just("delete"), POSITIONS, st.integers(1, 64)),
    st.tuples(st.just("truncate"), POSITIONS),
    st.tuples(st.just("splice"), POSITIONS, st.integers(0, 99), POSITIONS),
    st.tuples(st.just("repeat"), POSITIONS, st.integers(1, 64), st.integers(1, 8)),
)


def at(pos: int, n: int) -> int:
    return max(0, n + pos) if pos < 0 else pos % (n + 1)


def mutate(data: bytes, ops: Ops, corpus: Seeds) -> bytes:
    """Apply byte-level ``ops`` (BYTE_OPS) to ``data``; ``splice`` takes another seed's tail."""
    buf = bytearray(data)
    for op in ops:
        kind, p = op[0], at(op[1], len(buf))
        if kind in ("flip", "set") and p == len(buf):
            p -= 1
        if kind == "flip" and buf:
            buf[p] ^= 1 << op[2]
        elif kind == "set" and buf:
            buf[p] = op[2]
        elif kind == "insert":
            buf[p:p] = op[2]
        elif kind == "delete":
            del buf[p : p + op[2]]
        elif kind == "truncate":
            del buf[p:]
        elif kind == "splice":
            other = corpus[op[2] % len(corpus)]
            buf[p:] = other[at(op[3], len(other)) :]
        elif kind == "repeat":
            buf[p:p] = bytes(buf[p : p + op[2]]) * op[3]
    return bytes(buf)


def assert_specs(specs: Any) -> None:
    assert isinstance(specs, list)
    for s in specs:
        assert isinstance(s, TensorSpec) and isinstance(s.name, str) and isinstance(s.dtype, str)
        assert s.dtype, s
        assert s.shape is None or isinstance(s.shape, tuple), s  # None: any rank
        assert all(d is None or (type(d) is int and d >= 0) for d in s.shape or ()), s


def edit_chunks(chunks: list[list[Any]], op: tuple[Any, ...], i: int) -> bool:
    """The chunk-list edits that the PNG and WAV mutators share, on chunk ``i``
    of ``[id, body, stored size or CRC]`` lists: ``drop``, ``dup``, ``swap``
    (with the next) and ``body`` (a byte op on the body). False when ``op``
    is none of these, for the caller's own kinds."""
    kind = op[0]
    if kind == "drop":
        del chunks[i]
    elif kind == "dup":
        chunks.insert(i, list(chunks[i]))
    elif kind == "swap":
        if i + 1 < len(chunks):
            chunks[i], chunks[i + 1] = chunks[i + 1], chunks[i]
    elif kind == "body":
        chunks[i][1] = mutate(chunks[i][1], [op[2]], (chunks[i][1],))
    else:
        return False
    return True


def read_meta(reader: Any, data: bytes, label: str) -> Any:
    """``reader(data, label)``'s metadata, or None for ModelFormatError (which
    must name ``label``); any other exception fails the example."""
    with time_limit():
        try:
            info = reader(data, label)
        except ModelFormatError as exc:
            assert label in str(exc), exc
            return None
    assert_specs(info.inputs)
    assert_specs(info.outputs)
    return info
