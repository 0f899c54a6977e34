"""`yolo26kit new NAME`: a new investigation that runs and is judged at once (package, notebook, ledger, tests).

The generated investigation tests one real, small claim (torch.compile of a function matches eager, timed
side by side); its author replaces `subject`, the measurement and the claims. docs/authoring.md walks through it.
"""

from __future__ import annotations

import json
import keyword
import re
import shutil
from pathlib import Path
from string import Template

from ..errors import BadParameter
from ..paths import ROOT

NAME = re.compile(r"^[a-z][a-z0-9_]{1,40}$")
URL = re.compile(r"^https?://\S+$")

INIT = '''"""$title

Scaffolded by `yolo26kit new`: measure.py measures, judge.py turns the measurements into verdicts (one judge
per claim of data/claims/$name.json), show.py makes the tables (TABLES); the notebook calls all three.
See docs/authoring.md.
"""

from __future__ import annotations

from ... import catalog
from .judge import JUDGES, judge
from .measure import Row, measure, subject
from .show import TABLES, record_tables

__all__ = ["JUDGES", "Row", "TABLES", "judge", "measure", "record_tables", "subject"]

catalog.register(catalog.Investigation(
    name="$name",
    title="$title",
    seeds=("$source",),
    profiles={
        # quick: what a laptop CPU runs in seconds; full: what a run worth sharing measures
        "quick": {"sizes": [256], "min_run_time": 0.05},
        "full": {"sizes": [256, 65536], "min_run_time": 0.5},
    },
    checks={"sizes": lambda v: None if v and all(int(s) > 0 for s in v) else "give positive sizes"},
    judges=JUDGES,
))
'''

MEASURE = '''"""What $name measures: the output of `subject` eager and under torch.compile, and both latencies, per size."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ...bench import isolate, timing


def subject(x: torch.Tensor) -> torch.Tensor:
    """The code under test: replace it with the snippet from the bug report."""
    return torch.nn.functional.silu(x) * x.softmax(-1)


@dataclass
class Row:
    """One size: did the compiled step run, how far it is from eager, and both latencies (ms)."""

    size: int
    device: str
    status: str  # isolate's outcome: ok, error, crash, timeout, oom
    max_abs_diff: float | None = None
    eager_ms: tuple[float, ...] = ()
    compiled_ms: tuple[float, ...] = ()
    error: str = ""


def _compare(size: int, device: str, seed: int, min_run_time: float) -> dict[str, Any]:
    """Child step: compile, compare with eager, time both in turn over rounds."""
    torch.manual_seed(seed)
    x = torch.randn(8, size, device=device)
    compiled = torch.compile(subject, fullgraph=True)
    diff = (compiled(x) - subject(x)).abs().max().item()
    times = timing.measure_rounds({"eager": lambda: subject(x), "compiled": lambda: compiled(x)}, device,
                                  min_run_time=min_run_time)
    return {"max_abs_diff": diff, "eager_ms": times["eager"].round_medians_ms,
            "compiled_ms": times["compiled"].round_medians_ms}


def measure(sizes: list[int], device: str = "cpu", seed: int = 0, min_run_time: float = 0.05,
            step_timeout: float = 600.0) -> list[Row]:
    """One isolated step per size (a compile can crash or hang: it becomes a row, never a dead kernel)."""
    rows = []
    for size in sizes:
        out = isolate.run_step(_compare, size, device, seed, min_run_time, timeout=step_timeout,
                               step=f"compile-{size}", phase="compile")
        rows.append(Row(size, device, out.status, **(out.value if out.ok else {"error": out.error})))
    return rows
'''

JUDGE = '''"""One judge per claim of data/claims/$name.json, each reading the measured rows."""

from __future__ import annotations

import statistics
from typing import Any

import pandas as pd

from ... import findings
from ...verdicts import Judgement, all_none_some, band
from .measure import Row

ATOL = 1e-5  # |compiled − eager| that still counts as the same result (float32, fused kernels reorder sums)


def judge_compiled_matches_eager(rows: list[Row]) -> Judgement:
    """The claim: torch.compile of the subject gives the same result as eager, at every size tried."""
    ran = [r for r in rows if r.status == "ok"]
    failed = [f"size {r.size}: {r.status} {r.error}" for r in rows if r.status != "ok"]
    if not ran:
        return Judgement("error", "no size compiled: " + "; ".join(failed), basis="none")
    held = [r for r in ran if r.max_abs_diff is not None and r.max_abs_diff <= ATOL]
    worst = max(r.max_abs_diff for r in ran)
    evidence = (f"{len(held)} of {len(ran)} sizes match eager within {ATOL:g} (worst max |Δ| {worst:.2g})"
                + (f"; did not run: {'; '.join(failed)}" if failed else ""))
    return Judgement(all_none_some(len(held), len(ran)), evidence, {"max_abs_diff": worst},
                     run={"device": sorted({r.device for r in ran})})


def judge_compiled_faster(rows: list[Row]) -> Judgement:
    """The claim: the compiled subject is faster than eager by the band of the ledger (rounds timed in turn)."""
    lo, hi = findings.band_of("$name.compiled_faster")
    ran = [r for r in rows if r.status == "ok" and r.eager_ms and r.compiled_ms]
    if not ran:
        return Judgement("error", "no size was timed", basis="none")
    largest = max(ran, key=lambda r: r.size)
    ratios = [e / c for e, c in zip(largest.eager_ms, largest.compiled_ms) if e > 0 and c > 0]
    if not ratios:
        return Judgement("inconclusive", f"size {largest.size}: could not time (a round's net time was not positive)")
    evidence = (f"size {largest.size}: compiled is {statistics.median_high(ratios):.2f}× eager's speed "
                f"(rounds {min(ratios):.2f}–{max(ratios):.2f}×; band {lo:g}–{hi:g}×)")
    return Judgement(band(ratios, lo, hi), evidence, {"ratios": ratios}, run={"device": largest.device})


JUDGES = {
    "$name.compiled_matches_eager": judge_compiled_matches_eager,
    "$name.compiled_faster": judge_compiled_faster,
}


def judge(found: Any, rows: list[Row]) -> pd.DataFrame:
    """Record every claim's verdict; returns the claims frame."""
    return found.judge_all(JUDGES, rows)
'''

SHOW = '''"""The tables of $name: TABLES names each one the run keeps in results.json (a function of the rows)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Callable

import pandas as pd

from ... import findings
from .measure import Row


def rows_table(rows: list[Row]) -> pd.DataFrame:
    """One line per size: status, difference from eager, the timing rounds."""
    return pd.DataFrame([asdict(r) for r in rows])


TABLES: dict[str, Callable[[list[Row]], pd.DataFrame]] = {"rows": rows_table}


def record_tables(found: Any, rows: list[Row]) -> dict[str, pd.DataFrame]:
    """Keep every table of TABLES in results.json and return them for display."""
    return findings.record_tables(found, TABLES, rows)
'''

LEDGER = [
    {"id": "$name.compiled_matches_eager", "source": "$source", "question": "bites",
     "claim": "torch.compile of the subject gives the same result as eager at every size.",
     "conditions": {"device": ["cpu", "cuda"]}},
    {"id": "$name.compiled_faster", "source": "$source", "question": "cost",
     "claim": "The compiled subject is 1.5–10× faster than eager.",
     "band": {"lo": 1.5, "hi": 10.0, "unit": "×", "words": "1.5–10× faster"}},
]

NOTEBOOK_CELLS = [
    ("markdown", "# $title\n\nSource: $source. What is claimed, and how this notebook tests it, in two sentences."),
    ("parameters", "# Sizes of the input's last dimension to compile and time\nsizes = [256]\n"
                   "# cpu or cuda (the run passes the device it resolved)\ndevice = \"cpu\"\n"
                   "# Seed for the inputs\nseed = 0\n# Seconds of timing per round and callable\nmin_run_time = 0.05\n"
                   "# Filled in by `yolo26kit run`; leave empty when exploring interactively\n"
                   "results_path = \"\"\nrun_id = \"\""),
    ("code", "from yolo26kit import findings\nfrom yolo26kit.investigations import $name as inv\n\n"
             "found = findings.start(\"$name\", globals())"),
    ("markdown", "## Measure\n\nOne isolated step per size: compiled vs eager, both timed in turn over rounds."),
    ("code", "rows = inv.measure(sizes, device=device, seed=seed, min_run_time=min_run_time)\nrows"),
    ("markdown", "## Verdicts"),
    ("code", "inv.record_tables(found, rows)[\"rows\"]"),
    ("code", "inv.judge(found, rows)"),
    ("code", "found.save()"),
]

TEST = '''"""$name: the measurement on a tiny input and the notebook end to end."""

from __future__ import annotations

import pytest

from yolo26kit.investigations import $name as inv


def test_compiled_subject_matches_eager_on_cpu():
    (row,) = inv.measure([16], device="cpu", min_run_time=0.01)
    assert row.status == "ok" and row.max_abs_diff is not None and row.max_abs_diff < 1e-5


@pytest.mark.notebook
def test_notebook_end_to_end(run_notebook):
    results = run_notebook("$name", sizes=[16], min_run_time=0.01)
    assert {c["id"] for c in results["claims"]} == set(inv.JUDGES)
'''

CASES = '''"""Synthetic rows that drive each judge of $name to each decisive verdict (see README.md here)."""

from yolo26kit.investigations.$name import Row

CASES = {
    "$name.compiled_matches_eager": {
        "confirmed": lambda: [Row(16, "cpu", "ok", 0.0, (1.0,), (0.5,))],
        "refuted": lambda: [Row(16, "cpu", "ok", 0.5, (1.0,), (0.5,))],
        "partly": lambda: [Row(16, "cpu", "ok", 0.0), Row(32, "cpu", "ok", 0.5)],
    },
    "$name.compiled_faster": {
        "confirmed": lambda: [Row(16, "cpu", "ok", 0.0, (2.0, 2.2, 2.1), (1.0, 1.0, 1.0))],
        "refuted": lambda: [Row(16, "cpu", "ok", 0.0, (1.0, 1.1, 1.0), (1.0, 1.0, 1.0))],
        "inconclusive": lambda: [Row(16, "cpu", "ok", 0.0, (1.2, 2.0, 1.8), (1.0, 1.0, 1.0))],
    },
}
'''


def _notebook(values: dict[str, str]) -> str:
    import nbformat

    cells = []
    for kind, source in NOTEBOOK_CELLS:
        text = Template(source).substitute(values)
        if kind == "markdown":
            cells.append(nbformat.v4.new_markdown_cell(text))
        else:
            cell = nbformat.v4.new_code_cell(text)
            if kind == "parameters":
                cell.metadata["tags"] = ["parameters"]
            cells.append(cell)
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    return nbformat.writes(nb)


def source_of(source: str, name: str, root: Path) -> tuple[str, Path | None]:
    """The ledger's `source`: `kit`, an issue URL, a seed file name, or a file (a pasted report) copied into
    data/sources/ and named by its path there."""
    if source in ("", "kit") or URL.match(source) or (root / "data" / "seeds.json").exists() and source in {
            s["file"] for s in json.loads((root / "data" / "seeds.json").read_text())}:
        return source or "kit", None
    path = Path(source)
    if not path.is_file():
        raise BadParameter(f"--source {source!r} is neither kit, a URL, a seed file name nor a readable file")
    target = root / "data" / "sources" / f"{name}{path.suffix or '.md'}"
    return f"sources/{target.name}", target


def new(name: str, title: str = "", source: str = "kit", root: Path = ROOT) -> list[Path]:
    """Write the investigation's package, notebook, ledger, tests and judge cases; returns the files written."""
    if not NAME.match(name) or keyword.iskeyword(name):
        raise BadParameter(f"{name!r}: a name is lower-case letters, digits and _, starting with a letter")
    ledger_source, copy_to = source_of(source, name, root)
    files = {
        root / "yolo26kit" / "investigations" / name / "__init__.py": INIT,
        root / "yolo26kit" / "investigations" / name / "measure.py": MEASURE,
        root / "yolo26kit" / "investigations" / name / "judge.py": JUDGE,
        root / "yolo26kit" / "investigations" / name / "show.py": SHOW,
        root / "tests" / f"test_{name}.py": TEST,
        root / "tests" / "judge_cases" / f"{name}.py": CASES,
    }
    ledger = root / "data" / "claims" / f"{name}.json"
    notebook = root / "notebooks" / f"{name}.ipynb"
    taken = [p for p in [*files, ledger, notebook] if p.exists()]
    if taken:
        raise BadParameter(f"{name!r} exists already ({taken[0].relative_to(root)}); pick another name")
    values = {"name": name, "title": title or name.replace("_", " ").capitalize(), "source": ledger_source}
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(Template(text).substitute(values))
    ledger.parent.mkdir(parents=True, exist_ok=True)
    ledger.write_text(Template(json.dumps(LEDGER, indent=1, ensure_ascii=False)).substitute(values) + "\n")
    notebook.parent.mkdir(parents=True, exist_ok=True)
    notebook.write_text(_notebook(values))
    written = [*files, ledger, notebook]
    if copy_to is not None:
        copy_to.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, copy_to)
        written.append(copy_to)
    return written
