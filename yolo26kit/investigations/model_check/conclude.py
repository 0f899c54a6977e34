"""The conclusion of model_check: which known hazards are in the model's code, which paths run it as eager does (and
at which dynamic sizes) and the fastest correct path; the headline figure is the paths-match claim's own (see
yolo26kit/conclusion.py).

Imported without torch (the pages render without it): only the kit's conclusion helpers.
"""

from __future__ import annotations

from typing import Any

from ...conclusion import UNDECIDED, View, num, plain

# Any device shows whether a hazard is in the model's code; the paths are those the run's device has.
DEVICE = "any"
HAZARD, RUNS, MATCH, DYNAMIC = ("model_check.known_hazard", "model_check.paths_run", "model_check.paths_match_eager",
                                "model_check.dynamic_sizes")


def _hazards(r: View) -> str:
    found: Any = r.data(HAZARD, "hazards")
    if r.v(HAZARD) == "refuted":
        return f"Not one of the kit's {r.data(HAZARD, 'known')} known hazards is in this model's code."
    if r.v(HAZARD) != "confirmed" or not isinstance(found, list):
        return plain(r, HAZARD, "A known hazard is in this model's code")
    by_kind: dict[str, list[str]] = {}
    for h in found:
        if isinstance(h, dict):
            by_kind.setdefault(str(h.get("hazard")), []).append(str(h.get("where") or "?"))
    kinds = ", ".join(f"{k} at {w[0]}" + (f" (+{len(set(w)) - 1} lines)" if len(set(w)) > 1 else "")
                      for k, w in by_kind.items())
    biting = r.data(HAZARD, "biting") or []
    return f"Known hazards in this model's code: {kinds} (biting on this stack: {', '.join(biting) or 'none'})."


def conclude(r: View) -> tuple[dict[str, str], dict[str, str] | None]:
    """Sentences by question and the headline figure of one model_check run; each needs its claim's verdict."""
    out = {"bites": _hazards(r)}
    ran, tried = r.data(RUNS, "ran"), r.data(RUNS, "tried")
    fixes = []
    if r.v(RUNS) not in UNDECIDED and isinstance(ran, list) and isinstance(tried, int):
        fixes.append(f"{len(ran)} of {tried} paths this machine has run the model")
    held, compared = r.data(MATCH, "held"), r.data(MATCH, "compared")
    if r.v(MATCH) not in UNDECIDED and isinstance(held, list) and isinstance(compared, int):
        fixes.append(f"{len(held)} of {compared} give eager's outputs")
    good, sizes = r.data(DYNAMIC, "correct"), r.data(DYNAMIC, "sizes")
    if r.v(DYNAMIC) not in UNDECIDED and isinstance(good, int) and isinstance(sizes, int):
        recipe = r.data(DYNAMIC, "recipe")
        fixes.append(f"the dynamic program ({recipe}) answers as eager at {good} of {sizes} sizes" if recipe
                     else "no dynamic export worked")
    joined = "; ".join(fixes)
    out["fix"] = joined[:1].upper() + joined[1:] + "." if fixes else plain(r, RUNS, "Every path runs the model")
    best = [row for row in r.table("paths") if row.get("correct") and isinstance(row.get("median_ms"), (int, float))]
    best.sort(key=lambda row: (str(row.get("device")) != r.device, row["median_ms"]))
    if best:  # the paths table's own median; no ratio is computed here (a page computes no statistic)
        row = best[0]
        out["cost"] = f"The fastest correct path is {row['path']} on {row.get('device')}: {num(row['median_ms'])} ms."
    # the headline is the paths-match claim's own figure, captioned by what it measures
    figure = {"claim": MATCH, "label": ""}
    return out, figure


__all__ = ["DEVICE", "conclude"]
