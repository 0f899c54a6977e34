"""Back-ends the investigations share, in one registry: one module per back-end, each with one way to prepare a
program ahead of time (export, then compile / lower / write an artifact) and one way to load it and run it.

  eager               PyTorch eager
  compile             torch.compile, default mode          compile_cudagraphs  mode="reduce-overhead" (CUDA)
  aoti                AOT Inductor package (yolo26kit.aoti: the kit's package cache)
  executorch_xnnpack  ExecuTorch lowered to XNNPACK (.pte; lowerings cached through yolo26kit.artifacts)
  executorch_cuda     ExecuTorch's CUDA back-end (.pte + .ptd; its options, shims and preprocess input too)
  onnxruntime         torch.onnx (dynamo) export run by ONNX Runtime (one execution provider)
  tensorrt            Torch-TensorRT (CUDA)
  ultralytics_export  ultralytics' own YOLO(...).export(format=...), as shipped

`prepare(subject, inputs, folder, stem, **options)` takes an nn.Module (exported here) or an ExportedProgram and
returns facts: `artifact` (its path), `bytes`, `cached` and what else the back-end records. `load(target, inputs,
**options)` takes the artifact's path (the nn.Module itself for a back-end without `prepare`) and returns a
`Loaded`: call it with no argument to run the program once on `inputs`. Heavy imports happen inside these
functions: call them in an isolated step's child process.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import warnings
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Callable

from .. import env

Prepare = Callable[..., dict[str, Any]]


@dataclass
class Loaded:
    """A loaded program bound to its example inputs: calling it runs the program once; `info` says how it was set
    up (threads, providers ...)."""

    fn: Callable[[], Any]
    info: dict[str, Any] = field(default_factory=dict)

    def __call__(self) -> Any:
        return self.fn()


@dataclass(frozen=True)
class Backend:
    """One registered back-end: what it is, what it needs, and its prepare / load functions."""

    name: str
    title: str
    needs_cuda: bool
    modules: tuple[str, ...]  # Python modules it imports (checked with find_spec, never imported by `status`)
    load: Callable[..., Loaded]
    prepare: Prepare | None = None  # the ahead-of-time step; None: load takes the nn.Module itself
    aliases: tuple[str, ...] = ()  # other names callers and ledgers use for it (`executorch-cuda`, `et_cuda`)
    input_device: str = "cpu"  # where its example inputs must live: cuda for a back-end that runs on the GPU
    cpu_inputs_at_load: bool = False  # its loaded program takes CPU inputs on any device (it moves them itself)

    @property
    def has_prepare(self) -> bool:
        return self.prepare is not None

    def named(self, name: str) -> bool:
        """Whether `name` is this back-end's name or one of its aliases."""
        return name == self.name or name in self.aliases


_REGISTRY: dict[str, Backend] = {}
# The order `names()` lists them in (simplest first); a back-end not named here comes after, by name.
ORDER = ("eager", "compile", "compile_cudagraphs", "aoti", "executorch_xnnpack", "executorch_cuda", "onnxruntime",
         "tensorrt", "ultralytics_export")


def register(backend: Backend) -> Backend:
    """Add a back-end to the registry (called by each module of yolo26kit.backends)."""
    _REGISTRY[backend.name] = backend
    return backend


@cache
def _discover() -> None:
    from . import __path__ as package_path

    for module in pkgutil.iter_modules(package_path):
        try:
            importlib.import_module(f"{__name__}.{module.name}")
        except Exception as exc:  # one broken back-end module must not hide the others
            warnings.warn(f"back-end module {module.name!r} failed to import: {type(exc).__name__}: {exc}")


def names() -> list[str]:
    """Every registered back-end's name, in ORDER."""
    _discover()
    rank = {name: i for i, name in enumerate(ORDER)}
    return sorted(_REGISTRY, key=lambda name: (rank.get(name, len(ORDER)), name))


def get(name: str) -> Backend:
    """A back-end by name or alias; a miss lists the known names."""
    _discover()
    found = _REGISTRY.get(name) or next((b for b in _REGISTRY.values() if b.named(name)), None)
    if found is None:
        raise KeyError(f"no back-end named {name!r} (known: {', '.join(names())})")
    return found


def installed(module: str) -> bool:
    """Whether a module can be imported here (without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def status(name: str) -> tuple[bool, str]:
    """(usable here, why not): a module it needs that is missing, or CUDA it needs without a GPU; (True, "") else."""
    backend = get(name)
    missing = [m for m in backend.modules if not installed(m)]
    if missing:
        return False, f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed"
    if backend.needs_cuda and not env.cuda_available():
        return False, "needs CUDA: no GPU here"
    return True, ""


# --- helpers the back-end modules share ----------------------------------------------------------------

def threads_or_default(threads: int | None) -> int:
    """The thread count a back-end runs with: the one given, else torch's intra-op thread count."""
    import torch

    return threads if threads else torch.get_num_threads()


def exported(subject: Any, inputs: tuple[Any, ...]) -> Any:
    """An ExportedProgram as it is, or torch.export of an nn.Module on `inputs` (no autograd)."""
    import torch

    if isinstance(subject, torch.export.ExportedProgram):
        return subject
    with torch.no_grad():
        return torch.export.export(subject, tuple(inputs))


def program_of(subject: Any, inputs: tuple[Any, ...]) -> Any:
    """An ExportedProgram or a program to come (artifacts.DeferredProgram) as it is, or an nn.Module's export on
    `inputs` to come (artifacts.ModuleExport: exported only when its artifact is not in the compile cache)."""
    import torch

    from ..bench.artifacts import DeferredProgram, ModuleExport

    if isinstance(subject, (torch.export.ExportedProgram, DeferredProgram)):
        return subject
    return ModuleExport(subject, inputs)


def artifact_facts(path: str | Path, cached: bool = False, **extra: Any) -> dict[str, Any]:
    """The facts every prepare returns: the artifact's path and size, and whether it came from the compile cache."""
    import os

    return {"artifact": str(path), "bytes": os.path.getsize(path), "cached": cached, **extra}


def runner(name: str, subject: Any, inputs: tuple[Any, ...], folder: str | Path = "", stem: str = "model",
           prepare_options: dict[str, Any] | None = None, **load_options: Any) -> Loaded:
    """Prepare (when the back-end has that step; the artifact goes to `folder`) and load in one call."""
    backend = get(name)
    target = subject
    if backend.prepare is not None:
        facts = backend.prepare(subject, tuple(inputs), Path(folder), stem, **(prepare_options or {}))
        if "skipped" in facts:
            raise RuntimeError(f"{name}: {facts['skipped']}")
        target = facts["artifact"]
    return backend.load(target, tuple(inputs), **load_options)


__all__ = ["ORDER", "Backend", "Loaded", "artifact_facts", "exported", "get", "installed", "names", "register",
           "runner", "status", "threads_or_default"]
