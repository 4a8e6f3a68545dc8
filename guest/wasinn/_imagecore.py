"""What the image decoders share: their error class and the size limit.

It lives apart from ``wasinn.image`` so that the format modules (``_png``,
``_ppm``, ``_jpeg``) can import it while ``wasinn.image`` imports them.
"""

from __future__ import annotations

from ._errors import ValidationError

#: The most pixels (width x height) a decoder accepts: 8192 x 8192. A header is
#: checked against it before any pixel memory is allocated, so a small file
#: cannot declare a huge image (a "decompression bomb"). ``wasinn.image.decode``
#: takes ``max_pixels=`` to raise or lower it per call.
MAX_PIXELS = 8192 * 8192


class ImageError(ValidationError):
    """The bytes are not an image wasinn can decode; the message names the
    file and says why (corrupt, truncated, too large, or unsupported).

    Example::

        try:
            pixels = wasinn.image.decode(data)
        except wasinn.image.ImageError as e:
            print(e)   # "photo.png is truncated: it ends before its IEND chunk"
    """


def check_size(name: str, width: int, height: int, max_pixels: int) -> None:
    """Raise ImageError for an empty image or one over ``max_pixels``."""
    if width <= 0 or height <= 0:
        raise ImageError(f"{name} is corrupt: its size is {width}x{height}")
    if width * height > max_pixels:
        raise ImageError(
            f"{name} is {width}x{height} = {width * height} pixels, more than the "
            f"{max_pixels} allowed (pass max_pixels= to decode larger images)"
        )
