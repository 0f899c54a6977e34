"""Where each notebook's wall time went, from the phase intervals its processes logged (timing.PHASE_LOG_ENV):
accounts that add up to the notebook's seconds, the batch's critical path, and its lower bound.

Accounts of one notebook (seconds): `startup` (child, kernel and the imports of the cell that starts the findings),
then, for the rest of its life, `measure` (a measuring lock held, or a measuring step running), `lock_wait`
(waiting for a measuring lock), `compile` (a compile step running) and `rest` (anything else: eager work in the
kernel, other steps, rendering). Overlapping intervals count once, for the first of: a lock held, a lock waited
for, a measuring step, a compile step — a wait inside a measuring step is a wait — so the five add up to the wall
time.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

PRECEDENCE = ("measure", "lock_wait", "compile")
# (account, phase, from a lock?) in the order overlapping intervals are given to accounts
CLAIMS = (("measure", "measure", True), ("lock_wait", "lock_wait", True), ("measure", "measure", False),
          ("compile", "compile", False))
ACCOUNTS = ("startup", "lock_wait", "compile", "measure", "rest")
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


def startup_end(notebook: Path) -> float | None:
    """Epoch seconds at which the cell that starts the findings ended (papermill's cell metadata); None if unknown."""
    try:
        cells = json.loads(Path(notebook).read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return None
    for cell in cells:
        if cell.get("cell_type") == "code" and STARTS_FINDINGS in "".join(cell.get("source") or ""):
            return _epoch((cell.get("metadata", {}).get("papermill") or {}).get("end_time"))
    return None


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


def accounts(start: float, end: float, started: float | None, rows: list[dict[str, Any]]) -> dict[str, float]:
    """One notebook's accounts (module notes) between `start` and `end`; `started`: when its start-up ended."""
    wall = max(0.0, end - start)
    begin = min(max(started if started is not None else start, start), end)
    out = {"startup": begin - start, "measure": 0.0, "lock_wait": 0.0, "compile": 0.0}
    taken: list[tuple[float, float]] = []
    for account, phase, locked in CLAIMS:
        mine = _clip(rows, begin, end, phase, locked)
        out[account] += covered(taken + mine) - covered(taken)
        taken += mine
    out["rest"] = max(0.0, wall - sum(out.values()))
    return {k: round(out[k], 2) for k in ACCOUNTS} | {"wall": round(wall, 2)}


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


def lock_seconds(rows_by_notebook: dict[str, list[dict[str, Any]]]) -> dict[str, float]:
    """Seconds each measuring lock was held over the whole batch (union): the batch cannot end sooner than the
    longest of them."""
    spans: dict[str, list[tuple[float, float]]] = {}
    for rows in rows_by_notebook.values():
        for row in rows:
            if row["phase"] == "measure" and row.get("lock"):
                spans.setdefault(row["lock"], []).append((row["t0"], row["t1"]))
    return {lock: round(covered(s), 2) for lock, s in sorted(spans.items())}


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
