"""Inductor's CPU vector ISA, picked once per compile cache instead of once per process.

`torch._inductor.cpu_vec_isa.pick_vec_isa` builds and dlopens a probe library per candidate ISA (AMX, AVX-512,
AVX2) in fresh Python processes, under a file lock every process shares; torch 2.11's probe process imports torch
and keeps no answer (2.14's does neither), so on a 32-core GPU runner that took 43-87 s per process, and a batch
starts eight such processes (the runner's step server and each notebook's). The first pick
of a cache is written to it, keyed by torch's version and the CPU's features; later processes take that ISA as it
is and probe nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .artifacts import cache_root, write_atomic

FILE = "vec_isa.json"


def _key() -> str:
    """torch's version and the CPU's ISA features: what decides the pick."""
    import torch
    from torch._inductor import cpu_vec_isa

    features = cpu_vec_isa.x86_isa_checker() if hasattr(cpu_vec_isa, "x86_isa_checker") else []
    return f"{torch.__version__} {os.uname().machine} {' '.join(sorted(features))}"


def _recorded(folder: Path) -> dict[str, Any]:
    try:
        return json.loads((folder / FILE).read_text())
    except (OSError, ValueError):
        return {}


def _probe_side_by_side(cpu_vec_isa: Any) -> None:
    """Probe every candidate ISA at once, one thread each (each probe is a compiler and a Python process): Inductor
    probes them one after another and keeps each answer, so its own pick then only reads them. Measured on a
    2-core EPYC: 4.0 s side by side, 7.3-8.1 s in turn."""
    from concurrent.futures import ThreadPoolExecutor

    if not hasattr(cpu_vec_isa, "x86_isa_checker"):
        return
    flags = cpu_vec_isa.x86_isa_checker()
    candidates = [isa for isa in cpu_vec_isa.supported_vec_isa_list if all(f in flags for f in str(isa).split())]
    if len(candidates) > 1:
        with ThreadPoolExecutor(len(candidates)) as pool:
            list(pool.map(bool, candidates))


def pick(folder: Path | None = None) -> tuple[str, str]:
    """The ISA Inductor will use in this process and where it came from (`cache` or `probed`); a probe's answer is
    recorded in `folder` (the run's compile cache when None) for the processes after it."""
    from torch._inductor import cpu_vec_isa

    folder = folder if folder is not None else cache_root()
    key = _key()
    seen = _recorded(folder).get(key) if folder else None
    known = [isa for isa in cpu_vec_isa.supported_vec_isa_list if str(isa) == seen]
    if known:
        cpu_vec_isa.valid_vec_isa_list = lambda: list(known)  # pick_vec_isa reads it from its module
        return str(cpu_vec_isa.pick_vec_isa()), "cache"
    _probe_side_by_side(cpu_vec_isa)
    picked = str(cpu_vec_isa.pick_vec_isa())
    if folder and picked != str(cpu_vec_isa.invalid_vec_isa):
        write_atomic(folder / FILE, json.dumps({**_recorded(folder), key: picked}).encode())
    return picked, "probed"
