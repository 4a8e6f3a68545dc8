"""Train the digits CNN and write everything the app ships with.

Not part of the build: the outputs are committed. To re-train::

    python3 -m venv /tmp/train && /tmp/train/bin/pip install -r apps/digits/train-requirements.txt
    /tmp/train/bin/python apps/digits/train.py

Writes, beside this file:
- model/digits.xml + model/digits.bin: OpenVINO IR, input ``image`` f32[?,1,8,8]
  (pixels scaled to 0..1), outputs ``logits`` and ``probs`` f32[?,10];
- data/heldout.u8: the held-out split, one 65-byte record per image (64 pixels
  0..16 row by row, then the label);
- samples/digitL_NNN.png: one 8x8 grayscale PNG per digit from the held-out
  split (L is the true label, NNN the record's index in heldout.u8).
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import openvino as ov
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn

HERE = Path(__file__).resolve().parent
SEED = 0


class DigitsCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(32 * 4 * 4, 64),
            nn.ReLU(),
            nn.Linear(64, 10),
        )

    def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.features(image)
        return logits, torch.softmax(logits, dim=1)


def png_gray8(pixels: np.ndarray) -> bytes:
    """An 8-bit grayscale PNG of a 2-D uint8 array (filter 0 on every row)."""
    height, width = pixels.shape

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + body))
        return struct.pack(">I", len(body)) + kind + body + crc

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = b"".join(b"\x00" + bytes(row) for row in pixels.astype(np.uint8))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


def main() -> None:
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    x, y = load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=0.2, random_state=SEED, stratify=y
    )

    def to_input(a: np.ndarray) -> torch.Tensor:
        return torch.tensor(a / 16.0, dtype=torch.float32).reshape(-1, 1, 8, 8)

    xt, yt = to_input(x_train), torch.tensor(y_train)
    model = DigitsCNN()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    gen = torch.Generator().manual_seed(SEED)
    for _epoch in range(30):
        model.train()
        order = torch.randperm(len(xt), generator=gen)
        for start in range(0, len(xt), 64):
            idx = order[start : start + 64]
            logits, _ = model(xt[idx])
            loss = nn.functional.cross_entropy(logits, yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        _, probs = model(to_input(x_test))
    acc = float((probs.argmax(1).numpy() == y_test).mean())
    print(f"torch held-out accuracy: {acc:.4f} on {len(y_test)} images")

    ov_model = ov.convert_model(
        model, example_input=torch.zeros(1, 1, 8, 8), input=[ov.PartialShape([-1, 1, 8, 8])]
    )
    ov_model.inputs[0].get_tensor().set_names({"image"})
    ov_model.outputs[0].get_tensor().set_names({"logits"})
    ov_model.outputs[1].get_tensor().set_names({"probs"})
    (HERE / "model").mkdir(exist_ok=True)
    ov.save_model(ov_model, HERE / "model" / "digits.xml", compress_to_fp16=False)

    (HERE / "data").mkdir(exist_ok=True)
    records = np.concatenate([x_test.astype(np.uint8), y_test.astype(np.uint8)[:, None]], axis=1)
    (HERE / "data" / "heldout.u8").write_bytes(records.tobytes())

    samples = HERE / "samples"
    samples.mkdir(exist_ok=True)
    for old in samples.glob("*.png"):
        old.unlink()
    for label in range(10):
        index = int(np.flatnonzero(y_test == label)[0])
        pixels = np.rint(x_test[index].reshape(8, 8) * 255.0 / 16.0)
        (samples / f"digit{label}_{index:03d}.png").write_bytes(png_gray8(pixels))
    print(f"wrote {HERE / 'model'}, {HERE / 'data'}, {samples}")


if __name__ == "__main__":
    main()
