"""What the image decoders share: the size limit, what a header says
(``ImageInfo``) and the buffer the pixels are written into (``Canvas``); their
errors (``ImageError``, ``ImageTooLargeError``) are in ``wasinn._errors``.

It lives apart from ``wasinn.image`` so that the format modules (``png``,
``ppm``, ``jpeg``, ``webp``) can import it while ``wasinn.image`` imports them.
"""

from __future__ import annotations

import io
from typing import NamedTuple

from .._errors import ImageError, ImageTooLargeError

#: The most pixels (width x height) a decoder accepts: 8192 x 8192. A header is
#: checked against it before any pixel memory is allocated, so a small file
#: cannot declare a huge image (a "decompression bomb"). ``wasinn.image.decode``
#: takes ``max_pixels=`` to raise or lower it per call.
MAX_PIXELS = 8192 * 8192


class ImageInfo(NamedTuple):
    """What an image file's header says: ``format`` (``"png"``, ``"jpeg"``,
    ``"webp"`` or ``"ppm"``), ``width``, ``height`` and ``channels``, the channels
    ``decode`` returns with ``mode=None`` (1 gray, 2 gray+alpha, 3 RGB,
    4 RGBA).

    Example::

        >>> wasinn.image.probe(open("photo.jpg", "rb").read())
        ImageInfo(format='jpeg', width=4032, height=3024, channels=3)
    """

    format: str
    width: int
    height: int
    channels: int

    @property
    def pixels(self) -> int:
        """``width * height``, what ``max_pixels`` limits."""
        return self.width * self.height


def check_size(name: str, width: int, height: int, max_pixels: int | None) -> None:
    """Raise ImageError for an empty image, ImageTooLargeError for one over
    ``max_pixels`` (``None``: no limit)."""
    if width <= 0 or height <= 0:
        raise ImageError(f"{name} is corrupt: its size is {width}x{height}")
    if max_pixels is not None and width * height > max_pixels:
        raise ImageTooLargeError(
            f"{name} is {width}x{height} = {width * height} pixels, more than the "
            f"{max_pixels} allowed (pass max_pixels= to decode larger images)",
            width=width,
            height=height,
            max_pixels=max_pixels,
        )


class Canvas:
    """A zero-filled output buffer of ``size`` bytes, written through ``view``,
    that becomes the decoded ``bytes`` without a copy.

    A ``bytearray`` would need ``bytes(...)`` at the end, a second copy of the
    whole image at the moment memory peaks. ``io.BytesIO`` keeps its data in a
    ``bytes`` object and ``getvalue()`` hands that very object over when it is
    exactly full and no view is open (CPython's BytesIO does so since 3.5,
    and inside a component too; if another implementation copied, only the
    peak would change).

    Write whole stretches: a strided write through a memoryview is several
    times slower than into a bytearray.

    Example::

        canvas = Canvas(6)
        canvas.view[0:2] = b"\\x01\\x02"
        canvas.finish()   # b'\\x01\\x02\\x00\\x00\\x00\\x00'
    """

    def __init__(self, size: int) -> None:
        self._io = io.BytesIO()
        self._io.seek(size - 1)
        self._io.write(b"\0")  # one allocation of exactly ``size`` zeros
        self.view = self._io.getbuffer()

    def finish(self) -> bytes:
        """The bytes written (the canvas cannot be written after this)."""
        self.view.release()
        data = self._io.getvalue()
        self._io = io.BytesIO()
        return data
