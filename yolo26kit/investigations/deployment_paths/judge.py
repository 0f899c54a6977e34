"""Deployment paths: one judge per claim of data/claims/deployment_paths.json, each reading the run's rows."""

from __future__ import annotations

import os
from typing import Any, Callable

import pandas as pd

from ... import env, findings, yolo
from .. import dynamic_shapes
from .measure import SEED_LATENCY_MS, TASKS, TORCH_NATIVE_CUDA, Row, Run
from .show import _label


# --- verdicts -------------------------------------------------------------------------------------

def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g} ms"


def _pick(run: Run, backend: str, model: str, device: str | None = None, dtype: str = "fp32",
          provider: str = "") -> Row | None:
    return next((r for r in run.rows if r.case.backend == backend and r.case.model == model and r.case.timed
                 and r.case.task == "detect" and r.case.dtype == dtype and (device is None or r.case.device == device)
                 and (not provider or r.case.provider == provider)), None)


def _state(row: Row | None) -> str:
    """A row's outcome in a few words: ran and matched / differs / failed how / skipped why."""
    if row is None:
        return "not in the run"
    if row.correct:
        rate = row.delta.get("match_rate")
        return f"ran, {rate:.0%} of eager's detections matched" if isinstance(rate, float) else "ran, matched eager"
    if row.ok:
        return f"ran but differs from eager (matched {row.delta.get('match_rate')})"
    final = row.final
    return f"{final.status}: {final.error[:140]}"


def judge_cuda_aoti_backbone_only(run: Run) -> tuple[str, str, dict[str, Any]]:
    """Seed 001's table: CUDA AOTI exports only the backbone; the whole model (postprocess included) does not run."""
    model = run.models[0] if run.models else "yolo26n"
    plain = _pick(run, "aoti", model)
    if not run.on_cuda:
        return "needs_cuda", (f"No CUDA device in this run; on CPU plain AOT Inductor of the whole {model} (postprocess "
                              f"included): {_state(plain)}."), {}
    et = _pick(run, "et_cuda", model)
    lowered = et is not None and et.prepare is not None and et.prepare.ok
    load = f" (loaded {plain.run.details.get('aoti_load')})" if plain is not None and plain.run is not None else ""
    evidence = (f"{int(bool(et and et.correct)) + int(bool(plain and plain.correct))} of 2 CUDA AOT Inductor routes ran "
                f"the whole {model} at {run.imgsz} px and matched eager: ExecuTorch CUDA: "
                f"{'lowered; ' + _state(et) if lowered else _state(et)}; plain AOT Inductor: {_state(plain)}{load}")
    data = {"et_cuda": _state(et), "aoti": _state(plain), "et_cuda_lowered": lowered}
    if et is None or (et.prepare is None and not et.ok):
        return "error", f"the et_cuda path did not run: {evidence}", data
    if et.correct:
        return "refuted", evidence, data
    if lowered and et.final.status == "skipped":
        return "partly", evidence + " — the whole model lowers through ExecuTorch's CUDA back-end; this runtime " \
            "cannot run it", data
    if plain is not None and plain.correct:
        return "partly", evidence + " — ExecuTorch's CUDA back-end fails on the whole model (holds), plain AOT " \
            "Inductor runs it end to end (the limitation is not AOTI's)", data
    return "confirmed", evidence, data


def judge_recommend_xnnpack(run: Run) -> tuple[str, str, dict[str, Any]]:
    """Seed 001's conclusion: with ExecuTorch, use XNNPACK; its CUDA back-end is unsuitable for YOLO26."""
    model = run.models[0] if run.models else "yolo26n"
    xnn, et = _pick(run, "et_xnnpack", model), _pick(run, "et_cuda", model)
    ok_models = sorted({r.case.model for r in run.rows if r.case.backend == "et_xnnpack" and r.case.timed and r.correct},
                       key=lambda m: yolo.SCALES.index(yolo.scale_of(m)))
    tried = sorted({r.case.model for r in run.rows if r.case.backend == "et_xnnpack" and r.case.timed},
                   key=lambda m: yolo.SCALES.index(yolo.scale_of(m)))
    xnn_text = f"{len(ok_models)} of {len(tried)} sizes ran the whole model on XNNPACK and matched eager ({', '.join(tried)})"
    if xnn is None:
        return "error", "et_xnnpack was not among the back-ends", {}
    if not run.on_cuda:
        return "needs_cuda", f"No CUDA device in this run for ExecuTorch's CUDA back-end; on CPU {xnn_text}.", {}
    evidence = f"{xnn_text}; ExecuTorch CUDA on {model}: {_state(et)}"
    if not ok_models:
        return "refuted", evidence, {}
    if et is not None and et.correct:
        faster = et.median_ms is not None and xnn.median_ms is not None and et.median_ms < xnn.median_ms
        return "partly", evidence + (f" — and it is faster ({_ms(et.median_ms)} vs {_ms(xnn.median_ms)})" if faster
                                     else ""), {}
    return "confirmed", evidence, {}


def judge_xnnpack_all_variants(run: Run) -> tuple[str, str, dict[str, Any]]:
    """Seed 000: XNNPACK has full model support, all 25 variants (5 tasks × 5 sizes), postprocessing included."""
    rows = run.task_rows
    if not rows:
        return "error", "no task variant was checked (tasks or task_models empty)", {}
    good = [r for r in rows if r.correct]
    bad = {f"{r.case.task}/{r.case.model}": _state(r) for r in rows if not r.correct}
    tasks = sorted({r.case.task for r in rows}, key=TASKS.index)
    evidence = (f"{len(good)} of {len(rows)} YOLO26 variants tried lowered to XNNPACK, ran in executorch.runtime and "
                f"matched eager ({len(tasks)} tasks: {', '.join(tasks)}; sizes "
                f"{', '.join(sorted({r.case.model for r in rows}))}; {rows[0].case.imgsz} px)"
                + (f"; failing: {bad}" if bad else "") + ("" if len(rows) >= 25 else
                                                         "; the full profile tries all 25"))
    data = {"tried": len(rows), "correct": len(good), "failing": bad}
    if len(good) == len(rows):
        return "confirmed", evidence, data
    return ("partly" if good else "refuted"), evidence, data


def judge_torch_compile_alternative(run: Run) -> tuple[str, str, dict[str, Any]]:
    """Seed 000: explore torch.compile with the CUDA back-end as an alternative to ExecuTorch."""
    model = run.models[0] if run.models else "yolo26n"
    modes = {b: _pick(run, b, model) for b in ("compile", "compile_cudagraphs")}
    eager = _pick(run, "eager", model, run.device)
    if not run.on_cuda:
        cpu = modes["compile"]
        part = (f"torch.compile (default) of the whole {model}: {_state(cpu)}, {_ms(cpu.median_ms)} vs eager "
                f"{_ms(eager.median_ms if eager else None)}" if cpu is not None and cpu.ok else
                f"torch.compile: {_state(cpu)}" if cpu is not None else
                "torch.compile was not among this CPU run's back-ends (the full profile has it)")
        return "needs_cuda", f"No CUDA device in this run; on CPU {part}.", {}
    parts, data = [], {}
    for backend, row in modes.items():
        speed = (f", {_ms(row.median_ms)} = {eager.median_ms / row.median_ms:.2f}× eager fp32's {_ms(eager.median_ms)}, "
                 f"first call {row.run.value['first_call_s']:.0f} s" if row and row.correct and eager and eager.median_ms
                 else "")
        parts.append(f"{backend}: {_state(row)}{speed}")
        data[backend] = {"state": _state(row), "median_ms": row.median_ms if row else None}
    working = [b for b, r in modes.items() if r is not None and r.correct]
    evidence = f"{len(working)} of 2 torch.compile modes ran the whole {model} on CUDA and matched eager: " + "; ".join(parts)
    if working:
        return "confirmed", evidence, data
    if all(r is None for r in modes.values()):
        return "error", "neither compile mode was among the back-ends", data
    return "refuted", evidence, data


def judge_onnxruntime(run: Run) -> tuple[str, str, dict[str, Any]]:
    """Seed 001: ONNX Runtime runs the full model with flexible (dynamic) shapes."""
    model = run.models[0] if run.models else "yolo26n"
    row = _pick(run, "onnxruntime", model, "cpu")
    if row is None:
        return "error", "onnxruntime was not among the back-ends", {}
    if row.final.status == "skipped":
        return "error", f"ONNX Runtime did not run here: {row.final.error}", {}
    dyn = run.onnx_dynamic
    dyn_rows = dyn.value if dyn is not None and dyn.ok else []
    dyn_ok = bool(dyn_rows) and all(r["correct"] for r in dyn_rows)
    dyn_text = (f"dynamic H/W program ({dynamic_shapes.RECOMMENDED} spec): " +
                (", ".join(f"{r['size']} px {'matched' if r['correct'] else 'differs'}" for r in dyn_rows) if dyn_rows
                 else (f"{dyn.status}: {dyn.error[:140]}" if dyn is not None else "not run")))
    evidence = (f"{int(row.correct) + int(dyn_ok)} of 2: ONNX Runtime (CPU EP) on the whole {model} at {row.case.imgsz} "
                f"px: {_state(row)}, {_ms(row.median_ms)}; {dyn_text}")
    data = {"static": _state(row), "dynamic": dyn_rows}
    if row.correct and dyn_ok:
        return "confirmed", evidence, data
    return ("partly" if row.correct or dyn_ok else "refuted"), evidence, data


def _ratio_band(table: dict[str, tuple[float, float]], small: str, big: str) -> tuple[float, float]:
    """The range of big/small latency ratios the seed's two ranges allow."""
    (lo_a, hi_a), (lo_b, hi_b) = table[small], table[big]
    return lo_b / hi_a, hi_b / lo_a


def _placement(ratio: float, paired: dict[str, float] | None, lo: float, hi: float) -> str:
    """Where a measured ratio sits against the band [lo, hi]: `inside` or `outside`, or `straddles` when the
    side-by-side rounds fall on both sides of an edge, so this machine's noise cannot tell."""
    if paired is None:
        return "inside" if lo <= ratio <= hi else "outside"
    if lo <= paired["min"] and paired["max"] <= hi:
        return "inside"
    return "outside" if paired["max"] < lo or paired["min"] > hi else "straddles"


def _band_verdict(placements: list[str]) -> str:
    """confirmed when every step is inside its band, refuted when every one is outside, else partly."""
    if all(p == "inside" for p in placements):
        return "confirmed"
    return "refuted" if all(p == "outside" for p in placements) else "partly"


_STRADDLE = " — the rounds fall on both sides of the band, so the measurement cannot decide"

_CPU_ON_CUDA = ("; on a CUDA run the CPU rows are timed while other steps (and notebooks) compile beside them: "
                "the CPU run is the cleaner measurement")


def judge_xnnpack_vs_eager(run: Run) -> tuple[str, str, dict[str, Any]]:
    """Seed 000: XNNPACK gives good CPU performance (15–20 ms for yolo26n at 640 on the seed's CPU): judged as
    XNNPACK vs eager PyTorch on the same CPU, the part that transfers across machines."""
    pairs = []
    for model in sorted({r.case.model for r in run.rows}, key=lambda m: yolo.SCALES.index(yolo.scale_of(m))):
        xnn, eager = _pick(run, "et_xnnpack", model), _pick(run, "eager", model, "cpu")
        if xnn and eager and xnn.correct and xnn.median_ms and eager.median_ms:
            paired = run.cpu_ratio(xnn.case, eager.case)  # timed in turn in one process, when that step ran
            ratio = paired["ratio"] if paired else xnn.median_ms / eager.median_ms
            place = _placement(ratio, paired, 0.0, 1.0)  # faster: every round below 1
            pairs.append((model, xnn.median_ms, eager.median_ms, xnn.case.imgsz, ratio, paired, place))
    if not pairs:
        first = _pick(run, "et_xnnpack", run.models[0]) if run.models else None
        return "error", f"no XNNPACK/eager CPU pair was timed: XNNPACK {_state(first)}", {}
    cpu = env._cpu_name()
    text = "; ".join(f"{m}: XNNPACK {_ms(x)} vs eager {_ms(e)}, {r:.2f}×" +
                     (f" side by side ({p['rounds']} rounds: {p['min']:.2f}–{p['max']:.2f}×)" if p else "") +
                     (", faster in some rounds and slower in others" if place == "straddles" else "")
                     for m, x, e, _, r, p, place in pairs)
    faster = [p for p in pairs if p[6] == "inside"]
    evidence = (f"{len(faster)} of {len(pairs)} sizes faster on XNNPACK than eager PyTorch fp32 on the same CPU at "
                f"{pairs[0][3]} px: {text} ({cpu}, {os.cpu_count()} cores); the seed's 15–20 ms is yolo26n at 640 px "
                f"on an Intel Core i7, not comparable in absolute terms{_CPU_ON_CUDA if run.on_cuda else ''}")
    data = {"pairs": [{"model": m, "xnnpack_ms": x, "eager_ms": e, "imgsz": s, "ratio": r, "side_by_side": p,
                       "faster": place} for m, x, e, s, r, p, place in pairs]}
    return _band_verdict([p[6] for p in pairs]), evidence, data


def judge_xnnpack_scaling(run: Run) -> tuple[str, str, dict[str, Any]]:
    """Seed 001's XNNPACK column: latency grows yolo26n ~15–20 … yolo26x ~200–250 ms; judged by the growth ratios
    between the sizes measured, against the ratios the seed's ranges allow."""
    timed = sorted((r for r in run.rows if r.case.backend == "et_xnnpack" and r.case.timed and r.case.task == "detect"
                    and r.correct and r.median_ms), key=lambda r: yolo.SCALES.index(yolo.scale_of(r.case.model)))
    if len(timed) < 2:
        return "error", (f"{len(timed)} size(s) timed on XNNPACK: growth with size needs two (this profile's models: "
                         f"{', '.join(run.models)}; the full profile times n…x)"), {}
    checks = []
    for a, b in zip(timed, timed[1:]):
        sa, sb = yolo.scale_of(a.case.model), yolo.scale_of(b.case.model)
        lo, hi = _ratio_band(SEED_LATENCY_MS["xnnpack_i7"], sa, sb)
        paired = run.cpu_ratio(b.case, a.case)  # both sizes timed in turn in one process, when that step ran
        ratio = paired["ratio"] if paired else b.median_ms / a.median_ms
        checks.append({"from": a.case.model, "to": b.case.model, "ratio": round(ratio, 2), "seed_band": [round(lo, 2),
                       round(hi, 2)], "placement": _placement(ratio, paired, lo, hi),
                       "rows_ratio": round(b.median_ms / a.median_ms, 2),
                       **({"side_by_side": {k: round(v, 2) for k, v in paired.items()}} if paired else {})})
    inside = [c for c in checks if c["placement"] == "inside"]
    how = lambda c: (f" (side by side, {c['side_by_side']['rounds']} rounds: {c['side_by_side']['min']}–"  # noqa: E731
                     f"{c['side_by_side']['max']}; the rows' separate timings give ×{c['rows_ratio']})"
                     if "side_by_side" in c else " (from the rows' separate timings)")
    evidence = (f"{len(inside)} of {len(checks)} size steps grow as the seed's XNNPACK column allows: " +
                "; ".join(f"{c['from']}→{c['to']} ×{c['ratio']}{how(c)} (seed ×{c['seed_band'][0]}–"
                          f"{c['seed_band'][1]}){_STRADDLE if c['placement'] == 'straddles' else ''}"
                          for c in checks) +
                f"; measured at {timed[0].case.imgsz} px on this CPU, the seed's at 640 px on an Intel Core i7"
                + (_CPU_ON_CUDA if run.on_cuda else ""))
    return _band_verdict([c["placement"] for c in checks]), evidence, {"steps": checks}


def judge_gpu_latency(run: Run) -> tuple[str, str, dict[str, Any]]:
    """Seed 001's GPU columns: TensorRT ~1–2 … 12–18 ms, hybrid CUDA (backbone only) ~2–3 … 18–25 ms on an A100.
    Judged by whether a torch-native CUDA path running the whole model reaches the band credited only to TensorRT."""
    if not run.on_cuda:
        best = [r for r in run.rows if r.case.device == "cpu" and r.case.timed and r.correct and r.median_ms]
        fastest = min(best, key=lambda r: r.median_ms) if best else None
        return "needs_cuda", ("No CUDA device in this run; on CPU the fastest correct path was "
                              f"{_label(fastest) + ' ' + _ms(fastest.median_ms) if fastest else 'none'}."), {}
    steps = []
    for model in run.models:
        scale = yolo.scale_of(model)
        native = sorted((r for r in run.rows if r.case.model == model and r.case.device.startswith("cuda")
                         and r.case.backend in TORCH_NATIVE_CUDA and r.case.timed and r.correct and r.median_ms),
                        key=lambda r: r.median_ms)
        trt = _pick(run, "tensorrt", model)
        if not native:
            continue
        lo, hi = SEED_LATENCY_MS["tensorrt_a100"][scale]
        steps.append({"model": model, "path": _label(native[0]), "ms": round(native[0].median_ms, 3),
                      "seed_tensorrt": [lo, hi], "seed_hybrid": list(SEED_LATENCY_MS["hybrid_cuda_a100"][scale]),
                      "reaches": native[0].median_ms <= hi,
                      "tensorrt_ms": trt.median_ms if trt is not None and trt.correct else None})
    if not steps:
        return "error", "no torch-native CUDA path ran the whole model correctly", {}
    reach = [s for s in steps if s["reaches"]]
    device = env.fingerprint()["device"]
    text = "; ".join(f"{s['model']}: {s['path']} {s['ms']:.3g} ms (seed: TensorRT {s['seed_tensorrt'][0]:g}–"
                     f"{s['seed_tensorrt'][1]:g}, hybrid {s['seed_hybrid'][0]:g}–{s['seed_hybrid'][1]:g} ms)" for s in steps)
    trt_text = "; TensorRT measured here: " + ", ".join(f"{s['model']} {_ms(s['tensorrt_ms'])}" for s in steps) \
        if any(s["tensorrt_ms"] for s in steps) else "; TensorRT is not installed here"
    evidence = (f"{len(reach)} of {len(steps)} sizes: a torch-native CUDA path running the whole model (postprocess "
                f"included) is within the seed's TensorRT figure: {text}{trt_text}. Measured on {device} at "
                f"{run.imgsz} px; the seed's figures are an A100's (an H100 is a faster GPU), so only the ordering "
                "transfers")
    data = {"steps": steps}
    if not reach:
        return "confirmed", evidence, data
    return ("refuted" if len(reach) == len(steps) else "partly"), evidence, data


JUDGES: dict[str, Callable[[Run], tuple[str, str, dict[str, Any]]]] = {
    "deployment_paths.cuda_aoti_backbone_only": judge_cuda_aoti_backbone_only,
    "deployment_paths.recommend_xnnpack": judge_recommend_xnnpack,
    "deployment_paths.xnnpack_all_variants": judge_xnnpack_all_variants,
    "deployment_paths.torch_compile_alternative": judge_torch_compile_alternative,
    "deployment_paths.onnxruntime_full_dynamic": judge_onnxruntime,
    "deployment_paths.gpu_latency": judge_gpu_latency,
    "deployment_paths.xnnpack_vs_eager": judge_xnnpack_vs_eager,
    "deployment_paths.xnnpack_scaling": judge_xnnpack_scaling,
}


def judge(found: findings.Findings, run: Run) -> pd.DataFrame:
    """Record every claim's verdict from the run; a judge that breaks records `error` for its claim only."""
    return found.judge_all(JUDGES, run)
