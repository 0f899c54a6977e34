"""Models for model_check's tests, named by `model_check_models:<factory>` (tests/ on PYTHONPATH): one with every
pattern model_check's hazard detectors look for, each on its own line marked `# hazard: <id>`, and one with none."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Hazards(nn.Module):
    """Every hazard pattern once: the tests find each detector's hit at the line its marker names."""

    def __init__(self) -> None:
        super().__init__()
        self.down = nn.Conv2d(4, 4, 3, stride=2, padding=1)
        self.shape: tuple[int, ...] | None = None

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if self.shape != x.shape:
            self.grid = torch.arange(x.shape[-1]).float()  # hazard: shape_cache_state
            self.shape = x.shape
        up = F.interpolate(self.down(x), scale_factor=2.0)
        z = torch.cat([x, up], 1)  # hazard: pinned_dim
        a, b = z.chunk(2, 1)  # hazard: split_view_copy
        s = z.mean((2, 3))
        idx = s.topk(4, dim=1).indices
        g = s.gather(1, idx // 2)  # hazard: floor_div_index
        h = s[torch.arange(s.shape[0])[:, None], idx % 2]  # hazard: computed_index
        k = min(100, x.shape[2])  # hazard: sym_min_size
        top = x.flatten(1).topk(k).values
        scale = x.mean().item()  # hazard: item_sync
        m = a.clone()
        m[m.sum(-1) > 0] = 0.0  # hazard: mask_index_put
        return g, h, top * scale, m + b + self.grid


class Clean(nn.Module):
    """Convolutions, a pooled head: nothing model_check knows to bite."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, stride=2, padding=1),
                                  nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def hazards(imgsz: int = 64, batch: int = 1) -> tuple[nn.Module, tuple[torch.Tensor]]:
    """The model with every hazard and its example input."""
    return Hazards(), (torch.rand(batch, 4, imgsz, imgsz),)


def clean(imgsz: int = 64, batch: int = 1) -> tuple[nn.Module, tuple[torch.Tensor]]:
    """The model with none and its example input."""
    return Clean(), (torch.rand(batch, 3, imgsz, imgsz),)


class PinnedBatch(nn.Module):
    """A reshape that fixes the batch: a dynamic batch is specialised to the example's."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(2, -1).sum(1)  # pins: batch


def pinned_batch(imgsz: int = 64, batch: int = 1) -> tuple[nn.Module, tuple[torch.Tensor]]:
    """The model whose code pins the batch, and its example input."""
    return PinnedBatch(), (torch.rand(batch, 3, imgsz, imgsz),)
