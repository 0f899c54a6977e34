"""ExecuTorch's CUDA back-end (AOT Inductor inside ExecuTorch): its compile options and the kit's overrides of them,
the CudaPartitioner lowering with .pte/.ptd writing, the runtime's registered back-ends and AOTI C shims, and
loading and running a lowered program.

Overrides patch `CudaBackend.get_aoti_compile_options` in the calling process: call them only inside an isolated
step's child process.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

OPTION_KEYS = ("max_autotune", "max_autotune_gemm_backends", "max_autotune_conv_backends",
               "aot_inductor.link_libtorch", "emulate_precision_casts")


def compile_specs(autotune: bool) -> list:
    """CudaPartitioner's compile specs: the method name, and `max_autotune=OFF` when autotune is off."""
    from executorch.backends.cuda.cuda_backend import CudaBackend
    from executorch.exir.backend.compile_spec_schema import CompileSpec

    specs = [CudaBackend.generate_method_name_compile_spec("forward")]
    if not autotune:
        specs.append(CompileSpec("max_autotune", b"OFF"))
    return specs


def override_options(**overrides: Any) -> None:
    """Override entries of the CUDA back-end's AOTI options (the calling process only)."""
    from executorch.backends.cuda.cuda_backend import CudaBackend

    original = CudaBackend.get_aoti_compile_options.__func__

    def overridden(cls, compile_specs):
        return {**original(cls, compile_specs), **overrides}

    CudaBackend.get_aoti_compile_options = classmethod(overridden)


def force_autotune_off() -> None:
    """Make the CUDA back-end's AOTI options say max_autotune=False (older releases ignore the compile spec)."""
    override_options(max_autotune=False)


def default_options() -> dict[str, Any]:
    """The Inductor options ExecuTorch's CUDA back-end compiles with by default (the ones that decide fallbacks)."""
    from executorch.backends.cuda.cuda_backend import CudaBackend

    options = CudaBackend.get_aoti_compile_options(compile_specs(True))
    return {k: options.get(k) for k in OPTION_KEYS}


def lower(program: Any, folder: str | Path, stem: str, autotune: bool = True,
          overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """CudaPartitioner lowering of an exported program, to_executorch, the .pte and its .ptd weights written in
    `folder` (its own folder: concurrent lowerings write .ptd files); the AOTI shims the lowered code calls."""
    from executorch.backends.cuda.cuda_partitioner import CudaPartitioner
    from executorch.exir import to_edge_transform_and_lower

    overrides = dict(overrides or {})
    if not autotune:
        overrides.setdefault("max_autotune", False)
    if overrides:
        override_options(**overrides)
    lowered = to_edge_transform_and_lower(program, partitioner=[CudaPartitioner(compile_specs(autotune))])
    executorch_program = lowered.to_executorch()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    pte = folder / f"{stem}.pte"
    pte.write_bytes(executorch_program.buffer)
    if hasattr(executorch_program, "write_tensor_data_to_file"):
        executorch_program.write_tensor_data_to_file(str(folder))
    blobs = b"".join(f.read_bytes() for f in folder.iterdir() if f.is_file())
    shims = sorted({m.decode() for m in re.findall(rb"aoti_torch_cuda_\w+", blobs)})
    return {"pte": str(pte), "bytes": pte.stat().st_size, "overrides": overrides, "shim_calls": shims}


def runtime_shims(pattern: str = r"aoti_torch_cuda_\w+") -> dict[str, list[str]]:
    """The AOTI C-shim functions (`aoti_torch_cuda_*`) that the installed executorch's libraries define, per library."""
    import executorch

    from .. import forensics

    found: dict[str, list[str]] = {}
    for lib in Path(executorch.__file__).parent.rglob("*.so*"):
        names = forensics.defined_symbols(str(lib), pattern)
        if names:
            found[str(lib.relative_to(Path(executorch.__file__).parent))] = sorted(set(names))
    return found


def runtime_backends() -> list[str]:
    """Back-ends registered in this executorch runtime (pybindings)."""
    from executorch.runtime import Runtime

    registry = Runtime.get().backend_registry
    return list(getattr(registry, "registered_backend_names", []) or [])
