"""deployment_paths: planning, skips, comparisons, tables and every judge on synthetic rows; the notebook on CPU."""

from __future__ import annotations

import importlib
import json
from dataclasses import replace
from typing import Any

import pytest
import torch

from yolo26kit import findings
from yolo26kit.bench import isolate
from yolo26kit.investigations import deployment_paths as inv
from yolo26kit.investigations.deployment_paths.judge import row_latency, row_state
from yolo26kit.verdicts import Judgement

inv_judge = importlib.import_module("yolo26kit.investigations.deployment_paths.judge")  # the module; the package's judge is the function

DETS = torch.cat([torch.rand(1, 300, 4) * 320, torch.linspace(0.9, 0.6, 300).reshape(1, 300, 1),
                  torch.randint(0, 80, (1, 300, 1)).float()], dim=-1)


def _row(model: str = "yolo26n", backend: str = "eager", device: str = "cpu", ms: float | None = 10.0,
         dtype: str = "fp32", status: str = "ok", output: torch.Tensor | None = None, task: str = "detect",
         timed: bool = True, prepare: str | None = None, error: str = "", provider: str = "",
         imgsz: int = 320, options: str | None = None) -> inv.measure.Row:
    """A Row as run_all would leave it, compared with DETS as eager's output; `options`: an ExecuTorch CUDA
    lowering's backend_options as the row records them."""
    case = inv.measure.Case(model=model, backend=backend, device=device, dtype=dtype, imgsz=imgsz, task=task, timed=timed,
                    provider=provider)
    outcomes = []
    extra = {"backend_options": options} if options else {}
    if prepare is not None:
        outcomes.append(isolate.Outcome(f"{case.tag}:prepare", prepare, 5.0, value={"artifact": "x", **extra}
                                        if prepare == "ok" else None, error="" if prepare == "ok" else error,
                                        details={} if prepare == "ok" else extra))
        if prepare != "ok":
            return inv.measure.Row(case, outcomes)
    if status == "ok":
        out = DETS if output is None else output
        value = {"outputs": [out], "median_ms": ms, "iqr_ms": 0.1, "first_call_s": 1.0, "setup_s": 0.5}
        outcomes.append(isolate.Outcome(f"{case.tag}:run", "ok", 2.0, value=value))
    elif status == "skipped":
        outcomes.append(isolate.skipped(f"{case.tag}:run", error or "not installed"))
    else:
        outcomes.append(isolate.Outcome(f"{case.tag}:run", status, 2.0, error=error or "boom"))
    row = inv.measure.Row(case, outcomes)
    if row.run is not None:
        row.delta = inv.measure.compare(task, row.run.value["outputs"], [DETS])
    return row


def _run(rows: list[inv.measure.Row], device: str = "cpu", models: tuple[str, ...] = ("yolo26n",), task_rows=(),
         dynamic: isolate.Outcome | None = None, imgsz: int = 320, rounds: dict | None = None,
         gpu: str = "", cpu: str = "Intel(R) Core(TM) i7-12700K", others_busy: float | None = 0.0) -> inv.measure.Run:
    """A run; `rounds` are the side-by-side step's medians per case tag, timed on `cpu` beside `others_busy` cores."""
    value = {"medians": rounds, "cpu": cpu, "threads": 8, "others_busy_cores": others_busy}
    side = isolate.Outcome("CPU rows side by side", "ok", 3.0, value=value) if rounds is not None else None
    return inv.measure.Run(device, rows, list(task_rows), dynamic, list(models), imgsz, side, gpu)


# --- ledger, planning, skips -------------------------------------------------------------------------

def test_every_ledger_claim_has_one_judge_and_untestables_say_why():
    ledger = json.loads((findings.DATA / "claims" / "deployment_paths.json").read_text())
    judged = [c["id"] for c in ledger if not c.get("untestable")]
    assert judged == list(inv.JUDGES)
    assert all(c["question"] in ("bites", "fix", "cost", "other") for c in ledger)
    assert all(len(c["untestable"]) > 40 for c in ledger if c.get("untestable"))


def test_cpu_plan_has_references_no_reduced_precision_and_one_detect_check():
    cases = inv.measure.plan(["yolo26n"], ["yolo26n"], 320, "cpu", list(inv.measure.BACKENDS), ["fp32", "fp16"],
                     ["detect", "classify"], ["yolo26n"], 320)
    keys = {c.key for c in cases}
    assert all(c.dtype == "fp32" for c in cases)  # fp16/bf16 are CUDA rows
    assert all(c.reference in keys for c in cases)  # every case has its eager fp32 reference
    detect_xnn = [c for c in cases if c.backend == "et_xnnpack" and c.task == "detect" and c.export_path == inv.measure.KIT_EXPORT]
    assert len(detect_xnn) == 1 and detect_xnn[0].timed  # the timed row doubles as the task check at one size
    assert not any(c.provider == "CUDAExecutionProvider" for c in cases)
    shipped = {(c.backend, c.model, c.device) for c in cases if c.export_path == inv.measure.ULTRALYTICS_EXPORTER}
    assert shipped == {("et_xnnpack", "yolo26n", "cpu"), ("onnxruntime", "yolo26n", "cpu")}  # ultralytics' exporter
    assert len({c.tag for c in cases}) == len(cases)
    no_ux = inv.measure.plan(["yolo26n"], [], 320, "cpu", list(inv.measure.BACKENDS), ["fp32"], [], [], 320, ultralytics_export=False)
    assert not any(c.export_path == inv.measure.ULTRALYTICS_EXPORTER for c in no_ux)


def test_cuda_plan_adds_cpu_references_and_the_cuda_ep():
    cases = inv.measure.plan(["yolo26n"], ["yolo26n"], 640, "cuda", ["eager", "et_xnnpack", "onnxruntime"],
                     ["fp32", "bf16"], [], [], 160)
    pairs = {(c.backend, c.device, c.dtype, c.provider) for c in cases}
    assert ("eager", "cpu", "fp32", "") in pairs and ("eager", "cuda", "bf16", "") in pairs
    assert ("et_xnnpack", "cpu", "fp32", "") in pairs and ("onnxruntime", "cuda", "fp32", "CUDAExecutionProvider") in pairs
    assert all(c.reference in {x.key for x in cases} for c in cases)


def test_skip_reasons(monkeypatch):
    case = inv.measure.Case(model="yolo26s", backend="aoti", device="cpu")
    assert "compile_models" in inv.measure.skip_reason(case, ["yolo26n"])
    assert inv.measure.skip_reason(case, ["yolo26s"]) == ""
    assert inv.measure.skip_reason(replace(case, backend="compile_cudagraphs"), ["yolo26s"]) == "needs a CUDA device"
    # ExecuTorch CUDA lowers only with the back-end's defaults, and only the sizes et_cuda_models names
    et_cuda = replace(case, backend="et_cuda", device="cuda")
    assert inv.measure.skip_reason(et_cuda, ["yolo26s"]) == inv.measure.ET_CUDA_SKIPPED
    assert inv.measure.skip_reason(et_cuda, ["yolo26s"], ["yolo26s"]) == ""
    monkeypatch.setattr(inv.measure, "installed", lambda module: module != "torch_tensorrt")
    assert "torch_tensorrt" in inv.measure.skip_reason(replace(case, backend="tensorrt", device="cuda"), ["yolo26s"])
    monkeypatch.setattr(inv.measure, "installed", lambda module: module != "onnxscript")
    assert "onnxscript" in inv.measure.skip_reason(replace(case, backend="onnxruntime", provider="CPUExecutionProvider"), [])
    shipped = replace(case, backend="et_xnnpack", export_path=inv.measure.ULTRALYTICS_EXPORTER)
    assert inv.measure.skip_reason(shipped, []) == ""  # not a compile-heavy row: any model
    monkeypatch.setattr(inv.measure, "installed", lambda module: module != "executorch")
    assert "executorch" in inv.measure.skip_reason(shipped, [])


def test_a_skipped_case_runs_no_step():
    row = inv.measure.run_case(inv.measure.Case(model="yolo26n", backend="et_cuda", device="cpu"), 10, ["yolo26n"])
    assert [o.status for o in row.outcomes] == ["skipped"] and not row.ok
    assert inv.show.row_dicts(row)[0]["status"] == "skipped"


# --- models and comparisons ------------------------------------------------------------------------

@pytest.mark.parametrize("task,shape", [("segment", (1, 300, 38)), ("pose", (1, 300, 57)), ("obb", (1, 300, 7)),
                                        ("classify", (1, 1000))])
def test_task_models_are_end_to_end_with_spread_scores(task, shape):
    net = inv.measure.build_task(task, "yolo26n")
    with torch.no_grad():
        out = inv.measure._outputs(net(torch.rand(1, 3, 160, 160)))
    assert tuple(out[0].shape) == shape
    if task != "classify":
        assert out[0][0, :, 4].unique().numel() > 250  # distinct scores: no tie-breaking in the comparison


def test_compare_detections_and_classes():
    assert inv.measure.correct(inv.measure.compare("detect", [DETS.clone()], [DETS]))
    shuffled = DETS[:, torch.randperm(300)]
    assert inv.measure.correct(inv.measure.compare("detect", [shuffled], [DETS]))  # order-insensitive
    off = DETS.clone()
    off[..., 4] += 2e-3
    assert not inv.measure.correct(inv.measure.compare("detect", [off], [DETS]))
    # reduced precision is held to the same match rate: close sorted scores alone are not the same detections
    assert not inv.measure.correct(inv.measure.compare("detect", [off], [DETS]), "fp16")
    near = DETS.clone()
    near[..., 4] += 5e-4
    assert inv.measure.correct(inv.measure.compare("detect", [near], [DETS]), "bf16")
    few = DETS.clone()
    few[:, 30:, 5] = (few[:, 30:, 5] + 1) % 80  # only 10 % of the detections keep their class
    delta = inv.measure.compare("detect", [few], [DETS])
    assert delta["score_max_abs"] == 0 and not inv.measure.correct(delta, "fp16")
    assert "differs" in row_state(replace(_row(dtype="fp16"), delta=delta))
    probs = torch.softmax(torch.randn(1, 1000), -1)
    assert inv.measure.correct(inv.measure.compare("classify", [probs.clone()], [probs]))
    swapped = probs.clone()
    top = probs.topk(2).indices[0]
    swapped[0, top[0]], swapped[0, top[1]] = probs[0, top[1]], probs[0, top[0]]
    assert not inv.measure.correct(inv.measure.compare("classify", [swapped], [probs]))


# --- tables --------------------------------------------------------------------------------------

def test_aoti_row_shows_both_load_attempts_and_counts_the_workaround():
    case = inv.measure.Case(model="yolo26n", backend="aoti", device="cuda")
    crash = isolate.Outcome(f"{case.tag}:load+run", "crash", 3.0, error="child crashed with SIGSEGV",
                            details={"aoti_load": "as_is", "cause": "static_libstdcxx_locale_mix"})
    ok = isolate.Outcome(f"{case.tag}:load+run [w]", "ok", 3.0, details={"aoti_load": "system_libstdcxx"},
                         value={"outputs": [DETS], "median_ms": 2.0, "iqr_ms": 0.1, "first_call_s": 1.0})
    prepared = isolate.Outcome(f"{case.tag}:prepare", "ok", 90.0, value={"artifact": "p", "cached": True})
    row = inv.measure.Row(case, [prepared, crash, ok])
    row.delta = inv.measure.compare("detect", [DETS], [DETS])
    table = inv.show.row_dicts(row)
    assert [(r["status"], r["aoti_load"]) for r in table] == [("crash", "as_is"), ("ok", "system_libstdcxx")]
    assert table[0]["correct"] is None and table[1]["correct"] is True and table[1]["prepare_s"] == 90.0
    assert table[0]["cause"] == "static_libstdcxx_locale_mix"
    # the package served from the cache is said once per case (the run counts artifact hits from this column)
    assert [r["cached"] for r in table] == [None, True]
    row.outcomes[0] = replace(prepared, value={"artifact": "p"})
    assert [r["cached"] for r in inv.show.row_dicts(row)] == [None, None]  # a build step that does not say


def test_failed_prepare_is_the_only_row():
    row = _row(backend="et_xnnpack", prepare="error", error="LoweringException: nope")
    (only,) = inv.show.row_dicts(row)
    assert only["status"] == "error" and "nope" in only["error"] and only["failed step"].endswith(":prepare")


def test_fastest_ignores_a_faster_wrong_path():
    wrong = DETS.clone()
    wrong[..., 5] = (wrong[..., 5] + 1) % 80
    rows = [_row(ms=20.0), _row(backend="et_xnnpack", ms=5.0, output=wrong), _row(backend="onnxruntime", ms=8.0,
                                                                                   provider="CPUExecutionProvider")]
    fastest = inv.fastest_frame(rows)
    assert fastest.iloc[0]["fastest correct"] == "onnxruntime (CPU)"
    assert fastest.iloc[0]["speed-up vs eager (×)"] == 2.5 and fastest.iloc[0]["batch"] == 1
    assert inv.plot_latency(rows) is not None


# --- judges --------------------------------------------------------------------------------------
# Every judge's decisive outcomes are driven in tests/judge_cases/deployment_paths.py (tests/test_judges.py); the
# tests here pin the rules behind them.

def _pair(xnn_rounds: list[float], eager_rounds: list[float], imgsz: int = 640, **machine: Any) -> inv.measure.Run:
    eager, xnn = _row(imgsz=imgsz, ms=20.0), _row(backend="et_xnnpack", prepare="ok", imgsz=imgsz, ms=10.0)
    return _run([eager, xnn], imgsz=imgsz, rounds={eager.case.tag: eager_rounds, xnn.case.tag: xnn_rounds}, **machine)


def test_xnnpack_vs_eager_needs_rounds_timed_in_turn():
    assert inv_judge.judge_xnnpack_vs_eager(_pair([10.0, 11.0, 12.0], [20.0] * 3)).verdict == "confirmed"
    assert inv_judge.judge_xnnpack_vs_eager(_pair([30.0, 31.0, 29.0], [20.0] * 3)).verdict == "refuted"
    outlier = inv_judge.judge_xnnpack_vs_eager(_pair([10.0, 25.0, 12.0, 11.0, 10.0, 12.0], [20.0] * 6))
    assert outlier.verdict == "confirmed"  # the rounds rule: one round of six outside does not block it
    few = inv_judge.judge_xnnpack_vs_eager(_pair([10.0, 25.0, 12.0], [20.0] * 3))
    assert few.verdict == "inconclusive"  # one of three: too often the median in a resample, more rounds decide
    straddle = inv_judge.judge_xnnpack_vs_eager(_pair([10.0, 25.0, 12.0, 26.0], [20.0] * 4))
    assert straddle.verdict == "inconclusive" and "both sides" in straddle.evidence
    rows_only = _run([_row(ms=20.0), _row(backend="et_xnnpack", ms=10.0)])  # separate timings, no rounds
    assert inv_judge.judge_xnnpack_vs_eager(rows_only).verdict == "inconclusive"


def test_cpu_rounds_timed_beside_other_work_decide_nothing():
    quiet = inv_judge.judge_xnnpack_vs_eager(_pair([10.0, 11.0, 12.0], [20.0] * 3, others_busy=0.2))
    assert quiet.verdict == "confirmed" and "kept 0.2 cores busy" in quiet.evidence
    busy = inv_judge.judge_xnnpack_vs_eager(_pair([10.0, 11.0, 12.0], [20.0] * 3, others_busy=3.5))
    assert busy.verdict == "inconclusive" and "3.5 cores" in busy.evidence and "would say confirmed" in busy.evidence
    unread = inv_judge.judge_xnnpack_vs_eager(_pair([10.0, 11.0, 12.0], [20.0] * 3, others_busy=None))
    assert unread.verdict == "confirmed" and "could not be read" in unread.evidence
    table = inv.side_by_side_frame(_pair([10.0] * 3, [20.0] * 3, others_busy=3.5))
    assert table["other processes' busy cores"].tolist() == [3.5, 3.5] and set(table["threads"]) == {8}


def test_a_negative_or_nan_net_time_reads_could_not_time():
    judged = inv_judge.judge_xnnpack_vs_eager(_pair([-1.0, float("nan"), -2.0], [20.0, -3.0, float("nan")]))
    assert judged.verdict == "inconclusive" and "could not time" in judged.evidence and "nan" not in judged.evidence
    bad = _row(ms=float("nan"))
    assert bad.median_ms is None and row_latency(bad) == "could not time"
    assert inv.measure.timed_ms(-0.5) is None and inv.measure.timed_ms(3.0) == 3.0


def test_xnnpack_vs_eager_records_the_seeds_conditions():
    judged = inv_judge.judge_xnnpack_vs_eager(_pair([10.0] * 3, [20.0] * 3, imgsz=320))
    assert judged.run == {"device": "cpu", "backend": "executorch-xnnpack", "model": "yolo26n", "imgsz": 320,
                          "cpu": "Intel Core i7"}
    claim = findings.Findings(inv.measure.NAME, {}).verdict("deployment_paths.xnnpack_vs_eager", judged)
    assert claim.verdict == "inconclusive" and claim.conditions["differ"] == ["imgsz"]  # the seed's is 640


def test_xnnpack_scaling_against_the_ledgers_ratio_band():
    def scaling(s_rounds: list[float]) -> Judgement:
        n, s = _row(backend="et_xnnpack", ms=10.0, prepare="ok"), _row("yolo26s", backend="et_xnnpack", ms=40.0,
                                                                       prepare="ok")
        return inv_judge.judge_xnnpack_scaling(_run([n, s], models=("yolo26n", "yolo26s"),
                                              rounds={n.case.tag: [10.0] * len(s_rounds), s.case.tag: s_rounds}))

    inside = scaling([20.0, 21.0, 19.0])  # ×2.0 within 30/20 .. 40/15; the rows' own timings say ×4.0
    assert inside.verdict == "confirmed" and inside.data["steps"][0]["rows_ratio"] == 4.0
    assert inside.data["steps"][0]["seed_band"] == [1.5, 2.67]
    assert scaling([32.0, 33.0, 31.0]).verdict == "refuted"
    assert scaling([29.0, 28.0, 30.0]).verdict == "inconclusive"  # ×2.8–3.0 against 2.67: within the margin
    assert scaling([29.0, 19.0, 40.0, 30.0, 31.0, 29.0]).verdict == "refuted"  # one round of six inside
    assert scaling([29.0, 19.0, 40.0, 20.0]).verdict == "inconclusive"  # half on each side of an edge
    one = inv_judge.judge_xnnpack_scaling(_run([_row(backend="et_xnnpack")]))
    assert one.verdict == "inconclusive" and "needs two" in one.evidence


def test_xnnpack_scaling_on_another_cpu_than_the_seeds_cannot_decide():
    n = _row(backend="et_xnnpack", ms=10.0, prepare="ok", imgsz=640)
    s = _row("yolo26s", backend="et_xnnpack", prepare="ok", imgsz=640)
    run = _run([n, s], models=("yolo26n", "yolo26s"), imgsz=640, cpu="Intel(R) Xeon(R) Platinum 8480+",
               rounds={n.case.tag: [10.0] * 3, s.case.tag: [32.0, 33.0, 31.0]})
    claim = findings.Findings(inv.measure.NAME, {}).verdict("deployment_paths.xnnpack_scaling", inv_judge.judge_xnnpack_scaling(run))
    assert claim.verdict == "inconclusive" and claim.conditions["differ"] == ["cpu"]
    assert "would say refuted" in claim.evidence and "Intel Xeon" in claim.evidence


def test_side_by_side_needs_two_correct_cpu_rows_and_tables_say_why():
    assert inv.measure.side_by_side([_row(backend="et_xnnpack", prepare="ok")], timeout=10) is None
    assert inv.side_by_side_frame(_run([]))["status"].tolist() == ["skipped"]


def test_et_cuda_claims_rest_only_on_the_back_ends_defaults():
    aoti_ok = _row(backend="aoti", device="cuda", prepare="ok", imgsz=640)

    def verdicts(et: inv.measure.Row) -> tuple[str, str]:
        run = _run([aoti_ok, _row(backend="et_xnnpack", prepare="ok", imgsz=640), et], "cuda", imgsz=640)
        return (inv_judge.judge_cuda_aoti_backbone_only(run).verdict, inv_judge.judge_recommend_xnnpack(run).verdict)

    kit = _row(backend="et_cuda", device="cuda", prepare="error", imgsz=640, options="kit: max_autotune=False",
               error="NoValidChoicesError: No choices exist for backend")
    assert verdicts(kit) == ("inconclusive", "inconclusive")  # a failure of the kit's own making
    unsaid = _row(backend="et_cuda", device="cuda", prepare="error", imgsz=640, error="NoValidChoicesError")
    assert verdicts(unsaid) == ("inconclusive", "inconclusive")  # no backend_options recorded: not the defaults
    assert "not recorded" in inv_judge.et_cuda_options(unsaid)
    failed = _row(backend="et_cuda", device="cuda", prepare="error", imgsz=640, options="defaults",
                  error="NoValidChoicesError: All choices failed to compile for backend")
    # the whole model fails; the backbone alone was not tried (no backbone parts here): one half decides nothing
    assert verdicts(failed) == ("inconclusive", "confirmed")
    ran = _row(backend="et_cuda", device="cuda", prepare="ok", imgsz=640, options="defaults", ms=3.0)
    assert verdicts(ran) == ("refuted", "partly")
    timeout = _row(backend="et_cuda", device="cuda", prepare="timeout", imgsz=640, options="defaults")
    assert verdicts(timeout) == ("inconclusive", "inconclusive")
    crash = _row(backend="et_cuda", device="cuda", prepare="crash", imgsz=640, options="defaults")
    assert verdicts(crash) == ("inconclusive", "inconclusive")  # a lowering that died says nothing either way
    skipped = inv.measure.Row(inv.measure.Case(model="yolo26n", backend="et_cuda", device="cuda", imgsz=640),
                      [isolate.skipped("et_cuda", "the quick profile does not lower the whole model with ExecuTorch CUDA")])
    judged = inv_judge.judge_cuda_aoti_backbone_only(_run([aoti_ok, skipped], "cuda", imgsz=640))
    assert judged.verdict == "inconclusive" and "quick profile" in judged.evidence and judged.basis == "none"
    assert inv_judge.judge_cuda_aoti_backbone_only(_run([aoti_ok, timeout], "cuda", imgsz=640)).basis == "measured"
    cpu = inv_judge.judge_cuda_aoti_backbone_only(_run([_row(backend="aoti", prepare="ok")]))
    assert cpu.verdict == "needs_cuda" and "ran" in cpu.evidence


def test_gpu_latency_is_decided_only_by_tensorrt_on_an_a100():
    quick = _run([_row(backend="compile_cudagraphs", device="cuda", ms=1.5, imgsz=640)], "cuda", imgsz=640,
                 gpu="NVIDIA H100 80GB HBM3")
    judged = inv_judge.judge_gpu_latency(quick)
    assert judged.verdict == "inconclusive" and "neither TensorRT" in judged.evidence
    assert judged.run["gpu"] == "H100" and judged.data["measured_instead"][0]["ms"] == 1.5
    assert inv_judge.judge_gpu_latency(_run([_row()])).verdict == "needs_cuda"
    assert inv_judge.gpu_class("NVIDIA A100-SXM4-80GB") == "A100"


def test_reduced_precision_rows_that_differ_are_not_the_fastest_correct_path():
    few = DETS.clone()
    few[:, 60:, 5] = (few[:, 60:, 5] + 1) % 80
    half = _row(device="cuda", dtype="fp16", ms=1.0, output=few)
    assert not half.correct
    fastest = inv.fastest_frame([_row(device="cuda", ms=5.0), half])
    assert fastest.iloc[0]["fastest correct"] == "eager"


def test_compile_alternative():
    rows = [_row(device="cuda", ms=8.0), _row(backend="compile", device="cuda", ms=4.0),
            _row(backend="compile_cudagraphs", device="cuda", status="error")]
    judged = inv_judge.judge_torch_compile_alternative(_run(rows, "cuda"))
    assert judged.verdict == "confirmed" and judged.evidence.startswith("1 of 2") and "2.00×" in judged.evidence
    assert inv_judge.judge_recommend_xnnpack(_run([_row(), _row(backend="et_xnnpack", prepare="ok")])).verdict == "needs_cuda"


def test_all_variants_never_confirmed_with_fewer_than_25():
    tasks = [_row(backend="et_xnnpack", task=t, timed=False) for t in ("detect", "segment")]
    judged = inv_judge.judge_xnnpack_all_variants(_run([], task_rows=tasks))
    assert judged.verdict == "inconclusive" and "2 of 25 tried" in judged.evidence
    tasks.append(_row(backend="et_xnnpack", task="pose", timed=False, prepare="error", error="unsupported op"))
    judged = inv_judge.judge_xnnpack_all_variants(_run([], task_rows=tasks))
    assert judged.verdict == "refuted" and judged.evidence.startswith("2 of 3")


def test_ultralytics_exporter_rows_say_whether_the_postprocess_is_in_the_program():
    raw = torch.randn(1, 84, 2100)
    assert inv.measure.compare_raw([raw.clone()], [raw])["close"] and not inv.measure.compare_raw([raw.clone()], [raw])[
        "postprocess_in_program"]
    assert not inv.measure.compare_raw([raw + 1.0], [raw])["close"]
    assert inv.measure.compare_raw([DETS.clone()], [DETS])["postprocess_in_program"]
    case = inv.measure.Case(model="yolo26n", backend="et_xnnpack", device="cpu", export_path=inv.measure.ULTRALYTICS_EXPORTER)
    ux = inv.measure.Row(case, [isolate.Outcome(f"{case.tag}:prepare", "ok", 90.0, value={"artifact": "a.pte"}),
                        isolate.Outcome(f"{case.tag}:run", "ok", 2.0, value={"outputs": [raw], "median_ms": 5.0})])
    ux.delta = inv.measure.compare_raw([raw], [raw])
    assert ux.correct and inv.measure.label(ux).endswith("via ultralytics' exporter")
    tasks = [_row(backend="et_xnnpack", task="detect", timed=False)]
    judged = inv_judge.judge_xnnpack_all_variants(_run([ux], task_rows=tasks))
    assert "postprocess is not in the program" in judged.evidence and "1x84x2100" in judged.evidence
    assert judged.run["export_path"] == inv.measure.KIT_EXPORT
    assert inv.fastest_frame([_row(ms=20.0), ux]).iloc[0]["fastest correct"] == "eager"  # raw output: not comparable


def test_onnxruntime_is_judged_on_the_stock_model():
    ort = _row(backend="onnxruntime", provider="CPUExecutionProvider")

    def dyn(stock_ok: bool) -> isolate.Outcome:
        stock = ([{"model_variant": "stock", "spec": "derived", "size": s, "correct": True} for s in (160, 320)]
                 if stock_ok else [{"model_variant": "stock", "spec": "derived", "stage": "torch.export",
                                    "correct": False, "error": "LoweringFailed"}])
        kit = [{"model_variant": "kit-modified", "spec": "derived_kit", "size": s, "correct": True} for s in (160, 320)]
        return isolate.Outcome("dyn", "ok", value=stock + kit)

    assert inv_judge.judge_onnxruntime(_run([ort], dynamic=dyn(True))).verdict == "confirmed"
    partly = inv_judge.judge_onnxruntime(_run([ort], dynamic=dyn(False)))  # only the kit-modified model runs dynamic
    assert partly.verdict == "partly" and partly.run["model_variant"] == "stock"
    # a second stock route (ultralytics' exporter, dynamic=True) that works is enough
    both = dyn(False)
    both.value += [{"model_variant": "stock", "spec": "ultralytics exporter, dynamic=True", "size": s, "correct": True}
                   for s in (160, 320)]
    assert inv_judge.judge_onnxruntime(_run([ort], dynamic=both)).verdict == "confirmed"
    broken = isolate.Outcome("dyn", "error", error="export failed")
    assert inv_judge.judge_onnxruntime(_run([ort], dynamic=broken)).verdict == "inconclusive"
    missing = _row(backend="onnxruntime", provider="CPUExecutionProvider", status="skipped")
    assert inv_judge.judge_onnxruntime(_run([missing])).verdict == "inconclusive"


@pytest.mark.notebook
def test_notebook_end_to_end(run_notebook):
    # ultralytics' exporter rows (on by default) add an ExecuTorch export of a few minutes on 2 busy cores
    results = run_notebook("deployment_paths", timeout=1800, device="cpu", cpu_models=["yolo26n"], cpu_compile_models=[],
                           cpu_imgsz=160, cpu_backends=["eager", "aoti", "et_xnnpack", "onnxruntime"],
                           cpu_tasks=["detect", "classify"], task_imgsz=160, min_run_time=0.1, step_timeout=900.0)
    verdicts = {c["id"]: c["verdict"] for c in results["claims"]}
    assert set(verdicts) == set(inv.JUDGES) and not results["missing_claims"]
    for claim in ("cuda_aoti_backbone_only", "recommend_xnnpack", "torch_compile_alternative", "gpu_latency"):
        assert verdicts[f"deployment_paths.{claim}"] == "needs_cuda"
    assert verdicts["deployment_paths.xnnpack_scaling"] == "inconclusive"  # one size: no growth to judge
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
    assert len(xnn_vs_eager["data"]["pairs"][0]["rounds"]) == inv.measure.SIDE_BY_SIDE_ROUNDS
    assert xnn_vs_eager["conditions"]["run"]["imgsz"] == 160 and xnn_vs_eager["verdict"] == "inconclusive"
    assert all("conditions" in c and c["basis"] for c in results["claims"])
    shipped = [r for r in results["tables"]["latency"] if r["export_path"] == inv.measure.ULTRALYTICS_EXPORTER]
    assert {r["backend"].split(" ")[0] for r in shipped} == {"et_xnnpack", "onnxruntime"}
    assert all(r["status"] in ("ok", "skipped") for r in shipped)  # what the exporter ships, as shipped
    assert all(r["output_shape"] == "1x84x525" for r in shipped if r["status"] == "ok")  # top-k head off


def test_on_cpu_every_build_comes_first_and_the_timed_runs_follow_alone(monkeypatch):
    """build_all + run_all(built=...): builds overlap each other (and the extra check), never a run; runs are one at
    a time and each case's run gets its own build's artifact."""
    import threading
    import time

    from yolo26kit.investigations.deployment_paths import measure

    cases = inv.measure.plan(["yolo26n"], ["yolo26n"], 320, "cpu", list(inv.measure.BACKENDS), ["fp32"], ["detect"], ["yolo26n"], 320)
    lock, live, events = threading.Lock(), [], []

    def fake_run_step(fn, *args, step="", **kwargs):
        with lock:
            live.append(step)
            events.append(("start", step, tuple(live)))
        time.sleep(0.05)
        with lock:
            live.remove(step)
        if step.endswith(":prepare"):
            return isolate.Outcome(step, "ok", value={"artifact": f"/built/{step}", "end2end": False})
        return isolate.Outcome(step, "error", error=f"fake run of {args[1] if len(args) > 1 else ''}")

    monkeypatch.setattr(isolate, "run_step", fake_run_step)
    built, extra = measure.build_all(cases, 60, ["yolo26n"], (), 3, lambda: fake_run_step(None, step="dynamic check"))
    assert extra[0].step == "dynamic check" and all(o is None or o.ok for o in built.values())
    assert max(len(e[2]) for e in events) > 1  # the builds did overlap
    events.clear()
    rows = measure.run_all(cases, 60, ["yolo26n"], workers=4, built=built)
    assert not any(e[1].endswith(":prepare") for e in events)  # nothing is built again
    assert all(len(e[2]) == 1 for e in events)  # each run alone
    checked = 0
    for row in rows:
        prepared = built.get(cases.index(row.case))
        if prepared is not None:
            assert row.outcomes[0] is prepared and prepared.value["artifact"] in row.outcomes[-1].error
            checked += 1
    assert checked >= 3  # AOTI, XNNPACK, ONNX Runtime and ultralytics' exports at least


def test_a_failed_et_cuda_lowering_records_the_defaults_it_used_and_the_workers_error(monkeypatch):
    from yolo26kit.investigations.deployment_paths import measure

    worker = ("InductorError: RuntimeError: Failed to run autotuning code block: An exception occurred in a "
              "subprocess:\n\nName=0\nTraceback (most recent call last):\n  File \"x.py\", line 1\n"
              "triton.compiler.errors.CompilationError: at 24:20:\n")

    def failing_step(fn, case, **kw):
        return isolate.Outcome(kw["step"], "error", 240.0, error=worker.splitlines()[0], traceback=worker)

    monkeypatch.setattr(isolate, "run_step", failing_step)
    case = inv.measure.Case(model="yolo26n", backend="et_cuda", device="cuda", imgsz=640)
    outcome = measure.prepare(case, 60.0)
    assert outcome.details["backend_options"] == "defaults"
    row = inv.measure.Row(case, [outcome])
    assert inv_judge.et_cuda_options(row) == "defaults"
    run = _run([_row(backend="aoti", device="cuda", prepare="ok", imgsz=640), row], "cuda", imgsz=640)
    judged = inv_judge.judge_cuda_aoti_backbone_only(run)
    assert judged.verdict == "inconclusive" and "whether the backbone alone does, this run did not measure" in judged.evidence
    assert "after 240 s" in judged.evidence and "the worker raised triton.compiler.errors.CompilationError" in judged.evidence
    xnnpack = inv.measure.Case(model="yolo26n", backend="et_xnnpack", device="cpu", imgsz=640)
    assert "backend_options" not in measure.prepare(xnnpack, 60.0).details


def test_variant_modules_reads_all_25_variants_and_tells_tasks_apart():
    """ultralytics' parser on the meta device: every task/model pair, each task's own head among its module types."""
    from yolo26kit.investigations.deployment_paths import measure

    found = measure.step_variant_modules()
    assert len(found) == inv_judge.ALL_VARIANTS
    assert "Detect" in found["detect/yolo26n"] and "Detect" not in found["classify/yolo26n"]
    assert found["segment/yolo26n"] != found["detect/yolo26n"]  # a different head: another set, so no stand-in


def test_side_by_side_times_rounds_until_the_judged_ratios_decide(monkeypatch):
    """At least 5 rounds; more while a judged ratio straddles its band; at most 15; a fixed count when asked."""
    from types import SimpleNamespace

    from yolo26kit.bench import timing
    from yolo26kit.investigations.deployment_paths import measure

    def scripted(xnn_ms: list[float]):
        calls = iter(xnn_ms)

        def rounds(fns, device, n, warmup, min_run_time):
            return {"x": SimpleNamespace(round_medians_ms=(next(calls),)), "e": SimpleNamespace(round_medians_ms=(10.0,))}
        return rounds

    monkeypatch.setattr(measure, "case_runner", lambda case, artifact: (lambda: None, {}))
    cases = [(SimpleNamespace(tag="x"), ""), (SimpleNamespace(tag="e"), "")]
    band = [("x", "e", 0.0, 1.0)]  # XNNPACK at most as slow as eager
    monkeypatch.setattr(timing, "measure_rounds", scripted([5.0] * 20))
    assert len(measure.step_side_by_side(cases, band)["medians"]["x"]) == 5  # clear from the start
    monkeypatch.setattr(timing, "measure_rounds", scripted([5.0, 15.0, 5.0, 15.0, 15.0, 5.0, 5.0, 5.0] + [5.0] * 12))
    got = measure.step_side_by_side(cases, band)["medians"]["x"]
    assert 5 < len(got) < 15  # straddled at 5 rounds, then decided
    monkeypatch.setattr(timing, "measure_rounds", scripted([5.0, 15.0] * 10))
    assert len(measure.step_side_by_side(cases, band)["medians"]["x"]) == 15  # never decides: the cap
    monkeypatch.setattr(timing, "measure_rounds", scripted([5.0] * 20))
    assert len(measure.step_side_by_side(cases, band, rounds=3)["medians"]["x"]) == 3
