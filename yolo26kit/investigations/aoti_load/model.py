"""Loading AOT Inductor packages: the small modules compiled into packages, and their example inputs."""

from __future__ import annotations

import torch


MODELS = ("two_ops", "conv")


class TwoOps(torch.nn.Module):
    """The smallest package worth loading: relu(x @ x.T) + 1."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ x.T) + 1


class SmallConv(torch.nn.Module):
    """A conv-BN-SiLU block, the building block of YOLO26."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.silu(self.bn(self.conv(x)))


def example(model: str, device: str, seed: int = 0) -> tuple[torch.nn.Module, torch.Tensor]:
    """The module (eval, seeded) and its example input on `device`."""
    torch.manual_seed(seed)
    if model == "two_ops":
        return TwoOps().to(device).eval(), torch.randn(64, 64, device=device)
    return SmallConv().to(device).eval(), torch.randn(1, 3, 64, 64, device=device)
