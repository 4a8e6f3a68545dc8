"""The hostile JPEG set (jpeg_hostile.py) through ``wasinn.image.decode``
natively: each case is refused with ``ImageError`` naming the file, or decoded
to exactly Pillow's pixels where Pillow decodes it too, quickly; the cases
that declare big images, in a child process whose peak memory is measured
(libjpeg allocates with malloc, out of tracemalloc's sight).
test_image_app.py runs the same set through the component.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from typing import Any

import pytest
from conftest import ROOT
from jpeg_hostile import BOMB_SIDE, cases

from wasinn import image

np = pytest.importorskip("numpy")
Image = pytest.importorskip("PIL.Image")

CASES = cases()
#: Cases whose header declares far more pixels than their data holds.
BIG = [name for name in CASES if "bomb" in name or name.startswith(("size-", "scans-"))]


def pillow_pixels(data: bytes) -> bytes:
    with Image.open(io.BytesIO(data)) as im:
        im.load()
        return im.tobytes()


@pytest.mark.parametrize("name", CASES)
def test_hostile_jpeg_is_refused_or_decoded_as_pillow(name: str) -> None:
    data, expect = CASES[name]
    start = time.process_time()
    try:
        pixels = image.decode(data, name=name)
    except image.ImageError as exc:
        assert expect == "refused", f"{name}: {exc}"
        assert str(exc).startswith(f"{name} is "), exc
    else:
        assert expect == "pillow", name
        assert pixels.tobytes() == pillow_pixels(data)
    assert time.process_time() - start < 2.0


# VmHWM, the peak resident memory of the process's own address space (not
# ru_maxrss: Linux carries that across exec, from the forking pytest).
_MEASURE = """
import json, re, sys, time
sys.path.insert(0, sys.argv[1])
from wasinn import image
def peak_kb():
    return int(re.search(r"VmHWM:\\s*(\\d+)", open("/proc/self/status").read()).group(1))
data = open(sys.argv[2], "rb").read()
before = peak_kb()
start = time.process_time()
try:
    outcome = "decoded %d bytes" % len(image.decode(data).tobytes())
except image.ImageError as exc:
    outcome = str(exc)
seconds = time.process_time() - start
print(json.dumps({"outcome": outcome, "seconds": seconds, "peak_kb": peak_kb() - before}))
"""


def measured(folder: object, name: str, data: bytes) -> dict[str, Any]:
    """Decode ``data`` alone in a child process: outcome, CPU seconds and the
    KB its decode added to the peak resident memory."""
    path = folder / f"{name}.jpg"  # type: ignore[operator]
    path.write_bytes(data)
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(ROOT / "guest"), str(path)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.skipif(sys.platform != "linux", reason="VmHWM is Linux's")
@pytest.mark.parametrize(
    "options", [{"subsampling": 0, "progressive": True}, {"progressive": True}, {}],
    ids=["444-progressive", "420-progressive", "420-baseline"],
)  # fmt: skip
def test_decoding_needs_at_most_3x_the_pixels(tmp_path: object, options: dict[str, object]) -> None:
    """A 2048x1536 photo-like file: libjpeg's coefficients (a progressive
    4:4:4 file's are twice its pixels' bytes) and the pixels stay within
    image.py's bound of 3 times the pixels plus a few MB."""
    rng = np.random.default_rng(5)
    photo = np.clip(np.cumsum(rng.integers(-4, 5, (1536, 2048, 3)), axis=1) + 128, 0, 255)
    out = io.BytesIO()
    Image.fromarray(photo.astype(np.uint8)).save(out, "JPEG", quality=90, **options)
    got = measured(tmp_path, "photo", out.getvalue())
    pixels_kb = 2048 * 1536 * 3 // 1024
    assert got["outcome"] == f"decoded {pixels_kb * 1024} bytes"
    assert got["peak_kb"] <= 3 * pixels_kb + 8 * 1024, got


@pytest.mark.skipif(sys.platform != "linux", reason="VmHWM is Linux's")
def test_big_declared_sizes_stay_small(tmp_path: object) -> None:
    """What the decode of each big-header case adds to the process's peak
    memory: at most 3 times the pixels it decodes (1024x1024 gray) plus
    32 MB, and for the refused at most their coefficients plus 32 MB (an
    8192x8192 progressive file with 10,000 scans: 128 MB of coefficients,
    what a real file of that size needs too; its scans stop at 33)."""
    report = []
    for name in BIG:
        got = measured(tmp_path, name, CASES[name][0])
        report.append(
            f"{name}: {got['seconds']:.2f} s, +{got['peak_kb'] >> 10} MB: {got['outcome']}"
        )
        side = BOMB_SIDE if "bomb" in name else 1024
        allowed_kb = (3 if got["outcome"].startswith("decoded") else 2) * side * side // 1024
        assert got["peak_kb"] <= allowed_kb + 32 * 1024, report[-1]
        assert got["seconds"] < 2.0, report[-1]
    print("\n" + "\n".join(report))
