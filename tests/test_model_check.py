"""model_check: specs, the detectors on a model with every hazard pattern (each at its line) and on one with none,
YOLO26's hazards at their lines in ultralytics' source, models of other families, and the notebook end to end."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import torch

from yolo26kit import cli
from yolo26kit.investigations.model_check import hazards, known, measure, measure_dynamic, model
from yolo26kit.investigations.model_check.judge import JUDGES, hazard_rows
from yolo26kit.repro.catalog import findings as catalog
from yolo26kit import findings

TESTS = Path(__file__).resolve().parent
MODELS = TESTS / "model_check_models.py"
HAZARD_MODEL, CLEAN_MODEL = "model_check_models:hazards", "model_check_models:clean"
SIZES = [64, 96, 128]


@pytest.fixture(autouse=True)
def tests_on_path(monkeypatch):
    """`model_check_models` importable here and in every child the steps start (they inherit PYTHONPATH)."""
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH", "")) if p))


def marked_lines() -> dict[str, int]:
    """Hazard id → the line of tests/model_check_models.py marked `# hazard: <id>`."""
    return {m.group(1): n for n, line in enumerate(MODELS.read_text().splitlines(), 1)
            if (m := re.search(r"# hazard: (\w+)", line))}


def all_hits(spec: str, imgsz: int = 64) -> list[dict]:
    """Every hit of the scan step and of the dynamic export step, both run in this process."""
    return hazards.step_scan(spec, imgsz, 1, 0)["hits"] + measure_dynamic.step_dynamic(spec, SIZES, 2, 0)["hits"]


# --- specs --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("spec", "words"), [
    ("resnet18", "expected ultralytics:<yaml>"), ("torchvision:resnet_19", "close: resnet18"),
    ("ultralytics:yolo11n.pt", "name a model yaml"), ("ultralytics:yolo99z.yaml", "ships no model yaml"),
    ("no_such_module_here:make", "no module"), ("model_check_models:absent", "no callable"),
])
def test_a_bad_spec_says_why_in_one_line(spec, words):
    problem = model.check_spec(spec)
    assert problem and words in problem and "\n" not in problem


@pytest.mark.parametrize("spec", ["ultralytics:yolo11n.yaml", "ultralytics:yolov8n-seg.yaml",
                                  "ultralytics:rtdetr-l.yaml", "torchvision:mobilenet_v3_small", HAZARD_MODEL])
def test_a_good_spec_passes_the_check(spec):
    assert model.check_spec(spec) is None


def test_a_bad_spec_on_the_command_line_is_exit_2_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "runs"
    assert cli.main(["run", "model_check", "-p", "model=torchvision:nope", "--out", str(out), "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "torchvision has no model 'nope'" in err and not out.exists()


def test_specs_build_with_seeded_weights_and_their_inputs():
    net, (x,) = model.build("torchvision:resnet18", 64, 2, seed=3)
    again, _ = model.build("torchvision:resnet18", 64, 2, seed=3)
    with torch.no_grad():
        y = net(x)
        assert y.shape == (2, 1000) and torch.equal(y, again(x)) and y.abs().max() > 1e-2  # no vanished activations
    yolo, (image,) = model.build("ultralytics:yolo11n.yaml", 64, 1)
    assert image.shape == (1, 3, 64, 64) and not yolo.training
    factory, (z,) = model.build(HAZARD_MODEL, 96, 3)
    assert z.shape == (3, 4, 96, 96)


def test_compare_holds_outputs_to_eager_and_detections_order_insensitively():
    ref = torch.linspace(-2, 2, 12).reshape(3, 4)
    assert model.compare([ref + 1e-6], [ref])["correct"]
    assert not model.compare([ref + 0.1], [ref])["correct"]
    assert not model.compare([ref], [ref, ref])["correct"]
    dets = torch.cat([torch.rand(1, 5, 4) * 64, torch.linspace(0.9, 0.5, 5).reshape(1, 5, 1),
                      torch.arange(5.0).reshape(1, 5, 1)], -1)
    swapped = dets[:, [1, 0, 2, 3, 4]]
    delta = model.compare([swapped], [dets])
    assert delta["correct"] and delta["matched"] == 1.0 and delta["max_abs"] > 0


# --- the detectors ------------------------------------------------------------------------------------------------

def test_every_detector_flags_its_pattern_at_its_line():
    lines = marked_lines()
    assert set(lines) == set(hazards.HAZARDS)
    found = {(h["hazard"], h["line"]) for h in all_hits(HAZARD_MODEL) if h["file"].endswith("model_check_models.py")}
    assert {(hazard, line) for hazard, line in lines.items()} <= found, sorted(found)


def test_a_guard_that_pins_the_batch_without_an_export_error_is_found_at_its_line():
    line = next(n for n, text in enumerate(MODELS.read_text().splitlines(), 1) if "# pins: batch" in text)
    found = measure_dynamic.step_dynamic("model_check_models:pinned_batch", [64, 96], 2, 0)
    assert found["attempts"][0]["status"] == "ok"  # torch.export raises nothing ...
    refused = [s for s in found["sweep"] if s["in_range"] and s["program"] == "refused"]
    assert refused and all(s["eager"] == "ok" for s in refused)  # ... but the program refuses what eager runs
    assert ("pinned_dim", line) in {(h["hazard"], h["line"]) for h in found["hits"]}


def test_a_model_without_the_patterns_is_flagged_for_nothing():
    assert all_hits(CLEAN_MODEL) == []


def test_yolo26_hazards_are_found_at_their_lines_in_ultralytics():
    hits = all_hits("ultralytics:yolo26n.yaml", imgsz=128)
    where = {(h["hazard"], h["file"]) for h in hits}
    assert ("floor_div_index", "ultralytics/nn/modules/head.py") in where  # index // nc in the top-k (index_dtype)
    assert ("split_view_copy", "ultralytics/nn/modules/block.py") in where  # chunk / split (index_dtype, view_copy)
    assert ("pinned_dim", "ultralytics/nn/modules/conv.py") in where  # Concat's stride guards (dynamic_shapes)
    assert ("sym_min_size", "ultralytics/nn/modules/head.py") in where  # min(max_det, anchors) (dynamic_shapes)
    assert ("shape_cache_state", "ultralytics/nn/modules/head.py") in where  # the anchor cache (dynamic_shapes)
    topk = next(h for h in hits if h["hazard"] == "floor_div_index")
    assert "index // nc" in topk["code"] and topk["function"] == "get_topk_index"


@pytest.mark.parametrize(("spec", "imgsz", "expected"), [
    ("ultralytics:yolo11n.yaml", 64, {"split_view_copy", "pinned_dim", "shape_cache_state"}),
    ("torchvision:resnet18", 64, set()),
])
def test_models_of_other_families(spec, imgsz, expected):
    found = {h["hazard"] for h in all_hits(spec, imgsz)}
    assert expected <= found if expected else found == set()


@pytest.mark.parametrize(("spec", "hazard"), [("torchvision:resnet18", "refuted"),
                                               ("ultralytics:yolo11n.yaml", "confirmed")])
def test_paths_of_models_of_other_families_run_and_match_eager(spec, hazard):
    run = measure.investigate(spec, "cpu", ["eager", "onnxruntime", "compile_cudagraphs"], imgsz=64,
                              dynamic_sizes=[64, 96], min_run_time=0.02, edge_check=False)
    rows = {r.case.tag: r for r in run.rows}
    assert rows["onnxruntime-cpu"].correct and rows["compile_cudagraphs-cpu"].final.status == "skipped"
    assert {cid: JUDGES[cid](run).verdict for cid in JUDGES} == {
        "model_check.known_hazard": hazard, "model_check.paths_run": "confirmed",
        "model_check.paths_match_eager": "confirmed", "model_check.dynamic_sizes": "confirmed"}


# --- what the kit knows about each hazard ---------------------------------------------------------------------------

def test_the_known_table_covers_every_detector_with_the_kits_evidence():
    assert set(known.KNOWN) == set(hazards.HAZARDS)
    ids = {f.id for f in catalog.all()}
    for hazard, entry in known.KNOWN.items():
        assert entry.claims and all(findings.ledger_entry(c) for c in entry.claims), hazard
        assert not entry.finding or entry.finding in ids, hazard
        assert known.releases(entry) and known.workaround(entry), hazard


def test_a_hazards_state_follows_the_stack_and_this_runs_rows():
    split = known.KNOWN["split_view_copy"]
    assert known.state(split, {"executorch": "1.5.1"}, {}) == "fixed in the installed executorch 1.5.1"
    assert known.state(split, {"executorch": "1.2.0"}, {}).startswith("cannot tell here")
    refused = {"executorch_cuda": {"status": "error",
                                   "error": "missing fallback kernels (1 total):\n - aten::split_copy.Tensor"}}
    assert known.state(split, {"executorch": "1.2.0"}, refused).startswith("bites here")
    # the catalog's words with the first fixed release the finding's committed checks measured (one source)
    assert known.workaround(split) == "executorch 1.5.0 or newer (its view pass maps split_copy.Tensor)."
    assert "torch 1.11–2.0.1" in known.releases(known.KNOWN["mask_index_put"])  # the ledger's conditions


def test_a_model_that_does_not_export_says_where_in_its_answer():
    from judge_cases.model_check import run, step

    failed = run(scan_outcome=step("hazard scan", {"export": "error", "error": "GuardOnDataDependentSymNode: u0",
                                                   "site": {"file": "m.py", "line": 9}, "hits": []}))
    answers = dict(zip(*show_answers(failed)))
    assert answers["Known hazards in this model"].startswith("torch.export of the model failed at m.py:9")
    assert JUDGES["model_check.known_hazard"](failed).verdict == "inconclusive"


def show_answers(run):
    from yolo26kit.investigations.model_check.show import answers_frame

    frame = answers_frame(run)
    return list(frame["question"]), list(frame["answer"])


def test_hazard_rows_name_the_line_and_what_to_do():
    from judge_cases.model_check import HIT, run, scan  # the synthetic runs of the judge cases

    (row,) = hazard_rows(run(scan_outcome=scan([HIT])))
    assert row["where"] == "m.py:3" and row["here"] and row["what to do"] and "pytorch/pull/186242" in \
        " ".join(known.links(known.KNOWN["floor_div_index"]))


# --- the notebook -------------------------------------------------------------------------------------------------

@pytest.mark.notebook
def test_notebook_end_to_end(run_notebook):
    results = run_notebook("model_check", model=HAZARD_MODEL, device="cpu", paths=["eager", "onnxruntime", "aoti"],
                           min_run_time=0.02)
    verdicts = {c["id"]: c["verdict"] for c in results["claims"]}
    said = {c["id"]: c["evidence"][:400] for c in results["claims"]}
    assert set(verdicts) == set(JUDGES) and verdicts["model_check.known_hazard"] == "confirmed", said
    assert verdicts["model_check.dynamic_sizes"] == "confirmed"  # the kit's recipe after the plain export's guard
    where = {(h["hazard"], h["where"]) for h in results["tables"]["hazards"]}
    assert ("pinned_dim", f"tests/model_check_models.py:{marked_lines()['pinned_dim']}") in where or \
        any(h == "pinned_dim" and w.endswith(f"model_check_models.py:{marked_lines()['pinned_dim']}") for h, w in where)
    assert [r["question"] for r in results["tables"]["answers"]][0] == "Which paths work here?"
