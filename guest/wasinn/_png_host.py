"""PNG unfiltering on the host, for bands of rows that use the Average or Paeth filter.

Those two filters make each byte depend on the byte to its left, so a row is
a serial chain, 80-150 ns a byte in pure Python. Rows depend on each other
only through the row above, though, so every pixel on one anti-diagonal
(``x + y = t``) can be computed at once from the two diagonals before it:
its left neighbour ``a`` is on diagonal ``t - 1`` (same row), the upper ``b``
on ``t - 1`` too (row above), and the upper-left ``c`` on ``t - 2``. ``unfilter``
walks the diagonals of one band of rows on the host (the reconstructed row
above the band goes first), ``_STEPS`` per call:

1. the guest shifts row ``y`` right by ``y`` pixels (the "skew"), so that each
   diagonal becomes one column, and the host transposes the matrix, so that
   each diagonal is contiguous bytes;
2. one graph computes ``_STEPS`` diagonals from the two before them, for
   every filter type at once, each row picking its own;
3. the host transposes the diagonals back, and the guest undoes the skew.

Every value is a whole number below 512 in f32, so the results are exact.
The skewed band is ``rows x (row bytes + bytes per pixel x rows)``; ``_png``
keeps bands no taller than wide, so it stays within twice the band, and
decides when this pays (enough Average/Paeth rows in a wide enough image).
Graphs are cached per band geometry: every band of an image shares them.
"""

from __future__ import annotations

from collections import OrderedDict

from ._builder import GraphBuilder
from ._graph_core import Operand
from ._model import Model
from ._tensor import Tensor

__all__ = ["unfilter"]

# Diagonals per call: fewer calls against a bigger graph to compile.
_STEPS = 8
_CACHE_SIZE = 8

_models: OrderedDict[tuple[object, ...], Model] = OrderedDict()


def unfilter(raw: bytes, height: int, rowbytes: int, bpp: int, above: bytes, rows: int) -> bytes:
    """The reconstructed rows, joined, of a band of ``height`` filtered rows
    ``raw`` (each with its filter-type byte first) below the reconstructed row
    ``above``. The graphs are made for bands of ``rows`` rows (``height`` or
    more), so that every band of an image shares them.

    Example::

        recon = unfilter(b"\x04\x01\x02\x03" * 2, 2, 3, 3, bytes(3), 2)
    """
    # The row above goes first as a None row (it comes out as it went in),
    # and rows past ``height`` are zeros, None too.
    k = rows + 1
    pixels = rowbytes // bpp
    diagonals = pixels + k - 1
    stride = bpp * diagonals
    zeros = memoryview(bytes(stride))
    kinds = bytearray(k)
    pieces: list[bytes | memoryview] = [above, zeros[: stride - rowbytes]]
    view = memoryview(raw)
    for y in range(1, k):
        pad = bpp * y
        if y <= height:
            kinds[y] = raw[(y - 1) * (rowbytes + 1)]
            row = view[(y - 1) * (rowbytes + 1) + 1 : y * (rowbytes + 1)]
        else:
            row = zeros[:rowbytes]
        pieces += (zeros[:pad], row, zeros[: stride - rowbytes - pad])
    # diag[t * bpp + c] = byte c of the pixel at x = t - y, for every row y
    diag = _transpose(b"".join(pieces), k, stride)
    del pieces
    lanes = bpp * k
    block = _STEPS * lanes
    kinds_t = Tensor(bytes(t for t in kinds for _ in range(bpp)), shape=(k, bpp), dtype="u8")
    model = _cached(("walk", k, bpp), lambda: _walk_model(k, bpp))
    zero = Tensor(bytes(lanes), shape=(bpp, k), dtype="u8")
    before, last = zero, zero  # diagonals t - 2 and t - 1
    done: list[bytes] = []
    for start in range(0, len(diag), block):
        x = diag[start : start + block]
        if len(x) < block:
            x += bytes(block - len(x))
        out = model.run(
            {"x": Tensor(x, shape=(_STEPS, bpp, k), dtype="u8"), "last": last,
             "before": before, "kinds": kinds_t}
        )  # fmt: skip
        recon = out["recon"].tobytes()
        done.append(recon)
        before = Tensor(recon[block - 2 * lanes : block - lanes], shape=(bpp, k), dtype="u8")
        last = Tensor(recon[block - lanes :], shape=(bpp, k), dtype="u8")
    del diag
    done[-1] = done[-1][: diagonals * lanes - (len(done) - 1) * block]
    back = memoryview(_transpose(b"".join(done), stride, k))
    del done
    return b"".join(
        back[y * stride + bpp * y : y * stride + bpp * y + rowbytes] for y in range(1, height + 1)
    )


def _cached(key: tuple[object, ...], make: object) -> Model:
    model = _models.get(key)
    if model is None:
        model = make()  # type: ignore[operator]
        assert isinstance(model, Model)
        _models[key] = model
        while len(_models) > _CACHE_SIZE:
            _models.popitem(last=False)[1].close()
    else:
        _models.move_to_end(key)
    return model


def _transpose(data: bytes, rows: int, cols: int) -> bytes:
    """A u8 matrix transposed by the host."""

    def make() -> Model:
        b = GraphBuilder()
        m = b.input("m", shape=[rows, cols], dtype="u8")
        return Model.load(b.to_onnx({"t": b.transpose(m)}), encoding="onnx")

    model = _cached(("transpose", rows, cols), make)
    return model.run({"m": Tensor(data, shape=(rows, cols), dtype="u8")})["t"].tobytes()


def _walk_model(height: int, bpp: int) -> Model:
    """``_STEPS`` diagonals from the two before them (see the module docstring).

    Only f32 arithmetic, which the host fuses into few kernels: a comparison
    ``p <= q`` of whole numbers is ``clamp(q - p + 1, 0, 1)``, and each row's
    filter type selects its predictor through 0/1 weights.
    """
    b = GraphBuilder()
    xs = b.split(b.cast(b.input("x", shape=[_STEPS, bpp, height], dtype="u8"), "f32"), _STEPS)
    last = b.cast(b.input("last", shape=[bpp, height], dtype="u8"), "f32")
    before = b.cast(b.input("before", shape=[bpp, height], dtype="u8"), "f32")
    kinds = b.cast(b.transpose(b.input("kinds", shape=[height, bpp], dtype="u8")), "f32")
    sub, up_w, avg, paeth = (_is(b, kinds, k) for k in (1.0, 2.0, 3.0, 4.0))

    def above(d: Operand) -> Operand:
        # Lane y takes lane y - 1 (the row above); row 0 has zeros above it.
        return b.pad(b.slice(d, [0, 0], [bpp, height - 1]), [0, 1], [0, 0])

    out = []
    corner = above(before)
    for step in xs:
        a, up = last, above(last)
        da, db = a - corner, up - corner
        pa, pb, pc = b.abs(db), b.abs(da), b.abs(da + db)
        take_a = _le(b, pa, b.min(pb, pc))
        take_b = (1.0 - take_a) * _le(b, pb, pc)
        pred = (
            sub * a + up_w * up + avg * b.floor((a + up) * 0.5)
            + paeth * (corner + take_a * da + take_b * db)
        )  # fmt: skip
        total = b.reshape(step, [bpp, height]) + pred
        recon = total - b.clamp(total - 255.0, min_value=0, max_value=1) * 256.0
        out.append(b.reshape(recon, [1, bpp, height]))
        last, corner = recon, up
    recon_all = b.cast(b.concat(out, 0), "u8")
    return Model.load(b.to_onnx({"recon": recon_all}), encoding="onnx")


def _le(b: GraphBuilder, p: Operand, q: Operand) -> Operand:
    """1.0 where ``p <= q`` (whole numbers), else 0.0."""
    return b.clamp(q - p + 1.0, min_value=0, max_value=1)


def _is(b: GraphBuilder, kinds: Operand, kind: float) -> Operand:
    """1.0 where ``kinds == kind`` (whole numbers), else 0.0."""
    return b.clamp(1.0 - b.abs(kinds - kind), min_value=0, max_value=1)
