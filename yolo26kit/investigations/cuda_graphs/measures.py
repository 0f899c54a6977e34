"""CUDA graphs: measures that can vary. Latency of individually timed calls (a CUDA event pair per call, perf_counter
on CPU), a first call with the compile caches off in a fresh cache directory, the memory a callable adds (CUDA
allocator deltas; process RSS on CPU), and speed/spread rounds of two callables timed call by call in turn until the
rounds rule (verdicts.band_decision) decides the speed-up against the seed's band and the spread ratio against 1."""

from __future__ import annotations

import contextlib
import math
import os
import time
from typing import Any, Callable, Iterator, Sequence

import torch

from ...bench import timing
from ...paths import process_temp_dir
from ...verdicts import MARGIN, band, band_decision, pooled_decision


# --------------------------------------------------------------------------- latency of single calls


def call_times_ms(fn: Callable[[], Any], device: str, calls: int) -> list[float]:
    """Time `calls` calls of fn one by one: a CUDA event pair around each on CUDA, perf_counter on CPU (ms)."""
    out = []
    if torch.device(device).type == "cuda":
        for _ in range(calls):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            out.append(start.elapsed_time(end))
        return out
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def _quantile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def spread(samples_ms: list[float]) -> dict[str, float]:
    """Median, p10, p90, the inter-quartile range and the relative spread (p90 - p10) / median of individually timed
    calls (nearest-rank quantiles)."""
    if not samples_ms:
        return {"calls": 0}
    p10, p25, p50, p75, p90 = (_quantile(samples_ms, q) for q in (0.1, 0.25, 0.5, 0.75, 0.9))
    return {"calls": len(samples_ms), "median_ms": p50, "p10_ms": p10, "p90_ms": p90, "iqr_ms": p75 - p25,
            "rel_spread": (p90 - p10) / p50 if p50 > 0 else math.nan}


# --------------------------------------------------------------------------- the first call, compiled cold


def compile_caches_off(stack: contextlib.ExitStack) -> None:
    """Turn Inductor's FX-graph cache and AOTAutograd's cache off until `stack` closes."""
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    stack.enter_context(inductor_config.patch(fx_graph_cache=False))
    if hasattr(functorch_config, "enable_autograd_cache"):
        stack.enter_context(functorch_config.patch(enable_autograd_cache=False))


@contextlib.contextmanager
def cold_compile_caches() -> Iterator[str]:
    """FX-graph and AOTAutograd caches off and a fresh, empty TORCHINDUCTOR_CACHE_DIR (Triton's cache inside it) for
    the duration; yields that directory. Inductor reads the directory from the environment when it compiles. The
    directory stays until this process exits: the kernels compiled into it stay loaded by the compiled model after
    the block."""
    saved = {k: os.environ.get(k) for k in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")}
    fresh = process_temp_dir("inductor-cold-")
    with contextlib.ExitStack() as stack:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = fresh
        os.environ["TRITON_CACHE_DIR"] = os.path.join(fresh, "triton")
        compile_caches_off(stack)
        try:
            yield fresh
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def first_call(fn: Callable[[], Any], device: str, cold: bool) -> dict[str, Any]:
    """Wall time of fn's first call (its compile included) in seconds, with the cache counters it moved; with `cold`
    the caches are off and the directory fresh. A figure with a cache hit does not count (`counts` False)."""
    from torch._dynamo.utils import counters

    before = {k: int(counters["inductor"].get(k, 0)) for k in ("fxgraph_cache_hit", "fxgraph_cache_miss")}
    with cold_compile_caches() if cold else contextlib.nullcontext() as cache_dir:
        seconds = timing.first_call_ms(fn, device) / 1e3
    moved = {k: int(counters["inductor"].get(k, 0)) - v for k, v in before.items()}
    hits = moved["fxgraph_cache_hit"]
    return {"first_s": seconds, "cold": cold, "cache_dir_fresh": bool(cache_dir), "fxgraph_cache_hits": hits,
            "fxgraph_cache_misses": moved["fxgraph_cache_miss"], "counts": cold and hits == 0}


# --------------------------------------------------------------------------- memory a callable adds


def _rss_bytes() -> int:
    """This process's resident set size (Linux /proc; 0 where it cannot be read)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def memory_added(fn: Callable[[], Any], device: str) -> tuple[Any, dict[str, int]]:
    """Run fn and return (its result, the bytes it added). CUDA: allocated, peak allocated and reserved above the
    start (a CUDA-graph pool counts as allocated and reserved); CPU: resident set size. The result stays alive
    until measured, as a compiled model keeps its graphs."""
    if torch.device(device).type != "cuda":
        start = _rss_bytes()
        result = fn()
        return result, {"allocated_added": _rss_bytes() - start, "source": "rss"}  # type: ignore[dict-item]
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    alloc, reserved = torch.cuda.memory_allocated(device), torch.cuda.memory_reserved(device)
    result = fn()
    torch.cuda.synchronize(device)
    return result, {"allocated_added": torch.cuda.memory_allocated(device) - alloc,
                    "peak_added": torch.cuda.max_memory_allocated(device) - alloc,
                    "reserved_added": torch.cuda.memory_reserved(device) - reserved,
                    "source": "cuda"}  # type: ignore[dict-item]


# --------------------------------------------------------------------------- rounds timed in turn


SPEEDUP_BAND = (2.0, 5.0)  # the ledger's band of cuda_graphs.speedup_2_5x; rounds stop once they decide it
SPREAD_MAX_ROUNDS = 25  # an undecided spread ratio gets this many rounds (the speed-up stops at MAX_ROUNDS)
# cuda_graphs.consistent_latency, "more consistent": default's relative spread over graphs' at least 1 + the rules'
# MARGIN (5 % steadier). With the edge at 1, a ratio of 0.95-1.05 (no steadier) stayed undecided where it answers
# "not more consistent": seven H200 batches pooled 0.82-0.94x, needed 5 to 25 rounds, and one ended undecided
SPREAD_BAND = (1.0 + MARGIN, math.inf)


def paired_rounds(per_call_ms: dict[str, list[list[float]]]) -> list[tuple[list[float], list[float]]]:
    """(graphs' calls, default's calls) per round, from rounds_in_turn's `per_call_ms`."""
    return list(zip(per_call_ms.get("graphs") or [], per_call_ms.get("default") or []))


CONSISTENCY_CLAIM = "cuda_graphs.consistent_latency"
# The two spreads a "more consistent" can mean; the claim's ledger entry (`spread.kind`, with its reason) picks one.
SPREADS: dict[str, Callable[[dict[str, float]], float]] = {
    "relative": lambda s: s["rel_spread"],
    "absolute": lambda s: s["p90_ms"] - s["p10_ms"],
}


def spread_kind() -> str:
    """Which spread the seed's "more consistent" means, from the claim's ledger entry: relative or absolute."""
    from ...findings import ledger_entry  # lazy: measures runs in step processes that never read the ledger

    kind = str((ledger_entry(CONSISTENCY_CLAIM).get("spread") or {}).get("kind") or "relative")
    if kind not in SPREADS:
        raise ValueError(f"{CONSISTENCY_CLAIM}: spread.kind {kind!r} is not one of {', '.join(SPREADS)}")
    return kind


def spread_of(samples_ms: list[float], kind: str = "") -> float:
    """The judged spread (spread_kind, or `kind`) of individually timed calls; nan without calls."""
    s = spread(samples_ms)
    return SPREADS[kind or spread_kind()](s) if s.get("calls") else math.nan


def pooled_spread_ratio(rounds: Sequence[tuple[list[float], list[float]]], kind: str = "") -> float:
    """Default's spread over graphs' (the ledger's spread_kind, or `kind`), each over every call of `rounds` pooled:
    above 1, CUDA graphs were steadier. Pooled because p10 and p90 of one round's 20 calls are its 3rd and 18th: one
    H200 batch's rounds read 0.79 to 1.25, so a median of rounds sat on the edge; pooled, eight batches read 0.70 to
    0.95."""
    kind = kind or spread_kind()
    g = spread_of([v for calls, _ in rounds for v in calls], kind)
    d = spread_of([v for _, calls in rounds for v in calls], kind)
    return d / g if g > 0 else math.inf


def spread_decision(per_call_ms: dict[str, list[list[float]]],
                    min_rounds: int = 1) -> tuple[str | None, dict[str, float]]:
    """The pooled spread ratio (the ledger's spread_kind) against SPREAD_BAND, resampling whole rounds
    (verdicts.pooled_decision)."""
    kind = spread_kind()
    return pooled_decision(paired_rounds(per_call_ms), lambda rounds: pooled_spread_ratio(rounds, kind), *SPREAD_BAND,
                           min_rounds=min_rounds)


def rounds_in_turn(fns: dict[str, Callable[[], Any]], device: str, lo: float, hi: float, calls: int = 20,
                   min_rounds: int = 5, max_rounds: int = 15,
                   decide_spread: bool = False, spread_max_rounds: int = 0) -> dict[str, Any]:
    """Time `graphs` and `default` call by call in turn, `calls` calls each per round, until the speed-up rounds
    (median default / median graphs) decide the band [lo, hi] by the rounds rule — and, with `decide_spread`, the pooled
    spread ratio decides SPREAD_BAND too (spread_decision) — or `max_rounds` is reached; an undecided spread goes on
    to `spread_max_rounds` when that is more (a spread of 20 calls per round moves more than a median).

    Per round also the spread ratio (default's relative spread / graphs'), shown beside the pooled one.
    """
    per_call: dict[str, list[list[float]]] = {name: [] for name in fns}
    speedups: list[float] = []
    spreads: list[float] = []

    def more() -> bool:
        speed_done = band_decision(speedups, lo, hi, min_rounds=min_rounds) is not None
        spread_done = not decide_spread or spread_decision(per_call, min_rounds)[0] is not None
        if speed_done and spread_done:
            return False
        return len(speedups) < (max_rounds if spread_done else max(max_rounds, spread_max_rounds))

    while more():
        got: dict[str, list[float]] = {name: [] for name in fns}
        with timing.device_lock():
            for _ in range(calls):
                for name, fn in fns.items():
                    got[name] += call_times_ms(fn, device, 1)
        for name, values in got.items():
            per_call[name].append(values)
        g, d = spread(got["graphs"]), spread(got["default"])
        spreads.append(d["rel_spread"] / g["rel_spread"] if g["rel_spread"] > 0 else math.inf)
        speedups.append(d["median_ms"] / g["median_ms"])
    return {"speedups": speedups, "spread_ratios": spreads, "calls_per_round": calls,
            "per_call_ms": per_call, "speed_verdict": band(speedups, lo, hi),
            "summary": {name: spread([v for r in rounds for v in r]) for name, rounds in per_call.items()}}


@contextlib.contextmanager
def compile_settings(capture: bool | None, partition: bool | None, compile_cache: bool = True,
                     scalar_cpu_kernels: bool = False) -> Iterator[None]:
    """Patch capture_scalar_outputs / graph_partition / the compile caches / CPU SIMD for the duration of one case."""
    import torch._dynamo.config as dynamo_config
    import torch._inductor.config as inductor_config

    with contextlib.ExitStack() as stack:
        if capture is not None:
            stack.enter_context(dynamo_config.patch(capture_scalar_outputs=capture))
        if partition is not None and hasattr(inductor_config, "graph_partition"):
            stack.enter_context(inductor_config.patch(graph_partition=partition))
        if not compile_cache:
            compile_caches_off(stack)
        if scalar_cpu_kernels:
            # scalar C++ kernels compile in about half the time of vectorized ones (CPU speed is no claim here)
            stack.enter_context(inductor_config.patch({"cpp.simdlen": 1}))
        yield


def max_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    """The largest absolute difference between two outputs (0 for empty ones)."""
    return float((a.float() - b.float()).abs().max()) if a.numel() else 0.0
