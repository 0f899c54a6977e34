"""Synthetic measurements that drive each dynamic_shapes judge to confirmed and refuted (see README.md)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from yolo26kit.bench import dynamic_export
from yolo26kit.investigations import dynamic_shapes as ds

PARAMS = {"model": "yolo26n", "batch": 1, "min_size": 160, "max_size": 320, "max_batch": 4, "device": "cpu", "seed": 0}
G16 = "(1 + ((height - 1) // 16)) == (2 + 2*((height - 1) // 32))"
G8 = "(1 + ((height - 1) // 8)) == (4 + 4*((height - 1) // 32))"


def _violation(guard: str) -> dict[str, Any]:
    return {"kind": "guard not provable", "dim": "height", "range": "[320, 1280]", "guard": guard, "raw": guard,
            "suggested_fix": ""}


def _failed(name: str, guards: list[str], fixes: list[str], example: int = 640) -> dynamic_export.Exported:
    message = ("Constraints violated (height, width)! ...\nSuggested fixes:\n" + "".join(f"  {f}\n" for f in fixes))
    return dynamic_export.Exported(dynamic_export.SPECS[name], "error", 1.0, (1, 3, example, example), "UserError: Constraints violated",
                       message, [_violation(g) for g in guards])


def _ok(name: str, example: int = 256) -> dynamic_export.Exported:
    return dynamic_export.Exported(dynamic_export.SPECS[name], "ok", 1.0, (1, 3, example, example), program=object())


def _sweep(correct: dict[str, bool]) -> ds.measure_export.Sweep:
    rows = [{"spec": spec, "batch": 1, "height": h, "width": h, "multiple_of_32": True, "in_range": True,
             "eager": "ok", "eager_error": "", "program": "ok", "program_error": "", "agrees": good,
             "max_abs_diff": 0.0 if good else 1.0, "ranges_only": "not run", "ranges_only_agrees": None}
            for spec, good in correct.items() for h in (160, 320)]
    columns = ["spec", "batch", "height", "width", "multiple_of_32", "in_range", "eager", "eager_error", "program",
               "program_error", "agrees", "max_abs_diff", "ranges_only", "ranges_only_agrees"]
    return ds.measure_export.Sweep(pd.DataFrame(rows, columns=columns), 1e-4)


def _scan(runs_at: set[int], layer: str = "12 Concat") -> pd.DataFrame:
    return pd.DataFrame([{"axis": a, "size": 64 + r, "mod_32": r % 32, "eager": "ok" if r % 32 in runs_at else "error",
                          "error": "" if r % 32 in runs_at else "RuntimeError: sizes",
                          "failed_in": "" if r % 32 in runs_at else layer}
                         for a in ("height", "width") for r in range(1, 33)])


def _et(stock_status: str = "ok", stock_agrees: bool = True) -> ds.measure.EtRun:
    lowering = pd.DataFrame([{"program": "derived", "status": stock_status,
                              "error": "" if stock_status == "ok" else "LoweringFailed: sym_min"},
                             {"program": "derived_kit", "status": "ok", "error": ""}])
    runs = [{"program": p, "status": "ok", "height": h, "width": h, "letterboxed": False,
             "agrees": stock_agrees if p == "derived" else True, "matched_diff": 1e-4, "max_abs_diff": 1e-4}
            for p in ("derived", "derived_kit") for h in (160, 320)]
    return ds.measure.EtRun(lowering, pd.DataFrame(runs))


def _aoti(backend: str, outcome: str) -> pd.DataFrame:
    base = {"spec": "derived", "device": "cuda", "backend": backend}
    if outcome == "compile_guard":
        return pd.DataFrame([{**base, "step": "aoti compile derived", "status": "error",
                              "error": "UserError: Constraints violated (height, width)!"}])
    run = {**base, "step": "aoti run", "status": "ok", "eager": "ok", "rows": 300, "agrees": True, "matched_diff": 1e-5}
    return pd.DataFrame([{**base, "step": "aoti compile derived", "status": "ok", "error": ""},
                         {**run, "height": 160, "width": 160}, {**run, "height": 320, "width": 320}])


def results(*, seed_range: dynamic_export.Exported | None = None, specs: dict[str, dynamic_export.Exported] | None = None,
            correct: dict[str, bool] | None = None, scan: pd.DataFrame | None = None, et: ds.measure.EtRun | None = None,
            aoti: pd.DataFrame | None = None) -> ds.Results:
    run = ds.measure_export.SpecRun(specs or {}, dict(PARAMS), seed_range)
    return ds.Results(run, _sweep(correct or {}), scan if scan is not None else pd.DataFrame(),
                      et or ds.measure.EtRun(pd.DataFrame(), pd.DataFrame()), aoti if aoti is not None else pd.DataFrame())


SEED_FIX = ["height = 640", "width = 640"]
DERIVED_FIX = ["_height = Dim('_height', min=10, max=40)", "height = 32*_height"]

CASES = {
    "dynamic_shapes.plain_dim_guard_violation": {
        "confirmed": lambda: results(seed_range=_failed("dim", [G16, G8], SEED_FIX)),
        "partly": lambda: results(seed_range=_failed("dim", [G8], SEED_FIX)),
        "refuted": lambda: results(seed_range=_ok("dim", 640)),
    },
    "dynamic_shapes.guard_div8": {
        "confirmed": lambda: results(seed_range=_failed("dim", [G16, G8], SEED_FIX)),
        "refuted": lambda: results(seed_range=_failed("dim", [G16], SEED_FIX)),
    },
    "dynamic_shapes.suggested_fix_static": {
        "confirmed": lambda: results(seed_range=_failed("dim", [G16], SEED_FIX)),
        "refuted": lambda: results(seed_range=_failed("dim", [G16], DERIVED_FIX)),
        "partly": lambda: results(seed_range=_failed("dim", [G16], SEED_FIX + DERIVED_FIX)),
    },
    "dynamic_shapes.fundamentally_blocked": {
        "confirmed": lambda: results(specs={"dim": _failed("dim", [G16], DERIVED_FIX),
                                            "derived": _failed("derived", [G16], []), "derived_kit": _ok("derived_kit")},
                                     correct={"derived_kit": True}),
        "refuted": lambda: results(specs={"derived": _ok("derived")}, correct={"derived": True}),
        "partly": lambda: results(specs={"derived": _ok("derived")}, correct={"derived": False}),
        # the kit-modified model working does not refute a claim about the stock one
        "inconclusive": lambda: results(specs={"derived_kit": _ok("derived_kit")}, correct={"derived_kit": True}),
    },
    "dynamic_shapes.blocked_000": {
        "confirmed": lambda: results(specs={"dim": _failed("dim", [G16], DERIVED_FIX),
                                            "derived": _failed("derived", [G16], [])}),
        "refuted": lambda: results(specs={"auto": _ok("auto")}, correct={"auto": True}),
        # plain Dim failing alone: torch's suggested fix was not tried
        "inconclusive": lambda: results(specs={"dim": _failed("dim", [G16], DERIVED_FIX)}),
    },
    "dynamic_shapes.multiple_of_32": {
        "confirmed": lambda: results(scan=_scan({0}, "23 Detect")),
        "refuted": lambda: results(scan=_scan(set(range(32)))),
        "partly": lambda: results(scan=_scan({0, 25, 26, 27, 28, 29, 30, 31})),
    },
    "dynamic_shapes.xnnpack_dynamic": {
        "confirmed": lambda: results(et=_et("ok")),
        "refuted": lambda: results(et=_et("error")),
        "inconclusive": lambda: results(et=_et("timeout")),
    },
    "dynamic_shapes.aoti_cuda_dynamic": {
        "confirmed": lambda: results(aoti=_aoti("executorch-cuda", "compile_guard")),
        "refuted": lambda: results(aoti=_aoti("executorch-cuda", "runs")),
        # plain AOT Inductor is not the seed's back-end: the conditions rule makes its verdict inconclusive
        "inconclusive": lambda: results(aoti=_aoti("aoti", "runs")),
    },
}
