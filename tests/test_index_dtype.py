"""index_dtype: the seed's legacy top-k, the gather fix, upstream detection, and the notebook end to end."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from yolo26kit import graphs
from yolo26kit.investigations import index_dtype as inv


@settings(max_examples=60, deadline=None)
@given(batch=st.integers(1, 6), nc=st.integers(1, 90), max_det=st.integers(1, 64), extra=st.integers(0, 300),
       ties=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_legacy_and_gather_are_bit_identical(batch, nc, max_det, extra, ties, seed):
    legacy, fixed = inv.PostprocessOnly("legacy", nc, max_det), inv.PostprocessOnly("gather", nc, max_det)
    preds = inv.random_preds(batch, max_det + extra, nc, seed=seed, ties=ties)
    with torch.no_grad():
        a, b = legacy(preds), fixed(preds)
    assert a.shape == (batch, max_det, 6)
    assert torch.equal(a, b)


def test_legacy_graph_has_advanced_indexing_and_gather_has_none():
    scans = {}
    for variant in ("legacy", "gather"):
        spec = inv.Spec(variant, imgsz=64 * 5)
        scans[variant] = graphs.scan(inv.export(spec).graph_module)
    assert graphs.count(scans["legacy"], "aten.index.Tensor") == 1
    assert graphs.all_int64(scans["legacy"]) is True
    assert graphs.count(scans["gather"], "aten.index.Tensor") == 0
    assert graphs.count(scans["gather"], "aten.gather") == 3


def test_unknown_variant_is_rejected():
    with pytest.raises(ValueError, match="unknown variant"):
        inv.PostprocessOnly("fancy", 80)


def test_anchor_count_matches_the_head():
    assert inv.anchors_for(640) == 8400 and inv.anchors_for(320) == 2100


def test_compare_tolerates_order_but_not_different_detections():
    ref = inv.random_preds(1, 40, 2, seed=1)[..., :6]
    swapped = ref[:, [1, 0, *range(2, 40)]]
    d = inv.compare(swapped, ref)
    assert d["exact"] is False and d["match_rate"] == 1.0 and d["score_max_abs"] == 0.0 and inv.agrees(d)
    moved = ref.clone()
    moved[:, :4, :4] += 5.0  # 4 of 40 boxes elsewhere: 90 % matched
    assert inv.compare(moved, ref)["match_rate"] == pytest.approx(0.9) and not inv.agrees(inv.compare(moved, ref))
    assert not inv.agrees(inv.compare(ref + 5.0, ref))


def test_random_preds_scores_are_distinct_unless_ties_are_asked_for():
    distinct = inv.random_preds(2, 50, 7, seed=0)[..., 4:]
    assert all(row.unique().numel() == row.numel() for row in distinct)
    assert inv.random_preds(1, 50, 7, seed=0, ties=True)[..., 4:].unique().numel() <= 8


def test_lowering_error_details_reads_inductor_messages():
    text = ("torch._inductor.exc.LoweringException: AssertionError: indices must be int64, byte or bool. "
            "Got [torch.int64, torch.float32]\n  target: aten.index.Tensor\n  args[0]: TensorBox(x)\n  args[1]: [y, z]\n")
    d = inv.lowering_error_details(text)
    assert d["target"] == "aten.index.Tensor" and "torch.float32" in d["dtypes"] and len(d["args"]) == 2


@pytest.mark.notebook
def test_notebook_end_to_end(run_notebook):
    results = run_notebook("index_dtype", imgsz=320, variants=["legacy", "gather", "upstream"],
                           paths=["eager", "export", "compile", "et_xnnpack"], full_model_paths=["et_xnnpack"],
                           equivalence_cases=20, step_timeout=300.0, device="cpu")
    verdicts = {c["id"]: c["verdict"] for c in results["claims"]}
    assert set(verdicts) == {c for c in verdicts if c.startswith("index_dtype.")} and len(verdicts) == 6
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
