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

Devices: `run_devices(device, devices)` — a `devices` list as given, else "cuda" → CUDA and CPU, "auto" → CPU plus
CUDA when present, "cpu" → CPU. The runner turns `--device auto` into "cuda" on a GPU machine; the CPU rows answer the
claims that do not depend on the device (equivalence, the ATen ops), so a GPU run measures both.

Verdicts (one function per claim id in `JUDGES`; each returns a `Judgement` with `basis` and the run's values of the
ledger's `conditions`, and `verdicts.settle` turns a decisive verdict into `inconclusive` where they differ):
  mask.equivalent — measured on every device of the run against an independent NumPy reference: confirmed when
      masked_fill and bool_index_put match in every case, partly when only masked_fill does, refuted otherwise.
  mask.speedup_small_20x / mask.speedup_medium_3_5x — measured on CUDA at the ledger's shape: the original's net time
      over masked_fill's, round by round (the input copy is timed in the same rounds and subtracted), against the
      ledger's band (the seed's words): `verdicts.band` — every round inside → confirmed, every round outside →
      refuted, rounds on both sides → inconclusive. A round whose net time is not positive → inconclusive ("could
      not time"). CPU only: needs_cuda (the seed timed CUDA), with the CPU rounds shown.
  mask.memory_lower — measured, one measure: the CUDA caching allocator's peak above the start of one call, for the
      seed's two formulations (the original and the out-of-place masked_fill): lower at every shape → confirmed, at
      none → refuted, at some → partly. CPU only: needs_cuda, the ATen-level peaks shown as another measure.
  mask.different_kernels — measured on CUDA, deterministic algorithms off and on: confirmed when masked_fill launches
      none of the original's indexing kernels (index / nonzero / sort in the name), refuted when it shares one,
      inconclusive when the original shows none. CPU only: needs_cuda with the ATen ops.
  mask.bool_index_alternative — a result that differs from the reference refutes anywhere; whether `m[mask] = False`
      escapes the seed's failure is measured only on CUDA with a torch of the seed's releases (ledger: 1.11–2.0.1):
      refuted when it asserts where the original does, confirmed when the original asserts and it never does.
      Another torch: inconclusive (the arithmetic's prediction shown, not deciding); CPU only: needs_cuda.
  mask.not_reproducible_synthetic — on CUDA with a torch of the seed's releases: refuted when a synthetic mask makes
      the seed's line assert, confirmed when none does although the attempts include deterministic algorithms with
      all-True rows, else inconclusive. Another torch: inconclusive (the run cannot reproduce the seed's conditions;
      the release it needs is named). CPU only: needs_cuda.
  mask.data_independent — measured on CUDA with a torch of the seed's releases when the seed's line is tried at one
      shape with several shares of all-True rows (asserts at some and not others → refuted; at every share →
      confirmed); otherwise derived from the seed's own numbers: if 7840 vs 160 fits the kernel arithmetic as indexed
      rows × sliceSize vs indexed rows (≤ the mask's rows), both count all-True rows, and a mask of the same shape
      without one launches no kernel → refuted; numbers that do not fit → inconclusive.
  mask.ratio_spatial — derived from the seed's message and configuration: confirmed when lhs/rhs is a whole
      per-row slice (rhs ≤ batch·heads·queries) that is a square H×W, refuted otherwise.
  mask.assert_trigger (the kit's own) — on CUDA with a torch of the releases it is about: refuted when an attempt
      asserts off the sort path or none of the predicted ones does, confirmed when every predicted one asserts with
      the predicted numbers, partly otherwise. Another torch: inconclusive; CPU only: needs_cuda.
  mask.updates_fix — of the CUDA attempts the 1.11–2.0 arithmetic says fail (derived), how many still assert on this
      torch (measured, basis both): none → confirmed, all → refuted, some → partly; the ledger asks for a torch
      newer than the seed's. CPU only: needs_cuda.
The issue list (data/mask_assert_issues.json) and the arithmetic's match with its reports are context in the
evidence; they decide no verdict.

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
import statistics
import weakref
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd
import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from .. import catalog, env, findings, isolate, timing, verdicts
from ..verdicts import Judgement

NAME = "cdmaskformer_mask"
SEED = "002_0f900b64e9bdebb4.txt"
ISSUES_FILE = findings.DATA / "mask_assert_issues.json"

# The seed's error and setting, as the seed reports them (numbers are parsed from the message, not typed twice).
SEED_ASSERT_MESSAGE = ("RuntimeError: linearIndex.numel()*sliceSize*nElemBefore == expandedValue.numel() INTERNAL ASSERT "
                       "FAILED at \"/opt/conda/conda-bld/pytorch_1678402411778/work/aten/src/ATen/native/cuda/"
                       "Indexing.cu\":389, please report a bug to PyTorch. number of flattened indices did not match "
                       "number of elements in the value tensor: 7840 vs 160")
SEED_CONFIG = {"batch": 4, "heads": 8, "queries": 5}
# name → (shape rows×queries×H·W, seed's masked_fill ms, seed's original ms, claimed factor), for the evidence; the
# verdicts read the shape from the ledger's conditions and the band from its `band`
SEED_BENCH = {
    "mask.speedup_small_20x": ((32, 5, 1024), 0.254, 5.062, 20.0),
    "mask.speedup_medium_3_5x": ((32, 100, 4096), 1.258, 4.447, 3.5),
}
ORIGINAL = "where_index_put"
BENCH_ROUNDS = 5  # the implementations of a shape take turns this many times (see benchmark)

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


def run_devices(device: str, devices_: list[str] | None = None) -> list[str]:
    """The devices the notebook measures, from its two parameters.

    `devices` (a list) wins when given. Otherwise `device` decides: "cuda" → CUDA and CPU, "auto" → CPU plus CUDA
    when present, "cpu" → CPU only. The runner turns `--device auto` into "cuda" on a GPU machine, and the claims
    the CPU answers (equivalence, the ATen ops) need CPU rows there too; `devices=["cuda"]` measures CUDA alone.
    """
    if devices_:
        bad = [d for d in devices_ if d not in ("cpu", "cuda")]
        if bad:
            raise ValueError(f"devices {bad}: each must be 'cpu' or 'cuda'")
        return list(dict.fromkeys(devices_))
    return {"cuda": ["cuda", "cpu"], "cpu": ["cpu"]}.get(device, ["cpu", "cuda"])


def devices(device: str | list[str], include_absent_cuda: bool = False) -> list[str]:
    """Devices a section runs on: a list as given, 'auto' = CPU plus CUDA, or one device; CUDA is left out when
    absent unless `include_absent_cuda` (to report it as skipped)."""
    wanted = list(dict.fromkeys(device)) if isinstance(device, (list, tuple)) else (
        ["cpu", "cuda"] if device == "auto" else [device])
    keep_cuda = include_absent_cuda or env.cuda_available() or not isinstance(device, (list, tuple)) and device == "cuda"
    return [d for d in wanted if d != "cuda" or keep_cuda]


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

    Each call restores the input (`buf.copy_(src)`) before the implementation; `restore_ms` is that copy alone, timed
    in the same rounds, and `net_ms` = median − restore (NaN when not positive; `timed` says whether every round's
    net time was). The implementations of a shape and mode are timed in turn, `rounds` times, sharing
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


RESTORE = "restore (input copy)"  # the copy every timed call starts with, timed in the same rounds


def _bench_device(dev: str, shapes: list[str], names: list[str], full_percent: int, heads: int, seed: int,
                  deterministic_too: bool, min_run_time: float, warmup: int, peak: float,
                  rounds: int = BENCH_ROUNDS) -> list[dict[str, Any]]:
    """The benchmark rows of one device (see `benchmark`).

    The input copy (`buf.copy_(src)`) is timed in the same rounds as the formulations, so each round's net time
    (round median − that round's copy median) compares like with like; a round whose net time is not positive
    (a busy machine) keeps its negative value in `round_net_ms` and the row says `timed` False.
    """
    rows: list[dict[str, Any]] = []
    threads = torch.get_num_threads() if dev == "cpu" else None
    for shape in [parse_shape(x) for x in shapes]:
        src = make_mask(shape, full_percent, seed, heads, dev)
        n_full = full_rows(src)
        ref = reference(src)
        buf = torch.empty_like(src)
        for det in ([False, True] if deterministic_too else [False]):
            group: list[tuple[dict[str, Any], Impl]] = []
            for name in names:
                impl = IMPLEMENTATIONS[name]
                row: dict[str, Any] = {"device": dev, "threads": threads, "shape": shape_label(shape),
                                       "implementation": name, "deterministic": det, "in place": impl.inplace,
                                       "full rows": n_full, "rows": shape[0] * shape[1]}
                try:
                    with deterministic(det):
                        row["correct"] = bool(torch.equal(impl.fn(buf.copy_(src)).cpu(), ref))
                except Exception as exc:  # e.g. the INTERNAL ASSERT on an affected torch
                    row.update({"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"})
                    rows.append(row)
                    continue
                rows.append(row)
                group.append((row, impl))
            # The copy and the implementations take turns, round by round: a busy neighbour slows each of a round alike.
            fns = {RESTORE: lambda: buf.copy_(src),
                   **{r["implementation"]: (lambda f=i.fn: f(buf.copy_(src))) for r, i in group}}
            with deterministic(det):
                timed = timing.measure_rounds(fns, dev, rounds, warmup, min_run_time / rounds)
            restore = timed[RESTORE]
            for row, impl in group:
                t = timed[row["implementation"]]
                round_net = [m - r for m, r in zip(t.round_medians_ms, restore.round_medians_ms)]
                net = t.median_ms - restore.median_ms
                nbytes = model_bytes(shape, n_full, impl.inplace)
                gbps = nbytes / (net * 1e-3) / 1e9 if net > 0 else float("nan")
                row.update({"restore_ms": round(restore.median_ms, 4), "median_ms": round(t.median_ms, 4),
                            "iqr_ms": round(t.iqr_ms, 4), "p10_ms": round(t.p10_ms, 4), "p90_ms": round(t.p90_ms, 4),
                            "first_ms": round(t.first_ms, 4), "runs": t.runs,
                            "net_ms": round(net, 4) if net > 0 else float("nan"),
                            "round_net_ms": [round(x, 4) for x in round_net],
                            "timed": bool(round_net) and all(x > 0 for x in round_net),
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


def _cuda_peak(fn: Callable[[], Any]) -> tuple[int, int, int]:
    """(peak bytes above the start, bytes still held after, bytes allocated in all) of one call, from the CUDA
    caching allocator (it also sees the buffers a kernel allocates and frees inside itself)."""
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    total0 = torch.cuda.memory_stats().get("allocated_bytes.all.allocated", 0)
    torch.cuda.reset_peak_memory_stats()
    out = fn()
    torch.cuda.synchronize()
    peak, after = torch.cuda.max_memory_allocated() - base, torch.cuda.memory_allocated() - base
    total = torch.cuda.memory_stats().get("allocated_bytes.all.allocated", 0) - total0
    del out
    return int(peak), int(after), int(total)


def _cuda_kernels_deterministic(fn: Callable[[], Any]) -> list[str]:
    """The kernels of one call with deterministic algorithms on (index_put_ then takes the sort kernel that held the
    seed's assert); on a torch that asserts there, the error's first line instead."""
    try:
        with deterministic(True):
            return _cuda_kernels(fn)
    except Exception as exc:  # the assert itself is a result here
        return [f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"]


INDEX_OPS = ("aten::index_put", "aten::_index_put_impl", "aten::nonzero")


def memory_profile(shapes: list[str], implementations: list[str] | None = None, device: str = "auto",
                   full_percent: int = 25, heads: int = 8, seed: int = 0) -> pd.DataFrame:
    """Per device × shape × formulation: ATen ops, index ops, bytes of new tensors (peak and kept), CUDA kernels and peak.

    `peak new bytes` = the largest total of tensors the call has created and not yet freed (op level, any device),
    `kept bytes` = those still alive after it (the result of an out-of-place formulation). On CUDA the caching
    allocator's peak above the start is added (it also sees buffers allocated inside a kernel), the bytes it handed
    out in all, and the kernel names with deterministic algorithms off and on.
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
                    peak, after, total = _cuda_peak(lambda: impl.fn(buf.copy_(src)))
                    row.update({"cuda peak bytes": peak, "cuda kept bytes": after, "cuda allocated bytes": total,
                                "cuda kernels": _cuda_kernels(lambda: impl.fn(buf.copy_(src))),
                                "cuda kernels (deterministic)": _cuda_kernels_deterministic(
                                    lambda: impl.fn(buf.copy_(src)))})
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

Verdict = Judgement


@dataclass
class Results:
    """What the notebook measured, for the judges: equivalence, bandwidth, benchmark, memory/ops and assert attempts.

    `torch_version` is this run's torch (the CUDA attempts carry their own); `seed_message` and `seed_config` are the
    seed's assert message and decoder configuration the derived verdicts start from (tests swap them to show that
    the arithmetic can disagree with the seed).
    """

    eq: pd.DataFrame
    bandwidth: pd.DataFrame
    bench: pd.DataFrame
    memory: pd.DataFrame
    trig: pd.DataFrame
    full_percent: int = 25
    torch_version: str = field(default_factory=lambda: torch.__version__)
    seed_message: str = SEED_ASSERT_MESSAGE
    seed_config: dict[str, int] = field(default_factory=lambda: dict(SEED_CONFIG))


def _conditions(claim_id: str) -> dict[str, Any]:
    """The seed's conditions of a claim, from the ledger."""
    return findings.ledger_entry(claim_id).get("conditions", {})


def _range_text(claim_id: str) -> str:
    rng = _conditions(claim_id).get("torch", {})
    return f"{rng.get('min', '…')}–{rng.get('max', '…')}"


def _in_torch_range(claim_id: str, version: str) -> bool:
    """Whether `version` lies in the torch releases the ledger names for the claim."""
    rng = _conditions(claim_id).get("torch")
    return rng is None or (bool(version) and not verdicts.differing({"torch": rng}, {"torch": version}))


DERIVED_WHY = ("derived from the seed's own assert message and configuration with the kernel arithmetic "
               "(assert_numbers); nothing this run measured on its device or torch enters the verdict")


def _derived(claim_id: str, verdict: str, evidence: str, data: dict[str, Any], res: Results) -> Judgement:
    """A verdict computed from the seed's own numbers: basis derived, the run's real conditions beside the seed's,
    each marked as not deciding (nothing measured on them is used)."""
    run = {"device": _run_devices_of(res) or ["cpu"], "torch": res.torch_version}
    run = {k: run.get(k, "") for k in _conditions(claim_id)}
    return Judgement(verdict, evidence, data, "derived", run, {k: DERIVED_WHY for k in _conditions(claim_id)})


def _run_devices_of(res: Results) -> list[str]:
    """The devices this run measured on (from its tables)."""
    found: list[str] = []
    for frame in (res.eq, res.bench, res.memory):
        if len(frame) and "device" in frame:
            found += [d for d in frame["device"].dropna() if d not in found]
    return sorted(found)


def _impl_all_true(eq: pd.DataFrame, name: str) -> tuple[int, int]:
    if name not in eq:
        return 0, 0
    col = eq[name]
    return int(sum(v is True for v in col)), len(col)


def judge_equivalent(res: Results) -> Judgement:
    """mask.equivalent: confirmed when masked_fill and bool_index_put equal the reference in every case, partly when
    only masked_fill does, refuted when masked_fill differs in any. Measured on every device of the run (the
    results are the ops' semantics, so a CPU run answers as well as a CUDA one)."""
    eq = res.eq
    if eq.empty:
        return Judgement("error", "no equivalence cases ran", basis="none")
    mf, n = _impl_all_true(eq, "masked_fill")
    bi, _ = _impl_all_true(eq, "bool_index_put")
    others = {c: _impl_all_true(eq, c)[0] for c in IMPLEMENTATIONS if c in eq}
    devs = sorted(set(eq["device"]))
    detail = (f"masked_fill equals the NumPy reference in {mf}/{n} cases and bool_index_put in {bi}/{n} "
              f"on {', '.join(devs)} (kinds: {'; '.join(dict.fromkeys(eq['case']))}) — " + ", ".join(f"{k} {v}/{n}" for k, v in others.items())
              + "; masked_fill returns a new tensor where the original writes in place")
    verdict = "confirmed" if mf == n and bi == n else "partly" if mf == n else "refuted"
    return Judgement(verdict, detail, {"equal": others, "cases": n}, "measured", {"device": devs})


def _speed_row(bench: pd.DataFrame, dev: str, shape: Shape, name: str) -> pd.Series | None:
    if bench.empty or "implementation" not in bench:
        return None
    hit = bench[(bench["device"] == dev) & (bench["shape"] == shape_label(shape)) & (bench["implementation"] == name)
                & (bench["deterministic"] == False)]  # noqa: E712
    return hit.iloc[0] if len(hit) else None


def _ms(value: Any) -> str:
    """A time for the evidence: '0.1139 ms', or 'could not time' when it is not a positive number."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return "not timed"
    return f"{v:.4g} ms" if math.isfinite(v) and v > 0 else "could not time"


def speed_rounds(bench: pd.DataFrame, dev: str, shape: Shape) -> tuple[str, list[float] | None]:
    """(a sentence, the original/masked_fill ratio of every round) at one device and shape; the ratios are None when
    the shape was not benchmarked or a round's net time was not positive (the machine was too busy to time it)."""
    orig, fix = _speed_row(bench, dev, shape, ORIGINAL), _speed_row(bench, dev, shape, "masked_fill")
    label = f"{dev} {shape_label(shape)}"
    if orig is None or fix is None:
        return f"{label}: {ORIGINAL} and masked_fill not in this run's benchmark", None
    o, f = orig.get("round_net_ms"), fix.get("round_net_ms")
    if not isinstance(o, list) or not isinstance(f, list) or not o or len(o) != len(f):
        why = orig.get("error") or fix.get("error") or "no rounds recorded"
        return f"{label}: could not time ({why})", None
    if not all(x > 0 for x in o + f):
        return (f"{label}: could not time — net time per round {ORIGINAL} {o} ms, masked_fill {f} ms: in some round "
                "the call took no longer than the input copy timed beside it (too busy a machine)"), None
    ratios = [a / b for a, b in zip(o, f)]
    mid = statistics.median_high(ratios)
    text = (f"{label}: {ORIGINAL}/masked_fill = {mid:.2f}× (masked_fill {'faster' if mid > 1 else 'not faster'}; "
            f"median of {len(ratios)} rounds timed in turn: {', '.join(f'{r:.2f}' for r in ratios)}×; "
            f"{ORIGINAL} {_ms(orig.get('net_ms'))} vs "
            f"masked_fill {_ms(fix.get('net_ms'))} net of the {_ms(fix.get('restore_ms'))} input copy)")
    return text, ratios


def _judge_speed(res: Results, claim_id: str) -> Judgement:
    """A speed claim: the per-round ratios on CUDA at the seed's shape against the ledger's band (verdicts.band)."""
    entry = findings.ledger_entry(claim_id)
    shape = parse_shape(entry["conditions"]["shape"])
    lo, hi = findings.band_of(claim_id)
    _, seed_fix, seed_orig, _ = SEED_BENCH[claim_id]
    seed_txt = (f"the seed: \"{entry['band']['words']}\" = {seed_orig / seed_fix:.1f}×, judged against "
                f"{lo:g}–{hi:g}×")
    common = f"deterministic algorithms off, {res.full_percent}% of (image, query) rows all True"
    cpu_txt, cpu_ratios = speed_rounds(res.bench, "cpu", shape)
    data = {"cpu_rounds": cpu_ratios, "band": [lo, hi]}
    has_cuda = not res.bench.empty and "implementation" in res.bench and bool(
        ((res.bench["device"] == "cuda") & res.bench["implementation"].notna()).any())
    if not has_cuda:
        return Judgement("needs_cuda", f"{cpu_txt} ({common}); {seed_txt} — the seed timed CUDA; this run has no CUDA rows",
                         data, "measured", {"device": "cpu", "shape": shape_label(shape)})
    cuda_txt, ratios = speed_rounds(res.bench, "cuda", shape)
    data["cuda_rounds"] = ratios
    run = {"device": "cuda", "shape": shape_label(shape)}
    if ratios is None:
        return Judgement("inconclusive", f"{cuda_txt}; {seed_txt}. {cpu_txt}", data, "measured", run)
    verdict = verdicts.band(ratios, lo, hi)
    why = {"confirmed": "every round inside", "refuted": "every round outside",
           "inconclusive": "rounds on both sides of an edge: this machine's noise cannot decide"}[verdict]
    return Judgement(verdict, f"{cuda_txt} ({common}); {seed_txt}: {why}. {cpu_txt}", data, "measured", run)


def judge_speedup_small(res: Results) -> Judgement:
    """mask.speedup_small_20x: ~20× at 32x5x1024 on CUDA."""
    return _judge_speed(res, "mask.speedup_small_20x")


def judge_speedup_medium(res: Results) -> Judgement:
    """mask.speedup_medium_3_5x: ~3.5× at 32x100x4096 on CUDA."""
    return _judge_speed(res, "mask.speedup_medium_3_5x")


def _peaks(mem: pd.DataFrame, dev: str, name: str, column: str) -> dict[str, int]:
    sub = mem[(mem["device"] == dev) & (mem["implementation"] == name)] if column in mem else mem.iloc[0:0]
    return {r["shape"]: int(r[column]) for _, r in sub.iterrows() if pd.notna(r[column])}


def _peak_pairs(mem: pd.DataFrame, dev: str, column: str) -> list[tuple[str, int, int]]:
    """(shape, masked_fill's, the original's) of one measure on one device, for the shapes both have."""
    orig, fix = _peaks(mem, dev, ORIGINAL, column), _peaks(mem, dev, "masked_fill", column)
    return [(shape, fix[shape], orig[shape]) for shape in orig if shape in fix]


def judge_memory_lower(res: Results) -> Judgement:
    """mask.memory_lower: the seed's two formulations (the original and the out-of-place masked_fill), one measure:
    the CUDA caching allocator's peak above the start of one call (it sees the index tensors and the buffers kernels
    allocate inside). confirmed when masked_fill's peak is lower at every shape, refuted when it is lower at none,
    partly otherwise. A CPU-only run has no allocator peak of the seed's device: needs_cuda, with the CPU's ATen-level
    peaks (another measure) shown."""
    mem = res.memory
    if mem.empty:
        return Judgement("error", "no memory measurements ran", basis="none")
    cpu = _peak_pairs(mem, "cpu", "peak new bytes")
    cpu_txt = ("CPU, ATen-level peak of new tensors (not judged): " + "; ".join(
        f"{s} masked_fill {f:,} B vs {ORIGINAL} {o:,} B" for s, f, o in cpu)) if cpu else "no CPU rows"
    pairs = _peak_pairs(mem, "cuda", "cuda peak bytes")
    if not pairs:
        return Judgement("needs_cuda", f"the seed's memory is a CUDA training's; this run has no CUDA allocator "
                                       f"peaks. {cpu_txt}", {"cpu": {s: [f, o] for s, f, o in cpu}}, "measured",
                         {"device": "cpu"})
    total = {(s, n): v for n in (ORIGINAL, "masked_fill") for s, v in _peaks(mem, "cuda", n, "cuda allocated bytes").items()}
    lower = sum(f < o for _, f, o in pairs)
    verdict = verdicts.all_none_some(lower, len(pairs))
    parts = [f"{s}: masked_fill {f:,} B vs {ORIGINAL} {o:,} B"
             + (f" (allocated in all {total[(s, 'masked_fill')]:,} vs {total[(s, ORIGINAL)]:,} B)"
                if (s, ORIGINAL) in total and (s, "masked_fill") in total else "") for s, f, o in pairs]
    equal = sum(f == o for _, f, o in pairs)
    return Judgement(verdict, (f"CUDA caching allocator, peak above the start of one call, the seed's two formulations: "
                               f"masked_fill's is lower at {lower}, equal at {equal} and higher at "
                               f"{len(pairs) - lower - equal} of {len(pairs)} shapes — " + "; ".join(parts)
                               + f". {cpu_txt}"),
                     {"cuda": {s: [f, o] for s, f, o in pairs}}, "measured", {"device": "cuda"})


KERNEL_COLUMNS = ("cuda kernels", "cuda kernels (deterministic)")


def _kernels_of(mem: pd.DataFrame, name: str) -> list[str]:
    """The CUDA kernels a formulation launched, with deterministic algorithms off and on (errors left out)."""
    sub = mem[(mem["device"] == "cuda") & (mem["implementation"] == name)] if "cuda kernels" in mem else mem.iloc[0:0]
    return list(dict.fromkeys(k for col in KERNEL_COLUMNS if col in sub for ks in sub[col]
                              for k in (ks if isinstance(ks, list) else []) if not k.startswith("error:")))


INDEX_KERNEL_WORDS = ("index", "nonzero", "sort")


def _index_kernels(kernels: list[str]) -> list[str]:
    return [k for k in kernels if any(w in k.lower() for w in INDEX_KERNEL_WORDS)]


def _ops_text(mem: pd.DataFrame, name: str) -> str:
    sub = mem[mem["implementation"] == name] if len(mem) else mem
    ops = list(dict.fromkeys(o for ops in sub["index ops"] for o in (ops or []))) if len(sub) else []
    return f"{name} dispatches {', '.join(ops) or 'no index ops'}"


def judge_different_kernels(res: Results) -> Judgement:
    """mask.different_kernels: on CUDA (deterministic algorithms off and on), confirmed when masked_fill launches
    none of the original's indexing kernels (names with index / nonzero / sort), refuted when it shares one;
    inconclusive when no kernel of the original carries such a name (the filter cannot tell). CPU only: needs_cuda."""
    mem = res.memory
    if mem.empty:
        return Judgement("error", "no op/kernel profile ran", basis="none")
    ops = f"{_ops_text(mem, ORIGINAL)}; {_ops_text(mem, 'masked_fill')}"
    if "cuda kernels" not in mem or not (mem["device"] == "cuda").any():
        return Judgement("needs_cuda", f"the claim is about CUDA kernels; at the ATen level {ops}", {}, "measured",
                         {"device": "cpu"})
    orig, fix = _kernels_of(mem, ORIGINAL), _kernels_of(mem, "masked_fill")
    orig_idx, fix_idx = _index_kernels(orig), _index_kernels(fix)
    shared = [k for k in fix if k in orig_idx]
    text = (f"masked_fill launches {len(fix_idx)} indexing kernels ({', '.join(k[:60] for k in fix_idx) or 'none'}) "
            f"against the original's {len(orig_idx)} ({', '.join(k[:60] for k in orig_idx[:4]) or 'none'}), "
            f"deterministic algorithms off and on; {len(shared)} shared; {ops}")
    data = {"original": orig, "masked_fill": fix}
    if not orig_idx:
        return Judgement("inconclusive", f"{text} — no kernel of the original has index/nonzero/sort in its name, so "
                                         "this run cannot tell its indexing kernels", data, "measured", {"device": "cuda"})
    return Judgement("refuted" if shared else "confirmed", text, data, "measured", {"device": "cuda"})


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


def _upstream_snippets() -> str:
    """The short synthetic snippets PyTorch reports give for the seed's form of the assert (a scalar value, 1.11–2.0
    rule), from the issue list."""
    return "; ".join(f"#{e['number']} ({e['versions']}): {e['repro']['code']}"
                     + (" under deterministic algorithms" if "determinis" in e["says"] else "")
                     + f" → {e['repro']['reported'][0]} vs {e['repro']['reported'][1]}" for e in load_issues()
                     if e.get("repro", {}).get("rule") == "expand_to_index" and not e["repro"]["value_shape"]
                     and "accumulate=True" not in e["repro"]["code"])


def _cpu_attempts(trig: pd.DataFrame) -> str:
    cpu = trig[trig["device"] == "cpu"] if len(trig) else trig
    if not len(cpu):
        return "no CPU attempts"
    parts = [f"{n} {outcome} ({', '.join(sorted(set(cpu.loc[cpu['outcome'] == outcome, 'formulation'])))})"
             for outcome, n in cpu["outcome"].value_counts().items()]
    return f"CPU, same {len(cpu)} attempts: " + "; ".join(parts)


def _cuda_attempts(trig: pd.DataFrame) -> pd.DataFrame:
    return trig[(trig["device"] == "cuda") & (trig["status"] != "skipped")] if len(trig) else trig


def _attempt_torch(cuda: pd.DataFrame, res: Results) -> str:
    """The torch the CUDA attempts ran on (their children report it), else this run's."""
    return next((v for v in (cuda["torch"] if "torch" in cuda else []) if v), "") or res.torch_version


def _fired_text(fired: pd.DataFrame) -> str:
    return "; ".join(f"{r['formulation']} {r['shape']} {r['full %']}% det={r['deterministic']}: {_pair(r)}"
                     for _, r in fired.head(6).iterrows())


SEED_LINE = ("where_index_put", "bool_index_put")  # the seed's line and its `attn_mask[mask] = False`


def judge_bool_index_alternative(res: Results) -> Judgement:
    """mask.bool_index_alternative: `m[mask] = False` as a replacement — identical results (any device) and free of the
    seed's failure, which only a CUDA run on the seed's torch releases can show: there, refuted when it asserts
    where the original does, confirmed when the original asserts and it never does. A result that differs from the
    reference refutes on any run. Elsewhere inconclusive (CUDA on another torch) or needs_cuda (CPU only)."""
    cid = "mask.bool_index_alternative"
    eq, mem = res.eq, res.memory
    if eq.empty:
        return Judgement("error", "the equivalence check did not run", basis="none")
    bi, n = _impl_all_true(eq, "bool_index_put")
    devs = sorted(set(eq["device"]))
    ops = (f"{_ops_text(mem, 'bool_index_put')} like the original ({_ops_text(mem, ORIGINAL)})" if len(mem)
           else "no op profile")
    text = f"bool_index_put equals the reference in {bi}/{n} cases on {', '.join(devs)}; {ops}"
    if bi != n:
        why = f"it returned a different result than the reference on this run ({n - bi} of {n} cases)"
        return Judgement("refuted", f"{text}: not identical results, so not a replacement", {"equal": bi, "cases": n},
                         "measured", {"device": devs, "torch": res.torch_version},
                         {"device": why, "torch": why})
    cuda = _cuda_attempts(res.trig)
    derived = ("the kernel arithmetic (derived, not deciding) gives it the original's "
               f"{'%d vs %d' % assert_numbers((32, 5, 49), 2, (160,), (), 'expand_to_index')} for the seed's mask: "
               "its boolean index becomes the same [160] row index")
    if cuda.empty:
        return Judgement("needs_cuda", f"{text}; whether it escapes the seed's assert needs CUDA on torch "
                                       f"{_range_text(cid)}; {derived}", {"equal": bi}, "measured",
                         {"device": devs, "torch": res.torch_version})
    version = _attempt_torch(cuda, res)
    run = {"device": "cuda", "torch": version}
    orig = cuda[(cuda["formulation"] == ORIGINAL) & cuda["sort path"]]
    alt = cuda[(cuda["formulation"] == "bool_index_put") & cuda["sort path"]]
    orig_fired, alt_fired = (f[f["outcome"] == "internal_assert"] for f in (orig, alt))
    seen = (f"on torch {version} the original asserts in {len(orig_fired)} of {len(orig)} sort-path CUDA attempts, "
            f"bool_index_put in {len(alt_fired)} of {len(alt)}")
    if not _in_torch_range(cid, version):
        return Judgement("inconclusive", f"{text}; {seen}. torch {version} is outside {_range_text(cid)}, the releases "
                                         "whose kernel failed the seed: whether alternative 2 escapes that failure "
                                         f"needs a CUDA run on one of them; {derived}", {"equal": bi}, "measured", run)
    if orig_fired.empty:
        return Judgement("inconclusive", f"{text}; {seen}: the failure did not occur, so escaping it was not tested",
                         {"equal": bi}, "measured", run)
    verdict = "refuted" if len(alt_fired) else "confirmed"
    return Judgement(verdict, f"{text}; {seen}" + (f" — {_fired_text(alt_fired)}" if len(alt_fired) else ""),
                     {"equal": bi, "original_fired": len(orig_fired), "alternative_fired": len(alt_fired)},
                     "measured", run)


def judge_not_reproducible(res: Results) -> Judgement:
    """mask.not_reproducible_synthetic: decided only on CUDA with a torch of the seed's releases (the ledger's range):
    refuted when a synthetic mask makes the seed's line assert; confirmed when none does although the attempts
    include deterministic algorithms with all-True rows; inconclusive when they do not, or on another torch (the run
    cannot reproduce the seed's conditions). CPU only: needs_cuda."""
    cid = "mask.not_reproducible_synthetic"
    model_txt, matched = _model_text()
    context = f"Context, not deciding: upstream snippets {_upstream_snippets()}; {model_txt}"
    cuda = _cuda_attempts(res.trig)
    if cuda.empty:
        return Judgement("needs_cuda", f"the assert is in a CUDA kernel; {_cpu_attempts(res.trig)}; it needs CUDA on "
                                       f"torch {_range_text(cid)}. {context}", {"model_matches": matched}, "measured",
                         {"device": "cpu", "torch": res.torch_version})
    version = _attempt_torch(cuda, res)
    run = {"device": "cuda", "torch": version}
    line = cuda[cuda["formulation"].isin(SEED_LINE)]
    fired = line[line["outcome"] == "internal_assert"]
    full = line["full rows"] if "full rows" in line else line["full %"]  # older tables lack the count
    covering = line[line["deterministic"].astype(bool) & (full.fillna(0) > 0)] if len(line) else line
    seen = (f"{len(fired)} of {len(line)} synthetic-mask CUDA attempts of the seed's line assert on torch {version} "
            f"({len(covering)} with deterministic algorithms and all-True rows)")
    if not _in_torch_range(cid, version):
        return Judgement("inconclusive", (f"{seen}; the seed's torch (a 2.0-era build, {build_date(res.seed_message)}) "
                                          f"is one of {_range_text(cid)} and torch {version} is not, so this run cannot "
                                          f"reproduce the seed's conditions: a CUDA run on torch {_range_text(cid)} "
                                          f"is needed. {context}"), {"fired": len(fired)}, "measured", run)
    if len(fired):
        return Judgement("refuted", f"{seen} — {_fired_text(fired)}", {"fired": len(fired)}, "measured", run)
    if covering.empty:
        return Judgement("inconclusive", f"{seen}: the attempts lack the setting the kernel arithmetic says the assert "
                                         "needs (deterministic algorithms, ≥1 all-True row), so not reproducing it "
                                         "says nothing", {"fired": 0}, "measured", run)
    return Judgement("confirmed", f"{seen}: synthetic masks do not reproduce it on this torch, not even there",
                     {"fired": 0, "covering": len(covering)}, "measured", run)


def judge_data_independent(res: Results) -> Judgement:
    """mask.data_independent. Measured where it can be: CUDA on a torch of the seed's releases, the seed's line with
    deterministic algorithms at one shape and several shares of all-True rows — refuted when it asserts at some
    shares and not at others, confirmed when it asserts at every share. Otherwise derived from the seed's own
    numbers: if they fit the kernel arithmetic (7840 = indexed rows × sliceSize, 160 = indexed rows ≤ the mask's
    rows), both count the all-True rows, i.e. the contents, and a mask of the same shape without one launches no
    kernel → refuted; if they do not fit, the arithmetic cannot say → inconclusive."""
    cid = "mask.data_independent"
    cuda = _cuda_attempts(res.trig)
    version = _attempt_torch(cuda, res) if len(cuda) else res.torch_version
    measured_txt = ""
    if len(cuda) and _in_torch_range(cid, version):
        det = cuda[cuda["formulation"].isin(SEED_LINE) & cuda["deterministic"]]
        varied, always = [], []
        for (form, shape), g in det.groupby(["formulation", "shape"]):
            by_share = g.groupby("full %")["outcome"].apply(lambda s: bool((s == "internal_assert").any()))
            if len(by_share) < 2:
                continue
            (varied if by_share.any() and not by_share.all() else always if by_share.all() else []).append(
                f"{form} {shape}: " + ", ".join(f"{p}% {'asserts' if f else 'no assert'}" for p, f in by_share.items()))
        run = {"device": "cuda", "torch": version}
        if varied:
            return Judgement("refuted", f"on torch {version}, same shape, different contents: " + "; ".join(varied),
                             {"varied": varied}, "measured", run)
        if always:
            return Judgement("confirmed", f"on torch {version} the seed's line asserts at every share of all-True rows: "
                                          + "; ".join(always), {"always": always}, "measured", run)
        measured_txt = (f"; this run's CUDA attempts on torch {version} cannot decide (no shape tried at several "
                        "shares with an assert)")
    cfg = res.seed_config
    lhs, rhs = parse_assert(res.seed_message)
    rows = cfg["batch"] * cfg["heads"] * cfg["queries"]
    if rhs <= 0 or lhs % rhs or rhs > rows:
        return _derived(cid, "inconclusive", (f"the seed's {lhs} vs {rhs} does not fit the kernel arithmetic (it needs "
                                              f"{lhs} = indexed rows × sliceSize with {rhs} indexed rows ≤ the mask's "
                                              f"{rows}), so it cannot say{measured_txt}"), {}, res)
    hw = lhs // rhs
    shape = (cfg["batch"] * cfg["heads"], cfg["queries"], hw)
    zero = assert_numbers(shape, 2, (0,), (), "expand_to_index")
    one = assert_numbers(shape, 2, (1,), (), "expand_to_index")
    text = (f"the seed's {lhs} vs {rhs} fits the 1.11–2.0 kernel arithmetic as {rhs} indexed all-True rows × sliceSize "
            f"{hw} vs the value expanded to those {rhs} rows: both numbers count the all-True rows of the "
            f"[{shape[0]}, {shape[1]}, {hw}] mask, i.e. its contents (here every one of its {rows} rows). Same shape: "
            f"0 all-True rows → {zero[0]} vs {zero[1]} ({'assert' if fires(*zero) else 'no kernel launch, no assert'}), "
            f"1 → {one[0]} vs {one[1]} ({'assert' if fires(*one) else 'no assert'}){measured_txt}")
    verdict = "refuted" if fires(*one) and not fires(*zero) else "inconclusive"
    return _derived(cid, verdict, text, {"zero": list(zero), "one": list(one), "slice_size": hw}, res)


def judge_ratio_spatial(res: Results) -> Judgement:
    """mask.ratio_spatial, derived from the seed's message and configuration: the kernel compares indexed rows ×
    sliceSize (× nElemBefore = 1) with the value's elements. confirmed when the numbers fit that as whole rows
    (lhs/rhs an integer, rhs ≤ the mask's batch·heads·queries rows) and the per-row slice lhs/rhs is a square H×W
    (the spatial H·W of the mask); refuted when the ratio is not a whole row slice or not square."""
    cid = "mask.ratio_spatial"
    cfg = res.seed_config
    lhs, rhs = parse_assert(res.seed_message)
    rows = cfg["batch"] * cfg["heads"] * cfg["queries"]
    whole = rhs > 0 and lhs % rhs == 0 and rhs <= rows
    ratio = lhs / rhs if rhs else float("nan")
    side = math.isqrt(int(ratio)) if whole else 0
    square = whole and side * side == int(ratio)
    text = (f"{lhs} / {rhs} = {ratio:g}; the kernel compares linearIndex.numel()·sliceSize·nElemBefore with the value's "
            f"elements, and the mask [{cfg['batch']}·{cfg['heads']}, {cfg['queries']}, H·W] has {rows} rows")
    data = {"ratio": ratio, "rows": rows}
    if not whole:
        return _derived(cid, "refuted", f"{text}: {rhs} indexed rows with a whole slice each cannot give {lhs}, so the "
                                        "ratio is not one row's spatial slice", data, res)
    if not square:
        return _derived(cid, "refuted", f"{text}: a slice of {int(ratio)} elements per row is not a square H×W", data, res)
    return _derived(cid, "confirmed", (f"{text}: {rhs} indexed rows × sliceSize {int(ratio)} = H·W = {side}×{side} "
                                       f"vs the value expanded to the {rhs} rows only — the value lacks the spatial "
                                       f"({side}×{side}) dimension of each row"), {**data, "slice_size": int(ratio)}, res)


def judge_assert_trigger(res: Results) -> Judgement:
    """mask.assert_trigger (kit), decided on CUDA with a torch of the releases it is about (ledger range): refuted when
    an attempt asserts off the sort path, or when none of the attempts the arithmetic says fail does; confirmed when
    every one of those asserts with the predicted numbers and nothing else asserts; partly otherwise. Another torch:
    inconclusive; CPU only: needs_cuda."""
    cid = "mask.assert_trigger"
    model_txt, matched = _model_text()
    cuda = _cuda_attempts(res.trig)
    if cuda.empty:
        return Judgement("needs_cuda", f"{_cpu_attempts(res.trig)} (the CPU never runs the CUDA kernel that holds the "
                                       f"assert). Model: {model_txt}", {"model_matches": matched}, "measured",
                         {"device": "cpu", "torch": res.torch_version})
    version = _attempt_torch(cuda, res)
    run = {"device": "cuda", "torch": version}
    fired = cuda[cuda["outcome"] == "internal_assert"]
    off_path = fired[~fired["sort path"].astype(bool)]
    predicted = cuda[(cuda["predicted expand_to_index"] != "") & cuda["sort path"].astype(bool)]
    hit = predicted[predicted["outcome"] == "internal_assert"]
    exact = [_pair(r) == r["predicted expand_to_index"] for _, r in fired.iterrows()]
    text = (f"{len(fired)} of {len(cuda)} CUDA attempts assert on torch {version}, {len(off_path)} off the sort path; "
            f"the 1.11–2.0 arithmetic predicts {len(predicted)}, of which {len(hit)} assert; {sum(exact)} with the "
            f"predicted numbers" + (f" — {_fired_text(fired)}" if len(fired) else ""))
    data = {"fired": len(fired), "predicted": len(predicted), "hit": len(hit)}
    if not _in_torch_range(cid, version):
        return Judgement("inconclusive", f"{text}. The claim is about the kernel of torch {_range_text(cid)}; torch "
                                         f"{version} is outside it: a CUDA run on one of those releases is needed. "
                                         f"Model: {model_txt}", data, "measured", run)
    if len(off_path) or (len(predicted) and hit.empty):
        return Judgement("refuted", text, data, "measured", run)
    if predicted.empty:
        return Judgement("inconclusive", f"{text}: no attempt had the setting the claim names (deterministic "
                                         "algorithms or accumulate=True with ≥1 all-True row)", data, "measured", run)
    verdict = "confirmed" if len(hit) == len(predicted) and all(exact) else "partly"
    return Judgement(verdict, text, data, "measured", run)


def judge_updates_fix(res: Results) -> Judgement:
    """mask.updates_fix: of the CUDA attempts the 1.11–2.0 kernel arithmetic says fail (derived), how many still
    assert on this torch (measured): none → confirmed, all → refuted, some → partly. The ledger's torch condition is
    a release newer than the seed's. CPU only: needs_cuda."""
    cuda = _cuda_attempts(res.trig)
    if cuda.empty:
        return Judgement("needs_cuda", f"whether this torch still asserts needs CUDA; {_cpu_attempts(res.trig)}", {},
                         "measured", {"device": "cpu", "torch": res.torch_version})
    version = _attempt_torch(cuda, res)
    run = {"device": "cuda", "torch": version}
    predicted = cuda[(cuda["predicted expand_to_index"] != "") & cuda["sort path"].astype(bool)]
    if predicted.empty:
        return Judgement("inconclusive", "no attempt this run made is one the 1.11–2.0 kernel fails (deterministic "
                                         "algorithms with all-True rows; see trigger_full_percent)", {}, "both", run)
    still = predicted[predicted["outcome"] == "internal_assert"]
    verdict = verdicts.all_none_some(len(predicted) - len(still), len(predicted))
    return Judgement(verdict, (f"{len(still)} of {len(predicted)} CUDA attempts that the 1.11–2.0 kernel arithmetic says "
                               f"fail (the seed's torch was built {build_date(res.seed_message)}) still assert on torch "
                               f"{version}"), {"predicted": len(predicted), "still": len(still)}, "both", run)


JUDGES: dict[str, Callable[[Results], Judgement]] = {
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
))
