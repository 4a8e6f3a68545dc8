"""An example app with its own C extension module: Otsu's threshold.

    otsu_app IMAGE...

For each image (PNG, JPEG, PPM/PGM: whatever ``wasinn.image`` decodes) it
prints one JSON line: ``{"file": F, "width": W, "height": H, "threshold": T,
"foreground": N, "mask_crc32": CRC}``, where T is Otsu's threshold of the
image's gray levels and N the number of pixels above it (the mask's CRC-32
lets a test compare every pixel). The threshold and the mask come from
``_otsu``, compiled from ``ext/_otsu.c`` by ``./build.sh build``: an example
of an app folder that carries its own C (README: "C extension modules").
"""

from __future__ import annotations

import json
import zlib

import _otsu
from wit_world import exports

from wasinn import image, print_line, run_command


def describe(path: str) -> dict[str, object]:
    with open(path, "rb") as f:
        gray = image.decode(f.read(), mode="L", name=path)
    height, width, _ = gray.shape
    pixels = gray.tobytes()
    t = _otsu.threshold(pixels)
    mask = _otsu.binarize(pixels, t)
    return {
        "file": path,
        "width": width,
        "height": height,
        "threshold": t,
        "foreground": mask.count(255),
        "mask_crc32": zlib.crc32(mask),
    }


def main(args: list[str]) -> int:
    if not args:
        raise ValueError("usage: otsu_app IMAGE...")
    for path in args:
        print_line(json.dumps(describe(path)))
    return 0


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="otsu_app")
