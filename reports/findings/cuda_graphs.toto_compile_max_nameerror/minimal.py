"""The Toto failure by hand, in a few lines: NameError: name 'Max' is not defined (torch.compile, capture_scalar_outputs).

Toto's backbone (toto/model/backbone.py:190) slices its input from `max(0, stride * kv_cache_len)` where the cache
length is read out of a tensor. With capture_scalar_outputs that start is `Max(0, 64*u0)` of an unbacked symbol, and
Inductor's Python wrapper computes the slice's storage offset as
`u2 = 0 + 1 * (max(0, min(512, Max(0, 64*u0) + 512 if Max(0, 64*u0) < 0 else Max(0, 64*u0))))`: sympy's `Max`
printed into Python code that never imports it. It is the graph PyTorch's minifier kept (minified.py: 4 calls).

Exit status: 1 with `NameError: name 'Max' is not defined` while the bug bites (torch 2.11.0 on CPU), 0 when fixed.
"""
import torch

torch._dynamo.config.capture_scalar_outputs = True


def f(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    start = max(0, 64 * idx[0].item())  # Toto: prefix_len = max(0, stride * kv_cache_len)
    return x[:, :, start:] * 2


x, idx = torch.randn(1, 1, 512), torch.zeros(1, dtype=torch.int32)
torch.testing.assert_close(torch.compile(f)(x, idx), f(x, idx))
print(f"torch {torch.__version__}: compiled and matches eager")
