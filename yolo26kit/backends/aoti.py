"""AOT Inductor: a .pt2 package compiled ahead of time (yolo26kit.aoti: the kit's package cache) and loaded with
aoti_load_package. Loading has crashed whole processes on some stacks: load it inside a step run through
yolo26kit.aoti.run_step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..bench import aoti_package as kit_aoti
from . import Backend, Loaded, artifact_facts, program_of, register, threads_or_default


def prepare(subject: Any, inputs: tuple[Any, ...], folder: str | Path, stem: str,
            inductor_configs: dict[str, Any] | None = None) -> dict[str, Any]:
    """Export (an nn.Module) and compile the package `folder/stem.pt2`, from the kit's cache when it has it."""
    path, cached = kit_aoti.compile_package(program_of(subject, inputs), str(Path(folder) / f"{stem}.pt2"),
                                            inductor_configs)
    return artifact_facts(path, cached)


def load_package(package: str | Path) -> Any:
    """The loaded package itself, callable on any inputs (`load` binds it to one set); inside an isolated step."""
    return kit_aoti.load(str(package))


def load(package: str, inputs: tuple[Any, ...], threads: int | None = None) -> Loaded:
    """The loaded package, called on `inputs`."""
    threads = threads_or_default(threads)
    runner = load_package(package)
    return Loaded(lambda: runner(*inputs), {"threads": threads})


register(Backend(name="aoti", title="AOT Inductor (.pt2 package)", needs_cuda=False, modules=("torch",),
                 load=load, prepare=prepare))
