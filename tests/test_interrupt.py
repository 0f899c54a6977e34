"""Stopping a run: SIGINT to the group, SIGTERM, SIGKILL of the parent, a notebook timeout, a crash; then --resume.

Two tiny fake investigations stand in for the real ones (their notebooks record a verdict, then finish, hang,
or crash as FAKE_MODE says), and `yolo26kit run` runs as a child process in its own process group, as it
would from a terminal. Every wait is bounded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import nbformat
import pytest

from yolo26kit import findings
from yolo26kit.bench import isolate

pytestmark = pytest.mark.notebook

LAUNCH = """\
import sys
from pathlib import Path
from yolo26kit import catalog, cli

if __name__ == "__main__":  # multiprocessing children import this file again
    catalog.NOTEBOOKS = Path(sys.argv[1])
    catalog._discover = lambda: None  # only the fake investigations below
    for name in ("index_dtype", "cuda_graphs"):
        catalog.register(catalog.Investigation(name, "fake " + name, (), {"quick": {}}))
    sys.exit(cli.main(sys.argv[2:]))
"""

# FAKE_MODE="name:mode,...": hang (sleeps, with a child process of its own) or crash (the kernel dies).
BODY = """\
import os, signal, subprocess, time
from yolo26kit import findings
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(NAME + "\\n")
found = findings.Findings(NAME, {}, run_id)
found.results_path = results_path
found.verdict(FIRST, "not_reproduced", "1 of 1 fake cases: recorded before the trouble")
from yolo26kit.bench import isolate
stamp = isolate.run_step(time.time, timeout=60, step="stamp").value  # a step: journaled by the runner
with open(os.environ["FAKE_LOG"] + "." + NAME + ".stamps", "a") as f:
    f.write(repr(stamp) + "\\n")
"""
TROUBLE = """\
mode = dict(p.split(":") for p in os.environ.get("FAKE_MODE", "").split(",") if p).get(NAME, "")
if mode:
    helper = subprocess.Popen(["sleep", "300"])
    with open(os.environ["FAKE_LOG"] + "." + NAME + ".pid", "w") as f:
        f.write(str(helper.pid))
if mode == "hang":
    time.sleep(300)
if mode == "crash":
    os.kill(os.getpid(), signal.SIGSEGV)
"""
REST = """\
for cid in REST:
    found.verdict(cid, "not_reproduced", "1 of 1 fake cases: recorded at the end")
found.save()
"""
CLAIMS = {
    "index_dtype": ["index_dtype.fx_int64", "index_dtype.gather_equivalent"],
    "cuda_graphs": ["cuda_graphs.item_skips", "cuda_graphs.int_enables"],
}


def notebook_of(name: str, notebook: Callable[..., nbformat.NotebookNode]) -> nbformat.NotebookNode:
    first, *rest = CLAIMS[name]
    return notebook(f"NAME = {name!r}\nFIRST = {first!r}\nREST = {rest!r}\n" + BODY, TROUBLE, REST)


class Kit:
    """The fake kit of one test: notebooks, launcher, output and cache folders, execution log."""

    def __init__(self, root: Path, notebook: Callable[..., nbformat.NotebookNode]) -> None:
        self.root = root
        self.notebooks = root / "notebooks"
        self.notebooks.mkdir()
        for name in CLAIMS:
            nbformat.write(notebook_of(name, notebook), self.notebooks / f"{name}.ipynb")
        self.launch = root / "launch.py"
        self.launch.write_text(LAUNCH)
        self.out = root / "runs"
        self.log = root / "executions.log"
        self.calls = 0

    def start(self, *argv: str, mode: str = "") -> subprocess.Popen:
        """`yolo26kit ARGV` in its own process group (like a terminal's foreground job); output to files."""
        self.calls += 1
        environment = {**os.environ, "FAKE_LOG": str(self.log), "FAKE_MODE": mode,
                       "YOLO26KIT_CACHE": str(self.root / "cache")}
        stdout = open(self.root / f"stdout.{self.calls}", "w")
        stderr = open(self.root / f"stderr.{self.calls}", "w")
        return subprocess.Popen([sys.executable, str(self.launch), str(self.notebooks), *argv], env=environment,
                                stdout=stdout, stderr=stderr, start_new_session=True)

    def output(self) -> str:
        return (self.root / f"stdout.{self.calls}").read_text()

    def executions(self) -> list[str]:
        return self.log.read_text().split() if self.log.exists() else []

    def run_dir(self) -> Path:
        dirs = [p for p in self.out.iterdir() if p.is_dir()]
        assert len(dirs) == 1, dirs
        return dirs[0]

    def helper_pid(self, name: str) -> int:
        return int(Path(f"{self.log}.{name}.pid").read_text())


@pytest.fixture
def kit(tmp_path: Path, notebook_of):
    started: list[subprocess.Popen] = []
    k = Kit(tmp_path, notebook_of)
    original = k.start

    def start(*argv: str, mode: str = "") -> subprocess.Popen:
        proc = original(*argv, mode=mode)
        started.append(proc)
        return proc

    k.start = start  # type: ignore[method-assign]
    yield k
    for proc in started:  # a failed test must not leave its runner behind
        if proc.poll() is None:
            isolate.kill_descendants(proc.pid)
            proc.kill()
            proc.wait(10)


def alive(pid: int) -> bool:
    """True for a live process (a zombie, already dead but not yet reaped, is not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def wait_for(check, timeout: float, what: str, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the run ended (rc {proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} after {timeout} s")
        time.sleep(0.2)


def judged(path: Path, claim: str) -> bool:
    try:
        return any(c["id"] == claim for c in json.loads(path.read_text())["claims"])
    except (OSError, ValueError, KeyError):
        return False


def hanging(kit: Kit, proc: subprocess.Popen, name: str) -> list[int]:
    """Wait until `name` has recorded its first verdict and started its helper; the runner's descendants then."""
    out = kit.out
    wait_for(lambda: out.exists() and any(judged(p, CLAIMS[name][0]) for p in out.glob(f"*/{name}.results.json"))
             and Path(f"{kit.log}.{name}.pid").exists(), 240, f"first verdict of {name}", proc)
    tree = isolate.descendants(proc.pid)
    assert kit.helper_pid(name) in tree  # the helper is a grandchild of the kernel: the tree walk sees it
    return tree


def assert_nothing_left(pids: list[int], within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [p for p in pids if alive(p)]
    assert not left, f"still running: {[Path(f'/proc/{p}/cmdline').read_bytes()[:80] for p in left if alive(p)]}"


def verdicts(path: Path) -> dict[str, dict]:
    return {c["id"]: c for c in findings.read_results(path)["claims"]}


def test_sigint_to_the_group_stops_everything_and_resume_finishes(kit: Kit) -> None:
    proc = kit.start("run", "index_dtype", "cuda_graphs", "--out", str(kit.out), "--jobs", "1",
                     mode="cuda_graphs:hang")
    tree = hanging(kit, proc, "cuda_graphs")
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in a terminal
    assert proc.wait(timeout=20) == 130
    assert time.monotonic() - t0 <= 10.0
    assert_nothing_left(tree + [kit.helper_pid("cuda_graphs")], within=2.0)

    run_dir = kit.run_dir()
    lines = kit.output().strip().splitlines()
    assert len(lines) == 1 and "1 of 2 notebooks finished (index_dtype)" in lines[0]
    assert f"--resume {run_dir}" in lines[0]
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["state"] == "interrupted" and meta["compile_cache"] in ("cold", "warm")
    states = {n["name"]: n for n in meta["notebooks"]}
    assert states["index_dtype"]["state"] == "done" and states["index_dtype"]["ok"]
    assert states["cuda_graphs"]["state"] == "interrupted" and not states["cuda_graphs"]["ok"]
    assert (run_dir / "index.html").exists() and (kit.out / "index.html").exists()  # the index of what finished
    assert "index_dtype.fx_int64" in (run_dir / "index.html").read_text()
    cg = verdicts(run_dir / "cuda_graphs.results.json")  # the verdict it had recorded is kept
    assert cg["cuda_graphs.item_skips"]["verdict"] == "not_reproduced"
    assert cg["cuda_graphs.int_enables"]["verdict"] == "error" and "SIGINT" in cg["cuda_graphs.int_enables"]["evidence"]
    finished_before = (run_dir / "index_dtype.results.json").read_text()

    proc = kit.start("run", "--resume", str(run_dir))  # no FAKE_MODE: the notebook now finishes
    assert proc.wait(timeout=300) == 0, (kit.root / f"stderr.{kit.calls}").read_text()[-2000:]
    assert kit.executions() == ["index_dtype", "cuda_graphs", "cuda_graphs"]  # index_dtype was not run again
    assert (run_dir / "index_dtype.results.json").read_text() == finished_before
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["state"] == "complete" and all(n["state"] == "done" for n in meta["notebooks"])
    assert len(meta["invocations"]) == 2 and meta["invocations"][1]["notebooks"] == ["cuda_graphs"]
    assert meta["wall_seconds"] >= sum(i["wall_seconds"] for i in meta["invocations"]) - 0.01
    assert {c["verdict"] for c in verdicts(run_dir / "cuda_graphs.results.json").values()} == {"not_reproduced"}
    assert "cuda_graphs.int_enables" in (run_dir / "index.html").read_text()


def test_sigterm_stops_concurrent_notebooks_with_143(kit: Kit) -> None:
    proc = kit.start("run", "index_dtype", "cuda_graphs", "--out", str(kit.out), "--jobs", "2",
                     mode="index_dtype:hang,cuda_graphs:hang")
    hanging(kit, proc, "index_dtype")
    tree = hanging(kit, proc, "cuda_graphs")
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)  # a CI timeout, a closed terminal
    assert proc.wait(timeout=20) == 143
    assert time.monotonic() - t0 <= 10.0
    assert_nothing_left(tree + [kit.helper_pid("index_dtype"), kit.helper_pid("cuda_graphs")], within=2.0)
    meta = json.loads((kit.run_dir() / "run.json").read_text())
    assert meta["state"] == "interrupted" and meta["invocations"][0]["signal"] == "SIGTERM"
    assert {n["state"] for n in meta["notebooks"]} == {"interrupted"}
    assert "SIGTERM" in kit.output()


def test_sigkill_of_the_parent_leaves_no_process(kit: Kit) -> None:
    proc = kit.start("run", "cuda_graphs", "--out", str(kit.out), mode="cuda_graphs:hang")
    tree = hanging(kit, proc, "cuda_graphs")
    proc.kill()
    proc.wait(10)
    assert_nothing_left(tree + [kit.helper_pid("cuda_graphs")], within=10.0)
    meta = json.loads((kit.run_dir() / "run.json").read_text())  # written at the start: says what was planned
    assert meta["state"] == "running" and meta["notebooks"][0]["state"] == "running"


def test_a_timeout_keeps_the_verdicts_already_recorded(kit: Kit) -> None:
    proc = kit.start("run", "cuda_graphs", "--out", str(kit.out), "--timeout", "60", mode="cuda_graphs:hang")
    tree = hanging(kit, proc, "cuda_graphs")
    assert proc.wait(timeout=120) == 1
    assert_nothing_left(tree + [kit.helper_pid("cuda_graphs")], within=5.0)
    run_dir = kit.run_dir()
    cg = verdicts(run_dir / "cuda_graphs.results.json")
    assert cg["cuda_graphs.item_skips"]["verdict"] == "not_reproduced"
    assert cg["cuda_graphs.int_enables"]["verdict"] == "error" and "timeout" in cg["cuda_graphs.int_enables"]["evidence"]
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["state"] == "complete" and meta["notebooks"][0]["state"] == "failed"
    assert "cuda_graphs.item_skips" in (run_dir / "index.html").read_text()


def test_a_crashed_kernel_keeps_verdicts_and_leaves_no_process(kit: Kit) -> None:
    proc = kit.start("run", "index_dtype", "cuda_graphs", "--out", str(kit.out), mode="cuda_graphs:crash")
    assert proc.wait(timeout=300) == 1
    run_dir = kit.run_dir()
    assert not alive(kit.helper_pid("cuda_graphs"))  # the kernel's own child, orphaned by the crash, was found
    cg = verdicts(run_dir / "cuda_graphs.results.json")
    assert cg["cuda_graphs.item_skips"]["verdict"] == "not_reproduced"
    assert cg["cuda_graphs.int_enables"]["verdict"] == "error"
    assert "died" in cg["cuda_graphs.int_enables"]["evidence"].lower()
    meta = json.loads((run_dir / "run.json").read_text())
    assert [n["state"] for n in meta["notebooks"]] == ["done", "failed"] and meta["state"] == "complete"
    index = (run_dir / "index.html").read_text()
    assert "index_dtype.fx_int64" in index and "cuda_graphs.item_skips" in index


def test_stop_after_ends_the_call_before_its_deadline_and_resume_finishes(kit: Kit) -> None:
    """`--stop-after 90`: the call ends within 90 s of its start with exit code 75, what finished is kept and
    indexed, the hanging notebook is resumable; `--resume --stop-after` then completes the run."""
    t0 = time.monotonic()
    proc = kit.start("run", "index_dtype", "cuda_graphs", "--out", str(kit.out), "--jobs", "1", "--stop-after", "90",
                     mode="cuda_graphs:hang")
    assert proc.wait(timeout=120) == 75, (kit.root / f"stderr.{kit.calls}").read_text()[-2000:]
    assert time.monotonic() - t0 < 90.0
    run_dir = kit.run_dir()
    line, = kit.output().strip().splitlines()
    assert line.startswith("stopped at the --stop-after deadline") and f"--resume {run_dir}" in line
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["state"] == "interrupted" and meta["reason"] == "stopped_at_deadline"
    assert meta["invocations"][0]["stop_after"] == 90 and meta["invocations"][0]["reason"] == "stopped_at_deadline"
    states = {n["name"]: n["state"] for n in meta["notebooks"]}
    assert states["cuda_graphs"] in ("interrupted", "pending") and states["index_dtype"] in ("done", "interrupted", "pending")
    if states["index_dtype"] == "done":  # finished before the deadline: kept and indexed
        assert "index_dtype.fx_int64" in (run_dir / "index.html").read_text()
    if states["cuda_graphs"] == "interrupted":
        assert "--stop-after 90" in json.loads((run_dir / "cuda_graphs.results.json").read_text())[
            "claims"][-1]["evidence"]

    proc = kit.start("run", "--resume", str(run_dir), "--stop-after", "400")  # no FAKE_MODE: it now finishes
    assert proc.wait(timeout=420) == 0, (kit.root / f"stderr.{kit.calls}").read_text()[-2000:]
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["state"] == "complete" and "reason" not in meta and all(n["state"] == "done" for n in meta["notebooks"])
    assert meta["invocations"][1]["stop_after"] == 400
    assert "cuda_graphs.int_enables" in (run_dir / "index.html").read_text()
    # The resumed notebook ran its cells again, but its step came back from the first call's journal.
    stamps = Path(f"{kit.log}.cuda_graphs.stamps").read_text().split()
    assert len(stamps) == 2 and stamps[0] == stamps[1]
    entry = next(n for n in meta["notebooks"] if n["name"] == "cuda_graphs")
    assert entry["reused_steps"] == 1
    assert not (run_dir / ".steps").exists()  # journals go once their notebooks end
