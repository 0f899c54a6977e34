"""The batch plan (notebook → GPU, longest first, cores kept for CPU timings) and the time accounts read from the
phase intervals the notebooks' processes log."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from yolo26kit.run import plan, timeline

NAMES = ["aoti_load", "cdmaskformer_mask", "cuda_graphs", "deployment_paths", "dynamic_shapes", "index_dtype",
         "view_copy"]
# seconds and measuring seconds of a warm one-GPU batch (kit 23bb3c8, reports/20261126T050328Z-vm-cuda)
WARM = {"aoti_load": (221, 0.2), "cdmaskformer_mask": (163, 15.4), "cuda_graphs": (273, 84.4),
        "deployment_paths": (258, 73.8), "dynamic_shapes": (241, 17.6), "index_dtype": (225, 0.0),
        "view_copy": (231, 29.6)}


def times() -> dict[str, dict[str, float]]:
    return {n: {"seconds": s, "measure": m} for n, (s, m) in WARM.items()}


def test_longest_first_and_measuring_balanced_over_two_gpus():
    made = plan.make_plan(NAMES, ["0", "1"], 0, list(range(32)), "cuda", times())
    assert made.order[:2] == ["cuda_graphs", "deployment_paths"]
    load = {g: sum(WARM[p.name][1] for p in made.placements if p.gpu == g) for g in ("0", "1")}
    assert made.placement("cuda_graphs").gpu != made.placement("deployment_paths").gpu
    assert abs(load["0"] - load["1"]) < 20, load  # one GPU alone would measure 221 s
    assert made.per_gpu("0") + made.per_gpu("1") == len(NAMES)


def test_one_gpu_takes_every_notebook_and_cpu_has_none():
    assert {p.gpu for p in plan.make_plan(NAMES, ["0"], 0, list(range(16)), "cuda", times()).placements} == {"0"}
    assert {p.gpu for p in plan.make_plan(NAMES, [], 1, [0, 1], "cpu").placements} == {None}


def test_unknown_notebooks_start_before_the_known_in_catalog_order():
    known = {"view_copy": {"seconds": 10.0, "measure": 1.0}, "c": {"seconds": 20.0, "measure": 1.0}}
    made = plan.make_plan(["a", "c", "b", "view_copy"], ["0"], 0, [0], "cuda", known)
    assert made.order == ["a", "b", "c", "view_copy"]


@pytest.mark.parametrize("cores, device, kept", [(32, "cuda", 4), (16, "cuda", 2), (8, "cuda", 2), (4, "cuda", 0),
                                                  (32, "cpu", 0)])
def test_cores_kept_for_cpu_timings(cores, device, kept):
    measuring, others = plan.split_cores(list(range(cores)), device)
    assert len(measuring) == kept and not set(measuring) & set(others) and len(measuring) + len(others) == cores


@pytest.mark.parametrize("cores, gpus, kept", [(32, 2, 2), (16, 1, 2), (8, 1, 2), (16, 8, 0), (4, 1, 0)])
def test_each_gpu_keeps_cores_for_its_timings_while_the_notebooks_keep_half(cores, gpus, kept):
    ids = [str(g) for g in range(gpus)]
    made = plan.make_plan(NAMES, ids, 0, list(range(cores)), "cuda", times())
    per_gpu = [made.gpu_cores.get(g, []) for g in ids]
    assert [len(c) for c in per_gpu] == [kept] * gpus
    every = [made.measuring_cores, made.notebook_cores, *per_gpu]
    assert sorted(c for group in every for c in group) == list(range(cores))  # each core in one group
    assert len(made.notebook_cores) >= cores / 2
    assert plan.make_plan(NAMES, [], 1, list(range(cores)), "cpu").gpu_cores == {}


def test_cpus_per_notebook_share_the_notebook_cores():
    made = plan.make_plan(NAMES, ["0", "1"], 0, list(range(32)), "cuda", times())
    assert {p.cpus for p in made.placements} == {(32 - 4 - 2 * 2) // 7}  # less the CPU's and the GPUs' kept cores
    assert plan.make_plan(NAMES, [], 1, [0, 1], "cpu").placements[0].cpus == 2


def write_run(root: Path, run_id: str, device: str, done: dict[str, tuple[float, float]]) -> None:
    (root / run_id).mkdir(parents=True)
    meta = {"run_id": run_id, "environment": {"device_type": device},
            "notebooks": [{"name": n, "state": "done", "seconds": s, "time_split": {"measure": m}}
                          for n, (s, m) in done.items()]}
    (root / run_id / "run.json").write_text(json.dumps(meta))


def test_last_times_prefer_the_newest_run_with_every_notebook(tmp_path):
    write_run(tmp_path, "20261101T000000Z-a-cuda", "cuda", {"x": (100, 10), "y": (50, 5)})
    write_run(tmp_path, "20261102T000000Z-a-cuda", "cuda", {"x": (400, 40)})  # one notebook alone
    write_run(tmp_path, "20261103T000000Z-a-cpu", "cpu", {"x": (1, 1), "y": (1, 1)})
    run_id, found = plan.last_times(tmp_path, "cuda", ["x", "y"])
    assert run_id == "20261101T000000Z-a-cuda" and found["x"] == {"seconds": 100, "measure": 10}
    assert plan.last_times(tmp_path, "cuda", ["x", "z"]) == (None, {"x": {"seconds": 100, "measure": 10}})
    assert plan.last_times(tmp_path, "cuda", ["z"]) == (None, {})


def test_last_times_prefer_a_warm_run_to_a_newer_cold_one(tmp_path):
    write_run(tmp_path, "20261101T000000Z-a-cuda", "cuda", {"x": (100, 10), "y": (50, 5)})
    write_run(tmp_path, "20261102T000000Z-a-cuda", "cuda", {"x": (300, 70), "y": (200, 40)})
    newest = tmp_path / "20261102T000000Z-a-cuda" / "run.json"
    newest.write_text(json.dumps({**json.loads(newest.read_text()), "compile_cache": "cold"}))
    assert plan.last_times(tmp_path, "cuda", ["x", "y"])[0] == "20261101T000000Z-a-cuda"
    (tmp_path / "20261101T000000Z-a-cuda" / "run.json").unlink()  # only the cold one: better than nothing
    assert plan.last_times(tmp_path, "cuda", ["x", "y"]) == ("20261102T000000Z-a-cuda",
                                                            {"x": {"seconds": 300, "measure": 70},
                                                             "y": {"seconds": 200, "measure": 40}})


def test_a_notebook_that_never_finished_counts_its_seconds_as_a_floor(tmp_path):
    write_run(tmp_path, "20261101T000000Z-a-cuda", "cuda", {"x": (100, 10), "y": (50, 5)})
    meta = {"run_id": "20261102T000000Z-a-cuda", "environment": {"device_type": "cuda"},
            "notebooks": [{"name": "x", "state": "done", "seconds": 90, "time_split": {"measure": 9}},
                          {"name": "slow", "state": "interrupted", "seconds": 270, "time_split": {"measure": 50}}]}
    (tmp_path / "20261102T000000Z-a-cuda").mkdir()
    (tmp_path / "20261102T000000Z-a-cuda" / "run.json").write_text(json.dumps(meta))
    _, found = plan.last_times(tmp_path, "cuda", ["x", "y", "slow"])
    assert found == {"x": {"seconds": 90, "measure": 9}, "y": {"seconds": 50, "measure": 5},
                     "slow": {"seconds": 270, "measure": 50}}
    assert plan.make_plan(["x", "y", "slow"], ["0"], 0, [0], "cuda", found).order == ["slow", "x", "y"]


def test_gpu_balance_counts_gpu_lock_seconds_not_cpu_timings(tmp_path):
    # seen on a 2×H200 host: deployment_paths held the CPU lock 32 s and its GPU's 9 s; counted as 87 s of GPU
    # measuring it had a GPU of its own, and cuda_graphs and cdmaskformer_mask shared the other
    held = {"cuda_graphs": {"gpu0": 66.0}, "cdmaskformer_mask": {"gpu0": 29.0, "cpu": 13.0},
            "deployment_paths": {"gpu1": 9.5, "cpu": 32.0}}
    split = {"cuda_graphs": 66.0, "cdmaskformer_mask": 42.0, "deployment_paths": 87.0}
    walls = {"cuda_graphs": 143, "deployment_paths": 112, "cdmaskformer_mask": 100}
    meta = {"run_id": "20261101T000000Z-a-cuda", "environment": {"device_type": "cuda"},
            "notebooks": [{"name": n, "state": "done", "seconds": walls[n], "time_split": {"measure": split[n]},
                           "measuring": {k: {"held_s": v} for k, v in held[n].items()}} for n in walls]}
    (tmp_path / meta["run_id"]).mkdir()
    (tmp_path / meta["run_id"] / "run.json").write_text(json.dumps(meta))
    _, found = plan.last_times(tmp_path, "cuda", list(walls))
    assert found["deployment_paths"]["measure"] == 9.5 and found["cdmaskformer_mask"]["measure"] == 29.0
    made = plan.make_plan(list(walls), ["0", "1"], 0, list(range(32)), "cuda", found)
    assert made.placement("cuda_graphs").gpu != made.placement("cdmaskformer_mask").gpu
    assert plan.last_times(tmp_path, "cpu", list(walls)) == (None, {})  # another device type's run
    meta["environment"]["device_type"] = "cpu"
    (tmp_path / meta["run_id"] / "run.json").write_text(json.dumps(meta))
    assert plan.last_times(tmp_path, "cpu", list(walls))[1]["deployment_paths"]["measure"] == 32.0


def test_a_notebook_with_a_spare_share_gets_a_second_gpu_and_its_measuring_splits():
    known = {"big": {"seconds": 300.0, "measure": 100.0}, "a": {"seconds": 200.0, "measure": 50.0},
             "b": {"seconds": 100.0, "measure": 15.0}}
    made = plan.make_plan(list(known), ["0", "1"], 0, list(range(32)), "cuda", known, spare_shares={"big": 0.4})
    big = made.placement("big")
    assert (big.gpu, big.spare_gpu, big.expected_spare_s) == ("0", "1", 40.0)
    # GPU 0 expects 60 s of big's, GPU 1 its 40 s: `a` goes to 1 (then 90 s), `b` back to 0; without the split
    # (100 s on 0) both would go to 1
    assert [made.placement(n).gpu for n in ("a", "b")] == ["1", "0"]
    assert all(made.placement(n).spare_gpu is None for n in ("a", "b"))
    assert made.to_json()["notebooks"][0]["spare_gpu"] == "1"
    alone = plan.make_plan(list(known), ["0"], 0, list(range(32)), "cuda", known, spare_shares={"big": 0.4})
    assert {(p.gpu, p.spare_gpu, p.expected_spare_s) for p in alone.placements} == {("0", None, None)}
    cpu = plan.make_plan(list(known), [], 1, [0, 1], "cpu", known, spare_shares={"big": 0.4})
    assert {p.spare_gpu for p in cpu.placements} == {None}


def test_a_notebook_that_ran_split_is_planned_with_the_split_it_measured(tmp_path):
    # its own GPU was 1; the rounds it moved to its spare held GPU 0's lock 30 s of its 80
    rows = [row("measure", 0, 50, lock="gpu1"), row("lock_wait", 5, 10, lock="gpu0"),
            row("measure", 10, 40, lock="gpu0")]
    assert timeline.lock_seconds({"big": rows}) == {"gpu0": 30, "gpu1": 50}
    meta = {"run_id": "20261101T000000Z-a-cuda", "environment": {"device_type": "cuda"},
            "notebooks": [{"name": "big", "state": "done", "seconds": 300, "gpu": "1",
                           "measuring": timeline.measuring(rows)},
                          {"name": "a", "state": "done", "seconds": 200, "gpu": "0",
                           "measuring": {"gpu0": {"held_s": 50.0}, "cpu": {"held_s": 9.0}}}]}
    (tmp_path / meta["run_id"]).mkdir()
    (tmp_path / meta["run_id"] / "run.json").write_text(json.dumps(meta))
    _, found = plan.last_times(tmp_path, "cuda", ["big", "a"])
    assert found == {"big": {"seconds": 300, "measure": 80, "spare_measure": 30},
                     "a": {"seconds": 200, "measure": 50}}
    made = plan.make_plan(["big", "a"], ["0", "1"], 0, list(range(32)), "cuda", found, spare_shares={"big": 0.4})
    assert made.placement("big").expected_spare_s == 30  # measured, not 0.4 of 80
    undeclared = plan.make_plan(["big", "a"], ["0", "1"], 0, list(range(32)), "cuda", found)
    assert undeclared.placement("big").spare_gpu is None  # a measured split alone lends no spare


def test_parse_gpus():
    assert plan.parse_gpus("0, 1,") == ["0", "1"] and plan.parse_gpus(None) == []


# ------------------------------------------------------------------ accounts


def row(phase: str, t0: float, t1: float, **extra) -> dict:
    return {"phase": phase, "t0": t0, "t1": t1, **extra}


def test_a_wait_inside_a_measuring_step_is_a_wait():
    rows = [row("measure", 10, 40, step="time rounds"), row("lock_wait", 12, 30, lock="gpu0"),
            row("measure", 30, 38, lock="gpu0")]
    acc = timeline.accounts(0.0, 50.0, 10.0, rows)
    assert acc["lock_wait"] == 18 and acc["measure"] == 12 and acc["rest"] == 10


def test_accounts_add_up_and_overlaps_count_once():
    rows = [row("compile", 10, 50), row("compile", 20, 60),  # side by side: 50 s, not 80, less the wait
            row("lock_wait", 55, 70, lock="gpu0"), row("measure", 70, 90, lock="gpu0"), row("measure", 80, 95)]
    acc = timeline.accounts(0.0, 100.0, 5.0, rows)
    assert {k: acc[k] for k in ("kernel_start", "lock_wait", "compile", "measure", "rest")} == {
        "kernel_start": 5.0, "lock_wait": 15.0, "compile": 45.0, "measure": 25.0, "rest": 10.0}
    assert sum(v for k, v in acc.items() if k != "wall") == pytest.approx(acc["wall"])


def test_accounts_clip_to_the_notebook_and_without_a_startup_mark():
    acc = timeline.accounts(100.0, 110.0, None, [row("measure", 90, 105)])
    assert timeline.startup_seconds(acc) == 0 and acc["measure"] == 5 and acc["rest"] == 5


def test_the_startup_ends_with_the_cell_that_starts_the_findings(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("x = 1", metadata={"papermill": {"end_time": "2026-11-26T10:00:01.000000"}}),
        nbformat.v4.new_code_cell('found = findings.start("x", globals())',
                                  metadata={"papermill": {"end_time": "2026-11-26T10:00:42.500000Z"}})])
    nbformat.write(nb, tmp_path / "x.ipynb")
    assert timeline.startup_end(tmp_path / "x.ipynb") == pytest.approx(1795687242.5)
    assert timeline.startup_end(tmp_path / "missing.ipynb") is None


def test_measuring_per_lock_and_the_batch_lower_bound():
    a = [row("lock_wait", 0, 4, lock="gpu0"), row("measure", 4, 10, lock="gpu0"),
         row("measure", 1, 3, lock="cpu", cores=[6, 7], others_busy_cores=0.3)]
    b = [row("measure", 10, 30, lock="gpu0"), row("measure", 0, 5, lock="gpu1")]
    assert timeline.measuring(a) == {"gpu0": {"holds": 1, "held_s": 6, "wait_s": 4},
                                     "cpu": {"holds": 1, "held_s": 2, "wait_s": 0, "cores": [6, 7],
                                             "others_busy_cores_max": 0.3}}
    assert timeline.lock_seconds({"a": a, "b": b}) == {"cpu": 2, "gpu0": 26, "gpu1": 5}
    # gpu0 first taken 4 s after the call began, let go at 30 s, never free between (4-10, then 10-30)
    assert timeline.lock_spans({"a": a, "b": b}, 0.0)["gpu0"] == {"first_s": 4, "last_s": 30, "free_s": 0}
    late = [row("measure", 12, 14, lock="gpu1"), row("measure", 20, 21, lock="gpu1")]
    assert timeline.lock_spans({"b": b, "late": late}, -2.0)["gpu1"] == {"first_s": 2, "last_s": 23, "free_s": 13}


def test_the_critical_path_is_the_notebook_that_ended_last():
    entries = [{"name": "a", "gpu": "0", "ended_at": 1050.0, "accounts": {}},
               {"name": "b", "gpu": "1", "ended_at": 1100.0, "last_phase": "measure", "accounts": {"measure": 9}},
               {"name": "c", "state": "pending"}]
    assert timeline.critical_path(entries, 1000.0) == {"notebook": "b", "gpu": "1", "ended_s": 100.0,
                                                       "last_phase": "measure", "accounts": {"measure": 9}}
    assert timeline.critical_path([{"name": "c"}], 0.0) is None
    assert timeline.last_phase([row("compile", 0, 99.5), row("measure", 90, 99.8)], 100.0) == "measure"


# ------------------------------------------------------------------ measuring locks


def test_the_locks_log_their_wait_and_hold_and_the_cpu_lock_moves_every_thread(tmp_path, monkeypatch):
    import os
    import threading

    from yolo26kit.bench import timing

    log = tmp_path / "phases.jsonl"
    monkeypatch.setenv(timing.PHASE_LOG_ENV, str(log))
    monkeypatch.setenv(timing.DEVICE_LOCK_ENV, str(tmp_path / "gpu1.lock"))
    monkeypatch.setenv(timing.CPU_LOCK_ENV, str(tmp_path / "cpu.lock"))
    mine = sorted(os.sched_getaffinity(0))
    monkeypatch.setenv(timing.MEASURING_CORES_ENV, str(mine[-1]))
    seen: dict[str, set[int]] = {}
    stop = threading.Event()
    helper = threading.Thread(target=stop.wait)  # a worker thread (like torch's pool) that must move too
    helper.start()
    with timing.device_lock():
        pass
    with timing.cpu_lock():
        seen["main"] = os.sched_getaffinity(0)
        seen["helper"] = os.sched_getaffinity(helper.native_id)
    stop.set()
    helper.join()
    assert seen == {"main": {mine[-1]}, "helper": {mine[-1]}}
    assert os.sched_getaffinity(0) == set(mine)  # put back
    rows = timeline.read_intervals(log)
    assert [(r["phase"], r["lock"]) for r in rows] == [("measure", "gpu1"), ("measure", "cpu")]
    assert rows[1]["cores"] == [mine[-1]] and rows[1]["others_busy_cores"] is not None


def test_the_device_lock_moves_every_thread_to_its_gpus_cores(tmp_path, monkeypatch):
    import os

    from yolo26kit.bench import timing

    monkeypatch.setenv(timing.DEVICE_LOCK_ENV, str(tmp_path / "gpu0.lock"))
    mine = sorted(os.sched_getaffinity(0))
    monkeypatch.setenv(timing.DEVICE_CORES_ENV, str(mine[0]))
    with timing.device_lock():
        inside = os.sched_getaffinity(0)
    assert inside == {mine[0]} and os.sched_getaffinity(0) == set(mine)


def test_load_while_measuring_counts_only_the_held_locks(tmp_path, monkeypatch):
    from yolo26kit.bench import timing

    log = tmp_path / "phases.jsonl"
    monkeypatch.setenv(timing.PHASE_LOG_ENV, str(log))
    monkeypatch.setenv(timing.CPU_LOCK_ENV, str(tmp_path / "cpu.lock"))
    with timing.others_busy_while_measuring() as unheld:
        sum(range(10**5))  # no lock held: nothing to say
    assert unheld["others_busy_cores"] is None
    with timing.others_busy_while_measuring() as load:
        for _ in range(3):
            with timing.cpu_lock():  # held long enough (~0.2 s) that the log's millisecond times weigh it exactly
                sum(range(10**7))
            sum(range(10**6))  # between holds: not counted
    rows = [r for r in timeline.read_intervals(log) if r["phase"] == "measure"]
    held = sum(r["t1"] - r["t0"] for r in rows)
    weighted = sum(r["others_busy_cores"] * (r["t1"] - r["t0"]) for r in rows) / held
    assert len(rows) == 3 and load["others_busy_cores"] == pytest.approx(weighted, abs=0.02)


def test_a_lock_held_elsewhere_is_waited_for_and_logged(tmp_path, monkeypatch):
    import fcntl
    import threading

    from yolo26kit.bench import timing

    log, lock = tmp_path / "phases.jsonl", tmp_path / "gpu0.lock"
    monkeypatch.setenv(timing.PHASE_LOG_ENV, str(log))
    monkeypatch.setenv(timing.DEVICE_LOCK_ENV, str(lock))
    holder = open(lock, "a")
    fcntl.flock(holder, fcntl.LOCK_EX)
    threading.Timer(0.3, lambda: fcntl.flock(holder, fcntl.LOCK_UN)).start()
    with timing.device_lock() as waited:
        pass
    holder.close()
    assert waited >= 0.25
    assert [r["phase"] for r in timeline.read_intervals(log)] == ["lock_wait", "measure"]


def test_parse_cores():
    from yolo26kit.bench import timing

    assert timing.parse_cores("0-2,8") == [0, 1, 2, 8] and timing.parse_cores("") == []


def test_the_startup_splits_into_spawn_kernel_start_and_imports():
    rows = [row("step_start", 0, 6, step="nb"), row("step_start", 30, 34, step="a"), row("compile", 30, 60, step="a")]
    acc = timeline.accounts(0.0, 100.0, 20.0, rows, kernel_up=15.0)
    assert (acc["spawn"], acc["kernel_start"], acc["imports"]) == (6.0, 9.0, 5.0)
    assert acc["step_start"] == 4 and acc["compile"] == 26 and acc["rest"] == 50
    assert sum(v for k, v in acc.items() if k != "wall") == pytest.approx(acc["wall"])
    assert timeline.startup_seconds(acc) == 20 and timeline.startup_seconds({"startup": 7.0}) == 7


def test_forensics_step_waits_and_other_steps_have_accounts_of_their_own():
    rows = [row("other", 10, 40, step="probe"), row("forensics", 40, 70, step="probe"),
            row("compile", 45, 60, step="debugger re-run"), row("step_wait", 70, 75, step="b"),
            row("measure", 75, 80, step="b")]
    acc = timeline.accounts(0.0, 100.0, 10.0, rows, kernel_up=5.0)
    assert acc["steps"] == 30 and acc["forensics"] == 30 and acc["compile"] == 0
    assert acc["step_wait"] == 5 and acc["measure"] == 5 and acc["rest"] == 20


def test_the_first_cell_start_marks_the_kernel_up(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# x"),
        nbformat.v4.new_code_cell("x = 1", metadata={"papermill": {"start_time": "2026-11-26T10:00:01.000000"}})])
    nbformat.write(nb, tmp_path / "x.ipynb")
    assert timeline.first_cell_start(tmp_path / "x.ipynb") == pytest.approx(1795687201.0)
    assert timeline.first_cell_start(tmp_path / "missing.ipynb") is None
