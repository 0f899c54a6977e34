"""Command line: yolo26kit list | run | report | env | bundle | stamp | matrix."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from . import catalog, env
from .errors import BadParameter, DeviceUnavailable, KitError


def _parse_overrides(pairs: list[str]) -> dict[str, Any]:
    overrides = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BadParameter(f"-p expects KEY=VALUE, got {pair!r}")
        overrides[key.strip()] = catalog.parse_value(value)
    return overrides


def build_plan(names: list[str], run_all: bool, profile: str, overrides: dict[str, Any],
               device: str) -> list[tuple[catalog.Investigation, dict[str, Any]]]:
    """Validate the whole command line and return (investigation, parameters) pairs; writes nothing."""
    if run_all == bool(names):
        raise BadParameter("name investigations or pass --all (not both); see `yolo26kit list`")
    chosen = catalog.all_investigations() if run_all else [catalog.get(n) for n in names]
    if device not in ("auto", "cpu", "cuda"):
        raise BadParameter(f"--device must be auto, cpu or cuda, got {device!r}")
    if device == "cuda" and not env.cuda_available():
        raise DeviceUnavailable("--device cuda was asked for but no CUDA GPU is visible; use --device cpu or auto")
    device = env.resolve_device(device)
    unused = set(overrides)
    plan = []
    for inv in chosen:
        params = inv.params
        mine = {k: v for k, v in overrides.items() if k in params}
        if len(chosen) == 1:
            mine = dict(overrides)  # a single notebook: every unknown key is an error
        unused -= set(mine)
        if "device" in params:
            mine.setdefault("device", device)
        plan.append((inv, inv.resolve(profile, mine)))
    if unused:
        raise BadParameter(f"parameter(s) {sorted(unused)} belong to none of {[i.name for i in chosen]}")
    return plan


def cmd_list(args: argparse.Namespace) -> int:
    for inv in catalog.all_investigations():
        print(f"{inv.name}  —  {inv.title}  (seeds: {', '.join(inv.seeds)}; notebook: notebooks/{inv.notebook.name})")
        for p in inv.params.values():
            if p.name in catalog.RUNNER_PARAMETERS:
                continue
            print(f"    {p.name}: {p.type} = {p.default!r}" + (f"   # {p.help}" if p.help else ""))
        for name, values in inv.profiles.items():
            print(f"    profile {name}: {json.dumps(values)}")
        print()
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()  # run.json's wall_seconds covers the whole call
    from . import runner

    if args.jobs is not None and args.jobs < 1:
        raise BadParameter("--jobs must be at least 1")
    if args.timeout is not None and args.timeout <= 0:
        raise BadParameter("--timeout must be positive")
    if args.cache and args.no_cache:
        raise BadParameter("--cache and --no-cache exclude each other")
    options = {"jobs": args.jobs or 0, "cache": args.cache or None, "use_cache": not args.no_cache, "t0": t0}
    if args.resume:
        given = [flag for flag, used in (("NAME", args.names), ("--all", args.all), ("-p", args.param),
                                         ("--profile", args.profile), ("--device", args.device), ("--out", args.out),
                                         ("--timeout", args.timeout is not None)) if used]
        if given:
            raise BadParameter(f"--resume takes the run's recorded plan; drop {', '.join(given)}")
        result = runner.resume(args.resume, **options)
    else:
        plan = build_plan(args.names, args.all, args.profile or "quick", _parse_overrides(args.param),
                          args.device or "auto")
        out = Path(args.out) if args.out else runner.DEFAULT_OUT
        result = runner.run(plan, out=out, timeout=args.timeout or runner.DEFAULT_TIMEOUT, log_output=args.log_output,
                            **options)
    print(runner.summary(result), flush=True)
    if result.state == "complete":
        print(f"run:     {result.run_dir / 'index.html'}")
        print(f"reports: {result.index}")
    return result.exit_code


def cmd_report(args: argparse.Namespace) -> int:
    from . import report, runner

    target = Path(args.dir) if args.dir else runner.DEFAULT_OUT
    if not target.is_dir():
        raise BadParameter(f"{target} is not a directory")
    runs = [target] if list(target.glob("*.results.json")) else report.find_runs(target)
    if not runs:
        raise BadParameter(f"no results.json under {target}")
    for run_dir in runs:
        print(report.render_run(run_dir, notebooks=not args.no_notebooks))
    root = target.parent if runs == [target] else target
    print(report.render_index(root))
    return 0


def cmd_stamp(args: argparse.Namespace) -> int:
    if env.git_revision() is None:
        raise BadParameter("no git checkout here: `yolo26kit stamp` records the revision of a checkout")
    print(f"revision {env.write_stamp()} recorded in {env.STAMP}")
    return 0


def cmd_bundle(args: argparse.Namespace) -> int:
    from . import bundle

    if env.git_revision() is not None:  # the copy that travels to the runner knows its revision without .git
        print(f"revision {env.write_stamp()} recorded in {env.STAMP}")
    manifest = bundle.build_wheelhouse(args.out, args.have, args.torch or None, args.python, args.max_mib)
    print(bundle.describe(manifest))
    problems = bundle.verify(args.out, bundle.read_have(args.have))
    for problem in problems:
        print(f"problem: {problem}", file=sys.stderr)
    print("\nOn the runner, from the repository root (with the wheelhouse folder next to it):")
    print(bundle.runner_command(wheelhouse=args.out))
    return 1 if problems else 0


def cmd_env(args: argparse.Namespace) -> int:
    print(json.dumps(env.fingerprint(), indent=2))
    return 0


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="yolo26kit", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="investigations, their parameters and profiles").set_defaults(fn=cmd_list)
    run = sub.add_parser("run", help="execute investigations with papermill into a new run directory")
    run.add_argument("names", nargs="*", metavar="NAME")
    run.add_argument("--all", action="store_true", help="every investigation")
    run.add_argument("--profile", default="", help="quick (minutes, the default) or full")
    run.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE",
                     help="override a notebook parameter (lists: comma-separated)")
    run.add_argument("--device", default="", help="auto (the default: CUDA if present, else CPU), cpu or cuda")
    run.add_argument("--out", default="", help="parent folder of the run directory (default reports/runs)")
    run.add_argument("--timeout", type=float, default=None, help="seconds per notebook (default 1800)")
    run.add_argument("--jobs", type=int, default=None, metavar="N",
                     help="notebooks at once (default: all of them on CUDA, 1 on CPU)")
    run.add_argument("--cache", default="", metavar="DIR",
                     help="compile cache folder (default $XDG_CACHE_HOME/yolo26kit or ~/.cache/yolo26kit)")
    run.add_argument("--no-cache", action="store_true", help="a fresh temporary compile cache, deleted at the end")
    run.add_argument("--resume", default="", metavar="RUN_DIR",
                     help="finish a stopped run in place: only the notebooks that did not finish")
    run.add_argument("--log-output", action="store_true",
                     help="stream every cell's output to the terminal instead of a progress bar (headless runners)")
    run.set_defaults(fn=cmd_run)
    rep = sub.add_parser("report", help="rebuild HTML and index pages from results on disk")
    rep.add_argument("dir", nargs="?", default="", help="a run directory or a folder of runs (default reports/runs)")
    rep.add_argument("--no-notebooks", action="store_true", help="only the index pages, not the notebook HTML")
    rep.set_defaults(fn=cmd_report)
    sub.add_parser("env", help="print the environment fingerprint").set_defaults(fn=cmd_env)
    sub.add_parser("stamp", help="record the git revision in yolo26kit/_revision.txt (for copies without .git)"
                   ).set_defaults(fn=cmd_stamp)
    bun = sub.add_parser("bundle", help="build an offline wheelhouse of what a GPU runner lacks")
    bun.add_argument("--have", default="data/runners/h100.txt", help="the runner's `pip freeze` or package names")
    bun.add_argument("--torch", default="", help="the runner's torch version (default: from --have)")
    bun.add_argument("--python", default="3.12", help="the runner's Python version")
    bun.add_argument("--out", default="wheelhouse", help="folder for the wheels and MANIFEST.json")
    bun.add_argument("--max-mib", type=float, default=64, help="limit for wheels plus repository, MiB")
    bun.set_defaults(fn=cmd_bundle)
    from . import matrix  # `yolo26kit matrix`: the same claims across stacks (yolo26kit/matrix.py)

    matrix.add_subcommand(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.fn(args)
    except KitError as exc:
        print(f"yolo26kit: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
