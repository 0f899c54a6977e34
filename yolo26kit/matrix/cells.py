"""Cells of the matrix and how the kit's executors (run/executors.py) run them: one `yolo26kit run` of one
investigation in one stack.

`LocalExecutor` (default; one cell at a time on CPU, as `yolo26kit run` does) and `RayExecutor` (a Ray task per
stack install and per cell, `num_gpus=1` for CUDA cells; a local Ray started here, or the cluster at RAY_ADDRESS,
which gets the checkout as its working_dir) are the run's executors with the matrix's stack-specific tasks on top:
both go through the executor's `map`. A Ray cell packs its run folder and the driver unpacks it, so both executors
leave the same files; a cell whose worker dies is re-run once (`retries=1`), then recorded as failed, as is a cell
whose task raised. matrix.json keeps what depends on the executor or the clock (times, run folders, install reuse)
apart from what must agree (`matrix.comparable()`).
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from ..bench.artifacts import read_json_object
from ..run import executors
from ..run.executors import RAY_EXCLUDES  # noqa: F401 - what a cluster is not sent of the checkout; re-exported
from .stacks import (CHILD_ENV, ROOT, STATES_RUN, Stack, stack_row, output_tail, child_environ, default_envs,
                     prepare)

CELL_TIMEOUT = 3600.0  # one `yolo26kit run` of one notebook, on top of its own per-notebook timeout


# ---------------------------------------------------------------- cells


@dataclass
class Cell:
    """One investigation of one stack on one device, with the `-p` overrides that belong to it."""

    stack: str
    investigation: str
    device: str = "cpu"
    profile: str = "quick"
    params: list[str] = field(default_factory=list)  # KEY=VALUE

    @property
    def key(self) -> str:
        return f"{self.stack}/{self.investigation}/{self.device}"


def ledger_claims(kit_root: Path, investigation: str) -> list[str]:
    """Claim ids of an investigation's ledger (data/claims/<name>.json), in ledger order."""
    try:
        entries = json.loads((kit_root / "data" / "claims" / f"{investigation}.json").read_text())
    except (OSError, ValueError):
        return []
    entries = entries.get("claims", entries) if isinstance(entries, dict) else entries
    return [e["id"] for e in entries if isinstance(e, dict) and e.get("id") and not e.get("untestable")]


def _find_run_dir(out: Path) -> Path | None:
    runs = sorted(p.parent for p in out.glob("*/run.json"))
    return runs[-1] if runs else None


def _end_with_parent() -> None:
    """In a cell's `yolo26kit run`: SIGTERM when the process that started it dies (a Ray worker that died), so
    the runner stops its notebook tree instead of running on as an orphan (Linux; elsewhere nothing)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


PLAN = "plan.json"  # what a matrix folder was asked to run: `--resume` runs the same
CELL_RECORD = "cell.json"  # a finished cell's record, in its folder
STOP_GRACE = 60.0  # seconds a cell's `yolo26kit run` gets to stop its notebooks after SIGTERM


def _stop(child: subprocess.Popen) -> None:
    """SIGTERM (the runner stops its notebook tree and keeps what finished), then SIGKILL after STOP_GRACE."""
    if child.poll() is None:
        child.terminate()
        try:
            child.wait(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def finished_cells(matrix_dir: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Records of the cells a matrix folder already finished, by (stack, investigation): `--resume` keeps them."""
    found = {}
    for path in sorted(Path(matrix_dir).glob(f"cells/*/*/{CELL_RECORD}")):
        record = read_json_object(path)  # unreadable: as if the cell never finished
        if record.get("state") == "done":
            found[(record["stack"], record["investigation"])] = record
    return found


def run_cell(cell: Cell, row: dict[str, Any], out: Path, kit_root: str | Path = ROOT,
             envs: str | Path | None = None, timeout: float = CELL_TIMEOUT,
             log: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """`yolo26kit run <investigation>` of the checkout in the stack's Python, into `out`; the cell's record.

    The record: state (done, failed), error, seconds, verdicts {claim: verdict}, run (the run folder relative
    to `out`). A run that left no results.json gives `error` to every claim of the investigation's ledger.
    """
    kit_root = Path(kit_root)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    envs = Path(envs).expanduser() if envs else default_envs()
    cache = envs / row["id"] / "compile-cache"
    cache.mkdir(parents=True, exist_ok=True)
    command = [row["python"], "-m", "yolo26kit", "run", cell.investigation, "--device", cell.device,
               "--profile", cell.profile, "--out", str(out.resolve()), "--cache", str(cache)]
    for pair in cell.params:
        command += ["-p", pair]
    record: dict[str, Any] = {**asdict(cell), "state": "failed", "error": "", "seconds": 0.0, "verdicts": {},
                              "run": None}
    log(f"[{cell.key}] start")
    t0 = time.perf_counter()
    with open(out / "cell.log", "w") as logfile:
        child = subprocess.Popen(command, cwd=kit_root, env=child_environ(row["python"], kit_root),
                                 stdout=logfile, stderr=subprocess.STDOUT, preexec_fn=_end_with_parent)
        try:
            code: int | None = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop(child)
            code = None
        except BaseException:  # Ctrl-C / SIGTERM of the matrix: the cell's run stops its notebooks cleanly first
            _stop(child)
            raise
    record["seconds"] = round(time.perf_counter() - t0, 1)
    run_dir = _find_run_dir(out)
    results = run_dir / f"{cell.investigation}.results.json" if run_dir else None
    verdicts: dict[str, str] = {}
    if results and results.exists():
        try:
            data = json.loads(results.read_text())
            verdicts = {c["id"]: c.get("verdict", "error") for c in data.get("claims", []) if c.get("id")}
        except (OSError, ValueError) as exc:
            record["error"] = f"unreadable results.json: {exc}"
    if run_dir:
        record["run"] = run_dir.relative_to(out).as_posix()
    if code is None:
        record["error"] = f"the cell ran past {timeout:.0f} s"
    elif code not in (0, 1):  # 1: a notebook failed, its claims carry `error` with the cause
        record["error"] = f"`yolo26kit run` exited {code}: {output_tail((out / 'cell.log').read_text(errors='replace'), 3)}"
    elif code == 1:
        record["error"] = "the notebook failed (its claims that were not judged carry `error`)"
    if not verdicts:
        verdicts = {cid: "error" for cid in ledger_claims(kit_root, cell.investigation)}
        record["error"] = record["error"] or "the run left no results.json"
    record["verdicts"] = verdicts
    record["state"] = "done" if code == 0 and not record["error"] else "failed"
    from .. import findings

    findings.write_json(out / CELL_RECORD, record)  # what `matrix --resume` reads back
    log(f"[{cell.key}] {record['state']} in {record['seconds']:.0f} s" + (f": {record['error']}" if record["error"] else ""))
    return record


# ---------------------------------------------------------------- executors


def plan_cells(rows: list[dict[str, Any]], investigations: list[str], device: str, profile: str,
               params: dict[str, list[str]]) -> list[Cell]:
    """Every investigation of every stack that installed, with the `-p` overrides routed to it."""
    return [Cell(r["id"], inv, device, profile, params.get(inv, [])) for r in rows if r["state"] in STATES_RUN
            for inv in investigations]


def failed_cell(cell: Cell, why: str, kit_root: Path) -> dict[str, Any]:
    """The record of a cell that did not run to its end: `error` for every claim of its ledger."""
    return {**asdict(cell), "state": "failed", "error": why, "seconds": 0.0, "run": None,
            "verdicts": {c: "error" for c in ledger_claims(kit_root, cell.investigation)}}


def failure_reason(exc: Exception, retries: int) -> str:
    """Why a cell's task failed: its worker died every time it ran, or its own code raised."""
    died = "WorkerCrashed" in type(exc).__name__ or "died" in str(exc).lower()
    return (f"its Ray worker died {retries + 1} times" if died
            else f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")


def _prepare_task(stack: dict[str, Any], envs: str | None, kit_root: str | None) -> dict[str, Any]:
    """Task: a stack's environment on the machine that runs it."""
    return prepare(Stack(**stack), envs, Path(kit_root) if kit_root else Path.cwd())


def _cell_task(cell: dict[str, Any], row: dict[str, Any], envs: str | None, kit_root: str | None,
               timeout: float, out: str | None = None) -> dict[str, Any]:
    """Task: run the cell in its stack's environment, into `out` when given, else into a folder of its own that it
    sends back packed.

    The driver's stack row is used when its Python exists here (this machine, a local Ray, or a node that shares
    the path); otherwise this node creates (or reuses) the stack's environment first.
    """
    kit = Path(kit_root) if kit_root else Path.cwd()  # a cluster gets the checkout as the task's working_dir
    if not (row.get("python") and Path(row["python"]).exists() and row["state"] in STATES_RUN):
        row = prepare(Stack(**row["_stack"]), envs, kit)
    cell_ = Cell(**cell)
    if row["state"] not in STATES_RUN:
        return {**failed_cell(cell_, f"stack on this node: {row['state']}: {row['reason']}", kit), "archive": None,
                "node": socket.gethostname()}
    if out:
        record = run_cell(cell_, row, Path(out), kit, envs, timeout)
    else:
        with tempfile.TemporaryDirectory(prefix="yolo26kit-cell-") as tmp:
            record = run_cell(cell_, row, Path(tmp), kit, envs, timeout)
            record["archive"] = executors.pack(Path(tmp))
    record["node"] = socket.gethostname()
    return record


class _CellsOnExecutor:
    """The matrix's work on one of the run's executors: stacks prepared, then cells run, each as a task of `map`."""

    log: Callable[[str], None]
    map: Callable[..., Iterator[Any]]  # the executor's (run/executors.py)
    retries = 0

    def _kit_for_tasks(self, kit_root: Path) -> str | None:
        """The checkout a task runs from: this one, except on a cluster (its working_dir)."""
        return str(kit_root)

    def _cell_options(self, cells: list[Cell]) -> list[dict[str, Any]]:
        """What each cell's task asks the executor for (Ray's resources; nothing locally)."""
        return [{} for _ in cells]

    def _cell_folder(self, folder: Path) -> str | None:
        """Where a cell's task writes its run: the matrix folder itself (local), else None (sent back packed)."""
        return str(folder)

    def prepare(self, stacks: list[Stack], envs: Path | None, kit_root: Path) -> list[dict[str, Any]]:
        """Each stack's environment (created or reused), as matrix rows."""
        calls = [(asdict(s), str(envs) if envs else None, self._kit_for_tasks(kit_root)) for s in stacks]
        rows = []
        for stack, row in zip(stacks, self.map(_prepare_task, calls, {"num_cpus": 1}, self.retries)):
            if isinstance(row, Exception):  # the stack is a row with the reason
                row = {**stack_row(stack), "state": "install_failed", "reason": f"{type(row).__name__}: {row}"}
            self.log(f"[{stack.id}] {row['state']}" + (f": {row['reason']}" if row["reason"] else ""))
            rows.append(row)
        return rows

    def _row_for_tasks(self, row: dict[str, Any]) -> dict[str, Any]:
        """The stack row a cell's task gets (its Python is used where it exists)."""
        return row

    def run(self, cells: list[Cell], rows: dict[str, dict[str, Any]], matrix_dir: Path, kit_root: Path,
            envs: Path | None, timeout: float) -> list[dict[str, Any]]:
        """Every cell's record, each cell's run folder in matrix_dir/cells/<stack>/<investigation>."""
        folders = [matrix_dir / "cells" / c.stack / c.investigation for c in cells]
        calls = [(asdict(c), self._row_for_tasks(rows[c.stack]), str(envs) if envs else None,
                  self._kit_for_tasks(kit_root), timeout, self._cell_folder(f)) for c, f in zip(cells, folders)]
        records = []
        done = self.map(_cell_task, calls, self._cell_options(cells), self.retries)
        for cell, folder, record in zip(cells, folders, done):
            if isinstance(record, Exception):
                record = failed_cell(cell, failure_reason(record, self.retries), kit_root)
            archive = record.pop("archive", None)
            if archive:
                executors.unpack(archive, folder)
            self.log(f"[{cell.key}] {record['state']} in {record['seconds']:.0f} s"
                     + (f": {record['error']}" if record["error"] else ""))
            records.append(record)
        return records


class LocalExecutor(_CellsOnExecutor, executors.LocalExecutor):
    """Stacks and cells one after the other, in this process's children (the run's local executor, one job)."""

    def __init__(self, log: Callable[[str], None] = print) -> None:
        executors.LocalExecutor.__init__(self, jobs=1)
        self.log = log


class RayExecutor(_CellsOnExecutor, executors.RayExecutor):
    """A Ray task per stack install and per cell (the run's Ray executor): a local Ray started here, or the cluster
    at RAY_ADDRESS.

    CPU cells ask for `cell_cpus` CPUs (default: every CPU of a local Ray, so cells run one at a time as the
    local executor runs them; 1 on a cluster); CUDA cells for one GPU. A worker that dies is replaced and its
    task re-run once (retries=1); a second death makes the cell `failed`.
    """

    retries = 1

    def __init__(self, log: Callable[[str], None] = print, address: str | None = None,
                 cell_cpus: float | None = None) -> None:
        executors.RayExecutor.__init__(self, log, address=address, env_vars=dict(CHILD_ENV))
        self.cell_cpus = cell_cpus

    def _kit_for_tasks(self, kit_root: Path) -> str | None:
        self.kit_root = self.kit_root or kit_root  # what a cluster is sent when Ray starts
        return None if self.address else str(kit_root)

    def _row_for_tasks(self, row: dict[str, Any]) -> dict[str, Any]:
        return {**row, "python": ""} if self.address else row  # a cluster node makes its own environment

    def _cell_folder(self, folder: Path) -> str | None:
        return None  # a worker may be another node: its run folder comes back packed

    def _cell_options(self, cells: list[Cell]) -> list[dict[str, Any]]:
        local_cpus = self.cpus() if not self.address else 1
        options = []
        for cell in cells:
            gpu = cell.device == "cuda"
            cpus = self.cell_cpus if self.cell_cpus is not None else (1 if gpu else local_cpus)
            options.append({"num_cpus": cpus, "num_gpus": 1 if gpu else 0})
        return options
