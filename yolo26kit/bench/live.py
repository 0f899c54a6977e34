"""The "live" YOLO26: yolo.build's model with every conv weight re-drawn He-normal, and its seeded example image.

yolo.build calibrates its random weights at one size; the live model's top-k scores spread at any input size, so
back-ends and dynamic-shape programs are compared on distinct detections, not on how they break ties.
"""

from __future__ import annotations

import copy
import functools
import math

import torch

from . import yolo


def liven(net: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Re-draw every conv weight He-normal (seeded), biases N(0, 0.1): scores spread ~0.55-0.75 at any size.

    yolo.build's calibration is tuned at 320 px; at other sizes its top-k scores saturate at 1.0 (e.g. hundreds
    of exact ties at 640), and a top-k among ties makes "max |Δ| vs eager" depend on tie-breaking, not on
    the program. Here the near-ties are a handful, which the order-insensitive comparison absorbs.
    """
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in net.modules():
            if isinstance(module, torch.nn.Conv2d):
                fan_in = module.weight[0].numel()
                module.weight.copy_(torch.randn(module.weight.shape, generator=gen) * math.sqrt(2.0 / fan_in))
                if module.bias is not None:
                    module.bias.copy_(torch.randn(module.bias.shape, generator=gen) * 0.1)
    return net


@functools.lru_cache(maxsize=4)
def _template(model: str, seed: int) -> torch.nn.Module:
    return liven(yolo.build(model, seed=seed), seed)


def build_model(model: str = "yolo26n", seed: int = 0, device: str = "cpu") -> torch.nn.Module:
    """A fresh end-to-end YOLO26 (yolo.build, then liven), never run: a copy of a cached build."""
    return copy.deepcopy(_template(model, seed)).to(device)


def image(batch: int, height: int, width: int, seed: int = 1, device: str = "cpu") -> torch.Tensor:
    """A seeded random image batch in [0, 1] of shape [batch, 3, height, width]."""
    gen = torch.Generator().manual_seed(seed)
    return torch.rand(batch, 3, height, width, generator=gen).to(device)
