"""The image benchmark: ``wasinn.image`` in a component against Pillow natively.

Decode rows (issue 17's goal: within 1.5x of Pillow at every size, the first
call included): photo-like pictures (smooth shading, edges and grain, so that
the encoders behave as on photos) at the sizes users send, from 256x256 to
4000x3000, written by Pillow as JPEG (baseline, progressive, 4:4:4), PNG
(RGB, RGBA, palette) and WebP (lossy, lossless); decoded by
``tests/image_app`` (best of ``REPEAT`` decodes inside the guest, and the
first) and by Pillow natively (best of ``REPEAT``), in the same run. Each row
also records whether the guest's pixels equal Pillow's.

Encode rows: each size's RGB picture encoded as PNG, JPEG and WebP with
Pillow's defaults by ``wasinn.image.encode`` in the guest and by Pillow, and
whether Pillow reads the guest's file back. A component row: the size of
image_app's component and of wasinn's extension modules in it, and the wall
time of a run that decodes one tiny image.

Memory rows (issue 24: decoding must need at most about 3 times the decoded
pixels plus a constant): bomb-like and large images, each decoded alone in
its own component (``tests/guest_memory.py``): the guest's linear memory
(which never shrinks) and the wasmtime process's peak RSS, both above those
of decoding an 8x8 image, against the bytes of the pixels, and the time per
megapixel. Each kind comes at two sizes, and the larger row also gives what
the extra pixels cost (free of constants such as the host's OpenVINO
plugin). A 4096x4096 or 8192x8192 RGB PNG of zeros with Paeth rows (57 KB
and 210 KB) is issue 24's bomb; then photo-like 2048x1536 and 4096x3072
PNGs and JPEGs.

``rows(quick)`` measures; ``report(rows)`` gives the markdown sections;
``targets(rows)`` the goals as (name, goal, measured, "lower").
``python bench/image_bench.py --codecs [--quick]`` measures and prints only
the decode, encode and component rows, ``--memory [--quick]`` only the memory
rows.
"""

from __future__ import annotations

import argparse
import io
import json
import re
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
from component_lines import json_lines  # noqa: E402  (bench/, beside this file)
from guest_memory import run_measured  # noqa: E402  (tests/ is put on the path above)
from png_rows import zero_png  # noqa: E402

APP = ROOT / "tests" / "image_app"
REPEAT = 3
#: Issue 24's bound: decoding needs at most this many times the pixels' bytes
#: (plus a constant: measured above an 8x8 image).
MEMORY_GOAL = 3.0


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


#: Photo sizes users send (issue 17), width x height.
SIZES = ((256, 256), (512, 512), (640, 480), (1280, 720), (1920, 1080), (4000, 3000))
QUICK_SIZES = ((640, 480), (1920, 1080))
#: Issue 17's goal: the guest within this factor of Pillow natively, first call included.
PILLOW_GOAL = 1.5


def cases(quick: bool) -> dict[str, tuple[str, bytes]]:
    """{file name: (what it is, file bytes)}: every kind of file at every size,
    written by Pillow with the settings named."""
    out: dict[str, tuple[str, bytes]] = {}
    for seed, (width, height) in enumerate(QUICK_SIZES if quick else SIZES):
        rgb = Image.fromarray(photo(width, height, seed=seed))
        alpha = Image.fromarray(
            np.clip(np.asarray(rgb.convert("L")).astype(np.int16) * 2 - 64, 0, 255).astype(np.uint8)
        )
        rgba = rgb.copy()
        rgba.putalpha(alpha)
        size = f"{width}x{height}"
        kinds = (
            ("jpeg", "JPEG q90 4:2:0 baseline", rgb, "JPEG", {"quality": 90, "subsampling": 2}),
            ("jpeg_progressive", "JPEG q90 4:2:0 progressive", rgb, "JPEG",
             {"quality": 90, "subsampling": 2, "progressive": True}),
            ("jpeg_444", "JPEG q90 4:4:4", rgb, "JPEG", {"quality": 90, "subsampling": 0}),
            ("png", "PNG RGB", rgb, "PNG", {}),
            ("png_rgba", "PNG RGBA", rgba, "PNG", {}),
            ("png_palette", "PNG palette (256 colours)", rgb.quantize(256), "PNG", {}),
            ("webp", "WebP lossy q80", rgb, "WEBP", {"quality": 80}),
            ("webp_lossless", "WebP lossless", rgb, "WEBP", {"lossless": True}),
        )  # fmt: skip
        for kind, what, picture, fmt, options in kinds:
            buf = io.BytesIO()
            picture.save(buf, fmt, **options)
            out[f"{kind}_{size}.{fmt.lower()}"] = (f"{size} {what}", buf.getvalue())
    return out


#: What ``encode_rows`` writes: (format for image_app's --encode, Pillow's save options).
ENCODINGS = {
    "png": ("PNG", {}),
    "jpeg": ("JPEG", {"quality": 75}),
    "webp": ("WEBP", {"quality": 80}),
}


def pillow_best(data: bytes) -> tuple[float, bytes]:
    """Pillow's best decode time of REPEAT, and its pixels. A palette image is
    converted to RGB(A) as part of the time: Pillow keeps the indices (mode
    "P"), wasinn.image.decode returns the colours, which is what a model eats."""
    best, pixels = float("inf"), b""
    for _ in range(REPEAT):
        start = time.perf_counter()
        with Image.open(io.BytesIO(data)) as im:
            im.load()
            if im.mode == "P":
                im = im.convert("RGBA" if "transparency" in im.info else "RGB")
            best = min(best, time.perf_counter() - start)
            pixels = im.tobytes()
    return best, pixels


def rows(quick: bool = False, memory: bool = True) -> list[dict[str, Any]]:
    """Measure every case: one dict per case with ``case``, ``what``,
    ``guest_s`` (best of REPEAT in the component), ``guest_first_s``,
    ``pillow_s`` (native, best of REPEAT), ``ratio`` and ``first_ratio``
    (guest / Pillow) and ``equal`` (the guest's pixels are Pillow's, by
    CRC-32); then the encode rows (``"kind": "encode"``), the component's
    size and start-up (``"kind": "component"``) and the memory rows
    (``"kind": "memory"``)."""
    build()
    files = cases(quick)
    with tempfile.TemporaryDirectory() as tmp:
        for name, (_, data) in files.items():
            (Path(tmp) / name).write_bytes(data)
        guest = {r["file"]: r for r in run_app(Path(tmp), list(files))}
        plain = [n for n in files if re.fullmatch(r"png_\d+x\d+\.png", n)]
        encoded = encode_rows(Path(tmp), plain)
    out = []
    for name, (what, data) in files.items():
        got = guest[name]
        pillow_s, pixels = pillow_best(data)
        out.append({
            "case": name.rsplit(".", 1)[0], "what": what,
            "guest_s": got["seconds"], "guest_first_s": got["first"], "pillow_s": pillow_s,
            "ratio": got["seconds"] / pillow_s, "first_ratio": got["first"] / pillow_s,
            "equal": got.get("crc32") == zlib.crc32(pixels),
        })  # fmt: skip
    return out + encoded + [component_row()] + (memory_rows(quick) if memory else [])


def run_app(folder: Path, names: list[str], *options: str) -> list[dict[str, Any]]:
    """image_app's JSON lines for ``names`` in ``folder`` (its working directory)."""
    return json_lines(APP, ["--repeat", str(REPEAT), *options, *names], folder)


def encode_rows(folder: Path, sources: list[str]) -> list[dict[str, Any]]:
    """Each RGB PNG of ``sources`` encoded by the guest (``wasinn.image.encode``,
    best of REPEAT) and by Pillow natively (best of REPEAT), per format of
    ENCODINGS; ``decodes`` says whether Pillow reads the guest's file back to
    the right size, ``max_diff`` the largest difference from the source pixels."""
    out = []
    for fmt, (pillow_format, options) in ENCODINGS.items():
        spec = fmt if "quality" not in options else f"{fmt}:{options['quality']}"
        for got in run_app(folder, sources, "--encode", spec, "--out", "."):
            source = Image.open(folder / got["file"])
            source.load()
            best = float("inf")
            for _ in range(REPEAT):
                start = time.perf_counter()
                source.save(io.BytesIO(), pillow_format, **options)
                best = min(best, time.perf_counter() - start)
            written = folder / Path(got["encoded"]).name
            with Image.open(written) as back:
                back.load()
                same_size = back.size == source.size
                diff = np.abs(np.asarray(back.convert("RGB"), np.int16)
                              - np.asarray(source.convert("RGB"), np.int16))  # fmt: skip
            out.append({
                "kind": "encode", "case": f"{fmt}_{source.width}x{source.height}",
                "what": f"{source.width}x{source.height} RGB as {pillow_format} {options or ''}",
                "guest_s": got["encode_seconds"], "pillow_s": best,
                "ratio": got["encode_seconds"] / best, "decodes": same_size,
                "max_diff": int(diff.max()), "guest_kb": written.stat().st_size / 1024,
            })  # fmt: skip
    return out


def component_row() -> dict[str, Any]:
    """image_app's component: its size, the extension modules' share, and the
    wall time of a run that decodes one 8x8 PNG (start-up dominates)."""
    wasm = ROOT / "build" / "image_app.wasm"
    cwasm = ROOT / "build" / "image_app.cwasm"
    modules = sorted((ROOT / "guest" / "wasinn").glob("*.cpython-*-wasm32-wasi.so"))
    tiny = io.BytesIO()
    Image.new("RGB", (8, 8)).save(tiny, "PNG")
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "tiny.png").write_bytes(tiny.getvalue())
        best = float("inf")
        for _ in range(REPEAT):
            start = time.perf_counter()
            run_app(Path(tmp), ["tiny.png"])
            best = min(best, time.perf_counter() - start)
    return {
        "kind": "component", "wasm_mb": wasm.stat().st_size / 1e6 if wasm.exists() else None,
        "cwasm_mb": cwasm.stat().st_size / 1e6 if cwasm.exists() else None,
        "extensions_kb": {m.name.split(".")[0]: m.stat().st_size / 1024 for m in modules},
        "run_s": best,
    }  # fmt: skip


def build() -> None:
    built = subprocess.run(
        [str(ROOT / "build.sh"), "build", str(APP)], capture_output=True, text=True
    )
    if built.returncode:
        raise SystemExit(f"bench: building {APP} failed:\n{built.stderr}")


def memory_cases(quick: bool) -> dict[str, tuple[str, bytes]]:
    """{file name: (what it is, file bytes)}: the 8x8 baseline first, then each
    kind of image at two sizes, ``KIND_small`` (a quarter of the pixels) and
    ``KIND``, so that what the pixels cost shows apart from constants."""
    tiny = io.BytesIO()
    Image.new("RGB", (8, 8)).save(tiny, "PNG")
    out = {"tiny.png": ("8x8 RGB PNG (the baseline)", tiny.getvalue())}
    sizes = {"small": 4096, "": 8192} if not quick else {"small": 2048, "": 4096}
    for size, side in sizes.items():
        name = f"bomb_paeth{'_' + size if size else ''}.png"
        out[name] = (f"{side}x{side} RGB PNG of zeros, Paeth rows", zero_png(side, side, 4))
    if quick:
        return out
    for size, side in {"small": 2048, "": 4096}.items():
        zeros = io.BytesIO()
        Image.new("RGB", (side, side)).save(zeros, "PNG")
        name = f"bomb_pillow{'_' + size if size else ''}.png"
        out[name] = (f"{side}x{side} RGB PNG of zeros, Pillow's defaults", zeros.getvalue())
    for size, (width, height) in {"small": (2048, 1536), "": (4096, 3072)}.items():
        picture = Image.fromarray(photo(width, height, seed=3))
        suffix = "_" + size if size else ""
        for name, what, fmt, options in (
            (f"photo{suffix}.png", "photo PNG, Pillow's defaults", "PNG", {}),
            (f"photo{suffix}.jpg", "photo JPEG, q90 4:2:0, baseline", "JPEG", {"quality": 90}),
            (f"photo_progressive{suffix}.jpg", "photo JPEG, q90 4:2:0, progressive", "JPEG",
             {"quality": 90, "progressive": True}),
        ):  # fmt: skip
            buf = io.BytesIO()
            picture.save(buf, fmt, **options)
            out[name] = (f"{width}x{height} {what}", buf.getvalue())
    return out


def memory_rows(quick: bool = False) -> list[dict[str, Any]]:
    """Each memory case decoded alone in a component (twice: ``guest_s`` is
    the second decode, ``guest_first_s`` the first, with any graph compile):
    ``linear_mb`` and ``peak_rss_mb`` above the 8x8 baseline's, each over the
    pixels' bytes (``linear_ratio``, ``rss_ratio``), and on the larger size of
    a kind what the extra pixels cost over the smaller one (``linear_growth``,
    ``rss_growth``: MB per MB of pixels, free of constants such as the host's
    OpenVINO plugin)."""
    files = memory_cases(quick)
    measured = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (_, data) in files.items():
            (Path(tmp) / name).write_bytes(data)
            measured[name] = run_measured(
                ROOT / "build.sh", APP, [name], Path(tmp), options=("--repeat", "2")
            )
    base = measured["tiny.png"]
    out: dict[str, dict[str, Any]] = {}
    for name, (what, data) in list(files.items())[1:]:
        run = measured[name]
        got = json.loads(run.lines[0])
        pixels_mb = got["bytes"] / (1 << 20)
        linear = None if run.linear_mb is None or base.linear_mb is None else (
            run.linear_mb - base.linear_mb
        )  # fmt: skip
        rss = run.peak_rss_mb - base.peak_rss_mb
        megapixels = got["shape"][0] * got["shape"][1] / 1e6
        row = out[name] = {
            "kind": "memory", "case": name.rsplit(".", 1)[0], "what": what,
            "file_kb": len(data) / 1024, "pixels_mb": pixels_mb,
            "guest_s": got["seconds"], "guest_first_s": got["first"],
            "ms_per_mpx": 1000 * got["seconds"] / megapixels,
            "linear_mb": linear, "linear_ratio": None if linear is None else linear / pixels_mb,
            "peak_rss_mb": rss, "rss_ratio": rss / pixels_mb,
            "linear_growth": None, "rss_growth": None,
            "baseline_linear_mb": base.linear_mb, "baseline_rss_mb": base.peak_rss_mb,
        }  # fmt: skip
        stem, ext = name.rsplit(".", 1)
        small = out.get(f"{stem}_small.{ext}")
        if small is not None:
            extra = pixels_mb - small["pixels_mb"]
            if linear is not None and small["linear_mb"] is not None:
                row["linear_growth"] = (linear - small["linear_mb"]) / extra
            row["rss_growth"] = (rss - small["peak_rss_mb"]) / extra
    return list(out.values())


def report(data: list[dict[str, Any]]) -> list[str]:
    """The markdown sections on image decoding and encoding for bench/results/latest.md."""
    lines = [
        "", "## Image decoding (wasinn.image in the guest vs Pillow natively)", "",
        f"Best of {REPEAT} decodes each, and the guest's first decode of the run (the "
        f"goal, {PILLOW_GOAL:g}x Pillow, holds for both). Files written by Pillow from a "
        "photo-like picture; \"same pixels\": the guest's pixels equal Pillow's (CRC-32).", "",
        "| image | guest (ms) | guest, first (ms) | Pillow native (ms) | guest / Pillow | "
        "first / Pillow | same pixels |",
        "|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for r in data:
        if r.get("kind") is None:
            lines.append(
                f"| {r['what']} | {r['guest_s'] * 1000:.1f} | {r['guest_first_s'] * 1000:.1f} | "
                f"{r['pillow_s'] * 1000:.1f} | {r['ratio']:.2f}x | {r['first_ratio']:.2f}x | "
                f"{'yes' if r['equal'] else 'NO'} |"
            )
    encoded = [r for r in data if r.get("kind") == "encode"]
    if encoded:
        lines += [
            "", "## Image encoding (wasinn.image.encode in the guest vs Pillow natively)", "",
            f"Best of {REPEAT} encodes each, Pillow's default settings on both sides; \"max "
            "diff\": the largest difference of a sample Pillow decodes from the guest's file "
            "(0: lossless).", "",
            "| image | guest (ms) | Pillow native (ms) | guest / Pillow | file (KB) | "
            "Pillow reads it | max diff |",
            "|---|---|---|---|---|---|---|",
        ]  # fmt: skip
        for r in encoded:
            lines.append(
                f"| {r['what']} | {r['guest_s'] * 1000:.1f} | {r['pillow_s'] * 1000:.1f} | "
                f"{r['ratio']:.2f}x | {r['guest_kb']:.0f} | {'yes' if r['decodes'] else 'NO'} | "
                f"{r['max_diff']} |"
            )
    for r in data:
        if r.get("kind") == "component":
            modules = ", ".join(f"{k} {v:.0f} KB" for k, v in r["extensions_kb"].items())
            lines += ["", f"Component (tests/image_app): {r['wasm_mb']:.1f} MB as .wasm, "
                      f"{r['cwasm_mb']:.1f} MB precompiled; wasinn's extension modules in it: "
                      f"{modules}. A run that decodes one 8x8 PNG: {r['run_s']:.2f} s wall "
                      "(start-up included)."]  # fmt: skip
    return lines + memory_report(data)


def memory_report(data: list[dict[str, Any]]) -> list[str]:
    """The memory rows as a markdown table (empty without any)."""
    rows = [r for r in data if r.get("kind") == "memory"]
    if not rows:
        return []
    lines = [
        "", "### Peak memory and time of large and bomb-like images (issue 24)", "",
        "Each decoded alone in a component, twice (guest time: the second decode; first: "
        "with any graph compile). Memory above decoding an 8x8 image (linear memory "
        f"{rows[0]['baseline_linear_mb']:.0f} MB, peak RSS {rows[0]['baseline_rss_mb']:.0f} MB) "
        "and over the pixels' bytes; \"growth\": on the larger size of a kind, the extra MB "
        "over the smaller size per extra MB of pixels, free of constants (the goal: at most "
        f"{MEMORY_GOAL:g}x plus a constant). The linear memory is the guest's own (it never "
        "shrinks, and holds the file's bytes too); the RSS adds the host's OpenVINO plugin "
        "and graphs (about 100 MB once any is used).", "",
        "| image | file (KB) | pixels (MB) | guest (s) | first (s) | ms / Mpx | "
        "linear memory (MB) | / pixels | growth | peak RSS (MB) | / pixels | growth |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip

    def cell(value: float | None, form: str) -> str:
        return "" if value is None else format(value, form)

    for r in rows:
        lines.append(
            f"| {r['what']} | {r['file_kb']:.0f} | {r['pixels_mb']:.0f} | {r['guest_s']:.2f} | "
            f"{r['guest_first_s']:.2f} | {r['ms_per_mpx']:.0f} | {cell(r['linear_mb'], '.0f')} | "
            f"{cell(r['linear_ratio'], '.2f')} | {cell(r['linear_growth'], '.2f')} | "
            f"{r['peak_rss_mb']:.0f} | {r['rss_ratio']:.2f} | {cell(r['rss_growth'], '.2f')} |"
        )
    return lines


def targets(data: list[dict[str, Any]]) -> list[tuple[str, float, float, str]]:
    """Issue 17's goals (decode and encode within PILLOW_GOAL of Pillow, first
    decode included) and issue 24's memory bound: (name, goal, measured, "lower")."""
    decoded = [r for r in data if r.get("kind") is None]
    encoded = [r for r in data if r.get("kind") == "encode"]
    out = []
    if decoded:
        worst = max(decoded, key=lambda r: max(r["ratio"], r["first_ratio"]))
        out.append((f"image decode guest / Pillow, worst ({worst['case']})", PILLOW_GOAL,
                    max(worst["ratio"], worst["first_ratio"]), "lower"))  # fmt: skip
    if encoded:
        worst = max(encoded, key=lambda r: r["ratio"])
        out.append((f"image encode guest / Pillow, worst ({worst['case']})", PILLOW_GOAL,
                    worst["ratio"], "lower"))  # fmt: skip
    growth = [r["linear_growth"] for r in data if r.get("linear_growth") is not None]
    if growth:
        out.append(
            ("image decode guest memory growth / pixels, worst", MEMORY_GOAL, max(growth), "lower")
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description="the image-decoding benchmark's memory rows")
    parser.add_argument("--memory", action="store_true", help="measure only the memory rows")
    parser.add_argument(
        "--codecs", action="store_true", help="measure only decode, encode and component rows"
    )
    parser.add_argument("--quick", action="store_true", help="only the bomb, 2048 and 4096 square")
    args = parser.parse_args()
    if args.codecs:
        data = rows(args.quick, memory=False)
        print("\n".join(report(data)))
        for name, goal, measured, _ in targets(data):
            print(f"- {name}: {measured:.2f} (goal {goal:g})")
        return
    if not args.memory:
        parser.error(
            "run the whole benchmark with ./build.sh bench; --memory or --codecs run parts"
        )
    build()
    print("\n".join(memory_report(memory_rows(args.quick))))


if __name__ == "__main__":
    main()
