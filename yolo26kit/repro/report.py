"""A finding's folder: repro.py, ISSUE.md (what a maintainer reads, in upstream's bug template), README.md (how the
kit met it and how to re-check it), reproduced.json, and checked/ (its runs over releases: its timeline).

The kit's evidence comes from the run's results.json: its `findings` list where it has one, else the claims the
finding names whose evidence holds the finding's mark. Without `--run`, the newest committed run that holds it; a
finding no run holds yet (one reproduced on another stack than the runs') is written without it.
The folder is `reports/runs/findings/<id>/` (ignored by git) unless an out folder is named: then
`<out>/findings/<id>/`, so `--out reports` writes the committed one that every run's page links.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..paths import DEFAULT_OUT
from ..run.bundle import RUNNER_SITE
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
    if run:
        raise ReproError(f"the {finding.investigation} run {run} does not show {finding.id} "
                         f"(its evidence names {finding.evidence_mark!r})")
    return {}  # no run under reports/ shows it: the folder is written from the repro's own runs


def seen_on(evidence: dict[str, Any]) -> str:
    """One header line: the versions and device the kit saw the bug on, and the run."""
    if not evidence:
        return "(no kit run under reports/ shows it yet; its checks over releases are in checked/)"
    stack = evidence["stack"]
    parts = [f"{k} {stack[k]}" for k in ("torch", "executorch", "ultralytics") if stack.get(k)]
    device = stack.get("device") or ""
    return f"{', '.join(parts)}{' on ' + device if device else ''} (kit run {evidence['run']}, {evidence['claim']})"


def finding_folder(finding: Finding, out: Path | None = None) -> Path:
    """Where a finding's folder goes: `<out>/findings/<id>/` when an out folder is named, else the local
    `reports/runs/findings/<id>/` (the committed folder is written only when asked for)."""
    return (Path(out) if out is not None else DEFAULT_OUT) / FINDINGS_DIR / finding.id


def write_repro(finding: Finding, evidence: dict[str, Any], out: Path | None = None) -> Path:
    """Write the finding's repro.py (finding_folder) from the template with its seen-on line; the folder."""
    folder = finding_folder(finding, out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "repro.py").write_text(script.with_seen_on(template_text(finding), [seen_on(evidence)]))
    return folder


def native_backtrace(finding: Finding, evidence: dict[str, Any], frames: int = 20) -> tuple[str, str] | None:
    """(file name, the first `frames` frames) of the native backtrace a crash file of the evidence run holds for this
    finding (one whose text names the finding's evidence mark); None where no crash was diagnosed under a debugger."""
    run_dir = evidence.get("run_dir") if evidence else None
    for path in sorted(Path(run_dir).glob("*.crash.txt")) if run_dir else []:
        text = path.read_text(errors="replace")
        lines = [line for line in text.splitlines() if re.match(r"#\d+\s", line)]
        if lines and finding.evidence_mark in text:
            return path.name, "\n".join(re.sub(r"/tmp/[^ ]*/", "<tmp>/", line) for line in lines[:frames])
    return None


def _site(text: str) -> str:
    """A traceback from a GPU runner with the folder its wheelhouse went to (bundle.RUNNER_SITE) as site-packages."""
    return text.replace(f"{RUNNER_SITE}/", "<site-packages>/")


def _fence(text: str, lang: str = "") -> str:
    return f"```{lang}\n{text.rstrip()}\n```"


KIT_HEADER = ("# finding:", "# seen-on:")  # the kit's own header lines: README.md says them


def maintainer_view(repro: str) -> str:
    """The repro as ISSUE.md shows it: without the kit's own header lines (its finding id, the runs that saw it)."""
    return "\n".join(line for line in repro.splitlines() if not line.startswith(KIT_HEADER)) + "\n"


def _threads(summary: dict[str, Any]) -> list[str]:
    return [f"- [{t['ref']}]({t['url']}) ({t['kind']}, {t['state']}): {t['relation']} — {t['why']}"
            for t in summary["threads"]] or ["- none found (searched the issue and pull-request threads)"]


def issue_markdown(finding: Finding, folder: Path, evidence: dict[str, Any], reproduced: dict[str, Any] | None,
                   environment: str, minified: dict[str, Any] | None) -> str:
    """ISSUE.md in upstream's bug template: the bug, the minimal repro, expected and actual with the whole traceback,
    the versions (collect_env), where it bites and where it is fixed, related threads. Nothing about the kit."""
    from . import upstream

    summary = upstream.summary(finding.id, folder)
    repro = maintainer_view((folder / "repro.py").read_text())
    out = [f"# {finding.title}", "", f"Tracker: {summary['tracker'] or finding.upstream + '/issues'}"
           + (f" · component: {summary['component']}" if summary["component"] else ""), "",
           f"> Upstream status: {summary['advice']}.", "", "### 🐛 Describe the bug", "", finding.happens, "",
           "Minimal repro (standalone; `python repro.py` exits 1 with the failure's message when the bug bites, 0 "
           "when it does not, 77 where what it needs cannot run):", "", _fence(repro, "python"), "",
           "**Expected:** " + finding.expected, ""]
    if (folder / "minimal.py").is_file():  # a hand-made smaller repro beside the model's (its checks: checked/minimal-*)
        out += ["The same failure in a few lines of torch alone (`minimal.py`):", "",
                _fence((folder / "minimal.py").read_text(), "python"), ""]
    if reproduced:
        versions = ", ".join(f"{k} {v}" for k, v in sorted(reproduced.get("versions", {}).items()))
        out += [f"**Actual** ({versions}; exit {reproduced['exit_code']}, {reproduced['outcome']}):", "",
                _fence(_site("\n".join(reproduced.get("output_tail", "").splitlines()[-12:]))), ""]
        if reproduced.get("traceback"):
            out += ["<details><summary>Full traceback</summary>", "", _fence(_site(reproduced["traceback"])), "",
                    "</details>", ""]
        elif (native := native_backtrace(finding, evidence)):  # a crash: no Python traceback, the debugger's frames
            out += ["<details><summary>Native backtrace of the crash (under a debugger)</summary>", "",
                    _fence(native[1]), "", "</details>", ""]
    if minified and minified.get("text") and minified.get("verified"):
        out += [f"Minified by PyTorch's after-AOT minifier ({minified['launcher_ops']} → {minified['minified_ops']} "
                "operator calls):", "", _fence(minified["text"], "python"), ""]
    out += ["### Versions", ""]
    if environment:
        out += [_fence(environment)]
    elif reproduced:  # a run on a host where collect_env was not captured: what its record says
        env = reproduced.get("environment", {})
        said = [f"{k}: {v}" for k, v in sorted(reproduced.get("versions", {}).items())]
        said += [f"{k}: {env[k]}" for k in ("python", "platform", "machine") if env.get(k)]
        out += [_fence("\n".join(said)), "", "(from the run's record; collect_env was not captured on that host)"]
    else:
        out += ["(not run for this report: `python -m torch.utils.collect_env` where it bites)"]
    out += ["", "### Where it bites", "", f"{summary['timeline']['words']}: `repro.py` run on each release (the "
            "records, one per release and device, in `checked/`).", ""]
    if finding.workaround:
        out += ["### Workaround", "", workaround_text(finding, summary), ""] + _workaround_measured(summary)
    out += ["### Related", ""] + _threads(summary) + [""]
    return "\n".join(out)


def _met_by_other_repros(finding: Finding, folder: Path) -> list[str]:
    """Where another finding's repro, checked over releases, ran into this finding's message (checked/*.json)."""
    met: dict[str, list[str]] = {}
    for path in sorted(folder.parent.glob("*/checked/*.json")):
        if path.parent.parent == folder:
            continue
        record = json.loads(path.read_text())
        if finding.evidence_mark in record.get("output_tail", "") + record.get("traceback", ""):
            met.setdefault(path.parent.parent.name, []).append(str(record.get("versions", {}).get("torch", "?")))
    return [f"The repro of `{other}` meets it past its own bug on torch {', '.join(releases)} "
            f"(`../{other}/checked/`)." for other, releases in met.items()] + ([""] if met else [])


def workaround_text(finding: Finding, summary: dict[str, Any]) -> str:
    """The finding's workaround, its "{fixed_from}" the first fixed release its checks measured (one source)."""
    return finding.workaround.replace("{fixed_from}", summary["timeline"].get("fixed_from") or "(no fixed release "
                                      "measured yet)")


def _workaround_measured(summary: dict[str, Any]) -> list[str]:
    """The workaround's own checks over releases, where it has a script (workaround/checked/)."""
    said = (summary.get("workaround") or {}).get("words")
    return [f"Measured: {said} (one record per release in `workaround/checked/`).", ""] if said else []


def readme_markdown(finding: Finding, folder: Path, evidence: dict[str, Any]) -> str:
    """README.md beside ISSUE.md: how yolo26kit met the finding, its timeline, and how to re-check it."""
    from . import upstream

    summary = upstream.summary(finding.id, folder)
    out = [f"# {finding.id}", "", f"**{finding.title}**", "", f"What to do: **{summary['advice']}**.", ""]
    if finding.workaround:
        out += [f"Workaround: {workaround_text(finding, summary)}", ""] + _workaround_measured(summary)
    otherwise = dict(summary["timeline"].get("differently") or [])
    out += ["## Releases", "", "| release | answer | past the finding |", "|---|---|---|"]
    out += [f"| {summary['timeline']['package']} {v} | {o} | "
            f"{'a repro fails otherwise: ' + otherwise[v] if v in otherwise else ''} |"
            for v, o in summary["timeline"]["answers"]] or ["| (none checked) | | |"]
    out += ["", summary["timeline"]["words"] + ".", "", "## Upstream", ""] + _threads(summary)
    out += ["", "## Where yolo26kit met it", ""]
    if evidence:
        out += [f"Run `{evidence['run']}`, claim `{evidence['claim']}` (verdict {evidence['verdict']}), on "
                f"{', '.join(f'{k} {v}' for k, v in evidence['stack'].items())}:", "",
                f"> {evidence['evidence'][:1200]}", ""]
    else:
        out += ["No committed run under reports/ shows it yet: its checks over releases (checked/) are the evidence.",
                ""] + _met_by_other_repros(finding, folder)
    out += ["## Re-check it", "", "```bash",
            f"yolo26kit repro --check {folder.as_posix()}                        # this stack",
            f"yolo26kit repro --check {folder.as_posix()} --pin torch==2.15.0 --record   # another release, kept in "
            "checked/", "```", "",
            "Exit status of --check: 0 fixed here, 1 still bites, 3 fails differently, 4 cannot run here.", ""]
    return "\n".join(out)
