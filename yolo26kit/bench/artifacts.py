"""Artifacts kept in the run's compile cache ($YOLO26KIT_CACHE), keyed by what decides them, so a warm run reuses them.

Inductor and Triton cache their own work (the runner points TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR into the
cache root, so Inductor's max-autotune benchmark results, kept by its local autotune cache under
`inductor/cache/`, survive across runs too); what they do not cover is cached here: ExecuTorch programs lowered to
XNNPACK (`lowered_program`; lowering is pure Python and costs 10–100 s per program), ONNX files from torch.onnx's
dynamo exporter (`cached_artifact`, through backends.onnxruntime.export_onnx), ExecuTorch CUDA lowerings
(`lowered_folder`: the .pte and its .ptd weights; with the back-end's default max-autotune a whole model takes many
minutes), the programs of ultralytics' own exporter (`cached_folder`, through backends.ultralytics_export) and
crash diagnoses (`crash_site_file`: a native backtrace under a debugger costs minutes on a GPU runner). Only
successes are kept: a failing lowering is repeated every run, so its error is always this run's. A result served from the cache says
so (`cached: True`), and `run.json` marks the whole run `warm`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

from ..paths import CACHE_ENV



def cache_root() -> Path | None:
    """The run's compile-cache root, None when the run has none."""
    root = os.environ.get(CACHE_ENV, "")
    return Path(root) if root else None


def program_key(program: Any, options: dict[str, Any] | None = None) -> str:
    """A digest of what decides a compiled program: the program's own (`program_digest`; a DeferredProgram's from its
    memo) and the options."""
    digest = program.digest() if isinstance(program, DeferredProgram) else program_digest(program)
    return hashlib.sha256(f"{digest}{json.dumps(options or {}, sort_keys=True, default=str)}".encode()).hexdigest()[:32]


def program_digest(program: Any) -> str:
    """A digest of an exported program: graph code, signature, ranges, weights, the inputs' device, dtype and
    shape, torch version."""
    import torch

    h = hashlib.sha256()
    # range_constraints in a fixed order: its symbols' order follows string hashing, which differs per process
    ranges = sorted(f"{k}: {v}" for k, v in program.range_constraints.items())
    for part in (torch.__version__, str(program.graph_module.code), str(program.graph_signature), str(ranges)):
        h.update(part.encode())
    hash_tensors(h, {**program.state_dict, **program.constants})
    for node in program.graph.nodes:  # the device the inputs live on decides CPU vs CUDA code
        val = node.meta.get("val")
        if node.op == "placeholder" and hasattr(val, "device"):
            h.update(f"{node.name}:{val.device.type}:{val.dtype}:{tuple(val.shape)}".encode())
    return h.hexdigest()


class DeferredProgram:
    """A program made only when a step needs it: `make()` returns (the program, facts about its making).

    Its digest, input shapes and those facts come from the cache's memo of an earlier making under the same `key()`
    (`exports/<key>.json`), so a warm run that finds every artifact it needs never makes the program (an export of
    YOLO26 costs 15-30 s on a laptop's CPU). The key must name everything that decides the program.
    """

    def __init__(self, key: Callable[[], str], make: Callable[[], tuple[Any, dict[str, Any]]]) -> None:
        self._key, self._make = key, make
        self._program: Any = None
        self._facts: dict[str, Any] = {}

    @property
    def program(self) -> Any:
        """The program (made on first use)."""
        if self._program is None:
            self._program, self._facts = self._make()
        return self._program

    @functools.cached_property
    def _memo(self) -> dict[str, Any]:
        """{"digest", "input_shapes", "facts"} of the program, from the cache's memo (made by making it when missing)."""
        root = cache_root()
        path = root / "exports" / f"{self._key()}.json" if root else None
        memo = read_json_object(path) if path else {}
        if not {"digest", "input_shapes"} <= memo.keys():
            program = self.program
            memo = {"digest": program_digest(program), "input_shapes": input_shapes(program), "facts": self._facts}
            if path:
                write_atomic(path, json.dumps(memo, default=str).encode())
        return memo

    def digest(self) -> str:
        """`program_digest` of the program."""
        return self._memo["digest"]

    def input_shapes(self) -> list[str]:
        """`input_shapes` of the program."""
        return list(self._memo["input_shapes"])

    def facts(self) -> dict[str, Any]:
        """What `make` said about the program (from the memo when it was not made here)."""
        return dict(self._facts) if self._program is not None else dict(self._memo.get("facts") or {})


class ModuleExport(DeferredProgram):
    """An nn.Module on example inputs, exported (torch.export, no autograd) only when a step needs the program;
    keyed by `module_key`."""

    def __init__(self, module: Any, inputs: tuple[Any, ...]) -> None:
        self.module, self.inputs = module, tuple(inputs)
        super().__init__(lambda: module_key(self.module, self.inputs), self._export)

    def _export(self) -> tuple[Any, dict[str, Any]]:
        import torch

        with torch.no_grad():
            return torch.export.export(self.module, self.inputs), {}


def as_program(program: Any) -> Any:
    """The program itself (a DeferredProgram makes it here)."""
    return program.program if isinstance(program, DeferredProgram) else program


def module_key(module: Any, inputs: tuple[Any, ...]) -> str:
    """A digest of what decides torch.export of `module` on `inputs`: the code of every class and patched method of
    its submodules (their Python bytecode), their plain and tensor attributes, parameters and buffers, the inputs,
    and the versions of torch, ultralytics and this kit's own source (which patches models)."""
    import marshal

    import torch

    from ..env import package_version

    h = hashlib.sha256()
    h.update(json.dumps([torch.__version__, _kit_source_digest(), package_version("ultralytics") or ""]).encode())
    seen: set[type] = set()
    for name, sub in module.named_modules():
        h.update(f"{name}:{type(sub).__module__}.{type(sub).__qualname__}".encode())
        for cls in type(sub).__mro__:
            if cls in seen or cls.__module__.startswith("torch.") or cls is object:
                continue
            seen.add(cls)
            for attr, value in sorted(vars(cls).items()):
                code = getattr(getattr(value, "__func__", value), "__code__", None)
                if code is not None:
                    h.update(attr.encode() + marshal.dumps(code))
        tensors = {}
        for attr, value in sorted(vars(sub).items()):
            if attr.startswith("_"):
                continue
            if isinstance(value, torch.Tensor):
                tensors[attr] = value
            elif isinstance(value, (bool, int, float, str, tuple, list, type(None))):
                h.update(f"{attr}={value!r}".encode())
            elif hasattr(value, "__code__") or hasattr(value, "__func__"):  # a method patched on the instance
                h.update(attr.encode() + marshal.dumps(getattr(value, "__func__", value).__code__))
        hash_tensors(h, tensors)
        hooks = [*sub._forward_hooks.values(), *sub._forward_pre_hooks.values()]
        h.update(b"".join(marshal.dumps(getattr(hook, "__code__", b"")) for hook in hooks))
    hash_tensors(h, {**dict(module.named_parameters()), **dict(module.named_buffers())})
    hash_tensors(h, {str(i): x for i, x in enumerate(inputs)})
    return h.hexdigest()[:32]


@functools.lru_cache(maxsize=1)
def _kit_source_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(Path(__file__).resolve().parents[1].rglob("*.py")):
        h.update(path.read_bytes())
    return h.hexdigest()


def hash_tensors(h: Any, tensors: dict[str, Any]) -> None:
    """Feed named tensors (name, dtype, shape, device and bytes, in name order) into the hash `h`."""
    import torch

    for name in sorted(tensors):
        value = tensors[name]
        h.update(name.encode())
        if isinstance(value, torch.Tensor):
            t = value.detach().to("cpu").contiguous()
            h.update(f"{t.dtype}{tuple(t.shape)}{value.device.type}".encode())
            h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")


def served(outcome: Any) -> bool | None:
    """Whether an isolated step's artifact came from the compile cache (its value's boolean `cached`); None for a
    step that makes no artifact the cache keeps (eager, export, torch.compile), a failed one or none: run.json
    counts no miss for it."""
    value = outcome.value if outcome is not None and outcome.ok and isinstance(outcome.value, dict) else {}
    return value["cached"] if isinstance(value.get("cached"), bool) else None


def write_atomic(path: Path, data: bytes) -> None:
    """Write through a temporary file in the same folder: concurrent notebooks never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def read_json_object(path: str | Path) -> dict[str, Any]:
    """A JSON file's object, or {} when it is missing, unreadable or not an object (a cache entry or record that
    cannot be read counts as absent)."""
    try:
        value = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def cached_artifact(program: Any, folder: str, kind: str, suffix: str, options: dict[str, Any],
                    lower: Callable[[Any], tuple[bytes, dict[str, Any]]]) -> tuple[bytes, dict[str, Any]]:
    """`lower(program)` → (one file's bytes, facts), or both from the cache under `folder/kind-<key><suffix>` when
    the same program was made into that kind of file before.

    The key is `program_key(program, options)`: `options` must name everything besides the program that decides
    the file (the tool's versions and settings). Only a lowering that returned is kept; the facts come back with
    `cached` set (True: from the cache, with the facts the lowering that made it recorded).
    """
    root = cache_root()
    stem = root / folder / f"{kind}-{program_key(program, options)}" if root else None
    if stem and stem.with_suffix(suffix).exists() and stem.with_suffix(".json").exists():
        facts = json.loads(stem.with_suffix(".json").read_text())
        return stem.with_suffix(suffix).read_bytes(), {**facts, "cached": True}
    data, facts = lower(as_program(program))
    if stem:
        write_atomic(stem.with_suffix(suffix), data)
        write_atomic(stem.with_suffix(".json"), json.dumps(facts, default=str).encode())
    return data, {**facts, "cached": False}


def lowered_program(program: Any, backend: str, lower: Callable[[Any], tuple[bytes, dict[str, Any]]]
                    ) -> tuple[bytes, dict[str, Any]]:
    """`lower(program)` → (.pte bytes, facts), or both from the cache when this program was lowered before.

    The key adds the back-end name and the executorch version to `program_key`; the facts come back with
    `cached` set (True: from the cache, with the facts the lowering that made it recorded).
    """
    from importlib import metadata

    return cached_artifact(program, "executorch", backend, ".pte",
                           {"backend": backend, "executorch": metadata.version("executorch")}, lower)


def input_shapes(program: Any) -> list[str]:
    """The shapes of a program's placeholders (inputs, weights, buffers), in graph order: what a static program is
    specialized to (its graph code need not spell them; symbolic dims print as their symbols); a DeferredProgram's
    from its memo."""
    if isinstance(program, DeferredProgram):
        return program.input_shapes()
    return [f"{node.name}:{tuple(node.meta['val'].shape)}" for node in program.graph.nodes
            if node.op == "placeholder" and hasattr(node.meta.get("val"), "shape")]


def lowered_folder(program: Any, kind: str, options: dict[str, Any], folder: Path,
                   lower: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
    """`lower(folder)` writes a lowered program's files (.pte, .ptd ...) into `folder` and returns facts; or the
    files come from the cache when the same program was lowered before with the same options and versions.

    The key adds `kind`, `options` (everything that decides the lowering: the back-end's options, versions, the
    GPU) and the executorch version to `program_key`. Only a lowering that returned is kept (a failure raises,
    so it is repeated every run); the facts come back with `cached` set.
    """
    from importlib import metadata

    key = program_key(program, {"kind": kind, "executorch": metadata.version("executorch"), **options})
    return cached_folder("executorch", f"{kind}-{key}", folder, lower)


def cached_folder(area: str, name: str, folder: Path, make: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
    """`make(folder)` writes files (sub-folders too) into `folder` and returns facts; or the files come from the
    cache entry `area/name` (the caller's key: everything that decides the files) when one was made before. Only
    a `make` that returned is kept; the facts come back with `cached` set."""
    import shutil

    root = cache_root()
    entry = root / area / name if root else None
    folder = Path(folder)
    if entry is not None and (entry / "facts.json").exists():
        shutil.copytree(entry, folder, dirs_exist_ok=True, ignore=lambda _, names: [n for n in names
                                                                                    if n == "facts.json"])
        return {**json.loads((entry / "facts.json").read_text()), "cached": True}
    facts = make(folder)
    if entry is not None:
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=entry.parent, prefix=f".{entry.name}-"))
        shutil.copytree(folder, tmp, dirs_exist_ok=True)
        (tmp / "facts.json").write_text(json.dumps(facts, default=str))
        try:
            os.rename(tmp, entry)  # whole or not at all; a concurrent writer of the same key wins
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
    return {**facts, "cached": False}


def crash_site_file(site: str) -> Path | None:
    """Where a diagnosed crash site is kept across runs: per Python executable and torch build, None without a cache."""
    root = cache_root()
    if root is None or not site:
        return None
    torch_version = sys.modules["torch"].__version__ if "torch" in sys.modules else ""
    stack = hashlib.sha256(f"{sys.executable}|{torch_version}".encode()).hexdigest()[:12]
    return root / "crash-sites" / f"{stack}-{site}.json"
