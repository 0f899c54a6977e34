"""`yolo26kit times RUN...`: the README's run-time table, read from the runs' run.json files (never typed in)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import BadParameter


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
    """`<device>, <cold|warm>`: the run's device type and its compile cache's state when it started."""
    device = meta.get("environment", {}).get("device") or meta.get("environment", {}).get("device_type", "?")
    return f"{device}, {meta.get('compile_cache', '?')}"


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
            cells.append(f"{entry.get('seconds', 0):.0f} s{state}" + (f"; {hits}" if hits else "") + reused)
        lines.append("| " + " | ".join(cells) + " |")
    walls = [f"**{meta.get('wall_seconds', 0):.0f} s**" + (f", {len(meta['retries'])} kernel retries"
                                                           if meta.get("retries") else "") for _, meta in runs]
    lines.append("| whole call, wall | " + " | ".join(walls) + " |")
    return "\n".join(lines)
