"""`yolo26kit stacks list | clean`: the stack environments the matrix and bisects share, with the disk they take.

Each environment's size is the one recorded when it was installed (hard links counted once per environment). uv
hard-links the wheels from its cache, so most of it is shared: `--measure` walks the folders again and also
counts what removing each would free (files linked nowhere else) and the whole folder once.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path
from typing import Any

from .stacks import MARKER, default_envs, disk_bytes


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
    for folder in sorted(p for p in Path(envs).iterdir() if p.is_dir()) if Path(envs).is_dir() else []:
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
    removed, freed = [], 0
    for stack_id in ids or list(rows):
        freed += own_bytes(Path(envs) / stack_id)  # what goes: the wheels' hard links stay in uv's cache
        shutil.rmtree(Path(envs) / stack_id, ignore_errors=True)
        (Path(envs) / f".{stack_id}.lock").unlink(missing_ok=True)
        removed.append(stack_id)
    return removed, freed


def _gib(size: int) -> str:
    return f"{size / 2**30:.1f} GiB"


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
        print(f"removed {len(removed)} stack environment(s) from {envs}, {_gib(freed)} freed")
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
