"""PNG decoding (zlib and pure Python): every colour type and bit depth, Adam7.

The result is 8 bits per sample. What Pillow does, and so what this does:
16-bit samples keep their high byte; 1, 2 and 4-bit gray levels are scaled to
0..255 (x255, x85, x17); palette images become RGB, or RGBA when the file has a
``tRNS`` chunk. A ``tRNS`` colour key on a gray or RGB image is not applied
(Pillow keeps it aside in ``info["transparency"]`` too).

Unfiltering is the hot loop. ``None`` and ``Up`` rows are whole-row
operations, ``Sub`` rows a prefix sum computed on one big integer per row
(bytewise adds without carries between bytes, doubling the distance each
step), and only ``Average`` and ``Paeth`` rows go byte by byte, one channel
lane at a time: Paeth through a table of its predictor indexed by the left
neighbour and a per-byte offset computed for the whole row at once. Pillow
writes Paeth rows for nearly every row of a photo, so inside a component an
image with at least ``HOST_MIN_BYTES`` of such rows is unfiltered on the host
instead (``_png_host``: every anti-diagonal of pixels at once; same bytes).
"""

from __future__ import annotations

import array
import struct
import sys
import zlib

from . import _model, _png_host
from ._errors import WasiNNError
from ._imagecore import ImageError, check_size

SIGNATURE = b"\x89PNG\r\n\x1a\n"

# colour type -> (samples per pixel, allowed bit depths, name)
_COLOURS = {
    0: (1, (1, 2, 4, 8, 16), "grayscale"),
    2: (3, (8, 16), "RGB"),
    3: (1, (1, 2, 4, 8), "palette"),
    4: (2, (8, 16), "grayscale+alpha"),
    6: (4, (8, 16), "RGBA"),
}
# Adam7 passes: first column, first row, column step, row step.
_ADAM7 = (
    (0, 0, 8, 8),
    (4, 0, 8, 8),
    (0, 4, 4, 8),
    (2, 0, 4, 4),
    (0, 2, 2, 4),
    (1, 0, 2, 2),
    (0, 1, 1, 2),
)
# depth -> byte -> its samples, most significant first
_UNPACK = {
    d: tuple(
        bytes((b >> (8 - d * (i + 1))) & ((1 << d) - 1) for i in range(8 // d)) for b in range(256)
    )
    for d in (1, 2, 4)
}
# depth -> gray level scaled to 0..255 (a translate table)
_SCALE = {d: bytes(min(255, v * (255 // ((1 << d) - 1))) for v in range(256)) for d in (1, 2, 4)}

Info = dict[str, object]


def decode_png(data: bytes, name: str, max_pixels: int) -> tuple[int, int, int, bytes, Info]:
    """Decode PNG ``data`` to (width, height, channels, 8-bit interleaved pixels, info).

    >>> w, h, ch, pixels, info = decode_png(open("a.png", "rb").read(), "a.png", 1 << 26)
    """
    header, palette, trns, idat = _read_chunks(data, name)
    width, height, depth, colour, compression, filtering, interlace = header
    if colour not in _COLOURS:
        raise ImageError(f"{name} is corrupt: PNG colour type {colour} does not exist")
    samples, depths, colour_name = _COLOURS[colour]
    if depth not in depths:
        raise ImageError(
            f"{name} is corrupt: a {colour_name} PNG cannot have {depth}-bit samples"
            f" (only {', '.join(map(str, depths))})"
        )
    if compression != 0 or filtering != 0:
        raise ImageError(
            f"{name} is corrupt: unknown PNG compression method {compression} "
            f"or filter method {filtering}"
        )
    if interlace not in (0, 1):
        raise ImageError(f"{name} is corrupt: unknown PNG interlace method {interlace}")
    check_size(name, width, height, max_pixels)
    tables = None
    if colour == 3:
        if palette is None:
            raise ImageError(f"{name} is corrupt: a palette PNG without a PLTE chunk")
        tables = _palette_tables(palette, trns)
    passes = [(0, 0, 1, 1, width, height)]
    if interlace:
        passes = []
        for x0, y0, dx, dy in _ADAM7:
            pw, ph = (width - x0 + dx - 1) // dx, (height - y0 + dy - 1) // dy
            if pw > 0 and ph > 0:
                passes.append((x0, y0, dx, dy, pw, ph))
    bits = samples * depth
    expected = sum(ph * (1 + (pw * bits + 7) // 8) for *_, pw, ph in passes)
    raw = _inflate(idat, expected, name)
    channels = len(tables) if tables is not None else samples
    if not interlace:
        pixels = _pixels(raw, width, height, samples, depth, tables, name)
        return width, height, channels, pixels, {"format": "png"}
    out = bytearray(width * height * channels)
    pos = 0
    for x0, y0, dx, dy, pw, ph in passes:
        size = ph * (1 + (pw * bits + 7) // 8)
        part = _pixels(raw[pos : pos + size], pw, ph, samples, depth, tables, name)
        pos += size
        line = pw * channels
        for r in range(ph):
            row = part[r * line : (r + 1) * line]
            base = (y0 + r * dy) * width
            for c in range(channels):
                start = (base + x0) * channels + c
                out[start : (base + width) * channels : dx * channels] = row[c::channels]
    return width, height, channels, bytes(out), {"format": "png"}


def _read_chunks(
    data: bytes, name: str
) -> tuple[tuple[int, ...], bytes | None, bytes | None, bytes]:
    if not data.startswith(SIGNATURE):
        raise ImageError(f"{name} is not a PNG file (no PNG signature)")
    pos = len(SIGNATURE)
    header: tuple[int, ...] | None = None
    palette: bytes | None = None
    trns: bytes | None = None
    idat: list[bytes] = []
    while True:
        if pos + 8 > len(data):
            raise ImageError(f"{name} is truncated: it ends before its IEND chunk")
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        label = kind.decode("latin-1")
        if length > 0x7FFFFFFF:
            raise ImageError(f"{name} is corrupt: its {label!r} chunk claims {length} bytes")
        body = data[pos + 8 : pos + 8 + length]
        crc = data[pos + 8 + length : pos + 12 + length]
        if len(body) != length or len(crc) != 4:
            raise ImageError(f"{name} is truncated inside its {label} chunk")
        if int.from_bytes(crc, "big") != zlib.crc32(kind + body):
            raise ImageError(f"{name} is corrupt: the {label} chunk fails its CRC check")
        pos += 12 + length
        if header is None and kind != b"IHDR":
            raise ImageError(f"{name} is corrupt: its first chunk is {label}, not IHDR")
        if kind == b"IHDR":
            if header is not None:
                raise ImageError(f"{name} is corrupt: it has two IHDR chunks")
            if length != 13:
                raise ImageError(f"{name} is corrupt: IHDR is {length} bytes, not 13")
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            if length == 0 or length % 3 or length > 768:
                raise ImageError(f"{name} is corrupt: PLTE is {length} bytes")
            palette = body
        elif kind == b"tRNS":
            trns = body
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        elif not kind[0] & 0x20:  # bit 5 of the first letter clear: a critical chunk
            raise ImageError(f"{name} has a critical chunk {label!r} this decoder does not know")
    if header is None:  # pragma: no cover (the loop refuses a first chunk that is not IHDR)
        raise ImageError(f"{name} is corrupt: it has no IHDR chunk")
    if not idat:
        raise ImageError(f"{name} is corrupt: it has no IDAT chunk (no image data)")
    return header, palette, trns, b"".join(idat)


def _inflate(idat: bytes, expected: int, name: str) -> bytes:
    # max_length stops at what the header implies: a zip bomb cannot make more.
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(idat, expected)
    except zlib.error as exc:
        raise ImageError(f"{name} is corrupt: its image data does not decompress ({exc})") from None
    if len(raw) < expected:
        raise ImageError(
            f"{name} is truncated: {len(raw)} bytes of image data, the header implies {expected}"
        )
    return raw


def _palette_tables(palette: bytes, trns: bytes | None) -> tuple[bytes, ...]:
    # Indices past the palette's end read as opaque black, as in Pillow.
    full = palette + bytes(768 - len(palette))
    tables = [full[0::3], full[1::3], full[2::3]]
    if trns is not None:
        tables.append(trns[:256] + b"\xff" * (256 - min(256, len(trns))))
    return tuple(tables)


def _pixels(
    raw: bytes,
    width: int,
    height: int,
    samples: int,
    depth: int,
    tables: tuple[bytes, ...] | None,
    name: str,
) -> bytes:
    """The 8-bit pixels of one (sub-)image whose filtered rows are ``raw``."""
    rowbytes = (width * samples * depth + 7) // 8
    recon = _unfilter(raw, height, rowbytes, max(1, samples * depth // 8), name)
    if depth == 16:
        flat = recon[0::2]
    elif depth == 8:
        flat = recon
    else:
        per_byte = 8 // depth
        flat = b"".join(map(_UNPACK[depth].__getitem__, recon))
        if width != rowbytes * per_byte:  # drop each row's padding bits
            step = rowbytes * per_byte
            flat = b"".join(flat[y * step : y * step + width] for y in range(height))
        if tables is None:
            flat = flat.translate(_SCALE[depth])
    if tables is None:
        return flat
    k = len(tables)
    out = bytearray(len(flat) * k)
    for c in range(k):
        out[c::k] = flat.translate(tables[c])
    return bytes(out)


#: Inside a component, an image whose Average and Paeth rows hold at least
#: this many bytes is unfiltered on the host (``_png_host``); below it the
#: graphs' compile time is not paid back.
HOST_MIN_BYTES = 2 << 20


def _unfilter(raw: bytes, height: int, rowbytes: int, bpp: int, name: str) -> bytes:
    stride = rowbytes + 1
    if _model._active_host is not None and height > 1:
        kinds = raw[0 : height * stride : stride]
        serial = kinds.count(3) + kinds.count(4)
        if (
            serial * rowbytes >= HOST_MIN_BYTES
            and max(kinds) <= 4
            and height * (rowbytes + bpp * height) <= _png_host.MAX_BYTES
            # The skewed rows grow with height * bpp: keep them within a few
            # times the image, or a tall, narrow image costs its height squared.
            and height * (rowbytes + bpp * height) <= max(4 * height * rowbytes, 1 << 20)
        ):
            rows = [raw[y * stride + 1 : (y + 1) * stride] for y in range(height)]
            try:
                return b"".join(_png_host.unfilter(rows, kinds, rowbytes, bpp))
            except WasiNNError:
                pass  # the pure path below gives the same bytes
    return _unfilter_here(raw, height, rowbytes, bpp, name)


def _unfilter_here(raw: bytes, height: int, rowbytes: int, bpp: int, name: str) -> bytes:
    nbits = 8 * rowbytes
    low = int.from_bytes(b"\x7f" * rowbytes, "little")
    high = int.from_bytes(b"\x80" * rowbytes, "little")
    rows: list[bytes] = []
    prev = bytes(rowbytes)
    stride = rowbytes + 1
    for y in range(height):
        kind = raw[y * stride]
        line = raw[y * stride + 1 : (y + 1) * stride]
        if kind == 0:
            cur = line
        elif kind == 2:
            x = int.from_bytes(line, "little")
            p = int.from_bytes(prev, "little")
            # bytewise x + p mod 256: add the low 7 bits, then xor in the top bits
            cur = (((x & low) + (p & low)) ^ ((x ^ p) & high)).to_bytes(rowbytes, "little")
        elif kind == 1:
            x = int.from_bytes(line, "little")
            shift = 8 * bpp
            while shift < nbits:
                s = x << shift
                x = ((x & low) + (s & low)) ^ ((x ^ s) & high)
                shift <<= 1
            cur = x.to_bytes(rowbytes, "little")
        elif kind == 3:
            cur = _average(line, prev, bpp)
        elif kind == 4:
            cur = _paeth(line, prev, bpp)
        else:
            raise ImageError(f"{name} is corrupt: row {y} has unknown filter type {kind}")
        rows.append(cur)
        prev = cur
    return b"".join(rows)


def _average(line: bytes, prev: bytes, bpp: int) -> bytes:
    out = bytearray(len(line))
    for lane in range(bpp):
        a = 0
        out[lane::bpp] = bytes(
            [
                a := (x + ((a + b) >> 1)) & 255
                for x, b in zip(line[lane::bpp], prev[lane::bpp], strict=True)
            ]
        )
    return bytes(out)


def _paeth_table() -> bytes:
    """``_PAETH[511 * (a - c + 255) + (b - c + 255)]``: Paeth's predictor minus
    ``c`` (mod 256), for every left ``a``, upper ``b`` and upper-left ``c``."""
    rows = []
    for da in range(-255, 256):
        rows.append(
            bytes(
                [
                    (da if abs(db) <= abs(da) and abs(db) <= abs(da + db)
                     else db if abs(da) <= abs(da + db) else 0) & 255
                    for db in range(-255, 256)
                ]
            )
        )  # fmt: skip
    return b"".join(rows)


_PAETH = _paeth_table()
_LANES32 = array.array("I")
_BIG_ENDIAN = sys.byteorder == "big"


def _paeth(line: bytes, prev: bytes, bpp: int) -> bytes:
    # Per byte, with c the upper-left byte: recon = (x + c + PAETH[...]) & 255,
    # and the table index is 511 * a + (b - 512 * c + 511 * 255 + 255). The
    # parts that do not depend on the left neighbour a, x + c (mod 256) and that
    # offset, are computed for the whole row at C speed with big integers,
    # leaving two operations and a lookup per byte in the serial loop.
    n = len(line)
    upper_left = bytes(bpp) + prev[: n - bpp]
    low = int.from_bytes(b"\x7f" * n, "little")
    high = int.from_bytes(b"\x80" * n, "little")
    x = int.from_bytes(line, "little")
    c = int.from_bytes(upper_left, "little")
    plus = (((x & low) + (c & low)) ^ ((x ^ c) & high)).to_bytes(n, "little")
    # b - 512 c + K in 32-bit lanes: every lane stays in 0..130815, so no borrow
    # crosses lanes.
    wide = bytearray(4 * n)
    wide[0::4] = prev
    b32 = int.from_bytes(wide, "little")
    wide[0::4] = upper_left
    c32 = int.from_bytes(wide, "little")
    offset = int.from_bytes(_K32 * n, "little")
    lanes = array.array("I", (b32 + offset - (c32 << 9)).to_bytes(4 * n, "little"))
    if _BIG_ENDIAN:  # pragma: no cover (wasm and x86 are little-endian)
        lanes.byteswap()
    out = bytearray(n)
    table = _PAETH
    for lane in range(bpp):
        a = 0
        out[lane::bpp] = bytes(
            [
                a := (u + table[511 * a + v]) & 255
                for u, v in zip(plus[lane::bpp], lanes[lane::bpp], strict=True)
            ]
        )
    return bytes(out)


_K32 = (511 * 255 + 255).to_bytes(4, "little")
