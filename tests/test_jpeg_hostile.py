"""The hostile JPEG set (jpeg_hostile.py) through ``wasinn.image.decode``
natively: each case is refused with ``ImageError`` naming the file, or decoded
to exactly Pillow's pixels where Pillow decodes it too, quickly; the cases
that declare big images, in a child process whose peak memory is measured
(libjpeg allocates with malloc, out of tracemalloc's sight).
The same set through the component (tests/image_app, one run of all 170
files): each case's outcome equals the native one, the same error class
and message or the same pixels, no trap, and the component still decodes
a good file after them; and a few thousand corrupt files in one component
run leave its linear memory where a hundred put it (libjpeg's memory is
freed on the longjmp path).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, build_app
from jpeg_hostile import BOMB_SIDE, cases
from test_image_app import APP, run_files
from test_jpeg import encode, picture

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


@pytest.fixture(scope="module")
def image_app() -> Path:
    """tests/image_app, built (test_image_app.py's fixture)."""
    return build_app(APP)


def native_outcome(data: bytes, name: str) -> dict[str, object]:
    """What image_app prints for ``data`` as file ``name``, computed natively:
    the pixels' shape and CRC-32, or the error's class and message."""
    try:
        pixels = image.decode(data, name=name)
    except image.ImageError as exc:
        return {"error": type(exc).__name__, "message": str(exc)}
    return {"shape": list(pixels.shape), "crc32": zlib.crc32(pixels.tobytes())}


def component_outcome(line: dict[str, object]) -> dict[str, object]:
    keys = ("error", "message") if "error" in line else ("shape", "crc32")
    return {k: line[k] for k in keys}


@pytest.mark.integration
def test_component_gives_the_native_outcome_for_every_case(image_app: Path, tmp_path: Path) -> None:
    """All 170 cases in one image_app run, then a good file: every line is
    the native outcome (error class and message, or shape and pixels' CRC);
    no trap, and the component decodes the good file after them."""
    good = encode(picture(64, 48, seed=2), quality=90)
    files = {**{name: data for name, (data, _) in CASES.items()}, "good.jpg": good}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    names = list(files)
    start = time.perf_counter()
    lines = run_files(image_app, tmp_path, *names)
    seconds = time.perf_counter() - start
    assert [line["file"] for line in lines] == names
    differ = [
        f"{name}: component {component_outcome(line)}, native {native_outcome(files[name], name)}"
        for name, line in zip(names, lines, strict=True)
        if component_outcome(line) != native_outcome(files[name], name)
    ]
    assert not differ, "\n".join(differ)
    assert lines[-1]["crc32"] == zlib.crc32(pillow_pixels(good))
    refused = sum("error" in line for line in lines)
    print(f"\ncomponent: {len(lines)} files in {seconds:.1f} s, {refused} refused, all as natively")


def corrupt_files() -> dict[str, bytes]:
    """Files refused after libjpeg allocated its decoder (tables, rows, a
    progressive file's coefficients): on its longjmp path."""
    photo = np.clip(np.cumsum(np.random.default_rng(7).integers(-4, 5, (256, 320, 3)), 1) + 128,
                    0, 255).astype(np.uint8)  # fmt: skip
    files = {}
    for kind, options in (("baseline", {}), ("progressive", {"progressive": True}),
                          ("p444", {"progressive": True, "subsampling": 0})):  # fmt: skip
        out = io.BytesIO()
        Image.fromarray(photo).save(out, "JPEG", quality=90, **options)
        data = out.getvalue()
        files[f"{kind}-cut.jpg"] = data[: len(data) * 2 // 3]
        sos = data.rfind(b"\xff\xda")  # the last scan's data, overwritten with a bad code
        files[f"{kind}-junk.jpg"] = data[: sos + 40] + b"\xff\xd3" * 64 + data[sos + 40 :]
    files["frame-lies.jpg"] = CASES["baseline-cut-inside-DA@609"][0]
    return files


@pytest.mark.integration
def test_component_memory_stays_flat_over_thousands_of_errors(
    image_app: Path, tmp_path: Path
) -> None:
    """100, then 3,000 corrupt files (refused after libjpeg allocated) in one
    component run each: the guest's linear memory after 3,000 is at most
    1 MB above that after 100 (a leak of one file's decoder state, some
    hundred KB, on each error would add hundreds of MB)."""
    from guest_memory import run_measured

    files = corrupt_files()
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(image.ImageError):
            image.decode(data, name=name)
    names = list(files)
    linear = {}
    for count in (100, 3000):
        run = run_measured(ROOT / "build.sh", APP, [names[i % len(names)] for i in range(count)],
                           tmp_path)  # fmt: skip
        assert all('"error": "ImageError"' in line for line in run.lines), run.lines[:3]
        assert run.linear_mb is not None
        linear[count] = run.linear_mb
    print(f"\nlinear memory after 100 corrupt files {linear[100]:.1f} MB, "
          f"after 3,000 {linear[3000]:.1f} MB")  # fmt: skip
    assert linear[3000] - linear[100] <= 1.0, linear
