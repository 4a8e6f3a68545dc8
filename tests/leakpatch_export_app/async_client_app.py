"""The async client: client_app's calls, awaited."""

import zlib

import wit_world
from checks import check, cut, payload, piece_size
from wit_world.imports import codec_async


class WitWorld(wit_world.WitWorld):
    async def soak(self, calls: int, send: int, receive: int) -> tuple[int, int]:
        sent = received = 0
        for seed in range(calls):
            data = payload(seed, send)
            check(seed, "crc", await codec_async.crc(data), zlib.crc32(data))
            expected = payload(seed, receive)
            check(seed, "fill", await codec_async.fill(seed, receive), expected)
            piece = piece_size(receive)
            pieces = await codec_async.pieces(seed, receive, piece)
            check(seed, "pieces", pieces, cut(expected, piece))
            sent += len(data)
            received += 2 * len(expected)
        return sent, received
