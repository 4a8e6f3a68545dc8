"""wasinn.image natively, against Pillow as the oracle.

PNGs are written here with zlib and struct (every colour type and bit depth,
every filter, Adam7, palettes with and without tRNS) since Pillow writes
neither interlaced files nor chosen filters; Pillow reads each back, and
wasinn must give exactly its pixels. PGM/PPM likewise. Then hostile files:
each must raise ImageError quickly, before allocating what its header claims.
"""

from __future__ import annotations

import io
import random
import struct
import time
import tracemalloc
import zlib

import numpy as np
import pytest
from PIL import Image
from png_rows import ADAM7, SAMPLES, png_with_filter, zero_png

import wasinn
from wasinn import image
from wasinn.image import ImageError

PNG_SIG = b"\x89PNG\r\n\x1a\n"
DEPTHS = {0: (1, 2, 4, 8, 16), 2: (8, 16), 3: (1, 2, 4, 8), 4: (8, 16), 6: (8, 16)}
CASES = [(c, d) for c in sorted(DEPTHS) for d in DEPTHS[c]]


def chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def pack_rows(samples: list[int], width: int, height: int, spp: int, depth: int) -> list[bytes]:
    """Rows of ``samples`` (width*spp per row) packed at ``depth`` bits, big-endian."""
    rows = []
    for y in range(height):
        row = samples[y * width * spp : (y + 1) * width * spp]
        if depth == 16:
            rows.append(b"".join(struct.pack(">H", v) for v in row))
        elif depth == 8:
            rows.append(bytes(row))
        else:
            bits = "".join(format(v, f"0{depth}b") for v in row)
            bits += "0" * (-len(bits) % 8)
            rows.append(bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits), 8)))
    return rows


def filter_rows(rows: list[bytes], bpp: int, rng: random.Random) -> bytes:
    out = bytearray()
    prev = bytes(len(rows[0])) if rows else b""
    for row in rows:
        kind = rng.randrange(5)
        out.append(kind)
        for i, v in enumerate(row):
            a = row[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            out.append((v - (0, a, b, (a + b) >> 1, paeth(a, b, c))[kind]) & 0xFF)
        prev = row
    return bytes(out)


def encode_png(
    width: int,
    height: int,
    colour: int,
    depth: int,
    samples: list[int],
    *,
    interlace: bool = False,
    plte: bytes | None = None,
    trns: bytes | None = None,
    seed: int = 0,
    idat_pieces: int = 1,
) -> bytes:
    spp = SAMPLES[colour]
    bpp = max(1, spp * depth // 8)
    rng = random.Random(seed)
    if interlace:
        scan = b""
        for x0, y0, dx, dy in ADAM7:
            xs, ys = range(x0, width, dx), range(y0, height, dy)
            if not xs or not ys:
                continue
            sub = [samples[(y * width + x) * spp + s] for y in ys for x in xs for s in range(spp)]
            scan += filter_rows(pack_rows(sub, len(xs), len(ys), spp, depth), bpp, rng)
    else:
        scan = filter_rows(pack_rows(samples, width, height, spp, depth), bpp, rng)
    packed = zlib.compress(scan)
    step = -(-len(packed) // idat_pieces)
    out = PNG_SIG + chunk(
        b"IHDR", struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, int(interlace))
    )
    out += chunk(b"tEXt", b"Comment\0made by test_image.py")
    if plte is not None:
        out += chunk(b"PLTE", plte)
    if trns is not None:
        out += chunk(b"tRNS", trns)
    for i in range(0, len(packed), step):
        out += chunk(b"IDAT", packed[i : i + step])
    return out + chunk(b"IEND", b"")


def pillow_pixels(data: bytes) -> tuple[int, bytes]:
    """(channels, 8-bit pixels) that Pillow reads, mapped the way wasinn documents."""
    with Image.open(io.BytesIO(data)) as im:
        im.load()
        if im.mode in ("I;16", "I;16B", "I"):  # 16-bit gray: the high byte
            arr = np.asarray(im).astype(np.uint32)
            return 1, (arr >> 8).astype(np.uint8).tobytes()
        if data[25] == 4 and im.mode == "RGBA":  # Pillow widens 16-bit gray+alpha to RGBA
            arr = np.asarray(im)
            assert (arr[..., 0] == arr[..., 1]).all() and (arr[..., 0] == arr[..., 2]).all()
            return 2, arr[..., [0, 3]].tobytes()
        out: Image.Image = im
        if im.mode == "P":
            out = im.convert("RGBA" if "transparency" in im.info else "RGB")
        elif im.mode == "1":
            out = im.convert("L")
        return len(out.getbands()), out.tobytes()


def random_case(
    colour: int, depth: int, width: int, height: int, seed: int
) -> tuple[list[int], bytes | None]:
    rng = random.Random(seed)
    n = width * height * SAMPLES[colour]
    top = (1 << depth) - 1
    # runs of equal values next to noise, so every filter meets both
    samples = [rng.randrange(top + 1) if rng.random() < 0.7 else top for _ in range(n)]
    plte = None
    if colour == 3:
        entries = 1 << depth
        samples = [v % entries for v in samples]
        plte = bytes(rng.randrange(256) for _ in range(3 * entries))
    return samples, plte


@pytest.mark.parametrize("interlace", [False, True], ids=["plain", "adam7"])
@pytest.mark.parametrize(("colour", "depth"), CASES, ids=[f"c{c}-{d}bit" for c, d in CASES])
def test_png_every_colour_type_and_depth_matches_pillow(
    colour: int, depth: int, interlace: bool
) -> None:
    for seed, (width, height) in enumerate(((1, 1), (3, 2), (13, 9), (33, 17), (37, 23))):
        samples, plte = random_case(colour, depth, width, height, seed)
        data = encode_png(
            width,
            height,
            colour,
            depth,
            samples,
            interlace=interlace,
            plte=plte,
            seed=seed,
            idat_pieces=2,
        )
        channels, want = pillow_pixels(data)
        t = image.decode(data, name="case.png")
        assert (t.shape, t.dtype) == ((height, width, channels), "u8")
        assert t.tobytes() == want, (width, height)


@pytest.mark.parametrize("depth", [1, 2, 4, 8])
def test_png_palette_with_trns_is_rgba_like_pillow(depth: int) -> None:
    samples, plte = random_case(3, depth, 19, 11, depth)
    assert plte is not None
    for trns in (b"\x00", bytes(range(0, 256, 37)), bytes(300)[: len(plte) // 3]):
        data = encode_png(19, 11, 3, depth, samples, plte=plte, trns=trns)
        channels, want = pillow_pixels(data)
        t = image.decode(data)
        assert channels == 4 and t.shape == (11, 19, 4)
        assert t.tobytes() == want


def test_png_palette_index_past_the_palette_reads_as_black() -> None:
    data = encode_png(4, 1, 3, 8, [0, 1, 2, 200], plte=b"\x10\x20\x30\x40\x50\x60")
    assert image.decode(data).tolist() == [[[16, 32, 48], [64, 80, 96], [0, 0, 0], [0, 0, 0]]]


def test_pillow_written_pngs_decode_exactly() -> None:
    rng = random.Random(5)
    base = Image.frombytes("RGB", (61, 47), bytes(rng.randrange(256) for _ in range(61 * 47 * 3)))
    for mode in ("RGB", "RGBA", "L", "LA", "P", "1"):
        for optimize in (False, True):
            out = io.BytesIO()
            base.convert(mode).save(out, "PNG", optimize=optimize)
            channels, want = pillow_pixels(out.getvalue())
            t = image.decode(out.getvalue())
            assert t.shape == (47, 61, channels) and t.tobytes() == want, mode


@pytest.mark.parametrize("source", ["L", "LA", "RGB", "RGBA", "P", "I;16"])
@pytest.mark.parametrize("mode", ["L", "RGB", "RGBA"])
def test_mode_conversions_match_pillow_convert(source: str, mode: str) -> None:
    rng = random.Random(7)
    width, height = 29, 13
    if source == "I;16":
        samples = [rng.randrange(65536) for _ in range(width * height)]
        data = encode_png(width, height, 0, 16, samples)
        gray = Image.frombytes("L", (width, height), bytes(v >> 8 for v in samples))
        want = gray.convert(mode).tobytes()
    else:
        rgba = Image.frombytes(
            "RGBA", (width, height), bytes(rng.randrange(256) for _ in range(width * height * 4))
        )
        src = rgba.convert(source) if source != "P" else rgba.convert("RGB").quantize(64)
        out = io.BytesIO()
        src.save(out, "PNG")
        data = out.getvalue()
        stored = src.convert("RGB") if source == "P" else src
        want = stored.convert(mode).tobytes()
    t = image.decode(data, mode=mode)
    assert t.shape == (height, width, {"L": 1, "RGB": 3, "RGBA": 4}[mode])
    assert t.tobytes() == want


def test_luma_formula_matches_pillow_on_every_channel_value() -> None:
    # every value in every channel, and many random triples
    rng = random.Random(3)
    triples = [(v, 0, 0) for v in range(256)] + [(0, v, 0) for v in range(256)]
    triples += [(0, 0, v) for v in range(256)] + [(v, v, v) for v in range(256)]
    triples += [(rng.randrange(256), rng.randrange(256), rng.randrange(256)) for _ in range(20000)]
    raw = bytes(b for t in triples for b in t)
    im = Image.frombytes("RGB", (len(triples), 1), raw)
    out = io.BytesIO()
    im.save(out, "PNG")
    assert image.decode(out.getvalue(), mode="L").tobytes() == im.convert("L").tobytes()


# ---------------------------------------------------------------- PGM / PPM


@pytest.mark.parametrize("maxval", [1, 15, 100, 255, 256, 1000, 4095, 65535])
@pytest.mark.parametrize("magic", ["P5", "P6"])
def test_pgm_ppm_match_pillow(magic: str, maxval: int) -> None:
    rng = random.Random(maxval)
    width, height = 11, 7
    channels = 1 if magic == "P5" else 3
    values = [rng.randrange(maxval + 1) for _ in range(width * height * channels)]
    values[:2] = [0, maxval]
    body = bytes(values) if maxval < 256 else b"".join(struct.pack(">H", v) for v in values)
    data = f"{magic}\n# a comment\n{width} {height}\n{maxval}\n".encode() + body
    t = image.decode(data, name="x.ppm")
    assert t.shape == (height, width, channels)
    want = bytes(min(255, round(v / maxval * 255)) for v in values)
    assert t.tobytes() == want
    with Image.open(io.BytesIO(data)) as im:
        if im.mode == "I":  # Pillow widens 16-bit PGM to 0..65535: compare with its own scale
            ref = np.asarray(im).astype(np.float64).ravel()
            assert np.abs(ref / 65535 * 255 - np.frombuffer(want, np.uint8)).max() <= 0.5 + 1e-9
        else:
            assert im.tobytes() == want


def test_ppm_written_by_pillow() -> None:
    rng = random.Random(9)
    for mode in ("L", "RGB"):
        im = Image.frombytes(
            mode, (9, 4), bytes(rng.randrange(256) for _ in range(9 * 4 * len(mode)))
        )
        out = io.BytesIO()
        im.save(out, "PPM")
        t = image.decode(out.getvalue())
        assert t.shape == (4, 9, len(mode)) and t.tobytes() == im.tobytes()


# ---------------------------------------------------------------- errors and hostile files


def good_png() -> bytes:
    return encode_png(4, 3, 2, 8, list(range(36)))


def refused(data: bytes, match: str, **kw: object) -> None:
    start = time.process_time()
    with pytest.raises(ImageError, match=match) as info:
        image.decode(data, name="bad.png", **kw)  # type: ignore[arg-type]
    assert time.process_time() - start < 1.0
    assert isinstance(info.value, wasinn.ValidationError)


def with_ihdr(
    width: int, height: int, depth: int = 8, colour: int = 2, interlace: int = 0, idat: bytes = b""
) -> bytes:
    out = PNG_SIG + chunk(
        b"IHDR", struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, interlace)
    )
    return out + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def test_refuses_unknown_and_empty_data() -> None:
    refused(b"", "empty")
    refused(b"GIF89a....", "not a PNG, JPEG, WebP, PGM or PPM")
    refused(b"P3\n1 1\n255\n0 0 0\n", "ASCII pixmap")
    with pytest.raises(ImageError, match="takes the file's bytes"):
        image.decode("photo.png")  # type: ignore[arg-type]
    with pytest.raises(ImageError, match="unknown mode 'BGR'"):
        image.decode(good_png(), mode="BGR")


def test_png_corrupt_and_truncated() -> None:
    data = good_png()
    for cut in (8, 20, 33, 40, len(data) - 13, len(data) - 1):
        refused(data[:cut], "truncated")
    bad_crc = bytearray(data)
    bad_crc[30] ^= 1  # inside IHDR's body
    refused(bytes(bad_crc), "IHDR chunk fails its CRC check")
    refused(with_ihdr(4, 3, depth=3), "cannot have 3-bit samples")
    refused(with_ihdr(4, 3, colour=5), "colour type 5 does not exist")
    refused(with_ihdr(4, 3, interlace=2), "unknown PNG interlace method 2")
    refused(with_ihdr(0, 3), "its size is 0x3")
    refused(with_ihdr(4, 3, colour=3, idat=zlib.compress(bytes(8))), "without a PLTE chunk")
    refused(with_ihdr(4, 3, idat=b"not zlib"), "does not decompress")
    refused(with_ihdr(1, 1, idat=zlib.compress(b"\x07abc")), "unknown filter type 7")
    refused(PNG_SIG + chunk(b"IEND", b""), "first chunk is IEND, not IHDR")
    refused(
        PNG_SIG
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
        + chunk(b"IEND", b""),
        "no IDAT",
    )


def test_png_huge_declared_size_is_refused_before_allocating() -> None:
    refused(with_ihdr(2**31 - 1, 2**31 - 1, idat=zlib.compress(b"\0")), "more than the")
    # within the limit but without the data: refused as truncated, quickly
    refused(with_ihdr(8000, 8000, idat=zlib.compress(b"\0" * 100)), "truncated")
    refused(with_ihdr(100, 100), "more than the 5000 allowed", max_pixels=5000)


def test_png_zip_bomb_is_not_inflated_past_the_header() -> None:
    # 1 GiB of zeros compressed (about 1 MB) behind a 1x1 header: decodes the one
    # pixel and ignores the rest instead of inflating a gigabyte.
    z = zlib.compressobj(9)
    bomb = (
        z.compress(b"\0" * 4)
        + b"".join(z.compress(bytes(1 << 20)) for _ in range(1024))
        + z.flush()
    )
    start = time.process_time()
    t = image.decode(with_ihdr(1, 1, idat=bomb))
    assert t.tolist() == [[[0, 0, 0]]]
    assert time.process_time() - start < 1.0


def test_ppm_errors() -> None:
    refused(b"P6\n2 2\n255\n" + bytes(11), "truncated: 11 bytes of pixels, the header implies 12")
    refused(b"P5\n2 2\n0\n" + bytes(4), "maxval 0")
    refused(b"P5\n2 x\n255\n", "expected a number")
    refused(b"P5\n# comment only", "truncated in its header")
    refused(b"P5\n99999 99999\n255\n" + bytes(10), "more than the")
    refused(b"P5 1 1 255", "does not end with whitespace")


def test_jpeg_goes_to_the_jpeg_decoder() -> None:
    out = io.BytesIO()
    Image.new("RGB", (4, 4), (200, 10, 10)).save(out, "JPEG")
    t, info = image.decode_with_info(out.getvalue())
    assert t.shape == (4, 4, 3) and info["format"] == "jpeg"


def test_decoders_report_format() -> None:
    assert image.decode_with_info(good_png())[1]["format"] == "png"
    assert image.decode_with_info(b"P5 1 1 255 \x07")[1] == {"format": "ppm", "reduce": 1}


# ------------------------------------------------------------------ filters


@pytest.mark.parametrize("interlace", [False, True], ids=["plain", "adam7"])
@pytest.mark.parametrize("colour", [2, 6])
def test_png_every_filter_type_in_turn(colour: int, interlace: bool) -> None:
    """40 rows of each filter type in turn (every row's filter after every
    other's), RGB and RGBA, wider than tall and taller than wide."""
    for width, height in ((150, 40), (12, 200), (70, 230)):
        samples, _ = random_case(colour, 8, width, height, width)
        data = encode_png(width, height, colour, 8, samples, interlace=interlace, seed=3)
        assert image.decode(data).tobytes() == pillow_pixels(data)[1]


def test_png_zero_rows_below_a_nonzero_row_are_unfiltered_for_real() -> None:
    """Zero Paeth, Average, Sub and Up rows under a coloured row repeat or spread it."""
    for kind in range(5):
        rows = [b"\x01" + bytes([9, 200, 31]) + bytes(3 * 99)]  # Sub: one colour across
        rows += [bytes([kind]) + bytes(300)] * 40
        data = with_ihdr(100, 41, idat=zlib.compress(b"".join(rows)))
        assert image.decode(data).tobytes() == pillow_pixels(data)[1], kind


def test_mode_conversions_are_pillows() -> None:
    rng = random.Random(11)
    rgba = Image.frombytes("RGBA", (61, 53), bytes(rng.randrange(256) for _ in range(61 * 53 * 4)))
    for source in ("L", "LA", "RGB", "RGBA"):
        out = io.BytesIO()
        rgba.convert(source).save(out, "PNG")
        for mode in ("L", "RGB", "RGBA"):
            want = rgba.convert(source).convert(mode).tobytes()
            assert image.decode(out.getvalue(), mode=mode).tobytes() == want, (source, mode)


# ------------------------------------------------------------------ memory: about 3x the pixels

#: What a decode may take beyond three times its pixels' bytes (a band of rows,
#: tables, windows of entropy-coded data).
MEMORY_CONSTANT = 24 << 20


def traced(data: bytes, **kw: object) -> tuple[bytes, int, float]:
    """(pixels, peak bytes allocated while decoding, CPU seconds)."""
    start = time.process_time()
    tracemalloc.start()
    try:
        pixels = image.decode(data, **kw).tobytes()  # type: ignore[arg-type]
        return pixels, tracemalloc.get_traced_memory()[1], time.process_time() - start
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("kind", range(5), ids=["none", "sub", "up", "average", "paeth"])
def test_png_bomb_decodes_in_3x_its_pixels_and_quickly(kind: int) -> None:
    """Issue 24's bomb: a 4096x4096 RGB PNG of zeros is 50-60 KB; it used to
    peak at 25 times its 48 MiB of pixels inside a component (Paeth rows)."""
    data = zero_png(4096, 4096, kind)
    assert len(data) < 100_000
    pixels, peak, seconds = traced(data)
    assert pixels == bytes(4096 * 4096 * 3)
    assert peak <= 3 * len(pixels) + MEMORY_CONSTANT, peak / len(pixels)
    assert seconds < 5, seconds


@pytest.mark.parametrize(
    ("colour", "depth", "interlace", "first"),
    [(3, 1, False, b"\x10\x20\x30"), (0, 16, True, b"\x00"), (6, 16, True, bytes(4)),
     (4, 8, False, bytes(2))],  # fmt: skip
    ids=["palette-1bit", "gray-16bit-adam7", "rgba-16bit-adam7", "gray-alpha"],
)
def test_png_bombs_of_every_layout_stay_within_3x(
    colour: int, depth: int, interlace: bool, first: bytes
) -> None:
    """A 1-bit palette file grows 24-fold into RGB, 16-bit samples halve, Adam7
    spreads seven passes over the image: all within three times the pixels."""
    side = 2048
    pixels, peak, seconds = traced(zero_png(side, side, 4, colour, depth, interlace))
    assert pixels == first * (side * side)
    assert peak <= 3 * len(pixels) + MEMORY_CONSTANT, peak / len(pixels)
    assert seconds < 10, seconds


def test_png_photo_and_conversions_stay_within_3x() -> None:
    rng = np.random.default_rng(2)
    photo = rng.integers(0, 256, (1536, 2048, 3), dtype=np.uint8)
    photo[:, ::2] //= 4  # some structure for the filters
    for kind in (1, 2):  # Sub and Up rows: the per-row path, at speed
        data = png_with_filter(photo, kind)
        pixels, peak, _ = traced(data)
        assert pixels == photo.tobytes()
        assert peak <= 3 * len(pixels) + MEMORY_CONSTANT, peak / len(pixels)
    bomb = zero_png(4096, 4096, 4)
    for mode in ("L", "RGBA"):
        pixels, peak, seconds = traced(bomb, mode=mode)
        assert peak <= 3 * 4096 * 4096 * 4 + MEMORY_CONSTANT, peak
        assert seconds < 5, (mode, seconds)


def test_png_paeth_photo_stays_within_3x() -> None:
    """Paeth rows (Pillow writes them for nearly every row of a photo): the
    pixels plus libspng's scanlines and zlib's window."""
    rng = np.random.default_rng(3)
    photo = np.clip(
        np.cumsum(rng.integers(-3, 4, (1024, 1536, 3)), axis=1) + 128, 0, 255
    ).astype(np.uint8)
    pixels, peak, _ = traced(png_with_filter(photo, 4))
    assert pixels == photo.tobytes()
    assert peak <= 3 * len(pixels) + MEMORY_CONSTANT, peak / len(pixels)


def test_ppm_decodes_within_3x() -> None:
    side = 2048
    for maxval, body in ((255, bytes(3 * side * side)), (1000, bytes(6 * side * side))):
        data = f"P6 {side} {side} {maxval}\n".encode() + body
        pixels, peak, _ = traced(data)
        assert pixels == bytes(3 * side * side)
        assert peak <= 3 * len(pixels) + MEMORY_CONSTANT, peak / len(pixels)


@pytest.mark.parametrize(
    "options", [{"subsampling": 0}, {"progressive": True}], ids=["444-baseline", "420-progressive"]
)
def test_jpeg_memory_grows_at_most_3x_with_the_pixels(options: dict[str, object]) -> None:
    """Peak memory at two sizes: what each extra pixel byte costs (at most 3,
    where lists of coefficients cost about 10). Flat colours keep the pure
    decoder quick under tracemalloc."""

    def jpeg(side: int) -> bytes:
        flat = np.zeros((side, side, 3), np.uint8)
        flat[:] = (200, 60, 120)
        flat[side // 2 :, : side // 3] = (10, 250, 30)
        out = io.BytesIO()
        Image.fromarray(flat).save(out, "JPEG", quality=90, **options)
        return out.getvalue()

    (small, low, _), (big, high, _) = traced(jpeg(256)), traced(jpeg(512))
    assert (high - low) / (len(big) - len(small)) <= 3.0
    assert high <= 3 * len(big) + MEMORY_CONSTANT


# ------------------------------------------------------------------ too large, and probe


def test_too_many_pixels_raise_image_too_large_error_naming_the_limit() -> None:
    jpeg = io.BytesIO()
    Image.new("RGB", (120, 90)).save(jpeg, "JPEG")
    for data in (with_ihdr(120, 90), jpeg.getvalue(), b"P6 120 90 255\n"):
        with pytest.raises(image.ImageTooLargeError) as info:
            image.decode(data, name="big", max_pixels=5000)
        error = info.value
        assert isinstance(error, ImageError)
        assert (error.width, error.height, error.max_pixels) == (120, 90, 5000)
        assert str(error) == (
            "big is 120x90 = 10800 pixels, more than the 5000 allowed "
            "(pass max_pixels= to decode larger images)"
        )
    assert wasinn.ImageTooLargeError is image.ImageTooLargeError
    assert "ImageTooLargeError" in image.__all__ and "probe" in image.__all__


def probe_cases() -> dict[str, bytes]:
    cases = {}
    for colour, depth in CASES:
        samples, plte = random_case(colour, depth, 13, 9, depth)
        for interlace in (False, True):
            cases[f"c{colour}-{depth}-{interlace}.png"] = encode_png(
                13, 9, colour, depth, samples, interlace=interlace, plte=plte
            )
    samples, plte = random_case(3, 4, 13, 9, 4)
    cases["trns.png"] = encode_png(13, 9, 3, 4, samples, plte=plte, trns=b"\x00\x80")
    picture = Image.frombytes("RGB", (23, 17), bytes(range(256)) * 4 + bytes(149))
    for name, mode, options in (
        ("gray.jpg", "L", {}), ("rgb.jpg", "RGB", {}), ("prog.jpg", "RGB", {"progressive": True}),
        ("exif.jpg", "RGB", {"exif": Image.Exif()}), ("gray.pgm", "L", {}), ("rgb.ppm", "RGB", {}),
    ):  # fmt: skip
        out = io.BytesIO()
        picture.convert(mode).save(out, "JPEG" if name.endswith("jpg") else "PPM", **options)
        cases[name] = out.getvalue()
    cases["wide.ppm"] = b"P6 3 2 1000\n" + bytes(36)
    return cases


@pytest.mark.parametrize(("name", "data"), probe_cases().items(), ids=lambda v: "")
def test_probe_says_what_decode_gives(name: str, data: bytes) -> None:
    t, info = image.decode_with_info(data)
    height, width, channels = t.shape
    assert image.probe(data) == image.ImageInfo(str(info["format"]), width, height, channels)
    assert image.probe(bytearray(data)).pixels == t.shape[0] * t.shape[1]


def test_probe_reads_headers_only() -> None:
    """No inflating, no entropy decoding, no pixel limit: a bomb, a file cut
    after its header or with corrupt image data, a header beyond any limit."""
    bomb = zero_png(4096, 4096, 4)
    start = time.process_time()
    assert image.probe(bomb) == ("png", 4096, 4096, 3)
    assert image.probe(with_ihdr(2**31 - 1, 5, idat=b"not zlib")) == ("png", 2**31 - 1, 5, 3)
    jpeg = io.BytesIO()
    Image.new("RGB", (300, 200)).save(jpeg, "JPEG")
    data = jpeg.getvalue()
    sos = data.index(b"\xff\xda")
    assert image.probe(data[: sos + 20]) == ("jpeg", 300, 200, 3)
    assert image.probe(b"P5 40000 40000 65535\n") == ("ppm", 40000, 40000, 1)
    assert time.process_time() - start < 0.5
    with pytest.raises(ImageError, match="truncated"):
        image.decode(data[: sos + 20])


def test_probe_refuses_non_images_and_truncated_headers() -> None:
    png = good_png()
    jpeg = io.BytesIO()
    Image.new("RGB", (30, 20)).save(jpeg, "JPEG")
    sof = jpeg.getvalue().index(b"\xff\xc0")
    cmyk = io.BytesIO()
    Image.new("CMYK", (8, 8)).save(cmyk, "JPEG")
    for data, match in (
        (b"", "empty"),
        (b"GIF89a....", "not a PNG, JPEG, WebP, PGM or PPM"),
        (png[:8], "truncated: it ends before its IEND chunk"),
        (png[:20], "truncated inside its IHDR chunk"),
        (png[:12] + b"IHDx" + png[16:], "first chunk is IHDx"),
        (with_ihdr(4, 3, colour=5), "colour type 5 does not exist"),
        (with_ihdr(0, 3), "its size is 0x3"),
        (jpeg.getvalue()[:sof], "truncated: it ends before its frame header"),
        (jpeg.getvalue()[: sof + 8], "truncated: it ends before its image data"),
        (cmyk.getvalue(), "unsupported kind of JPEG: CMYK"),
        (b"P6 12 ", "truncated in its header"),
        (b"P3\n1 1\n255\n0 0 0\n", "ASCII pixmap"),
    ):
        with pytest.raises(ImageError, match=match):
            image.probe(data, name="x")
    with pytest.raises(ImageError, match="probe takes the file's bytes"):
        image.probe("photo.png")  # type: ignore[arg-type]
