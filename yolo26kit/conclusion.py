"""Conclusions: 2–4 plain sentences and one headline figure per investigation, computed from its results.json.

Each investigation writes its own in `investigations/<name>/conclude.py` (importable without torch, so pages
render without it): `conclude(r: View) -> (sentences by question, figure)` and `DEVICE`, the device class its
bug needs ("cuda", "cpu" or "any") when a ledger entry names no `conditions.device`. The claims about the bug
itself — the only ones that answer "bites here?" — carry `"bug": true` in the ledger. An investigation without a
conclude.py, or whose function raises (results changed shape), gets `generic`: its verdicts counted per question.

A function reads the results dict through `View` — verdicts by claim id (stable), numbers from a claim's `figure`
and `data` (what its judge returned as data), never from its evidence text: without them it does without the number. Every sentence is
gated on a verdict in this run: a claim with no verdict writes no sentence, and a sentence never states more than
the verdict and the numbers it quotes. Verdicts that do not decide are said plainly ("this run cannot decide",
"needs CUDA — this run cannot tell").
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from .verdicts import count_figure

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
    figure: dict[str, str] | None = None  # {"value", "label", "claim"}
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
        """The figure the claim's judge returned ({value, unit, measures[, of]}), None without one."""
        figure = (self.claims.get(cid) or {}).get("figure")
        return figure if isinstance(figure, dict) and figure.get("value") not in (None, "") else None

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


def numbers(value: Any) -> list[float]:
    """The numbers in a claim's data value: a list, or a dict of lists (per case) flattened; [] for anything else."""
    items = [x for v in value.values() for x in (v if isinstance(v, list) else [v])] if isinstance(value, dict) \
        else value if isinstance(value, list) else []
    return sorted(float(x) for x in items if isinstance(x, (int, float)) and not isinstance(x, bool))


def span(values: list[float], unit: str) -> str:
    """'0.55–0.79×' for a sorted list of numbers ('0.3 s' when all are the same)."""
    lo, hi = num(values[0]), num(values[-1])
    return f"{lo}{unit}" if lo == hi else f"{lo}–{hi}{unit}"


def show(value: Any) -> str:
    """A condition's value in words: a range as 'min–max', a list joined."""
    if isinstance(value, dict):
        return f"{value.get('min', '')}–{value.get('max', '')}".strip("–")
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)



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


def data_figure(claim: dict[str, Any]) -> dict[str, Any] | None:
    """A claim's figure made from its judgement data by its investigation's conclude.FIGURES (claim id → function of
    the data), for claims whose judge returned none (runs judged before their judge did); None without one."""
    make = getattr(module_of(str(claim.get("investigation") or "")), "FIGURES", {}).get(claim.get("id"))
    data = claim.get("data")
    if make is None or not isinstance(data, dict):
        return None
    try:
        return make(data)
    except (KeyError, TypeError, ValueError, AttributeError):  # data of another shape: no figure, never a wrong one
        return None


def count(held: Any, of: Any, unit: str, measures: str) -> dict[str, Any]:
    """A count figure as data: '3 of 5 <unit>' (verdicts.count_figure, as results.json keeps it)."""
    return count_figure(int(held), int(of), unit, measures).to_dict()


def concluder(investigation: str) -> Concluder | None:
    """The investigation's own `conclude(view)`, None when it has none."""
    return getattr(module_of(investigation), "conclude", None)


# ---------------------------------------------------------------- generic and entry point


def generic(r: View, entries: list[dict[str, Any]] | None = None) -> tuple[dict[str, str], dict[str, str] | None]:
    """Per question: the verdicts of its claims counted, in plain words; the figure: claims decided of judged."""
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
    decided = sum(1 for c in r.claims if r.v(c) not in UNDECIDED)
    figure = {"value": f"{decided}/{len(r.claims)}", "label": "claims this run decided", "claim": ""} if r.claims else None
    return out, figure


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
        extra, fig2 = generic(r, entries)
        for q, s in extra.items():
            by_q.setdefault(q, s)
        figure = figure or fig2
    if figure is None:
        figure = generic(r, entries)[1]
    if (results or {}).get("notebook_error"):
        by_q = {"other": f"The notebook failed: {error_line(results['notebook_error'])}", **by_q}
    return Conclusion(inv, r.device, {q: s for q, s in by_q.items() if s}, figure, is_generic, specific)


__all__ = ["PLAIN", "UNDECIDED", "QUESTION_WORDS", "Conclusion", "View", "clip", "error_line", "plain", "num", "numbers", "span",
           "show", "module_of", "data_figure", "count", "bug_claims", "device_need", "device_class", "concluder", "generic", "conclude"]
