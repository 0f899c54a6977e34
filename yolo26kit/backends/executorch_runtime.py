"""ExecuTorch's runtime (pybindings), shared by its back-ends: the threadpool size, opening a .pte (by path or from
its bytes) and loading its method with its .ptd weights. Registers no back-end."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def reset_threadpool(threads: int) -> None:
    """Size the runtime's threadpool (XNNPACK's threads) like torch's, where this executorch can."""
    from executorch.extension.pybindings import portable_lib

    if hasattr(portable_lib, "_unsafe_reset_threadpool"):
        portable_lib._unsafe_reset_threadpool(threads)


def open_program(source: str | Path | bytes, data_path: str | Path | None = None) -> Any:
    """The runtime's program of a .pte, by path or from its bytes (with its .ptd weights when given and this runtime
    takes them). From bytes the runtime keeps no reference to the buffer: the caller keeps it alive while the
    program runs (a dropped one crashes execute)."""
    import inspect

    from executorch.runtime import Runtime

    runtime = Runtime.get()
    takes_data = "data_path" in inspect.signature(runtime.load_program).parameters
    data = {"data_path": str(data_path)} if data_path and takes_data else {}
    return runtime.load_program(source if isinstance(source, bytes) else Path(source), **data)


def load_method(pte: str | Path, data_path: str | Path | None = None) -> Any:
    """Load a .pte with executorch.runtime (with its .ptd weights when given and this runtime takes them) and
    return its `forward` method."""
    # by path: the runtime keeps no reference to a bytes buffer
    return open_program(Path(pte), data_path).load_method("forward")


def data_beside(pte: str | Path) -> str | None:
    """The .ptd weights file in the .pte's folder (the first by name), None when there is none."""
    data = sorted(Path(pte).parent.glob("*.ptd"))
    return str(data[0]) if data else None
