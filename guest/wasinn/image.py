"""Decode image files (PNG, JPEG, binary PGM/PPM) into u8 tensors.

``decode(data)`` takes a file's bytes and returns a ``Tensor`` of dtype
``"u8"`` and shape ``(height, width, channels)``; the format comes from the
content, not a file name::

    from wasinn import image

    with open("photo.png", "rb") as f:
        pixels = image.decode(f.read(), mode="RGB", name="photo.png")
    pixels.shape        # (480, 640, 3)

``mode=None`` keeps the channels the file stores: 1 (gray), 2 (gray+alpha),
3 (RGB) or 4 (RGBA). ``mode="L"``, ``"RGB"`` or ``"RGBA"`` converts, exactly
as Pillow's ``Image.convert`` does:

- to ``"L"``: gray as it is; gray+alpha drops alpha; RGB(A) becomes
  ITU-R 601-2 luma, ``(19595 R + 38470 G + 7471 B + 32768) >> 16`` (Pillow's
  fixed-point form of 0.299 R + 0.587 G + 0.114 B), alpha dropped.
- to ``"RGB"``: gray repeated in R, G and B; alpha dropped (not composited).
- to ``"RGBA"``: as ``"RGB"``, plus the file's alpha, or 255 where it has none.

How each format maps to 8 bits: PNG 16-bit samples keep their high byte,
1/2/4-bit gray is scaled to 0..255, palette PNGs become RGB (RGBA with a
``tRNS`` chunk); PGM/PPM samples are scaled by 255/maxval. See ``_png.py``,
``_ppm.py`` and ``_jpeg.py`` for the details of each.

The decoders are Python (stdlib and zlib). Inside a component the per-pixel
work of big images goes to the host as ``GraphBuilder`` graphs, compiled on
the first image of each geometry and then reused: a JPEG's dequantisation,
IDCT, upsampling and colour conversion, and a PNG's Average/Paeth
unfiltering. The pixels are the same either way (the graphs compute the same
integers), and the pure path takes over if the host fails.

Anything that is not a decodable image (corrupt, truncated, unsupported, or
larger than ``max_pixels``) raises ``ImageError``, a ``ValidationError``,
whose message starts with ``name``. A header is checked before any pixel
memory is allocated, and compressed data is never inflated past the size the
header implies.
"""

from __future__ import annotations

from ._imagecore import MAX_PIXELS, ImageError
from ._jpeg import decode_jpeg
from ._png import SIGNATURE as _PNG_SIGNATURE
from ._png import decode_png
from ._ppm import decode_ppm, is_pnm
from ._tensor import Tensor

__all__ = ["MAX_PIXELS", "MODES", "ImageError", "decode", "decode_with_info"]

#: The conversions ``decode`` offers (``None``: as stored).
MODES = ("L", "RGB", "RGBA")


def decode(
    data: bytes | bytearray | memoryview,
    *,
    mode: str | None = None,
    name: str = "image",
    max_pixels: int = MAX_PIXELS,
) -> Tensor:
    """Decode a PNG, JPEG, PGM or PPM file into a u8 ``(height, width, channels)`` tensor.

    ``mode``: ``None`` (channels as stored), ``"L"``, ``"RGB"`` or ``"RGBA"``.
    ``name`` labels error messages. Images of more than ``max_pixels`` pixels
    are refused before their pixels are decoded.

    Example::

        >>> t = decode(open("digit.png", "rb").read(), mode="L")
        >>> t.shape, t.dtype
        ((8, 8, 1), 'u8')
    """
    return decode_with_info(data, mode=mode, name=name, max_pixels=max_pixels)[0]


def decode_with_info(
    data: bytes | bytearray | memoryview,
    *,
    mode: str | None = None,
    name: str = "image",
    max_pixels: int = MAX_PIXELS,
) -> tuple[Tensor, dict[str, object]]:
    """``decode``, plus what the file says about itself: ``{"format": "png" |
    "jpeg" | "ppm", ...}``; JPEGs add ``"orientation"`` (the EXIF value 1-8, or
    ``None``), which is reported, not applied.

    Example::

        >>> pixels, info = decode_with_info(jpeg_bytes)
        >>> info["format"], info.get("orientation")
        ('jpeg', 6)
    """
    if mode is not None and mode not in MODES:
        raise ImageError(f"unknown mode {mode!r}; use None (as stored), 'L', 'RGB' or 'RGBA'")
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ImageError(
            f"{name}: decode takes the file's bytes, not {type(data).__name__} "
            "(open the file in 'rb' mode and read it)"
        )
    raw = bytes(data)
    if raw.startswith(_PNG_SIGNATURE):
        width, height, channels, pixels, info = decode_png(raw, name, max_pixels)
    elif raw.startswith(b"\xff\xd8"):
        width, height, channels, pixels, info = decode_jpeg(raw, name, max_pixels)
        info = {"format": "jpeg", **info}
    elif is_pnm(raw):
        width, height, channels, pixels, info = decode_ppm(raw, name, max_pixels)
    elif not raw:
        raise ImageError(f"{name} is empty (0 bytes)")
    else:
        raise ImageError(f"{name} is not a PNG, JPEG, PGM or PPM file (unknown signature)")
    if mode is not None:
        pixels, channels = _convert(pixels, channels, mode)
    return Tensor._wrap(pixels, (height, width, channels), "u8"), info


def _convert(pixels: bytes, channels: int, mode: str) -> tuple[bytes, int]:
    want = {"L": 1, "RGB": 3, "RGBA": 4}[mode]
    if channels == want:
        return pixels, channels
    if want == 1:
        if channels == 2:
            return pixels[0::2], 1
        r, g, b = pixels[0::channels], pixels[1::channels], pixels[2::channels]
        return bytes(
            [
                (19595 * x + 38470 * y + 7471 * z + 32768) >> 16
                for x, y, z in zip(r, g, b, strict=True)
            ]
        ), 1
    out = bytearray(len(pixels) // channels * want)
    if channels <= 2:
        gray = pixels[0::channels]
        out[0::want] = out[1::want] = out[2::want] = gray
    else:
        for c in range(3):
            out[c::want] = pixels[c::channels]
    if want == 4:
        out[3::4] = (
            pixels[channels - 1 :: channels]
            if channels in (2, 4)
            else b"\xff" * (len(pixels) // channels)
        )
    return bytes(out), want
