"""CUDA graphs and a KV cache: do `.item()`, `int()` or a tensor position decide what reduce-overhead captures?"""

from __future__ import annotations

import logging
import math
import os
import re
import statistics
import time
import traceback
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Iterator

import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from .. import catalog, env, isolate, timing
from ..errors import BadParameter, DeviceUnavailable
from ..findings import band_of
from ..verdicts import Judgement, all_none_some, band

NAME = "cuda_graphs"
SEED = "003_e3b92752bc4fc25c.txt"
VARIANTS = ("item", "int", "tensor", "python")
MODES = ("default", "reduce-overhead")  # eager always runs as the reference
SKIPPED_ON_CPU = "needs CUDA: CUDA graphs (reduce-overhead) only exist on a CUDA device"
MESSAGES_KEPT = 40  # log messages kept per case (counts are over all of them)
MESSAGE_CHARS = 400
RECORD_CHARS = 4000  # of each captured log record (skip messages carry a stack trace)


# --------------------------------------------------------------------------- the model


class CacheOverflow(IndexError):
    """A write past the end of the preallocated KV cache."""


@dataclass(frozen=True)
class Config:
    """Sizes of the toy forecaster and of one forecast (context patches in, `steps` patches out)."""

    d_model: int = 32
    n_layers: int = 2
    n_heads: int = 2
    patch_len: int = 8
    max_seq: int = 16
    batch: int = 1
    context_patches: int = 4
    steps: int = 8
    seed: int = 0

    @property
    def calls(self) -> int:
        """Model calls in one forecast: every context patch, then each forecast patch but the last fed back."""
        return self.context_patches + self.steps - 1

    def check(self) -> "Config":
        """Raise BadParameter for sizes the model cannot take."""
        if self.d_model % self.n_heads:
            raise BadParameter(f"{NAME}: d_model={self.d_model} must be a multiple of n_heads={self.n_heads}")
        if min(self.d_model, self.n_layers, self.n_heads, self.patch_len, self.max_seq, self.batch,
               self.context_patches, self.steps) < 1:
            raise BadParameter(f"{NAME}: every size must be at least 1")
        if self.calls > self.max_seq:
            raise BadParameter(f"{NAME}: context_patches + steps - 1 = {self.calls} positions do not fit "
                               f"max_seq={self.max_seq}; raise max_seq")
        return self


class KVCache(nn.Module):
    """One preallocated K/V buffer for all layers, Toto style, with four ways of finding the write position.

    item / int: the position lives in the device tensor `_current_idx[layer]` and is read back with
    `.item()` / `int(...)`, then used as a Python slice (the seed's code). tensor: the position stays a
    device tensor and the write is tensor indexing (gpt-fast `k_out[:, :, input_pos] = k_val`).
    python: the caller passes the position as a Python int. Attention always reads the full buffer
    under a mask, so every variant computes bit-identical results.
    """

    def __init__(self, cfg: Config, variant: str) -> None:
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"unknown cache variant {variant!r} (known: {', '.join(VARIANTS)})")
        self.variant = variant
        self.max_seq = cfg.max_seq
        shape = (cfg.n_layers, cfg.batch, cfg.n_heads, cfg.max_seq, cfg.d_model // cfg.n_heads)
        self.register_buffer("k", torch.zeros(shape), persistent=False)
        self.register_buffer("v", torch.zeros(shape), persistent=False)
        self.register_buffer("_current_idx", torch.zeros(cfg.n_layers, dtype=torch.long), persistent=False)

    def reset(self) -> None:
        """Empty the cache (in place, so compiled graphs keep their static buffer addresses)."""
        self.k.zero_()
        self.v.zero_()
        self._current_idx.zero_()

    def _overflow(self, layer: int, start: int, new: int) -> CacheOverflow:
        return CacheOverflow(
            f"KV cache overflow in layer {layer}: writing {new} position(s) at {start} needs {start + new}, "
            f"the cache holds max_seq={self.max_seq}; raise max_seq or shorten the forecast")

    def _start(self, layer: int, new: int, pos: int | None) -> int:
        """The write position as a Python int (SymInt under compile) for the item/int/python variants."""
        if self.variant == "item":
            start = self._current_idx[layer].item()
        elif self.variant == "int":
            start = int(self._current_idx[layer])
        else:
            if pos is None:
                raise TypeError("the python cache variant needs the position passed in (pos=...)")
            start = pos
        if torch.compiler.is_compiling():
            # tells the compiler the slice stays in bounds; checked at run time, no Python branch on the value
            torch._check(start >= 0)
            torch._check(start + new <= self.max_seq)
        elif start + new > self.max_seq:
            raise self._overflow(layer, start, new)
        return start

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor, pos: int | None = None
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Write k, v (batch, heads, new, head_dim) at the layer's position; return full K, V and the attention mask."""
        new = k.shape[2]
        keys = torch.arange(self.max_seq, device=k.device)
        if self.variant == "tensor":
            if not torch.compiler.is_compiling():
                # eager only: this read-back is a host sync; compiled graphs skip it (callers bound the horizon)
                start = int(self._current_idx[layer])
                if start + new > self.max_seq:
                    raise self._overflow(layer, start, new)
            q_pos = self._current_idx[layer] + torch.arange(new, device=k.device)
            self.k[layer][:, :, q_pos] = k
            self.v[layer][:, :, q_pos] = v
            self._current_idx[layer] += new
        else:
            start = self._start(layer, new, pos)
            self.k[layer, :, :, start:start + new] = k
            self.v[layer, :, :, start:start + new] = v
            q_pos = start + torch.arange(new, device=k.device)
            if self.variant != "python":
                self._current_idx[layer] += new
        mask = keys[None, :] <= q_pos[:, None]  # (new, max_seq): causal over everything written so far
        return self.k[layer], self.v[layer], mask


class Block(nn.Module):
    """Pre-norm transformer block: cached causal self-attention, then an MLP."""

    def __init__(self, cfg: Config, layer: int) -> None:
        super().__init__()
        self.layer, self.n_heads = layer, cfg.n_heads
        self.norm1, self.norm2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        hidden = 4 * cfg.d_model
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, hidden), nn.GELU(), nn.Linear(hidden, cfg.d_model))

    def forward(self, x: torch.Tensor, cache: KVCache, pos: int | None) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        keys, values, mask = cache.append(self.layer, k, v, pos)
        attn = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)
        x = x + self.proj(attn.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.norm2(x))


class Forecaster(nn.Module):
    """Decoder-only patch forecaster: patch embedding in, transformer blocks with a KV cache, next patch out."""

    def __init__(self, cfg: Config, variant: str) -> None:
        super().__init__()
        self.cfg, self.variant = cfg, variant
        self.embed = nn.Linear(cfg.patch_len, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg, i) for i in range(cfg.n_layers))
        self.norm = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.patch_len)
        self.cache = KVCache(cfg, variant)

    def reset(self) -> None:
        """Forget the cached context."""
        self.cache.reset()

    def forward(self, patches: torch.Tensor, pos: int | None = None) -> torch.Tensor:
        """patches (batch, new, patch_len) -> the next patch for each (batch, new, patch_len)."""
        x = self.embed(patches)
        for block in self.blocks:
            x = block(x, self.cache, pos)
        return self.head(self.norm(x))


def build(cfg: Config, variant: str, device: str = "cpu") -> Forecaster:
    """The forecaster with seeded random weights: the same weights for every variant."""
    torch.manual_seed(cfg.seed)
    return Forecaster(cfg, variant).to(device).eval()


def example_context(cfg: Config, device: str = "cpu") -> torch.Tensor:
    """A seeded noisy sine series cut into patches: (batch, context_patches, patch_len)."""
    g = torch.Generator().manual_seed(cfg.seed + 1)
    t = torch.arange(cfg.context_patches * cfg.patch_len, dtype=torch.float32)
    phase = torch.rand(cfg.batch, 1, generator=g) * 6.28
    series = torch.sin(t / 5 + phase) + 0.1 * torch.randn(cfg.batch, t.numel(), generator=g)
    return series.view(cfg.batch, cfg.context_patches, cfg.patch_len).to(device)


Hook = Callable[[int, Callable[[], torch.Tensor]], torch.Tensor]


def _fresh(t: torch.Tensor) -> torch.Tensor:
    """A copy with canonical strides: every call sees the same strides (no stride-guard recompile), and
    CUDA-graph outputs are copied out before the next replay overwrites them."""
    return t.clone(memory_format=torch.contiguous_format)


@torch.no_grad()
def forecast(model: Forecaster, step: Callable[..., torch.Tensor], context: torch.Tensor, steps: int,
             hook: Hook | None = None) -> torch.Tensor:
    """Feed the context one patch per call, then forecast `steps` patches autoregressively: (steps, batch, patch_len).

    `step` is the model or its compiled version. Each output is copied at once (CUDA-graph outputs are
    overwritten by the next replay; gpt-fast clones too). `hook(i, call)` may wrap call i (e.g. a profiler).
    """
    model.reset()
    n_ctx = context.shape[1]
    x = _fresh(context[:, :1])
    outs = []
    for i in range(n_ctx + steps - 1):
        call = (lambda x=x, i=i: step(x, i)) if model.variant == "python" else (lambda x=x: step(x))
        y = _fresh(hook(i, call) if hook else call())
        if i >= n_ctx - 1:
            outs.append(y[:, 0])
        x = _fresh(context[:, i + 1:i + 2]) if i + 1 < n_ctx else y
    return torch.stack(outs)


# --------------------------------------------------------------------------- evidence collectors

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


# --------------------------------------------------------------------------- one case (runs in a child)


def graph_partition_supported() -> bool:
    """Whether this torch has torch._inductor.config.graph_partition."""
    import torch._inductor.config as inductor_config

    return hasattr(inductor_config, "graph_partition")


def stack_info() -> dict[str, Any]:
    """The compile settings of this torch that decide the outcome (defaults, before any patch)."""
    import torch._dynamo.config as dynamo_config
    import torch._inductor.config as inductor_config

    return {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
        "graph_partition_option": graph_partition_supported(),
        "graph_partition_default": getattr(inductor_config, "graph_partition", None),
        "capture_scalar_outputs_default": dynamo_config.capture_scalar_outputs,
        "cudagraph_trees": inductor_config.triton.cudagraph_trees,
        "cudagraph_skip_dynamic_graphs": getattr(inductor_config.triton, "cudagraph_skip_dynamic_graphs", None),
    }


@contextmanager
def compile_settings(capture: bool | None, partition: bool | None, compile_cache: bool = True,
                     scalar_cpu_kernels: bool = False) -> Iterator[None]:
    """Patch capture_scalar_outputs / graph_partition / the compile caches / CPU SIMD for the duration of one case."""
    import torch._dynamo.config as dynamo_config
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    with ExitStack() as stack:
        if capture is not None:
            stack.enter_context(dynamo_config.patch(capture_scalar_outputs=capture))
        if partition is not None and hasattr(inductor_config, "graph_partition"):
            stack.enter_context(inductor_config.patch(graph_partition=partition))
        if not compile_cache:
            stack.enter_context(inductor_config.patch(fx_graph_cache=False))
            if hasattr(functorch_config, "enable_autograd_cache"):
                stack.enter_context(functorch_config.patch(enable_autograd_cache=False))
        if scalar_cpu_kernels:
            # scalar C++ kernels compile in about half the time of vectorized ones (CPU speed is no claim here)
            stack.enter_context(inductor_config.patch({"cpp.simdlen": 1}))
        yield


def _max_abs(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.float() - b.float()).abs().max()) if a.numel() else 0.0


def _profile_last_call(model: Forecaster, step: Callable, context: torch.Tensor, steps: int,
                       device: str) -> dict[str, int]:
    """Run a whole forecast and profile its last call (a steady-state decode step)."""
    last = model.cfg.calls - 1
    found: dict[str, int] = {}

    def hook(i: int, call: Callable[[], torch.Tensor]) -> torch.Tensor:
        if i != last:
            return call()
        holder: list[torch.Tensor] = []
        found.update(profile_call(lambda: holder.append(call()), device))
        return holder[0]

    forecast(model, step, context, steps, hook=hook)
    return found


def _guarded(what: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run one evidence collector; if it breaks, its error is the evidence (the case's timing still counts)."""
    try:
        return fn()
    except Exception as exc:
        first = next((line for line in str(exc).splitlines() if line.strip()), "")
        return {f"{what}_error": f"{type(exc).__name__}: {first}"[:MESSAGE_CHARS]}


def _cuda_memory_start(device: str) -> int | None:
    """Reset the CUDA allocator's peak and return the bytes allocated now (None off CUDA)."""
    if torch.device(device).type != "cuda":
        return None
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    return torch.cuda.memory_allocated(device)


def _cuda_memory_rows(device: str, start: int | None) -> dict[str, int]:
    """Peak bytes allocated above `start` since _cuda_memory_start, and the bytes reserved by the allocator."""
    if start is None:
        return {}
    torch.cuda.synchronize(device)
    return {"peak_mem_bytes": int(torch.cuda.max_memory_allocated(device) - start),
            "reserved_bytes": int(torch.cuda.memory_reserved(device))}


def run_case(variant: str, mode: str, capture: bool | None, partition: bool | None, cfg: dict[str, Any],
             device: str, warmup: int = 3, min_run_time: float = 0.3, compile_cache: bool = True,
             light_cpu: bool = True, rounds: int = 0) -> dict[str, Any]:
    """One (variant, mode, setting): eager reference, compile, time, profile, collect evidence; plain data back.

    Called through run_cases in a child process (see run_matrix for how cases are kept apart). The
    one-call trace runs before the timed compile, outside the log capture and with the counters cleared
    afterwards, so the counts describe the timed run alone. A reduce-overhead case with `rounds` > 0 is then
    timed in turn with the default compile of the same variant and settings (`rounds_in_turn`): the timing
    verdicts read those rounds, never two cases timed apart.
    """
    from torch._dynamo.utils import counters

    config = Config(**cfg)
    row: dict[str, Any] = {"variant": variant, "mode": mode, "capture_scalar_outputs": capture,
                           "graph_partition": partition, "device": device}
    model = build(config, variant, device)
    context = example_context(config, device)
    reference = forecast(model, model, context, config.steps)
    first_patch = _fresh(context[:, :1])
    scalar = light_cpu and torch.device(device).type == "cpu"
    mem_start = _cuda_memory_start(device)  # after the model and its eager reference: what compiling and running add
    with compile_settings(capture, partition, compile_cache, scalar):
        step: Callable = model
        if mode != "eager":
            row.update(_guarded("trace", lambda: trace_one_call(model, first_patch)))
            torch._dynamo.reset()
            counters.clear()
            step = torch.compile(model, mode=None if mode == "default" else mode)
        outputs: dict[str, torch.Tensor] = {}

        def one_forecast() -> None:
            out = forecast(model, step, context, config.steps)
            outputs.setdefault("first", out)
            outputs["last"] = out

        with LogCapture() as logs:
            t = timing.measure(one_forecast, f"{variant}/{mode}", device, warmup=warmup, min_run_time=min_run_time)
            row.update(_guarded("profile", lambda: _profile_last_call(model, step, context, config.steps, device)))
        if mode != "eager":
            row.update(counter_snapshot())
    row.update(_cuda_memory_rows(device, mem_start))
    row.update(logs.summary())
    row.update({
        "first_ms": t.first_ms, "median_ms": t.median_ms, "iqr_ms": t.iqr_ms, "p10_ms": t.p10_ms,
        "p90_ms": t.p90_ms, "runs": t.runs, "calls": config.calls, "per_step_ms": t.median_ms / config.calls,
        "max_abs_first": _max_abs(outputs["first"], reference), "max_abs_last": _max_abs(outputs["last"], reference),
        "outputs": outputs["last"].float().cpu().flatten().tolist(),
        "reference": reference.float().cpu().flatten().tolist(),
    })
    if mode == "reduce-overhead" and rounds > 0:
        with compile_settings(capture, partition, compile_cache, scalar):
            row.update(_guarded("rounds", lambda: rounds_in_turn(model, step, config, variant, context, device,
                                                                 rounds, warmup)))
    return row


ROUND_RUN_TIME = 0.1  # seconds of blocked_autorange per callable and round


def rounds_in_turn(model: Forecaster, step: Callable, cfg: Config, variant: str, context: torch.Tensor, device: str,
                   rounds: int, warmup: int = 3) -> dict[str, Any]:
    """Time whole forecasts with CUDA graphs (`step`, already warm) and with the default compile of a twin model
    (same weights, same settings), in turn, `rounds` times: per round each one's median and IQR (ms).

    The twin compiles after every other collector of the case has read its counters and logs, so they describe
    the reduce-overhead compile alone. Load that changes between rounds hits both alike; a ratio is taken round
    by round (timing.round_ratios).
    """
    twin = build(cfg, variant, device)
    twin_step = torch.compile(twin, mode=None)
    fns = {"graphs": lambda: forecast(model, step, context, cfg.steps),
           "default": lambda: forecast(twin, twin_step, context, cfg.steps)}
    per: dict[str, list[timing.Timing]] = {name: [] for name in fns}
    for r in range(rounds):
        for name, fn in fns.items():
            per[name].append(timing.measure(fn, name, device, warmup if r == 0 else 0, ROUND_RUN_TIME))
    return {"rounds": {name: {"median_ms": [t.median_ms for t in ts], "iqr_ms": [t.iqr_ms for t in ts]}
                       for name, ts in per.items()},
            "twin_first_ms": per["default"][0].first_ms if per["default"] else None}


# --------------------------------------------------------------------------- the matrix (notebook process)


def as_bool(value: Any) -> bool:
    """Read on/off settings the way a user writes them: True/False, 1/0, 'on'/'off', 'true'/'false'."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0", "on", "off", "yes", "no"):
        return value.strip().lower() in ("true", "1", "on", "yes")
    raise BadParameter(f"{NAME}: {value!r} is not an on/off setting (use True/False)")


def _bools(value: Any) -> str | None:
    try:
        for v in value if isinstance(value, list) else [value]:
            as_bool(v)
    except BadParameter as exc:
        return str(exc)
    return None if value else "give at least one setting"


@dataclass
class Case:
    """One planned row of the matrix."""

    variant: str
    mode: str
    capture: bool | None
    partition: bool | None

    @property
    def step(self) -> str:
        parts = [self.variant, self.mode]
        if self.capture is not None:
            parts.append(f"capture={'on' if self.capture else 'off'}")
        if self.partition is not None:
            parts.append(f"partition={'on' if self.partition else 'off'}")
        return " ".join(parts)


def plan(variants: list[str], modes: list[str], capture: list[Any], partition: list[Any],
         partition_supported: bool = True) -> list[Case]:
    """Every case: eager per variant; default per variant x capture; reduce-overhead x capture x partition."""
    caps = list(dict.fromkeys(as_bool(c) for c in capture))
    parts = list(dict.fromkeys(as_bool(p) for p in partition)) if partition_supported else [None]
    cases = [Case(v, "eager", None, None) for v in variants]
    for mode in [m for m in MODES if m in modes]:
        for v in variants:
            for c in caps:
                for p in (parts if mode == "reduce-overhead" else [None]):
                    cases.append(Case(v, mode, c, p))
    return cases


@dataclass
class Results:
    """What the matrix run measured: one row per case, plus the settings it ran with."""

    rows: list[dict[str, Any]]
    config: Config
    device: str
    stack: dict[str, Any]
    atol: float
    probe: list[dict[str, Any]] = field(default_factory=list)  # mutation_probe rows (CUDA), or one skipped row

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows)

    def ok(self, **where: Any) -> list[dict[str, Any]]:
        """Rows that ran to the end and match every key=value given."""
        return [r for r in self.rows if r.get("status") == "ok" and all(r.get(k) == v for k, v in where.items())]


def resolve(device: str) -> str:
    """Resolve `auto`; asking for CUDA where there is none is a clear error, not a crash later."""
    device = env.resolve_device(device)
    if torch.device(device).type == "cuda" and not env.cuda_available():
        raise DeviceUnavailable(f"{NAME}: device={device!r} but this machine has no CUDA device; "
                                "use device=auto or cpu")
    return device


def run_cases(cases: list[tuple[str, str, bool | None, bool | None]], cfg: dict[str, Any], device: str,
              warmup: int = 3, min_run_time: float = 0.3, compile_cache: bool = True,
              light_cpu: bool = True, rounds: int = 0) -> list[dict[str, Any]]:
    """Several cases one after another in this process, Dynamo reset between them; a case's exception is its row.

    light_cpu (CPU only): one thread, so Inductor's OpenMP kernels do not spin against each other on a
    small or busy machine (40x slower steps seen on 2 cores), and scalar C++ kernels (half the gcc time).
    CPU speed is no claim of this investigation; this keeps the CPU run short and steady.
    """
    from torch._dynamo.utils import counters

    threads = torch.get_num_threads()
    nvml_check = os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK")
    if torch.device(device).type == "cpu":
        # isolate sets the NVML-based CUDA check for its fork server; without CUDA that check is never cached
        # and costs ~30 us a call, which makes torch.utils.benchmark's timer overhead pick one huge block
        os.environ.pop("PYTORCH_NVML_BASED_CUDA_CHECK", None)
        if light_cpu:
            torch.set_num_threads(1)
    rows = []
    compiled_before = 0
    try:
        for variant, mode, capture, partition in cases:
            torch._dynamo.reset()
            counters.clear()
            t0 = time.perf_counter()
            try:
                row = {**run_case(variant, mode, capture, partition, cfg, device, warmup, min_run_time, compile_cache,
                                  light_cpu, rounds),
                       "status": "ok", "error": ""}
            except Exception as exc:  # one failing case is a row, the others still run
                first = next((line for line in str(exc).splitlines() if line.strip()), "")
                row = {"status": "oom" if "out of memory" in str(exc).lower() else "error",
                       "error": f"{type(exc).__name__}: {first}".strip(), "log_tail": traceback.format_exc()[-2000:]}
            row["seconds"] = round(time.perf_counter() - t0, 2)
            # 0: this case compiled first in its process (its first call pays the compiler's cold start too)
            row["compiled_before_in_child"] = compiled_before if mode != "eager" else None
            compiled_before += mode != "eager"
            rows.append(row)
    finally:  # in-process callers (tests) get their settings back
        torch._dynamo.reset()
        torch.set_num_threads(threads)
        if nvml_check is not None:
            os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = nvml_check
    return rows


ISOLATION = ("auto", "case", "batch", "variant")
MODE_ORDER = {"eager": 0, "reduce-overhead": 1, "default": 2}  # in a variant's child: reduce-overhead compiles first


def groups_of(cases: list[Case], isolation: str, on_cuda: bool) -> list[list[Case]]:
    """The cases each child process runs, in order (see run_matrix for the isolation modes)."""
    if isolation == "case":
        return [[c] for c in cases]
    if isolation == "batch" or (isolation == "auto" and not on_cuda):
        return [cases] if cases else []
    by_variant: dict[str, list[Case]] = {}
    for c in cases:
        by_variant.setdefault(c.variant, []).append(c)
    return [sorted(g, key=lambda c: MODE_ORDER[c.mode]) for g in by_variant.values()]


def _group_name(group: list[Case]) -> str:
    """'item: 7 cases' for one variant's child, '12 cases' for a mixed batch."""
    variants = {c.variant for c in group}
    return f"{group[0].variant}: {len(group)} cases" if len(variants) == 1 else f"{len(group)} cases"


def _run_group(group: list[Case], cfg: Config, device: str, case_timeout: float, **kwargs: Any) -> dict[int, dict]:
    """One child for the group's cases; if it dies or hangs, each case again in a child of its own."""
    specs = [(c.variant, c.mode, c.capture, c.partition) for c in group]
    outcome = isolate.run_step(run_cases, specs, asdict(cfg), device, **kwargs, timeout=case_timeout * len(group),
                               step=group[0].step if len(group) == 1 else _group_name(group),
                               phase="compile")
    if outcome.ok:
        return {id(c): {**v, "cases_in_child": len(group)} for c, v in zip(group, outcome.value)}
    if len(group) > 1:  # a crash or hang takes the whole child: find out which case it was
        out: dict[int, dict] = {}
        for c in group:
            out.update(_run_group([c], cfg, device, case_timeout, **kwargs))
        return out
    return {id(group[0]): {"status": outcome.status, "error": outcome.error, "seconds": round(outcome.seconds, 2),
                           "log_tail": outcome.log[-2000:], "cases_in_child": 1}}


def run_matrix(variants: list[str], modes: list[str], capture_scalar_outputs: list[Any], graph_partition: list[Any],
               cfg: Config, device: str = "auto", warmup: int = 3, min_run_time: float = 0.3, atol: float = 1e-4,
               compile_cache: bool = True, case_timeout: float = 300.0, isolation: str = "auto",
               light_cpu: bool = True, workers: int = 4, probe: bool = True, rounds: int = 5) -> Results:
    """Run every planned case in child processes; CUDA-only cases are skipped on CPU.

    isolation "case": a fresh child per case; "batch": one child runs all cases with torch._dynamo.reset()
    between them (one import, one warm compiler); "variant": one child per cache variant, eager first, then
    reduce-overhead (so its first call compiles in a cold process, as the seed's first inference did), then
    default; "auto": "variant" on CUDA, "batch" on CPU. Up to `workers` children run side by side (their
    steady-state timing is serialised by timing.measure's device lock). A child that dies or hangs is re-run
    one case per child, so a crash stays that case's row. light_cpu: see run_cases. `probe`: also run
    mutation_probe (a cache as a graph input), beside the cases. `rounds`: each reduce-overhead case is also timed
    in turn with the default compile of its variant this many times (rounds_in_turn; 0: not at all).
    """
    cfg.check()
    device = resolve(device)
    on_cuda = torch.device(device).type == "cuda"
    if isolation not in ISOLATION:
        raise BadParameter(f"{NAME}: isolation={isolation!r}; choose from {list(ISOLATION)}")
    cases = plan(variants, modes, capture_scalar_outputs, graph_partition, graph_partition_supported())
    runnable = [c for c in cases if on_cuda or c.mode != "reduce-overhead"]
    groups = groups_of(runnable, isolation, on_cuda)
    done: dict[int, dict[str, Any]] = {}
    kwargs = {"warmup": warmup, "min_run_time": min_run_time, "compile_cache": compile_cache, "light_cpu": light_cpu,
              "rounds": rounds}
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(groups) + probe))) as pool:
        probed = pool.submit(run_mutation_probe, device, case_timeout) if probe else None
        for got in pool.map(lambda g: _run_group(g, cfg, device, case_timeout, **kwargs), groups):
            done.update(got)
        probe_rows = probed.result().to_dict(orient="records") if probed else []
    rows = []
    for case in cases:
        base = {"variant": case.variant, "mode": case.mode, "capture_scalar_outputs": case.capture,
                "graph_partition": case.partition, "device": device}
        got = done.get(id(case), {"status": "skipped", "error": SKIPPED_ON_CPU, "seconds": 0.0})
        rows.append({**base, **got})
    return Results(rows, cfg, device, stack_info(), atol, probe_rows)


# --------------------------------------------------------------------------- a cache as a graph input


class CacheWriter(nn.Module):
    """One cache update and a read, the cache a module buffer (what compiled graphs treat as a static input)."""

    def __init__(self, n: int = 16, d: int = 8) -> None:
        super().__init__()
        self.register_buffer("cache", torch.zeros(n, d), persistent=False)

    def forward(self, pos: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return write_cache(self.cache, pos, x)


def write_cache(cache: torch.Tensor, pos: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Write x at row `pos` of the cache, in place, and return the cache's column sums."""
    cache.index_copy_(0, pos, x)
    return cache.sum(0)


def mutation_probe(device: str, calls: int = 6) -> list[dict[str, Any]]:
    """Child body: the same cache update under reduce-overhead, cache as a module buffer vs a function argument.

    Per placement: cudagraph skip messages (those about mutated inputs counted apart), graph and kernel
    launches of the last call, and whether the cache holds what was written.
    """
    rows = []
    for where in ("buffer", "argument"):
        torch._dynamo.reset()
        module = CacheWriter().to(device)
        cache = torch.zeros(16, 8, device=device)
        step = (torch.compile(module, mode="reduce-overhead") if where == "buffer"
                else torch.compile(write_cache, mode="reduce-overhead"))
        target = module.cache if where == "buffer" else cache

        def call(i: int) -> torch.Tensor:
            pos = torch.tensor([i], device=device)
            x = torch.full((1, 8), float(i + 1), device=device)
            return step(pos, x) if where == "buffer" else step(cache, pos, x)

        with LogCapture() as logs:
            for i in range(calls - 1):
                call(i)
            counts = profile_call(lambda: call(calls - 1), device)
        summary = logs.summary()
        expected = torch.arange(1, calls + 1, dtype=torch.float32, device=device)
        rows.append({"cache": where, **counts,
                     "mutated-input skips": sum("mutated inputs" in m for m in summary["skip_messages"]),
                     "skip messages": summary["skip_messages"],
                     "cache correct": bool(torch.equal(target[:calls, 0], expected))})
    torch._dynamo.reset()
    return rows


def run_mutation_probe(device: str, timeout: float = 300.0) -> pd.DataFrame:
    """The mutation probe in a child process on CUDA; on CPU one `skipped` row (reduce-overhead needs CUDA)."""
    device = resolve(device)
    if torch.device(device).type != "cuda":
        return pd.DataFrame([{"cache": "buffer / argument", "status": "skipped", "error": SKIPPED_ON_CPU}])
    o = isolate.run_step(mutation_probe, device, timeout=timeout, step="mutation probe compile", phase="compile")
    if not o.ok:
        return pd.DataFrame([{"cache": "buffer / argument", "status": o.status, "error": o.error}])
    return pd.DataFrame([{**r, "status": "ok", "error": ""} for r in o.value])


# --------------------------------------------------------------------------- tables


def _setting(r: dict[str, Any]) -> str:
    parts = []
    if r.get("capture_scalar_outputs") is not None:
        parts.append(f"capture={'on' if r['capture_scalar_outputs'] else 'off'}")
    if r.get("graph_partition") is not None:
        parts.append(f"partition={'on' if r['graph_partition'] else 'off'}")
    return " ".join(parts) or "-"


def _label(r: dict[str, Any]) -> str:
    return f"{r['variant']} {r['mode']} {_setting(r)}".replace(" -", "")


def stack_table(res: Results) -> pd.DataFrame:
    """The stack and the compile settings that decide the outcome, plus the model's sizes."""
    items = {**res.stack, "device": res.device, **{f"model.{k}": v for k, v in asdict(res.config).items()}}
    return pd.DataFrame([{"setting": k, "value": v} for k, v in items.items()])


def status_table(res: Results) -> pd.DataFrame:
    """How each case ended (ok / error / crash / timeout / skipped)."""
    return pd.DataFrame([{"case": _label(r), "status": r["status"], "seconds": r["seconds"], "error": r["error"]}
                         for r in res.rows])


def _eager_launches(res: Results, variant: str) -> int | None:
    rows = res.ok(variant=variant, mode="eager")
    return rows[0].get("kernel_launches") if rows else None


def capture_class(row: dict[str, Any], eager_launches: int | None) -> str:
    """full / partial / none from the profiled decode step; n/a where no CUDA graph could be involved.

    none: no graph launch. full: graph launches, no host sync (scalar read or stream sync) and at most
    max(3, 20 % of eager's) kernels launched one by one (cudagraph trees copy inputs in). partial: graph
    launches, but also a host sync or more loose kernels (a graph split by graph breaks or partitions).
    """
    if row.get("status") != "ok" or row.get("mode") != "reduce-overhead" or "graph_launches" not in row:
        return "n/a"
    if row["graph_launches"] == 0:
        return "none"
    allowed = max(3, int(0.2 * (eager_launches or 0)))
    synced = row.get("scalar_reads", 0) or row.get("stream_syncs", 0)
    return "full" if row["kernel_launches"] <= allowed and not synced else "partial"


def cudagraph_table(res: Results) -> pd.DataFrame:
    """Per case: graph vs kernel launches in one decode step, syncs, Inductor's skips and messages, partitions."""
    out = []
    for r in res.rows:
        if r["status"] != "ok":
            continue
        parts = r.get("partitions") or []
        out.append({
            "case": _label(r),
            "captured": capture_class(r, _eager_launches(res, r["variant"])),
            "graph launches/step": r.get("graph_launches"),
            "kernel launches/step": r.get("kernel_launches"),
            "gpu kernels/step": r.get("gpu_kernels"),
            "scalar reads/step": r.get("scalar_reads"),
            "stream syncs/step": r.get("stream_syncs"),
            "cudagraph_skips": r.get("cudagraph_skips"),
            "skip messages": " | ".join(r.get("skip_messages") or []),
            "partitions (all, cg, non-cg)": "; ".join(",".join(map(str, p)) for p in parts),
            "non-cg reasons": ", ".join(f"{k} x{v}" for k, v in (r.get("non_cudagraphable") or {}).items()),
            "graph recordings": r.get("recordings"),
            "symint-key recordings": r.get("symint_recordings"),
            "aten scalar reads": r.get("aten_scalar_reads"),
            "first incompatible op (static)": r.get("aten_first_incompatible"),
            "collector errors": " | ".join(f"{k}: {v}" for k, v in r.items() if k.endswith("_error")),
        })
    return pd.DataFrame(out)


def graph_break_table(res: Results) -> pd.DataFrame:
    """Per compiled case: Dynamo graphs and breaks (one traced call, then the whole run), recompilations and why."""
    out = []
    for r in res.rows:
        if r["status"] != "ok" or r["mode"] == "eager":
            continue
        out.append({
            "case": _label(r),
            "graphs (1 call)": r.get("graphs_1call"),
            "graph breaks (1 call)": r.get("breaks_1call"),
            "unique graphs (whole run)": r.get("unique_graphs"),
            "graph breaks (counter)": r.get("graph_breaks"),
            "recompiles": r.get("recompiles"),
            "break reasons": " | ".join(r.get("break_reasons") or r.get("graph_break_reasons") or []),
            "recompile reasons": " | ".join(m.split("triggered by")[-1][:160]
                                            for m in r.get("recompile_messages") or []),
        })
    return pd.DataFrame(out)


def latency_table(res: Results) -> pd.DataFrame:
    """Per case: median per-step latency with its spread, the forecast time and the first (compiling) call."""
    out = []
    for r in res.rows:
        if r["status"] != "ok":
            continue
        calls = r["calls"]
        eager = res.ok(variant=r["variant"], mode="eager")
        default = [d for d in res.ok(variant=r["variant"], mode="default")
                   if d.get("capture_scalar_outputs") == r.get("capture_scalar_outputs")]
        out.append({
            "case": _label(r), "variant": r["variant"], "mode": r["mode"], "setting": _setting(r),
            "per step ms (median)": r["per_step_ms"],
            "per step IQR ms": r["iqr_ms"] / calls,
            "per step p10 ms": r["p10_ms"] / calls, "per step p90 ms": r["p90_ms"] / calls,
            "forecast ms (median)": r["median_ms"], "first call ms": r["first_ms"], "runs": r["runs"],
            "speedup vs eager": eager[0]["median_ms"] / r["median_ms"] if eager else None,
            "speedup vs default compile": (default[0]["median_ms"] / r["median_ms"]
                                           if default and r["mode"] == "reduce-overhead" else None),
            "fx cache hit/miss": (f"{r['fxgraph_cache_hit']}/{r['fxgraph_cache_miss']}"
                                  if "fxgraph_cache_hit" in r else ""),
            "compiled first in its process": r.get("compiled_before_in_child") == 0,
            "peak CUDA MiB": r["peak_mem_bytes"] / 2**20 if "peak_mem_bytes" in r else None,
        })
    return pd.DataFrame(out)


def rounds_table(res: Results) -> pd.DataFrame:
    """Per reduce-overhead case timed in turn with the default compile: each round's medians, ratio and spreads."""
    out = []
    for r in res.rows:
        rounds = r.get("rounds") if r.get("status") == "ok" else None
        if not isinstance(rounds, dict) or not rounds.get("graphs") or not rounds.get("default"):
            continue
        g, d = rounds["graphs"], rounds["default"]
        for i, (gm, gi, dm, di) in enumerate(zip(g["median_ms"], g["iqr_ms"], d["median_ms"], d["iqr_ms"])):
            out.append({"case": _label(r), "round": i + 1, "reduce-overhead ms": gm, "default compile ms": dm,
                        "default / reduce-overhead": dm / gm if gm > 0 else None,
                        "IQR/median reduce-overhead": gi / gm if gm > 0 else None,
                        "IQR/median default": di / dm if dm > 0 else None})
    return pd.DataFrame(out)


def latency_chart(res: Results):
    """Bar charts: steady per-step latency (median, p10-p90 whiskers) and first-call time, per case."""
    import matplotlib.pyplot as plt

    df = latency_table(res)
    fig, axes = plt.subplots(1, 2, figsize=(13, 0.35 * max(len(df), 4) + 1.5))
    if df.empty:
        for ax in axes:
            ax.text(0.5, 0.5, "no case ran", ha="center")
        return fig
    colors = {"eager": "#888888", "default": "#4c72b0", "reduce-overhead": "#dd8452"}
    y = range(len(df))
    med = df["per step ms (median)"]
    err = [(med - df["per step p10 ms"]).clip(lower=0), (df["per step p90 ms"] - med).clip(lower=0)]
    axes[0].barh(list(y), med, xerr=err, color=[colors.get(m, "#55a868") for m in df["mode"]])
    axes[0].set_yticks(list(y), df["case"])
    axes[0].invert_yaxis()
    axes[0].set_xlabel("ms per decode step (median, p10-p90)")
    axes[1].barh(list(y), df["first call ms"] / 1e3, color=[colors.get(m, "#55a868") for m in df["mode"]])
    axes[1].set_yticks(list(y), [""] * len(df))
    axes[1].invert_yaxis()
    axes[1].set_xlabel("first forecast s (compile + warm-up of CUDA graphs)")
    fig.suptitle(f"{res.device}: {res.config.calls} calls per forecast, d_model={res.config.d_model}, "
                 f"n_layers={res.config.n_layers}, batch={res.config.batch}")
    fig.tight_layout()
    plt.close(fig)
    return fig


def _outputs(row: dict[str, Any]) -> torch.Tensor:
    return torch.tensor(row["outputs"], dtype=torch.float64)


def eager_agreement(res: Results) -> pd.DataFrame:
    """Eager outputs of every variant against the first variant's: bitwise equal and max |Δ|."""
    eager = res.ok(mode="eager")
    if not eager:
        return pd.DataFrame()
    base = eager[0]
    return pd.DataFrame([{
        "variant": r["variant"], "against": base["variant"],
        "bitwise equal": r["outputs"] == base["outputs"],
        "max |Δ|": _max_abs(_outputs(r), _outputs(base)),
    } for r in eager])


def accuracy_table(res: Results) -> pd.DataFrame:
    """Per compiled case: max |Δ| against eager over all forecast steps (first, compiling call and a later one)."""
    out = []
    for r in res.rows:
        if r["status"] != "ok" or r["mode"] == "eager":
            continue
        out.append({"case": _label(r), "max |Δ| first call": r["max_abs_first"],
                    "max |Δ| later call": r["max_abs_last"],
                    "bitwise equal to eager": r["outputs"] == r["reference"],
                    f"within atol={res.atol:g}": max(r["max_abs_first"], r["max_abs_last"]) <= res.atol})
    return pd.DataFrame(out)


def probe_table(res: Results) -> pd.DataFrame:
    """The mutation probe: the same cache update, cache as a module buffer vs a function argument, reduce-overhead."""
    rows = [{k: (" | ".join(v) if isinstance(v, list) else v) for k, v in p.items()} for p in res.probe]
    return pd.DataFrame(rows)


def log_table(res: Results) -> pd.DataFrame:
    """The captured Inductor/Dynamo messages per case: cudagraph skips, perf hints, recompiles, graph breaks."""
    out = []
    for r in res.rows:
        if r["status"] != "ok":
            if r["status"] != "skipped":
                out.append({"case": _label(r), "kind": r["status"], "message": r["error"]})
            continue
        for kind, key in (("cudagraph skip", "skip_messages"), ("perf hint", "perf_hints"),
                          ("recompile", "recompile_messages"), ("graph break", "graph_break_messages")):
            for m in r.get(key) or []:
                out.append({"case": _label(r), "kind": kind, "message": m})
    return pd.DataFrame(out, columns=["case", "kind", "message"])


def explorer(res: Results):
    """A dropdown over the cases showing each one's captured messages (ipywidgets; static text under papermill)."""
    import ipywidgets as widgets

    table = log_table(res)
    cases = [_label(r) for r in res.rows]
    out = widgets.Output()

    def show(change: dict[str, Any]) -> None:
        out.clear_output()
        with out:
            from IPython.display import display

            display(table[table["case"] == change["new"]])

    pick = widgets.Dropdown(options=cases, description="case")
    pick.observe(show, names="value")
    return widgets.VBox([pick, out])


# --------------------------------------------------------------------------- verdicts
#
# Each judge reads the rows the seed's conditions pick (data/claims/cuda_graphs.json `conditions`: CUDA,
# reduce-overhead, TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1 where the seed ran with it) and returns a Judgement whose
# `run` holds this run's value of every one of those conditions; findings applies the conditions rule.
# `partly` always means the statement holds in part, and the evidence says which part. Timing verdicts read
# rounds timed in turn (rounds_in_turn) through verdicts.band's straddle rule; bands come from the ledger.

LOCAL_SCALAR = "_local_scalar_dense"
TRACE_NOT_DEVICE = ("the verdict rests on the ATen graph Dynamo and AOTAutograd hand to Inductor, traced here "
                    "without Inductor: Inductor's cudagraph check (get_first_incompatible_cudagraph_node) reads the ops "
                    "of that graph, not the device it was traced on")
TRACE_NOT_MODE = "the traced graph is the one Inductor receives before any compile mode applies"


def _fmt(x: float | None) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3g}"


def _ro_rows(res: Results, **where: Any) -> list[dict[str, Any]]:
    return res.ok(mode="reduce-overhead", **where)


def model_name(cfg: Config) -> str:
    """The model a verdict rests on, as the conditions record it."""
    return f"kit forecaster (d_model={cfg.d_model}, n_layers={cfg.n_layers}, batch={cfg.batch})"


def _values(rows: list[dict[str, Any]], key: str) -> list[Any]:
    return sorted({r.get(key) for r in rows if r.get(key) is not None}, key=str)


def _run(res: Results, rows: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """This run's conditions for a verdict resting on `rows`: device, torch, backend, model, and the modes and
    capture/partition settings of those rows."""
    run: dict[str, Any] = {"device": torch.device(res.device).type, "torch": str(res.stack.get("torch", "unknown")),
                           "backend": "torch.compile", "model": model_name(res.config)}
    for key, name in (("mode", "mode"), ("capture_scalar_outputs", "capture_scalar_outputs"),
                      ("graph_partition", "graph_partition")):
        if values := _values(rows, key):
            run[name] = values
    return {**run, **extra}


def _describe(res: Results, rows: list[dict[str, Any]]) -> str:
    return "; ".join(
        f"{_setting(r)}: {capture_class(r, _eager_launches(res, r['variant']))} "
        f"({r.get('graph_launches')} graph / {r.get('kernel_launches')} kernel launches, "
        f"{r.get('scalar_reads')} scalar reads per step, skips={r.get('cudagraph_skips')}"
        f"{', ' + r['skip_messages'][0][:120] if r.get('skip_messages') else ''})"
        for r in rows)


def _failed(res: Results, **where: Any) -> list[dict[str, Any]]:
    return [r for r in res.rows
            if r["status"] not in ("ok", "skipped") and all(r.get(k) == v for k, v in where.items())]


def _ended(rows: list[dict[str, Any]]) -> str:
    """'item reduce-overhead capture=on partition=on ended error (AssertionError: ...)', one per failed row."""
    return "; ".join(f"{_label(r)} ended {r['status']} ({r['error'][:160]})" for r in rows)


def _cpu_note(res: Results, variant: str) -> str:
    """What the CPU run found about a variant without CUDA: graph breaks, recompiles, traced scalar reads."""
    rows = res.ok(variant=variant, mode="default")
    return ", ".join(f"{_setting(r)}: {r.get('breaks_1call')} graph breaks, {r.get('recompiles')} recompiles, "
                     f"{r.get('aten_scalar_reads')} aten._local_scalar_dense in the traced graph" for r in rows)


def _no_graph_rows(res: Results, cpu_note: str, **where: Any) -> Judgement:
    """The verdict when no reduce-overhead row matching `where` ran to the end: why not."""
    failed = _failed(res, mode="reduce-overhead", **where)
    if failed:
        return Judgement("inconclusive", f"no reduce-overhead case with the seed's settings ran to the end: "
                         f"{_ended(failed)}", {}, run=_run(res, failed))
    if any(r["mode"] == "reduce-overhead" and r["status"] == "skipped" for r in res.rows) or res.device == "cpu":
        return Judgement("needs_cuda", f"no CUDA device in this run; on CPU: {cpu_note}", basis="none",
                         run=_run(res, []))
    return Judgement("error", "no reduce-overhead case with these settings was run (see the modes/variants "
                     "parameters)", basis="none", run=_run(res, []))


def _captured(res: Results, row: dict[str, Any]) -> str:
    return capture_class(row, _eager_launches(res, row["variant"]))


def _traced(res: Results, variant: str, capture: bool) -> list[dict[str, Any]]:
    """Compiled default-mode rows of a variant with one capture setting (their one-call trace is device-independent)."""
    return res.ok(variant=variant, mode="default", capture_scalar_outputs=capture)


def _flagged(rows: list[dict[str, Any]]) -> list[str]:
    """Inductor's first cudagraph-incompatible node of each traced graph ('' where there is none)."""
    return [str(r.get("aten_first_incompatible") or "") for r in rows if "aten_first_incompatible" in r]


def _skipped_for_scalar(row: dict[str, Any]) -> bool:
    """No graph launched, and Inductor said why: the incompatible op aten._local_scalar_dense."""
    return row.get("graph_launches", 0) == 0 and any(
        "incompatible op" in m and LOCAL_SCALAR in m for m in row.get("skip_messages") or [])


def judge_item_skips(res: Results) -> Judgement:
    """`.item()` (capture on, as the seed ran) makes reduce-overhead skip CUDA graphs, naming _local_scalar_dense."""
    where = {"variant": "item", "capture_scalar_outputs": True}
    rows = _ro_rows(res, **where)
    if not rows:
        flagged = _flagged(_traced(res, "item", True))
        return _no_graph_rows(res, f"the traced .item() graph's first cudagraph-incompatible node: {flagged or 'not traced'}"
                              "; whether Inductor then skips CUDA graphs or partitions around it shows on CUDA only",
                              **where)
    held = [_skipped_for_scalar(r) for r in rows]
    failed = _failed(res, mode="reduce-overhead", **where)
    text = (f"item with reduce-overhead and capture on: {_describe(res, rows)}"
            + (f"; {_ended(failed)}: that setting is undecided" if failed else ""))
    verdict = all_none_some(sum(held), len(held))
    if verdict == "partly":
        text += (" — it holds in part: skipped where " + ", ".join(_setting(r) for r, h in zip(rows, held) if h)
                 + "; graphs launched where " + ", ".join(_setting(r) for r, h in zip(rows, held) if not h))
    return Judgement(verdict, text, {"classes": [_captured(res, r) for r in rows], "skipped": held},
                     run=_run(res, rows))


def judge_item_local_scalar_dense(res: Results) -> Judgement:
    """`.item()` becomes aten._local_scalar_dense: in the traced graph (capture on) or in the profiled step (capture off)."""
    on = [r for r in _traced(res, "item", True) if "aten_scalar_reads" in r]
    off = [r for r in _traced(res, "item", False) if "scalar_reads" in r]
    if not on and not off:
        return Judgement("error", "no compiled item case ran (see variants/modes/capture_scalar_outputs)", basis="none")
    in_graph = [r["aten_scalar_reads"] for r in on]
    eager_reads = [r["scalar_reads"] for r in off]
    text = (f"item with capture on: {', '.join(map(str, in_graph)) or 'not run'} aten._local_scalar_dense in the "
            f"traced ATen graph ({', '.join(str(r.get('breaks_1call')) for r in on) or '-'} graph breaks); "
            f"capture off: {', '.join(str(r.get('breaks_1call')) for r in off) or '-'} graph breaks, "
            f"{', '.join(map(str, eager_reads)) or '-'} aten::_local_scalar_dense calls in a profiled step ({res.device})")
    seen = [n > 0 for n in in_graph + eager_reads]
    return Judgement(all_none_some(sum(seen), len(seen)), text, {"in_graph": in_graph, "profiled": eager_reads},
                     run=_run(res, on + off))


def _syncs(rows: list[dict[str, Any]]) -> list[int]:
    return [int(r.get("stream_syncs", 0) or 0) for r in rows if "stream_syncs" in r]


def judge_item_syncs(res: Results) -> Judgement:
    """`.item()` forces a host sync: every item row (eager and compiled) syncs the stream in a decode step (CUDA)."""
    rows = [r for r in res.ok(variant="item") if "stream_syncs" in r]
    if res.device == "cpu" or not rows:
        reads = [r.get("scalar_reads") for r in res.ok(variant="item")]
        return Judgement("needs_cuda", f"a host sync needs a CUDA stream; on CPU the item cases make {reads} scalar "
                         "reads per profiled step", basis="none", run=_run(res, []))
    syncs = _syncs(rows)
    ref = _syncs([r for r in res.ok(variant="tensor") + res.ok(variant="python") if r["mode"] != "reduce-overhead"])
    text = (f"{sum(s > 0 for s in syncs)}/{len(syncs)} item cases synchronise the stream in a decode step "
            f"({', '.join(f'{_label(r)}: {s}' for r, s in zip(rows, syncs))}); the tensor/python eager and default "
            f"cases: {ref}")
    verdict = all_none_some(sum(s > 0 for s in syncs), len(syncs))
    if verdict == "partly":
        text += " — it holds in part: only " + ", ".join(_label(r) for r, s in zip(rows, syncs) if s) + " sync"
    return Judgement(verdict, text, {"syncs": syncs}, run=_run(res, rows))


def judge_item_capture_scalar(res: Results) -> Judgement:
    """'.item() cannot be captured even with TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1', in its two senses: (a) Dynamo
    cannot capture it into the graph (a graph break with the flag on), (b) CUDA graphs cannot capture it (on CUDA:
    no graph or a graph split around it; on any device: Inductor's cudagraph check flags the traced op)."""
    traced = [r for r in _traced(res, "item", True) if "breaks_1call" in r]
    if not traced:
        return Judgement("error", "no compiled item case with capture on ran (see capture_scalar_outputs)",
                         basis="none")
    dynamo_breaks = any(r["breaks_1call"] for r in traced)
    flagged = _flagged(traced)
    dynamo = (f"with capture on Dynamo {'breaks the graph at' if dynamo_breaks else 'traces'} .item(): "
              f"{', '.join(str(r['breaks_1call']) for r in traced)} graph breaks, "
              f"{', '.join(str(r.get('aten_scalar_reads')) for r in traced)} aten._local_scalar_dense in the graph; "
              f"Inductor's first cudagraph-incompatible node: {', '.join(f or 'none' for f in flagged) or 'not traced'}")
    rows = _ro_rows(res, variant="item", capture_scalar_outputs=True)
    failed = _failed(res, mode="reduce-overhead", variant="item", capture_scalar_outputs=True)
    irrelevant: dict[str, str] = {}
    if rows:
        classes = [_captured(res, r) for r in rows]
        not_graphed = all(c != "full" for c in classes)
        graphs = (f"CUDA graphs with .item() and capture on: {', '.join(f'{_setting(r)} {c}' for r, c in zip(rows, classes))}"
                  + (f" ({_ended(failed)})" if failed else ""))
        basis_rows = rows  # part (a) reads the traced graph, the one Inductor receives in any mode
    elif flagged and all(LOCAL_SCALAR in f for f in flagged):
        not_graphed = True
        graphs = "CUDA graphs: the traced graph's _local_scalar_dense is the node Inductor's cudagraph check refuses"
        basis_rows = traced
        irrelevant = {"device": TRACE_NOT_DEVICE, "mode": TRACE_NOT_MODE}
        if failed:
            graphs += f" (the reduce-overhead cases did not run to the end: {_ended(failed)})"
    else:
        return _no_graph_rows(res, dynamo, variant="item", capture_scalar_outputs=True)
    parts = {"(a) Dynamo cannot capture it": dynamo_breaks, "(b) CUDA graphs cannot capture it": not_graphed}
    verdict = all_none_some(sum(parts.values()), len(parts))
    text = f"{graphs}; {dynamo}"
    if verdict == "partly":
        text += (" — it holds in part: " + "; ".join(f"{k}: {'holds' if v else 'fails'}" for k, v in parts.items())
                 + ". int() with capture on gives the same graph (see int_enables)")
    run = _run(res, basis_rows, **({"mode": ["default"]} if irrelevant else {}))
    return Judgement(verdict, text, {"parts": parts}, run=run, irrelevant=irrelevant)


def judge_partition_non_gpu_ops(res: Results) -> Judgement:
    """Before the fix (item, capture on, reduce-overhead with graph partition on): the log line
    'cudagraph partition due to non gpu ops'. A partition around a non-GPU op logged under another message is the
    statement in part (the partition happens, the words differ)."""
    where = {"variant": "item", "capture_scalar_outputs": True}
    rows = [r for r in _ro_rows(res, **where) if r.get("graph_partition") in (True, None)]
    if not rows:
        failed = [r for r in _failed(res, mode="reduce-overhead", **where) if r.get("graph_partition") in (True, None)]
        if failed:
            return Judgement("inconclusive", "the only cases that can log a graph partition (item, capture on, graph "
                             f"partition on) did not run to the end: {_ended(failed)}", {}, run=_run(res, failed))
        if res.device == "cpu" or any(r["status"] == "skipped" for r in res.rows):
            return _no_graph_rows(res, "graph partitions for CUDA graphs happen on CUDA only", **where)
        return Judgement("error", "no item reduce-overhead case with capture on and graph partition on was run "
                         "(see graph_partition)", basis="none", run=_run(res, []))
    literal = sum(r.get("non_gpu_partition_logs", 0) for r in rows)
    split = [r for r in rows if any(p[2] > 0 for p in r.get("partitions") or [])]
    reasons = sorted({k for r in rows for k in (r.get("non_cudagraphable") or {})})
    text = (f"{literal} 'non gpu ops' partition messages and {len(split)}/{len(rows)} item reduce-overhead cases "
            f"(capture on, partition on) with a non-cudagraphable partition (reasons: {', '.join(reasons) or 'none'}; "
            + ", ".join(f"{_setting(r)}: {r.get('partitions')}" for r in rows) + ")")
    if literal:
        return Judgement("confirmed", text, {"messages": literal}, run=_run(res, rows))
    if split:
        return Judgement("partly", text + " — it holds in part: the graph is partitioned around a non-GPU op, but "
                         "the log says so in other words on this torch", {"split": len(split)}, run=_run(res, rows))
    return Judgement("not_reproduced", text, {}, run=_run(res, rows))


def judge_int_enables(res: Results) -> Judgement:
    """int() + capture on gives full CUDA graphs, and does so where .item() does not. Without a reduce-overhead case
    (CPU), the traced graph refutes it when int()'s graph holds a node Inductor's cudagraph check refuses."""
    where = {"variant": "int", "capture_scalar_outputs": True}
    rows = _ro_rows(res, **where)
    if not rows:
        traced = _traced(res, "int", True)
        flagged = _flagged(traced)
        item_flagged = _flagged(_traced(res, "item", True))
        if flagged and all(flagged):
            return Judgement(
                "refuted", f"int() with capture on leaves {', '.join(flagged)} in the traced graph "
                f"({', '.join(str(r.get('aten_scalar_reads')) for r in traced)} aten._local_scalar_dense; .item()'s "
                f"graph: {', '.join(item_flagged) or 'not traced'}): Inductor's cudagraph check refuses that node, so "
                "reduce-overhead either skips CUDA graphs or graphs the step around it, never in full"
                + (f" (the reduce-overhead cases did not run to the end: {_ended(_failed(res, mode='reduce-overhead', **where))})"
                   if _failed(res, mode="reduce-overhead", **where) else ""),
                {"flagged": flagged, "item_flagged": item_flagged},
                run=_run(res, traced, mode=["default"]), irrelevant={"device": TRACE_NOT_DEVICE, "mode": TRACE_NOT_MODE})
        return _no_graph_rows(res, f"int {_cpu_note(res, 'int')}; item {_cpu_note(res, 'item')}", **where)
    int_classes = [_captured(res, r) for r in rows]
    item_rows = _ro_rows(res, variant="item", capture_scalar_outputs=True)
    item_by = {_setting(r): _captured(res, r) for r in item_rows}
    failed = _failed(res, mode="reduce-overhead", **where)
    evidence = (f"int+capture: {_describe(res, rows)}. item+capture: {_describe(res, item_rows) or 'not run'}"
                + (f"; {_ended(failed)}" if failed else ""))
    full = [c == "full" for c in int_classes]
    same = all(item_by.get(_setting(r)) == c for r, c in zip(rows, int_classes))
    if not any(full):
        verdict = "refuted"
        if same:
            evidence += ". int() captures exactly as .item() does: the switch to int() changes nothing"
    elif all(full) and not any(item_by.get(_setting(r)) == "full" for r in rows):
        verdict = "confirmed"
    elif all(full):
        verdict = "partly"
        evidence += (" — it holds in part: int() gets full CUDA graphs (no skipping), but .item() gets them too, so "
                     "the replacement enables nothing")
    else:
        verdict = "partly"
        evidence += (" — it holds in part: full CUDA graphs with " + ", ".join(_setting(r) for r, f in zip(rows, full) if f)
                     + ", not with " + ", ".join(_setting(r) for r, f in zip(rows, full) if not f))
    return Judgement(verdict, evidence, {"int": int_classes, "item": item_by}, run=_run(res, rows))


def judge_int_no_sync(res: Results) -> Judgement:
    """int() under capture_scalar_outputs forces no host sync: stream syncs in its compiled decode steps (CUDA)."""
    rows = [r for r in res.ok(variant="int", capture_scalar_outputs=True) if r["mode"] != "eager"]
    traced = [r for r in _traced(res, "int", True) if "breaks_1call" in r]
    dynamo = (f"Dynamo {'traces' if traced and not any(r['breaks_1call'] for r in traced) else 'breaks the graph at'} "
              f"int() with capture on ({', '.join(str(r['breaks_1call']) for r in traced) or '-'} graph breaks, "
              f"{', '.join(str(r.get('aten_scalar_reads')) for r in traced) or '-'} aten._local_scalar_dense in the "
              "traced graph, as .item()'s)")
    if res.device == "cpu" or not any("stream_syncs" in r for r in rows):
        return Judgement("needs_cuda", f"{dynamo}; whether that read synchronises needs a CUDA stream", basis="none",
                         run=_run(res, []))
    rows = [r for r in rows if "stream_syncs" in r]
    syncs = _syncs(rows)
    text = (f"{sum(s > 0 for s in syncs)}/{len(syncs)} compiled int()+capture cases synchronise the stream in a decode "
            f"step ({', '.join(f'{_label(r)}: {s}' for r, s in zip(rows, syncs))}); {dynamo}")
    verdict = all_none_some(sum(s == 0 for s in syncs), len(syncs))
    if verdict == "partly":
        text += " — it holds in part: no sync in " + ", ".join(_label(r) for r, s in zip(rows, syncs) if not s)
    return Judgement(verdict, text, {"syncs": syncs}, run=_run(res, rows))


def judge_mutated_inputs(res: Results) -> Judgement:
    """'skipping cudagraphs due to mutated inputs': (a) seen for cache updates, (b) okay: the step is still graphed."""
    probe = [p for p in res.probe if p.get("status") == "ok"]
    if res.device == "cpu":
        return _no_graph_rows(res, "the message comes from CUDA graph trees")
    if not probe:
        return Judgement("error", f"the mutation probe did not run: "
                         f"{res.probe[0].get('error') if res.probe else 'not asked for'}", basis="none")
    run = _run(res, _ro_rows(res), mode=["reduce-overhead"])
    in_model = [r for r in _ro_rows(res) if any("mutated inputs" in m for m in r.get("skip_messages") or [])]
    hits = [p for p in probe if p.get("mutated-input skips")]
    parts = "; ".join(f"cache passed as {p['cache']}: {p.get('mutated-input skips')} mutated-input skips, "
                      f"{p.get('graph_launches')} graph / {p.get('kernel_launches')} kernel launches"
                      for p in probe)
    text = f"{len(in_model)} of {len(_ro_rows(res))} model cases (cache in module buffers) log it; probe: {parts}"
    if not in_model and not hits:
        return Judgement("not_reproduced", text, {}, run=run)
    logged = [(f"the probe's cache passed as {p['cache']}", p.get("graph_launches", 0)) for p in hits]
    logged += [(_label(r), r.get("graph_launches", 0)) for r in in_model]
    ungraphed = [name for name, launches in logged if not launches]
    if not ungraphed:
        return Judgement("confirmed", text + " — every step that logs it is still replayed from CUDA graphs", {},
                         run=run)
    return Judgement("partly", text + " — it holds in part: (a) the message comes from cache updates ("
                     + ", ".join(name for name, _ in logged) + "); (b) fails: no CUDA graph is launched in the step of "
                     + ", ".join(ungraphed), {"ungraphed": ungraphed}, run=run)


def _full_graph_rows(res: Results) -> list[dict[str, Any]]:
    """reduce-overhead rows with the seed's capture setting whose decode step is one replayed CUDA graph."""
    return [r for r in _ro_rows(res, capture_scalar_outputs=True) if _captured(res, r) == "full"]


def _rounds(row: dict[str, Any]) -> dict[str, Any] | None:
    rounds = row.get("rounds")
    return rounds if isinstance(rounds, dict) and rounds.get("graphs") and rounds.get("default") else None


def _timed_in_turn(res: Results, claim: str) -> tuple[list[dict[str, Any]], Judgement | None]:
    """The full-graph rows with rounds timed in turn, or the Judgement that says why there are none."""
    if not _ro_rows(res):
        return [], _no_graph_rows(res, "no CUDA graphs to time")
    full = _full_graph_rows(res)
    if not full:
        return [], Judgement("inconclusive", "no reduce-overhead case with capture on captured full CUDA graphs, so "
                             f"there is no with-graphs time for {claim}", run=_run(res, _ro_rows(res)))
    timed = [r for r in full if _rounds(r)]
    if not timed:
        errors = sorted({str(r.get("rounds_error")) for r in full if r.get("rounds_error")})
        return [], Judgement("inconclusive", f"the full-CUDA-graph cases ({', '.join(_label(r) for r in full)}) were "
                             "not timed in turn with the default compile (" + ("; ".join(errors) if errors else
                             "this run timed every case apart, rounds=0 or an older kit") + "): ratios of cases timed "
                             "apart cannot decide a timing claim", run=_run(res, full))
    return timed, None


def judge_speedup(res: Results) -> Judgement:
    """Later forecasts with full CUDA graphs against the default compile of the same variant and settings, round by
    round (timed in turn), against the ledger's band: every round inside confirms, every round outside refutes, rounds
    on both sides of an edge leave it inconclusive."""
    timed, why = _timed_in_turn(res, "the speed-up")
    if why:
        return why
    lo, hi = band_of("cuda_graphs.speedup_2_5x")
    per = {_label(r): timing.round_ratios(_rounds(r)["default"]["median_ms"], _rounds(r)["graphs"]["median_ms"])
           for r in timed}
    pooled = [v for ratios in per.values() for v in ratios]
    verdict = band(pooled, lo, hi)
    cfg = res.config
    text = (f"default compile / reduce-overhead forecast time, round by round (timed in turn), with full CUDA graphs "
            f"(d_model={cfg.d_model}, n_layers={cfg.n_layers}, batch={cfg.batch}): "
            + "; ".join(f"{k}: {', '.join(f'{v:.2f}' for v in ratios)}×" for k, ratios in per.items())
            + f"; the seed's band {lo:g}–{hi:g}×"
            + (" — rounds fall on both sides of a band edge" if verdict == "inconclusive" else ""))
    return Judgement(verdict, text, {"ratios": per}, run=_run(res, timed))


def judge_first_inference(res: Results) -> Judgement:
    """First forecast with full CUDA graphs (compile included) against the ledger's band; cold-process cases preferred."""
    if not _ro_rows(res):
        cpu = [r["first_ms"] / 1e3 for r in res.ok(mode="default")]
        return _no_graph_rows(res, f"default-compile first calls {', '.join(f'{s:.1f}' for s in cpu)} s")
    rows = [r for r in _full_graph_rows(res) if "first_ms" in r]
    if not rows:
        return Judgement("inconclusive", "no reduce-overhead case with capture on captured full CUDA graphs: no "
                         "first inference with CUDA graphs enabled to time", run=_run(res, _ro_rows(res)))
    cold = [r for r in rows if r.get("compiled_before_in_child") == 0] or rows
    firsts = sorted(r["first_ms"] / 1e3 for r in cold)
    lo, hi = band_of("cuda_graphs.first_inference_60s")
    verdict = band(firsts, lo, hi)
    text = (f"first forecast with CUDA graphs: {', '.join(f'{s:.1f}' for s in firsts)} s ("
            f"{'cases whose compile came first in their process' if cold is not rows else 'every full-graph case'}; "
            f"{sum(bool(r.get('fxgraph_cache_hit')) for r in cold)}/{len(cold)} hit the FX graph cache) vs a steady "
            f"{min(r['median_ms'] for r in cold):.2f} ms; the seed's band {lo:g}–{hi:g} s, for Toto")
    return Judgement(verdict, text, {"first_s": firsts}, run=_run(res, cold))


def judge_memory(res: Results) -> Judgement:
    """Peak CUDA memory with full CUDA graphs against the default compile of the same variant and settings: each
    pair 'slightly higher' when the ratio is above the band's lo and at most its hi."""
    if not _ro_rows(res):
        return _no_graph_rows(res, "peak memory of CUDA graphs needs CUDA")
    rows = [r for r in _full_graph_rows(res) if "peak_mem_bytes" in r]
    pairs = []
    for r in rows:
        base = [d for d in res.ok(variant=r["variant"], mode="default", capture_scalar_outputs=r["capture_scalar_outputs"])
                if "peak_mem_bytes" in d]
        if base:
            pairs.append((r, base[0]["peak_mem_bytes"], r["peak_mem_bytes"]))
    if not pairs:
        return Judgement("inconclusive", "no full-CUDA-graph case with capture on has a default-compile twin with a "
                         "measured peak", run=_run(res, rows))
    lo, hi = band_of("cuda_graphs.memory_slightly_more")
    ratios = [ro / max(1, d) for _, d, ro in pairs]
    inside = [lo < v <= hi for v in ratios]
    verdict = all_none_some(sum(inside), len(inside))
    text = (f"peak CUDA memory above the model's, reduce-overhead / default compile: "
            + "; ".join(f"{_label(r)}: {ro / 2**20:.2f} vs {d / 2**20:.2f} MiB ({v:.2f}×)"
                        for (r, d, ro), v in zip(pairs, ratios))
            + f"; 'slightly higher': above {lo:g}× and at most {hi:g}×")
    if verdict == "partly":
        text += " — it holds in part: only for " + ", ".join(_label(r) for (r, _, _), i in zip(pairs, inside) if i)
    return Judgement(verdict, text, {"ratios": ratios}, run=_run(res, [p[0] for p in pairs]))


def judge_consistent_latency(res: Results) -> Judgement:
    """Relative spread (IQR / median) of forecasts with full CUDA graphs against the default compile's, round by round
    (timed in turn): smaller in every round confirms, in none refutes, some rounds either way is inconclusive."""
    timed, why = _timed_in_turn(res, "the spread")
    if why:
        return why
    per = {}
    for r in timed:
        rounds = _rounds(r)
        per[_label(r)] = [(gi / gm, di / dm) for gm, gi, dm, di in zip(rounds["graphs"]["median_ms"],
                                                                        rounds["graphs"]["iqr_ms"],
                                                                        rounds["default"]["median_ms"],
                                                                        rounds["default"]["iqr_ms"]) if gm > 0 and dm > 0]
    tighter = [g < d for pairs in per.values() for g, d in pairs]
    verdict = "inconclusive" if not tighter else all_none_some(sum(tighter), len(tighter))
    verdict = "inconclusive" if verdict == "partly" else verdict  # rounds disagree: noise this run cannot decide
    text = ("relative spread (IQR/median) with full CUDA graphs vs the default compile, round by round (timed in "
            "turn): " + "; ".join(f"{k}: " + ", ".join(f"{g:.1%} vs {d:.1%}" for g, d in pairs) for k, pairs in per.items())
            + f"; smaller in {sum(tighter)}/{len(tighter)} rounds")
    return Judgement(verdict, text, {"relative_iqr": per}, run=_run(res, timed))


def judge_accuracy(res: Results) -> Judgement:
    """int() and .item() give identical forecasts: bitwise in eager, and int vs item under the same compile mode and
    setting. Equal within atol but not bitwise is the statement in part (accuracy unchanged, results not identical)."""
    eager = {r["variant"]: r for r in res.ok(mode="eager")}
    if "item" not in eager or "int" not in eager:
        return Judgement("error", "the eager item/int cases did not both run", basis="none")
    bitwise = eager["item"]["outputs"] == eager["int"]["outputs"]
    compiled = [r for r in res.rows if r["status"] == "ok" and r["mode"] != "eager"]
    pairs = []  # the fix against the original, case by case: int vs item under the same mode and setting
    for r in compiled:
        if r["variant"] == "int":
            twin = [i for i in res.ok(variant="item", mode=r["mode"]) if _setting(i) == _setting(r)]
            if twin:
                pairs.append((r, _max_abs(_outputs(r), _outputs(twin[0]))))
    deltas = [_max_abs(_outputs(eager["int"]), _outputs(eager["item"]))] + [d for _, d in pairs]
    worst = max(compiled, key=lambda r: max(r["max_abs_first"], r["max_abs_last"])) if compiled else None
    evidence = (f"eager int vs item bitwise equal: {bitwise}; compiled int vs item (same mode/setting) max |Δ| "
                f"{_fmt(max((d for _, d in pairs), default=None))} over {len(pairs)} pairs"
                + (f"; worst compiled vs its eager reference {max(worst['max_abs_first'], worst['max_abs_last']):.3g} "
                   f"({_label(worst)}), which compiling changes, not the fix" if worst else ""))
    if all(d == 0 for d in deltas) and bitwise:
        verdict = "confirmed"
    elif max(deltas) > res.atol:
        verdict = "refuted"
    else:
        verdict = "partly"
        evidence += f" — it holds in part: within atol {res.atol:g} (accuracy unchanged), but not identical"
    return Judgement(verdict, evidence, {"eager_bitwise": bitwise, "fix_vs_item": [d for _, d in pairs]},
                     run=_run(res, [eager["int"], eager["item"]] + [r for r, _ in pairs]))


def judge_tensor_position(res: Results) -> Judgement:
    """A tensor write position gives full CUDA graphs with no host sync in the decode step."""
    rows = _ro_rows(res, variant="tensor")
    if not rows:
        syncs = [r.get("scalar_reads") for r in res.ok(variant="tensor", mode="default")]
        return _no_graph_rows(res, f"tensor {_cpu_note(res, 'tensor')}; scalar reads per compiled step {syncs}",
                              variant="tensor")
    good = [_captured(res, r) == "full" and not r.get("stream_syncs") for r in rows]
    verdict = all_none_some(sum(good), len(good))
    details = "; ".join(f"{_setting(r)}: {_captured(res, r)}, "
                        f"{r.get('graph_launches')} graph / {r.get('kernel_launches')} kernel launches, "
                        f"{r.get('stream_syncs')} stream syncs, {r.get('scalar_reads')} scalar reads per step"
                        for r in rows)
    text = f"tensor position with reduce-overhead: {details}"
    if verdict == "partly":
        text += " — it holds in part: only with " + ", ".join(_setting(r) for r, g in zip(rows, good) if g)
    return Judgement(verdict, text, {"full": good}, run=_run(res, rows))


JUDGES = {
    "cuda_graphs.item_skips": judge_item_skips,
    "cuda_graphs.item_local_scalar_dense": judge_item_local_scalar_dense,
    "cuda_graphs.item_syncs": judge_item_syncs,
    "cuda_graphs.item_capture_scalar": judge_item_capture_scalar,
    "cuda_graphs.partition_non_gpu_ops": judge_partition_non_gpu_ops,
    "cuda_graphs.int_enables": judge_int_enables,
    "cuda_graphs.int_no_sync": judge_int_no_sync,
    "cuda_graphs.mutated_inputs_expected": judge_mutated_inputs,
    "cuda_graphs.speedup_2_5x": judge_speedup,
    "cuda_graphs.first_inference_60s": judge_first_inference,
    "cuda_graphs.memory_slightly_more": judge_memory,
    "cuda_graphs.consistent_latency": judge_consistent_latency,
    "cuda_graphs.accuracy_unchanged": judge_accuracy,
    "cuda_graphs.tensor_position": judge_tensor_position,
}


def judge(found: Any, res: Results) -> pd.DataFrame:
    """Compute and record every claim's verdict from the measured rows; a judge that breaks records `error`."""
    return found.judge_all(JUDGES, res)


def record_tables(found: Any, res: Results) -> list[str]:
    """Keep every table in results.json (rows without the raw output vectors)."""
    tables = {"stack": stack_table(res), "status": status_table(res), "cudagraphs": cudagraph_table(res),
              "graph_breaks": graph_break_table(res), "latency": latency_table(res),
              "eager_agreement": eager_agreement(res), "accuracy": accuracy_table(res), "logs": log_table(res),
              "mutation_probe": probe_table(res), "rounds": rounds_table(res)}
    for name, df in tables.items():
        found.table(name, df)
    return list(tables)


# --------------------------------------------------------------------------- cache semantics demo


def cache_semantics(cfg: Config, device: str = "cpu") -> pd.DataFrame:
    """Per variant (eager): positions written by one forecast, whether they are 0..calls-1, the overflow error.

    Runs a narrow one-layer copy of the model with the same cache length and forecast length: the cache's
    bookkeeping does not depend on the width, and the full-size model would take minutes on a small CPU.
    """
    cfg = replace(cfg, d_model=8, n_heads=1, n_layers=1, patch_len=4, batch=1)
    rows = []
    context = example_context(cfg, device)
    for variant in VARIANTS:
        model = build(cfg, variant, device)
        forecast(model, model, context, cfg.steps)
        written = (model.cache.k[0, 0, 0].abs().sum(-1) > 0).nonzero().flatten().tolist()
        idx = model.cache._current_idx.tolist()
        try:
            model.reset()
            patch = context[:, :1]
            with torch.no_grad():
                for i in range(cfg.max_seq + 1):
                    model(patch, i) if variant == "python" else model(patch)
            overflow = "no error"
        except CacheOverflow as exc:
            overflow = f"CacheOverflow: {exc}"
        rows.append({"variant": variant, "positions written": len(written),
                     "expected": cfg.calls, "contiguous from 0": written == list(range(cfg.calls)),
                     "_current_idx": idx if variant != "python" else "(position passed in)",
                     "overflow": overflow})
    return pd.DataFrame(rows)


catalog.register(catalog.Investigation(
    name=NAME,
    title="CUDA graphs with a KV cache: .item() vs int() vs a tensor position under torch.compile reduce-overhead",
    seeds=(SEED,),
    profiles={
        "quick": {},
        "full": {"d_model": 256, "n_layers": 6, "n_heads": 8, "patch_len": 32, "max_seq": 128, "batch": 4,
                 "context_patches": 32, "steps": 64, "min_run_time": 1.0, "graph_partition": [True, False]},
    },
    checks={
        "variants": catalog.one_of(*VARIANTS),
        "modes": catalog.one_of(*MODES),
        "capture_scalar_outputs": _bools,
        "graph_partition": _bools,
        "device": catalog.one_of("auto", "cpu", "cuda"),
        "isolation": catalog.one_of(*ISOLATION),
        "max_seq": catalog.positive_multiple_of(8),
        "workers": lambda v: None if v >= 1 else "must be at least 1",
        "rounds": lambda v: None if isinstance(v, int) and v >= 0 else "must be a whole number, 0 or more",
    },
    judges=JUDGES,
))
