"""Tensor <-> numpy checks, written to run unchanged natively and in a component.

Each ``check_*`` is a plain function: it takes the numpy module (and, for the
model checks, a loaded ``Model``), asserts, and returns nothing. It imports
nothing but wasinn and the standard library, uses no pytest, and reads no
file, so a guest app can import this module at top level next to ``import
numpy as np`` and call every check (``CHECKS``, ``MODEL_CHECKS``) once numpy
runs inside a component. Natively ``tests/test_numpy_interop.py`` calls them
with the real numpy, on the fake host and on OpenVINO.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from wasinn import Model, Tensor, ValidationError, image, ops

#: wasinn dtype -> numpy dtype name, both ways (bf16 has none in numpy).
NUMPY_NAMES = {
    "f16": "float16", "f32": "float32", "f64": "float64",
    "u8": "uint8", "i32": "int32", "i64": "int64",
}  # fmt: skip

VALUES = [[0.0, 1.0, 2.0], [3.0, 250.0, 5.0]]


def raises(kind: type[BaseException], call: Callable[[], object], *words: str) -> str:
    """Assert that ``call()`` raises ``kind`` with every one of ``words`` in its message."""
    try:
        call()
    except kind as exc:
        message = str(exc)
        for word in words:
            assert word in message, f"{word!r} not in {message!r}"
        return message
    raise AssertionError(f"{kind.__name__} not raised")


def check_dtypes_map_both_ways(np: Any) -> None:
    for dtype, name in NUMPY_NAMES.items():
        t = Tensor(VALUES, dtype=dtype)
        a = np.asarray(t)
        assert a.dtype == np.dtype(name) and a.shape == (2, 3), (dtype, a.dtype)
        assert a.tolist() == t.tolist()
        assert t.numpy().dtype == a.dtype
        back = Tensor(np.array(VALUES, dtype=name))
        assert back.dtype == dtype and back == t, dtype
        assert Tensor.from_numpy(np.array(VALUES, dtype=name)) == t
        assert Tensor(np.array(VALUES), dtype=dtype) == t  # float64 values converted


def check_tensor_to_array_is_zero_copy_and_read_only(np: Any) -> None:
    for dtype in NUMPY_NAMES:
        t = Tensor(VALUES, dtype=dtype)
        a, b = np.asarray(t), t.numpy()
        view = np.frombuffer(t.tobytes(), dtype=a.dtype)
        assert np.shares_memory(a, view) and np.shares_memory(b, view)
        assert a.base is t.tobytes()  # numpy holds the tensor's own bytes
        assert not a.flags.writeable and not b.flags.writeable
        raises(ValueError, lambda a=a: a.__setitem__((0, 0), 1), "read-only")
        assert np.asarray(t, copy=False).base is t.tobytes()


def check_array_to_tensor_reuses_bytes_it_views(np: Any) -> None:
    t = Tensor(VALUES, dtype="f32")
    assert Tensor(np.asarray(t)).tobytes() is t.tobytes()
    assert Tensor(t.numpy().reshape(3, 2)).tobytes() is t.tobytes()  # a view of a view
    data = bytes(range(12))
    pixels = Tensor(np.frombuffer(data, np.uint8).reshape(2, 2, 3))
    assert pixels.tobytes() is data and pixels.shape == (2, 2, 3)
    # Part of the bytes, or another order: copied (bytes cannot be sliced in place).
    assert Tensor(np.asarray(t)[1]).tobytes() == t.tobytes()[12:]
    assert Tensor(np.asarray(t).T) == Tensor(np.asarray(t).T.copy())
    # A writable array is always copied: the tensor does not change with it.
    w = np.zeros(3, np.float32)
    frozen = Tensor(w)
    w[0] = 7
    assert frozen.tolist() == [0.0, 0.0, 0.0]


def check_array_protocol_copy_rules(np: Any) -> None:
    """numpy 2's ``__array__(dtype, copy)``: copies only when asked or needed."""
    t = Tensor(VALUES, dtype="f32")
    c = np.array(t)  # np.array copies by default
    assert c.flags.writeable and not np.shares_memory(c, np.asarray(t))
    c[0, 0] = 9.0
    assert t.tolist() == VALUES
    w = t.numpy(copy=True)
    assert w.flags.writeable and w.tolist() == VALUES
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert np.asarray(t, dtype=np.float64).tolist() == VALUES
    assert np.asarray(t, dtype=np.float32).base is t.tobytes()
    raises(ValueError, lambda: np.asarray(t, dtype=np.float64, copy=False))
    raises(ValueError, lambda: t.__array__(np.float64, copy=False), "without a copy")
    assert t.__array__(copy=True).flags.writeable
    assert np.shares_memory(t.__array__(), np.asarray(t)) and not t.__array__().flags.writeable


def check_layouts(np: Any) -> None:
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for strided in (a.T, a[:, ::-1], a[..., ::2], np.asfortranarray(a), a.transpose(1, 0, 2)):
        t = Tensor(strided)
        assert t.shape == strided.shape and t.tolist() == strided.tolist()
        assert np.array_equal(np.asarray(t), strided)
    zero_d = Tensor(np.array(2.5, np.float32))
    assert zero_d.shape == () and zero_d.item() == 2.5
    assert np.asarray(zero_d).shape == () and np.asarray(zero_d)[()] == 2.5
    assert Tensor(np.float64(0.25)).dtype == "f64" and Tensor(np.int32(7)).item() == 7
    assert Tensor(np.float32(1.5)) == Tensor(1.5)
    empty = Tensor(np.zeros((0, 3), np.int32))
    assert empty.shape == (0, 3) and empty.dtype == "i32"
    assert np.asarray(empty).shape == (0, 3) and np.asarray(Tensor.zeros((2, 0))).size == 0
    assert Tensor(a, shape=(6, 4)).shape == (6, 4)  # shape= reshapes, as for bytes


def check_unsupported_dtypes(np: Any) -> None:
    """Types wasi-nn cannot carry: a clear error, or a checked conversion with ``dtype=``."""
    bad = {
        "bool": (np.array([True, False]), "astype(np.uint8)"),
        "int8": (np.array([1, -2], np.int8), "astype(np.int32)"),
        "uint16": (np.array([1, 2], np.uint16), "astype(np.int32)"),
        "uint64": (np.array([1, 2], np.uint64), "astype(np.int64)"),
        "big-endian": (np.array([1.0, 2.0], ">f4"), "newbyteorder('<')"),
    }
    for case, (arr, fix) in bad.items():
        why = "big-endian" if case == "big-endian" else "no wasi-nn dtype"
        raises(ValidationError, lambda arr=arr: Tensor(arr), why, fix, "dtype=")
        converted = Tensor(arr, dtype="f32")
        assert converted.dtype == "f32" and converted.tolist() == arr.astype(np.float32).tolist()
        assert Tensor(arr, dtype="i64").tolist() == arr.astype(np.int64).tolist()
    assert Tensor(np.array([True, False]), dtype="u8").tolist() == [1, 0]
    for arr in (np.array([1j]), np.array(["a"]), np.array([None], dtype=object)):
        raises(ValidationError, lambda arr=arr: Tensor(arr), "no wasi-nn dtype")
        raises(ValidationError, lambda arr=arr: Tensor(arr, dtype="f32"), "by value")
    # Converting to an integer dtype checks every value, as for lists.
    raises(ValidationError, lambda: Tensor(np.array([1.0, 1.5]), dtype="i32"), "1.5", "whole")
    raises(ValidationError, lambda: Tensor(np.array([2**40]), dtype="i32"), "1099511627776")
    raises(ValidationError, lambda: Tensor(np.array([300]), dtype="u8"), "0 to 255")
    raises(ValidationError, lambda: Tensor(np.array([-1], np.int8), dtype="u8"), "-1")
    raises(ValidationError, lambda: Tensor(np.array([np.nan]), dtype="i64"), "nan")
    raises(ValidationError, lambda: Tensor(np.array([2.0**63]), dtype="i64"), "i64")
    raises(ValidationError, lambda: Tensor(np.array([2**63], np.uint64), dtype="i64"), "i64")
    raises(ValidationError, lambda: Tensor(np.array([-3.0], np.float16), dtype="u8"), "-3.0")
    assert Tensor(np.array([65504.0], np.float16), dtype="i32").tolist() == [65504]
    assert Tensor(np.array([3.0, -2.0]), dtype="i32").tolist() == [3, -2]
    raises(ValidationError, lambda: Tensor.from_numpy([1.0, 2.0]), "numpy array")


def check_conversion_matches_lists(np: Any) -> None:
    """An array converts to each dtype exactly as its values given as a list do."""
    rng = np.random.default_rng(20)
    floats = np.concatenate([rng.normal(0, 1e3, 200), [0.0, -0.0, 65504.0, 7e4, -1e39, 1e-8]])
    ints = np.array([0, 1, -1, 2**24 + 1, 2**31 - 1, -(2**31), 2**53 + 1, -(2**62) - 1])
    with np.errstate(all="ignore"):
        for source in (floats, floats.astype(np.float32), ints, ints.astype(np.int32)):
            for dtype in ("f16", "bf16", "f32", "f64"):
                assert Tensor(source, dtype=dtype) == Tensor(source.tolist(), dtype=dtype), (
                    source.dtype, dtype,
                )  # fmt: skip


def check_bf16(np: Any) -> None:
    t = Tensor([1.5, -2.0, 3.0], dtype="bf16")
    assert np.asarray(t, dtype=np.float32).tolist() == [1.5, -2.0, 3.0]
    assert t.astype("f32").numpy().tolist() == [1.5, -2.0, 3.0]
    assert Tensor(np.array([1.5, -2.0]), dtype="bf16").tolist() == [1.5, -2.0]
    if sys.modules.get("ml_dtypes") is not None:  # the app imported it: bf16 arrays are ml_dtypes'
        a = t.numpy()
        assert a.dtype.name == "bfloat16" and a.astype(np.float32).tolist() == [1.5, -2.0, 3.0]
        assert Tensor(a).tobytes() is t.tobytes()
    else:
        raises(ValidationError, t.numpy, "bfloat16", "astype('f32')")
        raises(ValidationError, lambda: np.asarray(t), "bfloat16", "astype('f32')")


def check_image_decode_and_encode(np: Any) -> None:
    rgb = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3) * 3
    png = image.encode(rgb, "png")  # arrays encode like u8 Tensors
    assert png == image.encode(Tensor(rgb), "png")
    pixels = image.decode(png)
    a = np.asarray(pixels)
    assert a.dtype == np.uint8 and a.shape == (4, 5, 3) and np.array_equal(a, rgb)
    assert a.base is pixels.tobytes() and not a.flags.writeable
    gray = np.asarray(image.decode(png, mode="L"))
    assert gray.shape == (4, 5, 1)
    raises(ValidationError, lambda: image.encode(rgb.astype(np.float32), "png"), "u8")


def check_ops(np: Any) -> None:
    """``wasinn.ops`` takes arrays and returns Tensors that numpy reads in place."""
    logits = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 5.0]], np.float32)
    probs = np.asarray(ops.softmax(logits))
    assert probs.dtype == np.float32 and probs.shape == (2, 3)
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    assert np.allclose(probs, e / e.sum(axis=1, keepdims=True), atol=1e-6)
    assert np.asarray(ops.argmax(logits)).tolist() == [2, 2]
    values, indices = ops.topk(logits.T, 1)  # a transposed (strided) array works too
    assert np.asarray(indices).tolist() == [[0], [0], [1]]
    img = np.arange(4 * 4 * 3, dtype=np.uint8).reshape(4, 4, 3)
    small = np.asarray(ops.resize(img, (2, 2), mode="nearest"))
    assert small.dtype == np.uint8 and np.array_equal(small, img[::2, ::2])


def check_run_with_arrays(np: Any, model: Model, matrix: Sequence[Sequence[float]]) -> None:
    """The ``two`` test model: inputs y, x f32[2, 3]; 'prod' = x @ matrix, 'sum' = x + y."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 4 - 0.5
    y = np.ones((2, 3), np.float32)
    m = np.array(matrix, np.float32)
    out = model.run({"x": x, "y": y})
    assert np.allclose(np.asarray(out["prod"]), x @ m, rtol=1e-6)
    assert np.array_equal(np.asarray(out["sum"]), x + y)
    # Positional, other dtypes (converted), another layout, numpy scalars in lists.
    assert np.array_equal(np.asarray(model.run([y, x])["sum"]), x + y)
    assert np.array_equal(np.asarray(model.run({"x": x.astype(np.float64), "y": y})["sum"]), x + y)
    xt = np.ascontiguousarray(x.T).T  # Fortran order: same values, strided
    assert np.array_equal(np.asarray(model.run({"x": xt, "y": y})["sum"]), x + y)
    assert np.array_equal(model.run({"x": list(x.ravel()), "y": y})["sum"].numpy(), x + y)
    raises(ValidationError, lambda: model.run({"x": x[:1], "y": y}), "'x'", "[1, 3]")
    complex_y = y.astype(np.complex64)
    raises(ValidationError, lambda: model.run({"x": x, "y": complex_y}), "'y'", "complex64")
    # run_numpy: every output an ndarray, read-only, zero-copy over the host's bytes.
    arrays = model.run_numpy({"x": x, "y": y})
    assert list(arrays) == ["prod", "sum"]
    assert all(type(a) is np.ndarray and not a.flags.writeable for a in arrays.values())
    assert type(arrays["sum"].base) is bytes
    assert np.array_equal(arrays["sum"], x + y)
    only = model.run_numpy({"x": x, "y": y}, outputs=["sum"])
    assert list(only) == ["sum"] and np.array_equal(only["sum"], x + y)
    session = model.session()
    assert np.array_equal(session.run_numpy([y, x])["sum"], x + y)
    session.close()


def check_stateful_with_arrays(np: Any, model: Model) -> None:
    """The ``acc`` test model: 'total' = 'hN' = 'x' + 'h', x and h f32[1, 2]."""
    acc = model.stateful({"hN": "h"}, initial={"h": np.array([[10.0, 20.0]], np.float32)})
    step = np.array([[1.0, 2.0]], np.float32)
    totals = [acc.run_numpy({"x": step})["total"].tolist() for _ in range(3)]
    assert totals == [[[11.0, 22.0]], [[12.0, 24.0]], [[13.0, 26.0]]]
    assert type(acc.state["h"]) is Tensor and np.asarray(acc.state["h"]).tolist() == [[13.0, 26.0]]
    acc.close()


#: Checks that need no model, by name.
CHECKS: dict[str, Callable[[Any], None]] = {
    "dtypes_map_both_ways": check_dtypes_map_both_ways,
    "tensor_to_array_is_zero_copy_and_read_only": check_tensor_to_array_is_zero_copy_and_read_only,
    "array_to_tensor_reuses_bytes_it_views": check_array_to_tensor_reuses_bytes_it_views,
    "array_protocol_copy_rules": check_array_protocol_copy_rules,
    "layouts": check_layouts,
    "unsupported_dtypes": check_unsupported_dtypes,
    "conversion_matches_lists": check_conversion_matches_lists,
    "bf16": check_bf16,
    "image_decode_and_encode": check_image_decode_and_encode,
}
