"""One-call array helpers that the host computes: resize, normalize, softmax, argmax, topk, warps.

Pure Python inside a component is slow at array work (resizing a 1920x1080
photo to 736x736 and normalising it takes over a second); the host's engine
does it in about 15 milliseconds. Each helper
here takes a ``Tensor`` and returns ``Tensor`` objects, and does its work
with a small ``GraphBuilder`` graph run on the host.

Graphs are compiled once per *signature* (the helper, its options, the
tensor's dtype and rank) with every dimension dynamic, so one compiled model
serves every size: the first call of a signature pays the compile (tens of
milliseconds), later calls only the run. For the image helpers, when one
exact shape keeps coming back (video frames, a fixed model input), its
``_STATIC_AFTER``-th call compiles a model for that shape alone, which
OpenVINO runs 10-40 % faster; softmax, argmax and topk stay on the dynamic
model, which ran as fast or faster (topk twice as fast). At most
``_CACHE_SIZE`` models are kept; the least recently used is released. Figures:
``bench/results/latest.md``, section "wasinn.ops".

Images are described by ``layout``: ``"hwc"`` (height, width, channels: what
image decoders give), ``"chw"``, or with a leading batch dimension
``"nhwc"`` / ``"nchw"``.

The host's limits apply: it computes f64 in f32 and i64 in 32 bits, so i64
values beyond 2**31 do not rank correctly in ``argmax`` and ``topk``.

Example::

    from wasinn import Tensor, ops

    image = Tensor(rgb, shape=(1080, 1920, 3), dtype="u8")
    small = ops.resize(image, (240, 320))                     # u8 [240, 320, 3]
    pixels = ops.resize_normalize(image, (736, 736), mean=[0.485, 0.456, 0.406],
                                  std=[0.229, 0.224, 0.225])  # f32 [3, 736, 736]
    probs = ops.softmax(logits)                               # along the last axis
    labels = ops.argmax(probs).tolist()                       # i32, one per row
    values, indices = ops.topk(probs, 5)                      # the 5 best of each row
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ._builder import GraphBuilder, load_graph
from ._errors import ValidationError
from ._graph import ranking
from ._graph.core import Operand, Shape
from ._graph.pooling import exact_nearest, resample_sampling
from ._model.cache import ModelCache
from ._model.model import Model
from ._tensor import Tensor

__all__ = [
    "argmax", "normalize", "resize", "resize_normalize", "softmax", "topk", "warp_affine",
    "warp_perspective",
]  # fmt: skip

# Compiled models kept (tiny graphs: the host holds little for each).
_CACHE_SIZE = 32
# Calls with one exact shape after which that shape gets a model of its own
# (for the helpers in _SPECIALIZED, whose static models run faster).
_STATIC_AFTER = 3
_SPECIALIZED = frozenset({"resize", "normalize", "resize_normalize"})
# Exact shapes counted at most; beyond it the counts start again.
_MAX_COUNTED = 1024

_LAYOUTS = ("hwc", "chw", "nhwc", "nchw")
_MODES = {
    "linear": "linear", "cubic": "cubic", "nearest-neighbor": "nearest-neighbor",
    "nearest": "nearest-neighbor",
}  # fmt: skip
_RESIZE_DTYPES = ("u8", "f16", "f32")
_FLOAT_DTYPES = ("f16", "bf16", "f32", "f64")
_INDEX_DTYPES = {"i32": "i32", "int32": "i32", "i64": "i64", "int64": "i64"}
_NORMALIZED_DTYPES = ("f32", "f16")
# topk sorts by keys up to k * k in int32.
_MAX_K = 46340

_Make = Callable[[GraphBuilder, Operand], dict[str, Operand]]

_models = ModelCache(_CACHE_SIZE)
_uses: dict[tuple[Any, ...], int] = {}


# ---------------------------------------------------------------- public helpers


def resize(
    image: Any,
    size: Sequence[int],
    *,
    mode: str = "linear",
    layout: str = "hwc",
    coordinate_mode: str = "half_pixel",
    nearest_mode: str | None = None,
) -> Tensor:
    """The image resized to ``size`` = (height, width), same dtype and layout.

    ``mode="linear"`` interpolates bilinearly between pixel centres (ONNX
    ``half_pixel``, no antialiasing): OpenCV's ``cv2.resize`` with
    ``INTER_LINEAR``, torch's ``interpolate(mode="bilinear",
    align_corners=False)``; not Pillow's ``BILINEAR``, which also smooths
    when shrinking. ``"nearest-neighbor"`` (or ``"nearest"``) takes the pixel
    whose centre is nearest, the lower one on a tie (WebNN's rule): halving
    takes pixels 0, 2, 4, ... where Pillow's ``NEAREST`` and OpenCV's
    ``INTER_NEAREST_EXACT`` take 1, 3, 5, ... (they agree when there is no
    tie). u8 images are interpolated in f32 and rounded to nearest, halves
    up (OpenCV's fixed-point arithmetic can be 1 off from that). Takes u8,
    f16 and f32; graphs are those of ``GraphBuilder.resample2d``.

    ``mode="cubic"`` interpolates bicubically (a = -0.75): OpenCV's
    ``INTER_CUBIC`` (u8 within 1, saturated as OpenCV does), torch's
    ``"bicubic"``.

    ``coordinate_mode`` and ``nearest_mode`` choose where pixels are sampled
    and how nearest-neighbor rounds, as in ``GraphBuilder.resample2d``:
    ``coordinate_mode="align_corners"`` is torch's ``align_corners=True``;
    ``mode="nearest", coordinate_mode="asymmetric", nearest_mode="floor"`` is
    OpenCV's ``INTER_NEAREST`` and torch's ``"nearest"``;
    ``nearest_mode="round_prefer_ceil"`` is torch's ``"nearest-exact"``.
    Nearest-neighbor outside WebNN's own pair picks its pixels exactly, which
    needs static sizes: such a resize compiles a model for the image's shape
    on its first call, not after a few.

    Example::

        thumb = ops.resize(Tensor(rgb, shape=(480, 640, 3), dtype="u8"), (240, 320))
        thumb.shape                 # (240, 320, 3)
        mask = ops.resize(probs, (512, 512), layout="nchw", coordinate_mode="align_corners")
    """
    op = "ops.resize"
    x, x4, last, (height, width), how = _resize_args(op, image, size, mode, layout)
    sampling = resample_sampling(op, how, coordinate_mode, nearest_mode)
    coordinates = str(sampling["coordinate_transformation_mode"])
    rounding = str(sampling["nearest_mode"]) if "nearest_mode" in sampling else None
    axes = [1, 2] if last else [2, 3]

    def make(b: GraphBuilder, v: Operand) -> dict[str, Operand]:
        y = b.resample2d(v, mode=how, sizes=[height, width], axes=axes,
                         coordinate_mode=coordinates, nearest_mode=rounding)  # fmt: skip
        return {"y": y}

    # Exact nearest-neighbor indices need static sizes (see resample2d): such
    # resizes get a model for the image's shape from the first call.
    exact = exact_nearest(sampling)
    key = ("resize", how, last, height, width, coordinates, rounding)
    y = _compute(key, x4, make, static=exact)["y"]
    return y if x.ndim == 4 else y.reshape(y.shape[1:])


def normalize(
    image: Any,
    mean: float | Sequence[float],
    std: float | Sequence[float],
    *,
    scale: float | None = None,
    layout: str = "hwc",
    out_layout: str = "chw",
    dtype: str = "f32",
) -> Tensor:
    """``(image * scale - mean) / std`` per channel, as ``dtype`` in ``out_layout``.

    The usual last step before a vision model (torchvision's ``ToTensor``
    + ``Normalize``, PaddleOCR's ``NormalizeImage``): ``mean`` and ``std``
    are one number or one per channel, in the units after scaling;
    ``scale`` defaults to 1/255 for u8 images (0-255 becomes 0-1) and to 1
    for others. Computed in f32 as ``image * (scale / std) - mean / std``,
    which agrees with the formula to a few units in the last place; ``dtype``
    is ``"f32"`` or ``"f16"``. A 3-D ``layout`` may become a 4-D
    ``out_layout`` (a batch of one) and back, so ``"hwc"`` to ``"nchw"``
    gives a model's input directly.

    Example::

        pixels = ops.normalize(image, mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
        pixels.shape, pixels.dtype  # ((3, 480, 640), 'f32') for a [480, 640, 3] u8 image
    """
    op = "ops.normalize"
    x = _tensor(op, image, "image")
    x4, last = _image(op, x, layout)
    affine = _affine(op, x, x4, last, mean, std, scale)
    out_last, squeeze = _out_layout(op, x4, out_layout)
    out_dtype = _out_dtype(op, dtype)

    def make(b: GraphBuilder, v: Operand) -> dict[str, Operand]:
        return {"y": _normalized(b, v, last, affine, out_last, out_dtype)}

    key = ("normalize", x.dtype, last, affine, out_last, out_dtype)
    y = _compute(key, x4, make)["y"]
    return y.reshape(y.shape[1:]) if squeeze else y


def resize_normalize(
    image: Any,
    size: Sequence[int],
    mean: float | Sequence[float],
    std: float | Sequence[float],
    *,
    mode: str = "linear",
    scale: float | None = None,
    layout: str = "hwc",
    out_layout: str = "chw",
    dtype: str = "f32",
) -> Tensor:
    """``normalize(resize(image, size, ...), mean, std, ...)`` in one host call.

    The common pre-processing of a vision model; the resized image never
    comes back to the guest. The result equals the two calls' (u8 images
    are rounded after resizing, as ``resize`` does).

    Example::

        pixels = ops.resize_normalize(image, (736, 736), mean=[0.485, 0.456, 0.406],
                                      std=[0.229, 0.224, 0.225], out_layout="nchw")
        pixels.shape                # (1, 3, 736, 736)
    """
    op = "ops.resize_normalize"
    x, x4, last, (height, width), how = _resize_args(op, image, size, mode, layout)
    affine = _affine(op, x, x4, last, mean, std, scale)
    out_last, squeeze = _out_layout(op, x4, out_layout)
    out_dtype = _out_dtype(op, dtype)
    axes = [1, 2] if last else [2, 3]

    def make(b: GraphBuilder, v: Operand) -> dict[str, Operand]:
        small = b.resample2d(v, mode=how, sizes=[height, width], axes=axes)
        return {"y": _normalized(b, small, last, affine, out_last, out_dtype)}

    key = ("resize_normalize", how, height, width, x.dtype, last, affine, out_last, out_dtype)
    y = _compute(key, x4, make)["y"]
    return y.reshape(y.shape[1:]) if squeeze else y


def softmax(t: Any, axis: int = -1) -> Tensor:
    """``exp(t) / sum(exp(t))`` along ``axis`` (default the last), same dtype.

    Takes f16, bf16, f32 and f64 (the host computes f64 in f32).

    Example::

        probs = ops.softmax(Tensor([[1.0, 2.0, 3.0]]))
        [round(p, 3) for p in probs.tolist()[0]]   # [0.09, 0.245, 0.665]
    """
    op = "ops.softmax"
    x = _tensor(op, t, "tensor")
    if x.dtype not in _FLOAT_DTYPES:
        raise ValidationError(
            f"{op}: the tensor is {x.dtype}, but softmax takes {', '.join(_FLOAT_DTYPES)}"
        )
    _not_empty(op, x)
    where = _axis(op, axis, x)

    def make(b: GraphBuilder, v: Operand) -> dict[str, Operand]:
        return {"y": b.softmax(v, axis=where)}

    return _compute(("softmax", where), x, make)["y"]


def argmax(
    t: Any, axis: int | None = -1, *, keepdims: bool = False, index_dtype: str = "i32"
) -> Tensor:
    """The index of the largest value along ``axis`` (default the last), as a ``Tensor``.

    Like ``Tensor.argmax(axis)``, ties go to the first index and
    ``axis=None`` looks at the flattened tensor; unlike it, the default axis
    is the last one (one index per row: the class of each item of a batch),
    the result is a ``Tensor`` of ``index_dtype`` (``"i32"`` or ``"i64"``),
    ``keepdims=True`` keeps the axis with size 1, and NaN is skipped by the
    host where ``Tensor.argmax`` (like numpy) picks the first NaN.

    Example::

        labels = ops.argmax(logits)          # [batch, classes] -> i32 [batch]
        labels.tolist()                      # [3, 0, 7, ...]
    """
    op = "ops.argmax"
    x = _tensor(op, t, "tensor")
    out_type = _index_dtype(op, index_dtype)
    keep = _flag(op, "keepdims", keepdims)
    _not_empty(op, x)
    ndim = x.ndim
    if axis is None:
        x, where = x.reshape(x.size), 0
    else:
        where = _axis(op, axis, x)
    # The host cannot return a scalar: a 1-D input keeps its axis there.
    keep_there = keep or x.ndim == 1

    def make(b: GraphBuilder, v: Operand) -> dict[str, Operand]:
        return {"i": b.arg_max(v, where, keep_dimensions=keep_there, output_data_type=out_type)}

    index = _compute(("argmax", where, keep_there, out_type), x, make)["i"]
    if axis is None:
        return index.reshape((1,) * ndim if keep else ())
    return index if keep_there == keep else index.reshape(())


def topk(
    t: Any, k: int, axis: int | None = -1, *, index_dtype: str = "i32"
) -> tuple[Tensor, Tensor]:
    """The ``k`` largest values along ``axis`` and their indices, largest first.

    Returns ``(values, indices)``: the tensor's shape with ``axis`` cut to
    ``k``; values keep the dtype, indices are ``index_dtype`` (``"i32"`` or
    ``"i64"``). As ``Tensor.topk``: ties keep the lower index first, a ``k``
    larger than the axis gives the whole axis, NaN values are not ordered
    (leave them out first), and ``axis=None`` ranks the flattened tensor;
    unlike it, the default axis is the last (the best ``k`` of each row) and
    the result is two tensors, not ``(index, value)`` pairs.

    ONNX TopK gives the values; OpenVINO does not keep equal values in index
    order, so the indices come from further TopKs over keys that are unique
    by construction (see ``_graph.ranking.stable_top_k``). ``k`` may be at most 46340.

    Example::

        values, indices = ops.topk(probs, 5)         # probs: [batch, classes]
        indices.tolist()[0]                          # the 5 best classes of item 0
    """
    op = "ops.topk"
    x = _tensor(op, t, "tensor")
    out_type = _index_dtype(op, index_dtype)
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValidationError(f"{op}: k must be a whole number >= 0, not {k!r}")
    _not_empty(op, x)
    if axis is None:
        x, where = x.reshape(x.size), 0
    else:
        where = _axis(op, axis, x)
    k = min(k, x.shape[where])
    if k > _MAX_K:
        raise ValidationError(
            f"{op}: k is at most {_MAX_K} (its sorting keys, up to k * k, are int32), not {k}"
        )
    if k == 0:
        dims = x.shape[:where] + (0,) + x.shape[where + 1 :]
        return Tensor(b"", shape=dims, dtype=x.dtype), Tensor(b"", shape=dims, dtype=out_type)
    rank = x.ndim

    def make(b: GraphBuilder, v: Operand) -> dict[str, Operand]:
        moved = v
        perm = list(range(rank))
        if where != rank - 1:
            perm = perm[:where] + perm[where + 1 :] + [where]
            moved = b.transpose(v, permutation=perm)
        values, indices = ranking.stable_top_k(b, moved, k)
        if out_type != "i64":
            indices = b.cast(indices, out_type)
        if where != rank - 1:
            back = [perm.index(a) for a in range(rank)]
            values = b.transpose(values, permutation=back)
            indices = b.transpose(indices, permutation=back)
        return {"values": values, "indices": indices}

    out = _compute(("topk", k, where, out_type), x, make)
    return out["values"], out["indices"]


def warp_affine(
    image: Any,
    matrix: Any,
    size: Sequence[int],
    *,
    mode: str = "linear",
    border: str = "constant",
    border_value: float = 0.0,
    layout: str = "hwc",
) -> Tensor:
    """The image moved by the 2x3 affine ``matrix``, into an image of ``size``
    = (height, width): OpenCV's ``cv2.warpAffine(image, matrix, (width, height))``.

    ``matrix`` maps source pixel positions to destination ones, as OpenCV's
    does (a nested list, an array or a Tensor of 2x3 numbers); each output
    pixel samples the source where the inverse matrix puts it. ``mode`` is
    ``"linear"`` (``INTER_LINEAR``), ``"cubic"`` (``INTER_CUBIC``, a = -0.75)
    or ``"nearest"``; ``border`` says what lies outside the image:
    ``"constant"`` (``border_value``, ``BORDER_CONSTANT``) or ``"replicate"``
    (the nearest edge pixel, ``BORDER_REPLICATE``). u8 results are rounded to
    nearest; OpenCV computes positions in fixed point (1/32 pixel), so on u8
    photos the two differ by at most 1. Takes u8, f16 and f32; the graph is
    ``GraphBuilder.grid_sample`` on a grid made from the matrix, compiled once
    per image shape and options (the matrix is an input, so any matrix reuses it).

    Example::

        turned = ops.warp_affine(image, [[0.87, -0.5, 60.0], [0.5, 0.87, -20.0]], (480, 640))
    """
    return _warp("ops.warp_affine", image, matrix, 2, size, mode, border, border_value, layout)


def warp_perspective(
    image: Any,
    matrix: Any,
    size: Sequence[int],
    *,
    mode: str = "linear",
    border: str = "constant",
    border_value: float = 0.0,
    layout: str = "hwc",
) -> Tensor:
    """The image through the 3x3 perspective ``matrix``, into an image of
    ``size`` = (height, width): OpenCV's ``cv2.warpPerspective(image, matrix,
    (width, height))``, e.g. to straighten a photographed page or a text box.
    Options as in ``warp_affine``; a destination pixel the inverse matrix
    sends to infinity samples the source at (0, 0), as OpenCV's does.

    Example::

        matrix = cv2.getPerspectiveTransform(corners, target)   # computed anywhere
        page = ops.warp_perspective(photo, matrix.tolist(), (800, 600), mode="cubic",
                                    border="replicate")
    """
    return _warp("ops.warp_perspective", image, matrix, 3, size, mode, border, border_value, layout)


# ---------------------------------------------------------------- graphs


def _normalized(
    b: GraphBuilder,
    v: Operand,
    last: bool,
    affine: tuple[tuple[float, ...], tuple[float, ...]],
    out_last: bool,
    out_dtype: str,
) -> Operand:
    """``v * a + c`` per channel in f32, transposed to the output layout, as ``out_dtype``."""
    y = b.cast(v, "f32") if v.dtype != "f32" else v
    gain, offset = affine
    shape = [len(gain)] if last else [len(gain), 1, 1]
    if any(g != 1.0 for g in gain):
        y = y * b.constant(list(gain), shape=shape, dtype="f32")
    if any(o != 0.0 for o in offset):
        y = y + b.constant(list(offset), shape=shape, dtype="f32")
    if last != out_last:
        y = b.transpose(y, permutation=[0, 2, 3, 1] if out_last else [0, 3, 1, 2])
    if out_dtype != "f32":
        y = b.cast(y, out_dtype)
    return y


# ---------------------------------------------------------------- compiling and caching


def _compute(
    key: tuple[Any, ...],
    x: Tensor,
    make: _Make,
    *,
    static: bool = False,
    extra: dict[str, Tensor] | None = None,
) -> dict[str, Tensor]:
    """Run the graph ``make`` builds for ``key`` on ``x`` (fed as ``"x"``).

    The first calls use a model whose dimensions are all dynamic, shared by
    every shape; for helpers in ``_SPECIALIZED`` the ``_STATIC_AFTER``-th call
    with one exact shape compiles one for that shape, which the host runs
    faster. ``static`` asks for the exact shape's model from the first call;
    ``extra`` are further inputs the graph declares itself (a matrix).
    """
    signature = (*key, x.dtype, x.ndim)
    exact = (*signature, x.shape)
    specialized = key[0] in _SPECIALIZED
    found = exact if specialized or static else signature
    model = _models.get(found)
    if model is None and static:
        model = _load(exact, x.shape, x.dtype, make)
    elif model is None and not specialized:
        model = _load(signature, (None,) * x.ndim, x.dtype, make)
    elif model is None:
        uses = _uses.get(exact, 0) + 1
        if uses >= _STATIC_AFTER:
            _uses.pop(exact, None)
            model = _load(exact, x.shape, x.dtype, make)
        else:
            if len(_uses) >= _MAX_COUNTED:
                _uses.clear()
            _uses[exact] = uses
            model = _models.get(signature)
            if model is None:
                model = _load(signature, (None,) * x.ndim, x.dtype, make)
    return model.run({"x": x, **(extra or {})})


def _load(key: tuple[Any, ...], shape: Shape, dtype: str, make: _Make) -> Model:
    b = GraphBuilder()
    return _models.put(key, load_graph(b, make(b, b.input("x", shape=shape, dtype=dtype))))


# ---------------------------------------------------------------- argument checks


def _resize_args(
    op: str, image: Any, size: Any, mode: Any, layout: Any
) -> tuple[Tensor, Tensor, bool, tuple[int, int], str]:
    """The checked arguments of a resizing helper: the image, its 4-D form,
    whether channels come last, the (height, width) wanted, the mode."""
    x, x4, last = _sampled_image(op, image, layout, "resize")
    return x, x4, last, _size(op, size), _mode(op, mode)


def _sampled_image(op: str, image: Any, layout: Any, verb: str) -> tuple[Tensor, Tensor, bool]:
    """An image a resampling helper takes (u8, f16 or f32; ``verb`` names the
    helper's work in the error), its 4-D form, and whether channels come last."""
    x = _tensor(op, image, "image")
    if x.dtype not in _RESIZE_DTYPES:
        raise ValidationError(
            f"{op}: the image is {x.dtype}, but {verb} takes {', '.join(_RESIZE_DTYPES)}"
        )
    x4, last = _image(op, x, layout)
    return x, x4, last


def _tensor(op: str, value: Any, role: str) -> Tensor:
    if isinstance(value, Tensor):
        return value
    try:
        return Tensor(value)
    except ValidationError as exc:
        raise ValidationError(f"{op}: the {role} is not a tensor ({exc})") from None


def _not_empty(op: str, x: Tensor) -> None:
    if x.size == 0:
        raise ValidationError(f"{op}: the tensor is empty (shape {list(x.shape)})")


def _axis(op: str, axis: Any, x: Tensor) -> int:
    n = x.ndim
    if isinstance(axis, bool) or not isinstance(axis, int) or not -n <= axis < n:
        span = f"from {-n} to {n - 1}" if n else "(none: the tensor is a scalar)"
        raise ValidationError(
            f"{op}: axis must be an integer {span} for shape {list(x.shape)}, not {axis!r}"
        )
    return axis % n


def _flag(op: str, name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(f"{op}: {name} must be True or False, not {value!r}")
    return value


def _index_dtype(op: str, value: Any) -> str:
    name = _INDEX_DTYPES.get(value) if isinstance(value, str) else None
    if name is None:
        raise ValidationError(f"{op}: index_dtype must be 'i32' or 'i64', not {value!r}")
    return name


def _image(op: str, x: Tensor, layout: Any) -> tuple[Tensor, bool]:
    """The image as a 4-D tensor (a batch of one for a 3-D layout), and
    whether its channels come last."""
    if layout not in _LAYOUTS:
        raise ValidationError(f"{op}: layout must be one of {', '.join(_LAYOUTS)}, not {layout!r}")
    if x.ndim != len(layout):
        raise ValidationError(
            f"{op}: layout {layout!r} needs a {len(layout)}-D image, but its shape is "
            f"{list(x.shape)}"
        )
    if x.size == 0:
        raise ValidationError(f"{op}: the image is empty (shape {list(x.shape)})")
    four = x if x.ndim == 4 else x.reshape((1, *x.shape))
    return four, layout.endswith("c")


def _out_layout(op: str, x4: Tensor, layout: Any) -> tuple[bool, bool]:
    """Whether the output's channels come last, and whether to drop the batch axis."""
    if layout not in _LAYOUTS:
        raise ValidationError(
            f"{op}: out_layout must be one of {', '.join(_LAYOUTS)}, not {layout!r}"
        )
    squeeze = len(layout) == 3
    if squeeze and x4.shape[0] != 1:
        raise ValidationError(
            f"{op}: out_layout {layout!r} has no batch axis, but the batch holds {x4.shape[0]} "
            f"images; use {'n' + layout!r}"
        )
    return layout.endswith("c"), squeeze


def _out_dtype(op: str, dtype: Any) -> str:
    name = {"float32": "f32", "float16": "f16"}.get(dtype, dtype)
    if name not in _NORMALIZED_DTYPES:
        raise ValidationError(f"{op}: dtype must be 'f32' or 'f16', not {dtype!r}")
    return str(name)


def _size(op: str, size: Any) -> tuple[int, int]:
    ok = isinstance(size, (list, tuple)) and len(size) == 2
    ok = ok and all(isinstance(d, int) and not isinstance(d, bool) and 0 < d < 2**31 for d in size)
    if not ok:
        raise ValidationError(
            f"{op}: size must be (height, width), two positive whole numbers, not {size!r}"
        )
    return size[0], size[1]


def _mode(op: str, mode: Any) -> str:
    how = _MODES.get(mode) if isinstance(mode, str) else None
    if how is None:
        raise ValidationError(
            f"{op}: mode must be 'linear', 'cubic' or 'nearest-neighbor' ('nearest'), not {mode!r}"
        )
    return how


def _numbers(op: str, name: str, value: Any, channels: int) -> tuple[float, ...]:
    """``value`` (a number or one per channel) as ``channels`` floats."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        values: list[Any] = [value] * channels
    elif isinstance(value, (list, tuple)) and len(value) == channels:
        values = list(value)
    else:
        raise ValidationError(
            f"{op}: {name} must be a number or {channels} numbers (one per channel), not {value!r}"
        )
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise ValidationError(f"{op}: {name} must hold numbers, not {value!r}")
    if not all(math.isfinite(v) for v in values):
        raise ValidationError(f"{op}: {name} must be finite, not {value!r}")
    return tuple(float(v) for v in values)


def _affine(
    op: str, x: Tensor, x4: Tensor, last: bool, mean: Any, std: Any, scale: Any
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Per channel, the gain ``scale / std`` and the offset ``-mean / std``."""
    channels = x4.shape[3] if last else x4.shape[1]
    means = _numbers(op, "mean", mean, channels)
    stds = _numbers(op, "std", std, channels)
    if any(s == 0 for s in stds):
        raise ValidationError(f"{op}: std must not be 0, not {std!r}")
    if scale is None:
        factor = 1 / 255 if x.dtype == "u8" else 1.0
    else:
        (factor,) = _numbers(op, "scale", scale, 1)
    gain = tuple(factor / s for s in stds)
    offset = tuple(-m / s for m, s in zip(means, stds, strict=True))
    return gain, offset


# ---------------------------------------------------------------- warping


_WARP_MODES = {"linear": "linear", "cubic": "cubic", "nearest": "nearest-neighbor",
               "nearest-neighbor": "nearest-neighbor"}  # fmt: skip
_WARP_BORDERS = {"constant": "zeros", "replicate": "border"}


def _warp(
    op: str,
    image: Any,
    matrix: Any,
    rows: int,
    size: Any,
    mode: Any,
    border: Any,
    border_value: Any,
    layout: Any,
) -> Tensor:
    x, x4, last = _sampled_image(op, image, layout, "warping")
    height, width = _size(op, size)
    how = _WARP_MODES.get(mode) if isinstance(mode, str) else None
    if how is None:
        raise ValidationError(f"{op}: mode must be 'linear', 'cubic' or 'nearest', not {mode!r}")
    padding = _WARP_BORDERS.get(border) if isinstance(border, str) else None
    if padding is None:
        raise ValidationError(f"{op}: border must be 'constant' or 'replicate', not {border!r}")
    value = _number(op, "border_value", border_value)
    if value and padding != "zeros":
        raise ValidationError(f"{op}: border_value applies to border='constant' only")
    inverse = _inverse(op, matrix, rows)
    n, c, in_h, in_w = (x4.shape[0], x4.shape[3], *x4.shape[1:3]) if last else x4.shape

    def make(b: GraphBuilder, v: Operand) -> dict[str, Operand]:
        grid = _grid(b, b.input("m", shape=[9], dtype="f32"), (height, width), (in_h, in_w), rows)
        if n > 1:
            grid = b.expand(grid, [n, height, width, 2])
        source = b.transpose(v, permutation=[0, 3, 1, 2]) if last else v
        source = source if source.dtype == "f32" else b.cast(source, "f32")
        # Zeros outside, shifted by the border value: the taps' weights sum to 1,
        # so what lies outside counts as border_value and the rest as itself.
        y = b.grid_sample(source - value if value else source, grid, mode=how,
                          padding_mode=padding, align_corners=False)  # fmt: skip
        y = y + value if value else y
        y = b.transpose(y, permutation=[0, 2, 3, 1]) if last else y
        if x.dtype == "u8":
            y = b.cast(b.clamp(b.floor(y + 0.5), min_value=0.0, max_value=255.0), "u8")
        elif x.dtype != "f32":
            y = b.cast(y, x.dtype)
        return {"y": y}

    key = ("warp", rows, how, padding, value, height, width, last, c)
    extra = {"m": Tensor(inverse, dtype="f32")}
    y = _compute(key, x4, make, static=True, extra=extra)["y"]
    return y if x.ndim == 4 else y.reshape(y.shape[1:])


def _grid(
    b: GraphBuilder, m: Operand, out: tuple[int, int], source: tuple[int, int], rows: int
) -> Operand:
    """The [1, H, W, 2] grid_sample grid (align_corners=False) that samples
    the source where the inverse matrix ``m`` (9 numbers, row-major) sends
    each output pixel."""
    height, width = out
    xs = b.constant([float(i) for i in range(width)], shape=[1, width])
    ys = b.constant([float(i) for i in range(height)], shape=[height, 1])
    k = [b.slice(m, [i], [1]) for i in range(9)]
    src_x = k[0] * xs + k[1] * ys + k[2]
    src_y = k[3] * xs + k[4] * ys + k[5]
    if rows == 3:
        den = k[6] * xs + k[7] * ys + k[8]
        # OpenCV takes 1 / 0 as 0: the pixel samples the source at (0, 0).
        scale = b.where(b.equal(den, 0.0), 0.0, 1.0 / den)
        src_x, src_y = src_x * scale, src_y * scale
    # Pixel i's centre is at (2 i + 1) / size - 1 in grid_sample's [-1, 1].
    gx = src_x * (2.0 / source[1]) + (1.0 / source[1] - 1.0)
    gy = src_y * (2.0 / source[0]) + (1.0 / source[0] - 1.0)
    shape = [1, height, width, 1]
    return b.concat([b.reshape(gx, shape), b.reshape(gy, shape)], axis=3)


def _inverse(op: str, matrix: Any, rows: int) -> list[float]:
    """The inverse of OpenCV's source-to-destination ``matrix`` (2x3 or 3x3),
    as 9 numbers (row-major, an affine one's last row 0 0 1), in double precision."""
    try:
        values = Tensor(matrix, dtype="f64") if not isinstance(matrix, Tensor) else matrix
    except (ValidationError, TypeError, ValueError):
        values = None
    if values is None or values.shape != (rows, 3):
        raise ValidationError(
            f"{op}: matrix must be {rows}x3 numbers (as OpenCV's), not {matrix!r}"[:300]
        )
    m = [float(v) for v in values.astype("f64").reshape((rows * 3,)).tolist()]
    if rows == 2:
        m += [0.0, 0.0, 1.0]
    if not all(math.isfinite(v) for v in m):
        raise ValidationError(f"{op}: the matrix has a NaN or infinite entry: {m[: rows * 3]}")
    a, bb, c, d, e, f, g, h, i = m
    det = a * (e * i - f * h) - bb * (d * i - f * g) + c * (d * h - e * g)
    if det == 0 or not math.isfinite(det) or abs(det) < 1e-12 * max(abs(v) for v in m) ** 3:
        raise ValidationError(f"{op}: the matrix is singular (no inverse): {m[: rows * 3]}")
    adj = [e * i - f * h, c * h - bb * i, bb * f - c * e,
           f * g - d * i, a * i - c * g, c * d - a * f,
           d * h - e * g, bb * g - a * h, a * e - bb * d]  # fmt: skip
    return [v / det for v in adj]


def _number(op: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValidationError(f"{op}: {name} must be a finite number, not {value!r}")
    return float(value)
