"""The verdict rules every judge shares: the rounds rule against a band, all/none/some, and the seed-conditions rule."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from yolo26kit import findings, verdicts
from yolo26kit.verdicts import (MARGIN, Figure, Finding, Judgement, all_none_some, band, band_decision, combine,
                                differing, pooled_decision, rounds_until_decided, settle, stability,
                                unmet)


def test_band_decides_by_a_two_thirds_majority_with_the_median() -> None:
    assert band([3.1, 3.4, 3.5], 2.0, 4.0) == "confirmed"
    assert band([1.2, 1.3], 2.0, 4.0) == "refuted"
    assert band([4.5, 9.0], 2.0, 4.0) == "refuted"  # outside on either side counts as outside
    assert band([1.9, 2.4], 2.0, 4.0) == "inconclusive"  # straddles the lower edge
    assert band([], 2.0, 4.0) == "inconclusive"


def test_one_outlier_round_cannot_flip_or_block_a_verdict() -> None:
    # the warm H100 mask rounds against the seed's 3.5x: four far below, one near the band
    assert band([1.22, 3.03, 1.47, 1.23, 1.22], 3.5, 6.0) == "refuted"
    assert band([2.5, 2.6, 2.4, 2.7, 9.0], 2.0, 5.0) == "confirmed"
    assert band([1.9, 2.1, 1.8, 2.2, 2.05], 2.0, 5.0) == "inconclusive"  # 3 inside, 2 outside: too close


def test_band_decision_waits_for_enough_rounds() -> None:
    assert band_decision([3.0, 3.1], 2.0, 4.0, min_rounds=5) is None
    assert band_decision([3.0, 3.1, 2.9, 3.2, 3.3], 2.0, 4.0, min_rounds=5) == "confirmed"


def test_rounds_go_on_until_they_decide_or_reach_the_cap() -> None:
    clear = iter([3.0] * 20)
    assert len(rounds_until_decided(lambda: next(clear), 2.0, 4.0)) == 5
    straddle = iter([1.9, 2.1] * 20)
    assert len(rounds_until_decided(lambda: next(straddle), 2.0, 4.0, max_rounds=15)) == 15
    late = iter([1.9, 2.1, 1.9, 2.1, 1.9, 2.1, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0])
    rounds = rounds_until_decided(lambda: next(late), 2.0, 4.0)
    assert 5 < len(rounds) < 15 and band(rounds, 2.0, 4.0) == "confirmed"


@settings(deadline=None)  # a pure function; a loaded 2-core machine must not fail it on time
@given(st.lists(st.floats(0.01, 100), min_size=1, max_size=15))
def test_band_follows_the_majority_and_the_median(rounds: list[float]) -> None:
    inside = sum(2.0 <= r <= 4.0 for r in rounds)
    clear_inside = sum(2.0 * (1 + MARGIN) <= r <= 4.0 * (1 - MARGIN) for r in rounds)
    clear_outside = sum(r < 2.0 * (1 - MARGIN) or r > 4.0 * (1 + MARGIN) for r in rounds)
    verdict = band(rounds, 2.0, 4.0)
    if clear_inside == len(rounds):
        assert verdict == "confirmed"
    elif clear_outside == len(rounds):
        assert verdict == "refuted"
    elif verdict == "confirmed":
        assert inside >= 2 / 3 * len(rounds)
    elif verdict == "refuted":
        assert len(rounds) - inside >= 2 / 3 * len(rounds)


def test_all_none_some() -> None:
    assert all_none_some(5, 5) == "confirmed"
    assert all_none_some(0, 5) == "refuted"
    assert all_none_some(2, 5) == "partly"
    assert all_none_some(0, 0) == "inconclusive"


def test_conditions_compare_what_the_run_recorded() -> None:
    seed = {"imgsz": 640, "backend": "executorch-cuda defaults", "device": ["cuda"]}
    assert differing(seed, {"imgsz": 640, "backend": "ExecuTorch-CUDA defaults"}) == []
    assert differing(seed, {"imgsz": 320, "device": "cuda"}) == ["imgsz"]
    assert differing({"imgsz": [320, 640]}, {"imgsz": [640, 320]}) == []
    assert differing({"imgsz": [640]}, {"imgsz": [320, 640]}) == ["imgsz"]
    assert differing({"torch": {"min": "1.11", "max": "2.0.1"}}, {"torch": "2.0.0+cu117"}) == []
    assert differing({"torch": {"min": "1.11", "max": "2.0.1"}}, {"torch": "2.11.0+cu130"}) == ["torch"]
    assert differing({"imgsz": {"min": 320}}, {"imgsz": 640}) == []


@pytest.mark.parametrize("verdict", ["confirmed", "refuted", "partly", "not_reproduced"])
def test_a_decisive_verdict_under_other_conditions_is_inconclusive(verdict: str) -> None:
    final, record = settle(Judgement(verdict, "it failed.", run={"imgsz": 320}), {"imgsz": 640})
    assert final.verdict == "inconclusive"
    assert "imgsz is 320, the seed's 640" in final.evidence
    assert final.data["verdict_under_run_conditions"] == verdict
    assert record == {"seed": {"imgsz": 640}, "run": {"imgsz": 320}, "differ": ["imgsz"]}


def test_a_condition_shown_not_to_matter_keeps_the_verdict() -> None:
    why = "the op is the same at every size"
    final, record = settle(Judgement("confirmed", "x", run={"imgsz": 320}, irrelevant={"imgsz": why}), {"imgsz": 640})
    assert final.verdict == "confirmed"
    assert record["irrelevant"] == {"imgsz": why}
    assert final.evidence == f"x — this run's imgsz is 320, the seed's 640, which does not matter here: {why}"


def test_undecided_verdicts_pass_through() -> None:
    final, record = settle(Judgement("needs_cuda", "no GPU", run={"device": "cpu"}), {"device": "cuda"})
    assert final.verdict == "needs_cuda" and record["differ"] == ["device"]


def test_findings_record_basis_and_conditions(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = {"id": "demo.claim", "source": "kit", "claim": "it bites at 640", "conditions": {"imgsz": 640}}
    monkeypatch.setattr(findings, "seed_claims", lambda: {"demo.claim": entry})
    monkeypatch.setattr(findings, "judged_claims_of", lambda _inv: [entry])
    found = findings.Findings("demo", {})
    claim = found.verdict("demo.claim", Judgement("confirmed", "bit", basis="derived", run={"imgsz": 320}))
    assert (claim.verdict, claim.basis) == ("inconclusive", "derived")
    assert claim.conditions["differ"] == ["imgsz"]
    assert found.verdict("demo.claim", "error", "broke").basis == "none"
    saved = found.to_dict()["claims"][0]
    assert {"basis", "conditions"} <= set(saved)


def test_combine_one_verdict_from_its_parts():
    assert combine(["confirmed", "confirmed"]) == "confirmed" and combine(["refuted"]) == "refuted"
    assert combine(["confirmed", "refuted"]) == "partly" and combine(["confirmed", "partly"]) == "partly"
    assert combine([]) == "inconclusive" and combine(["confirmed", "inconclusive"]) == "inconclusive"
    assert combine(["partly"], expected=2) == "inconclusive"  # a part that gave no verdict leaves it open


def test_a_median_at_a_band_edge_stays_undecided_instead_of_flipping() -> None:
    # five rounds a hair either side of the 3.5x edge: noise, not evidence; without the margin these flipped
    assert band([3.45, 3.52, 3.48, 3.55, 3.47], 3.5, 6.0) == "inconclusive"
    assert band([3.45, 3.52, 3.48, 3.55, 3.47], 2.0, 3.5) == "inconclusive"
    # clear of the edge by more than the margin, the same rounds decide
    assert band([3.0, 3.1, 2.9, 3.05, 3.02], 3.5, 6.0) == "refuted"


def test_a_split_batch_is_undecided_by_its_resamples() -> None:
    # three rounds far inside, two far outside: the median is inside but a resample puts it outside too often
    rounds = [2.5, 2.6, 2.7, 1.0, 1.1]
    assert stability(rounds, 2.0, 5.0)["inside"] < 0.9
    assert band(rounds, 2.0, 5.0) == "inconclusive"


def test_the_same_rounds_always_give_the_same_verdict() -> None:
    rounds = [2.1, 2.3, 1.95, 2.2, 2.4, 2.05, 2.15]
    assert len({band(rounds, 2.0, 5.0) for _ in range(20)}) == 1
    assert stability(rounds, 2.0, 5.0) == stability(list(reversed(rounds)), 2.0, 5.0)


def _pooled_mean(rounds: list[list[float]]) -> float:
    values = [v for r in rounds for v in r]
    return sum(values) / len(values)


def test_a_pooled_statistic_decides_where_its_rounds_agree_and_waits_where_one_round_carries_it() -> None:
    steady = [[0.8, 0.85, 0.9]] * 6
    assert pooled_decision(steady, _pooled_mean, 1.0, float("inf"))[0] == "refuted"
    assert pooled_decision(steady, _pooled_mean, 0.5, 1.0)[0] == "confirmed"
    # a hair below the edge: inside the margin, undecided
    assert pooled_decision([[0.98, 0.99]] * 6, _pooled_mean, 1.0, float("inf"))[0] is None
    # five rounds far below, one far above: the mean of all lies below, but resamples of whole rounds cross over
    carried = [[0.7]] * 5 + [[2.0]]
    verdict, shares = pooled_decision(carried, _pooled_mean, 1.0, float("inf"))
    assert verdict is None and shares["outside"] < 0.9 and shares["value"] < 1.0
    # too few rounds; and the same rounds always give the same answer (a fixed seed)
    assert pooled_decision(steady[:2], _pooled_mean, 1.0, float("inf"), min_rounds=5)[0] is None
    assert pooled_decision(carried, _pooled_mean, 1.0, float("inf")) == \
        pooled_decision(carried, _pooled_mean, 1.0, float("inf"))


@pytest.mark.parametrize("verdict", ["confirmed", "refuted", "partly", "not_reproduced"])
def test_a_step_that_did_not_run_never_decides_a_claim_about_it_running(verdict: str) -> None:
    judged = Judgement(verdict, "no faster: the compile failed", premise="compile failed: NameError: name 'Max'")
    final, _ = settle(judged, {})
    assert (final.verdict, final.basis) == ("inconclusive", "none")
    assert "NameError" in final.evidence and final.data["premise_unmet"].startswith("compile failed")


def test_a_failure_still_decides_a_claim_about_whether_it_works() -> None:
    final, _ = settle(Judgement("refuted", "the fix does not compile: NameError"), {})
    assert final.verdict == "refuted"


def test_unmet_carries_its_finding() -> None:
    found = Finding("toto.compile", "Toto does not compile", "NameError: name 'Max' is not defined")
    final, _ = settle(unmet("Toto's compile failed: NameError", findings=[found]), {})
    assert final.verdict == "inconclusive" and final.findings == (found,)


def test_figure_text_keeps_its_unit() -> None:
    assert Figure(2.3456, "×", "ratio").text == "2.35×"
    assert Figure(7.5, "ms").text == "7.5 ms"
    assert Figure("3 of 3", "loads crash").text == "3 of 3 loads crash"


def test_findings_record_the_figure_and_the_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(findings, "_phase_seconds", lambda: {})
    found = findings.Findings("cuda_graphs", {})
    claim = found.verdict("cuda_graphs.speedup_2_5x", unmet(
        "Toto's compile failed", findings=[Finding("cuda_graphs.toto_compile", "Toto does not compile", "NameError")]))
    assert claim.verdict == "inconclusive" and claim.basis == "none"
    found.verdict("cuda_graphs.first_inference_60s", Judgement("confirmed", "45 s", figure=Figure(45.0, "s", "first")))
    out = found.to_dict()
    assert out["findings"][0]["claims"] == ["cuda_graphs.speedup_2_5x"]
    # a bare figure is one measurement, under the conditions its judge recorded for the run
    assert out["claims"][1]["figure"] == {"value": 45.0, "unit": "s", "measures": "first", "statistic": "single"}


def test_an_open_band_decides_on_its_one_edge() -> None:
    assert band([2.0, 1.9, 2.1, 2.2, 2.0], 1.0, float("inf")) == "confirmed"
    assert band([0.5, 0.6, 0.55, 0.5, 0.6], 1.0, float("inf")) == "refuted"
    assert band([0.99, 1.01, 1.0, 1.02, 0.98], 1.0, float("inf")) == "inconclusive"


def test_scattered_rounds_do_not_decide_where_their_median_happened_to_fall() -> None:
    """Rounds a busy machine scattered across the band (the cold batch's 1.5-11.7x) stay undecided; the same median
    with tight rounds decides, and rounds wide but all far from the edge still decide."""
    scattered_rounds = [1.53, 11.74, 6.26, 1.85, 2.96, 4.77]
    assert verdicts.scattered(scattered_rounds, 1.75, 7.0)
    assert band_decision(scattered_rounds, 1.75, 7.0) is None
    assert band_decision([2.9, 2.96, 3.0, 2.95, 3.1, 2.97], 1.75, 7.0) == "confirmed"
    wide_far = [1.41, 2.94, 4.21, 1.44, 3.54]  # all above the direction band's edge at 1
    assert not verdicts.scattered(wide_far, 1.0, math.inf) and band_decision(wide_far, 1.0, math.inf) == "confirmed"
    assert not verdicts.scattered([1.0, 50.0, 3.0], 1.75, 7.0)  # fewer than MIN_ROUNDS: no spread of rounds to read
    assert not verdicts.scattered([1.0, 2.0, 3.0, 4.0, 5.0], -math.inf, math.inf)
