"""Decode image files (PNG, JPEG, WebP, binary PGM/PPM) into u8 tensors.

``decode(data)`` takes a file's bytes and returns a ``Tensor`` of dtype
``"u8"`` and shape ``(height, width, channels)`` (``np.asarray(pixels)`` is a
zero-copy uint8 array, for apps that use numpy); the format comes from the
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
``tRNS`` chunk); PGM/PPM samples are scaled by 255/maxval; WebP is RGB, or
RGBA when the file has alpha (animated WebPs are refused). See ``_image/png.py``,
``_image/ppm.py``, ``_image/jpeg.py`` and ``_image/webp.py`` for the details of each.

Every format but PGM/PPM is decoded by a well-kept C library compiled into
wasinn (and so into every component, at native speed): JPEG by libjpeg-turbo
(``_image/jpeg.py``, ``ext/_jpeg_codec.c``), PNG by libspng (``_image/png.py``,
``ext/_png_codec.c``), WebP by libwebp (``_image/webp.py``,
``ext/_webp_codec.c``); their pixels are Pillow's. ``encode`` writes each of
the three with the same libraries (JPEG: Pillow's bytes). PGM/PPM is Python.

Reduced-size decoding, for a model that wants far fewer pixels than a
photo has: ``reduce=2``, ``4`` or ``8`` decodes at that fraction of the size,
``ceil(width / reduce) x ceil(height / reduce)``, and ``min_size=(w, h)``
picks the largest of them whose result is still at least ``w x h`` (Pillow's
``Image.draft`` rule; an image already smaller is decoded whole)::

    pixels, info = image.decode_with_info(data, mode="RGB", min_size=(128, 128))
    pixels.shape, info["reduce"]     # a 4000x3000 photo: ((375, 500, 3), 8)

A JPEG is decoded at that scale by libjpeg-turbo (its reduced IDCTs: what
Pillow's ``draft`` does, the same pixels as ``Image.draft("RGB", (w // N,
h // N))``), so the full-size pixels never exist; PNG, WebP and PGM/PPM are
decoded whole and box-averaged in C, the same pixels as Pillow's
``Image.reduce(N)`` (colours premultiplied by alpha, as Pillow does). The two
differ on purpose: a JPEG's DCT scaling is not a box average of the full
decode (it keeps the low frequencies of each 8x8 block and upsamples chroma
at the reduced size: on photo-like pictures about 0.4 grey levels on
average, 1-3 at the 99th percentile, up to 19 at 1/2 on sharp colour
edges), and each is what Pillow gives for that format. libwebp's own scaled
decoding (``use_scaling``) is not used: it resamples the YUV planes with
its own rounding, which no Pillow operation reproduces.
Reduction comes first, on the pixels as stored, then ``exif_transpose`` and
``mode``: Pillow's ``draft`` or ``reduce``, then ``ImageOps.exif_transpose``,
then ``convert``. ``max_pixels`` still applies to the size the header
declares: entropy decoding (JPEG) and inflating (PNG, WebP) cost what the
full image costs, whatever the scale. Memory is the reduced pixels for a
baseline JPEG (a progressive one keeps its coefficients, as at full size),
the full pixels plus the reduced ones for the other formats.

Anything that is not a decodable image (corrupt, truncated, unsupported, or
larger than ``max_pixels``) raises ``ImageError``, a ``ValidationError``,
whose message starts with ``name``; too many pixels raise its subclass
``ImageTooLargeError``. A header is checked before any pixel memory is
allocated, and compressed data is never inflated past the size the header
implies. ``probe(data)`` reads only the header (format, size, channels), so
an app can apply its own budget before decoding anything::

    info = image.probe(data)
    if info.width * info.height > 4096 * 4096:
        ...   # refuse it (an HTTP server: 413)

Memory: decoding needs at most about three times the decoded pixels
(``height * width * channels`` bytes, of the full size: see above for
``reduce``) plus a constant of some megabytes,
for every format, however well a file compresses; inside a component that
holds for the guest's linear memory (which never shrinks).
"""

from __future__ import annotations

from collections.abc import Sequence

from . import _numpy, _pixels
from ._errors import ImageError, ImageTooLargeError
from ._image.core import MAX_PIXELS, ImageInfo
from ._image.jpeg import decode_jpeg, encode_jpeg, probe_jpeg, probe_jpeg_orientation
from ._image.png import SIGNATURE as _PNG_SIGNATURE
from ._image.png import decode_png, encode_png, orientation_png, probe_png
from ._image.ppm import decode_ppm, is_pnm, probe_ppm
from ._image.webp import decode_webp, encode_webp, is_webp, orientation_webp, probe_webp
from ._tensor import Tensor

__all__ = [
    "MAX_PIXELS",
    "MODES",
    "REDUCTIONS",
    "ImageError",
    "ImageInfo",
    "ImageTooLargeError",
    "FORMATS",
    "decode",
    "decode_with_info",
    "encode",
    "probe",
]

#: The conversions ``decode`` offers (``None``: as stored).
MODES = ("L", "RGB", "RGBA")
_MODE_CHANNELS = {"L": 1, "RGB": 3, "RGBA": 4}
#: What ``encode`` writes.
FORMATS = ("png", "jpeg", "webp")
#: The factors ``decode(reduce=)`` takes: libjpeg-turbo's DCT scales, 1/1 to
#: 1/8, which Pillow's ``draft`` picks from; the other formats take the same
#: ones, so that a factor chosen for one file works for any.
REDUCTIONS = (1, 2, 4, 8)


def decode(
    data: bytes | bytearray | memoryview,
    *,
    mode: str | None = None,
    name: str = "image",
    max_pixels: int = MAX_PIXELS,
    exif_transpose: bool = False,
    reduce: int = 1,
    min_size: Sequence[int] | None = None,
) -> Tensor:
    """Decode a PNG, JPEG, WebP, PGM or PPM file into a u8 ``(height, width, channels)`` tensor.

    ``mode``: ``None`` (channels as stored), ``"L"``, ``"RGB"`` or ``"RGBA"``.
    ``name`` labels error messages. Images of more than ``max_pixels`` pixels
    (as the header declares them, reduced or not) are refused with
    ``ImageTooLargeError`` before their pixels are decoded.
    ``exif_transpose=True`` turns the pixels upright as the file's EXIF
    orientation asks (what Pillow's ``ImageOps.exif_transpose`` does; a phone
    photo taken upright is often stored sideways with orientation 6); by
    default the pixels are as stored.

    ``reduce``: 1 (whole), 2, 4 or 8 decodes at that fraction of the size,
    ``ceil(width / reduce) x ceil(height / reduce)``: a JPEG through
    libjpeg-turbo's DCT scaling (Pillow's ``draft``), the other formats by a
    box average (Pillow's ``Image.reduce``). ``min_size=(width, height)``
    instead picks the largest of those factors whose result is still at
    least that size, width and height as returned (upright when
    ``exif_transpose=True``): Pillow's ``draft`` rule, ``min_size[0] *
    reduce <= the image's width`` and ``min_size[1] * reduce <= its height``. See the module's
    docstring for what each format computes.

    Example::

        >>> t = decode(open("digit.png", "rb").read(), mode="L")
        >>> t.shape, t.dtype
        ((8, 8, 1), 'u8')
        >>> decode(phone_jpeg, exif_transpose=True).shape   # stored 4032x3024, orientation 6
        (4032, 3024, 3)
        >>> decode(phone_jpeg, exif_transpose=True, reduce=4).shape
        (1008, 756, 3)
        >>> decode(phone_jpeg, exif_transpose=True, min_size=(128, 128)).shape   # 1/8
        (504, 378, 3)
        >>> decode(phone_jpeg, min_size=(1000, 1000)).shape   # 1/2: 1/4 would be 1008x756
        (1512, 2016, 3)
    """
    return decode_with_info(
        data,
        mode=mode,
        name=name,
        max_pixels=max_pixels,
        exif_transpose=exif_transpose,
        reduce=reduce,
        min_size=min_size,
    )[0]


def decode_with_info(
    data: bytes | bytearray | memoryview,
    *,
    mode: str | None = None,
    name: str = "image",
    max_pixels: int = MAX_PIXELS,
    exif_transpose: bool = False,
    reduce: int = 1,
    min_size: Sequence[int] | None = None,
) -> tuple[Tensor, dict[str, object]]:
    """``decode``, plus what the file says about itself: ``{"format": "png" |
    "jpeg" | "webp" | "ppm", "reduce": N, ...}``; WebPs add ``"lossless"``
    (bool); JPEGs, PNGs and WebPs add ``"orientation"`` (the EXIF value 1-8 of
    a JPEG's APP1 segment, a PNG's ``eXIf`` chunk or a WebP's ``EXIF`` chunk,
    or ``None``): what the file says, whether or not ``exif_transpose=True``
    turned the pixels. ``"reduce"`` is the factor the pixels were reduced by
    (``reduce=``, the one ``min_size=`` picked, or 1): a pixel's box spans
    ``reduce`` pixels of the file, so coordinates found in the pixels times
    ``reduce`` are the file's.

    Example::

        >>> pixels, info = decode_with_info(jpeg_bytes)
        >>> info["format"], info.get("orientation"), info["reduce"]
        ('jpeg', 6, 1)
        >>> pixels, info = decode_with_info(jpeg_bytes, min_size=(128, 128))
        >>> pixels.shape, info["reduce"]          # stored 4032x3024
        ((378, 504, 3), 8)
    """
    if mode is not None and mode not in MODES:
        raise ImageError(f"unknown mode {mode!r}; use None (as stored), 'L', 'RGB' or 'RGBA'")
    wanted = _check_reduce(reduce, min_size)
    raw = _file_bytes(data, name, "decode")
    kind = _format(raw, name)
    if wanted is not None:
        reduce = _reduction(raw, kind, name, wanted, exif_transpose)
    if kind == "png":
        width, height, channels, pixels, info = decode_png(raw, name, max_pixels)
    elif kind == "jpeg":
        # libjpeg-turbo decodes at the scale itself: the only format that never
        # holds the full-size pixels.
        width, height, channels, pixels, info = decode_jpeg(raw, name, max_pixels, reduce)
        info = {"format": "jpeg", **info}
    elif kind == "webp":
        width, height, channels, pixels, info = decode_webp(raw, name, max_pixels)
    else:
        width, height, channels, pixels, info = decode_ppm(raw, name, max_pixels)
    if reduce > 1 and kind != "jpeg":
        pixels = _pixels.reduce(pixels, width, height, channels, reduce)
        width, height = -(-width // reduce), -(-height // reduce)
    info["reduce"] = reduce
    orientation = info.get("orientation")
    if exif_transpose and isinstance(orientation, int) and orientation != 1:
        pixels = _pixels.orient(pixels, width, height, channels, orientation)
        if orientation >= 5:
            width, height = height, width
    if mode is not None and channels != _MODE_CHANNELS[mode]:
        pixels, channels = (
            _pixels.convert(pixels, channels, _MODE_CHANNELS[mode]),
            _MODE_CHANNELS[mode],
        )
    return Tensor._wrap(pixels, (height, width, channels), "u8"), info


def _check_reduce(reduce: object, min_size: object) -> tuple[int, int] | None:
    """``min_size`` as a tuple; ImageError unless ``reduce`` is one of
    REDUCTIONS and ``min_size`` None or two positive ints (a tuple or list,
    as Pillow takes), not both given."""
    if type(reduce) is not int or reduce not in REDUCTIONS:  # not True, not 2.0
        raise ImageError(
            f"reduce is 1 (whole), 2, 4 or 8 (the scales libjpeg-turbo decodes a JPEG at, "
            f"taken by every format), not {reduce!r}"
        )
    if min_size is None:
        return None
    if not (
        isinstance(min_size, (tuple, list))
        and len(min_size) == 2
        and all(type(v) is int and v > 0 for v in min_size)
    ):
        raise ImageError(
            f"min_size is (width, height), two positive ints, not {min_size!r} "
            "(e.g. min_size=(128, 128) for a model that takes 128x128 pictures)"
        )
    if reduce != 1:
        raise ImageError(
            f"pass reduce= or min_size=, not both (reduce={reduce!r}, min_size={min_size!r}): "
            "min_size picks the factor"
        )
    return (min_size[0], min_size[1])


def _reduction(raw: bytes, kind: str, name: str, min_size: tuple[int, int], upright: bool) -> int:
    """The largest of REDUCTIONS whose result is at least ``min_size``: Pillow's
    ``draft`` rule (``width // N >= min width`` and the same for the height),
    on the stored size, turned as ``exif_transpose`` would turn it when
    ``upright``. Reads the header only (and the EXIF orientation only when
    ``upright``)."""
    info = _probe_header(raw, kind, name)
    width, height = info.width, info.height
    if upright and (_stored_orientation(raw, kind, name) or 1) >= 5:
        width, height = height, width
    fits = min(width // min_size[0], height // min_size[1])
    return max((n for n in REDUCTIONS if n <= fits), default=1)


def _stored_orientation(raw: bytes, kind: str, name: str) -> int | None:
    """The file's EXIF orientation (1-8), or None when it has none."""
    if kind == "png":
        return orientation_png(raw)
    if kind == "jpeg":
        return probe_jpeg_orientation(raw, name)[1]
    if kind == "webp":
        return orientation_webp(raw)
    return None


def probe(data: bytes | bytearray | memoryview, *, name: str = "image") -> ImageInfo:
    """What the file's header says, without decoding it: an ``ImageInfo``
    with ``format`` (``"png"``, ``"jpeg"``, ``"webp"`` or ``"ppm"``), ``width``,
    ``height`` and ``channels`` (what ``decode`` returns with ``mode=None``).

    Only headers are read (PNG: the chunks before the image data; JPEG: the
    segments up to the frame header; no inflating, no entropy decoding), so
    it is cheap whatever the image's size, like Pillow's
    ``Image.open(f).size``. Bytes that are not such a file, or end inside the
    header, raise ``ImageError``; a header that ``decode`` would refuse
    (corrupt or unsupported) raises the same error here. No pixel limit is
    applied: compare ``info.width * info.height`` with your own.

    Example::

        >>> info = probe(open("photo.jpg", "rb").read(), name="photo.jpg")
        >>> info
        ImageInfo(format='jpeg', width=4032, height=3024, channels=3)
        >>> info.width * info.height > 4096 * 4096
        False
    """
    raw = _file_bytes(data, name, "probe")
    return _probe_header(raw, _format(raw, name), name)


def _probe_header(raw: bytes, kind: str, name: str) -> ImageInfo:
    """``probe`` of a file whose format ``_format`` has found."""
    if kind == "png":
        return probe_png(raw, name)
    if kind == "jpeg":
        return probe_jpeg(raw, name)
    if kind == "webp":
        return probe_webp(raw, name)
    return probe_ppm(raw, name)


def _file_bytes(data: object, name: str, what: str) -> bytes:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ImageError(
            f"{name}: {what} takes the file's bytes, not {type(data).__name__} "
            "(open the file in 'rb' mode and read it)"
        )
    return bytes(data)


def _format(raw: bytes, name: str) -> str:
    """The format from the signature: "png", "jpeg", "webp" or "ppm"; ImageError
    for anything else."""
    if raw.startswith(_PNG_SIGNATURE):
        return "png"
    if raw.startswith(b"\xff\xd8"):
        return "jpeg"
    if is_webp(raw):
        return "webp"
    if is_pnm(raw):
        return "ppm"
    if not raw:
        raise ImageError(f"{name} is empty (0 bytes)")
    raise ImageError(f"{name} is not a PNG, JPEG, WebP, PGM or PPM file (unknown signature)")


def encode(
    pixels: Tensor,
    format: str = "png",
    *,
    quality: int | None = None,
    lossless: bool = False,
    compress_level: int = 6,
) -> bytes:
    """Encode a u8 ``(height, width, channels)`` tensor (or ``(height, width)``
    gray) as a PNG, JPEG or WebP file; return its bytes. A numpy uint8
    array of that shape works as well.

    Channels: 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA (``decode``'s layout).
    JPEG stores gray or RGB only (drop alpha first, as Pillow asks); WebP
    stores RGB or RGBA (gray is written as RGB).

    - ``quality``: JPEG 1-95 (default 75, Pillow's), WebP 0-100 (default 80,
      Pillow's); PNG has none (it is lossless).
    - ``lossless=True``: lossless WebP (``quality`` then sets how hard the
      encoder works, as in Pillow).
    - ``compress_level``: PNG's zlib level 0-9 (default 6, Pillow's).

    Example::

        >>> data = encode(pixels, "jpeg", quality=90)
        >>> decode(data, mode="RGB").shape == pixels.shape
        True
    """
    if _numpy.is_array(pixels):
        pixels = Tensor(pixels)  # one copy, as for a model input
    if not isinstance(pixels, Tensor):
        raise ImageError(
            f"encode takes a wasinn Tensor or numpy array of dtype 'u8', not "
            f"{type(pixels).__name__}"
        )
    if pixels.dtype != "u8":
        raise ImageError(
            f"encode takes u8 pixels (0..255), not dtype {pixels.dtype!r}; convert first "
            "(e.g. scale floats to 0..255 and .astype('u8'))"
        )
    if pixels.ndim == 2:
        height, width, channels = (*pixels.shape, 1)
    elif pixels.ndim == 3 and 1 <= pixels.shape[2] <= 4:
        height, width, channels = pixels.shape
    else:
        raise ImageError(
            f"encode takes pixels of shape (height, width) or (height, width, channels) with "
            f"1 to 4 channels, not {tuple(pixels.shape)}"
        )
    if height == 0 or width == 0:
        raise ImageError(f"encode cannot write an empty image ({width}x{height})")
    if format not in FORMATS:
        raise ImageError(f"encode writes {', '.join(map(repr, FORMATS))}, not {format!r}")
    data = pixels.tobytes()
    if format == "png":
        if quality is not None or lossless:
            raise ImageError("PNG is lossless: it takes compress_level=, not quality= or lossless=")
        if not (isinstance(compress_level, int) and 0 <= compress_level <= 9):
            raise ImageError(f"compress_level is 0 (none) to 9 (smallest), not {compress_level!r}")
        return encode_png(data, width, height, channels, compress_level)
    if format == "jpeg":
        if lossless:
            raise ImageError("JPEG has no lossless mode here; use format='png' or 'webp'")
        quality = _quality(75 if quality is None else quality, 1, 95, "JPEG")
        if channels not in (1, 3):
            raise ImageError(
                f"JPEG stores gray or RGB, not {channels} channels; drop the alpha channel "
                "first (decode with mode='RGB' or 'L'), or use format='png' or 'webp'"
            )
        return encode_jpeg(data, width, height, channels, quality)
    quality = _quality(80 if quality is None else quality, 0, 100, "WebP")
    return encode_webp(data, width, height, channels, quality, lossless)


def _quality(quality: object, low: int, high: int, what: str) -> int:
    if isinstance(quality, bool) or not isinstance(quality, int) or not low <= quality <= high:
        raise ImageError(f"{what} quality is an int from {low} to {high}, not {quality!r}")
    return quality
