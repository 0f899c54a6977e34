"""Index dtype: the path steps (each run in an isolated child), the status matrix of variants × paths with each
cell compared with eager, the probes, the legacy-vs-gather equivalence cases, and what the judges read (Results)."""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from ...conclusion import clip
from ... import env
from ...bench import aoti_package as aoti, artifacts, graphs, isolate, timing, yolo
from ...backends import aoti as aoti_backend
from ...backends import executorch_cuda, executorch_cuda_releases, executorch_xnnpack
from ...backends.executorch_cuda_releases import ATEN_CONV, WHOLE_MODEL_SKIP, records
from ...bench.detections import agrees, compare
from . import division
from .model import OPS, PostprocessOnly, Spec, build_inputs, build_module, random_preds

PATHS = ("eager", "export", "aoti", "compile", "et_xnnpack", "et_cuda")
CUDA_ONLY_PATHS = ("et_cuda",)

# Imported once in the step server so each isolated step starts in well under a second.
PRELOAD = ("yolo26kit.investigations.index_dtype.measure", "yolo26kit.investigations.index_dtype.measure_root",
           "yolo26kit.investigations.index_dtype.division",
           "ultralytics.nn.tasks", "executorch.exir", "executorch.runtime",
           "executorch.backends.xnnpack.partition.xnnpack_partitioner")


# --- path steps (run in isolated children) ---------------------------------------------------------------------

def export(spec: Spec) -> torch.export.ExportedProgram:
    """torch.export of the spec's module on its device."""
    with torch.no_grad():
        return torch.export.export(build_module(spec), build_inputs(spec))


def backbone_view_copies(spec: Spec) -> dict[str, Any]:
    """The spec's backbone (raw outputs, static size), exported on the CPU: its view-copy ops before the installed
    view pass and those the pass leaves for ATen fallback kernels (`executorch_cuda.view_copy_fallbacks`)."""
    return executorch_cuda_releases.backbone_view_copies(spec.model, spec.imgsz, spec.variant, spec.nc, spec.seed,
                                                        spec.batch)


def step_eager(spec: Spec) -> dict[str, Any]:
    """Eager output: the reference for every other path."""
    with torch.no_grad():
        return {"output": build_module(spec)(*build_inputs(spec)).cpu()}


def step_export(spec: Spec) -> dict[str, Any]:
    """torch.export, the index-node scan, the exported program's output; saves the program for later steps."""
    ep = export(spec)
    with torch.no_grad():
        output = ep.module()(*build_inputs(spec)).cpu()
    return {"output": output, "scan": graphs.scan(ep.graph_module), "graph": _excerpt(ep.graph_module)}


def _excerpt(gm: torch.fx.GraphModule, targets: tuple[str, ...] = graphs.INDEX_TARGETS, context: int = 3) -> str:
    """Lines of the readable graph around indexing nodes."""
    lines = gm.print_readable(print_output=False).splitlines()
    keep: set[int] = set()
    for i, line in enumerate(lines):
        if any(t.split(".")[1] in line for t in targets) and "=" in line:
            keep.update(range(max(0, i - context), min(len(lines), i + context + 1)))
    return "\n".join(lines[i] for i in sorted(keep))[:6000]


def step_aoti_compile(spec: Spec) -> dict[str, Any]:
    """AOT Inductor package of the spec's exported program (Inductor's defaults; the kit's package cache)."""
    facts = aoti_backend.prepare(export(spec), (), spec.workdir, f"{spec.tag}.aoti")
    return {"package": facts["artifact"], "bytes": facts["bytes"], "cached": facts["cached"]}


def step_aoti_run(spec: Spec, package: str) -> dict[str, Any]:
    """Load the package and run it once (through aoti.run_step: loading has crashed whole processes)."""
    loaded = aoti_backend.load(package, build_inputs(spec))
    with torch.no_grad():
        return {"output": loaded().cpu()}


def step_compile(spec: Spec) -> dict[str, Any]:
    """torch.compile (Inductor, default mode) and one run."""
    compiled = torch.compile(build_module(spec), fullgraph=True)
    with torch.no_grad():
        return {"output": compiled(*build_inputs(spec)).cpu()}


def step_et_xnnpack_lower(spec: Spec) -> dict[str, Any]:
    """ExecuTorch XNNPACK (backends.executorch_xnnpack.prepare: the lowering, from the compile cache when it has it),
    the .pte written to the work folder."""
    ep = export(replace(spec, device="cpu"))  # XNNPACK is a CPU back-end
    facts = executorch_xnnpack.prepare(ep, (), spec.workdir, f"{spec.tag}.xnnpack")
    data = Path(facts["artifact"]).read_bytes()
    return {"pte": facts["artifact"], "bytes": len(data), "delegated": b"XnnpackBackend" in data,
            "cached": facts["cached"]}


# The ExecuTorch CUDA back-end lives in backends.executorch_cuda; these names stay for callers of this module.
CUDA_OPTION_KEYS = executorch_cuda.OPTION_KEYS
et_cuda_options = executorch_cuda.default_options
runtime_shims = executorch_cuda.runtime_shims
runtime_backends = executorch_cuda.runtime_backends


def step_et_cuda_lower(spec: Spec) -> dict[str, Any]:
    """ExecuTorch CUDA back-end (AOT Inductor): CudaPartitioner lowering with the spec's options (the back-end's
    defaults unless the spec says otherwise) and .pte/.ptd serialisation; a success comes from / goes to the cache."""
    overrides = executorch_cuda.kit_overrides(spec.autotune, spec.conv_backends)
    # its own folder: concurrent lowerings write .ptd files; the overrides apply in this step's child process only
    return executorch_cuda.lower(export(spec), Path(spec.workdir) / f"{spec.tag}.cuda", f"{spec.tag}.cuda",
                                 overrides=overrides)


_GPU_PROBE = ("import json, torch\n"
              "ok = torch.cuda.is_available()\n"
              "x = torch.ones(64, 64, device='cuda') if ok else None\n"
              "print(json.dumps({'available': ok, 'devices': torch.cuda.device_count(),\n"
              "                  'matmul_sum': float((x @ x).sum()) if ok else None}))\n")


def step_subprocess_gpu() -> dict[str, Any]:
    """Start a Python subprocess from a step, as Inductor starts its compile/autotune workers, and ask it to run a
    matmul on the GPU."""
    import json
    import subprocess
    import sys

    try:
        done = subprocess.run([sys.executable, "-c", _GPU_PROBE], capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired:
        return {"available": False, "devices": 0, "matmul_sum": None, "error": "no answer in 180 s"}
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode or not lines:
        return {"available": False, "devices": 0, "matmul_sum": None,
                "error": f"exit code {done.returncode}: {done.stderr.strip().splitlines()[-1:] or ''}"}
    return {**json.loads(lines[-1]), "error": "",
            "parent_sees": torch.cuda.is_available(), "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES")}


def step_et_run(spec: Spec, pte: str) -> dict[str, Any]:
    """Load a .pte with executorch.runtime and run forward once on CPU inputs."""
    cpu_spec = replace(spec, device="cpu")
    return {"output": executorch_cuda.run(pte, build_inputs(cpu_spec))[0].cpu()}


# --- the status matrix -----------------------------------------------------------------------------------------

@dataclass
class Cell:
    """One variant × path cell: its steps' outcomes and the comparison with eager."""

    spec: Spec
    path: str
    outcomes: list[isolate.Outcome]
    delta: dict[str, Any]
    group: str = "matrix"  # matrix, full (the full-model checks) or probe

    @property
    def variant(self) -> str:
        return self.spec.variant

    @property
    def scope(self) -> str:
        return self.spec.scope

    @property
    def effective(self) -> list[isolate.Outcome]:
        """The outcomes that decide the cell: an AOTI load that crashed as is is superseded by its workaround re-run."""
        if any(o.details.get("aoti_load", "as_is") != "as_is" for o in self.outcomes):
            return [o for o in self.outcomes if o.details.get("aoti_load") != "as_is"]
        return self.outcomes

    @property
    def final(self) -> isolate.Outcome:
        bad = [o for o in self.effective if not o.ok]
        return bad[0] if bad else self.effective[-1]

    @property
    def aoti_loads(self) -> list[isolate.Outcome]:
        """The AOTI load outcomes (as is, then with the workaround when one was needed)."""
        return [o for o in self.outcomes if "aoti_load" in o.details]

    def _row(self, outcomes: list[isolate.Outcome], delta: dict[str, Any], load: str = "", cause: str = "") -> dict[str, Any]:
        bad = [o for o in outcomes if not o.ok]
        final = bad[0] if bad else outcomes[-1]
        mark = "✅" if final.ok and agrees(delta) else ("⚠️" if final.ok else ("⏭️" if final.status == "skipped" else "❌"))
        return {"variant": self.variant, "scope": self.scope, "path": self.path + (f" ({self.spec.tag})" if
                self.scope.startswith("op_") or self.spec.conv_backends else ""),
                "status": mark, "outcome": final.status, "aoti_load": load, "cause": cause,
                "backend options": self.spec.backend_options if self.path == "et_cuda" else "",
                "cached": artifacts.served(outcomes[0]),
                "failed step": "" if final.ok else final.step, "error": clip(final.error, 200),
                "seconds": round(sum(o.seconds for o in outcomes), 2),
                "max |Δ| vs eager": delta.get("max_abs"), "max |Δ| sorted scores": delta.get("score_max_abs"),
                "detections matched": delta.get("match_rate")}

    def rows(self) -> list[dict[str, Any]]:
        """One row, or for an AOTI cell one row per load attempt (as is, with the workaround)."""
        loads = self.aoti_loads
        if not loads:
            return [self._row(self.outcomes, self.delta)]
        before = [o for o in self.outcomes if "aoti_load" not in o.details]
        return [self._row(before + [o], self.delta if o is loads[-1] else {}, o.details["aoti_load"],
                          o.details.get("cause", "")) for o in loads]

    def row(self) -> dict[str, Any]:
        """The row that decides the cell (the last load attempt for AOTI)."""
        return self.rows()[-1]


def _output(outcome: isolate.Outcome) -> torch.Tensor | None:
    return outcome.value.get("output") if outcome.ok and isinstance(outcome.value, dict) else None


# One whole-model ExecuTorch CUDA lowering at a time: each benchmarks the same convolutions on the one GPU, and the
# next one finds their timings in Inductor's autotune cache.
_WHOLE_MODEL_CUDA = threading.Lock()


def run_path(spec: Spec, path: str, timeout: float, whole_model_cuda: bool = True) -> Cell:
    """Run one path for one spec, each step isolated; never raises for the step's own failure.

    `whole_model_cuda` False: an ExecuTorch CUDA cell whose graph holds the model's convolutions is a skipped row
    (WHOLE_MODEL_SKIP) — never a lowering with options the back-end would not use.
    """
    on_cuda = spec.device.startswith("cuda")
    name = f"{spec.tag}:{path}"
    if path in CUDA_ONLY_PATHS and not on_cuda:
        return Cell(spec, path, [isolate.skipped(name, "needs a CUDA device")], {})
    if path == "et_cuda" and spec.whole_model and not whole_model_cuda:
        return Cell(spec, path, [isolate.skipped(f"{name}:lower", WHOLE_MODEL_SKIP)], {})
    if path == "eager":
        steps = [isolate.run_step(step_eager, spec, timeout=timeout, step=name)]
    elif path == "eager_cpu":  # the reference of CPU back-ends when the run's device is CUDA
        steps = [isolate.run_step(step_eager, replace(spec, device="cpu"), timeout=timeout, step=name)]
    elif path == "export":
        steps = [isolate.run_step(step_export, spec, timeout=timeout, step=name, phase="compile")]
    elif path == "compile":
        steps = [isolate.run_step(step_compile, spec, timeout=timeout, step=name, phase="compile")]
    elif path == "aoti":
        compiled = isolate.run_step(step_aoti_compile, spec, timeout=timeout, step=f"{name}:compile", phase="compile")
        steps = [compiled]
        if compiled.ok:
            steps += aoti.run_step(step_aoti_run, spec, compiled.value["package"], timeout=timeout,
                                   step=f"{name}:load+run")
    elif path == "et_xnnpack":
        lowered = isolate.run_step(step_et_xnnpack_lower, spec, timeout=timeout, step=f"{name}:lower", phase="compile")
        steps = [lowered]
        if lowered.ok:
            steps.append(isolate.run_step(step_et_run, spec, lowered.value["pte"], timeout=timeout, step=f"{name}:run"))
    elif path == "et_cuda":
        with _WHOLE_MODEL_CUDA if spec.whole_model else contextlib.nullcontext():
            lowered = isolate.run_step(step_et_cuda_lower, spec, timeout=timeout, step=f"{name}:lower",
                                       phase="compile")
        steps = [lowered]
        if lowered.ok:
            backends = isolate.run_step(runtime_backends, timeout=60, step=f"{name}:backends")
            if backends.ok and "CudaBackend" in (backends.value or []):
                steps.append(isolate.run_step(step_et_run, spec, lowered.value["pte"], timeout=timeout, step=f"{name}:run"))
            else:
                steps.append(isolate.skipped(f"{name}:run", "this executorch runtime has no CudaBackend "
                                             f"(registered: {backends.value if backends.ok else backends.error})"))
    else:
        raise ValueError(f"unknown path {path!r}; choose from {PATHS}")
    return Cell(spec, path, steps, {})


# Rough cold seconds of a cell on a GPU runner (postprocess scope; a whole model costs WHOLE_MODEL times more),
# only used to start the longest cells first.
EXPECTED_SECONDS = {"aoti": 150.0, "et_cuda": 15.0, "et_xnnpack": 15.0, "compile": 5.0, "export": 2.0,
                    "eager": 1.0, "eager_cpu": 1.0}
WHOLE_MODEL = 4.0


def expected_seconds(spec: Spec, path: str) -> float:
    """A cell's expected cold seconds (for scheduling, never reported)."""
    scale = WHOLE_MODEL if spec.scope in ("full", "backbone") else 1.0
    return EXPECTED_SECONDS.get(path, 1.0) * scale


CPU_PATHS = ("et_xnnpack",)  # back-ends that run on the CPU: compared with eager on the CPU


def status_matrix(plan: list[tuple], timeout: float, workers: int = 1, whole_model_cuda: bool = True) -> list[Cell]:
    """Every (spec, path) cell of the plan, `workers` at a time; each compared with its spec's eager output.

    A CPU back-end is compared with eager on the CPU (an `eager_cpu` row, added when the run's device is
    CUDA): CUDA eager uses other kernels (TF32 convolutions among them), which would blur the comparison.
    Cells are independent child processes, so running several at once changes only their wall times
    (reported, never benchmarked). A plan entry is (spec, paths) or (spec, paths, group).
    """
    tasks, groups = [], []
    for spec, paths, *group in plan:
        extra = ["eager_cpu"] if spec.device != "cpu" and any(p in CPU_PATHS for p in paths) else []
        steps = ["eager", *extra, *[p for p in paths if p != "eager"]]
        tasks += [(spec, path) for path in steps]
        groups += [group[0] if group else "matrix"] * len(steps)
    # Longest first: the wall time is set by the last long step to start (cells are independent).
    order = sorted(range(len(tasks)), key=lambda i: -expected_seconds(*tasks[i]))
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool, timing.sharing_cores(workers):
        done = dict(zip(order, pool.map(lambda i: run_path(tasks[i][0], tasks[i][1], timeout, whole_model_cuda), order)))
    cells = [done[i] for i in range(len(tasks))]
    for cell, group in zip(cells, groups):
        cell.group = group
    references = {(spec.tag, c.path): _output(c.final) for (spec, _), c in zip(tasks, cells)
                  if c.path in ("eager", "eager_cpu")}
    for (spec, path), cell in zip(tasks, cells):
        ran = [o for o in cell.outcomes if o.status != "skipped"]
        on_cpu = path in CPU_PATHS or path == "eager_cpu"
        reference = references.get((spec.tag, "eager_cpu"), references.get((spec.tag, "eager"))) if on_cpu \
            else references.get((spec.tag, "eager"))
        if ran and ran[-1].ok:
            cell.delta = compare(_output(ran[-1]), reference)
    return cells


# --- numerical equivalence -------------------------------------------------------------------------------------

def equivalence(cases: int = 200, seed: int = 0, max_batch: int = 8, max_nc: int = 120) -> pd.DataFrame:
    """legacy vs gather on random decoded heads: random batch, class count and anchors; half with heavy ties."""
    gen = torch.Generator().manual_seed(seed)
    legacy = PostprocessOnly("legacy", 1)
    fixed = PostprocessOnly("gather", 1)
    rows = []
    for case in range(cases):
        batch = int(torch.randint(1, max_batch + 1, (1,), generator=gen))
        nc = int(torch.randint(1, max_nc + 1, (1,), generator=gen))
        max_det = int(torch.randint(1, 301, (1,), generator=gen))
        anchors = max_det + int(torch.randint(0, 2000, (1,), generator=gen))
        ties = case % 2 == 1
        for m in (legacy, fixed):
            m.head.nc, m.head.max_det = nc, max_det
        preds = random_preds(batch, anchors, nc, seed=seed * 100_003 + case, ties=ties)
        with torch.no_grad():
            a, b = legacy(preds), fixed(preds)
        rows.append({"case": case, "batch": batch, "nc": nc, "anchors": anchors, "max_det": max_det, "ties": ties,
                     "identical": torch.equal(a, b), "max |Δ|": (a - b).abs().max().item()})
    return pd.DataFrame(rows)


# --- the notebook's driver -------------------------------------------------------------------------------------

@dataclass
class Run:
    """What the notebook computed, kept together for display and verdicts."""

    base: Spec
    cells: list[Cell]
    full_cells: list[Cell]
    autotune_note: str
    probe_cells: list[Cell] = field(default_factory=list)
    gpu_subprocess: isolate.Outcome | None = None
    cuda_options: isolate.Outcome | None = None
    runtime_shims: isolate.Outcome | None = None
    whole_model_cuda: bool = True  # False: whole-model ExecuTorch CUDA lowerings were skipped (WHOLE_MODEL_SKIP)
    backbone_graph: isolate.Outcome | None = None  # backbone_view_copies: what the view pass leaves
    known_releases: list[dict[str, Any]] = field(default_factory=records)  # later releases, measured on CPU
    # division.division_variants per device (the run's, and the CPU's on a CUDA run): the last load attempt each
    division: dict[str, isolate.Outcome] = field(default_factory=dict)

    @property
    def on_cuda(self) -> bool:
        return self.base.device.startswith("cuda")


def autotune_note(autotune: bool, whole_model_cuda: bool = True) -> str:
    """What the kit changed in ExecuTorch's CUDA back-end settings, and what it did not run, in words for the report."""
    if autotune:
        text = ("ExecuTorch CUDA lowerings use the back-end's own compile options (`backend_options = defaults`: "
                "Inductor max_autotune ON, Triton-only GEMM/conv choices); the ATen-convolution probes change one "
                "option, `max_autotune_conv_backends`, and say so in their rows.")
    else:
        text = ("**Changed by the kit:** ExecuTorch CUDA lowerings run with Inductor `max_autotune=False` (compile spec "
                "`max_autotune=OFF`, and `CudaBackend.get_aoti_compile_options` wrapped inside the lowering's child "
                "process). With Triton-only convolution choices this leaves every convolution without a candidate "
                "('No choices exist for backend'): a failure of the kit's making. Each verdict that rests on such a "
                "lowering records `backend_options = kit: ...` and comes out inconclusive.")
    if not whole_model_cuda:
        text += (" **Not run in this profile:** the whole-model and backbone ExecuTorch CUDA lowerings (" + WHOLE_MODEL_SKIP
                 + "); the claims that rest on them are judged from their parts, lowered here: the postprocess, "
                 "`chunk` alone, and the backbone's graph through the release's view pass (basis `both`).")
    return text + " AOTI and torch.compile paths use Inductor's defaults (no max-autotune)."


PROBES = ("cast", "ops", "split", "backbone", "backbone_aten", "full_aten", "subprocess_gpu", "backbone_graph",
          "division", "workaround")


def probe_plan(base: Spec, probes: list[str], full_model_variant: str) -> list[tuple[Spec, list[str]]]:
    """The extra cells of the probes: ExecuTorch CUDA lowerings (CUDA runs only) and the cast variant's export."""
    on_cuda = base.device.startswith("cuda")
    cuda = ["et_cuda"] if on_cuda else []
    backbone = replace(base, variant=full_model_variant, scope="backbone")
    plan: list[tuple[Spec, list[str]]] = []
    if "cast" in probes:  # its export runs everywhere (the graph answers half of the claim), its lowering on CUDA
        plan.append((replace(base, variant="legacy_cast", scope="postprocess"), ["export", *cuda]))
    if "workaround" in probes:  # the gather top-k without an integer division: does it lower, load, match eager?
        plan.append((replace(base, variant="gather_floatdiv", scope="postprocess"), ["aoti", "et_xnnpack", *cuda]))
    if not on_cuda:
        return plan
    if "ops" in probes:
        plan += [(replace(base, scope=f"op_{op}"), cuda) for op in OPS]
    if "split" in probes:  # the backbone's view-copy op alone: seconds, where the backbone takes minutes
        plan.append((replace(base, scope="op_split"), cuda))
    if "backbone" in probes:
        plan.append((backbone, cuda))
    if "backbone_aten" in probes:
        plan.append((replace(backbone, conv_backends=ATEN_CONV), cuda))
    if "full_aten" in probes:
        plan.append((replace(backbone, scope="full", conv_backends=ATEN_CONV), cuda))
    return plan


def investigate(model: str, imgsz: int, batch: int, device: str, variants: list[str], paths: list[str], scope: str,
                full_model_paths: list[str], full_model_variant: str, step_timeout: float, autotune: bool = True,
                seed: int = 0, nc: int = 80, workers: int = 1, probes: list[str] | tuple[str, ...] = (),
                whole_model_cuda: bool = True) -> Run:
    """Run the matrix (variants × paths at `scope`), the full-model checks and the probes; every step isolated.

    ExecuTorch CUDA lowers with the back-end's defaults (`autotune` False is a kit option, recorded in every row
    and verdict); `whole_model_cuda` False skips its whole-model and backbone lowerings (rows say why).
    """
    yolo.offline_ultralytics()
    isolate.preload(*PRELOAD)
    workers = workers or max(2, min(6, (os.cpu_count() or 2) // 2))  # no step here is timed: two even on 2 cores
    workdir = isolate.work_dir("index-dtype")
    base = Spec(variant="legacy", scope=scope, model=model, imgsz=imgsz, batch=batch, nc=nc, seed=seed,
                device=device, workdir=workdir, autotune=autotune)
    plan = [(replace(base, variant=v), list(paths), "matrix") for v in variants]
    if full_model_paths:
        plan.append((replace(base, variant=full_model_variant, scope="full"), list(full_model_paths), "full"))
    plan += [(s, p, "probe") for s, p in probe_plan(base, list(probes), full_model_variant)]
    on_cuda = device.startswith("cuda")
    with ThreadPoolExecutor(max_workers=3) as side, timing.sharing_cores(3):  # quick side steps next to the matrix
        graph = side.submit(isolate.run_step, backbone_view_copies, replace(base, variant=full_model_variant),
                            timeout=600, step="backbone graph through the view pass") \
            if "backbone_graph" in probes else None
        gpu = side.submit(isolate.run_step, step_subprocess_gpu, timeout=300, step="subprocess sees the GPU") \
            if on_cuda and "subprocess_gpu" in probes else None
        options = side.submit(isolate.run_step, et_cuda_options, timeout=120, step="ExecuTorch CUDA options")
        shims = side.submit(isolate.run_step, runtime_shims, timeout=300, step="ExecuTorch runtime shims") \
            if on_cuda else None
        devices = [device, "cpu"] if on_cuda else [device]
        divided = {d: side.submit(aoti.run_step, division.division_variants, d, workdir, timeout=step_timeout,
                                  step=f"division variants ({d})", phase="compile")
                   for d in devices} if "division" in probes else {}
        cells = status_matrix(plan, step_timeout, workers, whole_model_cuda)
    probe_cells = [c for c in cells if c.group == "probe"]
    full_cells = [c for c in cells if c.group == "full"]
    cells = [c for c in cells if c.group == "matrix"]
    return Run(base, cells, full_cells, autotune_note(autotune, whole_model_cuda), probe_cells,
               gpu.result() if gpu else None, options.result(), shims.result() if shims else None, whole_model_cuda,
               graph.result() if graph else None, division={d: f.result()[-1] for d, f in divided.items()})


# --- what the judges read --------------------------------------------------------------------------------------

@dataclass
class Results:
    """Everything the judges read: the run's cells and side steps, and the equivalence table; with root_cause's
    tables when it ran (for show.TABLES; no judge reads them)."""

    run: "Run"
    equiv: pd.DataFrame
    root: dict[str, pd.DataFrame] = field(default_factory=dict)
    # the environment the run recorded (its results.json `environment`): what the judges read of the stack
    environment: dict[str, Any] = field(default_factory=env.fingerprint)

    @property
    def on_cuda(self) -> bool:
        return self.run.on_cuda

    @property
    def device(self) -> str:
        return "cuda" if self.on_cuda else "cpu"

    def cell(self, variant: str, path: str, scope: str = "") -> Cell | None:
        """The matrix (or full-model, or probe) cell of a variant and path; `scope` picks among them."""
        pool = self.run.cells + self.run.probe_cells if scope else self.run.cells
        return next((c for c in pool if c.variant == variant and c.path == path and not c.spec.conv_backends
                     and (not scope or c.scope == scope)), None)

    def probe(self, scope: str, conv_backends: str = "", path: str = "et_cuda") -> Cell | None:
        """A probe cell by scope (op_topk, backbone, full, ...) and conv back-ends."""
        return next((c for c in self.run.probe_cells + self.run.full_cells
                     if c.scope == scope and c.spec.conv_backends == conv_backends and c.path == path), None)

    def et_cuda_cells(self) -> list[Cell]:
        """Every ExecuTorch CUDA cell of the run."""
        return [c for c in self.run.cells + self.run.full_cells + self.run.probe_cells if c.path == "et_cuda"]
