"""Deployment paths (seeds 000/001): which path runs the whole YOLO26, postprocess included, correctly here, and how fast.

Back-ends, each a chain of isolated steps (prepare: export / compile / lower; then load, run and time in one child):
  eager        PyTorch eager, fp32 (fp16 / bf16 too on CUDA);
  compile      torch.compile, default mode;       compile_cudagraphs  torch.compile(mode="reduce-overhead"), CUDA;
  aoti         AOT Inductor (aoti.compile_package, loaded through aoti.run_step: both load rows when one crashed);
  et_xnnpack   ExecuTorch XNNPACK (a CPU back-end, also on CUDA runs);
  et_cuda      ExecuTorch CUDA, CUDA: each row records its `backend_options`; only a lowering with the back-end's
               defaults, at the seed's 640 px, decides a claim (any other is `inconclusive`);
  onnxruntime  torch.onnx (dynamo) export run by ONNX Runtime: CPU EP, and the CUDA EP on CUDA runs when installed;
  tensorrt     Torch-TensorRT, CUDA, when installed.
ultralytics' own exporter (YOLO(...).export(format="executorch" | "onnx"), as shipped) makes extra rows beside the kit's
export (`export_path`), each compared with eager of the same model as the exporter leaves it.
A back-end that is not installed, or needs CUDA on a CPU run, is a `skipped` row with the reason, never an error.
Every output is compared with eager fp32 on the device the back-end runs on (detections.compare); a row is correct
when at least MATCH_RATE_MIN of eager's detections came out, whatever its precision.
Models are the kit's "live" YOLO26 (yolo26kit.live: He-normal weights): top-k scores spread at any input size, so
back-ends are compared on distinct detections, not on how they break ties.
"""

from __future__ import annotations

from typing import Any

from ... import catalog
from ...bench import yolo
from .judge import JUDGES, judge
from .measure import PRELOAD, BACKENDS, DTYPES, NAME, SEEDS, TASKS
from .measure_driver import investigate
from .show import (TABLES, dynamic_frame, fastest_frame, latency_frame, plot_latency, seed_frame, side_by_side_frame,
                   tasks_frame)

__all__ = ["JUDGES", "TABLES", "dynamic_frame", "fastest_frame", "investigate", "judge", "latency_frame",
           "plot_latency", "seed_frame", "side_by_side_frame", "tasks_frame"]


ALL_MODELS = [f"yolo26{s}" for s in yolo.SCALES]


def _models_check(value: Any) -> str | None:
    return catalog.one_of(*(f"yolo26{s}" for s in yolo.SCALES))(value)


catalog.register(catalog.Investigation(
    name=NAME,
    title="Deployment paths: which back-end runs the whole YOLO26 correctly here, and how fast",
    seeds=SEEDS,
    profiles={
        # quick (the notebook's defaults): CUDA yolo26n and yolo26s at 640 px with every back-end and the XNNPACK
        # check of every task; CPU yolo26n and yolo26s at 640 px (the seed's size) without torch.compile, the task
        # check on detect and segment; ultralytics' exporter for yolo26n (executorch, onnx) on both.
        "quick": {},
        "full": {"models": ALL_MODELS, "compile_models": ALL_MODELS, "cpu_models": ALL_MODELS,
                 "cpu_compile_models": ["yolo26n", "yolo26s"], "cpu_imgsz": 640, "cpu_backends": list(BACKENDS),
                 "cpu_tasks": list(TASKS), "task_models": ALL_MODELS, "et_cuda_models": ["yolo26n"], "min_run_time": 1.0, "step_timeout": 1500.0},
    },
    checks={
        "models": _models_check, "compile_models": _models_check, "cpu_models": _models_check,
        "cpu_compile_models": _models_check, "task_models": _models_check, "et_cuda_models": _models_check,
        "imgsz": catalog.positive_multiple_of(32), "cpu_imgsz": catalog.positive_multiple_of(32),
        "task_imgsz": catalog.positive_multiple_of(32),
        "backends": catalog.one_of(*BACKENDS), "cpu_backends": catalog.one_of(*BACKENDS),
        "cpu_tasks": catalog.one_of(*TASKS), "dtypes": catalog.one_of(*DTYPES), "tasks": catalog.one_of(*TASKS),
        "device": catalog.one_of("auto", "cpu", "cuda"),
        "workers": lambda v: None if v >= 0 else "must be 0 (automatic) or more",
    },
    judges=JUDGES,
    preload=PRELOAD,
))
