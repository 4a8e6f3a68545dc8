"""JPEG in a component (libjpeg-turbo in ``ext/_jpeg_codec.c``) against Pillow
natively, side by side in one run: 640x480 and 1920x1080 photo-like
pictures (image_bench.photo) written by Pillow as q90 4:2:0 baseline and
progressive, decoded by ``tests/image_app --repeat N`` (best of N inside the
guest, and the first call) and by Pillow (best of N), then each decoded
picture encoded at q75 by both (``--encode jpeg:75``: best of N).

    python bench/jpeg_bench.py [--repeat N]    # prints a markdown table
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
import zlib
from pathlib import Path

import image_bench
from PIL import Image

SIZES = ((640, 480), (1920, 1080))


def best_of(repeat: int, work: object) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        work()  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    image_bench.build()
    image_bench.REPEAT = args.repeat
    files: dict[str, bytes] = {}
    for seed, (width, height) in enumerate(SIZES):
        picture = Image.fromarray(image_bench.photo(width, height, seed=seed))
        for kind, options in (("baseline", {}), ("progressive", {"progressive": True})):
            out = io.BytesIO()
            picture.save(out, "JPEG", quality=90, subsampling=2, **options)
            files[f"{kind}_{width}x{height}.jpg"] = out.getvalue()
    rows = ["| file | KB | guest decode best | guest first | Pillow decode | ratio "
            "| guest encode q75 | Pillow encode q75 | ratio | same pixels |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, data in files.items():
            (folder / name).write_bytes(data)
        guest = image_bench.run_app(folder, list(files), "--encode", "jpeg:75", "--out", ".")
        for got in guest:
            data = files[got["file"]]
            with Image.open(io.BytesIO(data)) as im:
                im.load()
                pixels = im.tobytes()
                decoded = im.copy()
            pillow_decode = best_of(args.repeat, lambda: Image.open(io.BytesIO(data)).load())  # noqa: B023
            pillow_encode = best_of(
                args.repeat,
                lambda: decoded.save(io.BytesIO(), "JPEG", quality=75),  # noqa: B023
            )
            out = io.BytesIO()
            decoded.save(out, "JPEG", quality=75)
            written = (folder / Path(got["encoded"]).name).read_bytes()
            same = got["crc32"] == zlib.crc32(pixels)
            same_bytes = written == out.getvalue()
            rows.append(
                f"| {got['file']} | {len(data) / 1024:.0f} | {got['seconds'] * 1000:.1f} ms "
                f"| {got['first'] * 1000:.1f} ms | {pillow_decode * 1000:.1f} ms "
                f"| {got['seconds'] / pillow_decode:.2f} | {got['encode_seconds'] * 1000:.1f} ms "
                f"| {pillow_encode * 1000:.1f} ms | {got['encode_seconds'] / pillow_encode:.2f} "
                f"| {'yes' if same else 'NO'}{', same bytes' if same_bytes else ', other bytes'} |"
            )
    print("\n".join(rows))


if __name__ == "__main__":
    main()
