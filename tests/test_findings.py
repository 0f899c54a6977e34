"""findings: claims, verdict validation and the results.json round trip."""

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from yolo26kit import findings
from yolo26kit.run import scaffold
from yolo26kit.verdicts import Judgement


def is_ledger_source(source: str) -> bool:
    """A claim's source is what `yolo26kit new --source` writes: kit (the kit's own claims), a seed file of
    data/seeds.json, an issue URL, or a pasted report kept under data/sources/."""
    seeds = {s["file"] for s in json.loads((findings.DATA / "seeds.json").read_text())}
    return (source == "kit" or source in seeds or bool(scaffold.URL.match(source))
            or source.startswith("sources/") and (findings.DATA / source).is_file())


def test_every_claims_file_is_well_formed():
    claims = findings.seed_claims()
    assert claims, "data/claims holds no claims"
    ids = [item["id"] for path in (findings.DATA / "claims").glob("*.json") for item in json.loads(path.read_text())]
    assert len(ids) == len(set(ids)), "a claim id appears in two ledgers"
    for cid, c in claims.items():
        assert cid == c["id"] and c["claim"].strip()
        assert is_ledger_source(c["source"]), f"{cid}: source {c['source']!r}"
        assert c.get("question", "bites") in ("bites", "fix", "cost", "other")


def test_verdict_rejects_unknown_words_and_ids():
    found = findings.Findings("index_dtype", {"imgsz": 320})
    with pytest.raises(ValueError):
        found.verdict("index_dtype.fx_int64", "probably", "evidence")
    with pytest.raises(KeyError):
        found.verdict("index_dtype.nonexistent", "confirmed", "evidence")


def test_save_and_read_round_trip(tmp_path):
    found = findings.Findings("index_dtype", {"imgsz": 320, "paths": ["eager"]}, run_id="r1")
    found.verdict("index_dtype.fx_int64", "confirmed", "1 node, int64", nodes=[{"dtype": torch.int64}], value=np.float32(1.5))
    found.table("status", pd.DataFrame([{"variant": "legacy", "max |Δ|": float("nan")}]))
    path = found.save(tmp_path / "x.results.json")
    data = findings.read_results(path)
    assert data["schema"] == 1 and data["run_id"] == "r1" and data["investigation"] == "index_dtype"
    assert data["claims"][0]["verdict"] == "confirmed"
    assert data["claims"][0]["source"] == "000_60ebd1ee51d51957.txt"
    assert data["claims"][0]["data"]["value"] == 1.5
    assert data["tables"]["status"][0]["max |Δ|"] is None  # NaN is not valid JSON
    assert "index_dtype.gather_equivalent" in data["missing_claims"]
    assert {"python", "torch", "device_type", "device", "kit"} <= set(data["environment"])


def test_failed_results_give_every_claim_an_error():
    data = findings.failed_results("index_dtype", "r", {}, "CellExecutionError: boom", 3.0)
    ids = {c["id"] for c in findings.judged_claims_of("index_dtype")}
    assert {c["id"] for c in data["claims"]} == ids
    assert all(c["verdict"] == "error" and "boom" in c["evidence"] for c in data["claims"])
    json.dumps(data, allow_nan=False)


def test_read_results_checks_schema(tmp_path):
    path = tmp_path / "bad.results.json"
    path.write_text(json.dumps({"schema": 99}))
    with pytest.raises(ValueError):
        findings.read_results(path)


def test_jsonable_handles_odd_values():
    assert findings.jsonable({"a": math.inf, 1: (np.int64(3),)}) == {"a": None, "1": [3]}


def _ledger(tmp_path, monkeypatch, entries):
    """Point findings at a data folder whose index_dtype ledger holds `entries`."""
    (tmp_path / "data" / "claims").mkdir(parents=True)
    (tmp_path / "data" / "claims" / "index_dtype.json").write_text(json.dumps(entries))
    monkeypatch.setattr(findings, "DATA", tmp_path / "data")
    findings.seed_claims.cache_clear()  # cleared again after the test (small_ledger)
    return entries


@pytest.fixture
def small_ledger(tmp_path, monkeypatch):
    entries = _ledger(tmp_path, monkeypatch, [
        {"id": "index_dtype.a", "source": "kit", "claim": "a holds", "question": "bites"},
        {"id": "index_dtype.b", "source": "kit", "claim": "b holds", "question": "fix"},
        {"id": "index_dtype.c", "source": "kit", "claim": "c holds", "question": "cost"},
        {"id": "index_dtype.u", "source": "kit", "claim": "u holds", "untestable": "needs a Jetson"},
    ])
    yield entries
    findings.seed_claims.cache_clear()


def test_untestable_claims_are_never_asked_for(small_ledger):
    assert [c["id"] for c in findings.judged_claims_of("index_dtype")] == ["index_dtype.a", "index_dtype.b",
                                                                          "index_dtype.c"]
    assert "index_dtype.u" not in findings.Findings("index_dtype", {}).to_dict()["missing_claims"]
    failed = findings.failed_results("index_dtype", "r", {}, "boom", 1.0)
    assert {c["id"] for c in failed["claims"]} == {"index_dtype.a", "index_dtype.b", "index_dtype.c"}


def test_judge_all_records_each_verdict_and_a_broken_judge_only_breaks_its_claim(small_ledger):
    def broken(measured):
        raise ZeroDivisionError("no rows")

    found = findings.Findings("index_dtype", {})
    frame = found.judge_all({"index_dtype.a": lambda m: Judgement("confirmed", f"{m} of {m} matched", {"n": m}),
                             "index_dtype.b": broken,
                             "index_dtype.c": lambda m: ("refuted", "slower", {})}, 3)
    assert {c.id: c.verdict for c in found.claims.values()} == {
        "index_dtype.a": "confirmed", "index_dtype.b": "error", "index_dtype.c": "error"}
    assert "ZeroDivisionError: no rows" in found.claims["index_dtype.b"].evidence
    assert "the judge returned tuple, not a Judgement" in found.claims["index_dtype.c"].evidence
    assert found.claims["index_dtype.a"].data == {"n": 3} and len(frame) == 3


def test_verdicts_and_tables_are_saved_as_recorded(small_ledger, tmp_path):
    path = tmp_path / "run" / "index_dtype.results.json"
    found = findings.Findings("index_dtype", {"imgsz": 64}, run_id="r")
    found.results_path = str(path)
    found.verdict("index_dtype.a", "confirmed", "3 of 3 matched")
    saved = findings.read_results(path)  # no save() call yet
    assert [c["id"] for c in saved["claims"]] == ["index_dtype.a"]
    assert set(saved["missing_claims"]) == {"index_dtype.b", "index_dtype.c"}
    found.table("status", [{"path": "eager", "status": "ok"}])
    assert findings.read_results(path)["tables"]["status"] == [{"path": "eager", "status": "ok"}]
    assert not list(path.parent.glob(".*.tmp"))  # the atomic write leaves no temporary file behind


def test_a_failure_keeps_what_was_judged(small_ledger, tmp_path):
    path = tmp_path / "index_dtype.results.json"
    found = findings.Findings("index_dtype", {}, run_id="r")
    found.results_path = str(path)
    found.verdict("index_dtype.b", "refuted", "0 of 3 matched")
    found.table("status", [{"path": "eager"}])
    data = findings.merge_failure(path, "index_dtype", "r", {"imgsz": 64}, "timeout: no result after 5 s", 5.0)
    assert data == findings.read_results(path)
    verdicts = {c["id"]: c for c in data["claims"]}
    assert verdicts["index_dtype.b"]["verdict"] == "refuted" and verdicts["index_dtype.b"]["evidence"] == "0 of 3 matched"
    assert verdicts["index_dtype.a"]["verdict"] == verdicts["index_dtype.c"]["verdict"] == "error"
    assert "no result after 5 s" in verdicts["index_dtype.a"]["evidence"] and "index_dtype.u" not in verdicts
    assert data["tables"] == {"status": [{"path": "eager"}]} and data["notebook_error"].startswith("timeout")


def test_merge_failure_without_a_saved_file_errors_every_claim(small_ledger, tmp_path):
    path = tmp_path / "index_dtype.results.json"
    path.write_text("{half a fi")  # a crash can leave anything; the merge must not trust it
    data = findings.merge_failure(path, "index_dtype", "r", {}, "crash: SIGSEGV", 1.0)
    assert [c["verdict"] for c in data["claims"]] == ["error"] * 3


def test_time_split_accounts_for_the_wall_time():
    split = findings.time_split(10.0, {"compile": 1.0, "measure": 0.5}, {"compile": 5.0, "measure": 2.5, "other": 9.0})
    assert split == {"compile": 4.0, "measure": 2.0, "other": 4.0, "wall": 10.0}
    # concurrent steps can add up to more than the wall time: `other` never goes negative
    assert findings.time_split(3.0, {}, {"compile": 5.0, "measure": 1.0})["other"] == 0.0


def test_results_carry_a_time_split():
    data = findings.Findings("index_dtype", {}).to_dict()
    assert set(data["time_split"]) == {"compile", "measure", "other", "wall"}
    assert data["time_split"]["wall"] >= 0


def test_interactive_results_stay_out_of_the_source_tree(monkeypatch):
    from yolo26kit import catalog

    monkeypatch.setattr(catalog, "get", lambda name: catalog.Investigation(name, "t", ()))
    found = findings.start("index_dtype", {"results_path": "", "run_id": ""})
    path = Path(found.results_path)
    assert path.parent == findings.INTERACTIVE and not path.is_relative_to(findings.DATA.parent / "notebooks")
    assert path.is_relative_to(findings.DATA.parent / "reports" / "runs")  # ignored by git


@pytest.mark.parametrize("gpu, device, devices, with_cpu, expected", [
    (False, "auto", [], True, ("cpu", ("cpu",))),
    (True, "auto", [], True, ("cuda", ("cuda", "cpu"))),  # an investigation that needs both asks for both
    (True, "auto", [], False, ("cuda", ("cuda",))),
    (True, "cpu", [], True, ("cpu", ("cpu",))),
    (True, "cuda", ["cuda"], True, ("cuda", ("cuda",))),  # a devices list wins
])
def test_start_resolves_the_run_target_once(monkeypatch, gpu, device, devices, with_cpu, expected):
    from yolo26kit import catalog, env

    monkeypatch.setattr(env, "cuda_available", lambda: gpu)
    monkeypatch.setattr(catalog, "get", lambda name: catalog.Investigation(name, "t", (), with_cpu=with_cpu))
    found = findings.start("index_dtype", {"device": device, "devices": devices, "results_path": "", "run_id": ""})
    assert (found.device, tuple(found.devices)) == expected and found.parameters["device"] == expected[0]


def test_start_refuses_a_device_the_machine_lacks(monkeypatch):
    from yolo26kit import catalog, env
    from yolo26kit.errors import BadParameter, DeviceUnavailable

    monkeypatch.setattr(env, "cuda_available", lambda: False)
    monkeypatch.setattr(catalog, "get", lambda name: catalog.Investigation(name, "t", ()))
    with pytest.raises(DeviceUnavailable, match="no CUDA"):
        findings.start("index_dtype", {"device": "cuda", "results_path": "", "run_id": ""})
    with pytest.raises(BadParameter, match="tpu"):
        findings.start("index_dtype", {"device": "cpu", "devices": ["tpu"], "results_path": "", "run_id": ""})


def test_an_explorer_is_a_note_in_a_batch_run_and_the_widget_by_hand(monkeypatch):
    import importlib

    from yolo26kit.run.notebook import TAG_ENV  # what the runner sets in every kernel it starts

    @findings.interactive_only
    def explorer(x):
        return ("widget", x)

    monkeypatch.delenv(TAG_ENV, raising=False)
    assert explorer(3) == ("widget", 3)
    monkeypatch.setenv(TAG_ENV, "run/name/1")
    note = explorer(3)
    assert "interactive widget" in note.data and "explorer" in note.data
    for name in ("index_dtype", "cdmaskformer_mask", "cuda_graphs", "dynamic_shapes"):  # every notebook's explorer
        assert "interactive widget" in importlib.import_module(f"yolo26kit.investigations.{name}").explorer(None).data
