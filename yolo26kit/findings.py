"""Claims, verdicts and evidence; reading and writing results.json (schema 1)."""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd

from . import env

SCHEMA = 1
DATA = Path(__file__).resolve().parents[1] / "data"
VERDICTS = ("confirmed", "refuted", "partly", "not_reproduced", "needs_cuda", "error")


@cache
def seed_claims() -> dict[str, dict[str, str]]:
    """Every claim the seeds make, keyed by id, from data/claims/*.json (id, source, claim)."""
    claims: dict[str, dict[str, str]] = {}
    for path in sorted((DATA / "claims").glob("*.json")):
        for item in json.loads(path.read_text()):
            claims[item["id"]] = item
    return claims


def claims_of(investigation: str) -> list[dict[str, str]]:
    """The claims an investigation must give verdicts for: data/claims/<investigation>.json."""
    path = DATA / "claims" / f"{investigation}.json"
    return json.loads(path.read_text()) if path.exists() else []


@dataclass
class Claim:
    """One claim with the verdict this run computed and the evidence behind it."""

    id: str
    source: str
    claim: str
    verdict: str
    evidence: str
    data: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {VERDICTS}")


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


class Findings:
    """What one notebook run found: claims with verdicts, tables, environment; saves results.json."""

    def __init__(self, investigation: str, parameters: dict[str, Any], run_id: str = "") -> None:
        self.investigation = investigation
        self.parameters = dict(parameters)
        self.run_id = run_id or "interactive"
        self.started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self._t0 = time.perf_counter()
        self.environment = env.fingerprint()
        self.claims: dict[str, Claim] = {}
        self.tables: dict[str, list[dict[str, Any]]] = {}
        self.results_path = ""

    def verdict(self, claim_id: str, verdict: str, evidence: str, **data: Any) -> Claim:
        """Record the verdict of a claim listed in data/claims (its source and words come from there)."""
        known = seed_claims()
        if claim_id not in known:
            raise KeyError(f"claim {claim_id!r} is not in data/claims (known: {', '.join(known)})")
        claim = Claim(claim_id, known[claim_id]["source"], known[claim_id]["claim"], verdict, evidence, jsonable(data))
        self.claims[claim_id] = claim
        return claim

    def table(self, name: str, rows: pd.DataFrame | list[dict[str, Any]]) -> pd.DataFrame:
        """Keep a table for results.json and return it as a DataFrame (so a notebook cell shows it)."""
        frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
        self.tables[name] = jsonable(frame.to_dict(orient="records"))
        return frame

    def frame(self) -> pd.DataFrame:
        """The claims as a DataFrame for display: id, verdict, evidence, claim."""
        return pd.DataFrame(
            [{"claim": c.id, "verdict": c.verdict, "evidence": c.evidence, "seed says": c.claim} for c in self.claims.values()]
        )

    def to_dict(self) -> dict[str, Any]:
        missing = [c["id"] for c in claims_of(self.investigation) if c["id"] not in self.claims]
        return {
            "schema": SCHEMA,
            "investigation": self.investigation,
            "run_id": self.run_id,
            "started": self.started,
            "seconds": round(time.perf_counter() - self._t0, 3),
            "environment": self.environment,
            "parameters": jsonable(self.parameters),
            "claims": [asdict(c) for c in self.claims.values()],
            "missing_claims": missing,
            "tables": self.tables,
        }

    def save(self, path: str | Path = "") -> Path:
        """Write results.json; with no path (interactive use) it goes to ./<investigation>.results.json."""
        target = Path(path or self.results_path or f"{self.investigation}.results.json")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(self.to_dict(), indent=2, allow_nan=False))
        return target


def start(investigation: str, namespace: dict[str, Any]) -> Findings:
    """Begin a notebook's findings from its parameter variables (call with `globals()` after the parameters cell).

    The runner injects `results_path` and `run_id`; interactively they are empty and `save()` writes
    ./<investigation>.results.json.
    """
    from . import catalog

    names = [n for n in catalog.get(investigation).params if n not in catalog.RUNNER_PARAMETERS]
    found = Findings(investigation, {n: namespace[n] for n in names if n in namespace}, namespace.get("run_id", ""))
    found.results_path = namespace.get("results_path", "")
    return found


def failed_results(investigation: str, run_id: str, parameters: dict[str, Any], error: str, seconds: float) -> dict[str, Any]:
    """results.json for a notebook that did not finish: every claim gets `error` with the failure."""
    return {
        "schema": SCHEMA,
        "investigation": investigation,
        "run_id": run_id,
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(seconds, 3),
        "environment": env.fingerprint(),
        "parameters": jsonable(parameters),
        "claims": [
            asdict(Claim(c["id"], c["source"], c["claim"], "error", f"the notebook failed before a verdict: {error}"))
            for c in claims_of(investigation)
        ],
        "missing_claims": [],
        "tables": {},
        "notebook_error": error,
    }


def read_results(path: str | Path) -> dict[str, Any]:
    """Load a results.json and check its schema version."""
    data = json.loads(Path(path).read_text())
    if data.get("schema") != SCHEMA:
        raise ValueError(f"{path}: schema {data.get('schema')!r}, expected {SCHEMA}")
    return data
