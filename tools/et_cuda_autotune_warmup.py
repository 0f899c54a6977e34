"""Fill the compile cache with Inductor's autotune timings for ExecuTorch CUDA lowerings of YOLO26 at the back-end's
default options, in parallel, before a run that lowers the whole model (index_dtype with whole_model_cuda=true).

Why: with the back-end's defaults (max-autotune, Triton-only GEMM/conv choices) Inductor precompiles every template
choice, then benchmarks them one input shape after another, mostly on one CPU core while the GPU idles: about a
minute per shape on an H100 runner, and YOLO26n has dozens of shapes. Each distinct convolution / attention
module lowered alone, in its own process, tunes its shapes in parallel; the timings land in Inductor's autotune
cache under $YOLO26KIT_CACHE (the folders the kit's runner gives every notebook), keyed by operator and input
layout, where the run's own lowering finds those it shares. The options are the back-end's (plus the run's
ATEN,TRITON convolution probe for k×k convolutions), so the choices are the ones the run would benchmark itself;
only where and when they are benchmarked differs. Each lowering stops where AOT Inductor would start compiling its
C++ wrapper (everything is benchmarked by then; `--full-lowering` finishes them). Nothing here decides a verdict.

Run it alone, before the kit's run: started beside one on the same 16 cores, both starved (41 of the 91 lowerings
in 480 s; the run's eager steps took 85-98 s instead of about 2). The workers write one autotune cache at once,
so each installs the kit's merging write (yolo26kit.autotune_cache); without it most timings were lost.

    YOLO26KIT_CACHE=DIR python tools/et_cuda_autotune_warmup.py --imgsz 640 --workers 14 --timeout 400

Needs a CUDA GPU and executorch. Ends by the timeout whatever is left (what finished stays in the cache).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

from yolo26kit.backends.executorch_cuda_releases import ATEN_CONV  # index_dtype's backbone_aten probe: ATen convs compete

_MODEL = None  # one model per worker process, built on its first job


def _model(model: str, imgsz: int, device: str = "cuda"):
    """The index_dtype whole-model module (gather variant, fused, eval), as the run builds it."""
    from yolo26kit.investigations.index_dtype.model import Spec, build_module

    return build_module(Spec("gather", scope="full", model=model, imgsz=imgsz, device=device))


def _wanted(name: str, module, parents: dict) -> bool:
    """Convolution wrappers, attention blocks, and bare convolutions that no wrapper holds (the head's last ones)."""
    import torch
    from ultralytics.nn.modules.block import Attention
    from ultralytics.nn.modules.conv import Conv

    if isinstance(module, (Conv, Attention)):  # DWConv is a Conv
        return True
    return isinstance(module, torch.nn.Conv2d) and not isinstance(parents.get(name), (Conv, Attention))


def distinct_jobs(model: str, imgsz: int, device: str = "cuda") -> list[tuple[str, tuple[int, ...], str]]:
    """(module name, input shape, conv backends) for each distinct module the forward pass runs at `imgsz`."""
    import torch

    from yolo26kit.bench import yolo

    net = _model(model, imgsz, device)
    named = dict(net.named_modules())
    parents = {name: named.get(name.rpartition(".")[0]) for name in named}
    seen: dict[tuple, tuple[str, tuple[int, ...]]] = {}
    hooks = []
    for name, module in named.items():
        if not name or not _wanted(name, module, parents):
            continue

        def hook(mod, args, _out, name=name):
            shape = tuple(args[0].shape)
            key = (type(mod).__name__, repr(mod), shape)
            seen.setdefault(key, (name, shape))

        hooks.append(module.register_forward_hook(hook))
    with torch.no_grad():
        net(yolo.example_input(imgsz=imgsz, device=device))
    for h in hooks:
        h.remove()
    jobs = []
    for name, shape in seen.values():
        module = named[name]
        kernel = getattr(getattr(module, "conv", module), "kernel_size", (1, 1))
        jobs.append((name, shape, ""))
        if max(kernel) > 1:
            jobs.append((name, shape, ATEN_CONV))
    return jobs


class TunedOnly(Exception):
    """Raised where AOT Inductor starts its C++ compile: every choice is benchmarked and cached by then."""


def _stop_before_cpp_compile(*_args, **_kwargs):
    raise TunedOnly()


def _prepare_worker(tune_only: bool) -> None:
    """Workers tune at once into one autotune cache: without the merging write each drops the others' timings.
    With `tune_only` a lowering stops before AOT Inductor compiles its C++ wrapper, which the run redoes anyway."""
    from yolo26kit.bench import autotune_cache

    autotune_cache.install()
    if tune_only:
        from torch._inductor.codecache import AotCodeCompiler

        AotCodeCompiler.compile = staticmethod(_stop_before_cpp_compile)


def _tuned_only(exc: BaseException | None) -> bool:
    """The failure is the tune-only stop, however the lowering wrapped it."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, TunedOnly) or type(exc).__name__ == "TunedOnly" or "TunedOnly" in str(exc):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def lower_one(model: str, imgsz: int, name: str, shape: tuple[int, ...], conv_backends: str) -> tuple[str, float]:
    """Export one module alone and lower it with the back-end's defaults (or the ATEN,TRITON conv probe), uncached."""
    global _MODEL
    import torch

    from yolo26kit.backends import executorch_cuda

    t0 = time.perf_counter()
    overrides = executorch_cuda.kit_overrides(True, conv_backends)
    try:
        if _MODEL is None:
            _MODEL = _model(model, imgsz)
        module = dict(_MODEL.named_modules())[name]
        x = torch.rand(shape, device="cuda")
        with torch.no_grad():
            program = torch.export.export(module, (x,))
        with tempfile.TemporaryDirectory() as folder:
            executorch_cuda.lower(program, folder, "module", overrides=overrides, cache=False)
        status = "lowered"
    except Exception as exc:  # the timings were written before whatever failed; say what it was
        if _tuned_only(exc):
            return "tuned (stopped before the C++ compile)", time.perf_counter() - t0
        status = f"failed: {type(exc).__name__}: {' '.join(str(exc).split())[:400]}"  # the missing kernel's name too
    return status, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="yolo26n")
    parser.add_argument("--imgsz", type=int, default=640)
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    parser.add_argument("--compile-threads", type=int, default=2, help="Inductor compile threads per worker")
    parser.add_argument("--timeout", type=float, default=400.0, help="seconds; workers left running are killed")
    parser.add_argument("--full-lowering", action="store_true",
                        help="finish each lowering (C++ compile, .pte) instead of stopping once it is tuned")
    parser.add_argument("--list", action="store_true", help="print the lowerings (found on the CPU) and stop")
    args = parser.parse_args(argv)
    if args.list:
        for name, shape, backends in distinct_jobs(args.model, args.imgsz, "cpu"):
            print(name, list(shape), backends or "defaults")
        return 0

    cache = os.environ.get("YOLO26KIT_CACHE")
    if not cache:
        parser.error("set YOLO26KIT_CACHE to the cache the run will use")
    os.environ.update(TORCHINDUCTOR_CACHE_DIR=str(Path(cache) / "inductor"),
                      TRITON_CACHE_DIR=str(Path(cache) / "triton"),
                      TORCHINDUCTOR_COMPILE_THREADS=str(args.compile_threads))
    t0 = time.perf_counter()
    jobs = distinct_jobs(args.model, args.imgsz)
    print(f"{len(jobs)} lowerings ({sum(1 for j in jobs if not j[2])} modules) at {args.imgsz} px, "
          f"{args.workers} workers", flush=True)
    pool = ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_prepare_worker, initargs=(not args.full_lowering,))
    pending = {pool.submit(lower_one, args.model, args.imgsz, *job): job for job in jobs}
    done_count = 0
    while pending:
        left = args.timeout - (time.perf_counter() - t0)
        if left <= 0:
            break
        done, _ = wait(pending, timeout=left, return_when=FIRST_COMPLETED)
        for future in done:
            name, shape, backends = pending.pop(future)
            try:
                status, seconds = future.result()
            except Exception as exc:  # a worker that died (a crash in a compiler) breaks the pool: say so, go on
                status, seconds = f"worker died: {type(exc).__name__}", 0.0
            done_count += 1
            print(f"[{time.perf_counter() - t0:6.0f} s] {name} {list(shape)} {backends or 'defaults'}: "
                  f"{status} ({seconds:.0f} s)", flush=True)
    for proc in list(getattr(pool, "_processes", {}).values()):  # the timeout: stop what is still tuning
        proc.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    print(f"{done_count} of {len(jobs)} lowerings finished in {time.perf_counter() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
