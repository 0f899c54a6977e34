"""Releases as conditions: which view-copy ops the installed executorch's view pass leaves in the backbone's edge
graph (measure.backbone_view_copies, run on any device, no lowering), and the records of later releases, measured
the same way on a CPU machine that has them (kept by the back-end: backends.executorch_cuda_releases), so a failure
of the run's release can be told apart from a failure of the seed's claim.

`python -m yolo26kit.investigations.index_dtype.releases` measures the installed release and adds its record to
RECORDS (one entry per executorch release).
"""

from __future__ import annotations

import json

from ...backends.executorch_cuda_releases import RECORDS, UPSTREAM, add_record, fix_text, kernel_op, later_fix, records
from .measure import backbone_view_copies
from .model import Spec

__all__ = ["RECORDS", "UPSTREAM", "add_record", "backbone_view_copies", "fix_text", "kernel_op", "later_fix",
           "records", "main"]


def main() -> None:
    """Measure the installed release on yolo26n's 640 px backbone (gather top-k) and record it."""
    record = {k: v for k, v in backbone_view_copies(Spec(variant="gather", imgsz=640)).items() if k != "source"}
    add_record(record)
    print(json.dumps(record, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
