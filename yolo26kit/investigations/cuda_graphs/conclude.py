"""The conclusion of cuda_graphs: what a run found, in 2–4 sentences and a headline figure (see yolo26kit/conclusion.py).

Imported without torch (the pages render without it): only the kit's conclusion helpers; `graphs_words` is the one
place the words "full CUDA graphs" are written, judges and conclusions alike.
"""

from __future__ import annotations

from typing import Any

from ...conclusion import PLAIN, UNDECIDED, View, error_line, plain

NAME = "CUDA graphs and .item()"  # its name for people: pages head it with this, the id small beside
# The device class the bug needs when a ledger entry names no conditions.device ("any": every device shows it).
DEVICE = "cuda"
COSTS = (("cuda_graphs.speedup_2_5x", "the forecast", "seed: 2–5×"),
         ("cuda_graphs.first_inference_60s", "the first call", "seed: ~60 s"))


def graphs_words(graph_launches: list[int], kernel_launches: list[int], graph_breaks: list[int] | None = None) -> str:
    """What a decode step replays, from its profile: "full CUDA graphs" only where every step replays graphs with no
    loose kernel launch and no graph break, else the counts ("CUDA graphs: 73 graph replays beside 67 loose kernel
    launches and 30 graph breaks per decode step")."""
    breaks = [b for b in graph_breaks or [] if b is not None]
    if graph_launches and all(graph_launches) and not any(kernel_launches) and not any(breaks):
        return "full CUDA graphs"

    def counted(values: list[int]) -> str:
        lo, hi = min(values), max(values)
        return f"{lo}" if lo == hi else f"{lo}–{hi}"

    tail = f" and {counted(breaks)} graph breaks" if any(breaks) else ""
    return (f"CUDA graphs: {counted(graph_launches)} graph replays beside {counted(kernel_launches)} loose kernel "
            f"launches{tail} per decode step")


def replayed(conditions: dict[str, Any]) -> str:
    """graphs_words of a figure's conditions (graph replays, loose kernel launches, graph breaks); '' where the figure
    does not record what its step replays."""
    if "graph_replays" not in conditions:
        return ""

    def listed(key: str) -> list[int]:
        value = conditions.get(key)
        return [int(v) for v in (value if isinstance(value, list) else [value]) if v is not None]

    return graphs_words(listed("graph_replays"), listed("loose_kernel_launches"), listed("graph_breaks"))


def conclude(r: View) -> tuple[dict[str, str], dict[str, str] | None]:
    """Sentences by question and the headline figure of one cuda_graphs run."""
    out: dict[str, str] = {}
    syncs = r.quote("cuda_graphs.item_syncs")
    v = r.v("cuda_graphs.item_skips")
    if syncs and r.v("cuda_graphs.item_syncs") in ("confirmed", "partly"):
        out["bites"] = (f".item() in the decode step bites: {syncs} the stream every step; the seed's skip/split of "
                        f"CUDA graphs around it {PLAIN.get(v, 'was not judged')}.")
    elif v:
        out["bites"] = plain(r, "cuda_graphs.item_skips", "CUDA graphs are skipped or split around .item()")
    fixes = []
    for cid, what in (("cuda_graphs.int_enables", "int() instead of .item()"),
                      ("cuda_graphs.tensor_position", "keeping the position as a tensor")):
        if r.v(cid):
            quoted = r.quote(cid)
            fixes.append(f"{what}: the seed's 'full CUDA graphs' {PLAIN[r.v(cid)]}" + (f" ({quoted})" if quoted else ""))
    if fixes:
        out["fix"] = "Fixes: " + "; ".join(fixes) + "."
    costs = []
    failed = r.data("cuda_graphs.speedup_2_5x", "premise_unmet")
    if failed:
        costs.append(f"the seed's cost figures are for CUDA graphs enabled, and no route enabled them on Toto here: "
                     f"{error_line(failed)}")
    for cid, what, seed in COSTS:
        figure = r.fig(cid)
        if figure is None or r.v(cid) in UNDECIDED or not r.v(cid):
            continue
        steps = replayed(figure.conditions)
        costs.append(f"{figure.measures}: {r.quote(cid)} ({seed}: {PLAIN[r.v(cid)]})"
                     + (f", with {steps}" if steps else ""))
    if costs:
        out["cost"] = "Cost: " + "; ".join(costs) + "."
    elif r.v("cuda_graphs.speedup_2_5x"):
        out["cost"] = plain(r, "cuda_graphs.speedup_2_5x", "The seed's speed-up with CUDA graphs")
    return out, {"claim": "cuda_graphs.speedup_2_5x"}


__all__ = ["DEVICE", "NAME", "conclude", "graphs_words", "replayed"]
