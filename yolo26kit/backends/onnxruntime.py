"""ONNX Runtime: torch.onnx's dynamo exporter writes the .onnx (kept in the run's compile cache, keyed by the
exported program and the exporter's versions), an InferenceSession with one execution provider and as many intra-op
threads as torch runs it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import Backend, Loaded, artifact_facts, installed, program_of, register, threads_or_default

MODULES = ("onnx", "onnxscript", "onnxruntime")  # the exporter needs onnx and onnxscript, the runtime onnxruntime


def providers() -> list[str]:
    """ONNX Runtime's available execution providers ([] when onnxruntime is missing)."""
    if not installed("onnxruntime"):
        return []
    import onnxruntime

    return list(onnxruntime.get_available_providers())


def key_options(program: Any) -> dict[str, Any]:
    """What decides the .onnx besides the program (artifacts.program_key adds graph, weights, ranges, torch): the
    exporter's packages, its settings here, and the shapes the program was exported at."""
    from ..bench import artifacts
    from ..env import package_version

    versions = {package: package_version(package) or "" for package in ("onnx", "onnxscript", "onnx_ir")}
    return {"exporter": "torch.onnx.export(program, dynamo=True).save(external_data=False)", **versions,
            "shapes": artifacts.input_shapes(program)}


def onnx_bytes(program: Any) -> tuple[bytes, dict[str, Any]]:
    """torch.onnx's dynamo exporter on an ExportedProgram: the .onnx file's bytes (one self-contained file: the
    weights inside, as for any program under protobuf's 2 GiB, every YOLO26 included)."""
    import tempfile

    import torch

    with tempfile.TemporaryDirectory(prefix="yolo26kit-onnx-") as folder:
        path = Path(folder) / "model.onnx"
        with torch.no_grad():
            torch.onnx.export(program, dynamo=True).save(str(path), external_data=False)
        return path.read_bytes(), {}


def export_onnx(program: Any, path: str | Path) -> bool:
    """Write `program` as ONNX to `path`, from the run's compile cache when the same program was exported before
    with the same exporter (artifacts.cached_artifact); whether it came from the cache."""
    from ..bench import artifacts

    data, facts = artifacts.cached_artifact(program, "onnx", "dynamo", ".onnx", key_options(program), onnx_bytes)
    Path(path).write_bytes(data)
    return facts["cached"]


def prepare(subject: Any, inputs: tuple[Any, ...], folder: str | Path, stem: str) -> dict[str, Any]:
    """torch.export of an nn.Module on `inputs` (an ExportedProgram as it is), then torch.onnx.export (dynamo) to
    `folder/stem.onnx`, or that file from the run's compile cache (export_onnx)."""
    path = Path(folder) / f"{stem}.onnx"
    return artifact_facts(path, export_onnx(program_of(subject, inputs), path))


def load(onnx_path: str, inputs: tuple[Any, ...], provider: str = "CPUExecutionProvider",
         threads: int | None = None) -> Loaded:
    """An InferenceSession of the .onnx on `provider`, fed `inputs` (CPU tensors or arrays) by input name; `info`
    names the providers the session really took."""
    import onnxruntime as ort

    threads = threads_or_default(threads)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(onnx_path, options, providers=[provider])
    feed = {i.name: x.numpy() if hasattr(x, "numpy") else x for i, x in zip(session.get_inputs(), inputs)}
    return Loaded(lambda: session.run(None, feed), {"threads": threads, "providers": session.get_providers()})


register(Backend(name="onnxruntime", title="ONNX Runtime (torch.onnx dynamo export)", needs_cuda=False,
                 modules=MODULES, load=load, prepare=prepare, cpu_inputs_at_load=True))
