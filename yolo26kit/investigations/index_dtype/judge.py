"""Index dtype: one judge per claim of the ledger (JUDGES), each reading the run's cells, probes and equivalence cases.

Every judge returns a verdicts.Judgement whose `run` holds the run's value of each condition the ledger names for
its claim (back-end, the ExecuTorch CUDA lowering's `backend_options`, device, input size, top-k variant ...):
verdicts.settle turns a decisive verdict reached under other conditions (a kit option among them) into
`inconclusive`. A lowering that did not finish (timeout, crash, out of memory) or was not run decides nothing.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pandas as pd

from ...conclusion import clip
from ... import findings
from ...bench import graphs, isolate
from ...backends.executorch_cuda_releases import (ATEN_CONV, UNFINISHED, WHOLE_MODEL_SKIP, backbone_half, failure_text,
                                                  missing_kernels, outcome_text)
from ...bench.detections import agrees
from ...verdicts import Figure, Finding, Judgement, count_figure, one_figure, unmet
from . import judge_root
from .measure import Cell, Results, Run
from .measure_root import lowering_error_details
from .model import OPS

SEED_INDEX_ERROR = "indices must be int64, byte or bool"
# Triton rejecting a float index used as a pointer offset (the float32 index surviving into a gather kernel)
FLOAT_POINTER_ERROR = re.compile(r"invalid operands of type pointer<\w+> and triton\.language\.float32")
MISSING_FALLBACK = "missing fallback kernels"
NOT_IMPLEMENTED = "Lowering not implemented"


def _cell(cells: list[Cell], variant: str, path: str) -> Cell | None:
    return next((c for c in cells if c.variant == variant and c.path == path), None)


def _lowering(cell: Cell | None) -> isolate.Outcome | None:
    return cell.outcomes[0] if cell is not None and cell.outcomes else None


def _et_run(res: Results, cell: Cell, **more: Any) -> dict[str, Any]:
    """The run's conditions of an ExecuTorch CUDA cell: back-end, its options, device, input size, top-k variant, and
    the releases it ran on (executorch, torch)."""
    return {"backend": "executorch-cuda", "backend_options": cell.spec.backend_options, "device": res.device,
            "imgsz": cell.spec.imgsz, "topk": cell.variant, **stack_of(res), **more}


def _where(cell: Cell) -> str:
    what = {"full": "whole model", "backbone": "backbone (raw outputs)", "postprocess": "postprocess"}.get(
        cell.scope, cell.scope)
    return f"{what}, {cell.spec.imgsz} px, backend_options {cell.spec.backend_options}"


def _undecided(lower: isolate.Outcome, what: str, run: dict[str, Any]) -> Judgement | None:
    """`inconclusive` when the lowering was skipped (nothing measured: basis none) or did not finish; None when it ended
    with an answer."""
    if lower.status == "skipped":
        return Judgement("inconclusive", f"{what}: not lowered in this run ({lower.error})", {}, basis="none", run=run)
    if lower.status in UNFINISHED:
        return Judgement("inconclusive", f"{what}: the lowering ended with {lower.status} after {lower.seconds:.0f} s "
                         f"({clip(lower.error, 160)}); a lowering that did not finish says nothing about the claim",
                         {"status": lower.status}, run=run)
    return None


def _no_cuda(cpu_part: str) -> Judgement:
    return Judgement("needs_cuda", f"No CUDA device in this run: the ExecuTorch CUDA lowering needs one; on CPU: "
                     f"{cpu_part}.", {}, run={"device": "cpu"})


def _options_text(res: Results) -> str:
    o = res.run.cuda_options
    if o is None or not o.ok:
        return "ExecuTorch's CUDA back-end options could not be read" + (f" ({o.error})" if o is not None else "")
    v = o.value
    return (f"ExecuTorch's CUDA back-end compiles with max_autotune={v.get('max_autotune')}, "
            f"max_autotune_conv_backends={v.get('max_autotune_conv_backends')!r}, "
            f"max_autotune_gemm_backends={v.get('max_autotune_gemm_backends')!r}, "
            f"aot_inductor.link_libtorch={v.get('aot_inductor.link_libtorch')}")


def judge_fx_int64(res: Results) -> Judgement:
    """Every aten.index.Tensor index argument of the legacy graph is int64 after torch.export."""
    run = {"backend": "torch.export", "topk": "legacy"}
    legacy_export = res.cell("legacy", "export")
    if legacy_export is None or not legacy_export.final.ok:
        return Judgement("error", f"torch.export of the legacy variant did not run: "
                         f"{legacy_export.final.error if legacy_export else 'not in the run'}", basis="none")
    rows = legacy_export.final.value["scan"]
    index_rows = [r for r in rows if r["target"].startswith("aten.index.Tensor")]
    dtypes = [r["index_dtypes"] for r in index_rows]
    if not index_rows:
        return Judgement("inconclusive", "0 aten.index.Tensor nodes in the legacy graph after torch.export: no index "
                         "argument to check", {"nodes": []}, run=run)
    ok = bool(graphs.all_int64(rows))
    return Judgement("confirmed" if ok else "refuted",
                     f"{len(index_rows)} aten.index.Tensor node(s) after torch.export; index dtypes {dtypes}",
                     {"nodes": index_rows}, run=run,
                     figure=count_figure(sum(bool(graphs.all_int64([r])) for r in index_rows), len(index_rows),
                                         "index nodes all int64", "aten.index.Tensor nodes of the legacy graph after "
                                         "torch.export", device=res.device))


def _float_index_verdict(res: Results, cell: Cell, what: str) -> Judgement:
    """'This lowering fails with the seed's float32 index error': confirmed only on that error with float32 among the
    index dtypes; not_reproduced when it lowers; inconclusive when it failed otherwise or did not finish."""
    lower = cell.outcomes[0]
    run = _et_run(res, cell)
    what = f"{what} ({_where(cell)})"
    undecided = _undecided(lower, what, run)
    if undecided is not None:
        return undecided
    if lower.ok:
        return Judgement("not_reproduced", f"{what}: lowered through CudaPartitioner in {lower.seconds:.1f} s without "
                         "the index dtype error", {"seconds": lower.seconds}, run=run,
                         figure=count_figure(1, 1, "lowerings succeed", "ExecuTorch CUDA lowerings of it"))
    text = outcome_text(lower)
    details = lowering_error_details(text)
    if SEED_INDEX_ERROR in text and "float32" in details["dtypes"]:
        return Judgement("confirmed", f"{what}: lowering failed on {details['target'] or 'an index node'}: "
                         f"{clip(lower.error, 200)}", {"details": details}, run=run,
                         figure=Figure(", ".join(details["dtypes"]) if isinstance(details["dtypes"], list)
                                       else str(details["dtypes"]), "", "index dtypes the CUDA lowering sees"))
    return Judgement("inconclusive", f"{what}: lowering failed with another error before any index dtype error: "
                     f"{clip(lower.error, 200)}; whether the index would be float32 cannot be told from it",
                     {"details": details}, run=run)


def judge_et_cuda_float_index(res: Results) -> Judgement:
    """The legacy top-k fails the ExecuTorch CUDA lowering (the back-end's defaults) with a float32 index."""
    if not res.on_cuda:
        return _no_cuda("the legacy graph's index arguments are int64 after torch.export (fx_int64); the float32 "
                        "appears inside the CUDA lowering")
    legacy_cuda = res.cell("legacy", "et_cuda")
    if legacy_cuda is None:
        return Judgement("error", "et_cuda was not among the paths", basis="none")
    return _float_index_verdict(res, legacy_cuda, "legacy advanced-indexing top-k")


def judge_aoti_float_index(res: Results) -> Judgement:
    """Plain AOT Inductor (Inductor's defaults, no ExecuTorch): does its type inference see the float32 index too?
    Plain AOTI compiles on any device, so the CPU run answers when AOTI itself fails; when it compiles, telling
    `refuted` (AOTI never sees float32) from `partly` (only the AOTI inside ExecuTorch's CUDA lowering does) needs
    that lowering, on CUDA."""
    cell = res.cell("legacy", "aoti")
    run: dict[str, Any] = {"topk": "legacy", "backend_options": "defaults"}
    if cell is None:
        return Judgement("error", "the aoti path was not among the paths, so plain AOT Inductor was not tried",
                         basis="none")
    compiled = cell.outcomes[0]
    device = res.device.upper() if res.on_cuda else "CPU"
    figure = count_figure(int(compiled.ok), 1, "AOT Inductor compiles succeed", "plain AOT Inductor compiles of the "
                          "legacy top-k", device=res.device)
    what = f"plain AOT Inductor (aoti_compile_and_package, Inductor's defaults) of the legacy top-k on {device}"
    undecided = _undecided(compiled, what, run)
    if undecided is not None:
        return undecided
    if not compiled.ok:
        if SEED_INDEX_ERROR in outcome_text(compiled):
            return Judgement("confirmed", f"{what} fails: {clip(compiled.error, 200)}", {}, run=run, figure=figure)
        return Judgement("inconclusive", f"{what} failed with another error: {clip(compiled.error, 200)}", {}, run=run)
    loads = ", ".join(f"{o.details.get('aoti_load')}: {o.status}" for o in cell.aoti_loads) or "not loaded"
    ran = f"its package ran ({loads}), {_matched(cell)} of eager's detections matched" if cell.final.ok else \
        f"load/run: {loads}"
    text = f"0 index dtype errors: {what} compiled in {compiled.seconds:.0f} s and {ran}"
    if not res.on_cuda:
        return Judgement("inconclusive", f"{text}; the seed's error arises inside ExecuTorch's CUDA lowering, which "
                         "needs a CUDA device: this run cannot tell refuted (AOT Inductor never sees float32) from "
                         "partly (only the AOT Inductor inside ExecuTorch's CUDA lowering does)", {"loads": loads},
                         run=run)
    et_cell = res.cell("legacy", "et_cuda")
    et = _lowering(et_cell)
    if et_cell is None or et is None:
        return Judgement("inconclusive", f"{text}; the ExecuTorch CUDA lowering of the legacy top-k was not run, so "
                         "refuted cannot be told from partly", {"loads": loads}, run=run)
    run.update(backend_options=et_cell.spec.backend_options)
    undecided = _undecided(et, f"{text}; ExecuTorch CUDA ({_where(et_cell)})", run)
    if undecided is not None:
        return replace(undecided, basis="measured")  # plain AOTI was measured; only the comparison is missing
    if SEED_INDEX_ERROR in outcome_text(et):
        return Judgement("partly", f"{text}; only the ExecuTorch CUDA lowering ({_where(et_cell)}; {_options_text(res)}) "
                         "sees the float32 index", {"loads": loads}, run=run, figure=figure)
    if et.ok:
        return Judgement("refuted", f"{text}; the ExecuTorch CUDA lowering ({_where(et_cell)}) lowered it without the "
                         "index error too", {"loads": loads}, run=run, figure=figure)
    return Judgement("inconclusive", f"{text}; the ExecuTorch CUDA lowering failed with another error: "
                     f"{clip(et.error, 160)}", {"loads": loads}, run=run)


def _matched(cell: Cell) -> str:
    rate = cell.delta.get("match_rate")
    return f"{rate:.0%}" if isinstance(rate, float) else ("all" if cell.delta.get("exact") else "?")


def judge_explicit_cast(res: Results) -> Judgement:
    """The legacy top-k with explicit .to(torch.int64) casts still hits the float32 index in the CUDA lowering."""
    export_cell = res.cell("legacy_cast", "export", scope="postprocess")
    if export_cell is None or not export_cell.final.ok:
        return Judgement("error", "the legacy_cast variant was not exported (the `cast` probe is off, or its export "
                         "failed)", basis="none")
    rows = [r for r in export_cell.final.value["scan"] if r["target"].startswith("aten.index.Tensor")]
    graph = (f"{len(rows)} aten.index.Tensor in the cast variant's exported graph, index dtypes "
             f"{[r['index_dtypes'] for r in rows]}"
             + (" (all int64 already, so the casts change no dtype)" if rows and graphs.all_int64(rows) else ""))
    if not res.on_cuda:
        return _no_cuda(graph)
    cast_cuda = res.cell("legacy_cast", "et_cuda", scope="postprocess")
    if cast_cuda is None:
        return Judgement("error", "the cast variant's ExecuTorch CUDA lowering was not run", basis="none")
    judged = _float_index_verdict(res, cast_cuda, "legacy top-k with .to(torch.int64)")
    if judged.verdict == "not_reproduced":
        legacy_cell = res.cell("legacy", "et_cuda")
        legacy = _lowering(legacy_cell)
        if legacy is not None and SEED_INDEX_ERROR in outcome_text(legacy) \
                and legacy_cell.spec.backend_options == cast_cuda.spec.backend_options:
            judged.verdict = "refuted"
            judged.evidence += "; the legacy top-k without the casts hit the index error under the same options"
    judged.evidence = f"{judged.evidence}; {graph}"
    return judged


def judge_gather_removes_index(res: Results) -> Judgement:
    """The gather graph has no aten.index.Tensor and its CUDA lowering gets past the index error."""
    gather_export = res.cell("gather", "export")
    if gather_export is None or not gather_export.final.ok:
        return Judgement("error", "torch.export of the gather variant did not run", basis="none")
    n_index = graphs.count(gather_export.final.value["scan"], "aten.index.Tensor")
    n_gather = graphs.count(gather_export.final.value["scan"], "aten.gather")
    graph_part = f"gather graph: {n_index} aten.index.Tensor, {n_gather} aten.gather"
    gather_cuda = res.cell("gather", "et_cuda")
    if n_index:
        why = "the graph half already fails in torch.export's graph, measured here before any back-end runs"
        run = {"backend": "torch.export", "device": res.device, "topk": "gather",
               "backend_options": gather_cuda.spec.backend_options if gather_cuda else "none"}
        return Judgement("refuted", graph_part, {}, run=run,
                         irrelevant={k: why for k in ("backend", "device", "backend_options")})
    if not res.on_cuda:
        return _no_cuda(f"{graph_part} (the graph half holds); whether it gets past the CUDA lowering needs a CUDA "
                        "device")
    if gather_cuda is None:
        return Judgement("error", f"{graph_part}; et_cuda was not among the paths", basis="none")
    lower = gather_cuda.outcomes[0]
    run = _et_run(res, gather_cuda)
    what = f"{graph_part}; CudaPartitioner lowering of the gather variant ({_where(gather_cuda)})"
    undecided = _undecided(lower, what, run)
    if undecided is not None:
        return undecided
    text = outcome_text(lower)
    # the claim's second half: past the aten.index assertion (a lowering that then fails on gather's own kernel is)
    pointer = FLOAT_POINTER_ERROR.search(text)
    past = lower.ok or bool(pointer)
    lowered = count_figure(int(past), 1, "CUDA lowering of the gather top-k gets past the aten.index assertion",
                           "ExecuTorch CUDA lowerings of the gather variant past the index dtype assertion")
    if lower.ok:
        return Judgement("confirmed", f"{what}: lowered in {lower.seconds:.0f} s, past the index dtype error", {},
                         run=run, figure=lowered)
    if SEED_INDEX_ERROR in text:
        return Judgement("refuted", f"{what}: {clip(lower.error, 160)} — the same index dtype error", {}, run=run,
                         figure=lowered)
    if pointer:
        moved = pointer.group(0)
        # both halves of the sentence hold: no aten.index.Tensor, and the lowering is past its assertion; that it
        # then fails on the same float32 quotient in gather's kernel is the seed's wider "completely resolved"
        # (index_dtype.index_dtype_resolved), and its cause is the floor division (floordiv_float_path)
        return Judgement("confirmed", f"{what}: {clip(lower.error, 120)} — past the aten.index assertion; it then fails "
                         f"on the float32 quotient as a pointer offset in gather's Triton kernel ('{moved}'), which "
                         "index_dtype.index_dtype_resolved and floordiv_float_path judge", {"moved": moved}, run=run,
                         figure=lowered)
    return Judgement("inconclusive", f"{what}: failed with another error ({clip(lower.error, 160)}); whether it got past "
                     "the index lowering cannot be told from it", {}, run=run)


def judge_gather_int64_ops(res: Results) -> Judgement:
    """The gather graph exports the seed's number of aten.gather nodes (the ledger's band), every index int64."""
    claim = "index_dtype.gather_int64_ops"
    gather_export = res.cell("gather", "export")
    if gather_export is None or not gather_export.final.ok:
        return Judgement("error", "torch.export of the gather variant did not run", basis="none")
    lo, hi = findings.band_of(claim)
    rows = [r for r in gather_export.final.value["scan"] if r["target"].startswith("aten.gather")]
    dtypes = [r["index_dtypes"] for r in rows]
    all64 = bool(rows) and all(d == "int64" for d in dtypes)
    count_ok = lo <= len(rows) <= hi
    verdict = "confirmed" if all64 and count_ok else ("partly" if all64 or (count_ok and rows) else "refuted")
    expected = f"{lo:g}" if lo == hi else f"{lo:g}–{hi:g}"
    return Judgement(verdict, f"{len(rows)} aten.gather node(s) in the gather variant's exported graph (the seed: "
                     f"{expected}); index dtypes {dtypes}",
                     {"nodes": [{k: r[k] for k in ("node", "index_dtypes", "source")} for r in rows]},
                     run={"backend": "torch.export", "topk": "gather"},
                     figure=one_figure(len(rows), "aten.gather nodes", "aten.gather nodes in the gather variant's "
                                       "exported graph", device=res.device))


def judge_gather_equivalent(res: Results) -> Judgement:
    """legacy and gather agree bit for bit on random heads, ties included: every case, or the claim is refuted."""
    equiv = res.equiv
    if equiv.empty:
        return Judgement("error", "no equivalence cases ran", basis="none")
    same = int(equiv["identical"].sum())
    return Judgement("confirmed" if same == len(equiv) else "refuted",
                     f"{same}/{len(equiv)} random cases bit-identical (torch.equal), {int(equiv['ties'].sum())} with "
                     f"heavy score ties; batch 1–{equiv['batch'].max()}, nc 1–{equiv['nc'].max()}",
                     {"identical": same, "cases": len(equiv)}, run={"precision": "fp32"},
                     figure=count_figure(same, len(equiv), "cases bit-identical", "random cases where gather equals "
                                         "the legacy top-k", device=res.device))


def judge_gather_upstreamed(res: Results) -> Judgement:
    """The installed ultralytics' top-k, read from its exported graph: gather (upstreamed) or advanced indexing."""
    release = res.environment.get("ultralytics") or "?"
    cell = res.cell("upstream", "export")
    if cell is None or not cell.final.ok:
        return Judgement("error", "the upstream variant was not exported (add `upstream` to variants)", basis="none")
    rows = cell.final.value["scan"]
    n_index, n_gather = graphs.count(rows, "aten.index.Tensor"), graphs.count(rows, "aten.gather")
    text = f"{n_index} aten.index.Tensor and {n_gather} aten.gather in ultralytics {release}'s exported top-k"
    run = {"model_variant": "stock"}
    figure = one_figure(n_gather, "aten.gather nodes", f"aten.gather nodes in ultralytics {release}'s exported "
                        "top-k", device=res.device)
    if not n_index and n_gather:
        return Judgement("confirmed", f"{text}: the installed release already selects with gather",
                         {"ultralytics": release}, run=run, figure=figure)
    return Judgement("not_reproduced", f"{text}: the installed release still uses advanced indexing",
                     {"ultralytics": release}, run=run, figure=figure)


def _full_cuda(res: Results) -> Cell | None:
    return next((c for c in res.run.full_cells if c.path == "et_cuda" and not c.spec.conv_backends), None)


def judge_et_cuda_full_model(res: Results) -> Judgement:
    """The full model (with the gather fix) fails the ExecuTorch CUDA lowering, under the back-end's defaults, with
    Triton's 'No choices to select'."""
    if not res.on_cuda:
        return _no_cuda(_options_text(res))
    full_cuda = _full_cuda(res)
    if full_cuda is None:
        return Judgement("error", "et_cuda was not among the full-model paths", basis="none")
    lower = full_cuda.outcomes[0]
    run = _et_run(res, full_cuda)
    what = f"full {full_cuda.variant} YOLO26 ({_where(full_cuda)})"
    if lower.status == "skipped":
        return _full_model_from_parts(res, full_cuda, what, run)
    undecided = _undecided(lower, what, run)
    if undecided is not None:
        return undecided
    figure = count_figure(int(lower.ok), 1, "whole-model lowerings succeed", "ExecuTorch CUDA lowerings of the "
                          "whole model")
    if lower.ok:
        return Judgement("refuted", f"{what} lowered through CudaPartitioner in {lower.seconds:.0f} s "
                         f"({lower.value.get('bytes', 0) / 1e6:.1f} MB .pte)", {"seconds": lower.seconds}, run=run,
                         figure=figure)
    text = outcome_text(lower)
    if "No choices to select" in text:
        kind = ("every candidate failed to compile" if "All choices failed" in text else
                "no candidate existed" if "No choices exist" in text else "no candidate left")
        return Judgement("confirmed", f"{what}: lowering failed, {kind}: {clip(lower.error, 200)}", {"kind": kind},
                         run=run, figure=figure)
    moved = FLOAT_POINTER_ERROR.search(text)
    also = (f" — the float32 index reaches a Triton kernel as a pointer offset ('{moved.group(0)}'), as in the "
            "gather postprocess alone" if moved else "")
    return Judgement("partly", f"{what}: lowering failed, but not with Triton's 'No choices to select': "
                     f"{failure_text(lower)}{also}", {}, run=run, figure=figure)


def _full_model_from_parts(res: Results, full_cuda: Cell, what: str, run: dict[str, Any]) -> Judgement:
    """The whole model was not lowered in this profile: it fails when one of its parts, lowered alone here with the
    same options and size, fails (a lowering compiles every kernel of its graph), so its parts decide (basis both):
    the top-k postprocess of the same variant, and the backbone (backbone_half)."""
    post = _cell(res.run.cells, full_cuda.variant, "et_cuda")
    post_lower = _lowering(post)
    stack = stack_of(res)
    state, backbone, _ = backbone_half(_lowering(res.probe("backbone")), res.run.backbone_graph,
                                       _lowering(res.probe("op_split")), stack["executorch"], res.run.known_releases)
    failed_post = post_lower is not None and not post_lower.ok and post_lower.status not in ("skipped", *UNFINISHED)
    if not failed_post and state not in ("release", "refused"):
        post_text = "not lowered" if post_lower is None else (
            "lowered" if post_lower.ok else f"{post_lower.status}: {clip(post_lower.error, 120)}")
        return Judgement("inconclusive", f"{what}: not lowered in this run ({WHOLE_MODEL_SKIP}); its postprocess alone: "
                         f"{post_text}; its backbone: {backbone}", {}, basis="none", run=run)
    parts = []
    if failed_post:
        parts.append(f"its {full_cuda.variant} postprocess alone ({_where(post)}) fails: {failure_text(post_lower)}")
    if state in ("release", "refused"):
        parts.append(f"its backbone alone is {backbone}")
    text = (f"{what}: not lowered in this profile ({WHOLE_MODEL_SKIP}), decided from its parts, each lowered here "
            f"with the same options: {'; '.join(parts)} — a lowering compiles every kernel of its graph, so the "
            "whole model fails too")
    post_text = outcome_text(post_lower) if failed_post else ""
    figure = count_figure(0, len(parts), "parts lower", "the whole model's parts lowered alone with its options")
    if "No choices to select" in post_text:
        return Judgement("confirmed", text, {"from": "parts"}, basis="both", run=run, figure=figure)
    moved = FLOAT_POINTER_ERROR.search(post_text)
    also = (f"; the float32 index reaches a Triton kernel as a pointer offset ('{moved.group(0)}')" if moved else "")
    return Judgement("partly", f"{text}, but not with Triton's 'No choices to select'{also}", {"from": "parts"},
                     basis="both", run=run, figure=figure)


def _backbone_aten(res: Results) -> Cell | None:
    return res.probe("backbone", ATEN_CONV) or res.probe("full", ATEN_CONV)


def _subprocess_sees_gpu(probe: isolate.Outcome | None) -> bool:
    """The subprocess GPU probe ran and its child got the right sum of a 64×64 ones matmul on the GPU."""
    return (probe is not None and probe.ok and bool(probe.value.get("available"))
            and probe.value.get("matmul_sum") == 64.0 ** 3)


def judge_triton_worker_gpu(res: Results) -> Judgement:
    """Is the NoValidChoicesError of the default lowering about worker subprocesses and the GPU? Decided by the error
    itself (no candidate at all: no worker compiled anything) and by whether a subprocess of a step can use the GPU;
    the same lowering with ATen allowed among the conv back-ends is shown beside."""
    if not res.on_cuda:
        return _no_cuda(f"{_options_text(res)}, so a convolution may only become a Triton template")
    lowerings = [(label, cell, _lowering(cell)) for label, cell in (("full model", _full_cuda(res)),
                                                                     ("backbone", res.probe("backbone")))
                 if cell is not None]
    failure = next(((label, cell, lower) for label, cell, lower in lowerings
                    if lower is not None and not lower.ok and "No choices" in outcome_text(lower)), None)
    if failure is None:
        done = [(label, cell, lower) for label, cell, lower in lowerings if lower is not None
                and lower.status not in ("skipped", *UNFINISHED)]
        if not done:
            first = next(((label, cell, lower) for label, cell, lower in lowerings if lower is not None), None)
            if first is None:
                return Judgement("error", "neither the full-model nor the backbone ExecuTorch CUDA lowering was planned",
                                 basis="none")
            label, cell, lower = first
            if lower.status == "skipped" and _subprocess_sees_gpu(res.run.gpu_subprocess):
                return _worker_cause_absent(res, label, cell)
            return _undecided(lower, f"{label} ({_where(cell)})", _et_run(res, cell))
        label, cell, lower = done[0]
        state = "lowered" if lower.ok else f"failed otherwise ({failure_text(lower, 120)})"
        gpu = res.run.gpu_subprocess
        seen = (f"; a Python subprocess started from a step ran a matmul on the GPU (sum {gpu.value.get('matmul_sum')})"
                if _subprocess_sees_gpu(gpu) else "")
        return Judgement("not_reproduced", f"0 NoValidChoicesError: the {label} ({_where(cell)}) {state}{seen}", {},
                         run=_et_run(res, cell), figure=count_figure(0, len(done), "lowerings raise it", "ExecuTorch "
                                                                     "CUDA lowerings raising NoValidChoicesError"))
    where, cell, lower = failure
    run = _et_run(res, cell)
    text = outcome_text(lower)
    aten = _lowering(_backbone_aten(res))
    aten_text = ("not tried" if aten is None else aten.error if aten.status == "skipped" else
                 f"lowered in {aten.seconds:.0f} s" if aten.ok else f"{aten.status}: {clip(aten.error, 160)}")
    evidence = f"{where} lowering ({_where(cell)}): {clip(lower.error, 160)}; with ATen allowed among the conv back-ends: {aten_text}"
    if "No choices exist" in text:
        return Judgement("refuted", f"{evidence} — no candidate existed at all, so no worker compiled or benchmarked "
                         "anything: GPU access of workers cannot be the cause", {"kind": "no candidates"}, run=run,
                         figure=one_figure(0, "kernel candidates", "candidates the failing lowering had to choose "
                                           "from"))
    gpu = res.run.gpu_subprocess
    if gpu is None or not gpu.ok:
        return Judgement("inconclusive", f"{evidence}; the subprocess GPU probe did not run "
                         f"({gpu.error if gpu else 'not among the probes'})", {}, run=run)
    data = {"kind": "candidates failed", "subprocess_gpu": gpu.value}
    reached = count_figure(int(_subprocess_sees_gpu(gpu)), 1, "step subprocesses reach the GPU", "Python "
                           "subprocesses started from a step that ran a matmul on the GPU")
    if _subprocess_sees_gpu(gpu):
        return Judgement("refuted", f"{evidence}; a Python subprocess started from a step ran a matmul on the GPU "
                         f"(sum {gpu.value.get('matmul_sum')}): workers can reach it", data, run=run, figure=reached)
    return Judgement("confirmed", f"{evidence}; a subprocess started from a step could not use the GPU ({gpu.value})",
                     data, run=run, figure=reached)


def _worker_cause_absent(res: Results, label: str, cell: Cell) -> Judgement:
    """No whole-model lowering in this profile: the failure the claim explains did not happen here, so nothing of
    this run says what causes it (undecided); what was measured of the cause it names is told: a subprocess of a step
    reaches the GPU, and none of the run's other ExecuTorch CUDA lowerings raised NoValidChoicesError."""
    lowered = [c for c in res.et_cuda_cells() if _lowering(c) is not None
               and _lowering(c).status not in ("skipped", *UNFINISHED)]
    seen = sum("No choices" in outcome_text(_lowering(c)) for c in lowered)
    gpu = res.run.gpu_subprocess
    return unmet(f"the {label} ({_where(cell)}), whose NoValidChoicesError the claim explains, is not lowered in this "
                 f"profile ({WHOLE_MODEL_SKIP})",
                 f"the {label} ({_where(cell)}), whose NoValidChoicesError the claim explains, is not lowered in this "
                 f"profile ({WHOLE_MODEL_SKIP}), so this run has no such failure to explain; of the cause it names: a "
                 f"Python subprocess started from a step ran a matmul on the GPU (sum {gpu.value.get('matmul_sum')}), "
                 f"as Inductor's compile and autotune workers are started, and {seen} of the run's {len(lowered)} "
                 "other ExecuTorch CUDA lowerings raised NoValidChoicesError", run=_et_run(res, cell))


def judge_no_aten_fallback(res: Results) -> Judgement:
    """With ATen allowed among the conv back-ends (the change the 'No choices' error suggests), does ExecuTorch's CUDA
    back-end take the ATen convolutions? Confirmed only on its own refusal ('missing fallback kernels') or a runtime
    that lacks the shim the program calls; refuted when the ATen convolution lowers and the runtime defines it."""
    if not res.on_cuda:
        return _no_cuda(_options_text(res))
    elsewhere = [f"{c.spec.tag} ({c.spec.backend_options}): {failure_text(_lowering(c), 100)}" for c in res.et_cuda_cells()
                 if _lowering(c) is not None and MISSING_FALLBACK in outcome_text(_lowering(c))
                 and not c.spec.conv_backends]
    also = f"; elsewhere in this run: {'; '.join(elsewhere)}" if elsewhere else ""
    cell = _backbone_aten(res)
    if cell is None:
        return Judgement("error", "the backbone_aten / full_aten probe was not run", basis="none")
    lower = cell.outcomes[0]
    run = _et_run(res, cell)
    what = f"with max_autotune_conv_backends={ATEN_CONV!r} the {_where(cell)}"
    undecided = _undecided(lower, what, run)
    if undecided is not None and lower.status == "skipped" and elsewhere:
        return _refused_elsewhere(res, what, elsewhere)
    if undecided is not None:
        undecided.evidence += also
        return undecided
    text = outcome_text(lower)
    if not lower.ok:
        if MISSING_FALLBACK in text:
            return Judgement("confirmed", f"{what} fails: {failure_text(lower)} — the back-end refuses the ATen "
                             f"kernels Inductor fell back to{also}", {"elsewhere": elsewhere}, run=run,
                             figure=count_figure(0, 1, "lowerings succeed", "ExecuTorch CUDA lowerings with ATen "
                                                 "among the conv back-ends"))
        return Judgement("inconclusive", f"{what} failed with another error ({clip(lower.error, 200)}); it says nothing "
                         f"about an ATen fallback{also}", {}, run=run)
    calls = lower.value.get("shim_calls", [])
    conv_calls = [c for c in calls if "convolution" in c]
    shims = res.run.runtime_shims
    defined = sorted({n for names in (shims.value or {}).values() for n in names}) if shims and shims.ok else []
    missing = [c for c in conv_calls if c not in defined]
    base = (f"{what} lowered in {lower.seconds:.0f} s, calling {', '.join(conv_calls) or 'no aoti_torch_cuda_*convolution'}"
            f" (AOTI's C shim to ATen); the installed executorch defines {len(defined)} aoti_torch_cuda_* shims")
    data = {"shim_calls": calls, "runtime_defines": defined, "elsewhere": elsewhere}
    shimmed = count_figure(len(conv_calls) - len(missing), len(conv_calls), "convolution shims defined", "ATen "
                           "convolution shims the program calls that the installed runtime defines")
    if not conv_calls:
        return Judgement("inconclusive", f"{base}: no ATen convolution was chosen, so no fallback was exercised{also}",
                         data, run=run)
    if not defined:
        return Judgement("inconclusive", f"{base}: this executorch build has no CUDA runtime to check against{also}",
                         data, run=run)
    if missing:
        return Judgement("confirmed", f"{base}, not {', '.join(missing)}: the program calls an ATen fallback the "
                         f"runtime does not have{also}", data, run=run, figure=shimmed)
    if elsewhere:
        return Judgement("partly", f"{base}, {', '.join(conv_calls)} among them: ATen convolutions fall back, other "
                         f"ATen kernels do not{also}", data, run=run, figure=shimmed)
    return Judgement("refuted", f"{base}, {', '.join(conv_calls)} among them: the ATen convolution fallback exists",
                     data, run=run, figure=shimmed)


def _refused_elsewhere(res: Results, what: str, elsewhere: list[str]) -> Judgement:
    """The ATen-convolution lowering was not run in this profile, but the back-end refused ATen fallback kernels of
    other lowerings of this run (its defaults): the conv back-end option does not choose those kernels."""
    options = sorted({c.spec.backend_options for c in res.et_cuda_cells()
                      if _lowering(c) is not None and MISSING_FALLBACK in outcome_text(_lowering(c)) and not c.spec.conv_backends})
    why = ("the refused kernels are no convolution, so max_autotune_conv_backends does not choose them: the back-end "
           "refuses an ATen fallback kernel whatever that option says")
    return Judgement("confirmed", f"{what}: not lowered in this run ({WHOLE_MODEL_SKIP}); the back-end refused the ATen "
                     f"fallback kernels of other lowerings of this run: {'; '.join(elsewhere)} — {why}",
                     {"elsewhere": elsewhere},
                     run={"backend": "executorch-cuda", "backend_options": options[0] if len(options) == 1 else options,
                          "device": res.device, **stack_of(res)},
                     irrelevant={"backend_options": why},
                     figure=count_figure(len(elsewhere), len(elsewhere), "lowerings refuse ATen fallbacks",
                                         "this run's ExecuTorch CUDA lowerings refused for missing fallback kernels"))


def judge_postprocess_ops(res: Results) -> Judgement:
    """Each of index_put, topk and index.Tensor alone through the ExecuTorch CUDA lowering (no convolution or matmul:
    the back-end's defaults lower them in seconds)."""
    cells = {op: res.probe(f"op_{op}") for op in OPS}
    if not res.on_cuda:
        legacy = res.cell("legacy", "export")
        found = {t: graphs.count(legacy.final.value["scan"], t) for t in ("aten.index.Tensor", "aten.index_put")} \
            if legacy is not None and legacy.final.ok else {}
        return _no_cuda(f"the legacy top-k graph has {found or 'no scan'} (topk is not an indexing op; the op probes "
                        "run on CUDA only)")
    if any(c is None for c in cells.values()):
        return Judgement("error", "the `ops` probe was not run", basis="none")
    state = {}
    for op, cell in cells.items():
        lower = cell.outcomes[0]
        text = outcome_text(lower)
        state[op] = ("lowered" if lower.ok else "not implemented" if NOT_IMPLEMENTED in text
                     else "no fallback kernel" if MISSING_FALLBACK in text
                     else f"{lower.status}: {clip(lower.error, 100)}")
    lacking = {op: missing_kernels(outcome_text(cell.outcomes[0])) for op, cell in cells.items()}
    unsupported = [op for op, s in state.items() if s in ("not implemented", "no fallback kernel")]
    lowered = [op for op, s in state.items() if s == "lowered"]
    options = sorted({c.spec.backend_options for c in cells.values()})
    run = {"backend": "executorch-cuda", "backend_options": options, "device": res.device}
    evidence = (f"{len(lowered)} of {len(OPS)} operators lowered alone through CudaPartitioner (backend_options "
                f"{', '.join(options)}), {len(unsupported)} unsupported: "
                + "; ".join(f"{k}: {v}" + (f" (missing: {', '.join(lacking[k])})" if lacking[k] else "")
                            for k, v in state.items())
                + f" ({sum(s == 'not implemented' for s in state.values())} with the seed's '{NOT_IMPLEMENTED}')")
    if unsupported and lowered:
        verdict = "partly"
    elif len(unsupported) == len(OPS):
        verdict = "confirmed"
    elif len(lowered) == len(OPS):
        verdict = "refuted"
    else:
        verdict = "inconclusive"  # some lowerings ended in a way that says nothing about support
    return Judgement(verdict, evidence, {"ops": state}, run=run,
                     figure=count_figure(len(lowered), len(OPS), "operators lower alone", "postprocess operators "
                                         "lowered alone through CudaPartitioner"))


def stack_of(res: Results) -> dict[str, str]:
    """The releases the run's ExecuTorch CUDA steps ran on (executorch, torch), as its backbone-graph step recorded
    them; the run's own environment otherwise."""
    graph = res.run.backbone_graph
    if graph is not None and graph.ok and graph.value.get("executorch"):
        return {"executorch": graph.value["executorch"], "torch": graph.value["torch"]}
    return {"executorch": res.environment.get("executorch"), "torch": str(res.environment.get("torch", "")).split("+")[0]}


def judge_backbone_static(res: Results) -> Judgement:
    """The backbone alone (raw outputs, static size) exports (lowers) through the ExecuTorch CUDA back-end with its
    default options; it runs and matches eager where the runtime has the back-end. A refusal for view-copy kernels
    that a later release's view pass maps is reported as a failure of this release (`partly`), not of the claim."""
    graph = res.run.backbone_graph
    if not res.on_cuda:
        seen = (f"; executorch {graph.value['executorch']}'s view pass leaves "
                f"{graph.value.get('left') or 'no view-copy op without an Inductor lowering'} in the backbone's graph"
                if graph is not None and graph.ok else "")
        return _no_cuda(f"{_options_text(res)}; the backbone is convolutions{seen}")
    cell = res.probe("backbone")
    if cell is None:
        return Judgement("error", "the `backbone` probe was not run", basis="none")
    lower = cell.outcomes[0]
    stack = stack_of(res)
    run = _et_run(res, cell)
    size = f"{cell.spec.imgsz}x{cell.spec.imgsz}"
    what = f"the static {size} backbone (raw outputs; backend_options {cell.spec.backend_options})"
    if lower.status in UNFINISHED:
        return _undecided(lower, what, run)
    state, sentence, data = backbone_half(lower, graph, _lowering(res.probe("op_split")), stack["executorch"],
                                          res.run.known_releases)
    basis = "measured" if lower.status != "skipped" else "both"
    if state == "unknown":
        return Judgement("inconclusive", f"{what}: {sentence}", data, basis="none", run=run)
    lowered = count_figure(0, 1, "static backbone lowers", "ExecuTorch CUDA lowerings of the static backbone")
    refusal = () if "split_copy" not in sentence else (Finding(
        "index_dtype.et_cuda_split_copy_refused",
        f"executorch {stack['executorch']}'s CUDA back-end refuses split_copy (no fallback kernel)",
        f"{what}: {sentence}", "torch.chunk of a CUDA tensor (aten.split_copy.Tensor after to_edge) lowered through "
        "CudaPartitioner with the back-end's default options"),)
    if state == "release":
        return Judgement("partly", f"{what}: {sentence}", data, basis="both", run=run, figure=lowered,
                         findings=refusal)
    if state == "refused":
        return Judgement("refuted", f"0 of 1: {what} fails the ExecuTorch CUDA lowering: {sentence}", data,
                         basis=basis, run=run, figure=lowered, findings=refusal)
    after = cell.outcomes[-1]
    if after is not lower and after.ok and not agrees(cell.delta):
        return Judgement("partly", f"1 of 1: {what} lowered in {lower.seconds:.0f} s and ran, but differs from eager "
                         f"(max |Δ| {cell.delta.get('max_abs')})", {"delta": cell.delta}, run=run,
                         figure=count_figure(1, 1, "static backbone lowers",
                                             "ExecuTorch CUDA lowerings of the static backbone"))
    ran = (f"ran, max |Δ| vs eager {cell.delta.get('max_abs')}" if after is not lower and after.ok else
           f"not run ({after.status}: {clip(after.error, 150)})" if after is not lower else "not run")
    return Judgement("confirmed", f"1 of 1: {what} lowered in {lower.seconds:.0f} s; {ran}", {"delta": cell.delta},
                     run=run, figure=count_figure(1, 1, "static backbone lowers",
                                                  "ExecuTorch CUDA lowerings of the static backbone"))


def judge_xnnpack_full_model(res: Results) -> Judgement:
    """The full model lowers to XNNPACK and runs in executorch.runtime with eager's detections."""
    full_xnn = next((c for c in res.run.full_cells if c.path == "et_xnnpack"), None)
    if full_xnn is None:
        return Judgement("error", "et_xnnpack was not among the full-model paths", basis="none")
    run = {"backend": "executorch-xnnpack"}
    final, delta = full_xnn.final, full_xnn.delta
    if final.ok and agrees(delta):
        return Judgement("confirmed", f"{delta['match_rate']:.1%} of eager's detections matched: full "
                         f"{full_xnn.variant} YOLO26 lowered to XNNPACK and ran in executorch.runtime, sorted scores "
                         f"within {delta['score_max_abs']:.2g} (raw max |Δ| {delta['max_abs']:.3g})", {"delta": delta},
                         run=run, figure=Figure(100 * delta["match_rate"], "%", "eager's detections matched by XNNPACK",
                                                conditions={"device": "cpu"}))
    if final.ok:
        return Judgement("partly", f"{delta.get('match_rate')} of eager's detections matched: runs, but detections "
                         f"differ from eager (sorted scores max |Δ| {delta.get('score_max_abs')})", {"delta": delta},
                         run=run, figure=one_figure(100 * float(delta.get("match_rate") or 0), "%", "eager's "
                                                    "detections matched by XNNPACK", device="cpu"))
    undecided = _undecided(final, f"full {full_xnn.variant} YOLO26 through XNNPACK ({final.step})", run)
    if undecided is not None:
        return undecided
    return Judgement("refuted", f"{final.step}: {final.status}: {clip(final.error, 200)}", {}, run=run,
                     figure=count_figure(0, 1, "full-model XNNPACK runs succeed", "lowerings of the full model to "
                                         "XNNPACK that run", device="cpu"))


JUDGES = {
    "index_dtype.fx_int64": judge_fx_int64,
    "index_dtype.et_cuda_float_index": judge_et_cuda_float_index,
    "index_dtype.aoti_float_index": judge_aoti_float_index,
    "index_dtype.explicit_cast_insufficient": judge_explicit_cast,
    "index_dtype.gather_removes_index": judge_gather_removes_index,
    "index_dtype.gather_int64_ops": judge_gather_int64_ops,
    "index_dtype.gather_equivalent": judge_gather_equivalent,
    "index_dtype.gather_upstreamed": judge_gather_upstreamed,
    "index_dtype.et_cuda_full_model": judge_et_cuda_full_model,
    "index_dtype.triton_worker_gpu": judge_triton_worker_gpu,
    "index_dtype.no_aten_fallback": judge_no_aten_fallback,
    "index_dtype.postprocess_ops_unsupported": judge_postprocess_ops,
    "index_dtype.backbone_static_cuda": judge_backbone_static,
    "index_dtype.xnnpack_full_model": judge_xnnpack_full_model,
    **judge_root.JUDGES,
}


def judge(found: findings.Findings, run: "Run", equiv: pd.DataFrame) -> pd.DataFrame:
    """Record every claim's verdict from the run; a judge that breaks records `error` for its claim only."""
    res = Results(run, equiv, environment=found.environment)
    return found.judge_all(JUDGES, res)
