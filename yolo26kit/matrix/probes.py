"""Probes of `yolo26kit bisect`: what judges one claim on one stack, run in that stack's own Python.

A claim with a claim-level entry point (ENTRY_POINTS: one step of its investigation and the claim's judge, through
the investigation's package) runs that alone; any other claim runs its investigation's notebook with the quick
profile on the CPU (a matrix cell). Either way the probe keeps the verdict, its basis and evidence, the stack's
versions and a page to link.

`python -m yolo26kit.matrix.probes CLAIM OUT` runs an entry point in this interpreter and writes OUT/probe.json and
OUT/probe.html; a failure of the entry point itself is an `error` verdict with basis `none` (nothing measured).
"""

from __future__ import annotations

import html
import importlib
import json
import subprocess
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

PROBE_RECORD = "probe.json"
PROBE_PAGE = "probe.html"
VERSIONS = ("torch", "torchvision", "torchao", "executorch", "ultralytics")


@dataclass(frozen=True)
class EntryPoint:
    """A claim judged in one step: `module.function()` returns the claim's Judgement."""

    module: str
    function: str
    what: str
    behind: str = ""  # the ledger claim this fact decides, when the probe judges a fact rather than a claim


ENTRY_POINTS = {
    "index_dtype.gather_upstreamed": EntryPoint(
        "yolo26kit.investigations.index_dtype.claim_probes", "gather_upstreamed",
        "the installed ultralytics' YOLO26 top-k exported with torch.export and its index ops counted"),
    "index_dtype.split_copy_viewed": EntryPoint(
        "yolo26kit.investigations.index_dtype.claim_probes", "split_copy_viewed",
        "the installed executorch's AOTI view pass on the edge graph the CUDA back-end receives (with split_copy)",
        behind="index_dtype.backbone_static_cuda"),
    "aoti.load_crash_cause": EntryPoint(
        "yolo26kit.investigations.aoti_load.claim_probes", "load_crash_cause",
        "one CPU AOT Inductor package compiled in a child, then loaded and run in a fresh process"),
}


def versions() -> dict[str, str]:
    """The installed releases of the pinned packages (absent ones left out)."""
    from importlib import metadata

    found = {}
    for name in VERSIONS:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def run_entry(claim: str) -> dict[str, Any]:
    """Run a claim's entry point here: its verdict, basis, evidence, data and this stack's versions."""
    entry = ENTRY_POINTS[claim]
    t0 = time.perf_counter()
    try:
        judgement = getattr(importlib.import_module(entry.module), entry.function)()
        found = {"verdict": judgement.verdict, "basis": judgement.basis, "evidence": judgement.evidence,
                 "data": judgement.data, "run": judgement.run}
    except Exception as exc:  # noqa: BLE001 - a probe that breaks measured nothing; the bisect skips it
        found = {"verdict": "error", "basis": "none", "evidence": f"{type(exc).__name__}: {exc}"[:600],
                 "data": {"traceback": traceback.format_exc()[-4000:]}, "run": {}}
    return {"claim": claim, "how": asdict(entry), **found, "versions": versions(),
            "seconds": round(time.perf_counter() - t0, 1)}


def page(record: dict[str, Any]) -> str:
    """probe.html: the claim, its verdict and evidence, the versions, the data (escaped)."""
    esc = html.escape
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(str(v))}</td></tr>" for k, v in record["versions"].items())
    return (f"<!doctype html><meta charset='utf-8'><title>{esc(record['claim'])}</title>"
            f"<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}pre{{white-space:pre-wrap}}</style>"
            f"<h1>{esc(record['claim'])}: {esc(record['verdict'])}</h1><p>basis: {esc(record['basis'])} · "
            f"{record['seconds']} s · {esc(record['how']['what'])}</p><p>{esc(record['evidence'])}</p>"
            f"<table>{rows}</table><h2>data</h2><pre>{esc(json.dumps(record['data'], indent=1, default=str))}</pre>")


def write(out: Path, record: dict[str, Any]) -> None:
    """Keep a probe's record and page in its folder."""
    out.mkdir(parents=True, exist_ok=True)
    (out / PROBE_RECORD).write_text(json.dumps(record, indent=1, default=str) + "\n")
    (out / PROBE_PAGE).write_text(page(record), encoding="utf-8")


# ---------------------------------------------------------------- the driver's side


def _failed(claim: str, why: str) -> dict[str, Any]:
    return {"claim": claim, "verdict": "error", "basis": "none", "evidence": why, "versions": {}, "seconds": 0.0}


def entry_in_stack(claim: str, row: dict[str, Any], out: Path, kit_root: Path, timeout: float) -> dict[str, Any]:
    """Run a claim's entry point in a prepared stack's Python (the checkout on its path); its record and page."""
    from .stacks import child_environ

    out.mkdir(parents=True, exist_ok=True)
    command = [row["python"], "-m", "yolo26kit.matrix.probes", claim, str(out.resolve())]
    with open(out / "probe.log", "w") as logfile:
        try:
            subprocess.run(command, cwd=kit_root, env=child_environ(row["python"], kit_root), stdout=logfile,
                           stderr=subprocess.STDOUT, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {**_failed(claim, f"the probe ran past {timeout:.0f} s"), "page": "probe.log"}
    try:
        return {**json.loads((out / PROBE_RECORD).read_text()), "page": PROBE_PAGE}
    except (OSError, ValueError):
        tail = (out / "probe.log").read_text(errors="replace")[-600:]
        return {**_failed(claim, f"the probe left no record: {tail}"), "page": "probe.log"}


def investigation_of(claim: str, kit_root: Path) -> str | None:
    """The investigation whose ledger (data/claims/*.json) holds the claim."""
    from .cells import ledger_claims

    return next((p.stem for p in sorted((kit_root / "data" / "claims").glob("*.json"))
                 if claim in ledger_claims(kit_root, p.stem)), None)


def notebook_in_stack(claim: str, row: dict[str, Any], out: Path, kit_root: Path, envs: Path | None,
                      timeout: float) -> dict[str, Any]:
    """Run the claim's investigation (quick profile, CPU) in the stack, as a matrix cell; the claim's record."""
    from .cells import Cell, run_cell

    investigation = investigation_of(claim, kit_root)
    if investigation is None:
        return _failed(claim, "the claim is in no ledger")
    cell = run_cell(Cell(row["id"], investigation), row, out, kit_root, envs, timeout)
    run_dir = out / cell["run"] if cell.get("run") else None
    results = run_dir / f"{investigation}.results.json" if run_dir else None
    try:
        data = json.loads(results.read_text()) if results else {}
    except (OSError, ValueError):
        data = {}
    found = next((c for c in data.get("claims", []) if c.get("id") == claim), None)
    if found is None:
        return {**_failed(claim, cell.get("error") or "the run did not judge the claim"), "page": "cell.log"}
    return {"claim": claim, "verdict": found.get("verdict", "error"), "basis": found.get("basis", "none"),
            "evidence": found.get("evidence", ""), "versions": data.get("environment", {}), "seconds": cell["seconds"],
            "page": f"{cell['run']}/index.html#claim-{claim}"}


def main(argv: list[str] | None = None) -> int:
    """`python -m yolo26kit.matrix.probes CLAIM OUT`: 0 when a record was written."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] not in ENTRY_POINTS:
        print(f"usage: python -m yolo26kit.matrix.probes {{{','.join(ENTRY_POINTS)}}} OUT", file=sys.stderr)
        return 2
    record = run_entry(argv[0])
    write(Path(argv[1]), record)
    print(f"{record['claim']}: {record['verdict']} ({record['basis']}) {record['evidence'][:300]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
