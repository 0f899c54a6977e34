"""`yolo26kit repro`: write a finding's repro folder, or check a repro folder on this stack."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..paths import REPORTS, check_out
from . import catalog, clean_env, report, script
from .catalog import ReproError, findings

CHECK_HELP = ("exit status of --check: 0 fixed here, 1 still bites, 3 fails differently (it fails, but not with the "
              "finding's own message), 4 cannot run here (no CUDA, or the environment could not be made), 2 bad input")


def cuda_here() -> bool:
    """Whether this interpreter's torch sees a CUDA device."""
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return False


def record_environment(reproduced: dict[str, Any], header: script.Header, envs: str | None = None) -> str:
    """collect_env of the run a record keeps: its own, else (an older record of a clean environment) that of an
    environment pinned to the record's releases; '' for a run elsewhere that kept none (ISSUE.md then lists the
    record's packages)."""
    if reproduced.get("collect_env"):
        return reproduced["collect_env"]
    if reproduced.get("environment", {}).get("kind") != "uv":
        return ""
    pins = {k: v for k, v in reproduced.get("versions", {}).items() if k in header.pins()}
    made = clean_env.prepare(header.with_pins(pins), envs)  # reused when still here, else made again
    return clean_env.collect_env(made["python"]) if made.get("python") else ""


def write_finding(name: str, reports: Path, run: Path | None = None, execute: bool = True, minify: bool = False,
                  envs: str | None = None, log: Any = print, out: Path | None = None) -> Path:
    """Write the finding's folder (report.finding_folder: `reports/runs/findings/<id>/` unless `out` names another
    parent): repro.py, then (run here) reproduced.json, minified.py, ISSUE.md and README.md."""
    finding = findings.get(name)
    evidence = report.find_evidence(finding, reports, run)
    if out is not None:
        check_out(out)
    folder = report.write_repro(finding, evidence, out)
    if finding.workaround_template:  # the workaround as a script of its own, checked like a repro (workaround/)
        (folder / "workaround").mkdir(exist_ok=True)
        text = (catalog.TEMPLATES / finding.workaround_template).read_text()
        (folder / "workaround" / "repro.py").write_text(script.with_seen_on(text, [report.seen_on(evidence)]))
    header = script.parse((folder / "repro.py").read_text())
    reproduced, environment, minified = None, "", None
    runnable = header.device == "cpu" or cuda_here()
    if execute and not runnable:
        log(f"[repro] {finding.id}: not run here: repro.py needs {header.device.upper()}, which this machine lacks "
            f"(`yolo26kit repro --check {folder}` on one that has it)")
    if execute and runnable:
        log(f"[repro] {finding.id}: running repro.py in a clean environment ({' '.join(header.requires)})")
        reproduced = clean_env.reproduce(folder / "repro.py", header, envs, keep_env=True)
        (folder / "reproduced.json").write_text(json.dumps(reproduced, indent=1) + "\n")
        log(f"[repro] {reproduced['outcome']}: exit {reproduced['exit_code']} in {reproduced['seconds']} s: "
            f"{reproduced['error_line']}")
        environment = reproduced.get("collect_env", "")
        made = clean_env.prepare(header, envs)
        if "python" in made:
            if minify and finding.shrink == "aot" and reproduced["outcome"] == script.STILL_BITES:
                from .minify import minify_after_aot

                log(f"[repro] {finding.id}: minifying with PyTorch's after-AOT minifier")
                # the minifier matches the message in repr(exception): no "NameError: " prefix there
                minified = minify_after_aot(folder / "repro.py", made["python"], header.bites_with.split(": ", 1)[-1])
                if minified.get("text"):
                    (folder / "minified.py").write_text(minified["text"])
                (folder / "minified.json").write_text(json.dumps({k: v for k, v in minified.items() if k != "text"},
                                                                 indent=1) + "\n")
    elif (folder / "minified.json").exists():
        minified = json.loads((folder / "minified.json").read_text())
        if (folder / "minified.py").exists():
            minified["text"] = (folder / "minified.py").read_text()
    if reproduced is None and (folder / "reproduced.json").exists():
        reproduced = json.loads((folder / "reproduced.json").read_text())
        environment = record_environment(reproduced, header, envs)
    (folder / "ISSUE.md").write_text(report.issue_markdown(finding, folder, evidence, reproduced, environment,
                                                           minified))
    (folder / "README.md").write_text(report.readme_markdown(finding, folder, evidence))
    log(f"[repro] {folder}")
    return folder


def check(folder: Path, clean: bool = False, pins: dict[str, str] | None = None, envs: str | None = None,
          record: bool = False) -> dict[str, Any]:
    """Re-run a repro folder's repro.py on this stack (or a clean one with its pins): the run's record."""
    repro = Path(folder) / "repro.py"
    if not repro.exists():
        raise ReproError(f"{folder}: no repro.py (a folder `yolo26kit repro` wrote)")
    header = script.parse(repro.read_text())
    if pins:
        header = header.with_pins(pins)
    found = clean_env.reproduce(repro, header, envs, python="" if clean or pins else sys.executable, keep_env=record)
    if record:
        versions = "-".join(f"{k}{v}" for k, v in sorted(found.get("versions", {}).items()) if k in ("torch",
                            "executorch", "ultralytics"))
        target = Path(folder) / "checked" / f"{versions or 'unknown'}-{'cuda' if cuda_here() else 'cpu'}.json"
        target.parent.mkdir(exist_ok=True)
        target.write_text(json.dumps(found, indent=1) + "\n")
    return found


def _pins(values: list[str]) -> dict[str, str]:
    found = {}
    for value in values:
        name, sep, version = value.partition("==")
        if not sep or not version:
            raise ReproError(f"--pin {value!r}: write PACKAGE==VERSION")
        found[name.lower()] = version
    return found


def add_subcommand(sub: Any) -> None:
    """`yolo26kit repro`: registered by cli.parser()."""
    p = sub.add_parser("repro", help="a standalone repro, an upstream report and a clean-environment run of a finding",
                       epilog=CHECK_HELP)
    p.add_argument("finding", nargs="?", metavar="CLAIM-OR-FINDING",
                   help=f"a finding id (or a claim that names one): {', '.join(f.id for f in findings.all())}")
    p.add_argument("--run", default="", metavar="DIR", help="the run whose evidence it cites (default: the newest "
                   "committed run under reports/ that shows it)")
    p.add_argument("--reports", default="", metavar="DIR", help="where runs are looked for (default reports/)")
    p.add_argument("--out", default="", metavar="DIR", help="write DIR/findings/<id>/ (--out reports: the committed "
                   "folder every page links) instead of reports/runs/findings/<id>/ (ignored by git)")
    p.add_argument("--no-run", action="store_true", help="write repro.py and ISSUE.md only")
    p.add_argument("--minify", action="store_true", help="shrink a compile failure with PyTorch's minifier")
    p.add_argument("--check", default="", metavar="DIR", help="re-run a repro folder here: still bites / fixed here")
    p.add_argument("--clean", action="store_true", help="with --check: in a fresh environment of its pinned packages")
    p.add_argument("--pin", action="append", default=[], metavar="PKG==V",
                   help="with --check: another release of a package (implies --clean)")
    p.add_argument("--record", action="store_true", help="with --check: keep the run under DIR/checked/")
    p.add_argument("--envs", default="", metavar="DIR", help="clean environments (default <compile cache>/matrix-envs)")
    p.set_defaults(fn=main)


def main(args: argparse.Namespace) -> int:
    """The `repro` subcommand; see CHECK_HELP for --check's exit status. Bad input (ReproError) is the CLI's exit 2."""
    if args.check:
        found = check(Path(args.check), args.clean, _pins(args.pin), args.envs or None, args.record)
        versions = ", ".join(f"{k} {v}" for k, v in sorted(found.get("versions", {}).items()))
        said = f": {found['error_line']}" if found["error_line"] else ""
        print(f"{found['outcome']} ({versions}; exit {found['exit_code']}, {found['seconds']} s){said}")
        return script.CHECK_EXIT[found["outcome"]]
    if not args.finding:
        raise ReproError("name a finding (or a claim), or --check a repro folder")
    write_finding(args.finding, Path(args.reports) if args.reports else REPORTS,
                  Path(args.run) if args.run else None, not args.no_run, args.minify, args.envs or None,
                  out=Path(args.out) if args.out else None)
    return 0
