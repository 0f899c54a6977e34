"""The conclusion of deployment_paths: what a run found, in 2–4 sentences and a headline figure (see yolo26kit/conclusion.py).

Imported without torch (the pages render without it): only the kit's conclusion helpers.
"""

from __future__ import annotations

from typing import Any

from ...conclusion import PLAIN, UNDECIDED, View, num, numbers, plain, span

# The device class the bug needs when a ledger entry names no conditions.device ("any": every device shows it).
DEVICE = "cuda"


def _seed_model_pair(pairs: Any) -> dict[str, Any] | None:
    """xnnpack_vs_eager's pair for the seed's yolo26n (else the first) with its per-round ratios, None without."""
    usable = [p for p in pairs if isinstance(p, dict) and numbers(p.get("rounds"))] if isinstance(pairs, list) else []
    pair = next((p for p in usable if p.get("model") == "yolo26n"), usable[0] if usable else None)
    return {"model": pair.get("model"), "rounds": numbers(pair.get("rounds"))} if pair else None


# deployment_paths.cuda_aoti_backbone_only's data "kind" → what the back-end did with the whole model
_ET_CUDA_WHOLE_MODEL = {"failed": "fails to lower the whole YOLO26", "ran_differs": "runs the whole YOLO26 but "
                        "not with eager's output", "not_run": "lowers the whole YOLO26 (it was not run here)",
                        "ran_ok": "lowers and runs the whole YOLO26, matching eager"}


# its data "backbone" (executorch_cuda_releases.backbone_half's state) → what the back-end did with the backbone alone
_BACKBONE_ALONE = {"lowers": "; the backbone alone lowers", "refused": "; the backbone alone does not lower either",
                   "release": "; the backbone alone fails on this executorch release only (a later release's view "
                              "pass maps the split_copy it is refused for)"}


def conclude(r: View) -> tuple[dict[str, str], dict[str, str] | None]:
    """Sentences by question and the headline figure of one deployment_paths run."""
    out: dict[str, str] = {}
    v = r.v("deployment_paths.cuda_aoti_backbone_only")
    kind = r.data("deployment_paths.cuda_aoti_backbone_only", "kind")
    if v not in UNDECIDED and kind in _ET_CUDA_WHOLE_MODEL:
        backbone = _BACKBONE_ALONE.get(r.data("deployment_paths.cuda_aoti_backbone_only", "backbone"), "")
        out["bites"] = (f"ExecuTorch's CUDA back-end with its default options {_ET_CUDA_WHOLE_MODEL[kind]}{backbone} "
                        f"(the seed's backbone-only limit {PLAIN.get(v, v)}).")
    elif v:
        out["bites"] = plain(r, "deployment_paths.cuda_aoti_backbone_only",
                             "CUDA AOT Inductor runs only the backbone")
    fixes = []
    correct, tried = (r.data("deployment_paths.xnnpack_all_variants", k) for k in ("correct", "tried"))
    variants = (correct, tried) if isinstance(correct, int) and isinstance(tried, int) else None
    if variants and r.v("deployment_paths.xnnpack_all_variants") not in UNDECIDED:
        fixes.append(f"XNNPACK lowered, ran and matched eager on {variants[0]} of {variants[1]} variants tried")
    working = r.data("deployment_paths.torch_compile_alternative", "working")
    modes = (working, 2) if isinstance(working, int) else None
    if modes and r.v("deployment_paths.torch_compile_alternative") not in UNDECIDED:
        fixes.append(f"torch.compile ran the whole model correctly in {modes[0]} of {modes[1]} modes")
    if fixes:
        out["fix"] = "; ".join(fixes) + "."
    figure = None
    pair = _seed_model_pair(r.data("deployment_paths.xnnpack_vs_eager", "pairs"))
    v = r.v("deployment_paths.xnnpack_vs_eager")
    if pair and v not in UNDECIDED:
        out["cost"] = (f"On this machine's CPU {pair['model']} on XNNPACK takes {span(pair['rounds'], '×')} eager "
                       f"PyTorch's time, round by round (the seed's XNNPACK-beats-eager claim {PLAIN[v]}).")
    fastest = [row for row in r.table("fastest") if row.get("median_ms") is not None]
    fastest.sort(key=lambda row: (str(row.get("device")) != r.device, str(row.get("model"))))
    if fastest:
        row = fastest[0]
        figure = {"value": f"{num(row.get('median_ms'))} ms",
                  "label": f"fastest correct path for {row.get('model')} on {row.get('device')}: "
                           f"{row.get('fastest correct')}", "claim": "deployment_paths.gpu_latency"}
    return out, figure


__all__ = ["DEVICE", "conclude"]
