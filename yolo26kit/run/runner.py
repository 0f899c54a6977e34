"""Batch execution of investigation notebooks with papermill into a run directory: concurrent notebooks, a
compile cache the kit owns, run.json kept current so a stopped run can be resumed in place.

Decisions:

- Concurrency (`jobs`): on CUDA every notebook of the batch runs at once by default. Their compile phases
  overlap (the GPU runner has 16 cores, compiles dominate there) while every measuring phase takes its GPU's
  measuring lock (`timing.device_lock`), so no two notebooks ever time side by side on one GPU. On CPU the
  default is one notebook at a time: on a 2-core machine a neighbour's compile would slow the measured code itself.
  Each notebook child gets TORCHINDUCTOR_COMPILE_THREADS = cores // jobs (at least 1) unless already set.
- GPUs: a CUDA batch uses every visible GPU (`gpus` to choose): the plan (run/plan.py, in run.json) puts each
  notebook on one, pinned with CUDA_VISIBLE_DEVICES, with one measuring lock per GPU (and a second, spare GPU for
  part of the measuring of a notebook that declares a share of it movable). CPU timings take the machine's CPU
  lock and, on a large machine, cores kept for them (timing.cpu_lock). Executors (run/executors.py): `local`
  threads or Ray tasks, with the same run folder and run.json.
- Accounts: every process of a notebook logs its phase intervals (timing.PHASE_LOG_ENV); each notebook's
  `accounts` (start-up as spawn, kernel start and imports; lock wait, compile, measure, crash forensics, step
  start-up, step-slot waits, other steps, rest: run/timeline.py) add up to its seconds, and each call records the
  critical path (the notebook that ended it), the lower bound (the longest time one measuring lock was held) and
  how busy the cores were (run/core_load.py: slot-bound or core-bound).
- The compile cache (Inductor's FX-graph/AOTAutograd caches, Triton's, and the kit's AOTI packages under
  `$YOLO26KIT_CACHE/aoti`) lives outside the repository, by default `$XDG_CACHE_HOME/yolo26kit` or
  `~/.cache/yolo26kit`. `run.json` says whether it was `cold` (empty at the start), `warm` or `off`
  (`--no-cache`: a fresh temporary folder deleted at the end, and Inductor's caches disabled).
- run.json is written when the run starts (every notebook `pending`, with its parameters) and after every
  notebook, atomically, so a run whose parent was killed still says what finished. SIGINT/SIGTERM stop the
  whole tree (isolate.terminate_all), keep what finished, and leave `state: interrupted`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from ..bench import isolate, vec_isa
from .. import catalog, env, findings
from . import accounts, core_load, executors, plan as batch_plan, timeline
from .notebook import (DEFAULT_TIMEOUT, FINISHED, PHASE_LOGS, NotebookRun, cache_report, mark_stopping, notebook_tag,
                       sweep, time_split)
from ..catalog import Investigation
from ..errors import KitError
from ..paths import CACHE_ENV, DEFAULT_OUT, MATRIX_ENVS, default_cache_dir, new_run_dir

STOP_GRACE = 3.0  # seconds between SIGTERM and SIGKILL when a run is stopped
EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}
# A run stopped at its --stop-after deadline: EX_TEMPFAIL ("try again": `run --resume`). Not 124 (timeout(1)'s),
# which time-limited runners use for a command that they killed themselves.
EXIT_DEADLINE = 75
STOP_MARGIN = 30.0  # at most this many seconds of a --stop-after budget are kept for stopping and the pages


class ResumeRefused(KitError):
    """A run directory that cannot be resumed (not a run, already complete, or another environment)."""


@dataclass
class CompileCache:
    """The compile cache a run's children use: its root folder and whether it was cold, warm or off."""

    root: Path
    state: str  # cold | warm | off
    temporary: bool = False

    def child_env(self) -> dict[str, str]:
        """Environment variables that point every compiler cache of a child at this root."""
        values = {CACHE_ENV: str(self.root), "TORCHINDUCTOR_CACHE_DIR": str(self.root / "inductor"),
                  "TRITON_CACHE_DIR": str(self.root / "triton")}
        if self.state == "off":
            values["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] = "1"
        return values

    def close(self) -> None:
        """Delete a temporary (--no-cache) root."""
        if self.temporary:
            shutil.rmtree(self.root, ignore_errors=True)


def holds_compile(path: Path) -> bool:
    """Whether a file of a compile cache is compiled work: locks, half-written files and the CPU ISA pick (which the
    runner's own step server may record before the cache is opened) are not."""
    return not path.name.endswith((".lock", ".tmp")) and path.name != vec_isa.FILE


def open_cache(path: str | Path | None = None, enabled: bool = True) -> CompileCache:
    """The compile cache for a run: `path` (default: default_cache_dir()) or, disabled, a fresh temporary one."""
    if not enabled:
        return CompileCache(Path(tempfile.mkdtemp(prefix="yolo26kit-nocache-")), "off", temporary=True)
    root = Path(path).expanduser().resolve() if path else default_cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    # the matrix's environments are skipped, not walked: thousands of package files that hold no compiled work
    tops = [p for p in root.iterdir() if p.name != MATRIX_ENVS]
    found = (f for top in tops for f in ([top] if top.is_file() else top.rglob("*")))
    warm = any(f.is_file() and holds_compile(f) for f in found)
    return CompileCache(root, "warm" if warm else "cold")


def default_jobs(device_type: str, notebooks: int) -> int:
    """All notebooks at once on CUDA (compiles overlap, measuring is serialised by the device lock); 1 on CPU."""
    return max(1, notebooks) if device_type == "cuda" else 1


def compile_threads(jobs: int, cores: int | None = None) -> int:
    """Inductor compile threads per notebook child: the machine's cores shared among concurrent notebooks."""
    return max(1, (cores or os.cpu_count() or 1) // max(1, jobs))


def child_env(cache: CompileCache, run_dir: Path, jobs: int,
              cores: tuple[list[int], list[int]] | None = None, slots: int = 0) -> dict[str, str]:
    """The environment every notebook child of a run gets: caches, the measuring locks, compile threads, traces;
    with `cores` (measuring, notebook), CPU timings on the first and the notebooks on the second; `slots` steps at
    once across the run's notebooks (0: step_slots())."""
    from ..bench import timing  # lazy: imports torch

    values = {**cache.child_env(), timing.DEVICE_LOCK_ENV: str(cache.root / "device.lock"),
              timing.CPU_LOCK_ENV: str(cache.root / "cpu.lock"), isolate.FORENSICS_DIR_ENV: str(run_dir)}
    if cores and cores[0]:  # cores kept for CPU timings; the notebooks on the others
        values[timing.MEASURING_CORES_ENV] = ",".join(map(str, cores[0]))
        values[isolate.CORES_ENV] = ",".join(map(str, cores[1]))
    if "TORCHINDUCTOR_COMPILE_THREADS" not in os.environ:
        values["TORCHINDUCTOR_COMPILE_THREADS"] = str(compile_threads(jobs))
    if jobs > 1:  # notebooks side by side: bound the isolated steps of the whole run, and their threads
        slots = slots or step_slots()
        values[isolate.SLOTS_ENV] = f"{cache.root / 'slots'}:{slots}"
        values.setdefault("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS") or str(compile_threads(slots)))
    return values


def step_slots(cores: int | None = None) -> int:
    """Isolated steps that may run at once across a run's concurrent notebooks: half the cores, at least 2.

    Measured on a 16-core GPU runner: with every notebook's steps unbounded (30+ processes of 16 threads each)
    even a 3 s eager YOLO26 call took 100 s.
    """
    return max(2, (cores or os.cpu_count() or 2) // 2)


class _Stop:
    """The first SIGINT/SIGTERM of a batch, or its --stop-after deadline: a flag the batch loop polls (signal
    handlers only set it)."""

    def __init__(self, stop_after: float | None = None) -> None:
        self.signum = 0
        self.stop_after = stop_after
        self.at_deadline = False
        self.event = threading.Event()

    def __call__(self, signum: int, frame: Any) -> None:
        if not self.event.is_set():
            self.signum = signum
        self.event.set()

    def deadline(self) -> None:
        if not self.event.is_set():
            self.at_deadline = True
        self.event.set()

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum else ""

    @property
    def reason(self) -> str:
        """run.json's `reason` of a stopped run: `signal` or `stopped_at_deadline` ('' while not stopped)."""
        return "stopped_at_deadline" if self.at_deadline else "signal" if self.signum else ""

    @property
    def cause(self) -> str:
        """The words for a notebook this stop ended."""
        if self.at_deadline:
            return f"stopped at the deadline (--stop-after {self.stop_after:g} s)"
        return f"interrupted by {self.name}"


@dataclass
class Batch:
    """A run directory and its run.json: the plan, each notebook's state, and the invocations that worked on it."""

    run_dir: Path
    meta: dict[str, Any]
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def path(self) -> Path:
        return self.run_dir / "run.json"

    def entry(self, name: str) -> dict[str, Any]:
        return next(n for n in self.meta["notebooks"] if n["name"] == name)

    def update(self, name: str = "", **values: Any) -> None:
        """Change a notebook's entry (or the run's, without a name) and rewrite run.json at once."""
        with self.lock:
            (self.entry(name) if name else self.meta).update(values)
            self.meta["seconds"] = round(sum(n.get("seconds") or 0 for n in self.meta["notebooks"]), 2)
            findings.write_json(self.path, self.meta)

    def unfinished(self) -> list[str]:
        return [n["name"] for n in self.meta["notebooks"] if n["state"] not in FINISHED]


@dataclass
class RunResult:
    """What a `run`/`resume` call did: the run folder, its notebooks, final state and the stopping signal."""

    run_dir: Path
    runs: list[NotebookRun]
    state: str
    signum: int = 0
    index: Path | None = None
    reason: str = ""  # why an interrupted run stopped: signal | stopped_at_deadline | kernel_not_started

    @property
    def exit_code(self) -> int:
        """130 (SIGINT) / 143 (SIGTERM) when stopped, 75 at the --stop-after deadline, 1 when a notebook failed
        (or its kernel did not start), else 0."""
        if self.signum:
            return EXIT_CODES.get(signal.Signals(self.signum), 128 + self.signum)
        if self.reason == "stopped_at_deadline":
            return EXIT_DEADLINE
        return 0 if all(r.ok for r in self.runs) else 1


def _entry(inv: Investigation, params: dict[str, Any]) -> dict[str, Any]:
    return {"name": inv.name, "state": "pending", "ok": False, "seconds": 0.0, "error": "",
            "parameters": findings.jsonable(params)}


def run(plan: list[tuple[Investigation, dict[str, Any]]], out: Path = DEFAULT_OUT,
        timeout: float = DEFAULT_TIMEOUT, log_output: bool = False, *, jobs: int = 0,
        cache: str | Path | None = None, use_cache: bool = True, render: bool = True,
        t0: float | None = None, stop_after: float | None = None, gpus: list[str] | None = None,
        executor: str = "local", step_slots: int = 0, profile: str = "",
        overrides: dict[str, Any] | None = None) -> RunResult:
    """Execute a validated plan into a new run directory (`jobs` 0: default_jobs); SIGINT/SIGTERM stop it cleanly.

    `profile` and `overrides` (the -p values) are what the plan was resolved from: run.json records them, and the
    pages show them from there.

    `gpus`: the GPU ids a CUDA batch spreads its notebooks over (None: every visible one; given on a CPU machine,
    they are placed as if they were GPUs). `executor`: local or ray (run/executors.py). `step_slots`: isolated
    steps at once across the batch's notebooks (0: runner.step_slots).

    `t0` (a time.perf_counter() value) is when the call began, for wall_seconds and `stop_after`; default: now.
    `stop_after` (seconds): the call ends by then (see stop_margin); what did not finish is left for resume().
    """
    t0 = time.perf_counter() if t0 is None else t0
    fingerprint = env.fingerprint()
    run_id, run_dir = new_run_dir(Path(out), fingerprint["device_type"])
    run_dir = run_dir.resolve()
    meta = {"run_id": run_id, "environment": fingerprint, "state": "running",
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"), "wall_seconds": 0.0,
            "compile_cache": "", "timeout": timeout, "log_output": log_output, "profile": profile,
            "overrides": findings.jsonable(overrides or {}),
            "notebooks": [_entry(inv, params) for inv, params in plan], "seconds": 0.0, "invocations": []}
    return _drive(Batch(run_dir, meta), [inv.name for inv, _ in plan], t0, jobs, cache, use_cache, render, stop_after,
                  Placing(gpus, executor, step_slots))


def load(run_dir: str | Path) -> Batch:
    """The Batch of an existing run directory (its run.json)."""
    run_dir = Path(run_dir).resolve()
    try:
        meta = json.loads((run_dir / "run.json").read_text())
        meta["notebooks"]
    except (OSError, ValueError, KeyError) as exc:
        raise ResumeRefused(f"{run_dir} is not a run directory with a readable run.json ({type(exc).__name__})") from None
    for n in meta["notebooks"]:  # run.json of runs made before resume existed
        n.setdefault("state", "done" if n.get("ok") else "failed")
        n.setdefault("parameters", None)
    return Batch(run_dir, meta)


def environment_differences(recorded: dict[str, Any], current: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Fingerprint keys whose values differ between a run and this process: {key: (run's, now)}."""
    return {k: (recorded.get(k), current.get(k)) for k in sorted(set(recorded) | set(current))
            if recorded.get(k) != current.get(k)}


def resume(run_dir: str | Path, *, jobs: int = 0, cache: str | Path | None = None, use_cache: bool = True,
           render: bool = True, t0: float | None = None, stop_after: float | None = None,
           gpus: list[str] | None = None, executor: str = "local", step_slots: int = 0) -> RunResult:
    """Run, into the same folder, only the notebooks of a run that did not finish, with their recorded parameters.

    Refused (ResumeRefused) when the run is complete, lacks recorded parameters, or this environment's
    fingerprint differs from the run's.
    """
    t0 = time.perf_counter() if t0 is None else t0
    batch = load(run_dir)
    names = batch.unfinished()
    if not names:
        raise ResumeRefused(f"{batch.run_dir.name} is complete: every notebook finished; nothing to resume")
    differ = environment_differences(batch.meta.get("environment") or {}, env.fingerprint())
    if differ:
        said = "; ".join(f"{k}: {a!r} (run) vs {b!r} (now)" for k, (a, b) in differ.items())
        raise ResumeRefused(f"the environment differs from the run's ({said}); start a new run instead")
    if any(batch.entry(n).get("parameters") is None for n in names):
        raise ResumeRefused(f"{batch.run_dir.name}: run.json has no recorded parameters; start a new run instead")
    for name in names:
        catalog.get(name)  # an investigation that no longer exists is bad input, before anything is written
    return _drive(batch, names, t0, jobs, cache, use_cache, render, stop_after, Placing(gpus, executor, step_slots))


def stop_margin(stop_after: float) -> float:
    """Seconds before a --stop-after deadline at which running notebooks are stopped: a quarter of the budget,
    at most STOP_MARGIN (stopping takes up to STOP_GRACE + 2 s; run.json and the pages then take a few seconds)."""
    return min(STOP_MARGIN, stop_after / 4)


@dataclass
class Placing:
    """Where a call's notebooks run: the GPUs asked for (None: every visible one on CUDA), the executor and the
    isolated steps that may run at once (0: step_slots())."""

    gpus: list[str] | None = None
    executor: str = "local"
    step_slots: int = 0


def make_plan(batch: Batch, names: list[str], jobs: int, placing: Placing) -> batch_plan.Plan:
    """This call's plan: GPUs (on CUDA, or given), longest first from the last run of this device type beside it."""
    device_type = batch.meta["environment"].get("device_type", "cpu")
    gpus = placing.gpus if placing.gpus is not None else (batch_plan.visible_gpus() if device_type == "cuda" else [])
    if gpus:
        device_type = "cuda"  # GPUs given on a CPU machine (Ray's fake GPUs in tests) are placed all the same
    from_run, times = batch_plan.last_times(batch.run_dir.parent, device_type, names, exclude=batch.run_dir)
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    shares = {n: catalog.get(n).spare_gpu_share for n in names}
    return batch_plan.make_plan(names, gpus, jobs, cores, device_type, times, from_run, shares)


def _drive(batch: Batch, names: list[str], t0: float, jobs: int, cache_path: str | Path | None, use_cache: bool,
           render: bool, stop_after: float | None = None, placing: Placing | None = None) -> RunResult:
    """Run `names` of the batch concurrently, stop cleanly on SIGINT/SIGTERM or at the --stop-after deadline,
    write run.json and the pages."""
    stop = _Stop(stop_after)
    previous = _install(stop)
    try:
        return _drive_caught(batch, names, t0, jobs, cache_path, use_cache, render, stop, placing or Placing())
    finally:
        _restore(previous)


def _drive_caught(batch: Batch, names: list[str], t0: float, jobs: int, cache_path: str | Path | None,
                  use_cache: bool, render: bool, stop: _Stop, placing: Placing) -> RunResult:
    meta = batch.meta
    deadline = None
    if stop.stop_after:  # on perf_counter's clock, like t0
        deadline = t0 + stop.stop_after - stop_margin(stop.stop_after)
    jobs = jobs or default_jobs(meta["environment"].get("device_type", "cpu"), len(names))
    planned = make_plan(batch, names, jobs, placing)
    engine = executors.make(placing.executor, jobs, planned.gpus, log=lambda s: print(s, file=sys.stderr, flush=True))
    cache = open_cache(cache_path, use_cache)
    slots = placing.step_slots or step_slots()  # resolved once: recorded, and passed to every child
    started_at = time.time()
    invocation: dict[str, Any] = {"started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                                  "notebooks": names, "jobs": jobs, "compile_cache": cache.state,
                                  "executor": engine.describe(), "plan": planned.to_json(),
                                  "pid": os.getpid(), "state": "running",
                                  "step_slots": slots if jobs > 1 else None,
                                  **({"stop_after": stop.stop_after} if stop.stop_after else {})}
    meta["invocations"].append(invocation)
    meta["compile_cache"] = meta.get("compile_cache") or cache.state  # a resume keeps the first call's state
    for name in names:
        batch.entry(name).update(state="pending", ok=False, error="", seconds=0.0)
    meta.pop("reason", None)
    meta["plan"] = planned.to_json()
    batch.update(state="running")
    cores = (planned.measuring_cores, planned.notebook_cores) if planned.measuring_cores else None
    sampled = planned.notebook_cores if planned.measuring_cores else None  # the cores the steps may use
    sampler = core_load.CoreSampler(core_load.busy_seconds_of(sampled))
    try:
        with sampler:
            runs = _execute_all(batch, planned, engine, child_env(cache, batch.run_dir, jobs, cores, slots),
                                stop, deadline, cache.root)
    finally:
        engine.close()
        cache.close()
        # Notes shared by concurrent notebooks while they ran; every trace file keeps what they held.
        shutil.rmtree(batch.run_dir / isolate.CRASH_SITES, ignore_errors=True)
        shutil.rmtree(batch.run_dir / isolate.CACHE_COUNTS, ignore_errors=True)
        shutil.rmtree(batch.run_dir / PHASE_LOGS, ignore_errors=True)

    signum = stop.signum  # a signal during the pages below comes too late to stop anything
    state = "complete" if not signum and not batch.unfinished() else "interrupted"
    reason = "" if state == "complete" else stop.reason or "kernel_not_started"  # else: a kernel never started, twice

    invocation.update(batch_times(batch, runs, started_at, sampler.samples, sampled))
    meta.update({k: invocation[k] for k in ("critical_path", "measuring_locks", "lower_bound_s",
                                            "measuring_lock_spans", "cores_busy")})

    def finish() -> None:
        invocation.update(state=state, wall_seconds=round(time.perf_counter() - t0, 2))
        extra = {"reason": reason} if reason else {}
        invocation.update(extra)
        if signum:
            invocation["signal"] = signal.Signals(signum).name
        batch.update(state=state, wall_seconds=round(sum(i.get("wall_seconds", 0) for i in meta["invocations"]), 2),
                     **extra)

    finish()  # run.json first: the run page reads it
    index = _render(batch) if render else None
    finish()  # again, so wall_seconds covers the whole call, pages included
    return RunResult(batch.run_dir, runs, state, signum, index, reason)


def _install(stop: _Stop) -> dict[int, Any]:
    """Route SIGINT/SIGTERM to `stop` (main thread only; elsewhere signals keep their handlers)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}


def _restore(previous: dict[int, Any]) -> None:
    for s, handler in previous.items():
        signal.signal(s, handler)


_RENDER_LOCK = threading.Lock()  # nbconvert renders one notebook at a time


def batch_times(batch: Batch, runs: list[NotebookRun], started_at: float,
                core_samples: list[tuple[float, float, float]] | None = None,
                sampled_cores: list[int] | None = None) -> dict[str, Any]:
    """A call's critical path (the notebook that ended it), the seconds each measuring lock was held, the lower
    bound they give (the longest of them: no plan ends the batch sooner), when each lock was first taken, last
    let go and free in between (timeline.lock_spans), and how busy the cores were (core_load.summary)."""
    mine = {r.name for r in runs}
    spans = {r.name: [{"phase": "measure", "lock": lock, "t0": a, "t1": b} for lock, a, b in r.lock_spans] for r in runs}
    held = timeline.lock_seconds(spans)
    return {"critical_path": timeline.critical_path([n for n in batch.meta["notebooks"] if n["name"] in mine],
                                                    started_at),
            "measuring_locks": held, "lower_bound_s": max(held.values(), default=0.0),
            "measuring_lock_spans": timeline.lock_spans(spans, started_at),
            "cores_busy": core_load.summary(core_samples or [], slot_waits(runs), started_at,
                                            len(sampled_cores) if sampled_cores else os.cpu_count() or 0,
                                            "notebook" if sampled_cores else "all")}


def slot_waits(runs: list[NotebookRun]) -> list[tuple[float, float]]:
    """Every (t0, t1) a step of these notebooks waited for a step slot, on time.time()'s clock."""
    return [(r.started_at + s["start_s"], r.started_at + s["start_s"] + s["seconds"])
            for r in runs for s in r.steps if s.get("phase") == "step_wait"]


def notebook_task(batch: Batch, placement: batch_plan.Placement, child: dict[str, str], lock_dir: Path,
                  planned: batch_plan.Plan, progress: bool) -> executors.NotebookTask:
    """What the executor needs to run one notebook of the batch where the plan puts it."""
    meta, entry = batch.meta, batch.entry(placement.name)
    per_gpu = max((planned.per_gpu(g) for g in planned.gpus), default=1)
    return executors.NotebookTask(
        placement.name, str(catalog.get(placement.name).notebook), entry["parameters"], str(batch.run_dir),
        meta["run_id"], notebook_tag(meta["run_id"], placement.name), meta.get("timeout", DEFAULT_TIMEOUT),
        meta.get("log_output", False), progress, {**child, isolate.SLOT_RANK_ENV: str(planned.order.index(placement.name))},
        placement.gpu, placement.cpus, round(1 / per_gpu, 4),
        lock_dir=str(lock_dir), gpu_cores={g: ",".join(map(str, c)) for g, c in planned.gpu_cores.items()},
        spare_gpu=placement.spare_gpu, preload=catalog.get(placement.name).preload)


def _execute_all(batch: Batch, planned: batch_plan.Plan, engine: Any, child: dict[str, str], stop: _Stop,
                 deadline: float | None = None, lock_dir: Path | None = None) -> list[NotebookRun]:
    """Run the notebooks of the plan on the executor (longest first); on a stop signal, or at `deadline`
    (perf_counter), end every step tree and mark what did not finish."""
    meta = batch.meta
    names = planned.order
    jobs = engine.threads(len(names))
    cache_state = meta["invocations"][-1]["compile_cache"] if meta.get("invocations") else ""
    total = len(names)
    done_count = [0]
    # here, not in the threads: discovery imports modules
    tasks = {p.name: notebook_task(batch, p, child, lock_dir or batch.run_dir, planned, jobs == 1)
             for p in planned.placements}

    def work(name: str) -> NotebookRun | None:
        if stop.event.is_set():
            return None
        entry = batch.entry(name)
        task = tasks[name]
        batch.update(name, state="running", gpu=task.gpu)
        where = f" on GPU {task.gpu}" if task.gpu is not None else ""
        print(f"[start] {name}{where} {entry['parameters']}", file=sys.stderr, flush=True)
        try:
            result = engine.execute(task, stop.event.is_set)
        except executors.StoppedTask:
            return NotebookRun(name, False, 0.0, batch.run_dir / f"{name}.ipynb", batch.run_dir / f"{name}.results.json",
                               "interrupted", "interrupted")
        batch.update(name, gpu=result.gpu, **({"node": result.node} if result.node else {}))
        if result.retries:
            batch.update(name, retries=result.retries)
        if result.reused:
            batch.update(name, reused_steps=len(result.reused),
                         reused_step_seconds=round(sum(r.get("seconds", 0) for r in result.reused), 1))
        if result.state == "interrupted":
            return result
        if result.state == "not_started":
            batch.update(name, state="not_started", ok=False, seconds=round(result.seconds, 2), error=result.error)
            print(f"[{name}] left for --resume: {result.error}", file=sys.stderr, flush=True)
            return result
        batch.update(name, state=result.state, ok=result.ok, seconds=round(result.seconds, 2), error=result.error,
                     time_split=time_split(result.results), cache=cache_report(batch.run_dir, name, result.results,
                                                                               cache_state),
                     accounts=result.accounts, measuring=result.measuring, last_phase=result.last_phase,
                     steps=result.steps, ended_at=round(result.ended_at, 3))
        done_count[0] += 1
        said = "ok" if result.ok else f"FAILED ({result.error})"
        print(f"[{done_count[0]}/{total}] {name}: {said} in {result.seconds:.1f} s", file=sys.stderr, flush=True)
        if result.notebook.exists():
            _render_notebook(result.notebook)
        return result

    isolate.allow_steps()
    futures = _start_workers(work, names, jobs)
    left = set(futures)
    while left and not stop.event.is_set():
        _, left = wait(left, timeout=0.25, return_when=FIRST_COMPLETED)
        if left and deadline is not None and time.perf_counter() >= deadline:
            stop.deadline()
    for future in futures:
        future.cancel()  # those not started yet
    if stop.event.is_set():
        mark_stopping(batch.run_dir, names)
        # A step that starts after stop_all ends at once (isolate), so a worker still starting one needs no wait.
        deadline = time.monotonic() + STOP_GRACE + 2
        while True:  # a notebook may start between two sweeps: sweep until every worker has returned
            isolate.stop_all(grace=STOP_GRACE)
            _, left = wait(left, timeout=1.0)
            if not left or time.monotonic() > deadline:
                break
        for name in names:
            sweep(notebook_tag(meta["run_id"], name))
        isolate.allow_steps()  # this batch is over: a later call in this process (a test, a notebook) may run steps
    runs = []
    for future, name in futures.items():
        entry = batch.entry(name)
        crashed = future.exception() if future.done() and not future.cancelled() else None
        result = future.result() if future.done() and not future.cancelled() and crashed is None else None
        if crashed is not None:  # the runner's own code broke for this notebook: a failure, not a stop
            error = f"runner: {type(crashed).__name__}: {crashed}"
            batch.update(name, state="failed", ok=False, error=error)
            runs.append(NotebookRun(name, False, 0.0, batch.run_dir / f"{name}.ipynb",
                                    batch.run_dir / f"{name}.results.json", error, "failed"))
        elif result is not None and result.state != "interrupted":
            runs.append(result)
        elif result is not None:  # stopped while it ran: keep what it had judged, the rest is `error`
            cause = stop.cause
            if result.results.exists():
                findings.merge_failure(result.results, name, meta["run_id"], entry["parameters"], cause, result.seconds)
            batch.update(name, state="interrupted", ok=False, seconds=round(result.seconds, 2), error=cause)
            runs.append(result)
        elif future.done() or future.cancelled():
            batch.update(name, state="pending", ok=False, error="not started")
        else:  # its worker did not return within the stop deadline
            batch.update(name, state="interrupted", ok=False, error=stop.cause)
    return runs


def workers_alive() -> bool:
    """True while a notebook worker thread of this process is still running (after a stop: one still starting)."""
    return any(t.name.startswith("notebook-") and t.is_alive() for t in threading.enumerate())


def _start_workers(work: Callable[[str], Any], names: list[str], jobs: int) -> dict[Future, str]:
    """Run work(name) for every name on `jobs` daemon threads; returns {future: name}.

    Not a ThreadPoolExecutor: the interpreter joins its threads at exit, so a stopped run would wait for a worker
    still blocked in starting a step (e.g. while the step server imports torch) before the process could end.
    """
    futures = {Future(): name for name in names}
    queue = list(futures.items())
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                if not queue:
                    return
                future, name = queue.pop(0)
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(work(name))
            except BaseException as exc:  # noqa: BLE001 - reported per notebook by the caller
                future.set_exception(exc)

    for i in range(min(jobs, len(names))):
        threading.Thread(target=worker, name=f"notebook-{i}", daemon=True).start()
    return futures


def _render_notebook(ipynb: Path) -> None:
    """HTML of one executed notebook; a rendering failure is reported, never fatal to the run."""
    from ..report import pages as report

    try:
        with _RENDER_LOCK:
            report.render_notebook(ipynb)
    except Exception as exc:  # noqa: BLE001 - the results stay; only a page is missing
        print(f"[html] {ipynb.name}: not rendered ({type(exc).__name__}: {exc})", file=sys.stderr, flush=True)


def index_root(run_dir: Path) -> Path:
    """Where a run's index of runs goes: the folder that holds the run (reports/runs/ for local runs)."""
    return Path(run_dir).resolve().parent


def _render(batch: Batch) -> Path:
    """The run's index.html (notebook pages were rendered as each finished) and the index of its folder."""
    from ..report import pages as report

    report.render_run(batch.run_dir, notebooks=False)
    return report.render_index(index_root(batch.run_dir))


def summary(result: RunResult) -> str:
    """One line for the terminal: what finished, where the run is, and how to resume a stopped one."""
    notebooks = load(result.run_dir).meta["notebooks"]
    finished = [n["name"] for n in notebooks if n["state"] in FINISHED]
    failed = [n["name"] for n in notebooks if n["state"] == "failed"]
    said = f"{len(finished)} of {len(notebooks)} notebooks finished ({', '.join(finished) or 'none'})"
    said += f", {len(failed)} failed ({', '.join(failed)})" if failed else ""
    if result.state != "complete":
        stopped = {"stopped_at_deadline": "stopped at the --stop-after deadline",
                   "kernel_not_started": "incomplete (a kernel did not start, twice)"}.get(result.reason, "interrupted")
        if result.signum:
            stopped = f"interrupted by {signal.Signals(result.signum).name}"
        return f"{stopped}: {said}; partial run in {result.run_dir}; resume with: yolo26kit run --resume {result.run_dir}"
    return f"complete: {said}; {wall_and_bound(load(result.run_dir).meta)}; run in {result.run_dir}"


def wall_and_bound(meta: dict[str, Any]) -> str:
    """`wall N s, lower bound M s (measuring on LOCK), ended by NOTEBOOK in PHASE` from run.json."""
    said = f"wall {meta.get('wall_seconds', 0):.0f} s"
    longest = accounts.bounding_lock(meta)
    if longest:
        span = accounts.lock_span(meta, longest)
        said += f", lower bound {meta.get('lower_bound_s', 0):.0f} s (measuring on {longest}{span})"
    path = meta.get("critical_path")
    if path:
        said += f", ended by {path['notebook']} ({path['last_phase']})"
    busy = core_load.phrase(meta.get("cores_busy") or {})
    return said + (f"; {busy}" if busy else "")
