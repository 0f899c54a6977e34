"""`yolo26kit stacks list | clean`: the stack environments the matrix and bisects share, with the disk they take.

Each environment's size is the one recorded when it was installed (hard links counted once per environment). uv
hard-links the wheels from its cache, so most of it is shared: `--measure` walks the folders again and also
counts what removing each would free (files linked nowhere else) and the whole folder once. `clean` with no id
also removes the uv cache the installs filled (stacks.uv_cache_dir), and says what the disk got back.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path
from typing import Any

from .stacks import MARKER, default_envs, disk_bytes, freed_bytes, uv_cache_dir


def own_bytes(path: Path) -> int:
    """Bytes of the files under path that are linked nowhere else: what removing it frees."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            total += st.st_blocks * 512 if st.st_nlink == 1 else 0
    return total


def entries(envs: Path, measure: bool = False) -> list[dict[str, Any]]:
    """One row per environment folder: id, pins, bytes, own bytes (measured only), created, install finished."""
    rows = []
    folders = [p for p in Path(envs).iterdir() if p.is_dir() and not p.name.startswith(".")] if Path(envs).is_dir() else []
    for folder in sorted(folders):
        try:
            marker = json.loads((folder / MARKER).read_text())
        except (OSError, ValueError):
            marker = {}
        size = disk_bytes(folder) if measure or not marker.get("disk_bytes") else marker["disk_bytes"]
        rows.append({"id": folder.name, "pins": (marker.get("stack") or {}).get("pins", {}), "bytes": size,
                     "own": own_bytes(folder) if measure else None, "created": marker.get("created", ""),
                     "complete": bool(marker)})
    return rows


def remove(envs: Path, ids: list[str]) -> tuple[list[str], int]:
    """Remove the named environments (all when none is named); the ids removed and the bytes freed (files linked
    nowhere else)."""
    rows = {row["id"]: row for row in entries(envs)}
    unknown = [i for i in ids if i not in rows]
    if unknown:
        raise SystemExit(f"yolo26kit stacks: no environment {', '.join(unknown)} in {envs}")
    removed = ids or list(rows)
    # every environment goes: uv's cache of their installs goes too (nothing left links its wheels)
    cache = [uv_cache_dir(envs)] if len(removed) == len(rows) and uv_cache_dir(envs).is_dir() else []
    folders = [Path(envs) / stack_id for stack_id in removed] + cache
    freed = freed_bytes(folders)
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
    for stack_id in removed:
        (Path(envs) / f".{stack_id}.lock").unlink(missing_ok=True)
    return removed, freed


def _gib(size: int) -> str:
    """Bytes as GiB, or as MiB below one GiB (a small clean should not read "0.0 GiB freed")."""
    return f"{size / 2**30:.1f} GiB" if size >= 2**30 else f"{size / 2**20:.2f} MiB"


def add_subcommand(sub: Any) -> None:
    """`yolo26kit stacks`: registered by cli.parser()."""
    p = sub.add_parser("stacks", help="the stack environments of the matrix and bisects: list them, or clean them")
    p.add_argument("action", choices=("list", "clean"))
    p.add_argument("ids", nargs="*", metavar="ID", help="clean: the environments to remove (default: every one)")
    p.add_argument("--envs", default="", metavar="DIR", help="where they live (default <compile cache>/matrix-envs)")
    p.add_argument("--measure", action="store_true", help="list: walk the folders again (slower) and count the total")
    p.set_defaults(fn=main)


def main(args: argparse.Namespace) -> int:
    """The `stacks` subcommand: list (disk use per environment and in all) or clean."""
    envs = Path(args.envs).expanduser() if args.envs else default_envs()
    if args.action == "clean":
        removed, freed = remove(envs, args.ids)
        kept = uv_cache_dir(envs)
        note = (f"; uv's cache of their installs ({_gib(disk_bytes(kept))}) stays for the environments left: "
                "`stacks clean` with no id frees it") if kept.is_dir() else ""
        print(f"removed {len(removed)} stack environment(s) from {envs}, {_gib(freed)} freed{note}")
        return 0
    rows = entries(envs, args.measure)
    for row in rows:
        pins = " ".join(f"{k}=={v}" for k, v in row["pins"].items())
        state = "" if row["complete"] else "  (unfinished install)"
        own = f" ({_gib(row['own'])} its own)" if row["own"] is not None else ""
        print(f"{row['id']:<28} {_gib(row['bytes']):>9}{own}  {row['created'][:19]:<19}  {pins}{state}")
    together = disk_bytes(envs) if args.measure and rows else None
    free = shutil.disk_usage(envs if envs.exists() else Path.home()).free
    print(f"{len(rows)} environment(s) in {envs}: {_gib(sum(r['bytes'] for r in rows))} counted one by one, most of "
          "it hard links to uv's cache"
          + (f", {_gib(together)} together (shared hard links once)" if together is not None else "")
          + f"; {_gib(free)} free on that disk{'' if os.access(envs.parent, os.W_OK) else ' (not writable)'}")
    return 0
