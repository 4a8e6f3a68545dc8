"""digits: classify 8x8 handwritten digits with a small CNN through wasinn.

    digits IMAGE.png [IMAGE.png ...]   top-3 digits with probabilities per image
    digits --eval                      accuracy on the held-out split (data/heldout.u8)
    add --json to either for machine-readable output (one JSON object per line)

The model and data are read from /app (the app folder, mapped by build.sh run).
"""

from __future__ import annotations

import json

from digits import SIDE, pixels, probabilities
from wit_world import exports

from wasinn import Model, Tensor, run_command

MODEL = "/app/model/digits.xml"
HELDOUT = "/app/data/heldout.u8"


def image_tensor(path: str) -> Tensor:
    """Read an 8x8 image file into the model's input (see digits.pixels)."""
    with open(path, "rb") as f:
        return pixels(f.read(), path)


def classify(model: Model, paths: list[str], as_json: bool) -> None:
    for path in paths:
        probs = probabilities(model, image_tensor(path))
        if as_json:
            print(json.dumps({"file": path, "probs": probs.tolist()[0]}))
        else:
            ranked = "  ".join(f"{d} ({p:.3f})" for d, p in probs.topk(3))
            print(f"{path}: {ranked}")


def evaluate(model: Model, as_json: bool) -> None:
    with open(HELDOUT, "rb") as f:
        records = f.read()
    count = len(records) // (SIDE * SIDE + 1)
    pixels = [v / 16.0 for i in range(count) for v in records[i * 65 : i * 65 + 64]]
    labels = [records[i * 65 + 64] for i in range(count)]
    batch = Tensor(pixels, shape=(count, 1, SIDE, SIDE), dtype="f32")
    predicted = model.run({"image": batch}, outputs=["probs"])["probs"].argmax(axis=-1)
    correct = sum(p == t for p, t in zip(predicted, labels, strict=True))
    if as_json:
        print(json.dumps({"count": count, "correct": correct, "predictions": predicted}))
    else:
        print(f"held-out accuracy: {correct}/{count} = {100.0 * correct / count:.2f}%")


def main(args: list[str]) -> int:
    as_json = "--json" in args
    args = [a for a in args if a != "--json"]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if args else 2
    # Bad files and models raise (OSError, ImageError, WasiNNError): run_command
    # turns them into one line on stderr and exit status 1.
    with Model.load(MODEL) as model:
        if args == ["--eval"]:
            evaluate(model, as_json)
        else:
            classify(model, args, as_json)
    return 0


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="digits")
