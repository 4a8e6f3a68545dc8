"""The sync server: exports that take bytes, return bytes, and return a list of bytes."""

import zlib

from checks import cut, payload
from wit_world import exports


class Codec(exports.Codec):
    def crc(self, data: bytes) -> int:
        return zlib.crc32(data)

    def fill(self, seed: int, size: int) -> bytes:
        return payload(seed, size)

    def pieces(self, seed: int, size: int, piece: int) -> list[bytes]:
        return cut(payload(seed, size), piece)
