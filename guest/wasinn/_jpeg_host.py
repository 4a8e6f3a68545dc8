"""The pixel half of JPEG decoding on the host: dequantisation, IDCT, upsampling, colour.

``_jpeg`` decodes the entropy-coded data into coefficients in the guest (that
part is serial); inside a component ``render`` sends them to the host a band
of MCU rows at a time (``BAND_PIXELS``), where one ``GraphBuilder`` graph
does the per-pixel arithmetic, which in pure Python is about 80 % of a
baseline JPEG's decode time. Chroma that is upsampled vertically comes with
a block row of context above and below the band, and the guest marks the
image's first and last rows, so that each band computes what the whole image
would. The graph computes
exactly the integers the pure path in ``_jpeg`` computes (and so what
libjpeg's defaults give), all in f32, where whole numbers below 2**24 are
exact:

- the "islow" IDCT: each 1-D pass is a product with the 8x8 integer matrix of
  libjpeg's butterflies (``_IDCT``), then libjpeg's rounding shift, done as a
  floor of a power-of-two scaling. The products would pass 2**24, so each
  input is split into a high and a low part, multiplied alone (see
  ``_pass``); then libjpeg's range limit, wrap-around included;
- libjpeg's "fancy" triangle upsampling for 2x2, 2x1 and 1x2 chroma and its
  fixed-point YCbCr -> RGB (every product stays below 2**24, and each
  ``>> n`` is a floor of a scaling by 2**-n, exact in f32).

The graph also returns the largest magnitude either IDCT pass took in:
beyond ``EXACT_BELOW`` (only corrupt files get there) the f32 products are
no longer exact, and ``render`` returns None so that the pure path decodes.
Compiled graphs are cached per band geometry (``_CACHE_SIZE``).
"""

from __future__ import annotations

import array
from collections import OrderedDict
from collections.abc import Sequence

from ._builder import GraphBuilder
from ._graph_core import Operand
from ._model import Model
from ._tensor import Tensor

__all__ = ["BAND_PIXELS", "Plane", "render"]

_CACHE_SIZE = 8

# Below this magnitude every input of an IDCT pass is computed exactly (see _pass).
EXACT_BELOW = 65536.0

#: The image is rendered in bands of whole MCU rows of about this many pixels,
#: one host call each: the host's working memory follows the band, not the image.
BAND_PIXELS = 1 << 18

# A component as render needs it: (its 16-bit coefficients as bytes, 64 per block
# in natural order; dequantisation table in natural order; blocks across, blocks
# down, samples across, samples down, horizontal and vertical upsampling factors).
Plane = tuple[memoryview, Sequence[int], int, int, int, int, int, int]


def _butterfly(d: Sequence[int]) -> list[int]:
    """libjpeg's islow 1-D IDCT without its rounding constant and shift."""
    d0, d1, d2, d3, d4, d5, d6, d7 = d
    z1 = (d2 + d6) * 4433
    t2 = z1 - d6 * 15137
    t3 = z1 + d2 * 6270
    t0 = (d0 + d4) << 13
    t1 = (d0 - d4) << 13
    t10, t13, t11, t12 = t0 + t3, t0 - t3, t1 + t2, t1 - t2
    z5 = (d7 + d3 + d5 + d1) * 9633
    z1 = (d7 + d1) * -7373
    z2 = (d5 + d3) * -20995
    z3 = (d7 + d3) * -16069 + z5
    z4 = (d5 + d1) * -3196 + z5
    o0 = d7 * 2446 + z1 + z3
    o1 = d5 * 16819 + z2 + z4
    o2 = d3 * 25172 + z2 + z3
    o3 = d1 * 12299 + z1 + z4
    return [t10 + o3, t11 + o2, t12 + o1, t13 + o0, t13 - o0, t12 - o1, t11 - o2, t10 - o3]


# _IDCT[r][k]: what input k contributes to output r (the butterflies are linear).
_COLUMNS = [_butterfly([int(i == k) for i in range(8)]) for k in range(8)]
_IDCT = [[_COLUMNS[k][r] for k in range(8)] for r in range(8)]

_models: OrderedDict[tuple[object, ...], Model] = OrderedDict()


def render(
    planes: Sequence[Plane], width: int, height: int, mcu_rows: int, ycc: bool, out: memoryview
) -> bool:
    """Write the interleaved 8-bit pixels (gray, or RGB) of the decoded
    ``planes`` into ``out``; False when a coefficient is too large for the f32
    arithmetic to be exact (corrupt data only; the caller then uses the pure
    path, which writes every byte again).

    ``mcu_rows``: the image rows of one MCU row (8 x the largest vertical
    sampling factor). ``ycc``: the three planes are Y, Cb, Cr (else R, G, B,
    or one gray plane). The graph renders a band of MCU rows, the same for
    every band of the image.

    Example::

        ok = render([(coefs, quant, 80, 60, 640, 480, 1, 1)], 640, 480, 8, False, out)
    """
    # MCU rows per band: bands of equal height, since a short last band would
    # cost as much as a full one.
    most = max(1, BAND_PIXELS // (width * mcu_rows))
    mcus = -(-height // mcu_rows)
    per_band = -(-mcus // -(-mcus // most))
    band_rows = per_band * mcu_rows
    geometry = tuple(
        (bw, dw, fh, fv, mcu_rows // (8 * fv)) for _, _, bw, _, dw, _, fh, fv in planes
    )
    key = (width, band_rows, ycc, geometry)
    model = _models.get(key)
    if model is None:
        model = _build(geometry, width, per_band, ycc)
        _models[key] = model
        while len(_models) > _CACHE_SIZE:
            _models.popitem(last=False)[1].close()
    else:
        _models.move_to_end(key)
    channels = len(planes)
    feed: dict[str, Tensor] = {}
    for i, (_, quant, *_) in enumerate(planes):
        feed[f"q{i}"] = Tensor(array.array("i", quant), shape=(8, 8), dtype="i32")
    for y0 in range(0, height, band_rows):
        for i, (coefs, _, bw, bh, _, dh, _, fv) in enumerate(planes):
            v = mcu_rows // (8 * fv)  # block rows per MCU row
            first = y0 // mcu_rows * v
            context = 1 if fv == 2 else 0  # a block row above and below, for the filter
            feed[f"c{i}"] = Tensor(
                _block_rows(coefs, bw, bh, first - context, per_band * v + 2 * context),
                shape=(bw * (per_band * v + 2 * context), 8, 8, 2), dtype="u8",
            )  # fmt: skip
            if fv == 2:
                rows = 8 * per_band * v
                top = array.array("f", bytes(4 * rows))
                bottom = array.array("f", bytes(4 * rows))
                if first == 0:
                    top[0] = 1.0  # the image's first row: its own upper neighbour
                if 0 <= dh - 1 - 8 * first < rows:
                    bottom[dh - 1 - 8 * first] = 1.0  # its last row: its own lower neighbour
                feed[f"top{i}"] = Tensor(top, shape=(rows, 1))
                feed[f"bottom{i}"] = Tensor(bottom, shape=(rows, 1))
        band = model.run(feed)
        if band["peak"].tolist()[0] >= EXACT_BELOW:
            return False
        start = y0 * width * channels
        size = (min(height, y0 + band_rows) - y0) * width * channels
        out[start : start + size] = band["pixels"].data[:size]
    return True


def _block_rows(coefs: memoryview, bw: int, bh: int, first: int, count: int) -> bytes:
    """Block rows ``first`` to ``first + count`` of a plane (128 bytes a block),
    zeros for rows outside it."""
    row = 128 * bw
    start, stop = max(0, first), min(bh, first + count)
    if start >= stop:
        return bytes(row * count)
    return b"".join(
        (bytes(row * (start - first)), coefs[start * row : stop * row],
         bytes(row * (first + count - stop)))
    )  # fmt: skip


def _build(
    geometry: tuple[tuple[int, int, int, int, int], ...], width: int, per_band: int, ycc: bool
) -> Model:
    """The graph of one band of ``per_band`` MCU rows (see ``render``)."""
    b = GraphBuilder()
    # idct_t[k, r] = _IDCT[r][k]: row vectors times it give the 1-D transform.
    idct_t = b.constant(
        array.array("f", [_IDCT[r][k] for k in range(8) for r in range(8)]), (8, 8), "f32"
    )
    full = []
    peak: Operand | None = None
    height = 0
    for i, (bw, dw, fh, fv, v) in enumerate(geometry):
        context = 1 if fv == 2 else 0
        block_rows = per_band * v + 2 * context
        n = block_rows * bw
        # 16-bit little-endian coefficients from their two bytes: low + 256 high, signed.
        pairs = b.cast(b.input(f"c{i}", shape=[n, 8, 8, 2], dtype="u8"), "f32")
        pairs = b.reshape(pairs, [n * 64, 2])
        low, high = b.slice(pairs, [0, 0], [n * 64, 1]), b.slice(pairs, [0, 1], [n * 64, 1])
        unsigned = low + high * 256.0
        coefs = unsigned - b.clamp(unsigned - 32767.0, min_value=0, max_value=1) * 65536.0
        quant = b.cast(b.input(f"q{i}", shape=[8, 8], dtype="i32"), "f32")
        # In f32: products of real files' coefficients and tables stay far below 2**24.
        # The IDCT takes blocks transposed (column frequency first).
        dequant = b.transpose(b.reshape(coefs, [n, 8, 8]) * quant, permutation=[0, 2, 1])
        samples, plane_peak = _idct(b, dequant, idct_t)
        peak = plane_peak if peak is None else b.max(peak, plane_peak)
        # blocks in raster order -> one plane, cropped to the component's width
        grid = b.reshape(samples, [block_rows, bw, 8, 8])
        plane = b.reshape(b.transpose(grid, permutation=[0, 2, 1, 3]), [block_rows * 8, bw * 8])
        plane = b.slice(plane, [0, 0], [block_rows * 8, dw])
        rows = 8 * per_band * v  # the band's own rows (the rest is context)
        if fv == 2:
            plane = _double_rows(b, plane, i, rows, dw, 4 if fh == 2 else 1)
        if fh == 2:
            plane = _double_columns(b, plane, dw, fv == 2)
        height, cols = rows * fv, dw * fh
        if cols != width:
            plane = b.slice(plane, [0, 0], [height, width])
        full.append(plane)
    if ycc:
        full = _ycc_to_rgb(b, *full)
    # Channels last through a transpose: the host's concat along an inner axis is slow.
    stacked = b.concat([b.reshape(p, [1, height * width]) for p in full], 0)
    pixels = b.reshape(b.transpose(stacked, permutation=[1, 0]), [height, width, len(full)])
    out = b.cast(b.clamp(pixels, min_value=0, max_value=255), "u8")
    assert peak is not None
    return Model.load(b.to_onnx({"pixels": out, "peak": peak}), encoding="onnx")


def _idct(b: GraphBuilder, d: Operand, idct_t: Operand) -> tuple[Operand, Operand]:
    """libjpeg's islow IDCT of [n, 8, 8] dequantised blocks, transposed (column
    frequency first) -> (f32 samples 0..255 in natural order, the largest
    magnitude either pass took in, shape [1])."""
    n = d.shape[0]
    assert n is not None
    # Pass 1, columns: out[n, c, r] = sum_k idct[r, k] d[n, c, k], descaled by 2**11.
    columns = b.reshape(d, [n * 8, 8])
    work = _pass(b, columns, idct_t, 11)
    # Pass 2, rows: out[n, r, x] = sum_c idct[x, c] work[n, c, r], descaled by 2**18.
    rows = b.reshape(b.transpose(b.reshape(work, [n, 8, 8]), permutation=[0, 2, 1]), [n * 8, 8])
    value = _pass(b, rows, idct_t, 18)
    # libjpeg's range limit: value + 128 modulo 1024 (so that wildly wrong
    # values from corrupt data wrap as in libjpeg), then 0..255 kept, 256..511
    # saturated to 255 and 512..1023 to 0.
    shifted = value + 128.0
    wrapped = shifted - b.floor(shifted * (1.0 / 1024)) * 1024.0
    low_half = b.clamp(512.0 - wrapped, min_value=0, max_value=1)
    samples = b.clamp(wrapped, min_value=0, max_value=255) * low_half
    peak = b.max(
        b.reduce_max(b.abs(b.reshape(columns, [1, n * 64])), axes=[1]),
        b.reduce_max(b.abs(b.reshape(rows, [1, n * 64])), axes=[1]),
    )
    return b.reshape(samples, [n, 8, 8]), peak


def _pass(b: GraphBuilder, x: Operand, idct_t: Operand, shift: int) -> Operand:
    """One 1-D pass of the islow IDCT on the rows of ``x`` [m, 8] (whole
    numbers in f32): ``(x @ idct_t + 2**(shift - 1)) >> shift``, exactly.

    The products would pass 2**24, where f32 stops holding every integer, so
    ``x = 256 * high + low`` (``0 <= low < 256``) and each half is multiplied
    alone: every row of the matrix sums to less than 2**16 in magnitude, so
    both stay exact while ``|x| < 2**16`` (real files stay under 2**14). Then
    ``(256 * hp + lp + r) >> s == (hp + ((lp + r) >> 8)) >> (s - 8)``: the low
    bits that the inner shift drops cannot carry into the outer one.
    """
    high = b.floor(x * (1.0 / 256))
    low = x - high * 256.0
    inner = b.floor((b.matmul(low, idct_t) + float(1 << (shift - 1))) * (1.0 / 256))
    return b.floor((b.matmul(high, idct_t) + inner) * (1.0 / (1 << (shift - 8))))


def _double_rows(
    b: GraphBuilder, plane: Operand, i: int, rows: int, dw: int, scale: int
) -> Operand:
    """Rows doubled by libjpeg's vertical triangle filter: ``3 * near + far``
    (from the row above for the upper copy, below for the lower). ``plane``
    has a block row of context above and below the band's ``rows``; the
    inputs ``top{i}`` and ``bottom{i}`` (1.0 or 0.0 per row) mark the image's
    first and last rows, whose neighbour beyond the edge is the row itself.
    With ``scale`` 4 the sums are left unscaled for the horizontal pass
    (h2v2); with 1 they are rounded to samples as h1v2 does (biases 1 and 2,
    shift 2)."""
    near = b.slice(plane, [8, 0], [rows, dw])
    above = b.slice(plane, [7, 0], [rows, dw])
    below = b.slice(plane, [9, 0], [rows, dw])
    top = b.input(f"top{i}", shape=[rows, 1], dtype="f32")
    bottom = b.input(f"bottom{i}", shape=[rows, 1], dtype="f32")
    above = above + top * (near - above)
    below = below + bottom * (near - below)
    upper, lower = near * 3.0 + above, near * 3.0 + below
    if scale == 1:
        upper = b.floor((upper + 1.0) * 0.25)
        lower = b.floor((lower + 2.0) * 0.25)
    both = b.concat([b.reshape(upper, [1, rows, dw]), b.reshape(lower, [1, rows, dw])], 0)
    return b.reshape(b.transpose(both, permutation=[1, 0, 2]), [2 * rows, dw])


def _double_columns(b: GraphBuilder, plane: Operand, dw: int, weighted: bool) -> Operand:
    """Columns doubled by libjpeg's horizontal triangle filter: ``(3 * near +
    far + bias) >> shift``, left neighbour for the first copy, right for the
    second; on rows already weighted 3:1 vertically (h2v2) the biases are 8 and
    7 with shift 4, else 1 and 2 with shift 2."""
    rows = plane.shape[0]
    assert rows is not None
    edge = b.pad(plane, [0, 1], [0, 1], mode="edge")
    left = b.slice(edge, [0, 0], [rows, dw])
    right = b.slice(edge, [0, 2], [rows, dw])
    near = plane * 3.0
    first_bias, second_bias, scale = (8.0, 7.0, 1 / 16) if weighted else (1.0, 2.0, 0.25)
    first = b.floor((near + left + first_bias) * scale)
    second = b.floor((near + right + second_bias) * scale)
    both = b.concat([b.reshape(first, [1, rows, dw]), b.reshape(second, [1, rows, dw])], 0)
    return b.reshape(b.transpose(both, permutation=[1, 2, 0]), [rows, 2 * dw])


def _ycc_to_rgb(b: GraphBuilder, y: Operand, cb: Operand, cr: Operand) -> list[Operand]:
    """libjpeg's fixed-point YCbCr -> RGB (SCALEBITS 16); clamping comes after."""
    cb = cb - 128.0
    cr = cr - 128.0
    scale = 1.0 / 65536
    red = y + b.floor((cr * 91881.0 + 32768.0) * scale)
    green = y + b.floor((cb * -22554.0 + cr * -46802.0 + 32768.0) * scale)
    blue = y + b.floor((cb * 116130.0 + 32768.0) * scale)
    return [red, green, blue]
