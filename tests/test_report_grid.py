"""The answer grid: stacks from runs (superseded kits left out), the deciding claims' own figures, what would decide
it, and how far a stack's batches agree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from yolo26kit import findings
from yolo26kit.report import figures, grid, pages

BOOK = {
    "alpha": [
        {"id": "alpha.bites", "source": "s1.txt", "claim": "loading crashes", "question": "bites"},
        {"id": "alpha.fix", "source": "s1.txt", "claim": "the preload fixes it", "question": "fix"},
        {"id": "alpha.cost", "source": "s1.txt", "claim": "2-5x faster", "question": "cost",
         "band": {"lo": 2.0, "hi": 5.0, "unit": "× (default / fixed)", "words": "2-5x"}},
    ],
}


def _claim(cid: str, verdict: str, evidence: str, data: dict[str, Any] | None = None,
           conditions: dict[str, Any] | None = None, basis: str = "measured",
           figure: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"id": cid, "source": "s1.txt", "claim": cid, "verdict": verdict, "evidence": evidence,
            "data": data or {}, "conditions": conditions or {}, "basis": basis, "figure": figure}


def _run(root: Path, name: str, device_type: str, claims: list[dict[str, Any]], kit: str = "0.1.0+gnew",
         torch: str = "2.11.0", found: list[dict[str, Any]] | None = None) -> Path:
    run_dir = root / name
    run_dir.mkdir(parents=True)
    env = {"device_type": device_type, "device": "H100" if device_type == "cuda" else "Xeon", "torch": torch,
           "executorch": "1.2.0", "ultralytics": "8.4.190", "kit": kit}
    (run_dir / "alpha.results.json").write_text(json.dumps({
        "schema": findings.SCHEMA, "investigation": "alpha", "run_id": name, "seconds": 1.0, "environment": env,
        "parameters": {}, "claims": claims, "missing_claims": [], "tables": {}, "findings": found or []}))
    (run_dir / "run.json").write_text(json.dumps({"run_id": name, "environment": env, "state": "complete",
                                                  "profile": "quick"}))
    return run_dir


@pytest.fixture
def runs(tmp_path, monkeypatch) -> list[pages.Run]:
    """An old-kit cuda run, a current cuda run with rounds straddling the band, a current cpu run."""
    monkeypatch.setattr(pages, "ledger", lambda: BOOK)
    _run(tmp_path, "20260101T000000Z-a-cuda", "cuda", [_claim("alpha.bites", "refuted", "0 of 3 loads crash.")],
         kit="0.1.0+gold")
    _run(tmp_path, "20260102T000000Z-b-cuda", "cuda", [
        _claim("alpha.bites", "confirmed", "3 of 3 loads crash with SIGSEGV on torch 2.11.0.",
               figure={"value": "3 of 3", "unit": "loads crash", "measures": "loads of the package"}),
        _claim("alpha.fix", "confirmed", "with the preload 3 of 3 loads run in 5 s."),
        _claim("alpha.cost", "inconclusive", "ratios round by round: 1.9, 2.4, 2.1×.",
               {"ratios": {"a": [1.9, 2.4], "b": [2.1, 1.95, 2.6]}})],
         found=[{"id": "alpha.load_crash", "title": "Loading crashes on torch 2.11", "evidence": "3 of 3 SIGSEGV",
                 "smallest_input": "a two-op package", "claims": ["alpha.bites"],
                 "stack": {"device_type": "cuda", "torch": "2.11.0"}}])
    _run(tmp_path, "20260103T000000Z-c-cpu", "cpu", [
        _claim("alpha.bites", "inconclusive", "1 of 1 packages loaded and ran.",
               figure={"value": "1 of 1", "unit": "packages loaded", "measures": "loads"}, conditions={"seed": {"torch": {"min": "2.11", "max": "2.11.99"}}, "run": {"torch": "2.14.1"},
                           "differ": ["torch"]}),
        _claim("alpha.fix", "needs_cuda", "no CUDA device in this run.", basis="none")], torch="2.14.1")
    return [pages.load_run(d, tmp_path) for d in pages.find_runs(tmp_path)]


def test_old_kits_are_superseded_and_stacks_name_their_versions(runs):
    assert grid.superseded(runs) == {"20260101T000000Z-a-cuda": "0.1.0+gnew"}
    columns = grid.stacks(runs)
    assert [(s.device_type, s.torch, s.run_ids) for s in columns] == [
        ("cuda", "2.11.0", ["20260102T000000Z-b-cuda"]), ("cpu", "2.14.1", ["20260103T000000Z-c-cpu"])]
    assert columns[0].profile == "quick"


def test_cells_carry_word_figure_link_and_what_would_decide(runs):
    columns = grid.stacks(runs)
    (row,) = grid.grid({"alpha": BOOK["alpha"]}, columns, lambda r: f"{r.rel}/index.html")
    cuda, cpu = row.cells
    bites, fix, cost = cuda
    assert (bites.word, bites.figure, bites.measures) == ("yes", "3 of 3 loads crash", "loads of the package")
    assert bites.href == "20260102T000000Z-b-cuda/index.html#claim-alpha.bites"
    assert fix.word == "holds" and not fix.decide
    assert fix.figure == ""  # its judge gave no figure: none is read out of "3 of 3 loads run in 5 s"
    # an undecided timing whose judge gave no figure shows none (no median is made from its rounds here) and says
    # what would decide it
    assert cost.word == "cannot tell" and cost.figure == ""
    assert cost.decide == "its rounds straddle the seed's band: more rounds decide"
    assert cpu[0].decide == "decided on torch 2.11–2.11.99 (the seed's)" and cpu[0].figure == "1 of 1 packages loaded"
    assert cpu[1].word == "needs CUDA" and cpu[1].decide == "a CUDA run decides it"


def test_no_cell_figure_is_read_out_of_evidence_text_or_made_from_data(runs):
    """Every figure the grid shows is the figure the judge of the claim it links returned: a claim whose evidence is
    full of numbers, or whose data holds rounds, but whose judge gave no figure shows none."""
    from yolo26kit.verdicts import Figure

    columns = grid.stacks(runs)
    (row,) = grid.grid({"alpha": BOOK["alpha"]}, columns, lambda r: "")
    for cells in row.cells:
        for cell in cells or []:
            run = next(r for r in runs if r.name == cell.run)
            for f in cell.figures:
                claim = run.verdicts[f.href.split("#claim-")[-1]]
                assert f.shown.text == Figure.from_dict(claim["figure"]).text


def test_a_mixed_cost_answer_shows_what_held_and_what_did_not(runs):
    """'partly as claimed' names both halves: the figure of the claim that held and of the one that did not, each
    linked to its own claim."""
    from yolo26kit.report import answers

    book = [{"id": "alpha.first", "claim": "x", "question": "cost"}, {"id": "alpha.speed", "claim": "y", "question": "cost"}]
    run = runs[1]
    run.verdicts.update({
        "alpha.first": {"id": "alpha.first", "verdict": "confirmed", "evidence": "",
                        "figure": {"value": 35.4, "unit": "s", "measures": "first call", "statistic": "single"}},
        "alpha.speed": {"id": "alpha.speed", "verdict": "refuted", "evidence": "",
                        "figure": {"value": 1.56, "unit": "×", "measures": "speed-up", "statistic": "median",
                                   "rounds": 5, "low": 1.5, "high": 1.57, "conditions": {"device": "cuda"}}}})
    (cost,) = [c for c in grid.cells(answers.block("alpha", book, run), book, "p.html") if c.question == "cost"]
    assert cost.word == "partly as claimed"
    assert [(f.shown.text, f.verdict_words, f.href) for f in cost.figures] == [
        ("35.4 s", "holds", "p.html#claim-alpha.first"), ("1.56×", "does not hold", "p.html#claim-alpha.speed")]
    assert cost.figures[1].shown.caption == "speed-up; median of 5 rounds, 1.5–1.57×; cuda"


def test_a_figure_measured_on_another_device_says_so(runs):
    run = runs[1]  # a CUDA run whose cost claim was measured on the CPU
    run.verdicts["alpha.cost"] = {**run.verdicts["alpha.cost"], "verdict": "confirmed",
                                  "figure": {"value": 0.55, "unit": "×", "measures": "XNNPACK over eager"},
                                  "conditions": {"run": {"device": "cpu"}}}
    cell = next(c for c in grid.cells(pages.block("alpha", BOOK["alpha"], run), BOOK["alpha"], "")
                if c.question == "cost")
    assert (cell.figure, cell.figures[0].shown.elsewhere) == ("0.55×", "on CPU")


def test_batches_of_a_stack_say_whether_they_agree_and_a_moving_figure_shows_its_span(tmp_path, monkeypatch):
    monkeypatch.setattr(pages, "ledger", lambda: BOOK)
    for name, value, verdict in (("20260102T000000Z-a-cuda", 1.5, "refuted"), ("20260103T000000Z-b-cuda", 1.6, "refuted"),
                                 ("20260104T000000Z-c-cuda", 1.55, "inconclusive")):
        _run(tmp_path, name, "cuda", [_claim("alpha.cost", verdict, "", figure={"value": value, "unit": "×",
                                                                              "measures": "speed-up"})])
    runs = [pages.load_run(d, tmp_path) for d in pages.find_runs(tmp_path)]
    (stack,) = grid.stacks(runs)
    assert stack.agreement.sentence == ("3 batches of kit 0.1.0+gnew on H100 agree on 0 of their 1 verdicts; they "
                                        "differ on 1.")
    assert stack.agreement.differ == {"alpha.cost": {"inconclusive": 1, "refuted": 2}}
    (row,) = grid.grid({"alpha": BOOK["alpha"]}, [stack], lambda r: "")
    cost = row.cells[0][2]
    assert cost.figures[0].shown.spread == "1.5× to 1.6× over 3 batches"
    index = pages.index_page(tmp_path)
    assert "3 batches of kit 0.1.0+gnew on H100 agree on 0 of their 1 verdicts" in index


def test_matrix_changes_are_named_by_package_and_release_and_kind():
    from yolo26kit.report import matrix_page

    stack = {"torch": "2.14.1", "executorch": "1.5.1", "ultralytics": "8.4.190"}
    matrix = {"stacks": [{"id": "torch2.13", "pins": {**stack, "torch": "2.13.0"}}, {"id": "torch2.14", "pins": stack},
                         {"id": "ultralytics8.4.112", "pins": {**stack, "ultralytics": "8.4.112"}}],
              "changes": {"a.gather": {"torch": None, "ultralytics": {"stack": "torch2.14", "from": "not_reproduced",
                                                                       "to": "confirmed", "after": "ultralytics8.4.112"}},
                          "b.view": {"torch": {"stack": "torch2.14", "from": "inconclusive", "to": "partly",
                                               "after": "torch2.13"}, "ultralytics": None},
                          "c.same": {"torch": None, "ultralytics": None}}}
    rows = matrix_page.change_rows(matrix)
    assert [(r["claim"], r["package"], r["release"], r["before"], r["kind"]) for r in rows] == [
        ("a.gather", "ultralytics", "8.4.190", "8.4.112", "verdict"), ("b.view", "torch", "2.14.1", "2.13.0", "measurable")]
    # where a bisect named the same change, the page quotes its release (one source for "since which release")
    bisects = [{"claim": "a.gather", "package": "ultralytics", "href": "bisect-a/bisect.html",
                "changes": [{"from": "not_reproduced", "to": "confirmed", "last_before": "8.4.112", "first": "8.4.113"}]}]
    (gather, _) = matrix_page.change_rows(matrix, bisects)
    assert (gather["release"], gather["before"], gather["bisect"]) == ("8.4.113", "8.4.112", "bisect-a/bisect.html")


def test_single_files_default_to_each_stacks_newest_batch(runs, tmp_path):
    from yolo26kit.report import single_file

    made = single_file.single_files(tmp_path)
    assert [p.name for p in made] == ["20260102T000000Z-b-cuda.single.html", "20260103T000000Z-c-cpu.single.html"]
    (everything,) = single_file.single_files(tmp_path, every_run=True, out=tmp_path / "all.html")
    text = everything.read_text()
    assert 'data-page="20260102T000000Z-b-cuda"' in text
    assert 'data-page="20260101T000000Z-a-cuda"' not in text  # superseded: listed on the index, not carried
    assert 'data-left-out="20260101T000000Z-a-cuda/index.html"' in text


def test_run_page_opens_with_its_grid_and_undecided_answers_say_what_decides_them(runs):
    page = pages.run_page(runs[1].dir)  # the current cuda run
    assert page.index('id="grid"') < page.index('id="answers"')
    assert "torch 2.11.0 · executorch 1.2.0 · ultralytics 8.4.190" in page
    answers = page.split('<section id="answers">')[1].split("</section>")[0]
    measured = answers.split('data-question="cost"')[1].split('<span class="measured">')[1].split("</span>\n")[0]
    assert "more rounds decide" in measured and "1.9" not in measured  # no number its judge did not return


def test_answers_never_say_mixed():
    from yolo26kit.report import answers

    said = [("a", {"verdict": "confirmed"}), ("b", {"verdict": "partly"}), ("c", {"verdict": "refuted"})]
    assert answers.aggregate("fix", said) == ("no", said[2])  # the weakest link: a path where the fix fails
    assert answers.aggregate("bites", said) == ("partly", said[1])
    assert answers.aggregate("cost", said[:1] + said[2:]) == ("partly", said[0])
    assert answers.aggregate("fix", said[:2]) == ("partly", said[1])
    assert answers.aggregate("bites", said[:1]) == ("yes", said[0])


def test_a_conclusion_is_headed_by_a_claims_figure_never_a_count_of_claims(runs):
    from yolo26kit import conclusion

    result = next(r for r in runs[1].results if r["investigation"] == "alpha")
    c = conclusion.conclude(result, BOOK["alpha"])  # no conclude.py: the generic counts, headed by a claim's figure
    assert c.figure == {"value": "3 of 3 loads crash", "label": "loads of the package", "claim": "alpha.bites"}


def test_the_profile_is_run_jsons_never_guessed_from_the_parameters():
    meta = {"profile": "quick", "overrides": {"imgsz": 640},
            "notebooks": [{"name": "index_dtype", "parameters": {"imgsz": 640}},
                          {"name": "aoti_load", "parameters": {}}]}
    assert grid.recorded_profile(meta) == "quick + imgsz"
    assert grid.recorded_profile(meta, "index_dtype") == "quick + imgsz"
    assert grid.recorded_profile(meta, "aoti_load") == "quick"  # -p imgsz did not reach it
    assert grid.recorded_profile({"profile": "full"}) == "full"
    # a run.json without the field says so: the parameters of a default quick run once read as "profile full"
    assert grid.recorded_profile({"notebooks": [{"name": "index_dtype", "parameters": {"imgsz": 640}}]}) == \
        "not recorded"


def test_findings_come_first_on_the_run_page_and_the_index(runs, tmp_path):
    page = pages.run_page(runs[1].dir)
    assert page.index('id="findings"') < page.index('id="grid"')
    assert "Loading crashes on torch 2.11" in page and "torch 2.11.0" in page
    index = pages.index_page(tmp_path)
    assert index.index('data-finding="alpha.load_crash"') < index.index('id="grid"')
    assert "20260102T000000Z-b-cuda/index.html" in index.split('id="findings"')[1].split("</section>")[0]


def test_a_newer_run_of_one_investigation_supersedes_nothing_else(tmp_path):
    """A one-investigation run of a newer kit answers for that investigation; an older run that also judged other
    investigations keeps answering for them instead of being folded away."""
    claim = [_claim("alpha.bites", "confirmed", "3 of 3 loads crash.")]
    older = _run(tmp_path, "20260101T000000Z-a-cpu", "cpu", claim, kit="0.1.0+gold")
    (older / "beta.results.json").write_text((older / "alpha.results.json").read_text().replace('"alpha"', '"beta"'))
    _run(tmp_path, "20260102T000000Z-b-cpu", "cpu", claim, kit="0.1.0+gnew")
    runs = [pages.load_run(d, tmp_path) for d in pages.find_runs(tmp_path)]
    assert grid.superseded(runs) == {}
    (tmp_path / "20260102T000000Z-b-cpu" / "beta.results.json").write_text(
        (tmp_path / "20260102T000000Z-b-cpu" / "alpha.results.json").read_text().replace('"alpha"', '"beta"'))
    runs = [pages.load_run(d, tmp_path) for d in pages.find_runs(tmp_path)]
    assert grid.superseded(runs) == {"20260101T000000Z-a-cpu": "0.1.0+gnew"}  # every investigation ran again


def test_a_partly_headline_is_coloured_partly_whatever_claim_decided_it(runs):
    from yolo26kit.report import answers

    book = [{"id": "alpha.c1", "claim": "x", "question": "cost"}, {"id": "alpha.c2", "claim": "y", "question": "cost"}]
    run = runs[1]
    run.verdicts.update({"alpha.c1": {"id": "alpha.c1", "verdict": "refuted", "evidence": ""},
                         "alpha.c2": {"id": "alpha.c2", "verdict": "confirmed", "evidence": ""}})
    (cost,) = [c for c in grid.cells(answers.block("alpha", book, run), book, "") if c.question == "cost"]
    assert (cost.word, cost.verdict) == ("partly as claimed", "partly")
