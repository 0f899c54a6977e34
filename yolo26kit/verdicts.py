"""What a judge returns, the verdict words, the band and all/none/some rules, and the seed-conditions check."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

VERDICTS = ("confirmed", "refuted", "partly", "not_reproduced", "inconclusive", "needs_cuda", "error")
# Verdicts that say something about the claim itself; the conditions rule and the judge audit apply to them.
DECISIVE = ("confirmed", "refuted", "partly", "not_reproduced")
BASES = ("measured", "derived", "both", "none")


@dataclass
class Judgement:
    """One judge's answer: the verdict, a sentence of evidence with the numbers, the data behind it, how it was
    reached (`basis`), the run's values of the conditions that decide the claim (`run`), and the conditions that
    differ from the seed's but were shown not to matter (`irrelevant`: condition → why)."""

    verdict: str
    evidence: str
    data: dict[str, Any] = field(default_factory=dict)
    basis: str = "measured"
    run: dict[str, Any] = field(default_factory=dict)
    irrelevant: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {VERDICTS}")
        if self.basis not in BASES:
            raise ValueError(f"basis {self.basis!r} is not one of {BASES}")

    @classmethod
    def of(cls, answer: Judgement | tuple[str, str, dict[str, Any]]) -> Judgement:
        """A judge may still return the older (verdict, evidence, data) tuple: measured, no run conditions."""
        if isinstance(answer, Judgement):
            return answer
        verdict, evidence, data = answer
        return cls(verdict, evidence, dict(data))


def band(values: Iterable[float], lo: float, hi: float) -> str:
    """The straddle rule for a measured figure timed over rounds against the seed's band [lo, hi]:
    `confirmed` when every round is inside, `refuted` when every round is outside (on either side),
    `inconclusive` when the rounds fall on both sides of an edge (this machine's noise cannot decide)."""
    rounds = [float(v) for v in values]
    if not rounds:
        return "inconclusive"
    inside = [lo <= v <= hi for v in rounds]
    if all(inside):
        return "confirmed"
    if not any(inside):
        return "refuted"
    return "inconclusive"


def all_none_some(held: int, tried: int) -> str:
    """`confirmed` when every case tried holds, `refuted` when none does, `partly` when some do;
    `inconclusive` when nothing could be tried."""
    if tried <= 0:
        return "inconclusive"
    if held >= tried:
        return "confirmed"
    return "refuted" if held <= 0 else "partly"


def _in_range(limits: Mapping[str, Any], value: Any) -> bool:
    """`{"min": a, "max": b}` (either may be absent): numbers compare as numbers, releases as versions."""
    from packaging.version import InvalidVersion, Version

    def key(v: Any) -> Any:
        if isinstance(v, (int, float)):
            return (float(v),)
        try:
            return Version(str(v).split("+")[0])
        except InvalidVersion:
            return str(v)

    try:
        return all(op(key(value), key(limits[k])) for k, op in (("min", lambda a, b: a >= b), ("max", lambda a, b: a <= b))
                   if k in limits)
    except TypeError:  # a release against a number, or the other way round
        return False


def _matches(seed: Any, run: Any) -> bool:
    """Does the run's value meet the seed's? A list on the seed's side is a set of accepted values, a dict a range
    (`min`/`max`); a list on the run's side must lie wholly inside (every value the verdict rests on); strings
    compare case-insensitively."""
    got = run if isinstance(run, (list, tuple)) else [run]
    if isinstance(seed, Mapping):
        return bool(got) and all(_in_range(seed, g) for g in got)
    accepted = seed if isinstance(seed, (list, tuple)) else [seed]

    def norm(v: Any) -> Any:
        return v.strip().lower() if isinstance(v, str) else v

    wanted = {norm(a) for a in accepted}
    return bool(got) and all(norm(g) in wanted for g in got)


def differing(seed: Mapping[str, Any], run: Mapping[str, Any]) -> list[str]:
    """The seed conditions the run recorded with another value (conditions it did not record are not compared)."""
    return [k for k in seed if k in run and not _matches(seed[k], run[k])]


def _show(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def settle(judgement: Judgement, seed: Mapping[str, Any]) -> tuple[Judgement, dict[str, Any]]:
    """Apply the conditions rule: a decisive verdict whose run differs from the seed's conditions in a way that
    was not shown not to matter becomes `inconclusive`, and the evidence names the condition. Returns the final
    judgement and the `conditions` record for results.json ({seed, run, differ, irrelevant})."""
    differ = differing(seed, judgement.run)
    deciding = [k for k in differ if k not in judgement.irrelevant]
    record = {"seed": dict(seed), "run": dict(judgement.run), "differ": differ,
              **({"irrelevant": {k: v for k, v in judgement.irrelevant.items() if k in differ}}
                 if judgement.irrelevant else {})}
    if judgement.verdict not in DECISIVE or not deciding:
        return judgement, record
    why = "; ".join(f"this run's {k} is {_show(judgement.run[k])}, the seed's {_show(seed[k])}" for k in deciding)
    evidence = (f"{judgement.evidence.rstrip('. ')} — the run would say {judgement.verdict}, but it cannot decide "
                f"the seed's statement: {why}")
    data = {**judgement.data, "verdict_under_run_conditions": judgement.verdict}
    return Judgement("inconclusive", evidence, data, judgement.basis, judgement.run, judgement.irrelevant), record
