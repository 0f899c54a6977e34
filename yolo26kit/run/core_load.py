"""How busy the cores were while a batch ran (run.json `cores_busy`), sampled from /proc/stat.

A cold GPU batch waits minutes for its step slots (runner.step_slots: half the cores). Whether more slots would help
depends on whether the cores the steps may use (the plan's notebook cores) stood idle while steps waited: a batch
bound by its slots leaves them idle then, one bound by its cores does not. The accounts cannot tell the two apart;
these samples can. Seen on a 16-core H200 runner, cold: the 12 notebook cores' load (the machine's, then) was
12.5-13 from 60 to 120 s and 9-11 later, 10.9 on average while steps waited for a slot.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from . import timeline

SAMPLE_S = 2.0  # seconds between two reads: a step's compile lasts 4-60 s


def busy_seconds_of(cores: list[int] | None) -> Callable[[], float | None]:
    """A reader of the CPU seconds `cores` (None: the whole machine) have spent busy since boot."""
    from ..bench.timing import _busy_cpu_seconds  # lazy: imports torch

    return lambda: _busy_cpu_seconds(cores)


class CoreSampler:
    """A daemon thread that calls `read` (busy CPU seconds so far) every `interval` s while the block runs; `samples`
    are (t0, t1, busy cores on average between them), on time.time()'s clock."""

    def __init__(self, read: Callable[[], float | None], interval: float = SAMPLE_S) -> None:
        self.interval, self.read = interval, read
        self.samples: list[tuple[float, float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="core-sampler")

    def _loop(self) -> None:
        last, at = self.read(), time.time()
        while last is not None:
            ended = self._stop.wait(self.interval)
            busy, now = self.read(), time.time()
            if busy is None:
                return
            if now > at:
                self.samples.append((at, now, max(0.0, busy - last) / (now - at)))
            last, at = busy, now
            if ended:
                return

    def __enter__(self) -> "CoreSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def _overlap(a0: float, a1: float, spans: list[tuple[float, float]]) -> float:
    """Seconds of [a0, a1] inside the union of `spans`."""
    return timeline.covered([(max(a0, b0), min(a1, b1)) for b0, b1 in spans if b1 > a0 and b0 < a1])


def summary(samples: list[tuple[float, float, float]], slot_waits: list[tuple[float, float]], start: float,
            cores: int, which: str) -> dict[str, Any]:
    """run.json's `cores_busy`: how many cores were sampled and `which` ("notebook": those the plan left to the
    notebooks and their steps; "all"), the busy ones on average over the samples and over the seconds when at least
    one step waited for a slot (`slot_waits`, (t0, t1) on time.time()'s clock; None when none did), and the samples
    as [seconds after `start`, busy cores]. {} without samples."""
    if not samples:
        return {}
    weights = [(_overlap(t0, t1, slot_waits), busy) for t0, t1, busy in samples]
    waited = sum(w for w, _ in weights)
    span = sum(t1 - t0 for t0, t1, _ in samples)
    return {"cores": cores, "which": which,
            "mean": round(sum((t1 - t0) * b for t0, t1, b in samples) / span, 2) if span > 0 else 0.0,
            "while_steps_waited": round(sum(w * b for w, b in weights) / waited, 2) if waited > 0 else None,
            "steps_waited_s": round(waited, 1),
            "samples": [[round(t1 - start, 1), round(b, 1)] for _, t1, b in samples]}


def phrase(cores_busy: dict[str, Any]) -> str:
    """`notebook cores busy 11.2 of 12 on average, 11.8 while steps waited for a slot` ('' without a record)."""
    if not cores_busy:
        return ""
    which = "notebook cores" if cores_busy.get("which") == "notebook" else "cores"
    said = f"{which} busy {cores_busy['mean']:.1f} of {cores_busy['cores']} on average"
    if cores_busy.get("while_steps_waited") is not None:
        said += f", {cores_busy['while_steps_waited']:.1f} while steps waited for a slot"
    return said
