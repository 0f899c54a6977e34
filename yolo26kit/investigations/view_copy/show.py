"""view_copy: the tables of a run (the pass, view ops before/after it, probes, generated code, post-grad graph,
run time, timing rounds, equivalence)."""

from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from ...bench import aoti_package as aoti, timing
from ... import findings
from ...backends.executorch_cuda_releases import failure_text
from .measure import VIEW_COPY_OPS, VIEW_OPS, Results, base_op, equivalence_rows


def pass_table(res: Results) -> pd.DataFrame:
    """Which pass this executorch ships and the ops it maps."""
    p = res.pass_info
    return pd.DataFrame([{"executorch": p.get("executorch"), "pass": f"{p.get('module')}.{p.get('name')}"
                          if p.get("found") else "(none)", "maps": ", ".join(f"{k} → {v}" for k, v in
                                                                          p.get("mapping", {}).items()),
                          "error": p.get("error", "")}])


def view_ops_table(res: Results) -> pd.DataFrame:
    """One row per (model, view-copy op) of the back-end's edge graph: counts before/after the pass, what it became."""
    rows = []
    mapping = res.pass_info.get("mapping", {})
    for model, outcome in res.graphs.items():
        g = res.graph(model)
        if g is None:
            rows.append({"model": model, "op": "(edge graph failed)", "count_before": None, "count_after": None,
                         "error": outcome.error})
            continue
        after = g["after"] or {}
        nodes = g["nodes"]
        for op in sorted({o for o in g["before"] if base_op(o) in VIEW_COPY_OPS}):
            mine = [n for n in nodes if n["op"] == op]
            target = mapping.get(op, "")
            rows.append({"model": model, "op": op, "count_before": g["before"][op],
                         "count_after": after.get(op, 0) if g["after"] is not None else None,
                         "pass_maps_to": target, "became_view": sum(n["converted"] for n in mine),
                         "kept_copy": sum(not n["converted"] for n in mine),
                         "view_count_after": after.get(target, 0) if target else None,
                         "users": ", ".join(sorted({u for n in mine for u in n["users"]}))[:300]})
    return pd.DataFrame(rows)


def probes_table(res: Results) -> pd.DataFrame:
    """The pass on one-slice graphs: the user of the slice, whether it writes into it, what the slice became."""
    if not res.probes.ok:
        return pd.DataFrame([res.probes.row()])
    return pd.DataFrame(res.probes.value)


def code_table(res: Results) -> pd.DataFrame:
    """Per compiled case: generated kernels, copy-only calls, ATen fallbacks through the proxy executor, bytes."""
    rows = []
    for c in res.cases:
        row: dict[str, Any] = {"model": c.spec.model, "variant": c.variant, "device": c.spec.device}
        if c.code is None:
            rows.append({**row, "status": c.compile.status if c.compile else "not run",
                         "error": failure_text(c.compile, 400) if c.compile else ""})
            continue
        code = c.code["code"]
        rows.append({**row, "status": "ok", "compile_s": round(c.compile.seconds, 1), "from_cache": c.code["from_cache"],
                     "kernel_calls": code["generated"], "extern_calls": code["extern"],
                     "proxy_fallbacks": code["proxy"], "copy_only_calls": code["copy_calls"],
                     "allocations": code["allocations"], "alloc_bytes": code["alloc_bytes"],
                     "inductor_bytes_accessed": c.code.get("bytes_accessed"),
                     "inductor_kernels": c.code.get("kernel_count"),
                     "proxy_ops": ", ".join(f"{k}×{v}" for k, v in code["proxy_ops"].items())})
    return pd.DataFrame(rows)


def calls_table(res: Results) -> pd.DataFrame:
    """Every call of each package's run_impl: kind (generated / extern / proxy), the ATen ops it comes from."""
    rows = []
    for c in res.cases:
        if c.code is None:
            continue
        for i, call in enumerate(c.code["code"]["calls"]):
            rows.append({"model": c.spec.model, "variant": c.variant, "n": i, "kind": call["kind"],
                         "copy_only": call["copy_only"], "name": call["name"][:120], "ops": ", ".join(call["ops"])[:300]})
    return pd.DataFrame(rows)


def post_grad_table(res: Results) -> pd.DataFrame:
    """View/copy ops in Inductor's graph before and after its post-grad passes (reinplace among them), per case."""
    rows = []
    for c in res.cases:
        if c.code is None or c.code.get("post_grad_before") is None:
            continue
        pre, post = c.code["post_grad_before"], c.code["post_grad_after"] or {}
        for op in sorted(set(pre) | set(post)):
            if base_op(op) in VIEW_COPY_OPS + VIEW_OPS or "scatter" in op or "index_put" in op or op.endswith("copy_.default"):
                rows.append({"model": c.spec.model, "variant": c.variant, "op": op, "before_post_grad": pre.get(op, 0),
                             "after_post_grad": post.get(op, 0)})
    return pd.DataFrame(rows)


def runtime_table(res: Results) -> pd.DataFrame:
    """Per case: each load attempt (as is / workaround), steady-state latency, and its distance from eager."""
    rows = []
    for c in res.cases:
        for o in c.runs or ([c.compile] if c.compile is not None and not c.compile.ok else []):
            row = {"model": c.spec.model, "variant": c.variant, **aoti.outcome_row(o)}
            if o.ok:
                row.update({k: v for k, v in o.value["timing"].items() if k != "label"})
                row["eager_max_abs"] = o.value["eager_max_abs"]
            rows.append(row)
    return pd.DataFrame(rows)


def rounds_table(res: Results) -> pd.DataFrame:
    """Per model and round: each variant's median latency, timed in turn, and the round's ratio without / with."""
    rows = []
    for model, outcomes in res.timings.items():
        r = res.rounds(model)
        if r is None:
            rows += [{"model": model, **aoti.outcome_row(o)} for o in outcomes]
            continue
        with_, without = r.get("with pass", {}), r.get("without pass", {})
        ratios = timing.round_ratios(without.get("round_medians_ms", []), with_.get("round_medians_ms", []))
        for i, (a, b) in enumerate(zip(without.get("round_medians_ms", []), with_.get("round_medians_ms", []))):
            rows.append({"model": model, "round": i + 1, "without_pass_ms": a, "with_pass_ms": b,
                         "ratio_without_over_with": ratios[i] if i < len(ratios) else None})
    return pd.DataFrame(rows)


def equivalence_table(res: Results) -> pd.DataFrame:
    """Outputs with vs without the pass: edge graphs run eagerly, and the AOTI packages over the same calls."""
    return pd.DataFrame(equivalence_rows(res))


# table name (as kept in results.json) → the table of a run's results
TABLES: dict[str, Callable[[Results], pd.DataFrame]] = {
    "pass": pass_table, "view_ops": view_ops_table, "pass_probes": probes_table, "generated_code": code_table,
    "kernel_calls": calls_table, "post_grad": post_grad_table, "runtime": runtime_table,
    "timing_rounds": rounds_table, "equivalence": equivalence_table,
}


def record_tables(found: Any, res: Results) -> dict[str, pd.DataFrame]:
    """Keep every table in results.json and return them for display."""
    return findings.record_tables(found, TABLES, res)
