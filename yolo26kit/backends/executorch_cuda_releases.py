"""ExecuTorch CUDA across releases: the records of each release's view pass (measured on a CPU machine that has it),
what a lowering's error says the back-end lacks, and the backbone-half rule (does the static backbone lower, or is
its refusal a gap of this release that a later view pass fixes). Shared by every investigation that lowers a
backbone through this back-end, so each reads the same rule.

`python -m yolo26kit.investigations.index_dtype.releases` measures the installed release and adds its record.
"""

from __future__ import annotations

import json
import re
from typing import Any

from packaging.version import Version

from .. import env
from ..bench import isolate
from ..paths import DATA
from . import executorch_cuda
from .executorch_cuda import SUBPROCESS_FAILURE, subprocess_error

RECORDS = DATA / "releases" / "executorch_view_pass.json"
# where upstream added split_copy to the AOTI view pass (the fix the records show)
UPSTREAM = "executorch issue #19907, PR #19924"
ATEN_CONV = "ATEN,TRITON"  # ATen allowed among the convolution back-ends, next to ExecuTorch's TRITON
# no GPU named: a sentence of the kit is said on every run, and only the run's environment names its GPU
WHOLE_MODEL_SKIP = ("the back-end's default lowering of the whole model autotunes every convolution, many minutes on a "
                    "data-centre GPU; --profile full runs it")
UNFINISHED = ("timeout", "crash", "oom")
# ExecuTorch's AOTI back-end lists each kernel it has no fallback for on a "  - name" line after its error
MISSING_KERNEL_LIST = re.compile(r"missing fallback kernels \(\d+ total\):[ \t]*\n((?:[ \t]*- \S+[ \t]*(?:\n|$))+)")
# a view-copy op (Edge dialect's copying form of a view) among the kernels the back-end lists
VIEW_COPY_KERNEL = re.compile(r"aten::\w+_copy\.\w+")


def kernel_op(kernel: str) -> str:
    """`aten::split_copy.Tensor` (the back-end's list) as `aten.split_copy.Tensor` (the graph's op names)."""
    return kernel.replace("::", ".")


def records() -> list[dict[str, Any]]:
    """The recorded releases, oldest first ([] without the file)."""
    if not RECORDS.exists():
        return []
    return sorted(json.loads(RECORDS.read_text()), key=lambda r: Version(r["executorch"]))


def add_record(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Keep `record` in RECORDS, replacing the entry of the same executorch release."""
    kept = [r for r in records() if r["executorch"] != record["executorch"]] + [record]
    kept.sort(key=lambda r: Version(r["executorch"]))
    RECORDS.parent.mkdir(parents=True, exist_ok=True)
    RECORDS.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n")
    return kept


def later_fix(missing: list[str], release: str, found: list[dict[str, Any]] | None = None) -> dict[str, Any] | None:
    """The earliest recorded executorch release after `release` whose view pass maps every missing view-copy kernel
    and leaves no view-copy op without an Inductor lowering in the backbone's graph; None when none does (or when
    `missing` holds no view-copy op, which a view pass cannot fix)."""
    ops = [kernel_op(k) for k in missing]
    if not ops or not all(executorch_cuda.VIEW_COPY_OP.fullmatch(op) for op in ops):
        return None
    for record in (records() if found is None else found):
        if Version(record["executorch"]) <= Version(release.split("+")[0]):
            continue
        maps = {f"aten.{m}" if not m.startswith("aten.") else m for m in record.get("maps", [])}
        if all(op in maps for op in ops) and not record.get("left"):
            return record
    return None


def fix_text(record: dict[str, Any], missing: list[str], release: str) -> str:
    """The sentence that reports a release's failure as such, with the later release's measured evidence."""
    names = ", ".join(k.removeprefix("aten::") for k in missing)
    copies = ", ".join(f"{op.removeprefix('aten.')}×{n}" for op, n in record.get("view_copies", {}).items())
    return (f"fails on executorch {release}: {names} has no fallback kernel in this back-end; the view pass covers it "
            f"from executorch {record['executorch']} ({UPSTREAM}): run on the CPU with executorch "
            f"{record['executorch']} and torch {record['torch']}, its {record['view_pass']} maps "
            f"{', '.join(record.get('maps', []))} and leaves no view-copy op without an Inductor lowering in the "
            f"{record['model']} backbone's {record['imgsz']} px graph ({copies})")


def outcome_text(outcome: isolate.Outcome) -> str:
    """A step's error, traceback and log in one text (where the back-end's messages may sit)."""
    return "\n".join([outcome.error, outcome.traceback, outcome.log])


def missing_kernels(text: str) -> list[str]:
    """The kernels a 'missing fallback kernels' error names (none when the text has no such list)."""
    found = MISSING_KERNEL_LIST.search(text)
    return sorted(set(re.findall(r"- (\S+)", found.group(1)))) if found else []


def failure_text(lower: isolate.Outcome, chars: int = 200) -> str:
    """A failed step's error, with the kernels it lacks where the back-end listed them, or the error a compile
    worker raised where the step's error only says a subprocess failed."""
    text = outcome_text(lower)
    names = missing_kernels(text)
    worker = subprocess_error(text) if SUBPROCESS_FAILURE in lower.error else ""
    return (lower.error[:chars] + (f" (missing: {', '.join(names)})" if names else "")
            + (f" (the worker raised {worker[:chars]})" if worker else ""))


def unviewed_copies(missing: list[str]) -> str:
    """Where the kernels a lowering lacks include view-copy ops: which ones this release's view pass maps to views
    (read from the installed pass): a copy the pass leaves is a gap of the release, which the evidence should show."""
    copies = [k for k in missing if VIEW_COPY_KERNEL.fullmatch(k)]
    if not copies:
        return ""
    mapped = executorch_cuda.view_pass_targets()
    left = [k for k in copies if k.removeprefix("aten::") not in mapped]
    if not left:
        return ""
    return (f" — executorch {env.package_version('executorch')}'s view pass turns "
            f"{', '.join(mapped) or 'no view-copy op'} into views, not {', '.join(left)}, so Inductor fell back to "
            "a kernel this back-end does not have")


def _unlowered_why(left: dict[str, int] | None, split: isolate.Outcome | None) -> str:
    """Why the backbone's parts say nothing: its graph unread, no view-copy op left, or `chunk` alone not refused."""
    if left is None:
        return "its graph was not read"
    if not left:
        return "the view pass leaves no view-copy op in its graph"
    if split is None or split.status in ("skipped", *UNFINISHED):
        return "`chunk` alone was not lowered"
    return "`chunk` alone lowered"


def backbone_half(lowering: isolate.Outcome | None, graph: isolate.Outcome | None, split: isolate.Outcome | None,
                  release: str, known: list[dict[str, Any]]) -> tuple[str, str, dict[str, Any]]:
    """Does the static backbone lower through ExecuTorch CUDA with its defaults, on this release? Read from its own
    lowering where one ran, else from its parts: the view-copy ops the release's view pass leaves in its graph
    (`graph`) and `chunk` alone lowered (`split`). Returns (state, sentence, data); state: lowers | release (refused
    for view-copy kernels the pass of a later release among `known` maps) | refused | unknown."""
    if lowering is not None and lowering.status not in ("skipped", *UNFINISHED):
        if lowering.ok:
            return "lowers", f"lowered in {lowering.seconds:.0f} s", {}
        missing = missing_kernels(outcome_text(lowering))
        measured = f"refused: {failure_text(lowering)}"
    else:
        left = graph.value.get("left", {}) if graph is not None and graph.ok else None
        if not left or split is None or split.ok or split.status in ("skipped", *UNFINISHED):
            return "unknown", f"not lowered in this run ({WHOLE_MODEL_SKIP}); {_unlowered_why(left, split)}", \
                {"left": left}
        missing = [k for k in missing_kernels(outcome_text(split)) if kernel_op(k) in left]
        if not missing:
            return "unknown", (f"not lowered in this run ({WHOLE_MODEL_SKIP}); `chunk` alone failed otherwise "
                               f"({failure_text(split, 120)})"), {"left": left}
        copies = ", ".join(f"{op.removeprefix('aten.')}×{n}" for op, n in left.items())
        measured = (f"refused, from its parts (the whole backbone is not lowered in this profile: {WHOLE_MODEL_SKIP}): "
                    f"executorch {release}'s view pass leaves {copies} in its graph, and `chunk` alone through the "
                    f"back-end's defaults is refused: {failure_text(split, 160)}")
    fix = later_fix(missing, release, known)
    data = {"missing": missing, "release": release, "fixed_from": fix["executorch"] if fix else None}
    if fix is not None:
        return "release", f"{measured} — {fix_text(fix, missing, release)}", data
    return "refused", measured + unviewed_copies(missing), data


# --- the backbone's parts, measured the same way by every investigation that reads backbone_half ----------------

def backbone_program(model: str, imgsz: int, device: str = "cpu", nc: int = 80, seed: int = 0,
                     batch: int = 1) -> Any:
    """torch.export of the static backbone (the model without its top-k: raw [B, 4+nc, anchors] outputs, seed 001's
    "hybrid" export) with seeded weights and input on `device`."""
    import torch

    from ..bench import yolo

    module = yolo.build(model, nc=nc, seed=seed, end2end=False).eval().to(device)
    with torch.no_grad():
        return torch.export.export(module, (yolo.example_input(batch, imgsz, seed, device),))


def backbone_view_copies(model: str, imgsz: int, variant: str, nc: int = 80, seed: int = 0,
                         batch: int = 1) -> dict[str, Any]:
    """The backbone exported on the CPU: its view-copy ops before the installed view pass and those the pass leaves
    for ATen fallback kernels (`executorch_cuda.view_copy_fallbacks`), with what it was built from."""
    found = executorch_cuda.view_copy_fallbacks(backbone_program(model, imgsz, "cpu", nc, seed, batch))
    return {**found, "model": model, "imgsz": imgsz, "variant": variant, "maps": executorch_cuda.view_pass_targets()}


def chunk_as_c3k2(scores: Any) -> Any:
    """`chunk` as YOLO26's C3k2 blocks split their channels: a view-copy op (split_copy) in the Edge dialect."""
    first, second = scores.chunk(2, dim=-1)
    return first * second + 1


def chunk_program(imgsz: int, device: str = "cpu", nc: int = 80, seed: int = 0) -> Any:
    """torch.export of `chunk` alone (chunk_as_c3k2) on seeded class scores [1, anchors, nc] of a head at `imgsz`."""
    import torch

    from ..bench import yolo

    class Chunk(torch.nn.Module):
        def forward(self, scores: torch.Tensor) -> torch.Tensor:
            return chunk_as_c3k2(scores)

    scores = torch.rand(1, yolo.anchors(imgsz), nc, generator=torch.Generator().manual_seed(seed)).to(device)
    with torch.no_grad():
        return torch.export.export(Chunk().eval(), (scores,))
