"""The machine's busy cores over a batch: the sampler, the summary run.json keeps, and the words beside the wall."""

import itertools
import time

from yolo26kit.run import accounts, core_load


def test_the_sampler_turns_busy_seconds_into_busy_cores_between_reads():
    busy = itertools.count(0.0, 0.06)  # 0.06 more busy CPU seconds at every read
    with core_load.CoreSampler(lambda: next(busy), interval=0.02) as sampler:
        deadline = time.monotonic() + 10  # a loaded machine may wake the thread late: wait for samples, not a time
        while len(sampler.samples) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
    assert len(sampler.samples) >= 3
    assert all(t1 > t0 for t0, t1, _ in sampler.samples)
    assert all(abs(b - 0.06 / (t1 - t0)) < 1e-9 for t0, t1, b in sampler.samples)  # busy seconds over wall seconds
    assert all(a[1] == b[0] for a, b in zip(sampler.samples, sampler.samples[1:]))  # back to back, no gap


def test_a_machine_without_proc_stat_gives_no_samples_and_no_words():
    with core_load.CoreSampler(lambda: None, interval=0.01) as sampler:
        time.sleep(0.03)
    assert sampler.samples == [] and core_load.summary(sampler.samples, [(0, 1)], 0.0, 2, "all") == {}
    assert core_load.phrase({}) == ""


def test_busy_cores_while_steps_waited_weigh_each_sample_by_its_overlap_with_the_waits():
    # 0-10 s: 4 of 12 notebook cores busy, 10-20 s: 14; steps waited 8-12 s and 11-20 s (merged: 8-20 s)
    samples = [(100.0, 110.0, 4.0), (110.0, 120.0, 14.0)]
    got = core_load.summary(samples, [(108.0, 112.0), (111.0, 120.0)], 100.0, 12, "notebook")
    assert got["cores"] == 12 and got["which"] == "notebook" and got["mean"] == 9.0
    assert got["steps_waited_s"] == 12.0
    assert got["while_steps_waited"] == round((2 * 4 + 10 * 14) / 12, 2)
    assert got["samples"] == [[10.0, 4.0], [20.0, 14.0]]
    assert core_load.phrase(got) == "notebook cores busy 9.0 of 12 on average, 12.3 while steps waited for a slot"
    assert core_load.summary(samples, [], 100.0, 16, "all")["while_steps_waited"] is None


def test_the_times_table_and_the_run_line_say_how_busy_the_cores_were():
    meta = {"wall_seconds": 250.0, "measuring_locks": {"gpu0": 90.0}, "lower_bound_s": 90.0,
            "cores_busy": {"cores": 16, "which": "all", "mean": 11.0, "while_steps_waited": 15.5,
                           "steps_waited_s": 80.0, "samples": []}}
    assert "; cores busy 11.0 of 16 on average, 15.5 while steps waited for a slot" in accounts.wall_cell(meta)
    assert "cores busy" not in accounts.wall_cell({**meta, "cores_busy": {}})
