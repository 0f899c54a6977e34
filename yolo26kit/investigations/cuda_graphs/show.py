"""CUDA graphs: the notebook's tables (stack, status, Toto, CUDA graphs, graph breaks, latency, rounds, agreement,
accuracy, mutation probe, logs), the latency chart and the per-case message explorer."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Callable

import pandas as pd

from ... import findings
from .measure import Results, capture_class, case_label, case_setting, launches_of_eager, row_outputs
from .measures import max_abs_diff, paired_rounds, pooled_spread_ratio


# --------------------------------------------------------------------------- tables


def stack_table(res: Results) -> pd.DataFrame:
    """The stack and the compile settings that decide the outcome, plus the model's sizes."""
    items = {**res.stack, "device": res.device, **{f"model.{k}": v for k, v in asdict(res.config).items()}}
    return pd.DataFrame([{"setting": k, "value": v} for k, v in items.items()])


def status_table(res: Results) -> pd.DataFrame:
    """How each case ended (ok / error / crash / timeout / skipped)."""
    return pd.DataFrame([{"case": case_label(r), "status": r["status"], "seconds": r["seconds"], "error": r["error"]}
                         for r in res.rows])


def cudagraph_table(res: Results) -> pd.DataFrame:
    """Per case: graph vs kernel launches in one decode step, syncs, Inductor's skips and messages, partitions."""
    out = []
    for r in res.rows:
        if r["status"] != "ok":
            continue
        parts = r.get("partitions") or []
        out.append({
            "case": case_label(r),
            "captured": capture_class(r, launches_of_eager(res, r["variant"])),
            "graph launches/step": r.get("graph_launches"),
            "kernel launches/step": r.get("kernel_launches"),
            "gpu kernels/step": r.get("gpu_kernels"),
            "scalar reads/step": r.get("scalar_reads"),
            "stream syncs/step": r.get("stream_syncs"),
            "cudagraph_skips": r.get("cudagraph_skips"),
            "skip messages": " | ".join(r.get("skip_messages") or []),
            "partitions (all, cg, non-cg)": "; ".join(",".join(map(str, p)) for p in parts),
            "non-cg reasons": ", ".join(f"{k} x{v}" for k, v in (r.get("non_cudagraphable") or {}).items()),
            "graph recordings": r.get("recordings"),
            "symint-key recordings": r.get("symint_recordings"),
            "aten scalar reads": r.get("aten_scalar_reads"),
            "first incompatible op (static)": r.get("aten_first_incompatible"),
            "collector errors": " | ".join(f"{k}: {v}" for k, v in r.items() if k.endswith("_error")),
        })
    return pd.DataFrame(out)


def graph_break_table(res: Results) -> pd.DataFrame:
    """Per compiled case: Dynamo graphs and breaks (one traced call, then the whole run), recompilations and why."""
    out = []
    for r in res.rows:
        if r["status"] != "ok" or r["mode"] == "eager":
            continue
        out.append({
            "case": case_label(r),
            "graphs (1 call)": r.get("graphs_1call"),
            "graph breaks (1 call)": r.get("breaks_1call"),
            "unique graphs (whole run)": r.get("unique_graphs"),
            "graph breaks (counter)": r.get("graph_breaks"),
            "recompiles": r.get("recompiles"),
            "break reasons": " | ".join(r.get("break_reasons") or r.get("graph_break_reasons") or []),
            "recompile reasons": " | ".join(m.split("triggered by")[-1][:160]
                                            for m in r.get("recompile_messages") or []),
        })
    return pd.DataFrame(out)


def latency_table(res: Results) -> pd.DataFrame:
    """Per case: median per-step latency with its spread, the forecast time and the first (compiling) call."""
    out = []
    for r in res.rows:
        if r["status"] != "ok":
            continue
        calls = r["calls"]
        eager = res.ok(variant=r["variant"], mode="eager")
        default = [d for d in res.ok(variant=r["variant"], mode="default")
                   if d.get("capture_scalar_outputs") == r.get("capture_scalar_outputs")]
        out.append({
            "case": case_label(r), "variant": r["variant"], "mode": r["mode"], "setting": case_setting(r),
            "per step ms (median)": r["per_step_ms"],
            "per step IQR ms": r["iqr_ms"] / calls,
            "per step p10 ms": r["p10_ms"] / calls, "per step p90 ms": r["p90_ms"] / calls,
            "forecast ms (median)": r["median_ms"], "first call ms": r["first_ms"], "runs": r["runs"],
            "speedup vs eager": eager[0]["median_ms"] / r["median_ms"] if eager else None,
            "speedup vs default compile": (default[0]["median_ms"] / r["median_ms"]
                                           if default and r["mode"] == "reduce-overhead" else None),
            "fx cache hit/miss": (f"{r['fxgraph_cache_hit']}/{r['fxgraph_cache_miss']}"
                                  if "fxgraph_cache_hit" in r else ""),
            "compiled first in its process": r.get("compiled_before_in_child") == 0,
            "peak CUDA MiB": r["peak_mem_bytes"] / 2**20 if "peak_mem_bytes" in r else None,
        })
    return pd.DataFrame(out)


def rounds_table(res: Results) -> pd.DataFrame:
    """Per reduce-overhead case timed in turn with the default compile: each round's medians, ratio and spreads."""
    out = []
    for r in res.rows:
        rounds = r.get("rounds") if r.get("status") == "ok" else None
        if not isinstance(rounds, dict) or not rounds.get("graphs") or not rounds.get("default"):
            continue
        g, d = rounds["graphs"], rounds["default"]
        for i, (gm, gi, dm, di) in enumerate(zip(g["median_ms"], g["iqr_ms"], d["median_ms"], d["iqr_ms"])):
            out.append({"case": case_label(r), "round": i + 1, "reduce-overhead ms": gm, "default compile ms": dm,
                        "default / reduce-overhead": dm / gm if gm > 0 else None,
                        "IQR/median reduce-overhead": gi / gm if gm > 0 else None,
                        "IQR/median default": di / dm if dm > 0 else None})
    return pd.DataFrame(out)


def latency_chart(res: Results):
    """Bar charts: steady per-step latency (median, p10-p90 whiskers) and first-call time, per case."""
    import matplotlib.pyplot as plt

    df = latency_table(res)
    fig, axes = plt.subplots(1, 2, figsize=(13, 0.35 * max(len(df), 4) + 1.5))
    if df.empty:
        for ax in axes:
            ax.text(0.5, 0.5, "no case ran", ha="center")
        return fig
    colors = {"eager": "#888888", "default": "#4c72b0", "reduce-overhead": "#dd8452"}
    y = range(len(df))
    med = df["per step ms (median)"]
    err = [(med - df["per step p10 ms"]).clip(lower=0), (df["per step p90 ms"] - med).clip(lower=0)]
    axes[0].barh(list(y), med, xerr=err, color=[colors.get(m, "#55a868") for m in df["mode"]])
    axes[0].set_yticks(list(y), df["case"])
    axes[0].invert_yaxis()
    axes[0].set_xlabel("ms per decode step (median, p10-p90)")
    axes[1].barh(list(y), df["first call ms"] / 1e3, color=[colors.get(m, "#55a868") for m in df["mode"]])
    axes[1].set_yticks(list(y), [""] * len(df))
    axes[1].invert_yaxis()
    axes[1].set_xlabel("first forecast s (compile + warm-up of CUDA graphs)")
    fig.suptitle(f"{res.device}: {res.config.calls} calls per forecast, d_model={res.config.d_model}, "
                 f"n_layers={res.config.n_layers}, batch={res.config.batch}")
    fig.tight_layout()
    plt.close(fig)
    return fig



def eager_agreement(res: Results) -> pd.DataFrame:
    """Eager outputs of every variant against the first variant's: bitwise equal and max |Δ|."""
    eager = res.ok(mode="eager")
    if not eager:
        return pd.DataFrame()
    base = eager[0]
    return pd.DataFrame([{
        "variant": r["variant"], "against": base["variant"],
        "bitwise equal": r["outputs"] == base["outputs"],
        "max |Δ|": max_abs_diff(row_outputs(r), row_outputs(base)),
    } for r in eager])


def accuracy_table(res: Results) -> pd.DataFrame:
    """Per compiled case: max |Δ| against eager over all forecast steps (first, compiling call and a later one)."""
    out = []
    for r in res.rows:
        if r["status"] != "ok" or r["mode"] == "eager":
            continue
        out.append({"case": case_label(r), "max |Δ| first call": r["max_abs_first"],
                    "max |Δ| later call": r["max_abs_last"],
                    "bitwise equal to eager": r["outputs"] == r["reference"],
                    f"within atol={res.atol:g}": max(r["max_abs_first"], r["max_abs_last"]) <= res.atol})
    return pd.DataFrame(out)


def probe_table(res: Results) -> pd.DataFrame:
    """The mutation probe: the same cache update, cache as a module buffer vs a function argument, reduce-overhead."""
    rows = [{k: (" | ".join(v) if isinstance(v, list) else v) for k, v in p.items()} for p in res.probe]
    return pd.DataFrame(rows)


def log_table(res: Results) -> pd.DataFrame:
    """The captured Inductor/Dynamo messages per case: cudagraph skips, perf hints, recompiles, graph breaks."""
    out = []
    for r in res.rows:
        if r["status"] != "ok":
            if r["status"] != "skipped":
                out.append({"case": case_label(r), "kind": r["status"], "message": r["error"]})
            continue
        for kind, key in (("cudagraph skip", "skip_messages"), ("perf hint", "perf_hints"),
                          ("recompile", "recompile_messages"), ("graph break", "graph_break_messages")):
            for m in r.get(key) or []:
                out.append({"case": case_label(r), "kind": kind, "message": m})
    return pd.DataFrame(out, columns=["case", "kind", "message"])


@findings.interactive_only
def explorer(res: Results):
    """A dropdown over the cases showing each one's captured messages (ipywidgets)."""
    import ipywidgets as widgets

    table = log_table(res)
    cases = [case_label(r) for r in res.rows]
    out = widgets.Output()

    def show(change: dict[str, Any]) -> None:
        out.clear_output()
        with out:
            from IPython.display import display

            display(table[table["case"] == change["new"]])

    pick = widgets.Dropdown(options=cases, description="case")
    pick.observe(show, names="value")
    return widgets.VBox([pick, out])


# the tables the notebook shows, by the name results.json keeps them under (in the order they are recorded)
def _toto_mode(row: dict[str, Any], mode: str) -> dict[str, Any]:
    """One compiled mode of a Toto row as a table row (its error and where, or its figures)."""
    sub = row.get(mode) or {}
    mib = lambda k: round(sub[k] / 2**20, 1) if isinstance(sub.get(k), (int, float)) else None  # noqa: E731
    return {"variant": row.get("variant"), "capture": row.get("capture_scalar_outputs"),
            "mode": mode.replace("_", "-"), "status": sub.get("status", row.get("status")),
            "error": sub.get("error", row.get("error", "")), "raised at": sub.get("where", ""),
            "first forecast s": sub.get("first_s"), "cold compile": sub.get("counts"),
            "graph launches/step": sub.get("graph_launches"), "kernel launches/step": sub.get("kernel_launches"),
            "scalar reads/step": sub.get("scalar_reads"), "cudagraph skips": sub.get("cudagraph_skips"),
            "graph breaks": sub.get("graph_breaks"), "peak MiB added": mib("mem_peak_added"),
            "reserved MiB added": mib("mem_reserved_added"), "max |Δ| vs eager": sub.get("max_abs_vs_eager"),
            "GPU": "spare" if row.get("on_spare_gpu") else "the notebook's"}


def toto_table(res: Results) -> pd.DataFrame:
    """Toto at its real size: per variant, capture setting and compiled mode, the outcome (or error and where),
    the cold first forecast, the profiled decode step and the memory added; the rounds in toto_rounds_table."""
    rows = [_toto_mode(r, mode) for r in res.toto for mode in ("reduce_overhead", "default")]
    return pd.DataFrame(rows) if rows else pd.DataFrame([{"toto": "not run (CUDA only; see toto_variants)"}])


def toto_rounds_table(res: Results) -> pd.DataFrame:
    """Toto's rounds timed call by call in turn: speed-up and spread ratio per round, the spread ratio of all calls
    so far pooled (what the consistency claim is judged on), and the medians."""
    rows = []
    for r in res.toto:
        rounds = r.get("rounds") or {}
        summary = rounds.get("summary") or {}
        paired = paired_rounds(rounds.get("per_call_ms") or {})
        for i, (speed, spread_ratio) in enumerate(zip(rounds.get("speedups", []), rounds.get("spread_ratios", []))):
            rows.append({"variant": r.get("variant"), "capture": r.get("capture_scalar_outputs"), "round": i + 1,
                         "default / reduce-overhead time": speed, "default / reduce-overhead spread": spread_ratio,
                         "spread, rounds so far pooled": pooled_spread_ratio(paired[:i + 1]) if paired else None,
                         "graphs median ms (all rounds)": (summary.get("graphs") or {}).get("median_ms"),
                         "default median ms (all rounds)": (summary.get("default") or {}).get("median_ms")})
    return pd.DataFrame(rows) if rows else pd.DataFrame([{"toto rounds": "none timed"}])


TABLES: dict[str, Callable[[Results], pd.DataFrame]] = {
    "stack": stack_table, "status": status_table, "cudagraphs": cudagraph_table, "graph_breaks": graph_break_table,
    "latency": latency_table, "eager_agreement": eager_agreement, "accuracy": accuracy_table, "logs": log_table,
    "mutation_probe": probe_table, "rounds": rounds_table, "toto": toto_table, "toto_rounds": toto_rounds_table,
}


def record_tables(found: Any, res: Results) -> list[str]:
    """Keep every table in results.json (rows without the raw output vectors)."""
    return list(findings.record_tables(found, TABLES, res))
