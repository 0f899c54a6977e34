"""The conclusion of dynamic_shapes: what a run found, in 2–4 sentences and a headline figure (see yolo26kit/conclusion.py).

Imported without torch (the pages render without it): only the kit's conclusion helpers.
"""

from __future__ import annotations

from ...conclusion import UNDECIDED, View, plain

NAME = "YOLO26 dynamic H/W export"  # its name for people: pages head it with this, the id small beside
# The device class the bug needs when a ledger entry names no conditions.device ("any": every device shows it).
DEVICE = "any"


def conclude(r: View) -> tuple[dict[str, str], dict[str, str] | None]:
    """Sentences by question and the headline figure of one dynamic_shapes run."""
    out: dict[str, str] = {}
    guards = r.quote("dynamic_shapes.plain_dim_guard_violation")
    if r.v("dynamic_shapes.plain_dim_guard_violation") == "confirmed":
        div8 = " (the seed's //8 guard among them)" if r.v("dynamic_shapes.guard_div8") == "confirmed" else ""
        counted = f" with {guards}" if guards else ""
        out["bites"] = (f"Exporting YOLO26 with plain dynamic height/width fails on this stack: torch.export raises "
                        f"UserError{counted}{div8}.")
    elif r.v("dynamic_shapes.plain_dim_guard_violation"):
        out["bites"] = plain(r, "dynamic_shapes.plain_dim_guard_violation", "Plain dynamic dims hit a guard violation")
    specs = r.quote("dynamic_shapes.fundamentally_blocked")
    if specs and r.v("dynamic_shapes.fundamentally_blocked") in ("refuted", "partly"):
        out["fix"] = f"It is not a dead end: {specs} at every multiple of 32 swept."
    elif r.v("dynamic_shapes.fundamentally_blocked"):
        out["fix"] = plain(r, "dynamic_shapes.fundamentally_blocked", "Dynamic H/W export is fundamentally blocked")
    failing = r.quote("dynamic_shapes.multiple_of_32")
    if failing and r.v("dynamic_shapes.multiple_of_32") not in UNDECIDED:
        out["other"] = (f"Eager YOLO26 itself fails at sizes that are not multiples of 32 ({failing}), so inputs must "
                        "stay multiples of 32 (or be letterboxed).")
    return out, {"claim": "dynamic_shapes.fundamentally_blocked"}


__all__ = ["DEVICE", "NAME", "conclude"]
