"""report: answers computed from verdicts and the ledger, coverage, run comparison, pages from synthetic runs."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest

from yolo26kit import findings
from yolo26kit.report import pages as report

REPO = Path(__file__).resolve().parents[1]

BOOK = {
    "alpha": [
        {"id": "alpha.bites_a", "source": "s1.txt", "claim": "A breaks", "question": "bites"},
        {"id": "alpha.bites_b", "source": "s1.txt", "claim": "B breaks too", "question": "bites"},
        {"id": "alpha.fix", "source": "s1.txt", "claim": "the patch fixes it", "question": "fix"},
        {"id": "alpha.cost", "source": "s1.txt", "claim": "the patch is 3x faster", "question": "cost"},
        {"id": "alpha.gone", "source": "s1.txt", "claim": "needs a phone", "question": "bites",
         "untestable": "needs an Android phone"},
    ],
    "beta": [{"id": "beta.only", "source": "s2.txt", "claim": "beta claim"}],
    "untestable": [{"id": "seed.vibes", "source": "s3.txt", "claim": "it feels slow", "untestable": "no measure"}],
}


def _claim(cid: str, verdict: str, evidence: str = "", **data: Any) -> dict[str, Any]:
    return {"id": cid, "source": "s1.txt", "claim": f"words of {cid}", "verdict": verdict,
            "evidence": evidence or f"{verdict}: 4.2 ms measured. More detail follows here.", "data": data}


def write_run(root: Path, name: str, device_type: str, claims: dict[str, list[dict[str, Any]]],
              meta: dict[str, Any] | None = None, tables: dict[str, list[dict[str, Any]]] | None = None,
              time_split: dict[str, float] | None = None) -> Path:
    """A run folder as the runner leaves it: one results.json per investigation, run.json when `meta` is given."""
    run_dir = root / name
    run_dir.mkdir(parents=True)
    environment = {"device_type": device_type, "device": "Test GPU" if device_type == "cuda" else "Test CPU",
                   "torch": "2.11.0", "executorch": "1.2.0", "kit": "abc1234"}
    for inv, items in claims.items():
        data = {"schema": findings.SCHEMA, "investigation": inv, "run_id": name, "started": "2026-01-01T00:00:00+00:00",
                "seconds": 12.5, "environment": environment, "parameters": {"imgsz": 320}, "claims": items,
                "missing_claims": [], "tables": tables or {}}
        if time_split:
            data["time_split"] = time_split
        (run_dir / f"{inv}.results.json").write_text(json.dumps(data))
    if meta is not None:
        (run_dir / "run.json").write_text(json.dumps({"run_id": name, "environment": environment, **meta}))
    return run_dir


@pytest.fixture
def book(monkeypatch) -> dict[str, list[dict[str, Any]]]:
    """A small ledger in place of data/claims."""
    monkeypatch.setattr(report, "ledger", lambda: BOOK)
    return BOOK


# ---------------------------------------------------------------- sentences and answers

def test_first_sentence_keeps_decimals_and_cuts_long_text():
    assert report.first_sentence("where_index_put 0.1519 ms vs 0.0751 ms → 2.02×. The rest.") == \
        "where_index_put 0.1519 ms vs 0.0751 ms → 2.02×."
    assert report.first_sentence("a; b") == "a; b"  # no capital after it: one sentence
    assert report.first_sentence("7 of 9 specs export; The rest fail") == "7 of 9 specs export;"
    cut = report.first_sentence("x" * 500, limit=50)
    assert len(cut) == 50 and cut.endswith("…")
    words = report.first_sentence("loading the package crashes with SIGSEGV in every one of the processes", 40)
    assert words.endswith(" …") and all(w in "loading the package crashes with SIGSEGV" for w in words[:-2].split())
    assert report.first_sentence("") == ""


def test_answer_aggregates_and_picks_the_first_decisive_claim():
    entries = BOOK["alpha"]
    verdicts = {"alpha.bites_a": _claim("alpha.bites_a", "needs_cuda", "no CUDA here. On CPU 0 faults."),
                "alpha.bites_b": _claim("alpha.bites_b", "confirmed", "3 of 3 runs crash with SIGSEGV. Trace saved.")}
    a = report.answer("bites", entries, verdicts)
    assert a.state == "answered" and a.headline == "yes"
    assert a.deciding == "alpha.bites_b"  # needs_cuda comes first in ledger order but is not decisive
    assert a.sentence == "3 of 3 runs crash with SIGSEGV."
    assert a.counts == [("confirmed", 1), ("needs_cuda", 1)] and a.counts_text == "confirmed 1 · needs_cuda 1"
    assert a.claims == ["alpha.bites_a", "alpha.bites_b"]  # the untestable one is never an answer's claim


@pytest.mark.parametrize("question, verdicts, state, headline", [
    ("bites", ["confirmed", "refuted"], "answered", "partly"),
    ("bites", ["not_reproduced", "refuted"], "answered", "no"),
    ("bites", ["partly", "partly"], "answered", "partly"),
    ("bites", ["needs_cuda", "error"], "undecided", "needs CUDA"),
    ("bites", ["error", "needs_cuda"], "undecided", "error"),
    ("fix", ["refuted"], "answered", "does not hold"),
    ("fix", ["confirmed"], "answered", "holds"),
    ("cost", ["partly"], "answered", "partly as the seed says"),
])
def test_answer_headline_follows_the_verdicts(question, verdicts, state, headline):
    ids = [e["id"] for e in BOOK["alpha"] if e.get("question") == question and not e.get("untestable")]
    a = report.answer(question, BOOK["alpha"], {cid: _claim(cid, v) for cid, v in zip(ids, verdicts)})
    assert (a.state, a.headline) == (state, headline)
    assert a.deciding == ids[0] if state == "undecided" else a.deciding_verdict in report.DECISIVE


def test_answer_without_claims_or_verdicts_says_so():
    assert report.answer("fix", BOOK["beta"], {}).state == "no_claims"
    a = report.answer("fix", BOOK["alpha"], {"alpha.bites_a": _claim("alpha.bites_a", "confirmed")})
    assert a.state == "not_reached" and a.claims == ["alpha.fix"] and not a.sentence
    rows = report.answers(BOOK["beta"], {"beta.only": _claim("beta.only", "refuted")})
    assert [r.question for r in rows] == ["bites", "fix", "cost", "other"]  # untagged claims answer as `other`
    assert rows[-1].headline == "not confirmed"


# ---------------------------------------------------------------- coverage, comparison, runs

def test_coverage_counts_judged_untestable_and_not_reached(tmp_path, book):
    notebooks = [{"name": "alpha", "state": "done"}, {"name": "beta", "state": "pending"}]
    run = report.load_run(write_run(tmp_path, "r1", "cpu", {"alpha": [_claim("alpha.bites_a", "confirmed"),
                                                                      _claim("alpha.old_id", "refuted")]},
                                    meta={"notebooks": notebooks}))
    cov = report.coverage(run, book)
    assert cov.judged == ["alpha.bites_a"]
    assert {e["id"]: e["why"] for e in cov.not_reached} == {
        "alpha.bites_b": "no verdict in its results", "alpha.fix": "no verdict in its results",
        "alpha.cost": "no verdict in its results", "beta.only": "investigation not run"}
    assert {e["id"]: e["untestable"] for e in cov.untestable} == {"alpha.gone": "needs an Android phone",
                                                                  "seed.vibes": "no measure"}
    assert cov.unlisted == ["alpha.old_id"] and cov.testable == 5


def test_a_one_investigation_run_counts_only_its_own_claims(tmp_path, book):
    run = report.load_run(write_run(tmp_path, "r1", "cpu", {"alpha": [_claim("alpha.bites_a", "confirmed")]},
                                    meta={"notebooks": [{"name": "alpha", "state": "done"}]}))
    cov = report.coverage(run, book)
    assert cov.testable == 4 and "beta.only" not in {e["id"] for e in cov.not_reached}
    beta = report.load_run(write_run(tmp_path, "r2", "cpu", {"beta": [_claim("beta.only", "confirmed")]},
                                     meta={"notebooks": [{"name": "beta", "state": "done"}]}))
    assert {e["id"] for e in report.coverage(beta, book).untestable} == {"seed.vibes"}  # not alpha's untestable claim


def test_compare_marks_changes_against_the_previous_run_of_the_same_device(tmp_path):
    def run(name: str, device: str, verdicts: dict[str, str]) -> report.Run:
        return report.load_run(write_run(tmp_path, name, device, {"alpha": [_claim(c, v) for c, v in verdicts.items()]}))

    runs = [run("r4-cpu", "cpu", {"alpha.fix": "refuted", "alpha.cost": "partly"}),
            run("r3-cuda", "cuda", {"alpha.fix": "confirmed"}),
            run("r2-cpu", "cpu", {"alpha.fix": "confirmed"}),
            run("r1-cpu", "cpu", {"alpha.fix": "confirmed"})]
    fix, cost = report.compare(runs, [{"id": "alpha.fix"}, {"id": "alpha.cost"}])
    assert [(c.change, c.was) for c in fix] == [("changed", "confirmed"), ("", ""), ("", ""), ("", "")]
    assert [c.change for c in cost] == ["new", "", "", ""] and cost[1].claim is None
    assert [r.name for r in report.newest_per_device(runs)] == ["r3-cuda", "r4-cpu"]


def test_find_runs_leaves_local_runs_out_of_the_committed_index(tmp_path):
    write_run(tmp_path, "20260101T000000Z-a-cpu", "cpu", {"beta": []})
    write_run(tmp_path / "runs", "20260105T000000Z-local-cpu", "cpu", {"beta": []})
    write_run(tmp_path / "runs", "interactive", "cpu", {"beta": []})
    assert [p.name for p in report.find_runs(tmp_path)] == ["20260101T000000Z-a-cpu"]
    assert [p.name for p in report.find_runs(tmp_path / "runs")] == ["20260105T000000Z-local-cpu", "interactive"]


def test_the_index_links_a_matrix_and_leaves_its_cells_out_of_the_runs(tmp_path, book):
    write_run(tmp_path, "20260101T000000Z-a-cpu", "cpu", {"beta": []})
    cells = tmp_path / "matrix-20260102T000000Z-a-cpu"
    write_run(cells / "cells" / "torch2.14" / "beta", "20260102T000000Z-a-cpu", "cpu", {"beta": []})
    (cells / "matrix.json").write_text(json.dumps({"stacks": [{"id": "torch2.14"}, {"id": "torch2.15"}],
                                                  "claims": {"beta.one": {}}, "changes": {"beta.one": {"x": 1}}}))
    assert [p.name for p in report.find_runs(tmp_path)] == ["20260101T000000Z-a-cpu"]
    page = report.index_page(tmp_path)
    assert 'href="matrix-20260102T000000Z-a-cpu/matrix.html"' in page and "beta.one" in _section(page, "matrices")


# ---------------------------------------------------------------- pages

def _section(page: str, element_id: str) -> str:
    start = page.index(f'id="{element_id}"')
    return page[start:page.index("</section>", start)]


def test_run_page_opens_with_answers_linked_to_claim_rows(tmp_path, book):
    run_dir = write_run(tmp_path, "r1", "cuda", {"alpha": [
        _claim("alpha.bites_a", "confirmed", "5 of 5 loads crash (SIGSEGV). Frames follow.", crashes=5),
        _claim("alpha.fix", "refuted", "the patch still crashes 5 of 5. More."),
    ]}, meta={"state": "interrupted", "wall_seconds": 321.4, "compile_cache": "warm",
              "notebooks": [{"name": "alpha", "state": "done", "ok": True, "seconds": 12.5, "error": ""},
                            {"name": "beta", "state": "pending", "ok": False, "seconds": 0, "error": ""}]},
        time_split={"compile": 8.0, "measure": 2.0, "other": 2.5, "wall": 12.5})
    page = report.render_run(run_dir, notebooks=False).read_text()
    assert page.index('id="answers"') < page.index('id="coverage"') < page.index('id="verdicts"')
    answers = _section(page, "answers")
    assert "5 of 5 loads crash (SIGSEGV)." in answers and "Frames follow" not in answers
    assert "does not hold" in answers and "the patch still crashes 5 of 5." in answers
    links = set(re.findall(r'href="#claim-([\w.]+)"', answers))
    assert links == {"alpha.bites_a", "alpha.bites_b", "alpha.fix", "alpha.cost"}
    rows = set(re.findall(r'<tr id="claim-([\w.]+)"', page))
    assert rows == {"alpha.bites_a", "alpha.fix"}  # judged ones have rows; the others are listed as not reached
    assert "&#34;crashes&#34;: 5" in page or '"crashes": 5' in page  # the data, one click away
    assert "<details class=\"evidence\">" in page
    assert 'class="state interrupted"' in page and "compile cache: warm" in page and "321 s" in page
    assert "kit <code>abc1234</code>" in page
    assert re.search(r'class="seg compile" style="width: 64.0%"', page)  # 8 of 12.5 s
    cov = _section(page, "coverage")
    assert re.search(r'class="judged">2</strong> of 5', cov) and "needs an Android phone" in cov
    assert "investigation not run" in cov


def test_run_page_says_which_notebooks_took_steps_from_earlier_calls(tmp_path, book):
    run_dir = write_run(tmp_path, "r1", "cuda", {"alpha": [_claim("alpha.fix", "confirmed")],
                                                  "beta": [_claim("beta.only", "confirmed")]},
                        meta={"state": "complete", "notebooks": [
                            {"name": "alpha", "state": "done", "seconds": 300.0, "reused_steps": 12,
                             "reused_step_seconds": 480.4},
                            {"name": "beta", "state": "done", "seconds": 20.0}]})
    page = _section(report.render_run(run_dir, notebooks=False).read_text(), "notebooks-section")
    assert page.count("from earlier calls of this run") == 1 and "+ 12 steps (480 s)" in page


def test_old_run_without_run_json_or_time_split_renders(tmp_path, book):
    run_dir = write_run(tmp_path, "old", "cpu", {"beta": [_claim("beta.only", "confirmed")]})
    page = report.render_run(run_dir, notebooks=False).read_text()
    assert "state not recorded" in page and "compile cache: not recorded" in page
    assert "not recorded</span> (12 s of notebooks)" in page  # wall time: only the notebooks' seconds
    assert 'class="verdict confirmed"' in page


def test_crash_rows_show_frames_and_link_the_trace_in_the_run_folder(tmp_path, book):
    run_dir = tmp_path / "r1"
    rows = [{"step": "load", "status": "crash", "signal": "SIGSEGV", "cause": "static_libstdcxx_locale",
             "frames": "#0 std::locale::locale() | #1 parse_device_str | #2 AOTIModelContainerRunner",
             "trace_file": str(run_dir / "load.abc.crash.txt")},
            {"step": "elsewhere", "status": "timeout", "frames": "", "trace_file": "/somewhere/else/x.timeout.txt"}]
    write_run(tmp_path, "r1", "cuda", {"alpha": [_claim("alpha.fix", "refuted")]}, tables={"steps": rows})
    (run_dir / "load.abc.crash.txt").write_text("native backtrace")
    page = report.render_run(run_dir, notebooks=False).read_text()
    assert "<a class='trace' href='load.abc.crash.txt'>" in page
    assert "x.timeout.txt (not in the run folder)" in page
    assert "(3 frames)" in page and "<li><code>#2 AOTIModelContainerRunner</code></li>" in page
    assert "<span class='step crash'>crash</span>" in page


def test_index_answers_from_newest_run_per_device_and_comparison(tmp_path, book):
    write_run(tmp_path, "20260101T000000Z-a-cpu", "cpu", {"alpha": [_claim("alpha.fix", "confirmed")]},
              meta={"state": "complete", "compile_cache": "cold", "wall_seconds": 50})
    write_run(tmp_path, "20260103T000000Z-c-cpu", "cpu", {"alpha": [_claim("alpha.fix", "refuted", "still 9 ms. x")]})
    write_run(tmp_path, "20260102T000000Z-b-cuda", "cuda", {"alpha": [_claim("alpha.fix", "partly", "1.7x of 3x. y")]})
    page = report.render_index(tmp_path).read_text()
    answers = _section(page, "answers")
    assert "still 9 ms." in answers and "1.7x of 3x." in answers  # newest cpu and the cuda run
    assert "20260101T000000Z-a-cpu" not in answers
    assert answers.index('data-device="cuda"') < answers.index('data-device="cpu"')
    assert set(re.findall(r'href="#claim-([\w.]+)"', answers)) >= {"alpha.fix", "alpha.bites_a"}
    assert 'id="claim-alpha.fix"' in page and 'id="claim-seed.vibes"' in page  # untestable listed too
    comparison = _section(page, "comparison")
    assert comparison.count("changed, was confirmed") == 1  # c-cpu vs a-cpu; cuda has no earlier cuda run
    assert "compile cache: cold" in page and "no measure" in page
    assert page.count("<summary>environment</summary>") == 3 and page.count("details class=\"environment\"") == 3


def test_pages_never_reference_the_network(tmp_path, book):
    write_run(tmp_path, "r1", "cpu", {"alpha": [_claim("alpha.fix", "confirmed")]})
    pages = [report.render_run(tmp_path / "r1", notebooks=False), report.render_index(tmp_path)]
    for page in pages:
        assert not re.search(r"""(src|href)=["']https?://""", page.read_text()), page


def test_offline_strips_external_scripts_and_stylesheets():
    page = ('<head><script src="https://cdn.example/require.js"></script><script>var x = 1;</script>'
            '<link rel="stylesheet" href="http://cdn.example/a.css"><link rel="icon" href="data:,"></head>')
    assert report.offline(page) == '<head><script>var x = 1;</script><link rel="icon" href="data:,"></head>'


def test_notebook_pages_ask_no_cdn(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Title\nmath $x^2$"),
        nbformat.v4.new_code_cell("kit_marker", outputs=[nbformat.v4.new_output(
            "display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"})]),
    ], metadata={"widgets": {"application/vnd.jupyter.widget-state+json": {"state": {}}}})
    nbformat.write(nb, tmp_path / "tiny.ipynb")
    full, nocode = report.render_notebook(tmp_path / "tiny.ipynb")
    for page in (full.read_text(), nocode.read_text()):
        assert not re.search(r"""<(script|link)[^>]+(src|href)=["']https?://""", page)
        assert "cdnjs" not in page and "unpkg.com" not in page
        assert 'src="data:image/png;base64,iVBORw0KGgo="' in page
    assert "kit_marker" in full.read_text() and "kit_marker" not in nocode.read_text()


def test_committed_runs_render_with_the_real_ledger(tmp_path):
    """The old-format runs under reports/ still render, with an answer block for every investigation they ran."""
    runs = report.find_runs(REPO / "reports")
    if not runs:
        pytest.skip("no committed run under reports/")
    for run_dir in runs:
        shutil.copytree(run_dir, tmp_path / run_dir.name, ignore=shutil.ignore_patterns("*.ipynb", "*.html"))
    for run_dir in report.find_runs(tmp_path):
        page = report.render_run(run_dir, notebooks=False).read_text()
        ran = {json.loads(p.read_text())["investigation"] for p in run_dir.glob("*.results.json")}
        assert set(re.findall(r'<div class="block"[^>]* data-investigation="(\w+)"', page)) == ran
    index = report.render_index(tmp_path).read_text()
    grid = set(re.findall(r'<div class="answer-group"[^>]* data-investigation="(\w+)"', index))
    assert grid >= set(report.ledger()) - {report.UNTESTABLE_LEDGER}


def test_conditions_and_basis_show_on_the_run_page(tmp_path, book):
    cond_differ = {"seed": {"device": "cuda", "gpu": "A100", "torch": {"min": "1.11", "max": "2.0.1"}},
                   "run": {"device": "cuda", "gpu": "H100", "torch": "2.11.0"}, "differ": ["gpu", "torch"],
                   "irrelevant": {"gpu": "the ratio is the same on both GPUs in this run"}}
    cond_same = {"seed": {"device": "cuda"}, "run": {"device": "cuda"}, "differ": []}
    run_dir = write_run(tmp_path, "r1", "cuda", {"alpha": [
        {**_claim("alpha.bites_a", "inconclusive"), "basis": "measured", "conditions": cond_differ},
        {**_claim("alpha.fix", "confirmed"), "basis": "measured", "conditions": cond_same},
        {**_claim("alpha.cost", "refuted"), "basis": "derived"}]})
    page = report.render_run(run_dir, notebooks=False).read_text()
    row = page[page.index('id="claim-alpha.bites_a"'):page.index('id="claim-alpha.fix"')]
    assert '<details class="conditions differ" open>' in row
    assert "2 of 3 conditions differ from the seed's:</b> gpu (A100 → H100); torch (1.11–2.0.1 → 2.11.0)" in row
    assert "does not decide: the ratio is the same on both GPUs in this run" in row
    assert row.index('<td title="gpu">gpu</td>') < row.index('<td title="device">device</td>')  # differing ones first
    fix = page[page.index('id="claim-alpha.fix"'):page.index('id="claim-alpha.cost"')]
    assert '<details class="conditions">' in fix and "conditions: 1 as the seed's" in fix
    cost = page[page.index('id="claim-alpha.cost"'):]
    assert "basis basis-derived" in cost and "not a measurement" in cost
    answers = _section(page, "answers")
    assert answers.count("basis-derived") == 1  # the cost answer rests on a derived verdict


def test_single_file_holds_every_page_and_asks_no_network(tmp_path, book):
    from yolo26kit import cli

    rows = [{"step": "load", "status": "crash", "trace_file": "load.abc.crash.txt"}]
    run_dir = write_run(tmp_path, "20260101T000000Z-a-cuda", "cuda", {"alpha": [
        _claim("alpha.bites_a", "confirmed", "5 of 5 loads crash. More.")]}, tables={"steps": rows},
        meta={"state": "complete", "notebooks": [{"name": "alpha", "state": "done"}]})
    (run_dir / "load.abc.crash.txt").write_text("native backtrace")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Alpha notebook"),
                                         nbformat.v4.new_code_cell("x", outputs=[nbformat.v4.new_output(
                                             "display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}),
                                             nbformat.v4.new_output("stream", name="stderr", text="[step] x: done\n")])])
    nbformat.write(nb, run_dir / "alpha.ipynb")
    write_run(tmp_path, "20260102T000000Z-b-cpu", "cpu", {"beta": [_claim("beta.only", "refuted")]})
    out = tmp_path / "send.html"
    assert cli.main(["report", str(tmp_path), "--single-file", "--all", "-o", str(out)]) == 0
    page = out.read_text()
    assert not re.search(r"""(src|href)=["']https?://""", page)
    pages = json.loads(re.search(r"<script type='application/json' id='kit-pages'>(.*?)</script>", page).group(1))
    assert set(pages) == {"index", "20260101T000000Z-a-cuda", "20260101T000000Z-a-cuda/alpha",
                          "20260102T000000Z-b-cpu"}
    assert page.count('<script type="text/html" id="kit-src-') == 4
    assert 'href="#page=20260101T000000Z-a-cuda" target="_top"' in page  # index → run page
    assert "href=\"#page=20260101T000000Z-a-cuda/alpha\" target=\"_top\"" in page  # run page → notebook page
    assert "href=\"#page=index&amp;at=claim-alpha.bites_a\"" in page  # index → its own claim rows
    assert "data:text/plain;base64," in page and "download='load.abc.crash.txt'" in page  # the trace travels
    assert "data:application/json;base64," in page
    assert 'data-left-out="20260101T000000Z-a-cuda/alpha.ipynb"' in page  # not carried, says so
    assert "Alpha notebook" in page and 'src="data:image/png;base64,iVBORw0KGgo="' in page
    for src in re.findall(r'<script type="text/html" id="kit-src-\d+">(.*?)</script>', page, re.S):
        assert "</script" not in src.lower() and "<!--" not in src  # nothing ends the carrier early
    assert not (tmp_path / "index.html").exists()  # the pages on disk are left as they were


def test_the_index_says_a_span_of_runs_on_one_day_once():
    """Runs of one day read '6 Dec 2026, 11:45–11:50 UTC' (the index's first lines stay short enough to keep the grid on
    the first screen); runs on two days, or dates the page could not read, keep both in full."""
    from yolo26kit.report.answers import date_span

    assert date_span("6 Dec 2026, 11:45 UTC", "6 Dec 2026, 11:50 UTC") == "6 Dec 2026, 11:45–11:50 UTC"
    assert date_span("6 Dec 2026, 23:50 UTC", "7 Dec 2026, 00:10 UTC") == "6 Dec 2026, 23:50 UTC to 7 Dec 2026, 00:10 UTC"
    assert date_span("6 Dec 2026, 11:45 UTC", "6 Dec 2026, 11:45 UTC") == "6 Dec 2026, 11:45 UTC"
    assert date_span("", "6 Dec 2026, 11:45 UTC") == " to 6 Dec 2026, 11:45 UTC"
