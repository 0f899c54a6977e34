"""Timing with warm-up and device sync: first-call time apart, then median and spread of steady calls."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import statistics
import time
import timeit
from collections import defaultdict
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterator

import torch
from torch.utils import benchmark


# The runner points this at one lock file per GPU, shared by the notebooks on that GPU: measuring phases take it
# exclusively, so notebooks running side by side compile concurrently but never time beside each other.
DEVICE_LOCK_ENV = "YOLO26KIT_DEVICE_LOCK"
# CPU timings take the machine's CPU lock instead and, where the runner kept cores for them (MEASURING_CORES_ENV,
# e.g. "24-31"), move onto those cores while they hold it: every notebook runs on the other cores, so a CPU timing
# and a GPU timing can overlap without sharing a core.
CPU_LOCK_ENV = "YOLO26KIT_CPU_LOCK"
MEASURING_CORES_ENV = "YOLO26KIT_MEASURING_CORES"
# The cores kept for the timings of this notebook's GPU (e.g. "26,27"): a GPU timing's host thread launches kernels
# and waits on syncs, and on the notebooks' cores, beside a batch's compiles, it was preempted (a 2x ratio of two
# mask kernels measured 12-24x in some rounds).
DEVICE_CORES_ENV = "YOLO26KIT_DEVICE_CORES"
# A second GPU the plan lends this notebook (JSON: {"gpu": id, "lock": its lock file, "cores": its kept cores}): a
# step child that moves there (spare_gpu_env) times under that GPU's lock and on its cores, not beside this GPU's.
SPARE_GPU_ENV = "YOLO26KIT_SPARE_GPU"
# Every process of a notebook appends its phase intervals here (one JSON line each): the runner's time accounts.
PHASE_LOG_ENV = "YOLO26KIT_PHASE_LOG"
PHASES = ("compile", "measure", "lock_wait", "other")
_PHASE_SECONDS: defaultdict[str, float] = defaultdict(float)
# Seconds this process held a measuring lock with a readable load, and the core-seconds others were busy meanwhile.
_LOCKED_LOAD = {"seconds": 0.0, "others_core_seconds": 0.0}


def add_phase_seconds(phase: str, seconds: float) -> None:
    """Account `seconds` to a phase (compile / measure / lock_wait / other) of this process."""
    _PHASE_SECONDS[phase if phase in PHASES else "other"] += seconds


def phase_seconds() -> dict[str, float]:
    """Seconds this process (and the isolated steps it ran) spent per phase so far."""
    return {p: round(_PHASE_SECONDS[p], 3) for p in PHASES}


def log_interval(phase: str, t0: float, t1: float, **extra: Any) -> None:
    """Append a phase interval (epoch seconds) to the notebook's phase log; nothing outside a run."""
    path = os.environ.get(PHASE_LOG_ENV, "")
    if not path:
        return
    line = json.dumps({"phase": phase, "t0": round(t0, 3), "t1": round(t1, 3), "pid": os.getpid(), **extra})
    try:
        with open(path, "a") as f:  # one short line per write: appends of concurrent processes do not mix
            f.write(line + "\n")
    except OSError:
        pass


def parse_cores(text: str) -> list[int]:
    """"0-3,8" as [0, 1, 2, 3, 8]; '' as []."""
    cores: list[int] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        lo, _, hi = part.partition("-")
        cores += range(int(lo), int(hi or lo) + 1)
    return cores


def spare_gpu_env() -> dict[str, str]:
    """The environment a step child needs to run on this notebook's spare GPU (its id, lock and kept cores); {} when
    the plan lent none (or SPARE_GPU_ENV does not read)."""
    try:
        spare = json.loads(os.environ.get(SPARE_GPU_ENV, ""))
        gpu, lock, cores = spare.get("gpu"), spare.get("lock"), spare.get("cores") or ""
        parse_cores(cores)
    except (ValueError, TypeError, AttributeError):
        return {}
    if not (isinstance(gpu, str) and gpu and isinstance(lock, str) and lock):
        return {}
    return {"CUDA_VISIBLE_DEVICES": gpu, DEVICE_LOCK_ENV: lock, **({DEVICE_CORES_ENV: cores} if cores else {})}


_SHARING: list[int] = []  # the step counts of the `sharing_cores` blocks open now (in any thread)


@contextlib.contextmanager
def sharing_cores(steps: int) -> Iterator[None]:
    """Inside, this process runs up to `steps` isolated steps (isolate.run_step) at once; blocks open in several
    threads add up. Each untimed step gets torch.set_num_threads(cores // steps) unless OMP_NUM_THREADS is set (the
    runner sets it for notebooks side by side). Two steps of two threads each on two cores spin each other's OpenMP
    threads: a 7.6 s step took 61 s beside three 1 s ones."""
    steps = max(1, steps)
    _SHARING.append(steps)
    try:
        yield
    finally:
        _SHARING.remove(steps)


def shared_threads_env(phase: str) -> dict[str, str]:
    """The thread bound `sharing_cores` gives a step of `phase` ({} for a timed step or when nothing is shared)."""
    steps = sum(_SHARING)
    if steps <= 1 or phase == "measure" or os.environ.get("OMP_NUM_THREADS"):
        return {}
    return {"OMP_NUM_THREADS": str(max(1, len(os.sched_getaffinity(0)) // steps))}


def _threads_to(cores: list[int]) -> dict[int, set[int]]:
    """Move every thread of this process onto `cores`; returns each moved thread's previous cores."""
    before: dict[int, set[int]] = {}
    for tid in (int(t) for t in os.listdir("/proc/self/task")):
        try:
            before[tid] = os.sched_getaffinity(tid)
            os.sched_setaffinity(tid, cores)
        except OSError:  # a thread that ended meanwhile
            before.pop(tid, None)
    return before


def _threads_back(before: dict[int, set[int]]) -> None:
    for tid, cores in before.items():
        with contextlib.suppress(OSError):
            os.sched_setaffinity(tid, cores)


@contextlib.contextmanager
def _measuring_lock(path: str, cores: list[int] | None = None) -> Iterator[float]:
    """Hold the lock file at `path` (no lock when empty), on `cores` when given; yields the seconds waited.

    Time inside counts as `measure`, the wait as `lock_wait`; both go to the phase log with the lock's name.
    """
    name = os.path.splitext(os.path.basename(path))[0] if path else ""
    t0, w0 = time.perf_counter(), time.time()
    with contextlib.ExitStack() as stack:
        if path:
            f = stack.enter_context(open(path, "a"))
            fcntl.flock(f, fcntl.LOCK_EX)
            stack.callback(fcntl.flock, f, fcntl.LOCK_UN)
        t1, w1 = time.perf_counter(), time.time()
        add_phase_seconds("lock_wait", t1 - t0)
        if name and t1 - t0 > 0.01:
            log_interval("lock_wait", w0, w1, lock=name)
        moved = _threads_to(cores) if cores else {}
        extra: dict[str, Any] = {"cores": cores} if cores else {}
        try:
            with others_busy(cores or None) as load:
                yield t1 - t0
        finally:
            _threads_back(moved)
            held = time.perf_counter() - t1
            add_phase_seconds("measure", held)
            if load["others_busy_cores"] is not None:
                _LOCKED_LOAD["seconds"] += held
                _LOCKED_LOAD["others_core_seconds"] += load["others_busy_cores"] * held
            log_interval("measure", w1, time.time(), lock=name or "none", **extra, **load)


@contextlib.contextmanager
def device_lock() -> Iterator[float]:
    """Hold the measuring lock of this notebook's GPU (a no-op without one), on the cores kept for that GPU's timings
    when the runner kept some; yields the seconds spent waiting for it.

    Time inside counts as the `measure` phase.
    """
    with _measuring_lock(os.environ.get(DEVICE_LOCK_ENV, ""), parse_cores(os.environ.get(DEVICE_CORES_ENV, ""))) \
            as waited:
        yield waited


@contextlib.contextmanager
def cpu_lock() -> Iterator[float]:
    """Hold the machine's CPU measuring lock (else the device lock, as before the CPU had its own), on the cores kept
    for CPU timings; yields the seconds waited."""
    path = os.environ.get(CPU_LOCK_ENV, "") or os.environ.get(DEVICE_LOCK_ENV, "")
    with _measuring_lock(path, parse_cores(os.environ.get(MEASURING_CORES_ENV, ""))) as waited:
        yield waited


def measuring_lock(device: str | torch.device) -> contextlib.AbstractContextManager[float]:
    """The lock a timing on `device` holds: the GPU's for CUDA, the CPU's for CPU."""
    return device_lock() if torch.device(device).type == "cuda" else cpu_lock()


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
    with measuring_lock(device):
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


def _busy_cpu_seconds(cores: list[int] | None = None) -> float | None:
    """CPU seconds the whole machine (or only `cores`) has spent busy since boot (/proc/stat; None where there is
    none)."""
    wanted = {f"cpu{c}" for c in cores} if cores else {"cpu"}
    busy = 0.0
    try:
        with open("/proc/stat") as f:
            for line in f:
                name, *values = line.split()
                if name not in wanted:
                    continue
                fields = [int(v) for v in values]
                idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
                busy += (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")  # guest time is already inside user
    except (OSError, ValueError):
        return None
    return busy


def _own_cpu_seconds() -> float:
    usage = os.times()
    return usage.user + usage.system


@contextlib.contextmanager
def others_busy(cores: list[int] | None = None) -> Iterator[dict[str, float | None]]:
    """Measure how many CPU cores (of `cores`, default all) other processes kept busy, on average, while the block
    ran: the yielded dict gets `others_busy_cores` (None where the machine's CPU time cannot be read)."""
    out: dict[str, float | None] = {"others_busy_cores": None}
    busy0, own0, t0 = _busy_cpu_seconds(cores), _own_cpu_seconds(), time.perf_counter()
    try:
        yield out
    finally:
        busy1, wall = _busy_cpu_seconds(cores), time.perf_counter() - t0
        if busy0 is not None and busy1 is not None and wall > 0:
            others = (busy1 - busy0) - (_own_cpu_seconds() - own0)
            out["others_busy_cores"] = round(max(0.0, others) / wall, 2)


@contextlib.contextmanager
def others_busy_while_measuring() -> Iterator[dict[str, float | None]]:
    """Like others_busy, counted only while this process held a measuring lock inside the block, on that lock's
    cores: between timings, or while it waits for the lock, another process timing on those cores is no load on
    this one's timings (it was, counted around a whole loop of rounds). None when no lock was held with a load read.
    """
    out: dict[str, float | None] = {"others_busy_cores": None}
    seconds0, others0 = _LOCKED_LOAD["seconds"], _LOCKED_LOAD["others_core_seconds"]
    try:
        yield out
    finally:
        seconds = _LOCKED_LOAD["seconds"] - seconds0
        if seconds > 0:
            out["others_busy_cores"] = round((_LOCKED_LOAD["others_core_seconds"] - others0) / seconds, 2)


def round_ratios(numerator: list[float], denominator: list[float]) -> list[float]:
    """numerator/denominator round by round (per-round medians as measure_rounds gives them); a round where either
    is not positive is left out."""
    return [a / b for a, b in zip(numerator, denominator) if a > 0 and b > 0]
