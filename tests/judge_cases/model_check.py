"""Synthetic runs that drive each judge of model_check to each decisive verdict (see README.md here)."""

from __future__ import annotations

from typing import Any

import torch

from yolo26kit.bench import isolate
from yolo26kit.investigations.model_check.measure import Case, Row, Run
from yolo26kit.investigations.model_check.model import compare

OUT = torch.linspace(-1.0, 1.0, 10).reshape(1, 10)
ENV = {"torch": "2.14.1", "executorch": "1.5.1", "device_type": "cpu"}
HIT = {"hazard": "floor_div_index", "where": "m.py:3", "file": "m.py", "line": 3, "function": "forward",
       "code": "x.gather(1, i // 2)", "what": "aten.floor_divide (int64) → aten.gather", "nodes": 1, "op": ""}


def row(path: str, status: str = "ok", output: torch.Tensor | None = None, error: str = "boom") -> Row:
    """A path's row as investigate leaves it, compared with OUT as eager's output."""
    case = Case("m:f", path, "cpu")
    if status == "ok":
        out = OUT if output is None else output
        value = {"outputs": [out], "median_ms": 2.0, "p10_ms": 1.9, "p90_ms": 2.2, "first_call_s": 0.5}
        r = Row(case, [isolate.Outcome(f"{case.tag}:run", "ok", 1.0, value=value)])
        r.delta = compare([out], [OUT])
        return r
    if status == "skipped":
        return Row(case, [isolate.skipped(f"{case.tag}:run", "needs a CUDA device")])
    return Row(case, [isolate.Outcome(f"{case.tag}:build", status, 1.0, error=error)])


def step(name: str, value: dict[str, Any] | None = None, status: str = "ok") -> isolate.Outcome:
    return isolate.Outcome(name, status, 1.0, value=value, error="" if status == "ok" else "killed")


def scan(hits: list[dict[str, Any]] = ()) -> isolate.Outcome:
    return step("hazard scan", {"export": "ok", "hits": list(hits), "edge": True, "edge_left": [], "nodes": 40})


def dynamic(sweep: list[dict[str, Any]] | None = None, recipe: str = "plain", hits: list = ()) -> isolate.Outcome:
    attempts = [{"recipe": "plain", "status": "ok" if recipe == "plain" else "error", "violations": [],
                 "error": "" if recipe == "plain" else "UserError: Constraints violated (height)",
                 "example": "2x3x96x96", "dynamic_shapes": "Dim"}]
    if recipe == "kit recipe":
        attempts.append({"recipe": "kit recipe", "status": "ok", "violations": [], "error": "", "example": "2x3x96x96",
                         "dynamic_shapes": "32*Dim"})
    if recipe == "":
        attempts.append({"recipe": "kit recipe", "status": "error", "violations": [], "error": "UserError: again",
                         "example": "2x3x96x96", "dynamic_shapes": "32*Dim"})
    good = {"batch": 1, "height": 64, "width": 64, "in_range": True, "eager": "ok", "program": "answered",
            "correct": True}
    return step("dynamic export", {"attempts": attempts, "hits": list(hits), "recipe": recipe, "image": True,
                                   "sweep": [good] if sweep is None else sweep})


def run(rows: list[Row] | None = None, scan_outcome: isolate.Outcome | None = None,
        dynamic_outcome: isolate.Outcome | None = None) -> Run:
    rows = rows if rows is not None else [row("eager"), row("aoti"), row("onnxruntime")]
    return Run("m:f", "cpu", 64, 1, rows, scan_outcome or scan(), dynamic_outcome or dynamic(), [64], dict(ENV))


WRONG = {"batch": 1, "height": 96, "width": 96, "in_range": True, "eager": "ok", "program": "answered",
         "correct": False}
GOOD = {"batch": 1, "height": 64, "width": 64, "in_range": True, "eager": "ok", "program": "answered", "correct": True}

CASES = {
    "model_check.known_hazard": {
        "confirmed": lambda: run(scan_outcome=scan([HIT])),
        "refuted": lambda: run(),
        "inconclusive": lambda: run(scan_outcome=step("hazard scan", status="timeout")),
    },
    "model_check.paths_run": {
        "confirmed": lambda: run([row("eager"), row("aoti"), row("tensorrt", "skipped")]),
        "refuted": lambda: run([row("eager", "error"), row("aoti", "crash")]),
        "partly": lambda: run([row("eager"), row("aoti", "error")]),
        "inconclusive": lambda: run([row("eager"), row("compile", "timeout")]),
    },
    "model_check.paths_match_eager": {
        "confirmed": lambda: run(),
        "refuted": lambda: run([row("eager"), row("aoti", output=OUT + 1.0)]),
        "partly": lambda: run([row("eager"), row("aoti"), row("onnxruntime", output=OUT * 2.0)]),
        "error": lambda: run([row("eager", "error"), row("aoti")]),
    },
    "model_check.dynamic_sizes": {
        "confirmed": lambda: run(dynamic_outcome=dynamic([GOOD], "kit recipe")),
        "refuted": lambda: run(dynamic_outcome=dynamic(recipe="")),
        "refuted (wrong answers)": lambda: run(dynamic_outcome=dynamic([WRONG])),
        "partly": lambda: run(dynamic_outcome=dynamic([GOOD, WRONG])),
        "inconclusive": lambda: run(dynamic_outcome=step("dynamic export", status="crash")),
    },
}
