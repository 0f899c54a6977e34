"""CDMaskFormer attention mask: the mask as the Mask2Former decoder makes it, and the formulations of the fill under
test (the benchmarked implementations and the ways of writing it that the assert attempts try)."""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch


ORIGINAL = "where_index_put"

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


# --- the formulations the assert attempts try -------------------------------------------------------

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
