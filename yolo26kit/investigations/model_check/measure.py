"""model_check's paths: every back-end of the registry (yolo26kit.backends) that takes an nn.Module, each a chain of
isolated steps (build: export + lower, or the cold compile; then load, first call, timing and outputs in one child),
compared with eager on the device it runs on; beside them the hazard scan and the dynamic export (steps too).

A run builds everything first, as many steps at once as the machine has cores, then times the paths one by one with
nothing else running (a busy core beside a timed run would slow it).
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import torch

from ... import backends, env
from ...bench import aoti_package, isolate, timing
from ...backends import executorch_cuda, installed
from ...backends import onnxruntime as ort_backend
from .hazards import step_scan
from .measure_dynamic import step_dynamic
from .model import build, compare, outputs_of

NAME = "model_check"
# Registry back-ends that are no path for an arbitrary model, and why.
NOT_PATHS = {"ultralytics_export": "exports only ultralytics' own YOLO objects"}
PATHS = tuple(n for n in backends.names() if n not in NOT_PATHS)
CPU_BACKENDS = ("executorch_xnnpack",)  # CPU back-ends: on a CUDA run they run on the CPU, beside a CPU eager row
PRELOAD = ("yolo26kit.investigations.model_check", "torchvision", "executorch.exir", "executorch.runtime",
           "executorch.backends.xnnpack.partition.xnnpack_partitioner")
# Rough cold seconds of a path's build on 2 CPU cores (mobilenet_v3_small), only to start the longest first.
EXPECTED_SECONDS = {"compile": 50.0, "compile_cudagraphs": 60.0, "tensorrt": 60.0, "aoti": 25.0,
                    "executorch_cuda": 40.0, "executorch_xnnpack": 15.0, "scan": 15.0, "dynamic": 12.0,
                    "onnxruntime": 4.0}


# Compiled on load through Inductor, whose compile cache the timed child then reads: their cold compile is the build
# step (Torch-TensorRT keeps no engine between processes: it compiles in its run step).
WARMED = ("compile", "compile_cudagraphs")


def jit(path: str) -> bool:
    """A back-end compiled on load (torch.compile, Torch-TensorRT): no artifact to prepare."""
    return path != "eager" and not backends.get(path).has_prepare


@dataclass(frozen=True)
class Case:
    """One path on one device: everything its child steps need to rebuild the model and run it."""

    spec: str
    path: str  # a registry back-end name (PATHS)
    device: str
    imgsz: int = 64
    batch: int = 1
    seed: int = 0
    workdir: str = ""
    min_run_time: float = 0.1
    provider: str = ""  # onnxruntime's execution provider (CPU's on the CPU, CUDA's on the GPU)
    autotune: bool = False  # executorch_cuda: the back-end's max-autotune (minutes per convolution shape)
    # torch's threads in every step of the case (0: as the step starts): Inductor's C++ kernels specialise on the
    # count, so a cold compile at another count than the timed run's would miss the compile cache and time apart
    threads: int = 0

    @property
    def tag(self) -> str:
        return f"{self.path}-{self.device}"

    @property
    def reference(self) -> str:
        """The tag of the eager case this case is compared with (eager on the same device)."""
        return f"eager-{self.device}"


def subject(case: Case) -> tuple[torch.nn.Module, tuple[Any, ...]]:
    """The case's model and example inputs on the device its back-end takes them on (torch at the case's threads)."""
    if case.threads:
        torch.set_num_threads(case.threads)
    device = "cpu" if backends.get(case.path).cpu_inputs_at_load else case.device
    return build(case.spec, case.imgsz, case.batch, case.seed, device)


def _options(case: Case) -> dict[str, Any]:
    return {"autotune": case.autotune} if case.path == "executorch_cuda" else {}


# --- steps (each runs in an isolated child) ------------------------------------------------------------------------

def step_prepare(case: Case) -> dict[str, Any]:
    """The back-end's ahead-of-time step (export, then compile a package / lower / write the .onnx)."""
    if case.threads:
        torch.set_num_threads(case.threads)
    net, inputs = build(case.spec, case.imgsz, case.batch, case.seed, case.device)
    with torch.no_grad():
        facts = backends.get(case.path).prepare(net, inputs, case.workdir, case.tag, **_options(case))
    return {k: facts[k] for k in ("artifact", "bytes", "cached", "backend_options") if k in facts}


def step_warm(case: Case) -> dict[str, Any]:
    """An Inductor-compiled back-end's cold compile and first call: the compile cache then serves the timed child."""
    torch.set_grad_enabled(False)
    net, inputs = subject(case)
    t0 = time.perf_counter()
    loaded = backends.get(case.path).load(net, inputs)
    loaded()
    timing.sync(case.device)
    return {"compile_s": time.perf_counter() - t0}


def step_run(case: Case, artifact: str = "") -> dict[str, Any]:
    """Load (or compile) the path, run it once (the first call), time it; outputs, latency, graph breaks."""
    from torch._dynamo.utils import counters

    torch.set_grad_enabled(False)
    backend = backends.get(case.path)
    net, inputs = subject(case)
    counters.clear()
    t0 = time.perf_counter()
    options = {"provider": case.provider} if case.provider else {}
    loaded = backend.load(artifact, inputs, **options) if backend.has_prepare else backend.load(net, inputs)
    setup_s = time.perf_counter() - t0
    t = timing.measure(loaded.fn, label=case.tag, device=case.device, min_run_time=case.min_run_time)
    return {"outputs": outputs_of(loaded()), "setup_s": setup_s, "first_call_s": setup_s + t.first_ms / 1e3,
            "median_ms": t.median_ms, "p10_ms": t.p10_ms, "p90_ms": t.p90_ms, "runs": t.runs, **loaded.info,
            "graph_breaks": int(sum(counters["graph_break"].values())),
            "cudagraph_skips": int(counters["inductor"].get("cudagraph_skips", 0))}


# --- planning ----------------------------------------------------------------------------------------------------

def plan(spec: str, device: str, paths: list[str], imgsz: int, batch: int, seed: int = 0, workdir: str = "",
         min_run_time: float = 0.1, autotune: bool = False) -> list[Case]:
    """Every path of `paths` on the run's device (CPU back-ends on the CPU), and the eager rows they compare with."""
    base = Case(spec, "eager", device, imgsz, batch, seed, workdir, min_run_time, autotune=autotune,
                threads=torch.get_num_threads())  # what the timed children get: forked with this process's env
    cases = {base.tag: base}
    for path in paths:
        where = "cpu" if path in CPU_BACKENDS else device
        provider = ""
        if path == "onnxruntime":
            cuda_ep = where.startswith("cuda") and "CUDAExecutionProvider" in ort_backend.providers()
            provider, where = ("CUDAExecutionProvider", where) if cuda_ep else ("CPUExecutionProvider", "cpu")
        case = replace(base, path=path, device=where, provider=provider)
        cases.setdefault(case.tag, case)
        cases.setdefault(case.reference, replace(base, device=where))
    return list(cases.values())


def skip_reason(case: Case) -> str:
    """Why a case is not attempted here ('' when it is): a module it needs is missing, or CUDA."""
    backend = backends.get(case.path)
    missing = [m for m in backend.modules if not installed(m)]
    if missing:
        return f"not installed: {', '.join(missing)}"
    if backend.needs_cuda and not case.device.startswith("cuda"):
        return f"needs a CUDA device; this run is on {case.device}"
    return ""


@dataclass
class Row:
    """One case's outcomes (build, then one run, or two AOTI load attempts) and its comparison with eager."""

    case: Case
    outcomes: list[isolate.Outcome]
    delta: dict[str, Any] = field(default_factory=dict)

    @property
    def run(self) -> isolate.Outcome | None:
        """The outcome whose numbers count: the last one that ran (the workaround's, after a crashed AOTI load)."""
        runs = [o for o in self.outcomes if o.ok and isinstance(o.value, dict) and "outputs" in o.value]
        return runs[-1] if runs else None

    @property
    def build(self) -> isolate.Outcome | None:
        return next((o for o in self.outcomes if o.step.endswith((":build", ":compile"))), None)

    @property
    def final(self) -> isolate.Outcome:
        """The run that counts, else the first failure."""
        return self.run or next((o for o in self.outcomes if not o.ok), self.outcomes[-1])

    @property
    def status(self) -> str:
        return "ok" if self.run else self.final.status

    @property
    def correct(self) -> bool:
        return self.run is not None and bool(self.delta.get("correct"))

    @property
    def median_ms(self) -> float | None:
        value = self.run.value.get("median_ms") if self.run else None
        return float(value) if isinstance(value, (int, float)) and value > 0 else None


def build_step(case: Case, timeout: float) -> isolate.Outcome | None:
    """The case's build step: the back-end's prepare, or an Inductor-compiled back-end's cold compile; None else."""
    if backends.get(case.path).has_prepare:
        return isolate.run_step(step_prepare, case, timeout=timeout, step=f"{case.tag}:build", phase="compile")
    if case.path in WARMED:
        return isolate.run_step(step_warm, case, timeout=timeout, step=f"{case.tag}:compile", phase="compile")
    return None


def _run_outcomes(case: Case, artifact: str, timeout: float) -> list[isolate.Outcome]:
    """The run step; an AOTI package loads through aoti_package.run_step (retried with a known crash's workaround)."""
    step = f"{case.tag}:run"
    if case.path == "aoti":
        return aoti_package.run_step(step_run, case, artifact, timeout=timeout, step=step)
    phase = "compile" if jit(case.path) else "measure"
    return [isolate.run_step(step_run, case, artifact, timeout=timeout, step=step, phase=phase)]


def run_case(case: Case, timeout: float, built: isolate.Outcome | None) -> Row:
    """A case's chain after its build step: skipped, its failed build, or its run step(s)."""
    reason = skip_reason(case)
    if reason:
        return Row(case, [isolate.skipped(f"{case.tag}:run", reason)])
    steps = [built] if built is not None else []
    if built is not None and not built.ok:
        return Row(case, steps)
    if case.path == "executorch_cuda":
        found = isolate.run_step(executorch_cuda.runtime_backends, timeout=120, step=f"{case.tag}:backends")
        if not (found.ok and "CudaBackend" in (found.value or [])):
            return Row(case, steps + [isolate.skipped(f"{case.tag}:run", "this executorch runtime has no CudaBackend")])
    artifact = built.value.get("artifact", "") if built is not None and isinstance(built.value, dict) else ""
    return Row(case, steps + _run_outcomes(case, artifact, timeout))


# --- the notebook's driver ---------------------------------------------------------------------------------------

@dataclass
class Run:
    """What the notebook computed, kept together for the tables and the verdicts."""

    spec: str
    device: str
    imgsz: int
    batch: int
    rows: list[Row]
    scan: isolate.Outcome
    dynamic: isolate.Outcome
    sizes: list[int] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=env.fingerprint)

    @property
    def hits(self) -> list[dict[str, Any]]:
        """Every hazard hit of the scan and of the dynamic export."""
        found = [o.value.get("hits", []) for o in (self.scan, self.dynamic) if o.ok and isinstance(o.value, dict)]
        return [h for hits in found for h in hits]

    @property
    def attempted(self) -> list[Row]:
        """The path rows this machine could attempt (not skipped), eager included."""
        return [r for r in self.rows if r.final.status != "skipped"]


def investigate(model: str, device: str, paths: list[str], imgsz: int = 64, batch: int = 1,
                dynamic_sizes: list[int] | tuple = (64, 96, 128), max_batch: int = 2, min_run_time: float = 0.1,
                step_timeout: float = 300.0, seed: int = 0, edge_check: bool = True, autotune: bool = False,
                workers: int = 0) -> Run:
    """Build every path, the hazard scan and the dynamic export (`workers` steps at once, 0: one per core), then
    time the paths one at a time and compare each with eager on its device."""
    isolate.preload(*PRELOAD)
    workdir = isolate.work_dir(NAME)
    cases = plan(model, device, paths, imgsz, batch, seed, workdir, min_run_time, autotune)
    todo = [c for c in cases if not skip_reason(c)]
    side: dict[str, Callable[[], isolate.Outcome]] = {
        "scan": lambda: isolate.run_step(step_scan, model, imgsz, batch, seed, edge_check, timeout=step_timeout,
                                         step="hazard scan", phase="compile"),
        "dynamic": lambda: isolate.run_step(step_dynamic, model, list(dynamic_sizes), max_batch, seed,
                                            timeout=step_timeout, step="dynamic export", phase="compile")}
    jobs: dict[str, Callable[[], Any]] = {**side, **{c.tag: (lambda c=c: build_step(c, step_timeout)) for c in todo}}
    order = sorted(jobs, key=lambda k: -EXPECTED_SECONDS.get(k.split("-")[0], 5.0))
    workers = workers or max(1, os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool, timing.sharing_cores(workers):
        done = dict(zip(order, pool.map(lambda k: jobs[k](), order)))
    rows = [run_case(c, step_timeout, done.get(c.tag)) for c in cases]  # one at a time: nothing beside a timing
    refs = {r.case.tag: r.run.value["outputs"] for r in rows if r.case.path == "eager" and r.run is not None}
    for r in rows:
        if r.run is not None:
            r.delta = compare(r.run.value["outputs"], refs.get(r.case.reference, []))
    return Run(model, device, imgsz, batch, rows, done["scan"], done["dynamic"], sorted(set(dynamic_sizes)))
