"""runner run directories and failure handling; report HTML pages from results on disk."""

import json
from datetime import datetime, timezone
from pathlib import Path

import nbformat
import pytest

from yolo26kit import catalog, findings, report, runner


def test_run_dirs_never_overwrite(tmp_path):
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    first, d1 = runner.new_run_dir(tmp_path, "cpu", now)
    second, d2 = runner.new_run_dir(tmp_path, "cpu", now)
    assert first.startswith("20260102T030405Z-") and first.endswith("-cpu")
    assert d1 != d2 and second == f"{first}-2" and d1.is_dir() and d2.is_dir()


@pytest.fixture
def broken_notebook(tmp_path, monkeypatch):
    """A one-cell investigation whose notebook raises after its parameters cell."""
    nb_dir = tmp_path / "notebooks"
    nb_dir.mkdir()
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell('x = 1\nresults_path = ""\nrun_id = ""', metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell('raise RuntimeError("the investigation broke")'),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(nb, nb_dir / "index_dtype.ipynb")
    monkeypatch.setattr(catalog, "NOTEBOOKS", nb_dir)
    return catalog.Investigation("index_dtype", "broken", ("000_60ebd1ee51d51957.txt",), {"quick": {}})


@pytest.mark.notebook
def test_failed_notebook_is_saved_with_error_verdicts(tmp_path, broken_notebook, monkeypatch):
    (tmp_path / "run").mkdir()
    monkeypatch.chdir(tmp_path)
    run_dir = Path("run")  # relative, as `--out reports` gives it: the notebook runs inside run_dir
    result = runner.execute(broken_notebook, {"x": 2}, run_dir, "r1", timeout=300)
    assert not result.ok and "the investigation broke" in result.error
    assert result.notebook.exists()  # papermill saved the executed notebook before raising
    data = findings.read_results(result.results)
    assert data["claims"] and all(c["verdict"] == "error" for c in data["claims"])


@pytest.mark.notebook
def test_relative_run_dir_still_gets_its_results(tmp_path, monkeypatch):
    """The notebook's cwd is the run directory: the results path handed to it must not be relative."""
    nb_dir = tmp_path / "notebooks"
    nb_dir.mkdir()
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell('results_path = ""\nrun_id = ""', metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell('from yolo26kit import findings\nfindings.Findings("index_dtype", {}, run_id).save(results_path)'),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(nb, nb_dir / "index_dtype.ipynb")
    monkeypatch.setattr(catalog, "NOTEBOOKS", nb_dir)
    monkeypatch.chdir(tmp_path)
    Path("run").mkdir()
    inv = catalog.Investigation("index_dtype", "writes results", ("000_60ebd1ee51d51957.txt",), {"quick": {}})
    result = runner.execute(inv, {}, Path("run"), "r2", timeout=300)
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
