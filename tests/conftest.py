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
    from yolo26kit import catalog, findings, runner

    def _run(name: str, timeout: float = 900, **params: Any) -> dict[str, Any]:
        inv = catalog.get(name)
        values = inv.resolve("quick", params)
        result = runner.execute(inv, values, tmp_path, run_id="test", timeout=timeout)
        assert result.ok, f"{name} failed: {result.error}"
        return findings.read_results(result.results)

    return _run
