"""OpenJTalk's text-processing front end (C: ``ext/_openjtalk.c``; OpenJTalk 1.11
from Debian's source package, see tools/c_libraries.toml).

Example::

    >>> load("/models/openjtalk/naist-jdic")
    >>> [(w["string"], w["pron"], w["acc"]) for w in run_frontend("世界")]
    [('世界', 'セカイ', 1)]
"""

#: The longest text run_frontend takes, in bytes of UTF-8 (about 2,700 kana or kanji).
MAX_TEXT_BYTES: int

def load(folder: str, /) -> None:
    """Read the MeCab dictionary in ``folder`` (``sys.dic``, ``unk.dic``, ``char.bin``,
    ``matrix.bin``: pyopenjtalk-plus's naist-jdic, which apps/speak/prepare.py takes
    from its wheel) into memory, in place of the one loaded before (which is dropped first,
    even when this one then fails to load). ``FileNotFoundError`` when a file is
    missing, ``ValueError`` when one is too small or MeCab cannot read them."""

def run_frontend(text: str, /) -> list[dict[str, str | int]]:
    """One dict per word of ``text``, in order, as pyopenjtalk's ``run_frontend`` gives
    them: ``string``, ``pos``, ``pos_group1``-``3``, ``ctype``, ``cform``, ``orig``,
    ``read``, ``pron`` (str) and ``acc``, ``mora_size``, ``chain_flag`` (int),
    ``chain_rule`` (str). ``[]`` for a text with nothing to read. ``ValueError`` for a
    text longer than ``MAX_TEXT_BYTES`` or with a NUL character,
    ``UnicodeEncodeError`` for lone surrogates, ``RuntimeError`` before ``load``."""
