"""Loading AOT Inductor packages: the isolated steps (compile; load, run and time) and the study over every package."""

from __future__ import annotations

import inspect
import platform
import shutil
import subprocess
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from ...bench import aoti_package as aoti, forensics, isolate, timing
from ...backends import aoti as aoti_backend
from .model import example


def compile_step(model: str, device: str, package: str, seed: int = 0) -> dict[str, Any]:
    """Child step: export and AOTI-compile one package (the kit's package cache applies)."""
    module, x = example(model, device, seed)
    with torch.no_grad():
        program = torch.export.export(module, (x,))
    path = aoti_backend.prepare(program, (x,), Path(package).parent, Path(package).stem)["artifact"]
    return {"package": path, "wrapper_libstdcxx_symbols": wrapper_libstdcxx_symbols(path)}


def load_run_step(model: str, device: str, package: str, seed: int = 0, min_run_time: float = 0.2) -> dict[str, Any]:
    """Child step: load the package, run it, compare with eager, time it."""
    module, x = example(model, device, seed)
    t0 = time.perf_counter()
    runner = aoti_backend.load_package(package)
    load_s = time.perf_counter() - t0
    with torch.no_grad():
        out, ref = runner(x), module(x)
        t = timing.measure(lambda: runner(x), f"{model}/{device}", device, warmup=3, min_run_time=min_run_time)
    return {"load_s": round(load_s, 3), "max_abs_diff": float((out - ref).abs().max()), "median_ms": t.median_ms,
            "iqr_ms": t.iqr_ms}


def wrapper_libstdcxx_symbols(package: str) -> int:
    """How many libstdc++ locale/regex symbols the package's wrapper .so files define (nm; 0 when unknown)."""
    total = 0
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(package) as z:
        for name in z.namelist():
            if name.endswith(".so"):
                total += len(forensics.defined_symbols(z.extract(name, tmp), forensics._LIBSTDCXX_DEFS))
    return total


def stack_facts() -> pd.DataFrame:
    """What decides the crash on this machine: compiler flags, the libstdc++ mapped, g++ and the debugger."""
    from torch._inductor import cpp_builder

    gxx = shutil.which("g++") or ""
    version = subprocess.run([gxx, "--version"], capture_output=True, text=True).stdout.splitlines()[0] if gxx else ""
    return pd.DataFrame([
        {"fact": "torch", "value": torch.__version__},
        {"fact": "Inductor links wrappers with -static-libstdc++", "value": "-static-libstdc++" in inspect.getsource(cpp_builder)},
        {"fact": "libstdc++ this process maps", "value": forensics.mapped_libstdcxx() or "(none)"},
        {"fact": "g++", "value": version or "(not found)"},
        {"fact": "debugger for native backtraces", "value": forensics.find_debugger() or "(none: gdb/cuda-gdb absent)"},
        {"fact": "platform", "value": platform.platform()},
    ])


def devices_of(device: str, cuda_packages: bool) -> list[str]:
    """cpu always (the crash was seen with CPU-only packages); cuda too when asked for and the run's device is CUDA."""
    return ["cpu", "cuda"] if cuda_packages and device == "cuda" else ["cpu"]


def study(models: list[str], device: str = "cpu", cuda_packages: bool = False, seed: int = 0,
          step_timeout: float = 600.0, min_run_time: float = 0.2) -> pd.DataFrame:
    """Compile every (model, device) package concurrently, then load and run each (as is; workaround if needed)."""
    work = Path(isolate.work_dir("aoti-load"))
    cases = [(m, d) for m in models for d in devices_of(device, cuda_packages)]
    with ThreadPoolExecutor(max_workers=len(cases) or 1) as pool:
        builds = list(pool.map(lambda c: isolate.run_step(compile_step, c[0], c[1], str(work / f"{c[0]}-{c[1]}.pt2"),
                                                          seed, timeout=step_timeout, step=f"aoti compile {c[0]}/{c[1]}",
                                                          phase="compile"), cases))
    rows = []
    for (model, dev), built in zip(cases, builds):
        base = {"model": model, "device": dev, "torch": torch.__version__}
        rows.append({**base, **built.row(), "aoti_load": "", **({"wrapper_libstdcxx_symbols":
                                                                  built.value["wrapper_libstdcxx_symbols"]} if built.ok else {})})
        if not built.ok:
            continue
        for o in aoti.run_step(load_run_step, model, dev, built.value["package"], seed, min_run_time,
                               timeout=step_timeout, step=f"aoti load+run {model}/{dev}"):
            rows.append({**base, **aoti.outcome_row(o), **(o.value or {}), "preloaded": o.details.get("preloaded", "")})
    shutil.rmtree(work, ignore_errors=True)
    return pd.DataFrame(rows)
