"""Batch execution of investigation notebooks with papermill into a run directory that is never overwritten."""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import env, findings, isolate
from .catalog import Investigation

REPORTS = Path(__file__).resolve().parents[1] / "reports"
DEFAULT_OUT = REPORTS / "runs"
DEFAULT_TIMEOUT = 1800.0  # seconds per notebook


@dataclass
class NotebookRun:
    """One executed notebook: where its files are and how it ended."""

    name: str
    ok: bool
    seconds: float
    notebook: Path
    results: Path
    error: str = ""


def new_run_dir(out: Path, device_type: str, now: datetime | None = None) -> tuple[str, Path]:
    """Create `out/<run-id>/` (UTC timestamp + host + device); an existing id gets a numeric suffix."""
    now = now or datetime.now(timezone.utc)
    host = re.sub(r"[^A-Za-z0-9]+", "-", socket.gethostname()).strip("-")[:16] or "host"
    base = f"{now:%Y%m%dT%H%M%SZ}-{host}-{device_type}"
    out.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        run_id = base if n == 1 else f"{base}-{n}"
        try:
            (out / run_id).mkdir()
            return run_id, out / run_id
        except FileExistsError:
            continue
    raise RuntimeError(f"could not create a new run directory under {out}")


def _execute_notebook(source: str, target: str, parameters: dict[str, Any], cwd: str, log_output: bool = False) -> None:
    """Child-process body: papermill's Python API, kernel = this interpreter."""
    import papermill as pm

    if log_output:  # papermill logs cell outputs at INFO on its own logger
        logging.basicConfig(level=logging.INFO, format="%(message)s")

    os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    try:
        pm.execute_notebook(source, target, parameters=parameters, kernel_name="python3", progress_bar=not log_output,
                            log_output=log_output, cwd=cwd, report_mode=False)
    except pm.PapermillExecutionError as exc:  # papermill saved the notebook first; say which cell and why
        raise RuntimeError(f"cell {exc.exec_count}: {exc.ename}: {exc.evalue}") from None


def execute(inv: Investigation, parameters: dict[str, Any], run_dir: Path, run_id: str,
            timeout: float = DEFAULT_TIMEOUT, log_output: bool = False) -> NotebookRun:
    """Run one notebook into run_dir; if it fails, save what it wrote and an `error` results.json."""
    run_dir = run_dir.resolve()  # the notebook runs with run_dir as its cwd: paths given to it must be absolute
    notebook = run_dir / f"{inv.name}.ipynb"
    results = run_dir / f"{inv.name}.results.json"
    injected = {**parameters, "results_path": str(results), "run_id": run_id}
    outcome = isolate.run_step(_execute_notebook, str(inv.notebook), str(notebook), injected, str(run_dir), log_output,
                               timeout=timeout, step=inv.name, capture=False)
    error = "" if outcome.ok else (outcome.error or outcome.status)
    if outcome.ok and not results.exists():
        error = "the notebook finished without writing results.json"
    if error:
        results.write_text(json.dumps(
            findings.failed_results(inv.name, run_id, parameters, f"{outcome.status}: {error}", outcome.seconds),
            indent=2))
    return NotebookRun(inv.name, not error, outcome.seconds, notebook, results, error)


def run(plan: list[tuple[Investigation, dict[str, Any]]], out: Path = DEFAULT_OUT,
        timeout: float = DEFAULT_TIMEOUT, log_output: bool = False) -> tuple[Path, list[NotebookRun]]:
    """Execute every (investigation, parameters) pair of a validated plan into a new run directory."""
    device_type = env.fingerprint()["device_type"]
    run_id, run_dir = new_run_dir(out, device_type)
    runs = []
    for i, (inv, params) in enumerate(plan, 1):
        print(f"[{i}/{len(plan)}] {inv.name} {params}", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        result = execute(inv, params, run_dir, run_id, timeout, log_output)
        state = "ok" if result.ok else f"FAILED ({result.error})"
        print(f"[{i}/{len(plan)}] {inv.name}: {state} in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
        runs.append(result)
    (run_dir / "run.json").write_text(json.dumps({
        "run_id": run_id,
        "environment": env.fingerprint(),
        "notebooks": [{"name": r.name, "ok": r.ok, "seconds": round(r.seconds, 2), "error": r.error} for r in runs],
        "seconds": round(sum(r.seconds for r in runs), 2),
    }, indent=2))
    return run_dir, runs
