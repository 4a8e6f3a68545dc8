"""The OCR pipeline's array math, written as GraphBuilder graphs the host runs.

Every graph has dynamic sizes, so each is compiled once per component and
serves every image, box and batch:

- ``detector_input`` / ``detector_output`` are spliced into the detection
  model (``Model.load(..., preprocess=, postprocess=)``): the decoded RGB
  image goes in with the size to resize it to; the probability map and the
  dilated text mask come out.
- ``crop_graph`` cuts every detected box out of the image with a perspective
  warp (bicubic, edge pixels repeated: ``cv2.warpPerspective`` with
  ``INTER_CUBIC`` and ``BORDER_REPLICATE``, as rapidocr does).
- ``line_input`` is spliced into the direction classifier and the recogniser:
  it resizes a batch of crops to height 48 (bilinear, as ``cv2.resize``),
  optionally turned by 180 degrees, normalises and pads them.
- ``best_characters`` is spliced behind the recogniser: the best class and its
  probability at each step, so 6,625 probabilities per step never cross.

The models take BGR images (rapidocr feeds OpenCV's channel order); images
stay RGB in the guest and the graphs reverse the channels.
"""

from __future__ import annotations

from collections.abc import Callable

from wasinn import GraphBuilder, Operand

#: rapidocr's detector settings: probability threshold of the text mask.
MASK_THRESHOLD = 0.3
#: Height of the classifier's and recogniser's input lines.
LINE_HEIGHT = 48
#: Values per line in ``line_input``'s ``lines`` input, in this order.
LINE_PARAMS = ("x_scale", "x_offset", "x_last", "y_scale", "y_offset", "y_last",
               "y_start", "width", "x_norm", "y_norm")  # fmt: skip


def _bgr_normalized(b: GraphBuilder, pixels: Operand) -> Operand:
    """u8-valued pixels (NCHW, RGB) as the models want them: BGR, (v / 255 - 0.5) / 0.5."""
    bgr = b.gather(pixels, b.constant([2, 1, 0], dtype="i32"), axis=1)
    return b.sub(b.mul(bgr, b.constant(2.0 / 255.0)), b.constant(1.0))


def _nchw(b: GraphBuilder, image: Operand) -> Operand:
    """A u8 [H, W, 3] image as f32 [1, 3, H, W]."""
    batch = b.expand(image, [1, None, None, 3])
    return b.transpose(b.cast(batch, "f32"), permutation=[0, 3, 1, 2])


def _to_u8(b: GraphBuilder, values: Operand) -> Operand:
    """f32 samples of u8 pixels rounded to the nearest u8 (halves up), as OpenCV stores them."""
    rounded = b.floor(b.add(values, b.constant(0.5)))
    return b.cast(b.clamp(rounded, min_value=0.0, max_value=255.0), "u8")


def detector_input(b: GraphBuilder) -> dict[str, Operand]:
    """Inputs ``image`` (u8 [H, W, 3], RGB) and ``size`` (i32 [2]: the height and
    width to resize to, multiples of 32); feeds the detector's ``x``.

    The resize rounds to u8 before normalising, as rapidocr's ``cv2.resize``
    of the u8 image does (OpenCV's fixed-point rounding can be 1 off).
    """
    image = b.input("image", shape=[None, None, 3], dtype="u8")
    size = b.input("size", shape=[2], dtype="i32")
    batch = b.expand(image, [1, None, None, 3])
    resized = b.resample2d(batch, mode="linear", sizes=size, axes=[1, 2])
    nchw = b.transpose(b.cast(resized, "f32"), permutation=[0, 3, 1, 2])
    return {"x": _bgr_normalized(b, nchw)}


def detector_output(b: GraphBuilder, outputs: dict[str, Operand]) -> dict[str, Operand]:
    """The probability map ``prob`` (f32 [h * w]) and ``mask`` (u8 [h * w], 0 or
    1): ``prob > 0.3`` dilated by a 2x2 window reaching up and left, as
    rapidocr's ``cv2.dilate`` with a 2x2 kernel (whose anchor is the kernel's
    lower right). Both row-major, h and w being the detector input's size."""
    (pred,) = outputs.values()
    above = b.cast(b.greater(pred, b.constant(MASK_THRESHOLD)), "u8")
    dilated = b.max_pool2d(above, window_dimensions=[2, 2], padding=[1, 0, 1, 0])
    return {"prob": b.reshape(pred, [None]), "mask": b.reshape(dilated, [None])}


def crop_graph(b: GraphBuilder) -> dict[str, Operand]:
    """Inputs ``image`` (u8 [H, W, 3]), ``warps`` (f32 [N, 3, 3]), ``xs`` (f32
    [w]: 0, 1, ..., w - 1) and ``ys`` (f32 [h]); output ``crops``: u8 [N * h *
    w, 3], box k's crop from row k * h * w on, row-major [h, w, 3].

    ``warps[k]`` maps an output pixel (x, y, 1) to the image position to sample,
    already scaled so that -1 and 1 are the centres of the first and last
    pixels (``grid_sample``'s ``align_corners=True``). Crops smaller than
    (h, w) fill their top-left corner; the rest is sampled but not used. The
    grid is one column of N * h * w positions, so one image serves every box.
    """
    image = b.input("image", shape=[None, None, 3], dtype="u8")
    warps = b.input("warps", shape=[None, 3, 3], dtype="f32")
    xs = b.reshape(b.input("xs", shape=[None], dtype="f32"), [1, 1, None])
    ys = b.reshape(b.input("ys", shape=[None], dtype="f32"), [1, None, 1])

    def entry(row: int, col: int) -> Operand:  # [N, 1, 1]
        picked = b.gather(warps, b.constant([row], dtype="i32"), axis=1)
        return b.gather(picked, b.constant([col], dtype="i32"), axis=2)

    def projected(row: int) -> Operand:  # [N, h, w]
        return b.add(b.add(b.mul(entry(row, 0), xs), b.mul(entry(row, 1), ys)), entry(row, 2))

    depth = projected(2)
    gx = b.reshape(b.div(projected(0), depth), [1, None, 1, 1])
    gy = b.reshape(b.div(projected(1), depth), [1, None, 1, 1])
    grid = b.concat([gx, gy], axis=3)
    sampled = b.grid_sample(
        _nchw(b, image), grid, mode="cubic", padding_mode="border", align_corners=True
    )
    pixels = b.transpose(_to_u8(b, sampled), permutation=[0, 2, 3, 1])  # [1, L, 1, 3]
    return {"crops": b.reshape(pixels, [None, 3])}


def line_input(b: GraphBuilder) -> dict[str, Operand]:
    """Inputs ``crops`` (u8 [H, W, 3]: the batch's crops stacked top to bottom),
    ``lines`` (f32 [M, 10], one row of ``LINE_PARAMS`` per line) and ``xs`` (f32
    [width]: 0, 1, ..., width - 1); feeds the model's ``x`` (f32 [M, 3, 48, width]).

    Line m samples its crop at x = min(max(x_scale * column + x_offset, 0),
    x_last), likewise in y, plus y_start (where its crop starts in ``crops``):
    ``cv2.resize``'s bilinear sampling, or the crop turned by 180 degrees when
    the scales are negative. x_norm and y_norm scale pixel positions to
    ``grid_sample``'s [-1, 1]. Samples round to u8, as ``cv2.resize`` of a u8
    image does; columns from ``width`` on are zero after normalising
    (rapidocr's padding).
    """
    crops = b.input("crops", shape=[None, None, 3], dtype="u8")
    lines = b.input("lines", shape=[None, len(LINE_PARAMS)], dtype="f32")
    # Positions are [M, 48, width, 1] from the start, so x and y concatenate into a grid.
    columns = b.reshape(b.input("xs", shape=[None], dtype="f32"), [1, 1, None, 1])
    rows = b.constant([float(r) for r in range(LINE_HEIGHT)], shape=[1, LINE_HEIGHT, 1, 1])

    def param(name: str) -> Operand:  # [M, 1, 1, 1]
        index = b.constant([LINE_PARAMS.index(name)], dtype="i32")
        return b.reshape(b.gather(lines, index, axis=1), [None, 1, 1, 1])

    def position(along: Operand, axis: str) -> Operand:
        raw = b.add(b.mul(param(f"{axis}_scale"), along), param(f"{axis}_offset"))
        return b.max(b.min(raw, param(f"{axis}_last")), b.constant(0.0))

    px = position(columns, "x")  # [M, 1, width, 1]
    py = b.add(position(rows, "y"), param("y_start"))  # [M, 48, 1, 1]
    gx = b.sub(b.mul(px, param("x_norm")), b.constant(1.0))
    gy = b.sub(b.mul(py, param("y_norm")), b.constant(1.0))
    # x + 0 * y (and y + 0 * x) spread both to [M, 48, width, 1].
    grid = b.concat(
        [b.add(gx, b.mul(gy, b.constant(0.0))), b.add(gy, b.mul(gx, b.constant(0.0)))], axis=3
    )
    # One copy of the stacked crops per line: grid_sample pairs image m with grid m.
    copies = b.add(_nchw(b, crops), b.mul(param("width"), b.constant(0.0)))
    sampled = b.grid_sample(copies, grid, mode="linear", padding_mode="border", align_corners=True)
    pixels = b.cast(_to_u8(b, sampled), "f32")  # [M, 3, 48, width]
    inside = b.cast(b.lesser(columns, param("width")), "f32")  # [M, 1, width, 1]
    mask = b.transpose(inside, permutation=[0, 3, 1, 2])  # [M, 1, 1, width]
    return {"x": b.mul(_bgr_normalized(b, pixels), mask)}


def best_characters(b: GraphBuilder, outputs: dict[str, Operand]) -> dict[str, Operand]:
    """The recogniser's best class (``index``, i32 [M, T]) and its probability
    (``prob``, f32 [M, T]) at each step, for CTC decoding."""
    (probs,) = outputs.values()
    index = b.arg_max(probs, 2, output_data_type="i32")
    return {"index": index, "prob": b.reduce_max(probs, axes=[2])}


def without_alpha(channels: int) -> Callable[[GraphBuilder], dict[str, Operand]]:
    """A graph taking ``image`` (u8 [H, W, channels], gray+alpha for 2, RGBA
    for 4) to ``rgb`` (u8 [H, W, 3]) as rapidocr's image loader does.

    Pixels whose alpha is 0 count as black. Gray+alpha then adds 255 - alpha
    (saturating): a white background. RGBA does that only when every pixel
    is black; otherwise it returns the inverted colours (255 - value), which
    is rapidocr's rule (dark text on a transparent background becomes light
    text on white).
    """

    def graph(b: GraphBuilder) -> dict[str, Operand]:
        image = b.cast(b.input("image", shape=[None, None, channels], dtype="u8"), "f32")
        index = b.constant(list(range(channels - 1)), dtype="i32")
        values = b.gather(image, index, axis=2)  # [H, W, channels - 1]
        alpha = b.gather(image, b.constant([channels - 1], dtype="i32"), axis=2)
        seen = b.mul(values, b.cast(b.greater(alpha, b.constant(0.0)), "f32"))
        on_white = b.min(b.add(seen, b.sub(b.constant(255.0), alpha)), b.constant(255.0))
        if channels == 2:
            rgb = b.gather(on_white, b.constant([0, 0, 0], dtype="i32"), axis=2)
        else:
            dark = b.lesser_or_equal(b.reduce_mean(seen, keep_dimensions=True), b.constant(0.0))
            rgb = b.where(dark, on_white, b.sub(b.constant(255.0), seen))
        return {"rgb": b.cast(rgb, "u8")}

    return graph
