"""ocr: read the text in images with PP-OCRv4 (rapidocr's models and pipeline).

    ocr IMAGE...            each line's score and text, top to bottom
    ocr IMAGE... --json     one JSON object per image: {"file": ..., "lines":
                            [{"box": [[x, y] x 4], "text": ..., "score": ...}],
                            "ms": ..., "stages": {...}}
    ocr IMAGE... --repeat N read each image N times; times are the median run's
                            (for benchmarks: the first run of a size warms up)

IMAGE is a PNG, JPEG or binary PGM/PPM file. The models are read from
/models/ocr (prepared by build.sh from the rapidocr-onnxruntime wheel). An
image that cannot be read is reported (in --json as {"file": ..., "error":
...}) and the others are still read; the exit status is then 1.
"""

from __future__ import annotations

import json
import sys
import time

from pipeline import MODELS, Reader, Reading, UnreadableImage, rgb_pixels
from wit_world import exports

from wasinn import image, print_line, run_command


def read_file(reader: Reader, path: str) -> tuple[Reading, dict[str, float]]:
    """The lines of one image file, and the milliseconds of each stage and in total."""
    start = time.perf_counter()
    with open(path, "rb") as f:
        pixels = rgb_pixels(f.read(), path)
    decoded = time.perf_counter()
    reading = reader.read(pixels)
    total = (time.perf_counter() - start) * 1000
    return reading, {"decode": (decoded - start) * 1000, **reading.ms, "total": total}


def main(args: list[str]) -> int:
    as_json = "--json" in args
    files = [a for a in args if a != "--json"]
    repeat = 1
    if "--repeat" in files:
        at = files.index("--repeat")
        count = files[at + 1] if at + 1 < len(files) else ""
        if not count.isdigit() or int(count) < 1:
            print("ocr: --repeat needs a count of 1 or more", file=sys.stderr)
            return 2
        repeat = int(count)
        del files[at : at + 2]
    if not files or any(f.startswith("--") for f in files):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    reader = Reader(MODELS)
    failed = False
    for path in files:
        runs = []
        try:
            for _ in range(repeat):
                runs.append(read_file(reader, path))
        except (OSError, UnreadableImage, image.ImageError) as exc:
            failed = True
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            if isinstance(exc, OSError) and (path.startswith(("/", "..")) or ":" in path):
                reason += " (the component sees only the current directory: run from there)"
            if as_json:
                print_line(json.dumps({"file": path, "error": reason}))
            else:
                print(f"ocr: {path}: {reason}", file=sys.stderr)
            continue
        reading, stages = sorted(runs, key=lambda run: run[1]["total"])[len(runs) // 2]
        total = stages.pop("total")
        if as_json:
            record = {"file": path, "lines": reading.json_lines(), "ms": total, "stages": stages}
            print_line(json.dumps(record))
            continue
        print(f"{path}: {len(reading.lines)} lines, {total:.0f} ms")
        for line in reading.lines:
            print(f"  {line.score:.3f}  {line.text}")
    return 1 if failed else 0


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="ocr")
