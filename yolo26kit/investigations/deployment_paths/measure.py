"""Deployment paths: the cases, the isolated steps that build, compile, lower, load, run and time them, and the
comparison with eager."""

from __future__ import annotations

import math
import os
import resource
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import torch

from ...conclusion import clip
from ...bench import aoti_package as aoti, detections, dynamic_export, isolate, live, timing, yolo
from ... import env, findings, verdicts
from ...paths import process_temp_dir
from ... import backends as registry
from ...backends import executorch_cuda, ultralytics_export
from ...backends import onnxruntime as ort_backend
from ...backends import installed  # looked up here by skip_reason: tests replace it
from ...backends.executorch_cuda_releases import records as release_records

NAME = "deployment_paths"
SEEDS = ("000_60ebd1ee51d51957.txt", "001_fda80f2472077657.txt")
BACKENDS = ("eager", "compile", "compile_cudagraphs", "aoti", "et_xnnpack", "et_cuda", "onnxruntime", "tensorrt")
REGISTRY_NAMES = {"et_xnnpack": "executorch_xnnpack", "et_cuda": "executorch_cuda"}  # BACKENDS → yolo26kit.backends


def backend_of(name: str) -> registry.Backend:
    """The registered back-end (yolo26kit.backends) that one of BACKENDS names."""
    if name not in BACKENDS:
        raise ValueError(f"unknown back-end {name!r}; choose from {BACKENDS}")
    return registry.get(REGISTRY_NAMES.get(name, name))


CUDA_ONLY = tuple(b for b in BACKENDS if backend_of(b).needs_cuda)  # compile_cudagraphs, et_cuda, tensorrt
COMPILE_HEAVY = ("compile", "compile_cudagraphs", "aoti", "et_cuda", "tensorrt")  # only for `compile_models`
TORCH_NATIVE_CUDA = ("eager", "compile", "compile_cudagraphs", "aoti", "et_cuda")
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
# A row is correct when at least this share of eager fp32's detections is found in its output (same class, box
# within 1 px, score within 1e-3: detections.compare), whatever its precision; below it the row "ran, differs".
MATCH_RATE_MIN = detections.MIN_MATCH_RATE
KIT_EXPORT, ULTRALYTICS_EXPORTER = "kit export", "ultralytics exporter"  # Case.export_path
ULTRALYTICS_FORMATS = {b: ultralytics_export.FORMATS[REGISTRY_NAMES.get(b, b)]  # back-end → YOLO(...).export(format=)
                       for b in ("et_xnnpack", "onnxruntime")}
TASKS = ("detect", "segment", "pose", "obb", "classify")
TASK_MODELS = {"segment": ("SegmentationModel", "-seg"), "pose": ("PoseModel", "-pose"),
               "obb": ("OBBModel", "-obb"), "classify": ("ClassificationModel", "-cls")}
ONNX_DYNAMIC_SIZES = (160, 224, 320)  # the dynamic ONNX program runs at each (dynamic_export.RECOMMENDED)
PRELOAD = ("yolo26kit.investigations.deployment_paths", "ultralytics.nn.tasks", "executorch.exir",
           "executorch.runtime", "executorch.backends.xnnpack.partition.xnnpack_partitioner")

def _seed_latency_ms() -> dict[str, dict[str, tuple[float, float]]]:
    """Seed 001's benchmark table (640x640; XNNPACK on an Intel Core i7, hybrid CUDA and TensorRT on an NVIDIA A100)
    by scale, read from the ledger's bands (data/claims/deployment_paths.json): one source for the judges and the
    `seed_vs_measured` table, where the figures are shown beside the measured ones, never as "expected"."""
    from ... import findings

    xnn = findings.ledger_entry(f"{NAME}.xnnpack_scaling")["band"]["per_model_ms"]
    gpu = findings.ledger_entry(f"{NAME}.gpu_latency")["band"]["per_model_ms"]
    by_scale = lambda table: {yolo.scale_of(m): (float(lo), float(hi)) for m, (lo, hi) in table.items()}  # noqa: E731
    return {"xnnpack_i7": by_scale(xnn), "hybrid_cuda_a100": by_scale(gpu["hybrid executorch-cuda"]),
            "tensorrt_a100": by_scale(gpu["tensorrt"])}


SEED_LATENCY_MS = _seed_latency_ms()


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
    # KIT_EXPORT: the kit's own export of the end-to-end model (torch.export, then the back-end's lowering or
    # torch.onnx); ULTRALYTICS_EXPORTER: YOLO(...).export(format=...) as shipped, compared with eager of the same
    # model as that exporter leaves it (its own head settings: see step_ultralytics_export)
    export_path: str = KIT_EXPORT

    @property
    def tag(self) -> str:
        extra = f"-{self.provider.replace('ExecutionProvider', '').lower()}" if self.provider else ""
        ux = "-ultralytics" if self.export_path == ULTRALYTICS_EXPORTER else ""
        return f"{self.task}-{self.model}-{self.backend}{extra}{ux}-{self.dtype}-{self.device}-{self.imgsz}"

    @property
    def key(self) -> tuple:
        return (self.task, self.model, self.backend, self.provider, self.dtype, self.device, self.imgsz,
                self.export_path)

    @property
    def reference(self) -> tuple:
        """The key of the eager fp32 case on the same device that this case is compared with."""
        return (self.task, self.model, "eager", "", "fp32", self.device, self.imgsz, KIT_EXPORT)


def build_task(task: str, model: str, seed: int = 0) -> torch.nn.Module:
    """A fused, export-mode, end-to-end YOLO26 of any task with the live weights (live.liven, seeded)."""
    if task == "detect":
        return live.liven(yolo.build(model, seed=seed), seed)
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
    return live.liven(net, seed).requires_grad_(False)


def step_variant_modules() -> dict[str, list[str]]:
    """The module types each of the 25 YOLO26 variants (task/model) is built from, read from ultralytics' own model
    parser on the meta device (no weights, no forward): which variants a tried one stands for."""
    import copy

    yolo.offline_ultralytics()
    from ultralytics.nn.tasks import parse_model, yaml_model_load

    found = {}
    for task in TASKS:
        suffix = TASK_MODELS[task][1] if task in TASK_MODELS else ""
        for scale in yolo.SCALES:
            with torch.device("meta"):
                net, _ = parse_model(copy.deepcopy(yaml_model_load(f"yolo26{scale}{suffix}.yaml")), ch=3, verbose=False)
            found[f"{task}/yolo26{scale}"] = sorted({type(m).__name__ for m in net.modules()})
    return found


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

def step_prepare(case: Case) -> dict[str, Any]:
    """The back-end's ahead-of-time step (yolo26kit.backends: AOTI package, .pte lowering or ONNX export); returns
    the artifact path, its size and whether the lowering came from the run's compile cache."""
    backend = backend_of(case.backend)
    if not backend.has_prepare:
        raise ValueError(f"{case.backend} has no ahead-of-time step")
    with torch.no_grad():
        model, x = build_model(case), example(case)
    # et_cuda: the back-end's default options (max-autotune over every convolution: many minutes); only sizes named
    # in `et_cuda_models` get here. Its own folder: the weights go to a .ptd beside the .pte; successes are cached.
    facts = backend.prepare(model, (x,), case.workdir, case.tag)
    return {k: facts[k] for k in ("artifact", "bytes", "cached", "backend_options") if k in facts}


def _rss_kib() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def case_runner(case: Case, artifact: str) -> tuple[Callable[[], Any], dict[str, Any]]:
    """A zero-argument call that runs the case once, and facts about how it was set up (yolo26kit.backends' load)."""
    backend = backend_of(case.backend)
    if not backend.has_prepare:  # eager, torch.compile, Torch-TensorRT: built here, compiled on load
        loaded = backend.load(build_model(case), (example(case),))
    else:  # ExecuTorch and ONNX Runtime take CPU inputs (cpu_inputs_at_load), AOTI those of the case's device
        inputs = example(replace(case, device="cpu") if backend.cpu_inputs_at_load else case)
        options = {"provider": case.provider} if case.provider else {}
        loaded = backend.load(artifact, (inputs,), **options)
    return loaded.fn, loaded.info


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
    fn, info = case_runner(case, artifact)
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


# --- ultralytics' own exporter (what users ship) --------------------------------------------------

RAW_REL_TOL = 1e-3  # raw head outputs (no top-k) match when max |Δ| ≤ this × the largest |eager| value


def ultralytics_model(case: Case) -> Any:
    """YOLO(f"yolo26{scale}.yaml") as a user builds it (offline, random weights, seeded), conv weights redrawn
    He-normal (live.liven) so its scores spread like the kit's models'."""
    yolo.offline_ultralytics()
    from ultralytics import YOLO

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(case.seed)
        net = YOLO(f"yolo26{yolo.scale_of(case.model)}.yaml")
    live.liven(net.model, case.seed)
    return net


def step_ultralytics_export(case: Case) -> dict[str, Any]:
    """YOLO(...).export(format=...) with the exporter's defaults (only imgsz and device given), in a folder of the
    case's own (backends.ultralytics_export). A package the exporter needs that is not installed, or a network it
    needs, gives {"skipped": why}."""
    folder = Path(case.workdir) / case.tag
    folder.mkdir(parents=True, exist_ok=True)
    os.chdir(folder)  # the model is built where the exporter then runs (this child)
    net = ultralytics_model(case)
    return registry.get("ultralytics_export").prepare(net, (), case.workdir, case.tag,
                                                      format=ULTRALYTICS_FORMATS[case.backend], imgsz=case.imgsz,
                                                      device="cpu")


def ultralytics_reference(case: Case, end2end: bool | None) -> list[torch.Tensor]:
    """Eager output of the same model as the exporter leaves it: fused, eval, export mode, its end2end setting."""
    net = ultralytics_model(case).model
    if end2end is not None and hasattr(net, "end2end"):
        net.end2end = end2end
    net = net.fuse().eval()
    for module in net.modules():
        if hasattr(module, "export"):
            module.export = True
    with torch.no_grad():
        return _outputs(net(example(replace(case, device="cpu"))))


def step_ultralytics_run(case: Case, artifact: str, end2end: bool | None) -> dict[str, Any]:
    """Load and time the exporter's program (step_run), and compute eager's output of the same model beside it."""
    value = step_run(case, artifact)
    value["reference"] = ultralytics_reference(case, end2end)
    return value


def compare_raw(outputs: list[torch.Tensor] | None, reference: list[torch.Tensor] | None) -> dict[str, Any]:
    """The exporter's program against eager of the same model: detections through `compare` when its output is
    [1, k, 6] (top-k kept), else the raw head output [1, 4 + classes, anchors] element by element."""
    if not outputs or not reference:
        return {}
    out, ref = outputs[0], reference[0]
    shape = list(out.shape)
    if out.ndim == 3 and out.shape[-1] == 6:
        return {**compare("detect", outputs, reference), "output_shape": shape, "postprocess_in_program": True}
    if out.shape != ref.shape:
        return {"match_rate": 0.0, "exact": False, "close": False, "output_shape": shape,
                "postprocess_in_program": False}
    max_abs = (out - ref).abs().max().item()
    return {"max_abs": max_abs, "exact": torch.equal(out, ref), "output_shape": shape, "postprocess_in_program": False,
            "close": max_abs <= RAW_REL_TOL * max(1.0, ref.abs().max().item()),
            "match_rate": None}


SIDE_BY_SIDE_ROUNDS = verdicts.MIN_ROUNDS  # rounds of the side-by-side CPU timing at least; each times every case


def growth_band(small: str, big: str) -> tuple[float, float]:
    """The big/small latency ratios the seed's XNNPACK per-size ranges allow (xnnpack_scaling's ledger band)."""
    table = findings.ledger_entry("deployment_paths.xnnpack_scaling")["band"]["per_model_ms"]
    (lo_a, hi_a), (lo_b, hi_b) = table[small], table[big]
    return lo_b / hi_a, hi_b / lo_a


def _decided(medians: dict[str, list[float]], bands: list[tuple[str, str, float, float]]) -> bool:
    """Every judged ratio (numerator tag, denominator tag, band) decided by the rounds rule (verdicts.band_decision)."""
    return all(verdicts.band_decision(timing.round_ratios(medians[a], medians[b]), lo, hi,
                                      min_rounds=verdicts.MIN_ROUNDS) is not None for a, b, lo, hi in bands)


def step_side_by_side(cases: list[tuple[Case, str]], bands: list[tuple[str, str, float, float]] = (),
                      min_run_time: float = 0.2, rounds: int = 0) -> dict[str, Any]:
    """Time CPU cases in one process, in turn, round after round until every ratio in `bands` (numerator tag,
    denominator tag, the seed's band) is decided by the rounds rule, at least verdicts.MIN_ROUNDS and at most
    verdicts.MAX_ROUNDS rounds (`rounds` > 0: exactly that many): per case tag the median ms of each round
    (`medians`), the CPU they ran on and torch's threads, and how many cores other processes kept busy meanwhile
    (`others_busy_cores`, counted while the rounds held the CPU lock, on the cores the runner keeps for CPU timings
    where it keeps some: on a GPU runner the other notebooks compile beside this step, on their own cores).

    The rows' own timings come from separate processes minutes apart; on a shared or busy machine the speed drifts
    between them (seen: the same yolo26n→yolo26s XNNPACK ratio measured 2.0 in one run and 3.4 in the next).
    Ratios taken round by round here see the same machine state on both sides.
    """
    torch.set_grad_enabled(False)  # this child only
    fns = {case.tag: case_runner(case, artifact)[0] for case, artifact in cases}
    cores = timing.parse_cores(os.environ.get(timing.MEASURING_CORES_ENV, ""))
    medians: dict[str, list[float]] = {tag: [] for tag in fns}
    with timing.others_busy_while_measuring() as load:
        while True:
            done = len(next(iter(medians.values()), []))
            timed = timing.measure_rounds(fns, "cpu", 1, warmup=0 if done else 1, min_run_time=min_run_time)
            for tag, t in timed.items():
                medians[tag].append(t.round_medians_ms[0])
            done += 1
            if (done >= rounds if rounds else
                    done >= verdicts.MAX_ROUNDS or (done >= verdicts.MIN_ROUNDS and _decided(medians, list(bands)))):
                break
    return {"medians": medians, "cpu": env.cpu_name(), "threads": torch.get_num_threads(),
            "measuring_cores": cores, **load}


def judged_bands(picked: list[Row]) -> list[tuple[str, str, float, float]]:
    """The ratios the CPU claims judge, with their bands: XNNPACK over eager fp32 for the smallest size
    (xnnpack_vs_eager) and XNNPACK's growth between neighbouring sizes (xnnpack_scaling)."""
    xnn = sorted((r for r in picked if r.case.backend == "et_xnnpack"), key=lambda r: yolo.SCALES.index(
        yolo.scale_of(r.case.model)))
    eager = {r.case.model: r for r in picked if r.case.backend == "eager"}
    lo, hi = findings.band_of("deployment_paths.xnnpack_vs_eager")
    bands = [(x.case.tag, eager[x.case.model].case.tag, lo, hi) for x in xnn if x.case.model in eager][:1]
    return bands + [(b.case.tag, a.case.tag, *growth_band(a.case.model, b.case.model)) for a, b in zip(xnn, xnn[1:])]


def side_by_side(rows: list[Row], timeout: float) -> isolate.Outcome | None:
    """The timed, correct CPU rows of XNNPACK and eager fp32 (detect) timed again side by side in one child, until
    the rounds decide the ratios the claims judge; None when fewer than two such rows exist."""
    picked = [r for r in rows if r.case.device == "cpu" and r.case.timed and r.case.task == "detect" and r.correct
              and r.case.export_path == KIT_EXPORT
              and (r.case.backend == "et_xnnpack" or (r.case.backend == "eager" and r.case.dtype == "fp32"))]
    if len(picked) < 2:
        return None
    pairs = [(r.case, r.prepare.value["artifact"] if r.prepare else "") for r in picked]
    return isolate.run_step(step_side_by_side, pairs, judged_bands(picked), timeout=timeout,
                            step="CPU rows side by side", phase="measure")


ONNX_DYNAMIC_SPECS = {"stock": "derived", "kit-modified": dynamic_export.RECOMMENDED}  # model_variant → spec


def step_onnx_dynamic(model: str, sizes: tuple[int, ...], seed: int = 0) -> list[dict[str, Any]]:
    """ONNX Runtime (CPU EP) with dynamic H/W, for the stock model (dynamic_export's `derived` spec: torch's suggested
    32*Dim, no model change) and the kit-modified one (its recommended spec): each exported once, run at every size
    and compared with eager of that model. A failed export or conversion is a row with its error, not a failed step."""
    import onnxruntime as ort

    rows: list[dict[str, Any]] = []
    for variant, spec in ONNX_DYNAMIC_SPECS.items():
        exported = dynamic_export.export_spec(spec, model=model, min_size=min(sizes), max_size=max(sizes), seed=seed)
        if not exported.ok:
            rows.append({"model_variant": variant, "spec": spec, "stage": "torch.export", "correct": False,
                         "error": clip(exported.error, 300)})
            continue
        try:
            with tempfile.TemporaryDirectory(prefix="yolo26kit-onnx-dynamic-") as folder:  # the session holds the model
                path = os.path.join(folder, f"{variant}.onnx")
                ort_backend.export_onnx(exported.program, path)  # the run's compile cache keeps the conversion
                session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        except Exception as exc:  # the conversion's failure is the finding for this variant
            rows.append({"model_variant": variant, "spec": spec, "stage": "torch.onnx / onnxruntime load",
                         "correct": False, "error": f"{type(exc).__name__}: {clip(exc, 300)}"})
            continue
        net = live.build_model(model, seed, "cpu")
        for size in sizes:
            x = live.image(1, size, size)
            with torch.no_grad():
                ref = net(x)
            try:
                out = torch.from_numpy(session.run(None, {session.get_inputs()[0].name: x.numpy()})[0])
            except Exception as exc:
                rows.append({"model_variant": variant, "spec": spec, "size": size, "stage": "onnxruntime run",
                             "correct": False, "error": f"{type(exc).__name__}: {clip(exc, 300)}"})
                continue
            delta = detections.compare(out, ref)
            rows.append({"model_variant": variant, "spec": spec, "size": size, "matched": delta.get("match_rate"),
                         "score_max_abs": delta.get("score_max_abs"), "correct": correct(delta)})
    return rows + ultralytics_dynamic_onnx(model, sizes, seed)


ULTRALYTICS_DYNAMIC = "ultralytics exporter, dynamic=True"


def ultralytics_dynamic_onnx(model: str, sizes: tuple[int, ...], seed: int = 0) -> list[dict[str, Any]]:
    """The stock model through ultralytics' exporter with dynamic=True (seed 001's `model.export(format="onnx")`
    plus the exporter's own switch for flexible shapes), run by ONNX Runtime at each size and compared with eager of
    the same model. A package or network the exporter needs makes one row marked `skipped`."""
    import onnxruntime as ort

    case = Case(model=model, backend="onnxruntime", device="cpu", imgsz=max(sizes), seed=seed,
                workdir=process_temp_dir("yolo26kit-onnx-dynamic-ux-"), provider="CPUExecutionProvider",
                export_path=ULTRALYTICS_EXPORTER)
    base = {"model_variant": "stock", "spec": ULTRALYTICS_DYNAMIC}
    os.chdir(case.workdir)  # the exporter writes beside the yaml's name (this child only)
    try:
        path = ultralytics_export.export(ultralytics_model(case), case.workdir, "onnx", imgsz=max(sizes),
                                         device="cpu", dynamic=True)
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as exc:
        text = f"{type(exc).__name__}: {clip(exc, 300)}"
        missing = ultralytics_export.is_missing(exc, text)
        return [{**base, "stage": "export", "correct": False, "error": text, **({"skipped": True} if missing else {})}]
    end2end = ultralytics_export.end2end("onnx", path)
    rows = []
    for size in sizes:
        sized = replace(case, imgsz=size)
        try:
            out = session.run(None, {session.get_inputs()[0].name: example(sized).numpy()})
        except Exception as exc:
            rows.append({**base, "size": size, "stage": "onnxruntime run", "correct": False,
                         "error": f"{type(exc).__name__}: {clip(exc, 300)}"})
            continue
        delta = compare_raw([torch.from_numpy(out[0])], ultralytics_reference(sized, end2end))
        rows.append({**base, "size": size, "matched": delta.get("match_rate"), "max_abs": delta.get("max_abs"),
                     "output_shape": "x".join(map(str, delta.get("output_shape", []))), "correct": correct(delta)})
    return rows


# --- comparing ------------------------------------------------------------------------------------

def compare(task: str, outputs: list[torch.Tensor] | None, reference: list[torch.Tensor] | None) -> dict[str, Any]:
    """How far a case's outputs are from eager fp32: detections via detections.compare, class scores via top-5."""
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
    delta = detections.compare(out[..., :6] if out.ndim == 3 else out, ref[..., :6] if ref.ndim == 3 else ref)
    if len(outputs) > 1 and len(reference) > 1 and outputs[1].shape == reference[1].shape:
        delta["aux_max_abs"] = (outputs[1] - reference[1]).abs().max().item()  # e.g. segmentation prototypes
    return delta


def correct(delta: dict[str, Any], dtype: str = "fp32") -> bool:
    """Same detections as eager fp32: at least MATCH_RATE_MIN of them matched (detections.agrees for fp32, which
    also holds the sorted scores within 1e-3). A reduced-precision row is held to the same match rate: sorted scores
    alone say nothing about which boxes and classes came out."""
    if not delta:
        return False
    if dtype == "fp32":
        return detections.agrees(delta)
    if delta.get("exact") or delta.get("close"):
        return True
    return (delta.get("match_rate") or 0.0) >= MATCH_RATE_MIN


def timed_ms(value: Any) -> float | None:
    """A latency that can be used: finite and positive; None otherwise (e.g. a net time that went negative on a busy
    machine, or NaN): such a row reads "could not time", never a ratio."""
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) and value > 0 else None


def label(row: Row) -> str:
    """A row's path in a few words: back-end, provider, precision, and the ultralytics exporter when it made it."""
    c = row.case
    return c.backend + (f" ({c.provider.replace('ExecutionProvider', '')})" if c.provider else "") + \
        (f" {c.dtype}" if c.dtype != "fp32" else "") + (" via ultralytics' exporter"
                                                         if c.export_path == ULTRALYTICS_EXPORTER else "")


# --- planning and running -----------------------------------------------------------------------

ET_CUDA_SKIPPED = ("the back-end's default lowering of the whole model autotunes every convolution (many minutes on a "
                   "data-centre GPU); `et_cuda_models` names the sizes to lower with its defaults (the full profile: "
                   "yolo26n)")


def skip_reason(case: Case, compile_models: list[str], et_cuda_models: tuple[str, ...] | list[str] = ()) -> str:
    """Why a case is not attempted on this run ('' when it is)."""
    if case.export_path == ULTRALYTICS_EXPORTER:
        needs = ultralytics_export.NEEDS.get(ULTRALYTICS_FORMATS.get(case.backend, ""), ("ultralytics",))
        missing = [m for m in needs if not installed(m)]
        return f"not installed: {', '.join(missing)} (needed by ultralytics' exporter or its runtime)" if missing else ""
    if case.backend in CUDA_ONLY and not case.device.startswith("cuda"):
        return "needs a CUDA device"
    if case.backend == "et_cuda" and case.model not in et_cuda_models:
        return ET_CUDA_SKIPPED
    if case.backend in COMPILE_HEAVY and case.model not in compile_models:
        return "compile-heavy back-ends run only for `compile_models` (this profile's are " \
               f"{', '.join(compile_models) or 'none'})"
    if case.backend == "onnxruntime":
        missing = [m for m in backend_of(case.backend).modules if not installed(m)]
        if missing:
            return f"not installed: {', '.join(missing)} (optional; pinned in pyproject.toml, not on the GPU runner)"
        if case.provider not in ort_backend.providers():
            return f"onnxruntime here has no {case.provider} (available: {', '.join(ort_backend.providers())})"
    if case.backend == "tensorrt":
        missing = [m for m in backend_of(case.backend).modules if not installed(m)]
        return f"not installed: {', '.join(missing)} (optional extra)" if missing else ""
    return ""


def plan(models: list[str], compile_models: list[str], imgsz: int, device: str, backends: list[str],
         dtypes: list[str], tasks: list[str], task_models: list[str], task_imgsz: int, seed: int = 0,
         workdir: str = "", min_run_time: float = 0.5, ultralytics_export: bool = True) -> list[Case]:
    """Every case of the run: each model × back-end (+ the eager references they need) and the task variants.

    On a CUDA run the CPU back-ends (et_xnnpack, ONNX Runtime's CPU EP) get an eager fp32 CPU reference row too.
    With `ultralytics_export`, the first model also goes through ultralytics' own exporter for each of those CPU
    back-ends (detect, at the run's input size): what users ship, beside the kit's export.
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
    if ultralytics_export and models:
        for backend in ("et_xnnpack", "onnxruntime"):
            if backend in backends:
                add(replace(base, model=models[0], backend=backend, device="cpu", export_path=ULTRALYTICS_EXPORTER,
                            provider="CPUExecutionProvider" if backend == "onnxruntime" else ""))
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
        """The steady-state median, None when the row did not run or its timing is unusable (timed_ms)."""
        return timed_ms(self.run.value.get("median_ms")) if self.run else None

    @property
    def prepare(self) -> isolate.Outcome | None:
        return next((o for o in self.outcomes if o.step.endswith(":prepare")), None)


# Rough cold seconds of a case on a GPU runner (yolo26n), only to start the longest chains first.
EXPECTED_SECONDS = {"aoti": 150.0, "et_cuda": 70.0, "compile_cudagraphs": 40.0, "et_xnnpack": 30.0,
                    "compile": 20.0, "tensorrt": 60.0, "onnxruntime": 15.0, "eager": 5.0}


def prepare(case: Case, timeout: float) -> isolate.Outcome | None:
    """The case's build step (export / compile / lower, or ultralytics' exporter), None for a back-end without one."""
    if case.export_path == ULTRALYTICS_EXPORTER:
        return isolate.run_step(step_ultralytics_export, case, timeout=timeout, step=f"{case.tag}:prepare",
                                phase="compile")
    if backend_of(case.backend).has_prepare:
        outcome = isolate.run_step(step_prepare, case, timeout=timeout, step=f"{case.tag}:prepare", phase="compile")
        if case.backend == "et_cuda":  # step_prepare lowers with the defaults; a failed step returns no facts to say so
            outcome.details.setdefault("backend_options", executorch_cuda.options_label(executorch_cuda.kit_overrides()))
        return outcome
    return None


def run_case(case: Case, timeout: float, compile_models: list[str], et_cuda_models: list[str] | tuple = (),
             prepared: isolate.Outcome | None = None) -> Row:
    """Run one case's chain of isolated steps (its build step too unless `prepared` is given); never raises for a
    step's own failure."""
    reason = skip_reason(case, compile_models, et_cuda_models)
    if reason:
        return Row(case, [isolate.skipped(case.tag, reason)])
    if case.export_path == ULTRALYTICS_EXPORTER:
        return _run_ultralytics_case(case, timeout, prepared)
    steps: list[isolate.Outcome] = []
    artifact = ""
    if backend_of(case.backend).has_prepare:
        prepared = prepared or prepare(case, timeout)
        steps.append(prepared)
        if not prepared.ok:
            return Row(case, steps)
        artifact = prepared.value["artifact"]
    if case.backend == "et_cuda":
        backends = isolate.run_step(executorch_cuda.runtime_backends, timeout=120, step=f"{case.tag}:backends")
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


def _run_ultralytics_case(case: Case, timeout: float, prepared: isolate.Outcome | None = None) -> Row:
    """ultralytics' exporter in one isolated child (a missing package or network makes the row `skipped`), then the
    program loaded, run and timed beside eager of the same model in another."""
    prepared = prepared or prepare(case, timeout)
    if prepared.ok and "skipped" in prepared.value:
        return Row(case, [isolate.skipped(f"{case.tag}:prepare", prepared.value["skipped"])])
    if not prepared.ok:
        return Row(case, [prepared])
    run = isolate.run_step(step_ultralytics_run, case, prepared.value["artifact"], prepared.value.get("end2end"),
                           timeout=timeout, step=f"{case.tag}:run", phase="measure")
    return Row(case, [prepared, run])


def longest_first(cases: list[Case]) -> list[int]:
    """Case indices, the longest expected chain first (the wall time is set by the last long one to start)."""
    return sorted(range(len(cases)), key=lambda i: -EXPECTED_SECONDS.get(cases[i].backend, 5.0))


def build_all(cases: list[Case], timeout: float, compile_models: list[str], et_cuda_models: list[str] | tuple,
              workers: int, *extra: Callable[[], Any]) -> tuple[dict[int, isolate.Outcome | None], list[Any]]:
    """Every case's build step (by index; skipped cases have none) and the `extra` untimed steps, `workers` at a
    time: the first phase of a CPU run, whose timed runs then follow alone (run_all with `built`)."""
    order = longest_first(cases)
    todo = [i for i in order if not skip_reason(cases[i], compile_models, et_cuda_models)]
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool, timing.sharing_cores(workers):
        others = [pool.submit(fn) for fn in extra]
        built = dict(zip(todo, pool.map(lambda i: prepare(cases[i], timeout), todo)))
        return built, [f.result() for f in others]


def run_all(cases: list[Case], timeout: float, compile_models: list[str], workers: int = 1,
            et_cuda_models: list[str] | tuple = (), built: dict[int, isolate.Outcome | None] | None = None) -> list[Row]:
    """Every case's chain, `workers` chains at a time (longest first), then each compared with its eager reference.

    Chains are independent child processes; their timed parts take the run's device lock (timing.measure), so
    no two measurements overlap, while compiles and lowerings do. With `built` (build_all's), the build steps are
    done and the runs go one after the other, with nothing else running beside a timed one.
    """
    order = longest_first(cases)
    if built is not None:
        workers = 1
    built = built or {}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        done = dict(zip(order, pool.map(lambda i: run_case(cases[i], timeout, compile_models, et_cuda_models,
                                                           built.get(i)), order)))
    rows = [done[i] for i in range(len(cases))]
    refs = {r.case.key: r.run.value["outputs"] for r in rows if r.case.backend == "eager" and r.case.dtype == "fp32"
            and r.run is not None}
    for r in rows:
        if r.run is not None and r.case.export_path == ULTRALYTICS_EXPORTER:
            r.delta = compare_raw(r.run.value["outputs"], r.run.value.get("reference"))
        elif r.run is not None:
            r.delta = compare(r.case.task, r.run.value["outputs"], refs.get(r.case.reference))
    return rows


def task_rows(rows: list[Row], task_models: list[str], task_imgsz: int, tasks: list[str]) -> list[Row]:
    """The rows of the task-variant check (a timed detect row stands in when the sizes coincide)."""
    return [r for r in rows if r.case.backend == "et_xnnpack" and r.case.task in tasks and r.case.export_path == KIT_EXPORT
            and r.case.model in task_models and r.case.imgsz == task_imgsz]


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
    side_by_side: isolate.Outcome | None = None  # the CPU rows timed again in one process (step_side_by_side)
    gpu: str = ""  # the CUDA device's name on a CUDA run (env.fingerprint), "" on a CPU run
    backbone: dict[str, isolate.Outcome] = field(default_factory=dict)  # backbone_parts: graph, split
    variant_modules: isolate.Outcome | None = None  # step_variant_modules: module types of the 25 variants
    known_releases: list[dict[str, Any]] = field(default_factory=release_records)  # later executorch, on CPU
    # the environment the run recorded (its results.json `environment`): what the judges read of the stack and CPU
    environment: dict[str, Any] = field(default_factory=env.fingerprint)

    @property
    def cpu_rounds(self) -> dict[str, Any]:
        """What step_side_by_side measured ({} without that step's result)."""
        ok = self.side_by_side is not None and self.side_by_side.ok and isinstance(self.side_by_side.value, dict)
        return self.side_by_side.value if ok else {}

    @property
    def on_cuda(self) -> bool:
        return self.device.startswith("cuda")
