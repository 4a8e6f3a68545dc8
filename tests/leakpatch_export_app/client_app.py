"""The sync client: calls the server's exports ``calls`` times and checks each answer."""

import zlib

import wit_world
from checks import check, cut, payload, piece_size
from wit_world.imports import codec


class WitWorld(wit_world.WitWorld):
    def soak(self, calls: int, send: int, receive: int) -> tuple[int, int]:
        sent = received = 0
        for seed in range(calls):
            data = payload(seed, send)
            check(seed, "crc", codec.crc(data), zlib.crc32(data))
            expected = payload(seed, receive)
            check(seed, "fill", codec.fill(seed, receive), expected)
            piece = piece_size(receive)
            check(seed, "pieces", codec.pieces(seed, receive, piece), cut(expected, piece))
            sent += len(data)
            received += 2 * len(expected)
        return sent, received
