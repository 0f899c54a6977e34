"""What a judge returns, the verdict words, the band and all/none/some rules, and the rules the engine enforces on
every judgement: the seed-conditions check and the premise rule (a step that did not run never decides a claim about
what happens when it runs)."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, TypeVar

VERDICTS = ("confirmed", "refuted", "partly", "not_reproduced", "inconclusive", "needs_cuda", "error")
# Verdicts that say something about the claim itself; the conditions rule and the judge audit apply to them.
DECISIVE = ("confirmed", "refuted", "partly", "not_reproduced")
BASES = ("measured", "derived", "both", "none")
T = TypeVar("T")


# What a figure's number is of its measurements, in words: one function below makes each kind, and pages say it as
# written here (a page never computes a statistic of its own).
STATISTICS = {"median": "median of {n} rounds", "count": "count of cases", "pooled": "all {n} rounds pooled",
              "single": "one measurement", "largest": "largest of {n} cases", "smallest": "smallest of {n} cases",
              "total": "total of {n} cases", "derived": "derived from the seed's own numbers"}
# The conditions a figure holds under, in the order pages name them.
FIGURE_CONDITIONS = ("model", "shape", "batch", "dtype", "device", "mode")
# The kit's back-end and path ids as people call them (pages show these; the id stays in a tooltip).
PATH_NAMES = {"eager": "eager", "eager_cpu": "eager on CPU", "export": "torch.export", "compile": "torch.compile",
              "compile_cudagraphs": "torch.compile with CUDA graphs", "aoti": "AOT Inductor",
              "et_cuda": "ExecuTorch CUDA", "et_xnnpack": "ExecuTorch XNNPACK", "executorch-cuda": "ExecuTorch CUDA",
              "executorch-xnnpack": "ExecuTorch XNNPACK", "onnxruntime": "ONNX Runtime", "tensorrt": "TensorRT"}


def path_name(value: str) -> str:
    """A path or back-end id as people call it, its qualifier kept: 'et_cuda (op_index)' → 'ExecuTorch CUDA
    (op_index)'; text that starts with no known id unchanged."""
    head, sep, rest = str(value).partition(" ")
    return f"{PATH_NAMES[head]}{sep}{rest}" if head in PATH_NAMES else str(value)


@dataclass(frozen=True)
class Figure:
    """The one measured number that answers a claim: its value, unit, what it measures (`of`: the total of a count,
    '3 of 5'), the statistic it is of its measurements (STATISTICS; `rounds`: how many rounds or cases, `low`–`high`:
    their span) and the conditions it holds under (FIGURE_CONDITIONS first). Pages and conclusions show it as it is;
    no figure is ever parsed out of an evidence sentence, and no page computes one."""

    value: float | int | str
    unit: str = ""
    measures: str = ""
    of: int | None = None
    statistic: str = ""
    conditions: dict[str, Any] = field(default_factory=dict)
    rounds: int | None = None
    low: float | None = None
    high: float | None = None

    @property
    def text(self) -> str:
        """'1.78×', '3 of 3 loads', '7.5 ms': the value in 3 significant digits with its unit."""
        shown = short(self.value)
        if self.of is not None:
            shown = f"{shown} of {self.of}"
        return with_unit(shown, self.unit)

    @property
    def statistic_text(self) -> str:
        """'median of 8 rounds (2.1–3.3×)', 'one measurement'; '' for a figure recorded without its statistic."""
        words = STATISTICS.get(self.statistic, self.statistic)
        if self.rounds == 1:  # not 'median of 1 round' nor 'total of 1 case': one of it is that one
            words = {"median": "one round", "pooled": "one round", "total": "one case", "largest": "one case",
                     "smallest": "one case"}.get(self.statistic, words.replace("rounds", "round").replace("cases", "case"))
        words = words.replace("{n}", str(self.rounds)) if self.rounds is not None else \
            words.replace(" of {n}", "").replace(" {n}", "")
        if self.low is not None and self.high is not None and short(self.low) != short(self.high):
            words += f", {with_unit(f'{short(self.low)}–{short(self.high)}', self.unit)}"
        return words

    @property
    def conditions_text(self) -> str:
        """'yolo26n, 32x5x1024, batch 1, fp32, cuda': the conditions, FIGURE_CONDITIONS first, each value once."""
        keys = [*FIGURE_CONDITIONS, *sorted(set(self.conditions) - set(FIGURE_CONDITIONS))]
        parts = [condition_words(k, self.conditions[k]) for k in keys
                 if k in self.conditions and self.conditions[k] not in (None, "", [])]
        return ", ".join(dict.fromkeys(parts))

    @property
    def caption(self) -> str:
        """What the figure is, in full: what it measures, its statistic and its conditions."""
        return "; ".join(p for p in (self.measures, self.statistic_text, self.conditions_text) if p)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None and v != {} and v != ""}

    @classmethod
    def from_dict(cls, data: Any) -> Figure | None:
        """The figure results.json keeps (any release of it); None for anything that is not one."""
        if not isinstance(data, Mapping) or data.get("value") in (None, ""):
            return None
        known = {k: data[k] for k in ("value", "of", "statistic", "rounds", "low", "high") if data.get(k) is not None}
        conditions = data.get("conditions")
        return cls(unit=str(data.get("unit") or ""), measures=str(data.get("measures") or ""),
                   conditions=dict(conditions) if isinstance(conditions, Mapping) else {}, **known)


def short(value: Any) -> str:
    """A number in 3 significant digits (an integer whole); anything else as it is."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return str(value) if isinstance(value, int) else f"{value:.3g}"


def with_unit(shown: str, unit: str) -> str:
    """'2.1×', '7.5 ms': a unit that starts with × or % sits right after the number."""
    unit = unit.strip()
    return f"{shown}{unit}" if not unit or unit[0] in "×%" else f"{shown} {unit}"


def condition_words(key: str, value: Any) -> str:
    """One condition of a figure in words: 'batch 1', 'fp32', 'cpu / cuda', 'capture scalar outputs off'; each value
    of a list once."""
    values = list(dict.fromkeys(value)) if isinstance(value, (list, tuple)) else [value]
    if all(isinstance(v, bool) for v in values):
        return f"{key.replace('_', ' ')} " + " / ".join("on" if v else "off" for v in values)
    text = " / ".join(dict.fromkeys(path_name(v) if key == "mode" else str(v) for v in values))  # each value once
    # the named conditions read by their value ('fp32', 'cuda'); a batch and any other condition by name and value
    return text if key in FIGURE_CONDITIONS and key != "batch" else f"{key.replace('_', ' ')} {text}"


def figure_conditions(**conditions: Any) -> dict[str, Any]:
    """A figure's conditions without those that do not apply (None)."""
    return {k: v for k, v in conditions.items() if v is not None}


def one_figure(value: float | int, unit: str, measures: str, **conditions: Any) -> Figure:
    """One measurement as a claim's figure."""
    return Figure(value, unit, measures, statistic="single", conditions=figure_conditions(**conditions))


def derived_figure(value: float | int | str, unit: str, measures: str, **conditions: Any) -> Figure:
    """A number derived from the seed's own numbers (basis derived), not measured, as a claim's figure."""
    return Figure(value, unit, measures, statistic="derived", conditions=figure_conditions(**conditions))


def count_figure(held: int, tried: int, what: str, measures: str, **conditions: Any) -> Figure:
    """'2 of 3 <what>': a count of cases as a figure."""
    return Figure(int(held), what, measures, int(tried), "count", figure_conditions(**conditions))


def extreme_figure(values: Iterable[float], unit: str, measures: str, largest: bool = True,
                   **conditions: Any) -> Figure:
    """The largest (or smallest) of several cases' values as a claim's figure, with their count and span."""
    cases = sorted(float(v) for v in values)
    return Figure(cases[-1] if largest else cases[0], unit, measures, statistic="largest" if largest else "smallest",
                  conditions=figure_conditions(**conditions), rounds=len(cases), low=cases[0], high=cases[-1])


def total_figure(values: Iterable[int], unit: str, measures: str, **conditions: Any) -> Figure:
    """The sum of several cases' counts as a claim's figure."""
    cases = [int(v) for v in values]
    return Figure(sum(cases), unit, measures, statistic="total", conditions=figure_conditions(**conditions),
                  rounds=len(cases))


def pooled_figure(value: float, unit: str, measures: str, rounds: int, **conditions: Any) -> Figure:
    """A statistic of all rounds pooled (pooled_decision's value) as a claim's figure."""
    return Figure(float(value), unit, measures, statistic="pooled", conditions=figure_conditions(**conditions),
                  rounds=int(rounds))


@dataclass(frozen=True)
class Finding:
    """A bug the run met that no seed claims: a short title, the evidence, the smallest input that shows it. The
    stack it was seen on and the claims it touches are filled in when a notebook records it."""

    id: str
    title: str
    evidence: str
    smallest_input: str = ""
    claims: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "claims": list(self.claims)}


@dataclass
class Judgement:
    """One judge's answer: the verdict, a sentence of evidence with the numbers, the data behind it, how it was
    reached (`basis`), the run's values of the conditions that decide the claim (`run`), the conditions that
    differ from the seed's but were shown not to matter (`irrelevant`: condition → why), the figure that answers it,
    `premise`: why the claim's premise is unmet (a step the claim is about did not run: the engine then keeps the
    claim undecided, see `settle`), and the findings the judge met on the way."""

    verdict: str
    evidence: str
    data: dict[str, Any] = field(default_factory=dict)
    basis: str = "measured"
    run: dict[str, Any] = field(default_factory=dict)
    irrelevant: dict[str, str] = field(default_factory=dict)
    figure: Figure | None = None
    premise: str = ""
    findings: tuple[Finding, ...] = ()

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
# ...and only with a margin and a stability check, so the same code gives the same verdict batch after batch: the
# median must clear the band's edge by MARGIN of the edge's size, and at least STABLE_SHARE of RESAMPLES bootstrap
# resamples of the rounds (a fixed seed: the same rounds always decide the same way) must put their median clear on
# the same side. Rounds whose median sits near an edge stay undecided (more rounds may decide), never flip.
MARGIN = 0.05
STABLE_SHARE = 0.9
RESAMPLES = 400
# ...and only when the rounds agree with each other: from MIN_ROUNDS rounds on, rounds on both sides of an edge need
# their median clear of the nearest edge by CLEARANCE_IQR of the rounds' interquartile range. Rounds a busy machine scattered (a ratio of
# 1.5-11.7x beside a batch's compiles, 1.5-1.7x without) then keep being timed, and stay undecided, instead of
# deciding on where the scatter happened to fall.
CLEARANCE_IQR = 0.5


def _side(value: float, lo: float, hi: float, margin: float = 0.0) -> str:
    """inside / outside the band [lo, hi], or `edge` when within `margin` (a share of the edge's size) of an edge."""
    lo_pad = margin * abs(lo) if math.isfinite(lo) else 0.0  # an open end (inf) has no edge to keep clear of
    hi_pad = margin * abs(hi) if math.isfinite(hi) else 0.0
    lo_in, hi_in, lo_out, hi_out = lo + lo_pad, hi - hi_pad, lo - lo_pad, hi + hi_pad
    if lo_in <= value <= hi_in:
        return "inside"
    if value < lo_out or value > hi_out:
        return "outside"
    return "edge"


def interquartile_range(rounds: Sequence[float]) -> float:
    """Q3 - Q1 of the rounds (inclusive quartiles: a real span of what was measured)."""
    q1, _, q3 = statistics.quantiles(sorted(rounds), n=4, method="inclusive")
    return q3 - q1


def scattered(rounds: Sequence[float], lo: float, hi: float) -> bool:
    """True when MIN_ROUNDS or more rounds fall on both sides of the band's edge and spread so widely that their
    median lies closer to the nearest edge than CLEARANCE_IQR of their interquartile range: where the median falls
    is then the machine's noise. Rounds all on one side are never scattered, however wide."""
    if len(rounds) < MIN_ROUNDS:
        return False  # fewer rounds (a single figure, a p10/median/p90 triple) have no spread of rounds to read
    edges = [edge for edge in (lo, hi) if math.isfinite(edge)]
    mid = median_round(rounds)
    if not edges or len({_side(v, lo, hi) for v in rounds} | {_side(mid, lo, hi)}) == 1:
        return False
    return min(abs(mid - edge) for edge in edges) < CLEARANCE_IQR * interquartile_range(rounds)


def median_round(rounds: Iterable[float]) -> float:
    """The rounds rule's median: the lower middle round."""
    ordered = sorted(rounds)
    return ordered[(len(ordered) - 1) // 2]  # a real round (the lower middle one): a mean of two could fall in between


def stability(values: Iterable[float], lo: float, hi: float, margin: float = MARGIN) -> dict[str, float]:
    """The share of bootstrap resamples of the rounds whose median lies clear inside, clear outside, or at an edge of
    the band (a fixed seed: deterministic for the same rounds)."""
    rounds = sorted(float(v) for v in values)  # the order rounds came in must not change the answer
    if not rounds:
        return {"inside": 0.0, "outside": 0.0, "edge": 1.0}
    return _resampled_sides(rounds, median_round, lo, hi, margin)


def _resampled_sides(rounds: Sequence[T], statistic: Callable[[Sequence[T]], float], lo: float, hi: float,
                     margin: float) -> dict[str, float]:
    """The share of RESAMPLES bootstrap resamples of `rounds` whose statistic lies clear inside, clear outside, or at
    an edge of the band (a fixed seed: the same rounds always give the same shares)."""
    rng = random.Random(0)
    sides = [_side(float(statistic(rng.choices(rounds, k=len(rounds)))), lo, hi, margin) for _ in range(RESAMPLES)]
    return {side: sides.count(side) / RESAMPLES for side in ("inside", "outside", "edge")}


def band_decision(values: Iterable[float], lo: float, hi: float, *, min_rounds: int = 1) -> str | None:
    """The rounds rule against the seed's band [lo, hi]: `confirmed` when at least ROUNDS_SHARE of the rounds and
    their median lie inside the band, `refuted` when they lie outside it (either side), in both cases with the
    median clear of the edge by MARGIN and STABLE_SHARE of bootstrap resamples agreeing, and the rounds not
    `scattered`; None when fewer than `min_rounds` rounds were timed or the rounds do not decide (more rounds may
    decide)."""
    rounds = sorted(float(v) for v in values)
    if len(rounds) < max(1, min_rounds):
        return None
    n = len(rounds)
    side = _side(median_round(rounds), lo, hi, MARGIN)
    if side == "edge":
        return None
    agree = sum(_side(v, lo, hi) == side for v in rounds)
    if agree < ROUNDS_SHARE * n or scattered(rounds, lo, hi) or stability(rounds, lo, hi)[side] < STABLE_SHARE:
        return None
    return "confirmed" if side == "inside" else "refuted"


def pooled_decision(rounds: Sequence[T], statistic: Callable[[Sequence[T]], float], lo: float, hi: float, *,
                    min_rounds: int = 1) -> tuple[str | None, dict[str, float]]:
    """A band decision on one statistic of all rounds pooled (a spread over every call is steadier than any one
    round's): decided when `statistic(rounds)` lies clear of the band's edge by MARGIN and at least STABLE_SHARE of
    RESAMPLES bootstrap resamples of whole rounds (what was timed in turn stays together) put it clear on the same
    side. Returns (`confirmed`/`refuted`/None, {"value", "inside", "outside", "edge"}): None when fewer than
    `min_rounds` rounds or no decision."""
    if not rounds:
        return None, {"value": math.nan, "inside": 0.0, "outside": 0.0, "edge": 1.0}
    value = float(statistic(rounds))
    shares = _resampled_sides(rounds, statistic, lo, hi, MARGIN)
    side = _side(value, lo, hi, MARGIN)
    if len(rounds) < max(1, min_rounds) or side == "edge" or shares[side] < STABLE_SHARE:
        return None, {"value": value, **shares}
    return ("confirmed" if side == "inside" else "refuted"), {"value": value, **shares}


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


def rounds_figure(values: Iterable[float], unit: str, measures: str, **conditions: Any) -> Figure:
    """The median round (median_round, the rounds rule's median) as a claim's figure, with the rounds' count and span."""
    rounds = sorted(float(v) for v in values)
    return Figure(median_round(rounds), unit, measures, statistic="median", conditions=figure_conditions(**conditions),
                  rounds=len(rounds), low=rounds[0], high=rounds[-1])


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


def _distinct(run: Mapping[str, Any]) -> dict[str, Any]:
    """Run conditions with each list's repeated values dropped (a value per measured case says no more than once)."""
    return {k: list(dict.fromkeys(v)) if isinstance(v, list) and all(isinstance(x, Hashable) for x in v) else v
            for k, v in run.items()}


def _show(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def unmet(premise: str, evidence: str = "", run: Mapping[str, Any] | None = None,
          findings: Iterable[Finding] = ()) -> Judgement:
    """The judgement of a claim about what happens when a step runs, where that step did not run (`premise`: what
    failed and how): undecided, basis none, the failure named; a finding of its own where the judge names one."""
    return Judgement("inconclusive", evidence or premise, basis="none", run=dict(run or {}), premise=premise,
                     findings=tuple(findings))


def _premise_rule(judgement: Judgement) -> Judgement:
    """A judgement whose premise is unmet never decides: a failure decides only claims about whether a thing works
    (those judges say so with a verdict and no `premise`)."""
    if not judgement.premise or judgement.verdict in ("needs_cuda", "error"):
        return judgement
    if judgement.verdict == "inconclusive" and judgement.basis == "none":
        return judgement
    evidence = (f"{judgement.premise} — the claim is about what happens when it runs, so this run cannot decide it"
                + (f" (the judge would have said {judgement.verdict})" if judgement.verdict in DECISIVE else ""))
    return replace(judgement, verdict="inconclusive", evidence=evidence, basis="none",
                   data={**judgement.data, "premise_unmet": judgement.premise})


# The run conditions a judge records (Judgement.run) that a figure holds under, by the figure's condition name.
RUN_TO_FIGURE = {"model": ("model",), "shape": ("shape", "imgsz"), "batch": ("batch",),
                 "dtype": ("dtype", "precision"), "device": ("device",), "mode": ("mode", "backend")}


def complete_figure(figure: Figure | None, run: Mapping[str, Any], statistic: bool = True) -> Figure | None:
    """A judge's figure with what it left unsaid filled in from the judgement itself: the conditions it holds under
    from the run conditions the judge recorded (FIGURE_CONDITIONS it does not name), and, with `statistic`, its
    statistic (a count when it has `of`, else one measurement: what a judge means by a bare figure; a page reading
    an older results.json leaves a figure recorded without one as it is)."""
    if figure is None:
        return None
    conditions = dict(figure.conditions)
    for name, keys in RUN_TO_FIGURE.items():
        found = next((run[k] for k in keys if run.get(k) not in (None, "", [])), None)
        if name not in conditions and found is not None:
            conditions[name] = found
    told = figure.statistic or (("count" if figure.of is not None else "single") if statistic else "")
    return replace(figure, conditions=conditions, statistic=told)


def settle(judgement: Judgement, seed: Mapping[str, Any]) -> tuple[Judgement, dict[str, Any]]:
    """Apply the engine's rules: the premise rule (`_premise_rule`), the figure's conditions completed from the run's
    (`complete_figure`), then the conditions rule: a decisive verdict
    whose run differs from the seed's conditions in a way that was not shown not to matter becomes `inconclusive`,
    and the evidence names the condition. Returns the final judgement and the `conditions` record for results.json
    ({seed, run, differ, irrelevant})."""
    judgement = replace(_premise_rule(judgement), run=_distinct(judgement.run))
    judgement = replace(judgement, figure=complete_figure(judgement.figure, judgement.run))
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
    return replace(judgement, verdict="inconclusive", evidence=evidence, data=data), record
