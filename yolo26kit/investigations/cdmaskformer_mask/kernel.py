"""The CUDA sort kernel's INTERNAL ASSERT: the seed's message, the kernel's arithmetic by era, and the PyTorch reports
found about it (data/mask_assert_issues.json), checked against that arithmetic."""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pandas as pd

from ... import findings


ISSUES_FILE = findings.DATA / "mask_assert_issues.json"

# The seed's error and setting, as the seed reports them (numbers are parsed from the message, not typed twice).
SEED_ASSERT_MESSAGE = ("RuntimeError: linearIndex.numel()*sliceSize*nElemBefore == expandedValue.numel() INTERNAL ASSERT "
                       "FAILED at \"/opt/conda/conda-bld/pytorch_1678402411778/work/aten/src/ATen/native/cuda/"
                       "Indexing.cu\":389, please report a bug to PyTorch. number of flattened indices did not match "
                       "number of elements in the value tensor: 7840 vs 160")
SEED_CONFIG = {"batch": 4, "heads": 8, "queries": 5}


# --- 3. the INTERNAL ASSERT --------------------------------------------------------------------------

# How index_put_with_sort_kernel expanded the value before the assert, by era (see data/mask_assert_issues.json).
RULES = {
    "no_expand": "value not expanded (reports on ≤1.10: #61032, #68525, #73587)",
    "expand_to_index": "value expanded to the index shape only (1.11–2.0; reports #87287, #96724, #105819, the seed)",
    "expand_index_and_slice": "also expanded over the trailing slice (PR #105833); tensor-valued broadcasts still "
                              "mismatch until PR #154296 (2025-05-24)",
}


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """NumPy broadcast of two shapes, or None when they are not expandable to each other (ATen's are_expandable)."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and x != 1 and y != 1:
            return None
        out.append(max(x, y) if 0 not in (x, y) else 0)
    return tuple(reversed(out))


def _prod(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def assert_numbers(self_shape: tuple[int, ...], indexed_dims: int, index_shape: tuple[int, ...],
                   value_shape: tuple[int, ...], rule: str = "expand_to_index") -> tuple[int, int]:
    """The two numbers the sort kernel's assert compares: (linearIndex.numel()·sliceSize·nElemBefore, expandedValue.numel()).

    Index tensors on the leading `indexed_dims` dimensions (what torch.where / a boolean row mask produce), so
    nElemBefore = 1 and sliceSize = the product of the remaining dimensions. The value is expanded the way the CUDA
    code of that era did (RULES). The assert fires when the two differ and at least one element is indexed.
    """
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; choose from {list(RULES)}")
    slice_size = _prod(tuple(self_shape[indexed_dims:]))
    n_before = 1
    num_indices = _prod(tuple(index_shape))
    lhs = num_indices * slice_size * n_before
    expanded = tuple(value_shape)
    if rule != "no_expand" and _prod(expanded) < lhs:
        both = _broadcast(expanded, tuple(index_shape))
        if both is not None:
            expanded = both
        if rule == "expand_index_and_slice" and slice_size > 1:
            expanded = expanded + (slice_size,)
    return lhs, _prod(expanded)


def fires(lhs: int, rhs: int) -> bool:
    """Whether the kernel reaches the assert and fails it (no kernel runs for an empty index)."""
    return lhs > 0 and lhs != rhs


def parse_assert(message: str) -> tuple[int, int] | None:
    """The two numbers of an 'N vs M' INTERNAL ASSERT message."""
    hit = re.search(r"value tensor:\s*(\d+)\s+vs\s+(\d+)", message)
    return (int(hit.group(1)), int(hit.group(2))) if hit else None


def build_date(message: str) -> str:
    """The date in a conda build path such as pytorch_1678402411778 (epoch milliseconds), ISO format."""
    hit = re.search(r"pytorch_(\d{13})", message)
    if not hit:
        return ""
    return datetime.fromtimestamp(int(hit.group(1)) / 1000, tz=timezone.utc).date().isoformat()


def explain_seed_assert(batch: int = SEED_CONFIG["batch"], heads: int = SEED_CONFIG["heads"],
                        queries: int = SEED_CONFIG["queries"]) -> pd.DataFrame:
    """What 7840 and 160 mean for the seed's [batch·heads, queries, H·W] mask, derived from the message and the shapes."""
    lhs, rhs = parse_assert(SEED_ASSERT_MESSAGE)
    rows_total = batch * heads * queries
    # expand_to_index with a 0-dim value: expandedValue has one element per indexed row
    n_full = rhs
    slice_size = lhs // n_full
    side = math.isqrt(slice_size)
    forward = assert_numbers((batch * heads, queries, slice_size), 2, (n_full,), (), "expand_to_index")
    fixed = assert_numbers((batch * heads, queries, slice_size), 2, (n_full,), (), "expand_index_and_slice")
    p_full = 0.5 ** slice_size
    line = re.search(r'Indexing\.cu":(\d+)', SEED_ASSERT_MESSAGE)
    facts = [
        ("assert: linearIndex.numel()·sliceSize·nElemBefore", lhs, "parsed from the seed's message"),
        ("assert: expandedValue.numel()", rhs, "parsed from the seed's message"),
        ("mask rows = batch·heads × queries", rows_total, f"{batch}·{heads} × {queries} (seed's config)"),
        ("indexed (all-True) rows = linearIndex.numel()", n_full,
         "a 0-dim False was expanded to the index shape [n] only (1.11–2.0 rule), so expandedValue.numel() = n"),
        ("nElemBefore", 1, "torch.where's two index tensors cover the two leading dims"),
        ("sliceSize = H·W", slice_size, f"{lhs} / ({n_full} × 1)"),
        ("H = W (if square)", side if side * side == slice_size else "not square", "√sliceSize"),
        ("share of rows all True", round(n_full / rows_total, 4), "every (image, head, query) row was all True"),
        ("model, 1.11–2.0 rule: lhs vs rhs", f"{forward[0]} vs {forward[1]}",
         "assert_numbers([32, 5, 49], 2 indexed dims, [160], 0-dim value)"),
        ("model matches the seed", forward == (lhs, rhs), ""),
        ("model after PR #105833: lhs vs rhs", f"{fixed[0]} vs {fixed[1]}", "value also expanded over the slice: no assert"),
        ("P(a random row is all True) at density 0.5", f"{p_full:.2e}",
         f"0.5^{slice_size}: random synthetic masks lack full rows"),
        ("Indexing.cu line", int(line.group(1)) if line else "", "the line PyTorch #95308 (2.0.0.dev20230105) and diffusers PR #3479 report too"),
        ("conda build date of the seed's torch", build_date(SEED_ASSERT_MESSAGE), "from the build path pytorch_<epoch ms>"),
    ]
    return pd.DataFrame(facts, columns=["quantity", "value", "how"])


def load_issues() -> list[dict[str, Any]]:
    """The PyTorch issues and PRs about this assert that the kit found (data/mask_assert_issues.json)."""
    return json.loads(ISSUES_FILE.read_text())["entries"]


def issues_frame() -> pd.DataFrame:
    """The issue/PR list for display: number, kind, date, versions, what it says."""
    return pd.DataFrame([{"repo": e["repo"], "number": e["number"], "kind": e["kind"], "date": e["date"],
                          "state": e["state"], "versions": e["versions"], "title": e["title"], "says": e["says"]}
                         for e in load_issues()])


def model_check() -> pd.DataFrame:
    """assert_numbers against every report with a repro: the reported 'N vs M' and the model's, per rule of its era."""
    rows = []
    seed_lhs, seed_rhs = parse_assert(SEED_ASSERT_MESSAGE)
    rep = {"self_shape": [32, 5, 49], "indexed_dims": 2, "index_shape": [seed_rhs], "value_shape": [],
           "reported": [seed_lhs, seed_rhs], "rule": "expand_to_index", "code": "attn_mask[torch.where(full)] = False"}
    cases = [("seed 002", rep)] + [(f"{e['repo'].split('/')[-1]}#{e['number']}", e["repro"])
                                   for e in load_issues() if e.get("repro")]
    for label, r in cases:
        shapes = (tuple(r["self_shape"]), r["indexed_dims"], tuple(r["index_shape"]), tuple(r["value_shape"]))
        got = assert_numbers(*shapes, r["rule"])
        after = assert_numbers(*shapes, "expand_index_and_slice")
        rows.append({"report": label, "code": r["code"], "rule": r["rule"],
                     "reported": f"{r['reported'][0]} vs {r['reported'][1]}",
                     "model": f"{got[0]} vs {got[1]}", "match": list(got) == list(r["reported"]),
                     "after #105833": f"{after[0]} vs {after[1]}" + ("" if fires(*after) else " (no assert)")})
    return pd.DataFrame(rows)


def versions_summary() -> pd.DataFrame:
    """Which torch versions the found reports and fixes put on each side, by kernel rule."""
    entries = {e["number"]: e for e in load_issues() if e["repo"] == "pytorch/pytorch"}

    def cite(*numbers: int) -> str:
        return "; ".join(f"#{n} ({entries[n]['date']}, {entries[n]['versions']})" for n in numbers if n in entries)

    return pd.DataFrame([
        {"case": "scalar value, rows of >1 element (the seed's line) under deterministic algorithms",
         "affected": "reported on 1.10.2 – 2.0.0 (the seed's build is 2.0-era)",
         "reports": cite(73587, 96724, 104217, 105819), "fix": cite(105833)},
        {"case": "tensor value that must broadcast (e.g. a row vector) under deterministic algorithms",
         "affected": "reported on 1.12 – 2.x until 2025", "reports": cite(79987, 87287, 131933), "fix": cite(154296)},
        {"case": "value not broadcastable to the indexing result (accumulate=True)",
         "affected": "2.0.0.dev asserted instead of raising a shape error", "reports": cite(95308, 72053),
         "fix": "no fix PR found; " + cite(94849) + " covers only an empty index list"},
    ])


def first_release(versions: str) -> str | None:
    """The first release a report's `versions` names ('1.12.1; …' → '1.12.1', '2.0.0a0+git…' → '2.0.0'), leaving
    out what parentheses say (CUDA versions); None when it names none ('master 2022-01')."""
    found = re.search(r"(?<![\d.])(\d+\.\d+(?:\.\d+)?)", re.sub(r"\(.*?\)", "", versions))
    return found.group(1) if found else None


def upstream_reproductions(lo: str, hi: str, rule: str = "expand_to_index", scalar_value: bool = False,
                           boolean_index: bool = False) -> list[dict[str, Any]]:
    """The reports whose own short synthetic snippet asserted on a release in [lo, hi], of the kernel rule `rule`,
    and whose reported 'N vs M' the kernel arithmetic reproduces; `scalar_value` keeps those with a scalar value
    (the seed's form), `boolean_index` those that index with a boolean mask (data: repro.boolean_index)."""
    from packaging.version import Version

    found = []
    for e in load_issues():
        r, release = e.get("repro"), first_release(e.get("versions", ""))
        if not r or release is None or r["rule"] != rule or not Version(lo) <= Version(release) <= Version(hi):
            continue
        if (scalar_value and r["value_shape"]) or (boolean_index and not r.get("boolean_index")):
            continue
        got = assert_numbers(tuple(r["self_shape"]), r["indexed_dims"], tuple(r["index_shape"]),
                             tuple(r["value_shape"]), r["rule"])
        if list(got) == list(r["reported"]):
            found.append({"number": e["number"], "url": e["url"], "release": release, "code": r["code"],
                          "reported": f"{got[0]} vs {got[1]}"})
    return found


# PyTorch PR #61612 (July 2021, for issue #57515): `index_put_` without accumulate, given one boolean mask on the
# same device that matches the leading dimensions of self and a one-element value on the CPU (a Python scalar),
# runs `masked_fill_` instead of the index kernels, so the deterministic sort path is never reached.
MASKED_FILL_DISPATCH = (57515, 61612)


def dispatches_to_masked_fill(self_shape: tuple[int, ...], index_shapes: list[tuple[int, ...]], index_is_bool: bool,
                              value_numel: int, value_on_cpu: bool, accumulate: bool = False) -> bool:
    """Whether `index_put_` takes PR #61612's masked_fill_ path (canDispatchToMaskedFill): no accumulate, a
    one-element CPU value, and a single boolean index whose shape is self's leading dimensions."""
    if accumulate or value_numel != 1 or not value_on_cpu or len(index_shapes) != 1 or not index_is_bool:
        return False
    mask = index_shapes[0]
    return tuple(self_shape[:len(mask)]) == tuple(mask)
