"""Model check (kit): your model, not only YOLO26 — every deployment path this machine has, and the kit's known
hazards found in the model's own code.

The model is a spec (model.py): `ultralytics:<yaml>` (any model yaml ultralytics ships, built offline with seeded
weights), `torchvision:<name>` (no weights) or `<module>:<factory>` returning (model, example_inputs).

Paths: every back-end of the registry that takes an nn.Module (measure.PATHS: eager, torch.compile, CUDA graphs,
AOT Inductor, ExecuTorch XNNPACK and CUDA, ONNX Runtime, Torch-TensorRT), each a chain of isolated steps: build
(export + lower, or the cold compile), then load, first call, timing and outputs; each compared with eager on its
device. A path this machine lacks (a module, CUDA) is a `skipped` row with the reason.
Dynamic shapes (measure_dynamic.py): the plain dynamic export a user writes first, the kit's 32*Dim recipe where it
fails, and the sizes at which the exported program answers as eager.
Hazards (hazards.py, one detector per root cause the kit established; known.py: releases and workarounds): each hit
names the file and line of the model's code.
Stages: model, measure (+ measure_dynamic, hazards), judge (JUDGES), show (TABLES), conclude.
"""

from __future__ import annotations

from typing import Any

from ... import catalog
from .judge import JUDGES, judge
from .measure import NAME, PATHS, PRELOAD, investigate
from .model import check_spec
from .show import (TABLES, answers_frame, dynamic_export_frame, dynamic_sizes_frame, hazard_notes, hazards_frame,
                   paths_frame, record_tables)

__all__ = ["JUDGES", "TABLES", "answers_frame", "dynamic_export_frame", "dynamic_sizes_frame", "hazard_notes",
           "hazards_frame", "investigate", "judge", "paths_frame", "record_tables"]


def _sizes_check(value: Any) -> str | None:
    if not value or not all(isinstance(v, int) and v > 0 and v % 32 == 0 for v in value):
        return "give positive multiples of 32 (the kit's recipe exports height and width as 32*Dim)"
    return None


catalog.register(catalog.Investigation(
    name=NAME,
    title="Model check: every deployment path and the kit's known hazards, on any model",
    seeds=("kit",),
    profiles={
        # quick (the notebook's defaults): torchvision's resnet18 at 64 px, so that `run --all` stays cheap: ~70
        # graph nodes, fewer distinct kernels than mobilenet_v3_small's ~160, so every build is shorter (a cold run
        # of every CPU path measured 80 s on 2 busy cores, mobilenet_v3_small 120 s); ExecuTorch CUDA without
        # max-autotune.
        "quick": {},
        # full: the back-ends' defaults (ExecuTorch CUDA's max-autotune), 224 px, a wider dynamic range, longer timing
        "full": {"imgsz": 224, "dynamic_sizes": [128, 160, 224, 320], "max_batch": 4, "min_run_time": 0.5,
                 "autotune": True, "step_timeout": 1800.0},
    },
    checks={
        "model": check_spec,
        "imgsz": catalog.positive_multiple_of(32),
        "batch": lambda v: None if v >= 1 else "must be at least 1",
        "paths": catalog.one_of(*PATHS),
        "dynamic_sizes": _sizes_check,
        "max_batch": lambda v: None if v >= 2 else "must be at least 2 (a batch of 1 is traced as a constant)",
        "min_run_time": lambda v: None if v > 0 else "must be positive",
        "device": catalog.one_of("auto", "cpu", "cuda"),
        "workers": lambda v: None if v >= 0 else "must be 0 (one per core) or more",
    },
    judges=JUDGES,
    preload=PRELOAD,
))
