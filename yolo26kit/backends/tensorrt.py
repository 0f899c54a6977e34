"""Torch-TensorRT: the module compiled through the dynamo path on load, at the inputs' precision (CUDA only; no
ahead-of-time step)."""

from __future__ import annotations

from typing import Any

from . import Backend, Loaded, register, threads_or_default


def load(model: Any, inputs: tuple[Any, ...], threads: int | None = None) -> Loaded:
    """torch_tensorrt.compile(ir="dynamo") after one eager call, enabled precisions: the first input's dtype."""
    import torch_tensorrt

    threads = threads_or_default(threads)
    model(*inputs)  # one eager call first, as for torch.compile (backends.compile: the head's anchor cache)
    trt = torch_tensorrt.compile(model, ir="dynamo", inputs=list(inputs), enabled_precisions={inputs[0].dtype})
    return Loaded(lambda: trt(*inputs), {"threads": threads})


register(Backend(name="tensorrt", title="Torch-TensorRT (dynamo)", needs_cuda=True, modules=("torch_tensorrt",),
                 load=load, input_device="cuda"))
