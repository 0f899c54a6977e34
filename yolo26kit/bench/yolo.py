"""Build YOLO26 detection models offline from ultralytics' bundled yaml, with seeded random weights."""

from __future__ import annotations

import os
from typing import Any

import torch

from ..paths import process_temp_dir

SCALES = ("n", "s", "m", "l", "x")


def offline_ultralytics() -> None:
    """Point ultralytics at a private config dir and turn its network features off (before its import)."""
    if not os.environ.get("YOLO_CONFIG_DIR"):
        os.environ["YOLO_CONFIG_DIR"] = process_temp_dir("yolo26kit-ultralytics-")
    os.environ["YOLO_OFFLINE"] = "1"
    os.environ["YOLO_AUTOINSTALL"] = "0"
    os.environ.setdefault("YOLO_VERBOSE", "False")


def scale_of(model: str) -> str:
    """`yolo26n` or `n` → `n`; anything else raises ValueError."""
    scale = model.removeprefix("yolo26")
    if scale not in SCALES:
        raise ValueError(f"unknown YOLO26 model {model!r}; choose one of {[f'yolo26{s}' for s in SCALES]}")
    return scale


CALIBRATION_SIZE = 320
SCORE_LOGIT_STD = 0.5  # spread of the class logits after calibration: top-k scores ≈ 0.88–0.98, few ties


def _calibrate(net: torch.nn.Module, gen: torch.Generator) -> None:
    """Give random weights realistic activations: BN statistics from one random batch, class logits of std 0.5.

    Untrained YOLO26 with ultralytics' initialisation scores every anchor the same (the class bias prior
    dominates), which makes top-k a tie-break and comparisons between back-ends meaningless.
    """
    bns = [m for m in net.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average: one batch sets the statistics
    batch = torch.rand(2, 3, CALIBRATION_SIZE, CALIBRATION_SIZE, generator=gen)
    net.train()
    with torch.no_grad():
        net(batch)
    net.eval()
    head = net.model[-1]
    cls_convs = [seq[-1] for seq in getattr(head, "one2one_cv3", head.cv3)]
    stds: list[float] = []
    hooks = [conv.register_forward_hook(lambda _m, _i, out: stds.append(out.std().item())) for conv in cls_convs]
    with torch.no_grad():
        net(batch)
    for hook in hooks:
        hook.remove()
    for conv, std in zip(cls_convs, stds):
        conv.weight.data *= SCORE_LOGIT_STD / max(std, 1e-12)
        conv.bias.data.zero_()


def build(model: str = "yolo26n", nc: int = 80, seed: int = 0, end2end: bool = True) -> torch.nn.Module:
    """A fused, eval-mode YOLO26 DetectionModel with seeded random (calibrated) weights, in export mode.

    With `end2end` the head runs its NMS-free postprocess (top-k) and returns [B, max_det, 6].
    """
    offline_ultralytics()
    from ultralytics.nn.tasks import DetectionModel

    scale = scale_of(model)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = DetectionModel(f"yolo26{scale}.yaml", nc=nc, verbose=False)
    _calibrate(net, torch.Generator().manual_seed(seed))
    head = net.model[-1]
    head.end2end = end2end
    net = net.fuse()
    for module in net.modules():
        if hasattr(module, "export"):
            module.export = True
    return net.requires_grad_(False)


STRIDES = (8, 16, 32)  # YOLO26's detection strides


def anchors(imgsz: int) -> int:
    """Anchor count of a YOLO26 head at a square input size (one per cell at each stride)."""
    return sum((imgsz // s) ** 2 for s in STRIDES)


def detect_head(net: torch.nn.Module) -> Any:
    """The model's Detect head (its last layer)."""
    return net.model[-1]


def example_input(batch: int = 1, imgsz: int = 640, seed: int = 0, device: str = "cpu") -> torch.Tensor:
    """A seeded random image batch in [0, 1], shape [batch, 3, imgsz, imgsz]."""
    gen = torch.Generator().manual_seed(seed)
    return torch.rand(batch, 3, imgsz, imgsz, generator=gen).to(device)
