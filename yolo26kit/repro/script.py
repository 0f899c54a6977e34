"""A repro script's header (what it needs, where it was seen, how it bites) and the reading of one run's outcome."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

EXIT_CANNOT_RUN = 77  # a repro's own "cannot run here" (no CUDA device), as automake's skip
SEEN_ON = "# seen-on:"

# The answers of a run, from its exit code and output.
STILL_BITES, FIXED_HERE, FAILS_DIFFERENTLY, CANNOT_RUN = "still bites", "fixed here", "fails differently", \
    "cannot run here"
# `repro --check` exits with these (documented in its help).
CHECK_EXIT = {FIXED_HERE: 0, STILL_BITES: 1, FAILS_DIFFERENTLY: 3, CANNOT_RUN: 4}
# The same answers as bisect verdicts (one word each).
VERDICT = {STILL_BITES: "bites", FIXED_HERE: "fixed", FAILS_DIFFERENTLY: "fails_differently", CANNOT_RUN: ""}


@dataclass
class Header:
    """The `# key: value` lines at the top of a repro.py."""

    finding: str = ""
    requires: list[str] = field(default_factory=list)
    requires_no_deps: list[str] = field(default_factory=list)
    device: str = "cpu"
    bites_with: str = ""
    seen_on: list[str] = field(default_factory=list)

    def pins(self) -> dict[str, str]:
        """{package: version} of the exactly pinned requirements (both lists)."""
        found = {}
        for requirement in self.requires + self.requires_no_deps:
            name, _, version = requirement.partition("==")
            if version:
                found[name.lower()] = version
        return found

    def with_pins(self, pins: dict[str, str]) -> "Header":
        """The header with some packages pinned to other releases (a bisect's probe)."""
        def repin(items: list[str]) -> list[str]:
            return [f"{name}=={pins[name]}" if (name := re.split(r"[=<>~!]", r, maxsplit=1)[0].lower()) in pins
                    else r for r in items]
        known = {re.split(r"[=<>~!]", r, maxsplit=1)[0].lower() for r in self.requires + self.requires_no_deps}
        extra = [f"{k}=={v}" for k, v in pins.items() if k not in known]
        return Header(self.finding, repin(self.requires) + extra, repin(self.requires_no_deps), self.device,
                      self.bites_with, list(self.seen_on))


def unpinned(header: Header, names: tuple[str, ...]) -> Header:
    """The header with the named packages left to the resolver (those that must pair with a moved release)."""
    def free(items: list[str]) -> list[str]:
        return [name if (name := re.split(r"[=<>~!]", r, maxsplit=1)[0].lower()) in names else r for r in items]
    return Header(header.finding, free(header.requires), free(header.requires_no_deps), header.device,
                  header.bites_with, list(header.seen_on))


def parse(text: str) -> Header:
    """The header of a repro.py's text (lines `# finding:`, `# requires:`, ... before the first import)."""
    header = Header()
    for line in text.splitlines():
        if re.match(r"^(import [\w.]+|from [\w.]+ import )", line):  # the code begins: the header is above it
            break
        match = re.match(r"#\s*([a-z-]+):\s*(.*)$", line)
        if not match:
            continue
        key, value = match.group(1), match.group(2).strip()
        if key == "finding":
            header.finding = value
        elif key == "requires":
            header.requires = value.split()
        elif key == "requires-no-deps":
            header.requires_no_deps = value.split()
        elif key == "device":
            header.device = value.split()[0]
        elif key == "bites-with":
            header.bites_with = value
        elif key == "seen-on":
            header.seen_on.append(value)
    return header


def with_seen_on(text: str, seen: list[str]) -> str:
    """The script with its `# seen-on:` lines replaced by `seen` (one line each)."""
    lines = text.splitlines()
    at = next((i for i, line in enumerate(lines) if line.startswith(SEEN_ON)), None)
    if at is None:
        return text
    kept = [line for line in lines if not line.startswith(SEEN_ON)]
    kept[at:at] = [f"{SEEN_ON} {s}" for s in seen]
    return "\n".join(kept) + "\n"


def error_line(output: str) -> str:
    """The failure's own line: the last `SomeError: ...` line of a traceback, else the last line printed."""
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Failed)\b.*", line)]
    return (errors or lines or [""])[-1][:600]


def outcome(exit_code: int, output: str, header: Header) -> str:
    """still bites / fixed here / fails differently / cannot run here, from a run's exit code and output."""
    if exit_code == 0:
        return FIXED_HERE
    if exit_code == EXIT_CANNOT_RUN:
        return CANNOT_RUN
    if header.bites_with and header.bites_with in output:
        return STILL_BITES
    if exit_code < 0 and "signal" in header.bites_with:
        return STILL_BITES
    return FAILS_DIFFERENTLY
