"""Crash forensics: native backtraces under a debugger, and the rules that name a crash's cause from them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

DEBUGGERS = ("gdb", "cuda-gdb")  # first found wins: gdb starts faster, cuda-gdb is what CUDA machines often have
DEFAULT_TIMEOUT = 240.0  # seconds for one re-run of a step under the debugger
TOP_FRAMES = 8

# "#3  0x00007f12 in std::foo (a=1) at x.cc:12" / "#4  0x... in bar () from /lib/x.so" / "#0  baz () at y.c:3"
_FRAME = re.compile(r"^#(?P<n>\d+)\s+(?:(?P<addr>0x[0-9a-f]+) in )?(?P<func>.+?)"
                    r"(?:\s+from\s+(?P<lib>\S+)|\s+at\s+(?P<file>\S+))?\s*$")
_SHLIB = re.compile(r"^0x[0-9a-f]+\s+0x[0-9a-f]+\s+\S+\s+(?:\(\*\)\s+)?(?P<path>/\S+)$")


@dataclass(frozen=True)
class Frame:
    """One native frame of a backtrace."""

    n: int
    func: str
    lib: str = ""
    file: str = ""

    def short(self) -> str:
        where = os.path.basename(self.lib or self.file)
        func = re.sub(r"\(.*", "", self.func).strip()[:110]  # drop argument lists: they make frames unreadable
        return f"#{self.n} {func}" + (f" [{where}]" if where else "")


@dataclass
class Backtrace:
    """What a debugger saw when the re-run step crashed."""

    debugger: str
    crashed: bool
    signal: str = ""
    frames: list[Frame] = field(default_factory=list)
    libraries: list[str] = field(default_factory=list)
    text: str = ""

    def top(self, n: int = TOP_FRAMES) -> list[str]:
        return [f.short() for f in self.frames[:n]]


def parse_gdb(text: str, debugger: str = "gdb") -> Backtrace:
    """Parse gdb/cuda-gdb batch output: the signal, the crashing thread's frames and the mapped libraries."""
    signal = ""
    m = re.search(r"(?:Program|Thread \S+ \S*) received signal (SIG[A-Z0-9]+)", text) or \
        re.search(r"received signal (SIG[A-Z0-9]+)", text)
    if m:
        signal = m.group(1)
    frames, libraries = [], []
    for raw in text.splitlines():
        line = raw.strip()
        fm = _FRAME.match(line)
        if fm and (not frames or int(fm["n"]) == frames[-1].n + 1):  # the first backtrace only
            frames.append(Frame(int(fm["n"]), fm["func"].strip(), fm["lib"] or "", fm["file"] or ""))
            continue
        sm = _SHLIB.match(line)
        if sm:
            libraries.append(sm["path"])
    return Backtrace(debugger, bool(signal), signal, frames, libraries, text)


def find_debugger() -> str:
    """Path of the first debugger on PATH (gdb, then cuda-gdb), or ''."""
    return next((p for p in map(shutil.which, DEBUGGERS) if p), "")


def native_backtrace(replay_file: str, timeout: float = DEFAULT_TIMEOUT) -> Backtrace | str:
    """Re-run a pickled step (see isolate.replay) under the debugger; a Backtrace, or why there is none."""
    debugger = find_debugger()
    if not debugger:
        return f"no native backtrace: none of {', '.join(DEBUGGERS)} is installed on this machine"
    cmd = [debugger, "-q", "-batch", "-nx", "-ex", "set pagination off", "-ex", "set confirm off",
           "-ex", "handle SIGUSR1 SIGUSR2 SIGPIPE SIGCHLD nostop noprint pass",
           "-ex", "run", "-ex", "bt", "-ex", "info sharedlibrary",
           "--args", sys.executable, "-m", "yolo26kit.bench.isolate", replay_file]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, errors="replace",
                              start_new_session=True)
    except subprocess.TimeoutExpired as exc:
        return f"no native backtrace: the re-run under {os.path.basename(debugger)} ran past {timeout:g} s" + (
            f" ({_tail(exc.stdout)})" if exc.stdout else "")
    trace = parse_gdb(done.stdout + "\n" + done.stderr, os.path.basename(debugger))
    if not trace.crashed:
        return (f"no native backtrace: the step did not crash when re-run under {os.path.basename(debugger)} "
                f"(exit {done.returncode}): {_tail(done.stdout + done.stderr)}")
    return trace


def _tail(text: str | bytes, n: int = 300) -> str:
    text = text.decode(errors="replace") if isinstance(text, bytes) else text
    return " ".join(text.split())[-n:]


def defined_symbols(library: str, pattern: str) -> list[str]:
    """Demangled dynamic symbols that `library` defines and that match `pattern` (needs binutils' nm)."""
    nm = shutil.which("nm")
    if not nm or not os.path.exists(library):
        return []
    try:
        out = subprocess.run([nm, "-D", "-C", "--defined-only", library], capture_output=True, text=True,
                             timeout=60, errors="replace").stdout
    except subprocess.TimeoutExpired:
        return []
    rx = re.compile(pattern)
    return [line.split(" ", 2)[-1] for line in out.splitlines() if rx.search(line)]


# --- known causes -------------------------------------------------------------------------------

@dataclass
class Cause:
    """A rule that fired: its name, what it means, the workaround it allows and the evidence it matched."""

    rule: str
    explanation: str
    workaround: str
    matched: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Rule:
    """A known crash cause: `match` returns the matched evidence, or None when the rule does not apply."""

    name: str
    explanation: str
    workaround: str
    match: Callable[[Backtrace], dict[str, Any] | None]


_LOCALE_FUNC = re.compile(r"std::(?:__cxx11::)?(?:basic_regex|regex_traits|_Compiler|_Scanner|locale|codecvt|"
                          r"ctype|collate|use_facet|has_facet|__detail::_(?:Scanner|Compiler|BracketMatcher))")
_LIBSTDCXX_DEFS = r"std::(?:locale::|codecvt<|ctype<|__cxx11::regex_traits<|regex_traits<|use_facet<)"
_SHARED_OBJECT = re.compile(r"\.so(?:\.[\d.]+)?$")
_SYSTEM_LIBSTDCXX = re.compile(r"/libstdc\+\+\.so[.\d]*$")


def _static_libstdcxx_locale_mix(trace: Backtrace) -> dict[str, Any] | None:
    """Frames in regex/locale code inside a loaded .so (not libstdc++ itself) that defines libstdc++ symbols."""
    frames = [f for f in trace.frames if _LOCALE_FUNC.search(f.func) and f.lib and _SHARED_OBJECT.search(f.lib)
              and not _SYSTEM_LIBSTDCXX.search(f.lib)]
    if not frames:
        return None
    lib = frames[0].lib
    symbols = defined_symbols(lib, _LIBSTDCXX_DEFS)
    system = [p for p in trace.libraries if _SYSTEM_LIBSTDCXX.search(p)]
    if not symbols or not system:
        return None  # never on a guess: the .so must define libstdc++'s symbols and the process map the system one
    return {"frames": [f.short() for f in frames[:6]], "library": lib, "defined_libstdcxx_symbols": len(symbols),
            "symbol_sample": symbols[:5], "system_libstdcxx": system[0]}


RULES: dict[str, Rule] = {}


def register(rule: Rule) -> Rule:
    """Add a known cause to the rule set."""
    RULES[rule.name] = rule
    return rule


def diagnose(trace: Backtrace) -> Cause | None:
    """The first rule that matches the backtrace, with what it matched; None when no rule applies."""
    for rule in RULES.values():
        matched = rule.match(trace)
        if matched:
            return Cause(rule.name, rule.explanation, rule.workaround, matched)
    return None


def mapped_libstdcxx(maps: str | Path = "/proc/self/maps") -> str:
    """The libstdc++ this process actually maps ('' if none): the library a workaround may load globally."""
    try:
        text = Path(maps).read_text()
    except OSError:
        return ""
    return next((line.split()[-1] for line in text.splitlines() if _SYSTEM_LIBSTDCXX.search(line.split()[-1])), "")


register(Rule(
    "static_libstdcxx_locale_mix",
    "The crash is in std::regex/locale code inside a shared object that carries its own static copy of libstdc++ "
    "(the host compiler linked it into AOT Inductor's wrapper; Inductor's link line has no -static-libstdc++) while "
    "the process runs on the system libstdc++: the two copies mix locale facets.",
    "system_libstdcxx",
    _static_libstdcxx_locale_mix,
))
