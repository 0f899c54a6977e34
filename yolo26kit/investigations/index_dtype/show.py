"""Index dtype: the notebook's tables (status matrix, graph scan, probes, equivalence summary), the root cause in
words, and a widget to explore the matrix's cells. TABLES names every table the notebook records."""

from __future__ import annotations

import re
from typing import Any, Callable

import pandas as pd

from ...conclusion import clip
from ... import findings
from ...bench import graphs
from .measure import Cell, Results, Run


def matrix_frame(cells: list[Cell]) -> pd.DataFrame:
    """The status matrix as a table, ultralytics-benchmark style (an AOTI cell shows each load attempt)."""
    return pd.DataFrame([row for c in cells for row in c.rows()])


def scan_frame(cells: list[Cell]) -> pd.DataFrame:
    """Index/gather nodes of every exported variant with their index dtypes and source lines."""
    rows = []
    for c in cells:
        if c.path == "export" and c.final.ok:
            for r in c.final.value["scan"]:
                rows.append({"variant": c.variant, **{k: v for k, v in r.items() if k != "arg_dtypes"},
                             "arg_dtypes": str(r["arg_dtypes"])})
    return pd.DataFrame(rows)


def upstream_pattern(cells: list[Cell]) -> str:
    """Which top-k pattern the installed ultralytics uses, read from its exported graph."""
    for c in cells:
        if c.variant == "upstream" and c.path == "export" and c.final.ok:
            rows = c.final.value["scan"]
            return "advanced indexing (aten.index.Tensor)" if graphs.count(rows, "aten.index.Tensor") else \
                "gather (no aten.index.Tensor)" if graphs.count(rows, "aten.gather") else "neither"
    return "unknown (upstream export did not run)"


def equivalence_summary(equiv: pd.DataFrame) -> pd.DataFrame:
    """Cases and bit-identical outputs, with and without heavy score ties."""
    return (equiv.groupby("ties").agg(cases=("case", "count"), identical=("identical", "sum"),
                                      max_abs_diff=("max |Δ|", "max"), batch_max=("batch", "max"), nc_max=("nc", "max"))
            .reset_index())


def probe_frame(run: "Run") -> pd.DataFrame:
    """The probes: each op / backbone lowering, the cast variant, and the side steps (subprocess GPU, options, shims)."""
    rows = [row for c in run.probe_cells for row in c.rows()]
    for name, o in (("subprocess sees the GPU", run.gpu_subprocess), ("ExecuTorch CUDA options", run.cuda_options),
                    ("ExecuTorch runtime shims", run.runtime_shims)):
        if o is not None:
            rows.append({"variant": "", "scope": "side step", "path": name, "status": "✅" if o.ok else "❌",
                         "outcome": o.status, "error": clip(o.error, 200), "seconds": round(o.seconds, 2),
                         "value": clip(o.value, 400) if o.ok else ""})
    return pd.DataFrame(rows)


def division_frame(run: "Run") -> pd.DataFrame:
    """The division variants (division.py), one row per variant and device: what each shows through AOT Inductor."""
    from .division import verdict_of

    rows = []
    for device, outcome in run.division.items():
        if not outcome.ok:
            rows.append({"variant": "(all)", "device": device, "shows": outcome.status, "error": clip(outcome.error, 200)})
            continue
        rows += [{"variant": r["variant"], "change": r["change"], "device": device, "shows": verdict_of(r),
                  "aoti dtype": r["aoti dtype"], "eager dtype": r["eager dtype"], "equal": r["equal"],
                  "failed at": "" if r["ok"] else r["stage"], "error": clip(r["error"], 200)} for r in outcome.value]
    return pd.DataFrame(rows)


# --- the root cause in words -----------------------------------------------------------------------------------

def diagnosis(root: dict[str, pd.DataFrame]) -> str:
    """Where the float32 index comes from, in words, read off this run's lowering errors and back-end passes."""
    lines = []
    errors = root["lowering_errors"]
    hits = errors[errors["index dtypes"].str.contains("float32", na=False)] if not errors.empty else errors
    if hits.empty:
        lines.append("No lowering in this run failed on a float32 index (on CPU the CUDA lowering does not run).")
    else:
        ir = hits.iloc[0]["index argument IR (args[1])"]
        float_part = ir[ir.find("torch.float32"):] if "torch.float32" in ir else ir
        origin = re.search(r"origin_node=(\w+)", float_part)
        body = [ln.strip() for ln in float_part.splitlines() if re.match(r"\s*tmp\d+ = ", ln)]
        casts = re.findall(r"ops\.to_dtype\([^,]+,\s*(torch\.\w+)", "\n".join(body))
        used = [op for op in ("reciprocal", "truediv", "mul", "floor") if f"ops.{op}(" in "\n".join(body)]
        used += ["multiply (*)"] if re.search(r"= tmp\d+ \* ", "\n".join(body)) else []
        used += [f"to_dtype → {c.removeprefix('torch.')}" for c in casts]
        cast_back = "torch.int64" in casts
        lines.append(f"The float32 index of `aten.index.Tensor` is built by Inductor while lowering node "
                     f"`{origin.group(1) if origin else '?'}`: `{'; '.join(body)}` — Inductor ops "
                     f"{', '.join(used) or 'none recognised'} in its IR, "
                     f"{'with' if cast_back else 'no'} cast back to int64 there. Whether the FX graph before Inductor "
                     "is int64 throughout is in the table above.")
    passes = root["passes"]
    names = list(passes["pass"]) if "pass" in passes else []
    division = ("aten.div.Tensor_mode", "aten.floor_divide")
    rows = passes.to_dict("records") if "removed ops" in passes else []
    touching = [r for r in rows if any(d in (r.get("removed ops") or []) for d in division)]
    if touching:
        r = touching[0]
        lines.append(f"The installed executorch's CUDA back-end applies `{r['pass']}`, which in the replay above removed "
                     f"{', '.join(d for d in division if d in r['removed ops'])} and added "
                     f"{', '.join(r.get('added ops') or []) or 'nothing'} before AOT Inductor sees the graph.")
    else:
        unreplayed = [r["pass"] for r in rows if r.get("error")]
        lines.append(f"The installed executorch's CUDA back-end applies {', '.join(f'`{n}`' for n in names) or 'no passes'}; "
                     "in the replay above none of them removed a floor-division node"
                     + (f" ({', '.join(unreplayed)} could not be replayed here)" if unreplayed else "") + ".")
    return "\n\n".join(lines)


# --- interactive extra -----------------------------------------------------------------------------------------

@findings.interactive_only
def explorer(cells: list[Cell]):
    """A JupyterLab widget: pick a matrix cell, see its steps' full errors, logs and graph excerpt."""
    import ipywidgets as widgets

    options = [(f"{c.variant} × {c.path} ({c.final.status})", i) for i, c in enumerate(cells)]
    picker = widgets.Dropdown(options=options, description="cell")
    view = widgets.Output()

    def show(change: Any = None) -> None:
        cell = cells[picker.value]
        view.clear_output()
        with view:
            for o in cell.outcomes:
                print(f"== {o.step}: {o.status} in {o.seconds:.2f} s {o.signal}")
                if o.error:
                    print(o.traceback or o.error)
                if o.log:
                    print("-- log (tail) --\n" + o.log[-4000:])
                if o.ok and isinstance(o.value, dict) and o.value.get("graph"):
                    print("-- graph excerpt --\n" + o.value["graph"])
            print("comparison with eager:", cell.delta)

    picker.observe(show, names="value")
    show()
    return widgets.VBox([picker, view])


# --- the recorded tables ------------------------------------------------------------------------------------------

def _root(name: str) -> Callable[[Results], pd.DataFrame]:
    return lambda res: res.root.get(name, pd.DataFrame())


# Every table of results.json, in the notebook's order: name → the function of the run's Results that makes it.
TABLES: dict[str, Callable[[Results], pd.DataFrame]] = {
    "fx_scan": lambda res: scan_frame(res.run.cells),
    "status": lambda res: matrix_frame(res.run.cells),
    "full_model": lambda res: matrix_frame(res.run.full_cells),
    "probes": lambda res: probe_frame(res.run),
    "equivalence_summary": lambda res: equivalence_summary(res.equiv),
    "backend_passes": _root("passes"),
    "pipeline_stages": _root("stages"),
    "lowering_errors": _root("lowering_errors"),
    "division_variants": lambda res: division_frame(res.run),
}
