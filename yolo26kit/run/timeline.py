"""Where each notebook's wall time went, from the phase intervals its processes logged (timing.PHASE_LOG_ENV):
accounts that add up to the notebook's seconds, the batch's critical path, and its lower bound.

Accounts of one notebook (seconds). Its start-up, until the cell that starts the findings ends, is split in three:
`spawn` (its process forked from the runner's step server and ready: waiting for the server, which imports torch
and papermill once), `kernel_start` (papermill starting the Jupyter kernel, until the first cell begins) and
`imports` (the first cells, up to the end of the one that starts the findings). The rest of its life goes to, in
this order for overlapping intervals: `measure` (a measuring lock held), `lock_wait` (waiting for a measuring lock),
`forensics` (a crashed step re-run under a debugger for its native backtrace), `step_start` (an isolated step's
process starting: fork, imports of the step's module, until the step's function runs), `step_wait` (a step waiting
for one of the run's step slots), `measure` (a measuring step running), `compile` (a compile step running),
`steps` (another isolated step running) and `rest` (anything else: eager work in the kernel, rendering). Each
interval counts once, for the first account that claims it — a wait inside a measuring step is a wait — so the
accounts add up to the wall time. Runs recorded before the split have one `startup` account instead of the first
three; renderers take whichever a run has (`ACCOUNTS` lists both, in table order).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

PRECEDENCE = ("measure", "lock_wait", "compile")  # phases a notebook can end in (last_phase), first wins
# (account, phase, from a lock?) in the order overlapping intervals are given to accounts
CLAIMS = (("measure", "measure", True), ("lock_wait", "lock_wait", True), ("forensics", "forensics", False),
          ("step_start", "step_start", False), ("step_wait", "step_wait", False), ("measure", "measure", False),
          ("compile", "compile", False), ("steps", "other", False))
STARTUP = ("spawn", "kernel_start", "imports")
AFTER_STARTUP = ("lock_wait", "compile", "measure", "forensics", "step_start", "step_wait", "steps", "rest")
ACCOUNTS = ("startup", *STARTUP, *AFTER_STARTUP)  # table order; `startup`: runs recorded before the split
STARTS_FINDINGS = "findings.start("  # the notebook cell whose end closes the start-up


def read_intervals(path: Path) -> list[dict[str, Any]]:
    """The phase intervals of a log ({"phase", "t0", "t1", ...} per line, epoch seconds); unreadable lines skipped."""
    rows = []
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            row = json.loads(line)
            if row["t1"] >= row["t0"]:
                rows.append(row)
        except (ValueError, KeyError, TypeError):
            continue
    return rows


def _code_cells(notebook: Path) -> list[dict[str, Any]]:
    """The code cells of an executed notebook; [] when it does not read."""
    try:
        cells = json.loads(Path(notebook).read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return []
    return [c for c in cells if isinstance(c, dict) and c.get("cell_type") == "code"]


def _stamp(cell: dict[str, Any], key: str) -> float | None:
    """A cell's papermill start_time / end_time as epoch seconds."""
    return _epoch((cell.get("metadata", {}).get("papermill") or {}).get(key))


def startup_end(notebook: Path) -> float | None:
    """Epoch seconds at which the cell that starts the findings ended (papermill's cell metadata); None if unknown."""
    for cell in _code_cells(notebook):
        if STARTS_FINDINGS in "".join(cell.get("source") or ""):
            return _stamp(cell, "end_time")
    return None


def first_cell_start(notebook: Path) -> float | None:
    """Epoch seconds at which the notebook's first code cell began (its kernel was up); None if unknown."""
    cells = _code_cells(notebook)
    return _stamp(cells[0], "start_time") if cells else None


def _epoch(stamp: str | None) -> float | None:
    """papermill's ISO time (UTC, naive or with an offset) as epoch seconds."""
    if not stamp:
        return None
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()


def covered(intervals: list[tuple[float, float]]) -> float:
    """Seconds covered by the union of (t0, t1) intervals."""
    total, end = 0.0, float("-inf")
    for t0, t1 in sorted(intervals):
        if t1 > end:
            total += t1 - max(t0, end)
            end = t1
    return total


def _clip(rows: list[dict[str, Any]], lo: float, hi: float, phase: str, locked: bool) -> list[tuple[float, float]]:
    return [(max(r["t0"], lo), min(r["t1"], hi)) for r in rows
            if r["phase"] == phase and bool(r.get("lock")) == locked and r["t1"] > lo and r["t0"] < hi]


def startup_split(start: float, begin: float, kernel_up: float | None, rows: list[dict[str, Any]]) -> dict[str, float]:
    """The start-up [start, begin] as spawn, kernel_start and imports (module notes); `kernel_up`: when the first
    cell began (None: unknown, all of it before the imports)."""
    up = min(max(kernel_up if kernel_up is not None else begin, start), begin)
    spawn = covered(_clip(rows, start, up, "step_start", False))
    return {"spawn": spawn, "kernel_start": up - start - spawn, "imports": begin - up}


def accounts(start: float, end: float, started: float | None, rows: list[dict[str, Any]],
             kernel_up: float | None = None) -> dict[str, float]:
    """One notebook's accounts (module notes) between `start` and `end`; `started`: when its start-up ended,
    `kernel_up`: when its first cell began."""
    wall = max(0.0, end - start)
    begin = min(max(started if started is not None else start, start), end)
    out = startup_split(start, begin, kernel_up, rows) | {k: 0.0 for k in AFTER_STARTUP}
    taken: list[tuple[float, float]] = []
    for account, phase, locked in CLAIMS:
        mine = _clip(rows, begin, end, phase, locked)
        out[account] += covered(taken + mine) - covered(taken)
        taken += mine
    out["rest"] = max(0.0, wall - sum(out.values()))
    return {k: round(v, 2) for k, v in out.items()} | {"wall": round(wall, 2)}


def startup_seconds(acc: dict[str, float]) -> float:
    """A notebook's whole start-up from its accounts, split (spawn, kernel_start, imports) or not (`startup`)."""
    return acc.get("startup", 0.0) + sum(acc.get(k, 0.0) for k in STARTUP)


def measuring(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per measuring lock (a GPU's or the CPU's): how often it was held, seconds held and waited, the cores of CPU
    timings and the most cores other processes kept busy meanwhile."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        lock = row.get("lock")
        if not lock or row["phase"] not in ("measure", "lock_wait"):
            continue
        seen = out.setdefault(lock, {"holds": 0, "held_s": 0.0, "wait_s": 0.0})
        if row["phase"] == "lock_wait":
            seen["wait_s"] = round(seen["wait_s"] + row["t1"] - row["t0"], 2)
            continue
        seen["holds"] += 1
        seen["held_s"] = round(seen["held_s"] + row["t1"] - row["t0"], 2)
        if row.get("cores"):
            seen["cores"] = row["cores"]
        if row.get("others_busy_cores") is not None:
            seen["others_busy_cores_max"] = max(seen.get("others_busy_cores_max", 0.0), row["others_busy_cores"])
    return out


def steps(rows: list[dict[str, Any]], start: float) -> list[dict[str, Any]]:
    """A notebook's isolated steps as logged, in start order: each interval's step, phase, start (seconds after
    `start`) and length. They show what held a batch's step slots: the accounts count each second once per notebook."""
    logged = sorted((r for r in rows if r.get("step") and not r.get("lock")), key=lambda r: r["t0"])
    return [{"step": r["step"], "phase": r["phase"], "start_s": round(r["t0"] - start, 1),
             "seconds": round(r["t1"] - r["t0"], 1)} for r in logged]


def _holds(rows_by_notebook: dict[str, list[dict[str, Any]]]) -> dict[str, list[tuple[float, float]]]:
    """Every hold of each measuring lock over the whole batch, as (t0, t1)."""
    spans: dict[str, list[tuple[float, float]]] = {}
    for rows in rows_by_notebook.values():
        for row in rows:
            if row["phase"] == "measure" and row.get("lock"):
                spans.setdefault(row["lock"], []).append((row["t0"], row["t1"]))
    return spans


def lock_seconds(rows_by_notebook: dict[str, list[dict[str, Any]]]) -> dict[str, float]:
    """Seconds each measuring lock was held over the whole batch (union): the batch cannot end sooner than the
    longest of them."""
    return {lock: round(covered(s), 2) for lock, s in sorted(_holds(rows_by_notebook).items())}


def lock_spans(rows_by_notebook: dict[str, list[dict[str, Any]]], run_start: float) -> dict[str, dict[str, float]]:
    """Per measuring lock: when the batch first took it and last let it go (seconds after `run_start`) and the
    seconds it stood free in between. Beside the seconds held they say where a batch bound by that lock lost the
    rest: before its first timing, between timings, or after its last."""
    out = {}
    for lock, s in sorted(_holds(rows_by_notebook).items()):
        first, last = min(t0 for t0, _ in s), max(t1 for _, t1 in s)
        out[lock] = {"first_s": round(first - run_start, 2), "last_s": round(last - run_start, 2),
                     "free_s": round(last - first - covered(s), 2)}
    return out


def last_phase(acc_rows: list[dict[str, Any]], end: float) -> str:
    """The phase a notebook was in last (the latest-ending logged interval within a second of its end), else `rest`."""
    near = [r for r in acc_rows if r["phase"] in PRECEDENCE and r["t1"] >= end - 1.0]
    if not near:
        return "rest"
    return min(near, key=lambda r: PRECEDENCE.index(r["phase"]))["phase"]


def critical_path(entries: list[dict[str, Any]], run_start: float) -> dict[str, Any] | None:
    """The notebook that ended the batch: name, GPU, when it ended (seconds after the call began), its accounts and
    the phase it ended in. `entries` are run.json notebook entries with `ended_at` (epoch) and `accounts`."""
    ended = [e for e in entries if e.get("ended_at")]
    if not ended:
        return None
    last = max(ended, key=lambda e: e["ended_at"])
    return {"notebook": last["name"], "gpu": last.get("gpu"), "ended_s": round(last["ended_at"] - run_start, 2),
            "last_phase": last.get("last_phase", "rest"), "accounts": last.get("accounts")}
