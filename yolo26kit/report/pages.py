"""HTML reports: nbconvert per executed notebook, a run's page and the index over runs, both opening with answers.

Every page is self-contained (no request leaves the machine): notebook pages use templates/notebook_offline.html.j2
(nbconvert's lab template without its CDN scripts), plots are inline data URIs, the kit's pages embed their CSS.
single_file.py packs the index, run pages and outputs-only notebook pages into one HTML to send.

Each investigation's block opens with its conclusion (its conclude.py: 2–4 sentences and a headline figure computed
from its verdicts and numbers); notebook pages open with the same conclusion, and the outputs-only page is curated
(curate_notebook: logs collapsed at the end, tables through display.py, bare reprs and stateless widgets left out).

The answers, coverage and comparison across runs are computed in answers.py (re-exported here); the matrix page
and the listing of matrices in matrix_page.py.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from . import bisect_page, display, grid, matrix_page
from .. import __version__, findings
from ..conclusion import clip, conclude, name_of
from ..verdicts import path_name
from .answers import (DECISIVE, HEADLINES, POLARITY, QUESTION_LABELS, QUESTIONS, SENTENCE_LIMIT, UNDECIDED,
                       UNTESTABLE_LEDGER, Answer, Block, Cell, Coverage, Run, date_span, investigations_in, sources_of,
                       answer, answering_runs, answers, block, compare, conclusion_html, coverage, find_runs,
                       first_sentence, judged, load_run, newest_per_device, question_of, untestable_entries, verdict_counts)

__all__ = ["TEMPLATES_DIR", "TEMPLATES", "NOTEBOOK_TEMPLATE", "MAX_TABLE_ROWS", "LONG_CELL", "SENTENCE_LIMIT",
           "QUESTIONS", "QUESTION_LABELS", "DECISIVE", "POLARITY", "HEADLINES", "UNDECIDED", "BASIS_LABELS",
           "BASIS_WORDS", "STEP_STATUSES", "UNTESTABLE_LEDGER", "render_notebook", "notebook_pages", "WIDGET_MIME",
           "curate_notebook", "offline", "ledger", "question_of", "first_sentence", "Run", "load_run", "find_runs",
           "Answer", "verdict_counts", "answer", "answers", "conclusion_html", "Coverage", "untestable_entries",
           "coverage", "Block", "block", "Cell", "compare", "judged", "answering_runs", "newest_per_device",
           "trace_link", "frames_html", "table_html", "time_split_bar", "cond_value", "render_run", "run_page",
           "render_index", "index_page", "notebook_and_conclusion", "verdict_name", "seed_name"]

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES_DIR), autoescape=jinja2.select_autoescape(["html", "j2"])
)
TEMPLATES.filters["date_span"] = date_span  # the index's runs, oldest to newest, as one span
TEMPLATES.filters["words"] = display.marks_as_words  # quoted text (a seed's words, evidence) without emoji marks
NOTEBOOK_TEMPLATE = TEMPLATES_DIR / "notebook_offline.html.j2"  # nbconvert's lab template, offline
MAX_TABLE_ROWS = 80  # larger tables stay in the notebook HTML and results.json
LONG_CELL = 160  # characters; a longer table cell folds into <details>
BASIS_LABELS = {"derived": "derived", "both": "measured + derived", "none": "no basis"}
BASIS_WORDS = {"measured": "measured in this run",
               "derived": "derived: arithmetic or a model applied to the seed's own numbers, not a measurement",
               "both": "partly measured in this run, partly derived from the seed's own numbers",
               "none": "no basis: nothing in this run measured it (a step failed, was skipped or needs another device)"}
STEP_STATUSES = ("ok", "error", "crash", "timeout", "oom", "skipped")  # isolate.Outcome.status values
_EXTERNAL_SCRIPT = re.compile(r"<script\b[^>]*\bsrc=[\"']https?://[^>]*>\s*</script>", re.I)
_EXTERNAL_LINK = re.compile(r"<link\b[^>]*\bhref=[\"']https?://[^>]*>", re.I)


# ---------------------------------------------------------------- notebook pages


def render_notebook(ipynb: Path) -> list[Path]:
    """Write <name>.html (code and outputs) and <name>.nocode.html (outputs only, curated), both working offline.

    Both pages open with the investigation's conclusion when its results.json lies beside the notebook; the
    outputs-only page is curated by `curate_notebook` (logs to one collapsed section at the end, tables curated,
    bare expression outputs and stateless widgets left out, repeated outputs shown once).
    """
    nb, head = notebook_and_conclusion(ipynb)
    written = []
    for suffix, page in notebook_pages(ipynb, nb, head).items():
        target = ipynb.with_suffix(suffix)
        target.write_text(page, encoding="utf-8")
        written.append(target)
    return written


def notebook_and_conclusion(ipynb: Path) -> tuple[Any, str]:
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
    inv = res.get("investigation", stem)
    entries = ledger().get(inv, [])
    return nb, notebook_head(ipynb.parent, inv, entries) + conclusion_html(conclude(res, entries)) + \
        _answers_of(ipynb.parent, inv, entries)


def notebook_head(run_dir: Path, investigation: str, entries: list[dict[str, Any]]) -> str:
    """The header a notebook page opens with (investigation, stack, device, profile, run, links), '' when the
    folder is not a readable run."""
    try:
        return grid.page_head_html(load_run(run_dir), investigation, entries)
    except (OSError, ValueError, KeyError):
        return ""


def _answers_of(run_dir: Path, investigation: str, entries: list[dict[str, Any]]) -> str:
    """The three answers of the investigation in its run folder as a small table ('' when they cannot be read)."""
    try:
        return grid.answers_table_html(block(investigation, entries, load_run(run_dir)), entries)
    except (OSError, ValueError, KeyError):
        return ""


def verdicts_html(results_path: Path) -> str:
    """A notebook's verdicts as one folded table (verdict, claim, first sentence of the evidence), '' without any."""
    try:
        claims = findings.read_results(results_path).get("claims") or []
    except (ValueError, OSError, json.JSONDecodeError):
        return ""
    rows = "".join(f"<tr><td><span class='kit-v v-{html.escape(str(c.get('verdict')))}' title='"
                   f"{html.escape(str(c.get('verdict')))}'>{html.escape(verdict_name(str(c.get('verdict'))))}</span>"
                   f"</td><td><code>{html.escape(str(c.get('id')))}</code></td>"
                   f"<td>{html.escape(_said(c.get('evidence', '')))}</td></tr>"
                   for c in claims if isinstance(c, dict))
    if not rows:
        return ""
    return (f"<details class='kit-verdicts' open><summary>verdicts of this run ({len(claims)})</summary>"
            "<table class='kit-answers'><tr><th>verdict</th><th>claim</th><th>what the run found</th></tr>"
            f"{rows}</table></details>")


def _said(evidence: str) -> str:
    """An evidence's first sentence as a table cell shows it: lists as text, status marks as words."""
    return display.marks_as_words(display.lists_in_text(first_sentence(evidence, 200)))


def lift_main_plot(nb: Any) -> Any:
    """Take the notebook's first plot (an image output) out of its cell and return it (None without a plot), so
    that the outputs-only page can show it right under the answers."""
    for cell in nb.cells:
        for i, out in enumerate(cell.get("outputs", []) if cell.cell_type == "code" else []):
            if "image/png" in (out.get("data") or {}):
                return cell["outputs"].pop(i)
    return None


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
        if head and hide_code:  # the outputs-only page: header, conclusion, answers, main plot, verdicts, method
            plot = lift_main_plot(page_nb)
            verdicts = verdicts_html(ipynb.with_name(f"{stem}.results.json"))
            lead = [nbformat.v4.new_code_cell("", outputs=[plot])] if plot is not None else []
            if verdicts:
                lead.append(nbformat.v4.new_markdown_cell(verdicts))
            page_nb.cells[0:0] = [nbformat.v4.new_markdown_cell(head), *lead]
        elif head:
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
      `<…>`) is left out: without the code it answers nothing; a list or dict in it reads as text ('cpu, cuda');
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
                elif set(data) == {"text/plain"}:  # a list or dict the cell returned: read as text
                    data["text/plain"] = display.lists_in_text(str(data["text/plain"]))
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


# ---------------------------------------------------------------- the ledger


def ledger() -> dict[str, list[dict[str, Any]]]:
    """The claims ledger per investigation (data/claims/<investigation>.json), in file and entry order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for path in sorted((findings.DATA / "claims").glob("*.json")):
        out[path.stem] = json.loads(path.read_text())
    return out


# ---------------------------------------------------------------- tables and cells


def _scalar(value: Any) -> str:
    """A table value as text: floats to 6 significant digits, a list of plain values joined ('a, b'), other lists
    and dicts as JSON, None as ''."""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list) and all(isinstance(v, (str, int, float, bool)) or v is None for v in value):
        return ", ".join(_scalar(v) for v in value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else str(value)


def _fold(text: str) -> Markup:
    """A cell's text, folded into <details> (its start as the summary) when it is long."""
    text = display.marks_as_words(text)
    if len(text) <= LONG_CELL:
        return Markup(html.escape(text))
    return Markup(f"<details class='cell'><summary>{html.escape(clip(text, 100))}</summary>"
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
    return Markup(f"<details class='frames'><summary><code>{html.escape(clip(frames[0], 100))}</code> "
                  f"({len(frames)} frames)</summary><ol>{items}</ol></details>")


def table_html(rows: list[dict[str, Any]], run_dir: Path) -> Markup:
    """A results table as HTML (first MAX_TABLE_ROWS rows): long cells folded, crash frames listed, traces linked."""
    columns = list(dict.fromkeys(k for row in rows[:MAX_TABLE_ROWS] for k in row))
    columns = [columns[i] for i in display.result_first(columns, list(range(len(columns))))]
    head = "".join(f"<th title='{html.escape(str(c))}'>{html.escape(display.human_header(str(c)))}</th>"
                   for c in columns)
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
            elif isinstance(value, str) and display.mark_html(value):
                cell = Markup(display.mark_html(value))
            elif c in display.PATH_COLUMNS and isinstance(value, str) and path_name(value) != value:
                cell = Markup(f"<span title='{html.escape(value)}'>{html.escape(path_name(value))}</span>")
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
                     "reused_steps": n.get("reused_steps", 0), "reused_step_seconds": n.get("reused_step_seconds", 0),
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
            "basis_labels": BASIS_LABELS, "grid_labels": grid.GRID_LABELS, "name_of": name_of,
            "verdict_name": verdict_name, "seed_name": seed_name, "kit_version": __version__}


# Verdicts as people read them (the id stays in the chip's class and tooltip).
VERDICT_NAMES = {"not_reproduced": "not reproduced", "needs_cuda": "needs CUDA", "not judged": "not judged"}


def verdict_name(verdict: str) -> str:
    """A verdict in words: 'not reproduced', 'needs CUDA'; the others as they are."""
    return VERDICT_NAMES.get(verdict, verdict.replace("_", " "))


def seed_name(source: str) -> str:
    """A seed by its title ('seed 003: Toto CUDA graphs optimization fix …'), the kit's own claims as such; a
    file the seed list lacks by its name."""
    source = str(source or "")  # an entry without a source (a run's claim the ledger lacks) reads as ''
    if source == "kit":
        return "the kit's own claims"
    titles = {s.get("file"): s.get("title") for s in _seeds()}
    number = source.split("_", 1)[0]
    return f"seed {number}: {titles[source]}" if titles.get(source) else source


def _seeds() -> list[dict[str, str]]:
    """data/seeds.json: each seed file with its title ([] when unreadable)."""
    try:
        return json.loads((findings.DATA / "seeds.json").read_text())
    except (OSError, ValueError):
        return []


def cond_value(value: Any) -> str:
    """A condition's value as a reader wants it: a range as min–max, a list as 'a or b' with each value once, None
    as '—'."""
    if value is None or value == "":
        return "—"
    if isinstance(value, dict) and set(value) <= {"min", "max"}:
        return f"{value.get('min', '…')}–{value.get('max', '…')}"
    if isinstance(value, (list, tuple)):
        return " or ".join(dict.fromkeys(cond_value(v) for v in value))
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


FINDINGS_DIR = "findings"  # <reports>/findings/<id>/: a finding's repro, ISSUE.md and its checks over releases


def findings_of(runs: list[Run], root: Path, href_of: Any = None, prefix: str = "",
                unmet: bool = False) -> list[dict[str, Any]]:
    """The bugs the runs met (results.json `findings`), once per finding: the component at fault and its title from
    the findings' catalog, where it bites (its checks over releases), what upstream knows and what to do
    (repro.upstream), the runs and devices that met it, and links to its folder `<root>/findings/<id>/` (`prefix`
    is the page's path to root). With `unmet`, also the committed finding folders no run shows (met only by checks
    over releases)."""
    from ..repro import upstream
    from ..repro.catalog import ReproError, findings as catalog
    from ..repro.report import workaround_text

    chosen: dict[str, dict[str, Any]] = {}
    for run in runs:
        for result in run.results:
            for f in result.get("findings") or []:
                if not isinstance(f, dict) or not f.get("id"):
                    continue
                entry = chosen.setdefault(f["id"], {**f, "met": []})
                stack = f.get("stack") or {}
                entry["met"].append({"run": run.name, "run_href": href_of(run) if href_of else "",
                                     "stack_text": " · ".join(f"{k} {v}" for k, v in stack.items()
                                                              if k != "device_type") or run.device_label})
    if unmet:
        for folder in sorted((Path(root) / FINDINGS_DIR).glob("*/README.md")):
            fid = folder.parent.name
            if fid not in chosen:
                try:
                    known = catalog.get(fid)
                except ReproError:
                    continue
                chosen[fid] = {"id": fid, "met": [], "evidence": known.happens, "claims": list(known.claims)}
    for fid, entry in chosen.items():
        try:
            known = catalog.get(fid)
        except ReproError:  # a finding the catalog does not hold yet: the judge's own title
            known = None
        folder = Path(root) / FINDINGS_DIR / fid
        has = folder.is_dir()
        entry["upstream"] = upstream.summary(fid, folder if has else None)
        if known is not None:
            entry.update(title=known.title, workaround=workaround_text(known, entry["upstream"]))
        entry["issue_href"] = f"{prefix}{FINDINGS_DIR}/{fid}/ISSUE.md" if (folder / "ISSUE.md").is_file() else ""
        entry["repro_href"] = f"{prefix}{FINDINGS_DIR}/{fid}/repro.py" if (folder / "repro.py").is_file() else ""
        entry["readme_href"] = f"{prefix}{FINDINGS_DIR}/{fid}/README.md" if (folder / "README.md").is_file() else ""
    return list(chosen.values())


def run_page(run_dir: Path, present: frozenset[str] = frozenset()) -> str:
    """The HTML of a run's page (index.html): answers first. `present`: file names to link as if on disk."""
    run_dir = Path(run_dir)
    run = load_run(run_dir)
    book = ledger()
    invs = investigations_in(book, [run])
    ran = [inv for inv in invs if inv in run.investigations]
    blocks = [grid.with_cells(block(inv, invs[inv], run), invs[inv], "", [run]) for inv in ran]
    columns = grid.stacks([run])
    grid_rows = grid.grid({inv: invs[inv] for inv in ran}, columns, lambda _run: "")
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
        bands={e["id"]: e["band"] for entries in invs.values() for e in entries if e.get("band")},
        columns=columns, grid_rows=grid_rows, run_hrefs={run.name: "#run-facts"},
        found=findings_of([run], run_dir.parent, prefix="../"),
        **_common())
    return page


def _batches_of(columns: list[grid.Stack], run: Run, investigation: str) -> list[Run]:
    """The runs of the stack `run` belongs to that judged the investigation (its batches), [run] alone without one."""
    stack = next((s for s in columns if run in s.runs), None)
    return [r for r in stack.runs if judged(r, investigation)] if stack else [run]


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
    invs = investigations_in(book, runs)
    newest = newest_per_device(runs)
    old = grid.superseded(runs)
    current = [run for run in runs if run.name not in old]  # runs of an older kit are folded away
    columns = grid.stacks(runs)
    grid_rows = grid.grid(invs, columns, lambda run: f"{run.rel}/index.html")
    groups = [{"investigation": inv, "sources": sources_of(entries),
               "blocks": [grid.with_cells(block(inv, entries, run), entries, f"{run.rel}/index.html",
                                          _batches_of(columns, run, inv))
                          for run in answering_runs(current, inv)]}
              for inv, entries in invs.items()]
    comparison = []
    for inv, entries in invs.items():
        extra = [{"id": cid, "source": c.get("source", ""), "claim": c.get("claim", "")}
                 for run in runs for cid, c in run.verdicts.items()
                 if c["investigation"] == inv and cid not in {e["id"] for e in entries}]
        entries = [*entries, *{e["id"]: e for e in extra}.values()]
        comparison.append({"investigation": inv, "rows": list(zip(entries, compare(current, entries)))})
    if book.get(UNTESTABLE_LEDGER):
        comparison.append({"investigation": "untestable claims", "rows": [(e, []) for e in book[UNTESTABLE_LEDGER]]})
    page = TEMPLATES.get_template("index.html.j2").render(
        title=title or ("yolo26kit local runs" if root.name == "runs" else "yolo26kit reports"),
        runs=runs, current=current, superseded=old, newest=newest, grid=groups, comparison=comparison,
        columns=columns, grid_rows=grid_rows, run_hrefs={run.name: f"{run.rel}/index.html" for run in runs},
        coverages={run.name: coverage(run, book) for run in runs}, untestable=untestable_entries(book),
        question_of={e["id"]: question_of(e) for entries in invs.values() for e in entries},
        matrices=matrix_page.listing(root), bisects=bisect_page.listing(root),
        found=findings_of([r for r in current if r.name in {u.name for u in [*newest, *(u for s in columns for u in s.used)]}],
                          root, lambda run: f"{run.rel}/index.html", unmet=True), **_common())
    return page
