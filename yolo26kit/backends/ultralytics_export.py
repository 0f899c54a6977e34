"""ultralytics' own exporter, as shipped: YOLO(...).export(format="executorch" | "onnx") with its defaults (only
imgsz and device given), the program then run by the matching runtime (executorch_xnnpack / onnxruntime's load).

Its subject is an `ultralytics.YOLO`, not an nn.Module. A package or network the exporter needs that this stack
lacks makes prepare return {"skipped": why} instead of an artifact.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from . import Backend, Loaded, get, register

FORMATS = {"executorch_xnnpack": "executorch", "onnxruntime": "onnx"}  # runtime back-end → export(format=)
# What exporting to a format and running its program needs (the exporter calls torch.onnx without onnxscript)
NEEDS = {"executorch": ("ultralytics", "executorch"), "onnx": ("ultralytics", "onnx", "onnxruntime")}
# Words of an exporter error that mean a package or network it needs is missing (not a failure of the export)
MISSING = ("No module named", "requirement", "AutoUpdate", "not installed", "offline", "internet", "network",
           "Connection", "download")


def is_missing(exc: BaseException, text: str | None = None) -> bool:
    """Whether the exporter failed for a package or network it needs: an ImportError, or MISSING's words in `text`
    (the error's type and message unless given)."""
    text = f"{type(exc).__name__}: {exc}" if text is None else text
    return isinstance(exc, ImportError) or any(word.lower() in text.lower() for word in MISSING)


def export(net: Any, folder: str | Path, fmt: str, **options: Any) -> Path:
    """net.export(format=fmt, **options) run in `folder` (made if missing); the program's path (the .pte inside
    the folder the executorch format writes)."""
    return cached_export(net, folder, fmt, **options)[0]


def export_key(net: Any, fmt: str, options: dict[str, Any]) -> str:
    """A digest of what decides the exporter's program: the model's yaml and weights, the format and options, and
    the versions of ultralytics, torch and the format's own packages."""
    import hashlib
    import json

    from ..bench.artifacts import hash_tensors
    from ..env import package_version

    h = hashlib.sha256()
    versions = {package: package_version(package) or "" for package in ("ultralytics", "torch", *NEEDS.get(fmt, ()))}
    h.update(json.dumps([fmt, options, versions, getattr(net.model, "yaml", {})], sort_keys=True,
                        default=str).encode())
    hash_tensors(h, net.model.state_dict())
    return h.hexdigest()[:32]


def cached_export(net: Any, folder: str | Path, fmt: str, notes: list[str] | None = None,
                  **options: Any) -> tuple[Path, bool]:
    """export's program and whether it came from the compile cache (the same model, format, options and versions
    exported before: bench.artifacts.cached_folder); the exporter's warnings of the run that made it are added to
    `notes`."""
    from ..bench.artifacts import cached_folder

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    os.chdir(folder)  # the exporter writes beside the model's yaml name, relative to the working directory
    made: list[str] = notes if notes is not None else []
    seen = len(made)

    def run(into: Path) -> dict[str, Any]:
        out = into / net.export(format=fmt, **options)  # a relative path is the folder's
        program = next(out.glob("*.pte")) if out.is_dir() else out
        return {"program": str(program.relative_to(into)), "notes": made[seen:]}

    facts = cached_folder("ultralytics", f"{fmt}-{export_key(net, fmt, options)}", folder, run)
    if facts["cached"]:
        made.extend(facts.get("notes") or [])
    return folder / facts["program"], bool(facts["cached"])


def end2end(fmt: str, path: Path) -> bool | None:
    """Whether the exported program kept the end-to-end (top-k) head, from the metadata the exporter wrote."""
    try:
        if fmt == "onnx":
            import onnx

            meta = {p.key: p.value for p in onnx.load(str(path), load_external_data=False).metadata_props}
            return meta.get("end2end") == "True" if "end2end" in meta else None
        import yaml

        meta_file = next(path.parent.glob("metadata.yaml"), None)
        return bool(yaml.safe_load(meta_file.read_text()).get("end2end")) if meta_file else None
    except Exception:  # metadata is a detail: the output shape says the same
        return None


def prepare(net: Any, inputs: tuple[Any, ...], folder: str | Path, stem: str, format: str = "onnx",
            imgsz: int | None = None, device: str = "cpu") -> dict[str, Any]:
    """The exporter in `folder/stem` (changes this process's working directory), its warnings kept as `notes`;
    `end2end` from its metadata; `cached` when the compile cache served the program. imgsz: the first input's width
    unless given."""
    import logging

    notes: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING:
                notes.append(" ".join(re.sub(r"\x1b\[[0-9;]*m", "", record.getMessage()).split())[:200])

    from ultralytics.utils import LOGGER

    LOGGER.addHandler(Keep())
    LOGGER.setLevel(min(LOGGER.level or logging.WARNING, logging.WARNING))  # YOLO_VERBOSE=False would drop them
    size = imgsz if imgsz is not None else int(inputs[0].shape[-1])
    try:
        path, cached = cached_export(net, Path(folder) / stem, format, notes, imgsz=size, device=device)
    except Exception as exc:
        if is_missing(exc):
            text = f"{type(exc).__name__}: {exc}"
            return {"skipped": f"ultralytics' exporter needs what this stack lacks: {text[:300]}", "notes": notes}
        raise
    return {"artifact": str(path), "bytes": os.path.getsize(path), "format": format, "end2end": end2end(format, path),
            "notes": notes, "cached": cached}


def load(artifact: str, inputs: tuple[Any, ...], **options: Any) -> Loaded:
    """The exported program run by its runtime: a .pte by executorch_xnnpack's load, an .onnx by onnxruntime's."""
    runtime = "executorch_xnnpack" if str(artifact).endswith(".pte") else "onnxruntime"
    return get(runtime).load(artifact, inputs, **options)


register(Backend(name="ultralytics_export", title="ultralytics' exporter, YOLO(...).export(format=...), as shipped",
                 needs_cuda=False, modules=("ultralytics",), load=load, prepare=prepare))
