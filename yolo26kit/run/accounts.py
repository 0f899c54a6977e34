"""`yolo26kit times RUN...`: the run-time tables, read from the runs' run.json files (never typed in); the docs'
build fills docs/times.md's times block with them, and `python -m yolo26kit.run.accounts FILE.md` any file's."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from ..errors import BadParameter
from . import core_load, timeline


def read_run(run_dir: Path) -> dict[str, Any]:
    """A run folder's run.json; BadParameter when it has none or it does not read back."""
    path = Path(run_dir) / "run.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise BadParameter(f"{run_dir}: no readable run.json ({exc})") from None


def _hits(cache: dict[str, Any] | None) -> str:
    """Inductor FX-graph hit/miss and kit artifacts hit/miss, as `h/m, h/m`."""
    if not cache:
        return ""
    inductor, artifacts = cache.get("inductor", {}), cache.get("artifacts", {})
    return (f"{inductor.get('hit', 0)}/{inductor.get('miss', 0)}, "
            f"{artifacts.get('hit', 0)}/{artifacts.get('miss', 0)}")


def column_name(meta: dict[str, Any]) -> str:
    """`<device>[ ×N], <cold|warm>[, <executor>]`: the run's device (×N: the GPUs its plan spread it over), its
    compile cache's state when it started and, when not the local one, the executor of its first call."""
    device = meta.get("environment", {}).get("device") or meta.get("environment", {}).get("device_type", "?")
    gpus = len((meta.get("plan") or {}).get("gpus") or [])
    executor = ((meta.get("invocations") or [{}])[0].get("executor") or {}).get("name", "local")
    return f"{device}{f' ×{gpus}' if gpus else ''}, {meta.get('compile_cache', '?')}" + (
        f", {executor}" if executor != "local" else "")


def bounding_lock(meta: dict[str, Any]) -> str | None:
    """The measuring lock held longest in a run (the one its lower bound is), None where run.json has none."""
    held = meta.get("measuring_locks") or {}
    return max(held, key=held.get) if held else None


def lock_span(meta: dict[str, Any], lock: str) -> str:
    """`: first taken at A s, free B s between, let go at C s` for a measuring lock of run.json ("" for runs
    recorded before timeline.lock_spans)."""
    span = (meta.get("measuring_lock_spans") or {}).get(lock)
    return (f": first taken at {span['first_s']:.0f} s, free {span['free_s']:.0f} s between, let go at "
            f"{span['last_s']:.0f} s" if span else "")


def wall_cell(meta: dict[str, Any]) -> str:
    """A run's wall time, its lower bound (the longest-held measuring lock, and when that lock was taken, free and
    let go), the notebook that ended it and how busy the cores were."""
    said = f"**{meta.get('wall_seconds', 0):.0f} s**"
    longest = bounding_lock(meta)
    if longest:
        span = lock_span(meta, longest)
        said += f" (lower bound {meta.get('lower_bound_s', 0):.0f} s" + (f", {longest}{span}" if span else "")
        path = meta.get("critical_path")
        said += f"; ended by `{path['notebook']}` in {path['last_phase']})" if path else ")"
    busy = core_load.phrase(meta.get("cores_busy") or {})
    said += f"; {busy}" if busy else ""
    return said + (f", {len(meta['retries'])} kernel retries" if meta.get("retries") else "")


def table(run_dirs: list[Path]) -> str:
    """Markdown: one row per notebook, for each run its seconds and cache hits; the last row each run's wall time."""
    runs = [(Path(d), read_run(Path(d))) for d in run_dirs]
    names = sorted({n["name"] for _, meta in runs for n in meta.get("notebooks", [])})
    head = ["notebook"] + [f"{column_name(meta)} ({d.name})" for d, meta in runs]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in names:
        cells = [f"`{name}`"]
        for _, meta in runs:
            entry = next((n for n in meta.get("notebooks", []) if n["name"] == name), None)
            if entry is None:
                cells.append("")
                continue
            state = "" if entry.get("state") == "done" else f" ({entry.get('state')})"
            hits = _hits(entry.get("cache"))
            reused = (f"; {entry['reused_steps']} steps ({entry.get('reused_step_seconds', 0):.0f} s) from earlier calls"
                      if entry.get("reused_steps") else "")
            several = len((meta.get("plan") or {}).get("gpus") or []) > 1
            gpu = f"; GPU {entry['gpu']}" if several and entry.get("gpu") is not None else ""
            cells.append(f"{entry.get('seconds', 0):.0f} s{state}" + (f"; {hits}" if hits else "") + reused + gpu)
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("| whole call, wall | " + " | ".join(wall_cell(meta) for _, meta in runs) + " |")
    return "\n".join(lines + [split_table(d, meta) for d, meta in runs if _has_accounts(meta)])


ACCOUNT_HEADS = {"startup": "start-up", "spawn": "spawn", "kernel_start": "kernel start", "imports": "imports",
                 "lock_wait": "lock wait", "compile": "compile", "measure": "measure", "forensics": "forensics",
                 "step_start": "step start", "step_wait": "step wait", "steps": "other steps", "rest": "rest"}


def _has_accounts(meta: dict[str, Any]) -> bool:
    return any(n.get("accounts") for n in meta.get("notebooks", []))


def account_columns(meta: dict[str, Any]) -> list[str]:
    """The accounts a run recorded, in table order: a run from before an account existed shows no column for it."""
    seen = {k for n in meta.get("notebooks", []) for k in (n.get("accounts") or {})}
    return [k for k in timeline.ACCOUNTS if k in seen]


def split_table(run_dir: Path, meta: dict[str, Any]) -> str:
    """Markdown: where each notebook's seconds went in one run (its accounts, which add up to its seconds)."""
    columns = account_columns(meta)
    head = ["notebook", "GPU", "seconds", *(ACCOUNT_HEADS[k] for k in columns)]
    lines = ["", f"{column_name(meta)} ({run_dir.name}): where each notebook's seconds went", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for entry in sorted(meta.get("notebooks", []), key=lambda n: n["name"]):
        acc = entry.get("accounts") or {}
        cells = [f"`{entry['name']}`", str(entry.get("gpu") if entry.get("gpu") is not None else "—"),
                 f"{entry.get('seconds', 0):.0f}", *(f"{acc[k]:.0f}" if k in acc else "" for k in columns)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# A generated block of a markdown file: `<!-- times RUN_DIR... -->`, the tables of those runs, `<!-- /times -->`.
BLOCK = re.compile(r"(<!-- times ((?:[^\s>]+ ?)+) -->\n)(.*?)(<!-- /times -->)", re.S)


def render_blocks(text: str, root: Path) -> str:
    """`text` with every times block's tables made again from the runs it names (paths relative to `root`)."""
    def again(match: re.Match[str]) -> str:
        runs = [root / d for d in match.group(2).split()]
        return f"{match.group(1)}\n{table(runs)}\n\n{match.group(4)}"
    return BLOCK.sub(again, text)


def main(argv: list[str] | None = None) -> int:
    """`python -m yolo26kit.run.accounts FILE.md...`: rewrite each file's times blocks from their runs' run.json."""
    parser = argparse.ArgumentParser(prog="python -m yolo26kit.run.accounts",
                                     description="Rewrite each file's <!-- times RUN... --> blocks from the runs' "
                                                 "run.json (run folders relative to the file).")
    parser.add_argument("files", nargs="+", metavar="FILE.md")
    for name in parser.parse_args(argv).files:
        path = Path(name)
        path.write_text(render_blocks(path.read_text(), path.resolve().parent))
    return 0


if __name__ == "__main__":
    sys.exit(main())
