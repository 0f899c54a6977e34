"""Carry the costly, small part of a compile cache to another machine: `yolo26kit cache export | import | info`.

A GPU runner that is handed back between calls loses its compile cache. Most of what a long max-autotune
lowering costs is the benchmarking of every GEMM/convolution choice, and Inductor keeps the outcome in its local
autotune cache (`inductor/cache/<system hash>`: JSON timings per operator and input shapes, keyed by the GPU, torch
and Triton). Those files, Triton kernels' `.best_config` files and the kit's crash diagnoses are a few hundred KB
where the whole cache is gigabytes: exported after one call and imported before the next on a fresh machine of the
same kind, they let a lowering go on where the last call stopped. Compiled kernels and programs stay behind.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

from ..bench.artifacts import read_json_object
from ..bench.autotune_cache import merge_nested

AUTOTUNE = "inductor/cache"  # Inductor's local autotune cache (PersistentCache), one JSON file per system hash
PORTABLE_SUFFIXES = (".best_config",)  # Triton heuristics' chosen configs (Inductor's autotune_local_cache)
PORTABLE_FOLDERS = (AUTOTUNE, "crash-sites")


def portable_files(root: Path) -> list[Path]:
    """The cache files worth carrying, relative to `root`, sorted."""
    found = {p for folder in PORTABLE_FOLDERS for p in (root / folder).rglob("*") if p.is_file()}
    found |= {p for suffix in PORTABLE_SUFFIXES for p in (root / "inductor").rglob(f"*{suffix}") if p.is_file()}
    return sorted(p.relative_to(root) for p in found if not p.name.endswith((".lock", ".tmp")))


def autotune_counts(root: Path) -> dict[str, int]:
    """Input-shape sets Inductor has benchmarked, per operator (addmm, convolution, ...), over every system hash."""
    counts: dict[str, int] = {}
    for by_op in autotune_counts_by_gpu(root).values():
        for op, n in by_op.items():
            counts[op] = counts.get(op, 0) + n
    return counts


def autotune_counts_by_gpu(root: Path) -> dict[str, dict[str, int]]:
    """The same counts per GPU model (each system hash names its GPU): Inductor reads only the timings of the GPU it
    runs on, so another card's imported timings save nothing."""
    by_gpu: dict[str, dict[str, int]] = {}
    for path in sorted((root / AUTOTUNE).glob("*")):
        entry = read_json_object(path)
        device = entry.get("system", {}).get("device", {})
        gpu = str(device.get("name", path.name) if isinstance(device, dict) else device)
        counts = by_gpu.setdefault(gpu, {})
        for op, by_inputs in entry.get("cache", {}).items():
            counts[op] = counts.get(op, 0) + len(by_inputs)
    return by_gpu


def export(root: Path, archive: Path) -> dict[str, Any]:
    """Write the portable files of cache `root` into a .tar.gz; returns {files, bytes, autotuned}."""
    files = portable_files(root)
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "w:gz") as tar:
        for rel in files:
            tar.add(root / rel, arcname=rel.as_posix())
    return {"files": len(files), "bytes": archive.stat().st_size, "autotuned": autotune_counts(root)}


def import_(root: Path, archive: Path) -> dict[str, Any]:
    """Unpack an exported archive into cache `root`: autotune timings are merged (what `root` has wins), other
    files added where missing. Returns {added, merged, kept, autotuned}. Members outside the portable set, or
    with absolute or parent paths, are refused (ValueError) before anything is written."""
    with tarfile.open(archive, "r:gz") as tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        for m in members:
            _check_member(m.name)
        contents = {m.name: tar.extractfile(m).read() for m in members}  # type: ignore[union-attr]
    added = merged = kept = 0
    for name, data in contents.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if name.startswith(AUTOTUNE + "/") and target.exists():
            mine = read_json_object(target)
            union = merge_nested(json.loads(data), mine)
            if union != mine:
                target.write_text(json.dumps(union))
                merged += 1
            else:
                kept += 1
        elif target.exists():
            kept += 1
        else:
            target.write_bytes(data)
            added += 1
    return {"added": added, "merged": merged, "kept": kept, "autotuned": autotune_counts(root)}


def describe(root: Path) -> str:
    """A few lines: the cache root, its size per top folder, and Inductor's autotuned shapes per operator, in all and
    per GPU model."""
    lines = [f"compile cache: {root}" + ("" if root.is_dir() else " (does not exist)")]
    if root.is_dir():
        for folder in sorted(p for p in root.iterdir() if p.is_dir()):
            size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
            lines.append(f"  {folder.name + '/':<14} {size / 2**20:9.1f} MiB")
        counts = autotune_counts(root)
        said = ", ".join(f"{op} {n}" for op, n in sorted(counts.items())) or "none"
        portable = portable_files(root)
        size = sum((root / p).stat().st_size for p in portable)
        lines.append(f"  autotuned input shapes: {said}")
        for gpu, by_op in autotune_counts_by_gpu(root).items():
            lines.append(f"    on {gpu}: " + ", ".join(f"{op} {n}" for op, n in sorted(by_op.items())))
        lines.append(f"  portable part (`yolo26kit cache export`): {len(portable)} files, {size / 1024:.0f} KiB")
    return "\n".join(lines)


def _check_member(name: str) -> None:
    parts = Path(name).parts
    if Path(name).is_absolute() or ".." in parts:
        raise ValueError(f"{name}: an archive member outside the cache")
    portable = any(name.startswith(f + "/") for f in PORTABLE_FOLDERS) or \
        (name.startswith("inductor/") and name.endswith(PORTABLE_SUFFIXES))
    if not portable:
        raise ValueError(f"{name}: not a file `yolo26kit cache export` writes")


__all__ = ["AUTOTUNE", "autotune_counts", "describe", "export", "import_", "portable_files"]
