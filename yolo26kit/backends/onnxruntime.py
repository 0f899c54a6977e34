"""ONNX Runtime: torch.onnx's dynamo exporter writes the .onnx, an InferenceSession with one execution provider and
as many intra-op threads as torch runs it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import Backend, Loaded, artifact_facts, installed, register, threads_or_default

MODULES = ("onnx", "onnxscript", "onnxruntime")  # the exporter needs onnx and onnxscript, the runtime onnxruntime


def providers() -> list[str]:
    """ONNX Runtime's available execution providers ([] when onnxruntime is missing)."""
    if not installed("onnxruntime"):
        return []
    import onnxruntime

    return list(onnxruntime.get_available_providers())


def prepare(subject: Any, inputs: tuple[Any, ...], folder: str | Path, stem: str) -> dict[str, Any]:
    """torch.onnx.export (dynamo) of an nn.Module on `inputs`, or of an ExportedProgram, to `folder/stem.onnx`."""
    import torch

    path = str(Path(folder) / f"{stem}.onnx")
    with torch.no_grad():
        if isinstance(subject, torch.export.ExportedProgram):
            torch.onnx.export(subject, dynamo=True).save(path)
        else:
            torch.onnx.export(subject, tuple(inputs), dynamo=True).save(path)
    return artifact_facts(path)


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
