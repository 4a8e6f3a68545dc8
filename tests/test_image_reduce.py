"""wasinn.image.decode(reduce=, min_size=) natively against Pillow: JPEGs equal to
``Image.draft`` (libjpeg-turbo's DCT scaling, on both sides), PNG, WebP and PPM
equal to ``Image.reduce``; EXIF orientation and ``mode`` applied after the
reduction; the header's size still limited by ``max_pixels``."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image, ImageOps
from test_image import CASES, encode_png, pillow_pixels, random_case
from test_jpeg import encode, picture
from test_webp import KINDS, webp_file

from wasinn import _pixels, image

SIZES = ((320, 240), (333, 199), (41, 17), (9, 7), (1, 1))
JPEG_OPTIONS = {
    "q90": {"quality": 90},
    "q75_422": {"quality": 75, "subsampling": 1},
    "q95_444": {"quality": 95, "subsampling": 0},
    "prog": {"quality": 80, "progressive": True},
    "restart": {"quality": 75, "restart_marker_blocks": 5},
}


def drafted(data: bytes, factor: int) -> tuple[tuple[int, int], bytes]:
    """Pillow's ``draft`` at 1/factor: (size, pixels). It picks the largest scale
    whose result is at least the size asked, so asking ``w // factor`` gives
    exactly ``factor`` (checked by the caller through the size)."""
    with Image.open(io.BytesIO(data)) as im:
        width, height = im.size
        im.draft(im.mode, (width // factor, height // factor))
        return im.size, im.tobytes()


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@pytest.mark.parametrize("kind", sorted(JPEG_OPTIONS))
@pytest.mark.parametrize("gray", [False, True])
def test_jpeg_reduce_is_pillows_draft(kind: str, gray: bool) -> None:
    for size in SIZES:
        source = picture(*size, seed=1)
        data = encode(source.convert("L") if gray else source, **JPEG_OPTIONS[kind])
        for factor in (2, 4, 8):
            pixels, info = image.decode_with_info(data, reduce=factor)
            want_size = (ceil_div(size[0], factor), ceil_div(size[1], factor))
            assert pixels.shape == (want_size[1], want_size[0], 1 if gray else 3)
            assert info["reduce"] == factor
            if size[0] < factor or size[1] < factor:
                continue  # Pillow cannot be asked for less than 1 pixel a side
            got_size, want = drafted(data, factor)
            assert got_size == want_size, (size, factor)
            assert pixels.tobytes() == want, (kind, gray, size, factor)


def test_min_size_picks_pillows_draft_scale() -> None:
    data = encode(picture(333, 199, seed=2), quality=85)
    for wanted in ((1, 1), (40, 24), (41, 24), (42, 25), (83, 49), (84, 50), (166, 99),
                   (167, 99), (333, 199), (334, 10), (10, 200)):  # fmt: skip
        pixels, info = image.decode_with_info(data, min_size=wanted)
        with Image.open(io.BytesIO(data)) as im:
            im.draft("RGB", wanted)
            assert pixels.shape[:2] == (im.height, im.width), wanted
            assert pixels.tobytes() == im.tobytes(), wanted
        factor = info["reduce"]
        assert isinstance(factor, int)
        # the largest factor that still gives at least the size asked (1 if none does)
        assert factor == 1 or (333 // factor >= wanted[0] and 199 // factor >= wanted[1])
        assert factor == 8 or 333 // (2 * factor) < wanted[0] or 199 // (2 * factor) < wanted[1]


def test_min_size_examples() -> None:
    data = encode(picture(4000, 3000, seed=3), quality=80)
    assert image.decode(data, min_size=(128, 128)).shape == (375, 500, 3)  # 1/8
    assert image.decode(data, min_size=(1000, 1000)).shape == (1500, 2000, 3)  # 1/2
    assert image.decode(data, min_size=(900, 700)).shape == (750, 1000, 3)  # 1/4
    assert image.decode(data, min_size=(4001, 1)).shape == (3000, 4000, 3)  # whole


def reduced(im: Image.Image, factor: int) -> bytes:
    """Pillow's ``Image.reduce`` (what wasinn's box reduction equals)."""
    return im.reduce(factor).tobytes()


@pytest.mark.parametrize("colour_depth", CASES)
@pytest.mark.parametrize("interlace", [False, True])
def test_png_reduce_is_pillows_reduce(colour_depth: tuple[int, int], interlace: bool) -> None:
    colour, depth = colour_depth
    for width, height in ((21, 13), (16, 8), (3, 2)):
        samples, plte = random_case(colour, depth, width, height, width)
        data = encode_png(width, height, colour, depth, samples, interlace=interlace, plte=plte)
        channels, pixels = pillow_pixels(data)
        mode = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}[channels]
        full = Image.frombytes(mode, (width, height), pixels)
        for factor in (2, 4, 8):
            got = image.decode(data, reduce=factor)
            assert got.shape == (ceil_div(height, factor), ceil_div(width, factor), channels)
            assert got.tobytes() == reduced(full, factor), (colour, depth, width, factor)


@pytest.mark.parametrize("mode", ["L", "LA", "RGB", "RGBA"])
def test_box_reduce_premultiplies_alpha_as_pillow(mode: str) -> None:
    """Pillow's reduce averages LA and RGBA premultiplied (its La and RGBa):
    alpha 0, 1, 254 and 255 next to each other, in boxes cut at every edge."""
    rng = np.random.default_rng(7)
    bands = len(mode)
    for width, height in ((17, 11), (8, 8), (23, 5)):
        a = rng.integers(0, 256, (height, width, bands), dtype=np.uint8)
        if mode.endswith("A"):
            a[..., -1] = rng.choice(np.array([0, 1, 2, 128, 254, 255], np.uint8), (height, width))
        im = Image.fromarray(a[..., 0] if bands == 1 else a, mode)
        out = io.BytesIO()
        im.save(out, "PNG")
        for factor in (2, 4, 8):
            assert image.decode(out.getvalue(), reduce=factor).tobytes() == reduced(im, factor)
        # Factor 1 is Pillow's copy: no premultiplied round trip through alpha 1 or 2.
        assert _pixels.reduce(a.tobytes(), width, height, bands, 1) == reduced(im, 1)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_webp_reduce_is_pillows_reduce(kind: str) -> None:
    for size in ((64, 48), (37, 23)):
        data = webp_file(kind, *size, seed=size[0])
        with Image.open(io.BytesIO(data)) as im:
            im.load()
            for factor in (2, 4, 8):
                pixels, info = image.decode_with_info(data, reduce=factor)
                assert pixels.tobytes() == reduced(im, factor), (kind, size, factor)
                assert info["reduce"] == factor


def test_ppm_reduce_is_pillows_reduce() -> None:
    im = picture(19, 10, seed=4)
    out = io.BytesIO()
    im.save(out, "PPM")  # type: ignore[attr-defined]
    assert image.decode(out.getvalue(), reduce=4).tobytes() == reduced(im, 4)  # type: ignore[arg-type]


def with_orientation(orientation: int, fmt: str) -> tuple[bytes, Image.Image]:
    """A 37x21 picture saved as ``fmt`` with EXIF ``orientation``; and it as stored."""
    im = picture(37, 21, seed=orientation)
    exif = Image.Exif()
    exif[0x0112] = orientation
    out = io.BytesIO()
    options = {"quality": 90} if fmt == "JPEG" else {"lossless": True} if fmt == "WEBP" else {}
    im.save(out, fmt, exif=exif, **options)  # type: ignore[attr-defined]
    return out.getvalue(), im  # type: ignore[return-value]


@pytest.mark.parametrize("orientation", range(1, 9))
@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "WEBP"])
def test_exif_transpose_follows_the_reduction(orientation: int, fmt: str) -> None:
    """Reduced as stored, then turned: Pillow's draft or reduce, then exif_transpose
    (the boxes cut short stay at the stored image's right and bottom edges)."""
    data, _ = with_orientation(orientation, fmt)
    with Image.open(io.BytesIO(data)) as im:
        if fmt == "JPEG":
            im.draft("RGB", (im.width // 4, im.height // 4))
            small = im.copy()
        else:
            im.load()
            small = im.reduce(4)
        small.info["exif"] = im.info.get("exif")
        small.getexif()[0x0112] = orientation
        want = ImageOps.exif_transpose(small)
    got, info = image.decode_with_info(data, reduce=4, exif_transpose=True)
    assert info["orientation"] == orientation
    assert got.shape[:2] == (want.height, want.width)
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "WEBP"])
def test_min_size_is_upright_with_exif_transpose(fmt: str) -> None:
    """A 37x21 picture stored sideways (orientation 6) is 21x37 upright: 1/2 gives
    11x19, enough for (10, 18) upright but not as stored (19 wide, 11 high)."""
    data, _ = with_orientation(6, fmt)
    upright = image.decode_with_info(data, min_size=(10, 18), exif_transpose=True)
    assert upright[0].shape[:2] == (19, 11) and upright[1]["reduce"] == 2
    stored = image.decode_with_info(data, min_size=(10, 18))
    assert stored[0].shape[:2] == (21, 37) and stored[1]["reduce"] == 1


def test_mode_converts_the_reduced_pixels() -> None:
    rgba = np.random.default_rng(5).integers(0, 256, (30, 20, 4), dtype=np.uint8)
    im = Image.fromarray(rgba, "RGBA")
    out = io.BytesIO()
    im.save(out, "PNG")
    for mode in ("L", "RGB", "RGBA"):
        got = image.decode(out.getvalue(), reduce=2, mode=mode)
        assert got.tobytes() == im.reduce(2).convert(mode).tobytes(), mode


def test_max_pixels_counts_the_declared_size() -> None:
    """Entropy decoding and inflating cost the whole image whatever the scale: a
    header over the limit is refused before anything is decoded."""
    jpeg = encode(picture(200, 100), quality=75)
    png = io.BytesIO()
    picture(200, 100).save(png, "PNG")  # type: ignore[attr-defined]
    for data in (jpeg, png.getvalue()):
        with pytest.raises(image.ImageTooLargeError, match="200x100 = 20000 pixels"):
            image.decode(data, reduce=8, max_pixels=19999)
        with pytest.raises(image.ImageTooLargeError):
            image.decode(data, min_size=(10, 10), max_pixels=19999)
        assert image.decode(data, reduce=8, max_pixels=20000).shape[:2] == (13, 25)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"reduce": 3}, "reduce is 1 \\(whole\\), 2, 4 or 8 .*not 3"),
        ({"reduce": 0}, "not 0"),
        ({"reduce": 16}, "not 16"),
        ({"reduce": True}, "not True"),
        ({"reduce": 2.0}, "not 2.0"),
        ({"reduce": "2"}, "not '2'"),
        (
            {"min_size": (0, 10)},
            "min_size is \\(width, height\\), two positive ints, not \\(0, 10\\)",
        ),
        ({"min_size": (128,)}, "not \\(128,\\)"),
        ({"min_size": 128}, "not 128"),
        ({"min_size": (128.0, 128)}, "not \\(128.0, 128\\)"),
        ({"min_size": (True, 1)}, "not \\(True, 1\\)"),
        ({"min_size": (8, 8), "reduce": 2}, "pass reduce= or min_size=, not both"),
    ],
)
def test_bad_arguments_say_what_is_wanted(options: dict[str, object], message: str) -> None:
    data = encode(picture(16, 16), quality=75)
    with pytest.raises(image.ImageError, match=message):
        image.decode(data, **options)  # type: ignore[arg-type]


def test_min_size_takes_a_list_too() -> None:
    data = encode(picture(64, 64), quality=75)
    assert image.decode(data, min_size=[16, 16]).shape == (16, 16, 3)  # type: ignore[arg-type]


def test_reduce_1_is_the_whole_image() -> None:
    data = encode(picture(33, 17), quality=75)
    whole, info = image.decode_with_info(data, reduce=1)
    assert whole.tobytes() == image.decode(data).tobytes() and info["reduce"] == 1
    assert image.decode_with_info(data, min_size=(33, 17))[1]["reduce"] == 1


def test_broken_files_fail_the_same_way_reduced() -> None:
    """A cut file raises the ImageError it raises at full size."""
    jpeg = encode(picture(64, 48), quality=75)
    prog = encode(picture(64, 48), quality=75, progressive=True)
    png = io.BytesIO()
    picture(64, 48).save(png, "PNG")  # type: ignore[attr-defined]
    webp = webp_file("lossy", 64, 48)
    for data in (jpeg, prog, png.getvalue(), webp):
        for broken in (data[: len(data) // 2], data[: len(data) * 3 // 4]):
            with pytest.raises(image.ImageError) as whole:
                image.decode(broken, name="x")
            for factor in (2, 8):
                with pytest.raises(image.ImageError) as reduced_error:
                    image.decode(broken, name="x", reduce=factor)
                assert str(reduced_error.value) == str(whole.value)
