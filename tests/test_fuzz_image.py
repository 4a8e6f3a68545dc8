"""Fuzz: ``wasinn.image.decode`` on PNG, PGM and PPM files.

Images this module encodes (every PNG colour type and bit depth, every filter,
Adam7, IDAT split in pieces, ancillary chunks; PGM/PPM at any maxval) decode
to exactly the pixels the encoder was given, mapped to 8 bits as wasinn.image
documents; mutated files (chunk level, scanline level, byte level) give a
well-formed tensor or ``ImageError``, quickly: any other exception is a bug;
mutated PNGs go through a real component too (libspng in the guest).
See fuzzing.py for budgets and limits. (JPEG is fuzzed with its decoder.)
"""

from __future__ import annotations

import io
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from fuzzing import BYTE_OPS, FUZZ, ROOT, Ops, edit_chunks, mutate, ran, time_limit
from hypothesis import given, settings
from hypothesis import strategies as st
from test_image import DEPTHS, SAMPLES, encode_png

from wasinn import Tensor, image
from wasinn.image import ImageError

pytestmark = pytest.mark.fuzz

PNG_SIG = b"\x89PNG\r\n\x1a\n"
DIGIT_SAMPLES = ROOT / "apps" / "digits" / "samples"
CASES = [(c, d) for c in sorted(DEPTHS) for d in DEPTHS[c]]


def read_image(data: bytes, **kw: Any) -> Tensor | None:
    """The decoded tensor, or None for ImageError; any other exception fails the example."""
    with time_limit():
        try:
            t = image.decode(data, name="fuzzed.img", **kw)
        except ImageError as exc:
            assert "fuzzed.img" in str(exc), exc
            return None
    h, w, c = t.shape
    assert t.dtype == "u8" and h > 0 and w > 0 and 1 <= c <= 4
    assert len(t.tobytes()) == h * w * c
    return t


def expected_8bit(colour: int, depth: int, samples: list[int], plte: bytes | None) -> bytes:
    """What wasinn.image documents: high byte of 16 bits, gray scaled, palette expanded."""
    if colour == 3:
        assert plte is not None
        full = plte + bytes(768 - len(plte))
        return bytes(b for i in samples for b in full[3 * i : 3 * i + 3])
    if depth == 16:
        return bytes(v >> 8 for v in samples)
    return bytes(v * (255 // ((1 << depth) - 1)) for v in samples)


@FUZZ
@given(
    st.sampled_from(CASES),
    st.integers(1, 12),
    st.integers(1, 12),
    st.booleans(),
    st.integers(0, 2**16),
    st.integers(1, 3),
    st.data(),
)
def test_png_generated_images_decode_exactly(
    case: tuple[int, int],
    width: int,
    height: int,
    interlace: bool,
    seed: int,
    pieces: int,
    data: st.DataObject,
) -> None:
    colour, depth = case
    ran(f"colour {colour} depth {depth}{' adam7' if interlace else ''}")
    n = width * height * SAMPLES[colour]
    top = (1 << depth) - 1 if colour != 3 else min(255, (1 << depth) - 1)
    samples = data.draw(st.lists(st.integers(0, top), min_size=n, max_size=n), label="samples")
    plte = None
    if colour == 3:
        entries = data.draw(st.integers(1, 1 << depth), label="palette entries")
        plte = data.draw(st.binary(min_size=3 * entries, max_size=3 * entries), label="palette")
    encoded = encode_png(
        width, height, colour, depth, samples, interlace=interlace, plte=plte, seed=seed,
        idat_pieces=pieces,
    )  # fmt: skip
    got = read_image(encoded)
    assert got is not None
    channels = 3 if colour == 3 else SAMPLES[colour]
    assert got.shape == (height, width, channels)
    assert got.tobytes() == expected_8bit(colour, depth, samples, plte)


@FUZZ
@given(
    st.sampled_from(("P5", "P6")),
    st.integers(1, 9),
    st.integers(1, 9),
    st.integers(1, 65535),
    st.data(),
    st.sampled_from((" ", "\n", "\t", "\n# comment\n", " #c\r\n ")),
)
def test_ppm_generated_images_decode_exactly(
    magic: str, width: int, height: int, maxval: int, data: st.DataObject, sep: str
) -> None:
    ran(f"{magic} {'16' if maxval > 255 else '8'}-bit")
    n = width * height * (1 if magic == "P5" else 3)
    values = data.draw(st.lists(st.integers(0, maxval), min_size=n, max_size=n), label="values")
    body = bytes(values) if maxval < 256 else b"".join(struct.pack(">H", v) for v in values)
    encoded = f"{magic}{sep}{width}{sep}{height}{sep}{maxval}\n".encode() + body
    got = read_image(encoded)
    assert got is not None and got.shape == (height, width, 1 if magic == "P5" else 3)
    assert got.tobytes() == bytes(min(255, round(v / maxval * 255)) for v in values)


@FUZZ
@given(
    st.integers(1, 6),
    st.integers(1, 6),
    st.integers(0, 255),
    st.integers(0, 255),
    st.integers(0, 255),
)
def test_png_impossible_headers_are_refused(
    width: int, height: int, depth: int, colour: int, interlace: int
) -> None:
    valid = colour in DEPTHS and depth in DEPTHS[colour] and interlace in (0, 1)
    if valid:
        depth = 3  # never a valid depth: keep every example an impossible header
    ran("impossible header")
    header = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, interlace)
    data = PNG_SIG + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(bytes(200)))
    with time_limit(), pytest.raises(ImageError, match="fuzzed.img is corrupt"):
        image.decode(data + _chunk(b"IEND", b""), name="fuzzed.img")


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _seed_files() -> tuple[bytes, ...]:
    """The digits samples, every colour type/depth with every filter, interlaced
    ones, a palette with tRNS, Pillow-written files, and PGM/PPM files."""
    files = [p.read_bytes() for p in sorted(DIGIT_SAMPLES.glob("*.png"))]
    for i, (colour, depth) in enumerate(CASES):
        width, height = 5 + i % 4, 6
        n = width * height * SAMPLES[colour]
        top = (1 << depth) - 1
        samples = [(x * 37 + i * 11) % (top + 1) for x in range(n)]
        plte = bytes(v % 256 for v in range(3 * (1 << depth))) if colour == 3 else None
        files.append(encode_png(width, height, colour, depth, samples, plte=plte, seed=i))
        files.append(
            encode_png(width, height, colour, depth, samples, plte=plte, seed=i, interlace=True)
        )
    files.append(encode_png(4, 4, 3, 8, list(range(16)), plte=bytes(48), trns=b"\x00\x80"))
    pil = pytest.importorskip("PIL.Image")
    for mode in ("RGB", "P", "1"):
        out = io.BytesIO()
        pil.new("RGB", (9, 7), (10, 200, 30)).convert(mode).save(out, "PNG")
        files.append(out.getvalue())
    files.append(b"P5\n3 2\n255\n" + bytes(range(6)))
    files.append(b"P6 2 2\n# c\n1000\n" + bytes(range(24)))
    return tuple(files)


SEEDS = _seed_files()
PNG_SEEDS = tuple(f for f in SEEDS if f.startswith(PNG_SIG))
IHDR_VALUES = st.sampled_from((0, 1, 2, 3, 4, 6, 7, 8, 16, 255, 8192, 2**31 - 1, 2**32 - 1))
CHUNK_KINDS = st.sampled_from(
    (b"IHDR", b"IDAT", b"IEND", b"tEXt", b"PLTE", b"tRNS", b"abcd", b"ABCD")
)
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
    st.tuples(st.just("bomb"), st.integers(1, 4096)),
)  # fmt: skip


def png_chunks(data: bytes) -> list[list[Any]]:
    out, pos = [], len(PNG_SIG)
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
        i = op[1] % len(chunks) if chunks and kind not in ("rows", "ihdr", "bomb") else 0
        if kind == "ihdr":
            for c in chunks:
                if c[0] == b"IHDR" and len(c[1]) == 13:
                    fields = list(struct.unpack(">IIBBBBB", c[1]))
                    fields[op[1]] = op[2] % (2**32 if op[1] < 2 else 256)
                    c[1] = struct.pack(">IIBBBBB", *fields)
                    break
        elif kind in ("rows", "bomb"):
            idat = b"".join(c[1] for c in chunks if c[0] == b"IDAT")
            try:
                rows = zlib.decompress(idat)
            except zlib.error:
                continue
            # "bomb": far more (highly compressible) data than the header implies
            rows = mutate(rows, [op[1]], (rows,)) if kind == "rows" else rows + bytes(op[1] << 10)
            first = next((j for j, c in enumerate(chunks) if c[0] == b"IDAT"), len(chunks))
            chunks = [c for c in chunks if c[0] != b"IDAT"]
            chunks.insert(first, [b"IDAT", zlib.compress(rows), None])
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
    out = bytearray(PNG_SIG)
    for kind, body, crc in chunks:
        crc = zlib.crc32(kind + body) if crc is None else crc
        out += struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)
    return bytes(out)


@FUZZ
@given(
    st.integers(0, 999),
    st.lists(PNG_OPS, max_size=5),
    st.lists(BYTE_OPS, max_size=3),
    st.sampled_from((None, "L", "RGB", "RGBA")),
)
def test_png_decoder_survives_mutations(seed: int, ops: Ops, then: Ops, mode: str | None) -> None:
    data = mutate(mutate_png(PNG_SEEDS[seed % len(PNG_SEEDS)], ops), then, PNG_SEEDS)
    got = read_image(data, mode=mode)
    ran("decoded" if got is not None else "refused")
    if got is not None and mode is not None:
        assert got.shape[2] == {"L": 1, "RGB": 3, "RGBA": 4}[mode]


@FUZZ
@given(st.integers(0, 999), st.lists(BYTE_OPS, min_size=1, max_size=4))
def test_any_file_survives_byte_mutations(seed: int, ops: Ops) -> None:
    data = mutate(SEEDS[seed % len(SEEDS)], ops, SEEDS)
    if data.startswith(b"\xff\xd8"):
        data = data[1:]  # JPEG is fuzzed with its own decoder
    ran("decoded" if read_image(data) is not None else "refused")


def test_harness_png_encoder_agrees_with_pillow() -> None:
    """The PNG oracle above writes what Pillow reads back (so a mismatch is the decoder's)."""
    pil = pytest.importorskip("PIL.Image")
    for colour, mode in ((0, "L"), (2, "RGB"), (4, "LA"), (6, "RGBA")):
        bpp = SAMPLES[colour]
        pixels = [(i * 53 + 7) % 256 for i in range(7 * 5 * bpp)]
        for interlace in (False, True):
            data = encode_png(7, 5, colour, 8, pixels, interlace=interlace, idat_pieces=2)
            with pil.open(io.BytesIO(data)) as im:
                assert im.mode == mode and im.tobytes() == bytes(pixels)


def test_harness_png_mutator_keeps_unmutated_files() -> None:
    assert all(mutate_png(seed, []) == seed for seed in PNG_SEEDS)
    assert mutate_png(PNG_SEEDS[0], [("bad-crc", 0)]) != PNG_SEEDS[0]


def mutated_pngs(count: int) -> list[bytes]:
    """``count`` files of test_png_decoder_survives_mutations' kind (hypothesis
    draws the mutations, reproducibly), collected rather than decoded."""
    files: list[bytes] = []

    @settings(FUZZ, max_examples=count)
    @given(st.integers(0, 999), st.lists(PNG_OPS, max_size=5), st.lists(BYTE_OPS, max_size=3))
    def collect(seed: int, ops: Ops, then: Ops) -> None:
        files.append(mutate(mutate_png(PNG_SEEDS[seed % len(PNG_SEEDS)], ops), then, PNG_SEEDS))

    collect()
    return files


@pytest.mark.integration
def test_component_survives_mutated_pngs(tmp_path: Path) -> None:
    """The same mutations through libspng inside a real component (tests/image_app):
    every file gives a decoded image or an ImageError line, never a trap. The
    budget is WASINN_FUZZ_EXAMPLES (``./build.sh fuzz``: 10,000), else 300;
    the files go to one component run per 1,000."""
    from conftest import build_app, run_component

    app = build_app(ROOT / "tests" / "image_app")
    files = mutated_pngs(int(os.environ.get("WASINN_FUZZ_EXAMPLES") or 300))
    names = [f"m{i:05d}.png" for i in range(len(files))]
    for name, data in zip(names, files, strict=True):
        (tmp_path / name).write_bytes(data)
    results = 0
    for start in range(0, len(names), 1000):
        batch = names[start : start + 1000]
        done = run_component(app, *batch, cwd=tmp_path, timeout=1200)
        done.assert_no_trap()
        assert done.code == 0, done.stderr[-2000:]
        lines = done.lines
        assert [line["file"] for line in lines] == batch
        for line in lines:
            error = line.get("error")
            assert error in (None, "ImageError", "ImageTooLargeError"), line
            if error is None:
                h, w, c = line["shape"]
                assert h > 0 and w > 0 and 1 <= c <= 4 and line["bytes"] == h * w * c
            ran("refused" if error else "decoded")
            results += 1
    assert results == len(files)
