"""isolate.run_step: each failure class is classified and the parent keeps going."""

import ctypes
import os
import time

from yolo26kit import isolate


def segfault() -> None:
    ctypes.string_at(0)  # reads address 0: a real SIGSEGV


def sleep_long() -> None:
    time.sleep(60)


def raise_value_error() -> None:
    raise ValueError("bad input\nsecond line")


def out_of_memory() -> None:
    raise MemoryError("cannot allocate")


def returns(x: int) -> dict:
    print("from the child")
    return {"x": x, "pid": os.getpid()}


def test_ok_returns_value_and_log():
    out = isolate.run_step(returns, 7, timeout=60)
    assert out.status == "ok" and out.ok
    assert out.value["x"] == 7 and out.value["pid"] != os.getpid()
    assert "from the child" in out.log


def test_exception_is_error_with_first_line():
    out = isolate.run_step(raise_value_error, timeout=60)
    assert out.status == "error"
    assert out.error == "ValueError: bad input"
    assert "Traceback" in out.traceback


def test_segfault_is_crash_and_parent_survives():
    out = isolate.run_step(segfault, timeout=60)
    assert out.status == "crash"
    assert out.signal == "SIGSEGV"
    assert "Segmentation fault" in out.log  # faulthandler's dump of the child's stack
    assert isolate.run_step(returns, 1, timeout=60).ok  # the parent goes on


def test_timeout_kills_the_step():
    t0 = time.perf_counter()
    out = isolate.run_step(sleep_long, timeout=2)
    assert out.status == "timeout"
    assert time.perf_counter() - t0 < 30
    assert isolate.run_step(returns, 2, timeout=60).ok


def test_memory_error_is_oom():
    assert isolate.run_step(out_of_memory, timeout=60).status == "oom"


def test_skipped_and_row():
    out = isolate.skipped("et_cuda", "needs a CUDA device")
    assert out.status == "skipped" and not out.ok
    assert out.row()["error"] == "needs a CUDA device"
    assert set(isolate.STATUSES) == {"ok", "error", "crash", "timeout", "oom", "skipped"}
