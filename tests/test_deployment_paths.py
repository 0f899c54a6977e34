"""deployment_paths: planning, skips, comparisons, tables and every judge on synthetic rows; the notebook on CPU."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

from yolo26kit import findings, isolate
from yolo26kit.investigations import deployment_paths as inv

DETS = torch.cat([torch.rand(1, 300, 4) * 320, torch.linspace(0.9, 0.6, 300).reshape(1, 300, 1),
                  torch.randint(0, 80, (1, 300, 1)).float()], dim=-1)


def _row(model: str = "yolo26n", backend: str = "eager", device: str = "cpu", ms: float | None = 10.0,
         dtype: str = "fp32", status: str = "ok", output: torch.Tensor | None = None, task: str = "detect",
         timed: bool = True, prepare: str | None = None, error: str = "", provider: str = "",
         imgsz: int = 320) -> inv.Row:
    """A Row as run_all would leave it, compared with DETS as eager's output."""
    case = inv.Case(model=model, backend=backend, device=device, dtype=dtype, imgsz=imgsz, task=task, timed=timed,
                    provider=provider)
    outcomes = []
    if prepare is not None:
        outcomes.append(isolate.Outcome(f"{case.tag}:prepare", prepare, 5.0, value={"artifact": "x"} if prepare == "ok"
                                        else None, error="" if prepare == "ok" else error))
        if prepare != "ok":
            return inv.Row(case, outcomes)
    if status == "ok":
        out = DETS if output is None else output
        value = {"outputs": [out], "median_ms": ms, "iqr_ms": 0.1, "first_call_s": 1.0, "setup_s": 0.5}
        outcomes.append(isolate.Outcome(f"{case.tag}:run", "ok", 2.0, value=value))
    elif status == "skipped":
        outcomes.append(isolate.skipped(f"{case.tag}:run", error or "not installed"))
    else:
        outcomes.append(isolate.Outcome(f"{case.tag}:run", status, 2.0, error=error or "boom"))
    row = inv.Row(case, outcomes)
    if row.run is not None:
        row.delta = inv.compare(task, row.run.value["outputs"], [DETS])
    return row


def _run(rows: list[inv.Row], device: str = "cpu", models: tuple[str, ...] = ("yolo26n",), task_rows=(),
         dynamic: isolate.Outcome | None = None, imgsz: int = 320) -> inv.Run:
    return inv.Run(device, rows, list(task_rows), dynamic, list(models), imgsz)


# --- ledger, planning, skips -------------------------------------------------------------------------

def test_every_ledger_claim_has_one_judge_and_untestables_say_why():
    ledger = json.loads((findings.DATA / "claims" / "deployment_paths.json").read_text())
    judged = [c["id"] for c in ledger if not c.get("untestable")]
    assert judged == list(inv.JUDGES)
    assert all(c["question"] in ("bites", "fix", "cost", "other") for c in ledger)
    assert all(len(c["untestable"]) > 40 for c in ledger if c.get("untestable"))


def test_cpu_plan_has_references_no_reduced_precision_and_one_detect_check():
    cases = inv.plan(["yolo26n"], ["yolo26n"], 320, "cpu", list(inv.BACKENDS), ["fp32", "fp16"],
                     ["detect", "classify"], ["yolo26n"], 320)
    keys = {c.key for c in cases}
    assert all(c.dtype == "fp32" for c in cases)  # fp16/bf16 are CUDA rows
    assert all(c.reference in keys for c in cases)  # every case has its eager fp32 reference
    detect_xnn = [c for c in cases if c.backend == "et_xnnpack" and c.task == "detect"]
    assert len(detect_xnn) == 1 and detect_xnn[0].timed  # the timed row doubles as the task check at one size
    assert not any(c.provider == "CUDAExecutionProvider" for c in cases)


def test_cuda_plan_adds_cpu_references_and_the_cuda_ep():
    cases = inv.plan(["yolo26n"], ["yolo26n"], 640, "cuda", ["eager", "et_xnnpack", "onnxruntime"],
                     ["fp32", "bf16"], [], [], 160)
    pairs = {(c.backend, c.device, c.dtype, c.provider) for c in cases}
    assert ("eager", "cpu", "fp32", "") in pairs and ("eager", "cuda", "bf16", "") in pairs
    assert ("et_xnnpack", "cpu", "fp32", "") in pairs and ("onnxruntime", "cuda", "fp32", "CUDAExecutionProvider") in pairs
    assert all(c.reference in {x.key for x in cases} for c in cases)


def test_skip_reasons(monkeypatch):
    case = inv.Case(model="yolo26s", backend="aoti", device="cpu")
    assert "compile_models" in inv.skip_reason(case, ["yolo26n"])
    assert inv.skip_reason(case, ["yolo26s"]) == ""
    assert inv.skip_reason(replace(case, backend="compile_cudagraphs"), ["yolo26s"]) == "needs a CUDA device"
    monkeypatch.setattr(inv.measure, "installed", lambda module: module != "torch_tensorrt")
    assert "torch_tensorrt" in inv.skip_reason(replace(case, backend="tensorrt", device="cuda"), ["yolo26s"])
    monkeypatch.setattr(inv.measure, "installed", lambda module: module != "onnxscript")
    assert "onnxscript" in inv.skip_reason(replace(case, backend="onnxruntime", provider="CPUExecutionProvider"), [])


def test_a_skipped_case_runs_no_step():
    row = inv.run_case(inv.Case(model="yolo26n", backend="et_cuda", device="cpu"), 10, ["yolo26n"])
    assert [o.status for o in row.outcomes] == ["skipped"] and not row.ok
    assert inv.row_dicts(row)[0]["status"] == "skipped"


# --- models and comparisons ------------------------------------------------------------------------

@pytest.mark.parametrize("task,shape", [("segment", (1, 300, 38)), ("pose", (1, 300, 57)), ("obb", (1, 300, 7)),
                                        ("classify", (1, 1000))])
def test_task_models_are_end_to_end_with_spread_scores(task, shape):
    net = inv.build_task(task, "yolo26n")
    with torch.no_grad():
        out = inv.measure._outputs(net(torch.rand(1, 3, 160, 160)))
    assert tuple(out[0].shape) == shape
    if task != "classify":
        assert out[0][0, :, 4].unique().numel() > 250  # distinct scores: no tie-breaking in the comparison


def test_compare_detections_and_classes():
    assert inv.correct(inv.compare("detect", [DETS.clone()], [DETS]))
    shuffled = DETS[:, torch.randperm(300)]
    assert inv.correct(inv.compare("detect", [shuffled], [DETS]))  # order-insensitive
    off = DETS.clone()
    off[..., 4] += 2e-3
    assert not inv.correct(inv.compare("detect", [off], [DETS]))
    assert inv.correct(inv.compare("detect", [off], [DETS]), "fp16")  # within the fp16 score tolerance
    probs = torch.softmax(torch.randn(1, 1000), -1)
    assert inv.correct(inv.compare("classify", [probs.clone()], [probs]))
    swapped = probs.clone()
    top = probs.topk(2).indices[0]
    swapped[0, top[0]], swapped[0, top[1]] = probs[0, top[1]], probs[0, top[0]]
    assert not inv.correct(inv.compare("classify", [swapped], [probs]))


# --- tables --------------------------------------------------------------------------------------

def test_aoti_row_shows_both_load_attempts_and_counts_the_workaround():
    case = inv.Case(model="yolo26n", backend="aoti", device="cuda")
    crash = isolate.Outcome(f"{case.tag}:load+run", "crash", 3.0, error="child crashed with SIGSEGV",
                            details={"aoti_load": "as_is", "cause": "static_libstdcxx_locale_mix"})
    ok = isolate.Outcome(f"{case.tag}:load+run [w]", "ok", 3.0, details={"aoti_load": "system_libstdcxx"},
                         value={"outputs": [DETS], "median_ms": 2.0, "iqr_ms": 0.1, "first_call_s": 1.0})
    row = inv.Row(case, [isolate.Outcome(f"{case.tag}:prepare", "ok", 90.0, value={"artifact": "p"}), crash, ok])
    row.delta = inv.compare("detect", [DETS], [DETS])
    table = inv.row_dicts(row)
    assert [(r["status"], r["aoti_load"]) for r in table] == [("crash", "as_is"), ("ok", "system_libstdcxx")]
    assert table[0]["correct"] is None and table[1]["correct"] is True and table[1]["prepare_s"] == 90.0
    assert table[0]["cause"] == "static_libstdcxx_locale_mix"


def test_failed_prepare_is_the_only_row():
    row = _row(backend="et_xnnpack", prepare="error", error="LoweringException: nope")
    (only,) = inv.row_dicts(row)
    assert only["status"] == "error" and "nope" in only["error"] and only["failed step"].endswith(":prepare")


def test_fastest_ignores_a_faster_wrong_path():
    wrong = DETS.clone()
    wrong[..., 5] = (wrong[..., 5] + 1) % 80
    rows = [_row(ms=20.0), _row(backend="et_xnnpack", ms=5.0, output=wrong), _row(backend="onnxruntime", ms=8.0,
                                                                                   provider="CPUExecutionProvider")]
    fastest = inv.fastest_frame(rows)
    assert fastest.iloc[0]["fastest correct"] == "onnxruntime (CPU)"
    assert fastest.iloc[0]["speed-up vs eager"] == 2.5
    assert inv.plot_latency(rows) is not None


# --- judges --------------------------------------------------------------------------------------

def test_xnnpack_vs_eager_follows_the_ratio():
    fast = _run([_row(ms=20.0), _row(backend="et_xnnpack", ms=10.0)])
    slow = _run([_row(ms=20.0), _row(backend="et_xnnpack", ms=30.0)])
    assert inv.judge_xnnpack_vs_eager(fast)[0] == "confirmed"
    verdict, evidence, _ = inv.judge_xnnpack_vs_eager(slow)
    assert verdict == "refuted" and evidence.startswith("0 of 1 sizes")


def test_xnnpack_scaling_against_the_seeds_ratio_band():
    inside = _run([_row(backend="et_xnnpack", ms=10.0), _row("yolo26s", backend="et_xnnpack", ms=20.0)],
                  models=("yolo26n", "yolo26s"))
    outside = _run([_row(backend="et_xnnpack", ms=10.0), _row("yolo26s", backend="et_xnnpack", ms=40.0)],
                   models=("yolo26n", "yolo26s"))
    assert inv.judge_xnnpack_scaling(inside)[0] == "confirmed"  # 2.0 within 30/20 .. 40/15
    assert inv.judge_xnnpack_scaling(outside)[0] == "refuted"
    assert inv.judge_xnnpack_scaling(_run([_row(backend="et_xnnpack")]))[0] == "error"  # one size: no growth


def test_side_by_side_rounds_decide_the_cpu_ratios_over_the_rows_separate_timings():
    rows = [_row(ms=20.0), _row(backend="et_xnnpack", ms=10.0, prepare="ok"),
            _row("yolo26s", ms=50.0), _row("yolo26s", backend="et_xnnpack", ms=40.0, prepare="ok")]  # rows: ×4.0
    rounds = {rows[1].case.tag: [10.0, 12.0, 11.0], rows[3].case.tag: [20.0, 25.0, 21.0],  # ×2.0, ×2.08, ×1.91
              rows[0].case.tag: [30.0, 30.0, 30.0], rows[2].case.tag: [60.0, 60.0, 60.0]}
    run = replace(_run(rows, models=("yolo26n", "yolo26s")),
                  side_by_side=isolate.Outcome("CPU rows side by side", "ok", 3.0, value=rounds))
    verdict, evidence, data = inv.judge_xnnpack_scaling(run)
    assert verdict == "confirmed" and data["steps"][0]["rows_ratio"] == 4.0
    assert data["steps"][0]["side_by_side"] == {"ratio": 2.0, "min": 1.91, "max": 2.08, "rounds": 3}
    assert "side by side, 3 rounds" in evidence
    verdict, evidence, data = inv.judge_xnnpack_vs_eager(run)
    assert verdict == "confirmed" and "side by side" in evidence
    assert inv.ratio_rounds(rounds, "missing", rows[0].case.tag) is None
    without = _run(rows, models=("yolo26n", "yolo26s"))  # no side-by-side step: the rows' ratio decides
    assert inv.judge_xnnpack_scaling(without)[0] == "refuted"


def test_rounds_on_both_sides_of_a_band_edge_give_partly_not_the_medians_verdict():
    rows = [_row(ms=20.0), _row(backend="et_xnnpack", ms=10.0, prepare="ok"),
            _row("yolo26s", ms=50.0), _row("yolo26s", backend="et_xnnpack", ms=40.0, prepare="ok")]
    n, s, eager_n = rows[1].case.tag, rows[3].case.tag, rows[0].case.tag

    def verdicts(xnn_n: list[float], xnn_s: list[float], eager: list[float]) -> tuple[str, str]:
        rounds = {n: xnn_n, s: xnn_s, eager_n: eager, rows[2].case.tag: [100.0] * len(eager)}
        run = replace(_run(rows, models=("yolo26n", "yolo26s")),
                      side_by_side=isolate.Outcome("CPU rows side by side", "ok", 3.0, value=rounds))
        return inv.judge_xnnpack_scaling(run)[0], inv.judge_xnnpack_vs_eager(run)[0]

    # scaling band 1.5–2.67; median ×2.9 outside, but one round ×1.9 inside: the noise cannot decide
    assert verdicts([10.0, 10.0, 10.0], [29.0, 19.0, 40.0], [20.0, 20.0, 20.0])[0] == "partly"
    assert verdicts([10.0, 10.0, 10.0], [29.0, 28.0, 30.0], [20.0, 20.0, 20.0])[0] == "refuted"
    assert verdicts([10.0, 10.0, 10.0], [20.0, 21.0, 19.0], [20.0, 20.0, 20.0])[0] == "confirmed"
    # XNNPACK vs eager: median faster, one round slower → partly; every round faster (both sizes) → confirmed
    assert verdicts([10.0, 25.0, 12.0], [20.0, 21.0, 19.0], [20.0, 20.0, 20.0])[1] == "partly"
    assert verdicts([10.0, 11.0, 12.0], [20.0, 21.0, 19.0], [20.0, 20.0, 20.0])[1] == "confirmed"


def test_side_by_side_needs_two_correct_cpu_rows_and_tables_say_why():
    assert inv.side_by_side([_row(backend="et_xnnpack", prepare="ok")], timeout=10) is None
    assert inv.side_by_side_frame(_run([]))["status"].tolist() == ["skipped"]


def test_cuda_aoti_judge():
    aoti_ok = _row(backend="aoti", device="cuda", prepare="ok")
    et_fails = _row(backend="et_cuda", device="cuda", prepare="error", error="NoValidChoicesError")
    assert inv.judge_cuda_aoti_backbone_only(_run([aoti_ok, et_fails], "cuda"))[0] == "partly"
    aoti_bad = _row(backend="aoti", device="cuda", prepare="error")
    assert inv.judge_cuda_aoti_backbone_only(_run([aoti_bad, et_fails], "cuda"))[0] == "confirmed"
    et_ok = _row(backend="et_cuda", device="cuda", prepare="ok")
    assert inv.judge_cuda_aoti_backbone_only(_run([aoti_bad, et_ok], "cuda"))[0] == "refuted"
    verdict, evidence, _ = inv.judge_cuda_aoti_backbone_only(_run([_row(backend="aoti", prepare="ok")]))
    assert verdict == "needs_cuda" and "ran" in evidence


def test_gpu_latency_compares_torch_native_with_the_seed_tensorrt_band():
    quick = _run([_row(backend="compile_cudagraphs", device="cuda", ms=1.5)], "cuda", imgsz=640)
    slow = _run([_row(backend="eager", device="cuda", ms=9.0)], "cuda", imgsz=640)
    assert inv.judge_gpu_latency(quick)[0] == "refuted"  # within yolo26n's 1-2 ms
    assert inv.judge_gpu_latency(slow)[0] == "confirmed"
    assert inv.judge_gpu_latency(_run([_row()]))[0] == "needs_cuda"


def test_compile_alternative_and_recommendation():
    rows = [_row(device="cuda", ms=8.0), _row(backend="compile", device="cuda", ms=4.0),
            _row(backend="compile_cudagraphs", device="cuda", status="error"),
            _row(backend="et_xnnpack", ms=30.0, prepare="ok"),
            _row(backend="et_cuda", device="cuda", prepare="error", error="NoValidChoicesError")]
    verdict, evidence, _ = inv.judge_torch_compile_alternative(_run(rows, "cuda"))
    assert verdict == "confirmed" and evidence.startswith("1 of 2") and "2.00×" in evidence
    assert inv.judge_recommend_xnnpack(_run(rows, "cuda"))[0] == "confirmed"
    assert inv.judge_recommend_xnnpack(_run(rows))[0] == "needs_cuda"


def test_all_variants_and_onnxruntime_judges():
    tasks = [_row(backend="et_xnnpack", task=t, timed=False) for t in ("detect", "segment")]
    assert inv.judge_xnnpack_all_variants(_run([], task_rows=tasks))[0] == "confirmed"
    tasks.append(_row(backend="et_xnnpack", task="pose", timed=False, prepare="error", error="unsupported op"))
    verdict, evidence, _ = inv.judge_xnnpack_all_variants(_run([], task_rows=tasks))
    assert verdict == "partly" and evidence.startswith("2 of 3")
    ort = _row(backend="onnxruntime", provider="CPUExecutionProvider")
    dynamic = isolate.Outcome("dyn", "ok", value=[{"size": 160, "correct": True}, {"size": 320, "correct": True}])
    assert inv.judge_onnxruntime(_run([ort], dynamic=dynamic))[0] == "confirmed"
    broken = isolate.Outcome("dyn", "error", error="export failed")
    assert inv.judge_onnxruntime(_run([ort], dynamic=broken))[0] == "partly"
    missing = _row(backend="onnxruntime", provider="CPUExecutionProvider", status="skipped")
    assert inv.judge_onnxruntime(_run([missing]))[0] == "error"


@pytest.mark.notebook
def test_notebook_end_to_end(run_notebook):
    results = run_notebook("deployment_paths", device="cpu", cpu_models=["yolo26n"], cpu_compile_models=[],
                           cpu_imgsz=160, cpu_backends=["eager", "aoti", "et_xnnpack", "onnxruntime"],
                           cpu_tasks=["detect", "classify"], task_imgsz=160, min_run_time=0.1, step_timeout=300.0)
    verdicts = {c["id"]: c["verdict"] for c in results["claims"]}
    assert set(verdicts) == set(inv.JUDGES) and not results["missing_claims"]
    for claim in ("cuda_aoti_backbone_only", "recommend_xnnpack", "torch_compile_alternative", "gpu_latency"):
        assert verdicts[f"deployment_paths.{claim}"] == "needs_cuda"
    assert verdicts["deployment_paths.xnnpack_scaling"] == "error"  # one size
    latency = {(r["backend"], r["status"]) for r in results["tables"]["latency"]}
    assert ("eager", "ok") in latency and ("aoti", "skipped") in latency  # not in cpu_compile_models
    assert ("compile_cudagraphs", "skipped") not in latency  # not among the back-ends asked for
    eager = next(r for r in results["tables"]["latency"] if r["backend"] == "eager")
    assert eager["correct"] and eager["median_ms"] > 0 and eager["mem_kind"] == "cpu_rss_delta"
    assert {r["task"] for r in results["tables"]["xnnpack_tasks"]} == {"detect", "classify"}
    assert results["tables"]["fastest"][0]["model"] == "yolo26n"
    side = {r["case"]: r for r in results["tables"]["cpu_side_by_side"]}  # eager and XNNPACK, timed in turn
    assert len(side) == 2 and all(r["median of rounds ms"] > 0 for r in side.values())
    xnn_vs_eager = next(c for c in results["claims"] if c["id"] == "deployment_paths.xnnpack_vs_eager")
    assert xnn_vs_eager["data"]["pairs"][0]["side_by_side"]["rounds"] == inv.SIDE_BY_SIDE_ROUNDS
