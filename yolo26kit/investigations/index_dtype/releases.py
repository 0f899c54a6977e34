"""Releases as conditions: which view-copy ops the installed executorch's view pass leaves in the backbone's edge
graph (run on any device, no lowering), and the records of later releases, measured the same way on a CPU machine
that has them, so a failure of the run's release can be told apart from a failure of the seed's claim.

`python -m yolo26kit.investigations.index_dtype.releases` measures the installed release and adds its record to
RECORDS (one entry per executorch release).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from packaging.version import Version

from ...backends import executorch_cuda
from ...paths import DATA
from .model import Spec

RECORDS = DATA / "releases" / "executorch_view_pass.json"
# where upstream added split_copy to the AOTI view pass (the fix the records show)
UPSTREAM = "executorch issue #19907, PR #19924"


def backbone_view_copies(spec: Spec) -> dict[str, Any]:
    """The spec's backbone (raw outputs, static size), exported on the CPU: its view-copy ops before the installed
    view pass and those the pass leaves for ATen fallback kernels (`executorch_cuda.view_copy_fallbacks`)."""
    from .measure import export

    backbone = replace(spec, scope="backbone", device="cpu", conv_backends="")
    found = executorch_cuda.view_copy_fallbacks(export(backbone))
    return {**found, "model": backbone.model, "imgsz": backbone.imgsz, "variant": backbone.variant,
            "maps": executorch_cuda.view_pass_targets()}


def kernel_op(kernel: str) -> str:
    """`aten::split_copy.Tensor` (the back-end's list) as `aten.split_copy.Tensor` (the graph's op names)."""
    return kernel.replace("::", ".")


def records() -> list[dict[str, Any]]:
    """The recorded releases, oldest first ([] without the file)."""
    if not RECORDS.exists():
        return []
    return sorted(json.loads(RECORDS.read_text()), key=lambda r: Version(r["executorch"]))


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


def add_record(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Keep `record` in RECORDS, replacing the entry of the same executorch release."""
    kept = [r for r in records() if r["executorch"] != record["executorch"]] + [record]
    kept.sort(key=lambda r: Version(r["executorch"]))
    RECORDS.parent.mkdir(parents=True, exist_ok=True)
    RECORDS.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n")
    return kept


def main() -> None:
    """Measure the installed release on yolo26n's 640 px backbone (gather top-k) and record it."""
    record = {k: v for k, v in backbone_view_copies(Spec(variant="gather", imgsz=640)).items() if k != "source"}
    add_record(record)
    print(json.dumps(record, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
