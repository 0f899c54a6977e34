"""Index dtype (seeds 000/001): YOLO26's advanced-indexing top-k versus `torch.gather` across export back-ends.

Variants of the Detect head's end-to-end top-k:
  legacy   — the seed's original `ori_index[torch.arange(batch)[..., None], index // nc]` (aten.index.Tensor),
             with the postprocess of that ultralytics release (boxes gathered with `idx.repeat(1, 1, 4)`);
  legacy_cast — legacy with the explicit `.to(torch.int64)` the seed says is not enough;
  gather   — the seed's fix, `torch.gather(ori_index, 1, (index // nc).unsqueeze(-1))`;
  upstream — whatever the installed ultralytics ships (its pattern is read from the exported graph).

Paths, each step in an isolated child (isolate.run_step): eager, torch.export, AOTI, torch.compile,
ExecuTorch XNNPACK (lower + run), ExecuTorch CUDA (CudaPartitioner lower; run where the runtime has the backend).
AOTI packages compile with `aoti.compile_package` and load through `aoti.run_step` (as is, then with the
workaround when the load crashed from a known cause).

Probes (CUDA): single post-processing ops and the backbone alone through the ExecuTorch CUDA back-end, the backbone
again with ATen allowed among the convolution back-ends, and whether a subprocess of a step sees the GPU.

Ties in top-k: legacy and gather share every top-k call and differ only in how the winning anchor
indices are picked from `ori_index`, which is a pure lookup; so they must agree bit for bit whatever
order top-k breaks ties in, and the kit compares them with `torch.equal`, not allclose.
"""

from __future__ import annotations

import contextlib
import copy
import os
import re
import tempfile
import threading
import types
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from .. import aoti, artifacts, catalog, findings, graphs, isolate, yolo
from ..detections import MIN_MATCH_RATE, agrees, compare  # noqa: F401 (MIN_MATCH_RATE: re-exported)
from ..verdicts import Judgement
from ..backends import executorch_cuda

VARIANTS = ("legacy", "gather", "upstream", "legacy_cast")
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


def legacy_cast_get_topk_index(self: Any, scores: torch.Tensor, max_det: int):
    """The seed's original top-k with explicit int64 casts on the top-k index and on `index // nc`."""
    batch_size, anchors, nc = scores.shape
    k = max_det if self.export else min(max_det, anchors)
    ori_index = scores.max(dim=-1)[0].topk(k)[1].unsqueeze(-1)
    scores = scores.gather(dim=1, index=ori_index.repeat(1, 1, nc))
    scores, index = scores.flatten(1).topk(k)
    index = index.to(torch.int64)
    idx = ori_index[torch.arange(batch_size)[..., None], (index // nc).to(torch.int64)]
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
        topk = {"legacy": legacy_get_topk_index, "legacy_cast": legacy_cast_get_topk_index}.get(
            variant, gather_get_topk_index)
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


class OpProbe(torch.nn.Module):
    """One post-processing operator alone (seed 001's list): topk, index (aten.index.Tensor) or index_put."""

    def __init__(self, op: str, k: int = 300) -> None:
        super().__init__()
        if op not in OPS:
            raise ValueError(f"unknown op {op!r}; choose from {OPS}")
        self.op, self.k = op, k

    def forward(self, scores: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        batch = torch.arange(scores.shape[0], device=scores.device)[:, None]
        if self.op == "topk":
            values, where = scores.max(dim=-1)[0].topk(self.k)
            return torch.stack([values, where.float()], dim=-1)
        if self.op == "index":
            return scores[batch, index]  # aten.index.Tensor with two int64 index tensors
        return scores.index_put((batch, index), torch.zeros((), device=scores.device))  # aten.index_put


OPS = ("topk", "index", "index_put")
SCOPES = ("postprocess", "full", "backbone", *(f"op_{op}" for op in OPS))


@dataclass(frozen=True)
class Spec:
    """Everything a child process needs to rebuild the same module and inputs.

    scope: postprocess (the head's top-k alone), full (end-to-end model), backbone (the model without the
    top-k: raw [B, 4+nc, anchors] outputs, seed 001's "hybrid" export) or op_<name> (one operator alone).
    conv_backends: Inductor's max_autotune_conv_backends for the ExecuTorch CUDA lowering ("" = the back-end's).
    autotune: keep the back-end's max-autotune (its default); False is a kit option, recorded as such.
    """

    variant: str
    scope: str = "postprocess"
    model: str = "yolo26n"
    imgsz: int = 320
    batch: int = 1
    nc: int = 80
    seed: int = 0
    device: str = "cpu"
    workdir: str = ""
    conv_backends: str = ""
    autotune: bool = True

    @property
    def backend_options(self) -> str:
        """The ExecuTorch CUDA lowering's options as a recorded condition: "defaults" or "kit: ..." naming each change."""
        return executorch_cuda.options_label(executorch_cuda.kit_overrides(self.autotune, self.conv_backends))

    @property
    def whole_model(self) -> bool:
        """The model's convolutions are in the graph (the back-end's max-autotune then tunes every one)."""
        return self.scope in ("full", "backbone")

    @property
    def tag(self) -> str:
        if self.scope.startswith("op_"):
            return self.scope
        extra = f"-conv_{self.conv_backends.replace(',', '+').lower()}" if self.conv_backends else ""
        return f"{self.scope}-{self.variant}{extra}"


def build_module(spec: Spec) -> torch.nn.Module:
    """The spec's module in eval mode on its device."""
    if spec.scope == "postprocess":
        module = PostprocessOnly(spec.variant, spec.nc)
    elif spec.scope in ("full", "backbone"):
        module = yolo.build(spec.model, nc=spec.nc, seed=spec.seed, end2end=spec.scope == "full")
        if spec.scope == "full":
            apply_variant(yolo.detect_head(module), spec.variant)
    elif spec.scope.startswith("op_"):
        module = OpProbe(spec.scope.removeprefix("op_"))
    else:
        raise ValueError(f"unknown scope {spec.scope!r}; choose from {SCOPES}")
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
    if spec.scope.startswith("op_"):
        preds = random_preds(spec.batch, anchors_for(spec.imgsz), spec.nc, spec.seed)[..., 4:]
        index = torch.randint(0, preds.shape[1], (spec.batch, 300), generator=torch.Generator().manual_seed(spec.seed))
        return preds.to(spec.device), index.to(spec.device)
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
    """AOT Inductor package of the spec's exported program (Inductor's defaults; the kit's package cache)."""
    package = str(Path(spec.workdir) / f"{spec.tag}.aoti.pt2")
    aoti.compile_package(export(spec), package)
    return {"package": package, "bytes": os.path.getsize(package)}


def step_aoti_run(spec: Spec, package: str) -> dict[str, Any]:
    """Load the package and run it once (through aoti.run_step: loading has crashed whole processes)."""
    runner = aoti.load(package)
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

    def lower(ep: Any) -> tuple[bytes, dict[str, Any]]:
        return to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch().buffer, {}

    ep = export(replace(spec, device="cpu"))  # XNNPACK is a CPU back-end
    data, facts = artifacts.lowered_program(ep, "xnnpack", lower)
    pte = Path(spec.workdir) / f"{spec.tag}.xnnpack.pte"
    pte.write_bytes(data)
    return {"pte": str(pte), "bytes": len(data), "delegated": b"XnnpackBackend" in data, "cached": facts["cached"]}


# The ExecuTorch CUDA back-end lives in backends.executorch_cuda; these names stay for callers of this module.
_cuda_compile_specs = executorch_cuda.compile_specs
_override_cuda_options = executorch_cuda.override_options
_force_autotune_off = executorch_cuda.force_autotune_off
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


# --- the status matrix -----------------------------------------------------------------------------

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
                "cached": bool(outcomes[0].ok and isinstance(outcomes[0].value, dict) and outcomes[0].value.get("cached")),
                "failed step": "" if final.ok else final.step, "error": final.error[:200],
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


WHOLE_MODEL_SKIP = ("the back-end's default lowering of the whole model autotunes every convolution, many minutes on an "
                    "H100; --profile full runs it")
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
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
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


def matrix_frame(cells: list[Cell]) -> pd.DataFrame:
    """The status matrix as a table, ultralytics-benchmark style (an AOTI cell shows each load attempt)."""
    return pd.DataFrame([row for c in cells for row in c.rows()])


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
    for c in run.cells + run.full_cells + run.probe_cells:
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
        casts = re.findall(r"ops\.to_dtype\([^,]+,\s*(torch\.\w+)", "\n".join(body))
        used = [op for op in ("reciprocal", "truediv", "mul", "floor") if f"ops.{op}(" in "\n".join(body)]
        used += ["multiply (*)"] if re.search(r"= tmp\d+ \* ", "\n".join(body)) else []
        used += [f"to_dtype → {c.removeprefix('torch.')}" for c in casts]
        cast_back = "torch.int64" in casts
        lines.append(f"The float32 index of `aten.index.Tensor` is built by Inductor while lowering node "
                     f"`{origin.group(1) if origin else '?'}`: `{'; '.join(body)}` — Inductor ops "
                     f"{', '.join(used) or 'none recognised'} in its IR, "
                     f"{'with' if cast_back else 'no'} cast back to int64 there. Whether the FX graph before Inductor "
                     "is int64 throughout is in the table above.")
    passes = root["passes"]
    names = list(passes["pass"]) if "pass" in passes else []
    division = ("aten.div.Tensor_mode", "aten.floor_divide")
    rows = passes.to_dict("records") if "removed ops" in passes else []
    touching = [r for r in rows if any(d in (r.get("removed ops") or []) for d in division)]
    if touching:
        r = touching[0]
        lines.append(f"The installed executorch's CUDA back-end applies `{r['pass']}`, which in the replay above removed "
                     f"{', '.join(d for d in division if d in r['removed ops'])} and added "
                     f"{', '.join(r.get('added ops') or []) or 'nothing'} before AOT Inductor sees the graph.")
    else:
        unreplayed = [r["pass"] for r in rows if r.get("error")]
        lines.append(f"The installed executorch's CUDA back-end applies {', '.join(f'`{n}`' for n in names) or 'no passes'}; "
                     "in the replay above none of them removed a floor-division node"
                     + (f" ({', '.join(unreplayed)} could not be replayed here)" if unreplayed else "") + ".")
    return "\n\n".join(lines)


# --- verdicts ---------------------------------------------------------------------------------
#
# Every judge returns a verdicts.Judgement whose `run` holds the run's value of each condition the ledger names for
# its claim (back-end, the ExecuTorch CUDA lowering's `backend_options`, device, input size, top-k variant ...):
# verdicts.settle turns a decisive verdict reached under other conditions (a kit option among them) into
# `inconclusive`. A lowering that did not finish (timeout, crash, out of memory) or was not run decides nothing.

UNFINISHED = ("timeout", "crash", "oom")
MISSING_FALLBACK = "missing fallback kernels"
NOT_IMPLEMENTED = "Lowering not implemented"


def _cell(cells: list[Cell], variant: str, path: str) -> Cell | None:
    return next((c for c in cells if c.variant == variant and c.path == path), None)


def _text(outcome: isolate.Outcome) -> str:
    return "\n".join([outcome.error, outcome.traceback, outcome.log])


@dataclass
class Results:
    """Everything the judges read: the run's cells and side steps, and the equivalence table."""

    run: "Run"
    equiv: pd.DataFrame

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


def _lowering(cell: Cell | None) -> isolate.Outcome | None:
    return cell.outcomes[0] if cell is not None and cell.outcomes else None


def _et_run(res: Results, cell: Cell, **more: Any) -> dict[str, Any]:
    """The run's conditions of an ExecuTorch CUDA cell: back-end, its options, device, input size, top-k variant."""
    return {"backend": "executorch-cuda", "backend_options": cell.spec.backend_options, "device": res.device,
            "imgsz": cell.spec.imgsz, "topk": cell.variant, **more}


def _where(cell: Cell) -> str:
    what = {"full": "whole model", "backbone": "backbone (raw outputs)", "postprocess": "postprocess"}.get(
        cell.scope, cell.scope)
    return f"{what}, {cell.spec.imgsz} px, backend_options {cell.spec.backend_options}"


def _undecided(lower: isolate.Outcome, what: str, run: dict[str, Any]) -> Judgement | None:
    """`inconclusive` when the lowering was skipped or did not finish; None when it ended with an answer."""
    if lower.status == "skipped":
        return Judgement("inconclusive", f"{what}: not lowered in this run ({lower.error})", {}, run=run)
    if lower.status in UNFINISHED:
        return Judgement("inconclusive", f"{what}: the lowering ended with {lower.status} after {lower.seconds:.0f} s "
                         f"({lower.error[:160]}); a lowering that did not finish says nothing about the claim",
                         {"status": lower.status}, run=run)
    return None


def _no_cuda(cpu_part: str) -> Judgement:
    return Judgement("needs_cuda", f"No CUDA device in this run: the ExecuTorch CUDA lowering needs one; on CPU: "
                     f"{cpu_part}.", {}, run={"device": "cpu"})


def _options_text(res: Results) -> str:
    o = res.run.cuda_options
    if o is None or not o.ok:
        return "ExecuTorch's CUDA back-end options could not be read" + (f" ({o.error})" if o is not None else "")
    v = o.value
    return (f"ExecuTorch's CUDA back-end compiles with max_autotune={v.get('max_autotune')}, "
            f"max_autotune_conv_backends={v.get('max_autotune_conv_backends')!r}, "
            f"max_autotune_gemm_backends={v.get('max_autotune_gemm_backends')!r}, "
            f"aot_inductor.link_libtorch={v.get('aot_inductor.link_libtorch')}")


def judge_fx_int64(res: Results) -> Judgement:
    """Every aten.index.Tensor index argument of the legacy graph is int64 after torch.export."""
    run = {"backend": "torch.export", "topk": "legacy"}
    legacy_export = res.cell("legacy", "export")
    if legacy_export is None or not legacy_export.final.ok:
        return Judgement("error", f"torch.export of the legacy variant did not run: "
                         f"{legacy_export.final.error if legacy_export else 'not in the run'}", basis="none")
    rows = legacy_export.final.value["scan"]
    index_rows = [r for r in rows if r["target"].startswith("aten.index.Tensor")]
    dtypes = [r["index_dtypes"] for r in index_rows]
    if not index_rows:
        return Judgement("inconclusive", "0 aten.index.Tensor nodes in the legacy graph after torch.export: no index "
                         "argument to check", {"nodes": []}, run=run)
    ok = bool(graphs.all_int64(rows))
    return Judgement("confirmed" if ok else "refuted",
                     f"{len(index_rows)} aten.index.Tensor node(s) after torch.export; index dtypes {dtypes}",
                     {"nodes": index_rows}, run=run)


def _float_index_verdict(res: Results, cell: Cell, what: str) -> Judgement:
    """'This lowering fails with the seed's float32 index error': confirmed only on that error with float32 among the
    index dtypes; not_reproduced when it lowers; inconclusive when it failed otherwise or did not finish."""
    lower = cell.outcomes[0]
    run = _et_run(res, cell)
    what = f"{what} ({_where(cell)})"
    undecided = _undecided(lower, what, run)
    if undecided is not None:
        return undecided
    if lower.ok:
        return Judgement("not_reproduced", f"{what}: lowered through CudaPartitioner in {lower.seconds:.1f} s without "
                         "the index dtype error", {"seconds": lower.seconds}, run=run)
    text = _text(lower)
    details = lowering_error_details(text)
    if SEED_INDEX_ERROR in text and "float32" in details["dtypes"]:
        return Judgement("confirmed", f"{what}: lowering failed on {details['target'] or 'an index node'}: "
                         f"{lower.error[:200]}", {"details": details}, run=run)
    return Judgement("inconclusive", f"{what}: lowering failed with another error before any index dtype error: "
                     f"{lower.error[:200]}; whether the index would be float32 cannot be told from it",
                     {"details": details}, run=run)


def judge_et_cuda_float_index(res: Results) -> Judgement:
    """The legacy top-k fails the ExecuTorch CUDA lowering (the back-end's defaults) with a float32 index."""
    if not res.on_cuda:
        return _no_cuda("the legacy graph's index arguments are int64 after torch.export (fx_int64); the float32 "
                        "appears inside the CUDA lowering")
    legacy_cuda = res.cell("legacy", "et_cuda")
    if legacy_cuda is None:
        return Judgement("error", "et_cuda was not among the paths", basis="none")
    return _float_index_verdict(res, legacy_cuda, "legacy advanced-indexing top-k")


def judge_aoti_float_index(res: Results) -> Judgement:
    """Plain AOT Inductor (Inductor's defaults, no ExecuTorch): does its type inference see the float32 index too?
    Plain AOTI compiles on any device, so the CPU run answers when AOTI itself fails; when it compiles, telling
    `refuted` (AOTI never sees float32) from `partly` (only the AOTI inside ExecuTorch's CUDA lowering does) needs
    that lowering, on CUDA."""
    cell = res.cell("legacy", "aoti")
    run: dict[str, Any] = {"topk": "legacy", "backend_options": "defaults"}
    if cell is None:
        return Judgement("error", "the aoti path was not among the paths, so plain AOT Inductor was not tried",
                         basis="none")
    compiled = cell.outcomes[0]
    device = res.device.upper() if res.on_cuda else "CPU"
    what = f"plain AOT Inductor (aoti_compile_and_package, Inductor's defaults) of the legacy top-k on {device}"
    undecided = _undecided(compiled, what, run)
    if undecided is not None:
        return undecided
    if not compiled.ok:
        if SEED_INDEX_ERROR in _text(compiled):
            return Judgement("confirmed", f"{what} fails: {compiled.error[:200]}", {}, run=run)
        return Judgement("inconclusive", f"{what} failed with another error: {compiled.error[:200]}", {}, run=run)
    loads = ", ".join(f"{o.details.get('aoti_load')}: {o.status}" for o in cell.aoti_loads) or "not loaded"
    ran = f"its package ran ({loads}), {_matched(cell)} of eager's detections matched" if cell.final.ok else \
        f"load/run: {loads}"
    text = f"0 index dtype errors: {what} compiled in {compiled.seconds:.0f} s and {ran}"
    if not res.on_cuda:
        return Judgement("inconclusive", f"{text}; the seed's error arises inside ExecuTorch's CUDA lowering, which "
                         "needs a CUDA device: this run cannot tell refuted (AOT Inductor never sees float32) from "
                         "partly (only the AOT Inductor inside ExecuTorch's CUDA lowering does)", {"loads": loads},
                         run=run)
    et_cell = res.cell("legacy", "et_cuda")
    et = _lowering(et_cell)
    if et_cell is None or et is None:
        return Judgement("inconclusive", f"{text}; the ExecuTorch CUDA lowering of the legacy top-k was not run, so "
                         "refuted cannot be told from partly", {"loads": loads}, run=run)
    run.update(backend_options=et_cell.spec.backend_options)
    undecided = _undecided(et, f"{text}; ExecuTorch CUDA ({_where(et_cell)})", run)
    if undecided is not None:
        return undecided
    if SEED_INDEX_ERROR in _text(et):
        return Judgement("partly", f"{text}; only the ExecuTorch CUDA lowering ({_where(et_cell)}; {_options_text(res)}) "
                         "sees the float32 index", {"loads": loads}, run=run)
    if et.ok:
        return Judgement("refuted", f"{text}; the ExecuTorch CUDA lowering ({_where(et_cell)}) lowered it without the "
                         "index error too", {"loads": loads}, run=run)
    return Judgement("inconclusive", f"{text}; the ExecuTorch CUDA lowering failed with another error: "
                     f"{et.error[:160]}", {"loads": loads}, run=run)


def _matched(cell: Cell) -> str:
    rate = cell.delta.get("match_rate")
    return f"{rate:.0%}" if isinstance(rate, float) else ("all" if cell.delta.get("exact") else "?")


def judge_explicit_cast(res: Results) -> Judgement:
    """The legacy top-k with explicit .to(torch.int64) casts still hits the float32 index in the CUDA lowering."""
    export_cell = res.cell("legacy_cast", "export", scope="postprocess")
    if export_cell is None or not export_cell.final.ok:
        return Judgement("error", "the legacy_cast variant was not exported (the `cast` probe is off, or its export "
                         "failed)", basis="none")
    rows = [r for r in export_cell.final.value["scan"] if r["target"].startswith("aten.index.Tensor")]
    graph = (f"{len(rows)} aten.index.Tensor in the cast variant's exported graph, index dtypes "
             f"{[r['index_dtypes'] for r in rows]}"
             + (" (all int64 already, so the casts change no dtype)" if rows and graphs.all_int64(rows) else ""))
    if not res.on_cuda:
        return _no_cuda(graph)
    cast_cuda = res.cell("legacy_cast", "et_cuda", scope="postprocess")
    if cast_cuda is None:
        return Judgement("error", "the cast variant's ExecuTorch CUDA lowering was not run", basis="none")
    judged = _float_index_verdict(res, cast_cuda, "legacy top-k with .to(torch.int64)")
    if judged.verdict == "not_reproduced":
        legacy_cell = res.cell("legacy", "et_cuda")
        legacy = _lowering(legacy_cell)
        if legacy is not None and SEED_INDEX_ERROR in _text(legacy) \
                and legacy_cell.spec.backend_options == cast_cuda.spec.backend_options:
            judged.verdict = "refuted"
            judged.evidence += "; the legacy top-k without the casts hit the index error under the same options"
    judged.evidence = f"{judged.evidence}; {graph}"
    return judged


def judge_gather_removes_index(res: Results) -> Judgement:
    """The gather graph has no aten.index.Tensor and its CUDA lowering gets past the index error."""
    gather_export = res.cell("gather", "export")
    if gather_export is None or not gather_export.final.ok:
        return Judgement("error", "torch.export of the gather variant did not run", basis="none")
    n_index = graphs.count(gather_export.final.value["scan"], "aten.index.Tensor")
    n_gather = graphs.count(gather_export.final.value["scan"], "aten.gather")
    graph_part = f"gather graph: {n_index} aten.index.Tensor, {n_gather} aten.gather"
    gather_cuda = res.cell("gather", "et_cuda")
    if n_index:
        why = "the graph half already fails in torch.export's graph, measured here before any back-end runs"
        run = {"backend": "torch.export", "device": res.device, "topk": "gather",
               "backend_options": gather_cuda.spec.backend_options if gather_cuda else "none"}
        return Judgement("refuted", graph_part, {}, run=run,
                         irrelevant={k: why for k in ("backend", "device", "backend_options")})
    if not res.on_cuda:
        return _no_cuda(f"{graph_part} (the graph half holds); whether it gets past the CUDA lowering needs a CUDA "
                        "device")
    if gather_cuda is None:
        return Judgement("error", f"{graph_part}; et_cuda was not among the paths", basis="none")
    lower = gather_cuda.outcomes[0]
    run = _et_run(res, gather_cuda)
    what = f"{graph_part}; CudaPartitioner lowering of the gather variant ({_where(gather_cuda)})"
    undecided = _undecided(lower, what, run)
    if undecided is not None:
        return undecided
    text = _text(lower)
    if lower.ok:
        return Judgement("confirmed", f"{what}: lowered in {lower.seconds:.0f} s, past the index dtype error", {}, run=run)
    if SEED_INDEX_ERROR in text:
        return Judgement("refuted", f"{what}: {lower.error[:160]} — the same index dtype error", {}, run=run)
    if FLOAT_POINTER_ERROR.search(text):
        return Judgement("partly", f"{what}: {lower.error[:120]} — past the aten.index assertion, but the float32 index "
                         "now reaches the gather's Triton kernel as a pointer offset ('"
                         f"{FLOAT_POINTER_ERROR.search(text).group(0)}'): the dtype problem is moved, not fixed",
                         {}, run=run)
    return Judgement("inconclusive", f"{what}: failed with another error ({lower.error[:160]}); whether it got past "
                     "the index lowering cannot be told from it", {}, run=run)


def judge_gather_int64_ops(res: Results) -> Judgement:
    """The gather graph exports the seed's number of aten.gather nodes (the ledger's band), every index int64."""
    claim = "index_dtype.gather_int64_ops"
    gather_export = res.cell("gather", "export")
    if gather_export is None or not gather_export.final.ok:
        return Judgement("error", "torch.export of the gather variant did not run", basis="none")
    lo, hi = findings.band_of(claim)
    rows = [r for r in gather_export.final.value["scan"] if r["target"].startswith("aten.gather")]
    dtypes = [r["index_dtypes"] for r in rows]
    all64 = bool(rows) and all(d == "int64" for d in dtypes)
    count_ok = lo <= len(rows) <= hi
    verdict = "confirmed" if all64 and count_ok else ("partly" if all64 or (count_ok and rows) else "refuted")
    expected = f"{lo:g}" if lo == hi else f"{lo:g}–{hi:g}"
    return Judgement(verdict, f"{len(rows)} aten.gather node(s) in the gather variant's exported graph (the seed: "
                     f"{expected}); index dtypes {dtypes}",
                     {"nodes": [{k: r[k] for k in ("node", "index_dtypes", "source")} for r in rows]},
                     run={"backend": "torch.export", "topk": "gather"})


def judge_gather_equivalent(res: Results) -> Judgement:
    """legacy and gather agree bit for bit on random heads, ties included: every case, or the claim is refuted."""
    equiv = res.equiv
    if equiv.empty:
        return Judgement("error", "no equivalence cases ran", basis="none")
    same = int(equiv["identical"].sum())
    return Judgement("confirmed" if same == len(equiv) else "refuted",
                     f"{same}/{len(equiv)} random cases bit-identical (torch.equal), {int(equiv['ties'].sum())} with "
                     f"heavy score ties; batch 1–{equiv['batch'].max()}, nc 1–{equiv['nc'].max()}",
                     {"identical": same, "cases": len(equiv)}, run={"precision": "fp32"})


def judge_gather_upstreamed(res: Results) -> Judgement:
    """The installed ultralytics' top-k, read from its exported graph: gather (upstreamed) or advanced indexing."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("ultralytics")
    except PackageNotFoundError:
        release = "?"
    cell = res.cell("upstream", "export")
    if cell is None or not cell.final.ok:
        return Judgement("error", "the upstream variant was not exported (add `upstream` to variants)", basis="none")
    rows = cell.final.value["scan"]
    n_index, n_gather = graphs.count(rows, "aten.index.Tensor"), graphs.count(rows, "aten.gather")
    text = f"{n_index} aten.index.Tensor and {n_gather} aten.gather in ultralytics {release}'s exported top-k"
    run = {"model_variant": "stock"}
    if not n_index and n_gather:
        return Judgement("confirmed", f"{text}: the installed release already selects with gather",
                         {"ultralytics": release}, run=run)
    return Judgement("not_reproduced", f"{text}: the installed release still uses advanced indexing",
                     {"ultralytics": release}, run=run)


def _full_cuda(res: Results) -> Cell | None:
    return next((c for c in res.run.full_cells if c.path == "et_cuda" and not c.spec.conv_backends), None)


def judge_et_cuda_full_model(res: Results) -> Judgement:
    """The full model (with the gather fix) fails the ExecuTorch CUDA lowering, under the back-end's defaults, with
    Triton's 'No choices to select'."""
    if not res.on_cuda:
        return _no_cuda(_options_text(res))
    full_cuda = _full_cuda(res)
    if full_cuda is None:
        return Judgement("error", "et_cuda was not among the full-model paths", basis="none")
    lower = full_cuda.outcomes[0]
    run = _et_run(res, full_cuda)
    what = f"full {full_cuda.variant} YOLO26 ({_where(full_cuda)})"
    undecided = _undecided(lower, what, run)
    if undecided is not None:
        return undecided
    if lower.ok:
        return Judgement("refuted", f"{what} lowered through CudaPartitioner in {lower.seconds:.0f} s "
                         f"({lower.value.get('bytes', 0) / 1e6:.1f} MB .pte)", {"seconds": lower.seconds}, run=run)
    text = _text(lower)
    if "No choices to select" in text:
        kind = ("every candidate failed to compile" if "All choices failed" in text else
                "no candidate existed" if "No choices exist" in text else "no candidate left")
        return Judgement("confirmed", f"{what}: lowering failed, {kind}: {lower.error[:200]}", {"kind": kind}, run=run)
    return Judgement("partly", f"{what}: lowering failed, but not with Triton's 'No choices to select': "
                     f"{lower.error[:200]}", {}, run=run)


def _backbone_aten(res: Results) -> Cell | None:
    return res.probe("backbone", ATEN_CONV) or res.probe("full", ATEN_CONV)


def judge_triton_worker_gpu(res: Results) -> Judgement:
    """Is the NoValidChoicesError of the default lowering about worker subprocesses and the GPU? Decided by the error
    itself (no candidate at all: no worker compiled anything) and by whether a subprocess of a step can use the GPU;
    the same lowering with ATen allowed among the conv back-ends is shown beside."""
    if not res.on_cuda:
        return _no_cuda(f"{_options_text(res)}, so a convolution may only become a Triton template")
    lowerings = [(label, cell, _lowering(cell)) for label, cell in (("full model", _full_cuda(res)),
                                                                     ("backbone", res.probe("backbone")))
                 if cell is not None]
    failure = next(((label, cell, lower) for label, cell, lower in lowerings
                    if lower is not None and not lower.ok and "No choices" in _text(lower)), None)
    if failure is None:
        done = [(label, cell, lower) for label, cell, lower in lowerings if lower is not None
                and lower.status not in ("skipped", *UNFINISHED)]
        if not done:
            first = next(((label, cell, lower) for label, cell, lower in lowerings if lower is not None), None)
            if first is None:
                return Judgement("error", "neither the full-model nor the backbone ExecuTorch CUDA lowering was planned",
                                 basis="none")
            label, cell, lower = first
            return _undecided(lower, f"{label} ({_where(cell)})", _et_run(res, cell))
        label, cell, lower = done[0]
        state = "lowered" if lower.ok else f"failed otherwise ({lower.error[:120]})"
        return Judgement("not_reproduced", f"0 NoValidChoicesError: the {label} ({_where(cell)}) {state}", {},
                         run=_et_run(res, cell))
    where, cell, lower = failure
    run = _et_run(res, cell)
    text = _text(lower)
    aten = _lowering(_backbone_aten(res))
    aten_text = ("not tried" if aten is None else aten.error if aten.status == "skipped" else
                 f"lowered in {aten.seconds:.0f} s" if aten.ok else f"{aten.status}: {aten.error[:160]}")
    evidence = f"{where} lowering ({_where(cell)}): {lower.error[:160]}; with ATen allowed among the conv back-ends: {aten_text}"
    if "No choices exist" in text:
        return Judgement("refuted", f"{evidence} — no candidate existed at all, so no worker compiled or benchmarked "
                         "anything: GPU access of workers cannot be the cause", {"kind": "no candidates"}, run=run)
    gpu = res.run.gpu_subprocess
    if gpu is None or not gpu.ok:
        return Judgement("inconclusive", f"{evidence}; the subprocess GPU probe did not run "
                         f"({gpu.error if gpu else 'not among the probes'})", {}, run=run)
    sees = bool(gpu.value.get("available")) and gpu.value.get("matmul_sum") == 64.0 ** 3
    data = {"kind": "candidates failed", "subprocess_gpu": gpu.value}
    if sees:
        return Judgement("refuted", f"{evidence}; a Python subprocess started from a step ran a matmul on the GPU "
                         f"(sum {gpu.value.get('matmul_sum')}): workers can reach it", data, run=run)
    return Judgement("confirmed", f"{evidence}; a subprocess started from a step could not use the GPU ({gpu.value})",
                     data, run=run)


def judge_no_aten_fallback(res: Results) -> Judgement:
    """With ATen allowed among the conv back-ends (the change the 'No choices' error suggests), does ExecuTorch's CUDA
    back-end take the ATen convolutions? Confirmed only on its own refusal ('missing fallback kernels') or a runtime
    that lacks the shim the program calls; refuted when the ATen convolution lowers and the runtime defines it."""
    if not res.on_cuda:
        return _no_cuda(_options_text(res))
    elsewhere = [f"{c.spec.tag} ({c.spec.backend_options}): {_lowering(c).error[:100]}" for c in res.et_cuda_cells()
                 if _lowering(c) is not None and MISSING_FALLBACK in _text(_lowering(c))
                 and not c.spec.conv_backends]
    also = f"; elsewhere in this run: {'; '.join(elsewhere)}" if elsewhere else ""
    cell = _backbone_aten(res)
    if cell is None:
        return Judgement("error", "the backbone_aten / full_aten probe was not run", basis="none")
    lower = cell.outcomes[0]
    run = _et_run(res, cell)
    what = f"with max_autotune_conv_backends={ATEN_CONV!r} the {_where(cell)}"
    undecided = _undecided(lower, what, run)
    if undecided is not None:
        undecided.evidence += also
        return undecided
    text = _text(lower)
    if not lower.ok:
        if MISSING_FALLBACK in text:
            return Judgement("confirmed", f"{what} fails: {lower.error[:200]} — the back-end refuses the ATen "
                             f"kernels Inductor fell back to{also}", {"elsewhere": elsewhere}, run=run)
        return Judgement("inconclusive", f"{what} failed with another error ({lower.error[:200]}); it says nothing "
                         f"about an ATen fallback{also}", {}, run=run)
    calls = lower.value.get("shim_calls", [])
    conv_calls = [c for c in calls if "convolution" in c]
    shims = res.run.runtime_shims
    defined = sorted({n for names in (shims.value or {}).values() for n in names}) if shims and shims.ok else []
    missing = [c for c in conv_calls if c not in defined]
    base = (f"{what} lowered in {lower.seconds:.0f} s, calling {', '.join(conv_calls) or 'no aoti_torch_cuda_*convolution'}"
            f" (AOTI's C shim to ATen); the installed executorch defines {len(defined)} aoti_torch_cuda_* shims")
    data = {"shim_calls": calls, "runtime_defines": defined, "elsewhere": elsewhere}
    if not conv_calls:
        return Judgement("inconclusive", f"{base}: no ATen convolution was chosen, so no fallback was exercised{also}",
                         data, run=run)
    if not defined:
        return Judgement("inconclusive", f"{base}: this executorch build has no CUDA runtime to check against{also}",
                         data, run=run)
    if missing:
        return Judgement("confirmed", f"{base}, not {', '.join(missing)}: the program calls an ATen fallback the "
                         f"runtime does not have{also}", data, run=run)
    if elsewhere:
        return Judgement("partly", f"{base}, {', '.join(conv_calls)} among them: ATen convolutions fall back, other "
                         f"ATen kernels do not{also}", data, run=run)
    return Judgement("refuted", f"{base}, {', '.join(conv_calls)} among them: the ATen convolution fallback exists",
                     data, run=run)


def judge_postprocess_ops(res: Results) -> Judgement:
    """Each of index_put, topk and index.Tensor alone through the ExecuTorch CUDA lowering (no convolution or matmul:
    the back-end's defaults lower them in seconds)."""
    cells = {op: res.probe(f"op_{op}") for op in OPS}
    if not res.on_cuda:
        legacy = res.cell("legacy", "export")
        found = {t: graphs.count(legacy.final.value["scan"], t) for t in ("aten.index.Tensor", "aten.index_put")} \
            if legacy is not None and legacy.final.ok else {}
        return _no_cuda(f"the legacy top-k graph has {found or 'no scan'} (topk is not an indexing op; the op probes "
                        "run on CUDA only)")
    if any(c is None for c in cells.values()):
        return Judgement("error", "the `ops` probe was not run", basis="none")
    state = {}
    for op, cell in cells.items():
        lower = cell.outcomes[0]
        text = _text(lower)
        state[op] = ("lowered" if lower.ok else "not implemented" if NOT_IMPLEMENTED in text
                     else "no fallback kernel" if MISSING_FALLBACK in text
                     else f"{lower.status}: {lower.error[:100]}")
    unsupported = [op for op, s in state.items() if s in ("not implemented", "no fallback kernel")]
    lowered = [op for op, s in state.items() if s == "lowered"]
    options = sorted({c.spec.backend_options for c in cells.values()})
    run = {"backend": "executorch-cuda", "backend_options": options, "device": res.device}
    evidence = (f"{len(lowered)} of {len(OPS)} operators lowered alone through CudaPartitioner (backend_options "
                f"{', '.join(options)}), {len(unsupported)} unsupported: "
                + "; ".join(f"{k}: {v}" for k, v in state.items())
                + f" ({sum(s == 'not implemented' for s in state.values())} with the seed's '{NOT_IMPLEMENTED}')")
    if unsupported and lowered:
        verdict = "partly"
    elif len(unsupported) == len(OPS):
        verdict = "confirmed"
    elif len(lowered) == len(OPS):
        verdict = "refuted"
    else:
        verdict = "inconclusive"  # some lowerings ended in a way that says nothing about support
    return Judgement(verdict, evidence, {"ops": state}, run=run)


def judge_backbone_static(res: Results) -> Judgement:
    """The backbone alone (raw outputs, static size) exports (lowers) through the ExecuTorch CUDA back-end with its
    default options; it runs and matches eager where the runtime has the back-end."""
    if not res.on_cuda:
        return _no_cuda(f"{_options_text(res)}; the backbone is convolutions")
    cell = res.probe("backbone")
    if cell is None:
        return Judgement("error", "the `backbone` probe was not run", basis="none")
    lower = cell.outcomes[0]
    run = _et_run(res, cell)
    size = f"{cell.spec.imgsz}x{cell.spec.imgsz}"
    what = f"the static {size} backbone (raw outputs; backend_options {cell.spec.backend_options})"
    undecided = _undecided(lower, what, run)
    if undecided is not None:
        return undecided
    if not lower.ok:
        return Judgement("refuted", f"0 of 1: {what} fails the ExecuTorch CUDA lowering: {lower.error[:200]}", {},
                         run=run)
    after = cell.outcomes[-1]
    if after is not lower and after.ok and not agrees(cell.delta):
        return Judgement("partly", f"1 of 1: {what} lowered in {lower.seconds:.0f} s and ran, but differs from eager "
                         f"(max |Δ| {cell.delta.get('max_abs')})", {"delta": cell.delta}, run=run)
    ran = (f"ran, max |Δ| vs eager {cell.delta.get('max_abs')}" if after is not lower and after.ok else
           f"not run ({after.status}: {after.error[:150]})" if after is not lower else "not run")
    return Judgement("confirmed", f"1 of 1: {what} lowered in {lower.seconds:.0f} s; {ran}", {"delta": cell.delta},
                     run=run)


def judge_xnnpack_full_model(res: Results) -> Judgement:
    """The full model lowers to XNNPACK and runs in executorch.runtime with eager's detections."""
    full_xnn = next((c for c in res.run.full_cells if c.path == "et_xnnpack"), None)
    if full_xnn is None:
        return Judgement("error", "et_xnnpack was not among the full-model paths", basis="none")
    run = {"backend": "executorch-xnnpack"}
    final, delta = full_xnn.final, full_xnn.delta
    if final.ok and agrees(delta):
        return Judgement("confirmed", f"{delta['match_rate']:.1%} of eager's detections matched: full "
                         f"{full_xnn.variant} YOLO26 lowered to XNNPACK and ran in executorch.runtime, sorted scores "
                         f"within {delta['score_max_abs']:.2g} (raw max |Δ| {delta['max_abs']:.3g})", {"delta": delta},
                         run=run)
    if final.ok:
        return Judgement("partly", f"{delta.get('match_rate')} of eager's detections matched: runs, but detections "
                         f"differ from eager (sorted scores max |Δ| {delta.get('score_max_abs')})", {"delta": delta},
                         run=run)
    undecided = _undecided(final, f"full {full_xnn.variant} YOLO26 through XNNPACK ({final.step})", run)
    if undecided is not None:
        return undecided
    return Judgement("refuted", f"{final.step}: {final.status}: {final.error[:200]}", {}, run=run)


JUDGES = {
    "index_dtype.fx_int64": judge_fx_int64,
    "index_dtype.et_cuda_float_index": judge_et_cuda_float_index,
    "index_dtype.aoti_float_index": judge_aoti_float_index,
    "index_dtype.explicit_cast_insufficient": judge_explicit_cast,
    "index_dtype.gather_removes_index": judge_gather_removes_index,
    "index_dtype.gather_int64_ops": judge_gather_int64_ops,
    "index_dtype.gather_equivalent": judge_gather_equivalent,
    "index_dtype.gather_upstreamed": judge_gather_upstreamed,
    "index_dtype.et_cuda_full_model": judge_et_cuda_full_model,
    "index_dtype.triton_worker_gpu": judge_triton_worker_gpu,
    "index_dtype.no_aten_fallback": judge_no_aten_fallback,
    "index_dtype.postprocess_ops_unsupported": judge_postprocess_ops,
    "index_dtype.backbone_static_cuda": judge_backbone_static,
    "index_dtype.xnnpack_full_model": judge_xnnpack_full_model,
}


def judge(found: findings.Findings, run: "Run", equiv: pd.DataFrame) -> pd.DataFrame:
    """Record every claim's verdict from the run; a judge that breaks records `error` for its claim only."""
    res = Results(run, equiv)
    return found.judge_all(JUDGES, res)


def probe_frame(run: "Run") -> pd.DataFrame:
    """The probes: each op / backbone lowering, the cast variant, and the side steps (subprocess GPU, options, shims)."""
    rows = [row for c in run.probe_cells for row in c.rows()]
    for name, o in (("subprocess sees the GPU", run.gpu_subprocess), ("ExecuTorch CUDA options", run.cuda_options),
                    ("ExecuTorch runtime shims", run.runtime_shims)):
        if o is not None:
            rows.append({"variant": "", "scope": "side step", "path": name, "status": "✅" if o.ok else "❌",
                         "outcome": o.status, "error": o.error[:200], "seconds": round(o.seconds, 2),
                         "value": str(o.value)[:400] if o.ok else ""})
    return pd.DataFrame(rows)


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
    probe_cells: list[Cell] = field(default_factory=list)
    gpu_subprocess: isolate.Outcome | None = None
    cuda_options: isolate.Outcome | None = None
    runtime_shims: isolate.Outcome | None = None
    whole_model_cuda: bool = True  # False: whole-model ExecuTorch CUDA lowerings were skipped (WHOLE_MODEL_SKIP)

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
                 + "); the claims that rest on them are inconclusive.")
    return text + " AOTI and torch.compile paths use Inductor's defaults (no max-autotune)."


PROBES = ("cast", "ops", "backbone", "backbone_aten", "full_aten", "subprocess_gpu")
ATEN_CONV = "ATEN,TRITON"  # ATen allowed among the convolution back-ends, next to ExecuTorch's TRITON


def probe_plan(base: Spec, probes: list[str], full_model_variant: str) -> list[tuple[Spec, list[str]]]:
    """The extra cells of the probes: ExecuTorch CUDA lowerings (CUDA runs only) and the cast variant's export."""
    on_cuda = base.device.startswith("cuda")
    cuda = ["et_cuda"] if on_cuda else []
    backbone = replace(base, variant=full_model_variant, scope="backbone")
    plan: list[tuple[Spec, list[str]]] = []
    if "cast" in probes:  # its export runs everywhere (the graph answers half of the claim), its lowering on CUDA
        plan.append((replace(base, variant="legacy_cast", scope="postprocess"), ["export", *cuda]))
    if not on_cuda:
        return plan
    if "ops" in probes:
        plan += [(replace(base, scope=f"op_{op}"), cuda) for op in OPS]
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
    workers = workers or max(1, min(6, (os.cpu_count() or 2) // 2))
    workdir = tempfile.mkdtemp(prefix="yolo26kit-index-dtype-")
    base = Spec(variant="legacy", scope=scope, model=model, imgsz=imgsz, batch=batch, nc=nc, seed=seed,
                device=device, workdir=workdir, autotune=autotune)
    plan = [(replace(base, variant=v), list(paths), "matrix") for v in variants]
    if full_model_paths:
        plan.append((replace(base, variant=full_model_variant, scope="full"), list(full_model_paths), "full"))
    plan += [(s, p, "probe") for s, p in probe_plan(base, list(probes), full_model_variant)]
    on_cuda = device.startswith("cuda")
    with ThreadPoolExecutor(max_workers=2) as side:  # two quick side steps next to the matrix
        gpu = side.submit(isolate.run_step, step_subprocess_gpu, timeout=300, step="subprocess sees the GPU") \
            if on_cuda and "subprocess_gpu" in probes else None
        options = side.submit(isolate.run_step, et_cuda_options, timeout=120, step="ExecuTorch CUDA options")
        shims = side.submit(isolate.run_step, runtime_shims, timeout=300, step="ExecuTorch runtime shims") \
            if on_cuda else None
        cells = status_matrix(plan, step_timeout, workers, whole_model_cuda)
    probe_cells = [c for c in cells if c.group == "probe"]
    full_cells = [c for c in cells if c.group == "full"]
    cells = [c for c in cells if c.group == "matrix"]
    return Run(base, cells, full_cells, autotune_note(autotune, whole_model_cuda), probe_cells,
               gpu.result() if gpu else None, options.result(), shims.result() if shims else None, whole_model_cuda)


QUICK_PROBES = ["cast", "ops", "backbone", "backbone_aten", "subprocess_gpu"]

catalog.register(catalog.Investigation(
    name="index_dtype",
    title="YOLO26 top-k: advanced indexing vs torch.gather across export back-ends",
    seeds=("000_60ebd1ee51d51957.txt", "001_fda80f2472077657.txt"),
    profiles={
        # quick: the matrix on the postprocess alone, ExecuTorch CUDA with the back-end's defaults (no convolution or
        # matmul there, so max-autotune has nothing to tune: seconds); the whole-model / backbone CUDA lowerings are
        # skipped rows (WHOLE_MODEL_SKIP) and the claims resting on them inconclusive.
        "quick": {"scope": "postprocess", "imgsz": 320, "full_model_paths": ["et_xnnpack", "et_cuda"],
                  "equivalence_cases": 200, "autotune": True, "whole_model_cuda": False, "step_timeout": 300.0,
                  "probes": QUICK_PROBES},
        # full: every path on the whole model at the seed's 640 px, ExecuTorch CUDA with the back-end's defaults
        # (whole-model lowerings one at a time; successes and Inductor's autotune timings kept in the compile cache,
        # so a run spread over several calls with --resume does not redo them).
        "full": {"scope": "full", "imgsz": 640, "full_model_paths": ["export", "aoti", "compile", "et_xnnpack", "et_cuda"],
                 "equivalence_cases": 2000, "autotune": True, "whole_model_cuda": True, "step_timeout": 3000,
                 "probes": list(PROBES)},
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
        "probes": catalog.one_of(*PROBES),
    },
    judges=JUDGES,
))
