"""Reading an untrusted JSON request body, with its nesting bounded before parsing.

``json.loads`` recurses once per level of nesting. Inside a component the
guest's C stack guard turns very deep input into a ``RecursionError`` (at about
64,000 levels with the wasmtime flags build.sh passes; see docs/limits.md), but
a document nested thousands of levels deep is never a real request, and
refusing it from a cheap scan keeps the parser's worst case out of reach::

    doc = parse(body, max_depth=MAX_DEPTH)   # raises BadJSON with a clear message
"""

from __future__ import annotations

import json
import re
from itertools import accumulate

#: The deepest nesting of arrays and objects a request may have. The endpoints
#: need 2 ({"texts": [...]}); 64 leaves room for any reasonable document.
MAX_DEPTH = 64

# A JSON string, escapes included: brackets inside strings do not nest. The
# pattern cannot fail once it has seen an opening quote, so it never backtracks:
# the closing quote is optional (a string left open runs to the end of the body,
# which json.loads then refuses), and the possessive quantifiers keep no
# positions to go back to (without them a megabyte of escapes cost 8 times as
# much per byte as 64 KB). With the quote required, every `"` of an unclosed
# run of `\"` started a scan to the end that then failed: 32 KB cost 10 s.
_STRING = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"?', re.DOTALL)
# Every byte but the four brackets, for bytes.translate's delete argument.
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
# Each bracket's step in depth.
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


class BadJSON(ValueError):
    """The body is not a JSON document this server accepts; the message says why."""


def nesting_depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects in ``data`` (0 for a scalar).

    Brackets inside strings are ignored. The scan is a regular expression, a
    ``translate`` and one pass over the brackets left, all in C loops and each
    linear in the size of ``data`` (the regular expression cannot fail once it
    has started, so it never backtracks): a megabyte costs tens of
    milliseconds whatever its bytes are (tests/test_jsonbody.py, the bench).

    >>> nesting_depth(b'{"a": [1, "]]", {"b": []}]}')
    4
    """
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def parse(data: bytes, max_depth: int = MAX_DEPTH) -> object:
    """``data`` as UTF-8 JSON, refusing nesting deeper than ``max_depth`` before parsing.

    Raises ``BadJSON`` for invalid UTF-8, invalid JSON (including integers of
    more than 4,300 digits, which Python's int conversion refuses) and for too
    deep a nesting.

    >>> parse(b'{"texts": ["hello"]}')
    {'texts': ['hello']}
    """
    # A body with few opening brackets cannot nest deeply: skip the scan.
    if data.count(b"[") + data.count(b"{") > max_depth:
        depth = nesting_depth(data)
        if depth > max_depth:
            raise BadJSON(
                f"the JSON nests {depth} levels deep; at most {max_depth} levels of arrays "
                "and objects are accepted"
            )
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise BadJSON(f"the body is not JSON: {e}") from None
