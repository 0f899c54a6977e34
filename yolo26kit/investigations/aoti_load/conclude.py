"""The conclusion of aoti_load: what a run found, in 2–4 sentences and a headline figure (see yolo26kit/conclusion.py).

Imported without torch (the pages render without it): only the kit's conclusion helpers.
"""

from __future__ import annotations

from ...conclusion import View, plain, show

NAME = "AOTI package load crash"  # its name for people: pages head it with this, the id small beside
# The device class the bug needs when a ledger entry names no conditions.device ("any": every device shows it).
DEVICE = "cuda"
CLAIM = "aoti.load_crash_cause"


def conclude(r: View) -> tuple[dict[str, str], dict[str, str] | None]:
    """Sentences by question and the headline figure of one aoti_load run."""
    v = r.v(CLAIM)
    conditions = (r.claims.get(CLAIM) or {}).get("conditions") or {}
    crashed = r.quote(CLAIM)  # '2 of 3 packages crash on load'
    out: dict[str, str] = {}
    if v == "confirmed":
        counted = f": {crashed}" if crashed else ""
        out["bites"] = (f"Loading an AOT Inductor package crashes on this stack{counted} (cause named from the native "
                        "backtrace: the static-libstdc++ locale mix).")
        out["fix"] = "Loading the system libstdc++ first works around it: every crashed package then ran."
    elif v == "not_reproduced":
        counted = f" ({crashed})" if crashed else ""
        out["bites"] = f"Loading the AOT Inductor package did not crash on this {r.device} run{counted}."
        if r.device != "cuda":
            out["other"] = "The crash was seen on a CUDA runner's stack: whether it bites there, this run cannot tell."
    elif v == "inconclusive":
        out["bites"] = plain(r, CLAIM, "The package-load crash and its cause")
        differ = ", ".join(f"{k} {show(conditions.get('seed', {}).get(k))}" for k in conditions.get("differ", []))
        out["other"] = (f"The crash and its cause were seen on another stack ({differ}): this run cannot decide them."
                        if differ else "Whether the crash and its cause hold, this run cannot decide.")
    else:
        out["bites"] = plain(r, CLAIM, "The package-load crash")
    return out, {"claim": CLAIM}


__all__ = ["DEVICE", "NAME", "conclude"]
