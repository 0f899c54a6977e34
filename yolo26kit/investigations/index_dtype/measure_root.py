"""Index dtype, root cause: follow the index dtype through the ExecuTorch CUDA back-end's own pipeline (the graph
after each of its passes, replayed on the CPU in a child step) and read the run's lowering errors."""

from __future__ import annotations

import copy
import re
from dataclasses import replace
from typing import Any

import pandas as pd
import torch

from ...conclusion import clip
from ...bench import graphs, isolate
from ...backends import executorch_cuda
from ...backends.executorch_cuda_releases import outcome_text
from .measure import Run
from .model import Spec, build_inputs, build_module


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
    module, inputs = build_module(spec), build_inputs(spec)
    wanted = graphs.INDEX_TARGETS + graphs.DIVISION_TARGETS
    ep = torch.export.export(module, inputs)
    stages = [("torch.export (ATen)", graphs.scan(ep.graph_module, wanted))]
    edge = executorch_cuda.plain_edge(ep)
    stages.append(("to_edge (Edge dialect)", graphs.scan(edge.graph_module, wanted)))
    passes_info: list[dict[str, Any]] = []
    try:
        passes = executorch_cuda.preprocess_passes(autotune=False)
        gm = copy.deepcopy(edge.graph_module)
        flat = _flat_inputs(edge, inputs)
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
        decomp = executorch_cuda.decomposition_table()
        if decomp:
            stages.append(("decomposition table has", [{"node": "", "target": str(k), "out_dtype": None,
                                                         "arg_dtypes": [], "index_dtypes": None, "source": ""}
                                                        for k in decomp]))
    except ImportError as exc:
        passes_info.append({"pass": "(CUDA back-end not importable)", "error": str(exc)})
    return {"stages": stages, "passes": passes_info}


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
                d = lowering_error_details(outcome_text(o))
                errors.append({"variant": c.variant, "path": c.path, "step": o.step, "outcome": o.status,
                               "error": clip(o.error, 300), "failing target": d["target"], "index dtypes": d["dtypes"],
                               "index argument IR (args[1])": d["args"][1] if len(d["args"]) > 1 else "",
                               "log tail": o.log[-1500:]})
    return {"passes": passes, "stages": stages, "lowering_errors": pd.DataFrame(errors)}
