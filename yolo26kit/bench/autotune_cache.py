"""Inductor's local autotune cache, safe for processes that tune at the same time.

Inductor keeps max-autotune timings in one JSON file per GPU and software stack (`PersistentCache`): a lookup reads
the file, benchmarks the choices it lacks (seconds to minutes with the ExecuTorch CUDA back-end's defaults), then
writes back what it read plus its own timings. Processes that tune at once (lowerings side by side, notebooks run
together, a parallel warm-up) overwrite each other's timings, so the next run benchmarks them again. `install`
makes each write merge with what is on disk, under a file lock; nothing else about the cache changes.
"""

from __future__ import annotations

import json
from typing import Any

LOCK_SECONDS = 120.0  # a write holds the lock for a read and a rename: milliseconds


def merge_nested(theirs: Any, mine: Any) -> Any:
    """Nested dicts united; where both have a leaf, mine stays."""
    if isinstance(theirs, dict) and isinstance(mine, dict):
        return {**theirs, **{k: merge_nested(theirs[k], v) if k in theirs else v for k, v in mine.items()}}
    return mine


def install() -> bool:
    """Patch Inductor's autotune-cache write (this process and its forks); False where this release has no such
    write (nothing patched). Idempotent."""
    try:
        from filelock import FileLock
        from torch._inductor.codecache import CacheBase
    except ImportError:
        return False
    original = getattr(CacheBase, "update_local_cache", None)
    if original is None:
        return False
    if getattr(original, "merges_on_write", False):
        return True

    def update_local_cache(self: Any, local_cache: dict[str, Any]) -> None:
        path = self.get_local_cache_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(f"{path}.lock", timeout=LOCK_SECONDS):
            try:
                on_disk = json.loads(path.read_text()).get("cache", {})
            except (OSError, ValueError, AttributeError):  # none yet, or unreadable: this write replaces it
                on_disk = {}
            original(self, merge_nested(on_disk, local_cache))

    update_local_cache.merges_on_write = True  # type: ignore[attr-defined]
    CacheBase.update_local_cache = update_local_cache
    return True


__all__ = ["install", "merge_nested"]
