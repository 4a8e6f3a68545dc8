"""The image-decoding benchmark: ``wasinn.image`` in a component against Pillow natively.

Cases (issue 11's goals are on the first and third): a 640x480 photo as a
baseline and as a progressive JPEG (quality 90, 4:2:0), and a 1920x1080 RGB
photo as a PNG with Pillow's default settings (which pick Paeth for nearly
every row of a photo) and with every row forced to each filter type. The
pictures are rendered here (smooth shading, edges and grain, so that the
encoders behave as on photos), written to a temporary folder, and decoded by
``tests/image_app`` (best of ``REPEAT`` decodes inside the guest, and the
first, which includes compiling the host graphs the decoder uses) and by
Pillow natively (best of ``REPEAT``), in the same run. Each row also records
whether the guest's pixels equal Pillow's.

``rows(quick)`` measures; ``report(rows)`` gives the markdown section;
``targets(rows)`` the goals as (name, goal, measured, "lower").
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageFilter

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from png_rows import png_with_filter  # noqa: E402  (tests/ is put on the path above)

APP = ROOT / "tests" / "image_app"
REPEAT = 3
#: Issue 11's goals for the guest, in seconds (best of REPEAT).
GOALS = {"jpeg_baseline": 0.3, "png_default": 0.5}
FILTERS = ("None", "Sub", "Up", "Average", "Paeth")


def photo(width: int, height: int, seed: int = 0) -> np.ndarray:
    """A deterministic photo-like RGB picture: smooth shading, a few hard
    edges and grain, softened like a lens does. Pillow's PNG encoder picks
    Paeth for almost every row of it, as it does for real photos (98 % of the
    rows of matplotlib's grace_hopper.jpg sample, for one)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    u, v = x / width, y / height
    planes = []
    for c in range(3):
        f = rng.uniform(1.0, 4.0, 4)
        shade = 0.5 + 0.25 * np.sin(2 * np.pi * (f[0] * u + f[1] * v * v + c / 3))
        shade += 0.15 * np.cos(2 * np.pi * (f[2] * u * v + f[3] * v))
        planes.append(shade)
    img = np.stack(planes, -1) * 255
    # hard-edged shapes, as objects in a scene
    for _ in range(12):
        cx, cy, r = rng.uniform(0, width), rng.uniform(0, height), rng.uniform(0.03, 0.15) * width
        inside = (x - cx) ** 2 + (y - cy) ** 2 < r * r
        img[inside] = img[inside] * 0.5 + rng.uniform(0, 255, 3) * 0.5
    img += rng.normal(0, 6.0, img.shape)
    # a lens blurs the grain, and the sensor adds a little of its own after it
    soft = Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).filter(
        ImageFilter.GaussianBlur(1)
    )
    img = np.asarray(soft).astype(np.float64) + rng.normal(0, 1.0, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def png_filters(data: bytes) -> dict[str, int]:
    """How many rows of a non-interlaced 8-bit RGB PNG use each filter type."""
    pos, idat, width = 8, [], 0
    while pos < len(data):
        length = int.from_bytes(data[pos : pos + 4], "big")
        kind = data[pos + 4 : pos + 8]
        if kind == b"IHDR":
            width = int.from_bytes(data[pos + 8 : pos + 12], "big")
        elif kind == b"IDAT":
            idat.append(data[pos + 8 : pos + 8 + length])
        pos += 12 + length
    raw = zlib.decompress(b"".join(idat))
    kinds = raw[:: 3 * width + 1]
    return {name: kinds.count(i) for i, name in enumerate(FILTERS) if kinds.count(i)}


def cases(quick: bool) -> dict[str, tuple[str, bytes]]:
    """{file name: (what it is, file bytes)}."""
    small = Image.fromarray(photo(640, 480, seed=1))
    out: dict[str, tuple[str, bytes]] = {}
    for name, what, options in (
        ("jpeg_baseline.jpg", "640x480 JPEG, q90 4:2:0, baseline", {}),
        ("jpeg_progressive.jpg", "640x480 JPEG, q90 4:2:0, progressive", {"progressive": True}),
    ):
        buf = io.BytesIO()
        small.save(buf, "JPEG", quality=90, subsampling=2, **options)
        out[name] = (what, buf.getvalue())
    big = photo(1920, 1080, seed=2)
    buf = io.BytesIO()
    Image.fromarray(big).save(buf, "PNG")
    mix = ", ".join(f"{k} {v}" for k, v in png_filters(buf.getvalue()).items())
    out["png_default.png"] = (f"1920x1080 RGB PNG, Pillow's defaults (rows: {mix})", buf.getvalue())
    for kind in (0, 1, 2, 3, 4) if not quick else (4,):
        name = f"png_{FILTERS[kind].lower()}.png"
        out[name] = (f"1920x1080 RGB PNG, every row {FILTERS[kind]}", png_with_filter(big, kind))
    return out


def pillow_best(data: bytes) -> tuple[float, bytes]:
    """Pillow's best decode time of REPEAT, and its pixels."""
    best, pixels = float("inf"), b""
    for _ in range(REPEAT):
        start = time.perf_counter()
        with Image.open(io.BytesIO(data)) as im:
            im.load()
            best = min(best, time.perf_counter() - start)
            pixels = im.tobytes()
    return best, pixels


def rows(quick: bool = False) -> list[dict[str, Any]]:
    """Measure every case: one dict per case with ``case``, ``what``,
    ``guest_s`` (best of REPEAT in the component), ``guest_first_s``,
    ``pillow_s`` (native, best of REPEAT), ``ratio`` (guest / Pillow) and
    ``equal`` (the guest's pixels are Pillow's, by CRC-32)."""
    built = subprocess.run(
        [str(ROOT / "build.sh"), "build", str(APP)], capture_output=True, text=True
    )
    if built.returncode:
        raise SystemExit(f"bench: building {APP} failed:\n{built.stderr}")
    files = cases(quick)
    with tempfile.TemporaryDirectory() as tmp:
        for name, (_, data) in files.items():
            (Path(tmp) / name).write_bytes(data)
        done = subprocess.run(
            [str(ROOT / "build.sh"), "run", str(APP), "--repeat", str(REPEAT), *files],
            cwd=tmp, capture_output=True, text=True, timeout=3600,
        )  # fmt: skip
    if done.returncode:
        raise SystemExit(f"bench: the image_app component failed:\n{done.stderr}")
    guest = {r["file"]: r for r in map(json.loads, done.stdout.splitlines())}
    out = []
    for name, (what, data) in files.items():
        got = guest[name]
        pillow_s, pixels = pillow_best(data)
        out.append({
            "case": name.rsplit(".", 1)[0], "what": what,
            "guest_s": got["seconds"], "guest_first_s": got["first"], "pillow_s": pillow_s,
            "ratio": got["seconds"] / pillow_s, "equal": got.get("crc32") == zlib.crc32(pixels),
        })  # fmt: skip
    return out


def report(data: list[dict[str, Any]]) -> list[str]:
    """The markdown section "Image decoding" for bench/results/latest.md."""
    lines = [
        "", "## Image decoding (wasinn.image in the guest vs Pillow natively)", "",
        f"Best of {REPEAT} decodes each; \"first\" is the guest's first decode, which "
        "compiles the host graphs (IDCT, upsampling and colour for JPEG; Average/Paeth "
        "unfiltering for PNG) once per image geometry.", "",
        "| image | guest (s) | guest, first (s) | Pillow native (ms) | guest / Pillow | "
        "same pixels | goal (s) |",
        "|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for r in data:
        goal = GOALS.get(r["case"])
        lines.append(
            f"| {r['what']} | {r['guest_s']:.3f} | {r['guest_first_s']:.3f} | "
            f"{r['pillow_s'] * 1000:.1f} | {r['ratio']:.0f}x | {'yes' if r['equal'] else 'NO'} | "
            f"{'' if goal is None else f'{goal}'} |"
        )
    return lines


def targets(data: list[dict[str, Any]]) -> list[tuple[str, float, float, str]]:
    """Issue 11's decode-time goals: (name, goal, measured, "lower")."""
    by_case = {r["case"]: r for r in data}
    return [
        (f"image decode {case} guest s", goal, by_case[case]["guest_s"], "lower")
        for case, goal in GOALS.items()
        if case in by_case
    ]
