"""WebP in wasinn.image (libwebp 1.2.4 in ``wasinn._webp_codec``) against
Pillow (its own, newer libwebp): decoded pixels byte for byte, files wasinn
writes read back by Pillow, and hostile files refused with ImageError, quickly,
natively and inside a real component (tests/image_app)."""

from __future__ import annotations

import io
import json
import struct
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ROOT
from PIL import Image
from test_image_app import run_files

from wasinn import Tensor, image
from wasinn.image import ImageError, ImageTooLargeError

APP = ROOT / "tests" / "image_app"
SIZES = ((1, 1), (17, 13), (4000, 1), (64, 48))
# kind -> Pillow's save options and whether the picture has alpha
KINDS = {
    "lossy": ({"quality": 80}, False),
    "lossy-alpha": ({"quality": 80}, True),
    "lossless": ({"lossless": True}, False),
    "lossless-alpha": ({"lossless": True}, True),
}


def photo(width: int, height: int, seed: int = 0, alpha: bool = False) -> np.ndarray:
    """Gradients plus noise (like a photo, for the lossy coder); alpha a ramp plus noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    planes = [x * 255 // width, y * 255 // height, (x + y) % 256]
    if alpha:
        planes.append((x * 7 + y * 3) % 256)
    base = np.stack(planes, -1) + rng.integers(-12, 13, (height, width, len(planes)))
    return np.clip(base, 0, 255).astype(np.uint8)


def pillow_webp(pixels: np.ndarray, **options: Any) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "WEBP", **options)
    return out.getvalue()


def pillow_read(data: bytes) -> tuple[str, bytes]:
    with Image.open(io.BytesIO(data)) as im:
        im.load()
        return im.mode, im.tobytes()


def webp_file(kind: str, width: int, height: int, seed: int = 0) -> bytes:
    options, alpha = KINDS[kind]
    return pillow_webp(photo(width, height, seed, alpha), **options)


def chunk(fourcc: bytes, body: bytes) -> bytes:
    """A RIFF chunk, padded to an even size."""
    return fourcc + struct.pack("<I", len(body)) + body + b"\0" * (len(body) & 1)


def riff(*chunks: bytes, size: int | None = None) -> bytes:
    """A WebP file of ``chunks`` (``size``: the RIFF size to claim instead of the true one)."""
    body = b"WEBP" + b"".join(chunks)
    return b"RIFF" + struct.pack("<I", len(body) if size is None else size) + body


def chunks_of(data: bytes) -> list[tuple[bytes, bytes]]:
    """(fourcc, body) of each chunk after the RIFF header (a short tail is dropped)."""
    out, pos = [], 12
    while pos + 8 <= len(data):
        fourcc, size = data[pos : pos + 4], struct.unpack("<I", data[pos + 4 : pos + 8])[0]
        out.append((fourcc, data[pos + 8 : pos + 8 + size]))
        pos += 8 + size + (size & 1)
    return out


def vp8x(width: int, height: int, alpha: bool = False, animation: bool = False) -> bytes:
    """A VP8X chunk: flags (alpha 0x10, animation 0x02) and the canvas size minus one."""
    flags = (0x10 if alpha else 0) | (0x02 if animation else 0)
    size = (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return chunk(b"VP8X", bytes([flags, 0, 0, 0]) + size)


def vp8l_header(width: int, height: int, alpha: bool = False) -> bytes:
    """A VP8L bitstream's first 5 bytes: signature, 14-bit sizes minus one, alpha, version 0."""
    bits = (width - 1) | (height - 1) << 14 | int(alpha) << 28
    return b"\x2f" + struct.pack("<I", bits)


def hostile_webps() -> dict[str, bytes]:
    """Files that must give ImageError (name -> bytes): huge declared sizes,
    truncations at every chunk boundary and inside bitstreams, RIFF sizes that
    lie, garbage chunks, broken VP8L Huffman codes, zero sizes."""
    lossy = webp_file("lossy", 17, 13)
    alpha = webp_file("lossy-alpha", 17, 13)
    lossless = webp_file("lossless-alpha", 17, 13)
    vp8 = chunks_of(webp_file("lossy", 1, 1))[0][1]
    huge_vp8 = vp8[:6] + b"\xff\x3f\xff\x3f" + vp8[10:]  # the frame header's 14-bit sizes
    out = {
        "empty": b"",
        "riff-header-only": b"RIFF\x04\x00\x00\x00WEBP",
        "canvas-16383x16383": riff(vp8x(16383, 16383), chunk(b"VP8 ", huge_vp8)),
        "canvas-16383x16383-over-1x1": riff(vp8x(16383, 16383), chunk(b"VP8 ", vp8)),
        "canvas-16383x16383-alone": riff(vp8x(16383, 16383, alpha=True)),
        "vp8l-16383x16383": riff(chunk(b"VP8L", vp8l_header(16383, 16383) + bytes(64))),
        "vp8l-bad-huffman-zeros": riff(chunk(b"VP8L", vp8l_header(64, 64) + bytes(64))),
        "vp8l-bad-huffman-ones": riff(chunk(b"VP8L", vp8l_header(64, 64) + b"\xff" * 64)),
        "vp8l-no-bitstream": riff(chunk(b"VP8L", vp8l_header(64, 64))),
        "vp8l-version-1": riff(chunk(b"VP8L", b"\x2f" + struct.pack("<I", 1 << 29) + bytes(8))),
        # the VP8 key frame header with a 0x0 size (14-bit width and height after the start code)
        "vp8-zero-size": riff(chunk(b"VP8 ", vp8[:6] + bytes(4) + vp8[10:])),
        "vp8-16383x16383": riff(chunk(b"VP8 ", huge_vp8)),
        "vp8x-alone": riff(vp8x(17, 13)),
        "vp8x-canvas-mismatch": riff(vp8x(18, 13), *[chunk(k, b) for k, b in chunks_of(lossy)]),
        "animated": riff(vp8x(17, 13, animation=True), chunk(b"ANIM", bytes(6))),
        "junk-before-vp8": riff(chunk(b"JUNK", bytes(10)), chunk(b"VP8 ", vp8)),
        "chunk-size-past-the-end": lossy[:16] + struct.pack("<I", 1 << 20) + lossy[20:],
        "chunk-size-4-gib": lossy[:16] + b"\xf0\xff\xff\xff" + lossy[20:],
        "garbage-chunk-size-lies": riff(
            vp8x(17, 13), b"JUNK" + struct.pack("<I", 1 << 30) + bytes(16), chunk(b"VP8 ", vp8)
        ),
        "alph-corrupt": riff(
            *[
                chunk(k, (b"\x01" + b"\xff" * 40) if k == b"ALPH" else b)
                for k, b in chunks_of(alpha)
            ]
        ),
    }
    for seed_name, seed in (("lossy", lossy), ("alpha", alpha), ("lossless", lossless)):
        riff_size = len(seed) - 8
        for claim in (0, 4, 12, riff_size - 2, riff_size + 8, riff_size + 1, 0xFFFFFFFF):
            out[f"{seed_name}-riff-size-{claim:#x}"] = (
                seed[:4] + struct.pack("<I", claim) + seed[8:]
            )
        cuts = {12, 16, 20}  # (the padding byte after an odd-sized last chunk is optional)
        pos = 12
        for _, body in chunks_of(seed):
            cuts |= {pos, pos + 4, pos + 8, pos + 8 + len(body) // 2, pos + 8 + len(body) - 1}
            pos += 8 + len(body) + (len(body) & 1)
        for cut in sorted(c for c in cuts if 0 < c < len(seed)):
            out[f"{seed_name}-cut-{cut}"] = seed[:cut]
            # the RIFF size made to agree with the cut: truncated inside a chunk all the same
            fixed = seed[:4] + struct.pack("<I", max(0, cut - 8)) + seed[8:cut]
            out[f"{seed_name}-cut-{cut}-riff-fixed"] = fixed
    return out


def refuses(data: bytes, name: str = "bad.webp", **kw: Any) -> ImageError:
    start = time.process_time()
    with pytest.raises(ImageError) as info:
        image.decode(data, name=name, **kw)
    assert time.process_time() - start < 1.0, name
    assert str(info.value).startswith(name), info.value
    return info.value


# ---------------------------------------------------------------- decoding


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_decodes_like_pillow(kind: str, size: tuple[int, int]) -> None:
    data = webp_file(kind, *size, seed=size[0])
    pixels, info = image.decode_with_info(data, name="a.webp")
    mode, want = pillow_read(data)
    channels = 4 if KINDS[kind][1] else 3
    assert mode == ("RGBA" if channels == 4 else "RGB")
    assert pixels.shape == (size[1], size[0], channels)
    assert pixels.tobytes() == want
    assert info == {
        "format": "webp",
        "lossless": kind.startswith("lossless"),
        "orientation": None,
        "reduce": 1,
    }
    assert image.probe(data) == image.ImageInfo("webp", size[0], size[1], channels)


def test_opaque_rgba_and_gray_sources_decode_as_pillow_does() -> None:
    """An RGBA picture whose alpha is all 255 is stored without alpha (RGB);
    a gray one is stored as RGB: wasinn and Pillow read the same either way."""
    rgb = photo(21, 11)
    opaque = np.concatenate([rgb, np.full((11, 21, 1), 255, np.uint8)], -1)
    gray = rgb[..., 0]
    for source in (opaque, gray):
        for options in ({"quality": 70}, {"lossless": True}):
            data = pillow_webp(source, **options)
            mode, want = pillow_read(data)
            got = image.decode(data)
            assert mode == "RGB" and got.shape == (11, 21, 3) and got.tobytes() == want


def test_unknown_chunks_of_an_extended_file_are_skipped() -> None:
    data = webp_file("lossy-alpha", 17, 13)
    extra = riff(*[chunk(k, b) for k, b in chunks_of(data)], chunk(b"ABCD", b"xyz"))
    extra = extra[:30] + chunk(b"EXIF", b"II*\0") + extra[30:]  # after VP8X: skipped too
    extra = extra[:4] + struct.pack("<I", len(extra) - 8) + extra[8:]
    assert image.decode(extra).tobytes() == image.decode(data).tobytes()


def test_mode_conversions_of_webp() -> None:
    data = webp_file("lossless-alpha", 9, 7)
    with Image.open(io.BytesIO(data)) as im:
        for mode in ("L", "RGB", "RGBA"):
            want = im.convert("RGB").convert("L") if mode == "L" else im.convert(mode)
            assert image.decode(data, mode=mode).tobytes() == want.tobytes()


def test_max_pixels_is_checked_against_the_header() -> None:
    data = webp_file("lossy", 64, 48)
    error = refuses(data, max_pixels=64 * 47)
    assert isinstance(error, ImageTooLargeError)
    assert (error.width, error.height, error.max_pixels) == (64, 48, 64 * 47)
    assert image.decode(data, max_pixels=64 * 48).shape == (48, 64, 3)


def test_animated_webp_is_refused_clearly() -> None:
    frames = [Image.fromarray(photo(16, 8, seed)) for seed in range(2)]
    out = io.BytesIO()
    frames[0].save(out, "WEBP", save_all=True, append_images=frames[1:], duration=100)
    data = out.getvalue()
    error = refuses(data, name="anim.webp")
    assert "animated WebP, which is not supported" in str(error)
    with pytest.raises(ImageError, match="anim.webp is an animated WebP"):
        image.probe(data, name="anim.webp")


def test_hostile_files_are_refused_quickly() -> None:
    cases = hostile_webps()
    for name, data in cases.items():
        error = refuses(data, name=name)
        too_large = name.endswith("16383x16383") or name == "canvas-16383x16383-alone"
        assert isinstance(error, ImageTooLargeError) == too_large, error
        if too_large:
            assert "16383x16383 = 268402689 pixels" in str(error)
    assert "x is an animated WebP, which is not supported" in str(refuses(cases["animated"], "x"))
    assert "x is truncated" in str(refuses(cases["lossless-cut-487"], "x"))
    assert "x is corrupt" in str(refuses(cases["alpha-riff-size-0xffffffff"], "x"))
    assert "x is corrupt" in str(refuses(cases["vp8l-bad-huffman-zeros"], "x"))
    assert "x is corrupt" in str(refuses(cases["vp8-zero-size"], "x"))
    assert "x is empty" in str(refuses(cases["empty"], "x"))


def test_a_huge_canvas_is_refused_before_decoding_even_when_allowed() -> None:
    """With the limit lifted, a 16383x16383 canvas over a 1x1 frame is still
    refused (canvas and frame disagree) before the 800 MB of pixels exist."""
    error = refuses(hostile_webps()["canvas-16383x16383-over-1x1"], max_pixels=1 << 30)
    assert "corrupt" in str(error)


# ---------------------------------------------------------------- encoding


def u8(pixels: np.ndarray) -> Tensor:
    return Tensor(pixels.tobytes(), shape=pixels.shape, dtype="u8")


def mean_error(decoded: bytes, pixels: np.ndarray) -> float:
    """Mean absolute difference of ``decoded`` bytes from the ``pixels`` encoded."""
    return float(np.abs(np.frombuffer(decoded, np.uint8).astype(int) - pixels.ravel()).mean())


@pytest.mark.parametrize("channels", (1, 2, 3, 4))
def test_lossless_encoding_round_trips_through_pillow(channels: int) -> None:
    pixels = photo(23, 9, channels, alpha=True)
    pixels[0, :5, 3] = 0  # fully transparent pixels keep their colour too
    gray = pixels[..., 0:1]
    source = {1: gray, 2: np.concatenate([gray, pixels[..., 3:]], -1)}.get(
        channels, pixels[..., :channels]
    )
    data = image.encode(u8(source), "webp", lossless=True)
    widened = np.repeat(source[..., :1], 3, -1) if channels <= 2 else source[..., :3]
    if channels in (2, 4):
        widened = np.concatenate([widened, source[..., -1:]], -1)
    mode, got = pillow_read(data)
    assert mode == ("RGBA" if channels in (2, 4) else "RGB")
    assert got == widened.tobytes()
    assert image.decode(data).tobytes() == widened.tobytes()


@pytest.mark.parametrize("quality", (0, 50, 80, 100))
@pytest.mark.parametrize("alpha", (False, True))
def test_lossy_encoding_reads_back_in_pillow(quality: int, alpha: bool) -> None:
    pixels = photo(64, 48, quality, alpha=alpha)
    data = image.encode(u8(pixels), "webp", quality=quality)
    mode, got = pillow_read(data)
    assert mode == ("RGBA" if alpha else "RGB")
    assert image.decode(data).tobytes() == got  # both decoders agree on wasinn's files
    error = mean_error(got, pixels)
    assert error < (20 if quality < 50 else 8), error
    if alpha:  # alpha is lossless at Pillow's default alpha quality (100)
        assert np.frombuffer(got, np.uint8)[3::4].tobytes() == pixels[..., 3].tobytes()


def test_quality_trades_size_for_fidelity_and_lossless_effort_still_lossless() -> None:
    pixels = u8(photo(96, 64))
    sizes = [len(image.encode(pixels, "webp", quality=q)) for q in (10, 50, 95)]
    assert sizes == sorted(sizes) and sizes[0] < sizes[2]
    for effort in (0, 100):
        data = image.encode(pixels, "webp", quality=effort, lossless=True)
        assert pillow_read(data)[1] == pixels.tobytes()


def test_encoding_limits() -> None:
    with pytest.raises(ImageError, match="WebP stores at most 16383 x 16383 pixels, not 16384 x 1"):
        image.encode(u8(np.zeros((1, 16384, 3), np.uint8)), "webp")
    with pytest.raises(ImageError, match="WebP quality is an int from 0 to 100"):
        image.encode(u8(np.zeros((2, 2, 3), np.uint8)), "webp", quality=101)
    assert image.decode(image.encode(u8(np.zeros((1, 16383, 1), np.uint8)), "webp")).shape == (
        1, 16383, 3,
    )  # fmt: skip


# ---------------------------------------------------------------- in the component


@pytest.fixture(scope="module")
def image_app() -> Path:
    from conftest import build_app

    return build_app(APP)


@pytest.mark.integration
def test_component_decodes_pillow_webps_like_pillow(image_app: Path, tmp_path: Path) -> None:
    files = {
        f"{kind}_{w}x{h}.webp": webp_file(kind, w, h, seed=w) for kind in KINDS for w, h in SIZES
    }
    files["big_lossy.webp"] = webp_file("lossy", 640, 480)
    files["big_lossless.webp"] = webp_file("lossless-alpha", 640, 480)
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    names = sorted(files)
    for got, name in zip(run_files(image_app, tmp_path, *names), names, strict=True):
        mode, want = pillow_read(files[name])
        assert got["file"] == name and got["shape"][2] == len(mode), got
        assert got["bytes"] == len(want) and got["crc32"] == zlib.crc32(want), name


@pytest.mark.integration
def test_component_encodes_webps_that_pillow_reads(image_app: Path, tmp_path: Path) -> None:
    sources = {"rgb.png": photo(40, 30, 1), "rgba.png": photo(33, 17, 2, alpha=True)}
    sources["gray.png"] = sources["rgb.png"][..., 0]
    for name, pixels in sources.items():
        Image.fromarray(pixels).save(tmp_path / name)
    (tmp_path / "out").mkdir()
    names = sorted(sources)
    for spec in ("webp-lossless", "webp:90", "webp:5"):
        results = run_files(image_app, tmp_path, "--encode", spec, "--out", "out", *names)
        for got, name in zip(results, names, strict=True):
            pixels = sources[name]
            widened = np.repeat(pixels[..., None], 3, -1) if pixels.ndim == 2 else pixels
            data = (tmp_path / str(got["encoded"])).read_bytes()
            mode, back = pillow_read(data)
            assert mode == ("RGBA" if widened.shape[2] == 4 else "RGB"), (spec, name)
            if spec == "webp-lossless":
                assert back == widened.tobytes(), name
            else:
                assert image.decode(data).tobytes() == back  # wasinn natively reads it the same
                error = mean_error(back, widened)
                assert error < (25 if spec == "webp:5" else 8), (spec, name, error)


@pytest.mark.integration
def test_component_refuses_hostile_webps_in_bounded_memory(image_app: Path, tmp_path: Path) -> None:
    """Every hostile file in one run: an ImageError line each (no trap), and
    the guest's linear memory no more than 32 MB above a run on one tiny file."""
    from guest_memory import run_measured

    cases = {f"{name}.webp": data for name, data in hostile_webps().items()}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "tiny.webp").write_bytes(webp_file("lossy", 8, 8))
    names = sorted(cases)
    base = run_measured(ROOT / "build.sh", APP, ["tiny.webp"], tmp_path)
    run = run_measured(ROOT / "build.sh", APP, names, tmp_path)
    for line, name in zip(run.lines, names, strict=True):
        got = json.loads(line)
        assert got["file"] == name and got.get("error") in ("ImageError", "ImageTooLargeError"), got
        assert str(got["message"]).startswith(name), got
    assert base.linear_mb is not None and run.linear_mb is not None
    assert run.linear_mb - base.linear_mb <= 32, (base.linear_mb, run.linear_mb)
    print(
        f"\nhostile WebPs: {len(names)} refused; linear memory {base.linear_mb:.0f} MB -> "
        f"{run.linear_mb:.0f} MB, peak RSS {base.peak_rss_mb:.0f} -> {run.peak_rss_mb:.0f} MB"
    )


@pytest.mark.integration
def test_component_decodes_big_webps_in_3x_their_pixels(image_app: Path, tmp_path: Path) -> None:
    """2048x1536 lossless (RGB, RGBA) and lossy+alpha files, each alone in a
    component against an 8x8 one: the guest's linear memory grows by at most
    3 times the pixels plus 32 MB (the bound wasinn.image documents; the file
    itself and image_app's copy of the pixels are in it too). libwebp's
    lossless decoder holds the whole image as ARGB (4 bytes a pixel)."""
    from guest_memory import run_measured

    files = {
        "tiny.webp": webp_file("lossy", 8, 8),
        "lossless_rgb.webp": pillow_webp(photo(2048, 1536), lossless=True, quality=0),
        "lossless_rgba.webp": pillow_webp(photo(2048, 1536, alpha=True), lossless=True, quality=0),
        "lossy_rgba.webp": pillow_webp(photo(2048, 1536, alpha=True), quality=80),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    runs = {name: run_measured(ROOT / "build.sh", APP, [name], tmp_path) for name in files}
    base = runs.pop("tiny.webp").linear_mb
    assert base is not None
    report = []
    for name, run in runs.items():
        got = json.loads(run.lines[0])
        assert got["crc32"] == zlib.crc32(pillow_read(files[name])[1]), name
        pixels_mb = got["bytes"] / (1 << 20)
        assert run.linear_mb is not None and run.linear_mb - base <= 3 * pixels_mb + 32, name
        report.append(
            f"{name} ({len(files[name]) >> 10} KB): linear memory +{run.linear_mb - base:.0f} MB"
            f" for {pixels_mb:.0f} MB of pixels"
        )
    print("\n" + "\n".join(report))
