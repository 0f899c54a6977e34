"""CUDA graphs and a KV cache (seed 003): do `.item()`, `int()` or a tensor position decide what reduce-overhead
captures, and what do CUDA graphs cost and give on the seed's own model, Toto?

A toy decoder-only forecaster (model.py) keeps a preallocated KV cache and finds its write position by `.item()`,
`int()`, a device tensor or a Python int. Each (variant, compile mode, capture_scalar_outputs, graph_partition) case
runs in a child process (measure.py: run_cases, mutation_probe; evidence collectors in measure_evidence.py); the
judges (judge.py) read the rows, the tables and plots (show.py) show them. On CUDA, Toto itself (toto.py: toto-ts
0.2.0 at Toto-Open-Base-1.0's size, its own KVCache and the seed's int() patch of it) runs too (toto_measure.py, the
measures in measures.py), and the cost claims are judged on it (judge_toto.py).
"""

from __future__ import annotations

import torch

from ... import catalog, env
from ...bench import isolate
from ...errors import DeviceUnavailable
from .judge import (JUDGES, LOCAL_SCALAR, TRACE_NOT_DEVICE, TRACE_NOT_MODE, judge, judge_accuracy,
                    judge_consistent_latency, judge_first_inference, judge_int_enables, judge_int_no_sync,
                    judge_item_capture_scalar, judge_item_local_scalar_dense, judge_item_skips, judge_item_syncs,
                    judge_memory, judge_mutated_inputs, judge_partition_non_gpu_ops, judge_speedup,
                    judge_tensor_position, model_name)
from .measure import (ISOLATION, MODE_ORDER, MODES, SEED, SKIPPED_ON_CPU, CacheWriter, Case, Results,
                      as_bools, run_group, as_bool, cache_semantics, capture_class, compile_settings,
                      graph_partition_supported, groups_of, mutation_probe, plan, rounds_in_turn, run_case,
                      run_cases, run_matrix, run_mutation_probe, stack_info, write_cache)
from .measure_evidence import (MESSAGE_CHARS, MESSAGES_KEPT, RECORD_CHARS, LogCapture, LogRecord, count_profile,
                               counter_snapshot, profile_call, summarize_logs, trace_one_call)
from .model import (NAME, VARIANTS, Block, CacheOverflow, Config, Forecaster, Hook, KVCache, build, example_context,
                    forecast)
from .show import (TABLES, accuracy_table, cudagraph_table, eager_agreement, explorer, graph_break_table,
                   latency_chart, latency_table, log_table, probe_table, record_tables, rounds_table, stack_table,
                   status_table, toto_rounds_table, toto_table)
from .toto import TOTO_OPEN_BASE, TOTO_VARIANTS, TotoRun, TotoUnavailable, build_toto, toto_context, toto_forecast

__all__ = ["JUDGES", "LOCAL_SCALAR", "TRACE_NOT_DEVICE", "TRACE_NOT_MODE", "judge", "judge_accuracy",
           "judge_consistent_latency", "judge_first_inference", "judge_int_enables", "judge_int_no_sync",
           "judge_item_capture_scalar", "judge_item_local_scalar_dense", "judge_item_skips", "judge_item_syncs",
           "judge_memory", "judge_mutated_inputs", "judge_partition_non_gpu_ops", "judge_speedup",
           "judge_tensor_position", "model_name",
           "ISOLATION", "MODE_ORDER", "MODES", "SEED", "SKIPPED_ON_CPU", "CacheWriter", "Case",
           "Results", "as_bool", "cache_semantics", "capture_class", "compile_settings", "graph_partition_supported",
           "groups_of", "mutation_probe", "plan", "rounds_in_turn", "run_case", "run_cases", "run_matrix",
           "run_mutation_probe", "stack_info", "write_cache",
           "MESSAGE_CHARS", "MESSAGES_KEPT", "RECORD_CHARS", "LogCapture", "LogRecord", "count_profile",
           "counter_snapshot", "profile_call", "summarize_logs", "trace_one_call",
           "NAME", "VARIANTS", "Block", "CacheOverflow", "Config", "Forecaster", "Hook", "KVCache", "build",
           "example_context", "forecast",
           "TABLES", "accuracy_table", "cudagraph_table", "eager_agreement", "explorer", "graph_break_table", "latency_chart",
           "latency_table", "log_table", "probe_table", "record_tables", "rounds_table", "stack_table",
           "status_table", "toto_rounds_table", "toto_table",
           "TOTO_OPEN_BASE", "TOTO_VARIANTS", "TotoRun", "TotoUnavailable", "build_toto", "toto_context",
           "toto_forecast",
           # what the tests patch (env.cuda_available, isolate.run_step, torch.compile), catch or call directly
           "env", "isolate", "torch", "DeviceUnavailable", "run_group"]


catalog.register(catalog.Investigation(
    name=NAME,
    title="CUDA graphs with a KV cache: .item() vs int() vs a tensor position under torch.compile reduce-overhead",
    seeds=(SEED,),
    profiles={
        "quick": {},
        "full": {"d_model": 256, "n_layers": 6, "n_heads": 8, "patch_len": 32, "max_seq": 128, "batch": 4,
                 "context_patches": 32, "steps": 64, "min_run_time": 1.0, "graph_partition": [True, False],
                 "toto_variants": ["seed_int", "stock"], "toto_capture": [True, False]},
    },
    checks={
        "variants": catalog.one_of(*VARIANTS),
        "toto_variants": catalog.one_of(*TOTO_VARIANTS),
        "toto_capture": as_bools,
        "toto_context": catalog.positive_multiple_of(64),
        "modes": catalog.one_of(*MODES),
        "capture_scalar_outputs": as_bools,
        "graph_partition": as_bools,
        "device": catalog.one_of("auto", "cpu", "cuda"),
        "isolation": catalog.one_of(*ISOLATION),
        "max_seq": catalog.positive_multiple_of(8),
        "workers": lambda v: None if v >= 1 else "must be at least 1",
        "rounds": lambda v: None if isinstance(v, int) and v >= 0 else "must be a whole number, 0 or more",
    },
    judges=JUDGES,
))
