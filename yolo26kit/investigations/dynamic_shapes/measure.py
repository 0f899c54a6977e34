"""Dynamic shapes, in child steps: ExecuTorch XNNPACK (one lowering per spec, its .pte run and timed at each size)
and AOT Inductor (one package per spec, loaded and run at each size), started together; and what the judges read."""

from __future__ import annotations

import functools
import re
import shutil
import tempfile
import types
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pandas as pd
import torch

from ...bench import aoti_package as aoti_pkg, artifacts, isolate, timing
from ...backends import aoti as aoti_backend
from ...backends import executorch_runtime, executorch_xnnpack
from ...bench.dynamic_export import PREPS, RECOMMENDED, SPECS, STRIDE, first_line, example_size, export_spec
from ...bench.live import build_model, image
from .measure_export import SpecRun, Sweep, call_outcome, compare
from .model import explain, letterbox

NAME = "dynamic_shapes"
PATHS = ("export", "executorch", "aoti")


# ------------------------------------------------------------------------------------------ ExecuTorch


class LoweringFailed(RuntimeError):
    """ExecuTorch lowering failed; the message names the graph's suspect calls."""


def python_calls_in(ep: Any) -> list[str]:
    """Non-operator Python functions in an exported graph (the edge verifier only allows `alloc`)."""
    names = []
    for node in ep.graph.nodes:
        if node.op == "call_function" and isinstance(node.target, types.FunctionType):
            names.append(node.target.__name__)
    return sorted(set(names))


def lower_xnnpack(spec_name: str, path: str, *, model: str, batch: int, min_size: int, max_size: int,
                  max_batch: int, seed: int, static_size: int = 0) -> dict[str, Any]:
    """Child step: export (spec, or static at static_size), lower to XNNPACK (backends.executorch_xnnpack.lower_edge,
    the spec's edge check), write the .pte."""
    import time

    spec = SPECS[spec_name]
    t0 = time.perf_counter()
    if static_size:
        x = image(batch, static_size, static_size, seed=0)
        net = PREPS[spec.prep](build_model(model, seed), x, min(min_size, static_size))
        ep = torch.export.export(net, (x,), strict=False)
    else:
        r = export_spec(spec_name, model=model, batch=batch, min_size=min_size, max_size=max_size, max_batch=max_batch, seed=seed)
        if not r.ok:
            raise LoweringFailed(f"export failed: {r.error}")
        ep = r.program
    t1 = time.perf_counter()
    calls = python_calls_in(ep)

    def lower(ep: Any) -> tuple[bytes, dict[str, Any]]:
        try:
            t1 = time.perf_counter()
            edge = executorch_xnnpack.lower_edge(ep, check_ir_validity=spec.edge_check)
            t2 = time.perf_counter()
            program = edge.to_executorch()
        except Exception as exc:
            text = first_line(str(exc)) or "(no message)"
            raise LoweringFailed(f"{type(exc).__name__}: {text} [graph calls Python functions: "
                                 f"{', '.join(calls) or 'none'}]") from exc
        ops = Counter(str(getattr(n.target, "__name__", n.target)) for n in edge.exported_program().graph.nodes
                      if n.op == "call_function")
        delegates = ops.pop("executorch_call_delegate", 0)
        return program.buffer, {"lower_s": t2 - t1, "to_executorch_s": time.perf_counter() - t2,
                                "delegates": delegates,
                                "outside_xnnpack": ", ".join(sorted(k for k in ops if k not in ("getitem", "alloc", "view")))}

    buffer, facts = artifacts.lowered_program(ep, f"xnnpack-check{int(spec.edge_check)}", lower)
    Path(path).write_bytes(buffer)
    return {"export_s": t1 - t0, **facts, "bytes": len(buffer), "python_calls": calls}


def _load_pte(path: str) -> tuple[Any, Any, bytes]:
    """(method, program, bytes) of a .pte; the caller keeps all three alive: the runtime does not copy the
    buffer, and a dropped one segfaults in execute."""
    data = Path(path).read_bytes()
    program = executorch_runtime.open_program(data)
    return program.load_method("forward"), program, data


def run_pte(path: str, cases: list[tuple[int, int, int, bool]], *, model: str, seed: int, atol: float) -> list[dict[str, Any]]:
    """Child step: load a .pte with executorch.runtime, run each (batch, h, w, letterboxed) case, compare with eager."""
    method, _program, _data = _load_pte(path)
    reference = build_model(model, seed)
    rows = []
    for i, (b, h, w, boxed) in enumerate(cases):
        print(f"{_CASE_MARK}{i}", flush=True)  # the runtime logs its errors to stderr: split the log per case
        x = image(b, h, w, seed=1)
        if boxed:
            x = letterbox(x)
        row = {"batch": b, "height": h, "width": w, "letterboxed": boxed, "input": "x".join(map(str, x.shape[-2:]))}
        e_status, e_error, ref = call_outcome(reference, x)
        try:
            out = method.execute((x,))[0]
        except Exception as exc:
            rows.append({**row, "status": "error", "error": f"{type(exc).__name__}: {first_line(str(exc))}",
                         "eager": e_status, "eager_error": e_error})
            continue
        row.update(status="ok", error="", eager=e_status, eager_error=e_error)
        if ref is not None:
            row.update(compare(out, ref, atol))
        rows.append(row)
    return rows


def run_pte_dropped_buffer(path: str, size: int) -> str:
    """Child step: the one-liner `Runtime.get().load_program(Path(p).read_bytes()).load_method("forward")` (here
    through executorch_runtime.open_program, which does just that), then execute; the bytes are garbage once the
    line ends (crashes here when the runtime still points into them)."""
    import gc

    method = executorch_runtime.open_program(Path(path).read_bytes()).load_method("forward")
    gc.collect()
    filler = [bytes(1 << 20) for _ in range(32)]  # let the allocator hand the freed pages out again
    out = method.execute((image(1, size, size),))[0]
    return f"ran, output {tuple(out.shape)} after reallocating {len(filler)} MiB"


def time_ptes(programs: list[tuple[str, str, list[tuple[int, int, int]]]], min_run_time: float) -> list[dict[str, Any]]:
    """Child step: load every (label, path, sizes) .pte, then time them size by size, one after the other.

    All programs share one process and run back to back per size, so a dynamic and a static program at the
    same size see the same machine state.
    """
    loaded = {label: _load_pte(path) for label, path, _ in programs}
    sizes = sorted({case for _, _, cases in programs for case in cases}, key=lambda c: (c[1] * c[2], c))
    rows = []
    for b, h, w in sizes:
        x = image(b, h, w, seed=1)
        for label, _, cases in programs:
            if (b, h, w) not in cases:
                continue
            method = loaded[label][0]
            t = timing.measure(lambda: method.execute((x,)), label=f"{label} {h}x{w}", min_run_time=min_run_time)
            rows.append({"program": label, "batch": b, "height": h, "width": w, "letterboxed": False,
                         **{k: v for k, v in t.row().items() if k.endswith("_ms") or k == "runs"}})
    return rows


_CASE_MARK = "@@yolo26kit case "
_RUNTIME_ERROR = re.compile(r"\] (?:Internal Error: )?(.*(?:failed|Error|Attempted|must|expected).*)$", re.I)


def case_logs(log: str) -> dict[int, str]:
    """The runtime's error lines per case index, from a run_pte child's log."""
    found: dict[int, str] = {}
    for part in log.split(_CASE_MARK)[1:]:
        index, _, text = part.partition("\n")
        lines = [m.group(1).strip() for line in text.splitlines() if (m := _RUNTIME_ERROR.search(line))]
        if index.strip().isdigit() and lines:
            found[int(index)] = " | ".join(lines[:2])
    return found


@dataclass
class EtRun:
    """ExecuTorch XNNPACK: one lowering per program and its runs at each size."""

    lowering: pd.DataFrame
    runs: pd.DataFrame


def _et_cases(min_size: int, max_size: int, batch: int, sizes: list[int]) -> list[tuple[int, int, int, bool]]:
    ex = example_size(min_size, max_size)
    sizes = list(sizes) or sorted({min_size, ex, max_size} | {s for s in range(-(-min_size // STRIDE) * STRIDE, max_size + 1, 64)})
    cases = [(batch, s, s, False) for s in sizes]
    # sizes that are not multiples of 32, raw and letterboxed, and one above the bound
    for s in (ex + 8, ex - 6):
        if s + (-s) % STRIDE <= max_size:
            cases += [(batch, s, s, False), (batch, s, s, True)]
    return cases + [(batch, max_size + STRIDE, max_size + STRIDE, False)]


PRELOAD = ("yolo26kit.investigations.dynamic_shapes.measure", "ultralytics.nn.tasks", "executorch.exir",
           "executorch.runtime", "executorch.backends.xnnpack.partition.xnnpack_partitioner")


def _lower_all(plan: list[tuple[str, int]], work: Path, kw: dict[str, Any], timeout: float,
               workers: int) -> list[tuple[str, str, int, Path, isolate.Outcome]]:
    """Lower every (spec, static size) in child steps, `workers` at a time (lowering is single-threaded Python)."""
    from concurrent.futures import ThreadPoolExecutor

    def one(item: tuple[str, int]) -> tuple[str, str, int, Path, isolate.Outcome]:
        name, static = item
        label = f"{name} static {static}" if static else name
        path = work / f"{label.replace(' ', '_')}.pte"
        out = isolate.run_step(lower_xnnpack, name, str(path), **kw, static_size=static, timeout=timeout,
                               step=f"lower {label}")
        return label, name, static, path, out

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool, timing.sharing_cores(workers):
        return list(pool.map(one, plan))


def executorch_study(et_specs: list[str], *, model: str = "yolo26n", batch: int = 1, min_size: int = 160,
                     max_size: int = 320, max_batch: int = 4, seed: int = 0, sizes: list[int] | None = None,
                     static_sizes: list[int] | None = None, atol: float = 1e-3, min_run_time: float = 0.3,
                     step_timeout: float = 600, workers: int = 0, enabled: bool = True) -> EtRun:
    """Lower each spec once (and one static program per static size) in child steps, then run each .pte.

    Lowerings run `workers` at a time (0: one per CPU core); the runs and their timings run one after the other.
    """
    if not enabled:
        return EtRun(pd.DataFrame([isolate.skipped("executorch", "`executorch` not in paths").row()]), pd.DataFrame())
    import os

    isolate.preload(*PRELOAD)
    kw = dict(model=model, batch=batch, min_size=min_size, max_size=max_size, max_batch=max_batch, seed=seed)
    plan = [(name, 0) for name in et_specs] + [(RECOMMENDED, s) for s in (static_sizes or [])]
    workers = workers or min(len(plan), os.cpu_count() or 1)
    lowering, runs = [], []
    timed: list[tuple[str, str, list[tuple[int, int, int]]]] = []
    work = Path(tempfile.mkdtemp(prefix="yolo26kit-pte-"))
    try:
        for label, name, static, path, out in _lower_all(plan, work, kw, step_timeout, workers):
            row = {"program": label, "spec": name, "dynamic": not static, **out.row()}
            if out.ok:
                row.update({k: (round(v, 2) if isinstance(v, float) else v) for k, v in out.value.items()})
            row["cause"], row["fix"] = explain(out.error) if out.error else ("", "")
            lowering.append(row)
            if not out.ok:
                continue
            cases = [(batch, static, static, False)] if static else _et_cases(min_size, max_size, batch, sizes or [])
            ran = isolate.run_step(run_pte, str(path), cases, model=model, seed=seed, atol=atol,
                                   timeout=step_timeout, step=f"run {label}")
            if not ran.ok:
                runs.append({"program": label, "dynamic": not static, "status": ran.status, "error": ran.error})
                continue
            logs = case_logs(ran.log)
            for i, r in enumerate(ran.value):
                if r.get("error") and i in logs:
                    r["error"] = f"{r['error']} [runtime: {logs[i]}]"
                runs.append({"program": label, "dynamic": not static, **r})
            if name == RECOMMENDED and not static:
                probe = isolate.run_step(run_pte_dropped_buffer, str(path), min_size, timeout=step_timeout,
                                         step=f"run {label}, buffer dropped")
                runs.append({"program": f"{label}, .pte bytes not kept alive", "dynamic": True, "batch": 1,
                             "height": min_size, "width": min_size, "letterboxed": False, "status": probe.status,
                             "error": probe.error or probe.value or ""})
            # time the sizes that ran, at multiples of 32 and without letterboxing
            good = [(r["batch"], r["height"], r["width"]) for r in ran.value
                    if r["status"] == "ok" and not r["letterboxed"] and r["height"] % STRIDE == 0 and r["width"] % STRIDE == 0]
            if good and min_run_time > 0:
                timed.append((label, str(path), good))
        timings = pd.DataFrame()
        if timed:
            t = isolate.run_step(time_ptes, timed, min_run_time, timeout=step_timeout, step="time .pte programs")
            timings = pd.DataFrame(t.value) if t.ok else pd.DataFrame([{"program": "timing", **t.row()}])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    runs_df = pd.DataFrame(runs)
    if len(runs_df) and "error" in runs_df:
        runs_df["cause"] = [explain(e)[0] if isinstance(e, str) and e else "" for e in runs_df["error"]]
    if len(runs_df) and len(timings) and "median_ms" in timings:
        runs_df = runs_df.merge(timings, on=["program", "batch", "height", "width", "letterboxed"], how="left")
    return EtRun(pd.DataFrame(lowering), runs_df)


# ------------------------------------------------------------------------------------------------ AOTI


# What the AOTI study runs: plain AOT Inductor (backends.aoti: the kit's AOTI package), not ExecuTorch's CUDA
# back-end (which also compiles with AOT Inductor, with its own passes and options). Every row says so.
AOTI_BACKEND = "aoti"


def _no_tf32() -> None:
    """Full fp32 convs and matmuls on CUDA, so eager and the AOTI kernels differ by rounding only."""
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False


def aoti_compile(spec_name: str, package_path: str, *, model: str, batch: int, min_size: int, max_size: int,
                 max_batch: int, seed: int, device: str) -> dict[str, Any]:
    """Child step: export the spec on `device` and compile an AOTI package (kit's package cache; no loading here)."""
    import time

    _no_tf32()
    r = export_spec(spec_name, model=model, batch=batch, min_size=min_size, max_size=max_size, max_batch=max_batch,
                    seed=seed, device=device)
    if not r.ok:
        raise RuntimeError(f"export failed: {r.error}")
    t0 = time.perf_counter()
    facts = aoti_backend.prepare(r.program, (), Path(package_path).parent, Path(package_path).stem)
    return {"export_s": r.seconds, "compile_s": time.perf_counter() - t0, "bytes": facts["bytes"],
            "ranges": "; ".join(f"{k}: {v}" for k, v in r.ranges.items())}


def aoti_run(package_path: str, cases: list[tuple[int, int, int]], *, model: str, seed: int, device: str,
             atol: float, min_run_time: float) -> list[dict[str, Any]]:
    """Child step: load the package, then run each size, compare with eager on the device, time.

    Without timing (`min_run_time` 0: the probe of sizes that may fault) every run holds the device lock, so it
    never runs beside a timed phase."""
    _no_tf32()
    if min_run_time <= 0:
        with timing.device_lock():
            return _aoti_cases(aoti_backend.load_package(package_path), cases, model=model, seed=seed,
                               device=device, atol=atol, min_run_time=0.0)
    return _aoti_cases(aoti_backend.load_package(package_path), cases, model=model, seed=seed, device=device,
                       atol=atol, min_run_time=min_run_time)


def _aoti_cases(compiled: Any, cases: list[tuple[int, int, int]], *, model: str, seed: int, device: str, atol: float,
                min_run_time: float) -> list[dict[str, Any]]:
    """Run a loaded AOTI package at each size against eager (and time it when min_run_time > 0)."""
    reference = build_model(model, seed, device)
    rows = []
    for b, h, w in cases:
        x = image(b, h, w, seed=1, device=device)
        row = {"batch": b, "height": h, "width": w}
        e_status, e_error, ref = call_outcome(reference, x)
        status, error, out = call_outcome(lambda t: compiled(t), x)
        out = out[0] if isinstance(out, (list, tuple)) else out
        row.update(status=status, error=error, eager=e_status, eager_error=e_error)
        if out is not None:
            row["rows"] = int(out.shape[1])  # also where eager refuses the size: the package did not check it
        if out is not None and ref is not None:
            row.update(compare(out, ref, atol))
        if out is not None and min_run_time > 0:
            t = timing.measure(lambda: compiled(x), label=f"{h}x{w}", device=device, min_run_time=min_run_time)
            row.update(first_ms=t.first_ms, median_ms=t.median_ms, p10_ms=t.p10_ms, p90_ms=t.p90_ms)
        rows.append(row)
    return rows


def aoti_compile_all(aoti_specs: list[str], work: Path, *, model: str = "yolo26n", batch: int = 1,
                     min_size: int = 160, max_size: int = 320, max_batch: int = 4, seed: int = 0, device: str = "cpu",
                     step_timeout: float = 600) -> dict[str, isolate.Outcome]:
    """Compile every spec's AOTI package concurrently (each in its own child step)."""
    from concurrent.futures import ThreadPoolExecutor

    kw = dict(model=model, batch=batch, min_size=min_size, max_size=max_size, max_batch=max_batch, seed=seed)
    with ThreadPoolExecutor(max_workers=max(1, len(aoti_specs))) as pool, timing.sharing_cores(len(aoti_specs)):
        built = pool.map(lambda name: isolate.run_step(aoti_compile, name, str(work / f"{name}.pt2"), **kw, device=device,
                                                       timeout=step_timeout, step=f"aoti compile {name}",
                                                       phase="compile"), aoti_specs)
        return dict(zip(aoti_specs, built))


def aoti_study(aoti_specs: list[str], *, model: str = "yolo26n", batch: int = 1, min_size: int = 160,
               max_size: int = 320, max_batch: int = 4, seed: int = 0, device: str = "cpu", aoti_cpu: bool = False,
               sizes: list[int] | None = None, atol: float = 1e-3, min_run_time: float = 0.3,
               step_timeout: float = 600, enabled: bool = True) -> pd.DataFrame:
    """AOTInductor with each spec: compile (all specs at once), then load and run in separate child steps through
    the kit's aoti.run_step (as is; again with the workaround when loading crashed from a known cause)."""
    from concurrent.futures import ThreadPoolExecutor

    isolate.preload(*PRELOAD)
    if not enabled:
        return pd.DataFrame([{"spec": n, "backend": AOTI_BACKEND, **isolate.skipped("aoti", "`aoti` not in paths").row()} for n in aoti_specs])
    if device != "cuda" and not aoti_cpu:
        return pd.DataFrame([{"spec": n, "backend": AOTI_BACKEND, "device": device, **isolate.skipped("aoti compile", "needs_cuda").row()}
                             for n in aoti_specs])
    rows = []
    work = Path(tempfile.mkdtemp(prefix="yolo26kit-aoti-"))
    try:
        builds = aoti_compile_all(aoti_specs, work, model=model, batch=batch, min_size=min_size, max_size=max_size,
                                  max_batch=max_batch, seed=seed, device=device, step_timeout=step_timeout)
        for name, built in builds.items():
            rows.append({"spec": name, "device": device, **built.row(), **(built.value or {})})
            if not built.ok:
                continue
            ex = example_size(min_size, max_size)
            picks = list(sizes) if sizes else sorted({min_size, ex, max_size})
            # sizes in range, then (in their own child: a bad size may fault the CUDA context) a size that is
            # not a multiple of 32 and one above the range
            # (both at once: a crash's forensics overlap; the probe holds the device lock while it runs, so it
            # never runs beside the other step's timing)
            plan = [(picks, min_run_time, "aoti load+run"), ([ex + 8, max_size + STRIDE], 0.0, "aoti load+probe")]

            def load(item: tuple[list[int], float, str], name: str = name) -> list[isolate.Outcome]:
                sizes_, timed, step = item
                return aoti_pkg.run_step(aoti_run, str(work / f"{name}.pt2"), [(batch, s, s) for s in sizes_],
                                         model=model, seed=seed, device=device, atol=atol, min_run_time=timed,
                                         timeout=step_timeout, step=f"{step} {name}", phase="measure")

            with ThreadPoolExecutor(max_workers=len(plan)) as pool:
                loaded = list(pool.map(load, plan))
            for (sizes_, _, _), outcomes in zip(plan, loaded):
                for ran in outcomes:
                    how = {"aoti_load": ran.details.get("aoti_load", "as_is"), "cause": ran.details.get("cause", "")}
                    if ran.ok:
                        rows += [{"spec": name, "device": device, "step": "aoti run", **how, **r} for r in ran.value]
                    else:
                        rows.append({"spec": name, "device": device, **aoti_pkg.outcome_row(ran), "sizes": str(sizes_)})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return pd.DataFrame(rows).assign(backend=AOTI_BACKEND)


@dataclass
class Backends:
    """The ExecuTorch and AOTI studies, started together; on CUDA they run in the background while the notebook
    exports and sweeps in process (their steps are child processes), on CPU only when asked for (one at a time)."""

    jobs: dict[str, Callable[[], Any]]
    futures: dict[str, Any] = field(default_factory=dict)

    def _get(self, name: str) -> Any:
        return self.futures[name].result() if name in self.futures else self.jobs[name]()

    def executorch(self) -> "EtRun":
        """The ExecuTorch study's result (waits for it)."""
        return self._get("executorch")

    def aoti(self) -> pd.DataFrame:
        """The AOTI study's rows (waits for them)."""
        return self._get("aoti")


def start_backends(et_specs: list[str], aoti_specs: list[str], *, paths: list[str], device: str = "cpu",
                   background: bool | None = None, et: dict[str, Any] | None = None,
                   aoti: dict[str, Any] | None = None, **common: Any) -> Backends:
    """Start the ExecuTorch and AOTI studies (in background threads when `background`, default: on CUDA).

    `common` goes to both studies (model, batch, min_size, ...), `et` / `aoti` to one each.
    """
    from concurrent.futures import ThreadPoolExecutor

    isolate.preload(*PRELOAD)  # before any thread starts the step server
    jobs = {
        "executorch": functools.partial(executorch_study, et_specs, **common, **(et or {}), enabled="executorch" in paths),
        "aoti": functools.partial(aoti_study, aoti_specs, **common, device=device, **(aoti or {}), enabled="aoti" in paths),
    }
    backends = Backends(jobs)
    if background if background is not None else device == "cuda":
        pool = ThreadPoolExecutor(max_workers=len(jobs), thread_name_prefix="backends")
        backends.futures = {name: pool.submit(job) for name, job in jobs.items()}
        pool.shutdown(wait=False)
    return backends


# -------------------------------------------------------------------------------------------- verdicts


@dataclass
class Results:
    """Everything the judges read: the export attempts, the sweep, the residue scan, ExecuTorch and AOTI rows."""

    run: SpecRun
    sweep: Sweep
    scan: pd.DataFrame
    et: EtRun
    aoti: pd.DataFrame

    @property
    def summary(self) -> pd.DataFrame:
        return self.sweep.summary.set_index("spec") if len(self.sweep.summary) else pd.DataFrame()
