"""wasinn's compiled loops over tensor bytes (C: ``ext/_kernels.c``).

Built by ``tools/build_ext.py`` for the guest and for the native CPython
(``./build.sh setup``). ``data`` is wasi-nn tensor bytes (little-endian,
row-major) of ``dtype``, one of wasinn's dtype names (``"f32"``, ...).
Order: NaN above every number, ``-0.0`` equal to ``0.0``, ties to the lower
index. Misuse (an unknown dtype, a length that is not whole elements) raises
ValueError.

Example::

    >>> import array
    >>> data = array.array("f", [0.5, 2.0, 2.0]).tobytes()
    >>> argmax(data, "f32"), topk(data, "f32", 2)
    (1, [(1, 2.0), (2, 2.0)])
"""

def argmax(data: bytes, dtype: str, /) -> int:
    """Index of the first NaN, else of the first largest element (non-empty ``data``)."""

def argmax_along(data: bytes, dtype: str, length: int, inner: int, /) -> list[int]:
    """The tensor as [outer, length, inner]: the argmax of each line along the
    middle axis, one per (outer, inner) position, in row-major order."""

def topk(data: bytes, dtype: str, k: int, /) -> list[tuple[int, float | int]]:
    """The ``min(k, n)`` largest elements as ``(index, value)``, largest first."""

def bf16_from_f32(data: bytes, /) -> bytes:
    """f32 bytes as bf16 bytes, rounded to nearest even; NaN stays a quiet NaN."""

def f32_from_bf16(data: bytes, /) -> bytes:
    """bf16 bytes as f32 bytes (exact)."""
