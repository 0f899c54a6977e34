"""Deployment paths: the backbone half of seed 001's table — the static backbone and YOLO26's `chunk` alone through
ExecuTorch CUDA (backends.executorch_cuda_releases: the programs and the rule index_dtype reads too)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...bench import isolate
from ...backends import executorch_cuda
from ...backends import executorch_cuda_releases as releases


def _lower(program: Any, workdir: str, stem: str) -> dict[str, Any]:
    """ExecuTorch CUDA lowering with the back-end's defaults in its own folder (concurrent lowerings write .ptd)."""
    return executorch_cuda.lower(program, Path(workdir) / stem, stem, overrides=executorch_cuda.kit_overrides())


def step_chunk_lower(imgsz: int, workdir: str) -> dict[str, Any]:
    """`chunk` alone (as YOLO26's C3k2 blocks call it) through ExecuTorch CUDA with its defaults."""
    return _lower(releases.chunk_program(imgsz, "cuda"), workdir, "op_split.cuda")


def step_backbone_lower(model: str, imgsz: int, workdir: str) -> dict[str, Any]:
    """The static backbone through ExecuTorch CUDA with its defaults (minutes of autotuning)."""
    return _lower(releases.backbone_program(model, imgsz, "cuda"), workdir, "backbone-upstream.cuda")


def backbone_parts(model: str, imgsz: int, timeout: float, workdir: str,
                   lower: bool = False) -> dict[str, isolate.Outcome]:
    """The backbone half of seed 001's table (the back-end's probes, as index_dtype measures them): the static
    backbone's graph through the installed view pass and YOLO26's `chunk` alone through ExecuTorch CUDA with its defaults (seconds), and with `lower` the
    backbone's own lowering with those defaults (minutes of autotuning: where the whole model is lowered too)."""
    graph = isolate.run_step(releases.backbone_view_copies, model, imgsz, "upstream", timeout=timeout,
                             step="backbone graph through the view pass")
    split = isolate.run_step(step_chunk_lower, imgsz, workdir, timeout=timeout,
                             step="op_split:et_cuda:lower", phase="compile")
    parts = {"graph": graph, "split": split}
    if lower:
        parts["lowering"] = isolate.run_step(step_backbone_lower, model, imgsz, workdir, timeout=timeout,
                                             step=f"backbone-{model}:et_cuda:lower", phase="compile")
    return parts
