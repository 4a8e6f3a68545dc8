"""Pre/post-processing for the fusion tests (``tests/test_fuse.py``), run in the
component by ``app.py`` and natively by the tests: stdlib only."""

from __future__ import annotations

from wasinn import GraphBuilder, Operand

MEAN = [0.5, 0.4, 0.3]
STD = [0.2, 0.25, 0.3]


def preprocess(b: GraphBuilder) -> dict[str, Operand]:
    """u8 HWC image [4, 4, 3] -> f32 [1, 3, 4, 4], (x/255 - mean) / std."""
    image = b.input("image", shape=[4, 4, 3], dtype="u8")
    scaled = b.cast(image, "f32") / 255.0
    normal = (scaled - b.constant(MEAN)) / b.constant(STD)
    chw = b.transpose(normal, permutation=[2, 0, 1])
    return {"x": b.reshape(chw, [1, 3, 4, 4])}


def postprocess(b: GraphBuilder, outputs: dict[str, Operand]) -> dict[str, Operand]:
    """The best class and its probability, per row of the model's 'probs'."""
    probs = outputs["probs"]
    return {
        "best": b.arg_max(probs, 1, keep_dimensions=True),
        "top": b.reduce_max(probs, axes=[1], keep_dimensions=True),
    }
