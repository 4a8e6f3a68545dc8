"""The small PyTorch module tests/test_convert.py converts and checks against torch.

Build time only (prepare.py and the test import it; the component does not).
Two named inputs, a dict of two outputs, and layers that OpenVINO's PyTorch
reader handles separately (convolution, batch norm with non-trivial running
statistics, pooling, a linear layer, softmax).
"""

from __future__ import annotations

import torch
from torch import nn

IMAGE_SHAPE = (2, 3, 16, 16)
CLASSES = 5


class TinyNet(nn.Module):  # type: ignore[misc]
    """``forward(image, offset)`` -> ``{"probs", "logits"}``.

    Example::

        net = tiny_net()
        net(torch.zeros(IMAGE_SHAPE), torch.zeros(CLASSES))["probs"].shape  # (2, 5)
    """

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.norm = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8 * 4 * 4, CLASSES)

    def forward(self, image: torch.Tensor, offset: torch.Tensor) -> dict[str, torch.Tensor]:
        x = torch.relu(self.norm(self.conv(image)))
        logits = self.fc(nn.functional.adaptive_avg_pool2d(x, 4).flatten(1)) + offset
        return {"probs": torch.softmax(logits, dim=-1), "logits": logits}


def tiny_net() -> TinyNet:
    """The module with fixed weights: the same in prepare.py and in the test."""
    generator = torch.Generator().manual_seed(13)
    net = TinyNet()
    net.eval()
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * 0.5)
        net.norm.running_mean.copy_(torch.randn(8, generator=generator) * 0.1)
        net.norm.running_var.copy_(torch.rand(8, generator=generator) + 0.5)
    return net


def example_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    """Fixed inputs of the right shapes (the export traces with them; the test feeds them)."""
    generator = torch.Generator().manual_seed(7)
    return torch.randn(IMAGE_SHAPE, generator=generator), torch.randn(CLASSES, generator=generator)
