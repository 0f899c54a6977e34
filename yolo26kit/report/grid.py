"""The answer on one screen: investigations × {bites here?, fix holds?, cost} with one column group per stack.

A stack is what a verdict depends on: device type, the GPU or CPU model, torch, executorch and ultralytics. Runs of
an older kit on a device type that a newer kit has run are superseded and left out of the grid. Per stack and
investigation the cell's answer comes from the newest run of that stack that judged the investigation; each cell
shows a word (the answer's headline), the deciding figure (the figure the deciding claim's judge returned as data,
or the median of its per-round data; never a number read out of evidence text) and a link to the deciding claim. An undecided answer says what would decide it (the seed's condition the run lacks,
a CUDA run, more rounds).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import display
from .figures import band_unit, claim_figure, rounds_in
from .answers import HEADLINES, QUESTIONS, Answer, Block, Run, block, judged

# The short word a grid cell shows for an answer's headline (the answer block keeps the long one).
CELL_WORDS = {"needs CUDA — this run cannot tell": "needs CUDA", "not reached in this run": "not reached",
              "as the seed says": "as claimed", "not as the seed says": "not as claimed",
              "partly as the seed says": "partly as claimed", "no claim asks this": "—"}
GRID_LABELS = {"bites": "bites here?", "fix": "fix holds?", "cost": "cost"}


@dataclass
class Stack:
    """A column group: the versions a verdict depends on and the runs made on them, newest first."""

    device_type: str
    device: str
    torch: str
    executorch: str
    ultralytics: str
    kit: str
    runs: list[Run] = field(default_factory=list)
    used: list[Run] = field(default_factory=list)  # the runs the grid's cells come from, newest first

    @property
    def profile(self) -> str:
        """The profile of the runs the grid's cells come from (each one's changes named)."""
        return profile_of(*(self.used or self.runs))

    @property
    def run_ids(self) -> list[str]:
        return [run.name for run in self.runs]


@dataclass
class GridCell:
    """One answer in the grid: word, verdict class, deciding figure, link, what would decide it, its sentence."""

    question: str
    word: str
    verdict: str
    figure: str = ""
    measures: str = ""  # what the figure measures (a cell's tooltip)
    href: str = ""
    decide: str = ""
    sentence: str = ""
    run: str = ""


@dataclass
class GridRow:
    """One investigation: per stack, its three cells (None where no run of that stack has it)."""

    investigation: str
    cells: list[list[GridCell] | None]


def stack_key(run: Run) -> tuple[str, ...]:
    """What a run's verdicts depend on: device type, device model, torch, executorch, ultralytics."""
    env = run.environment
    return tuple(str(env.get(k) or "") for k in ("device_type", "device", "torch", "executorch", "ultralytics"))


def kit_of(run: Run) -> str:
    """The kit version a run was made with ('' when not recorded)."""
    return str(run.environment.get("kit") or "")


def superseded(runs: list[Run]) -> dict[str, str]:
    """Run name → the newer kit that supersedes it: a run every investigation of which a newer kit has run again on
    the same device type (runs come newest first). A newer run of one investigation supersedes nothing else: the
    other investigations keep answering from the older run."""
    newest: dict[tuple[str, str], str] = {}
    out = {}
    for run in runs:
        kits = [newest.setdefault((run.device_type, inv), kit_of(run)) for inv in run.investigations]
        newer = [k for k in kits if k != kit_of(run)]
        if kits and len(newer) == len(kits):
            out[run.name] = newer[0]
    return out


def stacks(runs: list[Run]) -> list[Stack]:
    """The current runs (superseded ones left out) grouped by stack, CUDA first, then by newest run."""
    old = superseded(runs)
    grouped: dict[tuple[str, ...], Stack] = {}
    for run in runs:
        if run.name in old:
            continue
        key = stack_key(run)
        if key not in grouped:
            grouped[key] = Stack(*key, kit=kit_of(run))
        grouped[key].runs.append(run)
    return sorted(grouped.values(), key=lambda s: (s.device_type != "cuda", s.device_type))


def recorded_profile(meta: dict[str, Any], investigation: str = "") -> str:
    """The profile run.json records ('quick', 'quick + imgsz' where -p changed imgsz; for one investigation only
    the keys it has), 'not recorded' where a run.json predates the field: never guessed from the parameters."""
    name = meta.get("profile")
    if not name:
        return "not recorded"
    changed = set(meta.get("overrides") or {})
    if investigation:
        entry = next((n for n in meta.get("notebooks", []) if isinstance(n, dict) and n.get("name") == investigation),
                     {})
        changed &= set(entry.get("parameters") or {})
    return str(name) + (f" + {', '.join(sorted(changed))}" if changed else "")


def profile_of(*runs: Run) -> str:
    """The profiles the runs recorded in run.json, each named once ('quick', 'quick / full', 'not recorded')."""
    return " / ".join(dict.fromkeys(recorded_profile(run.meta) for run in runs)) or "not recorded"


def answering_run(stack: Stack, investigation: str) -> Run | None:
    """The newest run of the stack that judged the investigation, else the newest that has it, else None."""
    return next((r for r in stack.runs if judged(r, investigation)), None) or \
        next((r for r in stack.runs if investigation in r.investigations), None)


def deciding_figure(answer: Answer, claim: dict[str, Any] | None, entry: dict[str, Any] | None,
                    device_type: str) -> tuple[str, str]:
    """The figure that decided an answer and what it measures: the deciding claim's own figure (judgement data),
    else the median of its rounds; ('', '') when the run could not measure it (needs CUDA) or the judge gave none."""
    if not claim or answer.deciding_verdict == "needs_cuda":
        return "", ""
    return claim_figure(claim, device_type, band_unit(entry))


def what_would_decide(answer: Answer, claim: dict[str, Any] | None, entry: dict[str, Any] | None) -> str:
    """For an undecided answer, what would decide it: a CUDA run, the seed's condition the run lacks, the step
    that did not run, or more rounds against the seed's band; '' for a decided answer."""
    if answer.state != "undecided" or not claim:
        return ""
    if answer.deciding_verdict == "needs_cuda":
        return "a CUDA run decides it"
    if answer.deciding_verdict == "error":
        return "its judge failed: see the claim"
    cond = claim.get("conditions") or {}
    seed = cond.get("seed") or {}
    differ = [k for k in cond.get("differ") or [] if k not in (cond.get("irrelevant") or {})]
    if differ:
        return "decided on " + "; ".join(f"{k} {_show(seed.get(k))}" for k in differ) + " (the seed's)"
    if claim.get("basis") == "none":
        return "its step did not run here"
    band = (entry or {}).get("band") or {}
    if band and rounds_in(claim.get("data"), "")[1]:
        return f"rounds straddle the band {band.get('lo')}–{band.get('hi')}{band_unit(entry)}: more rounds decide"
    return "see the claim's evidence"


def _show(value: Any) -> str:
    """A seed condition in words: a range as min–max, a list joined with 'or'."""
    if isinstance(value, dict) and set(value) <= {"min", "max"}:
        return f"{value.get('min', '…')}–{value.get('max', '…')}"
    if isinstance(value, (list, tuple)):
        return " or ".join(map(str, value))
    return str(value)


def cells(b: Block, entries: list[dict[str, Any]], href: str) -> list[GridCell]:
    """The three cells of one investigation's block; `href` is the page holding its #claim-<id> rows."""
    by_id = {e["id"]: e for e in entries}
    out = []
    for a in b.answers:
        if a.question not in QUESTIONS:
            continue
        claim = b.run.verdicts.get(a.deciding)
        entry = by_id.get(a.deciding)
        verdict = a.deciding_verdict if a.state in ("answered", "undecided") else "none"
        if a.state == "answered" and a.headline == HEADLINES[a.question]["partly"]:
            verdict = "partly"  # a mix of holds and does not: the cell's colour follows its word, not one claim
        figure, measures = deciding_figure(a, claim, entry, b.run.device_type) if a.state != "no_claims" else ("", "")
        out.append(GridCell(a.question, CELL_WORDS.get(a.headline, a.headline), verdict, figure, measures,
                            f"{href}#claim-{a.deciding}" if a.deciding else "",
                            what_would_decide(a, claim, entry), display.lists_in_text(a.sentence), b.run.name))
    return out


def with_cells(b: Block, entries: list[dict[str, Any]], href: str = "") -> Block:
    """The block with its grid cells by question, so that each answer shows its figure and what would decide it."""
    b.cells = {c.question: c for c in cells(b, entries, href)}
    return b


def grid(investigations: dict[str, list[dict[str, Any]]], columns: list[Stack], href_of: Any) -> list[GridRow]:
    """One row per investigation, per stack its three cells from that stack's answering run.

    `href_of(run)` is the page holding the run's claim rows, relative to the page showing the grid."""
    rows = []
    for inv, entries in investigations.items():
        row: list[list[GridCell] | None] = []
        for stack in columns:
            run = answering_run(stack, inv)
            if run and run not in stack.used:
                stack.used.append(run)
            row.append(cells(block(inv, entries, run), entries, href_of(run)) if run else None)
        rows.append(GridRow(inv, row))
    for stack in columns:
        stack.used.sort(key=lambda r: r.name, reverse=True)
    return rows


# ---------------------------------------------------------------- the head of a notebook's outputs-only page

HEAD_STYLE = ("<style>.kit-head{font:14px/1.4 system-ui,sans-serif;border-bottom:1px solid #ccc;padding:.2rem 0 .5rem;"
              "margin-bottom:.5rem}.kit-head .where{display:flex;flex-wrap:wrap;gap:.2rem 1rem}.kit-head .where b{"
              "font-size:1.15rem}.kit-answers{border-collapse:collapse;margin:.2rem 0 .6rem;font-size:.9rem}"
              ".kit-answers th,.kit-answers td{border:1px solid #ddd;padding:.2rem .5rem;text-align:left;"
              "vertical-align:top}.kit-answers .v-confirmed{background:#d4f7d4}"
              ".kit-answers .v-refuted{background:#ffd6d6}"
              ".kit-answers .v-partly{background:#fff1c2}.kit-answers .v-not_reproduced{background:#e6e6ff}"
              ".kit-answers .v-inconclusive{background:#fde2c8}.kit-answers .v-needs_cuda{background:#eee}"
              ".kit-answers .v-error{background:#ffb3b3}.kit-answers .decide{color:#555;font-style:italic}</style>")


def page_head_html(run: Run, investigation: str, entries: list[dict[str, Any]]) -> str:
    """The top of a notebook page: investigation, stack, device, profile, run id and links to the run page and the
    index of runs (one line of facts), for a page that travels alone."""
    env = run.environment
    facts = [f"<b>{_esc(investigation)}</b>", f"{_esc(run.device_type.upper())} · {_esc(env.get('device') or '?')}",
             f"torch {_esc(env.get('torch') or '?')} · executorch {_esc(env.get('executorch') or '?')} · "
             f"ultralytics {_esc(env.get('ultralytics') or '?')}",
             f"profile {_esc(recorded_profile(run.meta, investigation))}",
             f"run <code>{_esc(run.name)}</code>", "<a href='index.html'>this run's page</a>",
             "<a href='../index.html'>all runs</a>"]
    spans = "".join(f"<span>{fact}</span>" for fact in facts)
    return f"{HEAD_STYLE}<div class='kit-head'><div class='where'>{spans}</div></div>"


def answers_table_html(b: Block, entries: list[dict[str, Any]]) -> str:
    """The three answers of a block as a small table: question, word, deciding figure, what would decide it, and
    the answer's sentence when the conclusion above does not already say it."""
    rows = []
    for c in cells(b, entries, "index.html"):
        decide = f" <span class='decide'>{_esc(c.decide)}</span>" if c.decide else ""
        link = f"<a href='{_esc(c.href)}'>{_esc(c.word)}</a>" if c.href else _esc(c.word)
        rows.append(f"<tr data-question='{c.question}'><th>{_esc(GRID_LABELS[c.question])}</th>"
                    f"<td class='v-{_esc(c.verdict)}'><b>{link}</b></td><td>{_esc(c.figure)}{decide}</td>"
                    f"<td>{_esc(c.sentence if c.sentence not in b.said else '')}</td></tr>")
    return f"<table class='kit-answers'>{''.join(rows)}</table>" if rows else ""


def _esc(text: Any) -> str:
    import html

    return html.escape(str(text), quote=True)
