"""Fuzz: the JPEG decoder (``_image.jpeg.decode_jpeg``, libjpeg-turbo in ``ext/_jpeg_codec.c``).

Seeds are small files Pillow writes (baseline, progressive, gray, 4:4:4 /
4:2:2 / 4:2:0, restart markers, EXIF). Mutations at the marker-segment level
(drop, duplicate, swap, edit a segment's body, change frame and scan header
fields, split or corrupt the entropy-coded data) and at the byte level must give
well-formed pixels or ``ImageError`` naming the file, quickly; any other
exception is a bug. Pillow's own decoding of the unmutated seeds is the oracle
for the first property. See fuzzing.py for budgets and limits.

``test_component_decodes_mutations_as_natively`` sends such files through a
real component (tests/image_app, a few thousand files per run): each line
is an image or an ``ImageError``, never a trap, and equals the native decode
of the same file (the same pixels' CRC-32, or the same error and message).
Its count is ``WASINN_FUZZ_EXAMPLES`` (``./build.sh fuzz``: 10,000), or
``COMPONENT_EXAMPLES`` in the normal run.

A file whose corrupt data makes huge coefficients once decoded to other
pixels in the guest than natively (about 1 in 1,250 of the mutations):
libjpeg-turbo's islow IDCT computes in ``JLONG``, a ``long``, 64 bits on
x86-64 and 32 in wasm32, where its products overflowed. wasinn builds it with
a 64-bit JLONG on every target (``tools/c_libraries/libjpeg-turbo``);
``test_component_idct_overflow_gives_native_pixels`` keeps such a file.
"""

from __future__ import annotations

import io
import os
import struct
import time
import zlib
from pathlib import Path
from typing import Any

import pytest
from fuzzing import BYTE_OPS, FUZZ, Ops, mutate, ran, time_limit
from hypothesis import given, settings
from hypothesis import strategies as st

from wasinn import image
from wasinn._image.core import ImageError
from wasinn._image.jpeg import decode_jpeg

pytestmark = pytest.mark.fuzz

Image = pytest.importorskip("PIL.Image")


def _picture(width: int, height: int, mode: str, seed: int) -> Any:
    image = Image.new("RGB", (width, height))
    image.putdata(
        [
            ((x * 29 + seed * 7) % 256, (y * 41 + x * 3) % 256, ((x ^ y) * 13 + seed) % 256)
            for y in range(height)
            for x in range(width)
        ]
    )
    return image.convert(mode)


def _encode(image: Any, **options: Any) -> bytes:
    out = io.BytesIO()
    image.save(out, "JPEG", **options)
    return out.getvalue()


def _seeds() -> tuple[bytes, ...]:
    exif = Image.Exif()
    exif[0x0112] = 6
    made = [
        _encode(_picture(13, 11, "RGB", 0), quality=75),
        _encode(_picture(16, 8, "RGB", 1), quality=90, subsampling=0),
        _encode(_picture(18, 9, "RGB", 2), quality=50, subsampling=1),
        _encode(_picture(17, 17, "RGB", 3), quality=75, progressive=True),
        _encode(_picture(9, 20, "RGB", 4), quality=95, progressive=True, subsampling=0),
        _encode(_picture(12, 7, "L", 5), quality=75),
        _encode(_picture(12, 13, "L", 6), quality=60, progressive=True),
        _encode(_picture(32, 16, "RGB", 7), quality=75, restart_marker_blocks=1),
        _encode(_picture(24, 16, "RGB", 8), quality=75, progressive=True, restart_marker_blocks=1),
        _encode(_picture(8, 8, "RGB", 9), quality=75, exif=exif),
        _encode(_picture(10, 6, "RGB", 10), quality=80, keep_rgb=True),
    ]
    return tuple(made)


JPEG_SEEDS = _seeds()


def segments(data: bytes) -> list[list[Any]]:
    """[marker, body, entropy-coded data after it] for each segment after SOI (EOI dropped)."""
    out: list[list[Any]] = []
    pos = 2
    while pos + 4 <= len(data) and data[pos] == 0xFF:
        marker = data[pos + 1]
        if marker == 0xD9:
            break
        length = struct.unpack(">H", data[pos + 2 : pos + 4])[0]
        body = data[pos + 4 : pos + 2 + length]
        pos += 2 + length
        tail = b""
        if marker == 0xDA:
            end = pos
            while end + 1 < len(data) and not (
                data[end] == 0xFF and data[end + 1] not in (0x00, *range(0xD0, 0xD8))
            ):
                end += 1
            tail, pos = data[pos:end], end
        out.append([marker, body, tail])
    return out


def join(parts: list[list[Any]]) -> bytes:
    out = bytearray(b"\xff\xd8")
    for marker, body, tail in parts:
        out += bytes((0xFF, marker & 0xFF)) + struct.pack(">H", (len(body) + 2) & 0xFFFF)
        out += body + tail
    return bytes(out + b"\xff\xd9")


MARKERS = st.sampled_from(
    (0xC0, 0xC1, 0xC2, 0xC3, 0xC4, 0xC9, 0xDA, 0xDB, 0xDD, 0xDC, 0xE0, 0xE1, 0xEE, 0xFE, 0xD0)
)
FIELD_VALUES = st.sampled_from((0, 1, 2, 3, 4, 8, 12, 15, 16, 17, 63, 64, 255)) | st.integers(
    0, 255
)
SEGMENT_OPS = st.one_of(
    st.tuples(st.just("drop"), st.integers(0, 99)),
    st.tuples(st.just("dup"), st.integers(0, 99)),
    st.tuples(st.just("swap"), st.integers(0, 99)),
    st.tuples(st.just("marker"), st.integers(0, 99), MARKERS),
    st.tuples(st.just("field"), st.integers(0, 99), st.integers(0, 40), FIELD_VALUES),
    st.tuples(st.just("body"), st.integers(0, 99), BYTE_OPS),
    st.tuples(st.just("entropy"), st.integers(0, 99), BYTE_OPS),
    st.tuples(st.just("size"), st.integers(0, 8192), st.integers(0, 8192)),
    st.tuples(st.just("insert"), st.integers(0, 99), MARKERS, st.binary(max_size=24)),
)


def mutate_jpeg(data: bytes, ops: Ops) -> bytes:
    parts = segments(data)
    for op in ops:
        if not parts:
            break
        kind = op[0]
        i = op[1] % len(parts) if kind != "size" else 0
        if kind == "drop":
            del parts[i]
        elif kind == "dup":
            parts.insert(i, list(parts[i]))
        elif kind == "swap" and i + 1 < len(parts):
            parts[i], parts[i + 1] = parts[i + 1], parts[i]
        elif kind == "marker":
            parts[i][0] = op[2]
        elif kind == "field" and parts[i][1]:
            body = bytearray(parts[i][1])
            body[op[2] % len(body)] = op[3]
            parts[i][1] = bytes(body)
        elif kind == "body":
            parts[i][1] = mutate(parts[i][1], [op[2]], JPEG_SEEDS)
        elif kind == "entropy":
            scans = [p for p in parts if p[0] == 0xDA]
            if scans:
                scan = scans[op[1] % len(scans)]
                scan[2] = mutate(scan[2], [op[2]], JPEG_SEEDS)
        elif kind == "size":
            for p in parts:
                if p[0] in (0xC0, 0xC1, 0xC2) and len(p[1]) >= 5:
                    p[1] = p[1][:1] + struct.pack(">HH", op[2], op[1]) + p[1][5:]
        elif kind == "insert":
            parts.insert(i, [op[2], op[3], b""])
    return join(parts)


def read_jpeg(data: bytes, reduce: int = 1) -> Any:
    """(w, h, channels) or None for ImageError; any other exception fails the example."""
    with time_limit():
        try:
            w, h, channels, pixels, info = decode_jpeg(data, "fuzzed.jpg", reduce=reduce)
        except ImageError as exc:
            assert "fuzzed.jpg" in str(exc), exc
            return None
    assert type(w) is int and type(h) is int and w > 0 and h > 0
    assert channels in (1, 3)
    assert type(pixels) is bytes and len(pixels) == w * h * channels
    assert set(info) == {"orientation"}
    assert info["orientation"] is None or 1 <= info["orientation"] <= 8
    return w, h, channels


@FUZZ
@given(st.integers(0, 99), st.lists(SEGMENT_OPS, max_size=4), st.lists(BYTE_OPS, max_size=3))
def test_jpeg_decoder_survives_mutations(seed: int, ops: Ops, then: Ops) -> None:
    data = mutate(mutate_jpeg(JPEG_SEEDS[seed % len(JPEG_SEEDS)], ops), then, JPEG_SEEDS)
    whole = read_jpeg(data)
    ran("decoded" if whole is not None else "refused")
    # Reduced decoding reads the same entropy-coded data: the same verdict, a
    # size divided by the factor, rounded up.
    factor = (2, 4, 8)[seed % 3]
    small = read_jpeg(data, factor)
    if whole is None:
        assert small is None
    else:
        assert small == (-(-whole[0] // factor), -(-whole[1] // factor), whole[2])


@FUZZ
@given(st.integers(0, 99), st.lists(BYTE_OPS, min_size=1, max_size=4))
def test_jpeg_decoder_survives_byte_mutations(seed: int, ops: Ops) -> None:
    data = mutate(JPEG_SEEDS[seed % len(JPEG_SEEDS)], ops, JPEG_SEEDS)
    ran("decoded" if read_jpeg(data) is not None else "refused")


def test_harness_seeds_decode_like_pillow() -> None:
    """Unmutated seeds decode to exactly Pillow's pixels (so a seed is a real JPEG)."""
    for seed in JPEG_SEEDS:
        with Image.open(io.BytesIO(seed)) as ref:
            ref.load()
            w, h, channels, pixels, _ = decode_jpeg(seed, "seed.jpg")
            assert (w, h) == ref.size and {1: "L", 3: "RGB"}[channels] == ref.mode
            assert pixels == ref.tobytes()


def test_harness_segment_mutator_keeps_unmutated_files() -> None:
    for seed in JPEG_SEEDS:
        assert decode_jpeg(mutate_jpeg(seed, []), "s.jpg") == decode_jpeg(seed, "s.jpg")
    assert mutate_jpeg(JPEG_SEEDS[0], [("drop", 0)]) != JPEG_SEEDS[0]


#: Files the component test decodes in the normal run (no WASINN_FUZZ_EXAMPLES).
COMPONENT_EXAMPLES = 300
#: Files per image_app run.
BATCH = 2500


def mutated_files(count: int) -> list[bytes]:
    """``count`` files mutated as test_jpeg_decoder_survives_mutations's
    (segment ops, then byte ops; either list may be empty), drawn by
    hypothesis with the fuzz profile: reproducible."""
    files: list[bytes] = []

    @settings(FUZZ, max_examples=count)
    @given(st.integers(0, 99), st.lists(SEGMENT_OPS, max_size=4), st.lists(BYTE_OPS, max_size=3))
    def draw(seed: int, ops: Ops, then: Ops) -> None:
        files.append(mutate(mutate_jpeg(JPEG_SEEDS[seed % len(JPEG_SEEDS)], ops), then, JPEG_SEEDS))

    draw()
    return files


def outcome(data: bytes, name: str) -> tuple[object, ...]:
    """("image", shape, CRC-32) or ("error", class, message) of the native decode."""
    try:
        pixels = image.decode(data, name=name)
    except ImageError as exc:
        return ("error", type(exc).__name__, str(exc))
    return ("image", list(pixels.shape), zlib.crc32(pixels.tobytes()))


@pytest.mark.integration
def test_component_decodes_mutations_as_natively(tmp_path: Path) -> None:
    from test_image_app import APP, build_app, run_files

    budget = os.environ.get("WASINN_FUZZ_EXAMPLES", "").strip()
    files = mutated_files(int(budget) if budget else COMPONENT_EXAMPLES)
    build_app(APP)
    names = [f"f{i:05d}.jpg" for i in range(len(files))]
    for name, data in zip(names, files, strict=True):
        (tmp_path / name).write_bytes(data)
    start = time.perf_counter()
    lines: list[dict[str, Any]] = []
    for i in range(0, len(names), BATCH):
        lines += run_files(APP, tmp_path, *names[i : i + BATCH])
    seconds = time.perf_counter() - start
    assert [line["file"] for line in lines] == names
    differ = []
    for name, data, line in zip(names, files, lines, strict=True):
        if "error" in line:
            assert line["error"] == "ImageError", line
            got: tuple[object, ...] = ("error", line["error"], line["message"])
        else:
            got = ("image", line["shape"], line["crc32"])
        ran("decoded" if got[0] == "image" else "refused")
        want = outcome(data, name)
        if got != want:
            differ.append(f"{name}: component {got}, native {want}")
    assert not differ, "\n".join(differ[:20])
    print(
        f"\ncomponent: {len(files)} mutated JPEGs ({len(set(files))} distinct) in "
        f"{-(-len(files) // BATCH)} runs, {seconds:.1f} s, all as natively"
    )


@pytest.mark.integration
def test_component_idct_overflow_gives_native_pixels(tmp_path: Path) -> None:
    """A mutated file (test_component_decodes_mutations_as_natively's 6,641st)
    whose corrupt data gives huge coefficients: the guest's pixels must be
    the native ones. They were not while libjpeg-turbo's JLONG was a long (32
    bits in wasm32): tools/c_libraries/libjpeg-turbo/jlong-64-bit.patch."""
    from test_image_app import APP, build_app, run_files

    data = (Path(__file__).parent / "data" / "jpeg_idct_overflow.jpg").read_bytes()
    (tmp_path / "overflow.jpg").write_bytes(data)
    build_app(APP)
    (line,) = run_files(APP, tmp_path, "overflow.jpg")
    assert ("image", line["shape"], line["crc32"]) == outcome(data, "overflow.jpg")
