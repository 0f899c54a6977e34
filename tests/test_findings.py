"""findings: claims, verdict validation and the results.json round trip."""

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch

from yolo26kit import findings


def test_every_claims_file_is_well_formed():
    claims = findings.seed_claims()
    assert claims, "data/claims holds no claims"
    for cid, c in claims.items():
        assert cid == c["id"] and c["claim"].strip()
        assert c["source"].endswith(".txt") or c["source"] == "kit"  # the kit's own claims
        assert cid.split(".")[0] in {p.stem for p in (findings.DATA / "claims").glob("*.json")} | {"mask"}


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
    ids = {c["id"] for c in findings.claims_of("index_dtype")}
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
