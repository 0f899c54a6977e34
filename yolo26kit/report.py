"""HTML reports: nbconvert per executed notebook, a run's page and the index over runs, both opening with answers.

Every page is self-contained (no request leaves the machine): notebook pages use templates/notebook_offline.html.j2
(nbconvert's lab template without its CDN scripts), plots are inline data URIs, the kit's pages embed their CSS.
`single_file` packs the index, run pages and outputs-only notebook pages into one HTML to send.

Each investigation's block opens with its conclusion (conclusions.py: 2–4 sentences and a headline figure computed
from its verdicts and numbers); notebook pages open with the same conclusion, and the outputs-only page is curated
(curate_notebook: logs collapsed at the end, tables through display.py, bare reprs and stateless widgets left out).

How an answer is computed (one per investigation and question: bites / fix / cost, from the claims ledger):
the claims of the investigation whose ledger `question` is that question, in ledger order, with their verdicts
in the run; for "bites", only the claims about the bug itself (conclusions.BUG_CLAIMS) on the device class the
bug needs (conclusions.device_class) decide — a CPU run of a CUDA-only bug says "needs CUDA — this run cannot tell".
The headline aggregates the decisive verdicts (confirmed → yes, refuted / not_reproduced → no, partly → partly;
different ones → mixed; none decisive → the first claim's inconclusive / needs_cuda / error). The deciding claim is
the first deciding claim in ledger order with a decisive verdict, else the first with any verdict; the answer's
sentence is the conclusion's sentence for that question, else the first sentence of the deciding claim's evidence.
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

import jinja2
from markupsafe import Markup

from . import conclusions, display, findings, matrix, verdicts

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES_DIR), autoescape=jinja2.select_autoescape(["html", "j2"])
)
NOTEBOOK_TEMPLATE = TEMPLATES_DIR / "notebook_offline.html.j2"  # nbconvert's lab template, offline
MAX_TABLE_ROWS = 80  # larger tables stay in the notebook HTML and results.json
LONG_CELL = 160  # characters; a longer table cell folds into <details>
SENTENCE_LIMIT = 240  # characters of an evidence's first sentence shown as the one-line answer
QUESTIONS = ("bites", "fix", "cost")
QUESTION_LABELS = {"bites": "bites here?", "fix": "fix holds?", "cost": "cost?", "other": "other claims"}
DECISIVE = verdicts.DECISIVE
POLARITY = {"confirmed": "yes", "refuted": "no", "not_reproduced": "no", "partly": "partly"}
HEADLINES = {
    "bites": {"yes": "yes", "no": "no", "partly": "partly", "mixed": "mixed"},
    "fix": {"yes": "holds", "no": "does not hold", "partly": "partly holds", "mixed": "mixed"},
    "cost": {"yes": "as the seed says", "no": "not as the seed says", "partly": "partly as the seed says",
             "mixed": "mixed"},
    "other": {"yes": "confirmed", "no": "not confirmed", "partly": "partly", "mixed": "mixed"},
}
UNDECIDED = {"inconclusive": "cannot tell", "needs_cuda": "needs CUDA", "error": "error"}
BASIS_LABELS = {"derived": "derived", "both": "measured + derived", "none": "no basis"}
BASIS_WORDS = {"measured": "measured in this run",
               "derived": "derived: arithmetic or a model applied to the seed's own numbers, not a measurement",
               "both": "partly measured in this run, partly derived from the seed's own numbers",
               "none": "no basis: the verdict rests on no measurement (an error)"}
STEP_STATUSES = ("ok", "error", "crash", "timeout", "oom", "skipped")  # isolate.Outcome.status values
UNTESTABLE_LEDGER = "untestable"  # data/claims/untestable.json: claims no investigation can test
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=[A-Z(\"'])")
_EXTERNAL_SCRIPT = re.compile(r"<script\b[^>]*\bsrc=[\"']https?://[^>]*>\s*</script>", re.I)
_EXTERNAL_LINK = re.compile(r"<link\b[^>]*\bhref=[\"']https?://[^>]*>", re.I)


# ---------------------------------------------------------------- notebook pages


def render_notebook(ipynb: Path) -> list[Path]:
    """Write <name>.html (code and outputs) and <name>.nocode.html (outputs only, curated), both working offline.

    Both pages open with the investigation's conclusion when its results.json lies beside the notebook; the
    outputs-only page is curated by `curate_notebook` (logs to one collapsed section at the end, tables curated,
    bare expression outputs and stateless widgets left out, repeated outputs shown once).
    """
    nb, head = _notebook_and_conclusion(ipynb)
    written = []
    for suffix, page in notebook_pages(ipynb, nb, head).items():
        target = ipynb.with_suffix(suffix)
        target.write_text(page, encoding="utf-8")
        written.append(target)
    return written


def _notebook_and_conclusion(ipynb: Path) -> tuple[Any, str]:
    """The executed notebook (widget state dropped) and its conclusion's HTML ('' without a readable results.json)."""
    import nbformat

    nb = nbformat.read(ipynb, as_version=4)
    nb.metadata.pop("widgets", None)  # widget state needs the widget manager from a CDN; outputs stay
    stem = ipynb.name.removesuffix(".ipynb")
    results_path = ipynb.with_name(f"{stem}.results.json")
    if not results_path.exists():
        return nb, ""
    try:
        res = findings.read_results(results_path)
    except (ValueError, OSError, json.JSONDecodeError):
        return nb, ""
    return nb, conclusion_html(conclusions.conclude(res, ledger().get(res.get("investigation", stem), [])))


def notebook_pages(ipynb: Path, nb: Any, head: str = "", which: tuple[str, ...] = (".html", ".nocode.html")
                   ) -> dict[str, str]:
    """The HTML of a notebook's pages by suffix (see render_notebook), offline."""
    import nbformat
    from nbconvert import HTMLExporter

    stem = ipynb.name.removesuffix(".ipynb")
    title = f"{stem} · {ipynb.parent.name}"
    pages = {}
    for suffix, hide_code in ((".html", False), (".nocode.html", True)):
        if suffix not in which:
            continue
        page_nb = curate_notebook(nb) if hide_code else nbformat.from_dict(nb)
        if head:
            page_nb.cells.insert(0, nbformat.v4.new_markdown_cell(head))
        exporter = HTMLExporter(template_name="lab", template_file=str(NOTEBOOK_TEMPLATE), exclude_input=hide_code,
                                exclude_input_prompt=hide_code, exclude_output_prompt=hide_code)
        body, _ = exporter.from_notebook_node(page_nb, resources={"metadata": {"name": title}})
        pages[suffix] = offline(body)
    return pages


_STEP_LINE = re.compile(r"^\[step\]", re.M)
_BARE_REPR = re.compile(r"^('.*'|\".*\"|\w*Path\(.*\)|None|True|False|-?\d+(\.\d+)?|<[^>]*>)$", re.S)
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def curate_notebook(nb: Any) -> Any:
    """A copy of an executed notebook as the outputs-only page shows it.

    - every stderr stream (warnings, `[step]` logs) and every stdout line starting with `[step]` moves to one
      collapsed "log" section at the end of the page (nothing of it stays inline);
    - an execute_result carrying only text/plain whose text is a bare repr (a string, a path, a number, None,
      `<…>`) is left out: without the code it answers nothing;
    - a widget output is shown as one line naming where it works (JupyterLab), never as its `VBox(…)` repr;
    - pandas tables are curated (display.curate_table_html); an output identical to an earlier one is left out.
    Error outputs (a cell that raised) stay where they are: they are the notebook's own failures.
    """
    import nbformat

    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    log: list[str] = []
    seen: set[str] = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for out in cell.get("outputs", []):
            kind = out.get("output_type")
            if kind == "stream":
                text = out.get("text", "")
                if out.get("name") == "stderr":
                    log.append(text)
                    continue
                steps = "".join(line for line in text.splitlines(keepends=True) if _STEP_LINE.match(line))
                if steps:
                    log.append(steps)
                    text = "".join(line for line in text.splitlines(keepends=True) if not _STEP_LINE.match(line))
                    if not text.strip():
                        continue
                    out["text"] = text
                kept.append(out)
                continue
            if kind in ("execute_result", "display_data"):
                data = out.get("data", {})
                if WIDGET_MIME in data:
                    out["data"] = {"text/html": "<p class='kit-note'>An interactive explorer: it works in "
                                                "JupyterLab with the notebook running (no saved state here).</p>"}
                    out.pop("output_type")
                    out["output_type"] = "display_data"
                    out.pop("execution_count", None)
                elif set(data) == {"text/plain"} and _BARE_REPR.match(str(data["text/plain"]).strip()):
                    continue
                elif "text/html" in data:
                    data["text/html"] = display.curate_table_html(str(data["text/html"]))
                key = json.dumps(out.get("data", {}), sort_keys=True)
                if key in seen:
                    continue
                seen.add(key)
            kept.append(out)
        cell["outputs"] = kept
    if log:
        text = "".join(log)
        lines = text.count("\n") + (0 if text.endswith("\n") else 1)
        steps = len(_STEP_LINE.findall(text))
        summary = f"log: {lines} line{'s' if lines != 1 else ''}" + (f", {steps} of them [step] lines" if steps else "")
        cell = nbformat.v4.new_code_cell("", outputs=[nbformat.v4.new_output("display_data", data={
            "text/html": f"<details class='kit-log'><summary>{html.escape(summary)}</summary>"
                         f"<pre>{html.escape(text)}</pre></details>"})])
        nb.cells.append(cell)
    return nb


def offline(page: str) -> str:
    """Drop what a page would fetch from the network: <script src="http…"> and <link href="http…">."""
    return _EXTERNAL_LINK.sub("", _EXTERNAL_SCRIPT.sub("", page))


# ---------------------------------------------------------------- the ledger and runs


def ledger() -> dict[str, list[dict[str, Any]]]:
    """The claims ledger per investigation (data/claims/<investigation>.json), in file and entry order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for path in sorted((findings.DATA / "claims").glob("*.json")):
        out[path.stem] = json.loads(path.read_text())
    return out


def question_of(entry: dict[str, Any]) -> str:
    """Which answer a ledger entry feeds: its `question` (bites / fix / cost), `other` when absent or unknown."""
    q = entry.get("question") or "other"
    return q if q in QUESTION_LABELS else "other"


def first_sentence(text: str, limit: int = SENTENCE_LIMIT) -> str:
    """The first sentence of an evidence string (where its deciding number is), cut at `limit` characters."""
    text = " ".join(str(text or "").split())
    head = _SENTENCE_END.split(text, maxsplit=1)[0]
    return head if len(head) <= limit else head[: limit - 1].rstrip() + "…"


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
    def seconds(self) -> float:
        return float(self.meta.get("wall_seconds") or sum(r.get("seconds") or 0 for r in self.results))


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

    @property
    def counts_text(self) -> str:
        return " · ".join(f"{v} {n}" for v, n in self.counts)


def verdict_counts(verdicts: list[str]) -> list[tuple[str, int]]:
    """How many of each verdict, in findings.VERDICTS order (unknown verdicts last)."""
    counted = Counter(verdicts)
    order = [*findings.VERDICTS, *sorted(set(counted) - set(findings.VERDICTS))]
    return [(v, counted[v]) for v in order if counted[v]]


def answer(question: str, entries: list[dict[str, Any]], verdicts: dict[str, dict[str, Any]],
           device_type: str = "", investigation: str = "", conclusion: conclusions.Conclusion | None = None) -> Answer:
    """The answer to one question from the ledger entries tagged with it and the run's verdicts (see module doc).

    "bites here?" is answered only by the claims about the bug itself (conclusions.BUG_CLAIMS, when the
    investigation names them) that this run's device class can show: a bug claim whose device class
    (conclusions.device_class: the ledger's conditions.device, else the investigation's) is cuda says nothing on a
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
        bug = [cid for cid in conclusions.BUG_CLAIMS.get(investigation, []) if cid in by_id]
        deciders = bug or judged
        if device_type:
            shown = [cid for cid in deciders if conclusions.device_class(by_id.get(cid), investigation)
                     in ("any", device_type)]
            if not shown and any(cid in verdicts for cid in deciders):
                seen = [(cid, verdicts[cid]) for cid in judged if cid in verdicts]
                sentence = (conclusion.sentence(question) if conclusion else "") or \
                    f"the bug needs {conclusions.device_class(by_id.get(deciders[0]), investigation).upper()}; " \
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
    if decisive:
        polarities = {POLARITY[c["verdict"]] for _, c in decisive}
        state, headline = "answered", HEADLINES[question][polarities.pop() if len(polarities) == 1 else "mixed"]
    else:
        state, headline = "undecided", UNDECIDED.get(claim.get("verdict", ""), str(claim.get("verdict")))
    sentence = (conclusion.sentence(question) if conclusion else "") or first_sentence(claim.get("evidence", ""))
    return Answer(question, label, state, headline, verdict_counts([c.get("verdict", "") for _, c in seen]),
                  cid, claim.get("verdict", ""), sentence, judged, str(claim.get("basis") or ""))


def answers(entries: list[dict[str, Any]], verdicts: dict[str, dict[str, Any]], device_type: str = "",
            investigation: str = "", conclusion: conclusions.Conclusion | None = None) -> list[Answer]:
    """bites / fix / cost answers of one investigation (and `other` when its ledger has such claims)."""
    rows = [answer(q, entries, verdicts, device_type, investigation, conclusion) for q in QUESTIONS]
    if any(question_of(e) == "other" and not e.get("untestable") for e in entries):
        rows.append(answer("other", entries, verdicts, device_type, investigation, conclusion))
    return rows


def conclusion_html(c: conclusions.Conclusion, run_label: str = "") -> str:
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
        fig = (f"<div class='figure' data-claim='{html.escape(c.figure.get('claim', ''))}'><b>"
               f"{html.escape(str(c.figure.get('value', '')))}</b><span>{html.escape(str(c.figure.get('label', '')))}"
               "</span></div>")
    where = f" · {html.escape(run_label)}" if run_label else ""
    body = "".join(f"<p>{html.escape(s)}</p>" for s in c.sentences)
    return (f"{style}<div class='kit-conclusion' data-investigation='{html.escape(c.investigation)}'>{fig}"
            f"<h2>Conclusion: {html.escape(c.investigation)} on {html.escape(c.device)}{where}</h2>{body}"
            "<div style='clear:both'></div></div>")


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
    """Coverage of the ledger by one run; `not reached` = a judged claim with no verdict in the run."""
    ran = set(run.investigations)
    judged, missing = [], []
    for inv, entries in book.items():
        for e in entries:
            if e.get("untestable") or inv == UNTESTABLE_LEDGER:
                continue
            if e["id"] in run.verdicts:
                judged.append(e["id"])
            else:
                why = "no verdict in its results" if inv in ran else "investigation not run"
                missing.append({**e, "investigation": inv, "why": why})
    listed = {e["id"] for entries in book.values() for e in entries}
    return Coverage(judged, untestable_entries(book), missing, [cid for cid in run.verdicts if cid not in listed])


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


def _sources(entries: list[dict[str, Any]]) -> list[str]:
    """The seed files an investigation's claims come from, in ledger order."""
    return list(dict.fromkeys(e.get("source", "") for e in entries if e.get("source")))


def block(investigation: str, entries: list[dict[str, Any]], run: Run) -> Block:
    """The answer block of one investigation in one run, with its conclusion."""
    testable = [e for e in entries if not e.get("untestable")]
    mine = [run.verdicts[e["id"]] for e in testable if e["id"] in run.verdicts]
    result = next((r for r in run.results if r["investigation"] == investigation), None)
    conclusion = conclusions.conclude(result, entries) if result is not None else None
    return Block(investigation, _sources(entries), run,
                 answers(entries, run.verdicts, run.device_type, investigation, conclusion),
                 verdict_counts([c.get("verdict", "") for c in mine]), len(mine), len(testable),
                 result is not None, (result or {}).get("notebook_error", ""),
                 Markup(conclusion_html(conclusion)) if conclusion else Markup(""),
                 conclusion.sentences if conclusion else [])


def _investigations(book: dict[str, list[dict[str, Any]]], runs: list[Run]) -> dict[str, list[dict[str, Any]]]:
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


# ---------------------------------------------------------------- tables and cells


def _scalar(value: Any) -> str:
    """A table value as text: floats to 6 significant digits, lists and dicts as JSON, None as ''."""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else str(value)


def _fold(text: str) -> Markup:
    """A cell's text, folded into <details> (its start as the summary) when it is long."""
    if len(text) <= LONG_CELL:
        return Markup(html.escape(text))
    return Markup(f"<details class='cell'><summary>{html.escape(text[:100])}…</summary>"
                  f"<div class='full'>{html.escape(text)}</div></details>")


def trace_link(value: str, run_dir: Path) -> Markup:
    """A crash's trace file as a link when it lies in the run folder, else its name (the file stayed elsewhere)."""
    if not value:
        return Markup("")
    path = Path(value)
    candidates = [path] if path.is_absolute() else [run_dir / path]
    candidates.append(run_dir / path.name)
    for candidate in candidates:
        try:
            rel = candidate.resolve().relative_to(run_dir.resolve())
        except (ValueError, OSError):
            continue
        if candidate.exists():
            return Markup(f"<a class='trace' href='{html.escape(rel.as_posix())}'>{html.escape(path.name)}</a>")
    return Markup(f"<span class='muted' title='{html.escape(value)}'>{html.escape(path.name)} "
                  "(not in the run folder)</span>")


def frames_html(value: Any) -> Markup:
    """Top frames of a crash (' | '-joined or a list): the first one shown, all of them one click away."""
    frames = value if isinstance(value, list) else [f.strip() for f in str(value or "").split(" | ") if f.strip()]
    if not frames:
        return Markup("")
    items = "".join(f"<li><code>{html.escape(str(f))}</code></li>" for f in frames)
    return Markup(f"<details class='frames'><summary><code>{html.escape(str(frames[0])[:100])}</code> "
                  f"({len(frames)} frames)</summary><ol>{items}</ol></details>")


def table_html(rows: list[dict[str, Any]], run_dir: Path) -> Markup:
    """A results table as HTML (first MAX_TABLE_ROWS rows): long cells folded, crash frames listed, traces linked."""
    columns = list(dict.fromkeys(k for row in rows[:MAX_TABLE_ROWS] for k in row))
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = []
    for row in rows[:MAX_TABLE_ROWS]:
        cells = []
        for c in columns:
            value = row.get(c)
            if c == "frames":
                cell = frames_html(value)
            elif c == "trace_file":
                cell = trace_link(_scalar(value), run_dir)
            elif c == "status" and isinstance(value, str) and value in STEP_STATUSES:
                cell = Markup(f"<span class='step {value}'>{value}</span>")
            else:
                cell = _fold(_scalar(value))
            cells.append(f"<td>{cell}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    note = (f"<p class='note'>first {MAX_TABLE_ROWS} of {len(rows)} rows (all of them in results.json)</p>"
            if len(rows) > MAX_TABLE_ROWS else "")
    return Markup(f"<div class='scroll'><table class='data'><tr>{head}</tr>{''.join(body)}</table></div>{note}")


def time_split_bar(split: dict[str, Any] | None) -> dict[str, Any] | None:
    """Widths (%) of compile / measure / other for a notebook's time bar; None when the run did not record it."""
    if not split:
        return None
    parts = {k: float(split.get(k) or 0) for k in ("compile", "measure", "other")}
    total = max(sum(parts.values()), float(split.get("wall") or 0), 1e-9)
    return {"parts": [(k, v, round(100 * v / total, 1)) for k, v in parts.items()],
            "wall": float(split.get("wall") or 0)}


def _notebook_rows(run: Run, present: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """Per notebook of the run: state, seconds, error, time split and the files it left."""
    listed = {n.get("name"): n for n in run.meta.get("notebooks", []) if isinstance(n, dict)}
    by_stem = {r["_stem"]: r for r in run.results}
    rows = []
    for name in [*listed, *(s for s in by_stem if s not in listed)]:
        n, r = listed.get(name, {}), by_stem.get(name, {})
        state = n.get("state") or ("failed" if r.get("notebook_error") or n.get("ok") is False else "done")
        split = r.get("time_split") or n.get("time_split")
        files = [(f"{name}{s}", label) for s, label in ((".html", "report"), (".nocode.html", "without code"),
                                                          (".ipynb", "notebook"), (".results.json", "results.json"))]
        rows.append({"name": name, "investigation": r.get("investigation", name), "state": state,
                     "seconds": n.get("seconds") or r.get("seconds"),
                     "error": n.get("error") or r.get("notebook_error", ""),
                     "bar": time_split_bar(split), "split": split,
                     "files": [(f, label) for f, label in files if f in present or (run.dir / f).exists()]})
    return rows


# ---------------------------------------------------------------- pages


def _pretty(data: Any) -> str:
    """A claim's data as indented JSON for its <details>, '' when it has none."""
    return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) if data else ""


def _common() -> dict[str, Any]:
    """Names both page templates use."""
    return {"labels": QUESTION_LABELS, "first_sentence": first_sentence, "pretty": _pretty,
            "verdicts": findings.VERDICTS, "cond_value": cond_value, "basis_words": BASIS_WORDS,
            "basis_labels": BASIS_LABELS}


def cond_value(value: Any) -> str:
    """A condition's value as a reader wants it: a range as min–max, a list as 'a or b', None as '—'."""
    if value is None or value == "":
        return "—"
    if isinstance(value, dict) and set(value) <= {"min", "max"}:
        return f"{value.get('min', '…')}–{value.get('max', '…')}"
    if isinstance(value, (list, tuple)):
        return " or ".join(cond_value(v) for v in value)
    return str(value)


def render_run(run_dir: Path, notebooks: bool = True) -> Path:
    """Render every executed notebook of a run (optional) and write the run's index.html, answers first."""
    run_dir = Path(run_dir)
    if notebooks:
        for ipynb in sorted(run_dir.glob("*.ipynb")):
            render_notebook(ipynb)
    target = run_dir / "index.html"
    target.write_text(run_page(run_dir), encoding="utf-8")
    return target


def run_page(run_dir: Path, present: frozenset[str] = frozenset()) -> str:
    """The HTML of a run's page (index.html): answers first. `present`: file names to link as if on disk."""
    run_dir = Path(run_dir)
    run = load_run(run_dir)
    book = ledger()
    invs = _investigations(book, [run])
    ran = [inv for inv in invs if inv in run.investigations]
    blocks = [block(inv, invs[inv], run) for inv in ran]
    claim_rows = []
    for inv in ran:
        ids = [e["id"] for e in invs[inv]]
        extra = [c["id"] for c in run.verdicts.values() if c["investigation"] == inv and c["id"] not in ids]
        claim_rows += [run.verdicts[cid] for cid in [*ids, *extra] if cid in run.verdicts]
    claim_rows += [c for c in run.verdicts.values() if c["investigation"] not in ran]
    page = TEMPLATES.get_template("run.html.j2").render(
        run=run, run_id=run.meta.get("run_id") or (run.results[0].get("run_id") if run.results else run.name),
        environment=run.environment, blocks=blocks, claim_rows=claim_rows, cov=coverage(run, book),
        not_run=[inv for inv in invs if inv not in ran], notebooks=_notebook_rows(run, present),
        tables={r["_stem"]: {name: table_html(rows, run_dir) for name, rows in r.get("tables", {}).items() if rows}
                for r in run.results},
        question_of={e["id"]: question_of(e) for entries in invs.values() for e in entries},
        bands={e["id"]: e["band"] for entries in invs.values() for e in entries if e.get("band")}, **_common())
    return page


def render_index(root: Path, title: str = "") -> Path:
    """Write root/index.html (index_page)."""
    target = Path(root) / "index.html"
    target.write_text(index_page(root, title), encoding="utf-8")
    return target


def index_page(root: Path, title: str = "") -> str:
    """Write root/index.html: answers per investigation from the newest run of each device type that judged it
    (answering_runs; each block names its run), coverage per run, then every claim's verdict per run with changes since the previous run of the same device type."""
    root = Path(root)
    runs = [load_run(d, root) for d in find_runs(root)]
    book = ledger()
    invs = _investigations(book, runs)
    newest = newest_per_device(runs)
    grid = [{"investigation": inv, "sources": _sources(entries),
             "blocks": [block(inv, entries, run) for run in answering_runs(runs, inv)]}
            for inv, entries in invs.items()]
    comparison = []
    for inv, entries in invs.items():
        extra = [{"id": cid, "source": c.get("source", ""), "claim": c.get("claim", "")}
                 for run in runs for cid, c in run.verdicts.items()
                 if c["investigation"] == inv and cid not in {e["id"] for e in entries}]
        entries = [*entries, *{e["id"]: e for e in extra}.values()]
        comparison.append({"investigation": inv, "rows": list(zip(entries, compare(runs, entries)))})
    if book.get(UNTESTABLE_LEDGER):
        comparison.append({"investigation": "untestable claims", "rows": [(e, []) for e in book[UNTESTABLE_LEDGER]]})
    page = TEMPLATES.get_template("index.html.j2").render(
        title=title or ("yolo26kit local runs" if root.name == "runs" else "yolo26kit reports"),
        runs=runs, newest=newest, grid=grid, comparison=comparison,
        coverages={run.name: coverage(run, book) for run in runs}, untestable=untestable_entries(book),
        question_of={e["id"]: question_of(e) for entries in invs.values() for e in entries},
        matrices=matrix.listing(root), **_common())
    return page


# ---------------------------------------------------------------- one file to send


_HREF = re.compile(r"""\bhref=(["'])([^"']*)\1""")
SINGLE_FILE_DOWNLOADS = (".results.json", ".txt")  # files linked from the pages that travel inside the single file
SINGLE_FILE_SCRIPT = r"""
const pages = JSON.parse(document.getElementById('kit-pages').textContent);
function show() {
  const args = new URLSearchParams(location.hash.slice(1));
  const id = pages[args.get('page')] ? args.get('page') : Object.keys(pages)[0];
  const frame = document.getElementById('kit-frame');
  document.querySelectorAll('nav a').forEach(a => a.classList.toggle('here', a.dataset.page === id));
  const at = () => { const el = args.get('at') && frame.contentDocument.getElementById(args.get('at'));
                     if (el) { el.scrollIntoView(); el.style.outline = '2px solid #f0c000'; } };
  if (frame.dataset.page !== id) {
    frame.dataset.page = id;
    frame.onload = at;
    frame.srcdoc = document.getElementById('kit-src-' + pages[id]).textContent.replace(/<\\(\/script|!--)/gi, '<$1');
    document.title = id + ' · ' + document.body.dataset.title;
  } else { at(); }
}
window.addEventListener('hashchange', show);
show();
"""


def _script_safe(page: str) -> str:
    """A page as the text of a <script type="text/html">: '</script' and '<!--' cannot end or confuse it
    (SINGLE_FILE_SCRIPT undoes both before showing the page)."""
    return re.sub(r"<(/script|!--)", lambda m: "<\\" + m.group(1), page, flags=re.I)


def _page_id(rel: str) -> str:
    """The single file's id of a page, from its path relative to the folder sent (index.html → 'index')."""
    rel = rel.removesuffix(".nocode.html").removesuffix(".html")
    return "index" if rel == "index" else rel.removesuffix("/index")


def _rewrite_links(page: str, here: str, ids: set[str], downloads: dict[str, str]) -> str:
    """Links of one embedded page: to another embedded page (or a place in one) → '#page=…&at=…' in the top
    window; to a file carried inside → a data: download; to a file left out → plain text; others unchanged."""
    import posixpath

    def one(match: re.Match[str]) -> str:
        quote, href = match.group(1), html.unescape(match.group(2))
        if href.startswith(("http://", "https://", "data:", "mailto:", "javascript:")):
            return match.group(0)
        path, _, frag = href.partition("#")
        if not path:
            target = _page_id(here)
        else:
            rel = posixpath.normpath(posixpath.join(posixpath.dirname(here), path))
            if rel in downloads:
                name = html.escape(posixpath.basename(rel))
                return f'href={quote}{downloads[rel]}{quote} download={quote}{name}{quote}'
            if not rel.endswith(".html"):
                return f'data-left-out={quote}{html.escape(rel)}{quote} title={quote}not in this file{quote}'
            target = _page_id(rel)
            if target not in ids:
                return f'data-left-out={quote}{html.escape(rel)}{quote} title={quote}not in this file{quote}'
        new = f"#page={target}" + (f"&at={frag}" if frag else "")
        return f'href={quote}{html.escape(new)}{quote} target={quote}_top{quote}'

    return _HREF.sub(one, page)


def single_file(target: Path, out: Path | None = None) -> Path:
    """Write one self-contained HTML holding a run's page (or, for a folder of runs, the index and every run's
    page) and every investigation's outputs-only page with its plots, openable offline.

    Each page is kept as it renders on its own and shown in one frame at a time (a bar on top lists them); links
    between pages become '#page=<id>&at=<anchor>'; results.json and crash trace files linked from the pages are
    carried as data: downloads; the code pages and .ipynb files are left out (their links say so). Notebook pages
    are rendered from the .ipynb when it is there, else taken from the .nocode.html on disk.
    """
    import base64

    target = Path(target)
    single_run = bool(list(target.glob("*.results.json")))
    run_dirs = [target] if single_run else find_runs(target)
    if not run_dirs:
        raise ValueError(f"no results.json under {target}")
    root = target if not single_run else target
    pages: dict[str, str] = {}  # rel path → html
    labels: dict[str, str] = {}
    if not single_run:
        pages["index.html"] = index_page(target)
        labels["index.html"] = "all runs"
    downloads: dict[str, str] = {}
    for run_dir in run_dirs:
        prefix = "" if single_run else run_dir.relative_to(root).as_posix() + "/"
        stems = sorted({p.name.removesuffix(".ipynb") for p in run_dir.glob("*.ipynb")} |
                       {p.name.removesuffix(".nocode.html") for p in run_dir.glob("*.nocode.html")})
        pages[prefix + "index.html"] = run_page(run_dir, frozenset(f"{stem}.nocode.html" for stem in stems))
        labels[prefix + "index.html"] = f"run {run_dir.name}"
        for stem in stems:
            ipynb = run_dir / f"{stem}.ipynb"
            if ipynb.exists():
                nb, head = _notebook_and_conclusion(ipynb)
                page = notebook_pages(ipynb, nb, head, which=(".nocode.html",))[".nocode.html"]
            else:
                page = (run_dir / f"{stem}.nocode.html").read_text(encoding="utf-8")
            pages[f"{prefix}{stem}.nocode.html"] = page
            labels[f"{prefix}{stem}.nocode.html"] = stem
        for path in sorted(run_dir.iterdir()):
            if path.is_file() and path.name.endswith(SINGLE_FILE_DOWNLOADS):
                kind = "application/json" if path.suffix == ".json" else "text/plain"
                downloads[prefix + path.name] = (f"data:{kind};base64,"
                                                 f"{base64.b64encode(path.read_bytes()).decode('ascii')}")
    ids = {_page_id(rel) for rel in pages}
    sources, nav, index = [], [], {}
    for n, (rel, page) in enumerate(pages.items()):
        pid = _page_id(rel)
        index[pid] = str(n)
        body = offline(_rewrite_links(page, rel, ids, downloads))
        sources.append(f'<script type="text/html" id="kit-src-{n}">{_script_safe(body)}</script>')
        if rel.endswith("index.html") and (not single_run or rel == "index.html") and nav:
            nav.append("<span class='sep'></span>")
        nav.append(f'<a href="#page={html.escape(pid)}" data-page="{html.escape(pid)}">{html.escape(labels[rel])}</a>')
    title = f"yolo26kit · {target.name}"
    doc = ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
           f"<title>{html.escape(title)}</title><style>"
           "body{margin:0;font-family:system-ui,sans-serif}nav{position:sticky;top:0;background:#1d4f80;padding:.35rem .6rem;"
           "display:flex;flex-wrap:wrap;gap:.2rem .4rem;z-index:1}nav a{color:#fff;text-decoration:none;padding:.1rem .45rem;"
           "border-radius:.25rem;font-size:.85rem}nav a.here{background:#fff;color:#1d4f80;font-weight:600}"
           "nav .sep{width:1px;background:#9bc;margin:0 .3rem}#kit-frame{border:0;width:100%;height:calc(100vh - 2.4rem);"
           "display:block}</style></head>"
           f"<body data-title='{html.escape(title)}'><nav>{''.join(nav)}</nav><iframe id='kit-frame' title='page'></iframe>"
           f"<script type='application/json' id='kit-pages'>{json.dumps(index)}</script>{''.join(sources)}"
           f"<script>{SINGLE_FILE_SCRIPT}</script></body></html>")
    out = Path(out) if out else target / f"{target.name}.single.html"
    out.write_text(doc, encoding="utf-8")
    return out
