"""CDMaskFormer attention mask: the tables and plot the notebook shows beside the measurements, the tables a run keeps
in results.json (TABLES), and an interactive explorer for JupyterLab."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd

from .kernel import explain_seed_assert, issues_frame, model_check
from ... import findings
from .measure import Results, benchmark, devices
from .model import IMPLEMENTATIONS, full_rows, heads_for, make_mask, parse_shape, shape_label


def mask_examples(shapes: list[str], full_percents: list[int], heads: int = 8, seed: int = 0) -> pd.DataFrame:
    """What the generator makes: batch, heads, rows and full rows per shape and percentage."""
    out = []
    for text in shapes:
        rows, queries, hw = parse_shape(text)
        h = heads_for(rows, heads)
        for pct in full_percents:
            m = make_mask((rows, queries, hw), pct, seed, heads)
            out.append({"shape": shape_label((rows, queries, hw)), "batch": rows // h, "heads": h, "queries": queries,
                        "H·W": hw, "full %": pct, "rows": rows * queries, "full rows": full_rows(m),
                        "True share %": round(100 * int(m.sum()) / m.numel(), 1) if m.numel() else 0.0})
    return pd.DataFrame(out)


def implementations_frame() -> pd.DataFrame:
    """The formulations compared, with their code."""
    return pd.DataFrame([{"implementation": i.name, "in place": i.inplace, "code": i.code} for i in IMPLEMENTATIONS.values()])


def plot_benchmark(bench: pd.DataFrame):
    """Net time (log scale, IQR bars) and roofline fraction per implementation and shape, one column per device."""
    import matplotlib.pyplot as plt

    ok = bench[bench.get("error", pd.Series("", index=bench.index)).fillna("") == ""] if len(bench) else bench
    devs = list(dict.fromkeys(ok["device"])) if len(ok) else ["cpu"]
    fig, axes = plt.subplots(2, len(devs), figsize=(7 * len(devs), 8), squeeze=False)
    for col, dev in enumerate(devs):
        sub = ok[(ok["device"] == dev)] if len(ok) else ok
        shapes = list(dict.fromkeys(sub["shape"])) if len(sub) else []
        names = list(dict.fromkeys(sub["implementation"])) if len(sub) else []
        modes = sorted(set(sub["deterministic"])) if len(sub) else [False]
        width = 0.8 / max(1, len(names) * len(modes))
        for j, name in enumerate(names):
            for d, det in enumerate(modes):
                part = sub[(sub["implementation"] == name) & (sub["deterministic"] == det)].set_index("shape")
                if part.empty:
                    continue
                x = np.arange(len(shapes)) + (len(modes) * j + d + 0.5) * width - 0.4
                y = [part["net_ms"].get(s, np.nan) for s in shapes]
                err = [part["iqr_ms"].get(s, np.nan) / 2 for s in shapes]
                label = f"{name}{' (det.)' if det else ''}"
                axes[0][col].bar(x, y, width, yerr=err, label=label, color=f"C{j}", alpha=0.45 if det else 0.95,
                                 hatch="//" if det else None)
                if not det:
                    axes[1][col].bar(x, [part["roofline"].get(s, np.nan) for s in shapes], width, color=f"C{j}", label=label)
        for r in (0, 1):
            axes[r][col].set_xticks(np.arange(len(shapes)))
            axes[r][col].set_xticklabels(shapes)
        axes[0][col].set_yscale("log")
        axes[0][col].set_ylabel("net ms (median − input copy), log")
        axes[0][col].set_title(f"{dev}: time per call")
        axes[1][col].set_ylabel("fraction of copy bandwidth")
        axes[1][col].set_title(f"{dev}: counted bytes / net time / copy GB/s")
        axes[0][col].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


# --- the tables a run keeps ----------------------------------------------------------------------------

# table name (as kept in results.json) → the table of a run's results, in the order the notebook shows them
TABLES: dict[str, Callable[[Results], pd.DataFrame]] = {
    "equivalence": lambda res: res.eq,
    "copy_bandwidth": lambda res: res.bandwidth,
    "benchmark": lambda res: res.bench,
    "speed_rounds": lambda res: res.speed,
    "memory": lambda res: res.memory,
    "triggers": lambda res: res.trig,
    "seed_assert": lambda res: explain_seed_assert().astype({"value": str}),  # mixed ints and text: one type
    "model_check": lambda res: model_check(),
    "issues": lambda res: issues_frame(),
}


def record_tables(found: Any, res: Results) -> dict[str, pd.DataFrame]:
    """Keep every table of TABLES in results.json and return them."""
    return findings.record_tables(found, TABLES, res)


# --- interactive extra -----------------------------------------------------------------------------

@findings.interactive_only
def explorer(device: str | list[str] = "cpu", heads: int = 8, threads: int = 0):
    """A JupyterLab widget: pick a shape, the share of full rows and a device, press the button to time the fill."""
    try:
        import ipywidgets as widgets
        from IPython.display import display
    except ImportError:
        return "ipywidgets is not installed: the interactive explorer is unavailable"
    rows = widgets.BoundedIntText(32, min=1, max=4096, description="rows")
    queries = widgets.BoundedIntText(5, min=1, max=4096, description="queries")
    hw = widgets.Dropdown(options=[49, 196, 1024, 4096, 16384], value=1024, description="H·W")
    pct = widgets.IntSlider(25, min=0, max=100, step=5, description="full %")
    dev = widgets.Dropdown(options=devices(device), description="device")
    impls = widgets.SelectMultiple(options=list(IMPLEMENTATIONS), value=tuple(IMPLEMENTATIONS), description="impls")
    det = widgets.Checkbox(False, description="deterministic too")
    button = widgets.Button(description="time it")
    out = widgets.Output()

    def run(_: Any = None) -> None:
        out.clear_output()
        with out:
            frame = benchmark([shape_label((rows.value, queries.value, hw.value))], list(impls.value), dev.value,
                              pct.value, heads, deterministic_too=det.value, min_run_time=0.1, warmup=2,
                              threads=threads)
            shape = shape_label((rows.value, queries.value, hw.value))
            display(frame[frame["shape"] == shape][["device", "shape", "implementation", "deterministic", "full rows",
                                                    "net_ms", "iqr_ms", "speedup", "GB/s"]])

    button.on_click(run)  # nothing is timed until the button is pressed: cheap under papermill
    return widgets.VBox([widgets.HBox([rows, queries, hw]), widgets.HBox([pct, dev, det]), impls, button, out])
