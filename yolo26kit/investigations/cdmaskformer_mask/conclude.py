"""The conclusion of cdmaskformer_mask: what a run found, in 2–4 sentences and a headline figure (see yolo26kit/conclusion.py).

Imported without torch (the pages render without it): only the kit's conclusion helpers.
"""

from __future__ import annotations

import statistics

from ...conclusion import count, num, numbers, plain, PLAIN, View

# The device class the bug needs when a ledger entry names no conditions.device ("any": every device shows it).
# figures from judgement data, for claims whose judge returned none (see conclusion.data_figure)
FIGURES = {
    "mask.assert_trigger": lambda d: count(d["fired"], d["attempts"], "CUDA attempts assert",
                                           "attempts of the seed's setting on CUDA that hit the INTERNAL ASSERT"),
    "mask.equivalent": lambda d: count(d["equal"]["masked_fill"], d["cases"], "cases equal",
                                       "cases where masked_fill equals the reference"),
}

DEVICE = "cuda"


def conclude(r: View) -> tuple[dict[str, str], dict[str, str] | None]:
    """Sentences by question and the headline figure of one cdmaskformer_mask run."""
    out: dict[str, str] = {}
    v = r.v("mask.assert_trigger")
    fired, tried = r.data("mask.assert_trigger", "fired"), r.data("mask.assert_trigger", "attempts")
    attempts = (fired, tried) if isinstance(fired, int) and isinstance(tried, int) else None
    if v in ("not_reproduced", "confirmed") and attempts:
        did = "reproduces" if v == "confirmed" else "does not reproduce"
        out["bites"] = (f"The seed's INTERNAL ASSERT {did} on torch {r.torch or 'this torch'}: "
                        f"{attempts[0]} of {attempts[1]} CUDA attempts assert.")
    elif v:
        out["bites"] = plain(r, "mask.assert_trigger", "Whether the seed's INTERNAL ASSERT bites on this torch")
    equal, cases = r.data("mask.equivalent", "equal"), r.data("mask.equivalent", "cases")
    eq = (equal.get("masked_fill"), cases) if isinstance(equal, dict) and isinstance(cases, int) else None
    if r.v("mask.equivalent") == "confirmed" and eq:
        out["fix"] = f"masked_fill gives the same mask as the original formulation in {eq[0]}/{eq[1]} cases."
    elif r.v("mask.equivalent"):
        out["fix"] = plain(r, "mask.equivalent", "masked_fill gives the same mask as the original")
    figure = None
    speed = []
    for cid, size in (("mask.speedup_small_20x", "small"), ("mask.speedup_medium_3_5x", "medium")):
        rounds = numbers(r.data(cid, f"{r.device}_rounds"))
        x = statistics.median_high(rounds) if rounds else None
        if x is None or not r.v(cid):
            continue
        claimed = r.data(cid, "claimed")
        seed = f", seed: {num(claimed)}×" if isinstance(claimed, (int, float)) else ""
        det = numbers(r.data(cid, f"{r.device}_rounds_deterministic"))
        det_txt = f", {num(statistics.median_high(det))}× deterministic" if det else ""
        # on a CPU the seed's (CUDA) factor is undecided: said once, after the figures, not per size
        judged = f"; the seed's factor {PLAIN.get(r.v(cid), r.v(cid))}{seed}" if r.device == "cuda" else seed
        speed.append(f"{num(x)}× as fast as the original on {size} masks (median round{det_txt}{judged})")
        if figure is None:
            figure = {"value": f"{num(x)}×", "label": f"masked_fill speed-up on {size} masks, {r.device}{seed}",
                      "claim": cid}
    if speed:
        where = "" if r.device == "cuda" else "; the seed's speed-ups are CUDA figures, which a CPU run cannot test"
        out["cost"] = f"On this {r.device} run masked_fill is " + " and ".join(speed) + where + "."
    return out, figure


__all__ = ["DEVICE", "conclude"]
