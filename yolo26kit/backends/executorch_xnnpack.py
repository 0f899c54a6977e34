"""ExecuTorch lowered to XNNPACK (a CPU back-end): to_edge_transform_and_lower with the XnnpackPartitioner, the .pte
written from the kit's compile cache when the same program was lowered before (artifacts.lowered_program), run by
the ExecuTorch runtime with as many threads as torch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..bench import artifacts
from . import Backend, Loaded, artifact_facts, executorch_runtime, program_of, register, threads_or_default


def lower_edge(program: Any, check_ir_validity: bool = True) -> Any:
    """An exported program lowered to XNNPACK, before to_executorch: the EdgeProgramManager, whose graph shows the
    delegate calls and what stayed outside them. `check_ir_validity` False lets through graphs the edge verifier
    rejects (the default config checks)."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower

    return to_edge_transform_and_lower(program, partitioner=[XnnpackPartitioner()],
                                       compile_config=EdgeCompileConfig(_check_ir_validity=check_ir_validity))


def lower(program: Any) -> bytes:
    """The .pte bytes of an exported program lowered to XNNPACK."""
    return lower_edge(program).to_executorch().buffer


def prepare(subject: Any, inputs: tuple[Any, ...], folder: str | Path, stem: str) -> dict[str, Any]:
    """Export (an nn.Module), lower (or take the cached lowering) and write `folder/stem.pte`."""
    data, facts = artifacts.lowered_program(program_of(subject, inputs), "xnnpack", lambda ep: (lower(ep), {}))
    path = Path(folder) / f"{stem}.pte"
    path.write_bytes(data)
    return artifact_facts(path, facts["cached"])


def load(pte: str, inputs: tuple[Any, ...], threads: int | None = None) -> Loaded:
    """The .pte's `forward` on `inputs` (CPU tensors), the runtime's threadpool sized first."""
    threads = threads_or_default(threads)
    executorch_runtime.reset_threadpool(threads)
    method = executorch_runtime.load_method(pte)
    return Loaded(lambda: method.execute(list(inputs)), {"threads": threads})


register(Backend(name="executorch_xnnpack", title="ExecuTorch, XNNPACK (CPU)", needs_cuda=False,
                 modules=("executorch",), load=load, prepare=prepare, aliases=("executorch-xnnpack", "xnnpack"),
                 cpu_inputs_at_load=True))
