"""The plan of a batch: which notebook runs on which GPU, in which order, with how many CPUs, and which cores
CPU-timed steps keep for themselves. Written to run.json (`plan`) before the first notebook starts.

Decisions:

- Longest first: notebooks start in the order of their seconds in the last run of the same device type (unknown
  ones before them, in the catalog's order), so the one that ends the batch starts first. The order is also each
  notebook's priority for the run's step slots (isolate.step_slot): the longest waits least.
- GPU by measuring: the batch is bound by each GPU's serialised measuring (one lock per GPU), so a notebook goes
  to the GPU with the fewest expected measuring seconds so far (ties: the fewest notebooks), longest first
  (LPT scheduling); unknown notebooks count as the median of the known. Expected measuring is the seconds the
  notebook held its GPU's lock in the last run (run.json `measuring`), not its CPU timings.
- Cores: on a machine with at least MIN_CORES_TO_RESERVE cores, an eighth of them (at least 2) is kept for
  CPU-timed steps, which take the CPU lock and move onto those cores; every notebook runs on the others. Few:
  they idle between CPU timings, and a timed step on a GPU runner uses 2 threads (runner.step_slots), while the
  compiles of a cold batch need every core they can get. Below that the machine is too small to split: CPU
  timings share it (and run.json says how busy it was).
- GPU host cores: on such a machine each GPU also gets GPU_HOST_CORES of the notebook cores for its timings, which
  move there while they hold that GPU's lock (timing.device_lock), when the notebooks keep at least half of all
  cores. A GPU timing is host-bound too (launches, syncs, `nonzero`'s copy back): beside a cold batch's compiles on
  shared cores, rounds of one mask timing on an H200 ran 6-12x slower than the rounds around them.
- Spare GPU: with 2+ GPUs, a notebook that declares a share of its measuring movable (catalog's spare_gpu_share)
  also gets the least loaded of the other GPUs, and its expected measuring splits between the two (as its last run
  split it, when it held another GPU's lock; else by the share): cuda_graphs alone on a GPU ended 2-GPU batches.
"""

from __future__ import annotations

import json
import os
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

MIN_CORES_TO_RESERVE = 8
GPU_HOST_CORES = 2  # per GPU: the timing's launching thread and CUDA's own threads


@dataclass
class Placement:
    """One notebook's place in the batch: its GPU (None on CPU), the CPUs it may use, what it was expected to take."""

    name: str
    gpu: str | None
    cpus: int
    expected_s: float | None = None
    expected_measure_s: float | None = None
    spare_gpu: str | None = None  # a second GPU for part of its measuring (timing.SPARE_GPU_ENV)
    expected_spare_s: float | None = None  # the measuring seconds the plan put on the spare GPU


@dataclass
class Plan:
    """Notebooks in start order with their placements, the GPUs given, and the cores kept for CPU timings."""

    gpus: list[str]
    placements: list[Placement]
    measuring_cores: list[int] = field(default_factory=list)
    notebook_cores: list[int] = field(default_factory=list)
    from_run: str | None = None
    gpu_cores: dict[str, list[int]] = field(default_factory=dict)  # per GPU, the cores its timings move to

    @property
    def order(self) -> list[str]:
        return [p.name for p in self.placements]

    def placement(self, name: str) -> Placement:
        return next(p for p in self.placements if p.name == name)

    def per_gpu(self, gpu: str | None) -> int:
        """How many notebooks the plan puts on `gpu`."""
        return sum(1 for p in self.placements if p.gpu == gpu)

    def to_json(self) -> dict[str, Any]:
        return {"gpus": self.gpus, "measuring_cores": self.measuring_cores, "gpu_cores": self.gpu_cores,
                "notebook_cores": self.notebook_cores, "from_run": self.from_run, "notebooks": [asdict(p) for p in self.placements]}


def parse_gpus(text: str | None) -> list[str]:
    """`--gpus 0,1` as ids; None or '' gives [] (all visible GPUs are then asked for)."""
    return [g.strip() for g in (text or "").split(",") if g.strip()]


def visible_gpus() -> list[str]:
    """GPU ids this process may use: CUDA_VISIBLE_DEVICES when set, else every device NVML/torch counts."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return parse_gpus(visible)
    try:
        import torch  # lazy: only a CUDA batch asks

        return [str(i) for i in range(torch.cuda.device_count())]
    except ImportError:
        return []


def split_cores(cores: list[int], device_type: str) -> tuple[list[int], list[int]]:
    """(measuring cores, notebook cores): an eighth (at least 2) of a CUDA machine's cores kept for CPU timings;
    on a small machine or a CPU batch nothing is kept (([], cores))."""
    if device_type != "cuda" or len(cores) < MIN_CORES_TO_RESERVE:
        return [], list(cores)
    keep = max(2, len(cores) // 8)
    return sorted(cores)[-keep:], sorted(cores)[:-keep]


def split_gpu_cores(notebook_cores: list[int], gpus: list[str], all_cores: int) -> tuple[dict[str, list[int]],
                                                                                       list[int]]:
    """(cores per GPU for its timings, the notebook cores left): GPU_HOST_CORES each from the top of the notebook
    cores, when at least half of `all_cores` stay with the notebooks; else ({}, notebook_cores)."""
    wanted = GPU_HOST_CORES * len(gpus)
    if not gpus or all_cores < MIN_CORES_TO_RESERVE or len(notebook_cores) - wanted < all_cores / 2:
        return {}, list(notebook_cores)
    ordered = sorted(notebook_cores)
    left, kept = ordered[:-wanted], ordered[-wanted:]
    return {g: kept[i * GPU_HOST_CORES:(i + 1) * GPU_HOST_CORES] for i, g in enumerate(gpus)}, left


def last_times(out: Path, device_type: str, names: list[str],
               exclude: Path | None = None) -> tuple[str | None, dict[str, dict[str, float]]]:
    """Seconds and measuring seconds per notebook (`measure`; `spare_measure`: those on another GPU's lock than its
    own, where it had some) from the newest run of this device type under `out` that finished every one of `names`
    on a warm compile cache, else the newest that finished them on any (and its id); else each notebook's newest
    finished run of several notebooks, and for one that never finished, the seconds its newest unfinished run had
    reached (a floor: a notebook stopped by a deadline is often the longest) ((None, {}) when none): a notebook run
    alone had no neighbours, and was often given other parameters. A cold run's seconds are no guide to a warm
    batch: the plan of one made from a cold run put all seven notebooks on one of two GPUs (its compiles had
    doubled two notebooks' lock holds)."""
    merged: dict[str, dict[str, float]] = {}
    floors: dict[str, dict[str, float]] = {}
    complete: tuple[str | None, dict[str, dict[str, float]]] | None = None
    for path in sorted(Path(out).glob("*/run.json"), reverse=True):
        meta = _read(path)
        if path.parent == exclude or meta.get("environment", {}).get("device_type") != device_type:
            continue
        notebooks = meta.get("notebooks", [])
        times = {n["name"]: _times_of(n, device_type) for n in notebooks if n.get("state") == "done"}
        if set(names) <= set(times):
            found = meta.get("run_id"), {n: times[n] for n in names}
            if meta.get("compile_cache") != "cold":
                return found
            complete = complete or found
            continue
        if complete:
            continue
        for name in set(names) & set(times) if len(notebooks) > 1 else ():
            merged.setdefault(name, times[name])
        for n in notebooks if len(notebooks) > 1 else ():
            if n.get("name") in names and n.get("state") != "done" and float(n.get("seconds") or 0) > 0:
                floors.setdefault(n["name"], _times_of(n, device_type))
    if complete:
        return complete
    merged.update({n: t for n, t in floors.items() if n not in merged})
    return (None, merged) if merged else (None, {})


def _times_of(notebook: dict[str, Any], device_type: str) -> dict[str, float]:
    """A run.json notebook entry's seconds, measuring seconds and (where it had some) its spare GPU's share of them."""
    spare = _spare_measure_s(notebook, device_type)
    return {"seconds": float(notebook.get("seconds") or 0), "measure": _measure_s(notebook, device_type),
            **({"spare_measure": spare} if spare > 0 else {})}


def _measure_s(notebook: dict[str, Any], device_type: str) -> float:
    """A notebook's seconds holding the locks the plan balances: its GPUs' on CUDA (not the CPU lock, which all
    GPUs share: deployment_paths held the CPU lock 32 s and its GPU's 9 s, and counted as 87 s on one GPU it put
    cuda_graphs and cdmaskformer_mask on the other), the CPU's on a CPU machine; its `measure` phase in runs
    that kept no per-lock record."""
    held = notebook.get("measuring") or {}
    if held:
        return float(sum(float(v.get("held_s") or 0) for k, v in held.items()
                         if (k.startswith("gpu") if device_type == "cuda" else k == "cpu")))
    return float((notebook.get("time_split") or {}).get("measure") or 0)


def _spare_measure_s(notebook: dict[str, Any], device_type: str) -> float:
    """Seconds a notebook held GPU locks other than its own GPU's (`gpu` of its entry): its measuring on a spare GPU;
    0 off CUDA or where its GPU is unknown."""
    own = notebook.get("gpu")
    if device_type != "cuda" or own is None:
        return 0.0
    return float(sum(float(v.get("held_s") or 0) for k, v in (notebook.get("measuring") or {}).items()
                     if k.startswith("gpu") and k != f"gpu{own}"))


def _read(path: Path) -> dict[str, Any]:
    try:
        meta = json.loads(path.read_text())
        return meta if isinstance(meta, dict) else {}
    except (OSError, ValueError):
        return {}


def make_plan(names: list[str], gpus: list[str], jobs: int, cores: list[int], device_type: str,
              times: dict[str, dict[str, float]] | None = None, from_run: str | None = None,
              spare_shares: dict[str, float] | None = None) -> Plan:
    """Longest first, each notebook on the GPU with the least expected measuring so far, and a spare GPU for one
    with a share in `spare_shares` (see the module's notes)."""
    times = times or {}
    spare_shares = spare_shares or {}
    known = [times[n]["measure"] for n in names if n in times]
    typical = statistics.median(known) if known else 0.0
    # unknown first: one with no record may be the longest, and the longest started last ends the batch (seen: an
    # unrecorded cuda_graphs started last ended a warm H100 batch, 268 s of its 277)
    order = sorted(names, key=lambda n: (n in times, -times.get(n, {}).get("seconds", 0.0), names.index(n)))
    measuring, notebook_cores = split_cores(cores, device_type)
    gpu_cores, notebook_cores = (split_gpu_cores(notebook_cores, list(gpus), len(cores)) if device_type == "cuda"
                                 else ({}, notebook_cores))
    cpus = max(1, len(notebook_cores) // max(1, min(jobs or len(names), len(names))))
    load = {g: 0.0 for g in gpus}
    count = {g: 0 for g in gpus}
    placements = []

    def least(among: list[str]) -> str:
        return min(among, key=lambda g: (load[g], count[g], gpus.index(g)))

    for name in order:
        gpu = least(gpus) if gpus else None
        spare = least([g for g in gpus if g != gpu]) if len(gpus) > 1 and spare_shares.get(name, 0) > 0 else None
        measure = times.get(name, {}).get("measure", typical)
        on_spare = _on_spare_s(times.get(name, {}), measure, spare_shares[name]) if spare is not None else 0.0
        if gpu is not None:
            load[gpu] += measure - on_spare
            count[gpu] += 1
        if spare is not None:
            load[spare] += on_spare
        placements.append(Placement(name, gpu, cpus, times.get(name, {}).get("seconds"),
                                    times.get(name, {}).get("measure"), spare,
                                    round(on_spare, 2) if spare is not None else None))
    return Plan(list(gpus), placements, measuring, notebook_cores, from_run, gpu_cores)


def _on_spare_s(recorded: dict[str, float], measure: float, share: float) -> float:
    """Expected measuring seconds on the spare GPU: as the last run split them, else `share` of `measure`."""
    spare = recorded.get("spare_measure", 0.0)
    return min(spare, measure) if spare > 0 else measure * min(max(share, 0.0), 1.0)
