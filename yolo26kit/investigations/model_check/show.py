"""The tables of model_check, the answers first: which paths work, the fastest correct one, the dynamic sizes, the
hazards that apply; then the paths, the dynamic export and each hazard at its file:line with what to do."""

from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from ... import backends, findings
from ...conclusion import clip
from . import known
from .judge import hazard_rows
from .measure import Row, Run


def _round(value: Any, digits: int = 3) -> Any:
    return round(value, digits) if isinstance(value, float) else value


def row_dict(row: Row) -> dict[str, Any]:
    """One path's line: did it build, run and match eager; latency; first call; artifact size; what failed."""
    value = row.run.value if row.run else {}
    build = row.build
    size = build.value.get("bytes") if build is not None and build.ok and isinstance(build.value, dict) else None
    return {"path": row.case.path, "title": backends.get(row.case.path).title, "device": row.case.device,
            "provider": row.case.provider.replace("ExecutionProvider", ""), "status": row.status,
            "correct": row.correct if row.run else None, "max_abs": _round(row.delta.get("max_abs"), 6),
            "matched": _round(row.delta.get("matched")), "median_ms": _round(row.median_ms),
            "p10_ms": _round(value.get("p10_ms")), "p90_ms": _round(value.get("p90_ms")),
            "first_call_s": _round(value.get("first_call_s")),
            "build_s": _round(build.seconds, 2) if build is not None else None,
            "artifact_mib": _round(size / 2**20, 2) if size else None,
            "options": build.value.get("backend_options", "") if build is not None and build.ok and
            isinstance(build.value, dict) else "",
            "graph_breaks": value.get("graph_breaks") if row.case.path.startswith("compile") else None,
            "cudagraph_skips": value.get("cudagraph_skips") if row.case.path == "compile_cudagraphs" else None,
            "aoti_load": row.final.details.get("aoti_load", "") if row.case.path == "aoti" else "",
            "failed step": "" if row.run or row.status == "skipped" else row.final.step,
            "error": clip(row.final.error, 200) if not row.run else clip(row.delta.get("why", ""), 200),
            "cause": row.final.details.get("cause", "")}


def paths_frame(run: Run) -> pd.DataFrame:
    """The `paths` table: one line per path and device."""
    return pd.DataFrame([row_dict(r) for r in run.rows])


def fastest(run: Run) -> Row | None:
    """The fastest path that ran and matched eager on the run's device (else on any device)."""
    good = [r for r in run.rows if r.correct and r.median_ms]
    mine = [r for r in good if r.case.device == run.device] or good
    return min(mine, key=lambda r: r.median_ms) if mine else None


def _eager_ms(run: Run, device: str) -> float | None:
    return next((r.median_ms for r in run.rows if r.case.path == "eager" and r.case.device == device), None)


def dynamic_export_frame(run: Run) -> pd.DataFrame:
    """The `dynamic_export` table: the plain dynamic export and, where it failed, the kit's recipe."""
    value = run.dynamic.value if run.dynamic.ok and isinstance(run.dynamic.value, dict) else {}
    rows = [{"recipe": a["recipe"], "dynamic_shapes": a["dynamic_shapes"], "example": a["example"],
             "status": a["status"], "seconds": _round(a.get("seconds"), 2),
             "ranges": "; ".join(f"{k}: {v}" for k, v in (a.get("ranges") or {}).items()),
             "guards that failed": len(a.get("violations", [])), "error": clip(a.get("error"), 200)}
            for a in value.get("attempts", [])]
    if not run.dynamic.ok:
        rows = [{"recipe": "", "status": run.dynamic.status, "error": clip(run.dynamic.error, 200)}]
    return pd.DataFrame(rows)


def dynamic_sizes_frame(run: Run) -> pd.DataFrame:
    """The `dynamic_sizes` table: the dynamic program against eager at each size tried, and one past the range."""
    value = run.dynamic.value if run.dynamic.ok and isinstance(run.dynamic.value, dict) else {}
    return pd.DataFrame([{**s, "max_abs": _round(s.get("max_abs"), 6), "error": clip(s.get("error"), 160)}
                         for s in value.get("sweep", [])])


def hazards_frame(run: Run) -> pd.DataFrame:
    """The `hazards` table: each hazard at each line of the model's code, what it means here and what to do."""
    columns = ("hazard", "title", "where", "function", "code", "what", "nodes", "here", "bites on", "what to do",
               "evidence")
    return pd.DataFrame([{k: h.get(k) for k in columns} for h in hazard_rows(run)], columns=list(columns))


def _paths_answer(run: Run) -> str:
    good = [r.case.tag for r in run.rows if r.correct and r.case.path != "eager"]
    bad = [f"{r.case.tag} ({r.status if not r.run else 'differs from eager'})" for r in run.attempted
           if r.case.path != "eager" and not r.correct]
    skipped = [f"{r.case.tag} ({r.final.error})" for r in run.rows if r.final.status == "skipped"]
    parts = [f"run and match eager: {', '.join(good) or 'none'}"]
    parts += [f"fail: {', '.join(bad)}"] if bad else []
    parts += [f"not run here: {', '.join(skipped)}"] if skipped else []
    return "; ".join(parts)


def _fastest_answer(run: Run) -> str:
    best = fastest(run)
    if best is None:
        return "no path both ran and matched eager"
    eager = _eager_ms(run, best.case.device)
    ratio = f", {eager / best.median_ms:.3g}× eager's {eager:.3g} ms" if eager and best.case.path != "eager" else ""
    return f"{best.case.tag}: {best.median_ms:.3g} ms median at {run.batch}x{run.imgsz}x{run.imgsz}{ratio}"


def _dynamic_answer(run: Run) -> str:
    value = run.dynamic.value if run.dynamic.ok and isinstance(run.dynamic.value, dict) else {}
    if not run.dynamic.ok:
        return f"the dynamic export step ended {run.dynamic.status}"
    attempts = value.get("attempts", [])
    plain = attempts[0] if attempts else {}
    sites = sorted({v["site"]["file"] + ":" + str(v["site"]["line"]) for v in plain.get("violations", [])
                    if v.get("site")})
    said = "the plain export works" if plain.get("status") == "ok" else \
        f"the plain export fails ({len(plain.get('violations', []))} guards at {', '.join(sites) or '?'})"
    if not value.get("recipe"):
        return said + "; the kit's recipe fails too"
    inside = [s for s in value.get("sweep", []) if s.get("in_range") and s.get("eager") == "ok"]
    good = [s for s in inside if s.get("correct")]
    recipe = "" if value["recipe"] == plain.get("recipe") else "; the kit's recipe (32*Dim) exports"
    return f"{said}{recipe}; the program answers as eager at {len(good)} of {len(inside)} sizes"


def _scan_failure(run: Run) -> str:
    """Why the hazard scan saw no graph ('' when it saw one): its step's end, or torch.export's error and line."""
    if not run.scan.ok:
        return f"the hazard scan ended {run.scan.status}: {clip(run.scan.error, 160)}"
    value = run.scan.value if isinstance(run.scan.value, dict) else {}
    if value.get("export") == "ok":
        return ""
    site = value.get("site") or {}
    where = f" at {site.get('file')}:{site.get('line')}" if site else ""
    return f"torch.export of the model failed{where}: {clip(value.get('error'), 160)}"


def _hazards_answer(run: Run) -> str:
    rows = hazard_rows(run)
    failed = _scan_failure(run)
    if failed and not rows:
        return failed
    if not rows:
        return f"none of the kit's {len(known.KNOWN)} known hazards is in this model's code"
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for h in rows:
        by_kind.setdefault(h["hazard"], []).append(h)
    return "; ".join(f"{k} at {', '.join(dict.fromkeys(h['where'] for h in hs))} ({hs[0]['here']})"
                     for k, hs in by_kind.items())


ANSWERS: dict[str, Callable[[Run], str]] = {
    "Which paths work here?": _paths_answer,
    "The fastest correct path": _fastest_answer,
    "Dynamic batch, height and width": _dynamic_answer,
    "Known hazards in this model": _hazards_answer,
}


def answers_frame(run: Run) -> pd.DataFrame:
    """The `answers` table: what a reader wants first, one line per question."""
    return pd.DataFrame([{"question": q, "answer": fn(run)} for q, fn in ANSWERS.items()])


def hazard_notes(run: Run) -> Any:
    """Each hazard found, as Markdown: what it does, every line it is at, the releases, this stack, what to do."""
    from IPython.display import Markdown

    rows = hazard_rows(run)
    if _scan_failure(run) and not rows:
        return Markdown(_scan_failure(run) + ".")
    if not rows:
        return Markdown(f"No known hazard in this model's code ({len(known.KNOWN)} detectors: "
                        f"{', '.join(f'`{k}`' for k in known.KNOWN)}).")
    parts = []
    for hazard in dict.fromkeys(h["hazard"] for h in rows):
        entry, hits = known.KNOWN[hazard], [h for h in rows if h["hazard"] == hazard]
        lines = [f"### {entry.title} (`{hazard}`)", "", entry.effect + ".", ""]
        lines += [f"- `{h['where'] or '?'}` in `{h['function']}`: `{h['code']}` — {h['what']}"
                  + (f" ({h['nodes']} nodes)" if h["nodes"] > 1 else "") for h in hits]
        lines += ["", f"**Bites on:** {known.releases(entry)}. **Here:** {hits[0]['here']}.",
                  f"**What to do:** {known.workaround(entry)}.", f"**Evidence:** {hits[0]['evidence']}"
                  + (f"; upstream: {', '.join(known.links(entry))}" if known.links(entry) else "") + "."]
        parts.append("\n".join(lines))
    return Markdown("\n\n".join(parts))


# Every table of results.json, in the notebook's order: name → the function of the run that makes it.
TABLES: dict[str, Callable[[Run], pd.DataFrame]] = {
    "answers": answers_frame,
    "paths": paths_frame,
    "hazards": hazards_frame,
    "dynamic_export": dynamic_export_frame,
    "dynamic_sizes": dynamic_sizes_frame,
}


def record_tables(found: Any, run: Run) -> dict[str, pd.DataFrame]:
    """Keep every table of TABLES in results.json and return them for display."""
    return findings.record_tables(found, TABLES, run)
