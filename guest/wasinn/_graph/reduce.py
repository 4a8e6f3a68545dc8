"""Graph builder operations: reductions (reduce_*), arg_max and arg_min,
softmax, cumulative_sum, and quantize_linear / dequantize_linear.

Names, arguments and defaults follow WebNN's ``MLGraphBuilder`` in snake_case.
Where the lowering to ONNX is not one operator, the method's docstring says
what it becomes. Two host limits shape the allowed data types:

- bf16 has no kernels in onnxruntime for these operators, so bf16 operands
  are computed in f32 and the result is cast back (exact for max, min and the
  arg operations; better rounded than bf16 arithmetic for the others).
- u32 and u64, which WebNN allows for some of them, are refused: onnxruntime
  has no kernels for them, and OpenVINO's CPU plugin holds them in 32-bit
  signed integers, so values of 2**31 and more come out wrong. i64 is
  accepted, but the same plugin computes it in 32 bits too: sums, products
  and values beyond the i32 range wrap on this host.

An integer reduction is followed by ``Max(r, r)``, an identity, because the
CPU plugin otherwise fuses the next element-wise operation into the
reduction and computes it wrongly (see ``_reduce``).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from typing import Any

from .._errors import ValidationError
from .._formats.onnx_write import ONNX_TYPES
from .core import (
    FLOAT_DTYPES,
    WIDE_UNSIGNED,
    BuilderCore,
    Operand,
    Shape,
    dtype_name,
    shape_text,
    wide_unsigned_error,
)

_SUMMABLE = FLOAT_DTYPES | {"i32", "i64"}
_ORDERED = FLOAT_DTYPES | {"i8", "u8", "i32", "i64"}
_I32_MAX = 2**31 - 1
# The ranges quantize_linear saturates to, by the zero point's type.
_QUANT_RANGES = {
    "u8": (0.0, 255.0), "i8": (-128.0, 127.0), "uint4": (0.0, 15.0), "int4": (-8.0, 7.0),
}  # fmt: skip
# The largest f32 below 2**31 (f32 has no 2**31 - 1), and i32's range.
_I32_FLOAT_HIGH = 2.0**31 - 128
_I32_RANGE = (-(2**31), 2**31 - 1)


class ReductionFamily(BuilderCore):
    """See the module docstring; mixed into ``GraphOperations`` (and so ``GraphBuilder``)."""

    # ------------------------------------------------------------ shared checks

    def _family_dtype(
        self, op: str, x: Operand, allowed: Iterable[str], role: str = "input"
    ) -> None:
        if x.dtype in WIDE_UNSIGNED:
            raise wide_unsigned_error(op, role, x.dtype)
        self._check_dtype(op, x, allowed, role)

    def _flag(self, op: str, name: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise ValidationError(f"{op}: {name} must be True or False, not {value!r}")
        return value

    def _need_rank(self, op: str, x: Operand) -> None:
        if x.rank == 0:
            raise ValidationError(
                f"{op}: the input is a scalar (shape []), but {op} needs rank 1 or more"
            )

    def _widen(self, x: Operand) -> Operand:
        """``x`` in a type onnxruntime has kernels for: bf16 becomes f32."""
        if x.dtype != "bf16":
            return x
        return self._emit("Cast", [x], {"to": ONNX_TYPES["f32"]}, shape=x.shape, dtype="f32")

    def _narrow(self, y: Operand, dtype: str) -> Operand:
        """``y`` cast back to ``dtype`` if ``_widen`` changed it."""
        if y.dtype == dtype:
            return y
        return self._emit("Cast", [y], {"to": ONNX_TYPES[dtype]}, shape=y.shape, dtype=dtype)

    # ------------------------------------------------------------ reductions

    def _reduce(
        self,
        op: str,
        onnx_op: str,
        x: Any,
        axes: Iterable[int] | None,
        keep_dimensions: bool,
        allowed: Iterable[str],
        each: Callable[[Operand], Operand],
    ) -> Operand:
        """A WebNN reduction; ``each`` is what it does to a single value, used
        when ``axes`` is empty (nothing is reduced) or the input is a scalar."""
        x = self._own(op, x)
        self._family_dtype(op, x, allowed)
        keep = self._flag(op, "keep_dimensions", keep_dimensions)
        if isinstance(axes, Iterable) and not isinstance(axes, (str, bytes)):
            axes = list(axes)  # a generator is read once
        if x.rank == 0 and isinstance(axes, list) and axes:
            raise ValidationError(
                f"{op}: the input is a scalar (shape []), so axes must be empty or None, "
                f"not {axes!r}"
            )
        reduced = list(range(x.rank)) if axes is None else self._check_axes(op, axes, x.rank)
        wide = self._widen(x)
        if not reduced:
            # ONNX's noop_with_empty_axes returns the input unchanged, which is
            # wrong for L1, log-sum and sum-square: apply the function instead.
            return self._narrow(each(wide), x.dtype)
        if keep:
            shape: Shape = tuple(1 if i in reduced else d for i, d in enumerate(x.shape))
        else:
            shape = tuple(d for i, d in enumerate(x.shape) if i not in reduced)
        out = self._emit(
            onnx_op, [wide, self._ints(reduced)], {"keepdims": int(keep)},
            shape=shape, dtype=wide.dtype,
        )  # fmt: skip
        if out.dtype not in FLOAT_DTYPES:
            # OpenVINO 2026.4's CPU plugin computes an integer reduction wrongly
            # when it fuses the next element-wise operation with a constant into
            # it (reduce_sum(i32 [10, 5, 7], axes=[2]) + 1: 25 of 50 values wrong;
            # 192 of 900 such graphs in a sweep). Max(r, r) is the identity, and
            # the plugin does not fuse across it: 0 of the same 900 were wrong.
            out = self._emit("Max", [out, out], shape=out.shape, dtype=out.dtype)
        return self._narrow(out, x.dtype)

    def _same(self, x: Operand) -> Operand:
        return self._emit("Identity", [x], shape=x.shape, dtype=x.dtype)

    def _each(self, onnx_op: str) -> Callable[[Operand], Operand]:
        return lambda x: self._emit(onnx_op, [x], shape=x.shape, dtype=x.dtype)

    def _square(self, x: Operand) -> Operand:
        return self._emit("Mul", [x, x], shape=x.shape, dtype=x.dtype)

    def reduce_l1(
        self, x: Operand, *, axes: Iterable[int] | None = None, keep_dimensions: bool = False
    ) -> Operand:
        """The sum of absolute values over ``axes`` (all axes when ``None``).

        >>> norms = b.reduce_l1(x, axes=[1])          # [n, k] -> [n]
        """
        return self._reduce(
            "reduce_l1", "ReduceL1", x, axes, keep_dimensions, _SUMMABLE, self._each("Abs")
        )

    def reduce_l2(
        self, x: Operand, *, axes: Iterable[int] | None = None, keep_dimensions: bool = False
    ) -> Operand:
        """The square root of the sum of squares over ``axes`` (floats).

        >>> lengths = b.reduce_l2(vectors, axes=[1], keep_dimensions=True)
        """
        return self._reduce(
            "reduce_l2", "ReduceL2", x, axes, keep_dimensions, FLOAT_DTYPES, self._each("Abs")
        )

    def reduce_log_sum(
        self, x: Operand, *, axes: Iterable[int] | None = None, keep_dimensions: bool = False
    ) -> Operand:
        """The natural log of the sum over ``axes`` (floats).

        >>> y = b.reduce_log_sum(b.abs(x) + 1.0, axes=[0])
        """
        return self._reduce(
            "reduce_log_sum", "ReduceLogSum", x, axes, keep_dimensions, FLOAT_DTYPES,
            self._each("Log"),
        )  # fmt: skip

    def reduce_log_sum_exp(
        self, x: Operand, *, axes: Iterable[int] | None = None, keep_dimensions: bool = False
    ) -> Operand:
        """``log(sum(exp(x)))`` over ``axes`` (floats); over no axes it is ``x`` itself.

        >>> log_partition = b.reduce_log_sum_exp(logits, axes=[1])
        """
        return self._reduce(
            "reduce_log_sum_exp", "ReduceLogSumExp", x, axes, keep_dimensions, FLOAT_DTYPES,
            self._same,
        )  # fmt: skip

    def reduce_max(
        self, x: Operand, *, axes: Iterable[int] | None = None, keep_dimensions: bool = False
    ) -> Operand:
        """The largest value over ``axes``.

        >>> peak = b.reduce_max(image, axes=[0, 1])    # [h, w, c] -> [c]
        """
        return self._reduce(
            "reduce_max", "ReduceMax", x, axes, keep_dimensions, _ORDERED, self._same
        )

    def reduce_mean(
        self, x: Operand, *, axes: Iterable[int] | None = None, keep_dimensions: bool = False
    ) -> Operand:
        """The average over ``axes`` (floats).

        >>> pooled = b.reduce_mean(features, axes=[1], keep_dimensions=True)
        """
        return self._reduce(
            "reduce_mean", "ReduceMean", x, axes, keep_dimensions, FLOAT_DTYPES, self._same
        )

    def reduce_min(
        self, x: Operand, *, axes: Iterable[int] | None = None, keep_dimensions: bool = False
    ) -> Operand:
        """The smallest value over ``axes``.

        >>> low = b.reduce_min(x, axes=[1])
        """
        return self._reduce(
            "reduce_min", "ReduceMin", x, axes, keep_dimensions, _ORDERED, self._same
        )

    def reduce_product(
        self, x: Operand, *, axes: Iterable[int] | None = None, keep_dimensions: bool = False
    ) -> Operand:
        """The product over ``axes`` (ONNX ReduceProd).

        >>> volume = b.reduce_product(sizes, axes=[1])
        """
        return self._reduce(
            "reduce_product", "ReduceProd", x, axes, keep_dimensions, _SUMMABLE, self._same
        )

    def reduce_sum(
        self, x: Operand, *, axes: Iterable[int] | None = None, keep_dimensions: bool = False
    ) -> Operand:
        """The sum over ``axes``.

        >>> totals = b.reduce_sum(x, axes=[1], keep_dimensions=True)
        """
        return self._reduce(
            "reduce_sum", "ReduceSum", x, axes, keep_dimensions, _SUMMABLE, self._same
        )

    def reduce_sum_square(
        self, x: Operand, *, axes: Iterable[int] | None = None, keep_dimensions: bool = False
    ) -> Operand:
        """The sum of squares over ``axes``.

        >>> energy = b.reduce_sum_square(frames, axes=[1])
        """
        return self._reduce(
            "reduce_sum_square", "ReduceSumSquare", x, axes, keep_dimensions, _SUMMABLE,
            self._square,
        )  # fmt: skip

    # ------------------------------------------------------------ arg_max, arg_min

    def _arg(
        self, op: str, onnx_op: str, x: Any, axis: Any, keep_dimensions: bool, output_data_type: Any
    ) -> Operand:
        x = self._own(op, x)
        self._need_rank(op, x)
        self._family_dtype(op, x, _ORDERED)
        axis = self._check_axis(op, axis, x.rank)
        keep = self._flag(op, "keep_dimensions", keep_dimensions)
        out_type = dtype_name(output_data_type, f"{op}: output_data_type")
        if out_type not in ("i32", "i64"):
            raise ValidationError(
                f"{op}: output_data_type must be int32 or int64 (i32, i64), not {out_type}"
            )
        size = x.shape[axis]
        if out_type == "i32" and size is not None and size > _I32_MAX:
            raise ValidationError(
                f"{op}: dimension {axis} has {size} elements, more than int32 can index; "
                "use output_data_type='int64'"
            )
        if keep:
            shape: Shape = tuple(1 if i == axis else d for i, d in enumerate(x.shape))
        else:
            shape = x.shape[:axis] + x.shape[axis + 1 :]
        # select_last_index=0: of equal values the first wins, on both engines.
        attrs = {"axis": axis, "keepdims": int(keep), "select_last_index": 0}
        index = self._emit(onnx_op, [self._widen(x)], attrs, shape=shape, dtype="i64")
        return self._narrow(index, out_type)

    def arg_max(
        self,
        x: Operand,
        axis: int,
        *,
        keep_dimensions: bool = False,
        output_data_type: Any = "int32",
    ) -> Operand:
        """The index of the largest value along ``axis`` (the first one on ties), int32
        unless ``output_data_type="int64"``.

        >>> labels = b.arg_max(logits, axis=2)       # [n, t, classes] -> [n, t] int32
        """
        return self._arg("arg_max", "ArgMax", x, axis, keep_dimensions, output_data_type)

    def arg_min(
        self,
        x: Operand,
        axis: int,
        *,
        keep_dimensions: bool = False,
        output_data_type: Any = "int32",
    ) -> Operand:
        """The index of the smallest value along ``axis`` (the first one on ties).

        >>> nearest = b.arg_min(distances, axis=1, keep_dimensions=True)
        """
        return self._arg("arg_min", "ArgMin", x, axis, keep_dimensions, output_data_type)

    # ------------------------------------------------------------ softmax, cumulative_sum

    def softmax(self, x: Operand, axis: int) -> Operand:
        """``exp(x) / sum(exp(x))`` along ``axis`` (required, as in WebNN; floats).

        >>> probs = b.softmax(logits, axis=1)
        """
        x = self._own("softmax", x)
        self._need_rank("softmax", x)
        self._family_dtype("softmax", x, FLOAT_DTYPES)
        axis = self._check_axis("softmax", axis, x.rank)
        wide = self._widen(x)
        out = self._emit("Softmax", [wide], {"axis": axis}, shape=x.shape, dtype=wide.dtype)
        return self._narrow(out, x.dtype)

    def cumulative_sum(
        self, x: Operand, axis: int, *, exclusive: bool = False, reversed: bool = False
    ) -> Operand:
        """Running sums along ``axis``: ``[1, 2, 3]`` gives ``[1, 3, 6]``;
        ``exclusive=True`` leaves out each element itself (``[0, 1, 3]``) and
        ``reversed=True`` sums from the end (``[6, 5, 3]``).

        >>> cdf = b.cumulative_sum(histogram, axis=0)
        """
        op = "cumulative_sum"
        x = self._own(op, x)
        self._need_rank(op, x)
        self._family_dtype(op, x, _SUMMABLE)
        axis = self._check_axis(op, axis, x.rank)
        attrs = {
            "exclusive": int(self._flag(op, "exclusive", exclusive)),
            "reverse": int(self._flag(op, "reversed", reversed)),
        }
        wide = self._widen(x)
        where = self._const("i64", (), struct.pack("<q", axis))
        out = self._emit("CumSum", [wide, where], attrs, shape=x.shape, dtype=wide.dtype)
        return self._narrow(out, x.dtype)

    # ------------------------------------------------------------ quantization

    def _quant_params(
        self, op: str, x: Operand, scale: Any, zero_point: Any
    ) -> tuple[Operand, Operand]:
        scale = self._lead_ones(op, x, self._own(op, scale, "scale"), "scale")
        zero_point = self._lead_ones(op, x, self._own(op, zero_point, "zero_point"), "zero_point")
        if scale.shape != zero_point.shape:
            raise ValidationError(
                f"{op}: the scale's shape {shape_text(scale.shape)} and the zero_point's "
                f"{shape_text(zero_point.shape)} must be the same"
            )
        for i, (block, whole) in enumerate(zip(scale.shape, x.shape, strict=True)):
            if block is None:
                raise ValidationError(
                    f"{op}: the scale's shape {shape_text(scale.shape)} must be static "
                    f"(dimension {i} is dynamic)"
                )
            if block == 1 or block == whole:
                continue
            if whole is None:
                raise ValidationError(
                    f"{op}: dimension {i} of the input is dynamic, so a scale of size {block} "
                    "there cannot be checked to divide it; give that dimension a static size "
                    "or the scale size 1 there"
                )
            if whole % block:
                raise ValidationError(
                    f"{op}: the scale's shape {shape_text(scale.shape)} is not blockwise "
                    f"broadcastable to the input's {shape_text(x.shape)} (dimension {i}: {block} "
                    f"does not divide {whole})"
                )
        return scale, zero_point

    def _lead_ones(self, op: str, x: Operand, t: Operand, role: str) -> Operand:
        """``t`` (a scale or zero point) given the input's rank by leading
        size-1 dimensions, as numpy broadcasting lines up trailing ones: a
        per-axis scale [C] for an input [N, C] is [1, C]."""
        if t.rank > x.rank:
            raise ValidationError(
                f"{op}: the {role} has rank {t.rank}, more than the input's {x.rank}"
            )
        if t.rank == x.rank:
            return t
        if None in t.shape:
            raise ValidationError(f"{op}: the {role}'s shape {shape_text(t.shape)} must be static")
        dims = [1] * (x.rank - t.rank) + [int(d) for d in t.shape if d is not None]
        return self._emit("Reshape", [t, self._ints(dims)], shape=tuple(dims), dtype=t.dtype)

    def _blockwise(self, t: Operand, target: Shape) -> Operand:
        """``t`` with each element repeated along every axis where it has fewer
        (and more than one) elements than ``target``, as WebNN's blockwise
        broadcasting does; axes of size 1 are left to ordinary broadcasting."""
        for axis, whole in enumerate(target):
            block = t.shape[axis]
            if block == 1 or block == whole or whole is None or block is None:
                continue
            dims = [d for d in t.shape if d is not None]
            repeat = whole // block
            split = dims[: axis + 1] + [1] + dims[axis + 1 :]
            wide = dims[: axis + 1] + [repeat] + dims[axis + 1 :]
            done = dims[:axis] + [whole] + dims[axis + 1 :]
            t = self._emit("Reshape", [t, self._ints(split)], shape=tuple(split), dtype=t.dtype)
            t = self._emit("Expand", [t, self._ints(wide)], shape=tuple(wide), dtype=t.dtype)
            t = self._emit("Reshape", [t, self._ints(done)], shape=tuple(done), dtype=t.dtype)
        return t

    def _to(self, x: Operand, dtype: str) -> Operand:
        return self._emit("Cast", [x], {"to": ONNX_TYPES[dtype]}, shape=x.shape, dtype=dtype)

    def quantize_linear(self, x: Operand, scale: Operand, zero_point: Operand) -> Operand:
        """``clamp(round_even(x / scale) + zero_point)`` to the range of the
        ``zero_point``'s type (u8, i8, i32, uint4 or int4); ``scale`` (the
        input's float type) and ``zero_point`` divide the input's dimensions
        (blockwise), lined up from the last one as numpy broadcasts (a
        per-axis scale [C] for [N, C]).

        Written out with Div, Round, Add, Clip and Cast rather than ONNX's
        QuantizeLinear, which at opset 18 takes neither f16 nor blocks.

        An i32 zero point is added in integers, so that the result is exact
        where a float sum would round (above 2**24): the rounded quotient,
        saturated into i32 in f32, is cast to i32 and the zero point added
        with saturation. A quotient of 2**31 - 128 or more in size (the
        input beyond the i32 range already) takes WebNN's float sum instead,
        saturated to i32. u32 zero points are refused (see the module
        docstring).

        >>> q = b.quantize_linear(x, b.constant([[0.05]]), b.constant([[128]], dtype="u8"))
        """
        op = "quantize_linear"
        x = self._own(op, x)
        self._family_dtype(op, x, ("f32", "f16"))
        scale, zero_point = self._quant_params(op, x, scale, zero_point)
        if scale.dtype != x.dtype:
            raise ValidationError(
                f"{op}: the scale is {scale.dtype}, the input {x.dtype}; they must match"
            )
        self._family_dtype(op, zero_point, (*_QUANT_RANGES, "i32"), "zero_point")
        steps = self._emit(
            "Div", [x, self._blockwise(scale, x.shape)], shape=x.shape, dtype=x.dtype
        )
        rounded = self._emit("Round", [steps], shape=x.shape, dtype=x.dtype)
        if zero_point.dtype == "i32":
            return self._quantize_i32(rounded, zero_point)
        low, high = _QUANT_RANGES[zero_point.dtype]
        offset = self._blockwise(self._to(zero_point, x.dtype), x.shape)
        shifted = self._emit("Add", [rounded, offset], shape=x.shape, dtype=x.dtype)
        bounds = [self._scalar(v, x.dtype, op) for v in (low, high)]
        clamped = self._emit("Clip", [shifted, *bounds], shape=x.shape, dtype=x.dtype)
        return self._to(clamped, zero_point.dtype)

    def _quantize_i32(self, rounded: Operand, zero_point: Operand) -> Operand:
        """``rounded + zero_point`` saturated to i32, exact while ``rounded``
        (whole numbers, f32 or f16) is within ``_I32_FLOAT_HIGH``."""
        op, shape = "quantize_linear", rounded.shape
        r = self._to(rounded, "f32") if rounded.dtype != "f32" else rounded
        low, high = (self._scalar(v, "f32", op) for v in (-_I32_FLOAT_HIGH, _I32_FLOAT_HIGH))
        a = self._to(self._emit("Clip", [r, low, high], shape=shape, dtype="f32"), "i32")
        z = self._blockwise(zero_point, shape)
        total = self._emit("Add", [a, z], shape=shape, dtype="i32")
        # Two's complement: the sum wrapped iff both terms have one sign and
        # the sum the other (signs compared with 0, which the host does exactly).
        zero = self._scalar(0, "i32", op)
        a_neg, z_neg, sum_neg = (
            self._emit("Less", [v, zero], shape=v.shape, dtype="bool") for v in (a, z, total)
        )
        same = self._emit(
            "Not",
            [self._emit("Xor", [a_neg, z_neg], shape=shape, dtype="bool")],
            shape=shape,
            dtype="bool",
        )
        flipped = self._emit("Xor", [sum_neg, a_neg], shape=shape, dtype="bool")
        wrapped = self._emit("And", [same, flipped], shape=shape, dtype="bool")
        lowest, highest = (self._scalar(v, "i32", op) for v in _I32_RANGE)
        limit = self._emit("Where", [a_neg, lowest, highest], shape=shape, dtype="i32")
        exact = self._emit("Where", [wrapped, limit, total], shape=shape, dtype="i32")
        # Beyond that range, WebNN's own float arithmetic, saturated at i32's
        # ends (f32 holds -2**31 but not 2**31 - 1, so the top end is picked).
        summed = self._emit("Add", [r, self._to(z, "f32")], shape=shape, dtype="f32")
        bottom = self._scalar(_I32_RANGE[0], "f32", op)
        clamped = self._to(
            self._emit("Clip", [summed, bottom, high], shape=shape, dtype="f32"), "i32"
        )
        over = self._emit(
            "GreaterOrEqual", [summed, self._scalar(2.0**31, "f32", op)], shape=shape, dtype="bool"
        )
        rounded_sum = self._emit("Where", [over, highest, clamped], shape=shape, dtype="i32")
        inside = self._emit(
            "Less",
            [self._emit("Abs", [r], shape=shape, dtype="f32"), high],
            shape=shape,
            dtype="bool",
        )
        return self._emit("Where", [inside, exact, rounded_sum], shape=shape, dtype="i32")

    def dequantize_linear(self, x: Operand, scale: Operand, zero_point: Operand) -> Operand:
        """``(x - zero_point) * scale`` in the ``scale``'s float type (f32 or f16);
        ``x`` and ``zero_point`` are u8, i8, i32, uint4 or int4 of one type, and
        ``scale`` and ``zero_point`` divide the input's dimensions (blockwise),
        lined up from the last one as numpy broadcasts. 4-bit operands are
        constants (wasi-nn cannot feed them); the graph is then written at
        ONNX opset 21, the first with 4-bit types.

        Written out with Cast, Sub and Mul rather than ONNX's DequantizeLinear,
        which at opset 18 takes neither f16 results nor blocks.

        >>> x = b.dequantize_linear(q, b.constant([[0.05]]), b.constant([[128]], dtype="u8"))
        """
        op = "dequantize_linear"
        x = self._own(op, x)
        self._family_dtype(op, x, ("u8", "i8", "i32", "uint4", "int4"))
        scale, zero_point = self._quant_params(op, x, scale, zero_point)
        self._family_dtype(op, scale, ("f32", "f16"), "scale")
        if zero_point.dtype != x.dtype:
            raise ValidationError(
                f"{op}: the zero_point is {zero_point.dtype}, the input {x.dtype}; they must match"
            )
        real = scale.dtype
        offset = self._blockwise(self._to(zero_point, real), x.shape)
        centred = self._emit("Sub", [self._to(x, real), offset], shape=x.shape, dtype=real)
        return self._emit(
            "Mul", [centred, self._blockwise(scale, x.shape)], shape=x.shape, dtype=real
        )
