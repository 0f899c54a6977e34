"""Imported by isolate's fork server: work that every step would otherwise repeat, done once before forking.

Inductor picks the CPU's vector ISA by compiling and loading a probe library per ISA in fresh Python
processes; on some machines that costs tens of seconds in every child that compiles or loads a package.
Picking it here lets every forked step inherit the answer, and the answer is kept in the compile cache for the
other servers of the run (vec_isa); likewise the autotune-cache write that merges.
Nothing here may raise or touch CUDA.
"""

import time

try:  # once per compile cache: a later server of the run takes the first one's answer (see vec_isa)
    from yolo26kit.bench import vec_isa

    _t0 = time.perf_counter()
    VEC_ISA, VEC_ISA_FROM = vec_isa.pick()
    SECONDS = time.perf_counter() - _t0
except Exception as exc:  # the server must start whatever happens here
    VEC_ISA, VEC_ISA_FROM, SECONDS = f"not picked: {type(exc).__name__}: {exc}", "", 0.0

try:  # steps that tune at the same time keep each other's autotune timings (see autotune_cache)
    from yolo26kit.bench import autotune_cache

    AUTOTUNE_CACHE_MERGES = autotune_cache.install()
except Exception:  # noqa: BLE001 - the server must start whatever happens here
    AUTOTUNE_CACHE_MERGES = False
