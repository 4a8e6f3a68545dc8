"""The async server: server_app's exports as async functions."""

import zlib

from checks import cut, payload
from wit_world import exports


class CodecAsync(exports.CodecAsync):
    async def crc(self, data: bytes) -> int:
        return zlib.crc32(data)

    async def fill(self, seed: int, size: int) -> bytes:
        return payload(seed, size)

    async def pieces(self, seed: int, size: int, piece: int) -> list[bytes]:
        return cut(payload(seed, size), piece)
