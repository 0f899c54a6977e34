"""The claims ledger (data/claims/*.json) against the seeds list and the judges each investigation registers."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, Mapping

import pytest

from yolo26kit import catalog, findings

CLAIMS = findings.DATA / "claims"
SEEDS = findings.DATA / "seeds.json"
# A seed file, the kit itself, an issue/report URL, or a file stored with the ledger under data/sources/
SOURCE = re.compile(r"^\d{3}_[0-9a-f]{16}\.txt$|^kit$|^https?://\S+$|^sources/[\w.-]+$")
SEED_FILE = re.compile(r"^\d{3}_[0-9a-f]{16}\.txt$")
QUESTIONS = {"bites", "fix", "cost", "other"}
UNTESTABLE_FILE = "untestable"  # data/claims/untestable.json: claims no investigation can test
REQUIRED = ("id", "source", "claim", "question")


def read_ledger(folder: Path = CLAIMS) -> dict[str, list[dict[str, Any]]]:
    """Every ledger file by its stem (the investigation it belongs to), entries in file order."""
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def seed_files() -> set[str]:
    """The seed file names the kit knows (data/seeds.json)."""
    return {s["file"] for s in json.loads(SEEDS.read_text())}


def ledger_problems(book: Mapping[str, list[dict[str, Any]]], seeds: set[str],
                    judges_of: Callable[[str], Mapping[str, Callable]], registered: set[str]) -> list[str]:
    """Everything wrong with a ledger: missing fields, bad source/question, duplicate ids, judges and ledger apart."""
    problems: list[str] = []
    seen: dict[str, str] = {}
    for name, entries in book.items():
        if name != UNTESTABLE_FILE and name not in registered:
            problems.append(f"{name}.json: no registered investigation named {name!r}")
        for i, e in enumerate(entries):
            where = f"{name}.json[{i}] {e.get('id', '?')}"
            problems += [f"{where}: missing or empty {k!r}" for k in REQUIRED if not str(e.get(k, "")).strip()]
            source = str(e.get("source", ""))
            if not SOURCE.match(source):
                problems.append(f"{where}: source {source!r} is neither a seed file name nor 'kit'")
            elif source.startswith("sources/") and not (findings.DATA / source).is_file():
                problems.append(f"{where}: source {source!r} is not a file under data/")
            elif SEED_FILE.match(source) and source not in seeds:
                problems.append(f"{where}: source {source!r} is not in data/seeds.json")
            if e.get("question") not in QUESTIONS:
                problems.append(f"{where}: question {e.get('question')!r} not in {sorted(QUESTIONS)}")
            if "untestable" in e and not str(e["untestable"]).strip():
                problems.append(f"{where}: 'untestable' needs a reason")
            if name == UNTESTABLE_FILE and "untestable" not in e:
                problems.append(f"{where}: every entry of untestable.json needs an 'untestable' reason")
            problems += shape_problems(where, e)
            if e.get("id") in seen:
                problems.append(f"{where}: id also in {seen[e['id']]}.json")
            seen.setdefault(e.get("id"), name)
        if name == UNTESTABLE_FILE or name not in registered:
            continue
        judges = set(judges_of(name))
        testable = {e.get("id") for e in entries if "untestable" not in e}
        problems += [f"{name}.json: {cid} has no judge in {name}'s JUDGES" for cid in sorted(testable - judges)]
        problems += [f"{name}: judge {cid} has no entry in {name}.json" for cid in sorted(judges - testable)]
        problems += [f"{name}.json: {e['id']} is marked untestable but has a judge"
                     for e in entries if "untestable" in e and e.get("id") in judges]
    return problems


def shape_problems(where: str, e: dict[str, Any]) -> list[str]:
    """`conditions` is a dict, `band` has lo <= hi and the seed's words, `unreachable` names verdicts with reasons."""
    problems = []
    if "conditions" in e and not isinstance(e["conditions"], dict):
        problems.append(f"{where}: 'conditions' must map a condition to the seed's value")
    if "band" in e:
        b = e["band"]
        if not (isinstance(b, dict) and isinstance(b.get("lo"), (int, float)) and isinstance(b.get("hi"), (int, float))
                and b["lo"] <= b["hi"] and str(b.get("words", "")).strip()):
            problems.append(f"{where}: 'band' needs numeric lo <= hi and the seed's 'words'")
    for verdict, why in (e.get("unreachable") or {}).items():
        if verdict not in ("confirmed", "refuted") or not str(why).strip():
            problems.append(f"{where}: 'unreachable' maps confirmed/refuted to a reason, got {verdict!r}: {why!r}")
    return problems


def _registered() -> set[str]:
    return {inv.name for inv in catalog.all_investigations()}


def test_seeds_list_names_seed_files_with_titles():
    seeds = json.loads(SEEDS.read_text())
    assert seeds
    assert all(SEED_FILE.match(s["file"]) and s["title"].strip() for s in seeds)
    assert len({s["file"] for s in seeds}) == len(seeds)


def test_the_ledger_has_no_gaps():
    problems = ledger_problems(read_ledger(), seed_files(), catalog.judges_of, _registered())
    assert not problems, "\n".join(problems)


def test_every_investigation_registers_judges():
    for inv in catalog.all_investigations():
        assert inv.judges, f"{inv.name} registers no judges"
        assert (CLAIMS / f"{inv.name}.json").exists(), f"{inv.name} has no ledger file"


GOOD = {"id": "x.a", "source": "002_0f900b64e9bdebb4.txt", "claim": "something", "question": "bites"}


def _judge(*_: Any) -> tuple[str, str, dict]:
    return "confirmed", "", {}


@pytest.mark.parametrize("book, judges, expected", [
    ({"x": [GOOD]}, {"x.a": _judge}, []),
    ({"x": [GOOD]}, {}, ["x.a has no judge"]),
    ({"x": [GOOD]}, {"x.a": _judge, "x.b": _judge}, ["judge x.b has no entry"]),
    ({"x": [{**GOOD, "question": "speed"}]}, {"x.a": _judge}, ["question 'speed'"]),
    ({"x": [{**GOOD, "source": "seed 2"}]}, {"x.a": _judge}, ["neither a seed file name"]),
    ({"x": [{**GOOD, "source": "009_0123456789abcdef.txt"}]}, {"x.a": _judge}, ["not in data/seeds.json"]),
    ({"x": [{k: v for k, v in GOOD.items() if k != "claim"}]}, {"x.a": _judge}, ["missing or empty 'claim'"]),
    ({"x": [GOOD, {**GOOD, "untestable": ""}]}, {"x.a": _judge}, ["needs a reason", "id also in x.json"]),
    ({"x": [{**GOOD, "untestable": "no model"}]}, {"x.a": _judge}, ["marked untestable but has a judge"]),
    ({"x": [GOOD], "y": [GOOD]}, {"x.a": _judge}, ["no registered investigation named 'y'", "id also in x.json"]),
    ({"x": [GOOD], "untestable": [{**GOOD, "id": "u.a"}]}, {"x.a": _judge}, ["needs an 'untestable' reason"]),
])
def test_ledger_problems_finds_each_kind_of_gap(book, judges, expected):
    problems = ledger_problems(book, {GOOD["source"]}, lambda name: judges, {"x"})
    for text in expected:
        assert any(text in p for p in problems), (text, problems)
    if not expected:
        assert problems == []


def test_a_real_gap_fails_the_ledger_check(monkeypatch):
    """A judged claim removed from a registered investigation's judges makes the real ledger fail."""
    book = read_ledger()
    name = next(n for n in book if n != UNTESTABLE_FILE and n in _registered())
    real = catalog.judges_of(name)
    dropped = next(iter(real))
    monkeypatch.setattr(catalog, "judges_of", lambda n: {k: v for k, v in real.items() if k != dropped}
                        if n == name else catalog.get(n).judges)
    problems = ledger_problems(book, seed_files(), catalog.judges_of, _registered())
    assert any(dropped in p and "has no judge" in p for p in problems)
