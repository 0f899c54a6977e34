"""Comparing detections with eager: YOLO26's end-to-end output [B, k, 6] (box, score, class) against a reference.

Order-insensitive, so back-ends that break near-ties at the top-k cut differently still match; any other output
(raw head outputs, one operator) is compared element by element.
"""

from __future__ import annotations

from typing import Any

import torch


def compare(output: torch.Tensor | None, reference: torch.Tensor | None) -> dict[str, Any]:
    """How far an output [B, k, 6] is from eager: max |Δ| raw, max |Δ| of the sorted scores, and the match rate.

    The match rate is the fraction of eager detections found in the output with the same class, a box within
    1 px and a score within 1e-3: robust to back-ends that break near-ties at the top-k cut differently.
    """
    if output is None or reference is None:
        return {"max_abs": None, "score_max_abs": None, "match_rate": None, "exact": None}
    out, ref = output.float().cpu(), reference.float().cpu()
    if out.shape != ref.shape:
        return {"max_abs": None, "score_max_abs": None, "match_rate": 0.0, "exact": False, "shape": list(out.shape)}
    if out.ndim != 3 or out.shape[-1] != 6:  # not detections (backbone or one operator): plain closeness
        max_abs = (out - ref).abs().max().item() if out.numel() else 0.0
        return {"max_abs": max_abs, "score_max_abs": None, "match_rate": None, "exact": torch.equal(out, ref),
                "close": max_abs <= 1e-2 * max(1.0, ref.abs().max().item() if ref.numel() else 0.0)}
    scores = lambda t: t[..., 4].sort(dim=-1, descending=True).values  # noqa: E731
    close = ((out[:, None, :, :4] - ref[:, :, None, :4]).abs().amax(-1) <= 1.0) \
        & ((out[:, None, :, 4] - ref[:, :, None, 4]).abs() <= 1e-3) & (out[:, None, :, 5] == ref[:, :, None, 5])
    return {"max_abs": (out - ref).abs().max().item(), "score_max_abs": (scores(out) - scores(ref)).abs().max().item(),
            "match_rate": close.any(-1).float().mean().item(), "exact": torch.equal(out, ref)}


MIN_MATCH_RATE = 0.95  # a few swaps at the k-th place are floating-point noise, not a different model


def agrees(delta: dict[str, Any]) -> bool:
    """Same detections as eager: bit-exact, or ≥95 % matched with sorted scores within 1e-3."""
    if delta.get("exact") or delta.get("close"):
        return True
    return (delta.get("match_rate") or 0.0) >= MIN_MATCH_RATE and (delta.get("score_max_abs") or 0.0) <= 1e-3
