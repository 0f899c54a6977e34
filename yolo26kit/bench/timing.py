"""Timing with warm-up and device sync: first-call time apart, then median and spread of steady calls."""

from __future__ import annotations

import contextlib
import fcntl
import os
import statistics
import time
import timeit
from collections import defaultdict
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterator

import torch
from torch.utils import benchmark


# The runner points this at one lock file for all notebooks of a run: measuring phases take it exclusively,
# so notebooks running side by side compile concurrently but never time beside each other.
DEVICE_LOCK_ENV = "YOLO26KIT_DEVICE_LOCK"
PHASES = ("compile", "measure", "other")
_PHASE_SECONDS: defaultdict[str, float] = defaultdict(float)


def add_phase_seconds(phase: str, seconds: float) -> None:
    """Account `seconds` to a phase (compile / measure / other) of this process."""
    _PHASE_SECONDS[phase if phase in PHASES else "other"] += seconds


def phase_seconds() -> dict[str, float]:
    """Seconds this process (and the isolated steps it ran) spent per phase so far."""
    return {p: round(_PHASE_SECONDS[p], 3) for p in PHASES}


@contextlib.contextmanager
def device_lock() -> Iterator[float]:
    """Hold the run's device lock (a no-op without one); yields the seconds spent waiting for it.

    Time inside counts as the `measure` phase.
    """
    path = os.environ.get(DEVICE_LOCK_ENV, "")
    t0 = time.perf_counter()
    with contextlib.ExitStack() as stack:
        if path:
            f = stack.enter_context(open(path, "a"))
            fcntl.flock(f, fcntl.LOCK_EX)
            stack.callback(fcntl.flock, f, fcntl.LOCK_UN)
        t1 = time.perf_counter()
        try:
            yield t1 - t0
        finally:
            add_phase_seconds("measure", time.perf_counter() - t1)


@dataclass(frozen=True)
class Timing:
    """Steady-state timing of a callable in milliseconds (first call reported separately)."""

    label: str
    first_ms: float
    median_ms: float
    iqr_ms: float
    p10_ms: float
    p90_ms: float
    runs: int

    def row(self) -> dict[str, Any]:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def sync(device: str | torch.device) -> None:
    """Wait for queued work on a CUDA device; a no-op on CPU."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def first_call_ms(fn: Callable[[], Any], device: str | torch.device = "cpu") -> float:
    """Wall time of one call, synchronised: the compile/warm-up cost when it is the first call."""
    sync(device)
    t0 = time.perf_counter()
    fn()
    sync(device)
    return (time.perf_counter() - t0) * 1e3


def measure(fn: Callable[[], Any], label: str = "", device: str | torch.device = "cpu",
            warmup: int = 3, min_run_time: float = 0.5) -> Timing:
    """Time fn(): one timed first call, `warmup` untimed calls, then torch.utils.benchmark's blocked_autorange.

    torch.utils.benchmark synchronises CUDA itself and picks how many calls go in a block; the spread
    is reported as the inter-quartile range and the 10th/90th percentiles of the per-block times.
    """
    first = first_call_ms(fn, device)
    # On CPU a plain clock: the default timer asks torch.accelerator.is_available() on every call, which is
    # slow (~30 µs) in isolate's children and makes blocked_autorange choose one huge block.
    clock = {} if torch.device(device).type == "cuda" else {"timer": timeit.default_timer}
    timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, label=label, num_threads=torch.get_num_threads(), **clock)
    with device_lock():
        for _ in range(warmup):
            fn()
        sync(device)
        m = timer.blocked_autorange(min_run_time=min_run_time)
    times = sorted(m.times)
    q = lambda p: times[min(len(times) - 1, int(p * (len(times) - 1) + 0.5))] * 1e3  # noqa: E731
    return Timing(label, first, m.median * 1e3, m.iqr * 1e3, q(0.1), q(0.9), len(times))


@dataclass(frozen=True)
class RoundTiming(Timing):
    """A Timing over rounds: the median of the rounds' medians, the median IQR, the widest p10–p90."""

    round_medians_ms: tuple[float, ...] = ()


def measure_rounds(fns: dict[str, Callable[[], Any]], device: str | torch.device = "cpu", rounds: int = 5,
                   warmup: int = 3, min_run_time: float = 0.1) -> dict[str, RoundTiming]:
    """Time several callables in turn, `rounds` times (each round `measure`s every one), so that a change in the
    machine's load between rounds affects all of them alike; ratios can then be taken round by round."""
    per: dict[str, list[Timing]] = {name: [] for name in fns}
    for r in range(rounds):
        for name, fn in fns.items():
            per[name].append(measure(fn, name, device, warmup if r == 0 else 0, min_run_time))
    mid = statistics.median_high  # a measured value, never an average of two
    return {name: RoundTiming(name, ts[0].first_ms, mid([t.median_ms for t in ts]), mid([t.iqr_ms for t in ts]),
                              min(t.p10_ms for t in ts), max(t.p90_ms for t in ts), sum(t.runs for t in ts),
                              tuple(t.median_ms for t in ts))
            for name, ts in per.items() if ts}


# Above this many CPU cores kept busy by other processes on average, a CPU timing measures the sharing as much as
# the program (an idle machine's background stays near 0.1; a neighbour's compile takes one core or more).
OTHERS_BUSY_LIMIT = 0.5


def _busy_cpu_seconds() -> float | None:
    """CPU seconds the whole machine has spent busy since boot (/proc/stat; None where there is none)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")  # guest time is already inside user


def _own_cpu_seconds() -> float:
    usage = os.times()
    return usage.user + usage.system


@contextlib.contextmanager
def others_busy() -> Iterator[dict[str, float | None]]:
    """Measure how many CPU cores other processes kept busy, on average, while the block ran: the yielded dict gets
    `others_busy_cores` (None where the machine's CPU time cannot be read)."""
    out: dict[str, float | None] = {"others_busy_cores": None}
    busy0, own0, t0 = _busy_cpu_seconds(), _own_cpu_seconds(), time.perf_counter()
    try:
        yield out
    finally:
        busy1, wall = _busy_cpu_seconds(), time.perf_counter() - t0
        if busy0 is not None and busy1 is not None and wall > 0:
            others = (busy1 - busy0) - (_own_cpu_seconds() - own0)
            out["others_busy_cores"] = round(max(0.0, others) / wall, 2)


def round_ratios(numerator: list[float], denominator: list[float]) -> list[float]:
    """numerator/denominator round by round (per-round medians as measure_rounds gives them); a round where either
    is not positive is left out."""
    return [a / b for a, b in zip(numerator, denominator) if a > 0 and b > 0]
