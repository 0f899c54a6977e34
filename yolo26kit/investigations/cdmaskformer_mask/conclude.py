"""The conclusion of cdmaskformer_mask: what a run found, in 2–4 sentences and a headline figure (see yolo26kit/conclusion.py).

Imported without torch (the pages render without it): only the kit's conclusion helpers.
"""

from __future__ import annotations

from ...conclusion import PLAIN, View, plain

NAME = "CDMaskFormer attention mask"  # its name for people: pages head it with this, the id small beside
# The device class the bug needs when a ledger entry names no conditions.device ("any": every device shows it).
DEVICE = "cuda"
SPEED = (("mask.speedup_small_20x", "small"), ("mask.speedup_medium_3_5x", "medium"))


def conclude(r: View) -> tuple[dict[str, str], dict[str, str] | None]:
    """Sentences by question and the headline figure of one cdmaskformer_mask run."""
    out: dict[str, str] = {}
    v = r.v("mask.assert_trigger")
    attempts = r.quote("mask.assert_trigger")  # '0 of 12 predicted attempts assert'
    if v in ("not_reproduced", "confirmed", "refuted") and attempts:
        did = "reproduces" if v == "confirmed" else "does not reproduce"
        out["bites"] = f"The seed's INTERNAL ASSERT {did} on torch {r.torch or 'this torch'}: {attempts}."
    elif v:
        out["bites"] = plain(r, "mask.assert_trigger", "Whether the seed's INTERNAL ASSERT bites on this torch")
    equal = r.quote("mask.equivalent")
    if r.v("mask.equivalent") == "confirmed" and equal:
        out["fix"] = f"masked_fill gives the same mask as the original formulation: {equal}."
    elif r.v("mask.equivalent"):
        out["fix"] = plain(r, "mask.equivalent", "masked_fill gives the same mask as the original")
    speed = []
    for cid, size in SPEED:
        quoted = r.quote(cid)
        if not quoted or not r.v(cid):
            continue
        judged = f"; the seed's factor {PLAIN.get(r.v(cid), r.v(cid))}" if r.device == "cuda" else ""
        speed.append(f"{quoted} as fast as the original on {size} masks{judged}")
    if speed:
        where = "" if r.device == "cuda" else "; the seed's speed-ups are CUDA figures, which a CPU run cannot test"
        out["cost"] = f"On this {r.device} run masked_fill is " + " and ".join(speed) + where + "."
    figure = next(({"claim": cid} for cid, _ in SPEED if r.v(cid) and r.fig(cid)), None)
    return out, figure


__all__ = ["DEVICE", "NAME", "conclude"]
