"""OpenJTalk front-end cases, written to run unchanged natively and in a component.

``TEXTS`` are Japanese sentences of every kind the front end treats apart (kanji,
kana, numbers, dates, times, money, punctuation, Latin letters, symbols, emoji,
half-width kana, a long text); ``HOSTILE`` are inputs that must raise a clean
Python exception (or give ``[]``). ``outcome(module, call, *args)`` runs one call
of the ``_openjtalk`` module and returns its result, or the exception it raised,
as JSON-able data. tests/openjtalk_app runs them inside a component and
tests/test_openjtalk.py natively, and compares both with pyopenjtalk.
"""

from __future__ import annotations

import random
from typing import Any

TEXTS = [
    "こんにちは。",
    "今日はいい天気ですね。",
    "吾輩は猫である。名前はまだ無い。",
    "東京特許許可局の局長が急遽、許可を出した。",
    "明日の会議は午後3時から第2会議室で行います。",
    "2024年1月1日は月曜日でした。",
    "令和6年12月25日",
    "価格は1,980円（税込み）です。",
    "円周率は3.14159で、約22/7です。",
    "電話番号は03-1234-5678です。",
    "100%の力で、-5度の寒さにも負けない。",
    "彼は「ありがとう」と言った！",
    "本当ですか？はい、本当です…",
    "AIとMLの違いを説明してください。",
    "I love Tokyo.",
    "Python3.12をインストールする。",
    "ｶﾀｶﾅとﾊﾝｶｸｶﾞｷﾞｸﾞ",
    "ＡＢＣ１２３　全角",
    "★☆♪→←※〒＠＃＄",
    "猫🐱が好きです😀",
    "ひらがなだけのぶんしょうです",
    "カタカナダケノブンショウデス",
    "漢字語彙解析処理",
    "行って来ます。行ってきます。いってきます。",
    "一、二、三、四、五、六、七、八、九、十。",
    "1000000000000円",
    "0.5秒後に1/2の確率で",
    "第1条　この法律は、平成二十年四月一日から施行する。",
    "タブ\tと改行\nと空白 が混ざった文",
    "おはようございます、今日も一日頑張りましょう。" * 20,
]

#: What random_texts draws from: kana, kanji of TEXTS, digits, Latin letters,
#: punctuation, symbols, spaces, half-width kana, emoji.
POOLS = [
    "あいうえおかきくけこがぎぐげごさしすせそっゃゅょをんー",
    "アイウエオカキクケコガギグゲゴサシスセソッャュョヲンヴー",
    "".join(sorted({c for text in TEXTS for c in text if "\u4e00" <= c <= "\u9fff"})),
    "0123456789０１２３４５６７８９",
    "abcxyzABCXYZ",
    "、。！？「」（）・…,.!?-/:%",
    "★♪→※〒＠＃＄￥円年月日時分秒",
    " 　\t",
    "ｱｲｳｶﾞﾊﾟｯｰ",
    "😀🐱𠮷",
]


def random_texts(count: int, seed: int = 25) -> list[str]:
    """``count`` texts of 1 to 60 characters drawn from POOLS, the same on every
    run and in the guest (a seeded ``random.Random``)."""
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        pools = rng.sample(POOLS, rng.randint(1, 4))
        texts.append("".join(rng.choice(rng.choice(pools)) for _ in range(rng.randint(1, 60))))
    return texts


#: Calls that must raise (or return []): (name, function, arguments).
HOSTILE: list[tuple[str, str, list[Any]]] = [
    ("empty", "run_frontend", [""]),
    ("only control characters", "run_frontend", ["\t\n\r\x01"]),
    ("only spaces", "run_frontend", ["   "]),
    ("NUL inside", "run_frontend", ["あ\x00い"]),
    ("lone surrogate", "run_frontend", ["あ\ud800い"]),
    ("bytes, not str", "run_frontend", [b"abc"]),
    ("no argument", "run_frontend", []),
    ("one byte too long", "run_frontend", ["a" * 8193]),
    ("longest ASCII", "run_frontend", ["a" * 8192]),
    ("longest kana", "run_frontend", ["あ" * 2730]),
    ("longest digits", "run_frontend", ["1" * 8192]),
    ("longest mixed", "run_frontend", [("漢字とabc123、" * 400)[: 8192 // 3]]),
    ("long unknown runs", "run_frontend", ["Ω" * 4000]),
    ("4-byte characters only", "run_frontend", ["𠮷" * 2048]),
]


def summary(words: list[dict[str, Any]]) -> dict[str, Any]:
    """A long result in short: how many words, and the readings joined."""
    return {"words": len(words), "pron": "".join(w["pron"] for w in words)}


def outcome(module: Any, function: str, args: list[Any], short: bool = False) -> dict[str, Any]:
    """``module.function(*args)`` as JSON-able data: ``{"result": ...}`` (summarised
    with ``short``) or ``{"raised": NAME, "message": TEXT}``."""
    try:
        result = getattr(module, function)(*args)
    except Exception as exc:  # noqa: BLE001 - the outcome being compared
        return {"raised": type(exc).__name__, "message": str(exc)}
    if short and isinstance(result, list):
        return {"result": summary(result)}
    return {"result": result}


def hostile(module: Any, dictionary: str, junk: str) -> list[dict[str, Any]]:
    """The hostile sequence, on a fresh module: a call before any dictionary is
    loaded, HOSTILE (summarised), dictionaries that must not load ('', a missing
    folder, ``junk``: a folder of junk files), a call after such a failure, the
    real dictionary again and a call."""
    out = [outcome(module, "run_frontend", ["あ"])]
    module.load(dictionary)
    out += [outcome(module, function, args, short=True) for _, function, args in HOSTILE]
    out += [outcome(module, "load", [folder]) for folder in ("", "missing", junk)]
    out.append(outcome(module, "run_frontend", ["あ"]))
    module.load(dictionary)
    out.append(outcome(module, "run_frontend", ["あ"]))
    return out
