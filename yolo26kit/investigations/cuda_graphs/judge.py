"""CUDA graphs: one judge per claim of data/claims/cuda_graphs.json, each reading the measured rows."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import torch

from ...conclusion import clip
from ...bench import timing
from ...findings import band_of
from ...verdicts import (Judgement, all_none_some, band, combine, count_figure, extreme_figure, figure_conditions,
                         one_figure, pooled_figure, rounds_figure)
from . import judge_toto
from .conclude import graphs_words
from .measure import (Config, Results, capture_class, case_label, case_setting, launches_of_eager,
                      row_outputs)
from .measures import max_abs_diff, spread_decision


# --------------------------------------------------------------------------- verdicts
#
# Each judge reads the rows the seed's conditions pick (data/claims/cuda_graphs.json `conditions`: CUDA,
# reduce-overhead, TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1 where the seed ran with it) and returns a Judgement whose
# `run` holds this run's value of every one of those conditions; findings applies the conditions rule.
# `partly` always means the statement holds in part, and the evidence says which part. Timing verdicts read
# rounds timed in turn (rounds_in_turn) through verdicts.band's straddle rule; bands come from the ledger.

LOCAL_SCALAR = "_local_scalar_dense"
TRACE_NOT_DEVICE = ("the verdict rests on the ATen graph Dynamo and AOTAutograd hand to Inductor, traced here "
                    "without Inductor: Inductor's cudagraph check (get_first_incompatible_cudagraph_node) reads the ops "
                    "of that graph, not the device it was traced on")
TRACE_NOT_MODE = "the traced graph is the one Inductor receives before any compile mode applies"


def _fmt(x: float | None) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3g}"


def _ro_rows(res: Results, **where: Any) -> list[dict[str, Any]]:
    return res.ok(mode="reduce-overhead", **where)


def model_name(cfg: Config) -> str:
    """The model a verdict rests on, as the conditions record it."""
    return f"kit forecaster (d_model={cfg.d_model}, n_layers={cfg.n_layers}, batch={cfg.batch})"


def _values(rows: list[dict[str, Any]], key: str) -> list[Any]:
    return sorted({r.get(key) for r in rows if r.get(key) is not None}, key=str)


def _run(res: Results, rows: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """This run's conditions for a verdict resting on `rows`: device, torch, backend, model, and the modes and
    capture/partition settings of those rows."""
    run: dict[str, Any] = {"device": torch.device(res.device).type, "torch": str(res.stack.get("torch", "unknown")),
                           "backend": "torch.compile", "model": model_name(res.config)}
    for key, name in (("mode", "mode"), ("capture_scalar_outputs", "capture_scalar_outputs"),
                      ("graph_partition", "graph_partition")):
        if values := _values(rows, key):
            run[name] = values
    graphed = [r for r in rows if r.get("mode") == "reduce-overhead" and r.get("status") == "ok"]
    if graphed:  # how much of each step replays as CUDA graphs (measure.capture_class)
        run["capture"] = sorted({_captured(res, r) for r in graphed})
    return {**run, **extra}


def _where(res: Results, rows: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    """A figure's conditions: the kit forecaster, its batch, the device, and the modes and settings of `rows`."""
    run = _run(res, rows)
    where = {"model": "kit forecaster", "batch": res.config.batch, "device": run["device"], "mode": run.get("mode"),
             "capture_scalar_outputs": run.get("capture_scalar_outputs"), "graph_partition": run.get("graph_partition")}
    return figure_conditions(**{**where, **more})


def _graphed_where(res: Results, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """_where of reduce-overhead rows, with what their profiled decode steps replay: graph replays and loose kernel
    launches (a page says "full CUDA graphs" only where the loose launches are none)."""
    def counts(key: str) -> Any:
        values = sorted({int(r.get(key) or 0) for r in rows})
        return values[0] if len(values) == 1 else values

    return _where(res, rows, graph_replays=counts("graph_launches"), loose_kernel_launches=counts("kernel_launches"))


def _rows_words(rows: list[dict[str, Any]]) -> str:
    """graphs_words of reduce-overhead rows' profiled decode steps."""
    return graphs_words([int(r.get("graph_launches") or 0) for r in rows],
                        [int(r.get("kernel_launches") or 0) for r in rows])


def _describe(res: Results, rows: list[dict[str, Any]]) -> str:
    return "; ".join(
        f"{case_setting(r)}: {capture_class(r, launches_of_eager(res, r['variant']))} "
        f"({r.get('graph_launches')} graph / {r.get('kernel_launches')} kernel launches, "
        f"{r.get('scalar_reads')} scalar reads per step, skips={r.get('cudagraph_skips')}"
        f"{', ' + clip(r['skip_messages'][0], 120) if r.get('skip_messages') else ''})"
        for r in rows)


def _failed(res: Results, **where: Any) -> list[dict[str, Any]]:
    return [r for r in res.rows
            if r["status"] not in ("ok", "skipped") and all(r.get(k) == v for k, v in where.items())]


def _ended(rows: list[dict[str, Any]]) -> str:
    """'item reduce-overhead capture=on partition=on ended error (AssertionError: ...)', one per failed row."""
    return "; ".join(f"{case_label(r)} ended {r['status']} ({clip(r['error'], 160)})" for r in rows)


def _cpu_note(res: Results, variant: str) -> str:
    """What the CPU run found about a variant without CUDA: graph breaks, recompiles, traced scalar reads."""
    rows = res.ok(variant=variant, mode="default")
    return ", ".join(f"{case_setting(r)}: {r.get('breaks_1call')} graph breaks, {r.get('recompiles')} recompiles, "
                     f"{r.get('aten_scalar_reads')} aten._local_scalar_dense in the traced graph" for r in rows)


def _no_graph_rows(res: Results, cpu_note: str, **where: Any) -> Judgement:
    """The verdict when no reduce-overhead row matching `where` ran to the end: why not."""
    failed = _failed(res, mode="reduce-overhead", **where)
    if failed:
        return Judgement("inconclusive", f"no reduce-overhead case with the seed's settings ran to the end: "
                         f"{_ended(failed)}", {}, run=_run(res, failed))
    if any(r["mode"] == "reduce-overhead" and r["status"] == "skipped" for r in res.rows) or res.device == "cpu":
        return Judgement("needs_cuda", f"no CUDA device in this run; on CPU: {cpu_note}", basis="none",
                         run=_run(res, []))
    return Judgement("error", "no reduce-overhead case with these settings was run (see the modes/variants "
                     "parameters)", basis="none", run=_run(res, []))


def _captured(res: Results, row: dict[str, Any]) -> str:
    return capture_class(row, launches_of_eager(res, row["variant"]))


def _traced(res: Results, variant: str, capture: bool) -> list[dict[str, Any]]:
    """Compiled default-mode rows of a variant with one capture setting (their one-call trace is device-independent)."""
    return res.ok(variant=variant, mode="default", capture_scalar_outputs=capture)


def _flagged(rows: list[dict[str, Any]]) -> list[str]:
    """Inductor's first cudagraph-incompatible node of each traced graph ('' where there is none)."""
    return [str(r.get("aten_first_incompatible") or "") for r in rows if "aten_first_incompatible" in r]


def _skipped_for_scalar(row: dict[str, Any]) -> bool:
    """No graph launched, and Inductor said why: the incompatible op aten._local_scalar_dense."""
    return row.get("graph_launches", 0) == 0 and any(
        "incompatible op" in m and LOCAL_SCALAR in m for m in row.get("skip_messages") or [])


def judge_item_skips(res: Results) -> Judgement:
    """`.item()` (capture on, as the seed ran) makes reduce-overhead skip CUDA graphs, naming _local_scalar_dense."""
    where = {"variant": "item", "capture_scalar_outputs": True}
    rows = _ro_rows(res, **where)
    if not rows:
        flagged = _flagged(_traced(res, "item", True))
        return _no_graph_rows(res, f"the traced .item() graph's first cudagraph-incompatible node: {flagged or 'not traced'}"
                              "; whether Inductor then skips CUDA graphs or partitions around it shows on CUDA only",
                              **where)
    held = [_skipped_for_scalar(r) for r in rows]
    failed = _failed(res, mode="reduce-overhead", **where)
    text = (f"item with reduce-overhead and capture on: {_describe(res, rows)}"
            + (f"; {_ended(failed)}: that setting is undecided" if failed else ""))
    verdict = all_none_some(sum(held), len(held))
    if verdict == "partly":
        text += (" — it holds in part: skipped where " + ", ".join(case_setting(r) for r, h in zip(rows, held) if h)
                 + "; graphs launched where " + ", ".join(case_setting(r) for r, h in zip(rows, held) if not h))
    return Judgement(verdict, text, {"classes": [_captured(res, r) for r in rows], "skipped": held},
                     run=_run(res, rows), figure=count_figure(sum(held), len(held), "cases skip CUDA graphs",
                                                              ".item() + capture on under reduce-overhead",
                                                              **_where(res, rows)))


def judge_item_local_scalar_dense(res: Results) -> Judgement:
    """`.item()` becomes aten._local_scalar_dense: in the traced graph (capture on) or in the profiled step (capture off)."""
    on = [r for r in _traced(res, "item", True) if "aten_scalar_reads" in r]
    off = [r for r in _traced(res, "item", False) if "scalar_reads" in r]
    if not on and not off:
        return Judgement("error", "no compiled item case ran (see variants/modes/capture_scalar_outputs)", basis="none")
    in_graph = [r["aten_scalar_reads"] for r in on]
    eager_reads = [r["scalar_reads"] for r in off]
    text = (f"item with capture on: {', '.join(map(str, in_graph)) or 'not run'} aten._local_scalar_dense in the "
            f"traced ATen graph ({', '.join(str(r.get('breaks_1call')) for r in on) or '-'} graph breaks); "
            f"capture off: {', '.join(str(r.get('breaks_1call')) for r in off) or '-'} graph breaks, "
            f"{', '.join(map(str, eager_reads)) or '-'} aten::_local_scalar_dense calls in a profiled step ({res.device})")
    seen = [n > 0 for n in in_graph + eager_reads]
    return Judgement(all_none_some(sum(seen), len(seen)), text, {"in_graph": in_graph, "profiled": eager_reads},
                     run=_run(res, on + off),
                     figure=count_figure(sum(seen), len(seen), "cases read it", ".item() cases with "
                                         "aten._local_scalar_dense in the traced graph (capture on) or the profiled "
                                         "step (capture off)", **_where(res, on + off)))


def _syncs(rows: list[dict[str, Any]]) -> list[int]:
    return [int(r.get("stream_syncs", 0) or 0) for r in rows if "stream_syncs" in r]


def judge_item_syncs(res: Results) -> Judgement:
    """`.item()` forces a host sync: every item row (eager and compiled) syncs the stream in a decode step (CUDA)."""
    rows = [r for r in res.ok(variant="item") if "stream_syncs" in r]
    if res.device == "cpu" or not rows:
        reads = [r.get("scalar_reads") for r in res.ok(variant="item")]
        return Judgement("needs_cuda", f"a host sync needs a CUDA stream; on CPU the item cases make {reads} scalar "
                         "reads per profiled step", basis="none", run=_run(res, []))
    syncs = _syncs(rows)
    ref = _syncs([r for r in res.ok(variant="tensor") + res.ok(variant="python") if r["mode"] != "reduce-overhead"])
    text = (f"{sum(s > 0 for s in syncs)}/{len(syncs)} item cases synchronise the stream in a decode step "
            f"({', '.join(f'{case_label(r)}: {s}' for r, s in zip(rows, syncs))}); the tensor/python eager and default "
            f"cases: {ref}")
    verdict = all_none_some(sum(s > 0 for s in syncs), len(syncs))
    if verdict == "partly":
        text += " — it holds in part: only " + ", ".join(case_label(r) for r, s in zip(rows, syncs) if s) + " sync"
    return Judgement(verdict, text, {"syncs": syncs}, run=_run(res, rows),
                     figure=count_figure(sum(s > 0 for s in syncs), len(syncs), "item cases sync",
                                         "stream synchronisations in a decode step", **_where(res, rows)))


def judge_item_capture_scalar(res: Results) -> Judgement:
    """'.item() cannot be captured even with TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1', in its two senses: (a) Dynamo
    cannot capture it into the graph (a graph break with the flag on), (b) CUDA graphs cannot capture it (on CUDA:
    no graph or a graph split around it; on any device: Inductor's cudagraph check flags the traced op)."""
    traced = [r for r in _traced(res, "item", True) if "breaks_1call" in r]
    if not traced:
        return Judgement("error", "no compiled item case with capture on ran (see capture_scalar_outputs)",
                         basis="none")
    dynamo_breaks = any(r["breaks_1call"] for r in traced)
    flagged = _flagged(traced)
    dynamo = (f"with capture on Dynamo {'breaks the graph at' if dynamo_breaks else 'traces'} .item(): "
              f"{', '.join(str(r['breaks_1call']) for r in traced)} graph breaks, "
              f"{', '.join(str(r.get('aten_scalar_reads')) for r in traced)} aten._local_scalar_dense in the graph; "
              f"Inductor's first cudagraph-incompatible node: {', '.join(f or 'none' for f in flagged) or 'not traced'}")
    rows = _ro_rows(res, variant="item", capture_scalar_outputs=True)
    failed = _failed(res, mode="reduce-overhead", variant="item", capture_scalar_outputs=True)
    irrelevant: dict[str, str] = {}
    if rows:
        classes = [_captured(res, r) for r in rows]
        not_graphed = all(c != "full" for c in classes)
        graphs = (f"CUDA graphs with .item() and capture on: {', '.join(f'{case_setting(r)} {c}' for r, c in zip(rows, classes))}"
                  + (f" ({_ended(failed)})" if failed else ""))
        basis_rows = rows  # part (a) reads the traced graph, the one Inductor receives in any mode
    elif flagged and all(LOCAL_SCALAR in f for f in flagged):
        not_graphed = True
        graphs = "CUDA graphs: the traced graph's _local_scalar_dense is the node Inductor's cudagraph check refuses"
        basis_rows = traced
        irrelevant = {"device": TRACE_NOT_DEVICE, "mode": TRACE_NOT_MODE}
        if failed:
            graphs += f" (the reduce-overhead cases did not run to the end: {_ended(failed)})"
    else:
        return _no_graph_rows(res, dynamo, variant="item", capture_scalar_outputs=True)
    parts = {"(a) Dynamo cannot capture it": dynamo_breaks, "(b) CUDA graphs cannot capture it": not_graphed}
    verdict = all_none_some(sum(parts.values()), len(parts))
    text = f"{graphs}; {dynamo}"
    if verdict == "partly":
        text += (" — it holds in part: " + "; ".join(f"{k}: {'holds' if v else 'fails'}" for k, v in parts.items())
                 + ". int() with capture on gives the same graph (see int_enables)")
    run = _run(res, basis_rows, **({"mode": ["default"]} if irrelevant else {}))
    return Judgement(verdict, text, {"parts": parts}, run=run, irrelevant=irrelevant,
                     figure=count_figure(sum(parts.values()), len(parts), "senses hold", "senses of 'cannot be "
                                         "captured': (a) by Dynamo, (b) by CUDA graphs", **_where(res, basis_rows)))


def _last_frame(row: dict[str, Any]) -> str:
    """'torch/_inductor/x.py, line N, in f': the innermost frame of a failed case's traceback ('' without one)."""
    frames = [line.strip() for line in str(row.get("log_tail") or "").splitlines() if line.strip().startswith("File ")]
    return frames[-1].split("site-packages/")[-1].replace('"', "") if frames else ""


def judge_partition_non_gpu_ops(res: Results) -> Judgement:
    """Before the fix (item, capture on, reduce-overhead with graph partition on): the log line
    'cudagraph partition due to non gpu ops'. A partition around a non-GPU op logged under another message is the
    statement in part (the partition happens, the words differ)."""
    where = {"variant": "item", "capture_scalar_outputs": True}
    rows = [r for r in _ro_rows(res, **where) if r.get("graph_partition") in (True, None)]
    if not rows:
        failed = [r for r in _failed(res, mode="reduce-overhead", **where) if r.get("graph_partition") in (True, None)]
        if failed:  # the crash is what this torch does with the seed's code: the line is not seen
            return Judgement("not_reproduced", "the only cases that can log a graph partition (item, capture on, "
                             f"graph partition on) end before any partition is logged: {_ended(failed)}"
                             + "".join(f" (raised at {_last_frame(r)})" for r in failed if _last_frame(r)),
                             {"failed": [r["error"] for r in failed]}, run=_run(res, failed),
                             figure=count_figure(0, len(failed), "cases run to the end", "the cases that can log a "
                                                 "graph partition (item, capture on, partition on)",
                                                 **_where(res, failed)))
        if res.device == "cpu" or any(r["status"] == "skipped" for r in res.rows):
            return _no_graph_rows(res, "graph partitions for CUDA graphs happen on CUDA only", **where)
        return Judgement("error", "no item reduce-overhead case with capture on and graph partition on was run "
                         "(see graph_partition)", basis="none", run=_run(res, []))
    literal = sum(r.get("non_gpu_partition_logs", 0) for r in rows)
    split = [r for r in rows if any(p[2] > 0 for p in r.get("partitions") or [])]
    reasons = sorted({k for r in rows for k in (r.get("non_cudagraphable") or {})})
    text = (f"{literal} 'non gpu ops' partition messages and {len(split)}/{len(rows)} item reduce-overhead cases "
            f"(capture on, partition on) with a non-cudagraphable partition (reasons: {', '.join(reasons) or 'none'}; "
            + ", ".join(f"{case_setting(r)}: {r.get('partitions')}" for r in rows) + ")")
    messages = one_figure(literal, "'non gpu ops' messages", "partition messages the item reduce-overhead cases log "
                          "(capture on, partition on)", **_where(res, rows))
    if literal:
        return Judgement("confirmed", text, {"messages": literal}, run=_run(res, rows), figure=messages)
    if split:
        return Judgement("partly", text + " — it holds in part: the graph is partitioned around a non-GPU op, but "
                         "the log says so in other words on this torch", {"split": len(split)}, run=_run(res, rows),
                         figure=count_figure(len(split), len(rows), "cases partitioned", "item reduce-overhead cases "
                                             "with a non-cudagraphable partition", **_where(res, rows)))
    return Judgement("not_reproduced", text, {}, run=_run(res, rows), figure=messages)


def judge_int_enables(res: Results) -> Judgement:
    """int() + capture on gives full CUDA graphs, and does so where .item() does not. Without a reduce-overhead case
    (CPU), the traced graph refutes it when int()'s graph holds a node Inductor's cudagraph check refuses."""
    where = {"variant": "int", "capture_scalar_outputs": True}
    rows = _ro_rows(res, **where)
    if not rows:
        traced = _traced(res, "int", True)
        flagged = _flagged(traced)
        item_flagged = _flagged(_traced(res, "item", True))
        if flagged and all(flagged):
            return Judgement(
                "refuted", f"int() with capture on leaves {', '.join(flagged)} in the traced graph "
                f"({', '.join(str(r.get('aten_scalar_reads')) for r in traced)} aten._local_scalar_dense; .item()'s "
                f"graph: {', '.join(item_flagged) or 'not traced'}): Inductor's cudagraph check refuses that node, so "
                "reduce-overhead either skips CUDA graphs or graphs the step around it, never in full"
                + (f" (the reduce-overhead cases did not run to the end: {_ended(_failed(res, mode='reduce-overhead', **where))})"
                   if _failed(res, mode="reduce-overhead", **where) else ""),
                {"flagged": flagged, "item_flagged": item_flagged},
                run=_run(res, traced, mode=["default"]), irrelevant={"device": TRACE_NOT_DEVICE, "mode": TRACE_NOT_MODE},
                figure=count_figure(sum(bool(f) for f in flagged), len(flagged), "traced graphs hold a refused node",
                                    "int() + capture on graphs whose node Inductor's cudagraph check refuses",
                                    **_where(res, traced)))
        return _no_graph_rows(res, f"int {_cpu_note(res, 'int')}; item {_cpu_note(res, 'item')}", **where)
    int_classes = [_captured(res, r) for r in rows]
    item_rows = _ro_rows(res, variant="item", capture_scalar_outputs=True)
    item_by = {case_setting(r): _captured(res, r) for r in item_rows}
    failed = _failed(res, mode="reduce-overhead", **where)
    evidence = (f"int+capture: {_describe(res, rows)}. item+capture: {_describe(res, item_rows) or 'not run'}"
                + (f"; {_ended(failed)}" if failed else ""))
    full = [c == "full" for c in int_classes]
    same = all(item_by.get(case_setting(r)) == c for r, c in zip(rows, int_classes))
    if not any(full):
        verdict = "refuted"
        if same:
            evidence += ". int() captures exactly as .item() does: the switch to int() changes nothing"
    elif all(full) and not any(item_by.get(case_setting(r)) == "full" for r in rows):
        verdict = "confirmed"
    elif all(full):
        verdict = "partly"
        evidence += (" — it holds in part: int() gets full CUDA graphs (no skipping), but .item() gets them too, so "
                     "the replacement enables nothing")
    else:
        verdict = "partly"
        evidence += (" — it holds in part: full CUDA graphs with " + ", ".join(case_setting(r) for r, f in zip(rows, full) if f)
                     + ", not with " + ", ".join(case_setting(r) for r, f in zip(rows, full) if not f))
    return Judgement(verdict, evidence, {"int": int_classes, "item": item_by}, run=_run(res, rows),
                     figure=count_figure(sum(full), len(full), "int() cases fully graphed",
                                         "int() + capture on cases whose decode step replays one CUDA graph (input "
                                         "copies aside)", **_where(res, rows)))


def judge_int_no_sync(res: Results) -> Judgement:
    """int() under capture_scalar_outputs forces no host sync: stream syncs in its compiled decode steps (CUDA)."""
    rows = [r for r in res.ok(variant="int", capture_scalar_outputs=True) if r["mode"] != "eager"]
    traced = [r for r in _traced(res, "int", True) if "breaks_1call" in r]
    dynamo = (f"Dynamo {'traces' if traced and not any(r['breaks_1call'] for r in traced) else 'breaks the graph at'} "
              f"int() with capture on ({', '.join(str(r['breaks_1call']) for r in traced) or '-'} graph breaks, "
              f"{', '.join(str(r.get('aten_scalar_reads')) for r in traced) or '-'} aten._local_scalar_dense in the "
              "traced graph, as .item()'s)")
    if res.device == "cpu" or not any("stream_syncs" in r for r in rows):
        return Judgement("needs_cuda", f"{dynamo}; whether that read synchronises needs a CUDA stream", basis="none",
                         run=_run(res, []))
    rows = [r for r in rows if "stream_syncs" in r]
    syncs = _syncs(rows)
    text = (f"{sum(s > 0 for s in syncs)}/{len(syncs)} compiled int()+capture cases synchronise the stream in a decode "
            f"step ({', '.join(f'{case_label(r)}: {s}' for r, s in zip(rows, syncs))}); {dynamo}")
    verdict = all_none_some(sum(s == 0 for s in syncs), len(syncs))
    if verdict == "partly":
        text += " — it holds in part: no sync in " + ", ".join(case_label(r) for r, s in zip(rows, syncs) if not s)
    return Judgement(verdict, text, {"syncs": syncs}, run=_run(res, rows),
                     figure=count_figure(sum(s == 0 for s in syncs), len(syncs), "int() cases without a sync",
                                         "compiled int() + capture on cases with no stream sync in a decode step",
                                         **_where(res, rows)))


def judge_mutated_inputs(res: Results) -> Judgement:
    """'skipping cudagraphs due to mutated inputs': (a) seen for cache updates, (b) okay: the step is still graphed."""
    probe = [p for p in res.probe if p.get("status") == "ok"]
    if res.device == "cpu":
        return _no_graph_rows(res, "the message comes from CUDA graph trees")
    if not probe:
        return Judgement("error", f"the mutation probe did not run: "
                         f"{res.probe[0].get('error') if res.probe else 'not asked for'}", basis="none")
    run = _run(res, _ro_rows(res), mode=["reduce-overhead"])
    in_model = [r for r in _ro_rows(res) if any("mutated inputs" in m for m in r.get("skip_messages") or [])]
    hits = [p for p in probe if p.get("mutated-input skips")]
    parts = "; ".join(f"cache passed as {p['cache']}: {p.get('mutated-input skips')} mutated-input skips, "
                      f"{p.get('graph_launches')} graph / {p.get('kernel_launches')} kernel launches"
                      for p in probe)
    text = f"{len(in_model)} of {len(_ro_rows(res))} model cases (cache in module buffers) log it; probe: {parts}"
    where = _where(res, _ro_rows(res), mode=["reduce-overhead"])
    if not in_model and not hits:
        return Judgement("not_reproduced", text, {}, run=run,
                         figure=count_figure(0, len(_ro_rows(res)) + len(probe), "cases log it", "model and probe "
                                             "cases that log 'skipping cudagraphs due to mutated inputs'", **where))
    logged = [(f"the probe's cache passed as {p['cache']}", p.get("graph_launches", 0)) for p in hits]
    logged += [(case_label(r), r.get("graph_launches", 0)) for r in in_model]
    ungraphed = [name for name, launches in logged if not launches]
    figure = count_figure(len(logged) - len(ungraphed), len(logged), "steps still graphed", "steps that log "
                          "'mutated inputs' and still replay CUDA graphs", **where)
    if not ungraphed:
        return Judgement("confirmed", text + " — every step that logs it is still replayed from CUDA graphs", {},
                         run=run, figure=figure)
    return Judgement("partly", text + " — it holds in part: (a) the message comes from cache updates ("
                     + ", ".join(name for name, _ in logged) + "); (b) fails: no CUDA graph is launched in the step of "
                     + ", ".join(ungraphed), {"ungraphed": ungraphed}, run=run, figure=figure)


def _on_toto(res: Results, judge: Any) -> Judgement | None:
    """The claim judged on Toto (judge_toto), on the route where its CUDA graphs are enabled, where this run has the
    seed's Toto case; None where it has not."""
    row = judge_toto.seed_row(res)
    if row is None:
        return None
    return judge_toto.unavailable(res, row) or judge_toto.judged_on_route(res, None, judge)


def _full_graph_rows(res: Results) -> list[dict[str, Any]]:
    """reduce-overhead rows with the seed's capture setting whose decode step is one replayed CUDA graph."""
    return [r for r in _ro_rows(res, capture_scalar_outputs=True) if _captured(res, r) == "full"]


def _rounds(row: dict[str, Any]) -> dict[str, Any] | None:
    rounds = row.get("rounds")
    return rounds if isinstance(rounds, dict) and rounds.get("graphs") and rounds.get("default") else None


def _timed_in_turn(res: Results, claim: str) -> tuple[list[dict[str, Any]], Judgement | None]:
    """The full-graph rows with rounds timed in turn, or the Judgement that says why there are none."""
    if not _ro_rows(res):
        return [], _no_graph_rows(res, "no CUDA graphs to time")
    full = _full_graph_rows(res)
    if not full:
        return [], Judgement("inconclusive", "no reduce-overhead case with capture on captured full CUDA graphs, so "
                             f"there is no with-graphs time for {claim}", run=_run(res, _ro_rows(res)))
    timed = [r for r in full if _rounds(r)]
    if not timed:
        errors = sorted({str(r.get("rounds_error")) for r in full if r.get("rounds_error")})
        return [], Judgement("inconclusive", f"the full-CUDA-graph cases ({', '.join(case_label(r) for r in full)}) were "
                             "not timed in turn with the default compile (" + ("; ".join(errors) if errors else
                             "this run timed every case apart, rounds=0 or an older kit") + "): ratios of cases timed "
                             "apart cannot decide a timing claim", run=_run(res, full))
    return timed, None


def judge_speedup(res: Results) -> Judgement:
    """Later forecasts with full CUDA graphs against the default compile of the same variant and settings, round by
    round (timed in turn), against the ledger's band: every round inside confirms, every round outside refutes, rounds
    on both sides of an edge leave it inconclusive. On Toto where this run has it (judge_toto)."""
    if on_toto := _on_toto(res, judge_toto.judge_speedup):
        return on_toto
    timed, why = _timed_in_turn(res, "the speed-up")
    if why:
        return why
    lo, hi = band_of("cuda_graphs.speedup_2_5x")
    per = {case_label(r): timing.round_ratios(_rounds(r)["default"]["median_ms"], _rounds(r)["graphs"]["median_ms"])
           for r in timed}
    pooled = [v for ratios in per.values() for v in ratios]
    verdict = band(pooled, lo, hi)
    cfg = res.config
    words = _rows_words(timed)
    text = (f"default compile / reduce-overhead forecast time, round by round (timed in turn), with {words} "
            f"(d_model={cfg.d_model}, n_layers={cfg.n_layers}, batch={cfg.batch}): "
            + "; ".join(f"{k}: {', '.join(f'{v:.2f}' for v in ratios)}×" for k, ratios in per.items())
            + f"; the seed's band {lo:g}–{hi:g}×"
            + (" — rounds fall on both sides of a band edge" if verdict == "inconclusive" else ""))
    return Judgement(verdict, text, {"ratios": per}, run=_run(res, timed),
                     figure=rounds_figure(pooled, "×", "forecast time, default compile / reduce-overhead",
                                          **_graphed_where(res, timed)))


def judge_first_inference(res: Results) -> Judgement:
    """First forecast with full CUDA graphs (compile included) against the ledger's band; cold-process cases preferred.
    On Toto, compiled cold, where this run has it (judge_toto)."""
    if on_toto := _on_toto(res, judge_toto.judge_first_inference):
        return on_toto
    if not _ro_rows(res):
        cpu = [r["first_ms"] / 1e3 for r in res.ok(mode="default")]
        return _no_graph_rows(res, f"default-compile first calls {', '.join(f'{s:.1f}' for s in cpu)} s")
    rows = [r for r in _full_graph_rows(res) if "first_ms" in r]
    if not rows:
        return Judgement("inconclusive", "no reduce-overhead case with capture on captured full CUDA graphs: no "
                         "first inference with CUDA graphs enabled to time", run=_run(res, _ro_rows(res)))
    cold = [r for r in rows if r.get("compiled_before_in_child") == 0] or rows
    firsts = sorted(r["first_ms"] / 1e3 for r in cold)
    lo, hi = band_of("cuda_graphs.first_inference_60s")
    verdict = band(firsts, lo, hi)
    text = (f"first forecast with CUDA graphs: {', '.join(f'{s:.1f}' for s in firsts)} s ("
            f"{'cases whose compile came first in their process' if cold is not rows else 'every full-graph case'}; "
            f"{sum(bool(r.get('fxgraph_cache_hit')) for r in cold)}/{len(cold)} hit the FX graph cache) vs a steady "
            f"{min(r['median_ms'] for r in cold):.2f} ms; the seed's band {lo:g}–{hi:g} s, for Toto")
    measures = "first forecast with reduce-overhead, compile included"
    figure = (rounds_figure(firsts, "s", measures, **_graphed_where(res, cold)) if len(firsts) > 1
              else one_figure(firsts[0], "s", measures, **_graphed_where(res, cold)))
    return Judgement(verdict, text, {"first_s": firsts}, run=_run(res, cold), figure=figure)


def judge_memory(res: Results) -> Judgement:
    """Peak CUDA memory with full CUDA graphs against the default compile of the same variant and settings: each
    pair 'slightly higher' when the ratio is above the band's lo and at most its hi. On Toto where this run has it."""
    if on_toto := _on_toto(res, judge_toto.judge_memory):
        return on_toto
    if not _ro_rows(res):
        return _no_graph_rows(res, "peak memory of CUDA graphs needs CUDA")
    rows = [r for r in _full_graph_rows(res) if "peak_mem_bytes" in r]
    pairs = []
    for r in rows:
        base = [d for d in res.ok(variant=r["variant"], mode="default", capture_scalar_outputs=r["capture_scalar_outputs"])
                if "peak_mem_bytes" in d]
        if base:
            pairs.append((r, base[0]["peak_mem_bytes"], r["peak_mem_bytes"]))
    if not pairs:
        return Judgement("inconclusive", "no full-CUDA-graph case with capture on has a default-compile twin with a "
                         "measured peak", run=_run(res, rows))
    lo, hi = band_of("cuda_graphs.memory_slightly_more")
    ratios = [ro / max(1, d) for _, d, ro in pairs]
    inside = [lo < v <= hi for v in ratios]
    verdict = all_none_some(sum(inside), len(inside))
    text = ("peak CUDA memory above the model's, reduce-overhead / default compile: "
            + "; ".join(f"{case_label(r)}: {ro / 2**20:.2f} vs {d / 2**20:.2f} MiB ({v:.2f}×)"
                        for (r, d, ro), v in zip(pairs, ratios))
            + f"; 'slightly higher': above {lo:g}× and at most {hi:g}×")
    if verdict == "partly":
        text += " — it holds in part: only for " + ", ".join(case_label(r) for (r, _, _), i in zip(pairs, inside) if i)
    graphed = [p[0] for p in pairs]
    return Judgement(verdict, text, {"ratios": ratios}, run=_run(res, graphed),
                     figure=extreme_figure(ratios, "×", "peak CUDA memory, reduce-overhead / default compile",
                                           **_graphed_where(res, graphed)))


def judge_consistent_latency(res: Results) -> Judgement:
    """Relative spread (p90 − p10) / median of single forecasts, each timed alone, default compile's over full CUDA
    graphs', all calls of a case's rounds (timed in turn) pooled, against measures.SPREAD_BAND, with resamples of
    whole rounds (measures.spread_decision); per timed case, then combined. On Toto where this run has it (judge_toto)."""
    toto = judge_toto.seed_row(res)
    if toto is not None and judge_toto.fully_graphed(res):
        return judge_toto.judged_on_route(res, None, judge_toto.judge_consistent_latency)
    timed, why = _timed_in_turn(res, "the spread")
    if why:
        return why
    with_calls = [r for r in timed if _rounds(r).get("per_call_ms")]
    if not with_calls:
        return Judgement("inconclusive", "the rounds of " + ", ".join(map(case_label, timed)) + " have no single "
                         "forecasts timed in turn (an older kit kept per-round figures only)", run=_run(res, timed))
    decided = {case_label(r): spread_decision(_rounds(r)["per_call_ms"]) for r in with_calls}
    text = "; ".join(f"{case_label(r)}: " + judge_toto.spread_evidence("single forecasts", "full CUDA graphs",
                                                                       _rounds(r), decided[case_label(r)][1])
                     for r in with_calls)
    found = judge_toto.compile_finding(res, toto) if toto is not None else None
    if toto is not None:  # the claim names no model: why Toto does not decide is told, the kit's forecaster decides
        why_not = judge_toto.failure(toto, torch_release=str(res.stack.get("torch")))
        partial, _ = judge_toto.graphed_route(res)
        if partial is not None:
            why_not = (f"{why_not or 'its capture-on case ran'}; with capture off its decode step is "
                       f"{judge_toto.capture(partial.get('reduce_overhead') or {}, partial.get('default'))}, not the "
                       "full capture the claim is about")
        text += f"; Toto does not decide it: {why_not}"
    ratios = {k: shares["value"] for k, (_, shares) in decided.items()}
    verdict = combine([v or "inconclusive" for v, _ in decided.values()], len(timed))
    measures = f"{judge_toto.spread_name()} of single forecasts, default compile's over reduce-overhead's"
    figure = (pooled_figure(ratios[case_label(with_calls[0])], "×", measures,
                            len(_rounds(with_calls[0])["per_call_ms"]["graphs"]), **_graphed_where(res, with_calls))
              if len(with_calls) == 1 else
              extreme_figure(ratios.values(), "×", measures + ", all rounds pooled per case", largest=False,
                             **_graphed_where(res, with_calls)))
    return Judgement(verdict, text, {"spread_ratios": ratios}, run=_run(res, timed), figure=figure,
                     findings=(found,) if found else ())


def judge_accuracy(res: Results) -> Judgement:
    """int() and .item() give identical forecasts: bitwise in eager, and int vs item under the same compile mode and
    setting. Equal within atol but not bitwise is the statement in part (accuracy unchanged, results not identical)."""
    eager = {r["variant"]: r for r in res.ok(mode="eager")}
    if "item" not in eager or "int" not in eager:
        return Judgement("error", "the eager item/int cases did not both run", basis="none")
    bitwise = eager["item"]["outputs"] == eager["int"]["outputs"]
    compiled = [r for r in res.rows if r["status"] == "ok" and r["mode"] != "eager"]
    pairs = []  # the fix against the original, case by case: int vs item under the same mode and setting
    for r in compiled:
        if r["variant"] == "int":
            twin = [i for i in res.ok(variant="item", mode=r["mode"]) if case_setting(i) == case_setting(r)]
            if twin:
                pairs.append((r, max_abs_diff(row_outputs(r), row_outputs(twin[0]))))
    deltas = [max_abs_diff(row_outputs(eager["int"]), row_outputs(eager["item"]))] + [d for _, d in pairs]
    worst = max(compiled, key=lambda r: max(r["max_abs_first"], r["max_abs_last"])) if compiled else None
    evidence = (f"eager int vs item bitwise equal: {bitwise}; compiled int vs item (same mode/setting) max |Δ| "
                f"{_fmt(max((d for _, d in pairs), default=None))} over {len(pairs)} pairs"
                + (f"; worst compiled vs its eager reference {max(worst['max_abs_first'], worst['max_abs_last']):.3g} "
                   f"({case_label(worst)}), which compiling changes, not the fix" if worst else ""))
    if all(d == 0 for d in deltas) and bitwise:
        verdict = "confirmed"
    elif max(deltas) > res.atol:
        verdict = "refuted"
    else:
        verdict = "partly"
        evidence += f" — it holds in part: within atol {res.atol:g} (accuracy unchanged), but not identical"
    compared = [eager["int"], eager["item"]] + [r for r, _ in pairs]
    return Judgement(verdict, evidence, {"eager_bitwise": bitwise, "fix_vs_item": [d for _, d in pairs]},
                     run=_run(res, compared),
                     figure=extreme_figure(deltas, "abs. difference", "int() against .item() forecasts, in eager "
                                           "and under each compile mode and setting", **_where(res, compared)))


def judge_tensor_position(res: Results) -> Judgement:
    """A tensor write position gives full CUDA graphs with no host sync in the decode step."""
    rows = _ro_rows(res, variant="tensor")
    if not rows:
        syncs = [r.get("scalar_reads") for r in res.ok(variant="tensor", mode="default")]
        return _no_graph_rows(res, f"tensor {_cpu_note(res, 'tensor')}; scalar reads per compiled step {syncs}",
                              variant="tensor")
    good = [_captured(res, r) == "full" and not r.get("stream_syncs") for r in rows]
    verdict = all_none_some(sum(good), len(good))
    details = "; ".join(f"{case_setting(r)}: {_captured(res, r)}, "
                        f"{r.get('graph_launches')} graph / {r.get('kernel_launches')} kernel launches, "
                        f"{r.get('stream_syncs')} stream syncs, {r.get('scalar_reads')} scalar reads per step"
                        for r in rows)
    text = f"tensor position with reduce-overhead: {details}"
    if verdict == "partly":
        text += " — it holds in part: only with " + ", ".join(case_setting(r) for r, g in zip(rows, good) if g)
    return Judgement(verdict, text, {"full": good}, run=_run(res, rows),
                     figure=count_figure(sum(good), len(good), "tensor cases fully graphed, no sync",
                                         "tensor-position cases replaying one CUDA graph (input copies aside) with no "
                                         "stream sync", **_where(res, rows)))


JUDGES = {
    "cuda_graphs.item_skips": judge_item_skips,
    "cuda_graphs.item_local_scalar_dense": judge_item_local_scalar_dense,
    "cuda_graphs.item_syncs": judge_item_syncs,
    "cuda_graphs.item_capture_scalar": judge_item_capture_scalar,
    "cuda_graphs.partition_non_gpu_ops": judge_partition_non_gpu_ops,
    "cuda_graphs.int_enables": judge_int_enables,
    "cuda_graphs.int_no_sync": judge_int_no_sync,
    "cuda_graphs.mutated_inputs_expected": judge_mutated_inputs,
    "cuda_graphs.speedup_2_5x": judge_speedup,
    "cuda_graphs.first_inference_60s": judge_first_inference,
    "cuda_graphs.memory_slightly_more": judge_memory,
    "cuda_graphs.consistent_latency": judge_consistent_latency,
    "cuda_graphs.accuracy_unchanged": judge_accuracy,
    "cuda_graphs.tensor_position": judge_tensor_position,
}


def judge(found: Any, res: Results) -> pd.DataFrame:
    """Compute and record every claim's verdict from the measured rows; a judge that breaks records `error`."""
    return found.judge_all(JUDGES, res)
