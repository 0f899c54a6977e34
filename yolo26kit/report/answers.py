"""Answers, coverage and the comparison across runs: what the run and index pages say, from results.json.

How an answer is computed (one per investigation and question: bites / fix / cost, from the claims ledger):
the claims of the investigation whose ledger `question` is that question, in ledger order, with their verdicts
in the run; for "bites", only the claims about the bug itself (the ledger's `"bug": true`) on the device class the
bug needs (conclusion.device_class) decide — a CPU run of a CUDA-only bug says "needs CUDA — this run cannot tell".
The headline aggregates the decisive verdicts (confirmed → yes, refuted / not_reproduced → no, partly → partly) by
`aggregate`: all alike → that word; "fix holds?" is the weakest link (a fix that fails or only moves the failure on
one path the seed claims it for does not hold there, so any no → "does not hold"); otherwise some yes and some no →
partly. None decisive → the first claim's inconclusive / needs_cuda / error. The deciding claim is the claim that gave
the headline its word (ledger order), else the first with any verdict; a mixed answer also names the first claim of
each other word (`parts`), so that what did not hold is shown beside what held; the answer's sentence is the
conclusion's sentence for that question, else the deciding claim's whole first sentence (never cut mid-word).
The index takes each investigation's answers from the newest run of each device type that judged it
(answering_runs). Nothing in an answer is typed in: it all comes from results.json.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup

from .. import findings, verdicts
from ..conclusion import Conclusion, bug_claims, conclude, device_class, name_of

SENTENCE_LIMIT = 240  # characters of an evidence's first sentence shown as the one-line answer
QUESTIONS = ("bites", "fix", "cost")
QUESTION_LABELS = {"bites": "bites here?", "fix": "fix holds?", "cost": "cost?", "other": "other claims"}
DECISIVE = verdicts.DECISIVE
POLARITY = {"confirmed": "yes", "refuted": "no", "not_reproduced": "no", "partly": "partly"}
HEADLINES = {
    "bites": {"yes": "yes", "no": "no", "partly": "partly"},
    "fix": {"yes": "holds", "no": "does not hold", "partly": "partly holds"},
    "cost": {"yes": "as the seed says", "no": "not as the seed says", "partly": "partly as the seed says"},
    "other": {"yes": "confirmed", "no": "not confirmed", "partly": "partly"},
}
UNDECIDED = {"inconclusive": "cannot tell", "needs_cuda": "needs CUDA", "error": "error"}
UNTESTABLE_LEDGER = "untestable"  # data/claims/untestable.json: claims no investigation can test
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=[A-Z(\"'])")


# ---------------------------------------------------------------- ledger entries and runs


def question_of(entry: dict[str, Any]) -> str:
    """Which answer a ledger entry feeds: its `question` (bites / fix / cost), `other` when absent or unknown."""
    q = entry.get("question") or "other"
    return q if q in QUESTION_LABELS else "other"


def first_sentence(text: str, limit: int = SENTENCE_LIMIT) -> str:
    """The first sentence of an evidence string; past `limit` characters it ends at the last clause boundary (';',
    ' — ', ':') or word before the limit, marked '…': never mid-word."""
    text = " ".join(str(text or "").split())
    head = _SENTENCE_END.split(text, maxsplit=1)[0]
    if len(head) <= limit:
        return head
    cut = head[:limit]
    for mark in ("; ", " — ", ": ", ", ", " "):
        at = cut.rfind(mark)
        if at > limit // 2:
            return cut[:at].rstrip(" ,;:—") + " …"
    return cut[: cut.rfind(" ")].rstrip() + " …" if " " in cut else cut[: limit - 1] + "…"  # one long token


@dataclass
class Run:
    """One run folder: its run.json (may be absent in old runs), results.json files and every verdict by claim id."""

    dir: Path
    name: str
    meta: dict[str, Any]
    results: list[dict[str, Any]]
    environment: dict[str, Any]
    verdicts: dict[str, dict[str, Any]]
    rel: str = ""  # the folder relative to the index that links it

    @property
    def device_type(self) -> str:
        return str(self.environment.get("device_type") or "unknown")

    @property
    def device_label(self) -> str:
        device = self.environment.get("device") or ""
        return f"{self.device_type} · {device}" if device else self.device_type

    @property
    def investigations(self) -> list[str]:
        return [r["investigation"] for r in self.results]

    @property
    def planned(self) -> list[str]:
        """The investigations the run set out to run (run.json's notebooks), else those that left results."""
        names = [n.get("name") for n in self.meta.get("notebooks") or [] if isinstance(n, dict) and n.get("name")]
        return list(dict.fromkeys([*names, *self.investigations]))

    @property
    def seconds(self) -> float:
        return float(self.meta.get("wall_seconds") or sum(r.get("seconds") or 0 for r in self.results))

    @property
    def date(self) -> str:
        """When the run started, for people: '29 Nov 2026, 03:25 UTC' (run.json's, a results.json's, else the run
        id's time; '' when none can be read)."""
        return readable_date(str(self.meta.get("started") or next((r.get("started") for r in self.results
                                                                        if r.get("started")), "") or self.name))


def date_span(first: str, last: str) -> str:
    """Two readable dates as one span: '6 Dec 2026, 11:45–11:50 UTC' on one day, else 'first to last'."""
    day, _, time = first.partition(", ")
    last_day, _, last_time = last.partition(", ")
    if first == last:
        return first
    if day == last_day and time.endswith(" UTC") and last_time.endswith(" UTC"):
        return f"{day}, {time.removesuffix(' UTC')}–{last_time}"
    return f"{first} to {last}"


def readable_date(stamp: str) -> str:
    """An ISO time or a run id's leading '20261129T032557Z' as '29 Nov 2026, 03:25 UTC'; '' when it is neither."""
    from datetime import datetime, timezone

    for fmt, text in (("%Y%m%dT%H%M%SZ", stamp[:16]), (None, stamp)):
        try:
            when = datetime.strptime(text, fmt) if fmt else datetime.fromisoformat(text)
        except ValueError:
            continue
        when = when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)
        return when.strftime("%-d %b %Y, %H:%M UTC")
    return ""


def _load_results(run_dir: Path) -> list[dict[str, Any]]:
    """Every results.json of a run folder; an unreadable one becomes an entry with `notebook_error`."""
    results = []
    for path in sorted(run_dir.glob("*.results.json")):
        try:
            data = findings.read_results(path)
        except (ValueError, json.JSONDecodeError) as exc:
            data = {"investigation": path.name.removesuffix(".results.json"), "claims": [], "tables": {},
                    "environment": {}, "notebook_error": f"unreadable results.json: {exc}"}
        data["_stem"] = path.name.removesuffix(".results.json")
        results.append(data)
    return results


def load_run(run_dir: Path, root: Path | None = None) -> Run:
    """Read a run folder: run.json when present, every results.json, the environment and the verdicts."""
    run_dir = Path(run_dir)
    results = _load_results(run_dir)
    try:
        meta = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError):
        meta = {}
    environment = meta.get("environment") or next((r["environment"] for r in results if r.get("environment")), {})
    verdicts = {c["id"]: {**c, "investigation": r["investigation"]} for r in results for c in r.get("claims", [])
                if isinstance(c, dict) and c.get("id")}
    rel = run_dir.resolve().relative_to(Path(root).resolve()).as_posix() if root else "."
    return Run(run_dir, run_dir.name, meta, results, environment, verdicts, rel)


def find_runs(root: Path) -> list[Path]:
    """Run directories under root (any folder holding a *.results.json), newest first by name.

    Local runs (root/runs/…) are left out unless root is that folder, so reports/index.html lists only the
    runs committed under reports/.
    """
    root = Path(root)
    dirs = {p.parent for p in root.rglob("*.results.json")
            if not p.parent.relative_to(root).parts[:1] == ("runs",)
            and not p.parent.relative_to(root).parts[0].startswith("matrix-")}  # a matrix's cells: its own page
    return sorted(dirs, key=lambda d: (d.name[:1].isdigit(), d.name), reverse=True)


# ---------------------------------------------------------------- answers and coverage


@dataclass
class Answer:
    """One answer block row: question, headline, verdict counts, deciding claim and its first sentence."""

    question: str
    label: str
    state: str  # answered | undecided | not_reached | no_claims
    headline: str = ""
    counts: list[tuple[str, int]] = field(default_factory=list)
    deciding: str = ""  # claim id
    deciding_verdict: str = ""
    sentence: str = ""
    claims: list[str] = field(default_factory=list)  # every judged claim of this question, ledger order
    deciding_basis: str = ""  # measured | derived | both | none ('' in runs before the kit recorded it)
    parts: list[str] = field(default_factory=list)  # a mixed answer: the deciding claim, the first of each other word

    @property
    def counts_text(self) -> str:
        return " · ".join(f"{v} {n}" for v, n in self.counts)


def verdict_counts(verdicts: list[str]) -> list[tuple[str, int]]:
    """How many of each verdict, in findings.VERDICTS order (unknown verdicts last)."""
    counted = Counter(verdicts)
    order = [*findings.VERDICTS, *sorted(set(counted) - set(findings.VERDICTS))]
    return [(v, counted[v]) for v in order if counted[v]]


def answer(question: str, entries: list[dict[str, Any]], verdicts: dict[str, dict[str, Any]],
           device_type: str = "", investigation: str = "", conclusion: Conclusion | None = None) -> Answer:
    """The answer to one question from the ledger entries tagged with it and the run's verdicts (see module doc).

    "bites here?" is answered only by the claims about the bug itself (marked `"bug": true` in the ledger, when the
    investigation marks any) that this run's device class can show: a bug claim whose device class
    (conclusion.device_class: the ledger's conditions.device, else the investigation's DEVICE) is cuda says nothing on a
    run without CUDA, so a CPU run of a CUDA-only bug answers "needs CUDA — this run cannot tell". The sentence is
    the investigation's conclusion for that question when it has one, else the deciding claim's first sentence.
    """
    label = QUESTION_LABELS[question]
    judged = [e["id"] for e in entries if question_of(e) == question and not e.get("untestable")]
    if not judged:
        return Answer(question, label, "no_claims", "no claim asks this")
    deciders = judged
    by_id = {e["id"]: e for e in entries}
    if question == "bites":
        bug = [cid for cid in bug_claims(entries) if cid in by_id]
        deciders = bug or judged
        if device_type:
            shown = [cid for cid in deciders if device_class(by_id.get(cid), investigation)
                     in ("any", device_type)]
            if not shown and any(cid in verdicts for cid in deciders):
                seen = [(cid, verdicts[cid]) for cid in judged if cid in verdicts]
                sentence = (conclusion.sentence(question) if conclusion else "") or \
                    f"the bug needs {device_class(by_id.get(deciders[0]), investigation).upper()}; " \
                    f"this is a {device_type} run."
                return Answer(question, label, "undecided", "needs CUDA — this run cannot tell",
                              verdict_counts([c.get("verdict", "") for _, c in seen]), deciders[0], "needs_cuda",
                              sentence, judged)
            deciders = shown
    seen = [(cid, verdicts[cid]) for cid in judged if cid in verdicts]
    if not seen:
        return Answer(question, label, "not_reached", "not reached in this run", claims=judged)
    deciding = [(cid, verdicts[cid]) for cid in deciders if cid in verdicts] or seen
    decisive = [(cid, c) for cid, c in deciding if c.get("verdict") in DECISIVE]
    cid, claim = (decisive or deciding)[0]
    parts: list[str] = []
    if decisive:
        polarity, (cid, claim) = aggregate(question, decisive)
        state, headline = "answered", HEADLINES[question][polarity]
        parts = mixed_parts(cid, decisive) if polarity == "partly" else []  # a yes or no is its deciding claim's
    else:
        state, headline = "undecided", UNDECIDED.get(claim.get("verdict", ""), str(claim.get("verdict")))
    sentence = (conclusion.sentence(question) if conclusion else "") or first_sentence(claim.get("evidence", ""))
    return Answer(question, label, state, headline, verdict_counts([c.get("verdict", "") for _, c in seen]),
                  cid, claim.get("verdict", ""), sentence, judged, str(claim.get("basis") or ""), parts)


def mixed_parts(deciding: str, decisive: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """For an answer whose claims say different things: the deciding claim, then the first claim of each other
    word (ledger order); [] when they all say the same."""
    first: dict[str, str] = {}
    for cid, c in decisive:
        first.setdefault(POLARITY[c["verdict"]], cid)
    if len(first) < 2:
        return []
    return [deciding, *(cid for cid in first.values() if cid != deciding)]


def aggregate(question: str, decisive: list[tuple[str, dict[str, Any]]]) -> tuple[str, tuple[str, dict[str, Any]]]:
    """(yes / no / partly, the claim that gave that word) from a question's decisive claims, in ledger order: all
    alike → that; for "fix" any no → no (the weakest link: a fix that does not hold on one path the seed claims it
    for does not hold); otherwise a mix → partly, decided by the first claim that holds only in part, else the first
    that holds (where it bites, or holds)."""
    polarity = [(POLARITY[c["verdict"]], (cid, c)) for cid, c in decisive]
    words = {p for p, _ in polarity}
    if len(words) == 1:
        return polarity[0][0], polarity[0][1]
    if question == "fix" and "no" in words:
        return "no", next(item for p, item in polarity if p == "no")
    deciding = next((item for p, item in polarity if p == "partly"), None) or \
        next(item for p, item in polarity if p == "yes")
    return "partly", deciding


def answers(entries: list[dict[str, Any]], verdicts: dict[str, dict[str, Any]], device_type: str = "",
            investigation: str = "", conclusion: Conclusion | None = None) -> list[Answer]:
    """bites / fix / cost answers of one investigation (and `other` when its ledger has such claims)."""
    rows = [answer(q, entries, verdicts, device_type, investigation, conclusion) for q in QUESTIONS]
    if any(question_of(e) == "other" and not e.get("untestable") for e in entries):
        rows.append(answer("other", entries, verdicts, device_type, investigation, conclusion))
    return rows


def conclusion_html(c: Conclusion, run_label: str = "") -> str:
    """A conclusion as one HTML block (one line, so it can sit in a markdown cell): figure, then sentences."""
    if not c.sentences and not c.figure:
        return ""
    style = ("<style>.kit-conclusion{border:1px solid #9ab;border-left:6px solid #2a6fb0;background:#f4f8fc;"
             "padding:.6rem .9rem;margin:.4rem 0 1rem;border-radius:.4rem;font-size:1rem;line-height:1.45}"
             ".kit-conclusion .figure{float:right;text-align:center;margin:0 0 .4rem 1rem;max-width:13rem}"
             ".kit-conclusion .figure b{display:block;font-size:1.9rem;color:#1d4f80}"
             ".kit-conclusion .figure span{font-size:.8rem;color:#444}.kit-conclusion p{margin:.25rem 0}"
             ".kit-conclusion h2{margin:0 0 .3rem;font-size:1.15rem;border:0}</style>")
    fig = ""
    if c.figure:
        claim = html.escape(c.figure.get("claim", ""))
        fig = (f"<div class='figure' data-claim='{claim}'><b>{html.escape(str(c.figure.get('value', '')))}</b>"
               f"<span>{html.escape(str(c.figure.get('label', '')))}</span></div>")
    where = f" · {html.escape(run_label)}" if run_label else ""
    body = "".join(f"<p>{html.escape(s)}</p>" for s in c.sentences)
    name = html.escape(name_of(c.investigation))
    return (f"{style}<div class='kit-conclusion' data-investigation='{html.escape(c.investigation)}'>{fig}"
            f"<h2 title='{html.escape(c.investigation)}'>Conclusion: {name} on {html.escape(c.device.upper())}{where}"
            "</h2>" f"{body}<div style='clear:both'></div></div>")


@dataclass
class Coverage:
    """How much of the ledger a run reached: judged, untestable (with reasons), not reached (with why)."""

    judged: list[str]
    untestable: list[dict[str, Any]]
    not_reached: list[dict[str, Any]]
    unlisted: list[str]  # verdicts for ids the ledger no longer has

    @property
    def testable(self) -> int:
        return len(self.judged) + len(self.not_reached)


def untestable_entries(book: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Ledger entries marked untestable, each with the investigation file it sits in."""
    return [{**e, "investigation": inv} for inv, entries in book.items() for e in entries if e.get("untestable")]


def coverage(run: Run, book: dict[str, list[dict[str, Any]]]) -> Coverage:
    """Coverage of the ledger by one run, over the investigations it set out to run (their untestable claims and the
    kit-wide untestable ledger); `not reached` = a claim of theirs with no verdict in the run."""
    ran, planned = set(run.investigations), set(run.planned)
    judged, missing = [], []
    for inv, entries in book.items():
        if inv not in planned:
            continue
        for e in entries:
            if e.get("untestable") or inv == UNTESTABLE_LEDGER:
                continue
            if e["id"] in run.verdicts:
                judged.append(e["id"])
            else:
                why = "no verdict in its results" if inv in ran else "investigation not run"
                missing.append({**e, "investigation": inv, "why": why})
    listed = {e["id"] for entries in book.values() for e in entries}
    untestable = [e for e in untestable_entries(book) if e["investigation"] in planned | {UNTESTABLE_LEDGER}]
    return Coverage(judged, untestable, missing, [cid for cid in run.verdicts if cid not in listed])


@dataclass
class Block:
    """One investigation's answers in one run: the answers, verdict counts and how many claims it judged."""

    investigation: str
    sources: list[str]
    run: Run
    answers: list[Answer]
    counts: list[tuple[str, int]]
    judged: int
    testable: int
    ran: bool
    notebook_error: str = ""
    conclusion: Markup = field(default_factory=lambda: Markup(""))
    said: list[str] = field(default_factory=list)  # the conclusion's sentences (an answer does not repeat them)
    cells: dict[str, Any] = field(default_factory=dict)  # question → grid.GridCell: its figure, what would decide it


def sources_of(entries: list[dict[str, Any]]) -> list[str]:
    """The seed files an investigation's claims come from, in ledger order."""
    return list(dict.fromkeys(e.get("source", "") for e in entries if e.get("source")))


def block(investigation: str, entries: list[dict[str, Any]], run: Run) -> Block:
    """The answer block of one investigation in one run, with its conclusion."""
    testable = [e for e in entries if not e.get("untestable")]
    mine = [run.verdicts[e["id"]] for e in testable if e["id"] in run.verdicts]
    result = next((r for r in run.results if r["investigation"] == investigation), None)
    conclusion = conclude(result, entries) if result is not None else None
    return Block(investigation, sources_of(entries), run,
                 answers(entries, run.verdicts, run.device_type, investigation, conclusion),
                 verdict_counts([c.get("verdict", "") for c in mine]), len(mine), len(testable),
                 result is not None, (result or {}).get("notebook_error", ""),
                 Markup(conclusion_html(conclusion)) if conclusion else Markup(""),
                 conclusion.sentences if conclusion else [])


def investigations_in(book: dict[str, list[dict[str, Any]]], runs: list[Run]) -> dict[str, list[dict[str, Any]]]:
    """Ledger investigations (the untestable file aside), then any investigation a run has that the ledger lacks."""
    out = {inv: entries for inv, entries in book.items() if inv != UNTESTABLE_LEDGER}
    for run in runs:
        for r in run.results:
            if r["investigation"] not in out:
                out[r["investigation"]] = [{"id": c["id"], "source": c.get("source", ""), "claim": c.get("claim", "")}
                                           for c in r.get("claims", []) if isinstance(c, dict) and c.get("id")]
    return out


# ---------------------------------------------------------------- comparison across runs


@dataclass
class Cell:
    """One claim in one run of the comparison table, with its change since the previous run of that device type."""

    claim: dict[str, Any] | None
    change: str = ""  # "" | changed | new
    was: str = ""


def compare(runs: list[Run], entries: list[dict[str, Any]]) -> list[list[Cell]]:
    """For each ledger entry, a cell per run (newest first); a verdict differing from the next older run of the
    same device type is `changed` (with what it was), one that run did not reach is `new`."""
    rows = []
    for e in entries:
        cells = []
        for i, run in enumerate(runs):
            claim = run.verdicts.get(e["id"])
            previous = next((r for r in runs[i + 1:] if r.device_type == run.device_type), None)
            cell = Cell(claim)
            if claim and previous is not None:
                before = previous.verdicts.get(e["id"])
                if before is None:
                    cell.change = "new"
                elif before.get("verdict") != claim.get("verdict"):
                    cell.change, cell.was = "changed", str(before.get("verdict"))
            cells.append(cell)
        rows.append(cells)
    return rows


def judged(run: Run, investigation: str) -> bool:
    """Whether a run judged an investigation: its results are there, the notebook did not fail and at least one
    claim got a verdict other than error. A failed or empty run never answers for an investigation."""
    result = next((r for r in run.results if r["investigation"] == investigation), None)
    if result is None or result.get("notebook_error"):
        return False
    return any(isinstance(c, dict) and c.get("verdict") not in (None, "", "error") for c in result.get("claims", []))


def answering_runs(runs: list[Run], investigation: str) -> list[Run]:
    """Per device type, the newest run that judged the investigation (runs come newest first), cuda before cpu;
    when no run judged it, the newest run of each device type that has it at all (so its failure shows)."""
    chosen: dict[str, Run] = {}
    for run in runs:
        if judged(run, investigation):
            chosen.setdefault(run.device_type, run)
    if not chosen:
        for run in runs:
            if investigation in run.investigations:
                chosen.setdefault(run.device_type, run)
    return sorted(chosen.values(), key=lambda r: (r.device_type != "cuda", r.device_type))


def newest_per_device(runs: list[Run]) -> list[Run]:
    """The newest run of each device type (runs come newest first), cuda before cpu."""
    newest: dict[str, Run] = {}
    for run in runs:
        newest.setdefault(run.device_type, run)
    return sorted(newest.values(), key=lambda r: (r.device_type != "cuda", r.device_type))
