"""The EXIF orientation tag: of a JPEG's APP1 segment, a PNG's ``eXIf``
chunk or a WebP's ``EXIF`` chunk.

Only what ``wasinn.image.decode(exif_transpose=True)`` needs: IFD0's tag
0x0112, the way a camera says how the stored pixels must be turned to be seen
upright (1 as stored, 6 turned 90 degrees clockwise, ...; see
``wasinn._pixels.orient``). Anything malformed means "no orientation", as a
viewer shows such a photo as stored.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["chunk_orientation", "orientation"]

_TAG_ORIENTATION = 0x0112
_TYPE_SHORT = 3


def orientation(body: bytes | None) -> int | None:
    """The orientation (1-8) in an APP1 body that starts ``b"Exif\\0\\0"``, or None.

    Example::

        >>> entry = b"\\x01\\x12\\0\\x03\\0\\0\\0\\x01\\0\\x06\\0\\0"  # 0x0112, SHORT, 1, 6
        >>> orientation(b"Exif\\0\\0MM\\0*\\0\\0\\0\\x08\\0\\x01" + entry)
        6
        >>> orientation(None), orientation(b"Exif\\0\\0II")
        (None, None)
    """
    if body is None:
        return None
    return _tiff_orientation(body[6:])


def chunk_orientation(payload: bytes | None) -> int | None:
    """The orientation (1-8) in a PNG ``eXIf`` or WebP ``EXIF`` chunk: TIFF data,
    which some writers prefix with ``b"Exif\\0\\0"`` as in a JPEG; or None.

    Example::

        >>> entry = b"\\x12\\x01\\x03\\0\\x01\\0\\0\\0\\x03\\0\\0\\0"  # 0x0112, SHORT, 1, 3
        >>> chunk_orientation(b"II*\\0\\x08\\0\\0\\0\\x01\\0" + entry)
        3
    """
    if payload is None:
        return None
    return _tiff_orientation(payload[6:] if payload.startswith(b"Exif\0\0") else payload)


def _tiff_orientation(tiff: bytes) -> int | None:
    if len(tiff) < 8 or tiff[:2] not in (b"II", b"MM"):
        return None
    order: Literal["little", "big"] = "little" if tiff[:2] == b"II" else "big"
    ifd = int.from_bytes(tiff[4:8], order)
    if ifd + 2 > len(tiff):
        return None
    for i in range(int.from_bytes(tiff[ifd : ifd + 2], order)):
        entry = tiff[ifd + 2 + 12 * i : ifd + 14 + 12 * i]
        if len(entry) < 12:
            return None
        if int.from_bytes(entry[:2], order) == _TAG_ORIENTATION:
            if int.from_bytes(entry[2:4], order) != _TYPE_SHORT:
                return None
            value = int.from_bytes(entry[8:10], order)
            return value if 1 <= value <= 8 else None
    return None
