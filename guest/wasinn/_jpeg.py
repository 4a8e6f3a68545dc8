"""JPEG decoding: baseline, extended (8-bit) and progressive Huffman.

``decode_jpeg(data, name)`` returns ``(width, height, channels, pixels, info)``:
``channels`` is 1 (gray) or 3 (RGB), ``pixels`` the samples row by row,
interleaved, and ``info`` is ``{"orientation": EXIF orientation 1-8 or None}``.

The arithmetic follows libjpeg's defaults step by step, so that the pixels are
the ones Pillow (libjpeg-turbo) gives, usually bit for bit: the "islow" integer
IDCT (same constants, same rounding, same range limiting), "fancy" triangle
upsampling for 2x1, 2x2 and 1x2 chroma (box replication for other ratios),
and libjpeg's fixed-point YCbCr -> RGB tables.

The entropy-coded data is decoded here, in Python: each Huffman lookup takes
12 bits and gives the code's length, run and value at once (``_FAST_BITS``),
with a 16-bit table behind it for longer codes. Coefficients are kept as
libjpeg keeps them, 16-bit (``array('h')``, 64 per block in natural order,
values wrapped to 16 bits as libjpeg's ``JCOEF`` casts wrap them). The rest,
dequantisation, IDCT, upsampling and colour, is per-pixel arithmetic:
inside a component, images of ``HOST_MIN_PIXELS`` or more send the
coefficients to the host a band of MCU rows at a time, where a graph
computes the same integers (``_jpeg_host``); elsewhere, or when the host
cannot, it runs here, a component at a time.

Refused with ``ImageError`` ("unsupported ..."): arithmetic coding, lossless
and hierarchical files, 12-bit samples, CMYK/YCCK (4 components), 2-component
files, fractional sampling ratios, and a height given by a DNL marker.

Hostile input: the size is checked against ``max_pixels`` (default
``MAX_PIXELS``, 8192 x 8192) before anything is allocated; a component's
coefficients (2 bytes each: a third to two thirds of the decoded pixels'
bytes, by chroma sampling) are allocated by the first scan that reaches it,
and a scan that must spend a bit per block is refused first if it is too
short; pixel planes come only once every scan decoded. Memory peaks at
about the coefficients plus the decoded pixels (at most three times the
pixels' bytes). Truncated or corrupt data raises ``ImageError``; no other
exception escapes.
"""

from __future__ import annotations

import array
import itertools
import re
import sys
from collections.abc import Iterator, Sequence
from typing import Literal

from . import _jpeg_host, _model
from ._errors import WasiNNError
from ._imagecore import MAX_PIXELS, Canvas, ImageError, ImageInfo, check_size, interleave

__all__ = ["decode_jpeg", "probe_jpeg"]

# Zigzag position -> natural (row-major) index; 16 extra entries that point at
# 63 absorb run lengths that overshoot in corrupt data, as libjpeg's table does.
_ZIGZAG = [
    0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5,
    12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, 28,
    35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,
    58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
] + [63] * 16  # fmt: skip

#: Inside a component, images of at least this many pixels go through the host
#: for dequantisation, IDCT, upsampling and colour (``_jpeg_host``); smaller ones
#: stay in pure Python, where they are quick and compile no graph.
HOST_MIN_PIXELS = 65536

# libjpeg's post-IDCT range limit: index (value & 1023) of a sample centred on 0.
# In-range values are shifted by 128 and clamped; wildly out-of-range ones wrap
# the way libjpeg's do (they only occur in corrupt files).
_RL = [min(t + 128, 255) for t in range(384)] + [0] * 512 + [t - 896 for t in range(896, 1024)]

# Clamp for colour conversion, offset by 512 so that indexes stay positive.
_CLAMP = [0] * 512 + list(range(256)) + [255] * 512


def _fix(x: float) -> int:
    return int(x * 65536 + 0.5)


# libjpeg's jdcolor.c tables (SCALEBITS = 16), each offset by 512 for _CLAMP.
_CR_R = [((_fix(1.40200) * (i - 128) + 32768) >> 16) + 512 for i in range(256)]
_CB_B = [((_fix(1.77200) * (i - 128) + 32768) >> 16) + 512 for i in range(256)]
# G needs Cb and Cr together: one table indexed by (cb << 8) | cr.
_CB_G = [-_fix(0.34414) * (i - 128) + 32768 for i in range(256)]
_CR_G = [-_fix(0.71414) * (i - 128) for i in range(256)]
_G = [((cbg + crg) >> 16) + 512 for cbg in _CB_G for crg in _CR_G]

_MASK = [(1 << s) - 1 for s in range(17)]
_HALF = [(1 << s) >> 1 for s in range(17)]

# A Huffman lookup entry is (code length << 8) | symbol, indexed by the next 16
# bits. Bit patterns that are no code get a length so large that the next read
# falls off the end of the data (an IndexError, reported as corrupt data).
_BAD = 1 << 48

# A Huffman table is looked up twice over. ``fast`` takes the next _FAST_BITS
# bits and, when the code and its extra bits fit in them, gives everything at
# once: the bits used (bits 0-4), for AC the zero run (bits 5-8), and the signed
# value (DC: from bit 5; AC: from bit 9; 0 for AC end-of-block and ZRL codes).
# An entry of 0 sends the decoder to ``plain`` (the 16-bit table above).
_FAST_BITS = 12
_FAST_MASK = (1 << _FAST_BITS) - 1
_Table = tuple[list[int], list[int]]  # (plain, fast)

_WORD = array.array("I")
_LITTLE = sys.byteorder == "little"

_SCAN_END = re.compile(rb"\xff[^\x00\xd0-\xd7]")
_RESTART = re.compile(rb"\xff[\xd0-\xd7]")

_UNSUPPORTED_SOF = {
    0xC3: "lossless JPEG",
    0xC5: "hierarchical JPEG",
    0xC6: "hierarchical JPEG",
    0xC7: "hierarchical lossless JPEG",
    0xC9: "arithmetic-coded JPEG",
    0xCA: "arithmetic-coded progressive JPEG",
    0xCB: "arithmetic-coded lossless JPEG",
    0xCD: "arithmetic-coded hierarchical JPEG",
    0xCE: "arithmetic-coded hierarchical JPEG",
    0xCF: "arithmetic-coded hierarchical lossless JPEG",
}


class _Component:
    __slots__ = (
        "ident", "h", "v", "tq", "bw", "bh", "dw", "dh", "coefs", "view", "fresh", "quant",
        "has_dc",
    )  # fmt: skip

    def __init__(self, ident: int, h: int, v: int, tq: int) -> None:
        self.ident, self.h, self.v, self.tq = ident, h, v, tq
        self.bw = self.bh = self.dw = self.dh = 0
        # 64 coefficients per block, natural order, made by the first scan
        # that reaches the component; ``view`` writes into it a block at a time.
        self.coefs: array.array[int] | None = None
        self.view: memoryview | None = None
        self.fresh = False  # made by the scan being decoded: its blocks are still zeros
        self.quant: list[int] | None = None  # natural order, latched at its first scan
        self.has_dc = False  # a scan has given every block its DC coefficient


def _huffman_table(counts: bytes, symbols: bytes, dc: bool, name: str) -> _Table:
    """Both lookup tables of one Huffman table (see ``_Table``)."""
    if dc and any(s > 15 for s in symbols):
        raise ImageError(f"{name} is corrupt: a DC Huffman table has a symbol over 15")
    table = [_BAD] * 65536
    fast = [0] * (1 << _FAST_BITS)
    code = k = 0
    for length in range(1, 17):
        shift = 16 - length
        for _ in range(counts[length - 1]):
            if code >= 1 << length:
                raise ImageError(f"{name} is corrupt: a Huffman table has too many codes")
            symbol = symbols[k]
            start = code << shift
            table[start : start + (1 << shift)] = [(length << 8) | symbol] * (1 << shift)
            size = symbol if dc else symbol & 15
            room = _FAST_BITS - length - size
            if room >= 0:
                # Every value the extra bits can take gets its own run of entries,
                # so the value comes out of the same lookup as the code.
                run = 0 if dc else symbol >> 4
                tail = (run << 5) | (length + size)
                if size:
                    low, half = _MASK[size], _HALF[size]
                    entries = [
                        ((v - low if v < half else v) << (5 if dc else 9)) | tail
                        for v in range(1 << size)
                        for _ in range(1 << room)
                    ]
                else:
                    entries = [tail] * (1 << room)
                first = code << (_FAST_BITS - length)
                fast[first : first + len(entries)] = entries
            code += 1
            k += 1
        code <<= 1
    return table, fast


def _windows(raw: bytes) -> list[int]:
    """``w[i]`` = bytes i, i+1, i+2 of ``raw`` (zeros past its end) as one
    24-bit number, so that any 16 bits are one index and one shift away."""
    n = len(raw)
    padded = raw + b"\0\0"
    if _WORD.itemsize != 4:  # pragma: no cover (every platform CPython runs on has it)
        return [
            (a << 16) | (b << 8) | c
            for a, b, c in zip(padded, padded[1:], padded[2:], strict=False)
        ]
    # Big-endian 32-bit words 0, b[i], b[i+1], b[i+2], assembled at C speed.
    spread = bytearray(4 * n)
    spread[1::4] = raw
    spread[2::4] = padded[1 : n + 1]
    spread[3::4] = padded[2 : n + 2]
    words = array.array("I", spread)
    if _LITTLE:
        words.byteswap()
    return words.tolist()


def _wrap16(value: int) -> int:
    """``value`` as libjpeg's 16-bit ``JCOEF`` keeps it (only corrupt data needs this)."""
    return ((value + 32768) & 0xFFFF) - 32768


_ZERO_BLOCK = memoryview(array.array("h", bytes(128)))


def _orientation(body: bytes) -> int | None:
    """The EXIF orientation (IFD0 tag 0x0112) of an APP1 body, or None."""
    tiff = body[6:]
    if len(tiff) < 8 or tiff[:2] not in (b"II", b"MM"):
        return None
    order: Literal["little", "big"] = "little" if tiff[:2] == b"II" else "big"
    ifd = int.from_bytes(tiff[4:8], order)
    if ifd + 2 > len(tiff):
        return None
    for i in range(int.from_bytes(tiff[ifd : ifd + 2], order)):
        entry = tiff[ifd + 2 + 12 * i : ifd + 14 + 12 * i]
        if len(entry) < 12:
            return None
        if int.from_bytes(entry[:2], order) == 0x0112:
            if int.from_bytes(entry[2:4], order) != 3:  # SHORT
                return None
            value = int.from_bytes(entry[8:10], order)
            return value if 1 <= value <= 8 else None
    return None


def decode_jpeg(
    data: bytes, name: str, max_pixels: int = MAX_PIXELS
) -> tuple[int, int, int, bytes, dict[str, object]]:
    """Decode a JPEG file into (width, height, channels, pixels, info).

    Example::

        >>> w, h, ch, pixels, info = decode_jpeg(open("cat.jpg", "rb").read(), "cat.jpg")
        >>> (w, h, ch, len(pixels) == w * h * ch, info)
        (640, 480, 3, True, {'orientation': None})
    """
    return _Decoder(bytes(data), name, max_pixels).decode()


def probe_jpeg(data: bytes, name: str) -> ImageInfo:
    """What the frame header of JPEG ``data`` says, reading the segments up to
    it (no entropy-coded data).

    >>> probe_jpeg(open("cat.jpg", "rb").read(), "cat.jpg")
    ImageInfo(format='jpeg', width=640, height=480, channels=3)
    """
    return _Decoder(bytes(data), name, None).probe()


class _Decoder:
    def __init__(self, data: bytes, name: str, max_pixels: int | None) -> None:
        self.data, self.name, self.max_pixels = data, name, max_pixels
        self.quant: list[list[int] | None] = [None] * 4
        self.dc_tables: list[_Table | None] = [None] * 4
        self.ac_tables: list[_Table | None] = [None] * 4
        self.restart = 0
        self.components: list[_Component] = []
        self.progressive = False
        self.width = self.height = 0
        self.hmax = self.vmax = 1
        self.mcux = self.mcuy = 0
        self.adobe: int | None = None
        self.jfif = False
        self.orientation: int | None = None
        self.scans = 0
        self.eobrun = 0
        self.canvas: Canvas | None = None  # the pixels, made by the first scan

    def fail(self, why: str) -> ImageError:
        return ImageError(f"{self.name} is {why}")

    def decode(self) -> tuple[int, int, int, bytes, dict[str, object]]:
        self.markers(header_only=False)
        if not self.components:
            raise self.fail("corrupt: it has no frame header (SOF marker)")
        if not self.scans:
            raise self.fail("corrupt: it has no scan (SOS marker)")
        if not all(c.has_dc for c in self.components):
            # libjpeg would paint such a component gray; refusing it keeps the
            # work proportional to the data (an AC scan can skip every block).
            raise self.fail("truncated or corrupt: a component has no DC scan")
        return self.output()

    def probe(self) -> ImageInfo:
        """What the frame header says, reading the segments up to it."""
        self.markers(header_only=True)
        return ImageInfo("jpeg", self.width, self.height, len(self.components))

    def markers(self, header_only: bool) -> None:
        """Read the segments in order, decoding each scan; ``header_only``:
        stop after the frame header (raising if there is none)."""
        data, n = self.data, len(self.data)
        if data[:2] != b"\xff\xd8":
            raise self.fail("not a JPEG file (no SOI marker)")
        pos = 2
        while True:
            # Skip anything up to the next marker (libjpeg warns and does the same).
            pos = data.find(b"\xff", pos)
            while 0 <= pos < n and data[pos] == 0xFF:
                pos += 1
            if pos < 0 or pos >= n:
                if self.scans:
                    return  # the EOI marker is missing; libjpeg accepts that too
                before = "its frame header" if header_only else "any image data"
                raise self.fail(f"truncated: it ends before {before}")
            marker = data[pos]
            pos += 1
            if marker == 0xD9:
                if header_only and not self.components:
                    raise self.fail("corrupt: it has no frame header (SOF marker)")
                return
            if 0xD0 <= marker <= 0xD7 or marker == 0x01:
                continue
            if pos + 2 > n:
                raise self.fail("truncated inside a marker segment")
            length = (data[pos] << 8) | data[pos + 1]
            if length < 2 or pos + length > n:
                raise self.fail(f"truncated or corrupt: marker 0x{marker:02X} has length {length}")
            body = data[pos + 2 : pos + length]
            pos += length
            if marker == 0xDA:
                pos = self.scan(body, pos)
            elif not header_only or marker not in (0xC4, 0xDB):  # tables: not headers
                self.segment(marker, body)
                if header_only and self.components:
                    return

    def segment(self, marker: int, body: bytes) -> None:
        name = self.name
        if marker == 0xDB:
            i = 0
            while i < len(body):
                pq, tq = body[i] >> 4, body[i] & 15
                size = 128 if pq else 64
                if pq > 1 or tq > 3 or i + 1 + size > len(body):
                    raise self.fail("corrupt: bad quantisation table (DQT)")
                raw = body[i + 1 : i + 1 + size]
                values = (
                    [(raw[2 * j] << 8) | raw[2 * j + 1] for j in range(64)] if pq else list(raw)
                )
                table = [0] * 64
                for j in range(64):
                    table[_ZIGZAG[j]] = values[j]
                self.quant[tq] = table
                i += 1 + size
        elif marker == 0xC4:
            i = 0
            while i < len(body):
                if i + 17 > len(body):
                    raise self.fail("corrupt: bad Huffman table (DHT)")
                tc, th = body[i] >> 4, body[i] & 15
                counts = body[i + 1 : i + 17]
                total = sum(counts)
                if tc > 1 or th > 3 or total > 256 or i + 17 + total > len(body):
                    raise self.fail("corrupt: bad Huffman table (DHT)")
                pair = _huffman_table(counts, body[i + 17 : i + 17 + total], tc == 0, name)
                (self.dc_tables if tc == 0 else self.ac_tables)[th] = pair
                i += 17 + total
        elif marker in (0xC0, 0xC1, 0xC2):
            self.frame(marker, body)
        elif marker in _UNSUPPORTED_SOF:
            raise self.fail(f"an unsupported kind of JPEG: {_UNSUPPORTED_SOF[marker]}")
        elif marker == 0xDD:
            if len(body) < 2:
                raise self.fail("corrupt: bad restart interval (DRI)")
            self.restart = (body[0] << 8) | body[1]
        elif marker == 0xDC:
            raise self.fail("an unsupported kind of JPEG: its height is in a DNL marker")
        elif marker == 0xE0 and body[:5] == b"JFIF\0":
            self.jfif = True
        elif marker == 0xE1 and body[:6] == b"Exif\0\0" and self.orientation is None:
            self.orientation = _orientation(body)
        elif marker == 0xEE and body[:5] == b"Adobe" and len(body) >= 12:
            self.adobe = body[11]

    def frame(self, marker: int, body: bytes) -> None:
        if self.components:
            raise self.fail("corrupt: it has two frame headers (SOF markers)")
        if len(body) < 6:
            raise self.fail("corrupt: its frame header (SOF) is too short")
        precision = body[0]
        height = (body[1] << 8) | body[2]
        width = (body[3] << 8) | body[4]
        count = body[5]
        if precision != 8:
            raise self.fail(f"an unsupported kind of JPEG: {precision}-bit samples")
        if height == 0:
            raise self.fail("an unsupported kind of JPEG: its height is in a DNL marker")
        check_size(self.name, width, height, self.max_pixels)
        if count not in (1, 3):
            what = "CMYK/YCCK" if count == 4 else f"{count}-component"
            raise self.fail(f"an unsupported kind of JPEG: {what}")
        if len(body) < 6 + 3 * count:
            raise self.fail("corrupt: its frame header (SOF) is too short")
        comps = []
        for i in range(count):
            ident, hv, tq = body[6 + 3 * i : 9 + 3 * i]
            h, v = hv >> 4, hv & 15
            if not (1 <= h <= 4 and 1 <= v <= 4) or tq > 3:
                raise self.fail("corrupt: a component has bad sampling factors or table")
            comps.append(_Component(ident, h, v, tq))
        hmax = max(c.h for c in comps)
        vmax = max(c.v for c in comps)
        for c in comps:
            if hmax % c.h or vmax % c.v:
                raise self.fail("an unsupported kind of JPEG: fractional chroma sampling")
        self.width, self.height, self.hmax, self.vmax = width, height, hmax, vmax
        self.mcux = -(-width // (8 * hmax))
        self.mcuy = -(-height // (8 * vmax))
        for c in comps:
            c.bw, c.bh = self.mcux * c.h, self.mcuy * c.v
            c.dw, c.dh = -(-width * c.h // hmax), -(-height * c.v // vmax)
        self.components = comps
        self.progressive = marker == 0xC2

    # ------------------------------------------------------------------ scans

    def scan(self, header: bytes, pos: int) -> int:
        """Decode the scan whose SOS ``header`` ends at ``pos``; return where it ends."""
        if not self.components:
            raise self.fail("corrupt: a scan (SOS) comes before the frame header (SOF)")
        if not header or len(header) < 1 + 2 * header[0] + 3 or not 1 <= header[0] <= 4:
            raise self.fail("corrupt: bad scan header (SOS)")
        count = header[0]
        by_id = {c.ident: c for c in self.components}
        comps: list[tuple[_Component, _Table | None, _Table | None]] = []
        for i in range(count):
            ident, tables = header[1 + 2 * i], header[2 + 2 * i]
            comp = by_id.get(ident)
            if comp is None or any(comp is c for c, _, _ in comps):
                raise self.fail("corrupt: a scan names an unknown or repeated component")
            comps.append((comp, self.dc_tables[tables >> 4 & 3], self.ac_tables[tables & 3]))
        ss, se = header[1 + 2 * count], header[2 + 2 * count]
        ah, al = header[3 + 2 * count] >> 4, header[3 + 2 * count] & 15
        if self.progressive:
            if ss > se or se > 63 or (ss == 0) != (se == 0) or ah > 13 or al > 13:
                raise self.fail("corrupt: bad progressive scan parameters")
            if ss and count != 1:
                raise self.fail("corrupt: a progressive AC scan has several components")
            kind = (
                ("dc_first" if ah == 0 else "dc_refine")
                if ss == 0
                else ("ac_first" if ah == 0 else "ac_refine")
            )
        else:
            kind, ss, se, al = "sequential", 0, 63, 0
        for comp, dct, act in comps:
            if comp.quant is None:
                comp.quant = self.quant[comp.tq]
                if comp.quant is None:
                    raise self.fail("corrupt: a component's quantisation table is missing")
            if (dct is None and kind in ("sequential", "dc_first")) or (
                act is None and kind in ("sequential", "ac_first", "ac_refine")
            ):
                raise self.fail("corrupt: a scan uses a Huffman table that is not defined")

        match = _SCAN_END.search(self.data, pos)
        end = match.start() if match else len(self.data)
        if count == 1:
            comp = comps[0][0]
            units_x, units_y = -(-comp.dw // 8), -(-comp.dh // 8)
        else:
            units_x, units_y = self.mcux, self.mcuy
        total = units_x * units_y
        per = self.restart or total
        self.scans += 1
        if kind in ("sequential", "dc_first"):
            for comp, _, _ in comps:
                comp.has_dc = True
        # Every block of these kinds takes at least one bit, so a short scan or
        # interval is refused before anything is built for it (a small file
        # cannot make the decoder allocate or walk millions of blocks).
        per_unit = 1 if count == 1 else sum(c.h * c.v for c, _, _ in comps)
        bit_per_block = kind in ("sequential", "dc_first", "dc_refine")
        if bit_per_block and total * per_unit > 8 * (end - pos):
            raise self.fail("truncated: its entropy-coded data ends early")
        if self.canvas is None:
            # The output before the coefficients: made first, it takes the
            # place the last image's pixels left (the allocator would otherwise
            # split that block for whatever came first, and grow the memory).
            self.canvas = Canvas(self.width * self.height * len(self.components))
        for comp, _, _ in comps:
            comp.fresh = comp.coefs is None
            if comp.coefs is None:
                comp.coefs = array.array("h", [0]) * (64 * comp.bw * comp.bh)
                comp.view = memoryview(comp.coefs)
        # Restart markers split the data into intervals, found one at a time.
        bounds = _RESTART.finditer(self.data, pos, end)
        start: int | None = pos
        for first in range(0, total, per):
            if start is None:
                raise self.fail("truncated: its entropy-coded data ends early")
            marker = next(bounds, None)
            stop = marker.start() if marker else end
            size = stop - start - self.data.count(b"\xff\x00", start, stop)  # once unstuffed
            if bit_per_block and (min(total, first + per) - first) * per_unit > 8 * size:
                raise self.fail("truncated: its entropy-coded data ends early")
            self.eobrun = 0
            try:
                used = self.interval(
                    _Entropy(self.data, start, stop), comps, kind, ss, se, ah, al,
                    range(first, min(total, first + per)), units_x,
                )  # fmt: skip
            except IndexError:
                raise self.fail("corrupt or truncated: bad entropy-coded data") from None
            if used > 8 * size:
                raise self.fail("truncated: its entropy-coded data ends early")
            start = marker.end() if marker else None
        for comp, _, _ in comps:
            comp.fresh = False
        return end

    def interval(
        self,
        data: _Entropy,
        comps: list[tuple[_Component, _Table | None, _Table | None]],
        kind: str,
        ss: int,
        se: int,
        ah: int,
        al: int,
        span: range,
        units_x: int,
    ) -> int:
        """Decode units ``span`` of a scan from one restart interval; return bits used."""
        w, limit = data.window(0)
        p = 0
        zz, mask, half, fm = _ZIGZAG, _MASK, _HALF, _FAST_MASK
        units = _units(comps, span, units_x)  # (component index, block index), in order
        views = [c.view for c, _, _ in comps]
        dirty = [not c.fresh for c, _, _ in comps]  # blocks to zero before a sequential scan
        # (plain, fast) per component; a table a kind of scan does not use may be None
        dcs = [d or ([], []) for _, d, _ in comps]
        acs = [a or ([], []) for _, _, a in comps]
        pred = [0] * len(comps)

        if kind == "sequential":
            for ci, idx in units:
                if p > limit:
                    w, limit = data.window(p >> 3)
                    p &= 7
                view = views[ci]
                assert view is not None
                blk = view[idx << 6 : (idx << 6) + 64]
                if dirty[ci]:
                    blk[:] = _ZERO_BLOCK
                dct = dcs[ci]
                t = dct[1][(w[p >> 3] >> (12 - (p & 7))) & fm]
                if t:
                    p += t & 31
                    pred[ci] += t >> 5
                else:  # code and extra bits longer than the fast table covers
                    t = dct[0][(w[p >> 3] >> (8 - (p & 7))) & 0xFFFF]
                    p += t >> 8
                    s = t & 255
                    if s:
                        v = (w[p >> 3] >> (24 - (p & 7) - s)) & mask[s]
                        p += s
                        pred[ci] += v - mask[s] if v < half[s] else v
                v = pred[ci]
                blk[0] = v if -32768 <= v <= 32767 else _wrap16(v)
                plain, fast = acs[ci]
                k = 1
                while k < 64:
                    t = fast[(w[p >> 3] >> (12 - (p & 7))) & fm]
                    v = t >> 9
                    if v:
                        p += t & 31
                        k += (t >> 5) & 15
                        blk[zz[k]] = v
                        k += 1
                        continue
                    if t:
                        p += t & 31
                        s = 0
                    else:
                        t = plain[(w[p >> 3] >> (8 - (p & 7))) & 0xFFFF]
                        p += t >> 8
                        s = t & 15
                        t = (t & 0xF0) << 1
                    if s:
                        k += t >> 5
                        v = (w[p >> 3] >> (24 - (p & 7) - s)) & mask[s]
                        p += s
                        blk[zz[k]] = v - mask[s] if v < half[s] else v
                        k += 1
                    elif t & 480 == 480:  # ZRL: sixteen zeros
                        k += 16
                    else:
                        break
            return data.used(p)

        if kind == "dc_first":
            for ci, idx in units:
                if p > limit:
                    w, limit = data.window(p >> 3)
                    p &= 7
                t = dcs[ci][0][(w[p >> 3] >> (8 - (p & 7))) & 0xFFFF]
                p += t >> 8
                s = t & 255
                if s:
                    v = (w[p >> 3] >> (24 - (p & 7) - s)) & mask[s]
                    p += s
                    if v < half[s]:
                        v -= mask[s]
                    pred[ci] += v
                view = views[ci]
                assert view is not None
                view[idx << 6] = _wrap16(pred[ci] << al)
            return data.used(p)

        if kind == "dc_refine":
            bit = 1 << al
            for ci, idx in units:
                if p > limit:
                    w, limit = data.window(p >> 3)
                    p &= 7
                if (w[p >> 3] >> (23 - (p & 7))) & 1:
                    view = views[ci]
                    assert view is not None
                    view[idx << 6] |= bit
                p += 1
            return data.used(p)

        table, fast = acs[0]
        store = views[0]
        assert store is not None
        eobrun = 0
        if kind == "ac_first":
            scale = 1 << al
            for _, idx in units:
                if eobrun:
                    eobrun -= 1
                    continue
                if p > limit:
                    w, limit = data.window(p >> 3)
                    p &= 7
                blk = store[idx << 6 : (idx << 6) + 64]
                k = ss
                while k <= se:
                    t = fast[(w[p >> 3] >> (12 - (p & 7))) & fm]
                    v = t >> 9
                    if v:
                        p += t & 31
                        k += (t >> 5) & 15
                        v *= scale
                    else:
                        t = table[(w[p >> 3] >> (8 - (p & 7))) & 0xFFFF]
                        p += t >> 8
                        s = t & 15
                        r = (t >> 4) & 15
                        if not s:
                            if r == 15:
                                k += 16
                                continue
                            eobrun = 1 << r
                            if r:
                                eobrun += (w[p >> 3] >> (24 - (p & 7) - r)) & mask[r]
                                p += r
                            eobrun -= 1
                            break
                        k += r
                        v = (w[p >> 3] >> (24 - (p & 7) - s)) & mask[s]
                        p += s
                        v = (v - mask[s] if v < half[s] else v) * scale
                    try:
                        blk[zz[k]] = v
                    except ValueError:  # past 16 bits: corrupt data only
                        blk[zz[k]] = _wrap16(v)
                    k += 1
            return data.used(p)

        # ac_refine (libjpeg's decode_mcu_AC_refine, step by step)
        p1 = 1 << al
        m1 = -1 << al
        for _, idx in units:
            if p > limit:
                w, limit = data.window(p >> 3)
                p &= 7
            blk = store[idx << 6 : (idx << 6) + 64]
            vals = blk.tolist()  # reads from a list are twice as fast as from the view
            k = ss
            if not eobrun:
                while k <= se:
                    t = table[(w[p >> 3] >> (8 - (p & 7))) & 0xFFFF]
                    p += t >> 8
                    s = t & 15
                    r = (t >> 4) & 15
                    if s:
                        # s should be 1; libjpeg warns and carries on, as here
                        s = p1 if (w[p >> 3] >> (23 - (p & 7))) & 1 else m1
                        p += 1
                    elif r != 15:
                        eobrun = 1 << r
                        if r:
                            eobrun += (w[p >> 3] >> (24 - (p & 7) - r)) & mask[r]
                            p += r
                        break
                    while k <= se:
                        pos = zz[k]
                        c = vals[pos]
                        if c:
                            if (w[p >> 3] >> (23 - (p & 7))) & 1 and not c & p1:
                                c = c + p1 if c >= 0 else c + m1
                                blk[pos] = c if -32768 <= c <= 32767 else _wrap16(c)
                            p += 1
                        else:
                            r -= 1
                            if r < 0:
                                break
                        k += 1
                    if s:
                        blk[zz[k]] = s
                    k += 1
            if eobrun:
                while k <= se:
                    pos = zz[k]
                    c = vals[pos]
                    if c:
                        if (w[p >> 3] >> (23 - (p & 7))) & 1 and not c & p1:
                            c = c + p1 if c >= 0 else c + m1
                            blk[pos] = c if -32768 <= c <= 32767 else _wrap16(c)
                        p += 1
                    k += 1
                eobrun -= 1
        return data.used(p)

    # ------------------------------------------------------------------ pixels

    def host_can_render(self) -> bool:
        """Whether ``_jpeg_host`` will do the pixel work: inside a component, for
        an image big enough to pay for a graph, with upsampling it implements
        (libjpeg's fancy 2x2, 2x1 and 1x2, used when the plane is over 2 wide)."""
        if _model._active_host is None or self.width * self.height < HOST_MIN_PIXELS:
            return False
        for c in self.components:
            fh, fv = self.hmax // c.h, self.vmax // c.v
            if fh > 2 or fv > 2 or (fh == 2 and c.dw <= 2):
                return False
        return True

    def render_on_host(self, ycc: bool, out: memoryview) -> bool:
        """Write the pixels from ``_jpeg_host`` into ``out``; False (the pure
        path then) if a coefficient is too large for its arithmetic or the
        host fails."""
        planes: list[_jpeg_host.Plane] = []
        for c in self.components:
            assert c.quant is not None and c.view is not None
            fh, fv = self.hmax // c.h, self.vmax // c.v
            planes.append((c.view.cast("B"), c.quant, c.bw, c.bh, c.dw, c.dh, fh, fv))
        try:
            return _jpeg_host.render(planes, self.width, self.height, 8 * self.vmax, ycc, out)
        except WasiNNError:
            return False

    def plane(self, comp: _Component) -> bytes:
        """The component's samples (bw*8 x bh*8), through libjpeg's islow IDCT."""
        stride = comp.bw * 8
        canvas = Canvas(stride * comp.bh * 8)
        out = canvas.view
        q, coefs = comp.quant, comp.coefs
        assert q is not None and coefs is not None
        rl = _RL
        q0 = q[0]
        zero63 = _ZERO63
        for idx in range(comp.bw * comp.bh):
            by, bx = divmod(idx, comp.bw)
            base = by * 8 * stride + bx * 8
            first = idx << 6
            if coefs[first + 1 : first + 64] == zero63:
                row = bytes((rl[((coefs[first] * q0 * 4 + 16) >> 5) & 1023],)) * 8
                for r in range(8):
                    o = base + r * stride
                    out[o : o + 8] = row
                continue
            d = [a * b for a, b in zip(coefs[first : first + 64], q, strict=True)]
            # Pass 1: columns, kept scaled up by 4 (PASS1_BITS = 2).
            for c in range(8):
                d1, d2, d3, d4, d5, d6, d7 = d[c + 8 : 64 : 8]
                if not (d1 or d2 or d3 or d4 or d5 or d6 or d7):
                    d[c:64:8] = [d[c] << 2] * 8
                    continue
                z1 = (d2 + d6) * 4433
                t2 = z1 - d6 * 15137
                t3 = z1 + d2 * 6270
                t0 = ((d[c] + d4) << 13) + 1024
                t1 = ((d[c] - d4) << 13) + 1024
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
                d[c : 64 : 8] = [
                    (t10 + o3) >> 11, (t11 + o2) >> 11, (t12 + o1) >> 11, (t13 + o0) >> 11,
                    (t13 - o0) >> 11, (t12 - o1) >> 11, (t11 - o2) >> 11, (t10 - o3) >> 11,
                ]  # fmt: skip
            # Pass 2: rows, descaled by 2^18 (CONST_BITS + PASS1_BITS + 3).
            o = base
            for r in range(0, 64, 8):
                w0, w1, w2, w3, w4, w5, w6, w7 = d[r : r + 8]
                if not (w1 or w2 or w3 or w4 or w5 or w6 or w7):
                    out[o : o + 8] = bytes((rl[((w0 + 16) >> 5) & 1023],)) * 8
                    o += stride
                    continue
                z1 = (w2 + w6) * 4433
                t2 = z1 - w6 * 15137
                t3 = z1 + w2 * 6270
                t0 = ((w0 + w4) << 13) + 131072
                t1 = ((w0 - w4) << 13) + 131072
                t10, t13, t11, t12 = t0 + t3, t0 - t3, t1 + t2, t1 - t2
                z5 = (w7 + w3 + w5 + w1) * 9633
                z1 = (w7 + w1) * -7373
                z2 = (w5 + w3) * -20995
                z3 = (w7 + w3) * -16069 + z5
                z4 = (w5 + w1) * -3196 + z5
                o0 = w7 * 2446 + z1 + z3
                o1 = w5 * 16819 + z2 + z4
                o2 = w3 * 25172 + z2 + z3
                o3 = w1 * 12299 + z1 + z4
                out[o : o + 8] = bytes((
                    rl[(t10 + o3) >> 18 & 1023], rl[(t11 + o2) >> 18 & 1023],
                    rl[(t12 + o1) >> 18 & 1023], rl[(t13 + o0) >> 18 & 1023],
                    rl[(t13 - o0) >> 18 & 1023], rl[(t12 - o1) >> 18 & 1023],
                    rl[(t11 - o2) >> 18 & 1023], rl[(t10 - o3) >> 18 & 1023],
                ))  # fmt: skip
                o += stride
        return canvas.finish()

    def full(self, comp: _Component) -> bytes:
        """The component upsampled to the image size, as libjpeg does by default.
        The component's coefficients are dropped once its samples exist."""
        width, height = self.width, self.height
        samples = self.plane(comp)
        comp.view = comp.coefs = None
        stride = comp.bw * 8
        fh, fv = self.hmax // comp.h, self.vmax // comp.v
        dw, dh = comp.dw, comp.dh
        if fh == fv == 1 and stride == width and len(samples) == width * height:
            return samples  # nothing to crop
        view = memoryview(samples)
        rows = [view[y * stride : y * stride + dw] for y in range(dh)]
        canvas = Canvas(width * height)
        out = canvas.view
        for y in range(height):
            out[y * width : (y + 1) * width] = self.upsampled_row(rows, y, fh, fv)
        return canvas.finish()

    def upsampled_row(
        self, rows: list[memoryview], y: int, fh: int, fv: int
    ) -> memoryview | bytes | bytearray:
        """Row ``y`` of the image's size from the component's sample ``rows``:
        libjpeg's triangle filter for 2x2, 2x1 and 1x2 (on planes over 2
        samples wide), replication for other integral ratios."""
        width, dh, dw = self.width, len(rows), len(rows[0])
        if fh == fv == 1:
            return rows[y][:width]
        if fh == 2 and fv == 2 and dw > 2:
            near = rows[y >> 1]
            other = rows[max(0, (y >> 1) - 1)] if y & 1 == 0 else rows[min(dh - 1, (y >> 1) + 1)]
            # Vertical sums carry a factor of 4: libjpeg's h2v2 rounding.
            return _widen([3 * a + b for a, b in zip(near, other, strict=True)], 8, 7, 4, width)
        if fh == 2 and fv == 1 and dw > 2:
            return _widen(rows[y], 1, 2, 2, width)
        if fh == 1 and fv == 2:
            near = rows[y >> 1]
            if y & 1 == 0:
                other, bias = rows[max(0, (y >> 1) - 1)], 1
            else:
                other, bias = rows[min(dh - 1, (y >> 1) + 1)], 2
            return bytes([(3 * a + b + bias) >> 2 for a, b in zip(near, other, strict=True)])[
                :width
            ]
        # Other integral ratios: replicate each sample fh x fv times.
        row = rows[min(dh - 1, y // fv)]
        line = bytearray(fh * dw)
        for i in range(fh):
            line[i::fh] = row
        return line[:width]

    def output(self) -> tuple[int, int, int, bytes, dict[str, object]]:
        info: dict[str, object] = {"orientation": self.orientation}
        comps = self.components
        width, height = self.width, self.height
        rgb_ids = [c.ident for c in comps] == [82, 71, 66]
        # libjpeg's order: a JFIF marker means YCbCr, else Adobe's transform flag
        # decides, else component ids 'R', 'G', 'B' mean RGB.
        rgb = not self.jfif and (self.adobe == 0 or (self.adobe is None and rgb_ids))
        canvas = self.canvas
        assert canvas is not None  # made by the first scan
        if self.host_can_render() and self.render_on_host(len(comps) == 3 and not rgb, canvas.view):
            return width, height, len(comps), canvas.finish(), info
        if len(comps) == 1:
            canvas.view[:] = self.full(comps[0])
            return width, height, 1, canvas.finish(), info
        planes = [self.full(c) for c in comps]
        if rgb:
            interleave(canvas.view, 0, planes)
            return width, height, 3, canvas.finish(), info
        clamp = _CLAMP
        cr_r, cb_b, g = _CR_R, _CB_B, _G
        for start in range(0, width * height, _COLOUR_CHUNK):
            ys, cbs, crs = (p[start : start + _COLOUR_CHUNK] for p in planes)
            rgb_planes = (
                bytes([clamp[y + cr_r[cr]] for y, cr in zip(ys, crs, strict=True)]),
                bytes(
                    [clamp[y + g[(cb << 8) | cr]] for y, cb, cr in zip(ys, cbs, crs, strict=True)]
                ),
                bytes([clamp[y + cb_b[cb]] for y, cb in zip(ys, cbs, strict=True)]),
            )
            interleave(canvas.view, 3 * start, rgb_planes)
        return width, height, 3, canvas.finish(), info


# Pixels converted from YCbCr at a time (lists of ints per pixel stay this short).
_COLOUR_CHUNK = 1 << 16
_ZERO63 = array.array("h", bytes(126))
# Unstuffed bytes per window of ``_windows`` words (more than _MARGIN), and more
# than one block can take (even from corrupt data, short of a bad code, which
# ends the scan).
_WINDOW = 1 << 16
_MARGIN = 1 << 12


class _Entropy:
    """One restart interval's entropy-coded data (``data[start:stop]``), unstuffed
    and turned into ``_windows`` words a window at a time: the words of a whole
    scan at once would be a Python int per byte of the file."""

    def __init__(self, data: bytes, start: int, stop: int) -> None:
        self.data, self.next, self.stop = data, start, stop
        self.buf = b""
        self.base = 0  # offset of buf[0] in the unstuffed data

    def window(self, skip: int) -> tuple[list[int], int]:
        """The words from ``skip`` bytes past the current window's start, and
        the bit position past which a block must ask for the next window."""
        self.base += skip
        buf = self.buf[skip:]
        while len(buf) < _WINDOW and self.next < self.stop:
            end = min(self.stop, self.next + _WINDOW)
            if end < self.stop and self.data[end - 1] == 0xFF:
                end += 1  # keep a stuffed 0xFF 0x00 together
            buf += self.data[self.next : end].replace(b"\xff\x00", b"\xff")
            self.next = end
        self.buf = buf
        limit = 8 * (len(buf) - _MARGIN) if self.next < self.stop else 1 << 62
        return _windows(buf), limit

    def used(self, p: int) -> int:
        """Bits used so far, ``p`` being the position in the current window."""
        return 8 * self.base + p


def _units(
    comps: list[tuple[_Component, _Table | None, _Table | None]], span: range, units_x: int
) -> Iterator[tuple[int, int]]:
    """(component index, block index) of every block of the units in ``span``,
    in scan order (for one component, ranges of indices chained at C speed)."""
    if len(comps) == 1:
        bw = comps[0][0].bw
        rows = range(span.start // units_x, -(-span.stop // units_x))
        return zip(
            itertools.repeat(0),
            itertools.chain.from_iterable(
                range(y * bw + max(0, span.start - y * units_x),
                      y * bw + min(units_x, span.stop - y * units_x))
                for y in rows
            ),
        )  # fmt: skip
    layout = [
        (ci, dy * c.bw + dx, c.h, c.v * c.bw)
        for ci, (c, _, _) in enumerate(comps)
        for dy in range(c.v)
        for dx in range(c.h)
    ]
    return (
        (ci, my * row + mx * h + off)
        for my, mx in map(divmod, span, itertools.repeat(units_x))
        for ci, off, h, row in layout
    )


def _widen(
    row: Sequence[int], left_bias: int, right_bias: int, shift: int, width: int
) -> bytearray:
    """One row doubled in width by libjpeg's triangle filter: each sample
    becomes ``(3 * c + neighbour + bias) >> shift``, the left neighbour for the
    first copy, the right one for the second (edges repeat). h2v1 uses biases
    1 and 2 with shift 2; h2v2 passes rows already weighted 3:1 vertically,
    with biases 8 and 7 and shift 4."""
    line = bytearray(2 * len(row))
    line[0::2] = bytes(
        [(3 * c + n + left_bias) >> shift for c, n in zip(row, [row[0], *row[:-1]], strict=False)]
    )
    line[1::2] = bytes(
        [(3 * c + n + right_bias) >> shift for c, n in zip(row, [*row[1:], row[-1]], strict=False)]
    )
    return line[:width]


def encode_jpeg(pixels: bytes, width: int, height: int, channels: int, quality: int) -> bytes:
    """Placeholder until the libjpeg-turbo codec lands."""
    raise ImageError("JPEG encoding is not supported yet")
