"""One judge per claim of data/claims/model_check.json, each reading the run (measure.Run)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ...conclusion import clip
from ...verdicts import Judgement, all_none_some, count_figure
from . import known
from .measure import Row, Run

UNFINISHED = ("timeout", "oom")  # a path that did not finish says nothing about whether it runs


def _first_line(text: str) -> str:
    return next((line.strip() for line in str(text).splitlines() if line.strip()), "")


def _failure(row: Row) -> str:
    return f"{row.case.tag}: {row.final.status} {clip(_first_line(row.final.error), 160)}".strip()


def judge_paths_run(run: Run) -> Judgement:
    """The claim: every path this machine has exports (or compiles), loads and runs the model."""
    tried = run.attempted
    if not tried:
        return Judgement("error", "no path could be attempted on this machine", basis="none")
    ran = [r for r in tried if r.run is not None]
    unfinished = [r for r in tried if r.run is None and r.final.status in UNFINISHED]
    failed = [r for r in tried if r.run is None and r not in unfinished]
    skipped = [f"{r.case.tag} ({r.final.error})" for r in run.rows if r.final.status == "skipped"]
    decided = len(ran) + len(failed)
    evidence = f"{len(ran)} of {len(tried)} paths this machine has ran the model ({', '.join(r.case.tag for r in ran)})"
    evidence += "".join(f"; {_failure(r)}" for r in failed + unfinished)
    evidence += f"; skipped here: {', '.join(skipped)}" if skipped else ""
    verdict = all_none_some(len(ran), decided) if not unfinished or failed else "inconclusive"
    return Judgement(verdict, evidence, {"ran": [r.case.tag for r in ran], "failed": [_failure(r) for r in failed],
                                         "unfinished": [_failure(r) for r in unfinished], "skipped": skipped,
                                         "tried": len(tried)},
                     run={"device": run.device}, figure=count_figure(len(ran), len(tried), "paths", "paths that ran"))


def judge_paths_match_eager(run: Run) -> Judgement:
    """The claim: every path that runs gives eager's outputs (model.compare)."""
    eager = [r for r in run.rows if r.case.path == "eager"]
    if not any(r.run is not None for r in eager):
        return Judgement("error", "eager did not run: nothing to compare with"
                         + "".join(f"; {_failure(r)}" for r in eager), basis="none")
    compared = [r for r in run.rows if r.case.path != "eager" and r.run is not None]
    if not compared:
        return Judgement("inconclusive", "no path besides eager ran here", run={"device": run.device})
    held = [r for r in compared if r.correct]
    reordered = [r.case.tag for r in held if r.delta.get("order_insensitive")]
    worst = max((r.delta.get("max_abs") or 0.0 for r in compared if r.case.tag not in reordered), default=0.0)
    differ = [f"{r.case.tag} (max |Δ| {r.delta.get('max_abs')}{'; ' + r.delta['why'] if r.delta.get('why') else ''})"
              for r in compared if not r.correct]
    evidence = (f"{len(held)} of {len(compared)} paths that ran give eager's outputs (worst max |Δ| {worst:.3g}"
                + (f"; {', '.join(reordered)} the same detections in another order" if reordered else "") + ")"
                + (f"; differ: {', '.join(differ)}" if differ else ""))
    return Judgement(all_none_some(len(held), len(compared)), evidence,
                     {"held": [r.case.tag for r in held], "differ": differ, "compared": len(compared),
                      "max_abs": worst}, run={"device": run.device},
                     figure=count_figure(len(held), len(compared), "paths", "paths matching eager"))


def judge_dynamic_sizes(run: Run) -> Judgement:
    """The claim: the dynamic-shape program answers as eager at every size of its range tried."""
    outcome = run.dynamic
    if not outcome.ok:
        verdict = "error" if outcome.status == "error" else "inconclusive"
        return Judgement(verdict, f"the dynamic export step ended {outcome.status}: {clip(outcome.error, 200)}",
                         basis="none" if verdict == "error" else "measured")
    value: dict[str, Any] = outcome.value
    attempts = value.get("attempts", [])
    if not value.get("recipe"):
        tried = "; ".join(f"{a['recipe']}: {clip(a.get('error'), 160)}" for a in attempts)
        return Judgement("refuted", f"no dynamic export worked, so no program answers at any other size ({tried})",
                         {"recipe": "", "correct": 0, "sizes": 0}, run={"device": run.device},
                         figure=count_figure(0, len(attempts), "dynamic exports", "dynamic export recipes that worked"))
    inside = [s for s in value.get("sweep", []) if s.get("in_range") and s.get("eager") == "ok"]
    if not inside:
        return Judgement("inconclusive", "eager itself refused every size of the range", run={"device": run.device})
    good = [s for s in inside if s.get("correct")]
    size = lambda s: f"{s['batch']}x{s['height']}x{s['width']}" if s.get("height") \
        else f"batch {s['batch']}"  # noqa: E731
    wrong = [size(s) + f" ({s.get('program')}{': ' + clip(s['error'], 80) if s.get('error') else ''})"
             for s in inside if not s.get("correct")]
    outside = [f"{size(s)} {s.get('program')}" for s in value.get("sweep", []) if not s.get("in_range")]
    recipe = "the plain export's program" if value["recipe"] == attempts[0]["recipe"] else \
        "the kit recipe's program (the plain export failed)"
    evidence = (f"{len(good)} of {len(inside)} sizes in range answer as eager with {recipe} "
                f"({', '.join(size(s) for s in good) or 'none'})" + (f"; wrong: {', '.join(wrong)}" if wrong else "")
                + (f"; outside the range: {', '.join(outside)}" if outside else ""))
    return Judgement(all_none_some(len(good), len(inside)), evidence,
                     {"recipe": value["recipe"], "correct": len(good), "sizes": len(inside),
                      "good": [size(s) for s in good], "wrong": wrong, "outside": outside},
                     run={"device": run.device}, figure=count_figure(len(good), len(inside), "sizes",
                                                                   "dynamic sizes answering as eager"))


def hazard_rows(run: Run) -> list[dict[str, Any]]:
    """Each hit with its hazard's words from the known table and its state on this run's stack."""
    paths = {r.case.path: {"status": r.status, "error": r.final.error, "correct": r.correct,
                           **({k: r.run.value.get(k) for k in ("graph_breaks", "cudagraph_skips")} if r.run else {})}
             for r in run.rows}
    left = set(run.scan.value.get("edge_left", [])) if run.scan.ok and isinstance(run.scan.value, dict) else set()
    rows = []
    for hit in run.hits:
        entry = known.KNOWN[hit["hazard"]]
        rows.append({**hit, "title": entry.title, "here": known.state(entry, run.environment, paths, left, hit["op"]),
                     "bites on": known.releases(entry), "what to do": known.workaround(entry),
                     "evidence": ", ".join(entry.claims + ((entry.finding,) if entry.finding else ()))})
    return rows


def judge_known_hazard(run: Run) -> Judgement:
    """The claim: a root cause the kit established is in this model's code (a hit of hazards.HAZARDS)."""
    rows = hazard_rows(run)
    scan, dynamic = run.scan, run.dynamic
    failed_export = scan.ok and isinstance(scan.value, dict) and scan.value.get("export") != "ok"
    lines: dict[str, list[str]] = {}
    for h in rows:
        lines.setdefault(h["hazard"], []).append(h["where"] or "?")
    where = ", ".join(f"{k} at {v[0]}" + (f" (+{len(set(v)) - 1} lines)" if len(set(v)) > 1 else "")
                      for k, v in lines.items())
    biting = sorted({h["hazard"] for h in rows if h["here"].startswith("bites")})
    data = {"hazards": [{k: h[k] for k in ("hazard", "title", "where", "code", "here")} for h in rows],
            "kinds": sorted({h["hazard"] for h in rows}), "biting": biting, "known": len(known.KNOWN)}
    if rows:
        kinds = data["kinds"]
        return Judgement("confirmed", f"{len(kinds)} of the kit's {len(known.KNOWN)} known hazards are in this model's "
                         f"code: {where}; biting on this stack: {', '.join(biting) or 'none'}", data,
                         run={"device": run.device}, figure=count_figure(len(kinds), len(known.KNOWN), "hazards",
                                                                         "known hazards in the model's code"))
    if not scan.ok or not dynamic.ok or failed_export:
        why = f"torch.export failed: {scan.value.get('error')}" if failed_export else \
            "; ".join(f"{o.step} ended {o.status}: {clip(o.error, 120)}" for o in (scan, dynamic) if not o.ok)
        return Judgement("inconclusive", f"no hazard found, but the scan did not see the whole graph ({why})", data,
                         run={"device": run.device})
    nodes = scan.value.get("nodes", 0)
    return Judgement("refuted", f"none of the kit's {len(known.KNOWN)} known hazards is in this model's code ({nodes} "
                     f"graph nodes scanned{', the edge program too' if scan.value.get('edge') else ''}, and the "
                     "dynamic export's guards)", data, run={"device": run.device},
                     figure=count_figure(0, len(known.KNOWN), "hazards", "known hazards in the model's code"))


JUDGES = {
    "model_check.known_hazard": judge_known_hazard,
    "model_check.paths_run": judge_paths_run,
    "model_check.paths_match_eager": judge_paths_match_eager,
    "model_check.dynamic_sizes": judge_dynamic_sizes,
}


def judge(found: Any, run: Run) -> pd.DataFrame:
    """Record every claim's verdict; returns the claims frame."""
    return found.judge_all(JUDGES, run)
