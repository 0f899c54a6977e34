"""`yolo26kit new`: the scaffold writes a package, notebook, ledger, tests and judge cases that run and are judged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from yolo26kit.run import scaffold
from yolo26kit.errors import BadParameter

REPO = Path(__file__).resolve().parents[1]


def test_new_writes_every_piece_with_a_tagged_parameters_cell(tmp_path: Path) -> None:
    report = tmp_path / "report.txt"
    report.write_text("pasted bug report")
    written = scaffold.new("demo", "A demo", str(report), root=tmp_path)
    names = {p.relative_to(tmp_path).as_posix() for p in written}
    assert {"yolo26kit/investigations/demo/__init__.py", "yolo26kit/investigations/demo/judge.py",
            "yolo26kit/investigations/demo/show.py",
            "notebooks/demo.ipynb", "data/claims/demo.json", "tests/test_demo.py", "tests/judge_cases/demo.py",
            "data/sources/demo.txt"} <= names
    nb = nbformat.read(tmp_path / "notebooks" / "demo.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].metadata["tags"] == ["parameters"] and not any(c.outputs for c in code)
    ledger = json.loads((tmp_path / "data" / "claims" / "demo.json").read_text())
    assert {e["source"] for e in ledger} == {"sources/demo.txt"}
    assert all(e["id"].startswith("demo.") for e in ledger)


def test_new_refuses_bad_or_taken_names(tmp_path: Path) -> None:
    for bad in ("Demo", "1demo", "de-mo", "class"):
        with pytest.raises(BadParameter):
            scaffold.new(bad, root=tmp_path)
    scaffold.new("demo", root=tmp_path)
    with pytest.raises(BadParameter, match="exists already"):
        scaffold.new("demo", root=tmp_path)
    with pytest.raises(BadParameter, match="neither kit"):
        scaffold.new("other", source="no/such/file.md", root=tmp_path)


@pytest.mark.notebook
def test_a_new_investigation_runs_and_is_judged_in_a_clean_copy(tmp_path: Path) -> None:
    files = subprocess.run(["git", "ls-files", "yolo26kit", "notebooks", "data", "tests/judge_cases", "tests/test_judges.py",
                            "tests/test_contract.py"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.split()
    for f in [*files, "yolo26kit/scaffold.py"]:
        target = tmp_path / f
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((REPO / f).read_bytes())
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "YOLO_OFFLINE": "1", "YOLO_AUTOINSTALL": "0"}
    kit = [sys.executable, "-m", "yolo26kit"]
    subprocess.run([*kit, "new", "demo"], cwd=tmp_path, env=env, check=True, capture_output=True)
    done = subprocess.run([*kit, "run", "demo", "--device", "cpu", "--out", str(tmp_path / "out"), "-p", "sizes=16"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (results,) = (tmp_path / "out").glob("*/demo.results.json")
    claims = json.loads(results.read_text())["claims"]
    assert json.loads(results.read_text())["tables"]["rows"][0]["size"] == 16
    assert [c["id"] for c in claims] == ["demo.compiled_matches_eager", "demo.compiled_faster"]
    assert all(c["verdict"] != "error" and c["basis"] == "measured" and "conditions" in c for c in claims)
    cases = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "tests/test_judges.py", "tests/test_contract.py", "-k", "demo"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert cases.returncode == 0, cases.stdout[-2000:]
