"""HTML reports: nbconvert per executed notebook, a run's index.html, and the index over all runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from . import findings

TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("yolo26kit", "templates"), autoescape=jinja2.select_autoescape(["html", "j2"])
)
MAX_TABLE_ROWS = 80  # larger tables stay in the notebook HTML and results.json


def render_notebook(ipynb: Path) -> list[Path]:
    """Write <name>.html (code and outputs) and <name>.nocode.html (outputs only, for sharing)."""
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(ipynb, as_version=4)
    written = []
    for suffix, hide_code in ((".html", False), (".nocode.html", True)):
        exporter = HTMLExporter(template_name="lab", exclude_input=hide_code, exclude_input_prompt=hide_code,
                                exclude_output_prompt=hide_code)
        body, _ = exporter.from_notebook_node(nb)
        target = ipynb.with_suffix(suffix)
        target.write_text(body, encoding="utf-8")
        written.append(target)
    return written


def _load_run(run_dir: Path) -> list[dict[str, Any]]:
    results = []
    for path in sorted(run_dir.glob("*.results.json")):
        try:
            data = findings.read_results(path)
        except (ValueError, json.JSONDecodeError) as exc:
            data = {"investigation": path.name.removesuffix(".results.json"), "claims": [], "tables": {},
                    "environment": {}, "notebook_error": f"unreadable results.json: {exc}"}
        data["_stem"] = path.name.removesuffix(".results.json")
        results.append(data)
    return results


def _table_html(rows: list[dict[str, Any]]) -> str:
    frame = pd.DataFrame(rows[:MAX_TABLE_ROWS])
    note = f"<p class='note'>first {MAX_TABLE_ROWS} of {len(rows)} rows</p>" if len(rows) > MAX_TABLE_ROWS else ""
    return frame.to_html(index=False, classes="data", border=0, na_rep="", escape=True) + note


def render_run(run_dir: Path, notebooks: bool = True) -> Path:
    """Render every executed notebook of a run (optional) and write the run's index.html."""
    run_dir = Path(run_dir)
    if notebooks:
        for ipynb in sorted(run_dir.glob("*.ipynb")):
            render_notebook(ipynb)
    results = _load_run(run_dir)
    meta_path = run_dir / "run.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    environment = meta.get("environment") or next((r["environment"] for r in results if r.get("environment")), {})
    page = TEMPLATES.get_template("run.html.j2").render(
        run_id=meta.get("run_id") or (results[0].get("run_id") if results else run_dir.name),
        results=results,
        environment=environment,
        notebooks={n["name"]: n for n in meta.get("notebooks", [])},
        tables={r["_stem"]: {name: _table_html(rows) for name, rows in r.get("tables", {}).items() if rows}
                for r in results},
        exists=lambda name: (run_dir / name).exists(),
    )
    target = run_dir / "index.html"
    target.write_text(page, encoding="utf-8")
    return target


def find_runs(root: Path) -> list[Path]:
    """Run directories under root (any folder holding a *.results.json), newest first by name."""
    dirs = {p.parent for p in Path(root).rglob("*.results.json")}
    return sorted(dirs, key=lambda d: d.name, reverse=True)


def render_index(root: Path) -> Path:
    """Write root/index.html: every run under root, and each claim's verdict per run side by side."""
    root = Path(root)
    runs = []
    for run_dir in find_runs(root):
        results = _load_run(run_dir)
        env = next((r["environment"] for r in results if r.get("environment")), {})
        verdicts = {c["id"]: c for r in results for c in r.get("claims", [])}
        runs.append({"dir": run_dir.relative_to(root).as_posix(), "name": run_dir.name, "environment": env,
                     "verdicts": verdicts, "investigations": [r["investigation"] for r in results],
                     "seconds": sum(r.get("seconds") or 0 for r in results)})
    claims = list(findings.seed_claims().values())
    page = TEMPLATES.get_template("index.html.j2").render(runs=runs, claims=claims)
    target = root / "index.html"
    target.write_text(page, encoding="utf-8")
    return target
