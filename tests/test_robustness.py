"""The bad-input matrix: every mistake is a clear Python exception, nothing traps.

Each API case runs in the test guest component (tests/guest_app) under the
real wasmtime CLI with OpenVINO: the bad step must raise the named exception
with the named message, the next valid step must succeed in the same
component, and wasmtime must exit normally. App cases run the sample apps on
bad files: one line on stderr, exit status 1, no panic.

docs/errors.md is generated from CASES (``python tests/test_robustness.py``)
and a test fails when it is out of date.
"""

from __future__ import annotations

import ast
import struct
import sys
import wave
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "errors.md"

X = np.arange(6, dtype=np.float32).reshape(2, 3)
Y = np.ones((2, 3), np.float32)


def t(a: np.ndarray, dtype: str = "f32") -> dict[str, Any]:
    return {"dtype": dtype, "shape": list(a.shape), "hex": a.tobytes().hex()}


RUN_OK: dict[str, Any] = {"run": {"x": t(X), "y": t(Y)}, "outputs": ["sum"]}
RELOAD: list[dict[str, Any]] = [{"load_model": {"path": "two.xml"}}, RUN_OK]


@dataclass(frozen=True)
class Case:
    id: str
    area: str
    what: str
    steps: list[dict[str, Any]]
    error: str | None  # exception class, or None when the step must succeed
    message: str  # key part of the message (or of the result when it succeeds)
    after: list[dict[str, Any]] = field(default_factory=lambda: [RUN_OK])
    load: dict[str, Any] = field(default_factory=lambda: {"path": "two.xml"})
    flags: str = ""  # extra wasmtime flags


def png(width: int, height: int) -> bytes:
    """An RGB PNG of mid-grey pixels, written with zlib and struct."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + body))
        return struct.pack(">I", len(body)) + kind + body + crc

    rows = b"".join(b"\0" + b"\x80" * (3 * width) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))  # fmt: skip


PNG_8X8 = png(8, 8)
NAN_INF = np.array([[np.nan, np.inf, -np.inf], [0.0, 1.0, 2.0]], np.float32)
BIG = 256 << 20  # bytes

CASES = [
    Case("unknown-input", "inputs", "an input name the model does not have",
         [{"run": {"x": t(X), "why": t(Y)}}], "ValidationError",
         "unknown input 'why'; the model's inputs are: 'y', 'x'"),
    Case("missing-input", "inputs", "one of two inputs left out",
         [{"run": {"x": t(X)}}], "ValidationError",
         "missing input 'y'; the model needs all of: 'y', 'x'"),
    Case("extra-input", "inputs", "all inputs plus one more",
         [{"run": {"x": t(X), "y": t(Y), "z": t(Y)}}], "ValidationError", "unknown input 'z'"),
    Case("wrong-rank", "inputs", "f32[6] for f32[2, 3]",
         [{"run": {"x": t(X.reshape(6)), "y": t(Y)}}], "ValidationError",
         "input 'x' has shape [6], but the model wants [2, 3]"),
    Case("wrong-dim", "inputs", "f32[2, 4] for f32[2, 3]",
         [{"run": {"x": t(np.zeros((2, 4), np.float32)), "y": t(Y)}}], "ValidationError",
         "input 'x' has shape [2, 4], but the model wants [2, 3]"),
    Case("wrong-dtype", "inputs", "f64 for f32",
         [{"run": {"x": t(X.astype(np.float64), "f64"), "y": t(Y)}}], "ValidationError",
         "input 'x' must be f32, got f64; convert it with tensor.astype('f32')"),
    Case("byte-length", "inputs", "20 raw bytes for f32[2, 3]",
         [{"run": {"x": {"raw_hex": "00" * 20}, "y": t(Y)}}], "ValidationError",
         "20 bytes of data do not fill shape [2, 3] of f32: that needs 6 x 4 = 24 bytes"),
    Case("empty-static", "inputs", "f32[0, 3] for f32[2, 3]",
         [{"run": {"x": {"dtype": "f32", "zeros": [0, 3]}, "y": t(Y)}}], "ValidationError",
         "input 'x' has shape [0, 3], but the model wants [2, 3]"),
    Case("empty-dynamic", "inputs", "f32[0, 4] for f32[?, 4]: runs",
         [{"run": {"v": {"dtype": "f32", "zeros": [0, 4]}}}], None, "scaled: f32[0, 4]",
         after=[{"run": {"v": t(np.ones((1, 4), np.float32))}}], load={"path": "dynamic.xml"}),
    Case("nan-inf", "inputs", "NaN, +Inf and -Inf values: pass through",
         [{"run": {"x": t(NAN_INF), "y": t(Y)}, "outputs": ["sum"]}], None,
         "sum: [nan, inf, -inf, 1, 2, 3]"),
    Case("scalar", "inputs", "a rank-0 tensor",
         [{"run": {"x": {"dtype": "f32", "shape": [], "values": [1.0]}, "y": t(Y)}}],
         "ValidationError",
         "input 'x' is a scalar (shape ()), but the wasmtime host cannot pass rank-0 tensors"),
    Case("unknown-output", "outputs", "outputs=['nope']",
         [{"run": {"x": t(X), "y": t(Y)}, "outputs": ["nope"]}], "ValidationError",
         "unknown output 'nope'; the model's outputs are: 'prod', 'sum'"),
    Case("tpu", "targets", "target='tpu'",
         [{"load_model": {"path": "two.xml", "target": "tpu"}}], "ValidationError",
         "no usable target: 'tpu' cannot be used with OpenVINO (the host process would abort)"),
    Case("tpu-in-list", "targets", "target=['tpu', 'cpu']: loads on cpu",
         [{"load_model": {"path": "two.xml", "target": ["tpu", "cpu"]}}], None,
         "target cpu; skipped tpu"),
    Case("gpu", "targets", "target='gpu' on a machine without a GPU",
         [{"load_model": {"path": "two.xml", "target": "gpu"}}], "BackendRuntimeError",
         "loading two.xml on gpu failed [runtime-error]: Failed while accessing backend"),
    Case("missing-file", "model files", "a path that does not exist",
         [{"load_model": {"path": "nothing.xml"}}], "FileNotFoundError",
         "model file not found: nothing.xml"),
    Case("xml-without-bin", "model files", "an .xml whose .bin is missing",
         [{"load_model": {"path": "lonely.xml"}}], "FileNotFoundError",
         "lonely.xml needs 48 bytes of weights from lonely.bin, which is not beside it"),
    Case("truncated-bin", "model files", "a .bin cut to 10 bytes",
         [{"load_model": {"path": "cut.xml"}}], "ModelFormatError",
         "cut.xml reads 48 bytes of weights, but the weights are 10 bytes: the .bin is truncated"),
    Case("corrupt-xml", "model files", "an .xml that is not well-formed",
         [{"load_model": {"path": "broken.xml"}}], "ModelFormatError",
         "broken.xml is not valid OpenVINO IR XML"),
    Case("corrupt-onnx", "model files", "ONNX bytes with a garbled field",
         [{"load_model": {"path": "garbled.onnx"}}], "ModelFormatError", "garbled.onnx"),
    Case("truncated-onnx", "model files", "ONNX bytes cut in half",
         [{"load_model": {"path": "half.onnx"}}], "ModelFormatError",
         "half.onnx is not a readable ONNX model: the bytes are truncated"),
    Case("empty-onnx", "model files", "an empty .onnx file",
         [{"load_model": {"path": "empty.onnx"}}], "ModelFormatError",
         "empty.onnx is empty, not an ONNX model"),
    Case("not-a-model", "model files", "a text file",
         [{"load_model": {"path": "notes.txt"}}], "ModelFormatError",
         "cannot tell what kind of model notes.txt is"),
    Case("tflite", "model files", "a TFLite model (.tflite)",
         [{"load_model": {"path": "face.tflite"}}], "ModelFormatError",
         "cannot load face.tflite, a TFLite model: the host's OpenVINO backend reads only "
         "OpenVINO IR and ONNX from memory. Convert it to IR when the app is built, with "
         "wasinn's tools/convert.py"),
    Case("unknown-name", "model files", "load_by_name of a name the host does not have",
         [{"load_model": {"name": "nothing"}}], "NotFoundError",
         "loading the host's model 'nothing' failed [not-found]"),
    Case("run-after-close", "lifetimes", "model.run after model.close()",
         [{"close": True}, {"run": {"x": t(X), "y": t(Y)}}], "ClosedError",
         "this model is closed; load the model again to use it", after=RELOAD),
    Case("session-after-close", "lifetimes", "session.run after model.close()",
         [{"session": 1}, {"close": True}, {"run": {"x": t(X), "y": t(Y)}, "session": 1}],
         "ClosedError",
         "this session is closed", after=RELOAD),
    Case("double-close", "lifetimes", "model.close() twice",
         [{"close": True}, {"close": True}], None,
         "closed", after=RELOAD),
    Case("tensor-reused", "lifetimes", "one Tensor passed to 500 runs",
         [{"let": "x", "tensor": t(X)},
          {"repeat": 500, "step": {"run": {"x": "$x", "y": "$x"}, "outputs": ["sum"]}}], None,
         "sum: [0, 2, 4, 6, 8, 10]"),
    Case("huge-input", "size",
         f"a {BIG >> 20} MiB f32 input (wasmtime's default per-call limit is 128 MiB)",
         [{"run": {"x": {"dtype": "f32", "zeros": [BIG // 4]}}, "summary": True}], "TooLargeError",
         "input 'x' is 256.0 MiB, more than the 128 MiB the wasmtime host accepts in one call",
         after=[{"run": {"x": t(np.ones(3, np.float32))}}], load={"path": "passthrough.xml"}),
    Case("huge-input-allowed", "size",
         f"the same {BIG >> 20} MiB input with both limits raised to 600 MB: runs",
         [{"run": {"x": {"dtype": "f32", "zeros": [BIG // 4]}}, "summary": True}], None,
         f"x: f32[{BIG // 4}], {BIG} bytes", after=[{"run": {"x": t(np.ones(3, np.float32))}}],
         load={"path": "passthrough.xml"},
         flags="-S hostcall-fuel=600000000 --env WASINN_HOSTCALL_FUEL=600000000"),
    Case("image-cut", "images", "a PNG cut in half", [{"decode_image": PNG_8X8[:40].hex()}],
         "ImageError", "image is truncated: it ends before its IEND chunk"),
    Case("image-too-large", "images", "an 8x8 PNG decoded with max_pixels=16",
         [{"decode_image": PNG_8X8.hex(), "max_pixels": 16}], "ImageTooLargeError",
         "image is 8x8 = 64 pixels, more than the 16 allowed"),
    Case("image-unknown", "images", "a GIF", [{"decode_image": (b"GIF89a" + bytes(20)).hex()}],
         "ImageError", "image is not a PNG, JPEG, WebP, PGM or PPM file"),
    Case("image-ok", "images", "the whole 8x8 PNG: decodes", [{"decode_image": PNG_8X8.hex()}],
         None, "u8[8, 8, 3]"),
]


@dataclass(frozen=True)
class AppCase:
    id: str
    app: str
    what: str
    file: str
    message: str
    args: tuple[str, ...] = ()


def _png(width: int, height: int, colour: int, rows: bytes, crc_ok: bool = True) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) ^ (0 if crc_ok or kind != b"IDAT" else 1)
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def _wav(path: Path, rate: int, channels: int, frames: int) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(bytes(2 * channels * frames))


APP_CASES = [
    AppCase("png-corrupt", "digits", "a PNG whose image data fails its CRC", "corrupt.png",
            "corrupt.png is corrupt: the IDAT chunk fails its CRC check"),
    AppCase("png-size", "digits", "a 16x8 PNG", "wide.png",
            "wide.png is 16x8; the digits model reads 8x8 images"),
    AppCase("png-colour", "digits", "a palette PNG without its palette (PLTE chunk)", "palette.png",
            "palette.png is corrupt: a palette PNG without a PLTE chunk"),
    AppCase("png-missing", "digits", "a file that does not exist", "missing.png",
            "cannot open missing.png: No such file or directory"),
    AppCase("wav-rate", "vad", "an 8 kHz WAV", "rate.wav",
            "rate.wav is 8000 Hz, 1 channel(s), 16-bit; the VAD needs 16000 Hz mono 16-bit PCM"),
    AppCase("wav-channels", "vad", "a stereo WAV", "stereo.wav",
            "stereo.wav is 16000 Hz, 2 channel(s), 16-bit"),
    AppCase("wav-truncated", "vad", "a WAV cut short", "cut.wav", "cut.wav is truncated"),
    AppCase("text-empty", "textclass", "a text file with no text", "empty.txt",
            "empty.txt has no text"),
]


def write_case_files(directory: Path) -> None:
    """The bad model and app files the cases name, next to the test models."""
    two_xml = (directory / "two.xml").read_bytes()
    (directory / "lonely.xml").write_bytes(two_xml)
    (directory / "cut.xml").write_bytes(two_xml)
    (directory / "cut.bin").write_bytes((directory / "two.bin").read_bytes()[:10])
    (directory / "broken.xml").write_bytes(b"<?xml version='1.0'?><net><layers><layer id='0'")
    onnx = (directory / "add_mul.onnx").read_bytes()
    (directory / "garbled.onnx").write_bytes(onnx[:2] + b"\x3a\xff\xff\xff\xff\x0f" + onnx[8:])
    (directory / "half.onnx").write_bytes(onnx[: len(onnx) // 2])
    (directory / "empty.onnx").write_bytes(b"")
    (directory / "notes.txt").write_text("these are not the weights you are looking for\n")
    # TFLite's file identifier is at bytes 4..8 of its flatbuffer.
    (directory / "face.tflite").write_bytes(b"\x1c\x00\x00\x00TFL3" + bytes(40))
    (directory / "corrupt.png").write_bytes(_png(8, 8, 0, b"\x00" * 72, crc_ok=False))
    (directory / "wide.png").write_bytes(_png(16, 8, 0, (b"\x00" + bytes(16)) * 8))
    (directory / "palette.png").write_bytes(_png(8, 8, 3, b"\x00" * 72))
    _wav(directory / "rate.wav", 8000, 1, 8000)
    _wav(directory / "stereo.wav", 16000, 2, 16000)
    _wav(directory / "cut.wav", 16000, 1, 16000)
    (directory / "cut.wav").write_bytes((directory / "cut.wav").read_bytes()[:3000])
    (directory / "empty.txt").write_text("\n \n")


def summarize(result: Any) -> str:
    """A short, stable description of a successful step's result."""
    if isinstance(result, dict) and result.keys() == {"dtype", "shape"}:  # decoded pixels
        return f"{result['dtype']}{result['shape']}"
    if isinstance(result, dict) and "target" in result:
        skipped = ", ".join(t for t, _ in result["skipped_targets"])
        return f"target {result['target']}; skipped {skipped}"
    if isinstance(result, dict):
        parts = []
        for name, out in result.items():
            if "nbytes" in out:
                parts.append(f"{name}: {out['dtype']}{out['shape']}, {out['nbytes']} bytes")
            elif not out["hex"]:
                parts.append(f"{name}: {out['dtype']}{out['shape']}")
            else:
                values = np.frombuffer(bytes.fromhex(out["hex"]), np.float32).tolist()
                parts.append(f"{name}: [{', '.join(f'{v:g}' for v in values)}]")
        return "; ".join(parts)
    return str(result)


@pytest.fixture(scope="module")
def case_dir(model_dir: Path) -> Path:
    write_case_files(model_dir)
    return model_dir


@pytest.mark.integration
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_api_case(guest, case_dir: Path, case: Case) -> None:
    done = guest({"load": case.load, "steps": case.steps + case.after}, wasmtime_flags=case.flags)
    lines = done.lines  # the load, then one line per step
    assert "ok" in lines[0], lines[0]
    bad = lines[len(case.steps)]  # the last of the case's own steps
    if case.error is None:
        assert "ok" in bad, bad
        assert case.message in summarize(bad["ok"]), (summarize(bad["ok"]), case.message)
    else:
        assert bad.get("error") == case.error, bad
        assert case.message in bad["message"], bad["message"]
    # The component goes on working: every step after the case succeeds.
    assert len(lines) == 1 + len(case.steps) + len(case.after), done.stdout
    for line in lines[1 + len(case.steps) :]:
        assert "ok" in line, line
    assert done.code == (0 if case.error is None else 1)


@pytest.mark.integration
@pytest.mark.parametrize("case", APP_CASES, ids=[c.id for c in APP_CASES])
def test_app_case(built, case_dir: Path, case: AppCase) -> None:
    from conftest import run_component

    done = run_component(built[case.app], case.file, *case.args, cwd=case_dir)
    done.assert_no_trap()
    assert done.code == 1
    assert case.message in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def error_tree() -> list[str]:
    """The exception tree drawn in ``wasinn._errors``' docstring."""
    source = (ROOT / "guest" / "wasinn" / "_errors.py").read_text()
    doc = (ast.get_docstring(ast.parse(source)) or "").split("The tree::\n\n", 1)[1]
    tree = doc.split("\n\n", 1)[0]
    return [line[4:] for line in tree.splitlines()]


def render_doc() -> str:
    lines = [
        "# What wasinn says when something is wrong",
        "",
        "Generated from the case list in `tests/test_robustness.py` "
        "(`python tests/test_robustness.py`);",
        "`./build.sh test` fails when this file is out of date. "
        "Every API case runs in a real component",
        "under wasmtime with OpenVINO; after each one the same component "
        "runs a valid step successfully",
        "and wasmtime exits normally. "
        "\"—\" means the input is accepted and the result is shown instead.",
        "",
        "## The exceptions",
        "",
        "Every exception wasinn raises on purpose is one of these (from `wasinn._errors`):",
        "",
        "```",
        *error_tree(),
        "```",
        "",
        "## The cases",
        "",
        "| area | case | exception | message (key part) or result |",
        "|---|---|---|---|",
    ]
    for c in CASES:
        error = f"`{c.error}`" if c.error else "—"
        lines.append(f"| {c.area} | {c.what} | {error} | {c.message} |")
    lines += [
        "",
        "## Sample apps",
        "",
        "Each prints one line on stderr (`APP: error: ...`) "
        "and exits with status 1; no Rust panic.",
        "",
        "| app | case | message (key part) |",
        "|---|---|---|",
    ]
    for a in APP_CASES:
        lines.append(f"| {a.app} | {a.what} | {a.message} |")
    return "\n".join(lines) + "\n"


def test_errors_doc_is_current() -> None:
    assert DOC.exists() and DOC.read_text() == render_doc(), (
        "docs/errors.md is out of date: run `.venv/bin/python tests/test_robustness.py`"
    )


if __name__ == "__main__":
    DOC.parent.mkdir(exist_ok=True)
    DOC.write_text(render_doc())
    print(f"wrote {DOC}", file=sys.stderr)
