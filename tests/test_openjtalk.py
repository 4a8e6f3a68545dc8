"""OpenJTalk's front end for the speak app (apps/speak's ``_openjtalk``: Debian's
open-jtalk 1.11-3, MeCab's C++ included, built by tools/c_libraries.py; the
dictionary of pyopenjtalk-plus's wheel, which apps/speak/prepare.py takes out
of it), natively and in a component (tests/openjtalk_app), against pyopenjtalk
0.4.1's run_frontend on the same dictionary (tests/pyopenjtalk_oracle.py, in a venv of its own).

Every field of every word is compared: 30 hand-picked sentences
(frontend_cases.TEXTS) and 1,000 seeded random ones natively, the same and 300
random ones in the guest against the native module. Hostile input must raise
a clean Python exception, the same natively and in the guest. The dictionary's
cost in the guest (load time, linear memory, the process's memory) is measured
against a run that does not load it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, build_app, run_component

APP = ROOT / "tests" / "openjtalk_app"
SPEAK = ROOT / "apps" / "speak"
DICTIONARY = ROOT / "build" / "models" / "openjtalk" / "naist-jdic"
FIELDS = ("string", "pos", "pos_group1", "pos_group2", "pos_group3", "ctype", "cform", "orig",
          "read", "pron", "acc", "mora_size", "chain_rule", "chain_flag")  # fmt: skip

sys.path.insert(0, str(APP))
import frontend_cases  # noqa: E402


@pytest.fixture(scope="module")
def openjtalk() -> Any:
    """The native module with the dictionary loaded. Building the test app runs
    apps/speak/prepare.py (the dictionary) and builds _openjtalk for both targets."""
    build_app(APP)
    sys.path.insert(0, str(SPEAK))
    import _openjtalk

    _openjtalk.load(str(DICTIONARY))
    return _openjtalk


@pytest.fixture(scope="module")
def oracle() -> Any:
    import oracle_venv
    import pyopenjtalk_oracle

    try:
        pyopenjtalk_oracle.ensure_venv()
    except oracle_venv.Unavailable as exc:
        pytest.fail(f"the pyopenjtalk 0.4.1 venv (build/venv-pyopenjtalk) cannot be made: {exc}")
    return pyopenjtalk_oracle


def _compare(ours: list[Any], theirs: list[Any]) -> tuple[Counter[str], int]:
    """Per-field matches over the words of the texts split alike, and their number."""
    matches: Counter[str] = Counter()
    words = 0
    for a, b in zip(ours, theirs, strict=True):
        if b is None or len(a) != len(b):
            continue
        words += len(a)
        for x, y in zip(a, b, strict=True):
            matches.update(f for f in FIELDS if x[f] == y[f])
    return matches, words


def test_equals_pyopenjtalk_natively(openjtalk: Any, oracle: Any) -> None:
    """Every field of every word as pyopenjtalk gives it, on its own code (r9y9's
    copy of OpenJTalk 1.11) and the app's dictionary."""
    texts = frontend_cases.TEXTS + frontend_cases.random_texts(1000)
    ours = [openjtalk.run_frontend(text) for text in texts]
    theirs = oracle.frontend(DICTIONARY, texts)
    assert all(t is not None for t in theirs)  # every text fits pyopenjtalk's buffer
    matches, words = _compare(ours, theirs)
    rates = {f: f"{matches[f]}/{words}" for f in FIELDS}
    differ = [(t, a, b) for t, a, b in zip(texts, ours, theirs, strict=True) if a != b]
    assert not differ, f"{len(differ)} texts differ (per field: {rates}); first: {differ[0]}"
    assert words > 20000 and all(matches[f] == words for f in FIELDS)


def test_readings_of_a_few_words(openjtalk: Any) -> None:
    """What the front end is for: readings, pronunciations and accents (naist-jdic's)."""
    words = openjtalk.run_frontend("今日は2024年1月1日です。")
    assert [(w["string"], w["pron"]) for w in words[:2]] == [("今日", "キョー"), ("は", "ワ")]
    assert (
        "".join(w["pron"] for w in words) == "キョーワニセンニジューヨネンイチガツツイタチデス’、"
    )
    world = openjtalk.run_frontend("世界")
    assert world[0]["acc"] == 1 and world[0]["mora_size"] == 3 and world[0]["pos"] == "名詞"
    assert openjtalk.run_frontend("") == []
    assert openjtalk.MAX_TEXT_BYTES == 8192


def _native_hostile(cwd: Path) -> list[dict[str, Any]]:
    """frontend_cases.hostile on a fresh native module (load state is the module's)."""
    code = (
        "import json, sys; sys.path[:0] = sys.argv[1:3]; import _openjtalk, frontend_cases; "
        "print(json.dumps(frontend_cases.hostile(_openjtalk, sys.argv[3], 'junk')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(SPEAK), str(APP), str(DICTIONARY)],
        cwd=cwd, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result: list[dict[str, Any]] = json.loads(done.stdout)
    return result


def _junk(folder: Path) -> Path:
    """``folder/junk``: the four files, each big enough that MeCab's own checks run."""
    (folder / "junk").mkdir(exist_ok=True)
    for i, name in enumerate(("sys.dic", "unk.dic", "char.bin", "matrix.bin")):
        (folder / "junk" / name).write_bytes(bytes(range(i, 256)) * 1200)
    return folder


def test_hostile_input_raises_cleanly_natively(openjtalk: Any, tmp_path: Path) -> None:
    got = _native_hostile(_junk(tmp_path))
    names = ["before load"] + [n for n, _, _ in frontend_cases.HOSTILE]
    names += ["load ''", "load missing", "load junk", "after a failed load", "reloaded"]
    by_name = dict(zip(names, got, strict=True))
    raised = {n: o["raised"] for n, o in by_name.items() if "raised" in o}
    assert raised == {
        "before load": "RuntimeError",
        "NUL inside": "ValueError",
        "lone surrogate": "UnicodeEncodeError",
        "bytes, not str": "TypeError",
        "no argument": "TypeError",
        "one byte too long": "ValueError",
        "load ''": "ValueError",
        "load missing": "FileNotFoundError",
        "load junk": "ValueError",
        "after a failed load": "RuntimeError",
    }
    assert (
        by_name["empty"]
        == by_name["only control characters"]
        == {"result": {"words": 0, "pron": ""}}
    )
    assert by_name["longest kana"]["result"]["words"] > 1000
    assert by_name["reloaded"]["result"][0]["pron"] == "ア"
    assert "mecab/src/" in by_name["load junk"]["message"]  # MeCab's reason, its own path


@pytest.mark.parametrize(
    "damage",
    ["truncated sys.dic", "matrix.bin as sys.dic", "empty char.bin", "sys.dic as matrix.bin",
     "unk.dic as sys.dic", "sys.dic as char.bin"],
)  # fmt: skip
def test_a_damaged_dictionary_does_not_load(openjtalk: Any, tmp_path: Path, damage: str) -> None:
    """MeCab's own checks (sizes, magic number, version, type) and the module's
    (each file's least size: MeCab reads char.bin's header before checking its
    size) refuse each file damaged, with ValueError."""
    folder = tmp_path / "dic"
    folder.mkdir()
    for name in ("sys.dic", "unk.dic", "char.bin", "matrix.bin"):
        (folder / name).symlink_to(DICTIONARY / name)
    first, _, second = damage.partition(" as ")
    target = folder / (second or damage.split()[-1])
    target.unlink()
    if damage == "truncated sys.dic":
        target.write_bytes((DICTIONARY / "sys.dic").read_bytes()[: 1 << 20])
    elif damage == "empty char.bin":
        target.write_bytes(b"")
    else:
        shutil.copyfile(DICTIONARY / first, target)
    code = (
        "import sys; sys.path[:0] = sys.argv[1:2]; import _openjtalk\n"
        "try:\n    _openjtalk.load(sys.argv[2])\nexcept ValueError as e:\n    print('refused', e)"
    )
    done = subprocess.run([sys.executable, "-c", code, str(SPEAK), str(folder)],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0 and done.stdout.startswith("refused"), done.stdout + done.stderr


@pytest.mark.integration
def test_guest_equals_native(openjtalk: Any, tmp_path: Path) -> None:
    """The component's words are the native module's, field for field (texts and
    300 random ones); its hostile outcomes too, messages included."""
    build_app(APP)
    _junk(tmp_path)

    def run(*args: str) -> list[Any]:
        done = run_component(APP, *args, cwd=tmp_path)
        done.assert_no_trap()
        assert done.code == 0, done.stdout + done.stderr
        return [json.loads(line) for line in done.stdout.splitlines()]

    for args, texts in ((["texts"], frontend_cases.TEXTS),
                        (["random", "300"], frontend_cases.random_texts(300))):  # fmt: skip
        native = [frontend_cases.outcome(openjtalk, "run_frontend", [t]) for t in texts]
        assert run(*args) == json.loads(json.dumps(native)), args
    assert run("hostile", "junk") == _native_hostile(tmp_path)


@pytest.mark.integration
def test_dictionary_cost_in_the_guest(openjtalk: Any, tmp_path: Path) -> None:
    """Loading Debian's naist-jdic (107 MB of files, read from /models at run
    time) grows the guest's linear memory by about the files' size and takes
    well under a second; loading it again reuses the memory."""
    from guest_memory import run_measured

    build_app(APP)
    runs = {
        what: run_measured(ROOT / "build.sh", APP, folders, tmp_path, options=("load",))
        for what, folders in (
            ("none", ["none"]),
            ("once", ["/models/openjtalk/naist-jdic"]),
            ("twice", ["/models/openjtalk/naist-jdic"] * 2),
        )
    }
    files_mb = sum(p.stat().st_size for p in DICTIONARY.glob("*.*")) / (1 << 20)
    base, once, twice = runs["none"], runs["once"], runs["twice"]
    assert base.linear_mb and once.linear_mb and twice.linear_mb
    grown = once.linear_mb - base.linear_mb
    seconds = [json.loads(line)["seconds"] for line in once.lines + twice.lines]
    print(f"\ndictionary {files_mb:.1f} MB of files: linear memory {base.linear_mb:.1f} -> "
          f"{once.linear_mb:.1f} MB, peak RSS {base.peak_rss_mb:.0f} -> {once.peak_rss_mb:.0f} MB, "
          f"load {seconds[0]:.3f} s (again in one instance: {seconds[2]:.3f} s)")  # fmt: skip
    assert files_mb <= grown <= files_mb + 16
    assert once.peak_rss_mb - base.peak_rss_mb <= files_mb + 32
    assert twice.linear_mb == once.linear_mb
    assert max(seconds) < 5
