"""Index dtype (seeds 000/001): YOLO26's advanced-indexing top-k versus `torch.gather` across export back-ends.

Variants of the Detect head's end-to-end top-k:
  legacy   — the seed's original `ori_index[torch.arange(batch)[..., None], index // nc]` (aten.index.Tensor),
             with the postprocess of that ultralytics release (boxes gathered with `idx.repeat(1, 1, 4)`);
  legacy_cast — legacy with the explicit `.to(torch.int64)` the seed says is not enough;
  gather   — the seed's fix, `torch.gather(ori_index, 1, (index // nc).unsqueeze(-1))`;
  gather_floatdiv — gather with the anchor index as `(index.double() / nc).floor().long()` (the root cause's
             workaround: no integer floor division for AOT Inductor to lower; the `workaround` probe);
  upstream — whatever the installed ultralytics ships (its pattern is read from the exported graph).

Paths, each step in an isolated child (isolate.run_step): eager, torch.export, AOTI, torch.compile,
ExecuTorch XNNPACK (lower + run), ExecuTorch CUDA (CudaPartitioner lower; run where the runtime has the backend).
Back-end code lives in yolo26kit.backends (aoti, executorch_xnnpack, executorch_cuda); AOTI packages load through
`aoti.run_step` (as is, then with the workaround when the load crashed from a known cause).

Probes (CUDA): single post-processing ops and the backbone alone through the ExecuTorch CUDA back-end, the backbone
again with ATen allowed among the convolution back-ends, and whether a subprocess of a step sees the GPU.

Ties in top-k: legacy and gather share every top-k call and differ only in how the winning anchor
indices are picked from `ori_index`, which is a pure lookup; so they must agree bit for bit whatever
order top-k breaks ties in, and the kit compares them with `torch.equal`, not allclose.

Root cause: division (the top-k's `index // nc` through plain AOT Inductor, one change at a time: the divisor a
Python int or a 0-d tensor as to_edge makes it, the quotient alone or feeding gather / advanced indexing, on the
run's device and the CPU); judge_root judges from it.

Stages: model (modules under test, Spec), measure (steps, status matrix, probes, equivalence, Results),
measure_root (the index dtype through the CUDA back-end's passes), division, judge and judge_root (JUDGES),
show (tables, widget).
"""

from __future__ import annotations

from ... import catalog
from ...bench import yolo
from .judge import JUDGES, judge
from .measure import PATHS, PRELOAD, PROBES, autotune_note, equivalence, investigate
from .measure_root import root_cause
from .model import VARIANTS
from .show import (TABLES, diagnosis, division_frame, equivalence_summary, explorer, matrix_frame, probe_frame,
                   scan_frame, upstream_pattern)

__all__ = ["JUDGES", "TABLES", "autotune_note", "diagnosis", "division_frame", "equivalence", "equivalence_summary",
           "explorer",
           "investigate", "judge", "matrix_frame", "probe_frame", "root_cause", "scan_frame", "upstream_pattern"]


QUICK_PROBES = ["cast", "ops", "split", "backbone", "backbone_aten", "subprocess_gpu", "backbone_graph", "division",
                "workaround"]

catalog.register(catalog.Investigation(
    name="index_dtype",
    title="YOLO26 top-k: advanced indexing vs torch.gather across export back-ends",
    seeds=("000_60ebd1ee51d51957.txt", "001_fda80f2472077657.txt"),
    profiles={
        # quick: the matrix on the postprocess alone at the seed's 640 px, ExecuTorch CUDA with the back-end's defaults
        # (no convolution or matmul there, so max-autotune has nothing to tune: seconds); the whole-model / backbone
        # CUDA lowerings are skipped rows (WHOLE_MODEL_SKIP, minutes of autotuning each) and the claims resting on
        # them are judged from their parts: the postprocess and split probes lowered here, the backbone's graph
        # through the view pass (judge.py says how, basis `both`).
        "quick": {"scope": "postprocess", "imgsz": 640, "full_model_paths": ["et_xnnpack", "et_cuda"],
                  "equivalence_cases": 200, "autotune": True, "whole_model_cuda": False, "step_timeout": 300.0,
                  "probes": QUICK_PROBES},
        # full: every path on the whole model at the seed's 640 px, ExecuTorch CUDA with the back-end's defaults
        # (whole-model lowerings one at a time; successes and Inductor's autotune timings kept in the compile cache,
        # so a run spread over several calls with --resume does not redo them).
        "full": {"scope": "full", "imgsz": 640, "full_model_paths": ["export", "aoti", "compile", "et_xnnpack", "et_cuda"],
                 "equivalence_cases": 2000, "autotune": True, "whole_model_cuda": True, "step_timeout": 3000,
                 "probes": list(PROBES)},
    },
    checks={
        "imgsz": catalog.positive_multiple_of(32),
        "variants": catalog.one_of(*VARIANTS),
        "paths": catalog.one_of(*PATHS),
        "full_model_paths": catalog.one_of(*PATHS),
        "full_model_variant": catalog.one_of(*VARIANTS),
        "scope": catalog.one_of("postprocess", "full"),
        "model": catalog.one_of(*(f"yolo26{s}" for s in yolo.SCALES)),
        "device": catalog.one_of("auto", "cpu", "cuda"),
        "batch": lambda v: None if v >= 1 else "must be at least 1",
        "workers": lambda v: None if v >= 0 else "must be 0 (automatic) or more",
        "probes": catalog.one_of(*PROBES),
    },
    judges=JUDGES,
    preload=PRELOAD,
))
