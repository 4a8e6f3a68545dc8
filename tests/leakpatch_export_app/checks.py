"""The bytes the servers make and the clients send, and how the clients check answers.

Each call's bytes differ (their length and every byte depend on the call
number), so an answer read from memory that was freed or reused too early does
not match. A mismatch raises, which traps the component.

>>> len(payload(0, 1000)), payload(3, 1000)
(1000, b'')
"""


def payload(seed: int, size: int) -> bytes:
    """The bytes for call number ``seed``: none every fourth call (an empty
    list takes the same path), else about ``size`` bytes that differ from one
    call to the next."""
    if seed % 4 == 3 or size == 0:
        return b""
    size -= seed % 3
    step = seed % 251 + 1
    block = bytes((seed + i * step) & 0xFF for i in range(256))
    return block * (size // 256) + block[: size % 256]


def piece_size(size: int) -> int:
    """How ``pieces`` is asked to cut: about 64 pieces."""
    return 1 + size // 64


def cut(data: bytes, piece: int) -> list[bytes]:
    """``data`` in pieces of ``piece`` bytes, the last possibly shorter."""
    return [data[i : i + piece] for i in range(0, len(data), piece)]


def check(seed: int, what: str, got: object, expected: object) -> None:
    """Raise unless an answer is what it should be."""
    if got != expected:
        size = len(got) if isinstance(got, bytes | list) else got
        raise AssertionError(f"call {seed}: {what} returned a wrong answer ({size})")
