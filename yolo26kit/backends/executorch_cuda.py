"""ExecuTorch's CUDA back-end (AOT Inductor inside ExecuTorch): its compile options and the kit's overrides of them,
the CudaPartitioner lowering with .pte/.ptd writing, the runtime's registered back-ends and AOTI C shims, the edge
program its preprocess receives and the passes and decompositions it applies, and loading and running a lowered
program; registered as `executorch_cuda` (prepare: `lower` with the back-end's defaults unless told otherwise).

Overrides patch `CudaBackend.get_aoti_compile_options` in the calling process: call them only inside an isolated
step's child process.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .. import env
from . import Backend, Loaded, executorch_runtime, exported, register, threads_or_default

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


def default_options() -> dict[str, Any]:
    """The Inductor options ExecuTorch's CUDA back-end compiles with by default (the ones that decide fallbacks)."""
    from executorch.backends.cuda.cuda_backend import CudaBackend

    options = CudaBackend.get_aoti_compile_options(compile_specs(True))
    return {k: options.get(k) for k in OPTION_KEYS}


DEFAULTS = "defaults"  # the back-end's own compile options (max-autotune on, Triton-only GEMM/conv choices)


# Inductor's SubprocException (a compile or autotune worker failed): its message carries the worker's own traceback
SUBPROCESS_FAILURE = "An exception occurred in a subprocess"
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception)\b(?::.*)?$")


# Triton's CompilationError names only where it failed ("at 24:20:"); its message then quotes the kernel's source,
# marks the column with a caret line and ends with the cause
TRITON_LOCATION = re.compile(r"CompilationError: at \d+:\d+:$")


def subprocess_error(text: str) -> str:
    """The last exception line of the worker traceback an Inductor SubprocException carries ("" when none): what a
    lowering that failed 'in a subprocess' actually ran into; for Triton's CompilationError, with its cause (the
    line after the caret under the quoted kernel source, e.g. `IncompatibleTypeErrorImpl('invalid operands ...')`;
    none where no caret line follows: the log lines after a traceback are no cause)."""
    start = text.find(SUBPROCESS_FAILURE)
    if start < 0:
        return ""
    details = [ln.rstrip() for ln in text[start:].split("The above exception was the direct cause", 1)[0].splitlines()]
    found = [i for i, ln in enumerate(details) if i and EXCEPTION_LINE.match(ln.strip())]
    if not found:
        return ""
    line = details[found[-1]].strip()
    if TRITON_LOCATION.search(line):
        after = details[found[-1] + 1:]
        caret = next((i for i, ln in enumerate(after) if ln.strip() == "^"), None)
        cause = next((ln.strip() for ln in after[caret + 1:] if ln.strip()), "") if caret is not None else ""
        line += f" {cause}" if cause else ""
    return line


def kit_overrides(autotune: bool = True, conv_backends: str = "") -> dict[str, Any]:
    """The entries the kit changes in the back-end's options: none for its defaults."""
    overrides: dict[str, Any] = {} if autotune else {"max_autotune": False}
    if conv_backends:
        overrides["max_autotune_conv_backends"] = conv_backends
    return overrides


def options_label(overrides: dict[str, Any] | None) -> str:
    """The lowering's options as a recorded condition: "defaults", or "kit: key=value, ..." naming every change."""
    if not overrides:
        return DEFAULTS
    return "kit: " + ", ".join(f"{k}={v!r}" for k, v in sorted(overrides.items()))


def _build_facts() -> dict[str, Any]:
    """What besides the program and options decides a lowered CUDA program: releases and the GPU."""
    from importlib import metadata

    import torch

    facts: dict[str, Any] = {"torch": torch.__version__}
    try:
        facts["triton"] = metadata.version("triton")
    except metadata.PackageNotFoundError:
        facts["triton"] = ""
    if torch.cuda.is_available():
        facts["gpu"] = torch.cuda.get_device_name()
        facts["capability"] = list(torch.cuda.get_device_capability())
    return facts


def lower(program: Any, folder: str | Path, stem: str, autotune: bool = True,
          overrides: dict[str, Any] | None = None, cache: bool = True) -> dict[str, Any]:
    """CudaPartitioner lowering of an exported program, to_executorch, the .pte and its .ptd weights written in
    `folder` (its own folder: concurrent lowerings write .ptd files); the AOTI shims the lowered code calls.

    `overrides` (with `max_autotune=False` added when autotune is off) patch the back-end's options in this
    process; `backend_options` in the result names them ("defaults" when none). A lowering that succeeded is kept
    in the kit's compile cache (artifacts.lowered_folder), keyed by program, options, releases and GPU; a failure
    raises and is never kept.
    """
    import time

    from ..bench import artifacts

    overrides = {**kit_overrides(autotune), **(overrides or {})}
    label = options_label(overrides)

    def run_lowering(out: Path) -> dict[str, Any]:
        from executorch.backends.cuda.cuda_partitioner import CudaPartitioner
        from executorch.exir import to_edge_transform_and_lower

        t0 = time.perf_counter()
        if overrides:
            override_options(**overrides)
        specs = compile_specs(overrides.get("max_autotune", True) is not False)
        lowered = to_edge_transform_and_lower(program, partitioner=[CudaPartitioner(specs)])
        executorch_program = lowered.to_executorch()
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{stem}.pte").write_bytes(executorch_program.buffer)
        if hasattr(executorch_program, "write_tensor_data_to_file"):
            executorch_program.write_tensor_data_to_file(str(out))
        blobs = b"".join(f.read_bytes() for f in out.iterdir() if f.is_file())
        shims = sorted({m.decode() for m in re.findall(rb"aoti_torch_cuda_\w+", blobs)})
        return {"pte_name": f"{stem}.pte", "bytes": (out / f"{stem}.pte").stat().st_size, "overrides": overrides,
                "backend_options": label, "shim_calls": shims, "lowering_seconds": time.perf_counter() - t0}

    folder = Path(folder)
    if cache:
        facts = artifacts.lowered_folder(program, "cuda", {"backend_options": label, **_build_facts()}, folder,
                                         run_lowering)
    else:
        facts = {**run_lowering(folder), "cached": False}
    return {**facts, "pte": str(folder / facts["pte_name"])}


def load_method(pte: str | Path) -> Any:
    """Load a .pte with executorch.runtime, with the .ptd weights beside it where there are any (external
    constants), and return its `forward` method."""
    return executorch_runtime.load_method(pte, executorch_runtime.data_beside(pte))


def run(pte: str | Path, inputs: list[Any] | tuple[Any, ...]) -> list[Any]:
    """Load a .pte (and its .ptd weights) and run `forward` once."""
    return list(load_method(pte).execute(list(inputs)))


def prepare(subject: Any, inputs: tuple[Any, ...], folder: str | Path, stem: str, autotune: bool = True,
            overrides: dict[str, Any] | None = None, cache: bool = True) -> dict[str, Any]:
    """Export (an nn.Module) and `lower` it into a folder of its own, `folder/stem.cuda` (.pte and .ptd); the
    facts add the lowering's (`backend_options`, `shim_calls` ...)."""
    import os

    facts = lower(exported(subject, inputs), Path(folder) / f"{stem}.cuda", stem, autotune=autotune,
                  overrides=overrides, cache=cache)
    return {**facts, "artifact": facts["pte"], "bytes": os.path.getsize(facts["pte"])}


def load(pte: str, inputs: tuple[Any, ...], threads: int | None = None) -> Loaded:
    """The .pte's `forward` (with the .ptd beside it) on `inputs` (CPU tensors: the program moves them)."""
    threads = threads_or_default(threads)
    executorch_runtime.reset_threadpool(threads)
    method = load_method(pte)
    return Loaded(lambda: method.execute(list(inputs)), {"threads": threads})


def runtime_shims(pattern: str = r"aoti_torch_cuda_\w+") -> dict[str, list[str]]:
    """The AOTI C-shim functions (`aoti_torch_cuda_*`) that the installed executorch's libraries define, per library."""
    import executorch

    from ..bench import forensics

    root = Path(list(executorch.__path__)[0])  # __path__, not __file__: some installs make it a namespace package
    found: dict[str, list[str]] = {}
    for lib in root.rglob("*.so*"):
        names = forensics.defined_symbols(str(lib), pattern)
        if names:
            found[str(lib.relative_to(root))] = sorted(set(names))
    return found


def runtime_backends() -> list[str]:
    """Back-ends registered in this executorch runtime (pybindings)."""
    from executorch.runtime import Runtime

    registry = Runtime.get().backend_registry
    return list(getattr(registry, "registered_backend_names", []) or [])


def plain_edge(program: Any) -> Any:
    """The exported program through plain `to_edge` (Edge dialect, IR validity unchecked, no partitioner)."""
    from executorch.exir import EdgeCompileConfig, to_edge

    return to_edge(program, compile_config=EdgeCompileConfig(_check_ir_validity=False)).exported_program()


def preprocess_passes(autotune: bool = False) -> list[Any]:
    """The graph passes the CUDA back-end's preprocess puts an edge graph through, in order: the AOTI back-end's
    view-copy pass where this release has it, then CudaBackend's custom passes. ImportError without the back-end."""
    from executorch.backends.cuda.cuda_backend import CudaBackend

    passes: list[Any] = []
    try:
        from executorch.backends.aoti.passes.replace_view_copy_with_view import ReplaceViewCopyWithViewPass

        passes.append(ReplaceViewCopyWithViewPass())
    except ImportError:
        pass
    return passes + list(CudaBackend.get_custom_passes(compile_specs(autotune)))


# Where releases keep the view-copy pass the CUDA back-end's preprocess applies (the AOTI one first).
VIEW_PASS_LOCATIONS = (
    ("executorch.backends.aoti.passes.replace_view_copy_with_view", "ReplaceViewCopyWithViewPass"),
    ("executorch.backends.cuda.passes.replace_slice_copy_with_slice", "ReplaceSliceCopyWithSlicePass"),
    ("executorch.backends.cuda.replace_slice_copy_with_slice", "ReplaceSliceCopyWithSlicePass"),
)


def op_name(target: Any) -> str:
    """`aten.slice_copy.Tensor` for ATen and edge ops alike (str(target) otherwise)."""
    name = getattr(target, "_name", None)
    if name is None and hasattr(target, "name") and callable(target.name):
        name = target.name()
    name = str(name or getattr(target, "__name__", target))
    return name.replace("::", ".")


def view_pass() -> dict[str, Any]:
    """Which view-copy pass the installed executorch ships: module, class, version and its {copy op: view op} table
    (read from the pass's module, whatever the table is called)."""
    import importlib

    version = env.package_version("executorch")
    tried = []
    for module_name, cls_name in VIEW_PASS_LOCATIONS:
        try:
            module = importlib.import_module(module_name)
            getattr(module, cls_name)
        except (ImportError, AttributeError) as exc:
            tried.append(f"{module_name}.{cls_name}: {type(exc).__name__}")
            continue
        mapping = {}
        for value in vars(module).values():
            if isinstance(value, dict) and value and all(hasattr(k, "name") for k in value):
                mapping.update({op_name(k): op_name(v) for k, v in value.items()})
        return {"found": True, "module": module_name, "name": cls_name, "executorch": version,
                "mapping": dict(sorted(mapping.items())), "tried": tried}
    return {"found": False, "module": "", "name": "", "executorch": version, "mapping": {}, "tried": tried}


def view_pass_targets() -> list[str]:
    """The view-copy ops (`slice_copy.Tensor`, ...) the installed view pass turns into views; [] without one. A
    view-copy op it leaves becomes a fallback kernel, which the CUDA back-end refuses unless it lists one."""
    return sorted({name.removeprefix("aten.") for name in view_pass()["mapping"]})


VIEW_COPY_OP = re.compile(r"aten\.\w+_copy(\.\w+)?")


def unlowered_view_copies(graph_module: Any, extra_decompositions: dict[Any, Any] | None = None) -> dict[str, int]:
    """The view-copy ops (`aten.*_copy`) of a graph that Inductor can neither lower nor decompose, with their counts:
    AOT Inductor hands each to an ATen fallback kernel, which this back-end refuses unless it has a C shim."""
    from torch._inductor.decomposition import select_decomp_table
    from torch._inductor.lowering import lowerings

    known = set(lowerings) | set(select_decomp_table()) | set(extra_decompositions or {})
    left: dict[str, int] = {}
    for node in graph_module.graph.nodes:
        if node.op != "call_function":
            continue
        name = op_name(node.target)
        aten = getattr(node.target, "_op", node.target)  # an edge op wraps its ATen overload
        if VIEW_COPY_OP.fullmatch(name) and aten not in known:
            left[name] = left.get(name, 0) + 1
    return dict(sorted(left.items()))


def view_copy_fallbacks(program: Any) -> dict[str, Any]:
    """Run the installed release's view pass on the edge graph the back-end's preprocess receives (on any device):
    the view-copy ops before it, and those it leaves that would become ATen fallback kernels."""
    import torch

    edge, source = preprocess_input(program)
    graph = edge.graph_module
    before = {}
    for node in graph.graph.nodes:
        name = op_name(node.target) if node.op == "call_function" else ""
        if VIEW_COPY_OP.fullmatch(name):
            before[name] = before.get(name, 0) + 1
    passes = [p for p in preprocess_passes() if type(p).__name__ == view_pass()["name"]]
    for one in passes:
        result = one(graph)
        graph = result.graph_module if result is not None else graph
    try:
        extra = decomposition_table()
    except (ImportError, AttributeError):  # a release without the back-end or without its own decompositions
        extra = {}
    return {"executorch": env.package_version("executorch"), "torch": torch.__version__.split("+")[0],
            "view_pass": view_pass()["name"], "view_copies": dict(sorted(before.items())),
            "left": unlowered_view_copies(graph, extra), "source": source}


def decomposition_table() -> dict[Any, Any]:
    """The decompositions the CUDA back-end applies before AOT Inductor compiles ({} when it has none);
    ImportError without the back-end."""
    from executorch.backends.cuda.cuda_backend import CudaBackend

    return CudaBackend.get_decomposition_table() or {}


class _Captured(Exception):
    """Raised inside the CUDA back-end's preprocess once its edge program is captured."""


def preprocess_input(program: Any, autotune: bool = True) -> tuple[Any, str]:
    """The edge program the CUDA back-end's preprocess receives (partitioned by CudaPartitioner, not yet moved to
    the device), and where it came from.

    Stops preprocess where it moves the program to the device, so it runs on a CPU-only machine too. Falls back to
    plain `to_edge` when the CUDA back-end cannot be imported.
    """
    import importlib

    try:
        import executorch.backends.aoti.aoti_backend as aoti_backend
        import torch.export.passes as export_passes
        from executorch.backends.cuda.cuda_partitioner import CudaPartitioner
        from executorch.exir import to_edge_transform_and_lower
    except ImportError:
        return plain_edge(program), "to_edge"
    box: dict[str, Any] = {}

    def capture(edge: Any, _device: Any) -> Any:
        box["program"] = edge
        raise _Captured()

    modules = [aoti_backend, export_passes, importlib.import_module("executorch.backends.cuda.cuda_backend")]
    saved = [(m, m.__dict__.get("move_to_device_pass")) for m in modules]
    for m, _ in saved:
        m.move_to_device_pass = capture
    try:
        to_edge_transform_and_lower(program, partitioner=[CudaPartitioner(compile_specs(autotune))])
    except Exception:  # _Captured, wrapped or not by the lowering machinery
        if "program" not in box:
            raise
    finally:
        for m, original in saved:
            if original is not None:
                m.move_to_device_pass = original
    return box["program"], "CudaBackend.preprocess input (to_edge_transform_and_lower + CudaPartitioner)"


register(Backend(name="executorch_cuda", title="ExecuTorch, CUDA back-end (AOT Inductor inside ExecuTorch)",
                 needs_cuda=True, modules=("executorch",), load=load, prepare=prepare,
                 aliases=("executorch-cuda", "et_cuda"), input_device="cuda",
                 cpu_inputs_at_load=True))
