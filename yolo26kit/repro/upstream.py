"""What upstream knows of each finding (data/upstream/<finding>.json), and the releases it bites on, measured.

The ledger holds the threads the kit found (issue or pull request, state, how it relates); the releases come only
from the finding's recorded checks (`repro --check --record` over releases: checked/*.json beside its repro), so a
"fixed from" has one source. `advice` combines the two into what a user does next.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..paths import DATA
from . import script

LEDGER = DATA / "upstream"
# Packages whose release a check moves: the timeline is told along the first of these a finding's checks vary.
SERIES = ("torch", "executorch", "ultralytics")


@dataclass(frozen=True)
class Thread:
    """An upstream issue or pull request: `ref` is owner/repo#number."""

    ref: str
    kind: str
    state: str
    relation: str
    title: str = ""
    why: str = ""

    @property
    def url(self) -> str:
        repo, _, number = self.ref.partition("#")
        return f"https://github.com/{repo}/{'pull' if self.kind == 'pull request' else 'issues'}/{number}"

    @property
    def open(self) -> bool:
        return self.state.startswith("open")


@dataclass(frozen=True)
class Upstream:
    """A finding's ledger entry: the component at fault, its tracker, the threads found."""

    finding: str
    component: str
    tracker: str
    threads: tuple[Thread, ...] = field(default_factory=tuple)

    def of(self, *relations: str) -> list[Thread]:
        return [t for t in self.threads if t.relation in relations]


def load(finding: str, folder: Path = LEDGER) -> Upstream:
    """The ledger entry of a finding (an empty one naming no thread when the ledger has none)."""
    path = folder / f"{finding}.json"
    if not path.exists():
        return Upstream(finding, "", "")
    raw = json.loads(path.read_text())
    return Upstream(raw["finding"], raw.get("component", ""), raw.get("tracker", ""),
                    tuple(Thread(**t) for t in raw.get("threads", [])))


def _version_key(version: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"[.+]", version))


@dataclass(frozen=True)
class Check:
    """One recorded check: the releases it ran on, its device and its answer (script.STILL_BITES ...)."""

    versions: dict[str, str]
    device: str
    outcome: str
    error_line: str = ""


BISECT_ANSWER = {"bites": script.STILL_BITES, "fixed": script.FIXED_HERE, "fails_differently": script.FAILS_DIFFERENTLY}


def bisect_checks(finding: str, reports: Path) -> list[Check]:
    """The probes of the newest committed bisect over the finding's repro (reports/bisect-<finding>-<package>-*/)."""
    folders = sorted(Path(reports).glob(f"bisect-{finding}-*/bisect.json"))
    if not folders:
        return []
    raw = json.loads(folders[-1].read_text())
    package = raw.get("package", "")
    device = raw.get("device_type", "cpu")  # bisects run their probes on the CPU unless they record otherwise
    return [Check({package: p["release"]}, device, BISECT_ANSWER[p["verdict"]])
            for p in raw.get("probes", []) if p.get("verdict") in BISECT_ANSWER and p.get("release")]


def read_checks(folder: Path) -> list[Check]:
    """The checks recorded under <repro folder>/checked/ (one JSON per release set and device), and the probes of a
    committed bisect over the same repro (a finding folder sits in reports/findings/, its bisects in reports/)."""
    found = bisect_checks(Path(folder).name, Path(folder).parent.parent)
    for path in sorted((Path(folder) / "checked").glob("*.json")):
        raw = json.loads(path.read_text())
        device = "cuda" if path.stem.endswith("-cuda") else "cpu"
        found.append(Check(raw.get("versions", {}), device, raw.get("outcome", ""), raw.get("error_line", "")))
    return found


@dataclass(frozen=True)
class Timeline:
    """Where a finding bites along one package's releases: each release tried and its answer, oldest first."""

    package: str
    answers: tuple[tuple[str, str], ...]  # (release, outcome) where the repro ran
    # (release, device, outcome) of every decided check: where each answer was seen
    seen: tuple[tuple[str, str, str], ...] = ()
    # (release, error line) where a repro ran past the finding's own failure into another one
    differently: tuple[tuple[str, str], ...] = ()
    bite_line: str = ""  # the error line of the newest release it bites on, as its check recorded it

    @property
    def devices(self) -> tuple[str, ...]:
        return tuple(sorted({device for _, device, _ in self.seen}))

    def where(self, outcome: str = "") -> str:
        """' on cpu', ' on cpu and cuda', or ' on cpu (2.11.0–2.15.0) and cuda (2.11.0)': the devices the checks with
        that outcome (any, when empty) ran on, with their releases where the devices saw different ones."""
        by_device: dict[str, list[str]] = {}
        for release, device, answer in self.seen:
            if not outcome or answer == outcome:
                by_device.setdefault(device, []).append(release)
        if not by_device:
            return ""
        if len(by_device) == 1 or len({frozenset(r) for r in by_device.values()}) == 1:
            return f" on {' and '.join(sorted(by_device))}"
        return " on " + " and ".join(f"{device} ({_span(releases)})" for device, releases in sorted(by_device.items()))

    @property
    def bites(self) -> list[str]:
        return [v for v, o in self.answers if o == script.STILL_BITES]

    @property
    def fixed_from(self) -> str:
        """The first release tried after the last one it bites on, if every later one is fixed."""
        if not self.bites:
            return ""
        last = max(i for i, (_, o) in enumerate(self.answers) if o == script.STILL_BITES)
        later = self.answers[last + 1:]
        return later[0][0] if later and all(o == script.FIXED_HERE for _, o in later) else ""

    @property
    def newest(self) -> str:
        return self.answers[-1][0] if self.answers else ""

    @property
    def bites_on_newest(self) -> bool:
        return bool(self.answers) and self.answers[-1][1] == script.STILL_BITES

    def then_fails(self) -> str:
        """Where a repro fails otherwise from the fixed release on: 'torch 2.12.1–2.15.0: another finding, <id>' (or
        the error line where no catalog finding shows it); '' where none does."""
        if not self.fixed_from:
            return ""
        later = [(v, e) for v, e in self.differently if _version_key(v) >= _version_key(self.fixed_from)]
        if not later:
            return ""
        span = later[0][0] if len(later) == 1 else f"{later[0][0]}–{later[-1][0]}"
        error = later[-1][1]
        known = finding_of(error)
        return f"{self.package} {span}: " + (f"another finding, {known}" if known else error)

    def words(self) -> str:
        """'bites on torch 2.11.0–2.13.0, fixed from 2.14.0 (tried: ...)', from the checks alone."""
        if not self.answers:
            return "no release checked yet"
        tried = ", ".join(f"{v} {script.VERDICT.get(o) or o}" for v, o in self.answers)
        if not self.bites:
            return f"does not bite on any {self.package} release tried{self.where()} ({tried})"
        # one device: said once, at the end; several: after each answer, with their releases where they differ
        single = len(self.devices) == 1
        bites_on = "" if single else self.where(script.STILL_BITES)
        last = self.where() if single else ""
        span = f"{_span(self.bites)}{bites_on}"
        if self.fixed_from:
            then = self.then_fails()
            also = f"; past it the model's own repro fails otherwise on {then}" if then else ""
            fixed_on = last or self.where(script.FIXED_HERE)
            return f"bites on {self.package} {span}, fixed from {self.fixed_from}{fixed_on} (tried: {tried}){also}"
        if self.bites_on_newest:
            return f"bites on {self.package} {span}, still on the newest tried, {self.newest}{last} (tried: {tried})"
        return f"bites on {self.package} {span}{last} (tried: {tried})"


def _span(releases: list[str]) -> str:
    """'2.11.0' or '2.11.0–2.13.0' (oldest to newest of the releases given); '2.11.0, 2.13.0' for two."""
    ordered = sorted(set(releases), key=_version_key)
    return ordered[0] if len(ordered) == 1 else (", ".join(ordered) if len(ordered) == 2
                                                  else f"{ordered[0]}–{ordered[-1]}")


def timeline(checks: Iterable[Check]) -> Timeline:
    """The checks along the package whose release they vary (decided ones only: a repro that could not run tells
    nothing of the release)."""
    ran = [c for c in checks if c.outcome in (script.STILL_BITES, script.FIXED_HERE, script.FAILS_DIFFERENTLY)]
    releases = {p: len({c.versions.get(p) for c in ran if c.versions.get(p)}) for p in SERIES}
    # the package whose releases the checks vary most (a bisect over executorch beside one torch check on a runner)
    package = max(SERIES, key=lambda p: (releases[p], -SERIES.index(p))) if any(releases.values()) else "torch"
    by_release: dict[str, str] = {}
    differently: dict[str, str] = {}
    rank = {script.STILL_BITES: 0, script.FIXED_HERE: 1, script.FAILS_DIFFERENTLY: 2}
    for c in sorted(ran, key=lambda c: _version_key(c.versions.get(package, "0"))):
        release = c.versions.get(package, "")
        if not release:
            continue
        # a release that bites on one device bites; one where a repro ran through without it is fixed, whatever
        # another repro met past it (kept in `differently`); only a release where every repro failed otherwise says so
        if rank[c.outcome] < rank.get(by_release.get(release, ""), 3):
            by_release[release] = c.outcome
        if c.outcome == script.FAILS_DIFFERENTLY:
            differently.setdefault(release, c.error_line)
    seen = tuple((c.versions[package], c.device, c.outcome) for c in ran if c.versions.get(package))
    biting = sorted((c for c in ran if c.outcome == script.STILL_BITES and c.versions.get(package)),
                    key=lambda c: _version_key(c.versions[package]))
    return Timeline(package, tuple(by_release.items()), seen,
                    tuple(sorted(differently.items(), key=lambda item: _version_key(item[0]))),
                    biting[-1].error_line if biting else "")


def finding_of(error_line: str) -> str:
    """The id of the catalog's finding whose own message an error line shows ('' if none)."""
    from .catalog import findings

    return next((f.id for f in findings.all() if f.evidence_mark and f.evidence_mark in error_line), "")


def workaround_line(folder: Path) -> Timeline | None:
    """The checks of a finding's workaround script (<folder>/workaround/checked/): where it runs through ("fixed
    here": the workaround holds), where it still meets the bug, where it fails otherwise; None without any."""
    checks = read_checks(Path(folder) / "workaround") if (Path(folder) / "workaround" / "checked").is_dir() else []
    return timeline(checks) if checks else None


def workaround_words(line: Timeline) -> str:
    """'`workaround/repro.py` holds on torch 2.12.1, 2.13.0 on cpu; fails otherwise on 2.11.0: …', from its checks."""
    by = {o: [v for v, a in line.answers if a == o] for o in (script.FIXED_HERE, script.STILL_BITES,
                                                               script.FAILS_DIFFERENTLY)}
    parts = []
    if by[script.FIXED_HERE]:
        parts.append(f"holds on {line.package} {', '.join(by[script.FIXED_HERE])}{line.where(script.FIXED_HERE)}")
    if by[script.STILL_BITES]:
        said = f" ({line.bite_line})" if line.bite_line else ""
        parts.append(f"still meets the bug on {', '.join(by[script.STILL_BITES])}{said}")
    for release, error in line.differently:
        if release in by[script.FAILS_DIFFERENTLY]:
            known = finding_of(error)
            parts.append(f"fails otherwise on {release}: {error}" + (f" ({known})" if known else ""))
    return "`workaround/repro.py` " + "; ".join(parts)


def advice(upstream: Upstream, line: Timeline) -> str:
    """What a user does next, from the threads and the measured timeline: upgrade, comment on a thread, or file."""
    same = upstream.of("same bug", "same cause, another back-end")
    fixes = upstream.of("fix")
    if line.fixed_from:
        via = f" (fixed by {', '.join(t.ref for t in fixes)})" if fixes else ""
        then = line.then_fails()
        after = f"; the model's own repro then fails otherwise ({then}), so upgrading alone does not make it run" \
            if then else ""
        return f"fixed upstream from {line.package} {line.fixed_from}{via}: upgrade{after}"
    if not line.answers:
        return "not checked on any release yet"
    if same:
        thread = same[0]
        return (f"a duplicate of {thread.ref} ({thread.state}): comment there with this repro rather than file a new "
                "issue")
    tracker = upstream.tracker or "the component tracker"
    if line.bites_on_newest:
        release = newest_release(line.package)
        if release and _version_key(release) > _version_key(line.newest):
            # not "to file": a release newer than any tried may already carry the fix
            return f"check it on {line.package} {release} before filing at {tracker}: it bites on {line.newest}, " \
                   "the newest tried, and no upstream thread names it"
        return f"to file at {tracker}: bites on the newest {line.package} tried ({line.newest}) and no upstream " \
               "thread names it"
    return "see the releases above"


def newest_release(package: str) -> str:
    """The newest release of a package that the matrix's stacks pin (data/stacks.json): what a check should reach."""
    from ..matrix.stacks import MatrixError, load_stacks

    try:
        stacks, _ = load_stacks()
    except MatrixError:
        return ""
    pins = [s.pins[package] for s in stacks if s.pins.get(package)]
    return max(pins, key=_version_key, default="")


def summary(finding: str, folder: Path | None) -> dict[str, Any]:
    """Everything a page or ISSUE.md shows of a finding's upstream side, as data."""
    upstream = load(finding)
    line = timeline(read_checks(folder)) if folder else Timeline("torch", ())
    fix = workaround_line(folder) if folder else None
    said = advice(upstream, line)
    return {"component": upstream.component, "tracker": upstream.tracker,
            "workaround": {"answers": [list(a) for a in fix.answers], "words": workaround_words(fix)} if fix else {},
            "threads": [{"ref": t.ref, "url": t.url, "kind": t.kind, "state": t.state, "relation": t.relation,
                         "title": t.title, "why": t.why} for t in upstream.threads],
            "timeline": {"package": line.package, "answers": [list(a) for a in line.answers], "bites": line.bites,
                         "differently": [list(d) for d in line.differently],
                         "fixed_from": line.fixed_from, "newest": line.newest, "words": line.words()},
            "advice": said, "next": next_step(said)}


def next_step(said: str) -> str:
    """The advice in two or three words, for a summary line: upgrade, comment on a thread, file it, check it."""
    for start, words in (("fixed upstream", "upgrade"), ("a duplicate of", "comment upstream"), ("to file", "file it"),
                         ("check it on", "check the newest"), ("not checked", "check it")):
        if said.startswith(start):
            return words
    return "see its releases"
