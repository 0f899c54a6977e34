"""CUDA graphs on Toto: one child process per cache variant compiles Toto at its real size with reduce-overhead
(first forecast cold: caches off, fresh cache directory), then the default compile of a twin, and times both in
rounds; every step's failure is its row's measured outcome (status and error), never a missing row."""

from __future__ import annotations

import os
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from typing import Any, Callable

import torch

from ...bench import isolate, timing
from .measure_evidence import MESSAGE_CHARS, LogCapture, counter_snapshot, profile_call_at
from .measures import (SPEEDUP_BAND, SPREAD_MAX_ROUNDS, compile_settings, first_call, max_abs_diff, memory_added,
                       rounds_in_turn, spread)
from .toto import TOTO_VARIANTS, TotoRun, build_toto, model_bytes, parameter_count, toto_context, toto_forecast

# A case whose rounds wait for the notebook's other cases goes on after this long all the same (a gate never set).
ROUNDS_GATE_TIMEOUT_S = 300.0


def _error(exc: BaseException) -> str:
    first = next((line for line in str(exc).splitlines() if line.strip()), "")
    return f"{type(exc).__name__}: {first}"[:MESSAGE_CHARS]


def _profile_last_call(model: Any, step: Callable, series: torch.Tensor, steps: int, device: str) -> dict[str, int]:
    """Profile the last decode call of a whole forecast (a steady one-patch step)."""
    found: dict[str, int] = {}
    hook = profile_call_at(steps - 1, found, device)
    toto_forecast(model, step, series, steps, hook=hook)
    return found


def compiled_mode(variant: str, mode: str, capture: bool, run: TotoRun, device: str, reference: torch.Tensor,
                  cold: bool, warm_forecasts: int = 3, config: dict[str, Any] | None = None
                  ) -> tuple[dict[str, Any], Callable]:
    """Compile a fresh Toto of the variant in one mode and capture_scalar_outputs setting; first forecast (cold or
    not), memory added by compile + first forecasts, the log, counters and a profiled decode step."""
    from torch._dynamo.utils import counters

    row: dict[str, Any] = {"variant": variant, "mode": mode, "capture_scalar_outputs": capture}
    model = build_toto(variant, run, device, config)
    series = toto_context(run, device)
    counters.clear()  # no Dynamo reset: the other mode's compiled model stays compiled for the rounds
    step = torch.compile(model, mode=None if mode == "default" else mode)
    fc = lambda: toto_forecast(model, step, series, run.steps)  # noqa: E731
    with compile_settings(capture, None), LogCapture() as logs:
        def first_forecasts() -> torch.Tensor:
            row.update(first_call(fc, device, cold))
            return [fc() for _ in range(warm_forecasts)][-1]
        out, mem = memory_added(first_forecasts, device)
        row.update({f"mem_{k}": v for k, v in mem.items()})
        row["max_abs_vs_eager"] = max_abs_diff(out, reference)
        row.update(_profile_last_call(model, step, series, run.steps, device))
    row.update(counter_snapshot())
    row.update(logs.summary())
    return row, fc


def _mode_row(variant: str, mode: str, capture: bool, run: TotoRun, device: str, reference: torch.Tensor, cold: bool,
              config: dict[str, Any] | None) -> tuple[dict[str, Any], Callable | None]:
    """compiled_mode, its failure kept as the mode's row (status, error, where in Toto's code it failed)."""
    t0 = time.perf_counter()
    try:
        row, fc = compiled_mode(variant, mode, capture, run, device, reference, cold, config=config)
        return {**row, "status": "ok", "error": "", "seconds": round(time.perf_counter() - t0, 2)}, fc
    except Exception as exc:  # a variant that does not compile or run is a measured outcome
        tail = traceback.format_exc()
        return {"variant": variant, "mode": mode, "capture_scalar_outputs": capture, "error": _error(exc),
                "status": "oom" if "out of memory" in str(exc).lower() else "error", "where": _user_frame(tail),
                "log_tail": tail[-1500:], "seconds": round(time.perf_counter() - t0, 2)}, None


def _user_frame(tail: str) -> str:
    """The last 'File ..., line N, in f' of Toto's code (or the kit's) in a traceback: where the failure is."""
    frames = [line.strip() for line in tail.splitlines() if line.strip().startswith("File") and
              ("/toto/" in line or "cuda_graphs" in line)]
    return frames[-1].split("site-packages/")[-1].replace('"', "") if frames else ""


def wait_for(gate: str, timeout: float) -> float:
    """Wait until the file `gate` exists (at most `timeout` seconds); the seconds waited."""
    t0 = time.perf_counter()
    while gate and not os.path.exists(gate) and time.perf_counter() - t0 < timeout:
        time.sleep(0.2)
    return round(time.perf_counter() - t0, 2)


def toto_case(variant: str, run: dict[str, Any], device: str, capture: bool = True, cold: bool = True,
              rounds: bool = True, calls: int = 20, min_rounds: int = 5, max_rounds: int = 15,
              config: dict[str, Any] | None = None, rounds_after: str = "") -> dict[str, Any]:
    """Child body: eager reference, reduce-overhead (first forecast cold), the default compile of a twin, rounds in
    turn when both ran — once the file `rounds_after` exists, when given (the notebook's other cases are done, so
    the rounds are timed beside no compile of this notebook). Each compiled mode's failure is its own row's
    outcome; the other still runs."""
    r = TotoRun(**run)
    t0 = time.perf_counter()
    torch._dynamo.reset()
    model = build_toto(variant, r, device, config)
    series = toto_context(r, device)
    reference, eager_mem = memory_added(lambda: toto_forecast(model, model, series, r.steps), device)
    row: dict[str, Any] = {"variant": variant, "model": "Toto", "capture_scalar_outputs": capture, "device": device,
                           "run": asdict(r), "parameters": parameter_count(model), "model_bytes": model_bytes(model),
                           "eager_mem": eager_mem,
                           "eager_forecast_ms": spread(_eager_calls(model, series, r, device))}
    del model
    row["reduce_overhead"], graphs_fc = _mode_row(variant, "reduce-overhead", capture, r, device, reference, cold,
                                                  config)
    row["default"], default_fc = _mode_row(variant, "default", capture, r, device, reference, False, config)
    if rounds and graphs_fc and default_fc:
        row["rounds_waited_s"] = wait_for(rounds_after, ROUNDS_GATE_TIMEOUT_S)
        try:
            with compile_settings(capture, None):
                row["rounds"] = rounds_in_turn({"graphs": graphs_fc, "default": default_fc}, device, *SPEEDUP_BAND,
                                               calls=calls, min_rounds=min_rounds, max_rounds=max_rounds,
                                               decide_spread=True, spread_max_rounds=SPREAD_MAX_ROUNDS)
        except Exception as exc:
            row["rounds_error"] = _error(exc)
    row.update({"status": "ok", "error": "", "seconds": round(time.perf_counter() - t0, 2)})
    return row


def _eager_calls(model: Any, series: torch.Tensor, run: TotoRun, device: str, calls: int = 5) -> list[float]:
    """Individually timed eager forecasts (ms): the reference the compiled ones are seen beside."""
    from .measures import call_times_ms

    return call_times_ms(lambda: toto_forecast(model, model, series, run.steps), device, calls)


def run_toto(variants: list[str], run: TotoRun, device: str, captures: list[bool] | None = None,
             timeout: float = 600.0, **kwargs: Any) -> list[dict[str, Any]]:
    """Each (variant, capture_scalar_outputs) Toto case in a child process of its own (a crash or hang is its row),
    side by side: their compiles overlap, their rounds take turns at the device lock. Where the plan lent the notebook
    a spare GPU (timing.spare_gpu_env) the children run there, their rounds not waiting for `rounds_after`; each row
    says so (`on_spare_gpu`)."""
    for variant in variants:
        if variant not in TOTO_VARIANTS:
            raise ValueError(f"unknown Toto cache variant {variant!r} (known: {', '.join(TOTO_VARIANTS)})")
    cases = [(variant, capture) for variant in variants for capture in captures or [True]]
    spare = timing.spare_gpu_env()
    if spare:  # timed under the spare GPU's lock, on its cores: the notebook's compiles here are no load on them
        kwargs = {**kwargs, "rounds_after": ""}

    def one(case: tuple[str, bool]) -> dict[str, Any]:
        variant, capture = case
        o = isolate.run_step(toto_case, variant, asdict(run), device, capture, **kwargs, timeout=timeout,
                             step=f"Toto {variant} capture={'on' if capture else 'off'}", phase="compile", env=spare)
        row = o.value if o.ok else {"variant": variant, "model": "Toto", "capture_scalar_outputs": capture,
                                    "device": device, "status": o.status, "error": o.error,
                                    "seconds": round(o.seconds, 2), "log_tail": o.log[-2000:]}
        return {**row, "on_spare_gpu": bool(spare)}

    with ThreadPoolExecutor(max_workers=max(1, len(cases))) as pool:
        return list(pool.map(one, cases))
