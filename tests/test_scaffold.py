"""`yolo26kit new`: the scaffold writes a package, notebook, ledger, tests and judge cases that run and are judged."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from yolo26kit import conclusion
from yolo26kit.errors import BadParameter
from yolo26kit.run import scaffold

REPO = Path(__file__).resolve().parents[1]


def test_new_writes_every_piece_with_a_tagged_parameters_cell(tmp_path: Path) -> None:
    report = tmp_path / "report.txt"
    report.write_text("pasted bug report")
    written = scaffold.new("demo", "A demo", str(report), root=tmp_path)
    names = {p.relative_to(tmp_path).as_posix() for p in written}
    assert {"yolo26kit/investigations/demo/__init__.py", "yolo26kit/investigations/demo/judge.py",
            "yolo26kit/investigations/demo/show.py", "yolo26kit/investigations/demo/conclude.py",
            "notebooks/demo.ipynb", "data/claims/demo.json", "tests/test_demo.py", "tests/judge_cases/demo.py",
            "data/sources/demo.txt"} <= names
    nb = nbformat.read(tmp_path / "notebooks" / "demo.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].metadata["tags"] == ["parameters"] and not any(c.outputs for c in code)
    last_lines = [c.source.strip().splitlines()[-1] for c in code[1:]]
    assert not [line for line in last_lines if line.isidentifier()], last_lines  # no bare variable printed whole
    ledger = json.loads((tmp_path / "data" / "claims" / "demo.json").read_text())
    assert {e["source"] for e in ledger} == {"sources/demo.txt"}
    assert all(e["id"].startswith("demo.") for e in ledger)
    assert [e["id"] for e in ledger if e.get("bug")] == ["demo.compiled_matches_eager"]


def test_a_failed_new_leaves_nothing(tmp_path: Path) -> None:
    (tmp_path / "notebooks").write_text("a file where the notebooks folder should be")
    with pytest.raises(OSError):
        scaffold.new("demo", root=tmp_path)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["notebooks"]
    (tmp_path / "notebooks").unlink()
    assert len(scaffold.new("demo", root=tmp_path)) == 9  # the name is free again


def test_the_scaffolded_conclusion_speaks_of_its_own_claims(tmp_path: Path) -> None:
    scaffold.new("demo", root=tmp_path)
    spec = importlib.util.spec_from_file_location("yolo26kit.investigations.demo.conclude",
                                                  tmp_path / "yolo26kit" / "investigations" / "demo" / "conclude.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from yolo26kit.verdicts import count_figure, rounds_figure

    claims = [{"id": "demo.compiled_matches_eager", "verdict": "confirmed", "data": {"held": 2, "sizes": 2},
               "figure": count_figure(2, 2, "sizes match eager", "sizes", device="cpu").to_dict()},
              {"id": "demo.compiles_once", "verdict": "partly", "data": {"once": 1, "sizes": 2},
               "figure": count_figure(1, 2, "sizes compile once", "sizes", device="cpu").to_dict()},
              {"id": "demo.compiled_faster", "verdict": "refuted", "data": {"ratios": [1.1, 1.2, 1.0]},
               "figure": rounds_figure([1.1, 1.2, 1.0], "×", "eager over compiled", device="cpu").to_dict()}]
    by_q, figure = module.conclude(conclusion.View({"investigation": "demo", "claims": claims}))
    assert by_q["bites"] == "Compiled and eager agree: 2 of 2 sizes match eager (the claim holds)."
    assert by_q["cost"].startswith("Cost: 1 of 2 sizes compile once; the compiled subject runs at 1.1× (median of 3 "
                                   "rounds, 1–1.2×) eager's speed")
    assert figure == {"claim": "demo.compiled_faster"}  # the value is that claim's figure, filled in by the engine
    assert module.conclude(conclusion.View({"investigation": "demo", "claims": []}))[0] == {"bites": ""}


def _conclude_module(root: Path, name: str):
    spec = importlib.util.spec_from_file_location(f"yolo26kit.investigations.{name}.conclude",
                                                  root / "yolo26kit" / "investigations" / name / "conclude.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_error_kind_judges_disagreement_with_eager_and_times_nothing(tmp_path: Path) -> None:
    written = scaffold.new("mismatch", "Does compile change the dtype?", kind="error", root=tmp_path)
    assert len(written) == 9
    package = tmp_path / "yolo26kit" / "investigations" / "mismatch"
    measure, judge = (package / "measure.py").read_text(), (package / "judge.py").read_text()
    assert "torch.compile" in measure and "torch.export" in measure and "measure_rounds" not in measure + judge
    assert "band(" not in judge and "raised" in judge and "dtype" in judge
    ledger = json.loads((tmp_path / "data" / "claims" / "mismatch.json").read_text())
    assert [e["id"] for e in ledger] == ["mismatch.compile_disagrees", "mismatch.export_disagrees",
                                         "mismatch.fix_agrees"]
    assert [e["question"] for e in ledger] == ["bites", "bites", "fix"] and not any("band" in e for e in ledger)
    nb = nbformat.read(tmp_path / "notebooks" / "mismatch.ipynb", as_version=4)
    assert "min_run_time" not in "".join(c.source for c in nb.cells)
    module = _conclude_module(tmp_path, "mismatch")
    claims = [{"id": "mismatch.compile_disagrees", "verdict": "confirmed",
               "data": {"held": 1, "tried": 1, "how": ["returned torch.int64 where eager returns torch.float32"]}},
              {"id": "mismatch.export_disagrees", "verdict": "refuted", "data": {"held": 0, "tried": 1, "how": [""]}},
              {"id": "mismatch.fix_agrees", "verdict": "confirmed", "data": {"held": 2, "tried": 2}}]
    by_q, figure = module.conclude(conclusion.View({"investigation": "mismatch", "claims": claims}))
    assert by_q["bites"].startswith("torch.compile of the subject disagrees with eager at 1 of 1 sizes (it returned "
                                    "torch.int64 where eager returns torch.float32): the claim holds.")
    assert by_q["fix"] == "The fixed subject agrees with eager on 2 of 2 steps: the fix holds."
    assert figure["value"] == "1 of 1" and figure["claim"] == "mismatch.compile_disagrees"


def test_an_unknown_kind_is_bad_input_and_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(BadParameter, match="--kind 'speed': one of timing, error"):
        scaffold.new("demo", kind="speed", root=tmp_path)
    assert not list(tmp_path.iterdir())


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
@pytest.mark.parametrize("kind, claims", [
    ("timing", ["demo.compiled_matches_eager", "demo.compiles_once", "demo.compiled_faster"]),
    ("error", ["demo.compile_disagrees", "demo.export_disagrees", "demo.fix_agrees"])])
def test_a_new_investigation_runs_and_is_judged_in_a_clean_copy(tmp_path: Path, kind: str, claims: list[str]) -> None:
    files = subprocess.run(["git", "ls-files", "yolo26kit", "notebooks", "data", "tests/judge_cases", "tests/test_judges.py",
                            "tests/test_contract.py"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.split()
    for f in files:
        target = tmp_path / f
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((REPO / f).read_bytes())
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "YOLO_OFFLINE": "1", "YOLO_AUTOINSTALL": "0"}
    kit = [sys.executable, "-m", "yolo26kit"]
    subprocess.run([*kit, "new", "demo", "--kind", kind], cwd=tmp_path, env=env, check=True, capture_output=True)
    done = subprocess.run([*kit, "run", "demo", "--device", "cpu", "--out", str(tmp_path / "out"), "-p", "sizes=16"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (results,) = (tmp_path / "out").glob("*/demo.results.json")
    judged = json.loads(results.read_text())["claims"]
    assert json.loads(results.read_text())["tables"]["rows"][0]["size"] == 16
    assert [c["id"] for c in judged] == claims
    assert all(c["verdict"] != "error" and c["basis"] == "measured" and "conditions" in c for c in judged)
    cases = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "tests/test_judges.py", "tests/test_contract.py", "-k", "demo"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert cases.returncode == 0, cases.stdout[-2000:]


def _copy_of_the_checkout(tmp_path: Path, *tracked: str) -> Path:
    """The tracked files under `tracked` (as the working tree has them) copied into tmp_path/kit."""
    root = tmp_path / "kit"
    files = subprocess.run(["git", "ls-files", *tracked], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    for f in files:
        if (REPO / f).is_file():
            (root / f).parent.mkdir(parents=True, exist_ok=True)
            (root / f).write_bytes((REPO / f).read_bytes())
    return root


# the suite's checks that read every investigation, ledger or notebook, and need no committed run
WELL_FORMED = ["tests/test_findings.py::test_every_claims_file_is_well_formed",
               "tests/test_ledger.py::test_the_ledger_has_no_gaps",
               "tests/test_ledger.py::test_every_investigation_registers_judges",
               "tests/test_contract.py", "tests/test_lab.py"]


@pytest.mark.slow  # ~45 s per kind on 2 cores: pytest again in a copy of the checkout
@pytest.mark.parametrize("kind", ["timing", "error"])
def test_a_new_investigation_from_an_issue_url_passes_the_well_formedness_tests(tmp_path: Path, kind: str) -> None:
    """`yolo26kit new --source URL` (the form docs/authoring.md shows), before any run of it is committed."""
    root = _copy_of_the_checkout(tmp_path, "yolo26kit", "notebooks", "data", "tests", "pyproject.toml", "Makefile")
    env = {**os.environ, "PYTHONPATH": str(root), "YOLO_OFFLINE": "1", "YOLO_AUTOINSTALL": "0"}
    url = "https://github.com/pytorch/pytorch/issues/181097"
    made = subprocess.run([sys.executable, "-m", "yolo26kit", "new", "export_bug", "--source", url, "--kind", kind],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr[-2000:]
    assert {e["source"] for e in json.loads((root / "data" / "claims" / "export_bug.json").read_text())} == {url}
    pytest_in_copy = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not notebook"]
    for selection in (WELL_FORMED, ["tests/test_judges.py", "tests/test_export_bug.py", "-k", "export_bug or cpu"]):
        checks = subprocess.run([*pytest_in_copy, *selection], cwd=root, env=env, capture_output=True, text=True,
                                timeout=600)
        assert checks.returncode == 0, checks.stdout[-3000:]
        assert re.search(r"\b[1-9]\d* passed", checks.stdout), checks.stdout[-500:]
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                                "tests/test_lab.py"], cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert "[export_bug]" in collected.stdout  # the new notebook's save round trip was among the checks
