"""The templates of `yolo26kit new --kind error`: a bug where eager and a compile or export path disagree.

The generated investigation runs `subject` (the code as reported) and `fixed` (the proposed rewrite) eager and on
each path (torch.compile, torch.export), one isolated step each, and judges what a bug report of this shape
claims: the path raises, or returns another dtype, shape or value than eager; the fix agrees. No timing. Its
author replaces `subject`, `fixed` and the claims' words; run/scaffold.py writes it, docs/authoring.md shows it.
"""

from __future__ import annotations

INIT = '''"""$title

Scaffolded by `yolo26kit new --kind error`: measure.py runs the subject eager and on each path (torch.compile,
torch.export) and compares, judge.py turns the comparisons into verdicts (one judge per claim of
data/claims/$name.json), show.py makes the tables (TABLES); the notebook calls all three. conclude.py writes the
conclusion the pages open with. See docs/authoring.md.
"""

from __future__ import annotations

from ... import catalog
from .judge import JUDGES, judge
from .measure import measure
from .show import TABLES, record_tables

# what the notebook calls, and what the kit reads (JUDGES, TABLES); tests import from .measure, .judge, .show
__all__ = ["JUDGES", "TABLES", "judge", "measure", "record_tables"]

catalog.register(catalog.Investigation(
    name="$name",
    title="$title",
    seeds=("$source",),
    profiles={
        # quick: what a laptop CPU runs in seconds; full: what a run worth sharing tries
        "quick": {"sizes": [8]},
        "full": {"sizes": [8, 1024]},
    },
    checks={"sizes": lambda v: None if v and all(int(s) > 0 for s in v) else "give positive sizes"},
    judges=JUDGES,
))
'''

MEASURE = '''"""What $name measures: `subject` (as reported) and `fixed` (the proposed rewrite), eager and on each
path, per size: whether the path raised, and its dtype, shape and values beside eager's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch

from ...bench import isolate


def subject(x: torch.Tensor) -> torch.Tensor:
    """The code as reported: replace it with the snippet from the bug report."""
    scores, index = x.softmax(-1).topk(4, dim=-1)
    return scores * index


def fixed(x: torch.Tensor) -> torch.Tensor:
    """The proposed fix (the report's rewrite); `subject` again where the report proposes none."""
    scores, index = x.softmax(-1).topk(4, dim=-1)
    return scores * index.to(scores.dtype)


VARIANTS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {"subject": subject, "fixed": fixed}


class _Module(torch.nn.Module):
    """A variant as a module: what torch.export takes."""

    def __init__(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)


# Each path makes a callable of a variant from an example input; a path the report names is one more entry.
PATHS: dict[str, Callable[[Callable, torch.Tensor], Callable]] = {
    "compile": lambda fn, x: torch.compile(fn, fullgraph=True),
    "export": lambda fn, x: torch.export.export(_Module(fn), (x,)).module(),
}


@dataclass
class Row:
    """One variant on one path at one size: what the path did beside eager."""

    variant: str
    path: str
    size: int
    device: str
    status: str  # isolate's outcome of the step: ok, error (eager itself failed), crash, timeout, oom
    raised: str = ""  # the path's own error ("RuntimeError: ..."), "" when it returned
    eager_dtype: str = ""
    dtype: str = ""
    eager_shape: tuple[int, ...] = ()
    shape: tuple[int, ...] = ()
    max_abs_diff: float | None = None  # None when the path raised or the shapes differ
    error: str = ""  # why the step did not finish (status other than ok)


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0][:300] if lines else ''}".rstrip(": ")


def _compare(variant: str, path: str, size: int, device: str, seed: int) -> dict[str, Any]:
    """Child step: eager, then the path; the path's exception is data (what the bug report is about), eager's
    own ends the step as an error."""
    torch.manual_seed(seed)
    x = torch.randn(8, size, device=device)
    fn = VARIANTS[variant]
    expected = fn(x)
    found: dict[str, Any] = {"eager_dtype": str(expected.dtype), "eager_shape": tuple(expected.shape)}
    try:
        got = PATHS[path](fn, x)(x)
    except Exception as exc:  # noqa: BLE001 - any failure of the path is the measurement
        return {**found, "raised": _first_line(exc)}
    found.update(dtype=str(got.dtype), shape=tuple(got.shape))
    if got.shape == expected.shape:
        found["max_abs_diff"] = (got.double() - expected.double()).abs().max().item() if got.numel() else 0.0
    return found


def measure(sizes: list[int], device: str = "cpu", seed: int = 0, step_timeout: float = 600.0) -> list[Row]:
    """One isolated step per variant, path and size (a compile can crash or hang: it becomes a row, never a dead
    kernel)."""
    rows = []
    for variant in VARIANTS:
        for path in PATHS:
            for size in sizes:
                out = isolate.run_step(_compare, variant, path, size, device, seed, timeout=step_timeout,
                                       step=f"{path}-{variant}-{size}", phase="compile")
                rows.append(Row(variant, path, size, device, out.status,
                                **(out.value if out.ok else {"error": out.error})))
    return rows
'''

JUDGE = '''"""One judge per claim of data/claims/$name.json: how each path's result compares with eager's, no timing."""

from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from ...verdicts import Judgement, all_none_some, count_figure
from .measure import Row

ATOL = 1e-5  # |path − eager| that still counts as the same value (float32, fused kernels reorder sums)
PATH_WORDS = {"compile": "torch.compile", "export": "torch.export"}


def disagreement(row: Row) -> str:
    """How a path's result disagrees with eager's (it raised, another dtype, shape or value); '' when it agrees."""
    if row.raised:
        return f"raised {row.raised}"
    if row.dtype != row.eager_dtype:
        return f"returned {row.dtype} where eager returns {row.eager_dtype}"
    if tuple(row.shape) != tuple(row.eager_shape):
        return f"returned shape {list(row.shape)} where eager returns {list(row.eager_shape)}"
    if row.max_abs_diff is None or not row.max_abs_diff <= ATOL:  # NaN disagrees too
        return f"differs from eager by max |Δ| {row.max_abs_diff:.3g} (tolerance {ATOL:g})"
    return ""


def _judged(rows: list[Row], variant: str, paths: tuple[str, ...], held: Callable[[Row], bool],
            what: str) -> Judgement:
    """A count over the variant's steps on the paths: how many hold (`held`). A step that did not finish decides
    nothing: the claim stays undecided, the outcome named."""
    mine = [r for r in rows if r.variant == variant and r.path in paths]
    ran = [r for r in mine if r.status == "ok"]
    missing = [f"{PATH_WORDS.get(r.path, r.path)} size {r.size}: {r.status} {r.error}".strip()
               for r in mine if r.status != "ok"]
    if not mine:
        return Judgement("error", f"no step of {variant} on {', '.join(paths)} was measured", basis="none")
    hits = [r for r in ran if held(r)]
    said = "; ".join(f"{PATH_WORDS.get(r.path, r.path)} size {r.size} {disagreement(r) or 'agrees with eager'}"
                     for r in (hits or ran)[:3])
    evidence = (f"{len(hits)} of {len(ran)} {what}" + (f" ({said})" if said else "")
                + (f"; did not finish: {'; '.join(missing)}" if missing else ""))
    verdict = "inconclusive" if missing else all_none_some(len(hits), len(ran))
    return Judgement(verdict, evidence, {"held": len(hits), "tried": len(ran),
                                         "how": [disagreement(r) for r in ran]},
                     basis="measured" if ran else "none", run={"device": sorted({r.device for r in mine})},
                     figure=count_figure(len(hits), len(ran), "steps", what) if ran else None)


def disagrees(path: str) -> Callable[[list[Row]], Judgement]:
    """The judge of the bug claim of one path: the reported subject disagrees with eager there, at every size."""
    def judge_disagrees(rows: list[Row]) -> Judgement:
        return _judged(rows, "subject", (path,), lambda r: bool(disagreement(r)),
                       f"sizes where {PATH_WORDS.get(path, path)} of the subject disagrees with eager")
    judge_disagrees.__name__ = f"judge_{path}_disagrees"
    return judge_disagrees


def judge_fix_agrees(rows: list[Row]) -> Judgement:
    """The fix claim: the fixed subject agrees with eager on every path and size."""
    return _judged(rows, "fixed", tuple(PATH_WORDS), lambda r: not disagreement(r),
                   "steps (paths × sizes) where the fixed subject agrees with eager")


JUDGES = {
    "$name.compile_disagrees": disagrees("compile"),
    "$name.export_disagrees": disagrees("export"),
    "$name.fix_agrees": judge_fix_agrees,
}


def judge(found: Any, rows: list[Row]) -> pd.DataFrame:
    """Record every claim's verdict; returns the claims frame."""
    return found.judge_all(JUDGES, rows)
'''

CONCLUDE = '''"""The conclusion of $name: what a run found, in 2–4 sentences and a headline figure (conclusion.py).

Imported without torch (the pages render without it): only the kit's conclusion helpers.
"""

from __future__ import annotations

from ...conclusion import PLAIN, View, error_line, plain

# The device class the bug needs when a ledger entry names no conditions.device ("any": every device shows it).
DEVICE = "any"
COMPILE, EXPORT, FIX = "$name.compile_disagrees", "$name.export_disagrees", "$name.fix_agrees"
PATHS = {COMPILE: "torch.compile", EXPORT: "torch.export"}


def _path_sentence(r: View, cid: str) -> str:
    held, tried = r.data(cid, "held"), r.data(cid, "tried")
    if not (r.v(cid) and tried):
        return plain(r, cid, f"{PATHS[cid]} disagrees with eager")
    how = next((h for h in r.data(cid, "how") or [] if h), "")
    return (f"{PATHS[cid]} of the subject disagrees with eager at {held} of {tried} sizes"
            + (f" (it {error_line(how)})" if how else "") + f": the claim {PLAIN.get(r.v(cid), r.v(cid))}.")


def conclude(r: View) -> tuple[dict[str, str], dict[str, str] | None]:
    """Sentences by question and the headline figure of one $name run; each needs its claim's verdict."""
    bites = " ".join(s for s in (_path_sentence(r, COMPILE), _path_sentence(r, EXPORT)) if s)
    out: dict[str, str] = {"bites": bites}
    held, tried = r.data(FIX, "held"), r.data(FIX, "tried")
    if r.v(FIX) and tried:
        out["fix"] = (f"The fixed subject agrees with eager on {held} of {tried} steps: the fix "
                      f"{PLAIN.get(r.v(FIX), r.v(FIX))}.")
    figure = None
    if r.v(COMPILE) and r.data(COMPILE, "tried"):
        figure = {"value": f"{r.data(COMPILE, 'held')} of {r.data(COMPILE, 'tried')}",
                  "label": "sizes where torch.compile disagrees with eager", "claim": COMPILE}
    return out, figure
'''

LEDGER = [
    {"id": "$name.compile_disagrees", "bug": True, "source": "$source", "question": "bites",
     "claim": "torch.compile of the subject disagrees with eager: it raises, or returns another dtype, shape or value.",
     "conditions": {"device": ["cpu", "cuda"]}},
    {"id": "$name.export_disagrees", "bug": True, "source": "$source", "question": "bites",
     "claim": "torch.export of the subject disagrees with eager: it raises, or returns another dtype, shape or value.",
     "conditions": {"device": ["cpu", "cuda"]}},
    {"id": "$name.fix_agrees", "source": "$source", "question": "fix",
     "claim": "The fixed subject agrees with eager under torch.compile and torch.export.",
     "conditions": {"device": ["cpu", "cuda"]}},
]

NOTEBOOK_CELLS = [
    ("markdown", "# $title\n\nSource: $source. What is claimed, and how this notebook tests it, in two sentences."),
    ("parameters", "# Sizes of the input's last dimension to try on every path\nsizes = [8]\n"
                   "# auto (CUDA if present, else CPU), cpu or cuda; findings.start resolves it once: found.device\n"
                   "device = \"auto\"\n"
                   "# Seed for the inputs\nseed = 0\n"
                   "# Filled in by `yolo26kit run`; leave empty when exploring interactively\n"
                   "results_path = \"\"\nrun_id = \"\""),
    ("code", "from yolo26kit import findings\nfrom yolo26kit.investigations import $name as inv\n\n"
             "found = findings.start(\"$name\", globals())"),
    ("markdown", "## Measure\n\nOne isolated step per variant, path and size: eager beside torch.compile and "
                 "torch.export."),
    ("code", "rows = inv.measure(sizes, device=found.device, seed=seed)"),
    ("markdown", "## Verdicts"),
    ("code", "inv.record_tables(found, rows)[\"rows\"]"),
    ("code", "inv.judge(found, rows)"),
    ("code", "found.save()"),
]

TEST = '''"""$name: the measurement on a tiny input and the notebook end to end."""

from __future__ import annotations

import pytest

from yolo26kit.investigations import $name as inv
from yolo26kit.investigations.$name.judge import disagreement


def test_every_variant_runs_on_every_path_on_cpu():
    rows = inv.measure([8], device="cpu")
    assert rows and all(r.status == "ok" for r in rows), [r.error for r in rows]
    assert all(r.eager_dtype for r in rows)
    assert not [disagreement(r) for r in rows if r.variant == "fixed" and disagreement(r)]


@pytest.mark.notebook
def test_notebook_end_to_end(run_notebook):
    results = run_notebook("$name", sizes=[8])
    assert {c["id"] for c in results["claims"]} == set(inv.JUDGES)
'''

CASES = '''"""Synthetic rows that drive each judge of $name to each decisive verdict (see README.md here)."""

from yolo26kit.investigations.$name.measure import Row

F32 = "torch.float32"


def ran(variant, path, size=8, **what):
    """A step that finished: by default the path returned eager's dtype, shape and values."""
    values = {"eager_dtype": F32, "dtype": F32, "eager_shape": (8, 4), "shape": (8, 4), "max_abs_diff": 0.0, **what}
    return Row(variant, path, size, "cpu", "ok", **values)


RAISED = {"raised": "RuntimeError: the error the report quotes", "dtype": "", "shape": (), "max_abs_diff": None}

CASES = {
    "$name.compile_disagrees": {
        "confirmed": lambda: [ran("subject", "compile", **RAISED), ran("subject", "compile", 16, dtype="torch.int64")],
        "refuted": lambda: [ran("subject", "compile"), ran("subject", "compile", 16)],
        "partly": lambda: [ran("subject", "compile", max_abs_diff=0.5), ran("subject", "compile", 16)],
        "inconclusive": lambda: [ran("subject", "compile"), Row("subject", "compile", 16, "cpu", "crash")],
    },
    "$name.export_disagrees": {
        "confirmed": lambda: [ran("subject", "export", shape=(8,), max_abs_diff=None)],
        "refuted": lambda: [ran("subject", "export")],
        "partly": lambda: [ran("subject", "export", **RAISED), ran("subject", "export", 16)],
    },
    "$name.fix_agrees": {
        "confirmed": lambda: [ran("fixed", "compile"), ran("fixed", "export")],
        "refuted": lambda: [ran("fixed", "compile", **RAISED), ran("fixed", "export", max_abs_diff=float("nan"))],
        "partly": lambda: [ran("fixed", "compile"), ran("fixed", "export", **RAISED)],
    },
}
'''
