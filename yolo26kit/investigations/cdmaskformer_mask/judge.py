"""CDMaskFormer attention mask: one judge per claim of data/claims/cdmaskformer_mask.json, each reading the Results.

Verdicts (one function per claim id in `JUDGES`; each returns a `Judgement` with `basis` and the run's values of the
ledger's `conditions`, and `verdicts.settle` turns a decisive verdict into `inconclusive` where they differ):
  mask.equivalent — measured on every device of the run against an independent NumPy reference: confirmed when
      masked_fill and bool_index_put match in every case, partly when only masked_fill does, refuted otherwise.
  mask.speedup_small_20x / mask.speedup_medium_3_5x — measured on CUDA at the ledger's shape: the original's net time
      over masked_fill's, round by round (the input copy is timed in the same rounds and subtracted), timed until the
      rounds rule decides the ledger's band (5 to 15 rounds), deterministic algorithms off and on: both modes alike →
      that verdict, one inside and one outside → partly, a mode left undecided → inconclusive. Runs without those
      rounds fall back to the benchmark's rounds under the same rule. CPU only: needs_cuda, with the CPU rounds shown.
  mask.memory_lower — measured, one measure: the CUDA caching allocator's peak above the start of one call, for the
      seed's two formulations (the original and the out-of-place masked_fill): lower at every shape → confirmed, at
      none → refuted, at some → partly. CPU only: needs_cuda, the ATen-level peaks shown as another measure.
  mask.different_kernels — measured on CUDA, deterministic algorithms off and on: confirmed when masked_fill launches
      none of the original's indexing kernels (index / nonzero / sort in the name), refuted when it shares one,
      inconclusive when the original shows none. CPU only: needs_cuda with the ATen ops.
  mask.bool_index_alternative — a result that differs from the reference refutes anywhere. On CUDA with a torch of
      the seed's releases where the original asserts: refuted when it asserts too, confirmed when it never does.
      Elsewhere its path decides (basis both, derived on a CPU run): PR #61612's masked_fill_ dispatch applied to the
      seed's call, checked against the CUDA kernels it launches — no indexing kernel → confirmed, else refuted.
  mask.not_reproducible_synthetic — on CUDA with a torch of the seed's releases: refuted when a synthetic mask makes
      the seed's line assert, confirmed when none does although the attempts include deterministic algorithms with
      all-True rows. Elsewhere derived: refuted when the kernel arithmetic gives a synthetic mask the seed's numbers
      and upstream's short synthetic snippets assert on those releases with numbers it reproduces, else
      inconclusive.
  mask.data_independent — measured on CUDA with a torch of the seed's releases when the seed's line is tried at one
      shape with several shares of all-True rows (asserts at some and not others → refuted; at every share →
      confirmed); otherwise derived from the seed's own numbers: if 7840 vs 160 fits the kernel arithmetic as indexed
      rows × sliceSize vs indexed rows (≤ the mask's rows), both count all-True rows, and a mask of the same shape
      without one launches no kernel → refuted; numbers that do not fit → inconclusive.
  mask.ratio_spatial — derived from the seed's message and configuration: confirmed when lhs/rhs is a whole
      per-row slice (rhs ≤ batch·heads·queries) that is a square H×W, refuted otherwise.
  mask.assert_trigger (the kit's own) — on CUDA with a torch of the releases it is about: refuted when an attempt
      asserts off the sort path or none of the predicted ones does, confirmed when every predicted one asserts with
      the predicted numbers, partly otherwise. Another torch: inconclusive; CPU only: needs_cuda.
  mask.updates_fix — of the CUDA attempts the 1.11–2.0 arithmetic says fail (derived), how many still assert on this
      torch (measured, basis both): none → confirmed, all → refuted, some → partly; the ledger asks for a torch
      newer than the seed's. CPU only: needs_cuda.
The issue list (data/mask_assert_issues.json) decides bool_index_alternative and not_reproducible_synthetic with the
arithmetic where no CUDA run on the seed's releases does (said so: basis derived or both); elsewhere it is context.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import pandas as pd

from ... import findings, verdicts
from ...verdicts import Judgement, count_figure, derived_figure, one_figure
from .judge_cost import (index_kernels_of, kernels_of, judge_different_kernels, judge_memory_lower,
                         judge_speedup_medium, judge_speedup_small)
from .kernel import (MASKED_FILL_DISPATCH, assert_numbers, build_date, dispatches_to_masked_fill, fires, load_issues,
                     model_check, parse_assert, upstream_reproductions)
from .measure import Results
from .model import IMPLEMENTATIONS, ORIGINAL


# --- verdicts --------------------------------------------------------------------------------------

Verdict = Judgement


def _conditions(claim_id: str) -> dict[str, Any]:
    """The seed's conditions of a claim, from the ledger."""
    return findings.ledger_entry(claim_id).get("conditions", {})


def _range_text(claim_id: str) -> str:
    rng = _conditions(claim_id).get("torch", {})
    return f"{rng.get('min', '…')}–{rng.get('max', '…')}"


def _in_torch_range(claim_id: str, version: str) -> bool:
    """Whether `version` lies in the torch releases the ledger names for the claim."""
    rng = _conditions(claim_id).get("torch")
    return rng is None or (bool(version) and not verdicts.differing({"torch": rng}, {"torch": version}))


# The last Python the seed's releases (torch ≤ 2.0.1) ship wheels for: a condition a newer interpreter cannot meet.
SEED_TORCH_LAST_PYTHON = (3, 11)


def _no_wheel_text() -> str:
    """Why this interpreter cannot run the seed's torch, or that it could (another Python)."""
    import sys

    here = sys.version_info[:2]
    if here > SEED_TORCH_LAST_PYTHON:
        return (f"torch ≤ 2.0.1 has no wheel for this run's Python {here[0]}.{here[1]}: its wheels stop at Python "
                f"{SEED_TORCH_LAST_PYTHON[0]}.{SEED_TORCH_LAST_PYTHON[1]}")
    return f"this run's Python {here[0]}.{here[1]} could install one"


DERIVED_WHY = ("derived from the seed's own assert message and configuration with the kernel arithmetic "
               "(assert_numbers); nothing this run measured on its device or torch enters the verdict")


def _derived(claim_id: str, verdict: str, evidence: str, data: dict[str, Any], res: Results,
             figure: Any = None) -> Judgement:
    """A verdict computed from the seed's own numbers: basis derived, the run's real conditions beside the seed's,
    each marked as not deciding (nothing measured on them is used)."""
    run = {"device": _run_devices_of(res) or ["cpu"], "torch": res.torch_version}
    run = {k: run.get(k, "") for k in _conditions(claim_id)}
    return Judgement(verdict, evidence, data, "derived", run, {k: DERIVED_WHY for k in _conditions(claim_id)},
                     figure=figure)


SEED_SHAPE = "32x5x49"  # the seed's mask ([batch·heads, queries, H·W]) in the assert message's numbers


def _seed_figure(value: Any, unit: str, measures: str) -> Any:
    """A figure derived from the seed's assert message, under the seed's conditions (its mask, on CUDA)."""
    return derived_figure(value, unit, measures, shape=SEED_SHAPE, device="cuda")


def _run_devices_of(res: Results) -> list[str]:
    """The devices this run measured on (from its tables)."""
    found: list[str] = []
    for frame in (res.eq, res.bench, res.memory):
        if len(frame) and "device" in frame:
            found += [d for d in frame["device"].dropna() if d not in found]
    return sorted(found)


def _impl_all_true(eq: pd.DataFrame, name: str) -> tuple[int, int]:
    if name not in eq:
        return 0, 0
    col = eq[name]
    return int(sum(v is True for v in col)), len(col)


def judge_equivalent(res: Results) -> Judgement:
    """mask.equivalent: confirmed when masked_fill and bool_index_put equal the reference in every case, partly when
    only masked_fill does, refuted when masked_fill differs in any. Measured on every device of the run (the
    results are the ops' semantics, so a CPU run answers as well as a CUDA one)."""
    eq = res.eq
    if eq.empty:
        return Judgement("error", "no equivalence cases ran", basis="none")
    mf, n = _impl_all_true(eq, "masked_fill")
    bi, _ = _impl_all_true(eq, "bool_index_put")
    others = {c: _impl_all_true(eq, c)[0] for c in IMPLEMENTATIONS if c in eq}
    devs = sorted(set(eq["device"]))
    detail = (f"masked_fill equals the NumPy reference in {mf}/{n} cases and bool_index_put in {bi}/{n} "
              f"on {', '.join(devs)} (kinds: {'; '.join(dict.fromkeys(eq['case']))}) — " + ", ".join(f"{k} {v}/{n}" for k, v in others.items())
              + "; masked_fill returns a new tensor where the original writes in place")
    verdict = "confirmed" if mf == n and bi == n else "partly" if mf == n else "refuted"
    return Judgement(verdict, detail, {"equal": others, "cases": n}, "measured", {"device": devs},
                     figure=count_figure(mf, n, "cases equal", "cases where masked_fill equals the NumPy reference",
                                         shape=sorted(set(eq["shape"])) if "shape" in eq else None, device=devs))


def _pair(row: pd.Series) -> str:
    """The row's reported 'lhs vs rhs' as integers ('' when it has none); pandas turns them into floats."""
    try:
        return f"{int(row['lhs'])} vs {int(row['rhs'])}"
    except (TypeError, ValueError):
        return ""


def _model_text() -> tuple[str, int]:
    model = model_check()
    matched = int(model["match"].sum())
    seed_row = model.iloc[0]
    return (f"the kernel arithmetic (assert_numbers) reproduces {matched}/{len(model)} 'N vs M' pairs (the seed's "
            f"and {len(model) - 1} PyTorch reports'), incl. the seed's {seed_row['model']} for a synthetic "
            "[32, 5, 49] mask with all 160 rows full and deterministic algorithms on (1.11–2.0 rule)"), matched


def _cpu_attempts(trig: pd.DataFrame) -> str:
    cpu = trig[trig["device"] == "cpu"] if len(trig) else trig
    if not len(cpu):
        return "no CPU attempts"
    parts = [f"{n} {outcome} ({', '.join(sorted(set(cpu.loc[cpu['outcome'] == outcome, 'formulation'])))})"
             for outcome, n in cpu["outcome"].value_counts().items()]
    return f"CPU, same {len(cpu)} attempts: " + "; ".join(parts)


def _cuda_attempts(trig: pd.DataFrame) -> pd.DataFrame:
    return trig[(trig["device"] == "cuda") & (trig["status"] != "skipped")] if len(trig) else trig


def _attempt_torch(cuda: pd.DataFrame, res: Results) -> str:
    """The torch the CUDA attempts ran on (their children report it), else this run's."""
    return next((v for v in (cuda["torch"] if "torch" in cuda else []) if v), "") or res.torch_version


def _fired_text(fired: pd.DataFrame) -> str:
    return "; ".join(f"{r['formulation']} {r['shape']} {r['full %']}% det={r['deterministic']}: {_pair(r)}"
                     for _, r in fired.head(6).iterrows())


SEED_LINE = ("where_index_put", "bool_index_put")  # the seed's line and its `attn_mask[mask] = False`


def _seed_call_dispatch() -> tuple[bool, str]:
    """Whether the seed's `attn_mask[mask] = False` meets PR #61612's masked_fill_ dispatch (derived from the seed's
    shapes: a [32, 5] boolean mask on a [32, 5, 49] mask, a Python scalar), and the sentence that says so."""
    holds = dispatches_to_masked_fill((32, 5, 49), [(32, 5)], True, 1, True)
    cited = {e["number"]: e for e in load_issues()}
    refs = ", ".join(f"#{n} ({cited[n]['date']})" for n in MASKED_FILL_DISPATCH if n in cited)
    return holds, (f"PyTorch {refs} send index_put_ with one boolean mask of self's leading dimensions and a "
                   f"one-element CPU value to masked_fill_ before any index kernel; the seed's call (a [32, 5] mask "
                   f"on [32, 5, 49], value False) {'meets' if holds else 'does not meet'} that rule")


def _bool_index_upstream() -> str:
    """The boolean-mask reports on the seed's releases, as evidence (a scalar value worked where a tensor asserted)."""
    rows = upstream_reproductions("1.11", "2.0.1", boolean_index=True)
    return "; ".join(f"#{r['number']} ({r['release']}): {r['code']} → {r['reported']} with a tensor value" for r in rows)


def _measured_path(mem: pd.DataFrame) -> list[str] | None:
    """The indexing kernels bool_index_put launched on CUDA with deterministic algorithms off and on (None: no CUDA
    profile in this run)."""
    if "cuda kernels" not in mem or not (mem["device"] == "cuda").any():
        return None
    return index_kernels_of(kernels_of(mem, "bool_index_put"))


def judge_bool_index_alternative(res: Results) -> Judgement:
    """mask.bool_index_alternative: `m[mask] = False` as a replacement — identical results (measured, any device) and
    away from the failing indexing. Measured first where it can be: CUDA on a torch of the seed's releases where the
    original asserts (refuted when the alternative asserts too, confirmed when it never does). Otherwise from its
    path: PR #61612's masked_fill_ dispatch applied to the seed's call (derived), checked against the CUDA kernels it
    launched in this run, deterministic algorithms off and on (measured) — no indexing kernel and the rule holds →
    confirmed; an indexing kernel, or a call the rule does not cover → refuted. A result that differs refutes."""
    cid = "mask.bool_index_alternative"
    eq, mem = res.eq, res.memory
    if eq.empty:
        return Judgement("error", "the equivalence check did not run", basis="none")
    bi, n = _impl_all_true(eq, "bool_index_put")
    devs = sorted(set(eq["device"]))
    text = f"bool_index_put equals the reference in {bi}/{n} cases on {', '.join(devs)}"
    if bi != n:
        why = f"it returned a different result than the reference on this run ({n - bi} of {n} cases)"
        return Judgement("refuted", f"{text}: not identical results, so not a replacement", {"equal": bi, "cases": n},
                         "measured", {"device": devs, "torch": res.torch_version},
                         {"device": why, "torch": why},
                         figure=count_figure(bi, n, "cases equal", "cases where bool_index_put equals the NumPy "
                                             "reference", device=devs))
    cuda = _cuda_attempts(res.trig)
    version = _attempt_torch(cuda, res) if len(cuda) else res.torch_version
    if len(cuda) and _in_torch_range(cid, version):
        measured = _bool_index_measured(cuda, text, bi, version)
        if measured is not None:
            return measured
    holds, rule = _seed_call_dispatch()
    kernels = _measured_path(mem) if len(mem) else None
    seen = ("no CUDA kernel profile in this run" if kernels is None else
            f"on CUDA (torch {res.torch_version}, deterministic algorithms off and on) it launched "
            f"{len(kernels)} indexing kernels ({', '.join(k[:50] for k in kernels) or 'none: masked_fill_kernel instead'})")
    away = holds and not kernels
    upstream = _bool_index_upstream()
    evidence = (f"{text}; {rule}; {seen}" + (f"; upstream on the seed's releases: {upstream}" if upstream else "")
                + (" — away from the sort kernel that asserts" if away else " — it takes the indexing kernels"))
    why = ("the results are the ops' semantics, measured on every device; the path is PR #61612's dispatch rule, in "
           "PyTorch since July 2021 (before 1.11) and seen on 1.12.1 (#87287)"
           + ("" if kernels is None else ", and this run's CUDA kernels agree with it"))
    run = {"device": _run_devices_of(res) or devs, "torch": res.torch_version}
    figure = (one_figure(len(kernels), "indexing kernels", "indexing kernels bool_index_put launches",
                         device="cuda", mode="deterministic algorithms off and on") if kernels is not None else
              _seed_figure("masked_fill_" if holds else "index_put_", "dispatch", "where PR #61612's rule sends the "
                           "seed's call"))
    return Judgement("confirmed" if away else "refuted", evidence,
                     {"equal": bi, "dispatch_rule": holds, "index_kernels": kernels}, "both" if kernels is not None
                     else "derived", run, {"device": why, "torch": why}, figure=figure)


def _bool_index_measured(cuda: pd.DataFrame, text: str, bi: int, version: str) -> Judgement | None:
    """The measured answer on a torch of the seed's releases: None when the original never asserted there."""
    run = {"device": "cuda", "torch": version}
    orig = cuda[(cuda["formulation"] == ORIGINAL) & cuda["sort path"]]
    alt = cuda[(cuda["formulation"] == "bool_index_put") & cuda["sort path"]]
    orig_fired, alt_fired = (f[f["outcome"] == "internal_assert"] for f in (orig, alt))
    if orig_fired.empty:
        return None
    seen = (f"on torch {version} the original asserts in {len(orig_fired)} of {len(orig)} sort-path CUDA attempts, "
            f"bool_index_put in {len(alt_fired)} of {len(alt)}")
    verdict = "refuted" if len(alt_fired) else "confirmed"
    return Judgement(verdict, f"{text}; {seen}" + (f" — {_fired_text(alt_fired)}" if len(alt_fired) else ""),
                     {"equal": bi, "original_fired": len(orig_fired), "alternative_fired": len(alt_fired)},
                     "measured", run, figure=count_figure(len(alt_fired), len(alt), "attempts assert", "sort-path "
                                                          "CUDA attempts of bool_index_put that assert", device="cuda"))


def _not_reproducible_derived(res: Results, seen: str) -> Judgement:
    """mask.not_reproducible_synthetic from the kernel arithmetic and upstream: refuted when a synthetic [32, 5, 49]
    mask with all rows full gives the seed's very numbers under the 1.11–2.0 rule and PyTorch reports show short
    synthetic snippets of that rule asserting on those releases (numbers the arithmetic reproduces); else
    inconclusive."""
    cid = "mask.not_reproducible_synthetic"
    lo, hi = (str(_conditions(cid)["torch"][k]) for k in ("min", "max"))
    seed = parse_assert(res.seed_message)
    synthetic = assert_numbers((32, 5, 49), 2, (160,), (), "expand_to_index")
    snippets = upstream_reproductions(lo, hi, scalar_value=True)
    listed = "; ".join(f"#{r['number']} (torch {r['release']}): {r['code']} → {r['reported']}" for r in snippets)
    text = (f"derived: the 1.11–2.0 kernel arithmetic gives a synthetic [32, 5, 49] mask with all 160 rows full, "
            f"deterministic algorithms on, {synthetic[0]} vs {synthetic[1]} (the seed's {seed[0]} vs {seed[1]}"
            if seed else "derived: the seed's message has no 'N vs M'")
    if not seed or tuple(seed) != tuple(synthetic) or not snippets:
        return _derived(cid, "inconclusive", f"{text}); upstream snippets on torch {lo}–{hi}: {listed or 'none'}. "
                                             f"{seen}", {"snippets": len(snippets)}, res)
    return _derived(cid, "refuted", (f"{text}), and PyTorch reports reproduce the assert with short synthetic "
                                     f"snippets under deterministic algorithms on torch {lo}–{hi}, numbers the "
                                     f"arithmetic reproduces: {listed}. Synthetic, well-formed input asserts every "
                                     f"time once a row is all True and deterministic algorithms are on. {seen}"),
                    {"synthetic": list(synthetic), "snippets": [r["number"] for r in snippets]}, res,
                    _seed_figure(f"{synthetic[0]} vs {synthetic[1]}", "(lhs vs rhs)", "the assert's numbers the "
                                 "kernel arithmetic gives a synthetic mask with every row all True"))


def judge_not_reproducible(res: Results) -> Judgement:
    """mask.not_reproducible_synthetic: measured on CUDA with a torch of the seed's releases (the ledger's range):
    refuted when a synthetic mask makes the seed's line assert; confirmed when none does although the attempts
    include deterministic algorithms with all-True rows. Elsewhere (CPU, another torch, or attempts without that
    setting) derived from the kernel arithmetic and upstream's synthetic snippets (`_not_reproducible_derived`)."""
    cid = "mask.not_reproducible_synthetic"
    cuda = _cuda_attempts(res.trig)
    if cuda.empty:
        return _not_reproducible_derived(res, f"This run measured no CUDA attempt ({_cpu_attempts(res.trig)}).")
    version = _attempt_torch(cuda, res)
    run = {"device": "cuda", "torch": version}
    line = cuda[cuda["formulation"].isin(SEED_LINE)]
    fired = line[line["outcome"] == "internal_assert"]
    full = line["full rows"] if "full rows" in line else line["full %"]  # older tables lack the count
    covering = line[line["deterministic"].astype(bool) & (full.fillna(0) > 0)] if len(line) else line
    seen = (f"{len(fired)} of {len(line)} synthetic-mask CUDA attempts of the seed's line assert on torch {version} "
            f"({len(covering)} with deterministic algorithms and all-True rows)")
    if not _in_torch_range(cid, version):
        return _not_reproducible_derived(res, f"Measured, not deciding: {seen}; torch {version} is not one of "
                                              f"{_range_text(cid)}, whose kernel the claim is about.")
    figure = count_figure(len(fired), len(line), "attempts assert", "synthetic-mask CUDA attempts of the seed's line "
                          "that assert", device="cuda", mode="deterministic algorithms off and on")
    if len(fired):
        return Judgement("refuted", f"{seen} — {_fired_text(fired)}", {"fired": len(fired)}, "measured", run,
                         figure=figure)
    if covering.empty:
        return _not_reproducible_derived(res, f"Measured, not deciding: {seen}: the attempts lack the setting the "
                                              "assert needs (deterministic algorithms, ≥1 all-True row).")
    return Judgement("confirmed", f"{seen}: synthetic masks do not reproduce it on this torch, not even there",
                     {"fired": 0, "covering": len(covering)}, "measured", run, figure=figure)


def judge_data_independent(res: Results) -> Judgement:
    """mask.data_independent. Measured where it can be: CUDA on a torch of the seed's releases, the seed's line with
    deterministic algorithms at one shape and several shares of all-True rows — refuted when it asserts at some
    shares and not at others, confirmed when it asserts at every share. Otherwise derived from the seed's own
    numbers: if they fit the kernel arithmetic (7840 = indexed rows × sliceSize, 160 = indexed rows ≤ the mask's
    rows), both count the all-True rows, i.e. the contents, and a mask of the same shape without one launches no
    kernel → refuted; if they do not fit, the arithmetic cannot say → inconclusive."""
    cid = "mask.data_independent"
    cuda = _cuda_attempts(res.trig)
    version = _attempt_torch(cuda, res) if len(cuda) else res.torch_version
    measured_txt = ""
    if len(cuda) and _in_torch_range(cid, version):
        det = cuda[cuda["formulation"].isin(SEED_LINE) & cuda["deterministic"]]
        varied, always = [], []
        for (form, shape), g in det.groupby(["formulation", "shape"]):
            by_share = g.groupby("full %")["outcome"].apply(lambda s: bool((s == "internal_assert").any()))
            if len(by_share) < 2:
                continue
            (varied if by_share.any() and not by_share.all() else always if by_share.all() else []).append(
                f"{form} {shape}: " + ", ".join(f"{p}% {'asserts' if f else 'no assert'}" for p, f in by_share.items()))
        run = {"device": "cuda", "torch": version}
        figure = count_figure(len(varied), len(varied) + len(always), "shapes assert at some shares only", "shapes "
                              "the seed's line was tried at with several shares of all-True rows", device="cuda",
                              mode="deterministic algorithms on")
        if varied:
            return Judgement("refuted", f"on torch {version}, same shape, different contents: " + "; ".join(varied),
                             {"varied": varied}, "measured", run, figure=figure)
        if always:
            return Judgement("confirmed", f"on torch {version} the seed's line asserts at every share of all-True rows: "
                                          + "; ".join(always), {"always": always}, "measured", run, figure=figure)
        measured_txt = (f"; this run's CUDA attempts on torch {version} cannot decide (no shape tried at several "
                        "shares with an assert)")
    cfg = res.seed_config
    lhs, rhs = parse_assert(res.seed_message)
    rows = cfg["batch"] * cfg["heads"] * cfg["queries"]
    if rhs <= 0 or lhs % rhs or rhs > rows:
        return _derived(cid, "inconclusive", (f"the seed's {lhs} vs {rhs} does not fit the kernel arithmetic (it needs "
                                              f"{lhs} = indexed rows × sliceSize with {rhs} indexed rows ≤ the mask's "
                                              f"{rows}), so it cannot say{measured_txt}"), {}, res)
    hw = lhs // rhs
    shape = (cfg["batch"] * cfg["heads"], cfg["queries"], hw)
    zero = assert_numbers(shape, 2, (0,), (), "expand_to_index")
    one = assert_numbers(shape, 2, (1,), (), "expand_to_index")
    text = (f"the seed's {lhs} vs {rhs} fits the 1.11–2.0 kernel arithmetic as {rhs} indexed all-True rows × sliceSize "
            f"{hw} vs the value expanded to those {rhs} rows: both numbers count the all-True rows of the "
            f"[{shape[0]}, {shape[1]}, {hw}] mask, i.e. its contents (here every one of its {rows} rows). Same shape: "
            f"0 all-True rows → {zero[0]} vs {zero[1]} ({'assert' if fires(*zero) else 'no kernel launch, no assert'}), "
            f"1 → {one[0]} vs {one[1]} ({'assert' if fires(*one) else 'no assert'}){measured_txt}")
    verdict = "refuted" if fires(*one) and not fires(*zero) else "inconclusive"
    return _derived(cid, verdict, text, {"zero": list(zero), "one": list(one), "slice_size": hw}, res,
                    _seed_figure(rhs, "all-True rows", "the rows the seed's 'N vs M' counts: the indexed all-True "
                                 "rows of the mask, i.e. its contents"))


def judge_ratio_spatial(res: Results) -> Judgement:
    """mask.ratio_spatial, derived from the seed's message and configuration: the kernel compares indexed rows ×
    sliceSize (× nElemBefore = 1) with the value's elements. confirmed when the numbers fit that as whole rows
    (lhs/rhs an integer, rhs ≤ the mask's batch·heads·queries rows) and the per-row slice lhs/rhs is a square H×W
    (the spatial H·W of the mask); refuted when the ratio is not a whole row slice or not square."""
    cid = "mask.ratio_spatial"
    cfg = res.seed_config
    lhs, rhs = parse_assert(res.seed_message)
    rows = cfg["batch"] * cfg["heads"] * cfg["queries"]
    whole = rhs > 0 and lhs % rhs == 0 and rhs <= rows
    ratio = lhs / rhs if rhs else float("nan")
    side = math.isqrt(int(ratio)) if whole else 0
    square = whole and side * side == int(ratio)
    text = (f"{lhs} / {rhs} = {ratio:g}; the kernel compares linearIndex.numel()·sliceSize·nElemBefore with the value's "
            f"elements, and the mask [{cfg['batch']}·{cfg['heads']}, {cfg['queries']}, H·W] has {rows} rows")
    data = {"ratio": ratio, "rows": rows}
    figure = _seed_figure(ratio, "elements per indexed row", "lhs / rhs of the seed's assert message")
    if not whole:
        return _derived(cid, "refuted", f"{text}: {rhs} indexed rows with a whole slice each cannot give {lhs}, so the "
                                        "ratio is not one row's spatial slice", data, res, figure)
    if not square:
        return _derived(cid, "refuted", f"{text}: a slice of {int(ratio)} elements per row is not a square H×W", data,
                        res, figure)
    return _derived(cid, "confirmed", (f"{text}: {rhs} indexed rows × sliceSize {int(ratio)} = H·W = {side}×{side} "
                                       f"vs the value expanded to the {rhs} rows only — the value lacks the spatial "
                                       f"({side}×{side}) dimension of each row"), {**data, "slice_size": int(ratio)},
                    res, figure)


def judge_assert_trigger(res: Results) -> Judgement:
    """mask.assert_trigger (kit), decided on CUDA with a torch of the releases it is about (ledger range): refuted when
    an attempt asserts off the sort path, or when none of the attempts the arithmetic says fail does; confirmed when
    every one of those asserts with the predicted numbers and nothing else asserts; partly otherwise. Another torch:
    inconclusive; CPU only: needs_cuda."""
    cid = "mask.assert_trigger"
    model_txt, matched = _model_text()
    cuda = _cuda_attempts(res.trig)
    if cuda.empty:
        return Judgement("needs_cuda", f"{_cpu_attempts(res.trig)} (the CPU never runs the CUDA kernel that holds the "
                                       f"assert). Model: {model_txt}", {"model_matches": matched}, "measured",
                         {"device": "cpu", "torch": res.torch_version})
    version = _attempt_torch(cuda, res)
    run = {"device": "cuda", "torch": version}
    fired = cuda[cuda["outcome"] == "internal_assert"]
    off_path = fired[~fired["sort path"].astype(bool)]
    predicted = cuda[(cuda["predicted expand_to_index"] != "") & cuda["sort path"].astype(bool)]
    hit = predicted[predicted["outcome"] == "internal_assert"]
    exact = [_pair(r) == r["predicted expand_to_index"] for _, r in fired.iterrows()]
    text = (f"{len(fired)} of {len(cuda)} CUDA attempts assert on torch {version}, {len(off_path)} off the sort path; "
            f"the 1.11–2.0 arithmetic predicts {len(predicted)}, of which {len(hit)} assert; {sum(exact)} with the "
            f"predicted numbers" + (f" — {_fired_text(fired)}" if len(fired) else ""))
    data = {"fired": len(fired), "attempts": len(cuda), "predicted": len(predicted), "hit": len(hit)}
    figure = count_figure(len(hit), len(predicted), "predicted attempts assert", "CUDA attempts the 1.11–2.0 "
                          "arithmetic says fail that assert", device="cuda")
    if not _in_torch_range(cid, version):
        return Judgement("inconclusive", f"{text}. The claim is about the kernel of torch {_range_text(cid)}; torch "
                                         f"{version} is outside it: a CUDA run on one of those releases is needed "
                                         f"({_no_wheel_text()}). Model: {model_txt}", data, "measured", run)
    if len(off_path) or (len(predicted) and hit.empty):
        return Judgement("refuted", text, data, "measured", run, figure=figure)
    if predicted.empty:
        return Judgement("inconclusive", f"{text}: no attempt had the setting the claim names (deterministic "
                                         "algorithms or accumulate=True with ≥1 all-True row)", data, "measured", run)
    verdict = "confirmed" if len(hit) == len(predicted) and all(exact) else "partly"
    return Judgement(verdict, text, data, "measured", run, figure=figure)


def judge_updates_fix(res: Results) -> Judgement:
    """mask.updates_fix: of the CUDA attempts the 1.11–2.0 kernel arithmetic says fail (derived), how many still
    assert on this torch (measured): none → confirmed, all → refuted, some → partly. The ledger's torch condition is
    a release newer than the seed's. CPU only: needs_cuda."""
    cuda = _cuda_attempts(res.trig)
    if cuda.empty:
        return Judgement("needs_cuda", f"whether this torch still asserts needs CUDA; {_cpu_attempts(res.trig)}", {},
                         "measured", {"device": "cpu", "torch": res.torch_version})
    version = _attempt_torch(cuda, res)
    run = {"device": "cuda", "torch": version}
    predicted = cuda[(cuda["predicted expand_to_index"] != "") & cuda["sort path"].astype(bool)]
    if predicted.empty:
        return Judgement("inconclusive", "no attempt this run made is one the 1.11–2.0 kernel fails (deterministic "
                                         "algorithms with all-True rows; see trigger_full_percent)", {}, "both", run)
    still = predicted[predicted["outcome"] == "internal_assert"]
    verdict = verdicts.all_none_some(len(predicted) - len(still), len(predicted))
    return Judgement(verdict, (f"{len(still)} of {len(predicted)} CUDA attempts that the 1.11–2.0 kernel arithmetic says "
                               f"fail (the seed's torch was built {build_date(res.seed_message)}) still assert on torch "
                               f"{version}"), {"predicted": len(predicted), "still": len(still)}, "both", run,
                     figure=count_figure(len(still), len(predicted), "still assert", "CUDA attempts the 1.11–2.0 "
                                         f"arithmetic says fail that still assert on torch {version}", device="cuda"))


JUDGES: dict[str, Callable[[Results], Judgement]] = {
    "mask.equivalent": judge_equivalent,
    "mask.speedup_small_20x": judge_speedup_small,
    "mask.speedup_medium_3_5x": judge_speedup_medium,
    "mask.memory_lower": judge_memory_lower,
    "mask.different_kernels": judge_different_kernels,
    "mask.bool_index_alternative": judge_bool_index_alternative,
    "mask.not_reproducible_synthetic": judge_not_reproducible,
    "mask.data_independent": judge_data_independent,
    "mask.ratio_spatial": judge_ratio_spatial,
    "mask.assert_trigger": judge_assert_trigger,
    "mask.updates_fix": judge_updates_fix,
}


def judge(found: findings.Findings, res: Results) -> pd.DataFrame:
    """Record every claim's verdict (a judge that breaks records `error`); returns the claims frame. The run's tables
    are kept by show.record_tables."""
    return found.judge_all(JUDGES, res)
