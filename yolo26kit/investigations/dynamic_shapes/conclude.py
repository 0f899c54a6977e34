"""The conclusion of dynamic_shapes: what a run found, in 2–4 sentences and a headline figure (see yolo26kit/conclusion.py).

Imported without torch (the pages render without it): only the kit's conclusion helpers.
"""

from __future__ import annotations

from ...conclusion import plain, UNDECIDED, View

# The device class the bug needs when a ledger entry names no conditions.device ("any": every device shows it).
# figures from judgement data, for claims whose judge returned none (see conclusion.data_figure)
FIGURES = {
    "dynamic_shapes.plain_dim_guard_violation": lambda d: {"value": len(d["guards"]), "unit": "unprovable guards",
                                                           "measures": "guards torch.export reports for plain dims"},
}

DEVICE = "any"


def conclude(r: View) -> tuple[dict[str, str], dict[str, str] | None]:
    """Sentences by question and the headline figure of one dynamic_shapes run."""
    out: dict[str, str] = {}
    guards = r.data("dynamic_shapes.plain_dim_guard_violation", "guards")
    if r.v("dynamic_shapes.plain_dim_guard_violation") == "confirmed" and isinstance(guards, list) and guards:
        div8 = " (the seed's //8 guard among them)" if r.v("dynamic_shapes.guard_div8") == "confirmed" else ""
        out["bites"] = (f"Exporting YOLO26 with plain dynamic height/width fails on this stack: torch.export raises "
                        f"UserError with {len(guards)} unprovable guards{div8}.")
    elif r.v("dynamic_shapes.plain_dim_guard_violation"):
        out["bites"] = plain(r, "dynamic_shapes.plain_dim_guard_violation", "Plain dynamic dims hit a guard violation")
    specs = r.count("dynamic_shapes.fundamentally_blocked")
    figure = None
    if specs and r.v("dynamic_shapes.fundamentally_blocked") in ("refuted", "partly"):
        out["fix"] = (f"It is not a dead end: {specs[0]} of {specs[1]} dynamic H/W specs of the stock model export and match "
                      "eager at "
                      "every multiple of 32 swept.")
        figure = {"value": f"{specs[0]}/{specs[1]}", "label": "dynamic H/W specs that export and match eager",
                  "claim": "dynamic_shapes.fundamentally_blocked"}
    elif r.v("dynamic_shapes.fundamentally_blocked"):
        out["fix"] = plain(r, "dynamic_shapes.fundamentally_blocked", "Dynamic H/W export is fundamentally blocked")
    failing = r.data("dynamic_shapes.multiple_of_32", "failing_residues")
    sizes = (len(failing), 31) if isinstance(failing, list) else None
    if sizes and r.v("dynamic_shapes.multiple_of_32") not in UNDECIDED:
        out["other"] = (f"Eager YOLO26 itself fails at {sizes[0]} of {sizes[1]} non-multiple sizes mod 32, so inputs must stay "
                        "multiples of 32 (or be letterboxed).")
    return out, figure


__all__ = ["DEVICE", "conclude"]
