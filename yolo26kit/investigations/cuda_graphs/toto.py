"""CUDA graphs on the seed's own model: Datadog's Toto (toto-ts 0.2.0, its `toto/model` code) built at
Toto-Open-Base-1.0's configuration with seeded random weights, decoding patch by patch with Toto's own KVCache
(`stock`: reads its positions with `.item()`) or with the seed's `int()` patch applied to that class (`seed_int`).

toto-ts is installed without its dependencies (it pins torch 2.7 and a training stack); its model modules need
einops, jaxtyping, rotary-embedding-torch and gluonts' torch scaler and distributions (gluonts also without its
dependencies: it pins numpy < 2.2 and pandas < 3; pydantic and toolz are what those two modules import).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import nn

from ...errors import KitError

TOTO_PACKAGE = "toto-ts==0.2.0"


class TotoUnavailable(KitError):
    """toto-ts (or a module its model imports) is not installed."""


TOTO_VARIANTS = ("stock", "seed_int")

# Toto-Open-Base-1.0's config.json (Hugging Face Datadog/Toto-Open-Base-1.0): 12 layers of width 768, 12 heads,
# MLP 3072, 64-step patches, one space-wise layer, a 24-component Student-T mixture head.
TOTO_OPEN_BASE: dict[str, Any] = {
    "patch_size": 64, "stride": 64, "embed_dim": 768, "num_layers": 12, "num_heads": 12, "mlp_hidden_dim": 3072,
    "dropout": 0.1, "spacewise_every_n_layers": 12, "spacewise_first": True,
    "scaler_cls": "<class 'model.scaler.CausalPatchStdMeanScaler'>",
    "output_distribution_classes": ["<class 'model.distribution.MixtureOfStudentTsOutput'>"],
    "output_distribution_kwargs": {"k_components": 24},
    # the released config asks for xFormers' attention; Toto refuses it where xFormers is absent (as here and on the
    # runner) and then runs PyTorch's scaled_dot_product_attention with the same weights
    "use_memory_efficient_attention": False, "stabilize_with_global": True, "scale_factor_exponent": 10.0,
}


def _gluonts_torch_without_init() -> None:
    """Make gluonts.torch's submodules importable without its package __init__, which imports lightning for
    gluonts' estimators (Toto's model imports only gluonts.torch.scaler and gluonts.torch.distributions)."""
    if "gluonts.torch" in sys.modules:
        return
    spec = importlib.util.find_spec("gluonts")
    if spec is None or not spec.submodule_search_locations:
        raise TotoUnavailable(f"cuda_graphs: Toto needs gluonts==0.16.2 (installed with --no-deps beside "
                                f"{TOTO_PACKAGE}; see README)")
    package = types.ModuleType("gluonts.torch")
    package.__path__ = [os.path.join(list(spec.submodule_search_locations)[0], "torch")]
    sys.modules["gluonts.torch"] = package


def toto_modules() -> types.SimpleNamespace:
    """Toto's backbone and KVCache modules, imported from the installed toto-ts (TotoUnavailable if absent)."""
    if importlib.util.find_spec("toto") is None:
        raise TotoUnavailable(f"cuda_graphs: the Toto cases need {TOTO_PACKAGE} (pip install --no-deps; see README)")
    _gluonts_torch_without_init()
    import warnings

    with warnings.catch_warnings():  # toto warns at import that xFormers is absent; it falls back to PyTorch SDPA
        warnings.simplefilter("ignore")
        backbone = importlib.import_module("toto.model.backbone")
        util = importlib.import_module("toto.model.util")
    return types.SimpleNamespace(TotoBackbone=backbone.TotoBackbone, KVCache=util.KVCache)


def seed_int_cache(stock: type) -> type:
    """Toto's KVCache with the seed's patch: `current_len()` and `append()` read the position with `int(...)`
    instead of `.item()` (the seed's lines 182 and 217); every other method is Toto's own."""

    @dataclass
    class SeedIntKVCache(stock):  # type: ignore[misc, valid-type]
        def current_len(self, cache_idx: int) -> int:
            # Use int() instead of .item() - compatible with TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1
            return int(self._current_idx[cache_idx]) if len(self._current_idx) > 0 else 0

        def append(self, layer_idx: int, kv: tuple[torch.Tensor, torch.Tensor]) -> None:
            # Toto's own append, line for line, but for the one line the seed changed
            cache_idx = int(self._layer_cache_map[layer_idx].item())
            keys, values = kv
            assert keys.shape == values.shape, "keys and values must have the same shape"
            assert keys.shape[0] == self.batch_size * self.num_variates
            assert keys.shape[2 if self.use_memory_efficient_attention else 1] == self.num_heads
            assert keys.shape[3] == self.embed_dim // self.num_heads
            # Use int() instead of .item() to avoid breaking CUDA graphs
            start_idx = int(self._current_idx[cache_idx])
            end_idx = start_idx + keys.shape[1 if self.use_memory_efficient_attention else 2]
            assert end_idx <= self.max_seq_len, f"max_seq_len exceeded {end_idx} > {self.max_seq_len}"
            if self.use_memory_efficient_attention:
                self._keys[cache_idx, :, start_idx:end_idx, :, :] = keys
                self._values[cache_idx, :, start_idx:end_idx, :, :] = values
            else:
                self._keys[cache_idx, :, :, start_idx:end_idx, :] = keys
                self._values[cache_idx, :, :, start_idx:end_idx, :] = values
            self._current_idx[cache_idx] = end_idx

    return SeedIntKVCache


@dataclass(frozen=True)
class TotoRun:
    """One forecast: `batch` series of `variates` variates, `context` steps in, `steps` patches out."""

    batch: int = 1
    variates: int = 1
    context: int = 512
    steps: int = 4
    seed: int = 0


class TotoStep(nn.Module):
    """One decoding call of Toto: the backbone with its KV cache, returning the next patch's mean (affine-scaled
    as Toto's forecaster does) as a plain tensor, so a compiled step has one tensor output."""

    def __init__(self, backbone: nn.Module, cache: Any, prefix: int) -> None:
        super().__init__()
        self.toto, self.cache, self.prefix = backbone, cache, prefix

    def forward(self, inputs: torch.Tensor, padding: torch.Tensor, id_mask: torch.Tensor) -> torch.Tensor:
        out = self.toto(inputs, padding, id_mask, kv_cache=self.cache, scaling_prefix_length=self.prefix)
        patch = self.toto.patch_embed.stride
        mean = out.distribution.mean[..., -patch:]
        return out.loc[..., -1:] + out.scale[..., -1:] * mean


def build_toto(variant: str, run: TotoRun, device: str = "cpu", config: dict[str, Any] | None = None) -> TotoStep:
    """Toto's backbone (Toto-Open-Base-1.0's configuration unless `config`), seeded random weights, with a KV cache
    of the variant sized for the run; eval mode."""
    if variant not in TOTO_VARIANTS:
        raise ValueError(f"unknown Toto cache variant {variant!r} (known: {', '.join(TOTO_VARIANTS)})")
    mods = toto_modules()
    torch.manual_seed(run.seed)
    backbone = mods.TotoBackbone(**(config or TOTO_OPEN_BASE)).to(device).eval()
    cache_cls = mods.KVCache if variant == "stock" else seed_int_cache(mods.KVCache)
    patch = backbone.patch_embed.stride
    layers = list(backbone.transformer.layers)
    cache = cache_cls(batch_size=run.batch, num_variates=run.variates, transformer_layers=layers,
                      num_layers=backbone.num_layers, embed_dim=backbone.embed_dim,
                      num_heads=int(layers[0].num_heads), max_seq_len=run.context // patch + run.steps,
                      device=torch.device(device), dtype=torch.float32,
                      use_memory_efficient_attention=backbone.use_memory_efficient_attention)
    return TotoStep(backbone, cache, run.context)


def parameter_count(step: TotoStep) -> int:
    """Parameters of Toto's backbone."""
    return sum(p.numel() for p in step.toto.parameters())


def model_bytes(step: TotoStep) -> int:
    """Bytes of Toto's weights and buffers plus its KV cache: what the model holds on its device before any call."""
    held = [*step.toto.parameters(), *step.toto.buffers(), step.cache._keys, step.cache._values]
    return sum(t.numel() * t.element_size() for t in held)


def toto_context(run: TotoRun, device: str = "cpu") -> torch.Tensor:
    """A seeded noisy sine series per (batch, variate): (batch, variates, context)."""
    g = torch.Generator().manual_seed(run.seed + 1)
    t = torch.arange(run.context, dtype=torch.float32)
    phase = torch.rand(run.batch, run.variates, 1, generator=g) * 6.28
    series = torch.sin(t / 9 + phase) + 0.1 * torch.randn(run.batch, run.variates, run.context, generator=g)
    return series.to(device)


@torch.no_grad()
def toto_forecast(model: TotoStep, step: Callable[..., torch.Tensor], series: torch.Tensor, steps: int,
                  hook: Callable[[int, Callable[[], torch.Tensor]], torch.Tensor] | None = None) -> torch.Tensor:
    """Toto's KV-cache decoding loop (as its forecaster's generate_mean): the whole context on the first call, then one
    patch per call fed back; `step` is the model or its compiled version. Returns (batch, variates, steps * patch)."""
    model.cache.reset()
    inputs = series
    padding = torch.ones_like(inputs, dtype=torch.bool)
    id_mask = torch.zeros_like(inputs, dtype=torch.int)
    patch = model.toto.patch_embed.stride
    outs = []
    for i in range(steps):
        call = lambda inputs=inputs, padding=padding, id_mask=id_mask: step(inputs, padding, id_mask)  # noqa: E731
        # copied at once: a CUDA-graph output is overwritten by the next replay
        nxt = (hook(i, call) if hook else call()).clone()
        outs.append(nxt)
        inputs = torch.cat([inputs, nxt], dim=-1)
        padding = torch.cat([padding, padding[..., -patch:]], dim=-1)
        id_mask = torch.cat([id_mask, id_mask[..., -patch:]], dim=-1)
    return torch.cat(outs, dim=-1)
