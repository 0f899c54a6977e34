"""CUDA graphs: the steps (run_cases and mutation_probe run in child processes), the matrix of cases, the measured
Results, the helpers that read its rows (shared by the judges and the tables) and the cache-semantics demo."""

from __future__ import annotations

import os
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable

import pandas as pd
import torch
from torch import nn

from ...bench import isolate, timing
from ...errors import BadParameter
from ...paths import process_temp_dir
from .measure_evidence import (MESSAGE_CHARS, LogCapture, counter_snapshot, profile_call, profile_call_at,
                               trace_one_call)
from .measures import SPEEDUP_BAND, SPREAD_MAX_ROUNDS, compile_settings, max_abs_diff, spread
from .measures import rounds_in_turn
from .model import NAME, VARIANTS, CacheOverflow, Config, Forecaster, fresh_copy, build, example_context, forecast

SEED = "003_e3b92752bc4fc25c.txt"
MODES = ("default", "reduce-overhead")  # eager always runs as the reference
SKIPPED_ON_CPU = "needs CUDA: CUDA graphs (reduce-overhead) only exist on a CUDA device"


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
        "toto-ts": _installed("toto-ts"),
    }


def _installed(package: str) -> str | None:
    """The installed release of a package (None where it is absent)."""
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _profile_last_call(model: Forecaster, step: Callable, context: torch.Tensor, steps: int,
                       device: str) -> dict[str, int]:
    """Run a whole forecast and profile its last call (a steady-state decode step)."""
    found: dict[str, int] = {}
    hook = profile_call_at(model.cfg.calls - 1, found, device)
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
             light_cpu: bool = True, rounds: int = 0, decide_spread: bool = True) -> dict[str, Any]:
    """One (variant, mode, setting): eager reference, compile, time, profile, collect evidence; plain data back.

    Called through run_cases in a child process (see run_matrix for how cases are kept apart). The
    one-call trace runs before the timed compile, outside the log capture and with the counters cleared
    afterwards, so the counts describe the timed run alone. A reduce-overhead case with `rounds` > 0 is then
    timed in turn with the default compile of the same variant and settings (`rounds_against_default`): the timing
    verdicts read those rounds, never two cases timed apart (`decide_spread`: see rounds_against_default).
    """
    from torch._dynamo.utils import counters

    config = Config(**cfg)
    row: dict[str, Any] = {"variant": variant, "mode": mode, "capture_scalar_outputs": capture,
                           "graph_partition": partition, "device": device}
    model = build(config, variant, device)
    context = example_context(config, device)
    reference = forecast(model, model, context, config.steps)
    first_patch = fresh_copy(context[:, :1])
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
        "max_abs_first": max_abs_diff(outputs["first"], reference),
        "max_abs_last": max_abs_diff(outputs["last"], reference),
        "outputs": outputs["last"].float().cpu().flatten().tolist(),
        "reference": reference.float().cpu().flatten().tolist(),
    })
    if mode == "reduce-overhead" and rounds > 0 and capture and row.get("graph_launches"):
        # only capture-on cases that replay graphs are timed in turn: the timing verdicts read no other rows
        with compile_settings(capture, partition, compile_cache, scalar):
            row.update(_guarded("rounds", lambda: rounds_against_default(model, step, config, variant, context,
                                                                         device, rounds, warmup, decide_spread)))
    return row


SPREAD_CALLS = 40  # forecasts per callable and round, timed one by one in turn (p10 and p90 of 40)
MAX_ROUNDS = 15


def rounds_against_default(model: Forecaster, step: Callable, cfg: Config, variant: str, context: torch.Tensor,
                           device: str, rounds: int, warmup: int = 3, decide_spread: bool = True) -> dict[str, Any]:
    """Time whole forecasts with CUDA graphs (`step`, already warm) and with the default compile of a twin model
    (same weights, same settings) call by call in turn (measures.rounds_in_turn), at least `rounds` rounds and until
    both the speed-up and the spread ratio are decided (at most MAX_ROUNDS; without `decide_spread`, until the
    speed-up is: where Toto is timed it decides the spread claim, and these rounds are shown beside): per round each
    one's median, IQR and relative spread (ms).

    The twin compiles after every other collector of the case has read its counters and logs, so they describe
    the reduce-overhead compile alone. Load that changes during a round hits both alike: their calls alternate.
    """
    twin = build(cfg, variant, device)
    twin_step = torch.compile(twin, mode=None)
    fns = {"graphs": lambda: forecast(model, step, context, cfg.steps),
           "default": lambda: forecast(twin, twin_step, context, cfg.steps)}
    first_ms = timing.first_call_ms(fns["default"], device)
    for _ in range(warmup):
        fns["default"]()
    got = rounds_in_turn(fns, device, *SPEEDUP_BAND, calls=SPREAD_CALLS, min_rounds=rounds,
                        max_rounds=max(rounds, MAX_ROUNDS), decide_spread=decide_spread,
                        spread_max_rounds=SPREAD_MAX_ROUNDS)
    per_round = {name: [spread(calls) for calls in got["per_call_ms"][name]] for name in fns}
    # the single calls sit beside the per-round figures, where the spread judge reads them (judge._rounds)
    return {"rounds": {**{name: {"median_ms": [s["median_ms"] for s in spreads],
                                 "iqr_ms": [s["iqr_ms"] for s in spreads],
                                 "rel_spread": [s["rel_spread"] for s in spreads]} for name, spreads in per_round.items()},
                       "per_call_ms": got["per_call_ms"], "calls_per_round": SPREAD_CALLS},
            "twin_first_ms": first_ms}


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


def as_bools(value: Any) -> str | None:
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
    toto: list[dict[str, Any]] = field(default_factory=list)  # toto_measure.toto_case rows (CUDA), one per variant

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows)

    def ok(self, **where: Any) -> list[dict[str, Any]]:
        """Rows that ran to the end and match every key=value given."""
        return [r for r in self.rows if r.get("status") == "ok" and all(r.get(k) == v for k, v in where.items())]


def run_cases(cases: list[tuple[str, str, bool | None, bool | None]], cfg: dict[str, Any], device: str,
              warmup: int = 3, min_run_time: float = 0.3, compile_cache: bool = True,
              light_cpu: bool = True, rounds: int = 0, decide_spread: bool = True) -> list[dict[str, Any]]:
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
                                  light_cpu, rounds, decide_spread),
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


def run_group(group: list[Case], cfg: Config, device: str, case_timeout: float, **kwargs: Any) -> dict[int, dict]:
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
            out.update(run_group([c], cfg, device, case_timeout, **kwargs))
        return out
    return {id(group[0]): {"status": outcome.status, "error": outcome.error, "seconds": round(outcome.seconds, 2),
                           "log_tail": outcome.log[-2000:], "cases_in_child": 1}}


def run_matrix(variants: list[str], modes: list[str], capture_scalar_outputs: list[Any], graph_partition: list[Any],
               cfg: Config, device: str = "cpu", warmup: int = 3, min_run_time: float = 0.3, atol: float = 1e-4,
               compile_cache: bool = True, case_timeout: float = 300.0, isolation: str = "auto",
               light_cpu: bool = True, workers: int = 4, probe: bool = True, rounds: int = 5,
               toto: list[str] | None = None, toto_capture: list[Any] | None = None,
               toto_run: dict[str, Any] | None = None) -> Results:
    """Run every planned case in child processes; CUDA-only cases are skipped on CPU.

    isolation "case": a fresh child per case; "batch": one child runs all cases with torch._dynamo.reset()
    between them (one import, one warm compiler); "variant": one child per cache variant, eager first, then
    reduce-overhead (so its first call compiles in a cold process, as the seed's first inference did), then
    default; "auto": "variant" on CUDA, "batch" on CPU. Up to `workers` children run side by side (their
    steady-state timing is serialised by timing.measure's device lock). A child that dies or hangs is re-run
    one case per child, so a crash stays that case's row. light_cpu: see run_cases. `probe`: also run
    mutation_probe (a cache as a graph input), beside the cases. `rounds`: each reduce-overhead case is also timed
    in turn with the default compile of its variant this many times (rounds_against_default; 0: not at all).
    `toto`: on CUDA, these Toto cache variants also run at Toto's real size, per `toto_capture` setting
    (toto_measure.run_toto; `toto_run`: TotoRun's fields), each in its own child, started beside the matrix; their
    rounds wait until the matrix is done, unless the plan lent the notebook a spare GPU (timing.spare_gpu_env): then
    they run on that GPU and time at once, under its lock and on its cores.
    """
    cfg.check()
    on_cuda = torch.device(device).type == "cuda"
    if isolation not in ISOLATION:
        raise BadParameter(f"{NAME}: isolation={isolation!r}; choose from {list(ISOLATION)}")
    cases = plan(variants, modes, capture_scalar_outputs, graph_partition, graph_partition_supported())
    runnable = [c for c in cases if on_cuda or c.mode != "reduce-overhead"]
    groups = groups_of(runnable, isolation, on_cuda)
    done: dict[int, dict[str, Any]] = {}
    toto_cases = (toto or []) if on_cuda else []
    # where Toto is timed it decides the spread claim: the forecaster's rounds then stop once the speed-up is decided
    kwargs = {"warmup": warmup, "min_run_time": min_run_time, "compile_cache": compile_cache, "light_cpu": light_cpu,
              "rounds": rounds, "decide_spread": not toto_cases}
    # Toto starts first, beside the matrix: its compiles (a cold one among them) overlap the matrix's cases, and its
    # rounds wait for the matrix to be done (the gate file), so no compile of this notebook runs beside them; on a
    # spare GPU run_toto drops the gate (another GPU's lock and cores)
    gate = os.path.join(process_temp_dir("yolo26kit-cuda-graphs-"), "matrix-done")
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(groups) + probe) + bool(toto_cases))) as pool:
        toto_done = pool.submit(_toto_rows, toto_cases, [as_bool(c) for c in toto_capture or [True]],
                                toto_run or {}, device, on_cuda, gate)
        try:
            probed = pool.submit(run_mutation_probe, device, case_timeout) if probe else None
            for got in pool.map(lambda g: run_group(g, cfg, device, case_timeout, **kwargs), groups):
                done.update(got)
            probe_rows = probed.result().to_dict(orient="records") if probed else []
        finally:
            open(gate, "w").close()
        toto_rows = toto_done.result()
    rows = []
    for case in cases:
        base = {"variant": case.variant, "mode": case.mode, "capture_scalar_outputs": case.capture,
                "graph_partition": case.partition, "device": device}
        got = done.get(id(case), {"status": "skipped", "error": SKIPPED_ON_CPU, "seconds": 0.0})
        rows.append({**base, **got})
    return Results(rows, cfg, device, stack_info(), atol, probe_rows, toto_rows)


def _toto_rows(variants: list[str], captures: list[bool], run: dict[str, Any], device: str,
               on_cuda: bool, rounds_after: str = "") -> list[dict[str, Any]]:
    """Toto's rows on CUDA; none off CUDA (CUDA graphs need CUDA, and the full-size model is minutes on a CPU)."""
    if not variants or not on_cuda:
        return []
    from .toto import TotoRun
    from .toto_measure import run_toto

    return run_toto(variants, TotoRun(**run), device, captures, rounds_after=rounds_after)


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
    if torch.device(device).type != "cuda":
        return pd.DataFrame([{"cache": "buffer / argument", "status": "skipped", "error": SKIPPED_ON_CPU}])
    o = isolate.run_step(mutation_probe, device, timeout=timeout, step="mutation probe compile", phase="compile")
    if not o.ok:
        return pd.DataFrame([{"cache": "buffer / argument", "status": o.status, "error": o.error}])
    return pd.DataFrame([{**r, "status": "ok", "error": ""} for r in o.value])


# --------------------------------------------------------------------------- reading rows (judges and tables)


def case_setting(r: dict[str, Any]) -> str:
    """The compile settings a row ran with, as a short label (capture=on, partition=off ...)."""
    parts = []
    if r.get("capture_scalar_outputs") is not None:
        parts.append(f"capture={'on' if r['capture_scalar_outputs'] else 'off'}")
    if r.get("graph_partition") is not None:
        parts.append(f"partition={'on' if r['graph_partition'] else 'off'}")
    return " ".join(parts) or "-"


def case_label(r: dict[str, Any]) -> str:
    """A row's label: variant, mode and settings."""
    return f"{r['variant']} {r['mode']} {case_setting(r)}".replace(" -", "")


def launches_of_eager(res: Results, variant: str) -> int | None:
    """The kernel launches eager made for a variant (None without an eager row)."""
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


def row_outputs(row: dict[str, Any]) -> torch.Tensor:
    """A row's recorded outputs as a float64 tensor."""
    return torch.tensor(row["outputs"], dtype=torch.float64)


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
