"""Conclusions: each investigation's own (its conclude.py), from verdicts and the figures judges returned, robust to
missing fields; headlines that cannot mislead: a headline's number is always its claim's own figure."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from yolo26kit import conclusion
from yolo26kit.report import pages as report

REPO = Path(__file__).resolve().parents[1]
INVESTIGATIONS = sorted(p.parent.name for p in (REPO / "yolo26kit" / "investigations").glob("*/conclude.py"))
RUNS = sorted((REPO / "reports").glob("*/*.results.json")) if (REPO / "reports").is_dir() else []


def _results(inv: str, device: str, claims: dict[str, str], evidence: dict[str, str] | None = None) -> dict[str, Any]:
    return {"investigation": inv, "environment": {"device_type": device, "torch": "2.11.0"},
            "claims": [{"id": cid, "verdict": v, "evidence": (evidence or {}).get(cid, ""), "data": {}}
                       for cid, v in claims.items()], "tables": {}}


def test_every_investigation_concludes_itself_and_marks_its_bug_claims_in_the_ledger():
    book = report.ledger()
    for inv, entries in book.items():
        if inv == report.UNTESTABLE_LEDGER:
            continue
        assert conclusion.concluder(inv) is not None, inv
        assert conclusion.bug_claims(entries), inv
        assert conclusion.device_need(inv) in ("cuda", "cpu", "any")


def test_an_investigations_conclusion_loads_without_torch():
    """The pages render where torch is missing: conclude.py is read without its package's measuring code."""
    code = ("import sys; sys.modules['torch'] = None\n"
            "from yolo26kit import conclusion\n"
            f"assert all(conclusion.concluder(n) for n in {INVESTIGATIONS!r})")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("path", RUNS, ids=[f"{p.parent.name[-8:]}/{p.name.split('.')[0]}" for p in RUNS])
def test_committed_results_conclude_in_two_to_four_sentences_headed_by_a_claims_figure(path):
    """Every headline number is the figure its claim's judge returned; where no decided claim of an older
    results.json has one, the conclusion has no headline number rather than one made from the data."""
    from yolo26kit.verdicts import Figure

    res = json.loads(path.read_text())
    c = conclusion.conclude(res, report.ledger().get(res["investigation"]))
    assert not c.generic
    assert 2 <= len(c.sentences) <= 4, c.sentences
    claims = {cl["id"]: cl for cl in res["claims"]}
    decided = [cl for cl in claims.values() if cl["verdict"] not in conclusion.UNDECIDED and cl.get("figure")]
    if c.figure:
        assert c.figure["value"] == Figure.from_dict(claims[c.figure["claim"]]["figure"]).text and c.figure["label"]
    else:
        assert not decided
    for s in c.sentences:
        assert s.endswith(".") and len(s) < 600 and "None" not in s, s


def test_a_sentence_needs_a_verdict():
    """No verdict, no sentence: a run that judged nothing writes nothing but the counts it has."""
    for inv in INVESTIGATIONS:
        by_q, figure = conclusion.concluder(inv)(conclusion.View(_results(inv, "cuda", {})))
        assert by_q == {} or all(not s for s in by_q.values()), (inv, by_q)
        assert figure is None or set(figure) <= {"claim", "label"}  # it names a claim; the value is never its own
        assert conclusion.conclude(_results(inv, "cuda", {})).figure is None  # no claim, no figure


def test_undecided_verdicts_are_said_plainly():
    c = conclusion.conclude(_results("cdmaskformer_mask", "cpu", {"mask.assert_trigger": "needs_cuda",
                                                                   "mask.equivalent": "inconclusive"}))
    text = " ".join(c.sentences)
    assert "needs CUDA — this run cannot tell" in text and "this run cannot decide" in text


def test_missing_fields_and_odd_shapes_never_raise():
    for inv in INVESTIGATIONS:
        for broken in ({"investigation": inv}, {"investigation": inv, "claims": None, "tables": None},
                       {"investigation": inv, "claims": [{"id": "x"}, "junk", {"verdict": "confirmed"}],
                        "environment": None, "tables": {"fastest": "junk"}}):
            c = conclusion.conclude(broken)
            assert isinstance(c.sentences, list)


def test_unknown_investigation_gets_the_generic_conclusion():
    c = conclusion.conclude(_results("brand_new", "cpu", {"n.a": "confirmed", "n.b": "inconclusive"}),
                             [{"id": "n.a", "question": "bites"}, {"id": "n.b", "question": "fix"}])
    assert c.generic and c.sentences == ["Does the problem bite here? Of 1 claim: 1 holds.",
                                         "Does the fix hold? Of 1 claim: 1 this run cannot decide."]
    assert c.figure is None  # a count of claims never heads a conclusion, and no claim has a figure
    assert c.sentence("bites") == ""  # generic counts never stand in for an answer's sentence


def test_device_class_comes_from_the_ledger_conditions_first():
    assert conclusion.device_class({"conditions": {"device": "cpu"}}, "cuda_graphs") == "cpu"
    assert conclusion.device_class({"conditions": {"device": ["cuda"]}}, "view_copy") == "cuda"
    assert conclusion.device_class({"conditions": {"device": ["cuda", "cpu"]}}, "cuda_graphs") == "any"
    assert conclusion.device_class({}, "cuda_graphs") == "cuda"  # its conclude.DEVICE
    assert conclusion.device_class(None, "somebody_new") == "any"


BOOK = [{"id": "mask.assert_trigger", "question": "bites"},
        {"id": "mask.data_independent", "question": "bites"},
        {"id": "mask.equivalent", "question": "fix"}]


def test_cpu_run_of_a_cuda_only_bug_says_it_cannot_tell():
    """A refuted side claim on a CPU run must not read as 'this bug does not bite you'."""
    verdicts = {"mask.assert_trigger": {"verdict": "needs_cuda", "evidence": "CPU, same 12 attempts: 10 ok."},
                "mask.data_independent": {"verdict": "refuted", "evidence": "the contents decide."}}
    a = report.answer("bites", BOOK, verdicts, "cpu", "cdmaskformer_mask")
    assert a.state == "undecided" and a.headline == "needs CUDA — this run cannot tell"
    assert a.claims == ["mask.assert_trigger", "mask.data_independent"]  # every claim still linked
    # the same verdicts with the ledger saying the bug shows on any device: the bug claim decides, not the side one
    book = [{**BOOK[0], "conditions": {"device": ["cpu", "cuda"]}}, *BOOK[1:]]
    a = report.answer("bites", book, verdicts, "cpu", "cdmaskformer_mask")
    assert a.headline == "needs CUDA" and a.deciding == "mask.assert_trigger"


def test_cuda_run_answers_bites_from_the_bug_claim_with_the_conclusion_sentence():
    res = _results("cdmaskformer_mask", "cuda", {"mask.assert_trigger": "not_reproduced",
                                                  "mask.data_independent": "refuted"},
                   {"mask.assert_trigger": "0 of 12 CUDA attempts assert on torch 2.11.0+cu130 (7 took the sort kernel)"})
    verdicts = {c["id"]: c for c in res["claims"]}
    a = report.answer("bites", BOOK, verdicts, "cuda", "cdmaskformer_mask", conclusion.conclude(res))
    assert a.headline == "no" and a.sentence.endswith("did not reproduce.")  # no figure from its judge: none said
    next(c for c in res["claims"] if c["id"] == "mask.assert_trigger")["data"] = {"fired": 0, "attempts": 12}
    a = report.answer("bites", BOOK, verdicts, "cuda", "cdmaskformer_mask", conclusion.conclude(res))
    assert a.sentence.endswith("did not reproduce.")  # nor one made from its data
    next(c for c in res["claims"] if c["id"] == "mask.assert_trigger")["figure"] = {
        "value": 0, "of": 12, "unit": "predicted attempts assert", "measures": "CUDA attempts", "statistic": "count"}
    a = report.answer("bites", BOOK, verdicts, "cuda", "cdmaskformer_mask", conclusion.conclude(res))
    assert a.headline == "no" and a.deciding == "mask.assert_trigger"
    assert a.sentence == ("The seed's INTERNAL ASSERT does not reproduce on torch 2.11.0: 0 of 12 predicted attempts "
                          "assert.")


def _run(root: Path, name: str, device: str, claims: list[dict[str, Any]], error: str = "") -> None:
    d = root / name
    d.mkdir(parents=True)
    data = {"investigation": "cdmaskformer_mask", "run_id": name, "claims": claims, "tables": {},
            "environment": {"device_type": device, "torch": "2.11.0"}, "schema": 1}
    if error:
        data["notebook_error"] = error
    (d / "cdmaskformer_mask.results.json").write_text(json.dumps(data))


def test_index_answers_from_the_newest_run_that_judged_each_investigation(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "ledger", lambda: {"cdmaskformer_mask": BOOK, "other_inv": [{"id": "o.x"}]})
    good = [{"id": "mask.assert_trigger", "verdict": "not_reproduced", "evidence": "0 of 12 CUDA attempts assert"}]
    _run(tmp_path, "20260101T000000Z-good-cuda", "cuda", good)
    _run(tmp_path, "20260102T000000Z-failed-cuda", "cuda", [], error="CellExecutionError: boom")
    _run(tmp_path, "20260103T000000Z-errors-cuda", "cuda", [{"id": "mask.assert_trigger", "verdict": "error"}])
    d = tmp_path / "20260104T000000Z-one-cuda"  # a newer run of another investigation only
    d.mkdir()
    (d / "other_inv.results.json").write_text(json.dumps({"investigation": "other_inv", "claims": [
        {"id": "o.x", "verdict": "confirmed"}], "environment": {"device_type": "cuda"}, "tables": {}}))
    runs = [report.load_run(p, tmp_path) for p in report.find_runs(tmp_path)]
    assert [r.name for r in report.answering_runs(runs, "cdmaskformer_mask")] == ["20260101T000000Z-good-cuda"]
    assert [r.name for r in report.answering_runs(runs, "other_inv")] == ["20260104T000000Z-one-cuda"]
    page = report.render_index(tmp_path).read_text()
    group = page[page.index('id="answers-cdmaskformer_mask"'):page.index('id="answers-other_inv"')]  # not the grid's row
    assert "20260101T000000Z-good-cuda" in group and "not in this run" not in group
    assert "kit-conclusion" in group


def test_numbers_come_from_the_claims_figures_not_their_data_nor_their_wording():
    from yolo26kit.verdicts import one_figure, rounds_figure

    res = _results("cuda_graphs", "cuda", {"cuda_graphs.speedup_2_5x": "confirmed",
                                           "cuda_graphs.first_inference_60s": "refuted"})
    res["claims"][0]["data"] = {"ratios": {"tensor": [2.5, 3.0, 2.0], "python": [4.0, True]}}
    res["claims"][1]["data"] = {"first_s": [0.3, 0.9]}
    c = conclusion.conclude(res)
    assert "2.5" not in c.by_question.get("cost", "") and c.figure is None  # rounds without a figure: no number
    res["claims"][0]["figure"] = rounds_figure([2.5, 3.0, 2.0, 4.0], "×", "forecast time, default / reduce-overhead",
                                               model="Toto", batch=1, device="cuda", mode="reduce-overhead",
                                               graph_replays=73, loose_kernel_launches=67, graph_breaks=30).to_dict()
    res["claims"][1]["figure"] = one_figure(0.3, "s", "first forecast", device="cuda").to_dict()
    c = conclusion.conclude(res)
    assert "2.5× (median of 4 rounds, 2–4×) (seed: 2–5×: holds)" in c.by_question["cost"]
    assert ("with CUDA graphs: 73 graph replays beside 67 loose kernel launches and 30 graph breaks per decode step"
            in c.by_question["cost"])  # never "full CUDA graphs" where the step launches kernels of its own
    assert "first forecast: 0.3 s (seed: ~60 s: does not hold)" in c.by_question["cost"]
    assert c.figure["value"] == "2.5×"  # the rounds rule's median (the lower middle round), as the judge gave it
    assert "median of 4 rounds, 2–4×; Toto, batch 1, cuda, reduce-overhead" in c.figure["label"]
    res = _results("deployment_paths", "cpu", {"deployment_paths.xnnpack_vs_eager": "confirmed",
                                               "deployment_paths.cuda_aoti_backbone_only": "confirmed"})
    res["claims"][0]["figure"] = rounds_figure([0.7, 0.55, 0.6], "×", "XNNPACK's time over eager's", batch=1,
                                               device="cpu").to_dict()
    res["claims"][1]["data"] = {"kind": "failed"}
    c = conclusion.conclude(res)
    assert "XNNPACK's time over eager's: 0.6× (median of 3 rounds, 0.55–0.7×)" in c.by_question["cost"]
    assert c.by_question["bites"].startswith("ExecuTorch's CUDA back-end with its default options fails to lower")
    res["claims"][1]["data"] = {"kind": "not_lowered"}  # a kind without a sentence falls back to the plain verdict
    assert conclusion.conclude(res).by_question["bites"] == "CUDA AOT Inductor runs only the backbone: holds."


def test_full_cuda_graphs_are_said_only_of_a_step_without_loose_launches():
    from yolo26kit.investigations.cuda_graphs.conclude import graphs_words

    assert graphs_words([1], [0], [0]) == "full CUDA graphs"
    assert graphs_words([73], [67], [30]) == ("CUDA graphs: 73 graph replays beside 67 loose kernel launches and 30 "
                                              "graph breaks per decode step")
    assert graphs_words([1, 1], [0, 2]) == "CUDA graphs: 1 graph replays beside 0–2 loose kernel launches per decode step"


def test_no_conclusion_reads_evidence_text():
    """Conclusions are written from what judges returned as data (verdicts, figures, data), never mined out of
    evidence prose: no conclude.py reads a claim's evidence, and View offers no way to."""
    import ast

    from yolo26kit.conclusion import INVESTIGATIONS, View

    assert not hasattr(View, "m") and not hasattr(View, "ev")
    for path in sorted(INVESTIGATIONS.glob("*/conclude.py")):
        tree = ast.parse(path.read_text())
        strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        assert "evidence" not in strings, path
        assert not any(isinstance(n, ast.Import) and any(a.name == "re" for a in n.names) for n in ast.walk(tree)), path


def test_no_figure_is_made_from_judgement_data_where_the_judge_gave_none():
    from yolo26kit.report import figures

    claim = {"id": "mask.assert_trigger", "investigation": "cdmaskformer_mask", "verdict": "not_reproduced",
             "evidence": "7 of 99 things", "data": {"fired": 0, "attempts": 24, "rounds": [1.0, 2.0]},
             "conditions": {"run": {"device": "cuda", "torch": "2.11.0"}}}
    assert figures.shown(claim, "cuda") is None
    claim["figure"] = {"value": 3, "of": 4, "unit": "loads", "measures": "packages loaded"}  # the judge's own
    shown = figures.shown(claim, "cuda")
    assert (shown.text, shown.caption) == ("3 of 4 loads", "packages loaded; cuda")  # its run's device completes it
