"""Graph builder operations: pooling (average_pool2d, l2_pool2d, max_pool2d)
and resampling (resample2d).

Names, arguments and defaults follow WebNN's ``MLGraphBuilder`` in snake_case.
ONNX pools NCHW images; an NHWC input is lowered to ``Transpose`` nodes around
the ONNX operator.

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

Pooling with ``output_sizes`` keeps the ``padding`` (as WPT's conformance
cases expect; the text of WebNN's steps resets it to zeros) and ignores
``output_shape_rounding``: the sizes must be the padded image's pooled sizes
rounded down or rounded up, and that decides the rounding. Data types are
WebNN's: f32 and f16, plus i8 and u8 for ``max_pool2d`` (of WebNN's "any",
what ONNX MaxPool takes) and ``resample2d``.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Sequence
from typing import Any

from .._errors import ValidationError
from .._formats.onnx_write import ONNX_TYPES, AttrValue
from .._tensor import Tensor
from .core import INT_RANGES, Operand, Shape, Size, shape_text
from .options import FLOATS, LAYOUTS, TO_NCHW, TO_NHWC, NetworkBase, window_size

_MAX_POOL_DTYPES = ("f32", "f16", "i8", "u8")  # what ONNX MaxPool takes
_RESAMPLE_DTYPES = ("f32", "f16", "i8", "u8")
_RESAMPLE_MODES = ("nearest-neighbor", "linear", "cubic")
#: Where an output pixel samples the input (ONNX Resize's
#: coordinate_transformation_mode, as opset 18 has them but tf_crop_and_resize).
COORDINATE_MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric")
#: Which input pixel nearest-neighbor takes when the sample falls between two.
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
# grid_sample's modes and the names ONNX GridSample (opset 16-19) gives them.
_GRID_MODES = {"nearest-neighbor": "nearest", "linear": "bilinear", "cubic": "bicubic"}
_GRID_PADDINGS = ("zeros", "border")
# How far below a half an interpolated integer may be and still round up.
_HALF_MARGIN = 2.0**-10


def _taps(size: int, out: int, window: int, begin: int, stride: int, dilation: int) -> list[int]:
    """How many taps of each of ``out`` windows fall on the ``size`` real elements."""
    return [
        sum(0 <= o * stride - begin + k * dilation < size for k in range(window))
        for o in range(out)
    ]


class PoolingFamily(NetworkBase):
    """See the module docstring; mixed into ``GraphOperations`` (and so ``GraphBuilder``)."""

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
        return self._pool(
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
        return self._pool(
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
        return self._pool(
            "max_pool2d", input, window_dimensions, padding, strides, dilations, layout,
            output_shape_rounding, output_sizes,
        )  # fmt: skip

    def _pool(
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
        x = self._nn_input(op, input, 4, _MAX_POOL_DTYPES if op == "max_pool2d" else FLOATS)
        layout = self._nn_choice(op, "layout", layout, LAYOUTS)
        rounding = self._nn_choice(
            op, "output_shape_rounding", output_shape_rounding, ("floor", "ceil")
        )
        pads = self._nn_ints(op, "padding", padding, 4, 0)
        steps = self._nn_ints(op, "strides", strides, 2, 1)
        dils = self._nn_ints(op, "dilations", dilations, 2, 1)
        sizes = None
        if output_sizes is not None:
            sizes = self._nn_ints(op, "output_sizes", output_sizes, 2, 1)
        spatial = (2, 3) if layout == "nchw" else (1, 2)
        height, width = (x.shape[a] for a in spatial)
        if window_dimensions is None and not any(pads) and dils == [1, 1]:
            return self._pool_global(op, x, spatial, sizes)
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
        out, ceil = self._pool_sizes(
            op, (height, width), window, pads, steps, dils, rounding, sizes
        )
        x = self._nn_transpose(x, TO_NCHW if layout == "nhwc" else None)
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
            y = self._pool_dilated_average(x, window, pads, steps, dils, ceil, shape)
        else:
            y = self._pool_window_sum(x, 2, window, pads, steps, dils, ceil, shape)
        return self._nn_transpose(y, TO_NHWC if layout == "nhwc" else None)

    def _pool_sizes(
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
            window_size(dims[i], window[i], dils[i], pads[2 * i], pads[2 * i + 1], steps[i])
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

    def _pool_global(
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

    def _pool_window_sum(
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

    def _pool_dilated_average(
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
        positive = self._pool_window_sum(self._unary(op, "Relu", x), 1, *windows)
        flipped = self._unary(op, "Relu", self._unary(op, "Neg", x))
        negative = self._pool_window_sum(flipped, 1, *windows)
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
                    f"{op}: with dilations {dils} some window holds only padding; use less padding"
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
            count = self._pool_window_sum(
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
        sizes: Sequence[int | Size] | Operand | None = None,
        axes: Sequence[int] = (2, 3),
        coordinate_mode: str = "half_pixel",
        nearest_mode: str | None = None,
    ) -> Operand:
        """Resize two dimensions of a 4-D tensor by ``scales`` (default [1, 1])
        or to ``sizes``, with nearest-neighbor, bilinear or (beyond WebNN) bicubic interpolation.

        ``sizes`` may also be an operand (i32 or i64, shape [2]) that the graph
        gets at run time, unlike WebNN: one compiled graph then serves every
        output size (a detector's input, say, whose size follows the photo's);
        or list ``operand.size(axis)`` for a size read from another operand's
        shape (a mask resized back to its image's size).

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

        Beyond WebNN: ``mode="cubic"`` (bicubic, a = -0.75: torch's
        ``"bicubic"``, OpenCV's ``INTER_CUBIC``; integers clamped to their
        range), and, as ONNX ``Resize`` has them: ``coordinate_mode`` says
        where output pixel ``x`` samples the input, with ``scale`` = output
        size / input size: ``"half_pixel"`` (the default, WebNN's; OpenCV's
        ``INTER_LINEAR``, torch's ``align_corners=False``) at
        ``(x + 0.5) / scale - 0.5``; ``"pytorch_half_pixel"`` the same but 0
        when the output size is 1; ``"align_corners"`` at
        ``x * (in - 1) / (out - 1)`` (torch's ``align_corners=True``, TF1's
        ``align_corners``); ``"asymmetric"`` at ``x / scale`` (OpenCV's
        ``INTER_NEAREST``, torch's ``"nearest"``, TensorFlow's default).
        ``nearest_mode`` (nearest-neighbor only) rounds that position:
        ``"round_prefer_floor"`` (the default, WebNN's), ``"round_prefer_ceil"``
        (torch's ``"nearest-exact"``), ``"floor"`` (torch's ``"nearest"``,
        OpenCV's ``INTER_NEAREST``) or ``"ceil"``. Outside WebNN's own pair,
        nearest-neighbor between static sizes picks its rows and columns in
        exact arithmetic (a Gather per axis), so a position lying exactly
        halfway rounds as the mode says; between sizes known only at run time
        the host computes them in floating point, where such a tie may go
        either way.

        >>> big = builder.resample2d(image, mode="linear", sizes=[736, 736], axes=[1, 2])
        >>> like_torch = builder.resample2d(x, mode="linear", sizes=[64, 64],
        ...                                 coordinate_mode="align_corners")
        """
        op = "resample2d"
        x = self._nn_input(op, input, 4, _RESAMPLE_DTYPES)
        mode = self._nn_choice(op, "mode", mode, _RESAMPLE_MODES)
        sampling = resample_sampling(op, mode, coordinate_mode, nearest_mode)
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
        if isinstance(sizes, Operand):
            return self._resample_to(op, x, mode, self._own(op, sizes, "sizes"), axes, sampling)
        if isinstance(sizes, (list, tuple)) and any(isinstance(s, Size) for s in sizes):
            if len(sizes) != 2:
                raise ValidationError(f"{op}: sizes must list 2 sizes, not {list(sizes)}")
            read = self._runtime_dims(op, sizes)
            return self._resample_to(op, x, mode, read, axes, sampling)
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
        if (
            exact_nearest(sampling)
            and None not in out
            and all(x.shape[a] is not None for a in chosen)
        ):
            return self._nearest_gather(x, chosen, out, sampling)
        # Resize is given the axes in increasing order (and the sizes to match).
        order = sorted(range(2), key=lambda i: chosen[i])
        chosen = [chosen[i] for i in order]
        if None in out:
            target = self._resample_sizes(
                x, chosen, [factors[i] for i in order], [out[i] for i in order]
            )
        else:
            target = self._ints([out[i] or 0 for i in order])
        return self._resample_nodes(x, mode, chosen, target, tuple(shape), sampling)

    def _nearest_gather(
        self, x: Operand, axes: list[int], sizes: list[int | None], sampling: dict[str, AttrValue]
    ) -> Operand:
        """Nearest-neighbor resampling of static sizes as a Gather per axis, of
        the input indices worked out here in exact arithmetic. The host works
        them out in floating point, which puts a sample lying exactly halfway
        (at 3.5, which is 2 / (4 / 7)) a hair to one side, and so rounds it
        the other way than the mode says, than onnxruntime and than OpenCV."""
        y = x
        for axis, size in zip(axes, sizes, strict=True):
            count = x.shape[axis]
            assert count is not None and size is not None  # checked by the caller
            picked = nearest_indices(
                count, size, str(sampling["coordinate_transformation_mode"]),
                str(sampling["nearest_mode"]),
            )  # fmt: skip
            shape = tuple(size if a == axis else d for a, d in enumerate(y.shape))
            y = self._emit("Gather", [y, self._ints(picked)], {"axis": axis}, shape=shape,
                           dtype=x.dtype)  # fmt: skip
        return y

    def _resample_to(
        self,
        op: str,
        x: Operand,
        mode: str,
        sizes: Operand,
        axes: Sequence[int],
        sampling: dict[str, AttrValue],
    ) -> Operand:
        """``resample2d`` to sizes computed at run time."""
        self._check_dtype(op, sizes, ("i32", "i64"), "sizes")
        if sizes.shape != (2,):
            raise ValidationError(
                f"{op}: the sizes operand must have shape [2], not {shape_text(sizes.shape)}"
            )
        chosen = self._check_axes(op, axes, 4)
        if len(chosen) != 2:
            raise ValidationError(f"{op}: axes must list 2 dimensions, not {list(chosen)}")
        target = sizes
        if list(chosen) != sorted(chosen):
            swap = self._ints([1, 0])
            target = self._emit("Gather", [sizes, swap], shape=(2,), dtype=sizes.dtype)
            chosen = sorted(chosen)
        if target.dtype != "i64":
            to_i64 = {"to": ONNX_TYPES["i64"]}
            target = self._emit("Cast", [target], to_i64, shape=(2,), dtype="i64")
        shape = tuple(None if a in chosen else d for a, d in enumerate(x.shape))
        return self._resample_nodes(x, mode, list(chosen), target, shape, sampling)

    def _resample_nodes(
        self,
        x: Operand,
        mode: str,
        chosen: list[int],
        target: Operand,
        shape: Shape,
        sampling: dict[str, AttrValue],
    ) -> Operand:
        """The Resize node (between transposes and roundings where needed)."""
        op = "resample2d"
        out_shape = list(shape)
        source = x
        rounding = mode != "nearest-neighbor" and x.dtype not in FLOATS
        if rounding:
            source = self._emit("Cast", [x], {"to": ONNX_TYPES["f32"]}, shape=x.shape, dtype="f32")
        perm = None
        if mode != "nearest-neighbor" and chosen not in ([2, 3], [1, 2]):
            # onnxruntime interpolates only in NCHW or NHWC positions.
            perm = [a for a in range(4) if a not in chosen] + chosen
            source = self._nn_transpose(source, perm)
            out_shape = [out_shape[p] for p in perm]
            chosen = [2, 3]
        attrs: dict[str, AttrValue] = {**sampling, "axes": chosen}
        y = self._emit(
            "Resize", [source, "", "", target], attrs, shape=tuple(out_shape), dtype=source.dtype
        )
        if perm is not None:
            y = self._nn_transpose(y, [perm.index(a) for a in range(4)])
        if rounding:
            # Halves round up, with a margin: an exact half computes as a hair
            # above or below it, differently in onnxruntime and OpenVINO.
            lifted = self._binary(op, "Add", y, 0.5 + _HALF_MARGIN)
            y = self._emit("Floor", [lifted], shape=y.shape, dtype="f32")
            if mode == "cubic":
                # Cubic interpolation overshoots (a u8 255 next to a 0 gives
                # about 270): clamp to the dtype's range before casting back.
                low, high = INT_RANGES[x.dtype]
                bounds = [self._scalar(low, "f32", op), self._scalar(high, "f32", op)]
                y = self._emit("Clip", [y, *bounds], shape=y.shape, dtype="f32")
            y = self._emit("Cast", [y], {"to": ONNX_TYPES[x.dtype]}, shape=y.shape, dtype=x.dtype)
        return y

    def _resample_sizes(
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

    # ------------------------------------------------------------ sampling at coordinates

    def grid_sample(
        self,
        input: Operand,
        grid: Operand,
        *,
        mode: str = "linear",
        padding_mode: str = "zeros",
        align_corners: bool = False,
    ) -> Operand:
        """Sample a 4-D NCHW tensor at the positions ``grid`` gives (wasinn's own:
        WebNN has no such operation); ONNX ``GridSample``, torch's ``grid_sample``.

        ``grid`` is [N, H_out, W_out, 2]: for each output position an (x, y)
        pair in [-1, 1], from the left/top edge to the right/bottom one; the
        output is [N, C, H_out, W_out]. ``align_corners=True`` puts -1 and 1 on
        the centres of the corner pixels (pixel ``x`` is at
        ``2 * x / (W - 1) - 1``), ``False`` on their outer edges. ``mode`` is
        ``"linear"`` (bilinear), ``"cubic"`` (bicubic, a = -0.75 as OpenCV's
        ``INTER_CUBIC``) or ``"nearest-neighbor"``; positions outside the
        image read ``padding_mode``: ``"zeros"`` or ``"border"`` (the nearest
        edge pixel, OpenCV's ``BORDER_REPLICATE``).
        Sampling a photo through a perspective grid with ``"cubic"`` and
        ``"border"`` matches ``cv2.warpPerspective(..., flags=INTER_CUBIC,
        borderMode=BORDER_REPLICATE)`` to within 1 on u8 values. Takes f32 and
        f16; the grid has the input's dtype.

        >>> crop = builder.grid_sample(image, grid, mode="cubic", padding_mode="border",
        ...                            align_corners=True)
        """
        op = "grid_sample"
        x = self._nn_input(op, input, 4, FLOATS)
        g = self._own(op, grid, "grid")
        self._check_dtype(op, g, (x.dtype,), "grid")
        if g.rank != 4 or g.shape[3] not in (None, 2):
            raise ValidationError(
                f"{op}: the grid must be [N, H_out, W_out, 2], not {shape_text(g.shape)}"
            )
        n, m = x.shape[0], g.shape[0]
        if n is not None and m is not None and n != m:
            raise ValidationError(
                f"{op}: the input's batch ({n}) and the grid's ({m}) must be equal "
                "(expand the input to sample one image through several grids)"
            )
        mode = self._nn_choice(op, "mode", mode, _GRID_MODES)
        padding_mode = self._nn_choice(op, "padding_mode", padding_mode, _GRID_PADDINGS)
        if not isinstance(align_corners, bool):
            raise ValidationError(
                f"{op}: align_corners must be True or False, not {align_corners!r}"
            )
        attrs: dict[str, AttrValue] = {
            "mode": _GRID_MODES[mode], "padding_mode": padding_mode,
            "align_corners": int(align_corners),
        }  # fmt: skip
        shape = (m if n is None else n, x.shape[1], g.shape[1], g.shape[2])
        return self._emit("GridSample", [x, g], attrs, shape=shape, dtype=x.dtype)


def nearest_indices(count: int, size: int, coordinates: str, rounding: str) -> list[int]:
    """For each of ``size`` output positions, the input index (of ``count``)
    that nearest-neighbor sampling takes, as ONNX Resize defines it, exactly:
    each source position is the fraction ``num / den``, and rounding works on
    integers.

    >>> nearest_indices(7, 4, "asymmetric", "round_prefer_ceil")  # 0, 1.75, 3.5, 5.25
    [0, 2, 4, 5]
    """
    out = []
    for x in range(size):
        if coordinates in ("half_pixel", "pytorch_half_pixel") and (
            size > 1 or coordinates == "half_pixel"
        ):
            num, den = (2 * x + 1) * count - size, 2 * size  # (x + 1/2) * count / size - 1/2
        elif coordinates == "align_corners" and size > 1:
            num, den = x * (count - 1), size - 1
        elif coordinates == "asymmetric":
            num, den = x * count, size
        else:  # a size of 1 with pytorch_half_pixel or align_corners: position 0
            num, den = 0, 1
        if rounding == "floor":
            index = num // den
        elif rounding == "ceil":
            index = -(-num // den)
        elif rounding == "round_prefer_ceil":  # floor(position + 1/2)
            index = (2 * num + den) // (2 * den)
        else:  # round_prefer_floor: ceil(position - 1/2)
            index = -(-(2 * num - den) // (2 * den))
        out.append(min(max(index, 0), count - 1))
    return out


def resample_sampling(
    op: str, mode: str, coordinate_mode: Any, nearest_mode: Any
) -> dict[str, AttrValue]:
    """The Resize attributes saying where and how ``mode`` ("linear", "cubic"
    or "nearest-neighbor") samples, checked: a ValidationError names ``op``.

    >>> resample_sampling("resize", "nearest-neighbor", "asymmetric", "floor")
    {'coordinate_transformation_mode': 'asymmetric', 'nearest_mode': 'floor', 'mode': 'nearest'}
    """
    if coordinate_mode not in COORDINATE_MODES:
        raise ValidationError(
            f"{op}: coordinate_mode must be one of {', '.join(map(repr, COORDINATE_MODES))}, "
            f"not {coordinate_mode!r}"
        )
    attrs: dict[str, AttrValue] = {"coordinate_transformation_mode": coordinate_mode}
    if mode in ("linear", "cubic"):
        if nearest_mode is not None:
            raise ValidationError(
                f"{op}: nearest_mode applies to nearest-neighbor sampling only, and the mode "
                f"is {mode!r}; leave it out"
            )
        attrs["mode"] = mode
        if mode == "cubic":
            attrs["cubic_coeff_a"] = -0.75  # OpenCV's INTER_CUBIC and torch's bicubic
        return attrs
    rounding = "round_prefer_floor" if nearest_mode is None else nearest_mode
    if rounding not in NEAREST_MODES:
        raise ValidationError(
            f"{op}: nearest_mode must be one of {', '.join(map(repr, NEAREST_MODES))}, "
            f"not {nearest_mode!r}"
        )
    attrs["nearest_mode"] = rounding
    attrs["mode"] = "nearest"
    return attrs


def exact_nearest(sampling: dict[str, AttrValue]) -> bool:
    """Whether ``sampling`` (from ``resample_sampling``) is nearest-neighbor
    outside WebNN's own pair (half_pixel, round_prefer_floor): sampling that
    ``resample2d`` does with exact indices between static sizes."""
    webnn = sampling.get("coordinate_transformation_mode") == "half_pixel" and (
        sampling.get("nearest_mode") == "round_prefer_floor"
    )
    return sampling.get("mode") == "nearest" and not webnn
