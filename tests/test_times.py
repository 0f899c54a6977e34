"""`yolo26kit times`: the time table comes from run.json, one column per run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from yolo26kit import cli
from yolo26kit.run import accounts
from yolo26kit.errors import BadParameter


def _run(folder, wall, seconds, cache_state="cold", retries=()):
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps({
        "wall_seconds": wall, "compile_cache": cache_state, "retries": list(retries),
        "environment": {"device": "Some GPU", "device_type": "cuda"},
        "notebooks": [{"name": "alpha", "state": "done", "seconds": seconds,
                       "cache": {"inductor": {"hit": 3, "miss": 1}, "artifacts": {"hit": 2, "miss": 0}}},
                      {"name": "beta", "state": "failed", "seconds": 7.4}]}))
    return folder


def test_one_column_per_run_with_seconds_cache_hits_and_wall(tmp_path):
    text = accounts.table([_run(tmp_path / "a", 100.4, 61.2), _run(tmp_path / "b", 50, 20.0, "warm", ["alpha"])])
    lines = text.splitlines()
    assert lines[0] == "| notebook | Some GPU, cold (a) | Some GPU, warm (b) |"
    assert lines[2] == "| `alpha` | 61 s; 3/1, 2/0 | 20 s; 3/1, 2/0 |"
    assert lines[3] == "| `beta` | 7 s (failed) | 7 s (failed) |"
    assert lines[4] == "| whole call, wall | **100 s** | **50 s**, 1 kernel retries |"


def test_a_folder_without_run_json_is_a_bad_parameter(tmp_path, capsys):
    with pytest.raises(BadParameter):
        accounts.table([tmp_path])
    assert cli.main(["times", str(tmp_path)]) == 2
    assert "no readable run.json" in capsys.readouterr().err


def test_a_resumed_notebook_says_how_many_steps_came_from_earlier_calls(tmp_path):
    folder = _run(tmp_path / "a", 500, 300.0)
    meta = json.loads((folder / "run.json").read_text())
    meta["notebooks"][0].update(reused_steps=12, reused_step_seconds=480.4)
    (folder / "run.json").write_text(json.dumps(meta))
    assert accounts.table([folder]).splitlines()[2] == "| `alpha` | 300 s; 3/1, 2/0; 12 steps (480 s) from earlier calls |"


def test_a_planned_run_names_its_gpus_lower_bound_critical_path_and_accounts(tmp_path):
    folder = _run(tmp_path / "a", 150.2, 90.0)
    meta = json.loads((folder / "run.json").read_text())
    acc = {"startup": 20.0, "lock_wait": 5.0, "compile": 40.0, "measure": 20.0, "rest": 5.0, "wall": 90.0}
    meta["notebooks"][0].update(gpu="1", accounts=acc)
    meta.update(plan={"gpus": ["0", "1"]}, measuring_locks={"gpu0": 70.0, "gpu1": 20.0}, lower_bound_s=70.0,
                critical_path={"notebook": "alpha", "last_phase": "measure"})
    (folder / "run.json").write_text(json.dumps(meta))
    lines = accounts.table([folder]).splitlines()
    assert lines[0] == "| notebook | Some GPU ×2, cold (a) |"
    assert lines[2] == "| `alpha` | 90 s; 3/1, 2/0; GPU 1 |"
    assert lines[4] == "| whole call, wall | **150 s** (lower bound 70 s; ended by `alpha` in measure) |"
    assert "| `alpha` | 1 | 90 | 20 | 5 | 40 | 20 | 5 |" in lines
    # a run that recorded when its locks were taken and let go says so for the one that bounds it
    meta["measuring_lock_spans"] = {"gpu0": {"first_s": 14.2, "last_s": 130.0, "free_s": 45.8},
                                    "gpu1": {"first_s": 20.0, "last_s": 60.0, "free_s": 20.0}}
    (folder / "run.json").write_text(json.dumps(meta))
    assert accounts.table([folder]).splitlines()[4] == (
        "| whole call, wall | **150 s** (lower bound 70 s, gpu0: first taken at 14 s, free 46 s between, let go at "
        "130 s; ended by `alpha` in measure) |")


def test_a_run_with_the_split_accounts_shows_their_columns_and_an_old_run_keeps_its_own(tmp_path):
    new, old = _run(tmp_path / "new", 100, 90.0), _run(tmp_path / "old", 100, 90.0)
    split = {"spawn": 2.0, "kernel_start": 3.0, "imports": 10.0, "lock_wait": 0.0, "compile": 40.0, "measure": 20.0,
             "forensics": 6.0, "step_start": 4.0, "step_wait": 0.0, "steps": 1.0, "rest": 4.0, "wall": 90.0}
    for folder, acc in ((new, split), (old, {"startup": 15.0, "compile": 40.0, "rest": 35.0, "wall": 90.0})):
        meta = json.loads((folder / "run.json").read_text())
        meta["notebooks"][0]["accounts"] = acc
        (folder / "run.json").write_text(json.dumps(meta))
    lines = accounts.table([new, old]).splitlines()
    assert ("| notebook | GPU | seconds | spawn | kernel start | imports | lock wait | compile | measure | forensics | "
            "step start | step wait | other steps | rest |") in lines
    assert "| `alpha` | — | 90 | 2 | 3 | 10 | 0 | 40 | 20 | 6 | 4 | 0 | 1 | 4 |" in lines
    assert "| notebook | GPU | seconds | start-up | compile | rest |" in lines
    assert "| `alpha` | — | 90 | 15 | 40 | 35 |" in lines


def test_every_account_has_a_column_head():
    from yolo26kit.run import timeline

    assert list(accounts.ACCOUNT_HEADS) == list(timeline.ACCOUNTS)


def test_a_times_block_is_made_again_from_the_runs_it_names(tmp_path):
    _run(tmp_path / "a", 100.4, 61.2)
    text = "before\n<!-- times a -->\n| typed | in |\n<!-- /times -->\nafter\n"
    again = accounts.render_blocks(text, tmp_path)
    assert "typed" not in again and "| `alpha` | 61 s; 3/1, 2/0 |" in again
    assert again.startswith("before\n<!-- times a -->\n") and again.endswith("<!-- /times -->\nafter\n")
    assert accounts.render_blocks(again, tmp_path) == again


def test_the_docs_time_tables_are_made_from_committed_runs():
    """docs/times.md names the runs; the site's build (docs/hooks.py) makes the tables from their run.json."""
    page = Path(__file__).resolve().parents[1] / "docs" / "times.md"
    block = accounts.BLOCK.search(page.read_text())
    assert block, "docs/times.md has no times block"
    runs = [page.parent / d for d in block.group(2).split()]
    assert runs and all((run / "run.json").is_file() for run in runs), [str(r) for r in runs]
    made = accounts.render_blocks(block.group(0), page.parent)
    assert made.count("| `view_copy` |") == 1 + len(runs)  # a row of the runs side by side, one per run split


def test_a_run_through_another_executor_says_which(tmp_path):
    folder = _run(tmp_path / "a", 100, 60.0, "warm")
    meta = json.loads((folder / "run.json").read_text())
    meta["invocations"] = [{"executor": {"name": "ray", "address": "local"}}]
    (folder / "run.json").write_text(json.dumps(meta))
    assert accounts.table([folder]).splitlines()[0] == "| notebook | Some GPU, warm, ray (a) |"
