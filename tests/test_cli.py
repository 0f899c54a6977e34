"""CLI: list/env work; bad input is one line on stderr, exit code 2, and nothing written."""

import os
import json
import re
import subprocess

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


@pytest.mark.parametrize("argv, message", [
    (["run", "index_dtype", "--jobs", "0"], "--jobs"),
    (["run", "index_dtype", "--step-slots", "0"], "--step-slots"),
    (["run", "index_dtype", "--cache", "x", "--no-cache"], "exclude each other"),
    (["run", "index_dtype", "--timeout", "0"], "--timeout"),
    (["run", "--resume", "somewhere", "index_dtype"], "drop NAME"),
    (["run", "--resume", "somewhere", "-p", "imgsz=64"], "drop -p"),
    (["run", "--resume", "no/such/run"], "not a run directory"),
])
def test_bad_run_options_exit_2(capsys, tmp_path, argv, message):
    code, _, err = run_cli(capsys, *argv)
    assert code == 2 and message in err and err.count("\n") == 1


def test_a_refused_run_leaves_no_step_server():
    from multiprocessing import forkserver

    from yolo26kit.bench import isolate

    isolate.stop_server()
    assert cli.main(["run", "index_dtype", "--jobs", "0"]) == 2
    assert getattr(forkserver._forkserver, "_forkserver_pid", None) is None


def test_resume_of_another_environment_exits_2_in_one_line(capsys, tmp_path):
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    (run_dir / "run.json").write_text(json.dumps({
        "run_id": "r", "environment": {**env.fingerprint(), "kit": "0.0.0+g0000000"}, "state": "interrupted",
        "notebooks": [{"name": "index_dtype", "state": "interrupted", "ok": False, "parameters": {}}]}))
    code, out, err = run_cli(capsys, "run", "--resume", str(run_dir))
    assert code == 2 and "environment differs" in err and "kit" in err and err.count("\n") == 1 and not out
    assert sorted(p.name for p in run_dir.iterdir()) == ["run.json"]


def test_kit_revision_names_the_commit():
    revision = env.fingerprint()["kit"]
    assert re.fullmatch(r"\d+\.\d+\.\d+\+g[0-9a-f]{7}(\.dirty)?", revision), revision


def test_a_copy_without_git_reads_the_stamp(tmp_path, monkeypatch):
    stamp = tmp_path / "_revision.txt"
    written = env.write_stamp(stamp)
    assert stamp.read_text().strip() == written == env.git_revision()
    monkeypatch.setattr(env, "ROOT", tmp_path)  # no .git here
    monkeypatch.setattr(env, "STAMP", stamp)
    assert env.git_revision() is None and env._kit_revision() == written
    stamp.unlink()
    assert env._kit_revision() == env.__version__


def test_an_untracked_investigation_makes_the_revision_dirty(tmp_path, monkeypatch):
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=k", "-c", "user.email=k@k", *args], check=True,
                       capture_output=True)

    (tmp_path / "yolo26kit").mkdir()
    (tmp_path / "yolo26kit" / "cli.py").write_text("")
    git("init", "-q")
    git("add", "yolo26kit")
    git("commit", "-q", "-m", "kit")
    monkeypatch.setattr(env, "ROOT", tmp_path)
    assert not env.git_revision().endswith(".dirty")
    (tmp_path / "yolo26kit" / "investigations" / "demo").mkdir(parents=True)
    (tmp_path / "yolo26kit" / "investigations" / "demo" / "measure.py").write_text("x = 1\n")
    assert env.git_revision().endswith(".dirty")


def test_stamp_command_writes_the_revision(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(env, "STAMP", tmp_path / "_revision.txt")
    code, out, _ = run_cli(capsys, "stamp")
    assert code == 0 and (tmp_path / "_revision.txt").read_text().strip() in out


def test_stamp_file_and_local_runs_are_ignored_by_git():
    root = env.ROOT
    paths = ["yolo26kit/_revision.txt", "reports/runs/index.html", "reports/runs/interactive/x.results.json"]
    ignored = subprocess.run(["git", "-C", str(root), "check-ignore", *paths], capture_output=True, text=True).stdout
    assert ignored.split() == paths


# --- bad input and hygiene, tried as a new user would --------------------------------------------------------


@pytest.mark.skipif(env.cuda_available(), reason="this machine has a GPU")
@pytest.mark.parametrize("argv", [["run", "cdmaskformer_mask", "-p", "device=cuda"],
                                  ["run", "aoti_load", "-p", "device=cuda"],
                                  ["run", "--all", "-p", "device=cuda"]])
def test_a_device_parameter_asking_for_cuda_without_gpu_exits_2(capsys, tmp_path, argv):
    code, out, err = run_cli(capsys, *argv, "--out", str(tmp_path / "runs"))
    assert code == 2 and "no CUDA GPU" in err and "device='cuda" in err and err.count("\n") == 1 and not out
    assert not (tmp_path / "runs").exists()


def test_asks_for_cuda_reads_device_names_and_lists():
    assert cli.asks_for_cuda("device", "cuda") and cli.asks_for_cuda("devices", ["cpu", "cuda:1"])
    assert cli.asks_for_cuda("export_device", "CUDA")
    assert not cli.asks_for_cuda("device", "auto") and not cli.asks_for_cuda("backends", ["et_cuda"])


def test_out_naming_a_file_exits_2_and_writes_nothing(capsys, tmp_path):
    target = tmp_path / "afile"
    target.write_text("keep me")
    for out in (target, target / "sub"):
        code, _, err = run_cli(capsys, "run", "index_dtype", "--device", "cpu", "--out", str(out))
        assert code == 2 and "is a file" in err and err.count("\n") == 1
    assert target.read_text() == "keep me" and sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_out_in_a_folder_that_cannot_be_written_exits_2(capsys, tmp_path):
    # /proc refuses new folders even to root (a chmod 555 folder does not stop root)
    code, _, err = run_cli(capsys, "run", "index_dtype", "--device", "cpu", "--out", "/proc/yolo26kit-runs")
    assert code == 2 and "cannot write in /proc" in err and err.count("\n") == 1
    assert not __import__("os").path.exists("/proc/yolo26kit-runs")


@pytest.mark.parametrize("damage", ['{"schema": 1, "claims": [', "", '{"schema": 99}', "[1, 2]"])
def test_report_of_a_corrupted_results_json_exits_2_and_writes_nothing(capsys, tmp_path, damage):
    run_dir = tmp_path / "runs" / "20260101T000000Z-a-cpu"
    run_dir.mkdir(parents=True)
    (run_dir / "index_dtype.results.json").write_text(damage)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    code, out, err = run_cli(capsys, "report", str(run_dir))
    assert code == 2 and "index_dtype.results.json: not a readable results.json" in err
    assert err.count("\n") == 1 and not out
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # no index.html anywhere


@pytest.mark.parametrize("make", ["missing", "empty"])
def test_no_notebooks_is_an_error_for_list_and_run_all(capsys, tmp_path, monkeypatch, make):
    from yolo26kit import catalog

    folder = tmp_path / "notebooks"
    if make == "empty":
        folder.mkdir()
    monkeypatch.setattr(catalog, "NOTEBOOKS", folder)
    for argv in (["list"], ["run", "--all", "--out", str(tmp_path / "runs")]):
        code, out, err = run_cli(capsys, *argv)
        assert code == 2 and "no investigation has a notebook" in err and err.count("\n") == 1 and not out
    assert not (tmp_path / "runs").exists()


def test_results_and_run_json_are_written_0644_under_umask_022(tmp_path):
    import os

    from yolo26kit import findings

    old = os.umask(0o022)
    try:
        findings.write_json(tmp_path / "a.results.json", {"x": 1})
        os.umask(0o077)
        findings.write_json(tmp_path / "run.json", {"x": 1})
    finally:
        os.umask(old)
    assert (tmp_path / "a.results.json").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "run.json").stat().st_mode & 0o777 == 0o600  # the umask is respected


@pytest.mark.parametrize("argv, message", [
    (["repro", "no.such_finding"], "no finding named 'no.such_finding'"),
    (["repro"], "name a finding"),
    (["repro", "--check", "."], "no repro.py"),
    (["bisect", "no.such_claim", "--over", "torch"], "unknown claim"),
    (["bisect", "index_dtype.split_copy_viewed", "--over", "torch"], "--from V --to V"),
    (["bisect", "aoti.load_crash_cause", "--over", "torch", "--from", "2.15", "--to", "2.9"], "runs backwards"),
    (["matrix", "--stacks", "no_such_stack"], "unknown stack"),
])
def test_every_subcommand_says_bad_input_in_the_same_one_line_on_stderr_with_exit_2(capsys, argv, message):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("yolo26kit: error: ") and message in err and err.count("\n") == 1


def test_a_relative_pythonpath_is_read_against_the_folder_the_command_started_in(monkeypatch, tmp_path):
    """Kernels and steps run in other folders: PYTHONPATH=tests must still name the checkout's tests/."""
    from yolo26kit import cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["tests", "/abs/dir"]))
    cli.absolute_pythonpath()
    assert os.environ["PYTHONPATH"] == os.pathsep.join([str(tmp_path / "tests"), "/abs/dir"])
