"""PP-OCRv4 text reading as rapidocr 1.4.4 does it with its default settings.

``Reader.read(pixels)`` takes a decoded RGB image and returns its text lines:

1. rapidocr's image limits: longest side at most 2000, shortest at least 30
   (resized to multiples of 32), then black bands above and below an image
   30 or fewer pixels high or more than 8 times as wide as high.
2. Detection: resized so the shorter side is 736 (multiples of 32),
   normalised, DBNet, probability map and dilated mask (host, fused into the
   model: ``graphs.detector_input`` / ``detector_output``); boxes from the mask
   (``boxes.py``, with its loops in C: ``ext/_boxes.c``).
3. Each box cut out with a perspective warp (host: ``graphs.crop_graph``).
4. Direction: the classifier in batches of 6, shortest lines first; lines it
   calls "180" with probability above 0.9 are read upside down.
5. Recognition in batches of 6, shortest first, each padded to the batch's
   widest line (host: ``graphs.line_input`` fused in front of the model and
   ``best_characters`` behind it); CTC greedy decoding, lines scoring below
   0.5 dropped.
6. Boxes mapped back to the input image's pixels.

Where this differs from rapidocr: OpenCV resizes u8 images in fixed point,
the host in f32 (samples can differ by 1); ties in the sort by width keep
their order here (numpy's argsort does not promise that).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

import graphs
import numpy as np
import numpy.typing as npt
from boxes import detect_boxes
from geometry import Cut, cut
from rotated import Point

from wasinn import GraphBuilder, Model, Tensor, image, ops

#: Where build.sh puts the models (prepare.py), as the component sees it.
MODELS = "/models/ocr"
#: rapidocr's defaults (its config.yaml).
MAX_SIDE = 2000
MIN_SIDE = 30
MIN_HEIGHT = 30
MAX_WIDTH_RATIO = 8
DETECTOR_SIDE = 736
BATCH = 6
CLASSIFIER_WIDTH = 192
UPSIDE_DOWN_SCORE = 0.9
RECOGNISER_WIDTH = 320
TEXT_SCORE = 0.5
#: The most pixels the detector is run on, after rapidocr's size rules, its
#: black bands and the detector's own resize: what one read costs in memory
#: and time grows with it (DBNet's feature maps on the host). The largest
#: image the rules make without bands is a low one 8 times as wide as high,
#: brought up to 736 high: 736 x 5920 (a 468 x 60 line becomes 5728 x 736), and
#: a square one at most 2016 x 2016. A thin image is refused by ``check_size``
#: when its bands would make more (1999 x 8 becomes 7488 x 32, then 7488 x
#: 1872 with its bands: 14 million).
MAX_DETECTOR_PIXELS = DETECTOR_SIDE * (DETECTOR_SIDE * MAX_WIDTH_RATIO + 32)
#: Pixels of a crop or a line: u8 [height, width, 3].
Pixels = npt.NDArray[np.uint8]
#: Samples one crop_graph run may take (N boxes x tallest x widest), to bound host memory.
CROP_SAMPLES = 4_000_000


class UnreadableImage(ValueError):
    """The image cannot be read with rapidocr's rules (too thin or too wide)."""


class TooMuchText(ValueError):
    """The detector found more text than the caller will have read at once."""


class Sizes(NamedTuple):
    """The sizes an image of ``height`` x ``width`` goes through, by rapidocr's
    rules: ``limited`` after its side limits (rounded to multiples of 32 when
    they resize it), ``band`` rows of black above and below it, and
    ``detector``, the size the detector runs at (its shorter side at least
    ``DETECTOR_SIDE``, both rounded to multiples of 32)."""

    limited: tuple[int, int]
    band: int
    detector: tuple[int, int]

    @property
    def detector_pixels(self) -> int:
        return self.detector[0] * self.detector[1]


def sizes(height: int, width: int) -> Sizes:
    """What ``Reader.read`` will make of a ``height`` x ``width`` image, without
    touching a pixel. Raises ``UnreadableImage`` for an image its rules shrink
    to nothing.

    >>> sizes(1080, 1920)
    Sizes(limited=(1080, 1920), band=0, detector=(1088, 1920))
    """
    limited = ([(height, width)] + list(_limit_steps(height, width)))[-1]  # the last resize
    band = _band(*limited)
    detector = _detector_size(limited[0] + 2 * band, limited[1])
    return Sizes(limited, band, detector)


def check_size(height: int, width: int) -> Sizes:
    """``sizes(height, width)``, refusing with ``UnreadableImage`` an image the
    detector would run on more than ``MAX_DETECTOR_PIXELS`` for (a very thin
    one: rapidocr pads it with black bands). Cheap: call it on the header's
    size before decoding.

    Example::

        check_size(8, 1999)   # UnreadableImage: ... the detector on 7488x1856 pixels ...
    """
    planned = sizes(height, width)
    if planned.detector_pixels > MAX_DETECTOR_PIXELS:
        h, w = planned.detector
        raise UnreadableImage(
            f"a {width}x{height} image is too thin to read: rapidocr's rules would run the "
            f"detector on {w}x{h} pixels ({planned.detector_pixels:,}); the limit is "
            f"{MAX_DETECTOR_PIXELS:,}; give it at least {MIN_SIDE} pixels on its shorter side, "
            "or cut it into shorter pieces"
        )
    return planned


class Line(NamedTuple):
    """One line of text: its box (4 corners, clockwise from top-left, in the
    input image's pixels), the text and its score (mean character probability)."""

    box: list[list[float]]
    text: str
    score: float


class Reading(NamedTuple):
    """What ``Reader.read`` found, and the milliseconds each stage took."""

    lines: list[Line]
    ms: dict[str, float]

    def json_lines(self) -> list[dict[str, object]]:
        """The lines as the app's JSON gives them: ``{"box", "text", "score"}`` each."""
        return [{"box": ln.box, "text": ln.text, "score": ln.score} for ln in self.lines]


class Reader:
    """The three PP-OCRv4 models with the processing fused around them.

    Example::

        reader = Reader("/models/ocr")
        for line in reader.read(image.decode(data, mode="RGB")).lines:
            print(line.text, line.score)
    """

    def __init__(self, models: str) -> None:
        self.detector = Model.load(
            f"{models}/det.onnx",
            preprocess=graphs.detector_input,
            postprocess=graphs.detector_output,
        )
        self.classifier = Model.load(f"{models}/cls.onnx", preprocess=graphs.line_input)
        self.recogniser = Model.load(
            f"{models}/rec.onnx",
            preprocess=graphs.line_input,
            postprocess=graphs.best_characters,
        )
        builder = GraphBuilder()
        self.cropper = Model.load(builder.to_onnx(graphs.crop_graph(builder)), encoding="onnx")
        # CTC class 0 is the blank; the model's list of characters follows, then a space.
        listed = self.recogniser.metadata.get("character")
        if not listed:
            raise ValueError(f"{models}/rec.onnx has no 'character' list in its metadata")
        self.characters = ["", *listed.splitlines(), " "]

    def close(self) -> None:
        """Release the models on the host."""
        for model in (self.detector, self.classifier, self.recogniser, self.cropper):
            model.close()

    def read(self, pixels: Tensor, max_columns: int | None = None) -> Reading:
        """The text lines of ``pixels`` (u8 [H, W, 3], RGB), top to bottom.

        Reading the boxes the detector finds (up to 1,000) costs the host time
        in proportion to the columns its two models read (``columns``: ~50 us
        each, so a page of small print, 140 lines of 2,000 pixels, costs 40 s).
        With ``max_columns``, more raise ``TooMuchText`` once the boxes are
        found, before any is read."""
        ms: dict[str, float] = {}
        clock = time.perf_counter()

        def lap(stage: str) -> None:
            nonlocal clock
            now = time.perf_counter()
            ms[stage] = ms.get(stage, 0.0) + (now - clock) * 1000
            clock = now

        raw_height, raw_width = pixels.shape[0], pixels.shape[1]
        planned = check_size(raw_height, raw_width)
        image, scale_y, scale_x = _within_limits(pixels)
        image, top = _letterboxed(image, planned.band)
        height, width = image.shape[0], image.shape[1]
        lap("prepare")
        found = self._detect(image, lap)
        lap("boxes")
        if not found:
            return Reading([], ms)
        cuts = [cut(box, height, width) for box in found]
        needed = columns(cuts)
        if max_columns is not None and needed > max_columns:
            raise TooMuchText(
                f"the image has {len(found)} text boxes, {needed:,} columns of text for the "
                f"models to read at 48 pixels high; at most {max_columns:,} are read at once: "
                "send it in smaller parts"
            )
        crops = self._crop(image, cuts)
        lap("crop")
        upside_down = self._classify(crops, cuts)
        lap("classify")
        texts = self._recognise(crops, cuts, upside_down)
        lap("recognise")
        lines = []
        for box, (text, score) in zip(found, texts, strict=True):
            if score >= TEXT_SCORE:
                corners = _original(box, top, scale_y, scale_x, raw_height, raw_width)
                lines.append(Line(corners, text, score))
        return Reading(lines, ms)

    # ------------------------------------------------------------ stages

    def _detect(self, image: Tensor, lap: Callable[[str], None]) -> list[list[Point]]:
        """The text boxes of ``image``: the fused detector on the host (stage
        "detect"), then ``detect_boxes`` in the guest (stage "boxes", timed by the caller)."""
        height, width = image.shape[0], image.shape[1]
        size_h, size_w = _detector_size(height, width)
        if size_h <= 0 or size_w <= 0:
            lap("detect")
            return []
        size = np.array([size_h, size_w], np.int32)
        out = self.detector.run_numpy({"image": image, "size": size})
        prob = out["prob"].reshape(size_h, size_w)
        mask = out["mask"].reshape(size_h, size_w)
        lap("detect")
        return [box.points for box in detect_boxes(prob, mask, height, width)]

    def _crop(self, image: Tensor, cuts: Sequence[Cut]) -> list[Pixels]:
        """Each cut's pixels (u8 [height, width, 3])."""
        crops: list[Pixels] = []
        for group in _groups(cuts):
            tall = max(c.height for c in group)
            wide = max(c.width for c in group)
            out = self.cropper.run_numpy({
                "image": image, "warps": np.array([c.warp for c in group], np.float32),
                "xs": np.arange(wide, dtype=np.float32), "ys": np.arange(tall, dtype=np.float32),
            })  # fmt: skip
            padded = out["crops"].reshape(len(group), tall, wide, 3)
            crops += [padded[k, : c.height, : c.width] for k, c in enumerate(group)]
        return crops

    def _classify(self, crops: Sequence[Pixels], cuts: Sequence[Cut]) -> npt.NDArray[np.bool_]:
        """Which crops the classifier says are upside down."""
        flipped = np.zeros(len(crops), np.bool_)
        for batch in _batches(cuts):
            inputs = _line_batch(crops, cuts, batch, np.zeros_like(flipped), CLASSIFIER_WIDTH)
            (probs,) = self.classifier.run_numpy(inputs).values()
            upright, turned = probs.T
            flipped[batch] = (turned > upright) & (turned > UPSIDE_DOWN_SCORE)
        return flipped

    def _recognise(
        self, crops: Sequence[Pixels], cuts: Sequence[Cut], flipped: npt.NDArray[np.bool_]
    ) -> list[tuple[str, float]]:
        texts: list[tuple[str, float]] = [("", 0.0)] * len(crops)
        for batch in _batches(cuts):
            widest = max(RECOGNISER_WIDTH / graphs.LINE_HEIGHT, *(_ratio(cuts[k]) for k in batch))
            width = int(graphs.LINE_HEIGHT * widest)
            out = self.recogniser.run_numpy(_line_batch(crops, cuts, batch, flipped, width))
            for m, k in enumerate(batch):
                texts[k] = self._decode(out["index"][m], out["prob"][m])
        return texts

    def _decode(
        self, indices: npt.NDArray[np.int64], probs: npt.NDArray[np.float32]
    ) -> tuple[str, float]:
        """CTC greedy decoding: repeats merged, blanks (class 0) dropped; the score
        is the mean probability of the characters kept (0 for none)."""
        kept = indices != 0
        kept[1:] &= indices[1:] != indices[:-1]
        text = "".join(self.characters[i] for i in indices[kept].tolist())
        return text, (float(probs[kept].mean(dtype=np.float64)) if kept.any() else 0.0)


# ---------------------------------------------------------------- helpers

_alpha_models: dict[int, Model] = {}


def rgb_pixels(data: bytes, name: str, max_pixels: int = image.MAX_PIXELS) -> Tensor:
    """An image file's bytes as u8 [H, W, 3] RGB, converted as rapidocr's loader
    converts it: gray repeated, transparency by its rules (``without_alpha``).
    Raises ``image.ImageError`` for what is not a readable image, and its
    subclass ``image.ImageTooLargeError`` for more than ``max_pixels`` pixels.

    Example::

        pixels = rgb_pixels(open("scan.png", "rb").read(), "scan.png")
    """
    pixels = image.decode(data, name=name, max_pixels=max_pixels)
    channels = pixels.shape[2]
    if channels == 3:
        return pixels
    if channels == 1:
        return Tensor(np.repeat(np.asarray(pixels), 3, axis=2))
    return without_alpha(pixels)


def without_alpha(pixels: Tensor) -> Tensor:
    """A gray+alpha or RGBA image (u8 [H, W, 2 or 4]) as u8 RGB, by rapidocr's
    rules (``graphs.without_alpha``); computed on the host.

    Example::

        rgb = without_alpha(image.decode(png_bytes))   # an RGBA screenshot
    """
    channels = pixels.shape[2]
    model = _alpha_models.get(channels)
    if model is None:
        builder = GraphBuilder()
        graph = builder.to_onnx(graphs.without_alpha(channels)(builder))
        model = _alpha_models[channels] = Model.load(graph, encoding="onnx")
    return model.run({"image": pixels})["rgb"]


def _ratio(c: Cut) -> float:
    return c.width / float(c.height)


def columns(cuts: Sequence[Cut]) -> int:
    """How many columns of 48-pixel-high text the direction classifier and the
    recogniser read for ``cuts``: CLASSIFIER_WIDTH each, and each line's own
    width at that height (at least RECOGNISER_WIDTH, the narrowest batch).
    What reading costs the host grows with it."""
    return sum(
        CLASSIFIER_WIDTH + max(RECOGNISER_WIDTH, math.ceil(graphs.LINE_HEIGHT * _ratio(c)))
        for c in cuts
    )


def _batches(cuts: Sequence[Cut]) -> Iterator[list[int]]:
    """Crop indices, narrowest (width / height) first, in groups of BATCH."""
    order = sorted(range(len(cuts)), key=lambda k: _ratio(cuts[k]))
    for start in range(0, len(order), BATCH):
        yield order[start : start + BATCH]


def _groups(cuts: Sequence[Cut]) -> Iterator[list[Cut]]:
    """Consecutive cuts whose padded crops stay within CROP_SAMPLES together."""
    group: list[Cut] = []
    tall = wide = 0
    for c in cuts:
        t, w = max(tall, c.height), max(wide, c.width)
        if group and (len(group) + 1) * t * w > CROP_SAMPLES:
            yield group
            group, t, w = [], c.height, c.width
        group.append(c)
        tall, wide = t, w
    if group:
        yield group


def _line_batch(
    crops: Sequence[Pixels],
    cuts: Sequence[Cut],
    batch: Sequence[int],
    flipped: npt.NDArray[np.bool_],
    width: int,
) -> dict[str, npt.NDArray[np.generic]]:
    """``graphs.line_input``'s inputs for the crops in ``batch``, each resized to
    height 48 and at most ``width`` wide (rapidocr: width ceil(48 * w / h)): the
    crops one below the other, each padded on the right to the widest."""
    wide = max(cuts[k].width for k in batch)
    tall = sum(cuts[k].height for k in batch)
    stacked = np.zeros((tall, wide, 3), np.uint8)
    params: list[float] = []
    start = 0
    for k in batch:
        c = cuts[k]
        stacked[start : start + c.height, : c.width] = crops[k]
        resized = min(width, math.ceil(graphs.LINE_HEIGHT * _ratio(c)))
        sx, sy = c.width / resized, c.height / graphs.LINE_HEIGHT
        ox, oy = 0.5 * sx - 0.5, 0.5 * sy - 0.5
        if flipped[k]:
            # Turned by 180 degrees: sample the crop from the far end.
            sx, ox, sy, oy = -sx, c.width - 1 - ox, -sy, c.height - 1 - oy
        params += [sx, ox, c.width - 1.0, sy, oy, c.height - 1.0, float(start), float(resized),
                   2.0 / max(wide - 1, 1), 2.0 / max(tall - 1, 1)]  # fmt: skip
        start += c.height
    return {
        "crops": stacked,
        "lines": np.array(params, np.float32).reshape(len(batch), len(graphs.LINE_PARAMS)),
        "xs": np.arange(width, dtype=np.float32),
    }


def _limit_steps(height: int, width: int) -> Iterator[tuple[int, int]]:
    """rapidocr's size limits: each resize they ask for (to multiples of 32),
    as (new height, new width): first when the longest side is over MAX_SIDE,
    then when the shortest is under MIN_SIDE."""
    for too_big in (True, False):
        longest = max(height, width)
        shortest = min(height, width)
        if too_big and longest > MAX_SIDE:
            ratio = MAX_SIDE / (height if height > width else width)
        elif not too_big and shortest < MIN_SIDE:
            ratio = MIN_SIDE / (height if height < width else width)
        else:
            continue
        new_h = int(round(int(height * ratio) / 32) * 32)
        new_w = int(round(int(width * ratio) / 32) * 32)
        if new_h <= 0 or new_w <= 0:
            raise UnreadableImage(f"a {width}x{height} image is too thin to read")
        yield new_h, new_w
        height, width = new_h, new_w


def _within_limits(pixels: Tensor) -> tuple[Tensor, float, float]:
    """The image resized by rapidocr's size limits (``_limit_steps``), with the
    factors that map the result's y and x back to the input's."""
    height, width = pixels.shape[0], pixels.shape[1]
    scale_y = scale_x = 1.0
    image = pixels
    for new_h, new_w in _limit_steps(height, width):
        image = ops.resize(image, (new_h, new_w))
        # rapidocr keeps only the last step's factors.
        scale_y, scale_x = height / new_h, width / new_w
        height, width = new_h, new_w
    return image, scale_y, scale_x


def _band(height: int, width: int) -> int:
    """The rows of black rapidocr adds above and below a low (MIN_HEIGHT or
    less) or very wide (over MAX_WIDTH_RATIO) image; 0 for the others."""
    if height > MIN_HEIGHT and width / height <= MAX_WIDTH_RATIO:
        return 0
    wanted = max(int(width / MAX_WIDTH_RATIO), MIN_HEIGHT) * 2
    return int(abs(wanted - height) / 2)


def _letterboxed(image: Tensor, band: int) -> tuple[Tensor, int]:
    """The image with ``band`` rows of black above and below (``_band``)."""
    if not band:
        return image, 0
    return Tensor(np.pad(np.asarray(image), ((band, band), (0, 0), (0, 0)))), band


def _detector_size(height: int, width: int) -> tuple[int, int]:
    """The size the detector runs at: the shorter side brought up to
    DETECTOR_SIDE, both rounded to multiples of 32."""
    ratio = 1.0
    if min(height, width) < DETECTOR_SIDE:
        ratio = DETECTOR_SIDE / height if height < width else DETECTOR_SIDE / width
    return int(round(int(height * ratio) / 32) * 32), int(round(int(width * ratio) / 32) * 32)


def _original(
    box: Sequence[Point], top: int, scale_y: float, scale_x: float, height: int, width: int
) -> list[list[float]]:
    """A box in the input image's pixels (rapidocr's ``_get_origin_points``, in float32)."""
    corners = np.array(box, np.float32)
    corners[:, 1] -= top
    corners *= np.array([scale_x, scale_y], np.float32)
    clipped: list[list[float]] = np.clip(corners, 0, [width, height]).tolist()
    return clipped
