"""Shared fixtures: an offline ultralytics config and a helper that runs a notebook through papermill."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

# Before anything imports ultralytics: no network, no settings written outside a temp dir.
os.environ.setdefault("YOLO_OFFLINE", "1")
os.environ.setdefault("YOLO_AUTOINSTALL", "0")


@pytest.fixture
def run_notebook(tmp_path: Path):
    """Execute notebooks/<name>.ipynb with papermill and the given parameters; return its results.json."""
    from yolo26kit import catalog, findings
    from yolo26kit.run import runner

    def _run(name: str, timeout: float = 900, **params: Any) -> dict[str, Any]:
        inv = catalog.get(name)
        values = inv.resolve("quick", params)
        result = runner.execute(inv, values, tmp_path, run_id="test", timeout=timeout)
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
        from yolo26kit.run import runner

        inv = catalog.get(name)
        key = f"{inv.notebook}:{json.dumps(params, sort_keys=True, default=str)}"  # the notebook file, not only its name
        if key not in self.done:
            run_dir = self.root / f"{name}-{len(self.done)}"
            run_dir.mkdir(parents=True)
            self.done[key] = runner.execute(inv, inv.resolve("quick", params), run_dir, run_id="test", timeout=timeout)
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
