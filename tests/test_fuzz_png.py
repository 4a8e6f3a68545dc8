"""Fuzz: the digits app's PNG reader (``apps/digits/png.py``, ``png.read_gray``).

Images this module encodes (every colour type with 8-bit samples, every
filter, IDAT split in pieces, ancillary chunks) decode to exactly their gray
levels; unsupported formats are refused with ``PNGError``; mutated files (chunk
level, scanline level, byte level) give pixels in range or ``PNGError``,
quickly. See fuzzing.py for budgets and limits.
"""

from __future__ import annotations

import io
import math
import struct
import sys
import zlib
from fractions import Fraction
from typing import Any

import pytest
from fuzzing import BYTE_OPS, FUZZ, ROOT, Ops, edit_chunks, mutate, ran, time_limit
from hypothesis import given
from hypothesis import strategies as st

pytestmark = pytest.mark.fuzz

PNG_SAMPLES = ROOT / "apps" / "digits" / "samples"
# The app's reader, imported the way its own tests do (the app directory on sys.path).
sys.path.insert(0, str(ROOT / "apps" / "digits"))
import png  # noqa: E402

CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}


def paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def filter_rows(pixels: bytes, width: int, height: int, bpp: int, filters: list[int]) -> bytes:
    """PNG scanlines of ``pixels``, row y filtered with ``filters[y % len(filters)]``."""
    stride = width * bpp
    out = bytearray()
    prev = bytes(stride)
    for y in range(height):
        row = pixels[y * stride : (y + 1) * stride]
        kind = filters[y % len(filters)]
        out.append(kind)
        for i in range(stride):
            a = row[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            predicted = (0, a, b, (a + b) >> 1, paeth(a, b, c))[kind]
            out.append((row[i] - predicted) & 0xFF)
        prev = row
    return bytes(out)


def chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png_file(
    width: int,
    height: int,
    colour: int,
    scanlines: bytes,
    *,
    depth: int = 8,
    interlace: int = 0,
    pieces: int = 1,
    level: int = 6,
    extra: tuple[bytes, ...] = (),
) -> bytes:
    header = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, interlace)
    packed = zlib.compress(scanlines, level)
    step = max(1, -(-len(packed) // pieces))
    idat = b"".join(chunk(b"IDAT", packed[i : i + step]) for i in range(0, len(packed), step))
    text = b"".join(chunk(b"tEXt", b"k\0" + e) for e in extra)
    return png.SIGNATURE + chunk(b"IHDR", header) + text + idat + chunk(b"IEND", b"")


def luma(pixels: bytes, width: int, height: int, colour: int) -> list[int]:
    """Gray levels: the first sample, or BT.601 luma rounded half up (alpha ignored)."""
    ch = CHANNELS[colour]
    out = []
    for p in range(width * height):
        px = pixels[p * ch : (p + 1) * ch]
        if ch <= 2:
            out.append(px[0])
        else:
            exact = Fraction(299 * px[0] + 587 * px[1] + 114 * px[2], 1000)
            out.append(math.floor(exact + Fraction(1, 2)))
    return out


def read_png(data: bytes) -> Any:
    """(w, h, pixels), or None for PNGError; any other exception fails the example."""
    with time_limit():
        try:
            w, h, pixels = png.read_gray(data, "fuzzed.png")
        except png.PNGError as exc:
            assert "fuzzed.png" in str(exc), exc
            return None
    assert type(w) is int and type(h) is int and w >= 0 and h >= 0
    assert len(pixels) == w * h
    assert all(type(p) is int and 0 <= p <= 255 for p in pixels)
    return w, h, pixels


@FUZZ
@given(
    st.integers(1, 12),
    st.integers(1, 12),
    st.sampled_from(sorted(CHANNELS)),
    st.data(),
    st.integers(1, 3),
    st.integers(0, 9),
    st.lists(st.binary(max_size=8), max_size=2),
)
def test_png_generated_images_decode_exactly(
    width: int,
    height: int,
    colour: int,
    data: st.DataObject,
    pieces: int,
    level: int,
    extra: list[bytes],
) -> None:
    bpp = CHANNELS[colour]
    n = width * height * bpp
    pixels = data.draw(st.binary(min_size=n, max_size=n), label="pixels")
    filters = data.draw(st.lists(st.integers(0, 4), min_size=1, max_size=height), label="filters")
    ran(f"colour {colour}")
    scanlines = filter_rows(pixels, width, height, bpp, filters)
    encoded = png_file(
        width, height, colour, scanlines, pieces=pieces, level=level, extra=tuple(extra)
    )
    got = read_png(encoded)
    assert got == (width, height, luma(pixels, width, height, colour))


@FUZZ
@given(
    st.integers(1, 6), st.integers(1, 6),
    st.one_of(
        st.tuples(st.just("colour"), st.sampled_from((1, 3, 5, 7, 255))),
        st.tuples(st.just("depth"), st.sampled_from((0, 1, 2, 4, 16, 255))),
        st.tuples(st.just("interlace"), st.sampled_from((1, 2, 255))),
    ),
)  # fmt: skip
def test_png_unsupported_formats_are_refused(
    width: int, height: int, what: tuple[str, int]
) -> None:
    ran(what[0])
    colour, depth, interlace = 0, 8, 0
    if what[0] == "colour":
        colour = what[1]
    elif what[0] == "depth":
        depth = what[1]
    else:
        interlace = what[1]
    scanlines = filter_rows(bytes(width * height), width, height, 1, [0])
    data = png_file(width, height, colour, scanlines, depth=depth, interlace=interlace)
    with time_limit(), pytest.raises(png.PNGError):
        png.read_gray(data, "x.png")


def _seed_pngs() -> tuple[bytes, ...]:
    """The app's sample digits, plus colour images with every filter (for deeper mutations)."""
    samples = tuple(p.read_bytes() for p in sorted(PNG_SAMPLES.glob("*.png")))
    made = []
    for i, colour in enumerate((0, 2, 4, 6)):
        width, height = 5 + i, 6
        bpp = CHANNELS[colour]
        pixels = bytes((x * 37 + i * 11) % 256 for x in range(width * height * bpp))
        rows = filter_rows(pixels, width, height, bpp, [0, 1, 2, 3, 4])
        made.append(png_file(width, height, colour, rows))
    return samples + tuple(made)


PNG_SEEDS = _seed_pngs()
IHDR_VALUES = st.sampled_from((0, 1, 2, 3, 4, 6, 7, 8, 16, 255, 2**31 - 1, 2**32 - 1))
CHUNK_KINDS = st.sampled_from((b"IHDR", b"IDAT", b"IEND", b"tEXt", b"PLTE", b"abcd"))
PNG_OPS = st.one_of(
    st.tuples(st.just("ihdr"), st.integers(0, 6), IHDR_VALUES | st.integers(0, 64)),
    st.tuples(st.just("drop"), st.integers(0, 99)),
    st.tuples(st.just("dup"), st.integers(0, 99)),
    st.tuples(st.just("swap"), st.integers(0, 99)),
    st.tuples(st.just("insert"), st.integers(0, 99), CHUNK_KINDS, st.binary(max_size=20)),
    st.tuples(st.just("rows"), BYTE_OPS),
    st.tuples(st.just("body"), st.integers(0, 99), BYTE_OPS),
    st.tuples(st.just("split"), st.integers(0, 99), st.integers(0, 200)),
    st.tuples(st.just("bad-crc"), st.integers(0, 99)),
)  # fmt: skip


def png_chunks(data: bytes) -> list[list[Any]]:
    out, pos = [], len(png.SIGNATURE)
    while pos + 12 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        out.append([kind, data[pos + 8 : pos + 8 + length], None])
        pos += 12 + length
    return out


def mutate_png(data: bytes, ops: Ops) -> bytes:
    """Chunk-level ``ops`` (from PNG_OPS); CRCs are recomputed unless an op spoils one."""
    chunks = png_chunks(data)
    for op in ops:
        kind = op[0]
        i = op[1] % len(chunks) if chunks and kind not in ("rows", "ihdr") else 0
        if kind == "ihdr":
            for c in chunks:
                if c[0] == b"IHDR" and len(c[1]) == 13:
                    fields = list(struct.unpack(">IIBBBBB", c[1]))
                    fields[op[1]] = op[2] % (2**32 if op[1] < 2 else 256)
                    c[1] = struct.pack(">IIBBBBB", *fields)
                    break
        elif kind == "rows":
            idat = b"".join(c[1] for c in chunks if c[0] == b"IDAT")
            try:
                rows = zlib.decompress(idat)
            except zlib.error:
                continue
            packed = zlib.compress(mutate(rows, [op[1]], (rows,)))
            first = next((j for j, c in enumerate(chunks) if c[0] == b"IDAT"), len(chunks))
            chunks = [c for c in chunks if c[0] != b"IDAT"]
            chunks.insert(first, [b"IDAT", packed, None])
        elif not chunks or edit_chunks(chunks, op, i):
            continue
        elif kind == "insert":
            chunks.insert(i, [op[2], op[3], None])
        elif kind == "split":
            body = chunks[i][1]
            cut = op[2] % (len(body) + 1)
            chunks[i : i + 1] = [[chunks[i][0], body[:cut], None], [chunks[i][0], body[cut:], None]]
        elif kind == "bad-crc":
            chunks[i][2] = (zlib.crc32(chunks[i][0] + chunks[i][1]) + 1) & 0xFFFFFFFF
    out = bytearray(png.SIGNATURE)
    for kind, body, crc in chunks:
        crc = zlib.crc32(kind + body) if crc is None else crc
        out += struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)
    return bytes(out)


@FUZZ
@given(st.integers(0, 99), st.lists(PNG_OPS, max_size=5), st.lists(BYTE_OPS, max_size=3))
def test_png_reader_survives_mutations(seed: int, ops: Ops, then: Ops) -> None:
    data = mutate(mutate_png(PNG_SEEDS[seed % len(PNG_SEEDS)], ops), then, PNG_SEEDS)
    ran("decoded" if read_png(data) is not None else "refused")


def test_harness_png_encoder_agrees_with_pillow() -> None:
    """The PNG oracle above writes what Pillow reads back (so a mismatch is the reader's)."""
    pil = pytest.importorskip("PIL.Image")
    for colour, mode in ((0, "L"), (2, "RGB"), (4, "LA"), (6, "RGBA")):
        bpp = CHANNELS[colour]
        pixels = bytes((i * 53 + 7) % 256 for i in range(7 * 5 * bpp))
        data = png_file(7, 5, colour, filter_rows(pixels, 7, 5, bpp, [0, 1, 2, 3, 4]), pieces=2)
        with pil.open(io.BytesIO(data)) as image:
            assert image.mode == mode and image.tobytes() == pixels


def test_harness_png_mutator_keeps_unmutated_files() -> None:
    assert all(mutate_png(seed, []) == seed for seed in PNG_SEEDS)
    assert mutate_png(PNG_SEEDS[0], [("bad-crc", 0)]) != PNG_SEEDS[0]
