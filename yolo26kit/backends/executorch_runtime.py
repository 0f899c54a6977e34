"""ExecuTorch's runtime (pybindings), shared by its back-ends: the threadpool size and loading a .pte with its .ptd
weights. Registers no back-end."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def reset_threadpool(threads: int) -> None:
    """Size the runtime's threadpool (XNNPACK's threads) like torch's, where this executorch can."""
    from executorch.extension.pybindings import portable_lib

    if hasattr(portable_lib, "_unsafe_reset_threadpool"):
        portable_lib._unsafe_reset_threadpool(threads)


def load_method(pte: str | Path, data_path: str | Path | None = None) -> Any:
    """Load a .pte with executorch.runtime (with its .ptd weights when given and this runtime takes them) and
    return its `forward` method."""
    import inspect

    from executorch.runtime import Runtime

    runtime = Runtime.get()
    takes_data = "data_path" in inspect.signature(runtime.load_program).parameters
    # by path: the runtime keeps no reference to a bytes buffer
    program = runtime.load_program(Path(pte), **({"data_path": str(data_path)} if data_path and takes_data else {}))
    return program.load_method("forward")


def data_beside(pte: str | Path) -> str | None:
    """The .ptd weights file in the .pte's folder (the first by name), None when there is none."""
    data = sorted(Path(pte).parent.glob("*.ptd"))
    return str(data[0]) if data else None
