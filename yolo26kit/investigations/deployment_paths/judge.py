"""Deployment paths: one judge per claim of data/claims/deployment_paths.json, each reading the run's rows.

Every judge returns a verdicts.Judgement whose `run` holds this run's value of each condition the ledger names for
the claim (the seed's conditions); where they differ, findings' settle makes a decisive verdict `inconclusive`.
Rules shared by the judges:
- a row is "correct" only when eager's detections came out (measure.correct, MATCH_RATE_MIN, whatever the precision);
- claims about ExecuTorch's CUDA back-end are decided only by a lowering with the back-end's default options
  (`backend_options` "defaults", read from the row); a lowering with the kit's options, one that did not run in this
  profile, or one that did not finish in the step's time, is `inconclusive`, never a failure of the back-end;
- timing verdicts come from rounds timed in turn (the side-by-side step) through verdicts.band, against the band in
  the ledger (findings.band_of / the ledger's per-size figures); a latency that is not finite and positive reads
  "could not time"; CPU rounds timed while other processes kept the machine busy (timing.OTHERS_BUSY_LIMIT, as on
  a GPU runner whose other notebooks compile beside the step) decide nothing.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Callable

import pandas as pd

from ...conclusion import clip
from ... import env, findings
from ...bench import timing, yolo
from ...backends import executorch_cuda
from ...verdicts import Judgement, band, combine, count_figure, figure_conditions, one_figure, rounds_figure
from ...backends.executorch_cuda_releases import backbone_half
from .measure import (ET_CUDA_SKIPPED, KIT_EXPORT, MATCH_RATE_MIN, TASKS, TORCH_NATIVE_CUDA, ULTRALYTICS_EXPORTER,
                      Case, Row, Run, growth_band, label, timed_ms)

ALL_VARIANTS = len(TASKS) * len(yolo.SCALES)  # seed 000's "all 25 variants": 5 tasks × 5 sizes
SEED_IMGSZ = 640  # every figure and lowering in seeds 000/001 is 640x640
WHY_SKIPPED = ET_CUDA_SKIPPED.split(";")[0]  # the whole-model lowering's cost, without the parameter advice
LEDGER_BACKEND = {"eager": "eager", "compile": "torch.compile", "compile_cudagraphs": "torch.compile",
                  "aoti": "aoti", "et_xnnpack": "executorch-xnnpack", "et_cuda": "executorch-cuda",
                  "onnxruntime": "onnxruntime", "tensorrt": "tensorrt"}  # the ledger's words for the kit's back-ends


BATCH = 1  # every timed call of this investigation runs one image (measure.example_input(1, ...))


def _where(model: Any = None, device: str = "", imgsz: int | None = None, dtype: str | None = None,
           mode: Any = None) -> dict[str, Any]:
    """A figure's conditions: model, image size, batch, precision, device and back-end."""
    return figure_conditions(model=model, shape=f"{imgsz}×{imgsz} px" if imgsz else None, batch=BATCH, dtype=dtype,
                             device=device or None, mode=mode)


# --- reading rows ---------------------------------------------------------------------------------

def _by_size(model: str) -> int:
    return yolo.SCALES.index(yolo.scale_of(model))


def _pick(run: Run, backend: str, model: str, device: str | None = None, dtype: str = "fp32", provider: str = "",
          export_path: str = KIT_EXPORT) -> Row | None:
    return next((r for r in run.rows if r.case.backend == backend and r.case.model == model and r.case.timed
                 and r.case.task == "detect" and r.case.dtype == dtype and (device is None or r.case.device == device)
                 and (not provider or r.case.provider == provider) and r.case.export_path == export_path), None)


def row_latency(row: Row | None) -> str:
    """A row's steady-state median in words, or why there is none."""
    ms = row.median_ms if row is not None else None
    return "could not time" if ms is None else f"{ms:.3g} ms"


def row_state(row: Row | None) -> str:
    """A row's outcome in a few words: ran and matched / ran, differs / failed how / skipped why."""
    if row is None:
        return "not in the run"
    rate = row.delta.get("match_rate")
    if row.correct:
        return (f"ran, {rate:.0%} of eager's detections matched" if isinstance(rate, float)
                else f"ran, matched eager (max |Δ| {row.delta.get('max_abs', 0.0):.2g})")
    if row.ok:
        return (f"ran, differs from eager ({rate:.0%} of its detections matched; correct needs {MATCH_RATE_MIN:.0%})"
                if isinstance(rate, float) else f"ran, differs from eager (max |Δ| {row.delta.get('max_abs')})")
    final = row.final
    return f"{final.status}: {clip(final.error, 160)}"


def _decided(row: Row) -> bool:
    """The row says something about the path: it ran, or a step failed on its own (not skipped, not out of time)."""
    return row.ok or row.final.status not in ("skipped", "timeout", "oom")


# --- ExecuTorch CUDA: which lowering the row rests on -----------------------------------------------

def et_cuda_options(row: Row | None) -> str:
    """The back-end options the row's lowering used, as the row records them ("defaults" or "kit: ..."), read from
    the case, the prepare step's value or any step's details; a row that does not say is taken as not the defaults."""
    if row is None:
        return "not run"
    found = getattr(row.case, "backend_options", None)
    for o in row.outcomes:
        if found:
            break
        found = (o.value.get("backend_options") if isinstance(o.value, dict) else None) or o.details.get("backend_options")
    return str(found) if found else "not recorded (taken as the kit's own options)"


def et_cuda_imgsz(row: Row) -> int:
    for o in row.outcomes:
        for where in (o.value if isinstance(o.value, dict) else {}, o.details):
            if isinstance(where.get("imgsz"), int):
                return where["imgsz"]
    return row.case.imgsz


def _is_defaults(options: str) -> bool:
    return options.strip().lower() == "defaults"


def _et_cuda(run: Run, model: str) -> tuple[str, str, Row | None, dict[str, Any]]:
    """The ExecuTorch CUDA whole-model row this run has for `model` (one lowered with the defaults first), as
    (kind, sentence, row, run conditions). kind: missing | not_lowered | kit_options | unfinished | failed |
    ran_ok | ran_differs | not_run."""
    rows = [r for r in run.rows if r.case.backend == "et_cuda" and r.case.task == "detect" and r.case.timed]
    mine = sorted((r for r in rows if r.case.model == model), key=lambda r: not _is_defaults(et_cuda_options(r)))
    row = mine[0] if mine else next(iter(sorted(rows, key=lambda r: not _is_defaults(et_cuda_options(r)))), None)
    if row is None:
        return "missing", "ExecuTorch CUDA was not among this run's back-ends", None, {}
    options, size = et_cuda_options(row), et_cuda_imgsz(row)
    conditions = {"backend": "executorch-cuda", "backend_options": options, "model": row.case.model, "imgsz": size}
    prepare = row.prepare
    where = f"ExecuTorch CUDA on the whole {row.case.model} at {size} px"
    if prepare is None:
        return "not_lowered", f"{where} was not lowered in this run ({row_state(row)})", row, conditions
    if not _is_defaults(options):
        outcome = row_state(row) if prepare.ok else f"{prepare.status}: {clip(prepare.error, 160)}"
        return "kit_options", (f"{where}: the lowering used the kit's options ({options}), not the back-end's "
                               f"defaults, so its outcome ({outcome}) decides nothing about the back-end"), row, conditions
    if not prepare.ok:
        if prepare.status in ("timeout", "oom", "crash"):
            return "unfinished", (f"{where}, default options: the lowering did not finish ({prepare.status} after "
                                  f"{prepare.seconds:.0f} s), which says nothing about the back-end"), row, conditions
        worker = executorch_cuda.subprocess_error("\n".join([prepare.error, prepare.traceback, prepare.log]))
        return "failed", (f"{where}, default options: the lowering failed after {prepare.seconds:.0f} s: "
                          f"{clip(prepare.error, 200)}" + (f" (the worker raised {worker[:200]})" if worker else "")), \
            row, conditions
    if row.correct:
        return "ran_ok", f"{where}, default options: lowered, {row_state(row)}, {row_latency(row)}", row, conditions
    if row.ok:
        return "ran_differs", f"{where}, default options: lowered, {row_state(row)}", row, conditions
    return "not_run", f"{where}, default options: lowered; running it: {row_state(row)}", row, conditions


# --- judges ---------------------------------------------------------------------------------------

def _stack(run: Run) -> dict[str, str]:
    """The releases the run's ExecuTorch CUDA steps ran on, as its backbone-graph step recorded them."""
    graph = run.backbone.get("graph")
    if graph is not None and graph.ok and isinstance(graph.value, dict) and graph.value.get("executorch"):
        return {"executorch": graph.value["executorch"], "torch": graph.value["torch"]}
    return {"executorch": run.environment.get("executorch"), "torch": str(run.environment.get("torch", "")).split("+")[0]}


def _backbone(run: Run) -> tuple[str, str, dict[str, Any]]:
    """The backbone half (backends.executorch_cuda_releases.backbone_half, one rule for both notebooks): state, sentence, data."""
    if not run.backbone:
        return "unknown", "the backbone alone was not tried in this run", {}
    return backbone_half(run.backbone.get("lowering"), run.backbone.get("graph"), run.backbone.get("split"),
                         _stack(run)["executorch"], run.known_releases)


def _whole_from_backbone(state: str, model: str) -> str:
    """Why the whole model is refused on this release when its backbone is (its graph holds the same ops)."""
    return (f"ExecuTorch CUDA on the whole {model}: not lowered in this profile ({WHY_SKIPPED}); it holds the backbone's "
            "view-copy ops, so the back-end refuses it on this release as it refuses the backbone"
            if state in ("release", "refused") else "")


def judge_cuda_aoti_backbone_only(run: Run) -> Judgement:
    """Seed 001's table: CUDA AOTI (ExecuTorch's CUDA back-end) exports only the backbone; the whole model with its
    postprocess does not export. Both halves are tested: ExecuTorch CUDA's whole-model lowering with its default
    options (or, where this profile skips it, the backbone's refusal it contains), and the backbone alone
    (executorch_cuda_releases.backbone_half: its graph through the release's view pass and `chunk` alone through the back-end)."""
    model = run.models[0] if run.models else "yolo26n"
    plain = _pick(run, "aoti", model)
    how = plain.run.details.get("aoti_load") if plain is not None and plain.run is not None else None
    load = f" (loaded {how})" if how else ""
    plain_text = f"plain AOT Inductor of the whole {model} on {run.device}: {row_state(plain)}{load}"
    if not run.on_cuda:
        return Judgement("needs_cuda", f"No CUDA device in this run for ExecuTorch's CUDA back-end; {plain_text}.",
                         {"aoti": row_state(plain)}, basis="none")
    kind, text, et, conditions = _et_cuda(run, model)
    state, backbone_text, backbone_data = _backbone(run)
    derived = _whole_from_backbone(state, model) if kind == "not_lowered" else ""
    if derived:
        kind, text = "failed", derived
        conditions = {**conditions, "backend_options": "defaults", "imgsz": run.imgsz}
    data = {"et_cuda": text, "kind": kind, "aoti": row_state(plain), "backbone": state, **backbone_data}
    evidence = (f"whole model: {text}; backbone alone: {backbone_text}; beside them, {plain_text} (not the back-end "
                "the seed means)")
    cond = {"device": "cuda", **conditions, **_stack(run)}
    basis = "both" if derived else "measured"
    figure = count_figure(0 if kind == "failed" else 1, 1, "whole-model lowerings succeed", "ExecuTorch CUDA "
                          "lowerings of the whole model with the back-end's default options",
                          **_where(conditions.get("model", model), "cuda", conditions.get("imgsz"), "fp32",
                                   "executorch-cuda"))
    if kind == "missing":
        return Judgement("error", text, data, basis="none")
    if kind in ("not_lowered", "kit_options", "unfinished"):  # not lowered: nothing measured of the back-end
        return Judgement("inconclusive", evidence, data, basis="none" if kind == "not_lowered" else "measured",
                         run=cond)
    if kind == "failed":
        if state == "lowers":
            return Judgement("confirmed", evidence, data, basis=basis, run=cond, figure=figure)
        if state == "unknown":
            return Judgement("inconclusive", evidence + " — the whole model does not lower; whether the backbone "
                             "alone does, this run did not measure", data, run=cond)
        half = ("fails on this release only (a later release's view pass covers it)" if state == "release"
                else "does not lower either")
        return Judgement("partly", f"{evidence} — the whole model does not lower, as the seed says; the backbone alone "
                         f"{half}", data, basis="both" if state == "release" else basis, run=cond, figure=figure)
    if kind == "ran_differs":
        return Judgement("partly", evidence + " — the whole model exports, but its output is not eager's", data,
                         run=cond, figure=figure)
    if kind == "not_run":
        return Judgement("refuted", evidence + " — the whole model exports (the seed says it does not); running it "
                         "could not be checked here", data, run=cond, figure=figure)
    return Judgement("refuted", evidence, data, run=cond, figure=figure)


def judge_recommend_xnnpack(run: Run) -> Judgement:
    """Seed 001's conclusion: with ExecuTorch, use XNNPACK; its CUDA back-end is unsuitable for YOLO26."""
    model = run.models[0] if run.models else "yolo26n"
    xnn_rows = sorted((r for r in run.rows if r.case.backend == "et_xnnpack" and r.case.timed and r.case.task == "detect"
                       and r.case.export_path == KIT_EXPORT), key=lambda r: _by_size(r.case.model))
    if not xnn_rows:
        return Judgement("error", "et_xnnpack was not among the back-ends", basis="none")
    decided = [r for r in xnn_rows if _decided(r)]
    ok_models = [r.case.model for r in decided if r.correct]
    xnn_text = (f"{len(ok_models)} of {len(xnn_rows)} sizes ran the whole model on XNNPACK and matched eager: "
                + "; ".join(f"{r.case.model} at {r.case.imgsz} px: {row_state(r)}" for r in xnn_rows))
    data: dict[str, Any] = {"xnnpack": {r.case.model: row_state(r) for r in xnn_rows}}
    figure = count_figure(len(ok_models), len(xnn_rows), "sizes run on XNNPACK and match eager", "YOLO26 sizes whose "
                          "whole model lowers to XNNPACK, runs and matches eager",
                          **_where(sorted({r.case.model for r in xnn_rows}, key=_by_size), "cpu",
                                   xnn_rows[0].case.imgsz, "fp32", "executorch-xnnpack"))
    if decided and not ok_models:
        not_cuda = "XNNPACK failed on every size tried: the recommendation fails whatever ExecuTorch CUDA does"
        return Judgement("refuted", xnn_text, data,
                         run={"backend": "executorch-xnnpack", "backend_options": "defaults",
                              "imgsz": decided[0].case.imgsz},
                         irrelevant={"backend": not_cuda, "backend_options": not_cuda, "imgsz": not_cuda}, figure=figure)
    if not run.on_cuda:
        return Judgement("needs_cuda", f"No CUDA device in this run for ExecuTorch's CUDA back-end; on CPU {xnn_text}.",
                         data, basis="none")
    kind, text, et, conditions = _et_cuda(run, model)
    state, backbone_text, _ = _backbone(run)
    derived = _whole_from_backbone(state, model) if kind == "not_lowered" else ""
    if derived:
        kind, text = "failed", f"{derived} (backbone alone: {backbone_text})"
        conditions = {**conditions, "backend_options": "defaults", "imgsz": run.imgsz}
    data.update({"et_cuda": text, "kind": kind})
    evidence = f"{xnn_text}; {text}"
    cond = {**{k: conditions[k] for k in ("backend", "backend_options", "imgsz") if k in conditions}, **_stack(run)}
    if kind == "missing":
        return Judgement("error", evidence, data, basis="none")
    if not ok_models or kind in ("not_lowered", "kit_options", "unfinished", "not_run"):
        return Judgement("inconclusive", evidence, data, run=cond)
    if kind in ("failed", "ran_differs"):
        return Judgement("confirmed", evidence, data, basis="both" if derived else "measured", run=cond, figure=figure)
    xnn = _pick(run, "et_xnnpack", et.case.model) if et is not None else None
    faster = et is not None and xnn is not None and et.median_ms and xnn.median_ms and et.median_ms < xnn.median_ms
    return Judgement("partly", evidence + " — XNNPACK works, but ExecuTorch CUDA runs the whole model too"
                     + (f" and faster ({row_latency(et)} vs XNNPACK's {row_latency(xnn)})" if faster else ""), data,
                     run=cond, figure=figure)


def _ultralytics_text(run: Run, backend: str) -> tuple[str, dict[str, Any]]:
    """What ultralytics' own exporter shipped for `backend` in this run, and whether its program holds the
    postprocess (from the program's output shape)."""
    rows = [r for r in run.rows if r.case.backend == backend and r.case.export_path == ULTRALYTICS_EXPORTER]
    if not rows:
        return "", {}
    r = rows[0]
    shape = r.delta.get("output_shape")
    post = r.delta.get("postprocess_in_program")
    fmt = {"et_xnnpack": "executorch", "onnxruntime": "onnx"}.get(backend, backend)
    text = (f"ultralytics' YOLO(...).export(format='{fmt}') of {r.case.model} (what users ship): {row_state(r)}"
            + (f", output {'x'.join(map(str, shape))}" if shape else "")
            + ("" if post is None else " — top-k postprocess in the program" if post else
               " — the end-to-end head is off: the postprocess is not in the program"))
    return text, {"model": r.case.model, "state": row_state(r), "output_shape": shape, "postprocess_in_program": post,
                  "export_s": round(r.prepare.seconds, 1) if r.prepare is not None else None}


def judge_xnnpack_all_variants(run: Run) -> Judgement:
    """Seed 000: XNNPACK has full model support, all 25 variants (5 tasks × 5 sizes), postprocessing included.
    One failing variant refutes "all"; confirming needs every one of the 25 tried."""
    rows = run.task_rows
    if not rows:
        return Judgement("error", "no task variant was checked (tasks or task_models empty)", basis="none")
    decided = [r for r in rows if _decided(r)]
    good = [r for r in decided if r.correct]
    bad = {f"{r.case.task}/{r.case.model}": row_state(r) for r in decided if not r.correct}
    unfinished = {f"{r.case.task}/{r.case.model}": row_state(r) for r in rows if not _decided(r)}
    variants = {(r.case.task, r.case.model) for r in decided}
    tasks = sorted({r.case.task for r in rows}, key=TASKS.index)
    ux_text, ux = _ultralytics_text(run, "et_xnnpack")
    evidence = (f"{len(good)} of {len(decided)} YOLO26 variants tried ({len(variants)} of {ALL_VARIANTS}) lowered "
                f"to XNNPACK by the kit's export of the end-to-end model, ran in executorch.runtime and matched eager "
                f"({', '.join(tasks)}; {', '.join(sorted({r.case.model for r in rows}, key=_by_size))}; "
                f"{rows[0].case.imgsz} px)" + (f"; failing: {bad}" if bad else "")
                + (f"; not decided: {unfinished}" if unfinished else "") + (f"; {ux_text}" if ux_text else ""))
    data = {"tried": len(decided), "variants": len(variants), "of": ALL_VARIANTS, "correct": len(good),
            "failing": bad, "not_decided": unfinished, "ultralytics_exporter": ux}
    cond = {"backend": "executorch-xnnpack", "export_path": KIT_EXPORT,
            "model": sorted({r.case.model for r in decided}, key=_by_size)}
    figure = count_figure(len(good), len(decided), "variants match eager", f"YOLO26 variants ({', '.join(tasks)}) "
                          "lowered to XNNPACK, run in executorch.runtime", **_where(
                              cond["model"], "cpu", rows[0].case.imgsz, "fp32", "executorch-xnnpack"))
    if bad:
        return Judgement("refuted", evidence + " — one failing variant is enough against \"all\"", data, run=cond,
                         figure=figure)
    if len(variants) >= ALL_VARIANTS and decided:
        return Judgement("confirmed", evidence, data, run=cond, figure=figure)
    stood_for, alone = _stood_for(run, {f"{t}/{m}" for t, m in variants})
    data["untried_built_like_a_tried_one"] = stood_for
    if decided and stood_for and not alone:
        cond["model"] = sorted({k.split("/")[1] for k in stood_for} | set(cond["model"]), key=_by_size)
        return Judgement("confirmed", evidence + f" — the other {len(stood_for)} were not lowered here, but each is "
                         "built from exactly the module types of its task's tried variant (ultralytics' parser, read "
                         "on the meta device): only widths and repeats differ, and a lowering's operators follow the "
                         "module types, so the tried variants stand for them", data, basis="both", run=cond,
                         figure=figure)
    why = (f"; {len(alone)} untried ones are built from modules no tried variant of their task has: "
           f"{', '.join(sorted(alone)[:6])}" if alone and run.variant_modules is not None else "")
    return Judgement("inconclusive", evidence + f" — {len(variants)} of {ALL_VARIANTS} tried, all matched: \"all "
                     f"{ALL_VARIANTS}\" needs the other {ALL_VARIANTS - len(variants)} (the full profile tries them)"
                     + why, data, run=cond)


def _stood_for(run: Run, tried: set[str]) -> tuple[list[str], list[str]]:
    """The untried variants (task/model) built from the same module types as a tried variant of their task, and
    those that are not (all of them when the module types were not read)."""
    step = run.variant_modules
    every = [f"{t}/{m}" for t in TASKS for m in (f"yolo26{s}" for s in yolo.SCALES)]
    untried = [v for v in every if v not in tried]
    if step is None or not step.ok or not isinstance(step.value, dict):
        return [], untried
    types = {k: set(v) for k, v in step.value.items()}
    same = [v for v in untried if v in types and any(
        t.split("/")[0] == v.split("/")[0] and types.get(t) == types[v] for t in tried)]
    return same, [v for v in untried if v not in same]


def judge_torch_compile_alternative(run: Run) -> Judgement:
    """Seed 000: explore torch.compile with the CUDA backend as an alternative to ExecuTorch: judged by whether
    torch.compile on CUDA runs the whole model (postprocess included) and matches eager."""
    model = run.models[0] if run.models else "yolo26n"
    modes = {b: _pick(run, b, model) for b in ("compile", "compile_cudagraphs")}
    eager = _pick(run, "eager", model, run.device)
    if not run.on_cuda:
        cpu = modes["compile"]
        part = (f"torch.compile (default) of the whole {model}: {row_state(cpu)}, {row_latency(cpu)} vs eager "
                f"{row_latency(eager)}" if cpu is not None and cpu.ok else
                f"torch.compile: {row_state(cpu)}" if cpu is not None else
                "torch.compile was not among this CPU run's back-ends (the full profile has it)")
        return Judgement("needs_cuda", f"No CUDA device in this run; on CPU {part}.", basis="none")
    parts, data = [], {}
    for backend, row in modes.items():
        speed = (f", {row_latency(row)} = {eager.median_ms / row.median_ms:.2f}× eager fp32's {row_latency(eager)}, first "
                 f"call {row.run.value['first_call_s']:.0f} s" if row and row.correct and row.median_ms and eager
                 and eager.median_ms else (f", {row_latency(row)}" if row and row.correct else ""))
        parts.append(f"{backend}: {row_state(row)}{speed}")
        data[backend] = {"state": row_state(row), "median_ms": row.median_ms if row else None}
    if all(r is None for r in modes.values()):
        return Judgement("error", "neither compile mode was among the back-ends", data, basis="none")
    working = [b for b, r in modes.items() if r is not None and r.correct]
    decided = [b for b, r in modes.items() if r is not None and _decided(r)]
    evidence = (f"{len(working)} of 2 torch.compile modes ran the whole {model} on CUDA and matched eager: "
                + "; ".join(parts))
    cond = {"device": "cuda", "backend": "torch.compile"}
    data["working"] = len(working)
    figure = count_figure(len(working), len(modes), "torch.compile modes run the whole model correctly",
                          "torch.compile modes (default, with CUDA graphs) that run the whole model and match eager",
                          **_where(model, "cuda", eager.case.imgsz if eager else None, "fp32", "torch.compile"))
    if working:
        return Judgement("confirmed", evidence, data, run=cond, figure=figure)
    if not decided:
        return Judgement("inconclusive", evidence + " — no mode finished in this run", data, run=cond)
    return Judgement("refuted", evidence, data, run=cond, figure=figure)


def _dynamic_rows(run: Run) -> list[dict[str, Any]]:
    dyn = run.onnx_dynamic
    return list(dyn.value) if dyn is not None and dyn.ok and isinstance(dyn.value, list) else []


def _variant_result(rows: list[dict[str, Any]], variant: str) -> tuple[bool | None, str]:
    """(a dynamic ONNX program of this model variant ran at every size (two at least) and matched eager on some
    route, a sentence) — False when every route tried failed, None when none was tried (skipped routes do not count).
    Routes: the kit's torch.export spec, and for the stock model ultralytics' exporter with dynamic=True."""
    mine = [r for r in rows if r.get("model_variant") == variant and not r.get("skipped")]
    skipped = [r for r in rows if r.get("model_variant") == variant and r.get("skipped")]
    routes: dict[str, list[dict[str, Any]]] = {}
    for r in mine:
        routes.setdefault(str(r.get("spec", "")), []).append(r)
    parts, oks = [], []
    for spec, group in routes.items():
        sized = [r for r in group if "size" in r and "error" not in r]
        failed = [r for r in group if "error" in r]
        text = ", ".join(f"{r['size']} px {'matched' if r['correct'] else 'differs'}" for r in sized)
        if failed:
            text = (text + "; " if text else "") + "; ".join(f"{r.get('stage', '')}: {clip(r['error'], 160)}" for r in failed)
        oks.append(len(sized) >= 2 and not failed and all(r["correct"] for r in sized))
        parts.append(f"{spec}: {text}")
    parts += [f"{r.get('spec', '')}: skipped ({clip(r['error'], 160)})" for r in skipped]
    return (any(oks) if oks else None), ("; ".join(parts) or "not tried")


def judge_onnxruntime(run: Run) -> Judgement:
    """Seed 001: ONNX Runtime runs the full model with flexible (dynamic) shapes. Judged on the model the seed means
    (stock YOLO26): the whole end-to-end model on ONNX Runtime's CPU EP, and a dynamic-H/W program of the stock model
    at several sizes; the kit-modified model's dynamic program and ultralytics' exporter are supporting data."""
    model = run.models[0] if run.models else "yolo26n"
    row = _pick(run, "onnxruntime", model, "cpu")
    if row is None:
        return Judgement("error", "onnxruntime was not among the back-ends", basis="none")
    if row.final.status == "skipped":
        return Judgement("inconclusive", f"ONNX Runtime did not run here: {row.final.error}", basis="none")
    dyn_rows = _dynamic_rows(run)
    stock_ok, stock_text = _variant_result(dyn_rows, "stock")
    kit_ok, kit_text = _variant_result(dyn_rows, "kit-modified")
    dyn = run.onnx_dynamic
    if not dyn_rows:
        stock_text = f"{dyn.status}: {clip(dyn.error, 160)}" if dyn is not None else "not run"
    ux_text, ux = _ultralytics_text(run, "onnxruntime")
    full_ok = row.correct
    evidence = (f"whole end-to-end {model} (stock model, kit export) on ONNX Runtime's CPU EP at {row.case.imgsz} px: "
                f"{row_state(row)}, {row_latency(row)}; dynamic H/W ONNX programs of the stock model (no model change): "
                f"{stock_text}; supporting: the kit-modified model's dynamic program: {kit_text}"
                + (f"; {ux_text}" if ux_text else ""))
    data = {"static": row_state(row), "stock_dynamic": stock_ok, "kit_modified_dynamic": kit_ok, "dynamic": dyn_rows,
            "ultralytics_exporter": ux}
    cond = {"backend": "onnxruntime", "model_variant": "stock"}
    figure = count_figure(int(bool(full_ok)) + int(bool(stock_ok)), 2, "parts hold", "the stock model whole on ONNX "
                          "Runtime, and its dynamic-H/W program at several sizes",
                          **_where(model, "cpu", row.case.imgsz, row.case.dtype, "onnxruntime"))
    if stock_ok is None or not _decided(row):
        return Judgement("inconclusive", evidence + " — the stock model's dynamic program or the static run was not "
                         "decided here", data, run=cond)
    if full_ok and stock_ok:
        return Judgement("confirmed", evidence, data, run=cond, figure=figure)
    return Judgement("partly" if full_ok or stock_ok else "refuted", evidence, data, run=cond, figure=figure)


def _round_ratios(run: Run, numerator: Case, denominator: Case) -> list[float]:
    """numerator/denominator per side-by-side round ([] without that step, or when no round could be timed)."""
    medians = run.cpu_rounds.get("medians") or {}
    num = [v if timed_ms(v) else 0.0 for v in medians.get(numerator.tag) or []]
    den = [v if timed_ms(v) else 0.0 for v in medians.get(denominator.tag) or []]
    return timing.round_ratios(num, den)


def _cpu_load(run: Run) -> tuple[str, bool]:
    """What the side-by-side step measured of the machine around its rounds, as evidence, and whether other
    processes kept it too busy for a CPU timing to decide (timing.OTHERS_BUSY_LIMIT cores on average)."""
    rounds = run.cpu_rounds
    if not rounds:
        return "", False
    kept = rounds.get("measuring_cores") or []
    where = (f"{rounds.get('cpu') or 'this CPU'}, {rounds.get('threads') or '?'} threads"
             + (f", on the {len(kept)} cores kept for CPU timings" if kept else ""))
    busy = rounds.get("others_busy_cores")
    if busy is None:
        return f"; timed on {where} (how busy other processes kept the machine could not be read)", False
    contested = busy > timing.OTHERS_BUSY_LIMIT
    text = f"; timed on {where}, where other processes kept {busy:g} cores busy on average while the rounds ran"
    if contested:
        text += (f" (over {timing.OTHERS_BUSY_LIMIT:g}: the rounds measured the sharing as much as the programs, so "
                 "they cannot decide; " + ("on a GPU runner the other notebooks compile beside this step, and the "
                                           "CPU run, one notebook at a time, is the measurement" if run.on_cuda
                                           else "rerun on a quiet machine") + ")")
    return text, contested


def _rounds_text(ratios: list[float]) -> str:
    return (f"{len(ratios)} side-by-side rounds {min(ratios):.2f}–{max(ratios):.2f}×" if ratios
            else "could not time side by side")


def judge_xnnpack_vs_eager(run: Run) -> Judgement:
    """Seed 000: XNNPACK gives good CPU performance (15–20 ms for yolo26n at 640 on the seed's CPU): judged as XNNPACK
    at most as slow as eager PyTorch fp32 on the same CPU, round by round, for the seed's yolo26n (band in the
    ledger); other sizes are data."""
    claim = "deployment_paths.xnnpack_vs_eager"
    lo, hi = findings.band_of(claim)
    models = sorted({r.case.model for r in run.rows if r.case.backend == "et_xnnpack"}, key=_by_size)
    pairs = []
    for model in models:
        xnn, eager = _pick(run, "et_xnnpack", model), _pick(run, "eager", model, "cpu")
        if xnn is None or eager is None:
            continue
        ratios = _round_ratios(run, xnn.case, eager.case) if xnn.correct and eager.correct else []
        verdict = band(ratios, lo, hi) if ratios else "inconclusive"
        pairs.append({"model": model, "imgsz": xnn.case.imgsz, "xnnpack": row_state(xnn), "xnnpack_ms": xnn.median_ms,
                      "eager_ms": eager.median_ms, "rounds": [round(r, 3) for r in ratios], "verdict": verdict})
    if not pairs:
        return Judgement("error", "no XNNPACK/eager CPU pair in this run", basis="none")
    seed_model = next((p for p in pairs if p["model"] == "yolo26n"), pairs[0])
    # the rounds decide; the rows' own medians were timed apart (on a GPU run, beside other steps' compiles)
    text = "; ".join(f"{p['model']} at {p['imgsz']} px: XNNPACK {p['xnnpack']}, " + _rounds_text(p["rounds"])
                     + (f" (the rows' own medians, timed apart: XNNPACK {p['xnnpack_ms']:.3g} ms, eager "
                        f"{p['eager_ms']:.3g} ms)" if p['xnnpack_ms'] and p['eager_ms'] else "") for p in pairs)
    load_text, contested = _cpu_load(run)
    evidence = (f"XNNPACK over eager fp32 on the same CPU, judged for {seed_model['model']} against ≤ {hi:g}× (the "
                f"seed's \"good CPU performance\"; its 15–20 ms is an Intel Core i7's): {text}{load_text}")
    verdict = seed_model["verdict"]
    figure = rounds_figure(seed_model["rounds"], "×", "XNNPACK's time over eager fp32's on the same CPU",
                           **_where(seed_model["model"], "cpu", seed_model["imgsz"], "fp32", "executorch-xnnpack")) \
        if seed_model["rounds"] else None
    if verdict == "inconclusive" and seed_model["rounds"]:
        evidence += " — the rounds fall on both sides of 1×: this machine's noise cannot decide"
    elif not seed_model["rounds"]:
        evidence += " — no usable side-by-side rounds for it"
    elif contested:
        evidence += f" — the rounds alone would say {verdict}"
        verdict = "inconclusive"
    cond = {"device": "cpu", "backend": "executorch-xnnpack", "model": seed_model["model"],
            "imgsz": seed_model["imgsz"], "cpu": env.cpu_class(run.cpu_rounds.get("cpu") or run.environment.get("cpu", ""))}
    return Judgement(verdict, evidence, {"pairs": pairs, "band": [lo, hi], "others_busy_cores":
                                         run.cpu_rounds.get("others_busy_cores")}, run=cond, figure=figure)


def _growth_band(claim: str, small: str, big: str) -> tuple[float, float]:
    """The big/small latency ratios the seed's per-size ranges allow (the ledger's band.per_model_ms)."""
    return growth_band(small, big)


def judge_xnnpack_scaling(run: Run) -> Judgement:
    """Seed 001's XNNPACK column: latency grows yolo26n ~15–20 … yolo26x ~200–250 ms; judged by each growth ratio
    between neighbouring sizes measured, round by round, against the ratios the seed's ranges allow."""
    claim = "deployment_paths.xnnpack_scaling"
    timed = sorted((r for r in run.rows if r.case.backend == "et_xnnpack" and r.case.timed and r.case.task == "detect"
                    and r.case.export_path == KIT_EXPORT and r.correct), key=lambda r: _by_size(r.case.model))
    imgsz = timed[0].case.imgsz if timed else run.imgsz
    # the growth depends on the CPU (how far the runtime spreads the smaller model over its cores): the ledger names
    # the seed's CPU class as a condition, so another CPU shows its rounds but cannot decide
    cond = {"device": "cpu", "backend": "executorch-xnnpack", "imgsz": imgsz,
            "cpu": env.cpu_class(run.cpu_rounds.get("cpu") or run.environment.get("cpu", ""))}
    if len(timed) < 2:
        return Judgement("inconclusive", f"{len(timed)} size(s) ran on XNNPACK and matched eager: growth with size needs "
                         f"two (this profile's models: {', '.join(run.models)}; the full profile has n…x)",
                         {"steps": []}, run=cond)
    steps = []
    for a, b in zip(timed, timed[1:]):
        lo, hi = _growth_band(claim, a.case.model, b.case.model)
        ratios = _round_ratios(run, b.case, a.case)
        rows_ratio = (round(b.median_ms / a.median_ms, 2) if a.median_ms and b.median_ms else None)
        steps.append({"from": a.case.model, "to": b.case.model, "seed_band": [round(lo, 2), round(hi, 2)],
                      "rounds": [round(r, 3) for r in ratios], "rows_ratio": rows_ratio,
                      "verdict": band(ratios, lo, hi) if ratios else "inconclusive"})
    verdicts = [s["verdict"] for s in steps]
    verdict = combine(verdicts)
    text = "; ".join(f"{s['from']}→{s['to']}: {_rounds_text(s['rounds'])} (seed ×{s['seed_band'][0]}–"
                     f"{s['seed_band'][1]}; the rows' separate timings give "
                     f"{'×' + str(s['rows_ratio']) if s['rows_ratio'] else 'no ratio'}) → {s['verdict']}"
                     + (" (the rounds fall on both sides of the band)" if s["verdict"] == "inconclusive" and s["rounds"]
                        else "") for s in steps)
    load_text, contested = _cpu_load(run)
    evidence = (f"{verdicts.count('confirmed')} of {len(steps)} size steps grow as the seed's XNNPACK column allows, "
                f"{verdicts.count('refuted')} do not: {text}; measured at {imgsz} px, the seed's at 640 px on an "
                f"Intel Core i7{load_text}")
    if contested and verdict != "inconclusive":
        evidence += f" — the rounds alone would say {verdict}"
        verdict = "inconclusive"
    figure = count_figure(verdicts.count("confirmed"), len(steps), "size steps grow as the seed's column allows",
                          "latency growth between neighbouring YOLO26 sizes on XNNPACK, round by round",
                          **_where([r.case.model for r in timed], "cpu", imgsz, "fp32", "executorch-xnnpack"))
    return Judgement(verdict, evidence, {"steps": steps, "others_busy_cores": run.cpu_rounds.get("others_busy_cores")},
                     run=cond, figure=figure)


def gpu_class(name: str) -> str:
    """A GPU's class from its device name: "NVIDIA H100 80GB HBM3" → "H100"; "" when none is recognisable."""
    m = re.search(r"\b([A-Z]{1,3}\d{2,4}[A-Z]?)\b", name or "")
    return m.group(1) if m else (name or "")


def _spread(row: Row) -> list[float]:
    value = row.run.value if row.run is not None else {}
    return [v for v in (timed_ms(value.get(k)) for k in ("p10_ms", "median_ms", "p90_ms")) if v is not None]


def _spread_band(values: list[float], lo: float, hi: float) -> str:
    """verdicts.band over a row's p10, median and p90; a spread that covers the whole band cannot refute it."""
    verdict = band(values, lo, hi)
    return "inconclusive" if verdict == "refuted" and min(values) < lo and max(values) > hi else verdict


def judge_gpu_latency(run: Run) -> Judgement:
    """Seed 001's GPU columns on an A100: TensorRT ~1–2 … 12–18 ms, hybrid CUDA (backbone only) ~2–3 … 18–25 ms.
    Decided only by TensorRT (fp32) measured on an A100; the kit has no hybrid path. What this run measured instead
    (torch-native CUDA paths running the whole model) is evidence and data, never the verdict."""
    claim = "deployment_paths.gpu_latency"
    if not run.on_cuda:
        best = [r for r in run.rows if r.case.device == "cpu" and r.case.timed and r.correct and r.median_ms
                and r.case.export_path == KIT_EXPORT]
        fastest = min(best, key=lambda r: r.median_ms) if best else None
        return Judgement("needs_cuda", ("No CUDA device in this run; on CPU the fastest correct path was "
                                        f"{label(fastest) + ' ' + row_latency(fastest) if fastest else 'none'}."),
                         basis="none")
    table = findings.ledger_entry(claim)["band"]["per_model_ms"]
    gpu = gpu_class(run.gpu)
    seed_gpu = findings.ledger_entry(claim)["conditions"].get("gpu", "the seed's GPU")  # the seed's, from the ledger
    native = []
    for model in run.models:
        paths = sorted((r for r in run.rows if r.case.model == model and r.case.device.startswith("cuda")
                        and r.case.backend in TORCH_NATIVE_CUDA and r.case.timed and r.correct and r.median_ms
                        and r.case.task == "detect"), key=lambda r: r.median_ms)
        if paths:
            native.append({"model": model, "path": label(paths[0]), "backend": LEDGER_BACKEND[paths[0].case.backend],
                           "precision": paths[0].case.dtype, "ms": round(paths[0].median_ms, 3),
                           "seed_tensorrt": table["tensorrt"].get(model),
                           "seed_hybrid": table["hybrid executorch-cuda"].get(model)})
    native_text = "; ".join(f"{n['model']}: {n['path']} {n['ms']:.3g} ms (seed on an {seed_gpu}: TensorRT "
                            f"{'–'.join(map(str, n['seed_tensorrt']))}, hybrid {'–'.join(map(str, n['seed_hybrid']))} ms)"
                            for n in native)
    trt_rows = [_pick(run, "tensorrt", m) for m in run.models]
    trt = [r for r in trt_rows if r is not None and r.correct and _spread(r)]
    data: dict[str, Any] = {"gpu": run.gpu, "measured_instead": native}
    if not trt:
        why = "; ".join(f"{r.case.model}: {row_state(r)}" for r in trt_rows if r is not None) or "not among the back-ends"
        evidence = (f"neither TensorRT ({why}) nor the hybrid path (backbone on ExecuTorch CUDA, pre/post on the CPU: "
                    f"not a path this kit builds) was measured on this {gpu or 'GPU'}; the seed's figures are theirs on "
                    f"an {seed_gpu}. Measured instead, the whole model (postprocess included) at {run.imgsz} px: "
                    f"{native_text or 'no torch-native path ran correctly'}")
        cond = {"device": "cuda", "gpu": gpu, "backend": sorted({n["backend"] for n in native}) or ["none"],
                "precision": sorted({n["precision"] for n in native}) or ["fp32"],
                "model": list(run.models), "imgsz": run.imgsz}
        return Judgement("inconclusive", evidence, data, run=cond)
    steps = []
    for r in trt:
        lo, hi = table["tensorrt"][r.case.model]
        values = _spread(r)
        steps.append({"model": r.case.model, "p10_median_p90_ms": [round(v, 3) for v in values], "seed": [lo, hi],
                      "verdict": _spread_band(values, lo, hi)})
    verdicts = [s["verdict"] for s in steps]
    data["tensorrt"] = steps
    text = "; ".join(f"{s['model']}: TensorRT p10/median/p90 {'/'.join(f'{v:.3g}' for v in s['p10_median_p90_ms'])} ms "
                     f"(seed {s['seed'][0]}–{s['seed'][1]} ms) → {s['verdict']}" for s in steps)
    evidence = (f"TensorRT fp32 of the whole model at {trt[0].case.imgsz} px on this {gpu or 'GPU'}: {text}; the "
                f"hybrid column was not measured (not a path this kit builds); torch-native paths: "
                f"{native_text or 'none ran correctly'}")
    cond = {"device": "cuda", "gpu": gpu, "backend": "tensorrt", "precision": "fp32",
            "model": [s["model"] for s in steps], "imgsz": trt[0].case.imgsz}
    first = steps[0]
    figure = one_figure(first["p10_median_p90_ms"][1], "ms", f"TensorRT's median latency of {first['model']} "
                        "(p10–p90 in the evidence)", **_where(first["model"], "cuda", trt[0].case.imgsz, "fp32",
                                                              "tensorrt"), gpu=run.gpu or None)
    if all(v == "refuted" for v in verdicts):
        verdict = "refuted"
    elif "refuted" in verdicts and "confirmed" in verdicts and "inconclusive" not in verdicts:
        verdict = "partly"
    else:
        evidence += (" — TensorRT within the seed's figures cannot confirm the claim without its hybrid half"
                     if all(v == "confirmed" for v in verdicts) else " — the spread straddles a band edge")
        verdict = "inconclusive"
    return Judgement(verdict, evidence, data, run=cond, figure=figure)


JUDGES: dict[str, Callable[[Run], Judgement]] = {
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
    return found.judge_all(JUDGES, replace(run, environment=found.environment))
