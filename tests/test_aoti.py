"""aoti: the package cache, and that loading through run_step works unchanged on a stack where it does not crash."""

from __future__ import annotations

import os

import pytest
import torch

from yolo26kit.bench import aoti_package as aoti, artifacts, isolate


class TwoOps(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x @ x.T) + 1


def build(package: str) -> tuple[str, bool]:
    program = torch.export.export(TwoOps(), (torch.randn(4, 4),))
    return aoti.compile_package(program, package)


def load_and_run(package: str) -> list[float]:
    x = torch.arange(16, dtype=torch.float32).reshape(4, 4) / 10
    out = aoti.load(package)(x)
    assert torch.allclose(out, TwoOps()(x))
    return out.flatten().tolist()


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    folder = tmp_path_factory.mktemp("aoti")
    cache = folder / "cache"
    built = isolate.run_step(build, str(folder / "p.pt2"), timeout=900, step="aoti compile",
                             env={artifacts.CACHE_ENV: str(cache)})
    assert built.ok, built.error + built.log[-2000:]
    assert built.value[1] is False  # an empty cache: compiled
    return built.value[0], cache


def test_load_runs_as_is_where_it_does_not_crash(package):
    outcomes = aoti.run_step(load_and_run, package[0], timeout=300, step="aoti load+run")
    assert [o.details["aoti_load"] for o in outcomes] == ["as_is"]
    assert outcomes[0].ok, outcomes[0].error
    assert aoti.last_ok(outcomes) is outcomes[0]
    assert aoti.outcome_row(outcomes[0])["aoti_load"] == "as_is"


def test_cached_package_is_reused_without_compiling(package, tmp_path, monkeypatch):
    _, cache = package
    assert len(list((cache / "aoti").glob("*.pt2"))) == 1
    monkeypatch.setenv(artifacts.CACHE_ENV, str(cache))

    def no_compile(*a, **k):
        raise AssertionError("compiled although the package was cached")

    monkeypatch.setattr(torch._inductor, "aoti_compile_and_package", no_compile)
    target = tmp_path / "again.pt2"
    assert build(str(target)) == (str(target), True) and target.stat().st_size > 0


def test_other_weights_miss_the_cache(package, monkeypatch):
    _, cache = package
    monkeypatch.setenv(artifacts.CACHE_ENV, str(cache))
    a = torch.export.export(torch.nn.Linear(3, 3), (torch.randn(2, 3),))
    torch.manual_seed(1)
    b = torch.export.export(torch.nn.Linear(3, 3), (torch.randn(2, 3),))
    assert aoti.program_key(a, None) != aoti.program_key(b, None)
    assert aoti.program_key(a, None) == aoti.program_key(a, None)
    assert aoti.program_key(a, None) != aoti.program_key(a, {"max_autotune": True})


def segfault() -> None:
    import ctypes

    ctypes.string_at(0)


def test_crash_without_known_cause_is_not_retried(monkeypatch):
    monkeypatch.setenv(isolate.FORENSICS_TIMEOUT_ENV, "120")
    outcomes = aoti.run_step(segfault, timeout=60, step="load that segfaults")
    assert len(outcomes) == 1 and outcomes[0].status == "crash"
    assert outcomes[0].details.get("cause", "") == ""
    assert os.path.exists(outcomes[0].details["trace_file"])


class WithScalarConstant(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("scale", torch.tensor(3))  # a 0-dim constant, as YOLO26's heads have

    def forward(self, x):
        return x * self.scale


def test_program_key_takes_zero_dim_constants():
    program = torch.export.export(WithScalarConstant(), (torch.randn(2),))
    assert len(aoti.program_key(program, None)) == 32


def test_load_crash_verdict_names_the_stack_it_rests_on():
    """A stack where nothing crashed says not_reproduced for itself, but cannot decide a claim about the stack the
    crash was seen on (another torch release): the conditions rule leaves it inconclusive and says why."""
    import importlib.util
    from pathlib import Path

    from yolo26kit import findings
    from yolo26kit.verdicts import settle

    aoti_judge = importlib.import_module("yolo26kit.investigations.aoti_load.judge")

    path = Path(__file__).parent / "judge_cases" / "aoti_load.py"
    spec = importlib.util.spec_from_file_location("judge_cases_aoti_load", path)
    cases = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cases)
    judged = aoti_judge.judge_load_crash_cause(cases._rows("ok", torch="2.14.1+cu130"))
    assert judged.verdict == "not_reproduced" and judged.run == {"device": "cpu", "torch": "2.14.1"}
    final, record = settle(judged, findings.ledger_entry(aoti_judge.CLAIM)["conditions"])
    assert final.verdict == "inconclusive" and record["differ"] == ["torch"]
    assert "torch is 2.14.1" in final.evidence


def test_load_study_keeps_its_table_apart_from_the_judge():
    """show.record_tables keeps the study's rows; the judge module records verdicts only and never imports show."""
    import ast
    from pathlib import Path

    import pandas as pd

    from yolo26kit.investigations import aoti_load

    kept = {}
    rows = pd.DataFrame([{"model": "two_ops", "step": "aoti compile two_ops/cpu", "status": "ok"}])
    aoti_load.record_tables(type("Found", (), {"table": lambda self, name, frame: kept.setdefault(name, frame)})(), rows)
    assert list(kept) == list(aoti_load.TABLES) == ["aoti_load"] and kept["aoti_load"] is rows
    tree = ast.parse((Path(aoti_load.__file__).parent / "judge.py").read_text())
    imported = [f"{n.module or ''}.{a.name}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names]
    assert not [m for m in imported if "show" in m.split(".")]


def test_program_key_ignores_the_order_of_range_constraints():
    """Their symbols come in string-hash order, which differs between processes: the key must not follow it."""
    h, w = torch.export.Dim("h", min=2, max=8), torch.export.Dim("w", min=2, max=8)
    program = torch.export.export(WithScalarConstant(), (torch.randn(4, 4),), dynamic_shapes=({0: h, 1: w},))
    key = aoti.program_key(program, None)
    assert len(program.range_constraints) == 2
    program._range_constraints = dict(reversed(list(program.range_constraints.items())))
    assert aoti.program_key(program, None) == key
    program._range_constraints = {k: v for k, v in list(program.range_constraints.items())[:1]}
    assert aoti.program_key(program, None) != key
