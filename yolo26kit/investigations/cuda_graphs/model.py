"""CUDA graphs: the model under test, a toy decoder-only patch forecaster whose KV cache finds its write position
in one of four ways (`.item()`, `int()`, a device tensor, a Python int), and the autoregressive forecast loop."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from ...errors import BadParameter

NAME = "cuda_graphs"
VARIANTS = ("item", "int", "tensor", "python")


# --------------------------------------------------------------------------- the model


class CacheOverflow(IndexError):
    """A write past the end of the preallocated KV cache."""


@dataclass(frozen=True)
class Config:
    """Sizes of the toy forecaster and of one forecast (context patches in, `steps` patches out)."""

    d_model: int = 32
    n_layers: int = 2
    n_heads: int = 2
    patch_len: int = 8
    max_seq: int = 16
    batch: int = 1
    context_patches: int = 4
    steps: int = 8
    seed: int = 0

    @property
    def calls(self) -> int:
        """Model calls in one forecast: every context patch, then each forecast patch but the last fed back."""
        return self.context_patches + self.steps - 1

    def check(self) -> "Config":
        """Raise BadParameter for sizes the model cannot take."""
        if self.d_model % self.n_heads:
            raise BadParameter(f"{NAME}: d_model={self.d_model} must be a multiple of n_heads={self.n_heads}")
        if min(self.d_model, self.n_layers, self.n_heads, self.patch_len, self.max_seq, self.batch,
               self.context_patches, self.steps) < 1:
            raise BadParameter(f"{NAME}: every size must be at least 1")
        if self.calls > self.max_seq:
            raise BadParameter(f"{NAME}: context_patches + steps - 1 = {self.calls} positions do not fit "
                               f"max_seq={self.max_seq}; raise max_seq")
        return self


class KVCache(nn.Module):
    """One preallocated K/V buffer for all layers, Toto style, with four ways of finding the write position.

    item / int: the position lives in the device tensor `_current_idx[layer]` and is read back with
    `.item()` / `int(...)`, then used as a Python slice (the seed's code). tensor: the position stays a
    device tensor and the write is tensor indexing (gpt-fast `k_out[:, :, input_pos] = k_val`).
    python: the caller passes the position as a Python int. Attention always reads the full buffer
    under a mask, so every variant computes bit-identical results.
    """

    def __init__(self, cfg: Config, variant: str) -> None:
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"unknown cache variant {variant!r} (known: {', '.join(VARIANTS)})")
        self.variant = variant
        self.max_seq = cfg.max_seq
        shape = (cfg.n_layers, cfg.batch, cfg.n_heads, cfg.max_seq, cfg.d_model // cfg.n_heads)
        self.register_buffer("k", torch.zeros(shape), persistent=False)
        self.register_buffer("v", torch.zeros(shape), persistent=False)
        self.register_buffer("_current_idx", torch.zeros(cfg.n_layers, dtype=torch.long), persistent=False)

    def reset(self) -> None:
        """Empty the cache (in place, so compiled graphs keep their static buffer addresses)."""
        self.k.zero_()
        self.v.zero_()
        self._current_idx.zero_()

    def _overflow(self, layer: int, start: int, new: int) -> CacheOverflow:
        return CacheOverflow(
            f"KV cache overflow in layer {layer}: writing {new} position(s) at {start} needs {start + new}, "
            f"the cache holds max_seq={self.max_seq}; raise max_seq or shorten the forecast")

    def _start(self, layer: int, new: int, pos: int | None) -> int:
        """The write position as a Python int (SymInt under compile) for the item/int/python variants."""
        if self.variant == "item":
            start = self._current_idx[layer].item()
        elif self.variant == "int":
            start = int(self._current_idx[layer])
        else:
            if pos is None:
                raise TypeError("the python cache variant needs the position passed in (pos=...)")
            start = pos
        if torch.compiler.is_compiling():
            # tells the compiler the slice stays in bounds; checked at run time, no Python branch on the value
            torch._check(start >= 0)
            torch._check(start + new <= self.max_seq)
        elif start + new > self.max_seq:
            raise self._overflow(layer, start, new)
        return start

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor, pos: int | None = None
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Write k, v (batch, heads, new, head_dim) at the layer's position; return full K, V and the attention mask."""
        new = k.shape[2]
        keys = torch.arange(self.max_seq, device=k.device)
        if self.variant == "tensor":
            if not torch.compiler.is_compiling():
                # eager only: this read-back is a host sync; compiled graphs skip it (callers bound the horizon)
                start = int(self._current_idx[layer])
                if start + new > self.max_seq:
                    raise self._overflow(layer, start, new)
            q_pos = self._current_idx[layer] + torch.arange(new, device=k.device)
            self.k[layer][:, :, q_pos] = k
            self.v[layer][:, :, q_pos] = v
            self._current_idx[layer] += new
        else:
            start = self._start(layer, new, pos)
            self.k[layer, :, :, start:start + new] = k
            self.v[layer, :, :, start:start + new] = v
            q_pos = start + torch.arange(new, device=k.device)
            if self.variant != "python":
                self._current_idx[layer] += new
        mask = keys[None, :] <= q_pos[:, None]  # (new, max_seq): causal over everything written so far
        return self.k[layer], self.v[layer], mask


class Block(nn.Module):
    """Pre-norm transformer block: cached causal self-attention, then an MLP."""

    def __init__(self, cfg: Config, layer: int) -> None:
        super().__init__()
        self.layer, self.n_heads = layer, cfg.n_heads
        self.norm1, self.norm2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        hidden = 4 * cfg.d_model
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, hidden), nn.GELU(), nn.Linear(hidden, cfg.d_model))

    def forward(self, x: torch.Tensor, cache: KVCache, pos: int | None) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        keys, values, mask = cache.append(self.layer, k, v, pos)
        attn = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)
        x = x + self.proj(attn.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.norm2(x))


class Forecaster(nn.Module):
    """Decoder-only patch forecaster: patch embedding in, transformer blocks with a KV cache, next patch out."""

    def __init__(self, cfg: Config, variant: str) -> None:
        super().__init__()
        self.cfg, self.variant = cfg, variant
        self.embed = nn.Linear(cfg.patch_len, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg, i) for i in range(cfg.n_layers))
        self.norm = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.patch_len)
        self.cache = KVCache(cfg, variant)

    def reset(self) -> None:
        """Forget the cached context."""
        self.cache.reset()

    def forward(self, patches: torch.Tensor, pos: int | None = None) -> torch.Tensor:
        """patches (batch, new, patch_len) -> the next patch for each (batch, new, patch_len)."""
        x = self.embed(patches)
        for block in self.blocks:
            x = block(x, self.cache, pos)
        return self.head(self.norm(x))


def build(cfg: Config, variant: str, device: str = "cpu") -> Forecaster:
    """The forecaster with seeded random weights: the same weights for every variant."""
    torch.manual_seed(cfg.seed)
    return Forecaster(cfg, variant).to(device).eval()


def example_context(cfg: Config, device: str = "cpu") -> torch.Tensor:
    """A seeded noisy sine series cut into patches: (batch, context_patches, patch_len)."""
    g = torch.Generator().manual_seed(cfg.seed + 1)
    t = torch.arange(cfg.context_patches * cfg.patch_len, dtype=torch.float32)
    phase = torch.rand(cfg.batch, 1, generator=g) * 6.28
    series = torch.sin(t / 5 + phase) + 0.1 * torch.randn(cfg.batch, t.numel(), generator=g)
    return series.view(cfg.batch, cfg.context_patches, cfg.patch_len).to(device)


Hook = Callable[[int, Callable[[], torch.Tensor]], torch.Tensor]


def fresh_copy(t: torch.Tensor) -> torch.Tensor:
    """A copy with canonical strides: every call sees the same strides (no stride-guard recompile), and
    CUDA-graph outputs are copied out before the next replay overwrites them."""
    return t.clone(memory_format=torch.contiguous_format)


@torch.no_grad()
def forecast(model: Forecaster, step: Callable[..., torch.Tensor], context: torch.Tensor, steps: int,
             hook: Hook | None = None) -> torch.Tensor:
    """Feed the context one patch per call, then forecast `steps` patches autoregressively: (steps, batch, patch_len).

    `step` is the model or its compiled version. Each output is copied at once (CUDA-graph outputs are
    overwritten by the next replay; gpt-fast clones too). `hook(i, call)` may wrap call i (e.g. a profiler).
    """
    model.reset()
    n_ctx = context.shape[1]
    x = fresh_copy(context[:, :1])
    outs = []
    for i in range(n_ctx + steps - 1):
        call = (lambda x=x, i=i: step(x, i)) if model.variant == "python" else (lambda x=x: step(x))
        y = fresh_copy(hook(i, call) if hook else call())
        if i >= n_ctx - 1:
            outs.append(y[:, 0])
        x = fresh_copy(context[:, i + 1:i + 2]) if i + 1 < n_ctx else y
    return torch.stack(outs)
