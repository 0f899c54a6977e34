"""model_check's dynamic shapes: the export a user writes first (plain Dim for batch, height and width), the kit's
recipe where that fails (bench/dynamic_export.py: height, width = 32*Dim, an example batch of 2), the guards that
pinned a dimension with the user line that made each, and the sizes at which the exported program answers as eager.

A model whose first input is not an image batch [N, C, H, W] gets a dynamic batch only.
"""

from __future__ import annotations

import re
import time
import warnings
from typing import Any

import torch

from ...bench import dynamic_export, user_code
from .hazards import Scan, detect
from .model import build, compare, is_image_batch, outputs_of

EXAMPLE_BATCH = 2  # a batch of 1 is traced as a constant (0/1 specialization): dynamic_shapes' batch_from1
RECIPES = {  # name → (dynamic_shapes builder of bench.dynamic_export.SHAPES for H and W, words)
    "plain": ("dim", "Dim('height'/'width', min, max), Dim('batch', 1, max_batch)"),
    "kit recipe": ("derived", "32*Dim('_height'/'_width'), Dim('batch', 1, max_batch): bench/dynamic_export.py"),
}
_AXIS = re.compile(r"\.size\(\)\[(\d+)\]")
_GUARD_FAILED = re.compile(r"Guard failed: (.+)")


def dims(inputs: tuple[Any, ...], recipe: str, lo: int, hi: int, max_batch: int) -> tuple[Any, ...]:
    """torch.export's dynamic_shapes: the first input's batch (and an image batch's H, W), the other inputs static."""
    from torch.export import Dim

    first: dict[int, Any] = {0: Dim("batch", min=1, max=max_batch)}
    if is_image_batch(inputs):
        first.update(dynamic_export.SHAPES[RECIPES[recipe][0]](lo, hi, max_batch)[0])
    return (first, *([None] * (len(inputs) - 1)))


def resized(inputs: tuple[Any, ...], batch: int, height: int, width: int, seed: int) -> tuple[Any, ...]:
    """The inputs at another batch (and size, for an image batch): a seeded image of the same channels, or the first
    input repeated."""
    x = inputs[0]
    if is_image_batch(inputs):
        gen = torch.Generator().manual_seed(seed)
        first = torch.rand(batch, x.shape[1], height, width, generator=gen, dtype=x.dtype)
    else:
        first = x[:1].repeat(batch, *([1] * (x.ndim - 1)))
    return (first.to(x.device), *inputs[1:])


def _sites(violations: list[dict[str, Any]], guards: list[user_code.Guard]) -> list[dict[str, Any]]:
    """Each violation with the user line of the recorded guard it came from (same input axis, same constants)."""
    out = []
    axis_of = {v: int(m.group(1)) for v in {s for g in guards for s in g.sources} if (m := _AXIS.search(v))}
    for v in violations:
        axis = next((int(m.group(1)) for m in [_AXIS.search(v.get("raw", ""))] if m), None)
        on_axis = [g for g in guards if g.site and any(axis_of.get(s) == axis for s in g.sources)] if axis is not None \
            else [g for g in guards if g.site]
        same = [g for g in on_axis if user_code.constants(g.expr) == user_code.constants(v.get("raw", ""))]
        pick = (same or [g for g in on_axis if g.expr.startswith("Eq")] or on_axis or [None])[0]
        out.append({**v, "site": pick.site.to_dict() if pick and pick.site else None})
    return out


def attempt(spec: str, recipe: str, lo: int, hi: int, max_batch: int,
            seed: int) -> tuple[dict[str, Any], Any, list[user_code.Guard]]:
    """One dynamic torch.export of a freshly built model: its row, the program (None when it failed) and the shape
    guards it added, each with the user line that added it."""
    side = dynamic_export.example_size(lo, hi)
    net, inputs = build(spec, side, EXAMPLE_BATCH, seed)
    shapes = dims(inputs, recipe, lo, hi, max_batch)
    row: dict[str, Any] = {"recipe": recipe, "dynamic_shapes": RECIPES[recipe][1] if is_image_batch(inputs) else
                           "Dim('batch', 1, max_batch)", "example": "x".join(map(str, inputs[0].shape))}
    t0 = time.perf_counter()
    with warnings.catch_warnings(), user_code.user_stacks() as guards:
        warnings.simplefilter("ignore")
        try:
            with torch.no_grad():
                program = torch.export.export(net, inputs, dynamic_shapes=shapes, strict=False)
        except Exception as exc:  # the failure is the finding: its guards, with the user lines that made them
            message = str(exc)
            violations = _sites(dynamic_export.parse_violations(message), guards)
            row.update(status="error", seconds=time.perf_counter() - t0, violations=violations,
                       error=f"{type(exc).__name__}: {dynamic_export.first_line(message)[:300]}")
            return row, None, guards
    row.update(status="ok", seconds=time.perf_counter() - t0, violations=[],
               ranges=dynamic_export.program_ranges(program), error="")
    return row, program, guards


def sweep_cases(image: bool, sizes: list[int], max_batch: int) -> list[tuple[int, int, int, bool]]:
    """(batch, height, width, inside the exported range): every size square, the range's corners with the largest
    batch, and one size past the range (which the program should refuse)."""
    lo, hi = min(sizes), max(sizes)
    if not image:
        return [(1, 0, 0, True), (max_batch, 0, 0, True), (max_batch + 1, 0, 0, False)]
    cases = [(1, s, s, True) for s in sorted(set(sizes))] + [(max_batch, lo, hi, True), (1, hi + 32, hi + 32, False)]
    return list(dict.fromkeys(cases))


def sweep(program: Any, net: torch.nn.Module, inputs: tuple[Any, ...], sizes: list[int], max_batch: int,
          seed: int) -> list[dict[str, Any]]:
    """The exported program against eager at each sweep case (compare: model_check's rule)."""
    module = program.module()
    rows = []
    for batch, height, width, inside in sweep_cases(is_image_batch(inputs), sizes, max_batch):
        x = resized(inputs, batch, height or 0, width or 0, seed)
        row = {"batch": batch, "height": height or None, "width": width or None, "in_range": inside}
        with torch.no_grad():
            try:
                reference = outputs_of(net(*x))
            except Exception as exc:  # eager itself refuses this size: the program is not to blame
                rows.append({**row, "eager": "error", "program": "", "correct": None,
                             "error": f"{type(exc).__name__}: {dynamic_export.first_line(str(exc))[:200]}"})
                continue
            try:
                out = outputs_of(module(*x))
            except Exception as exc:
                failed = _GUARD_FAILED.search(str(exc))
                rows.append({**row, "eager": "ok", "program": "refused", "correct": False if inside else None,
                             "error": f"{type(exc).__name__}: {dynamic_export.first_line(str(exc))[:200]}",
                             "guard_failed": failed.group(1).strip()[:600] if failed else ""})
                continue
        delta = compare(out, reference)
        rows.append({**row, "eager": "ok", "program": "answered", "max_abs": delta.get("max_abs"),
                     "correct": delta.get("correct"), "error": ""})
    return rows


def refusals(rows: list[dict[str, Any]], guards: list[user_code.Guard]) -> list[dict[str, Any]]:
    """The program's guards that refuse a size of its range which eager runs: a dimension pinned without an export
    error (a reshape to the example's batch), each with the user line that made the guard."""
    found = {r["guard_failed"]: r for r in rows if r.get("in_range") and r.get("eager") == "ok"
             and r.get("program") == "refused" and r.get("guard_failed")}
    pinned = [{"kind": "the program refuses sizes eager runs", "dim": "", "raw": raw, "suggested_fix": "",
               "guard": dynamic_export.readable(raw)} for raw in found]
    return _sites(pinned, guards)


def step_dynamic(spec: str, sizes: list[int], max_batch: int, seed: int = 0) -> dict[str, Any]:
    """Isolated step: the plain dynamic export, the kit's recipe where it fails, the sweep of sizes against eager, the
    pinning guards (failed exports, refused sizes) and the dynamic program's own hazards (sym_min ...)."""
    lo, hi = min(sizes), max(sizes)
    attempts, program, violations, guards = [], None, [], []
    for recipe in RECIPES:
        row, program, guards = attempt(spec, recipe, lo, hi, max_batch, seed)
        attempts.append(row)
        violations += row["violations"]
        if program is not None:
            break
    fresh, inputs = build(spec, dynamic_export.example_size(lo, hi), 1, seed)  # eager never traced by export
    rows = sweep(program, fresh, inputs, sizes, max_batch, seed) if program is not None else []
    violations += refusals(rows, guards)
    hits = detect(Scan(dynamic_graph=program.graph_module if program is not None else None, violations=violations))
    return {"attempts": attempts, "hits": hits, "sweep": rows, "image": is_image_batch(inputs),
            "recipe": attempts[-1]["recipe"] if program is not None else ""}
