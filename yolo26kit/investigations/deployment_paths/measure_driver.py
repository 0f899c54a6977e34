"""Deployment paths: the notebook's driver — plan every case for the device, run them isolated, and run the
untimed side steps (dynamic ONNX, the variants' module types, the backbone's parts) beside them."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from ... import env
from ...bench import isolate, yolo
from . import measure
from .measure import (ONNX_DYNAMIC_SIZES, PRELOAD, Run, build_all, plan, run_all, side_by_side, step_onnx_dynamic,
                      step_variant_modules, task_rows)
from .measure_backbone import backbone_parts


def investigate(device: str, models: list[str], compile_models: list[str], imgsz: int, backends: list[str],
                tasks: list[str], cpu_models: list[str], cpu_compile_models: list[str], cpu_imgsz: int,
                cpu_backends: list[str], cpu_tasks: list[str], dtypes: list[str], task_models: list[str],
                task_imgsz: int, step_timeout: float, min_run_time: float = 0.5, onnx_dynamic: bool = True,
                seed: int = 0, workers: int = 0, ultralytics_export: bool = True,
                et_cuda_models: list[str] | tuple = ()) -> Run:
    """Plan every case for this device (a CPU run takes the cpu_* parameters) and run them isolated."""
    yolo.offline_ultralytics()
    isolate.preload(*PRELOAD)
    on_cuda = device.startswith("cuda")
    if not on_cuda:
        models, compile_models, imgsz, backends, tasks = cpu_models, cpu_compile_models, cpu_imgsz, cpu_backends, cpu_tasks
    workers = workers or max(1, min(6, (os.cpu_count() or 2) // 2))
    workdir = isolate.work_dir("deployment")
    cases = plan(models, compile_models, imgsz, device, backends, dtypes, tasks, task_models, task_imgsz, seed,
                 workdir, min_run_time, ultralytics_export)
    want_dynamic = onnx_dynamic and "onnxruntime" in backends and bool(models) and measure.installed("onnxruntime") \
        and measure.installed("onnxscript")
    dynamic_step = lambda: isolate.run_step(step_onnx_dynamic, models[0], ONNX_DYNAMIC_SIZES, seed,  # noqa: E731
                                            timeout=step_timeout, step="onnxruntime dynamic H/W", phase="compile")
    parts: dict[str, isolate.Outcome] = {}
    modules_step = lambda: isolate.run_step(step_variant_modules, timeout=step_timeout,  # noqa: E731
                                            step="module types of the 25 variants")
    if on_cuda:  # the untimed dynamic-shape check, the variants' module types and the backbone's parts beside the cases
        with ThreadPoolExecutor(max_workers=3) as side:
            dynamic = side.submit(dynamic_step) if want_dynamic else None
            modules = side.submit(modules_step)
            backbone = side.submit(backbone_parts, models[0], imgsz, step_timeout, workdir, models[0] in et_cuda_models) \
                if "et_cuda" in backends and models else None
            rows = run_all(cases, step_timeout, compile_models, workers, et_cuda_models)
            dynamic_outcome = dynamic.result() if dynamic else None
            parts = backbone.result() if backbone else {}
            modules_outcome = modules.result()
    else:  # a busy process beside a timed run would slow it: every build first, one per core, then the runs alone
        built, extra = build_all(cases, step_timeout, compile_models, et_cuda_models, os.cpu_count() or 1,
                                 modules_step, *([dynamic_step] if want_dynamic else []))
        modules_outcome, dynamic_outcome = extra[0], (extra[1] if len(extra) > 1 else None)
        rows = run_all(cases, step_timeout, compile_models, 1, et_cuda_models, built)
    return Run(device, rows, task_rows(rows, task_models, task_imgsz, tasks), dynamic_outcome, list(models), imgsz,
               side_by_side(rows, step_timeout), env.fingerprint()["device"] if on_cuda else "", parts,
               modules_outcome)
