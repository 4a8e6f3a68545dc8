"""Hostile JPEG files, each named, for the native tests (test_jpeg_hostile.py)
and the component's (test_image_app.py): truncations at every segment boundary
and inside every scan, impossible frame headers, lying table lengths, scans in
the wrong place or by the thousand, declared sizes far beyond the data, and
garbage after EOI.

``cases()`` maps a name to ``(data, expect)``: ``expect`` is ``"refused"``
(``ImageError``) or ``"pillow"`` (decoded, to exactly Pillow's pixels).
Every case is small (at most some hundred KB); what a decoder may spend on
it is what the tests bound.
"""

from __future__ import annotations

import io
import struct

from PIL import Image

#: Sides of the declared-size bombs: the largest square ``MAX_PIXELS`` allows.
BOMB_SIDE = 8192


def _pillow(mode: str, size: tuple[int, int], **options: object) -> bytes:
    """A small photo-like picture as Pillow writes it."""
    width, height = size
    picture = Image.new("RGB", size)
    picture.putdata(
        [
            ((x * 7 + y) % 256, (y * 11) % 256, (x * y) % 256)
            for y in range(height)
            for x in range(width)
        ]
    )
    out = io.BytesIO()
    picture.convert(mode).save(out, "JPEG", **options)
    return out.getvalue()


def segment(marker: int, body: bytes) -> bytes:
    return bytes((0xFF, marker)) + struct.pack(">H", len(body) + 2) + body


def boundaries(data: bytes) -> list[tuple[int, int]]:
    """(offset, marker) of every marker that starts a segment (not RSTn, not
    stuffed bytes), SOI included."""
    found = []
    pos = 0
    while (pos := data.find(b"\xff", pos)) >= 0 and pos + 1 < len(data):
        marker = data[pos + 1]
        if marker not in (0x00, 0xFF) and not 0xD0 <= marker <= 0xD7:
            found.append((pos, marker))
        pos += 1
    return found


def _truncations(name: str, data: bytes) -> dict[str, bytes]:
    """The file cut at every segment boundary, just after every marker, in
    the middle of every segment and every scan's data, and one byte short of EOI."""
    marks = boundaries(data)
    cuts = {}
    for (pos, marker), (end, _) in zip(marks, marks[1:] + [(len(data), 0)], strict=True):
        if marker == 0xD9:
            continue
        cuts[f"{name}-cut-before-{marker:02X}@{pos}"] = pos
        cuts[f"{name}-cut-after-{marker:02X}@{pos}"] = pos + 2
        cuts[f"{name}-cut-inside-{marker:02X}@{pos}"] = (pos + end) // 2
    cuts[f"{name}-cut-last-byte"] = len(data) - 3
    return {key: data[:cut] for key, cut in cuts.items()}


def _frame(data: bytes) -> int:
    """Offset of the SOF segment's body."""
    for pos, marker in boundaries(data):
        if marker in (0xC0, 0xC1, 0xC2):
            return pos + 4
    raise ValueError("no SOF")


def _with_frame(
    data: bytes, *, size: tuple[int, int] | None = None, count: int | None = None
) -> bytes:
    body = _frame(data)
    out = bytearray(data)
    if size is not None:
        out[body + 1 : body + 5] = struct.pack(">HH", size[1], size[0])
    if count is not None:
        out[body + 5] = count
    return bytes(out)


def _replace_first(data: bytes, marker: int, body: bytes) -> bytes:
    pos = data.index(bytes((0xFF, marker)))
    length = struct.unpack(">H", data[pos + 2 : pos + 4])[0]
    return data[:pos] + segment(marker, body) + data[pos + 2 + length :]


def _with_length(data: bytes, marker: int, length: int) -> bytes:
    """The first ``marker`` segment's length field says ``length``."""
    pos = data.index(bytes((0xFF, marker)))
    return data[: pos + 2] + struct.pack(">H", length) + data[pos + 4 :]


def progressive_scans(side: int, scans: int) -> bytes:
    """A gray progressive file of ``side`` x ``side`` whose DC scan is real
    data (one bit a block) and whose ``scans`` AC scans are a few bytes each:
    one end-of-band run over every block. They follow the rules of successive
    approximation (each coefficient first at bit 13, then refined bit by bit)
    for up to 63 x 14 = 882 scans; later ones repeat that order."""
    blocks = (side // 8) ** 2
    dqt = segment(0xDB, b"\x00" + bytes([1] * 64))
    sof = segment(0xC2, struct.pack(">BHHB", 8, side, side, 1) + b"\x01\x11\x00")
    # One code each, of one bit: DC difference 0; AC end-of-band run of 2**14+ blocks.
    dht = segment(0xC4, b"\x00" + bytes([1] + [0] * 15) + b"\x00")
    dht += segment(0xC4, b"\x10" + bytes([1] + [0] * 15) + b"\xe0")
    dc = segment(0xDA, b"\x01\x01\x00\x00\x00\x00") + bytes(-(-blocks // 8))
    # A run of 16384 + extra blocks: symbol 0xE0 ('0'), then 14 bits of extra.
    runs, left = [], blocks
    while left:
        run = min(left, 32767)
        runs.append(max(run, 16384) - 16384)
        left -= run
    bits = "".join("0" + format(extra, "014b") for extra in runs)
    bits += "1" * (-len(bits) % 8)
    payload = bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits), 8))
    payload = payload.replace(b"\xff", b"\xff\x00")
    order = [(k, ah, al) for al in range(13, -1, -1) for k in range(1, 64)
             for ah in [0 if al == 13 else al + 1]]  # fmt: skip
    ac = b""
    for i in range(scans):
        k, ah, al = order[i % len(order)]
        ac += segment(0xDA, bytes([1, 1, 0x00, k, k, (ah << 4) | al])) + payload
    return b"\xff\xd8" + dqt + sof + dht + dc + ac + b"\xff\xd9"


def cases() -> dict[str, tuple[bytes, str]]:
    """Every hostile case: name -> (data, "refused" or "pillow")."""
    baseline = _pillow("RGB", (40, 24), quality=80)
    progressive = _pillow("RGB", (40, 24), quality=80, progressive=True)
    gray = _pillow("L", (33, 17), quality=75, restart_marker_blocks=2)
    out: dict[str, tuple[bytes, str]] = {}

    def refused(name: str, data: bytes) -> None:
        out[name] = (data, "refused")

    for name, seed in (("baseline", baseline), ("progressive", progressive), ("gray", gray)):
        for key, data in _truncations(name, seed).items():
            refused(key, data)
        out[f"{name}-garbage-after-eoi"] = (seed + b"\x00garbage\xff\xd8\xff\xc0" * 50, "pillow")
    refused("sof-0-components", _with_frame(baseline, count=0))
    refused("sof-255-components", _with_frame(baseline, count=255))
    refused("sof-2-components", _with_frame(baseline, count=2))
    refused("size-0x0", _with_frame(baseline, size=(0, 0)))
    refused("size-0x24", _with_frame(baseline, size=(0, 24)))
    refused("size-40x0-dnl", _with_frame(baseline, size=(40, 0)))
    refused("size-65500x65500", _with_frame(baseline, size=(65500, 65500)))
    refused("size-65535x65535", _with_frame(baseline, size=(65535, 65535)))
    refused("size-65500x65500-progressive", _with_frame(progressive, size=(65500, 65500)))
    # Within MAX_PIXELS, but the data ends after a few blocks.
    refused("bomb-baseline", _with_frame(baseline, size=(BOMB_SIDE, BOMB_SIDE)))
    refused("bomb-progressive", _with_frame(progressive, size=(BOMB_SIDE, BOMB_SIDE)))
    for marker, name in ((0xC4, "dht"), (0xDB, "dqt")):
        for length in (0, 1, 2, 3, 17, 0xFFFF):
            refused(f"{name}-length-{length}", _with_length(baseline, marker, length))
    # An empty DHT: the real tables' bytes are then skipped as garbage and
    # libjpeg falls back on the standard tables (for Motion-JPEG), as in Pillow.
    out["dht-length-2"] = (out["dht-length-2"][0], "pillow")
    refused(
        "dht-too-many-codes",
        _replace_first(baseline, 0xC4, b"\x00" + bytes([3] + [0] * 15) + b"\x00\x01\x02"),
    )
    refused(
        "dht-count-past-body",
        _replace_first(baseline, 0xC4, b"\x00" + bytes([0] * 15 + [200]) + b"\x00"),
    )
    refused("dqt-table-id-9", _replace_first(baseline, 0xDB, b"\x09" + bytes(range(1, 65))))
    refused("dqt-16-bit-short", _replace_first(baseline, 0xDB, b"\x10" + bytes(64)))
    sos = baseline.index(b"\xff\xda")
    sof = _frame(baseline) - 4
    sof_length = struct.unpack(">H", baseline[sof + 2 : sof + 4])[0]
    frame = baseline[sof : sof + 2 + sof_length]
    no_frame = baseline[:sof] + baseline[sof + 2 + sof_length :]
    refused("sos-before-sof", no_frame[:-2] + frame + b"\xff\xd9")
    refused("two-sofs", baseline[:sos] + frame + baseline[sos:])
    refused("no-sos", baseline[:sos] + b"\xff\xd9")
    refused("scans-10000", progressive_scans(1024, 10000))
    refused("scans-33", progressive_scans(1024, 32))  # and the DC scan
    out["scans-32"] = (progressive_scans(1024, 31), "pillow")
    refused("scans-10000-bomb", progressive_scans(BOMB_SIDE, 10000))
    dc_scan = b"\xff\xda\x00\x08\x01\x01\x00\x00\x00\x00"
    ac_scan = b"\xff\xda\x00\x08\x01\x01\x00\x01\x01\x0d"  # coefficient 1, bit 13
    refused("ac-before-dc", progressive_scans(64, 3).replace(dc_scan, ac_scan, 1))
    return out
