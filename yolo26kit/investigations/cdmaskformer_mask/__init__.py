"""CDMaskFormer attention mask (seed 002): the all-True-row fill, its rewrites, their cost, and the CUDA INTERNAL ASSERT.

The Mask2Former decoder builds `attn_mask` [batch·heads, queries, H·W] (True = do not attend) and clears
the rows that are all True, so that a query with an empty predicted mask attends everywhere:

    attn_mask[torch.where(attn_mask.sum(-1) == attn_mask.shape[-1])] = False          # where_index_put (original)

The seed replaced it with `attn_mask.masked_fill(mask.unsqueeze(-1), False)` after a CUDA
`linearIndex.numel()*sliceSize*nElemBefore == expandedValue.numel()` INTERNAL ASSERT ("7840 vs 160").

What the kit found (see `assert_numbers` and data/mask_assert_issues.json): the assert sits in CUDA's sort-based
index_put kernel (`index_put_with_sort_kernel`), which runs only with `torch.use_deterministic_algorithms(True)`
or `accumulate=True`. Before PyTorch PR #105833 that kernel expanded a scalar value to the number of indexed
rows but not over each row's `sliceSize` elements, so *any* mask with at least one all-True row asserts under
deterministic algorithms: 7840 = 160 rows × 49 (H·W) vs 160 = the value expanded to the 160 rows. 160 is every
row of [32, 5, 49]: all 5 queries of all 4 images had empty masks on the 7×7 level at that step. Random
synthetic masks almost never contain an all-True row (p = 0.5^49 at density 0.5); a script without deterministic
mode, or without all-True rows, cannot reproduce it (the seed does not say which settings its scripts used).

The package: model.py (the mask and the formulations under test), kernel.py (the sort kernel's assert arithmetic and
the reports found), measure.py and measure_assert.py (what the notebook measures, the assert attempts in isolated
children), judge.py and judge_cost.py (one judge per claim, the verdict rules), show.py (tables, plot, explorer).
"""

from __future__ import annotations

from ... import catalog
from .judge import JUDGES, judge
from .kernel import explain_seed_assert, issues_frame, model_check, versions_summary
from .measure import (NAME, SEED, benchmark, check_equivalence, copy_bandwidth, memory_profile, Results,
                      speed_rounds_table)
from .measure_assert import try_triggers
from .model import IMPLEMENTATIONS, check_percent, check_shapes
from .show import TABLES, explorer, implementations_frame, mask_examples, plot_benchmark, record_tables

__all__ = ["JUDGES", "TABLES", "benchmark", "check_equivalence", "copy_bandwidth", "explain_seed_assert", "explorer",
           "implementations_frame", "issues_frame", "judge", "mask_examples", "memory_profile", "model_check",
           "plot_benchmark", "record_tables", "Results", "speed_rounds_table", "try_triggers", "versions_summary"]


catalog.register(catalog.Investigation(
    name=NAME,
    title="CDMaskFormer attention mask: masked_fill vs torch.where index_put, cost, and the CUDA INTERNAL ASSERT",
    seeds=(SEED,),
    profiles={
        "quick": {"shapes": ["32x5x49", "32x5x1024", "32x100x4096"], "min_run_time": 0.05, "warmup": 1, "copy_mib": 32,
                  "bench_deterministic": False, "cpu_threads": 1,
                  "equivalence_shapes": ["32x5x49", "32x5x1024", "8x3x7"], "equivalence_seeds": 1,
                  "trigger_shapes": ["32x5x49"], "trigger_full_percent": [100, 0], "trigger_timeout": 120},
        "full": {"shapes": ["32x5x49", "32x5x1024", "32x100x4096", "64x100x16384"], "min_run_time": 0.3, "warmup": 3,
                 "copy_mib": 256, "equivalence_shapes": ["32x5x49", "32x5x1024", "32x100x4096", "8x3x7", "1x1x1"],
                 "equivalence_seeds": 3, "trigger_shapes": ["32x5x49", "32x5x1024"],
                 "trigger_full_percent": [100, 25, 0], "trigger_timeout": 180},
    },
    checks={
        "device": catalog.one_of("auto", "cpu", "cuda"),
        "devices": catalog.one_of("cpu", "cuda"),
        "implementations": catalog.one_of(*IMPLEMENTATIONS),
        "shapes": check_shapes,
        "equivalence_shapes": check_shapes,
        "trigger_shapes": check_shapes,
        "full_percent": check_percent,
        "trigger_full_percent": check_percent,
        "heads": lambda v: None if v >= 1 else "must be at least 1",
        "min_run_time": lambda v: None if v > 0 else "must be positive",
        "copy_mib": lambda v: None if v >= 1 else "must be at least 1",
        "cpu_threads": lambda v: None if v >= 0 else "must be 0 (torch's default) or more",
        "equivalence_seeds": lambda v: None if v >= 1 else "must be at least 1",
    },
    judges=JUDGES,
    with_cpu=True,
))
