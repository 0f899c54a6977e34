"""Shared fixtures: an offline ultralytics config and a helper that runs a notebook through papermill."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

# Before anything imports ultralytics: no network, no settings written outside a temp dir.
os.environ.setdefault("YOLO_OFFLINE", "1")
os.environ.setdefault("YOLO_AUTOINSTALL", "0")


PARAMETERS = 'results_path = ""\nrun_id = ""'  # the cell the runner fills in; a fake notebook needs no other


def fake_notebook(*cells: str, parameters: str = PARAMETERS) -> Any:
    """A notebook of a fake investigation: a tagged parameters cell, then one code cell per item of `cells`."""
    import nbformat

    return nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(parameters, metadata={"tags": ["parameters"]}),
               *(nbformat.v4.new_code_cell(c) for c in cells)],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})


@pytest.fixture
def notebook_of():
    """`fake_notebook` for tests that write notebooks where they need them."""
    return fake_notebook


@pytest.fixture
def fake_investigations(tmp_path: Path, monkeypatch):
    """`make(name, *cells, parameters=..., title=..., seeds=...)`: an investigation that is one fake notebook, in a
    notebooks folder of its own that the catalog reads instead of the kit's; catalog.get finds it by name."""
    import nbformat

    from yolo26kit import catalog

    folder = tmp_path / "notebooks"
    folder.mkdir()
    monkeypatch.setattr(catalog, "NOTEBOOKS", folder)
    made: dict[str, Any] = {}
    kit_get = catalog.get
    monkeypatch.setattr(catalog, "get", lambda name: made[name] if name in made else kit_get(name))

    def make(name: str, *cells: str, parameters: str = PARAMETERS, title: str = "fake", seeds: tuple = ()) -> Any:
        nbformat.write(fake_notebook(*cells, parameters=parameters), folder / f"{name}.ipynb")
        made[name] = catalog.Investigation(name, title, seeds, {"quick": {}})
        return made[name]

    return make


@pytest.fixture
def run_notebook(tmp_path: Path):
    """Execute notebooks/<name>.ipynb with papermill and the given parameters; return its results.json."""
    from yolo26kit import catalog, findings
    from yolo26kit.run import notebook as notebook_run

    def _run(name: str, timeout: float = 900, **params: Any) -> dict[str, Any]:
        inv = catalog.get(name)
        values = inv.resolve("quick", params)
        result = notebook_run.execute(inv, values, tmp_path, run_id="test", timeout=timeout)
        assert result.ok, f"{name} failed: {result.error}"
        return findings.read_results(result.results)

    return _run


class ExecutedNotebooks:
    """Notebooks executed once per test session and parameter set, shared by every test that asks for the same.

    `executed_notebook(name, **params)` returns the results.json data like `run_notebook`, but a second call with the
    same name and parameters (from a notebook test, a browser test or a report test) reuses the first execution
    instead of running the notebook again. `run_dir(name, **params)` is the folder holding that execution's
    executed notebook and results.json, for tests that render pages from it (copy it before changing anything).
    A failed execution fails every test that asks for it, with the notebook's error.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.done: dict[str, Any] = {}

    def execute(self, name: str, timeout: float = 900, **params: Any):
        import json

        from yolo26kit import catalog
        from yolo26kit.run import notebook as notebook_run

        inv = catalog.get(name)
        key = f"{inv.notebook}:{json.dumps(params, sort_keys=True, default=str)}"  # the notebook file, not only its name
        if key not in self.done:
            run_dir = self.root / f"{name}-{len(self.done)}"
            run_dir.mkdir(parents=True)
            self.done[key] = notebook_run.execute(inv, inv.resolve("quick", params), run_dir, run_id="test", timeout=timeout)
        result = self.done[key]
        assert result.ok, f"{name} failed: {result.error}"
        return result

    def __call__(self, name: str, timeout: float = 900, **params: Any) -> dict[str, Any]:
        from yolo26kit import findings

        return findings.read_results(self.execute(name, timeout, **params).results)

    def run_dir(self, name: str, timeout: float = 900, **params: Any) -> Path:
        return self.execute(name, timeout, **params).results.parent


@pytest.fixture(scope="session")
def executed_notebook(tmp_path_factory) -> ExecutedNotebooks:
    """Session-wide: each notebook runs once per parameter set (see ExecutedNotebooks); a drop-in for run_notebook."""
    return ExecutedNotebooks(tmp_path_factory.mktemp("executed"))


def _worker_failure(worker_error: Exception) -> tuple[str, str]:
    """The error line and traceback a step records when Inductor's autotuning block fails in a compile worker, made
    with the installed torch's own SubprocException (its message carries the worker's traceback)."""
    import traceback

    from torch._inductor.compile_worker.subproc_pool import SubprocException

    try:
        raise worker_error
    except Exception:
        details = traceback.format_exc()
    try:
        try:
            raise SubprocException(details, name="triton_poi_fused_gather_0")
        except Exception as e:
            raise RuntimeError(f"Failed to run autotuning code block: {e}") from e
    except RuntimeError as e:
        return f"InductorError: RuntimeError: {str(e).splitlines()[0]}", traceback.format_exc()


@pytest.fixture
def worker_failure():
    """worker_failure(exc) -> (error, traceback): a step's record of `exc` raised in an Inductor compile worker."""
    return _worker_failure


@pytest.fixture
def triton_float_offset_error() -> Exception:
    """Triton's own CompilationError for a float32 index used as a pointer offset, as a compile worker raises it."""
    import ast

    from triton.compiler.errors import CompilationError

    src = "def kernel(in_ptr1, tmp13):\n    tmp15 = tl.load(in_ptr1 + (tl.broadcast_to(tmp13, [XBLOCK])))\n"
    node = ast.parse(src).body[0].body[0].value.args[0]
    return CompilationError(src, node, "IncompatibleTypeErrorImpl('invalid operands of type pointer<int64> and "
                                       "triton.language.float32')")
