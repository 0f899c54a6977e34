"""index_dtype: the seed's legacy top-k, the gather fix, upstream detection, and the notebook end to end."""

import importlib
import json
from dataclasses import replace

import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from yolo26kit import findings
from yolo26kit.backends import executorch_cuda, executorch_cuda_releases
from yolo26kit.bench import artifacts, detections, graphs, isolate
from yolo26kit.investigations import index_dtype as inv

inv_judge = importlib.import_module("yolo26kit.investigations.index_dtype.judge")  # the module; the package's judge is the function


@settings(max_examples=60, deadline=None)
@given(batch=st.integers(1, 6), nc=st.integers(1, 90), max_det=st.integers(1, 64), extra=st.integers(0, 300),
       ties=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_legacy_and_gather_are_bit_identical(batch, nc, max_det, extra, ties, seed):
    legacy, fixed = inv.model.PostprocessOnly("legacy", nc, max_det), inv.model.PostprocessOnly("gather", nc, max_det)
    preds = inv.model.random_preds(batch, max_det + extra, nc, seed=seed, ties=ties)
    with torch.no_grad():
        a, b = legacy(preds), fixed(preds)
    assert a.shape == (batch, max_det, 6)
    assert torch.equal(a, b)


def test_legacy_graph_has_advanced_indexing_and_gather_has_none():
    scans = {}
    for variant in ("legacy", "gather"):
        spec = inv.model.Spec(variant, imgsz=64 * 5)
        scans[variant] = graphs.scan(inv.measure.export(spec).graph_module)
    assert graphs.count(scans["legacy"], "aten.index.Tensor") == 1
    assert graphs.all_int64(scans["legacy"]) is True
    assert graphs.count(scans["gather"], "aten.index.Tensor") == 0
    assert graphs.count(scans["gather"], "aten.gather") == 3


def test_legacy_cast_is_legacy_with_no_op_casts():
    scans = {v: graphs.scan(inv.measure.export(inv.model.Spec(v, imgsz=320)).graph_module) for v in ("legacy", "legacy_cast")}
    assert graphs.count(scans["legacy_cast"], "aten.index.Tensor") == 1 and graphs.all_int64(scans["legacy_cast"])
    preds = inv.model.random_preds(2, 500, 7, seed=3)
    with torch.no_grad():
        assert torch.equal(inv.model.PostprocessOnly("legacy", 7, 50)(preds), inv.model.PostprocessOnly("legacy_cast", 7, 50)(preds))


@pytest.mark.parametrize("op,target", [("topk", "aten.topk"), ("index", "aten.index.Tensor"),
                                       ("index_put", "aten.index_put")])
def test_op_probes_export_the_operator_they_name(op, target):
    spec = inv.model.Spec("legacy", scope=f"op_{op}", imgsz=320)
    names = [graphs.target_name(n) for n in inv.measure.export(spec).graph.nodes if n.op == "call_function"]
    assert any(n.startswith(target) for n in names), names
    assert spec.tag == f"op_{op}"


def test_probe_plan_needs_cuda_except_the_cast_export_and_the_workaround():
    base = inv.model.Spec("legacy", device="cpu")
    assert [(s.variant, p) for s, p in inv.measure.probe_plan(base, list(inv.measure.PROBES), "gather")] == [
        ("legacy_cast", ["export"]), ("gather_floatdiv", ["aoti", "et_xnnpack"])]
    cuda = inv.measure.probe_plan(inv.model.Spec("legacy", device="cuda"), list(inv.measure.PROBES), "gather")
    tags = [s.tag for s, _ in cuda]
    assert "backbone-gather" in tags and "backbone-gather-conv_aten+triton" in tags and "full-gather-conv_aten+triton" in tags
    assert len(set(tags)) == len(tags) and all(p[-1] == "et_cuda" for _, p in cuda)


def test_workaround_variant_matches_gather_and_leaves_no_integer_division():
    """The root cause's workaround gives the gather top-k's detections with no floor division in its graph."""
    preds = inv.model.random_preds(2, 336, 80, seed=3)
    outs = {v: inv.model.PostprocessOnly(v, 80)(preds) for v in ("gather", "gather_floatdiv")}
    assert torch.equal(outs["gather"], outs["gather_floatdiv"])
    program = torch.export.export(inv.model.PostprocessOnly("gather_floatdiv", 80).eval(), (preds,))
    targets = {str(n.target) for n in program.graph.nodes if n.op == "call_function"}
    assert not any("floor_divide" in t or "Tensor_mode" in t for t in targets), targets


def test_division_variants_show_what_they_return():
    """The division variants' reading: eager's dtype and values, a float quotient, other values, a failure."""
    row = {"ok": True, "eager dtype": "int64", "aoti dtype": "int64", "equal": True}
    assert inv.division.verdict_of(row) == "right"
    assert inv.division.verdict_of({**row, "aoti dtype": "float32", "equal": False}) == "float"
    assert inv.division.verdict_of({**row, "equal": False}) == "wrong"
    assert inv.division.verdict_of({**row, "ok": False}) == "fails"
    x, src = inv.division.inputs("cpu")
    assert (x < 0).any() and (x >= 0).any()  # a truncating floor shows only on negative dividends
    eager = {v: inv.division.Division(v)(x, src) for v in inv.division.VARIANTS}
    assert torch.equal(eager["scalar"], eager["tensor"]) and eager["tensor"].dtype == torch.int64
    assert torch.equal(eager["gather"], eager["workaround"])


def test_longest_cells_are_expected_first():
    cells = [(inv.model.Spec("legacy"), "eager"), (inv.model.Spec("legacy", scope="full"), "et_xnnpack"), (inv.model.Spec("legacy"), "aoti")]
    ranked = sorted(cells, key=lambda t: -inv.measure.expected_seconds(*t))
    assert [p for _, p in ranked] == ["aoti", "et_xnnpack", "eager"]


def _outcome(step, status="ok", value=None, error="", **details):
    o = isolate.Outcome(step, status, 1.0, value=value, error=error)
    o.details.update(details)
    return o


def test_aoti_cell_shows_both_load_rows_and_counts_the_workaround():
    out = inv.model.random_preds(1, 300, 2, seed=0)[..., :6]
    cell = inv.measure.Cell(inv.model.Spec("legacy"), "aoti", [
        _outcome("c:compile", value={"package": "p"}),
        _outcome("c:load+run", "crash", error="child crashed with SIGSEGV", aoti_load="as_is",
                 cause="static_libstdcxx_locale_mix"),
        _outcome("c:load+run [fix]", value={"output": out}, aoti_load="system_libstdcxx")], {})
    cell.delta = detections.compare(out, out)
    rows = cell.rows()
    assert [(r["aoti_load"], r["outcome"], r["status"]) for r in rows] == [
        ("as_is", "crash", "❌"), ("system_libstdcxx", "ok", "✅")]
    assert rows[0]["cause"] == "static_libstdcxx_locale_mix" and cell.final.ok
    plain = inv.measure.Cell(inv.model.Spec("legacy"), "aoti", cell.outcomes[:2], {})
    assert plain.final.status == "crash" and len(plain.rows()) == 1


def test_only_a_step_that_makes_a_cached_artifact_counts_as_a_hit_or_a_miss():
    assert artifacts.served(_outcome("c:compile", value={"package": "p", "cached": True})) is True
    assert artifacts.served(_outcome("c:compile", value={"package": "p", "cached": False})) is False
    assert artifacts.served(_outcome("c:eager", value={"output": 1})) is None
    assert artifacts.served(_outcome("c:lower", "failed", error="boom")) is None


def _cuda_run(cells, probes, gpu_ok=True):
    gpu = _outcome("gpu", value={"available": gpu_ok, "matmul_sum": 64.0 ** 3 if gpu_ok else None})
    options = _outcome("opts", value={"max_autotune_conv_backends": "TRITON", "max_autotune_gemm_backends": "TRITON",
                                      "aot_inductor.link_libtorch": False})
    shims = _outcome("shims", value={"data/lib/libaoti_cuda_shims.so": ["aoti_torch_cuda_convolution"]})
    base = inv.model.Spec("legacy", device="cuda")
    return inv.measure.Run(base, cells, [], "", probes, gpu, options, shims)


NO_CHOICES = "InductorError: LoweringException: NoValidChoicesError: No choices to select. No choices exist for backend."
ALL_FAILED = "InductorError: LoweringException: NoValidChoicesError: No choices to select. All choices failed to compile for backend."
INDEX_ERROR = "LoweringException: AssertionError: indices must be int64, byte or bool. Got [torch.int64, torch.float32]"


def test_cuda_probe_judges_from_synthetic_cells():
    cuda = inv.model.Spec("legacy", device="cuda")
    backbone = replace(cuda, variant="gather", scope="backbone")
    probes = [
        inv.measure.Cell(backbone, "et_cuda", [_outcome("b:lower", "error", error=NO_CHOICES)], {}, "probe"),
        inv.measure.Cell(replace(backbone, conv_backends=inv.measure.ATEN_CONV), "et_cuda",
                 [_outcome("ba:lower", value={"shim_calls": ["aoti_torch_cuda_convolution"]}),
                  isolate.skipped("ba:run", "this executorch runtime has no CudaBackend")], {}, "probe"),
        *[inv.measure.Cell(replace(cuda, scope=f"op_{op}"), "et_cuda",
                   [_outcome("o", **({"status": "error", "error": "Lowering not implemented for backend: CudaDevice"}
                                     if op == "index_put" else {"value": {}}))], {}, "probe") for op in inv.model.OPS],
        inv.measure.Cell(replace(cuda, variant="legacy_cast"), "export",
                 [_outcome("e", value={"scan": [{"target": "aten.index.Tensor", "index_dtypes": ["int64", "int64"]}]})],
                 {}, "probe"),
        inv.measure.Cell(replace(cuda, variant="legacy_cast"), "et_cuda", [_outcome("l", "error", error=INDEX_ERROR)], {}, "probe"),
    ]
    cells = [inv.measure.Cell(cuda, "et_cuda", [_outcome("l", "error", error=INDEX_ERROR)], {})]
    res = inv.measure.Results(_cuda_run(cells, probes), pd.DataFrame())
    # 'No choices exist': no candidate at all, so no worker compiled anything, whatever a subprocess sees
    judged = inv_judge.judge_triton_worker_gpu(res)
    assert judged.verdict == "refuted" and "No choices exist" in judged.evidence
    assert judged.evidence.startswith("backbone lowering") and judged.run["backend_options"] == "defaults"
    assert inv_judge.judge_triton_worker_gpu(inv.measure.Results(_cuda_run(cells, probes, gpu_ok=False), pd.DataFrame())).verdict \
        == "refuted"
    failed = [inv.measure.Cell(backbone, "et_cuda", [_outcome("b:lower", "error", error=ALL_FAILED)], {}, "probe"), *probes[1:]]
    assert inv_judge.judge_triton_worker_gpu(inv.measure.Results(_cuda_run(cells, failed, gpu_ok=False), pd.DataFrame())).verdict \
        == "confirmed"
    assert inv_judge.judge_triton_worker_gpu(inv.measure.Results(_cuda_run(cells, failed), pd.DataFrame())).verdict == "refuted"
    assert inv_judge.judge_no_aten_fallback(res).verdict == "refuted"
    assert inv_judge.judge_backbone_static(res).verdict == "refuted"
    judged = inv_judge.judge_postprocess_ops(res)
    assert judged.verdict == "partly" and judged.data["ops"]["index_put"] == "not implemented"
    assert judged.evidence.startswith("2 of 3")
    assert inv_judge.judge_explicit_cast(res).verdict == "confirmed"
    assert inv_judge.judge_et_cuda_float_index(res).verdict == "confirmed"


def test_kit_options_and_unfinished_lowerings_decide_nothing():
    """A lowering under kit options is recorded as such (settle: inconclusive); a timeout or a crash never confirms."""
    from yolo26kit import verdicts

    kit = inv.model.Spec("gather", scope="backbone", device="cuda", autotune=False)
    assert kit.backend_options == "kit: max_autotune=False" and inv.model.Spec("legacy").backend_options == "defaults"
    assert replace(kit, autotune=True, conv_backends=inv.measure.ATEN_CONV).backend_options == \
        "kit: max_autotune_conv_backends='ATEN,TRITON'"
    res = inv.measure.Results(_cuda_run([], [inv.measure.Cell(kit, "et_cuda", [_outcome("b", "error", error=NO_CHOICES)], {}, "probe")]),
                      pd.DataFrame())
    judged = inv_judge.judge_backbone_static(res)
    final, record = verdicts.settle(judged, findings.ledger_entry("index_dtype.backbone_static_cuda")["conditions"])
    assert final.verdict == "inconclusive" and "backend_options" in record["differ"] and "imgsz" in record["differ"]
    aten = replace(kit, autotune=True, conv_backends=inv.measure.ATEN_CONV)
    for status in ("timeout", "crash"):
        cell = inv.measure.Cell(aten, "et_cuda", [_outcome("ba", status, error="no result after 300 s")], {}, "probe")
        assert inv_judge.judge_no_aten_fallback(inv.measure.Results(_cuda_run([], [cell]), pd.DataFrame())).verdict == "inconclusive"


def test_whole_model_cuda_lowering_is_a_skipped_row_when_not_asked_for():
    cell = inv.measure.run_path(inv.model.Spec("gather", scope="full", device="cuda"), "et_cuda", 10.0, whole_model_cuda=False)
    assert cell.final.status == "skipped" and cell.final.error == inv.measure.WHOLE_MODEL_SKIP
    assert cell.row()["backend options"] == "defaults"
    for gpu_ok in (True, False):
        res = inv.measure.Results(_cuda_run([], [cell], gpu_ok), pd.DataFrame())
        res.run.full_cells.append(cell)
        judged = inv_judge.judge_et_cuda_full_model(res)  # no part of the model lowered either
        assert judged.verdict == "inconclusive" and "--profile full runs it" in judged.evidence
        assert judged.basis == "none"  # a skipped lowering measured nothing
        # the failure the claim explains never ran, so it waits for the whole-model lowering either way; what was
        # measured of the cause it names (a subprocess reaching the GPU) is told
        worker = inv_judge.judge_triton_worker_gpu(res)
        assert worker.verdict == "inconclusive" and "--profile full runs it" in worker.evidence
        assert ("ran a matmul on the GPU" in worker.evidence) == gpu_ok


def test_every_ledger_claim_has_one_judge():
    ledger = {c["id"] for c in findings.judged_claims_of("index_dtype")}
    assert ledger == set(inv.JUDGES)
    assert all(c.get("question") in ("bites", "fix", "cost", "other")
               for c in json.loads(open(findings.DATA / "claims" / "index_dtype.json").read()))


def test_unknown_variant_is_rejected():
    with pytest.raises(ValueError, match="unknown variant"):
        inv.model.PostprocessOnly("fancy", 80)


def test_anchor_count_matches_the_head():
    assert inv.model.anchors_for(640) == 8400 and inv.model.anchors_for(320) == 2100


def test_compare_tolerates_order_but_not_different_detections():
    ref = inv.model.random_preds(1, 40, 2, seed=1)[..., :6]
    swapped = ref[:, [1, 0, *range(2, 40)]]
    d = detections.compare(swapped, ref)
    assert d["exact"] is False and d["match_rate"] == 1.0 and d["score_max_abs"] == 0.0 and detections.agrees(d)
    moved = ref.clone()
    moved[:, :4, :4] += 5.0  # 4 of 40 boxes elsewhere: 90 % matched
    assert detections.compare(moved, ref)["match_rate"] == pytest.approx(0.9) and not detections.agrees(detections.compare(moved, ref))
    assert not detections.agrees(detections.compare(ref + 5.0, ref))


def test_random_preds_scores_are_distinct_unless_ties_are_asked_for():
    distinct = inv.model.random_preds(2, 50, 7, seed=0)[..., 4:]
    assert all(row.unique().numel() == row.numel() for row in distinct)
    assert inv.model.random_preds(1, 50, 7, seed=0, ties=True)[..., 4:].unique().numel() <= 8


def test_lowering_error_details_reads_inductor_messages():
    text = ("torch._inductor.exc.LoweringException: AssertionError: indices must be int64, byte or bool. "
            "Got [torch.int64, torch.float32]\n  target: aten.index.Tensor\n  args[0]: TensorBox(x)\n  args[1]: [y, z]\n")
    d = inv.measure_root.lowering_error_details(text)
    assert d["target"] == "aten.index.Tensor" and "torch.float32" in d["dtypes"] and len(d["args"]) == 2


def test_tables_name_every_table_the_notebook_records():
    """show.TABLES: the notebook's recorded tables in its order, each a DataFrame of the run's Results (the root-cause
    tables empty until root_cause ran)."""
    import re
    from pathlib import Path

    import nbformat

    nb = nbformat.read(Path(__file__).parents[1] / "notebooks" / "index_dtype.ipynb", as_version=4)
    recorded = re.findall(r'found\.table\("(\w+)"', "\n".join(c.source for c in nb.cells if c.cell_type == "code"))
    assert list(inv.TABLES) == recorded
    scan = [{"target": "aten.index.Tensor", "index_dtypes": "int64", "arg_dtypes": ["float32", "int64"], "node": "n",
             "source": ""}]
    cells = [inv.measure.Cell(inv.model.Spec("legacy"), "export", [_outcome("e", value={"scan": scan})], {})]
    equiv = pd.DataFrame([{"case": 0, "batch": 1, "nc": 2, "anchors": 30, "max_det": 5, "ties": False,
                           "identical": True, "max |Δ|": 0.0}])
    res = inv.measure.Results(_cuda_run(cells, []), equiv, root={"passes": pd.DataFrame([{"pass": "SomePass"}])})
    tables = {name: make(res) for name, make in inv.TABLES.items()}
    assert all(isinstance(t, pd.DataFrame) for t in tables.values())
    assert len(tables["status"]) == len(tables["fx_scan"]) == len(tables["equivalence_summary"]) == 1
    assert tables["backend_passes"]["pass"].tolist() == ["SomePass"] and tables["lowering_errors"].empty


@pytest.mark.notebook
def test_notebook_end_to_end(run_notebook):
    results = run_notebook("index_dtype", imgsz=320, variants=["legacy", "gather", "upstream"],
                           paths=["eager", "export", "compile", "et_xnnpack"], full_model_paths=["et_xnnpack"],
                           equivalence_cases=20, step_timeout=300.0, device="cpu")
    verdicts = {c["id"]: c["verdict"] for c in results["claims"]}
    assert set(verdicts) == set(inv.JUDGES) and not results["missing_claims"]
    assert verdicts["index_dtype.gather_int64_ops"] == "confirmed"
    assert verdicts["index_dtype.explicit_cast_insufficient"] == "needs_cuda"
    assert verdicts["index_dtype.aoti_float_index"] == "error"  # aoti not among the paths of this test
    assert verdicts["index_dtype.fx_int64"] == "confirmed"
    assert verdicts["index_dtype.gather_equivalent"] == "confirmed"
    for claim in ("et_cuda_float_index", "et_cuda_full_model"):
        assert verdicts[f"index_dtype.{claim}"] == "needs_cuda"
    assert verdicts["index_dtype.gather_removes_index"] == "needs_cuda"  # graph half holds, CUDA half untestable
    assert verdicts["index_dtype.xnnpack_full_model"] in ("confirmed", "partly", "refuted")
    status = results["tables"]["status"]
    assert {(r["variant"], r["path"]) for r in status} >= {("legacy", "export"), ("gather", "et_xnnpack")}
    assert all(r["outcome"] == "ok" for r in status if r["path"] in ("eager", "export"))
    assert results["tables"]["fx_scan"] and results["tables"]["pipeline_stages"]
    assert results["environment"]["device_type"] == "cpu"


def test_cuda_lowerings_are_cached_by_program_and_options_and_failures_are_not(tmp_path, monkeypatch):
    from yolo26kit.bench import artifacts

    monkeypatch.setenv(artifacts.CACHE_ENV, str(tmp_path / "cache"))
    program = torch.export.export(torch.nn.Linear(3, 2), (torch.ones(1, 3),))
    calls = []

    def lower(folder):
        calls.append(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "m.pte").write_bytes(b"pte")
        (folder / "m.ptd").write_bytes(b"weights")
        return {"pte_name": "m.pte"}

    first = artifacts.lowered_folder(program, "cuda", {"backend_options": "defaults"}, tmp_path / "a", lower)
    again = artifacts.lowered_folder(program, "cuda", {"backend_options": "defaults"}, tmp_path / "b", lower)
    assert (first["cached"], again["cached"], len(calls)) == (False, True, 1)
    assert (tmp_path / "b" / "m.ptd").read_bytes() == b"weights" and not (tmp_path / "b" / "facts.json").exists()
    artifacts.lowered_folder(program, "cuda", {"backend_options": "kit: max_autotune=False"}, tmp_path / "c", lower)
    assert len(calls) == 2  # other options, another entry

    def broken(folder):
        raise RuntimeError("All choices failed to compile")

    for _ in range(2):
        with pytest.raises(RuntimeError):
            artifacts.lowered_folder(program, "cuda", {"backend_options": "x"}, tmp_path / "d", broken)
    assert len(list((tmp_path / "cache" / "executorch").iterdir())) == 2


def test_extra_judge_cases():
    """Cases beyond one per verdict (tests/judge_cases/index_dtype.py EXTRA): the graph half refuting on a CPU run,
    a whole-model lowering not run or not finished, 'No choices exist' refuting the worker story, a runtime without
    the shim, the ATen probe under kit options."""
    import importlib.util
    from pathlib import Path

    from yolo26kit import verdicts

    path = Path(__file__).parent / "judge_cases" / "index_dtype.py"
    spec = importlib.util.spec_from_file_location("judge_cases_index_dtype_extra", path)
    cases = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cases)
    for claim_id, expected, factory in cases.EXTRA:
        judged = inv.JUDGES[claim_id](factory())
        final, _ = verdicts.settle(judged, findings.ledger_entry(claim_id).get("conditions", {}))
        assert final.verdict == expected, f"{claim_id} {factory.__name__}: {final.verdict} ({final.evidence[:200]})"


def test_cuda_preprocess_input_is_captured_on_a_cpu_machine():
    from yolo26kit.backends import executorch_cuda

    class Slice(torch.nn.Module):
        def forward(self, x):
            return x[:, :2].relu()

    program, source = executorch_cuda.preprocess_input(torch.export.export(Slice(), (torch.ones(2, 4),)))
    assert source in ("to_edge", "CudaBackend.preprocess input (to_edge_transform_and_lower + CudaPartitioner)")
    assert any(n.op == "call_function" for n in program.graph_module.graph.nodes)


def test_a_lowered_program_runs_through_the_backend_runner(tmp_path):
    """executorch_cuda.run loads a .pte (with any .ptd beside it) and runs forward: here a tiny XNNPACK program."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    from yolo26kit.backends import executorch_cuda

    model, x = torch.nn.Linear(3, 2).eval(), torch.ones(1, 3)
    pte = tmp_path / "m.pte"
    pte.write_bytes(to_edge_transform_and_lower(torch.export.export(model, (x,)),
                                                partitioner=[XnnpackPartitioner()]).to_executorch().buffer)
    out = executorch_cuda.run(pte, (x,))[0]
    with torch.no_grad():
        assert torch.allclose(out, model(x), atol=1e-5)


def test_postprocess_program_is_the_same_whatever_the_random_state():
    """Its head's (unused) weights are seeded, so the compile cache keys its lowerings alike in every process."""
    from yolo26kit.bench.artifacts import program_key

    spec = inv.model.Spec(variant="gather", scope="postprocess", nc=4)
    first = program_key(inv.measure.export(spec))
    torch.rand(1000)  # another process, or another step before it, draws other numbers first
    assert program_key(inv.measure.export(spec)) == first
    assert program_key(inv.measure.export(replace(spec, seed=1))) != first


MISSING_TRACEBACK = ("Traceback (most recent call last):\n  ...\nRuntimeError: Method forward missing fallback kernels "
                     "(2 total):\n  - aoti_torch_cuda_convolution\n  - aten::split_copy.Tensor\n"
                     "Please add them to the AOTI backend.\n")


def test_missing_kernels_reads_the_back_ends_list():
    assert executorch_cuda_releases.missing_kernels(MISSING_TRACEBACK) == ["aoti_torch_cuda_convolution", "aten::split_copy.Tensor"]
    assert executorch_cuda_releases.missing_kernels("RuntimeError: Method forward missing fallback kernels (1 total)") == []
    assert executorch_cuda_releases.missing_kernels(NO_CHOICES) == []


def test_failed_lowerings_name_the_kernels_the_back_end_lacks():
    cuda = inv.model.Spec("legacy", device="cuda")
    backbone = replace(cuda, variant="gather", scope="backbone")
    lowering = isolate.Outcome("b:lower", "error", 1.0, error="RuntimeError: Method forward missing fallback kernels "
                               "(2 total):", traceback=MISSING_TRACEBACK)
    probes = [inv.measure.Cell(backbone, "et_cuda", [lowering], {}, "probe"),
              inv.measure.Cell(replace(backbone, conv_backends=inv.measure.ATEN_CONV), "et_cuda", [lowering], {}, "probe")]
    res = inv.measure.Results(_cuda_run([], probes), pd.DataFrame())
    judged = inv_judge.judge_backbone_static(res)
    assert judged.verdict == "refuted"
    assert "(missing: aoti_torch_cuda_convolution, aten::split_copy.Tensor)" in judged.evidence
    assert judged.data["missing"] == ["aoti_torch_cuda_convolution", "aten::split_copy.Tensor"]
    judged = inv_judge.judge_no_aten_fallback(res)
    assert judged.verdict == "confirmed" and "aten::split_copy.Tensor" in judged.evidence


def test_a_view_copy_the_release_does_not_map_is_named_as_the_release_s_gap(monkeypatch):
    """The backbone's refutation says which view-copy ops this ExecuTorch's view pass maps when a missing kernel is
    one it leaves; nothing is added once the pass maps it (a later release) or the missing kernel is no view copy."""
    from yolo26kit.backends import executorch_cuda

    backbone = inv.model.Spec("gather", scope="backbone", device="cuda")
    lowering = isolate.Outcome("b:lower", "error", 1.0, error="RuntimeError: Method forward missing fallback kernels "
                               "(2 total):", traceback=MISSING_TRACEBACK)
    res = inv.measure.Results(_cuda_run([], [inv.measure.Cell(backbone, "et_cuda", [lowering], {}, "probe")]), pd.DataFrame())
    monkeypatch.setattr(executorch_cuda, "view_pass_targets", lambda: ["select_copy.int", "slice_copy.Tensor"])
    judged = inv_judge.judge_backbone_static(res)
    assert judged.verdict == "refuted"
    assert "view pass turns select_copy.int, slice_copy.Tensor into views, not aten::split_copy.Tensor" in judged.evidence
    monkeypatch.setattr(executorch_cuda, "view_pass_targets", lambda: ["slice_copy.Tensor", "split_copy.Tensor"])
    assert "view pass" not in inv_judge.judge_backbone_static(res).evidence
    assert executorch_cuda_releases.VIEW_COPY_KERNEL.fullmatch("aten::split_copy.Tensor") and not executorch_cuda_releases.VIEW_COPY_KERNEL.fullmatch(
        "aoti_torch_cuda_convolution")


def test_view_pass_targets_reads_the_installed_pass():
    pytest.importorskip("executorch.backends.aoti.passes.replace_view_copy_with_view")
    from yolo26kit.backends import executorch_cuda

    mapped = executorch_cuda.view_pass_targets()
    assert "slice_copy.Tensor" in mapped and all("::" not in op for op in mapped)


def test_an_unreproduced_no_choices_failure_says_what_a_subprocess_sees():
    full = inv.model.Spec("gather", scope="full", device="cuda")
    other = "InductorError: RuntimeError: Failed to run autotuning code block: An exception occurred in a subprocess"
    cell = inv.measure.Cell(full, "et_cuda", [_outcome("f:lower", "error", error=other)], {}, "full")
    for gpu_ok, said in ((True, True), (False, False)):
        res = inv.measure.Results(_cuda_run([], [], gpu_ok=gpu_ok), pd.DataFrame())
        res.run.full_cells.append(cell)
        judged = inv_judge.judge_triton_worker_gpu(res)
        assert judged.verdict == "not_reproduced" and "failed otherwise" in judged.evidence
        assert ("ran a matmul on the GPU (sum 262144.0)" in judged.evidence) == said


def test_a_triton_compile_error_in_a_worker_is_named_with_its_cause(worker_failure, triton_float_offset_error):
    """CompilationError's own line says only where ("at 2:20:"); its cause follows the quoted kernel source."""
    error, trace = worker_failure(triton_float_offset_error)
    named = ("triton.compiler.errors.CompilationError: at 2:20: IncompatibleTypeErrorImpl('invalid operands of type "
             "pointer<int64> and triton.language.float32')")
    # the step's text goes on with its log: other workers' warnings are no cause (seen on an H200)
    log = "W1128 22:55:21.672000 1046 torch/_inductor/ir.py:8256] aten.split_copy.Tensor is missing a c-shim"
    assert executorch_cuda.subprocess_error(trace) == executorch_cuda.subprocess_error(f"{trace}\n{log}") == named
    # a CompilationError whose message lost its quoted source and caret keeps its own line alone
    bare = f"{error}\n{executorch_cuda.SUBPROCESS_FAILURE}:\n\ntriton.compiler.errors.CompilationError: at 24:20:\n{log}"
    assert executorch_cuda.subprocess_error(bare) == "triton.compiler.errors.CompilationError: at 24:20:"


def test_a_failure_in_a_compile_worker_names_the_worker_s_error(worker_failure):
    error, trace = worker_failure(ValueError("invalid operands of type pointer<int64> and "
                                                        "triton.language.float32"))
    assert executorch_cuda.SUBPROCESS_FAILURE in error and "ValueError" not in error
    assert executorch_cuda.subprocess_error(trace) == ("ValueError: invalid operands of type pointer<int64> and "
                                           "triton.language.float32")
    assert executorch_cuda.subprocess_error("RuntimeError: Method forward missing fallback kernels (1 total)") == ""
    full = inv.model.Spec("gather", scope="full", device="cuda")
    cell = inv.measure.Cell(full, "et_cuda", [isolate.Outcome("f:lower", "error", 1.0, error=error, traceback=trace)], {}, "full")
    res = inv.measure.Results(_cuda_run([], []), pd.DataFrame())
    res.run.full_cells.append(cell)
    judged = inv_judge.judge_et_cuda_full_model(res)
    assert judged.verdict == "partly"
    assert "(the worker raised ValueError: invalid operands" in judged.evidence
    assert "the float32 index reaches a Triton kernel as a pointer offset" in judged.evidence
    error, trace = worker_failure(RuntimeError("No valid triton configs. OutOfResources: shared memory"))
    cell.outcomes[0] = isolate.Outcome("f:lower", "error", 1.0, error=error, traceback=trace)
    judged = inv_judge.judge_et_cuda_full_model(res)
    assert "(the worker raised RuntimeError: No valid triton configs" in judged.evidence
    assert "pointer offset" not in judged.evidence


def test_plain_aoti_measured_with_the_cuda_lowering_skipped_stays_measured():
    out = inv.model.random_preds(1, 300, 2, seed=0)[..., :6]
    aoti = inv.measure.Cell(inv.model.Spec("legacy", device="cuda"), "aoti", [
        _outcome("c:compile", value={"package": "p"}),
        _outcome("c:load+run", value={"output": out}, aoti_load="as_is")], {})
    aoti.delta = detections.compare(out, out)
    skipped = inv.measure.Cell(inv.model.Spec("legacy", device="cuda"), "et_cuda", [isolate.skipped("l:et_cuda", "not asked for")], {})
    judged = inv_judge.judge_aoti_float_index(inv.measure.Results(_cuda_run([aoti, skipped], []), pd.DataFrame()))
    assert judged.verdict == "inconclusive" and "not lowered in this run" in judged.evidence
    assert judged.basis == "measured"  # plain AOTI ran; only the ExecuTorch side is missing
    alone = inv_judge.judge_et_cuda_float_index(inv.measure.Results(_cuda_run([aoti, skipped], []), pd.DataFrame()))
    assert alone.verdict == "inconclusive" and alone.basis == "none"


def test_the_view_pass_decides_which_view_copies_stay_fallbacks_and_the_record_matches_the_installed_release():
    """`chunk` becomes split_copy: a fallback kernel before the view pass; after it, one only where the installed
    release does not map it; the committed record of this release says what its pass maps."""
    from yolo26kit.backends import executorch_cuda
    from yolo26kit.investigations.index_dtype import releases

    class Chunk(torch.nn.Module):
        def forward(self, x):
            first, second = x.chunk(2, 1)
            return first * second

    program = torch.export.export(Chunk(), (torch.ones(1, 4, 2),))
    edge, _ = executorch_cuda.preprocess_input(program)
    assert executorch_cuda.unlowered_view_copies(edge.graph_module) == {"aten.split_copy.Tensor": 1}
    found = executorch_cuda.view_copy_fallbacks(program)
    maps = executorch_cuda.view_pass_targets()
    assert found["view_copies"] == {"aten.split_copy.Tensor": 1}
    assert found["left"] == ({} if "split_copy.Tensor" in maps else {"aten.split_copy.Tensor": 1})
    record = next((r for r in releases.records() if r["executorch"] == found["executorch"]), None)
    assert record is None or record["maps"] == maps


def test_a_later_release_fixes_only_the_view_copies_its_pass_maps():
    from yolo26kit.investigations.index_dtype import releases

    later = {"executorch": "1.5.1", "maps": ["split_copy.Tensor"], "left": {}}
    leaves = {"executorch": "1.6.0", "maps": ["split_copy.Tensor"], "left": {"aten.unbind_copy.int": 2}}
    assert releases.later_fix(["aten::split_copy.Tensor"], "1.2.0", [later]) == later
    assert releases.later_fix(["aten::split_copy.Tensor"], "1.5.1", [later]) is None  # not later than the run's
    assert releases.later_fix(["aten::split_copy.Tensor"], "1.2.0", [leaves]) is None  # its graph keeps a fallback
    assert releases.later_fix(["at::_ops::topk::call"], "1.2.0", [later]) is None  # no view pass fixes topk
    assert releases.later_fix([], "1.2.0", [later]) is None
