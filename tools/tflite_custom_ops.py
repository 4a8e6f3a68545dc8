"""Translations of TFLite custom operators that OpenVINO has none for.

``tools/convert.py`` gives a TFLite model's custom operators these
translations by default, and any an app passes with ``custom_ops=``. A
translation is ``translate(context, options) -> [output]``: ``context`` is
OpenVINO's ``NodeContext`` for one occurrence of the operator (its inputs,
already dequantized: ``context.get_input(i)``), ``options`` that
occurrence's ``custom_options`` bytes exactly as the model stores them, and
the result lists the operator's outputs built with ``openvino.opset13``.

Example (an app's own, for ``convert(..., custom_ops={"MyScale": my_scale})``)::

    import struct
    import openvino.opset13 as ops

    def my_scale(context, options):
        (factor,) = struct.unpack("<f", options)
        return [ops.multiply(context.get_input(0), ops.constant(factor)).output(0)]
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

#: A custom operator's translation: (NodeContext, custom_options) -> outputs.
Translation = Callable[[Any, bytes], list[Any]]

# TfLitePadding: the padding enum of TfLiteTransposeConvParams.
_PADDING_SAME, _PADDING_VALID = 1, 2


def convolution_2d_transpose_bias(context: Any, options: bytes) -> list[Any]:
    """MediaPipe's ``Convolution2DTransposeBias`` (selfie segmentation): TFLite's
    TRANSPOSE_CONV with a bias added, on NHWC input, OHWI weights and a bias
    per output channel. Its options are a raw ``TfLiteTransposeConvParams``
    struct: padding, stride width and stride height, three little-endian int32.
    """
    import openvino.opset13 as ops

    if len(options) < 12:
        raise ValueError(
            f"Convolution2DTransposeBias: {len(options)} bytes of options, not the 12 of "
            "TfLiteTransposeConvParams (padding, stride_width, stride_height)"
        )
    padding, stride_w, stride_h = struct.unpack_from("<3i", options)
    if padding not in (_PADDING_SAME, _PADDING_VALID) or stride_w < 1 or stride_h < 1:
        raise ValueError(
            f"Convolution2DTransposeBias: options padding={padding}, strides "
            f"{stride_w}x{stride_h} are not a transposed convolution's"
        )
    x, weights, bias = (context.get_input(i) for i in range(3))
    kernel = weights.get_partial_shape()
    source = x.get_partial_shape()
    if kernel.is_dynamic or source[1].is_dynamic or source[2].is_dynamic:
        raise ValueError("Convolution2DTransposeBias: the input and kernel sizes must be static")
    k_h, k_w = kernel[1].get_length(), kernel[2].get_length()
    in_h, in_w = source[1].get_length(), source[2].get_length()
    begin, end, extra = [], [], []
    for size, k, s in ((in_h, k_h, stride_h), (in_w, k_w, stride_w)):
        # TFLite's output size: size * stride (SAME) or (size - 1) * stride + k (VALID);
        # the difference from the full transposed convolution is cropped, half in front.
        out = size * s if padding == _PADDING_SAME else (size - 1) * s + k
        total = max((size - 1) * s + k - out, 0)
        begin.append(total // 2)
        end.append(total - total // 2)
        extra.append(max(out - ((size - 1) * s + k - total), 0))
    nchw = ops.transpose(x, ops.constant([0, 3, 1, 2]))
    iohw = ops.transpose(weights, ops.constant([3, 0, 1, 2]))  # OHWI -> IOHW
    y = ops.convolution_backprop_data(
        nchw, iohw, strides=[stride_h, stride_w], pads_begin=begin, pads_end=end,
        dilations=[1, 1], auto_pad="explicit", output_padding=extra,
    )  # fmt: skip
    nhwc = ops.transpose(y, ops.constant([0, 2, 3, 1]))
    return [ops.add(nhwc, bias).output(0)]


#: The translations ``convert`` gives TFLite models unless told otherwise.
BUILT_IN: dict[str, Translation] = {
    "Convolution2DTransposeBias": convolution_2d_transpose_bias,
}
