"""No command writes into tracked files unless asked to: every subcommand runs, with cheap but real arguments, in a
clone of the checkout, and `git status` is clean after it (`new` adds only the untracked files it names)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from yolo26kit import cli

REPO = Path(__file__).resolve().parents[1]
# a repro that needs nothing and ends fixed: `repro --check` runs it with this interpreter
TINY_REPRO = '''"""Ends at once."""
# finding: test.tiny
# requires: six
# device: cpu
# bites-with: LookupError: never
# seen-on: (filled in)

import sys

if __name__ == "__main__":
    sys.exit(0)
'''


def _git(cwd: Path, *argv: str) -> str:
    return subprocess.run(["git", "-c", "user.name=kit", "-c", "user.email=kit@localhost", *argv], cwd=cwd,
                          capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A clone of the checkout with the working tree's files on top, committed there: its `git status` is clean."""
    base = tmp_path_factory.mktemp("clean")
    root = base / "kit"
    _git(base, "clone", "-q", str(REPO), str(root))
    for name in _git(REPO, "ls-files", "--cached", "--others", "--exclude-standard", "-z").split("\0"):
        if not name:
            continue
        source, target = REPO / name, root / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
        elif target.is_file():  # deleted in the working tree
            target.unlink()
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "--allow-empty", "-m", "the working tree")
    assert _git(root, "status", "--porcelain") == ""
    (base / "check" / "test.tiny").mkdir(parents=True)
    (base / "check" / "test.tiny" / "repro.py").write_text(TINY_REPRO)
    (base / "cache").mkdir()
    run = sorted(p.parent for p in (root / "reports").glob("*/run.json"))[-1]
    shutil.copytree(run, root / "reports" / "runs" / run.name)  # a local run for `report` (ignored by git)
    return {"root": root, "base": base, "run": run}


# Each subcommand with cheap arguments, and the exit codes it may end with; {base} and {run} are filled in.
INVOCATIONS = [
    (["list"], (0,)),
    (["list", "--claims"], (0,)),
    (["list", "--backends"], (0,)),
    (["run", "--all", "--stop-after", "2"], (75,)),  # a run that stops at once: run.json and pages of nothing
    (["report", "--no-notebooks"], (0,)),  # the local runs (a copy of a committed one)
    (["times", "{run}"], (0,)),
    (["new", "clean_demo"], (0,)),
    (["matrix", "--clean"], (0,)),
    (["bisect", "index_dtype.split_copy_viewed", "--over", "torch"], (2,)),  # refused: the ledger gives no range
    (["stacks", "list"], (0,)),
    (["stacks", "clean"], (0,)),
    (["repro", "index_dtype.et_cuda_split_copy_refused", "--no-run"], (0,)),
    (["repro", "--check", "{base}/check/test.tiny", "--record"], (0,)),
    (["bundle", "--only", "torch"], (0,)),  # the runner has torch: nothing to download, the manifest only
    (["cache", "info"], (0,)),
    (["cache", "export", "{base}/timings.tgz"], (0,)),
    (["cache", "import", "{base}/timings.tgz"], (0,)),
    (["env"], (0,)),
    (["stamp"], (0,)),
]


def test_every_subcommand_is_run_here():
    subcommands = next(a for a in cli.parser()._actions if a.dest == "command").choices
    assert set(subcommands) == {argv[0] for argv, _ in INVOCATIONS}


@pytest.mark.slow  # ~1 min on 2 cores: every subcommand in its own process
@pytest.mark.parametrize("argv, codes", INVOCATIONS, ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_a_command_leaves_the_checkout_clean(clone: dict[str, Path], argv: list[str], codes: tuple[int, ...]):
    root, base = clone["root"], clone["base"]
    argv = [a.format(base=base, run=f"reports/{clone['run'].name}") for a in argv]
    env = {**os.environ, "PYTHONPATH": str(root), "YOLO26KIT_CACHE": str(base / "cache"),
           "XDG_CACHE_HOME": str(base / "xdg"), "YOLO_OFFLINE": "1", "YOLO_AUTOINSTALL": "0"}
    done = subprocess.run([sys.executable, "-m", "yolo26kit", *argv], cwd=root, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode in codes, done.stdout[-2000:] + done.stderr[-2000:]
    status = _git(root, "status", "--porcelain", "--untracked-files=all").splitlines()
    if argv[0] == "new":  # asked to write an investigation: its own new files, nothing tracked changed
        printed = {line.strip() for line in done.stdout.splitlines()}
        assert status and all(s.startswith("?? ") and s[3:] in printed for s in status), status
        _git(root, "clean", "-fdq", "--", *[s[3:] for s in status])
    else:
        assert status == [], status
    if argv[0] == "run":  # the stopped run recorded its profile (pages read it from there)
        (meta,) = [p for p in (root / "reports" / "runs").glob("*/run.json") if p.parent.name != clone["run"].name]
        assert '"profile": "quick"' in meta.read_text()
    if argv[:2] == ["repro", "index_dtype.et_cuda_split_copy_refused"]:
        assert (root / "reports" / "runs" / "findings" / argv[1] / "ISSUE.md").is_file()
