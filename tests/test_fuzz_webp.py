"""Fuzz: WebP in ``wasinn.image`` (libwebp 1.2.4 in ``wasinn._webp_codec``).

Generated pixels encoded by wasinn decode back exactly (lossless) or as Pillow
decodes the same file (lossy). Mutated files (chunk level: drop, duplicate,
swap, insert, edit a body, lie about a chunk's or the RIFF's size, change the
VP8X flags and canvas or a frame header's size; then byte level) give a
well-formed tensor or ``ImageError`` naming the file, quickly; when both wasinn
and Pillow decode one, the pixels agree. ``probe`` never accepts less than
``decode`` does. The component property (also marked ``integration``) runs
mutated files through tests/image_app in batches, one run per batch, and wants
the native result for each: the same pixels or the same error, never a trap.
See fuzzing.py for budgets and limits.
"""

from __future__ import annotations

import io
import json
import random
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fuzzing import _BUDGET, BYTE_OPS, FUZZ, Corpus, Ops, edit_chunks, mutate, ran, time_limit
from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_image import read_image
from test_webp import APP, KINDS, chunk, chunks_of, photo, pillow_webp, riff, vp8x, webp_file

from wasinn import Tensor, image
from wasinn.image import ImageError

pytestmark = pytest.mark.fuzz

Image = pytest.importorskip("PIL.Image")


def _seeds() -> tuple[bytes, ...]:
    """Pillow-written files of every kind and a few sizes, gray sources, a
    VP8X file with extra chunks, and a two-frame animation."""
    files = [webp_file(kind, w, h, seed=w) for kind in sorted(KINDS) for w, h in ((1, 1), (9, 7))]
    files += [webp_file(kind, 33, 5) for kind in sorted(KINDS)]
    files.append(pillow_webp(photo(8, 8)[..., 0], quality=30))
    alpha = webp_file("lossy-alpha", 6, 6)
    stored = [chunk(k, b) for k, b in chunks_of(alpha)[1:]]  # after VP8X
    files.append(riff(vp8x(6, 6, alpha=True), *stored, chunk(b"EXIF", b"II*\0")))
    frames = [Image.fromarray(photo(6, 4, seed)) for seed in range(2)]
    out = io.BytesIO()
    frames[0].save(out, "WEBP", save_all=True, append_images=frames[1:], duration=50)
    files.append(out.getvalue())
    return Corpus(files)


SEEDS = _seeds()
FOURCCS = (b"VP8 ", b"VP8L", b"VP8X", b"ALPH", b"ANIM", b"ANMF", b"ICCP", b"EXIF", b"JUNK")
FOURCC = st.sampled_from(FOURCCS)
SIZE_LIES = (0, 1, 5, 10, 0x7FFFFFFF, 0xFFFFFFF6, 0xFFFFFFFF)
SIZES = st.sampled_from(SIZE_LIES) | st.integers(0, 4096)
WEBP_OPS = st.one_of(
    st.tuples(st.just("drop"), st.integers(0, 99)),
    st.tuples(st.just("dup"), st.integers(0, 99)),
    st.tuples(st.just("swap"), st.integers(0, 99)),
    st.tuples(st.just("body"), st.integers(0, 99), BYTE_OPS),
    st.tuples(st.just("insert"), st.integers(0, 99), FOURCC, st.binary(max_size=24)),
    st.tuples(st.just("size"), st.integers(0, 99), SIZES),
    st.tuples(st.just("riff"), SIZES),
    st.tuples(st.just("vp8x"), st.integers(0, 2), st.integers(0, 1 << 24)),
    st.tuples(st.just("frame"), st.integers(0, 1), st.integers(0, 1 << 14)),
)  # fmt: skip


def mutate_webp(data: bytes, ops: Ops) -> bytes:
    """Chunk-level ``ops`` (WEBP_OPS) on a WebP file; sizes stay true unless an op lies."""
    chunks: list[list[Any]] = [[k, b, None] for k, b in chunks_of(data)]
    riff_size: int | None = None
    for op in ops:
        kind = op[0]
        i = op[1] % len(chunks) if chunks and kind in ("drop", "dup", "swap", "body") else 0
        if kind == "riff":
            riff_size = op[1]
        elif kind in ("vp8x", "frame"):
            _edit_header(chunks, kind, op[1], op[2])
        elif kind == "insert":
            chunks.insert(op[1] % (len(chunks) + 1), [op[2], op[3], None])
        elif kind == "size" and chunks:
            chunks[op[1] % len(chunks)][2] = op[2]
        elif chunks:
            edit_chunks(chunks, op, i)
    body = b"".join(
        k + struct.pack("<I", len(b) if size is None else size) + b + b"\0" * (len(b) & 1)
        for k, b, size in chunks
    )
    return riff(body, size=riff_size)


def _edit_header(chunks: list[list[Any]], kind: str, field: int, value: int) -> None:
    """VP8X: flags byte (0) or canvas width/height minus one (1, 2); a frame
    header's width (0) or height (1), VP8's 14-bit fields or VP8L's."""
    for c in chunks:
        body = bytearray(c[1])
        if kind == "vp8x" and c[0] == b"VP8X" and len(body) >= 10:
            if field == 0:
                body[0] = value & 0xFF
            else:
                body[1 + 3 * field : 4 + 3 * field] = (value & 0xFFFFFF).to_bytes(3, "little")
        elif kind == "frame" and c[0] == b"VP8 " and len(body) >= 10:
            body[6 + 2 * field : 8 + 2 * field] = struct.pack("<H", value & 0x3FFF)
        elif kind == "frame" and c[0] == b"VP8L" and len(body) >= 5:
            bits = struct.unpack("<I", body[1:5])[0]
            shift = 14 * field
            bits = bits & ~(0x3FFF << shift) | (value & 0x3FFF) << shift
            body[1:5] = struct.pack("<I", bits)
        else:
            continue
        c[1] = bytes(body)
        return


def pillow_or_none(data: bytes) -> bytes | None:
    """Pillow's pixels, or None when it refuses the file (whatever it raises)."""
    try:
        with Image.open(io.BytesIO(data)) as im:
            if getattr(im, "n_frames", 1) != 1:
                return None
            im.load()
            return bytes(im.tobytes())
    except Exception:
        return None


@FUZZ
@given(st.integers(0, 999), st.lists(WEBP_OPS, max_size=4), st.lists(BYTE_OPS, max_size=2))
def test_webp_decoder_survives_mutations(seed: int, ops: Ops, then: Ops) -> None:
    data = mutate(mutate_webp(SEEDS[seed % len(SEEDS)], ops), then, SEEDS)
    got = read_image(data)
    try:
        with time_limit():
            info: image.ImageInfo | None = image.probe(data, name="fuzzed.img")
    except ImageError as exc:
        assert "fuzzed.img" in str(exc)
        info = None
    if got is None:
        ran("refused")
        return
    # what decode accepts, probe describes
    assert info is not None and (info.height, info.width, info.channels) == got.shape
    if alpha_flag_contradicted(data):
        ran("decoded; VP8X says no alpha, ALPH chunk present: not compared with Pillow")
        return
    want = pillow_or_none(data)
    ran("decoded, as Pillow" if want is not None else "decoded, Pillow refuses")
    if want is not None:
        assert got.tobytes() == want


def alpha_flag_contradicted(data: bytes) -> bool:
    """A VP8X header without the alpha flag over an ALPH chunk. libwebp 1.2.4's
    still-image decoder applies the alpha; Pillow 13 (libwebp 1.6's animation
    decoder) gives RGBA with alpha 255. The file contradicts itself, so neither
    is wrong."""
    chunks = chunks_of(data)
    if not chunks or chunks[0][0] != b"VP8X" or not chunks[0][1]:
        return False
    return not chunks[0][1][0] & 0x10 and any(k == b"ALPH" for k, _ in chunks)


@FUZZ
@given(
    st.integers(1, 24),
    st.integers(1, 24),
    st.integers(1, 4),
    st.booleans(),
    st.integers(0, 100),
    st.data(),
)
def test_webp_generated_images_round_trip(
    width: int, height: int, channels: int, lossless: bool, quality: int, data: st.DataObject
) -> None:
    ran(f"{'lossless' if lossless else 'lossy'} {channels} channels")
    n = width * height * channels
    pixels = data.draw(st.binary(min_size=n, max_size=n), label="pixels")
    tensor = Tensor(pixels, shape=(height, width, channels), dtype="u8")
    with time_limit():
        encoded = image.encode(tensor, "webp", quality=quality, lossless=lossless)
    got = read_image(encoded)
    assert got is not None
    alpha = channels in (2, 4) and any(a != 255 for a in pixels[channels - 1 :: channels])
    assert got.shape == (height, width, 4 if alpha else 3)
    assert got.tobytes() == pillow_or_none(encoded)
    if lossless:  # gray repeated in R, G and B; alpha dropped where it is all 255
        source = np.frombuffer(pixels, np.uint8).reshape(height, width, channels)
        colour = source[..., :3] if channels >= 3 else np.repeat(source[..., :1], 3, -1)
        widened = np.concatenate([colour, source[..., -1:]], -1) if alpha else colour
        assert got.tobytes() == widened.tobytes()


# ---------------------------------------------------------------- in the component

_RANDOM_OPS = {
    "drop": lambda r: (r.randrange(99),),
    "dup": lambda r: (r.randrange(99),),
    "swap": lambda r: (r.randrange(99),),
    "insert": lambda r: (r.randrange(99), r.choice(FOURCCS), r.randbytes(r.randrange(24))),
    "size": lambda r: (r.randrange(99), r.choice((*SIZE_LIES, r.randrange(4096)))),
    "riff": lambda r: (r.choice((*SIZE_LIES, r.randrange(4096))),),
    "vp8x": lambda r: (r.randrange(3), r.randrange(1 << 24)),
    "frame": lambda r: (r.randrange(2), r.randrange(1 << 14)),
}


def random_mutant(rng: random.Random) -> bytes:
    """A seed with up to 3 chunk-level ops of WEBP_OPS' kinds and up to 3 byte flips,
    sets, deletions or truncations, drawn from ``rng`` (hypothesis is not
    involved: the component takes its files in batches)."""
    ops: Ops = []
    for _ in range(rng.randrange(4)):
        kind = rng.choice(sorted(_RANDOM_OPS))
        ops.append((kind, *_RANDOM_OPS[kind](rng)))
    data = mutate_webp(rng.choice(SEEDS), ops)
    byte_ops: Ops = []
    for _ in range(rng.randrange(4)):
        pos = rng.choice((rng.randrange(64), -rng.randrange(1, 256), rng.randrange(1 << 16)))
        byte_ops.append(
            rng.choice(
                (
                    ("flip", pos, rng.randrange(8)),
                    ("set", pos, rng.randrange(256)),
                    ("delete", pos, rng.randrange(1, 16)),
                    ("truncate", pos),
                )
            )
        )
    return mutate(data, byte_ops, SEEDS)


def native_result(data: bytes, name: str) -> dict[str, object]:
    """What image_app prints for ``data``, computed natively."""
    try:
        t = image.decode(data, name=name)
    except ImageError as exc:
        return {"error": type(exc).__name__, "message": str(exc)}
    return {"shape": list(t.shape), "crc32": zlib.crc32(t.tobytes())}


@pytest.mark.integration
def test_component_survives_mutated_webps(tmp_path: Path) -> None:
    """``WASINN_FUZZ_EXAMPLES`` files (unset: 200) through image_app, 1000 a run:
    each gives what native wasinn gives, pixels or the same ImageError."""
    from conftest import build_app, run_component

    build_app(APP)
    total = int(_BUDGET) if _BUDGET else 200
    rng = random.Random(20261125)
    outcomes: dict[str, int] = {}
    for start in range(0, total, 1000):
        names = []
        for i in range(start, min(total, start + 1000)):
            name = f"m{i:05d}.webp"
            (tmp_path / name).write_bytes(random_mutant(rng))
            names.append(name)
        done = run_component(APP, *names, cwd=tmp_path, timeout=1800)
        done.assert_no_trap()
        assert done.code == 0, done.stderr[-2000:]
        lines = [json.loads(line) for line in done.stdout.splitlines()]
        assert [got["file"] for got in lines] == names
        for got, name in zip(lines, names, strict=True):
            want = native_result((tmp_path / name).read_bytes(), name)
            assert {k: got.get(k) for k in want} == want, name
            kind = str(want.get("error", "decoded"))
            outcomes[kind] = outcomes.get(kind, 0) + 1
            (tmp_path / name).unlink()
    print(f"\ncomponent WebP fuzz: {total} files, {outcomes}")
