"""Deployment paths: the backbone half of seed 001's table, measured with index_dtype's steps (the same backbone
and `chunk` probe, so both notebooks read one lowering)."""

from __future__ import annotations

from dataclasses import replace

from ...bench import isolate
from ..index_dtype.measure import backbone_view_copies, step_et_cuda_lower
from ..index_dtype.model import Spec as IndexSpec


def backbone_parts(model: str, imgsz: int, timeout: float, workdir: str, lower: bool = False) -> dict[str, isolate.Outcome]:
    """The backbone half of seed 001's table (index_dtype's steps): the static backbone's graph through the installed
    view pass and YOLO26's `chunk` alone through ExecuTorch CUDA with its defaults (seconds), and with `lower` the
    backbone's own lowering with those defaults (minutes of autotuning: where the whole model is lowered too)."""
    spec = IndexSpec(variant="upstream", scope="backbone", model=model, imgsz=imgsz, device="cuda", workdir=workdir)
    graph = isolate.run_step(backbone_view_copies, spec, timeout=timeout,
                             step="backbone graph through the view pass")
    split = isolate.run_step(step_et_cuda_lower, replace(spec, scope="op_split"), timeout=timeout,
                             step="op_split:et_cuda:lower", phase="compile")
    parts = {"graph": graph, "split": split}
    if lower:
        parts["lowering"] = isolate.run_step(step_et_cuda_lower, spec, timeout=timeout,
                                             step=f"backbone-{model}:et_cuda:lower", phase="compile")
    return parts
