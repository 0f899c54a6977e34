"""Dynamic H/W/batch export of YOLO26: which torch.export specs work, whether the programs stay right across sizes,
and ExecuTorch XNNPACK / AOTInductor with the spec that works.

The model (yolo26kit.live) and its dynamic export under each spec (yolo26kit.dynamic_export) are shared kit modules.
Stages: model (stock or kit-modified, letterboxing, known errors), measure_export (export attempts, size sweep,
residue scan, in process), measure (ExecuTorch XNNPACK and AOTI studies in child steps, Results), judge (JUDGES),
show (extra views, widget)."""

from __future__ import annotations

from ... import catalog
from ...bench.dynamic_export import SPECS, STRIDE
from .judge import JUDGES, judge
from .measure import PRELOAD, NAME, PATHS, Results, start_backends
from .measure_export import residue_scan, run_sweep, try_specs
from .show import TABLES, explorer, fix_source, non_multiples, plot_latency, record_tables, residue_table

__all__ = ["JUDGES", "TABLES", "explorer", "fix_source", "judge", "non_multiples", "plot_latency", "record_tables",
           "residue_scan", "residue_table", "Results", "run_sweep", "start_backends", "try_specs"]


catalog.register(catalog.Investigation(
    NAME,
    "Dynamic shapes: stride guards, derived dims, cached anchors, XNNPACK and AOTI",
    ("001_fda80f2472077657.txt", "000_60ebd1ee51d51957.txt"),
    profiles={
        # quick: no static .pte (it only feeds the latency plot, no verdict; ~40 s of lowering on a small CPU)
        "quick": {"model": "yolo26n", "min_size": 160, "max_size": 320, "et_specs": ["derived", "derived_kit"],
                  "et_static_sizes": []},
        "full": {"model": "yolo26n", "min_size": 128, "max_size": 640, "batch": 1, "max_batch": 8,
                 "sweep": [128, 160, 224, 288, 320, 384, 416, 480, 544, 608, 640, 264, 282, 648, 672],
                 "et_specs": ["derived", "derived_topk", "derived_noverify", "derived_kit"],
                 "et_sizes": [128, 192, 256, 320, 384, 448, 512, 576, 640],
                 "et_static_sizes": [128, 256, 384, 512, 640], "aoti_specs": ["derived", "derived_warm"],
                 "timing_s": 1.0},
    },
    checks={
        "min_size": catalog.positive_multiple_of(STRIDE),
        "max_size": catalog.positive_multiple_of(STRIDE),
        "device": catalog.one_of("auto", "cpu", "cuda"),
        "paths": catalog.one_of(*PATHS),
        "specs": catalog.one_of(*SPECS),
        "et_specs": catalog.one_of(*SPECS),
        "aoti_specs": catalog.one_of(*SPECS),
    },
    judges=JUDGES,
    preload=PRELOAD,
))
