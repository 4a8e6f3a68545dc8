"""The digits app as a real component, against OpenVINO run natively on the same tensors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import pytest
from conftest import ROOT, run_component

pytestmark = pytest.mark.integration

APP = ROOT / "apps" / "digits"
from wasinn import image  # noqa: E402  (the app's decoder, run natively)


def make_png(width: int, height: int, colour: int, rows: bytes) -> bytes:
    """A PNG around already-filtered rows (each starting with its filter byte)."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + body))
        return struct.pack(">I", len(body)) + kind + body + crc

    header = struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def native_probs(images: np.ndarray) -> np.ndarray:
    compiled = ov.Core().compile_model(str(APP / "model" / "digits.xml"), "CPU")
    return compiled({"image": images})[compiled.output("probs")]


def heldout() -> tuple[np.ndarray, np.ndarray]:
    records = np.frombuffer((APP / "data" / "heldout.u8").read_bytes(), np.uint8).reshape(-1, 65)
    return (records[:, :64].astype(np.float32) / 16.0).reshape(-1, 1, 8, 8), records[:, 64]


def test_eval_matches_native_openvino(built) -> None:
    done = run_component(built["digits"], "--eval", "--json", cwd=APP)
    assert done.code == 0, done.stderr
    (guest,) = done.lines
    images, labels = heldout()
    native = native_probs(images).argmax(axis=1)
    assert guest["count"] == len(labels) == 360
    assert guest["predictions"] == native.tolist()
    assert guest["correct"] == int((native == labels).sum())
    assert guest["correct"] / guest["count"] > 0.95


def test_samples_match_native_and_their_labels(built) -> None:
    samples = sorted((APP / "samples").glob("*.png"))
    assert len(samples) == 10
    names = [f"samples/{p.name}" for p in samples]
    done = run_component(built["digits"], "--json", *names, cwd=APP)
    assert done.code == 0, done.stderr
    for path, line in zip(samples, done.lines, strict=True):
        gray = image.decode(path.read_bytes(), mode="L").tobytes()
        pixels = (np.frombuffer(gray, np.uint8).astype(np.float32) / 255.0).reshape(1, 1, 8, 8)
        expected = native_probs(pixels)[0]
        np.testing.assert_allclose(line["probs"], expected, atol=1e-6)
        assert int(np.argmax(line["probs"])) == int(path.name[len("digit")])


def test_human_output(built) -> None:
    done = run_component(built["digits"], "samples/digit3_002.png", cwd=APP)
    assert done.code == 0, done.stderr
    assert done.stdout.startswith("samples/digit3_002.png: 3 (")
    assert len(done.stdout.split("(")) == 4  # top-3


@pytest.mark.parametrize(
    "content,message",
    [
        (None, "cannot open missing.png: No such file or directory"),
        (b"not a png at all", "bad.png is not a PNG, JPEG, WebP, PGM or PPM file"),
        ("truncate", "is truncated"),
        ("big", "is 16x8; the digits model reads 8x8 images"),
    ],
)
def test_bad_images_give_one_line_errors(built, tmp_path: Path, content, message: str) -> None:
    good = (APP / "samples" / "digit3_002.png").read_bytes()
    if content == "truncate":
        content = good[:40]
    elif content == "big":
        content = make_png(16, 8, 0, (b"\x00" + bytes(16)) * 8)
    if content is not None:
        (tmp_path / "bad.png").write_bytes(content)
    name = "missing.png" if content is None else "bad.png"
    done = run_component(built["digits"], name, cwd=tmp_path)
    done.assert_no_trap()
    assert done.code == 1
    assert message in done.stderr and "panicked" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_png_decoder_handles_filters_and_colour() -> None:
    png = make_png
    # Two RGB rows: the first with Sub, the second with Paeth filtering.
    rows = bytes([1, 10, 20, 30, 5, 5, 5]) + bytes([4, 1, 1, 1, 0, 0, 0])
    gray = image.decode(png(2, 2, 2, rows), mode="L")
    assert gray.shape == (2, 2, 1)
    # Row 0 decodes to (10,20,30),(15,25,35); Paeth predicts row 1 from the pixels above.
    luma = lambda r, g, b: (19595 * r + 38470 * g + 7471 * b + 32768) >> 16  # noqa: E731
    want = [luma(10, 20, 30), luma(15, 25, 35), luma(11, 21, 31), luma(15, 25, 35)]
    assert list(gray.data) == want
    with pytest.raises(image.ImageError, match="palette PNG without a PLTE chunk"):
        image.decode(png(1, 1, 3, b"\x00\x00"))
