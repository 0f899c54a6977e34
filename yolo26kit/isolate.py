"""Run one step (export, compile, lower, load, run) in a child process with a timeout; classify its end."""

from __future__ import annotations

import faulthandler
import multiprocessing as mp
import os
import pickle
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, Callable

STATUSES = ("ok", "error", "crash", "timeout", "oom", "skipped")
LOG_TAIL = 20_000  # characters of the child's stdout/stderr kept with the outcome
_OOM_TYPES = ("OutOfMemoryError", "MemoryError")


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
        """The outcome as a flat row for a status table."""
        return {"step": self.step, "status": self.status, "seconds": round(self.seconds, 2),
                "error": self.error, "signal": self.signal}


def skipped(step: str, reason: str) -> Outcome:
    """An outcome for a step that was not attempted, with the reason in `error`."""
    return Outcome(step, "skipped", error=reason)


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _child(conn: Connection, fn: Callable, args: tuple, kwargs: dict, log_path: str | None, env: dict) -> None:
    os.setsid()  # own process group: a timeout kills the step and every worker it started
    os.environ.update(env)
    if log_path:
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        os.dup2(log, 1)
        os.dup2(log, 2)
    faulthandler.enable(file=sys.stderr)  # a segfault leaves its Python stack in the log
    try:
        value = fn(*args, **kwargs)
        message: tuple = ("ok", value)
    except BaseException as exc:  # the step's failure is data for the parent
        kind = "oom" if type(exc).__name__ in _OOM_TYPES or "out of memory" in str(exc).lower() else "error"
        message = (kind, f"{type(exc).__name__}: {_first_line(str(exc))}".rstrip(": "), traceback.format_exc())
    try:
        # Plain pickle, not the multiprocessing pickler: tensors are copied, not shared through
        # memory that disappears with this process.
        payload = pickle.dumps(message)
    except Exception as exc:  # e.g. an unpicklable return value
        payload = pickle.dumps(("error", f"step result could not be sent back: {type(exc).__name__}: {exc}", ""))
    conn.send_bytes(payload)
    sys.stdout.flush()
    sys.stderr.flush()
    conn.close()


_CONTEXT: mp.context.BaseContext | None = None
_PRELOAD = ["torch"]


def preload(*modules: str) -> None:
    """Import these modules in the fork server too, so each step starts without re-importing them.

    Takes effect only before the first run_step of this process (the server starts then).
    """
    _PRELOAD.extend(m for m in modules if m not in _PRELOAD)


def _context() -> mp.context.BaseContext:
    """A forkserver context: children fork from a server that imported torch (and any preloads) but holds no CUDA state."""
    global _CONTEXT
    if _CONTEXT is None:
        # torch.cuda.is_available() in a preloaded module must not create a CUDA context in the server.
        os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
        _CONTEXT = mp.get_context("forkserver")
        _CONTEXT.set_forkserver_preload(list(_PRELOAD))
    return _CONTEXT


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read_tail(path: str | None) -> str:
    if not path:
        return ""
    try:
        with open(path, errors="replace") as f:
            return f.read()[-LOG_TAIL:]
    finally:
        os.unlink(path)


def run_step(fn: Callable, *args: Any, timeout: float, step: str = "", capture: bool = True,
             env: dict[str, str] | None = None, **kwargs: Any) -> Outcome:
    """Call fn(*args, **kwargs) in a child process and return its Outcome; never raises for the step's failure.

    `fn` must be importable (a module-level function). `capture` sends the child's stdout/stderr to
    `Outcome.log` instead of this process's terminal; `env` is applied in the child before the call.
    A child killed by SIGKILL that we did not send is classed `oom` (the kernel's OOM killer).
    """
    step = step or getattr(fn, "__name__", "step")
    log_path = None
    if capture:
        fd, log_path = tempfile.mkstemp(prefix="yolo26kit-step-", suffix=".log")
        os.close(fd)
    ctx = _context()
    parent_end, child_end = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child_end, fn, args, kwargs, log_path, dict(env or {})), daemon=False)
    t0 = time.perf_counter()
    proc.start()
    child_end.close()
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
        _kill_group(proc.pid)
    proc.join(10)
    if proc.is_alive():
        _kill_group(proc.pid)
        proc.join()
    _kill_group(proc.pid)  # leftovers such as compile workers
    parent_end.close()
    log = _read_tail(log_path)
    print(f"[step] {step}: {'timeout' if timed_out else 'done'} after {seconds:.1f} s", file=sys.stderr, flush=True)
    if timed_out:
        return Outcome(step, "timeout", seconds, error=f"no result after {timeout:g} s; killed", log=log)
    if message is not None:
        status, *rest = message
        if status == "ok":
            return Outcome(step, "ok", seconds, value=rest[0], log=log)
        return Outcome(step, status, seconds, error=rest[0], traceback=rest[1], log=log)
    code = proc.exitcode
    if code is not None and code < 0:
        name = signal.Signals(-code).name
        status = "oom" if -code == signal.SIGKILL else "crash"
        what = "killed by SIGKILL (likely out of memory)" if status == "oom" else f"crashed with {name}"
        return Outcome(step, status, seconds, error=f"child {what}", signal=name, log=log)
    return Outcome(step, "error", seconds, error=f"child exited with code {code} without a result", log=log)
