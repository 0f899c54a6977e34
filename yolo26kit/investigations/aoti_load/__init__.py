"""Does loading an AOT Inductor package crash on this stack, why, and does the workaround hold? (the kit's own claim)

Each package is compiled in an isolated child, then loaded and run through `aoti.run_step`: as it is, and
again with the system libstdc++ loaded globally first only when the as-is load crashed and the forensics
rule for the static-libstdc++ locale mix matched its native backtrace.

The package: model.py (the modules packaged), measure.py (the isolated steps and the study), judge.py (the claim's
judge), show.py (the crash evidence, the table a run keeps).
"""

from __future__ import annotations

from ... import catalog
from .judge import JUDGES, judge
from .measure import stack_facts, study
from .model import MODELS
from .show import TABLES, crash_evidence, record_tables

__all__ = ["JUDGES", "TABLES", "crash_evidence", "judge", "record_tables", "stack_facts", "study"]


catalog.register(catalog.Investigation(
    name="aoti_load",
    title="Loading AOT Inductor packages: the crash, its cause, the workaround",
    seeds=("kit",),
    profiles={
        # quick: one CPU package (the crash needs no GPU; the other investigations load CUDA packages the same way)
        "quick": {"models": ["two_ops"], "cuda_packages": False},
        "full": {"models": list(MODELS), "cuda_packages": True},
    },
    checks={"models": catalog.one_of(*MODELS)},
    judges=JUDGES,
))
