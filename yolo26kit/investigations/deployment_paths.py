"""Deployment paths (seeds 000/001): which path runs the whole YOLO26, postprocess included, correctly here, and how fast.

Back-ends, each a chain of isolated steps (prepare: export / compile / lower; then load, run and time in one child):
  eager        PyTorch eager, fp32 (fp16 / bf16 too on CUDA);
  compile      torch.compile, default mode;       compile_cudagraphs  torch.compile(mode="reduce-overhead"), CUDA;
  aoti         AOT Inductor (aoti.compile_package, loaded through aoti.run_step: both load rows when one crashed);
  et_xnnpack   ExecuTorch XNNPACK (a CPU back-end, also on CUDA runs);
  et_cuda      ExecuTorch CUDA (max-autotune off, through index_dtype's lowering step), CUDA;
  onnxruntime  torch.onnx (dynamo) export run by ONNX Runtime: CPU EP, and the CUDA EP on CUDA runs when installed;
  tensorrt     Torch-TensorRT, CUDA, when installed.
A back-end that is not installed, or needs CUDA on a CPU run, is a `skipped` row with the reason, never an error.
Every output is compared with eager fp32 on the device the back-end runs on (index_dtype.compare / agrees).
Models are dynamic_shapes' "live" YOLO26 (He-normal weights): top-k scores spread at any input size, so
back-ends are compared on distinct detections, not on how they break ties.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import resource
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import pandas as pd
import torch

from .. import aoti, catalog, env, findings, isolate, timing, yolo
from . import dynamic_shapes, index_dtype

NAME = "deployment_paths"
SEEDS = ("000_60ebd1ee51d51957.txt", "001_fda80f2472077657.txt")
BACKENDS = ("eager", "compile", "compile_cudagraphs", "aoti", "et_xnnpack", "et_cuda", "onnxruntime", "tensorrt")
CUDA_ONLY = ("compile_cudagraphs", "et_cuda", "tensorrt")
COMPILE_HEAVY = ("compile", "compile_cudagraphs", "aoti", "et_cuda", "tensorrt")  # only for `compile_models`
TORCH_NATIVE_CUDA = ("eager", "compile", "compile_cudagraphs", "aoti", "et_cuda")
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
# A reduced-precision row is correct when its sorted top-k scores are within this of eager fp32's.
REDUCED_SCORE_TOL = {"fp16": 5e-3, "bf16": 3e-2}
TASKS = ("detect", "segment", "pose", "obb", "classify")
TASK_MODELS = {"segment": ("SegmentationModel", "-seg"), "pose": ("PoseModel", "-pose"),
               "obb": ("OBBModel", "-obb"), "classify": ("ClassificationModel", "-cls")}
ONNX_DYNAMIC_SIZES = (160, 224, 320)  # the dynamic ONNX program runs at each (dynamic_shapes' recommended spec)
PRELOAD = ("yolo26kit.investigations.deployment_paths", "ultralytics.nn.tasks", "executorch.exir",
           "executorch.runtime", "executorch.backends.xnnpack.partition.xnnpack_partitioner")

# Seed 001's benchmark table (640x640): XNNPACK on an Intel Core i7; hybrid CUDA and TensorRT on an NVIDIA A100.
# Shown beside the measured figures and used only for ratios (growth with size) and bands; never as "expected".
SEED_LATENCY_MS: dict[str, dict[str, tuple[float, float]]] = {
    "xnnpack_i7": {"n": (15, 20), "s": (30, 40), "m": (60, 80), "l": (120, 150), "x": (200, 250)},
    "hybrid_cuda_a100": {"n": (2, 3), "s": (3, 5), "m": (6, 9), "l": (10, 15), "x": (18, 25)},
    "tensorrt_a100": {"n": (1, 2), "s": (2, 3), "m": (4, 6), "l": (7, 10), "x": (12, 18)},
}


# --- models and inputs --------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    """One (task, model, back-end, device, dtype) row: everything a child needs to rebuild and run it."""

    model: str
    backend: str
    device: str  # where the back-end runs: cuda or cpu
    dtype: str = "fp32"
    imgsz: int = 640
    task: str = "detect"
    provider: str = ""  # onnxruntime execution provider
    seed: int = 0
    workdir: str = ""
    min_run_time: float = 0.5
    timed: bool = True  # False: correctness only (the task-variant check)

    @property
    def tag(self) -> str:
        extra = f"-{self.provider.replace('ExecutionProvider', '').lower()}" if self.provider else ""
        return f"{self.task}-{self.model}-{self.backend}{extra}-{self.dtype}-{self.device}-{self.imgsz}"

    @property
    def key(self) -> tuple:
        return (self.task, self.model, self.backend, self.provider, self.dtype, self.device, self.imgsz)

    @property
    def reference(self) -> tuple:
        """The key of the eager fp32 case on the same device that this case is compared with."""
        return (self.task, self.model, "eager", "", "fp32", self.device, self.imgsz)


def build_task(task: str, model: str, seed: int = 0) -> torch.nn.Module:
    """A fused, export-mode, end-to-end YOLO26 of any task with dynamic_shapes' live weights (seeded)."""
    if task == "detect":
        return dynamic_shapes.liven(yolo.build(model, seed=seed), seed)
    if task not in TASK_MODELS:
        raise ValueError(f"unknown task {task!r}; choose from {TASKS}")
    yolo.offline_ultralytics()
    from ultralytics.nn import tasks as ultralytics_tasks

    cls_name, suffix = TASK_MODELS[task]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = getattr(ultralytics_tasks, cls_name)(f"yolo26{yolo.scale_of(model)}{suffix}.yaml", verbose=False)
    head = net.model[-1]
    if hasattr(head, "end2end"):
        head.end2end = True  # NMS-free top-k postprocess included, as for detection
    net = net.fuse().eval()
    for module in net.modules():
        if hasattr(module, "export"):
            module.export = True
    return dynamic_shapes.liven(net, seed).requires_grad_(False)


def build_model(case: Case) -> torch.nn.Module:
    """The case's model on its device in its dtype, eval mode."""
    return build_task(case.task, case.model, case.seed).eval().to(case.device, DTYPES[case.dtype])


def example(case: Case) -> torch.Tensor:
    """The case's seeded input image [1, 3, imgsz, imgsz] on its device in its dtype."""
    return yolo.example_input(1, case.imgsz, case.seed, case.device).to(DTYPES[case.dtype])


def _outputs(value: Any) -> list[torch.Tensor]:
    """A back-end's result as a list of CPU float tensors (tuples and lists flattened one level)."""
    items = value if isinstance(value, (list, tuple)) else [value]
    return [torch.as_tensor(t).detach().float().cpu().clone() for t in items]


# --- steps (each runs in an isolated child) ------------------------------------------------------

def export(case: Case) -> torch.export.ExportedProgram:
    """torch.export of the case's model."""
    with torch.no_grad():
        return torch.export.export(build_model(case), (example(case),))


def step_prepare(case: Case) -> dict[str, Any]:
    """The back-end's ahead-of-time step: AOTI package, .pte lowering or ONNX export; returns the artifact path."""
    work = Path(case.workdir)
    if case.backend == "aoti":
        path = aoti.compile_package(export(case), str(work / f"{case.tag}.pt2"))
    elif case.backend == "et_xnnpack":
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
        from executorch.exir import to_edge_transform_and_lower

        program = to_edge_transform_and_lower(export(case), partitioner=[XnnpackPartitioner()]).to_executorch()
        path = str(work / f"{case.tag}.pte")
        Path(path).write_bytes(program.buffer)
    elif case.backend == "et_cuda":
        from executorch.backends.cuda.cuda_partitioner import CudaPartitioner
        from executorch.exir import to_edge_transform_and_lower

        # index_dtype's helpers: max-autotune off (this child only); the back-end's default takes many minutes
        index_dtype._force_autotune_off()
        partitioner = CudaPartitioner(index_dtype._cuda_compile_specs(False))
        program = to_edge_transform_and_lower(export(case), partitioner=[partitioner]).to_executorch()
        folder = work / f"{case.tag}.cuda"  # its own folder: the weights go to a .ptd file beside the .pte
        folder.mkdir(parents=True, exist_ok=True)
        path = str(folder / f"{case.tag}.pte")
        Path(path).write_bytes(program.buffer)
        if hasattr(program, "write_tensor_data_to_file"):
            program.write_tensor_data_to_file(str(folder))
    elif case.backend == "onnxruntime":
        path = str(work / f"{case.tag}.onnx")
        with torch.no_grad():
            torch.onnx.export(build_model(case), (example(case),), dynamo=True).save(path)
    else:
        raise ValueError(f"{case.backend} has no ahead-of-time step")
    return {"artifact": path, "bytes": os.path.getsize(path)}


def _rss_kib() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def _runner(case: Case, artifact: str) -> tuple[Callable[[], Any], dict[str, Any]]:
    """A zero-argument call that runs the case once, and facts about how it was set up."""
    threads = torch.get_num_threads()
    info: dict[str, Any] = {"threads": threads}
    if case.backend in ("eager", "compile", "compile_cudagraphs", "tensorrt"):
        model, x = build_model(case), example(case)
        if case.backend != "eager":
            # One eager call first, as a predictor's warm-up does: compiled fresh, the head's anchor cache changes
            # under Dynamo (graph breaks, a recompilation per call).
            model(x)
        if case.backend == "compile":
            model = torch.compile(model)
        elif case.backend == "compile_cudagraphs":
            model = torch.compile(model, mode="reduce-overhead")
        elif case.backend == "tensorrt":
            import torch_tensorrt

            model = torch_tensorrt.compile(model, ir="dynamo", inputs=[x], enabled_precisions={DTYPES[case.dtype]})
        return (lambda: model(x)), info
    if case.backend == "aoti":
        runner, x = aoti.load(artifact), example(case)
        return (lambda: runner(x)), info
    if case.backend in ("et_xnnpack", "et_cuda"):
        from executorch.extension.pybindings import portable_lib
        from executorch.runtime import Runtime

        if hasattr(portable_lib, "_unsafe_reset_threadpool"):  # XNNPACK with as many threads as torch
            portable_lib._unsafe_reset_threadpool(threads)
        runtime = Runtime.get()
        data = sorted(Path(artifact).parent.glob("*.ptd")) if case.backend == "et_cuda" else []
        takes_data = "data_path" in inspect.signature(runtime.load_program).parameters
        program = runtime.load_program(Path(artifact), **({"data_path": str(data[0])} if data and takes_data else {}))
        method = program.load_method("forward")
        x = example(replace(case, device="cpu"))
        return (lambda: method.execute([x])), info
    if case.backend == "onnxruntime":
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        session = ort.InferenceSession(artifact, options, providers=[case.provider])
        info["providers"] = session.get_providers()
        feed = {session.get_inputs()[0].name: example(replace(case, device="cpu")).numpy()}
        return (lambda: session.run(None, feed)), info
    raise ValueError(f"unknown back-end {case.backend!r}; choose from {BACKENDS}")


def step_run(case: Case, artifact: str = "") -> dict[str, Any]:
    """Set the back-end up (build / compile / load), run it, time it; output, first call, latency, peak memory.

    Peak memory: on CUDA torch.cuda.max_memory_allocated over the whole step (ONNX Runtime's CUDA EP allocates
    outside torch: not measured); on CPU the step's peak RSS (ru_maxrss) above its RSS at the start.
    """
    from torch._dynamo.utils import counters

    torch.set_grad_enabled(False)  # this child only
    on_cuda = case.device.startswith("cuda")
    if on_cuda:
        torch.cuda.reset_peak_memory_stats()
    rss0 = _rss_kib()
    counters.clear()
    t0 = time.perf_counter()
    fn, info = _runner(case, artifact)
    setup_s = time.perf_counter() - t0
    if case.timed:
        t = timing.measure(fn, label=case.tag, device=case.device, min_run_time=case.min_run_time)
        first_s = t.first_ms / 1e3
        stats = {"median_ms": t.median_ms, "iqr_ms": t.iqr_ms, "p10_ms": t.p10_ms, "p90_ms": t.p90_ms, "runs": t.runs}
    else:
        first_s = timing.first_call_ms(fn, case.device) / 1e3
        stats = {}
    outputs = _outputs(fn())
    if on_cuda and not (case.backend == "onnxruntime"):
        peak, kind = torch.cuda.max_memory_allocated() / 2**20, "cuda_max_allocated"
    elif on_cuda:
        peak, kind = None, "not measured (ONNX Runtime's own CUDA allocator)"
    else:
        peak, kind = max(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024, "cpu_rss_delta"
    inductor = counters["inductor"]
    return {"outputs": outputs, "setup_s": setup_s, "first_call_s": setup_s + first_s, **stats,
            "peak_mib": peak, "mem_kind": kind, **info,
            "graph_breaks": int(sum(counters["graph_break"].values())),
            "cudagraph_skips": int(inductor.get("cudagraph_skips", 0))}


def step_onnx_dynamic(model: str, sizes: tuple[int, ...], seed: int = 0) -> list[dict[str, Any]]:
    """ONNX Runtime (CPU EP) with dynamic H/W: dynamic_shapes' recommended export spec, run at each size vs eager."""
    import onnxruntime as ort

    exported = dynamic_shapes.export_spec(dynamic_shapes.RECOMMENDED, model=model, min_size=min(sizes),
                                          max_size=max(sizes), seed=seed)
    if not exported.ok:
        raise RuntimeError(f"dynamic torch.export ({dynamic_shapes.RECOMMENDED}) failed: {exported.error}")
    path = os.path.join(tempfile.mkdtemp(prefix="yolo26kit-onnx-dynamic-"), "dynamic.onnx")
    torch.onnx.export(exported.program, dynamo=True).save(path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    net = dynamic_shapes.build_model(model, seed, "cpu")
    rows = []
    for size in sizes:
        x = dynamic_shapes.image(1, size, size)
        with torch.no_grad():
            ref = net(x)
        out = torch.from_numpy(session.run(None, {session.get_inputs()[0].name: x.numpy()})[0])
        delta = index_dtype.compare(out, ref)
        rows.append({"size": size, "matched": delta.get("match_rate"), "score_max_abs": delta.get("score_max_abs"),
                     "correct": index_dtype.agrees(delta)})
    return rows


# --- comparing ------------------------------------------------------------------------------------

def compare(task: str, outputs: list[torch.Tensor] | None, reference: list[torch.Tensor] | None) -> dict[str, Any]:
    """How far a case's outputs are from eager fp32: detections via index_dtype.compare, class scores via top-5."""
    if not outputs or not reference:
        return {}
    out, ref = outputs[0], reference[0]
    if task == "classify":
        if out.shape != ref.shape:
            return {"match_rate": 0.0, "exact": False, "close": False}
        top_out, top_ref = out.topk(5, dim=-1).indices, ref.topk(5, dim=-1).indices
        max_abs = (out - ref).abs().max().item()
        same = torch.equal(top_out, top_ref)
        return {"max_abs": max_abs, "match_rate": float(same), "exact": torch.equal(out, ref), "score_max_abs": max_abs,
                "close": same and max_abs <= 1e-2 * ref.abs().max().item()}
    delta = index_dtype.compare(out[..., :6] if out.ndim == 3 else out, ref[..., :6] if ref.ndim == 3 else ref)
    if len(outputs) > 1 and len(reference) > 1 and outputs[1].shape == reference[1].shape:
        delta["aux_max_abs"] = (outputs[1] - reference[1]).abs().max().item()  # e.g. segmentation prototypes
    return delta


def correct(delta: dict[str, Any], dtype: str = "fp32") -> bool:
    """Same detections as eager fp32: index_dtype.agrees for fp32; sorted scores within REDUCED_SCORE_TOL otherwise."""
    if not delta:
        return False
    if dtype == "fp32":
        return index_dtype.agrees(delta)
    score = delta.get("score_max_abs")
    return score is not None and score <= REDUCED_SCORE_TOL[dtype]


# --- planning and running -----------------------------------------------------------------------

def installed(module: str) -> bool:
    """Whether a module can be imported here (without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def ort_providers() -> list[str]:
    """ONNX Runtime's available execution providers ([] when onnxruntime is missing)."""
    if not installed("onnxruntime"):
        return []
    import onnxruntime

    return list(onnxruntime.get_available_providers())


def skip_reason(case: Case, compile_models: list[str]) -> str:
    """Why a case is not attempted on this run ('' when it is)."""
    if case.backend in CUDA_ONLY and not case.device.startswith("cuda"):
        return "needs a CUDA device"
    if case.backend in COMPILE_HEAVY and case.model not in compile_models:
        return "compile-heavy back-ends run only for `compile_models` (this profile's are " \
               f"{', '.join(compile_models) or 'none'})"
    if case.backend == "onnxruntime":
        missing = [m for m in ("onnx", "onnxscript", "onnxruntime") if not installed(m)]
        if missing:
            return f"not installed: {', '.join(missing)} (optional; pinned in pyproject.toml, not on the GPU runner)"
        if case.provider not in ort_providers():
            return f"onnxruntime here has no {case.provider} (available: {', '.join(ort_providers())})"
    if case.backend == "tensorrt" and not installed("torch_tensorrt"):
        return "not installed: torch_tensorrt (optional extra)"
    return ""


def plan(models: list[str], compile_models: list[str], imgsz: int, device: str, backends: list[str],
         dtypes: list[str], tasks: list[str], task_models: list[str], task_imgsz: int, seed: int = 0,
         workdir: str = "", min_run_time: float = 0.5) -> list[Case]:
    """Every case of the run: each model × back-end (+ the eager references they need) and the task variants.

    On a CUDA run the CPU back-ends (et_xnnpack, ONNX Runtime's CPU EP) get an eager fp32 CPU reference row too.
    """
    cases: dict[tuple, Case] = {}
    base = Case(model="", backend="eager", device=device, imgsz=imgsz, seed=seed, workdir=workdir,
                min_run_time=min_run_time)

    def add(case: Case) -> None:
        old = cases.get(case.key)
        if old is None or (case.timed and not old.timed):
            cases[case.key] = case

    for model in models:
        add(replace(base, model=model))
        for dtype in dtypes:
            if dtype != "fp32" and device.startswith("cuda"):
                add(replace(base, model=model, dtype=dtype))
        for backend in backends:
            if backend == "eager":
                continue
            if backend == "et_xnnpack":
                add(replace(base, model=model, backend=backend, device="cpu"))
            elif backend == "onnxruntime":
                add(replace(base, model=model, backend=backend, device="cpu", provider="CPUExecutionProvider"))
                if device.startswith("cuda"):
                    add(replace(base, model=model, backend=backend, provider="CUDAExecutionProvider"))
            else:
                add(replace(base, model=model, backend=backend))
        if device.startswith("cuda") and {"et_xnnpack", "onnxruntime"} & set(backends):
            add(replace(base, model=model, device="cpu"))  # the CPU back-ends' reference (and eager CPU latency)
    for task in tasks:
        for model in task_models:
            check = replace(base, model=model, task=task, device="cpu", imgsz=task_imgsz, timed=False)
            add(replace(check, backend="et_xnnpack"))
            add(check)
    return list(cases.values())


@dataclass
class Row:
    """One case's outcomes (prepare, then one run, or two AOTI load attempts) and its comparison with eager."""

    case: Case
    outcomes: list[isolate.Outcome]
    delta: dict[str, Any] = field(default_factory=dict)

    @property
    def run(self) -> isolate.Outcome | None:
        """The outcome whose numbers count: the last ok run (the workaround's for a crashed AOTI load)."""
        runs = [o for o in self.outcomes if isinstance(o.value, dict) and "outputs" in o.value]
        return runs[-1] if runs else None

    @property
    def final(self) -> isolate.Outcome:
        """The run that counts, else the first failure."""
        return self.run or next((o for o in self.outcomes if not o.ok), self.outcomes[-1])

    @property
    def ok(self) -> bool:
        return self.run is not None

    @property
    def correct(self) -> bool:
        return self.ok and correct(self.delta, self.case.dtype)

    @property
    def median_ms(self) -> float | None:
        return self.run.value.get("median_ms") if self.run else None

    @property
    def prepare(self) -> isolate.Outcome | None:
        return next((o for o in self.outcomes if o.step.endswith(":prepare")), None)


# Rough cold seconds of a case on a GPU runner (yolo26n), only to start the longest chains first.
EXPECTED_SECONDS = {"aoti": 150.0, "et_cuda": 70.0, "compile_cudagraphs": 40.0, "et_xnnpack": 30.0,
                    "compile": 20.0, "tensorrt": 60.0, "onnxruntime": 15.0, "eager": 5.0}


def run_case(case: Case, timeout: float, compile_models: list[str]) -> Row:
    """Run one case's chain of isolated steps; never raises for a step's own failure."""
    reason = skip_reason(case, compile_models)
    if reason:
        return Row(case, [isolate.skipped(case.tag, reason)])
    steps: list[isolate.Outcome] = []
    artifact = ""
    if case.backend in ("aoti", "et_xnnpack", "et_cuda", "onnxruntime"):
        prepared = isolate.run_step(step_prepare, case, timeout=timeout, step=f"{case.tag}:prepare", phase="compile")
        steps.append(prepared)
        if not prepared.ok:
            return Row(case, steps)
        artifact = prepared.value["artifact"]
    if case.backend == "et_cuda":
        backends = isolate.run_step(index_dtype.runtime_backends, timeout=120, step=f"{case.tag}:backends")
        if not (backends.ok and "CudaBackend" in (backends.value or [])):
            registered = backends.value if backends.ok else backends.error
            return Row(case, steps + [isolate.skipped(f"{case.tag}:run", "this executorch runtime has no "
                                                      f"CudaBackend (registered: {registered})")])
    if case.backend == "aoti":
        steps += aoti.run_step(step_run, case, artifact, timeout=timeout, step=f"{case.tag}:load+run")
    else:
        jit = case.backend in ("compile", "compile_cudagraphs", "tensorrt")
        steps.append(isolate.run_step(step_run, case, artifact, timeout=timeout, step=f"{case.tag}:run",
                                      phase="compile" if jit else "measure"))
    return Row(case, steps)


def run_all(cases: list[Case], timeout: float, compile_models: list[str], workers: int = 1) -> list[Row]:
    """Every case's chain, `workers` chains at a time (longest first), then each compared with its eager reference.

    Chains are independent child processes; their timed parts take the run's device lock (timing.measure), so
    no two measurements overlap, while compiles and lowerings do.
    """
    order = sorted(range(len(cases)), key=lambda i: -EXPECTED_SECONDS.get(cases[i].backend, 5.0))
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        done = dict(zip(order, pool.map(lambda i: run_case(cases[i], timeout, compile_models), order)))
    rows = [done[i] for i in range(len(cases))]
    refs = {r.case.key: r.run.value["outputs"] for r in rows if r.case.backend == "eager" and r.case.dtype == "fp32"
            and r.run is not None}
    for r in rows:
        if r.run is not None:
            r.delta = compare(r.case.task, r.run.value["outputs"], refs.get(r.case.reference))
    return rows


# --- tables ---------------------------------------------------------------------------------------

def _round(value: Any, digits: int = 3) -> Any:
    return round(value, digits) if isinstance(value, float) else value


def row_dicts(row: Row) -> list[dict[str, Any]]:
    """One table row per run attempt (an AOTI case shows its as-is load and the workaround's); a failed prepare step
    or a skip is the case's only row."""
    c = row.case
    prepare = row.prepare
    attempts = [o for o in row.outcomes if o is not prepare] if prepare is None or prepare.ok else [prepare]
    out = []
    for o in attempts or row.outcomes:
        counts = o is row.run
        value = o.value if o.ok and isinstance(o.value, dict) else {}
        out.append({
            "task": c.task, "model": c.model, "backend": c.backend + (f" ({c.provider})" if c.provider else ""),
            "device": c.device, "dtype": c.dtype, "imgsz": c.imgsz, "status": o.status,
            "median_ms": _round(value.get("median_ms")), "iqr_ms": _round(value.get("iqr_ms")),
            "first_call_s": _round(value.get("first_call_s")),
            "prepare_s": _round(prepare.seconds, 2) if prepare is not None else None,
            "peak_mib": _round(value.get("peak_mib"), 1), "mem_kind": value.get("mem_kind", ""),
            "matched": _round(row.delta.get("match_rate")) if counts else None,
            "score_max_abs": row.delta.get("score_max_abs") if counts else None,
            "correct": row.correct if counts else None,
            "aoti_load": o.details.get("aoti_load", "") if c.backend == "aoti" else "",
            "cause": o.details.get("cause", ""), "threads": value.get("threads"),
            "graph_breaks": value.get("graph_breaks") if c.backend.startswith("compile") else None,
            "cudagraph_skips": value.get("cudagraph_skips") if c.backend == "compile_cudagraphs" else None,
            "failed step": "" if o.ok else o.step, "error": o.error[:200],
            "seconds": round(sum(x.seconds for x in row.outcomes), 2),
        })
    return out


def latency_frame(rows: list[Row]) -> pd.DataFrame:
    """The `latency` table: one row per back-end attempt of the main (detect) cases, timed ones."""
    return pd.DataFrame([d for r in rows if r.case.timed for d in row_dicts(r)])


def tasks_frame(rows: list[Row]) -> pd.DataFrame:
    """The XNNPACK task-variant check: per task and size, lowered, ran, matched eager (CPU)."""
    out = []
    for r in rows:
        prepare = r.prepare
        out.append({"task": r.case.task, "model": r.case.model, "imgsz": r.case.imgsz,
                    "lowered": prepare.status if prepare is not None else r.final.status,
                    "ran": r.run is not None, "matched": _round(r.delta.get("match_rate")),
                    "score_max_abs": r.delta.get("score_max_abs"), "aux_max_abs": r.delta.get("aux_max_abs"),
                    "correct": r.correct, "lower_s": round(prepare.seconds, 1) if prepare is not None else None,
                    "error": r.final.error[:200] if not r.ok else ""})
    return pd.DataFrame(out)


def task_rows(rows: list[Row], task_models: list[str], task_imgsz: int, tasks: list[str]) -> list[Row]:
    """The rows of the task-variant check (a timed detect row stands in when the sizes coincide)."""
    return [r for r in rows if r.case.backend == "et_xnnpack" and r.case.task in tasks
            and r.case.model in task_models and r.case.imgsz == task_imgsz]


def fastest_frame(rows: list[Row]) -> pd.DataFrame:
    """The fastest correct path per model and device, with its speed-up over eager fp32 there and the runner-up."""
    out = []
    timed = [r for r in rows if r.case.timed and r.case.task == "detect" and r.correct and r.median_ms is not None]
    for (model, device) in sorted({(r.case.model, r.case.device) for r in timed}, key=lambda k: (k[1], k[0])):
        group = sorted((r for r in timed if r.case.model == model and r.case.device == device), key=lambda r: r.median_ms)
        eager = next((r for r in group if r.case.backend == "eager" and r.case.dtype == "fp32"), None)
        best = group[0]
        out.append({"model": model, "device": device, "fastest correct": _label(best),
                    "median_ms": _round(best.median_ms), "iqr_ms": _round(best.run.value.get("iqr_ms")),
                    "eager fp32 ms": _round(eager.median_ms) if eager else None,
                    "speed-up vs eager": _round(eager.median_ms / best.median_ms, 2) if eager else None,
                    "runner-up": _label(group[1]) if len(group) > 1 else "",
                    "runner-up ms": _round(group[1].median_ms) if len(group) > 1 else None,
                    "correct paths": len(group)})
    return pd.DataFrame(out)


def _label(row: Row) -> str:
    c = row.case
    return c.backend + (f" ({c.provider.replace('ExecutionProvider', '')})" if c.provider else "") + \
        (f" {c.dtype}" if c.dtype != "fp32" else "")


def seed_frame(rows: list[Row]) -> pd.DataFrame:
    """The seed's latency table beside this run's figures (different hardware and maybe input size: not comparable)."""
    out = []
    for scale in yolo.SCALES:
        model = f"yolo26{scale}"
        mine = [r for r in rows if r.case.model == model and r.case.task == "detect" and r.correct and r.median_ms]
        if not mine:
            continue
        xnn = next((r for r in mine if r.case.backend == "et_xnnpack"), None)
        gpu = sorted((r for r in mine if r.case.device.startswith("cuda") and r.case.backend in TORCH_NATIVE_CUDA),
                     key=lambda r: r.median_ms)
        band = lambda key: "–".join(f"{v:g}" for v in SEED_LATENCY_MS[key][scale])  # noqa: E731
        out.append({"model": model, "seed XNNPACK ms (i7, 640)": band("xnnpack_i7"),
                    "measured XNNPACK ms": _round(xnn.median_ms) if xnn else None,
                    "measured at": f"{xnn.case.imgsz} px, this CPU" if xnn else "",
                    "seed hybrid CUDA ms (A100)": band("hybrid_cuda_a100"), "seed TensorRT ms (A100)": band("tensorrt_a100"),
                    "fastest torch-native CUDA path": _label(gpu[0]) if gpu else "",
                    "its ms (whole model)": _round(gpu[0].median_ms) if gpu else None,
                    "at": f"{gpu[0].case.imgsz} px, this GPU" if gpu else ""})
    return pd.DataFrame(out)


def plot_latency(rows: list[Row]) -> Any:
    """Latency (median, IQR bars) vs model size, one panel per device, one line per back-end and dtype."""
    import matplotlib.pyplot as plt

    timed = [r for r in rows if r.case.timed and r.case.task == "detect" and r.median_ms is not None]
    devices = sorted({r.case.device for r in timed}) or ["(none)"]
    fig, axes = plt.subplots(1, len(devices), figsize=(6.5 * len(devices), 4.2), squeeze=False)
    for ax, device in zip(axes[0], devices):
        mine = [r for r in timed if r.case.device == device]
        for label in sorted({_label(r) for r in mine}):
            line = sorted((r for r in mine if _label(r) == label), key=lambda r: yolo.SCALES.index(yolo.scale_of(r.case.model)))
            xs = [yolo.SCALES.index(yolo.scale_of(r.case.model)) for r in line]
            ys = [r.median_ms for r in line]
            iqr = [r.run.value.get("iqr_ms") or 0.0 for r in line]
            style = "-" if all(r.correct for r in line) else ":"
            ax.errorbar(xs, ys, yerr=[[i / 2 for i in iqr], [i / 2 for i in iqr]], marker="o", linestyle=style,
                        capsize=3, label=label + ("" if style == "-" else " (not matching eager)"))
        if not mine:
            ax.text(0.5, 0.5, "no timed rows", ha="center", va="center", transform=ax.transAxes)
        ax.set_xticks(range(len(yolo.SCALES)), [f"yolo26{s}" for s in yolo.SCALES])
        ax.set_yscale("log")
        sizes = sorted({r.case.imgsz for r in mine})
        name = env.fingerprint()["device"] if device.startswith("cuda") else env._cpu_name()
        ax.set_title(f"{device}: {name} ({', '.join(map(str, sizes))} px)", fontsize=9)
        ax.set_ylabel("latency, ms (median, IQR)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    plt.close(fig)
    return fig


# --- the notebook's driver ----------------------------------------------------------------------

@dataclass
class Run:
    """What the notebook computed, kept together for tables and verdicts."""

    device: str
    rows: list[Row]
    task_rows: list[Row]
    onnx_dynamic: isolate.Outcome | None
    models: list[str]
    imgsz: int

    @property
    def on_cuda(self) -> bool:
        return self.device.startswith("cuda")


def investigate(device: str, models: list[str], compile_models: list[str], imgsz: int, backends: list[str],
                tasks: list[str], cpu_models: list[str], cpu_compile_models: list[str], cpu_imgsz: int,
                cpu_backends: list[str], cpu_tasks: list[str], dtypes: list[str], task_models: list[str],
                task_imgsz: int, step_timeout: float, min_run_time: float = 0.5, onnx_dynamic: bool = True,
                seed: int = 0, workers: int = 0) -> Run:
    """Plan every case for this device (a CPU run takes the cpu_* parameters) and run them isolated."""
    yolo.offline_ultralytics()
    isolate.preload(*PRELOAD)
    on_cuda = device.startswith("cuda")
    if not on_cuda:
        models, compile_models, imgsz, backends, tasks = cpu_models, cpu_compile_models, cpu_imgsz, cpu_backends, cpu_tasks
    workers = workers or max(1, min(6, (os.cpu_count() or 2) // 2))
    workdir = tempfile.mkdtemp(prefix="yolo26kit-deployment-")
    cases = plan(models, compile_models, imgsz, device, backends, dtypes, tasks, task_models, task_imgsz, seed,
                 workdir, min_run_time)
    want_dynamic = onnx_dynamic and "onnxruntime" in backends and bool(models) and installed("onnxruntime") \
        and installed("onnxscript")
    dynamic_step = lambda: isolate.run_step(step_onnx_dynamic, models[0], ONNX_DYNAMIC_SIZES, seed,  # noqa: E731
                                            timeout=step_timeout, step="onnxruntime dynamic H/W", phase="compile")
    # Beside the cases on CUDA; after them on CPU, where a second busy process would disturb the CPU timings.
    with ThreadPoolExecutor(max_workers=1) as side:
        dynamic = side.submit(dynamic_step) if want_dynamic and on_cuda else None
        rows = run_all(cases, step_timeout, compile_models, workers)
        dynamic_outcome = dynamic.result() if dynamic else (dynamic_step() if want_dynamic else None)
    return Run(device, rows, task_rows(rows, task_models, task_imgsz, tasks), dynamic_outcome, list(models), imgsz)


def dynamic_frame(run: Run) -> pd.DataFrame:
    """The dynamic-shape ONNX Runtime check: one row per input size (or the step's failure)."""
    o = run.onnx_dynamic
    if o is None:
        return pd.DataFrame([{"status": "skipped", "error": "onnxruntime/onnxscript not installed or not asked for"}])
    if not o.ok:
        return pd.DataFrame([{"status": o.status, "error": o.error[:300]}])
    return pd.DataFrame([{"status": "ok", **r} for r in o.value])


# --- verdicts -------------------------------------------------------------------------------------

def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g} ms"


def _pick(run: Run, backend: str, model: str, device: str | None = None, dtype: str = "fp32",
          provider: str = "") -> Row | None:
    return next((r for r in run.rows if r.case.backend == backend and r.case.model == model and r.case.timed
                 and r.case.task == "detect" and r.case.dtype == dtype and (device is None or r.case.device == device)
                 and (not provider or r.case.provider == provider)), None)


def _state(row: Row | None) -> str:
    """A row's outcome in a few words: ran and matched / differs / failed how / skipped why."""
    if row is None:
        return "not in the run"
    if row.correct:
        rate = row.delta.get("match_rate")
        return f"ran, {rate:.0%} of eager's detections matched" if isinstance(rate, float) else "ran, matched eager"
    if row.ok:
        return f"ran but differs from eager (matched {row.delta.get('match_rate')})"
    final = row.final
    return f"{final.status}: {final.error[:140]}"


def judge_cuda_aoti_backbone_only(run: Run) -> tuple[str, str, dict[str, Any]]:
    """Seed 001's table: CUDA AOTI exports only the backbone; the whole model (postprocess included) does not run."""
    model = run.models[0] if run.models else "yolo26n"
    plain = _pick(run, "aoti", model)
    if not run.on_cuda:
        return "needs_cuda", (f"No CUDA device in this run; on CPU plain AOT Inductor of the whole {model} (postprocess "
                              f"included): {_state(plain)}."), {}
    et = _pick(run, "et_cuda", model)
    lowered = et is not None and et.prepare is not None and et.prepare.ok
    load = f" (loaded {plain.run.details.get('aoti_load')})" if plain is not None and plain.run is not None else ""
    evidence = (f"{int(bool(et and et.correct)) + int(bool(plain and plain.correct))} of 2 CUDA AOT Inductor routes ran "
                f"the whole {model} at {run.imgsz} px and matched eager: ExecuTorch CUDA: "
                f"{'lowered; ' + _state(et) if lowered else _state(et)}; plain AOT Inductor: {_state(plain)}{load}")
    data = {"et_cuda": _state(et), "aoti": _state(plain), "et_cuda_lowered": lowered}
    if et is None or (et.prepare is None and not et.ok):
        return "error", f"the et_cuda path did not run: {evidence}", data
    if et.correct:
        return "refuted", evidence, data
    if lowered and et.final.status == "skipped":
        return "partly", evidence + " — the whole model lowers through ExecuTorch's CUDA back-end; this runtime " \
            "cannot run it", data
    if plain is not None and plain.correct:
        return "partly", evidence + " — ExecuTorch's CUDA back-end fails on the whole model (holds), plain AOT " \
            "Inductor runs it end to end (the limitation is not AOTI's)", data
    return "confirmed", evidence, data


def judge_recommend_xnnpack(run: Run) -> tuple[str, str, dict[str, Any]]:
    """Seed 001's conclusion: with ExecuTorch, use XNNPACK; its CUDA back-end is unsuitable for YOLO26."""
    model = run.models[0] if run.models else "yolo26n"
    xnn, et = _pick(run, "et_xnnpack", model), _pick(run, "et_cuda", model)
    ok_models = sorted({r.case.model for r in run.rows if r.case.backend == "et_xnnpack" and r.case.timed and r.correct},
                       key=lambda m: yolo.SCALES.index(yolo.scale_of(m)))
    tried = sorted({r.case.model for r in run.rows if r.case.backend == "et_xnnpack" and r.case.timed},
                   key=lambda m: yolo.SCALES.index(yolo.scale_of(m)))
    xnn_text = f"{len(ok_models)} of {len(tried)} sizes ran the whole model on XNNPACK and matched eager ({', '.join(tried)})"
    if xnn is None:
        return "error", "et_xnnpack was not among the back-ends", {}
    if not run.on_cuda:
        return "needs_cuda", f"No CUDA device in this run for ExecuTorch's CUDA back-end; on CPU {xnn_text}.", {}
    evidence = f"{xnn_text}; ExecuTorch CUDA on {model}: {_state(et)}"
    if not ok_models:
        return "refuted", evidence, {}
    if et is not None and et.correct:
        faster = et.median_ms is not None and xnn.median_ms is not None and et.median_ms < xnn.median_ms
        return "partly", evidence + (f" — and it is faster ({_ms(et.median_ms)} vs {_ms(xnn.median_ms)})" if faster
                                     else ""), {}
    return "confirmed", evidence, {}


def judge_xnnpack_all_variants(run: Run) -> tuple[str, str, dict[str, Any]]:
    """Seed 000: XNNPACK has full model support, all 25 variants (5 tasks × 5 sizes), postprocessing included."""
    rows = run.task_rows
    if not rows:
        return "error", "no task variant was checked (tasks or task_models empty)", {}
    good = [r for r in rows if r.correct]
    bad = {f"{r.case.task}/{r.case.model}": _state(r) for r in rows if not r.correct}
    tasks = sorted({r.case.task for r in rows}, key=TASKS.index)
    evidence = (f"{len(good)} of {len(rows)} YOLO26 variants tried lowered to XNNPACK, ran in executorch.runtime and "
                f"matched eager ({len(tasks)} tasks: {', '.join(tasks)}; sizes "
                f"{', '.join(sorted({r.case.model for r in rows}))}; {rows[0].case.imgsz} px)"
                + (f"; failing: {bad}" if bad else "") + ("" if len(rows) >= 25 else
                                                         "; the full profile tries all 25"))
    data = {"tried": len(rows), "correct": len(good), "failing": bad}
    if len(good) == len(rows):
        return "confirmed", evidence, data
    return ("partly" if good else "refuted"), evidence, data


def judge_torch_compile_alternative(run: Run) -> tuple[str, str, dict[str, Any]]:
    """Seed 000: explore torch.compile with the CUDA back-end as an alternative to ExecuTorch."""
    model = run.models[0] if run.models else "yolo26n"
    modes = {b: _pick(run, b, model) for b in ("compile", "compile_cudagraphs")}
    eager = _pick(run, "eager", model, run.device)
    if not run.on_cuda:
        cpu = modes["compile"]
        part = (f"torch.compile (default) of the whole {model}: {_state(cpu)}, {_ms(cpu.median_ms)} vs eager "
                f"{_ms(eager.median_ms if eager else None)}" if cpu is not None and cpu.ok else
                f"torch.compile: {_state(cpu)}" if cpu is not None else
                "torch.compile was not among this CPU run's back-ends (the full profile has it)")
        return "needs_cuda", f"No CUDA device in this run; on CPU {part}.", {}
    parts, data = [], {}
    for backend, row in modes.items():
        speed = (f", {_ms(row.median_ms)} = {eager.median_ms / row.median_ms:.2f}× eager fp32's {_ms(eager.median_ms)}, "
                 f"first call {row.run.value['first_call_s']:.0f} s" if row and row.correct and eager and eager.median_ms
                 else "")
        parts.append(f"{backend}: {_state(row)}{speed}")
        data[backend] = {"state": _state(row), "median_ms": row.median_ms if row else None}
    working = [b for b, r in modes.items() if r is not None and r.correct]
    evidence = f"{len(working)} of 2 torch.compile modes ran the whole {model} on CUDA and matched eager: " + "; ".join(parts)
    if working:
        return "confirmed", evidence, data
    if all(r is None for r in modes.values()):
        return "error", "neither compile mode was among the back-ends", data
    return "refuted", evidence, data


def judge_onnxruntime(run: Run) -> tuple[str, str, dict[str, Any]]:
    """Seed 001: ONNX Runtime runs the full model with flexible (dynamic) shapes."""
    model = run.models[0] if run.models else "yolo26n"
    row = _pick(run, "onnxruntime", model, "cpu")
    if row is None:
        return "error", "onnxruntime was not among the back-ends", {}
    if row.final.status == "skipped":
        return "error", f"ONNX Runtime did not run here: {row.final.error}", {}
    dyn = run.onnx_dynamic
    dyn_rows = dyn.value if dyn is not None and dyn.ok else []
    dyn_ok = bool(dyn_rows) and all(r["correct"] for r in dyn_rows)
    dyn_text = (f"dynamic H/W program ({dynamic_shapes.RECOMMENDED} spec): " +
                (", ".join(f"{r['size']} px {'matched' if r['correct'] else 'differs'}" for r in dyn_rows) if dyn_rows
                 else (f"{dyn.status}: {dyn.error[:140]}" if dyn is not None else "not run")))
    evidence = (f"{int(row.correct) + int(dyn_ok)} of 2: ONNX Runtime (CPU EP) on the whole {model} at {row.case.imgsz} "
                f"px: {_state(row)}, {_ms(row.median_ms)}; {dyn_text}")
    data = {"static": _state(row), "dynamic": dyn_rows}
    if row.correct and dyn_ok:
        return "confirmed", evidence, data
    return ("partly" if row.correct or dyn_ok else "refuted"), evidence, data


def _ratio_band(table: dict[str, tuple[float, float]], small: str, big: str) -> tuple[float, float]:
    """The range of big/small latency ratios the seed's two ranges allow."""
    (lo_a, hi_a), (lo_b, hi_b) = table[small], table[big]
    return lo_b / hi_a, hi_b / lo_a


_CPU_ON_CUDA = ("; on a CUDA run the CPU rows are timed while other steps (and notebooks) compile beside them: "
                "the CPU run is the cleaner measurement")


def judge_xnnpack_vs_eager(run: Run) -> tuple[str, str, dict[str, Any]]:
    """Seed 000: XNNPACK gives good CPU performance (15–20 ms for yolo26n at 640 on the seed's CPU): judged as
    XNNPACK vs eager PyTorch on the same CPU, the part that transfers across machines."""
    pairs = []
    for model in sorted({r.case.model for r in run.rows}, key=lambda m: yolo.SCALES.index(yolo.scale_of(m))):
        xnn, eager = _pick(run, "et_xnnpack", model), _pick(run, "eager", model, "cpu")
        if xnn and eager and xnn.correct and xnn.median_ms and eager.median_ms:
            pairs.append((model, xnn.median_ms, eager.median_ms, xnn.case.imgsz))
    if not pairs:
        first = _pick(run, "et_xnnpack", run.models[0]) if run.models else None
        return "error", f"no XNNPACK/eager CPU pair was timed: XNNPACK {_state(first)}", {}
    cpu = env._cpu_name()
    text = "; ".join(f"{m}: XNNPACK {_ms(x)} vs eager {_ms(e)} ({x / e:.2f}×)" for m, x, e, _ in pairs)
    faster = [p for p in pairs if p[1] < p[2]]
    evidence = (f"{len(faster)} of {len(pairs)} sizes faster on XNNPACK than eager PyTorch fp32 on the same CPU at "
                f"{pairs[0][3]} px: {text} ({cpu}, {os.cpu_count()} cores); the seed's 15–20 ms is yolo26n at 640 px "
                f"on an Intel Core i7, not comparable in absolute terms{_CPU_ON_CUDA if run.on_cuda else ''}")
    data = {"pairs": [{"model": m, "xnnpack_ms": x, "eager_ms": e, "imgsz": s} for m, x, e, s in pairs]}
    if len(faster) == len(pairs):
        return "confirmed", evidence, data
    return ("partly" if faster else "refuted"), evidence, data


def judge_xnnpack_scaling(run: Run) -> tuple[str, str, dict[str, Any]]:
    """Seed 001's XNNPACK column: latency grows yolo26n ~15–20 … yolo26x ~200–250 ms; judged by the growth ratios
    between the sizes measured, against the ratios the seed's ranges allow."""
    timed = sorted((r for r in run.rows if r.case.backend == "et_xnnpack" and r.case.timed and r.case.task == "detect"
                    and r.correct and r.median_ms), key=lambda r: yolo.SCALES.index(yolo.scale_of(r.case.model)))
    if len(timed) < 2:
        return "error", (f"{len(timed)} size(s) timed on XNNPACK: growth with size needs two (this profile's models: "
                         f"{', '.join(run.models)}; the full profile times n…x)"), {}
    checks = []
    for a, b in zip(timed, timed[1:]):
        sa, sb = yolo.scale_of(a.case.model), yolo.scale_of(b.case.model)
        lo, hi = _ratio_band(SEED_LATENCY_MS["xnnpack_i7"], sa, sb)
        ratio = b.median_ms / a.median_ms
        checks.append({"from": a.case.model, "to": b.case.model, "ratio": round(ratio, 2), "seed_band": [round(lo, 2),
                       round(hi, 2)], "inside": lo <= ratio <= hi})
    inside = [c for c in checks if c["inside"]]
    evidence = (f"{len(inside)} of {len(checks)} size steps grow as the seed's XNNPACK column allows: " +
                "; ".join(f"{c['from']}→{c['to']} ×{c['ratio']} (seed ×{c['seed_band'][0]}–{c['seed_band'][1]})"
                          for c in checks) +
                f"; measured at {timed[0].case.imgsz} px on this CPU, the seed's at 640 px on an Intel Core i7"
                + (_CPU_ON_CUDA if run.on_cuda else ""))
    if len(inside) == len(checks):
        return "confirmed", evidence, {"steps": checks}
    return ("partly" if inside else "refuted"), evidence, {"steps": checks}


def judge_gpu_latency(run: Run) -> tuple[str, str, dict[str, Any]]:
    """Seed 001's GPU columns: TensorRT ~1–2 … 12–18 ms, hybrid CUDA (backbone only) ~2–3 … 18–25 ms on an A100.
    Judged by whether a torch-native CUDA path running the whole model reaches the band credited only to TensorRT."""
    if not run.on_cuda:
        best = [r for r in run.rows if r.case.device == "cpu" and r.case.timed and r.correct and r.median_ms]
        fastest = min(best, key=lambda r: r.median_ms) if best else None
        return "needs_cuda", ("No CUDA device in this run; on CPU the fastest correct path was "
                              f"{_label(fastest) + ' ' + _ms(fastest.median_ms) if fastest else 'none'}."), {}
    steps = []
    for model in run.models:
        scale = yolo.scale_of(model)
        native = sorted((r for r in run.rows if r.case.model == model and r.case.device.startswith("cuda")
                         and r.case.backend in TORCH_NATIVE_CUDA and r.case.timed and r.correct and r.median_ms),
                        key=lambda r: r.median_ms)
        trt = _pick(run, "tensorrt", model)
        if not native:
            continue
        lo, hi = SEED_LATENCY_MS["tensorrt_a100"][scale]
        steps.append({"model": model, "path": _label(native[0]), "ms": round(native[0].median_ms, 3),
                      "seed_tensorrt": [lo, hi], "seed_hybrid": list(SEED_LATENCY_MS["hybrid_cuda_a100"][scale]),
                      "reaches": native[0].median_ms <= hi,
                      "tensorrt_ms": trt.median_ms if trt is not None and trt.correct else None})
    if not steps:
        return "error", "no torch-native CUDA path ran the whole model correctly", {}
    reach = [s for s in steps if s["reaches"]]
    device = env.fingerprint()["device"]
    text = "; ".join(f"{s['model']}: {s['path']} {s['ms']:.3g} ms (seed: TensorRT {s['seed_tensorrt'][0]:g}–"
                     f"{s['seed_tensorrt'][1]:g}, hybrid {s['seed_hybrid'][0]:g}–{s['seed_hybrid'][1]:g} ms)" for s in steps)
    trt_text = "; TensorRT measured here: " + ", ".join(f"{s['model']} {_ms(s['tensorrt_ms'])}" for s in steps) \
        if any(s["tensorrt_ms"] for s in steps) else "; TensorRT is not installed here"
    evidence = (f"{len(reach)} of {len(steps)} sizes: a torch-native CUDA path running the whole model (postprocess "
                f"included) is within the seed's TensorRT figure: {text}{trt_text}. Measured on {device} at "
                f"{run.imgsz} px; the seed's figures are an A100's (an H100 is a faster GPU), so only the ordering "
                "transfers")
    data = {"steps": steps}
    if not reach:
        return "confirmed", evidence, data
    return ("refuted" if len(reach) == len(steps) else "partly"), evidence, data


JUDGES: dict[str, Callable[[Run], tuple[str, str, dict[str, Any]]]] = {
    "deployment_paths.cuda_aoti_backbone_only": judge_cuda_aoti_backbone_only,
    "deployment_paths.recommend_xnnpack": judge_recommend_xnnpack,
    "deployment_paths.xnnpack_all_variants": judge_xnnpack_all_variants,
    "deployment_paths.torch_compile_alternative": judge_torch_compile_alternative,
    "deployment_paths.onnxruntime_full_dynamic": judge_onnxruntime,
    "deployment_paths.gpu_latency": judge_gpu_latency,
    "deployment_paths.xnnpack_vs_eager": judge_xnnpack_vs_eager,
    "deployment_paths.xnnpack_scaling": judge_xnnpack_scaling,
}


def judge(found: findings.Findings, run: Run) -> pd.DataFrame:
    """Record every claim's verdict from the run; a judge that breaks records `error` for its claim only."""
    for claim_id, fn in JUDGES.items():
        try:
            verdict, evidence, data = fn(run)
        except Exception as exc:  # one broken judge must not hide the other verdicts
            verdict, evidence, data = "error", f"judging failed: {type(exc).__name__}: {exc}", {}
        found.verdict(claim_id, verdict, evidence, **data)
    return found.frame()


ALL_MODELS = [f"yolo26{s}" for s in yolo.SCALES]


def _models_check(value: Any) -> str | None:
    return catalog.one_of(*(f"yolo26{s}" for s in yolo.SCALES))(value)


catalog.register(catalog.Investigation(
    name=NAME,
    title="Deployment paths: which back-end runs the whole YOLO26 correctly here, and how fast",
    seeds=SEEDS,
    profiles={
        # quick (the notebook's defaults): CUDA yolo26n and yolo26s at 640 px with every back-end and the XNNPACK
        # check of every task; CPU yolo26n at 320 px without torch.compile, the task check on detect and segment.
        "quick": {},
        "full": {"models": ALL_MODELS, "compile_models": ALL_MODELS, "cpu_models": ALL_MODELS,
                 "cpu_compile_models": ["yolo26n", "yolo26s"], "cpu_imgsz": 640, "cpu_backends": list(BACKENDS),
                 "cpu_tasks": list(TASKS), "task_models": ALL_MODELS, "min_run_time": 1.0, "step_timeout": 1500.0},
    },
    checks={
        "models": _models_check, "compile_models": _models_check, "cpu_models": _models_check,
        "cpu_compile_models": _models_check, "task_models": _models_check,
        "imgsz": catalog.positive_multiple_of(32), "cpu_imgsz": catalog.positive_multiple_of(32),
        "task_imgsz": catalog.positive_multiple_of(32),
        "backends": catalog.one_of(*BACKENDS), "cpu_backends": catalog.one_of(*BACKENDS),
        "cpu_tasks": catalog.one_of(*TASKS), "dtypes": catalog.one_of(*DTYPES), "tasks": catalog.one_of(*TASKS),
        "device": catalog.one_of("auto", "cpu", "cuda"),
        "workers": lambda v: None if v >= 0 else "must be 0 (automatic) or more",
    },
    **({"judges": JUDGES} if "judges" in catalog.Investigation.__dataclass_fields__ else {}),
))
