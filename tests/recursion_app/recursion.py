"""Deep nesting through each recursive construct of Python and its C modules,
for tests/test_recursion.py and the measurements in docs/limits.md. The
command app (app.py beside this) and the HTTP app (tests/recursion_serve_app)
both run ``attempt``.
"""

from __future__ import annotations

import ast
import copy
import json
import pickle
import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator


def _nested_list(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def _python(depth: int) -> None:
    def down(n: int) -> int:
        return 0 if n == 0 else 1 + down(n - 1)

    down(depth)


def _python_through_c(depth: int) -> None:
    # Python frames alone live on the heap; a C call between them (map) puts
    # each level on the C stack too. The Python limit is lifted so that only
    # the C stack's guard can stop it.
    def down(n: int) -> int:
        return 0 if n == 0 else 1 + sum(map(down, [n - 1]))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000_000)
    try:
        down(depth)
    finally:
        sys.setrecursionlimit(limit)


def _json_lists(depth: int) -> None:
    json.loads("[" * depth + "]" * depth)


def _json_objects(depth: int) -> None:
    json.loads('{"a":' * depth + "1" + "}" * depth)


def _json_dumps(depth: int) -> None:
    json.dumps(_nested_list(depth))


def _repr(depth: int) -> None:
    repr(_nested_list(depth))


def _compare(depth: int) -> None:
    _ = _nested_list(depth) == _nested_list(depth)


def _tuple_hash(depth: int) -> None:
    value: tuple[object, ...] = ()
    for _ in range(depth - 1):
        value = (value,)
    hash(value)


def _isinstance(depth: int) -> None:
    kinds: tuple[object, ...] = (int,)
    for _ in range(depth - 1):
        kinds = (kinds,)
    isinstance("", kinds)  # type: ignore[arg-type]


def _pickle(depth: int) -> None:
    pickle.loads(pickle.dumps(_nested_list(depth)))


def _deepcopy(depth: int) -> None:
    copy.deepcopy(_nested_list(depth))


def _eval(depth: int) -> None:
    eval("-" * depth + "1")


def _literal_eval(depth: int) -> None:
    ast.literal_eval("[" * depth + "]" * depth)


def _compile(depth: int) -> None:
    compile("x" + "+x" * depth, "<deep>", "eval")


def _regex(depth: int) -> None:
    re.compile("(" * depth + "a" + ")" * depth).match("a")


def _regex_match(depth: int) -> None:
    re.match("(?:a|b)*c", "ab" * depth + "c")


def _xml(depth: int) -> None:
    ET.tostring(ET.fromstring("<a>" * depth + "</a>" * depth), encoding="unicode")


CONSTRUCTS: dict[str, Callable[[int], None]] = {
    "python": _python,
    "python-through-c": _python_through_c,
    "json-lists": _json_lists,
    "json-objects": _json_objects,
    "json-dumps": _json_dumps,
    "repr": _repr,
    "compare": _compare,
    "tuple-hash": _tuple_hash,
    "isinstance": _isinstance,
    "pickle": _pickle,
    "deepcopy": _deepcopy,
    "eval": _eval,
    "literal-eval": _literal_eval,
    "compile": _compile,
    "regex": _regex,
    "regex-match": _regex_match,
    "xml": _xml,
}


def attempt(construct: str, depths: list[int]) -> Iterator[str]:
    """For each depth in order: ``ok DEPTH`` when the construct handled that
    nesting, or ``raised DEPTH TYPE: MESSAGE`` when it raised, and then stop."""
    run = CONSTRUCTS[construct]
    for depth in depths:
        try:
            run(depth)
        except Exception as e:  # noqa: BLE001 - reporting it is the point
            yield f"raised {depth} {type(e).__name__}: {e}"
            return
        yield f"ok {depth}"
