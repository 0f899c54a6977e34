"""Index dtype, root cause: the judges that read the division variants (division.py) and the workaround probe.

The variants change one thing at a time (the divisor's kind, the op that consumes the quotient, the division
itself), on the run's device and, on a CUDA run, on the CPU too; the judges name what decides the failure.
"""

from __future__ import annotations

from typing import Any

from ...conclusion import clip
from ...verdicts import Finding, Judgement, count_figure
from . import division
from .measure import Results

FINDING = "index_dtype.aoti_floordiv_tensor_divisor"
FINDING_TITLE = ("AOT Inductor lowers int64 floor division by a 0-d tensor through the floating path (pytorch "
                 "Inductor: div_mode's integer test misses IR-node divisors)")


def _rows(res: Results) -> dict[str, dict[str, dict[str, Any]]]:
    """device → variant → row, for every device whose division step finished."""
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for device, outcome in res.run.division.items():
        if outcome.ok and isinstance(outcome.value, list):
            found[device] = {r["variant"]: r for r in outcome.value}
    return found


def _shows(row: dict[str, Any] | None) -> str:
    return division.verdict_of(row) if row else "missing"


def _said(row: dict[str, Any]) -> str:
    kind = _shows(row)
    if kind == "fails":
        return f"fails at {row['stage']} ({clip(row['error'], 140)})"
    if kind == "float":
        return f"returns {row['aoti dtype']} (eager: {row['eager dtype']})"
    if kind == "wrong":
        return f"returns {row['aoti dtype']} with other values than eager (negative quotients)"
    return f"matches eager ({row['aoti dtype']})"


def _undecided(res: Results) -> Judgement | None:
    if not res.run.division:
        return Judgement("error", "the division variants were not run (the `division` probe is off)", basis="none")
    if not _rows(res):
        why = "; ".join(f"{d}: {o.status} {clip(o.error, 120)}" for d, o in res.run.division.items())
        return Judgement("inconclusive", f"the division variants' step did not finish ({why})", basis="none")
    return None


def _run(res: Results, devices: list[str]) -> dict[str, Any]:
    return {"backend": "aoti", "device": " and ".join(devices), "torch": res.environment.get("torch", "")}


def judge_floordiv_float_path(res: Results) -> Judgement:
    """The top-k's float32 index is AOT Inductor's floor division by a tensor divisor: the tensor variant is wrong
    where the scalar control is right, on some device of the run."""
    undecided = _undecided(res)
    if undecided:
        return undecided
    rows = _rows(res)
    parts, bitten = [], []
    for device, by in rows.items():
        scalar, tensor = by.get("scalar"), by.get("tensor")
        parts.append(f"{device}: scalar divisor {_said(scalar)}; tensor divisor {_said(tensor)}")
        if _shows(scalar) == "right" and _shows(tensor) in ("float", "wrong"):
            bitten.append(device)
    figure = count_figure(len(bitten), len(rows), "devices", "devices where AOTI gets the tensor-divisor floor "
                          "division wrong while the scalar one is right", device=" and ".join(rows), backend="aoti")
    run = _run(res, list(rows))
    evidence = "; ".join(parts)
    if not bitten:
        return Judgement("not_reproduced", f"{evidence}: on this torch AOT Inductor divides both ways right", {},
                         run=run, figure=figure)
    kind = {_shows(rows[d].get("tensor")) for d in bitten}
    what = ("a float32 quotient: the index every consumer receives" if "float" in kind
            else "an int64 quotient that truncates negative values instead of flooring")
    finding = Finding(FINDING, FINDING_TITLE,
                      f"{evidence} ({what})",
                      "torch.floor_divide(x, torch.tensor(80)) on int64 x, exported and compiled with "
                      "aoti_compile_and_package")
    return Judgement("confirmed", f"{evidence}: {what}", {"bitten": bitten}, run=run, figure=figure,
                     findings=(finding,))


def judge_gather_type_inference(res: Results) -> Judgement:
    """'Gather is simpler for AOTI, so its type inference works': the quotient gather receives is the division's,
    whatever the consumer; decided by the tensor-divisor variant and by gather's own row on each device."""
    undecided = _undecided(res)
    if undecided:
        return undecided
    rows = _rows(res)
    float_devices = [d for d, by in rows.items() if _shows(by.get("tensor")) == "float"]
    parts = [f"{d}: quotient {_said(by.get('tensor'))}; gather {_said(by.get('gather'))}; advanced indexing "
             f"{_said(by.get('index'))}" for d, by in rows.items()]
    run = _run(res, list(rows))
    evidence = "; ".join(parts)
    figure = count_figure(len(float_devices), len(rows), "devices", "devices where AOTI hands gather the same float32 "
                          "quotient as advanced indexing", device=run["device"], backend="aoti")
    if float_devices:
        return Judgement("refuted", f"{evidence}: AOTI's dtype for the quotient is float32 before either op sees it, "
                         "so gather is handed the same float32 index; which op fails (or tolerates it) is the "
                         "consumer's kernel, not a difference in type inference", {"float": float_devices}, run=run,
                         figure=figure)
    return Judgement("not_reproduced", f"{evidence}: on this torch the quotient is int64 for both ops, so there is no "
                     "float32 index for either to infer", {}, run=run, figure=figure)


def judge_operation_choice(res: Results) -> Judgement:
    """'Functionally equivalent operations can behave differently in AOTI': gather against advanced indexing on the
    same float32 quotient, device by device. The op changes the outcome only where one consumer's kernel tolerates
    the float index and the other's does not; the dtype itself is the division's either way."""
    undecided = _undecided(res)
    if undecided:
        return undecided
    rows = _rows(res)
    bitten = {d: by for d, by in rows.items() if _shows(by.get("tensor")) in ("float", "wrong")}
    run = _run(res, list(rows))
    differ = [d for d, by in bitten.items() if (_shows(by.get("gather")) == "right") != (_shows(by.get("index")) == "right")]
    figure = count_figure(len(differ), len(bitten) or len(rows), "devices", "devices where gather and advanced "
                          "indexing of the same quotient end differently", device=run["device"], backend="aoti")
    parts = "; ".join(f"{d}: gather {_said(by.get('gather'))}, advanced indexing {_said(by.get('index'))}"
                      for d, by in (bitten or rows).items())
    if not bitten:
        return Judgement("not_reproduced", f"{parts}: on this torch the division is right, so both ops get an int64 "
                         "index and behave alike", {}, run=run, figure=figure)
    if differ and len(differ) == len(bitten):
        return Judgement("confirmed", f"{parts}: the same float32 index fails one op and passes the other", {},
                         run=run, figure=figure)
    if differ:
        return Judgement("partly", f"{parts}: the op choice changes the outcome on {', '.join(differ)} only; the "
                         "float32 index is the division's on every device", {}, run=run, figure=figure)
    return Judgement("refuted", f"{parts}: both ops end alike on the float32 quotient", {}, run=run, figure=figure)


def judge_index_dtype_resolved(res: Results) -> Judgement:
    """'With gather the index dtype issue is completely resolved': the gather variant's lowering and the quotient
    it is handed, on every device the run has."""
    undecided = _undecided(res)
    if undecided:
        return undecided
    rows = _rows(res)
    broken = {d: by["gather"] for d, by in rows.items() if _shows(by.get("gather")) != "right"}
    floats = [d for d, by in rows.items() if _shows(by.get("tensor")) == "float"]
    run = _run(res, list(rows))
    clean = [d for d in rows if d not in broken and d not in floats]
    figure = count_figure(len(clean), len(rows), "devices", "devices where gather gets an int64 index and matches "
                          "eager", device=run["device"], backend="aoti")
    if broken:
        said = "; ".join(f"{d}: the gather variant {_said(r)}" for d, r in broken.items())
        return Judgement("refuted", f"{said}: gather still gets the float32 quotient of the floor division", {},
                         run=run, figure=figure)
    if floats:
        return Judgement("partly", f"gather runs on {', '.join(rows)}, but the quotient it is handed is still float32 "
                         f"on {', '.join(floats)}: the cause is not removed, only tolerated by this device's kernel",
                         {}, run=run, figure=figure)
    return Judgement("confirmed", "the quotient is int64 and the gather variant matches eager on "
                     f"{', '.join(rows)}", {}, run=run, figure=figure)


def _failed_path(cell: Any) -> str:
    """Why a workaround path did not hold: its error with the kernels a back-end lacks, and the finding it meets."""
    from ...backends.executorch_cuda_releases import failure_text, missing_kernels, outcome_text

    if cell.final.ok:
        return "differs from eager"
    said = f"{cell.final.status} ({failure_text(cell.final, 120)})"
    if any("split" in k for k in missing_kernels(outcome_text(cell.final))):
        said += ": past the float32 index, it meets index_dtype.et_cuda_split_copy_refused (the `preds.split` of the " \
                "postprocess), fixed from executorch 1.5.0"
    return said


def judge_floordiv_workaround(res: Results) -> Judgement:
    """The workaround variant (no integer floor division) lowers, loads and matches eager on every path tried."""
    cells = [c for c in res.run.probe_cells if c.variant == "gather_floatdiv" and not c.path.startswith("eager")]
    if not cells:
        return Judgement("error", "the workaround variant was not run (the `workaround` probe is off)", basis="none")
    from ...bench.detections import agrees

    ran = [c for c in cells if c.final.status != "skipped"]
    held = [c for c in ran if c.final.ok and agrees(c.delta)]
    parts = [f"{c.path}: " + ("matches eager" if c in held else _failed_path(c)) for c in ran]
    rows = _rows(res)
    workaround_rows = {d: by.get("workaround") for d, by in rows.items()}
    parts += [f"division alone on {d}: {_said(r)}" for d, r in workaround_rows.items() if r]
    figure = count_figure(len(held), len(ran), "paths", "paths where the workaround top-k runs and matches eager",
                          device=res.device)
    run = {"backend": ", ".join(c.path for c in ran), "device": res.device, "topk": "gather_floatdiv"}
    evidence = "; ".join(parts)
    if not ran:
        return Judgement("inconclusive", f"no path of the workaround variant ran: {evidence}", basis="none", run=run)
    division_ok = all(_shows(r) == "right" for r in workaround_rows.values() if r)
    verdict = "confirmed" if len(held) == len(ran) and division_ok else ("partly" if held else "refuted")
    return Judgement(verdict, evidence, {}, run=run, figure=figure)


JUDGES = {
    "index_dtype.floordiv_float_path": judge_floordiv_float_path,
    "index_dtype.aoti_gather_type_inference": judge_gather_type_inference,
    "index_dtype.index_dtype_resolved": judge_index_dtype_resolved,
    "index_dtype.operation_choice_matters": judge_operation_choice,
    "index_dtype.floordiv_workaround": judge_floordiv_workaround,
}
