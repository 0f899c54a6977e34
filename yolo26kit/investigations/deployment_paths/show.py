"""Deployment paths: the tables (latency, fastest correct path, the seed beside this run, task variants, dynamic
ONNX) and the latency-vs-size plot."""

from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from ...conclusion import clip
from ... import env
from ...verdicts import median_round
from ...bench import artifacts, yolo
from .measure import KIT_EXPORT, SEED_LATENCY_MS, TORCH_NATIVE_CUDA, Row, Run, label


# --- tables ---------------------------------------------------------------------------------------

def _round(value: Any, digits: int = 3) -> Any:
    return round(value, digits) if isinstance(value, float) else value


def row_dicts(row: Row) -> list[dict[str, Any]]:
    """One table row per run attempt (an AOTI case shows its as-is load and the workaround's); a failed prepare step
    or a skip is the case's only row."""
    c = row.case
    prepare = row.prepare
    attempts = [o for o in row.outcomes if o is not prepare] if prepare is None or prepare.ok else [prepare]
    out = []
    for o in attempts or row.outcomes:
        counts = o is row.run
        value = o.value if o.ok and isinstance(o.value, dict) else {}
        out.append({
            "task": c.task, "model": c.model, "backend": c.backend + (f" ({c.provider})" if c.provider else ""),
            "export_path": c.export_path if c.backend in ("et_xnnpack", "onnxruntime", "aoti", "et_cuda") else "",
            "device": c.device, "dtype": c.dtype, "imgsz": c.imgsz, "status": o.status,
            "median_ms": _round(row.median_ms if counts else value.get("median_ms")),
            "iqr_ms": _round(value.get("iqr_ms")),
            "first_call_s": _round(value.get("first_call_s")),
            "prepare_s": _round(prepare.seconds, 2) if prepare is not None else None,
            "cached": artifacts.served(prepare) if counts else None,
            "peak_mib": _round(value.get("peak_mib"), 1), "mem_kind": value.get("mem_kind", ""),
            "matched": _round(row.delta.get("match_rate")) if counts else None,
            "output_shape": "x".join(map(str, row.delta.get("output_shape", []))) if counts else "",
            "score_max_abs": row.delta.get("score_max_abs") if counts else None,
            "correct": row.correct if counts else None,
            "aoti_load": o.details.get("aoti_load", "") if c.backend == "aoti" else "",
            "cause": o.details.get("cause", ""), "threads": value.get("threads"),
            "graph_breaks": value.get("graph_breaks") if c.backend.startswith("compile") else None,
            "cudagraph_skips": value.get("cudagraph_skips") if c.backend == "compile_cudagraphs" else None,
            "failed step": "" if o.ok else o.step, "error": clip(o.error, 200),
            "exporter notes": "; ".join(prepare.value.get("notes", [])) if prepare is not None and prepare.ok
            and isinstance(prepare.value, dict) else "",
            "seconds": round(sum(x.seconds for x in row.outcomes), 2),
        })
    return out


def latency_frame(rows: list[Row]) -> pd.DataFrame:
    """The `latency` table: one row per back-end attempt of the main (detect) cases, timed ones."""
    return pd.DataFrame([d for r in rows if r.case.timed for d in row_dicts(r)])


def tasks_frame(rows: list[Row]) -> pd.DataFrame:
    """The XNNPACK task-variant check: per task and size, lowered, ran, matched eager (CPU)."""
    out = []
    for r in rows:
        prepare = r.prepare
        out.append({"task": r.case.task, "model": r.case.model, "imgsz": r.case.imgsz,
                    "lowered": prepare.status if prepare is not None else r.final.status,
                    "ran": r.run is not None, "matched": _round(r.delta.get("match_rate")),
                    "score_max_abs": r.delta.get("score_max_abs"), "aux_max_abs": r.delta.get("aux_max_abs"),
                    "correct": r.correct, "lower_s": round(prepare.seconds, 1) if prepare is not None else None,
                    # a timed detect row standing in here says it in the latency table (counted once per run)
                    "cached": artifacts.served(prepare) if not r.case.timed else None,
                    "error": clip(r.final.error, 200) if not r.ok else ""})
    return pd.DataFrame(out)


def fastest_frame(rows: list[Row]) -> pd.DataFrame:
    """The fastest correct path per model and device, with its speed-up over eager fp32 there and the runner-up."""
    out = []
    timed = [r for r in rows if r.case.timed and r.case.task == "detect" and r.correct and r.median_ms is not None
             and r.case.export_path == KIT_EXPORT]  # the exporter's programs may stop before the postprocess
    for (model, device) in sorted({(r.case.model, r.case.device) for r in timed}, key=lambda k: (k[1], k[0])):
        group = sorted((r for r in timed if r.case.model == model and r.case.device == device), key=lambda r: r.median_ms)
        eager = next((r for r in group if r.case.backend == "eager" and r.case.dtype == "fp32"), None)
        best = group[0]
        out.append({"model": model, "device": device, "image size": f"{best.case.imgsz}×{best.case.imgsz} px",
                    "batch": 1, "fastest correct": label(best),  # every timed call runs one image
                    "median_ms": _round(best.median_ms), "iqr_ms": _round(best.run.value.get("iqr_ms")),
                    "eager fp32 ms": _round(eager.median_ms) if eager else None,
                    "speed-up vs eager (×)": _round(eager.median_ms / best.median_ms, 2) if eager else None,
                    "runner-up": label(group[1]) if len(group) > 1 else "",
                    "runner-up ms": _round(group[1].median_ms) if len(group) > 1 else None,
                    "correct paths": len(group)})
    return pd.DataFrame(out)


def seed_frame(rows: list[Row]) -> pd.DataFrame:
    """The seed's latency table beside this run's figures (different hardware and maybe input size: not comparable)."""
    out = []
    for scale in yolo.SCALES:
        model = f"yolo26{scale}"
        mine = [r for r in rows if r.case.model == model and r.case.task == "detect" and r.correct and r.median_ms
                and r.case.export_path == KIT_EXPORT]
        if not mine:
            continue
        xnn = next((r for r in mine if r.case.backend == "et_xnnpack"), None)
        gpu = sorted((r for r in mine if r.case.device.startswith("cuda") and r.case.backend in TORCH_NATIVE_CUDA),
                     key=lambda r: r.median_ms)
        band = lambda key: "–".join(f"{v:g}" for v in SEED_LATENCY_MS[key][scale])  # noqa: E731
        out.append({"model": model, "seed XNNPACK ms (i7, 640)": band("xnnpack_i7"),
                    "measured XNNPACK ms": _round(xnn.median_ms) if xnn else None,
                    "measured at": f"{xnn.case.imgsz} px, this CPU" if xnn else "",
                    "seed hybrid CUDA ms (A100)": band("hybrid_cuda_a100"), "seed TensorRT ms (A100)": band("tensorrt_a100"),
                    "fastest torch-native CUDA path": label(gpu[0]) if gpu else "",
                    "its ms (whole model)": _round(gpu[0].median_ms) if gpu else None,
                    "at": f"{gpu[0].case.imgsz} px, this GPU" if gpu else ""})
    return pd.DataFrame(out)


def plot_latency(rows: list[Row]) -> Any:
    """Latency (median, IQR bars) vs model size, one panel per device, one line per back-end and dtype; the sizes
    tried on that device only, a grey × at the foot of the panel for each case that did not run, and the reasons
    under the panel; the log axis labelled in plain milliseconds."""
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    tried = [r for r in rows if r.case.timed and r.case.task == "detect" and r.case.export_path == KIT_EXPORT]
    timed = [r for r in tried if r.median_ms is not None]
    devices = sorted({r.case.device for r in tried}) or ["(none)"]
    fig, axes = plt.subplots(1, len(devices), figsize=(6.5 * len(devices), 4.8), squeeze=False)
    for ax, device in zip(axes[0], devices):
        sizes = sorted({yolo.scale_of(r.case.model) for r in tried if r.case.device == device}, key=yolo.SCALES.index)
        mine = [r for r in timed if r.case.device == device]
        for name in sorted({label(r) for r in mine}):
            line = sorted((r for r in mine if label(r) == name), key=lambda r: sizes.index(yolo.scale_of(r.case.model)))
            xs = [sizes.index(yolo.scale_of(r.case.model)) for r in line]
            ys = [r.median_ms for r in line]
            iqr = [r.run.value.get("iqr_ms") or 0.0 for r in line]
            style = "-" if all(r.correct for r in line) else ":"
            ax.errorbar(xs, ys, yerr=[[i / 2 for i in iqr], [i / 2 for i in iqr]], marker="o", linestyle=style,
                        capsize=3, label=name + ("" if style == "-" else " (not matching eager)"))
        missed = [r for r in tried if r.case.device == device and r.median_ms is None]
        foot = ax.get_xaxis_transform()  # x in data, y in axes fraction
        for i, r in enumerate(missed):
            ax.plot(sizes.index(yolo.scale_of(r.case.model)), 0.03, marker="x", color="grey", transform=foot,
                    clip_on=False, linestyle="none", label="did not run (reasons below)" if i == 0 else None)
        if missed:
            reasons = [f"× {label(r)} {r.case.model}: {r.final.status}" + (f" ({clip(r.final.error, 50)})" if r.final.error
                                                                           else "") for r in missed]
            ax.text(0, -0.16, "did not run: " + "; ".join(reasons[:4]) + (" …" if len(reasons) > 4 else ""),
                    transform=ax.transAxes, fontsize=7, va="top", wrap=True)
        if not mine:
            ax.text(0.5, 0.5, "no timed rows", ha="center", va="center", transform=ax.transAxes)
        ax.set_xticks(range(len(sizes)), [f"yolo26{s}" for s in sizes])
        ax.set_xlim(-0.5, len(sizes) - 0.5)
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        px = sorted({r.case.imgsz for r in mine})
        name = env.fingerprint()["device"] if device.startswith("cuda") else env.cpu_name()
        ax.set_title(f"{device}: {name} ({', '.join(map(str, px))} px)", fontsize=9)
        ax.set_ylabel("latency (ms), median and IQR")
        ax.legend(fontsize=7)
    fig.tight_layout()
    plt.close(fig)
    return fig


def dynamic_frame(run: Run) -> pd.DataFrame:
    """The dynamic-shape ONNX Runtime check: one row per input size (or the step's failure)."""
    o = run.onnx_dynamic
    if o is None:
        return pd.DataFrame([{"status": "skipped", "error": "onnxruntime/onnxscript not installed or not asked for"}])
    if not o.ok:
        return pd.DataFrame([{"status": o.status, "error": clip(o.error, 300)}])
    return pd.DataFrame([{"status": "ok", **r} for r in o.value])


def side_by_side_frame(run: Run) -> pd.DataFrame:
    """The CPU rows timed again in one process, in turn: each round's median per case (what the CPU ratios use)."""
    step = run.side_by_side
    if step is None:
        return pd.DataFrame([{"status": "skipped", "reason": "fewer than two correct CPU rows (XNNPACK, eager fp32)"}])
    if not step.ok:
        return pd.DataFrame([step.row()])
    busy = step.value.get("others_busy_cores")
    return pd.DataFrame([{"case": tag, **{f"round {i + 1} ms": _round(ms) for i, ms in enumerate(medians)},
                          "median of rounds ms": _round(median_round(medians)),
                          "cpu": step.value.get("cpu", ""), "threads": step.value.get("threads"),
                          "other processes' busy cores": busy}
                         for tag, medians in step.value.get("medians", {}).items()])


# Every table the notebook records in results.json, by name, each a function of the run (the notebook shows and
# records them one by one, between its plots and text).
TABLES: dict[str, Callable[[Run], pd.DataFrame]] = {
    "latency": lambda run: latency_frame(run.rows),
    "cpu_side_by_side": side_by_side_frame,
    "fastest": lambda run: fastest_frame(run.rows),
    "seed_vs_measured": lambda run: seed_frame(run.rows),
    "xnnpack_tasks": lambda run: tasks_frame(run.task_rows),
    "onnx_dynamic": dynamic_frame,
}
