"""The kit's executors: where a batch's notebooks, a matrix's stacks and cells and a bisect's probes run.

Two executors, each with `execute` (one notebook of a batch, below) and `map` (any picklable function over a list
of calls, results in order, an exception in place of the result of a call that raised: what matrix/ and bisect
run their stack-specific tasks through):

- `local`: each notebook on a thread of this process, which runs it in a child (notebook.execute); `jobs` threads.
- `ray`: each notebook a Ray task that calls the same notebook.execute on a local Ray started here (or the cluster at
  RAY_ADDRESS); Ray's resources decide how many run at once: `num_cpus` from the plan, and on CUDA a share of one
  GPU (1 / the notebooks the plan puts on a GPU: notebooks of one GPU compile side by side as the local executor
  runs them, and the GPU's measuring lock keeps their timings apart; a whole GPU per notebook would serialise
  their compiles too). On a local Ray each GPU is also a resource of its own (`yolo26kit_gpu_<id>`) and a task asks
  for its planned GPU's, so the plan holds (Ray alone packs fractions onto the first GPU); on a cluster Ray picks
  the GPU and the task takes the one Ray gave it. Either way the task pins its notebook with CUDA_VISIBLE_DEVICES,
  takes that GPU's measuring lock, and says which GPU it used; where the plan holds (not on a cluster), a notebook
  the plan lent a spare GPU is told of it (timing.SPARE_GPU_ENV). On a cluster whose nodes do not share the run
  folder, a task runs in a folder of its own and sends it back packed; the driver unpacks it into the run folder.

Both give back the same NotebookRun, so run.json, resume and the pages do not depend on the executor. `map` runs
calls on `jobs` threads (local) or as Ray tasks with the resources each call asks for and `retries` re-runs of a
task whose worker died (ray).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import tarfile
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator

from ..errors import KitError
from . import notebook

RAY_EXCLUDES = [".git", ".venv", "reports", "wheelhouse", "**/__pycache__", ".pytest_cache", ".hypothesis"]
# Ray's raylet gives its agents ~30 s to start; on a 2-core machine under load they sometimes take longer and the
# start fails ("The current node timed out during startup"): a fresh start usually succeeds.
RAY_START_ATTEMPTS = 3
POLL_S = 0.5  # how often a waiting driver thread looks at the stop flag


class ExecutorError(KitError):
    """An executor that cannot start (Ray missing, or a local Ray that would not start)."""


@dataclass
class NotebookTask:
    """Everything one notebook's execution needs, picklable: what notebook.execute takes, plus its place in the plan."""

    name: str
    notebook: str  # the source .ipynb
    parameters: dict[str, Any]
    run_dir: str
    run_id: str
    tag: str
    timeout: float
    log_output: bool = False
    progress: bool = False
    env: dict[str, str] = field(default_factory=dict)
    gpu: str | None = None  # planned; a Ray task may get another
    cpus: int = 1
    gpu_share: float = 1.0
    planned_gpu_holds: bool = True  # False on a Ray cluster: the GPU Ray gives the task wins
    lock_dir: str = ""  # where the per-GPU measuring locks live
    gpu_cores: dict[str, str] = field(default_factory=dict)  # per GPU, the cores its timings move to ("26,27")
    spare_gpu: str | None = None  # a second GPU the plan lends it for part of its measuring (plan.Placement)
    preload: tuple[str, ...] = ()  # catalog.Investigation.preload


@dataclass(frozen=True)
class Source:
    """The part of an Investigation that notebook.execute reads: its name, notebook and step preloads."""

    name: str
    notebook: Path
    preload: tuple[str, ...] = ()


def gpu_env(task: NotebookTask, gpu: str | None) -> dict[str, str]:
    """The task's child environment pinned to `gpu`: CUDA_VISIBLE_DEVICES, that GPU's measuring lock and the cores
    kept for its timings (where the plan kept some); and its spare GPU's (timing.SPARE_GPU_ENV) where the plan lent
    one and holds (a Ray cluster's choice of GPU would not know of it)."""
    from ..bench import timing

    if gpu is None:
        return dict(task.env)
    cores = {timing.DEVICE_CORES_ENV: task.gpu_cores[gpu]} if task.gpu_cores.get(gpu) else {}
    spare = task.spare_gpu if task.planned_gpu_holds and task.spare_gpu not in (None, gpu) else None
    lent = {timing.SPARE_GPU_ENV: json.dumps({"gpu": spare, "lock": _lock_path(task, spare),
                                              "cores": task.gpu_cores.get(spare, "")})} if spare else {}
    return {**task.env, "CUDA_VISIBLE_DEVICES": gpu, timing.DEVICE_LOCK_ENV: _lock_path(task, gpu), **cores, **lent}


def _lock_path(task: NotebookTask, gpu: str) -> str:
    """The measuring lock file of `gpu`."""
    return str(Path(task.lock_dir) / f"gpu{gpu}.lock")


def run_task(task: NotebookTask, stopping: Callable[[], bool] = lambda: False) -> Any:
    """Execute one notebook here (notebook.execute), pinned to its planned GPU; its NotebookRun with `gpu` set."""
    result = notebook.execute(Source(task.name, Path(task.notebook), tuple(task.preload)), task.parameters,
                              Path(task.run_dir), task.run_id, task.timeout, task.log_output,
                              env=gpu_env(task, task.gpu), progress=task.progress, stopping=stopping, tag=task.tag)
    result.gpu = task.gpu
    return result


class LocalExecutor:
    """Notebooks on `jobs` threads of this process, each running its notebook in a child."""

    name = "local"

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs

    def threads(self, tasks: int) -> int:
        return min(self.jobs, tasks)

    def execute(self, task: NotebookTask, stopping: Callable[[], bool]) -> Any:
        return run_task(task, stopping)

    def map(self, fn: Callable[..., Any], calls: list[tuple], options: Any = None, retries: int = 0) -> Iterator[Any]:
        """fn(*call) for each call on `jobs` threads, results in call order (an exception in place of a call's result);
        `options` and `retries` are Ray's and mean nothing here."""
        if self.jobs <= 1:
            yield from (_called(fn, call) for call in calls)
            return
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            yield from pool.map(lambda call: _called(fn, call), calls)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "jobs": self.jobs}

    def close(self) -> None:
        pass


def _called(fn: Callable[..., Any], call: tuple) -> Any:
    """fn(*call), or the exception it raised (a Ctrl-C still stops the caller)."""
    try:
        return fn(*call)
    except Exception as exc:  # noqa: BLE001 - the caller records the call as failed, with this exception
        return exc


def start_ray(log: Callable[[str], None], address: str = "", kit_root: Path | None = None,
              env_vars: dict[str, str] | None = None, num_gpus: int | None = None,
              resources: dict[str, float] | None = None) -> Any:
    """`ray` connected to the cluster at `address` (the checkout shipped as working_dir), or to a local Ray started
    here with this machine's CPUs (and `num_gpus` GPUs when given: fake ones in tests); tries a local start again
    when Ray's own start-up times out."""
    try:
        import ray
    except ImportError:
        raise ExecutorError("--executor ray needs Ray: pip install 'yolo26kit[matrix]'") from None
    if ray.is_initialized():
        return ray
    here = Path(__file__).resolve().parents[2]
    if address:
        from .. import env

        if env.git_revision() is not None and (kit_root or here).resolve() == env.ROOT:
            env.write_stamp()  # no .git travels: the revision goes as a stamp
        ray.init(address=address, runtime_env={"working_dir": str(kit_root or here), "excludes": RAY_EXCLUDES},
                 log_to_driver=False)
        return ray
    path = os.pathsep.join([str(here), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]])
    gpus = {} if num_gpus is None else {"num_gpus": num_gpus}
    if resources:
        gpus["resources"] = resources
    for attempt in range(RAY_START_ATTEMPTS):
        try:
            ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, log_to_driver=False,
                     runtime_env={"env_vars": {"PYTHONPATH": path, **(env_vars or {})}}, **gpus)
            return ray
        except Exception as exc:  # noqa: BLE001 - Ray's own startup timeout, seen on a loaded 2-core machine
            ray.shutdown()
            if attempt + 1 == RAY_START_ATTEMPTS:
                raise ExecutorError(f"a local Ray did not start ({RAY_START_ATTEMPTS} tries): {exc}") from None
            log(f"[ray] a local Ray did not start ({str(exc).splitlines()[0]}); trying again")
    raise AssertionError("unreachable")


def pack(folder: Path, names: list[str] | None = None) -> bytes:
    """A gzipped tar of `folder` (only `names` in it when given)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name in names if names is not None else ["."]:
            if (folder / name).exists():
                tar.add(folder / name, arcname=name)
    return buffer.getvalue()


def unpack(data: bytes, folder: Path) -> None:
    """Extract a pack() into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(folder, filter="data")


def ray_notebook(task: NotebookTask) -> dict[str, Any]:
    """Ray task: the notebook on the GPU Ray gave this worker (if any), in the run folder when this node has it,
    else in a folder of its own sent back packed."""
    import ray

    ids = [str(i) for i in ray.get_gpu_ids()]
    given = task if task.planned_gpu_holds or task.gpu is None or not ids else replace(task, gpu=ids[0])
    shared = Path(task.run_dir).is_dir()
    with tempfile.TemporaryDirectory(prefix="yolo26kit-nb-") as tmp:
        here = given if shared else replace(given, run_dir=tmp, notebook=_local_notebook(task.notebook))
        result = run_task(here)
        archive = None if shared else pack(Path(tmp))
    return {"run": result, "archive": archive, "node": socket.gethostname(), "gpu": given.gpu}


def _local_notebook(notebook: str) -> str:
    """The notebook on a cluster node: the driver's path when it exists there, else the same path under the shipped
    checkout (the task's working directory)."""
    if Path(notebook).exists():
        return notebook
    here = Path(__file__).resolve().parents[2]
    try:
        return str(Path.cwd() / Path(notebook).relative_to(here))
    except ValueError:
        return notebook


class RayExecutor:
    """Each notebook a Ray task (module notes); a driver thread per notebook waits for its task."""

    name = "ray"

    def __init__(self, log: Callable[[str], None], gpus: list[str] | None = None, address: str | None = None,
                 kit_root: Path | None = None, env_vars: dict[str, str] | None = None) -> None:
        self.log = log
        self.gpus = gpus or []
        self.address = address if address is not None else os.environ.get("RAY_ADDRESS", "")
        self.kit_root = kit_root  # the checkout a cluster gets as working_dir (default: this one)
        self.env_vars = env_vars or {}  # set in a local Ray's workers
        self._ray: Any = None
        self._lock = threading.Lock()
        self._closed = threading.Event()  # ends the thread that started Ray (started())

    def threads(self, tasks: int) -> int:
        return tasks  # Ray's resources decide how many run at once

    def started(self) -> Any:
        """`ray`, started here or joined (once per executor)."""
        with self._lock:
            if self._ray is None:
                local_gpus = None if self.address or not self.gpus else len(self.gpus)
                with _visible(self.gpus if local_gpus and _real_gpus() else None):
                    self._ray = self._start_on_own_thread(lambda: start_ray(
                        self.log, self.address, self.kit_root, self.env_vars, num_gpus=local_gpus,
                        resources={gpu_resource(g): 1.0 for g in self.gpus} if local_gpus else None))
            return self._ray

    def _start_on_own_thread(self, start: Callable[[], Any]) -> Any:
        """start() on a thread that lives until close(): a local Ray's GCS and raylet are killed when the *thread*
        that started them ends (Linux's parent-death signal, which Ray sets), and the notebooks' threads that call
        started() end with their notebook."""
        answer: dict[str, Any] = {}
        ready = threading.Event()

        def own() -> None:
            try:
                answer["ray"] = start()
            except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
                answer["error"] = exc
            ready.set()
            if "ray" in answer:
                self._closed.wait()

        self._closed.clear()
        threading.Thread(target=own, name="ray-start", daemon=True).start()
        ready.wait()
        if "error" in answer:
            raise answer["error"]
        return answer["ray"]

    def cpus(self) -> int:
        """The CPUs of the Ray this executor runs on (the whole cluster's)."""
        return int(self.started().cluster_resources().get("CPU", 1))

    def map(self, fn: Callable[..., Any], calls: list[tuple],
            options: dict[str, Any] | list[dict[str, Any]] | None = None, retries: int = 0) -> Iterator[Any]:
        """fn(*call) for each call as a Ray task (`options`: its resources, one dict for all or one per call; a task
        whose worker died is run again `retries` times), all submitted at once; results in call order, an exception
        in place of a failed task's result."""
        ray = self.started()
        task = ray.remote(max_retries=retries)(fn)
        each = options if isinstance(options, list) else [options or {}] * len(calls)
        refs = [task.options(**opts).remote(*call) for opts, call in zip(each, calls)]
        for ref in refs:
            try:
                yield ray.get(ref)
            except Exception as exc:  # noqa: BLE001 - a worker that died, or the task's own code that broke
                yield exc

    def execute(self, task: NotebookTask, stopping: Callable[[], bool]) -> Any:
        """Submit the notebook's task, wait for it (cancelled, its worker killed, when the run stops)."""
        ray = self.started()
        share: dict[str, Any] = {}
        if task.gpu is not None:
            share["num_gpus"] = task.gpu_share
            if not self.address:
                share["resources"] = {gpu_resource(task.gpu): task.gpu_share}
        task = replace(task, planned_gpu_holds=not self.address)
        ref = ray.remote(max_retries=0)(ray_notebook).options(num_cpus=task.cpus, **share).remote(task)
        while True:
            done, _ = ray.wait([ref], timeout=POLL_S)
            if done:
                break
            if stopping():
                ray.cancel(ref, force=True)
                raise StoppedTask(task.name)
        answer = ray.get(ref)
        if answer["archive"]:
            unpack(answer["archive"], Path(task.run_dir))
        result = answer["run"]
        result.gpu, result.node = answer["gpu"], answer["node"]
        return _rebase(result, Path(task.run_dir))

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "address": self.address or "local",
                **({"gpus": self.gpus} if self.gpus else {})}

    def close(self) -> None:
        """Disconnect from Ray (a local Ray stops)."""
        with self._lock:
            if self._ray is not None:
                self._ray.shutdown()
            self._ray = None
            self._closed.set()


def gpu_resource(gpu: str) -> str:
    """The local Ray resource that stands for one GPU of the plan."""
    return f"yolo26kit_gpu_{gpu}"


class StoppedTask(Exception):
    """A Ray task cancelled because the run stopped."""


def _real_gpus() -> bool:
    """True when this machine has an NVIDIA driver (a GPU for Ray to find), False on a CPU machine."""
    return Path("/proc/driver/nvidia").exists()


@contextlib.contextmanager
def _visible(gpus: list[str] | None) -> Iterator[None]:
    """CUDA_VISIBLE_DEVICES set to `gpus` while a local Ray starts (it hands out those ids), then as it was."""
    before = os.environ.get("CUDA_VISIBLE_DEVICES")
    if gpus:
        os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(gpus)
    try:
        yield
    finally:
        if gpus and before is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        elif gpus:
            os.environ["CUDA_VISIBLE_DEVICES"] = before


def _rebase(result: Any, run_dir: Path) -> Any:
    """A NotebookRun made in another folder, its paths moved into the run folder."""
    result.notebook = run_dir / Path(result.notebook).name
    result.results = run_dir / Path(result.results).name
    return result


def make(name: str, jobs: int, gpus: list[str], log: Callable[[str], None] = print) -> LocalExecutor | RayExecutor:
    """The executor called `name` (local or ray)."""
    if name == "local":
        return LocalExecutor(jobs)
    if name == "ray":
        return RayExecutor(log, gpus)
    raise KitError(f"unknown executor {name!r} (local or ray)")
