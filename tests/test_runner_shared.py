"""The session-wide executed_notebook fixture runs a notebook once per parameter set, however many tests ask."""

from __future__ import annotations

import nbformat
import pytest

from yolo26kit import catalog

pytestmark = pytest.mark.notebook


def test_the_same_notebook_and_parameters_execute_once(executed_notebook, tmp_path, monkeypatch):
    nb_dir = tmp_path / "notebooks"
    nb_dir.mkdir()
    counter = tmp_path / "executions"
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell('results_path = ""\nrun_id = ""\nx = 1', metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(f"open({str(counter)!r}, 'a').write('x')\n"
                                  "from yolo26kit import findings\n"
                                  "f = findings.Findings('index_dtype', {'x': x}, run_id)\n"
                                  "f.results_path = results_path\nf.save()"),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(nb, nb_dir / "index_dtype.ipynb")
    monkeypatch.setattr(catalog, "NOTEBOOKS", nb_dir)
    inv = catalog.Investigation("index_dtype", "counts its executions", (), {"quick": {}})
    monkeypatch.setattr(catalog, "get", lambda name: inv)

    first = executed_notebook("index_dtype", x=2)
    again = executed_notebook("index_dtype", x=2)  # e.g. the browser test after the notebook test
    assert first == again and first["parameters"] == {"x": 2} and counter.read_text() == "x"
    assert (executed_notebook.run_dir("index_dtype", x=2) / "index_dtype.ipynb").exists()
    executed_notebook("index_dtype", x=3)  # other parameters: another execution
    assert counter.read_text() == "xx"
