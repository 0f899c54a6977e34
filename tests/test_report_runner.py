"""runner run directories and failure handling; report HTML pages from results on disk."""

import json
import os
import shutil
import signal
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from yolo26kit import catalog, env, findings, paths
from yolo26kit.bench import isolate
from yolo26kit.report import pages as report
from yolo26kit.run import notebook as notebook_run, runner


def test_run_dirs_never_overwrite(tmp_path):
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    first, d1 = paths.new_run_dir(tmp_path, "cpu", now=now)
    second, d2 = paths.new_run_dir(tmp_path, "cpu", now=now)
    assert first.startswith("20260102T030405Z-") and first.endswith("-cpu")
    assert d1 != d2 and second == f"{first}-2" and d1.is_dir() and d2.is_dir()


@pytest.fixture
def broken_notebook(fake_investigations):
    """A one-cell investigation whose notebook raises after its parameters cell."""
    return fake_investigations("index_dtype", 'raise RuntimeError("the investigation broke")',
                               parameters='x = 1\nresults_path = ""\nrun_id = ""', title="broken",
                               seeds=("000_60ebd1ee51d51957.txt",))


@pytest.mark.notebook
def test_failed_notebook_is_saved_with_error_verdicts(tmp_path, broken_notebook, monkeypatch):
    (tmp_path / "run").mkdir()
    monkeypatch.chdir(tmp_path)
    run_dir = Path("run")  # relative, as `--out reports` gives it: the notebook runs inside run_dir
    result = notebook_run.execute(broken_notebook, {"x": 2}, run_dir, "r1", timeout=300)
    assert not result.ok and "the investigation broke" in result.error
    assert result.notebook.exists()  # papermill saved the executed notebook before raising
    data = findings.read_results(result.results)
    assert data["claims"] and all(c["verdict"] == "error" for c in data["claims"])


@pytest.mark.notebook
def test_relative_run_dir_still_gets_its_results(tmp_path, monkeypatch, fake_investigations):
    """The notebook's cwd is the run directory: the results path handed to it must not be relative."""
    inv = fake_investigations("index_dtype", 'from yolo26kit import findings\n'
                              'findings.Findings("index_dtype", {}, run_id).save(results_path)',
                              title="writes results", seeds=("000_60ebd1ee51d51957.txt",))
    monkeypatch.chdir(tmp_path)
    Path("run").mkdir()
    result = notebook_run.execute(inv, {}, Path("run"), "r2", timeout=300)
    assert result.ok, result.error
    assert (tmp_path / "run" / "index_dtype.results.json").exists()
    assert findings.read_results(tmp_path / "run" / "index_dtype.results.json")["run_id"] == "r2"


def _fake_run(root, name, device_type, verdict):
    run_dir = root / name
    run_dir.mkdir(parents=True)
    found = findings.Findings("index_dtype", {"imgsz": 320}, run_id=name)
    found.environment = {**found.environment, "device_type": device_type}
    found.verdict("index_dtype.gather_equivalent", verdict, f"200/200 identical on {device_type}")
    found.table("status", [{"variant": "legacy", "path": "eager", "status": "✅"}])
    found.save(run_dir / "index_dtype.results.json")
    return run_dir


def test_run_page_and_index_show_verdicts_side_by_side(tmp_path):
    cpu = _fake_run(tmp_path, "20260101T000000Z-a-cpu", "cpu", "confirmed")
    _fake_run(tmp_path, "20260102T000000Z-b-cuda", "cuda", "refuted")
    page = report.render_run(cpu, notebooks=False).read_text()
    assert 'id="verdicts"' in page and "index_dtype.gather_equivalent" in page
    assert "200/200 identical on cpu" in page and 'class="verdict confirmed"' in page
    assert "status" in page and "legacy" in page  # the status matrix table
    index = report.render_index(tmp_path).read_text()
    assert index.index("20260102T000000Z-b-cuda") < index.index("20260101T000000Z-a-cpu")  # newest first
    assert 'class="verdict refuted"' in index and 'class="verdict confirmed"' in index
    assert "20260101T000000Z-a-cpu/index.html" in index


def test_find_runs_ignores_folders_without_results(tmp_path):
    (tmp_path / "empty").mkdir()
    _fake_run(tmp_path, "r", "cpu", "confirmed")
    assert [p.name for p in report.find_runs(tmp_path)] == ["r"]
    json.loads((tmp_path / "r" / "index_dtype.results.json").read_text())


# --- the batch: cache, concurrency, run.json, resume ------------------------------------------------------


def test_cache_is_cold_then_warm_and_off_is_temporary(tmp_path, monkeypatch):
    monkeypatch.delenv("YOLO26KIT_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert paths.default_cache_dir() == tmp_path / "xdg" / "yolo26kit"
    cold = runner.open_cache(tmp_path / "c")
    assert cold.state == "cold"
    (tmp_path / "c" / "device.lock").write_text("")  # the lock alone does not make a cache warm
    (tmp_path / "c" / "vec_isa.json").write_text("{}")  # nor the CPU ISA the runner's step server picked
    assert runner.open_cache(tmp_path / "c").state == "cold"
    (tmp_path / "c" / paths.MATRIX_ENVS / "torch2.14" / "lib").mkdir(parents=True)
    (tmp_path / "c" / paths.MATRIX_ENVS / "torch2.14" / "lib" / "torch.py").write_text("")
    assert runner.open_cache(tmp_path / "c").state == "cold"  # nor the matrix's stack environments beside it
    (tmp_path / "c" / "inductor" / "fxgraph").mkdir(parents=True)
    (tmp_path / "c" / "inductor" / "fxgraph" / "entry").write_text("x")
    warm = runner.open_cache(tmp_path / "c")
    assert warm.state == "warm"
    assert warm.child_env() == {"YOLO26KIT_CACHE": str(warm.root), "TORCHINDUCTOR_CACHE_DIR": str(warm.root / "inductor"),
                                "TRITON_CACHE_DIR": str(warm.root / "triton")}
    off = runner.open_cache(enabled=False)
    assert off.state == "off" and off.root.is_dir() and off.child_env()["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] == "1"
    off.close()
    assert not off.root.exists()
    assert not paths.default_cache_dir().is_relative_to(paths.REPORTS.parent)  # outside the repository


def test_jobs_and_compile_threads():
    assert runner.default_jobs("cuda", 7) == 7 and runner.default_jobs("cpu", 7) == 1
    assert runner.compile_threads(7, cores=16) == 2 and runner.compile_threads(4, cores=2) == 1
    assert runner.compile_threads(1, cores=16) == 16


def test_child_env_points_every_cache_and_the_lock(tmp_path, monkeypatch):
    from yolo26kit.bench import timing

    monkeypatch.delenv("TORCHINDUCTOR_COMPILE_THREADS", raising=False)
    values = runner.child_env(runner.CompileCache(tmp_path, "cold"), tmp_path / "run", jobs=2)
    assert values[timing.DEVICE_LOCK_ENV] == str(tmp_path / "device.lock")
    assert values["TRITON_CACHE_DIR"] == str(tmp_path / "triton") and values["YOLO26KIT_CACHE"] == str(tmp_path)
    assert int(values["TORCHINDUCTOR_COMPILE_THREADS"]) == runner.compile_threads(2)
    assert values[isolate.SLOTS_ENV] == f"{tmp_path / 'slots'}:{runner.step_slots()}"
    assert runner.child_env(runner.CompileCache(tmp_path, "cold"), tmp_path, 2, slots=5)[isolate.SLOTS_ENV].endswith(":5")
    monkeypatch.setenv("TORCHINDUCTOR_COMPILE_THREADS", "3")  # the user's own setting wins
    assert "TORCHINDUCTOR_COMPILE_THREADS" not in runner.child_env(runner.CompileCache(tmp_path, "cold"), tmp_path, 2)


def _stopped_run(tmp_path, environment=None, states=("done", "interrupted")):
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    meta = {"run_id": "r", "environment": environment or env.fingerprint(), "state": "interrupted",
            "notebooks": [{"name": n, "state": s, "ok": s == "done", "seconds": 1.0, "error": "", "parameters": {}}
                          for n, s in zip(("cdmaskformer_mask", "index_dtype"), states)],
            "invocations": []}
    (run_dir / "run.json").write_text(json.dumps(meta))
    return run_dir


def test_resume_refuses_another_environment(tmp_path):
    run_dir = _stopped_run(tmp_path, {**env.fingerprint(), "torch": "0.0.1", "kit": "0.0.0+gdeadbee"})
    with pytest.raises(runner.ResumeRefused, match=r"environment differs.*kit.*torch"):
        runner.resume(run_dir)
    assert sorted(p.name for p in run_dir.iterdir()) == ["run.json"]  # nothing written


def test_resume_refuses_a_complete_run_and_a_non_run(tmp_path):
    with pytest.raises(runner.ResumeRefused, match="complete"):
        runner.resume(_stopped_run(tmp_path, states=("done", "failed")))
    with pytest.raises(runner.ResumeRefused, match="not a run directory"):
        runner.resume(tmp_path / "nowhere")


def test_unfinished_notebooks_are_what_resume_runs(tmp_path):
    batch = runner.load(_stopped_run(tmp_path, states=("failed", "pending")))
    assert batch.unfinished() == ["index_dtype"]


def test_environment_differences_name_the_keys():
    assert runner.environment_differences({"a": 1, "b": 2}, {"a": 1, "b": 3, "c": 4}) == {"b": (2, 3), "c": (None, 4)}


def test_exit_codes():
    ok = notebook_run.NotebookRun("a", True, 1.0, Path("a.ipynb"), Path("a.results.json"))
    bad = notebook_run.NotebookRun("b", False, 1.0, Path("b.ipynb"), Path("b.results.json"), "boom", "failed")
    assert runner.RunResult(Path("."), [ok], "complete").exit_code == 0
    assert runner.RunResult(Path("."), [ok, bad], "complete").exit_code == 1
    assert runner.RunResult(Path("."), [ok], "interrupted", int(signal.SIGINT)).exit_code == 130
    assert runner.RunResult(Path("."), [ok], "interrupted", int(signal.SIGTERM)).exit_code == 143


def test_tagged_finds_a_process_by_its_environment(tmp_path):
    tag = f"test/{tmp_path.name}"
    proc = subprocess.Popen(["sleep", "30"], env={**os.environ, notebook_run.TAG_ENV: tag})
    try:
        # Popen may return (vfork) before the kernel has published the new program's environment: give it a moment
        deadline = time.monotonic() + 5
        while notebook_run.tagged(tag) != [proc.pid] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert notebook_run.tagged(tag) == [proc.pid] and notebook_run.tagged(tag + "x") == []
        assert notebook_run.sweep(tag) == [proc.pid]
        assert proc.wait(10) == -signal.SIGKILL
    finally:
        proc.kill()


@pytest.mark.notebook
def _one_notebook(make, code: str = "") -> catalog.Investigation:
    """A one-cell investigation (named index_dtype) that runs `code`, then saves its results."""
    return make("index_dtype", code + '\nfrom yolo26kit import findings\nf = findings.Findings("index_dtype", {}, run_id)\n'
                'f.results_path = results_path\nf.save()', title="writes results")


def test_a_crash_leaves_its_trace_file_and_no_crash_site_notes(tmp_path, fake_investigations):
    inv = _one_notebook(fake_investigations, "import ctypes\nfrom yolo26kit.bench import isolate\n"
                        "out = isolate.run_step(ctypes.string_at, 0, timeout=60, step='reads address 0')\n"
                        "assert out.status == 'crash', out.row()")
    result = runner.run([(inv, {})], out=tmp_path / "runs", cache=tmp_path / "cache", render=False)
    assert result.state == "complete" and result.exit_code == 0, runner.summary(result)
    assert [p.name for p in result.run_dir.glob("reads_address_0.*.crash.txt")]
    assert not (result.run_dir / isolate.CRASH_SITES).exists()
    entry = json.loads((result.run_dir / "run.json").read_text())["notebooks"][0]
    logged = [(s["step"], s["phase"]) for s in entry["steps"]]  # what held step slots, as run.json keeps it
    assert ("reads address 0", "other") in logged and ("reads address 0", "forensics") in logged
    assert all(0 <= s["start_s"] <= entry["seconds"] and s["seconds"] >= 0 for s in entry["steps"])


def test_a_local_run_writes_only_ignored_files(tmp_path, fake_investigations):
    """`make report` must leave a clean tree: the run and the index of local runs are ignored by git."""
    inv = _one_notebook(fake_investigations)
    shared_index = paths.REPORTS / "index.html"
    before = shared_index.stat().st_mtime_ns if shared_index.exists() else None
    result = runner.run([(inv, {})], cache=tmp_path / "cache")
    try:
        assert result.state == "complete" and result.exit_code == 0, runner.summary(result)
        assert result.run_dir.parent == paths.DEFAULT_OUT and result.index == paths.DEFAULT_OUT / "index.html"
        written = [*result.run_dir.iterdir(), result.index]
        ignored = subprocess.run(["git", "-C", str(paths.REPORTS.parent), "check-ignore", *map(str, written)],
                                 capture_output=True, text=True).stdout.split()
        assert sorted(ignored) == sorted(map(str, written))
        assert (shared_index.stat().st_mtime_ns if shared_index.exists() else None) == before
        meta = json.loads((result.run_dir / "run.json").read_text())
        assert meta["state"] == "complete" and meta["compile_cache"] == "cold" and meta["wall_seconds"] > 0
        assert meta["notebooks"][0]["parameters"] == {} and set(meta["notebooks"][0]["time_split"]) >= {"wall"}
    finally:
        shutil.rmtree(result.run_dir)
        report.render_index(paths.DEFAULT_OUT)


def test_run_names_its_cache_to_the_step_server_before_it_starts(tmp_path, monkeypatch):
    from yolo26kit import cli
    from yolo26kit.bench import isolate

    monkeypatch.delenv("YOLO26KIT_CACHE", raising=False)
    seen = []
    monkeypatch.setattr(isolate, "start_server_soon", lambda: seen.append(os.environ.get("YOLO26KIT_CACHE")))
    # refused (--jobs 0) after the server started: exit 2
    assert cli.main(["run", "--all", "--jobs", "0", "--cache", str(tmp_path / "c")]) == 2
    assert cli.main(["run", "--all", "--jobs", "0", "--no-cache"]) == 2
    assert seen == [str((tmp_path / "c").resolve()), None]
    assert "YOLO26KIT_CACHE" not in os.environ  # the caller's environment as it was
