"""A process's step server: the forkserver every isolated step (isolate.run_step) forks from. It imports torch and
the declared preloads once, holds no CUDA state, and can start ahead of the first step (start_soon) so that its
imports overlap the caller's; the steps of a server started ahead still get the environment the caller had at its
first step."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import sys
import threading
from typing import Iterator

# Modules a notebook kernel's step server imports when the kernel starts (comma-separated; run/kernel_startup.py).
PRELOAD_ENV = "YOLO26KIT_STEP_PRELOAD"

_CONTEXT: mp.context.BaseContext | None = None
_PRELOAD = ["torch", "yolo26kit.bench.warmup"]
_STARTED_ENV: dict[str, str] = {}  # os.environ when start_soon started the server ({}: a step started it)
_ENV_AT_FIRST_STEP: list[tuple[dict[str, str], list[str]]] = []  # env_since_start's answer, once taken
_ENV_LOCK = threading.Lock()
_MAIN_LOCK = threading.Lock()


def preload(*modules: str) -> None:
    """Import these modules in the server too, so each step starts without re-importing them.

    Takes effect only before the server starts (start_soon, or else the first step).
    """
    _PRELOAD.extend(m for m in modules if m not in _PRELOAD)


def start_soon() -> threading.Thread:
    """Start this process's server on a thread of its own, so that its imports (torch and every preload) overlap
    what the caller does meanwhile instead of delaying the first step. Every preload must be declared before."""
    def start() -> None:
        from multiprocessing import forkserver

        context()
        with _ENV_LOCK:
            if getattr(forkserver._forkserver, "_forkserver_pid", None) is None and not _ENV_AT_FIRST_STEP:
                _STARTED_ENV.update(os.environ)  # what the server, and so every step, inherits
        with contextlib.suppress(Exception), main_file_hidden():  # else the first step starts it, and says why not
            forkserver.ensure_running()

    thread = threading.Thread(target=start, name="step-server-start", daemon=True)
    thread.start()
    return thread


def context() -> mp.context.BaseContext:
    """A forkserver context: children fork from a server that imported torch (and any preloads) but holds no CUDA state."""
    global _CONTEXT
    if _CONTEXT is None:
        # torch.cuda.is_available() in a preloaded module must not create a CUDA context in the server.
        os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
        _CONTEXT = mp.get_context("forkserver")
        _CONTEXT.set_forkserver_preload(list(_PRELOAD))
    return _CONTEXT


def env_since_start() -> tuple[dict[str, str], list[str]]:
    """This process's environment changes between the server's start and its first step (set, unset): a step gets
    them, as from a server the first step started. Later changes stay this process's own, as they always were (a
    thread's temporary setting must not leak into a step another thread starts)."""
    with _ENV_LOCK:
        if not _ENV_AT_FIRST_STEP:  # a server this first step starts has no snapshot: nothing to pass on
            _ENV_AT_FIRST_STEP.append(({k: v for k, v in os.environ.items() if _STARTED_ENV.get(k) != v},
                                       [k for k in _STARTED_ENV if k not in os.environ]) if _STARTED_ENV else ({}, []))
    return _ENV_AT_FIRST_STEP[0]


def stop() -> None:
    """End this process's server at once (SIGKILL). Left to itself it exits only after this process does, and
    then spends seconds in interpreter shutdown (torch and papermill loaded): a finished `run` leaves no process."""
    from multiprocessing import forkserver

    server = forkserver._forkserver
    pid = getattr(server, "_forkserver_pid", None)
    with _ENV_LOCK:  # the next server starts from this process's environment as it is then
        _STARTED_ENV.clear()
        _ENV_AT_FIRST_STEP.clear()
    if pid is None:
        return
    try:
        os.kill(pid, signal.SIGKILL)
        server._stop_unlocked()  # reaps it and forgets it: a later step starts a new server
    except (OSError, AttributeError):
        pass


def main_file() -> str | None:
    """__main__'s file when it is one on disk; None for a notebook, `python -` (`<stdin>`) or `python -c`."""
    path = getattr(sys.modules.get("__main__"), "__file__", None)
    return path if path and os.path.isfile(path) else None


@contextlib.contextmanager
def main_file_hidden() -> Iterator[None]:
    """multiprocessing re-runs __main__'s file in every child: a `__file__` that is no file (`<stdin>`) would make
    each child fail before the step, so it is hidden while a child starts."""
    main = sys.modules.get("__main__")
    if main is None or main_file():
        yield
        return
    with _MAIN_LOCK:  # threads starting steps at once: one hides and restores while the others wait
        path = main.__dict__.pop("__file__", None)
        try:
            yield
        finally:
            if path is not None:
                main.__file__ = path
