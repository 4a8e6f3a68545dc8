"""A test-only guest with the speak app's OpenJTalk front end (apps/speak's
``_openjtalk``, C and C++ compiled for the guest; build.txt adds that folder, and
build.sh runs its prepare.py, which puts the dictionary in build/models).

    openjtalk_app texts             frontend_cases.TEXTS, one JSON line each
    openjtalk_app random N          frontend_cases.random_texts(N), the same way
    openjtalk_app hostile JUNK      frontend_cases.hostile (JUNK: a folder of junk
                                    dictionary files), one JSON line each
    openjtalk_app load DICT|none... FIFO
                                    load each dictionary (none: skip), print
                                    {"seconds": S} for each, then open FIFO and
                                    wait (tests/guest_memory.py measures memory)

Each case line is ``{"result": ...}`` or ``{"raised": NAME, "message": TEXT}``;
tests/test_openjtalk.py runs it under the real wasmtime CLI and compares with
the same module natively. The dictionary is read at run time from /models
(build.sh maps build/models there), not built into the component.
"""

from __future__ import annotations

import json
import sys
import time

import _openjtalk
import frontend_cases
from wit_world import exports

from wasinn import print_line, run_command

DICTIONARY = "/models/openjtalk/naist-jdic"


def main(argv: list[str]) -> int:
    mode, args = (argv[0], argv[1:]) if argv else ("", [])
    if (mode == "texts" and not args) or (mode == "random" and len(args) == 1):
        texts = (
            frontend_cases.TEXTS if mode == "texts" else frontend_cases.random_texts(int(args[0]))
        )
        _openjtalk.load(DICTIONARY)
        for text in texts:
            print_line(json.dumps(frontend_cases.outcome(_openjtalk, "run_frontend", [text])))
    elif mode == "hostile" and len(args) == 1:
        for line in frontend_cases.hostile(_openjtalk, DICTIONARY, args[0]):
            print_line(json.dumps(line))
    elif mode == "load" and args:
        for folder in args[:-1]:
            start = time.perf_counter()
            if folder != "none":
                _openjtalk.load(folder)
            print_line(json.dumps({"seconds": time.perf_counter() - start}))
        with open(args[-1]):
            pass
    else:
        print(
            "usage: openjtalk_app texts | random N | hostile JUNK | load DICT|none... FIFO",
            file=sys.stderr,
        )
        return 2
    return 0


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="openjtalk_app")
