"""PyTorch eager: the module called as it is (no ahead-of-time step)."""

from __future__ import annotations

from typing import Any

from . import Backend, Loaded, register, threads_or_default


def load(model: Any, inputs: tuple[Any, ...], threads: int | None = None) -> Loaded:
    """The module itself, called on `inputs`."""
    return Loaded(lambda: model(*inputs), {"threads": threads_or_default(threads)})


register(Backend(name="eager", title="PyTorch eager", needs_cuda=False, modules=("torch",), load=load))
