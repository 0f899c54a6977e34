"""view_copy: the decode-step model, the pass on the back-end's edge graph, the wrapper reader, judges, the notebook."""

import importlib
import json
import time

import pytest
import torch

from yolo26kit import findings
from yolo26kit.bench import isolate
from yolo26kit.investigations import view_copy as inv
from yolo26kit.verdicts import settle

inv_judge = importlib.import_module("yolo26kit.investigations.view_copy.judge")  # the module; the package's judge is the function

TINY = inv.model.Spec(d_model=16, n_heads=2, n_layers=1, max_seq=8, decode_steps=3)


def test_decode_step_writes_the_cache_at_each_position():
    model = inv.model.build_module(TINY)
    with torch.no_grad():
        for i in range(TINY.decode_steps):
            model(*inv.model.call_inputs(TINY, i))
    written = (model.k_cache[0, 0, 0].abs().sum(-1) > 0).nonzero().flatten().tolist()
    assert written == list(range(TINY.decode_steps))


def test_op_names_are_the_same_for_aten_and_edge_ops():
    from executorch.exir.dialects._ops import ops

    assert inv.measure.op_name(torch.ops.aten.slice_copy.Tensor) == "aten.slice_copy.Tensor"
    assert inv.measure.op_name(ops.edge.aten.slice_copy.Tensor) == "aten.slice_copy.Tensor"
    assert inv.measure.base_op("aten.split_with_sizes_copy.default") == "split_with_sizes_copy"


def test_the_installed_pass_is_found_and_maps_slice_copy():
    info = inv.measure.find_pass()
    assert info["found"], info
    assert info["mapping"]["aten.slice_copy.Tensor"] == "aten.slice.Tensor"


def test_backend_edge_graph_slices_and_the_pass_turns_every_free_slice_into_a_view():
    g = inv.measure.step_graphs(TINY)
    assert g["exported"].get("aten.slice.Tensor", 0) > 0 and "aten.slice_copy.Tensor" not in g["exported"]
    assert g["before"]["aten.slice_copy.Tensor"] >= g["exported"]["aten.slice.Tensor"]
    assert "aten.slice_copy.Tensor" not in g["after"]
    assert g["after"]["aten.slice.Tensor"] == g["before"]["aten.slice_copy.Tensor"]
    assert g["equal"] is True
    # with the seed's named source pass made a no-op, the lowering still makes every slice_copy (executorch 1.5:
    # torch's ReplaceViewOpsWithViewCopyOpsPass runs first); the pass is restored afterwards
    assert g["without_named_source"] == {"pass": inv.measure.NAMED_SOURCE[1],
                                         "slice_copy": g["before"]["aten.slice_copy.Tensor"]}
    from executorch.exir.passes.replace_broken_ops_with_function_ops_pass import ReplaceBrokenOpsWithFunctionalOpsPass
    assert "call_operator" in vars(ReplaceBrokenOpsWithFunctionalOpsPass)


def test_probe_graphs_keep_slices_written_in_place():
    rows = {r["user"]: r for r in inv.measure.probe_pass()}
    assert rows["aten.add_"]["became"] == "aten.slice_copy.Tensor" and rows["aten.add_"]["x_unchanged"]
    assert rows["aten.index_put_"]["became"] == "aten.slice_copy.Tensor"
    assert rows["aten.relu"]["became"] == "aten.slice.Tensor"
    assert all(r["ok"] for r in rows.values())


WRAPPER = """
void AOTInductorModel::run_impl(AtenTensorHandle* input_handles) {
    static constexpr int64_t int_array_0[] = {2L, 8L};
    static constexpr int64_t int_array_1[] = {8L, 1L};
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, int_array_0, int_array_1, cached_torch_dtype_float32, cached_torch_device_type_cpu, this->device_idx_, &buf0_handle));
    // Topologically Sorted Source Nodes: [aten_slice_copy_tensor], Original ATen: [aten.slice_copy]
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_new_uninitialized_tensor(&buf1_handle));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_proxy_executor_call_function(proxy_executor, 1, 4, std::array<int64_t, 4>{3, 8, 9, 1}.data(), 2, std::array<AtenTensorHandle, 2>{buf3, buf4}.data()));
    if (_check_aoti_runtime_check_inputs_env()) { assert_size_stride(buf1, {1L}, {1L}, "torch.ops.aten.slice_copy.Tensor", cached_torch_dtype_float32, "torch.float32"); }
    cpp_fused_cat_neg_2((const float*)(buf4.data_ptr()), (float*)(buf6.data_ptr()));
    // Topologically Sorted Source Nodes: [x], Original ATen: [aten.view_copy, aten.permute_copy]
    call_triton_poi_fused_permute_copy_view_copy_3(buf0, buf1, 16, stream, kernels, this->cubin_dir_);
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_mm_out(buf1, buf0, buf2));
}
"""


def test_wrapper_reader_counts_proxy_fallbacks_copies_and_bytes():
    code = inv.wrapper.analyse_wrapper(WRAPPER)
    kinds = [(c["kind"], c["copy_only"]) for c in code["calls"]]
    assert kinds == [("proxy", True), ("generated", False), ("generated", True), ("extern", False)]
    assert code["proxy_ops"] == {"aten.slice_copy.Tensor": 1}
    assert code["allocations"] == 2 and code["alloc_bytes"] == 2 * 8 * 4
    assert code["calls"][1]["ops"] == ["cat_neg"]


def _case(model, with_pass, proxy, copies, nbytes, median, outputs, post=None):
    spec = inv.model.Spec(model=model)
    calls = [{"name": "k", "kind": "proxy", "ops": ["aten.slice_copy.Tensor"], "copy_only": True}] * proxy
    calls += [{"name": "k", "kind": "generated", "ops": ["permute_copy"], "copy_only": True}] * copies
    code = {"calls": calls, "proxy": proxy, "copy_calls": proxy + copies, "allocations": 1, "generated": copies,
            "extern": 0, "alloc_bytes": 0, "proxy_ops": {}}
    value = {"code": code, "bytes_accessed": nbytes, "kernel_count": 1, "from_cache": False,
             "post_grad_before": post, "post_grad_after": post}
    run = isolate.Outcome("run", "ok", value={"outputs": outputs, "eager_max_abs": 0.0,
                                               "timing": {"median_ms": median, "iqr_ms": 0.01}})
    return inv.measure.Case(spec, with_pass, isolate.Outcome("compile", "ok", value=value), [run])


def _results(device, same_outputs=True):
    out = [torch.ones(3)]
    other = out if same_outputs else [torch.full((3,), 2.0)]
    graph = {"exported": {"aten.slice.Tensor": 2}, "before": {"aten.slice_copy.Tensor": 2, "aten.view_copy": 3},
             "after": {"aten.slice.Tensor": 2, "aten.view_copy": 3}, "equal": True, "max_abs": 0.0,
             "edge_source": "test", "nodes": [{"op": "aten.slice_copy.Tensor", "converted": True,
                                               "mutating_user": False, "users": ["aten.neg"]}] * 2,
             "without_named_source": {"pass": inv.measure.NAMED_SOURCE[1], "slice_copy": 2}}
    post = {"aten.slice_copy.Tensor": 2, "aten.reshape": 3, "aten.clone": 3}
    probes = [{"user": "aten.add_", "writes_into_slice": True, "expected": "copy", "ok": True}]
    rounds = {"without pass": {"round_medians_ms": [2.0, 2.1, 1.9], "median_ms": 2.0, "iqr_ms": 0.0},
              "with pass": {"round_medians_ms": [1.0, 1.0, 1.1], "median_ms": 1.0, "iqr_ms": 0.0}}
    return inv.measure.Results(device, {"found": True, "mapping": {"aten.slice_copy.Tensor": "aten.slice.Tensor"}},
                       {"kv_decode": isolate.Outcome("g", "ok", value=graph)},
                       isolate.Outcome("p", "ok", value=probes),
                       [_case("kv_decode", True, 0, 1, 100, 1.0, out),
                        _case("kv_decode", False, 2, 1, 200, 2.0, other, post)],
                       {"kv_decode": [isolate.Outcome("rounds", "ok", value=rounds)]})


def test_judges_follow_the_measurements():
    cuda, cpu = _results("cuda"), _results("cpu")
    faster = inv_judge.judge_more_efficient(cuda)
    # faster in every round; plain AOT Inductor is not the CUDA back-end's compile, and without the post-grad graphs
    # nothing shows that the difference does not matter, so the conditions rule decides
    assert faster.verdict == "confirmed" and faster.run == {"device": "cuda", "backend": "aoti", "executorch": ""}
    assert settle(faster, findings.ledger_entry("view_copy.more_efficient")["conditions"])[0].verdict == "inconclusive"
    on_cpu = inv_judge.judge_more_efficient(cpu)  # the CPU run is judged too; its device differs from the seed's
    assert on_cpu.run["device"] == "cpu" and "Rule:" in on_cpu.evidence
    assert inv_judge.judge_equivalent(cuda).verdict == "confirmed"
    assert inv_judge.judge_equivalent(_results("cuda", same_outputs=False)).verdict == "refuted"
    assert inv_judge.judge_replaces_slice_copy(cuda).verdict == "confirmed"
    # the copies come from the edge lowering, but they are still there without the seed's named pass
    assert inv_judge.judge_edge_introduces_slice_copy(cuda).verdict == "partly"
    # other view copies were gone before the post-grad passes ran: the reinplace attribution only partly holds
    reinplace = inv_judge.judge_reinplace_misses_slice_copy(cuda)
    assert reinplace.verdict == "partly" and "already gone" in reinplace.evidence
    # the one copy kernel comes from permute_copy, a kind the pass did not leave: no remaining kind is copied
    other = inv_judge.judge_other_view_ops(cuda)
    assert other.verdict == "refuted" and other.data["remaining"] == {"aten.view_copy": 3}
    assert "leaves 3 view-copy nodes" in other.evidence and other.data["compiled_models"] == ["kv_decode"]


def test_missing_pass_is_not_an_error():
    res = _results("cpu")
    res.pass_info = {"found": False, "executorch": "0.0", "tried": []}
    for fn in (inv_judge.judge_replaces_slice_copy, inv_judge.judge_more_efficient, inv_judge.judge_equivalent):
        assert fn(res).verdict == "not_reproduced"


def test_tables_are_named_frames_of_the_results_and_judges_stand_without_show():
    import ast
    import inspect

    import pandas as pd

    from yolo26kit.investigations.view_copy import judge

    res = _results("cuda")
    assert list(inv.TABLES) == ["pass", "view_ops", "pass_probes", "generated_code", "kernel_calls", "post_grad",
                                "runtime", "timing_rounds", "equivalence"]
    assert all(isinstance(fn(res), pd.DataFrame) for fn in inv.TABLES.values())
    assert inv.show.equivalence_table(res)["where"].tolist() == [r["where"] for r in inv.measure.equivalence_rows(res)]
    imported = {n.module for n in ast.walk(ast.parse(inspect.getsource(judge))) if isinstance(n, ast.ImportFrom)}
    assert "show" not in imported and not any(m and m.endswith(".show") for m in imported)


def test_every_judged_claim_has_a_judge_and_the_ledger_is_well_formed():
    ledger = findings.claims_of("view_copy")
    judged = {c["id"] for c in ledger if not c.get("untestable")}
    assert judged == set(inv.JUDGES)
    assert all(c["question"] in ("bites", "fix", "cost", "other") for c in ledger)


@pytest.mark.notebook
def test_notebook_runs_on_cpu(run_notebook):
    results = run_notebook("view_copy", models=["kv_decode"], compile_models=["kv_decode"], d_model=16, n_heads=2,
                           n_layers=1, max_seq=8, decode_steps=2, min_run_time=0.05)
    verdicts = {c["id"]: c["verdict"] for c in results["claims"]}
    assert set(verdicts) == set(inv.JUDGES)
    assert verdicts["view_copy.replaces_slice_copy"] == "confirmed"
    # judged from the CPU rounds, left inconclusive: the seed's statement is about the CUDA back-end
    assert verdicts["view_copy.more_efficient"] == "inconclusive"
    assert {"round", "ratio_without_over_with"} <= set(results["tables"]["timing_rounds"][0])
    rows = results["tables"]["view_ops"]
    assert {"model", "op", "count_before", "count_after"} <= set(rows[0])
    json.dumps(results)


def test_time_rounds_go_on_until_the_rule_decides(monkeypatch):
    """The rounds measure varies with what is timed: a clear ratio stops at five rounds, ratios around 1 run on to
    the cap, and a slower with-pass package gives ratios below 1."""
    from yolo26kit.bench.timing import RoundTiming
    from yolo26kit.investigations.view_copy import measure

    def fake(per_round: dict[str, list[float]]):
        calls = iter(range(100))

        def measure_rounds(fns, device, rounds, min_run_time):
            i = next(calls)
            return {label: RoundTiming(label, 1.0, per_round[label][i % len(per_round[label])], 0.01, 0.9, 1.1, 3,
                                       (per_round[label][i % len(per_round[label])],)) for label in fns}
        return measure_rounds

    monkeypatch.setattr(measure.aoti_backend, "load_package", lambda path: (lambda *a: None))
    packages = {"with pass": "a.pt2", "without pass": "b.pt2"}
    for per_round, n, below in (({"with pass": [1.0], "without pass": [2.0]}, 5, False),
                                ({"with pass": [1.0], "without pass": [1.05, 0.95]}, 15, None),
                                ({"with pass": [2.0], "without pass": [1.0]}, 5, True)):
        monkeypatch.setattr(measure.timing, "measure_rounds", fake(per_round))
        out = inv.measure.step_time_rounds(inv.model.Spec(), packages, 5, 0.01)
        ratios = [a / b for a, b in zip(out["without pass"]["round_medians_ms"], out["with pass"]["round_medians_ms"])]
        assert len(ratios) == n
        if below is not None:
            assert all((r < 1) == below for r in ratios)


def test_packages_the_pass_left_alike_are_not_timed():
    graph = {"after": {"aten.view_copy": 3}, "nodes": [{"converted": False}]}
    assert not inv.measure.pass_changed(isolate.Outcome("g", "ok", value=graph))
    graph["nodes"].append({"converted": True})
    assert inv.measure.pass_changed(isolate.Outcome("g", "ok", value=graph))
    assert inv.measure.pass_changed(isolate.Outcome("g", "error", error="x"))  # unknown: timed anyway


def test_other_view_ops_names_what_was_not_compiled_and_the_release_that_covers_it():
    res = _results("cuda")
    res.pass_info["executorch"] = "1.2.0"
    yolo = {"before": {"aten.split_copy.Tensor": 9}, "after": {"aten.split_copy.Tensor": 9}, "nodes": []}
    res.graphs["yolo26n"] = isolate.Outcome("g", "ok", value=yolo)
    other = inv_judge.judge_other_view_ops(res)
    assert other.data["compiled_models"] == ["kv_decode"] and "aten.split_copy.Tensor" not in other.data["remaining"]
    assert "yolo26n: aten.split_copy.Tensor×9 left, not compiled" in other.evidence
    later = inv.measure.load_release_coverage()
    assert f"the pass covers split_copy from executorch {later['executorch']}" in other.evidence
    assert other.run["executorch"] == "1.2.0"
    res.pass_info["executorch"] = later["executorch"]  # the run's own release: nothing later to name
    assert "the pass covers" not in inv_judge.judge_other_view_ops(res).evidence


def test_a_model_the_pass_left_alone_needs_no_package_comparison():
    res = _results("cuda")
    untouched = {"exported": {}, "before": {"aten.view_copy": 3}, "after": {"aten.view_copy": 3}, "equal": True,
                 "max_abs": 0.0, "edge_source": "test", "nodes": []}
    res.graphs["yolo26n"] = isolate.Outcome("g", "ok", value=untouched)
    failed = isolate.Outcome("compile", "error", error="InductorError: boom")
    res.cases += [inv.measure.Case(inv.model.Spec(model="yolo26n"), True, failed), inv.measure.Case(inv.model.Spec(model="yolo26n"), False, failed)]
    verdict = inv_judge.judge_equivalent(res)
    assert verdict.verdict == "confirmed" and verdict.data["same_graph"] == ["yolo26n"]
    assert "has no view-copy node" in verdict.evidence and "failed alike" in verdict.evidence
    # a model whose graph the pass did change still needs its packages compared
    res.graphs["yolo26n"] = isolate.Outcome("g", "ok", value={**untouched, "nodes": [{"converted": True}]})
    assert inv_judge.judge_equivalent(res).verdict == "inconclusive"


def test_a_compile_that_failed_in_a_worker_names_the_worker_s_error(worker_failure, triton_float_offset_error):
    """Inductor's own error says only that a subprocess failed; the table and the evidence name what the worker raised
    (here Triton's, on a float32 index used as a pointer offset)."""
    res = _results("cuda")
    error, trace = worker_failure(triton_float_offset_error)
    failed = isolate.Outcome("compile", "error", error=error, traceback=trace)
    res.graphs["yolo26n"] = isolate.Outcome("g", "ok", value={"exported": {}, "before": {"aten.view_copy": 3},
                                                              "after": {"aten.view_copy": 3}, "equal": True,
                                                              "max_abs": 0.0, "edge_source": "test", "nodes": []})
    res.cases += [inv.measure.Case(inv.model.Spec(model="yolo26n"), p, failed) for p in (True, False)]
    worker = "IncompatibleTypeErrorImpl('invalid operands of type pointer<int64> and triton.language.float32')"
    assert worker in inv_judge.judge_equivalent(res).evidence
    table = inv.TABLES["generated_code"](res)
    assert table[table["model"] == "yolo26n"]["error"].str.contains(worker, regex=False).all()


def test_a_warm_compile_step_keys_its_package_without_exporting_again(tmp_path, monkeypatch):
    from yolo26kit.bench import artifacts
    from yolo26kit.investigations.view_copy import measure

    monkeypatch.setenv(artifacts.CACHE_ENV, str(tmp_path))
    made: list[int] = []
    real = measure.backend_edge_program
    monkeypatch.setattr(measure, "backend_edge_program", lambda *a: made.append(1) or real(*a))
    cold = measure.device_program(TINY, True)
    key, facts = artifacts.program_key(cold), cold.facts()
    assert made == [1] and facts["edge_source"]
    warm = measure.device_program(TINY, True)
    assert artifacts.program_key(warm) == key and warm.facts() == facts
    assert made == [1]  # served by the memo: no export, no edge lowering
    assert artifacts.program_key(measure.device_program(TINY, False)) != key  # the pass makes another program
    assert made == [1, 1]


def test_each_package_runs_only_after_every_compile_has_ended(monkeypatch):
    """On CPU a package's OpenMP threads beside a compile step wait on a preempted peer at every kernel: the
    load+run steps start once no compile runs, one at a time. On CUDA each runs once its own compile is done."""
    import threading

    from yolo26kit.investigations.view_copy import measure

    running = {measure.step_compile: 0, measure.step_run: 0}
    beside: list[int] = []  # at each load+run's start: the compile and load+run steps running
    lock = threading.Lock()

    def fake_step(fn, *args, step="", **kwargs):
        with lock:
            if fn is measure.step_run:
                beside.append(running[measure.step_compile] + running[measure.step_run])
            if fn in running:
                running[fn] += 1
        time.sleep(0.5 if fn is measure.step_compile and step.startswith("yolo26n") else 0.05)  # the long pole
        with lock:
            if fn in running:
                running[fn] -= 1
        if fn is measure.step_run:
            return [isolate.Outcome(step, "ok", value={})]
        return isolate.Outcome(step, "ok", value={"package": f"{step}.pt2"} if fn is measure.step_compile else {})

    monkeypatch.setattr(measure.isolate, "run_step", fake_step)
    monkeypatch.setattr(measure.aoti, "run_step", fake_step)
    monkeypatch.setattr(measure, "pass_changed", lambda graph: False)  # no rounds: the order of the steps is the test
    args = (["kv_decode", "yolo26n"], ["kv_decode", "yolo26n"])
    res = measure.investigate(*args, "cpu", 16, 2, 1, 16, 1, 2, 64, 0, 60, 0.01, workers=4)
    assert beside == [0, 0, 0, 0] and all(c.run is not None for c in res.cases)
    beside.clear()
    res = measure.investigate(*args, "cuda", 16, 2, 1, 16, 1, 2, 64, 0, 60, 0.01, workers=4)
    assert len(beside) == 4 and max(beside) > 0 and all(c.run is not None for c in res.cases)
