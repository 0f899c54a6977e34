"""CUDA graphs and a KV cache (seed 003): do `.item()`, `int()` or a tensor position decide what reduce-overhead
captures?

A toy decoder-only forecaster (model.py) keeps a preallocated KV cache and finds its write position by `.item()`,
`int()`, a device tensor or a Python int. Each (variant, compile mode, capture_scalar_outputs, graph_partition) case
runs in a child process (measure.py: run_cases, mutation_probe; evidence collectors in measure_evidence.py); the
judges (judge.py) read the rows, the tables and plots (show.py) show them.
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
from .measure import (ISOLATION, MODE_ORDER, MODES, ROUND_RUN_TIME, SEED, SKIPPED_ON_CPU, CacheWriter, Case, Results,
                      _bools, _run_group, as_bool, cache_semantics, capture_class, compile_settings,
                      graph_partition_supported, groups_of, mutation_probe, plan, resolve, rounds_in_turn, run_case,
                      run_cases, run_matrix, run_mutation_probe, stack_info, write_cache)
from .measure_evidence import (MESSAGE_CHARS, MESSAGES_KEPT, RECORD_CHARS, LogCapture, LogRecord, count_profile,
                               counter_snapshot, profile_call, summarize_logs, trace_one_call)
from .model import (NAME, VARIANTS, Block, CacheOverflow, Config, Forecaster, Hook, KVCache, build, example_context,
                    forecast)
from .show import (TABLES, accuracy_table, cudagraph_table, eager_agreement, explorer, graph_break_table,
                   latency_chart, latency_table, log_table, probe_table, record_tables, rounds_table, stack_table,
                   status_table)

__all__ = ["JUDGES", "LOCAL_SCALAR", "TRACE_NOT_DEVICE", "TRACE_NOT_MODE", "judge", "judge_accuracy",
           "judge_consistent_latency", "judge_first_inference", "judge_int_enables", "judge_int_no_sync",
           "judge_item_capture_scalar", "judge_item_local_scalar_dense", "judge_item_skips", "judge_item_syncs",
           "judge_memory", "judge_mutated_inputs", "judge_partition_non_gpu_ops", "judge_speedup",
           "judge_tensor_position", "model_name",
           "ISOLATION", "MODE_ORDER", "MODES", "ROUND_RUN_TIME", "SEED", "SKIPPED_ON_CPU", "CacheWriter", "Case",
           "Results", "as_bool", "cache_semantics", "capture_class", "compile_settings", "graph_partition_supported",
           "groups_of", "mutation_probe", "plan", "resolve", "rounds_in_turn", "run_case", "run_cases", "run_matrix",
           "run_mutation_probe", "stack_info", "write_cache",
           "MESSAGE_CHARS", "MESSAGES_KEPT", "RECORD_CHARS", "LogCapture", "LogRecord", "count_profile",
           "counter_snapshot", "profile_call", "summarize_logs", "trace_one_call",
           "NAME", "VARIANTS", "Block", "CacheOverflow", "Config", "Forecaster", "Hook", "KVCache", "build",
           "example_context", "forecast",
           "TABLES", "accuracy_table", "cudagraph_table", "eager_agreement", "explorer", "graph_break_table", "latency_chart",
           "latency_table", "log_table", "probe_table", "record_tables", "rounds_table", "stack_table",
           "status_table",
           # what the tests patch (env.cuda_available, isolate.run_step, torch.compile), catch or call directly
           "env", "isolate", "torch", "DeviceUnavailable", "_run_group"]


catalog.register(catalog.Investigation(
    name=NAME,
    title="CUDA graphs with a KV cache: .item() vs int() vs a tensor position under torch.compile reduce-overhead",
    seeds=(SEED,),
    profiles={
        "quick": {},
        "full": {"d_model": 256, "n_layers": 6, "n_heads": 8, "patch_len": 32, "max_seq": 128, "batch": 4,
                 "context_patches": 32, "steps": 64, "min_run_time": 1.0, "graph_partition": [True, False]},
    },
    checks={
        "variants": catalog.one_of(*VARIANTS),
        "modes": catalog.one_of(*MODES),
        "capture_scalar_outputs": _bools,
        "graph_partition": _bools,
        "device": catalog.one_of("auto", "cpu", "cuda"),
        "isolation": catalog.one_of(*ISOLATION),
        "max_seq": catalog.positive_multiple_of(8),
        "workers": lambda v: None if v >= 1 else "must be at least 1",
        "rounds": lambda v: None if isinstance(v, int) and v >= 0 else "must be a whole number, 0 or more",
    },
    judges=JUDGES,
))
