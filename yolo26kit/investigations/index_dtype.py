"""Index dtype (seeds 000/001): YOLO26's advanced-indexing top-k versus `torch.gather` across export back-ends.

Variants of the Detect head's end-to-end top-k:
  legacy   — the seed's original `ori_index[torch.arange(batch)[..., None], index // nc]` (aten.index.Tensor),
             with the postprocess of that ultralytics release (boxes gathered with `idx.repeat(1, 1, 4)`);
  gather   — the seed's fix, `torch.gather(ori_index, 1, (index // nc).unsqueeze(-1))`;
  upstream — whatever the installed ultralytics ships (its pattern is read from the exported graph).

Paths, each step in an isolated child (isolate.run_step): eager, torch.export, AOTI, torch.compile,
ExecuTorch XNNPACK (lower + run), ExecuTorch CUDA (CudaPartitioner lower; run where the runtime has the backend).

Ties in top-k: legacy and gather share every top-k call and differ only in how the winning anchor
indices are picked from `ori_index`, which is a pure lookup; so they must agree bit for bit whatever
order top-k breaks ties in, and the kit compares them with `torch.equal`, not allclose.
"""

from __future__ import annotations

import copy
import os
import re
import tempfile
import types
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from .. import catalog, findings, graphs, isolate, yolo

VARIANTS = ("legacy", "gather", "upstream")
PATHS = ("eager", "export", "aoti", "compile", "et_xnnpack", "et_cuda")
CUDA_ONLY_PATHS = ("et_cuda",)
SEED_INDEX_ERROR = "indices must be int64, byte or bool"
# Triton rejecting a float index used as a pointer offset (the float32 index surviving into a gather kernel)
FLOAT_POINTER_ERROR = re.compile(r"invalid operands of type pointer<\w+> and triton\.language\.float32")
STRIDES = (8, 16, 32)
# Imported once in the step server so each isolated step starts in well under a second.
PRELOAD = ("yolo26kit.investigations.index_dtype", "ultralytics.nn.tasks", "executorch.exir", "executorch.runtime",
           "executorch.backends.xnnpack.partition.xnnpack_partitioner")


# --- the three top-k variants -------------------------------------------------------------------

def legacy_postprocess(self: Any, preds: torch.Tensor) -> torch.Tensor:
    """Detect.postprocess as ultralytics shipped it when the seed was written."""
    boxes, scores = preds.split([4, self.nc], dim=-1)
    scores, conf, idx = self.get_topk_index(scores, self.max_det)
    boxes = boxes.gather(dim=1, index=idx.repeat(1, 1, 4))
    return torch.cat([boxes, scores, conf], dim=-1)


def legacy_get_topk_index(self: Any, scores: torch.Tensor, max_det: int):
    """The seed's original top-k: advanced indexing into ori_index (aten.index.Tensor)."""
    batch_size, anchors, nc = scores.shape
    k = max_det if self.export else min(max_det, anchors)
    ori_index = scores.max(dim=-1)[0].topk(k)[1].unsqueeze(-1)
    scores = scores.gather(dim=1, index=ori_index.repeat(1, 1, nc))
    scores, index = scores.flatten(1).topk(k)
    idx = ori_index[torch.arange(batch_size)[..., None], index // nc]  # original index
    return scores[..., None], (index % nc)[..., None].float(), idx


def gather_get_topk_index(self: Any, scores: torch.Tensor, max_det: int):
    """The seed's fix: the same top-k, with the anchor lookup done by torch.gather."""
    batch_size, anchors, nc = scores.shape
    k = max_det if self.export else min(max_det, anchors)
    ori_index = scores.max(dim=-1)[0].topk(k)[1].unsqueeze(-1)
    scores_gathered = scores.gather(dim=1, index=ori_index.repeat(1, 1, nc))
    scores_out, index = scores_gathered.flatten(1).topk(k)
    index = index.to(torch.int64)
    class_indices = (index % nc).unsqueeze(-1)
    anchor_idx = (index // nc).unsqueeze(-1)
    idx = torch.gather(ori_index, dim=1, index=anchor_idx)
    return scores_out.unsqueeze(-1), class_indices.float(), idx


def apply_variant(head: Any, variant: str) -> Any:
    """Bind the variant's postprocess/top-k onto a Detect head (upstream leaves it as installed)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose from {VARIANTS}")
    if variant != "upstream":
        head.postprocess = types.MethodType(legacy_postprocess, head)
        topk = legacy_get_topk_index if variant == "legacy" else gather_get_topk_index
        head.get_topk_index = types.MethodType(topk, head)
    return head


def anchors_for(imgsz: int) -> int:
    """Anchor count of a YOLO26 head at a square input size (strides 8, 16, 32)."""
    return sum((imgsz // s) ** 2 for s in STRIDES)


class PostprocessOnly(torch.nn.Module):
    """The Detect head's end-to-end postprocess alone: [B, anchors, 4+nc] → [B, max_det, 6]."""

    def __init__(self, variant: str, nc: int, max_det: int = 300) -> None:
        super().__init__()
        yolo.offline_ultralytics()
        from ultralytics.nn.modules.head import Detect

        head = Detect(nc=nc, end2end=True, ch=(16, 32, 64))
        head.export, head.max_det, head.agnostic_nms = True, max_det, False
        self.head = apply_variant(head, variant)

    def forward(self, preds: torch.Tensor) -> torch.Tensor:
        return self.head.postprocess(preds)


@dataclass(frozen=True)
class Spec:
    """Everything a child process needs to rebuild the same module and inputs."""

    variant: str
    scope: str = "postprocess"
    model: str = "yolo26n"
    imgsz: int = 320
    batch: int = 1
    nc: int = 80
    seed: int = 0
    device: str = "cpu"
    workdir: str = ""

    @property
    def tag(self) -> str:
        return f"{self.scope}-{self.variant}"


def build_module(spec: Spec) -> torch.nn.Module:
    """The spec's module in eval mode on its device."""
    if spec.scope == "postprocess":
        module = PostprocessOnly(spec.variant, spec.nc)
    elif spec.scope == "full":
        module = yolo.build(spec.model, nc=spec.nc, seed=spec.seed)
        apply_variant(yolo.detect_head(module), spec.variant)
    else:
        raise ValueError(f"unknown scope {spec.scope!r}; choose postprocess or full")
    return module.eval().to(spec.device)


def random_preds(batch: int, anchors: int, nc: int, seed: int = 0, ties: bool = False) -> torch.Tensor:
    """Decoded head output [B, anchors, 4+nc]: boxes in pixels, distinct class scores in [0, 1) (or 8 levels with `ties`)."""
    gen = torch.Generator().manual_seed(seed)
    boxes = torch.rand(batch, anchors, 4, generator=gen) * 640
    if ties:
        scores = torch.randint(0, 8, (batch, anchors, nc), generator=gen) / 8  # 8 values: top-k breaks many ties
    else:  # all distinct, so every back-end must pick the same detections
        n = anchors * nc
        scores = torch.stack([torch.randperm(n, generator=gen) for _ in range(batch)]).reshape(batch, anchors, nc) / n
    return torch.cat([boxes, scores], dim=-1)


def build_inputs(spec: Spec) -> tuple[torch.Tensor, ...]:
    """The spec's example input, seeded."""
    if spec.scope == "postprocess":
        return (random_preds(spec.batch, anchors_for(spec.imgsz), spec.nc, spec.seed).to(spec.device),)
    return (yolo.example_input(spec.batch, spec.imgsz, spec.seed, spec.device),)


# --- path steps (run in isolated children) ---------------------------------------------------------

def export(spec: Spec) -> torch.export.ExportedProgram:
    """torch.export of the spec's module on its device."""
    with torch.no_grad():
        return torch.export.export(build_module(spec), build_inputs(spec))


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
    """aoti_compile_and_package of the saved exported program (max-autotune off)."""
    package = str(Path(spec.workdir) / f"{spec.tag}.aoti.pt2")
    torch._inductor.aoti_compile_and_package(export(spec), package_path=package)
    return {"package": package, "bytes": os.path.getsize(package)}


def step_aoti_run(spec: Spec, package: str) -> dict[str, Any]:
    """aoti_load_package + one run (a separate child: this load has segfaulted on GPU runners)."""
    runner = torch._inductor.aoti_load_package(package)
    with torch.no_grad():
        return {"output": runner(*build_inputs(spec)).cpu()}


def step_compile(spec: Spec) -> dict[str, Any]:
    """torch.compile (Inductor, default mode) and one run."""
    compiled = torch.compile(build_module(spec), fullgraph=True)
    with torch.no_grad():
        return {"output": compiled(*build_inputs(spec)).cpu()}


def step_et_xnnpack_lower(spec: Spec) -> dict[str, Any]:
    """ExecuTorch: to_edge_transform_and_lower with XnnpackPartitioner, to_executorch, write the .pte."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    ep = export(replace(spec, device="cpu"))  # XNNPACK is a CPU back-end
    program = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch()
    pte = Path(spec.workdir) / f"{spec.tag}.xnnpack.pte"
    pte.write_bytes(program.buffer)
    delegated = program.buffer.count(b"XnnpackBackend")
    return {"pte": str(pte), "bytes": pte.stat().st_size, "delegated": delegated > 0}


def _cuda_compile_specs(autotune: bool) -> list:
    from executorch.backends.cuda.cuda_backend import CudaBackend
    from executorch.exir.backend.compile_spec_schema import CompileSpec

    specs = [CudaBackend.generate_method_name_compile_spec("forward")]
    if not autotune:
        specs.append(CompileSpec("max_autotune", b"OFF"))
    return specs


def _force_autotune_off() -> None:
    """Make the CUDA back-end's AOTI options say max_autotune=False (older releases ignore the compile spec)."""
    from executorch.backends.cuda.cuda_backend import CudaBackend

    original = CudaBackend.get_aoti_compile_options.__func__

    def without_autotune(cls, compile_specs):
        return {**original(cls, compile_specs), "max_autotune": False}

    CudaBackend.get_aoti_compile_options = classmethod(without_autotune)


def step_et_cuda_lower(spec: Spec, autotune: bool) -> dict[str, Any]:
    """ExecuTorch CUDA back-end (AOT Inductor): CudaPartitioner lowering and .pte/.ptd serialisation."""
    from executorch.backends.cuda.cuda_partitioner import CudaPartitioner
    from executorch.exir import to_edge_transform_and_lower

    if not autotune:
        _force_autotune_off()  # runs in this step's own child process only
    lowered = to_edge_transform_and_lower(export(spec), partitioner=[CudaPartitioner(_cuda_compile_specs(autotune))])
    program = lowered.to_executorch()
    pte = Path(spec.workdir) / f"{spec.tag}.cuda.pte"
    pte.write_bytes(program.buffer)
    if hasattr(program, "write_tensor_data_to_file"):
        program.write_tensor_data_to_file(spec.workdir)
    return {"pte": str(pte), "bytes": pte.stat().st_size}


def runtime_backends() -> list[str]:
    """Back-ends registered in this executorch runtime (pybindings)."""
    from executorch.runtime import Runtime

    registry = Runtime.get().backend_registry
    return list(getattr(registry, "registered_backend_names", []) or [])


def step_et_run(spec: Spec, pte: str) -> dict[str, Any]:
    """Load a .pte with executorch.runtime and run forward once on CPU inputs."""
    from executorch.runtime import Runtime

    program = Runtime.get().load_program(Path(pte))  # by path: the runtime keeps no reference to a bytes buffer
    method = program.load_method("forward")
    cpu_spec = replace(spec, device="cpu")
    return {"output": method.execute(list(build_inputs(cpu_spec)))[0].cpu()}


# --- comparing outputs -------------------------------------------------------------------------

def compare(output: torch.Tensor | None, reference: torch.Tensor | None) -> dict[str, Any]:
    """How far an output [B, k, 6] is from eager: max |Δ| raw, max |Δ| of the sorted scores, and the match rate.

    The match rate is the fraction of eager detections found in the output with the same class, a box within
    1 px and a score within 1e-3: robust to back-ends that break near-ties at the top-k cut differently.
    """
    if output is None or reference is None:
        return {"max_abs": None, "score_max_abs": None, "match_rate": None, "exact": None}
    out, ref = output.float().cpu(), reference.float().cpu()
    if out.shape != ref.shape:
        return {"max_abs": None, "score_max_abs": None, "match_rate": 0.0, "exact": False, "shape": list(out.shape)}
    scores = lambda t: t[..., 4].sort(dim=-1, descending=True).values  # noqa: E731
    close = ((out[:, None, :, :4] - ref[:, :, None, :4]).abs().amax(-1) <= 1.0) \
        & ((out[:, None, :, 4] - ref[:, :, None, 4]).abs() <= 1e-3) & (out[:, None, :, 5] == ref[:, :, None, 5])
    return {"max_abs": (out - ref).abs().max().item(), "score_max_abs": (scores(out) - scores(ref)).abs().max().item(),
            "match_rate": close.any(-1).float().mean().item(), "exact": torch.equal(out, ref)}


MIN_MATCH_RATE = 0.95  # a few swaps at the k-th place are floating-point noise, not a different model


def agrees(delta: dict[str, Any]) -> bool:
    """Same detections as eager: bit-exact, or ≥95 % matched with sorted scores within 1e-3."""
    if delta.get("exact"):
        return True
    return (delta.get("match_rate") or 0.0) >= MIN_MATCH_RATE and (delta.get("score_max_abs") or 0.0) <= 1e-3


# --- the status matrix -----------------------------------------------------------------------------

@dataclass
class Cell:
    """One variant × path cell: its steps' outcomes and the comparison with eager."""

    spec: Spec
    path: str
    outcomes: list[isolate.Outcome]
    delta: dict[str, Any]

    @property
    def variant(self) -> str:
        return self.spec.variant

    @property
    def final(self) -> isolate.Outcome:
        bad = [o for o in self.outcomes if not o.ok]
        return bad[0] if bad else self.outcomes[-1]

    def row(self) -> dict[str, Any]:
        final = self.final
        mark = "✅" if final.ok and agrees(self.delta) else ("⚠️" if final.ok else ("⏭️" if final.status == "skipped" else "❌"))
        return {"variant": self.variant, "path": self.path, "status": mark, "outcome": final.status,
                "failed step": "" if final.ok else final.step, "error": final.error[:200],
                "seconds": round(sum(o.seconds for o in self.outcomes), 2),
                "max |Δ| vs eager": self.delta.get("max_abs"), "max |Δ| sorted scores": self.delta.get("score_max_abs"),
                "detections matched": self.delta.get("match_rate")}


def _output(outcome: isolate.Outcome) -> torch.Tensor | None:
    return outcome.value.get("output") if outcome.ok and isinstance(outcome.value, dict) else None


def run_path(spec: Spec, path: str, timeout: float, autotune: bool) -> Cell:
    """Run one path for one spec, each step isolated; never raises for the step's own failure."""
    on_cuda = spec.device.startswith("cuda")
    name = f"{spec.tag}:{path}"
    if path in CUDA_ONLY_PATHS and not on_cuda:
        return Cell(spec, path, [isolate.skipped(name, "needs a CUDA device")], {})
    if path == "eager":
        steps = [isolate.run_step(step_eager, spec, timeout=timeout, step=name)]
    elif path == "eager_cpu":  # the reference of CPU back-ends when the run's device is CUDA
        steps = [isolate.run_step(step_eager, replace(spec, device="cpu"), timeout=timeout, step=name)]
    elif path == "export":
        steps = [isolate.run_step(step_export, spec, timeout=timeout, step=name)]
    elif path == "compile":
        steps = [isolate.run_step(step_compile, spec, timeout=timeout, step=name)]
    elif path == "aoti":
        compiled = isolate.run_step(step_aoti_compile, spec, timeout=timeout, step=f"{name}:compile")
        steps = [compiled]
        if compiled.ok:
            steps.append(isolate.run_step(step_aoti_run, spec, compiled.value["package"], timeout=timeout,
                                          step=f"{name}:load+run"))
    elif path == "et_xnnpack":
        lowered = isolate.run_step(step_et_xnnpack_lower, spec, timeout=timeout, step=f"{name}:lower")
        steps = [lowered]
        if lowered.ok:
            steps.append(isolate.run_step(step_et_run, spec, lowered.value["pte"], timeout=timeout, step=f"{name}:run"))
    elif path == "et_cuda":
        lowered = isolate.run_step(step_et_cuda_lower, spec, autotune, timeout=timeout, step=f"{name}:lower")
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


CPU_PATHS = ("et_xnnpack",)  # back-ends that run on the CPU: compared with eager on the CPU


def status_matrix(plan: list[tuple[Spec, list[str]]], timeout: float, autotune: bool, workers: int = 1) -> list[Cell]:
    """Every (spec, path) cell of the plan, `workers` at a time; each compared with its spec's eager output.

    A CPU back-end is compared with eager on the CPU (an `eager_cpu` row, added when the run's device is
    CUDA): CUDA eager uses other kernels (TF32 convolutions among them), which would blur the comparison.
    Cells are independent child processes, so running several at once changes only their wall times
    (reported, never benchmarked).
    """
    tasks = []
    for spec, paths in plan:
        extra = ["eager_cpu"] if spec.device != "cpu" and any(p in CPU_PATHS for p in paths) else []
        tasks += [(spec, path) for path in ["eager", *extra, *[p for p in paths if p != "eager"]]]
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        cells = list(pool.map(lambda t: run_path(t[0], t[1], timeout, autotune), tasks))
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


def matrix_frame(cells: list[Cell]) -> pd.DataFrame:
    """The status matrix as a table, ultralytics-benchmark style."""
    return pd.DataFrame([c.row() for c in cells])


def scan_frame(cells: list[Cell]) -> pd.DataFrame:
    """Index/gather nodes of every exported variant with their index dtypes and source lines."""
    rows = []
    for c in cells:
        if c.path == "export" and c.final.ok:
            for r in c.final.value["scan"]:
                rows.append({"variant": c.variant, **{k: v for k, v in r.items() if k != "arg_dtypes"},
                             "arg_dtypes": str(r["arg_dtypes"])})
    return pd.DataFrame(rows)


def upstream_pattern(cells: list[Cell]) -> str:
    """Which top-k pattern the installed ultralytics uses, read from its exported graph."""
    for c in cells:
        if c.variant == "upstream" and c.path == "export" and c.final.ok:
            rows = c.final.value["scan"]
            return "advanced indexing (aten.index.Tensor)" if graphs.count(rows, "aten.index.Tensor") else \
                "gather (no aten.index.Tensor)" if graphs.count(rows, "aten.gather") else "neither"
    return "unknown (upstream export did not run)"


# --- numerical equivalence ----------------------------------------------------------------------

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


def equivalence_summary(equiv: pd.DataFrame) -> pd.DataFrame:
    """Cases and bit-identical outputs, with and without heavy score ties."""
    return (equiv.groupby("ties").agg(cases=("case", "count"), identical=("identical", "sum"),
                                      max_abs_diff=("max |Δ|", "max"), batch_max=("batch", "max"), nc_max=("nc", "max"))
            .reset_index())


# --- root cause: follow the index dtype through the CUDA back-end's own pipeline ----------------

def _flat_inputs(ep: torch.export.ExportedProgram, args: tuple) -> list[Any]:
    sig = ep.graph_signature
    state = {**ep.state_dict, **getattr(ep, "constants", {})}
    lifted = [state[name] for name in [*sig.parameters, *sig.buffers]]
    lifted += [state[name] for name in getattr(sig, "lifted_tensor_constants", [])]
    return [*lifted, *args]


def pipeline_stages(spec: Spec) -> dict[str, Any]:
    """Index/division nodes and their dtypes at each stage the CUDA back-end puts the graph through.

    Stages: torch.export (ATen) → to_edge (Edge dialect) → each custom pass the installed
    CudaBackend applies → its decomposition table. Runs on CPU: the graph passes are device-free.
    """
    from executorch.exir import to_edge

    module, inputs = build_module(spec), build_inputs(spec)
    wanted = graphs.INDEX_TARGETS + graphs.DIVISION_TARGETS
    ep = torch.export.export(module, inputs)
    stages = [("torch.export (ATen)", graphs.scan(ep.graph_module, wanted))]
    edge = to_edge(ep, compile_config=_edge_config()).exported_program()
    stages.append(("to_edge (Edge dialect)", graphs.scan(edge.graph_module, wanted)))
    passes_info: list[dict[str, Any]] = []
    try:
        from executorch.backends.cuda.cuda_backend import CudaBackend

        gm = copy.deepcopy(edge.graph_module)
        flat = _flat_inputs(edge, inputs)
        passes = []
        try:
            from executorch.backends.aoti.passes.replace_view_copy_with_view import ReplaceViewCopyWithViewPass

            passes.append(ReplaceViewCopyWithViewPass())
        except ImportError:
            pass
        passes += list(CudaBackend.get_custom_passes(_cuda_compile_specs(False)))
        for p in passes:
            before = [graphs.target_name(n) for n in gm.graph.nodes if n.op == "call_function"]
            error = ""
            try:
                if getattr(p, "requires_exported_program", False):
                    error = "needs the whole ExportedProgram; not replayed"
                else:
                    p(gm)
                    graphs.propagate_dtypes(gm, *flat)
            except Exception as exc:  # a pass that needs CUDA/Triton to run
                error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            after = [graphs.target_name(n) for n in gm.graph.nodes if n.op == "call_function"]
            removed = sorted(set(before) - set(after))
            added = sorted(set(after) - set(before))
            passes_info.append({"pass": type(p).__name__, "module": type(p).__module__, "removed ops": removed,
                                "added ops": added, "changed": before != after, "error": error})
            stages.append((f"after {type(p).__name__}", graphs.scan(gm, wanted)))
        decomp = CudaBackend.get_decomposition_table()
        if decomp:
            stages.append(("decomposition table has", [{"node": "", "target": str(k), "out_dtype": None,
                                                         "arg_dtypes": [], "index_dtypes": None, "source": ""}
                                                        for k in decomp]))
    except ImportError as exc:
        passes_info.append({"pass": "(CUDA back-end not importable)", "error": str(exc)})
    return {"stages": stages, "passes": passes_info}


def _edge_config():
    from executorch.exir import EdgeCompileConfig

    return EdgeCompileConfig(_check_ir_validity=False)


def stages_frame(result: dict[str, Any]) -> pd.DataFrame:
    """One row per index/division node per pipeline stage."""
    rows = []
    for stage, nodes in result["stages"]:
        for r in nodes:
            rows.append({"stage": stage, "node": r["node"], "target": r["target"], "out": r["out_dtype"],
                         "index dtypes": str(r["index_dtypes"]) if r["index_dtypes"] is not None else "",
                         "arg dtypes": str(r["arg_dtypes"]), "source": r["source"]})
    return pd.DataFrame(rows)


def lowering_error_details(text: str) -> dict[str, Any]:
    """Pull the failing target, its argument IR and any dtypes out of an Inductor LoweringException."""
    target = re.search(r"target:\s*(\S+)", text)
    got = re.search(r"Got \[([^\]]*)\]", text)
    args = re.findall(r"(args\[\d+\]:.*?)(?=\n\s*args\[\d+\]:|\n\n|\Z)", text, flags=re.S)
    return {"target": target.group(1) if target else "", "dtypes": got.group(1) if got else "",
            "args": [a.strip()[:4000] for a in args][:4]}


def root_cause(run: "Run", timeout: float) -> dict[str, pd.DataFrame]:
    """The CUDA back-end's passes and the legacy graph's index dtypes after each, plus any lowering errors of the run."""
    legacy = replace(run.base, variant="legacy", device="cpu")  # graph passes replay device-free
    outcome = isolate.run_step(pipeline_stages, legacy, timeout=timeout, step="pipeline-stages")
    if outcome.ok:
        passes, stages = pd.DataFrame(outcome.value["passes"]), stages_frame(outcome.value)
    else:
        passes = pd.DataFrame([{"pass": "(replay failed)", "error": f"{outcome.status}: {outcome.error}"}])
        stages = pd.DataFrame()
    errors = []
    for c in run.cells + run.full_cells:
        for o in c.outcomes:
            if o.status in ("error", "crash", "timeout", "oom"):
                d = lowering_error_details(_text(o))
                errors.append({"variant": c.variant, "path": c.path, "step": o.step, "outcome": o.status,
                               "error": o.error[:300], "failing target": d["target"], "index dtypes": d["dtypes"],
                               "index argument IR (args[1])": d["args"][1] if len(d["args"]) > 1 else "",
                               "log tail": o.log[-1500:]})
    return {"passes": passes, "stages": stages, "lowering_errors": pd.DataFrame(errors)}


def diagnosis(root: dict[str, pd.DataFrame]) -> str:
    """Where the float32 index comes from, in words, read off this run's lowering errors and back-end passes."""
    lines = []
    errors = root["lowering_errors"]
    hits = errors[errors["index dtypes"].str.contains("float32", na=False)] if not errors.empty else errors
    if hits.empty:
        lines.append("No lowering in this run failed on a float32 index (on CPU the CUDA lowering does not run).")
    else:
        ir = hits.iloc[0]["index argument IR (args[1])"]
        float_part = ir[ir.find("torch.float32"):] if "torch.float32" in ir else ir
        origin = re.search(r"origin_node=(\w+)", float_part)
        body = [ln.strip() for ln in float_part.splitlines() if re.match(r"\s*tmp\d+ = ", ln)]
        lines.append(f"The float32 index of `aten.index.Tensor` is built by Inductor while lowering node "
                     f"`{origin.group(1) if origin else '?'}` (the floor division `index // nc` of the top-k): "
                     f"`{'; '.join(body)}` — integer floor-division lowered as a float32 multiply by the reciprocal "
                     "and `floor`, with no cast back to int64. The FX graph before Inductor is int64 throughout "
                     "(table above), so the dtype appears inside the lowering, not in torch.export.")
    passes = root["passes"]
    names = list(passes["pass"]) if "pass" in passes else []
    floor_pass = [n for n in names if "FloorDiv" in n]
    if floor_pass:
        lines.append(f"The installed executorch ships `{floor_pass[0]}`, which rewrites integer floor-division into "
                     "float64 `floor(a / b)` cast back to the integer dtype before AOT Inductor sees it.")
    else:
        lines.append(f"The installed executorch's CUDA back-end applies {', '.join(f'`{n}`' for n in names) or 'no passes'}; "
                     "none of them touches floor-division.")
    return "\n\n".join(lines)


# --- verdicts ---------------------------------------------------------------------------------

def _cell(cells: list[Cell], variant: str, path: str) -> Cell | None:
    return next((c for c in cells if c.variant == variant and c.path == path), None)


def _text(outcome: isolate.Outcome) -> str:
    return "\n".join([outcome.error, outcome.traceback, outcome.log])


def judge(found: findings.Findings, cells: list[Cell], equiv: pd.DataFrame, full_cells: list[Cell],
          on_cuda: bool) -> pd.DataFrame:
    """Verdicts for every index_dtype claim, from the matrix, the equivalence table and the full-model cells."""
    # fx_int64: every aten.index.Tensor index argument is int64 after torch.export (legacy graph)
    legacy_export = _cell(cells, "legacy", "export")
    if legacy_export is None or not legacy_export.final.ok:
        found.verdict("index_dtype.fx_int64", "error", f"torch.export of the legacy variant did not run: "
                      f"{legacy_export.final.error if legacy_export else 'not in the run'}")
    else:
        rows = legacy_export.final.value["scan"]
        index_rows = [r for r in rows if r["target"].startswith("aten.index.Tensor")]
        ok = graphs.all_int64(rows)
        found.verdict("index_dtype.fx_int64", "confirmed" if ok else "refuted",
                      f"{len(index_rows)} aten.index.Tensor node(s) after torch.export; index dtypes "
                      f"{[r['index_dtypes'] for r in index_rows]}", nodes=index_rows)

    # et_cuda_float_index
    legacy_cuda = _cell(cells, "legacy", "et_cuda")
    if not on_cuda or legacy_cuda is None:
        found.verdict("index_dtype.et_cuda_float_index", "needs_cuda", "the ExecuTorch CUDA lowering needs a CUDA device; "
                      "this run had none (or et_cuda was not among the paths)")
    else:
        lower = legacy_cuda.outcomes[0]
        text = _text(lower)
        details = lowering_error_details(text)
        if lower.ok:
            found.verdict("index_dtype.et_cuda_float_index", "not_reproduced",
                          f"the legacy advanced-indexing variant lowered through CudaPartitioner in {lower.seconds:.1f} s "
                          f"without the index dtype error", seconds=lower.seconds)
        elif SEED_INDEX_ERROR in text and "float32" in details["dtypes"]:
            found.verdict("index_dtype.et_cuda_float_index", "confirmed", f"lowering failed: {lower.error[:200]}",
                          details=details)
        elif lower.status in ("timeout", "crash", "oom"):
            found.verdict("index_dtype.et_cuda_float_index", "error", f"lowering ended with {lower.status}: {lower.error}")
        else:
            found.verdict("index_dtype.et_cuda_float_index", "partly",
                          f"lowering fails, but not with the seed's index dtype error: {lower.error[:200]}", details=details)

    # gather_removes_index
    gather_export = _cell(cells, "gather", "export")
    if gather_export is None or not gather_export.final.ok:
        found.verdict("index_dtype.gather_removes_index", "error", "torch.export of the gather variant did not run")
    else:
        n_index = graphs.count(gather_export.final.value["scan"], "aten.index.Tensor")
        n_gather = graphs.count(gather_export.final.value["scan"], "aten.gather")
        graph_part = f"gather graph: {n_index} aten.index.Tensor, {n_gather} aten.gather"
        gather_cuda = _cell(cells, "gather", "et_cuda")
        if n_index:
            found.verdict("index_dtype.gather_removes_index", "refuted", graph_part)
        elif not on_cuda or gather_cuda is None:
            found.verdict("index_dtype.gather_removes_index", "needs_cuda", f"{graph_part} (graph half holds); "
                          "whether it gets past the CUDA lowering needs a CUDA device")
        else:
            lower = gather_cuda.outcomes[0]
            text = _text(lower)
            state = "lowered" if lower.ok else f"{lower.status}: {lower.error[:160]}"
            if SEED_INDEX_ERROR in text:
                verdict, note = "refuted", "the gather version hits the same index dtype error"
            elif not lower.ok and FLOAT_POINTER_ERROR.search(text):
                verdict, note = "partly", ("past the aten.index assertion, but the same float32 index now reaches the "
                                           "gather's Triton kernel as a pointer offset and fails there: the dtype "
                                           "problem is moved, not fixed")
            else:
                verdict, note = "confirmed", "past the index dtype error"
            found.verdict("index_dtype.gather_removes_index", verdict,
                          f"{graph_part}; CudaPartitioner lowering of the gather variant: {state} — {note}")

    # gather_equivalent
    if equiv.empty:
        found.verdict("index_dtype.gather_equivalent", "error", "no equivalence cases ran")
    else:
        same = int(equiv["identical"].sum())
        verdict = "confirmed" if same == len(equiv) else "refuted"
        found.verdict("index_dtype.gather_equivalent", verdict,
                      f"{same}/{len(equiv)} random cases bit-identical (torch.equal), {int(equiv['ties'].sum())} with heavy "
                      f"score ties; batch 1–{equiv['batch'].max()}, nc 1–{equiv['nc'].max()}",
                      identical=same, cases=len(equiv))

    # et_cuda_full_model (with the fix)
    full_cuda = next((c for c in full_cells if c.path == "et_cuda"), None)
    if not on_cuda or full_cuda is None:
        found.verdict("index_dtype.et_cuda_full_model", "needs_cuda", "the full-model ExecuTorch CUDA lowering needs a "
                      "CUDA device; this run had none (or et_cuda was not among the full-model paths)")
    else:
        lower = full_cuda.outcomes[0]
        if lower.ok:
            found.verdict("index_dtype.et_cuda_full_model", "refuted",
                          f"full {full_cuda.variant} YOLO26 lowered through CudaPartitioner in {lower.seconds:.0f} s "
                          f"({lower.value.get('bytes', 0) / 1e6:.1f} MB .pte)", seconds=lower.seconds)
        elif lower.status == "timeout":
            found.verdict("index_dtype.et_cuda_full_model", "error", f"lowering did not finish: {lower.error}")
        elif "No choices to select" in _text(lower):
            found.verdict("index_dtype.et_cuda_full_model", "confirmed", f"lowering failed: {lower.error[:200]}")
        else:
            found.verdict("index_dtype.et_cuda_full_model", "partly",
                          f"lowering failed, but not with Triton's 'No choices to select': {lower.error[:200]}")

    # xnnpack_full_model
    full_xnn = next((c for c in full_cells if c.path == "et_xnnpack"), None)
    if full_xnn is None:
        found.verdict("index_dtype.xnnpack_full_model", "error", "et_xnnpack was not among the full-model paths")
    else:
        final = full_xnn.final
        if final.ok and agrees(full_xnn.delta):
            found.verdict("index_dtype.xnnpack_full_model", "confirmed",
                          f"full {full_xnn.variant} YOLO26 lowered to XNNPACK and ran in executorch.runtime: "
                          f"{full_xnn.delta['match_rate']:.1%} of eager's detections matched, sorted scores within "
                          f"{full_xnn.delta['score_max_abs']:.2g} (raw max |Δ| {full_xnn.delta['max_abs']:.3g})",
                          delta=full_xnn.delta)
        elif final.ok:
            found.verdict("index_dtype.xnnpack_full_model", "partly",
                          f"runs, but detections differ from eager: {full_xnn.delta.get('match_rate')} matched, sorted "
                          f"scores max |Δ| {full_xnn.delta.get('score_max_abs')}", delta=full_xnn.delta)
        else:
            found.verdict("index_dtype.xnnpack_full_model", "refuted" if final.status == "error" else "error",
                          f"{final.step}: {final.status}: {final.error[:200]}")
    return found.frame()


# --- interactive extra --------------------------------------------------------------------------

def explorer(cells: list[Cell]):
    """A JupyterLab widget: pick a matrix cell, see its steps' full errors, logs and graph excerpt."""
    import ipywidgets as widgets

    options = [(f"{c.variant} × {c.path} ({c.final.status})", i) for i, c in enumerate(cells)]
    picker = widgets.Dropdown(options=options, description="cell")
    view = widgets.Output()

    def show(change: Any = None) -> None:
        cell = cells[picker.value]
        view.clear_output()
        with view:
            for o in cell.outcomes:
                print(f"== {o.step}: {o.status} in {o.seconds:.2f} s {o.signal}")
                if o.error:
                    print(o.traceback or o.error)
                if o.log:
                    print("-- log (tail) --\n" + o.log[-4000:])
                if o.ok and isinstance(o.value, dict) and o.value.get("graph"):
                    print("-- graph excerpt --\n" + o.value["graph"])
            print("comparison with eager:", cell.delta)

    picker.observe(show, names="value")
    show()
    return widgets.VBox([picker, view])


# --- the notebook's driver --------------------------------------------------------------------

@dataclass
class Run:
    """What the notebook computed, kept together for display and verdicts."""

    base: Spec
    cells: list[Cell]
    full_cells: list[Cell]
    autotune_note: str


def autotune_note(autotune: bool) -> str:
    """What the kit changed in ExecuTorch's CUDA back-end settings, in words for the report."""
    if autotune:
        return "ExecuTorch CUDA lowering uses the back-end's default: Inductor max_autotune ON (Triton-only GEMM/conv)."
    return ("**Changed by the kit:** ExecuTorch CUDA lowering runs with Inductor `max_autotune=False` (compile spec "
            "`max_autotune=OFF`, and `CudaBackend.get_aoti_compile_options` wrapped inside the lowering's child process "
            "for releases that ignore that spec). The back-end's default turns max-autotune ON, which benchmarks every "
            "GEMM/conv shape and took over 9 minutes for the full yolo26n on an H100. Set `autotune = True` to keep "
            "the default. AOTI and torch.compile paths use Inductor's defaults (no max-autotune).")


def investigate(model: str, imgsz: int, batch: int, device: str, variants: list[str], paths: list[str], scope: str,
                full_model_paths: list[str], full_model_variant: str, step_timeout: float, autotune: bool,
                seed: int = 0, nc: int = 80, workers: int = 1) -> Run:
    """Run the matrix (variants × paths at `scope`) and the full-model checks; every step isolated."""
    yolo.offline_ultralytics()
    isolate.preload(*PRELOAD)
    workers = workers or max(1, min(6, (os.cpu_count() or 2) // 2))
    workdir = tempfile.mkdtemp(prefix="yolo26kit-index-dtype-")
    base = Spec(variant="legacy", scope=scope, model=model, imgsz=imgsz, batch=batch, nc=nc, seed=seed,
                device=device, workdir=workdir)
    plan = [(replace(base, variant=v), list(paths)) for v in variants]
    if full_model_paths:
        plan.append((replace(base, variant=full_model_variant, scope="full"), list(full_model_paths)))
    cells = status_matrix(plan, step_timeout, autotune, workers)
    full_cells = [c for c in cells if c.spec.scope == "full"]
    cells = [c for c in cells if c.spec.scope != "full"]
    return Run(base, cells, full_cells, autotune_note(autotune))


catalog.register(catalog.Investigation(
    name="index_dtype",
    title="YOLO26 top-k: advanced indexing vs torch.gather across export back-ends",
    seeds=("000_60ebd1ee51d51957.txt", "001_fda80f2472077657.txt"),
    profiles={
        "quick": {"scope": "postprocess", "imgsz": 320, "full_model_paths": ["et_xnnpack", "et_cuda"],
                  "equivalence_cases": 200, "autotune": False, "step_timeout": 300.0},
        "full": {"scope": "full", "imgsz": 640, "full_model_paths": ["export", "aoti", "compile", "et_xnnpack", "et_cuda"],
                 "equivalence_cases": 2000, "autotune": True, "step_timeout": 1500},
    },
    checks={
        "imgsz": catalog.positive_multiple_of(32),
        "variants": catalog.one_of(*VARIANTS),
        "paths": catalog.one_of(*PATHS),
        "full_model_paths": catalog.one_of(*PATHS),
        "full_model_variant": catalog.one_of(*VARIANTS),
        "scope": catalog.one_of("postprocess", "full"),
        "model": catalog.one_of(*(f"yolo26{s}" for s in yolo.SCALES)),
        "device": catalog.one_of("auto", "cpu", "cuda"),
        "batch": lambda v: None if v >= 1 else "must be at least 1",
        "workers": lambda v: None if v >= 0 else "must be 0 (automatic) or more",
    },
))
