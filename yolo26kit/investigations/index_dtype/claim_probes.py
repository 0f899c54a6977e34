"""Claim-level entry points for `yolo26kit bisect`: one claim (or the fact behind it) judged in one step, through
this investigation's own steps and judges, without the notebook.

- `gather_upstreamed`: the upstream variant's torch.export scan, judged by `judge_gather_upstreamed`.
- `split_copy_viewed`: the fact behind `backbone_static_cuda` — does the installed executorch's AOTI view pass turn
  `split_copy` into a view? The edge graph is the one the CUDA back-end's preprocess receives (YOLO26's `chunk`
  becomes `split_copy.Tensor` there), read on the CPU.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pandas as pd
import torch

from ... import env
from ...backends import executorch_cuda
from ...verdicts import Judgement
from .judge import judge_gather_upstreamed
from .measure import Results, Run, run_path
from .model import Spec

SPLIT_COPY = "aten.split_copy.Tensor"
SPLIT_VIEW = "aten.split.Tensor"


def gather_upstreamed(imgsz: int = 320, timeout: float = 600.0) -> Judgement:
    """`index_dtype.gather_upstreamed` alone: export the installed ultralytics' top-k and judge its graph."""
    spec = Spec(variant="upstream", imgsz=imgsz)
    cell = run_path(spec, "export", timeout)
    return judge_gather_upstreamed(Results(Run(spec, [cell], [], ""), pd.DataFrame()))


class Chunked(torch.nn.Module):
    """YOLO26's C2f/C3k2 split in miniature: `chunk(2, 1)` feeding two users."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = x.chunk(2, 1)
        return a * 2 + b


def _ops(graph: torch.fx.GraphModule) -> Counter:
    return Counter(executorch_cuda.op_name(n.target) for n in graph.graph.nodes if n.op == "call_function")


def _split_copy_graph() -> tuple[torch.fx.GraphModule, str]:
    """The edge graph the CUDA back-end's preprocess receives for `Chunked`, and where it came from."""
    program = torch.export.export(Chunked().eval(), (torch.randn(1, 4, 8),))
    edge, source = executorch_cuda.preprocess_input(program)
    return edge.graph_module, source


def _run_view_pass(graph: torch.fx.GraphModule, info: dict[str, Any]) -> torch.fx.GraphModule:
    import importlib

    result = getattr(importlib.import_module(info["module"]), info["name"])()(graph)
    return result.graph_module if result is not None else graph


def split_copy_viewed() -> Judgement:
    """Whether the installed executorch's view pass turns `split_copy` into `split` (a view) on the back-end's graph."""
    release = env.package_version("executorch") or "?"
    graph, source = _split_copy_graph()
    before = _ops(graph)
    run = {"executorch": release, "torch": torch.__version__.split("+")[0]}
    if not before[SPLIT_COPY]:
        why = (f"executorch {release}'s CUDA back-end could not be imported, so plain to_edge made the graph"
               if source == "to_edge" else f"the graph came from {source}")
        return Judgement("inconclusive", f"the edge graph holds no {SPLIT_COPY} ({dict(before)}; {why}), so the "
                         "pass cannot be tried on it", {"before": dict(before), "source": source}, basis="none", run=run)
    info = executorch_cuda.view_pass()
    if not info["found"]:
        return Judgement("refuted", f"executorch {release} ships no view-copy pass (tried {'; '.join(info['tried'])}): "
                         f"{before[SPLIT_COPY]} {SPLIT_COPY} stays a copy", {"before": dict(before)}, run=run)
    after = _ops(_run_view_pass(copy.deepcopy(graph), info))
    data = {"before": dict(before), "after": dict(after), "pass": info["name"], "maps": sorted(info["mapping"])}
    text = (f"executorch {release}'s {info['name']} on the back-end's edge graph ({source}): "
            f"{SPLIT_COPY} ×{before[SPLIT_COPY]} before, ×{after[SPLIT_COPY]} after, {SPLIT_VIEW} ×{after[SPLIT_VIEW]}")
    if not after[SPLIT_COPY] and after[SPLIT_VIEW]:
        return Judgement("confirmed", f"{text}: split_copy becomes a view", data, run=run)
    return Judgement("refuted", f"{text}: split_copy stays a copy (an ATen fallback kernel for AOT Inductor)", data,
                     run=run)
