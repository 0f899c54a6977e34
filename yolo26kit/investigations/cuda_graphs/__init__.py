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

from ... import catalog
from .judge import JUDGES, judge
from .measure import ISOLATION, MODES, SEED, as_bools, cache_semantics, run_matrix
from .model import NAME, VARIANTS, Config
from .show import (TABLES, accuracy_table, cudagraph_table, eager_agreement, explorer, graph_break_table,
                   latency_chart, latency_table, log_table, probe_table, record_tables, rounds_table, stack_table,
                   status_table, toto_rounds_table, toto_table)
from .toto import TOTO_VARIANTS

__all__ = ["JUDGES", "TABLES", "accuracy_table", "cache_semantics", "Config", "cudagraph_table", "eager_agreement",
           "explorer", "graph_break_table", "judge", "latency_chart", "latency_table", "log_table", "probe_table",
           "record_tables", "rounds_table", "run_matrix", "stack_table", "status_table", "toto_rounds_table",
           "toto_table"]


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
    # Toto's rounds are about 0.4 of its GPU measuring (13-40 s of 60-83 s): on a spare GPU they need not wait for
    # the matrix's rounds
    spare_gpu_share=0.4,
))
