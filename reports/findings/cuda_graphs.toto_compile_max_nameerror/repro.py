"""Toto (toto-ts 0.2.0) does not compile with torch._dynamo.config.capture_scalar_outputs=True.

Toto's backbone decodes with a KV cache whose position is read from a tensor (`int(self._current_idx[i])`, the
patch that makes the read traceable with capture_scalar_outputs). torch.compile in the default mode fails while
tracing `TotoBackbone.backbone` with `NameError: name 'Max' is not defined`: a sympy `Max` of the unbacked
position is printed into Python code that is then evaluated without `Max` in scope.

The model is Toto's own code at a small width (2 layers of width 64, seeded random weights, CPU): the failure
depends on the cache's position arithmetic, not on the size or the weights.

Exit status: 1 with the failure's own traceback when the bug bites, 0 when the compiled model runs and matches eager.
"""
# finding: cuda_graphs.toto_compile_max_nameerror
# requires: torch==2.11.0 numpy pandas scipy tqdm packaging einops==0.7.0 rotary-embedding-torch==0.8.6 pydantic==2.12.5 toolz==0.12.1
# requires-no-deps: toto-ts==0.2.0 gluonts==0.16.2 jaxtyping==0.2.29
# device: cpu
# bites-with: NameError: name 'Max' is not defined
# seen-on: torch 2.11.0+cu130, executorch 1.2.0, ultralytics 8.4.190 on NVIDIA H100 80GB HBM3 (kit run 20261206T115055Z-vm-cuda, cuda_graphs.speedup_2_5x, cuda_graphs.first_inference_60s, cuda_graphs.memory_slightly_more, cuda_graphs.consistent_latency)

import dataclasses
import importlib.util
import os
import sys
import types
import warnings

import torch

CONTEXT, PATCH, STEPS = 512, 64, 4
CONFIG = {  # Toto-Open-Base-1.0's configuration, narrowed to 2 layers of width 64
    "patch_size": PATCH, "stride": PATCH, "embed_dim": 64, "num_layers": 2, "num_heads": 4, "mlp_hidden_dim": 256,
    "dropout": 0.1, "spacewise_every_n_layers": 2, "spacewise_first": True,
    "scaler_cls": "<class 'model.scaler.CausalPatchStdMeanScaler'>",
    "output_distribution_classes": ["<class 'model.distribution.MixtureOfStudentTsOutput'>"],
    "output_distribution_kwargs": {"k_components": 4}, "use_memory_efficient_attention": False,
    "stabilize_with_global": True, "scale_factor_exponent": 10.0,
}


def import_gluonts_torch_submodules_only() -> None:
    """gluonts.torch's __init__ imports lightning; Toto imports only its scaler and distributions modules."""
    spec = importlib.util.find_spec("gluonts")
    package = types.ModuleType("gluonts.torch")
    package.__path__ = [os.path.join(list(spec.submodule_search_locations)[0], "torch")]
    sys.modules["gluonts.torch"] = package


def int_position_cache(stock: type) -> type:
    """Toto's KVCache reading its position with int() instead of .item() (Toto's own code otherwise)."""

    @dataclasses.dataclass
    class IntPositionKVCache(stock):
        def current_len(self, cache_idx: int) -> int:
            return int(self._current_idx[cache_idx]) if len(self._current_idx) > 0 else 0

        def append(self, layer_idx: int, kv: tuple) -> None:
            cache_idx = int(self._layer_cache_map[layer_idx].item())
            keys, values = kv
            start_idx = int(self._current_idx[cache_idx])
            end_idx = start_idx + keys.shape[2]
            self._keys[cache_idx, :, :, start_idx:end_idx, :] = keys
            self._values[cache_idx, :, :, start_idx:end_idx, :] = values
            self._current_idx[cache_idx] = end_idx

    return IntPositionKVCache


def main() -> None:
    """Compile Toto's backbone with capture_scalar_outputs and run one decoding call; compare with eager."""
    import_gluonts_torch_submodules_only()
    with warnings.catch_warnings():  # Toto warns at import that xFormers is absent (it then uses PyTorch's SDPA)
        warnings.simplefilter("ignore")
        from toto.model.backbone import TotoBackbone
        from toto.model.util import KVCache

    torch._dynamo.config.capture_scalar_outputs = True
    torch.manual_seed(0)
    model = TotoBackbone(**CONFIG).eval()
    layers = list(model.transformer.layers)
    cache = int_position_cache(KVCache)(
        batch_size=1, num_variates=1, transformer_layers=layers, num_layers=model.num_layers,
        embed_dim=model.embed_dim, num_heads=int(layers[0].num_heads), max_seq_len=CONTEXT // PATCH + STEPS,
        device=torch.device("cpu"), dtype=torch.float32, use_memory_efficient_attention=False)
    series = torch.sin(torch.arange(CONTEXT, dtype=torch.float32) / 9).reshape(1, 1, CONTEXT)
    padding = torch.ones_like(series, dtype=torch.bool)
    id_mask = torch.zeros_like(series, dtype=torch.int)

    with torch.no_grad():
        cache.reset()
        eager = model(series, padding, id_mask, kv_cache=cache, scaling_prefix_length=CONTEXT).loc
        cache.reset()
        compiled = torch.compile(model)  # the default mode: the failure is the compiler's, not CUDA graphs'
        got = compiled(series, padding, id_mask, kv_cache=cache, scaling_prefix_length=CONTEXT).loc
    torch.testing.assert_close(got, eager)
    print(f"torch {torch.__version__}: Toto compiled with capture_scalar_outputs and matches eager")


if __name__ == "__main__":
    main()
