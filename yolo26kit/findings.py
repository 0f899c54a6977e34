"""Claims, verdicts and evidence; reading and writing results.json (schema 1)."""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from functools import cache, wraps
from pathlib import Path
from typing import Any

import pandas as pd

from . import env
from .paths import DATA, INTERACTIVE, NOTEBOOK_TAG_ENV
from .verdicts import BASES, VERDICTS, Finding, Judgement, settle

SCHEMA = 1
# Notebooks run by hand (no results_path from the runner) save to paths.INTERACTIVE, among the local runs:
# ignored by git, listed in reports/runs/index.html like any other local run.


@cache
def seed_claims() -> dict[str, dict[str, str]]:
    """Every claim the seeds make, keyed by id, from data/claims/*.json (id, source, claim)."""
    claims: dict[str, dict[str, str]] = {}
    for path in sorted((DATA / "claims").glob("*.json")):
        for item in json.loads(path.read_text()):
            claims[item["id"]] = item
    return claims


def ledger_entry(claim_id: str) -> dict[str, Any]:
    """A claim's ledger entry (id, source, claim, question, and where the seed gives them `conditions`, `band`)."""
    known = seed_claims()
    if claim_id not in known:
        raise KeyError(f"claim {claim_id!r} is not in data/claims (known: {', '.join(known)})")
    return known[claim_id]


def band_of(claim_id: str) -> tuple[float, float]:
    """The band a numeric claim is judged against, from its ledger entry (`band`: lo, hi, unit, the seed's words)."""
    entry = ledger_entry(claim_id)
    if "band" not in entry:
        raise KeyError(f"claim {claim_id!r} has no 'band' in data/claims")
    return float(entry["band"]["lo"]), float(entry["band"]["hi"])


def claims_of(investigation: str) -> list[dict[str, str]]:
    """Every ledger entry of an investigation: data/claims/<investigation>.json (untestable ones included)."""
    path = DATA / "claims" / f"{investigation}.json"
    return json.loads(path.read_text()) if path.exists() else []


def judged_claims_of(investigation: str) -> list[dict[str, str]]:
    """The claims an investigation must give verdicts for: its ledger minus entries marked `untestable`."""
    return [c for c in claims_of(investigation) if not c.get("untestable")]


def write_json(path: str | Path, data: Any) -> Path:
    """Write JSON atomically (a temporary file in the same folder, then os.replace): readers never see half a file."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    # mkstemp makes 0600; results are shared like the pages beside them: 0666 less the umask, read from /proc
    # (os.umask would change it for a moment, for every thread)
    status = Path("/proc/self/status")
    umask = next((int(line.split()[1], 8) for line in (status.read_text().splitlines() if status.exists() else [])
                  if line.startswith("Umask:")), 0o022)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(data, indent=2, allow_nan=False))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


@dataclass
class Claim:
    """One claim with the verdict this run computed and the evidence behind it."""

    id: str
    source: str
    claim: str
    verdict: str
    evidence: str
    data: dict[str, Any] = field(default_factory=dict)
    basis: str = "measured"  # measured | derived (arithmetic on the seed's own numbers) | both | none
    conditions: dict[str, Any] = field(default_factory=dict)  # {seed, run, differ[, irrelevant]}
    figure: dict[str, Any] | None = None  # verdicts.Figure: {value, unit, measures}, the number that answers it

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {VERDICTS}")
        if self.basis not in BASES:
            raise ValueError(f"basis {self.basis!r} is not one of {BASES}")


def jsonable(value: Any) -> Any:
    """Turn numpy/torch scalars, NaN, paths and frames into plain JSON values."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [jsonable(v) for v in value]
    if isinstance(value, pd.DataFrame):
        return jsonable(value.to_dict(orient="records"))
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if hasattr(value, "item") and callable(value.item):
        try:
            return jsonable(value.item())
        except (ValueError, RuntimeError):
            pass
    return str(value)


def _phase_seconds() -> dict[str, float]:
    from .bench import timing  # lazy: timing imports torch, and the CLI reads results without it

    return timing.phase_seconds()


def time_split(wall: float, start: dict[str, float], now: dict[str, float]) -> dict[str, float]:
    """Where a notebook's wall time went: compile and measure seconds since `start`, the rest as `other`.

    compile/measure are sums of step seconds, and steps may run concurrently, so they can exceed the wall
    time together; `other` is then 0.
    """
    compile_s = max(0.0, now.get("compile", 0.0) - start.get("compile", 0.0))
    measure_s = max(0.0, now.get("measure", 0.0) - start.get("measure", 0.0))
    return {"compile": round(compile_s, 3), "measure": round(measure_s, 3),
            "other": round(max(0.0, wall - compile_s - measure_s), 3), "wall": round(wall, 3)}


class Findings:
    """What one notebook run found: claims with verdicts, tables, environment; saves results.json.

    With a `results_path` (the runner gives one) every verdict and table is written at once, so a
    notebook that dies later keeps what it had already judged.
    """

    def __init__(self, investigation: str, parameters: dict[str, Any], run_id: str = "") -> None:
        self.investigation = investigation
        self.parameters = dict(parameters)
        self.run_id = run_id or "interactive"
        self.started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self._t0 = time.perf_counter()
        self._phases0 = _phase_seconds()
        self.environment = env.fingerprint()
        self.claims: dict[str, Claim] = {}
        self.tables: dict[str, list[dict[str, Any]]] = {}
        self.findings: dict[str, dict[str, Any]] = {}  # bugs met that no seed claims, by finding id
        self.results_path = ""
        self.target = env.Target("cpu", ("cpu",))  # replaced by start() from the notebook's device parameter

    @property
    def device(self) -> str:
        """The run's concrete device (cpu or cuda), resolved once by start()."""
        return self.target.device

    @property
    def devices(self) -> list[str]:
        """Every device the run measures on, its device first."""
        return list(self.target.devices)

    def _persist(self) -> None:
        if self.results_path:
            write_json(self.results_path, self.to_dict())

    def verdict(self, claim_id: str, verdict: str | Judgement, evidence: str = "", **data: Any) -> Claim:
        """Record the verdict of a claim listed in data/claims (its source, words and conditions come from there).

        `verdict` is a word with `evidence` and `data`, or a whole Judgement; either way the conditions rule
        (verdicts.settle) is applied against the ledger's `conditions` before it is kept."""
        entry = ledger_entry(claim_id)
        judged = verdict if isinstance(verdict, Judgement) else Judgement(verdict, evidence, data)
        if judged.verdict == "error" and judged.basis == "measured":
            judged = replace(judged, basis="none")  # a step that broke measured nothing
        final, conditions = settle(judged, entry.get("conditions", {}))
        claim = Claim(claim_id, entry["source"], entry["claim"], final.verdict, final.evidence, jsonable(final.data),
                      final.basis, jsonable(conditions), jsonable(final.figure.to_dict()) if final.figure else None)
        self.claims[claim_id] = claim
        for found in final.findings:
            self.finding(found, claim_id)
        self._persist()
        return claim

    def finding(self, found: Finding, claim_id: str = "") -> dict[str, Any]:
        """Record a bug the run met that no seed claims, with the stack it was seen on and the claims it touches
        (a finding met by several judges is kept once, its claims merged)."""
        record = self.findings.setdefault(found.id, {**found.to_dict(), "stack": {
            k: self.environment.get(k) for k in ("device_type", "device", "torch", "executorch", "ultralytics")
            if self.environment.get(k)}})
        for cid in (*found.claims, claim_id):
            if cid and cid not in record["claims"]:
                record["claims"].append(cid)
        self._persist()
        return record

    def judge_all(self, judges: Mapping[str, Callable[[Any], Judgement]], measured: Any) -> pd.DataFrame:
        """Record each claim's verdict from `judges[claim_id](measured)`; a judge that breaks records `error` for its
        claim only (one bug must not hide the other verdicts). Returns the claims frame."""
        for claim_id, judge in judges.items():
            try:
                judged = judge(measured)
                if not isinstance(judged, Judgement):
                    raise TypeError(f"the judge returned {type(judged).__name__}, not a Judgement")
            except Exception as exc:
                judged = Judgement("error", f"judging failed: {type(exc).__name__}: {exc}", basis="none")
            self.verdict(claim_id, judged)
        return self.frame()

    def table(self, name: str, rows: pd.DataFrame | list[dict[str, Any]]) -> pd.DataFrame:
        """Keep a table for results.json and return it as a DataFrame (so a notebook cell shows it)."""
        frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
        self.tables[name] = jsonable(frame.to_dict(orient="records"))
        self._persist()
        return frame

    def record_tables(self, tables: Mapping[str, Callable[[Any], pd.DataFrame]], results: Any) -> dict[str, pd.DataFrame]:
        """Keep every table of an investigation's TABLES (name → function of its results) and return them."""
        return record_tables(self, tables, results)

    def frame(self) -> pd.DataFrame:
        """The claims as a DataFrame for display: id, verdict, evidence, claim."""
        return pd.DataFrame(
            [{"claim": c.id, "verdict": c.verdict, "basis": c.basis, "evidence": c.evidence, "seed says": c.claim}
             for c in self.claims.values()]
        )

    def to_dict(self) -> dict[str, Any]:
        missing = [c["id"] for c in judged_claims_of(self.investigation) if c["id"] not in self.claims]
        wall = time.perf_counter() - self._t0
        return {
            "schema": SCHEMA,
            "investigation": self.investigation,
            "run_id": self.run_id,
            "started": self.started,
            "seconds": round(wall, 3),
            "time_split": time_split(wall, self._phases0, _phase_seconds()),
            "environment": self.environment,
            "parameters": jsonable(self.parameters),
            "claims": [asdict(c) for c in self.claims.values()],
            "missing_claims": missing,
            "findings": jsonable(list(self.findings.values())),
            "tables": self.tables,
        }

    def save(self, path: str | Path = "") -> Path:
        """Write results.json (atomically); with no path at all it goes to reports/runs/interactive/."""
        target = Path(path or self.results_path or INTERACTIVE / f"{self.investigation}.results.json")
        return write_json(target, self.to_dict())


def start(investigation: str, namespace: dict[str, Any]) -> Findings:
    """Begin a notebook's findings from its parameter variables (call with `globals()` after the parameters cell);
    its `device` (and `devices`) are resolved here, once, into `found.device` / `found.devices`.

    The runner injects `results_path` and `run_id`; interactively they are empty and results go to
    reports/runs/interactive/<investigation>.results.json (ignored by git), never next to the notebook.
    """
    from . import catalog
    from .report import display

    display.install()  # the kernel's DataFrames render as curated tables (— for missing values, few columns)
    names = [n for n in catalog.get(investigation).params if n not in catalog.RUNNER_PARAMETERS]
    found = Findings(investigation, {n: namespace[n] for n in names if n in namespace}, namespace.get("run_id", ""))
    if "device" in namespace:
        found.target = env.resolve_target(namespace["device"], namespace.get("devices") or (),
                                          with_cpu=catalog.get(investigation).with_cpu)
        found.parameters["device"] = found.target.device  # what the run measured on, as the runner records it
    found.results_path = namespace.get("results_path", "") or str(INTERACTIVE / f"{investigation}.results.json")
    return found


def failed_results(investigation: str, run_id: str, parameters: dict[str, Any], error: str, seconds: float,
                   partial: dict[str, Any] | None = None) -> dict[str, Any]:
    """results.json for a notebook that did not finish: what it had saved (`partial`) is kept, and every
    claim it had not judged yet gets `error` with the cause."""
    partial = partial if partial and partial.get("schema") == SCHEMA else {}
    kept = [c for c in partial.get("claims", []) if isinstance(c, dict) and c.get("id")]
    judged = {c["id"] for c in kept}
    added = [asdict(Claim(c["id"], c["source"], c["claim"], "error", f"the notebook failed before a verdict: {error}",
                          basis="none", conditions={"seed": c.get("conditions", {}), "run": {}, "differ": []}))
             for c in judged_claims_of(investigation) if c["id"] not in judged]
    return {
        "schema": SCHEMA,
        "investigation": investigation,
        "run_id": run_id,
        "started": partial.get("started") or datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(seconds, 3),
        **({"time_split": partial["time_split"]} if "time_split" in partial else {}),
        "environment": partial.get("environment") or env.fingerprint(),
        "parameters": jsonable(parameters),
        "claims": kept + added,
        "missing_claims": [],
        "findings": partial.get("findings", []),
        "tables": partial.get("tables", {}),
        "notebook_error": error,
    }


def merge_failure(path: str | Path, investigation: str, run_id: str, parameters: dict[str, Any], error: str,
                  seconds: float) -> dict[str, Any]:
    """Rewrite the results.json at `path` of a notebook that failed: keep its saved verdicts, add `error` for the rest."""
    try:
        partial = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        partial = None
    data = failed_results(investigation, run_id, parameters, error, seconds, partial)
    write_json(path, data)
    return data


def read_results(path: str | Path) -> dict[str, Any]:
    """Load a results.json and check its schema version."""
    data = json.loads(Path(path).read_text())
    if data.get("schema") != SCHEMA:
        raise ValueError(f"{path}: schema {data.get('schema')!r}, expected {SCHEMA}")
    return data


def record_tables(found: Any, tables: Mapping[str, Callable[[Any], pd.DataFrame]], results: Any) -> dict[str, pd.DataFrame]:
    """Each table of TABLES made from the results and kept through `found.table`; returns them by name."""
    made = {name: make(results) for name, make in tables.items()}
    for name, frame in made.items():
        found.table(name, frame)
    return made


def interactive_only(explorer: Callable[..., Any]) -> Callable[..., Any]:
    """An explorer widget in JupyterLab, a line of Markdown in a batch run (a kernel the runner started): there nobody
    can use the widget, the rendered report cannot run it, and a widget cell can hang the batch's notebook client
    (jupyter/nbclient#312: seen here as an index_dtype notebook stuck 855 s in its explorer cell)."""
    @wraps(explorer)
    def shown(*args: Any, **kwargs: Any) -> Any:
        if os.environ.get(NOTEBOOK_TAG_ENV):
            from IPython.display import Markdown

            return Markdown(f"*`{explorer.__name__}`: an interactive widget, left out of batch runs; open the notebook "
                            "in JupyterLab to use it.*")
        return explorer(*args, **kwargs)
    return shown
