"""A test-only guest: decodes image files with ``wasinn.image``.

    image_app [--mode L|RGB|RGBA] [--reduce N | --min-size WxH] [--exif-transpose]
              [--repeat N] [--encode FORMAT[:QUALITY] --out DIR] FILE...

For each file it prints one JSON line: ``{"file": F, "shape": [H, W, C],
"crc32": CRC, "bytes": LEN, "seconds": BEST, "first": FIRST}`` (CRC of the
decoded pixels; BEST the fastest of N decodes and FIRST the first one, which
pays for compiling any host graph the decoder uses, both measured inside the
guest; ``"hex"`` too when the pixels are at most 64 KiB) or
``{"file": F, "error": CLASS, "message": M}``. ``--reduce``, ``--min-size``
and ``--exif-transpose`` are ``decode``'s ``reduce=``, ``min_size=`` and
``exif_transpose=``; the line then adds ``"reduce"`` (the factor applied).
With ``--encode``, each decoded image is also encoded by ``wasinn.image.encode``
(``png``, ``jpeg`` or ``webp``, ``webp-lossless``; an optional quality after a
colon) and written to ``DIR`` (a preopened folder) under the input's base name
plus the format's extension; the line adds ``"encoded": PATH`` and
``"encode_seconds"`` (the fastest of N encodes).
The native tests compare the pixels with Pillow's.
"""

from __future__ import annotations

import json
import os
import time
import zlib

from wit_world import exports

from wasinn import Tensor, image, print_line, run_command


def encode_file(
    pixels: Tensor, path: str, spec: str, out_dir: str, repeat: int
) -> dict[str, object]:
    """Encode ``pixels`` as ``spec`` (``FORMAT[:QUALITY]``) into ``out_dir``."""
    fmt, _, quality = spec.partition(":")
    lossless = fmt == "webp-lossless"
    fmt = "webp" if lossless else fmt
    options: dict[str, object] = {"lossless": True} if lossless else {}
    if quality:
        options["quality"] = int(quality)
    times: list[float] = []
    data = b""
    for _ in range(repeat):
        start = time.perf_counter()
        data = image.encode(pixels, fmt, **options)  # type: ignore[arg-type]
        times.append(time.perf_counter() - start)
    target = os.path.join(out_dir, os.path.basename(path) + "." + fmt)
    with open(target, "wb") as f:
        f.write(data)
    return {"encoded": target, "encode_seconds": min(times)}


def decode_file(
    path: str,
    mode: str | None,
    repeat: int,
    encode: str | None = None,
    out_dir: str = ".",
    options: dict[str, object] | None = None,
) -> dict[str, object]:
    with open(path, "rb") as f:
        data = f.read()
    times: list[float] = []
    pixels: Tensor | None = None
    info: dict[str, object] = {}
    try:
        for _ in range(repeat):
            pixels = None  # the last decode's pixels go first: no decode pays for two images
            start = time.perf_counter()
            pixels, info = image.decode_with_info(data, mode=mode, name=path, **(options or {}))  # type: ignore[arg-type]
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
    if options:
        out["reduce"] = info["reduce"]
    if len(raw) <= 65536:
        out["hex"] = raw.hex()
    if encode:
        try:
            out.update(encode_file(pixels, path, encode, out_dir, repeat))
        except image.ImageError as exc:
            out.update({"error": type(exc).__name__, "message": str(exc)})
    return out


def main(args: list[str]) -> int:
    mode: str | None = None
    repeat = 1
    encode: str | None = None
    out_dir = "."
    files: list[str] = []
    options: dict[str, object] = {}
    it = iter(args)
    for arg in it:
        if arg == "--mode":
            mode = next(it)
        elif arg == "--reduce":
            options["reduce"] = int(next(it))
        elif arg == "--min-size":
            width, _, height = next(it).partition("x")
            options["min_size"] = (int(width), int(height))
        elif arg == "--exif-transpose":
            options["exif_transpose"] = True
        elif arg == "--repeat":
            repeat = max(1, int(next(it)))
        elif arg == "--encode":
            encode = next(it)
        elif arg == "--out":
            out_dir = next(it)
        else:
            files.append(arg)
    for path in files:
        print_line(json.dumps(decode_file(path, mode, repeat, encode, out_dir, options)))
    return 0


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="image_app")
