"""Dynamic shapes: the model under test is the live YOLO26 prepared per spec (yolo26kit.live, yolo26kit.dynamic_export);
here, which preparations leave it as ultralytics ships it, letterboxing to the stride, and the errors it raises
with their causes."""

from __future__ import annotations

import re

import torch

from ...bench.dynamic_export import STRIDE, Spec

LETTERBOX_VALUE = 114 / 255  # ultralytics' grey padding


# ------------------------------------------------------------------------------------------ letterbox


def letterbox(x: torch.Tensor, stride: int = STRIDE, value: float = LETTERBOX_VALUE) -> torch.Tensor:
    """Pad an NCHW batch at the bottom and right up to the next multiple of `stride` (boxes keep their coordinates)."""
    h, w = x.shape[-2:]
    pad_h, pad_w = (-h) % stride, (-w) % stride
    if not pad_h and not pad_w:
        return x
    return torch.nn.functional.pad(x, (0, pad_w, 0, pad_h), value=value)


# Model preparations that leave YOLO26's code as ultralytics ships it ("stock"); the others change the head
# (dynamic_ready and its parts: "kit-modified"). Every dynamic claim records which one its verdict rests on.
STOCK_PREPS = ("fresh", "warm")


def model_variant(spec: Spec) -> str:
    """`stock` (YOLO26 as ultralytics builds it) or `kit-modified` (the kit's head changes, dynamic_ready)."""
    return "stock" if spec.prep in STOCK_PREPS else "kit-modified"


# -------------------------------------------------------------------------------------- known errors

# Known errors, their cause in the model or toolchain, and the fix; matched by regex on the message.
CAUSES: list[tuple[str, str, str]] = [
    (r"satisfy the generated guard .*// 16", "stride-2 convs round up; the neck concatenates an upsampled P5 with P4 "
     "(and P4 with P3), equal only when H, W are 32k-7 .. 32k", "derived dims 32*Dim (torch's own suggestion)"),
    (r"specialized it to be a constant \(1\)", "0/1 specialization: an example batch of 1 is traced as a constant",
     "export with an example batch >= 2"),
    (r"sym_min", "Detect.get_topk_index: k = min(max_det, anchors) exports as torch.sym_min, which ExecuTorch's edge "
     "verifier rejects", "static k (dynamic_ready) or EdgeCompileConfig(_check_ir_validity=False)"),
    (r"only supports 1 dynamic dimension", "make_anchors stacks (h, w) grids: an unsqueeze(-1) with two dynamic dims, "
     "which XNNPACK's reshape cannot take", "flat anchors (dynamic_ready)"),
    (r"== 1344|==\s*\d+$|must match the size of tensor b", "Detect caches anchors per shape (self.shape); after an eager "
     "call at the example size export reuses the cached tensor, baking that size's anchors in", "head.dynamic = True"),
    (r"Sizes of tensors must match except in dimension 1|// 16\)? == \(?2 \+ 2|// 8\)? == \(?4 \+ 4",
     "size not 32k-7 .. 32k: the neck concat gets maps of different sizes", "letterbox to a multiple of 32"),
    (r"Propagating input shapes failed", "XNNPACK cannot reshape the graph for this size (not a multiple of 32)",
     "letterbox to a multiple of 32"),
    (r"bounded tensor|maximum capacity", "larger than the program's upper bound (memory is planned for max)",
     "export with a larger max_size"),
    (r"to be of the form", "not a multiple of 32: the derived dim 32*s only admits multiples", "letterbox to a multiple of 32"),
    (r"to be <=|to be >=|<= \d+$|>= \d+$|out of range|not in range", "outside the exported range", "stay in range"),
]


def explain(error: str) -> tuple[str, str]:
    """(cause, fix) for a known error message; empty strings when unknown."""
    for pattern, cause, fix in CAUSES:
        if error and re.search(pattern, error, flags=re.S):
            return cause, fix
    return "", ""
