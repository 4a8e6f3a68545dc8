"""A test-only guest: decodes image files with ``wasinn.image``.

    image_app [--mode L|RGB|RGBA] [--repeat N] FILE...

For each file it prints one JSON line: ``{"file": F, "shape": [H, W, C],
"crc32": CRC, "bytes": LEN, "seconds": BEST, "first": FIRST}`` (CRC of the
decoded pixels; BEST the fastest of N decodes and FIRST the first one, which
pays for compiling any host graph the decoder uses, both measured inside the
guest; ``"hex"`` too when the pixels are at most 64 KiB) or
``{"file": F, "error": CLASS, "message": M}``.
The native tests compare the pixels with Pillow's.
"""

from __future__ import annotations

import json
import time
import zlib

from wit_world import exports

from wasinn import Tensor, image, print_line, run_command


def decode_file(path: str, mode: str | None, repeat: int) -> dict[str, object]:
    with open(path, "rb") as f:
        data = f.read()
    times: list[float] = []
    pixels: Tensor | None = None
    try:
        for _ in range(repeat):
            pixels = None  # the last decode's pixels go first: no decode pays for two images
            start = time.perf_counter()
            pixels = image.decode(data, mode=mode, name=path)
            times.append(time.perf_counter() - start)
    except image.ImageError as exc:
        return {"file": path, "error": type(exc).__name__, "message": str(exc)}
    assert pixels is not None
    raw = pixels.tobytes()
    out: dict[str, object] = {
        "file": path,
        "shape": list(pixels.shape),
        "crc32": zlib.crc32(raw),
        "bytes": len(raw),
        "seconds": min(times),
        "first": times[0],
    }
    if len(raw) <= 65536:
        out["hex"] = raw.hex()
    return out


def main(args: list[str]) -> int:
    mode: str | None = None
    repeat = 1
    files: list[str] = []
    it = iter(args)
    for arg in it:
        if arg == "--mode":
            mode = next(it)
        elif arg == "--repeat":
            repeat = max(1, int(next(it)))
        else:
            files.append(arg)
    for path in files:
        print_line(json.dumps(decode_file(path, mode, repeat)))
    return 0


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="image_app")
