"""view_copy: the models under test (a gpt-fast-style KV-cache decode step, YOLO26) and their inputs."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ...bench import yolo

MODELS = ("kv_decode", *(f"yolo26{s}" for s in yolo.SCALES))


@dataclass(frozen=True)
class Spec:
    """One model to trace: `kv_decode` (sizes below) or a YOLO26 scale (imgsz), on a device."""

    model: str = "kv_decode"
    device: str = "cpu"
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    max_seq: int = 64
    batch: int = 1
    decode_steps: int = 4
    imgsz: int = 320
    seed: int = 0
    workdir: str = ""

    @property
    def is_yolo(self) -> bool:
        return self.model.startswith("yolo26")

    @property
    def calls(self) -> int:
        """Forward calls compared between variants: decode positions 0..steps-1, or one YOLO forward."""
        return 1 if self.is_yolo else self.decode_steps


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """RoPE's half rotation, Llama style: two slices of the last dimension, swapped and negated."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class DecodeStep(nn.Module):
    """One token of a decoder with a static KV cache, gpt-fast style: the position is a tensor, the cache a buffer.

    k/v caches are stacked per layer (select), written with `cache[layer][:, :, pos] = k` (index_put on a view
    of the buffer); q, k, v are sliced out of one projection and RoPE's `rotate_half` slices the head dim.
    """

    def __init__(self, spec: Spec) -> None:
        super().__init__()
        if spec.d_model % spec.n_heads or (spec.d_model // spec.n_heads) % 2:
            raise ValueError(f"d_model={spec.d_model} must split into n_heads={spec.n_heads} heads of even size")
        self.n_heads, self.head_dim, self.d_model = spec.n_heads, spec.d_model // spec.n_heads, spec.d_model
        self.wqkv = nn.ModuleList(nn.Linear(spec.d_model, 3 * spec.d_model, bias=False) for _ in range(spec.n_layers))
        self.wo = nn.ModuleList(nn.Linear(spec.d_model, spec.d_model, bias=False) for _ in range(spec.n_layers))
        shape = (spec.n_layers, spec.batch, spec.n_heads, spec.max_seq, self.head_dim)
        self.register_buffer("k_cache", torch.zeros(shape))
        self.register_buffer("v_cache", torch.zeros(shape))
        inv = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        angles = torch.outer(torch.arange(spec.max_seq).float(), inv)
        emb = torch.cat([angles, angles], dim=-1)
        self.register_buffer("cos", emb.cos())
        self.register_buffer("sin", emb.sin())
        self.register_buffer("mask", torch.tril(torch.ones(spec.max_seq, spec.max_seq, dtype=torch.bool)))

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        cos, sin = self.cos[pos][None, None], self.sin[pos][None, None]
        mask = self.mask[pos][None, None]
        for layer, (wqkv, wo) in enumerate(zip(self.wqkv, self.wo)):
            qkv = wqkv(x)
            q, k, v = qkv[..., :d], qkv[..., d:2 * d], qkv[..., 2 * d:]
            q, k, v = (z.view(b, t, self.n_heads, self.head_dim).transpose(1, 2) for z in (q, k, v))
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            self.k_cache[layer][:, :, pos] = k
            self.v_cache[layer][:, :, pos] = v
            y = F.scaled_dot_product_attention(q, self.k_cache[layer], self.v_cache[layer], attn_mask=mask)
            x = x + wo(y.transpose(1, 2).reshape(b, t, d))
        return x


def build_module(spec: Spec) -> nn.Module:
    """The spec's model on the CPU in eval mode, seeded weights (YOLO26 from the yaml, calibrated)."""
    if spec.is_yolo:
        return yolo.build(spec.model, seed=spec.seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(spec.seed)
        return DecodeStep(spec).eval().requires_grad_(False)


def call_inputs(spec: Spec, call: int, device: str = "cpu") -> tuple[torch.Tensor, ...]:
    """Inputs of forward call number `call`: a decode step at position `call`, or the one YOLO image."""
    if spec.is_yolo:
        return (yolo.example_input(spec.batch, spec.imgsz, spec.seed, device),)
    gen = torch.Generator().manual_seed(spec.seed * 1000 + call)
    x = torch.randn(spec.batch, 1, spec.d_model, generator=gen).to(device)
    return x, torch.tensor([call % spec.max_seq], dtype=torch.long, device=device)
