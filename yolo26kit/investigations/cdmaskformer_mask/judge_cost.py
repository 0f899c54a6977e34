"""CDMaskFormer attention mask: the judges of the cost claims (speed at the seed's two shapes, memory, kernels)."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ... import findings, verdicts
from ...verdicts import Judgement, count_figure, extreme_figure, rounds_figure
from .measure import DISTURBED_FACTOR, Results
from .model import ORIGINAL, Shape, parse_shape, shape_label


# name → (shape rows×queries×H·W, seed's masked_fill ms, seed's original ms, claimed factor), for the evidence; the
# verdicts read the shape from the ledger's conditions and the band from its `band`
SEED_BENCH = {
    "mask.speedup_small_20x": ((32, 5, 1024), 0.254, 5.062, 20.0),
    "mask.speedup_medium_3_5x": ((32, 100, 4096), 1.258, 4.447, 3.5),
}


def _speed_row(bench: pd.DataFrame, dev: str, shape: Shape, name: str) -> pd.Series | None:
    if bench.empty or "implementation" not in bench:
        return None
    hit = bench[(bench["device"] == dev) & (bench["shape"] == shape_label(shape)) & (bench["implementation"] == name)
                & (bench["deterministic"] == False)]  # noqa: E712
    return hit.iloc[0] if len(hit) else None


def _ms(value: Any) -> str:
    """A time for the evidence: '0.1139 ms', or 'could not time' when it is not a positive number."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return "not timed"
    return f"{v:.4g} ms" if math.isfinite(v) and v > 0 else "could not time"


def speed_rounds(bench: pd.DataFrame, dev: str, shape: Shape) -> tuple[str, list[float] | None]:
    """(a sentence, the original/masked_fill ratio of every round) at one device and shape; the ratios are None when
    the shape was not benchmarked or a round's net time was not positive (the machine was too busy to time it)."""
    orig, fix = _speed_row(bench, dev, shape, ORIGINAL), _speed_row(bench, dev, shape, "masked_fill")
    label = f"{dev} {shape_label(shape)}"
    if orig is None or fix is None:
        return f"{label}: {ORIGINAL} and masked_fill not in this run's benchmark", None
    o, f = orig.get("round_net_ms"), fix.get("round_net_ms")
    if not isinstance(o, list) or not isinstance(f, list) or not o or len(o) != len(f):
        why = orig.get("error") or fix.get("error") or "no rounds recorded"
        return f"{label}: could not time ({why})", None
    if not all(x > 0 for x in o + f):
        return (f"{label}: could not time — net time per round {ORIGINAL} {o} ms, masked_fill {f} ms: in some round "
                "the call took no longer than the input copy timed beside it (too busy a machine)"), None
    ratios = [a / b for a, b in zip(o, f)]
    mid = verdicts.median_round(ratios)  # the rounds rule's median, as every figure of rounds
    text = (f"{label}: {ORIGINAL}/masked_fill = {mid:.2f}× (masked_fill {'faster' if mid > 1 else 'not faster'}; "
            f"median of {len(ratios)} rounds timed in turn: {', '.join(f'{r:.2f}' for r in ratios)}×; "
            f"{ORIGINAL} {_ms(orig.get('net_ms'))} vs "
            f"masked_fill {_ms(fix.get('net_ms'))} net of the {_ms(fix.get('restore_ms'))} input copy)")
    return text, ratios


MODE_WORDS = {False: "deterministic algorithms off", True: "deterministic algorithms on (the seed's failing setting)"}


def _timed_rounds(row: pd.Series) -> list[float]:
    """A mode's round ratios that were timed (a round whose net times stayed not positive is NaN)."""
    return [float(r) for r in row["rounds"] if math.isfinite(float(r))]


def _mode_decisions(rows: pd.DataFrame, lo: float, hi: float) -> dict[bool, str | None]:
    """deterministic on/off → the rounds rule's decision of that mode's rounds (None: undecided); a mode whose
    formulations could not run is left out."""
    return {bool(row["deterministic"]): verdicts.band_decision(_timed_rounds(row), lo, hi,
                                                                min_rounds=verdicts.MIN_ROUNDS)
            for _, row in rows.iterrows() if not row.get("error")}


def _mode_leanings(rows: pd.DataFrame, lo: float, hi: float) -> dict[bool, str]:
    """deterministic on/off → where that mode's median round lies: `confirmed` inside the band, `refuted` outside
    (no margin: this only breaks ties for a mode the rounds rule left undecided, see combine_modes)."""
    out = {}
    for _, row in rows.iterrows():
        timed = _timed_rounds(row)
        if not row.get("error") and timed:
            mid = verdicts.median_round(timed)
            out[bool(row["deterministic"])] = "confirmed" if lo <= mid <= hi else "refuted"
    return out


def _mode_text(row: pd.Series, lo: float, hi: float) -> str:
    """One mode's rounds in words: the ratios, their median and what the rounds rule makes of them."""
    mode = MODE_WORDS[bool(row["deterministic"])]
    if row.get("error"):
        return f"{mode}: could not time ({row['error']})"
    timed = sorted(_timed_rounds(row))
    mid = verdicts.median_round(timed) if timed else float("nan")
    decided = verdicts.band_decision(timed, lo, hi, min_rounds=verdicts.MIN_ROUNDS) or "undecided"
    retaken = int(row.get("retaken") or 0)
    shared = (f"; {retaken} more timed again, their device round trip over {DISTURBED_FACTOR:g}× its quietest "
              "(another process on the device)") if retaken else ""
    return (f"{mode}: {ORIGINAL}/masked_fill median {mid:.2f}× over {len(row['rounds'])} rounds "
            f"({', '.join(f'{float(r):.2f}' for r in row['rounds'])}×; {len(row['rounds']) - len(timed)} not timed"
            f"{shared}) → {decided}")


def combine_modes(decisions: dict[bool, str | None], leanings: dict[bool, str] | None = None) -> str:
    """One verdict from the two modes (the seed names neither): the same decision in every timed mode → it;
    confirmed in one and refuted in the other → partly. A mode the rounds rule left undecided (its median near an
    edge) joins the other mode's decision when its median lies on that same side, so a batch whose second mode sits
    at the edge cannot flip the verdict; else → inconclusive, as with no mode timed."""
    decided = {v for v in decisions.values() if v is not None}
    if not decided:
        return "inconclusive"
    if decided == {"confirmed", "refuted"}:
        return "partly"
    verdict = decided.pop()
    undecided = [mode for mode, v in decisions.items() if v is None]
    return verdict if all((leanings or {}).get(mode) == verdict for mode in undecided) else "inconclusive"


SPEED_MEASURES = "the original's net time over masked_fill's, rounds timed in turn"


def _speed_figure(rows: pd.DataFrame, shape: str, res: Results) -> Any:
    """The speed claim's figure: the median round of the mode with deterministic algorithms off (PyTorch's
    default; the other mode is in the evidence), else of the mode timed."""
    timed = [(bool(r["deterministic"]), _timed_rounds(r)) for _, r in rows.iterrows() if not r.get("error")]
    timed = sorted((t for t in timed if t[1]), key=lambda t: t[0])
    if not timed:
        return None
    det, rounds = timed[0]
    return rounds_figure(rounds, "×", SPEED_MEASURES, shape=shape, device="cuda", mode=MODE_WORDS[det].split(" (")[0],
                         rows_all_true=f"{res.full_percent}%")


def _judge_speed_rounds(res: Results, claim_id: str, seed_txt: str, data: dict[str, Any]) -> Judgement:
    """A speed claim from the rounds timed until decided (speed_rounds_table), deterministic algorithms off and on."""
    lo, hi = findings.band_of(claim_id)
    own = res.speed[res.speed["claim"] == claim_id]
    shape = str(own["shape"].iloc[0])
    cpu = own[own["device"] == "cpu"]
    cpu_txt = "CPU (not judged): " + "; ".join(_mode_text(r, lo, hi) for _, r in cpu.iterrows()) if len(cpu) else ""
    cuda = own[own["device"] == "cuda"]
    for _, r in own.iterrows():  # `<device>_rounds`: deterministic algorithms off, as the benchmark's rows
        data[f"{r['device']}_rounds" + ("_deterministic" if r["deterministic"] else "")] = list(r["rounds"])
    if cuda.empty:
        return Judgement("needs_cuda", f"{cpu_txt}; {seed_txt} — the seed timed CUDA; this run has no CUDA rows",
                         data, "measured", {"device": "cpu", "shape": shape})
    decisions = _mode_decisions(cuda, lo, hi)
    verdict = combine_modes(decisions, _mode_leanings(cuda, lo, hi))
    data["modes"] = {("on" if k else "off"): v or "undecided" for k, v in decisions.items()}
    rule = (f"rounds rule: at least {verdicts.ROUNDS_SHARE:.0%} of a mode's rounds and their median on one side of "
            f"{lo:g}–{hi:g}×, the median clear of its edge by {verdicts.CLEARANCE_IQR:g}× the rounds' interquartile "
            f"range, {verdicts.MIN_ROUNDS} to {verdicts.MAX_ROUNDS} rounds timed until it decides; both modes "
            "alike → that verdict, one in and one out → partly, one undecided → the other's verdict where its median "
            "lies on that side")
    text = (f"cuda {shape}, {res.full_percent}% of (image, query) rows all True — "
            + "; ".join(_mode_text(r, lo, hi) for _, r in cuda.iterrows()) + f"; {seed_txt} ({rule})")
    return Judgement(verdict, f"{text}. {cpu_txt}".rstrip(". ") + ".", data, "measured",
                     {"device": "cuda", "shape": shape}, figure=_speed_figure(cuda, shape, res))


def _judge_speed(res: Results, claim_id: str) -> Judgement:
    """A speed claim: the rounds timed until decided (deterministic algorithms off and on) where the run has them,
    else the benchmark's per-round ratios on CUDA at the seed's shape, against the ledger's band (the rounds rule)."""
    entry = findings.ledger_entry(claim_id)
    shape = parse_shape(entry["conditions"]["shape"])
    lo, hi = findings.band_of(claim_id)
    _, seed_fix, seed_orig, _ = SEED_BENCH[claim_id]
    seed_txt = (f"the seed: \"{entry['band']['words']}\" = {seed_orig / seed_fix:.1f}×, judged against "
                f"{lo:g}–{hi:g}×")
    common = f"deterministic algorithms off, {res.full_percent}% of (image, query) rows all True"
    cpu_txt, cpu_ratios = speed_rounds(res.bench, "cpu", shape)
    data = {"cpu_rounds": cpu_ratios, "band": [lo, hi], "claimed": round(seed_orig / seed_fix, 1)}
    if len(res.speed) and "claim" in res.speed and (res.speed["claim"] == claim_id).any():
        return _judge_speed_rounds(res, claim_id, seed_txt, {"band": [lo, hi], "claimed": data["claimed"]})
    has_cuda = not res.bench.empty and "implementation" in res.bench and bool(
        ((res.bench["device"] == "cuda") & res.bench["implementation"].notna()).any())
    if not has_cuda:
        return Judgement("needs_cuda", f"{cpu_txt} ({common}); {seed_txt} — the seed timed CUDA; this run has no CUDA rows",
                         data, "measured", {"device": "cpu", "shape": shape_label(shape)})
    cuda_txt, ratios = speed_rounds(res.bench, "cuda", shape)
    data["cuda_rounds"] = ratios
    run = {"device": "cuda", "shape": shape_label(shape)}
    if ratios is None:
        return Judgement("inconclusive", f"{cuda_txt}; {seed_txt}. {cpu_txt}", data, "measured", run)
    verdict = verdicts.band(ratios, lo, hi)
    why = {"confirmed": "two thirds of the rounds and their median inside (the rounds rule)",
           "refuted": "two thirds of the rounds and their median outside (the rounds rule)",
           "inconclusive": "rounds on both sides of an edge, neither side holding two thirds and the median"}[verdict]
    figure = rounds_figure(ratios, "×", SPEED_MEASURES, shape=shape_label(shape), device="cuda",
                           mode="deterministic algorithms off", rows_all_true=f"{res.full_percent}%")
    return Judgement(verdict, f"{cuda_txt} ({common}); {seed_txt}: {why}. {cpu_txt}", data, "measured", run,
                     figure=figure)


def judge_speedup_small(res: Results) -> Judgement:
    """mask.speedup_small_20x: ~20× at 32x5x1024 on CUDA."""
    return _judge_speed(res, "mask.speedup_small_20x")


def judge_speedup_medium(res: Results) -> Judgement:
    """mask.speedup_medium_3_5x: ~3.5× at 32x100x4096 on CUDA."""
    return _judge_speed(res, "mask.speedup_medium_3_5x")


def _peaks(mem: pd.DataFrame, dev: str, name: str, column: str) -> dict[str, int]:
    sub = mem[(mem["device"] == dev) & (mem["implementation"] == name)] if column in mem else mem.iloc[0:0]
    return {r["shape"]: int(r[column]) for _, r in sub.iterrows() if pd.notna(r[column])}


def _peak_pairs(mem: pd.DataFrame, dev: str, column: str) -> list[tuple[str, int, int]]:
    """(shape, masked_fill's, the original's) of one measure on one device, for the shapes both have."""
    orig, fix = _peaks(mem, dev, ORIGINAL, column), _peaks(mem, dev, "masked_fill", column)
    return [(shape, fix[shape], orig[shape]) for shape in orig if shape in fix]


def judge_memory_lower(res: Results) -> Judgement:
    """mask.memory_lower: the seed's two formulations (the original and the out-of-place masked_fill) on CUDA, judged
    on the measure that can tell them apart: the peak of the tensors each call creates (op level: the original's
    index tensors, masked_fill's new output). The CUDA caching allocator's peak above the start of a call is shown
    beside; where it is equal at every shape, an allocation both formulations share dominates it and it cannot
    decide. confirmed when masked_fill's peak is lower at every shape, refuted when it is lower at none, partly
    otherwise. A CPU-only run has no peak of the seed's device: needs_cuda, with the CPU's peaks shown."""
    mem = res.memory
    if mem.empty:
        return Judgement("error", "no memory measurements ran", basis="none")
    cpu = _peak_pairs(mem, "cpu", "peak new bytes")
    cpu_txt = ("CPU, peak of new tensors (not judged): " + "; ".join(
        f"{s} masked_fill {f:,} B vs {ORIGINAL} {o:,} B" for s, f, o in cpu)) if cpu else "no CPU rows"
    pairs = _peak_pairs(mem, "cuda", "peak new bytes")
    if not pairs:
        return Judgement("needs_cuda", f"the seed's memory is a CUDA training's; this run has no CUDA rows. {cpu_txt}",
                         {"cpu": {s: [f, o] for s, f, o in cpu}}, "measured", {"device": "cpu"})
    allocator = _peak_pairs(mem, "cuda", "cuda peak bytes")
    same = bool(allocator) and all(f == o for _, f, o in allocator)
    allocator_txt = ("; the caching allocator's peak above the start of a call is equal at every shape ("
                     + ", ".join(f"{s}: {f:,} B" for s, f, _ in allocator) + "): an allocation both formulations share "
                     "dominates it, so it cannot tell them apart" if same else
                     "; the caching allocator's peak above the start of a call: "
                     + "; ".join(f"{s}: masked_fill {f:,} B vs {ORIGINAL} {o:,} B" for s, f, o in allocator)) \
        if allocator else ""
    lower = sum(f < o for _, f, o in pairs)
    equal = sum(f == o for _, f, o in pairs)
    verdict = verdicts.all_none_some(lower, len(pairs))
    ratios = [f / o for _, f, o in pairs if o]
    return Judgement(verdict, (f"CUDA, peak of the tensors one call creates (op level), the seed's two formulations: "
                               f"masked_fill's is lower at {lower}, equal at {equal} and higher at "
                               f"{len(pairs) - lower - equal} of {len(pairs)} shapes — "
                               + "; ".join(f"{s}: masked_fill {f:,} B vs {ORIGINAL} {o:,} B" for s, f, o in pairs)
                               + f"{allocator_txt}. {cpu_txt}"),
                     {"cuda": {s: [f, o] for s, f, o in pairs}, "allocator_equal": same}, "measured", {"device": "cuda"},
                     figure=extreme_figure(ratios, "×", "masked_fill's peak of new tensors over the original's",
                                           shape=[s for s, _, _ in pairs], device="cuda") if ratios else None)


KERNEL_COLUMNS = ("cuda kernels", "cuda kernels (deterministic)")


def kernels_of(mem: pd.DataFrame, name: str) -> list[str]:
    """The CUDA kernels a formulation launched, with deterministic algorithms off and on (errors left out)."""
    sub = mem[(mem["device"] == "cuda") & (mem["implementation"] == name)] if "cuda kernels" in mem else mem.iloc[0:0]
    return list(dict.fromkeys(k for col in KERNEL_COLUMNS if col in sub for ks in sub[col]
                              for k in (ks if isinstance(ks, list) else []) if not k.startswith("error:")))


INDEX_KERNEL_WORDS = ("index", "nonzero", "sort")


def index_kernels_of(kernels: list[str]) -> list[str]:
    return [k for k in kernels if any(w in k.lower() for w in INDEX_KERNEL_WORDS)]


def _ops_text(mem: pd.DataFrame, name: str) -> str:
    sub = mem[mem["implementation"] == name] if len(mem) else mem
    ops = list(dict.fromkeys(o for ops in sub["index ops"] for o in (ops or []))) if len(sub) else []
    return f"{name} dispatches {', '.join(ops) or 'no index ops'}"


def judge_different_kernels(res: Results) -> Judgement:
    """mask.different_kernels: on CUDA (deterministic algorithms off and on), confirmed when masked_fill launches
    none of the original's indexing kernels (names with index / nonzero / sort), refuted when it shares one;
    inconclusive when no kernel of the original carries such a name (the filter cannot tell). CPU only: needs_cuda."""
    mem = res.memory
    if mem.empty:
        return Judgement("error", "no op/kernel profile ran", basis="none")
    ops = f"{_ops_text(mem, ORIGINAL)}; {_ops_text(mem, 'masked_fill')}"
    if "cuda kernels" not in mem or not (mem["device"] == "cuda").any():
        return Judgement("needs_cuda", f"the claim is about CUDA kernels; at the ATen level {ops}", {}, "measured",
                         {"device": "cpu"})
    orig, fix = kernels_of(mem, ORIGINAL), kernels_of(mem, "masked_fill")
    orig_idx, fix_idx = index_kernels_of(orig), index_kernels_of(fix)
    shared = [k for k in fix if k in orig_idx]
    text = (f"masked_fill launches {len(fix_idx)} indexing kernels ({', '.join(k[:60] for k in fix_idx) or 'none'}) "
            f"against the original's {len(orig_idx)} ({', '.join(k[:60] for k in orig_idx[:4]) or 'none'}), "
            f"deterministic algorithms off and on; {len(shared)} shared; {ops}")
    data = {"original": orig, "masked_fill": fix}
    if not orig_idx:
        return Judgement("inconclusive", f"{text} — no kernel of the original has index/nonzero/sort in its name, so "
                                         "this run cannot tell its indexing kernels", data, "measured", {"device": "cuda"})
    return Judgement("refuted" if shared else "confirmed", text, data, "measured", {"device": "cuda"},
                     figure=count_figure(len(shared), len(orig_idx), "shared", "the original's indexing kernels that "
                                         "masked_fill launches too", device="cuda",
                                         mode="deterministic algorithms off and on"))
