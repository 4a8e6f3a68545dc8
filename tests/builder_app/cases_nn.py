"""Graph-builder cases for the nn operations (see builder_cases.py): matmul,
gemm, convolutions, pooling, resample2d and the normalizations."""

from __future__ import annotations

from collections.abc import Callable

from wasinn import GraphBuilder, Operand

Case = Callable[[GraphBuilder], dict[str, Operand]]
CASES: dict[str, Case] = {}


def case(fn: Case) -> Case:
    CASES[fn.__name__] = fn
    return fn


def ramp(count: int, scale: float = 0.1, offset: float = 0.0) -> list[float]:
    """Deterministic constant values: ``offset + scale * (i % 7 - 3)``."""
    return [offset + scale * (i % 7 - 3) for i in range(count)]


# ---------------------------------------------------------------- matmul, gemm


@case
def matmul_2d_and_batched(b: GraphBuilder) -> dict[str, Operand]:
    a = b.input("a", shape=[3, 4], dtype="f32")
    w = b.input("w", shape=[4, 5], dtype="f32")
    s = b.input("s", shape=[2, 1, 3, 4], dtype="f32")
    t = b.input("t", shape=[3, 4, 2], dtype="f32")
    return {"plain": b.matmul(a, w), "batched": b.matmul(s, t), "mixed": b.matmul(s, w)}


@case
def matmul_dynamic_and_f16(b: GraphBuilder) -> dict[str, Operand]:
    a = b.input("a", shape=[None, 2, 4], dtype="f32")
    h = b.input("h", shape=[2, 3, 4], dtype="f16")
    w = b.constant(ramp(8), shape=[4, 2], dtype="f32")
    return {"dynamic": b.matmul(a, w), "half": b.matmul(h, b.cast(w, "f16"))}


@case
def gemm_options(b: GraphBuilder) -> dict[str, Operand]:
    a = b.input("a", shape=[4, 3], dtype="f32")
    w = b.input("w", shape=[5, 4], dtype="f32")
    row = b.input("row", shape=[5], dtype="f32")
    col = b.input("col", shape=[3, 1], dtype="f32")
    x = b.input("x", shape=[3, 4], dtype="f32")
    return {
        "plain": b.gemm(x, b.constant(ramp(20), shape=[4, 5], dtype="f32")),
        "both_t": b.gemm(a, w, c=row, alpha=0.5, beta=2.0, a_transpose=True, b_transpose=True),
        "by_col": b.gemm(x, w, c=col, b_transpose=True),
        "scalar_c": b.gemm(x, w, c=b.constant(1.5, dtype="f32"), beta=-1.0, b_transpose=True),
    }


@case
def gemm_f16(b: GraphBuilder) -> dict[str, Operand]:
    a = b.input("a", shape=[2, 3], dtype="f16")
    w = b.input("w", shape=[3, 4], dtype="f16")
    c = b.input("c", shape=[2, 4], dtype="f16")
    return {"y": b.gemm(a, w, c=c, alpha=2.0)}


# ---------------------------------------------------------------- conv2d


@case
def conv2d_padding_and_bias(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[1, 2, 5, 6], dtype="f32")
    w = b.input("w", shape=[3, 2, 3, 3], dtype="f32")
    bias = b.input("bias", shape=[3], dtype="f32")
    return {
        "same": b.conv2d(x, w, padding=[1, 1, 1, 1], bias=bias),
        "valid": b.conv2d(x, w),
        "uneven": b.conv2d(x, w, padding=[0, 2, 1, 0]),
    }


@case
def conv2d_strides_dilations(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[2, 3, 9, 8], dtype="f32")
    w = b.input("w", shape=[4, 3, 2, 3], dtype="f32")
    return {
        "strided": b.conv2d(x, w, strides=[2, 3], padding=[0, 1, 2, 0]),
        "dilated": b.conv2d(x, w, dilations=[3, 2]),
        "both": b.conv2d(x, w, strides=[2, 2], dilations=[2, 1], padding=[1, 1, 1, 1]),
    }


@case
def conv2d_filter_layouts(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[1, 2, 5, 5], dtype="f32")
    w = b.input("w", shape=[3, 2, 2, 3], dtype="f32")  # oihw
    return {
        "oihw": b.conv2d(x, w),
        "hwio": b.conv2d(x, b.transpose(w, permutation=[2, 3, 1, 0]), filter_layout="hwio"),
        "ohwi": b.conv2d(x, b.transpose(w, permutation=[0, 2, 3, 1]), filter_layout="ohwi"),
        "ihwo": b.conv2d(x, b.transpose(w, permutation=[1, 2, 3, 0]), filter_layout="ihwo"),
    }


@case
def conv2d_nhwc_groups(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[1, 6, 7, 4], dtype="f32")
    depthwise = b.input("dw", shape=[1, 3, 3, 4], dtype="f32")  # ihwo
    grouped = b.input("gw", shape=[3, 3, 2, 6], dtype="f32")  # hwio
    bias = b.input("bias", shape=[6], dtype="f32")
    return {
        "depthwise": b.conv2d(
            x, depthwise, groups=4, input_layout="nhwc", filter_layout="ihwo", padding=[1, 1, 1, 1]
        ),
        "grouped": b.conv2d(
            x,
            grouped,
            groups=2,
            input_layout="nhwc",
            filter_layout="hwio",
            bias=bias,
            strides=[2, 2],
        ),
    }


@case
def conv2d_dynamic(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[None, 2, None, None], dtype="f32")
    w = b.constant(ramp(54), shape=[3, 2, 3, 3], dtype="f32")
    y = b.conv2d(x, w, padding=[1, 1, 1, 1])
    n = b.input("n", shape=[1, None, None, 2], dtype="f32")
    z = b.conv2d(n, w, input_layout="nhwc", padding=[1, 1, 1, 1], strides=[2, 2])
    return {"y": y, "z": z}


@case
def conv2d_f16(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[1, 2, 4, 4], dtype="f16")
    w = b.input("w", shape=[2, 2, 3, 3], dtype="f16")
    return {"y": b.conv2d(x, w, padding=[1, 1, 1, 1], bias=b.constant([0.5, -0.5], dtype="f16"))}


# ---------------------------------------------------------------- conv_transpose2d


@case
def conv_transpose2d_options(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[1, 2, 4, 5], dtype="f32")
    w = b.input("w", shape=[2, 3, 3, 3], dtype="f32")  # iohw
    bias = b.input("bias", shape=[3], dtype="f32")
    return {
        "plain": b.conv_transpose2d(x, w, bias=bias),
        "strided": b.conv_transpose2d(
            x, w, strides=[2, 3], padding=[1, 0, 0, 1], output_padding=[1, 2]
        ),
        "dilated": b.conv_transpose2d(x, w, dilations=[2, 1], padding=[1, 1, 0, 0]),
        "sizes": b.conv_transpose2d(x, w, strides=[2, 2], output_sizes=[10, 11]),
    }


@case
def conv_transpose2d_layouts_groups(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[1, 4, 5, 4], dtype="f32")  # nhwc, 4 channels
    w = b.input("w", shape=[4, 3, 2, 2], dtype="f32")  # iohw, 2 groups -> 6 outputs
    return {
        "iohw": b.conv_transpose2d(x, w, groups=2, input_layout="nhwc", strides=[2, 2]),
        "hwoi": b.conv_transpose2d(
            x,
            b.transpose(w, permutation=[2, 3, 1, 0]),
            groups=2,
            input_layout="nhwc",
            filter_layout="hwoi",
            strides=[2, 2],
        ),
        "ohwi": b.conv_transpose2d(
            x,
            b.transpose(w, permutation=[1, 2, 3, 0]),
            groups=2,
            input_layout="nhwc",
            filter_layout="ohwi",
            strides=[2, 2],
        ),
    }


@case
def conv_transpose2d_dynamic(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[None, 2, None, None], dtype="f32")
    w = b.constant(ramp(36), shape=[2, 2, 3, 3], dtype="f32")
    return {
        "y": b.conv_transpose2d(x, w, strides=[2, 2], padding=[1, 1, 1, 1], output_padding=[1, 1])
    }


# ---------------------------------------------------------------- pooling


@case
def pool_windows(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[2, 3, 7, 6], dtype="f32")
    out: dict[str, Operand] = {}
    for name, pool in (("avg", b.average_pool2d), ("max", b.max_pool2d), ("l2", b.l2_pool2d)):
        out[f"{name}_plain"] = pool(x, window_dimensions=[3, 2])
        out[f"{name}_strided"] = pool(x, window_dimensions=[2, 2], strides=[2, 2])
        out[f"{name}_padded"] = pool(
            x, window_dimensions=[3, 3], padding=[1, 2, 0, 1], strides=[2, 1]
        )
    return out


@case
def pool_ceil_and_sizes(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[1, 2, 8, 6], dtype="f32")
    out: dict[str, Operand] = {}
    for name, pool in (("avg", b.average_pool2d), ("max", b.max_pool2d), ("l2", b.l2_pool2d)):
        # Rounded up, the last windows reach past the padding (8x6 -> 5x3, not 4x2).
        out[f"{name}_ceil"] = pool(
            x,
            window_dimensions=[3, 3],
            strides=[2, 2],
            padding=[1, 1, 0, 0],
            output_shape_rounding="ceil",
        )
        out[f"{name}_sizes"] = pool(
            x, window_dimensions=[3, 2], strides=[2, 2], output_sizes=[4, 3]
        )
        # With padding, the sizes (not the rounding, which they override)
        # pick floor (8x6 -> 4x3) or ceil (-> 5x3); the padding still applies.
        for rounding, sizes in (("ceil", [4, 3]), ("floor", [5, 3])):
            out[f"{name}_sizes_padded_{sizes[0]}"] = pool(
                x,
                window_dimensions=[3, 3],
                strides=[2, 2],
                padding=[1, 1, 0, 1],
                output_shape_rounding=rounding,
                output_sizes=sizes,
            )
    return out


@case
def pool_dilations_nhwc(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[1, 8, 7, 3], dtype="f32")
    out: dict[str, Operand] = {}
    for name, pool in (("avg", b.average_pool2d), ("max", b.max_pool2d), ("l2", b.l2_pool2d)):
        out[f"{name}_dilated"] = pool(
            x,
            window_dimensions=[2, 3],
            dilations=[2, 2],
            padding=[1, 1, 2, 0],
            layout="nhwc",
        )
        out[f"{name}_dilated_ceil"] = pool(
            x,
            window_dimensions=[3, 2],
            dilations=[2, 1],
            strides=[2, 2],
            padding=[1, 1, 0, 0],
            layout="nhwc",
            output_shape_rounding="ceil",
        )
    return out


@case
def pool_dynamic(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[None, 2, None, None], dtype="f32")
    n = b.input("n", shape=[1, None, None, 2], dtype="f32")
    return {
        "avg_global": b.average_pool2d(x),
        "max_global": b.max_pool2d(n, layout="nhwc"),
        "l2_global": b.l2_pool2d(x),
        "avg": b.average_pool2d(x, window_dimensions=[2, 2], padding=[1, 1, 1, 1]),
        "avg_dilated": b.average_pool2d(
            x, window_dimensions=[2, 2], dilations=[2, 1], padding=[1, 0, 0, 1]
        ),
        "max": b.max_pool2d(n, window_dimensions=[2, 2], strides=[2, 2], layout="nhwc"),
        "l2_ceil": b.l2_pool2d(
            x, window_dimensions=[2, 2], strides=[2, 2], output_shape_rounding="ceil"
        ),
    }


@case
def pool_global_static(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[2, 3, 4, 5], dtype="f32")
    return {
        "avg": b.average_pool2d(x),
        "max": b.max_pool2d(x, layout="nhwc"),
        "l2": b.l2_pool2d(x, strides=[2, 2]),
        "padded": b.average_pool2d(x, padding=[1, 1, 1, 1], strides=[2, 2]),
    }


@case
def max_pool_integers_and_f16(b: GraphBuilder) -> dict[str, Operand]:
    u = b.input("u", shape=[1, 2, 5, 5], dtype="u8")
    k = b.input("k", shape=[1, 5, 5, 2], dtype="i32")
    h = b.input("h", shape=[1, 2, 4, 4], dtype="f16")
    small = b.cast(k, "int8")
    pooled = b.max_pool2d(small, window_dimensions=[2, 2], padding=[1, 0, 1, 0], layout="nhwc")
    return {
        "u8": b.max_pool2d(u, window_dimensions=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1]),
        "i8": b.cast(pooled, "int32"),
        "u8_global": b.max_pool2d(u),
        "f16_max": b.max_pool2d(h, window_dimensions=[2, 2]),
        "f16_avg": b.average_pool2d(h, window_dimensions=[2, 2], padding=[1, 1, 1, 1]),
        "f16_l2": b.l2_pool2d(h, window_dimensions=[2, 2]),
    }


# ---------------------------------------------------------------- resample2d


@case
def resample_modes(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[1, 2, 5, 7], dtype="f32")
    out: dict[str, Operand] = {}
    for name, mode in (("nearest", "nearest-neighbor"), ("linear", "linear")):
        out[f"{name}_up"] = b.resample2d(x, mode=mode, scales=[2.0, 1.5])
        out[f"{name}_down"] = b.resample2d(x, mode=mode, sizes=[3, 2])
        out[f"{name}_odd"] = b.resample2d(x, mode=mode, sizes=[9, 4])
    out["default"] = b.resample2d(x, scales=[0.6, 3.0])
    out["identity"] = b.resample2d(x)
    return out


@case
def resample_runtime_sizes(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[1, 2, None, None], dtype="f32")
    image = b.input("image", shape=[1, None, None, 3], dtype="u8")
    s = b.input("s", shape=[2], dtype="i32")
    sizes = b.add(b.abs(s), b.constant([1, 1], dtype="i32"))  # 1 to 6
    return {
        "linear": b.resample2d(x, mode="linear", sizes=sizes),
        "nearest": b.resample2d(x, sizes=b.cast(sizes, "i64")),
        "nhwc_u8": b.resample2d(image, mode="linear", sizes=sizes, axes=[1, 2]),
        "swapped": b.resample2d(x, mode="linear", sizes=sizes, axes=[3, 2]),
    }


@case
def grid_sample_modes(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[2, 3, 4, 5], dtype="f32")
    grid = b.input("grid", shape=[2, 3, 6, 2], dtype="f32")  # reaches outside [-1, 1]
    half = b.input("half", shape=[1, 1, 3, 3], dtype="f16")
    hgrid = b.input("hgrid", shape=[1, 2, 2, 2], dtype="f16")
    return {
        "linear": b.grid_sample(x, grid),
        "linear_border_corners": b.grid_sample(x, grid, padding_mode="border", align_corners=True),
        "cubic_border_corners": b.grid_sample(
            x, grid, mode="cubic", padding_mode="border", align_corners=True
        ),
        "cubic": b.grid_sample(x, grid, mode="cubic"),
        "nearest": b.grid_sample(x, grid, mode="nearest-neighbor", padding_mode="border"),
        "f16": b.grid_sample(half, hgrid, padding_mode="border"),
    }


@case
def resample_nhwc_axes(b: GraphBuilder) -> dict[str, Operand]:
    image = b.input("image", shape=[1, 6, 5, 3], dtype="f32")
    other = b.input("other", shape=[4, 3, 5, 2], dtype="f32")
    return {
        "nhwc": b.resample2d(image, mode="linear", sizes=[11, 8], axes=[1, 2]),
        "nearest": b.resample2d(image, scales=[0.5, 2.0], axes=[1, 2]),
        "outer": b.resample2d(other, mode="linear", sizes=[3, 2], axes=[0, 2]),
        "reversed": b.resample2d(other, mode="linear", sizes=[7, 6], axes=[3, 1]),
    }


@case
def resample_dynamic(b: GraphBuilder) -> dict[str, Operand]:
    # The OCR shape: an NHWC u8 image of any size to a fixed size.
    image = b.input("image", shape=[1, None, None, 3], dtype="u8")
    x = b.input("x", shape=[None, 2, None, None], dtype="f32")
    m = b.input("m", shape=[1, 2, None, 10], dtype="f32")
    scaled = b.resample2d(b.cast(image, "f32"), mode="linear", sizes=[8, 10], axes=[1, 2])
    return {
        "fixed": scaled,
        "scaled": b.resample2d(x, mode="linear", scales=[2.5, 1.7]),
        "nearest": b.resample2d(x, scales=[1.5, 0.7]),
        # 10 * float32(0.7) is a hair below 7: the static width is 6, as inferred.
        "mixed": b.resample2d(m, mode="linear", scales=[1.5, 0.7]),
    }


@case
def resample_integers_and_f16(b: GraphBuilder) -> dict[str, Operand]:
    u = b.input("u", shape=[1, 5, 7, 3], dtype="u8")
    k = b.input("k", shape=[1, 2, 4, 4], dtype="i32")
    h = b.input("h", shape=[1, 2, 3, 4], dtype="f16")
    small = b.cast(k, "int8")
    return {
        "u8_linear": b.resample2d(u, mode="linear", sizes=[8, 4], axes=[1, 2]),
        "u8_nearest": b.resample2d(u, sizes=[8, 4], axes=[1, 2]),
        "i8_linear": b.cast(b.resample2d(small, mode="linear", scales=[1.5, 1.5]), "int32"),
        "f16_linear": b.resample2d(h, mode="linear", sizes=[5, 6]),
    }


# ---------------------------------------------------------------- normalization


@case
def batch_norm_options(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[2, 3, 4, 2], dtype="f32")
    v = b.input("v", shape=[3], dtype="f32")
    mean = b.constant([0.1, -0.2, 0.3], dtype="f32")
    variance = b.abs(v) + 0.5
    scale = b.constant([1.5, 0.5, -1.0], dtype="f32")
    bias = b.constant([0.0, 1.0, -2.0], dtype="f32")
    last_mean = b.constant(ramp(2), dtype="f32")
    last_var = b.constant([0.5, 2.0], dtype="f32")
    return {
        "full": b.batch_normalization(x, mean, variance, scale=scale, bias=bias),
        "bare": b.batch_normalization(x, mean, variance, epsilon=0.1),
        "scale_only": b.batch_normalization(x, mean, variance, scale=scale),
        "last_axis": b.batch_normalization(x, last_mean, last_var, axis=3, bias=last_var),
        "first_axis": b.batch_normalization(x, last_mean, last_var, axis=0),
    }


@case
def batch_norm_ranks_dynamic_f16(b: GraphBuilder) -> dict[str, Operand]:
    m = b.input("m", shape=[4, 3], dtype="f32")
    d = b.input("d", shape=[None, None, 5], dtype="f32")
    stats = b.input("stats", shape=[None], dtype="f32")
    h = b.input("h", shape=[1, 2, 3], dtype="f16")
    mean = b.constant([0.5, 0.0, -0.5], dtype="f32")
    var = b.constant([1.0, 2.0, 0.25], dtype="f32")
    half_var = b.constant([1.0, 2.0], dtype="f16")
    return {
        "matrix": b.batch_normalization(m, mean, var),
        "dynamic": b.batch_normalization(d, stats, b.abs(stats) + 1.0),
        "half": b.batch_normalization(h, half_var, half_var, scale=half_var, bias=half_var),
    }


@case
def instance_norm_options(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[2, 3, 4, 5], dtype="f32")
    n = b.input("n", shape=[2, 4, 5, 3], dtype="f32")
    d = b.input("d", shape=[None, None, None, 4], dtype="f32")
    scale = b.constant([1.5, 0.5, -1.0], dtype="f32")
    bias = b.constant([0.0, 1.0, -2.0], dtype="f32")
    return {
        "full": b.instance_normalization(x, scale=scale, bias=bias),
        "bare": b.instance_normalization(x, epsilon=0.01),
        "nhwc": b.instance_normalization(n, scale=scale, bias=bias, layout="nhwc"),
        "nhwc_bare": b.instance_normalization(n, layout="nhwc"),
        "dynamic_nchw": b.instance_normalization(b.transpose(d, permutation=[0, 3, 1, 2])),
        "dynamic": b.instance_normalization(
            d, layout="nhwc", bias=b.constant(ramp(4), dtype="f32")
        ),
    }


@case
def instance_norm_f16(b: GraphBuilder) -> dict[str, Operand]:
    h = b.input("h", shape=[1, 2, 3, 4], dtype="f16")
    return {"y": b.instance_normalization(h, scale=b.constant([2.0, 0.5], dtype="f16"))}


@case
def layer_norm_axes(b: GraphBuilder) -> dict[str, Operand]:
    x = b.input("x", shape=[2, 3, 4], dtype="f32")
    s34 = b.constant(ramp(12, 0.2, 1.0), shape=[3, 4], dtype="f32")
    s4 = b.constant(ramp(4, 0.3, 1.0), dtype="f32")
    s3 = b.constant(ramp(3, 0.3, 1.0), dtype="f32")
    s43 = b.constant(ramp(12, 0.2, 1.0), shape=[4, 3], dtype="f32")
    s24 = b.constant(ramp(8, 0.2, 1.0), shape=[2, 4], dtype="f32")
    return {
        "default": b.layer_normalization(x, scale=s34, bias=s34),
        "bare": b.layer_normalization(x),
        "last": b.layer_normalization(x, axes=[2], scale=s4, epsilon=0.001),
        "bias_only": b.layer_normalization(x, axes=[2], bias=s4),
        "middle": b.layer_normalization(x, axes=[1], scale=s3, bias=s3),
        "reversed": b.layer_normalization(x, axes=[2, 1], scale=s43, bias=s43),
        "outer": b.layer_normalization(x, axes=[0, 2], scale=s24),
        "none": b.layer_normalization(x, axes=[], bias=b.constant(0.5, dtype="f32")),
    }


@case
def layer_norm_dynamic_f16(b: GraphBuilder) -> dict[str, Operand]:
    d = b.input("d", shape=[None, None, 4], dtype="f32")
    h = b.input("h", shape=[2, 5], dtype="f16")
    return {
        "dynamic": b.layer_normalization(d),
        "dynamic_last": b.layer_normalization(
            d, axes=[2], scale=b.constant(ramp(4, 0.3, 1.0), dtype="f32")
        ),
        "half": b.layer_normalization(h, bias=b.constant(ramp(5), dtype="f16")),
    }
