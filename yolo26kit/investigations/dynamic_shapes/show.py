"""Dynamic shapes: the notebook's extra views (the kit's model changes as code, the residue table, the latency
plot, sizes that are not multiples of 32 across back-ends), a size slider over the exported programs, and TABLES:
every table the notebook records."""

from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from ...bench.dynamic_export import (RECOMMENDED, STRIDE, decode_boxes_flat, anchors_from_1d_grids, topk_static_k,
                                     dynamic_ready, example_size)
from ...bench.live import build_model, image
from ... import findings
from .measure import EtRun, Results
from .measure_export import SpecRun, Sweep, as_flag, call_outcome, span_text, compare
from .model import explain


def fix_source() -> Any:
    """The kit's model changes as a Markdown code block (what `dynamic_ready` applies)."""
    import inspect

    from IPython.display import Markdown

    code = "\n\n".join(inspect.getsource(f) for f in (dynamic_ready, anchors_from_1d_grids, decode_boxes_flat, topk_static_k))
    return Markdown(f"```python\n{code}\n```")


def residue_table(scan: pd.DataFrame) -> pd.DataFrame:
    """Per axis: the sizes mod 32 at which eager runs, those at which it fails, and the first error."""
    rows = []
    for axis, d in scan.groupby("axis", sort=False):
        bad = d[d.eager != "ok"]
        rows.append({"axis": axis, "sizes tried": f"{d['size'].min()}-{d['size'].max()}",
                     "runs at (mod 32)": span_text(d[d.eager == "ok"].mod_32.tolist()),
                     "fails at (mod 32)": span_text(bad.mod_32.tolist()),
                     "failed in": ", ".join(sorted(set(bad.get("failed_in", pd.Series(dtype=str)).dropna()) - {""})),
                     "error": bad.error.iloc[0] if len(bad) else ""})
    return pd.DataFrame(rows)


def plot_latency(et: EtRun) -> Any:
    """Latency (median, p10-p90) vs pixels: each dynamic program's sizes, and one static program per size."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    runs = et.runs
    if len(runs) and "median_ms" in runs:
        boxed = as_flag(runs["letterboxed"]) if "letterboxed" in runs else pd.Series(False, index=runs.index)
        timed = runs[runs.median_ms.notna() & ~boxed]
        for (program, dynamic), d in timed.groupby(["program", "dynamic"], sort=False):
            d = d.assign(pixels=d.height * d.width).sort_values("pixels")
            label = f"dynamic program ({program})" if dynamic else "static (one program per size)"
            style = dict(marker="o", linestyle="-") if dynamic else dict(marker="s", linestyle="none", color="black")
            ax.errorbar(d.pixels, d.median_ms, yerr=[d.median_ms - d.p10_ms, d.p90_ms - d.median_ms], label=label,
                        capsize=3, **style)
        handles, labels = ax.get_legend_handles_labels()
        unique = dict(zip(labels, handles))
        ax.legend(unique.values(), unique.keys())
    else:
        ax.text(0.5, 0.5, "no ExecuTorch timings in this run", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("pixels (H x W)")
    ax.set_ylabel("latency, ms (median, p10-p90)")
    ax.set_title("ExecuTorch XNNPACK: dynamic program vs static programs")
    fig.tight_layout()
    plt.close(fig)
    return fig


# ------------------------------------------------------------------------------------- non-multiples


def non_multiples(sweep: Sweep, et: EtRun, aoti: pd.DataFrame | None = None, spec: str = RECOMMENDED) -> pd.DataFrame:
    """For sizes that are not multiples of 32: what eager, the exported program, the .pte (and an AOTI package,
    where one ran) say; then the same sizes letterboxed."""
    d = sweep.detail
    rows = []
    for _, r in d[(d.spec == spec) & ~d.multiple_of_32.astype(bool) & (d.height == d.width)].iterrows():
        if not r.in_range:
            continue
        size = int(r.height)
        boxed = size + (-size) % STRIDE
        same = d[(d.spec == spec) & (d.height == boxed) & (d.width == boxed)]
        row = {"size": f"{size}x{size}", "mod_32": size % STRIDE, "eager": r.eager_error or "ok",
               "exported (ep.module())": r.program_error or "ok",
               "exported, range checks only": r.ranges_only_error if isinstance(r.ranges_only_error, str) and r.ranges_only_error else r.ranges_only,
               "letterboxed to": f"{boxed}x{boxed}",
               "exported, letterboxed": (same.program.iloc[0] if len(same) else "not in sweep")}
        pte = et.runs[(et.runs.get("height", pd.Series(dtype=int)) == size)] if len(et.runs) else pd.DataFrame()
        if len(pte):
            raw = pte[~as_flag(pte.letterboxed)]
            box = pte[as_flag(pte.letterboxed)]
            row[".pte"] = (raw.error.iloc[0] or "ok") if len(raw) else "not run"
            if len(box):
                b = box.iloc[0]
                row[".pte, letterboxed"] = b.status if b.status != "ok" else f"ok, max |Δ| vs eager {b.get('matched_diff', float('nan')):.2g}"
        probe = aoti[(aoti.get("step") == "aoti run") & (aoti.get("height") == size)] if aoti is not None and len(aoti) and "height" in aoti else None
        if probe is not None and len(probe):
            a = probe.iloc[0]
            row["AOTI package"] = (f"ran, {a.rows:.0f} detections" if a.status == "ok" else a.error) + f" ({a.spec}, {a.device})"
        row["cause"] = explain(r.eager_error or r.program_error)[0]
        rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------- widget


@findings.interactive_only
def explorer(run: SpecRun, spec: str = RECOMMENDED) -> Any:
    """A slider over input sizes that runs the exported program and eager on demand and shows the diff.

    Nothing is computed until the slider moves, so rendering it headless (papermill) costs nothing.
    """
    import ipywidgets as widgets
    from IPython.display import display

    p = run.params
    exported = [n for n, r in run.results.items() if r.ok and r.spec.sweep == "size"]
    if not exported:
        return widgets.HTML("no exported H/W spec to explore")
    pick = widgets.Dropdown(options=exported, value=spec if spec in exported else exported[0], description="spec")
    size = widgets.IntSlider(value=example_size(p["min_size"], p["max_size"]), min=max(STRIDE, p["min_size"] - STRIDE),
                             max=p["max_size"] + STRIDE, step=1, description="size", continuous_update=False)
    out = widgets.Output()
    out.append_stdout("move the slider to run the exported program at that size\n")
    state: dict[str, Any] = {}

    def update(_change: Any = None) -> None:
        if "reference" not in state:
            state["reference"] = build_model(p["model"], p["seed"], p["device"])
        x = image(p["batch"], size.value, size.value, seed=1, device=p["device"])
        e_status, e_error, ref = call_outcome(state["reference"], x)
        status, error, y = call_outcome(run.results[pick.value].program.module(), x)
        row = {"size": size.value, "mod_32": size.value % STRIDE, "eager": e_error or e_status, "program": error or status}
        if y is not None and ref is not None:
            row.update(compare(y, ref, 1e-4))
        out.clear_output()
        with out:
            display(pd.DataFrame([row]))

    size.observe(update, names="value")
    pick.observe(update, names="value")
    return widgets.VBox([widgets.HBox([pick, size]), out])


# ------------------------------------------------------------------------------------------------ tables


# Every table of results.json, in the order the notebook records them: name → the function of Results that makes it.
TABLES: dict[str, Callable[[Results], pd.DataFrame]] = {
    "specs": lambda res: res.run.table,
    "guards": lambda res: res.run.guards,
    "sweep": lambda res: res.sweep.detail,
    "sweep_summary": lambda res: res.sweep.summary,
    "residues": lambda res: res.scan,
    "executorch_lowering": lambda res: res.et.lowering,
    "executorch_runs": lambda res: res.et.runs,
    "aoti": lambda res: res.aoti,
}


def record_tables(found: Any, results: Results) -> None:
    """Keep every table of TABLES for results.json (the notebook calls it before judging)."""
    findings.record_tables(found, TABLES, results)
