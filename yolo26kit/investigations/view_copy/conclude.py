"""The conclusion of view_copy: what a run found, in 2–4 sentences and a headline figure (see yolo26kit/conclusion.py).

Imported without torch (the pages render without it): only the kit's conclusion helpers.
"""

from __future__ import annotations

from ...conclusion import PLAIN, UNDECIDED, View, plain

NAME = "ExecuTorch view-copy pass"  # its name for people: pages head it with this, the id small beside
# The device class the bug needs when a ledger entry names no conditions.device ("any": every device shows it).
DEVICE = "any"


def conclude(r: View) -> tuple[dict[str, str], dict[str, str] | None]:
    """Sentences by question and the headline figure of one view_copy run."""
    out: dict[str, str] = {}
    edge = r.quote("view_copy.edge_introduces_slice_copy")
    still = r.quote("view_copy.reinplace_misses_slice_copy")
    if edge and r.v("view_copy.edge_introduces_slice_copy") in ("confirmed", "partly"):
        tail = (f", and {still}"
                if still and r.v("view_copy.reinplace_misses_slice_copy") not in UNDECIDED else "")
        out["bites"] = f"The edge dialect turns slices into copies here: {edge}{tail}."
    elif r.v("view_copy.edge_introduces_slice_copy"):
        out["bites"] = plain(r, "view_copy.edge_introduces_slice_copy", "The edge dialect introduces slice_copy")
    fixes = []
    for cid, what in (("view_copy.replaces_slice_copy", "the pass"), ("view_copy.equivalent", "outputs")):
        quoted = r.quote(cid)
        if quoted and r.v(cid) not in UNDECIDED:
            fixes.append(f"{what}: {quoted}")
    if fixes:
        out["fix"] = ("; ".join(fixes) + ".")[0].upper() + ("; ".join(fixes) + ".")[1:]
    v = r.v("view_copy.more_efficient")
    speed = r.fig("view_copy.more_efficient")
    if speed is not None and v:
        out["cost"] = (f"On {r.device}, {speed.measures}: {r.quote('view_copy.more_efficient')} (the seed's 'more "
                       f"efficient' {PLAIN.get(v, v)}).")
    return out, {"claim": "view_copy.more_efficient"}


__all__ = ["DEVICE", "NAME", "conclude"]
