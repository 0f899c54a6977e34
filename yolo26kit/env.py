"""The environment fingerprint recorded with every run (versions, device, kit revision)."""

from __future__ import annotations

import os
import platform
import subprocess
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from . import __version__

# The torch release pyproject.toml pins; any other torch means the kit runs on a host's own stack
# (e.g. a GPU runner's preinstalled PyTorch).
PINNED_TORCH = "2.14.1"


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _kit_revision() -> str:
    root = Path(__file__).resolve().parents[1]
    try:
        sha = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        sha = ""
    return f"{__version__}+g{sha}" if sha else __version__


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def resolve_device(device: str) -> str:
    """`auto` becomes `cuda` when a GPU is visible, else `cpu`; other values pass through."""
    if device == "auto":
        return "cuda" if cuda_available() else "cpu"
    return device


@cache
def fingerprint() -> dict[str, Any]:
    """Versions and device of this process, in the results.json `environment` shape."""
    import torch

    on_cuda = torch.cuda.is_available()
    torch_version = torch.__version__
    return {
        "python": platform.python_version(),
        "torch": torch_version,
        "cuda": torch.version.cuda,
        "device_type": "cuda" if on_cuda else "cpu",
        "device": torch.cuda.get_device_name(0) if on_cuda else _cpu_name(),
        "cpu_count": os.cpu_count(),
        "executorch": _version("executorch"),
        "ultralytics": _version("ultralytics"),
        "torchvision": _version("torchvision"),
        "papermill": _version("papermill"),
        "stack": "pinned" if torch_version.split("+")[0] == PINNED_TORCH else "host",
        "platform": platform.platform(),
        "kit": _kit_revision(),
    }
