"""The batch's executors: the same tiny batch through the local executor and through a local Ray on CPU told it has
2 GPUs (a fake resource), so GPU placement, per-GPU measuring locks, the plan and the time accounts are exercised
without a GPU; both give the same run.json notebooks and verdicts."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import nbformat
import pytest

from yolo26kit import catalog, findings
from yolo26kit.bench import isolate
from yolo26kit.run import executors, notebook as notebook_run, runner

# A notebook that measures twice under the kit's locks and says which GPU and lock it was given.
BODY = """\
import json, os, time
from yolo26kit.bench import timing  # the start-up ends with this cell, as with findings.start(
"""
MEASURE = """\
with timing.device_lock():
    time.sleep(0.5)
with timing.cpu_lock():
    time.sleep(0.2)
claims = [{"id": NAME + ".ran", "verdict": "supported", "evidence": "it ran"},
          {"id": NAME + ".pinned", "verdict": "supported" if os.environ.get("CUDA_VISIBLE_DEVICES") else "refuted",
           "evidence": os.environ.get("CUDA_VISIBLE_DEVICES", "")}]
with open(results_path, "w") as f:
    json.dump({"schema": SCHEMA, "investigation": NAME, "claims": claims, "tables": {},
               "gpu": os.environ.get("CUDA_VISIBLE_DEVICES"), "lock": os.environ.get(timing.DEVICE_LOCK_ENV)}, f)
"""
NAMES = [f"fake{i}" for i in range(4)]


def fake(root: Path, name: str) -> catalog.Investigation:
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell('results_path = ""\nrun_id = ""', metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(BODY),
        nbformat.v4.new_code_cell(f"NAME = {name!r}\nSCHEMA = {findings.SCHEMA!r}\n" + MEASURE),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(nb, root / f"{name}.ipynb")
    return catalog.Investigation(name, "fake", (), {"quick": {}})


@pytest.fixture
def fake_kit(tmp_path, monkeypatch):
    root = tmp_path / "notebooks"
    root.mkdir()
    monkeypatch.setattr(catalog, "NOTEBOOKS", root)
    invs = {name: fake(root, name) for name in NAMES}
    monkeypatch.setattr(catalog, "get", lambda name: invs[name])
    return invs


def batch(kit: dict, tmp_path: Path, executor: str) -> tuple[runner.RunResult, dict]:
    result = runner.run([(inv, {}) for inv in kit.values()], out=tmp_path / executor, jobs=4,
                        cache=tmp_path / "cache", render=False, gpus=["0", "1"], executor=executor)
    assert result.state == "complete" and result.exit_code == 0, runner.summary(result)
    return result, json.loads((result.run_dir / "run.json").read_text())


def verdicts(run_dir: Path) -> dict[str, str]:
    found = {}
    for name in NAMES:
        found |= {c["id"]: c["verdict"] for c in json.loads((run_dir / f"{name}.results.json").read_text())["claims"]}
    return found


def check_placement(run_dir: Path, meta: dict) -> None:
    """Every notebook ran pinned to the GPU run.json names, under that GPU's lock; both GPUs were used; the
    accounts add up to each notebook's seconds; the call has a plan, a critical path, a lower bound and its cores'
    load."""
    for entry in meta["notebooks"]:
        saw = json.loads((run_dir / f"{entry['name']}.results.json").read_text())
        assert saw["gpu"] == entry["gpu"] and saw["lock"].endswith(f"gpu{entry['gpu']}.lock"), (saw, entry)
        assert os.path.isabs(saw["lock"]), saw  # in the run's lock folder, not wherever the kernel's cwd is
        acc = entry["accounts"]
        assert sum(v for k, v in acc.items() if k != "wall") == pytest.approx(acc["wall"], abs=0.05)
        assert acc["wall"] == pytest.approx(entry["seconds"], abs=1.0)
        assert acc["measure"] >= 0.6 and acc["spawn"] > 0 and acc["imports"] > 0  # two lock holds of 0.5 + 0.2 s
        assert entry["measuring"][f"gpu{entry['gpu']}"]["holds"] == 1 and entry["measuring"]["cpu"]["holds"] == 1
    assert {e["gpu"] for e in meta["notebooks"]} == {"0", "1"}
    assert [p["name"] for p in meta["plan"]["notebooks"]] == NAMES and meta["plan"]["gpus"] == ["0", "1"]
    assert meta["critical_path"]["notebook"] in NAMES
    assert meta["lower_bound_s"] >= 2 * 0.5 and set(meta["measuring_locks"]) == {"gpu0", "gpu1", "cpu"}
    spans = meta["measuring_lock_spans"]
    assert set(spans) == set(meta["measuring_locks"])
    assert all(0 <= s["first_s"] < s["last_s"] <= meta["wall_seconds"] and s["free_s"] >= 0 for s in spans.values())
    busy = meta["cores_busy"]  # sampled while the notebooks ran: the last sample ends before the call does
    assert busy["cores"] == os.cpu_count() and busy["which"] == "all", busy  # too few cores to keep any for timings
    assert 0 <= busy["mean"] <= busy["cores"] + 0.5, busy
    # A sample's time is rounded to 0.1 s, so the last one may read up to 0.05 s past wall_seconds.
    assert busy["samples"] and 0 < busy["samples"][-1][0] <= meta["wall_seconds"] + 0.05, busy


@pytest.mark.notebook
def test_a_batch_through_ray_with_two_fake_gpus_matches_the_local_executor(fake_kit, tmp_path):
    pytest.importorskip("ray")
    local, local_meta = batch(fake_kit, tmp_path, "local")
    check_placement(local.run_dir, local_meta)
    ray_run, ray_meta = batch(fake_kit, tmp_path, "ray")
    check_placement(ray_run.run_dir, ray_meta)
    assert ray_meta["invocations"][0]["executor"]["name"] == "ray"
    assert [(n["name"], n["state"]) for n in ray_meta["notebooks"]] == [(n["name"], n["state"])
                                                                       for n in local_meta["notebooks"]]
    assert verdicts(ray_run.run_dir) == verdicts(local.run_dir)
    assert set(verdicts(local.run_dir).values()) == {"supported"}


def task(tmp_path: Path, gpu: str | None) -> executors.NotebookTask:
    return executors.NotebookTask("x", "x.ipynb", {}, str(tmp_path), "run", "run/x/1", 10.0,
                                  env={"A": "1"}, gpu=gpu, lock_dir=str(tmp_path / "locks"))


def test_a_task_is_pinned_to_its_gpu_and_that_gpus_lock():
    from yolo26kit.bench import timing

    pinned = executors.gpu_env(task(Path("/r"), "1"), "1")
    assert pinned["CUDA_VISIBLE_DEVICES"] == "1" and pinned[timing.DEVICE_LOCK_ENV] == "/r/locks/gpu1.lock"
    assert pinned["A"] == "1"
    assert executors.gpu_env(task(Path("/r"), None), None) == {"A": "1"}
    assert timing.DEVICE_CORES_ENV not in pinned  # no cores kept for that GPU: timings stay where they are
    kept = dataclasses.replace(task(Path("/r"), "1"), gpu_cores={"0": "6,7", "1": "4,5"})
    assert executors.gpu_env(kept, "1")[timing.DEVICE_CORES_ENV] == "4,5"
    assert executors.gpu_env(kept, "0")[timing.DEVICE_CORES_ENV] == "6,7"  # a Ray task given the other GPU


def test_a_task_lent_a_spare_gpu_tells_its_notebook_that_gpus_id_lock_and_cores(monkeypatch):
    from yolo26kit.bench import timing

    lent = dataclasses.replace(task(Path("/r"), "1"), spare_gpu="0", gpu_cores={"0": "6,7", "1": "4,5"})
    told = executors.gpu_env(lent, "1")
    assert json.loads(told[timing.SPARE_GPU_ENV]) == {"gpu": "0", "lock": "/r/locks/gpu0.lock", "cores": "6,7"}
    monkeypatch.setenv(timing.SPARE_GPU_ENV, told[timing.SPARE_GPU_ENV])
    assert timing.spare_gpu_env() == {"CUDA_VISIBLE_DEVICES": "0", timing.DEVICE_LOCK_ENV: "/r/locks/gpu0.lock",
                                      timing.DEVICE_CORES_ENV: "6,7"}
    assert timing.SPARE_GPU_ENV not in executors.gpu_env(task(Path("/r"), "1"), "1")  # none lent
    on_cluster = dataclasses.replace(lent, planned_gpu_holds=False)  # Ray picks the GPU: the plan's spare may be it
    assert timing.SPARE_GPU_ENV not in executors.gpu_env(on_cluster, "1")
    assert timing.SPARE_GPU_ENV not in executors.gpu_env(lent, "0")  # pinned to the spare itself
    assert timing.SPARE_GPU_ENV not in executors.gpu_env(lent, None)


def test_the_runner_lends_a_spare_gpu_to_a_notebook_whose_catalog_entry_has_a_share(fake_kit, tmp_path):
    from yolo26kit.bench import timing

    fake_kit["fake0"] = dataclasses.replace(fake_kit["fake0"], spare_gpu_share=0.4)
    held = runner.Batch(tmp_path / "run", {"run_id": "r", "environment": {"device_type": "cuda"},
                                           "notebooks": [{"name": n, "parameters": {}} for n in NAMES]})
    planned = runner.make_plan(held, NAMES, 4, runner.Placing(["0", "1"]))
    lent = planned.placement("fake0")
    assert lent.spare_gpu in ("0", "1") and lent.spare_gpu != lent.gpu
    assert [planned.placement(n).spare_gpu for n in NAMES[1:]] == [None] * 3
    made = runner.notebook_task(held, lent, {}, tmp_path / "locks", planned, False)
    assert made.spare_gpu == lent.spare_gpu
    assert json.loads(executors.gpu_env(made, made.gpu)[timing.SPARE_GPU_ENV])["gpu"] == lent.spare_gpu


def test_pack_and_unpack_keep_a_folder(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.results.json").write_text("{}")
    executors.unpack(executors.pack(tmp_path / "a"), tmp_path / "b")
    assert (tmp_path / "b" / "x.results.json").read_text() == "{}"


def test_executors_by_name():
    assert executors.make("local", 3, []).threads(7) == 3
    assert executors.make("ray", 0, ["0", "1"]).threads(7) == 7
    with pytest.raises(Exception, match="unknown executor"):
        executors.make("slurm", 1, [])


def test_gpus_on_the_command_line():
    from yolo26kit import cli
    from yolo26kit.errors import BadParameter

    assert cli._gpus("0,1", on_this_machine=False) == ["0", "1"] and cli._gpus("") is None
    for bad in ("0,0", "a", ","):
        with pytest.raises(BadParameter):
            cli._gpus(bad, on_this_machine=False)


@pytest.mark.notebook
def test_a_ray_batch_stopped_at_its_deadline_leaves_no_process(tmp_path, monkeypatch):
    """A notebook still running at the --stop-after deadline: its Ray task is cancelled, its processes end, and it
    is `interrupted`, resumable, as with the local executor."""
    pytest.importorskip("ray")
    root = tmp_path / "notebooks"
    root.mkdir()
    monkeypatch.setattr(catalog, "NOTEBOOKS", root)
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell('results_path = ""\nrun_id = ""', metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("import time\ntime.sleep(600)")],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(nb, root / "sleeper.ipynb")
    inv = catalog.Investigation("sleeper", "sleeps", (), {"quick": {}})
    monkeypatch.setattr(catalog, "get", lambda name: inv)
    result = runner.run([(inv, {})], out=tmp_path / "runs", cache=tmp_path / "cache", render=False, gpus=["0"],
                        executor="ray", stop_after=90)
    meta = json.loads((result.run_dir / "run.json").read_text())
    assert result.exit_code == runner.EXIT_DEADLINE and meta["notebooks"][0]["state"] == "interrupted"
    assert notebook_run.tagged(notebook_run.notebook_tag(meta["run_id"], "sleeper")) == []
    # the stop ended this batch only: a step started later in this process runs (the notebook tests do so)
    assert isolate.run_step(os.getpid, timeout=60).ok


@pytest.mark.parametrize("jobs", [1, 3])
def test_local_map_keeps_the_call_order_and_gives_back_what_a_call_raised(jobs):
    done = list(executors.LocalExecutor(jobs).map(json.loads, [("[2]",), ("not json",), ("3",)]))
    assert done[0] == [2] and done[2] == 3 and isinstance(done[1], ValueError)


@pytest.mark.notebook
def test_ray_map_runs_the_calls_as_tasks_in_order():
    pytest.importorskip("ray")
    executor = executors.RayExecutor(lambda s: None, address="")
    try:
        done = list(executor.map(json.loads, [("[2]",), ("not json",), ("3",)], {"num_cpus": 1}))
    finally:
        executor.close()
    assert done[0] == [2] and done[2] == 3 and "Expecting value" in str(done[1])


def _running(pid: int) -> str | None:
    """The command name of a live, not-yet-reaped process; None for a zombie or a pid that is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name, state = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2]
    return None if state == "Z" else name


def test_a_local_ray_outlives_the_thread_that_started_it():
    """Ray kills its GCS and raylet when the thread that started them ends; a notebook's thread that calls started()
    ends with its notebook, and the batch's other notebooks must not lose Ray with it."""
    import threading
    import time

    pytest.importorskip("ray")
    executor = executors.RayExecutor(lambda s: None, address="")
    starter = threading.Thread(target=executor.started)
    starter.start()
    starter.join()
    try:
        time.sleep(2)  # the parent-death signal is sent when the thread ends; let it land
        heads = {_running(pid) for pid in isolate.descendants(os.getpid())}
        assert {"gcs_server", "raylet"} <= heads
        assert list(executor.map(json.loads, [("[1]",), ("2",)], {"num_cpus": 1})) == [[1], 2]
    finally:
        executor.close()
