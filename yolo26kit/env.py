"""The environment fingerprint recorded with every run (versions, device, kit revision)."""

from __future__ import annotations

import os
import platform
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from . import __version__
from .errors import BadParameter, DeviceUnavailable
from .paths import ROOT

# The torch release pyproject.toml pins; any other torch means the kit runs on a host's own stack
# (e.g. a GPU runner's preinstalled PyTorch).
PINNED_TORCH = "2.14.1"


def package_version(dist: str) -> str | None:
    """The installed release of a distribution, None when it is not installed."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


STAMP = Path(__file__).resolve().parent / "_revision.txt"  # ignored by git; written by `yolo26kit stamp`/`bundle`
# Uncommitted changes and untracked files here make the revision `.dirty` (they change what a run computes).
WATCHED = ("yolo26kit", "notebooks", "data")


def _git(*args: str) -> str | None:
    """Output of a git command in the kit's checkout, or None when git or the repository is missing."""
    try:
        done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_revision() -> str | None:
    """`<version>+g<sha7>` plus `.dirty` when files under WATCHED have uncommitted changes or are untracked; None
    without git."""
    if not (ROOT / ".git").exists():
        return None
    sha = _git("rev-parse", "--short=7", "HEAD")
    if not sha:
        return None
    # untracked files count too: a new investigation that exists only as untracked files changes what a run computes
    changes = _git("status", "--porcelain", "--untracked-files=normal", "--", *WATCHED)
    return f"{__version__}+g{sha}" + (".dirty" if changes else "")


def write_stamp(path: Path | None = None) -> str:
    """Record the git revision in the stamp file, so a copy of the tree without .git still knows it."""
    revision = git_revision()
    if revision is None:
        raise RuntimeError("no git repository here: the stamp can only be written from a checkout")
    (path or STAMP).write_text(revision + "\n")
    return revision


def _kit_revision() -> str:
    """The revision from git when there is a .git, else from the stamp file, else the bare version."""
    revision = git_revision()
    if revision is None and STAMP.exists():
        revision = STAMP.read_text().strip() or None
    return revision or __version__


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_class(name: str) -> str:
    """A CPU's family from its model name, as a seed would name it: "Intel(R) Core(TM) i7-9700K CPU @ 3.60GHz" →
    "Intel Core i7", "Intel(R) Xeon(R) Platinum 8480+" → "Intel Xeon"; the name itself when no family is known."""
    text = " ".join(re.sub(r"\((R|TM)\)", " ", name, flags=re.I).split())
    m = re.search(r"\b(Intel|AMD)\b.*?\b(Core i\d|Core Ultra \d|Xeon|Ryzen \d+|EPYC|Threadripper)", text, re.I)
    return f"{m.group(1)} {m.group(2)}" if m else text


def cuda_available() -> bool:
    """Whether a CUDA GPU is visible to torch (the one test of it in the kit)."""
    import torch

    return torch.cuda.is_available()


DEVICE_CHOICES = ("auto", "cpu", "cuda")


@dataclass(frozen=True)
class Target:
    """Where a run measures, resolved once: its device (cpu or cuda) and every device it measures on, that one first."""

    device: str
    devices: tuple[str, ...]


def resolve_device(device: str, what: str = "device") -> str:
    """The concrete device of a run: `auto` becomes cuda when a GPU is visible, else cpu; cuda where none is
    visible, or any other word, is refused (`what` names the setting in the message)."""
    if device not in DEVICE_CHOICES:
        raise BadParameter(f"{what} must be one of {', '.join(DEVICE_CHOICES)}, got {device!r}")
    if device == "auto":
        return "cuda" if cuda_available() else "cpu"
    if device == "cuda" and not cuda_available():
        raise DeviceUnavailable(f"{what} cuda was asked for but no CUDA GPU is visible; use cpu or auto")
    return device


def resolve_target(device: str, devices: Sequence[str] = (), with_cpu: bool = False) -> Target:
    """The run target from a notebook's `device` and, where it has one, `devices` (a list that wins when not empty);
    `with_cpu`: an investigation that also needs the CPU measures there too when its device is CUDA."""
    main = resolve_device(device)
    if devices:
        chosen = tuple(dict.fromkeys(resolve_device(d) if d != "auto" else main for d in devices))
        return Target(chosen[0], chosen)
    return Target(main, (main, "cpu") if with_cpu and main != "cpu" else (main,))


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
        "device": torch.cuda.get_device_name(0) if on_cuda else cpu_name(),
        "cpu": cpu_name(),
        "cpu_count": os.cpu_count(),
        "executorch": package_version("executorch"),
        "ultralytics": package_version("ultralytics"),
        "torchvision": package_version("torchvision"),
        "papermill": package_version("papermill"),
        "stack": "pinned" if torch_version.split("+")[0] == PINNED_TORCH else "host",
        "platform": platform.platform(),
        "kit": _kit_revision(),
    }
