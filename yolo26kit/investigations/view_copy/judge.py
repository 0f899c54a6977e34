"""view_copy: one judge per claim of seed 004 and JUDGES; reads measure's results only (never show)."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Callable

import pandas as pd

from ... import verdicts
from ...backends.executorch_cuda_releases import failure_text
from ...bench import timing
from ...verdicts import Judgement, band, combine, count_figure, one_figure, rounds_figure, total_figure
from .measure import (COMPILE_BACKEND, NAMED_SOURCE, PASS_LOCATIONS, VIEW_COPY_OPS, VIEW_OPS, Case, Results, base_op,
                      equivalence_rows, load_release_coverage, pass_changed)


def edge_backend(res: Results) -> str:
    """The back-end whose edge graph the run read: the CUDA back-end's preprocess input, or plain to_edge."""
    sources = {str((res.graph(m) or {}).get("edge_source", "")) for m in res.graphs if res.graph(m)}
    return "executorch-cuda" if sources and all(s.startswith("CudaBackend") for s in sources) else "executorch"


def compile_backend(res: Results, cases: list[Case] | None = None) -> str:
    """How the compiled packages were made (step_compile's `backend`: plain AOT Inductor today)."""
    found = {str(c.code.get("backend", COMPILE_BACKEND)) for c in (cases if cases is not None else res.cases) if c.code}
    return found.pop() if len(found) == 1 else (", ".join(sorted(found)) or COMPILE_BACKEND)


def _no_pass(res: Results) -> Judgement | None:
    if res.pass_info.get("found"):
        return None
    return Judgement("not_reproduced", f"0 view-copy passes found in executorch {res.pass_info.get('executorch')}: "
                     f"none of {', '.join(m + '.' + c for m, c in PASS_LOCATIONS)} imports on this stack.",
                     {"tried": res.pass_info.get("tried")}, run={"backend": edge_backend(res)},
                     figure=count_figure(0, len(PASS_LOCATIONS), "view-copy passes found", "places a view-copy pass "
                                         "can be imported from on this stack", device=res.device))


def judge_replaces_slice_copy(res: Results) -> Judgement:
    """Every non-mutated slice_copy of the back-end's edge graph becomes slice; written-into slices (and probe
    in-place users) stay copies. Confirmed when all of that holds, refuted when no free slice_copy is converted,
    partly otherwise."""
    if (absent := _no_pass(res)) is not None:
        return absent
    nodes = [(m, n) for m in res.graphs if res.graph(m) for n in res.graph(m)["nodes"]
             if base_op(n["op"]) == "slice_copy"]
    if not res.probes.ok:
        return Judgement("error", f"the probe step failed ({res.probes.status}): {res.probes.error}", basis="none")
    free = [n for _, n in nodes if not n["mutating_user"]]
    converted = sum(n["converted"] for n in free)
    wrongly = sum(n["converted"] for _, n in nodes if n["mutating_user"])
    probes = res.probes.value
    probe_ok = all(p["ok"] for p in probes)
    in_place_kept = [p["user"] for p in probes if p["writes_into_slice"] and p["expected"] == "copy" and p["ok"]]
    in_place_total = [p["user"] for p in probes if p["writes_into_slice"]]
    data = {"slice_copy_nodes": len(nodes), "non_mutated": len(free), "became_slice": converted,
            "mutated_converted": wrongly, "probes": probes, "pass": res.pass_info.get("name")}
    text = (f"{res.pass_info.get('name')}: {converted} of {len(free)} non-mutated slice_copy nodes in the back-end's "
            f"edge graphs ({', '.join(sorted({m for m, _ in nodes})) or 'none'}) became aten.slice; in the probe graphs "
            f"{len(in_place_kept)} of {len(in_place_total)} slices written in place "
            f"({', '.join(in_place_total)}) stayed copies and {sum(bool(p['ok']) for p in probes)} of {len(probes)} "
            f"probes did what the pass's rule says")
    run = {"backend": edge_backend(res)}
    figure = count_figure(converted, len(free), "non-mutated slice_copy become views", "non-mutated slice_copy nodes "
                          "of the back-end's edge graphs the pass turns into aten.slice", device=res.device,
                          mode=run["backend"])
    if converted == len(free) and wrongly == 0 and probe_ok:
        return Judgement("confirmed", text, data, run=run, figure=figure)
    if converted == 0 and (free or not probe_ok):
        return Judgement("refuted", text, data, run=run, figure=figure)
    return Judgement("partly", text, data, run=run, figure=figure)


def _code_delta(res: Results, model: str) -> dict[str, Any] | None:
    a, b = res.case(model, True), res.case(model, False)
    if not (a and b and a.code and b.code):
        return None
    ca, cb = a.code["code"], b.code["code"]
    return {"proxy": (cb["proxy"], ca["proxy"]), "copy_calls": (cb["copy_calls"], ca["copy_calls"]),
            "allocations": (cb["allocations"], ca["allocations"]),
            "bytes": (b.code.get("bytes_accessed"), a.code.get("bytes_accessed")),
            "calls": (len(cb["calls"]), len(ca["calls"]))}


SPEED_RULE = ("the seed gives no number, so the claim is about direction: without/with above 1 means the with-pass "
              "package is faster; the rounds rule decides each model (two thirds of the rounds and their median above "
              "1: confirmed, below: refuted, else inconclusive), timed until decided, "
              f"{verdicts.MIN_ROUNDS} to {verdicts.MAX_ROUNDS} rounds")
# Nodes whose generated code the CUDA back-end's own options (max-autotune, Triton-only templates) choose differently
# from Inductor's defaults.
TUNED_OPS = ("mm", "addmm", "bmm", "baddbmm", "convolution", "_convolution")


def _tuned_counts(case: Case | None) -> dict[str, int] | None:
    """How many matmul/convolution nodes entered Inductor's post-grad passes for a compiled case (None: unknown)."""
    graph = (case.code or {}).get("post_grad_before") if case is not None else None
    if graph is None:
        return None
    counts: Counter = Counter()
    for op, n in graph.items():
        if base_op(op) in TUNED_OPS:
            counts[base_op(op)] += n
    return dict(counts)


def backend_irrelevance(res: Results, models: list[str]) -> str | None:
    """Why compiling the back-end's edge graph with plain AOTI answers for the CUDA back-end, from what was measured:
    its options differ in tuning matmul/convolution nodes — the pass must leave their counts alike — and in refusing
    ATen fallbacks — the with-pass packages must have none. None when either does not hold (the condition decides)."""
    parts = []
    for model in models:
        with_, without = res.case(model, True), res.case(model, False)
        tuned_with, tuned_without = _tuned_counts(with_), _tuned_counts(without)
        fallbacks = (with_.code or {}).get("code", {}).get("proxy") if with_ is not None else None
        if tuned_with is None or tuned_with != tuned_without or fallbacks != 0:
            return None
        tuned = ", ".join(f"{k}×{v}" for k, v in sorted(tuned_with.items())) or "no matmul or convolution"
        parts.append(f"{model}: {tuned} with and without the pass, 0 ATen fallbacks with it")
    if not parts:
        return None
    return ("the packages compile the CUDA back-end's own edge graph (its decompositions and its pass) with AOT "
            "Inductor, which the back-end wraps; its options differ in tuning matmul/convolution nodes, which the pass "
            "leaves alike, and in refusing ATen fallbacks, which the with-pass packages do not use (" + "; ".join(parts)
            + ")")


def _replaced(res: Results, model: str) -> int:
    """How many view-copy nodes the pass turned into views in a model's edge graph."""
    return sum(bool(n["converted"]) for n in (res.graph(model) or {}).get("nodes", []))


def _release_run(res: Results, run: dict[str, Any]) -> dict[str, Any]:
    """The run's conditions plus the executorch release whose pass it ran (a condition of every view_copy claim)."""
    return {**run, "executorch": res.pass_info.get("executorch", "")}


def judge_more_efficient(res: Results) -> Judgement:
    """Seed 004: the slice views are more efficient than the slice_copy they replace (the CUDA back-end's code).

    The verdict rests on latency: both packages of a model the pass changed, timed in turn in one process until the
    rounds rule decides (SPEED_RULE). Several models: all confirmed → confirmed, all refuted → refuted, some each →
    partly, any inconclusive → inconclusive. The generated-code metrics (ATen fallbacks, copy-only calls,
    Inductor's bytes) are the supporting data. The run records its device, how the packages were compiled and the
    executorch release; the back-end condition is shown not to matter where `backend_irrelevance` holds."""
    if (absent := _no_pass(res)) is not None:
        return absent
    models = list(dict.fromkeys(c.spec.model for c in res.cases))
    changed = [m for m in models if _replaced(res, m)]
    parts, data, per_model, timed = [], {}, [], {}
    for model in models:
        delta, rounds = _code_delta(res, model), res.rounds(model)
        if model not in changed:
            parts.append(f"{model}: the pass replaced nothing in its edge graph, so it says nothing of the claim")
            continue
        if delta is None:
            parts.append(f"{model}: a compile failed")
            continue
        (pb, pa), (cb, ca), (bb, ba) = delta["proxy"], delta["copy_calls"], delta["bytes"]
        bytes_text = f"Inductor's bytes moved {bb} → {ba}" if bb is not None and ba is not None else "bytes unknown"
        code_text = f"ATen fallbacks via the proxy executor {pb} → {pa}, copy-only calls {cb} → {ca}, {bytes_text}"
        if rounds is None:
            parts.append(f"{model}: timing rounds did not run; {code_text}")
            data[model] = delta
            continue
        ratios = timing.round_ratios(rounds["without pass"]["round_medians_ms"], rounds["with pass"]["round_medians_ms"])
        verdict = band(ratios, 1.0, math.inf)
        per_model.append(verdict)
        timed[model] = ratios
        parts.append(f"{model}: without/with {', '.join(f'{r:.2f}×' for r in ratios)} over {len(ratios)} rounds "
                     f"(median {rounds['without pass']['median_ms']:.3f} → {rounds['with pass']['median_ms']:.3f} ms) "
                     f"→ {verdict}; {code_text}")
        data[model] = {**delta, "ratios": ratios, "rounds_verdict": verdict}
    run = _release_run(res, {"device": res.device, "backend": compile_backend(res)})
    text = (f"Without → with the pass of executorch {run['executorch']} on {res.device} ({run['backend']}): "
            + "; ".join(parts))
    why = backend_irrelevance(res, [m for m in changed if m in data])
    irrelevant = {"backend": why} if why else {}
    if not per_model:
        return Judgement("inconclusive", text + ". No model the pass changed was timed both ways.", data, run=run)
    model, ratios = next(iter(timed.items()))  # the first model the pass changed that was timed both ways
    figure = rounds_figure(ratios, "×", f"{model} step time without / with the pass", model=model,
                           device=res.device, mode=run["backend"])
    return Judgement(combine(per_model, len(changed)), f"{text}. Rule: {SPEED_RULE}.", data, run=run,
                     irrelevant=irrelevant, figure=figure)


# Why a kind that becomes a copy under plain AOTI answers for the CUDA back-end too.
COPIES_ON_ANY_BACKEND = ("a copy-only kernel is a copy under any Inductor options, and an ATen fallback is a kernel the "
                         "CUDA back-end refuses (it fails to lower there): either way the kind needs the pass")


def _remaining(res: Results, models: list[str]) -> Counter:
    """The view-copy nodes left after the pass in the edge graphs of `models`, by op."""
    left: Counter = Counter()
    for model in models:
        g = res.graph(model)
        if g and g["after"]:
            left.update({op: n for op, n in g["after"].items() if base_op(op) in VIEW_COPY_OPS})
    return left


def later_covered(kinds: list[str], release: str) -> list[str]:
    """The kinds among `kinds` that a later executorch release's pass covers (data/releases/view_copy_edge_graphs.json)."""
    later = load_release_coverage()
    if not later or later.get("executorch") == release:
        return []
    return [k for k in kinds if f"aten.{k}" in " ".join(later["mapping"])]


def _later_release_text(kinds: list[str], release: str) -> str:
    """What a later executorch release's pass does with the kinds this run's pass left (data/releases/view_copy_edge_graphs.json:
    the pass run on CPU on the kit's edge graphs), for the kinds it covers."""
    later = load_release_coverage()
    covered = later_covered(kinds, release)
    if not covered:
        return ""
    shown = "; ".join(f"{m}: " + ", ".join(f"{k} {c['before']} → {c['after']}" for k, c in counts.items()
                                            if k in covered)
                      for m, counts in later["models"].items() if any(k in counts for k in covered))
    packages = "; ".join(f"{m}'s AOTI CPU package has {p['without pass']['fallbacks']} ATen fallbacks without the "
                         f"pass ({', '.join(f'{op}×{n}' for op, n in p['without pass']['by_op'].items()) or 'none'}) "
                         f"and {p['with pass']['fallbacks']} with it" for m, p in later.get("aoti_cpu", {}).items())
    return (f"; the pass covers {', '.join(covered)} from executorch {later['executorch']} (not in {release}'s table; "
            f"{later['source']}; that pass run on CPU on the kit's edge graphs: {shown}"
            + (f"; {packages}" if packages else "") + ")")


def judge_other_view_ops(res: Results) -> Judgement:
    """Review question: won't you have to do this for all view ops? Read as: do the other view-copy kinds left by
    the pass become real copies (copy-only kernels or ATen fallbacks) in the back-end's generated code? Judged on the
    models compiled with the pass only: confirmed when every remaining kind does, partly when some do or when none
    does but a later executorch release's pass covers a kind this one leaves (upstream extended it: more, not all);
    refuted when none does (Inductor fuses them away) or none remains; inconclusive when nothing was compiled, or
    when kinds left in models not compiled here were not measured."""
    if (absent := _no_pass(res)) is not None:
        return absent
    if not any(res.graph(m) for m in res.graphs):
        return Judgement("error", "no edge graph was built", basis="none")
    release = str(res.pass_info.get("executorch", ""))
    compiled = [c for c in res.cases if c.with_pass and c.code]
    compiled_models = list(dict.fromkeys(c.spec.model for c in compiled))
    remaining = _remaining(res, compiled_models)
    others = {m: _remaining(res, [m]) for m in res.graphs if m not in compiled_models and res.graph(m)}
    not_measured = "; ".join(f"{m}: {', '.join(f'{op}×{n}' for op, n in left.most_common(6))} left, not compiled "
                             "in this run, so whether they become copies is not measured" for m, left in others.items()
                             if left)
    materialized: Counter = Counter()
    proxies: Counter = Counter()
    for c in compiled:
        for call in c.code["code"]["calls"]:
            hits = [op for op in call["ops"] if base_op(op) in VIEW_COPY_OPS]
            if call["kind"] == "proxy":
                proxies.update(hits or call["ops"])
            elif call["copy_only"]:
                materialized.update(hits)
    kinds = sorted({base_op(op) for op in remaining})
    copied = sorted({base_op(op) for op in (materialized + proxies)} & set(kinds))
    all_left = sorted({base_op(op) for left in [remaining, *others.values()] for op in left})
    data = {"remaining": dict(remaining), "copy_only_calls_by_op": dict(materialized), "proxy_by_op": dict(proxies),
            "kinds": kinds, "kinds_copied": copied, "compiled_models": compiled_models,
            "not_compiled": {m: dict(left) for m, left in others.items()}, "executorch": release}
    top = ", ".join(f"{op}×{n}" for op, n in remaining.most_common(6))
    text = (f"executorch {release}'s pass ({', '.join(res.pass_info.get('mapping', {})) or 'no table'}) leaves "
            f"{sum(remaining.values())} view-copy nodes of {len(kinds)} other kinds in the compiled "
            f"{', '.join(compiled_models) or 'models (none)'} ({top or 'none'})")
    later = _later_release_text(all_left, release)
    tail = (f". {not_measured}" if not_measured else "") + later
    if not compiled:
        return Judgement("inconclusive", text + "; no package was compiled, so whether they become copies is not "
                         f"measured{tail}", data, run=_release_run(res, {"device": res.device,
                                                                           "backend": compile_backend(res)}))
    run = _release_run(res, {"device": res.device, "backend": compile_backend(res, compiled)})
    text += (f"; in the generated code with the pass ({res.device}, {run['backend']}) {sum(materialized.values())} "
             f"copy-only kernel calls and {sum(proxies.values())} ATen fallbacks come from them "
             f"({', '.join(f'{k}×{v}' for k, v in (materialized + proxies).most_common(5)) or 'none'}): "
             f"{len(copied)} of {len(kinds)} kinds become real copies")
    figure = count_figure(len(copied), len(kinds), "kinds become real copies", "view-copy kinds the pass leaves, "
                          "in the generated code with the pass", device=res.device, mode=run["backend"]) if kinds \
        else one_figure(0, "view-copy kinds left", "view-copy kinds the pass leaves in the compiled models",
                        device=res.device, mode=run["backend"])
    if not kinds or not copied:
        why = backend_irrelevance(res, compiled_models)
        irrelevant = {"backend": why} if why else {}
        if extended := later_covered(all_left, release):
            # upstream had to extend the pass to these kinds: more view ops than this release's table, yet not all
            return Judgement("partly", f"{text}{tail} — more than this release's table (a later release adds "
                             f"{', '.join(extended)}), not all (the kinds measured here compile to no copy)",
                             {**data, "later_covered": extended}, run=run, irrelevant=irrelevant, figure=figure)
        unmeasured = sorted(set(all_left) - set(kinds))
        if unmeasured:
            return Judgement("inconclusive", f"{text}{tail} — {', '.join(unmeasured)} left in models not compiled "
                             "here, so whether every kind compiles to no copy is not measured",
                             {**data, "unmeasured": unmeasured}, run=run, irrelevant=irrelevant, figure=figure)
        return Judgement("refuted", text + tail, data, run=run, irrelevant=irrelevant, figure=figure)
    fallback_kinds = sorted({base_op(op) for op in proxies} & set(kinds))
    if fallback_kinds:
        text += (f" ({', '.join(fallback_kinds)} as ATen fallbacks: kernels the CUDA back-end of executorch {release} "
                 "does not have, so there they fail to lower)")
    verdict = "confirmed" if len(copied) == len(kinds) else "partly"
    return Judgement(verdict, text + tail, data, run=run, irrelevant={"backend": COPIES_ON_ANY_BACKEND},
                     figure=figure)


def judge_reinplace_misses_slice_copy(res: Results) -> Judgement:
    """Seed 004: Inductor's reinplace pass reverts most of the functionalization but not slice_copy.

    Two parts, both read from packages compiled without the pass: (a) slice_copy survives Inductor's post-grad
    passes (reinplace among them) as a copy; (b) those passes undo most other view copies. Confirmed when both
    hold, refuted when slice_copy does not survive, partly when it survives but the other view copies were not
    undone by the post-grad passes (the evidence says what undid them, from the graph before the passes)."""
    models = [c for c in res.cases if not c.with_pass and c.code and c.code.get("post_grad_before") is not None]
    if not models:
        return Judgement("inconclusive", "no package compiled without the pass recorded Inductor's post-grad graph",
                         basis="none")
    parts, data, verdicts = [], {}, []
    for c in models:
        g = res.graph(c.spec.model) or {}
        edge = g.get("before", {})
        pre, post = c.code["post_grad_before"], c.code["post_grad_after"] or {}
        n_edge = sum(n for op, n in edge.items() if base_op(op) == "slice_copy")
        n_post = sum(n for op, n in post.items() if base_op(op) == "slice_copy")
        kinds = sorted({base_op(op) for op in edge if base_op(op) in VIEW_COPY_OPS and base_op(op) != "slice_copy"})
        per_kind = {k: (sum(n for op, n in edge.items() if base_op(op) == k),
                        sum(n for op, n in pre.items() if base_op(op) == k),
                        sum(n for op, n in post.items() if base_op(op) == k)) for k in kinds}
        others_edge = sum(e for e, _, _ in per_kind.values())
        others_pre = sum(p for _, p, _ in per_kind.values())
        others_post = sum(p for _, _, p in per_kind.values())
        watched = {op for op in set(pre) | set(post) if base_op(op) in VIEW_COPY_OPS + VIEW_OPS
                   or "index_put" in op or "scatter" in op}
        changed = sum(abs(pre.get(op, 0) - post.get(op, 0)) for op in watched)
        code = c.code["code"]
        slice_calls = sum(1 for call in code["calls"] if any(base_op(op) == "slice_copy" for op in call["ops"])
                          and (call["kind"] == "proxy" or call["copy_only"]))
        data[c.spec.model] = {"slice_copy_edge": n_edge, "slice_copy_after_post_grad": n_post,
                              "other_view_copies": {k: {"edge": e, "before_post_grad": b, "after_post_grad": p}
                                                    for k, (e, b, p) in per_kind.items()},
                              "post_grad_changed_view_nodes": changed, "slice_copy_copy_calls": slice_calls}
        survivors = ", ".join(f"{k} {p}/{e}" for k, (e, _, p) in per_kind.items() if p) or "none"
        parts.append(f"{c.spec.model}: {n_post} of {n_edge} slice_copy nodes are still slice_copy after Inductor's "
                     f"post-grad passes ({slice_calls} copy calls in the code); other view copies: {others_edge} in the "
                     f"edge graph, {others_pre} entering the post-grad passes, {others_post} after them (still there: "
                     f"{survivors}); the post-grad passes changed {changed} view/copy nodes")
        if n_edge == 0:
            verdicts.append("inconclusive")
        elif n_post == 0 and slice_calls == 0:
            verdicts.append("refuted")
        elif others_post < others_pre and changed > 0:
            verdicts.append("confirmed")
        else:
            verdicts.append("partly")
            if others_pre < others_edge:
                parts[-1] += (f" — {others_edge - others_pre} of {others_edge} other view copies were already gone when "
                              "the post-grad passes (reinplace among them) started, so those passes did not undo them")
    text = "; ".join(parts)
    run = {"backend": compile_backend(res, models)}
    order = ("refuted", "partly", "inconclusive", "confirmed")
    figure = count_figure(sum(d["slice_copy_after_post_grad"] for d in data.values()),
                          sum(d["slice_copy_edge"] for d in data.values()), "slice_copy survive the post-grad passes",
                          "slice_copy nodes of the edge graphs still slice_copy after Inductor's post-grad passes, "
                          "packages compiled without the pass", device=res.device, mode=run["backend"])
    return Judgement(next(v for v in order if v in verdicts), text, data, run=run, figure=figure)


def judge_equivalent(res: Results) -> Judgement:
    """Outputs with and without the pass are bit-identical: edge graphs run eagerly, and AOTI packages.
    Confirmed when every comparison is equal, refuted when one differs; inconclusive when a comparison could not
    be made (a compile or run failed) for a model whose edge graph the pass changed. Where the pass changed no node
    (its edge graph ran and is the same with and without it), both packages compile one graph: nothing to compare."""
    if (absent := _no_pass(res)) is not None:
        return absent
    table = pd.DataFrame(equivalence_rows(res))
    measured = table[table["equal"].notna()] if not table.empty else table
    if measured.empty:
        return Judgement("inconclusive", "no comparison ran (edge graphs and packages failed)", basis="none")
    # a model whose graph the pass left untouched compares one graph with itself: equal by construction, no evidence
    untouched = sorted({m for m in measured["model"] if not pass_changed(res.graphs.get(m))})
    same_graph_rows = measured[measured["model"].isin(untouched)]
    measured = measured[~measured["model"].isin(untouched)]
    if measured.empty:
        return Judgement("inconclusive", "no comparison counts: the pass changed nothing in "
                         + ", ".join(f"{m} ({_nothing_replaced(res, m)})" for m in untouched)
                         + ", so each comparison set one graph against itself", {"same_graph": untouched}, basis="none")
    unequal = measured[~measured["equal"].astype(bool)]
    worst = float(measured["max_abs"].max())
    text = (f"{len(measured) - len(unequal)} of {len(measured)} comparisons bit-identical (max |Δ| {worst:.3g}): "
            + "; ".join(f"{r.model} {r.where}{'' if r.calls is None or pd.isna(r.calls) else f' over {int(r.calls)} calls'}"
                        f" {'equal' if r.equal else f'differs by {r.max_abs:.3g}'}" for r in measured.itertuples()))
    missing = table[table["equal"].isna()] if not table.empty else table
    moot = [r for r in missing.itertuples() if not pass_changed(res.graphs.get(r.model))]
    missing = missing[~missing["model"].isin([r.model for r in moot])] if moot else missing
    if moot:
        text += "; " + "; ".join(f"{r.model} {r.where} not needed: {_nothing_replaced(res, r.model)}, so both "
                                 f"packages compile the same graph{_compile_note(res, r.model)}" for r in moot)
    if not missing.empty:
        text += f"; not compared: {', '.join(f'{r.model} {r.where}' for r in missing.itertuples())}"
    if len(same_graph_rows):
        text += ("; not counted, equal by construction: " + ", ".join(
            f"{m} ({_nothing_replaced(res, m)})" for m in untouched))
    data = {"rows": measured.to_dict(orient="records"), "same_graph": sorted({r.model for r in moot} | set(untouched))}
    run = {"backend": edge_backend(res)}
    figure = count_figure(len(measured) - len(unequal), len(measured), "comparisons bit-identical",
                          "outputs with and without the pass, where the pass changed the graph", device=res.device)
    if not unequal.empty:
        return Judgement("refuted", text, data, run=run, figure=figure)
    return Judgement("confirmed" if missing.empty else "inconclusive", text, data, run=run, figure=figure)


def _nothing_replaced(res: Results, model: str) -> str:
    """What the pass did to an edge graph it left unchanged, in words."""
    copies = len(res.graph(model)["nodes"])
    return (f"the pass changed none of its edge graph's {copies} view-copy nodes" if copies
            else "its edge graph has no view-copy node")


def _compile_note(res: Results, model: str) -> str:
    """` (its AOTI compile failed alike with and without the pass: <error>)` when both failed the same way; the
    error names what a compile worker raised where the step's own error only says a subprocess failed."""
    errors = [failure_text(c.compile, 300) for c in res.cases if c.spec.model == model and c.compile is not None
              and not c.compile.ok]
    return (f" (its AOTI compile failed alike with and without the pass: {errors[0]})"
            if len(errors) == 2 and len(set(errors)) == 1 else "")


def judge_edge_introduces_slice_copy(res: Results) -> Judgement:
    """Seed 004: slice_copy comes from ExecuTorch's own functionalizing pass (replace_broken_ops_with_function_ops_pass),
    not from torch.export. Two measured parts: torch.export keeps slices as views while the back-end's edge graph
    has slice_copy; and the same lowering with that named pass made a no-op (slice_copies_without_named_source)
    has no slice_copy left. Confirmed when both hold; partly when the edge lowering makes the copies but they
    survive without the named pass (another pass of the lowering makes them); refuted when torch.export already
    has slice_copy or the edge graph has none; inconclusive when no model slices or the no-op lowering failed."""
    rows, data = [], {}
    for model in res.graphs:
        g = res.graph(model)
        if not g:
            continue
        exp = g.get("exported", {})
        views = sum(n for op, n in exp.items() if base_op(op) == "slice")
        copies_export = sum(n for op, n in exp.items() if base_op(op) == "slice_copy")
        copies_edge = sum(n for op, n in g["before"].items() if base_op(op) == "slice_copy")
        without = g.get("without_named_source") or {}
        data[model] = {"export_slice": views, "export_slice_copy": copies_export, "edge_slice_copy": copies_edge,
                       "edge_slice_copy_without_named_pass": without.get("slice_copy"), "error": without.get("error")}
        rows.append((model, views, copies_export, copies_edge, without))
    if not rows:
        return Judgement("error", "no edge graph was built", basis="none")
    text = "; ".join(
        f"{m}: torch.export has {v} aten.slice and {ce} slice_copy, the back-end's edge graph {cd} slice_copy, "
        + (f"{w['slice_copy']} with {w.get('pass', NAMED_SOURCE[1])} made a no-op" if "slice_copy" in w
           else f"no-op lowering without {w.get('pass', NAMED_SOURCE[1])}: {w.get('error', 'not measured')}")
        for m, v, ce, cd, w in rows)
    run = {"backend": edge_backend(res)}
    sliced = [r for r in rows if r[1] > 0 or r[2] > 0]
    if not sliced:
        return Judgement("inconclusive", text + ". No model sliced.", data, run=run)
    figure = total_figure([cd for *_, cd, _ in sliced], "slice_copy in the edge graphs", "slice_copy nodes the "
                          "back-end's edge graphs hold, where torch.export keeps slices", device=res.device,
                          mode=run["backend"])
    if any(ce > 0 for _, _, ce, _, _ in sliced) or all(cd == 0 for _, _, _, cd, _ in sliced):
        return Judgement("refuted", text, data, run=run, figure=figure)
    from_lowering = all(ce == 0 and cd >= v for _, v, ce, cd, _ in sliced)
    named = [w.get("slice_copy") for *_, w in sliced]
    if any(n is None for n in named):
        return Judgement("inconclusive", text + ". Without the no-op lowering the named pass cannot be told apart "
                         "from the rest of the edge lowering.", data, run=run)
    if from_lowering and all(n == 0 for n in named):
        return Judgement("confirmed", text, data, run=run, figure=figure)
    return Judgement("partly", text + (". The copies come from ExecuTorch's edge lowering, not torch.export, but not "
                                       "from the named pass: they are there without it" if from_lowering else ""),
                     data, run=run, figure=figure)


JUDGES: dict[str, Callable[[Results], Judgement]] = {
    "view_copy.edge_introduces_slice_copy": judge_edge_introduces_slice_copy,
    "view_copy.replaces_slice_copy": judge_replaces_slice_copy,
    "view_copy.more_efficient": judge_more_efficient,
    "view_copy.other_view_ops": judge_other_view_ops,
    "view_copy.reinplace_misses_slice_copy": judge_reinplace_misses_slice_copy,
    "view_copy.equivalent": judge_equivalent,
}


def judge(found: Any, res: Results) -> pd.DataFrame:
    """Record every claim's verdict from the measured rows; a judge that breaks records `error`."""
    return found.judge_all(JUDGES, res)
