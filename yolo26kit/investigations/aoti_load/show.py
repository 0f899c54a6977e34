"""Loading AOT Inductor packages: the crash evidence the notebook shows, and the table a run keeps (TABLES)."""

from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from ... import findings

# table name (as kept in results.json) → the table of a run's rows
TABLES: dict[str, Callable[[pd.DataFrame], pd.DataFrame]] = {
    "aoti_load": lambda rows: rows,  # one row per compile and load+run step
}


def crash_evidence(rows: pd.DataFrame) -> pd.DataFrame:
    """The as-is load rows that crashed: cause, top native frames, where the whole trace is."""
    cols = [c for c in ("model", "device", "step", "signal", "cause", "frames", "native", "trace_file") if c in rows]
    if "status" not in rows:
        return pd.DataFrame(columns=cols)
    return rows[(rows.status == "crash")][cols].reset_index(drop=True)


def record_tables(found: Any, rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Keep every table of TABLES in results.json and return them."""
    return findings.record_tables(found, TABLES, rows)
