"""Dynamic shapes: one judge per claim of the ledger (JUDGES), each reading the export attempts, the sweep, the
residue scan and the ExecuTorch and AOTI rows (Results)."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from ...bench.dynamic_export import SPECS, STRIDE, Exported, same_guard, suggested_fixes
from ...verdicts import Figure, Finding, Judgement, count_figure, one_figure
from .measure import AOTI_BACKEND, EtRun, Results
from .measure_export import SEED_GUARD, SEED_RANGE, SpecRun, Sweep, as_flag, span_text, running_residues
from .model import model_variant

SEED_GUARD_8 = "(1 + ((height-1) // 8)) == (4 + 4*((height-1) // 32))"  # seed 001's second guard


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


def _where(res: Results, **more: Any) -> dict[str, Any]:
    """A figure's conditions: the model, batch and device the exports and runs used."""
    p = res.run.params
    return {"model": p.get("model"), "batch": p.get("batch"), "device": p.get("device") or "cpu", **more}


def _guards_figure(res: Results, guards: list[str], span: list[int]) -> Figure:
    """How many unprovable guards one torch.export of plain Dim ranges raised."""
    return one_figure(len(guards), "unprovable guards", f"guards torch.export could not prove for plain "
                      f"{_range_text(span)}", **_where(res, mode="torch.export"))


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
                         {"ranges": plain.ranges}, run=run, figure=_guards_figure(res, [], span))
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
                     data, run=run, figure=_guards_figure(res, guards, span))


def judge_guard_div8(res: Results) -> Judgement:
    """Seed 001's second guard, (1 + ((h-1) // 8)) == (4 + 4*((h-1) // 32)), is among the unprovable ones.
    Refuted when the plain-Dim export works or fails with other guards only."""
    plain, span = _plain(res)
    if plain is None:
        return Judgement("inconclusive", "the `dim` spec was not in `specs`: plain Dim ranges were not tried", basis="none")
    run = {"model_variant": model_variant(plain.spec), "size_range": span}
    if plain.ok:
        return Judgement("refuted", f"plain {_range_text(span)} exported: no guard was generated", {}, run=run,
                         figure=_guards_figure(res, [], span))
    guards = _unprovable(plain)
    if not guards:
        return Judgement("inconclusive", f"torch.export failed without an unprovable guard: {plain.error}",
                         {"error": plain.error}, run=run)
    hits = [g for g in guards if same_guard(g, SEED_GUARD_8) or same_guard(g, SEED_GUARD_8.replace("height", "width"))]
    return Judgement("confirmed" if hits else "refuted",
                     (f"{len(hits)} of {len(guards)} unprovable guards of plain {_range_text(span)} are the seed's //8 "
                      f"guard (for height or width){': ' + '; '.join(hits) if hits else ''}"), {"guards": guards},
                     run=run,
                     figure=count_figure(len(hits), len(guards), "unprovable guards are the seed's //8 guard",
                                         f"unprovable guards of plain {_range_text(span)}",
                                         **_where(res, mode="torch.export")))


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
                               f"({'; '.join(derived) or 'none'}) ({where})"), data, run=run,
                     figure=count_figure(len(static), len(fixes), "suggested fixes pin a static size",
                                         f"the fixes torch.export suggests for plain {_range_text(span)}",
                                         **_where(res, mode="torch.export")))


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
    figure = count_figure(len(good), len(stock), "dynamic H/W specs export and match eager",
                          "dynamic H/W specs of the stock model, every multiple of 32 swept",
                          **_where(res, mode="torch.export"))
    data = {"stock_correct": good, "stock_exported": exported, "kit_correct": kit_ok, "stock_specs": len(stock)}
    if good:
        return Judgement("refuted", (f"{len(good)} of {len(stock)} dynamic H/W specs of the stock model export and match "
                                     f"eager at every multiple of 32 swept ({', '.join(good)}); max |Δ| "
                                     f"{summary.loc[good, 'max_abs_diff'].max():.3g}{beside}"), data, run=run,
                         figure=figure)
    if exported:
        return Judgement("partly", (f"{len(exported)} of {len(stock)} dynamic H/W specs of the stock model export "
                                    f"({', '.join(exported)}) but none matches eager at every multiple of 32{beside}"),
                         data, run=run, figure=figure)
    guarded = [r.spec.name for r in stock if _unprovable(r)]
    errors = "; ".join(f"{r.spec.name}: {r.error}" for r in stock)[:400]
    if "derived" not in [r.spec.name for r in stock]:
        return Judgement("inconclusive", (f"0 of {len(stock)} dynamic H/W specs of the stock model exported ({errors}), "
                                          f"but torch's own suggested fix (derived dims, spec `derived`) was not tried"
                                          f"{beside}"), data, run=run)
    if guarded:
        return Judgement("confirmed", (f"0 of {len(stock)} dynamic H/W specs of the stock model exported; "
                                       f"{len(guarded)} failed with unprovable guards ({errors}){beside}"),
                         data, run=run, figure=figure)
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
    boxed = et.runs[as_flag(et.runs.letterboxed)] if len(et.runs) and "letterboxed" in et.runs else pd.DataFrame()
    boxed_ok = boxed[(boxed.status == "ok") & as_flag(boxed.agrees)] if len(boxed) else boxed
    note = (f"; letterboxed to the next multiple of 32 the .pte ran {len(boxed_ok)}/{len(boxed)} such sizes matching "
            "eager") if len(boxed) else ""
    data = {"running_residues": residues, "failing_residues": failing, "failed_in": layers,
            "letterboxed_ok": len(boxed_ok), "letterboxed": len(boxed)}
    figure = count_figure(len(failing), STRIDE - 1, "sizes fail", "sizes mod 32 that are not multiples of 32 at "
                          "which the eager stock model raises", model=res.run.params.get("model"), batch=1,
                          device=res.run.params.get("device") or "cpu", mode="eager")
    if not failing:
        return Judgement("refuted", f"the eager stock model runs at all 31 sizes mod 32 that are not multiples{note}",
                         data, run=run, figure=figure)
    where = (f"{error} raised in {', '.join(layers)} ({'the detection head' if in_head else 'not the detection head'})"
             if layers else f"{error}, raising layer not recorded")
    verdict = "confirmed" if len(failing) == STRIDE - 1 and in_head else "partly"
    return Judgement(verdict, (f"the eager stock model fails at {len(failing)} of 31 non-multiple sizes mod 32 "
                               f"({span_text(failing)}: {where}) and runs at {span_text(runs_at) or 'none'}{note}"),
                     data, run=run, figure=figure)


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

    def et_state(program: str) -> tuple[str, str, tuple[int, int]]:
        """(ok | wrong | failed | untried, note, (multiples of 32 that match eager, run)) of one lowered program."""
        if program not in low.index:
            return "untried", "not lowered", (0, 0)
        status = low.loc[program, "status"]
        if status != "ok":
            return ("failed" if status == "error" else "untried"), f"{status}: {low.loc[program, 'error']}", (0, 0)
        r = runs[(runs.program == program) & (runs.status == "ok")] if len(runs) else runs
        mult = r[(r.height % STRIDE == 0) & (r.height <= max_size)] if len(r) else r
        if not len(mult):
            return "untried", "no run at a multiple of 32", (0, 0)
        agree = int(as_flag(mult.agrees).sum())
        return ("ok" if agree == len(mult) else "wrong"), (
            f"{agree}/{len(mult)} multiples of 32 match eager, max |Δ| {mult.matched_diff.max():.2g} "
            f"order-insensitive ({mult.max_abs_diff.max():.2g} row by row)"), (agree, len(mult))

    stock, stock_note, matched = et_state("derived")
    kit, kit_note, _ = et_state("derived_kit")
    data = {"stock": stock_note, "kit": kit_note}
    text = f"stock model, derived dims: {stock_note}; kit-modified model (derived_kit): {kit_note}"
    if stock == "untried":
        return Judgement("inconclusive", f"the stock model's dynamic XNNPACK program did not run: {text}", data,
                         basis="none" if "derived" not in low.index else "measured")
    run = {"model_variant": "stock", "backend": "executorch-xnnpack", "model": res.run.params["model"]}
    where = {"model": res.run.params.get("model"), "device": "cpu", "mode": "executorch-xnnpack"}
    figure = count_figure(*matched, "multiples of 32 match eager", "sizes the stock model's dynamic XNNPACK program "
                          "ran", **where) if matched[1] else \
        count_figure(0, 1, "dynamic XNNPACK lowerings succeed", "the stock model with derived dims", **where)
    return Judgement("confirmed" if stock == "ok" else "refuted", f"{text} ({res.run.params['model']})", data, run=run,
                     figure=figure)


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


def outside_range_finding(rows: pd.DataFrame, aoti_max: int, device: str) -> tuple[Finding, ...]:
    """A dynamic AOTI package that answers at sizes it must refuse (not a multiple of 32, where eager raises, or above
    its exported maximum) without an error: a finding, with the smallest such size."""
    if not len(rows) or "height" not in rows:
        return ()
    ran = rows[(rows.step == "aoti run") & (rows.status == "ok")]
    odd = ran[(ran.height % STRIDE != 0) | (ran.height > aoti_max)]
    if not len(odd):
        return ()
    sizes = "; ".join(f"{r.rows:.0f} detections at {r.height:.0f}x{r.width:.0f}"
                      f"{' (eager raises)' if r.eager != 'ok' else f' (above the exported max {aoti_max})'}"
                      for r in odd.itertuples())
    smallest = odd.sort_values("height").iloc[0]
    return (Finding("dynamic_shapes.aoti_answers_outside_range",
                    "A dynamic AOT Inductor package of YOLO26 answers outside its exported range without an error",
                    f"the package exported with dynamic height/width (multiples of {STRIDE} up to {aoti_max}) ran on "
                    f"{device} and returned {sizes}; torch.export's own module refuses these sizes with a guard error",
                    f"YOLO26n from yolo26n.yaml, aoti_compile_and_package with Dim height/width = {STRIDE}·k up to "
                    f"{aoti_max}, called at {smallest.height:.0f}x{smallest.width:.0f}"),)


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
        return Judgement("needs_cuda", f"no CUDA device in this run{extra}", basis="none" if not len(cpu) else "measured",
                         findings=outside_range_finding(aoti, aoti_max, "cpu"))
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
        agree = r[as_flag(r.agrees)] if "agrees" in r else r.iloc[:0]
        sizes_text = ", ".join(f"{h:.0f}x{w:.0f}" for h, w in zip(r.height, r.width))
        verdict = "refuted" if agree[["height", "width"]].drop_duplicates().shape[0] >= 2 else \
            ("partly" if len(r) >= 2 else "inconclusive")
        return Judgement(verdict, (f"one dynamic {backend} package ({best}) ran {len(r)} sizes on CUDA ({sizes_text}); "
                                   f"{len(agree)} match eager, max |Δ| "
                                   f"{r.matched_diff.max() if 'matched_diff' in r else float('nan'):.2g} "
                                   f"order-insensitive{note}{_load_note(rows[rows.spec == best])}"),
                         {"spec": best, "sizes": sizes_text, "backend": backend}, run=run,
                         figure=count_figure(len(agree), len(r), "sizes match eager",
                                             f"in-range sizes one dynamic {backend} package ran",
                                             model=res.run.params.get("model"), device="cuda", mode=backend),
                         findings=outside_range_finding(rows[rows.spec == best], aoti_max, "cuda"))
    if len(compiled) and (compiled.status != "ok").all():
        err = str(compiled.error.iloc[0])
        guard = "onstraint" in err and (compiled.status == "error").all()
        return Judgement("confirmed" if guard else "inconclusive", f"dynamic {backend} compile failed: {err}",
                         {"backend": backend}, run=run,
                         figure=count_figure(0, len(compiled), "dynamic compiles succeed", f"dynamic {backend} "
                                             "compiles of the model", model=res.run.params.get("model"),
                                             device="cuda", mode=backend))
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
    """Record a verdict for every claim, computed from this run's measurements (the tables: show.record_tables)."""
    res = Results(run, sweep, scan, et, aoti)
    return found.judge_all(JUDGES, res)
