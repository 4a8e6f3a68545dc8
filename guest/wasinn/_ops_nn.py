"""Graph builder operations: matrix products (matmul, gemm), convolutions,
pooling, resampling and normalizations.

Names, arguments and defaults follow WebNN's ``MLGraphBuilder`` in snake_case.
ONNX takes images as NCHW and filters as OIHW (IOHW for transposed
convolutions); the other WebNN layouts are lowered to ``Transpose`` nodes
around the ONNX operator, which the host's engine folds for constants.

Where the ONNX operator differs from WebNN, or where onnxruntime and
OpenVINO (the host) disagree, the method's docstring says how it is lowered
or what is refused. Those limits, found by running both engines:

- Pooling padding must be smaller than the window in each dimension: ONNX
  requires it (onnxruntime refuses the model, OpenVINO's AveragePool too).
- With ``output_shape_rounding="ceil"`` a last window that would start inside
  the ending padding is refused: onnxruntime drops such a window, OpenVINO's
  MaxPool keeps it, and WebNN does not say what it holds.
- ``resample2d`` in linear mode on integers interpolates in f32 and rounds
  halves up: onnxruntime truncates and OpenVINO rounds, so the builder does
  the rounding itself.
- OpenVINO's LpPool is wrong on windows that ceil rounding cuts off, and it
  has no GlobalLpPool: ``l2_pool2d`` pads explicitly and reduces globally
  with ReduceL2 (see its docstring).

Data types are WebNN's: f32 and f16, plus i8 and u8 for ``max_pool2d`` (of
WebNN's "any", what ONNX MaxPool takes) and ``resample2d``.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Sequence
from typing import Any

from ._errors import ValidationError
from ._graph_core import BuilderCore, Operand, Shape, shape_text
from ._onnx_write import ONNX_TYPES, AttrValue
from ._tensor import Tensor

_FLOATS = ("f32", "f16")
_LAYOUTS = ("nchw", "nhwc")
_TO_NCHW = (0, 3, 1, 2)
_TO_NHWC = (0, 2, 3, 1)
# Permutations taking each WebNN filter layout to the one ONNX wants.
_CONV_FILTERS: dict[str, tuple[int, ...] | None] = {
    "oihw": None, "hwio": (3, 2, 0, 1), "ohwi": (0, 3, 1, 2), "ihwo": (3, 0, 1, 2),
}  # fmt: skip
_CONV_TRANSPOSE_FILTERS: dict[str, tuple[int, ...] | None] = {
    "iohw": None, "hwoi": (3, 2, 0, 1), "ohwi": (3, 0, 1, 2),
}  # fmt: skip
_MAX_POOL_DTYPES = ("f32", "f16", "i8", "u8")  # what ONNX MaxPool takes
_RESAMPLE_DTYPES = ("f32", "f16", "i8", "u8")
_RESAMPLE_MODES = ("nearest-neighbor", "linear")
# How far below a half an interpolated integer may be and still round up.
_HALF_MARGIN = 2.0**-10


def _fits(a: int | None, b: int | None) -> bool:
    """Whether two dimensions can be equal (a dynamic one may be anything)."""
    return a is None or b is None or a == b


def _out_size(
    size: int | None, window: int, dilation: int, begin: int, end: int, stride: int
) -> tuple[int | None, int | None]:
    """A sliding window's output size, rounded down and up (``None`` if dynamic)."""
    if size is None:
        return None, None
    span = size - ((window - 1) * dilation + 1) + begin + end
    return span // stride + 1, -(-span // stride) + 1


def _taps(size: int, out: int, window: int, begin: int, stride: int, dilation: int) -> list[int]:
    """How many taps of each of ``out`` windows fall on the ``size`` real elements."""
    return [
        sum(0 <= o * stride - begin + k * dilation < size for k in range(window))
        for o in range(out)
    ]


class NetworkOps(BuilderCore):
    """See the module docstring; mixed into ``GraphBuilder``."""

    # ------------------------------------------------------------ shared checks

    def _nn_input(self, op: str, value: Any, rank: int | None, dtypes: Iterable[str]) -> Operand:
        x = self._own(op, value)
        self._check_dtype(op, x, dtypes)
        if rank is not None and x.rank != rank:
            raise ValidationError(
                f"{op}: the input must be {rank}-D, not {x.rank}-D {shape_text(x.shape)}"
            )
        return x

    def _nn_like(
        self, op: str, ref: Operand, value: Any, role: str, ref_role: str = "input"
    ) -> Operand:
        """``value`` as an operand of ``ref``'s data type."""
        operand = self._own(op, value, role)
        if operand.dtype != ref.dtype:
            raise ValidationError(
                f"{op}: the {role} is {operand.dtype}, but the {ref_role} is {ref.dtype}; "
                "they must have the same data type"
            )
        return operand

    def _nn_vector(self, op: str, ref: Operand, value: Any, role: str, size: int | None) -> Operand:
        """A 1-D operand of ``size`` elements (per channel: mean, scale, bias)."""
        operand = self._nn_like(op, ref, value, role)
        if operand.rank != 1 or not _fits(operand.shape[0], size):
            want = "?" if size is None else str(size)
            raise ValidationError(
                f"{op}: the {role} must have shape [{want}], not {shape_text(operand.shape)}"
            )
        return operand

    def _nn_ints(self, op: str, name: str, value: Any, length: int, minimum: int) -> list[int]:
        items = None
        if not isinstance(value, (str, bytes)) and isinstance(value, Iterable):
            items = list(value)
        ok = items is not None and len(items) == length
        ok = ok and all(
            isinstance(v, int) and not isinstance(v, bool) and minimum <= v < 2**32
            for v in items or ()
        )
        if not ok or items is None:
            raise ValidationError(
                f"{op}: {name} must be a list of {length} integers of at least {minimum}, "
                f"not {value!r}"
            )
        return items

    def _nn_choice(self, op: str, name: str, value: Any, allowed: Iterable[str]) -> str:
        allowed = tuple(allowed)
        if value not in allowed:
            raise ValidationError(
                f"{op}: {name} must be one of {', '.join(repr(a) for a in allowed)}, "
                f"not {value!r}"
            )
        return str(value)

    def _nn_number(self, op: str, name: str, value: Any) -> float:
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            raise ValidationError(f"{op}: {name} must be a finite number, not {value!r}")
        return float(value)

    def _nn_flag(self, op: str, name: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise ValidationError(f"{op}: {name} must be True or False, not {value!r}")
        return value

    # ------------------------------------------------------------ small lowerings

    def _nn_transpose(self, x: Operand, perm: Sequence[int] | None) -> Operand:
        if perm is None:
            return x
        shape = tuple(x.shape[p] for p in perm)
        return self._emit("Transpose", [x], {"perm": list(perm)}, shape=shape, dtype=x.dtype)

    def _nn_unsqueeze(self, x: Operand, axes: Sequence[int]) -> Operand:
        """``x`` with dimensions of 1 inserted at ``axes`` (positions in the result)."""
        if not axes:
            return x
        dims = iter(x.shape)
        rank = x.rank + len(axes)
        shape = tuple(1 if i in axes else next(dims) for i in range(rank))
        return self._emit("Unsqueeze", [x, self._ints(list(axes))], shape=shape, dtype=x.dtype)

    def _nn_filled(self, value: float, dtype: str, shape: Sequence[int]) -> Operand:
        """A constant of ``shape`` with every element ``value`` (default scale and bias)."""
        count = math.prod(shape)
        return self._const(dtype, tuple(shape), Tensor([value] * count, dtype=dtype).tobytes())

    def _nn_mean(self, x: Operand, axes: Sequence[int]) -> Operand:
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        return self._emit(
            "ReduceMean", [x, self._ints(list(axes))], {"keepdims": 1}, shape=shape, dtype=x.dtype
        )

    def _nn_standardize(self, op: str, x: Operand, axes: Sequence[int], epsilon: float) -> Operand:
        """``(x - mean) / sqrt(variance + epsilon)`` over ``axes``, as WebNN defines it."""
        if not axes:
            # Nothing is reduced: the mean is x itself and the variance 0.
            return self._binary(op, "Sub", x, x)
        centred = self._binary(op, "Sub", x, self._nn_mean(x, axes))
        variance = self._nn_mean(self._binary(op, "Mul", centred, centred), axes)
        spread = self._unary(op, "Sqrt", self._binary(op, "Add", variance, epsilon))
        return self._binary(op, "Div", centred, spread)

    def _nn_affine(
        self, op: str, y: Operand, scale: Operand | None, bias: Operand | None
    ) -> Operand:
        if scale is not None:
            y = self._binary(op, "Mul", y, scale)
        if bias is not None:
            y = self._binary(op, "Add", y, bias)
        return y

    # ------------------------------------------------------------ matrix products

    def matmul(self, a: Operand, b: Operand) -> Operand:
        """The matrix product of the last two dimensions; the dimensions before
        them (batches) broadcast.

        >>> y = builder.matmul(x, w)      # [n, 4, 3] @ [3, 2] -> [n, 4, 2]
        """
        op = "matmul"
        a = self._own(op, a, "first input")
        b = self._own(op, b, "second input")
        self._check_dtype(op, a, _FLOATS, "first input")
        self._nn_like(op, a, b, "second input", "first input")
        if a.rank < 2 or b.rank < 2:
            raise ValidationError(
                f"{op}: both inputs must have rank 2 or more, not {shape_text(a.shape)} and "
                f"{shape_text(b.shape)}"
            )
        if not _fits(a.shape[-1], b.shape[-2]):
            raise ValidationError(
                f"{op}: the first input has {a.shape[-1]} columns and the second "
                f"{b.shape[-2]} rows ({shape_text(a.shape)} and {shape_text(b.shape)}); "
                "they must be equal"
            )
        try:
            batch = self._broadcast(op, a.shape[:-2], b.shape[:-2])
        except ValidationError as exc:
            raise ValidationError(
                f"{op}: the batch dimensions of {shape_text(a.shape)} and {shape_text(b.shape)} "
                f"cannot be broadcast ({exc})"
            ) from None
        shape = (*batch, a.shape[-2], b.shape[-1])
        return self._emit("MatMul", [a, b], shape=shape, dtype=a.dtype)

    def gemm(
        self,
        a: Operand,
        b: Operand,
        *,
        c: Operand | None = None,
        alpha: float = 1.0,
        beta: float = 1.0,
        a_transpose: bool = False,
        b_transpose: bool = False,
    ) -> Operand:
        """``alpha * A @ B + beta * c`` for 2-D ``a`` and ``b`` (each optionally
        transposed first); ``c`` broadcasts to the result.

        >>> y = builder.gemm(x, w, c=bias, b_transpose=True)   # a dense layer
        """
        op = "gemm"
        a = self._own(op, a, "first input")
        b = self._own(op, b, "second input")
        self._check_dtype(op, a, _FLOATS, "first input")
        self._nn_like(op, a, b, "second input", "first input")
        if a.rank != 2 or b.rank != 2:
            raise ValidationError(
                f"{op}: both inputs must be 2-D, not {shape_text(a.shape)} and "
                f"{shape_text(b.shape)}"
            )
        alpha = self._nn_number(op, "alpha", alpha)
        beta = self._nn_number(op, "beta", beta)
        a_t = self._nn_flag(op, "a_transpose", a_transpose)
        b_t = self._nn_flag(op, "b_transpose", b_transpose)
        rows, inner_a = reversed(a.shape) if a_t else a.shape
        inner_b, cols = reversed(b.shape) if b_t else b.shape
        if not _fits(inner_a, inner_b):
            raise ValidationError(
                f"{op}: A is {rows}x{inner_a} and B {inner_b}x{cols} (after the transposes "
                "asked for); A's columns must equal B's rows"
            )
        inputs: list[Operand] = [a, b]
        if c is not None:
            c = self._nn_like(op, a, c, "c", "first input")
            target = (rows, cols)
            ok = c.rank <= 2 and all(
                cd == 1 or _fits(cd, td)
                for cd, td in zip(reversed(c.shape), reversed(target), strict=False)
            )
            if not ok:
                raise ValidationError(
                    f"{op}: c {shape_text(c.shape)} does not broadcast to the result "
                    f"{shape_text(target)} (it needs rank 0 to 2, each dimension 1 or equal)"
                )
            inputs.append(c)
        attrs: dict[str, AttrValue] = {
            "alpha": alpha, "beta": beta, "transA": int(a_t), "transB": int(b_t),
        }  # fmt: skip
        return self._emit("Gemm", inputs, attrs, shape=(rows, cols), dtype=a.dtype)

    # ------------------------------------------------------------ convolutions

    def _nn_conv_options(
        self, op: str, padding: Any, strides: Any, dilations: Any, groups: Any, layout: Any
    ) -> tuple[list[int], list[int], list[int], int, str]:
        pads = self._nn_ints(op, "padding", padding, 4, 0)
        steps = self._nn_ints(op, "strides", strides, 2, 1)
        dils = self._nn_ints(op, "dilations", dilations, 2, 1)
        if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
            raise ValidationError(f"{op}: groups must be a positive integer, not {groups!r}")
        return pads, steps, dils, groups, self._nn_choice(op, "input_layout", layout, _LAYOUTS)

    def conv2d(
        self,
        input: Operand,
        filter: Operand,
        *,
        padding: Sequence[int] = (0, 0, 0, 0),
        strides: Sequence[int] = (1, 1),
        dilations: Sequence[int] = (1, 1),
        groups: int = 1,
        input_layout: str = "nchw",
        filter_layout: str = "oihw",
        bias: Operand | None = None,
    ) -> Operand:
        """A 2-D convolution of a 4-D input with a 4-D filter.

        ``padding`` is ``[top, bottom, left, right]`` (WebNN's order);
        ``input_layout`` is ``"nchw"`` or ``"nhwc"``, ``filter_layout`` one of
        ``"oihw"``, ``"hwio"``, ``"ohwi"``, ``"ihwo"``; other layouts than NCHW
        and OIHW become transposes around ONNX Conv.

        >>> y = builder.conv2d(x, w, padding=[1, 1, 1, 1], input_layout="nhwc", bias=b)
        """
        op = "conv2d"
        x = self._nn_input(op, input, 4, _FLOATS)
        w = self._nn_like(op, x, filter, "filter")
        if w.rank != 4:
            raise ValidationError(f"{op}: the filter must be 4-D, not {shape_text(w.shape)}")
        pads, steps, dils, groups, layout = self._nn_conv_options(
            op, padding, strides, dilations, groups, input_layout
        )
        w_layout = self._nn_choice(op, "filter_layout", filter_layout, _CONV_FILTERS)
        x = self._nn_transpose(x, _TO_NCHW if layout == "nhwc" else None)
        w = self._nn_transpose(w, _CONV_FILTERS[w_layout])
        batches, channels, height, width = x.shape
        out_channels, per_group, kh, kw = w.shape
        if channels is not None and channels % groups:
            raise ValidationError(
                f"{op}: the input's {channels} channels cannot be split into {groups} groups"
            )
        if channels is not None and not _fits(channels // groups, per_group):
            raise ValidationError(
                f"{op}: the filter takes {per_group} input channels per group, but the input "
                f"has {channels} channels in {groups} group(s) ({channels // groups} per group)"
            )
        if out_channels is not None and out_channels % groups:
            raise ValidationError(
                f"{op}: the filter's {out_channels} output channels cannot be split into "
                f"{groups} groups"
            )
        inputs = [x, w]
        if bias is not None:
            inputs.append(self._nn_vector(op, x, bias, "bias", out_channels))
        out_h = out_w = None
        if kh is not None and kw is not None:
            out_h = _out_size(height, kh, dils[0], pads[0], pads[1], steps[0])[0]
            out_w = _out_size(width, kw, dils[1], pads[2], pads[3], steps[1])[0]
            if (out_h is not None and out_h < 1) or (out_w is not None and out_w < 1):
                raise ValidationError(
                    f"{op}: the filter ({kh}x{kw}, dilations {dils}) does not fit the padded "
                    f"input ({height}x{width}, padding {pads})"
                )
        attrs: dict[str, AttrValue] = {
            "pads": [pads[0], pads[2], pads[1], pads[3]],
            "strides": steps,
            "dilations": dils,
            "group": groups,
        }
        y = self._emit(
            "Conv", inputs, attrs, shape=(batches, out_channels, out_h, out_w), dtype=x.dtype
        )
        return self._nn_transpose(y, _TO_NHWC if layout == "nhwc" else None)

    def conv_transpose2d(
        self,
        input: Operand,
        filter: Operand,
        *,
        padding: Sequence[int] = (0, 0, 0, 0),
        strides: Sequence[int] = (1, 1),
        dilations: Sequence[int] = (1, 1),
        output_padding: Sequence[int] = (0, 0),
        output_sizes: Sequence[int] | None = None,
        groups: int = 1,
        input_layout: str = "nchw",
        filter_layout: str = "iohw",
        bias: Operand | None = None,
    ) -> Operand:
        """A 2-D transposed convolution (the gradient of conv2d; an upsampling layer).

        ``filter_layout`` is ``"iohw"``, ``"hwoi"`` or ``"ohwi"``. The output
        is ``(size - 1) * stride + (filter - 1) * dilation + 1 - padding +
        output_padding`` per spatial dimension, or ``output_sizes`` when given
        (which then must lie within one stride of the computed size, and
        needs the input's height and width to be static).

        >>> up = builder.conv_transpose2d(x, w, strides=[2, 2], output_padding=[1, 1])
        """
        op = "conv_transpose2d"
        x = self._nn_input(op, input, 4, _FLOATS)
        w = self._nn_like(op, x, filter, "filter")
        if w.rank != 4:
            raise ValidationError(f"{op}: the filter must be 4-D, not {shape_text(w.shape)}")
        pads, steps, dils, groups, layout = self._nn_conv_options(
            op, padding, strides, dilations, groups, input_layout
        )
        extra = self._nn_ints(op, "output_padding", output_padding, 2, 0)
        w_layout = self._nn_choice(op, "filter_layout", filter_layout, _CONV_TRANSPOSE_FILTERS)
        sizes = None
        if output_sizes is not None:
            sizes = self._nn_ints(op, "output_sizes", output_sizes, 2, 1)
        elif extra[0] >= steps[0] or extra[1] >= steps[1]:
            raise ValidationError(
                f"{op}: output_padding {extra} must be smaller than strides {steps}"
            )
        x = self._nn_transpose(x, _TO_NCHW if layout == "nhwc" else None)
        w = self._nn_transpose(w, _CONV_TRANSPOSE_FILTERS[w_layout])
        batches, channels, height, width = x.shape
        filter_in, per_group, kh, kw = w.shape
        if not _fits(channels, filter_in):
            raise ValidationError(
                f"{op}: the input has {channels} channels but the filter takes {filter_in}"
            )
        known_in = channels if channels is not None else filter_in
        if known_in is not None and known_in % groups:
            raise ValidationError(
                f"{op}: the input's {known_in} channels cannot be split into {groups} groups"
            )
        out_channels = None if per_group is None else per_group * groups
        inputs = [x, w]
        if bias is not None:
            inputs.append(self._nn_vector(op, x, bias, "bias", out_channels))
        out: list[int | None] = []
        for i, (size, k) in enumerate(((height, kh), (width, kw))):
            calc = None
            if size is not None and k is not None:
                calc = (size - 1) * steps[i] + (k - 1) * dils[i] + 1 - pads[2 * i] - pads[2 * i + 1]
            if sizes is None:
                out.append(None if calc is None else calc + extra[i])
                continue
            if calc is None:
                raise ValidationError(
                    f"{op}: output_sizes needs the input's height and width and the filter's "
                    f"to be static, not input {shape_text(x.shape)} and filter "
                    f"{shape_text(w.shape)}; use output_padding instead"
                )
            if not calc <= sizes[i] < calc + steps[i]:
                raise ValidationError(
                    f"{op}: output_sizes {sizes} is out of range: dimension {i} must be from "
                    f"{calc} to {calc + steps[i] - 1}"
                )
            extra[i] = sizes[i] - calc
            out.append(sizes[i])
        if any(d is not None and d < 1 for d in out):
            raise ValidationError(
                f"{op}: the padding {pads} leaves no output ({out[0]}x{out[1]})"
            )
        attrs: dict[str, AttrValue] = {
            "pads": [pads[0], pads[2], pads[1], pads[3]],
            "strides": steps,
            "dilations": dils,
            "group": groups,
            "output_padding": extra,
        }
        y = self._emit(
            "ConvTranspose", inputs, attrs, shape=(batches, out_channels, *out), dtype=x.dtype
        )
        return self._nn_transpose(y, _TO_NHWC if layout == "nhwc" else None)

    # ------------------------------------------------------------ pooling

    def average_pool2d(
        self,
        input: Operand,
        *,
        window_dimensions: Sequence[int] | None = None,
        padding: Sequence[int] = (0, 0, 0, 0),
        strides: Sequence[int] = (1, 1),
        dilations: Sequence[int] = (1, 1),
        layout: str = "nchw",
        output_shape_rounding: str = "floor",
        output_sizes: Sequence[int] | None = None,
    ) -> Operand:
        """The mean of each window (padding is not counted in the mean).

        Without ``window_dimensions`` the window is the whole image (global
        pooling, a ReduceMean, fine with dynamic sizes). With ``dilations``
        other than 1 (ONNX AveragePool has none before opset 19) it is
        lowered to window sums of the padded input's positive and negative
        parts (LpPool with p=1) divided by the count of real elements.

        >>> y = builder.average_pool2d(x, window_dimensions=[2, 2], strides=[2, 2])
        """
        return self._nn_pool(
            "average_pool2d", input, window_dimensions, padding, strides, dilations, layout,
            output_shape_rounding, output_sizes,
        )  # fmt: skip

    def l2_pool2d(
        self,
        input: Operand,
        *,
        window_dimensions: Sequence[int] | None = None,
        padding: Sequence[int] = (0, 0, 0, 0),
        strides: Sequence[int] = (1, 1),
        dilations: Sequence[int] = (1, 1),
        layout: str = "nchw",
        output_shape_rounding: str = "floor",
        output_sizes: Sequence[int] | None = None,
    ) -> Operand:
        """The L2 norm (square root of the sum of squares) of each window.

        Lowered to ONNX LpPool (p=2) on an explicitly zero-padded input:
        OpenVINO's LpPool gets windows cut off by ceil rounding wrong, so the
        padding is made large enough that no window is cut off. Without
        ``window_dimensions``: ReduceL2 over the image.

        >>> y = builder.l2_pool2d(x, window_dimensions=[3, 3], padding=[1, 1, 1, 1])
        """
        return self._nn_pool(
            "l2_pool2d", input, window_dimensions, padding, strides, dilations, layout,
            output_shape_rounding, output_sizes,
        )  # fmt: skip

    def max_pool2d(
        self,
        input: Operand,
        *,
        window_dimensions: Sequence[int] | None = None,
        padding: Sequence[int] = (0, 0, 0, 0),
        strides: Sequence[int] = (1, 1),
        dilations: Sequence[int] = (1, 1),
        layout: str = "nchw",
        output_shape_rounding: str = "floor",
        output_sizes: Sequence[int] | None = None,
    ) -> Operand:
        """The largest element of each window (f32, f16, i8 or u8: what ONNX MaxPool takes).

        >>> y = builder.max_pool2d(x, window_dimensions=[2, 2], strides=[2, 2], layout="nhwc")
        """
        return self._nn_pool(
            "max_pool2d", input, window_dimensions, padding, strides, dilations, layout,
            output_shape_rounding, output_sizes,
        )  # fmt: skip

    def _nn_pool(
        self,
        op: str,
        input: Any,
        window_dimensions: Any,
        padding: Any,
        strides: Any,
        dilations: Any,
        layout: Any,
        output_shape_rounding: Any,
        output_sizes: Any,
    ) -> Operand:
        x = self._nn_input(op, input, 4, _MAX_POOL_DTYPES if op == "max_pool2d" else _FLOATS)
        layout = self._nn_choice(op, "layout", layout, _LAYOUTS)
        rounding = self._nn_choice(
            op, "output_shape_rounding", output_shape_rounding, ("floor", "ceil")
        )
        pads = self._nn_ints(op, "padding", padding, 4, 0)
        steps = self._nn_ints(op, "strides", strides, 2, 1)
        dils = self._nn_ints(op, "dilations", dilations, 2, 1)
        sizes = None
        if output_sizes is not None:
            sizes = self._nn_ints(op, "output_sizes", output_sizes, 2, 1)
            if any(pads):
                # WebNN resets the padding to 0 when output_sizes is given; an
                # error is kinder than silently ignoring what was asked for.
                raise ValidationError(
                    f"{op}: padding {pads} cannot be combined with output_sizes (WebNN ignores "
                    "the padding then); give one or the other"
                )
        spatial = (2, 3) if layout == "nchw" else (1, 2)
        height, width = (x.shape[a] for a in spatial)
        if window_dimensions is None and not any(pads) and dils == [1, 1]:
            return self._nn_global_pool(op, x, spatial, sizes)
        if window_dimensions is None:
            if height is None or width is None:
                raise ValidationError(
                    f"{op}: the window defaults to the whole image, whose size is dynamic here "
                    f"{shape_text(x.shape)}; give window_dimensions, or leave padding and "
                    "dilations at their defaults for a global pool"
                )
            window = [height, width]
        else:
            window = self._nn_ints(op, "window_dimensions", window_dimensions, 2, 1)
        if any(p >= window[i // 2] for i, p in enumerate(pads)):
            raise ValidationError(
                f"{op}: padding {pads} must be smaller than the window {window} in each "
                "dimension (ONNX pooling requires it)"
            )
        out, ceil = self._nn_pool_sizes(
            op, (height, width), window, pads, steps, dils, rounding, sizes
        )
        x = self._nn_transpose(x, _TO_NCHW if layout == "nhwc" else None)
        shape = (x.shape[0], x.shape[1], out[0], out[1])
        attrs: dict[str, AttrValue] = {
            "kernel_shape": window,
            "pads": [pads[0], pads[2], pads[1], pads[3]],
            "strides": steps,
            "ceil_mode": int(ceil),
        }
        if op == "max_pool2d":
            y = self._emit("MaxPool", [x], {**attrs, "dilations": dils}, shape=shape, dtype=x.dtype)
        elif op == "average_pool2d" and dils == [1, 1]:
            attrs["count_include_pad"] = 0
            y = self._emit("AveragePool", [x], attrs, shape=shape, dtype=x.dtype)
        elif op == "average_pool2d":
            y = self._nn_dilated_average(x, window, pads, steps, dils, ceil, shape)
        else:
            y = self._nn_window_sum(x, 2, window, pads, steps, dils, ceil, shape)
        return self._nn_transpose(y, _TO_NHWC if layout == "nhwc" else None)

    def _nn_pool_sizes(
        self,
        op: str,
        dims: tuple[int | None, int | None],
        window: list[int],
        pads: list[int],
        steps: list[int],
        dils: list[int],
        rounding: str,
        sizes: list[int] | None,
    ) -> tuple[list[int | None], bool]:
        """The pooled height and width, and whether they are rounded up."""
        rounded = [
            _out_size(dims[i], window[i], dils[i], pads[2 * i], pads[2 * i + 1], steps[i])
            for i in range(2)
        ]
        floors = [r[0] for r in rounded]
        ceils = [r[1] for r in rounded]
        if sizes is not None:
            if None in floors:
                raise ValidationError(
                    f"{op}: output_sizes needs a static height and width; use "
                    "output_shape_rounding instead"
                )
            if sizes not in (floors, ceils):
                raise ValidationError(
                    f"{op}: output_sizes {sizes} is neither {floors} (rounded down) nor "
                    f"{ceils} (rounded up)"
                )
            ceil = sizes != floors
        else:
            ceil = rounding == "ceil"
        out = ceils if ceil else floors
        if any(d is not None and d < 1 for d in out):
            raise ValidationError(
                f"{op}: the window {window} (dilations {dils}) is larger than the padded input "
                f"{dims[0]}x{dims[1]} (padding {pads})"
            )
        if ceil:
            for i in range(2):
                size, end, step = dims[i], pads[2 * i + 1], steps[i]
                reach = (window[i] - 1) * dils[i] + 1
                last = out[i]
                starts_in_padding = (
                    end > reach - step
                    if size is None or last is None
                    else (last - 1) * step - pads[2 * i] >= size
                )
                if starts_in_padding:
                    raise ValidationError(
                        f"{op}: with ceil rounding the last window of dimension {i} would start "
                        f"inside the ending padding ({end}), where ONNX engines disagree about "
                        "it; use less ending padding or floor rounding"
                    )
        return out, ceil

    def _nn_global_pool(
        self, op: str, x: Operand, spatial: tuple[int, int], sizes: list[int] | None
    ) -> Operand:
        """A pool over the whole image: the matching reduction, fine with dynamic sizes."""
        if sizes is not None and sizes != [1, 1]:
            raise ValidationError(
                f"{op}: output_sizes {sizes} must be [1, 1] when the window is the whole image"
            )
        onnx_op = {"average_pool2d": "ReduceMean", "l2_pool2d": "ReduceL2"}.get(op, "ReduceMax")
        shape = tuple(1 if i in spatial else d for i, d in enumerate(x.shape))
        axes = self._ints(list(spatial))
        return self._emit(onnx_op, [x, axes], {"keepdims": 1}, shape=shape, dtype=x.dtype)

    def _nn_window_sum(
        self,
        x: Operand,
        p: int,
        window: list[int],
        pads: list[int],
        steps: list[int],
        dils: list[int],
        ceil: bool,
        shape: Shape,
    ) -> Operand:
        """LpPool of NCHW ``x`` with the padding made explicit (zeros).

        Rounding up is done by padding the end with ``stride - 1`` more zeros
        and rounding down, so that every window is whole: OpenVINO's LpPool
        is wrong on windows that ceil rounding cuts off.
        """
        ends = [pads[1] + (steps[0] - 1 if ceil else 0), pads[3] + (steps[1] - 1 if ceil else 0)]
        if pads[0] or pads[2] or any(ends):
            padded = tuple(
                None if d is None else d + before + after
                for d, before, after in zip(
                    x.shape, (0, 0, pads[0], pads[2]), (0, 0, *ends), strict=True
                )
            )
            amounts = self._ints([0, 0, pads[0], pads[2], 0, 0, ends[0], ends[1]])
            zero = self._nn_filled(0.0, x.dtype, ())
            x = self._emit("Pad", [x, amounts, zero], shape=padded, dtype=x.dtype)
        attrs: dict[str, AttrValue] = {
            "kernel_shape": window, "p": p, "strides": steps, "dilations": dils,
        }  # fmt: skip
        return self._emit("LpPool", [x], attrs, shape=shape, dtype=x.dtype)

    def _nn_dilated_average(
        self,
        x: Operand,
        window: list[int],
        pads: list[int],
        steps: list[int],
        dils: list[int],
        ceil: bool,
        shape: Shape,
    ) -> Operand:
        op = "average_pool2d"
        windows = (window, pads, steps, dils, ceil, shape)
        positive = self._nn_window_sum(self._unary(op, "Relu", x), 1, *windows)
        flipped = self._unary(op, "Relu", self._unary(op, "Neg", x))
        negative = self._nn_window_sum(flipped, 1, *windows)
        total = self._binary(op, "Sub", positive, negative)
        height, width = x.shape[2:]
        out_h, out_w = shape[2:]
        if height is not None and width is not None and out_h is not None and out_w is not None:
            counts = [
                _taps(size, out, window[i], pads[2 * i], steps[i], dils[i])
                for i, (size, out) in enumerate(((height, out_h), (width, out_w)))
            ]
            if 0 in counts[0] or 0 in counts[1]:
                raise ValidationError(
                    f"{op}: with dilations {dils} some window holds only padding; "
                    "use less padding"
                )
            values = [float(a * b) for a in counts[0] for b in counts[1]]
            count = self._const(
                x.dtype, (1, 1, out_h, out_w), Tensor(values, dtype=x.dtype).tobytes()
            )
        else:
            # The same window sums over ones give each window's count of real elements.
            size = self._emit("Shape", [x], {"start": 2}, shape=(2,), dtype="i64")
            ones_shape = self._emit(
                "Concat", [self._ints([1, 1]), size], {"axis": 0}, shape=(4,), dtype="i64"
            )
            one = self._nn_filled(1.0, x.dtype, (1, 1, 1, 1))
            ones = self._emit(
                "Expand", [one, ones_shape], shape=(1, 1, height, width), dtype=x.dtype
            )
            count = self._nn_window_sum(
                ones, 1, window, pads, steps, dils, ceil, (1, 1, out_h, out_w)
            )
        return self._binary(op, "Div", total, count)

    # ------------------------------------------------------------ resampling

    def resample2d(
        self,
        input: Operand,
        *,
        mode: str = "nearest-neighbor",
        scales: Sequence[float] | None = None,
        sizes: Sequence[int] | None = None,
        axes: Sequence[int] = (2, 3),
    ) -> Operand:
        """Resize two dimensions of a 4-D tensor by ``scales`` (default [1, 1])
        or to ``sizes``, with nearest-neighbor or bilinear interpolation.

        Follows WebNN's definition: sampling at pixel centres (ONNX Resize
        ``half_pixel``), nearest rounding halves down (``round_prefer_floor``),
        the scale being output size / input size. The output size from
        ``scales`` is ``floor(size * scale)``; for a dynamic size the graph
        computes it in f32, which can come out one larger than exact
        arithmetic when the product is a hair below a whole number (10 * 0.7).
        Integers (u8, i8) in linear mode are interpolated in f32 and rounded
        to nearest, halves up (onnxruntime would truncate, OpenVINO round).
        Linear resampling of other dimension pairs than [2, 3] and [1, 2] is
        done between transposes (onnxruntime interpolates only those).

        >>> big = builder.resample2d(image, mode="linear", sizes=[736, 736], axes=[1, 2])
        """
        op = "resample2d"
        x = self._nn_input(op, input, 4, _RESAMPLE_DTYPES)
        mode = self._nn_choice(op, "mode", mode, _RESAMPLE_MODES)
        factors = [1.0, 1.0]
        if scales is not None:
            ok = not isinstance(scales, (str, bytes)) and isinstance(scales, Iterable)
            factors = list(scales) if ok else []
            ok = len(factors) == 2 and all(
                not isinstance(f, bool) and isinstance(f, (int, float)) and 0 < f < math.inf
                for f in factors
            )
            if not ok:
                raise ValidationError(
                    f"{op}: scales must be a list of 2 positive numbers, not {scales!r}"
                )
            # WebNN's scales are float32.
            factors = list(struct.unpack("<2f", struct.pack("<2f", *factors)))
        targets = None if sizes is None else self._nn_ints(op, "sizes", sizes, 2, 1)
        chosen = self._check_axes(op, axes, 4)
        if len(chosen) != 2:
            raise ValidationError(f"{op}: axes must list 2 dimensions, not {list(chosen)}")
        out: list[int | None] = []
        for i, axis in enumerate(chosen):
            size = x.shape[axis]
            if targets is not None:
                out.append(targets[i])
            elif size is None:
                out.append(None)
            else:
                scaled = math.floor(size * factors[i])
                if not 1 <= scaled < 2**32:
                    raise ValidationError(
                        f"{op}: scaling dimension {axis} ({size}) by {factors[i]} gives "
                        f"{scaled}, not a valid size"
                    )
                out.append(scaled)
        shape = list(x.shape)
        for axis, size in zip(chosen, out, strict=True):
            shape[axis] = size
        same = all(s is not None and s == x.shape[a] for a, s in zip(chosen, out, strict=True))
        if same or (targets is None and factors == [1.0, 1.0]):
            # Every sample falls on an input element.
            return self._emit("Identity", [x], shape=x.shape, dtype=x.dtype)
        # Resize is given the axes in increasing order (and the sizes to match).
        order = sorted(range(2), key=lambda i: chosen[i])
        chosen = [chosen[i] for i in order]
        if None in out:
            target = self._nn_scaled_sizes(
                x, chosen, [factors[i] for i in order], [out[i] for i in order]
            )
        else:
            target = self._ints([out[i] or 0 for i in order])
        source = x
        rounding = mode == "linear" and x.dtype not in _FLOATS
        if rounding:
            source = self._emit("Cast", [x], {"to": ONNX_TYPES["f32"]}, shape=x.shape, dtype="f32")
        perm = None
        if mode == "linear" and chosen not in ([2, 3], [1, 2]):
            # onnxruntime interpolates linearly only in NCHW or NHWC positions.
            perm = [a for a in range(4) if a not in chosen] + chosen
            source = self._nn_transpose(source, perm)
            shape = [shape[p] for p in perm]
            chosen = [2, 3]
        attrs: dict[str, AttrValue] = {
            "coordinate_transformation_mode": "half_pixel", "axes": chosen,
        }  # fmt: skip
        if mode == "linear":
            attrs["mode"] = "linear"
        else:
            attrs.update(mode="nearest", nearest_mode="round_prefer_floor")
        y = self._emit(
            "Resize", [source, "", "", target], attrs, shape=tuple(shape), dtype=source.dtype
        )
        if perm is not None:
            y = self._nn_transpose(y, [perm.index(a) for a in range(4)])
        if rounding:
            # Halves round up, with a margin: an exact half computes as a hair
            # above or below it, differently in onnxruntime and OpenVINO.
            lifted = self._binary(op, "Add", y, 0.5 + _HALF_MARGIN)
            y = self._emit("Floor", [lifted], shape=y.shape, dtype="f32")
            y = self._emit("Cast", [y], {"to": ONNX_TYPES[x.dtype]}, shape=y.shape, dtype=x.dtype)
        return y

    def _nn_scaled_sizes(
        self, x: Operand, axes: list[int], factors: list[float], known: list[int | None]
    ) -> Operand:
        """The output sizes (i64 [2]): ``known`` ones as constants, the others
        ``floor(size * scale)`` computed in the graph."""
        op = "resample2d"
        dims = self._emit("Shape", [x], shape=(x.rank,), dtype="i64")
        parts = []
        for axis, factor, size in zip(axes, factors, known, strict=True):
            if size is not None:
                # As inferred (in double precision): the graph must give that shape.
                parts.append(self._ints([size]))
                continue
            picked = self._emit("Gather", [dims, self._ints([axis])], shape=(1,), dtype="i64")
            real = self._emit("Cast", [picked], {"to": ONNX_TYPES["f32"]}, shape=(1,), dtype="f32")
            scale = self._const("f32", (1,), struct.pack("<f", factor))
            product = self._binary(op, "Mul", real, scale)
            rounded = self._emit("Floor", [product], shape=(1,), dtype="f32")
            parts.append(
                self._emit("Cast", [rounded], {"to": ONNX_TYPES["i64"]}, shape=(1,), dtype="i64")
            )
        return self._emit("Concat", parts, {"axis": 0}, shape=(2,), dtype="i64")

    # ------------------------------------------------------------ normalization

    def batch_normalization(
        self,
        input: Operand,
        mean: Operand,
        variance: Operand,
        *,
        scale: Operand | None = None,
        bias: Operand | None = None,
        axis: int = 1,
        epsilon: float = 1e-5,
    ) -> Operand:
        """``(x - mean) / sqrt(variance + epsilon) * scale + bias`` with 1-D
        ``mean``, ``variance``, ``scale`` and ``bias`` along ``axis``.

        ONNX BatchNormalization for ``axis=1``; other axes (and a dynamic
        channel count without scale and bias) are composed of element-wise
        operations.

        >>> y = builder.batch_normalization(x, mean, var, scale=gamma, bias=beta)
        """
        op = "batch_normalization"
        x = self._nn_input(op, input, None, _FLOATS)
        if x.rank == 0:
            raise ValidationError(f"{op}: the input is a scalar; it needs rank 1 or more")
        axis = self._check_axis(op, axis, x.rank)
        channels = x.shape[axis]
        mean = self._nn_vector(op, x, mean, "mean", channels)
        variance = self._nn_vector(op, x, variance, "variance", channels)
        if scale is not None:
            scale = self._nn_vector(op, x, scale, "scale", channels)
        if bias is not None:
            bias = self._nn_vector(op, x, bias, "bias", channels)
        eps = self._nn_number(op, "epsilon", epsilon)
        whole = scale is not None and bias is not None
        if axis == 1 and x.rank >= 2 and (whole or channels is not None):
            size = channels or 0
            if scale is None:
                scale = self._nn_filled(1.0, x.dtype, (size,))
            if bias is None:
                bias = self._nn_filled(0.0, x.dtype, (size,))
            inputs = [x, scale, bias, mean, variance]
            return self._emit(
                "BatchNormalization", inputs, {"epsilon": eps}, shape=x.shape, dtype=x.dtype
            )
        # Trailing 1s make the 1-D values broadcast along ``axis``.
        after = list(range(1, x.rank - axis))
        spread = self._unary(op, "Sqrt", self._binary(op, "Add", variance, eps))
        centred = self._binary(op, "Sub", x, self._nn_unsqueeze(mean, after))
        y = self._binary(op, "Div", centred, self._nn_unsqueeze(spread, after))
        if scale is not None:
            scale = self._nn_unsqueeze(scale, after)
        if bias is not None:
            bias = self._nn_unsqueeze(bias, after)
        return self._nn_affine(op, y, scale, bias)

    def instance_normalization(
        self,
        input: Operand,
        *,
        scale: Operand | None = None,
        bias: Operand | None = None,
        epsilon: float = 1e-5,
        layout: str = "nchw",
    ) -> Operand:
        """Normalize each channel of each sample of a 4-D input over its height
        and width, then ``* scale + bias`` (1-D, one value per channel).

        ONNX InstanceNormalization for NCHW; NHWC (and a dynamic channel
        count without scale and bias) is composed of ReduceMean and
        element-wise operations, with no transposes.

        >>> y = builder.instance_normalization(x, scale=gamma, bias=beta, layout="nhwc")
        """
        op = "instance_normalization"
        x = self._nn_input(op, input, 4, _FLOATS)
        layout = self._nn_choice(op, "layout", layout, _LAYOUTS)
        channel_axis = 1 if layout == "nchw" else 3
        channels = x.shape[channel_axis]
        if scale is not None:
            scale = self._nn_vector(op, x, scale, "scale", channels)
        if bias is not None:
            bias = self._nn_vector(op, x, bias, "bias", channels)
        eps = self._nn_number(op, "epsilon", epsilon)
        whole = scale is not None and bias is not None
        if layout == "nchw" and (whole or channels is not None):
            size = channels or 0
            if scale is None:
                scale = self._nn_filled(1.0, x.dtype, (size,))
            if bias is None:
                bias = self._nn_filled(0.0, x.dtype, (size,))
            return self._emit(
                "InstanceNormalization", [x, scale, bias], {"epsilon": eps},
                shape=x.shape, dtype=x.dtype,
            )  # fmt: skip
        spatial = [2, 3] if layout == "nchw" else [1, 2]
        y = self._nn_standardize(op, x, spatial, eps)
        after = [1, 2] if layout == "nchw" else []
        if scale is not None:
            scale = self._nn_unsqueeze(scale, after)
        if bias is not None:
            bias = self._nn_unsqueeze(bias, after)
        return self._nn_affine(op, y, scale, bias)

    def layer_normalization(
        self,
        input: Operand,
        *,
        scale: Operand | None = None,
        bias: Operand | None = None,
        axes: Sequence[int] | None = None,
        epsilon: float = 1e-5,
    ) -> Operand:
        """Normalize over ``axes`` (default: every dimension but the first), then
        ``* scale + bias``, whose dimensions are those of ``axes`` in that order.

        ONNX LayerNormalization when ``axes`` are the last dimensions in
        order; otherwise composed of ReduceMean and element-wise operations.
        Empty ``axes`` normalize nothing: the result is ``bias`` (or 0).

        >>> y = builder.layer_normalization(x, scale=gamma, bias=beta, axes=[2])
        """
        op = "layer_normalization"
        x = self._nn_input(op, input, None, _FLOATS)
        chosen = list(range(1, x.rank)) if axes is None else self._check_axes(op, axes, x.rank)
        dims = tuple(x.shape[a] for a in chosen)
        params: list[Operand | None] = []
        for role, value in (("scale", scale), ("bias", bias)):
            if value is not None:
                value = self._nn_like(op, x, value, role)
                if value.rank != len(dims) or not all(map(_fits, value.shape, dims)):
                    raise ValidationError(
                        f"{op}: the {role} must have shape {shape_text(dims)} (the input's "
                        f"dimensions {chosen}), not {shape_text(value.shape)}"
                    )
            params.append(value)
        scale, bias = params
        eps = self._nn_number(op, "epsilon", epsilon)
        trailing = bool(chosen) and chosen == list(range(chosen[0], x.rank))
        static = None not in dims
        if trailing and (scale is not None or static):
            weights = scale
            if weights is None:
                weights = self._nn_filled(1.0, x.dtype, [d or 0 for d in dims])
            inputs = [x, weights] + ([bias] if bias is not None else [])
            attrs = {"axis": chosen[0], "epsilon": eps}
            return self._emit("LayerNormalization", inputs, attrs, shape=x.shape, dtype=x.dtype)
        y = self._nn_standardize(op, x, chosen, eps)
        order = sorted(range(len(chosen)), key=lambda i: chosen[i])
        others = [i for i in range(x.rank) if i not in chosen]

        def spread(v: Operand | None) -> Operand | None:
            # Put v's dimensions in the input's order, with 1s for the others.
            if v is None or v.rank == 0:
                return v
            v = self._nn_transpose(v, order if order != sorted(order) else None)
            return self._nn_unsqueeze(v, others)

        return self._nn_affine(op, y, spread(scale), spread(bias))
