"""The conclusion of cuda_graphs: what a run found, in 2–4 sentences and a headline figure (see yolo26kit/conclusion.py).

Imported without torch (the pages render without it): only the kit's conclusion helpers.
"""

from __future__ import annotations

import statistics

from ...conclusion import PLAIN, UNDECIDED, View, error_line, num, numbers, plain, span

# The device class the bug needs when a ledger entry names no conditions.device ("any": every device shows it).
DEVICE = "cuda"


def conclude(r: View) -> tuple[dict[str, str], dict[str, str] | None]:
    """Sentences by question and the headline figure of one cuda_graphs run."""
    out: dict[str, str] = {}
    syncs = r.count("cuda_graphs.item_syncs")
    v = r.v("cuda_graphs.item_skips")
    if syncs and r.v("cuda_graphs.item_syncs") in ("confirmed", "partly"):
        out["bites"] = (f".item() in the decode step bites: {syncs[0]} of {syncs[1]} .item() cases synchronise "
                        f"the stream every step; the seed's skip/split of CUDA graphs around it {PLAIN.get(v, 'was not judged')}.")
    elif v:
        out["bites"] = plain(r, "cuda_graphs.item_skips", "CUDA graphs are skipped or split around .item()")
    fixes = []
    for cid, what in (("cuda_graphs.int_enables", "int() instead of .item()"),
                      ("cuda_graphs.tensor_position", "keeping the position as a tensor")):
        if r.v(cid) and r.v(cid) not in UNDECIDED:
            fixes.append(f"{what} {'gives' if r.v(cid) == 'confirmed' else 'does not give' if r.v(cid) == 'refuted' else 'partly gives'} "
                         "full CUDA graphs")
        elif r.v(cid):
            fixes.append(f"{what}: {PLAIN[r.v(cid)]}")
    if fixes:
        out["fix"] = "Fixes: " + "; ".join(fixes) + "."
    figure = None
    # Toto's judges keep "speedups" (and "error" where Toto's compile failed); the kit forecaster's "ratios"
    toto = r.data("cuda_graphs.speedup_2_5x", "speedups") is not None
    ratios = numbers(r.data("cuda_graphs.speedup_2_5x", "speedups" if toto else "ratios"))
    first_s = r.data("cuda_graphs.first_inference_60s", "first_s")
    first = numbers(first_s if isinstance(first_s, (list, dict)) else [first_s])  # Toto's is one cold compile
    failed = r.data("cuda_graphs.speedup_2_5x", "premise_unmet")
    costs = []
    if failed:
        costs.append(f"the seed's cost figures are for CUDA graphs enabled, and no route enabled them on Toto here: "
                     f"{error_line(failed)}")
    if ratios and r.v("cuda_graphs.speedup_2_5x") not in UNDECIDED:
        costs.append(f"{'Toto with' if toto else 'full'} CUDA graphs run{'s' if toto else ''} a forecast "
                     f"{span(ratios, '×')} faster than the default compile, round by round (seed: 2–5×)")
        figure = {"value": f"{num(statistics.median(ratios))}×",
                  "label": "forecast with full CUDA graphs vs default compile, median round (seed: 2–5×)",
                  "claim": "cuda_graphs.speedup_2_5x"}
    if first and r.v("cuda_graphs.first_inference_60s") not in UNDECIDED and not failed:
        costs.append(f"the first call takes {span(first, ' s')} (seed: 30–120 s)")
    if costs:
        out["cost"] = "Cost: " + "; ".join(costs) + "."
    elif r.v("cuda_graphs.speedup_2_5x"):
        out["cost"] = plain(r, "cuda_graphs.speedup_2_5x", "The seed's 2.5× speed-up")
    return out, figure


__all__ = ["DEVICE", "conclude"]
