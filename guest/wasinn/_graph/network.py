"""Graph builder operations: matrix products (matmul, gemm), convolutions
(conv2d, conv_transpose2d) and normalizations (batch, instance, layer).

Names, arguments and defaults follow WebNN's ``MLGraphBuilder`` in snake_case.
ONNX takes images as NCHW and filters as OIHW (IOHW for transposed
convolutions); the other WebNN layouts are lowered to ``Transpose`` nodes
around the ONNX operator, which the host's engine folds for constants.

Where the ONNX operator differs from WebNN, the method's docstring says how
it is lowered: the normalizations use the ONNX operator where it fits (batch
normalization along axis 1, instance normalization in NCHW, layer
normalization over the last dimensions) and are composed of ReduceMean and
element-wise operations otherwise. Where WebNN's rules need static sizes
(``output_sizes`` of ``conv_transpose2d``), dynamic ones are refused.

Data types are WebNN's: f32 and f16.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .._errors import ValidationError
from .._formats.onnx_write import AttrValue
from .core import Operand, shape_text
from .options import FLOATS, LAYOUTS, TO_NCHW, TO_NHWC, NetworkBase, dims_fit, window_size

# Permutations taking each WebNN filter layout to the one ONNX wants.
_CONV_FILTERS: dict[str, tuple[int, ...] | None] = {
    "oihw": None, "hwio": (3, 2, 0, 1), "ohwi": (0, 3, 1, 2), "ihwo": (3, 0, 1, 2),
}  # fmt: skip
_CONV_TRANSPOSE_FILTERS: dict[str, tuple[int, ...] | None] = {
    "iohw": None, "hwoi": (3, 2, 0, 1), "ohwi": (3, 0, 1, 2),
}  # fmt: skip


class NetworkFamily(NetworkBase):
    """See the module docstring; mixed into ``GraphOperations`` (and so ``GraphBuilder``)."""

    # ------------------------------------------------------------ shared checks

    def _nn_vector(self, op: str, ref: Operand, value: Any, role: str, size: int | None) -> Operand:
        """A 1-D operand of ``size`` elements (per channel: mean, scale, bias)."""
        operand = self._nn_like(op, ref, value, role)
        if operand.rank != 1 or not dims_fit(operand.shape[0], size):
            want = "?" if size is None else str(size)
            raise ValidationError(
                f"{op}: the {role} must have shape [{want}], not {shape_text(operand.shape)}"
            )
        return operand

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
        self,
        op: str,
        y: Operand,
        scale: Operand | None,
        bias: Operand | None,
        after: Sequence[int] = (),
    ) -> Operand:
        """``y * scale + bias``, either left out when ``None``; ``after`` inserts
        dimensions of 1 into scale and bias first, so that they broadcast."""
        if scale is not None:
            y = self._binary(op, "Mul", y, self._nn_unsqueeze(scale, after))
        if bias is not None:
            y = self._binary(op, "Add", y, self._nn_unsqueeze(bias, after))
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
        self._check_dtype(op, a, FLOATS, "first input")
        self._nn_like(op, a, b, "second input", "first input")
        if a.rank < 2 or b.rank < 2:
            raise ValidationError(
                f"{op}: both inputs must have rank 2 or more, not {shape_text(a.shape)} and "
                f"{shape_text(b.shape)}"
            )
        if not dims_fit(a.shape[-1], b.shape[-2]):
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
        self._check_dtype(op, a, FLOATS, "first input")
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
        if not dims_fit(inner_a, inner_b):
            raise ValidationError(
                f"{op}: A is {rows}x{inner_a} and B {inner_b}x{cols} (after the transposes "
                "asked for); A's columns must equal B's rows"
            )
        inputs: list[Operand] = [a, b]
        if c is not None:
            c = self._nn_like(op, a, c, "c", "first input")
            target = (rows, cols)
            ok = c.rank <= 2 and all(
                cd == 1 or dims_fit(cd, td)
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
        return pads, steps, dils, groups, self._nn_choice(op, "input_layout", layout, LAYOUTS)

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
        x = self._nn_input(op, input, 4, FLOATS)
        w = self._nn_like(op, x, filter, "filter")
        if w.rank != 4:
            raise ValidationError(f"{op}: the filter must be 4-D, not {shape_text(w.shape)}")
        pads, steps, dils, groups, layout = self._nn_conv_options(
            op, padding, strides, dilations, groups, input_layout
        )
        w_layout = self._nn_choice(op, "filter_layout", filter_layout, _CONV_FILTERS)
        x = self._nn_transpose(x, TO_NCHW if layout == "nhwc" else None)
        w = self._nn_transpose(w, _CONV_FILTERS[w_layout])
        batches, channels, height, width = x.shape
        out_channels, per_group, kh, kw = w.shape
        if channels is not None and channels % groups:
            raise ValidationError(
                f"{op}: the input's {channels} channels cannot be split into {groups} groups"
            )
        if channels is not None and not dims_fit(channels // groups, per_group):
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
            out_h = window_size(height, kh, dils[0], pads[0], pads[1], steps[0])[0]
            out_w = window_size(width, kw, dils[1], pads[2], pads[3], steps[1])[0]
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
        return self._nn_transpose(y, TO_NHWC if layout == "nhwc" else None)

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
        x = self._nn_input(op, input, 4, FLOATS)
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
        x = self._nn_transpose(x, TO_NCHW if layout == "nhwc" else None)
        w = self._nn_transpose(w, _CONV_TRANSPOSE_FILTERS[w_layout])
        batches, channels, height, width = x.shape
        filter_in, per_group, kh, kw = w.shape
        if not dims_fit(channels, filter_in):
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
            raise ValidationError(f"{op}: the padding {pads} leaves no output ({out[0]}x{out[1]})")
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
        return self._nn_transpose(y, TO_NHWC if layout == "nhwc" else None)

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
        x = self._nn_input(op, input, None, FLOATS)
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
        return self._nn_affine(op, y, scale, bias, after)

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
        x = self._nn_input(op, input, 4, FLOATS)
        layout = self._nn_choice(op, "layout", layout, LAYOUTS)
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
        return self._nn_affine(op, y, scale, bias, after)

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
        x = self._nn_input(op, input, None, FLOATS)
        chosen = list(range(1, x.rank)) if axes is None else self._check_axes(op, axes, x.rank)
        dims = tuple(x.shape[a] for a in chosen)
        params: list[Operand | None] = []
        for role, value in (("scale", scale), ("bias", bias)):
            if value is not None:
                value = self._nn_like(op, x, value, role)
                if value.rank != len(dims) or not all(map(dims_fit, value.shape, dims)):
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
