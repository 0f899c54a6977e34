"""mkdocs hooks: the pages made from the repository's data when the site is built, never typed in.

- `investigations/<name>.md`, one per notebook: its parameters (the notebook's `parameters` cell), its claims
  (the ledger, data/claims/<name>.json) and each claim's verdict in the newest committed run of each device type
  (reports/*/<name>.results.json). Where docs/investigations/<name>.md is written by hand (a guide), those sections
  follow its text instead.
- The `<!-- times RUN... -->` blocks (docs/times.md): the measured run times, from the named runs' run.json.

Everything is read from files (no torch import, no network), so `make docs` builds offline in seconds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

from yolo26kit import catalog
from yolo26kit.run import accounts

REPO = Path(__file__).resolve().parents[1]
QUESTIONS = {"bites": "bites here?", "fix": "fix holds?", "cost": "cost", "other": "other"}


def _cell(text: Any) -> str:
    """A value as the text of one markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ").strip() or "—"


def _seed_titles() -> dict[str, str]:
    """Seed file name → its title (data/seeds.json)."""
    return {s["file"]: s["title"] for s in json.loads((REPO / "data" / "seeds.json").read_text())}


def _newest_results(name: str) -> list[tuple[str, dict[str, Any]]]:
    """(run name, results.json) of the newest committed run of each device type that ran `name`, CUDA first."""
    newest: dict[str, tuple[str, dict[str, Any]]] = {}
    for path in sorted((REPO / "reports").glob(f"*/{name}.results.json"), reverse=True):  # run ids sort by time
        results = json.loads(path.read_text())
        newest.setdefault(results.get("environment", {}).get("device_type", "cpu"), (path.parent.name, results))
    return [newest[k] for k in sorted(newest, key=lambda d: (d != "cuda", d))]


def investigation_page(name: str) -> str:
    """The markdown of one investigation's page."""
    ledger = json.loads((REPO / "data" / "claims" / f"{name}.json").read_text())
    seeds = _seed_titles()
    sources = list(dict.fromkeys(c["source"] for c in ledger))
    lines = [f"# {name}", "", f"Notebook: `notebooks/{name}.ipynb`; package: `yolo26kit/investigations/{name}/`; "
             f"ledger: `data/claims/{name}.json`. Run it with `yolo26kit run {name}`.", "", "## Sources", ""]
    lines += [f"- `{s}`" + (f": {seeds[s]}" if s in seeds else " (the kit's own claim)" if s == "kit" else "")
              for s in sources]
    lines += ["", "## Parameters", "", "| parameter | type | default | meaning |", "|---|---|---|---|"]
    for param in catalog.notebook_params(REPO / "notebooks" / f"{name}.ipynb").values():
        if param.name not in catalog.RUNNER_PARAMETERS:
            lines.append(f"| `{param.name}` | {param.type} | `{_cell(repr(param.default))}` | {_cell(param.help)} |")
    runs = _newest_results(name)
    verdicts = [{c["id"]: c["verdict"] for c in results.get("claims", [])} for _, results in runs]
    lines += ["", "## Claims", "", "Each claim in the source's words, the question it answers, and its verdict in the "
              "newest committed run of each device type" + (": " + ", ".join(f"`{run}`" for run, _ in runs) if runs
                                                          else " (none committed yet)") + ".", ""]
    head = ["claim", "question", *[f"`{run}`" for run, _ in runs], "the source's words"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for claim in ledger:
        question = QUESTIONS.get(claim.get("question", "bites"), claim.get("question", ""))
        marks = [v.get(claim["id"], "—") for v in verdicts]
        lines.append("| " + " | ".join([f"`{claim['id']}`" + (" (bug)" if claim.get("bug") else ""), question,
                                        *marks, _cell(claim["claim"])]) + " |")
    return "\n".join(lines) + "\n"


def investigations() -> list[str]:
    """The investigations: notebooks/*.ipynb with a ledger (a new one scaffolded by `yolo26kit new` included)."""
    return [nb.stem for nb in sorted((REPO / "notebooks").glob("*.ipynb"))
            if (REPO / "data" / "claims" / f"{nb.stem}.json").exists()]


def on_config(config: Any) -> Any:
    """Put each investigation's page in the navigation, under the investigations' index."""
    for section in config["nav"] or []:
        if isinstance(section, dict) and "The investigations" in section:
            section["The investigations"] += [{name: f"investigations/{name}.md"} for name in investigations()]
    return config


def written(name: str) -> bool:
    """Whether the investigation's page is written by hand (docs/investigations/<name>.md)."""
    return (REPO / "docs" / "investigations" / f"{name}.md").exists()


def on_files(files: Files, config: Any) -> Files:
    """Add a generated page per investigation whose page is not written by hand."""
    for name in investigations():
        if not written(name):
            files.append(File.generated(config, f"investigations/{name}.md", content=investigation_page(name)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Append the generated sections to a hand-written investigation page; fill the page's times blocks from the
    run.json of the runs they name (paths relative to the page)."""
    name = page.file.src_uri.removeprefix("investigations/").removesuffix(".md")
    if page.file.src_uri.startswith("investigations/") and name in investigations() and written(name):
        markdown = markdown.rstrip() + "\n\n" + investigation_page(name).split("\n", 1)[1]
    if "<!-- times " not in markdown:
        return markdown
    return accounts.render_blocks(markdown, Path(page.file.abs_src_path).parent)
