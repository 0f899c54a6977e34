"""The kit's shared places: the checkout, its data and reports folders, the default run folder and the compile cache.

The one module below everything else, so that the runner, the report and the matrix name the same folders
without importing each other.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from .errors import BadOutput

ROOT = Path(__file__).resolve().parents[1]  # the checkout (or unpacked copy) that holds the yolo26kit package
DATA = ROOT / "data"
NOTEBOOKS = ROOT / "notebooks"
REPORTS = ROOT / "reports"
DEFAULT_OUT = REPORTS / "runs"  # local runs and their index.html; ignored by git
INTERACTIVE = DEFAULT_OUT / "interactive"  # results of notebooks run by hand, never next to the notebook
NOTEBOOK_TAG_ENV = "YOLO26KIT_NOTEBOOK_TAG"  # set by the runner in every notebook kernel it starts (a batch run)
CACHE_ENV = "YOLO26KIT_CACHE"  # the kit's compile-cache root (set by the runner for every notebook child)


def process_temp_dir(prefix: str) -> str:
    """A new temporary folder that is removed when the process that made it exits: a multiprocessing finalizer runs
    at interpreter exit and at the end of a multiprocessing child (the kit's isolated steps, which end with
    os._exit, so atexit would not), and only in the process that registered it (forked children share the folder)."""
    from multiprocessing import util

    folder = tempfile.mkdtemp(prefix=prefix)
    util.Finalize(None, shutil.rmtree, args=(folder,), kwargs={"ignore_errors": True}, exitpriority=0)
    return folder


# The matrix's stack environments live beside the compile cache (<cache>/matrix-envs): installed packages, not
# compiled work, so they never make a cache warm.
MATRIX_ENVS = "matrix-envs"


def default_cache_dir() -> Path:
    """$YOLO26KIT_CACHE, else $XDG_CACHE_HOME/yolo26kit, else ~/.cache/yolo26kit: outside the repository."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "yolo26kit"


def new_folder(out: Path, prefix: str, base: str) -> tuple[str, Path]:
    """Create `out/<prefix><base>/`, or `<base>-2`, `-3`… when taken (never an existing folder); returns the id
    (base plus any suffix) and the folder."""
    out.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        folder_id = base if n == 1 else f"{base}-{n}"
        try:
            (out / f"{prefix}{folder_id}").mkdir()
            return folder_id, out / f"{prefix}{folder_id}"
        except FileExistsError:
            continue
    raise BadOutput(f"could not create a new folder under {out}")


def new_run_dir(out: Path, device: str, prefix: str = "", now: datetime | None = None) -> tuple[str, Path]:
    """A run's folder `out/<UTC time>-<host>-<device>/` (a matrix's with prefix `matrix-`): see new_folder."""
    now = now or datetime.now(timezone.utc)
    host = re.sub(r"[^A-Za-z0-9]+", "-", socket.gethostname()).strip("-")[:16] or "host"
    return new_folder(out, prefix, f"{now:%Y%m%dT%H%M%SZ}-{host}-{device}")


def check_out(out: Path) -> None:
    """An out folder (--out) must be a folder this process can create folders in (a probe made and removed)."""
    if out.exists() and not out.is_dir():
        raise BadOutput(f"--out {out} is a file, not a folder")
    existing = next(p for p in (out.absolute(), *out.absolute().parents) if p.exists())
    if not existing.is_dir():
        raise BadOutput(f"--out {out}: {existing} is a file, not a folder")
    try:
        probe = tempfile.mkdtemp(prefix=".yolo26kit-probe-", dir=existing)
        os.rmdir(probe)
    except OSError as exc:
        raise BadOutput(f"--out {out}: cannot write in {existing} ({exc.strerror or exc})") from None


__all__ = ["CACHE_ENV", "DATA", "DEFAULT_OUT", "INTERACTIVE", "NOTEBOOKS", "REPORTS", "ROOT", "check_out",
           "default_cache_dir", "new_folder", "new_run_dir"]
