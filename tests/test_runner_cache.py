"""run.json's per-notebook cache report: Inductor/AOTAutograd counters from isolated steps, artifact rows."""

from __future__ import annotations

import json

from yolo26kit.bench import isolate
from yolo26kit.run import notebook as notebook_run


def test_step_counters_and_cached_rows_add_up_per_notebook(tmp_path, monkeypatch):
    from torch._dynamo.utils import counters

    monkeypatch.setenv(isolate.FORENSICS_DIR_ENV, str(tmp_path))
    monkeypatch.setenv(notebook_run.TAG_ENV, "r1/index_dtype/123")
    saved = {g: dict(counters[g]) for g in ("inductor", "aot_autograd")}
    try:
        for hits, misses in ((2, 1), (3, 0)):  # two steps of the same notebook
            counters["inductor"].clear()
            counters["aot_autograd"].clear()
            counters["inductor"]["fxgraph_cache_hit"] += hits
            counters["inductor"]["fxgraph_cache_miss"] += misses
            counters["aot_autograd"]["autograd_cache_bypass"] += 1
            isolate._record_cache_counts()
    finally:
        for g, values in saved.items():
            counters[g].clear()
            counters[g].update(values)
    results = tmp_path / "index_dtype.results.json"
    results.write_text(json.dumps({"tables": {"pte": [{"cached": True}, {"cached": False}, {"cached": True}],
                                              "other": [{"cached": "yes"}, {"x": 1}]}}))
    report = notebook_run.cache_report(tmp_path, "index_dtype", results, "warm")
    assert report == {"compile_cache": "warm", "inductor": {"hit": 5, "miss": 1, "bypass": 0},
                      "aot_autograd": {"hit": 0, "miss": 0, "bypass": 2}, "artifacts": {"hit": 2, "miss": 1}}
    assert not (tmp_path / isolate.CACHE_COUNTS / "index_dtype.jsonl").exists()  # read once, then gone


def test_no_counts_outside_a_run(tmp_path, monkeypatch):
    monkeypatch.delenv(isolate.FORENSICS_DIR_ENV, raising=False)
    isolate._record_cache_counts()
    report = notebook_run.cache_report(tmp_path, "x", tmp_path / "missing.results.json", "cold")
    assert report["inductor"] == {"hit": 0, "miss": 0, "bypass": 0} and report["artifacts"] == {"hit": 0, "miss": 0}
