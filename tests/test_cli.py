"""CLI: list/env work; bad input is one line on stderr, exit code 2, and nothing written."""

import json

import pytest

from yolo26kit import cli, env


def run_cli(capsys, *argv):
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_list_shows_parameters_and_profiles(capsys):
    code, out, _ = run_cli(capsys, "list")
    assert code == 0
    assert "index_dtype" in out and "imgsz: int = 320" in out and "profile quick" in out
    assert "results_path" not in out  # filled in by the runner, not a user parameter


def test_env_prints_fingerprint(capsys):
    code, out, _ = run_cli(capsys, "env")
    assert code == 0
    assert json.loads(out)["device_type"] in ("cpu", "cuda")


@pytest.mark.parametrize("argv, message", [
    (["run", "no_such_thing"], "no investigation named"),
    (["run", "index_dtype", "-p", "colour=red"], "unknown parameter"),
    (["run", "index_dtype", "-p", "imgsz=big"], "imgsz expects int"),
    (["run", "index_dtype", "-p", "imgsz=100"], "positive multiple of 32"),
    (["run", "index_dtype", "-p", "imgsz=-32"], "positive multiple of 32"),
    (["run", "index_dtype", "-p", "variants=legacy,fancy"], "unknown value"),
    (["run", "index_dtype", "-p", "results_path=x"], "unknown parameter"),
    (["run", "index_dtype", "-p", "novalue"], "KEY=VALUE"),
    (["run", "index_dtype", "--profile", "slow"], "unknown profile"),
    (["run"], "--all"),
])
def test_bad_input_exits_2_and_writes_nothing(capsys, tmp_path, argv, message):
    out_dir = tmp_path / "runs"
    code, out, err = run_cli(capsys, *argv, "--out", str(out_dir))
    assert code == 2
    assert message in err and err.count("\n") == 1
    assert not out_dir.exists()


@pytest.mark.skipif(env.cuda_available(), reason="this machine has a GPU")
def test_device_cuda_without_gpu_exits_2(capsys, tmp_path):
    code, _, err = run_cli(capsys, "run", "index_dtype", "--device", "cuda", "--out", str(tmp_path / "runs"))
    assert code == 2 and "no CUDA GPU" in err
    assert not (tmp_path / "runs").exists()


def test_parse_overrides_types_values():
    assert cli._parse_overrides(["imgsz=64", "autotune=True", "model=yolo26s", "step_timeout=1.5"]) == {
        "imgsz": 64, "autotune": True, "model": "yolo26s", "step_timeout": 1.5}


def test_build_plan_resolves_device_and_lists():
    plan = cli.build_plan(["index_dtype"], False, "quick", {"paths": "eager,export"}, "cpu")
    (inv, params), = plan
    assert params["paths"] == ["eager", "export"] and params["device"] == "cpu"
