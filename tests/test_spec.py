"""Unit tests of ``wasinn._spec``: TensorSpec, and checking what ``run`` is given.

``feeds`` turns every form of input a user may pass into checked
``(name, Tensor)`` pairs or a ValidationError saying what would be right;
``select`` checks ``outputs=``. Pure Python: no host, no models.
"""

from __future__ import annotations

import array
import dataclasses
import types
from typing import Any

import pytest

from wasinn import Tensor, TensorSpec, ValidationError
from wasinn._spec import feeds, select

X = TensorSpec("x", (2, 3), "f32")
Y = TensorSpec("y", (2, 3), "f32")
TWO = [Y, X]  # declared y before x, so order mistakes show
ROWS = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


def named(pairs: list[tuple[str, Tensor]]) -> list[tuple[str, tuple[int, ...], str, Any]]:
    return [(n, t.shape, t.dtype, t.tolist()) for n, t in pairs]


# ---------------------------------------------------------------- TensorSpec


@pytest.mark.parametrize(
    ("spec", "text", "static"),
    [
        (TensorSpec("image", (1, 1, 8, 8), "f32"), "image: f32[1, 1, 8, 8]", True),
        (TensorSpec("image", (None, 1, 8, 8), "f32"), "image: f32[?, 1, 8, 8]", False),
        (TensorSpec("ids", (None, None), "i64"), "ids: i64[?, ?]", False),
        (TensorSpec("s", (), "f32"), "s: f32[]", True),
        (TensorSpec("any", None, "f16"), "any: f16[...]", False),
        (TensorSpec("mask", (2,), "boolean"), "mask: boolean[2]", True),
    ],
)
def test_tensor_spec_text_and_static(spec: TensorSpec, text: str, static: bool) -> None:
    assert str(spec) == text
    assert spec.is_static is static


def test_tensor_spec_is_a_frozen_value() -> None:
    spec = TensorSpec("x", (2, 3), "f32")
    assert spec == TensorSpec("x", (2, 3), "f32") and spec != TensorSpec("x", (2, 3), "f16")
    assert len({spec, TensorSpec("x", (2, 3), "f32")}) == 1
    assert (spec.name, spec.shape, spec.dtype) == ("x", (2, 3), "f32")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.name = "y"  # type: ignore[misc]
    assert "TensorSpec(name='x', shape=(2, 3), dtype='f32')" == repr(spec)


# ---------------------------------------------------------------- feeds: the forms of inputs


def test_a_dict_of_matching_tensors_passes_as_is_in_model_order() -> None:
    x, y = Tensor(ROWS), Tensor(ROWS)
    got = feeds({"x": x, "y": y}, TWO)
    assert [n for n, _ in got] == ["y", "x"]
    assert got[0][1] is y and got[1][1] is x, "matching tensors are not copied"


def test_any_mapping_works() -> None:
    got = feeds(types.MappingProxyType({"x": ROWS, "y": ROWS}), TWO)
    assert named(got) == [("y", (2, 3), "f32", ROWS), ("x", (2, 3), "f32", ROWS)]


def test_positional_inputs_follow_model_order() -> None:
    a, b = Tensor(ROWS), Tensor([[0.0] * 3] * 2)
    for form in ([a, b], (a, b)):
        got = feeds(form, TWO)
        assert [(n, t) for n, t in got] == [("y", a), ("x", b)]
    with pytest.raises(
        ValidationError, match=r"^3 inputs given by position, but the model has 2: 'y', 'x'$"
    ):
        feeds([a, b, a], TWO)
    with pytest.raises(ValidationError, match="1 inputs given by position, but the model has 2"):
        feeds([a], TWO)


def test_one_input_takes_a_bare_tensor_like() -> None:
    spec = [X]
    for value in (Tensor(ROWS), ROWS, tuple(map(tuple, ROWS)), array.array("f", sum(ROWS, [])),
                  array.array("d", sum(ROWS, [])), [Tensor(ROWS)], sum(ROWS, [])):  # fmt: skip
        got = feeds(value, spec)
        assert named(got) == [("x", (2, 3), "f32", ROWS)], value
    # A list holding one nested list is the tensor itself, not one positional input.
    row = TensorSpec("r", (1, 3), "f32")
    assert named(feeds([[1.0, 2.0, 3.0]], [row])) == [("r", (1, 3), "f32", [[1.0, 2.0, 3.0]])]
    with pytest.raises(
        ValidationError, match="a single tensor was given, but the model has 2 inputs: 'y', 'x'"
    ):
        feeds(Tensor(ROWS), TWO)


def test_raw_bytes_take_the_static_shape_and_dtype() -> None:
    raw = Tensor(ROWS).tobytes()
    for value in (raw, bytearray(raw), memoryview(raw)):
        assert named(feeds({"x": value, "y": raw}, TWO))[1] == ("x", (2, 3), "f32", ROWS)
    with pytest.raises(
        ValidationError, match=r"input 'x': 20 bytes of data do not fill shape \[2, 3\]"
    ):
        feeds({"x": bytes(20), "y": raw}, TWO)
    dynamic = TensorSpec("v", (None, 4), "f32")
    with pytest.raises(
        ValidationError, match=r"raw bytes cannot fill the dynamic shape \[\?, 4\]; pass Tensor\("
    ):
        feeds(bytes(16), [dynamic])
    assert feeds(Tensor(bytes(16), shape=(1, 4), dtype="f32"), [dynamic])[0][1].shape == (1, 4)


def test_numbers_are_converted_to_the_input_dtype() -> None:
    ints = TensorSpec("ids", (1, 3), "i64")
    assert named(feeds([[1, 2, 3]], [ints])) == [("ids", (1, 3), "i64", [[1, 2, 3]])]
    assert named(feeds([[1.0, 2.0, 3.0]], [ints])) == [("ids", (1, 3), "i64", [[1, 2, 3]])]
    half = TensorSpec("h", (2,), "f16")
    assert named(feeds([1, 0.5], [half])) == [("h", (2,), "f16", [1.0, 0.5])]
    with pytest.raises(ValidationError, match=r"^input 'ids': 1.5 is not a whole number"):
        feeds([[1.5, 2, 3]], [ints])
    with pytest.raises(ValidationError, match="^input 'ids': "):
        feeds([[1, "2", 3]], [ints])
    with pytest.raises(ValidationError, match="^input 'ids': "):
        feeds([[1, 2], [3]], [ints])


def test_a_tensor_is_never_converted() -> None:
    with pytest.raises(
        ValidationError,
        match=r"^input 'x' must be f32, got f64; convert it with tensor.astype\('f32'\)$",
    ):
        feeds({"x": Tensor(ROWS, dtype="f64"), "y": ROWS}, TWO)
    with pytest.raises(ValidationError, match="input 'ids' must be i64, got i32"):
        feeds(Tensor([[1, 2, 3]], dtype="i32"), [TensorSpec("ids", (1, 3), "i64")])


# ---------------------------------------------------------------- feeds: names and shapes


def test_unknown_and_missing_names() -> None:
    with pytest.raises(
        ValidationError, match=r"^unknown input 'z', 'w'; the model's inputs are: 'y', 'x'$"
    ):
        feeds({"x": ROWS, "y": ROWS, "z": ROWS, "w": ROWS}, TWO)
    with pytest.raises(
        ValidationError,
        match=r"^missing input 'y'; the model needs all of: 'y', 'x' \(given: 'x'\)$",
    ):
        feeds({"x": ROWS}, TWO)
    with pytest.raises(ValidationError, match=r"missing input 'y', 'x'; .*\(given: none\)$"):
        feeds({}, TWO)
    with pytest.raises(ValidationError, match=r"the model's inputs are: \(none\)"):
        feeds({"x": ROWS}, [])


def test_shapes_are_checked_where_the_model_declares_them() -> None:
    with pytest.raises(
        ValidationError, match=r"^input 'x' has shape \[3, 2\], but the model wants \[2, 3\]$"
    ):  # no "'?' is any size" where no dimension is dynamic
        feeds({"x": Tensor(ROWS).reshape(3, 2), "y": ROWS}, TWO)
    with pytest.raises(ValidationError, match=r"input 'x' has shape \[1, 2, 3\]"):
        feeds({"x": [ROWS], "y": ROWS}, TWO)
    batch = TensorSpec("image", (None, 1, 2, 2), "f32")
    for n in (1, 7):
        assert feeds(Tensor.zeros((n, 1, 2, 2)), [batch])[0][1].shape == (n, 1, 2, 2)
    with pytest.raises(
        ValidationError, match=r"the model wants \[\?, 1, 2, 2\] \('\?' is any size\)"
    ):
        feeds(Tensor.zeros((3, 2, 2, 2)), [batch])
    anything = TensorSpec("x", None, "f32")
    for shape in ((1,), (2, 3), (1, 1, 1, 5)):
        assert feeds(Tensor.zeros(shape), [anything])[0][1].shape == shape
    with pytest.raises(ValidationError, match="input 'x' must be f32, got u8"):
        feeds(Tensor.zeros((2,), "u8"), [anything])


def test_flat_data_fills_a_static_shape_of_the_same_size() -> None:
    flat = array.array("f", range(6))
    assert feeds(flat, [X])[0][1].shape == (2, 3)
    assert feeds(list(range(6)), [X])[0][1].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    with pytest.raises(ValidationError, match=r"input 'x' has shape \[5\]"):
        feeds(array.array("f", range(5)), [X])
    with pytest.raises(ValidationError, match=r"has shape \[6\], but the model wants \[\?, 3\]"):
        feeds(list(range(6)), [TensorSpec("x", (None, 3), "f32")])  # no guessing a dynamic shape


def test_scalars_cannot_cross_the_host() -> None:
    one = TensorSpec("x", (1,), "f32")
    for value in (Tensor(2.0), 2.0, 2):
        with pytest.raises(
            ValidationError,
            match=r"^input 'x' is a scalar \(shape \(\)\), but the wasmtime host cannot pass "
            r"rank-0 tensors .*the model wants \[1\]: give the value that shape",
        ):
            feeds(value, [one])
    assert feeds([2.0], [one])[0][1].shape == (1,)
    declared = TensorSpec("s", (), "f32")
    for value in (Tensor([2.0]), 2.0):
        with pytest.raises(
            ValidationError,
            match="^input 's' is declared as a scalar .*re-export it with a \\[1\\] input$",
        ):
            feeds(value, [declared])
    with pytest.raises(ValidationError, match="is a scalar"):
        feeds({"q": Tensor(1.0)}, None)


def test_dtypes_wasi_nn_cannot_carry_are_refused() -> None:
    mask = TensorSpec("mask", (2,), "boolean")
    with pytest.raises(
        ValidationError,
        match=r"^input 'mask' has element type 'boolean', which wasi-nn cannot carry \(it carries "
        r"f16, bf16, f32, f64, u8, i32, i64\); this model cannot run on this host$",
    ):
        feeds({"mask": Tensor([1, 0], dtype="u8")}, [mask])


# ---------------------------------------------------------------- feeds without metadata


def test_without_metadata_only_a_mapping_of_anything_tensor_like() -> None:
    got = feeds({"b": ROWS, 7: Tensor([1], dtype="u8")}, None)
    assert named(got) == [("b", (2, 3), "f32", ROWS), ("7", (1,), "u8", [1])]
    for value in ([ROWS], Tensor(ROWS), ROWS):
        with pytest.raises(
            ValidationError, match="this model has no input metadata .*pass inputs as a mapping"
        ):
            feeds(value, None)


# ---------------------------------------------------------------- select


def test_select_checks_output_names() -> None:
    outs = [TensorSpec("prod", (2, 4), "f32"), TensorSpec("sum", (2, 3), "f32")]
    assert select(None, outs) is None
    assert select("sum", outs) == ["sum"]
    assert select(("sum", "prod"), outs) == ["sum", "prod"]
    assert select([], outs) == []
    with pytest.raises(
        ValidationError,
        match=r"^unknown output 'nope', 'x'; the model's outputs are: 'prod', 'sum'$",
    ):
        select(["sum", "nope", "x"], outs)
    assert select(["anything"], None) == ["anything"], "no metadata: checked after the run"
