"""The conclusion of aoti_load: what a run found, in 2–4 sentences and a headline figure (see yolo26kit/conclusion.py).

Imported without torch (the pages render without it): only the kit's conclusion helpers.
"""

from __future__ import annotations


from ...conclusion import count, plain, show, View

# The device class the bug needs when a ledger entry names no conditions.device ("any": every device shows it).
# figures from judgement data, for claims whose judge returned none (see conclusion.data_figure)
FIGURES = {
    "aoti.load_crash_cause": lambda d: count(sum(r["status"] == "crash" for r in d["as_is"]), len(d["as_is"]),
                                             "packages crash on load", "AOT Inductor packages loaded as they are"),
}

DEVICE = "cuda"


def conclude(r: View) -> tuple[dict[str, str], dict[str, str] | None]:
    """Sentences by question and the headline figure of one aoti_load run."""
    cid, v = "aoti.load_crash_cause", r.v("aoti.load_crash_cause")
    conditions = (r.claims.get(cid) or {}).get("conditions") or {}
    out: dict[str, str] = {}
    as_is = [row for row in r.data(cid, "as_is") or [] if isinstance(row, dict)]
    statuses = [str(row.get("status")) for row in as_is]
    crashed = (statuses.count("crash"), len(statuses)) if statuses and "crash" in statuses else None
    loaded = (statuses.count("ok"), len(statuses)) if statuses and v != "confirmed" else None
    if v == "confirmed":
        n = f": {crashed[0]} of {crashed[1]} packages crashed when loaded as they are" if crashed else ""
        out["bites"] = (f"Loading an AOT Inductor package crashes on this stack{n} (cause named from the native "
                        "backtrace: the static-libstdc++ locale mix).")
        fixed = [row for row in r.data(cid, "workaround") or [] if isinstance(row, dict)]
        ran = sum(str(row.get("status")) == "ok" for row in fixed)
        if fixed:
            out["fix"] = (f"Loading the system libstdc++ first works around it: {ran} of {len(fixed)} crashed packages "
                          "then ran.")
    elif v == "not_reproduced":
        n = f": {loaded[0]} of {loaded[1]} packages loaded and ran as they are" if loaded else ""
        out["bites"] = f"Loading the AOT Inductor package did not crash on this {r.device} run{n}."
        if r.device != "cuda":
            out["other"] = "The crash was seen on a CUDA runner's stack: whether it bites there, this run cannot tell."
    elif v == "inconclusive" and loaded:
        out["bites"] = (f"Loading the AOT Inductor package did not crash on this {r.device} run: {loaded[0]} of "
                        f"{loaded[1]} packages loaded and ran as they are.")
        differ = ", ".join(f"{k} {show(conditions.get('seed', {}).get(k))}" for k in conditions.get("differ", []))
        out["other"] = (f"The crash and its cause were seen on another stack ({differ}): this run cannot decide them."
                        if differ else "Whether the crash and its cause hold, this run cannot decide.")
    else:
        out["bites"] = plain(r, cid, "The package-load crash")
    figure = None
    if crashed or loaded:
        figure = ({"value": f"{crashed[0]}/{crashed[1]}", "label": "packages crashed when loaded as they are"}
                  if crashed else {"value": f"{loaded[0]}/{loaded[1]}", "label": "packages loaded and ran as they are"})
        figure["claim"] = cid
    return out, figure


__all__ = ["DEVICE", "conclude"]
