"""`yolo26kit bisect` on fake releases: a stub registry and stub probes (no stack is installed, nothing is timed)."""

from __future__ import annotations

import json
import math
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from yolo26kit.matrix import bisect
from yolo26kit.matrix.bisect import (Probe, Registry, anchored_pins, in_range, judged, not_installed, paired_release,
                                     releases_in, spread, steps_needed)
from yolo26kit.report import bisect_page

DAY = timedelta(days=1)
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def stub_probes(change_at: int, skips: set[int] = frozenset(), after: int | None = None, calls: list | None = None):
    """Releases are "0".."n-1": not_reproduced below change_at, confirmed from it (back to not_reproduced from
    `after`); the releases in `skips` cannot be installed."""
    def probe_many(batch: list[str]) -> list[Probe]:
        if calls is not None:
            calls.append(list(batch))
        out = []
        for release in batch:
            i = int(release)
            if i in skips:
                out.append(not_installed(release, "uv: no wheel for this platform"))
                continue
            on = change_at <= i and (after is None or i < after)
            out.append(judged(release, "confirmed" if on else "not_reproduced", "measured", f"release {i}"))
        return out
    return probe_many


def names(n: int) -> list[str]:
    return [str(i) for i in range(n)]


@pytest.mark.parametrize("n", [2, 3, 7, 28, 189])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_the_change_is_found_and_k_workers_need_ceil_log_k_plus_1_steps(n, k):
    worst = 0
    for change in range(1, n):
        calls: list = []
        record = bisect.bisect(names(n), stub_probes(change, calls=calls), workers=k)
        assert record["changes"][0]["first"] == str(change)
        assert record["changes"][0]["last_before"] == str(change - 1)
        assert all(len(batch) <= k for batch in calls)
        worst = max(worst, record["narrowing_steps"])
    assert worst == steps_needed(n - 1, k)  # the bound is reached: no step is wasted, none is missing
    assert worst <= math.ceil(math.log(n, k + 1) - 1e-9)


def test_more_workers_need_fewer_steps_over_the_ultralytics_series():
    steps = [bisect.bisect(names(189), stub_probes(113), workers=k)["steps"] for k in (1, 2, 4)]
    assert steps[0] > steps[1] > steps[2]


def test_skipped_releases_are_never_a_side_of_the_change():
    record = bisect.bisect(names(20), stub_probes(7, skips={0, 6, 7, 19}), workers=2)
    change = record["changes"][0]
    assert change["last_before"] == "5" and change["first_measured"] == "8"
    assert change["first"] is None and change["unmeasured_between"] == ["6", "7"]
    assert {s["release"] for s in record["skipped"]} == {"0", "6", "7", "19"}
    assert all(s["reason"].startswith("cannot install") for s in record["skipped"])
    assert "or earlier" in bisect.summary({**record, "package": "ultralytics", "claim": "c"})


def test_a_skip_beside_the_change_still_names_the_first_release_when_a_neighbour_measured():
    record = bisect.bisect(names(20), stub_probes(7, skips={5}), workers=1)
    assert record["changes"][0]["first"] == "7"
    assert record["changes"][0]["last_before"] == "6"


@pytest.mark.parametrize("verdict,basis", [("inconclusive", "measured"), ("error", "none"), ("needs_cuda", "none"),
                                           ("confirmed", "none"), ("confirmed", "derived")])
def test_a_probe_that_measured_nothing_is_skipped(verdict, basis):
    probe = judged("1.0", verdict, basis, "the model did not export")
    assert not probe.measured and probe.skipped.startswith("cannot measure")
    assert judged("1.0", "refuted", "measured", "x").measured


def test_nothing_measured_names_no_change():
    record = bisect.bisect(names(5), stub_probes(2, skips=set(range(5))), workers=2)
    assert not record["measured_any"] and not record["changes"] and len(record["skipped"]) == 5
    assert "could be measured" in bisect.summary({**record, "package": "p", "claim": "c"})


def fixed_between(low: int, high: int):
    """Probes that reproduce the claim (confirmed) at every release but low..high-1 (not_reproduced there)."""
    def probe_many(batch: list[str]) -> list[Probe]:
        return [judged(r, "not_reproduced" if low <= int(r) < high else "confirmed", "measured", f"release {r}")
                for r in batch]
    return probe_many


def test_alike_ends_name_no_change_unless_every_change_is_asked_for():
    plain = bisect.bisect(names(30), fixed_between(10, 20), workers=2)
    assert plain["changes"] == [] and plain["ends_alike"] and plain["steps"] == 1
    assert plain["control"]["answer"] and "no_answer" not in plain
    every = bisect.bisect(names(30), fixed_between(10, 20), workers=2, all_changes=True)
    assert [(c["first"], c["to"]) for c in every["changes"]] == [("10", "not_reproduced"), ("20", "confirmed")]
    assert len(every["probes"]) == 30


@pytest.mark.parametrize("all_changes", [False, True])
def test_a_claim_that_reproduces_at_neither_end_stops_with_no_answer(all_changes):
    calls: list = []
    record = bisect.bisect(names(30), stub_probes(10, after=20, calls=calls), workers=2, all_changes=all_changes)
    assert record["no_answer"] == bisect.NO_ANSWER and record["changes"] == []
    assert len(record["probes"]) == 2 and calls == [["0", "29"]]  # the two ends, then nothing
    line = bisect.summary({**record, "package": "torch", "claim": "aoti.load_crash_cause",
                           "range": {"from": "0", "to": "29"}})
    assert line.startswith("aoti.load_crash_cause: no answer here") and "torch 0 not_reproduced" in line


def test_a_repro_fixed_at_both_ends_has_no_answer_and_one_that_bites_at_one_end_has():
    fixed = [{"release": r, "verdict": "fixed", "skipped": ""} for r in ("2.11.0", "2.14.1")]
    assert not bisect.control(fixed)["answer"]
    bites = [{"release": "2.11.0", "verdict": "bites", "skipped": ""}, fixed[1]]
    assert bisect.control(bites)["answer"]


def test_spread_splits_the_gaps_evenly():
    assert spread(names(8), 1) == ["3"]  # 9 gaps: 4 + 5
    assert spread(names(8), 2) == ["2", "5"]  # 9 gaps: 3 + 3 + 3
    assert spread(names(2), 5) == ["0", "1"]


def test_release_range_keeps_final_releases_and_a_short_upper_bound_covers_its_series():
    uploads = {v: T0 for v in ["2.8.0", "2.9.0", "2.9.1", "2.10.0", "2.15.0", "2.15.1", "2.16.0", "2.16.0rc1"]}
    assert releases_in(uploads, "2.9", "2.15") == ["2.9.0", "2.9.1", "2.10.0", "2.15.0", "2.15.1"]
    assert releases_in(uploads, "2.9.1", "2.15.0") == ["2.9.1", "2.10.0", "2.15.0"]
    assert not in_range("2.16.0rc1", None, None)


class StubRegistry(Registry):
    """Upload tables given, not fetched."""

    def __init__(self, tables: dict[str, dict[str, datetime]]) -> None:
        super().__init__()
        self._uploads = tables


TORCH = {"2.9.0": T0, "2.9.1": T0 + 30 * DAY, "2.10.0": T0 + 90 * DAY, "2.11.0": T0 + 150 * DAY,
         "2.11.1": T0 + 200 * DAY}
EXECUTORCH = {"1.0.0": T0 + 2 * DAY, "1.1.0": T0 + 95 * DAY, "1.2.0": T0 + 160 * DAY}


def test_executorch_pairs_with_the_torch_series_out_when_it_came_out_at_its_newest_patch():
    assert paired_release(EXECUTORCH["1.0.0"], TORCH) == "2.9.1"
    assert paired_release(EXECUTORCH["1.2.0"], TORCH) == "2.11.1"
    assert paired_release(T0 - DAY, TORCH) is None
    registry = StubRegistry({"torch": TORCH, "executorch": EXECUTORCH})
    base = {"torch": "2.11.1", "torchvision": "0.26.0", "torchao": "0.18.0", "executorch": "1.2.0",
            "ultralytics": "8.4.190"}
    pins, note = anchored_pins("executorch", "1.1.0", base, registry)
    assert pins == {"executorch": "1.1.0", "torch": "2.10.0", "ultralytics": "8.4.190"} and "2.10.0" in note
    pins, note = anchored_pins("torch", "2.9.0", base, registry)
    assert pins["executorch"] == "1.0.0" and "torchvision" not in pins
    pins, note = anchored_pins("torch", "2.12.0", {**base}, StubRegistry({"torch": {**TORCH, "2.12.0": T0 + 300 * DAY},
                                                                         "executorch": EXECUTORCH}))
    assert pins["executorch"] == "1.2.0" and "no executorch built" in note
    assert anchored_pins("ultralytics", "8.4.113", base, registry)[0] == {**base, "ultralytics": "8.4.113"}


def test_uv_compile_output_is_read_as_pins():
    text = "torch==2.9.1\n    # via executorch\ntorchvision==0.24.1 ; sys_platform == 'linux'\nNumPy==2.3.0\n"
    assert bisect.parse_compiled(text) == {"torch": "2.9.1", "torchvision": "0.24.1", "numpy": "2.3.0"}


def test_a_bisect_writes_its_record_and_page_and_the_index_can_list_it(tmp_path, monkeypatch):
    uploads = {f"8.4.{i}": T0 + i * DAY for i in range(0, 12)}
    skipped = {"8.4.3"}

    def fake_probe(ctx, release):
        if release in skipped:
            return not_installed(release, "uv: resolution failed")
        on = int(release.split(".")[-1]) >= 6
        return judged(release, "confirmed" if on else "not_reproduced", "measured", "counted",
                      page=f"probes/ultralytics-{release}/probe.html")

    monkeypatch.setattr(bisect, "probe_release", fake_probe)
    folder = bisect.run_bisect("index_dtype.gather_upstreamed", "ultralytics", "8.4.0", "8.4", tmp_path, workers=2,
                               registry=StubRegistry({"ultralytics": uploads}), log=lambda s: None)
    record = json.loads((folder / "bisect.json").read_text())
    assert record["summary"].startswith("index_dtype.gather_upstreamed: confirmed from ultralytics 8.4.6")
    assert record["range"]["count"] == 12 and record["probe"]["function"] == "gather_upstreamed"
    page = (folder / "bisect.html").read_text()
    assert "confirmed from ultralytics 8.4.6" in page and 'class="verdict confirmed"' in page
    listed = bisect_page.listing(tmp_path)
    assert listed[0]["claim"] == "index_dtype.gather_upstreamed" and listed[0]["href"].endswith("bisect.html")
    assert bisect_page.change_of(tmp_path, "index_dtype.gather_upstreamed")[0]["changes"][0]["first"] == "8.4.6"


def test_an_unknown_claim_or_an_empty_range_writes_nothing(tmp_path):
    registry = StubRegistry({"ultralytics": {"8.4.0": T0}})
    with pytest.raises(bisect.BisectError, match="unknown claim"):
        bisect.run_bisect("no.such_claim", "ultralytics", None, None, tmp_path, registry=registry)
    with pytest.raises(bisect.BisectError, match="no ultralytics release"):
        bisect.run_bisect("aoti.load_crash_cause", "ultralytics", "9.0", None, tmp_path, registry=registry)
    assert not list(Path(tmp_path).iterdir())


def test_the_index_and_the_matrix_page_link_the_bisects_beside_them(tmp_path, monkeypatch):
    from yolo26kit.report import matrix_page, pages

    monkeypatch.setattr(bisect, "probe_release", lambda ctx, release: judged(
        release, "confirmed" if release >= "8.4.2" else "not_reproduced", "measured", "counted"))
    folder = bisect.run_bisect("index_dtype.gather_upstreamed", "ultralytics", "8.4.0", "8.4.3", tmp_path, workers=1,
                               registry=StubRegistry({"ultralytics": {f"8.4.{i}": T0 for i in range(4)}}),
                               log=lambda s: None)
    index = pages.index_page(tmp_path)
    assert f'href="{folder.name}/bisect.html"' in index and "confirmed from ultralytics 8.4.2" in index
    (tmp_path / "matrix-x").mkdir()
    matrix = {"run": {"matrix_id": "x", "executor": "local", "wall_seconds": 1}, "stacks": [], "claims": {},
              "changes": {}, "series": {}, "cells": [], "not_judged": {},
              "parameters": {"investigations": [], "device": "cpu", "profile": "quick", "params": []}}
    page = matrix_page.render(tmp_path / "matrix-x", matrix).read_text()
    assert f'href="../{folder.name}/bisect.html"' in page


def test_stacks_list_and_clean_show_and_free_the_disk(tmp_path, capsys):
    import argparse
    import os

    from yolo26kit.matrix import stack_cache

    for name in ("torch2.9.1", "ultralytics8.4.113"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "own.bin").write_bytes(b"x" * 100_000)
        (tmp_path / name / "yolo26kit-stack.json").write_text(json.dumps({"stack": {"pins": {"torch": "2.9.1"}}}))
    os.link(tmp_path / "torch2.9.1" / "own.bin", tmp_path / "shared.bin")  # as uv's cache links a wheel's file
    rows = {r["id"]: r for r in stack_cache.entries(tmp_path, measure=True)}
    assert rows["ultralytics8.4.113"]["own"] >= 100_000 and rows["torch2.9.1"]["own"] < 100_000
    stack_cache.main(argparse.Namespace(action="list", ids=[], envs=str(tmp_path), measure=True))
    assert "torch==2.9.1" in capsys.readouterr().out
    removed, freed = stack_cache.remove(tmp_path, ["ultralytics8.4.113"])
    assert removed == ["ultralytics8.4.113"] and freed >= 100_000 and not (tmp_path / "ultralytics8.4.113").exists()
    with pytest.raises(SystemExit):
        stack_cache.remove(tmp_path, ["nope"])


def test_spare_workers_probe_further_in_from_an_end_that_cannot_be_measured():
    calls: list = []
    record = bisect.bisect(names(9), stub_probes(6, skips={0, 1, 2}, calls=calls), workers=2)
    assert calls[:2] == [["0", "8"], ["1", "2"]] and record["changes"][0]["first"] == "6"


def test_a_probe_whose_entry_point_breaks_records_an_error_that_measured_nothing(tmp_path, monkeypatch):
    from yolo26kit.matrix import probes

    monkeypatch.setitem(probes.ENTRY_POINTS, "x.breaks", probes.EntryPoint("json", "no_such_function", "nothing"))
    record = probes.run_entry("x.breaks")
    assert record["verdict"] == "error" and record["basis"] == "none" and "AttributeError" in record["evidence"]
    probes.write(tmp_path, record)
    assert json.loads((tmp_path / probes.PROBE_RECORD).read_text())["claim"] == "x.breaks"
    assert "x.breaks: error" in (tmp_path / probes.PROBE_PAGE).read_text()
    assert not judged("1.0", record["verdict"], record["basis"], record["evidence"]).measured


@pytest.mark.skipif(not os.environ.get("YOLO26KIT_REAL_BISECT"), reason="installs two ~6 GB stacks from the registry "
                    "(1–2 min from a warm uv cache, several cold): set YOLO26KIT_REAL_BISECT=1")
def test_a_real_bisect_over_two_adjacent_ultralytics_releases(tmp_path):
    folder = bisect.run_bisect("index_dtype.gather_upstreamed", "ultralytics", "8.4.112", "8.4.113", tmp_path,
                               workers=2, envs=str(tmp_path / "envs"), log=lambda s: None)
    record = json.loads((folder / "bisect.json").read_text())
    assert [(p["release"], p["verdict"]) for p in record["probes"]] == [("8.4.112", "not_reproduced"),
                                                                        ("8.4.113", "confirmed")]
    assert record["changes"][0]["first"] == "8.4.113" and record["steps"] == 1


def test_a_backwards_range_is_a_clear_error_before_the_registry_is_asked():
    with pytest.raises(bisect.BisectError, match="runs backwards.*--from 2.9 --to 2.15"):
        bisect.check_range("2.15", "2.9")
    bisect.check_range("8.4.0", "8.4")  # a short upper bound covers its series: not backwards
    bisect.check_range("2.9", "2.15")


class ManyReleases(Registry):
    """A registry of 52 torch releases, as PyPI's."""

    def uploads(self, package: str) -> dict[str, datetime]:
        return {f"2.{minor}.{patch}": T0 + (minor * 3 + patch) * DAY for minor in range(26) for patch in range(2)}


def test_a_wide_range_open_at_one_end_says_what_it_takes_and_asks_for_yes(tmp_path):
    with pytest.raises(bisect.BisectError) as said:
        bisect.run_bisect("aoti.load_crash_cause", "torch", "2.1", None, tmp_path, registry=ManyReleases(), log=print)
    text = str(said.value)
    assert "50 torch releases" in text and "--yes" in text and "GiB" in text
    assert f"up to {bisect.stacks_needed(50, 1, False)} stacks" in text
    assert not list(tmp_path.iterdir())  # nothing written, nothing installed
    assert bisect.stacks_needed(52, 1, True) == 52 and bisect.stacks_needed(52, 1, False) == 2 + 6


def test_without_a_range_a_claim_the_ledger_gives_no_releases_is_refused_asking_for_one(tmp_path):
    asked = []

    class Counting(ManyReleases):
        def uploads(self, package: str) -> dict[str, datetime]:
            asked.append(package)
            return super().uploads(package)

    with pytest.raises(bisect.BisectError, match="--from V --to V: the ledger gives index_dtype.split_copy_viewed "
                                                 "no torch range"):
        bisect.run_bisect("index_dtype.split_copy_viewed", "torch", None, None, tmp_path, registry=Counting())
    assert not asked and not list(tmp_path.iterdir())  # refused before the registry is asked


def test_without_a_range_the_claims_own_releases_come_from_the_ledger_and_the_cost_is_said_first(tmp_path,
                                                                                                 monkeypatch):
    assert bisect.ledger_range(["aoti.load_crash_cause"], "torch", bisect.Path(bisect.__file__).parents[2]) == \
        ("2.11", "2.11.99")  # data/claims: conditions.torch {"min": "2.11", "max": "2.11.99"}
    probed = []

    def fake_probe(ctx, release):
        probed.append(release)
        return judged(release, "confirmed" if release == "2.11.0" else "not_reproduced", "measured", "loaded")

    monkeypatch.setattr(bisect, "probe_release", fake_probe)
    said = []
    folder = bisect.run_bisect("aoti.load_crash_cause", "torch", None, None, tmp_path, registry=ManyReleases(),
                               log=said.append)
    record = json.loads((folder / "bisect.json").read_text())
    assert sorted(probed) == ["2.11.0", "2.11.1"] and record["range"]["given_by"] == "ledger"
    assert record["range"]["from"] == "2.11" and record["range"]["to"] == "2.11.99"
    cost = next(i for i, line in enumerate(said) if "2 torch release(s) 2.11.0–2.11.1: up to 2 stack(s)" in line)
    assert "GiB" in said[cost] and cost < next(i for i, line in enumerate(said) if line.startswith("step 1"))


def test_a_repro_folder_without_a_range_takes_the_releases_of_the_claims_its_finding_decides(tmp_path):
    folder = tmp_path / "findings" / "aoti_load.static_libstdcxx_crash"
    folder.mkdir(parents=True)
    (folder / "repro.py").write_text("# finding: aoti_load.static_libstdcxx_crash\n# requires: torch==2.11.0\n"
                                     "import torch\n")
    root = bisect.Path(bisect.__file__).parents[2]
    assert bisect.range_of_claim(str(folder), folder, "torch", root) == ("2.11", "2.11.99")
    with pytest.raises(bisect.BisectError, match="no executorch range"):
        bisect.range_of_claim(str(folder), folder, "executorch", root)


def test_a_repro_folder_is_a_probe_whose_answers_are_verdicts(tmp_path, monkeypatch):
    from yolo26kit.repro import clean_env

    folder = tmp_path / "findings" / "x.bug"
    folder.mkdir(parents=True)
    (folder / "repro.py").write_text("# finding: x.bug\n# requires: torch==2.11.0\n# bites-with: NameError\n"
                                     "import torch\n")
    asked = []

    def fake_reproduce(repro, header, envs=None, python="", timeout=0.0):
        asked.append(header.pins())
        bites = header.pins()["torch"] < "2.13"
        return {"outcome": "still bites" if bites else "fixed here", "exit_code": 1 if bites else 0,
                "error_line": "NameError: name 'Max' is not defined" if bites else "", "seconds": 1.0,
                "versions": {"torch": header.pins()["torch"]}}

    monkeypatch.setattr(clean_env, "reproduce", fake_reproduce)

    class Torch(Registry):
        def uploads(self, package: str) -> dict[str, datetime]:
            return {v: T0 for v in ("2.11.0", "2.12.0", "2.12.1", "2.13.0", "2.14.0")}

    out = bisect.run_bisect(str(folder), "torch", "2.11", "2.14", tmp_path / "out", registry=Torch(), log=print)
    record = json.loads((out / "bisect.json").read_text())
    assert record["probe"]["kind"] == "repro" and record["claim"] == "x.bug"
    assert record["changes"][0]["first"] == "2.13.0" and record["changes"][0]["to"] == "fixed"
    assert all(pins == {"torch": pins["torch"]} for pins in asked)  # only the repro's own pins, torch moved
    assert (out / "probes" / "torch-2.13.0" / "reproduced.json").exists()
