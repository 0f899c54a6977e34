"""Command line: yolo26kit list | run | report | times | new | matrix | bisect | stacks | cache | env | bundle | stamp."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any
from unittest import mock

from . import catalog, env, paths
from .paths import check_out
from .errors import BadOutput, BadParameter, BadResults, DeviceUnavailable, KitError, NoInvestigations


def _parse_overrides(pairs: list[str]) -> dict[str, Any]:
    overrides = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BadParameter(f"-p expects KEY=VALUE, got {pair!r}")
        overrides[key.strip()] = catalog.parse_value(value)
    return overrides


def investigations() -> list[catalog.Investigation]:
    """Every investigation with a notebook; none (notebooks/ missing or empty) is an error, not an empty list."""
    found = catalog.all_investigations()
    if not found:
        raise NoInvestigations(f"no investigation has a notebook in {catalog.NOTEBOOKS} (missing or empty); "
                               "run from a complete checkout of the kit")
    return found


def asks_for_cuda(name: str, value: Any) -> bool:
    """A parameter named device/devices (or *_device[s]) whose value, or one of its values, is cuda[:N]."""
    if not re.fullmatch(r"(\w+_)?devices?", name):
        return False
    values = value if isinstance(value, (list, tuple)) else [value]
    return any(isinstance(v, str) and re.fullmatch(r"cuda(:\d+)?", v.strip().lower()) for v in values)


def build_plan(names: list[str], run_all: bool, profile: str, overrides: dict[str, Any],
               device: str) -> list[tuple[catalog.Investigation, dict[str, Any]]]:
    """Validate the whole command line and return (investigation, parameters) pairs; writes nothing."""
    if run_all == bool(names):
        raise BadParameter("name investigations or pass --all (not both); see `yolo26kit list`")
    chosen = investigations() if run_all else [catalog.get(n) for n in names]
    device = env.resolve_device(device, what="--device")  # notebooks get the concrete device
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
    cuda = [f"{inv.name}: {k}={v!r}" for inv, params in plan for k, v in params.items() if asks_for_cuda(k, v)]
    if cuda and not env.cuda_available():
        raise DeviceUnavailable(f"{', '.join(cuda)} asks for CUDA but no CUDA GPU is visible; use cpu or auto")
    return plan


def claim_sites() -> list[tuple[str, str, str]]:
    """Each judged claim id with its investigation and the file:line of its judge (repository-relative)."""
    import inspect

    root = paths.ROOT
    sites = []
    for inv in catalog.all_investigations():
        for claim_id, judge in inv.judges.items():
            fn = inspect.unwrap(judge)
            try:
                where = f"{Path(inspect.getsourcefile(fn)).resolve().relative_to(root)}:{inspect.getsourcelines(fn)[1]}"
            except (TypeError, OSError, ValueError):
                where = getattr(fn, "__qualname__", repr(fn))
            sites.append((claim_id, inv.name, where))
    return sites


def backends_table() -> list[str]:
    """Every registered back-end (yolo26kit.backends) as a line: name, title, needs CUDA, usable here or why not."""
    from . import backends

    rows = [("back-end", "title", "needs CUDA", "installed here")]
    for name in backends.names():
        backend = backends.get(name)
        ok, why = backends.status(name)
        rows.append((name, backend.title, "yes" if backend.needs_cuda else "no", "yes" if ok else f"no: {why}"))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return ["  ".join([*(cell.ljust(w) for cell, w in zip(row, widths)), row[3]]) for row in rows]


def cmd_list(args: argparse.Namespace) -> int:
    if args.backends:
        print("\n".join(backends_table()))
        return 0
    if args.claims:
        for claim_id, name, where in claim_sites():
            print(f"{claim_id}  {name}  {where}")
        return 0
    for inv in investigations():
        print(f"{inv.name}  —  {inv.title}  (seeds: {', '.join(inv.seeds)}; notebook: notebooks/{inv.notebook.name})")
        for p in inv.params.values():
            if p.name in catalog.RUNNER_PARAMETERS:
                continue
            print(f"    {p.name}: {p.type} = {p.default!r}" + (f"   # {p.help}" if p.help else ""))
        for name, values in inv.profiles.items():
            print(f"    profile {name}: {json.dumps(values)}")
        print()
    return 0


def process_age() -> float:
    """Seconds since this process started (from /proc; 0 where it cannot be read): imports count too."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22 of stat: start time after boot, in ticks
        return max(0.0, float(Path("/proc/uptime").read_text().split()[0]) - started)
    except (OSError, ValueError, IndexError):
        return 0.0


def _gpus(text: str, on_this_machine: bool = True) -> list[str] | None:
    """`--gpus 0,1` as ids; None when not given (a CUDA batch then uses every visible GPU). On this machine
    (not a Ray cluster's nodes) each id must be a GPU it shows."""
    from .run import plan

    if not text:
        return None
    gpus = plan.parse_gpus(text)
    if not gpus or len(set(gpus)) != len(gpus) or not all(g.isdigit() for g in gpus):
        raise BadParameter(f"--gpus takes distinct GPU numbers, comma-separated (e.g. 0,1), not {text!r}")
    visible = plan.visible_gpus() if on_this_machine else gpus
    missing = [g for g in gpus if g not in visible]
    if missing:
        shown = f"GPUs {','.join(visible)}" if visible else "none"
        raise BadParameter(f"--gpus {text}: this machine has no GPU {','.join(missing)} (it shows {shown})")
    return gpus


def _run_or_resume(args: argparse.Namespace, t0: float) -> Any:
    """`run`'s checks, then the batch (runner.run) or the resumed one (runner.resume); its RunResult."""
    from .run import runner

    if args.jobs is not None and args.jobs < 1:
        raise BadParameter("--jobs must be at least 1")
    if args.step_slots is not None and args.step_slots < 1:
        raise BadParameter("--step-slots must be at least 1")
    if args.timeout is not None and args.timeout <= 0:
        raise BadParameter("--timeout must be positive")
    if args.stop_after is not None and args.stop_after <= 0:
        raise BadParameter("--stop-after must be a positive number of seconds")
    if args.cache and args.no_cache:
        raise BadParameter("--cache and --no-cache exclude each other")
    options = {"jobs": args.jobs or 0, "cache": args.cache or None, "use_cache": not args.no_cache, "t0": t0,
               "stop_after": args.stop_after, "executor": args.executor, "step_slots": args.step_slots or 0,
               "gpus": _gpus(args.gpus, not (args.executor == "ray" and os.environ.get("RAY_ADDRESS")))}
    if args.resume:
        given = [flag for flag, used in (("NAME", args.names), ("--all", args.all), ("-p", args.param),
                                         ("--profile", args.profile), ("--device", args.device), ("--out", args.out),
                                         ("--timeout", args.timeout is not None)) if used]
        if given:
            raise BadParameter(f"--resume takes the run's recorded plan; drop {', '.join(given)}")
        return runner.resume(args.resume, **options)
    profile, overrides = args.profile or "quick", _parse_overrides(args.param)
    plan = build_plan(args.names, args.all, profile, overrides, args.device or "auto")
    out = Path(args.out) if args.out else paths.DEFAULT_OUT
    check_out(out)
    return runner.run(plan, out=out, timeout=args.timeout or runner.DEFAULT_TIMEOUT, log_output=args.log_output,
                      profile=profile, overrides=overrides, **options)


def cmd_run(args: argparse.Namespace) -> int:
    # run.json's wall_seconds and the --stop-after deadline count from the start of the process, imports included
    t0 = time.perf_counter() - process_age()
    from .bench import isolate
    from .run import runner

    # The notebooks fork from this process's step server: it imports torch and papermill beside the checks. It
    # reads the run's compile cache (its CPU ISA pick, bench/vec_isa), so that cache is named before it starts.
    cache = {} if args.no_cache else {paths.CACHE_ENV: str(Path(args.cache).expanduser().resolve() if args.cache
                                                           else paths.default_cache_dir())}
    with mock.patch.dict(os.environ, cache):  # the caller's environment as it was afterwards (in-process calls)
        starting = isolate.start_server_soon() if args.executor == "local" else None
        try:
            result = _run_or_resume(args, t0)
        except KitError:
            if starting:  # a refused call leaves no step server behind
                starting.join()
                isolate.stop_server()
            raise
    print(runner.summary(result), flush=True)
    if result.state == "complete":
        print(f"run:     {result.run_dir / 'index.html'}")
        print(f"reports: {result.index}")
    isolate.stop_server()
    if runner.workers_alive():
        # A stopped run whose worker still waits on a step that was starting (e.g. the step server importing
        # torch): everything is written and every step tree ended; interpreter shutdown would wait on it.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(result.exit_code)
    return result.exit_code


def cmd_report(args: argparse.Namespace) -> int:
    from .report import pages, single_file

    target = Path(args.dir) if args.dir else paths.DEFAULT_OUT
    if not target.is_dir():
        raise BadParameter(f"{target} is not a directory")
    runs = [target] if list(target.glob("*.results.json")) else pages.find_runs(target)
    if not runs:
        raise BadParameter(f"no results.json under {target}")
    for run_dir in runs:  # all of them before any page is written
        check_results(run_dir)
    if args.single_file:  # self-contained HTML to send; the pages on disk stay as they are
        for path in single_file.single_files(target, args.all, Path(args.output) if args.output else None):
            print(path)
        return 0
    for run_dir in runs:
        print(pages.render_run(run_dir, notebooks=not args.no_notebooks))
    root = target.parent if runs == [target] else target
    print(pages.render_index(root))
    return 0


def cmd_times(args: argparse.Namespace) -> int:
    from .run import accounts

    print(accounts.table([Path(d) for d in args.dirs]))
    return 0


def check_results(run_dir: Path) -> None:
    """Every results.json of a run (and its run.json, if any) must read back; else BadResults, nothing written."""
    from . import findings

    for path in sorted(run_dir.glob("*.results.json")):
        try:
            findings.read_results(path)
        except (OSError, ValueError, AttributeError) as exc:
            raise BadResults(f"{path}: not a readable results.json ({type(exc).__name__}: "
                             f"{str(exc).splitlines()[0] if str(exc) else ''}); nothing written") from None
    if (run_dir / "run.json").exists():
        try:
            json.loads((run_dir / "run.json").read_text())["notebooks"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise BadResults(f"{run_dir / 'run.json'}: not a readable run.json ({type(exc).__name__}); "
                             "nothing written") from None


def cmd_new(args: argparse.Namespace) -> int:
    from .run import scaffold

    for path in scaffold.new(args.name, args.title, args.source, kind=args.kind):
        print(path.relative_to(scaffold.ROOT))
    print(f"\nnext: yolo26kit run {args.name}   (then edit measure.py, judge.py, conclude.py and data/claims/{args.name}.json; "
          "docs/authoring.md)")
    return 0


def scaffold_kinds() -> dict[str, str]:
    """`yolo26kit new --kind` choices: each shape of bug the scaffold writes, in one line."""
    from .run import scaffold

    return {name: kind.about for name, kind in scaffold.KINDS.items()}


def cmd_stamp(args: argparse.Namespace) -> int:
    if env.git_revision() is None:
        raise BadParameter("no git checkout here: `yolo26kit stamp` records the revision of a checkout")
    print(f"revision {env.write_stamp()} recorded in {env.STAMP}")
    return 0


def cmd_bundle(args: argparse.Namespace) -> int:
    from .run import bundle

    if env.git_revision() is not None:  # the copy that travels to the runner knows its revision without .git
        print(f"revision {env.write_stamp()} recorded in {env.STAMP}")
    manifest = bundle.build_wheelhouse(args.out, args.have, args.torch or None, args.python, args.max_mib,
                                       only=args.only or None)
    print(bundle.describe(manifest))
    problems = bundle.verify(args.out, bundle.read_have(args.have))
    for problem in problems:
        print(f"problem: {problem}", file=sys.stderr)
    print("\nOn the runner, from the repository root (with the wheelhouse folder next to it):")
    print(bundle.runner_command(wheelhouse=args.out))
    return 1 if problems else 0


def cmd_cache(args: argparse.Namespace) -> int:
    import tarfile

    from .run import cache_transfer

    root = Path(args.cache).expanduser() if args.cache else paths.default_cache_dir()
    if args.action == "info":
        print(cache_transfer.describe(root))
        return 0
    if not args.archive:  # no default: a .tgz in the working folder would land in the checkout
        raise BadParameter(f"cache {args.action} needs the archive's path, e.g. yolo26kit cache {args.action} "
                           "timings.tgz")
    archive = Path(args.archive)
    if args.action == "export":
        if not root.is_dir():
            raise BadParameter(f"no compile cache at {root}")
        try:
            facts = cache_transfer.export(root, archive)
        except OSError as exc:
            raise BadOutput(f"{archive}: cannot write ({exc.strerror or exc})") from None
        print(f"{archive}: {facts['files']} files, {facts['bytes'] / 1024:.0f} KiB; autotuned {facts['autotuned']}")
        return 0
    try:
        facts = cache_transfer.import_(root, archive)
    except (OSError, tarfile.TarError, ValueError) as exc:
        raise BadParameter(f"{archive}: cannot import ({exc}); nothing written") from None
    print(f"{root}: {facts['added']} files added, {facts['merged']} merged, {facts['kept']} kept; "
          f"autotuned {facts['autotuned']}")
    return 0


def cmd_env(args: argparse.Namespace) -> int:
    print(json.dumps(env.fingerprint(), indent=2))
    return 0


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="yolo26kit", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    lst = sub.add_parser("list", help="investigations, their parameters and profiles")
    lst.add_argument("--claims", action="store_true", help="each judged claim id with the file and line of its judge")
    lst.add_argument("--backends", action="store_true",
                     help="every back-end: what it is, whether it needs CUDA, whether it is installed here")
    lst.set_defaults(fn=cmd_list)
    run = sub.add_parser("run", help="execute investigations with papermill into a new run directory")
    run.add_argument("names", nargs="*", metavar="NAME")
    run.add_argument("--all", action="store_true", help="every investigation")
    run.add_argument("--profile", default="", help="quick (minutes, the default) or full")
    run.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE",
                     help="override a notebook parameter (lists: comma-separated)")
    run.add_argument("--device", default="", help="auto (the default: CUDA if present, else CPU), cpu or cuda")
    run.add_argument("--out", default="", help="parent folder of the run directory (default reports/runs)")
    run.add_argument("--timeout", type=float, default=None, help="seconds per notebook (default 1800)")
    run.add_argument("--gpus", default="", metavar="IDS",
                     help="GPUs a CUDA batch spreads its notebooks over, e.g. 0,1 (default: every visible GPU)")
    run.add_argument("--executor", choices=("local", "ray"), default="local",
                     help="local (threads of this process) or ray (a Ray task per notebook: a local Ray, or RAY_ADDRESS)")
    run.add_argument("--jobs", type=int, default=None, metavar="N",
                     help="notebooks at once (default: all of them on CUDA, 1 on CPU)")
    run.add_argument("--step-slots", type=int, default=None, metavar="N",
                     help="isolated steps (compiles, lowerings, timed children) at once across notebooks run side by "
                          "side (default: half the cores)")
    run.add_argument("--cache", default="", metavar="DIR",
                     help="compile cache folder (default $XDG_CACHE_HOME/yolo26kit or ~/.cache/yolo26kit)")
    run.add_argument("--no-cache", action="store_true", help="a fresh temporary compile cache, deleted at the end")
    run.add_argument("--resume", default="", metavar="RUN_DIR",
                     help="finish a stopped run in place: only the notebooks that did not finish")
    run.add_argument("--stop-after", type=float, default=None, metavar="SECONDS",
                     help="end the call cleanly by then (what did not finish is resumable; exit code 75); "
                          "for runners with a time limit per call, with --resume too")
    run.add_argument("--log-output", action="store_true",
                     help="stream every cell's output to the terminal instead of a progress bar (headless runners)")
    run.set_defaults(fn=cmd_run)
    rep = sub.add_parser("report", help="rebuild HTML and index pages from results on disk")
    rep.add_argument("dir", nargs="?", default="", help="a run directory or a folder of runs (default reports/runs)")
    rep.add_argument("--no-notebooks", action="store_true", help="only the index pages, not the notebook HTML")
    rep.add_argument("--single-file", action="store_true",
                     help="write a self-contained HTML instead: of DIR when it is a run, else of each stack's newest "
                          "batch under DIR (its run page, outputs-only notebook pages and plots)")
    rep.add_argument("--all", action="store_true",
                     help="with --single-file on a folder of runs: one file with the index and every current run")
    rep.add_argument("-o", "--output", default="", metavar="FILE",
                     help="with --single-file: where to write it (default DIR/<DIR name>.single.html)")
    rep.set_defaults(fn=cmd_report)
    new = sub.add_parser("new", help="scaffold an investigation that runs and is judged at once")
    new.add_argument("name", help="lower-case name: package, notebook, ledger and test share it")
    new.add_argument("--title", default="", help="one line: the question it answers")
    new.add_argument("--source", default="kit",
                     help="where the claims come from: kit, an issue URL, a seed file name, or a file (copied)")
    new.add_argument("--kind", default="timing", choices=sorted(scaffold_kinds()),
                     help="the shape of bug: " + "; ".join(f"{k}: {v}" for k, v in sorted(scaffold_kinds().items())))
    new.set_defaults(fn=cmd_new)
    tim = sub.add_parser("times", help="a markdown table of run times and cache hits, read from run folders' run.json")
    tim.add_argument("dirs", nargs="+", metavar="RUN_DIR", help="run folders, one column each")
    tim.set_defaults(fn=cmd_times)
    cac = sub.add_parser("cache", help="the compile cache: info, or export/import its autotune timings between machines")
    cac.add_argument("action", choices=["info", "export", "import"])
    cac.add_argument("archive", nargs="?", default="", help="export/import: the .tgz to write or read")
    cac.add_argument("--cache", default="", metavar="DIR", help="the cache folder (default: as for `run`)")
    cac.set_defaults(fn=cmd_cache)
    sub.add_parser("env", help="print the environment fingerprint").set_defaults(fn=cmd_env)
    sub.add_parser("stamp", help="record the git revision in yolo26kit/_revision.txt (for copies without .git)"
                   ).set_defaults(fn=cmd_stamp)
    bun = sub.add_parser("bundle", help="build an offline wheelhouse of what a GPU runner lacks")
    bun.add_argument("--have", default="data/runners/h100.txt", help="the runner's `pip freeze` or package names")
    bun.add_argument("--torch", default="", help="the runner's torch version (default: from --have)")
    bun.add_argument("--python", default="3.12", help="the runner's Python version")
    bun.add_argument("--out", default="wheelhouse", help="folder for the wheels and MANIFEST.json")
    bun.add_argument("--max-mib", type=float, default=64, help="limit for wheels plus repository, MiB")
    bun.add_argument("--only", action="append", default=[], metavar="REQ",
                     help="these requirements instead of the kit's (repeatable), e.g. ray==2.60.0 for a second call")
    bun.set_defaults(fn=cmd_bundle)
    from .matrix import plan as matrix  # `yolo26kit matrix`: the same claims across stacks (yolo26kit/matrix/)

    matrix.add_subcommand(sub)
    from .matrix import bisect, stack_cache  # `yolo26kit bisect` over a package's releases; `yolo26kit stacks`

    bisect.add_subcommand(sub)
    stack_cache.add_subcommand(sub)
    from .repro import command as repro  # `yolo26kit repro`: a finding's standalone repro and upstream report

    repro.add_subcommand(sub)
    return ap


def absolute_pythonpath() -> None:
    """PYTHONPATH's relative folders made absolute against the folder the command was started in, as Python reads
    them: notebook kernels and their steps run elsewhere (`-p model=module:factory` with PYTHONPATH=tests)."""
    value = os.environ.get("PYTHONPATH", "")
    if value:
        os.environ["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) if p else p for p in value.split(os.pathsep))


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    absolute_pythonpath()
    try:
        return args.fn(args)
    except KitError as exc:
        print(f"yolo26kit: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
