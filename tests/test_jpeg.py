"""The JPEG codec (``wasinn._image.jpeg``, libjpeg-turbo in ``ext/_jpeg_codec.c``) against Pillow.

The oracle is Pillow natively (libjpeg-turbo too, with SIMD): files Pillow and
OpenCV write at several qualities, subsamplings, progressive or not, gray or
colour, with restart markers, arithmetic coded, and sizes that are not
multiples of 8 or 16 decode to exactly Pillow's pixels; files wasinn encodes
are Pillow's own bytes. Unsupported kinds, misuse and hostile files raise
``ImageError`` (test_jpeg_hostile.py has the hostile set).
"""

from __future__ import annotations

import io
import random
import struct

import pytest

from wasinn import Tensor, image
from wasinn._image.core import ImageError
from wasinn._image.jpeg import decode_jpeg

np = pytest.importorskip("numpy")
Image = pytest.importorskip("PIL.Image")


def picture(width: int, height: int, seed: int = 0) -> object:
    """Gradients plus noise: smooth areas and detail, so every coefficient kind occurs."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    planes = [x * 255 // max(width - 1, 1), y * 255 // max(height - 1, 1), ((x + 2 * y) * 7) % 256]
    a = np.stack(planes, -1).astype(np.float64) + rng.normal(0, 18, (height, width, 3))
    return Image.fromarray(np.clip(a, 0, 255).astype(np.uint8))


def encode(image: object, **options: object) -> bytes:
    out = io.BytesIO()
    image.save(out, "JPEG", **options)  # type: ignore[attr-defined]
    return out.getvalue()


def compare(data: bytes) -> tuple[int, float]:
    """(max abs difference, mean abs difference) between this decoder and Pillow."""
    with Image.open(io.BytesIO(data)) as ref_image:
        ref_image.load()
        mode = ref_image.mode
        ref = np.asarray(ref_image)
    width, height, channels, pixels, info = decode_jpeg(data, "t.jpg")
    assert (mode, width, height) == ({1: "L", 3: "RGB"}[channels], ref.shape[1], ref.shape[0])
    assert info == {"orientation": None}
    got = np.frombuffer(pixels, np.uint8).reshape(ref.shape)
    diff = np.abs(got.astype(np.int16) - ref.astype(np.int16))
    return int(diff.max()), float(diff.mean())


SIZES = [(1, 1), (7, 5), (16, 16), (17, 9), (33, 47), (100, 75)]
OPTIONS = [
    {"quality": 50, "subsampling": 0},
    {"quality": 75, "subsampling": 1},
    {"quality": 95, "subsampling": 2},
    {"quality": 75},
    {"quality": 75, "progressive": True},
    {"quality": 95, "progressive": True, "subsampling": 0},
    {"quality": 50, "progressive": True, "subsampling": 1},
    {"quality": 75, "restart_marker_blocks": 3},
    {"quality": 75, "restart_marker_rows": 1, "subsampling": 0},
    {"quality": 75, "progressive": True, "restart_marker_blocks": 2},
    {"quality": 100, "subsampling": 0},
    {"quality": 10},
]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize(
    "options", OPTIONS, ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items())
)
@pytest.mark.parametrize("mode", ["RGB", "L"])
def test_matches_pillow(size: tuple[int, int], options: dict[str, object], mode: str) -> None:
    data = encode(picture(*size).convert(mode), **options)  # type: ignore[attr-defined]
    worst, mean = compare(data)
    assert worst <= 2 and mean <= 0.5
    # Stronger than the issue asks: libjpeg's islow IDCT, fancy upsampling and
    # colour tables are followed exactly.
    assert worst == 0


def test_restart_markers_are_really_there() -> None:
    data = encode(picture(160, 32), quality=75, restart_marker_blocks=1)
    assert b"\xff\xdd" in data and b"\xff\xd0" in data and b"\xff\xd7" in data
    assert compare(data) == (0, 0.0)


def test_640x480_photo_like() -> None:
    data = encode(picture(640, 480, seed=3), quality=85)
    assert compare(data)[0] == 0


def exif(orientation: int, order: str) -> bytes:
    end = "<" if order == "II" else ">"
    ifd = struct.pack(end + "H", 2)
    ifd += struct.pack(end + "HHI", 0x010F, 2, 4) + b"abc\0"
    ifd += struct.pack(end + "HHIHH", 0x0112, 3, 1, orientation, 0)
    ifd += struct.pack(end + "I", 0)
    tiff = order.encode() + struct.pack(end + "HI", 42, 8) + ifd
    body = b"Exif\0\0" + tiff
    return b"\xff\xe1" + struct.pack(">H", len(body) + 2) + body


@pytest.mark.parametrize("order", ["II", "MM"])
@pytest.mark.parametrize("orientation", [1, 3, 6, 8])
def test_exif_orientation_is_reported(order: str, orientation: int) -> None:
    plain = encode(picture(9, 7), quality=90)
    data = plain[:2] + exif(orientation, order) + plain[2:]
    assert decode_jpeg(data, "o.jpg")[4] == {"orientation": orientation}
    assert decode_jpeg(data, "o.jpg")[3] == decode_jpeg(plain, "o.jpg")[3]


def test_exif_orientation_from_pillow() -> None:
    image = picture(8, 8)
    exif_data = Image.Exif()
    exif_data[0x0112] = 6
    data = encode(image, exif=exif_data)
    assert decode_jpeg(data, "p.jpg")[4] == {"orientation": 6}
    exif_data[0x0112] = 9  # out of range: not an orientation
    assert decode_jpeg(encode(image, exif=exif_data), "p.jpg")[4] == {"orientation": None}


def replace_marker_segment(data: bytes, marker: int, body: bytes) -> bytes:
    pos = data.index(bytes((0xFF, marker)))
    length = struct.unpack(">H", data[pos + 2 : pos + 4])[0]
    return (
        data[:pos]
        + bytes((0xFF, marker))
        + struct.pack(">H", len(body) + 2)
        + body
        + data[pos + 2 + length :]
    )


def adobe(transform: int) -> bytes:
    body = b"Adobe" + struct.pack(">HHHB", 100, 0, 0, transform)
    return b"\xff\xee" + struct.pack(">H", len(body) + 2) + body


def test_adobe_transform_flag_is_respected() -> None:
    image = picture(16, 8)
    rgb = encode(image, quality=95, subsampling=0, keep_rgb=True)
    assert b"Adobe" in rgb and b"JFIF" not in rgb
    assert compare(rgb) == (0, 0.0)  # transform 0: the planes are R, G, B
    ycc = encode(image, quality=95, subsampling=0)
    assert b"JFIF" in ycc
    plain = decode_jpeg(ycc, "a.jpg")[3]
    without_jfif = replace_marker_segment(ycc, 0xE0, b"")
    # An Adobe marker with transform 1 (YCbCr) changes nothing; transform 0 does.
    assert decode_jpeg(without_jfif[:2] + adobe(1) + without_jfif[2:], "a.jpg")[3] == plain
    as_rgb = without_jfif[:2] + adobe(0) + without_jfif[2:]
    assert decode_jpeg(as_rgb, "a.jpg")[3] != plain
    assert compare(as_rgb) == (0, 0.0)
    # libjpeg lets a JFIF marker win over Adobe's flag (JFIF implies YCbCr).
    assert decode_jpeg(ycc[:2] + adobe(0) + ycc[2:], "a.jpg")[3] == plain


def frame_of(data: bytes) -> int:
    for sof in (0xC0, 0xC1, 0xC2):
        pos = data.find(bytes((0xFF, sof)))
        if pos >= 0:
            return pos
    raise AssertionError("no SOF")


def with_byte(data: bytes, pos: int, value: int) -> bytes:
    return data[:pos] + bytes((value,)) + data[pos + 1 :]


@pytest.mark.parametrize(
    ("sof", "words"),
    [(0xC3, "lossless"), (0xC5, "hierarchical"), (0xC7, "hierarchical lossless"),
     (0xCB, "arithmetic-coded lossless"), (0xCE, "arithmetic-coded hierarchical")],
)  # fmt: skip
def test_unsupported_kinds_are_refused(sof: int, words: str) -> None:
    data = encode(picture(8, 8), quality=75)
    bad = with_byte(data, frame_of(data) + 1, sof)
    with pytest.raises(ImageError, match=f"unsupported.*{words}"):
        decode_jpeg(bad, "u.jpg")


def test_cmyk_is_refused() -> None:
    data = encode(picture(8, 8).convert("CMYK"), quality=75)
    with pytest.raises(ImageError, match="unsupported.*CMYK"):
        decode_jpeg(data, "cmyk.jpg")


def test_twelve_bit_is_refused() -> None:
    data = encode(picture(8, 8), quality=75)
    bad = with_byte(data, frame_of(data) + 4, 12)
    with pytest.raises(ImageError, match="unsupported.*12-bit"):
        decode_jpeg(bad, "d.jpg")


def test_sof1_extended_is_decoded() -> None:
    data = encode(picture(20, 12), quality=75)
    ext = with_byte(data, frame_of(data) + 1, 0xC1)
    assert decode_jpeg(ext, "e.jpg")[3] == decode_jpeg(data, "e.jpg")[3]


@pytest.mark.parametrize("size", [(65535, 65535), (8193, 8192), (0, 5)])
def test_huge_or_empty_declared_sizes_are_refused_before_decoding(size: tuple[int, int]) -> None:
    data = encode(picture(8, 8), quality=75)
    pos = frame_of(data) + 5
    bad = data[:pos] + struct.pack(">HH", size[1], size[0]) + data[pos + 4 :]
    with pytest.raises(ImageError, match="more than|size is"):
        decode_jpeg(bad, "big.jpg")


def test_max_pixels_can_be_lowered() -> None:
    data = encode(picture(20, 10), quality=75)
    assert decode_jpeg(data, "m.jpg", 200)[0] == 20
    with pytest.raises(ImageError, match="more than the 199"):
        decode_jpeg(data, "m.jpg", 199)


def test_zero_height_dnl_is_refused() -> None:
    data = encode(picture(8, 8), quality=75)
    pos = frame_of(data) + 5
    with pytest.raises(ImageError, match="DNL"):
        decode_jpeg(data[:pos] + b"\0\0" + data[pos + 2 :], "dnl.jpg")


@pytest.mark.parametrize("progressive", [False, True])
def test_every_truncation_is_an_image_error(progressive: bool) -> None:
    """Cut anywhere before its EOI marker, a file is refused, as Pillow refuses
    it; a progressive file cut between two scans too (libjpeg would show a
    blurred image)."""
    data = encode(picture(24, 16), quality=75, progressive=progressive)
    for cut in range(len(data) - 2):
        with pytest.raises(ImageError, match="cut.jpg is (truncated|corrupt)"):
            decode_jpeg(data[:cut], "cut.jpg")


@pytest.mark.parametrize("progressive", [False, True])
def test_missing_eoi_is_tolerated(progressive: bool) -> None:
    """Only the EOI marker missing: libjpeg decodes it, as browsers do (Pillow
    says "truncated", having nothing left to feed libjpeg)."""
    data = encode(picture(24, 16), quality=75, progressive=progressive)
    assert data.endswith(b"\xff\xd9")
    assert decode_jpeg(data[:-2], "x.jpg") == decode_jpeg(data, "x.jpg")


@pytest.mark.parametrize(
    "data",
    [b"", b"\xff\xd8", b"\xff\xd8\xff\xd9", b"\xff\xd8\xff\xc0\x00\x02", b"\xff\xd8" + b"\xff" * 99,
     b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff\xda\x00\x08\x01\x01\x00\x00\x3f\x00"],
    ids=["empty", "soi", "soi-eoi", "short-sof", "fill", "png", "sos-first"],
)  # fmt: skip
def test_garbage_is_an_image_error(data: bytes) -> None:
    with pytest.raises(ImageError, match="g.jpg"):
        decode_jpeg(data, "g.jpg")


def test_bad_huffman_tables_are_refused() -> None:
    data = encode(picture(8, 8), quality=75)
    # 3 codes of length 1 cannot exist.
    table = b"\x00" + bytes([3] + [0] * 15) + b"\x00\x01\x02"
    with pytest.raises(ImageError, match="Huffman"):
        decode_jpeg(replace_marker_segment(data, 0xC4, table), "h.jpg")
    dc_symbol_16 = b"\x00" + bytes([1] + [0] * 15) + b"\x10"
    with pytest.raises(ImageError, match="h.jpg is corrupt: Bogus Huffman table"):
        decode_jpeg(replace_marker_segment(data, 0xC4, dc_symbol_16), "h.jpg")


def codec_jpeg(image: object, quality: int = 85, **options: bool) -> bytes:
    """A JPEG written by wasinn's codec, which also writes arithmetic-coded
    files (SOF9 and SOF10), which Pillow reads but cannot write."""
    from wasinn import _jpeg_codec

    pixels = np.asarray(image)
    height, width = pixels.shape[:2]
    channels = 1 if pixels.ndim == 2 else 3
    return _jpeg_codec.encode(pixels.tobytes(), width, height, channels, quality, **options)


@pytest.mark.parametrize("progressive", [False, True])
@pytest.mark.parametrize("mode", ["RGB", "L"])
def test_arithmetic_coded_matches_pillow(progressive: bool, mode: str) -> None:
    for size in ((1, 1), (17, 9), (100, 75)):
        data = codec_jpeg(picture(*size).convert(mode), arithmetic=True, progressive=progressive)
        assert bytes((0xFF, 0xCA if progressive else 0xC9)) in data  # SOF10 or SOF9
        assert compare(data) == (0, 0.0)


@pytest.mark.parametrize("mode", ["RGB", "L"])
@pytest.mark.parametrize("quality", [1, 10, 50, 75, 90, 95])
def test_encoder_writes_pillows_bytes(mode: str, quality: int) -> None:
    """image.encode(..., "jpeg") at Pillow's defaults (4:2:0, baseline, no
    optimize) is Pillow's save, byte for byte, and decodes to Pillow's pixels."""
    for size in ((1, 1), (17, 9), (64, 48), (333, 199)):
        source = picture(*size, seed=quality).convert(mode)  # type: ignore[attr-defined]
        pixels = np.asarray(source)
        tensor = Tensor(pixels if mode == "RGB" else pixels[:, :, None])
        data = image.encode(tensor, "jpeg", quality=quality)
        assert data == encode(source, quality=quality), (size, quality)
        assert compare(data)[0] == 0
    default = image.encode(Tensor(np.asarray(picture(8, 8))), "jpeg")
    assert default == encode(picture(8, 8))  # quality 75, like Pillow's


def cv2_jpeg(width: int, height: int, sampling: str, **options: int) -> bytes:
    """A JPEG written by OpenCV, which also writes 4:4:0 (vertical-only chroma
    halving, libjpeg's h1v2) and 4:1:1, which Pillow cannot."""
    cv2 = pytest.importorskip("cv2")
    params = [cv2.IMWRITE_JPEG_QUALITY, 85, cv2.IMWRITE_JPEG_SAMPLING_FACTOR,
              getattr(cv2, f"IMWRITE_JPEG_SAMPLING_FACTOR_{sampling}")]  # fmt: skip
    for key, value in options.items():
        params += [getattr(cv2, f"IMWRITE_JPEG_{key.upper()}"), value]
    rgb = np.asarray(picture(width, height, seed=2))
    ok, buf = cv2.imencode(".jpg", np.ascontiguousarray(rgb[:, :, ::-1]), params)
    assert ok
    return bytes(buf.tobytes())


@pytest.mark.parametrize("sampling", ["444", "422", "420", "440", "411"])
def test_opencv_samplings_match_pillow(sampling: str) -> None:
    for size in ((100, 75), (33, 47)):
        assert compare(cv2_jpeg(*size, sampling)) == (0, 0.0)
        assert compare(cv2_jpeg(*size, sampling, progressive=1)) == (0, 0.0)


@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_transpose_turns_pixels_as_pillow(orientation: int) -> None:
    """decode(exif_transpose=True) gives Pillow's ImageOps.exif_transpose pixels;
    the info still says what the file says."""
    from PIL import ImageOps

    rng = random.Random(orientation)
    source = Image.frombytes("RGB", (37, 21), bytes(rng.randrange(256) for _ in range(37 * 21 * 3)))
    exif = source.getexif()
    exif[0x0112] = orientation
    out = io.BytesIO()
    source.save(out, "JPEG", quality=95, exif=exif.tobytes())
    data = out.getvalue()
    want = ImageOps.exif_transpose(Image.open(io.BytesIO(data)))
    pixels, info = image.decode_with_info(data, exif_transpose=True)
    assert info["orientation"] == orientation
    assert pixels.shape == (want.height, want.width, 3)
    assert pixels.tobytes() == want.tobytes()
    assert image.decode(data).shape == (21, 37, 3)  # as stored by default
    gray = image.decode(data, exif_transpose=True, mode="L")
    assert gray.tobytes() == want.convert("L").tobytes()


@pytest.mark.parametrize("orientation", [3, 6, 8])
@pytest.mark.parametrize("fmt", ["PNG", "WEBP"])
def test_exif_transpose_reads_png_and_webp_exif_chunks(fmt: str, orientation: int) -> None:
    """A PNG's eXIf chunk and a WebP's EXIF chunk turn the pixels as Pillow's
    ImageOps.exif_transpose does (lossless WebP, so the pixels compare exactly)."""
    from PIL import ImageOps

    rng = random.Random(orientation)
    source = Image.frombytes("RGB", (23, 11), bytes(rng.randrange(256) for _ in range(23 * 11 * 3)))
    exif = source.getexif()
    exif[0x0112] = orientation
    out = io.BytesIO()
    source.save(out, fmt, exif=exif.tobytes(), **({"lossless": True} if fmt == "WEBP" else {}))
    data = out.getvalue()
    want = ImageOps.exif_transpose(Image.open(io.BytesIO(data))).convert("RGB")
    pixels, info = image.decode_with_info(data, exif_transpose=True, mode="RGB")
    assert info["orientation"] == orientation
    assert pixels.shape == (want.height, want.width, 3)
    assert pixels.tobytes() == want.tobytes()
