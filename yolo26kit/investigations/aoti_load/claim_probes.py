"""Claim-level entry point for `yolo26kit bisect`: `aoti.load_crash_cause` judged from one CPU package, compiled in
an isolated child and loaded in a fresh process (the study's own steps and the claim's judge), without the notebook."""

from __future__ import annotations

from ...verdicts import Judgement
from .judge import judge_load_crash_cause
from .measure import study


def load_crash_cause(model: str = "two_ops", timeout: float = 600.0) -> Judgement:
    """The claim on one CPU package of `model`: compile, load as it is (and with the workaround if it crashed)."""
    return judge_load_crash_cause(study([model], device="cpu", cuda_packages=False, step_timeout=timeout))
