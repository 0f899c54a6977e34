"""The answer on one screen: investigations × {bites here?, fix holds?, cost} with one column group per stack.

A stack is what a verdict depends on: device type, the GPU or CPU model, torch, executorch and ultralytics. Runs of
an older kit on a device type that a newer kit has run are superseded and left out of the grid. Per stack and
investigation the cell's answer comes from the newest run of that stack that judged the investigation; each cell
shows a word (the answer's headline), the deciding claim's figure as its judge returned it (figures.shown: no number
is computed here, and a claim without a figure shows none), each figure linking its claim — a mixed answer shows the
figure of each word, what held beside what did not — the device a figure was measured on where it is not the
column's, and the figure's spread over the stack's batches where it moves. An undecided answer says what would
decide it (the seed's condition the run lacks, a CUDA run, more rounds). Under the grid each stack says how many of
its batches agree on every verdict (`agreement`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import display
from .figures import FIGURE_VERDICT, Shown, has_rounds, shown, spread
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
    def agreement(self) -> Agreement:
        """How far this stack's batches agree on their verdicts."""
        return agreement(self.runs)

    @property
    def profile(self) -> str:
        """The profile of the runs the grid's cells come from (each one's changes named)."""
        return profile_of(*(self.used or self.runs))

    @property
    def run_ids(self) -> list[str]:
        return [run.name for run in self.runs]


@dataclass
class CellFigure:
    """One figure a cell shows: the figure (figures.Shown), the link to its claim and how its verdict reads there
    (where the cell shows several)."""

    shown: Shown
    href: str = ""
    verdict_words: str = ""


@dataclass
class GridCell:
    """One answer in the grid: word, verdict class, its figures (the deciding claim's first), link, what would
    decide it, its sentence."""

    question: str
    word: str
    verdict: str
    figures: list[CellFigure] = field(default_factory=list)
    href: str = ""
    decide: str = ""
    sentence: str = ""
    run: str = ""

    @property
    def figure(self) -> str:
        """The deciding claim's figure ('' without one)."""
        return self.figures[0].shown.text if self.figures else ""

    @property
    def measures(self) -> str:
        """What the deciding figure is (its caption: a cell's tooltip)."""
        return self.figures[0].shown.caption if self.figures else ""


@dataclass
class GridRow:
    """One investigation: per stack, its three cells (None where no run of that stack has it)."""

    investigation: str
    cells: list[list[GridCell] | None]


@dataclass
class Agreement:
    """How far the batches (runs) of one stack agree: how many of which kit, on which device, and per claim judged
    the verdicts that differ between them (claim → verdict → how many batches)."""

    device: str
    kits: dict[str, int]
    verdicts: int
    differ: dict[str, dict[str, int]]

    @property
    def batches(self) -> int:
        return sum(self.kits.values())

    @property
    def sentence(self) -> str:
        """'4 batches of kit 0.1.0+g4679a42 on NVIDIA H200 agree on every one of their 62 verdicts.'"""
        kits = " and ".join(f"{n} {'batch' if n == 1 else 'batches'} of kit {k or 'not recorded'}" if i == 0
                            else f"{n} of kit {k or 'not recorded'}" for i, (k, n) in enumerate(self.kits.items()))
        if self.batches < 2:
            return f"{kits} on {self.device}: no other batch of this stack to compare its {self.verdicts} verdicts with."
        if not self.differ:
            return f"{kits} on {self.device} agree on every one of their {self.verdicts} verdicts."
        return (f"{kits} on {self.device} agree on {self.verdicts - len(self.differ)} of their {self.verdicts} "
                f"verdicts; they differ on {len(self.differ)}.")


def agreement(stack_runs: list[Run]) -> Agreement:
    """Whether the batches of one stack give every claim the same verdict (a claim a batch did not judge counts as
    'not judged' there)."""
    kits: dict[str, int] = {}
    for run in stack_runs:
        kits[kit_of(run)] = kits.get(kit_of(run), 0) + 1
    claims = list(dict.fromkeys(cid for run in stack_runs for cid in run.verdicts))
    differ = {}
    for cid in claims:
        said = [str((run.verdicts.get(cid) or {}).get("verdict") or "not judged") for run in stack_runs]
        if len(set(said)) > 1:
            differ[cid] = {v: said.count(v) for v in dict.fromkeys(said)}
    device = str(stack_runs[0].environment.get("device") or stack_runs[0].device_type) if stack_runs else ""
    return Agreement(device, kits, len(claims), differ)


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


def is_batch(run: Run) -> bool:
    """A run of its profile as it is: one with `-p` overrides (model_check on another model, a larger imgsz) answers
    another question, so it is no batch of its stack and the grid, its agreement and its spreads leave it out."""
    return not (run.meta.get("overrides") or {})


def stacks(runs: list[Run]) -> list[Stack]:
    """The current batches (superseded runs left out, and runs with -p overrides where there are batches) grouped by
    stack, CUDA first, then by newest run."""
    old = superseded(runs)
    batches = [run for run in runs if is_batch(run)] or runs  # a -p run's own page still shows it
    grouped: dict[tuple[str, ...], Stack] = {}
    for run in batches:
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


def answer_figures(answer: Answer, run: Run, href: str, batches: list[Run] | None = None) -> list[CellFigure]:
    """The figures of an answer: the deciding claim's, and for a mixed answer the first claim's of each other word
    (Answer.parts), each as its judge returned it and linked to its claim, with its spread over `batches` (the
    stack's runs) where it moves; [] when the run could not measure it (needs CUDA) or no judge gave a figure."""
    if answer.deciding_verdict == "needs_cuda" or answer.state not in ("answered", "undecided"):
        return []
    out = []
    for cid in answer.parts or [answer.deciding]:
        one = shown(run.verdicts.get(cid), run.device_type)
        if one is None:
            continue
        one.spread, one.runs = spread(cid, batches or [])
        words = FIGURE_VERDICT.get(one.verdict, "") if answer.parts else ""
        out.append(CellFigure(one, f"{href}#claim-{cid}", words))
    return out


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
    if band and has_rounds(claim.get("data")):
        return "its rounds straddle the seed's band: more rounds decide"
    return "see the claim's evidence"


def _show(value: Any) -> str:
    """A seed condition in words: a range as min–max, a list joined with 'or', each value once."""
    if isinstance(value, dict) and set(value) <= {"min", "max"}:
        return f"{value.get('min', '…')}–{value.get('max', '…')}"
    if isinstance(value, (list, tuple)):
        return " or ".join(map(str, dict.fromkeys(value)))
    return str(value)


def cells(b: Block, entries: list[dict[str, Any]], href: str, batches: list[Run] | None = None) -> list[GridCell]:
    """The three cells of one investigation's block; `href` is the page holding its #claim-<id> rows, `batches` the
    runs of its stack (a figure's spread over them)."""
    by_id = {e["id"]: e for e in entries}
    out = []
    for a in b.answers:
        if a.question not in QUESTIONS:
            continue
        claim = b.run.verdicts.get(a.deciding)
        verdict = a.deciding_verdict if a.state in ("answered", "undecided") else "none"
        if a.state == "answered" and a.headline == HEADLINES[a.question]["partly"]:
            verdict = "partly"  # a mix of holds and does not: the cell's colour follows its word, not one claim
        out.append(GridCell(a.question, CELL_WORDS.get(a.headline, a.headline), verdict,
                            answer_figures(a, b.run, href, batches),
                            f"{href}#claim-{a.deciding}" if a.deciding else "",
                            what_would_decide(a, claim, by_id.get(a.deciding)), display.lists_in_text(a.sentence),
                            b.run.name))
    return out


def with_cells(b: Block, entries: list[dict[str, Any]], href: str = "", batches: list[Run] | None = None) -> Block:
    """The block with its grid cells by question, so that each answer shows its figures and what would decide it."""
    b.cells = {c.question: c for c in cells(b, entries, href, batches)}
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
            batches = [r for r in stack.runs if judged(r, inv)]
            row.append(cells(block(inv, entries, run), entries, href_of(run), batches) if run else None)
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
              ".kit-answers .v-error{background:#ffb3b3}.kit-answers .decide{color:#555;font-style:italic}"
              ".kit-head small.id,.kit-head .where .where{color:#666;font-size:.8rem}.kit-head .links{font-size:.85rem}"
              ".kit-answers .fig small{color:#555}</style>")


def page_head_html(run: Run, investigation: str, entries: list[dict[str, Any]]) -> str:
    """The top of a notebook page, for a page that travels alone: yolo26kit and the kit version the run was made
    with, the investigation (its name; the id beside it, small), the run's date and stack, its profile and run id,
    and the links to the run page and the index of runs, each followed by where that page lies, so that a page sent
    alone still says where to find them."""
    from ..conclusion import name_of

    env = run.environment
    kit = env.get("kit") or "not recorded"
    stack = [f"{run.device_type.upper()} · {env.get('device') or 'device not recorded'}",
             *(f"{pkg} {env[pkg]}" for pkg in ("torch", "executorch", "ultralytics", "python") if env.get(pkg))]
    facts = [f"<b>{_esc(name_of(investigation))}</b> <small class='id'>{_esc(investigation)}</small>",
             f"yolo26kit <code>{_esc(kit)}</code>", _esc(run.date or "date not recorded"), *map(_esc, stack),
             f"profile {_esc(recorded_profile(run.meta, investigation))}", f"run <code>{_esc(run.name)}</code>"]
    links = [("index.html", "this run's page", f"{run.name}/index.html"),
             ("../index.html", "all runs", f"index.html beside the folder {run.name}")]
    away = " ".join(f"<span class='away'><a href='{href}'>{_esc(text)}</a><span class='where'> ({_esc(where)})</span>"
                    "</span>" for href, text, where in links)
    spans = "".join(f"<span>{fact}</span>" for fact in facts)
    return f"{HEAD_STYLE}<div class='kit-head'><div class='where'>{spans}</div><div class='links'>{away}</div></div>"


def answers_table_html(b: Block, entries: list[dict[str, Any]]) -> str:
    """The three answers of a block as a small table: question, word, its figures (each with its caption as a
    tooltip and where it differs the device it was measured on), what would decide it, and the answer's sentence
    when the conclusion above does not already say it."""
    rows = []
    for c in cells(b, entries, "index.html"):
        decide = f" <span class='decide'>{_esc(c.decide)}</span>" if c.decide else ""
        link = f"<a href='{_esc(c.href)}'>{_esc(c.word)}</a>" if c.href else _esc(c.word)
        rows.append(f"<tr data-question='{c.question}'><th>{_esc(GRID_LABELS[c.question])}</th>"
                    f"<td class='v-{_esc(c.verdict)}'><b>{link}</b></td><td>{figures_html(c)}{decide}</td>"
                    f"<td>{_esc(c.sentence if c.sentence not in b.said else '')}</td></tr>")
    return f"<table class='kit-answers'>{''.join(rows)}</table>" if rows else ""


def figures_html(c: GridCell) -> str:
    """A cell's figures: each its claim's figure as its judge returned it, linked to that claim, with the device it
    was measured on where not the page's, how its verdict reads where the cell shows several, and its spread over
    the stack's batches where it moves."""
    parts = []
    for f in c.figures:
        one = f.shown
        extra = " ".join(x for x in (one.elsewhere, f.verdict_words) if x)
        spread = (f" <small class='spread' title='{_esc(', '.join(one.runs))}'>{_esc(one.spread)}</small>"
                  if one.spread else "")
        parts.append(f"<span class='fig' data-claim='{_esc(one.claim)}' title='{_esc(one.caption)}'>"
                     f"<a href='{_esc(f.href)}'>{_esc(one.text)}</a>"
                     + (f" <small>{_esc(extra)}</small>" if extra else "") + f"{spread}</span>")
    return " · ".join(parts)


def _esc(text: Any) -> str:
    import html

    return html.escape(str(text), quote=True)
