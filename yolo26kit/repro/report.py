"""A finding's folder with repro.py, ISSUE.md and reproduced.json (and minified.py).

The kit's evidence comes from the run's results.json: its `findings` list where it has one, else the claims the
finding names whose evidence holds the finding's mark. Without `--run`, the newest committed run that holds it.
The folder is `reports/runs/findings/<id>/` (ignored by git) unless an out folder is named: then
`<out>/<run>/findings/<id>/`, so `--out reports` writes beside a committed run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..paths import DEFAULT_OUT
from . import script
from .catalog import Finding, ReproError, template_text

FINDINGS_DIR = "findings"
STACK_KEYS = ("torch", "executorch", "ultralytics", "torchvision", "cuda", "device", "python")


def evidence_in(results: dict[str, Any], finding: Finding) -> dict[str, Any] | None:
    """The finding's evidence in one results.json: its `findings` entry, else the first claim that names it."""
    for entry in results.get("findings") or []:
        if entry.get("id") == finding.id:
            return {"claim": ", ".join(entry.get("claims") or []), "verdict": "finding",
                    "evidence": entry.get("evidence", ""), "stack": entry.get("stack") or {}}
    for claim in results.get("claims", []):
        if claim.get("id") in finding.claims and finding.evidence_mark in claim.get("evidence", ""):
            stack = {k: v for k, v in (results.get("environment") or {}).items() if k in STACK_KEYS}
            return {"claim": claim["id"], "verdict": claim.get("verdict", ""), "evidence": claim["evidence"],
                    "stack": stack}
    return None


def find_evidence(finding: Finding, reports: Path, run: Path | None = None) -> dict[str, Any]:
    """The run holding the finding's evidence (the given one, else the newest under reports/) and that evidence."""
    runs = [run] if run else sorted((p for p in Path(reports).iterdir() if p.is_dir()
                                     and (p / f"{finding.investigation}.results.json").exists()), reverse=True)
    for folder in runs:
        path = Path(folder) / f"{finding.investigation}.results.json"
        try:
            found = evidence_in(json.loads(path.read_text()), finding)
        except (OSError, ValueError):
            continue
        if found:
            return {"run": Path(folder).name, "run_dir": Path(folder), **found}
    where = run or reports
    raise ReproError(f"no {finding.investigation} run under {where} shows {finding.id} "
                     f"(its evidence names {finding.evidence_mark!r})")


def seen_on(evidence: dict[str, Any]) -> str:
    """One header line: the versions and device the kit saw the bug on, and the run."""
    stack = evidence["stack"]
    parts = [f"{k} {stack[k]}" for k in ("torch", "executorch", "ultralytics") if stack.get(k)]
    device = stack.get("device") or ""
    return f"{', '.join(parts)}{' on ' + device if device else ''} (kit run {evidence['run']}, {evidence['claim']})"


def finding_folder(finding: Finding, evidence: dict[str, Any], out: Path | None = None) -> Path:
    """Where a finding's folder goes: `<out>/<run>/findings/<id>/` when an out folder is named, else the local
    `reports/runs/findings/<id>/` (a tracked run's folder is written only when asked for)."""
    if out is None:
        return DEFAULT_OUT / FINDINGS_DIR / finding.id
    return Path(out) / evidence["run"] / FINDINGS_DIR / finding.id


def write_repro(finding: Finding, evidence: dict[str, Any], out: Path | None = None) -> Path:
    """Write the finding's repro.py (finding_folder) from the template with its seen-on line; the folder."""
    folder = finding_folder(finding, evidence, out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "repro.py").write_text(script.with_seen_on(template_text(finding), [seen_on(evidence)]))
    return folder


def _fence(text: str, lang: str = "") -> str:
    return f"```{lang}\n{text.rstrip()}\n```"


def issue_markdown(finding: Finding, folder: Path, evidence: dict[str, Any], reproduced: dict[str, Any] | None,
                   environment: str, minified: dict[str, Any] | None) -> str:
    """ISSUE.md: what a maintainer reads, in the order they read it."""
    repro = (folder / "repro.py").read_text()
    out = [f"# {finding.title}", "", f"For: {finding.upstream}/issues", "", "## What happens", "", finding.happens, "",
           "## What is expected", "", finding.expected, "", "## Repro", "",
           "Standalone: `python repro.py` (it imports only the packages its header names). It exits 1 with the "
           "failure's own message when the bug bites, 0 when it does not, and 77, saying so, where what it needs "
           "cannot run (no CUDA device).", "", _fence(repro, "python"), ""]
    if reproduced:
        versions = ", ".join(f"{k} {v}" for k, v in sorted(reproduced.get("versions", {}).items()))
        env = reproduced.get("environment", {})
        made = "a fresh uv environment" if env.get("kind") == "uv" else "the interpreter as it is"
        out += ["## Output", "", f"Run in {made} with only the packages the header pins ({versions}); "
                f"exit {reproduced['exit_code']} after {reproduced['seconds']} s: **{reproduced['outcome']}**.", "",
                _fence("\n".join(reproduced.get("output_tail", "").splitlines()[-15:])), ""]
    if minified and minified.get("text") and minified.get("verified"):
        out += ["## Minified by PyTorch's minifier", "",
                f"{minified['how']}: the failing graph went from {minified['launcher_ops']} operator calls to "
                f"{minified['minified_ops']} (`minified.py` beside this file).", "",
                _fence(minified["text"], "python"), ""]
    elif minified:
        why = minified.get("error") or "its smallest graph no longer fails with the finding's message"
        out += ["## Minifier", "", f"PyTorch's after-AOT minifier was tried: {why}", ""]
    if environment:
        out += ["## Environment", "", "`python -m torch.utils.collect_env` in that environment:", "",
                _fence(environment), ""]
    if finding.workaround:
        out += ["## Workaround", "", finding.workaround, ""]
    out += ["## Related upstream", ""]
    out += [f"- {r.url}: {r.why}" for r in finding.related] or ["- none found yet"]
    out += ["", "## Where yolo26kit met it", "",
            f"Run `{evidence['run']}`, claim `{evidence['claim']}` (verdict {evidence['verdict']}), on "
            f"{', '.join(f'{k} {v}' for k, v in evidence['stack'].items())}:", "",
            f"> {evidence['evidence'][:1200]}", "",
            "Check whether a stack still has it: `yolo26kit repro --check <this folder>` (exit 0 fixed here, 1 still "
            "bites, 3 fails differently, 4 cannot run here).", ""]
    return "\n".join(out)
