"""Commands that could surprise a newcomer refuse or clean up: `run --gpus` of GPUs this machine lacks, and
`stacks clean`, which frees the uv cache the stack installs filled and says how much the disk got back."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pytest

from yolo26kit import cli
from yolo26kit.matrix import stack_cache, stacks


@pytest.mark.parametrize("visible, asked, shown", [("", "0,1", "none"), ("0", "0,1", "GPUs 0")])
def test_gpus_this_machine_lacks_are_a_one_line_error_and_exit_2(capsys, tmp_path, monkeypatch, visible, asked, shown):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    out_dir = tmp_path / "runs"
    code = cli.main(["run", "index_dtype", "--gpus", asked, "--out", str(out_dir)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert f"--gpus {asked}: this machine has no GPU" in err and f"(it shows {shown})" in err
    assert not out_dir.exists()


def test_gpus_it_shows_pass_the_check(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert cli._gpus("1,0") == ["1", "0"]
    assert cli._gpus("0,5", on_this_machine=False) == ["0", "5"]  # a Ray cluster's nodes decide there


def _environment(envs: Path, name: str, cache_file: Path) -> None:
    """A stack environment whose one wheel file is a hard link into uv's cache, as uv installs it."""
    (envs / name / "lib").mkdir(parents=True)
    (envs / name / stacks.MARKER).write_text(json.dumps({"stack": {"pins": {"torch": "2.9.1"}}}))
    os.link(cache_file, envs / name / "lib" / cache_file.name)


def test_clean_of_every_stack_frees_the_uv_cache_and_counts_the_bytes_it_freed(tmp_path, capsys):
    cache = stacks.uv_cache_dir(tmp_path)
    (cache / "wheels").mkdir(parents=True)
    for name in ("torch.so", "numpy.so"):
        (cache / "wheels" / name).write_bytes(b"x" * 200_000)
    _environment(tmp_path, "torch2.9.1", cache / "wheels" / "torch.so")
    _environment(tmp_path, "torch2.10.0", cache / "wheels" / "numpy.so")
    assert [r["id"] for r in stack_cache.entries(tmp_path)] == ["torch2.10.0", "torch2.9.1"]  # the cache is no row

    removed, freed = stack_cache.remove(tmp_path, ["torch2.9.1"])
    assert removed == ["torch2.9.1"] and freed < 100_000  # its wheel stays in the cache for a reinstall
    assert cache.is_dir()

    stack_cache.main(argparse.Namespace(action="clean", ids=[], envs=str(tmp_path), measure=False))
    said = capsys.readouterr().out
    assert "removed 1 stack environment(s)" in said
    freed_mib = float(said.split(" freed")[0].split(", ")[-1].split()[0])
    assert freed_mib >= 0.38  # both cached wheels (2 × 200 KB), the one still linked included
    assert not cache.exists() and not (tmp_path / "torch2.10.0").exists()


def test_freed_bytes_count_a_file_only_when_every_link_goes(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "f").write_bytes(b"x" * 100_000)
    os.link(tmp_path / "a" / "f", tmp_path / "b" / "f")
    assert stacks.freed_bytes([tmp_path / "a"]) == 0
    assert stacks.freed_bytes([tmp_path / "a", tmp_path / "b"]) >= 100_000
