"""setjmp/longjmp out of deep call chains (C: ``ext/_sjlj.c``, with ``/* build_ext: sjlj */``).

Example::

    >>> dive(100, -1, 7, False, False)     # no jump: 0 + 1 + ... + 100
    5050
    >>> dive(100, 60, 7, True, True)
    Traceback (most recent call last):
    ...
    ValueError: longjmp from depth 60 with value 7
"""

def dive(depth: int, fail_at: int, code: int, by_qsort: bool, nested: bool, /) -> int:
    """Descend ``depth`` calls; at depth ``fail_at`` longjmp (value ``code``) back to the
    setjmp in dive, directly or from a qsort comparator, past a frame with its own setjmp
    when ``nested``; the jump raises ValueError. Without one: 0 + 1 + ... + depth."""
