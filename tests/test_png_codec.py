"""PNG through libspng (wasinn._png_codec) natively: encoding against Pillow,
and hostile files, each refused with ImageError quickly and in bounded memory.

Decoding against Pillow (every colour type, bit depth, filter, Adam7) is in
test_image.py; mutated files are in test_fuzz_image.py.
"""

from __future__ import annotations

import io
import struct
import time
import tracemalloc
import zlib

import numpy as np
import pytest
from PIL import Image
from png_rows import zero_png
from test_image import chunk, encode_png, random_case, with_ihdr

from wasinn import Tensor, image
from wasinn.image import ImageError, ImageTooLargeError

PNG_SIG = b"\x89PNG\r\n\x1a\n"
MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}


def photo(width: int, height: int, channels: int, seed: int = 0) -> np.ndarray:
    """A smooth gradient plus noise (what PNG filters are for), ``channels`` deep."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    planes = [x * 255 // max(1, width - 1), y * 255 // max(1, height - 1), (x + y) % 256,
              255 - x * 255 // max(1, width - 1)]  # fmt: skip
    base = np.stack(planes[:channels], -1) + rng.integers(-8, 9, (height, width, channels))
    return np.clip(base, 0, 255).astype(np.uint8)


def tensor(pixels: np.ndarray) -> Tensor:
    return Tensor._wrap(pixels.tobytes(), pixels.shape, "u8")


# ---------------------------------------------------------------- encoding


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
@pytest.mark.parametrize(("width", "height"), [(1, 1), (7, 3), (64, 48), (301, 17)])
def test_pillow_reads_what_wasinn_writes(channels: int, width: int, height: int) -> None:
    pixels = photo(width, height, channels, seed=width)
    data = image.encode(tensor(pixels), "png")
    with Image.open(io.BytesIO(data)) as im:
        assert (im.format, im.mode, im.size) == ("PNG", MODES[channels], (width, height))
        assert im.tobytes() == pixels.tobytes()
    back = image.decode(data)
    assert back.shape == (height, width, channels) and back.tobytes() == pixels.tobytes()


def test_two_dimensional_pixels_are_gray() -> None:
    pixels = photo(20, 10, 1)[..., 0]
    data = image.encode(Tensor._wrap(pixels.tobytes(), (10, 20), "u8"), "png")
    with Image.open(io.BytesIO(data)) as im:
        assert im.mode == "L" and im.tobytes() == pixels.tobytes()


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_wasinn_reads_what_pillow_writes_at_every_level(channels: int) -> None:
    pixels = photo(97, 61, channels, seed=channels)
    for level in range(10):
        out = io.BytesIO()
        Image.fromarray(pixels[..., 0] if channels == 1 else pixels).save(
            out, "PNG", compress_level=level
        )
        assert image.decode(out.getvalue()).tobytes() == pixels.tobytes(), level


def test_compress_level_is_zlibs_like_pillows() -> None:
    """Level 0 stores (about the pixels' size), higher levels get smaller,
    within 10% of Pillow's file at the same level."""
    pixels = photo(256, 192, 3, seed=4)
    sizes = {}
    for level in (0, 1, 6, 9):
        data = image.encode(tensor(pixels), "png", compress_level=level)
        assert image.decode(data).tobytes() == pixels.tobytes()
        out = io.BytesIO()
        Image.fromarray(pixels).save(out, "PNG", compress_level=level)
        sizes[level] = len(data)
        assert len(data) <= 1.1 * len(out.getvalue()) + 200, (level, len(data), out.tell())
    assert sizes[0] >= pixels.size and sizes[9] <= sizes[6] <= sizes[1] < sizes[0]


def test_encode_refuses_bad_arguments() -> None:
    pixels = tensor(photo(4, 4, 3))
    for kw, match in (({"compress_level": 10}, "compress_level is 0"),
                      ({"compress_level": -1}, "compress_level is 0"),
                      ({"quality": 90}, "PNG is lossless"),
                      ({"lossless": True}, "PNG is lossless")):  # fmt: skip
        with pytest.raises(ImageError, match=match):
            image.encode(pixels, "png", **kw)  # type: ignore[arg-type]
    with pytest.raises(ImageError, match="1 to 4 channels"):
        image.encode(tensor(np.zeros((2, 2, 5), np.uint8)), "png")
    with pytest.raises(ImageError, match="empty image"):
        image.encode(tensor(np.zeros((0, 2, 3), np.uint8)), "png")


def test_encoding_a_big_image_stays_within_3x() -> None:
    pixels = photo(1024, 768, 3, seed=5)
    tracemalloc.start()
    try:
        data = image.encode(tensor(pixels), "png")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert image.decode(data).tobytes() == pixels.tobytes()
    assert peak <= 3 * pixels.size + (8 << 20), peak / pixels.size


# ---------------------------------------------------------------- hostile files


def refused(data: bytes, match: str, seconds: float = 1.0, **kw: object) -> ImageError:
    """ImageError matching ``match`` within ``seconds`` of CPU and 16 MB of memory."""
    start = time.process_time()
    tracemalloc.start()
    try:
        with pytest.raises(ImageError, match=match) as info:
            image.decode(data, name="bad.png", **kw)  # type: ignore[arg-type]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.process_time() - start < seconds
    assert peak < len(data) + (16 << 20), peak
    assert str(info.value).startswith("bad.png ")
    return info.value


def multi_chunk_png() -> bytes:
    """A palette file with tRNS, text before and after the image data, three IDATs."""
    samples, plte = random_case(3, 4, 23, 11, 1)
    data = encode_png(23, 11, 3, 4, samples, plte=plte, trns=b"\x00\x40\x80", idat_pieces=3)
    return data[:-12] + chunk(b"tEXt", b"After\0the image data") + data[-12:]


def chunk_offsets(data: bytes) -> list[tuple[int, bytes, int]]:
    """(offset, type, length) of every chunk."""
    out, pos = [], 8
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        out.append((pos, kind, length))
        pos += 12 + length
    return out


def test_the_multi_chunk_file_decodes() -> None:
    data = multi_chunk_png()
    assert image.decode(data).shape == (11, 23, 4)


def test_a_file_cut_anywhere_is_truncated() -> None:
    """At every chunk boundary, and inside every chunk's header, body and CRC."""
    data = multi_chunk_png()
    cuts = set(range(8, len(data)))
    for cut in sorted(cuts):
        error = refused(data[:cut], "truncated")
        if any(cut == pos for pos, _, _ in chunk_offsets(data)):
            assert "ends before its IEND chunk" in str(error), cut


def test_a_bad_crc_in_any_chunk_is_named() -> None:
    data = multi_chunk_png()
    for pos, kind, length in chunk_offsets(data):
        bad = bytearray(data)
        bad[pos + 8 + length] ^= 0x55
        refused(bytes(bad), f"corrupt: the {kind.decode()} chunk fails its CRC check")


def test_zero_sizes_and_empty_files() -> None:
    refused(b"", "empty")
    refused(PNG_SIG, "ends before its IEND chunk")
    refused(with_ihdr(0, 0), "its size is 0x0")
    refused(with_ihdr(5, 0), "its size is 5x0")
    refused(PNG_SIG + chunk(b"IHDR", bytes(13)), "colour type 0|its size is 0x0|cannot have 0")


def test_gigantic_chunk_lengths() -> None:
    ihdr = PNG_SIG + chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0))
    idat = zlib.compress(bytes(4 * 13))
    for length in (0x7FFFFFFF, 0x80000000, 0xFFFFFFFF):
        for kind in (b"tEXt", b"IDAT", b"abCD"):
            head = struct.pack(">I", length) + kind
            data = ihdr + (chunk(b"IDAT", idat) if kind != b"IDAT" else b"") + head + bytes(100)
            refused(data, "truncated|claims")
    # a huge ancillary chunk that is really there is read past, not kept
    text = chunk(b"zzZz", bytes(20 << 20))
    assert image.decode(ihdr + text + chunk(b"IDAT", idat) + chunk(b"IEND", b"")).shape == (
        4, 4, 3,
    )  # fmt: skip


def test_huge_declared_sizes_allocate_nothing() -> None:
    error = refused(with_ihdr(2**31 - 1, 2**31 - 1, idat=zlib.compress(b"\0")), "more than the")
    assert isinstance(error, ImageTooLargeError)
    refused(with_ihdr(2**32 - 1, 1), "its size is 4294967295x1")
    # within the limit, but the image data cannot hold it: no pixel memory at all
    for colour, depth in ((2, 8), (6, 16), (0, 1), (3, 8)):
        data = with_ihdr(8000, 8000, depth, colour, idat=zlib.compress(b"\0" * 1000))
        refused(data, "truncated|without a PLTE", max_pixels=8000 * 8000)


def test_image_data_far_past_the_header_is_not_inflated() -> None:
    """100x100 pixels, then 4 GiB of zeros in the same zlib stream (about
    4 MB compressed), in one IDAT and in many: decoded, the rest never inflated."""
    z = zlib.compressobj(9)
    rows = z.compress(bytes(100 * 301))
    zeros = z.compress(bytes(1 << 22))
    tail = [zeros] * 1024
    stream = rows + b"".join(tail) + z.flush()
    start = time.process_time()
    assert image.decode(with_ihdr(100, 100, idat=stream)).tobytes() == bytes(30000)
    pieces = [stream[i : i + 65536] for i in range(0, len(stream), 65536)]
    many = with_ihdr(100, 100)[:33] + b"".join(chunk(b"IDAT", p) for p in pieces)
    assert image.decode(many + chunk(b"IEND", b"")).tobytes() == bytes(30000)
    assert time.process_time() - start < 2


def test_many_tiny_idats_decode() -> None:
    """A 64x64 RGB image in 12,000-odd IDATs of one byte."""
    pixels = photo(64, 64, 3)
    rows = b"".join(b"\0" + pixels[y].tobytes() for y in range(64))
    stream = zlib.compress(rows, 0)
    data = with_ihdr(64, 64)[:33] + b"".join(chunk(b"IDAT", stream[i : i + 1])
                                              for i in range(len(stream)))  # fmt: skip
    start = time.process_time()
    assert image.decode(data + chunk(b"IEND", b"")).tobytes() == pixels.tobytes()
    assert time.process_time() - start < 1


def test_bombs_decode_quickly_in_bounded_memory() -> None:
    data = zero_png(4096, 4096, 4)
    start = time.process_time()
    tracemalloc.start()
    try:
        pixels = image.decode(data).tobytes()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert pixels == bytes(4096 * 4096 * 3)
    assert peak <= len(pixels) + (4 << 20), peak - len(pixels)
    assert time.process_time() - start < 2


def test_metadata_past_the_limits_is_refused() -> None:
    ihdr, idat = with_ihdr(2, 2)[:33], chunk(b"IDAT", zlib.compress(bytes(14)))
    many_texts = b"".join(chunk(b"tEXt", b"k\0v") for _ in range(1001))
    refused(ihdr + many_texts + idat + chunk(b"IEND", b""), "more metadata than")
    z = zlib.compress(bytes(2 << 20))
    refused(ihdr + chunk(b"zTXt", b"k\0\0" + z) + idat + chunk(b"IEND", b""), "more metadata")
    big_texts = b"".join(chunk(b"tEXt", b"k\0" + bytes(1 << 20)) for _ in range(5))
    refused(ihdr + big_texts + idat + chunk(b"IEND", b""), "more metadata", seconds=2)


def test_structure_errors_name_what_is_wrong() -> None:
    good = with_ihdr(2, 2, idat=zlib.compress(bytes(14)))
    head, rest = good[:33], good[33:]
    for data, match in (
        (head + chunk(b"IHDR", bytes(13)) + rest, "two IHDR chunks"),
        (head + chunk(b"PLTE", bytes(4)) + rest, "PLTE is 4 bytes"),
        (head + chunk(b"ABCD", b"") + rest, "critical chunk 'ABCD'"),
        (good[:-12] + chunk(b"ABCD", b"") + good[-12:], "critical chunk 'ABCD'"),
        (head + chunk(b"IEND", b""), "no IDAT"),
        (with_ihdr(2, 2, idat=zlib.compress(bytes(14))[:-6]), "does not decompress|truncated"),
        (with_ihdr(2, 2, idat=zlib.compress(bytes(7) + b"\x05" + bytes(6))), "row 1 has unknown "
         "filter type 5"),
        (with_ihdr(9, 9, interlace=1, idat=zlib.compress(b"\x09" + bytes(200))), "row 0 of "
         "Adam7 pass 1 has unknown filter type 9"),
    ):  # fmt: skip
        refused(data, match)
