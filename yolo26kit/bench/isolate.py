"""Run one step (export, compile, lower, load, run) in a child process with a timeout; classify its end.

A crash or timeout keeps its evidence: the child's Python stack (faulthandler), and for a crash a native
backtrace from re-running the step under a debugger, with the known cause it matches (see forensics.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import faulthandler
import hashlib
import json
import os
import pickle
import re
import signal
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Iterator

from ..paths import process_temp_dir
from . import step_server
# the step server's calls, under the names every caller knows
from .step_server import preload, start_soon as start_server_soon, stop as stop_server  # noqa: F401

STATUSES = ("ok", "error", "crash", "timeout", "oom", "skipped")
LOG_TAIL = 20_000  # characters of the child's stdout/stderr kept with the outcome
_OOM_TYPES = ("OutOfMemoryError", "MemoryError")
# Where whole traces of crashes/timeouts are written (the runner sets it to the run folder); else a temp dir.
FORENSICS_DIR_ENV = "YOLO26KIT_FORENSICS_DIR"
FORENSICS_TIMEOUT_ENV = "YOLO26KIT_FORENSICS_TIMEOUT"
# "<folder>:<n>": at most n isolated steps run at once across every process of a run (the runner sets it for
# notebook kernels). Steps started inside a step do not take a slot: their parent already holds one.
SLOTS_ENV = "YOLO26KIT_STEP_SLOTS"
# A notebook's rank for those slots (0 first: the plan's order, longest first): a waiting step lets a free slot go
# to a waiting step of a lower rank, so the notebook expected to end the batch waits least.
SLOT_RANK_ENV = "YOLO26KIT_STEP_RANK"
# A step of a runner's notebook (YOLO26KIT_NOTEBOOK_TAG = run/name/pid set) appends its Inductor and AOTAutograd
# cache counters to <forensics dir>/CACHE_COUNTS/<name>.jsonl; the runner sums them into run.json.
CACHE_COUNTS = ".cache-counts"
_COUNTED = {"inductor": ("fxgraph_cache_hit", "fxgraph_cache_miss", "fxgraph_cache_bypass"),
            "aot_autograd": ("autograd_cache_hit", "autograd_cache_miss", "autograd_cache_bypass")}
# Phases a step's seconds are accounted to (timing.phase_seconds); guessed from the step's name when not given.
_COMPILE_WORDS = re.compile(r"compile|lower|export|package|build", re.I)
# A folder where each step a notebook finishes (ok or error) keeps its Outcome (the runner sets it per notebook of
# a run): a notebook stopped at a --stop-after deadline re-runs its cells on --resume, and the steps that finished
# in an earlier call are read back instead of run again, so a notebook longer than one call still finishes.
# Crashes, timeouts, OOM kills and interrupts are not kept (they may come from the stop itself; crashes are re-diagnosed).
JOURNAL_ENV = "YOLO26KIT_STEP_JOURNAL"
# The cores a notebook's processes run on ("0-23"): the runner keeps the others for CPU timings (timing.cpu_lock).
CORES_ENV = "YOLO26KIT_NOTEBOOK_CORES"
JOURNAL_STOPPING = "stopping"  # written into the journal before the runner stops its steps: nothing is kept after it
JOURNAL_REUSED = "reused.jsonl"  # one line per step read back: {"step", "seconds"} (seconds it took when it ran)
_JOURNALED = ("ok", "error")


@dataclass
class Outcome:
    """How a step ended: status, wall time, the step's own data, and what went wrong."""

    step: str
    status: str
    seconds: float = 0.0
    value: Any = None
    error: str = ""
    traceback: str = ""
    signal: str = ""
    log: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def row(self) -> dict[str, Any]:
        """The outcome as a flat row for a status table (crash/timeout rows add cause, top frames, trace file)."""
        row = {"step": self.step, "status": self.status, "seconds": round(self.seconds, 2),
               "error": self.error, "signal": self.signal}
        if self.status in ("crash", "timeout"):
            row.update({k: self.details.get(k, "") for k in ("cause", "frames", "trace_file")})
        return row


def skipped(step: str, reason: str) -> Outcome:
    """An outcome for a step that was not attempted, with the reason in `error`."""
    return Outcome(step, "skipped", error=reason)


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def load_global(libraries: list[str]) -> None:
    """dlopen each library with RTLD_GLOBAL, so its symbols take precedence for libraries loaded later."""
    for lib in libraries:
        ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)


def _watch_lifeline(lifeline: Connection) -> None:
    """End this step's whole tree when the process that started it dies (its end of the pipe closes)."""
    try:
        lifeline.recv_bytes()
    except (EOFError, OSError):
        pass
    kill_descendants(os.getpid())
    os.killpg(0, signal.SIGKILL)


def _child(conn: Connection, lifeline: Connection, fn: Callable, args: tuple, kwargs: dict, log_path: str | None,
           env: dict, preload_global: list[str], spawned_at: float = 0.0, step: str = "",
           unset: tuple[str, ...] = ()) -> None:
    os.setsid()  # own process group: a timeout kills the step and every worker it started
    threading.Thread(target=_watch_lifeline, args=(lifeline,), daemon=True).start()
    for name in unset:
        os.environ.pop(name, None)
    os.environ.pop(SLOTS_ENV, None)
    os.environ.pop(JOURNAL_ENV, None)  # a step started inside a step is part of it: only the outer one is kept
    os.environ.update(env)
    if env.get("PYTHONPATH"):  # set after the step server started: its fork has the server's sys.path, not this one
        sys.path[:0] = [p for p in env["PYTHONPATH"].split(os.pathsep) if p and p not in sys.path]
    if env.get("OMP_NUM_THREADS", "").isdigit() and "torch" in sys.modules:  # forked after torch sized its pool
        sys.modules["torch"].set_num_threads(int(env["OMP_NUM_THREADS"]))
    _run_on_notebook_cores()
    if log_path:
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        os.dup2(log, 1)
        os.dup2(log, 2)
    faulthandler.enable(file=sys.stderr)  # a segfault leaves its Python stack in the log
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)  # the parent asks before a timeout kill
    from . import timing

    try:
        load_global(preload_global)
        if spawned_at:  # from the parent's start() to here: the fork, and the imports that unpickling `fn` needed
            timing.log_interval("step_start", spawned_at, time.time(), step=step)
        value = fn(*args, **kwargs)
        message: tuple = ("ok", value)
    except BaseException as exc:  # the step's failure is data for the parent
        kind = "oom" if type(exc).__name__ in _OOM_TYPES or "out of memory" in str(exc).lower() else "error"
        message = (kind, f"{type(exc).__name__}: {_first_line(str(exc))}".rstrip(": "), traceback.format_exc())
    _record_cache_counts()
    try:
        # Plain pickle, not the multiprocessing pickler: tensors are copied, not shared through
        # memory that disappears with this process.
        payload = pickle.dumps((timing.phase_seconds(), message))
    except Exception as exc:  # e.g. an unpicklable return value
        payload = pickle.dumps((timing.phase_seconds(),
                                ("error", f"step result could not be sent back: {type(exc).__name__}: {exc}", "")))
    conn.send_bytes(payload)
    sys.stdout.flush()
    sys.stderr.flush()
    conn.close()


def _run_on_notebook_cores() -> None:
    """Keep this process (and what it starts) on the notebook's cores, when the runner gave some (CORES_ENV)."""
    from . import timing

    cores = timing.parse_cores(os.environ.get(CORES_ENV, ""))
    if cores:
        with contextlib.suppress(OSError):  # cores outside this process's allowed set: leave it where it is
            os.sched_setaffinity(0, cores)


def _record_cache_counts() -> None:
    """Append this step's compile-cache counters to its notebook's CACHE_COUNTS file (nothing outside a run)."""
    folder, tag = os.environ.get(FORENSICS_DIR_ENV, ""), os.environ.get("YOLO26KIT_NOTEBOOK_TAG", "")
    utils = sys.modules.get("torch._dynamo.utils")
    if not folder or tag.count("/") < 2 or utils is None:
        return
    try:
        row = {key: utils.counters[group][key] for group, keys in _COUNTED.items() for key in keys
               if utils.counters[group][key]}
        if row:
            os.makedirs(os.path.join(folder, CACHE_COUNTS), exist_ok=True)
            with open(os.path.join(folder, CACHE_COUNTS, tag.split("/")[1] + ".jsonl"), "a") as f:
                f.write(json.dumps(row) + "\n")
    except Exception:  # noqa: BLE001 - counting never fails a step
        pass


def _kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def descendants(pid: int) -> list[int]:
    """Every live descendant of pid (children first), read from /proc; kernels in other sessions included."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], list(children.get(pid, []))
    while todo:
        p = todo.pop(0)
        found.append(p)
        todo.extend(children.get(p, []))
    return found


def kill_descendants(pid: int, sig: int = signal.SIGKILL) -> list[int]:
    """Signal every descendant of pid (the whole tree is listed before anything is signalled)."""
    tree = descendants(pid)
    for p in tree:
        try:
            os.kill(p, sig)
        except (ProcessLookupError, PermissionError):
            pass
    return tree


_LIVE: dict[int, Any] = {}  # pid -> Process of the steps this process is running now (threads may run several)
_LIVE_LOCK = threading.Lock()
_STOPPED = threading.Event()  # set by stop_all: a step that starts from now on is ended at once


def stop_all(grace: float = 3.0) -> list[int]:
    """terminate_all, and end at once every step that starts after it (one whose start was already under way
    while the batch stopped, e.g. waiting for the step server) until allow_steps()."""
    _STOPPED.set()
    return terminate_all(grace)


def allow_steps() -> None:
    """Undo stop_all: steps run again (a new batch in the same process)."""
    _STOPPED.clear()


def terminate_all(grace: float = 3.0) -> list[int]:
    """SIGTERM every live step of this process and all their descendants, SIGKILL what is left after `grace` s."""
    with _LIVE_LOCK:
        procs = list(_LIVE.values())
    signalled: list[int] = []
    for proc in procs:
        signalled += [proc.pid, *kill_descendants(proc.pid, signal.SIGTERM)]
        _kill_group(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(p.is_alive() for p in procs):
        time.sleep(0.1)
    for proc in procs:
        signalled += kill_descendants(proc.pid)
        _kill_group(proc.pid)
    for pid in signalled:  # descendants that ignored SIGTERM and outlived their parent
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return sorted(set(signalled))


@contextlib.contextmanager
def step_slot(rank: int | None = None) -> Iterator[float]:
    """Hold one of the run's step slots while a step runs (no-op without SLOTS_ENV); yields seconds waited. While it
    waits it leaves a `wait-<rank>-<pid>-<thread>` mark, and takes a free slot only when no live step of a lower rank
    waits."""
    spec = os.environ.get(SLOTS_ENV, "")
    if not spec:
        yield 0.0
        return
    folder, count = spec.rsplit(":", 1)
    os.makedirs(folder, exist_ok=True)
    rank = _slot_rank() if rank is None else rank
    mark = os.path.join(folder, f"wait-{rank}-{os.getpid()}-{threading.get_ident()}")
    open(mark, "w").close()
    t0 = time.perf_counter()
    try:
        while True:
            if not _lower_rank_waiting(folder, rank):
                for i in range(max(1, int(count))):
                    f = open(os.path.join(folder, f"slot-{i}.lock"), "a")
                    try:
                        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except BlockingIOError:
                        f.close()
                        continue
                    _remove(mark)
                    try:
                        yield time.perf_counter() - t0
                    finally:
                        fcntl.flock(f, fcntl.LOCK_UN)
                        f.close()
                    return
            time.sleep(0.25)
    finally:
        _remove(mark)


def _slot_rank() -> int:
    try:
        return int(os.environ.get(SLOT_RANK_ENV, ""))
    except ValueError:
        return 1 << 16  # no rank: after every ranked step


def _lower_rank_waiting(folder: str, rank: int) -> bool:
    """Whether a live process waits for a slot with a lower rank than `rank` (marks of dead processes are removed)."""
    for name in os.listdir(folder):
        parts = name.split("-")
        if len(parts) != 4 or parts[0] != "wait" or not parts[1].isdigit() or int(parts[1]) >= rank:
            continue
        try:
            os.kill(int(parts[2]), 0)
        except ProcessLookupError:
            _remove(os.path.join(folder, name))
            continue
        except (PermissionError, ValueError):
            pass
        return True
    return False


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _read_tail(path: str | None) -> str:
    if not path:
        return ""
    try:
        with open(path, errors="replace") as f:
            return f.read()[-LOG_TAIL:]
    finally:
        os.unlink(path)


def in_kernel() -> bool:
    """Whether this process is a Jupyter kernel (its stdout is ipykernel's stream): a notebook, by hand or not."""
    return type(sys.stdout).__module__.startswith("ipykernel")


def progress(line: str) -> None:
    """One `[step]` progress line. In a notebook's kernel on stdout: plain output in JupyterLab (stderr shows as a
    pink error box), kept in the executed notebook and papermill's log alike, moved to the log section of the
    outputs-only page. Elsewhere (the `run` command, a probe) on stderr, beside the command's other progress lines."""
    print(f"[step] {line}", file=sys.stdout if in_kernel() else sys.stderr, flush=True)


def run_step(fn: Callable, *args: Any, timeout: float, step: str = "", capture: bool = True,
             env: dict[str, str] | None = None, phase: str = "", preload_global: list[str] | tuple = (),
             forensics: bool = True, **kwargs: Any) -> Outcome:
    """Call fn(*args, **kwargs) in a child process and return its Outcome; never raises for the step's failure.

    `fn` must be importable (a module-level function). `capture` sends the child's stdout/stderr to
    `Outcome.log` instead of this process's terminal; `env` is applied in the child before the call;
    `preload_global` libraries are dlopened with RTLD_GLOBAL first. `phase` (compile / measure / other,
    guessed from the step name when empty) is where the step's seconds go in timing.phase_seconds().
    A child killed by SIGKILL that we did not send is classed `oom` (the kernel's OOM killer). With
    `forensics`, a crash is re-run under a debugger for its native backtrace and known cause (details).
    Under JOURNAL_ENV, a call that finished in an earlier call of the run is read back, not run (details["reused"]).
    """
    step = step or getattr(fn, "__name__", "step")
    if getattr(fn, "__module__", "") == "__main__" and not step_server.main_file():
        return Outcome(step, "error", error=f"{getattr(fn, '__qualname__', fn)!r} is defined in __main__ without a "
                       "file (a notebook, or code read from stdin): the step's process cannot import it; define it "
                       "in a module")
    journal = os.environ.get(JOURNAL_ENV, "")
    key = journal_key(fn, args, kwargs, step, env, preload_global) if journal else None
    kept = read_journal(journal, key) if key else None
    if kept is not None:
        progress(f"{step}: taken from an earlier call of this run (it ran {kept.seconds:.1f} s)")
        return kept
    remade = remake_artifacts(journal, args, kwargs) if journal else []
    asked = time.time()
    with step_slot() as waited:
        if waited > 0.01:
            _log_phase("step_wait", asked, step)
        out = _run_step(fn, args, kwargs, timeout, step, capture, env, phase, preload_global)
    if waited > 1:
        out.details["slot_wait_s"] = round(waited, 1)
    if remade:
        out.details["remade_by"] = remade
    if key:
        write_journal(journal, key, out, (fn, args, kwargs, step, env, list(preload_global), timeout, phase))
    if out.status in ("crash", "timeout"):
        began = time.time()
        _investigate(out, (fn, args, kwargs, dict(env or {}), list(preload_global)),
                     forensics and out.status == "crash")
        _log_phase("forensics", began, step)
    return out


def _log_phase(phase: str, t0: float, step: str) -> None:
    """Log `phase` from `t0` (epoch) until now for this step (timing's phase log, the runner's time accounts)."""
    from . import timing

    timing.log_interval(phase, t0, time.time(), step=step)


def work_dir(name: str) -> str:
    """A folder for a notebook's artifacts: inside the step journal when there is one (a fixed path, so steps keep
    their journal keys and the artifacts of read-back steps are still there on --resume), else a new temp folder."""
    journal = os.environ.get(JOURNAL_ENV, "")
    if not journal:
        return process_temp_dir(f"yolo26kit-{name}-")
    path = os.path.join(journal, "work", name)
    os.makedirs(path, exist_ok=True)
    return path


def journal_key(fn: Callable, args: tuple, kwargs: dict, step: str, env: dict[str, str] | None,
                preload_global: list[str] | tuple) -> str | None:
    """The journal key of a call: a hash of the function, its pickled arguments, step name, env and preloads;
    None when the arguments do not pickle (such a step is always run)."""
    try:
        blob = pickle.dumps((getattr(fn, "__module__", ""), getattr(fn, "__qualname__", repr(fn)), args,
                             sorted(kwargs.items()), step, sorted((env or {}).items()), list(preload_global)))
    except Exception:  # noqa: BLE001 - an unpicklable argument only means no journal entry
        return None
    return hashlib.sha256(blob).hexdigest()[:32]


def _paths_in(value: Any, root: str) -> Iterator[str]:
    """Strings inside `value` (dicts, lists, tuples) that name something under `root`."""
    if isinstance(value, str):
        if value.startswith(root + os.sep):
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _paths_in(item, root)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _paths_in(item, root)


def _load_entry(path: str) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as f:
            entry = pickle.load(f)
    except Exception:  # noqa: BLE001 - missing or unreadable: as if there were none
        return None
    return entry if isinstance(entry, dict) and isinstance(entry.get("outcome"), Outcome) else None


def read_journal(journal: str, key: str) -> Outcome | None:
    """The kept Outcome of a step (details["reused"] set, the read-back counted in JOURNAL_REUSED), or None."""
    entry = _load_entry(os.path.join(journal, f"{key}.pickle"))
    if entry is None:
        return None
    out = entry["outcome"]
    out.details["reused"] = True
    with open(os.path.join(journal, JOURNAL_REUSED), "a") as f:
        f.write(json.dumps({"step": out.step, "seconds": round(out.seconds, 2)}) + "\n")
    return out


def write_journal(journal: str, key: str, out: Outcome, call: tuple) -> None:
    """Keep a finished step's Outcome, and the call itself when its value names artifacts (to remake them if they
    are gone when a later step needs them); nothing once the run is stopping (the step may have ended by it)."""
    stopping = os.path.join(journal, JOURNAL_STOPPING)
    interrupted = out.error.startswith(("KeyboardInterrupt", "SystemExit"))  # a signal's doing, not the step's
    if out.status not in _JOURNALED or interrupted or _STOPPED.is_set() or os.path.exists(stopping):
        return
    entry = {"outcome": out, "call": call if any(_paths_in(out.value, journal)) else None}
    path, tmp = os.path.join(journal, f"{key}.pickle"), ""
    try:
        os.makedirs(journal, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=journal, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            pickle.dump(entry, f)
        os.replace(tmp, path)
    except Exception:  # noqa: BLE001 - e.g. an unpicklable value: the step simply runs again on --resume
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return
    if os.path.exists(stopping):  # the stop began while we wrote
        with contextlib.suppress(OSError):
            os.unlink(path)


def remake_artifacts(journal: str, args: tuple, kwargs: dict) -> list[str]:
    """Run again the kept steps that made the journal artifacts these arguments name and that are gone (a run
    folder carried without its `work/`); returns their step names. The outcomes kept for them stay as they were."""
    missing = {p for p in _paths_in((args, kwargs), journal) if not os.path.exists(p)}
    remade = []
    for name in sorted(os.listdir(journal)) if missing and os.path.isdir(journal) else []:
        entry = _load_entry(os.path.join(journal, name)) if name.endswith(".pickle") else None
        if not entry or not entry["call"] or not missing & set(_paths_in(entry["outcome"].value, journal)):
            continue
        fn, c_args, c_kwargs, step, env, preload_global, timeout, phase = entry["call"]
        progress(f"{step}: run again, to remake what a later step reads")
        with step_slot():
            _run_step(fn, c_args, c_kwargs, timeout, step, True, env, phase, preload_global)
        remade.append(step)
        missing = {p for p in missing if not os.path.exists(p)}
    return remade


def _run_step(fn: Callable, args: tuple, kwargs: dict, timeout: float, step: str, capture: bool,
              env: dict[str, str] | None, phase: str, preload_global: list[str] | tuple) -> Outcome:
    from . import timing

    phase = phase or ("compile" if _COMPILE_WORDS.search(step) else "other")
    env = {**timing.shared_threads_env(phase), **(env or {})}
    log_path = None
    if capture:
        fd, log_path = tempfile.mkstemp(prefix="yolo26kit-step-", suffix=".log")
        os.close(fd)
    ctx = step_server.context()
    parent_end, child_end = ctx.Pipe(duplex=False)
    lifeline_child, lifeline_parent = ctx.Pipe(duplex=False)  # we never write: EOF there means we died
    t0, started = time.perf_counter(), time.time()
    changed, unset = step_server.env_since_start()
    # The phase log and the import path as this process has them now: the step server may have started before they
    # were set (a model given as module:factory is imported in the step from this process's PYTHONPATH).
    logged = {name: os.environ[name] for name in (timing.PHASE_LOG_ENV, "PYTHONPATH") if os.environ.get(name)}
    proc = ctx.Process(target=_child, args=(child_end, lifeline_child, fn, args, kwargs, log_path,
                                            {**changed, **logged, **(env or {})}, list(preload_global), started, step,
                                            tuple(unset)),
                       daemon=False)
    with step_server.main_file_hidden():
        proc.start()
    with _LIVE_LOCK:
        _LIVE[proc.pid] = proc
    if _STOPPED.is_set():  # stopped while this step was starting: end it like terminate_all would have
        kill_descendants(proc.pid)
        _kill_group(proc.pid)
        proc.kill()  # it may not lead its own group yet
    child_end.close()
    lifeline_child.close()
    deadline = t0 + timeout
    message = None
    timed_out = False
    while message is None:
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            timed_out = True
            break
        ready = wait([parent_end, proc.sentinel], timeout=remaining)
        if parent_end in ready:
            try:
                message = pickle.loads(parent_end.recv_bytes())
            except EOFError:
                break  # the child died without a word: a crash
        elif proc.sentinel in ready:
            if not parent_end.poll(0):
                break
    seconds = time.perf_counter() - t0
    if timed_out:
        _kill_group(proc.pid, signal.SIGUSR1)  # faulthandler dumps every thread's Python stack into the log
        time.sleep(1.0)
        kill_descendants(proc.pid)
        _kill_group(proc.pid)
    proc.join(10)
    if proc.is_alive():
        _kill_group(proc.pid)
        proc.join()
    _kill_group(proc.pid)  # leftovers such as compile workers
    with _LIVE_LOCK:
        _LIVE.pop(proc.pid, None)
    parent_end.close()
    lifeline_parent.close()
    log = _read_tail(log_path)
    child_phases: dict[str, float] = {}
    if message is not None:
        child_phases, message = message
    for name, secs in child_phases.items():
        timing.add_phase_seconds(name, secs)
    timing.add_phase_seconds(phase, max(0.0, seconds - sum(child_phases.values())))
    timing.log_interval(phase, started, time.time(), step=step)
    progress(f"{step}: {'timeout' if timed_out else 'done'} after {seconds:.1f} s")
    if timed_out:
        out = Outcome(step, "timeout", seconds, error=f"no result after {timeout:g} s; killed", log=log)
    elif message is not None:
        status, *rest = message
        if status == "ok":
            return Outcome(step, "ok", seconds, value=rest[0], log=log)
        return Outcome(step, status, seconds, error=rest[0], traceback=rest[1], log=log)
    else:
        code = proc.exitcode
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            status = "oom" if -code == signal.SIGKILL else "crash"
            what = "killed by SIGKILL (likely out of memory)" if status == "oom" else f"crashed with {name}"
            out = Outcome(step, status, seconds, error=f"child {what}", signal=name, log=log)
        else:
            return Outcome(step, "error", seconds, error=f"child exited with code {code} without a result", log=log)
    return out


def python_stack(log: str) -> str:
    """The Python stack faulthandler wrote into a step's log (fatal error or timeout dump), '' if none."""
    fatal = log.rfind("Fatal Python error")
    if fatal >= 0:
        return log[fatal:].strip()
    m = re.search(r"^(?:Current thread|Thread) 0x[0-9a-f]+", log, re.M)
    return log[m.start():].strip() if m else ""


CRASH_SITES = ".crash-sites"  # in the forensics folder: this run's diagnosed sites and their locks
CRASH_SITE_FRAMES = 5  # innermost Python frames that identify a crash site (callers further out may differ)


def crash_site(signal_name: str, stack: str) -> str:
    """A digest of where Python was when the step crashed: the signal and the crashing thread's innermost frames."""
    block = stack.split("Current thread", 1)[-1]
    frames = re.findall(r'File "([^"]+)", line (\d+) in (\S+)', block.split("\n\n", 1)[0])[:CRASH_SITE_FRAMES]
    return hashlib.sha256(json.dumps([signal_name, frames]).encode()).hexdigest()[:16] if frames else ""


def _known_site(folder: str, site: str) -> dict[str, Any] | None:
    """A diagnosis of this crash site made earlier in this run, else one kept in the compile cache by an earlier run."""
    from .artifacts import crash_site_file

    cached = crash_site_file(site)
    for path, earlier_run in ((os.path.join(folder, CRASH_SITES, f"{site}.json"), False), (cached, True)):
        try:
            with open(path or "") as f:
                return {**json.load(f), "earlier_run": earlier_run}
        except (OSError, ValueError):
            continue
    return None


def _remember_site(folder: str, site: str, details: dict[str, Any], native_report: list[str]) -> None:
    """Keep a diagnosis for later crashes at the same site: in the run folder, and in the compile cache if any."""
    from .artifacts import crash_site_file, write_atomic

    keep = {k: details[k] for k in ("native", "frames", "cause", "cause_detail", "trace_file") if k in details}
    keep.update(native_report=native_report, recorded=time.strftime("%Y-%m-%d %H:%M:%S"))
    os.makedirs(os.path.join(folder, CRASH_SITES), exist_ok=True)
    with open(os.path.join(folder, CRASH_SITES, f"{site}.json"), "w") as f:
        json.dump(keep, f)
    cached = crash_site_file(site)
    if cached:
        write_atomic(cached, json.dumps(keep).encode())


def _investigate(out: Outcome, call: tuple, native: bool) -> None:
    """Attach a crash/timeout's evidence to the outcome: Python stack, native backtrace, known cause, trace file.

    A crash at a Python site already diagnosed in this folder (same signal, same crashing frames) reuses that
    native backtrace and cause, and says so, instead of re-running under the debugger again.
    """
    from . import forensics as fx

    folder = os.environ.get(FORENSICS_DIR_ENV) or tempfile.gettempdir()
    os.makedirs(folder, exist_ok=True)
    report = [f"step: {out.step}", f"status: {out.status} {out.signal}".rstrip(), ""]
    stack = python_stack(out.log)
    out.details["python_stack"] = stack
    report += ["== Python stack (faulthandler) ==", stack or "(none in the log)", ""]
    frames = [ln.strip() for ln in stack.splitlines() if ln.strip().startswith("File ")][:fx.TOP_FRAMES]
    site = crash_site(out.signal, stack) if native else ""
    with contextlib.ExitStack() as held:
        if site:  # one debugger re-run per site: concurrent crashes at the same site wait for its diagnosis
            os.makedirs(os.path.join(folder, CRASH_SITES), exist_ok=True)
            lock = held.enter_context(open(os.path.join(folder, CRASH_SITES, f"{site}.lock"), "a"))
            fcntl.flock(lock, fcntl.LOCK_EX)
        _diagnose(out, call, native, folder, site, stack, report, frames)


def _diagnose(out: Outcome, call: tuple, native: bool, folder: str, site: str, stack: str, report: list[str],
              frames: list[str]) -> None:
    from . import forensics as fx

    seen = _known_site(folder, site) if site else None
    native_report: list[str] = []
    if seen:
        out.details.update({k: v for k, v in seen.items() if k in ("native", "frames", "cause", "cause_detail")})
        where = (f"a crash diagnosed by an earlier run on this machine ({seen.get('recorded', '?')}, kept in the "
                 f"compile cache)" if seen["earlier_run"] else os.path.basename(seen.get("trace_file", "")))
        out.details["native"] = (f"same crash site as {where} (identical signal and Python frames): its native "
                                 f"backtrace and cause apply, not re-run")
        out.details["diagnosis_cached"] = seen["earlier_run"]
        frames = seen.get("frames", "").split(" | ") if seen.get("frames") else frames
        report += seen.get("native_report", []) + [f"native: {out.details['native']}"]
        if seen.get("cause_detail"):
            report += [f"cause: {seen['cause']}", repr(seen["cause_detail"])]
    elif native:
        with tempfile.NamedTemporaryFile(prefix="yolo26kit-replay-", suffix=".pkl", delete=False) as f:
            try:
                pickle.dump(call, f)
            except Exception as exc:  # an argument that cannot be pickled: no re-run
                out.details["native"] = f"no native backtrace: the step could not be saved for a re-run ({exc})"
        if "native" not in out.details:
            with step_slot():  # a debugger re-run is as heavy as the step; waiting for a site's diagnosis is not
                trace = fx.native_backtrace(f.name, float(os.environ.get(FORENSICS_TIMEOUT_ENV, fx.DEFAULT_TIMEOUT)))
            if isinstance(trace, str):
                out.details["native"] = trace
            else:
                frames = trace.top() or frames
                out.details["native"] = f"{trace.debugger}: {trace.signal}, {len(trace.frames)} frames"
                cause = fx.diagnose(trace)
                if cause:
                    out.details["cause"] = cause.rule
                    out.details["cause_detail"] = cause.to_dict()
                native_report = [f"== native backtrace ({trace.debugger}) ==", trace.text, ""]
                report += native_report
        os.unlink(f.name)
        report += [f"native: {out.details['native']}"]
        if out.details.get("cause_detail"):
            report += [f"cause: {out.details['cause']}", repr(out.details["cause_detail"])]
    out.details["frames"] = " | ".join(frames)
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", out.step)[:80] or "step"
    fd, path = tempfile.mkstemp(prefix=f"{slug}.", suffix=f".{out.status}.txt", dir=folder)
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(report) + "\n\n== step log (tail) ==\n" + out.log)
    out.details["trace_file"] = path
    if site and not seen and out.details.get("frames") and not out.details["native"].startswith("no native"):
        _remember_site(folder, site, out.details, native_report)


def replay(path: str) -> None:
    """Run a pickled step in this process (what the debugger re-runs): (fn, args, kwargs, env, preload_global)."""
    with open(path, "rb") as f:
        fn, args, kwargs, env, preload_global = pickle.load(f)
    os.environ.update(env)
    load_global(preload_global)
    fn(*args, **kwargs)


if __name__ == "__main__":
    replay(sys.argv[1])
