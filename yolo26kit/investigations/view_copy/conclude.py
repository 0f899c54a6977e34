"""The conclusion of view_copy: what a run found, in 2–4 sentences and a headline figure (see yolo26kit/conclusion.py).

Imported without torch (the pages render without it): only the kit's conclusion helpers.
"""

from __future__ import annotations

import statistics

from ...conclusion import count, num, numbers, plain, PLAIN, span, UNDECIDED, View

# The device class the bug needs when a ledger entry names no conditions.device ("any": every device shows it).
# figures from judgement data, for claims whose judge returned none (see conclusion.data_figure)
FIGURES = {
    "view_copy.edge_introduces_slice_copy": lambda d: {
        "value": sum(int(m["edge_slice_copy"]) for m in d.values() if isinstance(m, dict) and "edge_slice_copy" in m),
        "unit": "slice_copy in the edge graphs", "measures": "slice_copy nodes the back-end's edge graphs hold"},
    "view_copy.replaces_slice_copy": lambda d: count(d["became_slice"], d["non_mutated"], "slice_copy become views",
                                                     "non-mutated slice_copy nodes the pass turns into aten.slice"),
}

DEVICE = "any"


def _per_model(r: View, cid: str, key: str) -> list[int]:
    """A count the judge kept per model in its data ({model: {key: n}})."""
    data = (r.claims.get(cid) or {}).get("data") or {}
    return [int(v[key]) for v in data.values() if isinstance(v, dict) and isinstance(v.get(key), int)]


def conclude(r: View) -> tuple[dict[str, str], dict[str, str] | None]:
    """Sentences by question and the headline figure of one view_copy run."""
    out: dict[str, str] = {}
    edge_counts = _per_model(r, "view_copy.edge_introduces_slice_copy", "edge_slice_copy")
    edge = (sum(edge_counts),) if edge_counts else None
    after = _per_model(r, "view_copy.reinplace_misses_slice_copy", "slice_copy_after_post_grad")
    still = (sum(after), sum(_per_model(r, "view_copy.reinplace_misses_slice_copy", "slice_copy_edge"))) if after else None
    if edge and r.v("view_copy.edge_introduces_slice_copy") in ("confirmed", "partly"):
        tail = (f", and {still[0]} of {still[1]} survive Inductor's post-grad passes"
                if still and r.v("view_copy.reinplace_misses_slice_copy") not in UNDECIDED else "")
        out["bites"] = f"The edge dialect turns slices into copies here: {edge[0]} slice_copy nodes in the edge graph{tail}."
    elif r.v("view_copy.edge_introduces_slice_copy"):
        out["bites"] = plain(r, "view_copy.edge_introduces_slice_copy", "The edge dialect introduces slice_copy")
    became, free = r.data("view_copy.replaces_slice_copy", "became_slice"), r.data("view_copy.replaces_slice_copy", "non_mutated")
    rep = (became, free) if isinstance(became, int) and isinstance(free, int) else None
    eq = r.count("view_copy.equivalent")
    fixes = []
    if rep and r.v("view_copy.replaces_slice_copy") not in UNDECIDED:
        fixes.append(f"the pass turns {rep[0]} of {rep[1]} non-mutated slice_copy nodes back into views")
    if eq and r.v("view_copy.equivalent") not in UNDECIDED:
        fixes.append(f"{eq[0]} of {eq[1]} comparisons stay bit-identical")
    if fixes:
        out["fix"] = ("; ".join(fixes) + ".")[0].upper() + ("; ".join(fixes) + ".")[1:]
    figure = None
    kv = r.data("view_copy.more_efficient", "kv_decode")
    speed = numbers(kv.get("ratios")) if isinstance(kv, dict) else []
    v = r.v("view_copy.more_efficient")
    if speed and v:
        out["cost"] = (f"On {r.device} the pass makes the kv_decode step {span(speed, '×')} faster, round by round "
                       f"(the seed's 'more efficient' {PLAIN.get(v, v)}).")
        figure = {"value": f"{num(statistics.median(speed))}×",
                  "label": f"kv_decode step without / with the pass (AOT Inductor), median round, {r.device}",
                  "claim": "view_copy.more_efficient"}
    return out, figure


__all__ = ["DEVICE", "conclude"]
