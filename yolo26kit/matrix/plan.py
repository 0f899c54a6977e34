"""Stack matrix: the same claims across PyTorch / ExecuTorch / ultralytics stacks (`yolo26kit matrix`).

A stack is a set of pins (torch and the executorch / torchvision / torchao / ultralytics releases that go with
it; `data/stacks.json` lists the default ones). Each stack gets one isolated environment, a cell is one
investigation of one stack on one device, and the matrix gathers every cell's verdicts in one claim × stack table.

Decisions:

- Claims: every claim of the chosen investigations that some stack judges (a verdict other than `needs_cuda`);
  `--all-claims` keeps the rest. Claims that no stack judged are listed under `not_judged`.
- "Since which release": `data/stacks.json` orders stacks in series (torch releases; ultralytics releases on
  one torch); for each claim and series, the first stack whose verdict differs from the stack before it.

The stacks and their environments are in stacks.py, the cells and how the kit's executors (run/executors.py) run
them in cells.py; this module keeps the table, the page and the command line, and re-exports the public names of
both.
"""

from __future__ import annotations

import argparse
import signal
import time
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from ..bench.artifacts import read_json_object
from ..paths import DEFAULT_OUT, new_run_dir
from ..report.matrix_page import listing, render
from .cells import (CELL_RECORD, CELL_TIMEOUT, PLAN, RAY_EXCLUDES, STOP_GRACE, Cell, LocalExecutor, RayExecutor,
                    finished_cells, ledger_claims, plan_cells, run_cell)
from .stacks import (CHECK, CHECK_TIMEOUT, CHILD_ENV, CORE_IMPORTS, EXTRA_IMPORTS, INSTALL_TIMEOUT, MARKER, PINNED,
                     ROOT, STACKS_FILE, STATES_RUN, MatrixError, Stack, check, child_environ, choose, clean,
                     default_envs, disk_bytes, env_dir, env_key, kit_dependencies, load_stacks, prepare,
                     requirements, stack_pins_match, uv_binary)

__all__ = ["ROOT", "STACKS_FILE", "MARKER", "SCHEMA", "CORE_IMPORTS", "EXTRA_IMPORTS", "PINNED", "INSTALL_TIMEOUT",
           "CHECK_TIMEOUT", "CELL_TIMEOUT", "STATES_RUN", "CHILD_ENV", "RAY_EXCLUDES", "MatrixError", "Stack",
           "load_stacks", "choose", "default_envs", "uv_binary", "kit_dependencies", "requirements", "env_key",
           "disk_bytes", "CHECK", "child_environ", "check", "stack_pins_match", "env_dir", "prepare", "clean", "Cell",
           "ledger_claims", "PLAN", "CELL_RECORD", "STOP_GRACE", "finished_cells", "run_cell", "LocalExecutor",
           "RayExecutor", "changes", "assemble", "VOLATILE_STACK", "VOLATILE_CELL", "comparable", "render", "listing",
           "split_params", "investigations_of", "run_matrix", "add_subcommand", "main", "summary"]

SCHEMA = 1


# ---------------------------------------------------------------- the table


def changes(claims: dict[str, dict[str, str]], series: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
    """For each claim and series: the first stack whose verdict differs from the stack before it (None: no change).

    Stacks without a verdict for the claim (not installed, not run) are skipped, not counted as a change.
    """
    found: dict[str, dict[str, Any]] = {}
    for cid, by_stack in claims.items():
        found[cid] = {}
        for name, members in series.items():
            judged = [(s, by_stack[s]) for s in members if s in by_stack]
            first = next(({"stack": s, "from": judged[i - 1][1], "to": v, "after": judged[i - 1][0]}
                          for i, (s, v) in enumerate(judged) if i and v != judged[i - 1][1]), None)
            if len(judged) > 1:
                found[cid][name] = first
    return found


def assemble(rows: list[dict[str, Any]], records: list[dict[str, Any]], series: dict[str, list[str]],
             investigations: list[str], kit_root: Path, all_claims: bool = False) -> dict[str, Any]:
    """matrix.json's content (less `run`): stacks, claims, changes, cells, not_judged."""
    order = [cid for inv in investigations for cid in ledger_claims(kit_root, inv)]
    every: dict[str, dict[str, str]] = {}
    for record in records:
        for cid, verdict in record["verdicts"].items():
            every.setdefault(cid, {})[record["stack"]] = verdict
    ids = [r["id"] for r in rows]
    ordered = [c for c in order if c in every] + sorted(c for c in every if c not in order)
    every = {c: {s: every[c][s] for s in ids if s in every[c]} for c in ordered}
    judged = {c: v for c, v in every.items() if all_claims or any(x != "needs_cuda" for x in v.values())}
    in_series = {name: [s for s in members if s in ids] for name, members in series.items()}
    in_series = {k: v for k, v in in_series.items() if len(v) > 1}
    if not in_series:
        in_series = {"stacks": ids}
    stacks = [{k: v for k, v in r.items() if not k.startswith("_") and k != "python"} for r in rows]
    return {
        "schema": SCHEMA,
        "stacks": stacks,
        "claims": judged,
        "changes": changes(judged, in_series),
        "series": in_series,
        "not_judged": {c: "needs_cuda on every stack that ran it" for c in every if c not in judged},
        "cells": [{**{k: v for k, v in r.items() if k != "verdicts"}, "claims": list(r["verdicts"])} for r in records],
    }


VOLATILE_STACK = ("install",)
VOLATILE_CELL = ("seconds", "run", "node")


def comparable(matrix: dict[str, Any]) -> dict[str, Any]:
    """matrix.json less what depends on the executor or the clock: what two executors must agree on."""
    out = {k: v for k, v in matrix.items() if k not in ("run", "matrix_id")}
    out["stacks"] = [{k: v for k, v in s.items() if k not in VOLATILE_STACK} for s in matrix["stacks"]]
    out["cells"] = [{k: v for k, v in c.items() if k not in VOLATILE_CELL} for c in matrix["cells"]]
    return out


# ---------------------------------------------------------------- the whole call


def split_params(pairs: list[str], investigations: list[str], kit_root: Path) -> dict[str, list[str]]:
    """Each `-p KEY=VALUE` goes to the investigations whose notebook has KEY; a key none has is bad input."""
    from .. import catalog

    params = {inv: catalog.notebook_params(kit_root / "notebooks" / f"{inv}.ipynb") for inv in investigations}
    routed: dict[str, list[str]] = {inv: [] for inv in investigations}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise MatrixError(f"-p expects KEY=VALUE, got {pair!r}")
        owners = [inv for inv in investigations if key in params[inv] and key not in catalog.RUNNER_PARAMETERS]
        if not owners:
            raise MatrixError(f"parameter {key!r} belongs to none of {investigations}")
        for inv in owners:
            try:
                catalog.coerce(params[inv][key], catalog.parse_value(value), where=inv)
            except Exception as exc:  # noqa: BLE001 - BadParameter: say it as matrix input
                raise MatrixError(str(exc)) from None
            routed[inv].append(f"{key}={value}")
    return routed


def investigations_of(kit_root: Path, names: list[str]) -> list[str]:
    """The named investigations, else every one with a notebook and a ledger (sorted)."""
    known = sorted(p.stem for p in (kit_root / "notebooks").glob("*.ipynb")
                   if (kit_root / "data" / "claims" / f"{p.stem}.json").exists())
    if not names:
        return known
    unknown = [n for n in names if n not in known]
    if unknown:
        raise MatrixError(f"unknown investigation(s) {unknown} (known: {', '.join(known)})")
    return names


def run_matrix(stacks: list[Stack], series: dict[str, list[str]], investigations: list[str], *, out: Path,
               device: str = "cpu", profile: str = "quick", params: list[str] | None = None,
               envs: str | Path | None = None, executor: Any = None, kit_root: str | Path = ROOT,
               timeout: float = CELL_TIMEOUT, all_claims: bool = False, resume: Path | None = None,
               log: Callable[[str], None] = print) -> tuple[Path, dict[str, Any]]:
    """Prepare every stack, run every cell, write matrix.json and matrix.html; returns (folder, matrix).

    `resume`: an earlier matrix folder; its finished cells are kept and only the others run. Interrupted
    (Ctrl-C, SIGTERM), the matrix is written from the cells that finished, with state "interrupted".
    """
    t0 = time.perf_counter()
    kit_root = Path(kit_root).resolve()
    envs_path = Path(envs).expanduser().resolve() if envs else None
    if device not in ("cpu", "cuda"):
        raise MatrixError(f"--device must be cpu or cuda, got {device!r}")
    routed = split_params(params or [], investigations, kit_root)
    executor = executor or LocalExecutor(log)
    if resume:
        matrix_dir = Path(resume)
        matrix_id = matrix_dir.name.removeprefix("matrix-")
    else:
        matrix_id, matrix_dir = new_run_dir(Path(out), device, prefix="matrix-")
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    log(f"matrix {matrix_id}: {len(stacks)} stacks × {len(investigations)} investigations on {device} "
        f"({executor.name} executor)")
    interrupted = False
    earlier = read_json_object(matrix_dir / "matrix.json").get("run", {}) if resume else {}
    from .. import findings

    findings.write_json(matrix_dir / PLAN, {"stacks": [s.id for s in stacks], "investigations": investigations,
                                           "device": device, "profile": profile, "params": params or [],
                                           "all_claims": all_claims})
    try:
        rows = executor.prepare(stacks, envs_path, kit_root)
        for stack, row in zip(stacks, rows):
            row["_stack"] = asdict(stack)
        by_id = {r["id"]: r for r in rows}
        cells = plan_cells(rows, investigations, device, profile, routed)
        kept = finished_cells(matrix_dir)
        todo = [c for c in cells if (c.stack, c.investigation) not in kept]
        if kept:
            log(f"resuming: {len(cells) - len(todo)} cell(s) already done, {len(todo)} to run")
        try:
            fresh = executor.run(todo, by_id, matrix_dir, kit_root, envs_path, timeout)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: keep every finished cell, say how to go on
            interrupted = True
            fresh = []
        kept.update(finished_cells(matrix_dir))  # cells that finished before an interruption
        kept.update({(r["stack"], r["investigation"]): r for r in fresh})
        records = [kept[(c.stack, c.investigation)] for c in cells if (c.stack, c.investigation) in kept]
    finally:
        close = getattr(executor, "close", None)
        if close:
            close()
    matrix = assemble(rows, records, series, investigations, kit_root, all_claims)
    matrix["parameters"] = {"investigations": investigations, "device": device, "profile": profile,
                            "params": params or [], "all_claims": all_claims}
    matrix["state"] = "interrupted" if interrupted else "complete"
    matrix["run"] = {"matrix_id": matrix_id, "executor": executor.name, "started": started,
                     "wall_seconds": round(time.perf_counter() - t0 + earlier.get("wall_seconds", 0.0), 1),
                     "calls": earlier.get("calls", 0) + 1,
                     "cell_seconds": {c["stack"]: round(sum(x["seconds"] for x in records if x["stack"] == c["stack"]), 1)
                                      for c in records},
                     "envs": str(envs_path or default_envs())}
    findings.write_json(matrix_dir / "matrix.json", matrix)
    render(matrix_dir, matrix)
    return matrix_dir, matrix


# ---------------------------------------------------------------- command line


def add_subcommand(sub: Any) -> None:
    """`yolo26kit matrix`: registered by cli.parser()."""
    p = sub.add_parser("matrix", help="the same claims across several stacks (pins): one claim × stack table")
    p.add_argument("names", nargs="*", metavar="NAME", help="investigations (default: every one)")
    p.add_argument("--stacks", default="", help="comma-separated stack ids (default: the file's default stacks)")
    p.add_argument("--stacks-file", default="", metavar="FILE", help="stacks file (default data/stacks.json)")
    p.add_argument("--device", default="cpu", help="cpu (the default) or cuda")
    p.add_argument("--profile", default="quick", help="profile of every cell (default quick)")
    p.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE",
                   help="a notebook parameter, given to every investigation that has it")
    p.add_argument("--out", default="", help="parent folder of matrix-<id>/ (default reports/runs)")
    p.add_argument("--envs", default="", metavar="DIR",
                   help="where stack environments live (default <compile cache>/matrix-envs)")
    p.add_argument("--executor", default="local", choices=("local", "ray"),
                   help="local (default) or ray (a local Ray, or the cluster at RAY_ADDRESS)")
    p.add_argument("--cell-cpus", type=float, default=None, help="Ray: CPUs per CPU cell (default: all of a local Ray)")
    p.add_argument("--timeout", type=float, default=CELL_TIMEOUT, help="seconds per cell")
    p.add_argument("--all-claims", action="store_true", help="keep claims that every stack marked needs_cuda")
    p.add_argument("--resume", default="", metavar="DIR",
                   help="go on with an interrupted matrix folder: its finished cells are kept, the rest run")
    p.add_argument("--prepare", action="store_true", help="only create/check the stacks' environments")
    p.add_argument("--clean", action="store_true", help="remove the stack environments (those of --stacks, or all)")
    p.set_defaults(fn=main)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(args: argparse.Namespace) -> int:
    """The `matrix` subcommand: 0 every cell ran, 1 a stack or cell failed; bad input (MatrixError) is the
    CLI's exit 2."""
    stacks, series = load_stacks(args.stacks_file or None)
    wanted = [s.strip() for s in args.stacks.split(",") if s.strip()]
    if args.clean:
        removed, freed = clean(args.envs or None, choose(stacks, wanted) if wanted else None)
        print(f"removed {len(removed)} stack environment(s), {freed / 2**30:.1f} GiB freed")
        return 0
    chosen = choose(stacks, wanted)
    if args.prepare:
        rows = LocalExecutor().prepare(chosen, Path(args.envs) if args.envs else None, ROOT)
        for r in rows:
            size = r["install"].get("disk_bytes")
            print(f"{r['id']}: {r['state']}{' — ' + r['reason'] if r['reason'] else ''}"
                  f" ({r['install'].get('seconds')} s, {size / 2**30 if size else 0:.1f} GiB)")
        return 0 if all(r["state"] in STATES_RUN for r in rows) else 1
    investigations = investigations_of(ROOT, args.names)
    options = {"device": args.device, "profile": args.profile, "params": args.param,
               "all_claims": args.all_claims}
    resume = None
    if args.resume:
        resume = Path(args.resume)
        plan = read_json_object(resume / PLAN)
        if not plan:
            raise MatrixError(f"{resume} is not a matrix folder (no readable {PLAN})")
        chosen = choose(stacks, plan["stacks"])
        investigations = investigations_of(ROOT, plan["investigations"])
        options = {k: plan[k] for k in options}
    executor = (RayExecutor(cell_cpus=args.cell_cpus) if args.executor == "ray" else LocalExecutor())

    signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM stops like Ctrl-C: finished cells are kept
    matrix_dir, matrix = run_matrix(chosen, series, investigations, out=Path(args.out) if args.out else DEFAULT_OUT,
                                    envs=args.envs or None, executor=executor, timeout=args.timeout,
                                    resume=resume, **options)
    print(summary(matrix))
    print(f"matrix: {matrix_dir / 'matrix.html'}")
    if matrix["state"] == "interrupted":
        print(f"interrupted: go on with `yolo26kit matrix --resume {matrix_dir}`")
        return 130
    bad = [s for s in matrix["stacks"] if s["state"] not in STATES_RUN] + \
        [c for c in matrix["cells"] if c["state"] != "done"]
    return 1 if bad else 0


def summary(matrix: dict[str, Any]) -> str:
    """A few lines: each stack's state, the claims judged and those whose verdict changes."""
    lines = []
    for s in matrix["stacks"]:
        lines.append(f"  {s['id']}: {s['state']}" + (f" — {s['reason']}" if s["reason"] else ""))
    changed = [c for c, by in matrix["changes"].items() if any(by.values())]
    lines.append(f"{len(matrix['claims'])} claims judged; verdict changes across stacks: "
                 + (", ".join(changed) if changed else "none"))
    return "\n".join(lines)
