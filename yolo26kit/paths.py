"""The kit's shared places: the checkout, its data and reports folders, the default run folder and the compile cache.

The one module below everything else, so that the runner, the report and the matrix name the same folders
without importing each other.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the checkout (or unpacked copy) that holds the yolo26kit package
DATA = ROOT / "data"
NOTEBOOKS = ROOT / "notebooks"
REPORTS = ROOT / "reports"
DEFAULT_OUT = REPORTS / "runs"  # local runs and their index.html; ignored by git
INTERACTIVE = DEFAULT_OUT / "interactive"  # results of notebooks run by hand, never next to the notebook
CACHE_ENV = "YOLO26KIT_CACHE"  # the kit's compile-cache root (set by the runner for every notebook child)


def default_cache_dir() -> Path:
    """$YOLO26KIT_CACHE, else $XDG_CACHE_HOME/yolo26kit, else ~/.cache/yolo26kit: outside the repository."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "yolo26kit"


__all__ = ["CACHE_ENV", "DATA", "DEFAULT_OUT", "INTERACTIVE", "NOTEBOOKS", "REPORTS", "ROOT", "default_cache_dir"]
