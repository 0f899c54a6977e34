"""Cells of the matrix and the executors that run them: one `yolo26kit run` of one investigation in one stack.

Executors: `local` (default; one cell at a time on CPU, as `yolo26kit run` does) and `ray` (a Ray task per
stack install and per cell, `num_gpus=1` for CUDA cells; a local Ray started here, or the cluster at
RAY_ADDRESS, which gets the checkout as its working_dir). A Ray cell packs its run folder and the driver
unpacks it, so both executors leave the same files; a cell whose worker dies is re-run once (Ray's
`max_retries=1`), then recorded as failed. matrix.json keeps what depends on the executor or the clock (times,
run folders, install reuse) apart from what must agree (`matrix.comparable()`).
"""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..bench.artifacts import read_json_object
from ..run.executors import RAY_EXCLUDES  # what a cluster is not sent of the checkout; matrix re-exports it
from .stacks import (CHILD_ENV, ROOT, STATES_RUN, MatrixError, Stack, stack_row, output_tail, child_environ, default_envs,
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


def _plan_cells(rows: list[dict[str, Any]], investigations: list[str], device: str, profile: str,
                params: dict[str, list[str]]) -> list[Cell]:
    return [Cell(r["id"], inv, device, profile, params.get(inv, [])) for r in rows if r["state"] in STATES_RUN
            for inv in investigations]


class LocalExecutor:
    """Stacks and cells one after the other in this process's children."""

    name = "local"

    def __init__(self, log: Callable[[str], None] = print) -> None:
        self.log = log

    def prepare(self, stacks: list[Stack], envs: Path | None, kit_root: Path) -> list[dict[str, Any]]:
        return [prepare(s, envs, kit_root, self.log) for s in stacks]

    def run(self, cells: list[Cell], rows: dict[str, dict[str, Any]], matrix_dir: Path, kit_root: Path,
            envs: Path | None, timeout: float) -> list[dict[str, Any]]:
        return [run_cell(c, rows[c.stack], matrix_dir / "cells" / c.stack / c.investigation, kit_root, envs, timeout,
                         self.log) for c in cells]


def _pack(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(folder, arcname=".")
    return buffer.getvalue()


def _unpack(data: bytes, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(folder, filter="data")


def _ray_prepare(stack: dict[str, Any], envs: str | None, kit_root: str | None) -> dict[str, Any]:
    """Ray task: a stack's environment on the node that runs it."""
    return prepare(Stack(**stack), envs, Path(kit_root) if kit_root else Path.cwd())


def _ray_cell(cell: dict[str, Any], row: dict[str, Any], envs: str | None, kit_root: str | None,
              timeout: float) -> dict[str, Any]:
    """Ray task: run the cell in its stack's environment, pack its folder.

    The driver's stack row is used when its Python exists here (a local Ray, or a node that shares the path);
    otherwise this node creates (or reuses) the stack's environment first.
    """
    kit = Path(kit_root) if kit_root else Path.cwd()  # a cluster gets the checkout as the task's working_dir
    if not (row.get("python") and Path(row["python"]).exists() and row["state"] in STATES_RUN):
        row = prepare(Stack(**row["_stack"]), envs, kit)
    cell_ = Cell(**cell)
    if row["state"] not in STATES_RUN:
        return {**asdict(cell_), "state": "failed", "error": f"stack on this node: {row['state']}: {row['reason']}",
                "seconds": 0.0, "verdicts": {c: "error" for c in ledger_claims(kit, cell_.investigation)},
                "run": None, "archive": None, "node": socket.gethostname()}
    with tempfile.TemporaryDirectory(prefix="yolo26kit-cell-") as tmp:
        record = run_cell(cell_, row, Path(tmp), kit, envs, timeout)
        record["archive"] = _pack(Path(tmp))
    record["node"] = socket.gethostname()
    return record


class RayExecutor:
    """A Ray task per stack install and per cell: a local Ray started here, or the cluster at RAY_ADDRESS.

    CPU cells ask for `cell_cpus` CPUs (default: every CPU of a local Ray, so cells run one at a time as the
    local executor runs them; 1 on a cluster); CUDA cells for one GPU. A worker that dies is replaced and its
    task re-run once (max_retries=1); a second death makes the cell `failed`.
    """

    name = "ray"
    max_retries = 1

    def __init__(self, log: Callable[[str], None] = print, address: str | None = None,
                 cell_cpus: float | None = None) -> None:
        self.log = log
        self.address = address if address is not None else os.environ.get("RAY_ADDRESS", "")
        self.cell_cpus = cell_cpus
        self._started = False

    def _init(self, kit_root: Path) -> Any:
        """Ray, started or joined as the run's executor does (run.executors.start_ray)."""
        from ..run import executors

        try:
            ray = executors.start_ray(self.log, self.address, kit_root, env_vars=dict(CHILD_ENV))
        except executors.ExecutorError as exc:
            raise MatrixError(str(exc)) from None
        self._remote_kit = None if self.address else str(kit_root)
        self._started = True
        return ray

    def close(self) -> None:
        if self._started:
            import ray

            ray.shutdown()
            self._started = False

    def prepare(self, stacks: list[Stack], envs: Path | None, kit_root: Path) -> list[dict[str, Any]]:
        ray = self._init(kit_root)
        task = ray.remote(num_cpus=1, max_retries=self.max_retries)(_ray_prepare)
        refs = [task.remote(asdict(s), str(envs) if envs else None, self._remote_kit) for s in stacks]
        rows = []
        for stack, ref in zip(stacks, refs):
            try:
                rows.append(ray.get(ref))
            except Exception as exc:  # noqa: BLE001 - the stack is a row with the reason
                rows.append({**stack_row(stack), "state": "install_failed", "reason": f"ray: {type(exc).__name__}: {exc}"})
            self.log(f"[{stack.id}] {rows[-1]['state']}" + (f": {rows[-1]['reason']}" if rows[-1]["reason"] else ""))
        return rows

    def run(self, cells: list[Cell], rows: dict[str, dict[str, Any]], matrix_dir: Path, kit_root: Path,
            envs: Path | None, timeout: float) -> list[dict[str, Any]]:
        ray = self._init(kit_root)
        task = ray.remote(max_retries=self.max_retries)(_ray_cell)
        local_cpus = int(ray.cluster_resources().get("CPU", 1)) if not self.address else 1
        refs = []
        for cell in cells:
            gpu = cell.device == "cuda"
            cpus = self.cell_cpus if self.cell_cpus is not None else (1 if gpu else local_cpus)
            row = rows[cell.stack] if not self.address else {**rows[cell.stack], "python": ""}
            refs.append(task.options(num_cpus=cpus, num_gpus=1 if gpu else 0).remote(
                asdict(cell), row, str(envs) if envs else None, self._remote_kit, timeout))
        records = []
        for cell, ref in zip(cells, refs):
            try:
                record = ray.get(ref)
            except Exception as exc:  # noqa: BLE001 - worker died twice, or the task's own code broke
                died = "WorkerCrashed" in type(exc).__name__ or "died" in str(exc).lower()
                why = (f"its Ray worker died {self.max_retries + 1} times" if died
                       else f"ray: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
                record = {**asdict(cell), "state": "failed", "error": why, "seconds": 0.0, "run": None,
                          "verdicts": {c: "error" for c in ledger_claims(kit_root, cell.investigation)}}
            archive = record.pop("archive", None)
            if archive:
                _unpack(archive, matrix_dir / "cells" / cell.stack / cell.investigation)
            self.log(f"[{cell.key}] {record['state']} in {record['seconds']:.0f} s"
                     + (f": {record['error']}" if record["error"] else ""))
            records.append(record)
        return records
