"""The matrix's page (matrix.html: the claim × stack grid) and the listing of matrices an index page links."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import bisect_page


def _page_of(record: dict[str, Any]) -> str:
    if not record.get("run"):
        return f"cells/{record['stack']}/{record['investigation']}/cell.log"
    return f"cells/{record['stack']}/{record['investigation']}/{record['run']}/index.html"


UNDECIDED = ("inconclusive", "needs_cuda", "error")  # a change from or to one of these: what could be measured changed


def _version(matrix: dict[str, Any], stack_id: str, package: str) -> str:
    """The release of `package` a stack pins (its environment's when it pins none), '?' when neither says."""
    stack = next((s for s in matrix.get("stacks", []) if s.get("id") == stack_id), {})
    return str((stack.get("pins") or {}).get(package) or (stack.get("environment") or {}).get(package) or "?")


def bisected(bisects: list[dict[str, Any]], claim: str, package: str, change: dict[str, Any]) -> dict[str, Any] | None:
    """The bisect of `claim` over `package` that named the same change (from → to), newest first: the one source of
    "since which release" wherever one exists; None without one."""
    for b in bisects:
        if b.get("claim") != claim or b.get("package") != package:
            continue
        for c in b.get("changes") or []:
            if (c.get("from"), c.get("to")) == (change.get("from"), change.get("to")) and c.get("first"):
                return {"release": c["first"], "before": c.get("last_before", "?"), "href": b.get("href", "")}
    return None


def change_rows(matrix: dict[str, Any], bisects: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Every verdict change across a series of stacks, named by package and release: claim, package, the release
    it changes at and the one before, from → to, and its kind — `verdict` when both sides decide, `measurable`
    when one side could not decide (the older stack's step failed, or the claim needs what it lacked). Where a bisect
    named the same change, its releases are quoted (`bisect`: its page); the matrix's stacks only bound it."""
    rows = []
    for cid, by in (matrix.get("changes") or {}).items():
        for package, change in by.items():
            if not change:
                continue
            kind = "measurable" if {change.get("from"), change.get("to")} & set(UNDECIDED) else "verdict"
            row = {"claim": cid, "package": package, "release": _version(matrix, change.get("stack", ""), package),
                   "before": _version(matrix, change.get("after", ""), package), "from": change.get("from"),
                   "to": change.get("to"), "stack": change.get("stack"), "kind": kind, "bisect": ""}
            found = bisected(bisects or [], cid, package, change)
            if found:
                row.update(release=found["release"], before=found["before"], bisect=found["href"])
            rows.append(row)
    return sorted(rows, key=lambda r: (r["kind"] != "verdict", r["claim"]))


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
    bisects = bisect_page.listing(Path(matrix_dir).parent)  # bisects beside the matrix, linked with ../
    changed = change_rows(matrix, bisects)
    since = {(r["claim"], r["package"]): r for r in changed}
    first = list(dict.fromkeys(r["claim"] for r in changed))
    order = first + [cid for cid in matrix.get("claims", {}) if cid not in first]
    page = templates.get_template("matrix.html.j2").render(
        m=matrix, links=links, owner=owner, gib=lambda b: f"{b / 2**30:.1f} GiB" if b else "—", changed=changed,
        order=order, changed_ids=set(first), version=lambda stack, package: _version(matrix, stack, package),
        bisects=bisects, since=since)
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


__all__ = ["UNDECIDED", "bisected", "change_rows", "listing", "render"]
