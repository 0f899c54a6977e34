"""torch.compile: the default mode, and mode="reduce-overhead" (CUDA graphs, so CUDA only). Compiled on load, on
the first call (no ahead-of-time step)."""

from __future__ import annotations

from typing import Any

from . import Backend, Loaded, register, threads_or_default


def compiled(model: Any, inputs: tuple[Any, ...], mode: str | None = None) -> Any:
    """torch.compile of the module after one eager call on `inputs`."""
    import torch

    # One eager call first, as a predictor's warm-up does: compiled fresh, the YOLO head's anchor cache changes under
    # Dynamo (graph breaks, a recompilation per call).
    model(*inputs)
    return torch.compile(model) if mode is None else torch.compile(model, mode=mode)


def load(model: Any, inputs: tuple[Any, ...], threads: int | None = None) -> Loaded:
    """torch.compile, default mode."""
    threads = threads_or_default(threads)
    fn = compiled(model, inputs)
    return Loaded(lambda: fn(*inputs), {"threads": threads})


def load_cudagraphs(model: Any, inputs: tuple[Any, ...], threads: int | None = None) -> Loaded:
    """torch.compile(mode="reduce-overhead"): Inductor with CUDA graphs."""
    threads = threads_or_default(threads)
    fn = compiled(model, inputs, mode="reduce-overhead")
    return Loaded(lambda: fn(*inputs), {"threads": threads})


register(Backend(name="compile", title="torch.compile (default mode)", needs_cuda=False, modules=("torch",),
                 load=load, aliases=("torch.compile",)))
register(Backend(name="compile_cudagraphs", title='torch.compile(mode="reduce-overhead"): CUDA graphs',
                 needs_cuda=True, modules=("torch",), load=load_cudagraphs, input_device="cuda"))
