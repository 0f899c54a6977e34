"""Kernel start-up: concurrent notebooks never race for ports, and a kernel that dies before the first cell is
started again (recorded in run.json's `retries`), never turned into `error` verdicts."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import pytest

from yolo26kit import findings
from yolo26kit.run import notebook as notebook_run, runner

pytestmark = pytest.mark.notebook
ROUNDS = 3

# The kernel says how it was reached: its connection file (transport, socket path), then a results.json.
REPORT_CONNECTION = """\
import json
import os
import tempfile
from ipykernel.connect import get_connection_info
info = get_connection_info(unpack=True)
with open(results_path, "w") as f:
    json.dump({"schema": SCHEMA, "investigation": NAME, "transport": info["transport"], "ip": info["ip"],
               "claims": [], "tables": {}}, f)
"""


@pytest.fixture
def tiny_kit(fake_investigations):
    """Eight notebooks that import nothing of the kit: as light a kernel start as there is."""
    return {f"tiny{i}": fake_investigations(f"tiny{i}", f"NAME = 'tiny{i}'\nSCHEMA = {findings.SCHEMA!r}\n"
                                            + REPORT_CONNECTION, title="tiny") for i in range(8)}


def test_kernel_config_uses_ipc_sockets_in_the_given_folder(tmp_path):
    config = notebook_run.kernel_config(tmp_path)
    assert config.KernelManager.transport == "ipc" and config.KernelManager.ip == str(tmp_path / "kernel")


def test_eight_kernels_start_at_once_round_after_round(tiny_kit, tmp_path):
    """8 notebooks at once, ROUNDS rounds: every kernel starts, none retried, each on its own IPC sockets."""
    t0 = time.perf_counter()
    sockets_before = set(Path(tempfile.gettempdir()).glob("yolo26kit-kernel-*"))
    plan = [(inv, {}) for inv in tiny_kit.values()]
    for _ in range(ROUNDS):
        result = runner.run(plan, out=tmp_path / "runs", jobs=8, cache=tmp_path / "cache", render=False)
        meta = json.loads((result.run_dir / "run.json").read_text())
        assert result.state == "complete" and result.exit_code == 0, runner.summary(result)
        assert all(n["state"] == "done" and not n.get("retries") for n in meta["notebooks"]), meta["notebooks"]
        seen = [json.loads((result.run_dir / f"{n}.results.json").read_text()) for n in tiny_kit]
        assert {s["transport"] for s in seen} == {"ipc"}
        assert len({s["ip"] for s in seen}) == 8  # one socket folder per kernel: nothing to collide on
    assert set(Path(tempfile.gettempdir()).glob("yolo26kit-kernel-*")) <= sockets_before  # socket folders removed
    print(f"24 kernels in {time.perf_counter() - t0:.1f} s")


SITECUSTOMIZE = """\
import os
mark = os.environ.get("DIE_ONCE_MARK")
if mark and not os.path.exists(mark):  # the first Python started with this environment (the kernel) dies
    open(mark, "w").close()
    os._exit(3)
"""


def test_a_kernel_that_dies_before_its_first_cell_is_started_again(tiny_kit, tmp_path):
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SITECUSTOMIZE)
    mark = tmp_path / "died"

    child = {"PYTHONPATH": os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")]), "DIE_ONCE_MARK": str(mark)}
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    result = notebook_run.execute(tiny_kit["tiny0"], {}, run_dir, "r", timeout=300, env=child)
    assert mark.exists()  # the first kernel did die
    assert result.ok and result.state == "done", result.error
    assert len(result.retries) == 1 and "kernel did not start" in result.retries[0]["reason"]
    assert json.loads(result.results.read_text())["transport"] == "ipc"


def test_a_kernel_that_never_starts_is_left_for_resume_without_error_verdicts(tiny_kit, tmp_path, monkeypatch):
    """Twice dead before the first cell: `not_started` in run.json with both reasons, no results.json."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text("import os\nif os.environ.get('DIE_ALWAYS'):\n    os._exit(3)\n")

    path = os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")])
    monkeypatch.setattr(runner, "child_env", lambda *a: {"DIE_ALWAYS": "1", "PYTHONPATH": path})
    result = runner.run([(tiny_kit["tiny1"], {})], out=tmp_path / "runs", cache=tmp_path / "cache", render=False)
    meta = json.loads((result.run_dir / "run.json").read_text())
    entry = meta["notebooks"][0]
    assert entry["state"] == "not_started" and len(entry["retries"]) == 2, entry
    assert meta["state"] == "interrupted" and meta["reason"] == "kernel_not_started"
    assert result.exit_code == 1 and "--resume" in runner.summary(result)
    assert not (result.run_dir / "tiny1.results.json").exists()  # no `error` verdicts for a notebook that never ran
    assert runner.load(result.run_dir).unfinished() == ["tiny1"]
