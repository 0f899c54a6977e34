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

Verdict rules (all computed from the run; one function per claim id in `JUDGES`):
  mask.equivalent — every case of the grid and the edge cases is compared with an independent NumPy reference;
      confirmed when masked_fill and bool_index_put (the seed's two alternatives) match everywhere, partly when
      only masked_fill does, refuted when masked_fill differs anywhere.
  mask.speedup_small_20x / mask.speedup_medium_3_5x — the seed timed on a GPU, so the verdict needs CUDA rows;
      a CPU-only run gives `needs_cuda` with the CPU numbers in the evidence. Speed-up S = net time of
      where_index_put / net time of masked_fill with deterministic algorithms off (the seed's benchmark ran the
      original to the end, which its torch does not do with them on once a row is full), at the seed's shape and
      `full_percent` (the seed does not give its share of full rows). With the claimed factor C:
      confirmed if C/2 <= S <= 2·C; partly if S >= 1.1 but outside that band; refuted if S < 1.1
      (masked_fill not measurably faster); error when CUDA ran but the seed's shape was not among `shapes`.
  mask.memory_lower — peak extra memory of one call, masked_fill vs the original, per shape and device (CUDA: the
      caching allocator's peak above the start; CPU: the peak of new tensors at the ATen level, `memory_profile`):
      confirmed when masked_fill's is lower everywhere, refuted when higher everywhere, else partly.
  mask.different_kernels — CUDA: confirmed when masked_fill launches none of the original's indexing kernels
      (names with index / nonzero / sort), refuted when it shares one; CPU only: needs_cuda with the ATen ops.
  mask.bool_index_alternative — refuted when `m[mask] = False` differs from the reference; partly when it matches
      but dispatches the same aten.index_put_ as the original (the op the assert sits under); else confirmed.
  mask.not_reproducible_synthetic — on CUDA: refuted when a synthetic mask makes the seed's line (or
      `attn_mask[mask] = False`) assert on this torch; otherwise partly: on this torch nothing reproduces it,
      but the kernel arithmetic (`assert_numbers`, checked against the 'N vs M' of eight PyTorch bug reports)
      gives exactly the seed's 7840 vs 160 for a synthetic [32, 5, 49] mask with every row full under the
      1.11–2.0 rule, i.e. the error depends on the data (all-True rows) and on deterministic mode, not on chance.
      CPU only: needs_cuda.
  mask.data_independent — from the kernel arithmetic once it reproduces every reported pair (else error): refuted
      when the same shape asserts with one all-True row and not with none (the contents decide).
  mask.ratio_spatial — confirmed when the arithmetic that reproduces 7840 vs 160 has sliceSize = H·W = 7840/160.
  mask.assert_trigger (the kit's own) — on CUDA: confirmed when the assert fires only on the sort path and its
      numbers match a rule of `assert_numbers`; partly when it fires only on the sort path but with numbers no
      rule gives; refuted when it fires off the sort path; not_reproduced when no attempt fires (this torch has
      the fixes). CPU only: needs_cuda, with the CPU outcomes of the same attempts in the evidence.
  mask.updates_fix — CUDA: of the attempts the 1.11–2.0 kernel fails, confirmed when none still asserts on this
      torch, refuted when all do, partly otherwise; CPU only: needs_cuda.

Timing: every implementation gets the same fresh input each call (`buf.copy_(src)` then the implementation on
`buf`), because the in-place ones clear the full rows and a second call on the same tensor would find none.
The copy alone is timed too ("restore") and subtracted: net = median(copy + implementation) − median(copy).
Bytes counted for GB/s (1 byte per bool element, N = rows·queries·H·W): every formulation must read the mask
once (N); in-place formulations must write only the cleared rows (full rows·H·W), out-of-place ones write a new
N-byte mask. Index tensors, int64 row sums and re-reads are not counted, so GB/s is a lower bound of the traffic.
The roofline fraction divides it by the device's copy bandwidth measured in the same run (a `copy_` of
`copy_mib` MiB, counted as read + write).
"""

from __future__ import annotations

import json
import math
import re
import weakref
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd
import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from .. import catalog, env, findings, isolate, timing

NAME = "cdmaskformer_mask"
SEED = "002_0f900b64e9bdebb4.txt"
ISSUES_FILE = findings.DATA / "mask_assert_issues.json"

# The seed's error and setting, as the seed reports them (numbers are parsed from the message, not typed twice).
SEED_ASSERT_MESSAGE = ("RuntimeError: linearIndex.numel()*sliceSize*nElemBefore == expandedValue.numel() INTERNAL ASSERT "
                       "FAILED at \"/opt/conda/conda-bld/pytorch_1678402411778/work/aten/src/ATen/native/cuda/"
                       "Indexing.cu\":389, please report a bug to PyTorch. number of flattened indices did not match "
                       "number of elements in the value tensor: 7840 vs 160")
SEED_CONFIG = {"batch": 4, "heads": 8, "queries": 5}
# name → (shape rows×queries×H·W, seed's masked_fill ms, seed's original ms, claimed factor)
SEED_BENCH = {
    "mask.speedup_small_20x": ((32, 5, 1024), 0.254, 5.062, 20.0),
    "mask.speedup_medium_3_5x": ((32, 100, 4096), 1.258, 4.447, 3.5),
}
ORIGINAL = "where_index_put"
BENCH_ROUNDS = 5  # the implementations of a shape take turns this many times (see benchmark)
SPEEDUP_BAND = 2.0  # confirmed within a factor of 2 of the claim
FASTER = 1.1  # below this the rewrite is not measurably faster

Shape = tuple[int, int, int]


# --- shapes and labels -----------------------------------------------------------------------------

def parse_shape(text: str | tuple | list) -> Shape:
    """'32x5x1024' (also ×, *, commas) → (32, 5, 1024): rows (batch·heads) × queries × H·W."""
    if isinstance(text, (tuple, list)):
        parts = [int(p) for p in text]
    else:
        parts = [int(p) for p in re.split(r"\s*[x×*,]\s*", str(text).strip().lower()) if p != ""]
    if len(parts) != 3 or any(p < 0 for p in parts):
        raise ValueError(f"shape {text!r}: expected rows x queries x H·W with three non-negative integers")
    return parts[0], parts[1], parts[2]


def shape_label(shape: Shape | tuple | list) -> str:
    """(32, 5, 1024) → '32x5x1024'."""
    return "x".join(str(int(s)) for s in shape)


def check_shapes(value: Any) -> str | None:
    """A catalog check: every item must parse as rows x queries x H·W."""
    items = value if isinstance(value, list) else [value]
    for item in items:
        try:
            parse_shape(item)
        except ValueError as exc:
            return str(exc)
    return None


def check_percent(value: Any) -> str | None:
    """A catalog check: an int (or list of ints) in 0..100."""
    items = value if isinstance(value, list) else [value]
    bad = [v for v in items if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 100]
    return f"{bad} must be integers from 0 to 100" if bad else None


def heads_for(rows: int, heads: int) -> int:
    """The head count the rows are split into: `heads` when it divides rows, else 1."""
    return heads if heads >= 1 and rows % heads == 0 else 1


# --- the mask, as the Mask2Former decoder makes it -------------------------------------------------

def decoder_attn_mask(outputs_mask: torch.Tensor, heads: int) -> torch.Tensor:
    """Mask2Former's attention mask from mask logits [B, Q, H, W] (or [B, Q, H·W]): [B·heads, Q, H·W], True = blocked."""
    return (outputs_mask.sigmoid().flatten(2).unsqueeze(1).repeat(1, heads, 1, 1).flatten(0, 1) < 0.5).bool()


def full_pairs(pairs: int, full_percent: float) -> int:
    """How many (image, query) pairs get an empty predicted mask (an all-True row)."""
    return int(round(pairs * full_percent / 100.0))


def make_logits(batch: int, queries: int, hw: int, full_percent: float = 25, seed: int = 0) -> torch.Tensor:
    """Seeded logits [batch, queries, H·W]: `full_percent` % of (image, query) pairs all negative, others ≥1 positive."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(batch, queries, hw, generator=g)
    pairs = batch * queries
    order = torch.randperm(pairs, generator=g)
    full = torch.zeros(pairs, dtype=torch.bool)
    full[order[:full_pairs(pairs, full_percent)]] = True
    flat = logits.view(pairs, hw)
    if hw:
        flat[full] = -flat[full].abs() - 1.0  # sigmoid < 0.5 everywhere: an empty mask
        keep = torch.randint(hw, (pairs,), generator=g)
        rows = torch.arange(pairs)[~full]
        flat[rows, keep[~full]] = flat[rows, keep[~full]].abs() + 1.0  # at least one attended position
    return logits


def make_mask(shape: Shape | str, full_percent: float = 25, seed: int = 0, heads: int = 8,
              device: str | torch.device = "cpu") -> torch.Tensor:
    """A synthetic attn_mask [rows, queries, H·W] built by the decoder's own line; rows = batch × heads.

    `full_percent` % of the (image, query) pairs are all-True rows, repeated over the heads as in the decoder;
    every other row has at least one False. Seeded; generated on CPU and moved, so every device sees the same mask.
    """
    rows, queries, hw = parse_shape(shape)
    heads = heads_for(rows, heads)
    logits = make_logits(rows // heads, queries, hw, full_percent, seed)
    return decoder_attn_mask(logits, heads).to(device)


def full_rows(mask: torch.Tensor) -> int:
    """Number of all-True rows (the rows the fill clears)."""
    return int((mask.sum(-1) == mask.shape[-1]).sum())


def mask_examples(shapes: list[str], full_percents: list[int], heads: int = 8, seed: int = 0) -> pd.DataFrame:
    """What the generator makes: batch, heads, rows and full rows per shape and percentage."""
    out = []
    for text in shapes:
        rows, queries, hw = parse_shape(text)
        h = heads_for(rows, heads)
        for pct in full_percents:
            m = make_mask((rows, queries, hw), pct, seed, heads)
            out.append({"shape": shape_label((rows, queries, hw)), "batch": rows // h, "heads": h, "queries": queries,
                        "H·W": hw, "full %": pct, "rows": rows * queries, "full rows": full_rows(m),
                        "True share %": round(100 * int(m.sum()) / m.numel(), 1) if m.numel() else 0.0})
    return pd.DataFrame(out)


# --- the implementations ---------------------------------------------------------------------------

def _full(m: torch.Tensor) -> torch.Tensor:
    return m.sum(-1) == m.shape[-1]


def where_index_put(m: torch.Tensor) -> torch.Tensor:
    """The decoder's original line: index_put through torch.where's index tensors, in place."""
    m[torch.where(m.sum(-1) == m.shape[-1])] = False
    return m


def bool_index_put(m: torch.Tensor) -> torch.Tensor:
    """The seed's alternative 2: a boolean-mask index_put, in place (same aten.index_put_ underneath)."""
    m[_full(m)] = False
    return m


def masked_fill(m: torch.Tensor) -> torch.Tensor:
    """The seed's fix: out-of-place masked_fill with the row mask broadcast over H·W."""
    return m.masked_fill(_full(m).unsqueeze(-1), False)


def masked_fill_inplace(m: torch.Tensor) -> torch.Tensor:
    """masked_fill_ in place: no index tensors, no new mask."""
    return m.masked_fill_(_full(m).unsqueeze(-1), False)


def torch_where(m: torch.Tensor) -> torch.Tensor:
    """Out-of-place torch.where(condition, False, mask)."""
    return torch.where(_full(m).unsqueeze(-1), False, m)


def all_and_not(m: torch.Tensor) -> torch.Tensor:
    """A bool reduction (all) instead of an int64 sum, then one elementwise and-not."""
    return m & ~m.all(-1, keepdim=True)


@dataclass(frozen=True)
class Impl:
    """One formulation of the fill: its function, whether it writes in place, and its source line."""

    name: str
    fn: Callable[[torch.Tensor], torch.Tensor]
    inplace: bool
    code: str


IMPLEMENTATIONS: dict[str, Impl] = {i.name: i for i in (
    Impl("where_index_put", where_index_put, True, "m[torch.where(m.sum(-1) == m.shape[-1])] = False"),
    Impl("bool_index_put", bool_index_put, True, "m[m.sum(-1) == m.shape[-1]] = False"),
    Impl("masked_fill", masked_fill, False, "m = m.masked_fill((m.sum(-1) == m.shape[-1]).unsqueeze(-1), False)"),
    Impl("masked_fill_inplace", masked_fill_inplace, True, "m.masked_fill_((m.sum(-1) == m.shape[-1]).unsqueeze(-1), False)"),
    Impl("torch_where", torch_where, False, "m = torch.where((m.sum(-1) == m.shape[-1]).unsqueeze(-1), False, m)"),
    Impl("all_and_not", all_and_not, False, "m = m & ~m.all(-1, keepdim=True)"),
)}


def implementations_frame() -> pd.DataFrame:
    """The formulations compared, with their code."""
    return pd.DataFrame([{"implementation": i.name, "in place": i.inplace, "code": i.code} for i in IMPLEMENTATIONS.values()])


def reference(mask: torch.Tensor) -> torch.Tensor:
    """An independent NumPy answer: all-True rows set to False (on CPU)."""
    a = mask.detach().cpu().numpy().copy()
    a[a.all(axis=-1)] = False
    return torch.from_numpy(a)


@contextmanager
def deterministic(on: bool) -> Iterator[None]:
    """torch.use_deterministic_algorithms(on) for the block, then the previous setting back."""
    prev = torch.are_deterministic_algorithms_enabled()
    warn_only = getattr(torch, "is_deterministic_algorithms_warn_only_enabled", lambda: False)()
    torch.use_deterministic_algorithms(on)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(prev, warn_only=warn_only)


@contextmanager
def cpu_threads(n: int) -> Iterator[None]:
    """torch.set_num_threads(n) for the block when n > 0 (0 keeps torch's default), then the previous count back."""
    prev = torch.get_num_threads()
    if n > 0:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(prev)


def devices(device: str, include_absent_cuda: bool = False) -> list[str]:
    """Devices a section runs on: 'auto' = CPU, plus CUDA when present (or always, to report it as skipped)."""
    if device == "auto":
        return ["cpu"] + (["cuda"] if include_absent_cuda or env.cuda_available() else [])
    return [device]


# --- 1. equivalence --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    """One equivalence input: a labelled shape, the share of full rows, heads and seed."""

    label: str
    shape: Shape
    full_percent: int
    heads: int = 1
    seed: int = 0


def edge_cases(heads: int = 8) -> list[Case]:
    """The edge cases the notebook always checks (the seed's 'H·W = 49' case uses the seed's heads)."""
    return [
        Case("no full rows", (32, 5, 49), 0, heads),
        Case("all rows full (the seed's 7840 vs 160)", (32, 5, 49), 100, heads),
        Case("H·W = 49, a quarter full", (32, 5, 49), 25, heads),
        Case("single query", (32, 1, 1024), 50, heads),
        Case("empty batch", (0, 5, 49), 50, 1),
        Case("H·W = 1", (8, 5, 1), 50, 1),
        Case("H·W = 0", (4, 3, 0), 50, 1),
    ]


def equivalence_cases(shapes: list[str], seeds: int, heads: int = 8, percents: tuple[int, ...] = (0, 25, 100)) -> list[Case]:
    """The grid (shapes × full-row percentages × seeds) plus the edge cases."""
    grid = [Case("grid", parse_shape(s), pct, heads, k) for s in shapes for pct in percents for k in range(max(1, seeds))]
    return edge_cases(heads) + grid


def compare_all(mask: torch.Tensor, names: list[str]) -> dict[str, bool | str]:
    """Each implementation's result on a copy of `mask` vs the NumPy reference: True, False or the error."""
    ref = reference(mask)
    out: dict[str, bool | str] = {}
    for name in names:
        try:
            got = IMPLEMENTATIONS[name].fn(mask.clone())
            out[name] = bool(got.shape == ref.shape and got.dtype == torch.bool and torch.equal(got.cpu(), ref))
        except Exception as exc:  # a failure is a result here
            out[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
    return out


def check_equivalence(shapes: list[str], seeds: int = 2, heads: int = 8, device: str = "auto",
                      implementations: list[str] | None = None) -> pd.DataFrame:
    """One row per case and device, one column per implementation: True when it equals the reference.

    The original and the seed's two alternatives (bool_index_put, masked_fill) are always checked.
    """
    names = list(dict.fromkeys([ORIGINAL, "bool_index_put", "masked_fill", *(implementations or IMPLEMENTATIONS)]))
    rows = []
    for dev in devices(device):
        if dev == "cuda" and not env.cuda_available():
            continue
        for case in equivalence_cases(shapes, seeds, heads):
            mask = make_mask(case.shape, case.full_percent, case.seed, case.heads, dev)
            rows.append({"case": case.label, "shape": shape_label(case.shape), "full %": case.full_percent,
                         "seed": case.seed, "device": dev, "full rows": full_rows(mask),
                         **compare_all(mask, names)})
    return pd.DataFrame(rows)


# --- 2. benchmark ----------------------------------------------------------------------------------

def copy_bandwidth(device: str = "auto", mib: int = 256, min_run_time: float = 0.2, warmup: int = 3,
                   threads: int = 0) -> pd.DataFrame:
    """Copy bandwidth per device: `dst.copy_(src)` of `mib` MiB, counted as read + write (2 × size).

    `threads` > 0 sets the CPU's intra-op threads for the measurement (as `benchmark` does, so the two compare).
    """
    rows = []
    for dev in devices(device):
        if dev == "cuda" and not env.cuda_available():
            rows.append({"device": dev, "MiB": mib, "status": "skipped: no CUDA device"})
            continue
        n = mib * 2**20
        src = torch.ones(n, dtype=torch.uint8, device=dev)
        dst = torch.empty_like(src)
        with cpu_threads(threads if dev == "cpu" else 0):
            t = timing.measure(lambda: dst.copy_(src), f"copy {mib} MiB", dev, warmup, min_run_time)
            used = torch.get_num_threads()
        rows.append({"device": dev, "MiB": mib, "threads": used if dev == "cpu" else None,
                     "bytes moved": 2 * n, "median_ms": round(t.median_ms, 4),
                     "iqr_ms": round(t.iqr_ms, 4), "GB/s": round(2 * n / (t.median_ms * 1e-3) / 1e9, 2), "status": "ok"})
        del src, dst
    return pd.DataFrame(rows)


def model_bytes(shape: Shape, n_full: int, inplace: bool) -> int:
    """Minimum traffic of a formulation in bytes: read the mask once, write the cleared rows (in place) or a new mask."""
    rows, queries, hw = shape
    n = rows * queries * hw
    return n + (n_full * hw if inplace else n)


def _bandwidth_of(bandwidth: pd.DataFrame | None, dev: str) -> float:
    if bandwidth is None or bandwidth.empty or "GB/s" not in bandwidth:
        return float("nan")
    hit = bandwidth[(bandwidth["device"] == dev) & (bandwidth["status"] == "ok")]
    return float(hit["GB/s"].iloc[0]) if len(hit) else float("nan")


def benchmark(shapes: list[str], implementations: list[str] | None = None, device: str = "auto", full_percent: int = 25,
              heads: int = 8, seed: int = 0, deterministic_too: bool = True, min_run_time: float = 0.2, warmup: int = 3,
              bandwidth: pd.DataFrame | None = None, threads: int = 0, rounds: int = BENCH_ROUNDS) -> pd.DataFrame:
    """Median and spread per device × shape × implementation (× deterministic algorithms off/on), net of the input copy.

    Each call restores the input (`buf.copy_(src)`) before the implementation; `restore_ms` is that copy alone and
    `net_ms` = median − restore. The implementations of a shape and mode are timed in turn, `rounds` times, sharing
    `min_run_time` between the rounds. `speedup` is the original's net time over this row's (same device, shape,
    mode); `speedup_min`/`speedup_max` are the lowest and highest of the per-round ratios.
    `threads` > 0 sets the CPU's intra-op threads (on a loaded 2-core machine two threads stall each other: a
    160 KB copy measured 13 ms with 2 threads and 8 µs with 1).
    """
    names = list(implementations or IMPLEMENTATIONS)
    if ORIGINAL not in names:
        names.insert(0, ORIGINAL)
    rows: list[dict[str, Any]] = []
    for dev in devices(device):
        if dev == "cuda" and not env.cuda_available():
            rows.append({"device": dev, "error": "skipped: no CUDA device"})
            continue
        with cpu_threads(threads if dev == "cpu" else 0):
            rows += _bench_device(dev, shapes, names, full_percent, heads, seed, deterministic_too, min_run_time,
                                  warmup, _bandwidth_of(bandwidth, dev), rounds)
    frame = pd.DataFrame(rows)
    if "net_ms" in frame:
        base = frame[frame["implementation"] == ORIGINAL].set_index(["device", "shape", "deterministic"])["net_ms"]
        keys = list(zip(frame["device"], frame["shape"], frame["deterministic"]))
        frame["speedup"] = [round(base.get(k, float("nan")) / v, 2) if isinstance(v, float) and v > 0 else float("nan")
                            for k, v in zip(keys, frame["net_ms"])]
        base_rounds = frame[frame["implementation"] == ORIGINAL].set_index(["device", "shape", "deterministic"])[
            "round_net_ms"].to_dict()
        spans = [round_ratios(base_rounds.get(k), r) for k, r in zip(keys, frame["round_net_ms"])]
        frame["speedup_min"] = [min(x) if x else float("nan") for x in spans]
        frame["speedup_max"] = [max(x) if x else float("nan") for x in spans]
    return frame


def round_ratios(original: Any, fix: Any) -> list[float]:
    """original/fix net time round by round (rounds whose net time is not positive are left out)."""
    if not isinstance(original, list) or not isinstance(fix, list):
        return []
    return [round(r, 2) for r in timing.round_ratios(original, fix)]


def _bench_device(dev: str, shapes: list[str], names: list[str], full_percent: int, heads: int, seed: int,
                  deterministic_too: bool, min_run_time: float, warmup: int, peak: float,
                  rounds: int = BENCH_ROUNDS) -> list[dict[str, Any]]:
    """The benchmark rows of one device (see `benchmark`)."""
    rows: list[dict[str, Any]] = []
    threads = torch.get_num_threads() if dev == "cpu" else None
    for shape in [parse_shape(x) for x in shapes]:
        src = make_mask(shape, full_percent, seed, heads, dev)
        n_full = full_rows(src)
        ref = reference(src)
        buf = torch.empty_like(src)
        restore = timing.measure(lambda: buf.copy_(src), "restore", dev, warmup, min_run_time)
        for det in ([False, True] if deterministic_too else [False]):
            group: list[tuple[dict[str, Any], Impl]] = []
            for name in names:
                impl = IMPLEMENTATIONS[name]
                row: dict[str, Any] = {"device": dev, "threads": threads, "shape": shape_label(shape),
                                       "implementation": name, "deterministic": det, "in place": impl.inplace,
                                       "full rows": n_full, "rows": shape[0] * shape[1],
                                       "restore_ms": round(restore.median_ms, 4)}
                try:
                    with deterministic(det):
                        row["correct"] = bool(torch.equal(impl.fn(buf.copy_(src)).cpu(), ref))
                except Exception as exc:  # e.g. the INTERNAL ASSERT on an affected torch
                    row.update({"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"})
                    rows.append(row)
                    continue
                rows.append(row)
                group.append((row, impl))
            # The implementations take turns, round by round: a busy neighbour slows every one of a round alike.
            with deterministic(det):
                timed = timing.measure_rounds({r["implementation"]: (lambda f=i.fn: f(buf.copy_(src))) for r, i in group},
                                              dev, rounds, warmup, min_run_time / rounds)
            for row, impl in group:
                t = timed[row["implementation"]]
                net = t.median_ms - restore.median_ms
                nbytes = model_bytes(shape, n_full, impl.inplace)
                gbps = nbytes / (net * 1e-3) / 1e9 if net > 0 else float("nan")
                row.update({"median_ms": round(t.median_ms, 4), "iqr_ms": round(t.iqr_ms, 4),
                            "p10_ms": round(t.p10_ms, 4), "p90_ms": round(t.p90_ms, 4),
                            "first_ms": round(t.first_ms, 4), "runs": t.runs,
                            "net_ms": round(net, 4) if net > 0 else float("nan"),
                            "round_net_ms": [round(m - restore.median_ms, 4) for m in t.round_medians_ms],
                            "bytes": nbytes, "GB/s": round(gbps, 2) if math.isfinite(gbps) else float("nan"),
                            "roofline": round(gbps / peak, 4) if math.isfinite(gbps * peak) else float("nan"),
                            "error": ""})
        del src, buf
    return rows


def plot_benchmark(bench: pd.DataFrame):
    """Net time (log scale, IQR bars) and roofline fraction per implementation and shape, one column per device."""
    import matplotlib.pyplot as plt

    ok = bench[bench.get("error", pd.Series("", index=bench.index)).fillna("") == ""] if len(bench) else bench
    devs = list(dict.fromkeys(ok["device"])) if len(ok) else ["cpu"]
    fig, axes = plt.subplots(2, len(devs), figsize=(7 * len(devs), 8), squeeze=False)
    for col, dev in enumerate(devs):
        sub = ok[(ok["device"] == dev)] if len(ok) else ok
        shapes = list(dict.fromkeys(sub["shape"])) if len(sub) else []
        names = list(dict.fromkeys(sub["implementation"])) if len(sub) else []
        modes = sorted(set(sub["deterministic"])) if len(sub) else [False]
        width = 0.8 / max(1, len(names) * len(modes))
        for j, name in enumerate(names):
            for d, det in enumerate(modes):
                part = sub[(sub["implementation"] == name) & (sub["deterministic"] == det)].set_index("shape")
                if part.empty:
                    continue
                x = np.arange(len(shapes)) + (len(modes) * j + d + 0.5) * width - 0.4
                y = [part["net_ms"].get(s, np.nan) for s in shapes]
                err = [part["iqr_ms"].get(s, np.nan) / 2 for s in shapes]
                label = f"{name}{' (det.)' if det else ''}"
                axes[0][col].bar(x, y, width, yerr=err, label=label, color=f"C{j}", alpha=0.45 if det else 0.95,
                                 hatch="//" if det else None)
                if not det:
                    axes[1][col].bar(x, [part["roofline"].get(s, np.nan) for s in shapes], width, color=f"C{j}", label=label)
        for r in (0, 1):
            axes[r][col].set_xticks(np.arange(len(shapes)))
            axes[r][col].set_xticklabels(shapes)
        axes[0][col].set_yscale("log")
        axes[0][col].set_ylabel("net ms (median − input copy), log")
        axes[0][col].set_title(f"{dev}: time per call")
        axes[1][col].set_ylabel("fraction of copy bandwidth")
        axes[1][col].set_title(f"{dev}: counted bytes / net time / copy GB/s")
        axes[0][col].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


# --- 2b. memory and the ops each formulation runs -----------------------------------------------------

class AllocationTracker(TorchDispatchMode):
    """The ATen ops a call dispatches, and the bytes of the new storages their outputs hold (live and peak).

    A storage counts from the op that returns it until it dies (storages keep their Python object, so a
    finalizer sees the free). Inputs' storages and in-place results are not new. Buffers an op allocates and
    frees inside itself (e.g. the CUDA sort kernel's scratch) are invisible here: the CUDA allocator's peak
    (`memory_profile`) sees those.
    """

    def __init__(self, *inputs: torch.Tensor) -> None:
        super().__init__()
        self.known = {id(t.untyped_storage()) for t in inputs}
        self.live: dict[int, int] = {}
        self.peak = 0
        self.new_bytes = 0
        self.ops: list[str] = []

    def _free(self, key: int) -> None:
        self.live.pop(key, None)

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        out = func(*args, **(kwargs or {}))
        self.ops.append(func._schema.name)
        for t in pytree.tree_leaves(out):
            if not isinstance(t, torch.Tensor):
                continue
            storage = t.untyped_storage()
            key = id(storage)
            if key in self.known or key in self.live or storage.nbytes() == 0:
                continue
            self.live[key] = storage.nbytes()
            self.new_bytes += storage.nbytes()
            weakref.finalize(storage, self._free, key)
            self.peak = max(self.peak, sum(self.live.values()))
        return out


def _cuda_kernels(fn: Callable[[], Any]) -> list[str]:
    """Names of the CUDA kernels one call launches (torch.profiler), in order, without repeats."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if str(getattr(e, "device_type", "")).endswith("CUDA")]
    return list(dict.fromkeys(n for n in names if not n.startswith(("Memcpy", "Memset"))))


def _cuda_peak(fn: Callable[[], Any]) -> tuple[int, int]:
    """(peak bytes above the start, bytes still held after) of one call, from the CUDA caching allocator."""
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out = fn()
    torch.cuda.synchronize()
    peak, after = torch.cuda.max_memory_allocated() - base, torch.cuda.memory_allocated() - base
    del out
    return int(peak), int(after)


INDEX_OPS = ("aten::index_put", "aten::_index_put_impl", "aten::nonzero")


def memory_profile(shapes: list[str], implementations: list[str] | None = None, device: str = "auto",
                   full_percent: int = 25, heads: int = 8, seed: int = 0) -> pd.DataFrame:
    """Per device × shape × formulation: ATen ops, index ops, bytes of new tensors (peak and kept), CUDA kernels and peak.

    `peak new bytes` = the largest total of tensors the call has created and not yet freed (op level, any device),
    `kept bytes` = those still alive after it (the result of an out-of-place formulation). On CUDA the caching
    allocator's peak above the start is added (it also sees buffers allocated inside a kernel), and the kernel names.
    """
    names = list(dict.fromkeys([ORIGINAL, "bool_index_put", "masked_fill", *(implementations or IMPLEMENTATIONS)]))
    rows: list[dict[str, Any]] = []
    for dev in devices(device):
        if dev == "cuda" and not env.cuda_available():
            continue
        for shape in [parse_shape(x) for x in shapes]:
            src = make_mask(shape, full_percent, seed, heads, dev)
            for name in names:
                impl = IMPLEMENTATIONS[name]
                buf = src.clone()
                tracker = AllocationTracker(buf)
                with tracker:
                    out = impl.fn(buf)
                kept = sum(tracker.live.values())
                del out
                ops = list(dict.fromkeys(tracker.ops))
                row: dict[str, Any] = {
                    "device": dev, "shape": shape_label(shape), "implementation": name, "in place": impl.inplace,
                    "mask bytes": src.numel() * src.element_size(), "full rows": full_rows(src),
                    "peak new bytes": tracker.peak, "kept bytes": kept, "new bytes (total)": tracker.new_bytes,
                    "index ops": [o for o in ops if o.startswith(INDEX_OPS)], "ops": ops}
                if dev == "cuda":
                    peak, after = _cuda_peak(lambda: impl.fn(buf.copy_(src)))
                    row.update({"cuda peak bytes": peak, "cuda kept bytes": after,
                                "cuda kernels": _cuda_kernels(lambda: impl.fn(buf.copy_(src)))})
                rows.append(row)
            del src
    return pd.DataFrame(rows)


# --- 3. the INTERNAL ASSERT --------------------------------------------------------------------------

# How index_put_with_sort_kernel expanded the value before the assert, by era (see data/mask_assert_issues.json).
RULES = {
    "no_expand": "value not expanded (reports on ≤1.10: #61032, #68525, #73587)",
    "expand_to_index": "value expanded to the index shape only (1.11–2.0; reports #87287, #96724, #105819, the seed)",
    "expand_index_and_slice": "also expanded over the trailing slice (PR #105833); tensor-valued broadcasts still "
                              "mismatch until PR #154296 (2025-05-24)",
}


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """NumPy broadcast of two shapes, or None when they are not expandable to each other (ATen's are_expandable)."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and x != 1 and y != 1:
            return None
        out.append(max(x, y) if 0 not in (x, y) else 0)
    return tuple(reversed(out))


def _prod(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def assert_numbers(self_shape: tuple[int, ...], indexed_dims: int, index_shape: tuple[int, ...],
                   value_shape: tuple[int, ...], rule: str = "expand_to_index") -> tuple[int, int]:
    """The two numbers the sort kernel's assert compares: (linearIndex.numel()·sliceSize·nElemBefore, expandedValue.numel()).

    Index tensors on the leading `indexed_dims` dimensions (what torch.where / a boolean row mask produce), so
    nElemBefore = 1 and sliceSize = the product of the remaining dimensions. The value is expanded the way the CUDA
    code of that era did (RULES). The assert fires when the two differ and at least one element is indexed.
    """
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; choose from {list(RULES)}")
    slice_size = _prod(tuple(self_shape[indexed_dims:]))
    n_before = 1
    num_indices = _prod(tuple(index_shape))
    lhs = num_indices * slice_size * n_before
    expanded = tuple(value_shape)
    if rule != "no_expand" and _prod(expanded) < lhs:
        both = _broadcast(expanded, tuple(index_shape))
        if both is not None:
            expanded = both
        if rule == "expand_index_and_slice" and slice_size > 1:
            expanded = expanded + (slice_size,)
    return lhs, _prod(expanded)


def fires(lhs: int, rhs: int) -> bool:
    """Whether the kernel reaches the assert and fails it (no kernel runs for an empty index)."""
    return lhs > 0 and lhs != rhs


def parse_assert(message: str) -> tuple[int, int] | None:
    """The two numbers of an 'N vs M' INTERNAL ASSERT message."""
    hit = re.search(r"value tensor:\s*(\d+)\s+vs\s+(\d+)", message)
    return (int(hit.group(1)), int(hit.group(2))) if hit else None


def build_date(message: str) -> str:
    """The date in a conda build path such as pytorch_1678402411778 (epoch milliseconds), ISO format."""
    hit = re.search(r"pytorch_(\d{13})", message)
    if not hit:
        return ""
    return datetime.fromtimestamp(int(hit.group(1)) / 1000, tz=timezone.utc).date().isoformat()


def explain_seed_assert(batch: int = SEED_CONFIG["batch"], heads: int = SEED_CONFIG["heads"],
                        queries: int = SEED_CONFIG["queries"]) -> pd.DataFrame:
    """What 7840 and 160 mean for the seed's [batch·heads, queries, H·W] mask, derived from the message and the shapes."""
    lhs, rhs = parse_assert(SEED_ASSERT_MESSAGE)
    rows_total = batch * heads * queries
    # expand_to_index with a 0-dim value: expandedValue has one element per indexed row
    n_full = rhs
    slice_size = lhs // n_full
    side = math.isqrt(slice_size)
    forward = assert_numbers((batch * heads, queries, slice_size), 2, (n_full,), (), "expand_to_index")
    fixed = assert_numbers((batch * heads, queries, slice_size), 2, (n_full,), (), "expand_index_and_slice")
    p_full = 0.5 ** slice_size
    line = re.search(r'Indexing\.cu":(\d+)', SEED_ASSERT_MESSAGE)
    facts = [
        ("assert: linearIndex.numel()·sliceSize·nElemBefore", lhs, "parsed from the seed's message"),
        ("assert: expandedValue.numel()", rhs, "parsed from the seed's message"),
        ("mask rows = batch·heads × queries", rows_total, f"{batch}·{heads} × {queries} (seed's config)"),
        ("indexed (all-True) rows = linearIndex.numel()", n_full,
         "a 0-dim False was expanded to the index shape [n] only (1.11–2.0 rule), so expandedValue.numel() = n"),
        ("nElemBefore", 1, "torch.where's two index tensors cover the two leading dims"),
        ("sliceSize = H·W", slice_size, f"{lhs} / ({n_full} × 1)"),
        ("H = W (if square)", side if side * side == slice_size else "not square", "√sliceSize"),
        ("share of rows all True", round(n_full / rows_total, 4), "every (image, head, query) row was all True"),
        ("model, 1.11–2.0 rule: lhs vs rhs", f"{forward[0]} vs {forward[1]}",
         "assert_numbers([32, 5, 49], 2 indexed dims, [160], 0-dim value)"),
        ("model matches the seed", forward == (lhs, rhs), ""),
        ("model after PR #105833: lhs vs rhs", f"{fixed[0]} vs {fixed[1]}", "value also expanded over the slice: no assert"),
        ("P(a random row is all True) at density 0.5", f"{p_full:.2e}",
         f"0.5^{slice_size}: random synthetic masks lack full rows"),
        ("Indexing.cu line", int(line.group(1)) if line else "", "the line PyTorch #95308 (2.0.0.dev20230105) and diffusers PR #3479 report too"),
        ("conda build date of the seed's torch", build_date(SEED_ASSERT_MESSAGE), "from the build path pytorch_<epoch ms>"),
    ]
    return pd.DataFrame(facts, columns=["quantity", "value", "how"])


def load_issues() -> list[dict[str, Any]]:
    """The PyTorch issues and PRs about this assert that the kit found (data/mask_assert_issues.json)."""
    return json.loads(ISSUES_FILE.read_text())["entries"]


def issues_frame() -> pd.DataFrame:
    """The issue/PR list for display: number, kind, date, versions, what it says."""
    return pd.DataFrame([{"repo": e["repo"], "number": e["number"], "kind": e["kind"], "date": e["date"],
                          "state": e["state"], "versions": e["versions"], "title": e["title"], "says": e["says"]}
                         for e in load_issues()])


def model_check() -> pd.DataFrame:
    """assert_numbers against every report with a repro: the reported 'N vs M' and the model's, per rule of its era."""
    rows = []
    seed_lhs, seed_rhs = parse_assert(SEED_ASSERT_MESSAGE)
    rep = {"self_shape": [32, 5, 49], "indexed_dims": 2, "index_shape": [seed_rhs], "value_shape": [],
           "reported": [seed_lhs, seed_rhs], "rule": "expand_to_index", "code": "attn_mask[torch.where(full)] = False"}
    cases = [("seed 002", rep)] + [(f"{e['repo'].split('/')[-1]}#{e['number']}", e["repro"])
                                   for e in load_issues() if e.get("repro")]
    for label, r in cases:
        shapes = (tuple(r["self_shape"]), r["indexed_dims"], tuple(r["index_shape"]), tuple(r["value_shape"]))
        got = assert_numbers(*shapes, r["rule"])
        after = assert_numbers(*shapes, "expand_index_and_slice")
        rows.append({"report": label, "code": r["code"], "rule": r["rule"],
                     "reported": f"{r['reported'][0]} vs {r['reported'][1]}",
                     "model": f"{got[0]} vs {got[1]}", "match": list(got) == list(r["reported"]),
                     "after #105833": f"{after[0]} vs {after[1]}" + ("" if fires(*after) else " (no assert)")})
    return pd.DataFrame(rows)


def versions_summary() -> pd.DataFrame:
    """Which torch versions the found reports and fixes put on each side, by kernel rule."""
    entries = {e["number"]: e for e in load_issues() if e["repo"] == "pytorch/pytorch"}

    def cite(*numbers: int) -> str:
        return "; ".join(f"#{n} ({entries[n]['date']}, {entries[n]['versions']})" for n in numbers if n in entries)

    return pd.DataFrame([
        {"case": "scalar value, rows of >1 element (the seed's line) under deterministic algorithms",
         "affected": "reported on 1.10.2 – 2.0.0 (the seed's build is 2.0-era)",
         "reports": cite(73587, 96724, 104217, 105819), "fix": cite(105833)},
        {"case": "tensor value that must broadcast (e.g. a row vector) under deterministic algorithms",
         "affected": "reported on 1.12 – 2.x until 2025", "reports": cite(79987, 87287, 131933), "fix": cite(154296)},
        {"case": "value not broadcastable to the indexing result (accumulate=True)",
         "affected": "2.0.0.dev asserted instead of raising a shape error", "reports": cite(95308, 72053),
         "fix": "no fix PR found; " + cite(94849) + " covers only an empty index list"},
    ])


def _trigger_where(m: torch.Tensor, full: torch.Tensor) -> torch.Tensor:
    m[torch.where(full)] = False
    return m


def _trigger_bool(m: torch.Tensor, full: torch.Tensor) -> torch.Tensor:
    m[full] = False
    return m


def _trigger_masked_fill(m: torch.Tensor, full: torch.Tensor) -> torch.Tensor:
    return m.masked_fill(full.unsqueeze(-1), False)


def _trigger_accumulate(m: torch.Tensor, full: torch.Tensor) -> torch.Tensor:
    return m.index_put_(torch.where(full), torch.tensor(False, device=m.device), accumulate=True)


def _trigger_row_value(m: torch.Tensor, full: torch.Tensor) -> torch.Tensor:
    m[full] = torch.zeros(m.shape[-1], dtype=torch.bool, device=m.device)
    return m


def _trigger_mismatched(m: torch.Tensor, full: torch.Tensor) -> torch.Tensor:
    idx = torch.where(full)
    return m.index_put_(idx, torch.zeros(idx[0].numel(), dtype=torch.bool, device=m.device), accumulate=True)


@dataclass(frozen=True)
class Formulation:
    """A way to write the fill for the trigger attempts: its call, accumulate flag, value shape and correct outcome."""

    name: str
    fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    accumulate: bool
    value_shape: Callable[[int, int], tuple[int, ...]] | None  # (full rows, H·W) → value shape; None: no index_put
    expected: str


FORMULATIONS: dict[str, Formulation] = {f.name: f for f in (
    Formulation("where_index_put", _trigger_where, False, lambda n, hw: (), "clears the full rows (the seed's line)"),
    Formulation("bool_index_put", _trigger_bool, False, lambda n, hw: (), "clears the full rows (the seed's alternative 2)"),
    Formulation("masked_fill", _trigger_masked_fill, False, None, "clears the full rows; no index_put at all"),
    Formulation("index_put_accumulate", _trigger_accumulate, True, lambda n, hw: (),
                "adds False: the mask is unchanged; CUDA always takes the sort kernel"),
    Formulation("row_value", _trigger_row_value, False, lambda n, hw: (hw,),
                "writes a broadcast row of False (a tensor-valued broadcast)"),
    Formulation("mismatched_value", _trigger_mismatched, True, lambda n, hw: (n,),
                "a shape-mismatch error: [n] cannot broadcast to [n, H·W]"),
)}


@dataclass(frozen=True)
class Attempt:
    """One condition under which the sort-path assert could fire."""

    formulation: str
    shape: Shape
    full_percent: int
    heads: int
    deterministic: bool
    device: str
    seed: int = 0

    @property
    def accumulate(self) -> bool:
        return FORMULATIONS[self.formulation].accumulate

    @property
    def sort_path(self) -> bool:
        """CUDA index_put_ takes index_put_with_sort_kernel with deterministic algorithms on or accumulate=True."""
        uses_index_put = FORMULATIONS[self.formulation].value_shape is not None
        return self.device == "cuda" and uses_index_put and (self.deterministic or self.accumulate)


def attempt_step(a: Attempt) -> dict[str, Any]:
    """Child-process body: build the mask, run the formulation under the attempt's settings, classify the end."""
    torch.use_deterministic_algorithms(a.deterministic)
    m = make_mask(a.shape, a.full_percent, a.seed, a.heads, a.device)
    expected = m.cpu().clone() if a.formulation == "index_put_accumulate" else reference(m)
    info = {"torch": torch.__version__, "deterministic_on": torch.are_deterministic_algorithms_enabled(),
            "full rows": full_rows(m)}
    try:
        out = FORMULATIONS[a.formulation].fn(m, m.sum(-1) == m.shape[-1])
        timing.sync(a.device)
        same = bool(torch.equal(out.cpu(), expected))
        return {**info, "outcome": "ok" if same else "wrong_result", "message": ""}
    except Exception as exc:  # the outcome is the data
        text = str(exc)
        first = text.splitlines()[0] if text else type(exc).__name__
        kind = "internal_assert" if "INTERNAL ASSERT" in text else ("shape_error" if "shape mismatch" in text else "error")
        nums = parse_assert(text)
        return {**info, "outcome": kind, "message": f"{type(exc).__name__}: {first[:300]}",
                "lhs": nums[0] if nums else None, "rhs": nums[1] if nums else None}


def attempts(shapes: list[str], full_percents: list[int], heads: int, seed: int, device: str) -> list[Attempt]:
    """Every formulation × shape × full-row share × deterministic off/on × device (CUDA listed even when absent)."""
    return [Attempt(f, parse_shape(s), pct, heads_for(parse_shape(s)[0], heads), det, dev, seed)
            for dev in devices(device, include_absent_cuda=True)
            for s in shapes for pct in full_percents for det in (False, True) for f in FORMULATIONS]


def predictions(a: Attempt, n_full: int) -> dict[str, str]:
    """What each kernel rule predicts for the attempt: 'lhs vs rhs' when the assert would fire, else ''."""
    value = FORMULATIONS[a.formulation].value_shape
    out = {}
    for rule in RULES:
        if value is None:
            out[f"predicted {rule}"] = ""
            continue
        lhs, rhs = assert_numbers(a.shape, 2, (n_full,), value(n_full, a.shape[2]), rule)
        out[f"predicted {rule}"] = f"{lhs} vs {rhs}" if fires(lhs, rhs) else ""
    return out


CUDA_CHILDREN = 2  # the CUDA attempts are spread over this many children, run side by side


def _cuda_healthy() -> bool:
    """Whether the CUDA context still runs work (a device-side assert leaves it unusable)."""
    try:
        torch.cuda.synchronize()
        return bool(torch.ones(1, device="cuda").add_(1).sum() == 2)
    except Exception:  # the broken context is the answer
        return False


def attempt_batch(batch: list[Attempt]) -> list[dict[str, Any]]:
    """Child-process body for several attempts, in order; stops early when an attempt leaves CUDA unusable.

    The parent re-runs the attempts after that one in a fresh child (see run_attempts).
    """
    out = []
    for a in batch:
        out.append(attempt_step(a))
        if a.device == "cuda" and not _cuda_healthy():
            out[-1]["context"] = "CUDA context unusable after this attempt"
            break
    return out


def batches(items: list[Attempt], cuda_children: int = CUDA_CHILDREN) -> list[list[Attempt]]:
    """The CPU attempts share one child; the CUDA attempts are dealt over `cuda_children` children.

    Each child pays the start of a process (imports, CUDA context: ~6 s on the GPU runner), so one child per
    attempt made the CUDA part the notebook's longest. An attempt that breaks the CUDA context, or a child
    that dies, sends the rest to fresh children (run_attempts), so no outcome is lost to a neighbour.
    """
    cpu = [a for a in items if a.device != "cuda"]
    cuda = [a for a in items if a.device == "cuda"]
    n = max(1, min(cuda_children, len(cuda)))
    return ([cpu] if cpu else []) + [g for g in (cuda[i::n] for i in range(n)) if g]


def run_attempts(batch: list[Attempt], timeout: float) -> list[tuple[Attempt, isolate.Outcome, dict[str, Any]]]:
    """Run a batch in isolated children: (attempt, the child's outcome, the attempt's result) for every attempt.

    A child that returns early (CUDA context broken) gets a fresh child for the rest; one that dies or hangs
    is re-run one attempt per child, so each attempt's own end is recorded.
    """
    if batch[0].device == "cuda" and not env.cuda_available():
        o = isolate.skipped(batch[0].formulation, "no CUDA device in this run")
        return [(a, o, {}) for a in batch]
    done: list[tuple[Attempt, isolate.Outcome, dict[str, Any]]] = []
    todo = list(batch)
    while todo:
        o = isolate.run_step(attempt_batch, todo, timeout=timeout * len(todo),
                             step=f"{todo[0].device} assert attempts ({len(todo)})", env={"CUDA_LAUNCH_BLOCKING": "1"},
                             phase="other")
        if o.ok and isinstance(o.value, list) and o.value:
            done += [(a, o, v) for a, v in zip(todo, o.value)]
            todo = todo[len(o.value):]
        elif len(todo) == 1:
            done.append((todo[0], o, {}))
            todo = []
        else:
            done += [r for a in todo for r in run_attempts([a], timeout)]
            todo = []
    return done


def try_triggers(shapes: list[str], full_percents: list[int], heads: int = 8, seed: int = 0, device: str = "auto",
                 timeout: float = 120) -> pd.DataFrame:
    """Run the attempts in isolated children, side by side: outcome, assert numbers, and the rules' predictions."""
    groups = batches(attempts(shapes, full_percents, heads, seed, device))
    with ThreadPoolExecutor(max_workers=max(1, len(groups))) as pool:
        results = [r for group in pool.map(lambda g: run_attempts(g, timeout), groups) for r in group]
    rows = []
    for a, o, value in results:
        n_full = full_rows(make_mask(a.shape, a.full_percent, a.seed, a.heads))  # the child's mask, rebuilt here
        rows.append({"device": a.device, "formulation": a.formulation, "shape": shape_label(a.shape),
                     "full %": a.full_percent, "deterministic": a.deterministic, "accumulate": a.accumulate,
                     "sort path": a.sort_path, "expected": FORMULATIONS[a.formulation].expected, **predictions(a, n_full),
                     "status": o.status, "outcome": value.get("outcome", o.status),
                     "full rows": value.get("full rows", n_full), "lhs": value.get("lhs"), "rhs": value.get("rhs"),
                     "message": value.get("message", o.error), "torch": value.get("torch", ""),
                     "context": value.get("context", ""), "child seconds": round(o.seconds, 2),
                     "attempts in child": len(o.value) if o.ok and isinstance(o.value, list) else 1})
    return pd.DataFrame(rows)


# --- verdicts --------------------------------------------------------------------------------------

Verdict = tuple[str, str, dict[str, Any]]


@dataclass
class Results:
    """What the notebook measured, for the judges: equivalence, bandwidth, benchmark, memory/ops and assert attempts."""

    eq: pd.DataFrame
    bandwidth: pd.DataFrame
    bench: pd.DataFrame
    memory: pd.DataFrame
    trig: pd.DataFrame
    full_percent: int = 25


def _impl_all_true(eq: pd.DataFrame, name: str) -> tuple[int, int]:
    if name not in eq:
        return 0, 0
    col = eq[name]
    return int(sum(v is True for v in col)), len(col)


def judge_equivalent(res: Results) -> Verdict:
    """mask.equivalent: confirmed when masked_fill and bool_index_put equal the reference in every case."""
    eq = res.eq
    if eq.empty:
        return "error", "no equivalence cases ran", {}
    mf, n = _impl_all_true(eq, "masked_fill")
    bi, _ = _impl_all_true(eq, "bool_index_put")
    others = {c: _impl_all_true(eq, c)[0] for c in IMPLEMENTATIONS if c in eq}
    devs = sorted(set(eq["device"]))
    detail = (f"masked_fill equals the NumPy reference in {mf}/{n} cases and bool_index_put in {bi}/{n} "
              f"on {', '.join(devs)} ({eq['case'].nunique()} kinds incl. no/all full rows, H·W = 49, a single query, "
              "an empty batch) — " + ", ".join(f"{k} {v}/{n}" for k, v in others.items())
              + "; masked_fill returns a new tensor where the original writes in place")
    verdict = "confirmed" if mf == n and bi == n else "partly" if mf == n else "refuted"
    return verdict, detail, {"equal": others, "cases": n}


def _speed_row(bench: pd.DataFrame, dev: str, shape: Shape, name: str) -> pd.Series | None:
    if bench.empty or "net_ms" not in bench:
        return None
    hit = bench[(bench["device"] == dev) & (bench["shape"] == shape_label(shape)) & (bench["implementation"] == name)
                & (bench["deterministic"] == False)]  # noqa: E712
    return hit.iloc[0] if len(hit) else None


def speedup_verdict(measured: float, claimed: float) -> str:
    """confirmed within SPEEDUP_BAND of the claim, partly if faster by ≥ FASTER but outside it, else refuted."""
    if not math.isfinite(measured):
        return "error"
    if claimed / SPEEDUP_BAND <= measured <= claimed * SPEEDUP_BAND:
        return "confirmed"
    return "partly" if measured >= FASTER else "refuted"


def _speed_text(bench: pd.DataFrame, dev: str, shape: Shape) -> tuple[str, float]:
    orig = _speed_row(bench, dev, shape, ORIGINAL)
    fix = _speed_row(bench, dev, shape, "masked_fill")
    if orig is None or fix is None:
        return f"{dev}: {shape_label(shape)} with {ORIGINAL} and masked_fill not in this run's benchmark", float("nan")
    s = float(fix["speedup"])
    lo, hi = float(fix.get("speedup_min", s)), float(fix.get("speedup_max", s))
    rounds = (f" over {len(fix['round_net_ms'])} rounds taken in turn: {lo:.2f}–{hi:.2f}×"
              if isinstance(fix.get("round_net_ms"), list) and math.isfinite(lo) else "")
    det = bench[(bench["device"] == dev) & (bench["shape"] == shape_label(shape)) & (bench["deterministic"] == True)]  # noqa: E712
    det_txt = ""
    if len(det) and "net_ms" in det:
        d = det.set_index("implementation")["net_ms"]
        if ORIGINAL in d and "masked_fill" in d:
            det_txt = f"; with deterministic algorithms on: {d[ORIGINAL]:.4g} vs {d['masked_fill']:.4g} ms"
    return (f"{dev}: masked_fill speed-up {s:.2f}×{rounds} ({ORIGINAL} {orig['net_ms']:.4g} ms, first call "
            f"{orig['first_ms']:.3g} ms, vs masked_fill {fix['net_ms']:.4g} ms net of the {orig['restore_ms']:.3g} ms "
            f"input copy){det_txt}"), s


def _judge_speed(res: Results, claim_id: str) -> Verdict:
    """A speed claim of SEED_BENCH from the benchmark: CUDA decides, a CPU-only run gives needs_cuda."""
    bench = res.bench
    shape, seed_fix, seed_orig, factor = SEED_BENCH[claim_id]
    has_cuda = "net_ms" in bench and bool(bench.loc[bench["device"] == "cuda", "net_ms"].notna().any())
    seed_txt = f"seed: {seed_orig} vs {seed_fix} ms = {seed_orig / seed_fix:.1f}×"
    cpu_txt, cpu_s = _speed_text(bench, "cpu", shape)
    common = f"{shape_label(shape)}, {res.full_percent}% of (image, query) rows all True"
    if not has_cuda:
        return ("needs_cuda", f"{cpu_txt} ({common}); {seed_txt} on a GPU — the claim is about CUDA",
                {"cpu_speedup": cpu_s})
    cuda_txt, s = _speed_text(bench, "cuda", shape)
    verdict = speedup_verdict(s, factor)  # 'error' when the seed's shape was not benchmarked
    fix = _speed_row(bench, "cuda", shape, "masked_fill")
    span = [float(fix[k]) for k in ("speedup_min", "speedup_max") if fix is not None and k in fix and pd.notna(fix[k])]
    straddles = verdict != "error" and any(speedup_verdict(x, factor) != verdict for x in span)
    if straddles:  # the rounds fall on both sides of a band edge: this machine's noise cannot decide
        verdict = "partly"
    return verdict, (f"{cuda_txt} ({common}); {seed_txt}; claimed ~{factor:g}× (confirmed within ×{SPEEDUP_BAND:g}, "
                     f"partly if ≥{FASTER}×)" + (" — the rounds fall on both sides of a band edge, so the measurement "
                                                "cannot decide" if straddles else "") + f". {cpu_txt}"), \
        {"cuda_speedup": s, "cuda_speedup_rounds": span, "cpu_speedup": cpu_s, "claimed": factor}


def judge_speedup_small(res: Results) -> Verdict:
    """mask.speedup_small_20x: ~20× at 32x5x1024 on CUDA."""
    return _judge_speed(res, "mask.speedup_small_20x")


def judge_speedup_medium(res: Results) -> Verdict:
    """mask.speedup_medium_3_5x: ~3.5× at 32x100x4096 on CUDA."""
    return _judge_speed(res, "mask.speedup_medium_3_5x")


def _peaks(mem: pd.DataFrame, dev: str, name: str, column: str) -> dict[str, int]:
    sub = mem[(mem["device"] == dev) & (mem["implementation"] == name)] if column in mem else mem.iloc[0:0]
    return {r["shape"]: int(r[column]) for _, r in sub.iterrows() if pd.notna(r[column])}


def judge_memory_lower(res: Results) -> Verdict:
    """mask.memory_lower: masked_fill's peak extra memory against the original's, per shape and device.

    CUDA: the caching allocator's peak above the start; CPU: the op-level peak of new tensors. confirmed when
    masked_fill's peak is lower everywhere, refuted when it is higher everywhere (or equal everywhere with no index
    tensors saved), partly otherwise.
    """
    mem = res.memory
    if mem.empty:
        return "error", "no memory measurements ran", {}
    lower = higher = 0
    parts, data = [], {}
    for dev, column in (("cuda", "cuda peak bytes"), ("cpu", "peak new bytes")):
        orig, fix = _peaks(mem, dev, ORIGINAL, column), _peaks(mem, dev, "masked_fill", column)
        inplace = _peaks(mem, dev, "masked_fill_inplace", column)
        for shape in [s for s in orig if s in fix]:
            lower += fix[shape] < orig[shape]
            higher += fix[shape] > orig[shape]
            extra = f", masked_fill_ in place {inplace[shape]:,} B" if shape in inplace else ""
            parts.append(f"{dev} {shape}: masked_fill {fix[shape]:,} B vs {ORIGINAL} {orig[shape]:,} B{extra}")
            data[f"{dev} {shape}"] = {"masked_fill": fix[shape], ORIGINAL: orig[shape]}
    if not parts:
        return "error", "the memory table lacks masked_fill or the original", {}
    totals = mem.set_index(["device", "shape", "implementation"])["new bytes (total)"]
    index_bytes = [int(totals[(d, sh, ORIGINAL)] - totals[(d, sh, "masked_fill_inplace")])
                   for d, sh, name in totals.index if name == ORIGINAL and (d, sh, "masked_fill_inplace") in totals.index]
    equal = len(parts) - lower - higher
    verdict = "confirmed" if higher == 0 and lower else "refuted" if lower == 0 and higher else "partly"
    if equal == len(parts) and not max(index_bytes, default=0):
        verdict = "refuted"  # the same peak and no index tensors to save: nothing is lower
    note = (" — the out-of-place masked_fill allocates a whole new mask, while torch.where's index tensors add "
            f"{max(index_bytes, default=0):,} B at most over masked_fill_ in place (new tensors, ATen level)"
            + ("; the peak is the same everywhere: the index tensors exist but do not raise it" if equal == len(parts)
               and verdict == "partly" else ""))
    return verdict, (f"masked_fill's peak extra memory is lower in {lower}, higher in {higher} and equal in {equal} "
                     f"of {len(parts)} shape×device cases: " + "; ".join(parts) + note), {"peaks": data}


def _kernels_of(mem: pd.DataFrame, name: str) -> list[str]:
    sub = mem[(mem["device"] == "cuda") & (mem["implementation"] == name)] if "cuda kernels" in mem else mem.iloc[0:0]
    return list(dict.fromkeys(k for ks in sub["cuda kernels"] for k in (ks or [])))


INDEX_KERNEL_WORDS = ("index", "nonzero", "sort")


def _index_kernels(kernels: list[str]) -> list[str]:
    return [k for k in kernels if any(w in k.lower() for w in INDEX_KERNEL_WORDS)]


def _ops_text(mem: pd.DataFrame, name: str) -> str:
    sub = mem[mem["implementation"] == name]
    ops = list(dict.fromkeys(o for ops in sub["index ops"] for o in (ops or []))) if len(sub) else []
    return f"{name} dispatches {', '.join(ops) or 'no index ops'}"


def judge_different_kernels(res: Results) -> Verdict:
    """mask.different_kernels: on CUDA, masked_fill launches none of the original's indexing kernels."""
    mem = res.memory
    if mem.empty:
        return "error", "no op/kernel profile ran", {}
    ops = f"{_ops_text(mem, ORIGINAL)}; {_ops_text(mem, 'masked_fill')}"
    if "cuda kernels" not in mem or not (mem["device"] == "cuda").any():
        return "needs_cuda", f"the claim is about CUDA kernels; at the ATen level {ops}", {}
    orig, fix = _kernels_of(mem, ORIGINAL), _kernels_of(mem, "masked_fill")
    orig_idx, fix_idx = _index_kernels(orig), _index_kernels(fix)
    shared = [k for k in fix if k in orig_idx]
    verdict = ("confirmed" if orig_idx and not fix_idx and not shared else
               "refuted" if shared else "partly")
    return verdict, (f"masked_fill launches {len(fix_idx)} indexing kernels ({', '.join(k[:60] for k in fix_idx) or 'none'}) "
                     f"against the original's {len(orig_idx)} ({', '.join(k[:60] for k in orig_idx[:4]) or 'none'}); "
                     f"{len(shared)} shared; {ops}"), {"original": orig, "masked_fill": fix}


def judge_bool_index_alternative(res: Results) -> Verdict:
    """mask.bool_index_alternative: identical results, but does `m[mask] = False` leave the original's index_put_?"""
    eq, mem = res.eq, res.memory
    if eq.empty or mem.empty:
        return "error", "the equivalence or op profile did not run", {}
    bi, n = _impl_all_true(eq, "bool_index_put")
    sub = mem[mem["implementation"] == "bool_index_put"]
    same_op = bool(len(sub)) and all(any(o.startswith("aten::index_put") for o in (ops or [])) for ops in sub["index ops"])
    seed = assert_numbers((32, 5, 49), 2, (160,), (), "expand_to_index")
    text = (f"bool_index_put equals the reference in {bi}/{n} cases, and {_ops_text(mem, 'bool_index_put')} like the "
            f"original ({_ops_text(mem, ORIGINAL)})")
    if bi != n:
        return "refuted", text, {"equal": bi, "cases": n}
    if same_op:
        return "partly", (f"{text}: identical results, but the same aten.index_put_ the seed's assert came from; under "
                          f"deterministic algorithms on 1.11–2.0 the kernel arithmetic gives it the same "
                          f"{seed[0]} vs {seed[1]} for the seed's mask (index [160] either way)"), {"same_op": True}
    return "confirmed", f"{text}: identical results without index_put", {"same_op": False}


def _pair(row: pd.Series) -> str:
    """The row's reported 'lhs vs rhs' as integers ('' when it has none); pandas turns them into floats."""
    try:
        return f"{int(row['lhs'])} vs {int(row['rhs'])}"
    except (TypeError, ValueError):
        return ""


def _model_text() -> tuple[str, int]:
    model = model_check()
    matched = int(model["match"].sum())
    seed_row = model.iloc[0]
    return (f"the kernel arithmetic (assert_numbers) reproduces {matched}/{len(model)} 'N vs M' pairs (the seed's "
            f"and {len(model) - 1} PyTorch reports'), incl. the seed's {seed_row['model']} for a synthetic "
            "[32, 5, 49] mask with all 160 rows full and deterministic algorithms on (1.11–2.0 rule)"), matched


def _cpu_attempts(trig: pd.DataFrame) -> str:
    cpu = trig[trig["device"] == "cpu"] if len(trig) else trig
    if not len(cpu):
        return "no CPU attempts"
    parts = [f"{n} {outcome} ({', '.join(sorted(set(cpu.loc[cpu['outcome'] == outcome, 'formulation'])))})"
             for outcome, n in cpu["outcome"].value_counts().items()]
    return f"CPU, same {len(cpu)} attempts: " + "; ".join(parts)


def _cuda_attempts(trig: pd.DataFrame) -> pd.DataFrame:
    return trig[(trig["device"] == "cuda") & (trig["status"] != "skipped")] if len(trig) else trig


def _fired_text(fired: pd.DataFrame) -> str:
    return "; ".join(f"{r['formulation']} {r['shape']} {r['full %']}% det={r['deterministic']}: {_pair(r)}"
                     for _, r in fired.head(6).iterrows())


def judge_not_reproducible(res: Results) -> Verdict:
    """mask.not_reproducible_synthetic: refuted when a synthetic mask makes the seed's line assert on CUDA."""
    model_txt, matched = _model_text()
    cuda = _cuda_attempts(res.trig)
    if cuda.empty:
        return ("needs_cuda", f"the assert is CUDA-only; {_cpu_attempts(res.trig)}. On an affected torch {model_txt}",
                {"model_matches": matched})
    version = next((v for v in cuda["torch"] if v), "")
    fired = cuda[cuda["outcome"] == "internal_assert"]
    seed_forms = fired[fired["formulation"].isin(["where_index_put", "bool_index_put"])]
    if len(seed_forms):
        return "refuted", f"{len(seed_forms)} synthetic-mask attempts of the seed's line assert on torch {version} — " \
                          f"{_fired_text(fired)}", {"fired": len(fired)}
    if len(fired):
        return "partly", (f"0 attempts of the seed's line assert on torch {version}, but {len(fired)} of neighbouring "
                          f"formulations do ({_fired_text(fired)}); {model_txt}"), {"fired": len(fired)}
    n_sort = int(cuda["sort path"].sum())
    return "partly", (f"0 of {len(cuda)} CUDA attempts ({n_sort} on the sort path) assert on torch {version}, synthetic "
                      f"or not — this torch has the fixes; but the error is not data-independent: {model_txt}; random "
                      "masks almost never hold an all-True row"), {"attempts": len(cuda)}


def judge_data_independent(res: Results) -> Verdict:
    """mask.data_independent: the kernel arithmetic (checked against the reports) at 0 vs ≥1 all-True rows, same shape."""
    model_txt, matched = _model_text()
    total = len(model_check())
    lhs0, rhs0 = assert_numbers((32, 5, 49), 2, (0,), (), "expand_to_index")
    lhs1, rhs1 = assert_numbers((32, 5, 49), 2, (1,), (), "expand_to_index")
    fired = _cuda_attempts(res.trig)
    fired = fired[fired["outcome"] == "internal_assert"] if len(fired) else fired
    seen = f"; on this run's CUDA attempts {len(fired)} asserts" if len(_cuda_attempts(res.trig)) else ""
    text = (f"same [32, 5, 49] shape, 1.11–2.0 kernel: 0 all-True rows → {lhs0} vs {rhs0} "
            f"({'assert' if fires(lhs0, rhs0) else 'no assert'}), 1 all-True row → {lhs1} vs {rhs1} "
            f"({'assert' if fires(lhs1, rhs1) else 'no assert'}): the contents decide; {model_txt}{seen}")
    if matched != total:
        return "error", f"the kernel arithmetic misses {total - matched} reported pairs, so it cannot decide: {text}", {}
    depends = fires(lhs1, rhs1) and not fires(lhs0, rhs0)
    return ("refuted" if depends else "confirmed"), text, {"model_matches": matched}


def judge_ratio_spatial(res: Results) -> Verdict:
    """mask.ratio_spatial: is 7840/160 = 49 the H·W of a 7×7 level in the kernel arithmetic?"""
    facts = explain_seed_assert().set_index("quantity")["value"]
    lhs, rhs = parse_assert(SEED_ASSERT_MESSAGE)
    slice_size = facts["sliceSize = H·W"]
    matches = bool(facts["model matches the seed"])
    text = (f"7840 / 160 = {lhs // rhs}, and in the kernel arithmetic that factor is sliceSize = H·W = {slice_size} "
            f"(side {facts['H = W (if square)']}): 160 indexed rows × {slice_size} elements each vs the value expanded "
            f"to the 160 rows only; the model {'reproduces' if matches else 'does not reproduce'} 7840 vs 160 — a "
            "value not expanded over each row's H·W elements, not a layout mismatch of the mask")
    if not matches:
        return "error", text, {}
    return ("confirmed" if slice_size == lhs // rhs else "refuted"), text, {"slice_size": int(slice_size)}


def judge_assert_trigger(res: Results) -> Verdict:
    """mask.assert_trigger (kit): confirmed when asserts fire only on the sort path with numbers a rule predicts."""
    model_txt, matched = _model_text()
    cuda = _cuda_attempts(res.trig)
    if cuda.empty:
        return ("needs_cuda", f"{_cpu_attempts(res.trig)} (the CPU never runs the CUDA kernel that holds the assert). "
                              f"Model: {model_txt}", {"model_matches": matched})
    version = next((v for v in cuda["torch"] if v), "")
    fired = cuda[cuda["outcome"] == "internal_assert"]
    n_sort = int(cuda["sort path"].sum())
    if fired.empty:
        wrong = cuda[cuda["outcome"] == "wrong_result"]
        return "not_reproduced", (f"0 of {len(cuda)} CUDA attempts assert on torch {version} ({n_sort} took the sort "
                                  f"kernel: deterministic on or accumulate=True; {len(wrong)} gave a wrong result). "
                                  f"Consistent with PR #105833 (scalar values) and #154296 (broadcast tensors) being in "
                                  f"this torch; on 1.11–2.0 {model_txt}"), {"attempts": len(cuda), "sort_path": n_sort}
    off_path = fired[~fired["sort path"]]
    explained = [bool(_pair(r)) and any(r[f"predicted {rule}"] == _pair(r) for rule in RULES) for _, r in fired.iterrows()]
    verdict = "refuted" if len(off_path) else "confirmed" if all(explained) else "partly"
    return verdict, (f"{len(fired)} of {len(cuda)} CUDA attempts assert on torch {version}, {len(off_path)} of them off "
                     f"the sort path, {sum(explained)} with numbers a kernel rule predicts — {_fired_text(fired)}"), \
        {"fired": len(fired)}


def judge_updates_fix(res: Results) -> Verdict:
    """mask.updates_fix: of the attempts the 1.11–2.0 kernel would fail, how many still fail on this torch (CUDA)."""
    cuda = _cuda_attempts(res.trig)
    if cuda.empty:
        return "needs_cuda", f"whether this torch still asserts needs CUDA; {_cpu_attempts(res.trig)}", {}
    version = next((v for v in cuda["torch"] if v), "")
    predicted = cuda[(cuda["predicted expand_to_index"] != "") & cuda["sort path"]]
    still = predicted[predicted["outcome"] == "internal_assert"]
    if predicted.empty:
        return "error", "no attempt this run made is one the 1.11–2.0 kernel would fail (see trigger_full_percent)", {}
    verdict = "confirmed" if still.empty else "refuted" if len(still) == len(predicted) else "partly"
    return verdict, (f"{len(still)} of {len(predicted)} CUDA attempts that the 1.11–2.0 kernel fails (the seed's torch "
                     f"was built {build_date(SEED_ASSERT_MESSAGE)}) still assert on torch {version}"), \
        {"predicted": len(predicted), "still": len(still)}


JUDGES: dict[str, Callable[[Results], Verdict]] = {
    "mask.equivalent": judge_equivalent,
    "mask.speedup_small_20x": judge_speedup_small,
    "mask.speedup_medium_3_5x": judge_speedup_medium,
    "mask.memory_lower": judge_memory_lower,
    "mask.different_kernels": judge_different_kernels,
    "mask.bool_index_alternative": judge_bool_index_alternative,
    "mask.not_reproducible_synthetic": judge_not_reproducible,
    "mask.data_independent": judge_data_independent,
    "mask.ratio_spatial": judge_ratio_spatial,
    "mask.assert_trigger": judge_assert_trigger,
    "mask.updates_fix": judge_updates_fix,
}


def judge(found: findings.Findings, res: Results) -> pd.DataFrame:
    """Record every claim's verdict (a judge that breaks records `error`) and the run's tables."""
    found.judge_all(JUDGES, res)
    found.table("equivalence", res.eq)
    found.table("copy_bandwidth", res.bandwidth)
    found.table("benchmark", res.bench)
    found.table("memory", res.memory)
    found.table("triggers", res.trig)
    found.table("seed_assert", explain_seed_assert().astype({"value": str}))
    found.table("model_check", model_check())
    found.table("issues", issues_frame())
    return found.frame()


# --- interactive extra -----------------------------------------------------------------------------

def explorer(device: str = "auto", heads: int = 8, threads: int = 0):
    """A JupyterLab widget: pick a shape, the share of full rows and a device, press the button to time the fill."""
    try:
        import ipywidgets as widgets
        from IPython.display import display
    except ImportError:
        return "ipywidgets is not installed: the interactive explorer is unavailable"
    rows = widgets.BoundedIntText(32, min=1, max=4096, description="rows")
    queries = widgets.BoundedIntText(5, min=1, max=4096, description="queries")
    hw = widgets.Dropdown(options=[49, 196, 1024, 4096, 16384], value=1024, description="H·W")
    pct = widgets.IntSlider(25, min=0, max=100, step=5, description="full %")
    dev = widgets.Dropdown(options=devices(device), description="device")
    impls = widgets.SelectMultiple(options=list(IMPLEMENTATIONS), value=tuple(IMPLEMENTATIONS), description="impls")
    det = widgets.Checkbox(False, description="deterministic too")
    button = widgets.Button(description="time it")
    out = widgets.Output()

    def run(_: Any = None) -> None:
        out.clear_output()
        with out:
            frame = benchmark([shape_label((rows.value, queries.value, hw.value))], list(impls.value), dev.value,
                              pct.value, heads, deterministic_too=det.value, min_run_time=0.1, warmup=2,
                              threads=threads)
            shape = shape_label((rows.value, queries.value, hw.value))
            display(frame[frame["shape"] == shape][["device", "shape", "implementation", "deterministic", "full rows",
                                                    "net_ms", "iqr_ms", "speedup", "GB/s"]])

    button.on_click(run)  # nothing is timed until the button is pressed: cheap under papermill
    return widgets.VBox([widgets.HBox([rows, queries, hw]), widgets.HBox([pct, dev, det]), impls, button, out])


catalog.register(catalog.Investigation(
    name=NAME,
    title="CDMaskFormer attention mask: masked_fill vs torch.where index_put, cost, and the CUDA INTERNAL ASSERT",
    seeds=(SEED,),
    profiles={
        "quick": {"shapes": ["32x5x49", "32x5x1024", "32x100x4096"], "min_run_time": 0.05, "warmup": 1, "copy_mib": 32,
                  "bench_deterministic": False, "cpu_threads": 1,
                  "equivalence_shapes": ["32x5x49", "32x5x1024", "8x3x7"], "equivalence_seeds": 1,
                  "trigger_shapes": ["32x5x49"], "trigger_full_percent": [100], "trigger_timeout": 120},
        "full": {"shapes": ["32x5x49", "32x5x1024", "32x100x4096", "64x100x16384"], "min_run_time": 0.3, "warmup": 3,
                 "copy_mib": 256, "equivalence_shapes": ["32x5x49", "32x5x1024", "32x100x4096", "8x3x7", "1x1x1"],
                 "equivalence_seeds": 3, "trigger_shapes": ["32x5x49", "32x5x1024"],
                 "trigger_full_percent": [100, 25, 0], "trigger_timeout": 180},
    },
    checks={
        "device": catalog.one_of("auto", "cpu", "cuda"),
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
))
