"""The bisect's page (bisect.html: a timeline of releases with verdict chips, the change named, the probes) and the
listing of bisects an index or matrix page links."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def render(folder: Path, record: dict[str, Any]) -> Path:
    """bisect.html in the bisect's folder."""
    import jinja2

    templates = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
                                   autoescape=jinja2.select_autoescape(["html", "j2"]))
    target = Path(folder) / "bisect.html"
    target.write_text(templates.get_template("bisect.html.j2").render(b=record), encoding="utf-8")
    return target


def listing(root: str | Path) -> list[dict[str, Any]]:
    """The bisects under a reports folder, newest first: id, href (relative to root), claim, package, summary."""
    root = Path(root)
    found = []
    for path in sorted(root.glob("bisect-*/bisect.json"), key=lambda p: p.stat().st_mtime, reverse=True):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        found.append({"id": record.get("bisect_id", path.parent.name), "href": f"{path.parent.name}/bisect.html",
                      "claim": record.get("claim", ""), "package": record.get("package", ""),
                      "summary": record.get("summary", ""), "changes": record.get("changes", [])})
    return found


def change_of(root: str | Path, claim: str) -> list[dict[str, Any]]:
    """The bisects of one claim that named a change (for the claim's page): listing rows."""
    return [b for b in listing(root) if b["claim"] == claim and b["changes"]]
