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
from .judge import (JUDGES, SPEED_RULE, compile_backend, edge_backend, judge, judge_edge_introduces_slice_copy,
                    judge_equivalent, judge_more_efficient, judge_other_view_ops, judge_reinplace_misses_slice_copy,
                    judge_replaces_slice_copy, backend_irrelevance, TUNED_OPS)
from .measure import (COMPILE_BACKEND, NAME, NAMED_SOURCE, PASS_LOCATIONS, PRELOAD, PROBES, SEED, TIMING_ROUNDS,
                      VIEW_COPY_OPS, VIEW_OPS, Case, Results, backend_edge_program, base_op, conversions,
                      device_program, equivalence_rows, find_pass, flat_output, investigate, op_counts, op_name,
                      probe_pass, slice_copies_without_named_source, step_compile, step_graphs, step_run,
                      step_time_rounds, RELEASE_COVERAGE_FILE, SPEED_BAND, load_release_coverage, release_coverage,
                      write_release_coverage)
from .model import MODELS, DecodeStep, Spec, build_module, call_inputs, rotate_half
from .show import (TABLES, calls_table, code_table, equivalence_table, pass_table, post_grad_table, probes_table,
                   record_tables, rounds_table, runtime_table, view_ops_table)
from .wrapper import analyse_package, analyse_wrapper, is_copy_only

__all__ = ["backend_irrelevance", "TUNED_OPS", "RELEASE_COVERAGE_FILE", "SPEED_BAND", "load_release_coverage",
           "release_coverage", "write_release_coverage", "JUDGES", "SPEED_RULE", "compile_backend", "edge_backend", "judge", "judge_edge_introduces_slice_copy",
           "judge_equivalent", "judge_more_efficient", "judge_other_view_ops", "judge_reinplace_misses_slice_copy",
           "judge_replaces_slice_copy", "COMPILE_BACKEND", "NAME", "NAMED_SOURCE", "PASS_LOCATIONS", "PRELOAD",
           "PROBES", "SEED", "TIMING_ROUNDS", "VIEW_COPY_OPS", "VIEW_OPS", "Case", "Results", "backend_edge_program",
           "base_op", "conversions", "device_program", "equivalence_rows", "find_pass", "flat_output", "investigate",
           "op_counts", "op_name", "probe_pass", "slice_copies_without_named_source", "step_compile", "step_graphs",
           "step_run", "step_time_rounds", "MODELS", "DecodeStep", "Spec", "build_module", "call_inputs", "rotate_half",
           "TABLES", "calls_table", "code_table", "equivalence_table", "pass_table", "post_grad_table", "probes_table",
           "record_tables", "rounds_table", "runtime_table", "view_ops_table", "analyse_package", "analyse_wrapper",
           "is_copy_only"]


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
))
