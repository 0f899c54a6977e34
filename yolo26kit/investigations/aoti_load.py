"""Does loading an AOT Inductor package crash on this stack, why, and does the workaround hold? (the kit's own claim)

Each package is compiled in an isolated child, then loaded and run through `aoti.run_step`: as it is, and
again with the system libstdc++ loaded globally first only when the as-is load crashed and the forensics
rule for the static-libstdc++ locale mix matched its native backtrace.
"""

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

from .. import aoti, catalog, forensics, isolate, timing
from ..verdicts import Judgement

MODELS = ("two_ops", "conv")
CLAIM = "aoti.load_crash_cause"
ATOL = 1e-4


class TwoOps(torch.nn.Module):
    """The smallest package worth loading: relu(x @ x.T) + 1."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ x.T) + 1


class SmallConv(torch.nn.Module):
    """A conv-BN-SiLU block, the building block of YOLO26."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.silu(self.bn(self.conv(x)))


def example(model: str, device: str, seed: int = 0) -> tuple[torch.nn.Module, torch.Tensor]:
    """The module (eval, seeded) and its example input on `device`."""
    torch.manual_seed(seed)
    if model == "two_ops":
        return TwoOps().to(device).eval(), torch.randn(64, 64, device=device)
    return SmallConv().to(device).eval(), torch.randn(1, 3, 64, 64, device=device)


def compile_step(model: str, device: str, package: str, seed: int = 0) -> dict[str, Any]:
    """Child step: export and AOTI-compile one package (the kit's package cache applies)."""
    module, x = example(model, device, seed)
    with torch.no_grad():
        program = torch.export.export(module, (x,))
    path = aoti.compile_package(program, package)
    return {"package": path, "wrapper_libstdcxx_symbols": wrapper_libstdcxx_symbols(path)}


def load_run_step(model: str, device: str, package: str, seed: int = 0, min_run_time: float = 0.2) -> dict[str, Any]:
    """Child step: load the package, run it, compare with eager, time it."""
    module, x = example(model, device, seed)
    t0 = time.perf_counter()
    runner = aoti.load(package)
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
    """cpu always (the crash was seen with CPU-only packages); cuda too when asked for and the run has a GPU."""
    want_cuda = cuda_packages and device in ("auto", "cuda")
    return ["cpu", "cuda"] if want_cuda and torch.cuda.is_available() else ["cpu"]


def study(models: list[str], device: str = "auto", cuda_packages: bool = False, seed: int = 0,
          step_timeout: float = 600.0, min_run_time: float = 0.2) -> pd.DataFrame:
    """Compile every (model, device) package concurrently, then load and run each (as is; workaround if needed)."""
    work = Path(tempfile.mkdtemp(prefix="yolo26kit-aoti-load-"))
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


def crash_evidence(rows: pd.DataFrame) -> pd.DataFrame:
    """The as-is load rows that crashed: cause, top native frames, where the whole trace is."""
    cols = [c for c in ("model", "device", "step", "signal", "cause", "frames", "native", "trace_file") if c in rows]
    if "status" not in rows:
        return pd.DataFrame(columns=cols)
    return rows[(rows.status == "crash")][cols].reset_index(drop=True)


def _present(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip()) and value != "None"


def judge_load_crash_cause(rows: pd.DataFrame) -> Judgement:
    """The kit's claim, read from the as-is loads and the workaround's reruns:

    confirmed — every as-is load crashed, the forensics rule named the static-libstdc++ locale mix from the native
    backtrace, and with the system libstdc++ loaded first every package ran and matched eager;
    partly — the cause was named for some crashes, or the workaround fixed only some;
    refuted — loads crashed, a native backtrace was read, and it is not the locale mix (another cause);
    not_reproduced — every package loaded and ran as it is;
    inconclusive — nothing compiled (a precondition of the kit's own), or a crash without a backtrace to read.
    The run records the packages' device and the torch release: the crash was seen on one stack (ledger)."""
    compiled = rows[rows.step.str.startswith("aoti compile")]
    loads = rows[rows.step.str.startswith("aoti load")]
    as_is, fixed = loads[loads.aoti_load == "as_is"], loads[loads.aoti_load == "system_libstdcxx"]
    data = {"packages": len(compiled), "compiled": int((compiled.status == "ok").sum()),
            "as_is": as_is[["model", "device", "status"]].to_dict("records"),
            "workaround": fixed[[c for c in ("model", "device", "status", "max_abs_diff", "median_ms") if c in fixed]]
            .to_dict("records")}
    release = str(rows["torch"].dropna().iloc[0]) if "torch" in rows and rows["torch"].notna().any() else torch.__version__
    devices = sorted(set(as_is.device)) if len(as_is) else sorted(set(compiled.get("device", pd.Series(dtype=str))))
    run = {"device": devices[0] if len(devices) == 1 else devices, "torch": release.split("+")[0]}
    if not len(as_is):
        return Judgement("inconclusive", f"no package compiled ({len(compiled)} tried), so no load was tried: "
                         f"{'; '.join(compiled.error.astype(str))[:300]}", data, basis="none")
    crashed = as_is[as_is.status == "crash"]
    if not len(crashed):
        diffs = as_is.get("max_abs_diff", pd.Series(dtype=float))
        return Judgement("not_reproduced", f"{(as_is.status == 'ok').sum()} of {len(as_is)} packages loaded and ran as "
                         f"they are on torch {release} (max |Δ| vs eager {diffs.max():.1e}); nothing crashed, so no "
                         "workaround was applied", data, run=run)
    named = crashed[crashed.cause == "static_libstdcxx_locale_mix"]
    data["frames"] = crashed.frames.tolist() if "frames" in crashed else []
    data["trace_files"] = crashed.trace_file.tolist() if "trace_file" in crashed else []
    ok_fixed = fixed[(fixed.status == "ok") & (fixed.get("max_abs_diff", 1.0) <= ATOL)] if len(fixed) else fixed
    frames = str(crashed.frames.iloc[0])[:300] if "frames" in crashed else ""
    if len(named) == len(crashed) and len(ok_fixed) == len(crashed):
        return Judgement("confirmed", (f"{len(crashed)} of {len(as_is)} packages crashed as they are "
                                       f"({crashed.signal.iloc[0]}) on torch {release} with the static-libstdc++ locale "
                                       f"mix named from the native backtrace; with the system libstdc++ loaded first all "
                                       f"{len(ok_fixed)} ran, max |Δ| vs eager {ok_fixed.max_abs_diff.max():.1e}. "
                                       f"Top frames: {frames}"), data, run=run)
    if len(named):
        return Judgement("partly", (f"{len(crashed)} of {len(as_is)} packages crashed, {len(named)} with the locale-mix "
                                    f"cause; the workaround ran {len(ok_fixed)} of {len(fixed)} to a match with eager"),
                         data, run=run)
    read = [f for f in (crashed.frames if "frames" in crashed else []) if _present(f)]
    if read:
        return Judgement("refuted", (f"{len(crashed)} of {len(as_is)} packages crashed as they are, and the native "
                                     f"backtrace is not the locale mix (no known cause matched): {read[0][:300]}"),
                         data, run=run)
    return Judgement("inconclusive", (f"{len(crashed)} of {len(as_is)} packages crashed as they are, but no native "
                                      f"backtrace was read ({crashed.native.iloc[0] if 'native' in crashed else ''}), "
                                      "so the cause cannot be told"), data, run=run)


JUDGES = {CLAIM: judge_load_crash_cause}


def judge(found: Any, rows: pd.DataFrame) -> pd.DataFrame:
    """Record the tables and every claim's verdict; returns the claims frame."""
    found.table("aoti_load", rows)
    return found.judge_all(JUDGES, rows)


catalog.register(catalog.Investigation(
    name="aoti_load",
    title="Loading AOT Inductor packages: the crash, its cause, the workaround",
    seeds=("kit",),
    profiles={
        # quick: one CPU package (the crash needs no GPU; the other investigations load CUDA packages the same way)
        "quick": {"models": ["two_ops"], "cuda_packages": False},
        "full": {"models": list(MODELS), "cuda_packages": True},
    },
    checks={"models": catalog.one_of(*MODELS)},
    judges=JUDGES,
))
