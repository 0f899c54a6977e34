"""`yolo26kit new NAME`: a new investigation that runs and is judged at once (package, notebook, ledger, tests).

Two shapes of bug (`--kind`, the registry KINDS): `timing` tests one real, small claim (torch.compile of a function
matches eager, timed side by side); `error` (run/scaffold_error.py) has eager and a compile or export path disagree
or fail, judged from the error, the dtype, the shape or the values, with no timing. Its author replaces `subject`,
the measurement and the claims. docs/authoring.md walks through both.
"""

from __future__ import annotations

import json
import keyword
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

from ..errors import BadParameter
from ..paths import ROOT
from . import scaffold_error

NAME = re.compile(r"^[a-z][a-z0-9_]{1,40}$")
URL = re.compile(r"^https?://\S+$")

INIT = '''"""$title

Scaffolded by `yolo26kit new`: measure.py measures, judge.py turns the measurements into verdicts (one judge
per claim of data/claims/$name.json), show.py makes the tables (TABLES); the notebook calls all three.
conclude.py writes the conclusion the pages open with. See docs/authoring.md.
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

CALLS = 3  # calls of the compiled subject per size, each with a fresh input of the same shape


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
    graphs: int | None = None  # graphs compiled over CALLS calls of this size: 1 means every call reused the first
    error: str = ""


def _compare(size: int, device: str, seed: int, min_run_time: float) -> dict[str, Any]:
    """Child step: compile, compare with eager, count the graphs CALLS fresh inputs compile, time both in turn."""
    from torch._dynamo.utils import counters

    torch.manual_seed(seed)
    x = torch.randn(8, size, device=device)
    compiled = torch.compile(subject, fullgraph=True)
    before = counters["stats"]["unique_graphs"]
    diff = (compiled(x) - subject(x)).abs().max().item()
    for _ in range(CALLS - 1):
        compiled(torch.randn(8, size, device=device))
    graphs = counters["stats"]["unique_graphs"] - before
    times = timing.measure_rounds({"eager": lambda: subject(x), "compiled": lambda: compiled(x)}, device,
                                  min_run_time=min_run_time)
    return {"max_abs_diff": diff, "eager_ms": times["eager"].round_medians_ms,
            "compiled_ms": times["compiled"].round_medians_ms, "graphs": graphs}


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

from typing import Any

import pandas as pd

from ... import findings
from ...verdicts import Judgement, all_none_some, band, count_figure, median_round, rounds_figure
from .measure import CALLS, Row

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
    devices = sorted({r.device for r in ran})
    return Judgement(all_none_some(len(held), len(ran)), evidence,
                     {"held": len(held), "sizes": len(ran), "max_abs_diff": worst}, run={"device": devices},
                     figure=count_figure(len(held), len(ran), "sizes match eager", f"sizes whose compiled result is "
                                         f"eager's within {ATOL:g}", device=devices, mode="torch.compile"))


def judge_compiles_once(rows: list[Row]) -> Judgement:
    """The claim: repeated calls of one size reuse the first compiled graph (a count: sizes that compiled once)."""
    ran = [r for r in rows if r.status == "ok" and r.graphs is not None]
    if not ran:
        return Judgement("error", "no size compiled", basis="none")
    once = [r for r in ran if r.graphs == 1]
    evidence = (f"{len(once)} of {len(ran)} sizes compiled one graph for {CALLS} calls"
                + "".join(f"; size {r.size}: {r.graphs} graphs" for r in ran if r.graphs != 1))
    devices = sorted({r.device for r in ran})
    return Judgement(all_none_some(len(once), len(ran)), evidence,
                     {"once": len(once), "sizes": len(ran), "graphs": [r.graphs for r in ran]}, run={"device": devices},
                     figure=count_figure(len(once), len(ran), "sizes compile once", f"sizes that compiled one graph "
                                         f"for {CALLS} calls", device=devices, mode="torch.compile"))


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
    evidence = (f"size {largest.size}: compiled is {median_round(ratios):.2f}× eager's speed "
                f"(rounds {min(ratios):.2f}–{max(ratios):.2f}×; band {lo:g}–{hi:g}×)")
    return Judgement(band(ratios, lo, hi), evidence, {"ratios": ratios}, run={"device": largest.device},
                     figure=rounds_figure(ratios, "×", "eager's time over the compiled subject's, rounds timed in "
                                          "turn", shape=f"size {largest.size}", device=largest.device,
                                          mode="torch.compile"))


JUDGES = {
    "$name.compiled_matches_eager": judge_compiled_matches_eager,
    "$name.compiles_once": judge_compiles_once,
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
    """One line per measured row (measure.Row), as it was measured."""
    return pd.DataFrame([asdict(r) for r in rows])


TABLES: dict[str, Callable[[list[Row]], pd.DataFrame]] = {"rows": rows_table}


def record_tables(found: Any, rows: list[Row]) -> dict[str, pd.DataFrame]:
    """Keep every table of TABLES in results.json and return them for display."""
    return findings.record_tables(found, TABLES, rows)
'''

CONCLUDE = '''"""The conclusion of $name: what a run found, in 2–4 sentences and a headline figure (see yolo26kit/conclusion.py).

Imported without torch (the pages render without it): only the kit's conclusion helpers.
"""

from __future__ import annotations

from ...conclusion import PLAIN, View, plain

NAME = "$title"  # the investigation's name for people: pages head it with this (its id small beside it)
# The device class the bug needs when a ledger entry names no conditions.device ("any": every device shows it).
DEVICE = "any"
MATCH, ONCE, FASTER = "$name.compiled_matches_eager", "$name.compiles_once", "$name.compiled_faster"


def conclude(r: View) -> tuple[dict[str, str], dict[str, str] | None]:
    """Sentences by question and the headline of one $name run; each needs its claim's verdict, and every number is
    a figure its judge returned (View.quote), never one computed here."""
    out: dict[str, str] = {}
    if r.v(MATCH) and r.quote(MATCH):
        out["bites"] = f"Compiled and eager agree: {r.quote(MATCH)} (the claim {PLAIN.get(r.v(MATCH), r.v(MATCH))})."
    else:
        out["bites"] = plain(r, MATCH, "torch.compile matches eager")
    costs = [r.quote(ONCE) if r.v(ONCE) else ""]
    if r.v(FASTER) and r.quote(FASTER):
        costs.append(f"the compiled subject runs at {r.quote(FASTER)} eager's speed "
                     f"(the claim {PLAIN.get(r.v(FASTER), r.v(FASTER))})")
    if any(costs):
        out["cost"] = "Cost: " + "; ".join(c for c in costs if c) + "."
    return out, {"claim": FASTER}  # the headline: that claim's figure, filled in by conclusion.conclude
'''

LEDGER = [
    {"id": "$name.compiled_matches_eager", "bug": True, "source": "$source", "question": "bites",
     "claim": "torch.compile of the subject gives the same result as eager at every size.",
     "conditions": {"device": ["cpu", "cuda"]}},
    {"id": "$name.compiles_once", "source": "$source", "question": "cost",
     "claim": "Repeated calls of one size reuse the first compiled graph (no recompiles)."},
    {"id": "$name.compiled_faster", "source": "$source", "question": "cost",
     "claim": "The compiled subject is 1.5–10× faster than eager.",
     "band": {"lo": 1.5, "hi": 10.0, "unit": "×", "words": "1.5–10× faster"}},
]

NOTEBOOK_CELLS = [
    ("markdown", "# $title\n\nSource: $source. What is claimed, and how this notebook tests it, in two sentences."),
    ("parameters", "# Sizes of the input's last dimension to compile and time\nsizes = [256]\n"
                   "# auto (CUDA if present, else CPU), cpu or cuda; findings.start resolves it once: found.device\n"
                   "device = \"auto\"\n"
                   "# Seed for the inputs\nseed = 0\n# Seconds of timing per round and callable\nmin_run_time = 0.05\n"
                   "# Filled in by `yolo26kit run`; leave empty when exploring interactively\n"
                   "results_path = \"\"\nrun_id = \"\""),
    ("code", "from yolo26kit import findings\nfrom yolo26kit.investigations import $name as inv\n\n"
             "found = findings.start(\"$name\", globals())"),
    ("markdown", "## Measure\n\nOne isolated step per size: compiled vs eager, both timed in turn over rounds."),
    ("code", "rows = inv.measure(sizes, device=found.device, seed=seed, min_run_time=min_run_time)"),
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

from yolo26kit.investigations.$name.measure import Row

CASES = {
    "$name.compiled_matches_eager": {
        "confirmed": lambda: [Row(16, "cpu", "ok", 0.0, (1.0,), (0.5,))],
        "refuted": lambda: [Row(16, "cpu", "ok", 0.5, (1.0,), (0.5,))],
        "partly": lambda: [Row(16, "cpu", "ok", 0.0), Row(32, "cpu", "ok", 0.5)],
    },
    "$name.compiles_once": {
        "confirmed": lambda: [Row(16, "cpu", "ok", 0.0, graphs=1)],
        "refuted": lambda: [Row(16, "cpu", "ok", 0.0, graphs=3)],
        "partly": lambda: [Row(16, "cpu", "ok", 0.0, graphs=1), Row(32, "cpu", "ok", 0.0, graphs=2)],
    },
    "$name.compiled_faster": {
        "confirmed": lambda: [Row(16, "cpu", "ok", 0.0, (2.0, 2.2, 2.1), (1.0, 1.0, 1.0))],
        "refuted": lambda: [Row(16, "cpu", "ok", 0.0, (1.0, 1.1, 1.0), (1.0, 1.0, 1.0))],
        "inconclusive": lambda: [Row(16, "cpu", "ok", 0.0, (1.2, 2.0, 1.4, 1.8), (1.0, 1.0, 1.0, 1.0))],
    },
}
'''


@dataclass(frozen=True)
class Kind:
    """One shape of bug the scaffold writes: the package's files, the test, the judge cases, ledger and notebook."""

    about: str  # one line for `yolo26kit new --help`
    package: dict[str, str]  # file name in yolo26kit/investigations/<name>/ → its template
    test: str
    cases: str
    ledger: list[dict[str, Any]]
    cells: list[tuple[str, str]]


KINDS = {
    "timing": Kind("torch.compile beside eager: the same result, one graph, and a speed-up band (timed rounds)",
                   {"__init__.py": INIT, "measure.py": MEASURE, "judge.py": JUDGE, "show.py": SHOW,
                    "conclude.py": CONCLUDE}, TEST, CASES, LEDGER, NOTEBOOK_CELLS),
    "error": Kind("eager beside torch.compile and torch.export: an error, a dtype, a shape or a value that differs, "
                  "and a fix that agrees (no timing)",
                  {"__init__.py": scaffold_error.INIT, "measure.py": scaffold_error.MEASURE,
                   "judge.py": scaffold_error.JUDGE, "show.py": SHOW, "conclude.py": scaffold_error.CONCLUDE},
                  scaffold_error.TEST, scaffold_error.CASES, scaffold_error.LEDGER, scaffold_error.NOTEBOOK_CELLS),
}


def _notebook(values: dict[str, str], cells_of: list[tuple[str, str]]) -> str:
    import nbformat

    cells = []
    for kind, source in cells_of:
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
    return nbformat.writes(nb) + "\n"  # byte for byte what Jupyter saves (tests/test_lab.py)


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


def new(name: str, title: str = "", source: str = "kit", root: Path = ROOT, kind: str = "timing") -> list[Path]:
    """Write the investigation's package, notebook, ledger, tests and judge cases (of the shape KINDS[kind]);
    returns the files written.

    All or nothing: every file is rendered before the first is written, and a failed write removes what was
    written (a half-made investigation would be hidden by the catalog and refused by the next `new`)."""
    if not NAME.match(name) or keyword.iskeyword(name):
        raise BadParameter(f"{name!r}: a name is lower-case letters, digits and _, starting with a letter")
    if kind not in KINDS:
        raise BadParameter(f"--kind {kind!r}: one of {', '.join(KINDS)}")
    shape = KINDS[kind]
    ledger_source, copy_to = source_of(source, name, root)
    package = root / "yolo26kit" / "investigations" / name
    templates = {**{package / file: text for file, text in shape.package.items()},
                 root / "tests" / f"test_{name}.py": shape.test,
                 root / "tests" / "judge_cases" / f"{name}.py": shape.cases,
                 root / "data" / "claims" / f"{name}.json":
                     json.dumps(shape.ledger, indent=1, ensure_ascii=False) + "\n"}
    notebook = root / "notebooks" / f"{name}.ipynb"
    taken = [p for p in [package, *templates, notebook, *([copy_to] if copy_to else [])] if p.exists()]
    if taken:
        raise BadParameter(f"{name!r} exists already ({taken[0].relative_to(root)}); pick another name")
    values = {"name": name, "title": title or name.replace("_", " ").capitalize(), "source": ledger_source}
    contents: dict[Path, bytes] = {path: Template(text).substitute(values).encode() for path, text in templates.items()}
    contents[notebook] = _notebook(values, shape.cells).encode()
    if copy_to is not None:
        contents[copy_to] = Path(source).read_bytes()
    write_all(contents)
    return list(contents)


def write_all(contents: dict[Path, bytes]) -> None:
    """Write every file, making folders as needed; on any failure remove the files and folders made here."""
    made: list[Path] = []
    try:
        for path, data in contents.items():
            missing = [d for d in [path.parent, *path.parent.parents] if not d.exists()]
            path.parent.mkdir(parents=True, exist_ok=True)
            made += reversed(missing)
            with open(path, "xb") as f:  # x: never overwrite a file that appeared meanwhile
                made.append(path)
                f.write(data)
    except BaseException:
        for made_path in reversed(made):
            if made_path.is_dir():
                shutil.rmtree(made_path, ignore_errors=True)
            else:
                made_path.unlink(missing_ok=True)
        raise
