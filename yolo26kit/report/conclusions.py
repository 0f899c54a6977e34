"""Each investigation's conclusion: 2–4 plain sentences and one headline figure, computed from its results.json.

`conclude(results)` calls the function registered for the investigation (CONCLUDERS) or `generic`. A function
reads the results dict through `View` — verdicts by claim id (stable), numbers from a claim's `data` when the key
is there, else from its evidence with a pattern, else it does without the number. Every sentence is gated on a
verdict in this run: a claim with no verdict writes no sentence, and a sentence never states more than the verdict
and the numbers it quotes. Verdicts that do not decide are said plainly ("this run cannot decide", "needs CUDA —
this run cannot tell"). A function that raises (results changed shape) falls back to `generic`.

`BUG_CLAIMS` names, per investigation, the claims about the bug itself — the only ones that answer "bites here?"
(report.answer) — and `DEVICE` the device class the bug needs when the ledger entry has no `conditions.device`.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable

PLAIN = {"confirmed": "holds", "refuted": "does not hold", "partly": "holds only in part",
         "not_reproduced": "did not reproduce", "inconclusive": "this run cannot decide",
         "needs_cuda": "needs CUDA — this run cannot tell", "error": "could not be judged (its judge failed)"}
UNDECIDED = ("inconclusive", "needs_cuda", "error")

# The claims about the bug itself, per investigation (ledger ids); "bites here?" is answered from these only.
BUG_CLAIMS: dict[str, list[str]] = {
    "aoti_load": ["aoti.load_crash_cause"],
    "cdmaskformer_mask": ["mask.assert_trigger"],
    "cuda_graphs": ["cuda_graphs.item_skips"],
    "deployment_paths": ["deployment_paths.cuda_aoti_backbone_only"],
    "dynamic_shapes": ["dynamic_shapes.plain_dim_guard_violation", "dynamic_shapes.guard_div8"],
    "index_dtype": ["index_dtype.et_cuda_float_index", "index_dtype.et_cuda_full_model"],
    "view_copy": ["view_copy.edge_introduces_slice_copy"],
}
# The device class a bug needs when its ledger entry names no conditions.device ("any": every device shows it).
DEVICE: dict[str, str] = {"aoti_load": "cuda", "cdmaskformer_mask": "cuda", "cuda_graphs": "cuda",
                          "deployment_paths": "cuda", "index_dtype": "cuda", "dynamic_shapes": "any",
                          "view_copy": "any"}


def device_class(entry: dict[str, Any] | None, investigation: str) -> str:
    """cuda / cpu / any: the ledger entry's conditions.device when present (a list: cuda only if all are cuda),
    else the investigation's DEVICE."""
    dev = ((entry or {}).get("conditions") or {}).get("device")
    if isinstance(dev, str) and dev:
        return dev.lower()
    if isinstance(dev, list) and dev:
        devs = {str(d).lower() for d in dev}
        return devs.pop() if len(devs) == 1 else "any"
    return DEVICE.get(investigation, "any")


@dataclass
class Conclusion:
    """What an investigation found in one run: sentences by question (bites / fix / cost / other) and a figure."""

    investigation: str
    device: str
    by_question: dict[str, str] = field(default_factory=dict)
    figure: dict[str, str] | None = None  # {"value", "label", "claim"}
    generic: bool = False
    specific: tuple[str, ...] = ()  # the questions whose sentence the investigation's own function wrote

    def sentence(self, question: str) -> str:
        """The investigation's own sentence for a question ('' when only the generic counts speak to it)."""
        return self.by_question.get(question, "") if question in self.specific else ""

    @property
    def sentences(self) -> list[str]:
        return [s for s in self.by_question.values() if s][:4]


class View:
    """Read-only access to one results.json dict that never raises on a missing field."""

    def __init__(self, results: dict[str, Any]) -> None:
        self.results = results
        self.claims = {c["id"]: c for c in results.get("claims") or [] if isinstance(c, dict) and c.get("id")}
        env = results.get("environment") or {}
        self.device = str(env.get("device_type") or "unknown")
        self.torch = str(env.get("torch") or "")

    def v(self, cid: str) -> str:
        return str((self.claims.get(cid) or {}).get("verdict") or "")

    def ev(self, cid: str) -> str:
        return " ".join(str((self.claims.get(cid) or {}).get("evidence") or "").split())

    def data(self, cid: str, key: str) -> Any:
        data = (self.claims.get(cid) or {}).get("data")
        return data.get(key) if isinstance(data, dict) else None

    def m(self, cid: str, pattern: str) -> tuple[str, ...] | None:
        """The groups of `pattern`'s first match in the claim's evidence, None without a match."""
        found = re.search(pattern, self.ev(cid))
        return found.groups() if found else None

    def table(self, name: str) -> list[dict[str, Any]]:
        rows = (self.results.get("tables") or {}).get(name)
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def plain(r: View, cid: str, subject: str) -> str:
    """'<subject>: <verdict in plain words>.' — the fallback sentence for a claim with a verdict, '' without."""
    v = r.v(cid)
    return f"{subject}: {PLAIN.get(v, v)}." if v else ""


def _num(x: Any) -> str:
    try:
        f = float(x)
    except (TypeError, ValueError):
        return str(x)
    return f"{f:.3g}"


def _numbers(value: Any) -> list[float]:
    """The numbers in a claim's data value: a list, or a dict of lists (per case) flattened; [] for anything else."""
    items = [x for v in value.values() for x in (v if isinstance(v, list) else [v])] if isinstance(value, dict) \
        else value if isinstance(value, list) else []
    return sorted(float(x) for x in items if isinstance(x, (int, float)) and not isinstance(x, bool))


def _span(values: list[float], unit: str) -> str:
    """'0.55–0.79×' for a sorted list of numbers ('0.3 s' when all are the same)."""
    lo, hi = _num(values[0]), _num(values[-1])
    return f"{lo}{unit}" if lo == hi else f"{lo}–{hi}{unit}"


def _seed_model_pair(pairs: Any) -> dict[str, Any] | None:
    """xnnpack_vs_eager's pair for the seed's yolo26n (else the first) with its per-round ratios, None without."""
    usable = [p for p in pairs if isinstance(p, dict) and _numbers(p.get("rounds"))] if isinstance(pairs, list) else []
    pair = next((p for p in usable if p.get("model") == "yolo26n"), usable[0] if usable else None)
    return {"model": pair.get("model"), "rounds": _numbers(pair.get("rounds"))} if pair else None


# deployment_paths.cuda_aoti_backbone_only's data "kind" → what the back-end did with the whole model
_ET_CUDA_WHOLE_MODEL = {"failed": "fails to lower the whole YOLO26", "ran_differs": "runs the whole YOLO26 but "
                        "not with eager's output", "not_run": "lowers the whole YOLO26 (it was not run here)",
                        "ran_ok": "lowers and runs the whole YOLO26, matching eager"}


def _show(value: Any) -> str:
    """A condition's value in words: a range as 'min–max', a list joined."""
    if isinstance(value, dict):
        return f"{value.get('min', '')}–{value.get('max', '')}".strip("–")
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def _first(*texts: str) -> str:
    return next((t for t in texts if t), "")


# ---------------------------------------------------------------- one function per investigation


def aoti_load(r: View) -> tuple[dict[str, str], dict[str, str] | None]:
    cid, v = "aoti.load_crash_cause", r.v("aoti.load_crash_cause")
    conditions = (r.claims.get(cid) or {}).get("conditions") or {}
    out: dict[str, str] = {}
    crashed = r.m(cid, r"(\d+) of (\d+) packages? crashed")
    loaded = r.m(cid, r"(\d+) of (\d+) packages? loaded and ran") if v != "confirmed" else None
    if v == "confirmed":
        n = f": {crashed[0]} of {crashed[1]} packages crashed when loaded as they are" if crashed else ""
        cause = r.m(cid, r"with the ([\w+-]+ locale mix)")
        out["bites"] = f"Loading an AOT Inductor package crashes on this stack{n}" + \
            (f" (cause named from the native backtrace: the {cause[0]})." if cause else ".")
        ran = r.m(cid, r"with the system libstdc\+\+ loaded first (?:all )?(\d+)(?: of (\d+))? ran")
        if ran:
            total = ran[1] or (crashed[0] if crashed else "")
            out["fix"] = (f"Loading the system libstdc++ first works around it: {ran[0]}"
                          f"{f' of {total}' if total else ''} crashed packages then ran.")
    elif v == "not_reproduced":
        n = f": {loaded[0]} of {loaded[1]} packages loaded and ran as they are" if loaded else ""
        out["bites"] = f"Loading the AOT Inductor package did not crash on this {r.device} run{n}."
        if r.device != "cuda":
            out["other"] = "The crash was seen on a CUDA runner's stack: whether it bites there, this run cannot tell."
    elif v == "inconclusive" and loaded:
        out["bites"] = (f"Loading the AOT Inductor package did not crash on this {r.device} run: {loaded[0]} of "
                        f"{loaded[1]} packages loaded and ran as they are.")
        differ = ", ".join(f"{k} {_show(conditions.get('seed', {}).get(k))}" for k in conditions.get("differ", []))
        out["other"] = (f"The crash and its cause were seen on another stack ({differ}): this run cannot decide them."
                        if differ else "Whether the crash and its cause hold, this run cannot decide.")
    else:
        out["bites"] = plain(r, cid, "The package-load crash")
    figure = None
    if crashed or loaded:
        figure = ({"value": f"{crashed[0]}/{crashed[1]}", "label": "packages crashed when loaded as they are"}
                  if crashed else {"value": f"{loaded[0]}/{loaded[1]}", "label": "packages loaded and ran as they are"})
        figure["claim"] = cid
    return out, figure


def cdmaskformer_mask(r: View) -> tuple[dict[str, str], dict[str, str] | None]:
    out: dict[str, str] = {}
    v = r.v("mask.assert_trigger")
    attempts = r.m("mask.assert_trigger", r"(\d+) of (\d+) CUDA attempts assert")
    if v in ("not_reproduced", "confirmed") and attempts:
        did = "reproduces" if v == "confirmed" else "does not reproduce"
        out["bites"] = (f"The seed's INTERNAL ASSERT {did} on torch {r.torch or 'this torch'}: "
                        f"{attempts[0]} of {attempts[1]} CUDA attempts assert.")
    elif v:
        out["bites"] = plain(r, "mask.assert_trigger", "Whether the seed's INTERNAL ASSERT bites on this torch")
    eq = r.m("mask.equivalent", r"(\d+)/(\d+) cases")
    if r.v("mask.equivalent") == "confirmed" and eq:
        out["fix"] = f"masked_fill gives the same mask as the original formulation in {eq[0]}/{eq[1]} cases."
    elif r.v("mask.equivalent"):
        out["fix"] = plain(r, "mask.equivalent", "masked_fill gives the same mask as the original")
    figure = None
    speed = []
    for cid, size in (("mask.speedup_small_20x", "small"), ("mask.speedup_medium_3_5x", "medium")):
        rounds = _numbers(r.data(cid, f"{r.device}_rounds"))
        x = statistics.median_high(rounds) if rounds else None
        if x is None or not r.v(cid):
            continue
        claimed = r.data(cid, "claimed")
        seed = f", seed: {_num(claimed)}×" if isinstance(claimed, (int, float)) else ""
        speed.append(f"{_num(x)}× as fast as the original on {size} masks (median round; the seed's factor "
                     f"{PLAIN.get(r.v(cid), r.v(cid))}{seed})")
        if figure is None:
            figure = {"value": f"{_num(x)}×", "label": f"masked_fill speed-up on {size} masks, {r.device}{seed}",
                      "claim": cid}
    if speed:
        where = "" if r.device == "cuda" else " (the seed's speed-ups are CUDA figures)"
        out["cost"] = f"On this {r.device} run masked_fill is " + " and ".join(speed) + where + "."
    return out, figure


def cuda_graphs(r: View) -> tuple[dict[str, str], dict[str, str] | None]:
    out: dict[str, str] = {}
    syncs = r.m("cuda_graphs.item_syncs", r"(\d+)/(\d+) item cases synchronise")
    v = r.v("cuda_graphs.item_skips")
    if syncs and r.v("cuda_graphs.item_syncs") in ("confirmed", "partly"):
        out["bites"] = (f".item() in the decode step bites: {syncs[0]} of {syncs[1]} .item() cases synchronise "
                        f"the stream every step; the seed's skip/split of CUDA graphs around it {PLAIN.get(v, 'was not judged')}.")
    elif v:
        out["bites"] = plain(r, "cuda_graphs.item_skips", "CUDA graphs are skipped or split around .item()")
    fixes = []
    for cid, what in (("cuda_graphs.int_enables", "int() instead of .item()"),
                      ("cuda_graphs.tensor_position", "keeping the position as a tensor")):
        if r.v(cid) and r.v(cid) not in UNDECIDED:
            fixes.append(f"{what} {'gives' if r.v(cid) == 'confirmed' else 'does not give' if r.v(cid) == 'refuted' else 'partly gives'} "
                         "full CUDA graphs")
        elif r.v(cid):
            fixes.append(f"{what}: {PLAIN[r.v(cid)]}")
    if fixes:
        out["fix"] = "Fixes: " + "; ".join(fixes) + "."
    figure = None
    ratios = _numbers(r.data("cuda_graphs.speedup_2_5x", "ratios"))
    first = _numbers(r.data("cuda_graphs.first_inference_60s", "first_s"))
    costs = []
    if ratios and r.v("cuda_graphs.speedup_2_5x") not in UNDECIDED:
        costs.append(f"full CUDA graphs run a forecast {_span(ratios, '×')} faster than the default compile, round by "
                     "round (seed: 2–5×)")
        figure = {"value": f"{_num(statistics.median(ratios))}×",
                  "label": "forecast with full CUDA graphs vs default compile, median round (seed: 2–5×)",
                  "claim": "cuda_graphs.speedup_2_5x"}
    if first and r.v("cuda_graphs.first_inference_60s") not in UNDECIDED:
        costs.append(f"the first call takes {_span(first, ' s')} (seed: 30–120 s)")
    if costs:
        out["cost"] = "Cost: " + "; ".join(costs) + "."
    elif r.v("cuda_graphs.speedup_2_5x"):
        out["cost"] = plain(r, "cuda_graphs.speedup_2_5x", "The seed's 2.5× speed-up")
    return out, figure


def deployment_paths(r: View) -> tuple[dict[str, str], dict[str, str] | None]:
    out: dict[str, str] = {}
    v = r.v("deployment_paths.cuda_aoti_backbone_only")
    kind = r.data("deployment_paths.cuda_aoti_backbone_only", "kind")
    if v not in UNDECIDED and kind in _ET_CUDA_WHOLE_MODEL:
        out["bites"] = (f"ExecuTorch's CUDA back-end with its default options {_ET_CUDA_WHOLE_MODEL[kind]} "
                        f"(the seed's backbone-only limit {PLAIN.get(v, v)}).")
    elif v:
        out["bites"] = plain(r, "deployment_paths.cuda_aoti_backbone_only",
                             "CUDA AOT Inductor runs only the backbone")
    fixes = []
    variants = r.m("deployment_paths.xnnpack_all_variants", r"(\d+) of (\d+) YOLO26 variants")
    if variants and r.v("deployment_paths.xnnpack_all_variants") not in UNDECIDED:
        fixes.append(f"XNNPACK lowered, ran and matched eager on {variants[0]} of {variants[1]} variants tried")
    modes = r.m("deployment_paths.torch_compile_alternative", r"(\d+) of (\d+) torch.compile modes")
    if modes and r.v("deployment_paths.torch_compile_alternative") not in UNDECIDED:
        fixes.append(f"torch.compile ran the whole model correctly in {modes[0]} of {modes[1]} modes")
    if fixes:
        out["fix"] = "; ".join(fixes) + "."
    figure = None
    pair = _seed_model_pair(r.data("deployment_paths.xnnpack_vs_eager", "pairs"))
    v = r.v("deployment_paths.xnnpack_vs_eager")
    if pair and v not in UNDECIDED:
        out["cost"] = (f"On this machine's CPU {pair['model']} on XNNPACK takes {_span(pair['rounds'], '×')} eager "
                       f"PyTorch's time, round by round (the seed's XNNPACK-beats-eager claim {PLAIN[v]}).")
    fastest = [row for row in r.table("fastest") if row.get("median_ms") is not None]
    fastest.sort(key=lambda row: (str(row.get("device")) != r.device, str(row.get("model"))))
    if fastest:
        row = fastest[0]
        figure = {"value": f"{_num(row.get('median_ms'))} ms",
                  "label": f"fastest correct path for {row.get('model')} on {row.get('device')}: "
                           f"{row.get('fastest correct')}", "claim": "deployment_paths.gpu_latency"}
    return out, figure


def dynamic_shapes(r: View) -> tuple[dict[str, str], dict[str, str] | None]:
    out: dict[str, str] = {}
    guards = r.data("dynamic_shapes.plain_dim_guard_violation", "guards")
    if r.v("dynamic_shapes.plain_dim_guard_violation") == "confirmed" and isinstance(guards, list) and guards:
        div8 = " (the seed's //8 guard among them)" if r.v("dynamic_shapes.guard_div8") == "confirmed" else ""
        out["bites"] = (f"Exporting YOLO26 with plain dynamic height/width fails on this stack: torch.export raises "
                        f"UserError with {len(guards)} unprovable guards{div8}.")
    elif r.v("dynamic_shapes.plain_dim_guard_violation"):
        out["bites"] = plain(r, "dynamic_shapes.plain_dim_guard_violation", "Plain dynamic dims hit a guard violation")
    specs = r.m("dynamic_shapes.fundamentally_blocked", r"(\d+) of (\d+) dynamic H/W specs of the stock model export and match eager")
    figure = None
    if specs and r.v("dynamic_shapes.fundamentally_blocked") in ("refuted", "partly"):
        out["fix"] = (f"It is not a dead end: {specs[0]} of {specs[1]} dynamic H/W specs of the stock model export and match "
                      "eager at "
                      "every multiple of 32 swept.")
        figure = {"value": f"{specs[0]}/{specs[1]}", "label": "dynamic H/W specs that export and match eager",
                  "claim": "dynamic_shapes.fundamentally_blocked"}
    elif r.v("dynamic_shapes.fundamentally_blocked"):
        out["fix"] = plain(r, "dynamic_shapes.fundamentally_blocked", "Dynamic H/W export is fundamentally blocked")
    sizes = r.m("dynamic_shapes.multiple_of_32", r"fails at (\d+) of (\d+) non-multiple sizes mod 32")
    if sizes and r.v("dynamic_shapes.multiple_of_32") not in UNDECIDED:
        out["other"] = (f"Eager YOLO26 itself fails at {sizes[0]} of {sizes[1]} non-multiple sizes mod 32, so inputs must stay "
                        "multiples of 32 (or be letterboxed).")
    return out, figure


def index_dtype(r: View) -> tuple[dict[str, str], dict[str, str] | None]:
    out: dict[str, str] = {}

    def error(cid: str) -> str:
        names = re.findall(r"\b(\w+(?:Error|Exception))\b", r.ev(cid))
        return f" ({', '.join(dict.fromkeys(names[:3]))})" if names else ""

    bits = []
    for cid, what in (("index_dtype.et_cuda_float_index", "the legacy top-k"),
                      ("index_dtype.et_cuda_full_model", "the full model")):
        v = r.v(cid)
        if v == "confirmed":
            bits.append(f"fails for {what}{error(cid)}")
        elif v in ("refuted", "not_reproduced"):
            bits.append(f"succeeds for {what}")
        elif v:
            bits.append(f"for {what}: {PLAIN.get(v, v)}")
    if bits:
        out["bites"] = "ExecuTorch's CUDA lowering " + "; ".join(bits) + "."
    eq = r.m("index_dtype.gather_equivalent", r"(\d+)/(\d+) random cases bit-identical")
    figure = None
    fixes = []
    if eq and r.v("index_dtype.gather_equivalent") == "confirmed":
        fixes.append(f"the gather rewrite is bit-identical in {eq[0]}/{eq[1]} random cases")
        figure = {"value": f"{eq[0]}/{eq[1]}", "label": "random cases where gather equals the original top-k",
                  "claim": "index_dtype.gather_equivalent"}
    v = r.v("index_dtype.gather_removes_index")
    if v:
        fixes.append(f"the gather variant getting past the CUDA lowering: {PLAIN.get(v, v)}")
    xn = r.m("index_dtype.xnnpack_full_model", r"([\d.]+)% of eager's detections matched")
    if xn and r.v("index_dtype.xnnpack_full_model") == "confirmed":
        fixes.append(f"on XNNPACK the whole gather model matches {xn[0]}% of eager's detections")
    if fixes:
        out["fix"] = "Fix: " + "; ".join(fixes) + "."
    return out, figure


def view_copy(r: View) -> tuple[dict[str, str], dict[str, str] | None]:
    out: dict[str, str] = {}
    edge = r.m("view_copy.edge_introduces_slice_copy", r"edge graph (\d+) slice_copy")
    still = r.m("view_copy.reinplace_misses_slice_copy", r"(\d+) of (\d+) slice_copy nodes are still slice_copy")
    if edge and r.v("view_copy.edge_introduces_slice_copy") in ("confirmed", "partly"):
        tail = (f", and {still[0]} of {still[1]} survive Inductor's post-grad passes"
                if still and r.v("view_copy.reinplace_misses_slice_copy") not in UNDECIDED else "")
        out["bites"] = f"The edge dialect turns slices into copies here: {edge[0]} slice_copy nodes in the edge graph{tail}."
    elif r.v("view_copy.edge_introduces_slice_copy"):
        out["bites"] = plain(r, "view_copy.edge_introduces_slice_copy", "The edge dialect introduces slice_copy")
    rep = r.m("view_copy.replaces_slice_copy", r"(\d+) of (\d+) non-mutated slice_copy nodes")
    eq = r.m("view_copy.equivalent", r"(\d+) of (\d+) comparisons bit-identical")
    fixes = []
    if rep and r.v("view_copy.replaces_slice_copy") not in UNDECIDED:
        fixes.append(f"the pass turns {rep[0]} of {rep[1]} non-mutated slice_copy nodes back into views")
    if eq and r.v("view_copy.equivalent") not in UNDECIDED:
        fixes.append(f"{eq[0]} of {eq[1]} comparisons stay bit-identical")
    if fixes:
        out["fix"] = ("; ".join(fixes) + ".")[0].upper() + ("; ".join(fixes) + ".")[1:]
    figure = None
    kv = r.data("view_copy.more_efficient", "kv_decode")
    speed = _numbers(kv.get("ratios")) if isinstance(kv, dict) else []
    v = r.v("view_copy.more_efficient")
    if speed and v:
        out["cost"] = (f"On {r.device} the pass makes the kv_decode step {_span(speed, '×')} faster, round by round "
                       f"(the seed's 'more efficient' {PLAIN.get(v, v)}).")
        figure = {"value": f"{_num(statistics.median(speed))}×",
                  "label": f"kv_decode step without / with the pass (AOT Inductor), median round, {r.device}",
                  "claim": "view_copy.more_efficient"}
    return out, figure


CONCLUDERS: dict[str, Callable[[View], tuple[dict[str, str], dict[str, str] | None]]] = {
    "aoti_load": aoti_load, "cdmaskformer_mask": cdmaskformer_mask, "cuda_graphs": cuda_graphs,
    "deployment_paths": deployment_paths, "dynamic_shapes": dynamic_shapes, "index_dtype": index_dtype,
    "view_copy": view_copy,
}

# ---------------------------------------------------------------- generic and entry point

QUESTION_WORDS = {"bites": "Does the problem bite here", "fix": "Does the fix hold", "cost": "Is the cost as the seed says",
                  "other": "Other claims"}


def generic(r: View, entries: list[dict[str, Any]] | None = None) -> tuple[dict[str, str], dict[str, str] | None]:
    """Per question: the verdicts of its claims counted, in plain words; the figure: claims decided of judged."""
    by_q: dict[str, list[str]] = {}
    question = {e.get("id"): e.get("question") or "other" for e in entries or []}
    for cid in r.claims:
        by_q.setdefault(question.get(cid, "other"), []).append(r.v(cid))
    out = {}
    for q in ("bites", "fix", "cost", "other"):
        vs = by_q.get(q)
        if not vs:
            continue
        counts = {v: vs.count(v) for v in dict.fromkeys(vs)}
        out[q] = (f"{QUESTION_WORDS[q]}? Of {len(vs)} claim{'s' if len(vs) != 1 else ''}: "
                  + ", ".join(f"{n} {PLAIN.get(v, v)}" for v, n in counts.items()) + ".")
    decided = sum(1 for c in r.claims if r.v(c) not in UNDECIDED)
    figure = {"value": f"{decided}/{len(r.claims)}", "label": "claims this run decided", "claim": ""} if r.claims else None
    return out, figure


def conclude(results: dict[str, Any], entries: list[dict[str, Any]] | None = None) -> Conclusion:
    """The conclusion of one investigation's results.json dict (see the module doc)."""
    r = View(results or {})
    inv = str((results or {}).get("investigation") or "")
    fn = CONCLUDERS.get(inv)
    is_generic = fn is None
    try:
        by_q, figure = fn(r) if fn else generic(r, entries)
    except Exception:  # noqa: BLE001 - results changed shape: say what the verdicts say
        by_q, figure, is_generic = *generic(r, entries), True
    specific = () if is_generic else tuple(q for q, s in by_q.items() if s)
    if fn and len([s for s in by_q.values() if s]) < 2:  # too little for a conclusion: add the counts
        extra, fig2 = generic(r, entries)
        for q, s in extra.items():
            by_q.setdefault(q, s)
        figure = figure or fig2
    if figure is None:
        figure = generic(r, entries)[1]
    if (results or {}).get("notebook_error"):
        by_q = {"other": f"The notebook failed: {str(results['notebook_error'])[:160]}", **by_q}
    return Conclusion(inv, r.device, {q: s for q, s in by_q.items() if s}, figure, is_generic, specific)
