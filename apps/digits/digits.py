"""The digits model's input and answer, shared by the command (app.py) and the
HTTP server (apps/serve), so that both give the same answer for the same image.

    with Model.load("/app/model/digits.xml") as model:
        print(top3(model, pixels(png_bytes, "x.png")))   # [(3, 0.99...), (5, ...), (9, ...)]
"""

from __future__ import annotations

from wasinn import Model, Tensor, image

SIDE = 8


#: The largest image decoded at all (a request body is anyone's file).
MAX_PIXELS = 512 * 512


def pixels(data: bytes, name: str) -> Tensor:
    """An 8x8 image file's bytes (PNG, or any format wasinn.image decodes) as the
    model's input: gray levels, f32[1, 1, 8, 8] scaled to 0..1. ``name`` is only
    for messages. Raises ``image.ImageError`` for a bad file or another size."""
    # A small pixel limit: a compressed bomb is refused before it is inflated,
    # while a photo of modest size still hears what size the model wants.
    gray = image.decode(data, mode="L", name=name, max_pixels=MAX_PIXELS)
    height, width, _ = gray.shape
    if (width, height) != (SIDE, SIDE):
        raise image.ImageError(
            f"{name} is {width}x{height}; the digits model reads {SIDE}x{SIDE} images"
        )
    return Tensor([v / 255.0 for v in gray.data], shape=(1, 1, SIDE, SIDE), dtype="f32")


def probabilities(model: Model, x: Tensor) -> Tensor:
    """The model's ``probs`` output f32[1, 10] for one image from ``pixels``."""
    return model.run({"image": x}, outputs=["probs"])["probs"]


def top3(model: Model, x: Tensor) -> list[tuple[int, float]]:
    """The three likeliest digits with their probabilities, likeliest first."""
    return probabilities(model, x).topk(3)
