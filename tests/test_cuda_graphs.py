"""cuda_graphs: the toy forecaster and its cache variants, the evidence collectors, the verdict logic, the notebook."""

from __future__ import annotations

import ast
import importlib
import logging
from collections import Counter
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import pytest
import torch

from yolo26kit import findings
from yolo26kit.bench import isolate
from yolo26kit.errors import BadParameter
from yolo26kit.investigations import cuda_graphs as cg
from yolo26kit.investigations.cuda_graphs import judge_toto, measures
from yolo26kit.investigations.cuda_graphs import toto as toto_model
from yolo26kit.verdicts import MAX_ROUNDS, MIN_ROUNDS, settle

cg_judge = importlib.import_module("yolo26kit.investigations.cuda_graphs.judge")  # the module; the package's judge is the function

TINY = cg.Config(d_model=16, n_layers=2, n_heads=2, patch_len=4, max_seq=8, batch=2, context_patches=3, steps=4)


def _forecast(variant: str, cfg: cg.Config = TINY) -> tuple[cg.model.Forecaster, torch.Tensor]:
    model = cg.model.build(cfg, variant)
    return model, cg.model.forecast(model, model, cg.model.example_context(cfg), cfg.steps)


# --------------------------------------------------------------------------- model and cache


def test_variants_agree_bitwise_in_eager():
    outs = {v: _forecast(v)[1] for v in cg.model.VARIANTS}
    assert outs["item"].shape == (TINY.steps, TINY.batch, TINY.patch_len)
    for v in cg.model.VARIANTS:
        assert torch.equal(outs[v], outs["item"]), v


def test_same_weights_for_every_variant():
    a, b = cg.model.build(TINY, "item"), cg.model.build(TINY, "tensor")
    for (name, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        assert torch.equal(p, q), name


def test_cache_holds_one_position_per_call():
    for variant in cg.model.VARIANTS:
        model, _ = _forecast(variant)
        written = (model.cache.k.abs().sum(dim=(1, 2, 4)) > 0)  # (layers, max_seq)
        assert written[:, :TINY.calls].all() and not written[:, TINY.calls:].any(), variant
        if variant != "python":
            assert model.cache._current_idx.tolist() == [TINY.calls] * TINY.n_layers
        model.reset()
        assert not model.cache.k.any() and not model.cache._current_idx.any()


def test_append_writes_at_the_position_and_masks_the_future():
    cfg = cg.Config(d_model=4, n_layers=1, n_heads=1, max_seq=8, batch=1)
    for variant in cg.model.VARIANTS:
        cache = cg.model.KVCache(cfg, variant)
        k = torch.ones(1, 1, 2, 4)
        pos = 0 if variant == "python" else None
        cache.append(0, k, k, pos)
        _, _, mask = cache.append(0, 2 * k, 2 * k, 2 if variant == "python" else None)
        assert cache.k[0, 0, 0, :, 0].tolist() == [1, 1, 2, 2, 0, 0, 0, 0], variant
        assert mask.tolist() == [[True] * 3 + [False] * 5, [True] * 4 + [False] * 4], variant


@pytest.mark.parametrize("variant", cg.model.VARIANTS)
def test_overflow_raises_a_clear_error(variant):
    model = cg.model.build(TINY, variant)
    patch = cg.model.example_context(TINY)[:, :1]
    with torch.no_grad():
        for i in range(TINY.max_seq):
            model(patch, i) if variant == "python" else model(patch)
        with pytest.raises(cg.model.CacheOverflow, match="max_seq=8"):
            model(patch, TINY.max_seq) if variant == "python" else model(patch)


def test_python_variant_needs_a_position():
    with pytest.raises(TypeError, match="pos"):
        cg.model.build(TINY, "python")(cg.model.example_context(TINY)[:, :1])


def test_config_check_rejects_a_forecast_longer_than_the_cache():
    with pytest.raises(BadParameter, match="max_seq"):
        cg.Config(max_seq=8, context_patches=4, steps=8).check()
    with pytest.raises(BadParameter, match="n_heads"):
        cg.Config(d_model=10, n_heads=4).check()


def test_unknown_variant():
    with pytest.raises(ValueError, match="tensor"):
        cg.model.KVCache(TINY, "numpy")


# --------------------------------------------------------------------------- settings and plan


def test_as_bool_and_the_check():
    assert [cg.measure.as_bool(v) for v in (True, "on", "false", 0, "1")] == [True, True, False, False, True]
    with pytest.raises(BadParameter):
        cg.measure.as_bool("maybe")
    assert cg.measure.as_bools([True, "off"]) is None and cg.measure.as_bools(["maybe"]) and cg.measure.as_bools([])


def test_plan_counts_cases():
    cases = cg.measure.plan(list(cg.model.VARIANTS), list(cg.measure.MODES), [False, True], [True, False])
    modes = Counter(c.mode for c in cases)
    assert modes == {"eager": 4, "default": 8, "reduce-overhead": 16}
    unsupported = cg.measure.plan(["item"], ["reduce-overhead"], [True], [True, False], partition_supported=False)
    assert [(c.mode, c.partition) for c in unsupported] == [("eager", None), ("reduce-overhead", None)]


def test_run_matrix_skips_reduce_overhead_without_cuda(monkeypatch):
    calls = []

    def in_process(fn, *args, timeout, step, phase="", **kwargs):  # the child's work, here, without a child
        calls.append(step)
        return isolate.Outcome(step, "ok", value=fn(*args, **kwargs))

    monkeypatch.setattr(isolate, "run_step", in_process)
    res = cg.run_matrix(["item", "python"], ["reduce-overhead"], [True], [True], TINY, device="cpu", warmup=0,
                        min_run_time=0.01)
    assert calls == ["2 cases"]  # CPU: one batch child for the runnable (eager) cases
    ro = [r for r in res.rows if r["mode"] == "reduce-overhead"]
    assert len(ro) == 2 and all(r["status"] == "skipped" and "CUDA" in r["error"] for r in ro)
    eager = res.ok(mode="eager")
    assert [r["variant"] for r in eager] == ["item", "python"] and eager[0]["outputs"] == eager[1]["outputs"]


@pytest.mark.parametrize("toto, decides_spread", [(["seed_int"], False), ([], True)])
def test_forecaster_rounds_decide_the_spread_only_where_toto_does_not(monkeypatch, toto, decides_spread):
    """Where Toto is timed it decides the spread claim: the forecaster's rounds then stop once the speed-up decides."""
    seen = []
    monkeypatch.setattr(cg.measure, "run_group", lambda group, cfg, device, timeout, **kw: seen.append(kw) or {})
    monkeypatch.setattr(cg.measure, "_toto_rows", lambda *args: [])
    cg.run_matrix(["tensor"], ["reduce-overhead"], [True], [True], TINY, device="cuda", probe=False, toto=toto)
    assert seen and all(kw["decide_spread"] is decides_spread for kw in seen)


def test_groups_of_puts_each_variant_in_one_child_reduce_overhead_first():
    cases = cg.measure.plan(["item", "tensor"], list(cg.measure.MODES), [False, True], [True])
    groups = cg.measure.groups_of(cases, "auto", on_cuda=True)
    assert [{c.variant for c in g} for g in groups] == [{"item"}, {"tensor"}]
    assert [c.mode for c in groups[0]] == ["eager", "reduce-overhead", "reduce-overhead", "default", "default"]
    assert cg.measure.groups_of(cases, "auto", on_cuda=False) == [cases]
    assert all(len(g) == 1 for g in cg.measure.groups_of(cases, "case", on_cuda=True))


def test_a_dead_group_child_is_rerun_one_case_per_child(monkeypatch):
    group = cg.measure.groups_of(cg.measure.plan(["item"], ["default"], [True], [True]), "variant", on_cuda=True)[0]
    steps = []

    def fake(fn, specs, *args, timeout, step, phase="", **kwargs):
        steps.append(step)
        if len(specs) > 1:
            return isolate.Outcome(step, "crash", error="SIGSEGV")
        if specs[0][1] == "default":
            return isolate.Outcome(step, "timeout", error="no result")
        return isolate.Outcome(step, "ok", value=[{"status": "ok", "error": ""}])

    monkeypatch.setattr(isolate, "run_step", fake)
    done = cg.measure.run_group(group, TINY, "cuda", 10.0, warmup=0)
    assert steps == ["item: 2 cases", "item eager", "item default capture=on"]
    assert [done[id(c)]["status"] for c in group] == ["ok", "timeout"]


# --------------------------------------------------------------------------- evidence collectors


def test_summarize_logs_classifies_messages():
    rec = cg.measure_evidence.LogRecord
    sched, trees = "torch._inductor.scheduler.__cudagraphs", "torch._inductor.cudagraph_trees.__cudagraphs"
    records = [
        rec("torch._inductor.cudagraph_utils.__cudagraphs", "WARNING",
            "skipping cudagraphs due to disabling cudagraphs due to incompatible op aten._local_scalar_dense.default "
            "Found from File x.py, line 217"),
        rec(sched, "DEBUG", "Created 3 graph partitions: 2 cudagraphable, 1 non-cudagraphable"),
        rec(sched, "DEBUG", "    buf3: reason=unbacked binding ops, ir=FallbackKernel, fx=x"),
        rec(trees, "INFO", "[0/0] Recording cudagraph tree for symint key 5"),
        rec(trees, "DEBUG", "[0/0] Recording function=0, mode=INFERENCE, cuda_graph_id=1"),
        rec("torch._dynamo.guards.__recompiles", "DEBUG", "Recompiling function forward in m.py:1\n triggered by pos"),
        rec("torch._inductor.graph.__perf_hints", "INFO", "Using FallbackKernel: aten.sdpa"),
    ]
    s = cg.measure_evidence.summarize_logs(records)
    assert s["skips_logged"] == 1 and "aten._local_scalar_dense" in s["skip_messages"][0]
    assert s["partitions"] == [[3, 2, 1]] and s["non_cudagraphable"] == {"unbacked binding ops": 1}
    assert s["symint_recordings"] == 1 and s["recordings"] == 1 and s["recompiles"] == 1
    assert s["perf_hints"] == ["Using FallbackKernel: aten.sdpa"]


def test_log_capture_hears_the_cudagraph_loggers_and_cleans_up():
    artifact = logging.getLogger("torch._inductor.cudagraph_utils.__cudagraphs")
    with cg.measure_evidence.LogCapture() as logs:
        artifact.warning("skipping cudagraphs due to mutated inputs (3 instances)")
    artifact.warning("skipping cudagraphs due to something after the capture")
    assert logs.summary()["skip_messages"] == ["skipping cudagraphs due to mutated inputs (3 instances)"]
    assert all(logs not in logging.getLogger(n).handlers for n in cg.measure_evidence.LogCapture.LOGGERS)


def test_log_capture_sees_real_recompiles():
    torch._dynamo.reset()
    model = cg.model.build(TINY, "python")
    step = torch.compile(model, backend="eager")  # Dynamo only: no Inductor compile in a unit test
    with cg.measure_evidence.LogCapture() as logs:
        cg.model.forecast(model, step, cg.model.example_context(TINY), TINY.steps)
    torch._dynamo.reset()
    summary = logs.summary()
    assert summary["recompiles"] >= 1  # the Python-int position is specialised, then made dynamic
    assert any("pos" in m for m in summary["recompile_messages"])


def test_count_profile():
    names = Counter({"cudaGraphLaunch": 2, "cudaLaunchKernel": 3, "cuLaunchKernelEx": 1,
                     "cudaStreamSynchronize": 1, "aten::_local_scalar_dense": 2, "aten::item": 2, "aten::mm": 9})
    assert cg.measure_evidence.count_profile(names) == {"graph_launches": 2, "kernel_launches": 4, "stream_syncs": 1, "scalar_reads": 2}


def test_profile_counts_scalar_reads_of_the_eager_step():
    context = cg.model.example_context(TINY)
    got = {}
    for variant in ("item", "int", "python"):
        model = cg.model.build(TINY, variant)
        args = (context[:, :1], 0) if variant == "python" else (context[:, :1],)
        got[variant] = cg.measure_evidence.profile_call(lambda: model(*args), "cpu")["scalar_reads"]
    assert got == {"item": TINY.n_layers, "int": TINY.n_layers, "python": 0}


def test_trace_shows_int_is_item():
    """Under Dynamo `int(t)` is `t.item()`: the same graph break, or the same _local_scalar_dense once captured."""
    cfg = cg.Config(d_model=8, n_layers=1, n_heads=1, patch_len=4, max_seq=8)
    patch = cg.model.example_context(cfg)[:, :1].contiguous()
    found = {}
    for variant, capture in (("item", False), ("item", True), ("int", False), ("int", True), ("tensor", True)):
        model = cg.model.build(cfg, variant)
        with cg.measure.compile_settings(capture, None):
            found[variant, capture] = cg.measure_evidence.trace_one_call(model, patch)
    torch._dynamo.reset()
    for variant in ("item", "int"):
        off, on = found[variant, False], found[variant, True]
        assert off["breaks_1call"] > 0 and "capture_scalar_outputs" in off["break_reasons"][0]
        assert on["breaks_1call"] == 0 and on["aten_scalar_reads"] == cfg.n_layers
        assert "_local_scalar_dense" in on["aten_first_incompatible"]
    tensor = found["tensor", True]
    assert tensor["breaks_1call"] == 0 and tensor["aten_scalar_reads"] == 0 and tensor["aten_first_incompatible"] == ""


def test_run_cases_on_a_tiny_compiled_model():
    """One Inductor compile (default mode, CPU): the row carries every piece of evidence the tables read."""
    cfg = asdict(cg.Config(d_model=8, n_layers=1, n_heads=1, patch_len=4, max_seq=8, batch=1, context_patches=2,
                           steps=3))
    rows = cg.measure.run_cases([("tensor", "default", True, None), ("item", "eager", None, None),
                         ("nope", "eager", None, None)], cfg, "cpu", warmup=1, min_run_time=0.01)
    row, eager, bad = rows
    assert row["status"] == "ok", row.get("log_tail")
    assert row["breaks_1call"] == 0 and row["recompiles"] == 0 and row["graph_breaks"] == 0
    assert row["unique_graphs"] == 1 and row["scalar_reads"] == 0 and row["graph_launches"] == 0
    assert row["max_abs_last"] <= 1e-5 and row["calls"] == 4 and row["median_ms"] > 0
    assert eager["status"] == "ok" and eager["scalar_reads"] == 1 and eager["outputs"] == eager["reference"]
    assert bad["status"] == "error" and "unknown cache variant 'nope'" in bad["error"]


# --------------------------------------------------------------------------- verdict logic on synthetic CUDA rows


def _row(variant, mode, capture=None, partition=None, **kw):
    base = {"variant": variant, "mode": mode, "capture_scalar_outputs": capture, "graph_partition": partition,
            "status": "ok", "error": "", "seconds": 1.0, "median_ms": 10.0, "calls": 10, "max_abs_first": 0.0,
            "max_abs_last": 0.0, "outputs": [1.0, 2.0], "reference": [1.0, 2.0], "kernel_launches": 40,
            "graph_launches": 0, "stream_syncs": 0, "scalar_reads": 0}
    return {**base, **kw}


def _results(rows):
    return cg.measure.Results(rows, TINY, "cuda", {"torch": "2.11.0"}, 1e-4)


def _results_on(rows, device, probe=None):
    return cg.measure.Results(rows, TINY, device, {"torch": "2.11.0"}, 1e-4, probe or [])


def _settled(judgement, claim_id):
    """The verdict findings records: the conditions rule applied against the ledger's conditions."""
    return settle(judgement, findings.ledger_entry(claim_id).get("conditions", {}))[0]


def test_capture_class():
    assert cg.measure.capture_class(_row("item", "reduce-overhead", graph_launches=0), 40) == "none"
    assert cg.measure.capture_class(_row("item", "reduce-overhead", graph_launches=1, kernel_launches=2), 40) == "full"
    assert cg.measure.capture_class(_row("item", "reduce-overhead", graph_launches=3, kernel_launches=20), 40) == "partial"
    assert cg.measure.capture_class(_row("item", "default"), 40) == "n/a"


def _matrix(ro_row, rounds=None):
    """Eager, default and reduce-overhead rows for every variant; ro_row(variant, capture) gives the graph evidence."""
    rows = [_row(v, "eager", median_ms=30.0) for v in cg.model.VARIANTS]
    rows += [_row(v, "default", c, median_ms=20.0) for v in cg.model.VARIANTS for c in (False, True)]
    rows += [_row(v, "reduce-overhead", c, True, **ro_row(v, c), **({"rounds": rounds} if rounds else {}))
             for v in cg.model.VARIANTS for c in (False, True)]
    return _results(rows)


SKIP = ["skipping cudagraphs due to disabling cudagraphs due to incompatible op aten._local_scalar_dense.default"]
FULL = {"graph_launches": 1, "kernel_launches": 1, "scalar_reads": 0, "median_ms": 5.0}
SPLIT = {"graph_launches": 2, "kernel_launches": 1, "scalar_reads": 1, "median_ms": 18.0}  # partitioned around .item()
NONE = {"graph_launches": 0, "kernel_launches": 40, "scalar_reads": 1, "median_ms": 19.0, "skip_messages": SKIP}


def _calls(median_ms: float, rel_spread: float) -> list[float]:
    """20 single-call times whose nearest-rank (p90 - p10) / median is `rel_spread`."""
    return [median_ms * (1 - rel_spread / 2)] * 3 + [median_ms] * 14 + [median_ms * (1 + rel_spread / 2)] * 3


def _rounds(graphs, default, graphs_spread=0.025, default_spread=0.05):
    return {"graphs": {"median_ms": graphs, "iqr_ms": [0.1] * len(graphs), "rel_spread": [graphs_spread] * len(graphs)},
            "default": {"median_ms": default, "iqr_ms": [0.5] * len(default),
                        "rel_spread": [default_spread] * len(default)},
            "per_call_ms": {"graphs": [_calls(m, graphs_spread) for m in graphs],
                            "default": [_calls(m, default_spread) for m in default]}, "calls_per_round": 20}


def test_verdicts_when_int_and_item_capture_alike():
    res = _matrix(lambda v, c: FULL if v in ("tensor", "python") else (SPLIT if c else NONE))
    split_int = res.ok(variant="int", mode="reduce-overhead", capture_scalar_outputs=True)[0]
    assert cg.measure.capture_class(split_int, 40) == "partial"
    # capture on (the seed's setting): a graph split around .item() is no skip
    assert cg_judge.judge_item_skips(res).verdict == "refuted"
    judged = cg_judge.judge_int_enables(res)
    assert judged.verdict == "refuted" and "changes nothing" in judged.evidence
    assert judged.run["capture_scalar_outputs"] == [True] and judged.run["mode"] == ["reduce-overhead"]
    assert cg_judge.judge_accuracy(res).verdict == "confirmed"
    assert cg_judge.judge_tensor_position(res).verdict == "confirmed"
    both_full = _matrix(lambda v, c: FULL if c or v in ("tensor", "python") else NONE)
    judged = cg_judge.judge_int_enables(both_full)
    assert judged.verdict == "partly" and ".item() gets them too" in judged.evidence


def test_speedup_reads_rounds_timed_in_turn_against_the_ledger_band():
    """Cases timed apart never decide; rounds inside / outside / across the 2-5x band give the straddle rule's
    answer, and on the kit's forecaster (not Toto) findings records inconclusive with that answer kept."""
    apart = _matrix(lambda v, c: FULL if v in ("tensor", "python") else NONE)
    judged = cg_judge.judge_speedup(apart)
    assert judged.verdict == "inconclusive" and "timed apart" in judged.evidence
    lo, hi = findings.band_of("cuda_graphs.speedup_2_5x")
    assert (lo, hi) == (2.0, 5.0)
    for graphs, expected in (([6.0, 6.0, 6.0], "confirmed"), ([18.0, 19.0, 17.0], "refuted"),
                             ([1.0, 1.0, 1.0], "refuted"), ([6.0, 6.0, 15.0, 6.0, 6.0, 6.0], "confirmed"),
                             ([6.0, 15.0, 6.0], "inconclusive"), ([4.0, 4.0, 4.0], "inconclusive"),
                             ([6.0, 15.0, 6.0, 15.0], "inconclusive")):
        # the rounds rule: two thirds of the rounds and their median, clear of the edge (5× here is on it), and
        # their resamples decide; one outlier among six does not block, one among three leaves it open
        res = _matrix(lambda v, c: FULL if v in ("tensor", "python") else NONE,
                      rounds=_rounds(graphs, [20.0] * len(graphs)))
        judged = cg_judge.judge_speedup(res)
        assert judged.verdict == expected, (graphs, judged.evidence)
        final = _settled(judged, "cuda_graphs.speedup_2_5x")
        assert final.verdict == "inconclusive"
        if expected != "inconclusive":
            assert "Toto" in final.evidence and final.data["verdict_under_run_conditions"] == expected


def test_verdicts_as_the_seed_tells_it():
    rows = [_row(v, "eager") for v in cg.model.VARIANTS] + [_row(v, "default", True, median_ms=50.0) for v in ("item", "int")]
    rows += [_row("item", "reduce-overhead", True, False, graph_launches=0, median_ms=50.0, skip_messages=SKIP),
             _row("int", "reduce-overhead", True, False, graph_launches=1, kernel_launches=0, median_ms=5.0)]
    res = _results(rows)
    assert cg_judge.judge_item_skips(res).verdict == "confirmed"
    assert cg_judge.judge_int_enables(res).verdict == "confirmed"
    judged = cg_judge.judge_tensor_position(res)  # on CUDA, but the tensor variant was left out
    assert judged.verdict == "error" and "was run" in judged.evidence


def test_item_skips_reads_only_the_seeds_capture_setting_and_names_a_crash():
    rows = [_row("item", "eager"),
            _row("item", "reduce-overhead", False, True, **SPLIT),  # capture off: a graph break, not the seed's run
            _row("item", "reduce-overhead", True, False, **NONE),
            _row("item", "reduce-overhead", True, True, status="error", error="AssertionError:")]
    judged = cg_judge.judge_item_skips(_results(rows))
    assert judged.verdict == "confirmed" and judged.run["capture_scalar_outputs"] == [True]
    assert "partition=on ended error (AssertionError:)" in judged.evidence
    only_crash = _results([rows[0], rows[3]])
    assert cg_judge.judge_item_skips(only_crash).verdict == "inconclusive"


def test_accuracy_refuted_beyond_atol_and_errors_are_not_verdicts():
    rows = [_row(v, "eager") for v in ("item", "int")] + [_row("int", "default", True, outputs=[1.0, 2.5]),
                                                          _row("item", "default", True)]
    assert cg_judge.judge_accuracy(_results(rows)).verdict == "refuted"
    # compiled-vs-eager drift is the compiler's, not the fix's: int and item identical keeps it confirmed
    drift = [_row(v, "eager") for v in ("item", "int")] + [_row(v, "default", True, max_abs_last=0.5) for v in ("item", "int")]
    assert cg_judge.judge_accuracy(_results(drift)).verdict == "confirmed"
    failed = [_row("item", "reduce-overhead", True, True, status="crash", error="child crashed with SIGSEGV")]
    judged = cg_judge.judge_item_skips(_results(failed))
    assert judged.verdict == "inconclusive" and "SIGSEGV" in judged.evidence


def test_cpu_rows_give_needs_cuda_where_only_cuda_can_answer():
    rows = [_row(v, "eager") for v in cg.model.VARIANTS]
    rows += [_row("item", "reduce-overhead", True, True, status="skipped", error=cg.measure.SKIPPED_ON_CPU)]
    for judge in (cg_judge.judge_item_skips, cg_judge.judge_speedup, cg_judge.judge_tensor_position, cg_judge.judge_partition_non_gpu_ops,
                  cg_judge.judge_mutated_inputs, cg_judge.judge_first_inference, cg_judge.judge_memory, cg_judge.judge_consistent_latency,
                  cg_judge.judge_item_syncs, cg_judge.judge_int_no_sync):
        assert judge(_results_on(rows, "cpu")).verdict == "needs_cuda", judge.__name__


def test_cpu_run_judges_int_and_item_from_the_traced_graph():
    """int() and .item() leave the same aten._local_scalar_dense, the node Inductor's cudagraph check refuses: the CPU
    run refutes int_enables and gives item_capture_scalar in part, and the device does not decide either."""
    traced = {"aten_scalar_reads": 1, "breaks_1call": 0, "aten_first_incompatible": "aten._local_scalar_dense.default"}
    rows = [_row(v, "eager") for v in ("item", "int")] + [_row(v, "default", True, **traced) for v in ("item", "int")]
    rows += [_row(v, "reduce-overhead", True, True, status="skipped", error=cg.measure.SKIPPED_ON_CPU) for v in ("item", "int")]
    res = _results_on(rows, "cpu")
    for judge, claim_id, expected in ((cg_judge.judge_int_enables, "cuda_graphs.int_enables", "refuted"),
                                      (cg_judge.judge_item_capture_scalar, "cuda_graphs.item_capture_scalar", "partly")):
        judged = judge(res)
        assert judged.verdict == expected and judged.run["device"] == "cpu" and "device" in judged.irrelevant
        assert _settled(judged, claim_id).verdict == expected
    assert "(a) Dynamo cannot capture it: fails; (b) CUDA graphs cannot capture it: holds" in \
        cg_judge.judge_item_capture_scalar(res).evidence
    rows[3]["aten_first_incompatible"] = ""  # a graph the check accepts: only CUDA can say whether it is graphed
    assert cg_judge.judge_int_enables(_results_on(rows, "cpu")).verdict == "needs_cuda"


def test_item_lowering_and_sync_judges():
    rows = [_row("item", "default", True, aten_scalar_reads=1, breaks_1call=0, stream_syncs=1),
            _row("item", "default", False, scalar_reads=1, breaks_1call=1, stream_syncs=1),
            _row("item", "eager", stream_syncs=1), _row("tensor", "eager")]
    judged = cg_judge.judge_item_local_scalar_dense(_results_on(rows, "cpu"))
    assert judged.verdict == "confirmed" and judged.evidence.startswith("item with capture on: 1 aten._local_scalar_dense")
    assert cg_judge.judge_item_syncs(_results_on(rows, "cpu")).verdict == "needs_cuda"
    assert cg_judge.judge_item_syncs(_results_on(rows, "cuda")).verdict == "confirmed"
    rows[0]["aten_scalar_reads"] = rows[1]["scalar_reads"] = 0
    assert cg_judge.judge_item_local_scalar_dense(_results_on(rows, "cpu")).verdict == "refuted"


def test_item_capture_scalar_and_int_no_sync():
    traced = {"aten_scalar_reads": 1, "breaks_1call": 0, "aten_first_incompatible": "aten._local_scalar_dense.default"}
    rows = [_row(v, "eager") for v in ("item", "int")]
    rows += [_row(v, "default", True, **traced, stream_syncs=1) for v in ("item", "int")]
    rows += [_row(v, "reduce-overhead", True, False, **{**NONE, "stream_syncs": 1}) for v in ("item", "int")]
    judged = cg_judge.judge_item_capture_scalar(_results_on(rows, "cuda"))
    assert judged.verdict == "partly" and "(a) Dynamo cannot capture it: fails" in judged.evidence
    assert judged.run["mode"] == ["reduce-overhead"] and judged.irrelevant == {}
    judged = cg_judge.judge_int_no_sync(_results_on(rows, "cuda"))
    assert judged.verdict == "refuted" and judged.evidence.startswith("2/2 compiled int()+capture cases synchronise")
    assert cg_judge.judge_int_no_sync(_results_on(rows, "cpu")).verdict == "needs_cuda"


def test_partition_judge():
    base = [_row("item", "eager")]
    split = _row("item", "reduce-overhead", True, True, **SPLIT, partitions=[[3, 2, 1]], non_cudagraphable={"cpu op": 1})
    judged = cg_judge.judge_partition_non_gpu_ops(_results_on(base + [split], "cuda"))
    assert judged.verdict == "partly" and "in other words" in judged.evidence
    # this run's torch (2.11) renamed the message: the conditions rule leaves it inconclusive
    assert _settled(judged, "cuda_graphs.partition_non_gpu_ops").verdict == "inconclusive"
    split["non_gpu_partition_logs"] = 1
    assert cg_judge.judge_partition_non_gpu_ops(_results_on(base + [split], "cuda")).verdict == "confirmed"
    plain = _row("item", "reduce-overhead", True, True, **NONE)
    assert cg_judge.judge_partition_non_gpu_ops(_results_on(base + [plain], "cuda")).verdict == "not_reproduced"
    off = _row("item", "reduce-overhead", True, False, **NONE)  # partition off: no partition can be logged
    crash = _row("item", "reduce-overhead", True, True, status="error", error="AssertionError:",
                 log_tail='Traceback:\n  File "/x/site-packages/torch/_inductor/scheduler.py", line 9, in partition\n')
    # the crash is the measured outcome on this torch: the message is not seen, and the judge says where it ended
    judged = cg_judge.judge_partition_non_gpu_ops(_results_on(base + [off, crash], "cuda"))
    assert judged.verdict == "not_reproduced" and "torch/_inductor/scheduler.py, line 9" in judged.evidence
    assert _settled(judged, "cuda_graphs.partition_non_gpu_ops").verdict == "inconclusive"  # 2.11 is not the seed's


def test_mutated_inputs_judge():
    rows = [_row("tensor", "eager"), _row("tensor", "reduce-overhead", True, True, **FULL)]
    buffer = {"cache": "buffer", "status": "ok", "mutated-input skips": 0, "graph_launches": 1, "kernel_launches": 1}
    argument = {"cache": "argument", "status": "ok", "mutated-input skips": 1, "graph_launches": 0, "kernel_launches": 3}
    judged = cg_judge.judge_mutated_inputs(_results_on(rows, "cuda", [buffer, argument]))
    assert judged.verdict == "partly" and "(b) fails: no CUDA graph is launched in the step of the probe's cache passed as argument" in judged.evidence
    assert cg_judge.judge_mutated_inputs(_results_on(rows, "cuda", [buffer])).verdict == "not_reproduced"
    assert cg_judge.judge_mutated_inputs(_results_on(rows, "cuda", [{**argument, "graph_launches": 1}])).verdict == "confirmed"
    assert cg_judge.judge_mutated_inputs(_results_on(rows, "cuda", [{"status": "crash", "error": "x"}])).verdict == "error"


def test_cost_judges():
    def ro(first_s, peak, before=0, rounds=None):
        return _row("tensor", "reduce-overhead", True, True, **FULL, first_ms=first_s * 1e3, peak_mem_bytes=peak,
                    compiled_before_in_child=before, **({"rounds": rounds} if rounds else {}))
    default = _row("tensor", "default", True, peak_mem_bytes=1000, iqr_ms=2.0, median_ms=20.0)
    res = _results_on([_row("tensor", "eager"), default, ro(50.0, 1200, rounds=_rounds([4.0] * 3, [10.0] * 3))], "cuda")
    assert cg_judge.judge_first_inference(res).verdict == "confirmed"
    assert cg_judge.judge_memory(res).verdict == "confirmed"
    judged = cg_judge.judge_consistent_latency(res)  # single forecasts' spread 2.5 % against 5 % in every round
    assert judged.verdict == "confirmed" and "5.0% with the default compile vs 2.5%" in judged.evidence
    assert _settled(judged, "cuda_graphs.consistent_latency").verdict == "confirmed"
    for claim_id, judge in (("cuda_graphs.first_inference_60s", cg_judge.judge_first_inference),
                            ("cuda_graphs.memory_slightly_more", cg_judge.judge_memory)):
        final = _settled(judge(res), claim_id)  # the kit's forecaster is not Toto
        assert final.verdict == "inconclusive" and final.data["verdict_under_run_conditions"] == "confirmed"
    res = _results_on([_row("tensor", "eager"), default, ro(5.0, 3000), ro(500.0, 3000, before=2)], "cuda")
    judged = cg_judge.judge_first_inference(res)  # the warm-process case is left out
    assert judged.verdict == "refuted" and judged.evidence.startswith("first forecast with CUDA graphs: 5.0 s")
    assert cg_judge.judge_memory(res).verdict == "refuted"  # 3x: more, not slightly
    assert cg_judge.judge_consistent_latency(res).verdict == "inconclusive"  # no rounds timed in turn
    res = _results_on([_row("tensor", "eager"), default, ro(50.0, 1000)], "cuda")
    judged = cg_judge.judge_memory(res)
    assert judged.verdict == "refuted" and "(1.00×)" in judged.evidence  # not higher at all


def test_rounds_against_default_times_both_compiles_round_by_round(monkeypatch):
    """The twin's compile is the only compile here (replaced by the eager model: no Inductor in a unit test)."""
    compiled = []

    def fake_compile(model, mode=None, **kwargs):
        compiled.append(mode)
        return model

    monkeypatch.setattr(torch, "compile", fake_compile)
    cfg = cg.Config(d_model=8, n_layers=1, n_heads=1, patch_len=4, max_seq=8, batch=1, context_patches=2, steps=3)
    model = cg.model.build(cfg, "tensor")
    got = cg.measure.rounds_against_default(model, model, cfg, "tensor", cg.model.example_context(cfg), "cpu", rounds=3, warmup=0)
    assert compiled == [None]
    for name in ("graphs", "default"):
        timings = got["rounds"][name]
        assert len(timings["median_ms"]) == len(timings["iqr_ms"]) >= 3 and min(timings["median_ms"]) > 0
    row = {"variant": "tensor", "mode": "reduce-overhead", "capture_scalar_outputs": True, "graph_partition": True,
           "status": "ok", **got}
    # the spread judge reads the single calls where the rows keep them: one list of calls per round
    calls = cg_judge._rounds(row)["per_call_ms"]
    assert len(calls["graphs"]) == len(calls["default"]) == len(got["rounds"]["graphs"]["median_ms"])
    table = cg.rounds_table(cg.measure.Results([row], cfg, "cpu", {}, 1e-4))
    assert list(table["round"])[:3] == [1, 2, 3] and (table["default / reduce-overhead"] > 0).all()


def test_every_ledger_claim_has_one_judge():
    assert {c["id"] for c in findings.judged_claims_of("cuda_graphs")} == set(cg.JUDGES)


def test_tables_by_name_are_what_record_tables_keeps():
    timed = {"per_step_ms": 1.0, "iqr_ms": 0.5, "p10_ms": 9.0, "p90_ms": 11.0, "first_ms": 2000.0, "runs": 5}
    res = _results([_row("item", "eager", **timed),
                    _row("item", "reduce-overhead", True, True, **FULL, **timed, rounds=_rounds([5.0], [20.0]))])

    class Found:
        def __init__(self):
            self.tables = {}

        def table(self, name, df):
            self.tables[name] = df

    found = Found()
    assert cg.record_tables(found, res) == list(cg.TABLES) == list(found.tables)
    for name, table in cg.TABLES.items():
        assert isinstance(table(res), pd.DataFrame) and table(res).equals(found.tables[name]), name
    assert list(cg.TABLES["rounds"](res)["default / reduce-overhead"]) == [4.0]


def test_the_judges_never_import_the_tables():
    """judge.py, and every module it builds on, reads rows without show.py (its tables and plots)."""
    package = Path(cg.__file__).parent
    for name in ("judge", "measure", "measure_evidence", "model"):
        tree = ast.parse((package / f"{name}.py").read_text())
        imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not [m for m in imported if m == "show" or m.endswith(".show")], name


# --------------------------------------------------------------------------- the notebook


@pytest.mark.notebook
def test_notebook_tiny(run_notebook):
    res = run_notebook("cuda_graphs", d_model=8, n_layers=1, n_heads=1, patch_len=4, max_seq=8, batch=1,
                       context_patches=2, steps=3, warmup=1, min_run_time=0.02)
    verdicts = {c["id"]: c["verdict"] for c in res["claims"]}
    assert set(verdicts) == {c["id"] for c in findings.judged_claims_of("cuda_graphs")} and not res["missing_claims"]
    on_cuda = res["environment"]["device_type"] == "cuda"
    if not on_cuda:
        for cid in ("item_skips", "speedup_2_5x", "tensor_position", "item_syncs", "int_no_sync",
                    "mutated_inputs_expected", "first_inference_60s", "memory_slightly_more", "consistent_latency",
                    "partition_non_gpu_ops"):
            assert verdicts[f"cuda_graphs.{cid}"] == "needs_cuda", cid
        # the traced graph, on any device: int() leaves the node Inductor's cudagraph check refuses, as .item() does
        assert verdicts["cuda_graphs.item_local_scalar_dense"] == "confirmed"
        assert verdicts["cuda_graphs.int_enables"] == "refuted"
        assert verdicts["cuda_graphs.item_capture_scalar"] == "partly"
        claims = {c["id"]: c for c in res["claims"]}
        assert claims["cuda_graphs.int_enables"]["conditions"]["differ"] == ["device", "mode"]
    assert verdicts["cuda_graphs.accuracy_unchanged"] == "confirmed"
    tables = res["tables"]
    for name in ("stack", "status", "cudagraphs", "graph_breaks", "latency", "eager_agreement", "accuracy", "logs",
                 "mutation_probe", "toto", "toto_rounds"):
        assert name in tables, name
    if not on_cuda:  # Toto runs on CUDA only (its cost claims are CUDA claims; 151 M parameters are minutes on a CPU)
        assert tables["toto"] == [{"toto": "not run (CUDA only; see toto_variants)"}]
    assert all(r["bitwise equal"] for r in tables["eager_agreement"])
    breaks = {r["case"]: r for r in tables["graph_breaks"]}
    assert breaks["item default capture=off"]["graph breaks (1 call)"] > 0
    assert breaks["int default capture=off"]["graph breaks (1 call)"] > 0
    assert breaks["int default capture=on"]["graph breaks (1 call)"] == 0
    assert breaks["tensor default capture=off"]["recompiles"] == 0
    assert breaks["python default capture=off"]["recompiles"] >= 1
    evidence = {r["case"]: r for r in tables["cudagraphs"]}
    assert evidence["int default capture=on"]["aten scalar reads"] == 1
    assert evidence["item default capture=on"]["aten scalar reads"] == 1
    assert evidence["tensor default capture=on"]["scalar reads/step"] == 0
    status = {r["case"]: r["status"] for r in tables["status"]}
    assert all(s == ("skipped" if "reduce-overhead" in c and not on_cuda else "ok") for c, s in status.items())


# --------------------------------------------------------------------------- measures that can vary


class _Clock:
    """A stand-in for perf_counter that only the calls below advance: timings without the machine's own noise."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def call(self, seconds: list[float]):
        """A call that takes the next of `seconds`, round and round: injected jitter."""
        state = {"i": 0}

        def run() -> None:
            self.now += seconds[state["i"] % len(seconds)]
            state["i"] += 1

        return run


@pytest.fixture
def clock(monkeypatch):
    fake = _Clock()
    monkeypatch.setattr(measures.time, "perf_counter", fake)
    return fake


def _sleeper(delay: float):
    import time

    return lambda: time.sleep(delay)


def test_spread_of_single_calls_grows_with_injected_jitter(clock):
    steady = measures.spread(measures.call_times_ms(clock.call([0.004]), "cpu", 20))
    jittery = measures.spread(measures.call_times_ms(clock.call([0.002, 0.004, 0.012, 0.003]), "cpu", 20))
    assert steady["calls"] == jittery["calls"] == 20
    assert steady["rel_spread"] == pytest.approx(0.0, abs=1e-9) and steady["median_ms"] == pytest.approx(4.0)
    assert jittery["rel_spread"] == pytest.approx((12 - 2) / 4) and jittery["p10_ms"] < jittery["p90_ms"]
    assert steady["iqr_ms"] == pytest.approx(0.0, abs=1e-9) and jittery["iqr_ms"] == pytest.approx(4 - 3)  # p75 - p25


def test_first_call_cold_compile_turns_the_caches_off_in_a_fresh_directory():
    import os

    import torch._inductor.config as inductor_config

    seen: dict = {}

    def call() -> None:
        seen.update(dir=os.environ.get("TORCHINDUCTOR_CACHE_DIR"), fx=inductor_config.fx_graph_cache)

    before = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    cold = measures.first_call(call, "cpu", cold=True)
    assert cold["counts"] and cold["cache_dir_fresh"] and seen["fx"] is False and seen["dir"] != before
    assert os.environ.get("TORCHINDUCTOR_CACHE_DIR") == before  # restored
    warm = measures.first_call(call, "cpu", cold=False)
    assert not warm["counts"] and seen["dir"] == before


def test_first_call_time_follows_the_call():
    short = measures.first_call(_sleeper(0.01), "cpu", cold=False)["first_s"]
    long = measures.first_call(_sleeper(0.2), "cpu", cold=False)["first_s"]
    assert long > 0.15 > 0.1 > short


def test_memory_added_grows_with_the_buffer_kept():
    _, small = measures.memory_added(lambda: torch.ones(1 << 20, dtype=torch.uint8), "cpu")  # 1 MiB
    big, large = measures.memory_added(lambda: torch.ones(256 << 20, dtype=torch.uint8), "cpu")  # 256 MiB
    assert large["allocated_added"] > 200 * 2**20 > small["allocated_added"]
    del big


def test_rounds_in_turn_stop_once_the_rounds_rule_decides(clock):
    decided = measures.rounds_in_turn({"graphs": clock.call([0.001]), "default": clock.call([0.003])}, "cpu", 2.0, 5.0,
                                      calls=5)
    assert decided["speedups"] == pytest.approx([3.0] * MIN_ROUNDS) and decided["speed_verdict"] == "confirmed"
    assert decided["calls_per_round"] == 5 and len(decided["per_call_ms"]["graphs"]) == MIN_ROUNDS
    # one call per round alternating 1 and 3 ms against 4 ms: rounds of 4x and 1.33x straddle the band to the cap
    edge = measures.rounds_in_turn({"graphs": clock.call([0.001, 0.003]), "default": clock.call([0.004])}, "cpu",
                                   2.0, 5.0, calls=1, max_rounds=MIN_ROUNDS + 3)
    assert len(edge["speedups"]) == MIN_ROUNDS + 3 <= MAX_ROUNDS and edge["speed_verdict"] == "inconclusive"
    # graphs steadier than default: spread ratio above 1 in every round
    steady = measures.rounds_in_turn({"graphs": clock.call([0.001]), "default": clock.call([0.002, 0.004])}, "cpu",
                                     1.0, 5.0, calls=4)
    assert all(r > 100 for r in steady["spread_ratios"])
    # with decide_spread the rounds go on while the pooled spread ratio sits at its edge (1: both spread alike),
    # though the speed-up is long decided
    alike = measures.rounds_in_turn({"graphs": clock.call([0.001, 0.002]), "default": clock.call([0.002, 0.004])},
                                    "cpu", 1.0, 5.0, calls=4, max_rounds=MIN_ROUNDS + 2, decide_spread=True)
    assert alike["speed_verdict"] == "confirmed" and len(alike["speedups"]) == MIN_ROUNDS + 2
    assert measures.spread_decision(alike["per_call_ms"]) == (None, pytest.approx({"value": 1.0, "inside": 0.0,
                                                                                   "outside": 0.0, "edge": 1.0}))
    # an undecided spread goes on past the speed-up's cap to its own, once that is more
    longer = measures.rounds_in_turn({"graphs": clock.call([0.001, 0.002]), "default": clock.call([0.002, 0.004])},
                                     "cpu", 1.0, 5.0, calls=4, max_rounds=MIN_ROUNDS + 2, decide_spread=True,
                                     spread_max_rounds=MIN_ROUNDS + 4)
    assert len(longer["speedups"]) == MIN_ROUNDS + 4
    # ...and stop at MIN_ROUNDS once it decides: graphs steady, default not
    steady = measures.rounds_in_turn({"graphs": clock.call([0.001]), "default": clock.call([0.002, 0.004])}, "cpu",
                                     1.0, 5.0, calls=4, max_rounds=MIN_ROUNDS + 2, decide_spread=True)
    assert len(steady["speedups"]) == MIN_ROUNDS and measures.spread_decision(steady["per_call_ms"])[0] == "confirmed"


@pytest.mark.parametrize("ratio, decided", [(0.9, "refuted"), (0.97, "refuted"), (1.0, None), (1.07, None),
                                             (1.2, "confirmed")])
def test_more_consistent_means_steadier_by_the_margin(ratio, decided):
    """A spread ratio a little under 1 answers "not more consistent"; only one clear of 1.05 (5 % steadier) confirms."""
    graphs = [[10.0] * 2 + [9.0, 11.0] * 8 + [10.0] * 2 for _ in range(5)]  # (p90 - p10) / median 0.2
    default = [[10.0] * 2 + [10 - ratio, 10 + ratio] * 8 + [10.0] * 2 for _ in range(5)]
    assert measures.pooled_spread_ratio(list(zip(graphs, default))) == pytest.approx(ratio)
    assert measures.spread_decision({"graphs": graphs, "default": default})[0] == decided


def test_pooled_spread_ratio_follows_the_jitter_of_either_side():
    calm, jumpy = [10.0] * 9 + [11.0], [10.0, 20.0] * 5
    assert measures.pooled_spread_ratio([(calm, jumpy)] * 3) > 5  # default jumpy: graphs steadier
    assert measures.pooled_spread_ratio([(jumpy, calm)] * 3) < 0.2
    assert measures.spread_decision({"graphs": [jumpy] * 5, "default": [calm] * 5})[0] == "refuted"


# --------------------------------------------------------------------------- Toto itself

TOTO_TINY = {**toto_model.TOTO_OPEN_BASE, "embed_dim": 32, "num_layers": 2, "num_heads": 2, "mlp_hidden_dim": 64,
             "patch_size": 16, "stride": 16, "spacewise_every_n_layers": 2,
             "output_distribution_kwargs": {"k_components": 2}}
TOTO_RUN = toto_model.TotoRun(context=64, steps=3)


def test_toto_at_the_released_size_has_151m_parameters():
    step = toto_model.build_toto("stock", toto_model.TotoRun(), "cpu")
    assert 150e6 < toto_model.parameter_count(step) < 152e6
    assert type(step.cache).__name__ == "KVCache" and step.cache.__module__ == "toto.model.util"


def test_seed_patch_changes_only_how_the_position_is_read():
    import inspect

    stock = toto_model.toto_modules().KVCache
    patched = toto_model.seed_int_cache(stock)
    assert issubclass(patched, stock) and ".item()" in inspect.getsource(stock.current_len)
    assert "int(self._current_idx[cache_idx])" in inspect.getsource(patched.current_len)
    assert "start_idx = int(self._current_idx[cache_idx])" in inspect.getsource(patched.append)
    assert patched.__getitem__ is stock.__getitem__  # the seed did not touch the read side
    series = toto_model.toto_context(TOTO_RUN)
    outs = {}
    for variant in toto_model.TOTO_VARIANTS:
        step = toto_model.build_toto(variant, TOTO_RUN, "cpu", TOTO_TINY)
        outs[variant] = toto_model.toto_forecast(step, step, series, TOTO_RUN.steps)
        assert int(step.cache._current_idx[0]) == TOTO_RUN.context // 16 + TOTO_RUN.steps - 1
    assert outs["stock"].shape == (1, 1, TOTO_RUN.steps * 16)
    assert torch.equal(outs["stock"], outs["seed_int"])


def _toto_res(row: dict, rows: list | None = None) -> cg.measure.Results:
    return cg.measure.Results(rows or [], TINY, "cuda", {"torch": "2.11.0"}, 1e-4, [], [row])


def test_a_toto_compile_failure_is_a_finding_never_a_refutation_of_its_cost():
    ro = {"status": "error", "error": "NameError: name 'Max' is not defined", "where": "toto/model/backbone.py, line 158",
          "seconds": 9}
    failed = {"variant": "seed_int", "capture_scalar_outputs": True, "status": "ok", "parameters": 151_306_080,
              "run": asdict(TOTO_RUN), "reduce_overhead": ro, "default": dict(ro)}
    res = _toto_res(failed)
    for judge in (cg_judge.judge_speedup, cg_judge.judge_first_inference, cg_judge.judge_memory):
        final = _settled(judge(res), "cuda_graphs.speedup_2_5x")
        assert (final.verdict, final.basis) == ("inconclusive", "none"), judge.__name__
        assert "name 'Max'" in final.evidence and "on torch 2.11.0" in final.evidence  # the failure is named
        (found,) = final.findings
        assert found.id == "cuda_graphs.toto_compile_max_nameerror"
        assert "default compile mode with the same setting fails the same way" in found.evidence


def test_toto_cost_claims_are_judged_where_cuda_graphs_are_enabled():
    ro = {"status": "error", "error": "NameError: name 'Max' is not defined", "seconds": 9}
    failed = {"variant": "seed_int", "capture_scalar_outputs": True, "status": "ok", "run": asdict(TOTO_RUN),
              "reduce_overhead": ro, "default": {"status": "ok", "first_s": 20.0}}
    graphed = {"variant": "seed_int", "capture_scalar_outputs": False, "status": "ok", "run": asdict(TOTO_RUN),
               "reduce_overhead": {"status": "ok", "graph_launches": 3, "kernel_launches": 40, "first_s": 50.0},
               "default": {"status": "ok", "first_s": 20.0},
               "rounds": {"speedups": [1.3, 1.25, 1.35, 1.3, 1.28], "calls_per_round": 10}}
    res = cg.measure.Results([], TINY, "cuda", {"torch": "2.11.0"}, 1e-4, [], [failed, graphed])
    # 3 graphs among 40 loose launches: graphs partly enabled, not the seed's "fully enabled": measured, undecided
    final = _settled(cg_judge.judge_speedup(res), "cuda_graphs.speedup_2_5x")
    assert final.verdict == "inconclusive" and final.data["verdict_under_run_conditions"] == "refuted"
    assert final.run["capture"].startswith("partial: 3 graph replays, 40 kernel launches outside graphs")
    assert "the seed's full" in final.evidence and not final.irrelevant
    assert final.figure is not None and final.figure.value == pytest.approx(1.3)
    assert [f.id for f in final.findings] == ["cuda_graphs.toto_compile_max_nameerror"]
    # the whole step replayed as graphs with capture off: the seed's outcome on another route decides (1.3x, not 2-5x)
    graphed["reduce_overhead"]["kernel_launches"] = 0
    final = _settled(cg_judge.judge_speedup(res), "cuda_graphs.speedup_2_5x")
    assert final.verdict == "refuted" and final.basis == "measured" and final.run["capture"] == "full"
    assert final.run["capture_scalar_outputs"] == [False] and "capture_scalar_outputs" in final.irrelevant
    graphed["reduce_overhead"]["kernel_launches"] = 40


    # the spread claim names no model: the kit forecaster's rounds decide it, Toto's failure is told beside
    toy = [_row("tensor", "eager"), _row("tensor", "default", True),
           _row("tensor", "reduce-overhead", True, True, **FULL, rounds=_rounds([4.0] * 5, [10.0] * 5))]
    judged = cg_judge.judge_consistent_latency(_toto_res(failed, toy))
    assert judged.verdict == "confirmed" and "Toto does not decide it" in judged.evidence
    assert judged.run["model"].startswith("kit forecaster")
    missing = {"variant": "seed_int", "capture_scalar_outputs": True, "status": "error",
               "error": "TotoUnavailable: cuda_graphs: the Toto cases need toto-ts==0.2.0"}
    assert cg_judge.judge_speedup(_toto_res(missing)).verdict == "error"


def test_toto_first_inference_counts_only_a_cold_compile():
    mode = {"status": "ok", "first_s": 60.0, "counts": False, "fxgraph_cache_hits": 2}
    row = {"variant": "seed_int", "capture_scalar_outputs": True, "status": "ok", "run": asdict(TOTO_RUN),
           "reduce_overhead": mode, "default": {"status": "ok", "first_s": 20.0}}
    judged = cg_judge.judge_first_inference(_toto_res(row))
    assert judged.verdict == "error" and "does not count" in judged.evidence
    mode.update(counts=True, fxgraph_cache_hits=0)
    assert cg_judge.judge_first_inference(_toto_res(row)).verdict == "confirmed"
    mode["first_s"] = 200.0
    assert cg_judge.judge_first_inference(_toto_res(row)).verdict == "refuted"


def test_toto_memory_ratio_counts_the_model_on_both_sides():
    row = {"model_bytes": 600 * 2**20, "reduce_overhead": {"mem_peak_added": 400 * 2**20},
           "default": {"mem_peak_added": 100 * 2**20}}
    ratio, added = judge_toto.memory_ratio(row)
    assert ratio == pytest.approx(1000 / 700) and added == pytest.approx(300)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need CUDA")
def test_toto_case_on_cuda_records_every_measure():
    from yolo26kit.investigations.cuda_graphs import toto_measure

    row = toto_measure.toto_case("seed_int", asdict(TOTO_RUN), "cuda", capture=False, calls=5, config=TOTO_TINY)
    ro = row["reduce_overhead"]
    assert ro["status"] == "ok" and ro["counts"] and "mem_peak_added" in ro and row["rounds"]["speedups"]


def test_toto_rounds_wait_for_their_gate_and_go_on_without_it(tmp_path):
    import threading

    from yolo26kit.investigations.cuda_graphs import toto_measure

    gate = tmp_path / "matrix-done"
    threading.Timer(0.3, gate.touch).start()
    assert 0.2 <= toto_measure.wait_for(str(gate), timeout=10.0) < 5.0
    assert toto_measure.wait_for(str(tmp_path / "never"), timeout=0.3) >= 0.3
    assert toto_measure.wait_for("", timeout=10.0) < 0.1  # no gate: no wait


def test_toto_cases_run_side_by_side(monkeypatch):
    import time

    from yolo26kit.investigations.cuda_graphs import toto_measure

    running, most = set(), []

    def fake_step(fn, variant, run, device, capture, **kwargs):
        running.add(capture)
        most.append(len(running))
        time.sleep(0.3)
        running.discard(capture)
        return isolate.Outcome(step="Toto", status="ok", value={"variant": variant, "capture_scalar_outputs": capture,
                                                   "rounds_after": kwargs.get("rounds_after")})

    monkeypatch.setattr(toto_measure.isolate, "run_step", fake_step)
    rows = toto_measure.run_toto(["seed_int"], toto_model.TotoRun(), "cuda", [True, False], rounds_after="g")
    assert [r["capture_scalar_outputs"] for r in rows] == [True, False]  # in the order asked for
    assert max(most) == 2 and all(r["rounds_after"] == "g" for r in rows)


def test_toto_cases_run_on_a_spare_gpu_ungated_when_the_plan_lent_one(monkeypatch):
    import json

    from yolo26kit.bench import timing
    from yolo26kit.investigations.cuda_graphs import toto_measure

    seen = []

    def fake_step(fn, variant, run, device, capture, **kwargs):
        seen.append(kwargs)
        if not capture:  # a crashed case's row says where it ran too
            return isolate.Outcome(step="Toto", status="crash", error="SIGSEGV")
        return isolate.Outcome(step="Toto", status="ok", value={"variant": variant, "capture_scalar_outputs": capture})

    monkeypatch.setattr(toto_measure.isolate, "run_step", fake_step)
    monkeypatch.setenv(timing.SPARE_GPU_ENV, json.dumps({"gpu": "0", "lock": "/l/gpu0.lock", "cores": "6,7"}))
    rows = toto_measure.run_toto(["seed_int"], toto_model.TotoRun(), "cuda", [True, False], rounds_after="gate")
    spare = {"CUDA_VISIBLE_DEVICES": "0", timing.DEVICE_LOCK_ENV: "/l/gpu0.lock", timing.DEVICE_CORES_ENV: "6,7"}
    assert [(k["env"], k["rounds_after"]) for k in seen] == [(spare, "")] * 2
    assert [(r.get("status", "ok"), r["on_spare_gpu"]) for r in rows] == [("ok", True), ("crash", True)]
    monkeypatch.delenv(timing.SPARE_GPU_ENV)
    seen.clear()
    rows = toto_measure.run_toto(["seed_int"], toto_model.TotoRun(), "cuda", [True], rounds_after="gate")
    assert [(k["env"], k["rounds_after"]) for k in seen] == [({}, "gate")] and rows[0]["on_spare_gpu"] is False


def test_toto_wheels_travel_without_their_pinned_dependencies():
    from yolo26kit.run import bundle

    toto_wheel = bundle.Wheel("toto_ts", "0.2.0", "toto_ts-0.2.0-py3-none-any.whl", 120_804,
                              ("torch==2.7.0", "numpy==1.26.4", "lightning==2.3.3"))
    assert bundle.dependencies(toto_wheel) == []
    assert {"toto-ts==0.2.0", "gluonts==0.16.2", "jaxtyping==0.2.29"} <= set(bundle.KIT_REQUIREMENTS)
    plain = bundle.Wheel("rotary_embedding_torch", "0.8.6", "r.whl", 5616, ("einops>=0.7", "torch>=2.0"))
    assert [r.name for r in bundle.dependencies(plain)] == ["einops", "torch"]


def test_conclusion_reads_toto_figures_and_failure_from_the_claims_figures():
    from yolo26kit.conclusion import View, conclude as settle_conclusion
    from yolo26kit.investigations.cuda_graphs import conclude
    from yolo26kit.verdicts import one_figure, rounds_figure

    def results(speedup: str, data: dict, figures: dict) -> dict:
        return {"investigation": "cuda_graphs", "claims": [
            {"id": "cuda_graphs.speedup_2_5x", "verdict": speedup, "data": data,
             "figure": figures.get("speedup")},
            {"id": "cuda_graphs.first_inference_60s", "verdict": "confirmed", "data": {},
             "figure": figures.get("first")}]}

    speed = rounds_figure([2.4, 3.0, 2.6], "×", "Toto's forecast time, default compile / reduce-overhead", model="Toto",
                          device="cuda", graph_replays=1, loose_kernel_launches=0, graph_breaks=0).to_dict()
    first = one_figure(55.0, "s", "Toto's first forecast", device="cuda").to_dict()
    res = results("confirmed", {"speedups": [2.4, 3.0, 2.6]}, {"speedup": speed, "first": first})
    out, _ = conclude.conclude(View(res))
    assert "2.6× (median of 3 rounds, 2.4–3×)" in out["cost"] and "with full CUDA graphs" in out["cost"]
    assert "55 s" in out["cost"]
    assert settle_conclusion(res).figure["value"] == "2.6×"
    res = results("inconclusive", {"premise_unmet": "IndexError: got SymInt\n  at line 3"}, {})
    out, _ = conclude.conclude(View(res))
    assert out["cost"].endswith("no route enabled them on Toto here: IndexError: got SymInt.")
    assert settle_conclusion(res).figure is None


def test_toto_capture_off_measures_the_cost_where_the_seed_setting_does_not_compile():
    failed = {"variant": "seed_int", "capture_scalar_outputs": True, "status": "ok", "run": asdict(TOTO_RUN),
              "reduce_overhead": {"status": "error", "error": "IndexError: got SymInt", "seconds": 9}}
    mode = {"status": "ok", "first_s": 80.0, "graph_launches": 12, "kernel_launches": 30, "scalar_reads": 13,
            "graph_breaks": 24, "mem_peak_added": 300 * 2**20}
    off = {"variant": "seed_int", "capture_scalar_outputs": False, "status": "ok", "run": asdict(TOTO_RUN),
           "model_bytes": 600 * 2**20, "reduce_overhead": mode,
           "default": {"status": "ok", "mem_peak_added": 100 * 2**20}, "rounds": {"speedups": [1.5, 1.6, 1.4]}}
    res = cg.measure.Results([], TINY, "cuda", {"torch": "2.11.0"}, 1e-4, [], [failed, off])
    judged = cg_judge.judge_speedup(res)
    assert judged.verdict == "refuted" and "1.50, 1.60, 1.40×" in judged.evidence  # 1.5x with graphs on, not 2-5x
    assert judged.run["capture_scalar_outputs"] == [False]
    first = cg_judge.judge_first_inference(res)
    assert first.verdict == "error" and "80.0 s" in first.evidence  # not a cold compile: the figure does not count
    memory = _settled(cg_judge.judge_memory(res), "cuda_graphs.memory_slightly_more")
    assert memory.figure.value == pytest.approx(900 / 700)
    # 12 graphs between 30 loose launches and 13 scalar reads: not the seed's full capture, so the settled verdict waits
    assert memory.verdict == "inconclusive" and memory.data["verdict_under_run_conditions"] == "confirmed"
    mode["cold"] = True  # reduce-overhead compiled cold, the default compile from the cache: unlike peaks
    memory = cg_judge.judge_memory(res)
    assert memory.verdict == "inconclusive" and memory.data["unlike_compiles"] and "cache protocols" in memory.evidence
    off["reduce_overhead"] = {"status": "error", "error": "x"}
    assert "beside it" not in cg_judge.judge_speedup(res).evidence


def test_the_consistency_claim_is_judged_on_the_spread_its_ledger_entry_names(monkeypatch):
    """Toto's case: CUDA graphs 1.5× faster, the same jitter per millisecond plus a little: p90 − p10 in ms is lower
    with graphs, relative to the median it is higher. The ledger's `spread` (relative, with its reason) decides, and
    the evidence says which spread and why."""
    entry = findings.ledger_entry("cuda_graphs.consistent_latency")
    assert entry["spread"]["kind"] == "relative" and "speed-up" in entry["spread"]["why"]
    per_call = {"graphs": [_calls(66.0, 0.46)] * 5, "default": [_calls(100.0, 0.41)] * 5}
    assert measures.spread_decision(per_call)[0] == "refuted"  # relative: 41% vs 46%, not more consistent
    monkeypatch.setattr(measures, "spread_kind", lambda: "absolute")
    assert measures.spread_decision(per_call)[0] == "confirmed"  # 41 ms vs 30 ms: what the absolute reading says
    monkeypatch.undo()
    rounds = {"per_call_ms": per_call, "calls_per_round": 20}
    text = judge_toto.spread_evidence("single forecasts", "reduce-overhead", rounds, measures.spread_decision(per_call)[1])
    assert text.startswith("relative spread (p90 − p10) / median of single forecasts")
    assert "the seed's words mean the relative spread: the seed lists" in text and "(not judged)" in text
