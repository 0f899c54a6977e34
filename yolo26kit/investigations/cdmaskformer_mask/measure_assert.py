"""CDMaskFormer attention mask: the attempts to trigger the INTERNAL ASSERT on this torch, each formulation under
each setting, in isolated children (a device-side assert or a crash ends a child, never the notebook)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch

from ...conclusion import clip
from ... import env
from ...bench import isolate, timing
from .kernel import RULES, assert_numbers, fires, parse_assert
from .measure import devices
from .model import FORMULATIONS, Shape, full_rows, heads_for, make_mask, parse_shape, reference, shape_label


@dataclass(frozen=True)
class Attempt:
    """One condition under which the sort-path assert could fire."""

    formulation: str
    shape: Shape
    full_percent: int
    heads: int
    deterministic: bool
    device: str
    seed: int = 0

    @property
    def accumulate(self) -> bool:
        return FORMULATIONS[self.formulation].accumulate

    @property
    def sort_path(self) -> bool:
        """CUDA index_put_ takes index_put_with_sort_kernel with deterministic algorithms on or accumulate=True."""
        uses_index_put = FORMULATIONS[self.formulation].value_shape is not None
        return self.device == "cuda" and uses_index_put and (self.deterministic or self.accumulate)


def attempt_step(a: Attempt) -> dict[str, Any]:
    """Child-process body: build the mask, run the formulation under the attempt's settings, classify the end."""
    torch.use_deterministic_algorithms(a.deterministic)
    m = make_mask(a.shape, a.full_percent, a.seed, a.heads, a.device)
    expected = m.cpu().clone() if a.formulation == "index_put_accumulate" else reference(m)
    info = {"torch": torch.__version__, "deterministic_on": torch.are_deterministic_algorithms_enabled(),
            "full rows": full_rows(m)}
    try:
        out = FORMULATIONS[a.formulation].fn(m, m.sum(-1) == m.shape[-1])
        timing.sync(a.device)
        same = bool(torch.equal(out.cpu(), expected))
        return {**info, "outcome": "ok" if same else "wrong_result", "message": ""}
    except Exception as exc:  # the outcome is the data
        text = str(exc)
        first = text.splitlines()[0] if text else type(exc).__name__
        kind = "internal_assert" if "INTERNAL ASSERT" in text else ("shape_error" if "shape mismatch" in text else "error")
        nums = parse_assert(text)
        return {**info, "outcome": kind, "message": f"{type(exc).__name__}: {clip(first, 300)}",
                "lhs": nums[0] if nums else None, "rhs": nums[1] if nums else None}


def attempts(shapes: list[str], full_percents: list[int], heads: int, seed: int, device: str) -> list[Attempt]:
    """Every formulation × shape × full-row share × deterministic off/on × device (CUDA listed even when absent)."""
    return [Attempt(f, parse_shape(s), pct, heads_for(parse_shape(s)[0], heads), det, dev, seed)
            for dev in devices(device, include_absent_cuda=True)
            for s in shapes for pct in full_percents for det in (False, True) for f in FORMULATIONS]


def predictions(a: Attempt, n_full: int) -> dict[str, str]:
    """What each kernel rule predicts for the attempt: 'lhs vs rhs' when the assert would fire, else ''."""
    value = FORMULATIONS[a.formulation].value_shape
    out = {}
    for rule in RULES:
        if value is None:
            out[f"predicted {rule}"] = ""
            continue
        lhs, rhs = assert_numbers(a.shape, 2, (n_full,), value(n_full, a.shape[2]), rule)
        out[f"predicted {rule}"] = f"{lhs} vs {rhs}" if fires(lhs, rhs) else ""
    return out


CUDA_CHILDREN = 2  # the CUDA attempts are spread over this many children, run side by side


def _cuda_healthy() -> bool:
    """Whether the CUDA context still runs work (a device-side assert leaves it unusable)."""
    try:
        torch.cuda.synchronize()
        return bool(torch.ones(1, device="cuda").add_(1).sum() == 2)
    except Exception:  # the broken context is the answer
        return False


def attempt_batch(batch: list[Attempt]) -> list[dict[str, Any]]:
    """Child-process body for several attempts, in order; stops early when an attempt leaves CUDA unusable.

    The parent re-runs the attempts after that one in a fresh child (see run_attempts).
    """
    out = []
    for a in batch:
        out.append(attempt_step(a))
        if a.device == "cuda" and not _cuda_healthy():
            out[-1]["context"] = "CUDA context unusable after this attempt"
            break
    return out


def batches(items: list[Attempt], cuda_children: int = CUDA_CHILDREN) -> list[list[Attempt]]:
    """The CPU attempts share one child; the CUDA attempts are dealt over `cuda_children` children.

    Each child pays the start of a process (imports, CUDA context: ~6 s on the GPU runner), so one child per
    attempt made the CUDA part the notebook's longest. An attempt that breaks the CUDA context, or a child
    that dies, sends the rest to fresh children (run_attempts), so no outcome is lost to a neighbour.
    """
    cpu = [a for a in items if a.device != "cuda"]
    cuda = [a for a in items if a.device == "cuda"]
    n = max(1, min(cuda_children, len(cuda)))
    return ([cpu] if cpu else []) + [g for g in (cuda[i::n] for i in range(n)) if g]


def run_attempts(batch: list[Attempt], timeout: float) -> list[tuple[Attempt, isolate.Outcome, dict[str, Any]]]:
    """Run a batch in isolated children: (attempt, the child's outcome, the attempt's result) for every attempt.

    A child that returns early (CUDA context broken) gets a fresh child for the rest; one that dies or hangs
    is re-run one attempt per child, so each attempt's own end is recorded.
    """
    if batch[0].device == "cuda" and not env.cuda_available():
        o = isolate.skipped(batch[0].formulation, "no CUDA device in this run")
        return [(a, o, {}) for a in batch]
    done: list[tuple[Attempt, isolate.Outcome, dict[str, Any]]] = []
    todo = list(batch)
    while todo:
        o = isolate.run_step(attempt_batch, todo, timeout=timeout * len(todo),
                             step=f"{todo[0].device} assert attempts ({len(todo)})", env={"CUDA_LAUNCH_BLOCKING": "1"},
                             phase="other")
        if o.ok and isinstance(o.value, list) and o.value:
            done += [(a, o, v) for a, v in zip(todo, o.value)]
            todo = todo[len(o.value):]
        elif len(todo) == 1:
            done.append((todo[0], o, {}))
            todo = []
        else:
            done += [r for a in todo for r in run_attempts([a], timeout)]
            todo = []
    return done


def try_triggers(shapes: list[str], full_percents: list[int], heads: int = 8, seed: int = 0, device: str = "cpu",
                 timeout: float = 120) -> pd.DataFrame:
    """Run the attempts in isolated children, side by side: outcome, assert numbers, and the rules' predictions."""
    groups = batches(attempts(shapes, full_percents, heads, seed, device))
    with ThreadPoolExecutor(max_workers=max(1, len(groups))) as pool:
        results = [r for group in pool.map(lambda g: run_attempts(g, timeout), groups) for r in group]
    rows = []
    for a, o, value in results:
        n_full = full_rows(make_mask(a.shape, a.full_percent, a.seed, a.heads))  # the child's mask, rebuilt here
        rows.append({"device": a.device, "formulation": a.formulation, "shape": shape_label(a.shape),
                     "full %": a.full_percent, "deterministic": a.deterministic, "accumulate": a.accumulate,
                     "sort path": a.sort_path, "expected": FORMULATIONS[a.formulation].expected, **predictions(a, n_full),
                     "status": o.status, "outcome": value.get("outcome", o.status),
                     "full rows": value.get("full rows", n_full), "lhs": value.get("lhs"), "rhs": value.get("rhs"),
                     "message": value.get("message", o.error), "torch": value.get("torch", ""),
                     "context": value.get("context", ""), "child seconds": round(o.seconds, 2),
                     "attempts in child": len(o.value) if o.ok and isinstance(o.value, list) else 1})
    return pd.DataFrame(rows)
