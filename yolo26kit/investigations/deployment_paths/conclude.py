"""The conclusion of deployment_paths: what a run found, in 2–4 sentences and a headline figure (see yolo26kit/conclusion.py).

Imported without torch (the pages render without it): only the kit's conclusion helpers.
"""

from __future__ import annotations

from ...conclusion import PLAIN, UNDECIDED, View, plain

NAME = "YOLO26 deployment paths"  # its name for people: pages head it with this, the id small beside
# The device class the bug needs when a ledger entry names no conditions.device ("any": every device shows it).
DEVICE = "cuda"

# deployment_paths.cuda_aoti_backbone_only's data "kind" → what the back-end did with the whole model
_ET_CUDA_WHOLE_MODEL = {"failed": "fails to lower the whole YOLO26", "ran_differs": "runs the whole YOLO26 but "
                        "not with eager's output", "not_run": "lowers the whole YOLO26 (it was not run here)",
                        "ran_ok": "lowers and runs the whole YOLO26, matching eager"}


# its data "backbone" (executorch_cuda_releases.backbone_half's state) → what the back-end did with the backbone alone
_BACKBONE_ALONE = {"lowers": "; the backbone alone lowers", "refused": "; the backbone alone does not lower either",
                   "release": "; the backbone alone fails on this executorch release only (a later release's view "
                              "pass maps the split_copy it is refused for)"}
# the cost claims, the one measured on the run's GPU first: a CUDA run's headline is a CUDA figure
COSTS = ("deployment_paths.gpu_latency", "deployment_paths.xnnpack_vs_eager")


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
    for cid, what in (("deployment_paths.xnnpack_all_variants", "XNNPACK"),
                      ("deployment_paths.torch_compile_alternative", "torch.compile on CUDA")):
        quoted = r.quote(cid)
        if quoted and r.v(cid) not in UNDECIDED:
            fixes.append(f"{what}: {quoted}")
    if fixes:
        out["fix"] = "; ".join(fixes) + "."
    v = r.v("deployment_paths.xnnpack_vs_eager")
    ratio = r.fig("deployment_paths.xnnpack_vs_eager")
    if ratio is not None and v and v not in UNDECIDED:
        out["cost"] = (f"On this machine's CPU, {ratio.measures}: {r.quote('deployment_paths.xnnpack_vs_eager')} "
                       f"(the seed's XNNPACK-beats-eager claim {PLAIN[v]}).")
    figure = next(({"claim": cid} for cid in COSTS if r.fig(cid) is not None and r.v(cid) not in UNDECIDED), None)
    return out, figure


__all__ = ["DEVICE", "NAME", "conclude"]
