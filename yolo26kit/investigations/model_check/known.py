"""What the kit established about each hazard model_check looks for: one entry per detector of hazards.HAZARDS, naming
the ledger claims and the finding (yolo26kit/repro/catalog.py) the evidence lies in. The releases a hazard bites on
and the workaround the kit measured come from those where they say it (a finding's workaround and upstream links, a
claim's `conditions.torch`), else from the entry's own words: this table is the one place they are written.

`state` says what a hazard means on this run's stack: bites here (seen in this run's rows, or the installed release
is one it bites on), fixed in the installed release, or cannot tell (the path it bites is not run here).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from packaging.version import InvalidVersion, Version

from ... import findings as ledger
from ...repro.catalog import ReproError, findings as catalog

PT = "https://github.com/pytorch/pytorch"


@dataclass(frozen=True)
class Known:
    """One hazard: what the pattern is and does, where the kit established it, on which releases, what to do."""

    title: str
    effect: str
    paths: tuple[str, ...]  # back-ends (registry names) it bites; () for torch.export itself
    claims: tuple[str, ...]  # ledger claims where the kit measured it
    finding: str = ""  # repro/catalog.py finding id: its workaround and upstream links
    bites_on: str = ""  # the releases in words, where no claim's `conditions.torch` says them
    fixed_in: tuple[tuple[str, str], ...] = ()  # (package, first release without it)
    workaround: str = ""  # what the kit measured to help, where the finding names nothing
    upstream: tuple[str, ...] = ()
    error_mark: str = ""  # a regex of the failure it causes, to recognise it among this run's rows
    here: str = "bites here"  # its state on this stack when no path of this run shows it and no release fixed it


KNOWN: dict[str, Known] = {
    "floor_div_index": Known(
        title="integer floor division feeding an index",
        effect="AOT Inductor lowers an int64 `a // b` through the floating path when the divisor is a 0-d tensor "
               "(ExecuTorch's edge dialect makes a scalar divisor one): the quotient is float32 on torch 2.11 (an index "
               "built from it fails aten.index, and gather's Triton kernel on CUDA) and truncates negative values on "
               "2.12 and 2.13",
        paths=("aoti", "executorch_cuda"),
        claims=("index_dtype.floordiv_float_path", "index_dtype.et_cuda_float_index"),
        finding="index_dtype.aoti_floordiv_tensor_divisor",
        error_mark=r"indices must be int64|pointer<int64> and triton\.language\.float32"),
    "computed_index": Known(
        title="advanced indexing with computed indices",
        effect="aten.index.Tensor with indices computed in the graph: ExecuTorch's CUDA lowering reads them as "
               "float32 ('indices must be int64, byte or bool. Got [torch.int64, torch.float32]')",
        paths=("executorch_cuda",),
        claims=("index_dtype.et_cuda_float_index", "index_dtype.explicit_cast_insufficient"),
        bites_on="ExecuTorch CUDA with its default options (seen: torch 2.11, executorch 1.2.0)",
        workaround="torch.gather with int64 indices (index_dtype.gather_int64_ops; index_dtype.gather_equivalent: the "
                   "same detections) gets past aten.index; with a floor division in the index see floor_div_index",
        upstream=(f"{PT}/issues/186164",), error_mark=r"indices must be int64, byte or bool"),
    "split_view_copy": Known(
        title="chunk / split (split_copy in the edge dialect)",
        effect="ExecuTorch's CUDA back-end has no fallback kernel for split_copy unless its view pass turns it into "
               "a view: 'missing fallback kernels (aten::split_copy.Tensor)'",
        paths=("executorch_cuda",), claims=("index_dtype.backbone_static_cuda", "index_dtype.et_cuda_full_model"),
        finding="index_dtype.et_cuda_split_copy_refused", fixed_in=(("executorch", "1.5.0"),),
        bites_on="ExecuTorch CUDA before executorch 1.5.0 (seen: executorch 1.2.0 on torch 2.11)",
        error_mark=r"missing fallback kernels[\s\S]*split\w*_copy"),
    "item_sync": Known(
        title=".item() / int() of a tensor, or an op whose output size depends on the data",
        effect="aten._local_scalar_dense and data-dependent sizes: a host sync every call; torch.compile breaks the "
               "graph there, or with capture_scalar_outputs Inductor skips CUDA graphs for the incompatible op",
        paths=("compile_cudagraphs", "compile"),
        claims=("cuda_graphs.item_skips", "cuda_graphs.item_local_scalar_dense", "cuda_graphs.item_syncs"),
        bites_on="every release the kit ran (CUDA graphs skipped: torch 2.11 with reduce-overhead; the sync anywhere)",
        workaround="keep the value a device tensor and index with it (cuda_graphs.tensor_position: one captured graph, "
                   "no host sync); a constant as a Python number, not a 0-d tensor; int() under capture_scalar_outputs "
                   "does not help (cuda_graphs.int_enables)",
        error_mark=r"skipping cudagraphs|_local_scalar_dense"),
    "pinned_dim": Known(
        title="a guard that pins a dynamic dimension",
        effect="torch.export with a plain dynamic height, width or batch raises 'Constraints violated', or exports a "
               "program whose guard refuses sizes of its range that eager runs: the code needs a relation the range "
               "does not give (stride alignment before a concat) or a constant (a reshape to the example's batch)",
        paths=(), claims=("dynamic_shapes.plain_dim_guard_violation", "dynamic_shapes.guard_div8"),
        bites_on="every torch release the kit ran (torch.export's guards)",
        workaround="derived dims, height = 32*Dim('_h', ...) (torch's suggested fix; the kit's recipe in "
                   "bench/dynamic_export.py: dynamic_shapes.fundamentally_blocked refuted, the stock YOLO26 exports "
                   "and matches eager at every multiple of 32), and an example batch of at least 2 for a dynamic batch",
        here="bites here: a plain dynamic export fails"),
    "sym_min_size": Known(
        title="min() / max() of a traced size (torch.sym_min)",
        effect="a dynamic program calling torch.sym_min / sym_max: ExecuTorch's edge verifier rejects it (XNNPACK "
               "lowering: 'graph calls Python functions: sym_min')",
        paths=(), claims=("dynamic_shapes.xnnpack_dynamic",),
        bites_on="a dynamic-shape ExecuTorch lowering, every release the kit ran (the static paths are unaffected)",
        workaround="a constant in its place (the kit's static k: bench.dynamic_export.topk_static_k) or "
                   "EdgeCompileConfig(_check_ir_validity=False); dynamic_shapes' derived_kit then lowers and matches "
                   "eager at every size",
        here="bites a dynamic-shape ExecuTorch lowering (the paths here lower static programs)"),
    "shape_cache_state": Known(
        title="a tensor cache on the module, rebuilt when the input shape changes",
        effect="tensor attributes assigned in forward (anchors cached for the last shape): after one eager call the "
               "exported program keeps the example size's values, and a dynamic program refuses other sizes",
        paths=(), claims=("dynamic_shapes.fundamentally_blocked",),
        bites_on="every torch release the kit ran (an export after an eager call: dynamic_shapes' derived_warm, 1 of 7 "
                 "sizes right)",
        workaround="rebuild the values from the traced shape every call (ultralytics heads: head.dynamic = True, "
                   "dynamic_shapes' derived_dynamic_head: every size right), or export a model never called eagerly",
        here="bites here when the model runs eagerly before a dynamic export"),
    "mask_index_put": Known(
        title="in-place write through a mask or where() index, broadcast over rows",
        effect="x[torch.where(m)] = v / x[m] = v with rows longer than one element: CUDA's sort-based index_put "
               "asserts ('linearIndex.numel()*sliceSize*nElemBefore == expandedValue.numel()') with deterministic "
               "algorithms or accumulate=True",
        paths=(), claims=("mask.assert_trigger", "mask.equivalent"), fixed_in=(("torch", "2.1"),),
        workaround="x.masked_fill(mask, v) (mask.equivalent: identical results)",
        here="bites on CUDA with deterministic algorithms or accumulate=True"),
}


def _finding(known: Known) -> Any:
    try:
        return catalog.get(known.finding) if known.finding else None
    except ReproError:  # a finding the catalog dropped: the entry's own words stand
        return None


def _timeline(known: Known) -> dict[str, Any]:
    """The finding's measured timeline (its committed checks and bisects), or {} where the entry names no finding."""
    return _summary(known.finding) if known.finding else {}


@lru_cache(maxsize=None)
def _summary(finding: str) -> dict[str, Any]:
    """repro.upstream's summary of a finding, read once per process (it reads every check record of its folder)."""
    from ...paths import REPORTS
    from ...repro import upstream

    folder = REPORTS / "findings" / finding
    return upstream.summary(finding, folder if folder.is_dir() else None)


def fixed_in(known: Known) -> tuple[tuple[str, str], ...]:
    """(package, first release without it): the finding's measured timeline where it has one, else the entry's."""
    line = _timeline(known).get("timeline", {})
    return ((line["package"], line["fixed_from"]),) if line.get("fixed_from") else known.fixed_in


def releases(known: Known) -> str:
    """The releases a hazard bites on: its finding's measured timeline, else the first claim's `conditions.torch`
    range or the entry's words, and the release that fixed it."""
    line = _timeline(known).get("timeline", {})
    if line.get("answers"):
        return line["words"]
    words = known.bites_on
    for claim in known.claims:
        span = ledger.ledger_entry(claim).get("conditions", {}).get("torch")
        if isinstance(span, dict) and not words:
            words = f"torch {span.get('min', '…')}–{span.get('max', '…')}"
    fixed = "; ".join(f"fixed in {package} {version}" for package, version in fixed_in(known))
    return "; ".join(w for w in (words, fixed) if w) or "every release the kit ran"


def workaround(known: Known) -> str:
    """The finding's workaround where the catalog names one, else the entry's."""
    from ...repro.report import workaround_text

    found = _finding(known)
    if found is not None and found.workaround:
        return workaround_text(found, _summary(known.finding) or {"timeline": {}})
    return known.workaround


def links(known: Known) -> list[str]:
    """The upstream issues and pull requests: the entry's, then the finding's ledger (data/upstream/)."""
    threads = [t["url"] for t in _timeline(known).get("threads", [])]
    return list(dict.fromkeys([*known.upstream, *threads]))


def _installed_fix(known: Known, environment: dict[str, Any]) -> str:
    for package, version in fixed_in(known):
        have = str(environment.get(package) or "").split("+")[0]
        try:
            if have and Version(have) >= Version(version):
                return f"fixed in the installed {package} {have}"
        except InvalidVersion:
            continue
    return ""


def state(known: Known, environment: dict[str, Any], paths: dict[str, dict[str, Any]], left: set[str] = frozenset(),
          op: str = "") -> str:
    """What the hazard does on this run's stack. `paths`: this run's path rows by back-end (status, error, correct,
    graph_breaks, cudagraph_skips); `left`: the edge ops the installed ExecuTorch CUDA back-end leaves without a
    lowering; `op`: the hit's own op."""
    mark = re.compile(known.error_mark) if known.error_mark else None
    for name in known.paths:
        row = paths.get(name) or {}
        if mark and row.get("status") not in (None, "ok", "skipped") and mark.search(str(row.get("error", ""))):
            return f"bites here: {name} failed with it"
        if name.startswith("compile") and (row.get("graph_breaks") or row.get("cudagraph_skips")):
            return f"bites here: {name} had {row.get('graph_breaks') or 0} graph breaks, " \
                   f"{row.get('cudagraph_skips') or 0} CUDA-graph skips"
    if op and op in left:
        return "bites here: the installed ExecuTorch CUDA back-end leaves it a copy with no lowering"
    fixed = _installed_fix(known, environment)
    if fixed:
        return fixed
    if not known.paths:
        return known.here
    ran = {n: (paths.get(n) or {}).get("status") for n in known.paths}
    if all(s in (None, "skipped") for s in ran.values()):
        return f"cannot tell here: {', '.join(known.paths)} not run"
    clean = [n for n, s in ran.items() if s == "ok" and (paths.get(n) or {}).get("correct")]
    if clean:
        return f"did not bite here: {', '.join(clean)} ran and matched eager"
    return f"may bite: {', '.join(f'{n} {s}' for n, s in ran.items() if s)}"
