"""`yolo26kit repro`: templates that stand alone, headers read right, outcomes judged right, folders written, and a
repro run in a fresh environment that holds nothing of the kit."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from yolo26kit.repro import clean_env, command, script
from yolo26kit.repro.catalog import TEMPLATES, ReproError, findings

KIT_REPORTS = Path(__file__).resolve().parents[1] / "reports"


def imported_modules(text: str) -> set[str]:
    """Top-level names of every module a script imports (any depth of the tree, relative imports as '.')."""
    found = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add("." if node.level else (node.module or "").split(".")[0])
    return found


@pytest.mark.parametrize("finding", findings.all(), ids=lambda f: f.id)
def test_every_template_stands_alone_and_its_header_names_its_finding(finding):
    text = finding.script.read_text()
    modules = imported_modules(text)
    assert "yolo26kit" not in modules and "." not in modules
    header = script.parse(text)
    assert header.finding == finding.id
    assert header.requires and header.bites_with
    assert all("==" in r or r.isidentifier() for r in header.requires)  # pinned, or a plain helper package
    assert 'if __name__ == "__main__":' in text  # importing it runs nothing


def test_every_template_is_a_finding_and_every_finding_has_an_upstream_ledger_entry():
    from yolo26kit.repro import upstream

    scripts = {f.template for f in findings.all()} | {f.workaround_template for f in findings.all()} - {""}
    assert scripts == {p.name for p in TEMPLATES.glob("*.py")}
    assert {p.stem for p in upstream.LEDGER.glob("*.json")} == {f.id for f in findings.all()}
    entries = [upstream.load(f.id) for f in findings.all()]
    assert all(e.component and e.tracker.startswith("https://github.com/") for e in entries)
    threads = [t for e in entries for t in e.threads]
    assert threads and all(re.fullmatch(r"[\w-]+/[\w-]+#\d+", t.ref) for t in threads)
    assert all(re.fullmatch(r"https://github\.com/[\w-]+/[\w-]+/(issues|pull)/\d+", t.url) for t in threads)
    assert {t.relation for t in threads} <= {"same bug", "same cause, another back-end", "fix", "partial fix",
                                             "mitigation", "related"}


def test_the_timeline_and_the_advice_come_from_the_checks():
    """Bites on one release and fixed on every later one: upgrade; still biting on the newest with a thread that has
    it: comment there; with none: to file."""
    from yolo26kit.repro import upstream

    def line(*answers):
        return upstream.timeline([upstream.Check({"torch": v}, "cpu", o) for v, o in answers])

    fixed = line(("2.12.1", "fixed here"), ("2.11.0", "still bites"), ("2.15.0", "fixed here"))
    assert fixed.answers[0] == ("2.11.0", "still bites") and fixed.fixed_from == "2.12.1"
    same = upstream.Upstream("x", "c", "https://github.com/o/r/issues",
                             (upstream.Thread("o/r#1", "issue", "open", "same bug"),))
    assert upstream.advice(same, fixed).startswith("fixed upstream from torch 2.12.1")
    biting = line(("2.11.0", "still bites"), ("2.15.0", "still bites"))
    assert biting.bites_on_newest and not biting.fixed_from
    assert upstream.advice(same, biting).startswith("a duplicate of o/r#1 (open)")
    assert upstream.advice(upstream.Upstream("x", "c", "t"), biting).startswith("to file")
    newest = upstream.newest_release("torch")
    assert upstream._version_key(newest) > upstream._version_key("2.11.0")
    only_older = line(("2.11.0", "still bites"))  # bites on every release tried, but a newer one exists: check it there
    said = upstream.advice(upstream.Upstream("x", "c", "t"), only_older)
    assert said.startswith(f"check it on torch {newest} before filing at t") and "to file" not in said
    assert upstream.next_step(said) == "check the newest"
    flaky = line(("2.11.0", "still bites"), ("2.14.1", "fails differently"), ("2.15.0", "fixed here"))
    assert flaky.fixed_from == ""  # a later release where every repro fails otherwise is not a fix


def test_the_timeline_names_the_devices_each_answer_was_seen_on():
    """A release that bites on the CPU and CUDA and a fix seen only on the CPU: "fixed from ... on cpu", never "on cpu
    and cuda" for a fix no CUDA check saw; devices that saw different releases say which."""
    from yolo26kit.repro import upstream

    checks = [upstream.Check({"torch": "2.11.0"}, "cpu", "still bites"),
              upstream.Check({"torch": "2.11.0"}, "cuda", "still bites"),
              upstream.Check({"torch": "2.13.0"}, "cpu", "still bites"),
              upstream.Check({"torch": "2.14.1"}, "cpu", "fixed here"),
              upstream.Check({"torch": "2.15.0"}, "cpu", "fixed here")]
    said = upstream.timeline(checks).words()
    assert said.startswith("bites on torch 2.11.0, 2.13.0 on cpu (2.11.0, 2.13.0) and cuda (2.11.0), "
                           "fixed from 2.14.1 on cpu (tried:"), said
    both = upstream.timeline(checks[:2] + [upstream.Check({"torch": "2.15.0"}, "cpu", "still bites"),
                                           upstream.Check({"torch": "2.15.0"}, "cuda", "still bites")])
    assert both.words().startswith("bites on torch 2.11.0, 2.15.0 on cpu and cuda, still on the newest tried, 2.15.0 "
                                   "(tried:")


def test_a_fix_past_which_the_models_repro_fails_otherwise_says_so():
    """The minimal repro fixed from 2.12.1, the model's own repro failing otherwise there with another finding's
    message: still "fixed from 2.12.1", and the advice says upgrading alone does not make the model run."""
    from yolo26kit.repro import upstream

    other = "IndexError: only integers ... valid indices (got SymInt)"
    checks = [upstream.Check({"torch": "2.11.0"}, "cpu", "still bites"),
              upstream.Check({"torch": "2.12.1"}, "cpu", "fixed here"),
              upstream.Check({"torch": "2.12.1"}, "cpu", "fails differently", other),
              upstream.Check({"torch": "2.14.1"}, "cpu", "fails differently", other),
              upstream.Check({"torch": "2.14.1"}, "cpu", "fixed here")]
    line = upstream.timeline(checks)
    assert line.answers == (("2.11.0", "still bites"), ("2.12.1", "fixed here"), ("2.14.1", "fixed here"))
    assert line.fixed_from == "2.12.1" and [r for r, _ in line.differently] == ["2.12.1", "2.14.1"]
    said = upstream.advice(upstream.Upstream("x", "c", "t"), line)
    assert said.startswith("fixed upstream from torch 2.12.1: upgrade")
    assert "torch 2.12.1–2.14.1: another finding, cuda_graphs.toto_tuple_index_symint" in said and "upgrading alone" in said
    assert "fails otherwise on torch 2.12.1–2.14.1" in line.words()


def test_a_workaround_scripts_checks_say_where_it_holds(tmp_path):
    """workaround/checked/: exit 0 holds, the finding's message still meets the bug, another error fails otherwise."""
    from yolo26kit.repro import upstream

    checked = tmp_path / "f" / "workaround" / "checked"
    checked.mkdir(parents=True)
    for release, outcome, line in (("2.11.0", "fails differently", "NameError: name 'Max' is not defined"),
                                   ("2.12.1", "fixed here", ""), ("2.15.0", "fixed here", "")):
        (checked / f"torch{release}-cpu.json").write_text(json.dumps(
            {"versions": {"torch": release}, "outcome": outcome, "error_line": line}))
    assert upstream.workaround_line(tmp_path / "g") is None  # no workaround checks, nothing said
    said = upstream.workaround_words(upstream.workaround_line(tmp_path / "f"))
    assert said.startswith("`workaround/repro.py` holds on torch 2.12.1, 2.15.0 on cpu")
    assert "fails otherwise on 2.11.0: NameError: name 'Max' is not defined (cuda_graphs.toto_compile_max_nameerror)" \
        in said
    for release, line in (("2.9.0", "AssertionError: answered 264 px on 2.9"), ("2.10.0", "AssertionError: 2.10's")):
        (checked / f"torch{release}-cpu.json").write_text(json.dumps(
            {"versions": {"torch": release}, "outcome": "still bites", "error_line": line}))
    said = upstream.workaround_words(upstream.workaround_line(tmp_path / "f"))
    assert "still meets the bug on 2.9.0, 2.10.0 (AssertionError: 2.10's)" in said  # the newest one's own words


def test_a_claim_names_its_finding_and_an_unknown_name_lists_the_known():
    assert findings.get("dynamic_shapes.aoti_cuda_dynamic").id == "dynamic_shapes.aoti_answers_outside_range"
    with pytest.raises(ReproError, match="known: .*cuda_graphs.toto_compile_max_nameerror"):
        findings.get("nope")


def test_header_pins_move_for_a_probe_and_seen_on_is_filled_in():
    text = (TEMPLATES / "toto_compile_max_nameerror.py").read_text()
    header = script.parse(text)
    moved = header.with_pins({"torch": "2.13.0", "executorch": "1.5.1"})
    assert moved.pins()["torch"] == "2.13.0" and moved.pins()["toto-ts"] == "0.2.0"
    assert "executorch==1.5.1" in moved.requires and header.pins()["torch"] == "2.11.0"
    filled = script.with_seen_on(text, ["torch 2.11.0+cu130 on NVIDIA H200 (kit run r1, c)"])
    assert script.parse(filled).seen_on == ["torch 2.11.0+cu130 on NVIDIA H200 (kit run r1, c)"]
    assert len(filled.splitlines()) == len(text.splitlines())


@pytest.mark.parametrize("code,output,answer", [
    (0, "ok", script.FIXED_HERE),
    (1, "Traceback ...\nNameError: name 'Max' is not defined", script.STILL_BITES),
    (1, "Traceback ...\nIndexError: only integers ... (got SymInt)", script.FAILS_DIFFERENTLY),
    (77, "no CUDA device", script.CANNOT_RUN),
])
def test_an_outcome_bites_only_with_the_findings_own_message(code, output, answer):
    header = script.Header(bites_with="NameError: name 'Max' is not defined")
    assert script.outcome(code, output, header) == answer
    assert script.CHECK_EXIT[answer] in (0, 1, 3, 4)


def test_the_error_line_is_the_failures_own():
    out = "W warn\nTraceback (most recent call last):\n  File x\nNameError: name 'Max' is not defined\n"
    assert script.error_line(out) == "NameError: name 'Max' is not defined"


def fake_run(tmp_path: Path, results: dict) -> Path:
    run = tmp_path / "reports" / "20260101T000000Z-vm-cuda"
    run.mkdir(parents=True)
    (run / "dynamic_shapes.results.json").write_text(json.dumps(results))
    return run


ENVIRONMENT = {"torch": "2.11.0+cu130", "device": "NVIDIA H200", "ultralytics": "8.4.190", "papermill": "2.7.0"}


def test_a_finding_folder_cites_the_runs_evidence_and_carries_the_repro_inline(tmp_path):
    from yolo26kit.repro import report

    run = fake_run(tmp_path, {"environment": ENVIRONMENT, "claims": [
        {"id": "dynamic_shapes.aoti_cuda_dynamic", "verdict": "inconclusive",
         "evidence": "it also returned 300 detections at 352x352 above the exported max"}]})
    folder = command.write_finding("dynamic_shapes.aoti_answers_outside_range", tmp_path / "reports", execute=False,
                                   log=lambda s: None, out=tmp_path / "reports")
    # --out reports: the one committed folder, whichever run met it
    assert folder == tmp_path / "reports" / "findings" / "dynamic_shapes.aoti_answers_outside_range"
    repro = (folder / "repro.py").read_text()
    assert "# seen-on: torch 2.11.0+cu130, ultralytics 8.4.190 on NVIDIA H200 (kit run 20260101T000000Z" in repro
    issue, readme = (folder / "ISSUE.md").read_text(), (folder / "README.md").read_text()
    assert report.maintainer_view(repro).strip() in issue and "github.com/pytorch/pytorch/issues/141115" in issue
    assert "def main" in issue and "# seen-on" not in issue
    for section in ("### 🐛 Describe the bug", "**Expected:**", "### Versions", "### Where it bites", "### Related"):
        assert section in issue
    # what the kit met and how to re-check it is the README's, never the maintainer's text
    assert "20260101T000000Z-vm-cuda" not in issue and "yolo26kit" not in issue and "papermill" not in issue
    assert "20260101T000000Z-vm-cuda" in readme and "inconclusive" in readme and "--check" in readme
    assert not (folder / "reproduced.json").exists()


def test_a_results_findings_list_is_read_first_and_a_run_without_it_is_an_error(tmp_path):
    fake_run(tmp_path, {"environment": ENVIRONMENT, "claims": [], "findings": [
        {"id": "dynamic_shapes.aoti_answers_outside_range", "title": "t", "evidence": "answers at 352 px",
         "stack": {"torch": "2.11.0"}, "smallest_input": "352 px", "claims": ["dynamic_shapes.aoti_cuda_dynamic"]}]})
    folder = command.write_finding("dynamic_shapes.aoti_answers_outside_range", tmp_path / "reports", execute=False,
                                   log=lambda s: None, out=tmp_path / "local")
    assert "answers at 352 px" in (folder / "README.md").read_text()
    with pytest.raises(ReproError, match="does not show"):
        command.write_finding("cuda_graphs.toto_compile_max_nameerror", tmp_path / "reports", execute=False,
                              run=tmp_path / "reports" / "20260101T000000Z-vm-cuda")
    # a finding no run shows yet is written from its own checks, saying so
    alone = command.write_finding("cuda_graphs.toto_compile_max_nameerror", tmp_path / "reports", execute=False,
                                  log=lambda s: None, out=tmp_path / "local")
    assert "No committed run under reports/ shows it yet" in (alone / "README.md").read_text()


def test_by_default_a_finding_folder_goes_to_the_ignored_local_runs_not_beside_the_tracked_run(tmp_path, monkeypatch):
    from yolo26kit.repro import report

    run = fake_run(tmp_path, {"environment": ENVIRONMENT, "claims": [
        {"id": "dynamic_shapes.aoti_cuda_dynamic", "verdict": "inconclusive",
         "evidence": "it also returned 300 detections at 352x352 above the exported max"}]})
    monkeypatch.setattr(report, "DEFAULT_OUT", tmp_path / "reports" / "runs")
    folder = command.write_finding("dynamic_shapes.aoti_answers_outside_range", tmp_path / "reports", execute=False,
                                   log=lambda s: None)
    assert folder == tmp_path / "reports" / "runs" / "findings" / "dynamic_shapes.aoti_answers_outside_range"
    assert (folder / "ISSUE.md").exists() and not (run / "findings").exists()


def test_a_cuda_repro_is_not_run_on_a_cpu_host_and_says_so(tmp_path, monkeypatch):
    fake_run(tmp_path, {"environment": ENVIRONMENT, "claims": [
        {"id": "index_dtype.backbone_static_cuda", "verdict": "refuted",
         "evidence": "missing fallback kernels (missing: aten::split_copy.Tensor)"}]})
    (tmp_path / "reports" / "20260101T000000Z-vm-cuda" / "dynamic_shapes.results.json").rename(
        tmp_path / "reports" / "20260101T000000Z-vm-cuda" / "index_dtype.results.json")
    monkeypatch.setattr(command, "cuda_here", lambda: False)
    monkeypatch.setattr(clean_env, "reproduce", lambda *a, **k: pytest.fail("a CUDA repro ran on a CPU host"))
    said = []
    folder = command.write_finding("index_dtype.et_cuda_split_copy_refused", tmp_path / "reports", log=said.append,
                                   out=tmp_path / "out")
    assert any("not run here: repro.py needs CUDA" in line for line in said)
    assert not (folder / "reproduced.json").exists()


def test_the_split_copy_repro_says_it_cannot_run_without_cuda_instead_of_naming_a_refusal():
    """Without CUDA the CUDA back-end never lowers: the script exits 77 (cannot run here) and says what it did
    check, rather than exit 1 with the back-end's refusal."""
    text = (TEMPLATES / "et_cuda_split_copy_refused.py").read_text()
    assert script.parse(text).device == "cuda"
    main = text[text.index("def main()"):]
    assert "sys.exit(77)" in main and "was not run" in main and "raise RuntimeError" not in text
    assert script.outcome(77, "no CUDA device: ... split_copy ...", script.parse(text)) == script.CANNOT_RUN
    assert script.CHECK_EXIT[script.CANNOT_RUN] == 4


TINY = '''"""A repro that needs one small package and bites unless the kit is importable (it never is, in a clean env)."""
# finding: test.tiny
# requires: six==1.16.0
# device: cpu
# bites-with: LookupError: the kit is not here
# seen-on: (filled in)

import importlib.util

import six

if __name__ == "__main__":
    if importlib.util.find_spec("yolo26kit") is None:
        raise LookupError(f"the kit is not here (six {six.__version__})")
'''


@pytest.mark.skipif(shutil.which("uv") is None and not (Path(os.sys.executable).parent / "uv").exists(),
                    reason="needs uv (the matrix extra)")
def test_a_repro_runs_in_a_fresh_environment_that_holds_only_its_pins(tmp_path):
    folder = tmp_path / "findings" / "test.tiny"
    folder.mkdir(parents=True)
    (folder / "repro.py").write_text(TINY)
    assert "yolo26kit" not in imported_modules(TINY)
    found = clean_env.reproduce(folder / "repro.py", envs=tmp_path / "envs")
    assert found["environment"]["kind"] == "uv" and found["environment"]["fresh"]
    assert found["outcome"] == script.STILL_BITES and found["exit_code"] == 1
    assert found["error_line"] == "LookupError: the kit is not here (six 1.16.0)"
    assert found["versions"]["six"] == "1.16.0" and "torch" not in found["versions"]
    assert str(tmp_path) not in json.dumps(found)  # no path of this machine in the record
    again = command.check(folder, clean=True, envs=str(tmp_path / "envs"))
    assert again["outcome"] == script.STILL_BITES and not again["environment"]["fresh"]


@pytest.mark.notebook
@pytest.mark.parametrize("finding", ["dynamic_shapes.aoti_answers_outside_range"])
def test_a_committed_cpu_finding_still_reproduces_in_a_clean_environment(finding):
    folder = KIT_REPORTS / "findings" / finding
    recorded = json.loads((folder / "reproduced.json").read_text())
    found = clean_env.reproduce(folder / "repro.py")
    assert found["outcome"] == recorded["outcome"] == script.STILL_BITES


def test_a_probe_of_executorch_leaves_its_torch_to_the_resolver():
    header = script.parse((TEMPLATES / "et_cuda_split_copy_refused.py").read_text())
    moved = script.unpinned(header, ("torch", "torchvision")).with_pins({"executorch": "1.5.1"})
    assert "torch" in moved.requires and moved.pins() == {"executorch": "1.5.1"}


LAUNCHER = '''import torch
torch._dynamo.config.capture_scalar_outputs = True
class Repro(torch.nn.Module):
    def forward(self, x, i):
        _local_scalar_dense = torch.ops.aten._local_scalar_dense.default(i)
        sym_max = torch.sym_max(64 * _local_scalar_dense, 0)
        return (torch.ops.aten.slice.Tensor(x, 2, sym_max, 9223372036854775807),)

def load_args(reader):
    pass
mod = Repro()
if __name__ == '__main__':
    from torch._dynamo.repro.after_aot import run_repro
    with torch.no_grad():
        run_repro(mod, load_args, accuracy=False, command='minify', save_dir='/x', tracing_mode='real', check_str=None)
'''
MINIFIER_SAID = """Started off with 92 nodes
Strategy: Truncate suffix (G: 32) (92 nodes, 3 inputs)
SUCCESS: Went from 92 to 30 nodes
SUCCESS: Went from 3 to 4 inputs
SUCCESS: Went from 30 to 8 nodes
SUCCESS: Went from 5 to 1 outputs
SUCCESS: Went from 8 to 7 nodes
Made 36 queries
"""


def test_the_minify_driver_keeps_the_graph_and_swaps_the_tester_for_one_that_holds_unbacked_symbols():
    from yolo26kit.repro import minify

    text = minify.runner(LAUNCHER, "name 'Max' is not defined")
    ast.parse(text)
    kept, main = text[:minify.main_block(text)], text[minify.main_block(text):]
    assert kept.strip() == LAUNCHER[:minify.main_block(LAUNCHER)].strip()  # graph, inputs and config as dumped
    assert "run_repro(mod" not in main and "minifier(gm, args" in main and "dump_compiler_graph_state" in main
    assert "shape_env=ShapeEnv()" in main and "CHECK = \"name 'Max' is not defined\"" in main
    alone = minify.standalone(kept + "if __name__ == '__main__':\n    run_repro(mod, load_args, command='run')\n")
    ast.parse(alone)
    assert "run_repro(mod" not in alone and "compile_and_run(gm, args)" in alone and "minifier(" not in alone
    with pytest.raises(ValueError):
        minify.with_main("x = 1\n", "")
    # node counts as PyTorch's minifier prints them: inputs and outputs lines are not node counts
    assert minify.minifier_log(MINIFIER_SAID) == {"nodes_before": 92, "nodes_after": 7, "queries": 36}
    assert minify.op_count(LAUNCHER) == 2 and minify.LEVEL == {"after": "aot", "level": 2}


def test_a_check_here_keeps_the_runners_packages_but_not_the_kit(tmp_path):
    from yolo26kit.repro.clean_env import packages_path

    kit, site = tmp_path / "checkout", tmp_path / "site"
    (kit / "yolo26kit").mkdir(parents=True)
    (kit / "yolo26kit" / "__init__.py").write_text("")
    site.mkdir()
    assert packages_path(f"{kit}{os.pathsep}{site}{os.pathsep}") == str(site)


def test_a_minified_repro_is_verified_only_when_it_fails_with_the_findings_message():
    import sys

    from yolo26kit.repro.minify import verified

    failing = "raise NameError(\"name 'Max' is not defined\")\n"
    assert verified(failing, sys.executable, "name 'Max' is not defined", timeout=60)
    assert not verified("raise ValueError('other')\n", sys.executable, "name 'Max' is not defined", timeout=60)
    assert not verified("print(\"name 'Max' is not defined\")\n", sys.executable, "name 'Max'", timeout=60)


def test_a_crash_without_a_python_traceback_shows_the_native_frames_of_the_runs_crash_file(tmp_path):
    """ISSUE.md of a segfault: the debugger's frames from the evidence run's crash file that names the finding (and
    none from a crash file about something else)."""
    from yolo26kit.repro import report

    finding = findings.get("aoti_load.static_libstdcxx_crash")
    (tmp_path / "a_other.crash.txt").write_text("== native backtrace ==\n#0  0x1 in foo () from /tmp/x/libfoo.so\n")
    frames = "".join(f"#{i}  0x{i} in std::regex_frame_{i} () from /tmp/R7/pkg/w.wrapper.so\n" for i in range(30))
    (tmp_path / "b_load.crash.txt").write_text(f"status: crash SIGSEGV\n{frames}rule: ... libstdc++ ...\n")
    name, text = report.native_backtrace(finding, {"run_dir": tmp_path})
    assert name == "b_load.crash.txt" and text.count("\n") == 19
    assert text.startswith("#0  0x0 in std::regex_frame_0 () from <tmp>/w.wrapper.so")
    assert report.native_backtrace(finding, {}) is None
