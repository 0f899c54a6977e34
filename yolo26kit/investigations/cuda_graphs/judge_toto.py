"""CUDA graphs: the cost claims judged on Toto's own code at its real size (toto_measure rows), the seed's fix
(`seed_int`) with TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1 as the seed ran it.

The seed's cost figures are what happens *with CUDA graphs enabled*. Where the seed's setting does not compile, that
failure is a finding of its own (a compiler bug on this torch), never a refutation of the figures: the claims are
judged on the route where Toto's decode step does replay CUDA graphs, the same fix with capture_scalar_outputs off
(the scalar read breaks the graph and the pieces are graphed), named in the conditions; where no route enables them
the claims are undecided with the compiler failure named (verdicts.unmet)."""

from __future__ import annotations

import math
from typing import Any

import torch

from ...conclusion import clip
from ... import findings
from ...findings import band_of
from ...verdicts import (MARGIN, Finding, Judgement, band, band_decision, figure_conditions, one_figure, pooled_figure,
                         rounds_figure, unmet)
from .conclude import graphs_words
from .measure import capture_class
from .measures import SPREAD_BAND, paired_rounds, pooled_spread_ratio, spread, spread_decision, spread_kind

SEED_VARIANT = "seed_int"
MIB = 2 ** 20
SEED_WORDS = {"speedup": "×2–5", "first": "~60 s (30–120 s)", "memory": "slightly more (+200–500 MB read as "
              "'slightly' for a 151 M-parameter model)"}


def seed_row(res: Any) -> dict[str, Any] | None:
    """The Toto row of the seed's fix with the seed's setting (capture_scalar_outputs on), if it ran."""
    rows = [r for r in res.toto if r.get("variant") == SEED_VARIANT and r.get("capture_scalar_outputs", True)]
    return rows[0] if rows else None


def beside_row(res: Any) -> dict[str, Any] | None:
    """The seed's fix with capture_scalar_outputs off (the kit's variant: the scalar read breaks the graph and the
    pieces are graphed), where it ran with reduce-overhead: its figures are shown beside, never judged."""
    rows = [r for r in res.toto if r.get("variant") == SEED_VARIANT and r.get("capture_scalar_outputs") is False]
    return rows[0] if rows and failure(rows[0]) is None else None


def _run(res: Any, row: dict[str, Any]) -> dict[str, Any]:
    """The conditions these verdicts rest on: Toto, reduce-overhead, the capture setting and how much of the decode
    step it replays as CUDA graphs (`capture`), this device and torch."""
    return {"device": torch.device(res.device).type, "torch": str(res.stack.get("torch", "unknown")),
            "backend": "torch.compile", "model": "Toto", "mode": ["reduce-overhead"],
            "capture_scalar_outputs": [bool(row.get("capture_scalar_outputs", True))],
            "capture": capture(row.get("reduce_overhead") or {}, row.get("default")),
            "toto-ts": str(res.stack.get("toto-ts", "unknown"))}


def capture(sub: dict[str, Any], baseline: dict[str, Any] | None = None) -> str:
    """How much of a decode step replays as CUDA graphs, by the kit's one rule (measure.capture_class, the default
    compile's loose launches as the baseline): "full", else "partial: …" or "none: …" with the profile's counts;
    "unknown" where the step was not profiled."""
    if sub.get("graph_launches") is None or sub.get("kernel_launches") is None:
        return "unknown"
    kind = capture_class({"status": "ok", "mode": "reduce-overhead", **sub}, (baseline or {}).get("kernel_launches"))
    if kind == "full":
        return "full"
    return (f"{kind}: {sub['graph_launches']} graph replays, {sub['kernel_launches']} kernel launches outside graphs, "
            f"{sub.get('scalar_reads', 0)} scalar reads, {sub.get('graph_breaks')} graph breaks per decode step")


def _torch(res: Any) -> str:
    return str(res.stack.get("torch", "unknown"))


def _size(row: dict[str, Any]) -> str:
    r = row.get("run") or {}
    return (f"Toto (toto-ts 0.2.0, Toto-Open-Base-1.0 configuration, {row.get('parameters', 0) / 1e6:.0f} M "
            f"parameters, batch {r.get('batch')}, context {r.get('context')}, {r.get('steps')} patches forecast)")


def unavailable(res: Any, row: dict[str, Any]) -> Judgement | None:
    """An `error` verdict where Toto could not be built at all (toto-ts or a module it imports missing): the kit's
    setup, not Toto, failed."""
    if row.get("status") == "ok" or "TotoUnavailable" not in str(row.get("error")):
        return None
    return Judgement("error", f"Toto was not run: {clip(row.get('error'), 200)}", basis="none", run=_run(res, row))


def failure(row: dict[str, Any] | None, mode: str = "reduce_overhead", torch_release: str = "") -> str | None:
    """Why the seed's case has no figure for `mode`: the child's or the mode's error and where, on which torch;
    None if it ran."""
    if row is None:
        return None
    on = f" on torch {torch_release}" if torch_release else ""
    if row.get("status") != "ok":
        return f"the Toto case ended {row.get('status')}{on} ({clip(row.get('error'), 200)})"
    sub = row.get(mode) or {}
    if sub.get("status") == "ok":
        return None
    where = f" at {sub['where']}" if sub.get("where") else ""
    return (f"{mode.replace('_', '-')} compile of {_size(row)} failed{on} after {sub.get('seconds', 0):.0f} s: "
            f"{clip(sub.get('error'), 220)}{where}")


def _where(res: Any, row: dict[str, Any]) -> dict[str, Any]:
    """A Toto figure's conditions: model, batch, device, mode, the capture setting and what its decode step replays."""
    sub = row.get("reduce_overhead") or {}
    return figure_conditions(model="Toto", batch=(row.get("run") or {}).get("batch"),
                             device=torch.device(res.device).type, mode="reduce-overhead",
                             capture_scalar_outputs=bool(row.get("capture_scalar_outputs", True)),
                             graph_replays=sub.get("graph_launches"), loose_kernel_launches=sub.get("kernel_launches"),
                             graph_breaks=sub.get("graph_breaks"))


def _graphed(sub: dict[str, Any]) -> str:
    """How much of Toto's decode step replays as CUDA graphs, from its profile and log."""
    skips = sub.get("skip_messages") or []
    return (f"{sub.get('graph_launches')} graph / {sub.get('kernel_launches')} kernel launches and "
            f"{sub.get('scalar_reads')} scalar reads in a decode step, {sub.get('graph_breaks')} graph breaks"
            + (f", skip: {clip(skips[0], 120)}" if skips else ""))


def ran_with_graphs(row: dict[str, Any] | None) -> bool:
    """Whether the seed's Toto case compiled and ran with reduce-overhead."""
    return row is not None and failure(row) is None


def compile_finding(res: Any, row: dict[str, Any]) -> Finding | None:
    """The seed's Toto case failing to compile, as a finding: the error, where in Toto, on which torch, and whether
    the default compile mode with the same setting fails too (then it is the compiler, not CUDA graphs)."""
    why = failure(row, torch_release=_torch(res))
    if why is None or unavailable(res, row) is not None:
        return None
    sub = row.get("reduce_overhead") or {}
    error = str(sub.get("error") or row.get("error") or "")
    default = row.get("default") or {}
    default_says = ("the default compile mode with the same setting fails the same way" if default.get("status") not in
                    (None, "ok") and error.split(":")[0] in str(default.get("error")) else
                    "the default compile mode with the same setting compiles" if default.get("status") == "ok" else
                    "the default compile mode was not tried")
    fid = ("cuda_graphs.toto_compile_max_nameerror" if "name 'Max'" in error else
           "cuda_graphs.toto_tuple_index_symint" if "(got SymInt)" in error else "cuda_graphs.toto_compile_fails")
    return Finding(fid, f"Toto does not compile with capture_scalar_outputs=True on torch {_torch(res)}",
                   f"{why}; {default_says}",
                   f"{_size(row)}, torch.compile(mode='reduce-overhead') with "
                   "torch._dynamo.config.capture_scalar_outputs=True, the seed's int() patch of Toto's KV cache")


def graphed_route(res: Any) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """The Toto row the cost claims are judged on, and the conditions shown not to matter for it: the seed's case
    where it ran with reduce-overhead; else the same fix with capture_scalar_outputs off, where it ran and its decode
    step replays CUDA graphs; (None, {}) where no route enables them."""
    seed = seed_row(res)
    if seed is not None and ran_with_graphs(seed):
        return seed, {}
    off = beside_row(res)
    sub = (off or {}).get("reduce_overhead") or {}
    if off is None or not sub.get("graph_launches"):
        return None, {}
    if capture(sub, off.get("default")) != "full":
        # graphs between loose launches and graph breaks are not the seed's "CUDA graphs fully enabled": the route is
        # measured and shown, and the `capture` condition keeps its verdicts undecided
        return off, {}
    why = (f"the seed's figures are for Toto with CUDA graphs fully enabled; with capture on Toto does not compile on "
           f"torch {_torch(res)} (a finding of this run), with it off the same fix replays its whole decode step as "
           f"{sub['graph_launches']} CUDA graph(s): the seed's outcome on another route")
    return off, {"capture_scalar_outputs": why}


def fully_graphed(res: Any) -> bool:
    """Whether Toto's graphed route replays its whole decode step as CUDA graphs (the seed's outcome)."""
    row, _ = graphed_route(res)
    return row is not None and capture(row.get("reduce_overhead") or {}, row.get("default")) == "full"


def judged_on_route(res: Any, claim: Any, judge: Any) -> Judgement:
    """A cost claim judged on `graphed_route`, carrying the seed case's compile failure as a finding; undecided with
    that failure named where no route enables CUDA graphs."""
    seed = seed_row(res)
    found = compile_finding(res, seed) if seed is not None else None
    row, irrelevant = graphed_route(res)
    if row is None:
        why = failure(seed, torch_release=_torch(res)) if seed is not None else "no Toto case ran"
        return unmet(f"no route enables CUDA graphs on Toto here: {why}", run=_run(res, seed or {}),
                     findings=[found] if found else [])
    judged = judge(res, row)
    return Judgement(judged.verdict, judged.evidence, judged.data, judged.basis, judged.run,
                     {**judged.irrelevant, **irrelevant}, judged.figure, judged.premise,
                     (*judged.findings, *([found] if found else [])))


def judge_speedup(res: Any, row: dict[str, Any]) -> Judgement:
    """Forecasts with reduce-overhead against the default compile of a twin, rounds timed call by call in turn until
    the rounds rule decides the seed's band; a failed compile refutes the speed-up the fix was to bring."""
    lo, hi = band_of("cuda_graphs.speedup_2_5x")
    why = failure(row, torch_release=_torch(res))
    if why:
        return unmet(why, run=_run(res, row))
    rounds = row.get("rounds") or {}
    speedups = rounds.get("speedups") or []
    if not speedups:
        fail = failure(row, "default") or row.get("rounds_error") or "not timed"
        return Judgement("error", f"{_size(row)} compiled with reduce-overhead but has no rounds against the default "
                         f"compile: {fail}", basis="none", run=_run(res, row))
    verdict = band(speedups, lo, hi)
    summary = rounds.get("summary") or {}
    text = (f"default compile / reduce-overhead forecast time of {_size(row)}, {len(speedups)} rounds of "
            f"{rounds.get('calls_per_round')} forecasts each timed alone, in turn: "
            + ", ".join(f"{v:.2f}" for v in speedups) + f"× (medians {_ms(summary, 'default')} vs "
            f"{_ms(summary, 'graphs')}); {_graphed(row['reduce_overhead'])}; the seed's {SEED_WORDS['speedup']}")
    return Judgement(verdict, text, {"speedups": speedups, "rounds": len(speedups)}, run=_run(res, row),
                     figure=rounds_figure(speedups, "×", "Toto's forecast time, default compile / reduce-overhead",
                                          **_where(res, row)))


def _ms(summary: dict[str, Any], name: str) -> str:
    s = summary.get(name) or {}
    return f"{s['median_ms']:.2f} ms" if "median_ms" in s else "n/a"


def judge_first_inference(res: Any, row: dict[str, Any]) -> Judgement:
    """The first forecast with reduce-overhead, compiled cold (caches off, a fresh cache directory), against the
    seed's band; a cache hit makes the figure not count; a failed compile leaves it undecided (the premise)."""
    lo, hi = band_of("cuda_graphs.first_inference_60s")
    why = failure(row, torch_release=_torch(res))
    if why:
        return unmet(why, run=_run(res, row))
    sub = row["reduce_overhead"]
    first = float(sub.get("first_s", math.nan))
    text = (f"first forecast of {_size(row)} with reduce-overhead: {first:.1f} s, compile included (FX-graph and "
            f"AOTAutograd caches off, a fresh Inductor cache directory: {sub.get('fxgraph_cache_hits')} cache hits); "
            f"default compile's first forecast {row.get('default', {}).get('first_s', math.nan):.1f} s (caches on); "
            f"the seed's {SEED_WORDS['first']}")
    if not sub.get("counts"):
        return Judgement("error", text + " — the compile was not cold, so the figure does not count", basis="none",
                         run=_run(res, row))
    return Judgement(band_decision([first], lo, hi) or "inconclusive", text, {"first_s": first}, run=_run(res, row),
                     figure=one_figure(first, "s", "Toto's first forecast with reduce-overhead, cold compile included",
                                       **_where(res, row)))


def memory_ratio(row: dict[str, Any]) -> tuple[float, float] | None:
    """(peak bytes with CUDA graphs / peak bytes of the default compile, MiB the graphs add), the model's own bytes
    counted on both sides; None without both peaks."""
    ro, de = row.get("reduce_overhead") or {}, row.get("default") or {}
    if "mem_peak_added" not in ro or "mem_peak_added" not in de:
        return None
    base = float(row.get("model_bytes", 0))
    return (base + ro["mem_peak_added"]) / max(1.0, base + de["mem_peak_added"]), \
        (ro["mem_peak_added"] - de["mem_peak_added"]) / MIB


def judge_memory(res: Any, row: dict[str, Any]) -> Judgement:
    """Peak CUDA memory of Toto (weights and KV cache plus what compile and the first forecasts add) with
    reduce-overhead against the default compile: 'slightly higher' is a ratio above the band's lo, at most its hi."""
    lo, hi = band_of("cuda_graphs.memory_slightly_more")
    why = failure(row, torch_release=_torch(res)) or failure(row, "default", _torch(res))
    if why:
        return unmet(why, run=_run(res, row))
    got = memory_ratio(row)
    if got is None:
        return Judgement("error", "the Toto case recorded no CUDA memory peaks", basis="none", run=_run(res, row))
    ratio, added = got
    ro, de = row["reduce_overhead"], row["default"]
    text = (f"peak CUDA memory of {_size(row)}: model {row.get('model_bytes', 0) / MIB:.0f} MiB + "
            f"{ro['mem_peak_added'] / MIB:.0f} MiB with reduce-overhead vs + {de['mem_peak_added'] / MIB:.0f} MiB "
            f"with the default compile ({ratio:.2f}×, {added:+.0f} MiB; reserved "
            f"+{ro.get('mem_reserved_added', 0) / MIB:.0f}"
            f" vs +{de.get('mem_reserved_added', 0) / MIB:.0f} MiB); 'slightly higher': above {lo:g}× and at most "
            f"{hi:g}×; the seed's {SEED_WORDS['memory']}")
    figure = one_figure(ratio, "×", "Toto's peak CUDA memory, reduce-overhead / default compile", **_where(res, row))
    data = {"ratio": ratio, "added_mib": added}
    if bool(ro.get("cold")) != bool(de.get("cold")):
        # each peak includes what its compile allocated, which depends on the cache protocol: seen on an H100, the
        # default compile added 85 MiB compiled from an empty cache and 35 MiB from a warm one, so the ratio moved
        # across 1 between batches of the same code
        return Judgement("inconclusive", f"{text} — the two peaks include their compiles' own allocations under "
                         f"different cache protocols (reduce-overhead {'cold' if ro.get('cold') else 'cached'}, the "
                         f"default compile {'cold' if de.get('cold') else 'cached'}), so their ratio cannot tell what "
                         "CUDA graphs add", {**data, "unlike_compiles": True}, run=_run(res, row), figure=figure)
    verdict = band_decision([ratio], lo, hi) or "inconclusive"
    return Judgement(verdict, text, data, run=_run(res, row), figure=figure)


def judge_consistent_latency(res: Any, row: dict[str, Any]) -> Judgement:
    """Relative spread (p90 - p10) / median of single forecasts, default compile's over reduce-overhead's, each over
    every call of the rounds (timed in turn) pooled, against SPREAD_BAND (CUDA graphs steadier by the margin), with
    resamples of whole rounds (measures.spread_decision). The claim names no model: the caller judges it on the kit's
    forecaster where Toto's CUDA graphs did not run (see ran_with_graphs)."""
    rounds = row.get("rounds") or {}
    if not rounds.get("per_call_ms"):
        return Judgement("inconclusive", f"{_size(row)} has no single forecasts timed in turn: "
                         f"{row.get('rounds_error') or 'not timed'}", basis="none", run=_run(res, row))
    verdict, shares = spread_decision(rounds["per_call_ms"])
    return Judgement(verdict or "inconclusive", spread_evidence(f"single forecasts of {_size(row)}", "reduce-overhead",
                                                                rounds, shares),
                     {"spread_ratio": shares["value"], "spread_ratios": rounds.get("spread_ratios") or [],
                      "resamples_agreeing": max(shares["inside"], shares["outside"])}, run=_run(res, row),
                     figure=pooled_figure(shares["value"], "×", f"Toto's {spread_name()} of single forecasts, default "
                                          "compile's over reduce-overhead's", len(rounds["per_call_ms"]["graphs"]),
                                          **_where(res, row)))


def spread_name() -> str:
    """The spread the consistency claim is judged on, in words (the ledger's `spread.kind`)."""
    return {"relative": "relative spread (p90 − p10) / median",
            "absolute": "spread p90 − p10 in milliseconds"}[spread_kind()]


def spread_evidence(what: str, graphed: str, rounds: dict[str, Any], shares: dict[str, float]) -> str:
    """The consistency claim's evidence: the judged spread (the ledger's, and why), both pooled spreads, their ratio,
    the resamples and the rounds' own ratios, and the other spread beside, not judged."""
    per_call, lo, kind = rounds["per_call_ms"], SPREAD_BAND[0], spread_kind()
    g, d = (spread([v for calls in per_call[k] for v in calls]) for k in ("graphs", "default"))
    per_round = [v for v in map(pooled_spread_ratio, ([pair] for pair in paired_rounds(per_call))) if not math.isnan(v)]
    judged = (f"{d['rel_spread']:.1%} with the default compile vs {g['rel_spread']:.1%} with {graphed}"
              if kind == "relative" else f"{_ms_span(d)} with the default compile vs {_ms_span(g)} with {graphed}")
    beside = (f"In milliseconds p90 − p10 is {_ms_span(d)} with the default compile vs {_ms_span(g)} with {graphed} "
              "(not judged)" if kind == "relative" else
              f"Relative to the median it is {d['rel_spread']:.1%} vs {g['rel_spread']:.1%} (not judged)")
    return (f"{spread_name()} of {what}, {len(per_call['graphs'])} rounds of {rounds.get('calls_per_round')} calls "
            f"each timed in turn, all calls pooled: {judged} ({shares['value']:.2f}×; "
            f"{max(shares['inside'], shares['outside']):.0%} of resamples of whole rounds on one side of "
            f"{lo:g}×, {shares['edge']:.0%} within {MARGIN:.0%} of it; round by round "
            + (f"{min(per_round):.2f}–{max(per_round):.2f}×" if per_round else "none")
            + f"); 'more consistent': at least {lo:g}× (steadier with CUDA graphs by the rules' {MARGIN:.0%} margin, "
            f"an edge kept clear by that margin too); the seed's words mean the {kind} spread: {spread_why()}. "
            f"{beside}")


def spread_why() -> str:
    """Why the consistency claim is judged on its spread, from its ledger entry."""
    entry = findings.ledger_entry("cuda_graphs.consistent_latency")
    return str((entry.get("spread") or {}).get("why") or "the ledger gives no reason").rstrip(".")


def _ms_span(s: dict[str, float]) -> str:
    """p90 − p10 of pooled calls in ms, beside their median."""
    return f"{s['p90_ms'] - s['p10_ms']:.1f} ms (median {s['median_ms']:.1f} ms)"
