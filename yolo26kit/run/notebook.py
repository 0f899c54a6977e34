"""One notebook executed with papermill in a child process of its own: its kernel on IPC sockets, started again
once when it never started, what it left running swept by its tag, its step journal, its time accounts and what the
compile cache did for it. The batch (runner.py) and the executors (executors.py) call `execute`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .. import findings
from ..paths import NOTEBOOK_TAG_ENV
from ..bench import isolate, step_server
from ..catalog import Investigation
from . import timeline

DEFAULT_TIMEOUT = 1800.0  # seconds per notebook
# Every notebook child carries a tag in its environment, inherited by its kernel and everything that starts:
# a process that outlived its parent (e.g. a kernel's helper after the notebook step crashed) is found by it.
TAG_ENV = NOTEBOOK_TAG_ENV
# In a run folder: one step journal per notebook (isolate.JOURNAL_ENV), kept while the notebook is unfinished so
# that --resume reads back the steps an earlier call finished; removed when the notebook ends.
STEP_JOURNALS = ".steps"
# In a run folder, while its notebooks run: each notebook's phase log (timing.PHASE_LOG_ENV), read into its accounts.
PHASE_LOGS = ".phases"
# Notebook states in run.json; `done` and `failed` are finished (a resume leaves them alone).
FINISHED = ("done", "failed")
# A notebook whose kernel never started (or died before its first cell) is started again this many times; then it
# is `not_started`: no `error` verdicts (nothing of the notebook ran), and `--resume` runs it.
KERNEL_START_RETRIES = 1


# Every notebook's child process runs papermill: import it once in the step server (it takes 2–12 s, more on a
# loaded machine), not once per notebook. Takes effect when this process starts its first step.
isolate.preload("papermill", "papermill.engines", "nbclient", "jupyter_client")


@dataclass
class NotebookRun:
    """One executed notebook: where its files are and how it ended (state: done, failed or interrupted)."""

    name: str
    ok: bool
    seconds: float
    notebook: Path
    results: Path
    error: str = ""
    state: str = "done"
    retries: list[dict[str, Any]] = field(default_factory=list)  # start-ups that failed before the first cell
    reused: list[dict[str, Any]] = field(default_factory=list)  # steps read back from earlier calls (step journal)
    started_at: float = 0.0  # epoch seconds
    ended_at: float = 0.0
    accounts: dict[str, float] | None = None  # timeline.accounts
    measuring: dict[str, dict[str, Any]] = field(default_factory=dict)  # timeline.measuring
    lock_spans: list[tuple[str, float, float]] = field(default_factory=list)  # (lock, t0, t1) of each hold
    last_phase: str = ""
    steps: list[dict[str, Any]] = field(default_factory=list)  # timeline.steps
    gpu: str | None = None
    node: str = ""


def kernel_config(sockets: str | Path) -> Any:
    """Jupyter config that makes a notebook's kernel talk over IPC sockets in `sockets`, not TCP ports.

    With TCP, jupyter_client picks five free ports and the kernel binds them later: kernels started at the same
    time can pick the same port, and one dies in init_iopub with `Address already in use` (papermill issue #511).
    IPC socket files in a folder of one kernel alone cannot collide. The folder is a short one under the system
    temp folder, not the run folder: a Unix socket path may hold at most 107 bytes.
    """
    from traitlets.config import Config

    return Config({"KernelManager": {"transport": "ipc", "ip": str(Path(sockets) / "kernel")}})


def _execute_notebook(source: str, target: str, parameters: dict[str, Any], cwd: str, log_output: bool = False,
                      progress: bool = True, sockets: str = "") -> None:
    """Child-process body: papermill's Python API, kernel = this interpreter, on IPC sockets in `sockets`
    (kernel_config; the caller makes and removes the folder, so a killed child leaves none behind)."""
    import papermill as pm

    if log_output:  # papermill logs cell outputs at INFO on its own logger
        logging.basicConfig(level=logging.INFO, format="%(message)s")

    os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    try:
        pm.execute_notebook(source, target, parameters=parameters, kernel_name="python3",
                            progress_bar=progress and not log_output, log_output=log_output, cwd=cwd, report_mode=False,
                            config=kernel_config(sockets or tempfile.mkdtemp(prefix="yolo26kit-kernel-")))
    except pm.PapermillExecutionError as exc:  # papermill saved the notebook first; say which cell and why
        raise RuntimeError(f"cell {exc.exec_count}: {exc.ename}: {exc.evalue}") from None


def never_started(notebook: Path) -> bool:
    """True when papermill wrote the output notebook but no cell of it began: the kernel never started or
    died before its first cell (papermill stamps each cell's start_time when the cell begins)."""
    try:
        cells = json.loads(Path(notebook).read_text())["cells"]
        return all(not (c.get("metadata", {}).get("papermill") or {}).get("start_time") for c in cells)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def notebook_tag(run_id: str, name: str) -> str:
    """The TAG_ENV value of one notebook of one runner process."""
    return f"{run_id}/{name}/{os.getpid()}"


def kernel_startup_env(inv: Investigation) -> dict[str, str]:
    """The environment that has a notebook's kernel start its step server before the first cell (kernel_startup.py)."""
    return {"PYTHONSTARTUP": str(Path(__file__).with_name("kernel_startup.py")),
            step_server.PRELOAD_ENV: ",".join(inv.preload)}


def execute(inv: Investigation, parameters: dict[str, Any], run_dir: Path, run_id: str,
            timeout: float = DEFAULT_TIMEOUT, log_output: bool = False, *, env: dict[str, str] | None = None,
            progress: bool = True, stopping: Callable[[], bool] = lambda: False, tag: str = "") -> NotebookRun:
    """Run one notebook into run_dir; if it fails, keep the verdicts it saved and give the rest `error`. Its time
    accounts come from the phase intervals its processes logged.

    When `stopping()` is true after the notebook ended without results, it was stopped by the run: it is
    `interrupted`, and its results file is left for the caller.
    """
    from ..bench import timing  # lazy: imports torch

    run_dir = run_dir.resolve()  # the notebook runs with run_dir as its cwd: paths given to it must be absolute
    phase_log = run_dir / PHASE_LOGS / f"{inv.name}.jsonl"
    phase_log.parent.mkdir(exist_ok=True)
    phase_log.unlink(missing_ok=True)
    started_at = time.time()
    result = _execute(inv, parameters, run_dir, run_id, timeout, log_output, progress, stopping,
                      {**(env or {}), timing.PHASE_LOG_ENV: str(phase_log), **kernel_startup_env(inv)},
                      tag or notebook_tag(run_id, inv.name))
    result.started_at, result.ended_at = started_at, time.time()
    rows = timeline.read_intervals(phase_log)
    phase_log.unlink(missing_ok=True)  # the folder stays until the batch ends: another notebook may not have written yet
    if result.state != "not_started":
        result.accounts = timeline.accounts(started_at, result.ended_at, timeline.startup_end(result.notebook), rows,
                                            timeline.first_cell_start(result.notebook))
        result.measuring = timeline.measuring(rows)
        result.lock_spans = [(r["lock"], r["t0"], r["t1"]) for r in rows if r["phase"] == "measure" and r.get("lock")]
        result.last_phase = timeline.last_phase(rows, result.ended_at)
        result.steps = timeline.steps(rows, started_at)
    return result


def _execute(inv: Investigation, parameters: dict[str, Any], run_dir: Path, run_id: str, timeout: float,
             log_output: bool, progress: bool, stopping: Callable[[], bool], env: dict[str, str],
             tag: str) -> NotebookRun:
    """execute()'s body: the notebook in a child, started again once when its kernel never started."""
    notebook = run_dir / f"{inv.name}.ipynb"
    results = run_dir / f"{inv.name}.results.json"
    results.unlink(missing_ok=True)  # a resumed notebook starts clean
    injected = {**parameters, "results_path": str(results), "run_id": run_id}
    journal = step_journal(run_dir, inv.name)
    retries: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    while True:
        sockets = tempfile.mkdtemp(prefix="yolo26kit-kernel-")
        left_s = max(1.0, timeout - (time.perf_counter() - t0))
        try:
            outcome = isolate.run_step(_execute_notebook, str(inv.notebook), str(notebook), injected, str(run_dir),
                                       log_output, progress, sockets, timeout=left_s, step=inv.name, capture=False,
                                       env={**(env or {}), TAG_ENV: tag, isolate.JOURNAL_ENV: str(journal)},
                                       forensics=False)
        finally:
            shutil.rmtree(sockets, ignore_errors=True)
        left = sweep(tag)  # whatever the notebook left running: nothing when its kernel shut down cleanly
        if left:
            print(f"[{inv.name}] killed {len(left)} process(es) it left behind", file=sys.stderr, flush=True)
        start_failed = (not outcome.ok and outcome.status != "timeout" and not stopping()
                        and never_started(notebook))
        if not start_failed:
            break
        reason = f"kernel did not start: {outcome.status}: {outcome.error or outcome.status}"
        retries.append({"reason": reason, "seconds": round(outcome.seconds, 2)})
        print(f"[{inv.name}] {reason}", file=sys.stderr, flush=True)
        results.unlink(missing_ok=True)
        if len(retries) > KERNEL_START_RETRIES:  # not the notebook's fault: no `error` verdicts, left for --resume
            notebook.unlink(missing_ok=True)
            return NotebookRun(inv.name, False, time.perf_counter() - t0, notebook, results, reason, "not_started",
                               retries)
        print(f"[{inv.name}] starting it again", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - t0
    outcome.seconds = seconds
    error = "" if outcome.ok else (outcome.error or outcome.status)
    finished = outcome.ok and _complete(results)
    if outcome.ok and not finished:
        error = "the notebook finished without writing results.json"
    if not finished and stopping():
        return NotebookRun(inv.name, False, outcome.seconds, notebook, results, "interrupted", "interrupted", retries)
    if error:
        findings.merge_failure(results, inv.name, run_id, parameters, f"{outcome.status}: {error}", outcome.seconds)
    return NotebookRun(inv.name, not error, outcome.seconds, notebook, results, error, "done" if not error else "failed",
                       retries, close_journal(journal))


def step_journal(run_dir: Path, name: str) -> Path:
    """The step journal of one notebook of a run; a `stopping` mark left by a stopped call is cleared."""
    journal = run_dir / STEP_JOURNALS / name
    (journal / isolate.JOURNAL_STOPPING).unlink(missing_ok=True)
    return journal


def close_journal(journal: Path) -> list[dict[str, Any]]:
    """Remove a finished notebook's step journal (artifacts included); returns the steps it read back."""
    reused = []
    with contextlib.suppress(OSError):
        for line in (journal / isolate.JOURNAL_REUSED).read_text().splitlines():
            with contextlib.suppress(ValueError):
                reused.append(json.loads(line))
    shutil.rmtree(journal, ignore_errors=True)
    with contextlib.suppress(OSError):
        journal.parent.rmdir()  # the last notebook to finish takes the folder with it
    return reused


def mark_stopping(run_dir: Path, names: list[str]) -> None:
    """Tell every notebook's steps that the run is stopping: outcomes from now on are not journaled."""
    for name in names:
        journal = run_dir / STEP_JOURNALS / name
        if journal.is_dir():
            (journal / isolate.JOURNAL_STOPPING).touch()


def tagged(tag: str) -> list[int]:
    """Live processes whose environment (as exec'd) carries TAG_ENV=tag: kernels and what they started, orphans too."""
    needle = b"\0" + f"{TAG_ENV}={tag}".encode() + b"\0"
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle in b"\0" + f.read() + b"\0":
                    found.append(int(entry))
        except OSError:  # gone, or not ours
            continue
    return found


def sweep(tag: str) -> list[int]:
    """SIGKILL every process left with this notebook tag; returns their pids."""
    pids = tagged(tag)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return pids


def _complete(results: Path) -> bool:
    try:
        return results.exists() and json.loads(results.read_text()).get("schema") == findings.SCHEMA
    except (OSError, ValueError):
        return False


def cache_report(run_dir: Path, name: str, results: Path, state: str) -> dict[str, Any]:
    """What the compile cache did for one notebook, as far as it can be counted cheaply.

    - `compile_cache`: the cache's state when this call started (cold / warm / off); one cache serves the whole
      run, so a notebook of a warm run may still compile what no earlier run compiled.
    - `inductor` / `aot_autograd`: hits, misses and bypasses of Inductor's FX-graph cache and AOTAutograd's cache,
      summed over the notebook's isolated steps (isolate.CACHE_COUNTS). Compiles in the kernel itself, outside a
      step, and Triton's own kernel cache are not counted.
    - `artifacts`: rows of the notebook's results tables with a boolean `cached` column (the kit's artifacts
      cache: lowered ExecuTorch programs), served vs made. AOTI packages and crash diagnoses say nothing there.
    """
    counted: dict[str, int] = {}
    path = run_dir / isolate.CACHE_COUNTS / f"{name}.jsonl"
    try:
        for line in path.read_text().splitlines():
            for key, value in json.loads(line).items():
                counted[key] = counted.get(key, 0) + int(value)
    except (OSError, ValueError):
        pass
    path.unlink(missing_ok=True)
    report: dict[str, Any] = {"compile_cache": state}
    for group, prefix in (("inductor", "fxgraph_cache_"), ("aot_autograd", "autograd_cache_")):
        report[group] = {kind: counted.get(prefix + kind, 0) for kind in ("hit", "miss", "bypass")}
    try:
        tables = json.loads(results.read_text()).get("tables") or {}
        flags = [row["cached"] for rows in tables.values() if isinstance(rows, list) for row in rows
                 if isinstance(row, dict) and isinstance(row.get("cached"), bool)]
    except (OSError, ValueError, AttributeError):
        flags = []
    report["artifacts"] = {"hit": sum(flags), "miss": len(flags) - sum(flags)}
    return report


def time_split(results: Path) -> dict[str, float] | None:
    """The notebook's own split of its seconds (results.json `time_split`), if it wrote one."""
    try:
        return json.loads(results.read_text()).get("time_split")
    except (OSError, ValueError):
        return None
