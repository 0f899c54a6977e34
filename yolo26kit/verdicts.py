"""What a judge returns, the verdict words, the band and all/none/some rules, and the seed-conditions check."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
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


# The rounds rule: a timing claim is decided when at least this share of its rounds, and their median, lie on
# one side of the band (inside it, or outside it); one outlier round among five cannot flip or block a verdict.
ROUNDS_SHARE = 2 / 3
MIN_ROUNDS = 5
MAX_ROUNDS = 15


def _side(value: float, lo: float, hi: float) -> str:
    return "inside" if lo <= value <= hi else "outside"


def band_decision(values: Iterable[float], lo: float, hi: float, *, min_rounds: int = 1) -> str | None:
    """The rounds rule against the seed's band [lo, hi]: `confirmed` when at least ROUNDS_SHARE of the rounds and
    their median lie inside the band, `refuted` when they lie outside it (either side), None when fewer than
    `min_rounds` rounds were timed or the rounds straddle an edge (more rounds may decide)."""
    rounds = sorted(float(v) for v in values)
    if len(rounds) < max(1, min_rounds):
        return None
    n = len(rounds)
    median = rounds[(n - 1) // 2]  # a real round (the lower middle one): a mean of two could fall in between
    side = _side(median, lo, hi)
    agree = sum(_side(v, lo, hi) == side for v in rounds)
    if agree < ROUNDS_SHARE * n:
        return None
    return "confirmed" if side == "inside" else "refuted"


def band(values: Iterable[float], lo: float, hi: float) -> str:
    """The rounds rule (`band_decision`) as a verdict: `inconclusive` when the rounds do not decide."""
    return band_decision(values, lo, hi) or "inconclusive"


def rounds_until_decided(one_round: Callable[[], float], lo: float, hi: float, *,
                         min_rounds: int = MIN_ROUNDS, max_rounds: int = MAX_ROUNDS) -> list[float]:
    """Time `one_round` (it returns the round's figure, e.g. a ratio of two variants timed in turn) at least
    `min_rounds` times and keep going until the rounds decide the band or `max_rounds` is reached."""
    rounds: list[float] = []
    while len(rounds) < max_rounds:
        rounds.append(float(one_round()))
        if band_decision(rounds, lo, hi, min_rounds=min_rounds) is not None:
            break
    return rounds


def all_none_some(held: int, tried: int) -> str:
    """`confirmed` when every case tried holds, `refuted` when none does, `partly` when some do;
    `inconclusive` when nothing could be tried."""
    if tried <= 0:
        return "inconclusive"
    if held >= tried:
        return "confirmed"
    return "refuted" if held <= 0 else "partly"


def combine(parts: list[str], expected: int | None = None) -> str:
    """One verdict from the verdicts of a claim's parts (per step, per model): all confirmed → confirmed, all
    refuted → refuted; no part, an inconclusive part or fewer parts than `expected` → inconclusive; else partly."""
    if parts and all(v == "confirmed" for v in parts):
        return "confirmed"
    if parts and all(v == "refuted" for v in parts):
        return "refuted"
    if not parts or "inconclusive" in parts or (expected is not None and len(parts) < expected):
        return "inconclusive"
    return "partly"


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
    if judgement.verdict not in DECISIVE:
        return judgement, record
    if not deciding:
        shown = [k for k in differ if k in judgement.irrelevant]
        if not shown:
            return judgement, record
        # a decisive verdict under another condition says in its evidence why that condition does not matter
        why_not = "; ".join(f"this run's {k} is {_show(judgement.run[k])}, the seed's {_show(seed[k])}, which does "
                            f"not matter here: {judgement.irrelevant[k]}" for k in shown)
        return replace(judgement, evidence=f"{judgement.evidence.rstrip('. ')} — {why_not}"), record
    why = "; ".join(f"this run's {k} is {_show(judgement.run[k])}, the seed's {_show(seed[k])}" for k in deciding)
    evidence = (f"{judgement.evidence.rstrip('. ')} — the run would say {judgement.verdict}, but it cannot decide "
                f"the seed's statement: {why}")
    data = {**judgement.data, "verdict_under_run_conditions": judgement.verdict}
    return Judgement("inconclusive", evidence, data, judgement.basis, judgement.run, judgement.irrelevant), record
