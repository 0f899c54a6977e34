"""Dynamic H/W/batch export of YOLO26: which torch.export specs work, whether the programs stay right across sizes,
and ExecuTorch XNNPACK / AOTInductor with the spec that works."""

from __future__ import annotations

import functools
import re
import shutil
import tempfile
import types
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import torch

from .. import aoti as aoti_pkg, artifacts, catalog, env, isolate, timing
# The live model and its dynamic export are shared kit modules; their names stay importable from here.
from ..dynamic_export import (AXES, FIXES, PREP_TEXT, PREPS, RECOMMENDED, SHAPE_TEXT, SHAPES, SPECS, STRIDE, Exported,
                              Spec, _decode_boxes_flat, _first_line, _flat_anchors, _topk_static_k, anchor_count,
                              dynamic_ready, example_size, export_spec, guard_kind, parse_violations, program_guards,
                              program_ranges, readable, register_spec, same_guard, suggested_fixes)
from ..live import build_model, image, liven
from ..verdicts import Judgement

NAME = "dynamic_shapes"
LETTERBOX_VALUE = 114 / 255  # ultralytics' grey padding
PATHS = ("export", "executorch", "aoti")
SEED_GUARD = "(1 + ((height-1) // 16)) == (2 + 2*((height-1) // 32))"  # seed 001's words
# Seed 001's constraint violation: "Not all values of height in range 320-1280 ... Suggested fixes: height = 640":
# the plain-Dim spec is exported once more with that range and a 640 example, so the guard and suggested-fix
# claims are judged under the seed's own conditions (a few seconds of tracing).
SEED_RANGE = (320, 1280)
SEED_EXAMPLE = 640


# --------------------------------------------------------------------------------------------- model


def fix_source() -> Any:
    """The kit's model changes as a Markdown code block (what `dynamic_ready` applies)."""
    import inspect

    from IPython.display import Markdown

    code = "\n\n".join(inspect.getsource(f) for f in (dynamic_ready, _flat_anchors, _decode_boxes_flat, _topk_static_k))
    return Markdown(f"```python\n{code}\n```")


# --------------------------------------------------------------------------------------------- guards

# Known errors, their cause in the model or toolchain, and the fix; matched by regex on the message.
CAUSES: list[tuple[str, str, str]] = [
    (r"satisfy the generated guard .*// 16", "stride-2 convs round up; the neck concatenates an upsampled P5 with P4 "
     "(and P4 with P3), equal only when H, W are 32k-7 .. 32k", "derived dims 32*Dim (torch's own suggestion)"),
    (r"specialized it to be a constant \(1\)", "0/1 specialization: an example batch of 1 is traced as a constant",
     "export with an example batch >= 2"),
    (r"sym_min", "Detect.get_topk_index: k = min(max_det, anchors) exports as torch.sym_min, which ExecuTorch's edge "
     "verifier rejects", "static k (dynamic_ready) or EdgeCompileConfig(_check_ir_validity=False)"),
    (r"only supports 1 dynamic dimension", "make_anchors stacks (h, w) grids: an unsqueeze(-1) with two dynamic dims, "
     "which XNNPACK's reshape cannot take", "flat anchors (dynamic_ready)"),
    (r"== 1344|==\s*\d+$|must match the size of tensor b", "Detect caches anchors per shape (self.shape); after an eager "
     "call at the example size export reuses the cached tensor, baking that size's anchors in", "head.dynamic = True"),
    (r"Sizes of tensors must match except in dimension 1|// 16\)? == \(?2 \+ 2|// 8\)? == \(?4 \+ 4",
     "size not 32k-7 .. 32k: the neck concat gets maps of different sizes", "letterbox to a multiple of 32"),
    (r"Propagating input shapes failed", "XNNPACK cannot reshape the graph for this size (not a multiple of 32)",
     "letterbox to a multiple of 32"),
    (r"bounded tensor|maximum capacity", "larger than the program's upper bound (memory is planned for max)",
     "export with a larger max_size"),
    (r"to be of the form", "not a multiple of 32: the derived dim 32*s only admits multiples", "letterbox to a multiple of 32"),
    (r"to be <=|to be >=|<= \d+$|>= \d+$|out of range|not in range", "outside the exported range", "stay in range"),
]


def explain(error: str) -> tuple[str, str]:
    """(cause, fix) for a known error message; empty strings when unknown."""
    for pattern, cause, fix in CAUSES:
        if error and re.search(pattern, error, flags=re.S):
            return cause, fix
    return "", ""


# --------------------------------------------------------------------------------------------- export


@dataclass
class SpecRun:
    """Every spec's export attempt, with the tables the notebook shows."""

    results: dict[str, Exported]
    params: dict[str, Any]
    seed_range: Exported | None = None  # the plain-Dim spec under seed 001's range and example (SEED_RANGE)

    def _all(self) -> list[tuple[str, Exported]]:
        extra = [(f"dim, seed's range {SEED_RANGE[0]}-{SEED_RANGE[1]}", self.seed_range)] if self.seed_range else []
        return [(n, r) for n, r in self.results.items()] + extra

    @property
    def table(self) -> pd.DataFrame:
        """One row per spec: outcome, example, resulting ranges, guard counts, torch's suggested fix."""
        rows = []
        for label, r in self._all():
            cause, fix = explain(r.message or r.error)
            rows.append({
                "spec": label, "what": r.spec.title, "model": PREP_TEXT[r.spec.prep],
                "dynamic_shapes": SHAPE_TEXT[r.spec.shapes], "example": "x".join(map(str, r.example)),
                "outcome": r.status, "seconds": round(r.seconds, 2), "error": r.error,
                "range_constraints": "; ".join(f"{k}: {v}" for k, v in r.ranges.items() if k != "channels" and k != "dim1"),
                "violations": len(r.violations), "input_guards": len(r.guards),
                "specialized_guards": sum(guard_kind(g) == "specialized to a constant" for g in r.guards),
                "suggested_fix": " | ".join(suggested_fixes(r.message)),
                "cause": cause, "warnings": " | ".join(r.warnings),
            })
        return pd.DataFrame(rows)

    @property
    def guards(self) -> pd.DataFrame:
        """Constraint violations (failed exports) and input guards (exported programs), one per row."""
        rows = []
        for label, r in self._all():
            for v in r.violations:
                rows.append({"spec": label, "source": "constraint violation", "kind": v["kind"], "dim": v["dim"],
                             "guard": v["guard"], "range": v["range"], "suggested_fix": v["suggested_fix"]})
            for g in r.guards:
                dims = ", ".join(d for d in ("batch", "height", "width") if re.search(rf"\b{d}\b", g))
                rows.append({"spec": label, "source": "input guard of the program", "kind": guard_kind(g),
                             "dim": dims, "guard": g, "range": "", "suggested_fix": ""})
        return pd.DataFrame(rows, columns=["spec", "source", "kind", "dim", "guard", "range", "suggested_fix"])


def try_specs(specs: list[str], *, model: str = "yolo26n", batch: int = 1, min_size: int = 160, max_size: int = 320,
              max_batch: int = 4, device: str = "auto", seed: int = 0) -> SpecRun:
    """Export the model under each named spec (in this process: torch.export raises, it does not crash)."""
    unknown = [s for s in specs if s not in SPECS]
    if unknown:
        raise KeyError(f"unknown spec(s) {unknown}; known: {', '.join(SPECS)}")
    device = env.resolve_device(device)
    params = dict(model=model, batch=batch, min_size=min_size, max_size=max_size, max_batch=max_batch, device=device, seed=seed)
    results = {name: export_spec(name, **params) for name in specs}
    seed_range = None
    if "dim" in specs:
        lo, hi = SEED_RANGE
        seed_range = export_spec("dim", **{**params, "min_size": lo, "max_size": hi}, example_side=SEED_EXAMPLE)
    return SpecRun(results, params, seed_range)


# ---------------------------------------------------------------------------------------------- sweep


def compare(out: torch.Tensor, ref: torch.Tensor, atol: float) -> dict[str, Any]:
    """Detections vs eager: max |Δ| elementwise and order-insensitive (nearest row), over the common rows.

    They agree when the shapes match and either every element is within atol or at most 1% of the rows (at
    least one) have no partner within atol: near-tied scores can swap places across the top-k cut.
    """
    out, ref = out.detach().float().cpu(), ref.detach().float().cpu()
    rows = min(out.shape[1], ref.shape[1])
    a, b = out[:, :rows], ref[:, :rows]
    strict = float((a - b).abs().max()) if rows else 0.0
    # near-tied scores may swap places in the top-k between backends: match each row to its nearest
    nearest = torch.cdist(a, b, p=float("inf")).min(-1).values if rows else torch.zeros(1)
    unmatched = int((nearest > atol).sum())
    agree = out.shape == ref.shape and (strict <= atol or unmatched <= max(1, rows * out.shape[0] // 100))
    return {"rows": out.shape[1], "eager_rows": ref.shape[1], "max_abs_diff": strict,
            "matched_diff": float(nearest.max()), "unmatched_rows": unmatched, "agrees": bool(agree)}


def default_sweep(min_size: int, max_size: int, count: int = 5) -> list[int]:
    """Multiples of 32 across [min_size, max_size] (at most `count`, always the ends and the export example),
    then sizes that are not."""
    multiples = list(range(-(-min_size // STRIDE) * STRIDE, max_size + 1, STRIDE))
    ex = example_size(min_size, max_size)
    if len(multiples) > count:
        picks = {round(i * (len(multiples) - 1) / (count - 1)) for i in range(count)}
        multiples = sorted({m for i, m in enumerate(multiples) if i in picks} | {ex})
    # ex+8: the concat sizes differ (fails everywhere); ex-6 ≡ 26 mod 32 runs eagerly; max+32 is out of range
    return multiples + [ex + 8, ex - 6, max_size + STRIDE]


def _cases(spec: Spec, sizes: list[int], batch: int, max_batch: int, min_size: int, max_size: int) -> list[tuple[int, int, int]]:
    if spec.sweep == "batch":
        size = example_size(min_size, max_size)
        return [(b, size, size) for b in sorted({1, 2, max_batch, max_batch + 1})]
    cases = [(batch, s, s) for s in sizes]
    if min_size < max_size:
        cases.append((batch, min_size, max_size))  # H and W are independent dims
    return cases


def _run(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> tuple[str, str, Any]:
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "ok", "", fn(x)
    except Exception as exc:
        status = "guard" if "Guard failed" in str(exc) or isinstance(exc, AssertionError) else "error"
        return status, readable(f"{type(exc).__name__}: {_first_line(str(exc))}"), None


def _ranges_only(ep: Any) -> Any:
    try:
        # torch >= 2.9: a pre-hook checks only the input ranges, not the guards; what a backend that trusts
        # range_constraints sees
        return ep.module(check_guards=False)
    except TypeError:
        return None


@dataclass
class Sweep:
    """Every exported program run over the sizes, against eager."""

    detail: pd.DataFrame
    atol: float

    @property
    def summary(self) -> pd.DataFrame:
        """Per spec: sizes tried, where eager runs, where the program agrees, fails or is wrong."""
        rows = []
        for spec, d in self.detail.groupby("spec", sort=False):
            eager_ok = d[d.eager == "ok"]
            agree = eager_ok[(eager_ok.program == "ok") & _flag(eager_ok.agrees)]
            rejects = eager_ok[(eager_ok.program != "ok") & eager_ok.in_range]
            outside = d[~d.in_range]
            wrong = eager_ok[(eager_ok.program == "ok") & ~_flag(eager_ok.agrees)]
            tried = eager_ok[~eager_ok.ranges_only.isin(["not run", "n/a"]) & eager_ok.in_range]
            raw_bad = tried[(tried.ranges_only != "ok") | ~_flag(tried.ranges_only_agrees)]
            mult = d[d.multiple_of_32 & d.in_range & (d.eager == "ok")]
            mult_ok = mult[(mult.program == "ok") & _flag(mult.agrees)]
            rows.append({
                "spec": spec, "cases": len(d), "eager_ok": len(eager_ok), "program_agrees": len(agree),
                "multiples_in_range_ok": f"{len(mult_ok)}/{len(mult)}",
                "rejected_in_range_where_eager_runs": ", ".join(d_label(r) for _, r in rejects.iterrows()),
                "outside_range": ", ".join(f"{d_label(r)}: {'accepted' if r.program == 'ok' else 'rejected'}"
                                           for _, r in outside.iterrows()),
                "wrong_results": ", ".join(d_label(r) for _, r in wrong.iterrows()),
                "ranges_only_fails_or_wrong_in_range": ", ".join(d_label(r) for _, r in raw_bad.iterrows()),
                "max_abs_diff": float(agree.max_abs_diff.max()) if len(agree) else None,
                "correct_at_every_multiple": len(mult) > 0 and len(mult_ok) == len(mult),
            })
        return pd.DataFrame(rows)


def _flag(values: pd.Series) -> pd.Series:
    """A column of True/False/NaN as booleans (NaN → False), whatever dtype pandas gave it."""
    return values.map(lambda v: isinstance(v, (bool, np.bool_)) and bool(v)).astype(bool)


def d_label(row: Any) -> str:
    """`b×h×w` of a sweep row."""
    return f"{row['batch']}x{row['height']}x{row['width']}"


def run_sweep(run: SpecRun, sweep: list[int] | None = None, atol: float = 1e-4) -> Sweep:
    """Run every exported program at each size through `ep.module()` and compare with eager.

    Where the guarded program refuses a size eager runs (and for the recommended spec's non-multiples), the
    same program also runs with range checks only, to show what its graph computes without the guards.
    """
    p = run.params
    sizes = list(sweep) if sweep else default_sweep(p["min_size"], p["max_size"])
    reference = build_model(p["model"], p["seed"], p["device"])
    eager_cache: dict[tuple[int, int, int], tuple[str, str, Any]] = {}
    rows = []
    for r in run.results.values():
        if not r.ok:
            continue
        guarded, raw = r.program.module(), None
        for case in _cases(r.spec, sizes, p["batch"], p["max_batch"], p["min_size"], p["max_size"]):
            b, h, w = case
            x = image(b, h, w, seed=1, device=p["device"])
            if case not in eager_cache:
                eager_cache[case] = _run(reference, x)
            e_status, e_error, ref = eager_cache[case]
            status, error, out = _run(guarded, x)
            multiple = h % STRIDE == 0 and w % STRIDE == 0
            row = {"spec": r.spec.name, "batch": b, "height": h, "width": w, "multiple_of_32": multiple,
                   "in_range": p["min_size"] <= min(h, w) and max(h, w) <= p["max_size"] and b <= p["max_batch"],
                   "eager": e_status, "eager_error": e_error, "program": status, "program_error": error,
                   "ranges_only": "not run"}
            if out is not None and ref is not None:
                row.update(compare(out, ref, atol))
            if (status != "ok" and e_status == "ok") or (r.spec.name == RECOMMENDED and not multiple and row["in_range"]):
                if raw is None:  # built lazily: a module's first call costs ~1 s
                    raw = _ranges_only(r.program)
                if raw is None:
                    row.update(ranges_only="n/a")
                else:
                    u_status, u_error, u_out = _run(raw, x)
                    row.update(ranges_only=u_status, ranges_only_error=u_error)
                    if u_out is not None and ref is not None:
                        c = compare(u_out, ref, atol)
                        row.update(ranges_only_diff=c["max_abs_diff"], ranges_only_agrees=c["agrees"])
            why = error or row.get("ranges_only_error", "")
            row["cause"] = explain(why)[0] if why else ""
            rows.append(row)
    columns = ["spec", "batch", "height", "width", "multiple_of_32", "in_range", "eager", "eager_error", "program",
               "program_error", "rows", "eager_rows", "max_abs_diff", "matched_diff", "unmatched_rows", "agrees",
               "ranges_only", "ranges_only_error", "ranges_only_diff", "ranges_only_agrees", "cause"]
    return Sweep(pd.DataFrame(rows).reindex(columns=columns), atol)


def _layer_tracker(net: torch.nn.Module) -> dict[str, str]:
    """Forward pre-hooks on the model's top-level layers: `last` names the layer entered most recently
    (`<index> <class>`, e.g. `13 Concat`), i.e. the layer a raised error came from."""
    seen = {"last": ""}
    for i, layer in enumerate(getattr(net, "model", [])):
        label = f"{getattr(layer, 'i', i)} {type(layer).__name__}"
        layer.register_forward_pre_hook(lambda _m, _a, label=label: seen.__setitem__("last", label))
    return seen


def residue_scan(model: str = "yolo26n", base: int = 2 * STRIDE, device: str = "auto", seed: int = 0) -> pd.DataFrame:
    """Eager model at every height (then width) from base+1 to base+32: which sizes mod 32 run at all, and for
    those that fail, the top-level layer that raised (`failed_in`, e.g. `13 Concat` or `23 Detect`).

    The pattern repeats every 32 px, so a small base keeps the scan cheap.
    """
    device = env.resolve_device(device)
    net = build_model(model, seed, device)
    seen = _layer_tracker(net)
    rows = []
    for axis in ("height", "width"):
        for n in range(base + 1, base + STRIDE + 1):
            h, w = (n, base) if axis == "height" else (base, n)
            seen["last"] = ""
            status, error, _ = _run(net, image(1, h, w, seed=1, device=device))
            rows.append({"axis": axis, "size": n, "mod_32": n % STRIDE, "eager": status, "error": error,
                         "failed_in": seen["last"] if status != "ok" else ""})
    return pd.DataFrame(rows)


def _spans(values: list[int]) -> str:
    """[0, 25, 26, 27] → '0, 25-27'."""
    spans: list[list[int]] = []
    for v in sorted(values):
        if spans and v == spans[-1][-1] + 1:
            spans[-1].append(v)
        else:
            spans.append([v])
    return ", ".join(f"{s[0]}-{s[-1]}" if len(s) > 1 else str(s[0]) for s in spans)


def residue_table(scan: pd.DataFrame) -> pd.DataFrame:
    """Per axis: the sizes mod 32 at which eager runs, those at which it fails, and the first error."""
    rows = []
    for axis, d in scan.groupby("axis", sort=False):
        bad = d[d.eager != "ok"]
        rows.append({"axis": axis, "sizes tried": f"{d['size'].min()}-{d['size'].max()}",
                     "runs at (mod 32)": _spans(d[d.eager == "ok"].mod_32.tolist()),
                     "fails at (mod 32)": _spans(bad.mod_32.tolist()),
                     "failed in": ", ".join(sorted(set(bad.get("failed_in", pd.Series(dtype=str)).dropna()) - {""})),
                     "error": bad.error.iloc[0] if len(bad) else ""})
    return pd.DataFrame(rows)


def running_residues(scan: pd.DataFrame) -> list[int]:
    """Sizes mod 32 at which the eager model runs along both axes."""
    ok = scan[scan.eager == "ok"].groupby("mod_32").axis.nunique()
    return sorted(int(r) for r, n in ok.items() if n == 2)


# ------------------------------------------------------------------------------------------ letterbox


def letterbox(x: torch.Tensor, stride: int = STRIDE, value: float = LETTERBOX_VALUE) -> torch.Tensor:
    """Pad an NCHW batch at the bottom and right up to the next multiple of `stride` (boxes keep their coordinates)."""
    h, w = x.shape[-2:]
    pad_h, pad_w = (-h) % stride, (-w) % stride
    if not pad_h and not pad_w:
        return x
    return torch.nn.functional.pad(x, (0, pad_w, 0, pad_h), value=value)


# ------------------------------------------------------------------------------------------ ExecuTorch


class LoweringFailed(RuntimeError):
    """ExecuTorch lowering failed; the message names the graph's suspect calls."""


def _python_calls(ep: Any) -> list[str]:
    """Non-operator Python functions in an exported graph (the edge verifier only allows `alloc`)."""
    names = []
    for node in ep.graph.nodes:
        if node.op == "call_function" and isinstance(node.target, types.FunctionType):
            names.append(node.target.__name__)
    return sorted(set(names))


def lower_xnnpack(spec_name: str, path: str, *, model: str, batch: int, min_size: int, max_size: int,
                  max_batch: int, seed: int, static_size: int = 0) -> dict[str, Any]:
    """Child step: export (spec, or static at static_size), lower with XnnpackPartitioner, write the .pte."""
    import time

    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower

    spec = SPECS[spec_name]
    t0 = time.perf_counter()
    if static_size:
        x = image(batch, static_size, static_size, seed=0)
        net = PREPS[spec.prep](build_model(model, seed), x, min(min_size, static_size))
        ep = torch.export.export(net, (x,), strict=False)
    else:
        r = export_spec(spec_name, model=model, batch=batch, min_size=min_size, max_size=max_size, max_batch=max_batch, seed=seed)
        if not r.ok:
            raise LoweringFailed(f"export failed: {r.error}")
        ep = r.program
    t1 = time.perf_counter()
    calls = _python_calls(ep)

    def lower(ep: Any) -> tuple[bytes, dict[str, Any]]:
        try:
            t1 = time.perf_counter()
            edge = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()],
                                               compile_config=EdgeCompileConfig(_check_ir_validity=spec.edge_check))
            t2 = time.perf_counter()
            program = edge.to_executorch()
        except Exception as exc:
            text = _first_line(str(exc)) or "(no message)"
            raise LoweringFailed(f"{type(exc).__name__}: {text} [graph calls Python functions: "
                                 f"{', '.join(calls) or 'none'}]") from exc
        ops = Counter(str(getattr(n.target, "__name__", n.target)) for n in edge.exported_program().graph.nodes
                      if n.op == "call_function")
        delegates = ops.pop("executorch_call_delegate", 0)
        return program.buffer, {"lower_s": t2 - t1, "to_executorch_s": time.perf_counter() - t2,
                                "delegates": delegates,
                                "outside_xnnpack": ", ".join(sorted(k for k in ops if k not in ("getitem", "alloc", "view")))}

    buffer, facts = artifacts.lowered_program(ep, f"xnnpack-check{int(spec.edge_check)}", lower)
    Path(path).write_bytes(buffer)
    return {"export_s": t1 - t0, **facts, "bytes": len(buffer), "python_calls": calls}


def _load_pte(path: str) -> tuple[Any, Any, bytes]:
    """(method, program, bytes) of a .pte; the caller keeps all three alive: the runtime does not copy the
    buffer, and a dropped one segfaults in execute."""
    from executorch.runtime import Runtime

    data = Path(path).read_bytes()
    program = Runtime.get().load_program(data)
    return program.load_method("forward"), program, data


def run_pte(path: str, cases: list[tuple[int, int, int, bool]], *, model: str, seed: int, atol: float) -> list[dict[str, Any]]:
    """Child step: load a .pte with executorch.runtime, run each (batch, h, w, letterboxed) case, compare with eager."""
    method, _program, _data = _load_pte(path)
    reference = build_model(model, seed)
    rows = []
    for i, (b, h, w, boxed) in enumerate(cases):
        print(f"{_CASE_MARK}{i}", flush=True)  # the runtime logs its errors to stderr: split the log per case
        x = image(b, h, w, seed=1)
        if boxed:
            x = letterbox(x)
        row = {"batch": b, "height": h, "width": w, "letterboxed": boxed, "input": "x".join(map(str, x.shape[-2:]))}
        e_status, e_error, ref = _run(reference, x)
        try:
            out = method.execute((x,))[0]
        except Exception as exc:
            rows.append({**row, "status": "error", "error": f"{type(exc).__name__}: {_first_line(str(exc))}",
                         "eager": e_status, "eager_error": e_error})
            continue
        row.update(status="ok", error="", eager=e_status, eager_error=e_error)
        if ref is not None:
            row.update(compare(out, ref, atol))
        rows.append(row)
    return rows


def run_pte_dropped_buffer(path: str, size: int) -> str:
    """Child step: the one-liner `Runtime.get().load_program(Path(p).read_bytes()).load_method("forward")`, then
    execute; the bytes are garbage once the line ends (crashes here when the runtime still points into them)."""
    import gc

    from executorch.runtime import Runtime

    method = Runtime.get().load_program(Path(path).read_bytes()).load_method("forward")
    gc.collect()
    filler = [bytes(1 << 20) for _ in range(32)]  # let the allocator hand the freed pages out again
    out = method.execute((image(1, size, size),))[0]
    return f"ran, output {tuple(out.shape)} after reallocating {len(filler)} MiB"


def time_ptes(programs: list[tuple[str, str, list[tuple[int, int, int]]]], min_run_time: float) -> list[dict[str, Any]]:
    """Child step: load every (label, path, sizes) .pte, then time them size by size, one after the other.

    All programs share one process and run back to back per size, so a dynamic and a static program at the
    same size see the same machine state.
    """
    loaded = {label: _load_pte(path) for label, path, _ in programs}
    sizes = sorted({case for _, _, cases in programs for case in cases}, key=lambda c: (c[1] * c[2], c))
    rows = []
    for b, h, w in sizes:
        x = image(b, h, w, seed=1)
        for label, _, cases in programs:
            if (b, h, w) not in cases:
                continue
            method = loaded[label][0]
            t = timing.measure(lambda: method.execute((x,)), label=f"{label} {h}x{w}", min_run_time=min_run_time)
            rows.append({"program": label, "batch": b, "height": h, "width": w, "letterboxed": False,
                         **{k: v for k, v in t.row().items() if k.endswith("_ms") or k == "runs"}})
    return rows


_CASE_MARK = "@@yolo26kit case "
_RUNTIME_ERROR = re.compile(r"\] (?:Internal Error: )?(.*(?:failed|Error|Attempted|must|expected).*)$", re.I)


def case_logs(log: str) -> dict[int, str]:
    """The runtime's error lines per case index, from a run_pte child's log."""
    found: dict[int, str] = {}
    for part in log.split(_CASE_MARK)[1:]:
        index, _, text = part.partition("\n")
        lines = [m.group(1).strip() for line in text.splitlines() if (m := _RUNTIME_ERROR.search(line))]
        if index.strip().isdigit() and lines:
            found[int(index)] = " | ".join(lines[:2])
    return found


@dataclass
class EtRun:
    """ExecuTorch XNNPACK: one lowering per program and its runs at each size."""

    lowering: pd.DataFrame
    runs: pd.DataFrame


def _et_cases(min_size: int, max_size: int, batch: int, sizes: list[int]) -> list[tuple[int, int, int, bool]]:
    ex = example_size(min_size, max_size)
    sizes = list(sizes) or sorted({min_size, ex, max_size} | {s for s in range(-(-min_size // STRIDE) * STRIDE, max_size + 1, 64)})
    cases = [(batch, s, s, False) for s in sizes]
    # sizes that are not multiples of 32, raw and letterboxed, and one above the bound
    for s in (ex + 8, ex - 6):
        if s + (-s) % STRIDE <= max_size:
            cases += [(batch, s, s, False), (batch, s, s, True)]
    return cases + [(batch, max_size + STRIDE, max_size + STRIDE, False)]


PRELOAD = ("yolo26kit.investigations.dynamic_shapes", "ultralytics.nn.tasks", "executorch.exir", "executorch.runtime",
           "executorch.backends.xnnpack.partition.xnnpack_partitioner")


def _lower_all(plan: list[tuple[str, int]], work: Path, kw: dict[str, Any], timeout: float,
               workers: int) -> list[tuple[str, str, int, Path, isolate.Outcome]]:
    """Lower every (spec, static size) in child steps, `workers` at a time (lowering is single-threaded Python)."""
    from concurrent.futures import ThreadPoolExecutor

    def one(item: tuple[str, int]) -> tuple[str, str, int, Path, isolate.Outcome]:
        name, static = item
        label = f"{name} static {static}" if static else name
        path = work / f"{label.replace(' ', '_')}.pte"
        out = isolate.run_step(lower_xnnpack, name, str(path), **kw, static_size=static, timeout=timeout,
                               step=f"lower {label}")
        return label, name, static, path, out

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(one, plan))


def executorch_study(et_specs: list[str], *, model: str = "yolo26n", batch: int = 1, min_size: int = 160,
                     max_size: int = 320, max_batch: int = 4, seed: int = 0, sizes: list[int] | None = None,
                     static_sizes: list[int] | None = None, atol: float = 1e-3, min_run_time: float = 0.3,
                     step_timeout: float = 600, workers: int = 0, enabled: bool = True) -> EtRun:
    """Lower each spec once (and one static program per static size) in child steps, then run each .pte.

    Lowerings run `workers` at a time (0: one per CPU core); the runs and their timings run one after the other.
    """
    if not enabled:
        return EtRun(pd.DataFrame([isolate.skipped("executorch", "`executorch` not in paths").row()]), pd.DataFrame())
    import os

    isolate.preload(*PRELOAD)
    kw = dict(model=model, batch=batch, min_size=min_size, max_size=max_size, max_batch=max_batch, seed=seed)
    plan = [(name, 0) for name in et_specs] + [(RECOMMENDED, s) for s in (static_sizes or [])]
    workers = workers or min(len(plan), os.cpu_count() or 1)
    lowering, runs = [], []
    timed: list[tuple[str, str, list[tuple[int, int, int]]]] = []
    work = Path(tempfile.mkdtemp(prefix="yolo26kit-pte-"))
    try:
        for label, name, static, path, out in _lower_all(plan, work, kw, step_timeout, workers):
            row = {"program": label, "spec": name, "dynamic": not static, **out.row()}
            if out.ok:
                row.update({k: (round(v, 2) if isinstance(v, float) else v) for k, v in out.value.items()})
            row["cause"], row["fix"] = explain(out.error) if out.error else ("", "")
            lowering.append(row)
            if not out.ok:
                continue
            cases = [(batch, static, static, False)] if static else _et_cases(min_size, max_size, batch, sizes or [])
            ran = isolate.run_step(run_pte, str(path), cases, model=model, seed=seed, atol=atol,
                                   timeout=step_timeout, step=f"run {label}")
            if not ran.ok:
                runs.append({"program": label, "dynamic": not static, "status": ran.status, "error": ran.error})
                continue
            logs = case_logs(ran.log)
            for i, r in enumerate(ran.value):
                if r.get("error") and i in logs:
                    r["error"] = f"{r['error']} [runtime: {logs[i]}]"
                runs.append({"program": label, "dynamic": not static, **r})
            if name == RECOMMENDED and not static:
                probe = isolate.run_step(run_pte_dropped_buffer, str(path), min_size, timeout=step_timeout,
                                         step=f"run {label}, buffer dropped")
                runs.append({"program": f"{label}, .pte bytes not kept alive", "dynamic": True, "batch": 1,
                             "height": min_size, "width": min_size, "letterboxed": False, "status": probe.status,
                             "error": probe.error or probe.value or ""})
            # time the sizes that ran, at multiples of 32 and without letterboxing
            good = [(r["batch"], r["height"], r["width"]) for r in ran.value
                    if r["status"] == "ok" and not r["letterboxed"] and r["height"] % STRIDE == 0 and r["width"] % STRIDE == 0]
            if good and min_run_time > 0:
                timed.append((label, str(path), good))
        timings = pd.DataFrame()
        if timed:
            t = isolate.run_step(time_ptes, timed, min_run_time, timeout=step_timeout, step="time .pte programs")
            timings = pd.DataFrame(t.value) if t.ok else pd.DataFrame([{"program": "timing", **t.row()}])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    runs_df = pd.DataFrame(runs)
    if len(runs_df) and "error" in runs_df:
        runs_df["cause"] = [explain(e)[0] if isinstance(e, str) and e else "" for e in runs_df["error"]]
    if len(runs_df) and len(timings) and "median_ms" in timings:
        runs_df = runs_df.merge(timings, on=["program", "batch", "height", "width", "letterboxed"], how="left")
    return EtRun(pd.DataFrame(lowering), runs_df)


def plot_latency(et: EtRun) -> Any:
    """Latency (median, p10-p90) vs pixels: each dynamic program's sizes, and one static program per size."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    runs = et.runs
    if len(runs) and "median_ms" in runs:
        boxed = _flag(runs["letterboxed"]) if "letterboxed" in runs else pd.Series(False, index=runs.index)
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


# ------------------------------------------------------------------------------------------------ AOTI

# What the AOTI study runs: plain AOT Inductor (torch._inductor.aoti_compile_and_package), not ExecuTorch's CUDA
# back-end (which also compiles with AOT Inductor, with its own passes and options). Every row says so.
AOTI_BACKEND = "aoti"


def _no_tf32() -> None:
    """Full fp32 convs and matmuls on CUDA, so eager and the AOTI kernels differ by rounding only."""
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False


def aoti_compile(spec_name: str, package_path: str, *, model: str, batch: int, min_size: int, max_size: int,
                 max_batch: int, seed: int, device: str) -> dict[str, Any]:
    """Child step: export the spec on `device` and compile an AOTI package (kit's package cache; no loading here)."""
    import time

    _no_tf32()
    r = export_spec(spec_name, model=model, batch=batch, min_size=min_size, max_size=max_size, max_batch=max_batch,
                    seed=seed, device=device)
    if not r.ok:
        raise RuntimeError(f"export failed: {r.error}")
    t0 = time.perf_counter()
    path = aoti_pkg.compile_package(r.program, package_path)
    return {"export_s": r.seconds, "compile_s": time.perf_counter() - t0, "bytes": Path(path).stat().st_size,
            "ranges": "; ".join(f"{k}: {v}" for k, v in r.ranges.items())}


def aoti_run(package_path: str, cases: list[tuple[int, int, int]], *, model: str, seed: int, device: str,
             atol: float, min_run_time: float) -> list[dict[str, Any]]:
    """Child step: load the package, then run each size, compare with eager on the device, time.

    Without timing (`min_run_time` 0: the probe of sizes that may fault) every run holds the device lock, so it
    never runs beside a timed phase."""
    _no_tf32()
    if min_run_time <= 0:
        with timing.device_lock():
            return _aoti_cases(aoti_pkg.load(package_path), cases, model=model, seed=seed, device=device, atol=atol,
                               min_run_time=0.0)
    return _aoti_cases(aoti_pkg.load(package_path), cases, model=model, seed=seed, device=device, atol=atol,
                       min_run_time=min_run_time)


def _aoti_cases(compiled: Any, cases: list[tuple[int, int, int]], *, model: str, seed: int, device: str, atol: float,
                min_run_time: float) -> list[dict[str, Any]]:
    """Run a loaded AOTI package at each size against eager (and time it when min_run_time > 0)."""
    reference = build_model(model, seed, device)
    rows = []
    for b, h, w in cases:
        x = image(b, h, w, seed=1, device=device)
        row = {"batch": b, "height": h, "width": w}
        e_status, e_error, ref = _run(reference, x)
        status, error, out = _run(lambda t: compiled(t), x)
        out = out[0] if isinstance(out, (list, tuple)) else out
        row.update(status=status, error=error, eager=e_status, eager_error=e_error)
        if out is not None:
            row["rows"] = int(out.shape[1])  # also where eager refuses the size: the package did not check it
        if out is not None and ref is not None:
            row.update(compare(out, ref, atol))
        if out is not None and min_run_time > 0:
            t = timing.measure(lambda: compiled(x), label=f"{h}x{w}", device=device, min_run_time=min_run_time)
            row.update(first_ms=t.first_ms, median_ms=t.median_ms, p10_ms=t.p10_ms, p90_ms=t.p90_ms)
        rows.append(row)
    return rows


def aoti_compile_all(aoti_specs: list[str], work: Path, *, model: str = "yolo26n", batch: int = 1,
                     min_size: int = 160, max_size: int = 320, max_batch: int = 4, seed: int = 0, device: str = "cpu",
                     step_timeout: float = 600) -> dict[str, isolate.Outcome]:
    """Compile every spec's AOTI package concurrently (each in its own child step)."""
    from concurrent.futures import ThreadPoolExecutor

    kw = dict(model=model, batch=batch, min_size=min_size, max_size=max_size, max_batch=max_batch, seed=seed)
    with ThreadPoolExecutor(max_workers=max(1, len(aoti_specs))) as pool:
        built = pool.map(lambda name: isolate.run_step(aoti_compile, name, str(work / f"{name}.pt2"), **kw, device=device,
                                                       timeout=step_timeout, step=f"aoti compile {name}",
                                                       phase="compile"), aoti_specs)
        return dict(zip(aoti_specs, built))


def aoti_study(aoti_specs: list[str], *, model: str = "yolo26n", batch: int = 1, min_size: int = 160,
               max_size: int = 320, max_batch: int = 4, seed: int = 0, device: str = "auto", aoti_cpu: bool = False,
               sizes: list[int] | None = None, atol: float = 1e-3, min_run_time: float = 0.3,
               step_timeout: float = 600, enabled: bool = True) -> pd.DataFrame:
    """AOTInductor with each spec: compile (all specs at once), then load and run in separate child steps through
    the kit's aoti.run_step (as is; again with the workaround when loading crashed from a known cause)."""
    from concurrent.futures import ThreadPoolExecutor

    device = env.resolve_device(device)
    isolate.preload(*PRELOAD)
    if not enabled:
        return pd.DataFrame([{"spec": n, "backend": AOTI_BACKEND, **isolate.skipped("aoti", "`aoti` not in paths").row()} for n in aoti_specs])
    if device != "cuda" and not aoti_cpu:
        return pd.DataFrame([{"spec": n, "backend": AOTI_BACKEND, "device": device, **isolate.skipped("aoti compile", "needs_cuda").row()}
                             for n in aoti_specs])
    rows = []
    work = Path(tempfile.mkdtemp(prefix="yolo26kit-aoti-"))
    try:
        builds = aoti_compile_all(aoti_specs, work, model=model, batch=batch, min_size=min_size, max_size=max_size,
                                  max_batch=max_batch, seed=seed, device=device, step_timeout=step_timeout)
        for name, built in builds.items():
            rows.append({"spec": name, "device": device, **built.row(), **(built.value or {})})
            if not built.ok:
                continue
            ex = example_size(min_size, max_size)
            picks = list(sizes) if sizes else sorted({min_size, ex, max_size})
            # sizes in range, then (in their own child: a bad size may fault the CUDA context) a size that is
            # not a multiple of 32 and one above the range
            # (both at once: a crash's forensics overlap; the probe holds the device lock while it runs, so it
            # never runs beside the other step's timing)
            plan = [(picks, min_run_time, "aoti load+run"), ([ex + 8, max_size + STRIDE], 0.0, "aoti load+probe")]

            def load(item: tuple[list[int], float, str], name: str = name) -> list[isolate.Outcome]:
                sizes_, timed, step = item
                return aoti_pkg.run_step(aoti_run, str(work / f"{name}.pt2"), [(batch, s, s) for s in sizes_],
                                         model=model, seed=seed, device=device, atol=atol, min_run_time=timed,
                                         timeout=step_timeout, step=f"{step} {name}", phase="measure")

            with ThreadPoolExecutor(max_workers=len(plan)) as pool:
                loaded = list(pool.map(load, plan))
            for (sizes_, _, _), outcomes in zip(plan, loaded):
                for ran in outcomes:
                    how = {"aoti_load": ran.details.get("aoti_load", "as_is"), "cause": ran.details.get("cause", "")}
                    if ran.ok:
                        rows += [{"spec": name, "device": device, "step": "aoti run", **how, **r} for r in ran.value]
                    else:
                        rows.append({"spec": name, "device": device, **aoti_pkg.outcome_row(ran), "sizes": str(sizes_)})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return pd.DataFrame(rows).assign(backend=AOTI_BACKEND)


@dataclass
class Backends:
    """The ExecuTorch and AOTI studies, started together; on CUDA they run in the background while the notebook
    exports and sweeps in process (their steps are child processes), on CPU only when asked for (one at a time)."""

    jobs: dict[str, Callable[[], Any]]
    futures: dict[str, Any] = field(default_factory=dict)

    def _get(self, name: str) -> Any:
        return self.futures[name].result() if name in self.futures else self.jobs[name]()

    def executorch(self) -> "EtRun":
        """The ExecuTorch study's result (waits for it)."""
        return self._get("executorch")

    def aoti(self) -> pd.DataFrame:
        """The AOTI study's rows (waits for them)."""
        return self._get("aoti")


def start_backends(et_specs: list[str], aoti_specs: list[str], *, paths: list[str], device: str = "auto",
                   background: bool | None = None, et: dict[str, Any] | None = None,
                   aoti: dict[str, Any] | None = None, **common: Any) -> Backends:
    """Start the ExecuTorch and AOTI studies (in background threads when `background`, default: on CUDA).

    `common` goes to both studies (model, batch, min_size, ...), `et` / `aoti` to one each.
    """
    from concurrent.futures import ThreadPoolExecutor

    device = env.resolve_device(device)
    isolate.preload(*PRELOAD)  # before any thread starts the step server
    jobs = {
        "executorch": functools.partial(executorch_study, et_specs, **common, **(et or {}), enabled="executorch" in paths),
        "aoti": functools.partial(aoti_study, aoti_specs, **common, device=device, **(aoti or {}), enabled="aoti" in paths),
    }
    backends = Backends(jobs)
    if background if background is not None else device == "cuda":
        pool = ThreadPoolExecutor(max_workers=len(jobs), thread_name_prefix="backends")
        backends.futures = {name: pool.submit(job) for name, job in jobs.items()}
        pool.shutdown(wait=False)
    return backends


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
            raw = pte[~_flag(pte.letterboxed)]
            box = pte[_flag(pte.letterboxed)]
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
        e_status, e_error, ref = _run(state["reference"], x)
        status, error, y = _run(run.results[pick.value].program.module(), x)
        row = {"size": size.value, "mod_32": size.value % STRIDE, "eager": e_error or e_status, "program": error or status}
        if y is not None and ref is not None:
            row.update(compare(y, ref, 1e-4))
        out.clear_output()
        with out:
            display(pd.DataFrame([row]))

    size.observe(update, names="value")
    pick.observe(update, names="value")
    return widgets.VBox([widgets.HBox([pick, size]), out])


# -------------------------------------------------------------------------------------------- verdicts


SEED_GUARD_8 = "(1 + ((height-1) // 8)) == (4 + 4*((height-1) // 32))"  # seed 001's second guard
# Model preparations that leave YOLO26's code as ultralytics ships it ("stock"); the others change the head
# (dynamic_ready and its parts: "kit-modified"). Every dynamic claim records which one its verdict rests on.
STOCK_PREPS = ("fresh", "warm")


def model_variant(spec: Spec) -> str:
    """`stock` (YOLO26 as ultralytics builds it) or `kit-modified` (the kit's head changes, dynamic_ready)."""
    return "stock" if spec.prep in STOCK_PREPS else "kit-modified"


@dataclass
class Results:
    """Everything the judges read: the export attempts, the sweep, the residue scan, ExecuTorch and AOTI rows."""

    run: SpecRun
    sweep: Sweep
    scan: pd.DataFrame
    et: EtRun
    aoti: pd.DataFrame

    @property
    def summary(self) -> pd.DataFrame:
        return self.sweep.summary.set_index("spec") if len(self.sweep.summary) else pd.DataFrame()


def _plain(res: Results) -> tuple[Exported | None, list[int]]:
    """The plain-Dim export the guard claims rest on: under the seed's range (320-1280, example 640) when it ran,
    else under the run's own range; with the range it used."""
    if res.run.seed_range is not None:
        return res.run.seed_range, list(SEED_RANGE)
    p = res.run.params
    return res.run.results.get("dim"), [p["min_size"], p["max_size"]]


def _unprovable(plain: Exported) -> list[str]:
    return [v["guard"] for v in plain.violations if v["kind"] == "guard not provable"]


def _range_text(span: list[int]) -> str:
    return f"Dim(min={span[0]}, max={span[1]})"


def judge_plain_dim(res: Results) -> Judgement:
    """Seed 001: plain Dim ranges for H and W fail with 'Constraints violated', unprovable stride guards such as
    SEED_GUARD among them. Confirmed: that failure with the seed's guard; partly: the failure with other
    unprovable guards only; refuted: the plain-Dim export works; inconclusive: it failed without an unprovable guard."""
    plain, span = _plain(res)
    if plain is None:
        return Judgement("inconclusive", "the `dim` spec was not in `specs`: plain Dim ranges were not tried", basis="none")
    run = {"model_variant": model_variant(plain.spec), "size_range": span}
    where = f"stock YOLO26, {_range_text(span)} for H and W, example {'x'.join(map(str, plain.example[2:]))}"
    if plain.ok:
        return Judgement("refuted", f"torch.export accepted plain Dim ranges ({where}): 0 violations",
                         {"ranges": plain.ranges}, run=run)
    guards = _unprovable(plain)
    fixes = suggested_fixes(plain.message)
    data = {"guards": guards, "suggested_fixes": fixes, "error": plain.error}
    if not guards:
        return Judgement("inconclusive", f"torch.export failed ({where}) without an unprovable guard: {plain.error}",
                         data, run=run)
    seed_seen = any(same_guard(g, SEED_GUARD) for g in guards)
    violated = "Constraints violated" in plain.message
    verdict = "confirmed" if seed_seen and violated else "partly"
    return Judgement(verdict, (f"torch.export raised {plain.error.split(':')[0]} ({where}) with {len(guards)} "
                               f"unprovable guards; the seed's guard {'is' if seed_seen else 'is not'} among them; "
                               f"the message {'says' if violated else 'does not say'} 'Constraints violated'"),
                     data, run=run)


def judge_guard_div8(res: Results) -> Judgement:
    """Seed 001's second guard, (1 + ((h-1) // 8)) == (4 + 4*((h-1) // 32)), is among the unprovable ones.
    Refuted when the plain-Dim export works or fails with other guards only."""
    plain, span = _plain(res)
    if plain is None:
        return Judgement("inconclusive", "the `dim` spec was not in `specs`: plain Dim ranges were not tried", basis="none")
    run = {"model_variant": model_variant(plain.spec), "size_range": span}
    if plain.ok:
        return Judgement("refuted", f"plain {_range_text(span)} exported: no guard was generated", {}, run=run)
    guards = _unprovable(plain)
    if not guards:
        return Judgement("inconclusive", f"torch.export failed without an unprovable guard: {plain.error}",
                         {"error": plain.error}, run=run)
    hits = [g for g in guards if same_guard(g, SEED_GUARD_8) or same_guard(g, SEED_GUARD_8.replace("height", "width"))]
    return Judgement("confirmed" if hits else "refuted",
                     (f"{len(hits)} of {len(guards)} unprovable guards of plain {_range_text(span)} are the seed's //8 "
                      f"guard (for height or width){': ' + '; '.join(hits) if hits else ''}"), {"guards": guards}, run=run)


def judge_suggested_fix(res: Results) -> Judgement:
    """Seed 001: torch's suggested fix for the plain-Dim violation is a static size ('height = 640, width = 640').
    Judged on the seed's range and example (SEED_RANGE, SEED_EXAMPLE): confirmed when every suggestion pins a size,
    refuted when none does (derived dims 32*_height instead), partly when both kinds are suggested."""
    plain, span = _plain(res)
    if plain is None or plain.ok:
        why = "the `dim` spec was not run" if plain is None else "the plain-Dim export raised nothing to suggest a fix for"
        return Judgement("inconclusive", why, basis="none" if plain is None else "measured")
    run = {"model_variant": model_variant(plain.spec), "size_range": span, "imgsz": int(plain.example[2])}
    fixes = suggested_fixes(plain.message)
    static = [f for f in fixes if re.fullmatch(r"(height|width) = \d+", f)]
    derived = [f for f in fixes if re.search(r"= \d+\*_", f)]
    where = f"{_range_text(span)}, example {plain.example[2]}"
    data = {"fixes": fixes}
    if not static and not derived:
        return Judgement("inconclusive", f"torch suggested no size fix ({where}): {'; '.join(fixes) or 'nothing'}",
                         data, run=run)
    verdict = "confirmed" if static and not derived else ("refuted" if derived and not static else "partly")
    return Judgement(verdict, (f"{len(static)} of {len(fixes)} suggested fixes pin a static size "
                               f"({'; '.join(static) or 'none'}), {len(derived)} are derived dims "
                               f"({'; '.join(derived) or 'none'}) ({where})"), data, run=run)


def _blocked(res: Results) -> Judgement:
    """One test for seeds 000 and 001 (both say the stride guards make dynamic H/W impossible, so static only):
    does a dynamic H/W spec of the STOCK model export and match eager at every multiple of 32 swept?
    Refuted when one does; partly when stock specs export but none stays correct (not blocked, not usable);
    confirmed when none exports, torch's suggested derived dims among them, and the failures are unprovable guards;
    inconclusive otherwise.
    Specs on the kit-modified model are reported beside it, never counted."""
    summary = res.summary
    hw = [r for r in res.run.results.values() if r.spec.sweep == "size" and r.spec.shapes != "static"]
    stock = [r for r in hw if model_variant(r.spec) == "stock"]
    kit = [r for r in hw if model_variant(r.spec) != "stock"]

    def correct(rs: list[Exported]) -> list[str]:
        return [r.spec.name for r in rs if r.ok and r.spec.name in summary.index
                and bool(summary.loc[r.spec.name, "correct_at_every_multiple"])]

    kit_ok = correct(kit)
    beside = (f"; on the kit-modified model {len(kit_ok)} of {len(kit)} specs export and match eager"
              f"{' (' + ', '.join(kit_ok) + ')' if kit_ok else ''}") if kit else ""
    if not stock:
        return Judgement("inconclusive", f"no dynamic H/W spec of the stock model in `specs`{beside}", basis="none")
    run = {"model_variant": "stock"}
    exported = [r.spec.name for r in stock if r.ok]
    good = correct(stock)
    data = {"stock_correct": good, "stock_exported": exported, "kit_correct": kit_ok}
    if good:
        return Judgement("refuted", (f"{len(good)} of {len(stock)} dynamic H/W specs of the stock model export and match "
                                     f"eager at every multiple of 32 swept ({', '.join(good)}); max |Δ| "
                                     f"{summary.loc[good, 'max_abs_diff'].max():.3g}{beside}"), data, run=run)
    if exported:
        return Judgement("partly", (f"{len(exported)} of {len(stock)} dynamic H/W specs of the stock model export "
                                    f"({', '.join(exported)}) but none matches eager at every multiple of 32{beside}"),
                         data, run=run)
    guarded = [r.spec.name for r in stock if _unprovable(r)]
    errors = "; ".join(f"{r.spec.name}: {r.error}" for r in stock)[:400]
    if "derived" not in [r.spec.name for r in stock]:
        return Judgement("inconclusive", (f"0 of {len(stock)} dynamic H/W specs of the stock model exported ({errors}), "
                                          f"but torch's own suggested fix (derived dims, spec `derived`) was not tried"
                                          f"{beside}"), data, run=run)
    if guarded:
        return Judgement("confirmed", (f"0 of {len(stock)} dynamic H/W specs of the stock model exported; "
                                       f"{len(guarded)} failed with unprovable guards ({errors}){beside}"),
                         data, run=run)
    return Judgement("inconclusive", f"0 of {len(stock)} stock specs exported, none for an unprovable guard ({errors})"
                     f"{beside}", data, run=run)


def judge_fundamentally_blocked(res: Results) -> Judgement:
    """Seed 001: dynamic H/W are a fundamental limitation, static shapes only (the same test as blocked_000)."""
    return _blocked(res)


def judge_blocked_000(res: Results) -> Judgement:
    """Seed 000: dynamic shapes remain blocked by the stride guards (the same test as fundamentally_blocked)."""
    return _blocked(res)


def judge_multiple_of_32(res: Results) -> Judgement:
    """Seed 001: sizes that are not multiples of 32 cause runtime errors in the detection head (stock model, eager).

    From the residue scan (every size mod 32, both axes): confirmed when all 31 non-multiple residues fail and the
    errors come from the detection head; refuted when none fails; partly otherwise (some residues run, or the
    errors come from another layer: the scan names the layer that raised)."""
    scan, et = res.scan, res.et
    if not len(scan):
        return Judgement("inconclusive", "the residue scan did not run", basis="none")
    run = {"model_variant": "stock"}
    residues = running_residues(scan)
    runs_at = [r for r in residues if r]
    failing = sorted(set(range(1, STRIDE)) - set(runs_at))
    bad = scan[scan.eager != "ok"]
    layers = sorted(set(bad.get("failed_in", pd.Series("", index=bad.index)).fillna("")) - {""})
    in_head = bool(layers) and all("Detect" in layer for layer in layers)
    error = bad.error.iloc[0].split(":")[0] if len(bad) else ""
    boxed = et.runs[_flag(et.runs.letterboxed)] if len(et.runs) and "letterboxed" in et.runs else pd.DataFrame()
    boxed_ok = boxed[(boxed.status == "ok") & _flag(boxed.agrees)] if len(boxed) else boxed
    note = (f"; letterboxed to the next multiple of 32 the .pte ran {len(boxed_ok)}/{len(boxed)} such sizes matching "
            "eager") if len(boxed) else ""
    data = {"running_residues": residues, "failing_residues": failing, "failed_in": layers,
            "letterboxed_ok": len(boxed_ok), "letterboxed": len(boxed)}
    if not failing:
        return Judgement("refuted", f"the eager stock model runs at all 31 sizes mod 32 that are not multiples{note}",
                         data, run=run)
    where = (f"{error} raised in {', '.join(layers)} ({'the detection head' if in_head else 'not the detection head'})"
             if layers else f"{error}, raising layer not recorded")
    verdict = "confirmed" if len(failing) == STRIDE - 1 and in_head else "partly"
    return Judgement(verdict, (f"the eager stock model fails at {len(failing)} of 31 non-multiple sizes mod 32 "
                               f"({_spans(failing)}: {where}) and runs at {_spans(runs_at) or 'none'}{note}"),
                     data, run=run)


def judge_xnnpack_dynamic(res: Results) -> Judgement:
    """Seed 001: XNNPACK supports dynamic shapes (for the model as it is: the seed changes nothing for XNNPACK).

    The stock model with derived dims (`derived`, torch's own suggestion) lowered with the XnnpackPartitioner and
    the default edge config: confirmed when it lowers and matches eager at every multiple of 32 it ran in range;
    refuted when lowering raises or a multiple of 32 comes out wrong; inconclusive when the lowering was not tried,
    timed out or crashed. The kit-modified model (`derived_kit`) is reported beside it. This investigation judges
    the dynamic-shapes part; "all models" and "full operator support" are judged by deployment_paths."""
    et, max_size = res.et, res.run.params["max_size"]
    low = et.lowering.set_index("program") if len(et.lowering) and "program" in et.lowering else pd.DataFrame()
    runs = et.runs

    def et_state(program: str) -> tuple[str, str]:
        """(ok | wrong | failed | untried, note) of one lowered program."""
        if program not in low.index:
            return "untried", "not lowered"
        status = low.loc[program, "status"]
        if status != "ok":
            return ("failed" if status == "error" else "untried"), f"{status}: {low.loc[program, 'error']}"
        r = runs[(runs.program == program) & (runs.status == "ok")] if len(runs) else runs
        mult = r[(r.height % STRIDE == 0) & (r.height <= max_size)] if len(r) else r
        if not len(mult):
            return "untried", "no run at a multiple of 32"
        agree = int(_flag(mult.agrees).sum())
        return ("ok" if agree == len(mult) else "wrong"), (
            f"{agree}/{len(mult)} multiples of 32 match eager, max |Δ| {mult.matched_diff.max():.2g} "
            f"order-insensitive ({mult.max_abs_diff.max():.2g} row by row)")

    stock, stock_note = et_state("derived")
    kit, kit_note = et_state("derived_kit")
    data = {"stock": stock_note, "kit": kit_note}
    text = f"stock model, derived dims: {stock_note}; kit-modified model (derived_kit): {kit_note}"
    if stock == "untried":
        return Judgement("inconclusive", f"the stock model's dynamic XNNPACK program did not run: {text}", data,
                         basis="none" if "derived" not in low.index else "measured")
    run = {"model_variant": "stock", "backend": "executorch-xnnpack", "model": res.run.params["model"]}
    return Judgement("confirmed" if stock == "ok" else "refuted", f"{text} ({res.run.params['model']})", data, run=run)


def _aoti_notes(rows: pd.DataFrame, aoti_max: int) -> tuple[pd.DataFrame, str]:
    """The in-range multiples that ran, and what the package did with sizes it should refuse."""
    if not len(rows) or "height" not in rows:
        return rows.iloc[:0], ""
    ran = rows[(rows.step == "aoti run") & (rows.status == "ok")]
    good = ran[(ran.height % STRIDE == 0) & (ran.height <= aoti_max)]
    odd = ran[(ran.height % STRIDE != 0) | (ran.height > aoti_max)]
    note = "".join(f"; it also returned {r.rows:.0f} detections at {r.height:.0f}x{r.width:.0f}"
                   f"{' where eager raises' if r.eager != 'ok' else ' above the exported max'}" for r in odd.itertuples())
    return good, note


def _load_note(rows: pd.DataFrame) -> str:
    """How the package was loaded: as is, or only with the workaround after an as-is crash (and its cause)."""
    if "aoti_load" not in rows or not len(rows):
        return ""
    crashed = rows[(rows.get("aoti_load") == "as_is") & (rows.status == "crash")]
    fixed = rows[(rows.get("aoti_load") == "system_libstdcxx") & (rows.status == "ok")]
    if len(crashed) and len(fixed):
        cause = crashed.cause.iloc[0] if "cause" in crashed else ""
        return f" (loaded with the system libstdc++ first: the as-is load crashed{', cause ' + cause if cause else ''})"
    return ""


def judge_aoti_cuda_dynamic(res: Results) -> Judgement:
    """Seed 001: ExecuTorch's CUDA AOTI back-end cannot take dynamic shapes (static 640x640 only).

    Reads the AOTI rows of the back-end that ran (column `backend`: `executorch-cuda` rows first, else the plain
    AOT Inductor rows the study makes) on CUDA: refuted when one dynamic package matches eager at two or more
    in-range multiples of 32; partly when it runs them but not right; confirmed when the dynamic compile fails on
    a constraint violation; inconclusive otherwise (a compile error of another kind, a load that never ran).
    The run records its back-end: plain AOT Inductor is not the seed's back-end, so the conditions rule leaves
    such a verdict inconclusive and says so; its rows are the supporting data."""
    aoti, aoti_max = res.aoti, res.run.params["max_size"]
    if len(aoti) and "backend" not in aoti:
        aoti = aoti.assign(backend=AOTI_BACKEND)  # tables from before the column: the study only ran plain AOTI
    cuda = aoti[aoti["device"] == "cuda"] if len(aoti) and "device" in aoti else pd.DataFrame()
    if not len(cuda):
        cpu, note = _aoti_notes(aoti, aoti_max)
        extra = (f"; plain AOT Inductor on CPU ran one dynamic package at {len(cpu)} sizes "
                 f"({', '.join(f'{h:.0f}x{w:.0f}' for h, w in zip(cpu.height, cpu.width))}){note}") if len(cpu) \
            else "; AOTI steps skipped"
        return Judgement("needs_cuda", f"no CUDA device in this run{extra}", basis="none" if not len(cpu) else "measured")
    backend = "executorch-cuda" if (cuda.backend == "executorch-cuda").any() else str(cuda.backend.iloc[0])
    rows = cuda[cuda.backend == backend]
    specs = [s for s in dict.fromkeys(rows.spec) if s in SPECS]
    variant = sorted({model_variant(SPECS[s]) for s in specs}) or ["stock"]
    run = {"device": "cuda", "backend": backend, "model_variant": variant[0] if len(variant) == 1 else variant}
    compiled = rows[rows.step.astype(str).str.startswith("aoti compile")]
    ran, _ = _aoti_notes(rows, aoti_max)
    if len(ran):
        best = "derived" if "derived" in set(ran.spec) else ran.groupby("spec").size().idxmax()
        r = ran[ran.spec == best]
        run["model_variant"] = model_variant(SPECS[best]) if best in SPECS else run["model_variant"]
        _, note = _aoti_notes(rows[rows.spec == best], aoti_max)
        agree = r[_flag(r.agrees)] if "agrees" in r else r.iloc[:0]
        sizes_text = ", ".join(f"{h:.0f}x{w:.0f}" for h, w in zip(r.height, r.width))
        verdict = "refuted" if agree[["height", "width"]].drop_duplicates().shape[0] >= 2 else \
            ("partly" if len(r) >= 2 else "inconclusive")
        return Judgement(verdict, (f"one dynamic {backend} package ({best}) ran {len(r)} sizes on CUDA ({sizes_text}); "
                                   f"{len(agree)} match eager, max |Δ| "
                                   f"{r.matched_diff.max() if 'matched_diff' in r else float('nan'):.2g} "
                                   f"order-insensitive{note}{_load_note(rows[rows.spec == best])}"),
                         {"spec": best, "sizes": sizes_text, "backend": backend}, run=run)
    if len(compiled) and (compiled.status != "ok").all():
        err = str(compiled.error.iloc[0])
        guard = "onstraint" in err and (compiled.status == "error").all()
        return Judgement("confirmed" if guard else "inconclusive", f"dynamic {backend} compile failed: {err}",
                         {"backend": backend}, run=run)
    bad = rows[rows.status != "ok"]
    return Judgement("inconclusive", (f"the dynamic {backend} package compiled but did not run: "
                                      f"{bad.error.iloc[-1] if len(bad) else 'no run'}"), {"backend": backend}, run=run)


JUDGES = {
    "dynamic_shapes.plain_dim_guard_violation": judge_plain_dim,
    "dynamic_shapes.guard_div8": judge_guard_div8,
    "dynamic_shapes.suggested_fix_static": judge_suggested_fix,
    "dynamic_shapes.fundamentally_blocked": judge_fundamentally_blocked,
    "dynamic_shapes.blocked_000": judge_blocked_000,
    "dynamic_shapes.multiple_of_32": judge_multiple_of_32,
    "dynamic_shapes.xnnpack_dynamic": judge_xnnpack_dynamic,
    "dynamic_shapes.aoti_cuda_dynamic": judge_aoti_cuda_dynamic,
}


def judge(found: Any, run: SpecRun, sweep: Sweep, scan: pd.DataFrame, et: EtRun, aoti: pd.DataFrame) -> pd.DataFrame:
    """Record the tables and a verdict for every claim, computed from this run's measurements."""
    for name, table in (("specs", run.table), ("guards", run.guards), ("sweep", sweep.detail),
                        ("sweep_summary", sweep.summary), ("residues", scan), ("executorch_lowering", et.lowering),
                        ("executorch_runs", et.runs), ("aoti", aoti)):
        found.table(name, table)
    res = Results(run, sweep, scan, et, aoti)
    return found.judge_all(JUDGES, res)


catalog.register(catalog.Investigation(
    NAME,
    "Dynamic shapes: stride guards, derived dims, cached anchors, XNNPACK and AOTI",
    ("001_fda80f2472077657.txt", "000_60ebd1ee51d51957.txt"),
    profiles={
        # quick: no static .pte (it only feeds the latency plot, no verdict; ~40 s of lowering on a small CPU)
        "quick": {"model": "yolo26n", "min_size": 160, "max_size": 320, "et_specs": ["derived", "derived_kit"],
                  "et_static_sizes": []},
        "full": {"model": "yolo26n", "min_size": 128, "max_size": 640, "batch": 1, "max_batch": 8,
                 "sweep": [128, 160, 224, 288, 320, 384, 416, 480, 544, 608, 640, 264, 282, 648, 672],
                 "et_specs": ["derived", "derived_topk", "derived_noverify", "derived_kit"],
                 "et_sizes": [128, 192, 256, 320, 384, 448, 512, 576, 640],
                 "et_static_sizes": [128, 256, 384, 512, 640], "aoti_specs": ["derived", "derived_warm"],
                 "timing_s": 1.0},
    },
    checks={
        "min_size": catalog.positive_multiple_of(STRIDE),
        "max_size": catalog.positive_multiple_of(STRIDE),
        "device": catalog.one_of("auto", "cpu", "cuda"),
        "paths": catalog.one_of(*PATHS),
        "specs": catalog.one_of(*SPECS),
        "et_specs": catalog.one_of(*SPECS),
        "aoti_specs": catalog.one_of(*SPECS),
    },
    judges=JUDGES,
))
