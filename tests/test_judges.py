"""Every registered judge is driven to each decisive verdict it can give, from synthetic measurements, and returns
the figure that answers the claim with it.

The cases live in tests/judge_cases/<investigation>.py (see its README). A judged claim must reach `confirmed` and
`refuted`, or its ledger entry must say in `unreachable` why one of them cannot be reached; a decisive case must
record the run's value of every condition the ledger names for the claim, so the conditions rule can apply.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from yolo26kit import catalog, findings
from yolo26kit.verdicts import DECISIVE, STATISTICS, Judgement, settle

CASES_DIR = Path(__file__).parent / "judge_cases"
MUST_REACH = ("confirmed", "refuted")


def cases_of(investigation: str) -> dict[str, dict[str, Any]]:
    """CASES of tests/judge_cases/<investigation>.py ({} when the file does not exist)."""
    path = CASES_DIR / f"{investigation}.py"
    if not path.exists():
        return {}
    spec = importlib.util.spec_from_file_location(f"judge_cases_{investigation}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CASES


def _all_cases() -> list[tuple[str, str, str, Any]]:
    return [(inv.name, claim_id, verdict, factory)
            for inv in catalog.all_investigations()
            for claim_id, by_verdict in cases_of(inv.name).items()
            for verdict, factory in by_verdict.items()]


def coverage_problems(investigation: str, cases: dict[str, dict[str, Any]]) -> list[str]:
    """Each judged claim × must-reach verdict with neither a case nor an `unreachable` reason in the ledger."""
    problems = []
    judges = catalog.judges_of(investigation)
    for entry in findings.judged_claims_of(investigation):
        unreachable = entry.get("unreachable", {})
        for verdict in MUST_REACH:
            has_case = verdict in cases.get(entry["id"], {})
            why = str(unreachable.get(verdict, "")).strip()
            if has_case and why:
                problems.append(f"{entry['id']}: a case reaches {verdict}, but the ledger calls it unreachable")
            elif not has_case and not why:
                problems.append(f"{entry['id']}: no case reaches {verdict} and the ledger gives no reason why not")
    problems += [f"{cid}: cases for a claim {investigation} does not judge" for cid in cases if cid not in judges]
    return problems


@pytest.mark.parametrize("investigation", [inv.name for inv in catalog.all_investigations()])
def test_every_judge_reaches_each_decisive_verdict_or_says_why_not(investigation: str) -> None:
    assert coverage_problems(investigation, cases_of(investigation)) == []


@pytest.mark.parametrize(("investigation", "claim_id", "expected", "factory"), _all_cases(),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_judge_case(investigation: str, claim_id: str, expected: str, factory: Any) -> None:
    judge = catalog.judges_of(investigation)[claim_id]
    judged = judge(factory())
    assert isinstance(judged, Judgement), claim_id
    seed = findings.ledger_entry(claim_id).get("conditions", {})
    final, record = settle(judged, seed)
    expected = expected.split(" (", 1)[0]  # "inconclusive (busy machine)": a second case for one verdict
    assert final.verdict == expected, f"{claim_id}: {final.verdict} ({final.evidence[:300]})"
    if expected in DECISIVE:
        assert set(seed) <= set(judged.run), f"{claim_id}: the run's conditions lack {sorted(set(seed) - set(judged.run))}"
        assert record["differ"] == [] or set(record["differ"]) <= set(judged.irrelevant)
        assert_figure(claim_id, final)


def assert_figure(claim_id: str, judged: Judgement) -> None:
    """A decided claim's judge returns its figure: a value, what it measures, its statistic (one of
    verdicts.STATISTICS) and the conditions it holds under, the device among them (as settled: the conditions the
    judge recorded for its run complete the figure's)."""
    figure = judged.figure
    assert figure is not None, f"{claim_id}: a decided claim without a figure"
    assert figure.value not in (None, "") and figure.measures, f"{claim_id}: {figure}"
    assert figure.statistic in STATISTICS, f"{claim_id}: statistic {figure.statistic!r}"
    assert figure.conditions.get("device"), f"{claim_id}: the figure's conditions name no device ({figure.conditions})"


def test_coverage_check_names_what_is_missing() -> None:
    inv = catalog.all_investigations()[0].name
    assert any("no case reaches confirmed" in p for p in coverage_problems(inv, {}))
