"""CUDA graphs: the evidence collectors one case runs in its child: captured Inductor/Dynamo logs, the compile
counters, a profiled decode step (launches, syncs, scalar reads) and a one-call trace of the ATen graph."""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

import torch

from ...bench import timing
from .model import Forecaster

MESSAGES_KEPT = 40  # log messages kept per case (counts are over all of them)
MESSAGE_CHARS = 400
RECORD_CHARS = 4000  # of each captured log record (skip messages carry a stack trace)


_SKIP = re.compile(r"(skipping cudagraphs? due to .*|disabling cudagraphs due to .*)", re.S)
_PARTITIONS = re.compile(r"Created (\d+) graph partitions: (\d+) cudagraphable, (\d+) non-cudagraphable")
_NON_CG_REASON = re.compile(r"reason=([^,]+), ir=")


@dataclass
class LogRecord:
    """One captured log message: logger name, level and (shortened) text."""

    logger: str
    level: str
    message: str


class LogCapture(logging.Handler):
    """Collect torch._inductor / torch._dynamo log records, with the cudagraphs and perf-hint artifacts switched on."""

    LOGGERS = ("torch._inductor", "torch._dynamo")
    ARTIFACTS = ("perf_hints", "cudagraphs", "recompiles", "graph_breaks")

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # a malformed record is not worth a failed case
            text = str(record.msg)
        self.records.append(LogRecord(record.name, record.levelname, text[:RECORD_CHARS]))

    def __enter__(self) -> "LogCapture":
        import inspect

        known = inspect.signature(torch._logging.set_logs).parameters
        torch._logging.set_logs(**{a: True for a in self.ARTIFACTS if a in known})
        for name in self.LOGGERS:
            logging.getLogger(name).addHandler(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        for name in self.LOGGERS:
            logging.getLogger(name).removeHandler(self)
        torch._logging.set_logs()

    def summary(self) -> dict[str, Any]:
        """Counts and examples: cudagraph skips, partitions, recordings, recompiles, graph breaks."""
        return summarize_logs(self.records)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS] + " ..."


def summarize_logs(records: list[LogRecord]) -> dict[str, Any]:
    """Classify captured log records into the counts and messages the report shows."""
    skips, partitions, non_cg, perf, recompiles, breaks, rerecords = [], [], Counter(), [], [], [], 0
    recordings = symint_recordings = 0
    non_gpu: list[str] = []
    for r in records:
        m = r.message
        if "non gpu ops" in m or "cudagraph partition due to" in m:
            non_gpu.append(_short(m))
        if (hit := _SKIP.search(m)) and "cudagraph" in r.logger + m:
            skips.append(_short(hit.group(1)))
        if hit := _PARTITIONS.search(m):
            partitions.append([int(g) for g in hit.groups()])
        if hit := _NON_CG_REASON.search(m):
            non_cg[hit.group(1).strip()] += 1
        if "Recording function=" in m:
            recordings += 1
        if "Recording cudagraph tree for symint key" in m:
            symint_recordings += 1
        if "Re-recording function=" in m:
            rerecords += 1
        if "Recompiling function" in m:
            recompiles.append(_short(m))
        if r.logger.endswith("__graph_breaks") or m.startswith("Graph break"):
            breaks.append(_short(m))
        if r.logger.endswith("__perf_hints"):
            perf.append(_short(m))
    return {
        "skip_messages": list(dict.fromkeys(skips))[:MESSAGES_KEPT],
        "skips_logged": len(skips),
        "partitions": partitions,
        "non_cudagraphable": dict(non_cg),
        "recordings": recordings,
        "symint_recordings": symint_recordings,
        "rerecordings": rerecords,
        "recompiles": len(recompiles),
        "recompile_messages": recompiles[:MESSAGES_KEPT],
        "graph_break_messages": list(dict.fromkeys(breaks))[:MESSAGES_KEPT],
        "perf_hints": list(dict.fromkeys(perf))[:MESSAGES_KEPT],
        "non_gpu_partition_logs": len(non_gpu),
        "non_gpu_partition_messages": list(dict.fromkeys(non_gpu))[:MESSAGES_KEPT],
        "messages": len(records),
    }


def counter_snapshot() -> dict[str, Any]:
    """The Dynamo/Inductor counters this report reads (a zero skip counter alone proves nothing)."""
    from torch._dynamo.utils import counters

    inductor, stats = counters["inductor"], counters["stats"]
    return {
        "cudagraph_skips": int(inductor.get("cudagraph_skips", 0)),
        "cudagraph_recorded_non_static_inputs": int(inductor.get("cudagraph_recorded_non_static_inputs", 0)),
        "fxgraph_cache_hit": int(inductor.get("fxgraph_cache_hit", 0)),
        "fxgraph_cache_miss": int(inductor.get("fxgraph_cache_miss", 0)),
        "unique_graphs": int(stats.get("unique_graphs", 0)),
        "frames_ok": int(counters["frames"].get("ok", 0)),
        "graph_breaks": int(sum(counters["graph_break"].values())),
        "graph_break_reasons": [_short(k).split(" Explanation:")[0] for k in counters["graph_break"]][:MESSAGES_KEPT],
    }


_GRAPH_LAUNCH = ("cudaGraphLaunch", "cuGraphLaunch")
_KERNEL_LAUNCH = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchCooperativeKernel", "cuLaunchCooperativeKernel")
_SYNC = ("cudaStreamSynchronize", "cuStreamSynchronize", "cudaEventSynchronize")


def count_profile(names: Counter) -> dict[str, int]:
    """Launches, syncs and scalar reads from a Counter of profiler event names."""
    def total(prefixes: tuple[str, ...]) -> int:
        return sum(n for name, n in names.items() if name.startswith(prefixes))

    return {
        "graph_launches": total(_GRAPH_LAUNCH),
        "kernel_launches": total(_KERNEL_LAUNCH),
        "stream_syncs": total(_SYNC),
        "scalar_reads": names.get("aten::_local_scalar_dense", 0) or names.get("aten::item", 0),
    }


def profile_call(call: Callable[[], Any], device: str) -> dict[str, int]:
    """Profile one call with torch.profiler and count graph launches, kernel launches, syncs and scalar reads."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    on_cuda = torch.device(device).type == "cuda"
    if on_cuda:
        activities.append(ProfilerActivity.CUDA)
    timing.sync(device)
    with profile(activities=activities) as prof:
        call()
        timing.sync(device)
    events = prof.events()
    out = count_profile(Counter(e.name for e in events))
    out["gpu_kernels"] = sum(1 for e in events if on_cuda and str(getattr(e, "device_type", "")).endswith("CUDA"))
    return out


def profile_call_at(index: int, found: dict[str, int], device: str) -> Callable[[int, Callable[[], Any]], Any]:
    """A forecast hook that profiles its `index`-th call into `found` (a steady decode step) and runs the others."""
    def hook(i: int, call: Callable[[], Any]) -> Any:
        if i != index:
            return call()
        held: list[Any] = []
        found.update(profile_call(lambda: held.append(call()), device))
        return held[0]

    return hook


def trace_one_call(model: Forecaster, patch: torch.Tensor) -> dict[str, Any]:
    """Trace one call through Dynamo and AOTAutograd (no Inductor): graphs, breaks, and what CUDA graphs cannot hold.

    Like torch._dynamo.explain (graphs, breaks and their reasons, from Dynamo's graph_break counter), plus
    the ATen graphs: how many `aten._local_scalar_dense` nodes (device-to-host scalar reads) they carry and
    Inductor's own first cudagraph-incompatible node, so "does int() avoid the sync that .item() makes?" is
    answered by the traced graph, on any device. One trace instead of two: Dynamo tracing is the slow part on CPU.
    """
    from torch._dynamo.backends.common import aot_autograd
    from torch._dynamo.utils import counters
    from torch._functorch.aot_autograd import make_boxed_func

    graphs: list[torch.fx.GraphModule] = []

    def keep(gm: torch.fx.GraphModule, _inputs: Any) -> Callable:
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    torch._dynamo.reset()
    counters.clear()
    model.reset()
    compiled = torch.compile(model, backend=aot_autograd(fw_compiler=keep))
    with torch.no_grad():
        compiled(patch, 0) if model.variant == "python" else compiled(patch)
    model.reset()
    breaks = dict(counters["graph_break"])
    torch._dynamo.reset()
    counters.clear()
    scalar_reads, first_bad = 0, ""
    try:
        from torch._inductor.utils import get_first_incompatible_cudagraph_node
    except ImportError:  # older torch: count the ops ourselves only
        get_first_incompatible_cudagraph_node = None
    for gm in graphs:
        scalar_reads += sum(1 for n in gm.graph.nodes if "_local_scalar_dense" in str(n.target))
        if get_first_incompatible_cudagraph_node and not first_bad:
            node = get_first_incompatible_cudagraph_node(gm)
            first_bad = str(node.target) if node is not None else ""
    return {"graphs_1call": len(graphs), "breaks_1call": int(sum(breaks.values())),
            "break_reasons": list(dict.fromkeys(_short(k).split(" Explanation:")[0] for k in breaks)),
            "aten_scalar_reads": scalar_reads, "aten_first_incompatible": first_bad}
