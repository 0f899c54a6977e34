"""view_copy (seed 004): ExecuTorch's AOTI view-copy pass — what it replaces, what Inductor makes of it, what it costs.

ExecuTorch's edge dialect turns every view op into a `*_copy` op. Its AOT Inductor back-ends (CUDA, Metal)
run `ReplaceViewCopyWithViewPass` (the successor of the seed's `ReplaceSliceCopyWithSlicePass`) to turn
non-mutated `slice_copy` / `select_copy` (and, in newer releases, `split_copy`) back into views before
Inductor compiles the graph. This module takes the graph the CUDA back-end's `preprocess` really receives
(`to_edge_transform_and_lower` with the `CudaPartitioner`, stopped where preprocess moves it to the device),
counts the view-copy ops before and after the pass, compiles it with AOT Inductor with and without the pass,
reads the generated code (kernel calls, ATen fallbacks through the proxy executor, allocations, Inductor's
own byte count, the graph before and after Inductor's post-grad passes) and times both packages.

Models: a gpt-fast-style decode step with a static KV cache (stacked per-layer buffers written with
`cache[layer][:, :, pos] = k`, q/k/v sliced out of one projection, RoPE with `rotate_half` slices) and
YOLO26 built from its yaml.
"""

from __future__ import annotations

from ... import catalog
from .judge import JUDGES, judge
from .measure import PRELOAD, NAME, SEED, investigate
from .model import MODELS
from .show import TABLES, record_tables

__all__ = ["JUDGES", "TABLES", "investigate", "judge", "record_tables"]


catalog.register(catalog.Investigation(
    name=NAME,
    title="ExecuTorch's view-copy pass for AOT Inductor: what it replaces, what Inductor generates, what it costs",
    seeds=(SEED,),
    profiles={
        "quick": {"compile_models": ["kv_decode", "yolo26n"]},  # yolo26n: the other view ops the claims are about
        "full": {"compile_models": ["kv_decode", "yolo26n"], "d_model": 256, "n_heads": 8, "n_layers": 4,
                 "max_seq": 256, "decode_steps": 8, "imgsz": 640, "min_run_time": 1.0},
    },
    checks={
        "models": catalog.one_of(*MODELS),
        "compile_models": catalog.one_of(*MODELS),
        "device": catalog.one_of("auto", "cpu", "cuda"),
        "imgsz": catalog.positive_multiple_of(32),
        "decode_steps": lambda v: None if v >= 1 else "must be at least 1",
        "workers": lambda v: None if v >= 0 else "must be 0 (automatic) or more",
    },
    judges=JUDGES,
    preload=PRELOAD,
))
