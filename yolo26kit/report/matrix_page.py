"""The matrix's page (matrix.html: the claim × stack grid) and the listing of matrices an index page links."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _page_of(record: dict[str, Any]) -> str:
    if not record.get("run"):
        return f"cells/{record['stack']}/{record['investigation']}/cell.log"
    return f"cells/{record['stack']}/{record['investigation']}/{record['run']}/index.html"


def render(matrix_dir: Path, matrix: dict[str, Any]) -> Path:
    """matrix.html: stacks (pins, state, reason, disk), the claim × stack grid of verdict chips linked to each
    cell's run page, and for each claim the first stack of each series where its verdict changes."""
    import jinja2

    templates = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
                                   autoescape=jinja2.select_autoescape(["html", "j2"]))
    links, owner = {}, {}
    for cell in matrix["cells"]:
        for cid in cell.get("claims", []):
            links[(cell["stack"], cid)] = _page_of(cell) + (f"#claim-{cid}" if cell.get("run") else "")
            owner[cid] = cell["investigation"]
    page = templates.get_template("matrix.html.j2").render(
        m=matrix, links=links, owner=owner, gib=lambda b: f"{b / 2**30:.1f} GiB" if b else "—")
    target = matrix_dir / "matrix.html"
    target.write_text(page, encoding="utf-8")
    return target


def listing(root: str | Path) -> list[dict[str, Any]]:
    """The matrices under a reports folder, newest first, for an index page to link: id, href (relative to
    root), stacks, claims judged, and the claims whose verdict changes across stacks."""
    root = Path(root)
    found = []
    for path in sorted(root.glob("matrix-*/matrix.json"), reverse=True):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        found.append({"id": path.parent.name.removeprefix("matrix-"),
                      "href": (path.parent / "matrix.html").relative_to(root).as_posix(),
                      "stacks": [s["id"] for s in data.get("stacks", [])], "claims": len(data.get("claims", {})),
                      "changed": [c for c, by in data.get("changes", {}).items() if any(by.values())]})
    return found


__all__ = ["listing", "render"]
