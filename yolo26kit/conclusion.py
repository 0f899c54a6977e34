"""Conclusions: 2–4 plain sentences and one headline figure per investigation, computed from its results.json.

Each investigation writes its own in `investigations/<name>/conclude.py` (importable without torch, so pages
render without it): `conclude(r: View) -> (sentences by question, figure)` and `DEVICE`, the device class its
bug needs ("cuda", "cpu" or "any") when a ledger entry names no `conditions.device`. The claims about the bug
itself — the only ones that answer "bites here?" — carry `"bug": true` in the ledger. An investigation without a
conclude.py, or whose function raises (results changed shape), gets `generic`: its verdicts counted per question.

A function reads the results dict through `View` — verdicts by claim id (stable), numbers only from a claim's
`figure` (what its judge returned: `View.quote`), never computed from its data nor read from its evidence text: a
claim without a figure gives no number. Its headline figure names a claim (`headline`), and `conclude` fills its
value in from that claim's figure, so a headline always shows the number the claim's verdict rests on, with its
statistic and conditions; without one the first decided claim with a figure (banded claims first) heads the
conclusion, and without any there is no headline number. Every sentence is gated on a verdict in this run: a claim
with no verdict writes no sentence, and a sentence never states more than the verdict and the figures it quotes.
Verdicts that do not decide are said plainly ("this run cannot decide", "needs CUDA — this run cannot tell").
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from .verdicts import Figure, complete_figure, condition_words

PLAIN = {"confirmed": "holds", "refuted": "does not hold", "partly": "holds only in part",
         "not_reproduced": "did not reproduce", "inconclusive": "this run cannot decide",
         "needs_cuda": "needs CUDA — this run cannot tell", "error": "could not be judged (its judge failed)"}
UNDECIDED = ("inconclusive", "needs_cuda", "error")
QUESTION_WORDS = {"bites": "Does the problem bite here", "fix": "Does the fix hold", "cost": "Is the cost as the seed says",
                  "other": "Other claims"}
INVESTIGATIONS = Path(__file__).resolve().parent / "investigations"
Concluder = Callable[["View"], "tuple[dict[str, str], dict[str, str] | None]"]


@dataclass
class Conclusion:
    """What an investigation found in one run: sentences by question (bites / fix / cost / other) and a figure."""

    investigation: str
    device: str
    by_question: dict[str, str] = field(default_factory=dict)
    figure: dict[str, str] | None = None  # {"value", "label", "claim"}: the value is that claim's figure
    generic: bool = False
    specific: tuple[str, ...] = ()  # the questions whose sentence the investigation's own function wrote

    def sentence(self, question: str) -> str:
        """The investigation's own sentence for a question ('' when only the generic counts speak to it)."""
        return self.by_question.get(question, "") if question in self.specific else ""

    @property
    def sentences(self) -> list[str]:
        return [s for s in self.by_question.values() if s][:4]


class View:
    """Read-only access to one results.json dict that never raises on a missing field."""

    def __init__(self, results: dict[str, Any]) -> None:
        self.results = results
        self.claims = {c["id"]: c for c in results.get("claims") or [] if isinstance(c, dict) and c.get("id")}
        env = results.get("environment") or {}
        self.device = str(env.get("device_type") or "unknown")
        self.torch = str(env.get("torch") or "")

    def v(self, cid: str) -> str:
        return str((self.claims.get(cid) or {}).get("verdict") or "")

    def data(self, cid: str, key: str) -> Any:
        data = (self.claims.get(cid) or {}).get("data")
        return data.get(key) if isinstance(data, dict) else None

    def figure(self, cid: str) -> dict[str, Any] | None:
        """The figure the claim's judge returned ({value, unit, measures[, of, statistic, conditions]}), None
        without one."""
        figure = (self.claims.get(cid) or {}).get("figure")
        return figure if isinstance(figure, dict) and figure.get("value") not in (None, "") else None

    def fig(self, cid: str) -> Figure | None:
        """The claim's figure as a verdicts.Figure, its conditions completed from the run's (claim_figure)."""
        return claim_figure(self.claims.get(cid))

    def quote(self, cid: str, statistic: bool = True) -> str:
        """A claim's figure as a sentence quotes it: '1.56× (median of 5 rounds (1.5–1.57×))', '3 of 5 packages
        crash on load'; '' without a figure."""
        figure = self.fig(cid)
        if figure is None:
            return ""
        told = figure.statistic_text if statistic and figure.statistic not in ("count", "single", "") else ""
        return f"{figure.text} ({told})" if told else figure.text

    def count(self, cid: str) -> tuple[int, int] | None:
        """(held, of) of a claim whose figure is a count ('3 of 5'), None otherwise."""
        figure = self.figure(cid)
        if not figure or figure.get("of") is None or not isinstance(figure.get("value"), (int, float)):
            return None
        return int(figure["value"]), int(figure["of"])

    def table(self, name: str) -> list[dict[str, Any]]:
        rows = (self.results.get("tables") or {}).get(name)
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def clip(text: Any, limit: int) -> str:
    """The text whole when it fits, else cut at the last word boundary before `limit` and marked '…': a page
    never shows a word cut in two."""
    text = " ".join(str(text or "").split())
    if len(text) <= limit:
        return text
    cut = text[:limit]
    return (cut[: cut.rfind(" ")] if " " in cut else cut).rstrip(" ,;:(") + " …"


def error_line(error: Any) -> str:
    """An error as a reader needs it: its first line (type and message), whole."""
    lines = [line.strip() for line in str(error or "").splitlines() if line.strip()]
    return lines[0] if lines else ""


def plain(r: View, cid: str, subject: str) -> str:
    """'<subject>: <verdict in plain words>.' — the fallback sentence for a claim with a verdict, '' without."""
    v = r.v(cid)
    return f"{subject}: {PLAIN.get(v, v)}." if v else ""


def num(x: Any) -> str:
    """A number in 3 significant digits; anything else as it is."""
    try:
        f = float(x)
    except (TypeError, ValueError):
        return str(x)
    return f"{f:.3g}"


def show(value: Any) -> str:
    """A condition's value in words: a range as 'min–max', a list joined."""
    if isinstance(value, dict):
        return f"{value.get('min', '')}–{value.get('max', '')}".strip("–")
    return ", ".join(map(str, dict.fromkeys(value))) if isinstance(value, (list, tuple)) else str(value)


# ---------------------------------------------------------------- what each investigation says of itself


@cache
def module_of(investigation: str) -> ModuleType | None:
    """The investigation's conclude.py, loaded without its package (whose measuring code imports torch); None
    without one."""
    name = f"yolo26kit.investigations.{investigation}.conclude"
    if name in sys.modules:
        return sys.modules[name]
    path = INVESTIGATIONS / investigation / "conclude.py"
    if not investigation.isidentifier() or not path.is_file():
        return None
    if f"yolo26kit.investigations.{investigation}" in sys.modules:  # the package is loaded: import it the usual way
        return importlib.import_module(name)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def name_of(investigation: str) -> str:
    """The investigation's name for people (its conclude.NAME), else its id with spaces for underscores."""
    name = getattr(module_of(investigation), "NAME", "") if investigation else ""
    return str(name or investigation.replace("_", " "))


def bug_claims(entries: list[dict[str, Any]]) -> list[str]:
    """The ids of the ledger entries marked `"bug": true`: the claims about the bug itself."""
    return [str(e["id"]) for e in entries if isinstance(e, dict) and e.get("bug") and e.get("id")]


def device_need(investigation: str) -> str:
    """The device class the investigation's bug needs (its conclude.DEVICE), "any" when it does not say."""
    module = module_of(investigation)
    return str(getattr(module, "DEVICE", "any") or "any").lower()


def device_class(entry: dict[str, Any] | None, investigation: str) -> str:
    """cuda / cpu / any: the ledger entry's conditions.device when present (a list: cuda only if all are cuda),
    else the investigation's DEVICE."""
    dev = ((entry or {}).get("conditions") or {}).get("device")
    if isinstance(dev, str) and dev:
        return dev.lower()
    if isinstance(dev, list) and dev:
        devs = {str(d).lower() for d in dev}
        return devs.pop() if len(devs) == 1 else "any"
    return device_need(investigation)


def claim_figure(claim: dict[str, Any] | None) -> Figure | None:
    """The figure a claim's judge returned, with the conditions it holds under completed from the run's conditions
    the judge recorded (verdicts.complete_figure: results.json made before figures named their own); None when its
    judge gave none: no page ever makes one from the claim's data."""
    figure = Figure.from_dict((claim or {}).get("figure"))
    if figure is None:
        return None
    run = ((claim or {}).get("conditions") or {}).get("run") or {}
    return complete_figure(figure, run if isinstance(run, dict) else {}, statistic=False)


def differs_from_seed(claim: dict[str, Any] | None) -> str:
    """The conditions a claim ran under that are not the seed's, in words ('capture scalar outputs off (the seed's:
    on)', 'torch 2.14.1 (the seed's: 2.11–2.11.99)'); '' when none differ."""
    cond = (claim or {}).get("conditions") or {}
    seed, run = cond.get("seed") or {}, cond.get("run") or {}

    def said(key: str, value: Any) -> str:
        words = condition_words(key, value) if not isinstance(value, dict) else show(value)
        return words.removeprefix(key.replace("_", " ") + " ")

    return "; ".join(f"{k.replace('_', ' ')} {said(k, run[k])} (the seed's: {said(k, seed.get(k))})"
                     for k in cond.get("differ") or [] if k in run)


def caption(claim: dict[str, Any] | None, figure: Figure, label: str = "") -> str:
    """What a figure is, for a page: what it measures (or `label`), its statistic, its conditions, then those the
    run does not share with the seed (said once, beside the seed's)."""
    differ = differs_from_seed(claim)
    apart = set(((claim or {}).get("conditions") or {}).get("differ") or [])
    shared = replace(figure, conditions={k: v for k, v in figure.conditions.items() if k not in apart})
    return "; ".join(p for p in (label or figure.measures, figure.statistic_text, shared.conditions_text,
                                 f"not the seed's: {differ}" if differ else "") if p)


def headline(r: View, cid: str, label: str = "") -> dict[str, str] | None:
    """A conclusion's headline figure: the claim's own figure (value, and as label its caption), None when the
    claim has none."""
    figure = r.fig(cid)
    if figure is None:
        return None
    return {"value": figure.text, "label": caption(r.claims.get(cid), figure, label), "claim": cid}


def first_headline(r: View, entries: list[dict[str, Any]] | None) -> dict[str, str] | None:
    """The headline of a conclusion that named none: the first decided claim with a figure, banded claims (a
    measured quantity against the seed's) first, in ledger order; None without one."""
    order = [str(e.get("id")) for e in entries or [] if isinstance(e, dict) and e.get("id")] or list(r.claims)
    banded = {str(e.get("id")) for e in entries or [] if isinstance(e, dict) and e.get("band")}
    decided = [cid for cid in order if r.v(cid) and r.v(cid) not in UNDECIDED and r.fig(cid) is not None]
    decided.sort(key=lambda cid: cid not in banded)
    return headline(r, decided[0]) if decided else None


def concluder(investigation: str) -> Concluder | None:
    """The investigation's own `conclude(view)`, None when it has none."""
    return getattr(module_of(investigation), "conclude", None)


# ---------------------------------------------------------------- generic and entry point


def generic(r: View, entries: list[dict[str, Any]] | None = None) -> tuple[dict[str, str], dict[str, str] | None]:
    """Per question: the verdicts of its claims counted, in plain words; the figure: the first decided claim's
    (first_headline), never a count of claims."""
    by_q: dict[str, list[str]] = {}
    question = {e.get("id"): e.get("question") or "other" for e in entries or []}
    for cid in r.claims:
        by_q.setdefault(question.get(cid, "other"), []).append(r.v(cid))
    out = {}
    for q in ("bites", "fix", "cost", "other"):
        vs = by_q.get(q)
        if not vs:
            continue
        counts = {v: vs.count(v) for v in dict.fromkeys(vs)}
        out[q] = (f"{QUESTION_WORDS[q]}? Of {len(vs)} claim{'s' if len(vs) != 1 else ''}: "
                  + ", ".join(f"{n} {PLAIN.get(v, v)}" for v, n in counts.items()) + ".")
    return out, first_headline(r, entries)


def settled_headline(r: View, figure: dict[str, str] | None) -> dict[str, str] | None:
    """The headline a conclude() returned, its value always its claim's figure (a headline that names no claim, or
    a claim without a figure, is none)."""
    if not isinstance(figure, dict) or not figure.get("claim"):
        return None
    return headline(r, str(figure["claim"]), str(figure.get("label") or ""))


def conclude(results: dict[str, Any], entries: list[dict[str, Any]] | None = None) -> Conclusion:
    """The conclusion of one investigation's results.json dict (see the module doc)."""
    r = View(results or {})
    inv = str((results or {}).get("investigation") or "")
    fn = concluder(inv)
    is_generic = fn is None
    try:
        by_q, figure = fn(r) if fn else generic(r, entries)
    except Exception:  # noqa: BLE001 - results changed shape: say what the verdicts say
        by_q, figure, is_generic = *generic(r, entries), True
    specific = () if is_generic else tuple(q for q, s in by_q.items() if s)
    if fn and len([s for s in by_q.values() if s]) < 2:  # too little for a conclusion: add the counts
        for q, s in generic(r, entries)[0].items():
            by_q.setdefault(q, s)
    figure = settled_headline(r, figure) or first_headline(r, entries)
    if (results or {}).get("notebook_error"):
        by_q = {"other": f"The notebook failed: {error_line(results['notebook_error'])}", **by_q}
    return Conclusion(inv, r.device, {q: s for q, s in by_q.items() if s}, figure, is_generic, specific)


__all__ = ["PLAIN", "UNDECIDED", "QUESTION_WORDS", "Conclusion", "View", "clip", "error_line", "plain", "num", "show",
           "module_of", "name_of", "claim_figure", "caption", "differs_from_seed", "headline", "first_headline",
           "bug_claims",
           "device_need", "device_class", "concluder", "generic", "settled_headline", "conclude"]
