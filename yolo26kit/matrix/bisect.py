"""`yolo26kit bisect`: the first release of a package where a claim's verdict changes, like `git bisect`.

Decisions:

- The releases are the registry's (PyPI's JSON API), final releases only, in version order; an upper bound with
  fewer than three parts covers its whole series (`--to 2.15` includes 2.15.1).
- A release is probed in a stack of its own: the current stack's pins (pyproject.toml) with the release, and the
  packages that must pair with it resolved by uv: torchvision and torchao follow torch; executorch goes with the
  torch it was built for (the newest torch series out when that executorch came out, at its newest patch), torch
  with the newest executorch built for its series (none yet: the current pin, and the stack says so). Stacks
  live in the matrix's environment folder, so a bisect and the matrix share them.
- A probe decides only when it measured something: a release that cannot be installed, or whose probe ends in
  `error`, `inconclusive` or `needs_cuda`, or rests on a basis other than `measured`, is skipped with its reason
  and never taken as a side of a change.
- With k workers each step probes up to k releases that split the unknown gaps into k+1 near-equal parts, so a
  change among g gaps (g = n-1 for n releases whose two ends measured) is found in ⌈log_(k+1) g⌉ steps; skipped
  releases split nothing, so each can cost a step. The two ends are probed first (their own step).
- `all_changes`: every release is probed (a linear scan, k per step): a change that a later release undoes leaves
  both ends of an interval alike, and nothing short of probing inside it can see that.
- Workers are the kit's executors (run/executors.py): `local` runs k probes at once in threads of this process,
  `ray` as k Ray tasks (a local Ray, or the cluster at RAY_ADDRESS). Each probe prepares its stack
  (matrix/stacks.py) and runs the claim's probe there (matrix/probes.py).
- Controls: the two ends are probed first. If neither reproduces the claim (both `not_reproduced`, or a repro
  `fixed` at both), this machine cannot say where it changes: the bisect stops there and says "no answer here"
  rather than reporting the claim not reproduced across the range (a crash of one host is not a release's).
- A range is checked before anything is installed: a backwards range is an error. Without --from/--to the range is
  the claim's own releases from the ledger (its `conditions`, `{"min", "max"}`; a repro folder's through the claims
  its finding decides); a claim that names none is refused with a request for a range. A range of more than WIDE
  releases that is open at one end says how many stacks and how much disk it takes and asks for --yes; every
  bisect says how many releases and how much disk before its first probe.
- A repro folder (`yolo26kit repro`) is a probe too: each release runs its repro.py in a clean environment of the
  packages its header pins, with the bisected package at that release; bites / fixed / fails_differently.
- Output: `<out>/bisect-<id>/bisect.json` (claim, package, range, each probed release with its verdict, basis,
  evidence and page, the changes, the skipped releases and why) and bisect.html; probes' pages under `probes/`.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from itertools import zip_longest
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from packaging.version import InvalidVersion, Version

from ..errors import BisectError
from ..paths import new_folder

REGISTRY = "https://pypi.org/pypi/{package}/json"
UNMEASURED = ("error", "inconclusive", "needs_cuda")
NOT_REPRODUCED = ("not_reproduced", "fixed")  # verdicts that say the claim's bug does not happen there
NO_ANSWER = "no answer here: the claim does not reproduce at either end"
WIDE = 6  # more releases than this, without --from/--to, asks for --yes
GIB_PER_STACK = 5.0  # a torch CUDA build with its NVIDIA wheels, as the matrix's stacks measured (4.6-5.6 GiB)
DECIDING_BASIS = "measured"
SCHEMA = 1


# ---------------------------------------------------------------- probes and their verdicts


@dataclass
class Probe:
    """One release's probe: its verdict, what that rests on, or why the release was skipped."""

    release: str
    verdict: str = ""
    basis: str = ""
    evidence: str = ""
    skipped: str = ""  # "cannot install: ..." / "cannot measure: ...": the release decides nothing
    page: str = ""  # the probe's page (or log), relative to the bisect folder
    seconds: float = 0.0
    stack: dict[str, str] = field(default_factory=dict)  # the versions installed (or pinned) for it
    step: int = 0

    @property
    def measured(self) -> bool:
        return not self.skipped and bool(self.verdict)


def judged(release: str, verdict: str, basis: str, evidence: str, **extra: Any) -> Probe:
    """A probe from a judge's verdict: skipped (cannot measure) unless it measured something that decides."""
    probe = Probe(release, verdict, basis, evidence, **extra)
    if verdict in UNMEASURED or basis != DECIDING_BASIS:
        probe.skipped = f"cannot measure: {verdict or 'no verdict'} (basis {basis or 'none'}): {evidence[:300]}"
    return probe


def not_installed(release: str, reason: str, **extra: Any) -> Probe:
    """A release whose stack could not be installed (or imported): skipped with the installer's reason."""
    return Probe(release, skipped=f"cannot install: {reason[:400]}", **extra)


# ---------------------------------------------------------------- the search


ProbeMany = Callable[[list[str]], list[Probe]]  # probes up to k releases at once, one Probe each


def spread(candidates: list[str], k: int) -> list[str]:
    """Up to k of the candidates that split the len+1 gaps around them into k+1 near-equal parts."""
    if k >= len(candidates):
        return list(candidates)
    gaps = len(candidates) + 1
    picks = [candidates[j * gaps // (k + 1) - 1] for j in range(1, k + 1) if j * gaps // (k + 1) >= 1]
    return list(dict.fromkeys(picks))


def steps_needed(gaps: int, k: int) -> int:
    """⌈log_(k+1) gaps⌉ in integers: the narrowing steps that k workers need in the worst case."""
    steps, reach = 0, 1
    while reach < gaps:
        steps, reach = steps + 1, reach * (k + 1)
    return steps


class Search:
    """The state of one bisect: every probe so far, by release, and the steps taken."""

    def __init__(self, releases: list[str], probe_many: ProbeMany, workers: int = 1,
                 log: Callable[[str], None] = lambda s: None) -> None:
        if not releases:
            raise BisectError("no release in the range")
        self.releases, self.probe_many, self.workers, self.log = releases, probe_many, max(1, workers), log
        self.probes: dict[str, Probe] = {}
        self.steps = 0
        self.narrowing_steps = 0

    def run(self, batch: list[str]) -> None:
        """One step: probe the batch (at most k releases) together."""
        self.steps += 1
        self.log(f"step {self.steps}: {', '.join(batch)}")
        for probe in self.probe_many(batch):
            probe.step = self.steps
            self.probes[probe.release] = probe
            self.log(f"  {probe.release}: {probe.verdict or '-'}" + (f" (skipped: {probe.skipped[:160]})"
                                                                     if probe.skipped else ""))

    def verdict(self, index: int) -> str | None:
        probe = self.probes.get(self.releases[index])
        return probe.verdict if probe and probe.measured else None

    def unprobed(self, lo: int, hi: int) -> list[str]:
        return [r for r in self.releases[lo:hi] if r not in self.probes]

    def ends(self) -> tuple[int, int] | None:
        """Probe inward from both ends until each end has a measured release; their indices (None: none measured)."""
        while True:
            measured = [i for i in range(len(self.releases)) if self.verdict(i) is not None]
            if not measured and not self.unprobed(0, len(self.releases)):
                return None
            lo, hi = (measured[0], measured[-1]) if measured else (len(self.releases), -1)
            left, right = self.unprobed(0, lo), self.unprobed(hi + 1, len(self.releases))
            if measured and not left and not right:
                return lo, hi
            # first the two ends; past an end that could not be measured, the next releases in, one per worker
            reach = 1 if not self.probes else self.workers
            inward = [r for pair in zip_longest(left[:reach], right[::-1][:reach]) for r in pair if r]
            self.run(list(dict.fromkeys(inward))[: self.workers])

    def narrow(self, lo: int, hi: int) -> tuple[int, int]:
        """From measured ends with different verdicts to the first change after `lo`: (last alike, first changed)."""
        start = self.verdict(lo)
        while True:
            candidates = self.unprobed(lo + 1, hi)
            if not candidates:
                return lo, hi
            self.narrowing_steps += 1
            self.run(spread(candidates, self.workers))
            changed = next(i for i in range(lo + 1, hi + 1) if self.verdict(i) not in (None, start))
            lo = max(i for i in range(lo, changed) if self.verdict(i) == start)
            hi = changed

    def scan(self) -> None:
        """Probe every release not probed yet, k per step (the linear scan of `all_changes`)."""
        todo = self.unprobed(0, len(self.releases))
        for i in range(0, len(todo), self.workers):
            self.run(todo[i:i + self.workers])

    def change(self, lo: int, hi: int) -> dict[str, Any]:
        """A change between two measured releases: the last alike, the first changed and what lies between."""
        between = self.releases[lo + 1:hi]
        return {"from": self.verdict(lo), "to": self.verdict(hi), "last_before": self.releases[lo],
                "first": self.releases[hi] if not between else None, "first_measured": self.releases[hi],
                "unmeasured_between": between,
                "probes": [self.releases[lo], self.releases[hi]]}

    def changes(self) -> list[dict[str, Any]]:
        """Every change between consecutive measured releases (in order)."""
        measured = [i for i in range(len(self.releases)) if self.verdict(i) is not None]
        return [self.change(a, b) for a, b in zip(measured, measured[1:]) if self.verdict(a) != self.verdict(b)]


def control(probes: list[dict[str, Any]]) -> dict[str, Any]:
    """The two measured ends of a bisect and whether they give it an answer (not when neither reproduces)."""
    measured = [p for p in probes if p.get("verdict") and not p.get("skipped")]
    if not measured:
        return {"ends": [], "answer": False}
    ends = [measured[0], measured[-1]]
    quiet = all(p["verdict"] in NOT_REPRODUCED for p in ends)
    return {"ends": [{"release": p["release"], "verdict": p["verdict"]} for p in ends], "answer": not quiet,
            **({"why": NO_ANSWER} if quiet else {})}


def apply_control(record: dict[str, Any]) -> dict[str, Any]:
    """A bisect record judged by the controls: no changes and `no_answer` when neither end reproduces."""
    record["control"] = control(record["probes"])
    if record["control"]["answer"]:
        record.pop("no_answer", None)
    else:
        record["no_answer"], record["changes"] = record["control"].get("why", NO_ANSWER), []
    return record


def bisect(releases: list[str], probe_many: ProbeMany, workers: int = 1, all_changes: bool = False,
           log: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """Find the first release where the verdict changes (every change with `all_changes`); the search's record."""
    search = Search(releases, probe_many, workers, log)
    ends = search.ends()
    quiet = ends is not None and all(search.verdict(i) in NOT_REPRODUCED for i in ends)
    if quiet:
        log(f"[bisect] {NO_ANSWER} ({releases[ends[0]]}: {search.verdict(ends[0])}, "
            f"{releases[ends[1]]}: {search.verdict(ends[1])}); stopping")
    elif ends is not None and all_changes:
        search.scan()
    elif ends is not None and search.verdict(ends[0]) != search.verdict(ends[1]):
        search.narrow(*ends)
    found = search.changes() if ends is not None else []
    if not all_changes:
        found = found[:1]
    probes = [search.probes[r] for r in releases if r in search.probes]
    record = {"releases": releases, "workers": search.workers, "all_changes": all_changes,
            "steps": search.steps, "narrowing_steps": search.narrowing_steps,
            "probes": [asdict(p) for p in probes], "changes": found,
            "skipped": [{"release": p.release, "reason": p.skipped} for p in probes if p.skipped],
            "ends_alike": ends is not None and search.verdict(ends[0]) == search.verdict(ends[1]),
            "measured_any": ends is not None}
    return apply_control(record)


def summary(record: dict[str, Any]) -> str:
    """One line: the change named ("confirmed from ultralytics 8.4.113"), or why none was named."""
    package, claim = record.get("package", "the package"), record.get("claim", "the claim")
    if not record["measured_any"]:
        return f"{claim}: no release in the range could be measured"
    if record.get("no_answer"):
        ends = record.get("control", {}).get("ends", [])
        said = " and ".join(f"{package} {e['release']} {e['verdict']}" for e in ends)
        return f"{claim}: {record['no_answer']} ({said} on this machine)"
    if not record["changes"]:
        verdicts = sorted({p["verdict"] for p in record["probes"] if p["verdict"] and not p["skipped"]})
        hint = "" if record["all_changes"] else " at both ends (a change undone inside the range needs --all-changes)"
        return f"{claim}: {', '.join(verdicts)} across {package} {record['range']['from']}–{record['range']['to']}" \
               f"{hint}; no change"
    parts = []
    for change in record["changes"]:
        if change["first"]:
            parts.append(f"{change['to']} from {package} {change['first']} ({change['from']} up to "
                         f"{change['last_before']})")
        else:
            parts.append(f"{change['to']} from {package} {change['first_measured']} or earlier, after "
                         f"{change['last_before']} ({len(change['unmeasured_between'])} release(s) between could "
                         "not be measured)")
    return f"{claim}: " + "; ".join(parts)


# ---------------------------------------------------------------- the registry's releases


def _final(version: str) -> Version | None:
    try:
        parsed = Version(version)
    except InvalidVersion:
        return None
    return None if parsed.is_prerelease or parsed.is_devrelease else parsed


def in_range(version: str, low: str | None, high: str | None) -> bool:
    """low ≤ version, and version within high (a bound of fewer than three parts covers its series)."""
    parsed = _final(version)
    if parsed is None:
        return False
    if low and parsed < Version(low):
        return False
    if high:
        bound = Version(high)
        if len(bound.release) < 3:
            return parsed.release[:len(bound.release)] <= bound.release
        return parsed <= bound
    return True


def releases_in(uploads: dict[str, datetime], low: str | None, high: str | None) -> list[str]:
    """The releases of an upload table within the range, in version order."""
    return sorted((v for v in uploads if in_range(v, low, high)), key=Version)


def paired_release(anchor_time: datetime, partner: dict[str, datetime]) -> str | None:
    """The partner's series that was newest when the anchor came out, at that series' newest release."""
    out = [v for v, t in partner.items() if _final(v) and t <= anchor_time]
    if not out:
        return None
    newest = max(out, key=Version)
    series = Version(newest).release[:2]
    return max((v for v in partner if _final(v) and Version(v).release[:2] == series), key=Version)


class Registry:
    """Release lists and upload times from the registry's JSON API (read once per package)."""

    def __init__(self, url: str = REGISTRY, timeout: float = 60.0) -> None:
        self.url, self.timeout = url, timeout
        self._uploads: dict[str, dict[str, datetime]] = {}

    def uploads(self, package: str) -> dict[str, datetime]:
        """{release: first upload time} of the package's releases that have files and are not all yanked."""
        if package not in self._uploads:
            try:
                with urllib.request.urlopen(self.url.format(package=package), timeout=self.timeout) as answer:
                    data = json.load(answer)
            except (OSError, ValueError) as exc:
                raise BisectError(f"the registry's release list of {package}: {type(exc).__name__}: {exc}") from None
            self._uploads[package] = {
                v: min(datetime.fromisoformat(f["upload_time_iso_8601"].replace("Z", "+00:00")) for f in files)
                for v, files in data.get("releases", {}).items()
                if files and not all(f.get("yanked") for f in files)}
        return self._uploads[package]

    def releases(self, package: str, low: str | None, high: str | None) -> list[str]:
        return releases_in(self.uploads(package), low, high)


# ---------------------------------------------------------------- the stack of a release

# What pairs with what: when the key's release changes, these are resolved again (not kept at the current pins).
FOLLOWERS = {"torch": ("torchvision", "torchao"), "executorch": ("torch", "torchvision", "torchao")}
# torch before 2.10 imports setuptools in torch.utils.cpp_extension (AOT Inductor, the kit's timing) without
# requiring it on Python < 3.12, and torch 2.11 and 2.12 require setuptools<82: each release's stack carries one,
# resolved by uv against its pins (the kit's own environment has one).
CARRIED = ("setuptools",)


def _series(release: str) -> str:
    return ".".join(str(p) for p in Version(release).release[:2])


def executorch_for(torch_release: str, registry: Registry) -> str | None:
    """The newest executorch built for the torch release's series (see `paired_release`); None when none is."""
    torch = registry.uploads("torch")
    built = [e for e, t in registry.uploads("executorch").items() if _final(e)
             and (paired := paired_release(t, torch)) and _series(paired) == _series(torch_release)]
    return max(built, key=Version) if built else None


def anchored_pins(package: str, release: str, base: dict[str, str], registry: Registry) -> tuple[dict[str, str], str]:
    """The pins a release is probed with before uv resolves its followers, and a note on any pairing."""
    pins = {**base, package: release}
    for follower in (*FOLLOWERS.get(package, ()), *CARRIED):
        pins.pop(follower, None)
    note = ""
    if package == "executorch":
        torch = paired_release(registry.uploads("executorch")[release], registry.uploads("torch"))
        if torch:
            pins["torch"] = torch
            note = f"torch {torch}: the torch series out when executorch {release} came out"
    elif package == "torch" and "executorch" in base:
        built = executorch_for(release, registry)
        pins["executorch"] = built or base["executorch"]
        note = (f"executorch {built}: the newest built for torch {_series(release)}" if built else
                f"no executorch built for torch {_series(release)}: executorch {base['executorch']} (the current pin)")
    return pins, note


def parse_compiled(text: str) -> dict[str, str]:
    """{name: version} from `uv pip compile` output (name==version lines)."""
    found = {}
    for line in text.splitlines():
        match = re.match(r"^([A-Za-z0-9_.-]+)==([^\s;]+)", line.strip())
        if match:
            found[match.group(1).lower().replace("_", "-")] = match.group(2)
    return found


def stack_id(package: str, release: str) -> str:
    """The stack's id: the matrix's naming (`ultralytics8.4.113`), so a matrix stack of the same pins is shared."""
    return f"{package}{release}"



def resolve(pins: dict[str, str], free: list[str], timeout: float = 300.0) -> tuple[dict[str, str], str]:
    """The pins with the free packages resolved by uv against them: (pins, "") or ({}, uv's reason)."""
    from .stacks import output_tail, uv_binary

    if not free:
        return dict(pins), ""
    lines = [f"{name}=={version}" for name, version in pins.items()] + list(free)
    python = ".".join(map(str, sys.version_info[:2]))
    try:
        done = subprocess.run([uv_binary(), "pip", "compile", "--quiet", "--no-header", "--no-annotate",
                               "--python-version", python, "-"], input="\n".join(lines), capture_output=True,
                              text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {}, f"uv pip compile: {type(exc).__name__}: {exc}"
    if done.returncode:
        return {}, f"uv pip compile: {output_tail(done.stderr or done.stdout, 3)}"
    found = parse_compiled(done.stdout)
    return {**pins, **{name: found[name] for name in free if name in found}}, ""


def base_pins(kit_root: Path) -> dict[str, str]:
    """The current stack: pyproject.toml's exact pins of the packages a stack pins, and CARRIED as installed here."""
    from .. import env
    from .stacks import PINNED, kit_dependencies

    found = {}
    for requirement in kit_dependencies(kit_root):
        match = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)\s*==\s*([^\s;]+)\s*", requirement)
        if match and match.group(1).lower() in PINNED:
            found[match.group(1).lower()] = match.group(2)
    return {**found, **{name: v for name in CARRIED if (v := env.package_version(name))}}


@dataclass
class Context:
    """What every probe of one bisect shares (plain data, so a Ray task can carry it)."""

    claim: str
    package: str
    base: dict[str, str]
    out: str  # the bisect folder
    kit_root: str
    envs: str | None = None
    timeout: float = 1800.0
    pairs: dict[str, dict[str, Any]] = field(default_factory=dict)  # release → {"pins", "note"} or {"error"}
    repro: str = ""  # a repro folder: its repro.py is the probe


def plan_stacks(ctx: Context, releases: list[str], registry: Registry) -> None:
    """Each release's anchored pins, and the packages uv resolves against them when the release is probed."""
    for release in releases:
        pins, note = anchored_pins(ctx.package, release, ctx.base, registry)
        free = [name for name in (*FOLLOWERS.get(ctx.package, ()), *CARRIED) if name not in pins and name in ctx.base]
        ctx.pairs[release] = {"pins": pins, "note": note, "free": free}


def release_pins(ctx: Context, release: str) -> tuple[dict[str, str], str]:
    """The release's pins with its free packages resolved by uv (only for releases that are probed): (pins, error)."""
    pair = ctx.pairs.get(release, {"pins": {**ctx.base, ctx.package: release}})
    resolved, error = resolve(pair["pins"], pair.get("free", []))
    return (resolved, "") if not error else (pair["pins"], error)


def probe_release(ctx: Context, release: str) -> Probe:
    """Prepare the release's stack and probe the claim there; a Probe (skipped when it cannot install or measure)."""
    from .probes import ENTRY_POINTS, entry_in_stack, notebook_in_stack
    from .stacks import STATES_RUN, Stack, prepare

    if ctx.repro:
        return probe_repro(ctx, release)
    pins, error = release_pins(ctx, release)
    folder = f"probes/{ctx.package}-{release}"
    if error:
        return not_installed(release, error, stack=pins)
    kit_root, out = Path(ctx.kit_root), Path(ctx.out) / folder
    note = ctx.pairs.get(release, {}).get("note", "")
    row = prepare(Stack(stack_id(ctx.package, release), pins, note), ctx.envs, kit_root)
    installed = {k: str(row.get("environment", {}).get(k, "")).split("+")[0] for k in pins}
    if row["state"] not in STATES_RUN:
        return not_installed(release, f"{row['state']}: {row['reason']}", stack=pins)
    if installed.get(ctx.package) not in ("", release):
        return not_installed(release, f"{ctx.package} {installed[ctx.package]} was installed, not {release}",
                             stack=installed)
    if ctx.claim in ENTRY_POINTS:
        found = entry_in_stack(ctx.claim, row, out, kit_root, ctx.timeout)
    else:
        found = notebook_in_stack(ctx.claim, row, out, kit_root, Path(ctx.envs) if ctx.envs else None, ctx.timeout)
    versions = {k: v for k, v in (found.get("versions") or installed).items() if k in pins}
    return judged(release, found["verdict"], found["basis"], found["evidence"], page=f"{folder}/{found['page']}",
                  seconds=found.get("seconds", 0.0), stack=versions)


def probe_repro(ctx: Context, release: str) -> Probe:
    """Run the repro folder's repro.py in a clean environment with the release: bites / fixed / fails_differently."""
    from ..repro import clean_env, script

    header = script.parse((Path(ctx.repro) / "repro.py").read_text())
    # what pairs with the moved package moves with it: executorch's torch is the one it was built for (the pairing
    # of plan_stacks), the rest of its followers are resolved by uv, not kept at the repro's pins
    paired = ctx.pairs.get(release, {}).get("pins") or {ctx.package: release}
    header = script.unpinned(header, FOLLOWERS.get(ctx.package, ())).with_pins(paired)
    found = clean_env.reproduce(Path(ctx.repro) / "repro.py", header, ctx.envs, timeout=ctx.timeout)
    folder = Path(ctx.out) / "probes" / f"{ctx.package}-{release}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "reproduced.json").write_text(json.dumps(found, indent=1) + "\n")
    page = f"probes/{ctx.package}-{release}/reproduced.json"
    stack = {k: v for k, v in found.get("versions", {}).items() if k in PINNED_REPORTED}
    if found["outcome"] == script.CANNOT_RUN:
        return not_installed(release, found["error_line"], stack=stack, page=page)
    evidence = f"exit {found['exit_code']}: {found['error_line'] or 'ran to the end'}"
    return judged(release, script.VERDICT[found["outcome"]], DECIDING_BASIS, evidence, page=page,
                  seconds=found["seconds"], stack=stack)


PINNED_REPORTED = ("torch", "torchvision", "executorch", "ultralytics", "toto-ts")


def local_workers(ctx: Context, k: int) -> ProbeMany:
    """k probes at once on the run's local executor (threads of this process; each probe's work runs in its stack's
    child processes)."""
    from ..run.executors import LocalExecutor

    executor = LocalExecutor(jobs=max(1, k))

    def probe_many(batch: list[str]) -> list[Probe]:
        return [_probe_or_raise(found) for found in executor.map(probe_release, [(ctx, r) for r in batch])]
    return probe_many


def _ray_probe(ctx: dict[str, Any], release: str) -> dict[str, Any]:
    """Ray task: one release's probe, as plain data."""
    return asdict(probe_release(Context(**ctx), release))


def _probe_or_raise(found: Any) -> Probe:
    """A probe's result from an executor's map: a Probe (or its fields), or the exception its task raised."""
    if isinstance(found, Exception):
        raise found
    return found if isinstance(found, Probe) else Probe(**found)


def ray_workers(ctx: Context, k: int, log: Callable[[str], None]) -> tuple[ProbeMany, Callable[[], None]]:
    """k probes at once as Ray tasks on the matrix's Ray executor (it starts or joins Ray); the closer to call at
    the end."""
    from .cells import RayExecutor

    executor = RayExecutor(log=log)
    executor.kit_root = Path(ctx.kit_root)
    cpus = max(1.0, float(executor.cpus()) / max(1, k))

    def probe_many(batch: list[str]) -> list[Probe]:
        done = executor.map(_ray_probe, [(asdict(ctx), r) for r in batch], {"num_cpus": cpus}, executor.retries)
        return [_probe_or_raise(found) for found in done]
    return probe_many, executor.close


# ---------------------------------------------------------------- the command


def new_bisect_dir(out: Path, claim: str, package: str, now: datetime | None = None) -> tuple[str, Path]:
    """`out/bisect-<claim>-<package>-<UTC time>` (a numeric suffix when taken)."""
    now = now or datetime.now(timezone.utc)
    return new_folder(out, "bisect-", f"{claim}-{package}-{now:%Y%m%dT%H%M%SZ}")


def known_claims(kit_root: Path) -> set[str]:
    """Every claim a bisect can probe: the ledgers' claims and the probes' facts."""
    from .cells import ledger_claims
    from .probes import ENTRY_POINTS

    ledgers = (kit_root / "data" / "claims").glob("*.json")
    return set(ENTRY_POINTS) | {c for p in ledgers for c in ledger_claims(kit_root, p.stem)}


def check_range(low: str | None, high: str | None) -> None:
    """A range that runs backwards (or names no release) is bad input, before the registry is asked."""
    try:
        bounds = [Version(v) for v in (low, high) if v]
    except InvalidVersion as exc:
        raise BisectError(f"not a release: {exc}") from None
    if len(bounds) == 2 and bounds[0].release[:len(bounds[1].release)] > bounds[1].release:
        raise BisectError(f"the range runs backwards: --from {low} is after --to {high} (did you mean --from {high} "
                          f"--to {low}?)")


def stacks_needed(n: int, workers: int, all_changes: bool) -> int:
    """The stacks a bisect of n releases installs at most: every release with all_changes, else the two ends and
    the narrowing steps' probes."""
    return n if all_changes else min(n, 2 + workers * steps_needed(max(1, n - 1), workers))


def wide_range_question(package: str, releases: list[str], workers: int, all_changes: bool) -> str:
    """What a wide bisect will take, and how to go on: the message that asks for --yes."""
    stacks = stacks_needed(len(releases), workers, all_changes)
    return (f"{len(releases)} {package} releases in the range ({releases[0]}–{releases[-1]}): the bisect installs up "
            f"to {stacks} stacks, about {stacks * GIB_PER_STACK:.0f} GiB of environments and uv's cache (a torch CUDA "
            f"build is ~{GIB_PER_STACK:.0f} GiB). Pass --yes to go on, or narrow it with --from/--to")


def condition_range(value: Any) -> tuple[str | None, str | None]:
    """A ledger condition on a package's release as (low, high): `{"min", "max"}` or one release; (None, None)."""
    if isinstance(value, dict):
        return (str(value["min"]) if value.get("min") else None, str(value["max"]) if value.get("max") else None)
    if isinstance(value, str) and _final(value):
        return value, value
    return None, None


def ledger_range(claims: list[str], package: str, kit_root: Path) -> tuple[str | None, str | None]:
    """The releases of `package` the first of these ledger claims that names them gives in its `conditions`."""
    entries = {}
    for path in sorted((kit_root / "data" / "claims").glob("*.json")):
        found = json.loads(path.read_text())
        found = found.get("claims", []) if isinstance(found, dict) else found
        entries.update({e.get("id"): e for e in found if isinstance(e, dict)})
    for claim in claims:
        low, high = condition_range((entries.get(claim, {}).get("conditions") or {}).get(package))
        if low or high:
            return low, high
    return None, None


def claims_of_probe(claim: str, repro: Path | None) -> list[str]:
    """The ledger claims a bisect's probe stands for: the claim itself, or those a repro folder's finding decides."""
    if repro is None:
        return [claim]
    from ..repro import script
    from ..repro.catalog import findings

    finding = script.parse((repro / "repro.py").read_text()).finding
    known = {f.id: f for f in findings.all()}
    return list(known[finding].claims) if finding in known else []


def range_of_claim(claim: str, repro: Path | None, package: str, kit_root: Path) -> tuple[str | None, str | None]:
    """A bisect without --from/--to takes the claim's releases from the ledger; where it names none, it asks."""
    low, high = ledger_range(claims_of_probe(claim, repro), package, kit_root)
    if not (low or high):
        raise BisectError(f"name the {package} releases to bisect with --from V --to V: the ledger gives "
                          f"{claim} no {package} range, and without one every {package} release on the registry "
                          "would be a candidate")
    return low, high


def cost_line(package: str, releases: list[str], workers: int, all_changes: bool) -> str:
    """How many releases a bisect covers and what their stacks take on disk, said before anything is installed."""
    stacks = stacks_needed(len(releases), workers, all_changes)
    return (f"{len(releases)} {package} release(s) {releases[0]}–{releases[-1]}: up to {stacks} stack(s) installed, "
            f"about {stacks * GIB_PER_STACK:.0f} GiB of environments and uv's cache")


def repro_folder(claim: str) -> Path | None:
    """The repro folder a claim argument names (a folder holding repro.py), else None."""
    path = Path(claim)
    return path if path.is_dir() and (path / "repro.py").exists() else None


def run_bisect(claim: str, package: str, low: str | None, high: str | None, out: Path, workers: int = 1,
               executor: str = "local", all_changes: bool = False, envs: str | None = None,
               kit_root: Path | None = None, registry: Registry | None = None, timeout: float = 1800.0,
               log: Callable[[str], None] = print, yes: bool = False) -> Path:
    """List the releases, bisect them, write bisect.json and bisect.html; the bisect folder."""
    from .probes import ENTRY_POINTS
    from .stacks import ROOT

    kit_root = Path(kit_root or ROOT)
    check_range(low, high)
    repro = repro_folder(claim)
    if repro is None and claim not in known_claims(kit_root):
        raise BisectError(f"unknown claim {claim!r} (a ledger claim, a repro folder, or one of "
                          f"{', '.join(sorted(ENTRY_POINTS))})")
    given = "command line" if low or high else "ledger"
    if given == "ledger":
        low, high = range_of_claim(claim, repro, package, kit_root)
        log(f"[bisect] the ledger's {package} releases for {claim}: {low or 'the first'}–{high or 'the newest'}")
    registry = registry or Registry()
    releases = registry.releases(package, low, high)
    if not releases:
        raise BisectError(f"no {package} release in {low or 'the first'}–{high or 'the newest'} on the registry")
    if len(releases) > WIDE and not (low and high) and not yes:
        raise BisectError(wide_range_question(package, releases, workers, all_changes))
    log(f"[bisect] {cost_line(package, releases, workers, all_changes)}")
    label = repro.resolve().name if repro else claim
    base = {} if repro else base_pins(kit_root)
    bisect_id, folder = new_bisect_dir(out, label, package)
    ctx = Context(label, package, base, str(folder.resolve()), str(kit_root), envs, timeout,
                  repro=str(repro.resolve()) if repro else "")
    log(f"[bisect] {label} over {len(releases)} {package} releases {releases[0]}–{releases[-1]}, {workers} worker(s)")
    plan_stacks(ctx, releases, registry)
    closer: Callable[[], None] = lambda: None
    probe_many = local_workers(ctx, workers)
    if executor == "ray":
        probe_many, closer = ray_workers(ctx, workers, log)
    t0 = time.perf_counter()
    try:
        record = bisect(releases, probe_many, workers, all_changes, log)
    finally:
        closer()
    entry = ENTRY_POINTS.get(claim)
    probe = ({"kind": "repro", "folder": _shown(repro, kit_root)} if repro else
             {"kind": "entry point", **asdict(entry)} if entry else {"kind": "notebook", "profile": "quick"})
    record.update(schema=SCHEMA, bisect_id=bisect_id, claim=label, package=package,
                  range={"from": low or releases[0], "to": high or releases[-1], "count": len(releases),
                         "given_by": given},
                  base=base, pairs={r: p for r, p in ctx.pairs.items() if p.get("note")},
                  probe=probe,
                  executor=executor, seconds=round(time.perf_counter() - t0, 1), host=socket.gethostname(),
                  created=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    record["summary"] = summary(record)
    from .. import findings
    from ..report import bisect_page

    findings.write_json(folder / "bisect.json", record)
    bisect_page.render(folder, record)
    log(f"[bisect] {record['summary']} ({record['steps']} steps, {record['seconds']:.0f} s): {folder / 'bisect.html'}")
    return folder


def _shown(path: Path, kit_root: Path) -> str:
    """A path as the record shows it: relative to the checkout where it lies inside it."""
    try:
        return str(path.resolve().relative_to(kit_root.resolve()))
    except ValueError:
        return path.name


def rejudge(folder: Path) -> dict[str, Any]:
    """Judge a stored bisect again by the controls and re-render its page (bisect.json and bisect.html)."""
    from .. import findings
    from ..report import bisect_page

    record = apply_control(json.loads((Path(folder) / "bisect.json").read_text()))
    record["summary"] = summary(record)
    findings.write_json(Path(folder) / "bisect.json", record)
    bisect_page.render(Path(folder), record)
    return record


def add_subcommand(sub: Any) -> None:
    """`yolo26kit bisect`: registered by cli.parser()."""
    p = sub.add_parser("bisect", help="the first release of a package where a claim's verdict changes")
    p.add_argument("claim", metavar="CLAIM", help="a ledger claim id, a probe's fact (e.g. "
                   "index_dtype.split_copy_viewed), or a repro folder written by `yolo26kit repro`")
    p.add_argument("--over", required=True, metavar="PACKAGE", help="the package whose releases are bisected")
    p.add_argument("--from", dest="low", default=None, metavar="V",
                   help="the first release of the range (without --from/--to: the claim's releases in the ledger)")
    p.add_argument("--to", dest="high", default=None, metavar="V",
                   help="the last release (fewer than three parts: the whole series, e.g. 2.15)")
    p.add_argument("--workers", type=int, default=1, help="releases probed per step (k-ary bisection; default 1)")
    p.add_argument("--executor", default="local", choices=("local", "ray"), help="local (default) or ray")
    p.add_argument("--all-changes", action="store_true", help="find every change (probes every release)")
    p.add_argument("--out", default="", help="parent folder of bisect-<id>/ (default reports/runs)")
    p.add_argument("--envs", default="", metavar="DIR", help="stack environments (default <compile cache>/matrix-envs)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per probe")
    p.add_argument("--yes", action="store_true",
                   help=f"go on over more than {WIDE} releases in a range open at one end")
    p.set_defaults(fn=main)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(args: argparse.Namespace) -> int:
    """The `bisect` subcommand: 0 a change (or none) was named, 1 nothing could be measured, 130 interrupted; bad
    input (BisectError) is the CLI's exit 2."""
    from ..paths import DEFAULT_OUT

    signal.signal(signal.SIGTERM, _interrupt)
    try:
        folder = run_bisect(args.claim, args.over, args.low, args.high, Path(args.out) if args.out else DEFAULT_OUT,
                            args.workers, args.executor, args.all_changes, args.envs or None, timeout=args.timeout,
                            yes=args.yes)
    except KeyboardInterrupt:
        print("yolo26kit: bisect interrupted", file=sys.stderr)
        return 130
    return 0 if json.loads((folder / "bisect.json").read_text())["measured_any"] else 1
