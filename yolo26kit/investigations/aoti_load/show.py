"""Loading AOT Inductor packages: the crash evidence the notebook shows."""

from __future__ import annotations

import pandas as pd


def crash_evidence(rows: pd.DataFrame) -> pd.DataFrame:
    """The as-is load rows that crashed: cause, top native frames, where the whole trace is."""
    cols = [c for c in ("model", "device", "step", "signal", "cause", "frames", "native", "trace_file") if c in rows]
    if "status" not in rows:
        return pd.DataFrame(columns=cols)
    return rows[(rows.status == "crash")][cols].reset_index(drop=True)
