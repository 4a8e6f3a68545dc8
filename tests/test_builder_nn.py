"""The graph builder's nn operations (matmul, gemm, convolutions, pooling,
resample2d, normalizations): ONNX checker, onnxruntime vs numpy, OpenVINO vs
onnxruntime, and the same graphs in a real component (see builder_check).

The numpy references follow WebNN's definitions directly (windows, padding
order, sampling coordinates), not ONNX's, so they check the lowering too.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from builder_app import cases_nn
from builder_app.cases_nn import ramp
from builder_check import Reference

from wasinn import GraphBuilder, ValidationError

F64 = np.float64
Arr = np.ndarray


def _like(value: Arr, dtype: Any) -> Arr:
    return np.asarray(value).astype(dtype)


def _const(
    count: int, shape: Sequence[int] | None = None, scale: float = 0.1, offset: float = 0.0
) -> Arr:
    values = np.array(ramp(count, scale, offset), F64)
    return values.reshape(shape) if shape is not None else values


# ---------------------------------------------------------------- references


def conv(
    x: Arr,
    w: Arr,
    pads: Sequence[int] = (0, 0, 0, 0),
    strides: Sequence[int] = (1, 1),
    dilations: Sequence[int] = (1, 1),
    groups: int = 1,
    bias: Arr | None = None,
) -> Arr:
    """WebNN conv2d, NCHW input and OIHW filter, padding [top, bottom, left, right]."""
    dtype = x.dtype
    x = np.pad(x.astype(F64), ((0, 0), (0, 0), (pads[0], pads[1]), (pads[2], pads[3])))
    w = w.astype(F64)
    n, _, height, width = x.shape
    outs, per_group, kh, kw = w.shape
    oh = (height - (kh - 1) * dilations[0] - 1) // strides[0] + 1
    ow = (width - (kw - 1) * dilations[1] - 1) // strides[1] + 1
    y = np.zeros((n, outs, oh, ow))
    og = outs // groups
    for g in range(groups):
        xs, ws = x[:, g * per_group : (g + 1) * per_group], w[g * og : (g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                top, left = i * dilations[0], j * dilations[1]
                patch = xs[:, :, top:top + (oh - 1) * strides[0] + 1:strides[0],
                           left:left + (ow - 1) * strides[1] + 1:strides[1]]  # fmt: skip
                y[:, g * og : (g + 1) * og] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    if bias is not None:
        y += bias.astype(F64).reshape(1, -1, 1, 1)
    return y.astype(dtype)


def conv_transpose(
    x: Arr,
    w: Arr,
    pads: Sequence[int] = (0, 0, 0, 0),
    strides: Sequence[int] = (1, 1),
    dilations: Sequence[int] = (1, 1),
    groups: int = 1,
    extra: Sequence[int] = (0, 0),
    bias: Arr | None = None,
) -> Arr:
    """WebNN convTranspose2d, NCHW input and IOHW filter: every input element
    scatters filter * value; then the padding is cut off both ends."""
    dtype = x.dtype
    x, w = x.astype(F64), w.astype(F64)
    n, channels, height, width = x.shape
    _, og, kh, kw = w.shape
    full_h = (height - 1) * strides[0] + (kh - 1) * dilations[0] + 1 + extra[0]
    full_w = (width - 1) * strides[1] + (kw - 1) * dilations[1] + 1 + extra[1]
    full = np.zeros((n, og * groups, full_h, full_w))
    cg = channels // groups
    for g in range(groups):
        xs, ws = x[:, g * cg : (g + 1) * cg], w[g * cg : (g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                top, left = i * dilations[0], j * dilations[1]
                full[:, g * og:(g + 1) * og, top:top + (height - 1) * strides[0] + 1:strides[0],
                     left:left + (width - 1) * strides[1] + 1:strides[1]] += np.einsum(
                    "nchw,co->nohw", xs, ws[:, :, i, j])  # fmt: skip
    y = full[:, :, pads[0] : full_h - pads[1], pads[2] : full_w - pads[3]]
    if bias is not None:
        y = y + bias.astype(F64).reshape(1, -1, 1, 1)
    return y.astype(dtype)


def pool(
    x: Arr,
    kind: str,
    window: Sequence[int] | None = None,
    pads: Sequence[int] = (0, 0, 0, 0),
    strides: Sequence[int] = (1, 1),
    dilations: Sequence[int] = (1, 1),
    ceil: bool = False,
    nhwc: bool = False,
) -> Arr:
    """WebNN pooling by its definition: each output reduces the window taps
    that fall on real elements (padding is never counted)."""
    dtype = x.dtype
    if nhwc:
        x = x.transpose(0, 3, 1, 2)
    x = x.astype(F64)
    sizes = x.shape[2:]
    window = window or sizes
    outs = []
    for d in range(2):
        span = sizes[d] - (window[d] - 1) * dilations[d] - 1 + pads[2 * d] + pads[2 * d + 1]
        outs.append((math.ceil if ceil else math.floor)(span / strides[d]) + 1)
    y = np.zeros(x.shape[:2] + tuple(outs))
    for oh in range(outs[0]):
        rows = [oh * strides[0] - pads[0] + k * dilations[0] for k in range(window[0])]
        rows = [r for r in rows if 0 <= r < sizes[0]]
        for ow in range(outs[1]):
            cols = [ow * strides[1] - pads[2] + k * dilations[1] for k in range(window[1])]
            cols = [c for c in cols if 0 <= c < sizes[1]]
            taps = x[:, :, rows][:, :, :, cols]
            if kind == "avg":
                y[:, :, oh, ow] = taps.mean(axis=(2, 3))
            elif kind == "max":
                y[:, :, oh, ow] = taps.max(axis=(2, 3))
            else:
                y[:, :, oh, ow] = np.sqrt((taps * taps).sum(axis=(2, 3)))
    if nhwc:
        y = y.transpose(0, 2, 3, 1)
    return y.astype(dtype)


def _f32(value: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def resample(
    x: Arr,
    mode: str,
    sizes: Sequence[int] | None = None,
    scales: Sequence[float] = (1.0, 1.0),
    axes: Sequence[int] = (2, 3),
) -> Arr:
    """WebNN resample2d by its definition (scale = output size / input size,
    sampling at pixel centres, nearest = ceil(c - 0.5)); integers round halves up."""
    dtype = x.dtype
    y = x.astype(F64)
    for i, axis in enumerate(axes):
        size = y.shape[axis]
        out = sizes[i] if sizes is not None else math.floor(size * _f32(scales[i]))
        coord = np.clip((np.arange(out) + 0.5) / (out / size) - 0.5, 0, size - 1)
        if mode == "nearest":
            y = np.take(y, np.ceil(coord - 0.5).astype(int), axis=axis)
            continue
        low, high = np.floor(coord).astype(int), np.ceil(coord).astype(int)
        t = (coord - low).reshape([-1 if d == axis else 1 for d in range(y.ndim)])
        y = np.take(y, low, axis=axis) * (1 - t) + np.take(y, high, axis=axis) * t
    if np.dtype(dtype).kind in "iu":
        y = np.floor(y + 0.5 + 2.0**-10)
    return y.astype(dtype)


def grid_sample(
    x: Arr, grid: Arr, mode: str = "linear", padding: str = "zeros", corners: bool = False
) -> Arr:
    """ONNX GridSample by its definition, in f64: each output position reads the
    taps around (x, y); a tap outside the image reads 0 ("zeros") or the
    nearest edge pixel ("border"); cubic weights use a = -0.75."""
    n, c, height, width = x.shape
    v = x.astype(F64)

    def pixel(g: Arr, size: int) -> Arr:
        return (g + 1) / 2 * (size - 1) if corners else ((g + 1) * size - 1) / 2

    def tap(img: Arr, iy: Arr, ix: Arr) -> Arr:
        inside = (iy >= 0) & (iy < height) & (ix >= 0) & (ix < width)
        got = img[:, np.clip(iy, 0, height - 1), np.clip(ix, 0, width - 1)]
        return got if padding == "border" else np.where(inside, got, 0.0)

    def cubic(t: Arr) -> list[Arr]:
        a = -0.75
        far, near = t + 1, t

        def w_near(d: Arr) -> Arr:
            return ((a + 2) * d - (a + 3)) * d * d + 1

        def w_far(d: Arr) -> Arr:
            return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a

        return [w_far(far), w_near(near), w_near(1 - t), w_far(2 - t)]

    out = np.zeros((n, c, grid.shape[1], grid.shape[2]))
    for b in range(n):
        px = pixel(grid[b, ..., 0].astype(F64), width)
        py = pixel(grid[b, ..., 1].astype(F64), height)
        if mode == "nearest-neighbor":
            out[b] = tap(v[b], np.rint(py).astype(int), np.rint(px).astype(int))
            continue
        x0, y0 = np.floor(px).astype(int), np.floor(py).astype(int)
        tx, ty = px - x0, py - y0
        if mode == "linear":
            for dy, wy in ((0, 1 - ty), (1, ty)):
                for dx, wx in ((0, 1 - tx), (1, tx)):
                    out[b] += tap(v[b], y0 + dy, x0 + dx) * (wy * wx)
            continue
        for dy, wy in zip(range(-1, 3), cubic(ty), strict=True):
            for dx, wx in zip(range(-1, 3), cubic(tx), strict=True):
                out[b] += tap(v[b], y0 + dy, x0 + dx) * (wy * wx)
    return out.astype(x.dtype)


def normalize(x: Arr, axes: Sequence[int], epsilon: float = 1e-5) -> Arr:
    """(x - mean) / sqrt(variance + epsilon) over axes, in f64."""
    x = x.astype(F64)
    axes = tuple(axes)
    mean = x.mean(axis=axes, keepdims=True) if axes else x
    variance = ((x - mean) ** 2).mean(axis=axes, keepdims=True) if axes else 0.0
    return (x - mean) / np.sqrt(variance + epsilon)


def batch_norm(
    x: Arr,
    mean: Arr,
    var: Arr,
    scale: Arr | None = None,
    bias: Arr | None = None,
    axis: int = 1,
    epsilon: float = 1e-5,
) -> Arr:
    shape = [-1 if d == axis else 1 for d in range(x.ndim)]

    def along(v: Arr) -> Arr:
        return np.asarray(v, F64).reshape(shape)

    y = (x.astype(F64) - along(mean)) / np.sqrt(along(var) + epsilon)
    if scale is not None:
        y = y * along(scale)
    if bias is not None:
        y = y + along(bias)
    return y.astype(x.dtype)


def layer_norm(
    x: Arr,
    axes: Sequence[int],
    scale: Arr | None = None,
    bias: Arr | None = None,
    epsilon: float = 1e-5,
) -> Arr:
    y = normalize(x, axes, epsilon)
    order = sorted(axes)
    for param, multiply in ((scale, True), (bias, False)):
        if param is None:
            continue
        value = np.asarray(param, F64)
        if value.ndim:
            # The parameter's dimensions are the axes' in the given order.
            value = value.transpose([list(axes).index(a) for a in order])
            value = value.reshape([x.shape[d] if d in axes else 1 for d in range(x.ndim)])
        y = y * value if multiply else y + value
    return y.astype(x.dtype)


def _nhwc(fn: Callable[[Arr], Arr], x: Arr) -> Arr:
    return fn(x.transpose(0, 3, 1, 2)).transpose(0, 2, 3, 1)


# ---------------------------------------------------------------- per case


def _pools(x: Arr, **options: Any) -> dict[str, Arr]:
    return {name: pool(x, name, **options) for name in ("avg", "max", "l2")}


def _pool_windows(x: Arr) -> dict[str, Arr]:
    out = {}
    for name in ("avg", "max", "l2"):
        out[f"{name}_plain"] = pool(x, name, [3, 2])
        out[f"{name}_strided"] = pool(x, name, [2, 2], strides=[2, 2])
        out[f"{name}_padded"] = pool(x, name, [3, 3], pads=[1, 2, 0, 1], strides=[2, 1])
    return out


def _pool_ceil(x: Arr) -> dict[str, Arr]:
    out = {}
    for name in ("avg", "max", "l2"):
        out[f"{name}_ceil"] = pool(x, name, [3, 3], strides=[2, 2], pads=[1, 1, 0, 0], ceil=True)
        out[f"{name}_sizes"] = pool(x, name, [3, 2], strides=[2, 2], ceil=True)
        for ceil, height in ((False, 4), (True, 5)):
            out[f"{name}_sizes_padded_{height}"] = pool(
                x, name, [3, 3], pads=[1, 1, 0, 1], strides=[2, 2], ceil=ceil
            )
    return out


def _pool_dilations(x: Arr) -> dict[str, Arr]:
    out = {}
    for name in ("avg", "max", "l2"):
        out[f"{name}_dilated"] = pool(
            x, name, [2, 3], dilations=[2, 2], pads=[1, 1, 2, 0], nhwc=True
        )
        out[f"{name}_dilated_ceil"] = pool(
            x,
            name,
            [3, 2],
            dilations=[2, 1],
            strides=[2, 2],
            pads=[1, 1, 0, 0],
            ceil=True,
            nhwc=True,
        )
    return out


def _resample_modes(x: Arr) -> dict[str, Arr]:
    out = {}
    for name in ("nearest", "linear"):
        out[f"{name}_up"] = resample(x, name, scales=[2.0, 1.5])
        out[f"{name}_down"] = resample(x, name, sizes=[3, 2])
        out[f"{name}_odd"] = resample(x, name, sizes=[9, 4])
    out["default"] = resample(x, "nearest", scales=[0.6, 3.0])
    out["identity"] = x
    return out


def _batch_norm_options(x: Arr, v: Arr) -> dict[str, Arr]:
    mean, var = np.array([0.1, -0.2, 0.3]), np.abs(v.astype(F64)) + 0.5
    scale, bias = np.array([1.5, 0.5, -1.0]), np.array([0.0, 1.0, -2.0])
    last_mean, last_var = _const(2), np.array([0.5, 2.0])
    return {
        "full": batch_norm(x, mean, var, scale, bias),
        "bare": batch_norm(x, mean, var, epsilon=0.1),
        "scale_only": batch_norm(x, mean, var, scale),
        "last_axis": batch_norm(x, last_mean, last_var, bias=last_var, axis=3),
        "first_axis": batch_norm(x, last_mean, last_var, axis=0),
    }


def _instance_norm(x: Arr, n: Arr, d: Arr) -> dict[str, Arr]:
    scale, bias = np.array([1.5, 0.5, -1.0]), np.array([0.0, 1.0, -2.0])

    def nchw(t: Arr, s: Arr | None = None, b: Arr | None = None, eps: float = 1e-5) -> Arr:
        y = normalize(t, [2, 3], eps)
        if s is not None:
            y = y * s.reshape(1, -1, 1, 1)
        if b is not None:
            y = y + b.reshape(1, -1, 1, 1)
        return y.astype(t.dtype)

    return {
        "full": nchw(x, scale, bias), "bare": nchw(x, eps=0.01),
        "nhwc": _nhwc(lambda t: nchw(t, scale, bias), n), "nhwc_bare": _nhwc(nchw, n),
        "dynamic_nchw": nchw(d.transpose(0, 3, 1, 2)),
        "dynamic": _nhwc(lambda t: nchw(t, b=_const(4)), d),
    }  # fmt: skip


def _layer_norm_axes(x: Arr) -> dict[str, Arr]:
    s34, s4 = _const(12, [3, 4], 0.2, 1.0), _const(4, None, 0.3, 1.0)
    s3, s43, s24 = (
        _const(3, None, 0.3, 1.0),
        _const(12, [4, 3], 0.2, 1.0),
        _const(8, [2, 4], 0.2, 1.0),
    )
    return {
        "default": layer_norm(x, [1, 2], s34, s34), "bare": layer_norm(x, [1, 2]),
        "last": layer_norm(x, [2], s4, epsilon=0.001), "bias_only": layer_norm(x, [2], bias=s4),
        "middle": layer_norm(x, [1], s3, s3), "reversed": layer_norm(x, [2, 1], s43, s43),
        "outer": layer_norm(x, [0, 2], s24), "none": layer_norm(x, [], bias=np.array(0.5)),
    }  # fmt: skip


REFERENCE: dict[str, Reference] = {
    "matmul_2d_and_batched": lambda a, w, s, t: {"plain": a @ w, "batched": s @ t, "mixed": s @ w},
    "matmul_dynamic_and_f16": lambda a, h: {
        "dynamic": _like(a @ _const(8, [4, 2]), np.float32),
        "half": _like(h.astype(F64) @ _const(8, [4, 2]), np.float16),
    },
    "gemm_options": lambda a, w, row, col, x: {
        "plain": _like(x @ _const(20, [4, 5]), np.float32),
        "both_t": 0.5 * a.T @ w.T + 2 * row,
        "by_col": x @ w.T + col,
        "scalar_c": x @ w.T - 1.5,
    },
    "gemm_f16": lambda a, w, c: {"y": _like(2 * a.astype(F64) @ w + c, np.float16)},
    "conv2d_padding_and_bias": lambda x, w, bias: {
        "same": conv(x, w, [1, 1, 1, 1], bias=bias),
        "valid": conv(x, w),
        "uneven": conv(x, w, [0, 2, 1, 0]),
    },
    "conv2d_strides_dilations": lambda x, w: {
        "strided": conv(x, w, [0, 1, 2, 0], strides=[2, 3]),
        "dilated": conv(x, w, dilations=[3, 2]),
        "both": conv(x, w, [1, 1, 1, 1], strides=[2, 2], dilations=[2, 1]),
    },
    "conv2d_filter_layouts": lambda x, w: {
        name: conv(x, w) for name in ("oihw", "hwio", "ohwi", "ihwo")
    },
    "conv2d_nhwc_groups": lambda x, dw, gw, bias: {
        "depthwise": _nhwc(lambda t: conv(t, dw.transpose(3, 0, 1, 2), [1, 1, 1, 1], groups=4), x),
        "grouped": _nhwc(
            lambda t: conv(t, gw.transpose(3, 2, 0, 1), strides=[2, 2], groups=2, bias=bias), x
        ),
    },
    "conv2d_dynamic": lambda x, n: {
        "y": conv(x, _const(54, [3, 2, 3, 3]), [1, 1, 1, 1]),
        "z": _nhwc(lambda t: conv(t, _const(54, [3, 2, 3, 3]), [1, 1, 1, 1], strides=[2, 2]), n),
    },
    "conv2d_f16": lambda x, w: {"y": conv(x, w, [1, 1, 1, 1], bias=np.array([0.5, -0.5]))},
    "conv_transpose2d_options": lambda x, w, bias: {
        "plain": conv_transpose(x, w, bias=bias),
        "strided": conv_transpose(x, w, [1, 0, 0, 1], strides=[2, 3], extra=[1, 2]),
        "dilated": conv_transpose(x, w, [1, 1, 0, 0], dilations=[2, 1]),
        "sizes": conv_transpose(x, w, strides=[2, 2], extra=[1, 0]),
    },
    "conv_transpose2d_layouts_groups": lambda x, w: {
        name: _nhwc(lambda t: conv_transpose(t, w, strides=[2, 2], groups=2), x)
        for name in ("iohw", "hwoi", "ohwi")
    },
    "conv_transpose2d_dynamic": lambda x: {
        "y": conv_transpose(x, _const(36, [2, 2, 3, 3]), [1, 1, 1, 1], strides=[2, 2], extra=[1, 1])
    },
    "pool_windows": _pool_windows,
    "pool_ceil_and_sizes": _pool_ceil,
    "pool_dilations_nhwc": _pool_dilations,
    "pool_dynamic": lambda x, n: {
        "avg_global": pool(x, "avg"),
        "max_global": pool(n, "max", nhwc=True),
        "l2_global": pool(x, "l2"),
        "avg": pool(x, "avg", [2, 2], pads=[1, 1, 1, 1]),
        "avg_dilated": pool(x, "avg", [2, 2], dilations=[2, 1], pads=[1, 0, 0, 1]),
        "max": pool(n, "max", [2, 2], strides=[2, 2], nhwc=True),
        "l2_ceil": pool(x, "l2", [2, 2], strides=[2, 2], ceil=True),
    },
    "pool_global_static": lambda x: {
        "avg": pool(x, "avg"),
        "max": pool(x, "max", nhwc=True),
        "l2": pool(x, "l2"),
        "padded": pool(x, "avg", pads=[1, 1, 1, 1], strides=[2, 2]),
    },
    "max_pool_integers_and_f16": lambda u, k, h: {
        "u8": pool(u, "max", [3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        "i8": pool(k, "max", [2, 2], pads=[1, 0, 1, 0], nhwc=True),
        "u8_global": pool(u, "max"),
        "f16_max": pool(h, "max", [2, 2]),
        "f16_avg": pool(h, "avg", [2, 2], pads=[1, 1, 1, 1]),
        "f16_l2": pool(h, "l2", [2, 2]),
    },
    "resample_modes": _resample_modes,
    "resample_runtime_sizes": lambda x, image, s: {
        "linear": resample(x, "linear", list(np.abs(s) + 1)),
        "nearest": resample(x, "nearest", list(np.abs(s) + 1)),
        "nhwc_u8": resample(image, "linear", list(np.abs(s) + 1), axes=[1, 2]),
        "swapped": resample(x, "linear", list(np.abs(s) + 1), axes=[3, 2]),
    },
    "grid_sample_modes": lambda x, grid, half, hgrid: {
        "linear": grid_sample(x, grid),
        "linear_border_corners": grid_sample(x, grid, padding="border", corners=True),
        "cubic_border_corners": grid_sample(x, grid, "cubic", "border", True),
        "cubic": grid_sample(x, grid, "cubic"),
        "nearest": grid_sample(x, grid, "nearest-neighbor", "border"),
        "f16": grid_sample(half, hgrid, padding="border"),
    },
    "resample_nhwc_axes": lambda image, other: {
        "nhwc": resample(image, "linear", [11, 8], axes=[1, 2]),
        "nearest": resample(image, "nearest", scales=[0.5, 2.0], axes=[1, 2]),
        "outer": resample(other, "linear", [3, 2], axes=[0, 2]),
        "reversed": resample(other, "linear", [7, 6], axes=[3, 1]),
    },
    "resample_dynamic": lambda image, x, m: {
        "fixed": resample(image.astype(np.float32), "linear", [8, 10], axes=[1, 2]),
        "scaled": resample(x, "linear", scales=[2.5, 1.7]),
        "nearest": resample(x, "nearest", scales=[1.5, 0.7]),
        "mixed": resample(m, "linear", scales=[1.5, 0.7]),
    },
    "resample_integers_and_f16": lambda u, k, h: {
        "u8_linear": resample(u, "linear", [8, 4], axes=[1, 2]),
        "u8_nearest": resample(u, "nearest", [8, 4], axes=[1, 2]),
        "i8_linear": resample(k, "linear", scales=[1.5, 1.5]),
        "f16_linear": resample(h, "linear", [5, 6]),
    },
    "batch_norm_options": _batch_norm_options,
    "batch_norm_ranks_dynamic_f16": lambda m, d, stats, h: {
        "matrix": batch_norm(m, np.array([0.5, 0.0, -0.5]), np.array([1.0, 2.0, 0.25])),
        "dynamic": batch_norm(d, stats, np.abs(stats.astype(F64)) + 1.0),
        "half": batch_norm(h, *[np.array([1.0, 2.0])] * 4),
    },
    "instance_norm_options": _instance_norm,
    "instance_norm_f16": lambda h: {
        "y": (normalize(h, [2, 3]) * np.array([2.0, 0.5]).reshape(1, 2, 1, 1)).astype(np.float16)
    },
    "layer_norm_axes": _layer_norm_axes,
    "layer_norm_dynamic_f16": lambda d, h: {
        "dynamic": layer_norm(d, [1, 2]),
        "dynamic_last": layer_norm(d, [2], _const(4, None, 0.3, 1.0)),
        "half": layer_norm(h, [1], bias=_const(5)),
    },
}
CASES = list(cases_nn.CASES)


# ---------------------------------------------------------------- misuse


def _operands(b: GraphBuilder) -> dict[str, Any]:
    return {
        "x": b.input("x", shape=[1, 2, 5, 5], dtype="f32"),
        "m": b.input("m", shape=[3, 4], dtype="f32"),
        "w": b.input("w", shape=[3, 2, 3, 3], dtype="f32"),
        "u": b.input("u", shape=[1, 2, 5, 5], dtype="u8"),
        "h": b.input("h", shape=[3, 4], dtype="f16"),
        "k": b.input("k", shape=[1, 2, 5, 5], dtype="i32"),
        "d": b.input("d", shape=[None, 2, None, None], dtype="f32"),
        "sq": b.input("sq", shape=[1, 1, 4, 4], dtype="f32"),
    }


Misuse = Callable[[GraphBuilder, dict[str, Any]], Any]
MISUSE: dict[str, tuple[Misuse, str]] = {
    # matmul, gemm
    "matmul rank": (
        lambda b, o: b.matmul(b.input("v", shape=[4]), o["m"]),
        "matmul: both inputs must have rank 2 or more, not [4] and [3, 4]",
    ),
    "matmul inner": (
        lambda b, o: b.matmul(o["m"], o["m"]),
        "matmul: the first input has 4 columns and the second 3 rows",
    ),
    "matmul ints": (
        lambda b, o: b.matmul(o["k"], o["k"]),
        "matmul: the first input is i32, but matmul takes f32, f16",
    ),
    "matmul mixed": (
        lambda b, o: b.matmul(o["m"], b.input("g", shape=[4, 3], dtype="f16")),
        "matmul: the second input is f16, but the first input is f32",
    ),
    "matmul batch": (
        lambda b, o: b.matmul(b.input("p", shape=[2, 3, 4]), b.input("q", shape=[3, 4, 5])),
        "matmul: the batch dimensions of [2, 3, 4] and [3, 4, 5] cannot be broadcast",
    ),
    "gemm rank": (
        lambda b, o: b.gemm(o["x"], o["m"]),
        "gemm: both inputs must be 2-D, not [1, 2, 5, 5]",
    ),
    "gemm inner": (lambda b, o: b.gemm(o["m"], o["m"]), "gemm: A is 3x4 and B 3x4"),
    "gemm c": (
        lambda b, o: b.gemm(o["m"], o["m"], c=b.input("c", shape=[4]), b_transpose=True),
        "gemm: c [4] does not broadcast to the result [3, 3]",
    ),
    "gemm alpha": (
        lambda b, o: b.gemm(o["m"], o["m"], alpha="2", b_transpose=True),
        "gemm: alpha must be a finite number, not '2'",
    ),
    "gemm flag": (
        lambda b, o: b.gemm(o["m"], o["m"], a_transpose=1),
        "gemm: a_transpose must be True or False, not 1",
    ),
    # conv2d
    "conv rank": (
        lambda b, o: b.conv2d(o["m"], o["w"]),
        "conv2d: the input must be 4-D, not 2-D [3, 4]",
    ),
    "conv dtype": (
        lambda b, o: b.conv2d(o["u"], o["w"]),
        "conv2d: the input is u8, but conv2d takes f32, f16",
    ),
    "conv filter dtype": (
        lambda b, o: b.conv2d(o["x"], b.input("f", shape=[3, 2, 3, 3], dtype="f16")),
        "conv2d: the filter is f16, but the input is f32; they must have the same",
    ),
    "conv filter list": (
        lambda b, o: b.conv2d(o["x"], [[1.0]]),
        "conv2d: the filter must be an Operand of this builder, not list",
    ),
    "conv channels": (
        lambda b, o: b.conv2d(o["x"], b.input("f", shape=[3, 3, 3, 3])),
        "conv2d: the filter takes 3 input channels per group, but the input has 2",
    ),
    "conv groups": (
        lambda b, o: b.conv2d(o["x"], o["w"], groups=3),
        "conv2d: the input's 2 channels cannot be split into 3 groups",
    ),
    "conv out groups": (
        lambda b, o: b.conv2d(o["x"], b.input("f", shape=[3, 1, 3, 3]), groups=2),
        "conv2d: the filter's 3 output channels cannot be split into 2 groups",
    ),
    "conv padding": (
        lambda b, o: b.conv2d(o["x"], o["w"], padding=[1, 1]),
        "conv2d: padding must be a list of 4 integers of at least 0, not [1, 1]",
    ),
    "conv strides": (
        lambda b, o: b.conv2d(o["x"], o["w"], strides=[0, 1]),
        "conv2d: strides must be a list of 2 integers of at least 1, not [0, 1]",
    ),
    "conv layout": (
        lambda b, o: b.conv2d(o["x"], o["w"], input_layout="NCHW"),
        "conv2d: input_layout must be one of 'nchw', 'nhwc', not 'NCHW'",
    ),
    "conv filter layout": (
        lambda b, o: b.conv2d(o["x"], o["w"], filter_layout="iohw"),
        "filter_layout must be one of 'oihw', 'hwio', 'ohwi', 'ihwo', not 'iohw'",
    ),
    "conv too big": (
        lambda b, o: b.conv2d(o["x"], b.input("f", shape=[3, 2, 7, 7])),
        "conv2d: the filter (7x7, dilations [1, 1]) does not fit the padded input (5x5",
    ),
    "conv bias": (
        lambda b, o: b.conv2d(o["x"], o["w"], bias=b.input("c", shape=[2])),
        "conv2d: the bias must have shape [3], not [2]",
    ),
    # conv_transpose2d
    "convT output padding": (
        lambda b, o: b.conv_transpose2d(o["x"], o["w"], output_padding=[1, 1]),
        "conv_transpose2d: output_padding [1, 1] must be smaller than strides [1, 1]",
    ),
    "convT sizes": (
        lambda b, o: b.conv_transpose2d(
            o["x"], b.input("f", shape=[2, 3, 3, 3]), strides=[2, 2], output_sizes=[13, 11]
        ),
        "output_sizes [13, 11] is out of range: dimension 0 must be from 11 to 12",
    ),
    "convT sizes dynamic": (
        lambda b, o: b.conv_transpose2d(
            o["d"], b.input("f", shape=[2, 3, 3, 3]), output_sizes=[7, 7]
        ),
        "conv_transpose2d: output_sizes needs the input's height and width",
    ),
    "convT channels": (
        lambda b, o: b.conv_transpose2d(o["x"], o["w"]),
        "conv_transpose2d: the input has 2 channels but the filter takes 3",
    ),
    "convT layout": (
        lambda b, o: b.conv_transpose2d(o["x"], o["w"], filter_layout="oihw"),
        "conv_transpose2d: filter_layout must be one of 'iohw', 'hwoi', 'ohwi', not",
    ),
    # pooling
    "pool padding": (
        lambda b, o: b.max_pool2d(o["x"], window_dimensions=[2, 2], padding=[2, 0, 0, 0]),
        "max_pool2d: padding [2, 0, 0, 0] must be smaller than the window [2, 2]",
    ),
    "pool sizes": (
        lambda b, o: b.average_pool2d(
            o["x"], window_dimensions=[2, 2], strides=[2, 2], output_sizes=[4, 4]
        ),
        "output_sizes [4, 4] is neither [2, 2] (rounded down) nor [3, 3] (rounded up)",
    ),
    "pool sizes and padding": (
        lambda b, o: b.l2_pool2d(
            o["x"], window_dimensions=[2, 2], padding=[1, 1, 1, 1], output_sizes=[5, 5]
        ),
        "l2_pool2d: output_sizes [5, 5] is neither [6, 6] (rounded down) nor [6, 6] (rounded",
    ),
    "pool ceil in padding": (
        lambda b, o: b.max_pool2d(
            o["sq"],
            window_dimensions=[2, 2],
            strides=[2, 2],
            padding=[0, 1, 0, 0],
            output_shape_rounding="ceil",
        ),
        "with ceil rounding the last window of dimension 0 would start inside the",
    ),
    "pool ceil dynamic": (
        lambda b, o: b.max_pool2d(
            o["d"],
            window_dimensions=[2, 2],
            strides=[2, 2],
            padding=[0, 0, 0, 1],
            output_shape_rounding="ceil",
        ),
        "max_pool2d: with ceil rounding the last window of dimension 1 would start inside",
    ),
    "pool global dynamic": (
        lambda b, o: b.average_pool2d(o["d"], padding=[1, 1, 1, 1]),
        "average_pool2d: the window defaults to the whole image, whose size is",
    ),
    "pool global sizes": (
        lambda b, o: b.average_pool2d(o["x"], output_sizes=[2, 2]),
        "output_sizes [2, 2] must be [1, 1] when the window is the whole image",
    ),
    "pool window": (
        lambda b, o: b.max_pool2d(o["x"], window_dimensions=[6, 2]),
        "max_pool2d: the window [6, 2] (dilations [1, 1]) is larger than the padded input 5x5",
    ),
    "pool avg u8": (
        lambda b, o: b.average_pool2d(o["u"]),
        "average_pool2d: the input is u8, but average_pool2d takes f32, f16",
    ),
    "pool max i32": (
        lambda b, o: b.max_pool2d(o["k"]),
        "max_pool2d: the input is i32, but max_pool2d takes f32, f16, i8, u8",
    ),
    "pool layout": (
        lambda b, o: b.l2_pool2d(o["x"], layout="chw"),
        "l2_pool2d: layout must be one of 'nchw', 'nhwc', not 'chw'",
    ),
    "pool rounding": (
        lambda b, o: b.max_pool2d(o["x"], output_shape_rounding="round"),
        "max_pool2d: output_shape_rounding must be one of 'floor', 'ceil', not 'round'",
    ),
    # resample2d
    "resample mode": (
        lambda b, o: b.resample2d(o["x"], mode="bilinear"),
        "resample2d: mode must be one of 'nearest-neighbor', 'linear', 'cubic', not 'bilinear'",
    ),
    "resample scales": (
        lambda b, o: b.resample2d(o["x"], scales=[0, 1]),
        "resample2d: scales must be a list of 2 positive numbers, not [0, 1]",
    ),
    "resample sizes": (
        lambda b, o: b.resample2d(o["x"], sizes=[0, 3]),
        "resample2d: sizes must be a list of 2 integers of at least 1, not [0, 3]",
    ),
    "resample axes repeat": (
        lambda b, o: b.resample2d(o["x"], axes=[2, 2]),
        "resample2d: axes [2, 2] repeat an axis",
    ),
    "resample axes count": (
        lambda b, o: b.resample2d(o["x"], axes=[1, 2, 3]),
        "resample2d: axes must list 2 dimensions, not [1, 2, 3]",
    ),
    "resample axes range": (
        lambda b, o: b.resample2d(o["x"], axes=[2, 4]),
        "resample2d: every axis must be an integer from 0 to 3 for an input of rank 4",
    ),
    "resample sizes operand": (
        lambda b, o: b.resample2d(o["x"], sizes=b.input("s3", shape=[3], dtype="i32")),
        "resample2d: the sizes operand must have shape [2], not [3]",
    ),
    "resample sizes float": (
        lambda b, o: b.resample2d(o["x"], sizes=b.input("sf", shape=[2], dtype="f32")),
        "resample2d: the sizes is f32, but resample2d takes i32, i64",
    ),
    "grid_sample grid shape": (
        lambda b, o: b.grid_sample(o["x"], b.input("g", shape=[1, 3, 3, 3], dtype="f32")),
        "grid_sample: the grid must be [N, H_out, W_out, 2], not [1, 3, 3, 3]",
    ),
    "grid_sample batch": (
        lambda b, o: b.grid_sample(o["x"], b.input("g", shape=[2, 3, 3, 2], dtype="f32")),
        "grid_sample: the input's batch (1) and the grid's (2) must be equal",
    ),
    "grid_sample mode": (
        lambda b, o: b.grid_sample(
            o["x"], b.input("g", shape=[1, 3, 3, 2], dtype="f32"), mode="bicubic"
        ),
        "grid_sample: mode must be one of 'nearest-neighbor', 'linear', 'cubic', not 'bicubic'",
    ),
    "grid_sample padding": (
        lambda b, o: b.grid_sample(
            o["x"], b.input("g", shape=[1, 3, 3, 2], dtype="f32"), padding_mode="reflection"
        ),
        "grid_sample: padding_mode must be one of 'zeros', 'border', not 'reflection'",
    ),
    "grid_sample ints": (
        lambda b, o: b.grid_sample(o["u"], o["x"]),
        "grid_sample: the input is u8, but grid_sample takes f32, f16",
    ),
    "resample too small": (
        lambda b, o: b.resample2d(o["x"], scales=[0.1, 1.0]),
        "scaling dimension 2 (5) by 0.10000000149011612 gives 0, not a valid size",
    ),
    "resample rank": (
        lambda b, o: b.resample2d(o["m"]),
        "resample2d: the input must be 4-D, not 2-D [3, 4]",
    ),
    "resample i32": (
        lambda b, o: b.resample2d(o["k"]),
        "resample2d: the input is i32, but resample2d takes f32, f16, i8, u8",
    ),
    # normalization
    "bn mean": (
        lambda b, o: b.batch_normalization(
            o["x"], b.input("p", shape=[3]), b.input("q", shape=[2])
        ),
        "batch_normalization: the mean must have shape [2], not [3]",
    ),
    "bn axis": (
        lambda b, o: b.batch_normalization(
            o["x"], b.input("p", shape=[2]), b.input("q", shape=[2]), axis=4
        ),
        "batch_normalization: axis must be an integer from 0 to 3 for an input of rank 4",
    ),
    "bn dtype": (
        lambda b, o: b.batch_normalization(
            o["x"], b.input("p", shape=[2]), b.input("q", shape=[2], dtype="f16")
        ),
        "batch_normalization: the variance is f16, but the input is f32",
    ),
    "bn epsilon": (
        lambda b, o: b.batch_normalization(
            o["x"], b.input("p", shape=[2]), b.input("q", shape=[2]), epsilon=float("nan")
        ),
        "batch_normalization: epsilon must be a finite number, not nan",
    ),
    "in rank": (
        lambda b, o: b.instance_normalization(o["m"]),
        "instance_normalization: the input must be 4-D, not 2-D",
    ),
    "in scale": (
        lambda b, o: b.instance_normalization(o["x"], scale=b.input("s", shape=[2]), layout="nhwc"),
        "instance_normalization: the scale must have shape [5], not [2]",
    ),
    "ln axes": (
        lambda b, o: b.layer_normalization(o["x"], axes=[1, 1]),
        "layer_normalization: axes [1, 1] repeat an axis",
    ),
    "ln scale": (
        lambda b, o: b.layer_normalization(o["x"], scale=b.input("s", shape=[2, 5])),
        "the scale must have shape [2, 5, 5] (the input's dimensions [1, 2, 3]), not [2, 5]",
    ),
    "ln ints": (
        lambda b, o: b.layer_normalization(o["k"]),
        "layer_normalization: the input is i32, but layer_normalization takes f32",
    ),
    # Python-level misuse
    "unknown option": (
        lambda b, o: b.conv2d(o["x"], o["w"], padding_mode="same"),
        "unexpected keyword argument 'padding_mode'",
    ),
    "positional option": (
        lambda b, o: b.conv2d(o["x"], o["w"], [1, 1, 1, 1]),
        "positional argument",
    ),
}


@pytest.mark.parametrize("name", MISUSE)
def test_misuse_is_refused_when_the_operation_is_added(name: str) -> None:
    make, message = MISUSE[name]
    b = GraphBuilder()
    operands = _operands(b)
    error = TypeError if name in ("unknown option", "positional option") else ValidationError
    with pytest.raises(error) as info:
        make(b, operands)
    assert message in str(info.value)


# ---------------------------------------------------------------- shapes and lowering


def test_shapes_are_inferred_with_dynamic_dimensions() -> None:
    b = GraphBuilder()
    x = b.input("x", shape=[None, 3, None, 8], dtype="f32")
    w = b.input("w", shape=[4, 3, 3, 3], dtype="f32")
    assert b.conv2d(x, w, padding=[1, 1, 1, 1], strides=[2, 2]).shape == (None, 4, None, 4)
    t = b.input("t", shape=[4, 2, 3, 3], dtype="f32")
    up = b.conv_transpose2d(b.input("y", shape=[None, 4, 5, None]), t, strides=[2, 2])
    assert up.shape == (None, 2, 11, None)
    assert b.max_pool2d(x, window_dimensions=[2, 2], strides=[2, 2]).shape == (None, 3, None, 4)
    assert b.average_pool2d(x).shape == (None, 3, 1, 1)
    assert b.resample2d(x, scales=[2.0, 0.5]).shape == (None, 3, None, 4)
    assert b.resample2d(x, sizes=[7, 9], axes=[3, 2]).shape == (None, 3, 9, 7)
    assert b.matmul(b.input("a", shape=[None, 1, 2, 5]), b.input("c", shape=[6, 5, 7])).shape == (
        None, 6, 2, 7,
    )  # fmt: skip
    assert b.layer_normalization(x).shape == x.shape
    assert b.batch_normalization(x, b.input("m", shape=[3]), b.input("v", shape=[3])).dtype == "f32"


def test_ceil_rounding_and_output_sizes_give_webnn_shapes() -> None:
    b = GraphBuilder()
    x = b.input("x", shape=[1, 2, 8, 6], dtype="f32")
    ceil = b.l2_pool2d(
        x,
        window_dimensions=[3, 3],
        strides=[2, 2],
        padding=[1, 1, 0, 0],
        output_shape_rounding="ceil",
    )
    floor = b.l2_pool2d(x, window_dimensions=[3, 3], strides=[2, 2], padding=[1, 1, 0, 0])
    sized = b.max_pool2d(x, window_dimensions=[3, 2], strides=[2, 2], output_sizes=[4, 3])
    assert (ceil.shape, floor.shape, sized.shape) == ((1, 2, 5, 3), (1, 2, 4, 2), (1, 2, 4, 3))


def _node_types(outputs: dict[str, Any], b: GraphBuilder) -> list[str]:
    import onnx

    return [n.op_type for n in onnx.load_from_string(b.to_onnx(outputs)).graph.node]


def _attributes(outputs: dict[str, Any], b: GraphBuilder, op_type: str) -> dict[str, Any]:
    import onnx

    graph = onnx.load_from_string(b.to_onnx(outputs)).graph
    node = next(n for n in graph.node if n.op_type == op_type)
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def test_default_layouts_need_no_transposes_and_others_do() -> None:
    b = GraphBuilder()
    x = b.input("x", shape=[1, 2, 5, 5], dtype="f32")
    w = b.input("w", shape=[3, 2, 3, 3], dtype="f32")
    assert _node_types({"y": b.conv2d(x, w)}, b) == ["Conv", "Identity"]
    n = b.input("n", shape=[1, 5, 5, 2], dtype="f32")
    nhwc = b.conv2d(n, w, input_layout="nhwc")
    assert _node_types({"y": nhwc}, b) == ["Transpose", "Conv", "Transpose", "Identity"]
    f = b.input("f", shape=[3, 3, 3, 2], dtype="f32")
    assert _node_types({"y": b.conv2d(x, f, filter_layout="ohwi")}, b).count("Transpose") == 1
    conv = _attributes({"y": b.conv2d(x, w, padding=[1, 2, 3, 4])}, b, "Conv")
    assert conv["pads"] == [1, 3, 2, 4]  # ONNX: all beginnings, then all ends


def test_lowering_options_that_carry_webnn_semantics() -> None:
    b = GraphBuilder()
    x = b.input("x", shape=[1, 2, 5, 5], dtype="f32")
    nearest = _attributes({"y": b.resample2d(x, scales=[2.0, 2.0])}, b, "Resize")
    assert nearest["coordinate_transformation_mode"] == b"half_pixel"
    assert nearest["nearest_mode"] == b"round_prefer_floor"
    average = _attributes(
        {"y": b.average_pool2d(x, window_dimensions=[2, 2], padding=[1, 1, 1, 1])}, b, "AveragePool"
    )
    assert average["count_include_pad"] == 0
    assert "Resize" not in _node_types({"y": b.resample2d(x)}, b)  # scales [1, 1]: nothing to do


def test_resample_to_sizes_read_from_another_operand() -> None:
    """``sizes=[like.size(2), like.size(3)]``: one graph resizes to whatever
    size ``like`` has when it runs, equal to the graph with those sizes fixed."""
    from builder_check import run_onnxruntime, run_openvino

    x = np.random.default_rng(7).uniform(0, 1, (1, 2, 5, 7)).astype(np.float32)
    b = GraphBuilder()
    image = b.input("x", shape=[1, 2, 5, 7], dtype="f32")
    like = b.input("like", shape=[1, 1, None, None], dtype="f32")
    graph = b.to_onnx({"y": b.resample2d(image, mode="linear", sizes=[like.size(2), like.size(3)])})
    for h, w in [(9, 4), (5, 7), (16, 3)]:
        fixed = GraphBuilder()
        resized = fixed.resample2d(
            fixed.input("x", shape=[1, 2, 5, 7], dtype="f32"), mode="linear", sizes=[h, w]
        )
        want = run_onnxruntime(fixed.to_onnx({"y": resized}), {"x": x})["y"]
        feeds = {"x": x, "like": np.zeros((1, 1, h, w), np.float32)}
        for run in (run_onnxruntime, run_openvino):
            got = run(graph, feeds)["y"]
            assert got.shape == (1, 2, h, w)
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
