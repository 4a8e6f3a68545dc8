"""WebP (placeholder until the libwebp codec lands)."""

from __future__ import annotations

from ._imagecore import ImageError, ImageInfo

Info = dict[str, object]


def is_webp(data: bytes) -> bool:
    """A RIFF container of form type WEBP."""
    return data[:4] == b"RIFF" and data[8:12] == b"WEBP"


def probe_webp(data: bytes, name: str) -> ImageInfo:
    raise ImageError(f"{name}: WebP is not supported yet")


def decode_webp(data: bytes, name: str, max_pixels: int) -> tuple[int, int, int, bytes, Info]:
    raise ImageError(f"{name}: WebP is not supported yet")


def encode_webp(
    pixels: bytes, width: int, height: int, channels: int, quality: int, lossless: bool
) -> bytes:
    raise ImageError("WebP is not supported yet")
