"""dynamic_shapes: guard parsing on real torch.export messages, the spec builder, the model fixes, the sweep, the notebook."""

from __future__ import annotations

import importlib

import pandas as pd
import pytest
import torch
from torch.export import Dim

from yolo26kit import catalog, findings
from yolo26kit.bench import dynamic_export, isolate, live
from yolo26kit.errors import BadParameter
from yolo26kit.investigations import dynamic_shapes as ds

ds_judge = importlib.import_module("yolo26kit.investigations.dynamic_shapes.judge")  # the module; the package's judge is the function


class Pyramid(torch.nn.Module):
    """YOLO's neck in miniature: two stride-2 convs and a top-down upsample + concat."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 4, 3, 2, 1)
        self.c2 = torch.nn.Conv2d(4, 4, 3, 2, 1)
        self.up = torch.nn.Upsample(None, 2, "nearest")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p1 = self.c1(x)
        return torch.cat([self.up(self.c2(p1)), p1], 1)


class TopK(torch.nn.Module):
    """Detect.get_topk_index's `k = min(max_det, anchors)` in miniature."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.topk(min(4, x.shape[1]), dim=1).values


class Grid(torch.nn.Module):
    """make_anchors in miniature: a (h, w) meshgrid stacked to (h, w, 2)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, w = x.shape[2:]
        sy, sx = torch.meshgrid(torch.arange(h).type_as(x), torch.arange(w).type_as(x), indexing="ij")
        return torch.stack((sx, sy), -1).view(-1, 2) * x.mean()


class FlatGrid(torch.nn.Module):
    """The kit's fix for Grid: anchors from 1-D grids."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        anchors, _ = dynamic_export.anchors_from_1d_grids([x], [8.0], offset=0.0)
        return anchors.transpose(0, 1) * x.mean()


def _violation(module: torch.nn.Module, x: torch.Tensor, dynamic: tuple) -> str:
    with pytest.raises(Exception) as info:
        torch.export.export(module, (x,), dynamic_shapes=dynamic, strict=False)
    return str(info.value)


# --- guard parsing on messages torch produces here ------------------------------------------------


def test_parse_stride_guard_violation():
    message = _violation(Pyramid(), torch.rand(1, 3, 64, 64),
                         ({2: Dim("height", min=32, max=128), 3: Dim("width", min=32, max=128)},))
    rows = dynamic_export.parse_violations(message)
    assert {r["dim"] for r in rows} == {"height", "width"}
    height = next(r for r in rows if r["dim"] == "height")
    assert height["kind"] == "guard not provable"
    assert dynamic_export.same_guard(height["guard"], "(1 + ((height-1) // 2)) == (2 + 2*((height-1) // 4))")
    assert height["range"] == "32 <= height <= 128"
    assert "height = 4*_height" in height["suggested_fix"] and "width" not in height["suggested_fix"]
    assert "height = 4*_height" in dynamic_export.suggested_fixes(message)


def test_parse_batch_specialization():
    message = _violation(Pyramid(), torch.rand(1, 3, 64, 64), ({0: Dim("batch", min=1, max=8)},))
    (row,) = dynamic_export.parse_violations(message)
    assert row["kind"] == "specialized" and row["dim"] == "batch" and row["guard"] == "batch == 1"
    assert row["suggested_fix"] == "batch = 1"
    assert "0/1 specialization" in ds.model.explain(message)[0]


def test_yolo_plain_dim_gives_the_seeds_guard():
    result = dynamic_export.export_spec("dim", min_size=160, max_size=320)
    assert result.status == "error" and "Constraints violated" in result.error
    guards = [r["guard"] for r in result.violations]
    assert any(dynamic_export.same_guard(g, ds.measure_export.SEED_GUARD) for g in guards), guards
    assert "height = 32*_height" in dynamic_export.suggested_fixes(result.message)


def test_readable_guard_forms():
    exported = "(1 + (((-1) + L['x'].size()[2]) // 16)) == (2 + 2*(((-1) + L['x'].size()[2]) // 32))"
    assert dynamic_export.same_guard(dynamic_export.readable(exported), ds.measure_export.SEED_GUARD)
    runtime = "4 + 4 * ((-1 + x.size()[3]) // 32) == 32"
    assert dynamic_export.readable(runtime) == "4 + 4 * ((width - 1) // 32) == 32"
    assert dynamic_export.guard_kind(dynamic_export.readable(runtime)) == "specialized to a constant"
    assert dynamic_export.guard_kind(dynamic_export.readable(exported)) == "stride alignment"
    assert dynamic_export.guard_kind("(1 + ((width - 1) // 2)) != 1") == "size is not 0/1"


def test_explain_known_errors():
    assert "sym_min" in ds.model.explain("LoweringFailed: AssertionError [graph calls Python functions: sym_min]")[0]
    assert "anchors" in ds.model.explain("The size of tensor a (1344) must match the size of tensor b (525)")[0]
    assert ds.model.explain("Propagating input shapes failed with code")[1] == "letterbox to a multiple of 32"
    runtime = "AssertionError: Guard failed: 1 + (height - 1) // 16 == 2 + 2 * ((height - 1) // 32)"
    assert ds.model.explain(runtime)[1] == "letterbox to a multiple of 32"
    assert ds.model.explain("AssertionError: Guard failed: height <= 320")[0] == "outside the exported range"
    assert ds.model.explain("something nobody has seen") == ("", "")


def test_case_logs_split_runtime_errors():
    log = ("[cpuinfo] noise\n@@yolo26kit case 0\n@@yolo26kit case 1\n"
           "[XNNExecutor.cpp:169] Internal Error: Propagating input shapes failed with code: x\n"
           "@@yolo26kit case 2\n[tensor_impl.cpp:156] Attempted to resize a bounded tensor\n")
    logs = ds.measure.case_logs(log)
    assert set(logs) == {1, 2}
    assert logs[1].startswith("Propagating input shapes failed") and "bounded" in logs[2]


# --- the causes ExecuTorch hits, reproduced in miniature -------------------------------------------


def test_min_exports_as_sym_min_which_the_edge_verifier_rejects():
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    ep = torch.export.export(TopK(), (torch.rand(1, 16),), dynamic_shapes=({1: Dim("n", min=8, max=64)},), strict=False)
    assert ds.measure.python_calls_in(ep) == ["sym_min"]
    with pytest.raises(AssertionError):
        to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])


def test_two_dynamic_dims_grid_fails_xnnpack_and_flat_grid_runs():
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower
    from executorch.runtime import Runtime

    dims = ({2: 32 * Dim("_h", min=1, max=4), 3: 32 * Dim("_w", min=1, max=4)},)
    x = torch.rand(1, 3, 64, 64)
    grid = torch.export.export(Grid(), (x,), dynamic_shapes=dims, strict=False)
    with pytest.raises(RuntimeError, match="only supports 1 dynamic dimension"):
        to_edge_transform_and_lower(grid, partitioner=[XnnpackPartitioner()]).to_executorch()
    flat = torch.export.export(FlatGrid(), (x,), dynamic_shapes=dims, strict=False)
    data = to_edge_transform_and_lower(flat, partitioner=[XnnpackPartitioner()]).to_executorch().buffer
    program = Runtime.get().load_program(data)
    method = program.load_method("forward")
    for size in (32, 96):
        y = torch.rand(1, 3, size, size)
        torch.testing.assert_close(method.execute((y,))[0], FlatGrid()(y), rtol=1e-4, atol=1e-3)
        torch.testing.assert_close(FlatGrid()(y), Grid()(y))


# --- spec builder, fixes, helpers ------------------------------------------------------------------


def test_spec_registry_is_consistent():
    for spec in dynamic_export.SPECS.values():
        assert spec.prep in dynamic_export.PREPS and spec.prep in dynamic_export.PREP_TEXT
        assert spec.shapes in dynamic_export.SHAPES and spec.shapes in dynamic_export.SHAPE_TEXT
    assert dynamic_export.RECOMMENDED in dynamic_export.SPECS


def test_shape_builders():
    (derived,) = dynamic_export.SHAPES["derived"](160, 320, 4)
    assert derived[2].root.min == 5 and derived[2].root.max == 10
    assert derived[2].fn(derived[2].root.min) == 160
    (plain,) = dynamic_export.SHAPES["dim"](160, 320, 4)
    assert (plain[3].min, plain[3].max) == (160, 320)
    (batch,) = dynamic_export.SHAPES["batch"](160, 320, 6)
    assert set(batch) == {0} and batch[0].max == 6
    assert dynamic_export.SHAPES["static"](160, 320, 4) is None
    assert dynamic_export.example_size(160, 320) == 256 and dynamic_export.example_size(128, 128) == 128


def test_default_sweep_has_multiples_and_not():
    sizes = ds.measure_export.default_sweep(128, 640)
    multiples = [s for s in sizes if s % 32 == 0 and s <= 640]
    assert 128 in multiples and 640 in multiples and dynamic_export.example_size(128, 640) in multiples
    assert any(s % 32 for s in sizes) and max(sizes) > 640


def test_anchor_count_and_flat_anchors_match_ultralytics():
    from ultralytics.utils.tal import make_anchors

    assert dynamic_export.anchor_count(256, 256) == 1344 and dynamic_export.anchor_count(160, 160) == 525
    feats = [torch.rand(1, 2, 20, 12), torch.rand(1, 2, 10, 6), torch.rand(1, 2, 5, 3)]
    points, strides = make_anchors(feats, torch.tensor([8.0, 16.0, 32.0]), 0.5)
    flat_points, flat_strides = dynamic_export.anchors_from_1d_grids(feats, [8.0, 16.0, 32.0])
    torch.testing.assert_close(flat_points, points.transpose(0, 1))
    torch.testing.assert_close(flat_strides, strides.transpose(0, 1))


def test_dynamic_ready_keeps_eager_results():
    x = live.image(1, 192, 160)
    ref = live.build_model()(x)
    fixed = dynamic_export.dynamic_ready(live.build_model(), min_size=160)
    assert ds.measure_export.compare(fixed(x), ref, 1e-5)["max_abs_diff"] == 0.0
    assert ds.measure_export.compare(fixed(live.image(1, 256, 256)), live.build_model()(live.image(1, 256, 256)), 1e-5)["agrees"]


def test_letterbox():
    x = torch.rand(2, 3, 250, 257)
    boxed = ds.model.letterbox(x)
    assert boxed.shape == (2, 3, 256, 288)
    assert torch.equal(boxed[..., :250, :257], x)
    assert torch.allclose(boxed[..., 250:, :], torch.tensor(ds.model.LETTERBOX_VALUE))
    same = torch.rand(1, 3, 64, 96)
    assert ds.model.letterbox(same) is same


def test_compare_is_order_insensitive():
    ref = torch.rand(1, 10, 6)
    swapped = ref[:, [1, 0, *range(2, 10)]]
    c = ds.measure_export.compare(swapped, ref, 1e-6)
    assert c["max_abs_diff"] > 0 and c["matched_diff"] == 0.0 and c["agrees"]
    assert not ds.measure_export.compare(ref[:, :8], ref, 1e-6)["agrees"]


def test_profiles_resolve_and_sizes_are_checked():
    inv = catalog.get("dynamic_shapes")
    for profile in ("quick", "full"):
        values = inv.resolve(profile, {})
        assert values["min_size"] % 32 == 0 and values["max_size"] % 32 == 0
    with pytest.raises(BadParameter):
        inv.resolve("quick", {"min_size": 100})
    with pytest.raises(BadParameter):
        inv.resolve("quick", {"specs": ["derived", "nonsense"]})


# --- the sweep on small sizes -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_sweep():
    run = ds.try_specs(["dim", "derived", "derived_warm", "derived_dynamic_head"], min_size=128, max_size=192, device="cpu")
    return run, ds.run_sweep(run, [128, 160, 192, 136])


def test_sweep_finds_the_cached_anchor_trap_and_its_fix(small_sweep):
    run, sweep = small_sweep
    assert [n for n, r in run.results.items() if not r.ok] == ["dim"]
    warm = run.results["derived_warm"]
    assert any(dynamic_export.guard_kind(g) == "specialized to a constant" for g in warm.guards)
    assert warm.ranges["height"].endswith("∈ [128, 192]")  # the range still claims every size
    summary = sweep.summary.set_index("spec")
    assert summary.loc["derived", "correct_at_every_multiple"]
    assert summary.loc["derived_dynamic_head", "correct_at_every_multiple"]
    assert not summary.loc["derived_warm", "correct_at_every_multiple"]
    d = sweep.detail
    trap = d[(d.spec == "derived_warm") & (d.height == 128) & (d.width == 128)].iloc[0]
    assert trap.program == "guard" and "must match the size" in trap.ranges_only_error
    odd = d[(d.spec == "derived") & (d.height == 136)].iloc[0]
    assert odd.eager == "error" and odd.program != "ok"


def _aoti_rows(device: str) -> pd.DataFrame:
    run = {"spec": "derived", "device": device, "step": "aoti run", "status": "ok", "eager": "ok", "rows": 300,
           "agrees": True, "matched_diff": 1e-5}
    return pd.DataFrame([
        {"spec": "derived", "device": device, "step": "aoti compile derived", "status": "ok", "error": ""},
        {**run, "height": 128, "width": 128}, {**run, "height": 192, "width": 192},
        {**run, "height": 168, "width": 168, "eager": "error", "agrees": None},
    ])


def test_verdicts_from_synthetic_backend_tables(small_sweep):
    run, sweep = small_sweep
    scan = pd.DataFrame([{"axis": a, "size": 64 + r, "mod_32": r % 32, "eager": "ok" if r % 32 in (0, 30) else "error",
                          "error": "" if r % 32 in (0, 30) else "RuntimeError: x"} for a in ("height", "width") for r in range(1, 33)])
    lowering = pd.DataFrame([{"program": "derived", "status": "error", "error": "LoweringFailed: sym_min"},
                             {"program": "derived_kit", "status": "ok", "error": ""}])
    runs = pd.DataFrame([{"program": "derived_kit", "status": "ok", "height": h, "width": h, "letterboxed": False,
                          "agrees": True, "matched_diff": 1e-4, "max_abs_diff": 1e-4} for h in (128, 160)])
    et = ds.measure.EtRun(lowering, runs)
    found = findings.Findings("dynamic_shapes", {})
    frame = ds.judge(found, run, sweep, scan, et, _aoti_rows("cuda")).set_index("claim")
    assert frame.loc["dynamic_shapes.plain_dim_guard_violation", "verdict"] == "confirmed"
    assert frame.loc["dynamic_shapes.fundamentally_blocked", "verdict"] == "refuted"
    assert frame.loc["dynamic_shapes.multiple_of_32", "verdict"] == "partly"
    # the stock model fails to lower: the seed's statement is about the model as ultralytics builds it
    assert frame.loc["dynamic_shapes.xnnpack_dynamic", "verdict"] == "refuted"
    aoti = frame.loc["dynamic_shapes.aoti_cuda_dynamic"]
    # plain AOT Inductor ran the sizes, but the seed's back-end is ExecuTorch CUDA: the run cannot decide
    assert aoti.verdict == "inconclusive" and "168x168 where eager raises" in aoti.evidence
    assert "backend is aoti, the seed's executorch-cuda" in aoti.evidence
    cpu = ds.judge(findings.Findings("dynamic_shapes", {}), run, sweep, scan, et, _aoti_rows("cpu")).set_index("claim")
    assert cpu.loc["dynamic_shapes.aoti_cuda_dynamic", "verdict"] == "needs_cuda"
    skipped = pd.DataFrame([{"spec": "derived", "device": "cpu", **isolate.skipped("aoti compile", "needs_cuda").row()}])
    none = ds.judge(findings.Findings("dynamic_shapes", {}), run, sweep, scan, et, skipped).set_index("claim")
    assert none.loc["dynamic_shapes.aoti_cuda_dynamic", "evidence"].endswith("AOTI steps skipped")


def test_guard_and_suggested_fix_judges(small_sweep):
    run, sweep = small_sweep
    res = ds.Results(run, sweep, pd.DataFrame(), ds.measure.EtRun(pd.DataFrame(), pd.DataFrame()), pd.DataFrame())
    div8 = ds_judge.judge_guard_div8(res)
    assert div8.verdict == "confirmed" and div8.evidence.startswith("2 of 4")
    assert div8.run["size_range"] == list(ds.measure_export.SEED_RANGE)  # judged under the seed's range
    fix = ds_judge.judge_suggested_fix(res)
    assert fix.verdict == "refuted" and any("32*_height" in f for f in fix.data["fixes"])
    assert fix.run["imgsz"] == ds.measure_export.SEED_EXAMPLE
    assert ds_judge.judge_blocked_000(res).verdict == ds_judge.judge_fundamentally_blocked(res).verdict == "refuted"


def test_aoti_verdict_reads_the_workaround_rows(small_sweep):
    run, sweep = small_sweep
    crash = {"spec": "derived", "device": "cuda", "step": "aoti load+run derived", "status": "crash",
             "error": "child crashed with SIGSEGV", "aoti_load": "as_is", "cause": "static_libstdcxx_locale_mix"}
    rows = pd.concat([_aoti_rows("cuda").assign(aoti_load="system_libstdcxx"), pd.DataFrame([crash])], ignore_index=True)
    res = ds.Results(run, sweep, pd.DataFrame(), ds.measure.EtRun(pd.DataFrame(), pd.DataFrame()), rows)
    judged = ds_judge.judge_aoti_cuda_dynamic(res)
    assert judged.verdict == "refuted" and "as-is load crashed, cause static_libstdcxx_locale_mix" in judged.evidence
    assert judged.run["backend"] == "aoti"  # the conditions rule (not the judge) makes this inconclusive
    only_crash = ds.Results(run, sweep, pd.DataFrame(), res.et, pd.concat([_aoti_rows("cuda").iloc[:1], pd.DataFrame([crash])]))
    assert ds_judge.judge_aoti_cuda_dynamic(only_crash).verdict == "inconclusive"


def test_backends_run_on_demand_without_background():
    calls = []
    backends = ds.measure.Backends({"executorch": lambda: calls.append("et") or "et", "aoti": lambda: calls.append("aoti") or "a"})
    assert calls == [] and backends.aoti() == "a" and calls == ["aoti"]
    started = ds.start_backends(["derived"], ["derived"], paths=["export"], device="cpu", min_size=128, max_size=192)
    assert not started.futures and started.aoti().status.tolist() == ["skipped"]


def test_every_ledger_claim_has_one_judge():
    assert {c["id"] for c in findings.judged_claims_of("dynamic_shapes")} == set(ds.JUDGES)


def test_record_tables_keeps_every_table_of_the_results():
    exported = dynamic_export.Exported(dynamic_export.SPECS["derived"], "ok", 1.0, (1, 3, 160, 160), program=object())
    run = ds.measure_export.SpecRun({"derived": exported}, {"min_size": 128, "max_size": 192})
    scan = pd.DataFrame([{"axis": "height", "size": 96, "mod_32": 0, "eager": "ok", "error": ""}])
    et = ds.measure.EtRun(pd.DataFrame([{"program": "derived", "status": "ok"}]), pd.DataFrame())
    found = findings.Findings("dynamic_shapes", {})
    ds.record_tables(found, ds.Results(run, ds.measure_export.Sweep(pd.DataFrame(columns=["spec"]), 1e-4), scan, et, pd.DataFrame()))
    assert list(found.tables) == list(ds.TABLES) == ["specs", "guards", "sweep", "sweep_summary", "residues",
                                                      "executorch_lowering", "executorch_runs", "aoti"]
    assert found.tables["specs"][0]["spec"] == "derived" and found.tables["residues"][0]["size"] == 96


def test_residue_scan_finds_the_rounding_window():
    scan = ds.residue_scan(base=64, device="cpu")
    assert ds.measure_export.running_residues(scan) == [0, 25, 26, 27, 28, 29, 30, 31]
    assert set(ds.residue_table(scan)["runs at (mod 32)"]) == {"0, 25-31"}
    # the failing sizes raise in the neck's concats, not in the detection head
    failed_in = set(scan[scan.eager != "ok"].failed_in)
    assert failed_in and all("Concat" in layer for layer in failed_in)


# --- the notebook ---------------------------------------------------------------------------------


@pytest.mark.notebook
def test_notebook_tiny(run_notebook):
    results = run_notebook(
        "dynamic_shapes", min_size=128, max_size=192, max_batch=2,
        specs=["static", "dim", "derived", "derived_warm", "derived_kit", "auto_bounded", "batch_from1"],
        sweep=[128, 160, 192, 200, 186], paths=["export"], et_static_sizes=[], device="cpu")
    verdicts = {c["id"]: c["verdict"] for c in results["claims"]}
    assert set(verdicts) == {c["id"] for c in findings.judged_claims_of("dynamic_shapes")}
    assert all(v in findings.VERDICTS for v in verdicts.values())
    assert not results["missing_claims"]
    assert verdicts["dynamic_shapes.plain_dim_guard_violation"] == "confirmed"
    assert verdicts["dynamic_shapes.fundamentally_blocked"] == "refuted"
    assert verdicts["dynamic_shapes.multiple_of_32"] == "partly"
    assert verdicts["dynamic_shapes.aoti_cuda_dynamic"] == "needs_cuda"
    for table in ("specs", "guards", "sweep", "sweep_summary", "residues", "executorch_lowering", "aoti"):
        assert table in results["tables"], table
    specs = {r["spec"]: r for r in results["tables"]["specs"]}
    assert specs["dim"]["outcome"] == "error" and specs["derived"]["outcome"] == "ok"
    assert specs["batch_from1"]["outcome"] == "error"
    summary = {r["spec"]: r for r in results["tables"]["sweep_summary"]}
    assert summary["derived_kit"]["correct_at_every_multiple"]
    assert not summary["derived_warm"]["correct_at_every_multiple"]
