"""`yolo26kit matrix` on a fake checkout: two stacks that need no install (this interpreter under two names), a
stack whose pin does not exist, the local and the Ray executor giving the same matrix.

The fake checkout is a copy of the kit with one tiny investigation instead of the real ones: its notebook
records two claims, one of which reads which stack it runs on (the compile-cache folder the matrix gives each
stack), so the verdict changes between the two stacks and the "first change" is exercised end to end.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from yolo26kit.matrix import plan as matrix

KIT = Path(__file__).resolve().parents[1]
NAME = "fake_claims"
LEDGER = [
    {"id": "fake.same", "source": "kit", "question": "bites", "claim": "The same on every stack."},
    {"id": "fake.changes", "source": "kit", "question": "fix", "claim": "Holds on stack b only."},
    {"id": "fake.gpu", "source": "kit", "question": "other", "claim": "Needs a GPU to judge."},
]
MODULE = """from yolo26kit import catalog
catalog.register(catalog.Investigation("fake_claims", "fake claims", (), {"quick": {}}))
"""
BODY = """import os
from yolo26kit import findings
found = findings.start("fake_claims", globals())
found.verdict("fake.same", "confirmed", "the same everywhere")
on_b = "here-b" in os.environ.get("YOLO26KIT_CACHE", "")
found.verdict("fake.changes", "confirmed" if on_b else "refuted", "stack b" if on_b else "not stack b")
found.verdict("fake.gpu", "needs_cuda", "no GPU")
found.save()
"""
# Stacks named die-*: the notebook kills the Ray worker that runs its cell (die-once: only the first time).
DIE = """import os, signal
from pathlib import Path
cache = os.environ.get("YOLO26KIT_CACHE", "")
stack = next((p for p in Path(cache).parts if p.startswith("die-")), "")
marker = Path(os.environ["PYTHONPATH"].split(os.pathsep)[0]) / f"died-{stack}"
if stack and not (stack == "die-once" and marker.exists()):
    marker.write_text("x")
    pid = os.getpid()
    while pid > 1:
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::"):  # the worker's title: ray::_ray_cell
            os.kill(pid, signal.SIGKILL)
            break
"""
STACKS = {"stacks": [{"id": "here-a", "interpreter": "current", "note": "this interpreter"},
                     {"id": "here-b", "interpreter": "current", "note": "this interpreter again"},
                     {"id": "bogus", "pins": {"torch": "0.0.1-no-such-release"}, "default": False},
                     {"id": "die-once", "interpreter": "current", "default": False},
                     {"id": "die-always", "interpreter": "current", "default": False}],
          "series": {"demo": ["here-a", "here-b"]}}


def make_checkout(root: Path) -> Path:
    """A copy of the kit's package and pyproject with only the fake investigation, its notebook and ledger."""
    shutil.copytree(KIT / "yolo26kit", root / "yolo26kit",
                    ignore=shutil.ignore_patterns("__pycache__", "_revision.txt"))
    investigations = root / "yolo26kit" / "investigations"
    shutil.rmtree(investigations)
    investigations.mkdir()
    (investigations / "__init__.py").write_text("")
    (investigations / f"{NAME}.py").write_text(MODULE)
    (root / "notebooks").mkdir()
    nbformat.write(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell('results_path = ""\nrun_id = ""\ndevice = "cpu"', metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(DIE), nbformat.v4.new_code_cell(BODY)],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}),
        root / "notebooks" / f"{NAME}.ipynb")
    (root / "data" / "claims").mkdir(parents=True)
    (root / "data" / "claims" / f"{NAME}.json").write_text(json.dumps(LEDGER))
    (root / "data" / "stacks.json").write_text(json.dumps(STACKS))
    shutil.copy(KIT / "pyproject.toml", root / "pyproject.toml")
    return root


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    return make_checkout(tmp_path_factory.mktemp("kit"))


@pytest.fixture(scope="module")
def local(checkout: Path, tmp_path_factory) -> tuple[Path, dict]:
    """The two-stack matrix with the local executor (shared by the tests that compare with it)."""
    stacks, series = matrix.load_stacks(checkout / "data" / "stacks.json")
    return matrix.run_matrix(matrix.choose(stacks, ["here-a", "here-b"]), series, [NAME],
                             out=tmp_path_factory.mktemp("out"), envs=tmp_path_factory.mktemp("envs"),
                             kit_root=checkout, log=lambda s: None)


def test_stacks_file_lists_consecutive_torch_releases_and_both_sides_of_the_gather_change():
    stacks, series = matrix.load_stacks()
    default = [s for s in stacks if s.default]
    torch = [s.pins["torch"] for s in default if s.id in series["torch"]]
    assert torch == ["2.12.1", "2.13.0", "2.14.1", "2.15.0"]
    assert all(s.pins.get("executorch") for s in default)
    assert {s.pins["ultralytics"] for s in default} >= {"8.4.112", "8.4.113"}


@pytest.mark.notebook
def test_two_stacks_give_one_table_with_the_first_change(local):
    folder, m = local
    on_disk = json.loads((folder / "matrix.json").read_text())
    assert on_disk["claims"] == m["claims"]
    assert [s["id"] for s in m["stacks"]] == ["here-a", "here-b"]
    assert all(s["state"] == "ok" and s["environment"]["torch"] for s in m["stacks"])
    assert m["claims"] == {"fake.same": {"here-a": "confirmed", "here-b": "confirmed"},
                           "fake.changes": {"here-a": "refuted", "here-b": "confirmed"}}
    assert m["not_judged"] == {"fake.gpu": "needs_cuda on every stack that ran it"}
    assert m["changes"]["fake.same"] == {"demo": None}
    assert m["changes"]["fake.changes"]["demo"]["stack"] == "here-b"
    page = (folder / "matrix.html").read_text()
    for cell in m["cells"]:
        assert cell["state"] == "done", cell
        run_page = folder / "cells" / cell["stack"] / NAME / cell["run"] / "index.html"
        assert run_page.exists()
        assert f'href="cells/{cell["stack"]}/{NAME}/{cell["run"]}/index.html#claim-fake.changes"' in page
    assert 'class="changed"' in page
    (entry,) = matrix.listing(folder.parent)
    assert entry["href"] == f"{folder.name}/matrix.html" and entry["changed"] == ["fake.changes"]


def test_a_stack_that_cannot_be_installed_is_a_row_with_the_reason(checkout, tmp_path):
    stacks, series = matrix.load_stacks(checkout / "data" / "stacks.json")
    bogus = matrix.choose(stacks, ["bogus"])
    folder, m = matrix.run_matrix(bogus, series, [NAME], out=tmp_path / "out", envs=tmp_path / "envs",
                                  kit_root=checkout, log=lambda s: None)
    (row,) = m["stacks"]
    assert row["state"] == "install_failed"
    assert "uv" in row["reason"] and "torch" in row["reason"], row["reason"]
    assert m["cells"] == [] and m["claims"] == {}
    assert "install_failed" in (folder / "matrix.html").read_text()


@pytest.mark.notebook
def test_ray_executor_gives_the_same_matrix_as_local(local, checkout, tmp_path):
    pytest.importorskip("ray")
    stacks, series = matrix.load_stacks(checkout / "data" / "stacks.json")
    folder, m = matrix.run_matrix(matrix.choose(stacks, ["here-a", "here-b"]), series, [NAME],
                                  out=tmp_path / "out", envs=tmp_path / "envs", kit_root=checkout,
                                  executor=matrix.RayExecutor(log=lambda s: None, address=""), log=lambda s: None)
    assert m["run"]["executor"] == "ray"
    assert matrix.comparable(m) == matrix.comparable(local[1])
    for cell in m["cells"]:  # the workers' run folders came back
        assert (folder / "cells" / cell["stack"] / NAME / cell["run"] / f"{NAME}.results.json").exists()


def test_clean_removes_the_environments(tmp_path):
    (tmp_path / "envs" / "s1" / "bin").mkdir(parents=True)
    (tmp_path / "envs" / "s1" / "bin" / "python").write_bytes(b"x" * 10000)
    removed, freed = matrix.clean(tmp_path / "envs")
    assert removed == [tmp_path / "envs" / "s1"] and freed >= 10000
    assert not (tmp_path / "envs").exists()


def test_changes_skip_stacks_without_a_verdict():
    claims = {"c": {"a": "refuted", "c": "refuted", "d": "confirmed"}}
    found = matrix.changes(claims, {"s": ["a", "b", "c", "d"]})
    assert found == {"c": {"s": {"stack": "d", "from": "refuted", "to": "confirmed", "after": "c"}}}


def test_parameters_go_to_the_investigations_that_have_them(checkout):
    assert matrix.split_params(["device=cpu"], [NAME], checkout) == {NAME: ["device=cpu"]}
    with pytest.raises(matrix.MatrixError):
        matrix.split_params(["nope=1"], [NAME], checkout)


def test_matrix_subcommand_is_on_the_command_line():
    done = subprocess.run([sys.executable, "-m", "yolo26kit", "matrix", "--stacks", "no-such-stack"],
                          cwd=KIT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "unknown stack" in done.stderr


@pytest.mark.notebook
def test_a_cell_whose_ray_worker_dies_is_run_again_once_then_failed(checkout, tmp_path):
    pytest.importorskip("ray")
    stacks, series = matrix.load_stacks(checkout / "data" / "stacks.json")
    folder, m = matrix.run_matrix(matrix.choose(stacks, ["die-once", "die-always"]), series, [NAME],
                                  out=tmp_path / "out", envs=tmp_path / "envs", kit_root=checkout,
                                  executor=matrix.RayExecutor(log=lambda s: None, address=""), log=lambda s: None)
    once, always = m["cells"]
    assert once["state"] == "done" and m["claims"]["fake.same"]["die-once"] == "confirmed"
    assert always["state"] == "failed" and "died 2 times" in always["error"], always
    assert m["claims"]["fake.same"]["die-always"] == "error"


class _Recording(matrix.LocalExecutor):
    """Prepares stacks as the local executor does; runs nothing: records the cells asked for, or is interrupted."""

    def __init__(self, interrupt: bool = False) -> None:
        super().__init__(log=lambda s: None)
        self.asked: list[str] = []
        self.interrupt = interrupt

    def run(self, cells, rows, matrix_dir, kit_root, envs, timeout):
        self.asked = [c.key for c in cells]
        if self.interrupt:
            raise KeyboardInterrupt
        return [{**matrix.asdict(c), "state": "done", "error": "", "seconds": 1.0, "run": None,
                 "verdicts": {"fake.same": "refuted"}} for c in cells]


@pytest.mark.notebook
def test_resume_runs_only_the_cells_that_did_not_finish(local, checkout, tmp_path):
    folder, first = local
    again = tmp_path / folder.name
    shutil.copytree(folder, again)
    (again / "cells" / "here-b" / NAME / matrix.CELL_RECORD).unlink()  # as if stopped while here-b ran
    stacks, series = matrix.load_stacks(checkout / "data" / "stacks.json")
    chosen = matrix.choose(stacks, ["here-a", "here-b"])
    recording = _Recording()
    _, resumed = matrix.run_matrix(chosen, series, [NAME], out=tmp_path, envs=tmp_path / "envs", kit_root=checkout,
                                   executor=recording, resume=again, log=lambda s: None)
    assert recording.asked == [f"here-b/{NAME}/cpu"]
    assert resumed["claims"]["fake.same"] == {"here-a": "confirmed", "here-b": "refuted"}
    assert resumed["state"] == "complete" and resumed["run"]["calls"] == 2


@pytest.mark.notebook
def test_an_interrupted_matrix_keeps_its_finished_cells_and_says_so(local, checkout, tmp_path):
    folder, _ = local
    again = tmp_path / folder.name
    shutil.copytree(folder, again)
    (again / "cells" / "here-b" / NAME / matrix.CELL_RECORD).unlink()
    stacks, series = matrix.load_stacks(checkout / "data" / "stacks.json")
    _, stopped = matrix.run_matrix(matrix.choose(stacks, ["here-a", "here-b"]), series, [NAME], out=tmp_path,
                                   envs=tmp_path / "envs", kit_root=checkout, executor=_Recording(interrupt=True),
                                   resume=again, log=lambda s: None)
    assert stopped["state"] == "interrupted"
    assert stopped["claims"]["fake.changes"] == {"here-a": "refuted"}
    assert json.loads((again / matrix.PLAN).read_text())["stacks"] == ["here-a", "here-b"]
